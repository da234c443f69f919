//! Where the pipeline's IL comes from and where its result goes: [`Delivery`], the
//! first-JIT delivery through `ICorProfilerInfo` ([`FirstJit`]), and the ReJIT delivery
//! through `ICorProfilerFunctionControl` ([`ReJitDelivery`]).

use super::module::ModuleState;
use crate::clr::runtime::{ClrError, CodegenFlags, FunctionControl, ModuleMetadata, ProfilerInfo};
use crate::clr::sys::{FunctionID, mdToken};
use crate::ilmap::IlMap;

/// The runtime's side of one rewrite: reading a method's IL, defining a LocalVarSig
/// token, and taking the new body and its IL map. The pipeline
/// ([`JitRewriter`](super::JitRewriter)) calls them in that order, each at most once per
/// rewrite, and hands nothing over before the body has been verified.
///
/// First-JIT rewriting delivers through `ICorProfilerInfo` ([`FirstJit`]); a ReJIT
/// delivers through `ICorProfilerFunctionControl`; a test delivers into memory. A wrong
/// implementation cannot break memory safety (the trait is safe): at worst the runtime
/// gets a wrong body, which is the implementer's responsibility.
pub trait Delivery<M = ModuleMetadata> {
    /// Appends the method's current IL (header, code and extra sections) to `out`.
    ///
    /// # Errors
    /// When the runtime does not give it.
    fn read_il(
        &self,
        module: &ModuleState<M>,
        token: mdToken,
        out: &mut Vec<u8>,
    ) -> Result<(), ClrError>;

    /// The token of the LocalVarSig `blob` in the module (defined if it is new).
    ///
    /// # Errors
    /// When the metadata refuses it.
    fn define_locals(&self, module: &ModuleState<M>, blob: &[u8]) -> Result<mdToken, ClrError>;

    /// Hands `body` (a complete method body) over as the method's new IL.
    ///
    /// # Errors
    /// When the runtime refuses it; the method then keeps the IL it had.
    fn set_body(
        &self,
        module: &ModuleState<M>,
        token: mdToken,
        body: &[u8],
    ) -> Result<(), ClrError>;

    /// Hands over the IL map of the body just set (new offsets to original ones), for
    /// `function`, the compilation being rewritten.
    ///
    /// # Errors
    /// When the runtime refuses it; the body stays set.
    fn set_map(&self, function: FunctionID, map: &IlMap) -> Result<(), ClrError>;
}

/// First-JIT delivery, from inside `JITCompilationStarted`: `GetILFunctionBody`,
/// `GetTokenFromSig`, `IMethodMalloc` with `SetILFunctionBody`, and
/// `SetILInstrumentedCodeMap`.
#[derive(Debug, Clone, Copy)]
pub struct FirstJit<'a> {
    info: &'a ProfilerInfo,
}

impl<'a> FirstJit<'a> {
    /// The delivery through `info`.
    pub fn new(info: &'a ProfilerInfo) -> FirstJit<'a> {
        FirstJit { info }
    }
}

impl Delivery for FirstJit<'_> {
    fn read_il(
        &self,
        module: &ModuleState,
        token: mdToken,
        out: &mut Vec<u8>,
    ) -> Result<(), ClrError> {
        self.info.il_function_body(module.id(), token, out)
    }

    fn define_locals(&self, module: &ModuleState, blob: &[u8]) -> Result<mdToken, ClrError> {
        module.metadata().token_from_sig(blob)
    }

    fn set_body(&self, module: &ModuleState, token: mdToken, body: &[u8]) -> Result<(), ClrError> {
        self.info.set_il_function_body(module.id(), token, body)
    }

    fn set_map(&self, function: FunctionID, map: &IlMap) -> Result<(), ClrError> {
        self.info.set_il_instrumented_code_map(function, map)
    }
}

/// ReJIT delivery, from inside `GetReJITParameters`: the method's pristine IL (kept by
/// the first-JIT rewrite, [`ModuleState::pristine_il`], or else the runtime's, which is
/// then the file's), `GetTokenFromSig` (new LocalVarSigs are the one metadata change
/// allowed there), and the new body, its code-generation flags and its IL map handed to
/// the [`FunctionControl`] the runtime lent. Starting from the pristine IL is what makes
/// every version the plan's IL on the file's, never on an earlier rewrite.
#[derive(Debug, Clone, Copy)]
pub struct ReJitDelivery<'a> {
    info: &'a ProfilerInfo,
    control: &'a FunctionControl,
    flags: CodegenFlags,
}

impl<'a> ReJitDelivery<'a> {
    /// The delivery through `info` and `control`, compiling with `flags`.
    pub fn new(
        info: &'a ProfilerInfo,
        control: &'a FunctionControl,
        flags: CodegenFlags,
    ) -> ReJitDelivery<'a> {
        ReJitDelivery {
            info,
            control,
            flags,
        }
    }
}

impl Delivery for ReJitDelivery<'_> {
    fn read_il(
        &self,
        module: &ModuleState,
        token: mdToken,
        out: &mut Vec<u8>,
    ) -> Result<(), ClrError> {
        match module.pristine_il(token) {
            Some(il) => {
                out.extend_from_slice(&il);
                Ok(())
            }
            None => self.info.il_function_body(module.id(), token, out),
        }
    }

    fn define_locals(&self, module: &ModuleState, blob: &[u8]) -> Result<mdToken, ClrError> {
        module.metadata().token_from_sig(blob)
    }

    fn set_body(&self, _: &ModuleState, _: mdToken, body: &[u8]) -> Result<(), ClrError> {
        if self.flags != CodegenFlags::NONE {
            self.control.set_codegen_flags(self.flags)?;
        }
        self.control.set_il_function_body(body)
    }

    fn set_map(&self, _: FunctionID, map: &IlMap) -> Result<(), ClrError> {
        self.control.set_il_instrumented_code_map(map)
    }
}

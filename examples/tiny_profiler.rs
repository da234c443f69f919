//! The smallest profiler that rewrites a method: `Answer::Get` returns 42.
//!
//! ```text
//! cargo build --release --features clr --example tiny_profiler
//! CORECLR_ENABLE_PROFILING=1 CORECLR_PROFILER={0B5C3F2A-7D41-4E8B-9A6C-2E1F4D7B8C93} \
//! CORECLR_PROFILER_PATH=$PWD/target/release/examples/libtiny_profiler.so dotnet Answer.exe
//! ```
use ilrewrite::clr::sys::{CorPrfHighMonitor, CorPrfMonitor, FunctionID, HResult, mdToken};
use ilrewrite::clr::{JitRewriter, ModuleState, Profiler, ProfilerInfo};
use ilrewrite::{Instruction, MethodBody, OpCode, disasm::method_name};
use std::sync::OnceLock;

#[derive(Default)]
struct Tiny(OnceLock<JitRewriter>);

/// The methods to rewrite: checked before anything is decoded.
fn is_answer_get(module: &ModuleState, token: mdToken) -> bool {
    let name = method_name(module.metadata(), token);
    (name.owner.as_str(), name.name.as_str()) == ("Answer", "Get")
}

impl Profiler for Tiny {
    fn initialize(&self, info: ProfilerInfo) -> Result<(), HResult> {
        let jit = CorPrfMonitor::MONITOR_JIT_COMPILATION;
        info.set_event_mask(jit, CorPrfHighMonitor::empty())?;
        let _ = self
            .0
            .set(JitRewriter::new(info).with_filter(is_answer_get));
        Ok(())
    }

    fn jit_compilation_started(&self, function: FunctionID, _: bool) -> Result<(), HResult> {
        let jit = self.0.get().ok_or(HResult::E_FAIL)?;
        jit.rewrite(function, |body, _| {
            *body = MethodBody::new(); // return 42;
            body.append(Instruction::ldc_i4(42));
            body.append(Instruction::simple(OpCode::Ret));
            Ok(true)
        });
        Ok(())
    }

    // A method to be rewritten is not inlined into callers compiled before it.
    fn jit_inlining(&self, caller: FunctionID, callee: FunctionID) -> bool {
        self.0
            .get()
            .is_none_or(|jit| jit.jit_inlining(caller, callee))
    }
}

ilrewrite::export_profiler!(
    clsid = "{0B5C3F2A-7D41-4E8B-9A6C-2E1F4D7B8C93}",
    profiler = Tiny::default
);

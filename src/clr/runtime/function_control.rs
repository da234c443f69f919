//! [`FunctionControl`]: the runtime's `ICorProfilerFunctionControl` during one
//! `GetReJITParameters`, and the [`CodegenFlags`] it takes.

use core::ffi::c_void;
use core::fmt;
use core::str::FromStr;

use super::error::{ClrError, ClrResult, check, to_ulong};
use super::info::MapArray;
use crate::clr::sys::{CorPrfCodegenFlags, ICorProfilerFunctionControlVtbl};
use crate::ilmap::IlMap;

/// How the JIT compiles one re-JIT-compiled method (`COR_PRF_CODEGEN_FLAGS`), checked:
/// only the flags the runtime defines. (CoreCLR 3.1 takes any `u32` without a word and
/// ignores what it does not know, so a typo would silently do nothing.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CodegenFlags(CorPrfCodegenFlags);

impl Default for CodegenFlags {
    /// [`CodegenFlags::NONE`].
    fn default() -> CodegenFlags {
        CodegenFlags::NONE
    }
}

/// A code-generation flag set the runtime does not define.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CodegenFlagsError {
    /// Bits outside `COR_PRF_CODEGEN_FLAGS`.
    #[error(
        "code-generation bits {0:#x} are not defined (known: 0x1 no-inlining, 0x2 no-optimizations)"
    )]
    UndefinedBits(u32),
    /// A name that is not a flag's.
    #[error("unknown code-generation flag {0:?} (known: none, no-inlining, no-optimizations)")]
    UnknownName(String),
}

impl CodegenFlags {
    /// The JIT's usual code.
    pub const NONE: CodegenFlags = CodegenFlags(CorPrfCodegenFlags::empty());
    /// No inlining into the method (`COR_PRF_CODEGEN_DISABLE_INLINING`); other
    /// optimizations stay.
    pub const NO_INLINING: CodegenFlags = CodegenFlags(CorPrfCodegenFlags::DISABLE_INLINING);
    /// No optimization at all, inlining included
    /// (`COR_PRF_CODEGEN_DISABLE_ALL_OPTIMIZATIONS`).
    pub const NO_OPTIMIZATIONS: CodegenFlags =
        CodegenFlags(CorPrfCodegenFlags::DISABLE_ALL_OPTIMIZATIONS);

    /// The flags of `bits`.
    ///
    /// # Errors
    /// [`CodegenFlagsError::UndefinedBits`] for any bit the runtime does not define.
    pub fn from_bits(bits: u32) -> Result<CodegenFlags, CodegenFlagsError> {
        CorPrfCodegenFlags::from_bits(bits).map(CodegenFlags).ok_or(
            CodegenFlagsError::UndefinedBits(bits & !CorPrfCodegenFlags::all().bits()),
        )
    }

    /// The bits the runtime takes.
    pub fn bits(self) -> u32 {
        self.0.bits()
    }

    /// Both sets.
    #[must_use]
    pub fn union(self, other: CodegenFlags) -> CodegenFlags {
        CodegenFlags(self.0 | other.0)
    }

    /// Whether the JIT inlines nothing into the method (either flag).
    pub fn inlining_disabled(self) -> bool {
        !self.0.is_empty()
    }

    /// Whether the JIT optimizes nothing.
    pub fn optimizations_disabled(self) -> bool {
        self.0
            .contains(CorPrfCodegenFlags::DISABLE_ALL_OPTIMIZATIONS)
    }
}

/// `none`, or the flags' names joined by commas (`no-inlining,no-optimizations`).
impl fmt::Display for CodegenFlags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = [
            (CorPrfCodegenFlags::DISABLE_INLINING, "no-inlining"),
            (
                CorPrfCodegenFlags::DISABLE_ALL_OPTIMIZATIONS,
                "no-optimizations",
            ),
        ]
        .into_iter()
        .filter(|(flag, _)| self.0.contains(*flag))
        .map(|(_, name)| name)
        .collect();
        match names.is_empty() {
            true => f.write_str("none"),
            false => f.write_str(&names.join(",")),
        }
    }
}

/// Reads what [`Display`](fmt::Display) writes: `none`, or names joined by commas.
impl FromStr for CodegenFlags {
    type Err = CodegenFlagsError;

    fn from_str(s: &str) -> Result<CodegenFlags, CodegenFlagsError> {
        if s == "none" {
            return Ok(CodegenFlags::NONE);
        }
        s.split(',').try_fold(CodegenFlags::NONE, |flags, name| {
            let flag = match name {
                "no-inlining" => CodegenFlags::NO_INLINING,
                "no-optimizations" => CodegenFlags::NO_OPTIMIZATIONS,
                other => return Err(CodegenFlagsError::UnknownName(other.to_string())),
            };
            Ok(flags.union(flag))
        })
    }
}

/// Where the new IL of a re-JIT-compiled method goes: the runtime's
/// `ICorProfilerFunctionControl`, lent by reference for one `GetReJITParameters`
/// callback (it is not `Send`, and the crate never hands out an owned one).
#[derive(Debug)]
pub struct FunctionControl {
    ptr: *mut c_void,
}

impl FunctionControl {
    /// The control the runtime passed.
    ///
    /// # Safety
    /// `ptr` is null or a live `ICorProfilerFunctionControl*` that stays valid while
    /// the value lives (the callback's duration).
    pub(crate) unsafe fn from_raw(ptr: *mut c_void) -> FunctionControl {
        FunctionControl { ptr }
    }

    /// The pointer the runtime passed (for a recorder's report).
    #[cfg(test)]
    pub(crate) fn as_raw(&self) -> *mut c_void {
        self.ptr
    }

    fn vtbl(&self, method: &'static str) -> ClrResult<&ICorProfilerFunctionControlVtbl> {
        if self.ptr.is_null() {
            return Err(ClrError::Unexpected {
                method,
                what: "no function control",
            });
        }
        // SAFETY: a live control (the constructor's contract), whose first word is its
        // vtable, laid out as `ICorProfilerFunctionControlVtbl`; it lives as long as
        // the control, which outlives the borrow.
        Ok(unsafe { &**(self.ptr as *const *const ICorProfilerFunctionControlVtbl) })
    }

    /// `SetCodegenFlags`: how the JIT compiles this version.
    ///
    /// # Errors
    /// The runtime's refusal (CoreCLR accepts any flags).
    pub fn set_codegen_flags(&self, flags: CodegenFlags) -> ClrResult<()> {
        const METHOD: &str = "ICorProfilerFunctionControl::SetCodegenFlags";
        let v = self.vtbl(METHOD)?;
        // SAFETY: a live control; the flags are a plain value.
        check(METHOD, unsafe {
            (v.SetCodegenFlags)(self.ptr, flags.bits())
        })
    }

    /// `SetILFunctionBody`: `body` (header, code, sections) is the IL of this version.
    /// The runtime copies it during the call (CoreCLR's `ProfilerFunctionControl`
    /// allocates on the module's loader heap and copies), so no allocator is involved.
    ///
    /// # Errors
    /// The runtime's refusal (an empty body: `E_INVALIDARG`), a body of 4 GiB or more.
    pub fn set_il_function_body(&self, body: &[u8]) -> ClrResult<()> {
        const METHOD: &str = "ICorProfilerFunctionControl::SetILFunctionBody";
        let v = self.vtbl(METHOD)?;
        let len = to_ulong(METHOD, "method body size", body.len())?;
        // SAFETY: a live control; `body` holds `len` bytes, read during the call only.
        check(METHOD, unsafe {
            (v.SetILFunctionBody)(self.ptr, len, body.as_ptr())
        })
    }

    /// `SetILInstrumentedCodeMap`: where each original IL offset went, for this version
    /// (copied by the runtime during the call).
    ///
    /// # Errors
    /// The runtime's refusal (`CORPROF_E_DEBUGGING_DISABLED` when the runtime has no
    /// debugger interface).
    pub fn set_il_instrumented_code_map(&self, map: &IlMap) -> ClrResult<()> {
        const METHOD: &str = "ICorProfilerFunctionControl::SetILInstrumentedCodeMap";
        let v = self.vtbl(METHOD)?;
        let n = to_ulong(METHOD, "IL map entries", map.entries().len())?;
        let array = MapArray::new(map);
        // SAFETY: a live control; `array` holds `n` maps and outlives the call, which
        // copies them.
        check(METHOD, unsafe {
            (v.SetILInstrumentedCodeMap)(self.ptr, n, array.as_ptr())
        })
    }
}

/// Test support: a stand-in for the runtime's function control that records what it is
/// given.
#[cfg(test)]
pub(crate) mod fake {
    use super::*;
    use crate::clr::com::fake::FakeUnknown;
    use crate::clr::sys::{CorIlMap, HResult};
    use std::sync::Mutex;

    /// What a [`RecordingControl`] was given.
    #[derive(Debug, Default, Clone, PartialEq, Eq)]
    pub(crate) struct Given {
        pub(crate) flags: Option<u32>,
        pub(crate) body: Option<Vec<u8>>,
        pub(crate) map: Option<Vec<(u32, u32)>>,
    }

    /// The fake: its `IUnknown` half first, as a fake's layout requires.
    #[repr(C)]
    pub(crate) struct RecordingControl {
        unknown: FakeUnknown<ICorProfilerFunctionControlVtbl>,
        pub(crate) given: Mutex<Given>,
        /// Refuses `SetILFunctionBody` with this.
        pub(crate) refuse_body: Option<HResult>,
    }

    /// # Safety
    /// `this` is a live `RecordingControl`.
    unsafe fn fake<'a>(this: *mut c_void) -> &'a RecordingControl {
        // SAFETY: the contract above.
        unsafe { &*this.cast::<RecordingControl>() }
    }

    unsafe extern "system" fn set_codegen_flags(this: *mut c_void, flags: u32) -> HResult {
        // SAFETY: the code under test passes the live fake.
        let fake = unsafe { fake(this) };
        fake.given.lock().unwrap().flags = Some(flags);
        HResult::S_OK
    }

    unsafe extern "system" fn set_il_function_body(
        this: *mut c_void,
        len: u32,
        body: *const u8,
    ) -> HResult {
        // SAFETY: the live fake, and `len` readable bytes at `body` during the call.
        let (fake, body) = unsafe { (fake(this), core::slice::from_raw_parts(body, len as usize)) };
        if let Some(hr) = fake.refuse_body {
            return hr;
        }
        fake.given.lock().unwrap().body = Some(body.to_vec());
        HResult::S_OK
    }

    unsafe extern "system" fn set_il_instrumented_code_map(
        this: *mut c_void,
        n: u32,
        map: *mut CorIlMap,
    ) -> HResult {
        // SAFETY: the live fake, and `n` readable entries at `map` during the call.
        let (fake, map) = unsafe { (fake(this), core::slice::from_raw_parts(map, n as usize)) };
        fake.given.lock().unwrap().map =
            Some(map.iter().map(|e| (e.old_offset, e.new_offset)).collect());
        HResult::S_OK
    }

    static VTBL: ICorProfilerFunctionControlVtbl = ICorProfilerFunctionControlVtbl {
        base: crate::clr::sys::IUnknownVtbl {
            QueryInterface: FakeUnknown::query_interface,
            AddRef: FakeUnknown::add_ref,
            Release: FakeUnknown::release,
        },
        SetCodegenFlags: set_codegen_flags,
        SetILFunctionBody: set_il_function_body,
        SetILInstrumentedCodeMap: set_il_instrumented_code_map,
    };

    impl RecordingControl {
        pub(crate) fn new(refuse_body: Option<HResult>) -> Box<RecordingControl> {
            Box::new(RecordingControl {
                unknown: FakeUnknown::with_vtable(&VTBL, None),
                given: Mutex::default(),
                refuse_body,
            })
        }

        /// The control as the runtime would lend it; valid while `self` lives.
        pub(crate) fn control(&self) -> FunctionControl {
            // SAFETY: a live fake control, which the caller keeps alive while using
            // the value (tests hold `self` for the scope).
            unsafe { FunctionControl::from_raw(self.unknown.as_ptr()) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::fake::RecordingControl;
    use super::*;
    use crate::clr::sys::HResult;

    #[test]
    fn flags_outside_the_runtimes_set_are_refused_and_names_round_trip() {
        assert_eq!(CodegenFlags::from_bits(0).unwrap(), CodegenFlags::NONE);
        assert_eq!(CodegenFlags::from_bits(3).unwrap().bits(), 3);
        assert_eq!(
            CodegenFlags::from_bits(0x7),
            Err(CodegenFlagsError::UndefinedBits(0x4))
        );
        assert_eq!(
            CodegenFlags::from_bits(0x8000_0001),
            Err(CodegenFlagsError::UndefinedBits(0x8000_0000))
        );
        for text in [
            "none",
            "no-inlining",
            "no-optimizations",
            "no-inlining,no-optimizations",
        ] {
            let flags: CodegenFlags = text.parse().unwrap();
            assert_eq!(flags.to_string(), text);
        }
        assert!(matches!(
            "no-inlining,fast".parse::<CodegenFlags>(),
            Err(CodegenFlagsError::UnknownName(n)) if n == "fast"
        ));
        assert!("".parse::<CodegenFlags>().is_err());
        let both = CodegenFlags::NO_INLINING.union(CodegenFlags::NO_OPTIMIZATIONS);
        assert!(both.inlining_disabled() && both.optimizations_disabled());
        assert!(CodegenFlags::NO_OPTIMIZATIONS.inlining_disabled());
        assert!(!CodegenFlags::NO_INLINING.optimizations_disabled());
    }

    #[test]
    fn a_body_flags_and_map_reach_the_control_and_a_refusal_is_typed() {
        let fake = RecordingControl::new(None);
        let control = fake.control();
        control
            .set_codegen_flags(CodegenFlags::NO_INLINING)
            .unwrap();
        control.set_il_function_body(&[0x0A, 0x2A]).unwrap();
        let map = IlMap::identity(&[0, 4]);
        control.set_il_instrumented_code_map(&map).unwrap();
        let given = fake.given.lock().unwrap().clone();
        assert_eq!(given.flags, Some(1));
        assert_eq!(given.body.as_deref(), Some(&[0x0A, 0x2A][..]));
        assert_eq!(given.map, Some(vec![(0, 0), (4, 4)]));

        let refusing = RecordingControl::new(Some(HResult::E_INVALIDARG));
        let error = refusing
            .control()
            .set_il_function_body(&[0x0A, 0x2A])
            .unwrap_err();
        assert!(matches!(
            error,
            ClrError::Failed {
                hr: HResult::E_INVALIDARG,
                ..
            }
        ));
        // SAFETY: null is allowed by the constructor's contract.
        let none = unsafe { FunctionControl::from_raw(core::ptr::null_mut()) };
        assert!(none.set_il_function_body(&[0x0A, 0x2A]).is_err());
    }
}

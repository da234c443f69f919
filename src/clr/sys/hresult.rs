//! [`HResult`]: the COM `HRESULT`, with the codes the profiling API answers named.

use core::fmt;

/// A COM `HRESULT`: negative values are failures.
///
/// Displayed as `0x80131363 (CORPROF_E_UNSUPPORTED_CALL_SEQUENCE)` for the codes named
/// here, as bare hex otherwise.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HResult(pub i32);

/// Declares the named `HResult` constants and the table [`HResult::name`] searches.
macro_rules! hresults {
    ($($(#[$attr:meta])* $name:ident = $value:literal;)*) => {
        impl HResult {
            $(
                $(#[$attr])*
                pub const $name: HResult = HResult::from_u32($value);
            )*

            /// Every named code, in declaration order.
            pub const KNOWN: &'static [(HResult, &'static str)] =
                &[$((HResult::$name, stringify!($name))),*];
        }
    };
}

hresults! {
    /// Success.
    S_OK = 0x0000_0000;
    /// Success, with a "no" or "nothing done" meaning.
    S_FALSE = 0x0000_0001;
    /// Not implemented.
    E_NOTIMPL = 0x8000_4001;
    /// The interface is not supported.
    E_NOINTERFACE = 0x8000_4002;
    /// An invalid (usually null) pointer.
    E_POINTER = 0x8000_4003;
    /// The operation was aborted.
    E_ABORT = 0x8000_4004;
    /// Unspecified failure.
    E_FAIL = 0x8000_4005;
    /// Catastrophic failure.
    E_UNEXPECTED = 0x8000_FFFF;
    /// Access denied.
    E_ACCESSDENIED = 0x8007_0005;
    /// A handle is invalid.
    E_HANDLE = 0x8007_0006;
    /// Out of memory.
    E_OUTOFMEMORY = 0x8007_000E;
    /// An invalid argument.
    E_INVALIDARG = 0x8007_0057;
    /// `IClassFactory::CreateInstance` was asked to aggregate, which it does not support.
    CLASS_E_NOAGGREGATION = 0x8004_0110;
    /// `DllGetClassObject` was asked for a class it does not provide.
    CLASS_E_CLASSNOTAVAILABLE = 0x8004_0111;
    /// The function has not been compiled yet.
    CORPROF_E_FUNCTION_NOT_COMPILED = 0x8013_1350;
    /// The requested data is not available yet (for example a static without a home yet).
    CORPROF_E_DATAINCOMPLETE = 0x8013_1351;
    /// The function has no IL (abstract, P/Invoke, runtime-implemented).
    CORPROF_E_FUNCTION_NOT_IL = 0x8013_1354;
    /// The calling thread is not a managed thread.
    CORPROF_E_NOT_MANAGED_THREAD = 0x8013_1355;
    /// The method may only be called from `Initialize`.
    CORPROF_E_CALL_ONLY_FROM_INIT = 0x8013_1356;
    /// The requested information is not available yet.
    CORPROF_E_NOT_YET_AVAILABLE = 0x8013_135B;
    /// The class is an unbound generic type.
    CORPROF_E_TYPE_IS_PARAMETERIZED = 0x8013_135C;
    /// The function is an unbound generic method.
    CORPROF_E_FUNCTION_IS_PARAMETERIZED = 0x8013_135D;
    /// `DoStackSnapshot` was asked for a thread it cannot walk.
    CORPROF_E_STACKSNAPSHOT_INVALID_TGT_THREAD = 0x8013_135E;
    /// `DoStackSnapshot` was given a context that is not in managed code.
    CORPROF_E_STACKSNAPSHOT_UNMANAGED_CTX = 0x8013_135F;
    /// `DoStackSnapshot` cannot walk the stack safely now.
    CORPROF_E_STACKSNAPSHOT_UNSAFE = 0x8013_1360;
    /// The stack-snapshot callback asked to abort the walk.
    CORPROF_E_STACKSNAPSHOT_ABORTED = 0x8013_1361;
    /// A literal static has no address.
    CORPROF_E_LITERALS_HAVE_NO_ADDRESS = 0x8013_1362;
    /// The call was made at a time the runtime does not support (for example from a thread
    /// or callback where it is illegal).
    CORPROF_E_UNSUPPORTED_CALL_SEQUENCE = 0x8013_1363;
    /// A legal asynchronous call was made at an unsafe time.
    CORPROF_E_ASYNCHRONOUS_UNSAFE = 0x8013_1364;
    /// The class is an array.
    CORPROF_E_CLASSID_IS_ARRAY = 0x8013_1365;
    /// The class is a composite (array, pointer, byref, ...).
    CORPROF_E_CLASSID_IS_COMPOSITE = 0x8013_1366;
    /// The profiler is detaching.
    CORPROF_E_PROFILER_DETACHING = 0x8013_1367;
    /// The profiler does not support attaching.
    CORPROF_E_PROFILER_NOT_ATTACHABLE = 0x8013_1368;
    /// An attach message had an unknown format.
    CORPROF_E_UNRECOGNIZED_PIPE_MSG_FORMAT = 0x8013_1369;
    /// A profiler is already loaded.
    CORPROF_E_PROFILER_ALREADY_ACTIVE = 0x8013_136A;
    /// The process cannot be profiled by this trigger.
    CORPROF_E_PROFILEE_INCOMPATIBLE_WITH_TRIGGER = 0x8013_136B;
    /// Inter-process communication with the profilee failed.
    CORPROF_E_IPC_FAILED = 0x8013_136C;
    /// The profilee process was not found.
    CORPROF_E_PROFILEE_PROCESS_NOT_FOUND = 0x8013_136D;
    /// The profiler must implement `ICorProfilerCallback3`.
    CORPROF_E_CALLBACK3_REQUIRED = 0x8013_136E;
    /// Not supported for a profiler that attached.
    CORPROF_E_UNSUPPORTED_FOR_ATTACHING_PROFILER = 0x8013_136F;
    /// Instrumentation that cannot be undone is present.
    CORPROF_E_IRREVERSIBLE_INSTRUMENTATION_PRESENT = 0x8013_1370;
    /// The runtime is not initialized yet.
    CORPROF_E_RUNTIME_UNINITIALIZED = 0x8013_1371;
    /// Immutable event-mask flags were already set.
    CORPROF_E_IMMUTABLE_FLAGS_SET = 0x8013_1372;
    /// The profiler has not finished initializing.
    CORPROF_E_PROFILER_NOT_YET_INITIALIZED = 0x8013_1373;
    /// The call is inconsistent with the event mask (for example a ReJIT request without
    /// `COR_PRF_ENABLE_REJIT`).
    CORPROF_E_INCONSISTENT_WITH_FLAGS = 0x8013_1374;
    /// The profiler cancelled its own activation.
    CORPROF_E_PROFILER_CANCEL_ACTIVATION = 0x8013_1375;
    /// Concurrent GC is enabled and prevents profiling.
    CORPROF_E_CONCURRENT_GC_NOT_PROFILABLE = 0x8013_1376;
    /// Debugging is disabled.
    CORPROF_E_DEBUGGING_DISABLED = 0x8013_1378;
    /// Timed out waiting for a concurrent GC.
    CORPROF_E_TIMEOUT_WAITING_FOR_CONCURRENT_GC = 0x8013_1379;
    /// The module is dynamic (Reflection.Emit).
    CORPROF_E_MODULE_IS_DYNAMIC = 0x8013_137A;
    /// The profiler must implement `ICorProfilerCallback4`.
    CORPROF_E_CALLBACK4_REQUIRED = 0x8013_137B;
    /// ReJIT was not enabled at startup.
    CORPROF_E_REJIT_NOT_ENABLED = 0x8013_137C;
    /// The function belongs to a collectible assembly.
    CORPROF_E_FUNCTION_IS_COLLECTIBLE = 0x8013_137E;
    /// The profiler must implement `ICorProfilerCallback6`.
    CORPROF_E_CALLBACK6_REQUIRED = 0x8013_1380;
    /// The profiler must implement `ICorProfilerCallback7`.
    CORPROF_E_CALLBACK7_REQUIRED = 0x8013_1382;
    /// ReJIT with inlining tracking is disabled.
    CORPROF_E_REJIT_INLINING_DISABLED = 0x8013_1383;
    /// A runtime suspension is already in progress.
    CORPROF_E_SUSPENSION_IN_PROGRESS = 0x8013_1388;
    /// The object is not a GC heap object.
    CORPROF_E_NOT_GC_OBJECT = 0x8013_1389;
}

impl HResult {
    /// The code with this 32-bit pattern.
    pub const fn from_u32(bits: u32) -> HResult {
        HResult(bits as i32)
    }

    /// The 32-bit pattern.
    pub const fn as_u32(self) -> u32 {
        self.0 as u32
    }

    /// `SUCCEEDED(hr)`: the severity bit is clear (`S_OK`, `S_FALSE`, ...).
    pub const fn is_ok(self) -> bool {
        self.0 >= 0
    }

    /// `FAILED(hr)`.
    pub const fn is_err(self) -> bool {
        self.0 < 0
    }

    /// `Ok(self)` for a success code, `Err(self)` for a failure.
    ///
    /// # Errors
    /// `self`, when it is a failure code.
    pub const fn ok(self) -> Result<HResult, HResult> {
        if self.is_ok() { Ok(self) } else { Err(self) }
    }

    /// The constant's name for the codes named here (`"E_FAIL"`, ...).
    pub fn name(self) -> Option<&'static str> {
        Self::KNOWN
            .iter()
            .find(|(code, _)| *code == self)
            .map(|&(_, name)| name)
    }
}

impl fmt::Display for HResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "0x{:08X}", self.as_u32())?;
        if let Some(name) = self.name() {
            write!(f, " ({name})")?;
        }
        Ok(())
    }
}

impl fmt::Debug for HResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for HResult {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hresults_show_their_names() {
        assert_eq!(
            HResult::CORPROF_E_UNSUPPORTED_CALL_SEQUENCE.to_string(),
            "0x80131363 (CORPROF_E_UNSUPPORTED_CALL_SEQUENCE)"
        );
        assert_eq!(format!("{:?}", HResult::S_OK), "0x00000000 (S_OK)");
        assert_eq!(HResult::from_u32(0x8013_1999).to_string(), "0x80131999");
        assert_eq!(HResult::E_FAIL.name(), Some("E_FAIL"));
        assert_eq!(HResult(2).name(), None);
        assert!(HResult::S_OK.is_ok() && HResult::S_FALSE.is_ok());
        assert!(HResult::E_NOINTERFACE.is_err() && HResult::CORPROF_E_DATAINCOMPLETE.is_err());
        assert_eq!(HResult::S_FALSE.ok(), Ok(HResult::S_FALSE));
        assert_eq!(HResult::E_POINTER.ok(), Err(HResult::E_POINTER));
        assert_eq!(HResult::E_OUTOFMEMORY.as_u32(), 0x8007_000E);
        // Every name is unique and every code is named once.
        for (i, (code, name)) in HResult::KNOWN.iter().enumerate() {
            for (other_code, other_name) in &HResult::KNOWN[i + 1..] {
                assert_ne!(code, other_code, "{name} and {other_name}");
                assert_ne!(name, other_name);
            }
        }
    }
}

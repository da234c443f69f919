//! [`ClrError`]: what went wrong in a call to the runtime, and the `HRESULT` a callback
//! answers for it.

use crate::clr::sys::HResult;

/// What went wrong in a call to the runtime.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClrError {
    /// The runtime answered with a failure `HRESULT`.
    #[error("{method} failed: {hr}")]
    Failed {
        /// The `ICorProfilerInfo` (or metadata) method.
        method: &'static str,
        /// Its answer, named when known (`0x80131363 (CORPROF_E_UNSUPPORTED_CALL_SEQUENCE)`).
        hr: HResult,
    },
    /// Refused by the call-sequence guard before calling: `method` is not safe to call
    /// asynchronously, and the current thread is neither inside a callback nor one the
    /// profiler created (see [`super::guard`]).
    #[error(
        "{method} called asynchronously (outside a callback, from a thread the profiler did not create): refused to avoid a deadlock"
    )]
    UnsupportedCallSequence {
        /// The method refused.
        method: &'static str,
    },
    /// The runtime's `ICorProfilerInfo` is older than the version the method needs.
    #[error("{method} needs ICorProfilerInfo{needs}; the runtime gives ICorProfilerInfo{has}")]
    NotAvailable {
        /// The method.
        method: &'static str,
        /// The interface version it is declared in.
        needs: u32,
        /// The version the runtime gives.
        has: u32,
    },
    /// The runtime returned something the crate cannot use (named).
    #[error("{method}: {what}")]
    Unexpected {
        /// The method.
        method: &'static str,
        /// What was wrong.
        what: &'static str,
    },
}

/// The result of a call to the runtime.
pub type ClrResult<T> = Result<T, ClrError>;

/// The `HRESULT` a callback answers for an error (so that `?` works in a
/// [`Profiler`](crate::clr::Profiler) method): the runtime's own code for
/// [`ClrError::Failed`], `CORPROF_E_UNSUPPORTED_CALL_SEQUENCE` for a call the guard
/// refused, `E_NOINTERFACE` for an interface version the runtime lacks, `E_FAIL`
/// otherwise.
impl From<ClrError> for HResult {
    fn from(error: ClrError) -> HResult {
        match error {
            ClrError::Failed { hr, .. } => hr,
            ClrError::UnsupportedCallSequence { .. } => {
                HResult::CORPROF_E_UNSUPPORTED_CALL_SEQUENCE
            }
            ClrError::NotAvailable { .. } => HResult::E_NOINTERFACE,
            ClrError::Unexpected { .. } => HResult::E_FAIL,
        }
    }
}

/// Turns an `HRESULT` into a result naming `method`.
pub(crate) fn check(method: &'static str, hr: HResult) -> ClrResult<()> {
    if hr.is_ok() {
        Ok(())
    } else {
        Err(ClrError::Failed { method, hr })
    }
}

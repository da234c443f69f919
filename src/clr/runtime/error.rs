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
    /// Refused by the shutdown gate before calling: the runtime's `Shutdown` has
    /// arrived, after which a call from outside a callback is undefined behaviour (see
    /// [`super::guard`]).
    #[error("{method} not called: the runtime is shutting down")]
    ShuttingDown {
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
    /// A length or count that does not fit the type the other side has for it: a buffer,
    /// body or array of `u32::MAX` units or more for the runtime's 32-bit `ULONG`, or a
    /// `ULONG` the runtime returned that does not fit `usize`. Refused, never truncated
    /// (a truncated length would hand the runtime part of a buffer, or read past one).
    #[error("{method}: {what} of {len} does not fit in {width} bits")]
    LengthOverflow {
        /// The method the length is for.
        method: &'static str,
        /// What the length measures (`"signature length"`, `"IL map entries"`, ...).
        what: &'static str,
        /// The length (saturated at `u64::MAX`).
        len: u64,
        /// The width of the type it did not fit, in bits (32 for a `ULONG`).
        width: u32,
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
/// refused, `CORPROF_E_PROFILER_DETACHING` for one refused at shutdown,
/// `E_NOINTERFACE` for an interface version the runtime lacks, `E_INVALIDARG`
/// for a length out of range, `E_FAIL` otherwise.
impl From<ClrError> for HResult {
    fn from(error: ClrError) -> HResult {
        match error {
            ClrError::Failed { hr, .. } => hr,
            ClrError::UnsupportedCallSequence { .. } => {
                HResult::CORPROF_E_UNSUPPORTED_CALL_SEQUENCE
            }
            ClrError::ShuttingDown { .. } => HResult::CORPROF_E_PROFILER_DETACHING,
            ClrError::NotAvailable { .. } => HResult::E_NOINTERFACE,
            ClrError::LengthOverflow { .. } => HResult::E_INVALIDARG,
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

/// `len` as the runtime's `ULONG` (`u32`), for a length or count handed to `method`;
/// [`ClrError::LengthOverflow`] if it does not fit.
pub(crate) fn to_ulong(method: &'static str, what: &'static str, len: usize) -> ClrResult<u32> {
    u32::try_from(len).map_err(|_| ClrError::LengthOverflow {
        method,
        what,
        len: u64::try_from(len).unwrap_or(u64::MAX),
        width: u32::BITS,
    })
}

/// A `ULONG` length or count the runtime gave (`method`'s), as a `usize`;
/// [`ClrError::LengthOverflow`] on a target whose `usize` is narrower than 32 bits.
pub(crate) fn from_ulong(method: &'static str, what: &'static str, len: u32) -> ClrResult<usize> {
    usize::try_from(len).map_err(|_| ClrError::LengthOverflow {
        method,
        what,
        len: u64::from(len),
        width: usize::BITS,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_are_checked_not_truncated() {
        assert_eq!(to_ulong("M", "buffer", 0), Ok(0));
        assert_eq!(to_ulong("M", "buffer", 0xFFFF_FFFF), Ok(u32::MAX));
        assert_eq!(from_ulong("M", "size", u32::MAX), Ok(0xFFFF_FFFF));
        #[cfg(target_pointer_width = "64")]
        {
            let error = to_ulong("GetTokenFromSig", "signature length", 1 << 32).unwrap_err();
            assert_eq!(
                error,
                ClrError::LengthOverflow {
                    method: "GetTokenFromSig",
                    what: "signature length",
                    len: 1 << 32,
                    width: 32,
                }
            );
            assert_eq!(
                error.to_string(),
                "GetTokenFromSig: signature length of 4294967296 does not fit in 32 bits"
            );
            assert_eq!(HResult::from(error), HResult::E_INVALIDARG);
        }
    }
}

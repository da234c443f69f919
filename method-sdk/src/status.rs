//! [`Status`], what a host function answers when it fails, and [`Error`], what a
//! [`Method`](crate::Method) answers when it fails.

use core::fmt;

use crate::sys;

/// A host function's failure: one of the header's `ILR_E_*` codes (never `ILR_OK`).
///
/// A code this crate does not know (from a newer host) is kept as it is; [`Status::code`]
/// gives it back.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Status(i32);

impl Status {
    /// `ILR_E_INVALID_HANDLE`: a handle used outside the call that received it (or on
    /// another thread).
    pub const INVALID_HANDLE: Status = Status(sys::ILR_E_INVALID_HANDLE);
    /// `ILR_E_INVALID_ARGUMENT`: an argument the host cannot take; nothing was changed.
    pub const INVALID_ARGUMENT: Status = Status(sys::ILR_E_INVALID_ARGUMENT);
    /// `ILR_E_NOT_FOUND`: what was asked for is not there.
    pub const NOT_FOUND: Status = Status(sys::ILR_E_NOT_FOUND);
    /// `ILR_E_REFUSED`: the host refused the edit (it would break the body); nothing was
    /// changed.
    pub const REFUSED: Status = Status(sys::ILR_E_REFUSED);
    /// `ILR_E_FAILED`: the library's own failure.
    pub const FAILED: Status = Status(sys::ILR_E_FAILED);

    /// `Ok(())` for `ILR_OK`, else the failure.
    ///
    /// # Errors
    /// Every code but `ILR_OK`.
    pub const fn check(code: sys::ilr_status) -> Result<(), Status> {
        match code {
            sys::ILR_OK => Ok(()),
            other => Err(Status(other)),
        }
    }

    /// The code, as the header numbers it.
    pub const fn code(self) -> sys::ilr_status {
        self.0
    }

    /// What the code means, in a few words (`None` for a code this crate does not
    /// know).
    pub const fn meaning(self) -> Option<&'static str> {
        match self.0 {
            sys::ILR_E_INVALID_HANDLE => Some("invalid handle"),
            sys::ILR_E_INVALID_ARGUMENT => Some("invalid argument"),
            sys::ILR_E_NOT_FOUND => Some("not found"),
            sys::ILR_E_REFUSED => Some("refused"),
            sys::ILR_E_FAILED => Some("failed"),
            _ => None,
        }
    }
}

impl fmt::Debug for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Status({self})")
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.meaning() {
            Some(meaning) => write!(f, "{meaning} ({})", self.0),
            None => write!(f, "status {}", self.0),
        }
    }
}

impl std::error::Error for Status {}

/// Why a [`Method`](crate::Method)'s `start`, `check_options` or `edit` failed: a status
/// for the host (`ILR_E_FAILED` unless it came from a host function) and a message,
/// which the host shows (at most the capacity of its buffer, 1 KiB today).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    status: Status,
    message: String,
}

impl Error {
    /// A failure of the method's own: `ILR_E_FAILED` with `message`.
    pub fn new(message: impl Into<String>) -> Error {
        Error {
            status: Status::FAILED,
            message: message.into(),
        }
    }

    /// A failure with another status (e.g. the one a host function answered).
    pub fn with_status(status: Status, message: impl Into<String>) -> Error {
        Error {
            status,
            message: message.into(),
        }
    }

    /// The status the host gets.
    pub fn status(&self) -> Status {
        self.status
    }

    /// The message the host gets.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl From<Status> for Error {
    /// A host function's failure, passed on: its status, and a message saying only
    /// what it was (add context with [`Error::with_status`]).
    fn from(status: Status) -> Error {
        Error {
            status,
            message: format!("a host function failed: {status}"),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.message, self.status)
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_and_display() {
        assert_eq!(Status::check(sys::ILR_OK), Ok(()));
        assert_eq!(Status::check(-3), Err(Status::NOT_FOUND));
        assert_eq!(Status::REFUSED.to_string(), "refused (-5)");
        assert_eq!(Status::check(-77).unwrap_err().to_string(), "status -77");
        let e = Error::from(Status::INVALID_HANDLE);
        assert_eq!(e.status().code(), -1);
        assert_eq!(Error::new("no").status(), Status::FAILED);
    }
}

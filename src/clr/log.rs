//! A small logging hook for what the profiler layer has to report and nobody can be
//! returned to: a panic caught at the FFI boundary, an `initialize` that failed.
//!
//! The default writes `ilrewrite: <message>` to stderr; [`set_logger`] replaces it for the
//! whole process (for example with a function that writes to the profiler's own log
//! file). The logger is called from any thread the runtime calls the profiler on, maybe
//! several at once.

use std::io::Write as _;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{PoisonError, RwLock};

/// A logger: receives one message (no trailing newline) per call.
pub type Logger = fn(&str);

static LOGGER: RwLock<Logger> = RwLock::new(stderr as Logger);

/// The default logger: writes `ilrewrite: <message>` and a newline to stderr (errors
/// writing are ignored).
pub fn stderr(message: &str) {
    let _ = writeln!(std::io::stderr().lock(), "ilrewrite: {message}");
}

/// Sends every later message to `logger` instead ([`stderr`] restores the default).
pub fn set_logger(logger: Logger) {
    *LOGGER.write().unwrap_or_else(PoisonError::into_inner) = logger;
}

/// Logs `message` with the current logger. A panicking logger is contained: the
/// message is lost, the caller goes on.
pub fn write(message: &str) {
    let logger = *LOGGER.read().unwrap_or_else(PoisonError::into_inner);
    let _ = catch_unwind(AssertUnwindSafe(|| logger(message)));
}

//! A small logging hook for what the profiler layer has to report and nobody can be
//! returned to: a panic caught at the FFI boundary, an `initialize` that failed.
//! It imports nothing of the crate, so every part of `clr` may use it.
//!
//! The default writes `ilrewrite: <message>` to stderr; [`set_logger`] replaces it for the
//! whole process (for example with a function that writes to the profiler's own log
//! file). The logger is called from any thread the runtime calls the profiler on, maybe
//! several at once.

use std::any::Any;
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

/// The text of a panic's payload (`panic!` with a message gives a `&str` or a `String`).
pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> &str {
    if let Some(text) = payload.downcast_ref::<&str>() {
        text
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text
    } else {
        "(no message)"
    }
}

/// Logs a panic caught at the FFI boundary, then drops its payload (itself guarded: a
/// payload whose destructor panics is leaked rather than unwound into the runtime).
pub(crate) fn log_panic(what: &str, payload: Box<dyn Any + Send>) {
    write(&format!("panic in {what}: {}", panic_message(&*payload)));
    if let Err(again) = catch_unwind(AssertUnwindSafe(move || drop(payload))) {
        core::mem::forget(again);
    }
}

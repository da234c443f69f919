//! Where the profiler layer reports what it cannot return: a panic caught at the FFI
//! boundary, an `initialize` that failed, a method whose original IL is kept. It imports
//! nothing of the crate, so every part of `clr` may use it.
//!
//! Lines never go to stdout (the program's own output). By default they go to stderr as
//! `ilrewrite: <message>`, or, when the environment variable `ILREWRITE_LOG` names a
//! file, are appended to that file (a file that cannot be opened is said once on stderr,
//! and stderr is used). [`set_sink`] replaces both with the profiler's own closure.
//!
//! Repeated reasons are throttled ([`throttled`]): the first message of a reason is
//! written, the later ones are counted, and [`flush_repeats`] (called at the runtime's
//! shutdown, after the profiler's own `shutdown`) writes one line per reason with its
//! count. A sink is called from any thread the runtime calls the profiler on, maybe
//! several at once; a sink that panics loses its message and nothing else.

use std::any::Any;
use std::cell::Cell;
use std::collections::HashMap;
use std::io::Write as _;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex, Once, OnceLock, PoisonError, RwLock};

/// A logger function: receives one message (no trailing newline) per call.
pub type Logger = fn(&str);

/// A sink: receives one message (no trailing newline) per call, from any thread.
pub type Sink = Arc<dyn Fn(&str) + Send + Sync>;

/// The sink [`set_sink`] installed, if any.
static SINK: RwLock<Option<Sink>> = RwLock::new(None);

/// The environment variable naming a file to append log lines to.
pub const LOG_FILE_VARIABLE: &str = "ILREWRITE_LOG";

/// The default sink, chosen once from [`LOG_FILE_VARIABLE`].
fn default_sink() -> &'static Sink {
    static DEFAULT: OnceLock<Sink> = OnceLock::new();
    DEFAULT.get_or_init(|| {
        let Some(path) = std::env::var_os(LOG_FILE_VARIABLE).filter(|p| !p.is_empty()) else {
            return Arc::new(stderr);
        };
        match std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
        {
            Ok(file) => {
                let file = Mutex::new(file);
                Arc::new(move |message: &str| {
                    let mut file = file.lock().unwrap_or_else(PoisonError::into_inner);
                    let _ = writeln!(file, "ilrewrite: {message}");
                })
            }
            Err(e) => {
                stderr(&format!(
                    "cannot open the log file {LOG_FILE_VARIABLE}={}: {e}; logging to stderr",
                    path.to_string_lossy()
                ));
                Arc::new(stderr)
            }
        }
    })
}

/// The stderr sink: writes `ilrewrite: <message>` and a newline to stderr (errors
/// writing are ignored).
pub fn stderr(message: &str) {
    let _ = writeln!(std::io::stderr().lock(), "ilrewrite: {message}");
}

/// Sends every later message to `sink` (a closure: it may hold the profiler's own log
/// file or channel) instead of the default.
pub fn set_sink(sink: impl Fn(&str) + Send + Sync + 'static) {
    *SINK.write().unwrap_or_else(PoisonError::into_inner) = Some(Arc::new(sink));
}

/// Sends every later message to `logger` ([`stderr`] restores stderr); the same as
/// [`set_sink`] with a function.
pub fn set_logger(logger: Logger) {
    set_sink(logger);
}

/// Logs `message` through the sink. A panicking sink is contained: the message is lost,
/// the caller goes on.
pub fn write(message: &str) {
    let sink = SINK
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
        .unwrap_or_else(|| default_sink().clone());
    let _ = contain(|| sink(message));
}

/// The most reasons counted apart; later new ones are counted together under
/// [`OTHER_REASONS`] (a bound on the table's memory, whatever a program does).
const MAX_REASONS: usize = 1024;

/// The reason repeats of new reasons are counted under once 1,024 reasons are known.
pub const OTHER_REASONS: &str = "other reasons";

/// Repeats not written yet, by reason.
fn repeats() -> &'static Mutex<HashMap<String, u64>> {
    static REPEATS: OnceLock<Mutex<HashMap<String, u64>>> = OnceLock::new();
    REPEATS.get_or_init(Default::default)
}

/// Logs the message `message` makes if it is the first of `reason` (a key without the
/// details that differ between occurrences), else counts it for [`flush_repeats`]
/// without making it. Returns whether it was written.
pub fn throttled(reason: &str, message: impl FnOnce() -> String) -> bool {
    let first = {
        let mut repeats = repeats().lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(count) = repeats.get_mut(reason) {
            *count += 1;
            false
        } else if repeats.len() < MAX_REASONS {
            repeats.insert(reason.to_string(), 0);
            true
        } else {
            *repeats.entry(OTHER_REASONS.to_string()).or_default() += 1;
            false
        }
    };
    if first {
        write(&message());
    }
    first
}

/// Writes one line per reason repeated since the last flush, `<reason>: <N> more`, in
/// the reasons' order, and resets the counts (the reasons stay known: their later
/// occurrences are counted, not written). Called at shutdown by the profiler layer.
pub fn flush_repeats() {
    let mut lines: Vec<(String, u64)> = {
        let mut repeats = repeats().lock().unwrap_or_else(PoisonError::into_inner);
        repeats
            .iter_mut()
            .filter(|(_, n)| **n > 0)
            .map(|(reason, n)| (reason.clone(), std::mem::take(n)))
            .collect()
    };
    lines.sort();
    for (reason, count) in lines {
        write(&format!("{reason}: {count} more"));
    }
}

/// The text of a panic's payload (`panic!` with a message gives a `&str` or a `String`).
fn panic_message(payload: &(dyn Any + Send)) -> &str {
    if let Some(text) = payload.downcast_ref::<&str>() {
        text
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text
    } else {
        "(no message)"
    }
}

/// The environment variable that asks for the location and backtrace of every panic the
/// layer contains (`1`), written through the sink. Unset, empty or `0`: none (a contained
/// panic is then the one line its guard logs). Any other value is said once, and gives
/// none.
pub const BACKTRACE_VARIABLE: &str = "ILREWRITE_BACKTRACE";

thread_local! {
    /// How many [`contain`] calls this thread is inside: a panic then is theirs to report,
    /// and Rust's default panic message (and backtrace) must not reach the program's
    /// stderr.
    static CONTAINING: Cell<u32> = const { Cell::new(0) };
}

/// This thread inside one more [`contain`], until dropped.
struct Containing;

impl Containing {
    #[inline]
    fn enter() -> Containing {
        CONTAINING.with(|c| c.set(c.get() + 1));
        Containing
    }
}

impl Drop for Containing {
    #[inline]
    fn drop(&mut self) {
        CONTAINING.with(|c| c.set(c.get().saturating_sub(1)));
    }
}

/// Installs, once, the panic hook that keeps contained panics off stderr: a panic inside
/// [`contain`] is reported by its guard as one line (and, with [`BACKTRACE_VARIABLE`],
/// its location and backtrace through the sink); any other panic goes to the hook that
/// was there before (Rust's default: a test's failed assertion still prints).
#[inline]
fn quiet_contained_panics() {
    static HOOK: Once = Once::new();
    // The hook cannot be changed while this thread panics (a guard dropped during an
    // unwind): it is installed at the next call instead.
    if !HOOK.is_completed() && !std::thread::panicking() {
        HOOK.call_once(|| {
            let previous = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                if CONTAINING.with(Cell::get) == 0 {
                    previous(info);
                } else if backtraces_asked() {
                    write_backtrace(info);
                }
            }));
        });
    }
}

/// Whether [`BACKTRACE_VARIABLE`] asks for backtraces (read once).
fn backtraces_asked() -> bool {
    static ASKED: OnceLock<bool> = OnceLock::new();
    *ASKED.get_or_init(|| match std::env::var(BACKTRACE_VARIABLE) {
        Err(std::env::VarError::NotPresent) => false,
        Ok(value) if value.is_empty() || value == "0" => false,
        Ok(value) if value == "1" => true,
        _ => {
            write(&format!(
                "{BACKTRACE_VARIABLE} is neither 0 nor 1: contained panics are logged without backtraces"
            ));
            false
        }
    })
}

/// Writes where a contained panic happened and its backtrace, one line each.
#[cold]
fn write_backtrace(info: &std::panic::PanicHookInfo<'_>) {
    let place = info.location().map_or_else(
        || "an unknown place".to_owned(),
        |l| format!("{}:{}:{}", l.file(), l.line(), l.column()),
    );
    write(&format!(
        "contained panic at {place}: {}",
        panic_message(info.payload())
    ));
    for line in std::backtrace::Backtrace::force_capture()
        .to_string()
        .lines()
    {
        write(&format!("  {line}"));
    }
}

/// Runs `f` and contains a panic in it: the one place the layer catches panics. A panic
/// gives its message, and nothing of it reaches the program's stderr (the caller logs
/// it); its payload is dropped inside a guard of its own (a payload whose destructor
/// panics again is leaked rather than unwound: nothing unwinds into the runtime).
///
/// # Errors
/// The panic's message.
#[inline]
pub(crate) fn contain<R>(f: impl FnOnce() -> R) -> Result<R, String> {
    quiet_contained_panics();
    let _containing = Containing::enter();
    catch_unwind(AssertUnwindSafe(f)).map_err(message_of)
}

/// A caught panic's message; its payload dropped, or leaked if dropping it panics.
#[cold]
#[inline(never)]
fn message_of(payload: Box<dyn Any + Send>) -> String {
    let message = panic_message(&*payload).to_owned();
    if let Err(again) = catch_unwind(AssertUnwindSafe(move || drop(payload))) {
        core::mem::forget(again);
    }
    message
}

/// [`contain`], with a panic logged as `panic in <what>: <message>`: the guard at the FFI
/// boundary. `None` when `f` panicked.
pub(crate) fn contain_logged<R>(what: &str, f: impl FnOnce() -> R) -> Option<R> {
    contain(f)
        .map_err(|message| write(&format!("panic in {what}: {message}")))
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One test drives the process-wide sink, so no other test in this binary sees it
    /// replaced (the other tests do not assert on log lines).
    #[test]
    fn a_closure_sink_gets_first_lines_and_counts_of_repeats() {
        let seen = Arc::new(Mutex::new(Vec::<String>::new()));
        let sink = seen.clone();
        set_sink(move |m: &str| sink.lock().unwrap().push(m.to_string()));
        let reason = "test reason 0b5e";
        assert!(throttled(reason, || "first at 0x10".to_string()));
        for i in 0..99 {
            assert!(!throttled(reason, || panic!("made for repeat {i}")));
        }
        flush_repeats();
        set_logger(stderr);
        let seen = seen.lock().unwrap();
        let mine: Vec<&String> = seen
            .iter()
            .filter(|m| m.contains("0x10") || m.starts_with(reason))
            .collect();
        assert_eq!(
            mine,
            [&"first at 0x10".to_string(), &format!("{reason}: 99 more")]
        );
        assert!(seen.iter().all(|m| !m.starts_with("again")));
    }
}

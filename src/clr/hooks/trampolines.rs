//! The dispatcher the platform's stubs call (`arch`, which assembles them here), and the
//! one handler installed per process, called inside a panic guard.

use std::fmt;
use std::sync::OnceLock;

use super::arch::{self, EltFrame};
use super::kind::HookKind;
use super::table;
use crate::clr::log;

/// What the dispatcher calls: the hook's kind, the id the runtime passed (the
/// `FunctionID`, or the client id a `FunctionIDMapper` gave for it) and the saved
/// registers.
pub(crate) type Handler = fn(HookKind, usize, &EltFrame);

/// The handler, installed once.
static HANDLER: OnceLock<Handler> = OnceLock::new();

/// Installs the handler the hooks call when no [`HookTable`](super::HookTable) is
/// registered, once per process: the unit tests' way to see the stubs' calls.
///
/// # Errors
///
/// [`HandlerAlreadySet`] if a handler was installed before (it stays).
// Only the x86_64 System V unit tests install one (arch/x86_64_sysv/tests.rs).
#[allow(dead_code)]
pub(crate) fn set_handler(handler: Handler) -> Result<(), HandlerAlreadySet> {
    HANDLER.set(handler).map_err(|_| HandlerAlreadySet)
}

/// [`set_handler`] was called a second time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HandlerAlreadySet;

impl fmt::Display for HandlerAlreadySet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an enter/leave/tailcall hook handler is already installed")
    }
}

impl std::error::Error for HandlerAlreadySet {}

// The platform's stubs, assembled into the crate, each calling `dispatch`.
arch::assemble_stubs!(dispatch);

// The stubs registered on `HookPath::Fast` (`None` where the platform has none), and the
// negative control's: the ones assembled above.
#[cfg(feature = "elt-test-modes")]
pub(crate) use arch::broken_stubs;
pub(crate) use arch::stubs;

/// The dispatcher the stubs call (the platform's C ABI): `kind` 0 enter, 1 leave, 2 tailcall;
/// `frame` the record on the stub's stack. Returns at once without a handler, for an
/// unknown kind, or a frame that does not say the same kind; never unwinds.
///
/// # Safety
///
/// `frame` is null or points to an `EltFrame`, live for the call, that holds what its
/// `kind` field says (as the stubs and `EltFrame`'s constructors make it).
#[allow(unsafe_code)]
pub(super) unsafe extern "C" fn dispatch(kind: u32, id: usize, frame: *const EltFrame) {
    let Some(hook) = HookKind::from_raw(kind) else {
        return;
    };
    // SAFETY: by the function's contract: the stubs pass the address of the `EltFrame`
    // they built on their own stack (16-byte aligned, the layout checked against
    // `EltFrame`'s offsets), which lives until the dispatcher returns, every byte
    // `EltFrame`'s accessors read for the frame's `kind` written before the call; the
    // reference does not outlive this call (the handler gets it for its call only).
    let Some(frame) = (unsafe { frame.as_ref() }) else {
        return;
    };
    if frame.raw_kind() != kind {
        return;
    }
    // The registered table first: the runtime's path, one call to the subscribers
    // (each subscriber's panic is contained there).
    if let Some(table) = table::registered() {
        table::fast_call(table, hook, id, frame);
        return;
    }
    let Some(&handler) = HANDLER.get() else {
        return;
    };
    if let Err(message) = log::contain(|| handler(hook, id, frame)) {
        contained(hook, &message);
    }
}

/// Logs a handler's contained panic (once per process, later ones counted).
#[cold]
#[inline(never)]
fn contained(hook: HookKind, message: &str) {
    let _ = log::contain(|| {
        log::throttled("panic in an enter/leave/tailcall hook handler", || {
            format!("panic in the {hook} hook handler: {message} (the hook returned normally)")
        })
    });
}

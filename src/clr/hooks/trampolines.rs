//! The x86_64 System V stubs (`x86_64_sysv.s`) and the dispatcher they call: the one
//! handler installed per process, called inside a panic guard.

use std::any::Any;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::OnceLock;

use super::frame::{EltFrame, HookKind};
use crate::clr::log;
use crate::clr::sys::{FunctionEnter3, FunctionIDOrClientID, FunctionLeave3, FunctionTailcall3};

/// What the dispatcher calls: the hook's kind, the id the runtime passed (the
/// `FunctionID`, or the client id a `FunctionIDMapper` gave for it) and the saved
/// registers.
pub(crate) type Handler = fn(HookKind, usize, &EltFrame);

/// The handler, installed once.
static HANDLER: OnceLock<Handler> = OnceLock::new();

/// Installs the handler the hooks call, once per process (the registered
/// [`HookTable`]'s, or a unit test's).
///
/// # Errors
///
/// [`HandlerAlreadySet`] if a handler was installed before (it stays).
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

/// The stubs, assembled into the crate from `x86_64_sysv.s`, and their declarations.
#[allow(unsafe_code, bad_asm_style)]
mod stubs {
    use super::FunctionIDOrClientID;

    // `{dispatch}` in the source becomes the dispatcher's symbol. The source says
    // `.intel_syntax noprefix` and restores `.att_syntax` itself (redundant here, hence
    // `bad_asm_style`) so that the system assembler takes the same file
    // (tests/hooks_native.rs).
    // SAFETY: the source defines only the three stubs (and local constants), in their
    // own section; a stub writes only below its own stack pointer, calls `dispatch` with
    // its declared C signature on a 16-byte aligned stack, and returns with the registers
    // of its contract (module documentation) restored, checked by tests/hooks_native.rs.
    std::arch::global_asm!(include_str!("x86_64_sysv.s"), dispatch = sym super::dispatch);

    // The stubs' ABI is not C (see the module documentation): these declarations give
    // their addresses the types `SetEnterLeaveFunctionHooks3` takes; Rust never calls
    // them as declared (the unit tests call them as the JIT does, with inline asm).
    unsafe extern "system" {
        pub(super) fn ilrewrite_elt_enter3(function_id_or_client_id: FunctionIDOrClientID);
        pub(super) fn ilrewrite_elt_leave3(function_id_or_client_id: FunctionIDOrClientID);
        pub(super) fn ilrewrite_elt_tailcall3(function_id_or_client_id: FunctionIDOrClientID);
    }
}

use stubs::{ilrewrite_elt_enter3, ilrewrite_elt_leave3, ilrewrite_elt_tailcall3};

/// The enter stub, for `SetEnterLeaveFunctionHooks3`. Only the runtime may call it: it
/// reads the id from R14 and the SP from R15, not from the C argument registers.
pub(crate) fn enter3() -> FunctionEnter3 {
    ilrewrite_elt_enter3
}

/// The leave stub, for `SetEnterLeaveFunctionHooks3` (id in RDI, SP in RSI).
pub(crate) fn leave3() -> FunctionLeave3 {
    ilrewrite_elt_leave3
}

/// The tailcall stub, for `SetEnterLeaveFunctionHooks3` (id in RDI).
pub(crate) fn tailcall3() -> FunctionTailcall3 {
    ilrewrite_elt_tailcall3
}

/// The code addresses of the three stubs (enter, leave, tailcall), with their symbol
/// names: to compare the crate's machine code with the assembler's (the stubs can only
/// be registered through a [`HookTable`]).
pub fn stub_addresses() -> [(&'static str, *const u8); 3] {
    [
        ("ilrewrite_elt_enter3", enter3() as *const u8),
        ("ilrewrite_elt_leave3", leave3() as *const u8),
        ("ilrewrite_elt_tailcall3", tailcall3() as *const u8),
    ]
}

/// The dispatcher the stubs call (SysV C ABI): `kind` 0 enter, 1 leave, 2 tailcall;
/// `frame` the record on the stub's stack. Returns at once without a handler, for an
/// unknown kind, or a frame that does not say the same kind; never unwinds.
///
/// # Safety
///
/// `frame` is null or points to an `EltFrame`, live for the call, that holds what its
/// `kind` field says (as the stubs and `EltFrame`'s constructors make it).
#[allow(unsafe_code)]
unsafe extern "C" fn dispatch(kind: u32, id: usize, frame: *const EltFrame) {
    let Some(&handler) = HANDLER.get() else {
        return;
    };
    let Some(hook) = HookKind::from_raw(kind) else {
        return;
    };
    // SAFETY: by the function's contract: the stubs pass the address of the `EltFrame`
    // they built on their own stack (16-byte aligned, 208 bytes, the layout checked
    // against `EltFrame`'s offsets), which lives until the dispatcher returns, every
    // byte `EltFrame`'s accessors read for the frame's `kind` written before the call;
    // the reference does not outlive this call (the handler gets it for its call only).
    let Some(frame) = (unsafe { frame.as_ref() }) else {
        return;
    };
    if frame.raw_kind() != kind {
        return;
    }
    if let Err(payload) = catch_unwind(AssertUnwindSafe(|| handler(hook, id, frame))) {
        contain_panic(hook, payload);
    }
}

/// Logs a handler's panic (once per process, later ones counted) and drops its payload,
/// nothing of it unwinding: a payload whose destructor panics is leaked.
#[cold]
#[inline(never)]
fn contain_panic(hook: HookKind, payload: Box<dyn Any + Send>) {
    let logged = catch_unwind(AssertUnwindSafe(|| {
        log::throttled("panic in an enter/leave/tailcall hook handler", || {
            format!(
                "panic in the {hook} hook handler: {} (the hook returned normally)",
                log::panic_message(&*payload)
            )
        });
    }));
    if let Err(again) = logged {
        std::mem::forget(again);
    }
    if let Err(again) = catch_unwind(AssertUnwindSafe(move || drop(payload))) {
        std::mem::forget(again);
    }
}

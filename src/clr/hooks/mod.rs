//! Floor 4, beside `profiler`: the enter/leave/tailcall hooks the runtime calls from
//! JIT-compiled code (`FunctionEnter3`, `FunctionLeave3`, `FunctionTailcall3`, the fast
//! path without `WithInfo`), for x86_64 System V (Linux) for now.
//!
//! The runtime calls these hooks from a method's prolog and epilogs
//! (`movabs r11, cell; call [r11]`), not with the C calling convention: the hook must give
//! back the registers the JIT keeps live across the call. [`enter3`], [`leave3`] and
//! [`tailcall3`] are assembler stubs (`x86_64_sysv.s`) that save those registers in an
//! [`EltFrame`] on their stack, call the dispatcher with the C ABI, restore them and
//! return. The dispatcher calls the [`Handler`] installed by [`set_handler`]:
//!
//! ```text
//! JIT code --call--> ilrewrite_elt_enter3 (asm) --C ABI--> dispatch --> handler(kind, id, &frame)
//! ```
//!
//! # The register contract
//!
//! Measured on CoreCLR 3.1.23 linux-x64 by clobbering each register in a test stub:
//!
//! | hook     | id in | SP in | must preserve (and RBX RBP R12-R15) | free |
//! |----------|-------|-------|-------------------------------------|------|
//! | enter    | R14   | R15   | RDI RSI RDX RCX R8 R9, XMM0-XMM7    | RAX R10 R11, XMM8-15, flags |
//! | leave    | RDI   | RSI   | RAX RDX, XMM0 XMM1                  | the other caller-saved, flags |
//! | tailcall | RDI   | (RSI) | RAX XMM0 (RDX XMM1 kept too)        | the other caller-saved, flags |
//!
//! The enter hook is entered with `rsp % 16 == 8`, as after a normal call; the stubs do
//! not rely on it (they align the stack themselves, with RBP as a frame pointer). Beyond
//! the contract, the enter stub also preserves RAX, R10 and R11 (three stores and loads:
//! they are where the JIT puts hidden arguments, a stub's secret argument in R10 and a
//! dispatch cell in R11, should a future JIT keep one live across the hook). XMM8-XMM15
//! and the upper halves of YMM/ZMM registers are not saved: the contract leaves them
//! free, and the stubs' legacy SSE moves leave the upper halves as the dispatcher does.
//!
//! `tests/hooks_native.rs` checks the contract without a runtime: a C/assembler harness
//! calls each stub as the JIT does, with every register set to a known value, through a
//! dispatcher that clobbers every register a C function may; and checks that the broken
//! variant of the stubs (`--defsym ILREWRITE_ELT_BROKEN=1`) fails.
//!
//! # The frame record
//!
//! See [`EltFrame`]: at enter the argument registers (RDI RSI RDX RCX R8 R9, XMM0-XMM7)
//! and the caller's SP (R15); at leave and tailcall the return registers (RAX RDX, XMM0
//! XMM1) and RSI. The frame is valid for the handler's call only.
//!
//! # The handler
//!
//! [`set_handler`] installs one `fn(HookKind, usize, &EltFrame)`, once per process. The
//! dispatcher never allocates on its way to the handler (one atomic load, then the
//! call) and never unwinds into the runtime: a panicking handler's panic is caught,
//! logged once per process (later ones counted, see [`log::throttled`]) and dropped, and
//! the hook returns normally (this needs `panic = "unwind"`, the default). Without a
//! handler the dispatcher returns at once. A handler runs inside managed code's prolog
//! or epilog, on the method's thread, in cooperative GC mode: it must be short, must not
//! block, and must not call back into managed code.
//!
//! # Later
//!
//! This is a building block. Not here yet: several subscribers over one handler, a
//! `FunctionIDMapper2` that gives the client ids the hooks receive, registering the stubs
//! with `SetEnterLeaveFunctionHooks3` and the event mask that enables them, and the
//! other platforms (aarch64, Windows x64).
#![cfg(all(target_arch = "x86_64", target_os = "linux"))]

mod frame;
#[cfg(test)]
mod tests;

use std::any::Any;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::OnceLock;

use super::log;
use super::sys::{FunctionEnter3, FunctionIDOrClientID, FunctionLeave3, FunctionTailcall3};

pub use frame::{EltFrame, HookKind};

/// What the dispatcher calls: the hook's kind, the id the runtime passed (the
/// `FunctionID`, or the client id a `FunctionIDMapper` gave for it) and the saved
/// registers.
pub type Handler = fn(HookKind, usize, &EltFrame);

/// The handler, installed once.
static HANDLER: OnceLock<Handler> = OnceLock::new();

/// Installs the handler the hooks call, once per process.
///
/// # Errors
///
/// [`HandlerAlreadySet`] if a handler was installed before (it stays).
pub fn set_handler(handler: Handler) -> Result<(), HandlerAlreadySet> {
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
pub fn enter3() -> FunctionEnter3 {
    ilrewrite_elt_enter3
}

/// The leave stub, for `SetEnterLeaveFunctionHooks3` (id in RDI, SP in RSI).
pub fn leave3() -> FunctionLeave3 {
    ilrewrite_elt_leave3
}

/// The tailcall stub, for `SetEnterLeaveFunctionHooks3` (id in RDI).
pub fn tailcall3() -> FunctionTailcall3 {
    ilrewrite_elt_tailcall3
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

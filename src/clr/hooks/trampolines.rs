//! The x86_64 System V stubs (`x86_64_sysv.s`) and the dispatcher they call: the one
//! handler installed per process, called inside a panic guard.

use std::any::Any;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::OnceLock;

use super::{EltFrame, HookKind};

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
use crate::clr::log;
use crate::clr::sys::{FunctionEnter3, FunctionIDOrClientID, FunctionLeave3, FunctionTailcall3};

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
#[cfg_attr(not(test), allow(dead_code))]
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
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    std::arch::global_asm!(
        ".set ILREWRITE_ELT_BROKEN, 0",
        ".set ILREWRITE_ELT_RENAMED, 0",
        include_str!("x86_64_sysv.s"),
        dispatch = sym super::dispatch
    );
    // SAFETY: as above, for the arm64 contract (x0-x8, q0-q7, fp kept; tests/hooks_cross.rs
    // under qemu).
    #[cfg(all(target_arch = "aarch64", target_os = "linux"))]
    std::arch::global_asm!(include_str!("aarch64_linux.s"), dispatch = sym super::dispatch);
    // SAFETY: as above, for the Windows x64 contract (RAX XMM0 kept at leave, with SEH
    // unwind information; checked only by assembling, tests/hooks_cross.rs).
    #[cfg(all(target_arch = "x86_64", windows))]
    std::arch::global_asm!(include_str!("x86_64_windows.s"), dispatch = sym super::dispatch);

    // The negative control (feature `elt-test-modes`): the same source assembled with
    // the enter stub not keeping XMM3 and the leave stub not keeping RDX, under other
    // names. Each block sets both switches itself, so their order does not matter.
    // SAFETY: as above, except that these stubs break the register contract on purpose:
    // they are registered only through `HookPath::NegativeControl`, whose documentation
    // says so, by tests that show a broken trampoline changes what a program computes.
    #[cfg(all(
        feature = "elt-test-modes",
        target_arch = "x86_64",
        target_os = "linux"
    ))]
    std::arch::global_asm!(
        ".set ILREWRITE_ELT_BROKEN, 1",
        ".set ILREWRITE_ELT_RENAMED, 1",
        include_str!("x86_64_sysv.s"),
        dispatch = sym super::dispatch
    );

    // The stubs' ABI is not C (see the module documentation): these declarations give
    // their addresses the types `SetEnterLeaveFunctionHooks3` takes; Rust never calls
    // them as declared (the unit tests call them as the JIT does, with inline asm).
    unsafe extern "system" {
        pub(super) fn ilrewrite_elt_enter3(function_id_or_client_id: FunctionIDOrClientID);
        pub(super) fn ilrewrite_elt_leave3(function_id_or_client_id: FunctionIDOrClientID);
        pub(super) fn ilrewrite_elt_tailcall3(function_id_or_client_id: FunctionIDOrClientID);
    }

    #[cfg(all(
        feature = "elt-test-modes",
        target_arch = "x86_64",
        target_os = "linux"
    ))]
    unsafe extern "system" {
        pub(super) fn ilrewrite_elt_broken_enter3(function_id_or_client_id: FunctionIDOrClientID);
        pub(super) fn ilrewrite_elt_broken_leave3(function_id_or_client_id: FunctionIDOrClientID);
        pub(super) fn ilrewrite_elt_broken_tailcall3(
            function_id_or_client_id: FunctionIDOrClientID,
        );
    }
}

/// The negative control's stubs (enter forgets XMM3, leave forgets RDX).
#[cfg(all(
    feature = "elt-test-modes",
    target_arch = "x86_64",
    target_os = "linux"
))]
pub(crate) fn broken_stubs() -> (FunctionEnter3, FunctionLeave3, FunctionTailcall3) {
    (
        stubs::ilrewrite_elt_broken_enter3,
        stubs::ilrewrite_elt_broken_leave3,
        stubs::ilrewrite_elt_broken_tailcall3,
    )
}

/// Overwrites every register a System V function may change (RAX RCX RDX RSI RDI
/// R8-R11, XMM0-XMM15 whole) with `0x7ff4_dead_beef_5a5a` (a NaN as a double, a large
/// integer): what a subscriber that uses them all would leave. Feature `elt-test-modes`,
/// for tests: a subscriber calling it at every hook shows that the trampolines give the
/// JIT back every register it keeps live, and that the registers they leave free are
/// free indeed.
#[cfg(all(
    feature = "elt-test-modes",
    target_arch = "x86_64",
    target_os = "linux"
))]
#[inline(never)]
#[allow(unsafe_code)]
pub fn clobber_caller_saved_registers() {
    // SAFETY: writes only registers declared as outputs (clobbered); no memory, no
    // stack; the compiler saves whatever it keeps live in them.
    unsafe {
        std::arch::asm!(
            "mov rax, 0x7ff4deadbeef5a5a",
            "mov rcx, rax",
            "mov rdx, rax",
            "mov rsi, rax",
            "mov rdi, rax",
            "mov r8, rax",
            "mov r9, rax",
            "mov r10, rax",
            "mov r11, rax",
            "movq xmm0, rax",
            "punpcklqdq xmm0, xmm0",
            "movaps xmm1, xmm0",
            "movaps xmm2, xmm0",
            "movaps xmm3, xmm0",
            "movaps xmm4, xmm0",
            "movaps xmm5, xmm0",
            "movaps xmm6, xmm0",
            "movaps xmm7, xmm0",
            "movaps xmm8, xmm0",
            "movaps xmm9, xmm0",
            "movaps xmm10, xmm0",
            "movaps xmm11, xmm0",
            "movaps xmm12, xmm0",
            "movaps xmm13, xmm0",
            "movaps xmm14, xmm0",
            "movaps xmm15, xmm0",
            out("rax") _, out("rcx") _, out("rdx") _, out("rsi") _, out("rdi") _,
            out("r8") _, out("r9") _, out("r10") _, out("r11") _,
            out("xmm0") _, out("xmm1") _, out("xmm2") _, out("xmm3") _,
            out("xmm4") _, out("xmm5") _, out("xmm6") _, out("xmm7") _,
            out("xmm8") _, out("xmm9") _, out("xmm10") _, out("xmm11") _,
            out("xmm12") _, out("xmm13") _, out("xmm14") _, out("xmm15") _,
            options(nostack, nomem, preserves_flags),
        );
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
/// be registered through a [`HookTable`](super::HookTable)).
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
    if let Some(table) = super::table::registered() {
        super::table::fast_call(table, hook, id, frame);
        return;
    }
    let Some(&handler) = HANDLER.get() else {
        return;
    };
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

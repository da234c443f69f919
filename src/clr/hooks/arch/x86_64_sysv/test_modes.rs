//! The negative control's x86_64 System V pieces (feature `elt-test-modes`): the broken
//! stubs' symbols (assembled by `assemble_stubs!` from `stubs.s` with
//! `ILREWRITE_ELT_BROKEN` and `ILREWRITE_ELT_RENAMED`), and a clobber of every register a
//! subscriber may change.

use crate::clr::sys::{FunctionEnter3, FunctionIDOrClientID, FunctionLeave3, FunctionTailcall3};

// Declarations of the broken stubs, as of the real ones (`stubs.rs`): their ABI is not C,
// Rust never calls them as declared.
#[allow(unsafe_code)]
unsafe extern "system" {
    fn ilrewrite_elt_broken_enter3(function_id_or_client_id: FunctionIDOrClientID);
    fn ilrewrite_elt_broken_leave3(function_id_or_client_id: FunctionIDOrClientID);
    fn ilrewrite_elt_broken_tailcall3(function_id_or_client_id: FunctionIDOrClientID);
}

/// The negative control's stubs (enter forgets XMM3, leave forgets RDX).
pub(crate) fn broken_stubs() -> Option<(FunctionEnter3, FunctionLeave3, FunctionTailcall3)> {
    Some((
        ilrewrite_elt_broken_enter3,
        ilrewrite_elt_broken_leave3,
        ilrewrite_elt_broken_tailcall3,
    ))
}

/// Overwrites every register a System V function may change (RAX RCX RDX RSI RDI
/// R8-R11, XMM0-XMM15 whole) with `0x7ff4_dead_beef_5a5a` (a NaN as a double, a large
/// integer): what a subscriber that uses them all would leave. Feature `elt-test-modes`,
/// for tests: a subscriber calling it at every hook shows that the trampolines give the
/// JIT back every register it keeps live, and that the registers they leave free are
/// free indeed.
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

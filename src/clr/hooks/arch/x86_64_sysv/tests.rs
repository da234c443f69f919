//! The real stubs, called in-process as the JIT calls them (inline assembler puts the id
//! and SP where the JIT does), through the real dispatcher, to a recording handler.
//! Register preservation under a hostile dispatcher is `tests/hooks_native.rs`'s; here:
//! the wiring (stub → dispatcher → handler, kind and id and frame), the argument and
//! return registers the handler sees and gets back, and a panicking handler.
#![allow(unsafe_code)]

use std::cell::RefCell;

use super::EltFrame;
use super::stubs::{
    enter3, ilrewrite_elt_enter3, ilrewrite_elt_leave3, ilrewrite_elt_tailcall3, leave3, tailcall3,
};
use crate::clr::hooks::kind::HookKind;
use crate::clr::hooks::trampolines::{HandlerAlreadySet, dispatch, set_handler};

/// An id the handler panics on.
const PANIC_ID: usize = 0x0bad_0bad_0bad_0bad;

thread_local! {
    /// What the handler saw on this thread (the stubs run the handler on the caller's).
    static SEEN: RefCell<Vec<(HookKind, usize, EltFrame)>> = const { RefCell::new(Vec::new()) };
}

fn recording_handler(kind: HookKind, id: usize, frame: &EltFrame) {
    if id == PANIC_ID {
        panic!("handler panics on purpose ({kind})");
    }
    SEEN.with(|seen| seen.borrow_mut().push((kind, id, *frame)));
}

/// Installs the recording handler (every test of this module installs the same one).
fn install() -> Vec<(HookKind, usize, EltFrame)> {
    match set_handler(recording_handler) {
        Ok(()) => {}
        Err(HandlerAlreadySet) => {
            let again = set_handler(recording_handler);
            assert_eq!(again, Err(HandlerAlreadySet));
        }
    }
    SEEN.with(|seen| std::mem::take(&mut *seen.borrow_mut()))
}

fn seen() -> Vec<(HookKind, usize, EltFrame)> {
    SEEN.with(|seen| std::mem::take(&mut *seen.borrow_mut()))
}

/// Calls the enter stub as the JIT does: id in R14, SP in R15, the arguments in RDI ..
/// R9 and XMM0/XMM3; returns the argument registers after the call.
fn call_enter(id: usize, sp: u64, args: [u64; 6], x0: f64, x3: f64) -> ([u64; 6], f64, f64) {
    let [mut a0, mut a1, mut a2, mut a3, mut a4, mut a5] = args;
    let (mut x0, mut x3) = (x0, x3);
    // SAFETY: the stub is called with a plain `call` (the stack aligned for a call on
    // entry to an asm block); it reads R14 and R15, saves and restores RDI .. R9 and
    // XMM0 .. XMM7 (declared inout here), may clobber what clobber_abi("C") declares,
    // and keeps the callee-saved registers and the stack pointer (R14, R15 are inputs
    // only: the stub keeps them).
    unsafe {
        std::arch::asm!(
            "call {stub}",
            stub = sym ilrewrite_elt_enter3,
            in("r14") id,
            in("r15") sp,
            inout("rdi") a0,
            inout("rsi") a1,
            inout("rdx") a2,
            inout("rcx") a3,
            inout("r8") a4,
            inout("r9") a5,
            inout("xmm0") x0,
            inout("xmm3") x3,
            clobber_abi("C"),
        );
    }
    ([a0, a1, a2, a3, a4, a5], x0, x3)
}

/// Calls the leave or tailcall stub as the JIT does: id in RDI, SP in RSI, the return
/// value in RAX RDX XMM0 XMM1; returns those after the call.
fn call_return_hook(
    kind: HookKind,
    id: usize,
    sp: u64,
    ret: (u64, u64, f64, f64),
) -> (u64, u64, f64, f64) {
    let (mut rax, mut rdx, mut x0, mut x1) = ret;
    // SAFETY: as in `call_enter`; the stubs read RDI and RSI (clobbered, declared by
    // clobber_abi), save and restore RAX RDX XMM0 XMM1 (inout here).
    unsafe {
        match kind {
            HookKind::Leave => std::arch::asm!(
                "call {stub}",
                stub = sym ilrewrite_elt_leave3,
                in("rdi") id,
                in("rsi") sp,
                inout("rax") rax,
                inout("rdx") rdx,
                inout("xmm0") x0,
                inout("xmm1") x1,
                clobber_abi("C"),
            ),
            HookKind::Tailcall => std::arch::asm!(
                "call {stub}",
                stub = sym ilrewrite_elt_tailcall3,
                in("rdi") id,
                in("rsi") sp,
                inout("rax") rax,
                inout("rdx") rdx,
                inout("xmm0") x0,
                inout("xmm1") x1,
                clobber_abi("C"),
            ),
            HookKind::Enter => unreachable!("call_enter"),
        }
    }
    (rax, rdx, x0, x1)
}

#[test]
fn the_stubs_reach_the_handler_with_kind_id_and_registers() {
    install();
    let args = [0x11, 0x22, 0x33, 0x44, 0x55, 0x66];
    let (after, x0, x3) = call_enter(0xE17E, 0x7ff0_1000, args, 1.5, -2.25);
    assert_eq!(
        (after, x0, x3),
        (args, 1.5, -2.25),
        "enter gave the arguments back"
    );

    let ret = (0xAAAA, 0xDDDD, 3.5, 4.75);
    assert_eq!(
        call_return_hook(HookKind::Leave, 0x1EA7E, 0x7ff0_2000, ret),
        ret
    );
    assert_eq!(
        call_return_hook(HookKind::Tailcall, 0x7A11, 0x7ff0_3000, ret),
        ret
    );

    let seen = seen();
    assert_eq!(seen.len(), 3, "{seen:?}");
    let (kind, id, enter) = &seen[0];
    assert_eq!(
        (*kind, *id, enter.kind()),
        (HookKind::Enter, 0xE17E, HookKind::Enter)
    );
    assert_eq!(enter.args(), Some(args));
    assert_eq!(enter.arg(2), Some(0x33));
    assert_eq!(enter.arg(6), None);
    assert_eq!(enter.xmm_f64(0), Some(1.5));
    assert_eq!(enter.xmm_f64(3), Some(-2.25));
    assert_eq!(enter.xmm(8), None);
    assert_eq!(enter.sp(), 0x7ff0_1000);
    assert_eq!((enter.return_rax(), enter.return_xmm0()), (None, None));

    for ((kind, id, frame), (want_kind, want_id, want_sp)) in seen[1..].iter().zip([
        (HookKind::Leave, 0x1EA7E, 0x7ff0_2000),
        (HookKind::Tailcall, 0x7A11, 0x7ff0_3000),
    ]) {
        assert_eq!((*kind, *id, frame.kind()), (want_kind, want_id, want_kind));
        assert_eq!(
            (frame.return_rax(), frame.return_rdx()),
            (Some(0xAAAA), Some(0xDDDD))
        );
        let x0 = frame
            .return_xmm0()
            .map(|x| f64::from_le_bytes(x[..8].try_into().unwrap()));
        assert_eq!((x0, frame.xmm_f64(1)), (Some(3.5), Some(4.75)));
        assert_eq!(frame.sp(), want_sp);
        assert_eq!(
            (frame.args(), frame.arg(0), frame.xmm(2)),
            (None, None, None)
        );
    }
}

#[test]
fn a_panicking_handler_does_not_unwind_out_of_the_hook() {
    install();
    let args = [1, 2, 3, 4, 5, 6];
    // Each call returns (no unwinding through the stub, no abort), the registers kept.
    assert_eq!(
        call_enter(PANIC_ID, 0x1000, args, 0.5, 8.0),
        (args, 0.5, 8.0)
    );
    let ret = (7, 8, 9.0, 10.0);
    assert_eq!(
        call_return_hook(HookKind::Leave, PANIC_ID, 0x2000, ret),
        ret
    );
    assert_eq!(
        call_return_hook(HookKind::Tailcall, PANIC_ID, 0x3000, ret),
        ret
    );
    // The handler still works afterwards.
    call_enter(42, 0x1000, args, 0.0, 0.0);
    let seen = seen();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!((seen[0].0, seen[0].1), (HookKind::Enter, 42));
}

#[test]
fn dispatch_refuses_a_frame_of_another_kind() {
    install();
    let frame = EltFrame::leave(1, 2, [3; 16], [4; 16], 5);
    // SAFETY: `frame` is a live frame made by its constructor, or the pointer is null.
    unsafe {
        dispatch(HookKind::Enter as u32, 9, &frame);
        dispatch(7, 9, &frame);
        dispatch(HookKind::Leave as u32, 9, std::ptr::null());
    }
    assert!(seen().is_empty());
    // SAFETY: as above.
    unsafe { dispatch(HookKind::Leave as u32, 9, &frame) };
    assert_eq!(seen().len(), 1);
}

#[test]
fn constructed_frames_answer_for_their_kind_only() {
    let mut xmm = [[0u8; 16]; 8];
    for (i, x) in xmm.iter_mut().enumerate() {
        x[..4].copy_from_slice(&(i as f32 + 0.5).to_le_bytes());
    }
    let enter = EltFrame::enter([10, 11, 12, 13, 14, 15], xmm, 0x99);
    assert_eq!(enter.kind(), HookKind::Enter);
    assert_eq!(enter.xmm_f32(7), Some(7.5));
    assert_eq!(enter.arg(5), Some(15));
    assert_eq!(enter.return_rdx(), None);
    assert!(format!("{enter:?}").contains("args: Some([10, 11, 12, 13, 14, 15])"));

    let tail = EltFrame::tailcall(1, 2, [0xAB; 16], [0xCD; 16], 3);
    assert_eq!(tail.kind(), HookKind::Tailcall);
    assert_eq!(tail.return_xmm1(), Some([0xCD; 16]));
    assert_eq!(tail.xmm(1), Some([0xCD; 16]));
    assert_eq!(tail.xmm(2), None);
    assert_eq!(tail.arg(0), None);
    let text = format!("{tail:?}");
    assert!(
        text.contains("Tailcall") && text.contains("rdx: Some(2)"),
        "{text}"
    );
}

#[test]
fn the_hook_pointers_are_the_stubs() {
    let stubs = [enter3() as usize, leave3() as usize, tailcall3() as usize];
    assert!(stubs.iter().all(|&p| p != 0));
    assert!(stubs[0] != stubs[1] && stubs[1] != stubs[2] && stubs[0] != stubs[2]);
    assert_eq!(stubs[0], ilrewrite_elt_enter3 as *const () as usize);
}

//! [`EltFrame`] for Windows x64: the frame record the stubs of `stubs.s` build
//! on their stack and hand to the dispatcher.
//!
//! Plain Rust (no assembler, no `cfg`): it compiles on any target, so that its layout is
//! checked on every build (tests/hooks_cross.rs compiles it); `hooks::arch` exports it
//! as `EltFrame` on `x86_64` Windows only.

use std::fmt;
use std::mem::{MaybeUninit, offset_of, size_of};

use crate::clr::hooks::kind::HookKind;

/// What a Windows x64 stub recorded when the runtime called it. Layout (128 bytes,
/// 16-byte aligned; `ILREWRITE_WF_*` in `stubs.s`, checked at compile time):
///
/// | offset | size | field     | enter                       | leave / tailcall   |
/// |-------:|-----:|-----------|-----------------------------|--------------------|
/// | 0      | 64   | `xmm[4]`  | XMM0 .. XMM3                | `xmm[0]` XMM0      |
/// | 64     | 32   | `home[4]` | the qwords at RDX+0 .. +24  | not written        |
/// | 96     | 8    | `ret`     | not written                 | RAX                |
/// | 104    | 8    | `sp`      | RDX                         | RDX                |
/// | 112    | 4    | `kind`    | 0                           | 1 / 2              |
/// | 116    | 12   | reserved, not written                                 |||
///
/// On Windows the JIT calls the enter hook with the id in RCX and the caller's SP in RDX,
/// after storing the method's first four arguments (RCX RDX R8 R9, or XMM0 .. XMM3 for a
/// floating-point one) in their home slots, the 32 bytes at the caller's SP. So the
/// arguments are [`home`](Self::home), not registers: the stub copies the four slots
/// here (for a method with fewer arguments the rest is whatever the caller left there).
/// XMM0 .. XMM3 are recorded too (a floating-point argument is in both places). At leave
/// and tailcall the return value is RAX or XMM0 (a larger value is returned through a
/// buffer whose address is in RAX). `kind` says which fields were written: the accessors
/// answer `None` for the others.
#[repr(C, align(16))]
#[derive(Clone, Copy)]
pub struct EltFrame {
    xmm: [MaybeUninit<[u8; 16]>; 4],
    home: [MaybeUninit<u64>; 4],
    ret: MaybeUninit<u64>,
    sp: u64,
    kind: u32,
    reserved: MaybeUninit<[u32; 3]>,
}

// The layout the assembler source writes (`ILREWRITE_WF_*` there).
const _: () = assert!(offset_of!(EltFrame, xmm) == 0);
const _: () = assert!(offset_of!(EltFrame, home) == 64);
const _: () = assert!(offset_of!(EltFrame, ret) == 96);
const _: () = assert!(offset_of!(EltFrame, sp) == 104);
const _: () = assert!(offset_of!(EltFrame, kind) == 112);
const _: () = assert!(offset_of!(EltFrame, reserved) == 116);
const _: () = assert!(size_of::<EltFrame>() == 128);
const _: () = assert!(std::mem::align_of::<EltFrame>() == 16);

impl EltFrame {
    /// The size of the record in bytes (the assembler's `ILREWRITE_WF_SIZE`).
    pub const SIZE: usize = 128;

    /// The number of home slots (arguments) copied at enter.
    pub const HOME: usize = 4;

    /// The number of XMM registers saved at enter (XMM0 .. XMM3).
    pub const ENTER_XMM: usize = 4;

    /// The number of XMM registers saved at leave and tailcall (XMM0).
    pub const RETURN_XMM: usize = 1;

    /// An enter frame, as the enter stub makes it: the four home slots, XMM0 .. XMM3 and
    /// `sp` RDX (for testing handlers).
    pub const fn enter(home: [u64; 4], xmm: [[u8; 16]; 4], sp: u64) -> Self {
        let mut frame = Self::empty(HookKind::Enter, sp);
        let mut i = 0;
        while i < 4 {
            frame.home[i] = MaybeUninit::new(home[i]);
            frame.xmm[i] = MaybeUninit::new(xmm[i]);
            i += 1;
        }
        frame
    }

    /// A leave frame, as the leave stub makes it: RAX, XMM0, `sp` RDX.
    pub const fn leave(rax: u64, xmm0: [u8; 16], sp: u64) -> Self {
        Self::returning(HookKind::Leave, rax, xmm0, sp)
    }

    /// A tailcall frame, as the tailcall stub makes it (see [`leave`](Self::leave)).
    pub const fn tailcall(rax: u64, xmm0: [u8; 16], sp: u64) -> Self {
        Self::returning(HookKind::Tailcall, rax, xmm0, sp)
    }

    const fn returning(kind: HookKind, rax: u64, xmm0: [u8; 16], sp: u64) -> Self {
        let mut frame = Self::empty(kind, sp);
        frame.ret = MaybeUninit::new(rax);
        frame.xmm[0] = MaybeUninit::new(xmm0);
        frame
    }

    const fn empty(kind: HookKind, sp: u64) -> Self {
        Self {
            xmm: [MaybeUninit::uninit(); 4],
            home: [MaybeUninit::uninit(); 4],
            ret: MaybeUninit::uninit(),
            sp,
            kind: kind as u32,
            reserved: MaybeUninit::uninit(),
        }
    }

    /// The hook that made the frame.
    pub const fn kind(&self) -> HookKind {
        match HookKind::from_raw(self.kind) {
            Some(kind) => kind,
            // Every frame is made by a constructor above or by a stub, and the dispatcher
            // hands out only frames whose `kind` is valid.
            None => HookKind::Enter,
        }
    }

    /// The raw `kind` field (what the dispatcher compares with the stub's `kind`).
    pub(crate) const fn raw_kind(&self) -> u32 {
        self.kind
    }

    /// The caller's stack pointer as the JIT passed it (RDX), where the home slots are.
    pub const fn sp(&self) -> u64 {
        self.sp
    }

    /// Home slot `i` (0 .. 4) at enter: the method's argument `i` as the JIT stored it
    /// (an integer, a reference, or a `double`'s/`float`'s bits); `None` at leave and
    /// tailcall, or when `i >= 4`.
    #[allow(unsafe_code)]
    pub fn home(&self, i: usize) -> Option<u64> {
        if self.kind != HookKind::Enter as u32 {
            return None;
        }
        let slot = self.home.get(i)?;
        // SAFETY: an enter frame has its four `home` slots written: the enter stub copies
        // them before it writes `kind` 0 (stubs.s), and `EltFrame::enter` fills
        // them; no other maker writes `kind` 0.
        Some(unsafe { slot.assume_init() })
    }

    /// XMM register `i`'s 16 bytes: at enter `i` in 0 .. 4, at leave and tailcall only
    /// 0 (the return value); else `None`.
    #[allow(unsafe_code)]
    pub fn xmm(&self, i: usize) -> Option<[u8; 16]> {
        let saved = match HookKind::from_raw(self.kind)? {
            HookKind::Enter => Self::ENTER_XMM,
            HookKind::Leave | HookKind::Tailcall => Self::RETURN_XMM,
        };
        let slot = self.xmm[..saved].get(i)?;
        // SAFETY: the first `saved` slots of a frame of this kind are written: the enter
        // stub stores XMM0 .. XMM3, the leave and tailcall stubs XMM0 (stubs.s),
        // and the constructors the same.
        Some(unsafe { slot.assume_init() })
    }

    /// RAX at leave and tailcall (an integer, reference or pointer return value, or the
    /// return buffer's address); `None` at enter.
    #[allow(unsafe_code)]
    pub fn return_rax(&self) -> Option<u64> {
        if self.kind != HookKind::Leave as u32 && self.kind != HookKind::Tailcall as u32 {
            return None;
        }
        // SAFETY: the leave and tailcall stubs store RAX in `ret` before they write
        // `kind` 1 or 2 (stubs.s), and `EltFrame::leave`/`tailcall` fill it.
        Some(unsafe { self.ret.assume_init() })
    }

    /// XMM0 at leave and tailcall (a `float`/`double` or vector return value); `None` at
    /// enter (where [`xmm(0)`](Self::xmm) is the first argument register).
    pub fn return_xmm0(&self) -> Option<[u8; 16]> {
        self.return_rax().and_then(|_| self.xmm(0))
    }
}

impl fmt::Debug for EltFrame {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = self.kind();
        let count = match kind {
            HookKind::Enter => Self::ENTER_XMM,
            HookKind::Leave | HookKind::Tailcall => Self::RETURN_XMM,
        };
        let xmm: Vec<u128> = (0..count)
            .filter_map(|i| self.xmm(i))
            .map(u128::from_le_bytes)
            .collect();
        let mut s = f.debug_struct("EltFrame");
        s.field("kind", &kind);
        match kind {
            HookKind::Enter => {
                let home: Vec<u64> = (0..Self::HOME).filter_map(|i| self.home(i)).collect();
                s.field("home", &format_args!("{home:#x?}"))
            }
            HookKind::Leave | HookKind::Tailcall => s.field("rax", &self.return_rax()),
        };
        s.field("xmm", &format_args!("{xmm:#034x?}"))
            .field("sp", &format_args!("{:#x}", self.sp))
            .finish()
    }
}

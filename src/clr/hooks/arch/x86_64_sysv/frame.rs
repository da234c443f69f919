//! [`EltFrame`] for x86_64 System V: the frame record the stubs of `stubs.s` build on
//! their stack and hand to the dispatcher.

use std::fmt;
use std::mem::{MaybeUninit, offset_of, size_of};

use crate::clr::hooks::kind::HookKind;

/// The registers a stub saved when the runtime called it: the method's argument
/// registers at enter, its return registers at leave and tailcall, and the caller's stack
/// pointer the JIT passed. Layout (x86_64 System V, 208 bytes, 16-byte aligned; the stubs
/// in `stubs.s` write it, the offsets are checked at compile time):
///
/// | offset | size | field     | enter                       | leave / tailcall            |
/// |-------:|-----:|-----------|-----------------------------|-----------------------------|
/// | 0      | 128  | `xmm[8]`  | XMM0 .. XMM7                | `xmm[0]` XMM0, `xmm[1]` XMM1 |
/// | 128    | 48   | `args[6]` | RDI RSI RDX RCX R8 R9       | not written                 |
/// | 176    | 16   | `ret[2]`  | not written                 | RAX, RDX                    |
/// | 192    | 8    | `sp`      | R15                         | RSI                         |
/// | 200    | 4    | `kind`    | 0                           | 1 / 2                       |
/// | 204    | 4    | reserved  | not written                 | not written                 |
///
/// A stub writes only what its hook has (the fast path does not spend stores on zeros), and
/// `kind` says which: the accessors answer `None` for what the frame's hook does not hold.
/// The record is also the stub's save area: what it holds is what the stub restores.
///
/// The values are the raw registers: an argument's meaning (an integer, an object
/// reference, a byref, part of a struct) depends on the method's signature; a `float` or
/// `double` argument or return value is in the low 4 or 8 bytes of its XMM register.
#[repr(C, align(16))]
#[derive(Clone, Copy)]
pub struct EltFrame {
    xmm: [MaybeUninit<[u8; 16]>; 8],
    args: [MaybeUninit<u64>; 6],
    ret: [MaybeUninit<u64>; 2],
    sp: u64,
    kind: u32,
    reserved: MaybeUninit<u32>,
}

// The layout the assembler source writes (`ILREWRITE_EF_*` there).
const _: () = assert!(offset_of!(EltFrame, xmm) == 0);
const _: () = assert!(offset_of!(EltFrame, args) == 128);
const _: () = assert!(offset_of!(EltFrame, ret) == 176);
const _: () = assert!(offset_of!(EltFrame, sp) == 192);
const _: () = assert!(offset_of!(EltFrame, kind) == 200);
const _: () = assert!(offset_of!(EltFrame, reserved) == 204);
const _: () = assert!(size_of::<EltFrame>() == 208);
const _: () = assert!(std::mem::align_of::<EltFrame>() == 16);

impl EltFrame {
    /// The size of the record in bytes (the assembler's `ILREWRITE_EF_SIZE`).
    pub const SIZE: usize = 208;

    /// The number of argument registers saved at enter (RDI RSI RDX RCX R8 R9).
    pub const ARGS: usize = 6;

    /// The names of the argument registers, in [`arg`](Self::arg) order.
    pub const ARG_REGISTERS: [&'static str; 6] = ["rdi", "rsi", "rdx", "rcx", "r8", "r9"];

    /// The number of XMM registers saved at enter (XMM0 .. XMM7).
    pub const ENTER_XMM: usize = 8;

    /// The number of XMM registers saved at leave and tailcall (XMM0, XMM1).
    pub const RETURN_XMM: usize = 2;

    /// An enter frame, as the enter stub makes it: `args` RDI RSI RDX RCX R8 R9, `xmm`
    /// XMM0 .. XMM7, `sp` R15 (for testing handlers).
    #[inline]
    pub const fn enter(args: [u64; 6], xmm: [[u8; 16]; 8], sp: u64) -> Self {
        let mut frame = Self::empty(HookKind::Enter, sp);
        let mut i = 0;
        while i < 6 {
            frame.args[i] = MaybeUninit::new(args[i]);
            i += 1;
        }
        let mut i = 0;
        while i < 8 {
            frame.xmm[i] = MaybeUninit::new(xmm[i]);
            i += 1;
        }
        frame
    }

    /// A leave frame, as the leave stub makes it: the return registers RAX RDX XMM0 XMM1,
    /// `sp` RSI (for testing handlers).
    #[inline]
    pub const fn leave(rax: u64, rdx: u64, xmm0: [u8; 16], xmm1: [u8; 16], sp: u64) -> Self {
        Self::returning(HookKind::Leave, rax, rdx, xmm0, xmm1, sp)
    }

    /// A tailcall frame, as the tailcall stub makes it (see [`leave`](Self::leave)).
    #[inline]
    pub const fn tailcall(rax: u64, rdx: u64, xmm0: [u8; 16], xmm1: [u8; 16], sp: u64) -> Self {
        Self::returning(HookKind::Tailcall, rax, rdx, xmm0, xmm1, sp)
    }

    const fn returning(
        kind: HookKind,
        rax: u64,
        rdx: u64,
        xmm0: [u8; 16],
        xmm1: [u8; 16],
        sp: u64,
    ) -> Self {
        let mut frame = Self::empty(kind, sp);
        frame.ret = [MaybeUninit::new(rax), MaybeUninit::new(rdx)];
        frame.xmm[0] = MaybeUninit::new(xmm0);
        frame.xmm[1] = MaybeUninit::new(xmm1);
        frame
    }

    const fn empty(kind: HookKind, sp: u64) -> Self {
        Self {
            xmm: [MaybeUninit::uninit(); 8],
            args: [MaybeUninit::uninit(); 6],
            ret: [MaybeUninit::uninit(); 2],
            sp,
            kind: kind as u32,
            reserved: MaybeUninit::uninit(),
        }
    }

    /// The hook that made the frame.
    #[inline]
    pub const fn kind(&self) -> HookKind {
        match HookKind::from_raw(self.kind) {
            Some(kind) => kind,
            // Every frame is made by a constructor above or by a stub, and the dispatcher
            // hands out only frames whose `kind` is valid.
            None => HookKind::Enter,
        }
    }

    /// The raw `kind` field (what the dispatcher compares with the stub's `kind`).
    #[inline]
    pub(crate) const fn raw_kind(&self) -> u32 {
        self.kind
    }

    /// The caller's stack pointer as the JIT passed it: R15 at enter, RSI at leave and
    /// tailcall. (Measured at enter and leave; at tailcall the JIT's shared leave path
    /// sets RSI too, not verified against a runtime.)
    #[inline]
    pub const fn sp(&self) -> u64 {
        self.sp
    }

    /// Argument register `i` at enter (0 RDI, 1 RSI, 2 RDX, 3 RCX, 4 R8, 5 R9); `None` at
    /// leave and tailcall, or when `i >= 6`.
    #[allow(unsafe_code)]
    #[inline]
    pub fn arg(&self, i: usize) -> Option<u64> {
        if self.kind != HookKind::Enter as u32 {
            return None;
        }
        let slot = self.args.get(i)?;
        // SAFETY: an enter frame has its six `args` written: the enter stub stores RDI ..
        // R9 there before it writes `kind` 0 (stubs.s), and `EltFrame::enter`
        // fills them; no other maker writes `kind` 0.
        Some(unsafe { slot.assume_init() })
    }

    /// The six argument registers at enter (RDI RSI RDX RCX R8 R9); `None` at leave and
    /// tailcall.
    #[inline]
    pub fn args(&self) -> Option<[u64; 6]> {
        let mut args = [0; 6];
        for (i, arg) in args.iter_mut().enumerate() {
            *arg = self.arg(i)?;
        }
        Some(args)
    }

    /// XMM register `i`'s 16 bytes: at enter `i` in 0 .. 8 (the floating-point
    /// arguments), at leave and tailcall `i` in 0 .. 2 (the return value); else `None`.
    #[allow(unsafe_code)]
    #[inline]
    pub fn xmm(&self, i: usize) -> Option<[u8; 16]> {
        let saved = match HookKind::from_raw(self.kind)? {
            HookKind::Enter => Self::ENTER_XMM,
            HookKind::Leave | HookKind::Tailcall => Self::RETURN_XMM,
        };
        let slot = self.xmm[..saved].get(i)?;
        // SAFETY: the first `saved` XMM slots of a frame of this kind are written: the
        // enter stub stores XMM0 .. XMM7, the leave and tailcall stubs XMM0 and XMM1
        // (stubs.s), and the constructors the same.
        Some(unsafe { slot.assume_init() })
    }

    /// XMM register `i`'s low 8 bytes as an `f64` (a `double` argument or return value).
    #[inline]
    pub fn xmm_f64(&self, i: usize) -> Option<f64> {
        let bytes = self.xmm(i)?;
        let mut low = [0; 8];
        low.copy_from_slice(&bytes[..8]);
        Some(f64::from_le_bytes(low))
    }

    /// XMM register `i`'s low 4 bytes as an `f32` (a `float` argument or return value).
    #[inline]
    pub fn xmm_f32(&self, i: usize) -> Option<f32> {
        let bytes = self.xmm(i)?;
        let mut low = [0; 4];
        low.copy_from_slice(&bytes[..4]);
        Some(f32::from_le_bytes(low))
    }

    /// RAX at leave and tailcall (an integer, reference or pointer return value, or the
    /// first eightbyte of a struct); `None` at enter.
    #[inline]
    pub fn return_rax(&self) -> Option<u64> {
        self.ret(0)
    }

    /// RDX at leave and tailcall (the second eightbyte of a 16-byte struct returned in
    /// two integer registers); `None` at enter.
    #[inline]
    pub fn return_rdx(&self) -> Option<u64> {
        self.ret(1)
    }

    /// XMM0 at leave and tailcall (a `float`/`double` return value); `None` at enter
    /// (where [`xmm(0)`](Self::xmm) is the first floating-point argument).
    #[inline]
    pub fn return_xmm0(&self) -> Option<[u8; 16]> {
        self.returns().then(|| self.xmm(0)).flatten()
    }

    /// XMM1 at leave and tailcall (the second eightbyte of a struct returned in two
    /// vector registers); `None` at enter.
    #[inline]
    pub fn return_xmm1(&self) -> Option<[u8; 16]> {
        self.returns().then(|| self.xmm(1)).flatten()
    }

    /// Whether the frame holds a return value's registers (leave, tailcall).
    fn returns(&self) -> bool {
        self.kind == HookKind::Leave as u32 || self.kind == HookKind::Tailcall as u32
    }

    #[allow(unsafe_code)]
    fn ret(&self, i: usize) -> Option<u64> {
        if !self.returns() {
            return None;
        }
        let slot = self.ret.get(i)?;
        // SAFETY: a leave or tailcall frame has both `ret` slots written: those stubs
        // store RAX and RDX there before they write `kind` 1 or 2 (stubs.s), and
        // `EltFrame::leave`/`tailcall` fill them.
        Some(unsafe { slot.assume_init() })
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
            HookKind::Enter => s.field("args", &self.args()),
            HookKind::Leave | HookKind::Tailcall => s
                .field("rax", &self.return_rax())
                .field("rdx", &self.return_rdx()),
        };
        s.field("xmm", &format_args!("{xmm:#034x?}"))
            .field("sp", &format_args!("{:#x}", self.sp))
            .finish()
    }
}

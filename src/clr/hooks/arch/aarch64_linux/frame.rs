//! [`EltFrame`] for arm64 Linux: the frame record the stubs of `stubs.s` build
//! on their stack and hand to the dispatcher.
//!
//! Plain Rust (no assembler, no `cfg`): it compiles on any target, so that its layout is
//! checked on every build (tests/hooks_cross.rs compiles it); `hooks::arch` exports it
//! as `EltFrame` on `aarch64`/`linux` only.

use std::fmt;
use std::mem::{MaybeUninit, offset_of, size_of};

use crate::clr::hooks::kind::HookKind;

/// The registers an arm64 stub saved when the runtime called it. The same for the three
/// hooks: the JIT expects x0-x8 and q0-q7 back from each (its `PROFILER_*_TRASH` sets
/// leave them out), so each stub saves all of them here, and this record is also what it
/// restores. Layout (224 bytes, 16-byte aligned; `ILREWRITE_EF_*` in `stubs.s`,
/// checked at compile time):
///
/// | offset | size | field  | what                                       |
/// |-------:|-----:|--------|--------------------------------------------|
/// | 0      | 128  | `q[8]` | q0 .. q7, 16 bytes each                    |
/// | 128    | 72   | `x[9]` | x0 .. x8                                   |
/// | 200    | 8    | `sp`   | x11, the caller's SP the JIT passed        |
/// | 208    | 4    | `kind` | 0 enter, 1 leave, 2 tailcall               |
/// | 212    | 12   | reserved, not written                       ||
///
/// At enter x0-x7 and q0-q7 are the method's arguments (AAPCS64 as the runtime uses it:
/// `this` or the first argument in x0; a `float`/`double` in the low 4/8 bytes of a q
/// register; an HFA/HVA in consecutive q registers) and x8 the address of the return
/// buffer, if the method has one. At leave the return value: x0 (and x1 for a 16-byte
/// struct), or q0 .. q3 for a floating-point value, an HFA or an HVA. At tailcall the
/// registers are what they were when the method called the hook (no return value yet).
/// The values are raw: their meaning depends on the method's signature.
#[repr(C, align(16))]
#[derive(Clone, Copy)]
pub struct EltFrame {
    q: [[u8; 16]; 8],
    x: [u64; 9],
    sp: u64,
    kind: u32,
    reserved: MaybeUninit<[u32; 3]>,
}

// The layout the assembler source writes (`ILREWRITE_EF_*` there).
const _: () = assert!(offset_of!(EltFrame, q) == 0);
const _: () = assert!(offset_of!(EltFrame, x) == 128);
const _: () = assert!(offset_of!(EltFrame, sp) == 200);
const _: () = assert!(offset_of!(EltFrame, kind) == 208);
const _: () = assert!(offset_of!(EltFrame, reserved) == 212);
const _: () = assert!(size_of::<EltFrame>() == 224);
const _: () = assert!(std::mem::align_of::<EltFrame>() == 16);

impl EltFrame {
    /// The size of the record in bytes (the assembler's `ILREWRITE_EF_SIZE`).
    pub const SIZE: usize = 224;

    /// The number of general registers saved (x0 .. x8).
    pub const X: usize = 9;

    /// The number of vector registers saved (q0 .. q7).
    pub const Q: usize = 8;

    /// A frame as the stub of `kind` makes it: `x` x0 .. x8, `q` q0 .. q7, `sp` x11
    /// (for testing handlers).
    pub const fn new(kind: HookKind, x: [u64; 9], q: [[u8; 16]; 8], sp: u64) -> Self {
        Self {
            q,
            x,
            sp,
            kind: kind as u32,
            reserved: MaybeUninit::uninit(),
        }
    }

    /// The hook that made the frame.
    pub const fn kind(&self) -> HookKind {
        match HookKind::from_raw(self.kind) {
            Some(kind) => kind,
            // Every frame is made by `new` or by a stub, and the dispatcher hands out
            // only frames whose `kind` is valid.
            None => HookKind::Enter,
        }
    }

    /// The raw `kind` field (what the dispatcher compares with the stub's `kind`).
    pub(crate) const fn raw_kind(&self) -> u32 {
        self.kind
    }

    /// The caller's stack pointer as the JIT passed it (x11).
    pub const fn sp(&self) -> u64 {
        self.sp
    }

    /// General register `i` (x0 .. x8); `None` when `i >= 9`.
    pub fn x(&self, i: usize) -> Option<u64> {
        self.x.get(i).copied()
    }

    /// x0 .. x8.
    pub const fn xs(&self) -> [u64; 9] {
        self.x
    }

    /// Vector register `i`'s 16 bytes (q0 .. q7); `None` when `i >= 8`.
    pub fn q(&self, i: usize) -> Option<[u8; 16]> {
        self.q.get(i).copied()
    }

    /// Vector register `i`'s low 8 bytes as an `f64` (d`i`: a `double` argument or return
    /// value, or one element of a `double` HFA).
    pub fn q_f64(&self, i: usize) -> Option<f64> {
        let bytes = self.q(i)?;
        let mut low = [0; 8];
        low.copy_from_slice(&bytes[..8]);
        Some(f64::from_le_bytes(low))
    }

    /// Vector register `i`'s low 4 bytes as an `f32` (s`i`).
    pub fn q_f32(&self, i: usize) -> Option<f32> {
        let bytes = self.q(i)?;
        let mut low = [0; 4];
        low.copy_from_slice(&bytes[..4]);
        Some(f32::from_le_bytes(low))
    }
}

impl fmt::Debug for EltFrame {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let q: Vec<u128> = self.q.iter().map(|b| u128::from_le_bytes(*b)).collect();
        f.debug_struct("EltFrame")
            .field("kind", &self.kind())
            .field("x", &format_args!("{:#x?}", self.x))
            .field("q", &format_args!("{q:#034x?}"))
            .field("sp", &format_args!("{:#x}", self.sp))
            .finish()
    }
}

//! Reading values at a hook: [`Value`], from a [`ValuePlan`] and an [`EltFrame`], without
//! allocating.
//!
//! Registers come from the frame. Stack arguments and a returned struct in a return
//! buffer are memory the frame only points to: the caller hands their bytes in as a
//! slice, from [`ValuePlan::caller_stack`] and [`ValuePlan::return_buffer`] (unsafe:
//! only the hook knows the memory is live), or from a buffer of its own in tests.

use std::fmt;

use super::layout::Scalar;
use super::plan::{ArgKind, Decode, Location, Part, Register, Slot, Unavailable, ValuePlan};
use crate::clr::hooks::arch::EltFrame;
use crate::clr::hooks::kind::HookKind;

/// A struct's bytes: copied out of registers, or borrowed from the stack or the return
/// buffer.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum StructBytes<'a> {
    /// A struct of at most 16 bytes assembled from its registers.
    Inline {
        /// The bytes, the first `len` meaningful.
        bytes: [u8; 16],
        /// How many.
        len: u8,
    },
    /// A struct in memory.
    Borrowed(&'a [u8]),
}

impl StructBytes<'_> {
    /// The struct's bytes, in memory order.
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            Self::Inline { bytes, len } => &bytes[..usize::from(*len).min(16)],
            Self::Borrowed(bytes) => bytes,
        }
    }
}

impl fmt::Debug for StructBytes<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:02x?}", self.as_bytes())
    }
}

/// An argument or return value, typed by the method's signature.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value<'a> {
    /// `bool` (its byte was not 0).
    Bool(bool),
    /// `char` (a UTF-16 code unit).
    Char(u16),
    /// `sbyte`.
    I8(i8),
    /// `byte`.
    U8(u8),
    /// `short`.
    I16(i16),
    /// `ushort`.
    U16(u16),
    /// `int`.
    I32(i32),
    /// `uint`.
    U32(u32),
    /// `long`, `nint`.
    I64(i64),
    /// `ulong`, `nuint`.
    U64(u64),
    /// `float`.
    F32(f32),
    /// `double`.
    F64(f64),
    /// An object reference (`ObjectID`; 0 for `null`).
    Object(usize),
    /// A managed reference (`ref T`, or `this` of a value type's method).
    ByRef(usize),
    /// An unmanaged pointer or function pointer.
    Pointer(usize),
    /// A struct's bytes.
    Struct(StructBytes<'a>),
    /// Not known (why).
    Unavailable(Unavailable),
}

/// A scalar from the low bytes of `raw` (little-endian).
#[inline(always)]
fn scalar(s: Scalar, raw: [u8; 8]) -> Value<'static> {
    let [b0, b1, b2, b3, ..] = raw;
    match s {
        Scalar::Bool => Value::Bool(b0 != 0),
        Scalar::Char => Value::Char(u16::from_le_bytes([b0, b1])),
        Scalar::I1 => Value::I8(i8::from_le_bytes([b0])),
        Scalar::U1 => Value::U8(b0),
        Scalar::I2 => Value::I16(i16::from_le_bytes([b0, b1])),
        Scalar::U2 => Value::U16(u16::from_le_bytes([b0, b1])),
        Scalar::I4 => Value::I32(i32::from_le_bytes([b0, b1, b2, b3])),
        Scalar::U4 => Value::U32(u32::from_le_bytes([b0, b1, b2, b3])),
        Scalar::R4 => Value::F32(f32::from_le_bytes([b0, b1, b2, b3])),
        Scalar::I8 | Scalar::I => Value::I64(i64::from_le_bytes(raw)),
        Scalar::U8 | Scalar::U => Value::U64(u64::from_le_bytes(raw)),
        Scalar::R8 => Value::F64(f64::from_le_bytes(raw)),
        Scalar::Pointer => Value::Pointer(usize_of(raw)),
        Scalar::ByRef => Value::ByRef(usize_of(raw)),
    }
}

#[inline(always)]
fn usize_of(raw: [u8; 8]) -> usize {
    // x86_64: usize is 64 bits (the hooks module is built for x86_64 only).
    u64::from_le_bytes(raw) as usize
}

/// A register's low 8 bytes, if the frame holds it.
#[inline(always)]
fn register(frame: &EltFrame, r: Register) -> Option<[u8; 8]> {
    let from_xmm = |i: u8| {
        let x = frame.xmm(usize::from(i))?;
        let mut low = [0; 8];
        low.copy_from_slice(&x[..8]);
        Some(low)
    };
    match r {
        Register::Arg(i) => frame.arg(usize::from(i)).map(u64::to_le_bytes),
        Register::Xmm(i) => from_xmm(i),
        Register::Rax => frame.return_rax().map(u64::to_le_bytes),
        Register::Rdx => frame.return_rdx().map(u64::to_le_bytes),
    }
}

/// A scalar or reference decoded from 8 raw bytes.
#[inline(always)]
fn decode_raw(decode: Decode, raw: [u8; 8]) -> Value<'static> {
    match decode {
        Decode::Scalar(s) => scalar(s, raw),
        Decode::Object => Value::Object(usize_of(raw)),
        Decode::Struct(n) => {
            let mut bytes = [0; 16];
            let len = n.min(8) as usize;
            bytes[..len].copy_from_slice(&raw[..len]);
            Value::Struct(StructBytes::Inline {
                bytes,
                len: len as u8,
            })
        }
        Decode::Unknown => Value::Unavailable(Unavailable::Unsupported),
    }
}

/// A struct assembled from its eightbytes' registers.
#[inline(always)]
fn from_parts<'a>(frame: &EltFrame, parts: &[Part], size: u32) -> Value<'a> {
    let mut bytes = [0; 16];
    for (i, part) in parts.iter().enumerate() {
        let Some(raw) = register(frame, part.register) else {
            return Value::Unavailable(Unavailable::NotInFrame);
        };
        let n = usize::from(part.bytes).min(8);
        bytes[8 * i..8 * i + n].copy_from_slice(&raw[..n]);
    }
    Value::Struct(StructBytes::Inline {
        bytes,
        len: size.min(16) as u8,
    })
}

/// The value of `slot`, with `memory` the bytes its `Stack` offsets or return buffer
/// index.
#[inline(always)]
fn read<'a>(frame: &EltFrame, slot: Slot, memory: &'a [u8], at: usize) -> Value<'a> {
    let size = slot.decode.size() as usize;
    let in_memory = || memory.get(at..at.checked_add(size)?);
    match slot.location {
        Location::Unavailable(why) => Value::Unavailable(why),
        Location::Register(r) => match register(frame, r) {
            Some(raw) => decode_raw(slot.decode, raw),
            None => Value::Unavailable(Unavailable::NotInFrame),
        },
        Location::Registers { .. } => from_parts(frame, slot.location.parts(), slot.decode.size()),
        Location::Stack(_) | Location::ReturnBuffer => match (slot.decode, in_memory()) {
            (_, None) => Value::Unavailable(Unavailable::NotInFrame),
            (Decode::Struct(_), Some(bytes)) => Value::Struct(StructBytes::Borrowed(bytes)),
            (decode, Some(bytes)) => {
                let mut raw = [0; 8];
                let n = bytes.len().min(8);
                raw[..n].copy_from_slice(&bytes[..n]);
                decode_raw(decode, raw)
            }
        },
    }
}

/// The arguments of one call, in order (`this` first): see [`ValuePlan::args`].
#[derive(Debug, Clone)]
pub struct Args<'a> {
    slots: std::slice::Iter<'a, (ArgKind, Slot)>,
    frame: &'a EltFrame,
    stack: &'a [u8],
}

impl<'a> Iterator for Args<'a> {
    type Item = Value<'a>;

    #[inline(always)]
    fn next(&mut self) -> Option<Value<'a>> {
        let &(_, slot) = self.slots.next()?;
        if self.frame.kind() != HookKind::Enter {
            return Some(Value::Unavailable(Unavailable::NotInFrame));
        }
        let at = match slot.location {
            Location::Stack(offset) => offset as usize,
            _ => 0,
        };
        Some(read(self.frame, slot, self.stack, at))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.slots.size_hint()
    }
}

impl ExactSizeIterator for Args<'_> {}

impl ValuePlan {
    /// The arguments' values at enter, in order (`this` first; the return buffer and
    /// generic context are not arguments here): `stack` is the caller's stack from its
    /// SP, at least [`stack_bytes`](ValuePlan::stack_bytes) long
    /// ([`caller_stack`](ValuePlan::caller_stack)); a stack argument beyond it is
    /// [`Unavailable::NotInFrame`], as is every argument of a leave or tailcall frame.
    /// Does not allocate.
    #[inline(always)]
    pub fn args<'a>(&'a self, frame: &'a EltFrame, stack: &'a [u8]) -> Args<'a> {
        Args {
            slots: self.args_raw().iter(),
            frame,
            stack,
        }
    }

    /// The return value at leave; `None` for a `void` method. `buffer` holds the return
    /// buffer's bytes when the value is returned in memory
    /// ([`return_buffer`](ValuePlan::return_buffer)), else is ignored. At enter or
    /// tailcall the value is [`Unavailable::NotInFrame`].
    #[inline(always)]
    pub fn ret<'a>(&'a self, frame: &'a EltFrame, buffer: &'a [u8]) -> Option<Value<'a>> {
        let slot = self.ret_slot()?;
        if frame.kind() != HookKind::Leave {
            return Some(Value::Unavailable(Unavailable::NotInFrame));
        }
        Some(read(frame, slot, buffer, 0))
    }

    /// The caller's stack arguments at an enter hook: [`stack_bytes`](ValuePlan::stack_bytes)
    /// bytes from the caller's SP the frame holds (empty when the method has none, or
    /// the frame is not an enter frame).
    ///
    /// # Safety
    ///
    /// `frame` must be the frame the enter stub handed the handler for a call of the
    /// method this plan was made for (not one made by [`EltFrame::enter`] with an
    /// arbitrary SP), and the slice must not be used after the handler returns. Then the
    /// bytes are the caller's outgoing argument area (under the assumption that the SP
    /// the JIT passes is the caller's SP before the call): the caller wrote them before
    /// the call and does not pop them until the callee returns, and the callee's prolog,
    /// which the hook runs in, has not written them yet.
    #[allow(unsafe_code)]
    #[inline(always)]
    pub unsafe fn caller_stack<'a>(&self, frame: &'a EltFrame) -> &'a [u8] {
        let len = self.stack_bytes() as usize;
        if len == 0 || frame.kind() != HookKind::Enter || frame.sp() == 0 {
            return &[];
        }
        // SAFETY: the caller's promise above: `sp .. sp + len` is the live argument area
        // of this call, readable for the handler's call, which the borrow of `frame`
        // does not outlive; no one writes it meanwhile (the callee's prolog is stopped in
        // the hook, on this thread).
        unsafe { std::slice::from_raw_parts(frame.sp() as usize as *const u8, len) }
    }

    /// The return buffer's bytes at a leave hook, when the return value is returned in
    /// memory (empty otherwise, or when RAX is 0).
    ///
    /// # Safety
    ///
    /// `frame` must be the frame the leave stub handed the handler for a call of the
    /// method this plan was made for, and the slice must not be used after the handler
    /// returns. Then RAX holds the return buffer's address (the assumption the module
    /// documents), which the caller owns and keeps until the call returns, and the
    /// callee has written the value into it before its epilog.
    #[allow(unsafe_code)]
    #[inline(always)]
    pub unsafe fn return_buffer<'a>(&self, frame: &'a EltFrame) -> &'a [u8] {
        let Some(slot) = self.ret_slot() else {
            return &[];
        };
        let (Location::ReturnBuffer, HookKind::Leave) = (slot.location, frame.kind()) else {
            return &[];
        };
        let Some(address) = frame.return_rax().filter(|&a| a != 0) else {
            return &[];
        };
        // SAFETY: the caller's promise above: RAX is the address of the caller's buffer
        // of the return type's size, written and live until the method returns, which it
        // does after the handler (the borrow of `frame` does not outlive the handler).
        unsafe {
            std::slice::from_raw_parts(address as usize as *const u8, slot.decode.size() as usize)
        }
    }
}

impl fmt::Display for Value<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Bool(b) => write!(f, "{b}"),
            Self::Char(c) => match char::from_u32(u32::from(*c)) {
                Some(ch) => write!(f, "{ch:?}"),
                None => write!(f, "'\\u{{{c:04x}}}'"),
            },
            Self::I8(v) => write!(f, "{v}"),
            Self::U8(v) => write!(f, "{v}"),
            Self::I16(v) => write!(f, "{v}"),
            Self::U16(v) => write!(f, "{v}"),
            Self::I32(v) => write!(f, "{v}"),
            Self::U32(v) => write!(f, "{v}"),
            Self::I64(v) => write!(f, "{v}"),
            Self::U64(v) => write!(f, "{v}"),
            Self::F32(v) => write!(f, "{v:?}"),
            Self::F64(v) => write!(f, "{v:?}"),
            Self::Object(0) => f.write_str("null"),
            Self::Object(id) => write!(f, "object@{id:#x}"),
            Self::ByRef(p) => write!(f, "ref@{p:#x}"),
            Self::Pointer(p) => write!(f, "ptr@{p:#x}"),
            Self::Struct(bytes) => {
                f.write_str("struct[")?;
                for (i, b) in bytes.as_bytes().iter().enumerate() {
                    if i > 0 {
                        f.write_str(" ")?;
                    }
                    write!(f, "{b:02x}")?;
                }
                f.write_str("]")
            }
            Self::Unavailable(why) => write!(f, "<unavailable: {why}>"),
        }
    }
}

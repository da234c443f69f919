//! [`ValuePlan`]: where each argument and the return value of a method are at its enter
//! and leave hooks, and what to decode them as; computed once per method from its
//! signature.
//!
//! # The calling convention (x86_64 System V, CoreCLR 3.1)
//!
//! Source: dotnet/coreclr v3.1.23 `src/vm/callingconvention.h`,
//! `ArgIteratorTemplate::GetNextOffset` (arguments) and `ComputeReturnFlags` (return
//! value); struct classes from [`classify`](super::classify).
//!
//! Hidden arguments come first, in this order, each taking the next general register
//! (`GetNextOffset`'s `numRegistersUsed`):
//!
//! 1. `this` (`HASTHIS` without `EXPLICITTHIS`): an object reference, or for a method of
//!    a value type a byref to the unboxed value;
//! 2. the return buffer's address, when the return value is returned in memory;
//! 3. the generic context (`HasParamType`: a `MethodDesc` or `MethodTable` for shared
//!    generic code) or the varargs cookie (`IsVarArg`); never both.
//!
//! Then each parameter in order, with 6 general registers (RDI RSI RDX RCX R8 R9) and 8
//! XMM registers (XMM0-7):
//!
//! * `float`/`double`: the next XMM register, else the stack;
//! * a struct CoreCLR passes in registers (one or two eightbytes): all its eightbytes in
//!   the next registers of their class if there are enough of both kinds left, else the
//!   whole struct on the stack (a struct needing two general registers when one is left
//!   takes none, and that one stays for later arguments);
//! * a struct passed in memory (more than 16 bytes, or refused by the classifier): the
//!   stack, by value;
//! * anything else (integers, `bool`, `char`, references, pointers, byrefs; a
//!   `TypedReference` is a 16-byte struct of two general eightbytes): the next general
//!   register, else the stack.
//!
//! Stack arguments take 8-byte slots in order (a struct rounded up to 8), from the
//! caller's stack pointer before the call: the first at `caller SP + 0`. Registers left
//! unused stay available to later arguments.
//!
//! The return value: `float`/`double` in XMM0; a struct in registers as its eightbytes
//! say, general ones in RAX then RDX, SSE ones in XMM0 then XMM1 ({long,long} RAX:RDX,
//! {long,double} RAX:XMM0, {double,long} XMM0:RAX, {double,double} XMM0:XMM1); a struct
//! in memory (and a `TypedReference`, `ComputeReturnFlags`) through the return buffer;
//! anything else in RAX.
//!
//! # Assumptions (to be verified in the runtime)
//!
//! * The SP the JIT passes the enter hook (R15) is the caller's SP just before its
//!   `call`, so that the first stack argument is at `sp + 0`.
//! * At leave, RAX holds the return buffer's address (the JIT returns it in RAX, as the
//!   System V ABI asks), so the returned struct can be read there.
//!
//! # Failing closed
//!
//! A value whose place or type cannot be known is [`Location::Unavailable`], never a
//! guess: a type the [`StructLayouts`] provider cannot answer, and every later argument
//! (its registers depend on it); every parameter when the generic context's presence is
//! unknown, or of a varargs method; every argument when the return type's passing is
//! unknown (a return buffer would shift them).

use std::fmt;

use super::classify::{Eightbyte, Passing, classify};
use super::layout::{LayoutError, Scalar, Shape, StructLayout, StructLayouts};
use crate::sig::{CallingConvention, MethodSig, TypeSig};

/// A register a value (or an eightbyte of one) is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Register {
    /// Argument register `n` at enter: 0 RDI, 1 RSI, 2 RDX, 3 RCX, 4 R8, 5 R9.
    Arg(u8),
    /// XMM register `n` (its low bytes): arguments at enter (0-7), return value at
    /// leave (0-1).
    Xmm(u8),
    /// RAX at leave.
    Rax,
    /// RDX at leave.
    Rdx,
}

impl fmt::Display for Register {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Arg(n) => {
                let names = crate::clr::hooks::arch::EltFrame::ARG_REGISTERS;
                f.write_str(names.get(usize::from(*n)).copied().unwrap_or("?"))
            }
            Self::Xmm(n) => write!(f, "xmm{n}"),
            Self::Rax => f.write_str("rax"),
            Self::Rdx => f.write_str("rdx"),
        }
    }
}

/// One eightbyte of a struct in registers: its register and how many of the struct's
/// bytes it holds (its low bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Part {
    /// The register.
    pub register: Register,
    /// The bytes of the struct it holds (1-8).
    pub bytes: u8,
}

/// Why a value is unavailable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Unavailable {
    /// The [`StructLayouts`] provider could not say what its type is
    /// ([`ValuePlan::layout_errors`]).
    Layout,
    /// An earlier argument's place is unknown, so this one's registers are too.
    AfterUnknown,
    /// Whether the method takes a generic context argument is unknown.
    GenericContext,
    /// A varargs method (its arguments are described by a cookie, not the signature).
    VarArgs,
    /// Whether the return value goes through a return buffer is unknown (it would take
    /// an argument register).
    ReturnUnknown,
    /// A type the planner does not decode (`TypedReference` returned, an internal type,
    /// a type nested too deep to classify).
    Unsupported,
    /// The calling convention is not the managed one.
    CallingConvention,
    /// The frame does not hold it: an argument at leave, the return value at enter or
    /// tailcall, or stack bytes not given.
    NotInFrame,
}

impl fmt::Display for Unavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Layout => "layout unknown",
            Self::AfterUnknown => "after an argument of unknown place",
            Self::GenericContext => "generic context unknown",
            Self::VarArgs => "varargs",
            Self::ReturnUnknown => "return passing unknown",
            Self::Unsupported => "unsupported type",
            Self::CallingConvention => "unmanaged calling convention",
            Self::NotInFrame => "not in this frame",
        })
    }
}

/// Where a value is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Location {
    /// A scalar in one register.
    Register(Register),
    /// A struct in one or two registers, its eightbytes in order.
    Registers {
        /// The eightbytes (`count` of them used).
        parts: [Part; 2],
        /// 1 or 2.
        count: u8,
    },
    /// On the stack at the caller's SP plus this offset (an argument; a scalar in the
    /// slot's low bytes, or a struct's bytes).
    Stack(u32),
    /// In the return buffer whose address RAX holds at leave (a return value).
    ReturnBuffer,
    /// Not known: see the reason.
    Unavailable(Unavailable),
}

impl Location {
    /// The struct's eightbytes when it is in registers.
    pub fn parts(&self) -> &[Part] {
        match self {
            Self::Registers { parts, count } => &parts[..usize::from(*count)],
            _ => &[],
        }
    }
}

/// What to decode a value as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Decode {
    /// A scalar.
    Scalar(Scalar),
    /// An object reference (`ObjectID`).
    Object,
    /// A struct of this many bytes.
    Struct(u32),
    /// Not known (the value is unavailable).
    Unknown,
}

impl Decode {
    /// The value's size in bytes.
    pub fn size(self) -> u32 {
        match self {
            Self::Scalar(s) => s.size(),
            Self::Object => 8,
            Self::Struct(n) => n,
            Self::Unknown => 0,
        }
    }
}

/// Which argument a slot is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ArgKind {
    /// The implicit `this`.
    This,
    /// Parameter `n` of the signature (an `EXPLICITTHIS` signature's `this` is 0).
    Param(u32),
}

/// One argument's or the return value's place and type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Slot {
    /// Where it is.
    pub location: Location,
    /// What it is.
    pub decode: Decode,
}

/// What the signature does not say about a method's hidden arguments: the caller finds
/// it from the runtime (see [`RuntimeLayouts`](super::RuntimeLayouts)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct HiddenArgs {
    /// Whether the method belongs to a value type (its `this` is a byref to the unboxed
    /// value, not an object reference).
    pub value_type_this: bool,
    /// Whether the method takes a generic context argument (CoreCLR's
    /// `MethodDesc::RequiresInstArg`: shared generic code that is generic itself,
    /// static, of a value type, or a default interface method); `None` if unknown.
    pub generic_context: Option<bool>,
}

impl HiddenArgs {
    /// A method of a reference type without a generic context (any non-generic method
    /// of a non-generic class).
    pub const PLAIN: HiddenArgs = HiddenArgs {
        value_type_this: false,
        generic_context: Some(false),
    };
}

/// Why a plan could not be made at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// The signature blob does not parse.
    #[error("bad method signature: {0}")]
    Signature(crate::error::Error),
    /// A parameter of type `void`.
    #[error("parameter {0} is void")]
    VoidParam(u32),
}

/// Where a method's arguments and return value are at its hooks, and their types.
///
/// Made once per method ([`ValuePlan::new`]), read at every call ([`ValuePlan::args`],
/// [`ValuePlan::ret`], which do not allocate).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValuePlan {
    args: Vec<(ArgKind, Slot)>,
    ret: Option<Slot>,
    return_buffer: Option<Register>,
    generic_context: Option<Register>,
    stack_bytes: u32,
    layout_errors: Vec<LayoutError>,
}

/// What a type is, for passing.
enum Kind {
    /// One value in one general register or stack slot.
    Int(Decode),
    /// One value in one XMM register or stack slot.
    Float(Scalar),
    /// A struct: its size and how CoreCLR passes it.
    Struct(u32, Passing),
    /// Not known (why).
    Unknown(Unavailable),
}

/// The register allocation state (`m_idxGenReg`, `m_idxFPReg`, `m_idxStack`).
struct Cursor {
    int: u8,
    xmm: u8,
    stack: u32,
}

const INT_REGS: u8 = 6;
const XMM_REGS: u8 = 8;

impl Cursor {
    fn int(&mut self) -> Option<Register> {
        (self.int < INT_REGS).then(|| {
            self.int += 1;
            Register::Arg(self.int - 1)
        })
    }

    fn stack(&mut self, size: u32) -> Location {
        let at = self.stack;
        self.stack += size.div_ceil(8) * 8;
        Location::Stack(at)
    }

    fn place(&mut self, kind: &Kind) -> Location {
        match *kind {
            Kind::Int(decode) => match self.int() {
                Some(r) => Location::Register(r),
                None => self.stack(decode.size()),
            },
            Kind::Float(_) => {
                if self.xmm < XMM_REGS {
                    self.xmm += 1;
                    Location::Register(Register::Xmm(self.xmm - 1))
                } else {
                    self.stack(8)
                }
            }
            Kind::Struct(size, Passing::Registers(eightbytes)) => {
                let (ints, xmms) = eightbytes.registers();
                if usize::from(self.int) + ints <= usize::from(INT_REGS)
                    && usize::from(self.xmm) + xmms <= usize::from(XMM_REGS)
                {
                    let mut parts = [Part {
                        register: Register::Rax,
                        bytes: 0,
                    }; 2];
                    for (part, &(class, bytes)) in parts.iter_mut().zip(eightbytes.parts()) {
                        let register = match class {
                            Eightbyte::Integer => {
                                self.int += 1;
                                Register::Arg(self.int - 1)
                            }
                            Eightbyte::Sse => {
                                self.xmm += 1;
                                Register::Xmm(self.xmm - 1)
                            }
                        };
                        *part = Part { register, bytes };
                    }
                    Location::Registers {
                        parts,
                        count: eightbytes.parts().len() as u8,
                    }
                } else {
                    self.stack(size)
                }
            }
            Kind::Struct(size, Passing::Memory) => self.stack(size),
            Kind::Struct(_, Passing::Unknown) => Location::Unavailable(Unavailable::Unsupported),
            Kind::Unknown(why) => Location::Unavailable(why),
        }
    }
}

impl ValuePlan {
    /// Plans a method from its signature blob (a MethodDefSig); see [`ValuePlan::new`].
    ///
    /// # Errors
    ///
    /// [`PlanError::Signature`] for a blob that does not parse; as [`ValuePlan::new`].
    pub fn from_blob(
        signature: &[u8],
        hidden: HiddenArgs,
        layouts: &dyn StructLayouts,
    ) -> Result<ValuePlan, PlanError> {
        let sig = MethodSig::parse(signature).map_err(PlanError::Signature)?;
        Self::new(&sig, hidden, layouts)
    }

    /// Plans a method: each argument's and the return value's place and type by
    /// CoreCLR 3.1's x86_64 System V convention (module documentation), asking
    /// `layouts` about value types and type variables. What cannot be known is
    /// [`Location::Unavailable`] (never a guess).
    ///
    /// # Errors
    ///
    /// [`PlanError::VoidParam`] for a parameter of type `void`.
    pub fn new(
        sig: &MethodSig,
        hidden: HiddenArgs,
        layouts: &dyn StructLayouts,
    ) -> Result<ValuePlan, PlanError> {
        let mut errors = Vec::new();
        let mut kind_of = |ty: &TypeSig| kind(ty, layouts, &mut errors);
        let managed = sig.calling_convention == CallingConvention::Default;
        let vararg = sig.calling_convention == CallingConvention::VarArg;
        // The return value.
        let ret_type = sig.return_type.strip_modifiers();
        let (ret, has_buffer) = if matches!(ret_type, TypeSig::Void) {
            (None, Some(false))
        } else if matches!(ret_type, TypeSig::TypedByRef) {
            // The VM returns it through a buffer, the JIT's struct classification would
            // say RAX:RDX: decided by neither here.
            let slot = Slot {
                location: Location::Unavailable(Unavailable::Unsupported),
                decode: Decode::Struct(16),
            };
            (Some(slot), None)
        } else {
            let (slot, buffer) = return_slot(kind_of(ret_type));
            (Some(slot), buffer)
        };
        let mut cursor = Cursor {
            int: 0,
            xmm: 0,
            stack: 0,
        };
        let mut args = Vec::with_capacity(sig.params.len() + 1);
        // 1. this.
        if sig.has_this && !sig.explicit_this {
            let decode = if hidden.value_type_this {
                Decode::Scalar(Scalar::ByRef)
            } else {
                Decode::Object
            };
            let location = cursor.place(&Kind::Int(decode));
            args.push((ArgKind::This, Slot { location, decode }));
        }
        // 2. The return buffer, 3. the generic context or varargs cookie.
        let mut blocked = match has_buffer {
            None => Some(Unavailable::ReturnUnknown),
            Some(false) => None,
            Some(true) => None,
        };
        let return_buffer = if has_buffer == Some(true) {
            cursor.int()
        } else {
            None
        };
        let mut generic_context = None;
        if !managed && !vararg {
            blocked = blocked.or(Some(Unavailable::CallingConvention));
        } else if vararg {
            blocked = blocked.or(Some(Unavailable::VarArgs));
        } else {
            match hidden.generic_context {
                Some(true) => generic_context = cursor.int(),
                Some(false) => {}
                None => blocked = blocked.or(Some(Unavailable::GenericContext)),
            }
        }
        // 4. The parameters.
        for (n, ty) in sig.params.iter().enumerate() {
            let n = u32::try_from(n).unwrap_or(u32::MAX);
            if matches!(ty.strip_modifiers(), TypeSig::Void) {
                return Err(PlanError::VoidParam(n));
            }
            let kind = kind_of(ty);
            let decode = decode_of(&kind);
            let location = match blocked {
                Some(why) => Location::Unavailable(why),
                None => {
                    let location = cursor.place(&kind);
                    if let Location::Unavailable(_) = location {
                        blocked = Some(Unavailable::AfterUnknown);
                    }
                    location
                }
            };
            args.push((ArgKind::Param(n), Slot { location, decode }));
        }
        Ok(ValuePlan {
            args,
            ret,
            return_buffer,
            generic_context,
            stack_bytes: cursor.stack,
            layout_errors: errors,
        })
    }

    /// The arguments in order (`this` first), with their places and types.
    pub fn arg_slots(&self) -> impl ExactSizeIterator<Item = (ArgKind, Slot)> + '_ {
        self.args.iter().copied()
    }

    /// The return value's place and type; `None` for `void`.
    pub fn ret_slot(&self) -> Option<Slot> {
        self.ret
    }

    /// The register holding the return buffer's address at enter, if the return value
    /// is returned in memory.
    pub fn return_buffer_register(&self) -> Option<Register> {
        self.return_buffer
    }

    /// The register holding the generic context at enter, if the method takes one.
    pub fn generic_context_register(&self) -> Option<Register> {
        self.generic_context
    }

    /// How many bytes of stack arguments the method has, from the caller's SP (what
    /// [`ValuePlan::caller_stack`] reads).
    pub fn stack_bytes(&self) -> u32 {
        self.stack_bytes
    }

    /// What the layout provider could not answer, for diagnostics.
    pub fn layout_errors(&self) -> &[LayoutError] {
        &self.layout_errors
    }

    pub(super) fn args_raw(&self) -> &[(ArgKind, Slot)] {
        &self.args
    }
}

/// The return value's slot, and whether it takes a return buffer (`None`: unknown).
fn return_slot(kind: Kind) -> (Slot, Option<bool>) {
    let decode = decode_of(&kind);
    let (location, buffer) = match kind {
        Kind::Int(_) => (Location::Register(Register::Rax), Some(false)),
        Kind::Float(_) => (Location::Register(Register::Xmm(0)), Some(false)),
        Kind::Struct(_, Passing::Registers(eightbytes)) => {
            let (mut int, mut xmm) = (0u8, 0u8);
            let mut parts = [Part {
                register: Register::Rax,
                bytes: 0,
            }; 2];
            for (part, &(class, bytes)) in parts.iter_mut().zip(eightbytes.parts()) {
                let register = match class {
                    Eightbyte::Integer => {
                        int += 1;
                        if int == 1 {
                            Register::Rax
                        } else {
                            Register::Rdx
                        }
                    }
                    Eightbyte::Sse => {
                        xmm += 1;
                        Register::Xmm(xmm - 1)
                    }
                };
                *part = Part { register, bytes };
            }
            let count = eightbytes.parts().len() as u8;
            (Location::Registers { parts, count }, Some(false))
        }
        Kind::Struct(_, Passing::Memory) => (Location::ReturnBuffer, Some(true)),
        Kind::Struct(_, Passing::Unknown) => {
            (Location::Unavailable(Unavailable::Unsupported), None)
        }
        Kind::Unknown(why) => (Location::Unavailable(why), None),
    };
    (Slot { location, decode }, buffer)
}

fn decode_of(kind: &Kind) -> Decode {
    match *kind {
        Kind::Int(decode) => decode,
        Kind::Float(s) => Decode::Scalar(s),
        Kind::Struct(size, _) => Decode::Struct(size),
        Kind::Unknown(_) => Decode::Unknown,
    }
}

/// What `ty` is for passing, asking `layouts` where the signature does not say.
fn kind(ty: &TypeSig, layouts: &dyn StructLayouts, errors: &mut Vec<LayoutError>) -> Kind {
    let ty = ty.strip_modifiers();
    if let Some(scalar) = Scalar::of_sig(ty) {
        return scalar_kind(scalar);
    }
    match ty {
        TypeSig::String
        | TypeSig::Object
        | TypeSig::Class(_)
        | TypeSig::SzArray(_)
        | TypeSig::Array(_)
        | TypeSig::GenericInst {
            is_value_type: false,
            ..
        } => Kind::Int(Decode::Object),
        TypeSig::TypedByRef => {
            let layout = StructLayout::typed_reference();
            Kind::Struct(layout.size, classify(&layout))
        }
        TypeSig::ValueType(_)
        | TypeSig::GenericInst {
            is_value_type: true,
            ..
        }
        | TypeSig::Var(_)
        | TypeSig::MVar(_) => match layouts.shape(ty) {
            Ok(Shape::Reference) => Kind::Int(Decode::Object),
            Ok(Shape::Scalar(scalar)) => scalar_kind(scalar),
            Ok(Shape::Struct(layout)) => Kind::Struct(layout.size, classify(&layout)),
            Err(e) => {
                errors.push(e);
                Kind::Unknown(Unavailable::Layout)
            }
        },
        _ => Kind::Unknown(Unavailable::Unsupported),
    }
}

fn scalar_kind(scalar: Scalar) -> Kind {
    if scalar.is_float() {
        Kind::Float(scalar)
    } else {
        Kind::Int(Decode::Scalar(scalar))
    }
}

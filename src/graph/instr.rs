//! The instruction types: an [`Instruction`] is an opcode and an [`Operand`]; branch
//! operands name their target by [`InstrId`], `switch` operands a range of the list's
//! target pool ([`SwitchTargets`]).

use crate::opcode::{OpCode, OperandKind};
use std::fmt;

/// Stable handle of an instruction inside one [`InstrList`](super::InstrList).
///
/// Ids are dense indexes into the arena; they are not reused until the list is cleared, so
/// an id handed out before an edit still names the same instruction after it. An id is
/// only meaningful for the list (body) that handed it out.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct InstrId(pub(crate) u32);

impl InstrId {
    /// The arena index of this id.
    #[inline]
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Debug for InstrId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "i{}", self.0)
    }
}

/// A range of the switch-target pool owned by an [`InstrList`](super::InstrList).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SwitchTargets {
    pub(crate) start: u32,
    pub(crate) len: u32,
}

impl SwitchTargets {
    /// Number of targets.
    #[inline]
    pub fn len(self) -> usize {
        self.len as usize
    }

    /// Whether the switch has no targets.
    #[inline]
    pub fn is_empty(self) -> bool {
        self.len == 0
    }
}

/// The operand of an instruction, independent of its encoded width.
///
/// The opcode decides the encoding: `Int` is written as `int8` for `ldc.i4.s`, `uint8` for
/// `unaligned.`/`no.` and `int32` for `ldc.i4`; `Var` as `uint8` or `uint16`; `Target` as a
/// one- or four-byte displacement. Floats are kept as raw bits so NaN payloads survive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operand {
    /// No operand.
    None,
    /// `ldc.i4.s`, `ldc.i4`, `unaligned.`, `no.`.
    Int(i32),
    /// `ldc.i8`.
    Long(i64),
    /// `ldc.r4`, as IEEE-754 bits.
    Float32(u32),
    /// `ldc.r8`, as IEEE-754 bits.
    Float64(u64),
    /// An argument or local index.
    Var(u16),
    /// A metadata token.
    Token(u32),
    /// A branch target.
    Target(InstrId),
    /// `switch` targets, stored in the list's target pool.
    Switch(SwitchTargets),
}

/// One IL instruction: an opcode and its operand.
///
/// Where it came from (its original code offset) is known by the body that holds it, see
/// [`crate::MethodBody::original_offset`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Instruction {
    /// The opcode; its table row fixes the operand encoding.
    pub opcode: OpCode,
    /// The operand; must match `opcode.operand()` (checked when encoding).
    pub operand: Operand,
}

impl Instruction {
    /// A new instruction.
    #[inline]
    pub fn new(opcode: OpCode, operand: Operand) -> Self {
        Instruction { opcode, operand }
    }

    /// An instruction without an operand.
    #[inline]
    pub fn simple(opcode: OpCode) -> Self {
        Self::new(opcode, Operand::None)
    }

    /// Whether the operand's variant agrees with the opcode's operand kind.
    pub fn operand_matches_opcode(&self) -> bool {
        matches!(
            (self.opcode.operand(), self.operand),
            (OperandKind::None, Operand::None)
                | (
                    OperandKind::ShortI | OperandKind::ShortU | OperandKind::I,
                    Operand::Int(_)
                )
                | (OperandKind::I8, Operand::Long(_))
                | (OperandKind::ShortR, Operand::Float32(_))
                | (OperandKind::R, Operand::Float64(_))
                | (OperandKind::ShortVar | OperandKind::Var, Operand::Var(_))
                | (
                    OperandKind::ShortBranch | OperandKind::Branch,
                    Operand::Target(_)
                )
                | (OperandKind::Switch, Operand::Switch(_))
                | (
                    OperandKind::Method
                        | OperandKind::Field
                        | OperandKind::Type
                        | OperandKind::String
                        | OperandKind::Sig
                        | OperandKind::Tok,
                    Operand::Token(_)
                )
        )
    }
}

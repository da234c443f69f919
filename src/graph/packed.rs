//! The stored form of an instruction: its opcode and its operand's bits.
//!
//! An [`Instruction`] is an opcode and an [`Operand`] enum; stored that way, every pass
//! over the code (decoding, encoding) branches on the operand's variant for every
//! instruction. A [`Slot`] instead keeps the operand as the bits the opcode's operand
//! kind gives it: the little-endian value of its encoded bytes for immediate operands and
//! tokens, the target's id for branches, the pool range for `switch`. Decoding and
//! encoding then move the bits without looking at them; an `Instruction` is rebuilt only
//! when asked for.
//!
//! Instructions whose operand does not match their opcode (or does not fit its encoded
//! size, e.g. `ldc.i4.s` with 300) cannot be encoded, but the API lets a user build them
//! and the encoder reports them; such *odd* instructions are kept whole in a side table
//! and the slot holds their index there.

use super::instr::{InstrId, Instruction, Operand, SwitchTargets};
use crate::opcode::{OpCode, OperandKind};

/// One stored instruction. 16 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Slot {
    /// The opcode.
    pub opcode: OpCode,
    /// Whether `bits` is an index into the list's table of odd instructions.
    pub odd: bool,
    /// The operand's bits (see the module documentation).
    pub bits: u64,
}

const _: () = assert!(std::mem::size_of::<Slot>() == 16);

impl Slot {
    /// A slot for an instruction whose operand is `bits` (as [`operand_bits`] gives).
    #[inline(always)]
    pub fn new(opcode: OpCode, bits: u64) -> Self {
        Slot {
            opcode,
            odd: false,
            bits,
        }
    }
}

/// The bits of `instr`'s operand in its slot, or `None` if the operand does not match
/// the opcode's operand kind or does not fit its encoding.
#[inline]
pub(crate) fn operand_bits(instr: &Instruction) -> Option<u64> {
    Some(match (instr.opcode.operand(), instr.operand) {
        (OperandKind::None, Operand::None) => 0,
        (OperandKind::ShortI, Operand::Int(v)) => u64::from(i8::try_from(v).ok()? as u8),
        (OperandKind::ShortU, Operand::Int(v)) => u64::from(u8::try_from(v).ok()?),
        (OperandKind::I, Operand::Int(v)) => u64::from(v as u32),
        (OperandKind::I8, Operand::Long(v)) => v as u64,
        (OperandKind::ShortR, Operand::Float32(v)) => u64::from(v),
        (OperandKind::R, Operand::Float64(v)) => v,
        (OperandKind::ShortVar, Operand::Var(v)) => u64::from(u8::try_from(v).ok()?),
        (OperandKind::Var, Operand::Var(v)) => u64::from(v),
        (OperandKind::ShortBranch | OperandKind::Branch, Operand::Target(t)) => u64::from(t.0),
        (OperandKind::Switch, Operand::Switch(t)) => u64::from(t.start) | u64::from(t.len) << 32,
        (kind, Operand::Token(t)) if kind.is_token() => u64::from(t),
        _ => return None,
    })
}

/// The stored form of `instr` (its slot), or `None` if it would be odd (see
/// [`operand_bits`]).
#[cfg(test)]
pub(crate) fn stored(instr: &Instruction) -> Option<Slot> {
    operand_bits(instr).map(|bits| Slot::new(instr.opcode, bits))
}

/// The instruction a non-odd slot holds.
#[inline]
pub(crate) fn instruction(opcode: OpCode, bits: u64) -> Instruction {
    let operand = match opcode.operand() {
        OperandKind::None => Operand::None,
        OperandKind::ShortI => Operand::Int(i32::from(bits as u8 as i8)),
        OperandKind::ShortU => Operand::Int(i32::from(bits as u8)),
        OperandKind::I => Operand::Int(bits as u32 as i32),
        OperandKind::I8 => Operand::Long(bits as i64),
        OperandKind::ShortR => Operand::Float32(bits as u32),
        OperandKind::R => Operand::Float64(bits),
        OperandKind::ShortVar | OperandKind::Var => Operand::Var(bits as u16),
        OperandKind::ShortBranch | OperandKind::Branch => Operand::Target(InstrId(bits as u32)),
        OperandKind::Switch => Operand::Switch(SwitchTargets {
            start: bits as u32,
            len: (bits >> 32) as u32,
        }),
        OperandKind::Method
        | OperandKind::Field
        | OperandKind::Type
        | OperandKind::String
        | OperandKind::Sig
        | OperandKind::Tok => Operand::Token(bits as u32),
    };
    Instruction { opcode, operand }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every opcode with every operand shape: matching operands that fit survive the trip
    /// through their bits; the others have none.
    #[test]
    fn operand_bits_round_trip_exactly_when_they_fit_the_opcode() {
        let operands = [
            Operand::None,
            Operand::Int(0),
            Operand::Int(-1),
            Operand::Int(127),
            Operand::Int(128),
            Operand::Int(255),
            Operand::Int(256),
            Operand::Int(i32::MIN),
            Operand::Long(i64::MIN),
            Operand::Float32(0x7FC0_0001),
            Operand::Float64(0x7FF8_0000_0000_0001),
            Operand::Var(255),
            Operand::Var(256),
            Operand::Var(u16::MAX),
            Operand::Token(0x0A00_0001),
            Operand::Target(InstrId(u32::MAX - 2)),
            Operand::Switch(SwitchTargets {
                start: 7,
                len: u32::MAX,
            }),
        ];
        for &opcode in OpCode::ALL {
            for operand in operands {
                let instr = Instruction { opcode, operand };
                match operand_bits(&instr) {
                    Some(bits) => assert_eq!(instruction(opcode, bits), instr),
                    None => assert!(
                        !instr.operand_matches_opcode()
                            || matches!(
                                (opcode.operand(), operand),
                                (OperandKind::ShortI, Operand::Int(v)) if i8::try_from(v).is_err()
                            )
                            || matches!(
                                (opcode.operand(), operand),
                                (OperandKind::ShortU, Operand::Int(v)) if u8::try_from(v).is_err()
                            )
                            || matches!(
                                (opcode.operand(), operand),
                                (OperandKind::ShortVar, Operand::Var(v)) if v > 255
                            ),
                        "{instr:?}"
                    ),
                }
            }
        }
    }
}

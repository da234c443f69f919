//! Instructions as the ABI passes them, in Rust shape: [`Instruction`], [`Operand`],
//! [`InstructionId`], [`Incoming`], and a few opcode and element-type values.

use crate::sys;

/// An instruction of the body being edited: 1 or more, stable for the edit call (the
/// host numbers them; new code has none until inserted).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct InstructionId(u32);

impl InstructionId {
    /// The id the host gave, or `None` for 0 (no instruction).
    pub const fn new(id: u32) -> Option<InstructionId> {
        match id {
            0 => None,
            id => Some(InstructionId(id)),
        }
    }

    /// The number the host uses.
    pub const fn get(self) -> u32 {
        self.0
    }
}

/// An instruction's operand, of the kind its opcode takes (the host checks that, and
/// the range, when code is inserted: `ILR_E_INVALID_ARGUMENT` otherwise).
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum Operand {
    /// None.
    None,
    /// `ldc.i4(.s)`, `unaligned.`, `no.`: the value.
    Int(i64),
    /// `ldc.i8`: the value.
    Long(i64),
    /// `ldc.r4`: the value.
    Float32(f32),
    /// `ldc.r8`: the value.
    Float64(f64),
    /// An argument or local index.
    Var(u32),
    /// A metadata token.
    Token(u32),
    /// A branch's target.
    Target(InstructionId),
    /// `switch`: the number of its targets (read only: a `switch` cannot be inserted
    /// through ABI version 1).
    Switch(u32),
    /// An operand this crate cannot represent (a kind it does not know, or a value out
    /// of its kind's range), as the host gave it.
    Other {
        /// Its `operand_kind`.
        kind: u16,
        /// Its `operand`.
        value: i64,
    },
}

/// One instruction: an opcode (the ECMA-335 value: one byte, or `0xFE00 |` the second
/// byte of the two-byte ones; see [`opcode`]) and its operand.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Instruction {
    /// Which instruction of the body it is; `None` in new code (ignored by the inserts).
    pub id: Option<InstructionId>,
    /// The opcode.
    pub opcode: u16,
    /// The operand.
    pub operand: Operand,
}

impl Instruction {
    /// New code: `opcode` without an operand (`neg`, `add`, `ret`, ...).
    pub const fn new(opcode: u16) -> Instruction {
        Instruction::with(opcode, Operand::None)
    }

    /// New code: `opcode` with `operand`.
    pub const fn with(opcode: u16, operand: Operand) -> Instruction {
        Instruction {
            id: None,
            opcode,
            operand,
        }
    }

    /// New code: `ldc.i4 value`.
    pub const fn ldc_i4(value: i32) -> Instruction {
        Instruction::with(opcode::LDC_I4, Operand::Int(value as i64))
    }

    /// As the ABI passes it.
    pub(crate) fn to_raw(self) -> sys::ilr_instruction {
        let (operand_kind, operand) = match self.operand {
            Operand::None => (sys::ILR_OPERAND_NONE, 0),
            Operand::Int(v) => (sys::ILR_OPERAND_INT, v),
            Operand::Long(v) => (sys::ILR_OPERAND_LONG, v),
            Operand::Float32(v) => (sys::ILR_OPERAND_FLOAT32, i64::from(v.to_bits())),
            Operand::Float64(v) => (sys::ILR_OPERAND_FLOAT64, v.to_bits() as i64),
            Operand::Var(v) => (sys::ILR_OPERAND_VAR, i64::from(v)),
            Operand::Token(t) => (sys::ILR_OPERAND_TOKEN, i64::from(t)),
            Operand::Target(id) => (sys::ILR_OPERAND_TARGET, i64::from(id.get())),
            Operand::Switch(n) => (sys::ILR_OPERAND_SWITCH, i64::from(n)),
            Operand::Other { kind, value } => (kind, value),
        };
        sys::ilr_instruction {
            id: self.id.map_or(0, InstructionId::get),
            opcode: self.opcode,
            operand_kind,
            operand,
        }
    }

    /// What the host gave.
    pub(crate) fn from_raw(raw: &sys::ilr_instruction) -> Instruction {
        let value = raw.operand;
        let other = Operand::Other {
            kind: raw.operand_kind,
            value,
        };
        let operand = match raw.operand_kind {
            sys::ILR_OPERAND_NONE => Operand::None,
            sys::ILR_OPERAND_INT => Operand::Int(value),
            sys::ILR_OPERAND_LONG => Operand::Long(value),
            sys::ILR_OPERAND_FLOAT32 => u32::try_from(value)
                .map(|bits| Operand::Float32(f32::from_bits(bits)))
                .unwrap_or(other),
            sys::ILR_OPERAND_FLOAT64 => Operand::Float64(f64::from_bits(value as u64)),
            sys::ILR_OPERAND_VAR => u32::try_from(value).map(Operand::Var).unwrap_or(other),
            sys::ILR_OPERAND_TOKEN => u32::try_from(value).map(Operand::Token).unwrap_or(other),
            sys::ILR_OPERAND_TARGET => u32::try_from(value)
                .ok()
                .and_then(InstructionId::new)
                .map_or(other, Operand::Target),
            sys::ILR_OPERAND_SWITCH => u32::try_from(value).map(Operand::Switch).unwrap_or(other),
            _ => other,
        };
        Instruction {
            id: InstructionId::new(raw.id),
            opcode: raw.opcode,
            operand,
        }
    }
}

/// What becomes of the branches and exception regions that named an instruction when
/// code is inserted before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Incoming {
    /// They name the first new instruction (`ILR_REDIRECT`): the new code runs on every
    /// path to the instruction.
    Redirect,
    /// They keep naming the old instruction (`ILR_KEEP`): the new code runs only when
    /// control falls into it.
    Keep,
}

impl Incoming {
    /// As the ABI passes it.
    pub(crate) fn to_raw(self) -> u32 {
        match self {
            Incoming::Redirect => sys::ILR_REDIRECT,
            Incoming::Keep => sys::ILR_KEEP,
        }
    }
}

/// A few ECMA-335 opcode values (Partition III); any other value can be used as it is.
pub mod opcode {
    /// `nop`.
    pub const NOP: u16 = 0x00;
    /// `ldarg.0`.
    pub const LDARG_0: u16 = 0x02;
    /// `ldc.i4.s` (operand [`Int`](crate::Operand::Int), -128 to 127).
    pub const LDC_I4_S: u16 = 0x1F;
    /// `ldc.i4` (operand [`Int`](crate::Operand::Int), 32-bit).
    pub const LDC_I4: u16 = 0x20;
    /// `ldc.i8` (operand [`Long`](crate::Operand::Long)).
    pub const LDC_I8: u16 = 0x21;
    /// `dup`.
    pub const DUP: u16 = 0x25;
    /// `pop`.
    pub const POP: u16 = 0x26;
    /// `call` (operand [`Token`](crate::Operand::Token)).
    pub const CALL: u16 = 0x28;
    /// `ret`.
    pub const RET: u16 = 0x2A;
    /// `br` (operand [`Target`](crate::Operand::Target)).
    pub const BR: u16 = 0x38;
    /// `add`.
    pub const ADD: u16 = 0x58;
    /// `sub`.
    pub const SUB: u16 = 0x59;
    /// `mul`.
    pub const MUL: u16 = 0x5A;
    /// `neg`.
    pub const NEG: u16 = 0x65;
    /// `not`.
    pub const NOT: u16 = 0x66;
}

/// A few ECMA-335 element types (Partition II 23.1.16): what
/// [`Edit::return_type`](crate::Edit::return_type) answers.
pub mod element_type {
    /// `void`.
    pub const VOID: u8 = 0x01;
    /// `bool`.
    pub const BOOLEAN: u8 = 0x02;
    /// `char`.
    pub const CHAR: u8 = 0x03;
    /// `int8`.
    pub const I1: u8 = 0x04;
    /// `unsigned int8`.
    pub const U1: u8 = 0x05;
    /// `int16`.
    pub const I2: u8 = 0x06;
    /// `unsigned int16`.
    pub const U2: u8 = 0x07;
    /// `int32`.
    pub const I4: u8 = 0x08;
    /// `unsigned int32`.
    pub const U4: u8 = 0x09;
    /// `int64`.
    pub const I8: u8 = 0x0A;
    /// `unsigned int64`.
    pub const U8: u8 = 0x0B;
    /// `float32`.
    pub const R4: u8 = 0x0C;
    /// `float64`.
    pub const R8: u8 = 0x0D;
    /// `string`.
    pub const STRING: u8 = 0x0E;
    /// A value type.
    pub const VALUETYPE: u8 = 0x11;
    /// A class.
    pub const CLASS: u8 = 0x12;
    /// `object`.
    pub const OBJECT: u8 = 0x1C;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let target = InstructionId::new(7).expect("not 0");
        for instruction in [
            Instruction::new(opcode::NEG),
            Instruction::ldc_i4(-5),
            Instruction::with(opcode::LDC_I8, Operand::Long(i64::MIN)),
            Instruction::with(0x22, Operand::Float32(1.5)),
            Instruction::with(0x23, Operand::Float64(-2.25)),
            Instruction::with(0xFE0C, Operand::Var(65_535)),
            Instruction::with(opcode::CALL, Operand::Token(0x0A00_0001)),
            Instruction::with(opcode::BR, Operand::Target(target)),
            Instruction::with(0x45, Operand::Switch(3)),
        ] {
            assert_eq!(Instruction::from_raw(&instruction.to_raw()), instruction);
        }
        let odd = sys::ilr_instruction {
            id: 3,
            opcode: 0x11,
            operand_kind: sys::ILR_OPERAND_VAR,
            operand: -1,
        };
        let read = Instruction::from_raw(&odd);
        assert_eq!(read.id, InstructionId::new(3));
        assert_eq!(read.operand, Operand::Other { kind: 5, value: -1 });
        assert_eq!(read.to_raw(), odd);
    }
}

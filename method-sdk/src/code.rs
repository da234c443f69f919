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
    /// In inserted code only (the inserts and a [`Wrap`](crate::Wrap)'s code): a branch
    /// to the instruction at this index (from 0) of the same code slice, which must be
    /// in it (`ILR_OPERAND_CODE`). See [`Instruction::branch_to`].
    Code(u32),
    /// In a [`Wrap`](crate::Wrap)'s code only: `ldloc`, `ldloca` or `stloc` of the
    /// wrap's state local (`ILR_OPERAND_STATE_LOCAL`). See
    /// [`Instruction::state_local`].
    StateLocal,
    /// In a [`Wrap`](crate::Wrap)'s code only: `ldloc`, `ldloca` or `stloc` of the
    /// return-value local (`ILR_OPERAND_RETURN_LOCAL`). See
    /// [`Instruction::return_local`].
    ReturnLocal,
    /// In a [`Wrap`](crate::Wrap)'s code only, on `ldc.i4`: the method's MethodDef token
    /// (`ILR_OPERAND_METHOD_ID`). See [`Instruction::method_id`].
    MethodId,
    /// In a [`Wrap`](crate::Wrap)'s code only, on `ldc.i8`: the module's ModuleID
    /// (`ILR_OPERAND_MODULE_ID`). See [`Instruction::module_id`].
    ModuleId,
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

    /// New code: `ldc.i8 value`.
    pub const fn ldc_i8(value: i64) -> Instruction {
        Instruction::with(opcode::LDC_I8, Operand::Long(value))
    }

    /// New code: `ldstr` of a user string (a token from
    /// [`Module::user_string`](crate::Module::user_string)).
    pub const fn ldstr(token: u32) -> Instruction {
        Instruction::with(opcode::LDSTR, Operand::Token(token))
    }

    /// New code: `call` of a method (a MethodDef, MemberRef or MethodSpec token).
    pub const fn call(token: u32) -> Instruction {
        Instruction::with(opcode::CALL, Operand::Token(token))
    }

    /// New code: `ldloc local` (an argument-or-local index: the long form, any index).
    pub const fn ldloc(local: u16) -> Instruction {
        Instruction::with(opcode::LDLOC, Operand::Var(local as u32))
    }

    /// New code: `stloc local`.
    pub const fn stloc(local: u16) -> Instruction {
        Instruction::with(opcode::STLOC, Operand::Var(local as u32))
    }

    /// New code: a branch `opcode` (`br`, `bge.s`, ...) to the instruction at `index`
    /// (from 0) of the same code slice: inserted code may branch within itself
    /// ([`Operand::Code`]). The host checks that `index` is in the slice and the opcode
    /// a branch.
    pub const fn branch_to(opcode: u16, index: u32) -> Instruction {
        Instruction::with(opcode, Operand::Code(index))
    }

    /// New code in a [`Wrap`](crate::Wrap): `opcode` (`ldloc`, `ldloca` or `stloc`,
    /// [`opcode::LDLOC`], [`opcode::LDLOCA`], [`opcode::STLOC`]) of the wrap's state
    /// local, the one [`Wrap::state_local`](crate::Wrap::state_local) gives the type of.
    pub const fn state_local(opcode: u16) -> Instruction {
        Instruction::with(opcode, Operand::StateLocal)
    }

    /// New code in a [`Wrap`](crate::Wrap): `opcode` (`ldloc`, `ldloca` or `stloc`) of
    /// the return-value local (the value the method returns, in `on_return`).
    pub const fn return_local(opcode: u16) -> Instruction {
        Instruction::with(opcode, Operand::ReturnLocal)
    }

    /// New code in a [`Wrap`](crate::Wrap): `ldc.i4` of the method's MethodDef token.
    pub const fn method_id() -> Instruction {
        Instruction::with(opcode::LDC_I4, Operand::MethodId)
    }

    /// New code in a [`Wrap`](crate::Wrap): `ldc.i8` of the module's ModuleID.
    pub const fn module_id() -> Instruction {
        Instruction::with(opcode::LDC_I8, Operand::ModuleId)
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
            Operand::Code(index) => (sys::ILR_OPERAND_CODE, i64::from(index)),
            Operand::StateLocal => (sys::ILR_OPERAND_STATE_LOCAL, 0),
            Operand::ReturnLocal => (sys::ILR_OPERAND_RETURN_LOCAL, 0),
            Operand::MethodId => (sys::ILR_OPERAND_METHOD_ID, 0),
            Operand::ModuleId => (sys::ILR_OPERAND_MODULE_ID, 0),
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
            sys::ILR_OPERAND_CODE => u32::try_from(value).map(Operand::Code).unwrap_or(other),
            // The pseudo-operands carry no value: one with a value is kept as it came.
            sys::ILR_OPERAND_STATE_LOCAL if value == 0 => Operand::StateLocal,
            sys::ILR_OPERAND_RETURN_LOCAL if value == 0 => Operand::ReturnLocal,
            sys::ILR_OPERAND_METHOD_ID if value == 0 => Operand::MethodId,
            sys::ILR_OPERAND_MODULE_ID if value == 0 => Operand::ModuleId,
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
    /// `ldnull`.
    pub const LDNULL: u16 = 0x14;
    /// `ldc.i4.0`.
    pub const LDC_I4_0: u16 = 0x16;
    /// `ldc.i4.1`.
    pub const LDC_I4_1: u16 = 0x17;
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
    /// `br.s` (operand [`Target`](crate::Operand::Target) or
    /// [`Code`](crate::Operand::Code)).
    pub const BR_S: u16 = 0x2B;
    /// `brfalse.s`.
    pub const BRFALSE_S: u16 = 0x2C;
    /// `brtrue.s`.
    pub const BRTRUE_S: u16 = 0x2D;
    /// `beq.s`.
    pub const BEQ_S: u16 = 0x2E;
    /// `bge.s`.
    pub const BGE_S: u16 = 0x2F;
    /// `bgt.s`.
    pub const BGT_S: u16 = 0x30;
    /// `ble.s`.
    pub const BLE_S: u16 = 0x31;
    /// `blt.s`.
    pub const BLT_S: u16 = 0x32;
    /// `br` (operand [`Target`](crate::Operand::Target) or
    /// [`Code`](crate::Operand::Code)).
    pub const BR: u16 = 0x38;
    /// `brfalse`.
    pub const BRFALSE: u16 = 0x39;
    /// `brtrue`.
    pub const BRTRUE: u16 = 0x3A;
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
    /// `conv.i4`.
    pub const CONV_I4: u16 = 0x69;
    /// `conv.i8`.
    pub const CONV_I8: u16 = 0x6A;
    /// `callvirt` (operand [`Token`](crate::Operand::Token)).
    pub const CALLVIRT: u16 = 0x6F;
    /// `ldstr` (operand [`Token`](crate::Operand::Token), a user string).
    pub const LDSTR: u16 = 0x72;
    /// `newobj` (operand [`Token`](crate::Operand::Token), a constructor).
    pub const NEWOBJ: u16 = 0x73;
    /// `box` (operand [`Token`](crate::Operand::Token), a type).
    pub const BOX: u16 = 0x8C;
    /// `ldlen`.
    pub const LDLEN: u16 = 0x8E;
    /// `ldloc` (operand [`Var`](crate::Operand::Var), or in a wrap
    /// [`StateLocal`](crate::Operand::StateLocal) or
    /// [`ReturnLocal`](crate::Operand::ReturnLocal)).
    pub const LDLOC: u16 = 0xFE0C;
    /// `ldloca` (operands as [`LDLOC`]).
    pub const LDLOCA: u16 = 0xFE0D;
    /// `stloc` (operands as [`LDLOC`]).
    pub const STLOC: u16 = 0xFE0E;
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
            Instruction::branch_to(opcode::BGE_S, 9),
            Instruction::state_local(opcode::STLOC),
            Instruction::return_local(opcode::LDLOC),
            Instruction::method_id(),
            Instruction::module_id(),
            Instruction::ldstr(0x7000_0001),
            Instruction::ldc_i8(-3),
            Instruction::stloc(65_534),
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

        // The pseudo-operands as the header numbers them.
        let raw = |i: Instruction| {
            let r = i.to_raw();
            (r.opcode, r.operand_kind, r.operand)
        };
        assert_eq!(raw(Instruction::branch_to(opcode::BGE_S, 9)), (0x2F, 13, 9));
        assert_eq!(raw(Instruction::state_local(opcode::STLOC)), (0xFE0E, 9, 0));
        assert_eq!(
            raw(Instruction::return_local(opcode::LDLOC)),
            (0xFE0C, 10, 0)
        );
        assert_eq!(raw(Instruction::method_id()), (0x20, 11, 0));
        assert_eq!(raw(Instruction::module_id()), (0x21, 12, 0));
    }
}

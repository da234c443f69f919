//! Instruction builders that pick the shortest encoding for the operand.

use super::packed::Slot;
use super::{InstrId, Instruction, Operand};
use crate::opcode::OpCode;

/// Picks among the macro form (`ldarg.0`..`ldarg.3`), the short form and the long form.
fn var_form(index: u16, macros: &[OpCode], short: OpCode, long: OpCode) -> Instruction {
    match var_choice(index, macros, short, long) {
        (op, None) => Instruction::simple(op),
        (op, Some(index)) => Instruction::new(op, Operand::Var(index)),
    }
}

/// The opcode [`var_form`] picks, and the index operand unless it is a macro form.
#[inline(always)]
fn var_choice(index: u16, macros: &[OpCode], short: OpCode, long: OpCode) -> (OpCode, Option<u16>) {
    match macros.get(index as usize) {
        Some(&op) => (op, None),
        None if index <= 0xFF => (short, Some(index)),
        None => (long, Some(index)),
    }
}

/// The opcode [`Instruction::ldc_i4`] picks, and its operand unless it is a macro form.
#[inline(always)]
fn ldc_i4_choice(value: i32) -> (OpCode, Option<i32>) {
    use OpCode::*;
    const MACROS: [OpCode; 10] = [
        LdcI4M1, LdcI40, LdcI41, LdcI42, LdcI43, LdcI44, LdcI45, LdcI46, LdcI47, LdcI48,
    ];
    match value {
        -1..=8 => (MACROS[(value + 1) as usize], None),
        -128..=127 => (LdcI4S, Some(value)),
        _ => (LdcI4, Some(value)),
    }
}

/// The stored forms ([`Slot`]s, with the bits [`super::packed::operand_bits`] gives) of
/// what some of the builders of [`Instruction`] build, computed along with the choice of
/// form rather than by a dispatch on the operand's kind afterwards: for code injected
/// into every body.
pub(crate) mod stored {
    use super::{OpCode, Slot, ldc_i4_choice, var_choice};

    /// [`super::Instruction::ldloc`], stored.
    #[inline]
    pub(crate) fn ldloc(index: u16) -> Slot {
        use OpCode::*;
        var(var_choice(
            index,
            &[Ldloc0, Ldloc1, Ldloc2, Ldloc3],
            LdlocS,
            Ldloc,
        ))
    }

    /// [`super::Instruction::stloc`], stored.
    #[inline]
    pub(crate) fn stloc(index: u16) -> Slot {
        use OpCode::*;
        var(var_choice(
            index,
            &[Stloc0, Stloc1, Stloc2, Stloc3],
            StlocS,
            Stloc,
        ))
    }

    /// [`super::Instruction::ldloca`], stored.
    #[inline]
    pub(crate) fn ldloca(index: u16) -> Slot {
        use OpCode::*;
        var(var_choice(index, &[], LdlocaS, Ldloca))
    }

    /// [`super::Instruction::ldc_i4`], stored (`ldc.i4.s` keeps its operand's byte).
    #[inline]
    pub(crate) fn ldc_i4(value: i32) -> Slot {
        let (op, operand) = ldc_i4_choice(value);
        let bits = match (op, operand) {
            (_, None) => 0,
            (OpCode::LdcI4S, Some(v)) => u64::from(v as i8 as u8),
            (_, Some(v)) => u64::from(v as u32),
        };
        Slot::new(op, bits)
    }

    fn var((op, index): (OpCode, Option<u16>)) -> Slot {
        Slot::new(op, index.map_or(0, u64::from))
    }
}

impl Instruction {
    /// `ldarg` in its shortest form.
    pub fn ldarg(index: u16) -> Self {
        use OpCode::*;
        var_form(index, &[Ldarg0, Ldarg1, Ldarg2, Ldarg3], LdargS, Ldarg)
    }

    /// `ldarga` in its shortest form.
    pub fn ldarga(index: u16) -> Self {
        var_form(index, &[], OpCode::LdargaS, OpCode::Ldarga)
    }

    /// `starg` in its shortest form.
    pub fn starg(index: u16) -> Self {
        var_form(index, &[], OpCode::StargS, OpCode::Starg)
    }

    /// `ldloc` in its shortest form.
    pub fn ldloc(index: u16) -> Self {
        use OpCode::*;
        var_form(index, &[Ldloc0, Ldloc1, Ldloc2, Ldloc3], LdlocS, Ldloc)
    }

    /// `ldloca` in its shortest form.
    pub fn ldloca(index: u16) -> Self {
        var_form(index, &[], OpCode::LdlocaS, OpCode::Ldloca)
    }

    /// `stloc` in its shortest form.
    pub fn stloc(index: u16) -> Self {
        use OpCode::*;
        var_form(index, &[Stloc0, Stloc1, Stloc2, Stloc3], StlocS, Stloc)
    }

    /// `ldc.i4` in its shortest form (`ldc.i4.m1`..`ldc.i4.8`, `ldc.i4.s`, `ldc.i4`).
    pub fn ldc_i4(value: i32) -> Self {
        match ldc_i4_choice(value) {
            (op, None) => Instruction::simple(op),
            (op, Some(value)) => Instruction::new(op, Operand::Int(value)),
        }
    }

    /// `ldc.i8`.
    pub fn ldc_i8(value: i64) -> Self {
        Instruction::new(OpCode::LdcI8, Operand::Long(value))
    }

    /// `ldc.r4`.
    pub fn ldc_r4(value: f32) -> Self {
        Instruction::new(OpCode::LdcR4, Operand::Float32(value.to_bits()))
    }

    /// `ldc.r8`.
    pub fn ldc_r8(value: f64) -> Self {
        Instruction::new(OpCode::LdcR8, Operand::Float64(value.to_bits()))
    }

    /// A branch to `target` in its short form; the encoder widens it if the target is out
    /// of `int8` range. `opcode` may be either form of any branch, including `leave`.
    pub fn branch(opcode: OpCode, target: InstrId) -> Self {
        let short = opcode.short_form().unwrap_or(opcode);
        debug_assert!(short.is_branch(), "{opcode} is not a branch");
        Instruction::new(short, Operand::Target(target))
    }

    /// An instruction with a metadata-token operand (`call`, `ldstr`, `box`, ...).
    pub fn with_token(opcode: OpCode, token: u32) -> Self {
        Instruction::new(opcode, Operand::Token(token))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::packed::stored as pack;

    /// The stored builders give what packing the built instruction gives, for every
    /// form (macro, short, long) of every value range.
    #[test]
    fn stored_builders_are_the_packed_instructions() {
        for index in (0..=600u16).chain([0x7FFF, u16::MAX]) {
            assert_eq!(Some(stored::ldloc(index)), pack(&Instruction::ldloc(index)));
            assert_eq!(Some(stored::stloc(index)), pack(&Instruction::stloc(index)));
        }
        let values = (-300..=300).chain([i32::MIN, i32::MAX, 0x0600_0001, -0x0600_0001]);
        for value in values {
            assert_eq!(
                Some(stored::ldc_i4(value)),
                pack(&Instruction::ldc_i4(value))
            );
        }
        for token in [0, 0x0A00_0001, 0x0AFF_FFF0, u32::MAX] {
            for op in [
                OpCode::Call,
                OpCode::Callvirt,
                OpCode::Ldstr,
                OpCode::Newobj,
            ] {
                let built = Instruction::with_token(op, token);
                assert_eq!(Some(Slot::new(op, u64::from(token))), pack(&built));
            }
        }
    }
}

//! Instruction builders that pick the shortest encoding for the operand.
#![forbid(unsafe_code)]

use super::{InstrId, Instruction, Operand};
use crate::opcode::OpCode;

/// Picks among the macro form (`ldarg.0`..`ldarg.3`), the short form and the long form.
fn var_form(index: u16, macros: &[OpCode], short: OpCode, long: OpCode) -> Instruction {
    match macros.get(index as usize) {
        Some(&op) => Instruction::simple(op),
        None if index <= 0xFF => Instruction::new(short, Operand::Var(index)),
        None => Instruction::new(long, Operand::Var(index)),
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
        use OpCode::*;
        const MACROS: [OpCode; 10] = [
            LdcI4M1, LdcI40, LdcI41, LdcI42, LdcI43, LdcI44, LdcI45, LdcI46, LdcI47, LdcI48,
        ];
        match value {
            -1..=8 => Instruction::simple(MACROS[(value + 1) as usize]),
            -128..=127 => Instruction::new(LdcI4S, Operand::Int(value)),
            _ => Instruction::new(LdcI4, Operand::Int(value)),
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

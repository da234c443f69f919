//! The editable instruction graph: an arena of instructions ordered by links.
//!
//! Branch and switch operands hold [`InstrId`]s, never offsets, so inserting or removing
//! code never invalidates them. Editing operations that must also keep exception-handling
//! regions consistent live on [`crate::MethodBody`].
//!
//! # Layout
//!
//! Dependencies run one way, from the lower modules to the higher ones:
//!
//! 1. `instr`: the instruction types ([`InstrId`], [`Instruction`], [`Operand`],
//!    [`SwitchTargets`]); needs only [`crate::opcode`].
//! 2. `packed`: the stored form of an instruction (a slot of opcode and operand bits).
//! 3. `list`: the arena, [`InstrList`], which stores packed instructions.
//! 4. `build`: the builders of [`Instruction`] that pick the shortest form.
//!
//! This module itself defines [`Incoming`]. The graph depends on nothing of the crate
//! but the opcode table; [`crate::body`] (whose `edit` module holds the checked edits of
//! a [`crate::MethodBody`]), [`crate::analysis`] and [`crate::transform`] build on it.

pub(crate) mod build;
mod instr;
mod list;
pub(crate) mod packed;

pub use instr::{InstrId, Instruction, Operand, SwitchTargets};
pub use list::{Ids, InstrList, Iter};

pub(crate) use list::FlatAppend;

/// What happens to references (branch targets, EH region starts) that name the
/// instruction before which new code is inserted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Incoming {
    /// They keep naming the old instruction: branches jump over the new code, and regions
    /// starting at the old instruction do not include it. This is what a method prologue
    /// needs when a loop branches back to the first instruction.
    Keep,
    /// They name the first inserted instruction instead: every path that reached the old
    /// instruction now runs the new code first, and regions starting at the old instruction
    /// start at the new code. This is what single-ret needs before a `ret`. Branches in
    /// the inserted code itself keep their targets (a branch to the old instruction
    /// skips the rest of the new code).
    Redirect,
}

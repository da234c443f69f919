//! The editable instruction graph: an arena of instructions ordered by links.
//!
//! Branch and switch operands hold [`InstrId`]s, never offsets, so inserting or removing
//! code never invalidates them. Editing operations that must also keep exception-handling
//! regions consistent live on [`crate::MethodBody`].
#![forbid(unsafe_code)]

pub(crate) mod build;
mod instr;
mod list;
pub(crate) mod packed;

pub use instr::{InstrId, Instruction, Operand, SwitchTargets};
pub use list::{Ids, InstrList, Iter};

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

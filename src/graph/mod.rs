//! The editable instruction graph: an arena of instructions ordered by links.
//!
//! Branch and switch operands hold [`InstrId`]s, never offsets, so inserting or removing
//! code never invalidates them. Editing operations that must also keep exception-handling
//! regions consistent live on [`crate::MethodBody`].
#![forbid(unsafe_code)]

pub(crate) mod build;
mod edit;
mod list;
pub(crate) mod packed;

pub use edit::Incoming;

pub(crate) use list::FlatAppend;
pub use list::{Ids, InstrId, InstrList, Instruction, Iter, Operand, SwitchTargets};

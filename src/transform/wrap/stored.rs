//! The injected code in stored form ([`StoredCode`]), as [`crate::transform::Instrumenter`]
//! gives it, and the placing of its relative branches; the entry-only prologue.

use crate::body::MethodBody;
use crate::error::{Error, Result};
use crate::graph::packed::{Slot, instruction};
use crate::graph::{InstrId, Instruction, Operand};
use crate::transform::snippet::Fill;
use smallvec::SmallVec;

/// The entry, exit and epilogue code of a wrap in stored form, from a caller that builds
/// the same shapes for every body ([`super::wrap_stored`]): each slice holds the stored
/// forms ([`crate::graph::build::stored`]) of the instructions to inject, none of them
/// odd (checked). The one-pass wrap appends them without packing; the general path
/// rebuilds the instructions they store.
///
/// Branches in this code are relative, as [`crate::transform::snippet::relocate`] takes
/// them: a branch's bits are a position in its own slice, its length meaning the
/// instruction that follows the slice where it is placed (the try's first instruction
/// after the entry code, the `endfinally` after the exit code, the load or `ret` after
/// the epilogue code).
#[derive(Debug, Clone, Copy)]
pub(crate) struct StoredCode<'a> {
    /// The code run on entry ([`super::WrapOptions::entry`]), stored.
    pub entry: &'a [Slot],
    /// The code run in the finally handler ([`super::WrapOptions::exit`]), stored.
    pub exit: &'a [Slot],
    /// The code starting the epilogue, stored.
    pub epilogue: &'a [Slot],
    /// The code the `finally` runs instead of `exit` on a tail-call exit, stored; `None`
    /// to run `exit` there too. Used only with kept tail calls.
    pub tail_exit: Option<&'a [Slot]>,
    /// Whether any of the three has a branch (relative, see above).
    pub branches: bool,
    /// The values of the placeholders the three may hold (see [`Fill`]), filled in as
    /// they are placed.
    pub fill: Fill<'a>,
    /// Whether any of the three holds a placeholder.
    pub placeholders: bool,
}

/// Inserts the stored `entry` code (placeholders filled by `fill`, relative branches as
/// [`StoredCode`] documents them, the end meaning the first instruction) before the
/// first instruction, so that branches to it, and regions starting at it, do not run
/// the new code: entry-only instrumentation. Nothing else changes.
///
/// # Errors
/// [`Error::EmptyBody`] for a body without instructions; nothing is edited then.
pub(crate) fn prologue_stored(
    body: &mut MethodBody,
    entry: &[Slot],
    fill: &Fill<'_>,
) -> Result<()> {
    let first = body.instrs.first().ok_or(Error::EmptyBody)?;
    let code = placed(&unpack(entry, fill), body.instrs.arena_len() as u32, first);
    body.insert_all_before_keep_self_targeting(first, &code)?;
    Ok(())
}

/// The instructions stored in `slots`, their placeholders filled by `fill`.
pub(super) fn unpack(slots: &[Slot], fill: &Fill<'_>) -> SmallVec<[Instruction; 8]> {
    slots
        .iter()
        .map(|&slot| {
            let slot = fill.slot(slot);
            assert!(!slot.odd, "odd slots name a side table");
            instruction(slot.opcode, slot.bits)
        })
        .collect()
}

/// How the branches of injected code name their targets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Placement {
    /// By the ids of the body (as [`super::WrapOptions`] documents).
    Absolute,
    /// By positions in their own code, as [`StoredCode`] documents.
    Relative,
}

/// `code` with its relative branches made to name ids, placed with its first
/// instruction at id `base` and `end` following it.
pub(super) fn placed(code: &[Instruction], base: u32, end: InstrId) -> SmallVec<[Instruction; 8]> {
    let len = code.len() as u32;
    code.iter()
        .map(|&i| match i.operand {
            Operand::Target(t) => {
                Instruction::branch(i.opcode, if t.0 >= len { end } else { InstrId(base + t.0) })
            }
            _ => i,
        })
        .collect()
}

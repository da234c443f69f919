//! The refusals every wrap makes before its first edit, so that a refused body is left
//! exactly as it was.

use super::scan::CodeScan;
use crate::body::{ClauseKind, MethodBody};
use crate::error::{Error, Result};
use crate::graph::InstrId;
use crate::opcode::OpCode;

/// The refusals of [`super::wrap_try_finally`] and [`super::wrap_stored`] that do not
/// depend on the tail-call policy, all made before the first edit, so that a refused
/// body is left exactly as it was.
#[inline]
pub(super) fn refusals(body: &MethodBody, scan: &CodeScan) -> Result<()> {
    if body.instrs.is_empty() {
        return Err(Error::EmptyBody);
    }
    if scan.has_jmp {
        return Err(Error::Unsupported {
            what: "jmp cannot be placed inside a try block",
        });
    }
    if scan.tails.len() == body.instrs.len() {
        return Err(Error::Unsupported {
            what: "a body of nothing but tail. prefixes",
        });
    }
    // Each `tail.` is removed, which moves the branches to it and the regions starting
    // at it to the next instruction: in valid IL that is the call it prefixes, in the same
    // regions (a prefix and its instruction are one instruction).
    if body.clauses.is_empty() && scan.tails.is_empty() {
        return Ok(());
    }
    edit_refusals(body, scan)
}

/// The refusals of [`refusals`] that only bodies with clauses or `tail.` prefixes can
/// meet (the general path's bodies).
#[inline(never)]
fn edit_refusals(body: &MethodBody, scan: &CodeScan) -> Result<()> {
    // The edits keep a valid clause list valid; an invalid one would make one of them
    // fail half-way.
    if !body.clauses.is_empty() {
        body.validate_clauses()?;
    }
    if !scan.tails.iter().all(|&t| prefixes_a_call(body, t)) {
        return Err(Error::Unsupported {
            what: "a tail. prefix that is not followed by a call in its own regions",
        });
    }
    Ok(())
}

/// Whether the `tail.` prefix `t` is followed by `call`, `calli` or `callvirt` with no
/// region boundary between the two.
fn prefixes_a_call(body: &MethodBody, t: InstrId) -> bool {
    let Some(call) = body.instrs.next(t) else {
        return false;
    };
    matches!(
        body.instrs.opcode(call),
        OpCode::Call | OpCode::Calli | OpCode::Callvirt
    ) && body.clauses.iter().all(|c| {
        let filter = match c.kind {
            ClauseKind::Filter(f) => Some(f),
            _ => None,
        };
        c.try_last != t
            && c.handler_last != t
            && c.try_start != call
            && c.handler_start != call
            && filter != Some(call)
    })
}

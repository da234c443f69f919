//! Prologue and epilogue injection.

use crate::body::MethodBody;
use crate::error::{Error, Result};
use crate::graph::{Incoming, InstrId, Instruction};
use smallvec::SmallVec;

/// Inserts `code` before the first instruction. Branches to the first instruction (a loop
/// jumping back to offset 0) keep going to it, so the prologue runs once per call; regions
/// starting at the first instruction do not include the prologue. Returns the new ids.
///
/// # Errors
/// The errors of [`MethodBody::insert_all_before`]: [`Error::NotInBody`] for a branch
/// of `code` to an instruction not in the body, [`Error::BadEhNesting`] when code
/// before a filter's handler would make the filter overlap another region.
pub fn inject_prologue(
    body: &mut MethodBody,
    code: &[Instruction],
) -> Result<SmallVec<[InstrId; 8]>> {
    match body.instrs.first() {
        Some(first) => body.insert_all_before(first, code, Incoming::Keep),
        None => Ok(code.iter().map(|&i| body.append(i)).collect()),
    }
}

/// Inserts `code` before `epilogue` (from [`super::single_ret`]) so that every jump to
/// the epilogue runs it first. The stack is as it was at the original `ret`s minus the
/// return value, which is in the return-value local.
///
/// # Errors
/// [`Error::NotInBody`] when `epilogue` or a branch target of `code` is not an
/// instruction of the body.
pub fn inject_epilogue(
    body: &mut MethodBody,
    epilogue: InstrId,
    code: &[Instruction],
) -> Result<SmallVec<[InstrId; 8]>> {
    if code.is_empty() {
        return Ok(SmallVec::new());
    }
    if !body.instrs.contains(epilogue) {
        return Err(Error::NotInBody {
            id: epilogue.0,
            what: "epilogue",
        });
    }
    body.insert_all_before(epilogue, code, Incoming::Redirect)
}

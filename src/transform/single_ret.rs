//! Single-ret: every `ret` becomes a jump to one epilogue at the end of the method.

use super::returns::Returns;
use crate::body::{ClauseKind, MethodBody};
use crate::error::{Error, Result};
use crate::graph::{InstrId, Instruction};
use crate::opcode::OpCode;
use smallvec::SmallVec;

/// The result of [`single_ret`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SingleRet {
    /// First instruction of the epilogue (`ldloc` or `ret`). Code inserted before it with
    /// [`crate::graph::Incoming::Redirect`] runs on every normal exit.
    pub epilogue: InstrId,
    /// The epilogue's `ret`.
    pub ret: InstrId,
    /// How many `ret`s were rewritten into jumps.
    pub rewritten: usize,
    /// How many of them became `leave` because they were inside a try or catch handler.
    pub leaves: usize,
    /// `tail.`-prefixed call + `ret` sequences left intact (they still return directly).
    pub tail_calls_kept: usize,
}

/// Rewrites `body` so that every `ret` (except those completing a `tail.` call) jumps to
/// one epilogue appended at the end, outside every exception region.
///
/// Each `ret` keeps its id: with [`Returns::Value`] it becomes `stloc local` followed by a
/// jump, with [`Returns::Void`] it becomes the jump itself. Branches that targeted a `ret`
/// therefore land on code that completes the return. Inside a try block or a catch/filter
/// handler the jump is a `leave`; elsewhere a `br`. A `ret` inside a finally, fault or
/// filter block is invalid IL (ECMA-335 III.3.56) and is refused.
///
/// # Errors
/// [`Error::Unsupported`] for a `ret` inside a finally, fault or filter block; the
/// body is then left as it was.
pub fn single_ret(body: &mut MethodBody, returns: Returns) -> Result<SingleRet> {
    rewrite_rets(body, returns, false)
}

/// The shared implementation; `all_protected` makes every jump a `leave` (used when the
/// whole body is about to be wrapped in a try block).
pub(crate) fn rewrite_rets(
    body: &mut MethodBody,
    returns: Returns,
    all_protected: bool,
) -> Result<SingleRet> {
    let rets: SmallVec<[InstrId; 8]> = body
        .instrs
        .iter()
        .filter(|(_, i)| i.opcode == OpCode::Ret)
        .map(|(id, _)| id)
        .collect();
    rewrite_rets_at(body, returns, all_protected, &rets, &[])
}

/// [`rewrite_rets`] given the body's `ret`s in list order (every one of them, and nothing
/// else), for callers that already walked the code. A non-empty `epilogue_code` is placed
/// at the start of the appended epilogue, so every rewritten `ret` jumps to it (what
/// [`super::inject_epilogue`] does afterwards, without its O(code) redirection); the
/// returned `epilogue` is then its first instruction.
pub(crate) fn rewrite_rets_at(
    body: &mut MethodBody,
    returns: Returns,
    all_protected: bool,
    rets: &[InstrId],
    epilogue_code: &[Instruction],
) -> Result<SingleRet> {
    let protection = Protection::of(body);

    // Check everything before editing, so a refusal leaves the body untouched.
    let mut tail_calls_kept = 0;
    let mut to_rewrite: SmallVec<[(InstrId, bool); 8]> = SmallVec::with_capacity(rets.len());
    for &ret in rets {
        if !all_protected && completes_tail_call(body, ret) {
            tail_calls_kept += 1;
            continue;
        }
        match protection.at(ret) {
            Region::FinallyOrFault | Region::Filter => {
                return Err(Error::Unsupported {
                    what: "ret inside a finally, fault or filter block (invalid IL)",
                });
            }
            Region::Protected => to_rewrite.push((ret, true)),
            Region::None => to_rewrite.push((ret, all_protected)),
        }
    }

    // A void method whose code ends with a plain `ret` keeps that `ret` as its epilogue.
    let reusable = match (returns, to_rewrite.last()) {
        (Returns::Void, Some(&(last, false)))
            if epilogue_code.is_empty() && body.instrs.last() == Some(last) =>
        {
            Some(last)
        }
        _ => None,
    };
    let (epilogue, ret) = match (returns, reusable) {
        (_, Some(last)) => {
            to_rewrite.pop();
            (last, last)
        }
        (Returns::Void, None) => {
            let code = append_all(body, epilogue_code);
            let ret = body.append(Instruction::simple(OpCode::Ret));
            (code.unwrap_or(ret), ret)
        }
        (Returns::Value { local }, None) => {
            let code = append_all(body, epilogue_code);
            let load = body.append(Instruction::ldloc(local));
            (
                code.unwrap_or(load),
                body.append(Instruction::simple(OpCode::Ret)),
            )
        }
    };

    // Every `at` is a linked `ret` and every new instruction's only target is the
    // epilogue just appended, so the checks of `replace` and `insert_after` hold; without
    // clauses no inserted jump can join a filter either. The list is edited directly.
    let no_clauses = body.clauses.is_empty();
    let mut leaves = 0;
    for &(at, leave) in &to_rewrite {
        let jump = Instruction::branch(if leave { OpCode::Leave } else { OpCode::Br }, epilogue);
        leaves += usize::from(leave);
        match returns {
            Returns::Void => body.instrs.set(at, jump),
            Returns::Value { local } => {
                body.instrs.set(at, Instruction::stloc(local));
                // A `br` straight into the epilogue is dead weight; a `leave` is not.
                if leave || body.instrs.next(at) != Some(epilogue) {
                    if no_clauses {
                        body.instrs.link_after(at, jump);
                        continue;
                    }
                    let jump = body.insert_after(at, jump)?;
                    // The jump completes the `ret` it replaces, so it belongs to every
                    // region the `ret` ended (a try must end with its `leave`).
                    for c in &mut body.clauses {
                        if c.try_last == at {
                            c.try_last = jump;
                        }
                        if c.handler_last == at {
                            c.handler_last = jump;
                        }
                    }
                }
            }
        }
    }
    Ok(SingleRet {
        epilogue,
        ret,
        rewritten: to_rewrite.len(),
        leaves,
        tail_calls_kept,
    })
}

/// Appends `code`; returns the first new id, if any.
fn append_all(body: &mut MethodBody, code: &[Instruction]) -> Option<InstrId> {
    let mut first = None;
    for &i in code {
        let id = body.append(i);
        first.get_or_insert(id);
    }
    first
}

/// Whether `ret` directly follows a `tail.`-prefixed call.
fn completes_tail_call(body: &MethodBody, ret: InstrId) -> bool {
    let Some(call) = body.instrs.prev(ret) else {
        return false;
    };
    if !matches!(
        body.instrs.opcode(call),
        OpCode::Call | OpCode::Callvirt | OpCode::Calli
    ) {
        return false;
    }
    // Prefixes may be stacked (e.g. `tail. constrained.` is not legal, but `tail.` after
    // `readonly.`-style chains is handled generally).
    let mut cur = body.instrs.prev(call);
    while let Some(p) = cur {
        let op = body.instrs.opcode(p);
        if op == OpCode::Tail {
            return true;
        }
        if !op.is_prefix() {
            return false;
        }
        cur = body.instrs.prev(p);
    }
    false
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Region {
    None,
    /// In a try block or a catch/filter handler: `leave` is the way out.
    Protected,
    FinallyOrFault,
    Filter,
}

/// Which kind of region encloses each instruction (innermost wins by severity). Empty
/// (no allocation) for bodies without clauses: everything is [`Region::None`].
struct Protection {
    region: Vec<Region>,
}

impl Protection {
    fn of(body: &MethodBody) -> Protection {
        Self::marked(body, body.instrs.as_flat_slice().is_some())
    }

    /// The regions, each marked by index ranges when `flat` (the list order is the arena
    /// order), else by a walk along the links.
    fn marked(body: &MethodBody, flat: bool) -> Protection {
        if body.clauses.is_empty() {
            return Protection { region: Vec::new() };
        }
        let mut region = vec![Region::None; body.instrs.arena_len()];
        let mark = |region: &mut Vec<Region>, first: InstrId, stop: Option<InstrId>, r| {
            let set = |slot: &mut Region| {
                if *slot == Region::None || *slot == Region::Protected {
                    *slot = r;
                }
            };
            if flat && first.index() < region.len() {
                // The order is the arena order: from `first` up to `stop`, or to the end
                // if `stop` is not after it (where the walk below goes). An id that is
                // not of the list is left to the walk (which panics on it, as indexing).
                let end = match stop {
                    Some(stop) if stop >= first => stop.index().min(region.len()),
                    _ => region.len(),
                };
                region[first.index()..end].iter_mut().for_each(set);
                return;
            }
            let mut cur = Some(first);
            while let Some(id) = cur {
                if Some(id) == stop {
                    break;
                }
                set(&mut region[id.index()]);
                cur = body.instrs.next(id);
            }
        };
        for c in &body.clauses {
            mark(
                &mut region,
                c.try_start,
                body.instrs.next(c.try_last),
                Region::Protected,
            );
            let handler = match c.kind {
                ClauseKind::Finally | ClauseKind::Fault => Region::FinallyOrFault,
                _ => Region::Protected,
            };
            mark(
                &mut region,
                c.handler_start,
                body.instrs.next(c.handler_last),
                handler,
            );
            if let ClauseKind::Filter(f) = c.kind {
                mark(&mut region, f, Some(c.handler_start), Region::Filter);
            }
        }
        Protection { region }
    }

    fn at(&self, id: InstrId) -> Region {
        self.region.get(id.index()).copied().unwrap_or(Region::None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::ExceptionClause;
    use crate::graph::Instruction;

    /// On a list in arena order, marking regions by index ranges gives what the walk
    /// along the links gives, for every kind of clause, nested, overlapping, empty,
    /// reversed (a stop before the start: the walk runs to the end) and touching the end.
    #[test]
    fn flat_marking_is_the_walk() {
        let mut seed = 0x9E37_79B9u64;
        let mut next = |m: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % m) as u32
        };
        let mut checked = 0;
        for len in 1..20u32 {
            for _ in 0..200 {
                let mut body = MethodBody::new();
                for _ in 0..len {
                    body.append(Instruction::simple(OpCode::Nop));
                }
                for _ in 0..1 + next(3) {
                    let kind = match next(4) {
                        0 => ClauseKind::Finally,
                        1 => ClauseKind::Fault,
                        2 => ClauseKind::Catch(0x0100_0001),
                        _ => ClauseKind::Filter(InstrId(next(u64::from(len)))),
                    };
                    let mut id = || InstrId(next(u64::from(len)));
                    let clause = ExceptionClause::new(kind, id(), id(), id(), id());
                    body.clauses.push(clause);
                }
                assert!(body.instrs.as_flat_slice().is_some());
                let (ranges, walk) = (
                    Protection::marked(&body, true),
                    Protection::marked(&body, false),
                );
                assert_eq!(ranges.region, walk.region, "{:?}", body.clauses);
                checked += 1;
            }
        }
        assert!(checked > 3000);
    }
}

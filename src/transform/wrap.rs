//! Wrapping a whole method body in try/finally (and optionally try/catch/rethrow), the
//! shape APM agents use for method entry/exit instrumentation.
#![forbid(unsafe_code)]

use super::single_ret::{Returns, rewrite_rets_at};
use crate::body::{ClauseKind, ExceptionClause, MethodBody};
use crate::graph::{Incoming, InstrId, InstrList, Instruction};
use crate::opcode::OpCode;
use crate::{Error, Result};
use smallvec::SmallVec;

/// A catch handler that runs `code` and rethrows.
#[derive(Debug, Clone, Copy)]
pub struct CatchRethrow<'a> {
    /// Type token of the exceptions to catch (e.g. a TypeRef to `System.Exception`).
    pub type_token: u32,
    /// Code run with the exception object on the stack; it must consume it (store it,
    /// pass it to a call, or `pop` it). If empty, a `pop` is generated.
    pub code: &'a [Instruction],
}

/// What to inject around the body.
#[derive(Debug, Clone, Copy)]
pub struct WrapOptions<'a> {
    /// What the method returns (see [`Returns`]).
    pub returns: Returns,
    /// Code run on entry, before the try block; must leave the stack empty.
    pub entry: &'a [Instruction],
    /// Code run in the finally handler, on every exit; must leave the stack empty. With
    /// [`Returns::Value`] it can read the return value from the local (it holds the
    /// default value if an exception is propagating).
    pub exit: &'a [Instruction],
    /// An optional catch-and-rethrow handler around the original body, inside the finally.
    pub catch: Option<CatchRethrow<'a>>,
}

/// Where the pieces of a wrapped body are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wrapped {
    /// First instruction of the original body (start of the try block).
    pub try_start: InstrId,
    /// First instruction of the finally handler.
    pub finally_start: InstrId,
    /// First instruction of the catch handler, if one was requested.
    pub catch_start: Option<InstrId>,
    /// First instruction of the epilogue after the handlers.
    pub epilogue: InstrId,
    /// `tail.` prefixes removed (a tail call cannot leave a try block).
    pub tail_prefixes_removed: usize,
}

/// Wraps the body:
///
/// ```text
///       <entry>
///       .try {
///         [.try {]  <original body, every ret -> (stloc r;) leave EPI>
///         [} catch T { <catch code> rethrow }]
///       } finally { <exit> endfinally }
/// EPI:  [ldloc r] ret
/// ```
///
/// Branches back to the first original instruction stay inside the try (the entry code
/// runs once). `tail.` prefixes are removed, since a tail call cannot leave a protected
/// region. The max stack is not recomputed here; run the stack analysis afterwards.
pub fn wrap_try_finally(body: &mut MethodBody, opts: &WrapOptions<'_>) -> Result<Wrapped> {
    let scan = CodeScan::of(&body.instrs);
    wrap_scanned(body, opts, &scan, &[])
}

/// The instructions [`wrap_try_finally`] edits, found in one walk over the code.
#[derive(Debug, Default)]
pub(crate) struct CodeScan {
    /// `tail.` prefixes, in list order.
    pub tails: SmallVec<[InstrId; 4]>,
    /// `ret`s, in list order.
    pub rets: SmallVec<[InstrId; 8]>,
    /// Whether there is a `jmp`, which cannot sit inside a try block.
    pub has_jmp: bool,
}

impl CodeScan {
    /// Scans the whole list, in list order.
    pub(crate) fn of(list: &InstrList) -> CodeScan {
        let mut scan = CodeScan::default();
        match list.as_flat_slice() {
            // A decoded list: a tight loop over the slots, almost every one of them
            // rejected by one test.
            Some(slots) => {
                for (i, slot) in slots.iter().enumerate() {
                    if matches!(slot.opcode, OpCode::Tail | OpCode::Ret | OpCode::Jmp) {
                        scan.see(InstrId(i as u32), slot.opcode);
                    }
                }
            }
            None => {
                for (id, opcode) in list.opcodes() {
                    scan.see(id, opcode);
                }
            }
        }
        scan
    }

    /// Records instruction `id` with `opcode`; call in list order for every instruction.
    #[inline]
    pub(crate) fn see(&mut self, id: InstrId, opcode: OpCode) {
        match opcode {
            OpCode::Tail => self.tails.push(id),
            OpCode::Ret => self.rets.push(id),
            OpCode::Jmp => self.has_jmp = true,
            _ => {}
        }
    }
}

/// [`wrap_try_finally`] given a [`CodeScan`] of the whole body as it is, and code to run
/// on the normal exit path: a non-empty `epilogue_code` starts the epilogue (the returned
/// `epilogue` is its first instruction), as if [`super::inject_epilogue`] had been
/// called with the usual epilogue, without that call's O(code) branch redirection.
pub(crate) fn wrap_scanned(
    body: &mut MethodBody,
    opts: &WrapOptions<'_>,
    scan: &CodeScan,
    epilogue_code: &[Instruction],
) -> Result<Wrapped> {
    // Every refusal happens here, before the first edit, so that a refused body is
    // left exactly as it was.
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
    // The `ret`s first: `rewrite_rets_at` checks all of them before it edits anything.
    let single = rewrite_rets_at(body, opts.returns, true, &scan.rets, epilogue_code)?;
    // Then the `tail.` prefixes (a tail call cannot leave a protected region). None of
    // them is the epilogue, which was just appended, so the try keeps an instruction.
    let tails = &scan.tails;
    for &t in tails {
        body.remove(t)?;
    }
    let nothing_left = || Error::Unsupported {
        what: "nothing left to wrap",
    };
    let try_start = body.instrs.first().ok_or_else(nothing_left)?;
    let try_last = body.instrs.prev(single.epilogue).ok_or_else(nothing_left)?;
    if try_start == single.epilogue {
        return Err(nothing_left());
    }

    let mut catch_start = None;
    let mut inner_last = try_last;
    if let Some(catch) = &opts.catch {
        let mut code: SmallVec<[Instruction; 8]> = SmallVec::from_slice(catch.code);
        if code.is_empty() {
            code.push(Instruction::simple(OpCode::Pop));
        }
        code.push(Instruction::simple(OpCode::Rethrow));
        let ids = body.insert_all_before(single.epilogue, &code, Incoming::Keep)?;
        let (first, last) = (ids[0], ids[ids.len() - 1]);
        body.add_clause(ExceptionClause::new(
            ClauseKind::Catch(catch.type_token),
            try_start,
            try_last,
            first,
            last,
        ))?;
        catch_start = Some(first);
        inner_last = last;
    }

    let mut exit: SmallVec<[Instruction; 8]> = SmallVec::from_slice(opts.exit);
    exit.push(Instruction::simple(OpCode::Endfinally));
    let ids = body.insert_all_before_keep(single.epilogue, &exit)?;
    let (finally_start, finally_last) = (InstrId(ids.start), InstrId(ids.end - 1));
    let finally = ExceptionClause::new(
        ClauseKind::Finally,
        try_start,
        inner_last,
        finally_start,
        finally_last,
    );
    // The usual case, a body without clauses: the try runs from the first instruction to
    // right before the handler, which ends right before the epilogue. Checked in O(1),
    // these make a valid lone clause, so the O(code) placement search is not needed.
    let lone_and_adjacent = body.clauses.is_empty()
        && body.instrs.first() == Some(try_start)
        && body.instrs.next(inner_last) == Some(finally_start)
        && body.instrs.next(finally_last) == Some(single.epilogue);
    if lone_and_adjacent {
        body.clauses.push(finally);
    } else {
        body.add_clause(finally)?;
    }

    // `inject_prologue`: the first instruction is still the try's first.
    body.insert_all_before_keep(try_start, opts.entry)?;
    body.force_fat_header();
    Ok(Wrapped {
        try_start,
        finally_start,
        catch_start,
        epilogue: single.epilogue,
        tail_prefixes_removed: tails.len(),
    })
}

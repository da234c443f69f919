//! Wrapping a whole method body in try/finally (and optionally try/catch/rethrow), the
//! shape APM agents use for method entry/exit instrumentation.
#![forbid(unsafe_code)]

use super::single_ret::{Returns, rewrite_rets_at};
use crate::body::{ClauseKind, ExceptionClause, MethodBody};
use crate::graph::packed::Slot;
use crate::graph::{Incoming, InstrId, InstrList, Instruction, Operand};
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
                // One table load and one (almost never taken) branch per slot.
                const SEEN: [bool; 256] = {
                    let mut t = [false; 256];
                    t[OpCode::Tail as usize] = true;
                    t[OpCode::Ret as usize] = true;
                    t[OpCode::Jmp as usize] = true;
                    t
                };
                for (i, slot) in slots.iter().enumerate() {
                    if SEEN[slot.opcode as usize] {
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
    if let Some(wrapped) = wrap_flat(body, opts, scan, epilogue_code) {
        return Ok(wrapped);
    }
    wrap_linked(body, opts, scan, epilogue_code)
}

/// [`wrap_scanned`] (after its refusals) for the usual body, all at once: a list in its
/// decoded order (flat storage), no clauses, no `tail.`, no catch handler, and entry and
/// exit code without branches. `None`, with nothing edited, for any other body.
///
/// The result is the one [`wrap_linked`] gives, id for id: its edits cannot fail on such
/// a body (every `ret` is unprotected and becomes `leave`, no check of the inserted code
/// can fail, no region exists to be joined), so the new instructions are appended in the
/// order it allocates them, the `ret`s are stored over in that order too, and the final
/// order is set in one pass instead of by a link per insertion.
fn wrap_flat(
    body: &mut MethodBody,
    opts: &WrapOptions<'_>,
    scan: &CodeScan,
    epilogue_code: &[Instruction],
) -> Option<Wrapped> {
    let branches = |code: &[Instruction]| {
        code.iter()
            .any(|i| matches!(i.operand, Operand::Target(_) | Operand::Switch(_)))
    };
    let n = body.instrs.as_flat_slice()?.len() as u32;
    if n == 0
        || !body.clauses.is_empty()
        || !scan.tails.is_empty()
        || opts.catch.is_some()
        || branches(opts.entry)
        || branches(opts.exit)
    {
        return None;
    }
    // Every `ret` becomes a `leave` to the epilogue (the first new id), after storing
    // the value if any: the `leave` is then a new instruction right after it.
    let epilogue = InstrId(n);
    let jump = Instruction::branch(OpCode::Leave, epilogue);
    for &ret in &scan.rets {
        let instr = match opts.returns {
            Returns::Void => jump,
            Returns::Value { local } => Instruction::stloc(local),
        };
        body.instrs.set(ret, instr);
    }
    // The new instructions in the order `wrap_linked` allocates them (the `ret`s stored
    // over above are never odd instructions, so the side table fills up the same way):
    // the epilogue as `rewrite_rets_at` appends it, a `leave` per `ret` when a value is
    // stored first, the finally handler, the entry code.
    let (load, leaves) = match opts.returns {
        Returns::Void => (None, 0),
        Returns::Value { local } => (Some(Instruction::ldloc(local)), scan.rets.len()),
    };
    let after_epilogue = n + (epilogue_code.len() + usize::from(load.is_some()) + 1) as u32;
    let finally_start = after_epilogue + leaves as u32;
    let entry_start = finally_start + opts.exit.len() as u32 + 1;
    // A few simple runs rather than one chain, so that each loop gets the packing inlined.
    // The instructions made here go in their stored form directly (the slots `pack` would
    // give them: none has an operand of another width).
    let stored = |i: Instruction| {
        let bits = match i.operand {
            Operand::Var(v) => u64::from(v),
            Operand::Target(t) => u64::from(t.0),
            _ => 0,
        };
        Slot::new(i.opcode, bits)
    };
    let list = &mut body.instrs;
    list.push_all(epilogue_code.iter().copied());
    list.push_slots(
        load.map(stored)
            .into_iter()
            .chain([stored(Instruction::simple(OpCode::Ret))])
            .chain(std::iter::repeat_n(stored(jump), leaves)),
    );
    list.push_all(opts.exit.iter().copied());
    list.push_slots([stored(Instruction::simple(OpCode::Endfinally))]);
    let end = list.push_all(opts.entry.iter().copied()).end;
    // The order: entry code, the original code with each `leave` right after its `ret`,
    // the finally handler, the epilogue.
    let rets = &scan.rets[..leaves];
    let starts = std::iter::once(0).chain(rets.iter().map(|r| r.0 + 1));
    let original = starts.zip(rets).enumerate().flat_map(|(i, (start, ret))| {
        let leave = after_epilogue + i as u32;
        [start..ret.0 + 1, leave..leave + 1]
    });
    let rest = rets.last().map_or(0, |r| r.0 + 1)..n;
    body.instrs
        .link_in_order(std::iter::once(entry_start..end).chain(original).chain([
            rest,
            finally_start..entry_start,
            n..after_epilogue,
        ]));
    let try_last = match rets.last() {
        Some(&ret) if ret.0 == n - 1 => InstrId(after_epilogue + leaves as u32 - 1),
        _ => InstrId(n - 1),
    };
    let try_start = InstrId(0);
    body.clauses.push(ExceptionClause::new(
        ClauseKind::Finally,
        try_start,
        try_last,
        InstrId(finally_start),
        InstrId(entry_start - 1),
    ));
    body.force_fat_header();
    Some(Wrapped {
        try_start,
        finally_start: InstrId(finally_start),
        catch_start: None,
        epilogue,
        tail_prefixes_removed: 0,
    })
}

/// The general path of [`wrap_scanned`], edit by edit (after its refusals).
fn wrap_linked(
    body: &mut MethodBody,
    opts: &WrapOptions<'_>,
    scan: &CodeScan,
    epilogue_code: &[Instruction],
) -> Result<Wrapped> {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A flat body of `len` pseudo-random instructions (some `ret`s, branches, an odd
    /// instruction now and then).
    fn body(seed: &mut u64, len: u32) -> MethodBody {
        let mut next = || {
            *seed ^= *seed << 13;
            *seed ^= *seed >> 7;
            *seed ^= *seed << 17;
            *seed
        };
        let mut body = MethodBody::new();
        for _ in 0..len {
            let instr = match next() % 8 {
                0 | 1 => Instruction::simple(OpCode::Ret),
                2 => Instruction::branch(OpCode::Br, InstrId((next() % u64::from(len)) as u32)),
                3 => Instruction::new(OpCode::LdcI4S, Operand::Int(300)),
                4 => Instruction::with_token(OpCode::Call, 0x0A00_0001),
                5 => Instruction::ldc_i4(7),
                _ => Instruction::simple(OpCode::Nop),
            };
            body.append(instr);
        }
        body
    }

    /// The one-pass path gives what the edit-by-edit path gives, down to the ids, the
    /// arena, the links and the side tables, for every shape of return and of injected
    /// code.
    #[test]
    fn flat_wrap_is_the_linked_wrap_at_once() {
        let call = Instruction::with_token(OpCode::Call, 0x0AFF_FFF0);
        let odd = Instruction::new(OpCode::LdcI4S, Operand::Int(-1000));
        let codes: [&[Instruction]; 3] = [&[], &[Instruction::ldc_i4(5), call], &[odd, call]];
        let mut seed = 0x1234_5678_9ABC_DEF1u64;
        let mut checked = 0;
        for len in 1..24 {
            for _ in 0..20 {
                let original = body(&mut seed, len);
                let scan = CodeScan::of(&original.instrs);
                for returns in [Returns::Void, Returns::Value { local: 3 }] {
                    let epilogue: &[Instruction] = match returns {
                        Returns::Void => &[],
                        Returns::Value { local } => &[Instruction::ldloc(local), call],
                    };
                    for (entry, exit) in [(0, 1), (1, 1), (2, 0), (1, 2)] {
                        let opts = WrapOptions {
                            returns,
                            entry: codes[entry],
                            exit: codes[exit],
                            catch: None,
                        };
                        let (mut fast, mut slow) = (original.clone(), original.clone());
                        let a = wrap_flat(&mut fast, &opts, &scan, epilogue).expect("flat");
                        let b = wrap_linked(&mut slow, &opts, &scan, epilogue).expect("wraps");
                        assert_eq!(a, b);
                        assert_eq!(format!("{fast:?}"), format!("{slow:?}"));
                        checked += 1;
                    }
                }
            }
        }
        assert!(checked > 3000);
    }

    /// Bodies the one-pass path does not handle are left to the general path untouched.
    #[test]
    fn flat_wrap_declines_without_editing() {
        let mut seed = 99u64;
        let mut b = body(&mut seed, 6);
        let scan = CodeScan::of(&b.instrs);
        let branchy = [Instruction::branch(OpCode::Br, InstrId(0))];
        let opts = WrapOptions {
            returns: Returns::Void,
            entry: &branchy,
            exit: &[],
            catch: None,
        };
        let before = format!("{b:?}");
        assert!(wrap_flat(&mut b, &opts, &scan, &[]).is_none());
        assert_eq!(format!("{b:?}"), before);
        b.instrs
            .link_after(InstrId(0), Instruction::simple(OpCode::Nop));
        let before = format!("{b:?}");
        let opts = WrapOptions { entry: &[], ..opts };
        assert!(wrap_flat(&mut b, &opts, &scan, &[]).is_none());
        assert_eq!(format!("{b:?}"), before);
    }
}

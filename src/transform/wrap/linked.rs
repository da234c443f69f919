//! The general path: a wrap made edit by edit through the editing API, for every body
//! (clauses, `tail.` prefixes, a catch handler, injected code that branches); the only
//! path that keeps tail calls.

use super::options::{CatchRethrow, Guard, WrapOptions, Wrapped};
use super::scan::CodeScan;
use super::stored::{Placement, StoredCode, placed, unpack};
use crate::body::{ClauseKind, ExceptionClause, MethodBody};
use crate::error::{Error, Result};
use crate::graph::packed::Slot;
use crate::graph::{Incoming, InstrId, Instruction};
use crate::opcode::OpCode;
use crate::transform::returns::Returns;
use crate::transform::single_ret::{SingleRet, rewrite_rets_at};
use crate::transform::tail_call::{TailCallPolicy, TailPlan};
use smallvec::SmallVec;

/// The tail calls a general-path wrap keeps, and the code their exits run.
pub(super) struct Kept<'p, 'c> {
    plan: &'p mut TailPlan,
    /// Run by the `finally` on a tail-call exit instead of the exit code (relative
    /// branches, as the stored code's), when the plan has a flag.
    tail_exit: Option<&'c [Instruction]>,
}

/// The general path of [`super::wrap_stored`] (after its refusals), given the
/// instructions `code` stores; keeps the tail calls of `plan`, if given, else removes
/// the `tail.` prefixes.
pub(super) fn wrap_stored(
    body: &mut MethodBody,
    returns: Returns,
    scan: &CodeScan,
    code: &StoredCode<'_>,
    plan: Option<&mut TailPlan>,
) -> Result<Wrapped> {
    let unpack = |slots: &[Slot]| unpack(slots, &code.fill);
    let (entry, exit) = (unpack(code.entry), unpack(code.exit));
    let opts = WrapOptions {
        returns,
        entry: &entry,
        exit: &exit,
        catch: None,
        tail_calls: TailCallPolicy::DropPrefix,
    };
    let placement = match code.branches {
        true => Placement::Relative,
        false => Placement::Absolute,
    };
    let tail_exit = code.tail_exit.map(unpack);
    let kept = plan.map(|plan| Kept {
        plan,
        tail_exit: tail_exit.as_deref(),
    });
    wrap(
        body,
        &opts,
        scan,
        &unpack(code.epilogue),
        placement,
        kept,
        None,
    )
}

/// [`wrap`] keeping the tail calls of `plan` (planned without a flag: the exit code runs
/// on every exit), if given, else removing the `tail.` prefixes; the entry and exit
/// code placed in clauses of their own as `guard` says, when given.
pub(super) fn wrap_keeping(
    body: &mut MethodBody,
    opts: &WrapOptions<'_>,
    scan: &CodeScan,
    plan: Option<&mut TailPlan>,
    guard: Option<&Guard<'_>>,
) -> Result<Wrapped> {
    let kept = plan.map(|plan| Kept {
        plan,
        tail_exit: None,
    });
    wrap(body, opts, scan, &[], Placement::Absolute, kept, guard)
}

/// A wrap (after its refusals), edit by edit: the code of `opts`, `epilogue_code`
/// starting the epilogue, their branches placed as `placement` says; the tail calls of
/// `kept` kept, or, without it, the `tail.` prefixes removed; with `guard`, the entry
/// and exit code each in a try/catch of its own (see [`Guard`]; the tail-call flag,
/// which only a tail-call exit code needs, is not combined with it: a flag is then
/// ignored by the guarded code, which runs the exit code on every exit).
pub(super) fn wrap(
    body: &mut MethodBody,
    opts: &WrapOptions<'_>,
    scan: &CodeScan,
    epilogue_code: &[Instruction],
    placement: Placement,
    mut kept: Option<Kept<'_, '_>>,
    guard: Option<&Guard<'_>>,
) -> Result<Wrapped> {
    let relative = placement == Placement::Relative;
    let single = rets_to_leaves(
        body,
        opts.returns,
        scan,
        epilogue_code,
        relative,
        kept.as_ref(),
    )?;
    // Then the tail calls (a tail call cannot leave a protected region): kept through
    // stubs after the epilogue, or their prefixes removed. None of them is the epilogue,
    // which was just appended, so the try keeps an instruction.
    let (mut tails_removed, mut flag) = (0, None);
    match kept.as_mut() {
        Some(kept) => {
            keep_tail_calls(body, kept.plan)?;
            flag = kept.plan.flag;
        }
        None => {
            for &t in &scan.tails {
                body.remove(t)?;
            }
            tails_removed = scan.tails.len();
        }
    }
    let nothing_left = || Error::Unsupported {
        what: "nothing left to wrap",
    };
    let try_start = body.instrs.first().ok_or_else(nothing_left)?;
    let try_last = body.instrs.prev(single.epilogue).ok_or_else(nothing_left)?;
    if try_start == single.epilogue {
        return Err(nothing_left());
    }
    let (catch_start, inner_last) = match &opts.catch {
        Some(catch) => {
            let (first, last) = add_catch(body, catch, try_start, try_last, single.epilogue)?;
            (Some(first), last)
        }
        None => (None, try_last),
    };
    let protected = (try_start, inner_last);
    let finally_start = match guard {
        Some(guard) => {
            let (code, inner) = guarded_finally_code(body, opts.exit, relative, guard);
            let start = add_finally(body, &code, true, protected, single.epilogue)?;
            body.add_clause(inner)?;
            add_guarded_entry(body, opts.entry, relative, guard, try_start)?;
            start
        }
        None => {
            let tail_exit = kept.as_ref().and_then(|k| k.tail_exit);
            let exit = finally_code(body, opts.exit, relative, flag, tail_exit);
            let relative = relative || flag.is_some();
            let start = add_finally(body, &exit, relative, protected, single.epilogue)?;
            add_entry(body, opts.entry, relative, flag, try_start)?;
            start
        }
    };
    body.force_fat_header();
    Ok(Wrapped {
        try_start,
        finally_start,
        catch_start,
        epilogue: single.epilogue,
        tail_prefixes_removed: tails_removed,
        tail_calls_kept: kept.map_or(0, |k| k.plan.sites.len()),
    })
}

/// The next id the list hands out: each new instruction takes the next arena slot, so
/// the ids of injected code are known before it is linked, which places relative
/// branches.
fn next_id(body: &MethodBody) -> u32 {
    body.instrs.arena_len() as u32
}

/// The `ret`s first: [`rewrite_rets_at`] checks all of them before it edits anything,
/// then makes each a `leave` (storing the value first) to the epilogue it appends,
/// which starts with `epilogue_code` (its relative branches placed when `relative`).
/// The `ret` of a kept tail call moves to its stub, unless a branch targets it.
fn rets_to_leaves(
    body: &mut MethodBody,
    returns: Returns,
    scan: &CodeScan,
    epilogue_code: &[Instruction],
    relative: bool,
    kept: Option<&Kept<'_, '_>>,
) -> Result<SingleRet> {
    let epilogue_code = match relative {
        // Appended first by `rewrite_rets_at`, followed by the load or the `ret`.
        true => {
            let base = next_id(body);
            placed(
                epilogue_code,
                base,
                InstrId(base + epilogue_code.len() as u32),
            )
        }
        false => SmallVec::from_slice(epilogue_code),
    };
    let moved = |r: &InstrId| {
        kept.is_some_and(|k| k.plan.sites.iter().any(|s| s.ret == *r && !s.ret_stays))
    };
    let rets: SmallVec<[InstrId; 8]> = scan.rets.iter().filter(|r| !moved(r)).copied().collect();
    rewrite_rets_at(body, returns, true, &rets, &epilogue_code)
}

/// Inserts the catch handler (its code, or a `pop`, then `rethrow`) before `epilogue`
/// and adds its clause, protecting `try_start..=try_last`; returns the handler's first
/// and last instructions.
fn add_catch(
    body: &mut MethodBody,
    catch: &CatchRethrow<'_>,
    try_start: InstrId,
    try_last: InstrId,
    epilogue: InstrId,
) -> Result<(InstrId, InstrId)> {
    let mut code: SmallVec<[Instruction; 8]> = SmallVec::from_slice(catch.code);
    if code.is_empty() {
        code.push(Instruction::simple(OpCode::Pop));
    }
    code.push(Instruction::simple(OpCode::Rethrow));
    let ids = body.insert_all_before(epilogue, &code, Incoming::Keep)?;
    let (first, last) = (ids[0], ids[ids.len() - 1]);
    body.add_clause(ExceptionClause::new(
        ClauseKind::Catch(catch.type_token),
        try_start,
        try_last,
        first,
        last,
    ))?;
    Ok((first, last))
}

/// The finally handler's code, to be inserted next: `exit` (its relative branches placed
/// when `relative`), or with a flag `if (flag) { <tail_exit> } else { <exit> }`, each
/// ending the handler; then `endfinally`.
fn finally_code(
    body: &MethodBody,
    exit: &[Instruction],
    relative: bool,
    flag: Option<u16>,
    tail_exit: Option<&[Instruction]>,
) -> SmallVec<[Instruction; 8]> {
    let mut code: SmallVec<[Instruction; 8]> = match (relative, flag) {
        (true, None) => {
            let base = next_id(body);
            placed(exit, base, InstrId(base + exit.len() as u32))
        }
        (false, None) => SmallVec::from_slice(exit),
        // `if (flag) { <tail exit> } else { <exit> }`, each ending the handler.
        (_, Some(flag)) => {
            let tail_exit = tail_exit.unwrap_or(&[]);
            let base = next_id(body);
            let exit_len = exit.len() as u32;
            let exit_end = base + 2 + exit_len;
            let mut code = SmallVec::new();
            code.push(Instruction::ldloc(flag));
            code.push(Instruction::branch(OpCode::Brtrue, InstrId(exit_end + 1)));
            code.extend(placed(exit, base + 2, InstrId(exit_end)));
            code.push(Instruction::simple(OpCode::Endfinally));
            let tail_end = exit_end + 1 + tail_exit.len() as u32;
            code.extend(placed(tail_exit, exit_end + 1, InstrId(tail_end)));
            code
        }
    };
    code.push(Instruction::simple(OpCode::Endfinally));
    code
}

/// The guarded finally handler's code, to be inserted next, and the clause of its inner
/// try/catch: `.try { <exit> leave E } catch T { <handler> leave E }  E: endfinally`
/// (the exit's relative branches placed when `relative`, its end meaning the `leave`).
fn guarded_finally_code(
    body: &MethodBody,
    exit: &[Instruction],
    relative: bool,
    guard: &Guard<'_>,
) -> (SmallVec<[Instruction; 8]>, ExceptionClause) {
    let base = next_id(body);
    let n = exit.len() as u32;
    let mut code: SmallVec<[Instruction; 8]> = match relative {
        true => placed(exit, base, InstrId(base + n)),
        false => SmallVec::from_slice(exit),
    };
    let handler_len = guard.handler.len().max(1) as u32 + 1;
    let end = InstrId(base + n + 1 + handler_len);
    code.push(Instruction::branch(OpCode::Leave, end));
    code.extend(guard.handler_then_leave(end));
    code.push(Instruction::simple(OpCode::Endfinally));
    let inner = ExceptionClause::new(
        ClauseKind::Catch(guard.type_token),
        InstrId(base),
        InstrId(base + n),
        InstrId(base + n + 1),
        InstrId(end.0 - 1),
    );
    (code, inner)
}

/// The guarded entry code before `try_start`, which is still the first instruction:
/// `.try { <entry> leave B } catch T { <handler> leave B }` with `B` the try's start
/// (the entry's relative branches placed when `relative`, its end meaning the `leave`).
fn add_guarded_entry(
    body: &mut MethodBody,
    entry: &[Instruction],
    relative: bool,
    guard: &Guard<'_>,
    try_start: InstrId,
) -> Result<()> {
    let base = next_id(body);
    let n = entry.len() as u32;
    let mut code: SmallVec<[Instruction; 8]> = match relative {
        true => placed(entry, base, InstrId(base + n)),
        false => SmallVec::from_slice(entry),
    };
    code.push(Instruction::branch(OpCode::Leave, try_start));
    code.extend(guard.handler_then_leave(try_start));
    let ids = body.insert_all_before_keep_self_targeting(try_start, &code)?;
    body.add_clause(ExceptionClause::new(
        ClauseKind::Catch(guard.type_token),
        InstrId(base),
        InstrId(base + n),
        InstrId(base + n + 1),
        InstrId(ids.end - 1),
    ))?;
    Ok(())
}

/// Inserts the finally handler's `code` before `epilogue` (keeping its self-targeting
/// branches when `relative`, as they were placed) and adds its clause, protecting
/// `protected` (the first and last instruction); returns the handler's first
/// instruction.
fn add_finally(
    body: &mut MethodBody,
    code: &[Instruction],
    relative: bool,
    protected: (InstrId, InstrId),
    epilogue: InstrId,
) -> Result<InstrId> {
    let (try_start, inner_last) = protected;
    let ids = match relative {
        true => body.insert_all_before_keep_self_targeting(epilogue, code)?,
        false => body.insert_all_before_keep(epilogue, code)?,
    };
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
        && body.instrs.next(finally_last) == Some(epilogue);
    if lone_and_adjacent {
        body.clauses.push(finally);
    } else {
        body.add_clause(finally)?;
    }
    Ok(finally_start)
}

/// `inject_prologue`: the entry code before `try_start`, which is still the first
/// instruction. The flag of kept tail calls starts false (locals are not zeroed without
/// `localsinit`).
fn add_entry(
    body: &mut MethodBody,
    entry: &[Instruction],
    relative: bool,
    flag: Option<u16>,
    try_start: InstrId,
) -> Result<()> {
    match (relative, flag) {
        (true, None) => {
            let entry = placed(entry, next_id(body), try_start);
            body.insert_all_before_keep_self_targeting(try_start, &entry)?
        }
        (false, None) => body.insert_all_before_keep(try_start, entry)?,
        (_, Some(flag)) => {
            let mut code: SmallVec<[Instruction; 8]> = SmallVec::new();
            code.push(Instruction::ldc_i4(0));
            code.push(Instruction::stloc(flag));
            code.extend(placed(entry, next_id(body) + 2, try_start));
            body.insert_all_before_keep_self_targeting(try_start, &code)?
        }
    };
    Ok(())
}

/// Keeps the tail calls of `plan` (after the `ret`s were rewritten, before the handler
/// is added): appends each site's stub (its operands loaded back, a new `tail.` prefix,
/// the call and its `ret` moved there, or a new `ret` when the original one is a branch
/// target and stays), and replaces the site's `tail.` prefix by the stores of the
/// operands, the flag when there is one, and a `leave` to the stub. Records each
/// `leave` in the plan.
///
/// The original ids move with what they were: the `tail.` prefix's id (branches to it,
/// its original offset) stays at the site, the call's and the `ret`'s go to the stub, so
/// the IL map sends the call site to the stub.
fn keep_tail_calls(body: &mut MethodBody, plan: &mut TailPlan) -> Result<()> {
    let flag = plan.flag;
    for site in &mut plan.sites {
        let first = InstrId(body.instrs.arena_len() as u32);
        for &local in &site.locals {
            body.append(Instruction::ldloc(local));
        }
        let prefix = body.append(Instruction::simple(OpCode::Tail));
        let stub = if site.locals.is_empty() {
            prefix
        } else {
            first
        };
        body.instrs.move_to_back(site.call);
        match site.ret_stays {
            true => body.append(Instruction::simple(OpCode::Ret)),
            false => {
                body.instrs.move_to_back(site.ret);
                site.ret
            }
        };
        let mut code: SmallVec<[Instruction; 8]> = site
            .locals
            .iter()
            .rev()
            .map(|&l| Instruction::stloc(l))
            .collect();
        if let Some(flag) = flag {
            code.push(Instruction::ldc_i4(1));
            code.push(Instruction::stloc(flag));
        }
        code.push(Instruction::branch(OpCode::Leave, stub));
        body.replace(site.tail, code[0])?;
        let rest = body.insert_all_after(site.tail, &code[1..])?;
        site.leave = Some(rest.last().copied().unwrap_or(site.tail));
    }
    Ok(())
}

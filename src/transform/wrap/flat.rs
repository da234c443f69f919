//! The one-pass path: the usual body (a list in its decoded order, no clauses, no
//! `tail.`, entry and exit code that the wrap can place) wrapped all at once, with the
//! result the general path ([`super::linked`]) gives, id for id.

use super::options::Wrapped;
use super::scan::CodeScan;
use super::stored::StoredCode;
use crate::body::{ClauseKind, ExceptionClause, MethodBody};
use crate::graph::build::stored;
use crate::graph::packed::Slot;
use crate::graph::{FlatAppend, InstrId, InstrList, Instruction, Operand};
use crate::opcode::OpCode;
use crate::transform::returns::Returns;
use crate::transform::snippet::relocate;

/// The injected code as [`wrap`] takes it.
#[derive(Debug, Clone, Copy)]
pub(super) enum Injected<'a> {
    /// As instructions, packed by the wrap.
    Instructions {
        entry: &'a [Instruction],
        exit: &'a [Instruction],
        epilogue: &'a [Instruction],
    },
    /// In stored form (from [`crate::transform::Instrumenter`]).
    Stored(&'a StoredCode<'a>),
}

impl Injected<'_> {
    /// The lengths of the entry, exit and epilogue code.
    #[inline(always)]
    fn lens(&self) -> (usize, usize, usize) {
        match *self {
            Injected::Instructions {
                entry,
                exit,
                epilogue,
            } => (entry.len(), exit.len(), epilogue.len()),
            Injected::Stored(code) => (code.entry.len(), code.exit.len(), code.epilogue.len()),
        }
    }

    /// Whether the code branches in a way [`wrap`] cannot place: branches of
    /// instructions name ids of the body (entry or exit code that branches is left to
    /// the general path), relative branches of stored code are relocated as they are
    /// appended.
    #[inline(always)]
    fn unplaceable_branches(&self) -> bool {
        let instrs = |code: &[Instruction]| {
            code.iter()
                .any(|i| matches!(i.operand, Operand::Target(_) | Operand::Switch(_)))
        };
        match *self {
            Injected::Instructions { entry, exit, .. } => instrs(entry) || instrs(exit),
            Injected::Stored(_) => false,
        }
    }
}

/// A wrap (after its refusals) for the usual body, all at once: a list in its decoded
/// order (flat storage), no clauses, no `tail.`, and entry and exit code without
/// branches (the caller checks that no catch handler is asked for). `None`, with nothing
/// edited, for any other body.
///
/// The result is the one [`super::linked::wrap`] gives, id for id: its edits cannot
/// fail on such a body (every `ret` is unprotected and becomes `leave`, no check of the
/// inserted code can fail, no region exists to be joined), so the new instructions are
/// appended in the order it allocates them, the `ret`s are stored over in that order
/// too, and the final order is set in one pass instead of by a link per insertion.
#[inline(always)]
pub(super) fn wrap(
    body: &mut MethodBody,
    returns: Returns,
    scan: &CodeScan,
    code: Injected<'_>,
) -> Option<Wrapped> {
    let n = body.instrs.as_flat_slice()?.len() as u32;
    if n == 0 || !body.clauses.is_empty() || !scan.tails.is_empty() || code.unplaceable_branches() {
        return None;
    }
    let at = Layout::of(n, returns, scan, code.lens());
    let list = &mut body.instrs;
    // The injected code as stored by the caller, or packed here. (The list is flat,
    // checked above: no edit is made before the appender is had.)
    match code {
        Injected::Stored(code) => {
            append_stored(list.flat_append((at.end - n) as usize)?, code, &at)
        }
        Injected::Instructions {
            entry,
            exit,
            epilogue,
        } => append_instructions(list, [entry, exit, epilogue], &at),
    }
    for &r in &scan.rets {
        list.set_slot(r, at.store);
    }
    let rets: &[InstrId] = if at.leaves == 0 { &[] } else { &scan.rets };
    order(list, &at, rets);
    let try_last = match rets.last() {
        Some(&ret) if ret.0 == n - 1 => InstrId(at.after_epilogue + at.leaves as u32 - 1),
        _ => InstrId(n - 1),
    };
    let try_start = InstrId(0);
    body.clauses.push(ExceptionClause::new(
        ClauseKind::Finally,
        try_start,
        try_last,
        InstrId(at.finally_start),
        InstrId(at.entry_start - 1),
    ));
    body.force_fat_header();
    Some(Wrapped {
        try_start,
        finally_start: InstrId(at.finally_start),
        catch_start: None,
        epilogue: at.epilogue,
        tail_prefixes_removed: 0,
        tail_calls_kept: 0,
    })
}

/// Where a one-pass wrap puts what it makes, and the instructions it makes in their
/// stored form directly (the slots packing would give them: none has an operand of
/// another width).
///
/// The new instructions are in the order [`super::linked::wrap`] allocates them (the
/// `ret`s it stores over are never odd instructions, so the side table fills up the
/// same way): the epilogue as
/// [`rewrite_rets_at`](crate::transform::single_ret::rewrite_rets_at) appends it, a
/// `leave` per `ret` when a value is stored first, the finally handler, the entry code.
struct Layout {
    /// The first new instruction (the first id past the original code), which starts
    /// the epilogue.
    epilogue: InstrId,
    /// The `leave` to the epilogue.
    jump: Slot,
    /// What every `ret` becomes: the `leave` itself, or the store of the value.
    store: Slot,
    /// The load of the value in the epilogue, before its `ret`, if any.
    load: Option<Slot>,
    /// How many `leave`s follow their `ret` (one per `ret` when a value is stored first).
    leaves: usize,
    /// The first `leave` after a `ret`: the first id past the epilogue.
    after_epilogue: u32,
    /// The first instruction of the finally handler.
    finally_start: u32,
    /// The first instruction of the entry code, past the handler's `endfinally`.
    entry_start: u32,
    /// The first id past the new instructions.
    end: u32,
}

impl Layout {
    /// The layout for a body of `n` instructions, with entry, exit and epilogue code of
    /// the lengths `lens`.
    #[inline(always)]
    fn of(n: u32, returns: Returns, scan: &CodeScan, lens: (usize, usize, usize)) -> Layout {
        let (entry_len, exit_len, epilogue_len) = lens;
        // Every `ret` becomes a `leave` to the epilogue (the first new id), after storing
        // the value if any: the `leave` is then a new instruction right after it.
        let jump = Slot::new(OpCode::LeaveS, u64::from(n));
        let (store, load, leaves) = match returns {
            Returns::Void => (jump, None, 0),
            Returns::Value { local } => (
                stored::stloc(local),
                Some(stored::ldloc(local)),
                scan.rets.len(),
            ),
        };
        let after_epilogue = n + (epilogue_len + usize::from(load.is_some()) + 1) as u32;
        let finally_start = after_epilogue + leaves as u32;
        let entry_start = finally_start + exit_len as u32 + 1;
        Layout {
            epilogue: InstrId(n),
            jump,
            store,
            load,
            leaves,
            after_epilogue,
            finally_start,
            entry_start,
            end: entry_start + entry_len as u32,
        }
    }
}

/// The `ret` ending the epilogue.
#[inline(always)]
fn ret() -> Slot {
    Slot::new(OpCode::Ret, 0)
}

/// The `endfinally` ending the finally handler.
#[inline(always)]
fn endfinally() -> Slot {
    Slot::new(OpCode::Endfinally, 0)
}

/// Appends the new instructions in the order of `at`, the injected code as the caller
/// stored it.
#[inline(always)]
fn append_stored(mut append: FlatAppend<'_>, code: &StoredCode<'_>, at: &Layout) {
    let n = at.epilogue.0;
    // Relative branches go to positions of their own code, or past its end: to the load
    // or `ret` after the epilogue code, the `endfinally` after the exit code, the first
    // original instruction after the entry code.
    let epilogue_end = n + code.epilogue.len() as u32;
    place(&mut append, code, code.epilogue, n, epilogue_end);
    if let Some(load) = at.load {
        append.push(load);
    }
    append.push(ret());
    for _ in 0..at.leaves {
        append.push(at.jump);
    }
    place(
        &mut append,
        code,
        code.exit,
        at.finally_start,
        at.entry_start - 1,
    );
    append.push(endfinally());
    place(&mut append, code, code.entry, at.entry_start, 0);
}

/// Appends the stored `slots` of `code`, the first at id `base`, `end` following them.
/// Placeholders are filled in as the slots are appended.
#[inline(always)]
fn place(append: &mut FlatAppend<'_>, code: &StoredCode<'_>, slots: &[Slot], base: u32, end: u32) {
    if code.branches {
        let len = slots.len() as u32;
        for &slot in slots {
            append.push(relocate(code.fill.slot(slot), len, base, InstrId(end)));
        }
    } else if code.placeholders {
        for &slot in slots {
            append.push(code.fill.slot(slot));
        }
    } else {
        append.extend(slots);
    }
}

/// Appends the new instructions in the order of `at`, the injected code (`[entry, exit,
/// epilogue]`) packed here.
#[inline(always)]
fn append_instructions(list: &mut InstrList, code: [&[Instruction]; 3], at: &Layout) {
    let [entry, exit, epilogue] = code;
    list.reserve((at.end - at.epilogue.0) as usize);
    list.push_all(epilogue.iter().copied());
    match at.load {
        Some(load) => list.push_stored(&[load, ret()]),
        None => list.push_stored(&[ret()]),
    };
    list.push_stored_copies(at.jump, at.leaves);
    list.push_all(exit.iter().copied());
    list.push_stored(&[endfinally()]);
    list.push_all(entry.iter().copied());
}

/// Sets the final order in one pass: entry code, the original code with each `leave`
/// right after its `ret` (`rets`, empty when no `ret` is followed by one), the finally
/// handler, the epilogue.
#[inline(always)]
fn order(list: &mut InstrList, at: &Layout, rets: &[InstrId]) {
    let n = at.epilogue.0;
    let mut order = list.order();
    order.run(at.entry_start..at.end);
    let mut start = 0;
    for (leave, r) in (at.after_epilogue..).zip(rets) {
        order.run(start..r.0 + 1);
        order.run(leave..leave + 1);
        start = r.0 + 1;
    }
    order.run(start..n);
    order.run(at.finally_start..at.entry_start);
    order.run(n..at.after_epilogue);
    order.finish();
}

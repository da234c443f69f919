//! Wrapping a whole method body in try/finally (and optionally try/catch/rethrow), the
//! shape APM agents use for method entry/exit instrumentation.

use super::returns::Returns;
use super::single_ret::rewrite_rets_at;
use super::snippet::{Fill, relocate};
use super::tail_call::{TailCallPolicy, TailPlan};
use crate::body::{ClauseKind, ExceptionClause, MethodBody};
use crate::error::{Error, Result, TailCallRefusal};
use crate::graph::FlatAppend;
use crate::graph::build::stored;
use crate::graph::packed::{Slot, instruction};
use crate::graph::{Incoming, InstrId, InstrList, Instruction, Operand};
use crate::opcode::OpCode;
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
    /// What to do with `tail.` calls, which cannot stay in the try block. This wrap has
    /// no metadata to type a tail call's operands, so it cannot keep them:
    /// [`TailCallPolicy::DropPrefix`] removes the prefixes (changing what the program
    /// does: its stack grows with the tail recursion), the other two refuse a body with
    /// one ([`TailCallRefusal::NoMetadata`] for `Keep`,
    /// [`TailCallRefusal::PolicyRefuses`] for `Refuse`). To keep tail calls, use
    /// [`super::Instrumenter`].
    pub tail_calls: TailCallPolicy,
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
    /// Tail calls kept, each moved to a stub after the handlers (only
    /// [`super::Instrumenter`] keeps them).
    pub tail_calls_kept: usize,
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
/// runs once). A body with `tail.` prefixes is refused or has them removed, as
/// [`WrapOptions::tail_calls`] says (a tail call cannot leave a protected region;
/// [`super::Instrumenter`] keeps them). The max stack is not recomputed here; run the
/// stack analysis afterwards.
///
/// # Errors
/// Refusals made before any edit, leaving the body as it was: [`Error::EmptyBody`],
/// [`Error::TailCallNotKept`] for a body with `tail.` prefixes unless
/// [`WrapOptions::tail_calls`] is [`TailCallPolicy::DropPrefix`],
/// [`Error::Unsupported`] for a body with `jmp` (it cannot sit in a try block), of
/// nothing but `tail.` prefixes, with a `tail.` not followed by a call in its own
/// regions, or with a `ret` inside a finally, fault or filter block; the errors of
/// [`MethodBody::validate_clauses`] for a clause list that is not valid;
/// [`Error::NotInBody`] for entry, exit or catch code that branches to an instruction
/// not in the body.
pub fn wrap_try_finally(body: &mut MethodBody, opts: &WrapOptions<'_>) -> Result<Wrapped> {
    let scan = CodeScan::of(&body.instrs);
    if let Some(&tail) = scan.tails.first() {
        let reason = match opts.tail_calls {
            TailCallPolicy::DropPrefix => None,
            TailCallPolicy::Keep => Some(TailCallRefusal::NoMetadata),
            TailCallPolicy::Refuse => Some(TailCallRefusal::PolicyRefuses),
        };
        if let Some(reason) = reason {
            return Err(Error::TailCallNotKept {
                offset: body.original_offset(tail),
                reason,
            });
        }
    }
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
    #[inline]
    pub(crate) fn of(list: &InstrList) -> CodeScan {
        let mut scan = CodeScan::default();
        match list.as_flat_slice() {
            // A decoded list: a tight loop over the slots, almost every one of them
            // rejected by one test.
            Some(slots) => {
                // A table load per slot, or-ed over four slots, and one (rarely taken)
                // branch per four.
                const SEEN: [u8; 256] = {
                    let mut t = [0; 256];
                    t[OpCode::Tail as usize] = 1;
                    t[OpCode::Ret as usize] = 1;
                    t[OpCode::Jmp as usize] = 1;
                    t
                };
                let seen = |slot: &Slot| SEEN[slot.opcode as usize];
                let mut quads = slots.chunks_exact(4);
                let mut id = 0u32;
                for quad in &mut quads {
                    if seen(&quad[0]) | seen(&quad[1]) | seen(&quad[2]) | seen(&quad[3]) != 0 {
                        for (i, slot) in (id..).zip(quad) {
                            if seen(slot) != 0 {
                                scan.see(InstrId(i), slot.opcode);
                            }
                        }
                    }
                    id += 4;
                }
                for (i, slot) in (id..).zip(quads.remainder()) {
                    if seen(slot) != 0 {
                        scan.see(InstrId(i), slot.opcode);
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

/// The entry, exit and epilogue code of a wrap (see [`wrap_scanned`]) in stored form,
/// from a caller that builds the same shapes for every body ([`wrap_scanned_stored`]):
/// each slice holds the stored forms ([`crate::graph::build::stored`]) of the
/// instructions to inject, none of them odd (checked). The one-pass wrap appends them
/// without packing; the general path rebuilds the instructions they store.
///
/// Branches in this code are relative, as [`super::snippet::relocate`] takes them: a
/// branch's bits are a position in its own slice, its length meaning the instruction
/// that follows the slice where it is placed (the try's first instruction after the
/// entry code, the `endfinally` after the exit code, the load or `ret` after the
/// epilogue code).
#[derive(Debug, Clone, Copy)]
pub(crate) struct StoredCode<'a> {
    /// The code run on entry ([`WrapOptions::entry`]), stored.
    pub entry: &'a [Slot],
    /// The code run in the finally handler ([`WrapOptions::exit`]), stored.
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
    refusals(body, scan)?;
    let code = Injected::Instructions {
        entry: opts.entry,
        exit: opts.exit,
        epilogue: epilogue_code,
    };
    if opts.catch.is_none()
        && let Some(wrapped) = wrap_flat(body, opts.returns, scan, code)
    {
        return Ok(wrapped);
    }
    wrap_linked(body, opts, scan, epilogue_code, Placement::Absolute, None)
}

/// [`wrap_scanned`] without a catch handler, the injected code given in stored form.
pub(crate) fn wrap_scanned_stored(
    body: &mut MethodBody,
    returns: Returns,
    scan: &CodeScan,
    code: &StoredCode<'_>,
) -> Result<Wrapped> {
    refusals(body, scan)?;
    if let Some(wrapped) = wrap_flat(body, returns, scan, Injected::Stored(code)) {
        return Ok(wrapped);
    }
    wrap_stored_linked(body, returns, scan, code, None)
}

/// [`wrap_scanned_stored`] keeping the tail calls of `plan` (made by
/// [`super::tail_call::plan`] for this body and this scan, with the locals it planned
/// already part of the body's signature): each site stores its operands and leaves the
/// try for a stub after the handlers that makes the tail call (see
/// [`super::tail_call`]). The `leave` of each site is recorded in the plan.
pub(crate) fn wrap_scanned_stored_keeping(
    body: &mut MethodBody,
    returns: Returns,
    scan: &CodeScan,
    code: &StoredCode<'_>,
    plan: &mut TailPlan,
) -> Result<Wrapped> {
    refusals(body, scan)?;
    wrap_stored_linked(body, returns, scan, code, Some(plan))
}

/// The general path of [`wrap_scanned_stored`], given the instructions `code` stores.
fn wrap_stored_linked(
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
    wrap_linked(body, &opts, scan, &unpack(code.epilogue), placement, kept)
}

/// The tail calls a general-path wrap keeps, and the code their exits run.
struct Kept<'p, 'c> {
    plan: &'p mut TailPlan,
    /// Run by the `finally` on a tail-call exit instead of the exit code (relative
    /// branches, as the stored code's), when the plan has a flag.
    tail_exit: Option<&'c [Instruction]>,
}

/// [`wrap_scanned_stored`] always taking the general path, edit by edit (for the tests
/// that hold the one-pass path to it).
#[cfg(test)]
pub(crate) fn wrap_scanned_stored_linked(
    body: &mut MethodBody,
    returns: Returns,
    scan: &CodeScan,
    code: &StoredCode<'_>,
) -> Result<Wrapped> {
    refusals(body, scan)?;
    wrap_stored_linked(body, returns, scan, code, None)
}

/// The injected code as [`wrap_flat`] takes it.
#[derive(Debug, Clone, Copy)]
enum Injected<'a> {
    /// As instructions, packed by the wrap.
    Instructions {
        entry: &'a [Instruction],
        exit: &'a [Instruction],
        epilogue: &'a [Instruction],
    },
    /// In stored form (from [`super::Instrumenter`]).
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

    /// Whether the code branches in a way [`wrap_flat`] cannot place: branches of
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

/// The refusals of [`wrap_scanned`], all made before the first edit, so that a refused
/// body is left exactly as it was.
#[inline]
fn refusals(body: &MethodBody, scan: &CodeScan) -> Result<()> {
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

/// [`wrap_scanned`] (after its refusals) for the usual body, all at once: a list in its
/// decoded order (flat storage), no clauses, no `tail.`, and entry and exit code without
/// branches (the caller checks that no catch handler is asked for). `None`, with nothing
/// edited, for any other body.
///
/// The result is the one [`wrap_linked`] gives, id for id: its edits cannot fail on such
/// a body (every `ret` is unprotected and becomes `leave`, no check of the inserted code
/// can fail, no region exists to be joined), so the new instructions are appended in the
/// order it allocates them, the `ret`s are stored over in that order too, and the final
/// order is set in one pass instead of by a link per insertion.
#[inline(always)]
fn wrap_flat(
    body: &mut MethodBody,
    returns: Returns,
    scan: &CodeScan,
    code: Injected<'_>,
) -> Option<Wrapped> {
    let n = body.instrs.as_flat_slice()?.len() as u32;
    if n == 0 || !body.clauses.is_empty() || !scan.tails.is_empty() || code.unplaceable_branches() {
        return None;
    }
    let (entry_len, exit_len, epilogue_len) = code.lens();
    // Every `ret` becomes a `leave` to the epilogue (the first new id), after storing
    // the value if any: the `leave` is then a new instruction right after it. The
    // instructions made here go in their stored form directly (the slots packing would
    // give them: none has an operand of another width).
    let epilogue = InstrId(n);
    let jump = Slot::new(OpCode::LeaveS, u64::from(n));
    let ret = Slot::new(OpCode::Ret, 0);
    let (store, load, leaves) = match returns {
        Returns::Void => (jump, None, 0),
        Returns::Value { local } => (
            stored::stloc(local),
            Some(stored::ldloc(local)),
            scan.rets.len(),
        ),
    };
    let list = &mut body.instrs;
    // The new instructions in the order `wrap_linked` allocates them (the `ret`s it
    // stores over are never odd instructions, so the side table fills up the same way):
    // the epilogue as `rewrite_rets_at` appends it, a `leave` per `ret` when a value is
    // stored first, the finally handler, the entry code.
    let after_epilogue = n + (epilogue_len + usize::from(load.is_some()) + 1) as u32;
    let finally_start = after_epilogue + leaves as u32;
    let entry_start = finally_start + exit_len as u32 + 1;
    let end = entry_start + entry_len as u32;
    let endfinally = Slot::new(OpCode::Endfinally, 0);
    // The injected code as stored by the caller, or packed here. (The list is flat,
    // checked above: no edit is made before the appender is had.)
    match code {
        Injected::Stored(code) => {
            let mut append = list.flat_append((end - n) as usize)?;
            // Relative branches go to positions of their own code, or past its end: to
            // the load or `ret` after the epilogue code, the `endfinally` after the exit
            // code, the first original instruction after the entry code.
            // Placeholders are filled in as the slots are appended.
            #[inline(always)]
            fn place(
                append: &mut FlatAppend<'_>,
                code: &StoredCode<'_>,
                slots: &[Slot],
                base: u32,
                end: u32,
            ) {
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
            place(&mut append, code, code.epilogue, n, n + epilogue_len as u32);
            if let Some(load) = load {
                append.push(load);
            }
            append.push(ret);
            for _ in 0..leaves {
                append.push(jump);
            }
            place(&mut append, code, code.exit, finally_start, entry_start - 1);
            append.push(endfinally);
            place(&mut append, code, code.entry, entry_start, 0);
        }
        Injected::Instructions {
            entry,
            exit,
            epilogue,
        } => {
            list.reserve((end - n) as usize);
            list.push_all(epilogue.iter().copied());
            match load {
                Some(load) => list.push_stored(&[load, ret]),
                None => list.push_stored(&[ret]),
            };
            list.push_stored_copies(jump, leaves);
            list.push_all(exit.iter().copied());
            list.push_stored(&[endfinally]);
            list.push_all(entry.iter().copied());
        }
    }
    for &r in &scan.rets {
        list.set_slot(r, store);
    }
    // The order: entry code, the original code with each `leave` right after its `ret`,
    // the finally handler, the epilogue.
    let rets: &[InstrId] = if leaves == 0 { &[] } else { &scan.rets };
    let mut order = list.order();
    order.run(entry_start..end);
    let mut start = 0;
    for (leave, r) in (after_epilogue..).zip(rets) {
        order.run(start..r.0 + 1);
        order.run(leave..leave + 1);
        start = r.0 + 1;
    }
    order.run(start..n);
    order.run(finally_start..entry_start);
    order.run(n..after_epilogue);
    order.finish();
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
        tail_calls_kept: 0,
    })
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
fn unpack(slots: &[Slot], fill: &Fill<'_>) -> SmallVec<[Instruction; 8]> {
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
enum Placement {
    /// By the ids of the body (as [`WrapOptions`] documents).
    Absolute,
    /// By positions in their own code, as [`StoredCode`] documents.
    Relative,
}

/// `code` with its relative branches made to name ids, placed with its first
/// instruction at id `base` and `end` following it.
fn placed(code: &[Instruction], base: u32, end: InstrId) -> SmallVec<[Instruction; 8]> {
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

/// The general path of [`wrap_scanned`], edit by edit (after its refusals).
fn wrap_linked(
    body: &mut MethodBody,
    opts: &WrapOptions<'_>,
    scan: &CodeScan,
    epilogue_code: &[Instruction],
    placement: Placement,
    mut kept: Option<Kept<'_, '_>>,
) -> Result<Wrapped> {
    let relative = placement == Placement::Relative;
    // Each new instruction takes the next arena slot: the ids of injected code are known
    // before it is linked, which places relative branches.
    let next_id = |body: &MethodBody| body.instrs.arena_len() as u32;
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
    // The `ret`s first: `rewrite_rets_at` checks all of them before it edits anything.
    // The `ret` of a kept tail call moves to its stub, unless a branch targets it.
    let moved = |r: &InstrId| {
        kept.as_ref()
            .is_some_and(|k| k.plan.sites.iter().any(|s| s.ret == *r && !s.ret_stays))
    };
    let rets: SmallVec<[InstrId; 8]> = scan.rets.iter().filter(|r| !moved(r)).copied().collect();
    let single = rewrite_rets_at(body, opts.returns, true, &rets, &epilogue_code)?;
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

    let mut exit: SmallVec<[Instruction; 8]> = match (relative, flag) {
        (true, None) => {
            let base = next_id(body);
            placed(opts.exit, base, InstrId(base + opts.exit.len() as u32))
        }
        (false, None) => SmallVec::from_slice(opts.exit),
        // `if (flag) { <tail exit> } else { <exit> }`, each ending the handler.
        (_, Some(flag)) => {
            let tail_exit = kept.as_ref().and_then(|k| k.tail_exit).unwrap_or(&[]);
            let base = next_id(body);
            let exit_len = opts.exit.len() as u32;
            let exit_end = base + 2 + exit_len;
            let mut code = SmallVec::new();
            code.push(Instruction::ldloc(flag));
            code.push(Instruction::branch(OpCode::Brtrue, InstrId(exit_end + 1)));
            code.extend(placed(opts.exit, base + 2, InstrId(exit_end)));
            code.push(Instruction::simple(OpCode::Endfinally));
            let tail_end = exit_end + 1 + tail_exit.len() as u32;
            code.extend(placed(tail_exit, exit_end + 1, InstrId(tail_end)));
            code
        }
    };
    exit.push(Instruction::simple(OpCode::Endfinally));
    let relative = relative || flag.is_some();
    let ids = match relative {
        true => body.insert_all_before_keep_self_targeting(single.epilogue, &exit)?,
        false => body.insert_all_before_keep(single.epilogue, &exit)?,
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
        && body.instrs.next(finally_last) == Some(single.epilogue);
    if lone_and_adjacent {
        body.clauses.push(finally);
    } else {
        body.add_clause(finally)?;
    }

    // `inject_prologue`: the first instruction is still the try's first. The flag of
    // kept tail calls starts false (locals are not zeroed without `localsinit`).
    match (relative, flag) {
        (true, None) => {
            let entry = placed(opts.entry, next_id(body), try_start);
            body.insert_all_before_keep_self_targeting(try_start, &entry)?
        }
        (false, None) => body.insert_all_before_keep(try_start, opts.entry)?,
        (_, Some(flag)) => {
            let mut entry: SmallVec<[Instruction; 8]> = SmallVec::new();
            entry.push(Instruction::ldc_i4(0));
            entry.push(Instruction::stloc(flag));
            entry.extend(placed(opts.entry, next_id(body) + 2, try_start));
            body.insert_all_before_keep_self_targeting(try_start, &entry)?
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
    /// arena, the links and the side tables, for every shape of return (macro, short and
    /// long local forms) and of injected code (operand-less, token, int, local, odd),
    /// with the code packed by the wrap or given in stored form.
    #[test]
    fn flat_wrap_is_the_linked_wrap_at_once() {
        use crate::graph::packed::stored;
        let call = Instruction::with_token(OpCode::Call, 0x0AFF_FFF0);
        let odd = Instruction::new(OpCode::LdcI4S, Operand::Int(-1000));
        let codes: [&[Instruction]; 5] = [
            &[],
            &[Instruction::ldc_i4(5), call],
            &[odd, call],
            &[Instruction::ldc_i4(0x0600_1234), call],
            &[Instruction::ldloc(300), Instruction::ldloc(9), call],
        ];
        let store =
            |code: &[Instruction]| -> Option<Vec<Slot>> { code.iter().map(stored).collect() };
        let mut seed = 0x1234_5678_9ABC_DEF1u64;
        let (mut checked, mut checked_stored) = (0, 0);
        for len in 1..24 {
            for _ in 0..12 {
                let original = body(&mut seed, len);
                let scan = CodeScan::of(&original.instrs);
                let returns = [
                    Returns::Void,
                    Returns::Value { local: 3 },
                    Returns::Value { local: 200 },
                    Returns::Value { local: 1000 },
                ];
                for returns in returns {
                    let epilogue = match returns {
                        Returns::Void => vec![],
                        Returns::Value { local } => vec![Instruction::ldloc(local), call],
                    };
                    for (entry, exit) in [(0, 1), (1, 1), (2, 0), (1, 2), (3, 4), (4, 3)] {
                        let opts = WrapOptions {
                            returns,
                            entry: codes[entry],
                            exit: codes[exit],
                            catch: None,
                            tail_calls: TailCallPolicy::DropPrefix,
                        };
                        let mut slow = original.clone();
                        let b = wrap_linked(
                            &mut slow,
                            &opts,
                            &scan,
                            &epilogue,
                            Placement::Absolute,
                            None,
                        )
                        .expect("wraps");
                        let mut fast = original.clone();
                        let code = Injected::Instructions {
                            entry: opts.entry,
                            exit: opts.exit,
                            epilogue: &epilogue,
                        };
                        let a = wrap_flat(&mut fast, returns, &scan, code).expect("flat");
                        assert_eq!(a, b);
                        assert_eq!(format!("{fast:?}"), format!("{slow:?}"));
                        checked += 1;
                        let (Some(entry), Some(exit), Some(epi)) =
                            (store(opts.entry), store(opts.exit), store(&epilogue))
                        else {
                            continue;
                        };
                        let code = StoredCode {
                            entry: &entry,
                            exit: &exit,
                            epilogue: &epi,
                            tail_exit: None,
                            branches: false,
                            fill: Fill::new(0, None, &[]),
                            placeholders: false,
                        };
                        let mut fast = original.clone();
                        let a = wrap_flat(&mut fast, returns, &scan, Injected::Stored(&code))
                            .expect("flat");
                        assert_eq!(a, b);
                        assert_eq!(format!("{fast:?}"), format!("{slow:?}"));
                        // The general path from stored code is the one from instructions.
                        let mut linked = original.clone();
                        let c = wrap_stored_linked(&mut linked, returns, &scan, &code, None);
                        assert_eq!(c, Ok(b));
                        assert_eq!(format!("{linked:?}"), format!("{slow:?}"));
                        checked_stored += 1;
                    }
                }
            }
        }
        assert!(
            checked > 6000 && checked_stored > 3000,
            "{checked} {checked_stored}"
        );
    }

    /// Bodies the one-pass path does not handle are left to the general path untouched.
    #[test]
    fn flat_wrap_declines_without_editing() {
        let mut seed = 99u64;
        let mut b = body(&mut seed, 6);
        let scan = CodeScan::of(&b.instrs);
        // Entry code given as instructions names ids of the body; stored code's branches
        // are relative and placed (see `branching_snippets_are_placed_on_both_paths`).
        let branchy = [Instruction::branch(OpCode::Br, InstrId(0))];
        let none = |entry| Injected::Instructions {
            entry,
            exit: &[],
            epilogue: &[],
        };
        let stored = |entry| StoredCode {
            entry,
            exit: &[],
            epilogue: &[],
            tail_exit: None,
            branches: false,
            fill: Fill::new(0, None, &[]),
            placeholders: false,
        };
        let before = format!("{b:?}");
        assert!(wrap_flat(&mut b, Returns::Void, &scan, none(&branchy)).is_none());
        assert_eq!(format!("{b:?}"), before);
        b.instrs
            .link_after(InstrId(0), Instruction::simple(OpCode::Nop));
        let before = format!("{b:?}");
        assert!(wrap_flat(&mut b, Returns::Void, &scan, none(&[])).is_none());
        let code = stored(&[]);
        assert!(wrap_flat(&mut b, Returns::Void, &scan, Injected::Stored(&code)).is_none());
        assert_eq!(format!("{b:?}"), before);
    }
}

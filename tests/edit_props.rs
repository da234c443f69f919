//! Property tests of the editing API, the transforms and the IL map.
//!
//! Random edit sequences (inserts before with [`Incoming::Keep`] and
//! [`Incoming::Redirect`], one at a time or several at once, inserts after, `append`,
//! inserts before the last instruction, `replace`, `remove`, `retarget_branches` and
//! `add_clause`) run on generated valid bodies and on real bodies of
//! `System.Private.CoreLib` (feature `pe`). Every single edit is checked against a model
//! of what its documentation promises, written here independently of `src/graph/edit.rs`:
//!
//! * which instructions are where (ids are fresh and dense, nothing else moves);
//! * which instruction every branch and switch slot and every region boundary names
//!   (Keep changes none, Redirect moves exactly those naming the insertion point, and not
//!   those of the inserted code itself; `remove` moves branches and region starts to the
//!   next instruction and region ends to the previous one; `retarget_branches` moves
//!   only branch slots and counts them);
//! * that `remove` is refused exactly when it would empty a region or leave a branch
//!   dangling, crossing out of a region or into a handler or filter, with the right
//!   typed error, and that a refusal leaves the body identical;
//! * that `add_clause` is refused exactly when no inner-first position exists for the
//!   clause (or its regions overlap others without nesting), and otherwise inserts it
//!   where the list stays inner-first;
//! * that the clauses stay well-formed after every edit (`validate_clauses` and an
//!   independent position-based check).
//!
//! After the sequence the body must encode, and decode back to the same body (opcodes
//! equal or short branches widened, and only when out of range; operands with targets
//! by position; clauses by position in the same order; header fields), re-encode to the
//! same bytes, and have an exact IL map (see [`check_il_map`]).
//!
//! On real bodies `wrap_try_finally` (which includes single-ret) with entry, exit, catch
//! and epilogue hooks, followed by the max-stack computation, must give a body that
//! re-decodes and verifies and whose max stack is exactly `max(M, 1)` where `M` is the
//! computed max stack of the unedited body: the hooks need one slot, and they all run
//! at height 0 (entry, finally, epilogue after `leave`) or 1 in a catch handler that
//! starts at 1; the return value is stored at height 1, where the original `ret` was.
//!
//! The coverage tests at the end check, over fixed-seed samples, that every edit kind is
//! applied and every refusal path taken, so that a generator change cannot silently turn
//! the properties vacuous, and that the checkers reject wrong maps and misordered clauses.
//!
//! Insertions between a filter and its handler (which join the filter) are not modelled
//! and are skipped; `regression_inserting_between_a_filter_and_its_handler_*` cover them.
//! Bugs found by these properties are kept as `regression_*` tests (among them: a
//! `remove` that would make a region coincide with another clause's region nested in it
//! is refused, and the model checks such refusals are right).

mod common;

use common::{Arg, Clause, Kind, body_spec, build, operand_bits, operand_from_bits, shape};
use ilrewrite::analysis::{MetadataResolver, ReturnKind};
use ilrewrite::body::{Decoder, Encoder};
use ilrewrite::graph::Incoming;
use ilrewrite::ilmap::IlMap;
use ilrewrite::opcode::{Flow, OperandKind};
use ilrewrite::{
    ClauseKind, Error, ExceptionClause, InstrId, Instruction, MethodBody, OpCode, Operand,
};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestRunner;
use std::collections::{BTreeMap, HashSet};

/// Cases per property (all of them together run in about a second in release), or
/// `PROPTEST_CASES` for soak runs.
const CASES: u32 = 256;

fn fail(msg: impl Into<String>) -> TestCaseError {
    TestCaseError::fail(msg.into())
}

/// Unwraps a library result, failing the case with `what` and the error.
fn ok<T>(r: ilrewrite::Result<T>, what: &str) -> Result<T, TestCaseError> {
    r.map_err(|e| fail(format!("{what}: {e}")))
}

// ---- a snapshot of a body by id, and the model of each edit ---------------------------

/// An operand with switch targets read out of the pool.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Opnd {
    Value(Operand),
    Target(InstrId),
    Switch(Vec<InstrId>),
}

/// Everything an edit can change, by id: the order, each linked instruction, the clauses,
/// the arena size (which id the next instruction gets) and the header fields.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Snap {
    order: Vec<InstrId>,
    instrs: BTreeMap<InstrId, (OpCode, Opnd)>,
    clauses: Vec<ExceptionClause>,
    arena_len: usize,
    header: (u16, bool, u32),
}

fn opnd(body: &MethodBody, i: &Instruction) -> Opnd {
    match i.operand {
        Operand::Target(t) => Opnd::Target(t),
        Operand::Switch(s) => Opnd::Switch(body.instrs.switch_targets(s).to_vec()),
        other => Opnd::Value(other),
    }
}

impl Snap {
    fn of(body: &MethodBody) -> Snap {
        Snap {
            order: body.instrs.ids().collect(),
            instrs: body
                .instrs
                .iter()
                .map(|(id, i)| (id, (i.opcode, opnd(body, &i))))
                .collect(),
            clauses: body.clauses.clone(),
            arena_len: body.instrs.arena_len(),
            header: (body.max_stack, body.init_locals, body.local_var_sig),
        }
    }

    fn pos(&self, id: InstrId) -> usize {
        self.order.iter().position(|&x| x == id).expect("linked")
    }

    fn next(&self, id: InstrId) -> Option<InstrId> {
        self.order.get(self.pos(id) + 1).copied()
    }

    fn prev(&self, id: InstrId) -> Option<InstrId> {
        self.pos(id).checked_sub(1).map(|p| self.order[p])
    }

    /// Every branch and switch slot, in code order.
    fn targets(&self) -> Vec<InstrId> {
        let mut v = Vec::new();
        for id in &self.order {
            match &self.instrs[id].1 {
                Opnd::Target(t) => v.push(*t),
                Opnd::Switch(ts) => v.extend(ts),
                Opnd::Value(_) => {}
            }
        }
        v
    }

    fn is_target(&self, id: InstrId) -> bool {
        self.targets().contains(&id)
    }

    /// Points every branch slot naming `from` at `to`, except in the instructions
    /// `except`; returns how many slots changed.
    fn retarget(&mut self, from: InstrId, to: InstrId, except: &[InstrId]) -> usize {
        let mut n = 0;
        for (id, (_, o)) in self.instrs.iter_mut() {
            if except.contains(id) {
                continue;
            }
            let slots: Vec<&mut InstrId> = match o {
                Opnd::Target(t) => vec![t],
                Opnd::Switch(ts) => ts.iter_mut().collect(),
                Opnd::Value(_) => vec![],
            };
            for t in slots {
                if *t == from {
                    *t = to;
                    n += 1;
                }
            }
        }
        n
    }

    /// Moves region starts (try, handler, filter) from `from` to `to`.
    fn move_starts(&mut self, from: InstrId, to: InstrId) {
        for c in &mut self.clauses {
            if c.try_start == from {
                c.try_start = to;
            }
            if c.handler_start == from {
                c.handler_start = to;
            }
            if c.kind == ClauseKind::Filter(from) {
                c.kind = ClauseKind::Filter(to);
            }
        }
    }

    /// Records new instructions `ids` (with their expected contents) at position `at`.
    fn insert(&mut self, at: usize, ids: &[InstrId], code: &[(OpCode, Opnd)]) {
        for (k, (&id, c)) in ids.iter().zip(code).enumerate() {
            self.order.insert(at + k, id);
            self.instrs.insert(id, c.clone());
        }
        self.arena_len += ids.len();
    }

    /// The clauses with positions instead of ids.
    fn pos_clauses(&self, clauses: &[ExceptionClause]) -> Vec<Clause> {
        let pos: BTreeMap<InstrId, usize> = self
            .order
            .iter()
            .enumerate()
            .map(|(p, &id)| (id, p))
            .collect();
        clauses
            .iter()
            .map(|c| Clause {
                kind: match c.kind {
                    ClauseKind::Catch(t) => Kind::Catch(t),
                    ClauseKind::Filter(f) => Kind::Filter(pos[&f]),
                    ClauseKind::Finally => Kind::Finally,
                    ClauseKind::Fault => Kind::Fault,
                },
                try_: (pos[&c.try_start], pos[&c.try_last]),
                handler: (pos[&c.handler_start], pos[&c.handler_last]),
            })
            .collect()
    }
}

// ---- an independent check of the clause rules, on positions --------------------------

/// The inclusive regions of a clause: try, handler, and filter (which runs up to the
/// instruction before the handler). `None` for a filter that does not precede its handler.
fn regions(c: &Clause) -> Option<Vec<(usize, usize)>> {
    let mut r = vec![c.try_, c.handler];
    if let Kind::Filter(f) = c.kind {
        if f >= c.handler.0 {
            return None;
        }
        r.push((f, c.handler.0 - 1));
    }
    Some(r)
}

fn disjoint(a: (usize, usize), b: (usize, usize)) -> bool {
    a.1 < b.0 || b.1 < a.0
}

fn inside(a: (usize, usize), b: (usize, usize)) -> bool {
    b.0 <= a.0 && a.1 <= b.1
}

/// ECMA-335 II.19 as the crate states it: every region non-empty and in the code, the
/// filter right before its handler, the regions of one clause disjoint, regions of two
/// clauses disjoint or nested (two clauses may share a try, nothing else), and a clause
/// whose try lies inside a region of another listed before it.
fn clauses_well_formed(clauses: &[Clause], n: usize) -> Result<(), String> {
    clauses_compatible(clauses, n)?;
    for (i, a) in clauses.iter().enumerate() {
        for (j, b) in clauses.iter().enumerate().skip(i + 1) {
            if a.try_ != b.try_ && regions(a).unwrap().iter().any(|r| inside(b.try_, *r)) {
                return Err(format!(
                    "clause {j} lies inside clause {i} but is listed after"
                ));
            }
        }
    }
    Ok(())
}

/// The rules of [`clauses_well_formed`] but the order.
fn clauses_compatible(clauses: &[Clause], n: usize) -> Result<(), String> {
    let mut all = Vec::new();
    for (i, c) in clauses.iter().enumerate() {
        let rs = regions(c).ok_or(format!("clause {i}: filter after its handler"))?;
        for (k, r) in rs.iter().enumerate() {
            if r.0 > r.1 || r.1 >= n {
                return Err(format!("clause {i}: region {r:?} empty or outside 0..{n}"));
            }
            if rs[k + 1..].iter().any(|s| !disjoint(*r, *s)) {
                return Err(format!("clause {i}: its own regions overlap"));
            }
        }
        all.push(rs);
    }
    for i in 0..clauses.len() {
        for j in i + 1..clauses.len() {
            for (ka, a) in all[i].iter().enumerate() {
                for (kb, b) in all[j].iter().enumerate() {
                    if a == b && !(ka == 0 && kb == 0) {
                        return Err(format!("clauses {i}, {j} share the region {a:?}"));
                    }
                    if !disjoint(*a, *b) && !inside(*a, *b) && !inside(*b, *a) {
                        return Err(format!("clauses {i}, {j}: {a:?} and {b:?} cross"));
                    }
                }
            }
        }
    }
    Ok(())
}

// ---- edits ------------------------------------------------------------------------------

/// Where an edit applies, resolved against the body when the edit runs.
#[derive(Debug, Clone)]
enum Anchor {
    /// Any instruction.
    Any(Index),
    /// A boundary of an existing clause: its try start or last, handler start or last,
    /// filter start, the instruction before its handler or the one after its handler.
    Boundary(Index, u8),
    /// An instruction some branch or switch names.
    Target(Index),
    /// The insertion point of the edit itself (for branches in inserted code).
    At,
}

impl Anchor {
    fn resolve(&self, s: &Snap, at: Option<InstrId>) -> Option<InstrId> {
        if s.order.is_empty() {
            return None;
        }
        let any = |i: &Index| s.order[i.index(s.order.len())];
        Some(match self {
            Anchor::Any(i) => any(i),
            Anchor::At => at.unwrap_or(s.order[0]),
            Anchor::Target(i) => {
                let mut ts = s.targets();
                ts.sort();
                ts.dedup();
                if ts.is_empty() {
                    any(i)
                } else {
                    ts[i.index(ts.len())]
                }
            }
            Anchor::Boundary(i, which) => {
                if s.clauses.is_empty() {
                    return Some(any(i));
                }
                let c = s.clauses[i.index(s.clauses.len())];
                match which % 7 {
                    0 => c.try_start,
                    1 => c.try_last,
                    2 => c.handler_start,
                    3 => c.handler_last,
                    4 => c.filter_start().unwrap_or(c.handler_start),
                    5 => s.prev(c.handler_start).unwrap_or(c.handler_start),
                    _ => s.next(c.handler_last).unwrap_or(c.handler_last),
                }
            }
        })
    }
}

fn anchor() -> impl Strategy<Value = Anchor> {
    prop_oneof![
        3 => any::<Index>().prop_map(Anchor::Any),
        2 => (any::<Index>(), any::<u8>()).prop_map(|(i, w)| Anchor::Boundary(i, w)),
        1 => any::<Index>().prop_map(Anchor::Target),
    ]
}

/// Control flow that falls through to the next instruction: what `replace` swaps.
fn is_non_terminator(op: OpCode) -> bool {
    matches!(
        op.flow(),
        Flow::Next | Flow::Call | Flow::Break | Flow::Prefix
    ) && !op.is_branch()
        && op != OpCode::Switch
}

fn non_branch_opcodes() -> Vec<OpCode> {
    let ops = OpCode::ALL.iter().copied();
    ops.filter(|op| !op.is_branch() && *op != OpCode::Switch)
        .collect()
}

fn non_terminators() -> Vec<OpCode> {
    let ops = OpCode::ALL.iter().copied();
    ops.filter(|&op| is_non_terminator(op)).collect()
}

fn branch_opcodes() -> Vec<OpCode> {
    OpCode::ALL
        .iter()
        .copied()
        .filter(|op| op.is_branch())
        .collect()
}

/// A new instruction: any non-branch opcode with a random operand, a branch (either
/// form) or a switch to instructions of the body.
#[derive(Debug, Clone)]
enum NewCode {
    Plain(OpCode, u64),
    Branch(OpCode, Anchor),
    Switch(Vec<Anchor>),
}

fn target_anchor() -> impl Strategy<Value = Anchor> {
    prop_oneof![3 => anchor(), 1 => Just(Anchor::At)]
}

fn new_code() -> impl Strategy<Value = NewCode> {
    prop_oneof![
        5 => (prop::sample::select(non_branch_opcodes()), operand_bits())
            .prop_map(|(op, bits)| NewCode::Plain(op, bits)),
        3 => (prop::sample::select(branch_opcodes()), target_anchor())
            .prop_map(|(op, t)| NewCode::Branch(op, t)),
        1 => vec(target_anchor(), 0..4).prop_map(NewCode::Switch),
    ]
}

impl NewCode {
    /// The instruction to insert (switch targets are stored in the body's pool) and what
    /// the snapshot should then show for it.
    fn resolve(
        &self,
        body: &mut MethodBody,
        s: &Snap,
        at: Option<InstrId>,
    ) -> (Instruction, (OpCode, Opnd)) {
        let target = |a: &Anchor| a.resolve(s, at);
        match self {
            NewCode::Branch(op, a) if target(a).is_some() => {
                let t = target(a).unwrap();
                (
                    Instruction::new(*op, Operand::Target(t)),
                    (*op, Opnd::Target(t)),
                )
            }
            NewCode::Switch(ts) if !s.order.is_empty() => {
                let ts: Vec<InstrId> = ts.iter().map(|a| target(a).unwrap()).collect();
                let handle = body.instrs.new_switch_targets(&ts);
                let i = Instruction::new(OpCode::Switch, Operand::Switch(handle));
                (i, (OpCode::Switch, Opnd::Switch(ts)))
            }
            NewCode::Plain(op, bits) => {
                let operand = operand_from_bits(op.operand(), *bits);
                (Instruction::new(*op, operand), (*op, Opnd::Value(operand)))
            }
            // No instruction to branch to: a nop instead.
            _ => (
                Instruction::simple(OpCode::Nop),
                (OpCode::Nop, Opnd::Value(Operand::None)),
            ),
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum NewKind {
    Catch(u32),
    Finally,
    Fault,
    /// With a filter region of this many instructions.
    Filter(usize),
}

/// A new clause: try, then (filter and) handler, or (filter and) handler first; the try
/// covers `try_len` instructions from `at`, or exactly the extent of an existing clause.
#[derive(Debug, Clone)]
struct NewClause {
    at: Anchor,
    around: Option<Index>,
    try_len: usize,
    handler_len: usize,
    kind: NewKind,
    handler_first: bool,
}

fn new_clause() -> impl Strategy<Value = NewClause> {
    let kind = prop_oneof![
        2 => any::<u32>().prop_map(NewKind::Catch),
        2 => Just(NewKind::Finally),
        1 => Just(NewKind::Fault),
        1 => (1usize..3).prop_map(NewKind::Filter),
    ];
    (
        anchor(),
        prop::option::weighted(0.3, any::<Index>()),
        1usize..6,
        1usize..4,
        kind,
        prop::bool::weighted(0.2),
    )
        .prop_map(
            |(at, around, try_len, handler_len, kind, handler_first)| NewClause {
                at,
                around,
                try_len,
                handler_len,
                kind,
                handler_first,
            },
        )
}

impl NewClause {
    /// The clause at positions of `s`, if it fits in the code.
    fn place(&self, s: &Snap) -> Option<ExceptionClause> {
        let n = s.order.len();
        let filter_len = match self.kind {
            NewKind::Filter(f) => f,
            _ => 0,
        };
        let tail = filter_len + self.handler_len;
        let (try_, first) = match (self.around, s.clauses.is_empty()) {
            (Some(i), false) => {
                let c = s.pos_clauses(&s.clauses)[i.index(s.clauses.len())];
                let rs = regions(&c)?;
                let lo = rs.iter().map(|r| r.0).min()?;
                let hi = rs.iter().map(|r| r.1).max()?;
                let first = if self.handler_first {
                    lo.checked_sub(tail)?
                } else {
                    hi + 1
                };
                ((lo, hi), first)
            }
            _ => {
                let total = self.try_len + tail;
                let p = s.pos(self.at.resolve(s, None)?);
                let p = if p + total > n {
                    n.checked_sub(total)?
                } else {
                    p
                };
                if self.handler_first {
                    ((p + tail, p + total - 1), p)
                } else {
                    ((p, p + self.try_len - 1), p + self.try_len)
                }
            }
        };
        if first + tail > n {
            return None;
        }
        let handler = (first + filter_len, first + tail - 1);
        let id = |p: usize| s.order[p];
        let kind = match self.kind {
            NewKind::Catch(t) => ClauseKind::Catch(t),
            NewKind::Finally => ClauseKind::Finally,
            NewKind::Fault => ClauseKind::Fault,
            NewKind::Filter(_) => ClauseKind::Filter(id(first)),
        };
        Some(ExceptionClause::new(
            kind,
            id(try_.0),
            id(try_.1),
            id(handler.0),
            id(handler.1),
        ))
    }
}

#[derive(Debug, Clone)]
enum Edit {
    /// `insert_before` of the first instruction, or `insert_all_before` of all of them.
    InsertBefore {
        at: Anchor,
        code: Vec<NewCode>,
        redirect: bool,
        all: bool,
    },
    /// `insert_before_each` of code before several instructions in one edit.
    InsertBeforeEach {
        sites: Vec<(Anchor, Vec<NewCode>)>,
        redirect: bool,
    },
    /// `insert_after` of the first instruction, or `insert_all_after` of all of them.
    InsertAfter {
        at: Anchor,
        code: Vec<NewCode>,
        all: bool,
    },
    Append(NewCode),
    /// `insert_all_before` the last instruction.
    BeforeLast {
        code: Vec<NewCode>,
        redirect: bool,
    },
    /// `replace` of the first non-terminator at or after `at` by another one.
    Replace {
        at: Anchor,
        op: OpCode,
        bits: u64,
    },
    Remove(Anchor),
    Retarget {
        from: Anchor,
        to: Anchor,
    },
    AddClause(NewClause),
}

fn edit() -> impl Strategy<Value = Edit> {
    let code = || vec(new_code(), 0..4);
    prop_oneof![
        4 => (anchor(), code(), any::<bool>(), any::<bool>())
            .prop_map(|(at, code, redirect, all)| Edit::InsertBefore { at, code, redirect, all }),
        2 => (vec((anchor(), code()), 0..5), any::<bool>())
            .prop_map(|(sites, redirect)| Edit::InsertBeforeEach { sites, redirect }),
        2 => (anchor(), code(), any::<bool>())
            .prop_map(|(at, code, all)| Edit::InsertAfter { at, code, all }),
        1 => new_code().prop_map(Edit::Append),
        1 => (code(), any::<bool>()).prop_map(|(code, redirect)| Edit::BeforeLast { code, redirect }),
        2 => (anchor(), prop::sample::select(non_terminators()), operand_bits())
            .prop_map(|(at, op, bits)| Edit::Replace { at, op, bits }),
        5 => anchor().prop_map(Edit::Remove),
        1 => (prop_oneof![1 => anchor(), 2 => any::<Index>().prop_map(Anchor::Target)], anchor())
            .prop_map(|(from, to)| Edit::Retarget { from, to }),
        3 => new_clause().prop_map(Edit::AddClause),
    ]
}

fn edits() -> impl Strategy<Value = Vec<Edit>> {
    vec(edit(), 1..16)
}

/// What the edits did, for the coverage tests.
#[derive(Debug, Default)]
struct Tally(BTreeMap<&'static str, usize>);

impl Tally {
    fn add(&mut self, what: &'static str) {
        *self.0.entry(what).or_default() += 1;
    }
}

/// Why `remove(at)` must be refused, if it must: it would empty a region
/// (`EditWouldEmptyRegion`), or `at` is a branch target and its branches would dangle,
/// leave a region `at` ends, or enter a handler or filter that starts right after `at`
/// (`EditWouldDangle`).
fn remove_refusal(s: &Snap, at: InstrId) -> Option<&'static str> {
    let p = s.pos(at);
    let clauses = s.pos_clauses(&s.clauses);
    let all_regions: Vec<(usize, usize)> =
        clauses.iter().flat_map(|c| regions(c).unwrap()).collect();
    if all_regions.contains(&(p, p)) {
        return Some("remove refused: would empty a region");
    }
    if !s.is_target(at) {
        None
    } else if p + 1 == s.order.len() {
        Some("remove refused: a branch target without a next instruction")
    } else if all_regions.iter().any(|r| r.1 == p) {
        Some("remove refused: a branch target that ends a region")
    } else if clauses
        .iter()
        .any(|c| c.handler.0 == p + 1 || matches!(c.kind, Kind::Filter(f) if f == p + 1))
    {
        Some("remove refused: a branch target before a handler or filter")
    } else {
        None
    }
}

/// Whether new code linked right before `at` lands between a filter and its handler.
///
/// Such code joins the filter region, which ends right before the handler (documented on
/// `insert_after`), and the insertion is refused when the longer filter would no longer
/// nest. The model here does not predict filter growth, so these insertions are counted
/// and skipped; `regression_inserting_between_a_filter_and_its_handler_*` cover them.
fn lands_after_a_filter(s: &Snap, at: Option<InstrId>) -> bool {
    at.is_some_and(|at| {
        s.clauses
            .iter()
            .any(|c| c.filter_start().is_some() && c.handler_start == at)
    })
}

/// What [`apply`] did.
enum Outcome {
    Applied,
    /// Nothing to apply the edit to.
    Skipped,
}

/// Applies one edit and checks it against the model.
fn apply(body: &mut MethodBody, edit: &Edit, tally: &mut Tally) -> Result<Outcome, TestCaseError> {
    let before = Snap::of(body);
    let mut want = before.clone();
    let n = before.order.len();
    let fresh = |k: usize| -> Vec<usize> { (before.arena_len..before.arena_len + k).collect() };
    let check_fresh = |ids: &[InstrId], k: usize| -> Result<(), TestCaseError> {
        let got: Vec<usize> = ids.iter().map(|id| id.index()).collect();
        prop_assert_eq!(got, fresh(k), "new ids are the next arena slots");
        Ok(())
    };
    match edit {
        Edit::InsertBefore {
            at,
            code,
            redirect,
            all,
        } => {
            let Some(at) = at.resolve(&before, None) else {
                return Ok(Outcome::Skipped);
            };
            if !*redirect && !code.is_empty() && lands_after_a_filter(&before, Some(at)) {
                tally.add("insertion between a filter and its handler (not modelled, skipped)");
                return Ok(Outcome::Skipped);
            }
            let single = !*all && !code.is_empty();
            let code = if single { &code[..1] } else { &code[..] };
            let resolved: Vec<_> = code
                .iter()
                .map(|c| c.resolve(body, &before, Some(at)))
                .collect();
            let instrs: Vec<Instruction> = resolved.iter().map(|r| r.0).collect();
            let incoming = if *redirect {
                Incoming::Redirect
            } else {
                Incoming::Keep
            };
            let ids: Vec<InstrId> = if single {
                vec![ok(
                    body.insert_before(at, instrs[0], incoming),
                    "insert_before",
                )?]
            } else {
                ok(
                    body.insert_all_before(at, &instrs, incoming),
                    "insert_all_before",
                )?
                .to_vec()
            };
            check_fresh(&ids, instrs.len())?;
            let exp: Vec<_> = resolved.into_iter().map(|r| r.1).collect();
            want.insert(before.pos(at), &ids, &exp);
            if *redirect && !ids.is_empty() {
                if want.retarget(at, ids[0], &ids) > 0 {
                    tally.add("redirect moved a branch");
                }
                if before
                    .clauses
                    .iter()
                    .any(|c| c.try_start == at || c.handler_start == at)
                {
                    tally.add("redirect moved a region start");
                }
                if exp
                    .iter()
                    .any(|e| matches!(&e.1, Opnd::Target(t) if *t == at))
                {
                    tally.add("redirect with inserted branch to the insertion point");
                }
                want.move_starts(at, ids[0]);
            }
            tally.add(match (single, *redirect) {
                (true, false) => "insert_before keep",
                (true, true) => "insert_before redirect",
                (false, false) => "insert_all_before keep",
                (false, true) => "insert_all_before redirect",
            });
        }
        Edit::InsertBeforeEach { sites, redirect } => {
            let mut ats = Vec::new();
            for (at, code) in sites {
                let Some(at) = at.resolve(&before, None) else {
                    return Ok(Outcome::Skipped);
                };
                if !*redirect && !code.is_empty() && lands_after_a_filter(&before, Some(at)) {
                    tally.add("insertion between a filter and its handler (not modelled, skipped)");
                    return Ok(Outcome::Skipped);
                }
                ats.push(at);
            }
            let resolved: Vec<Vec<_>> = sites
                .iter()
                .zip(&ats)
                .map(|((_, code), &at)| {
                    code.iter()
                        .map(|c| c.resolve(body, &before, Some(at)))
                        .collect()
                })
                .collect();
            let instrs: Vec<Vec<Instruction>> = resolved
                .iter()
                .map(|r| r.iter().map(|r| r.0).collect())
                .collect();
            let batch: Vec<(InstrId, &[Instruction])> = ats
                .iter()
                .zip(&instrs)
                .map(|(&at, i)| (at, &i[..]))
                .collect();
            let incoming = if *redirect {
                Incoming::Redirect
            } else {
                Incoming::Keep
            };
            let ids = ok(
                body.insert_before_each(&batch, incoming),
                "insert_before_each",
            )?;
            prop_assert_eq!(ids.len(), batch.len(), "one id list per site");
            let flat: Vec<InstrId> = ids.iter().flatten().copied().collect();
            check_fresh(&flat, flat.len())?;
            // The model: each site's code right before its instruction (after code an
            // earlier site put there), then every reference the body held before moves
            // to the first code inserted before the instruction it named.
            let mut first_before = BTreeMap::new();
            for ((&at, r), ids) in ats.iter().zip(&resolved).zip(&ids) {
                prop_assert_eq!(ids.len(), r.len(), "one id per new instruction");
                let exp: Vec<_> = r.iter().map(|r| r.1.clone()).collect();
                want.insert(want.pos(at), ids, &exp);
                if let Some(&first) = ids.first() {
                    first_before.entry(at).or_insert(first);
                }
            }
            if *redirect {
                for (&at, &first) in &first_before {
                    if want.retarget(at, first, &flat) > 0 {
                        tally.add("insert_before_each moved a branch");
                    }
                    want.move_starts(at, first);
                }
                if first_before.len() < ids.iter().filter(|ids| !ids.is_empty()).count() {
                    tally.add("insert_before_each with two sites at one instruction");
                }
            }
            tally.add(if *redirect {
                "insert_before_each redirect"
            } else {
                "insert_before_each keep"
            });
        }
        Edit::InsertAfter { at, code, all } => {
            let Some(at) = at.resolve(&before, None) else {
                return Ok(Outcome::Skipped);
            };
            if !code.is_empty() && lands_after_a_filter(&before, before.next(at)) {
                tally.add("insertion between a filter and its handler (not modelled, skipped)");
                return Ok(Outcome::Skipped);
            }
            let single = !*all && !code.is_empty();
            let code = if single { &code[..1] } else { &code[..] };
            let resolved: Vec<_> = code
                .iter()
                .map(|c| c.resolve(body, &before, Some(at)))
                .collect();
            let instrs: Vec<Instruction> = resolved.iter().map(|r| r.0).collect();
            let ids: Vec<InstrId> = if single {
                vec![ok(body.insert_after(at, instrs[0]), "insert_after")?]
            } else {
                ok(body.insert_all_after(at, &instrs), "insert_all_after")?.to_vec()
            };
            check_fresh(&ids, instrs.len())?;
            let exp: Vec<_> = resolved.into_iter().map(|r| r.1).collect();
            want.insert(before.pos(at) + 1, &ids, &exp);
            tally.add(if single {
                "insert_after"
            } else {
                "insert_all_after"
            });
        }
        Edit::Append(code) => {
            let (instr, exp) = code.resolve(body, &before, None);
            let id = body.append(instr);
            check_fresh(&[id], 1)?;
            want.insert(n, &[id], &[exp]);
            tally.add("append");
        }
        Edit::BeforeLast { code, redirect } => {
            let Some(&last) = before.order.last() else {
                return Ok(Outcome::Skipped);
            };
            if !*redirect && !code.is_empty() && lands_after_a_filter(&before, Some(last)) {
                tally.add("insertion between a filter and its handler (not modelled, skipped)");
                return Ok(Outcome::Skipped);
            }
            let resolved: Vec<_> = code
                .iter()
                .map(|c| c.resolve(body, &before, Some(last)))
                .collect();
            let instrs: Vec<Instruction> = resolved.iter().map(|r| r.0).collect();
            let incoming = if *redirect {
                Incoming::Redirect
            } else {
                Incoming::Keep
            };
            let ids = ok(
                body.insert_all_before(last, &instrs, incoming),
                "insert_all_before last",
            )?;
            check_fresh(&ids, instrs.len())?;
            let exp: Vec<_> = resolved.into_iter().map(|r| r.1).collect();
            want.insert(n - 1, &ids, &exp);
            if *redirect && !ids.is_empty() {
                want.retarget(last, ids[0], &ids);
                want.move_starts(last, ids[0]);
            }
            tally.add("insert before the last instruction");
        }
        Edit::Replace { at, op, bits } => {
            let Some(start) = at.resolve(&before, None) else {
                return Ok(Outcome::Skipped);
            };
            let p = before.pos(start);
            let Some(at) = (0..n)
                .map(|k| before.order[(p + k) % n])
                .find(|id| is_non_terminator(before.instrs[id].0))
            else {
                return Ok(Outcome::Skipped);
            };
            let operand = operand_from_bits(op.operand(), *bits);
            let old = ok(body.replace(at, Instruction::new(*op, operand)), "replace")?;
            prop_assert_eq!((old.opcode, opnd(body, &old)), before.instrs[&at].clone());
            want.instrs.insert(at, (*op, Opnd::Value(operand)));
            tally.add("replace");
        }
        Edit::Remove(at) => {
            let Some(at) = at.resolve(&before, None) else {
                return Ok(Outcome::Skipped);
            };
            let refusal = remove_refusal(&before, at);
            match (body.remove(at), refusal) {
                (Err(Error::EditWouldEmptyRegion { .. }), Some(why)) if why.contains("empty") => {
                    tally.add(why);
                }
                (Err(Error::EditWouldDangle { .. }), Some(why)) if !why.contains("empty") => {
                    tally.add(why);
                }
                (Ok(removed), None) => {
                    let (prev, next) = (before.prev(at), before.next(at));
                    // What was removed; a branch of it to itself moved on like the others.
                    let mut was = before.clone();
                    if let Some(next) = next {
                        was.retarget(at, next, &[]);
                    }
                    prop_assert_eq!(
                        (removed.opcode, opnd(body, &removed)),
                        was.instrs[&at].clone()
                    );
                    want.order.retain(|&id| id != at);
                    want.instrs.remove(&at);
                    if let Some(next) = next {
                        if want.retarget(at, next, &[]) > 0 {
                            tally.add("remove moved a branch");
                        }
                        want.move_starts(at, next);
                    }
                    for c in &mut want.clauses {
                        if c.try_last == at {
                            c.try_last = prev.unwrap();
                        }
                        if c.handler_last == at {
                            c.handler_last = prev.unwrap();
                        }
                    }
                    if before.clauses.iter().any(|c| c.filter_start() == Some(at)) {
                        tally.add("remove of the first instruction of a filter");
                    }
                    if before.clauses.iter().any(|c| {
                        [c.try_start, c.try_last, c.handler_start, c.handler_last].contains(&at)
                    }) {
                        tally.add("remove of a region boundary");
                    }
                    tally.add("remove");
                }
                (Err(Error::BadEhNesting { .. }), None) => {
                    // Refused because the clauses would become invalid (e.g. a region
                    // shrinking onto another clause's region nested in it): the model of
                    // the removal must agree that they would.
                    let (prev, next) = (before.prev(at), before.next(at));
                    let mut sim = before.clone();
                    sim.order.retain(|&id| id != at);
                    sim.instrs.remove(&at);
                    if let Some(next) = next {
                        sim.move_starts(at, next);
                    }
                    for c in &mut sim.clauses {
                        if c.try_last == at {
                            c.try_last = prev.unwrap();
                        }
                        if c.handler_last == at {
                            c.handler_last = prev.unwrap();
                        }
                    }
                    let pc = sim.pos_clauses(&sim.clauses);
                    prop_assert!(
                        clauses_well_formed(&pc, sim.order.len()).is_err(),
                        "remove({:?}) refused as invalid, but the model's result is valid: {:?}",
                        at,
                        pc
                    );
                    tally.add("remove refused: clauses would become invalid");
                }
                (got, refusal) => {
                    return Err(fail(format!(
                        "remove({at:?}) gave {got:?}, expected {}; body {before:?}",
                        refusal.unwrap_or("success")
                    )));
                }
            }
        }
        Edit::Retarget { from, to } => {
            let (Some(from), Some(to)) = (from.resolve(&before, None), to.resolve(&before, None))
            else {
                return Ok(Outcome::Skipped);
            };
            let changed = ok(body.retarget_branches(from, to), "retarget_branches")?;
            prop_assert_eq!(changed, want.retarget(from, to, &[]), "slots retargeted");
            tally.add(if changed > 0 {
                "retarget moved branches"
            } else {
                "retarget moved nothing"
            });
        }
        Edit::AddClause(c) => {
            let Some(clause) = c.place(&before) else {
                return Ok(Outcome::Skipped);
            };
            // Where the clause may go: every position that keeps the list well-formed.
            let base = before.pos_clauses(&before.clauses);
            let placed = before.pos_clauses(&[clause])[0];
            let fits: Vec<usize> = (0..=base.len())
                .filter(|&k| {
                    let mut cs = base.clone();
                    cs.insert(k, placed);
                    clauses_well_formed(&cs, n).is_ok()
                })
                .collect();
            match body.add_clause(clause) {
                Ok(k) => {
                    prop_assert!(
                        fits.contains(&k),
                        "add_clause put {:?} at {} of {:?}; fits {:?}",
                        clause,
                        k,
                        before.clauses,
                        fits
                    );
                    want.clauses.insert(k, clause);
                    if c.around.is_some() && !before.clauses.is_empty() {
                        tally.add("add_clause around an existing clause");
                    }
                    tally.add(if before.clauses.is_empty() {
                        "add_clause to a body without clauses"
                    } else {
                        "add_clause among others"
                    });
                }
                Err(Error::BadEhNesting { .. }) => {
                    prop_assert!(
                        fits.is_empty(),
                        "add_clause refused {:?} which fits at {:?} of {:?}",
                        clause,
                        fits,
                        before.clauses
                    );
                    tally.add("add_clause refused");
                    let mut unordered = base.clone();
                    unordered.push(placed);
                    if clauses_compatible(&unordered, n).is_ok() {
                        tally.add("add_clause refused: compatible but no inner-first position");
                    }
                }
                Err(e) => return Err(fail(format!("add_clause: unexpected error {e}"))),
            }
        }
    }
    let after = Snap::of(body);
    if after != want {
        return Err(fail(format!(
            "{edit:?} did not do what it promises:\n  got  {after:?}\n  want {want:?}\n  before {before:?}"
        )));
    }
    let s = shape(body);
    let valid = body.validate_clauses();
    let oracle = clauses_well_formed(&s.clauses, s.code.len());
    if let Err(e) = valid.map_err(|e| e.to_string()).and(oracle) {
        return Err(fail(format!(
            "{edit:?} left bad clauses ({e}):\n  before {:?}\n  after  {:?}",
            before.pos_clauses(&before.clauses),
            s.clauses
        )));
    }
    Ok(Outcome::Applied)
}

// ---- after the edits: the encoding and the IL map -------------------------------------

/// What the final checks saw, for the coverage tests.
#[derive(Debug, Default)]
struct Facts {
    bodies: usize,
    widened: usize,
    tiny_to_fat: usize,
    removed: usize,
    injected_runs: usize,
}

impl Facts {
    fn absorb(&mut self, other: Facts) {
        self.bodies += other.bodies;
        self.widened += other.widened;
        self.tiny_to_fat += other.tiny_to_fat;
        self.removed += other.removed;
        self.injected_runs += other.injected_runs;
    }
}

/// The IL map of `body` (edited since it was decoded) is exact, given the encoder's
/// layout `offsets` and the re-decoded body:
///
/// * it has one entry per surviving original instruction X, `old` = X's original offset,
///   `new` = the offset of the first instruction of the run of inserted instructions
///   right before X, or X's own offset if there is none (so every instruction from `new`
///   up to X is inserted code, and the one before `new` is not);
/// * the re-decoded code has an instruction at `new`, and at X's offset one with X's
///   opcode (or its long form);
/// * removed instructions have no entry;
/// * sorted by old offset, the new offsets strictly increase (edits never reorder code).
fn check_il_map(
    body: &MethodBody,
    decoded: &MethodBody,
    offsets: &[u32],
    map: &IlMap,
    facts: &mut Facts,
) -> Result<(), String> {
    let mut surviving = HashSet::new();
    let mut last_new = None;
    for id in body.instrs.ids() {
        let Some(old) = body.original_offset(id) else {
            continue;
        };
        surviving.insert(old);
        let home = offsets[id.index()];
        // The run of injected code that flows into `id`: back to the previous original
        // instruction, or to an injected one that does not fall through.
        let mut first = id;
        while let Some(p) = body.instrs.prev(first) {
            if body.original_offset(p).is_some() || !body.instrs.opcode(p).flow().falls_through() {
                break;
            }
            first = p;
        }
        let want = offsets[first.index()];
        if want < home {
            facts.injected_runs += 1;
        }
        let got = map.map(old);
        if got != Some(want) {
            return Err(format!(
                "{id:?} (was at {old}, now at {home}): map gives {got:?}, expected {want}"
            ));
        }
        if last_new.is_some_and(|l| want <= l) {
            return Err(format!("new offsets do not increase at old offset {old}"));
        }
        last_new = Some(want);
        let op = body.instrs.get(id).opcode;
        let at = |off: u32| {
            decoded
                .find_by_original_offset(off)
                .map(|d| decoded.instrs.get(d).opcode)
        };
        if at(want).is_none() {
            return Err(format!(
                "mapped offset {want} is not an instruction boundary"
            ));
        }
        match at(home) {
            Some(d) if d == op || op.long_form() == Some(d) => {}
            other => return Err(format!("{op} re-decoded at {home} as {other:?}")),
        }
    }
    for &old in body.original_offsets() {
        if !surviving.contains(&old) {
            facts.removed += 1;
            if let Some(new) = map.map(old) {
                return Err(format!("removed instruction at {old} maps to {new}"));
            }
        }
    }
    let entries = map.entries();
    if entries.len() != surviving.len() {
        return Err(format!(
            "{} entries for {} survivors",
            entries.len(),
            surviving.len()
        ));
    }
    for w in entries.windows(2) {
        if w[0].old_offset >= w[1].old_offset || w[0].new_offset >= w[1].new_offset {
            return Err(format!("entries not strictly increasing: {:?}", w));
        }
    }
    if entries.iter().any(|e| !e.accurate) {
        return Err("an entry is not marked accurate".into());
    }
    Ok(())
}

/// Encodes `body` and checks the result (see the module docs); returns the re-decoded
/// body.
fn check_encoding(body: &MethodBody, facts: &mut Facts) -> Result<MethodBody, TestCaseError> {
    let was_tiny = body.has_tiny_format();
    ok(body.validate_clauses(), "validate_clauses")?;
    let want = shape(body);
    clauses_well_formed(&want.clauses, want.code.len()).map_err(fail)?;

    let bytes = ok(body.encode(), "encode")?;
    // A reused encoder copies the code only while the list is unedited; after any edit
    // it must derive the same bytes as the reference path.
    let mut copied = Vec::new();
    ok(
        Encoder::new().encode(body, &mut copied),
        "encode with a reused encoder",
    )?;
    prop_assert_eq!(
        &copied,
        &bytes,
        "copying encoder differs from the reference"
    );
    let mut decoded = MethodBody::new();
    let used = ok(
        Decoder::new().decode_into(&bytes, &mut decoded),
        "decode(encode(b))",
    )?;
    prop_assert_eq!(used, bytes.len());
    ok(
        decoded.validate_clauses(),
        "validate_clauses of the re-decoded body",
    )?;
    let got = shape(&decoded);
    clauses_well_formed(&got.clauses, got.code.len()).map_err(fail)?;
    facts.bodies += 1;
    facts.tiny_to_fat += usize::from(was_tiny && !decoded.has_tiny_format());

    prop_assert_eq!(got.max_stack, want.max_stack);
    prop_assert_eq!(got.init_locals, want.init_locals);
    prop_assert_eq!(got.local_var_sig, want.local_var_sig);
    prop_assert_eq!(&got.clauses, &want.clauses);
    prop_assert_eq!(got.code.len(), want.code.len());

    // The encoder's layout is the real one: it is what the IL map is computed from.
    let offsets = ok(Encoder::new().code_offsets(body), "code_offsets")?.to_vec();
    let ids: Vec<InstrId> = body.instrs.ids().collect();
    for (p, d) in decoded.instrs.ids().enumerate() {
        prop_assert_eq!(decoded.original_offset(d), Some(offsets[ids[p].index()]));
    }
    prop_assert_eq!(decoded.original_code_size(), *offsets.last().unwrap());

    for (i, ((op, arg), (dop, darg))) in want.code.iter().zip(&got.code).enumerate() {
        prop_assert_eq!(arg, darg, "operand of instruction {} ({})", i, op);
        if op == dop {
            continue;
        }
        let widened = op.operand() == OperandKind::ShortBranch && op.long_form() == Some(*dop);
        prop_assert!(widened, "instruction {} changed from {} to {}", i, op, dop);
        let Arg::Target(t) = arg else { unreachable!() };
        let next = offsets[ids[i].index()] + op.fixed_len().unwrap();
        let disp = i64::from(offsets[ids[*t].index()]) - i64::from(next);
        prop_assert!(
            i8::try_from(disp).is_err(),
            "{} at {} widened needlessly",
            op,
            i
        );
        facts.widened += 1;
    }
    prop_assert_eq!(
        ok(decoded.encode(), "re-encode")?,
        bytes,
        "re-encoding differs"
    );

    let map = ok(IlMap::of(body), "IlMap::of")?;
    prop_assert_eq!(&map, &IlMap::from_offsets(body, &offsets));
    check_il_map(body, &decoded, &offsets, &map, facts)
        .map_err(|e| fail(format!("IL map: {e}")))?;
    Ok(decoded)
}

/// Applies `edits` to a copy of `original` (a decoded body) and checks everything.
fn check_edits(
    original: &MethodBody,
    edits: &[Edit],
    tally: &mut Tally,
) -> Result<Facts, TestCaseError> {
    let mut body = original.clone();
    for e in edits {
        match apply(&mut body, e, tally)? {
            Outcome::Applied => {}
            Outcome::Skipped => tally.add("skipped"),
        }
    }
    let mut facts = Facts::default();
    check_encoding(&body, &mut facts)?;
    Ok(facts)
}

/// A generated valid body, encoded and decoded (so that it has original offsets).
fn decoded_generated(spec: &common::BodySpec) -> MethodBody {
    let bytes = build(spec).0.encode().expect("valid bodies encode");
    MethodBody::decode(&bytes).expect("and decode")
}

proptest! {
    #![proptest_config(common::config(CASES))]

    #[test]
    fn edit_sequences_on_generated_bodies_keep_every_promise(
        spec in body_spec(),
        edits in edits(),
    ) {
        check_edits(&decoded_generated(&spec), &edits, &mut Tally::default())?;
    }
}

// ---- real bodies ------------------------------------------------------------------------

#[cfg(feature = "pe")]
mod real {
    use super::*;
    use ilrewrite::analysis::{CallEffect, CallSiteResolver, MaxStackMode, StackAnalyzer};
    use ilrewrite::pe::Assembly;
    use ilrewrite::sig::{LocalVarSig, summarize_method_sig};
    use ilrewrite::transform::{
        CatchRethrow, Returns, TailCallPolicy, WrapOptions, inject_epilogue, wrap_try_finally,
    };
    use std::sync::LazyLock;

    /// One distinct method body of the corpus.
    struct Sample {
        token: u32,
        body: &'static [u8],
        signature: &'static [u8],
        has_jmp: bool,
    }

    struct Corpus {
        data: &'static [u8],
        all: Vec<Sample>,
        /// Indexes into `all` of the bodies with EH clauses.
        with_eh: Vec<usize>,
        /// Indexes into `all` of the bodies whose stack stays empty (where wrapping
        /// raises the max stack).
        zero_stack: Vec<usize>,
    }

    /// The distinct IL bodies of System.Private.CoreLib of the newest runtime (.NET
    /// 8.0.4; the corpus tests go over every body of each runtime's framework).
    static CORELIB: LazyLock<Corpus> = LazyLock::new(|| {
        let runtime = ilrewrite_corpus::default_runtime().unwrap_or_else(|e| panic!("{e}"));
        let path = runtime.corelib();
        let data: &'static [u8] = std::fs::read(&path).expect("readable").leak();
        let asm = Assembly::parse(data).expect("CoreLib parses");
        let mut seen = HashSet::new();
        let mut all = Vec::new();
        let (mut with_eh, mut zero_stack) = (Vec::new(), Vec::new());
        let mut analyzer = StackAnalyzer::new();
        for m in asm.methods() {
            let m = m.expect("MethodDef rows resolve");
            let Some(code) = m.body else { continue };
            if !m.is_il() || !seen.insert(m.rva) {
                continue;
            }
            let body = MethodBody::decode(code).expect("CoreLib bodies decode");
            if !body.clauses.is_empty() {
                with_eh.push(all.len());
            }
            let returns = summarize_method_sig(m.signature)
                .expect("signature")
                .returns_value;
            let analysis = analyzer
                .analyze(
                    &body,
                    &MetadataResolver::new(&asm),
                    ReturnKind::value_if(returns),
                )
                .expect("verifies");
            if analysis.max_stack() == 0 {
                zero_stack.push(all.len());
            }
            all.push(Sample {
                token: m.token,
                body: code,
                signature: m.signature,
                has_jmp: body.instrs.iter().any(|(_, i)| i.opcode == OpCode::Jmp),
            });
        }
        Corpus {
            data,
            all,
            with_eh,
            zero_stack,
        }
    });

    /// A sample, bodies with EH clauses drawn half of the time.
    fn sample() -> impl Strategy<Value = usize> {
        (prop::bool::weighted(0.5), any::<Index>()).prop_map(|(eh, i)| {
            let c = &*CORELIB;
            if eh {
                c.with_eh[i.index(c.with_eh.len())]
            } else {
                i.index(c.all.len())
            }
        })
    }

    /// For wrapping: bodies with EH clauses and with an empty stack throughout
    /// over-represented.
    fn wrap_sample() -> impl Strategy<Value = usize> {
        let pick = |pool: fn(&Corpus) -> &Vec<usize>| {
            any::<Index>().prop_map(move |i| {
                let pool = pool(&CORELIB);
                pool[i.index(pool.len())]
            })
        };
        prop_oneof![
            2 => sample(),
            1 => pick(|c| &c.with_eh),
            1 => pick(|c| &c.zero_stack),
        ]
    }

    const ENTER: u32 = 0x0AFF_FF01;
    const EXIT: u32 = 0x0AFF_FF02;
    const CATCH: u32 = 0x0AFF_FF03;
    const RETURN: u32 = 0x0AFF_FF04;

    /// Calls through the assembly's metadata; the hooks take one argument and return
    /// nothing.
    struct Hooks<'a>(pub Assembly<'a>);

    impl CallSiteResolver for Hooks<'_> {
        fn call_effect(&self, opcode: OpCode, token: u32) -> ilrewrite::Result<CallEffect> {
            match token {
                ENTER | EXIT | CATCH | RETURN => Ok(CallEffect { pops: 1, pushes: 0 }),
                _ => MetadataResolver::new(&self.0).call_effect(opcode, token),
            }
        }
    }

    /// What a wrapped body was, for the coverage test.
    struct WrapFacts {
        m: u16,
        returns_value: bool,
        had_eh: bool,
    }

    #[derive(Debug, Clone)]
    struct WrapChoice {
        /// A catch-and-rethrow handler: none, with generated `pop`, or calling a hook.
        catch: Option<bool>,
        /// A hook call injected before the epilogue (with the return value if any).
        epilogue_hook: bool,
    }

    fn wrap_choice() -> impl Strategy<Value = WrapChoice> {
        (prop::option::of(any::<bool>()), any::<bool>()).prop_map(|(catch, epilogue_hook)| {
            WrapChoice {
                catch,
                epilogue_hook,
            }
        })
    }

    /// Wraps the sample as an APM agent would, computes the max stack and checks it is
    /// `max(M, 1)`, and that the result encodes, re-decodes, verifies and maps exactly.
    fn check_wrap(
        hooks: &Hooks<'_>,
        sample: &Sample,
        choice: &WrapChoice,
        analyzer: &mut StackAnalyzer,
    ) -> Result<WrapFacts, TestCaseError> {
        let original = ok(MethodBody::decode(sample.body), "decode")?;
        let returns_value = ok(summarize_method_sig(sample.signature), "signature")?.returns_value;
        let m = ok(
            analyzer.analyze(&original, hooks, ReturnKind::value_if(returns_value)),
            "unedited body verifies",
        )?
        .max_stack();
        let returns = if returns_value {
            let locals = match original.local_var_sig {
                0 => 0,
                sig => {
                    let blob = ok(hooks.0.standalone_sig(sig), "locals signature")?;
                    ok(LocalVarSig::parse(blob), "LocalVarSig")?.len()
                }
            };
            Returns::Value {
                local: locals as u16,
            }
        } else {
            Returns::Void
        };
        let token = Instruction::ldc_i4(sample.token as i32);
        let hook = |t| Instruction::with_token(OpCode::Call, t);
        let catch_code = [hook(CATCH)];
        let catch = choice.catch.map(|calls| CatchRethrow {
            type_token: 0x0100_0001,
            code: if calls { &catch_code } else { &[] },
        });
        let mut body = original.clone();
        let wrapped = ok(
            wrap_try_finally(
                &mut body,
                &WrapOptions {
                    returns,
                    entry: &[token, hook(ENTER)],
                    exit: &[token, hook(EXIT)],
                    catch,
                    tail_calls: TailCallPolicy::DropPrefix,
                },
            ),
            "wrap_try_finally",
        )?;
        if choice.epilogue_hook {
            let load = match returns {
                Returns::Value { local } => Instruction::ldloc(local),
                Returns::Void => token,
            };
            ok(
                inject_epilogue(&mut body, wrapped.epilogue, &[load, hook(RETURN)]),
                "inject_epilogue",
            )?;
        }
        let report = ok(
            analyzer.apply_max_stack(
                &mut body,
                hooks,
                MaxStackMode::Compute,
                ReturnKind::value_if(returns_value),
            ),
            "the wrapped body verifies",
        )?;
        prop_assert_eq!(
            report.computed,
            Some(m.max(1)),
            "max stack {} before wrapping",
            m
        );
        prop_assert_eq!(body.max_stack, m.max(1));

        let decoded = check_encoding(&body, &mut Facts::default())?;
        let again = ok(
            analyzer.analyze(&decoded, hooks, ReturnKind::value_if(returns_value)),
            "re-decoded body verifies",
        )?;
        prop_assert_eq!(again.max_stack(), decoded.max_stack);
        Ok(WrapFacts {
            m,
            returns_value,
            had_eh: !original.clauses.is_empty(),
        })
    }

    fn hooks() -> Hooks<'static> {
        Hooks(Assembly::parse(CORELIB.data).expect("CoreLib parses"))
    }

    proptest! {
        #![proptest_config(common::config(CASES))]

        #[test]
        fn edit_sequences_on_corelib_bodies_keep_every_promise(i in sample(), edits in edits()) {
            let original = MethodBody::decode(CORELIB.all[i].body).unwrap();
            check_edits(&original, &edits, &mut Tally::default())?;
        }

        #[test]
        fn wrapping_corelib_bodies_adds_exactly_the_hooks_stack_needs(
            i in wrap_sample(),
            choice in wrap_choice(),
        ) {
            let s = &CORELIB.all[i];
            // ECMA-335 III.3.37: `jmp` cannot sit in a try block; profilers skip such methods.
            prop_assume!(!s.has_jmp);
            check_wrap(&hooks(), s, &choice, &mut StackAnalyzer::new())?;
        }
    }

    /// Over fixed-seed samples as the real-body properties draw them: bodies with EH
    /// clauses are over-represented, the edits take their interesting paths on real code
    /// too, and the wrapped bodies include void and value methods, methods with EH
    /// clauses, methods whose stack stays empty (where the hooks raise
    /// the max stack to 1) and every catch and epilogue shape.
    #[test]
    fn real_body_samples_cover_what_the_properties_claim() {
        let mut runner = TestRunner::deterministic();
        let (mut tally, mut facts) = (Tally::default(), Facts::default());
        let mut eh = 0;
        let strategy = (sample(), edits());
        for _ in 0..CASES {
            let (i, edits) = strategy.new_tree(&mut runner).unwrap().current();
            let original = MethodBody::decode(CORELIB.all[i].body).unwrap();
            eh += usize::from(!original.clauses.is_empty());
            facts.absorb(check_edits(&original, &edits, &mut tally).unwrap());
        }
        let c = &*CORELIB;
        eprintln!(
            "CoreLib: {} distinct bodies, {} with EH, {} with max stack 0",
            c.all.len(),
            c.with_eh.len(),
            c.zero_stack.len()
        );
        eprintln!("{CASES} CoreLib bodies edited, {eh} with EH: {facts:?}; {tally:#?}");
        assert!(eh * 3 >= CASES as usize, "too few bodies with EH");
        for what in [
            "insert_before redirect",
            "insert_all_before redirect",
            "redirect moved a branch",
            "redirect moved a region start",
            "remove",
            "remove moved a branch",
            "remove of a region boundary",
            "remove refused: would empty a region",
            "remove refused: a branch target that ends a region",
            "replace",
            "retarget moved branches",
            "add_clause among others",
            "add_clause around an existing clause",
            "add_clause refused",
        ] {
            assert!(tally.0.get(what).is_some_and(|&n| n > 0), "never: {what}");
        }
        assert!(facts.removed > 0 && facts.injected_runs > 0 && facts.widened > 0);

        let hooks = hooks();
        let mut analyzer = StackAnalyzer::new();
        let mut seen = BTreeMap::<&str, usize>::new();
        let strategy = (wrap_sample(), wrap_choice());
        for _ in 0..CASES {
            let (i, choice) = strategy.new_tree(&mut runner).unwrap().current();
            let s = &CORELIB.all[i];
            if s.has_jmp {
                continue;
            }
            let f = check_wrap(&hooks, s, &choice, &mut analyzer).unwrap();
            for (what, yes) in [
                ("void", !f.returns_value),
                ("value", f.returns_value),
                ("max stack 0", f.m == 0),
                ("max stack 1", f.m == 1),
                ("max stack > 1", f.m > 1),
                ("EH clauses", f.had_eh),
                ("no catch", choice.catch.is_none()),
                ("catch with pop", choice.catch == Some(false)),
                ("catch with hook", choice.catch == Some(true)),
                ("epilogue hook", choice.epilogue_hook),
            ] {
                *seen.entry(what).or_default() += usize::from(yes);
            }
        }
        eprintln!("{CASES} CoreLib bodies wrapped: {seen:?}");
        for (what, n) in &seen {
            assert!(*n > 0, "no wrapped body with {what}");
        }
    }
}

// ---- the generators and checkers do what the properties rely on -----------------------

/// Over a fixed-seed sample of generated bodies, every edit kind runs and every outcome
/// the model distinguishes occurs, and the final checks see widened branches, tiny
/// bodies growing fat, removed instructions and runs of injected code.
#[test]
fn edit_sequences_cover_every_edit_and_outcome() {
    let mut runner = TestRunner::deterministic();
    let strategy = (body_spec(), edits());
    let (mut tally, mut facts) = (Tally::default(), Facts::default());
    for _ in 0..CASES {
        let (spec, edits) = strategy.new_tree(&mut runner).unwrap().current();
        facts.absorb(check_edits(&decoded_generated(&spec), &edits, &mut tally).unwrap());
    }
    eprintln!("{CASES} generated bodies edited: {facts:?}; {tally:#?}");
    for what in [
        "insert_before keep",
        "insert_before redirect",
        "insert_all_before keep",
        "insert_all_before redirect",
        "redirect moved a branch",
        "redirect moved a region start",
        "redirect with inserted branch to the insertion point",
        "insert_before_each keep",
        "insert_before_each redirect",
        "insert_before_each moved a branch",
        "insert_before_each with two sites at one instruction",
        "insert_after",
        "insert_all_after",
        "append",
        "insert before the last instruction",
        "replace",
        "remove",
        "remove moved a branch",
        "remove of a region boundary",
        "remove of the first instruction of a filter",
        "remove refused: would empty a region",
        "remove refused: a branch target without a next instruction",
        "remove refused: a branch target that ends a region",
        "remove refused: a branch target before a handler or filter",
        "retarget moved branches",
        "add_clause to a body without clauses",
        "add_clause among others",
        "add_clause around an existing clause",
        "add_clause refused",
    ] {
        assert!(tally.0.get(what).is_some_and(|&n| n > 0), "never: {what}");
    }
    assert!(facts.widened > 0, "no branch was widened");
    assert!(facts.tiny_to_fat > 0, "no tiny body grew fat");
    assert!(facts.removed > 0, "no original instruction was removed");
    assert!(
        facts.injected_runs > 0,
        "no injected run before an original instruction"
    );
}

/// The IL-map checker rejects maps that are off: the identity map of an edited body, and
/// a map one entry short.
#[test]
fn il_map_checker_rejects_wrong_maps() {
    // ldarg.0; brfalse.s +2; ldc.i4.1; ret; ldc.i4.2; ret
    let mut body = MethodBody::decode(&[0x1E, 0x02, 0x2C, 0x02, 0x17, 0x2A, 0x18, 0x2A]).unwrap();
    let ids: Vec<InstrId> = body.instrs.ids().collect();
    body.insert_before(ids[2], Instruction::simple(OpCode::Nop), Incoming::Keep)
        .unwrap();
    body.remove(ids[4]).unwrap(); // ldc.i4.2: the branch moves to the last ret
    let mut facts = Facts::default();
    let decoded = check_encoding(&body, &mut facts).expect("the real map passes");
    let offsets = Encoder::new().code_offsets(&body).unwrap().to_vec();
    let identity = IlMap::identity(body.original_offsets());
    assert!(check_il_map(&body, &decoded, &offsets, &identity, &mut facts).is_err());
    let exact = IlMap::of(&body).unwrap();
    let short = IlMap::identity(&body.original_offsets()[1..]).then(&exact);
    assert!(check_il_map(&body, &decoded, &offsets, &short, &mut facts).is_err());
}

/// The clause checker rejects what the crate must never produce.
#[test]
fn clause_checker_rejects_bad_clauses() {
    let c = |kind, try_, handler| Clause {
        kind,
        try_,
        handler,
    };
    let inner = c(Kind::Finally, (1, 2), (3, 3));
    let outer = c(Kind::Catch(1), (0, 3), (4, 5));
    assert!(clauses_well_formed(&[inner, outer], 6).is_ok());
    assert!(
        clauses_well_formed(&[outer, inner], 6).is_err(),
        "outer first"
    );
    assert!(
        clauses_well_formed(&[c(Kind::Fault, (0, 2), (2, 3))], 6).is_err(),
        "own overlap"
    );
    assert!(
        clauses_well_formed(&[c(Kind::Fault, (3, 2), (4, 4))], 6).is_err(),
        "empty try"
    );
    assert!(
        clauses_well_formed(&[c(Kind::Filter(3), (0, 1), (2, 2))], 6).is_err(),
        "filter"
    );
    let crossing = c(Kind::Finally, (2, 4), (5, 5));
    assert!(
        clauses_well_formed(&[inner, crossing], 6).is_err(),
        "crossing tries"
    );
    let shared = c(Kind::Fault, (1, 2), (4, 4));
    assert!(
        clauses_well_formed(&[inner, shared], 6).is_ok(),
        "shared try"
    );
    let same_handler = c(Kind::Fault, (0, 0), (3, 3));
    assert!(
        clauses_well_formed(&[inner, same_handler], 6).is_err(),
        "shared handler"
    );
}

// ---- regressions: minimal inputs the properties found ----------------------------------

/// The branch target of the branch `id`.
fn target(b: &MethodBody, id: InstrId) -> InstrId {
    match b.instrs.get(id).operand {
        Operand::Target(t) => t,
        other => panic!("{other:?}"),
    }
}

/// `ldarg.0; brfalse.s +1 (to the ret); nop; ret`
fn branch_over_nop() -> MethodBody {
    MethodBody::decode(&[0x16, 0x02, 0x2C, 0x01, 0x00, 0x2A]).unwrap()
}

/// Found by `edit_sequences_on_*`: with `Incoming::Redirect`, a branch in the inserted code
/// that targets the insertion point was redirected too, to the first inserted instruction:
/// `insert_before(ret, br.s ret, Redirect)` produced `br.s -2`, a jump to itself (a hang),
/// and an epilogue guard `ldsfld; brfalse.s EPI; call hook` inserted before the epilogue
/// looped on itself instead of skipping the hook.
#[test]
fn regression_redirect_leaves_the_inserted_code_own_branches_alone() {
    let original = branch_over_nop();
    let ids: Vec<InstrId> = original.instrs.ids().collect();
    let (brfalse, ret) = (ids[1], ids[3]);

    let mut one = original.clone();
    let br = Instruction::branch(OpCode::Br, ret);
    let new = one.insert_before(ret, br, Incoming::Redirect).unwrap();
    assert_eq!(
        target(&one, brfalse),
        new,
        "the incoming branch runs the new code"
    );
    assert_eq!(
        target(&one, new),
        ret,
        "the new branch still goes to the ret"
    );
    // ldarg.0; brfalse.s +1 (to the br.s); nop; br.s +0 (to the ret); ret
    let code = [0x02, 0x2C, 0x01, 0x00, 0x2B, 0x00, 0x2A];
    assert_eq!(&one.encode().unwrap()[1..], code);

    let mut guard = original.clone();
    let code = [
        Instruction::with_token(OpCode::Ldsfld, 0x0400_0001),
        Instruction::branch(OpCode::Brfalse, ret),
        Instruction::with_token(OpCode::Call, 0x0A00_0001),
    ];
    let new = guard
        .insert_all_before(ret, &code, Incoming::Redirect)
        .unwrap();
    assert_eq!(target(&guard, brfalse), new[0]);
    assert_eq!(target(&guard, new[1]), ret, "the guard skips the hook");
    let mut facts = Facts::default();
    check_encoding(&one, &mut facts).unwrap();
    check_encoding(&guard, &mut facts).unwrap();
}

/// try { nop; leave END } filter { <filter> } { pop; leave END } END: ret, as `(body,
/// filter ids)`.
fn filter_body(filter: &[Instruction]) -> (MethodBody, Vec<InstrId>) {
    let mut b = MethodBody::new();
    let t0 = b.append(Instruction::simple(OpCode::Nop));
    let t1 = b.append(Instruction::simple(OpCode::Nop));
    let f: Vec<InstrId> = filter.iter().map(|&i| b.append(i)).collect();
    let h0 = b.append(Instruction::simple(OpCode::Pop));
    let h1 = b.append(Instruction::simple(OpCode::Nop));
    let end = b.append(Instruction::simple(OpCode::Ret));
    b.replace(t1, Instruction::branch(OpCode::Leave, end))
        .unwrap();
    b.replace(h1, Instruction::branch(OpCode::Leave, end))
        .unwrap();
    b.add_clause(ExceptionClause::new(
        ClauseKind::Filter(f[0]),
        t0,
        t1,
        h0,
        h1,
    ))
    .unwrap();
    (b, f)
}

/// Found by `edit_sequences_on_generated_bodies_*`: `remove` refused the first
/// instruction of any filter with `EditWouldEmptyRegion`, however long the filter.
#[test]
fn regression_removing_the_first_instruction_of_a_long_filter_is_allowed() {
    let (mut body, f) = filter_body(&[
        Instruction::simple(OpCode::Nop),
        Instruction::simple(OpCode::Pop),
        Instruction::ldc_i4(1),
        Instruction::simple(OpCode::Endfilter),
    ]);
    body.remove(f[0])
        .expect("the filter keeps three instructions");
    assert_eq!(body.clauses[0].filter_start(), Some(f[1]));
    check_encoding(&body, &mut Facts::default()).unwrap();
    // A one-instruction filter is still refused.
    let (mut body, f) = filter_body(&[Instruction::simple(OpCode::Endfilter)]);
    assert!(matches!(
        body.remove(f[0]),
        Err(Error::EditWouldEmptyRegion { .. })
    ));
}

/// Found by `edit_sequences_on_corelib_bodies_*`: removing a branch target whose next
/// instruction starts a handler moved the branches into the handler, which only the
/// runtime may enter (the stack analysis rejects such a body). The realistic case is the
/// `endfilter` that Roslyn's filters branch to: removed, the branch went to the handler.
#[test]
fn regression_remove_never_moves_branches_into_a_handler() {
    // filter { pop; ldc.i4.1; br.s E; E: endfilter }
    let (mut body, f) = filter_body(&[
        Instruction::simple(OpCode::Pop),
        Instruction::ldc_i4(1),
        Instruction::simple(OpCode::Nop),
        Instruction::simple(OpCode::Endfilter),
    ]);
    body.replace(f[2], Instruction::branch(OpCode::Br, f[3]))
        .unwrap();
    let before = Snap::of(&body);
    assert!(matches!(
        body.remove(f[3]),
        Err(Error::EditWouldDangle { .. })
    ));
    assert_eq!(Snap::of(&body), before, "a refusal changes nothing");

    // An instruction outside every region, right before a catch handler placed before its
    // try: br.s L; L: nop; { pop; leave END } try { nop; leave END } END: ret
    let mut b = MethodBody::new();
    let br = b.append(Instruction::simple(OpCode::Nop));
    let l = b.append(Instruction::simple(OpCode::Nop));
    let h0 = b.append(Instruction::simple(OpCode::Pop));
    let h1 = b.append(Instruction::simple(OpCode::Nop));
    let t0 = b.append(Instruction::simple(OpCode::Nop));
    let t1 = b.append(Instruction::simple(OpCode::Nop));
    let end = b.append(Instruction::simple(OpCode::Ret));
    b.replace(br, Instruction::branch(OpCode::Br, l)).unwrap();
    b.replace(h1, Instruction::branch(OpCode::Leave, end))
        .unwrap();
    b.replace(t1, Instruction::branch(OpCode::Leave, end))
        .unwrap();
    b.add_clause(ExceptionClause::new(
        ClauseKind::Catch(0x0100_0001),
        t0,
        t1,
        h0,
        h1,
    ))
    .unwrap();
    assert!(matches!(b.remove(l), Err(Error::EditWouldDangle { .. })));
}

/// Regression (found by `edit_sequences_on_generated_bodies_*`): `remove` of the one
/// instruction by which a region exceeds a region of another clause nested in it made the
/// two regions equal, a layout `validate_clauses` (and `add_clause`) reject. Here clause
/// B's finally handler is `[1, 2]` and clause A's try `[2, 2]`; removing instruction 1
/// would leave B's handler equal to A's try. It is now refused, body untouched.
#[test]
fn regression_remove_cannot_make_a_try_equal_to_a_handler() {
    let mut b = MethodBody::new();
    let ids: Vec<InstrId> = (0..5)
        .map(|_| b.append(Instruction::simple(OpCode::Nop)))
        .collect();
    let clause = |t: (usize, usize), h: (usize, usize)| {
        ExceptionClause::new(ClauseKind::Finally, ids[t.0], ids[t.1], ids[h.0], ids[h.1])
    };
    b.add_clause(clause((0, 0), (1, 2))).unwrap(); // B
    b.add_clause(clause((2, 2), (3, 3))).unwrap(); // A, inside B's handler
    b.validate_clauses().unwrap();
    let before = b.clone();
    assert!(matches!(b.remove(ids[1]), Err(Error::BadEhNesting { .. })));
    assert_eq!(b.clauses, before.clauses);
    assert!(b.instrs.contains(ids[1]));
    b.validate_clauses().unwrap();
}

/// Regression (found by `edit_sequences_on_generated_bodies_*`): code inserted between a
/// filter and its handler (`insert_after` the filter's last instruction, or
/// `insert_before` the handler with `Incoming::Keep`) joins the filter, whose region runs
/// up to the handler. When the filter is nested in a region of another clause that ends
/// with it (here a fault handler `[4, 7]` holds the try and the filter `[7, 7]` of a
/// filter clause whose handler `[8, 8]` follows), the longer filter would cross that
/// region: the insertion is refused and the body left as it was.
#[test]
fn regression_inserting_between_a_filter_and_its_handler_is_refused_when_it_breaks_nesting() {
    let mut b = MethodBody::new();
    let ids: Vec<InstrId> = (0..10)
        .map(|_| b.append(Instruction::simple(OpCode::Nop)))
        .collect();
    let fault = ExceptionClause::new(ClauseKind::Fault, ids[0], ids[3], ids[4], ids[7]);
    let filter = ExceptionClause::new(ClauseKind::Filter(ids[7]), ids[5], ids[6], ids[8], ids[8]);
    b.add_clause(fault).unwrap();
    b.add_clause(filter).unwrap();
    b.validate_clauses().unwrap();
    let before: Vec<InstrId> = b.instrs.ids().collect();
    for result in [
        b.insert_after(ids[7], Instruction::simple(OpCode::Nop))
            .map(|_| ()),
        b.insert_before(ids[8], Instruction::simple(OpCode::Nop), Incoming::Keep)
            .map(|_| ()),
        b.insert_all_after(ids[7], &[Instruction::simple(OpCode::Nop); 2])
            .map(|_| ()),
        // All or nothing: the first site is fine on its own, the second is refused.
        b.insert_before_each(
            &[
                (ids[2], &[Instruction::simple(OpCode::Nop)]),
                (ids[8], &[Instruction::simple(OpCode::Nop)]),
            ],
            Incoming::Keep,
        )
        .map(|_| ()),
    ] {
        assert!(
            matches!(result, Err(Error::BadEhNesting { .. })),
            "{result:?}"
        );
        assert_eq!(b.instrs.ids().collect::<Vec<_>>(), before);
        b.validate_clauses().unwrap();
    }
}

/// `insert_before_each` moves only the references the body held before the call: code
/// inserted at one site that branches to another site's instruction keeps that target
/// (the sequential `insert_all_before` calls would move it to the later site's code),
/// and a site that is not in the body refuses the whole batch, body untouched.
#[test]
fn regression_insert_before_each_moves_only_references_held_before() {
    let original = branch_over_nop();
    let ids: Vec<InstrId> = original.instrs.ids().collect();
    let (brfalse, nop, ret) = (ids[1], ids[2], ids[3]);
    let probe = |n: i32| [Instruction::ldc_i4(n), Instruction::simple(OpCode::Pop)];
    let (p0, p1) = (probe(0), probe(1));
    let to_ret = [Instruction::branch(OpCode::Br, ret)];

    let mut batch = original.clone();
    let sites: [(InstrId, &[Instruction]); 3] = [(nop, &to_ret), (ret, &p0), (ret, &p1)];
    let new = batch
        .insert_before_each(&sites, Incoming::Redirect)
        .unwrap();
    assert_eq!(
        new.iter().map(|ids| ids.len()).collect::<Vec<_>>(),
        [1, 2, 2]
    );
    assert_eq!(
        target(&batch, brfalse),
        new[1][0],
        "the old branch runs the probes"
    );
    assert_eq!(target(&batch, new[0][0]), ret, "the new branch skips them");
    let order: Vec<InstrId> = batch.instrs.ids().collect();
    let want: Vec<InstrId> = [&ids[..2], &new[0][..], &ids[2..3], &new[1][..], &new[2][..]]
        .concat()
        .into_iter()
        .chain([ret])
        .collect();
    assert_eq!(order, want, "two sites at the ret go in site order");

    let mut sequential = original.clone();
    for (at, code) in sites {
        sequential
            .insert_all_before(at, code, Incoming::Redirect)
            .unwrap();
    }
    assert_eq!(
        target(&sequential, new[0][0]),
        new[1][0],
        "one call per site moves the first site's branch too"
    );

    let mut refused = original.clone();
    let before: Vec<InstrId> = refused.instrs.ids().collect();
    // An id of another body, past the end of this one's arena.
    let missing = original.clone().append(Instruction::simple(OpCode::Nop));
    let result = refused.insert_before_each(&[(ret, &p0), (missing, &p1)], Incoming::Redirect);
    assert!(matches!(result, Err(Error::NotInBody { .. })), "{result:?}");
    assert_eq!(refused.instrs.ids().collect::<Vec<_>>(), before);
    assert_eq!(target(&refused, brfalse), ret);
    let mut facts = Facts::default();
    check_encoding(&batch, &mut facts).unwrap();
}

/// Where the filter is not nested in a region ending with it, code inserted before its
/// handler joins the filter, as `insert_after` documents, and the body stays valid.
#[test]
fn regression_inserting_between_a_filter_and_its_handler_joins_the_filter() {
    let mut b = MethodBody::new();
    let ids: Vec<InstrId> = (0..4)
        .map(|_| b.append(Instruction::simple(OpCode::Nop)))
        .collect();
    let filter = ExceptionClause::new(ClauseKind::Filter(ids[1]), ids[0], ids[0], ids[2], ids[3]);
    b.add_clause(filter).unwrap();
    let new = b
        .insert_after(ids[1], Instruction::simple(OpCode::Nop))
        .unwrap();
    b.validate_clauses().unwrap();
    let order: Vec<InstrId> = b.instrs.ids().collect();
    assert_eq!(order, vec![ids[0], ids[1], new, ids[2], ids[3]]);
    assert_eq!(b.clauses[0].filter_start(), Some(ids[1]));
    assert_eq!(b.clauses[0].handler_start, ids[2]);
}

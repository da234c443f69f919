//! Editing a [`MethodBody`]: insert, replace, remove, retarget, add EH clauses.
//!
//! The operations keep these invariants: branches and region boundaries that named an
//! instruction are moved as documented (never left dangling by `remove`), every exception
//! region stays a non-empty inclusive range `[start, last]`, the clause list stays valid,
//! and no edit widens a region — with one exception forced by the format: a filter has no
//! end of its own (it runs up to its handler), so code inserted between a filter and its
//! handler joins the filter (refused if the longer filter would no longer nest).
//! Operations that would break an invariant are refused with a typed error and leave the
//! body untouched. New instructions must branch to instructions of this body (checked,
//! except by [`MethodBody::append`]).

use crate::body::{ClauseKind, ExceptionClause, MethodBody, SpanError};
use crate::error::{Error, Result};
use crate::graph::{Incoming, InstrId, Instruction, Operand};
use smallvec::SmallVec;

/// Which part of a clause a region is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RegionPart {
    Try,
    Handler,
    Filter,
}

impl MethodBody {
    fn expect_linked(&self, id: InstrId, what: &'static str) -> Result<()> {
        if self.instrs.contains(id) {
            Ok(())
        } else {
            Err(Error::NotInBody { id: id.0, what })
        }
    }

    /// Checks that a new instruction's branch or switch targets are instructions of this
    /// body (and its switch handle belongs to this body's pool).
    fn check_targets(&self, instr: &Instruction) -> Result<()> {
        match instr.operand {
            Operand::Target(t) => self.expect_linked(t, "branch target"),
            Operand::Switch(s) => {
                let targets =
                    self.instrs
                        .try_switch_targets(s)
                        .ok_or_else(|| Error::BadOperand {
                            opcode: instr.opcode.name(),
                            what: "switch targets of another body",
                        })?;
                targets
                    .iter()
                    .try_for_each(|&t| self.expect_linked(t, "switch target"))
            }
            _ => Ok(()),
        }
    }

    /// Inserts `instr` right before `at` and returns its id; see [`Incoming`] for what
    /// happens to references to `at`. Cost: O(1) with [`Incoming::Keep`], O(code) with
    /// [`Incoming::Redirect`] (every branch operand is checked).
    ///
    /// # Errors
    ///
    /// [`Error::NotInBody`] if `at` or a branch or switch target of the new code is not an
    /// instruction of the body, [`Error::BadOperand`] for a `switch` table of another body,
    /// and [`Error::BadEhNesting`] (body untouched) if code inserted with
    /// [`Incoming::Keep`] joins a filter that would then no longer nest (see
    /// [`MethodBody::insert_after`]).
    pub fn insert_before(
        &mut self,
        at: InstrId,
        instr: Instruction,
        incoming: Incoming,
    ) -> Result<InstrId> {
        self.expect_linked(at, "insertion point")?;
        self.check_targets(&instr)?;
        if incoming == Incoming::Keep {
            let new = self.instrs.link_before(at, instr);
            self.check_filter_growth(new.0..new.0 + 1)?;
            return Ok(new);
        }
        // Before linking, so that the new instruction's own target (which is not an
        // incoming reference) stays as it is: its id is the next arena slot.
        self.redirect_references(at, InstrId(self.instrs.arena_len() as u32));
        Ok(self.instrs.link_before(at, instr))
    }

    /// Inserts `instrs` in order right before `at`; returns the ids in order. With
    /// [`Incoming::Redirect`], references to `at` move to the first inserted instruction.
    ///
    /// # Errors
    ///
    /// Those of [`MethodBody::insert_before`], with the body untouched.
    pub fn insert_all_before(
        &mut self,
        at: InstrId,
        instrs: &[Instruction],
        incoming: Incoming,
    ) -> Result<SmallVec<[InstrId; 8]>> {
        if incoming == Incoming::Keep {
            let ids = self.insert_all_before_keep(at, instrs)?;
            return Ok(ids.map(InstrId).collect());
        }
        self.expect_linked(at, "insertion point")?;
        instrs.iter().try_for_each(|i| self.check_targets(i))?;
        if instrs.is_empty() {
            return Ok(SmallVec::new());
        }
        // Before linking, so that the new code's own targets (which are not incoming
        // references) stay as they are: the first new id is the next arena slot.
        let first = InstrId(self.instrs.arena_len() as u32);
        self.redirect_references(at, first);
        Ok(self
            .instrs
            .link_all_before(at, instrs)
            .map(InstrId)
            .collect())
    }

    /// Inserts code before many instructions in one edit: `sites[i].1` goes right before
    /// `sites[i].0`, and the ids of each site's new code are returned in site order.
    ///
    /// The outcome is that of calling [`MethodBody::insert_all_before`] for each site in
    /// order, with one difference under [`Incoming::Redirect`]: only references the body
    /// held *before this call* move (branch and switch operands, region starts), so the
    /// code inserted by this call keeps its operands exactly as given, even where they
    /// name another site. A site whose instruction appears earlier in `sites` goes after
    /// the earlier site's code; references move to the first code inserted before that
    /// instruction. Sites with no instructions change nothing.
    ///
    /// Cost: one pass over the code and the clauses for the whole batch, plus the new
    /// instructions; the sequential calls cost a pass per site with
    /// [`Incoming::Redirect`] (quadratic when every block gets a probe, as in
    /// code-coverage instrumentation).
    ///
    /// # Errors
    ///
    /// Those of [`MethodBody::insert_before`] ([`Error::NotInBody`],
    /// [`Error::BadOperand`], [`Error::BadEhNesting`]), all or nothing: every site and
    /// every new branch target is checked first (they must be instructions of the body
    /// before the call), and with [`Incoming::Keep`] code that joins a filter (see
    /// [`MethodBody::insert_after`]) is checked once all is linked. On an error the body
    /// is left as it was.
    ///
    /// A probe before every basic block, as a code-coverage tool inserts them:
    ///
    /// ```
    /// use ilrewrite::analysis::ControlFlowGraph;
    /// use ilrewrite::graph::Incoming;
    /// use ilrewrite::{InstrId, Instruction, MethodBody, OpCode};
    ///
    /// // ldarg.0; brfalse.s +2; ldc.i4.1; ret; ldc.i4.2; ret
    /// let mut body = MethodBody::decode(&[0x1E, 0x02, 0x2C, 0x02, 0x17, 0x2A, 0x18, 0x2A])?;
    /// const HIT: u32 = 0x0A00_0001; // void Hit(int block)
    /// let cfg = ControlFlowGraph::build(&body)?;
    /// let leaders: Vec<InstrId> = cfg.blocks().map(|(_, block)| block.first).collect();
    /// let probes: Vec<[Instruction; 2]> = (0..leaders.len() as i32)
    ///     .map(|n| [Instruction::ldc_i4(n), Instruction::with_token(OpCode::Call, HIT)])
    ///     .collect();
    /// let sites: Vec<(InstrId, &[Instruction])> =
    ///     leaders.iter().zip(&probes).map(|(&at, p)| (at, &p[..])).collect();
    /// body.insert_before_each(&sites, Incoming::Redirect)?;
    /// // The branch to the second `return` now runs that block's probe first:
    /// // ldc.i4.0; call; ldarg.0; brfalse.s +8; ldc.i4.1; call; ldc.i4.1; ret;
    /// // ldc.i4.2; call; ldc.i4.2; ret
    /// let code = &body.encode()?[1..];
    /// assert_eq!(code[..10], [0x16, 0x28, 0x01, 0x00, 0x00, 0x0A, 0x02, 0x2C, 0x08, 0x17]);
    /// # Ok::<(), ilrewrite::Error>(())
    /// ```
    pub fn insert_before_each(
        &mut self,
        sites: &[(InstrId, &[Instruction])],
        incoming: Incoming,
    ) -> Result<Vec<SmallVec<[InstrId; 8]>>> {
        for &(at, instrs) in sites {
            self.expect_linked(at, "insertion point")?;
            instrs.iter().try_for_each(|i| self.check_targets(i))?;
        }
        let arena = self.instrs.arena_len();
        if incoming == Incoming::Redirect {
            // Each new node takes the next arena slot, so the first id of every site's
            // code is known before anything is linked: redirect first, in one pass, so
            // that the new code's own operands are left as they are.
            let mut redirect = vec![NO_REDIRECT; arena];
            let mut next_id = arena;
            for &(at, instrs) in sites {
                if !instrs.is_empty() && redirect[at.index()] == NO_REDIRECT {
                    redirect[at.index()] = next_id as u32;
                }
                next_id += instrs.len();
            }
            let moved = |id: InstrId| match redirect.get(id.index()) {
                Some(&to) if to != NO_REDIRECT => Some(InstrId(to)),
                _ => None,
            };
            self.retarget_operands(moved);
            for clause in &mut self.clauses {
                for start in clause_starts_mut(clause) {
                    if let Some(to) = moved(*start) {
                        *start = to;
                    }
                }
            }
        }
        let mut all = Vec::with_capacity(sites.len());
        let mut joins_filter = false;
        for &(at, instrs) in sites {
            let ids = self.instrs.link_all_before(at, instrs);
            if incoming == Incoming::Keep && !ids.is_empty() {
                joins_filter |= self
                    .clauses
                    .iter()
                    .any(|c| c.filter_start().is_some() && c.handler_start == at);
            }
            all.push(ids.map(InstrId).collect());
        }
        if joins_filter && let Err(e) = self.validate_clauses() {
            for id in arena..self.instrs.arena_len() {
                self.instrs.unlink(InstrId(id as u32));
            }
            return Err(e);
        }
        Ok(all)
    }

    /// [`MethodBody::insert_all_before`] with [`Incoming::Keep`], the new ids given as
    /// the range of their (consecutive) indexes: same checks, same edit, same errors.
    pub(crate) fn insert_all_before_keep(
        &mut self,
        at: InstrId,
        instrs: &[Instruction],
    ) -> Result<std::ops::Range<u32>> {
        self.expect_linked(at, "insertion point")?;
        instrs.iter().try_for_each(|i| self.check_targets(i))?;
        // Links nothing (and leaves the storage as it is) when `instrs` is empty.
        let ids = self.instrs.link_all_before(at, instrs);
        self.check_filter_growth(ids.clone())?;
        Ok(ids)
    }

    /// [`MethodBody::insert_all_before_keep`] for code whose branches may name its own
    /// new instructions (their ids are the next arena slots): the targets are checked
    /// once the code is linked, and on a bad target the code is unlinked again.
    pub(crate) fn insert_all_before_keep_self_targeting(
        &mut self,
        at: InstrId,
        instrs: &[Instruction],
    ) -> Result<std::ops::Range<u32>> {
        self.expect_linked(at, "insertion point")?;
        let ids = self.instrs.link_all_before(at, instrs);
        if let Err(e) = instrs.iter().try_for_each(|i| self.check_targets(i)) {
            for id in ids {
                self.instrs.unlink(InstrId(id));
            }
            return Err(e);
        }
        self.check_filter_growth(ids.clone())?;
        Ok(ids)
    }

    /// Inserts `instr` right after `at` and returns its id. Nothing that names `at`
    /// changes, and regions whose last instruction is `at` do not grow to include the new
    /// instruction, with one exception forced by the format: a filter region has no end of
    /// its own (it runs up to its handler), so code inserted between a filter and its
    /// handler joins the filter.
    ///
    /// # Errors
    ///
    /// [`Error::NotInBody`] if `at` or a branch or switch target of `instr` is not an
    /// instruction of the body, [`Error::BadOperand`] for a `switch` table of another
    /// body, and [`Error::BadEhNesting`], body untouched, if the longer filter would no
    /// longer nest.
    pub fn insert_after(&mut self, at: InstrId, instr: Instruction) -> Result<InstrId> {
        self.expect_linked(at, "insertion point")?;
        self.check_targets(&instr)?;
        let new = self.instrs.link_after(at, instr);
        self.check_filter_growth(new.0..new.0 + 1)?;
        Ok(new)
    }

    /// Inserts `instrs` in order right after `at` (see [`MethodBody::insert_after`]).
    ///
    /// # Errors
    ///
    /// Those of [`MethodBody::insert_after`], with the body untouched.
    pub fn insert_all_after(
        &mut self,
        at: InstrId,
        instrs: &[Instruction],
    ) -> Result<SmallVec<[InstrId; 8]>> {
        self.expect_linked(at, "insertion point")?;
        instrs.iter().try_for_each(|i| self.check_targets(i))?;
        let mut ids = SmallVec::new();
        let mut prev = at;
        for &i in instrs {
            prev = self.instrs.link_after(prev, i);
            ids.push(prev);
        }
        // Each new node takes the next arena slot: the ids are consecutive.
        let range = ids.first().map_or(0..0, |f: &InstrId| f.0..prev.0 + 1);
        self.check_filter_growth(range)?;
        Ok(ids)
    }

    /// After linking the instructions with ids `new` (consecutive, in order, not yet
    /// referenced): if they landed right before a filter's handler they joined the
    /// filter; undo the insertion if the clauses are no longer valid. Costs one pass over
    /// the clauses otherwise (nothing without clauses).
    fn check_filter_growth(&mut self, new: std::ops::Range<u32>) -> Result<()> {
        if new.is_empty() || self.clauses.is_empty() {
            return Ok(());
        }
        let last = InstrId(new.end - 1);
        let next = self.instrs.next(last);
        let joins_filter = next.is_some_and(|n| {
            self.clauses
                .iter()
                .any(|c| c.filter_start().is_some() && c.handler_start == n)
        });
        if joins_filter && let Err(e) = self.validate_clauses() {
            for id in new {
                self.instrs.unlink(InstrId(id));
            }
            return Err(e);
        }
        Ok(())
    }

    /// Appends `instr` at the end of the code. It joins no region. Unlike the other
    /// insertions it does not check branch targets (so bodies can be built front to back
    /// with forward branches patched by [`MethodBody::replace`]); the encoder rejects
    /// targets that are not instructions of the body.
    pub fn append(&mut self, instr: Instruction) -> InstrId {
        self.instrs.push_back(instr)
    }

    /// Replaces the instruction `at` in place and returns the old one. The id is kept, so
    /// branches and regions that named the old instruction name the new one.
    ///
    /// # Errors
    ///
    /// [`Error::NotInBody`] if `at` or a branch or switch target of `instr` is not an
    /// instruction of the body, [`Error::BadOperand`] for a `switch` table of another body.
    pub fn replace(&mut self, at: InstrId, instr: Instruction) -> Result<Instruction> {
        self.expect_linked(at, "replaced instruction")?;
        self.check_targets(&instr)?;
        let old = self.instrs.get(at);
        self.instrs.set(at, instr);
        Ok(old)
    }

    /// Removes `at` and returns it. Branches to it move to the next instruction; a region
    /// starting at it starts at the next instruction, a region ending at it ends at the
    /// previous one (so no region ever grows).
    ///
    /// # Errors
    ///
    /// Refused, leaving the body unchanged: [`Error::NotInBody`] if `at` (or a region
    /// boundary) is not an instruction of the body; [`Error::EditWouldEmptyRegion`] when
    /// it would empty a region; [`Error::BadEhNesting`] when it would make two regions
    /// coincide or otherwise leave the clauses invalid; [`Error::EditWouldDangle`] when
    /// `at` is a branch target and its next instruction is missing, outside a region `at`
    /// ends, or the first instruction of a handler or filter (retarget such branches
    /// first).
    pub fn remove(&mut self, at: InstrId) -> Result<Instruction> {
        self.expect_linked(at, "removed instruction")?;
        let next = self.instrs.next(at);
        let prev = self.instrs.prev(at);
        for clause in &self.clauses {
            for (part, start, last) in regions(clause) {
                // A filter region ends right before its handler (its `last` here is only
                // its start): removing its first instruction empties it only when the
                // handler comes next.
                let only = match part {
                    RegionPart::Filter => next == Some(clause.handler_start),
                    _ => last == at,
                };
                if start == at && only {
                    return Err(Error::EditWouldEmptyRegion {
                        id: at.0,
                        region: part.name(),
                    });
                }
            }
        }
        // A region ending at `at` (and not starting there) has a predecessor inside it,
        // unless the clause is malformed (its start lies after its end).
        let ends_here = self
            .clauses
            .iter()
            .any(|c| c.try_last == at || c.handler_last == at);
        let new_last = match (ends_here, prev) {
            (false, _) => at,
            (true, Some(p)) => p,
            (true, None) => {
                return Err(Error::BadEhNesting {
                    what: "a region ends at the first instruction but starts elsewhere",
                });
            }
        };
        // Branches to `at` move to the next instruction; refuse when there is none, when
        // it lies outside a region `at` ends (the branch would cross out of it), or when it
        // starts a handler or filter (which only the runtime may enter; this includes
        // `at` ending a filter, whose next instruction is its handler).
        let enters_handler = next.is_some_and(|n| {
            self.clauses
                .iter()
                .any(|c| c.handler_start == n || c.filter_start() == Some(n))
        });
        if (next.is_none() || ends_here || enters_handler) && self.is_branch_target(at) {
            return Err(Error::EditWouldDangle { id: at.0 });
        }
        // The clauses as they will be; shrinking one region can make it coincide with
        // another clause's region nested in it, which no valid clause list allows.
        let moved = |c: &ExceptionClause| {
            let mut c = *c;
            let start = |id: InstrId| if id == at { next.unwrap_or(id) } else { id };
            c.try_start = start(c.try_start);
            c.handler_start = start(c.handler_start);
            if let ClauseKind::Filter(f) = &mut c.kind {
                *f = start(*f);
            }
            if c.try_last == at {
                c.try_last = new_last;
            }
            if c.handler_last == at {
                c.handler_last = new_last;
            }
            c
        };
        if !self.clauses.is_empty() {
            let after: SmallVec<[ExceptionClause; 4]> = self.clauses.iter().map(moved).collect();
            // Positions as they will be: `at` gone, the rest closing up (a gap would make a
            // filter, which ends where its handler starts, look longer than it is).
            let mut pos = vec![u32::MAX; self.instrs.arena_len()];
            for (i, id) in self.instrs.ids().filter(|&id| id != at).enumerate() {
                pos[id.index()] = i as u32;
            }
            validate_clause_list(&after, &pos)?;
        }
        if let Some(next) = next {
            self.redirect_references(at, next);
        }
        for clause in &mut self.clauses {
            *clause = moved(clause);
        }
        let removed = self.instrs.get(at);
        self.instrs.unlink(at);
        Ok(removed)
    }

    /// Whether any branch or switch operand names `id`.
    pub fn is_branch_target(&self, id: InstrId) -> bool {
        self.instrs.iter().any(|(_, instr)| match instr.operand {
            Operand::Target(t) => t == id,
            Operand::Switch(s) => self
                .instrs
                .try_switch_targets(s)
                .is_some_and(|t| t.contains(&id)),
            _ => false,
        })
    }

    /// Makes every branch and switch operand that names `from` name `to` instead. EH
    /// regions are not touched. Returns how many operands changed.
    ///
    /// # Errors
    ///
    /// [`Error::NotInBody`] if `to` is not an instruction of the body (nothing changes).
    pub fn retarget_branches(&mut self, from: InstrId, to: InstrId) -> Result<usize> {
        self.expect_linked(to, "branch target")?;
        Ok(self.retarget_operands(|t| (t == from).then_some(to)))
    }

    /// Rewrites every branch and switch target through `map` (None keeps the target).
    /// Returns how many operands changed. One pass over the code, whatever the map does.
    pub(crate) fn retarget_operands(
        &mut self,
        map: impl FnMut(InstrId) -> Option<InstrId>,
    ) -> usize {
        self.instrs.retarget_operands(map)
    }

    /// Moves branch targets and region starts (try, handler, filter) from `from` to `to`.
    fn redirect_references(&mut self, from: InstrId, to: InstrId) {
        self.retarget_operands(|t| (t == from).then_some(to));
        for clause in &mut self.clauses {
            for start in clause_starts_mut(clause) {
                if *start == from {
                    *start = to;
                }
            }
        }
    }

    /// Position of every linked instruction in list order, indexed by id
    /// (`u32::MAX` for ids not in the body).
    pub fn positions(&self) -> Vec<u32> {
        let mut pos = vec![u32::MAX; self.instrs.arena_len()];
        for (i, id) in self.instrs.ids().enumerate() {
            pos[id.index()] = i as u32;
        }
        pos
    }

    /// The positions of `clause`'s region boundaries, as a [`Spans::of`] lookup covering
    /// only those ids (others read as not in the body). One walk, stopping once all are
    /// found; nothing is allocated.
    fn boundary_positions(&self, clause: &ExceptionClause) -> BoundaryPositions {
        let filter = match clause.kind {
            ClauseKind::Filter(f) => f,
            _ => clause.try_start,
        };
        let ids = [
            clause.try_start,
            clause.try_last,
            clause.handler_start,
            clause.handler_last,
            filter,
        ];
        let mut pos = [u32::MAX; 5];
        let mut left = ids.len();
        // One bit per id modulo 64: most instructions are rejected by one test.
        let bloom = ids.iter().fold(0u64, |b, id| b | (1 << (id.0 & 63)));
        for (i, id) in self.instrs.ids().enumerate() {
            if (bloom >> (id.0 & 63)) & 1 == 0 {
                continue;
            }
            for (&want, p) in ids.iter().zip(pos.iter_mut()) {
                if want == id && *p == u32::MAX {
                    *p = i as u32;
                    left -= 1;
                }
            }
            if left == 0 {
                break;
            }
        }
        BoundaryPositions { ids, pos }
    }

    /// Adds an exception clause, placing it where ECMA-335 requires: after every clause
    /// nested inside it and before every clause it is nested in (try-inside-handler
    /// nesting included).
    ///
    /// # Errors
    ///
    /// Refused, leaving the clauses as they were: [`Error::NotInBody`] if a region
    /// boundary is not an instruction of the body, [`Error::BadEhNesting`] if a region is
    /// empty or overlaps another region without nesting, or the clause cannot be ordered.
    pub fn add_clause(&mut self, clause: ExceptionClause) -> Result<usize> {
        if self.clauses.is_empty() {
            // Nothing to order against: only the new clause's own boundaries are needed,
            // found in one walk without allocating a position table.
            Spans::of(&clause, &self.boundary_positions(&clause))?;
            self.clauses.push(clause);
            return Ok(0);
        }
        let pos = self.positions();
        let new = Spans::of(&clause, &pos)?;
        let mut insert_at = 0usize;
        let mut limit = self.clauses.len();
        for (i, other) in self.clauses.iter().enumerate() {
            let other = Spans::of(other, &pos)?;
            new.check_compatible(&other)?;
            if other.must_precede(&new) {
                insert_at = i + 1;
            }
            if new.must_precede(&other) {
                limit = limit.min(i);
            }
        }
        if insert_at > limit {
            return Err(Error::BadEhNesting {
                what: "the new clause cannot be ordered inner-first among the existing ones",
            });
        }
        self.clauses.insert(insert_at, clause);
        Ok(insert_at)
    }

    /// Checks every clause: regions non-empty and in the body, handler after its filter,
    /// regions pairwise disjoint or nested (tries may be shared), and inner clauses listed
    /// before the clauses they are nested in.
    ///
    /// # Errors
    ///
    /// [`Error::NotInBody`] for a region boundary that is not an instruction of the body,
    /// [`Error::BadEhNesting`] for any other violation.
    pub fn validate_clauses(&self) -> Result<()> {
        validate_clause_list(&self.clauses, &self.positions())
    }
}

/// [`MethodBody::validate_clauses`] over `clauses`, given the list positions by id.
fn validate_clause_list(clauses: &[ExceptionClause], pos: &impl PositionOf) -> Result<()> {
    let spans = clauses
        .iter()
        .map(|c| Spans::of(c, pos))
        .collect::<Result<Vec<_>>>()?;
    for (i, a) in spans.iter().enumerate() {
        for b in &spans[i + 1..] {
            a.check_compatible(b)?;
            if b.must_precede(a) {
                return Err(Error::BadEhNesting {
                    what: "an inner clause is listed after a clause that encloses it",
                });
            }
        }
    }
    Ok(())
}

impl RegionPart {
    fn name(self) -> &'static str {
        match self {
            RegionPart::Try => "try",
            RegionPart::Handler => "handler",
            RegionPart::Filter => "filter",
        }
    }
}

/// The regions of a clause as `(part, start, last)`; the filter region's last is unknown
/// without the order, so it is given as its start (callers treat it specially).
/// The region starts of a clause (try, handler, and filter if any): what
/// [`Incoming::Redirect`] moves.
fn clause_starts_mut(c: &mut ExceptionClause) -> impl Iterator<Item = &mut InstrId> {
    let filter = match &mut c.kind {
        ClauseKind::Filter(f) => Some(f),
        _ => None,
    };
    [&mut c.try_start, &mut c.handler_start]
        .into_iter()
        .chain(filter)
}

/// Sentinel of the redirect table of [`MethodBody::insert_before_each`]: not moved.
const NO_REDIRECT: u32 = u32::MAX;

fn regions(c: &ExceptionClause) -> SmallVec<[(RegionPart, InstrId, InstrId); 3]> {
    let mut r = SmallVec::new();
    r.push((RegionPart::Try, c.try_start, c.try_last));
    r.push((RegionPart::Handler, c.handler_start, c.handler_last));
    if let ClauseKind::Filter(f) = c.kind {
        r.push((RegionPart::Filter, f, f));
    }
    r
}

/// Where an instruction is in list order (`None` if not in the body).
trait PositionOf {
    fn position_of(&self, id: InstrId) -> Option<u32>;
}

/// A full position table from [`MethodBody::positions`].
impl PositionOf for Vec<u32> {
    fn position_of(&self, id: InstrId) -> Option<u32> {
        self.get(id.index()).copied().filter(|&p| p != u32::MAX)
    }
}

/// The positions of a few ids only (see [`MethodBody::boundary_positions`]);
/// `u32::MAX` for ids not found in the body.
struct BoundaryPositions {
    ids: [InstrId; 5],
    pos: [u32; 5],
}

impl PositionOf for BoundaryPositions {
    fn position_of(&self, id: InstrId) -> Option<u32> {
        let k = self.ids.iter().position(|&i| i == id)?;
        Some(self.pos[k]).filter(|&p| p != u32::MAX)
    }
}

/// A clause's regions as half-open position spans.
#[derive(Debug, Clone, Copy)]
struct Spans {
    try_: (u32, u32),
    handler: (u32, u32),
    filter: Option<(u32, u32)>,
}

impl Spans {
    fn of(c: &ExceptionClause, pos: &impl PositionOf) -> Result<Spans> {
        match c.region_spans(|id| pos.position_of(id)) {
            Ok(r) => Ok(Spans {
                try_: r.try_,
                handler: r.handler,
                filter: r.filter,
            }),
            Err(SpanError::NotInBody(id, _)) => Err(Error::NotInBody {
                id: id.0,
                what: "EH region boundary",
            }),
            Err(SpanError::Bad(what)) => Err(Error::BadEhNesting { what }),
        }
    }

    fn all(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        [Some(self.try_), Some(self.handler), self.filter]
            .into_iter()
            .flatten()
    }

    /// Whether `self` must be listed before `other`: its try lies inside one of `other`'s
    /// regions (and is not the very same try block).
    fn must_precede(&self, other: &Spans) -> bool {
        self.try_ != other.try_ && other.all().any(|r| contains(r, self.try_))
    }

    /// Regions of two clauses must be disjoint or nested; two clauses may share a try.
    fn check_compatible(&self, other: &Spans) -> Result<()> {
        for a in self.all() {
            for b in other.all() {
                if a == b && a == self.try_ && b == other.try_ {
                    continue;
                }
                if a == b {
                    return Err(Error::BadEhNesting {
                        what: "two clauses share a handler or filter region",
                    });
                }
                if overlaps(a, b) && !contains(a, b) && !contains(b, a) {
                    return Err(Error::BadEhNesting {
                        what: "two regions overlap without nesting",
                    });
                }
            }
        }
        Ok(())
    }
}

fn overlaps(a: (u32, u32), b: (u32, u32)) -> bool {
    a.0 < b.1 && b.0 < a.1
}

fn contains(outer: (u32, u32), inner: (u32, u32)) -> bool {
    outer.0 <= inner.0 && inner.1 <= outer.1
}

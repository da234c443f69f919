//! Stack-height simulation, verification of the stack rules, and max stack.
//!
//! [`StackAnalyzer`] walks every reachable instruction once, carrying the evaluation-stack
//! height, and checks the rules of ECMA-335 and of the CLR JIT that depend on it:
//!
//! * **Entry** height is 0. **Handlers** are entered with 1 (the exception object) for
//!   catch handlers, filters and the handlers of filter clauses, and with 0 for finally
//!   and fault handlers. A handler (and its filter) is reachable exactly when some
//!   instruction of its try region is: this is when the JIT imports it.
//! * A **try region** must be entered with an empty stack.
//! * **Joins**: every path reaching an instruction must bring the same height.
//! * **Underflow**: no instruction pops more than the stack holds.
//! * `leave`/`leave.s` empty the stack, whatever its height: the target gets 0.
//!   `endfinally` ends its handler with any height (the stack is discarded).
//! * `endfilter` needs exactly the filter's result on the stack.
//! * `ret` needs exactly the return value (1) or nothing (0), on every `ret`; `jmp` needs
//!   an empty stack. `throw` pops 1, `rethrow` nothing.
//! * Control must not **fall off the end** of the code.
//! * Calls take their effect from a [`CallSiteResolver`]; prefixes are 0/0, `dup` 1/2,
//!   everything else comes from the opcode table.
//!
//! It also rejects the EH control flow that the JIT rejects as invalid IL and that this
//! pass can see at no extra cost: a method whose first instruction starts a handler or
//! filter; a branch or fall-through into the first instruction of a catch handler,
//! filter or filter handler; `ret` inside a try, filter or handler;
//! `endfinally` outside a finally/fault handler; `endfilter` outside a filter.
//!
//! # Unreachable code
//!
//! Instructions that no path reaches from the entry or from a reachable handler are not
//! simulated: their height is unknown ([`StackAnalysis::height_before`] is `None`), they
//! are not verified, and they do not contribute to the max stack. This matches the CLR:
//! the JIT's importer starts at the entry block, adds a block's successors as it imports
//! it, and adds a handler (and its filter) when it imports a block of the handler's try
//! region. Blocks it never reaches are never imported, so neither their stack heights
//! nor the header's max stack are ever checked against them.
//!
//! # Cost
//!
//! One pass lays the body out in list order, a table row per instruction (its stack
//! effect and flow), and resolves every call site once; then each reachable instruction
//! is simulated once and each edge checked once. Simulating an instruction that falls
//! through is a row read, some arithmetic and one well-predicted branch; only branches,
//! `ret` and the like leave that path. Scratch buffers live in the [`StackAnalyzer`] and
//! are reused across bodies: analysing a body allocates nothing once the buffers have
//! grown to the largest body seen.

use super::layout::{HandlerKind, Layout, NONE as LAYOUT_NONE, build_clause_spans, site};
use super::resolve::{CallEffect, CallSiteResolver};
use crate::body::MethodBody;
use crate::error::{Error, InstrSite, Result};
use crate::graph::{InstrId, SwitchTargets};
use crate::opcode::{Flow, OpCode, StackCount};
use std::sync::LazyLock;

/// Per-position state word: the height before the instruction in the low 16 bits
/// (heights never exceed [`MAX_HEIGHT`]), or the `UNSET` bit while it is not yet known,
/// and the instruction flags above. Bodies without clauses have no flags.
const HEIGHT: u32 = 0xFFFF;
/// State bit: height not yet known.
const UNSET: u32 = 1 << 16;
/// Instruction flag: the first instruction of some try region.
const TRY_START: u32 = 1 << 24;
/// Instruction flag: the entry of a catch handler, filter, or filter handler; only the
/// runtime may transfer control there.
const EXCEPTION_ENTRY: u32 = 1 << 25;
/// The largest height a header can declare.
const MAX_HEIGHT: u32 = u16::MAX as u32;
/// A position's *cell*: its row (below) in the low 32 bits, its state word in the high.
const STATE_SHIFT: u32 = 32;
/// The cell of a position not yet reached, before its row is added.
const UNSET_CELL: u64 = (UNSET as u64) << STATE_SHIFT;

#[inline(always)]
fn state_of(cell: u64) -> u32 {
    (cell >> STATE_SHIFT) as u32
}

/// A *row* says what one instruction does to the stack and to control, so that the
/// simulation of an ordinary instruction is a table read and some arithmetic, without a
/// branch that depends on the instruction: pops in bits 0-15, pushes in bits 16-23, the
/// flow code (`FLOW_*`) in bits 24-27 and the flags below.
const POPS: u32 = 0xFFFF;
const PUSH_SHIFT: u32 = 16;
const FLOW_SHIFT: u32 = 24;
/// Row flag: the effect is not in the row and is worked out when the instruction is
/// reached (`ret`, and call sites whose effect was not resolved in advance).
const VARIABLE: u32 = 1 << 28;
/// Row flag: control does something else than fall through (the flow code says what).
const CONTROL: u32 = 1 << 29;
/// Row flag, in the opcode rows only: a call site whose effect the resolver supplies.
const CALL_SITE: u32 = 1 << 30;
const CALL_SITE_SHIFT: u32 = 30;
/// Row flag: a branch with one target (`br`, the conditional branches, `leave`), handled
/// without dispatching on the flow code.
const BRANCH_SITE: u32 = 1 << 31;

/// Flow codes (bits 24-27 of a row with `CONTROL`).
const FLOW_BRANCH: u32 = 1;
const FLOW_LEAVE: u32 = 2;
const FLOW_COND: u32 = 3;
const FLOW_SWITCH: u32 = 4;
const FLOW_RETURN: u32 = 5;
const FLOW_JMP: u32 = 6;
/// `throw`, `rethrow`: control ends.
const FLOW_END: u32 = 7;
const FLOW_ENDFINALLY: u32 = 8;
const FLOW_ENDFILTER: u32 = 9;

/// The row of every opcode, indexed by `OpCode as u8`, built once from the opcode table:
/// one table per return convention (`[unknown, void, value]`), so that `ret` has a fixed
/// effect whenever the caller says what the method returns. Unassigned bytes get a
/// `VARIABLE` row that is never used (only opcodes index it).
static ROWS: LazyLock<[[u32; 256]; 3]> = LazyLock::new(|| {
    let mut table = [VARIABLE; 256];
    for &op in OpCode::ALL {
        let info = op.info();
        let flow = match info.flow {
            Flow::Next | Flow::Call | Flow::Break | Flow::Prefix => 0,
            Flow::Branch => FLOW_BRANCH,
            Flow::Leave => FLOW_LEAVE,
            Flow::CondBranch => FLOW_COND,
            Flow::Switch => FLOW_SWITCH,
            Flow::Return => FLOW_RETURN,
            Flow::Jmp => FLOW_JMP,
            Flow::Throw | Flow::Rethrow => FLOW_END,
            Flow::EndFinally => FLOW_ENDFINALLY,
            Flow::EndFilter => FLOW_ENDFILTER,
        };
        let mut row = match (info.pops, info.pushes) {
            (StackCount::Fixed(pops), StackCount::Fixed(pushes)) => {
                u32::from(pops) | (u32::from(pushes) << PUSH_SHIFT)
            }
            _ if info.flow == Flow::Call => VARIABLE | CALL_SITE,
            _ => VARIABLE,
        };
        if flow != 0 {
            row |= CONTROL | (flow << FLOW_SHIFT);
        }
        if matches!(flow, FLOW_BRANCH | FLOW_LEAVE | FLOW_COND) {
            row |= BRANCH_SITE;
        }
        table[op as usize] = row;
    }
    let ret = OpCode::Ret as usize;
    let mut void = table;
    void[ret] = CONTROL | (FLOW_RETURN << FLOW_SHIFT);
    let mut value = void;
    value[ret] |= 1;
    [table, void, value]
});

/// How an edge reaches an instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Via {
    /// The method entry.
    Entry,
    /// Exception-handler entry (handler or filter start).
    Handler,
    /// Fall-through from the instruction at this position.
    Fallthrough(u32),
    /// Branch, switch or leave from the instruction at this position.
    Jump(u32),
}

impl Via {
    fn source(self) -> Option<u32> {
        match self {
            Via::Fallthrough(p) | Via::Jump(p) => Some(p),
            Via::Entry | Via::Handler => None,
        }
    }
}

/// What `ret` pops in the method analysed: what its signature says, or inferred.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReturnKind {
    /// The method returns `void`: `ret` pops nothing.
    Void,
    /// The method returns a value: `ret` pops it.
    Value,
    /// Unknown: inferred from the reachable `ret`s, which must agree (a body without a
    /// reachable `ret` is accepted either way).
    Infer,
}

impl ReturnKind {
    /// [`ReturnKind::Value`] if `returns_value`, else [`ReturnKind::Void`]: for a
    /// signature's [`crate::sig::MethodSigSummary::returns_value`].
    pub const fn value_if(returns_value: bool) -> ReturnKind {
        if returns_value {
            ReturnKind::Value
        } else {
            ReturnKind::Void
        }
    }

    /// Whether `ret` pops a value, `None` when inferred.
    const fn pops_value(self) -> Option<bool> {
        match self {
            ReturnKind::Void => Some(false),
            ReturnKind::Value => Some(true),
            ReturnKind::Infer => None,
        }
    }
}

/// What to do with the header's max-stack value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MaxStackMode {
    /// Compute it; on a verification error fail and leave the body unchanged.
    #[default]
    Compute,
    /// Leave the header's value as it is; analyse nothing.
    KeepOriginal,
    /// Compute it; on a verification error keep the header's value and report the error
    /// in [`MaxStackReport::error`] instead of failing.
    ComputeOrFallback,
}

/// What [`StackAnalyzer::apply_max_stack`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MaxStackReport {
    /// The header's value before.
    pub original: u16,
    /// The computed value, when the analysis ran and succeeded.
    pub computed: Option<u16>,
    /// The header's value now.
    pub max_stack: u16,
    /// The verification error that made [`MaxStackMode::ComputeOrFallback`] keep the
    /// original value.
    pub error: Option<Error>,
}

/// The result of a successful stack analysis, borrowed from the [`StackAnalyzer`].
#[derive(Debug, Clone, Copy)]
pub struct StackAnalysis<'a> {
    max_stack: u16,
    returns_value: Option<bool>,
    /// Cell of each position (its state word holds the height, or `UNSET`).
    cells: &'a [u64],
    /// Position -> id index and id index -> position (stale for ids not in the body:
    /// valid where the two agree); `None` when positions are ids (flat storage).
    maps: Option<(&'a [u32], &'a [u32])>,
    /// The arena length of the body analysed.
    arena: usize,
}

impl StackAnalysis<'_> {
    /// The exact maximum stack height over all reachable code, exception-object slots on
    /// handler entry included. This is the smallest max-stack value the JIT accepts.
    #[inline]
    pub fn max_stack(&self) -> u16 {
        self.max_stack
    }

    /// Whether `ret` returns a value: as given to the analysis, or inferred from the
    /// reachable `ret`s (all of which agree); `None` if neither says.
    #[inline]
    pub fn returns_value(&self) -> Option<bool> {
        self.returns_value
    }

    /// Stack height right before `id`; `None` if `id` is unreachable or not in the body.
    #[inline]
    pub fn height_before(&self, id: InstrId) -> Option<u16> {
        let pos = match self.maps {
            None => id.0,
            Some((order, pos_of)) => checked_pos(order, pos_of, id)?,
        };
        let state = state_of(*self.cells.get(pos as usize)?);
        (state & UNSET == 0).then_some((state & HEIGHT) as u16)
    }

    /// Whether `id` is reachable (and therefore was verified).
    #[inline]
    pub fn is_reachable(&self, id: InstrId) -> bool {
        self.height_before(id).is_some()
    }

    /// Height before every instruction, indexed by [`InstrId::index`] (`None` for
    /// unreachable instructions and ids not in the body).
    pub fn heights_by_id(&self) -> Vec<Option<u16>> {
        (0..self.arena)
            .map(|i| self.height_before(InstrId(i as u32)))
            .collect()
    }
}

/// Reusable scratch space for stack analysis; keep one per thread and feed it every body.
///
/// The analysis works on *positions* (the index of an instruction in list order): a
/// first pass lays the body out as one row per position (see `ROWS`) and resolves the
/// call sites, so the simulation proper reads rows in order and never follows links.
/// For a list in flat storage positions are ids and no map is built.
#[derive(Debug, Default, Clone)]
pub struct StackAnalyzer {
    /// Cell of each position: its row (stack effect and flow) and its state word
    /// (height, or `UNSET`, and the flags `TRY_START` and `EXCEPTION_ENTRY`).
    cells: Vec<u64>,
    /// Whether positions are ids (flat storage); `order` and `pos_of` are unused then.
    identity: bool,
    /// Position -> id index.
    order: Vec<u32>,
    /// Id index -> position; entries of ids not in the body are stale (see
    /// [`checked_pos`]).
    pos_of: Vec<u32>,
    /// Positions of the call sites (first pass); only a prefix is meaningful.
    calls: Vec<u32>,
    /// The arena length of the body.
    arena: usize,
    /// Positions whose successors are still to be simulated.
    work: Vec<u32>,
    max: u32,
    /// Whether `ret` pops a value, once known.
    ret_pops: Option<bool>,
    /// Whether the body has exception clauses; everything below is used only then.
    eh: bool,
    /// Clause spans (positions).
    layout: Layout,
    /// Positions first reached by an edge that may enter a try region.
    entered: Vec<u32>,
    /// Whether each clause's handler has been reached.
    seeded: Vec<bool>,
    unseeded: usize,
}

impl StackAnalyzer {
    /// An analyzer with empty scratch buffers.
    pub fn new() -> Self {
        Self::default()
    }

    /// Simulates the stack over the reachable code of `body` and verifies it (see the
    /// module documentation for the rules).
    ///
    /// `returns` says whether `ret` pops a value ([`ReturnKind::Value`]) or not
    /// ([`ReturnKind::Void`]); with [`ReturnKind::Infer`] it is inferred from the
    /// reachable `ret`s, which must then agree. The body is not modified.
    ///
    /// # Errors
    /// The first rule the code breaks, naming the offending instruction:
    /// [`Error::StackUnderflow`], [`Error::StackMismatch`], [`Error::StackOverflow`],
    /// [`Error::NonEmptyStackAtTryEntry`], [`Error::BadReturnStack`],
    /// [`Error::NonEmptyStackAtJmp`], [`Error::BadEndfilterStack`],
    /// [`Error::FallsOffEnd`], [`Error::BadBranchTarget`],
    /// [`Error::MalformedInstruction`], [`Error::IllegalControlFlow`],
    /// [`Error::BadEhClause`], and [`Error::CallResolution`] for a reachable call the
    /// resolver cannot resolve.
    pub fn analyze<R: CallSiteResolver + ?Sized>(
        &mut self,
        body: &MethodBody,
        resolver: &R,
        returns: ReturnKind,
    ) -> Result<StackAnalysis<'_>> {
        self.run(body, resolver, returns.pops_value())?;
        Ok(StackAnalysis {
            max_stack: self.max as u16,
            returns_value: self.ret_pops,
            cells: &self.cells,
            maps: (!self.identity).then_some((&self.order[..], &self.pos_of[..])),
            arena: self.arena,
        })
    }

    /// Sets (or keeps) `body.max_stack` according to `mode`; see [`MaxStackMode`].
    ///
    /// # Errors
    /// With [`MaxStackMode::Compute`], the errors of [`StackAnalyzer::analyze`]; the
    /// body is then left unchanged. [`MaxStackMode::ComputeOrFallback`] and
    /// [`MaxStackMode::KeepOriginal`] never fail.
    pub fn apply_max_stack<R: CallSiteResolver + ?Sized>(
        &mut self,
        body: &mut MethodBody,
        resolver: &R,
        mode: MaxStackMode,
        returns: ReturnKind,
    ) -> Result<MaxStackReport> {
        let original = body.max_stack;
        let mut report = MaxStackReport {
            original,
            computed: None,
            max_stack: original,
            error: None,
        };
        if mode == MaxStackMode::KeepOriginal {
            return Ok(report);
        }
        match self.analyze(body, resolver, returns) {
            Ok(analysis) => {
                let computed = analysis.max_stack();
                body.max_stack = computed;
                report.computed = Some(computed);
                report.max_stack = computed;
                Ok(report)
            }
            Err(error) if mode == MaxStackMode::ComputeOrFallback => {
                report.error = Some(error);
                Ok(report)
            }
            Err(error) => Err(error),
        }
    }

    fn run<R: CallSiteResolver + ?Sized>(
        &mut self,
        body: &MethodBody,
        resolver: &R,
        returns_value: Option<bool>,
    ) -> Result<()> {
        self.lay_out(body, resolver, returns_value);
        let n = self.cells.len();
        self.work.clear();
        self.max = 0;
        self.ret_pops = returns_value;
        self.eh = !body.clauses.is_empty();
        if self.eh {
            self.prepare_clauses(body)?;
        }
        if n == 0 {
            return Err(Error::EmptyBody);
        }
        if self.eh {
            self.simulate::<true, R>(body, resolver)
        } else {
            self.simulate::<false, R>(body, resolver)
        }
    }

    /// The first pass: one cell per position holding its row, the position maps (linked
    /// storage only), and the effect of every call site the resolver answers, written
    /// into its row. A call site it fails on keeps a `VARIABLE` row, so that the error is
    /// reported only if the simulation reaches it.
    fn lay_out<R: CallSiteResolver + ?Sized>(
        &mut self,
        body: &MethodBody,
        resolver: &R,
        returns_value: Option<bool>,
    ) {
        let rows: &[u32; 256] = &ROWS[returns_value.map_or(0, |r| 1 + usize::from(r))];
        let n = body.instrs.len();
        self.arena = body.instrs.arena_len();
        self.cells.clear();
        self.cells.resize(n, UNSET_CELL);
        // Room for every position: the call positions are written unconditionally and
        // kept by advancing the count (no branch on the opcode).
        if self.calls.len() < n + 1 {
            self.calls.resize(n + 1, 0);
        }
        let mut sites = 0usize;
        if let Some(slots) = body.instrs.as_flat_slice() {
            self.identity = true;
            let calls = &mut self.calls[..n + 1];
            for (pos, (cell, slot)) in self.cells.iter_mut().zip(slots).enumerate() {
                let row = rows[slot.opcode as usize];
                *cell |= u64::from(row);
                calls[sites] = pos as u32;
                sites += (row >> CALL_SITE_SHIFT) as usize & 1;
            }
        } else {
            self.identity = false;
            self.order.clear();
            self.order.resize(n, 0);
            if self.pos_of.len() < self.arena {
                self.pos_of.resize(self.arena, 0);
            }
            let (cells, order, pos_of) = (
                &mut self.cells[..],
                &mut self.order[..],
                &mut self.pos_of[..],
            );
            let calls = &mut self.calls[..n + 1];
            let mut pos = 0usize;
            body.instrs.for_each_slot_in_order(|id, slot| {
                if let (Some(cell), Some(at)) = (cells.get_mut(pos), order.get_mut(pos)) {
                    let row = rows[slot.opcode as usize];
                    *cell |= u64::from(row);
                    *at = id;
                    pos_of[id as usize] = pos as u32;
                    calls[sites] = pos as u32;
                    sites += (row >> CALL_SITE_SHIFT) as usize & 1;
                }
                pos += 1;
            });
        }
        for i in 0..sites {
            let pos = self.calls[i];
            let slot = body.instrs.slot(self.id_at(pos));
            let token = if slot.odd {
                body.instrs.token(self.id_at(pos))
            } else {
                Some(slot.bits as u32)
            };
            if let Some(token) = token
                && let Ok(effect) = resolver.call_effect(slot.opcode, token)
                && let Some(row) = call_row(slot.opcode, effect)
            {
                let cell = &mut self.cells[pos as usize];
                *cell = (*cell & !u64::from(u32::MAX)) | u64::from(row);
            }
        }
    }

    /// The id of the instruction at position `pos`.
    #[inline(always)]
    fn id_at(&self, pos: u32) -> InstrId {
        if self.identity {
            InstrId(pos)
        } else {
            InstrId(self.order[pos as usize])
        }
    }

    /// The position of `id`, if it is an instruction of the body.
    #[inline(always)]
    fn pos_in_body(&self, id: InstrId) -> Option<u32> {
        if self.identity {
            (id.index() < self.cells.len()).then_some(id.0)
        } else {
            checked_pos(&self.order, &self.pos_of, id)
        }
    }

    /// The state word of position `p`.
    #[inline(always)]
    fn state(&self, p: u32) -> u32 {
        state_of(self.cells[p as usize])
    }

    /// Replaces the state word of position `p`.
    #[inline(always)]
    fn set_state(&mut self, p: u32, state: u32) {
        let cell = &mut self.cells[p as usize];
        *cell = (*cell & u64::from(u32::MAX)) | (u64::from(state) << STATE_SHIFT);
    }

    /// The simulation proper, from the entry; `EH` is whether the body has clauses.
    #[inline(never)]
    fn simulate<const EH: bool, R: CallSiteResolver + ?Sized>(
        &mut self,
        body: &MethodBody,
        resolver: &R,
    ) -> Result<()> {
        self.reach::<EH>(body, 0, 0, Via::Entry)?;
        self.work.push(0);
        loop {
            if EH {
                while let Some(p) = self.entered.pop() {
                    if self.unseeded == 0 {
                        // Every handler is reachable already.
                        self.entered.clear();
                        break;
                    }
                    self.enter_regions(body, p)?;
                }
            }
            let Some(p) = self.work.pop() else {
                return Ok(());
            };
            self.walk::<EH, R>(body, resolver, p)?;
        }
    }

    fn prepare_clauses(&mut self, body: &MethodBody) -> Result<()> {
        let clauses = &mut self.layout.clauses;
        if self.identity {
            let n = self.cells.len();
            build_clause_spans(clauses, body, |id| (id.index() < n).then_some(id.0))?;
        } else {
            let (order, pos_of) = (&self.order, &self.pos_of);
            build_clause_spans(clauses, body, |id| checked_pos(order, pos_of, id))?;
        }
        let count = self.layout.clauses.len();
        self.entered.clear();
        self.seeded.clear();
        self.seeded.resize(count, false);
        self.unseeded = count;
        // The spans are positions of instructions of the body.
        let flag = |cells: &mut [u64], p: u32, flag: u32| {
            cells[p as usize] |= u64::from(flag) << STATE_SHIFT;
        };
        for c in &self.layout.clauses {
            if c.handler_start == 0 || c.filter_start == 0 {
                return Err(Error::IllegalControlFlow {
                    at: self.site(body, 0),
                    what: "the method starts with a handler or filter, which only an exception enters",
                });
            }
            flag(&mut self.cells, c.try_start, TRY_START);
            if c.kind.entry_height() == 1 {
                flag(&mut self.cells, c.handler_start, EXCEPTION_ENTRY);
            }
            if c.filter_start != LAYOUT_NONE {
                flag(&mut self.cells, c.filter_start, EXCEPTION_ENTRY);
            }
        }
        Ok(())
    }

    #[inline]
    fn site(&self, body: &MethodBody, p: u32) -> InstrSite {
        site(body, self.id_at(p))
    }

    /// Records that position `p` is reached with height `h`. Returns whether this is
    /// the first time (the caller then schedules or continues with `p`).
    #[inline(always)]
    fn reach<const EH: bool>(
        &mut self,
        body: &MethodBody,
        p: u32,
        h: u32,
        via: Via,
    ) -> Result<bool> {
        if EH {
            return self.reach_eh(body, p, h, via);
        }
        let current = self.state(p);
        if current == UNSET {
            self.set_state(p, h);
            Ok(true)
        } else if current == h {
            Ok(false)
        } else {
            Err(self.mismatch(body, p, current, h, via))
        }
    }

    /// [`Self::reach`] for bodies with exception clauses.
    #[inline(always)]
    fn reach_eh(&mut self, body: &MethodBody, p: u32, h: u32, via: Via) -> Result<bool> {
        let state = self.state(p);
        if state & EXCEPTION_ENTRY != 0
            && let Some(src) = via.source()
        {
            return Err(self.entry_reached_by_edge(body, src));
        }
        if state & UNSET != 0 {
            // The height bits are 0 while unset.
            self.set_state(p, (state ^ UNSET) | h);
            if state & TRY_START != 0 && h != 0 {
                return Err(self.non_empty_try_entry(body, p, h));
            }
            // The first instruction of a try region reached at all is reached either by
            // a non-fall-through edge or by falling into the try's first instruction.
            if self.unseeded != 0 && (state & TRY_START != 0 || !matches!(via, Via::Fallthrough(_)))
            {
                self.entered.push(p);
            }
            Ok(true)
        } else if state & HEIGHT == h {
            Ok(false)
        } else {
            Err(self.mismatch(body, p, state & HEIGHT, h, via))
        }
    }

    #[cold]
    #[inline(never)]
    fn entry_reached_by_edge(&self, body: &MethodBody, src: u32) -> Error {
        Error::IllegalControlFlow {
            at: self.site(body, src),
            what: "branch or fall-through into the entry of a catch handler, filter or filter handler",
        }
    }

    #[cold]
    #[inline(never)]
    fn non_empty_try_entry(&self, body: &MethodBody, p: u32, h: u32) -> Error {
        let clause = self
            .layout
            .clauses
            .iter()
            .position(|c| c.try_start == p)
            .unwrap_or(0);
        Error::NonEmptyStackAtTryEntry {
            at: self.site(body, p),
            clause,
            height: h as u16,
        }
    }

    #[cold]
    fn mismatch(&self, body: &MethodBody, p: u32, current: u32, h: u32, via: Via) -> Error {
        Error::StackMismatch {
            at: self.site(body, p),
            from: via.source().map(|src| self.site(body, src)),
            expected: current as u16,
            found: h as u16,
        }
    }

    /// Makes the handlers (and filters) of every clause whose try region holds position
    /// `pos` reachable.
    #[inline(always)]
    fn enter_regions(&mut self, body: &MethodBody, pos: u32) -> Result<()> {
        // Most instructions entered lie in no try region whose handler is still unseeded.
        let first = self
            .layout
            .clauses
            .iter()
            .zip(&self.seeded)
            .position(|(c, &seeded)| !seeded && c.in_try(pos));
        match first {
            Some(first) => self.seed_regions(body, pos, first),
            None => Ok(()),
        }
    }

    /// Seeds the handlers of the clauses from `first` on whose try region holds `pos`
    /// and whose handler is not yet reachable, in clause order.
    #[inline(never)]
    fn seed_regions(&mut self, body: &MethodBody, pos: u32, first: usize) -> Result<()> {
        for index in first..self.layout.clauses.len() {
            let c = self.layout.clauses[index];
            if self.seeded[index] || !c.in_try(pos) {
                continue;
            }
            self.seeded[index] = true;
            self.unseeded -= 1;
            let seed = |this: &mut Self, p: u32, h: u32| -> Result<()> {
                this.max = this.max.max(h);
                if this.reach::<true>(body, p, h, Via::Handler)? {
                    this.work.push(p);
                }
                Ok(())
            };
            seed(self, c.handler_start, c.kind.entry_height())?;
            if c.filter_start != LAYOUT_NONE {
                seed(self, c.filter_start, 1)?;
            }
        }
        Ok(())
    }

    /// A branch, switch or leave edge from position `p` to `target` carrying height `h`.
    #[inline(always)]
    fn jump<const EH: bool>(
        &mut self,
        body: &MethodBody,
        p: u32,
        target: InstrId,
        h: u32,
    ) -> Result<()> {
        let Some(t) = self.pos_in_body(target) else {
            return Err(Error::BadBranchTarget {
                at: self.site(body, p),
                target,
            });
        };
        if self.reach::<EH>(body, t, h, Via::Jump(p))? {
            self.work.push(t);
        }
        Ok(())
    }

    /// Simulates from position `p` along fall-through edges until control leaves the
    /// straight line or reaches an instruction already simulated.
    #[inline(always)]
    fn walk<const EH: bool, R: CallSiteResolver + ?Sized>(
        &mut self,
        body: &MethodBody,
        resolver: &R,
        p: u32,
    ) -> Result<()> {
        let mut max = self.max;
        let result = self.walk_from::<EH, R>(body, resolver, p, &mut max);
        self.max = max;
        result
    }

    /// [`Self::walk`] with the running max in a local.
    #[inline(always)]
    fn walk_from<const EH: bool, R: CallSiteResolver + ?Sized>(
        &mut self,
        body: &MethodBody,
        resolver: &R,
        mut p: u32,
        max: &mut u32,
    ) -> Result<()> {
        // `p` has been reached: its height is set.
        let mut cell = self.cells[p as usize];
        let mut h = state_of(cell) & HEIGHT;
        loop {
            let row = cell as u32;
            let (pops, pushes) = if row & VARIABLE == 0 {
                (row & POPS, (row >> PUSH_SHIFT) & 0xFF)
            } else {
                self.variable_effect(body, resolver, p, h)?
            };
            if pops > h {
                return Err(self.underflow(body, p, h, pops));
            }
            let after = h - pops + pushes;
            if after > MAX_HEIGHT {
                return Err(Error::StackOverflow {
                    at: self.site(body, p),
                });
            }
            *max = (*max).max(after);
            if row & CONTROL != 0 && self.control::<EH>(body, p, row, h, after)? {
                return Ok(());
            }
            // Fall through to the next position; continue there if it is new.
            let next = p + 1;
            let Some(&next_cell) = self.cells.get(next as usize) else {
                return Err(Error::FallsOffEnd {
                    at: self.site(body, p),
                });
            };
            // The common case first: falling into an instruction not yet reached that is
            // neither a try start nor an exception entry; `reach` would just set its height
            // (the height bits are 0 while unset).
            if state_of(next_cell) & (UNSET | TRY_START | EXCEPTION_ENTRY) == UNSET {
                cell = next_cell ^ (u64::from(UNSET ^ after) << STATE_SHIFT);
                self.cells[next as usize] = cell;
            } else if self.reach::<EH>(body, next, after, Via::Fallthrough(p))? {
                cell = self.cells[next as usize];
            } else {
                return Ok(());
            }
            p = next;
            h = after;
        }
    }

    #[cold]
    #[inline(never)]
    fn underflow(&self, body: &MethodBody, p: u32, h: u32, pops: u32) -> Error {
        match body.instrs.opcode(self.id_at(p)) {
            OpCode::Endfilter => return self.bad_endfilter(body, p, h),
            OpCode::Ret => return self.bad_return(body, p, h, Some(pops)),
            _ => {}
        }
        Error::StackUnderflow {
            at: self.site(body, p),
            height: h as u16,
            pops: pops.min(MAX_HEIGHT) as u16,
        }
    }

    /// The stack effect of `ret` or of a call site not resolved in the first pass.
    #[cold]
    #[inline(never)]
    fn variable_effect<R: CallSiteResolver + ?Sized>(
        &mut self,
        body: &MethodBody,
        resolver: &R,
        p: u32,
        h: u32,
    ) -> Result<(u32, u32)> {
        let id = self.id_at(p);
        let opcode = body.instrs.opcode(id);
        if opcode == OpCode::Ret {
            return Ok((self.ret_pops(body, p, h)?, 0));
        }
        let Some(token) = body.instrs.token(id) else {
            return Err(Error::MalformedInstruction {
                at: self.site(body, p),
                what: "call without a token operand",
            });
        };
        let effect = resolver
            .call_effect(opcode, token)
            .map_err(|e| Error::CallResolution {
                at: self.site(body, p),
                source: Box::new(e),
            })?;
        Ok(call_effect_counts(opcode, effect))
    }

    /// Handles the instruction at position `p` whose flow is not a plain fall-through:
    /// follows its explicit edges and checks its rules. Returns whether control ends here
    /// (`false` when it also falls through, as conditional branches and switches do).
    fn control<const EH: bool>(
        &mut self,
        body: &MethodBody,
        p: u32,
        row: u32,
        h: u32,
        after: u32,
    ) -> Result<bool> {
        let flow = (row >> FLOW_SHIFT) & 0xF;
        if row & BRANCH_SITE != 0 {
            // The common control instructions, without a dispatch on the flow code.
            let target = self.branch_target(body, p)?;
            let h = if flow == FLOW_LEAVE { 0 } else { after };
            self.jump::<EH>(body, p, target, h)?;
            return Ok(flow != FLOW_COND);
        }
        match flow {
            FLOW_SWITCH => {
                let slot = body.instrs.slot(self.id_at(p));
                let targets = if slot.odd {
                    None
                } else {
                    body.instrs.try_switch_targets(SwitchTargets {
                        start: slot.bits as u32,
                        len: (slot.bits >> 32) as u32,
                    })
                };
                let Some(targets) = targets else {
                    return Err(Error::MalformedInstruction {
                        at: self.site(body, p),
                        what: "switch without a target table of this body",
                    });
                };
                for &target in targets {
                    self.jump::<EH>(body, p, target, after)?;
                }
                Ok(false)
            }
            FLOW_RETURN => {
                // With the return convention given, the row holds what `ret` pops;
                // otherwise `ret_pops` has checked the height already.
                if row & VARIABLE == 0 && h != row & POPS {
                    return Err(self.bad_return(body, p, h, Some(row & POPS)));
                }
                if EH && self.in_any_region(p) {
                    return Err(Error::IllegalControlFlow {
                        at: self.site(body, p),
                        what: "ret inside a try, filter or handler (leave the region first)",
                    });
                }
                Ok(true)
            }
            FLOW_JMP => {
                if h != 0 {
                    return Err(Error::NonEmptyStackAtJmp {
                        at: self.site(body, p),
                        height: h as u16,
                    });
                }
                Ok(true)
            }
            FLOW_ENDFINALLY => {
                let inside = EH
                    && self.layout.clauses.iter().any(|c| {
                        matches!(c.kind, HandlerKind::Finally | HandlerKind::Fault)
                            && c.in_handler(p)
                    });
                if !inside {
                    return Err(Error::IllegalControlFlow {
                        at: self.site(body, p),
                        what: "endfinally outside a finally or fault handler",
                    });
                }
                Ok(true)
            }
            FLOW_ENDFILTER => {
                if after != 0 {
                    return Err(self.bad_endfilter(body, p, h));
                }
                let inside = EH && self.layout.clauses.iter().any(|c| c.in_filter(p));
                if !inside {
                    return Err(Error::IllegalControlFlow {
                        at: self.site(body, p),
                        what: "endfilter outside a filter",
                    });
                }
                Ok(true)
            }
            // FLOW_END: throw, rethrow.
            _ => Ok(true),
        }
    }

    /// How many values the `ret` at `p` pops, checking that this empties the stack and
    /// agrees with the method's return type (given, or inferred from the first `ret`).
    fn ret_pops(&mut self, body: &MethodBody, p: u32, h: u32) -> Result<u32> {
        let expected = match self.ret_pops {
            Some(returns) => u32::from(returns),
            None if h <= 1 => {
                self.ret_pops = Some(h == 1);
                h
            }
            None => return Err(self.bad_return(body, p, h, None)),
        };
        if h != expected {
            return Err(self.bad_return(body, p, h, Some(expected)));
        }
        Ok(expected)
    }

    #[cold]
    fn bad_return(&self, body: &MethodBody, p: u32, h: u32, expected: Option<u32>) -> Error {
        Error::BadReturnStack {
            at: self.site(body, p),
            height: h.min(MAX_HEIGHT) as u16,
            expected: expected.map(|e| e as u16),
        }
    }

    fn bad_endfilter(&self, body: &MethodBody, p: u32, h: u32) -> Error {
        Error::BadEndfilterStack {
            at: self.site(body, p),
            height: h.min(MAX_HEIGHT) as u16,
        }
    }

    /// The target of the branch at position `p` (whose opcode is a branch).
    fn branch_target(&self, body: &MethodBody, p: u32) -> Result<InstrId> {
        let slot = body.instrs.slot(self.id_at(p));
        if slot.odd {
            return Err(Error::MalformedInstruction {
                at: self.site(body, p),
                what: "branch without a target operand",
            });
        }
        Ok(InstrId(slot.bits as u32))
    }

    fn in_any_region(&self, p: u32) -> bool {
        self.layout
            .clauses
            .iter()
            .any(|c| c.in_try(p) || c.in_handler(p) || c.in_filter(p))
    }
}

/// The position of `id` from the maps of a linked body, if `id` is an instruction of
/// it: `pos_of` may hold stale entries for other ids, which `order` exposes.
#[inline(always)]
fn checked_pos(order: &[u32], pos_of: &[u32], id: InstrId) -> Option<u32> {
    let pos = *pos_of.get(id.index())?;
    (order.get(pos as usize) == Some(&id.0)).then_some(pos)
}

/// Pops and pushes of a call site: the opcode table's fixed counts where it has them
/// (`newobj` pushes 1), the resolver's answer for the rest.
fn call_effect_counts(opcode: OpCode, effect: CallEffect) -> (u32, u32) {
    let info = opcode.info();
    let pick = |count: StackCount, resolved: u16| match count {
        StackCount::Fixed(n) => u32::from(n),
        StackCount::Variable => u32::from(resolved),
    };
    (
        pick(info.pops, effect.pops),
        pick(info.pushes, effect.pushes),
    )
}

/// The row of a resolved call site, or `None` if its pushes do not fit a row (the
/// simulation then asks again when it reaches the site).
fn call_row(opcode: OpCode, effect: CallEffect) -> Option<u32> {
    let (pops, pushes) = call_effect_counts(opcode, effect);
    (pops <= POPS && pushes <= 0xFF).then_some(pops | (pushes << PUSH_SHIFT))
}

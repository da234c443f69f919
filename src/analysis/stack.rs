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
//! pass can see at no extra cost: a branch or fall-through into the first instruction of
//! a catch handler, filter or filter handler; `ret` inside a try, filter or handler;
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
//! Each reachable instruction is simulated once; each edge is checked once. Scratch
//! buffers live in the [`StackAnalyzer`] and are reused across bodies: analysing a body
//! allocates nothing once the buffers have grown to the largest body seen.
#![forbid(unsafe_code)]

use super::layout::{HandlerKind, Layout, site};
use super::resolve::CallSiteResolver;
use crate::body::MethodBody;
use crate::error::InstrSite;
use crate::graph::{InstrId, Operand};
use crate::opcode::{Flow, OpCode, StackCount};
use crate::{Error, Result};
use std::sync::LazyLock;

/// Per-instruction state word: the height before the instruction in the low 16 bits
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

/// Packed stack effect of every opcode, indexed by `OpCode as u8`: pops in bits 0-7,
/// pushes in bits 8-15 (`VARIABLE` when a signature decides, and then `VARIABLE_EFFECT`
/// is set), and `PLAIN` when control simply falls through (no branch, no region rule).
/// Built once from the opcode table.
static EFFECTS: LazyLock<[u32; 256]> = LazyLock::new(|| {
    let mut table = [VARIABLE | (VARIABLE << 8) | VARIABLE_EFFECT; 256];
    for &op in OpCode::ALL {
        let info = op.info();
        let count = |c: StackCount| match c {
            StackCount::Fixed(n) => u32::from(n),
            StackCount::Variable => VARIABLE,
        };
        let plain = match info.flow {
            Flow::Next | Flow::Call | Flow::Break | Flow::Prefix => PLAIN,
            _ => 0,
        };
        let (pops, pushes) = (count(info.pops), count(info.pushes));
        let variable = if pops == VARIABLE || pushes == VARIABLE {
            VARIABLE_EFFECT
        } else {
            0
        };
        table[op as usize] = pops | (pushes << 8) | plain | variable;
    }
    table
});
const VARIABLE: u32 = 0xFF;
const PLAIN: u32 = 1 << 16;
const VARIABLE_EFFECT: u32 = 1 << 17;

/// How an edge reaches an instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Via {
    /// The method entry.
    Entry,
    /// Exception-handler entry (handler or filter start).
    Handler,
    /// Fall-through from the instruction with this id index.
    Fallthrough(u32),
    /// Branch, switch or leave from the instruction with this id index.
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
    /// State word of each instruction (height, or `UNSET`, and flags), indexed by id.
    heights: &'a [u32],
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
        match self.heights.get(id.index()) {
            Some(&h) if h & UNSET == 0 => Some((h & HEIGHT) as u16),
            _ => None,
        }
    }

    /// Whether `id` is reachable (and therefore was verified).
    #[inline]
    pub fn is_reachable(&self, id: InstrId) -> bool {
        self.height_before(id).is_some()
    }

    /// Height before every instruction, indexed by [`InstrId::index`] (`None` for
    /// unreachable instructions and ids not in the body).
    pub fn heights_by_id(&self) -> Vec<Option<u16>> {
        self.heights
            .iter()
            .map(|&h| (h & UNSET == 0).then_some((h & HEIGHT) as u16))
            .collect()
    }
}

/// Reusable scratch space for stack analysis; keep one per thread and feed it every body.
#[derive(Debug, Default, Clone)]
pub struct StackAnalyzer {
    /// State word of each instruction (height, or `UNSET`, and the flags `TRY_START` and
    /// `EXCEPTION_ENTRY`), indexed by id.
    heights: Vec<u32>,
    /// Instructions whose successors are still to be simulated.
    work: Vec<u32>,
    max: u32,
    /// Whether `ret` pops a value, once known.
    ret_pops: Option<bool>,
    /// Whether the body has exception clauses; everything below is used only then.
    eh: bool,
    /// Positions and clause spans.
    layout: Layout,
    /// Instructions first reached by an edge that may enter a try region.
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
    /// `returns_value` says whether the method returns a value (`ret` pops 1) or not
    /// (`ret` pops 0); with `None` it is inferred from the reachable `ret`s, which must
    /// then agree. Errors name the offending instruction; the body is not modified.
    pub fn analyze<R: CallSiteResolver + ?Sized>(
        &mut self,
        body: &MethodBody,
        resolver: &R,
        returns_value: Option<bool>,
    ) -> Result<StackAnalysis<'_>> {
        self.run(body, resolver, returns_value)?;
        Ok(StackAnalysis {
            max_stack: self.max as u16,
            returns_value: self.ret_pops,
            heights: &self.heights,
        })
    }

    /// Sets (or keeps) `body.max_stack` according to `mode`; see [`MaxStackMode`].
    ///
    /// With [`MaxStackMode::Compute`] an analysis error is returned and the body is left
    /// unchanged; [`MaxStackMode::ComputeOrFallback`] never fails.
    pub fn apply_max_stack<R: CallSiteResolver + ?Sized>(
        &mut self,
        body: &mut MethodBody,
        resolver: &R,
        mode: MaxStackMode,
        returns_value: Option<bool>,
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
        match self.analyze(body, resolver, returns_value) {
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
        self.heights.clear();
        self.heights.resize(body.instrs.arena_len(), UNSET);
        self.work.clear();
        self.max = 0;
        self.ret_pops = returns_value;
        self.eh = !body.clauses.is_empty();
        if self.eh {
            self.prepare_clauses(body)?;
        }
        let Some(entry) = body.instrs.first() else {
            return Err(Error::EmptyBody);
        };
        if self.eh {
            self.simulate::<true, R>(body, resolver, entry)
        } else {
            self.simulate::<false, R>(body, resolver, entry)
        }
    }

    /// The simulation proper, from the entry; `EH` is whether the body has clauses.
    #[inline(never)]
    fn simulate<const EH: bool, R: CallSiteResolver + ?Sized>(
        &mut self,
        body: &MethodBody,
        resolver: &R,
        entry: InstrId,
    ) -> Result<()> {
        let effects: &[u32; 256] = &EFFECTS;
        self.reach::<EH>(body, entry.0, 0, Via::Entry)?;
        self.work.push(entry.0);
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
            self.walk::<EH, R>(body, resolver, effects, p)?;
        }
    }

    fn prepare_clauses(&mut self, body: &MethodBody) -> Result<()> {
        self.layout.build_positions(body)?;
        let clauses = &self.layout.clauses;
        self.entered.clear();
        self.seeded.clear();
        self.seeded.resize(clauses.len(), false);
        self.unseeded = clauses.len();
        // The layout has checked that every boundary is an instruction of the body.
        for (c, clause) in clauses.iter().zip(&body.clauses) {
            self.heights[clause.try_start.index()] |= TRY_START;
            if c.kind.entry_height() == 1 {
                self.heights[clause.handler_start.index()] |= EXCEPTION_ENTRY;
            }
            if let Some(filter) = clause.filter_start() {
                self.heights[filter.index()] |= EXCEPTION_ENTRY;
            }
        }
        Ok(())
    }

    #[inline]
    fn site(&self, body: &MethodBody, p: u32) -> InstrSite {
        site(body, InstrId(p))
    }

    /// Position of the instruction with id index `p`, which must be an instruction of the
    /// body (only with clauses; see [`Layout::build_positions`]).
    #[inline]
    fn pos(&self, p: u32) -> u32 {
        self.layout.pos_of[p as usize]
    }

    /// Records that instruction `p` is reached with height `h`. Returns whether this is
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
        let current = self.heights[p as usize];
        if current == UNSET {
            self.heights[p as usize] = h;
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
        let state = self.heights[p as usize];
        if state & EXCEPTION_ENTRY != 0
            && let Some(src) = via.source()
        {
            return Err(self.entry_reached_by_edge(body, src));
        }
        if state & UNSET != 0 {
            // The height bits are 0 while unset.
            self.heights[p as usize] = (state ^ UNSET) | h;
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
        let pos = self.pos(p);
        let clause = self
            .layout
            .clauses
            .iter()
            .position(|c| c.try_start == pos)
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

    /// Makes the handlers (and filters) of every clause whose try region holds `p`
    /// reachable.
    #[inline(always)]
    fn enter_regions(&mut self, body: &MethodBody, p: u32) -> Result<()> {
        let pos = self.pos(p);
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
            let seed = |this: &mut Self, id: InstrId, h: u32| -> Result<()> {
                this.max = this.max.max(h);
                if this.reach::<true>(body, id.0, h, Via::Handler)? {
                    this.work.push(id.0);
                }
                Ok(())
            };
            // The layout has checked that these are instructions of the body.
            let clause = &body.clauses[index];
            seed(self, clause.handler_start, c.kind.entry_height())?;
            if let Some(filter) = clause.filter_start() {
                seed(self, filter, 1)?;
            }
        }
        Ok(())
    }

    /// A branch, switch or leave edge from `p` to `target` carrying height `h`.
    #[inline(always)]
    fn jump<const EH: bool>(
        &mut self,
        body: &MethodBody,
        p: u32,
        target: InstrId,
        h: u32,
    ) -> Result<()> {
        if !body.instrs.contains(target) {
            return Err(Error::BadBranchTarget {
                at: self.site(body, p),
                target,
            });
        }
        if self.reach::<EH>(body, target.0, h, Via::Jump(p))? {
            self.work.push(target.0);
        }
        Ok(())
    }

    /// Simulates from `p` along fall-through edges until control leaves the straight line
    /// or reaches an instruction already simulated.
    #[inline(always)]
    fn walk<const EH: bool, R: CallSiteResolver + ?Sized>(
        &mut self,
        body: &MethodBody,
        resolver: &R,
        effects: &[u32; 256],
        mut p: u32,
    ) -> Result<()> {
        // `p` has been reached: its height is set.
        let mut h = self.heights[p as usize] & HEIGHT;
        loop {
            let opcode = body.instrs.opcode(InstrId(p));
            let effect = effects[opcode as u8 as usize];
            let mut pops = effect & 0xFF;
            let mut pushes = (effect >> 8) & 0xFF;
            if effect & VARIABLE_EFFECT != 0 {
                (pops, pushes) = self.variable_effect(body, resolver, p, h, pops, pushes)?;
            }
            if pops > h {
                if opcode == OpCode::Endfilter {
                    return Err(self.bad_endfilter(body, p, h));
                }
                return Err(Error::StackUnderflow {
                    at: self.site(body, p),
                    height: h as u16,
                    pops: pops.min(MAX_HEIGHT) as u16,
                });
            }
            let after = h - pops + pushes;
            if after > self.max {
                if after > MAX_HEIGHT {
                    return Err(Error::StackOverflow {
                        at: self.site(body, p),
                    });
                }
                self.max = after;
            }
            if effect & PLAIN == 0 && self.control::<EH>(body, p, h, after)? {
                return Ok(());
            }
            // Fall through to the next instruction; continue there if it is new.
            let Some(next) = body.instrs.next(InstrId(p)) else {
                return Err(Error::FallsOffEnd {
                    at: self.site(body, p),
                });
            };
            // The common case first: falling into an instruction not yet reached that is
            // neither a try start nor an exception entry; `reach` would just set its height.
            let state = self.heights[next.0 as usize];
            if state & (UNSET | TRY_START | EXCEPTION_ENTRY) == UNSET {
                self.heights[next.0 as usize] = (state ^ UNSET) | after;
            } else if !self.reach::<EH>(body, next.0, after, Via::Fallthrough(p))? {
                return Ok(());
            }
            p = next.0;
            h = after;
        }
    }

    /// The stack effect of a call or `ret`, whose table entry says `VARIABLE`.
    #[inline(always)]
    fn variable_effect<R: CallSiteResolver + ?Sized>(
        &mut self,
        body: &MethodBody,
        resolver: &R,
        p: u32,
        h: u32,
        pops: u32,
        pushes: u32,
    ) -> Result<(u32, u32)> {
        let opcode = body.instrs.opcode(InstrId(p));
        if opcode == OpCode::Ret {
            return Ok((self.ret_pops(body, p, h)?, pushes));
        }
        let Some(token) = body.instrs.token(InstrId(p)) else {
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
        let pops = if pops == VARIABLE {
            u32::from(effect.pops)
        } else {
            pops
        };
        let pushes = if pushes == VARIABLE {
            u32::from(effect.pushes)
        } else {
            pushes
        };
        Ok((pops, pushes))
    }

    /// Handles the instruction at `p` whose flow is not a plain fall-through: follows its
    /// explicit edges and checks its rules. Returns whether control ends here (`false`
    /// when it also falls through, as conditional branches and switches do).
    fn control<const EH: bool>(
        &mut self,
        body: &MethodBody,
        p: u32,
        h: u32,
        after: u32,
    ) -> Result<bool> {
        let instr = body.instrs.get(InstrId(p));
        let flow = instr.opcode.flow();
        match flow {
            Flow::Next | Flow::Call | Flow::Break | Flow::Prefix => Ok(false),
            Flow::Branch | Flow::Leave => {
                let target = self.branch_target(body, p, instr.operand)?;
                let h = if flow == Flow::Leave { 0 } else { after };
                self.jump::<EH>(body, p, target, h)?;
                Ok(true)
            }
            Flow::CondBranch => {
                let target = self.branch_target(body, p, instr.operand)?;
                self.jump::<EH>(body, p, target, after)?;
                Ok(false)
            }
            Flow::Switch => {
                let targets = match instr.operand {
                    Operand::Switch(t) => body.instrs.try_switch_targets(t),
                    _ => None,
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
            Flow::Return => {
                if EH && self.in_any_region(p) {
                    return Err(Error::IllegalControlFlow {
                        at: self.site(body, p),
                        what: "ret inside a try, filter or handler (leave the region first)",
                    });
                }
                Ok(true)
            }
            Flow::Jmp => {
                if h != 0 {
                    return Err(Error::NonEmptyStackAtJmp {
                        at: self.site(body, p),
                        height: h as u16,
                    });
                }
                Ok(true)
            }
            Flow::Throw | Flow::Rethrow => Ok(true),
            Flow::EndFinally => {
                let inside = EH && {
                    let pos = self.pos(p);
                    self.layout.clauses.iter().any(|c| {
                        matches!(c.kind, HandlerKind::Finally | HandlerKind::Fault)
                            && c.in_handler(pos)
                    })
                };
                if !inside {
                    return Err(Error::IllegalControlFlow {
                        at: self.site(body, p),
                        what: "endfinally outside a finally or fault handler",
                    });
                }
                Ok(true)
            }
            Flow::EndFilter => {
                if after != 0 {
                    return Err(self.bad_endfilter(body, p, h));
                }
                let inside = EH && {
                    let pos = self.pos(p);
                    self.layout.clauses.iter().any(|c| c.in_filter(pos))
                };
                if !inside {
                    return Err(Error::IllegalControlFlow {
                        at: self.site(body, p),
                        what: "endfilter outside a filter",
                    });
                }
                Ok(true)
            }
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
            None => {
                return Err(Error::BadReturnStack {
                    at: self.site(body, p),
                    height: h.min(MAX_HEIGHT) as u16,
                    expected: None,
                });
            }
        };
        if h != expected {
            return Err(Error::BadReturnStack {
                at: self.site(body, p),
                height: h.min(MAX_HEIGHT) as u16,
                expected: Some(expected as u16),
            });
        }
        Ok(expected)
    }

    fn bad_endfilter(&self, body: &MethodBody, p: u32, h: u32) -> Error {
        Error::BadEndfilterStack {
            at: self.site(body, p),
            height: h.min(MAX_HEIGHT) as u16,
        }
    }

    fn branch_target(&self, body: &MethodBody, p: u32, operand: Operand) -> Result<InstrId> {
        match operand {
            Operand::Target(t) => Ok(t),
            _ => Err(Error::MalformedInstruction {
                at: self.site(body, p),
                what: "branch without a target operand",
            }),
        }
    }

    fn in_any_region(&self, p: u32) -> bool {
        let pos = self.pos(p);
        self.layout
            .clauses
            .iter()
            .any(|c| c.in_try(pos) || c.in_handler(pos) || c.in_filter(pos))
    }
}

/// Analyses `body` with a fresh [`StackAnalyzer`] and returns its exact max stack.
///
/// Convenient for one body; use a [`StackAnalyzer`] to reuse buffers across many.
pub fn compute_max_stack<R: CallSiteResolver + ?Sized>(
    body: &MethodBody,
    resolver: &R,
    returns_value: Option<bool>,
) -> Result<u16> {
    let mut analyzer = StackAnalyzer::new();
    Ok(analyzer.analyze(body, resolver, returns_value)?.max_stack())
}

/// Sets (or keeps) `body.max_stack` according to `mode` with a fresh [`StackAnalyzer`];
/// see [`StackAnalyzer::apply_max_stack`].
pub fn apply_max_stack<R: CallSiteResolver + ?Sized>(
    body: &mut MethodBody,
    resolver: &R,
    mode: MaxStackMode,
    returns_value: Option<bool>,
) -> Result<MaxStackReport> {
    StackAnalyzer::new().apply_max_stack(body, resolver, mode, returns_value)
}

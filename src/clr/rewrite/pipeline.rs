//! The rewrite pipeline, one method at a time, separate from where its IL comes from and
//! goes to ([`Delivery`]): claim, read, decode, the plan's edits, verify, define the
//! LocalVarSig token, encode with the IL map, hand over. Each phase is a function that
//! either goes on with its result or ends the rewrite with its outcome.

use std::cell::RefCell;

use smallvec::SmallVec;

use super::clock::Clock;
use super::delivery::Delivery;
use super::edits::{EditStep, MethodPlan, PlanRun, Rollbacks, run_plan};
use super::method_rewrite::MethodRewrite;
use super::module::{ModuleState, row};
use super::outcome::{Failure, FailureCause, Phase, RewriteOutcome};
use super::states::{Claim, Rewriting, WAIT_LIMIT};
use crate::analysis::{MaxStackMode, ReturnKind, StackAnalyzer};
use crate::body::{Decoder, Encoder, MethodBody};
use crate::clr::log;
use crate::clr::sys::{FunctionID, mdToken};
use crate::ilmap::IlMap;
use crate::metadata::MetadataSource;
use crate::sig::summarize_method_sig;

/// Which rewrite the pipeline runs: where a method's rewrite happens decides whether it
/// is claimed and what an unchanged body means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// At a first JIT: the method is claimed (rewritten once, later compilations are
    /// [`RewriteOutcome::AlreadyRewritten`]); an unchanged body hands nothing over (the
    /// runtime compiles the IL it has); with `keep_pristine` the IL read is kept as the
    /// method's pristine IL once a body is handed over.
    FirstJit {
        /// Keep the IL read ([`ModuleState::pristine_il`]).
        keep_pristine: bool,
    },
    /// For a ReJIT version (`GetReJITParameters`): nothing is claimed (every version is
    /// rewritten), and an unchanged body is handed over as read, since the version must
    /// run the IL wanted, which is not necessarily the method's default IL. The IL read
    /// is the pristine IL the delivery gives; nothing is kept.
    ReJit,
}

/// What one run of the pipeline did: its outcome, whether the plan's edits ran (the
/// method was read and decoded for them), and the steps of the plan rolled back while
/// others stand (for the host to count and log).
#[derive(Debug)]
pub(crate) struct Rewrite {
    pub(crate) outcome: RewriteOutcome,
    pub(crate) edits_ran: bool,
    pub(crate) rolled_back: Rollbacks,
    /// The plan's steps that ran and changed nothing, by position.
    pub(crate) idle: SmallVec<[usize; 4]>,
}

/// Per-thread scratch space (JIT callbacks arrive on many threads at once; nothing here
/// is shared, so nothing is locked).
#[derive(Debug, Default)]
struct Scratch {
    decoder: Decoder,
    encoder: Encoder,
    analyzer: StackAnalyzer,
    body: MethodBody,
    il: Vec<u8>,
    out: Vec<u8>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// A phase either goes on with its result or ends the rewrite with an outcome.
type Step<T> = Result<T, RewriteOutcome>;

/// The outcome of a failure of `phase`.
fn fail(phase: Phase, cause: impl Into<FailureCause>) -> RewriteOutcome {
    RewriteOutcome::Failed(Failure::new(phase, cause))
}

/// Rewrites MethodDef `token` of `module`, compiled as `function`, with `plan`, through
/// `delivery`: the whole pipeline, every failure typed with its phase, panics caught.
/// Nothing is handed over before the edited body has been verified, so any refusal or
/// failure before [`Phase::HandOver`] keeps the method's IL as it was. At a first JIT a
/// method is claimed first (see [`super::states`]): a thread that finds it being
/// rewritten waits, and a method rewritten already is
/// [`RewriteOutcome::AlreadyRewritten`].
///
/// The IL is what the delivery reads (the runtime's current IL at first JIT; a
/// delivery for a later rewrite reads the pristine IL the module kept). `mode` says
/// whether the method is claimed, whether an unchanged body is handed over, and whether
/// the IL read is kept ([`Mode`]). With `show_il` the body about to be handed over is
/// logged as a listing ([`crate::disasm::disassemble`]).
#[allow(clippy::too_many_arguments)]
pub(crate) fn run<M, D, S>(
    delivery: &D,
    module: &ModuleState<M>,
    function: FunctionID,
    token: mdToken,
    mode: Mode,
    show_il: bool,
    clock: &mut Clock<'_>,
    plan: &MethodPlan<S>,
) -> Rewrite
where
    M: MetadataSource,
    D: Delivery<M> + ?Sized,
    S: EditStep<M>,
{
    let run = Run {
        delivery,
        module,
        function,
        token,
        mode,
        show_il,
    };
    let mut edits_ran = false;
    let mut rolled_back = Rollbacks::new();
    let mut idle = SmallVec::new();
    let outcome =
        log::contain(|| run.claimed(clock, plan, &mut edits_ran, &mut rolled_back, &mut idle))
            .unwrap_or_else(|message| {
                // The scratch buffers may be half-way through an edit: start afresh.
                let _ =
                    SCRATCH.try_with(|s| s.try_borrow_mut().map(|mut s| *s = Scratch::default()));
                fail(Phase::Edit, FailureCause::Panic(message))
            });
    Rewrite {
        outcome,
        edits_ran,
        rolled_back,
        idle,
    }
}

/// What the phases report besides their outcome (kept outside the panic guard).
struct Phases<'p> {
    edits_ran: &'p mut bool,
    rolled_back: &'p mut Rollbacks,
    idle: &'p mut SmallVec<[usize; 4]>,
}

/// One method's run through the pipeline.
struct Run<'r, M, D: ?Sized> {
    delivery: &'r D,
    module: &'r ModuleState<M>,
    function: FunctionID,
    token: mdToken,
    mode: Mode,
    /// Log the body handed over.
    show_il: bool,
}

impl<M: MetadataSource, D: Delivery<M> + ?Sized> Run<'_, M, D> {
    /// Claims the method (at a first JIT), then runs the phases on this thread's
    /// scratch space. `edits_ran` is set before the plan's edits run.
    fn claimed<S: EditStep<M>>(
        &self,
        clock: &mut Clock<'_>,
        plan: &MethodPlan<S>,
        edits_ran: &mut bool,
        rolled_back: &mut Rollbacks,
        idle: &mut SmallVec<[usize; 4]>,
    ) -> RewriteOutcome {
        let claim = match self.claim() {
            Ok(claim) => claim,
            Err(outcome) => return outcome,
        };
        SCRATCH.with(|scratch| {
            let Ok(mut scratch) = scratch.try_borrow_mut() else {
                return fail(Phase::Locate, FailureCause::Reentered);
            };
            clock.lap(Phase::Locate);
            let mut phases = Phases {
                edits_ran,
                rolled_back,
                idle,
            };
            self.phases(&mut scratch, clock, plan, claim, &mut phases)
                .unwrap_or_else(|outcome| outcome)
        })
    }

    /// Claimed before anything else: two threads compiling instantiations of one method
    /// at once must not both rewrite it (the second would get the first's IL), and the
    /// second must not return before the first handed its body over (its compilation
    /// would take the original IL). A ReJIT version claims nothing.
    fn claim(&self) -> Step<Option<Rewriting<'_>>> {
        if self.mode == Mode::ReJit {
            return Ok(None);
        }
        match self.module.states.claim(row(self.token)) {
            Some(Claim::Won(claim)) => Ok(Some(claim)),
            Some(Claim::Rewritten) => Err(RewriteOutcome::AlreadyRewritten),
            Some(Claim::TimedOut) => Err(fail(
                Phase::Locate,
                FailureCause::Busy(WAIT_LIMIT.as_secs()),
            )),
            None => Err(fail(Phase::Locate, FailureCause::NoRow(self.token))),
        }
    }

    /// Every phase from reading the IL to handing the map over. `claim` is released as
    /// handed over once the runtime has the body (dropped: given up).
    fn phases<S: EditStep<M>>(
        &self,
        s: &mut Scratch,
        clock: &mut Clock<'_>,
        plan: &MethodPlan<S>,
        claim: Option<Rewriting<'_>>,
        report: &mut Phases<'_>,
    ) -> Step<RewriteOutcome> {
        s.il.clear();
        self.delivery
            .read_il(self.module, self.token, &mut s.il)
            .map_err(|e| fail(Phase::Read, e))?;
        clock.lap(Phase::Read);
        s.decoder
            .decode_into(&s.il, &mut s.body)
            .map_err(|e| fail(Phase::Decode, e))?;
        clock.lap(Phase::Decode);
        let mut method = MethodRewrite::new(self.function, self.token, self.module);
        *report.edits_ran = true;
        *report.rolled_back = self.edit(s, &mut method, plan, report.idle)?;
        clock.lap(Phase::Edit);
        // An unedited body is its original bytes again and needs no analysis.
        let edited = !s.body.instrs.is_unedited() || method.new_locals.is_some();
        if edited {
            self.verify(s, &method)?;
        }
        clock.lap(Phase::Verify);
        if let Some(blob) = &method.new_locals {
            s.body.local_var_sig = self
                .delivery
                .define_locals(self.module, blob)
                .map_err(|e| fail(Phase::Locals, e))?;
        }
        clock.lap(Phase::Locals);
        let map = self.encode(s, edited)?;
        clock.lap(Phase::Encode);
        if self.show_il {
            self.show(&s.body);
        }
        self.hand_over(&s.out)?;
        // The runtime has the new body: every compilation of the method from now on
        // compiles it, whatever happens next. Its original IL stays reachable.
        if self.mode
            == (Mode::FirstJit {
                keep_pristine: true,
            })
        {
            self.module.keep_pristine_il(self.token, &s.il);
        }
        if let Some(claim) = claim {
            claim.handed_over();
        }
        clock.lap(Phase::HandOver);
        let map_refused = map.and_then(|map| self.delivery.set_map(self.function, &map).err());
        clock.lap(Phase::Map);
        Ok(RewriteOutcome::Rewritten {
            bytes: s.out.len(),
            map_refused,
        })
    }

    /// The plan's edits; an unchanged body ends the rewrite (a ReJIT version gets the
    /// IL read, as it is).
    fn edit<S: EditStep<M>>(
        &self,
        s: &mut Scratch,
        method: &mut MethodRewrite<'_, M>,
        plan: &MethodPlan<S>,
        idle: &mut SmallVec<[usize; 4]>,
    ) -> Step<Rollbacks> {
        match run_plan(plan, &mut s.body, method) {
            Ok(PlanRun {
                changed: true,
                rolled_back,
                idle: ran_idle,
            }) => {
                *idle = ran_idle;
                Ok(rolled_back)
            }
            Ok(PlanRun { idle: ran_idle, .. }) => {
                *idle = ran_idle;
                if self.mode == Mode::ReJit {
                    self.hand_over(&s.il)?;
                }
                Err(RewriteOutcome::Unchanged)
            }
            Err(
                e @ (crate::error::Error::Unsupported { .. }
                | crate::error::Error::TailCallNotKept { .. }),
            ) => Err(RewriteOutcome::Refused(e)),
            // A limit (more locals than a method can have, a type too deep for a
            // signature tree) is valid IL the crate declines, not a failure.
            Err(e) if e.is_limit() => Err(RewriteOutcome::Refused(e)),
            Err(e) => Err(fail(Phase::Edit, e)),
        }
    }

    /// The edited body's stack (the exact max stack, unless an edit analysed it with
    /// this module's resolver already), its clauses and its tail calls.
    fn verify(&self, s: &mut Scratch, method: &MethodRewrite<'_, M>) -> Step<()> {
        let verify = |e: crate::error::Error| fail(Phase::Verify, e);
        if !method.stack_verified {
            let sig = method
                .signature()
                .and_then(summarize_method_sig)
                .map_err(verify)?;
            s.analyzer
                .apply_max_stack(
                    &mut s.body,
                    self.module.resolver(),
                    MaxStackMode::Compute,
                    ReturnKind::value_if(sig.returns_value),
                )
                .map_err(verify)?;
        }
        s.body.validate_clauses().map_err(verify)?;
        tail_calls_return(&s.body).map_err(verify)
    }
    /// Logs `body`, about to be handed over, as a listing named by the method.
    #[cold]
    fn show(&self, body: &MethodBody) {
        let metadata = self.module.metadata();
        let when = match self.mode {
            Mode::FirstJit { .. } => "first JIT",
            Mode::ReJit => "ReJIT",
        };
        let listing = match crate::disasm::disassemble(body, metadata, Some(self.token)) {
            Ok(listing) => listing.text,
            Err(e) => format!("(no listing: {e})"),
        };
        log::write(&format!(
            "IL handed over at {when} for 0x{:08x}:\n{}",
            self.token,
            listing.trim_end()
        ));
    }

    /// Encodes the body; its IL map when it was edited. An unedited body must come out
    /// as the bytes it came in as: if it does not, something is wrong, and nothing is
    /// handed over.
    fn encode(&self, s: &mut Scratch, edited: bool) -> Step<Option<IlMap>> {
        s.out.clear();
        s.encoder
            .encode(&s.body, &mut s.out)
            .map_err(|e| fail(Phase::Encode, e))?;
        if !edited && s.il.get(..s.out.len()) != Some(&s.out[..]) {
            return Err(fail(Phase::Encode, FailureCause::NotRoundTrip));
        }
        // An unedited body maps every offset to itself: the runtime needs no map.
        Ok(edited.then(|| IlMap::from_offsets(&s.body, s.encoder.encoded_offsets())))
    }

    fn hand_over(&self, body: &[u8]) -> Step<()> {
        self.delivery
            .set_body(self.module, self.token, body)
            .map_err(|e| fail(Phase::HandOver, e))
    }
}

/// Checks that every `tail.` prefix of `body` is followed by a call (`call`, `callvirt`
/// or `calli`, other prefixes allowed between) and then at once by `ret`, as the runtime
/// requires: an edit that inserts code between a tail call and its `ret` (code "before
/// every `ret`") makes IL the JIT rejects with `InvalidProgramException` at every call.
///
/// # Errors
/// [`crate::error::Error::TailCallNotKept`] with [`crate::error::TailCallRefusal::NotCallThenRet`].
pub(crate) fn tail_calls_return(body: &MethodBody) -> crate::error::Result<()> {
    use crate::opcode::OpCode;
    let broken = || crate::error::Error::TailCallNotKept {
        offset: None,
        reason: crate::error::TailCallRefusal::NotCallThenRet,
    };
    // 0: anywhere; 1: after `tail.`; 2: after its call.
    let mut state = 0u8;
    for (_, op) in body.instrs.opcodes() {
        state = match (state, op) {
            (0, OpCode::Tail) => 1,
            (0, _) => 0,
            (1, OpCode::Call | OpCode::Callvirt | OpCode::Calli) => 2,
            (1, op) if op.is_prefix() => 1,
            (2, OpCode::Ret) => 0,
            _ => return Err(broken()),
        };
    }
    match state {
        0 => Ok(()),
        _ => Err(broken()),
    }
}

#[cfg(test)]
mod tail_call_tests {
    use super::tail_calls_return;
    use crate::body::MethodBody;
    use crate::graph::Instruction;
    use crate::opcode::OpCode;

    fn body(ops: &[Instruction]) -> MethodBody {
        let mut body = MethodBody::new();
        for &op in ops {
            body.append(op);
        }
        body
    }

    /// A `tail.` call must be followed by `ret` at once (prefixes between `tail.` and the
    /// call allowed); code between them, or a `tail.` at the end, is refused.
    #[test]
    fn a_tail_call_must_be_followed_by_ret() {
        let tail = Instruction::simple(OpCode::Tail);
        let call = Instruction::with_token(OpCode::Call, 0x0A00_0001);
        let ret = Instruction::simple(OpCode::Ret);
        let nop = Instruction::simple(OpCode::Nop);
        let volatile = Instruction::simple(OpCode::Volatile);
        assert!(tail_calls_return(&body(&[tail, call, ret])).is_ok());
        assert!(tail_calls_return(&body(&[nop, call, nop, ret])).is_ok());
        assert!(tail_calls_return(&body(&[tail, volatile, call, ret])).is_ok());
        for broken in [
            &[
                tail,
                call,
                Instruction::ldc_i4(2),
                Instruction::simple(OpCode::Mul),
                ret,
            ][..],
            &[tail, call, nop, ret],
            &[tail, nop, call, ret],
            &[tail, call],
            &[tail],
        ] {
            assert!(
                matches!(
                    tail_calls_return(&body(broken)),
                    Err(crate::error::Error::TailCallNotKept {
                        reason: crate::error::TailCallRefusal::NotCallThenRet,
                        ..
                    })
                ),
                "{broken:?}"
            );
        }
    }
}

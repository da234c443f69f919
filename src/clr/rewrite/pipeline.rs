//! The rewrite pipeline, one method at a time, separate from where its IL comes from and
//! goes to ([`Delivery`]): claim, read, decode, the caller's edit, verify, define the
//! LocalVarSig token, encode with the IL map, hand over.

use std::cell::RefCell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, Ordering};

use super::delivery::Delivery;
use super::module::{ModuleState, row};
use super::outcome::{Failure, FailureCause, Phase, RewriteOutcome};
use super::states::{Claim, WAIT_LIMIT};
use crate::analysis::{MaxStackMode, ReturnKind, StackAnalyzer};
use crate::body::{Decoder, Encoder, MethodBody};
use crate::clr::log;
use crate::clr::runtime::ModuleMetadata;
use crate::clr::sys::{FunctionID, mdToken};
use crate::ilmap::IlMap;
use crate::metadata::MetadataSource;
use crate::sig::summarize_method_sig;
use crate::transform::MethodContext;

/// The method being rewritten, as the edit sees it.
#[derive(Debug)]
pub struct MethodRewrite<'a, M = ModuleMetadata> {
    /// The function being compiled.
    pub function: FunctionID,
    /// Its MethodDef token.
    pub token: mdToken,
    /// Its module.
    pub module: &'a ModuleState<M>,
    new_locals: Option<Vec<u8>>,
    /// Whether the edit's result has been analysed already, with this module's resolver
    /// (by an `Instrumenter`, whose exact max stack is that analysis).
    stack_verified: bool,
}

impl<M: MetadataSource> MethodRewrite<'_, M> {
    /// The method's signature blob.
    ///
    /// # Errors
    /// When the module's metadata does not give it.
    pub fn signature(&self) -> crate::Result<&[u8]> {
        self.module.metadata().signature(self.token)
    }

    /// The method id the pipeline gives instrumentation: the method's MethodDef token
    /// (with [`ModuleState::id`] it names the method in the process).
    pub fn method_id(&self) -> i32 {
        self.token as i32
    }

    /// What an [`crate::Instrumenter`] needs of this method, with
    /// [`MethodRewrite::method_id`] as its id.
    ///
    /// # Errors
    /// When the module's metadata does not give the signatures.
    ///
    /// Its locals are the LocalVarSig an earlier edit set
    /// ([`MethodRewrite::set_locals_signature`]) when there is one, so that edits
    /// composed on one body each extend what the one before left.
    pub fn context(&self, body: &MethodBody) -> crate::Result<MethodContext<'_>> {
        let mut context = MethodContext::from_metadata(
            self.module.metadata(),
            self.token,
            body,
            self.method_id(),
        )?;
        if let Some(locals) = &self.new_locals {
            context.locals = Some(locals);
        }
        Ok(context)
    }
}

impl<M> MethodRewrite<'_, M> {
    /// The LocalVarSig the rewritten body needs (e.g. with a return-value local added):
    /// its token is defined only once the rewritten body has been verified, so a failed
    /// rewrite defines nothing.
    pub fn set_locals_signature(&mut self, blob: &[u8]) {
        self.new_locals = Some(blob.to_vec());
    }

    /// Tells the pipeline that the edited body's stack was analysed (exact max stack
    /// set) with this module's resolver, so it need not analyse it again. The clauses
    /// are still checked.
    pub(crate) fn stack_verified(&mut self) {
        self.stack_verified = true;
    }

    /// What later edits may change and a rollback restores: the pending LocalVarSig
    /// and whether the stack was verified.
    pub(crate) fn checkpoint(&self) -> (Option<Vec<u8>>, bool) {
        (self.new_locals.clone(), self.stack_verified)
    }

    /// Back to a [`MethodRewrite::checkpoint`].
    pub(crate) fn restore(&mut self, (locals, verified): (Option<Vec<u8>>, bool)) {
        self.new_locals = locals;
        self.stack_verified = verified;
    }

    /// Forgets that the stack was verified: a further edit follows.
    pub(crate) fn unverified(&mut self) {
        self.stack_verified = false;
    }
}

/// The phases [`JitRewriter::timings`](super::JitRewriter::timings) measures, by name.
pub const PHASES: [&str; 8] = [
    "locate (GetFunctionInfo, module state)",
    "GetILFunctionBody",
    "decode",
    "edit",
    "verify (max stack, clauses)",
    "encode, IL map",
    "IMethodMalloc + SetILFunctionBody",
    "SetILInstrumentedCodeMap",
];

/// Nanoseconds spent in each of [`PHASES`].
pub(crate) type Timings = [AtomicU64; PHASES.len()];

/// Adds the time since the last lap to a phase's counter, when timing is on.
pub(crate) struct Clock<'a> {
    timings: Option<&'a Timings>,
    last: Option<std::time::Instant>,
}

impl Clock<'_> {
    pub(crate) fn start(timings: Option<&Timings>) -> Clock<'_> {
        Clock {
            timings,
            last: timings.map(|_| std::time::Instant::now()),
        }
    }

    pub(crate) fn lap(&mut self, phase: usize) {
        if let (Some(t), Some(last)) = (self.timings, self.last) {
            let now = std::time::Instant::now();
            t[phase].fetch_add((now - last).as_nanos() as u64, Ordering::Relaxed);
            self.last = Some(now);
        }
    }
}

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

/// Rewrites MethodDef `token` of `module`, compiled as `function`, with `edit`, through
/// `delivery`: the whole pipeline, every failure typed with its phase, panics caught.
/// Nothing is handed over before the edited body has been verified, so any refusal or
/// failure before [`Phase::HandOver`] keeps the method's IL as it was. A method is
/// claimed first (see [`super::states`]): a thread that finds it being rewritten waits,
/// and a method rewritten already is [`RewriteOutcome::AlreadyRewritten`].
///
/// The IL is what the delivery reads (the runtime's current IL at first JIT; a
/// delivery for a later rewrite reads the pristine IL the module kept). `mode` says
/// whether the method is claimed, whether an unchanged body is handed over, and whether
/// the IL read is kept ([`Mode`]).
pub(crate) fn run<M, D, F>(
    delivery: &D,
    module: &ModuleState<M>,
    function: FunctionID,
    token: mdToken,
    mode: Mode,
    clock: &mut Clock<'_>,
    edit: F,
) -> RewriteOutcome
where
    M: MetadataSource,
    D: Delivery<M> + ?Sized,
    F: FnOnce(&mut MethodBody, &mut MethodRewrite<'_, M>) -> crate::Result<bool>,
{
    match catch_unwind(AssertUnwindSafe(|| {
        run_phases(delivery, module, function, token, mode, clock, edit)
    })) {
        Ok(outcome) => outcome,
        Err(payload) => {
            let what = log::panic_message(&*payload).to_string();
            // Dropping the payload could panic again: leak it rather than unwind.
            if let Err(again) = catch_unwind(AssertUnwindSafe(move || drop(payload))) {
                core::mem::forget(again);
            }
            // The scratch buffers may be half-way through an edit: start afresh.
            let _ = SCRATCH.try_with(|s| s.try_borrow_mut().map(|mut s| *s = Scratch::default()));
            RewriteOutcome::Failed(Failure::new(Phase::Edit, FailureCause::Panic(what)))
        }
    }
}

fn run_phases<M, D, F>(
    delivery: &D,
    module: &ModuleState<M>,
    function: FunctionID,
    token: mdToken,
    mode: Mode,
    clock: &mut Clock<'_>,
    edit: F,
) -> RewriteOutcome
where
    M: MetadataSource,
    D: Delivery<M> + ?Sized,
    F: FnOnce(&mut MethodBody, &mut MethodRewrite<'_, M>) -> crate::Result<bool>,
{
    let fail = |phase, cause: FailureCause| RewriteOutcome::Failed(Failure { phase, cause });
    // Claimed before anything else: two threads compiling instantiations of one method
    // at once must not both rewrite it (the second would get the first's IL), and the
    // second must not return before the first handed its body over (its compilation
    // would take the original IL).
    let claim = match mode {
        Mode::ReJit => None,
        Mode::FirstJit { .. } => match module.states.claim(row(token)) {
            Some(Claim::Won(claim)) => Some(claim),
            Some(Claim::Rewritten) => return RewriteOutcome::AlreadyRewritten,
            Some(Claim::TimedOut) => {
                return fail(Phase::Locate, FailureCause::Busy(WAIT_LIMIT.as_secs()));
            }
            None => return fail(Phase::Locate, FailureCause::NoRow(token)),
        },
    };
    SCRATCH.with(|scratch| {
        let Ok(mut scratch) = scratch.try_borrow_mut() else {
            return fail(Phase::Locate, FailureCause::Reentered);
        };
        let s = &mut *scratch;
        s.il.clear();
        clock.lap(0);
        if let Err(e) = delivery.read_il(module, token, &mut s.il) {
            return fail(Phase::Read, e.into());
        }
        clock.lap(1);
        if let Err(e) = s.decoder.decode_into(&s.il, &mut s.body) {
            return fail(Phase::Decode, e.into());
        }
        clock.lap(2);
        let mut method = MethodRewrite {
            function,
            token,
            module,
            new_locals: None,
            stack_verified: false,
        };
        match edit(&mut s.body, &mut method) {
            Ok(true) => {}
            Ok(false) if mode == Mode::ReJit => {
                // The version gets the IL read, as it is.
                return match delivery.set_body(module, token, &s.il) {
                    Ok(()) => RewriteOutcome::Unchanged,
                    Err(e) => fail(Phase::HandOver, e.into()),
                };
            }
            Ok(false) => return RewriteOutcome::Unchanged,
            Err(e @ (crate::Error::Unsupported { .. } | crate::Error::TailCallNotKept { .. })) => {
                return RewriteOutcome::Refused(e);
            }
            // A limit (more locals than a method can have, a type too deep for a
            // signature tree) is valid IL the crate declines, not a failure.
            Err(e) if e.is_limit() => return RewriteOutcome::Refused(e),
            Err(e) => return fail(Phase::Edit, e.into()),
        }
        clock.lap(3);
        // Verified before anything goes to the runtime. An unedited body is its original
        // bytes again and needs no analysis.
        let edited = !s.body.instrs.is_unedited() || method.new_locals.is_some();
        if edited && !method.stack_verified {
            let returns = match method.signature().and_then(summarize_method_sig) {
                Ok(sig) => ReturnKind::value_if(sig.returns_value),
                Err(e) => return fail(Phase::Verify, e.into()),
            };
            if let Err(e) = s.analyzer.apply_max_stack(
                &mut s.body,
                module.resolver(),
                MaxStackMode::Compute,
                returns,
            ) {
                return fail(Phase::Verify, e.into());
            }
        }
        if edited && let Err(e) = s.body.validate_clauses() {
            return fail(Phase::Verify, e.into());
        }
        if edited && let Err(e) = tail_calls_return(&s.body) {
            return fail(Phase::Verify, e.into());
        }
        clock.lap(4);
        if let Some(blob) = &method.new_locals {
            match delivery.define_locals(module, blob) {
                Ok(t) => s.body.local_var_sig = t,
                Err(e) => return fail(Phase::Locals, e.into()),
            }
        }
        s.out.clear();
        if let Err(e) = s.encoder.encode(&s.body, &mut s.out) {
            return fail(Phase::Encode, e.into());
        }
        // An unedited body must come out as the bytes it came in as: if it does not,
        // something is wrong, and nothing is handed over.
        if !edited && s.il.get(..s.out.len()) != Some(&s.out[..]) {
            return fail(Phase::Encode, FailureCause::NotRoundTrip);
        }
        // An unedited body maps every offset to itself: the runtime needs no map.
        let map = edited.then(|| IlMap::from_offsets(&s.body, s.encoder.encoded_offsets()));
        clock.lap(5);
        if let Err(e) = delivery.set_body(module, token, &s.out) {
            return fail(Phase::HandOver, e.into());
        }
        // The runtime has the new body: every compilation of the method from now on
        // compiles it, whatever happens next. Its original IL stays reachable.
        if mode
            == (Mode::FirstJit {
                keep_pristine: true,
            })
        {
            module.keep_pristine_il(token, &s.il);
        }
        if let Some(claim) = claim {
            claim.handed_over();
        }
        clock.lap(6);
        let map_refused = map.and_then(|map| delivery.set_map(function, &map).err());
        clock.lap(7);
        RewriteOutcome::Rewritten {
            bytes: s.out.len(),
            map_refused,
        }
    })
}

/// Checks that every `tail.` prefix of `body` is followed by a call (`call`, `callvirt`
/// or `calli`, other prefixes allowed between) and then at once by `ret`, as the runtime
/// requires: an edit that inserts code between a tail call and its `ret` (code "before
/// every `ret`") makes IL the JIT rejects with `InvalidProgramException` at every call.
///
/// # Errors
/// [`crate::Error::TailCallNotKept`] with [`crate::TailCallRefusal::NotCallThenRet`].
pub(crate) fn tail_calls_return(body: &MethodBody) -> crate::Result<()> {
    use crate::OpCode;
    let broken = || crate::Error::TailCallNotKept {
        offset: None,
        reason: crate::TailCallRefusal::NotCallThenRet,
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
    use crate::{Instruction, OpCode};

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
                    Err(crate::Error::TailCallNotKept {
                        reason: crate::TailCallRefusal::NotCallThenRet,
                        ..
                    })
                ),
                "{broken:?}"
            );
        }
    }
}

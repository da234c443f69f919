//! The ReJIT state machine ([`ReJitMachine`]): per method, what the profiler wants it to run
//! and where the runtime stands with it, and the batches of runtime calls that bring the
//! two together. Pure: no FFI, no thread, no clock. The driver feeds it the profiler's
//! requests and the runtime's callbacks, in whatever order the runtime delivers them,
//! and makes the calls of each [`ReJitBatch`] it takes.
//!
//! What it knows of the runtime (CoreCLR 3.1, read in its `rejit.cpp` and measured):
//!
//! * `RequestReJIT` makes a new IL version of the method active, or reuses the active
//!   one when the runtime has not asked for its IL yet; the runtime asks
//!   (`GetReJITParameters`) at the method's next call, on that thread, once per method
//!   (not per instantiation), then compiles each instantiation
//!   (`ReJITCompilationStarted`/`Finished`, with the version's ReJITID). A method never
//!   called yet (a pre-ReJIT) is asked for at its first call.
//! * The IL handed over in `GetReJITParameters` is what the version runs: the machine
//!   answers with what is wanted *then*, so a request whose target changed before the
//!   runtime asked needs no second request.
//! * `RequestRevert` makes the method's default IL active again, at its next call, with
//!   no callback: the default IL is the file's, or what a first-JIT rewrite set. So a
//!   revert restores "the file's IL" only for a method the first JIT did not rewrite;
//!   for the others the file's IL is reached by a ReJIT with it ([`IlTarget::File`]).
//! * Errors come only through `ReJITError`: at request time on the requesting thread
//!   (FunctionID 0), at compile time on the compiling thread; a revert's failure may
//!   also come back in its status array.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::Hash;

use smallvec::SmallVec;

use crate::clr::sys::{FunctionID, HResult, ModuleID, ReJITID, mdMethodDef};

/// A method as ReJIT names it: its module and MethodDef token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MethodKey {
    /// The module (one per load: an assembly loaded again has a new one).
    pub module: ModuleID,
    /// The MethodDef token.
    pub token: mdMethodDef,
}

/// The IL a method runs, or should run.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum IlTarget<P> {
    /// The file's own IL, untouched.
    File,
    /// The IL the rewrite pipeline builds from the file's IL following plan `P`. Two
    /// targets with equal plans are the same IL.
    Plan(P),
}

/// Where a [`ReJitFailure`] happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FailedAt {
    /// The runtime refused a `RequestReJIT` (bad token, dynamic module, module
    /// unloading).
    Request,
    /// The runtime refused a `RequestRevert`.
    Revert,
    /// The IL of the wanted target could not be built or verified in
    /// `GetReJITParameters`: the IL the method ran before was handed over instead.
    Rewrite,
    /// The runtime failed to compile the new version.
    Compile,
}

/// A failure the runtime (or the rewrite) reported for a method.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ReJitFailure {
    /// The runtime's `HRESULT` (or the rewrite's, for [`FailedAt::Rewrite`]).
    pub status: HResult,
    /// When.
    pub at: FailedAt,
    /// The instantiation, when the runtime named one (0 otherwise).
    pub function: FunctionID,
}

/// Where the runtime stands with one method.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReJitStage<P> {
    /// It runs its default IL; nothing was asked of the runtime for it.
    Original,
    /// `RequestReJIT` was made; the runtime has not asked for the IL yet (a method not
    /// called since, including one never called: a pre-ReJIT).
    Requested,
    /// The runtime asked for the IL and was given this target's; its compilation has not
    /// finished yet.
    ParametersGiven(IlTarget<P>),
    /// A ReJIT version with this target's IL is compiled and runs, as `rejit`, for these
    /// instantiations (more appear as they are compiled).
    Active {
        /// The IL it runs.
        target: IlTarget<P>,
        /// The version's ReJITID.
        rejit: ReJITID,
        /// The instantiations compiled so far.
        functions: SmallVec<[FunctionID; 2]>,
    },
    /// `RequestRevert` is being made.
    RevertRequested,
    /// `RequestRevert` returned: it runs its default IL again.
    Reverted,
    /// The runtime refused a request or failed to compile (see [`ReJitFailure`]); nothing is
    /// asked again until the profiler asks for the method again.
    Failed(ReJitFailure),
}

/// A runtime call a [`ReJitBatch`] holds for a method.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReJitCall {
    /// `RequestReJIT` (or `RequestReJITWithInliners`).
    ReJit,
    /// `RequestRevert`.
    Revert,
}

/// What happens to a method's wanted IL when its assembly is loaded again (a new
/// ModuleID for the same assembly, e.g. in another `AssemblyLoadContext`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReloadPolicy {
    /// What was last wanted for the assembly's methods is wanted for the new module too,
    /// and requested for it (the default).
    #[default]
    Rerequest,
    /// The new module starts with nothing wanted.
    Leave,
}

/// The runtime calls to make now: each method at most once, in the order they were
/// asked for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReJitBatch {
    /// Methods to `RequestReJIT`.
    pub rejit: Vec<MethodKey>,
    /// Methods to `RequestRevert`.
    pub revert: Vec<MethodKey>,
}

impl ReJitBatch {
    /// Whether there is nothing to call.
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.rejit.is_empty() && self.revert.is_empty()
    }
}

/// What the runtime is to be given in `GetReJITParameters` ([`ReJitMachine::parameters`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReJitParameters<P> {
    /// The IL wanted now.
    pub target: IlTarget<P>,
    /// The IL the method ran before: what to hand over instead when `target`'s cannot
    /// be built ([`ReJitMachine::rewrite_failed`]).
    pub fallback: IlTarget<P>,
}

/// One method's record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MethodRecord<P> {
    desired: IlTarget<P>,
    default: IlTarget<P>,
    stage: ReJitStage<P>,
    queued: Option<ReJitCall>,
    /// The IL given to the latest versions whose compilation started, by ReJITID
    /// (the last few: older versions no longer matter).
    bound: SmallVec<[(ReJITID, IlTarget<P>); 2]>,
    rewrite_failure: Option<ReJitFailure>,
    /// The IL it ran when its latest ReJIT was requested: what a version whose wanted
    /// IL cannot be built gets instead.
    before: IlTarget<P>,
}

impl<P: Clone + PartialEq> MethodRecord<P> {
    fn new(desired: IlTarget<P>, default: IlTarget<P>) -> MethodRecord<P> {
        MethodRecord {
            before: default.clone(),
            desired,
            default,
            stage: ReJitStage::Original,
            queued: None,
            bound: SmallVec::new(),
            rewrite_failure: None,
        }
    }

    /// The IL the profiler wants the method to run.
    pub fn desired(&self) -> &IlTarget<P> {
        &self.desired
    }

    /// The method's default IL: what it runs with no ReJIT version active (the file's,
    /// or what a first-JIT rewrite set).
    pub fn default_il(&self) -> &IlTarget<P> {
        &self.default
    }

    /// Where the runtime stands.
    pub fn stage(&self) -> &ReJitStage<P> {
        &self.stage
    }

    /// The last failure: the stage's, or a rewrite's (the method then runs the IL it ran
    /// before).
    pub fn failure(&self) -> Option<ReJitFailure> {
        match self.stage {
            ReJitStage::Failed(f) => Some(f),
            _ => self.rewrite_failure,
        }
    }

    /// The IL new calls run, when the runtime is settled: its default IL when original
    /// or reverted, the active version's otherwise; `None` while a call or compilation
    /// is under way, and after a failure.
    pub fn running(&self) -> Option<&IlTarget<P>> {
        match &self.stage {
            ReJitStage::Original | ReJitStage::Reverted => Some(&self.default),
            ReJitStage::Active { target, .. } => Some(target),
            _ => None,
        }
    }

    /// Whether the method runs what is wanted, with nothing left to do.
    #[cfg(test)]
    pub fn settled(&self) -> bool {
        self.queued.is_none() && self.running() == Some(&self.desired)
    }

    /// The call that brings the runtime from where it stands to `desired`, if one is
    /// needed. `retry` asks again after a failure; `reverts` allows `RequestRevert` where
    /// it restores what is wanted (else a ReJIT with the default IL is asked for).
    fn needed(&self, retry: bool, reverts: bool) -> Option<ReJitCall> {
        let revert = reverts && self.desired == self.default;
        let towards = |target: &IlTarget<P>| match (*target == self.desired, revert) {
            (true, _) => None,
            (false, true) => Some(ReJitCall::Revert),
            (false, false) => Some(ReJitCall::ReJit),
        };
        match &self.stage {
            ReJitStage::Original | ReJitStage::Reverted => {
                (self.desired != self.default).then_some(ReJitCall::ReJit)
            }
            // The runtime will ask for the IL, and be given what is wanted then.
            ReJitStage::Requested => revert.then_some(ReJitCall::Revert),
            ReJitStage::ParametersGiven(target) | ReJitStage::Active { target, .. } => {
                towards(target)
            }
            ReJitStage::RevertRequested => (!revert).then_some(ReJitCall::ReJit),
            ReJitStage::Failed(_) if retry => Some(if revert {
                ReJitCall::Revert
            } else {
                ReJitCall::ReJit
            }),
            ReJitStage::Failed(_) => None,
        }
    }

    /// The IL it ran before the version being asked for.
    fn previous(&self) -> &IlTarget<P> {
        match &self.stage {
            ReJitStage::ParametersGiven(target) | ReJitStage::Active { target, .. } => target,
            ReJitStage::Requested => &self.before,
            _ => &self.default,
        }
    }
}

/// The ReJIT state machine: what is wanted of each method, where the runtime stands,
/// and the calls to make. `P` is a plan (what the pipeline needs to build a method's IL),
/// compared to tell whether two targets are the same IL; `A` names an assembly, to find
/// the modules of an assembly loaded again.
///
/// Guarantees, whatever the order of the inputs the runtime may deliver:
/// * a [`ReJitBatch`] never names a method twice, and a method is in a batch only when the
///   runtime must be told something new;
/// * `GetReJITParameters` is answered with the IL wanted at that moment, for every
///   method the runtime asks about, requested or not (callers re-JIT-compiled because
///   they had inlined a method get their own wanted IL);
/// * once every batch is made and every method called, each method runs what is wanted
///   ([`MethodRecord::settled`]) or has a [`ReJitFailure`].
///
/// Records are kept for the methods the profiler asked about and those the runtime
/// reported on, and dropped with their module ([`ReJitMachine::module_unloaded`]).
#[derive(Debug, Clone)]
pub struct ReJitMachine<P, A> {
    records: BTreeMap<MethodKey, MethodRecord<P>>,
    /// Methods whose `queued` call is waiting for the next batch (a method may appear
    /// more than once; the batch takes it once).
    pending: Vec<MethodKey>,
    /// The assembly of each loaded module.
    assemblies: HashMap<ModuleID, A>,
    /// What was last wanted, per assembly and MethodDef, for the assembly's later loads.
    templates: HashMap<A, BTreeMap<mdMethodDef, IlTarget<P>>>,
    policy: ReloadPolicy,
    /// Whether `RequestRevert` is used where it restores what is wanted.
    reverts: bool,
    /// The loaded modules whose compiled code the runtime never replaces
    /// ([`ReJitMachine::module_loaded_fixed`]).
    fixed: HashSet<ModuleID>,
}

impl<P: Clone + PartialEq, A: Clone + Eq + Hash> Default for ReJitMachine<P, A> {
    fn default() -> Self {
        ReJitMachine::new(ReloadPolicy::default())
    }
}

impl<P: Clone + PartialEq, A: Clone + Eq + Hash> ReJitMachine<P, A> {
    /// An empty machine with `policy` for assemblies loaded again.
    pub fn new(policy: ReloadPolicy) -> ReJitMachine<P, A> {
        ReJitMachine {
            records: BTreeMap::new(),
            pending: Vec::new(),
            assemblies: HashMap::new(),
            templates: HashMap::new(),
            policy,
            reverts: true,
            fixed: HashSet::new(),
        }
    }

    /// The same machine, asking for a ReJIT with the method's default IL where it would
    /// `RequestRevert`. A revert reactivates the method's first native code, and that
    /// code keeps the copies of the callees it inlined as they were then: after a
    /// callee changed (and its inliners were recompiled), reverting a caller would bring
    /// the old callee back inside it. Without reverts every change is a new version,
    /// compiled with the callees' current IL.
    pub fn without_reverts(mut self) -> ReJitMachine<P, A> {
        self.reverts = false;
        self
    }

    /// The record of `key`, if the machine has one.
    pub fn get(&self, key: MethodKey) -> Option<&MethodRecord<P>> {
        self.records.get(&key)
    }

    /// Every record, by module and token.
    pub fn records(&self) -> impl Iterator<Item = (MethodKey, &MethodRecord<P>)> {
        self.records.iter().map(|(k, r)| (*k, r))
    }

    /// How many methods it keeps a record of.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether it keeps no record (nothing was asked: the first-JIT path need not ask
    /// it anything).
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Whether a batch may be waiting.
    pub fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// The profiler wants `key` to run `target` from its next call on. `default` is the
    /// method's default IL if the machine has no record of it yet (the file's, unless a
    /// first-JIT rewrite gave it another). Queues the call needed, if any; a method that
    /// failed is tried again.
    pub fn want(&mut self, key: MethodKey, target: IlTarget<P>, default: IlTarget<P>) {
        if let Some(assembly) = self.assemblies.get(&key.module) {
            self.templates
                .entry(assembly.clone())
                .or_default()
                .insert(key.token, target.clone());
        }
        let record = self
            .records
            .entry(key)
            .or_insert_with(|| MethodRecord::new(target.clone(), default));
        record.desired = target;
        let call = record.needed(true, self.reverts);
        if call.is_none() && record.running() == Some(&record.desired) {
            // What is wanted runs: an earlier version's build failure is over.
            record.rewrite_failure = None;
        }
        self.queue(key, call);
    }

    /// What `key`'s wanted IL builds to changed (something its plan depends on became
    /// available): a new version is asked for, built anew from what is wanted, even
    /// where that already runs. A method with no record gets `target` wanted, `default`
    /// its default IL (as [`ReJitMachine::want`]). Nothing is queued for a method whose
    /// request the runtime has yet to ask about (it gets a fresh build then), nor for a
    /// module whose code is never replaced.
    pub fn renew(&mut self, key: MethodKey, target: IlTarget<P>, default: IlTarget<P>) {
        let record = self
            .records
            .entry(key)
            .or_insert_with(|| MethodRecord::new(target, default));
        if record.stage == ReJitStage::Requested {
            return;
        }
        if self.fixed.contains(&key.module) {
            return;
        }
        self.queue(key, Some(ReJitCall::ReJit));
    }

    fn queue(&mut self, key: MethodKey, call: Option<ReJitCall>) {
        let Some(record) = self.records.get_mut(&key) else {
            return;
        };
        if self.fixed.contains(&key.module) {
            // No call can change what it runs: its default IL. A call that would be
            // needed is the failure the runtime would report for it.
            record.queued = None;
            if record.desired == record.default {
                record.stage = ReJitStage::Original;
            } else if let Some(call) = call {
                record.stage = ReJitStage::Failed(ReJitFailure {
                    status: HResult::CORPROF_E_FUNCTION_IS_COLLECTIBLE,
                    at: match call {
                        ReJitCall::ReJit => FailedAt::Request,
                        ReJitCall::Revert => FailedAt::Revert,
                    },
                    function: 0,
                });
            }
            return;
        }
        if record.queued.is_none() && call.is_some() {
            self.pending.push(key);
        }
        record.queued = call;
    }

    /// The IL a first JIT of `key` should compile: what is wanted, if the machine has a
    /// record of it (`None`: the profiler's usual first-JIT rewrite).
    pub fn first_jit_target(&self, key: MethodKey) -> Option<IlTarget<P>> {
        self.records.get(&key).map(|r| r.desired.clone())
    }

    /// A first JIT of `key` handed the runtime `given`'s IL (what
    /// [`first_jit_target`](ReJitMachine::first_jit_target) gave, or the usual first-JIT
    /// rewrite's when it gave `None`): that is its default IL from now on.
    pub fn first_jit_done(&mut self, key: MethodKey, given: IlTarget<P>) {
        let Some(record) = self.records.get_mut(&key) else {
            return;
        };
        record.default = given;
        if self.fixed.contains(&key.module) {
            // What it runs from now on, and no call can change it.
            record.stage = ReJitStage::Original;
        }
        // A request already made will be answered with what is wanted; only a method
        // the runtime has settled may need a call now (or none any more).
        let call = match record.stage {
            ReJitStage::Original | ReJitStage::Reverted => record.needed(false, self.reverts),
            _ => record.queued,
        };
        self.queue(key, call);
    }

    /// The calls to make now, each method once; their records move to
    /// [`ReJitStage::Requested`] and [`ReJitStage::RevertRequested`]. Make the ReJIT requests, then
    /// the reverts, feeding the runtime's answers back
    /// ([`ReJitMachine::rejit_error`], [`ReJitMachine::revert_done`]).
    pub fn take_batch(&mut self) -> ReJitBatch {
        let mut batch = ReJitBatch::default();
        for key in core::mem::take(&mut self.pending) {
            let Some(record) = self.records.get_mut(&key) else {
                continue;
            };
            match record.queued.take() {
                Some(ReJitCall::ReJit) => {
                    // What it runs now, for a version that cannot be built (a request
                    // made again before the runtime asked keeps the earlier one).
                    let running = match &record.stage {
                        ReJitStage::ParametersGiven(target) | ReJitStage::Active { target, .. } => {
                            Some(target.clone())
                        }
                        ReJitStage::Original | ReJitStage::Reverted => Some(record.default.clone()),
                        _ => None,
                    };
                    if let Some(running) = running {
                        record.before = running;
                    }
                    record.stage = ReJitStage::Requested;
                    record.rewrite_failure = None;
                    batch.rejit.push(key);
                }
                Some(ReJitCall::Revert) => {
                    record.stage = ReJitStage::RevertRequested;
                    record.rewrite_failure = None;
                    batch.revert.push(key);
                }
                None => {}
            }
        }
        batch
    }

    /// `RequestRevert` answered `status` for `key` (its status array, or the call's
    /// own answer for each method when it failed as a whole).
    pub fn revert_done(&mut self, key: MethodKey, status: HResult) {
        if let Some(record) = self.records.get_mut(&key)
            && record.stage == ReJitStage::RevertRequested
        {
            record.stage = if status.is_ok() {
                ReJitStage::Reverted
            } else {
                ReJitStage::Failed(ReJitFailure {
                    status,
                    at: FailedAt::Revert,
                    function: 0,
                })
            };
        }
    }

    /// `RequestReJIT` failed as a whole (`status`, e.g. out of memory) for the methods of
    /// the batch: they failed at request.
    pub fn request_failed(&mut self, keys: &[MethodKey], status: HResult) {
        for key in keys {
            if let Some(record) = self.records.get_mut(key)
                && record.stage == ReJitStage::Requested
            {
                record.stage = ReJitStage::Failed(ReJitFailure {
                    status,
                    at: FailedAt::Request,
                    function: 0,
                });
            }
        }
    }

    /// `GetReJITParameters` for `key`: the IL to hand over. `unknown` is the target of a
    /// method the machine has no record of (a caller re-JIT-compiled because it inlined
    /// a requested method): its current IL, which it keeps.
    pub fn parameters(&mut self, key: MethodKey, unknown: IlTarget<P>) -> ReJitParameters<P> {
        let record = self
            .records
            .entry(key)
            .or_insert_with(|| MethodRecord::new(unknown.clone(), unknown));
        let parameters = ReJitParameters {
            target: record.desired.clone(),
            fallback: record.previous().clone(),
        };
        record.stage = ReJitStage::ParametersGiven(parameters.target.clone());
        record.rewrite_failure = None;
        if record.queued == Some(ReJitCall::ReJit) {
            // The version being asked about gets the wanted IL: no further request.
            record.queued = None;
        }
        parameters
    }

    /// The IL of the target [`ReJitMachine::parameters`] gave for `key` could not be built
    /// (`status`): `fallback`'s was handed over instead.
    pub fn rewrite_failed(&mut self, key: MethodKey, fallback: IlTarget<P>, status: HResult) {
        if let Some(record) = self.records.get_mut(&key) {
            record.stage = ReJitStage::ParametersGiven(fallback);
            record.rewrite_failure = Some(ReJitFailure {
                status,
                at: FailedAt::Rewrite,
                function: 0,
            });
        }
    }

    /// `ReJITCompilationStarted` for instantiation `function` of `key`, version
    /// `rejit`. `given` is the target [`ReJitMachine::parameters`] (or
    /// [`ReJitMachine::rewrite_failed`]) gave on this thread just before, if any: the
    /// runtime asks for a version's IL on the thread that then compiles its first
    /// instantiation, so that is how a version learns its IL (parameters carry no
    /// ReJITID).
    pub fn compilation_started(
        &mut self,
        key: MethodKey,
        rejit: ReJITID,
        given: Option<IlTarget<P>>,
    ) {
        let (Some(record), Some(given)) = (self.records.get_mut(&key), given) else {
            return;
        };
        if record.bound.iter().all(|(r, _)| *r != rejit) {
            if record.bound.len() == 4 {
                record.bound.remove(0);
            }
            record.bound.push((rejit, given));
        }
    }

    /// `ReJITCompilationFinished` for instantiation `function` of `key`, version
    /// `rejit`, with `status`. A version newer than every other whose IL is known
    /// becomes active; a late report of an older one changes nothing.
    pub fn compilation_finished(
        &mut self,
        key: MethodKey,
        function: FunctionID,
        rejit: ReJITID,
        status: HResult,
    ) {
        let Some(record) = self.records.get_mut(&key) else {
            return;
        };
        if !status.is_ok() {
            record.stage = ReJitStage::Failed(ReJitFailure {
                status,
                at: FailedAt::Compile,
                function,
            });
            return;
        }
        if let ReJitStage::Active {
            rejit: active,
            functions,
            ..
        } = &mut record.stage
            && *active == rejit
        {
            // Another instantiation, or a tier-up, of the active version.
            if !functions.contains(&function) {
                functions.push(function);
            }
            return;
        }
        let newest = record.bound.iter().map(|(r, _)| *r).max();
        let Some(target) = record
            .bound
            .iter()
            .find(|(r, _)| *r == rejit)
            .map(|(_, t)| t.clone())
        else {
            return; // a version whose IL it never gave
        };
        if newest != Some(rejit) || matches!(record.stage, ReJitStage::Requested) {
            // Replaced already: a newer version's IL was given, or requested.
            return;
        }
        if matches!(
            record.stage,
            ReJitStage::ParametersGiven(_) | ReJitStage::Active { .. }
        ) {
            record.stage = ReJitStage::Active {
                target,
                rejit,
                functions: SmallVec::from_slice(&[function]),
            };
        }
    }

    /// `ReJITError` for `key`: at request time (during the batch's call, `function` 0)
    /// or at compile time.
    pub fn rejit_error(&mut self, key: MethodKey, function: FunctionID, status: HResult) {
        let Some(record) = self.records.get_mut(&key) else {
            return;
        };
        let at = match record.stage {
            ReJitStage::RevertRequested => FailedAt::Revert,
            ReJitStage::ParametersGiven(_) | ReJitStage::Active { .. } => FailedAt::Compile,
            _ if function != 0 => FailedAt::Compile,
            _ => FailedAt::Request,
        };
        record.stage = ReJitStage::Failed(ReJitFailure {
            status,
            at,
            function,
        });
    }

    /// Module `module` of `assembly` finished loading. Under
    /// [`ReloadPolicy::Rerequest`], what was last wanted for the assembly's methods is
    /// wanted for this module too, and queued.
    pub fn module_loaded(&mut self, module: ModuleID, assembly: A) {
        self.load(module, assembly, true);
    }

    /// [`ReJitMachine::module_loaded`] for a module none of whose methods has code
    /// compiled ahead of time (not ReadyToRun): every method of it is JIT-compiled at its
    /// first call, which compiles what is wanted
    /// ([`ReJitMachine::first_jit_target`]), so what is wanted is recorded and nothing
    /// is requested. (A request made while the first JIT compiles the wish gains
    /// nothing, and CoreCLR 3.1 was seen to livelock in the prestub with tiering off when
    /// the two met, once in about twenty runs of 3,000 reloads.)
    pub fn module_loaded_jit_only(&mut self, module: ModuleID, assembly: A) {
        self.load(module, assembly, false);
    }

    /// [`ReJitMachine::module_loaded_jit_only`] for a module whose compiled code the
    /// runtime never replaces: a module of a collectible assembly, whose methods
    /// CoreCLR does not version (`CodeVersionManager::IsMethodSupported`; a request for
    /// one is accepted and never acted on, 3.1.23 and 8.0.4). No call is ever made for
    /// its methods: each runs what its first JIT compiled (what was wanted then, when
    /// that is IL alone), and a method wanted to run anything else is
    /// [`ReJitStage::Failed`] with `CORPROF_E_FUNCTION_IS_COLLECTIBLE`, until its first
    /// JIT if it has not had it (then it runs what that gave, and fails only if that
    /// is not what is wanted, e.g. for code-generation flags).
    pub fn module_loaded_fixed(&mut self, module: ModuleID, assembly: A) {
        self.fixed.insert(module);
        self.load(module, assembly, false);
    }

    fn load(&mut self, module: ModuleID, assembly: A, request: bool) {
        self.assemblies.insert(module, assembly.clone());
        if self.policy == ReloadPolicy::Leave {
            return;
        }
        let Some(template) = self.templates.get(&assembly) else {
            return;
        };
        let wanted: Vec<(mdMethodDef, IlTarget<P>)> =
            template.iter().map(|(t, p)| (*t, p.clone())).collect();
        for (token, target) in wanted {
            let key = MethodKey { module, token };
            // A fresh module: nothing compiled yet, so its default IL is the file's.
            let record = self
                .records
                .entry(key)
                .or_insert_with(|| MethodRecord::new(target.clone(), IlTarget::File));
            record.desired = target;
            if request {
                let call = record.needed(true, self.reverts);
                self.queue(key, call);
            }
        }
    }

    /// Module `module` is unloading: its records go (the runtime will never call back
    /// about its methods again). What was wanted stays in the assembly's template.
    pub fn module_unloaded(&mut self, module: ModuleID) {
        let keys: Vec<MethodKey> = self
            .records
            .range(
                MethodKey { module, token: 0 }..=MethodKey {
                    module,
                    token: u32::MAX,
                },
            )
            .map(|(k, _)| *k)
            .collect();
        for key in keys {
            self.records.remove(&key);
        }
        self.pending.retain(|k| k.module != module);
        self.assemblies.remove(&module);
        self.fixed.remove(&module);
    }
}

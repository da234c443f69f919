//! ReJIT in the manager: the controller that keeps the [`ReJitMachine`] and answers the
//! runtime's ReJIT callbacks with the manager's own pipeline, and the driver thread that
//! makes the machine's runtime calls.
//!
//! One pipeline for both: a method's first JIT and each of its ReJIT versions run the
//! same instrumentation methods on the method's pristine IL, so a version never stacks
//! on an earlier rewrite. A method wanted before its first JIT gets its wanted IL at that
//! first JIT (no call runs without it); the ReJIT the machine also requests then hands
//! the runtime the same IL.

use std::cell::Cell;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use smallvec::SmallVec;

use super::change::ChangeError;
use super::hosting::{Hosting, Wish};
use super::plan::{InliningCallers, Plan, describe};
use crate::clr::log;
use crate::clr::rejit::{FailedAt, IlTarget, MethodKey, ReJitMachine, ReJitStage};
use crate::clr::rewrite::RewriteOutcome;
use crate::clr::rewrite::edits::MethodPlan;
use crate::clr::rewrite::engine::Target;
use crate::clr::rewrite::module::ModuleState;
use crate::clr::runtime::guard::is_shutting_down;
use crate::clr::runtime::{ClrError, CodegenFlags, FunctionControl, InlinerIl, RuntimeVersion};
use crate::clr::sys::{FunctionID, HResult, ModuleID, ReJITID, mdMethodDef};

/// Counts of the ReJIT work, for reports and tests.
#[derive(Debug, Default)]
pub struct ReJitCounts {
    /// Methods named in `RequestReJIT` / `RequestReJITWithInliners` calls.
    pub requested: AtomicU64,
    /// Methods named in `RequestRevert` calls.
    pub reverted: AtomicU64,
    /// `GetReJITParameters` answered.
    pub parameters: AtomicU64,
    /// Nanoseconds spent answering them (building and handing over the IL).
    pub parameters_ns: AtomicU64,
    /// Of those, for methods never requested (callers that had inlined one).
    pub inliners: AtomicU64,
    /// Versions whose wanted IL could not be built: the IL the method ran before was
    /// handed over instead.
    pub fallbacks: AtomicU64,
    /// Versions for which not even that could be built (the runtime then compiles the
    /// method's default IL).
    pub unanswered: AtomicU64,
    /// `ReJITCompilationFinished` callbacks.
    pub compiled: AtomicU64,
    /// `ReJITError` callbacks.
    pub errors: AtomicU64,
    /// First JITs that compiled what the machine wanted rather than the configured IL.
    pub first_jit_wishes: AtomicU64,
    /// Targets requested as their precompiled module loaded.
    pub at_load: AtomicU64,
    /// Methods requested with them because their precompiled code inlined one (from the
    /// image's inlining records).
    pub inliners_at_load: AtomicU64,
    /// Methods an instrumentation method asked to be compiled anew
    /// ([`ModuleLoad::recompile`](super::ModuleLoad::recompile)).
    pub renewed: AtomicU64,
}

/// The driver's signals: how many wakes were asked for and how many were served.
#[derive(Debug, Default)]
struct Signal {
    /// Wakes asked for.
    asked: u64,
    /// The last ask whose batch was made.
    served: u64,
    stop: bool,
    /// The driver returned.
    ended: bool,
}

thread_local! {
    /// The target the last `GetReJITParameters` on this thread handed over: the
    /// runtime compiles a version's first instantiation on the thread it asked for the
    /// version's IL, so `ReJITCompilationStarted` learns the version's IL here.
    static GIVEN: Cell<Option<(MethodKey, IlTarget<Plan>)>> = const { Cell::new(None) };
}

/// How long a request waits for the driver to have made its runtime calls.
const WAIT_FOR_DRIVER: Duration = Duration::from_secs(60);

/// The manager's ReJIT controller: the machine, the driver's signals, and the answers to
/// the runtime's ReJIT callbacks.
pub(crate) struct ReJitController {
    hosting: Arc<Hosting>,
    machine: Mutex<ReJitMachine<Plan, String>>,
    /// The modules loaded now, behind the lock every use of a `ModuleID` outside the
    /// runtime's own callbacks for that module holds (the driver's requests, the
    /// control's lookups; see [`ReJitController::with_modules`]), and which a module's
    /// unload takes first: so no ModuleID reaches the runtime after its module's
    /// `ModuleUnloadStarted` returned (CoreCLR takes a ModuleID as the module's address:
    /// a freed one crashes the process, in `RequestReJITWithInliners` as anywhere).
    modules: Mutex<HashSet<ModuleID>>,
    /// Whether the machine has any record: the first-JIT path asks it nothing until then.
    active: AtomicBool,
    signal: Mutex<Signal>,
    wake: Condvar,
    served: Condvar,
    callers: InliningCallers,
    /// The methods whose last version built had a request's edit that changed nothing,
    /// with that instrumentation method's name.
    unchanged: Mutex<HashMap<MethodKey, String>>,
    /// Whether methods without a `MethodDesc` must be requested without their
    /// inliners (a bug of the runtime in hand: see
    /// [`RuntimeVersion::rejit_with_inliners_needs_a_method_desc`]).
    inliners_need_a_method_desc: bool,
    pub(crate) counts: ReJitCounts,
}

impl ReJitController {
    /// A controller for the runtime `runtime` (`None`: not known, every workaround on).
    pub(crate) fn new(
        hosting: Arc<Hosting>,
        callers: InliningCallers,
        runtime: Option<&RuntimeVersion>,
    ) -> ReJitController {
        ReJitController {
            inliners_need_a_method_desc: runtime
                .is_none_or(RuntimeVersion::rejit_with_inliners_needs_a_method_desc),
            hosting,
            // With callers recompiled, a RequestRevert could bring back a caller's first
            // native code with an old copy of a callee inside (see `without_reverts`).
            machine: Mutex::new(match callers {
                InliningCallers::Recompile => ReJitMachine::default().without_reverts(),
                InliningCallers::Leave => ReJitMachine::default(),
            }),
            active: AtomicBool::new(false),
            modules: Mutex::default(),
            signal: Mutex::default(),
            wake: Condvar::new(),
            served: Condvar::new(),
            callers,
            unchanged: Mutex::default(),
            counts: ReJitCounts::default(),
        }
    }

    /// The instrumentation methods and the rewriter it builds versions with.
    pub(crate) fn hosting(&self) -> &Hosting {
        &self.hosting
    }

    fn machine(&self) -> MutexGuard<'_, ReJitMachine<Plan, String>> {
        self.machine.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn modules(&self) -> MutexGuard<'_, HashSet<ModuleID>> {
        self.modules.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `f` with the set of modules loaded now, which no module leaves until `f`
    /// returns: every `ModuleID` `f` passes to the runtime is one of a loaded module.
    /// `f` must not wait for the driver (which takes the same lock).
    pub(crate) fn with_modules<R>(&self, f: impl FnOnce(&HashSet<ModuleID>) -> R) -> R {
        f(&self.modules())
    }

    fn signal(&self) -> MutexGuard<'_, Signal> {
        self.signal.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Wakes the driver; returns the ask to wait for.
    fn ask(&self) -> u64 {
        let mut signal = self.signal();
        signal.asked += 1;
        self.wake.notify_one();
        signal.asked
    }

    /// Wakes the driver if the machine has calls waiting.
    fn ask_if_pending(&self, machine: &ReJitMachine<Plan, String>) {
        if machine.has_pending() {
            self.ask();
        }
    }

    /// Waits until the driver made the batch of ask `ask` (and everything before).
    ///
    /// # Errors
    /// When it did not within [`WAIT_FOR_DRIVER`], or the driver stopped, or the
    /// runtime is shutting down (the driver makes no more requests then).
    pub(crate) fn wait_served(&self, ask: u64) -> Result<(), ChangeError> {
        let deadline = Instant::now() + WAIT_FOR_DRIVER;
        let mut signal = self.signal();
        while signal.served < ask {
            if signal.stop || is_shutting_down() {
                return Err(ChangeError::ShuttingDown);
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(ChangeError::NotMadeInTime(WAIT_FOR_DRIVER.as_secs()));
            }
            signal = self
                .served
                .wait_timeout(signal, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        Ok(())
    }

    /// The driver: a thread of the profiler (the runtime takes ReJIT requests only from
    /// its own threads or inside callbacks) that makes each batch of the machine's
    /// calls, and feeds the answers back, until [`ReJitController::stop`].
    pub(crate) fn drive(&self) {
        loop {
            let ask = {
                let mut signal = self.signal();
                while !signal.stop && signal.asked == signal.served {
                    signal = self
                        .wake
                        .wait(signal)
                        .unwrap_or_else(PoisonError::into_inner);
                }
                // Once the runtime's Shutdown arrived, no request may reach it (the
                // shutdown gate would refuse them): the driver ends, and the requests
                // waiting for it give up.
                if signal.stop || is_shutting_down() {
                    signal.ended = true;
                    self.served.notify_all();
                    return;
                }
                signal.asked
            };
            // Taken under the machine's lock, made without it: the runtime calls back
            // (ReJITError) on this thread during the requests. The modules' gate is held
            // throughout: no module of the batch can finish unloading meanwhile.
            {
                let modules = self.modules();
                let batch = self.machine().take_batch();
                let live = |keys: Vec<MethodKey>| -> Vec<MethodKey> {
                    keys.into_iter()
                        .filter(|k| modules.contains(&k.module))
                        .collect()
                };
                self.make(&live(batch.rejit), &live(batch.revert));
                drop(modules);
            }
            let mut signal = self.signal();
            signal.served = signal.served.max(ask);
            self.served.notify_all();
        }
    }

    /// Makes the runtime calls of one batch.
    fn make(&self, rejit: &[MethodKey], revert: &[MethodKey]) {
        let info = self.hosting.engine.info();
        let pairs = |keys: &[MethodKey]| -> Vec<(ModuleID, mdMethodDef)> {
            keys.iter().map(|k| (k.module, k.token)).collect()
        };
        if !rejit.is_empty() {
            self.counts.requested.fetch_add(rejit.len() as u64, Relaxed);
            // RequestReJITWithInliners only for a method a caller may hold inlined:
            // for each method, BLOCK_INLINING walks every assembly of the app domain,
            // holding a reference on each collectible one it passes, which can keep a
            // collectible context from ever unloading (docs/design.md, "Collectible
            // contexts and ReJIT requests"): a method the JIT was never allowed to
            // inline, of a module that is not ReadyToRun, has no inliner to recompile,
            // and a plain RequestReJIT is all it needs. And CoreCLR 3.1's dereferences
            // the method's MethodDesc without checking it exists (rejit.cpp,
            // UpdateJitInlinerActiveILVersions): for a method whose type has not loaded
            // yet (a pre-ReJIT, a method of a module that just loaded) it crashes the
            // process; such a method has no compiled code, so no caller inlined it.
            // That check only where the runtime needs it.
            let (with_inliners, plain): (Vec<MethodKey>, Vec<MethodKey>) = match self.callers {
                InliningCallers::Recompile => rejit.iter().partition(|k| {
                    self.hosting
                        .engine
                        .module(k.module)
                        .ok()
                        .is_none_or(|state| state.may_be_inlined(k.token))
                        && (!self.inliners_need_a_method_desc
                            || info.function_from_token(k.module, k.token).is_ok())
                }),
                InliningCallers::Leave => (Vec::new(), rejit.to_vec()),
            };
            if !with_inliners.is_empty() {
                let methods = pairs(&with_inliners);
                let answer = match info.request_rejit_with_inliners(&methods, InlinerIl::Ask) {
                    Err(ClrError::NotAvailable { .. }) => info.request_rejit(&methods),
                    answer => answer,
                };
                if let Err(e) = answer {
                    log_unless_shutting_down(&e, || {
                        format!("RequestReJITWithInliners of {} methods: {e}", methods.len())
                    });
                    self.machine()
                        .request_failed(&with_inliners, HResult::from(e));
                }
            }
            if !plain.is_empty() {
                let methods = pairs(&plain);
                if let Err(e) = info.request_rejit(&methods) {
                    log_unless_shutting_down(&e, || {
                        format!("RequestReJIT of {} methods: {e}", methods.len())
                    });
                    self.machine().request_failed(&plain, HResult::from(e));
                }
            }
        }
        if !revert.is_empty() {
            self.counts.reverted.fetch_add(revert.len() as u64, Relaxed);
            let methods = pairs(revert);
            match info.request_revert(&methods) {
                Ok(statuses) => {
                    let mut machine = self.machine();
                    for (key, status) in revert.iter().zip(statuses) {
                        machine.revert_done(*key, status);
                    }
                }
                Err(e) => {
                    log_unless_shutting_down(&e, || {
                        format!("RequestRevert of {} methods: {e}", methods.len())
                    });
                    let status = HResult::from(e);
                    let mut machine = self.machine();
                    for key in revert {
                        machine.revert_done(*key, status);
                    }
                }
            }
        }
    }

    /// Stops the driver (at shutdown); requests waiting for it give up.
    pub(crate) fn stop(&self) {
        let mut signal = self.signal();
        signal.stop = true;
        self.wake.notify_all();
        self.served.notify_all();
    }

    /// Stops the driver and waits, at most `limit`, until its thread has left the
    /// driver's code; whether it did (a driver never started counts as not ended).
    pub(crate) fn stop_and_wait(&self, limit: std::time::Duration) -> bool {
        self.stop();
        let (signal, _) = self
            .served
            .wait_timeout_while(self.signal(), limit, |s| !s.ended)
            .unwrap_or_else(PoisonError::into_inner);
        signal.ended
    }

    /// Whether the machine has any record (else nothing needs asking it).
    pub(crate) fn is_active(&self) -> bool {
        self.active.load(Relaxed)
    }

    /// What a first JIT of `key` should compile, when the machine wants something of it.
    pub(crate) fn first_jit_target(&self, key: MethodKey) -> Option<IlTarget<Plan>> {
        if !self.active.load(Relaxed) {
            return None;
        }
        self.machine().first_jit_target(key)
    }

    /// A first JIT of `key` compiled `given`'s IL: its default IL from now on.
    pub(crate) fn first_jit_done(&self, key: MethodKey, given: IlTarget<Plan>) {
        self.counts.first_jit_wishes.fetch_add(1, Relaxed);
        let mut machine = self.machine();
        machine.first_jit_done(key, given);
        self.ask_if_pending(&machine);
    }

    /// Whether `callee` must not be inlined: a method the machine wants to run
    /// something else than the file's IL (its versions would not reach the copy).
    pub(crate) fn keeps_out_of_inlining(&self, key: MethodKey) -> bool {
        self.active.load(Relaxed)
            && self
                .machine()
                .get(key)
                .is_some_and(|r| *r.desired() != IlTarget::File)
    }

    /// The machine wants `targets` (method, target, the method's default IL if the
    /// machine has no record yet); returns the ask to wait for.
    pub(crate) fn want(&self, targets: Vec<(MethodKey, IlTarget<Plan>, IlTarget<Plan>)>) -> u64 {
        {
            let mut machine = self.machine();
            for (key, target, default) in targets {
                machine.want(key, target, default);
            }
            self.active.store(!machine.is_empty(), Relaxed);
        }
        self.ask()
    }

    /// `keys` are to be compiled anew with what is wanted of them (the configured plan
    /// for those the machine has no record of): the driver asks for a new version of
    /// each, in a loaded module, not waited for ([`ReJitMachine::renew`]); the ask to wait
    /// for.
    pub(crate) fn renew(&self, keys: Vec<MethodKey>) -> u64 {
        self.counts.renewed.fetch_add(keys.len() as u64, Relaxed);
        {
            let mut machine = self.machine();
            for key in keys {
                let configured = IlTarget::Plan(Plan::CONFIGURED);
                machine.renew(key, configured.clone(), configured);
            }
            self.active.store(!machine.is_empty(), Relaxed);
        }
        self.ask()
    }

    /// The current wanted target of `key`, if the machine has a record of it.
    pub(crate) fn desired(&self, key: MethodKey) -> Option<IlTarget<Plan>> {
        self.machine().get(key).map(|r| r.desired().clone())
    }

    /// The methods the machine has a record of.
    pub(crate) fn recorded(&self) -> Vec<MethodKey> {
        self.machine().records().map(|(key, _)| key).collect()
    }

    /// One line per method the machine has a record of, in module and token order,
    /// with `name` giving each method's name and its assembly's.
    pub(crate) fn listing(&self, name: impl Fn(MethodKey) -> (String, String)) -> Vec<String> {
        let unchanged = self
            .unchanged
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let records: Vec<(MethodKey, String, String, String)> = self
            .machine()
            .records()
            .map(|(key, record)| {
                let stage = match record.stage() {
                    ReJitStage::Original => "original".to_owned(),
                    ReJitStage::Requested => "requested".to_owned(),
                    ReJitStage::ParametersGiven(target) => {
                        format!("compiling ({})", describe(target))
                    }
                    ReJitStage::Active {
                        target,
                        rejit,
                        functions,
                    } => format!(
                        "active rejit={rejit} instantiations={} ({})",
                        functions.len(),
                        describe(target)
                    ),
                    ReJitStage::RevertRequested => "reverting".to_owned(),
                    ReJitStage::Reverted => "reverted".to_owned(),
                    ReJitStage::Failed(failure) => {
                        let at = match failure.at {
                            FailedAt::Request => "request",
                            FailedAt::Revert => "revert",
                            FailedAt::Rewrite => "rewrite",
                            FailedAt::Compile => "compile",
                        };
                        format!("failed at={at} status={:#010x}", failure.status.0 as u32)
                    }
                };
                let stage = match (record.stage(), record.failure()) {
                    (ReJitStage::Failed(_), _) | (_, None) => stage,
                    (_, Some(f)) => format!(
                        "{stage}; wanted IL not built, status={:#010x}",
                        f.status.0 as u32
                    ),
                };
                let stage = match unchanged.get(&key) {
                    Some(name) => format!("{stage}; {name} changed nothing"),
                    None => stage,
                };
                (
                    key,
                    describe(record.desired()),
                    describe(record.default_il()),
                    stage,
                )
            })
            .collect();
        records
            .into_iter()
            .map(|(key, desired, default, stage)| {
                let (method, assembly) = name(key);
                format!(
                    "method {method} module={:#x} assembly={assembly} token={:#010x} wants={desired} default={default} stage={stage}",
                    key.module, key.token
                )
            })
            .collect()
    }

    /// `GetReJITParameters` for MethodDef `token` of `module`: builds the IL the machine
    /// wants now with the pipeline and hands it to `control`. When it cannot be built,
    /// the IL the method ran before; when not even that, the file's (the pristine IL).
    /// Never fails: whatever happens, the runtime gets a verified body or (if the
    /// pristine IL cannot be handed over either, which is logged) compiles the method's
    /// default IL.
    pub(crate) fn get_rejit_parameters(
        &self,
        module: ModuleID,
        token: mdMethodDef,
        control: &FunctionControl,
    ) {
        let clock = Instant::now();
        let key = MethodKey { module, token };
        self.counts.parameters.fetch_add(1, Relaxed);
        let state = self.hosting.engine.module(module).ok();
        let current = match &state {
            Some(state) if state.was_rewritten(token) => IlTarget::Plan(Plan::CONFIGURED),
            _ => IlTarget::File,
        };
        let parameters = {
            let mut machine = self.machine();
            if machine.get(key).is_none() {
                self.counts.inliners.fetch_add(1, Relaxed);
            }
            let parameters = machine.parameters(key, current);
            self.active.store(true, Relaxed);
            parameters
        };
        let given = match self.build(module, token, &parameters.target, control) {
            Ok(()) => Some(parameters.target),
            Err(outcome) => {
                let status = recorded_status(&outcome);
                self.counts.fallbacks.fetch_add(1, Relaxed);
                let fallback = parameters.fallback;
                let built = match self.build(module, token, &fallback, control) {
                    Ok(()) => Ok(fallback),
                    Err(_) if fallback != IlTarget::File => self
                        .build(module, token, &IlTarget::File, control)
                        .map(|()| IlTarget::File),
                    Err(again) => Err(again),
                };
                match built {
                    Ok(target) => {
                        self.machine().rewrite_failed(key, target.clone(), status);
                        Some(target)
                    }
                    Err(_) => {
                        self.counts.unanswered.fetch_add(1, Relaxed);
                        log::write(&format!(
                            "GetReJITParameters of {token:#010x} in module {module:#x}: no IL \
                             could be handed over; the runtime compiles its default IL"
                        ));
                        self.machine().rewrite_failed(key, IlTarget::File, status);
                        None
                    }
                }
            }
        };
        GIVEN.set(given.map(|target| (key, target)));
        let ns = u64::try_from(clock.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.counts.parameters_ns.fetch_add(ns, Relaxed);
    }

    /// Builds `target`'s IL for MethodDef `token` of `module` and hands it to `control`:
    /// the plan made as for a first JIT ([`Hosting::plan`]), run by the engine.
    ///
    /// # Errors
    /// The rewrite's outcome when no body was handed over.
    fn build(
        &self,
        module: ModuleID,
        token: mdMethodDef,
        target: &IlTarget<Plan>,
        control: &FunctionControl,
    ) -> Result<(), RewriteOutcome> {
        let hosting = &*self.hosting;
        let method = hosting.engine.locate_def(module, token)?;
        let (wish, flags) = match target {
            IlTarget::File => (None, CodegenFlags::NONE),
            IlTarget::Plan(plan) => (Some(Wish::Plan(plan)), plan.flags),
        };
        let added = hosting.added();
        let plan = wish
            .and_then(|wish| hosting.plan(&method.module, token, wish, &added))
            .unwrap_or(MethodPlan {
                steps: SmallVec::new(),
            });
        let target = Target::ReJit {
            method: &method,
            control,
            flags,
        };
        let rewrite = hosting.run(target, &plan);
        if let Some(position) = plan.steps.iter().position(|step| step.requested) {
            let key = MethodKey { module, token };
            let step = &plan.steps[position];
            self.note_request_effect(key, step.method.name(), rewrite.idle.contains(&position));
        }
        match rewrite.outcome {
            RewriteOutcome::Rewritten { .. } | RewriteOutcome::Unchanged => Ok(()),
            outcome => Err(outcome),
        }
    }

    /// Records whether the request's edit of `key` (by instrumentation method `name`)
    /// changed nothing in the version just built: the state listing says so, and the
    /// log, once per method.
    fn note_request_effect(&self, key: MethodKey, name: &str, idle: bool) {
        let mut unchanged = self
            .unchanged
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        match idle {
            true => {
                if unchanged.insert(key, name.to_owned()).is_none() {
                    log::write(&format!(
                        "instrumentation method {name} changed nothing in method {:#010x} of \
                         module {:#x}: it runs the configured instrumentation only",
                        key.token, key.module
                    ));
                }
            }
            false => {
                unchanged.remove(&key);
            }
        }
    }

    /// `ReJITCompilationStarted` of `function`, version `rejit`.
    pub(crate) fn compilation_started(&self, function: FunctionID, rejit: ReJITID) {
        let Ok(f) = self.hosting.engine.info().function_info(function) else {
            return;
        };
        let key = MethodKey {
            module: f.module,
            token: f.token,
        };
        let given = match GIVEN.take() {
            Some((k, target)) if k == key => Some(target),
            other => {
                GIVEN.set(other);
                None
            }
        };
        self.machine().compilation_started(key, rejit, given);
    }

    /// `ReJITCompilationFinished` of `function`, version `rejit`, with `status`.
    pub(crate) fn compilation_finished(
        &self,
        function: FunctionID,
        rejit: ReJITID,
        status: HResult,
    ) {
        self.counts.compiled.fetch_add(1, Relaxed);
        let Ok(f) = self.hosting.engine.info().function_info(function) else {
            return;
        };
        let key = MethodKey {
            module: f.module,
            token: f.token,
        };
        let mut machine = self.machine();
        machine.compilation_finished(key, function, rejit, status);
        self.ask_if_pending(&machine);
    }

    /// `ReJITError` for MethodDef `token` of `module`.
    pub(crate) fn rejit_error(
        &self,
        module: ModuleID,
        token: mdMethodDef,
        function: FunctionID,
        status: HResult,
    ) {
        self.counts.errors.fetch_add(1, Relaxed);
        log::throttled(&format!("ReJITError {:#010x}", status.0 as u32), || {
            format!(
                "ReJITError for {token:#010x} of module {module:#x} (function {function:#x}): \
                 {status:?}"
            )
        });
        self.machine()
            .rejit_error(MethodKey { module, token }, function, status);
    }

    /// A module finished loading: under the machine's reload policy, what was wanted of
    /// its assembly's methods in an earlier load is wanted of this one. The runtime
    /// never re-JIT-compiles a method of a collectible module: nothing is ever requested
    /// for one, and each of its methods runs what its first JIT compiled (see
    /// "Collectible contexts and ReJIT requests" in `docs/design.md`).
    ///
    /// `targets` are the MethodDefs the instrumentation methods selected by name in the
    /// module. In a module with precompiled (ReadyToRun) code, the configured
    /// instrumentation is wanted of each, and the requests are made here, on the loading
    /// thread, before the callback returns: no code of the module runs before, so each
    /// target's first call runs its edited IL. In a JIT-only module the first JIT
    /// compiles them edited, and nothing is requested.
    ///
    /// The module joins the loaded ones (which the dial selects among) only once the
    /// machine knows it: a request racing the load cannot find a collectible module the
    /// machine would still take for an ordinary one.
    pub(crate) fn module_loaded(&self, state: &ModuleState, targets: &[mdMethodDef]) {
        let mut modules = self.modules();
        let Some(facts) = state.facts() else {
            modules.insert(state.id());
            return;
        };
        let assembly = facts.assembly_name.clone();
        let precompiled = {
            let mut machine = self.machine();
            let precompiled = match (facts.is_collectible(), facts.is_ready_to_run()) {
                (true, _) => {
                    machine.module_loaded_fixed(state.id(), assembly);
                    false
                }
                (false, true) => {
                    machine.module_loaded(state.id(), assembly);
                    true
                }
                (false, false) => {
                    machine.module_loaded_jit_only(state.id(), assembly);
                    false
                }
            };
            if precompiled {
                for &token in targets {
                    let key = MethodKey {
                        module: state.id(),
                        token,
                    };
                    machine.want(key, IlTarget::Plan(Plan::CONFIGURED), IlTarget::File);
                }
            }
            if !machine.is_empty() {
                self.active.store(true, Relaxed);
            }
            precompiled
        };
        modules.insert(state.id());
        if precompiled && !targets.is_empty() {
            // Made here rather than by the driver: the runtime takes requests inside
            // its callbacks, and waiting for another thread would leave a window (and
            // could wait on a lock the loading thread holds).
            let batch = self.machine().take_batch();
            let (here, elsewhere): (Vec<MethodKey>, Vec<MethodKey>) = batch
                .rejit
                .into_iter()
                .filter(|k| modules.contains(&k.module))
                .partition(|k| k.module == state.id());
            let inliners = match self.callers {
                InliningCallers::Recompile => precompiled_inliners(&facts.path, targets),
                InliningCallers::Leave => Vec::new(),
            };
            let inliners: Vec<MethodKey> = inliners
                .into_iter()
                .map(|token| MethodKey {
                    module: state.id(),
                    token,
                })
                .collect();
            self.make_at_load(&here, &inliners);
            let revert: Vec<MethodKey> = batch
                .revert
                .into_iter()
                .filter(|k| modules.contains(&k.module))
                .collect();
            self.make(&elsewhere, &revert);
            self.counts.at_load.fetch_add(here.len() as u64, Relaxed);
            self.counts
                .inliners_at_load
                .fetch_add(inliners.len() as u64, Relaxed);
        } else {
            self.ask_if_pending(&self.machine());
        }
    }

    /// The requests of a precompiled module's targets as it loads, with the methods of
    /// the module whose precompiled code inlined one of them (`inliners`, from the
    /// image's own inlining records): one `RequestReJIT`. Not `RequestReJITWithInliners`:
    /// at a module's load CoreCLR's walk for inliners does not see the module (it is not
    /// among the loaded assemblies yet), no code compiled by the JIT can have inlined a
    /// method of a module that was not loaded, and a method the machine wants changed
    /// is kept out of inlining from now on by the manager's `JITInlining` answer. Each
    /// inliner is re-JIT-compiled from its own IL, calling the targets it had inlined.
    fn make_at_load(&self, targets: &[MethodKey], inliners: &[MethodKey]) {
        if targets.is_empty() {
            return;
        }
        let methods: Vec<(ModuleID, mdMethodDef)> = targets
            .iter()
            .chain(inliners)
            .map(|k| (k.module, k.token))
            .collect();
        self.counts
            .requested
            .fetch_add(methods.len() as u64, Relaxed);
        if let Err(e) = self.hosting.engine.info().request_rejit(&methods) {
            log_unless_shutting_down(&e, || {
                format!(
                    "RequestReJIT of {} targets at their module's load: {e}",
                    methods.len()
                )
            });
            self.machine().request_failed(targets, HResult::from(e));
        }
    }

    /// A module is unloading (`ModuleUnloadStarted`, before the crate forgets its
    /// state): once a request or lookup naming it is over, it leaves the loaded modules
    /// and its records go; nothing names it to the runtime again.
    pub(crate) fn module_unloaded(&self, module: ModuleID) {
        self.unchanged
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|k, _| k.module != module);
        let mut modules = self.modules();
        modules.remove(&module);
        let mut machine = self.machine();
        machine.module_unloaded(module);
        self.active.store(!machine.is_empty(), Relaxed);
        drop(machine);
        // Its capacity follows the modules loaded, not every module ever loaded.
        if modules.capacity() > 64 && modules.len() * 4 < modules.capacity() {
            let keep = modules.len() * 2;
            modules.shrink_to(keep);
        }
    }
}

/// The MethodDefs of the precompiled image at `path` whose code inlined one of
/// `targets` (MethodDefs of the same image), from the image's inlining records, targets
/// left out, in token order. None when the records cannot be read (logged: those
/// inlined copies keep running until their callers are compiled again).
fn precompiled_inliners(path: &str, targets: &[mdMethodDef]) -> Vec<mdMethodDef> {
    match crate::pe::ready_to_run::inliners_in_file(std::path::Path::new(path), targets) {
        Ok(Some(lists)) => {
            let mut inliners: Vec<mdMethodDef> = lists.into_iter().flatten().collect();
            inliners.sort_unstable();
            inliners.dedup();
            inliners.retain(|t| targets.binary_search(t).is_err());
            inliners
        }
        Ok(None) => Vec::new(),
        Err(e) => {
            log::write(&format!(
                "the inlining records of {path} cannot be read ({e}): copies of its targets \
                 inlined into its precompiled code run until their callers are compiled again"
            ));
            Vec::new()
        }
    }
}

/// The status the machine records for a version whose wanted IL was not built (the
/// dial's state shows it): `E_FAIL` for a refusal or a failure (the log line has its
/// reason), `E_UNEXPECTED` for an outcome a ReJIT version cannot have.
fn recorded_status(outcome: &RewriteOutcome) -> HResult {
    match outcome {
        RewriteOutcome::Failed(_) | RewriteOutcome::Refused(_) => HResult::E_FAIL,
        _ => HResult::E_UNEXPECTED,
    }
}

/// Logs a failed request, unless the runtime refused it because it is shutting down
/// (the shutdown gate refuses every request made after `Shutdown`: nothing is wrong).
fn log_unless_shutting_down(error: &ClrError, line: impl FnOnce() -> String) {
    if !matches!(error, ClrError::ShuttingDown { .. }) {
        log::write(&line());
    }
}

impl core::fmt::Debug for ReJitController {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ReJitController")
            .field("methods", &self.machine().len())
            .field("callers", &self.callers)
            .finish_non_exhaustive()
    }
}

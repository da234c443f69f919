//! [`Manager`]: a [`Profiler`] hosting several instrumentation methods.

use core::cell::RefCell;
use core::ffi::c_void;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, OnceLock};
#[cfg(unix)]
use std::sync::{Mutex, PoisonError};

use super::hosting::Hosting;
use super::plan::{InliningCallers, Plan};
use super::rejit::ReJitController;
use super::rejit_control::ReJitControl;
use super::report::{ManagerCounts, guarded};
use crate::clr::rejit::{IlTarget, MethodKey};

use smallvec::SmallVec;

use super::config::{ConfigError, Configuration, Options};
use super::events::{EventMasks, Events, EventsHandle};
use super::method::{Candidate, InstrumentationMethod, Interest, ModuleLoad, Owner, Start};
use crate::clr::hooks::{self, HookPath, HookTable};
use crate::clr::log;
use crate::clr::profiler::{Callback, Profiler, for_each_callback};
use crate::clr::rewrite::items::Containers;
use crate::clr::rewrite::jit::{Inlining, JitRewriter};
use crate::clr::rewrite::module::ModuleState;
use crate::clr::rewrite::outcome::RewriteOutcome;
use crate::clr::runtime::guard::spawn_profiler_thread;
use crate::clr::runtime::{
    AssemblyName, AssemblyReferenceProvider, CodegenFlags, FunctionControl, ProfilerInfo,
};
use crate::clr::sys::enums::{
    CorPrfGcReason, CorPrfGcRootFlags, CorPrfGcRootKind, CorPrfJitCache, CorPrfSuspendReason,
    CorPrfTransitionReason,
};
use crate::clr::sys::types::{
    AppDomainID, AssemblyID, ClassID, EventPipeProvider, FunctionID, GCHandleID, ModuleID,
    ObjectID, ReJITID, ThreadID, mdMethodDef,
};
use crate::clr::sys::{CorPrfHighMonitor, CorPrfMonitor, Guid, HResult, mdToken};

/// The instrumentation methods of a [`Manager`], in the order they edit.
type Methods = Arc<[Arc<dyn InstrumentationMethod>]>;

/// What the manager has once initialized.
struct Running {
    /// The instrumentation methods that started, their options, the rewriter.
    hosting: Arc<Hosting>,
    /// Per callback, the indices (into `methods`) of its subscribers, in order.
    subscribers: Box<[SmallVec<[u8; 4]>]>,
    /// The ReJIT controller, when ReJIT is on ([`Manager::with_rejit`]).
    rejit: Option<Arc<ReJitController>>,
    /// The enter/leave/tailcall hooks, when an instrumentation method subscribed.
    hooks: Option<Arc<HookTable>>,
    /// The live dial, when it listens ([`Manager::with_dial`]); closed at shutdown.
    #[cfg(unix)]
    dial: Mutex<Option<crate::clr::dial::ControlServer>>,
}

/// An instrumentation method as registered: its priority and options.
struct Hosted {
    priority: i32,
    method: Arc<dyn InstrumentationMethod>,
    options: Options,
}

/// What a host runs at shutdown ([`Manager::with_report`]).
type Report = Box<dyn Fn(&Manager) + Send + Sync>;

/// A profiler hosting several instrumentation methods in one process: it asks the
/// runtime for the union of their events, delivers each callback only to those that
/// subscribed to it, and rewrites each method they want once, through the rewrite
/// pipeline, with all their edits on one shared body.
///
/// At each JIT compilation of a method not yet rewritten, each instrumentation method's
/// [`wants`](InstrumentationMethod::wants) is asked; if none wants it, the method is not
/// read or decoded. Otherwise the pipeline decodes it once, the manager makes it
/// single-ret if one of them asks, runs the edits in priority order (descending, ties
/// in registration order), and the pipeline verifies, encodes and hands over the body
/// with one IL map. An edit that fails or panics is rolled back alone and logged once
/// per (instrumentation method, method); the others' edits stay. Inlining is answered
/// as [`JitRewriter::jit_inlining`] does, with "any instrumentation method wants it" as
/// the filter, and with the subscribers' own answers.
///
/// When a module finishes loading, each instrumentation method's
/// [`module_loaded`](InstrumentationMethod::module_loaded) runs, before the
/// subscribers' `module_load_finished`. Data items live with their container: a
/// module's, with its methods', are dropped when it unloads (and all of them at
/// shutdown, after the subscribers' `shutdown`).
///
/// No lock is shared by all JIT threads: each module's data has its own, and the
/// rewriter's module registry is sharded.
pub struct Manager {
    /// Registered, in editing order.
    pending: Vec<Hosted>,
    inlining: Inlining,
    timings: bool,
    report: Option<Report>,
    running: OnceLock<Running>,
    /// The data items on assemblies and app domains.
    containers: Arc<Containers>,
    counts: Arc<ManagerCounts>,
    /// ReJIT, when on: what to do with callers that inlined a method.
    rejit: Option<InliningCallers>,
    /// The live dial's socket, when asked for.
    #[cfg(unix)]
    dial: Option<std::path::PathBuf>,
    /// The path the hooks run on, when an instrumentation method subscribes to them.
    hook_path: HookPath,
}

impl Default for Manager {
    fn default() -> Manager {
        Manager::new()
    }
}

impl core::fmt::Debug for Manager {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let names = self.names();
        f.debug_struct("Manager")
            .field("methods", &names)
            .field("counts", &self.counts)
            .finish_non_exhaustive()
    }
}

/// The events the manager needs itself: JIT compilations (to rewrite), module loads
/// and unloads (metadata at load, data items freed at unload), assembly and app-domain
/// unloads (their data items freed).
const OWN_EVENTS: CorPrfMonitor = CorPrfMonitor::MONITOR_JIT_COMPILATION
    .union(CorPrfMonitor::MONITOR_MODULE_LOADS)
    .union(CorPrfMonitor::MONITOR_ASSEMBLY_LOADS)
    .union(CorPrfMonitor::MONITOR_APPDOMAIN_LOADS);

impl Manager {
    /// A manager without instrumentation methods.
    pub fn new() -> Manager {
        Manager {
            pending: Vec::new(),
            inlining: Inlining::default(),
            timings: false,
            report: None,
            running: OnceLock::new(),
            containers: Arc::default(),
            counts: Arc::default(),
            rejit: None,
            #[cfg(unix)]
            dial: None,
            hook_path: HookPath::Fast,
        }
    }

    /// Adds `method` with its own [`priority`](InstrumentationMethod::priority).
    pub fn with(self, method: impl InstrumentationMethod) -> Manager {
        let priority = method.priority();
        self.with_priority(method, priority)
    }

    /// Adds `method`, which the caller may keep a handle to, with its own
    /// [`priority`](InstrumentationMethod::priority).
    pub fn with_shared(self, method: Arc<dyn InstrumentationMethod>) -> Manager {
        let priority = method.priority();
        self.host(method, priority, Options::default())
    }

    /// Adds `method` with `priority` (higher edits first; ties in the order added).
    pub fn with_priority(self, method: impl InstrumentationMethod, priority: i32) -> Manager {
        self.host(Arc::new(method), priority, Options::default())
    }

    fn host(
        mut self,
        method: Arc<dyn InstrumentationMethod>,
        priority: i32,
        options: Options,
    ) -> Manager {
        self.pending.push(Hosted {
            priority,
            method,
            options,
        });
        // Stable: equal priorities keep the order they were added in.
        self.pending
            .sort_by_key(|hosted| core::cmp::Reverse(hosted.priority));
        self
    }

    /// A manager hosting the instrumentation methods `configuration` enables, chosen by
    /// name among `available` (what the profiler offers), in its order, with its
    /// priorities (else their own) and options (checked against what each declares).
    ///
    /// # Errors
    /// A name `available` does not have, and an option an instrumentation method does
    /// not declare or of another type than declared, at its place in the file.
    pub fn configured(
        configuration: &Configuration,
        available: &[Arc<dyn InstrumentationMethod>],
    ) -> Result<Manager, ConfigError> {
        let mut manager = Manager::new();
        for entry in configuration.methods() {
            let Some(method) = available.iter().find(|m| m.name() == entry.name) else {
                let offered: Vec<&str> = available.iter().map(|m| m.name()).collect();
                return Err(configuration.error(
                    entry.at,
                    format!(
                        "unknown instrumentation method {:?} (this profiler has {})",
                        entry.name,
                        offered.join(", ")
                    ),
                ));
            };
            entry.options.check(&entry.name, method.options())?;
            if entry.enabled {
                let priority = entry.priority.unwrap_or_else(|| method.priority());
                manager = manager.host(method.clone(), priority, entry.options.clone());
            }
        }
        Ok(manager)
    }

    /// Runs `report` at shutdown, after the subscribers' `shutdown` and before the data
    /// items are dropped: a host's final report of [`Manager::counts`].
    pub fn with_report(mut self, report: impl Fn(&Manager) + Send + Sync + 'static) -> Manager {
        self.report = Some(Box::new(report));
        self
    }

    /// What the rewriter answers the JIT's inlining questions
    /// ([`Inlining::KeepInstrumentation`] by default).
    pub fn with_inlining(mut self, inlining: Inlining) -> Manager {
        self.inlining = inlining;
        self
    }

    /// Times the `JITCompilationStarted` callbacks ([`ManagerCounts::callback_ns`]) and
    /// the rewrite pipeline's phases ([`JitRewriter::with_timings`]).
    pub fn with_timings(mut self) -> Manager {
        self.timings = true;
        self
    }

    /// Turns ReJIT on (`COR_PRF_ENABLE_REJIT`): methods can then be changed while the
    /// program runs, through [`Manager::rejit`], with `callers` saying what happens to
    /// the callers that inlined a changed method. The pristine IL of every method
    /// rewritten at its first JIT is kept (every version starts from it).
    pub fn with_rejit(mut self, callers: InliningCallers) -> Manager {
        self.rejit = Some(callers);
        self
    }

    /// Turns ReJIT on ([`Manager::with_rejit`], callers recompiled unless asked
    /// otherwise before) and listens for the live dial's commands on the Unix socket
    /// `socket` (see [`ControlServer`](crate::clr::dial::ControlServer):
    /// its directory is made with mode 0700, or must be the user's and closed to others;
    /// only the process's own user may connect). A dial that cannot listen is a start
    /// failure: nothing is rewritten.
    #[cfg(unix)]
    pub fn with_dial(mut self, socket: impl Into<std::path::PathBuf>) -> Manager {
        self.rejit.get_or_insert_default();
        self.dial = Some(socket.into());
        self
    }

    /// The path the enter/leave/tailcall hooks run on when an instrumentation method
    /// subscribes to them ([`HookPath::Fast`] by default).
    pub fn with_hook_path(mut self, path: HookPath) -> Manager {
        self.hook_path = path;
        self
    }

    /// The enter/leave/tailcall hooks' table, once initialized with a subscriber.
    pub fn hooks(&self) -> Option<&Arc<HookTable>> {
        self.running.get()?.hooks.as_ref()
    }

    /// The handle on ReJIT, once initialized with it on ([`Manager::with_rejit`]).
    pub fn rejit(&self) -> Option<ReJitControl> {
        let running = self.running.get()?;
        let controller = running.rejit.clone()?;
        Some(ReJitControl { controller })
    }

    /// The names of the instrumentation methods, in editing order.
    pub fn names(&self) -> Vec<&str> {
        self.pending.iter().map(|h| h.method.name()).collect()
    }

    /// Counts of what it did so far.
    pub fn counts(&self) -> &ManagerCounts {
        &self.counts
    }

    /// The rewriter, once initialized (its timings, its modules).
    pub fn rewriter(&self) -> Option<&JitRewriter> {
        self.running.get().map(|r| &r.hosting.rewriter)
    }

    fn on_initialize(&self, info: ProfilerInfo) -> Result<(), HResult> {
        if self.pending.is_empty() {
            // Nothing to host: attached, asking for no event.
            return info
                .set_event_mask(CorPrfMonitor::empty(), CorPrfHighMonitor::empty())
                .map_err(|_| HResult::E_FAIL);
        }
        let mut failed = false;
        let own = match self.rejit {
            Some(_) => OWN_EVENTS.union(CorPrfMonitor::ENABLE_REJIT),
            None => OWN_EVENTS,
        };
        let masks = EventMasks::new(
            Events {
                low: own,
                high: CorPrfHighMonitor::empty(),
            },
            vec![Events::default(); self.pending.len()],
        );
        let mut references = false;
        for (index, hosted) in self.pending.iter().enumerate() {
            let (method, options) = (&hosted.method, &hosted.options);
            let handle = EventsHandle::new(masks.clone(), index);
            let start = Start {
                info: &info,
                options,
                events: &handle,
            };
            match catch_unwind(AssertUnwindSafe(|| method.start(&start))) {
                Ok(Ok(())) => {
                    // What it declares, with what it set during its start.
                    let (declared, set) = (method.events(), handle.get());
                    let _ = handle.set(Events {
                        low: declared.low | set.low,
                        high: declared.high | set.high,
                    });
                    references |= !method.assembly_references().is_empty();
                }
                Ok(Err(why)) => {
                    failed = true;
                    log::write(&format!(
                        "instrumentation method {} did not start: {why}",
                        method.name()
                    ));
                }
                Err(payload) => {
                    failed = true;
                    log::write(&format!(
                        "instrumentation method {} panicked at start: {}",
                        method.name(),
                        log::panic_message(&*payload)
                    ));
                }
            }
        }
        if self.pending.len() > usize::from(u8::MAX) {
            log::write("more than 255 instrumentation methods");
            failed = true;
        }
        let methods: Methods = self.pending.iter().map(|h| h.method.clone()).collect();
        let wanted = methods.clone();
        let containers = self.containers.clone();
        let mut rewriter = JitRewriter::new(info.clone())
            .with_inlining(self.inlining)
            .with_filter(move |module, token| {
                let count = wanted.len();
                wanted.iter().enumerate().any(|(index, m)| {
                    let candidate = Candidate {
                        module,
                        token,
                        compiling: false,
                        owner: Owner { index, count },
                        containers: &containers,
                    };
                    m.wants(&candidate) != Interest::No
                })
            });
        if self.timings {
            rewriter = rewriter.with_timings();
        }
        if self.rejit.is_some() {
            // Every ReJIT version starts from the pristine IL.
            rewriter = rewriter.with_pristine_il();
        }
        let hosting = Arc::new(Hosting {
            methods: methods.clone(),
            options: self.pending.iter().map(|h| h.options.clone()).collect(),
            containers: self.containers.clone(),
            rewriter,
            counts: self.counts.clone(),
        });
        let runtime = match info.runtime_version() {
            Ok(runtime) => {
                log::write(&format!("runtime {runtime}"));
                Some(runtime)
            }
            Err(e) => {
                log::write(&format!("the runtime's version is not known: {e}"));
                None
            }
        };
        let rejit = self.rejit.map(|callers| {
            Arc::new(ReJitController::new(
                hosting.clone(),
                callers,
                runtime.as_ref(),
            ))
        });
        #[cfg(unix)]
        let mut dial = None;
        #[cfg(unix)]
        if let (Some(path), Some(controller), false) = (&self.dial, &rejit, failed) {
            let control = ReJitControl {
                controller: controller.clone(),
            };
            match crate::clr::dial::ControlServer::start(path, Arc::new(control)) {
                Ok(server) => {
                    log::write(&format!("dial listening on {}", server.path().display()));
                    dial = Some(server);
                }
                Err(e) => {
                    failed = true;
                    log::write(&format!("the dial cannot listen: {e}"));
                }
            }
        }
        if failed {
            // Fail closed: attached, asking for no event, rewriting nothing.
            masks.close();
            log::write("no instrumentation method runs: the program runs unchanged");
            return info
                .set_event_mask(CorPrfMonitor::empty(), CorPrfHighMonitor::empty())
                .map_err(|_| HResult::E_FAIL);
        }
        let hook_subscribers: Vec<_> = if failed {
            Vec::new()
        } else {
            methods
                .iter()
                .filter_map(|m| {
                    catch_unwind(AssertUnwindSafe(|| m.hook_subscriber()))
                        .ok()
                        .flatten()
                })
                .collect()
        };
        if !hook_subscribers.is_empty() {
            masks.add_own(Events {
                low: hooks::events_for(self.hook_path, &hook_subscribers),
                high: CorPrfHighMonitor::empty(),
            });
        }
        if references {
            // The references its instrumentation methods announce.
            masks.add_own(Events {
                low: CorPrfMonitor::empty(),
                high: CorPrfHighMonitor::ADD_ASSEMBLY_REFERENCES,
            });
        }
        masks.arm(&info)?;
        let hooks = if hook_subscribers.is_empty() {
            None
        } else {
            match hooks::register(&info, self.hook_path, hook_subscribers) {
                Ok(table) => Some(table),
                Err(e) => {
                    // Fail closed, as for a method that did not start.
                    masks.close();
                    log::write(&format!(
                        "the enter/leave hooks cannot be registered: {e}; no instrumentation \
                         method runs: the program runs unchanged"
                    ));
                    return info
                        .set_event_mask(CorPrfMonitor::empty(), CorPrfHighMonitor::empty())
                        .map_err(|_| HResult::E_FAIL);
                }
            }
        };
        if let Some(controller) = &rejit {
            let driver = controller.clone();
            if let Err(e) = spawn_profiler_thread("ilrewrite-rejit", move || driver.drive()) {
                // Requests then wait in vain and say so; first JITs still follow them.
                log::write(&format!("the ReJIT driver thread did not start: {e}"));
            }
        }
        let subscribers = Callback::ALL
            .iter()
            .map(|&callback| {
                (0..methods.len())
                    .filter(|&i| methods[i].callbacks().contains(callback))
                    .map(|i| i as u8)
                    .collect()
            })
            .collect();
        let _ = self.running.set(Running {
            hosting,
            subscribers,
            rejit,
            hooks,
            #[cfg(unix)]
            dial: Mutex::new(dial),
        });
        Ok(())
    }

    /// The subscribers of `callback`, in order (none before initialization).
    fn subscribers(&self, callback: Callback) -> impl Iterator<Item = &dyn InstrumentationMethod> {
        self.running.get().into_iter().flat_map(move |running| {
            running.subscribers[callback as usize]
                .iter()
                .map(|&i| &*running.hosting.methods[usize::from(i)])
        })
    }

    /// Delivers a callback to its subscribers, each in its own panic guard (a panic is
    /// logged and answered as `E_FAIL`); answers the first failure, after every
    /// subscriber had the callback.
    fn forward(
        &self,
        callback: Callback,
        mut call: impl FnMut(&dyn InstrumentationMethod) -> Result<(), HResult>,
    ) -> Result<(), HResult> {
        let mut answer = Ok(());
        for method in self.subscribers(callback) {
            let result = guarded(method, callback, || call(method)).unwrap_or(Err(HResult::E_FAIL));
            if answer.is_ok() {
                answer = result;
            }
        }
        answer
    }

    /// A `bool` callback: `true` unless a subscriber answers `false` (a panic answers
    /// `default`).
    fn all(
        &self,
        callback: Callback,
        default: bool,
        mut call: impl FnMut(&dyn InstrumentationMethod) -> bool,
    ) -> bool {
        // Every subscriber hears the callback, whatever the ones before answered.
        let mut all = true;
        for method in self.subscribers(callback) {
            all &= guarded(method, callback, || call(method)).unwrap_or(default);
        }
        all
    }

    fn on_jit_compilation_started(
        &self,
        function: FunctionID,
        is_safe_to_block: bool,
    ) -> Result<(), HResult> {
        let clock = self.timings.then(std::time::Instant::now);
        self.counts.compilations.fetch_add(1, Relaxed);
        let answer = self.forward(Callback::JITCompilationStarted, |m| {
            m.jit_compilation_started(function, is_safe_to_block)
        });
        let mut rewritten = false;
        if let Some(running) = self.running.get() {
            let outcome = self.rewrite(running, function);
            rewritten = matches!(outcome, RewriteOutcome::Rewritten { .. });
            self.counts.count(&outcome);
        }
        if let Some(clock) = clock {
            let ns = u64::try_from(clock.elapsed().as_nanos()).unwrap_or(u64::MAX);
            self.counts.callback_ns.fetch_add(ns, Relaxed);
            if rewritten {
                self.counts.rewritten_ns.fetch_add(ns, Relaxed);
            }
        }
        answer
    }

    /// Rewrites `function` with the edits of the instrumentation methods that want it.
    fn rewrite(&self, running: &Running, function: FunctionID) -> RewriteOutcome {
        let hosting = &*running.hosting;
        // What ReJIT wants of the method, when it wants anything: its first JIT
        // compiles that, so no call runs without it.
        let wish: RefCell<Option<(MethodKey, Plan)>> = RefCell::new(None);
        let select = |module: &ModuleState, token: mdToken| {
            let key = MethodKey {
                module: module.id(),
                token,
            };
            let target = running.rejit.as_ref().and_then(|r| r.first_jit_target(key));
            let (configured, request) = match target {
                None => (hosting.wanting(module, token, true), None),
                Some(IlTarget::File) => {
                    if let Some(rejit) = &running.rejit {
                        rejit.first_jit_done(key, IlTarget::File);
                    }
                    return None;
                }
                Some(IlTarget::Plan(plan)) => {
                    let configured = match plan.configured {
                        true => hosting.wanting(module, token, true),
                        false => SmallVec::new(),
                    };
                    let request = plan.request.clone();
                    *wish.borrow_mut() = Some((key, plan));
                    (configured, request)
                }
            };
            if configured.is_empty() && request.is_none() {
                self.counts.not_wanted.fetch_add(1, Relaxed);
                return None;
            }
            Some((configured, request))
        };
        let outcome = hosting.rewriter.rewrite_selected(
            function,
            select,
            |(configured, request), body, rewrite| {
                self.counts.decoded.fetch_add(1, Relaxed);
                let wanted = hosting.wanted(
                    rewrite.module,
                    rewrite.token,
                    &configured,
                    request.as_deref(),
                );
                hosting.edit(&wanted, body, rewrite)
            },
        );
        if let (Some((key, plan)), Some(rejit)) = (wish.take(), &running.rejit) {
            // Its default IL from now on: what was handed over (flags are for ReJIT
            // versions only), or the file's.
            let given = match outcome {
                RewriteOutcome::AlreadyRewritten => None,
                RewriteOutcome::Rewritten { .. } => Some(
                    Plan {
                        flags: CodegenFlags::NONE,
                        ..plan
                    }
                    .into_target(),
                ),
                _ => Some(IlTarget::File),
            };
            if let Some(given) = given {
                rejit.first_jit_done(key, given);
            }
        }
        outcome
    }

    fn on_module_load_finished(&self, module: ModuleID, status: HResult) -> Result<(), HResult> {
        if let (true, Some(running)) = (status.is_ok(), self.running.get())
            && let Ok(state) = running.hosting.rewriter.module(module)
        {
            self.counts.module_loads.fetch_add(1, Relaxed);
            let count = running.hosting.methods.len();
            for (index, method) in running.hosting.methods.iter().enumerate() {
                let load = ModuleLoad {
                    module: &state,
                    owner: Owner { index, count },
                    containers: &self.containers,
                };
                match guarded(&**method, Callback::ModuleLoadFinished, || {
                    method.module_loaded(&load)
                }) {
                    Some(Ok(())) | None => {}
                    Some(Err(e)) => log::write(&format!(
                        "instrumentation method {}: module {module:#x} load: {e}",
                        method.name()
                    )),
                }
            }
            if let Some(rejit) = &running.rejit {
                rejit.module_loaded(&state);
            }
        }
        self.forward(Callback::ModuleLoadFinished, |m| {
            m.module_load_finished(module, status)
        })
    }

    fn on_module_unload_started(&self, module: ModuleID) -> Result<(), HResult> {
        let answer = self.forward(Callback::ModuleUnloadStarted, |m| {
            m.module_unload_started(module)
        });
        if let Some(running) = self.running.get() {
            // ReJIT first: it waits until no request or lookup names the module, and
            // then nothing will (the rewriter's state would otherwise be made again by
            // a lookup in between).
            if let Some(rejit) = &running.rejit {
                rejit.module_unloaded(module);
            }
            running.hosting.rewriter.module_unloaded(module);
        }
        answer
    }

    fn on_module_unload_finished(&self, module: ModuleID, status: HResult) -> Result<(), HResult> {
        let answer = self.forward(Callback::ModuleUnloadFinished, |m| {
            m.module_unload_finished(module, status)
        });
        if let Some(hooks) = self.running.get().and_then(|r| r.hooks.as_ref()) {
            hooks.forget_module(module);
        }
        answer
    }

    /// Runs `f` on the hooks' table, if any.
    fn with_hooks(&self, f: impl FnOnce(&HookTable)) {
        if let Some(hooks) = self.running.get().and_then(|r| r.hooks.as_ref()) {
            f(hooks);
        }
    }

    fn on_exception_unwind_function_enter(&self, function: FunctionID) -> Result<(), HResult> {
        if let Some(hooks) = self.running.get().and_then(|r| r.hooks.as_ref()) {
            hooks.unwind_enter(function);
        }
        self.forward(Callback::ExceptionUnwindFunctionEnter, |m| {
            m.exception_unwind_function_enter(function)
        })
    }

    fn on_exception_unwind_function_leave(&self) -> Result<(), HResult> {
        if let Some(hooks) = self.running.get().and_then(|r| r.hooks.as_ref()) {
            hooks.unwind_leave();
        }
        self.forward(Callback::ExceptionUnwindFunctionLeave, |m| {
            m.exception_unwind_function_leave()
        })
    }

    fn on_assembly_unload_finished(
        &self,
        assembly: AssemblyID,
        status: HResult,
    ) -> Result<(), HResult> {
        let answer = self.forward(Callback::AssemblyUnloadFinished, |m| {
            m.assembly_unload_finished(assembly, status)
        });
        // Dropped here, after the subscribers heard of it, outside any lock.
        drop(self.containers.assemblies.remove(assembly));
        answer
    }

    fn on_app_domain_shutdown_finished(
        &self,
        app_domain: AppDomainID,
        status: HResult,
    ) -> Result<(), HResult> {
        let answer = self.forward(Callback::AppDomainShutdownFinished, |m| {
            m.app_domain_shutdown_finished(app_domain, status)
        });
        drop(self.containers.app_domains.remove(app_domain));
        answer
    }

    /// Announces every instrumentation method's references, except an assembly's
    /// reference to itself; then the subscribers' own answer.
    fn on_get_assembly_references(
        &self,
        path: &str,
        provider: &AssemblyReferenceProvider,
    ) -> Result<(), HResult> {
        let mut answer = Ok(());
        if let Some(running) = self.running.get() {
            announce(&running.hosting.methods, path, |method, reference| {
                provider.add(reference).map_err(|e| {
                    log::write(&format!(
                        "instrumentation method {}: the reference to {} not announced for {path}: {e}",
                        method.name(),
                        reference.name
                    ));
                    answer = Err(HResult::from(e));
                })
            });
        }
        let theirs = self.forward(Callback::GetAssemblyReferences, |m| {
            m.get_assembly_references(path, provider)
        });
        answer.and(theirs)
    }

    fn on_jit_inlining(&self, caller: FunctionID, callee: FunctionID) -> bool {
        let theirs = self.all(Callback::JITInlining, true, |m| {
            m.jit_inlining(caller, callee)
        });
        let Some(running) = self.running.get() else {
            return theirs;
        };
        let inline = theirs
            // A function with hooks on is not inlined: its calls would not be seen.
            && running.hooks.as_ref().is_none_or(|hooks| hooks.decide(callee).is_none())
            && running.hosting.rewriter.jit_inlining(caller, callee)
            && running.rejit.as_ref().is_none_or(|rejit| {
                // A method ReJIT changes is not inlined into callers compiled later.
                !rejit.is_active()
                    || running
                        .hosting
                        .rewriter
                        .info()
                        .function_info(callee)
                        .is_ok_and(|f| {
                            !rejit.keeps_out_of_inlining(MethodKey {
                                module: f.module,
                                token: f.token,
                            })
                        })
            });
        if inline && running.rejit.is_some() {
            // A ReJIT of it must then recompile its inliners; of a method never
            // inlined, it need not (and must not walk the assemblies: see
            // `ReJitController::make`).
            running.hosting.rewriter.note_inlined(callee);
        }
        inline
    }

    fn on_get_rejit_parameters(
        &self,
        module: ModuleID,
        method: mdMethodDef,
        control: &FunctionControl,
    ) -> Result<(), HResult> {
        let answer = self.forward(Callback::GetReJITParameters, |m| {
            m.get_rejit_parameters(module, method, control)
        });
        if let Some(rejit) = self.running.get().and_then(|r| r.rejit.as_ref()) {
            rejit.get_rejit_parameters(module, method, control);
            // Whatever a subscriber answered: the manager handed a body over (or the
            // method compiles its default IL).
            return Ok(());
        }
        answer
    }

    fn on_rejit_compilation_started(
        &self,
        function: FunctionID,
        rejit_id: ReJITID,
        is_safe_to_block: bool,
    ) -> Result<(), HResult> {
        if let Some(rejit) = self.running.get().and_then(|r| r.rejit.as_ref()) {
            rejit.compilation_started(function, rejit_id);
        }
        self.forward(Callback::ReJITCompilationStarted, |m| {
            m.rejit_compilation_started(function, rejit_id, is_safe_to_block)
        })
    }

    fn on_rejit_compilation_finished(
        &self,
        function: FunctionID,
        rejit_id: ReJITID,
        status: HResult,
        is_safe_to_block: bool,
    ) -> Result<(), HResult> {
        if let Some(rejit) = self.running.get().and_then(|r| r.rejit.as_ref()) {
            rejit.compilation_finished(function, rejit_id, status);
        }
        self.forward(Callback::ReJITCompilationFinished, |m| {
            m.rejit_compilation_finished(function, rejit_id, status, is_safe_to_block)
        })
    }

    fn on_rejit_error(
        &self,
        module: ModuleID,
        method: mdMethodDef,
        function: FunctionID,
        status: HResult,
    ) -> Result<(), HResult> {
        if let Some(rejit) = self.running.get().and_then(|r| r.rejit.as_ref()) {
            rejit.rejit_error(module, method, function, status);
        }
        self.forward(Callback::ReJITError, |m| {
            m.rejit_error(module, method, function, status)
        })
    }

    fn on_shutdown(&self) {
        let _ = self.forward(Callback::Shutdown, |m| {
            m.shutdown();
            Ok(())
        });
        if let Some(report) = &self.report
            && let Err(payload) = catch_unwind(AssertUnwindSafe(|| report(self)))
        {
            log::write(&format!(
                "the manager's report panicked: {}",
                log::panic_message(&*payload)
            ));
        }
        if let Some(running) = self.running.get() {
            #[cfg(unix)]
            drop(
                running
                    .dial
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .take(),
            );
            if let Some(rejit) = &running.rejit {
                rejit.stop();
            }
            running
                .hosting
                .rewriter
                .for_each_module(|state| state.items.clear());
        }
        drop(self.containers.assemblies.take_all());
        drop(self.containers.app_domains.take_all());
    }
}

/// Hands `add` each instrumentation method's assembly references for the assembly at
/// `path`, except references to that assembly itself (its file name without extension,
/// compared as the binder compares names, ignoring ASCII case).
pub(crate) fn announce(
    methods: &[Arc<dyn InstrumentationMethod>],
    path: &str,
    mut add: impl FnMut(&dyn InstrumentationMethod, &AssemblyName<'_>) -> Result<(), ()>,
) {
    let loading = std::path::Path::new(path)
        .file_stem()
        .and_then(|stem| stem.to_str())
        .unwrap_or("");
    for method in methods {
        let references = guarded(&**method, Callback::GetAssemblyReferences, || {
            method.assembly_references()
        })
        .unwrap_or_default();
        for reference in &references {
            if !reference.name.eq_ignore_ascii_case(loading) {
                // A refusal is the caller's to report; the others are still announced.
                let _ = add(&**method, reference);
            }
        }
    }
}

/// The manager's answer to a callback: its own work for the few it handles, delivery to
/// the subscribers for the others.
macro_rules! manager_callback {
    ($self:ident, Initialize, initialize, ($($a:ident),*)) => { $self.on_initialize($($a),*) };
    ($self:ident, InitializeForAttach, initialize_for_attach, ($($a:ident),*)) => {{
        $(let _ = $a;)*
        Err(HResult::CORPROF_E_PROFILER_NOT_ATTACHABLE)
    }};
    ($self:ident, LoadAsNotificationOnly, load_as_notification_only, ()) => { false };
    ($self:ident, Shutdown, shutdown, ()) => { $self.on_shutdown() };
    ($self:ident, JITCompilationStarted, jit_compilation_started, ($($a:ident),*)) => {
        $self.on_jit_compilation_started($($a),*)
    };
    ($self:ident, ModuleLoadFinished, module_load_finished, ($($a:ident),*)) => {
        $self.on_module_load_finished($($a),*)
    };
    ($self:ident, ModuleUnloadStarted, module_unload_started, ($($a:ident),*)) => {
        $self.on_module_unload_started($($a),*)
    };
    ($self:ident, ModuleUnloadFinished, module_unload_finished, ($($a:ident),*)) => {
        $self.on_module_unload_finished($($a),*)
    };
    ($self:ident, ExceptionUnwindFunctionEnter, exception_unwind_function_enter, ($($a:ident),*)) => {
        $self.on_exception_unwind_function_enter($($a),*)
    };
    ($self:ident, ExceptionUnwindFunctionLeave, exception_unwind_function_leave, ()) => {
        $self.on_exception_unwind_function_leave()
    };
    ($self:ident, ExceptionSearchFilterEnter, exception_search_filter_enter, ($($a:ident),*)) => {{
        $self.with_hooks(|hooks| hooks.filter_enter($($a),*));
        $self.forward(Callback::ExceptionSearchFilterEnter, |m| m.exception_search_filter_enter($($a),*))
    }};
    ($self:ident, ExceptionSearchFilterLeave, exception_search_filter_leave, ()) => {{
        $self.with_hooks(|hooks| hooks.filter_leave());
        $self.forward(Callback::ExceptionSearchFilterLeave, |m| m.exception_search_filter_leave())
    }};
    ($self:ident, ExceptionCatcherEnter, exception_catcher_enter, ($($a:ident),*)) => {{
        $self.with_hooks(|hooks| hooks.catcher_enter());
        $self.forward(Callback::ExceptionCatcherEnter, |m| m.exception_catcher_enter($($a),*))
    }};
    ($self:ident, JITInlining, jit_inlining, ($($a:ident),*)) => { $self.on_jit_inlining($($a),*) };
    ($self:ident, GetReJITParameters, get_rejit_parameters, ($($a:ident),*)) => {
        $self.on_get_rejit_parameters($($a),*)
    };
    ($self:ident, ReJITCompilationStarted, rejit_compilation_started, ($($a:ident),*)) => {
        $self.on_rejit_compilation_started($($a),*)
    };
    ($self:ident, ReJITCompilationFinished, rejit_compilation_finished, ($($a:ident),*)) => {
        $self.on_rejit_compilation_finished($($a),*)
    };
    ($self:ident, ReJITError, rejit_error, ($($a:ident),*)) => { $self.on_rejit_error($($a),*) };
    ($self:ident, AssemblyUnloadFinished, assembly_unload_finished, ($($a:ident),*)) => {
        $self.on_assembly_unload_finished($($a),*)
    };
    ($self:ident, AppDomainShutdownFinished, app_domain_shutdown_finished, ($($a:ident),*)) => {
        $self.on_app_domain_shutdown_finished($($a),*)
    };
    ($self:ident, GetAssemblyReferences, get_assembly_references, ($($a:ident),*)) => {
        $self.on_get_assembly_references($($a),*)
    };
    ($self:ident, JITCachedFunctionSearchStarted, jit_cached_function_search_started, ($($a:ident),*)) => {
        $self.all(Callback::JITCachedFunctionSearchStarted, true, |m| {
            m.jit_cached_function_search_started($($a),*)
        })
    };
    ($self:ident, $slot:ident, $method:ident, ($($a:ident),*)) => {
        $self.forward(Callback::$slot, |m| m.$method($($a),*))
    };
}

/// A callback's return type: `Result<(), HResult>` unless the list says otherwise.
macro_rules! manager_ret {
    () => { Result<(), HResult> };
    ($ret:ty) => { $ret };
}

macro_rules! define_manager_profiler {
    (
        $(
            $vtbl:ident as $konst:ident $(: $parent:ident)? = $iface:literal {
                $(
                    $(#[$doc:meta])*
                    $slot:ident => $method:ident($($arg:ident: $ty:ty),* $(,)?)
                        $(-> $ret:ty = $default:expr)?
                        $(, custom $thunk:ident)?;
                )*
            }
        )*
    ) => {
        /// Every callback: the manager's own work, or delivery to the subscribers.
        #[allow(clippy::too_many_arguments)]
        impl Profiler for Manager {
            $($(
                fn $method(&self $(, $arg: $ty)*) -> manager_ret!($($ret)?) {
                    manager_callback!(self, $slot, $method, ($($arg),*))
                }
            )*)*
        }
    };
}

for_each_callback!(define_manager_profiler);

//! [`Manager`]: a [`Profiler`] hosting several instrumentation methods.

use core::ffi::c_void;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, OnceLock};

use smallvec::SmallVec;

use super::super::jit::{Inlining, JitRewriter};
use super::super::module::{ModuleState, row};
use super::super::outcome::RewriteOutcome;
use super::compose::{EditFailure, compose};
use super::method::{Events, InstrumentationMethod, Interest, ModuleLoad, Owner, Start};
use crate::clr::log;
use crate::clr::profiler::{Callback, Profiler, for_each_callback};
use crate::clr::runtime::ProfilerInfo;
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
    /// The instrumentation methods that started, in editing order.
    methods: Methods,
    /// Per callback, the indices (into `methods`) of its subscribers, in order.
    subscribers: Box<[SmallVec<[u8; 4]>]>,
    rewriter: JitRewriter,
}

/// Counts of what the manager did (for tests and benchmarks).
#[derive(Debug, Default)]
pub struct ManagerCounts {
    /// Compilations of methods no instrumentation method wanted: not decoded.
    pub not_wanted: AtomicU64,
    /// Compilations whose method was decoded for at least one instrumentation method.
    pub decoded: AtomicU64,
    /// Edits rolled back (an error or a panic of one instrumentation method on one
    /// method).
    pub rolled_back: AtomicU64,
}

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
    pending: Vec<(i32, Arc<dyn InstrumentationMethod>)>,
    inlining: Inlining,
    timings: bool,
    running: OnceLock<Running>,
    counts: ManagerCounts,
}

impl Default for Manager {
    fn default() -> Manager {
        Manager::new()
    }
}

impl core::fmt::Debug for Manager {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let names: Vec<&str> = self.pending.iter().map(|(_, m)| m.name()).collect();
        f.debug_struct("Manager")
            .field("methods", &names)
            .field("counts", &self.counts)
            .finish_non_exhaustive()
    }
}

/// The events the manager needs itself: JIT compilations (to rewrite) and module loads
/// and unloads (metadata at load, data items freed at unload).
const OWN_EVENTS: CorPrfMonitor =
    CorPrfMonitor::MONITOR_JIT_COMPILATION.union(CorPrfMonitor::MONITOR_MODULE_LOADS);

impl Manager {
    /// A manager without instrumentation methods.
    pub fn new() -> Manager {
        Manager {
            pending: Vec::new(),
            inlining: Inlining::default(),
            timings: false,
            running: OnceLock::new(),
            counts: ManagerCounts::default(),
        }
    }

    /// Adds `method` with its own [`priority`](InstrumentationMethod::priority).
    pub fn with(self, method: impl InstrumentationMethod) -> Manager {
        let priority = method.priority();
        self.with_priority(method, priority)
    }

    /// Adds `method` with `priority` (higher edits first; ties in the order added).
    pub fn with_priority(mut self, method: impl InstrumentationMethod, priority: i32) -> Manager {
        self.pending.push((priority, Arc::new(method)));
        // Stable: equal priorities keep the order they were added in.
        self.pending
            .sort_by_key(|(priority, _)| core::cmp::Reverse(*priority));
        self
    }

    /// What the rewriter answers the JIT's inlining questions
    /// ([`Inlining::KeepInstrumentation`] by default).
    pub fn with_inlining(mut self, inlining: Inlining) -> Manager {
        self.inlining = inlining;
        self
    }

    /// Times the rewrite pipeline's phases ([`JitRewriter::with_timings`]).
    pub fn with_timings(mut self) -> Manager {
        self.timings = true;
        self
    }

    /// The names of the instrumentation methods, in editing order.
    pub fn names(&self) -> Vec<&str> {
        self.pending.iter().map(|(_, m)| m.name()).collect()
    }

    /// Counts of what it did so far.
    pub fn counts(&self) -> &ManagerCounts {
        &self.counts
    }

    /// The rewriter, once initialized (its timings, its modules).
    pub fn rewriter(&self) -> Option<&JitRewriter> {
        self.running.get().map(|r| &r.rewriter)
    }

    fn on_initialize(&self, info: ProfilerInfo) -> Result<(), HResult> {
        let start = Start { info: &info };
        let mut started: Vec<Arc<dyn InstrumentationMethod>> = Vec::new();
        let mut events = Events {
            low: OWN_EVENTS,
            high: CorPrfHighMonitor::empty(),
        };
        for (_, method) in &self.pending {
            match catch_unwind(AssertUnwindSafe(|| method.start(&start))) {
                Ok(Ok(())) => {
                    let wanted = method.events();
                    events.low |= wanted.low;
                    events.high |= wanted.high;
                    started.push(method.clone());
                }
                Ok(Err(why)) => log::write(&format!(
                    "instrumentation method {} did not start: {why}; it is left out",
                    method.name()
                )),
                Err(payload) => log::write(&format!(
                    "instrumentation method {} panicked at start: {}; it is left out",
                    method.name(),
                    log::panic_message(&*payload)
                )),
            }
        }
        if started.len() > usize::from(u8::MAX) {
            log::write("more than 255 instrumentation methods; none is run");
            return Err(HResult::E_FAIL);
        }
        info.set_event_mask(events.low, events.high)?;
        let methods: Methods = started.into();
        let subscribers = Callback::ALL
            .iter()
            .map(|&callback| {
                (0..methods.len())
                    .filter(|&i| methods[i].callbacks().contains(callback))
                    .map(|i| i as u8)
                    .collect()
            })
            .collect();
        let wanted = methods.clone();
        let mut rewriter = JitRewriter::new(info)
            .with_inlining(self.inlining)
            .with_filter(move |module, token| {
                wanted
                    .iter()
                    .any(|m| m.wants(module, token) != Interest::No)
            });
        if self.timings {
            rewriter = rewriter.with_timings();
        }
        let _ = self.running.set(Running {
            methods,
            subscribers,
            rewriter,
        });
        Ok(())
    }

    /// The subscribers of `callback`, in order (none before initialization).
    fn subscribers(&self, callback: Callback) -> impl Iterator<Item = &dyn InstrumentationMethod> {
        self.running.get().into_iter().flat_map(move |running| {
            running.subscribers[callback as usize]
                .iter()
                .map(|&i| &*running.methods[usize::from(i)])
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
        let answer = self.forward(Callback::JITCompilationStarted, |m| {
            m.jit_compilation_started(function, is_safe_to_block)
        });
        if let Some(running) = self.running.get() {
            self.rewrite(running, function);
        }
        answer
    }

    /// Rewrites `function` with the edits of the instrumentation methods that want it.
    fn rewrite(&self, running: &Running, function: FunctionID) -> RewriteOutcome {
        let methods = &running.methods;
        let select = |module: &ModuleState, token: mdToken| {
            let wanting: SmallVec<[(usize, Interest); 4]> = methods
                .iter()
                .enumerate()
                .filter_map(|(i, m)| {
                    let interest = guarded(&**m, Callback::JITCompilationStarted, || {
                        m.wants(module, token)
                    })
                    .unwrap_or(Interest::No);
                    (interest != Interest::No).then_some((i, interest))
                })
                .collect();
            if wanting.is_empty() {
                self.counts.not_wanted.fetch_add(1, Relaxed);
                return None;
            }
            Some(wanting)
        };
        running
            .rewriter
            .rewrite_selected(function, select, |wanting, body, rewrite| {
                self.counts.decoded.fetch_add(1, Relaxed);
                let all: SmallVec<[&dyn InstrumentationMethod; 4]> =
                    methods.iter().map(|m| &**m).collect();
                let module = rewrite.module;
                let token = rewrite.token;
                compose(&all, &wanting, body, rewrite, &mut |index, failure| {
                    self.counts.rolled_back.fetch_add(1, Relaxed);
                    log_rollback(&*methods[index], index, module, token, &failure);
                })
            })
    }

    fn on_module_load_finished(&self, module: ModuleID, status: HResult) -> Result<(), HResult> {
        if let (true, Some(running)) = (status.is_ok(), self.running.get())
            && let Ok(state) = running.rewriter.module(module)
        {
            let count = running.methods.len();
            for (index, method) in running.methods.iter().enumerate() {
                let load = ModuleLoad {
                    module: &state,
                    owner: Owner { index, count },
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
            running.rewriter.module_unloaded(module);
        }
        answer
    }

    fn on_jit_inlining(&self, caller: FunctionID, callee: FunctionID) -> bool {
        let theirs = self.all(Callback::JITInlining, true, |m| {
            m.jit_inlining(caller, callee)
        });
        theirs
            && self
                .running
                .get()
                .is_none_or(|r| r.rewriter.jit_inlining(caller, callee))
    }

    fn on_shutdown(&self) {
        let _ = self.forward(Callback::Shutdown, |m| {
            m.shutdown();
            Ok(())
        });
        if let Some(running) = self.running.get() {
            running
                .rewriter
                .for_each_module(|state| state.items.clear());
        }
    }
}

/// Runs `f` for `method` inside a panic guard: a panic is logged with the method's name
/// and the callback, and gives `None`.
fn guarded<R>(
    method: &dyn InstrumentationMethod,
    callback: Callback,
    f: impl FnOnce() -> R,
) -> Option<R> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => Some(r),
        Err(payload) => {
            let message = log::panic_message(&*payload);
            log::throttled(
                &format!(
                    "instrumentation method {} panicked in {}",
                    method.name(),
                    callback.name()
                ),
                || {
                    format!(
                        "instrumentation method {} panicked in {}: {message}",
                        method.name(),
                        callback.name()
                    )
                },
            );
            None
        }
    }
}

/// Logs a rolled-back edit, once per (instrumentation method, method) while the module
/// is loaded.
#[cold]
fn log_rollback(
    method: &dyn InstrumentationMethod,
    index: usize,
    module: &ModuleState,
    token: mdToken,
    failure: &EditFailure,
) {
    if !module.items.first_failure(index, row(token)) {
        return;
    }
    let name = crate::disasm::method_name(module.metadata(), token);
    log::write(&format!(
        "instrumentation method {}: {name} (0x{token:08x}): {failure}; its edits of \
         this method are rolled back, the others' kept",
        method.name()
    ));
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
    ($self:ident, JITInlining, jit_inlining, ($($a:ident),*)) => { $self.on_jit_inlining($($a),*) };
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

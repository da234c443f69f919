//! The manager's `Initialize`: a short sequence of named steps, each of which fails
//! closed once (then no instrumentation method runs, the runtime is asked for no event,
//! and the program runs unchanged).

use std::sync::Arc;
#[cfg(unix)]
use std::sync::Mutex;

use super::events::{EventMasks, Events, EventsHandle, with_subscriptions};
use super::hosting::{Hosting, NamedTarget};
use super::manager::{Manager, OWN_EVENTS, Running};
use super::method::{InstrumentationMethod, Start};
use super::plan::InliningCallers;
use super::ready_to_run::ReadyToRun;
use super::rejit::ReJitController;
use super::routing::Routing;
use crate::clr::hooks::{self, HookError, HookSubscriber, HookTable};
use crate::clr::log;
use crate::clr::rewrite::engine::Engine;
use crate::clr::runtime::guard::spawn_profiler_thread;
use crate::clr::runtime::{ClrError, ProfilerInfo};
use crate::clr::sys::{CorPrfHighMonitor, CorPrfMonitor, HResult};

/// How the runtime loaded the profiler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival {
    /// At start-up (`Initialize`), named by the `CORECLR_PROFILER*` variables.
    Startup,
    /// Into a running process (`InitializeForAttach`), by a diagnostics client.
    Attach,
}

/// Why the manager does not run: the first step of its start that failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum StartError {
    /// Instrumentation methods did not start (each one's reason is logged as it fails).
    #[error("{0} instrumentation method(s) did not start")]
    MethodsDidNotStart(usize),
    /// An instrumentation method subscribes to a callback whose event flag the manager
    /// cannot ask for.
    #[error(
        "instrumentation method {method} subscribes to {callback}, which needs {flag}, \
         which the manager cannot ask for: {why}"
    )]
    CallbackWithoutEvents {
        /// The instrumentation method.
        method: String,
        /// The callback.
        callback: &'static str,
        /// The flag it needs.
        flag: &'static str,
        /// Why the manager cannot ask for it.
        why: &'static str,
    },
    /// An instrumentation method disables ReadyToRun code
    /// (`COR_PRF_DISABLE_ALL_NGEN_IMAGES`) in a manager that keeps it
    /// ([`ReadyToRun::Keep`]).
    #[error(
        "instrumentation method {0} asks for COR_PRF_DISABLE_ALL_NGEN_IMAGES, but the manager \
         keeps ReadyToRun code (ready_to_run = \"keep\")"
    )]
    ReadyToRunKept(String),
    /// An instrumentation method's `targets` panicked.
    #[error("instrumentation method {0} panicked when asked its targets")]
    TargetsPanicked(String),
    /// More instrumentation methods than the manager routes (255).
    #[error("more than 255 instrumentation methods")]
    TooManyMethods,
    /// The live dial cannot listen on its socket.
    #[cfg(unix)]
    #[error("the dial cannot listen: {0}")]
    DialCannotListen(#[source] crate::clr::dial::ControlError),
    /// The runtime refused the events asked for.
    #[error("the runtime refused the events: {0}")]
    Events(#[source] ClrError),
    /// The enter/leave/tailcall hooks cannot be registered.
    #[error("the enter/leave hooks cannot be registered: {0}")]
    Hooks(#[source] HookError),
    /// Attached to a running process, the manager was asked for what the runtime takes
    /// only at start-up.
    #[error("not possible when attaching to a running process: {0}")]
    NotAtAttach(String),
}

impl Manager {
    /// `Initialize`: starts the instrumentation methods, the engine, ReJIT, the dial and
    /// the hooks, and asks the runtime for their events; or, when any step fails, asks
    /// for no event and runs nothing.
    pub(super) fn on_initialize(&self, info: ProfilerInfo) -> Result<(), HResult> {
        if self.pending.is_empty() {
            // Nothing to host: attached, asking for no event.
            return ask_for_nothing(&info);
        }
        let masks = self.event_masks();
        match self.start(&info, &masks, Arrival::Startup) {
            Ok(running) => {
                let _ = self.running.set(running);
                Ok(())
            }
            Err(StartError::Events(e)) => Err(HResult::from(e)),
            Err(e) => {
                // Fail closed: attached, asking for no event, rewriting nothing.
                masks.close();
                log_failed_start(&e);
                ask_for_nothing(&info)
            }
        }
    }

    /// The steps, in order; the first failure ends the start. Attached to a running
    /// process, ReJIT is on (the only way to change code compiled already) and what the
    /// runtime takes only at start-up is refused first.
    pub(super) fn start(
        &self,
        info: &ProfilerInfo,
        masks: &Arc<EventMasks>,
        arrival: Arrival,
    ) -> Result<Running, StartError> {
        let attach = arrival == Arrival::Attach;
        if attach && self.ready_to_run == Some(ReadyToRun::Disable) {
            return Err(StartError::NotAtAttach(
                "ready_to_run = \"disable\" (COR_PRF_DISABLE_ALL_NGEN_IMAGES is taken only at start-up)"
                    .to_owned(),
            ));
        }
        let references = self.start_methods(info, masks)?;
        let targets = self.targets()?;
        let ready_to_run = self.ready_to_run_runs(masks)?;
        let rejit = match attach {
            true => Some(self.rejit.unwrap_or_default()),
            false => self.rejit,
        };
        let callers = rejit.or_else(|| {
            // Targets in precompiled code are reached by ReJIT only.
            let method = targets.iter().position(|t| !t.is_empty())?;
            if !ready_to_run {
                return None;
            }
            log::write(&format!(
                "instrumentation method {} has targets and ReadyToRun code is kept: ReJIT is on",
                self.pending[method].method.name()
            ));
            Some(InliningCallers::default())
        });
        if callers.is_some() {
            masks.add_own(Events {
                low: CorPrfMonitor::ENABLE_REJIT,
                high: CorPrfHighMonitor::empty(),
            });
        }
        let hosting = Arc::new(self.hosting(info, targets, callers.is_some()));
        let rejit = self.rejit_controller(info, &hosting, callers);
        #[cfg(unix)]
        let dial = Mutex::new(self.start_dial(rejit.as_ref())?);
        let subscribers = self.hook_subscribers();
        masks.add_own(self.extra_events(&subscribers, references));
        if attach {
            self.attachable(masks, &subscribers)?;
        }
        masks.arm(info).map_err(StartError::Events)?;
        let hooks = self.register_hooks(info, subscribers)?;
        let driver = rejit.as_ref().and_then(start_driver);
        Ok(Running {
            routing: Routing::new(hosting.methods.clone()),
            hosting,
            rejit,
            driver: std::sync::Mutex::new(driver),
            hooks,
            #[cfg(unix)]
            dial,
        })
    }

    /// The masks of the manager's own events and each instrumentation method's.
    pub(super) fn event_masks(&self) -> Arc<EventMasks> {
        let mut own = match self.rejit {
            Some(_) => OWN_EVENTS.union(CorPrfMonitor::ENABLE_REJIT),
            None => OWN_EVENTS,
        };
        if self.ready_to_run == Some(ReadyToRun::Disable) {
            own |= CorPrfMonitor::DISABLE_ALL_NGEN_IMAGES;
        }
        EventMasks::new(
            Events {
                low: own,
                high: CorPrfHighMonitor::empty(),
            },
            vec![Events::default(); self.pending.len()],
        )
    }

    /// Starts every instrumentation method (each one, also after another failed, so
    /// that every reason is logged); whether any announces assembly references.
    fn start_methods(
        &self,
        info: &ProfilerInfo,
        masks: &Arc<EventMasks>,
    ) -> Result<bool, StartError> {
        let mut failed = 0;
        let mut unavailable = None;
        let mut references = false;
        for (index, hosted) in self.pending.iter().enumerate() {
            let method = &hosted.method;
            let handle = EventsHandle::new(masks.clone(), index);
            let start = Start {
                info,
                options: &hosted.options,
                events: &handle,
            };
            match log::contain(|| method.start(&start)) {
                Ok(Ok(())) => {
                    // What it declares, with what it set during its start, and what
                    // its callbacks need.
                    match start_events(&**method, &handle, masks.own()) {
                        Ok(events) => {
                            let _ = handle.set(events);
                        }
                        Err(e) => {
                            unavailable.get_or_insert(e);
                        }
                    }
                    references |= !method.assembly_references().is_empty();
                }
                Ok(Err(why)) => {
                    failed += 1;
                    log::write(&format!(
                        "instrumentation method {} did not start: {why}",
                        method.name()
                    ));
                }
                Err(message) => {
                    failed += 1;
                    log::write(&format!(
                        "instrumentation method {} panicked at start: {message}",
                        method.name(),
                    ));
                }
            }
        }
        if failed > 0 {
            return Err(StartError::MethodsDidNotStart(failed));
        }
        if let Some(e) = unavailable {
            return Err(e);
        }
        if self.pending.len() > usize::from(u8::MAX) {
            return Err(StartError::TooManyMethods);
        }
        Ok(references)
    }

    /// Each instrumentation method's targets, asked once (after its start).
    ///
    /// # Errors
    /// One panicked: the start fails closed.
    fn targets(&self) -> Result<Box<[Box<[NamedTarget]>]>, StartError> {
        self.pending
            .iter()
            .map(|hosted| {
                let method = &hosted.method;
                log::contain(|| method.targets())
                    .map(|selectors| selectors.into_iter().map(NamedTarget::new).collect())
                    .map_err(|_| StartError::TargetsPanicked(method.name().to_owned()))
            })
            .collect()
    }

    /// Whether ReadyToRun code runs: neither the manager nor an instrumentation method
    /// disables it.
    ///
    /// # Errors
    /// An instrumentation method disables it in a manager that keeps it.
    fn ready_to_run_runs(&self, masks: &EventMasks) -> Result<bool, StartError> {
        let disabled = masks
            .union()
            .low
            .contains(CorPrfMonitor::DISABLE_ALL_NGEN_IMAGES);
        if disabled && self.ready_to_run == Some(ReadyToRun::Keep) {
            let index = (0..self.pending.len())
                .find(|&i| {
                    masks
                        .get(i)
                        .low
                        .contains(CorPrfMonitor::DISABLE_ALL_NGEN_IMAGES)
                })
                .unwrap_or(0);
            return Err(StartError::ReadyToRunKept(
                self.pending[index].method.name().to_owned(),
            ));
        }
        Ok(!disabled)
    }

    /// The instrumentation methods with their options and targets, and the rewrite
    /// engine (which keeps the pristine IL of what it rewrites when `rejit` is on).
    fn hosting(
        &self,
        info: &ProfilerInfo,
        targets: Box<[Box<[NamedTarget]>]>,
        rejit: bool,
    ) -> Hosting {
        let mut engine = Engine::new(info.clone());
        engine.show_il(&self.show_il);
        if self.timings {
            engine.time_phases();
        }
        if rejit {
            // Every ReJIT version starts from the pristine IL.
            engine.keep_pristine_il();
        }
        Hosting {
            methods: self.pending.iter().map(|h| h.method.clone()).collect(),
            options: self.pending.iter().map(|h| h.options.clone()).collect(),
            containers: self.containers.clone(),
            engine,
            counts: self.counts.clone(),
            targets,
            priorities: self.pending.iter().map(|h| h.priority).collect(),
            added: std::sync::RwLock::new(Arc::from(Vec::new())),
            loader: self.loader.clone(),
            detaching: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// The ReJIT controller, when ReJIT is on, for the runtime in hand (logged).
    fn rejit_controller(
        &self,
        info: &ProfilerInfo,
        hosting: &Arc<Hosting>,
        callers: Option<InliningCallers>,
    ) -> Option<Arc<ReJitController>> {
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
        let callers = callers?;
        Some(Arc::new(ReJitController::new(
            hosting.clone(),
            callers,
            runtime.as_ref(),
        )))
    }

    /// The live dial, when asked for (it needs ReJIT, which asking for it turns on).
    #[cfg(unix)]
    fn start_dial(
        &self,
        rejit: Option<&Arc<ReJitController>>,
    ) -> Result<Option<crate::clr::dial::ControlServer>, StartError> {
        let (Some(path), Some(controller)) = (&self.dial, rejit) else {
            return Ok(None);
        };
        let control = super::rejit_control::ReJitControl {
            controller: controller.clone(),
        };
        let server = crate::clr::dial::ControlServer::start(path, Arc::new(control))
            .map_err(StartError::DialCannotListen)?;
        log::write(&format!("dial listening on {}", server.path().display()));
        Ok(Some(server))
    }

    /// The instrumentation methods' hook subscribers (a panic counts as none).
    fn hook_subscribers(&self) -> Vec<Arc<dyn HookSubscriber>> {
        self.pending
            .iter()
            .filter_map(|h| log::contain(|| h.method.hook_subscriber()).ok().flatten())
            .collect()
    }

    /// The events the hooks and the announced assembly references need.
    fn extra_events(&self, subscribers: &[Arc<dyn HookSubscriber>], references: bool) -> Events {
        let mut events = Events::default();
        if !subscribers.is_empty() {
            events.low = hooks::events_for(self.hook_path, subscribers);
        }
        if references {
            events.high = CorPrfHighMonitor::ADD_ASSEMBLY_REFERENCES;
        }
        events
    }

    /// The hooks' table, when an instrumentation method subscribed to them.
    fn register_hooks(
        &self,
        info: &ProfilerInfo,
        subscribers: Vec<Arc<dyn HookSubscriber>>,
    ) -> Result<Option<Arc<HookTable>>, StartError> {
        if subscribers.is_empty() {
            return Ok(None);
        }
        hooks::register(info, self.hook_path, subscribers)
            .map(Some)
            .map_err(StartError::Hooks)
    }
}

/// The events of an instrumentation method that started: what it declares, with what it
/// set during its start, and what its callbacks need.
fn start_events(
    method: &dyn InstrumentationMethod,
    handle: &EventsHandle,
    own: Events,
) -> Result<Events, StartError> {
    let (declared, set) = (method.events(), handle.get());
    let started = Events {
        low: declared.low | set.low,
        high: declared.high | set.high,
    };
    let name = method.name();
    with_subscriptions(
        name,
        method.callbacks(),
        started,
        method.deferred_events(),
        own,
    )
    .map_err(|e| StartError::CallbackWithoutEvents {
        method: name.to_owned(),
        callback: e.callback.name(),
        flag: e.flag,
        why: e.why,
    })
}

/// Starts the ReJIT driver thread. If it cannot start, requests wait in vain and say
/// so; first JITs still follow them.
fn start_driver(controller: &Arc<ReJitController>) -> Option<std::thread::JoinHandle<()>> {
    let driver = controller.clone();
    spawn_profiler_thread("ilrewrite-rejit", move || driver.drive())
        .inspect_err(|e| log::write(&format!("the ReJIT driver thread did not start: {e}")))
        .ok()
}

/// What a failed start logs: why (each instrumentation method that did not start was
/// logged as it failed), then that nothing runs.
fn log_failed_start(e: &StartError) {
    const NOTHING_RUNS: &str = "no instrumentation method runs: the program runs unchanged";
    match e {
        StartError::MethodsDidNotStart(_) => log::write(NOTHING_RUNS),
        StartError::Hooks(_) => log::write(&format!("{e}; {NOTHING_RUNS}")),
        _ => {
            log::write(&e.to_string());
            log::write(NOTHING_RUNS);
        }
    }
}

/// Asks the runtime for no event: the profiler stays attached and does nothing.
fn ask_for_nothing(info: &ProfilerInfo) -> Result<(), HResult> {
    info.set_event_mask(CorPrfMonitor::empty(), CorPrfHighMonitor::empty())
        .map_err(|_| HResult::E_FAIL)
}

//! [`Manager`]: a [`Profiler`](crate::clr::Profiler) hosting several instrumentation
//! methods; what it is configured with, and what it has once running.

use std::sync::{Arc, Mutex, OnceLock};

use super::config::{ConfigError, Configuration, Options};
use super::hosting::Hosting;
use super::method::{InstrumentationMethod, LibraryLoader};
use super::plan::InliningCallers;
use super::ready_to_run::ReadyToRun;
use super::rejit::ReJitController;
use super::rejit_control::ReJitControl;
use super::report::ManagerCounts;
use super::routing::Routing;
use crate::clr::hooks::{HookPath, HookTable};
use crate::clr::rewrite::items::Containers;
use crate::clr::rewrite::{Inlining, Phase};
use crate::clr::sys::CorPrfMonitor;
use crate::selector::Selector;

/// What the manager has once initialized: one sub-object per concern.
pub(super) struct Running {
    /// The instrumentation methods that started, their options, the rewrite engine.
    pub(super) hosting: Arc<Hosting>,
    /// Which instrumentation methods hear which callback.
    pub(super) routing: Routing,
    /// The ReJIT controller, when ReJIT is on ([`Manager::with_rejit`]).
    pub(super) rejit: Option<Arc<ReJitController>>,
    /// The ReJIT driver's thread, joined before the profiler detaches.
    pub(super) driver: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// The enter/leave/tailcall hooks, when an instrumentation method subscribed.
    pub(super) hooks: Option<Arc<HookTable>>,
    /// The live dial, when it listens ([`Manager::with_dial`]); closed at shutdown.
    #[cfg(unix)]
    pub(super) dial: Mutex<Option<crate::clr::dial::ControlServer>>,
}

/// An instrumentation method as registered: its priority and options.
pub(super) struct Hosted {
    pub(super) priority: i32,
    pub(super) method: Arc<dyn InstrumentationMethod>,
    pub(super) options: Options,
}

/// What a host runs at shutdown ([`Manager::with_report`]).
pub(super) type Report = Box<dyn Fn(&Manager) + Send + Sync>;

/// A profiler hosting several instrumentation methods in one process: it asks the
/// runtime for the union of their events, delivers each callback only to those that
/// subscribed to it, and rewrites each method they want once, through the rewrite
/// engine, with all their edits on one shared body.
///
/// At each JIT compilation of a method not yet rewritten, each instrumentation method's
/// [`wants`](InstrumentationMethod::wants) is asked; if none wants it, the method is not
/// read or decoded. Otherwise the pipeline decodes it once, the manager makes it
/// single-ret if one of them asks, runs the edits in priority order (descending, ties
/// in registration order), and the pipeline verifies, encodes and hands over the body
/// with one IL map. An edit that fails or panics is rolled back alone and logged once
/// per (instrumentation method, method); the others' edits stay. Inlining is answered
/// as [`JitRewriter::jit_inlining`](crate::clr::JitRewriter::jit_inlining) does, with "any instrumentation method wants it" as
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
///
/// An instrumentation method that doubles the `int32` result of the methods named in its
/// option `method`, and a profiler hosting it with what a configuration file asks:
///
/// ```no_run
/// use std::sync::{Arc, OnceLock};
/// use ilrewrite::body::MethodBody;
/// use ilrewrite::clr::{
///     Candidate, Configuration, InstrumentationMethod, Interest, Manager, MethodEdit, MethodError,
///     OptionKind, OptionSpec, Profiler, Start,
/// };
/// use ilrewrite::disasm::method_name;
/// use ilrewrite::graph::Incoming;
/// use ilrewrite::{Instruction, OpCode};
///
/// #[derive(Default)]
/// struct Double {
///     method: OnceLock<String>,
/// }
///
/// impl Profiler for Double {} // the callbacks it subscribes to: none
///
/// impl InstrumentationMethod for Double {
///     fn name(&self) -> &str {
///         "double"
///     }
///     fn options(&self) -> &[OptionSpec] {
///         const OPTIONS: [OptionSpec; 1] = [OptionSpec::new("method", OptionKind::String)];
///         &OPTIONS
///     }
///     fn start(&self, start: &Start<'_>) -> Result<(), MethodError> {
///         let method = start.options().string("method").ok_or("`method` is required")?;
///         let _ = self.method.set(method.to_owned());
///         Ok(())
///     }
///     fn wants(&self, candidate: &Candidate<'_>) -> Interest {
///         let name = method_name(candidate.module().metadata(), candidate.token());
///         match self.method.get() == Some(&format!("{}::{}", name.owner, name.name)) {
///             true => Interest::Edit,
///             false => Interest::No,
///         }
///     }
///     fn edit(&self, body: &mut MethodBody, _: &mut MethodEdit<'_, '_>) -> ilrewrite::Result<bool> {
///         // Assumes an int32 result (MethodEdit::method().signature() tells).
///         let rets: Vec<_> = body.instrs.opcodes().filter(|(_, op)| *op == OpCode::Ret).collect();
///         for &(ret, _) in &rets {
///             // Redirect: a branch to the `ret` runs the multiplication too.
///             body.insert_before(ret, Instruction::ldc_i4(2), Incoming::Redirect)?;
///             body.insert_before(ret, Instruction::simple(OpCode::Mul), Incoming::Keep)?;
///         }
///         Ok(!rets.is_empty())
///     }
/// }
///
/// fn profiler() -> Manager {
///     let offered: Vec<Arc<dyn InstrumentationMethod>> = vec![Arc::new(Double::default())];
///     let Some(path) = std::env::var_os("MY_PROFILER_CONFIG") else {
///         return Manager::new(); // hosts nothing, asks for no event
///     };
///     Configuration::read(path.as_ref())
///         .and_then(|configuration| Manager::configured(&configuration, &offered))
///         .unwrap_or_else(|error| {
///             eprintln!("my-profiler: {error}; nothing is rewritten"); // file:line:column: ...
///             Manager::new()
///         })
/// }
///
/// ilrewrite::export_profiler!(clsid = "{1D2E3F40-5A6B-4C7D-8E9F-A0B1C2D3E4F5}", profiler = profiler);
/// ```
pub struct Manager {
    /// Registered, in editing order.
    pub(super) pending: Vec<Hosted>,
    pub(super) inlining: Inlining,
    pub(super) timings: bool,
    pub(super) report: Option<Report>,
    pub(super) running: OnceLock<Running>,
    /// The data items on assemblies and app domains.
    pub(super) containers: Arc<Containers>,
    pub(super) counts: Arc<ManagerCounts>,
    /// ReJIT, when on: what to do with callers that inlined a method.
    pub(super) rejit: Option<InliningCallers>,
    /// The live dial's socket, when asked for.
    #[cfg(unix)]
    pub(super) dial: Option<std::path::PathBuf>,
    /// The path the hooks run on, when an instrumentation method subscribes to them.
    pub(super) hook_path: HookPath,
    /// What to do with ReadyToRun code (`None`: what the instrumentation methods' events
    /// ask).
    pub(super) ready_to_run: Option<ReadyToRun>,
    /// The methods whose IL handed over is logged.
    pub(super) show_il: Vec<Selector>,
    /// Loads the instrumentation methods of libraries named while the program runs.
    pub(super) loader: Option<Arc<LibraryLoader>>,
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
pub(super) const OWN_EVENTS: CorPrfMonitor = CorPrfMonitor::MONITOR_JIT_COMPILATION
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
            ready_to_run: None,
            show_il: Vec::new(),
            loader: None,
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
        Manager::configured_with_loader(configuration, available, &|path| {
            Err(format!(
                "this profiler loads no instrumentation method libraries ({} not loaded)",
                path.display()
            ))
        })
    }

    /// As [`Manager::configured`], with `load` making the instrumentation method of an
    /// entry that names a `library` (`LibraryMethod::load` for the C ABI's libraries):
    /// it must be called what the entry's `name` says. Library entries and `available`
    /// ones compose in one priority order.
    ///
    /// # Errors
    /// Those of [`Manager::configured`]; a library `load` refuses (its reason, at the
    /// entry's place), or one whose instrumentation method has another name. Then no
    /// instrumentation method runs.
    pub fn configured_with_loader(
        configuration: &Configuration,
        available: &[Arc<dyn InstrumentationMethod>],
        load: &LibraryLoader,
    ) -> Result<Manager, ConfigError> {
        let mut manager = Manager::new();
        manager.ready_to_run = configuration.ready_to_run();
        manager.show_il = configuration.show_il().to_vec();
        for entry in configuration.methods() {
            let loaded;
            let found = match &entry.library {
                Some(path) => {
                    loaded = load(path).map_err(|why| configuration.error(entry.at, why))?;
                    if loaded.name() != entry.name {
                        return Err(configuration.error(
                            entry.at,
                            format!(
                                "{} is instrumentation method {:?}, not {:?}",
                                path.display(),
                                loaded.name(),
                                entry.name
                            ),
                        ));
                    }
                    Some(&loaded)
                }
                None => available.iter().find(|m| m.name() == entry.name),
            };
            let Some(method) = found else {
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
            let options = entry.options.checked(&entry.name, method.options())?;
            if entry.enabled {
                let priority = entry.priority.unwrap_or_else(|| method.priority());
                manager = manager.host(method.clone(), priority, options);
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
    /// the rewrite pipeline's phases ([`Manager::timings`]).
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

    /// What to do with ReadyToRun code. Without this call, it runs unless an
    /// instrumentation method's events disable it.
    pub fn with_ready_to_run(mut self, ready_to_run: ReadyToRun) -> Manager {
        self.ready_to_run = Some(ready_to_run);
        self
    }

    /// Logs the IL handed over to the runtime for each method `selectors` select, at
    /// first JIT and at each ReJIT, as a listing (the method's name, `.maxstack`, the
    /// locals, the instructions and clauses with their tokens resolved): what the
    /// instrumentation methods together made of it. A diagnostic: it costs a listing per
    /// selected rewrite (`[manager] show_il = [...]` in a configuration).
    pub fn with_show_il(mut self, selectors: Vec<Selector>) -> Manager {
        self.show_il = selectors;
        self
    }

    /// Loads instrumentation methods from libraries named while the program runs (the
    /// dial's `add`, [`ReJitControl::add_library`]) with `loader`
    /// (`LibraryMethod::loader` for the C ABI). Without it such requests are refused.
    pub fn with_library_loader(mut self, loader: Arc<LibraryLoader>) -> Manager {
        self.loader = Some(loader);
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

    /// The names of the instrumentation methods that run, in editing order: all of
    /// them once initialized (each one started), none before or when one did not start
    /// (then none runs: the program runs unchanged).
    pub fn running(&self) -> Vec<&str> {
        match self.running.get() {
            Some(_) => self.names(),
            None => Vec::new(),
        }
    }

    /// The names of the instrumentation methods, in editing order.
    pub fn names(&self) -> Vec<&str> {
        self.pending.iter().map(|h| h.method.name()).collect()
    }

    /// Counts of what it did so far.
    pub fn counts(&self) -> &ManagerCounts {
        &self.counts
    }

    /// Nanoseconds spent so far in each phase of the rewrite pipeline, first JITs and
    /// ReJIT versions together, once running with [`Manager::with_timings`].
    pub fn timings(&self) -> Option<[(Phase, u64); Phase::ALL.len()]> {
        self.running.get()?.hosting.engine.timings()
    }
}

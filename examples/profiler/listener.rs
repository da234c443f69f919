//! `listener` and `listener2`: edit nothing; each counts every callback it receives,
//! to show that each instrumentation method receives the callbacks it subscribed to
//! (its `callbacks` option) and no others. It declares no event: the manager asks for
//! those its callbacks need. With option `from_assembly`, a listener defers the events
//! of its callbacks and asks for them only once a module of that assembly has loaded
//! (through its events handle): what it receives before is nothing.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

use ilrewrite::body::MethodBody;
use ilrewrite::clr::sys::{
    AppDomainID, AssemblyID, ClassID, CorPrfHighMonitor, CorPrfMonitor, FunctionID, HResult,
    ModuleID, ObjectID, ThreadID,
};
use ilrewrite::clr::{
    Callback, Callbacks, Candidate, Events, EventsHandle, InstrumentationMethod, Interest,
    MethodEdit, MethodError, ModuleLoad, OptionKind, OptionSpec, Profiler, Start,
};

/// Counts the callbacks it receives.
#[derive(Debug)]
pub struct Listener {
    name: &'static str,
    subscribed: OnceLock<Callbacks>,
    received: Vec<AtomicU64>,
    /// Its option `from_assembly`, and its events handle to use when it loads.
    later: OnceLock<(String, EventsHandle)>,
    /// Whether its events were turned on by `from_assembly`'s load.
    pub switched: AtomicBool,
}

impl Listener {
    pub fn new(name: &'static str) -> Listener {
        Listener {
            name,
            subscribed: OnceLock::new(),
            received: Callback::ALL.iter().map(|_| AtomicU64::new(0)).collect(),
            later: OnceLock::new(),
            switched: AtomicBool::new(false),
        }
    }

    /// The events its callbacks need ([`Callback::events`]).
    fn needed(&self) -> Events {
        let mut needed = Events {
            low: CorPrfMonitor::empty(),
            high: CorPrfHighMonitor::empty(),
        };
        for callback in Callback::ALL
            .iter()
            .filter(|&&c| self.callbacks().contains(c))
        {
            needed.low |= callback.events().low;
            needed.high |= callback.events().high;
        }
        needed
    }

    fn got(&self, callback: Callback) {
        self.received[callback as usize].fetch_add(1, Relaxed);
    }

    /// What it subscribed to and what it received: (callback, count), every callback
    /// it subscribed to or received.
    pub fn report(&self) -> Vec<(Callback, bool, u64)> {
        let subscribed = self.callbacks();
        Callback::ALL
            .iter()
            .map(|&c| {
                (
                    c,
                    subscribed.contains(c),
                    self.received[c as usize].load(Relaxed),
                )
            })
            .filter(|&(_, subscribed, count)| subscribed || count > 0)
            .collect()
    }
}

impl Profiler for Listener {
    fn module_load_started(&self, _: ModuleID) -> Result<(), HResult> {
        self.got(Callback::ModuleLoadStarted);
        Ok(())
    }
    fn module_load_finished(&self, _: ModuleID, _: HResult) -> Result<(), HResult> {
        self.got(Callback::ModuleLoadFinished);
        Ok(())
    }
    fn module_unload_started(&self, _: ModuleID) -> Result<(), HResult> {
        self.got(Callback::ModuleUnloadStarted);
        Ok(())
    }
    fn module_attached_to_assembly(&self, _: ModuleID, _: AssemblyID) -> Result<(), HResult> {
        self.got(Callback::ModuleAttachedToAssembly);
        Ok(())
    }
    fn assembly_load_finished(&self, _: AssemblyID, _: HResult) -> Result<(), HResult> {
        self.got(Callback::AssemblyLoadFinished);
        Ok(())
    }
    fn app_domain_creation_finished(&self, _: AppDomainID, _: HResult) -> Result<(), HResult> {
        self.got(Callback::AppDomainCreationFinished);
        Ok(())
    }
    fn class_load_started(&self, _: ClassID) -> Result<(), HResult> {
        self.got(Callback::ClassLoadStarted);
        Ok(())
    }
    fn class_load_finished(&self, _: ClassID, _: HResult) -> Result<(), HResult> {
        self.got(Callback::ClassLoadFinished);
        Ok(())
    }
    fn jit_compilation_started(&self, _: FunctionID, _: bool) -> Result<(), HResult> {
        self.got(Callback::JITCompilationStarted);
        Ok(())
    }
    fn jit_compilation_finished(&self, _: FunctionID, _: HResult, _: bool) -> Result<(), HResult> {
        self.got(Callback::JITCompilationFinished);
        Ok(())
    }
    fn jit_inlining(&self, _: FunctionID, _: FunctionID) -> bool {
        self.got(Callback::JITInlining);
        true
    }
    fn exception_thrown(&self, _: ObjectID) -> Result<(), HResult> {
        self.got(Callback::ExceptionThrown);
        Ok(())
    }
    fn thread_created(&self, _: ThreadID) -> Result<(), HResult> {
        self.got(Callback::ThreadCreated);
        Ok(())
    }
    fn shutdown(&self) {
        self.got(Callback::Shutdown);
    }
}

impl InstrumentationMethod for Listener {
    fn name(&self) -> &str {
        self.name
    }
    fn deferred_events(&self) -> Events {
        match self.later.get() {
            // Asked for when `from_assembly` loads.
            Some(_) => self.needed(),
            None => Events::default(),
        }
    }
    fn options(&self) -> &[OptionSpec] {
        const OPTIONS: [OptionSpec; 2] = [
            OptionSpec::new("callbacks", OptionKind::Strings),
            OptionSpec::new("from_assembly", OptionKind::String),
        ];
        &OPTIONS
    }
    fn callbacks(&self) -> Callbacks {
        self.subscribed
            .get()
            .copied()
            .unwrap_or(Callbacks::empty().with(Callback::ModuleLoadFinished))
    }
    fn start(&self, start: &Start<'_>) -> Result<(), MethodError> {
        if let Some(assembly) = start.options().string("from_assembly") {
            let _ = self.later.set((assembly.to_owned(), start.events()));
        }
        let Some(names) = start.options().strings("callbacks") else {
            return Ok(());
        };
        let mut subscribed = Callbacks::empty();
        for name in names {
            let callback = Callback::ALL
                .iter()
                .find(|c| c.name() == name)
                .ok_or_else(|| {
                    let why = format!("{name:?} is not a callback of ICorProfilerCallback");
                    start.options().invalid("callbacks", &why).to_string()
                })?;
            subscribed = subscribed.with(*callback);
        }
        let _ = self.subscribed.set(subscribed);
        Ok(())
    }
    fn module_loaded(&self, module: &ModuleLoad<'_>) -> Result<(), MethodError> {
        let (Some((assembly, handle)), Some(facts)) = (self.later.get(), module.facts()) else {
            return Ok(());
        };
        if facts.assembly_name == *assembly && !self.switched.swap(true, Relaxed) {
            handle
                .set(self.needed())
                .map_err(|_| ilrewrite::Error::Unencodable {
                    what: "the runtime refused the listener's events",
                })?;
        }
        Ok(())
    }
    fn wants(&self, _: &Candidate<'_>) -> Interest {
        Interest::No
    }
    fn edit(&self, _: &mut MethodBody, _: &mut MethodEdit<'_, '_>) -> ilrewrite::Result<bool> {
        Ok(false)
    }
}

//! The manager's answers to the runtime's callbacks other than `Initialize` and the
//! first JIT: module, assembly and app-domain lifetimes (data items, metadata at load,
//! the hooks' and ReJIT's records), exception unwinding (the hooks' frames), ReJIT, and
//! shutdown; then the [`Profiler`] implementation that routes every callback.

use core::ffi::c_void;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
#[cfg(unix)]
use std::sync::{Mutex, PoisonError};

use super::manager::{Manager, Running};
use super::method::{InstrumentationMethod, ModuleLoad, Owner};
use super::report::guarded;
use crate::clr::hooks::HookTable;
use crate::clr::log;
use crate::clr::profiler::{Callback, Profiler, for_each_callback};
use crate::clr::runtime::{AssemblyName, AssemblyReferenceProvider, FunctionControl, ProfilerInfo};
use crate::clr::sys::enums::{
    CorPrfGcReason, CorPrfGcRootFlags, CorPrfGcRootKind, CorPrfJitCache, CorPrfSuspendReason,
    CorPrfTransitionReason,
};
use crate::clr::sys::types::{
    AppDomainID, AssemblyID, ClassID, EventPipeProvider, FunctionID, GCHandleID, ModuleID,
    ObjectID, ReJITID, ThreadID, mdMethodDef,
};
use crate::clr::sys::{Guid, HResult};

impl Manager {
    /// Delivers a callback to its subscribers ([`Routing::forward`](super::routing::Routing::forward); none before
    /// initialization).
    pub(super) fn forward(
        &self,
        callback: Callback,
        call: impl FnMut(&dyn InstrumentationMethod) -> Result<(), HResult>,
    ) -> Result<(), HResult> {
        match self.running.get() {
            Some(running) => running.routing.forward(callback, call),
            None => Ok(()),
        }
    }

    /// A `bool` callback of the subscribers ([`Routing::all`](super::routing::Routing::all); `true` before
    /// initialization).
    pub(super) fn all(
        &self,
        callback: Callback,
        default: bool,
        call: impl FnMut(&dyn InstrumentationMethod) -> bool,
    ) -> bool {
        match self.running.get() {
            Some(running) => running.routing.all(callback, default, call),
            None => true,
        }
    }

    pub(super) fn on_module_load_finished(
        &self,
        module: ModuleID,
        status: HResult,
    ) -> Result<(), HResult> {
        if let (true, Some(running)) = (status.is_ok(), self.running.get()) {
            self.announce_module(running, module);
        }
        self.forward(Callback::ModuleLoadFinished, |m| {
            m.module_load_finished(module, status)
        })
    }

    /// A module loaded (or, after attach, was found loaded): its targets are found, each
    /// instrumentation method's `module_loaded` runs, and ReJIT learns of it; once per
    /// module, whichever way comes first.
    pub(super) fn announce_module(&self, running: &Running, module: ModuleID) {
        let Ok(state) = running.hosting.engine.module(module) else {
            return;
        };
        if running.hosting.detaching.load(Relaxed) || !state.announce() {
            return;
        }
        self.counts.module_loads.fetch_add(1, Relaxed);
        let targets = running.hosting.select_targets(&state);
        let count = running.hosting.methods.len();
        let recompile = Mutex::new(Vec::new());
        for (index, method) in running.hosting.methods.iter().enumerate() {
            let load = ModuleLoad {
                module: &state,
                owner: Owner { index, count },
                containers: &self.containers,
                recompile: running.rejit.as_ref().map(|_| &recompile),
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
            rejit.module_loaded(&state, &targets);
            let recompile = recompile
                .into_inner()
                .unwrap_or_else(PoisonError::into_inner);
            if !recompile.is_empty() {
                let _ = rejit.renew(recompile);
            }
        }
    }

    pub(super) fn on_module_unload_started(&self, module: ModuleID) -> Result<(), HResult> {
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
            running.hosting.engine.module_unloaded(module);
        }
        answer
    }

    pub(super) fn on_module_unload_finished(
        &self,
        module: ModuleID,
        status: HResult,
    ) -> Result<(), HResult> {
        let answer = self.forward(Callback::ModuleUnloadFinished, |m| {
            m.module_unload_finished(module, status)
        });
        if let Some(hooks) = self.running.get().and_then(|r| r.hooks.as_ref()) {
            hooks.forget_module(module);
        }
        answer
    }

    /// Runs `f` on the hooks' table, if any.
    pub(super) fn with_hooks(&self, f: impl FnOnce(&HookTable)) {
        if let Some(hooks) = self.running.get().and_then(|r| r.hooks.as_ref()) {
            f(hooks);
        }
    }

    pub(super) fn on_exception_unwind_function_enter(
        &self,
        function: FunctionID,
    ) -> Result<(), HResult> {
        if let Some(hooks) = self.running.get().and_then(|r| r.hooks.as_ref()) {
            hooks.unwind_enter(function);
        }
        self.forward(Callback::ExceptionUnwindFunctionEnter, |m| {
            m.exception_unwind_function_enter(function)
        })
    }

    pub(super) fn on_exception_unwind_function_leave(&self) -> Result<(), HResult> {
        if let Some(hooks) = self.running.get().and_then(|r| r.hooks.as_ref()) {
            hooks.unwind_leave();
        }
        self.forward(Callback::ExceptionUnwindFunctionLeave, |m| {
            m.exception_unwind_function_leave()
        })
    }

    pub(super) fn on_assembly_unload_finished(
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

    pub(super) fn on_app_domain_shutdown_finished(
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
    pub(super) fn on_get_assembly_references(
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

    pub(super) fn on_get_rejit_parameters(
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

    pub(super) fn on_rejit_compilation_started(
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

    pub(super) fn on_rejit_compilation_finished(
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

    pub(super) fn on_rejit_error(
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

    pub(super) fn on_shutdown(&self) {
        let _ = self.forward(Callback::Shutdown, |m| {
            m.shutdown();
            Ok(())
        });
        if let Some(report) = &self.report
            && let Err(message) = log::contain(|| report(self))
        {
            log::write(&format!("the manager's report panicked: {message}"));
        }
        if let Some(running) = self.running.get() {
            for (method, selector) in running.hosting.unmatched_targets() {
                log::write(&format!(
                    "instrumentation method {method}: target {selector} matched no method"
                ));
            }
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
            let mut taken = Vec::new();
            running
                .hosting
                .engine
                .for_each_module(|state| taken.extend(state.items.take_all()));
            // Dropped outside the registry's lock: a library's destructor may wait for a
            // thread that looks a module up.
            drop(taken);
        }
        drop(self.containers.assemblies.take_all());
        drop(self.containers.app_domains.take_all());
    }
}

/// Hands `add` each instrumentation method's assembly references for the assembly at
/// `path`, except references to that assembly itself (its file name without extension,
/// compared as the binder compares names, ignoring ASCII case).
pub(super) fn announce(
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
    ($self:ident, InitializeForAttach, initialize_for_attach, ($info:ident, $data:ident)) => {{
        // The client data made the manager (`Attachable`); a manager made otherwise
        // attaches with what it was configured with.
        let _ = $data;
        $self.on_initialize_for_attach($info)
    }};
    ($self:ident, ProfilerDetachSucceeded, profiler_detach_succeeded, ()) => {{
        let answer = $self.forward(Callback::ProfilerDetachSucceeded, |m| {
            m.profiler_detach_succeeded()
        });
        $self.on_profiler_detach_succeeded();
        answer
    }};
    ($self:ident, ProfilerAttachComplete, profiler_attach_complete, ()) => {{
        $self.on_profiler_attach_complete();
        $self.forward(Callback::ProfilerAttachComplete, |m| m.profiler_attach_complete())
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

/// One method of the manager's [`Profiler`] implementation, from its entry in the list:
/// `manager_callback!`'s answer.
macro_rules! manager_method {
    (
        $slot:ident $thunk:tt
        $(#[$doc:meta])*
        fn $method:ident($($arg:ident: $ty:ty),*) -> $ret:ty { $default:expr }
    ) => {
        fn $method(&self $(, $arg: $ty)*) -> $ret {
            manager_callback!(self, $slot, $method, ($($arg),*))
        }
    };
}

/// Every callback: the manager's own work, or delivery to the subscribers.
#[allow(clippy::too_many_arguments)]
impl Profiler for Manager {
    for_each_callback!(manager_method);
}

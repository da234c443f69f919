//! A manager loaded into a running process (`InitializeForAttach`): what the runtime
//! allows then, and the catch-up at `ProfilerAttachComplete` (the modules loaded and the
//! functions compiled before it came); and [`Attachable`], a profiler that makes its
//! manager when the runtime says how it was loaded.

use core::ffi::c_void;
use std::collections::HashSet;
use std::sync::{Arc, OnceLock};

use super::events::EventMasks;
use super::initialize::{Arrival, StartError};
use super::manager::Manager;
use crate::clr::hooks::HookSubscriber;
use crate::clr::log;
use crate::clr::profiler::{Profiler, for_each_callback};
use crate::clr::rejit::MethodKey;
use crate::clr::runtime::{AssemblyReferenceProvider, FunctionControl, ProfilerInfo};
use crate::clr::sys::enums::{
    CorPrfGcReason, CorPrfGcRootFlags, CorPrfGcRootKind, CorPrfJitCache, CorPrfSuspendReason,
    CorPrfTransitionReason,
};
use crate::clr::sys::types::{
    AppDomainID, AssemblyID, ClassID, EventPipeProvider, FunctionID, GCHandleID, ModuleID,
    ObjectID, ReJITID, ThreadID, mdMethodDef,
};
use crate::clr::sys::{CorPrfHighMonitor, CorPrfMonitor, Guid, HResult};

impl Manager {
    /// `InitializeForAttach`: starts as at start-up, with ReJIT on, after checking
    /// that nothing asks for what only start-up allows (enter/leave hooks, events
    /// outside `COR_PRF_ALLOWABLE_AFTER_ATTACH`, ReadyToRun disabled). Any failure is
    /// logged and answered with `CORPROF_E_UNSUPPORTED_FOR_ATTACHING_PROFILER` (or the
    /// runtime's refusal of the events): the runtime then unloads the profiler, the
    /// process as it was.
    pub(super) fn on_initialize_for_attach(&self, info: ProfilerInfo) -> Result<(), HResult> {
        if self.pending.is_empty() {
            log::write("attached with no instrumentation method: nothing to do");
            return Err(HResult::CORPROF_E_UNSUPPORTED_FOR_ATTACHING_PROFILER);
        }
        let masks = self.event_masks();
        match self.start(&info, &masks, Arrival::Attach) {
            Ok(running) => {
                let _ = self.running.set(running);
                log::write("attached to a running process");
                Ok(())
            }
            Err(StartError::Events(e)) => {
                log::write(&format!("the runtime refused the events at attach: {e}"));
                Err(HResult::from(e))
            }
            Err(e) => {
                masks.close();
                log::write(&format!("{e}; the profiler does not attach"));
                Err(HResult::CORPROF_E_UNSUPPORTED_FOR_ATTACHING_PROFILER)
            }
        }
    }

    /// What attaching refuses, before the runtime is asked: enter/leave hooks (set
    /// only in `Initialize`), and events outside what the runtime allows after attach,
    /// named with the instrumentation methods that asked for them.
    pub(super) fn attachable(
        &self,
        masks: &EventMasks,
        subscribers: &[Arc<dyn HookSubscriber>],
    ) -> Result<(), StartError> {
        if !subscribers.is_empty() {
            return Err(StartError::NotAtAttach(
                "enter/leave/tailcall hooks (the runtime takes them only at start-up)".to_owned(),
            ));
        }
        let union = masks.union();
        let low = union.low.difference(CorPrfMonitor::ALLOWABLE_AFTER_ATTACH);
        let high = union
            .high
            .difference(CorPrfHighMonitor::ALLOWABLE_AFTER_ATTACH);
        if low.is_empty() && high.is_empty() {
            return Ok(());
        }
        let askers: Vec<&str> = (0..self.pending.len())
            .filter(|&i| {
                let events = masks.get(i);
                events.low.intersects(low) || events.high.intersects(high)
            })
            .map(|i| self.pending[i].method.name())
            .collect();
        let who = match askers.is_empty() {
            true => "the manager".to_owned(),
            false => askers.join(", "),
        };
        Err(StartError::NotAtAttach(format!(
            "events {low:?} {high:?}, asked by {who}, are not allowed after attach"
        )))
    }

    /// `ProfilerAttachComplete`: the modules loaded before the profiler came are
    /// announced as if they had just loaded (targets found, `module_loaded` run, the
    /// targets in precompiled code re-JIT-compiled), and every function already
    /// JIT-compiled that an instrumentation method wants is re-JIT-compiled with the
    /// configured instrumentation (each at its next call). What compiles from now on
    /// goes through the first JIT as at start-up. The subscribers get no callbacks for
    /// what happened before.
    pub(super) fn on_profiler_attach_complete(&self) {
        let Some(running) = self.running.get() else {
            return;
        };
        let info = running.hosting.engine.info();
        let modules = info.loaded_modules().unwrap_or_else(|e| {
            log::write(&format!(
                "the modules loaded before attach are not known: {e}"
            ));
            Vec::new()
        });
        for &module in &modules {
            self.announce_module(running, module);
        }
        let compiled = info.compiled_functions().unwrap_or_else(|e| {
            log::write(&format!(
                "the functions compiled before attach are not known: {e}"
            ));
            Vec::new()
        });
        let mut keys = HashSet::new();
        for function in &compiled {
            let Ok(found) = info.function_info(function.function_id) else {
                continue;
            };
            let Ok(state) = running.hosting.engine.module(found.module) else {
                continue;
            };
            if running.hosting.wanted_by_any(&state, found.token) {
                keys.insert(MethodKey {
                    module: found.module,
                    token: found.token,
                });
            }
        }
        let count = keys.len();
        let requested = match (&running.rejit, count) {
            (Some(rejit), 1..) => {
                // Waited for (the runtime calls this on its attach thread, in preemptive
                // mode, before it answers the attaching tool): once the tool has its
                // answer, each method runs the new code from its next call.
                let ask = rejit.renew(keys.into_iter().collect());
                match rejit.wait_served(ask) {
                    Ok(()) => "requested".to_owned(),
                    Err(e) => format!("not yet requested: {e}"),
                }
            }
            _ => "requested".to_owned(),
        };
        log::write(&format!(
            "caught up at attach: {} module(s) loaded, {} function(s) compiled, {count} to re-JIT-compile ({requested})",
            modules.len(),
            compiled.len(),
        ));
    }
}

impl Manager {
    /// `ProfilerDetachSucceeded`: the runtime unloads the profiler's library once this
    /// returns, so every thread of the profiler ends here: the dial stops listening
    /// (its sessions closed), the ReJIT driver is stopped and joined, and the data
    /// items are dropped.
    pub(super) fn on_profiler_detach_succeeded(&self) {
        let Some(running) = self.running.get() else {
            return;
        };
        #[cfg(unix)]
        drop(
            running
                .dial
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .take(),
        );
        if let Some(rejit) = &running.rejit {
            let ended = rejit.stop_and_wait(std::time::Duration::from_secs(5));
            let driver = running
                .driver
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .take();
            match (ended, driver) {
                (true, Some(driver)) => {
                    let _ = driver.join();
                }
                (false, Some(_)) => log::write("the ReJIT driver did not stop in 5 s"),
                _ => {}
            }
        }
        let mut taken = Vec::new();
        running
            .hosting
            .engine
            .for_each_module(|state| taken.extend(state.items.take_all()));
        // Dropped outside the registry's lock: a library's destructor may wait for a
        // thread that looks a module up.
        drop(taken);
        drop(self.containers.assemblies.take_all());
        drop(self.containers.app_domains.take_all());
        log::write("detached");
    }
}

/// What an attaching tool tells a profiler built on the crate (the client data of the
/// diagnostics' AttachProfiler command): UTF-8 lines `key=value`, `config=` the path of
/// its configuration file (absolute: the process's working directory is not the tool's)
/// and, optionally, `dial=` the socket its live dial listens on. Any other line, a key
/// given twice, a relative path or bytes that are not UTF-8 are refused: the profiler
/// then does not attach.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClientData {
    /// The configuration file.
    pub config: Option<std::path::PathBuf>,
    /// The live dial's socket.
    pub dial: Option<std::path::PathBuf>,
}

impl ClientData {
    /// The bytes an attaching tool sends.
    pub fn encode(&self) -> Vec<u8> {
        let mut text = String::new();
        for (key, value) in [("config", &self.config), ("dial", &self.dial)] {
            if let Some(path) = value {
                text.push_str(&format!("{key}={}\n", path.display()));
            }
        }
        text.into_bytes()
    }

    /// What `bytes` say.
    ///
    /// # Errors
    /// Why they are refused, in words.
    pub fn parse(bytes: &[u8]) -> Result<ClientData, String> {
        let text = core::str::from_utf8(bytes)
            .map_err(|e| format!("the client data is not UTF-8: {e}"))?;
        let mut data = ClientData::default();
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let (key, value) = line
                .split_once('=')
                .ok_or_else(|| format!("client data line {line:?} is not key=value"))?;
            let slot = match key.trim() {
                "config" => &mut data.config,
                "dial" => &mut data.dial,
                other => return Err(format!("unknown client data key {other:?} (config, dial)")),
            };
            let path = std::path::PathBuf::from(value.trim());
            if !path.is_absolute() {
                return Err(format!(
                    "client data {key}: {} is not an absolute path",
                    path.display()
                ));
            }
            if slot.replace(path).is_some() {
                return Err(format!("client data key {key:?} given twice"));
            }
        }
        Ok(data)
    }
}

/// What makes an [`Attachable`]'s manager: how the profiler arrived, and the client data.
type MakeManager = dyn Fn(Arrival, &[u8]) -> Manager + Send + Sync;

/// A profiler that can be loaded at start-up or attached to a running process: it makes
/// its [`Manager`] when the runtime says which (`make(Arrival::Startup, &[])` in
/// `Initialize`, `make(Arrival::Attach, client_data)` in `InitializeForAttach`, where the
/// attaching tool's client data is typically the configuration) and hands it every
/// callback. Before either, callbacks get their defaults.
pub struct Attachable {
    make: Box<MakeManager>,
    manager: OnceLock<Manager>,
}

impl Attachable {
    /// A profiler whose manager `make` makes on arrival.
    pub fn new(make: impl Fn(Arrival, &[u8]) -> Manager + Send + Sync + 'static) -> Attachable {
        Attachable {
            make: Box::new(make),
            manager: OnceLock::new(),
        }
    }

    /// The manager, once made.
    pub fn manager(&self) -> Option<&Manager> {
        self.manager.get()
    }
}

impl core::fmt::Debug for Attachable {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Attachable")
            .field("made", &self.manager.get().is_some())
            .finish_non_exhaustive()
    }
}

/// One callback of [`Attachable`]: `Initialize` and `InitializeForAttach` make the
/// manager; the others go to it once made.
macro_rules! attachable_callback {
    ($self:ident, Initialize, initialize, ($info:ident)) => {{
        let manager = $self
            .manager
            .get_or_init(|| ($self.make)(Arrival::Startup, &[]));
        manager.initialize($info)
    }};
    ($self:ident, InitializeForAttach, initialize_for_attach, ($info:ident, $data:ident)) => {{
        let manager = $self
            .manager
            .get_or_init(|| ($self.make)(Arrival::Attach, $data));
        manager.initialize_for_attach($info, $data)
    }};
    ($self:ident, $slot:ident, $method:ident, ($($a:ident),*), $default:expr) => {
        match $self.manager.get() {
            Some(manager) => manager.$method($($a),*),
            None => {
                $(let _ = $a;)*
                $default
            }
        }
    };
}

/// One method of [`Attachable`]'s [`Profiler`] implementation, from the callback list.
macro_rules! attachable_method {
    (
        Initialize $thunk:tt
        $(#[$doc:meta])*
        fn $method:ident($($arg:ident: $ty:ty),*) -> $ret:ty { $default:expr }
    ) => {
        fn $method(&self $(, $arg: $ty)*) -> $ret {
            attachable_callback!(self, Initialize, $method, ($($arg),*))
        }
    };
    (
        InitializeForAttach $thunk:tt
        $(#[$doc:meta])*
        fn $method:ident($($arg:ident: $ty:ty),*) -> $ret:ty { $default:expr }
    ) => {
        fn $method(&self $(, $arg: $ty)*) -> $ret {
            attachable_callback!(self, InitializeForAttach, $method, ($($arg),*))
        }
    };
    (
        $slot:ident $thunk:tt
        $(#[$doc:meta])*
        fn $method:ident($($arg:ident: $ty:ty),*) -> $ret:ty { $default:expr }
    ) => {
        fn $method(&self $(, $arg: $ty)*) -> $ret {
            attachable_callback!(self, $slot, $method, ($($arg),*), $default)
        }
    };
}

/// Every callback: to the manager once made.
#[allow(clippy::too_many_arguments)]
impl Profiler for Attachable {
    for_each_callback!(attachable_method);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_data_round_trips_and_refuses_what_it_cannot_read() {
        let data = ClientData {
            config: Some("/srv/app/é engine.toml".into()),
            dial: Some("/tmp/d.sock".into()),
        };
        assert_eq!(ClientData::parse(&data.encode()), Ok(data));
        assert_eq!(ClientData::parse(b""), Ok(ClientData::default()));
        for bad in [
            &b"config=relative.toml"[..],
            b"config=/a\nconfig=/b",
            b"nonsense",
            b"colour=/x",
            b"config=/\xff",
        ] {
            assert!(
                ClientData::parse(bad).is_err(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }
}

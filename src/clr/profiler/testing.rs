//! Test doubles for the profiler layer: a recording profiler, a panicking one, a fake
//! runtime `IUnknown`, and a log capture.

use core::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Once};

use super::callbacks::Profiler;
use crate::clr::com::ComPtr;
pub(crate) use crate::clr::com::fake::FakeUnknown;
use crate::clr::log;
use crate::clr::runtime::guard::CallContext;
use crate::clr::runtime::{FunctionControl, ProfilerInfo};
use crate::clr::sys::{
    ClassID, EventPipeProvider, FunctionID, Guid, HResult, ICorProfilerCallback11Vtbl,
    ICorProfilerCallbackVtbl, ModuleID, ReJITID, ThreadID, mdMethodDef,
};

static LOGS: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn capture(message: &str) {
    LOGS.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .push(message.to_string());
}

/// Sends the log to a buffer [`logged`] searches (once for the whole test binary: tests
/// run in parallel, so none installs another logger).
pub(crate) fn capture_logs() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| log::set_logger(capture));
}

/// Whether some message logged so far contains `needle`.
pub(crate) fn logged(needle: &str) -> bool {
    LOGS.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .iter()
        .any(|m| m.contains(needle))
}

/// One callback as a [`Recorder`] saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Event {
    pub name: &'static str,
    pub args: Vec<usize>,
    pub context: CallContext,
}

/// What a [`Recorder`] saw, shared with the test.
#[derive(Debug, Default)]
pub(crate) struct Record {
    events: Mutex<Vec<Event>>,
    drops: AtomicUsize,
}

impl Record {
    fn push(&self, name: &'static str, args: &[usize]) {
        self.events.lock().unwrap().push(Event {
            name,
            args: args.to_vec(),
            context: CallContext::current(),
        });
    }

    /// How many times a profiler holding this record was dropped.
    pub fn drops(&self) -> usize {
        self.drops.load(Ordering::SeqCst)
    }

    /// Takes the first recorded call of `name` and checks its arguments, and that it ran
    /// inside a callback.
    #[track_caller]
    pub fn expect(&self, name: &str, args: &[usize]) {
        let mut events = self.events.lock().unwrap();
        let Some(at) = events.iter().position(|e| e.name == name) else {
            panic!("{name} was not called; calls: {events:?}");
        };
        let event = events.remove(at);
        assert_eq!(event.args, args, "{name}");
        assert_eq!(event.context, CallContext::InCallback, "{name}");
    }

    /// Checks that `name` was not called.
    #[track_caller]
    pub fn expect_none(&self, name: &str) {
        let events = self.events.lock().unwrap();
        assert!(
            events.iter().all(|e| e.name != name),
            "{name} was called: {events:?}"
        );
    }
}

/// A profiler that records the callbacks it implements (and panics in
/// `class_load_started`).
#[derive(Debug)]
pub(crate) struct Recorder {
    record: Arc<Record>,
}

impl Recorder {
    pub fn new(record: &Arc<Record>) -> Recorder {
        Recorder {
            record: Arc::clone(record),
        }
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.record.drops.fetch_add(1, Ordering::SeqCst);
    }
}

impl Profiler for Recorder {
    fn initialize(&self, info: ProfilerInfo) -> Result<(), HResult> {
        self.record.push("initialize", &[info.version() as usize]);
        Err(HResult::E_ACCESSDENIED)
    }

    fn shutdown(&self) {
        self.record.push("shutdown", &[]);
    }

    fn module_load_finished(&self, module: ModuleID, status: HResult) -> Result<(), HResult> {
        self.record
            .push("module_load_finished", &[module, status.as_u32() as usize]);
        Ok(())
    }

    fn module_unload_started(&self, module: ModuleID) -> Result<(), HResult> {
        self.record.push("module_unload_started", &[module]);
        Err(HResult::E_NOTIMPL)
    }

    fn class_load_started(&self, class: ClassID) -> Result<(), HResult> {
        panic!("class {class:#x} refused");
    }

    fn jit_compilation_started(
        &self,
        function: FunctionID,
        is_safe_to_block: bool,
    ) -> Result<(), HResult> {
        self.record.push(
            "jit_compilation_started",
            &[function, usize::from(is_safe_to_block)],
        );
        Ok(())
    }

    fn jit_cached_function_search_started(&self, function: FunctionID) -> bool {
        self.record
            .push("jit_cached_function_search_started", &[function]);
        false
    }

    fn jit_inlining(&self, caller: FunctionID, callee: FunctionID) -> bool {
        self.record.push("jit_inlining", &[caller, callee]);
        callee != 0xBAD
    }

    fn thread_name_changed(
        &self,
        thread: ThreadID,
        name_len: u32,
        name: *mut u16,
    ) -> Result<(), HResult> {
        // SAFETY: the tests pass `name_len` readable units.
        let name = unsafe {
            core::slice::from_raw_parts(name, usize::try_from(name_len).expect("a length"))
        };
        self.record.push(
            "thread_name_changed",
            &[thread, name.len(), usize::from(name[0])],
        );
        Ok(())
    }

    fn remoting_client_sending_message(
        &self,
        cookie: *mut Guid,
        is_async: bool,
    ) -> Result<(), HResult> {
        self.record.push(
            "remoting_client_sending_message",
            &[cookie as usize, usize::from(is_async)],
        );
        Ok(())
    }

    fn initialize_for_attach(&self, info: ProfilerInfo, client_data: &[u8]) -> Result<(), HResult> {
        self.record.push(
            "initialize_for_attach",
            &[
                info.version() as usize,
                client_data.len(),
                usize::from(client_data[0]),
            ],
        );
        Ok(())
    }

    fn rejit_compilation_started(
        &self,
        function: FunctionID,
        rejit: ReJITID,
        is_safe_to_block: bool,
    ) -> Result<(), HResult> {
        self.record.push(
            "rejit_compilation_started",
            &[function, rejit, usize::from(is_safe_to_block)],
        );
        Ok(())
    }

    fn get_rejit_parameters(
        &self,
        module: ModuleID,
        method: mdMethodDef,
        control: &FunctionControl,
    ) -> Result<(), HResult> {
        self.record.push(
            "get_rejit_parameters",
            &[module, method as usize, control.as_raw() as usize],
        );
        Ok(())
    }

    fn rejit_error(
        &self,
        module: ModuleID,
        method: mdMethodDef,
        function: FunctionID,
        status: HResult,
    ) -> Result<(), HResult> {
        self.record.push(
            "rejit_error",
            &[module, method as usize, function, status.as_u32() as usize],
        );
        Ok(())
    }

    fn dynamic_method_unloaded(&self, function: FunctionID) -> Result<(), HResult> {
        self.record.push("dynamic_method_unloaded", &[function]);
        Ok(())
    }

    fn event_pipe_event_delivered(
        &self,
        provider: EventPipeProvider,
        event_id: u32,
        event_version: u32,
        metadata_len: u32,
        metadata: *const u8,
        data_len: u32,
        data: *const u8,
        activity_id: *const Guid,
        related_activity_id: *const Guid,
        thread: ThreadID,
        frame_count: u32,
        frames: *mut usize,
    ) -> Result<(), HResult> {
        self.record.push(
            "event_pipe_event_delivered",
            &[
                provider,
                event_id as usize,
                event_version as usize,
                metadata_len as usize,
                metadata as usize,
                data_len as usize,
                data as usize,
                activity_id as usize,
                related_activity_id as usize,
                thread,
                frame_count as usize,
                frames as usize,
            ],
        );
        Ok(())
    }

    fn event_pipe_provider_created(&self, provider: EventPipeProvider) -> Result<(), HResult> {
        self.record.push("event_pipe_provider_created", &[provider]);
        Ok(())
    }

    fn load_as_notification_only(&self) -> bool {
        self.record.push("load_as_notification_only", &[]);
        true
    }
}

/// A profiler that panics in `initialize` and `jit_inlining`.
#[derive(Debug)]
pub(crate) struct Panicky;

impl Profiler for Panicky {
    fn initialize(&self, _info: ProfilerInfo) -> Result<(), HResult> {
        panic!("Panicky::initialize");
    }

    fn jit_inlining(&self, _caller: FunctionID, _callee: FunctionID) -> bool {
        panic!("Panicky::jit_inlining");
    }
}

/// The `ICorProfilerCallback` prefix of an object's vtable, as a caller holding the
/// oldest interface sees it.
pub(crate) fn call_v1(object: &ComPtr<ICorProfilerCallback11Vtbl>) -> &ICorProfilerCallbackVtbl {
    &object
        .vtbl()
        .base
        .base
        .base
        .base
        .base
        .base
        .base
        .base
        .base
        .base
}

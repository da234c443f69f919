//! What the manager reports: its counts ([`ManagerCounts`]), the panic guard around each
//! call of an instrumentation method ([`guarded`]), and the log line of a rolled-back
//! edit ([`log_rollback`]).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, PoisonError};

use super::method::InstrumentationMethod;
use crate::clr::log;
use crate::clr::profiler::Callback;
use crate::clr::rewrite::RewriteOutcome;
use crate::clr::rewrite::edits::EditFailure;
use crate::clr::rewrite::module::{ModuleState, row};
use crate::clr::sys::mdToken;

/// Counts of what the manager did, for a profiler's report, tests and benchmarks.
#[derive(Debug, Default)]
pub struct ManagerCounts {
    /// `JITCompilationStarted` callbacks.
    pub compilations: AtomicU64,
    /// Compilations of methods no instrumentation method wanted: not decoded.
    pub not_wanted: AtomicU64,
    /// Compilations whose method was decoded for at least one instrumentation method.
    pub decoded: AtomicU64,
    /// Compilations that handed a rewritten body to the runtime.
    pub rewritten: AtomicU64,
    /// Compilations of a method rewritten by an earlier one (a generic instantiation, a
    /// tier-up): they compile the rewritten IL.
    pub already: AtomicU64,
    /// Compilations whose edits changed nothing (the original IL is compiled).
    pub unchanged: AtomicU64,
    /// Compilations whose method the pipeline refused (IL it cannot rewrite safely).
    pub refused: AtomicU64,
    /// Compilations whose rewrite failed (the original IL is compiled).
    pub failed: AtomicU64,
    /// Edits rolled back (an error or a panic of one instrumentation method on one
    /// method).
    pub rolled_back: AtomicU64,
    /// Modules that finished loading.
    pub module_loads: AtomicU64,
    /// Nanoseconds spent in `JITCompilationStarted` (with [`Manager::with_timings`](super::Manager::with_timings)).
    pub callback_ns: AtomicU64,
    /// Of those, nanoseconds spent in the callbacks that handed a rewritten body over
    /// (with [`Manager::with_timings`](super::Manager::with_timings)): with [`ManagerCounts::rewritten`], the cost of
    /// a first-JIT rewrite, to set against a ReJIT version's
    /// ([`ReJitCounts::parameters_ns`](super::ReJitCounts::parameters_ns)).
    pub rewritten_ns: AtomicU64,
    /// Refusals and failures by reason (the cold path only).
    reasons: Mutex<BTreeMap<String, u64>>,
}

impl ManagerCounts {
    /// The refusal and failure reasons with their counts, in order.
    pub fn reasons(&self) -> Vec<(String, u64)> {
        let reasons = self.reasons.lock().unwrap_or_else(PoisonError::into_inner);
        reasons.iter().map(|(k, v)| (k.clone(), *v)).collect()
    }

    pub(crate) fn count(&self, outcome: &RewriteOutcome) {
        let counter = match outcome {
            RewriteOutcome::NotSelected => return,
            RewriteOutcome::Rewritten { .. } => &self.rewritten,
            RewriteOutcome::AlreadyRewritten => &self.already,
            RewriteOutcome::Unchanged => &self.unchanged,
            RewriteOutcome::Refused(_) => &self.refused,
            RewriteOutcome::Failed(_) => &self.failed,
        };
        counter.fetch_add(1, Relaxed);
        if let Some(key) = outcome.key() {
            self.count_reason(key);
        }
    }

    #[cold]
    fn count_reason(&self, key: String) {
        let mut reasons = self.reasons.lock().unwrap_or_else(PoisonError::into_inner);
        *reasons.entry(key).or_default() += 1;
    }
}

/// Runs `f` for `method` inside a panic guard: a panic is logged with the method's name
/// and the callback, and gives `None`.
pub(crate) fn guarded<R>(
    method: &dyn InstrumentationMethod,
    callback: Callback,
    f: impl FnOnce() -> R,
) -> Option<R> {
    match log::contain(f) {
        Ok(r) => Some(r),
        Err(message) => {
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
pub(crate) fn log_rollback(
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

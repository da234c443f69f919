//! The benchmark's baseline (`examples/clr_bench.rs`): one edit, a `nop` at the entry
//! of every method, through `ilrewrite::clr::JitRewriter` directly, without the
//! `Manager` the sample profiler hosts its instrumentation methods in. The same edit as
//! the sample's `nop`, so that the two differ by the manager alone.
//!
//! Like the sample, it disables ReadyToRun images, and at shutdown prints
//! `ilrewrite: mode nop-direct jitted N rewritten N already N refused N failed N enters
//! 0 exits 0` and `ilrewrite: timing NS ns in N JITCompilationStarted callbacks`.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Instant;

use ilrewrite::clr::sys::{CorPrfHighMonitor, CorPrfMonitor, FunctionID, HResult, ModuleID};
use ilrewrite::clr::{JitRewriter, Profiler, ProfilerInfo, RewriteOutcome};
use ilrewrite::graph::Incoming;
use ilrewrite::{Instruction, OpCode};

#[derive(Default)]
struct Direct {
    rewriter: OnceLock<JitRewriter>,
    jitted: AtomicU64,
    rewritten: AtomicU64,
    already: AtomicU64,
    refused: AtomicU64,
    failed: AtomicU64,
    callback_ns: AtomicU64,
    callbacks: AtomicU64,
}

impl Profiler for Direct {
    fn initialize(&self, info: ProfilerInfo) -> Result<(), HResult> {
        let events = CorPrfMonitor::MONITOR_JIT_COMPILATION
            | CorPrfMonitor::MONITOR_MODULE_LOADS
            | CorPrfMonitor::DISABLE_ALL_NGEN_IMAGES;
        info.set_event_mask(events, CorPrfHighMonitor::empty())
            .map_err(|_| HResult::E_FAIL)?;
        let _ = self.rewriter.set(JitRewriter::new(info));
        Ok(())
    }

    fn jit_compilation_started(&self, function: FunctionID, _: bool) -> Result<(), HResult> {
        let start = Instant::now();
        if let Some(rewriter) = self.rewriter.get() {
            let outcome = rewriter.rewrite(function, |body, _| {
                let Some(first) = body.instrs.first() else {
                    return Ok(false);
                };
                body.insert_before(first, Instruction::simple(OpCode::Nop), Incoming::Keep)?;
                Ok(true)
            });
            let counter = match outcome {
                RewriteOutcome::NotSelected => None,
                RewriteOutcome::Rewritten { .. } => Some(&self.rewritten),
                RewriteOutcome::AlreadyRewritten => Some(&self.already),
                RewriteOutcome::Refused(_) => Some(&self.refused),
                _ => Some(&self.failed),
            };
            if let Some(counter) = counter {
                counter.fetch_add(1, Relaxed);
                self.jitted.fetch_add(1, Relaxed);
            }
        }
        let ns = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.callback_ns.fetch_add(ns, Relaxed);
        self.callbacks.fetch_add(1, Relaxed);
        Ok(())
    }

    fn module_unload_started(&self, module: ModuleID) -> Result<(), HResult> {
        if let Some(rewriter) = self.rewriter.get() {
            rewriter.module_unloaded(module);
        }
        Ok(())
    }

    fn jit_inlining(&self, caller: FunctionID, callee: FunctionID) -> bool {
        self.rewriter
            .get()
            .is_none_or(|r| r.jit_inlining(caller, callee))
    }

    fn shutdown(&self) {
        let jitted = self.jitted.load(Relaxed);
        eprintln!(
            "ilrewrite: mode nop-direct jitted {jitted} rewritten {} already {} refused {} \
             failed {} enters 0 exits 0",
            self.rewritten.load(Relaxed),
            self.already.load(Relaxed),
            self.refused.load(Relaxed),
            self.failed.load(Relaxed),
        );
        eprintln!(
            "ilrewrite: timing {} ns in {} JITCompilationStarted callbacks",
            self.callback_ns.load(Relaxed),
            self.callbacks.load(Relaxed)
        );
    }
}

ilrewrite::export_profiler!(
    clsid = "{3F7B9C2E-5D1A-4C86-9E40-7A2B6D8C1F93}",
    profiler = Direct::default
);

//! The manager's first-JIT path: `JITCompilationStarted` (the plan made once, by the
//! host; run once, by the engine) and `JITInlining`.

use std::sync::atomic::Ordering::Relaxed;

use super::hosting::Wish;
use super::manager::{Manager, Running};
use super::plan::Plan;
use crate::clr::profiler::Callback;
use crate::clr::rejit::{IlTarget, MethodKey};
use crate::clr::rewrite::engine::Target;
use crate::clr::rewrite::module::MethodState;
use crate::clr::rewrite::{Inlining, RewriteOutcome};
use crate::clr::runtime::CodegenFlags;
use crate::clr::sys::{FunctionID, HResult};

impl Manager {
    pub(super) fn on_jit_compilation_started(
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
        if let Some(running) = self.running.get()
            && !running.hosting.detaching.load(Relaxed)
        {
            let outcome = self.first_jit(running, function);
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

    /// Rewrites `function` at its first JIT: with what ReJIT wants of it when it wants
    /// anything (so no call runs without it), else with the configured instrumentation
    /// methods that want it.
    fn first_jit(&self, running: &Running, function: FunctionID) -> RewriteOutcome {
        let hosting = &*running.hosting;
        let method = match hosting.engine.locate(function) {
            Ok(method) => method,
            Err(outcome) => return outcome,
        };
        let key = MethodKey {
            module: method.module.id(),
            token: method.token,
        };
        let rejit = running.rejit.as_ref();
        let wish = rejit.and_then(|r| r.first_jit_target(key));
        let added = hosting.added();
        let outcome = {
            let plan = match &wish {
                None => hosting.plan(&method.module, method.token, Wish::Configured, &added),
                Some(IlTarget::File) => {
                    if let Some(rejit) = rejit {
                        rejit.first_jit_done(key, IlTarget::File);
                    }
                    return RewriteOutcome::NotSelected;
                }
                Some(IlTarget::Plan(plan)) => {
                    hosting.plan(&method.module, method.token, Wish::Plan(plan), &added)
                }
            };
            match plan {
                Some(plan) => {
                    let rewrite = hosting.run(Target::FirstJit(&method), &plan);
                    if rewrite.edits_ran {
                        self.counts.decoded.fetch_add(1, Relaxed);
                    }
                    rewrite.outcome
                }
                None => {
                    self.counts.not_wanted.fetch_add(1, Relaxed);
                    RewriteOutcome::NotSelected
                }
            }
        };
        if let (Some(IlTarget::Plan(plan)), Some(rejit)) = (wish, rejit) {
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

    pub(super) fn on_jit_inlining(&self, caller: FunctionID, callee: FunctionID) -> bool {
        let theirs = self.all(Callback::JITInlining, true, |m| {
            m.jit_inlining(caller, callee)
        });
        let Some(running) = self.running.get() else {
            return theirs;
        };
        let inline = theirs
            // A function with hooks on is not inlined: its calls would not be seen.
            && running.hooks.as_ref().is_none_or(|hooks| hooks.decide(callee).is_none())
            && self.keeps_instrumentation(running, callee);
        if inline && running.rejit.is_some() {
            // A ReJIT of it must then recompile its inliners; of a method never
            // inlined, it need not (and must not walk the assemblies: see
            // `ReJitController::make`).
            if let Ok((module, token)) = running.hosting.engine.function(callee) {
                module.note_inlined(token);
            }
        }
        inline
    }

    /// Whether `callee` may be inlined as far as rewriting goes: under
    /// [`Inlining::KeepInstrumentation`], not a method rewritten, being rewritten, or
    /// that an instrumentation method will want at its first JIT (nor one that cannot
    /// be located); not a method ReJIT changes (its versions would not reach the copy).
    fn keeps_instrumentation(&self, running: &Running, callee: FunctionID) -> bool {
        let hosting = &running.hosting;
        if self.inlining == Inlining::KeepInstrumentation {
            let Ok((module, token)) = hosting.engine.function(callee) else {
                return false;
            };
            let may = match module.method_state(token) {
                MethodState::Settled => true,
                MethodState::Rewritten | MethodState::InProgress => false,
                MethodState::NotSeen => !hosting.wanted_by_any(&module, token),
            };
            if !may {
                return false;
            }
        }
        running.rejit.as_ref().is_none_or(|rejit| {
            !rejit.is_active()
                || hosting.engine.info().function_info(callee).is_ok_and(|f| {
                    !rejit.keeps_out_of_inlining(MethodKey {
                        module: f.module,
                        token: f.token,
                    })
                })
        })
    }
}

//! The rewrite engine: [`Engine`], which keeps the per-module state and runs the pipeline
//! on one method for a [`Target`] (a first JIT, or a ReJIT version) and a
//! [`MethodPlan`]. It takes values and returns values: nothing in it calls back into
//! whoever made the plan, beyond the plan's own edit steps.

use std::sync::Arc;
use std::time::Instant;

use super::clock::{Clock, Timings};
use super::delivery::{FirstJit, ReJitDelivery};
use super::edits::{EditStep, MethodPlan};
use super::module::ModuleState;
use super::outcome::{Failure, Phase, RewriteOutcome};
use super::pipeline::{self, Mode, Rewrite};
use super::registry::{Found, ModuleRegistry};
use crate::clr::log;
use crate::clr::runtime::{ClrError, CodegenFlags, FunctionControl, ModuleMetadata, ProfilerInfo};
use crate::clr::sys::{FunctionID, ModuleID, mdToken};
use crate::selector::Selector;

/// A method found in its module: the module's state, the MethodDef token, the
/// compilation it was found from (0 when found by token), and when the search started
/// (the pipeline's [`Phase::Locate`] time, when timing is on).
#[derive(Debug)]
pub(crate) struct Located {
    pub(crate) module: Arc<ModuleState>,
    pub(crate) token: mdToken,
    pub(crate) function: FunctionID,
    started: Option<Instant>,
}

/// Where a rewrite's result goes.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Target<'a> {
    /// The method's first JIT compilation (`JITCompilationStarted`): claimed, rewritten
    /// once; the IL read is kept as the pristine IL when the engine keeps it.
    FirstJit(&'a Located),
    /// A ReJIT version (`GetReJITParameters`): built from the pristine IL, handed to
    /// `control` with `flags`; nothing claimed, every version built.
    ReJit {
        method: &'a Located,
        control: &'a FunctionControl,
        flags: CodegenFlags,
    },
}

impl<'a> Target<'a> {
    fn method(&self) -> &'a Located {
        match *self {
            Target::FirstJit(method) | Target::ReJit { method, .. } => method,
        }
    }
}

/// The rewrite engine: the runtime, the state of every module it has seen (freed when
/// the module unloads), whether pristine IL is kept, the phases' timings.
pub(crate) struct Engine {
    info: ProfilerInfo,
    modules: ModuleRegistry<ModuleMetadata>,
    /// Whether the pristine IL of rewritten methods is kept.
    keep_pristine: bool,
    /// Nanoseconds spent in each phase, when timing is on.
    timings: Option<Box<Timings>>,
    /// The methods whose IL is logged as handed over.
    show_il: Box<[Selector]>,
}

impl core::fmt::Debug for Engine {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Engine")
            .field("modules", &self.modules)
            .field("keep_pristine", &self.keep_pristine)
            .finish_non_exhaustive()
    }
}

impl Engine {
    /// An engine over `info`, keeping no pristine IL, timing nothing.
    pub(crate) fn new(info: ProfilerInfo) -> Engine {
        Engine {
            info,
            modules: ModuleRegistry::default(),
            keep_pristine: false,
            timings: None,
            show_il: Box::default(),
        }
    }

    /// Logs the IL handed over for each method `selectors` select (first JIT and ReJIT
    /// alike), as a listing.
    pub(crate) fn show_il(&mut self, selectors: &[Selector]) {
        self.show_il = selectors.into();
    }

    /// Keeps the IL read at each first-JIT rewrite as the method's pristine IL.
    pub(crate) fn keep_pristine_il(&mut self) {
        self.keep_pristine = true;
    }

    /// Times each phase.
    pub(crate) fn time_phases(&mut self) {
        self.timings = Some(Box::default());
    }

    /// Nanoseconds spent so far in each phase, when timing is on.
    pub(crate) fn timings(&self) -> Option<[(Phase, u64); Phase::ALL.len()]> {
        self.timings.as_ref().map(|t| t.read())
    }

    /// The runtime's `ICorProfilerInfo`.
    pub(crate) fn info(&self) -> &ProfilerInfo {
        &self.info
    }

    /// The state of `module`, created (its metadata opened) the first time, and created
    /// anew when the module under that id is not the one the state was made for.
    ///
    /// # Errors
    /// When the runtime does not give the module's metadata (e.g. it is unloading).
    pub(crate) fn module(&self, module: ModuleID) -> Result<Arc<ModuleState>, ClrError> {
        let identity = ModuleMetadata::identity_of(&self.info, module)?;
        if let Found::Same(state) = self.modules.get(module, identity) {
            return Ok(state);
        }
        let metadata = ModuleMetadata::open(&self.info, module)?;
        let identity = metadata.identity();
        let facts = self.info.module_facts(module).ok();
        Ok(self
            .modules
            .insert(ModuleState::new(module, identity, metadata).with_facts(facts)))
    }

    /// How many modules it keeps state for now.
    pub(crate) fn modules_kept(&self) -> usize {
        self.modules.len()
    }

    /// Forgets the state of `module` (dropped as soon as no rewrite holds it).
    pub(crate) fn module_unloaded(&self, module: ModuleID) {
        self.modules.remove(module);
    }

    /// Calls `f` with the state of every module it keeps now.
    pub(crate) fn for_each_module(&self, f: impl FnMut(&ModuleState)) {
        self.modules.for_each(f);
    }

    /// The module and MethodDef token of `function`.
    ///
    /// # Errors
    /// The errors of [`ProfilerInfo::function_info`] and [`Engine::module`].
    pub(crate) fn function(
        &self,
        function: FunctionID,
    ) -> Result<(Arc<ModuleState>, mdToken), ClrError> {
        let f = self.info.function_info(function)?;
        Ok((self.module(f.module)?, f.token))
    }

    /// Finds the method `function` compiles, for a first JIT.
    ///
    /// # Errors
    /// A failure of [`Phase::Locate`], logged.
    pub(crate) fn locate(&self, function: FunctionID) -> Result<Located, RewriteOutcome> {
        let started = self.timings.is_some().then(Instant::now);
        match self.function(function) {
            Ok((module, token)) => Ok(Located {
                module,
                token,
                function,
                started,
            }),
            Err(e) => {
                let outcome = RewriteOutcome::Failed(Failure::new(Phase::Locate, e));
                log_outcome(function, None, &outcome);
                Err(outcome)
            }
        }
    }

    /// Finds MethodDef `token` of `module`, for a ReJIT version.
    ///
    /// # Errors
    /// A failure of [`Phase::Locate`].
    pub(crate) fn locate_def(
        &self,
        module: ModuleID,
        token: mdToken,
    ) -> Result<Located, RewriteOutcome> {
        let started = self.timings.is_some().then(Instant::now);
        match self.module(module) {
            Ok(module) => Ok(Located {
                module,
                token,
                function: 0,
                started,
            }),
            Err(e) => Err(RewriteOutcome::Failed(Failure::new(Phase::Locate, e))),
        }
    }

    /// Rewrites the method of `target` with `plan`: the pipeline through the target's
    /// delivery, every failure typed with its phase, nothing handed over before it was
    /// verified. A refusal or failure is logged once per kind with the method's name
    /// and token ([`log::throttled`]).
    pub(crate) fn run<S: EditStep<ModuleMetadata>>(
        &self,
        target: Target<'_>,
        plan: &MethodPlan<S>,
    ) -> Rewrite {
        let method = target.method();
        let mut clock = Clock::started_at(self.timings.as_deref(), method.started);
        let (module, token, function) = (&*method.module, method.token, method.function);
        let show_il = !self.show_il.is_empty()
            && self
                .show_il
                .iter()
                .any(|s| s.matches(module.metadata(), token));
        let rewrite = match target {
            Target::FirstJit(_) => {
                let mode = Mode::FirstJit {
                    keep_pristine: self.keep_pristine,
                };
                let delivery = FirstJit::new(&self.info);
                pipeline::run(
                    &delivery, module, function, token, mode, show_il, &mut clock, plan,
                )
            }
            Target::ReJit { control, flags, .. } => {
                let delivery = ReJitDelivery::new(&self.info, control, flags);
                pipeline::run(
                    &delivery,
                    module,
                    0,
                    token,
                    Mode::ReJit,
                    show_il,
                    &mut clock,
                    plan,
                )
            }
        };
        log_outcome(function, Some((module, token)), &rewrite.outcome);
        rewrite
    }
}

/// Logs a refusal, failure or refused IL map with the method's name and token, once per
/// kind of outcome ([`log::throttled`]); nothing for the others.
fn log_outcome(
    function: FunctionID,
    method: Option<(&ModuleState, mdToken)>,
    outcome: &RewriteOutcome,
) {
    let Some(key) = outcome.key() else { return };
    log_keyed(function, method, outcome, &key);
}

#[cold]
fn log_keyed(
    function: FunctionID,
    method: Option<(&ModuleState, mdToken)>,
    outcome: &RewriteOutcome,
    key: &str,
) {
    // The method's name is read only for the first of its kind.
    log::throttled(key, || {
        let name = match method {
            Some((module, token)) => {
                let name = crate::disasm::method_name(module.metadata(), token);
                format!("{name} (0x{token:08x})")
            }
            None => format!("function {function:#x}"),
        };
        let kept = match outcome {
            RewriteOutcome::Rewritten { .. } => "",
            _ => "; its original IL is kept",
        };
        format!("{name}: {outcome}{kept} (later ones counted as \"{key}\")")
    });
}

//! Rewriting methods as the JIT compiles them: [`JitRewriter`].

use std::sync::Arc;

use super::edits::{MethodPlan, OnceEdit};
use super::engine::{Engine, Target};
use super::instrumentation::Instrumentation;
use super::method_rewrite::MethodRewrite;
use super::module::ModuleState;
use super::outcome::{Phase, RewriteOutcome};
use super::states::MethodState;
use crate::body::MethodBody;
use crate::clr::runtime::{ClrError, CodegenFlags, FunctionControl, ProfilerInfo};
use crate::clr::sys::{FunctionID, ModuleID, mdToken};

/// Which methods a [`JitRewriter`] rewrites: a cheap check on the method's module and
/// MethodDef token (for example its name, read through [`ModuleState::metadata`]) that
/// runs before anything is read or decoded.
pub type Filter = dyn Fn(&ModuleState, mdToken) -> bool + Send + Sync;

/// Whether methods the rewriter rewrites may be inlined into their callers
/// ([`JitRewriter::with_inlining`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Inlining {
    /// [`JitRewriter::jit_inlining`] refuses to inline a method the rewriter rewrote, is
    /// rewriting, or will rewrite (its filter selects it and it has not been through
    /// the rewriter yet; with no filter, every method not yet through it): the caller
    /// then calls it, and its instrumentation runs. Other methods are inlined as the
    /// JIT decides. The default.
    #[default]
    KeepInstrumentation,
    /// Inlining as the JIT decides. Faster, but a call the JIT inlines runs the
    /// callee's IL inside its caller: if the callee was inlined before its own first
    /// compilation, that is its original IL, and its instrumentation does not run for
    /// that call.
    Allow,
}

/// Rewrites methods in `JITCompilationStarted`, through the rewrite engine (the path for
/// a profiler that rewrites methods itself, without the `Manager`): finds the method's
/// module and token, claims the method, reads its IL, decodes it, runs the caller's edit,
/// verifies the result (the stack analysis with the exact max stack, and the clauses; a
/// body the edit left unedited must re-encode to exactly its original bytes), defines a
/// changed LocalVarSig's token, encodes, and hands the body and its IL map to the runtime
/// (`SetILFunctionBody`, `SetILInstrumentedCodeMap`).
///
/// Any refusal, failure or panic on the way leaves the method's original IL untouched
/// (the runtime cannot take back a body once it has it, so nothing is handed over before
/// it has been verified), is logged once per kind of reason ([`log::throttled`](crate::clr::log::throttled)) with
/// the method's name and token, and is returned as a [`RewriteOutcome`] whose failures
/// name their [`Phase`]. A method is rewritten at most once: later compilations of it
/// (generic instantiations, tier-up) are [`RewriteOutcome::AlreadyRewritten`] and
/// compile the rewritten body. A thread that compiles a method while another one is
/// rewriting it waits until that rewrite is handed over (its compilation then takes the
/// rewritten body) or given up; a method whose edit changed nothing, was refused or
/// failed is tried again at its next compilation.
///
/// **Inlining.** The JIT may inline a small method into its caller, and the inlined
/// copy is the callee's IL at the time the caller is compiled: if the callee had not
/// been compiled (so not rewritten) yet, its original IL, and its instrumentation is
/// lost for those calls. Forward the profiler's
/// [`jit_inlining`](crate::clr::Profiler::jit_inlining) to
/// [`JitRewriter::jit_inlining`] so that methods it rewrites or will rewrite are not
/// inlined ([`Inlining::KeepInstrumentation`], the default), rather than disabling
/// inlining for the whole process; give it a [filter](JitRewriter::with_filter) so that
/// only those methods lose inlining. ReadyToRun code compiled ahead of time may have
/// inlined methods already: set `COR_PRF_DISABLE_ALL_NGEN_IMAGES` to have everything
/// JIT-compiled.
///
/// **Modules.** It keeps per-module state ([`ModuleState`]): metadata, a shared
/// call-site resolver, the methods' states, the pristine IL of the methods it rewrote and
/// the profiler's data, created at a module's first compilation and dropped when the
/// module unloads ([`JitRewriter::module_unloaded`]). A module that gets the id of one
/// unloaded earlier never sees that module's state, also when unloads are not
/// forwarded: each lookup checks the module's identity (one `GetModuleMetaData` call, a
/// `QueryInterface` in the runtime).
///
/// No lock is held across a rewrite; per-thread scratch buffers; a module lookup takes
/// one shard's read lock.
pub struct JitRewriter {
    engine: Engine,
    filter: Option<Box<Filter>>,
    inlining: Inlining,
}

impl std::fmt::Debug for JitRewriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JitRewriter")
            .field("engine", &self.engine)
            .field("filter", &self.filter.is_some())
            .field("inlining", &self.inlining)
            .finish()
    }
}

impl JitRewriter {
    /// A rewriter using `info` (from [`Profiler::initialize`](crate::clr::Profiler::initialize)).
    pub fn new(info: ProfilerInfo) -> JitRewriter {
        JitRewriter {
            engine: Engine::new(info),
            filter: None,
            inlining: Inlining::default(),
        }
    }

    /// Keeps the pristine IL of every method it rewrites ([`ModuleState::pristine_il`]):
    /// a later rewrite of the method (a ReJIT) must start from its original IL, which
    /// the runtime no longer gives once a body was set. Off by default: it costs a copy
    /// per rewritten method (60 bytes on average in `Many.exe`), freed with its module,
    /// and about 0.3 µs per rewrite inside a JIT-heavy process (a third of an identity
    /// rewrite's time in the callback), for nothing in a profiler that rewrites each
    /// method once.
    pub fn with_pristine_il(mut self) -> JitRewriter {
        self.engine.keep_pristine_il();
        self
    }

    /// Only the methods `filter` selects are rewritten; the others are
    /// [`RewriteOutcome::NotSelected`] without being read or decoded, and are inlined as
    /// the JIT decides.
    pub fn with_filter(
        mut self,
        filter: impl Fn(&ModuleState, mdToken) -> bool + Send + Sync + 'static,
    ) -> JitRewriter {
        self.filter = Some(Box::new(filter));
        self
    }

    /// What [`JitRewriter::jit_inlining`] answers ([`Inlining::KeepInstrumentation`] by
    /// default).
    pub fn with_inlining(mut self, inlining: Inlining) -> JitRewriter {
        self.inlining = inlining;
        self
    }

    /// Turns on the timing of each phase of [`JitRewriter::rewrite`] (two clock reads
    /// per phase; off by default).
    pub fn with_timings(mut self) -> JitRewriter {
        self.engine.time_phases();
        self
    }

    /// Nanoseconds spent so far in each [`Phase`], in order, when timing is on.
    pub fn timings(&self) -> Option<[(Phase, u64); Phase::ALL.len()]> {
        self.engine.timings()
    }

    /// The runtime's `ICorProfilerInfo`.
    pub fn info(&self) -> &ProfilerInfo {
        self.engine.info()
    }

    /// The state of `module`, created (its metadata opened) the first time, and created
    /// anew when the module under that id is not the one the state was made for.
    ///
    /// # Errors
    /// When the runtime does not give the module's metadata (e.g. it is unloading).
    pub fn module(&self, module: ModuleID) -> Result<Arc<ModuleState>, ClrError> {
        self.engine.module(module)
    }

    /// How many modules it keeps state for now.
    pub fn modules_kept(&self) -> usize {
        self.engine.modules_kept()
    }

    /// Forgets the state of `module`: call it from
    /// [`Profiler::module_unload_started`](crate::clr::Profiler::module_unload_started)
    /// (with `COR_PRF_MONITOR_MODULE_LOADS`) when the program unloads assemblies
    /// (collectible `AssemblyLoadContext`s). The state (metadata references, caches,
    /// pristine IL, the profiler's data) is dropped as soon as no rewrite holds it.
    /// Without it, the state stays until a module gets the same id (correct, but the
    /// memory is held longer).
    pub fn module_unloaded(&self, module: ModuleID) {
        self.engine.module_unloaded(module);
    }

    /// The module and MethodDef token of `function`.
    ///
    /// # Errors
    /// The errors of [`ProfilerInfo::function_info`] and [`JitRewriter::module`].
    pub fn locate(&self, function: FunctionID) -> Result<(Arc<ModuleState>, mdToken), ClrError> {
        self.engine.function(function)
    }

    fn selects(&self, module: &ModuleState, token: mdToken) -> bool {
        self.filter.as_ref().is_none_or(|f| f(module, token))
    }

    /// Whether the JIT may inline `callee` into `caller`: the answer for
    /// [`Profiler::jit_inlining`](crate::clr::Profiler::jit_inlining) under the
    /// rewriter's [`Inlining`]. A callee that cannot be located is not inlined under
    /// [`Inlining::KeepInstrumentation`].
    pub fn jit_inlining(&self, _caller: FunctionID, callee: FunctionID) -> bool {
        if self.inlining == Inlining::Allow {
            return true;
        }
        let Ok((module, token)) = self.locate(callee) else {
            return false;
        };
        match module.method_state(token) {
            MethodState::Settled => true,
            MethodState::Rewritten | MethodState::InProgress => false,
            MethodState::NotSeen => !self.selects(&module, token),
        }
    }

    /// Records that the JIT was allowed to inline `callee` (the profiler's final answer
    /// to `JITInlining` was `true`): [`ModuleState::note_inlined`] of its module. A
    /// callee that cannot be located is not recorded.
    pub fn note_inlined(&self, callee: FunctionID) {
        if let Ok((module, token)) = self.locate(callee) {
            module.note_inlined(token);
        }
    }

    /// Instruments `function` with `instrumentation` and the tokens `tokens` gives for
    /// the function's module (for example the probes' MemberRefs or a `calli`
    /// signature, defined once per module and kept in [`ModuleState::data`]):
    /// [`JitRewriter::rewrite`] with the instrumentation as the edit, the method id
    /// [`MethodRewrite::method_id`], and the return-value local's signature defined after
    /// verification. The instrumenter's exact max stack, computed with the module's
    /// resolver, is the verification of the stack; it is not repeated (the clauses are
    /// still checked). `instrumentation` is shared by every JIT thread; the pipeline
    /// keeps each thread's working state.
    pub fn instrument<T>(
        &self,
        function: FunctionID,
        instrumentation: &Instrumentation,
        tokens: T,
    ) -> RewriteOutcome
    where
        T: FnOnce(&ModuleState) -> crate::error::Result<Vec<u32>>,
    {
        self.rewrite(function, |body, method| {
            let tokens = tokens(method.module)?;
            instrumentation.edit(body, method, &tokens)
        })
    }

    /// Rewrites `function` with `edit`, which changes the decoded body and returns
    /// whether it changed anything (`false` keeps the original IL). See the type's
    /// documentation for what happens around it. Call it from
    /// `JITCompilationStarted`, on the thread of the callback.
    pub fn rewrite<F>(&self, function: FunctionID, edit: F) -> RewriteOutcome
    where
        F: FnOnce(&mut MethodBody, &mut MethodRewrite<'_>) -> crate::error::Result<bool>,
    {
        let method = match self.engine.locate(function) {
            Ok(method) => method,
            Err(outcome) => return outcome,
        };
        if !self.selects(&method.module, method.token) {
            return RewriteOutcome::NotSelected;
        }
        let plan = MethodPlan::one(OnceEdit::new(edit));
        self.engine.run(Target::FirstJit(&method), &plan).outcome
    }

    /// Builds the IL of a ReJIT version of MethodDef `token` of `module` with `edit`,
    /// from inside `GetReJITParameters`, and hands it to `control` with `flags`: the
    /// same pipeline as a first JIT (decode, edit, verify, locals, encode, map), started
    /// from the method's pristine IL (keep it with [`JitRewriter::with_pristine_il`]
    /// when methods are also rewritten at first JIT). Nothing is claimed: every version
    /// is built. An edit that changes nothing hands the pristine IL over as it is
    /// ([`RewriteOutcome::Unchanged`]): the version then runs the file's IL. A refusal
    /// or failure hands nothing over; the caller then hands over something else (the
    /// runtime would compile the method's default IL).
    pub fn rejit<F>(
        &self,
        module: ModuleID,
        token: mdToken,
        control: &FunctionControl,
        flags: CodegenFlags,
        edit: F,
    ) -> RewriteOutcome
    where
        F: FnOnce(&mut MethodBody, &mut MethodRewrite<'_>) -> crate::error::Result<bool>,
    {
        let method = match self.engine.locate_def(module, token) {
            Ok(method) => method,
            Err(outcome) => return outcome,
        };
        let plan = MethodPlan::one(OnceEdit::new(edit));
        let target = Target::ReJit {
            method: &method,
            control,
            flags,
        };
        self.engine.run(target, &plan).outcome
    }
}

//! Rewriting methods as the JIT compiles them: [`JitRewriter`].

use core::fmt;
use std::cell::RefCell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use super::states::{Claim, MethodStates};
use crate::analysis::{CachingResolver, MaxStackMode, MetadataResolver, ReturnKind, StackAnalyzer};
use crate::body::{Decoder, Encoder, MethodBody};
use crate::clr::log;
use crate::clr::runtime::{ClrError, ModuleMetadata, ProfilerInfo};
use crate::clr::sys::{FunctionID, ModuleID, mdToken};
use crate::ilmap::IlMap;
use crate::metadata::MetadataSource;
use crate::sig::summarize_method_sig;
use crate::transform::MethodContext;

/// What the crate keeps per module: its metadata (opened for reading and writing), the
/// resolver of its call sites, and which of its methods were rewritten.
pub struct ModuleState {
    id: ModuleID,
    metadata: ModuleMetadata,
    resolver: CachingResolver<MetadataResolver<ModuleMetadata>>,
    /// Where each of its methods is in its rewrite.
    states: MethodStates,
    /// The profiler's own data for this module ([`ModuleState::data`]).
    data: OnceLock<Box<dyn std::any::Any + Send + Sync>>,
    /// Set when the module unloads: its id may then name another module.
    unloaded: std::sync::atomic::AtomicBool,
}

impl ModuleState {
    /// The profiler's own data for this module, made by `init` the first time (for
    /// example the tokens it defined in the module for its injected code). `init` runs
    /// once; threads arriving meanwhile wait for it. `None` if data of another type was
    /// stored first.
    pub fn data<T: std::any::Any + Send + Sync>(&self, init: impl FnOnce() -> T) -> Option<&T> {
        self.data.get_or_init(|| Box::new(init())).downcast_ref()
    }

    /// The runtime's id of the module.
    pub fn id(&self) -> ModuleID {
        self.id
    }

    /// The module's metadata.
    pub fn metadata(&self) -> &ModuleMetadata {
        &self.metadata
    }

    /// The module's call-site resolver (shared by every thread; each token resolved
    /// once). Calls to members the profiler defined in the module resolve too.
    pub fn resolver(&self) -> &CachingResolver<MetadataResolver<ModuleMetadata>> {
        &self.resolver
    }

    fn is_unloaded(&self) -> bool {
        self.unloaded.load(Ordering::Acquire)
    }

    /// Whether a rewritten body of MethodDef `token` was handed to the runtime (see
    /// [`JitRewriter::rewrite`]).
    pub fn was_rewritten(&self, token: mdToken) -> bool {
        self.states.is_rewritten(token & 0x00FF_FFFF)
    }
}

impl fmt::Debug for ModuleState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ModuleState")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

/// The modules seen so far, found without a lock: an open-addressing table of slots set
/// once (a module's state is created, outside any lock, the first time one of its
/// methods is compiled).
#[derive(Debug)]
struct ModuleTable {
    slots: Box<[OnceLock<Arc<ModuleState>>]>,
}

impl ModuleTable {
    const SLOTS: usize = 1 << 13;

    fn new() -> ModuleTable {
        ModuleTable {
            slots: (0..Self::SLOTS).map(|_| OnceLock::new()).collect(),
        }
    }

    fn start(id: ModuleID) -> usize {
        ((id as u64 >> 4).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 51) as usize % Self::SLOTS
    }

    fn get(&self, id: ModuleID) -> Option<Arc<ModuleState>> {
        let start = Self::start(id);
        for i in 0..Self::SLOTS {
            match self.slots[(start + i) % Self::SLOTS].get() {
                Some(state) if state.id == id && !state.is_unloaded() => {
                    return Some(state.clone());
                }
                Some(_) => continue,
                None => return None,
            }
        }
        None
    }

    /// Stores `state` for `id` unless another thread stored one first; returns the one
    /// stored. `None` when the table is full.
    fn insert(&self, id: ModuleID, state: Arc<ModuleState>) -> Option<Arc<ModuleState>> {
        let start = Self::start(id);
        for i in 0..Self::SLOTS {
            let stored = self.slots[(start + i) % Self::SLOTS].get_or_init(|| state.clone());
            if stored.id == id && !stored.is_unloaded() {
                return Some(stored.clone());
            }
        }
        None
    }
}

/// What [`JitRewriter::rewrite`] did with one JIT compilation.
#[derive(Debug)]
pub enum RewriteOutcome {
    /// The rewritten body was handed to the runtime.
    Rewritten {
        /// The new body's size in bytes.
        bytes: usize,
    },
    /// The edit left the method as it was (it returned `false`).
    Unchanged,
    /// The method was already rewritten by an earlier compilation (a generic
    /// instantiation, a tier-up): the runtime hands back the rewritten IL, which is not
    /// instrumented twice.
    AlreadyRewritten,
    /// The crate declined the method with a typed error (e.g. a body with `jmp`, which
    /// cannot be wrapped, or a tail call that cannot be kept): its original IL is kept.
    Refused(crate::Error),
    /// Anything else went wrong (decoding, a failed verification, the runtime refusing a
    /// call, a panic in the edit): the original IL is kept.
    Failed(String),
}

impl RewriteOutcome {
    /// A short reason, for counting outcomes by kind (`None` for success).
    pub fn reason(&self) -> Option<String> {
        match self {
            RewriteOutcome::Rewritten { .. }
            | RewriteOutcome::Unchanged
            | RewriteOutcome::AlreadyRewritten => None,
            RewriteOutcome::Refused(e) => Some(e.to_string()),
            RewriteOutcome::Failed(why) => Some(why.clone()),
        }
    }
}

/// The method being rewritten, as the edit sees it.
#[derive(Debug)]
pub struct MethodRewrite<'a> {
    /// The function being compiled.
    pub function: FunctionID,
    /// Its MethodDef token.
    pub token: mdToken,
    /// Its module.
    pub module: &'a ModuleState,
    new_locals: Option<Vec<u8>>,
    /// Whether the edit's result has been analysed already, with this module's resolver
    /// (by the `Instrumenter` in [`JitRewriter::instrument`]).
    stack_verified: bool,
}

impl MethodRewrite<'_> {
    /// The method's signature blob.
    ///
    /// # Errors
    /// When the runtime's metadata does not give it.
    pub fn signature(&self) -> crate::Result<&[u8]> {
        self.module.metadata.signature(self.token)
    }

    /// What an [`crate::Instrumenter`] needs of this method, with `id` as its method id.
    ///
    /// # Errors
    /// When the runtime's metadata does not give the signatures.
    pub fn context(&self, body: &MethodBody, id: i32) -> crate::Result<MethodContext<'_>> {
        MethodContext::from_metadata(&self.module.metadata, self.token, body, id)
    }

    /// The LocalVarSig the rewritten body needs (e.g. with a return-value local added):
    /// its token is defined with `GetTokenFromSig` and set on the body only once the
    /// rewritten body has been verified, so a failed rewrite defines nothing.
    pub fn set_locals_signature(&mut self, blob: &[u8]) {
        self.new_locals = Some(blob.to_vec());
    }
}

/// Per-thread scratch space (JIT callbacks arrive on many threads at once; nothing here
/// is shared, so nothing is locked).
#[derive(Debug, Default)]
struct Scratch {
    decoder: Decoder,
    encoder: Encoder,
    analyzer: StackAnalyzer,
    body: MethodBody,
    il: Vec<u8>,
    out: Vec<u8>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// Rewrites methods in `JITCompilationStarted`: gets the IL, decodes it, runs the
/// caller's edit, verifies the result (the stack analysis with the exact max stack, and
/// the clauses; a body the edit left unedited must re-encode to exactly its original
/// bytes), defines a changed LocalVarSig's token, encodes, and hands the body and its IL
/// map to the runtime.
///
/// Any error, refusal or panic on the way leaves the method's original IL untouched (the
/// runtime cannot take back a body once it has it, so nothing is handed over before it
/// has been verified), is logged ([`log`]) with the method's name and token, and
/// is returned as a [`RewriteOutcome`]. A method is rewritten at most once: later
/// compilations of it (generic instantiations, tier-up) are
/// [`RewriteOutcome::AlreadyRewritten`], and compile the rewritten body. A thread that
/// compiles a method while another one is rewriting it waits until that rewrite is handed
/// over (its compilation then takes the rewritten body) or given up; a method whose edit
/// changed nothing, was refused or failed is tried again at its next compilation.
///
/// It keeps per-module state (metadata, a shared call-site resolver) found without a
/// lock, and per-thread scratch buffers: no lock is taken on the JIT path once a module
/// is known.
#[derive(Debug)]
pub struct JitRewriter {
    info: ProfilerInfo,
    modules: ModuleTable,
    /// Nanoseconds spent in each phase, when timing is on.
    timings: Option<Box<[AtomicU64; PHASES.len()]>>,
}

/// The phases of [`JitRewriter::rewrite`], as [`JitRewriter::timings`] names them.
pub const PHASES: [&str; 8] = [
    "locate (GetFunctionInfo, module state)",
    "GetILFunctionBody",
    "decode",
    "edit",
    "verify (max stack, clauses)",
    "encode, IL map",
    "IMethodMalloc + SetILFunctionBody",
    "SetILInstrumentedCodeMap",
];

/// Adds the time since the last lap to a phase's counter, when timing is on.
struct Clock<'a> {
    timings: Option<&'a [AtomicU64; PHASES.len()]>,
    last: Option<std::time::Instant>,
}

impl Clock<'_> {
    fn lap(&mut self, phase: usize) {
        if let (Some(t), Some(last)) = (self.timings, self.last) {
            let now = std::time::Instant::now();
            t[phase].fetch_add((now - last).as_nanos() as u64, Ordering::Relaxed);
            self.last = Some(now);
        }
    }
}

impl JitRewriter {
    /// A rewriter using `info` (from [`Profiler::initialize`](crate::clr::Profiler::initialize)).
    pub fn new(info: ProfilerInfo) -> JitRewriter {
        JitRewriter {
            info,
            modules: ModuleTable::new(),
            timings: None,
        }
    }

    /// Turns on the timing of each phase of [`JitRewriter::rewrite`] (two clock reads
    /// per phase; off by default).
    pub fn with_timings(mut self) -> JitRewriter {
        self.timings = Some(Box::default());
        self
    }

    /// Nanoseconds spent so far in each phase ([`PHASES`]), when timing is on.
    pub fn timings(&self) -> Option<[(&'static str, u64); PHASES.len()]> {
        let t = self.timings.as_ref()?;
        Some(core::array::from_fn(|i| {
            (PHASES[i], t[i].load(Ordering::Relaxed))
        }))
    }

    /// The runtime's `ICorProfilerInfo`.
    pub fn info(&self) -> &ProfilerInfo {
        &self.info
    }

    /// The state of `module`, created (its metadata opened) the first time.
    ///
    /// # Errors
    /// When the runtime does not give the module's metadata.
    pub fn module(&self, module: ModuleID) -> Result<Arc<ModuleState>, ClrError> {
        if let Some(state) = self.modules.get(module) {
            return Ok(state);
        }
        let metadata = ModuleMetadata::open(&self.info, module)?;
        let state = Arc::new(ModuleState {
            id: module,
            resolver: CachingResolver::for_module(metadata.clone()),
            metadata,
            states: MethodStates::default(),
            data: OnceLock::new(),
            unloaded: std::sync::atomic::AtomicBool::new(false),
        });
        Ok(self.modules.insert(module, state.clone()).unwrap_or(state))
    }

    /// Instruments `function` with `instrumenter` ([`crate::Instrumenter`]), the method
    /// id `id` and the tokens `tokens` gives for the function's module (for example the
    /// probes' MemberRefs or a `calli` signature, defined once per module and kept in
    /// [`ModuleState::data`]): [`JitRewriter::rewrite`] with the instrumentation as the
    /// edit and the return-value local's signature defined after verification. The
    /// instrumenter's exact max stack, computed with the module's resolver, is the
    /// verification of the stack; it is not repeated (the clauses are still checked).
    pub fn instrument<T>(
        &self,
        function: FunctionID,
        instrumenter: &mut crate::Instrumenter,
        id: i32,
        tokens: T,
    ) -> RewriteOutcome
    where
        T: FnOnce(&ModuleState) -> crate::Result<Vec<u32>>,
    {
        self.rewrite(function, |body, method| {
            let tokens = tokens(method.module)?;
            let mut context = method.context(body, id)?;
            context.tokens = &tokens;
            let done = instrumenter.instrument(body, &context, method.module.resolver())?;
            let locals = done.new_locals_signature.map(<[u8]>::to_vec);
            method.stack_verified = true;
            if let Some(locals) = locals {
                method.set_locals_signature(&locals);
            }
            Ok(true)
        })
    }

    /// Forgets the state of `module`: call it from
    /// [`Profiler::module_unload_started`](crate::clr::Profiler::module_unload_started) (with `COR_PRF_MONITOR_MODULE_LOADS`)
    /// when the program unloads assemblies (collectible `AssemblyLoadContext`s), since
    /// the runtime may give a later module the same id. Without it a reused id would
    /// find the unloaded module's metadata. The table keeps the slot (a tombstone), so
    /// it can fill up after some 8,000 module loads; modules are then rewritten without
    /// shared state.
    pub fn module_unloaded(&self, module: ModuleID) {
        if let Some(state) = self.modules.get(module) {
            state.unloaded.store(true, Ordering::Release);
        }
    }

    /// The module and MethodDef token of `function`.
    ///
    /// # Errors
    /// The errors of [`ProfilerInfo::function_info`].
    pub fn locate(&self, function: FunctionID) -> Result<(Arc<ModuleState>, mdToken), ClrError> {
        let f = self.info.function_info(function)?;
        Ok((self.module(f.module)?, f.token))
    }

    /// Rewrites `function` with `edit`, which changes the decoded body and returns
    /// whether it changed anything (`false` keeps the original IL). See the type's
    /// documentation for what happens around it. Call it from
    /// `JITCompilationStarted`, on the thread of the callback.
    pub fn rewrite<F>(&self, function: FunctionID, edit: F) -> RewriteOutcome
    where
        F: FnOnce(&mut MethodBody, &mut MethodRewrite<'_>) -> crate::Result<bool>,
    {
        let outcome = self.rewrite_caught(function, edit);
        if outcome.reason().is_some() {
            self.log_outcome(function, &outcome);
        }
        outcome
    }

    /// Logs a refusal or failure with the method's name and token ([`log`]).
    #[cold]
    fn log_outcome(&self, function: FunctionID, outcome: &RewriteOutcome) {
        let method = match self.locate(function) {
            Ok((module, token)) => {
                let name = crate::disasm::method_name(module.metadata(), token);
                format!("{name} (0x{token:08x})")
            }
            Err(_) => format!("function {function:#x}"),
        };
        log::write(&format!("{method}: {outcome}; its original IL is kept"));
    }

    fn rewrite_caught<F>(&self, function: FunctionID, edit: F) -> RewriteOutcome
    where
        F: FnOnce(&mut MethodBody, &mut MethodRewrite<'_>) -> crate::Result<bool>,
    {
        match catch_unwind(AssertUnwindSafe(|| self.rewrite_inner(function, edit))) {
            Ok(outcome) => outcome,
            Err(panic) => {
                let what = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "a panic".to_string());
                // The scratch buffers may be half-way through an edit: start afresh.
                let _ =
                    SCRATCH.try_with(|s| s.try_borrow_mut().map(|mut s| *s = Scratch::default()));
                RewriteOutcome::Failed(format!("panic: {what}"))
            }
        }
    }

    fn rewrite_inner<F>(&self, function: FunctionID, edit: F) -> RewriteOutcome
    where
        F: FnOnce(&mut MethodBody, &mut MethodRewrite<'_>) -> crate::Result<bool>,
    {
        let mut clock = Clock {
            timings: self.timings.as_deref(),
            last: self.timings.as_ref().map(|_| std::time::Instant::now()),
        };
        let (module, token) = match self.locate(function) {
            Ok(found) => found,
            Err(e) => return RewriteOutcome::Failed(e.to_string()),
        };
        // Claimed before anything else: two threads compiling instantiations of one
        // method at once must not both rewrite it (the second would get the first's IL),
        // and the second must not return before the first handed its body over (its
        // compilation would take the original IL).
        let claim = match module.states.claim(token & 0x00FF_FFFF) {
            Some(Claim::Won(claim)) => claim,
            Some(Claim::Rewritten) => return RewriteOutcome::AlreadyRewritten,
            Some(Claim::TimedOut) => {
                return RewriteOutcome::Failed(format!(
                    "another thread was still rewriting this method after {} s",
                    super::states::WAIT_LIMIT.as_secs()
                ));
            }
            None => return RewriteOutcome::Failed(format!("no MethodDef row {token:#x}")),
        };
        SCRATCH.with(|scratch| {
            let Ok(mut scratch) = scratch.try_borrow_mut() else {
                return RewriteOutcome::Failed("re-entered on the same thread".to_string());
            };
            let s = &mut *scratch;
            s.il.clear();
            clock.lap(0);
            if let Err(e) = self.info.il_function_body(module.id, token, &mut s.il) {
                return RewriteOutcome::Failed(e.to_string());
            }
            clock.lap(1);
            if let Err(e) = s.decoder.decode_into(&s.il, &mut s.body) {
                return RewriteOutcome::Failed(format!("decode: {e}"));
            }
            clock.lap(2);
            let mut method = MethodRewrite {
                function,
                token,
                module: &module,
                new_locals: None,
                stack_verified: false,
            };
            match edit(&mut s.body, &mut method) {
                Ok(true) => {}
                Ok(false) => return RewriteOutcome::Unchanged,
                Err(
                    e @ (crate::Error::Unsupported { .. } | crate::Error::TailCallNotKept { .. }),
                ) => return RewriteOutcome::Refused(e),
                // A limit (more locals than a method can have, a type too deep for a
                // signature tree) is valid IL the crate declines, not a failure.
                Err(e) if e.is_limit() => return RewriteOutcome::Refused(e),
                Err(e) => return RewriteOutcome::Failed(e.to_string()),
            }
            clock.lap(3);
            // Verified before anything goes to the runtime. An unedited body is its
            // original bytes again and needs no analysis.
            let edited = !s.body.instrs.is_unedited() || method.new_locals.is_some();
            if edited && !method.stack_verified {
                let returns = match method.signature().and_then(summarize_method_sig) {
                    Ok(sig) => ReturnKind::value_if(sig.returns_value),
                    Err(e) => return RewriteOutcome::Failed(format!("signature: {e}")),
                };
                if let Err(e) = s.analyzer.apply_max_stack(
                    &mut s.body,
                    &module.resolver,
                    MaxStackMode::Compute,
                    returns,
                ) {
                    return RewriteOutcome::Failed(format!("verification: {e}"));
                }
            }
            if edited && let Err(e) = s.body.validate_clauses() {
                return RewriteOutcome::Failed(format!("verification: {e}"));
            }
            clock.lap(4);
            if let Some(blob) = &method.new_locals {
                match module.metadata.token_from_sig(blob) {
                    Ok(t) => s.body.local_var_sig = t,
                    Err(e) => return RewriteOutcome::Failed(e.to_string()),
                }
            }
            s.out.clear();
            if let Err(e) = s.encoder.encode(&s.body, &mut s.out) {
                return RewriteOutcome::Failed(format!("encode: {e}"));
            }
            // An unedited body must come out as the bytes it came in as: if it does not,
            // something is wrong, and nothing is handed over.
            if !edited && s.il.get(..s.out.len()) != Some(&s.out[..]) {
                return RewriteOutcome::Failed(
                    "re-encoding the unedited body changed its bytes".to_string(),
                );
            }
            // An unedited body maps every offset to itself: the runtime needs no map.
            let map = edited.then(|| IlMap::from_offsets(&s.body, s.encoder.encoded_offsets()));
            clock.lap(5);
            if let Err(e) = self.info.set_il_function_body(module.id, token, &s.out) {
                return RewriteOutcome::Failed(e.to_string());
            }
            // The runtime has the new body: every compilation of the method from now on
            // compiles it, whatever happens next.
            claim.handed_over();
            clock.lap(6);
            if let Some(map) = map
                && let Err(e) = self.info.set_il_instrumented_code_map(function, &map)
            {
                return RewriteOutcome::Failed(e.to_string());
            }
            clock.lap(7);
            RewriteOutcome::Rewritten { bytes: s.out.len() }
        })
    }
}

impl fmt::Display for RewriteOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RewriteOutcome::Rewritten { bytes } => write!(f, "rewritten ({bytes} bytes)"),
            RewriteOutcome::Unchanged => f.write_str("unchanged"),
            RewriteOutcome::AlreadyRewritten => f.write_str("already rewritten"),
            RewriteOutcome::Refused(e) => write!(f, "refused: {e}"),
            RewriteOutcome::Failed(why) => write!(f, "failed: {why}"),
        }
    }
}

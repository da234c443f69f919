//! What an instrumentation method is ([`InstrumentationMethod`]) and what the manager
//! hands it: [`Start`] at initialization, [`ModuleLoad`] when a module loads,
//! [`MethodEdit`] for each method it edits.

use std::any::Any;
use std::sync::{Arc, Mutex, PoisonError};

use super::config::{ConfigError, OptionSpec, Options};
use super::events::{Events, EventsHandle};
use crate::body::MethodBody;
use crate::clr::hooks::HookSubscriber;
use crate::clr::profiler::{Callbacks, Profiler};
use crate::clr::rejit::MethodKey;
use crate::clr::rewrite::MethodRewrite;
use crate::clr::rewrite::items::{Containers, KeyedItems, downcast};
use crate::clr::rewrite::module::{ModuleState, row};
use crate::clr::runtime::{AssemblyName, ClrError, ModuleFacts, ModuleMetadata, ProfilerInfo};
use crate::clr::sys::mdToken;
use crate::metadata::MetadataSource;
use crate::selector::Selector;
use crate::transform::SingleRet;

/// Whether an instrumentation method edits a method ([`InstrumentationMethod::wants`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Interest {
    /// Not this method: it is not decoded for this instrumentation method.
    #[default]
    No,
    /// Edit it.
    Edit,
    /// Edit it after the manager made it single-ret (every `ret` a jump to one
    /// epilogue, a return value carried in a new local), done once for all the
    /// instrumentation methods that ask, before the first edit
    /// ([`MethodEdit::single_ret`]).
    EditSingleRet,
}

/// A .NET method rewriter hosted by a [`Manager`](super::Manager), several of which
/// share one profiler: each asks for the runtime events it needs, receives the
/// callbacks it subscribes to (its [`Profiler`] methods), defines metadata when a module
/// loads, says cheaply which methods interest it, and edits their shared body.
///
/// Its `Profiler` methods are called only for the callbacks of
/// [`InstrumentationMethod::callbacks`], in priority order, each inside its own panic
/// guard; `initialize`, `initialize_for_attach` and `load_as_notification_only` are the
/// manager's own and never called (it gets [`InstrumentationMethod::start`] instead). A
/// `bool` callback's answer is combined: `jit_inlining` and
/// `jit_cached_function_search_started` answer `true` only if every subscriber does.
///
/// Everything here is called from many threads at once (`&self`). The manager keeps no
/// lock while calling it.
///
/// `M` is the modules' metadata: the runtime's [`ModuleMetadata`] in a profiler (the
/// default), an assembly file in tests.
pub trait InstrumentationMethod<M = ModuleMetadata>: Profiler {
    /// A stable name: how the configuration and the logs name it.
    fn name(&self) -> &str;

    /// Its priority when the configuration gives none (default 0). The instrumentation
    /// methods edit a method in descending priority, ties in registration order: code
    /// that a later edit inserts before a `ret` runs after what an earlier one inserted
    /// there, and code inserted at entry runs before it.
    fn priority(&self) -> i32 {
        0
    }

    /// The runtime events it needs (default none). Asked once, after
    /// [`start`](InstrumentationMethod::start); to change them later, keep
    /// [`Start::events`]. It need not name those of its
    /// [`callbacks`](InstrumentationMethod::callbacks): the manager adds, at start, the
    /// flags each of them needs ([`Callback::events`](crate::clr::Callback::events))
    /// that neither these, what it set during its start, what it asks later
    /// ([`deferred_events`](InstrumentationMethod::deferred_events)) nor the manager's
    /// own events give, and logs each; or refuses to start when it cannot ask for one
    /// (`COR_PRF_ENABLE_REJIT` without the manager's ReJIT).
    fn events(&self) -> Events {
        Events::default()
    }

    /// The events of its callbacks that it asks for only later, through
    /// [`Start::events`] (default none): the manager does not add them at start, so that
    /// those callbacks come only once it asks (class loads after a module of interest
    /// loaded, say). Asked once, after [`start`](InstrumentationMethod::start).
    fn deferred_events(&self) -> Events {
        Events::default()
    }

    /// The assemblies its module-load step adds references to (its helpers): the
    /// manager announces them where the runtime asks
    /// (`ICorProfilerCallback6::GetAssemblyReferences`, with
    /// `COR_PRF_HIGH_ADD_ASSEMBLY_REFERENCES`, which the manager sets when any
    /// instrumentation method has one). Asked after `start`, and at each announcement.
    fn assembly_references(&self) -> Vec<AssemblyName<'_>> {
        Vec::new()
    }

    /// The callbacks it receives (default none), asked at start: the manager asks the
    /// runtime for the events they need ([`InstrumentationMethod::events`]).
    fn callbacks(&self) -> Callbacks {
        Callbacks::empty()
    }

    /// The options it takes in a configuration file (default none): a key it does not
    /// declare, or a value of another type, is a configuration error before anything
    /// starts.
    fn options(&self) -> &[OptionSpec] {
        &[]
    }

    /// Its subscriber to the enter/leave/tailcall hooks (default none): asked once,
    /// after a successful [`start`](InstrumentationMethod::start), inside `Initialize`
    /// (the only moment the runtime takes hooks). The manager registers every
    /// instrumentation method's subscriber on one [`HookTable`](crate::clr::hooks::HookTable),
    /// with the events the hooks need, and its
    /// [`hook path`](super::Manager::with_hook_path).
    fn hook_subscriber(&self) -> Option<Arc<dyn HookSubscriber>> {
        None
    }

    /// Initialization, before any other call, with its options ([`Start::options`]).
    ///
    /// # Errors
    /// Why it cannot run (an option's value it does not accept:
    /// [`Options::invalid`]): the manager logs it, and then runs none of its
    /// instrumentation methods: a profiler that cannot do all it was asked does nothing.
    fn start(&self, start: &Start<'_>) -> Result<(), MethodError> {
        let _ = start;
        Ok(())
    }

    /// Whether it accepts `options` for a ReJIT request (the live dial's
    /// `instrument`), once they were checked against
    /// [`InstrumentationMethod::options`]: the checks its
    /// [`start`](InstrumentationMethod::start) makes of the configured ones (a value
    /// out of range, say). Default: accepted.
    ///
    /// # Errors
    /// Why not: the request is refused and nothing changes.
    fn check_options(&self, options: &Options) -> Result<(), MethodError> {
        let _ = options;
        Ok(())
    }

    /// A module finished loading: define the metadata its later edits will name
    /// (references to helpers: [`ModuleMetadata::method_in`] and its kin), and keep what
    /// it needs as the module's data item ([`ModuleLoad::set_item`]). Metadata belongs
    /// here, not to the edit: the runtime takes new metadata rows only while a module
    /// loads (LocalVarSigs aside).
    ///
    /// # Errors
    /// Logged; its data item stays unset, which its edits can see.
    ///
    /// An instrumentation method whose edits call a Rust function of the profiler
    /// ([`NativeCall`](crate::clr::NativeCall)) defines the call's signature here, once
    /// per module, and keeps its token for them:
    ///
    /// ```no_run
    /// use ilrewrite::clr::{InstrumentationMethod, MethodError, ModuleLoad, NativeCall, Profiler};
    /// use ilrewrite::clr::sys::mdSignature;
    ///
    /// extern "C" fn entered(method: i32) {
    ///     let _ = method; // count, sample, trace
    /// }
    ///
    /// /// The module's token of `entered`'s signature, for the edits' `calli`.
    /// struct CallToken(mdSignature);
    ///
    /// struct Count;
    /// impl Profiler for Count {}
    /// impl InstrumentationMethod for Count {
    ///     fn name(&self) -> &str {
    ///         "count"
    ///     }
    ///     fn module_loaded(&self, module: &ModuleLoad<'_>) -> Result<(), MethodError> {
    ///         let call = NativeCall::new(entered as extern "C" fn(i32));
    ///         let token = call.signature_token(module.module().metadata())?;
    ///         module.set_item(CallToken(token));
    ///         Ok(())
    ///     }
    /// }
    /// ```
    fn module_loaded(&self, module: &ModuleLoad<'_, M>) -> Result<(), MethodError> {
        let _ = module;
        Ok(())
    }

    /// The methods it edits, named ([`Selector`]), when it knows them by name: asked
    /// once, after a successful [`start`](InstrumentationMethod::start) (from its
    /// options, say: [`OptionKind::Selectors`](super::OptionKind::Selectors)). Default:
    /// none, and then [`wants`](InstrumentationMethod::wants) is asked of every method
    /// the JIT compiles.
    ///
    /// With targets, the manager finds them in each module's metadata when the module
    /// loads (type and method names; no other method is read), and
    /// [`wants`](InstrumentationMethod::wants) is asked only of them
    /// ([`Candidate::is_target`]; its default edits them). A target runs the edited IL
    /// from its first call after its module loaded, whether the JIT compiles it or its
    /// module holds precompiled (ReadyToRun) code: for those, the manager asks the
    /// runtime to re-JIT-compile the targets before any of them can run (this turns the
    /// manager's ReJIT on). Every instantiation of a generic method or type is edited.
    /// At shutdown the manager logs each target that matched no method.
    fn targets(&self) -> Vec<Selector> {
        Vec::new()
    }

    /// Whether it edits the method. Called at every JIT compilation of every method
    /// (generic instantiations and tier-up included), and when the JIT asks whether it
    /// may inline a method ([`Candidate::compiling`] tells which), before anything is
    /// read or decoded: decide from names, tokens, attributes or its data items,
    /// cheaply. A method already rewritten is not edited again whatever it answers.
    /// An instrumentation method with [`targets`](InstrumentationMethod::targets) is
    /// asked only of them. Default: its targets ([`Interest::Edit`] when
    /// [`Candidate::is_target`]), no other method ([`Interest::No`]): an instrumentation
    /// method that only subscribes to callbacks writes neither.
    fn wants(&self, method: &Candidate<'_, M>) -> Interest {
        match method.is_target() {
            true => Interest::Edit,
            false => Interest::No,
        }
    }

    /// Whether it must never edit the method, not even when a ReJIT request (the live
    /// dial's `instrument`) names it explicitly: e.g. the helpers its own injected code
    /// calls, whose instrumentation would recurse. Default: none. `wants` answering
    /// `No` only says the method is not among those it selects by itself; a request
    /// overrides that, never this.
    fn refuses(&self, method: &Candidate<'_, M>) -> bool {
        let _ = method;
        false
    }

    /// Edits the method's shared body, which the instrumentation methods before it in
    /// priority order have edited already; returns whether it changed anything.
    ///
    /// # Errors
    /// An error, or a panic, rolls back this instrumentation method's edits of this
    /// method only, and is logged once per method; the others' edits stay.
    ///
    /// Default: changes nothing, for an instrumentation method that edits no method.
    fn edit(
        &self,
        body: &mut MethodBody,
        method: &mut MethodEdit<'_, '_, M>,
    ) -> crate::error::Result<bool> {
        let _ = (body, method);
        Ok(false)
    }
}

/// Makes the instrumentation method in the shared library at a path, or says why not
/// ([`Manager::configured_with_loader`](super::Manager::configured_with_loader);
/// `LibraryMethod::loader` for the C ABI).
pub type LibraryLoader =
    dyn Fn(&std::path::Path) -> Result<Arc<dyn InstrumentationMethod>, String> + Send + Sync;

/// What an instrumentation method gets at [`InstrumentationMethod::start`].
#[derive(Debug)]
pub struct Start<'a> {
    pub(crate) info: &'a ProfilerInfo,
    pub(crate) options: &'a Options,
    pub(crate) events: &'a EventsHandle,
}

impl Start<'_> {
    /// The runtime's `ICorProfilerInfo`, to keep for later calls.
    pub fn info(&self) -> &ProfilerInfo {
        self.info
    }

    /// Its options from the configuration file, checked against
    /// [`InstrumentationMethod::options`] (empty without a file).
    pub fn options(&self) -> &Options {
        self.options
    }

    /// Its hold on its own runtime events, to keep and change them later
    /// ([`EventsHandle::set`]: the manager asks the runtime for the new union).
    pub fn events(&self) -> EventsHandle {
        self.events.clone()
    }
}

/// Why an instrumentation method cannot run as configured
/// ([`InstrumentationMethod::start`]), as a ReJIT request asks
/// ([`InstrumentationMethod::check_options`]), or in a module that loaded
/// ([`InstrumentationMethod::module_loaded`]). `?` makes one of a [`ConfigError`] (what
/// [`Options::invalid`] gives), a runtime call's [`ClrError`] (its `HRESULT` kept), the
/// crate's [`Error`](crate::Error), a `String` or a `&str`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MethodError {
    /// An option's value it does not accept, at its place in the configuration.
    #[error(transparent)]
    Option(#[from] ConfigError),
    /// A call to the runtime failed (a metadata definition, say).
    #[error(transparent)]
    Runtime(#[from] ClrError),
    /// The crate refused or failed (a signature it cannot build, say).
    #[error(transparent)]
    Crate(#[from] crate::error::Error),
    /// Its own reason.
    #[error("{0}")]
    Reason(String),
}

impl From<String> for MethodError {
    fn from(reason: String) -> MethodError {
        MethodError::Reason(reason)
    }
}

impl From<&str> for MethodError {
    fn from(reason: &str) -> MethodError {
        MethodError::Reason(reason.to_owned())
    }
}

/// A method an instrumentation method may want ([`InstrumentationMethod::wants`]): its
/// module, token, whether it is being compiled, and this instrumentation method's data
/// on it.
pub struct Candidate<'a, M = ModuleMetadata> {
    pub(crate) module: &'a ModuleState<M>,
    pub(crate) token: mdToken,
    pub(crate) compiling: bool,
    pub(crate) targeted: bool,
    pub(crate) owner: Owner,
    pub(crate) containers: &'a Containers,
}

impl<'a, M> Candidate<'a, M> {
    /// Whether one of this instrumentation method's
    /// [`targets`](InstrumentationMethod::targets) selected the method (always `false`
    /// for one that declares none).
    pub fn is_target(&self) -> bool {
        self.targeted
    }

    /// The method's module: its id, metadata and data.
    pub fn module(&self) -> &'a ModuleState<M> {
        self.module
    }

    /// The method's MethodDef token.
    pub fn token(&self) -> mdToken {
        self.token
    }

    /// `true` at a JIT compilation of the method, `false` when the JIT asks whether it
    /// may inline it (an answer for the inlining policy: nothing is edited then).
    pub fn compiling(&self) -> bool {
        self.compiling
    }

    /// The method's name as the dial's selectors write it: `Namespace.Type::Method`,
    /// a nested type as `Namespace.Outer/Inner`, a generic type with its arity
    /// (``System.Collections.Generic.Dictionary`2::TryGetValue``). Read from the
    /// metadata at each call: a filter that asks it of every method pays for it.
    pub fn name(&self) -> String
    where
        M: MetadataSource,
    {
        crate::disasm::selector_name(self.module.metadata(), self.token)
    }

    /// This instrumentation method's data on the method's module.
    pub fn module_item<T: Any + Send + Sync>(&self) -> Option<Arc<T>> {
        module_item(self.module, self.owner)
    }

    /// This instrumentation method's data on the method's assembly
    /// ([`ModuleLoad::set_assembly_item`]).
    pub fn assembly_item<T: Any + Send + Sync>(&self) -> Option<Arc<T>> {
        let key = self.module.facts()?.assembly;
        keyed_item(&self.containers.assemblies, key, self.owner)
    }

    /// This instrumentation method's data on the method's app domain
    /// ([`ModuleLoad::set_app_domain_item`]).
    pub fn app_domain_item<T: Any + Send + Sync>(&self) -> Option<Arc<T>> {
        let key = self.module.facts()?.app_domain;
        keyed_item(&self.containers.app_domains, key, self.owner)
    }

    /// This instrumentation method's data on the method, kept across its compilations
    /// while its module is loaded ([`MethodEdit::set_method_item`]).
    pub fn method_item<T: Any + Send + Sync>(&self) -> Option<Arc<T>> {
        method_item(self.module, self.owner, self.token)
    }

    /// Keeps `item` as this instrumentation method's data on the method (replacing
    /// any).
    pub fn set_method_item<T: Any + Send + Sync>(&self, item: T) {
        set_method_item(self.module, self.owner, self.token, Some(Arc::new(item)));
    }
}

impl<M> core::fmt::Debug for Candidate<'_, M> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Candidate")
            .field("module", &self.module.id())
            .field("token", &self.token)
            .field("compiling", &self.compiling)
            .finish()
    }
}

/// Where one instrumentation method's data items are: its index among the manager's
/// instrumentation methods, and how many there are.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Owner {
    pub(crate) index: usize,
    pub(crate) count: usize,
}

/// A module that finished loading, as one instrumentation method sees it.
pub struct ModuleLoad<'a, M = ModuleMetadata> {
    pub(crate) module: &'a ModuleState<M>,
    pub(crate) owner: Owner,
    pub(crate) containers: &'a Containers,
    /// Where [`ModuleLoad::recompile`] collects methods; `None` when ReJIT is off.
    pub(crate) recompile: Option<&'a Mutex<Vec<MethodKey>>>,
}

impl<'a, M> ModuleLoad<'a, M> {
    /// Asks for `methods` (of modules loaded now: this one or earlier ones) to be
    /// compiled again with the configured instrumentation, because what its edits
    /// depend on arrived with this module (a method whose edit had to keep its IL until
    /// then, say). Each gets a new ReJIT version, built anew from its pristine IL at its
    /// next call; the requests are made by the profiler's ReJIT thread after this
    /// callback returns (the methods run what they run now until then), all
    /// instantiations of a generic method alike. Returns `false`, and asks for nothing,
    /// when ReJIT is off ([`Manager::with_rejit`](super::Manager::with_rejit), or
    /// turned on by targets while ReadyToRun code is kept).
    pub fn recompile(&self, methods: impl IntoIterator<Item = MethodKey>) -> bool {
        let Some(collected) = self.recompile else {
            return false;
        };
        collected
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend(methods);
        true
    }

    /// The module: its id and metadata.
    pub fn module(&self) -> &'a ModuleState<M> {
        self.module
    }

    /// The MethodDefs of the module that this instrumentation method's
    /// [`targets`](InstrumentationMethod::targets) selected (found before its
    /// `module_loaded` runs), in token order: a module with none needs no metadata of
    /// it.
    pub fn targets(&self) -> Vec<mdToken> {
        self.module.selected_by(self.owner.index)
    }

    /// Keeps `item` as this instrumentation method's data on the module (replacing any),
    /// dropped when the module unloads or the profiler shuts down.
    pub fn set_item<T: Any + Send + Sync>(&self, item: T) {
        let (index, count) = (self.owner.index, self.owner.count);
        self.module
            .items
            .set_module(index, count, Some(Arc::new(item)));
    }

    /// This instrumentation method's data on the module, if it is a `T`.
    pub fn item<T: Any + Send + Sync>(&self) -> Option<Arc<T>> {
        module_item(self.module, self.owner)
    }

    /// Removes this instrumentation method's data on the module.
    pub fn remove_item(&self) {
        let (index, count) = (self.owner.index, self.owner.count);
        self.module.items.set_module(index, count, None);
    }

    /// This instrumentation method's data on the module, whatever its type.
    pub(crate) fn item_any(&self) -> Option<Arc<dyn Any + Send + Sync>> {
        let (index, count) = (self.owner.index, self.owner.count);
        self.module.items.module(index, count)
    }

    /// Replaces this instrumentation method's data on the module (`None` removes it);
    /// the one before, for the caller to drop when it sees fit.
    pub(crate) fn replace_item(
        &self,
        item: Option<Arc<dyn Any + Send + Sync>>,
    ) -> Option<Arc<dyn Any + Send + Sync>> {
        let (index, count) = (self.owner.index, self.owner.count);
        self.module.items.set_module(index, count, item)
    }

    /// What the runtime says of the module: its file, assembly, app domain, whether it
    /// is dynamic, ReadyToRun, collectible or the framework's
    /// ([`ModuleState::facts`]).
    pub fn facts(&self) -> Option<&'a ModuleFacts> {
        self.module.facts()
    }

    /// Keeps `item` as this instrumentation method's data on the module's assembly
    /// (replacing any), dropped when the assembly unloads (`AssemblyUnloadFinished`,
    /// for an assembly of a collectible `AssemblyLoadContext`) or the profiler shuts
    /// down; `false`, and `item` dropped, when the runtime did not say which assembly the
    /// module is in ([`ModuleLoad::facts`]).
    pub fn set_assembly_item<T: Any + Send + Sync>(&self, item: T) -> bool {
        let Some(facts) = self.module.facts() else {
            return false;
        };
        let items = &self.containers.assemblies;
        set_keyed_item(items, facts.assembly, self.owner, Arc::new(item));
        true
    }

    /// This instrumentation method's data on the module's assembly, if it is a `T`.
    pub fn assembly_item<T: Any + Send + Sync>(&self) -> Option<Arc<T>> {
        let key = self.module.facts()?.assembly;
        keyed_item(&self.containers.assemblies, key, self.owner)
    }

    /// Keeps `item` as this instrumentation method's data on the module's app domain
    /// (replacing any), dropped when the app domain shuts down
    /// (`AppDomainShutdownFinished`, which CoreCLR, with its one app domain, never
    /// sends) or the profiler shuts down; `false` as [`ModuleLoad::set_assembly_item`].
    pub fn set_app_domain_item<T: Any + Send + Sync>(&self, item: T) -> bool {
        let Some(facts) = self.module.facts() else {
            return false;
        };
        let items = &self.containers.app_domains;
        set_keyed_item(items, facts.app_domain, self.owner, Arc::new(item));
        true
    }

    /// This instrumentation method's data on the module's app domain, if it is a `T`.
    pub fn app_domain_item<T: Any + Send + Sync>(&self) -> Option<Arc<T>> {
        let key = self.module.facts()?.app_domain;
        keyed_item(&self.containers.app_domains, key, self.owner)
    }
}

impl<M> core::fmt::Debug for ModuleLoad<'_, M> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ModuleLoad")
            .field("module", &self.module.id())
            .field("owner", &self.owner.index)
            .finish()
    }
}

impl<M> core::fmt::Debug for MethodEdit<'_, '_, M> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("MethodEdit")
            .field("token", &self.rewrite.token)
            .field("owner", &self.owner.index)
            .field("single_ret", &self.single_ret)
            .finish()
    }
}

fn keyed_item<T: Any + Send + Sync>(
    items: &KeyedItems,
    key: usize,
    owner: Owner,
) -> Option<Arc<T>> {
    items.get(key, owner.index).and_then(downcast)
}

fn set_keyed_item(items: &KeyedItems, key: usize, owner: Owner, item: Arc<dyn Any + Send + Sync>) {
    // The item replaced drops here, outside the container's lock.
    drop(items.set(key, owner.index, owner.count, Some(item)));
}

fn module_item<T: Any + Send + Sync, M>(module: &ModuleState<M>, owner: Owner) -> Option<Arc<T>> {
    module
        .items
        .module(owner.index, owner.count)
        .and_then(downcast)
}

fn method_item<T: Any + Send + Sync, M>(
    module: &ModuleState<M>,
    owner: Owner,
    token: mdToken,
) -> Option<Arc<T>> {
    module
        .items
        .method(owner.index, owner.count, row(token))
        .and_then(downcast)
}

fn set_method_item<M>(
    module: &ModuleState<M>,
    owner: Owner,
    token: mdToken,
    item: Option<Arc<dyn Any + Send + Sync>>,
) -> Option<Arc<dyn Any + Send + Sync>> {
    module
        .items
        .set_method(owner.index, owner.count, row(token), item)
}

/// The method being edited, as one instrumentation method sees it: the pipeline's
/// [`MethodRewrite`], the single-ret the manager made (if asked), and this
/// instrumentation method's data items.
pub struct MethodEdit<'r, 'a, M = ModuleMetadata> {
    pub(crate) rewrite: &'r mut MethodRewrite<'a, M>,
    pub(crate) owner: Owner,
    pub(crate) single_ret: Option<SingleRet>,
    pub(crate) containers: &'r Containers,
    pub(crate) options: &'r Options,
}

impl<'a, M> MethodEdit<'_, 'a, M> {
    /// The method (function, token, module, signature, context for an `Instrumenter`).
    pub fn method(&self) -> &MethodRewrite<'a, M> {
        self.rewrite
    }

    /// The method, to set the LocalVarSig the edit needs
    /// ([`MethodRewrite::set_locals_signature`]; an earlier edit's locals are in
    /// [`MethodRewrite::context`]).
    pub fn rewrite(&mut self) -> &mut MethodRewrite<'a, M> {
        self.rewrite
    }

    /// The options of this edit: the configured ones ([`Start::options`]) at a first
    /// JIT, or those of the ReJIT request being carried out (a live dial's `instrument`
    /// command), checked against [`InstrumentationMethod::options`] and accepted by
    /// [`InstrumentationMethod::check_options`]. An instrumentation method that reads
    /// its settings here rather than keeping them from its start can be asked for other
    /// settings while the program runs.
    pub fn options(&self) -> &Options {
        self.options
    }

    /// The single-ret the manager made before the first edit, when an instrumentation
    /// method asked for it ([`Interest::EditSingleRet`]): where the epilogue starts and
    /// where the return value is.
    pub fn single_ret(&self) -> Option<SingleRet> {
        self.single_ret
    }

    /// This instrumentation method's data on the method's module
    /// ([`ModuleLoad::set_item`]).
    pub fn module_item<T: Any + Send + Sync>(&self) -> Option<Arc<T>> {
        module_item(self.rewrite.module, self.owner)
    }

    /// The method's name as selectors write it ([`Candidate::name`]).
    pub fn name(&self) -> String
    where
        M: MetadataSource,
    {
        crate::disasm::selector_name(self.rewrite.module.metadata(), self.rewrite.token)
    }

    /// This instrumentation method's data on the method's assembly
    /// ([`ModuleLoad::set_assembly_item`]).
    pub fn assembly_item<T: Any + Send + Sync>(&self) -> Option<Arc<T>> {
        let key = self.rewrite.module.facts()?.assembly;
        keyed_item(&self.containers.assemblies, key, self.owner)
    }

    /// This instrumentation method's data on the method's app domain
    /// ([`ModuleLoad::set_app_domain_item`]).
    pub fn app_domain_item<T: Any + Send + Sync>(&self) -> Option<Arc<T>> {
        let key = self.rewrite.module.facts()?.app_domain;
        keyed_item(&self.containers.app_domains, key, self.owner)
    }

    /// This instrumentation method's data on this method, kept across its
    /// compilations (generic instantiations, tier-up, ReJIT) while its module is
    /// loaded.
    pub fn method_item<T: Any + Send + Sync>(&self) -> Option<Arc<T>> {
        method_item(self.rewrite.module, self.owner, self.rewrite.token)
    }

    /// Keeps `item` as this instrumentation method's data on this method (replacing
    /// any); dropped at once for an instrumentation method added while the program runs,
    /// which keeps no data items.
    pub fn set_method_item<T: Any + Send + Sync>(&self, item: T) {
        let (module, token) = (self.rewrite.module, self.rewrite.token);
        set_method_item(module, self.owner, token, Some(Arc::new(item)));
    }

    /// Removes this instrumentation method's data on this method.
    pub fn remove_method_item(&self) {
        let (module, token) = (self.rewrite.module, self.rewrite.token);
        set_method_item(module, self.owner, token, None);
    }

    /// Whether this instrumentation method keeps data items (one added while the
    /// program runs keeps none: [`ReJitControl::add_method`](super::ReJitControl::add_method)).
    pub(crate) fn keeps_items(&self) -> bool {
        self.owner.index < self.owner.count
    }

    /// This instrumentation method's data on this method, whatever its type.
    pub(crate) fn method_item_any(&self) -> Option<Arc<dyn Any + Send + Sync>> {
        let (module, owner) = (self.rewrite.module, self.owner);
        module
            .items
            .method(owner.index, owner.count, row(self.rewrite.token))
    }

    /// Replaces this instrumentation method's data on this method (`None` removes it);
    /// the one before, for the caller to drop when it sees fit.
    pub(crate) fn replace_method_item(
        &self,
        item: Option<Arc<dyn Any + Send + Sync>>,
    ) -> Option<Arc<dyn Any + Send + Sync>> {
        let (module, token) = (self.rewrite.module, self.rewrite.token);
        set_method_item(module, self.owner, token, item)
    }

    /// This instrumentation method's data on the method's module, whatever its type.
    pub(crate) fn module_item_any(&self) -> Option<Arc<dyn Any + Send + Sync>> {
        let owner = self.owner;
        self.rewrite.module.items.module(owner.index, owner.count)
    }
}

//! What the crate keeps per module: [`ModuleState`].

use core::fmt;
use std::any::Any;
use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use super::items::DataItems;
pub(crate) use super::states::MethodState;
use super::states::{MethodMarks, MethodStates};
use crate::analysis::{CachingResolver, MetadataResolver};
use crate::clr::runtime::{ModuleFacts, ModuleMetadata};
use crate::clr::sys::{ModuleID, mdToken};
use crate::metadata::MetadataSource;

/// The row of a MethodDef token (its low 24 bits).
pub(crate) fn row(token: mdToken) -> u32 {
    token & 0x00FF_FFFF
}

/// What the crate keeps per module while it is loaded: its metadata (`M`, the
/// runtime's [`ModuleMetadata`] in a profiler), the resolver of its call sites, where
/// each of its methods is in its rewrite, the pristine IL of the methods rewritten, and
/// the profiler's own data for it.
///
/// All of it is dropped when the module unloads (see
/// [`JitRewriter::module_unloaded`](super::JitRewriter::module_unloaded)), once the last
/// rewrite in flight that holds it is done. Its memory follows what the module uses:
/// about 1 KiB empty, the method states (about 10 KiB for 5,000 methods), the
/// resolver's cache of the call sites seen, and, when the rewriter keeps it
/// ([`JitRewriter::with_pristine_il`](super::JitRewriter::with_pristine_il)), one copy
/// of the original IL of each method rewritten (a later rewrite, for example a ReJIT,
/// must start from it rather than from the rewritten IL the runtime now gives).
pub struct ModuleState<M = ModuleMetadata> {
    id: ModuleID,
    /// What tells this module apart from a later one given the same id (see
    /// [`ModuleRegistry`](super::registry::ModuleRegistry)).
    identity: usize,
    metadata: M,
    resolver: CachingResolver<MetadataResolver<M>>,
    /// Where each of its methods is in its rewrite.
    pub(crate) states: MethodStates,
    /// The methods the JIT was allowed to inline somewhere.
    inlined: MethodMarks,
    /// The original IL of the methods whose rewritten body was handed over.
    pristine: Mutex<PristineIl>,
    /// The profiler's own data for this module ([`ModuleState::data`]).
    data: OnceLock<Box<dyn Any + Send + Sync>>,
    /// The data items of a manager's instrumentation methods on this module and its
    /// methods.
    pub(crate) items: DataItems,
    /// What the runtime says of the module, read when the state was made.
    facts: Option<ModuleFacts>,
    /// The methods a host's steps selected by name when the module loaded, each with
    /// the steps (by index) that selected it ([`ModuleState::set_selected`]).
    selected: OnceLock<HashMap<u32, Selectors>>,
    /// Whether its load was announced to a host ([`ModuleState::announce`]).
    announced: std::sync::atomic::AtomicBool,
}

/// The indexes of the host's steps that selected one method.
pub(crate) type Selectors = smallvec::SmallVec<[u8; 4]>;

impl<M: MetadataSource + Clone> ModuleState<M> {
    /// The state of module `id`, whose metadata is `metadata`; `identity` tells it apart
    /// from a later module given the same id (for the runtime's modules, the address of
    /// the metadata object the state holds a reference to).
    pub(crate) fn new(id: ModuleID, identity: usize, metadata: M) -> ModuleState<M> {
        ModuleState {
            id,
            identity,
            resolver: CachingResolver::for_module(metadata.clone()),
            metadata,
            states: MethodStates::default(),
            inlined: MethodMarks::default(),
            pristine: Mutex::default(),
            data: OnceLock::new(),
            items: DataItems::default(),
            facts: None,
            selected: OnceLock::new(),
            announced: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// The same state with the module's facts.
    pub(crate) fn with_facts(mut self, facts: Option<ModuleFacts>) -> ModuleState<M> {
        self.facts = facts;
        self
    }
}

impl<M> ModuleState<M> {
    /// `true` the first time it is called for this module, `false` after: a host that
    /// learns of a module twice (its load callback, and a list of the modules loaded
    /// when it attached) handles it once.
    pub(crate) fn announce(&self) -> bool {
        !self
            .announced
            .swap(true, std::sync::atomic::Ordering::AcqRel)
    }

    /// The profiler's own data for this module, made by `init` the first time (for
    /// example the tokens it defined in the module for its injected code). `init` runs
    /// once; threads arriving meanwhile wait for it. `None` if data of another type was
    /// stored first. Dropped with the module's state.
    pub fn data<T: Any + Send + Sync>(&self, init: impl FnOnce() -> T) -> Option<&T> {
        self.data.get_or_init(|| Box::new(init())).downcast_ref()
    }

    /// The runtime's id of the module.
    pub fn id(&self) -> ModuleID {
        self.id
    }

    pub(crate) fn identity(&self) -> usize {
        self.identity
    }

    /// What the runtime says of the module (its file, assembly, app domain, whether it
    /// is dynamic, ReadyToRun, collectible, the framework's), read once when the crate
    /// first met it; `None` when the runtime could not say, and for a module read from
    /// a file rather than a runtime.
    pub fn facts(&self) -> Option<&ModuleFacts> {
        self.facts.as_ref()
    }

    /// The module's metadata.
    pub fn metadata(&self) -> &M {
        &self.metadata
    }

    /// The module's call-site resolver (shared by every thread; each token resolved
    /// once). Calls to members the profiler defined in the module resolve too.
    pub fn resolver(&self) -> &CachingResolver<MetadataResolver<M>> {
        &self.resolver
    }

    /// Whether a rewritten body of MethodDef `token` was handed to the runtime.
    pub fn was_rewritten(&self, token: mdToken) -> bool {
        self.states.is_rewritten(row(token))
    }

    /// The MethodDefs whose rewritten body was handed over at their first JIT, in token
    /// order.
    pub(crate) fn rewritten_methods(&self) -> Vec<mdToken> {
        self.states
            .rewritten_rows()
            .into_iter()
            .map(|row| 0x0600_0000 | row)
            .collect()
    }

    /// Records that the JIT was allowed to inline MethodDef `token` into a caller (the
    /// profiler answered `JITInlining` with `true` for it).
    pub fn note_inlined(&self, token: mdToken) {
        self.inlined.mark(row(token));
    }

    /// Whether code of a caller may hold an inlined copy of MethodDef `token`: the JIT
    /// was allowed to inline it ([`ModuleState::note_inlined`]), or the module is
    /// ReadyToRun (its precompiled code inlined without asking), or what the runtime
    /// says of the module is not known. `false` only for a method no caller can hold:
    /// a ReJIT of it needs no recompilation of inliners.
    pub fn may_be_inlined(&self, token: mdToken) -> bool {
        self.inlined.is_marked(row(token))
            || self.facts.as_ref().is_none_or(|f| f.is_ready_to_run())
    }

    /// Records, once (when the module loads), which methods which of a host's steps
    /// selected by name: `selected` pairs MethodDef tokens with step indexes. A later
    /// call changes nothing.
    pub(crate) fn set_selected(&self, selected: impl IntoIterator<Item = (mdToken, Selectors)>) {
        let _ = self
            .selected
            .set(selected.into_iter().map(|(t, s)| (row(t), s)).collect());
    }

    /// The host's steps that selected MethodDef `token` when the module loaded, by
    /// index (none when nothing was recorded).
    pub(crate) fn selected(&self, token: mdToken) -> &[u8] {
        self.selected
            .get()
            .and_then(|selected| selected.get(&row(token)))
            .map_or(&[], |s| s.as_slice())
    }

    /// The MethodDefs step `index` selected when the module loaded, in token order.
    pub(crate) fn selected_by(&self, index: usize) -> Vec<mdToken> {
        let Some(selected) = self.selected.get() else {
            return Vec::new();
        };
        let mut tokens: Vec<mdToken> = selected
            .iter()
            .filter(|(_, by)| by.iter().any(|&i| usize::from(i) == index))
            .map(|(&row, _)| row | 0x0600_0000)
            .collect();
        tokens.sort_unstable();
        tokens
    }

    pub(crate) fn method_state(&self, token: mdToken) -> MethodState {
        self.states.state(row(token))
    }

    /// The IL MethodDef `token` had before its rewritten body was handed over (header,
    /// code and sections, as the runtime gave them); `None` for a method not rewritten.
    pub fn pristine_il(&self, token: mdToken) -> Option<Arc<[u8]>> {
        let pristine = self.pristine.lock().unwrap_or_else(PoisonError::into_inner);
        pristine.get(row(token)).map(Arc::from)
    }

    /// Keeps `il` as the pristine IL of MethodDef `token` (the first copy stays).
    pub(crate) fn keep_pristine_il(&self, token: mdToken, il: &[u8]) {
        let mut pristine = self.pristine.lock().unwrap_or_else(PoisonError::into_inner);
        pristine.keep(row(token), il);
    }
}

/// The pristine IL of a module's rewritten methods: one growing buffer and an index by
/// MethodDef row (no allocation per method: keeping it is on every rewrite's path).
#[derive(Debug, Default)]
struct PristineIl {
    bytes: Vec<u8>,
    /// Row -> (start, length) in `bytes`.
    spans: HashMap<u32, (usize, usize), BuildHasherDefault<RowHasher>>,
}

impl PristineIl {
    fn keep(&mut self, row: u32, il: &[u8]) {
        if let Entry::Vacant(slot) = self.spans.entry(row) {
            slot.insert((self.bytes.len(), il.len()));
            self.bytes.extend_from_slice(il);
        }
    }

    fn get(&self, row: u32) -> Option<&[u8]> {
        let &(start, len) = self.spans.get(&row)?;
        self.bytes.get(start..start + len)
    }
}

/// A hasher for MethodDef rows (small distinct integers, chosen by no adversary): one
/// multiplication, spreading them over the table.
#[derive(Debug, Default, Clone, Copy)]
struct RowHasher(u64);

impl Hasher for RowHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_u32(&mut self, n: u32) {
        self.0 = u64::from(n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

impl<M> fmt::Debug for ModuleState<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ModuleState")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

//! The modules loaded now, by id: [`ModuleRegistry`].
//!
//! The runtime's `ModuleID` is the address of its module object, so a module loaded
//! after another one unloaded (a collectible `AssemblyLoadContext` loaded again) may get
//! the same id. Two things keep a later module from ever seeing an earlier one's state:
//!
//! * an unload removes the state ([`ModuleRegistry::remove`]): it is dropped, with its
//!   metadata references, caches and data, once the last rewrite that holds it ends;
//! * every lookup names the module's identity too, and a state of another identity is
//!   replaced, not returned. A profiler that does not forward unloads is then still right
//!   (the earlier state is dropped when its id comes back).
//!
//! The registry has no fixed capacity: its memory follows the modules loaded now.

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};

use super::module::ModuleState;
use crate::clr::sys::ModuleID;

/// Shards of the registry, so that JIT threads looking up modules rarely share a lock's
/// cache line (lookups take a shard's read lock only).
const SHARDS: usize = 16;

/// The state of every module loaded now, by id. Lookups take one shard's read lock;
/// inserting and removing, its write lock.
pub(crate) struct ModuleRegistry<M> {
    shards: [RwLock<HashMap<ModuleID, Arc<ModuleState<M>>>>; SHARDS],
}

impl<M> Default for ModuleRegistry<M> {
    fn default() -> Self {
        ModuleRegistry {
            shards: std::array::from_fn(|_| RwLock::new(HashMap::new())),
        }
    }
}

impl<M> std::fmt::Debug for ModuleRegistry<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModuleRegistry")
            .field("modules", &self.len())
            .finish()
    }
}

/// What [`ModuleRegistry::get`] found for an id.
pub(crate) enum Found<M> {
    /// The state of that module.
    Same(Arc<ModuleState<M>>),
    /// Nothing, or the state of an earlier module with that id (now forgotten).
    Missing,
}

impl<M> ModuleRegistry<M> {
    fn shard(&self, id: ModuleID) -> &RwLock<HashMap<ModuleID, Arc<ModuleState<M>>>> {
        // Module objects are at least 16-byte aligned: the bits above those spread.
        let spread = (id as u64 >> 4).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 60;
        &self.shards[spread as usize % SHARDS]
    }

    /// The state of module `id` if it is the module of `identity`. A state of another
    /// identity under that id (a module unloaded without [`ModuleRegistry::remove`]) is
    /// removed.
    pub(crate) fn get(&self, id: ModuleID, identity: usize) -> Found<M> {
        let shard = self.shard(id);
        {
            let map = shard.read().unwrap_or_else(PoisonError::into_inner);
            match map.get(&id) {
                Some(state) if state.identity() == identity => {
                    return Found::Same(state.clone());
                }
                Some(_) => {}
                None => return Found::Missing,
            }
        }
        let mut map = shard.write().unwrap_or_else(PoisonError::into_inner);
        match map.get(&id) {
            Some(state) if state.identity() == identity => Found::Same(state.clone()),
            Some(_) => {
                map.remove(&id);
                Found::Missing
            }
            None => Found::Missing,
        }
    }

    /// Stores `state` unless a state of the same module was stored first (by another
    /// thread); returns the one stored. A state of another identity is replaced.
    pub(crate) fn insert(&self, state: ModuleState<M>) -> Arc<ModuleState<M>> {
        let mut map = self
            .shard(state.id())
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        match map.get(&state.id()) {
            Some(stored) if stored.identity() == state.identity() => stored.clone(),
            _ => {
                let state = Arc::new(state);
                map.insert(state.id(), state.clone());
                state
            }
        }
    }

    /// Forgets module `id` (it unloads): its state is dropped once no rewrite holds it.
    pub(crate) fn remove(&self, id: ModuleID) -> Option<Arc<ModuleState<M>>> {
        let mut map = self
            .shard(id)
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        let removed = map.remove(&id);
        // A map that held many more modules than it does now gives the memory back.
        if map.capacity() > 64 && map.len() * 4 < map.capacity() {
            let keep = map.len() * 2;
            map.shrink_to(keep);
        }
        removed
    }

    /// Calls `f` with every state held now (one shard's read lock at a time).
    pub(crate) fn for_each(&self, mut f: impl FnMut(&ModuleState<M>)) {
        for shard in &self.shards {
            let map = shard.read().unwrap_or_else(PoisonError::into_inner);
            map.values().for_each(|state| f(state));
        }
    }

    /// How many modules it holds.
    pub(crate) fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.read().unwrap_or_else(PoisonError::into_inner).len())
            .sum()
    }

    /// The hash-map slots allocated (for the memory tests).
    #[cfg(test)]
    fn capacity(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.read().unwrap_or_else(PoisonError::into_inner).capacity())
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::NoMetadata;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Module states alive now (counted by the data each test state holds).
    static ALIVE: AtomicUsize = AtomicUsize::new(0);

    struct Counted;
    impl Drop for Counted {
        fn drop(&mut self) {
            ALIVE.fetch_sub(1, Ordering::SeqCst);
        }
    }

    fn state(id: ModuleID, identity: usize) -> ModuleState<NoMetadata> {
        let state = ModuleState::new(id, identity, NoMetadata);
        ALIVE.fetch_add(1, Ordering::SeqCst);
        state.data(|| Counted);
        state
    }

    fn found(f: Found<NoMetadata>) -> Option<Arc<ModuleState<NoMetadata>>> {
        match f {
            Found::Same(s) => Some(s),
            Found::Missing => None,
        }
    }

    /// 12,000 modules loaded and unloaded, 40 at a time, their ids the addresses the
    /// runtime reuses (64 distinct ones), each one's identity new: every
    /// lookup of a loaded module returns its one shared state (never an earlier
    /// module's, never a second copy), every unloaded state is dropped, and the memory
    /// (states alive, map slots) stays that of the 40 loaded at once. Half the modules
    /// unload without a `remove` (a profiler that does not forward unloads): their
    /// state goes when the id comes back.
    #[test]
    fn thousands_of_modules_loaded_and_unloaded_keep_memory_constant_and_sharing() {
        const IDS: usize = 64;
        let registry = ModuleRegistry::<NoMetadata>::default();
        let before = ALIVE.load(Ordering::SeqCst);
        let mut loaded: std::collections::VecDeque<(ModuleID, usize)> = Default::default();
        let mut most_alive = 0;
        let mut most_slots = 0;
        for n in 0..12_000usize {
            let id = 0x7f00_0000_0000 + (n * 7919 % IDS) * 0x40;
            if loaded.iter().any(|&(l, _)| l == id) {
                continue;
            }
            let identity = 0x5500_0000 + n;
            assert!(found(registry.get(id, identity)).is_none());
            let first = registry.insert(state(id, identity));
            let again = found(registry.get(id, identity)).expect("stored");
            assert!(Arc::ptr_eq(&first, &again), "one shared state per module");
            // Another thread racing to create the same module's state gets the first.
            let raced = registry.insert(state(id, identity));
            assert!(Arc::ptr_eq(&first, &raced));
            drop((first, again, raced));
            loaded.push_back((id, identity));
            if loaded.len() > 40 {
                let (old, _) = loaded.pop_front().unwrap();
                if n % 2 == 0 {
                    assert!(registry.remove(old).is_some());
                }
            }
            for &(l, i) in loaded.iter() {
                let s = found(registry.get(l, i)).expect("a loaded module is found");
                assert_eq!((s.id(), s.identity()), (l, i));
            }
            most_alive = most_alive.max(ALIVE.load(Ordering::SeqCst) - before);
            most_slots = most_slots.max(registry.capacity());
        }
        // One state per id at most (40 loaded, the others unloaded without a `remove`
        // whose id has not come back yet), whatever the number of loads.
        assert!(most_alive <= IDS, "{most_alive} states alive at once");
        assert!(most_slots <= 16 * 16, "{most_slots} slots");
        for (id, _) in loaded.drain(..) {
            registry.remove(id);
        }
        for id in (0..IDS).map(|k| 0x7f00_0000_0000 + k * 0x40) {
            registry.remove(id);
        }
        assert_eq!(registry.len(), 0);
        assert_eq!(ALIVE.load(Ordering::SeqCst), before, "every state dropped");
    }

    /// A state held by a rewrite in flight when its module unloads lives until that
    /// rewrite ends, and is not found any more meanwhile.
    #[test]
    fn a_state_in_use_outlives_the_unload_until_released() {
        let registry = ModuleRegistry::<NoMetadata>::default();
        let held = registry.insert(ModuleState::new(0x1000, 1, NoMetadata));
        registry.remove(0x1000);
        assert!(found(registry.get(0x1000, 1)).is_none());
        assert_eq!(Arc::strong_count(&held), 1);
    }
}

//! Data items: typed values each owner (an instrumentation method of a
//! [`Manager`](super::Manager)) keeps on a container (a module and the methods of that
//! module, an assembly, an app domain), dropped with the container.

use std::any::Any;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, RwLock};

/// One data item: any value, shared with whoever reads it.
pub(crate) type Item = Arc<dyn Any + Send + Sync>;

/// What one owner keeps on one module: its module-level item and its items per method
/// (MethodDef row), which outlive the method's compilations.
#[derive(Default)]
struct OwnerItems {
    module: RwLock<Option<Item>>,
    methods: RwLock<HashMap<u32, Item>>,
}

/// The data items of one module, by owner (an index below the count given at first
/// use). Every access takes only this module's lock for that owner; no lock is shared
/// between modules or owners. Dropping it drops every item, running each value's own
/// `Drop` once no reader holds it.
#[derive(Default)]
pub(crate) struct DataItems {
    owners: OnceLock<Box<[OwnerItems]>>,
    /// The (owner, method row) pairs whose edit failed, logged once each (a cold path).
    failures: Mutex<HashSet<(usize, u32)>>,
}

impl core::fmt::Debug for DataItems {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("DataItems")
            .field("owners", &self.owners.get().map_or(0, |o| o.len()))
            .finish()
    }
}

impl DataItems {
    fn owner(&self, owner: usize, owners: usize) -> Option<&OwnerItems> {
        self.owners
            .get_or_init(|| (0..owners).map(|_| OwnerItems::default()).collect())
            .get(owner)
    }

    /// Sets (`Some`) or removes (`None`) `owner`'s module-level item; returns the one
    /// it replaces.
    pub(crate) fn set_module(
        &self,
        owner: usize,
        owners: usize,
        item: Option<Item>,
    ) -> Option<Item> {
        let slot = self.owner(owner, owners)?;
        let mut module = slot.module.write().unwrap_or_else(PoisonError::into_inner);
        core::mem::replace(&mut *module, item)
    }

    /// `owner`'s module-level item.
    pub(crate) fn module(&self, owner: usize, owners: usize) -> Option<Item> {
        let slot = self.owner(owner, owners)?;
        let module = slot.module.read().unwrap_or_else(PoisonError::into_inner);
        module.clone()
    }

    /// Sets or removes `owner`'s item on method `row`; returns the one it replaces.
    pub(crate) fn set_method(
        &self,
        owner: usize,
        owners: usize,
        row: u32,
        item: Option<Item>,
    ) -> Option<Item> {
        let slot = self.owner(owner, owners)?;
        let mut methods = slot.methods.write().unwrap_or_else(PoisonError::into_inner);
        match item {
            Some(item) => methods.insert(row, item),
            None => methods.remove(&row),
        }
    }

    /// `owner`'s item on method `row`.
    pub(crate) fn method(&self, owner: usize, owners: usize, row: u32) -> Option<Item> {
        let slot = self.owner(owner, owners)?;
        let methods = slot.methods.read().unwrap_or_else(PoisonError::into_inner);
        methods.get(&row).cloned()
    }

    /// Whether this is the first failure of `owner`'s edit of method `row` (to log it
    /// once).
    pub(crate) fn first_failure(&self, owner: usize, row: u32) -> bool {
        let mut failures = self.failures.lock().unwrap_or_else(PoisonError::into_inner);
        failures.insert((owner, row))
    }

    /// Takes every item out now (the profiler is shutting down or detaching), whoever
    /// else still holds the container; the caller drops them once it holds no lock, so
    /// that a destructor (a library's) that waits for another thread reading items
    /// cannot deadlock.
    #[must_use = "the items are dropped by the caller, outside every lock"]
    pub(crate) fn take_all(&self) -> Vec<Item> {
        let mut taken = Vec::new();
        for slot in self.owners.get().into_iter().flatten() {
            let module = slot
                .module
                .write()
                .unwrap_or_else(PoisonError::into_inner)
                .take();
            taken.extend(module);
            let methods =
                core::mem::take(&mut *slot.methods.write().unwrap_or_else(PoisonError::into_inner));
            taken.extend(methods.into_values());
        }
        taken
    }
}

/// One container's items, one slot per owner.
pub(crate) type Slots = Box<[Option<Item>]>;

/// Items on containers the runtime names by id (assemblies, app domains), one per
/// owner: sharded by id, each shard its own lock, so that no lock is shared by all
/// threads. Items leave a shard before they are dropped, so an item's own `Drop` may
/// use the items again.
pub(crate) struct KeyedItems {
    shards: [Mutex<HashMap<usize, Slots>>; SHARDS],
}

/// Shards of a [`KeyedItems`].
const SHARDS: usize = 16;

impl Default for KeyedItems {
    fn default() -> KeyedItems {
        KeyedItems {
            shards: core::array::from_fn(|_| Mutex::default()),
        }
    }
}

impl core::fmt::Debug for KeyedItems {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("KeyedItems")
            .field("containers", &self.len())
            .finish()
    }
}

impl KeyedItems {
    fn shard(&self, key: usize) -> std::sync::MutexGuard<'_, HashMap<usize, Slots>> {
        // Runtime ids are addresses: the bits above the alignment spread them.
        let shard = (key >> 4 ^ key >> 10) % SHARDS;
        self.shards[shard]
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Sets (`Some`) or removes (`None`) `owner`'s item on container `key`; returns the
    /// one it replaces (for the caller to drop, outside the lock).
    pub(crate) fn set(
        &self,
        key: usize,
        owner: usize,
        owners: usize,
        item: Option<Item>,
    ) -> Option<Item> {
        if owner >= owners {
            return item;
        }
        let mut shard = self.shard(key);
        let slots = shard
            .entry(key)
            .or_insert_with(|| (0..owners).map(|_| None).collect());
        core::mem::replace(slots.get_mut(owner)?, item)
    }

    /// `owner`'s item on container `key`.
    pub(crate) fn get(&self, key: usize, owner: usize) -> Option<Item> {
        let shard = self.shard(key);
        shard.get(&key)?.get(owner)?.clone()
    }

    /// Removes container `key` with its items, which drop once the caller lets go of
    /// them (outside the lock).
    pub(crate) fn remove(&self, key: usize) -> Option<Slots> {
        self.shard(key).remove(&key)
    }

    /// Removes every container (the profiler is shutting down); the items drop when the
    /// returned value does.
    pub(crate) fn take_all(&self) -> Vec<Slots> {
        let mut all = Vec::new();
        for shard in &self.shards {
            let mut shard = shard.lock().unwrap_or_else(PoisonError::into_inner);
            all.extend(shard.drain().map(|(_, items)| items));
        }
        all
    }

    /// How many containers hold items.
    pub(crate) fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.lock().unwrap_or_else(PoisonError::into_inner).len())
            .sum()
    }
}

/// The data items on assemblies and app domains, by their runtime ids.
#[derive(Debug, Default)]
pub(crate) struct Containers {
    pub(crate) assemblies: KeyedItems,
    pub(crate) app_domains: KeyedItems,
}

/// `item` as a `T`, if it is one.
pub(crate) fn downcast<T: Any + Send + Sync>(item: Item) -> Option<Arc<T>> {
    item.downcast().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    static DROPPED: AtomicUsize = AtomicUsize::new(0);

    struct Counted(u32);
    impl Drop for Counted {
        fn drop(&mut self) {
            DROPPED.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// Items are kept per owner, replaced and removed as asked, and every one is dropped
    /// (its own `Drop` run) with the container or by `clear`.
    #[test]
    fn items_per_owner_dropped_with_their_container() {
        let before = DROPPED.load(Ordering::SeqCst);
        let items = DataItems::default();
        assert!(items.set_module(0, 2, Some(Arc::new(Counted(1)))).is_none());
        assert!(items.set_module(1, 2, Some(Arc::new(Counted(2)))).is_none());
        assert!(
            items.set_module(2, 2, Some(Arc::new(Counted(3)))).is_none(),
            "no owner 2"
        );
        for row in 1..=100 {
            items.set_method(1, 2, row, Some(Arc::new(Counted(row))));
        }
        let got = downcast::<Counted>(items.module(1, 2).unwrap()).unwrap();
        assert_eq!(got.0, 2);
        assert!(items.module(0, 2).and_then(downcast::<String>).is_none());
        assert_eq!(
            downcast::<Counted>(items.method(1, 2, 7).unwrap())
                .unwrap()
                .0,
            7
        );
        assert!(items.method(0, 2, 7).is_none());
        // Replacing returns the old item; dropping it runs its Drop.
        drop(items.set_method(1, 2, 7, Some(Arc::new(Counted(700)))));
        drop(items.set_method(1, 2, 8, None));
        // One dropped at owner 2's refusal, two replaced or removed.
        assert_eq!(DROPPED.load(Ordering::SeqCst) - before, 3);
        drop(items);
        // The reader's copy keeps its item alive until it goes.
        assert_eq!(DROPPED.load(Ordering::SeqCst) - before, 3 + 100);
        drop(got);
        assert_eq!(DROPPED.load(Ordering::SeqCst) - before, 3 + 101);
    }

    /// An item's `Drop` run by `clear` (the manager's Shutdown) may wait for another
    /// thread that reads the items (a library's destructor taking its own lock, held by
    /// an edit on another thread that calls `edit_method_item`): `clear` must drop the
    /// items once it released its locks, or the two threads wait for each other. Here
    /// the `Drop` waits at most 5 s for a reader on another thread.
    #[test]
    fn take_all_lets_the_items_drop_outside_its_locks() {
        use std::sync::mpsc;
        use std::time::Duration;
        static READ: AtomicUsize = AtomicUsize::new(0);
        struct Waits(std::sync::Weak<DataItems>);
        impl Drop for Waits {
            fn drop(&mut self) {
                let Some(items) = self.0.upgrade() else {
                    return;
                };
                let (done, finished) = mpsc::channel();
                std::thread::spawn(move || {
                    let _ = items.method(0, 1, 2);
                    let _ = items.module(0, 1);
                    let _ = done.send(());
                });
                if finished.recv_timeout(Duration::from_secs(5)).is_ok() {
                    READ.fetch_add(1, Ordering::SeqCst);
                }
            }
        }
        let items = Arc::new(DataItems::default());
        items.set_module(0, 1, Some(Arc::new(Waits(Arc::downgrade(&items)))));
        items.set_method(0, 1, 1, Some(Arc::new(Waits(Arc::downgrade(&items)))));
        drop(items.take_all());
        assert_eq!(
            READ.load(Ordering::SeqCst),
            2,
            "a reader waited for take_all"
        );
    }

    /// Items on keyed containers are kept per owner and container, and dropped with
    /// their container or all at once, from 32 threads at a time (the concurrency of the JIT test programs).
    #[test]
    fn keyed_items_dropped_with_their_container() {
        static KEYED_DROPPED: AtomicUsize = AtomicUsize::new(0);
        struct Keyed;
        impl Drop for Keyed {
            fn drop(&mut self) {
                KEYED_DROPPED.fetch_add(1, Ordering::SeqCst);
            }
        }
        let items = KeyedItems::default();
        std::thread::scope(|scope| {
            for thread in 0..32usize {
                let items = &items;
                scope.spawn(move || {
                    for container in 0..100usize {
                        let key = 0x7f00_0000 + (thread * 100 + container) * 0x40;
                        for owner in 0..3 {
                            assert!(items.set(key, owner, 3, Some(Arc::new(Keyed))).is_none());
                        }
                        assert!(items.get(key, 1).and_then(downcast::<Keyed>).is_some());
                    }
                });
            }
        });
        assert_eq!(items.len(), 3_200);
        // No owner 3: refused, handed back.
        assert!(
            items
                .set(0x7f00_0000, 3, 3, Some(Arc::new(Keyed)))
                .is_some()
        );
        assert_eq!(KEYED_DROPPED.load(Ordering::SeqCst), 1);
        drop(items.remove(0x7f00_0000));
        assert_eq!(KEYED_DROPPED.load(Ordering::SeqCst), 1 + 3);
        assert!(items.get(0x7f00_0000, 0).is_none());
        drop(items.take_all());
        assert_eq!(KEYED_DROPPED.load(Ordering::SeqCst), 1 + 3_200 * 3);
        assert_eq!(items.len(), 0);
    }
}

//! Data items: typed values each owner (an instrumentation method of a
//! [`Manager`](super::Manager)) keeps on a container (a module, and the methods of that
//! module), dropped with the container.

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

    /// Drops every item now (the profiler is shutting down), whoever else still holds
    /// the container.
    pub(crate) fn clear(&self) {
        for slot in self.owners.get().into_iter().flatten() {
            slot.module
                .write()
                .unwrap_or_else(PoisonError::into_inner)
                .take();
            slot.methods
                .write()
                .unwrap_or_else(PoisonError::into_inner)
                .clear();
        }
    }
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
}

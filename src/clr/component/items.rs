//! [`ForeignItem`]: a library's data item (on a module or a method), kept by the host
//! as any other item and destroyed by the library's destructor when the host drops it.

use core::ffi::c_void;
use std::any::Any;
use std::sync::Arc;

use super::abi::ItemDestructor;
use super::context::Library;

/// A library's pointer and its destructor. The library stays loaded while the item
/// lives (its destructor is the library's code), even past the method's `destroy`.
pub(super) struct ForeignItem {
    item: *mut c_void,
    destroy: ItemDestructor,
    _library: Library,
}

// SAFETY: the ABI makes an item the library's to share between threads: the host only
// hands the pointer back and calls the destructor once, on any thread (header,
// `ilr_item_destructor`).
unsafe impl Send for ForeignItem {}
// SAFETY: as for `Send`: the host never reads through the pointer.
unsafe impl Sync for ForeignItem {}

impl ForeignItem {
    /// The item `item` with `destroy`, as the host keeps items; `None` for a null item
    /// (which removes the one there: its destructor, if any, is not called for null).
    pub(super) fn shared(
        item: *mut c_void,
        destroy: ItemDestructor,
        library: &Library,
    ) -> Option<Arc<dyn Any + Send + Sync>> {
        if item.is_null() {
            return None;
        }
        Some(Arc::new(ForeignItem {
            item,
            destroy,
            _library: Arc::clone(library),
        }))
    }
}

impl Drop for ForeignItem {
    fn drop(&mut self) {
        if let Some(destroy) = self.destroy {
            // SAFETY: the library's destructor with its own item, once (this is the
            // item's only owner being dropped); the library is still loaded
            // (`_library` is dropped after this).
            unsafe { destroy(self.item) };
        }
    }
}

/// The library's pointer in `item`, when it is a library's item.
pub(super) fn item_pointer(item: &Arc<dyn Any + Send + Sync>) -> Option<*mut c_void> {
    item.downcast_ref::<ForeignItem>().map(|f| f.item)
}

//! [`ComPtr`]: an owned reference to a COM interface the runtime implements.

use core::ffi::c_void;
use core::marker::PhantomData;
use core::ptr::NonNull;

use crate::clr::sys::{ComVtable, HResult, IUnknownVtbl};

/// An owned reference to a COM object seen through interface `V` (a vtable type of
/// [`crate::clr::sys`]): `Clone` adds a reference, `Drop` releases one.
///
/// The runtime's interfaces are free-threaded, so a `ComPtr` is `Send` and `Sync`.
pub struct ComPtr<V> {
    ptr: NonNull<c_void>,
    _vtbl: PhantomData<*const V>,
}

// SAFETY: the interfaces bound here (the profiling API's and metadata's) are
// free-threaded: the runtime documents them as callable from any thread at once, and
// reference counting through AddRef/Release is atomic in its implementation.
unsafe impl<V> Send for ComPtr<V> {}
// SAFETY: as for `Send`: every method may be called from several threads at once.
unsafe impl<V> Sync for ComPtr<V> {}

impl<V: ComVtable> ComPtr<V> {
    /// Takes ownership of one reference to `raw`, an interface pointer of type `V`
    /// (as an out-parameter of `QueryInterface` or `GetModuleMetaData` returns it).
    /// `None` for a null pointer.
    ///
    /// # Safety
    /// `raw` must be null or a valid COM interface pointer whose vtable is `V` (or an
    /// interface derived from `V`), with one reference the caller gives up.
    pub unsafe fn from_raw(raw: *mut c_void) -> Option<ComPtr<V>> {
        NonNull::new(raw).map(|ptr| ComPtr {
            ptr,
            _vtbl: PhantomData,
        })
    }

    /// The interface pointer (still owned by `self`).
    pub fn as_raw(&self) -> *mut c_void {
        self.ptr.as_ptr()
    }

    /// The vtable.
    pub fn vtbl(&self) -> &V {
        // SAFETY: a COM interface pointer points at its vtable pointer (`from_raw`'s
        // contract), and the vtable lives as long as the object, which `self` keeps
        // alive.
        unsafe { &**(self.ptr.as_ptr() as *const *const V) }
    }

    fn unknown(&self) -> &IUnknownVtbl {
        // SAFETY: every COM vtable starts with the three IUnknown slots: the vtable
        // types here are `#[repr(C)]` with their parent first, down to `IUnknownVtbl`.
        unsafe { &**(self.ptr.as_ptr() as *const *const IUnknownVtbl) }
    }

    /// `QueryInterface` for interface `W`.
    ///
    /// # Errors
    /// The `HRESULT` of `QueryInterface` (`E_NOINTERFACE` when the object does not
    /// implement `W`), or `E_POINTER` if it succeeded with a null pointer.
    pub fn query<W: ComVtable>(&self) -> Result<ComPtr<W>, HResult> {
        let mut out = core::ptr::null_mut();
        // SAFETY: `self` is a live interface pointer; `QueryInterface` writes an owned
        // pointer to an interface whose vtable is `W` (the IID says which) to `out`.
        let hr = unsafe { (self.unknown().QueryInterface)(self.as_raw(), &W::IID, &mut out) };
        hr.ok()?;
        // SAFETY: see above: `out` holds one reference to a `W` interface.
        unsafe { ComPtr::from_raw(out) }.ok_or(HResult::E_POINTER)
    }
}

impl<V: ComVtable> Clone for ComPtr<V> {
    fn clone(&self) -> Self {
        // SAFETY: `self` is a live interface pointer; AddRef gives the new value its
        // own reference.
        unsafe { (self.unknown().AddRef)(self.as_raw()) };
        ComPtr {
            ptr: self.ptr,
            _vtbl: PhantomData,
        }
    }
}

impl<V> Drop for ComPtr<V> {
    fn drop(&mut self) {
        // SAFETY: `self` owns one reference to a live interface pointer, whose vtable
        // starts with the IUnknown slots; it is released exactly once, here.
        unsafe {
            let vtbl = &**(self.ptr.as_ptr() as *const *const IUnknownVtbl);
            (vtbl.Release)(self.ptr.as_ptr());
        }
    }
}

impl<V: ComVtable> core::fmt::Debug for ComPtr<V> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "ComPtr<{}>({:p})", V::NAME, self.ptr)
    }
}

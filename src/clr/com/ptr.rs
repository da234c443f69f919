//! [`ComPtr`]: an owned reference to a COM interface the runtime implements.

use core::ffi::c_void;
use core::marker::PhantomData;
use core::ptr::NonNull;

use crate::clr::sys::{ComVtable, FreeThreaded, HResult, IUnknownVtbl};

/// An owned reference to a COM object seen through interface `V` (a vtable type of
/// [`crate::clr::sys`]): `Clone` adds a reference, `Drop` releases one.
///
/// `Send` and `Sync` only for the interfaces whose objects may be used from any thread
/// at once ([`FreeThreaded`]: `ICorProfilerInfo*`, `ICorProfilerFunctionControl`, the
/// metadata interfaces); a `ComPtr` to any other interface stays on the thread that has
/// it.
///
/// ```
/// use ilrewrite::clr::com::ComPtr;
/// use ilrewrite::clr::sys::{ICorProfilerInfo11Vtbl, IMetaDataEmit2Vtbl};
///
/// fn share<T: Send + Sync>(_: T) {}
/// fn give_away(info: ComPtr<ICorProfilerInfo11Vtbl>, emit: ComPtr<IMetaDataEmit2Vtbl>) {
///     share(info); // free-threaded: `Send` and `Sync`
///     share(emit);
/// }
/// ```
///
/// ```compile_fail,E0277
/// use ilrewrite::clr::com::ComPtr;
/// use ilrewrite::clr::sys::{IUnknownVtbl};
///
/// fn send<T: Send>(_: T) {}
/// fn give_away(unknown: ComPtr<IUnknownVtbl>) {
///     send(unknown); // IUnknown says nothing of threads: not `Send`
/// }
/// ```
pub struct ComPtr<V> {
    ptr: NonNull<c_void>,
    _vtbl: PhantomData<*const V>,
}

// SAFETY: `V: FreeThreaded` promises that every object giving out interface `V` accepts
// every call of `V`, and `AddRef`/`Release`, from any thread (`from_raw`'s contract is
// that the object behind a `ComPtr<V>` gives out `V`); moving the reference to another
// thread and releasing it there is such a call.
unsafe impl<V: FreeThreaded> Send for ComPtr<V> {}
// SAFETY: as for `Send`: through `&ComPtr<V>` several threads call the object's methods
// (and `AddRef` in `clone`) at once, which `FreeThreaded` allows.
unsafe impl<V: FreeThreaded> Sync for ComPtr<V> {}

impl<V: ComVtable> ComPtr<V> {
    /// Takes ownership of one reference to `raw`, an interface pointer of type `V`
    /// (as an out-parameter of `QueryInterface` or `GetModuleMetaData` returns it).
    /// `None` for a null pointer.
    ///
    /// # Safety
    /// `raw` must be null or a valid COM interface pointer whose vtable is `V` (or an
    /// interface derived from `V`), with one reference the caller gives up. If `V` is
    /// [`FreeThreaded`], the object must honour that (the runtime's objects do): the
    /// `ComPtr` may be sent to and shared with other threads.
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
        // SAFETY: relies on two promises. `from_raw`'s contract (or, for a pointer made
        // by `query` or `ProfilerInfo::module_metadata`, `ComVtable`'s: the object gave
        // it out as interface `V::IID`, whose vtable layout `V` is): the pointer points
        // at a pointer to a vtable that starts with `V`'s layout. And COM's: the vtable
        // is not freed or changed while the object lives, which `self`'s reference
        // ensures for as long as the borrow.
        unsafe { &**(self.ptr.as_ptr() as *const *const V) }
    }

    fn unknown(&self) -> &IUnknownVtbl {
        // SAFETY: every COM interface's vtable starts with the three IUnknown slots
        // (COM's rule, and `ComVtable`'s layout contract for `V`), so whatever `V` is,
        // the pointer `from_raw` was given points at a table that starts with an
        // `IUnknownVtbl`, alive while `self` holds its reference.
        unsafe { &**(self.ptr.as_ptr() as *const *const IUnknownVtbl) }
    }

    /// `QueryInterface` for interface `W`.
    ///
    /// # Errors
    /// The `HRESULT` of `QueryInterface` (`E_NOINTERFACE` when the object does not
    /// implement `W`), or `E_POINTER` if it succeeded with a null pointer.
    pub fn query<W: ComVtable>(&self) -> Result<ComPtr<W>, HResult> {
        let mut out = core::ptr::null_mut();
        // SAFETY: `self` holds a reference to a live object whose vtable starts with the
        // IUnknown slots (see `unknown`); the IID and the out-pointer are valid for the
        // call.
        let hr = unsafe { (self.unknown().QueryInterface)(self.as_raw(), &W::IID, &mut out) };
        hr.ok()?;
        // SAFETY: relies on COM's contract for QueryInterface (success writes a pointer
        // to the interface the IID names, with one reference added for the caller) and
        // on `ComVtable`'s for `W` (an unsafe trait: the interface `W::IID` names has
        // `W`'s vtable layout). Together: `out` is null or an interface pointer whose
        // vtable is `W`, with one reference that the new `ComPtr` takes over. If `W` is
        // `FreeThreaded`, its implementation promised that of every object giving out
        // `W::IID`, this one included.
        unsafe { ComPtr::from_raw(out) }.ok_or(HResult::E_POINTER)
    }
}

impl<V: ComVtable> Clone for ComPtr<V> {
    fn clone(&self) -> Self {
        // SAFETY: `self` holds a reference to a live object whose vtable starts with the
        // IUnknown slots (see `unknown`); AddRef gives the new value its own reference.
        unsafe { (self.unknown().AddRef)(self.as_raw()) };
        ComPtr {
            ptr: self.ptr,
            _vtbl: PhantomData,
        }
    }
}

impl<V> Drop for ComPtr<V> {
    fn drop(&mut self) {
        // SAFETY: `self` owns one reference to a live interface pointer (`from_raw`'s
        // contract), whose vtable starts with the IUnknown slots (COM's rule); it is
        // released exactly once, here, on the thread that has `self`, which is another
        // than its maker's only if `V: FreeThreaded` allowed the move.
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

#[cfg(test)]
mod tests {
    use super::ComPtr;
    use crate::clr::sys::*;

    fn shared<T: Send + Sync>() {}

    /// The interfaces a `ComPtr` may cross threads with: those the runtime documents or
    /// builds as free-threaded (sys/info.rs and sys/metadata.rs say where). The
    /// negative side (`IUnknown`, and so the rest) is `ComPtr`'s `compile_fail` example.
    #[test]
    fn free_threaded_interfaces_are_send_and_sync() {
        shared::<ComPtr<ICorProfilerInfoVtbl>>();
        shared::<ComPtr<ICorProfilerInfo2Vtbl>>();
        shared::<ComPtr<ICorProfilerInfo3Vtbl>>();
        shared::<ComPtr<ICorProfilerInfo4Vtbl>>();
        shared::<ComPtr<ICorProfilerInfo5Vtbl>>();
        shared::<ComPtr<ICorProfilerInfo6Vtbl>>();
        shared::<ComPtr<ICorProfilerInfo7Vtbl>>();
        shared::<ComPtr<ICorProfilerInfo8Vtbl>>();
        shared::<ComPtr<ICorProfilerInfo9Vtbl>>();
        shared::<ComPtr<ICorProfilerInfo10Vtbl>>();
        shared::<ComPtr<ICorProfilerInfo11Vtbl>>();
        shared::<ComPtr<ICorProfilerInfo12Vtbl>>();
        shared::<ComPtr<ICorProfilerInfo13Vtbl>>();
        shared::<ComPtr<ICorProfilerInfo14Vtbl>>();
        shared::<ComPtr<ICorProfilerInfo15Vtbl>>();
        shared::<ComPtr<ICorProfilerFunctionControlVtbl>>();
        shared::<ComPtr<IMetaDataImportVtbl>>();
        shared::<ComPtr<IMetaDataImport2Vtbl>>();
        shared::<ComPtr<IMetaDataEmitVtbl>>();
        shared::<ComPtr<IMetaDataEmit2Vtbl>>();
        shared::<ComPtr<IMetaDataAssemblyImportVtbl>>();
        shared::<ComPtr<IMetaDataAssemblyEmitVtbl>>();
    }
}

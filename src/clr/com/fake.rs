//! Test support: the `IUnknown` half of stand-ins for runtime objects, written once for
//! the tests of every floor above (the runtime's `ICorProfilerInfo`, the `IUnknown`
//! given to `Initialize`).

use crate::clr::sys::{Guid, HResult, IID_IUNKNOWN, IUnknownVtbl};
use core::ffi::c_void;
use core::ptr;
use core::sync::atomic::{AtomicU32, Ordering};

/// A stand-in object's `IUnknown` state: its vtable (`V`, whose first slots are
/// [`IUnknownVtbl`]'s), a reference count starting at 1 (the test's), and the one IID
/// besides `IUnknown` that `QueryInterface` answers with the object itself.
///
/// Alone it is a fake `IUnknown` ([`FakeUnknown::new`]); as the first field of a
/// `#[repr(C)]` struct it is the `IUnknown` half of a larger fake, whose vtable's
/// `IUnknown` slots are [`FakeUnknown::query_interface`], [`FakeUnknown::add_ref`] and
/// [`FakeUnknown::release`] (the layout does not depend on `V`: one reference).
#[repr(C)]
#[derive(Debug)]
pub(crate) struct FakeUnknown<V: 'static = IUnknownVtbl> {
    vtbl: &'static V,
    refs: AtomicU32,
    answers: Option<Guid>,
}

static FAKE_VTBL: IUnknownVtbl = IUnknownVtbl {
    QueryInterface: FakeUnknown::query_interface,
    AddRef: FakeUnknown::add_ref,
    Release: FakeUnknown::release,
};

impl FakeUnknown {
    /// A fake `IUnknown` with one reference (the test's), answering `answers` besides
    /// `IUnknown`. Only its `IUnknown` slots exist, so nothing may call another method
    /// through what it gives.
    pub(crate) fn new(answers: Option<Guid>) -> Box<FakeUnknown> {
        Box::new(FakeUnknown::with_vtable(&FAKE_VTBL, answers))
    }

    /// `QueryInterface` of a fake.
    ///
    /// # Safety
    /// `this` is a live fake (a `#[repr(C)]` object starting with a [`FakeUnknown`]),
    /// `riid` a valid IID and `ppv` a valid out-pointer.
    pub(crate) unsafe extern "system" fn query_interface(
        this: *mut c_void,
        riid: *const Guid,
        ppv: *mut *mut c_void,
    ) -> HResult {
        // SAFETY: the contract above; a fake's layout starts with this struct, whose
        // fields sit where they sit whatever its vtable type.
        unsafe {
            let fake = &*this.cast::<FakeUnknown>();
            if *riid == IID_IUNKNOWN || Some(*riid) == fake.answers {
                fake.refs.fetch_add(1, Ordering::SeqCst);
                *ppv = this;
                HResult::S_OK
            } else {
                *ppv = ptr::null_mut();
                HResult::E_NOINTERFACE
            }
        }
    }

    /// `AddRef` of a fake.
    ///
    /// # Safety
    /// `this` is a live fake (see [`FakeUnknown::query_interface`]).
    pub(crate) unsafe extern "system" fn add_ref(this: *mut c_void) -> u32 {
        // SAFETY: the contract above.
        unsafe {
            (*this.cast::<FakeUnknown>())
                .refs
                .fetch_add(1, Ordering::SeqCst)
                + 1
        }
    }

    /// `Release` of a fake (the test owns it and frees it; the count only checks the
    /// code under test gives back what it took).
    ///
    /// # Safety
    /// `this` is a live fake (see [`FakeUnknown::query_interface`]).
    pub(crate) unsafe extern "system" fn release(this: *mut c_void) -> u32 {
        // SAFETY: the contract above.
        unsafe {
            (*this.cast::<FakeUnknown>())
                .refs
                .fetch_sub(1, Ordering::SeqCst)
                - 1
        }
    }
}

impl<V> FakeUnknown<V> {
    /// The `IUnknown` state of a fake whose vtable is `vtbl`, with one reference.
    pub(crate) fn with_vtable(vtbl: &'static V, answers: Option<Guid>) -> FakeUnknown<V> {
        FakeUnknown {
            vtbl,
            refs: AtomicU32::new(1),
            answers,
        }
    }

    /// The interface pointer (the object stays alive as long as the test holds it).
    pub(crate) fn as_ptr(&self) -> *mut c_void {
        ptr::from_ref(self).cast_mut().cast()
    }

    /// The reference count.
    pub(crate) fn refs(&self) -> u32 {
        self.refs.load(Ordering::SeqCst)
    }
}

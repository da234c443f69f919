//! [`ComObject`]: the `IUnknown` half of the COM objects this crate implements and hands
//! to the runtime (the profiler's callback object and its class factory are two):
//! `QueryInterface`, `AddRef` and `Release`, written once, generic over the object.

use core::ffi::c_void;
use core::ptr;
use std::sync::atomic::{AtomicU32, Ordering, fence};

use crate::clr::log;
use crate::clr::sys::{Guid, HResult};

/// A COM object implemented by this crate.
///
/// # Safety
/// An implementor must be `#[repr(C)]` with the pointer to its vtable as its first field
/// (so that a pointer to the object is an interface pointer), must be allocated with
/// `Box::new` and handed out only as `Box::into_raw` pointers holding one reference
/// each, and `refs` must return the object's one reference count, which starts at the
/// number of such pointers handed out.
pub(crate) unsafe trait ComObject: Sized {
    /// What the drop is called in a log line if it panics.
    const NAME: &'static str;
    /// The interfaces `QueryInterface` answers with this object.
    const INTERFACES: &'static [Guid];
    /// The object's reference count.
    fn refs(&self) -> &AtomicU32;
}

/// The object behind an interface pointer.
///
/// # Safety
/// `this` must be an interface pointer of a live `T` the caller holds a reference to,
/// and the reference returned must not outlive it.
pub(crate) unsafe fn from_this<'a, T: ComObject>(this: *mut c_void) -> &'a T {
    // SAFETY: the caller's contract: `this` points to a live `T` (its vtable pointer is
    // its first field, `ComObject`'s contract).
    unsafe { &*this.cast::<T>() }
}

/// `IUnknown::QueryInterface`: the interfaces of `T::INTERFACES` are this object (with a
/// new reference); anything else is `E_NOINTERFACE`, and null pointers `E_POINTER`.
///
/// # Safety
/// `this` as for [`from_this`]; `riid` null or readable, `ppv` null or writable.
pub(crate) unsafe extern "system" fn query_interface<T: ComObject>(
    this: *mut c_void,
    riid: *const Guid,
    ppv: *mut *mut c_void,
) -> HResult {
    if ppv.is_null() {
        return HResult::E_POINTER;
    }
    // SAFETY: `ppv` is a non-null out-pointer, writable per the COM contract.
    unsafe { ppv.write(ptr::null_mut()) };
    if riid.is_null() {
        return HResult::E_POINTER;
    }
    // SAFETY: `riid` is non-null and points to an IID (the COM contract); read unaligned
    // so that no alignment is assumed.
    let iid = unsafe { riid.read_unaligned() };
    if !T::INTERFACES.contains(&iid) {
        return HResult::E_NOINTERFACE;
    }
    // SAFETY: `this` is a live object (the caller's contract); the new reference is the
    // one `*ppv` gives out, written to the valid `ppv`.
    unsafe {
        add_ref::<T>(this);
        ppv.write(this);
    }
    HResult::S_OK
}

/// `IUnknown::AddRef`.
///
/// # Safety
/// As for [`from_this`].
pub(crate) unsafe extern "system" fn add_ref<T: ComObject>(this: *mut c_void) -> u32 {
    // SAFETY: the caller's contract: a live object.
    let object = unsafe { from_this::<T>(this) };
    object
        .refs()
        .fetch_add(1, Ordering::Relaxed)
        .wrapping_add(1)
}

/// `IUnknown::Release`: frees the object with its last reference (a panic in its drop,
/// which may run a user's code, is caught and logged).
///
/// # Safety
/// As for [`from_this`], and the caller gives up the reference it releases.
pub(crate) unsafe extern "system" fn release<T: ComObject>(this: *mut c_void) -> u32 {
    // SAFETY: the caller's contract: a live object, on which it holds a reference.
    let object = unsafe { from_this::<T>(this) };
    let previous = object.refs().fetch_sub(1, Ordering::Release);
    if previous == 1 {
        // Every other thread's last use of the object happens before its free.
        fence(Ordering::Acquire);
        // SAFETY: that was the last reference: nobody else can reach the object, which
        // was allocated as a `Box<T>` (`ComObject`'s contract).
        let object = unsafe { Box::from_raw(this.cast::<T>()) };
        let _ = log::contain_logged(T::NAME, move || drop(object));
    }
    previous.wrapping_sub(1)
}

//! [`CallbackObject`]: the COM object the runtime calls, `ICorProfilerCallback` ..
//! `ICorProfilerCallback11` over a [`Profiler`].
//!
//! The object is a `#[repr(C)]` struct whose first field points to a vtable of thunks,
//! one per slot, each an `unsafe extern "system" fn` generic over the profiler type: it
//! marks the thread as inside a callback ([`CallbackScope`]), converts the raw arguments,
//! calls the profiler's method inside `catch_unwind` and turns the result into the
//! `HRESULT`. A panic is logged with the callback's name ([`log`]) and answered with
//! `E_FAIL`: nothing unwinds into the runtime.
//!
//! The vtable is built from the same callback list as the [`Profiler`] trait, slot by
//! slot by name, so that a slot and its method cannot drift apart; the slot order itself
//! is that of the `sys` vtable types, which `tests/clr_bindings.rs` checks against the
//! runtime's headers.

use core::ffi::c_void;
use core::fmt;
use core::sync::atomic::{AtomicU32, Ordering};

use super::callbacks::{Profiler, for_each_callback};
use crate::clr::com::ComPtr;
use crate::clr::com::object::{self, ComObject};
use crate::clr::log;
use crate::clr::runtime::guard::{CallbackScope, SHUTDOWN_WAIT, close_for_shutdown};
use crate::clr::runtime::{AssemblyReferenceProvider, FunctionControl, ProfilerInfo};
use crate::clr::sys::callback::{
    ICorProfilerCallback2Vtbl, ICorProfilerCallback3Vtbl, ICorProfilerCallback4Vtbl,
    ICorProfilerCallback5Vtbl, ICorProfilerCallback6Vtbl, ICorProfilerCallback7Vtbl,
    ICorProfilerCallback8Vtbl, ICorProfilerCallback9Vtbl, ICorProfilerCallback10Vtbl,
    ICorProfilerCallback11Vtbl, ICorProfilerCallbackVtbl,
};
// The types the callback list names (see `for_each_callback`).
use crate::clr::sys::enums::{
    CorPrfGcReason, CorPrfGcRootFlags, CorPrfGcRootKind, CorPrfJitCache, CorPrfSuspendReason,
    CorPrfTransitionReason,
};
use crate::clr::sys::types::{
    AppDomainID, AssemblyID, ClassID, EventPipeProvider, FunctionID, GCHandleID, ModuleID,
    ObjectID, ReJITID, ThreadID, mdMethodDef,
};
use crate::clr::sys::{ComVtable, Guid, HResult, IID_IUNKNOWN, IUnknownVtbl};

/// The NUL-terminated UTF-16 string at `text` (empty for null), decoded lossily.
///
/// # Safety
/// `text` is null or points to UTF-16 units readable up to and including a NUL.
unsafe fn wide_string(text: *const u16) -> String {
    if text.is_null() {
        return String::new();
    }
    let mut len = 0;
    // SAFETY: the caller's promise: every unit up to the NUL is readable.
    unsafe {
        while *text.add(len) != 0 {
            len += 1;
        }
        String::from_utf16_lossy(core::slice::from_raw_parts(text, len))
    }
}

/// A callback parameter type and the raw type its vtable slot passes.
trait Abi {
    /// The type in the vtable.
    type Raw;
    /// The parameter from the raw value.
    fn from_raw(raw: Self::Raw) -> Self;
}

macro_rules! abi_as_is {
    ($($t:ty),*) => {
        $(impl Abi for $t {
            type Raw = $t;
            fn from_raw(raw: $t) -> $t {
                raw
            }
        })*
    };
}

abi_as_is!(u32, i32, usize, HResult);

impl<T> Abi for *mut T {
    type Raw = *mut T;
    fn from_raw(raw: *mut T) -> *mut T {
        raw
    }
}

impl<T> Abi for *const T {
    type Raw = *const T;
    fn from_raw(raw: *const T) -> *const T {
        raw
    }
}

/// `BOOL`: any non-zero value is true.
impl Abi for bool {
    type Raw = i32;
    fn from_raw(raw: i32) -> bool {
        raw != 0
    }
}

/// What a callback method returns, as the `HRESULT` the slot answers.
trait IntoHResult {
    fn into_hresult(self) -> HResult;
}

impl IntoHResult for () {
    fn into_hresult(self) -> HResult {
        HResult::S_OK
    }
}

impl IntoHResult for Result<(), HResult> {
    fn into_hresult(self) -> HResult {
        match self {
            Ok(()) => HResult::S_OK,
            Err(hr) => hr,
        }
    }
}

/// Runs one callback: inside a [`CallbackScope`], with panics caught, logged under
/// `callback` and answered with `on_panic`.
fn dispatch<R>(callback: &'static str, on_panic: R, call: impl FnOnce() -> R) -> R {
    let _scope = CallbackScope::enter();
    log::contain_logged(callback, call).unwrap_or(on_panic)
}

/// What `initialize` or `initialize_for_attach` answered, logged when it failed (the
/// runtime then unloads the profiler, silently).
fn report_start(callback: &str, result: Result<(), HResult>) -> HResult {
    if let Err(hr) = result {
        log::write(&format!(
            "{callback} failed with {hr}: the runtime unloads the profiler"
        ));
    }
    result.into_hresult()
}

/// The COM object the runtime calls: `ICorProfilerCallback` .. `ICorProfilerCallback11`
/// (one vtable, each version a prefix of the next), reference counted, over a profiler
/// `P`.
///
/// Made by [`CallbackObject::create`] (the class factory of
/// [`export_profiler!`](crate::export_profiler) does it); freed, with `P`, when the last
/// reference is released.
#[repr(C)]
pub struct CallbackObject<P: Profiler> {
    /// What a COM interface pointer points to: the vtable pointer, first.
    vtbl: &'static ICorProfilerCallback11Vtbl,
    refs: AtomicU32,
    profiler: P,
}

// SAFETY: `CallbackObject` is `#[repr(C)]` with its vtable pointer first, `create`
// allocates it with `Box::new` and hands out its `Box::into_raw` pointer with a count of
// 1, and `refs` is its one count.
unsafe impl<P: Profiler> ComObject for CallbackObject<P> {
    const NAME: &'static str = "the profiler's drop";
    const INTERFACES: &'static [Guid] = INTERFACES;
    fn refs(&self) -> &AtomicU32 {
        &self.refs
    }
}

impl<P: Profiler> fmt::Debug for CallbackObject<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallbackObject")
            .field("refs", &self.refs.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl<P: Profiler> CallbackObject<P> {
    /// A new object over `profiler`, as its `ICorProfilerCallback11` (the object answers
    /// `QueryInterface` for every earlier version and `IUnknown` with the same pointer).
    pub fn create(profiler: P) -> ComPtr<ICorProfilerCallback11Vtbl> {
        let object = Box::new(CallbackObject {
            vtbl: Self::VTBL,
            refs: AtomicU32::new(1),
            profiler,
        });
        let raw = Box::into_raw(object).cast::<c_void>();
        // SAFETY: `raw` points to a live object whose first field is a pointer to an
        // `ICorProfilerCallback11Vtbl` whose slots all expect that object, and it holds
        // the one reference the count says, which the `ComPtr` takes over.
        unsafe { ComPtr::from_raw(raw) }.expect("a Box is never null")
    }

    /// The object behind an interface pointer.
    ///
    /// # Safety
    /// `this` must be an interface pointer of a live `CallbackObject<P>` (one the caller
    /// holds a reference to), and the reference returned must not outlive it.
    unsafe fn from_this<'a>(this: *mut c_void) -> &'a Self {
        // SAFETY: the caller's contract.
        unsafe { object::from_this(this) }
    }

    /// `Initialize`: the runtime's `IUnknown` as a [`ProfilerInfo`], then the profiler.
    ///
    /// # Safety
    /// `this` as for [`Self::from_this`]; `unknown` null or a live interface pointer.
    unsafe extern "system" fn initialize_thunk(this: *mut c_void, unknown: *mut c_void) -> HResult {
        // SAFETY: the runtime calls a slot with the object the vtable belongs to, and
        // holds a reference to it during the call.
        let object = unsafe { Self::from_this(this) };
        dispatch("initialize", HResult::E_FAIL, || {
            // SAFETY: the runtime passes its `ICorProfilerInfo` object as a live
            // `IUnknown` and keeps its own reference; `from_unknown` refuses null.
            match unsafe { ProfilerInfo::from_unknown(unknown) } {
                Ok(info) => report_start("initialize", object.profiler.initialize(info)),
                Err(error) => {
                    log::write(&format!("initialize: {error}: the profiler does not start"));
                    error.into()
                }
            }
        })
    }

    /// `InitializeForAttach`: [`Self::initialize_thunk`] with the attaching tool's data.
    ///
    /// # Safety
    /// As for [`Self::initialize_thunk`]; `data` null or `len` readable bytes.
    unsafe extern "system" fn initialize_for_attach_thunk(
        this: *mut c_void,
        unknown: *mut c_void,
        data: *mut c_void,
        len: u32,
    ) -> HResult {
        // SAFETY: as in `initialize_thunk`.
        let object = unsafe { Self::from_this(this) };
        dispatch("initialize_for_attach", HResult::E_FAIL, || {
            let client_data: &[u8] = if data.is_null() || len == 0 {
                &[]
            } else {
                // Checked, not truncated: a shorter slice would hide data, and there is
                // no longer one (only a `usize` under 32 bits can fail here).
                let Ok(len) = usize::try_from(len) else {
                    log::write(&format!(
                        "initialize_for_attach: client data of {len} bytes does not fit in \
                         usize: the profiler does not attach"
                    ));
                    return HResult::E_INVALIDARG;
                };
                // SAFETY: the runtime passes the client data it received, `len` bytes at
                // `data`, valid for the call; the slice does not outlive it.
                unsafe { core::slice::from_raw_parts(data.cast::<u8>(), len) }
            };
            // SAFETY: as in `initialize_thunk`.
            match unsafe { ProfilerInfo::from_unknown(unknown) } {
                Ok(info) => report_start(
                    "initialize_for_attach",
                    object.profiler.initialize_for_attach(info, client_data),
                ),
                Err(error) => {
                    log::write(&format!(
                        "initialize_for_attach: {error}: the profiler does not attach"
                    ));
                    error.into()
                }
            }
        })
    }

    /// Runs a callback that answers a `bool` through the out-parameter `answer`, written
    /// only when the callback returns normally.
    ///
    /// # Safety
    /// `answer` null (refused with `E_POINTER`) or writable.
    unsafe fn answer_bool(
        callback: &'static str,
        answer: *mut i32,
        call: impl FnOnce() -> bool,
    ) -> HResult {
        if answer.is_null() {
            return HResult::E_POINTER;
        }
        dispatch(callback, HResult::E_FAIL, || {
            let value = call();
            // SAFETY: `answer` is a non-null out-pointer (the caller's contract).
            unsafe { answer.write(i32::from(value)) };
            HResult::S_OK
        })
    }

    /// `JITCachedFunctionSearchStarted`.
    ///
    /// # Safety
    /// `this` as for [`Self::from_this`]; `use_cached` null or writable.
    unsafe extern "system" fn jit_cached_function_search_started_thunk(
        this: *mut c_void,
        function: FunctionID,
        use_cached: *mut i32,
    ) -> HResult {
        // SAFETY: as in `initialize_thunk`.
        let object = unsafe { Self::from_this(this) };
        // SAFETY: `use_cached` is the runtime's out-pointer (the caller's contract).
        unsafe {
            Self::answer_bool("jit_cached_function_search_started", use_cached, || {
                object.profiler.jit_cached_function_search_started(function)
            })
        }
    }

    /// `JITInlining`.
    ///
    /// # Safety
    /// `this` as for [`Self::from_this`]; `should_inline` null or writable.
    unsafe extern "system" fn jit_inlining_thunk(
        this: *mut c_void,
        caller: FunctionID,
        callee: FunctionID,
        should_inline: *mut i32,
    ) -> HResult {
        // SAFETY: as in `initialize_thunk`.
        let object = unsafe { Self::from_this(this) };
        // SAFETY: `should_inline` is the runtime's out-pointer (the caller's contract).
        unsafe {
            Self::answer_bool("jit_inlining", should_inline, || {
                object.profiler.jit_inlining(caller, callee)
            })
        }
    }

    /// `GetAssemblyReferences`: the profiler's
    /// [`Profiler::get_assembly_references`], with the path decoded and the provider
    /// lent for the call.
    ///
    /// # Safety
    /// `this` as for [`Self::from_this`]; `path` null or NUL-terminated UTF-16, and
    /// `provider` null or a live `ICorProfilerAssemblyReferenceProvider*`, both valid
    /// during the call (the runtime's contract).
    unsafe extern "system" fn get_assembly_references_thunk(
        this: *mut c_void,
        path: *const u16,
        provider: *mut c_void,
    ) -> HResult {
        // SAFETY: as in `initialize_thunk`.
        let object = unsafe { Self::from_this(this) };
        // SAFETY: the runtime's contract above: a terminated string read up to its NUL,
        // and a provider valid while the callback runs, lent by reference only.
        let (path, provider) = unsafe {
            (
                wide_string(path),
                AssemblyReferenceProvider::from_raw(provider),
            )
        };
        dispatch("get_assembly_references", HResult::E_FAIL, || {
            object
                .profiler
                .get_assembly_references(&path, &provider)
                .into_hresult()
        })
    }

    /// `GetReJITParameters`: the control typed, lent to the profiler for the call.
    ///
    /// # Safety
    /// `this` as for [`Self::from_this`]; `control` null or a live
    /// `ICorProfilerFunctionControl*`, valid while the callback runs (the runtime's
    /// contract).
    unsafe extern "system" fn get_rejit_parameters_thunk(
        this: *mut c_void,
        module: ModuleID,
        method: mdMethodDef,
        control: *mut c_void,
    ) -> HResult {
        // SAFETY: as in `initialize_thunk`.
        let object = unsafe { Self::from_this(this) };
        // SAFETY: the runtime's contract above: a control valid while the callback
        // runs, lent by reference only.
        let control = unsafe { FunctionControl::from_raw(control) };
        dispatch("get_rejit_parameters", HResult::E_FAIL, || {
            object
                .profiler
                .get_rejit_parameters(module, method, &control)
                .into_hresult()
        })
    }

    /// `Shutdown`: closes the shutdown gate ([`close_for_shutdown`]: no call outside a
    /// callback reaches the runtime from now on, and the calls the profiler's own
    /// threads had started are waited for, at most [`SHUTDOWN_WAIT`]), then the
    /// profiler's [`Profiler::shutdown`], then the counts of the log lines throttled so
    /// far ([`log::flush_repeats`]).
    ///
    /// # Safety
    /// `this` as for [`Self::from_this`].
    unsafe extern "system" fn shutdown_thunk(this: *mut c_void) -> HResult {
        // SAFETY: as in `initialize_thunk`.
        let object = unsafe { Self::from_this(this) };
        dispatch("shutdown", HResult::E_FAIL, || {
            if let Err(left) = close_for_shutdown(SHUTDOWN_WAIT) {
                log::write(&format!(
                    "shutdown: {left} runtime call(s) of the profiler's threads still under way \
                     after {} s; the runtime's shutdown goes on",
                    SHUTDOWN_WAIT.as_secs()
                ));
            }
            object.profiler.shutdown();
            log::flush_repeats();
            HResult::S_OK
        })
    }

    /// `LoadAsNotificationOnly`.
    ///
    /// # Safety
    /// `this` as for [`Self::from_this`]; `notification_only` null or writable.
    unsafe extern "system" fn load_as_notification_only_thunk(
        this: *mut c_void,
        notification_only: *mut i32,
    ) -> HResult {
        // SAFETY: as in `initialize_thunk`.
        let object = unsafe { Self::from_this(this) };
        // SAFETY: `notification_only` is the runtime's out-pointer (the caller's
        // contract).
        unsafe {
            Self::answer_bool("load_as_notification_only", notification_only, || {
                object.profiler.load_as_notification_only()
            })
        }
    }

    const IUNKNOWN: IUnknownVtbl = IUnknownVtbl {
        QueryInterface: object::query_interface::<Self>,
        AddRef: object::add_ref::<Self>,
        Release: object::release::<Self>,
    };

    /// The vtable every object of this profiler type points to.
    const VTBL: &'static ICorProfilerCallback11Vtbl = &Self::CALLBACK11;
}

/// A callback's thunk, from its entry in the list: the profiler method of the same
/// name, with the raw arguments converted (nothing for a callback with a custom thunk).
macro_rules! callback_thunk {
    // A custom thunk: written by hand above.
    ($slot:ident [$thunk:ident] $($custom:tt)*) => {};
    (
        $slot:ident []
        $(#[$doc:meta])*
        fn $method:ident($($arg:ident: $ty:ty),*) -> $ret:ty { $default:expr }
    ) => {
        #[doc = concat!("The thunk of [`Profiler::", stringify!($method), "`].")]
        ///
        /// # Safety
        /// `this` as for `from_this`; the pointer arguments as the runtime passes them
        /// (they go to the profiler as they are).
        #[allow(clippy::too_many_arguments)]
        unsafe extern "system" fn $method(
            this: *mut c_void
            $(, $arg: <$ty as Abi>::Raw)*
        ) -> HResult {
            // SAFETY: the runtime calls a slot with the object the vtable belongs to
            // (only `create` installs it), and holds a reference during the call.
            let object = unsafe { Self::from_this(this) };
            dispatch(stringify!($method), HResult::E_FAIL, || {
                object
                    .profiler
                    .$method($(<$ty as Abi>::from_raw($arg)),*)
                    .into_hresult()
            })
        }
    };
}

impl<P: Profiler> CallbackObject<P> {
    for_each_callback!(callback_thunk);
}

/// The thunk a slot holds: the generated one, or the custom one.
macro_rules! callback_slot {
    ($method:ident [$thunk:ident]) => {
        Self::$thunk
    };
    ($method:ident []) => {
        Self::$method
    };
}

/// The `base` of a vtable level: `IUnknown` for the first, else the previous level.
macro_rules! callback_base {
    () => {
        Self::IUNKNOWN
    };
    ($parent:ident) => {
        Self::$parent
    };
}

/// The vtable of each interface, one level on the previous, with the IIDs the object
/// answers for.
macro_rules! define_callback_vtables {
    ($(
        $iface:literal ($vtbl:ident as $konst:ident $(: $parent:ident)?) {
            $($slot:ident => $method:ident $thunk:tt $events:tt,)*
        }
    )*) => {
        /// The IIDs the object answers `QueryInterface` for.
        const INTERFACES: &[Guid] = &[IID_IUNKNOWN, $(<$vtbl as ComVtable>::IID),*];

        /// For each interface, its vtable's own method names in slot order and the
        /// list's `(slot, method)` pairs.
        #[cfg(test)]
        pub(crate) const CALLBACK_LIST: &[(&str, &[&str], &[(&str, &str)])] = &[$((
            $iface,
            <$vtbl as ComVtable>::METHODS,
            &[$((stringify!($slot), stringify!($method))),*],
        )),*];

        impl<P: Profiler> CallbackObject<P> {
            $(
                const $konst: $vtbl = $vtbl {
                    base: callback_base!($($parent)?),
                    $($slot: callback_slot!($method $thunk),)*
                };
            )*
        }
    };
}

for_each_callback!(interfaces define_callback_vtables);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clr::profiler::testing::{
        FakeUnknown, Panicky, Record, Recorder, call_v1, capture_logs, logged,
    };
    use crate::clr::runtime::guard::CallContext;
    use crate::clr::sys::IID_ICORPROFILERINFO;
    use core::ptr;
    use std::sync::Arc;

    #[test]
    fn the_list_covers_every_slot_in_order_with_its_own_method() {
        let mut total = 0;
        for (iface, methods, list) in CALLBACK_LIST {
            let slots: Vec<&str> = list.iter().map(|&(slot, _)| slot).collect();
            assert_eq!(&slots, methods, "{iface}");
            for (slot, method) in *list {
                assert_eq!(
                    slot.to_lowercase(),
                    method.replace('_', ""),
                    "{iface}::{slot} is handled by {method}"
                );
            }
            total += list.len();
        }
        assert_eq!(CALLBACK_LIST.len(), 11);
        assert_eq!(total, 95);
        assert_eq!(
            <ICorProfilerCallback11Vtbl as ComVtable>::SLOTS,
            3 + total,
            "IUnknown's three slots, then one per callback"
        );
    }

    #[test]
    fn query_interface_answers_every_callback_version_with_the_same_object() {
        let record = Arc::new(Record::default());
        let object = CallbackObject::create(Recorder::new(&record));
        let this = object.as_raw();
        for iid in INTERFACES {
            let mut out = ptr::null_mut();
            // SAFETY: a live object; valid IID and out-pointer.
            let hr =
                unsafe { object::query_interface::<CallbackObject<Recorder>>(this, iid, &mut out) };
            assert_eq!((hr, out), (HResult::S_OK, this), "{iid}");
            // SAFETY: releases the reference the query gave.
            unsafe { object::release::<CallbackObject<Recorder>>(out) };
        }
        let mut out = ptr::dangling_mut();
        // SAFETY: a live object; valid pointers (or null where the test says so).
        unsafe {
            assert_eq!(
                object::query_interface::<CallbackObject<Recorder>>(
                    this,
                    &IID_ICORPROFILERINFO,
                    &mut out
                ),
                HResult::E_NOINTERFACE
            );
            assert!(out.is_null());
            assert_eq!(
                object::query_interface::<CallbackObject<Recorder>>(
                    this,
                    &IID_IUNKNOWN,
                    ptr::null_mut()
                ),
                HResult::E_POINTER
            );
            out = ptr::dangling_mut();
            assert_eq!(
                object::query_interface::<CallbackObject<Recorder>>(this, ptr::null(), &mut out),
                HResult::E_POINTER
            );
            assert!(out.is_null());
        }
        // SAFETY: `object` keeps the object alive while the reference is used.
        let debug = format!("{:?}", unsafe {
            CallbackObject::<Recorder>::from_this(this)
        });
        assert_eq!(debug, "CallbackObject { refs: 1, .. }");
        drop(object);
        assert_eq!(record.drops(), 1);
    }

    #[test]
    fn references_from_many_threads_free_the_object_once() {
        /// A reference the test sends to another thread, as the runtime does with the
        /// callback object (`ComPtr` to a callback interface is not `Send`: the callback
        /// interfaces are not `FreeThreaded`).
        struct Sent(ComPtr<ICorProfilerCallback11Vtbl>);
        // SAFETY: the object is a `CallbackObject<Recorder>`: its count is atomic and
        // `Recorder` is `Send + Sync` (the `Profiler` trait requires both), so its
        // references may be added and released on any thread, which is what the test
        // checks.
        unsafe impl Send for Sent {}
        impl Sent {
            /// The reference (a method, so that the closure takes the whole `Sent`).
            fn get(self) -> ComPtr<ICorProfilerCallback11Vtbl> {
                self.0
            }
        }

        let record = Arc::new(Record::default());
        let object = CallbackObject::create(Recorder::new(&record));
        std::thread::scope(|s| {
            for _ in 0..4 {
                let sent = Sent(object.clone());
                s.spawn(move || {
                    let object = sent.get();
                    for _ in 0..1000 {
                        drop(object.clone());
                    }
                });
            }
        });
        assert_eq!(record.drops(), 0);
        drop(object);
        assert_eq!(record.drops(), 1);
    }

    #[test]
    fn initialize_hands_the_info_over_and_answers_the_profilers_error() {
        capture_logs();
        let record = Arc::new(Record::default());
        let object = CallbackObject::create(Recorder::new(&record));
        let unknown = FakeUnknown::new(Some(IID_ICORPROFILERINFO));
        // SAFETY: a live object and a live fake `IUnknown`.
        let hr = unsafe { (call_v1(&object).Initialize)(object.as_raw(), unknown.as_ptr()) };
        assert_eq!(hr, HResult::E_ACCESSDENIED);
        // `ICorProfilerInfo` (version 1) is all the fake gives, and the profiler got it
        // inside a callback; the reference it was given is released again.
        record.expect("initialize", &[1]);
        assert_eq!(unknown.refs(), 1);
        assert!(logged("initialize failed with 0x80070005 (E_ACCESSDENIED)"));
    }

    #[test]
    fn initialize_without_an_info_and_panics_in_initialize_fail() {
        capture_logs();
        let record = Arc::new(Record::default());
        let object = CallbackObject::create(Recorder::new(&record));
        let unknown = FakeUnknown::new(None);
        // SAFETY: a live object, a live fake `IUnknown`, then null (refused).
        unsafe {
            let initialize = call_v1(&object).Initialize;
            assert_eq!(
                initialize(object.as_raw(), unknown.as_ptr()),
                HResult::E_NOINTERFACE
            );
            assert_eq!(
                initialize(object.as_raw(), ptr::null_mut()),
                HResult::E_POINTER
            );
        }
        record.expect_none("initialize");
        assert_eq!(unknown.refs(), 1);

        let panicky = CallbackObject::create(Panicky);
        let unknown = FakeUnknown::new(Some(IID_ICORPROFILERINFO));
        // SAFETY: a live object and a live fake `IUnknown`.
        let hr = unsafe { (call_v1(&panicky).Initialize)(panicky.as_raw(), unknown.as_ptr()) };
        assert_eq!(hr, HResult::E_FAIL);
        assert!(logged("panic in initialize: Panicky::initialize"));
        assert_eq!(unknown.refs(), 1, "the info is released while unwinding");
        assert_eq!(CallContext::current(), CallContext::Asynchronous);
    }

    #[test]
    fn out_parameter_callbacks_answer_through_them() {
        capture_logs();
        let record = Arc::new(Record::default());
        let object = CallbackObject::create(Recorder::new(&record));
        let v1 = call_v1(&object);
        let (mut a, mut b) = (7, 7);
        // SAFETY: a live object; valid out-pointers (and a null one, refused).
        unsafe {
            assert_eq!(
                (v1.JITInlining)(object.as_raw(), 0x10, 0x20, &mut a),
                HResult::S_OK
            );
            assert_eq!(
                (v1.JITInlining)(object.as_raw(), 0x10, 0xBAD, &mut b),
                HResult::S_OK
            );
            assert_eq!((a, b), (1, 0));
            assert_eq!(
                (v1.JITInlining)(object.as_raw(), 0x10, 0x20, ptr::null_mut()),
                HResult::E_POINTER
            );
            assert_eq!(
                (v1.JITCachedFunctionSearchStarted)(object.as_raw(), 0x30, &mut a),
                HResult::S_OK
            );
            assert_eq!(a, 0);
            assert_eq!(
                (object.vtbl().LoadAsNotificationOnly)(object.as_raw(), &mut a),
                HResult::S_OK
            );
            assert_eq!(a, 1);
        }
        record.expect("jit_inlining", &[0x10, 0x20]);
        record.expect("jit_inlining", &[0x10, 0xBAD]);
        record.expect("jit_cached_function_search_started", &[0x30]);
        record.expect("load_as_notification_only", &[]);

        // A panic leaves the out-parameter as it was.
        let panicky = CallbackObject::create(Panicky);
        let mut c = 7;
        // SAFETY: a live object; a valid out-pointer.
        let hr = unsafe { (call_v1(&panicky).JITInlining)(panicky.as_raw(), 1, 2, &mut c) };
        assert_eq!((hr, c), (HResult::E_FAIL, 7));
        assert!(logged("panic in jit_inlining: Panicky::jit_inlining"));
    }

    #[test]
    fn attach_gets_the_client_data_and_the_default_refuses() {
        capture_logs();
        let record = Arc::new(Record::default());
        let object = CallbackObject::create(Recorder::new(&record));
        let unknown = FakeUnknown::new(Some(IID_ICORPROFILERINFO));
        let mut data = *b"attach!";
        let v3 = &object.vtbl().base.base.base.base.base.base.base.base;
        // SAFETY: a live object, a live fake, `data.len()` readable bytes.
        let hr = unsafe {
            (v3.InitializeForAttach)(
                object.as_raw(),
                unknown.as_ptr(),
                data.as_mut_ptr().cast(),
                u32::try_from(data.len()).unwrap(),
            )
        };
        assert_eq!(hr, HResult::S_OK);
        record.expect("initialize_for_attach", &[1, 7, usize::from(b'a')]);

        // `Panicky` does not implement it: the default refuses.
        let panicky = CallbackObject::create(Panicky);
        let v3 = &panicky.vtbl().base.base.base.base.base.base.base.base;
        // SAFETY: a live object, a live fake, no data.
        let hr = unsafe {
            (v3.InitializeForAttach)(panicky.as_raw(), unknown.as_ptr(), ptr::null_mut(), 0)
        };
        assert_eq!(hr, HResult::CORPROF_E_PROFILER_NOT_ATTACHABLE);
        assert_eq!(unknown.refs(), 1);
    }
}

//! The COM server side: the class factory that makes the callback object, and
//! [`export_profiler!`](crate::export_profiler), which exports it from a `cdylib`.
//!
//! The runtime loads the library named by `CORECLR_PROFILER_PATH`, calls
//! `DllGetClassObject(CLSID, IID_IClassFactory)` with the CLSID of `CORECLR_PROFILER`,
//! then `IClassFactory::CreateInstance(NULL, IID_ICorProfilerCallback2)` (CoreCLR 3.1),
//! and queries the object for newer callback interfaces.

use core::ffi::c_void;
use core::fmt;
use core::ptr;
use core::sync::atomic::{AtomicU32, Ordering};

use super::callbacks::Profiler;
use super::thunks::CallbackObject;
use crate::clr::com::ComPtr;
use crate::clr::com::object::{self, ComObject};
use crate::clr::log;
use crate::clr::sys::{
    Guid, HResult, IClassFactoryVtbl, IID_ICLASSFACTORY, IID_IUNKNOWN, IUnknownVtbl,
};

/// The `IClassFactory` that makes [`CallbackObject`]s over profilers built by a
/// constructor.
#[repr(C)]
pub struct ClassFactory<P: Profiler> {
    /// What a COM interface pointer points to: the vtable pointer, first.
    vtbl: &'static IClassFactoryVtbl,
    refs: AtomicU32,
    new: fn() -> P,
}

// SAFETY: `ClassFactory` is `#[repr(C)]` with its vtable pointer first, `create`
// allocates it with `Box::new` and hands out its `Box::into_raw` pointer with a count of
// 1, and `refs` is its one count.
unsafe impl<P: Profiler> ComObject for ClassFactory<P> {
    const NAME: &'static str = "the class factory's drop";
    const INTERFACES: &'static [Guid] = &[IID_IUNKNOWN, IID_ICLASSFACTORY];
    fn refs(&self) -> &AtomicU32 {
        &self.refs
    }
}

impl<P: Profiler> fmt::Debug for ClassFactory<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClassFactory")
            .field("refs", &self.refs.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl<P: Profiler> ClassFactory<P> {
    /// A new factory whose `CreateInstance` calls `new` for each object.
    pub fn create(new: fn() -> P) -> ComPtr<IClassFactoryVtbl> {
        let factory = Box::new(ClassFactory {
            vtbl: Self::VTBL,
            refs: AtomicU32::new(1),
            new,
        });
        let raw = Box::into_raw(factory).cast::<c_void>();
        // SAFETY: `raw` points to a live factory whose first field is a pointer to an
        // `IClassFactoryVtbl` whose slots all expect that object, and it holds the one
        // reference the count says, which the `ComPtr` takes over.
        unsafe { ComPtr::from_raw(raw) }.expect("a Box is never null")
    }

    const VTBL: &'static IClassFactoryVtbl = &IClassFactoryVtbl {
        base: IUnknownVtbl {
            QueryInterface: object::query_interface::<Self>,
            AddRef: object::add_ref::<Self>,
            Release: object::release::<Self>,
        },
        CreateInstance: Self::create_instance,
        LockServer: Self::lock_server,
    };

    /// The factory behind an interface pointer.
    ///
    /// # Safety
    /// `this` must be an interface pointer of a live `ClassFactory<P>` the caller holds
    /// a reference to, and the reference returned must not outlive it.
    unsafe fn from_this<'a>(this: *mut c_void) -> &'a Self {
        // SAFETY: the caller's contract.
        unsafe { object::from_this(this) }
    }

    /// `IClassFactory::CreateInstance`: a new profiler in a new callback object, as
    /// interface `riid`. Aggregation is refused (`CLASS_E_NOAGGREGATION`); a panicking
    /// constructor is logged and answered with `E_FAIL`.
    ///
    /// # Safety
    /// As for [`Self::from_this`]; `riid` null or readable, `ppv` null or writable.
    unsafe extern "system" fn create_instance(
        this: *mut c_void,
        outer: *mut c_void,
        riid: *const Guid,
        ppv: *mut *mut c_void,
    ) -> HResult {
        if ppv.is_null() {
            return HResult::E_POINTER;
        }
        // SAFETY: a non-null out-pointer, writable per the COM contract.
        unsafe { ppv.write(ptr::null_mut()) };
        if !outer.is_null() {
            return HResult::CLASS_E_NOAGGREGATION;
        }
        if riid.is_null() {
            return HResult::E_POINTER;
        }
        // SAFETY: the caller's contract.
        let new = unsafe { Self::from_this(this) }.new;
        match log::contain_logged("the profiler's constructor", || {
            CallbackObject::create(new())
        }) {
            // SAFETY: a live object; `riid` and `ppv` are valid (checked above, and the
            // caller's contract). The query adds the reference given out; ours is
            // released when `object` drops (freeing the object if the query failed).
            Some(object) => unsafe {
                object::query_interface::<CallbackObject<P>>(object.as_raw(), riid, ppv)
            },
            None => HResult::E_FAIL,
        }
    }

    /// `IClassFactory::LockServer`: nothing to do, the library is never unloaded.
    unsafe extern "system" fn lock_server(_this: *mut c_void, _lock: i32) -> HResult {
        HResult::S_OK
    }
}

/// `DllGetClassObject` for a profiler of class `clsid` built by `new`: what
/// [`export_profiler!`](crate::export_profiler) exports. Answers an
/// `IClassFactory` (or `IUnknown`) of a new [`ClassFactory`]; `CLASS_E_CLASSNOTAVAILABLE`
/// for another class, `E_NOINTERFACE` for another interface, `E_POINTER` for a null
/// pointer; a panic is logged and answered with `E_FAIL`.
///
/// # Safety
/// `rclsid` and `riid` null or readable GUIDs, `ppv` null or writable: the contract of
/// `DllGetClassObject`.
pub unsafe fn get_class_object<P: Profiler>(
    clsid: Guid,
    new: fn() -> P,
    rclsid: *const Guid,
    riid: *const Guid,
    ppv: *mut *mut c_void,
) -> HResult {
    if ppv.is_null() {
        return HResult::E_POINTER;
    }
    // SAFETY: a non-null out-pointer (the caller's contract).
    unsafe { ppv.write(ptr::null_mut()) };
    if rclsid.is_null() || riid.is_null() {
        return HResult::E_POINTER;
    }
    // SAFETY: non-null GUID pointers (the caller's contract), read unaligned.
    if unsafe { rclsid.read_unaligned() } != clsid {
        return HResult::CLASS_E_CLASSNOTAVAILABLE;
    }
    match log::contain_logged("DllGetClassObject", || ClassFactory::create(new)) {
        // SAFETY: a live factory; valid `riid` and `ppv`. The query adds the reference
        // given out; ours is released when `factory` drops.
        Some(factory) => unsafe {
            object::query_interface::<ClassFactory<P>>(factory.as_raw(), riid, ppv)
        },
        None => HResult::E_FAIL,
    }
}

/// Exports a profiler from a `cdylib`: defines `DllGetClassObject` (answering the
/// class `clsid` with a class factory whose objects wrap a profiler made by calling
/// `profiler`, a `fn() -> P` where `P:` [`Profiler`](crate::clr::Profiler)) and
/// `DllCanUnloadNow` (always `S_FALSE`: a profiler cannot be unloaded safely while the
/// runtime runs).
///
/// Invoke it once, at the crate's top level:
///
/// ```no_run
/// struct Quiet;
///
/// impl ilrewrite::clr::Profiler for Quiet {} // every callback left to its default
///
/// ilrewrite::export_profiler!(
///     clsid = "{9E2B38F2-7355-4C61-A54F-434B7AC266C0}",
///     profiler = || Quiet,
/// );
/// ```
///
/// A malformed CLSID is a compile-time error. Nothing of the profiler runs in
/// `DllGetClassObject`: the `profiler` expression is evaluated, and what it gives called,
/// when the runtime asks the factory for the profiler (`IClassFactory::CreateInstance`),
/// inside `catch_unwind`; a panic in either is logged ([`crate::clr::log`]) and answered
/// `E_FAIL` (the runtime then runs without the profiler), never unwound into the runtime.
/// See [`crate::clr::Profiler`] for a whole profiler.
#[macro_export]
macro_rules! export_profiler {
    (clsid = $clsid:literal, profiler = $new:expr $(,)?) => {
        /// The COM entry point the runtime calls to create the profiler (made by
        /// `ilrewrite::export_profiler!`).
        ///
        /// # Safety
        /// Pointers as `DllGetClassObject` receives them: null or valid.
        #[allow(non_snake_case)]
        #[unsafe(no_mangle)]
        pub unsafe extern "system" fn DllGetClassObject(
            rclsid: *const $crate::clr::sys::Guid,
            riid: *const $crate::clr::sys::Guid,
            ppv: *mut *mut ::core::ffi::c_void,
        ) -> $crate::clr::sys::HResult {
            const CLSID: $crate::clr::sys::Guid = $crate::clr::sys::Guid::parse_const($clsid);
            // The `profiler` expression is not evaluated here, where a panic would unwind
            // out of an `extern` function, but in the constructor, which the class
            // factory's `CreateInstance` calls inside `catch_unwind`.
            let new: fn() -> _ = || ($new)();
            // SAFETY: `get_class_object` has the contract of `DllGetClassObject`, which
            // is this function's.
            unsafe { $crate::clr::get_class_object(CLSID, new, rclsid, riid, ppv) }
        }

        /// Whether the library may be unloaded: never (`S_FALSE`) while the runtime
        /// runs (made by `ilrewrite::export_profiler!`).
        #[allow(non_snake_case)]
        #[unsafe(no_mangle)]
        pub extern "system" fn DllCanUnloadNow() -> $crate::clr::sys::HResult {
            $crate::clr::sys::HResult::S_FALSE
        }
    };
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::clr::profiler::testing::{FakeUnknown, Record, Recorder, capture_logs, logged};
    use crate::clr::runtime::guard::CallContext;
    use crate::clr::sys::{
        ICorProfilerCallback4Vtbl, ICorProfilerCallback9Vtbl, ICorProfilerCallback10Vtbl,
        ICorProfilerCallback11Vtbl, IID_ICORPROFILERCALLBACK2, IID_ICORPROFILERCALLBACK9,
        IID_ICORPROFILERCALLBACK11, IID_ICORPROFILERINFO,
    };

    const CLSID: Guid = Guid::parse_const("{9E2B38F2-7355-4C61-A54F-434B7AC266C0}");

    /// The records of the profilers the exported factory made, newest last.
    static MADE: Mutex<Vec<Arc<Record>>> = Mutex::new(Vec::new());

    /// Where the exported factory's constructor panics, on this thread (the runtime
    /// calls `DllGetClassObject` and `CreateInstance` on one thread; a thread-local keeps
    /// the other tests, which run in parallel, apart).
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Panic {
        Never,
        /// In the `profiler` expression of `export_profiler!`.
        InExpression,
        /// In the constructor the expression gives.
        InConstructor,
    }

    thread_local! {
        static PANIC: Cell<Panic> = const { Cell::new(Panic::Never) };
    }

    fn make_recorder() -> Recorder {
        if PANIC.get() == Panic::InConstructor {
            panic!("no profiler today");
        }
        let record = Arc::new(Record::default());
        MADE.lock().unwrap().push(Arc::clone(&record));
        Recorder::new(&record)
    }

    /// The `profiler` expression: an expression (not a path) that can panic itself.
    fn constructor() -> fn() -> Recorder {
        if PANIC.get() == Panic::InExpression {
            panic!("no constructor today");
        }
        make_recorder
    }

    crate::export_profiler!(
        clsid = "{9E2B38F2-7355-4C61-A54F-434B7AC266C0}",
        profiler = constructor(),
    );

    /// Queries `unknown` (an interface pointer the test owns a reference to) for `iid`.
    fn query(unknown: *mut c_void, iid: &Guid) -> (HResult, *mut c_void) {
        let mut out = ptr::null_mut();
        // SAFETY: every COM vtable starts with the IUnknown slots; the test passes live
        // pointers.
        let hr = unsafe {
            let vtbl = &**unknown.cast::<*const IUnknownVtbl>();
            (vtbl.QueryInterface)(unknown, iid, &mut out)
        };
        (hr, out)
    }

    /// Releases one reference to `unknown`, returning the new count.
    fn release(unknown: *mut c_void) -> u32 {
        // SAFETY: as in `query`; the test gives up the reference.
        unsafe { ((**unknown.cast::<*const IUnknownVtbl>()).Release)(unknown) }
    }

    /// What CoreCLR 3.1 does, step by step, with the exported entry points.
    #[test]
    fn the_exported_factory_serves_the_runtime() {
        capture_logs();
        let factory = the_exported_factory();
        let (object, record) = the_callback_object(factory);

        // Then QueryInterface up to ICorProfilerCallback9 (and 11, for newer runtimes).
        let (hr, cb9) = query(object, &IID_ICORPROFILERCALLBACK9);
        assert_eq!((hr, cb9), (HResult::S_OK, object));
        let (hr, cb11) = query(object, &IID_ICORPROFILERCALLBACK11);
        assert_eq!((hr, cb11), (HResult::S_OK, object));

        let unknown = FakeUnknown::new(None);
        let mut cookie = Guid::NIL;
        let mut frames = [0usize; 2];
        initialize_without_profiler_info(cb9, &unknown);
        call_through_callback9(cb9, &mut cookie);
        call_through_callback11(cb11, &mut frames);
        a_panic_then_shutdown(cb9);
        assert_eq!(CallContext::current(), CallContext::Asynchronous);
        expect_the_calls_made(&record, &mut cookie, &frames);

        // The runtime's references: CreateInstance's, and the two queries'.
        assert_eq!(release(cb11), 2);
        assert_eq!(release(cb9), 1);
        assert_eq!(record.drops(), 0);
        assert_eq!(release(object), 0);
        assert_eq!(record.drops(), 1, "the last Release drops the profiler");
        assert_eq!(unknown.refs(), 1);
    }

    /// `DllGetClassObject` as the runtime calls it (other classes, a null out pointer
    /// and other interfaces refused), then the factory it gives.
    fn the_exported_factory() -> *mut c_void {
        let mut factory = ptr::null_mut();
        // SAFETY: valid pointers (or null where refused), as the runtime passes them.
        unsafe {
            let other = Guid::parse_const("{00000000-0000-0000-0000-000000000001}");
            assert_eq!(
                DllGetClassObject(&other, &IID_ICLASSFACTORY, &mut factory),
                HResult::CLASS_E_CLASSNOTAVAILABLE
            );
            assert!(factory.is_null());
            assert_eq!(
                DllGetClassObject(&CLSID, &IID_ICLASSFACTORY, ptr::null_mut()),
                HResult::E_POINTER
            );
            assert_eq!(
                DllGetClassObject(&CLSID, &IID_ICORPROFILERCALLBACK2, &mut factory),
                HResult::E_NOINTERFACE
            );
            assert_eq!(
                DllGetClassObject(&CLSID, &IID_ICLASSFACTORY, &mut factory),
                HResult::S_OK
            );
        }
        assert_eq!(DllCanUnloadNow(), HResult::S_FALSE);
        factory
    }

    /// IClassFactory::CreateInstance(NULL, IID_ICorProfilerCallback2), after the
    /// requests it refuses; the factory released. The object, and its profiler's record.
    fn the_callback_object(factory: *mut c_void) -> (*mut c_void, Arc<Record>) {
        // SAFETY: `factory` is a live IClassFactory; valid pointers.
        let vtbl = unsafe { &**factory.cast::<*const IClassFactoryVtbl>() };
        let mut object = ptr::null_mut();
        // SAFETY: as above.
        unsafe {
            assert_eq!((vtbl.LockServer)(factory, 1), HResult::S_OK);
            assert_eq!(
                (vtbl.CreateInstance)(factory, factory, &IID_ICORPROFILERCALLBACK2, &mut object),
                HResult::CLASS_E_NOAGGREGATION
            );
            assert!(object.is_null());
            assert_eq!(
                (vtbl.CreateInstance)(factory, ptr::null_mut(), &IID_ICORPROFILERINFO, &mut object),
                HResult::E_NOINTERFACE,
                "an object no one can use is not handed out"
            );
            assert_eq!(
                (vtbl.CreateInstance)(
                    factory,
                    ptr::null_mut(),
                    &IID_ICORPROFILERCALLBACK2,
                    &mut object
                ),
                HResult::S_OK
            );
        }
        assert_eq!(release(factory), 0, "the factory is freed");
        let record = Arc::clone(MADE.lock().unwrap().last().unwrap());
        assert_eq!(
            MADE.lock().unwrap()[0].drops(),
            1,
            "the refused object is freed"
        );
        (object, record)
    }

    /// Initialize with an IUnknown that gives no ICorProfilerInfo: the thunk answers
    /// the failure without calling the profiler.
    fn initialize_without_profiler_info(cb9: *mut c_void, unknown: &FakeUnknown) {
        // SAFETY: `cb9` is a live ICorProfilerCallback9.
        let v9 = unsafe { &**cb9.cast::<*const ICorProfilerCallback9Vtbl>() };
        let v1 = &v9.base.base.base.base.base.base.base.base;
        // SAFETY: live objects.
        unsafe {
            assert_eq!(
                (v1.Initialize)(cb9, unknown.as_ptr()),
                HResult::E_NOINTERFACE
            );
        }
        assert!(logged(
            "initialize: QueryInterface(ICorProfilerInfo) failed"
        ));
    }

    /// Callbacks through their slots in the Callback9 vtable, those nobody implements
    /// included.
    fn call_through_callback9(cb9: *mut c_void, cookie: &mut Guid) {
        // SAFETY: `cb9` is a live ICorProfilerCallback9.
        let v9 = unsafe { &**cb9.cast::<*const ICorProfilerCallback9Vtbl>() };
        let v4: &ICorProfilerCallback4Vtbl = &v9.base.base.base.base.base;
        let v1 = &v4.base.base.base;
        // SAFETY: a live object; plain values and valid pointers for every call.
        unsafe {
            assert_eq!((v1.JITCompilationStarted)(cb9, 0x1234, 1), HResult::S_OK);
            assert_eq!((v1.JITCompilationStarted)(cb9, 0x1235, 0), HResult::S_OK);
            assert_eq!(
                (v1.ModuleLoadFinished)(cb9, 0x5000, HResult::CORPROF_E_DATAINCOMPLETE),
                HResult::S_OK
            );
            assert_eq!((v1.ModuleUnloadStarted)(cb9, 0x5000), HResult::E_NOTIMPL);
            assert_eq!(
                (v1.RemotingClientSendingMessage)(cb9, cookie, 2),
                HResult::S_OK
            );
            let mut name: Vec<u16> = "worker".encode_utf16().collect();
            assert_eq!(
                (v4.base.base.ThreadNameChanged)(cb9, 0x77, 6, name.as_mut_ptr()),
                HResult::S_OK
            );
            assert_eq!(
                (v4.ReJITCompilationStarted)(cb9, 0x1234, 3, 1),
                HResult::S_OK
            );
            let control = 0xC0 as *mut c_void;
            assert_eq!(
                (v4.GetReJITParameters)(cb9, 0x5000, 0x0600_0001, control),
                HResult::S_OK
            );
            assert_eq!(
                (v4.ReJITError)(cb9, 0x5000, 0x0600_0002, 0, HResult::E_INVALIDARG),
                HResult::S_OK
            );
            assert_eq!((v9.DynamicMethodUnloaded)(cb9, 0x9999), HResult::S_OK);
            // Callbacks nobody implements answer S_OK.
            assert_eq!((v1.AssemblyLoadStarted)(cb9, 1), HResult::S_OK);
            assert_eq!(
                (v9.base.base.ModuleInMemorySymbolsUpdated)(cb9, 1),
                HResult::S_OK
            );
        }
    }

    /// Through ICorProfilerCallback11, the slots after 9.
    fn call_through_callback11(cb11: *mut c_void, frames: &mut [usize; 2]) {
        // SAFETY: `cb11` is a live ICorProfilerCallback11; plain values and valid
        // pointers for every call.
        unsafe {
            let v11 = &**cb11.cast::<*const ICorProfilerCallback11Vtbl>();
            let v10: &ICorProfilerCallback10Vtbl = &v11.base;
            assert_eq!((v10.EventPipeProviderCreated)(cb11, 0xE0), HResult::S_OK);
            assert_eq!(
                (v10.EventPipeEventDelivered)(
                    cb11,
                    0xE0,
                    2,
                    3,
                    4,
                    5 as *const u8,
                    6,
                    7 as *const u8,
                    8 as *const Guid,
                    9 as *const Guid,
                    10,
                    2,
                    frames.as_mut_ptr(),
                ),
                HResult::S_OK
            );
            let mut notification_only = 0;
            assert_eq!(
                (v11.LoadAsNotificationOnly)(cb11, &mut notification_only),
                HResult::S_OK
            );
            assert_eq!(notification_only, 1);
        }
    }

    /// A panicking callback answers E_FAIL; the process and the profiler go on, to
    /// `Shutdown`.
    fn a_panic_then_shutdown(cb9: *mut c_void) {
        // SAFETY: `cb9` is a live ICorProfilerCallback9.
        let v9 = unsafe { &**cb9.cast::<*const ICorProfilerCallback9Vtbl>() };
        let v1 = &v9.base.base.base.base.base.base.base.base;
        // SAFETY: a live object; plain values.
        unsafe {
            assert_eq!((v1.ClassLoadStarted)(cb9, 0x42), HResult::E_FAIL);
            assert!(logged("panic in class_load_started: class 0x42 refused"));
            assert_eq!((v1.Shutdown)(cb9), HResult::S_OK);
        }
    }

    /// What the profiler saw of the calls above: each with its arguments, inside a
    /// callback; `initialize` never.
    fn expect_the_calls_made(record: &Record, cookie: &mut Guid, frames: &[usize; 2]) {
        record.expect_none("initialize");
        record.expect("jit_compilation_started", &[0x1234, 1]);
        record.expect("jit_compilation_started", &[0x1235, 0]);
        record.expect("module_load_finished", &[0x5000, 0x8013_1351]);
        record.expect("module_unload_started", &[0x5000]);
        record.expect(
            "remoting_client_sending_message",
            &[ptr::from_mut(cookie) as usize, 1],
        );
        record.expect("thread_name_changed", &[0x77, 6, usize::from(b'w')]);
        record.expect("rejit_compilation_started", &[0x1234, 3, 1]);
        record.expect("get_rejit_parameters", &[0x5000, 0x0600_0001, 0xC0]);
        record.expect(
            "rejit_error",
            &[
                0x5000,
                0x0600_0002,
                0,
                HResult::E_INVALIDARG.as_u32() as usize,
            ],
        );
        record.expect("dynamic_method_unloaded", &[0x9999]);
        record.expect("event_pipe_provider_created", &[0xE0]);
        record.expect(
            "event_pipe_event_delivered",
            &[
                0xE0,
                2,
                3,
                4,
                5,
                6,
                7,
                8,
                9,
                10,
                2,
                frames.as_ptr() as usize,
            ],
        );
        record.expect("load_as_notification_only", &[]);
        record.expect("shutdown", &[]);
    }

    /// A panic in the `profiler` expression or in the constructor it gives, driven
    /// through the exported entry points as CoreCLR calls them: nothing unwinds out of
    /// `DllGetClassObject` or `CreateInstance` (an `extern "system"` function would abort
    /// the process: before the expression moved into the constructor, a panicking
    /// expression did that), the panic is logged, and `CreateInstance` answers `E_FAIL`
    /// with a null object.
    #[test]
    fn a_panicking_profiler_expression_or_constructor_is_refused_through_the_exports() {
        capture_logs();
        for (panic, message) in [
            (Panic::InExpression, "no constructor today"),
            (Panic::InConstructor, "no profiler today"),
        ] {
            PANIC.set(panic);
            let mut factory = ptr::null_mut();
            // SAFETY: valid pointers, as the runtime passes them.
            let hr = unsafe { DllGetClassObject(&CLSID, &IID_ICLASSFACTORY, &mut factory) };
            assert_eq!(
                hr,
                HResult::S_OK,
                "{panic:?}: nothing of the profiler ran yet"
            );
            // SAFETY: `factory` is a live IClassFactory the test holds a reference to.
            let vtbl = unsafe { &**factory.cast::<*const IClassFactoryVtbl>() };
            let mut object = ptr::dangling_mut();
            // SAFETY: as above; valid pointers.
            let hr = unsafe {
                (vtbl.CreateInstance)(
                    factory,
                    ptr::null_mut(),
                    &IID_ICORPROFILERCALLBACK2,
                    &mut object,
                )
            };
            assert_eq!(
                (hr, object),
                (HResult::E_FAIL, ptr::null_mut()),
                "{panic:?}"
            );
            assert!(
                logged(&format!("panic in the profiler's constructor: {message}")),
                "{panic:?}"
            );
            PANIC.set(Panic::Never);
            assert_eq!(release(factory), 0, "{panic:?}: the factory is freed");
        }
    }

    #[test]
    fn a_panicking_constructor_is_refused() {
        capture_logs();
        fn boom() -> Recorder {
            panic!("no profiler today");
        }
        let factory = ClassFactory::create(boom);
        let mut out = ptr::dangling_mut();
        // SAFETY: a live factory; valid pointers.
        let hr = unsafe {
            (factory.vtbl().CreateInstance)(
                factory.as_raw(),
                ptr::null_mut(),
                &IID_ICORPROFILERCALLBACK2,
                &mut out,
            )
        };
        assert_eq!((hr, out), (HResult::E_FAIL, ptr::null_mut()));
        assert!(logged(
            "panic in the profiler's constructor: no profiler today"
        ));
        // SAFETY: `factory` keeps the factory alive while the reference is used.
        let debug = format!("{:?}", unsafe {
            ClassFactory::<Recorder>::from_this(factory.as_raw())
        });
        assert_eq!(debug, "ClassFactory { refs: 1, .. }");
    }
}

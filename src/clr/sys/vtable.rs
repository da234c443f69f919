//! COM vtables: [`ComVtable`], what every bound vtable declares about its interface (an
//! `unsafe` trait: code that calls through a vtable trusts it); [`FreeThreaded`], the
//! interfaces whose objects may be used from several threads at once; the
//! `com_interface!` macro that declares a vtable, its IID and that description from one
//! list of tokens; and the two vtables every COM server needs, `IUnknown` and
//! `IClassFactory`.

use core::ffi::c_void;

use super::guid::Guid;
use super::hresult::HResult;

/// Declares a COM vtable: a `#[repr(C)]` struct whose first field `base` is the parent
/// interface's vtable, followed by one function pointer per method in slot order; the
/// interface's IID constant; and a [`ComVtable`] implementation listing the method
/// names and parameter counts from the same tokens as the fields.
///
/// The `unsafe impl ComVtable` it writes is sound when the tokens are the header's: the
/// methods in the header's slot order with the header's parameters, the parent the
/// header's parent, the IID the header's. `tests/clr_bindings.rs` checks all three for
/// every interface declared with it against facts extracted from the runtime's headers,
/// and the size assertion below checks that the struct has one slot per listed method.
macro_rules! com_interface {
    (
        $(#[$attr:meta])*
        pub struct $vtbl:ident for $name:ident : $parent:ty;
        $(#[$iid_attr:meta])*
        pub const $iid_const:ident = $iid:literal;
        {
            $(
                $(#[$method_attr:meta])*
                fn $method:ident($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)?;
            )*
        }
    ) => {
        $(#[$iid_attr])*
        pub const $iid_const: $crate::clr::sys::guid::Guid = $crate::clr::sys::guid::Guid::parse_const($iid);

        $(#[$attr])*
        #[repr(C)]
        #[allow(non_snake_case)]
        #[derive(Debug)]
        pub struct $vtbl {
            /// The slots inherited from the parent interface.
            pub base: $parent,
            $(
                #[doc = concat!("`", stringify!($name), "::", stringify!($method), "`.")]
                $(#[$method_attr])*
                pub $method: unsafe extern "system" fn(
                    this: *mut ::core::ffi::c_void
                    $(, $arg: $ty)*
                ) $(-> $ret)?,
            )*
        }

        impl $vtbl {
            /// The interface's own methods (not the inherited ones), in slot order.
            pub const METHODS: &'static [&'static str] = &[$(stringify!($method)),*];
            /// The interface's IID.
            pub const IID: $crate::clr::sys::guid::Guid = $iid_const;
        }

        // SAFETY: the struct is `#[repr(C)]`: the parent's vtable (itself a `ComVtable`,
        // down to `IUnknownVtbl`), then one `unsafe extern "system" fn` per method, in
        // the order and with the parameters the invocation lists, which are the header's
        // for interface `$iid` (the macro's contract, checked by tests/clr_bindings.rs).
        unsafe impl $crate::clr::sys::vtable::ComVtable for $vtbl {
            const NAME: &'static str = stringify!($name);
            const IID: $crate::clr::sys::guid::Guid = $iid_const;
            const PARENT: Option<&'static str> =
                Some(<$parent as $crate::clr::sys::vtable::ComVtable>::NAME);
            const METHODS: &'static [&'static str] = &[$(stringify!($method)),*];
            const PARAMS: &'static [&'static [&'static str]] = &[$(&[$(stringify!($arg)),*]),*];
            const SLOTS: usize = <$parent as $crate::clr::sys::vtable::ComVtable>::SLOTS
                + <Self as $crate::clr::sys::vtable::ComVtable>::METHODS.len();
        }

        // One pointer-sized slot per method, inherited ones included: the field list and
        // the name list cannot drift apart.
        const _: () = assert!(
            ::core::mem::size_of::<$vtbl>()
                == <$vtbl as $crate::clr::sys::vtable::ComVtable>::SLOTS
                    * ::core::mem::size_of::<usize>()
        );
    };
}
pub(crate) use com_interface;

/// What every bound vtable declares about its interface; implemented by the macro that
/// declares the vtable, from the same tokens as its fields.
///
/// Code that calls a runtime object through a vtable trusts this description:
/// [`ComPtr::query`](crate::clr::com::ComPtr::query) asks `QueryInterface` for `V::IID` and
/// reads the object's vtable as a `V`, and
/// [`ProfilerInfo::module_metadata`](crate::clr::ProfilerInfo::module_metadata) does the
/// same with `GetModuleMetaData`. A wrong IID or a wrong layout would make safe code call
/// a slot that is not there, or with the wrong arguments: hence `unsafe`.
///
/// # Safety
///
/// An implementation promises that `Self` is the vtable of the COM interface whose IID is
/// `Self::IID`, laid out as that interface's objects lay it out:
///
/// * `Self` is `#[repr(C)]`, its fields are pointer-sized function pointers (or, first, the
///   parent interface's vtable, itself a `ComVtable`, down to [`IUnknownVtbl`]), one per
///   slot, in the interface's slot order: the three `IUnknown` slots first, then each
///   ancestor's methods, then the interface's own;
/// * each field has the method's signature: an `unsafe extern "system" fn` taking the
///   interface pointer (`this`) and then the method's parameters, with the ABI types of
///   the header (`ULONG` is `u32`, `BOOL` is `i32`, pointers are pointers, ...), and its
///   return type;
/// * so that a pointer an object gives out as interface `Self::IID` (from
///   `QueryInterface`, `GetModuleMetaData`, ...) points to a pointer to a table that
///   starts with `Self`'s layout, and every slot of `Self` may be called through it.
///
/// `SLOTS` must be the number of slots of `Self` (`size_of::<Self>() /
/// size_of::<usize>()`). `NAME`, `PARENT`, `METHODS` and `PARAMS` describe the interface
/// for messages and for the binding tests; no `unsafe` code relies on them.
///
/// # Examples
///
/// A vtable the crate does not bind, declared by hand: the implementation says `unsafe`,
/// and its `SAFETY` comment says where its layout comes from.
///
/// ```
/// use core::ffi::c_void;
/// use ilrewrite::clr::sys::{ComVtable, Guid, HResult, IUnknownVtbl};
///
/// /// `interface IAnswer : IUnknown { HRESULT Get([out] ULONG *value); }`.
/// #[repr(C)]
/// #[allow(non_snake_case)]
/// struct IAnswerVtbl {
///     base: IUnknownVtbl,
///     Get: unsafe extern "system" fn(this: *mut c_void, value: *mut u32) -> HResult,
/// }
///
/// // SAFETY: `IAnswerVtbl` is `#[repr(C)]`: the IUnknown slots, then `Get` with the
/// // header's parameters, the layout of interface `IAnswer`, whose IID this is.
/// unsafe impl ComVtable for IAnswerVtbl {
///     const NAME: &'static str = "IAnswer";
///     const IID: Guid = Guid::parse_const("{8F4A3C52-0C1E-4E8B-9D2A-6B7E5F1A2C3D}");
///     const PARENT: Option<&'static str> = Some("IUnknown");
///     const METHODS: &'static [&'static str] = &["Get"];
///     const PARAMS: &'static [&'static [&'static str]] = &[&["value"]];
///     const SLOTS: usize = 4;
/// }
///
/// assert_eq!(size_of::<IAnswerVtbl>(), IAnswerVtbl::SLOTS * size_of::<usize>());
/// ```
///
/// Safe code cannot implement it: without `unsafe`, the same implementation is refused
/// (error E0200, the trait requires an `unsafe impl`).
///
/// ```compile_fail,E0200
/// use core::ffi::c_void;
/// use ilrewrite::clr::sys::{ComVtable, Guid, HResult, IUnknownVtbl};
///
/// #[repr(C)]
/// #[allow(non_snake_case)]
/// struct IAnswerVtbl {
///     base: IUnknownVtbl,
///     Get: unsafe extern "system" fn(this: *mut c_void, value: *mut u32) -> HResult,
/// }
///
/// impl ComVtable for IAnswerVtbl {
///     const NAME: &'static str = "IAnswer";
///     const IID: Guid = Guid::parse_const("{8F4A3C52-0C1E-4E8B-9D2A-6B7E5F1A2C3D}");
///     const PARENT: Option<&'static str> = Some("IUnknown");
///     const METHODS: &'static [&'static str] = &["Get"];
///     const PARAMS: &'static [&'static [&'static str]] = &[&["value"]];
///     const SLOTS: usize = 4;
/// }
/// ```
pub unsafe trait ComVtable {
    /// The interface's name (`"ICorProfilerInfo3"`).
    const NAME: &'static str;
    /// The interface's IID: `QueryInterface` with it gives an interface whose vtable is
    /// `Self`.
    const IID: Guid;
    /// The parent interface's name, `None` for `IUnknown`.
    const PARENT: Option<&'static str>;
    /// The interface's own methods, in slot order.
    const METHODS: &'static [&'static str];
    /// The parameter names of each own method (after `this`), parallel to `METHODS`.
    const PARAMS: &'static [&'static [&'static str]];
    /// Slots in the whole vtable, inherited ones included.
    const SLOTS: usize;
}

/// A COM interface whose objects may be called from any thread, from several at once,
/// and whose references may be added and released on any thread: what makes a
/// [`ComPtr`](crate::clr::com::ComPtr) to it `Send` and `Sync`.
///
/// Implemented for the interfaces the runtime documents or implements as free-threaded:
/// `ICorProfilerInfo` .. `ICorProfilerInfo15`, `ICorProfilerFunctionControl`, and the
/// metadata interfaces (`IMetaDataImport`/`2`, `IMetaDataEmit`/`2`,
/// `IMetaDataAssemblyImport`, `IMetaDataAssemblyEmit`); each implementation names its
/// source. Not for `IUnknown` (any object), `IClassFactory`, `IMethodMalloc` (nothing
/// documents its threading) or the callback interfaces (the crate's own objects, which
/// it hands out rather than holds).
///
/// # Safety
///
/// An implementation promises that every object that gives out interface `Self::IID`
/// accepts calls of every method of `Self`, and `AddRef`/`Release`, from any thread,
/// concurrently, without the caller's synchronisation (the COM "free-threaded" model; a
/// method's own preconditions, such as the profiling API's call-sequence rules, still
/// apply).
pub unsafe trait FreeThreaded: ComVtable {}

/// `{00000000-0000-0000-C000-000000000046}`.
pub const IID_IUNKNOWN: Guid = Guid::parse_const("00000000-0000-0000-C000-000000000046");

/// The `IUnknown` vtable, the root of every COM interface.
#[repr(C)]
#[allow(non_snake_case)]
#[derive(Debug)]
pub struct IUnknownVtbl {
    /// `IUnknown::QueryInterface(riid, ppvObject)`.
    pub QueryInterface: unsafe extern "system" fn(
        this: *mut c_void,
        riid: *const Guid,
        ppv_object: *mut *mut c_void,
    ) -> HResult,
    /// `IUnknown::AddRef()`: the new reference count.
    pub AddRef: unsafe extern "system" fn(this: *mut c_void) -> u32,
    /// `IUnknown::Release()`: the new reference count.
    pub Release: unsafe extern "system" fn(this: *mut c_void) -> u32,
}

// SAFETY: `#[repr(C)]`, the three IUnknown slots in their order with their signatures,
// and the IID of IUnknown (unknwn.idl).
unsafe impl ComVtable for IUnknownVtbl {
    const NAME: &'static str = "IUnknown";
    const IID: Guid = IID_IUNKNOWN;
    const PARENT: Option<&'static str> = None;
    const METHODS: &'static [&'static str] = &["QueryInterface", "AddRef", "Release"];
    const PARAMS: &'static [&'static [&'static str]] = &[&["riid", "ppv_object"], &[], &[]];
    const SLOTS: usize = 3;
}

const _: () = assert!(core::mem::size_of::<IUnknownVtbl>() == 3 * core::mem::size_of::<usize>());

com_interface! {
    /// The `IClassFactory` vtable: what `DllGetClassObject` hands to the runtime.
    pub struct IClassFactoryVtbl for IClassFactory: IUnknownVtbl;
    /// `{00000001-0000-0000-C000-000000000046}`.
    pub const IID_ICLASSFACTORY = "00000001-0000-0000-C000-000000000046";
    {
        fn CreateInstance(
            outer: *mut c_void,
            riid: *const Guid,
            ppv_object: *mut *mut c_void,
        ) -> HResult;
        fn LockServer(lock: i32) -> HResult;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::ptr;
    use core::sync::atomic::{AtomicU32, Ordering};

    /// A minimal COM object: a pointer to its vtable, then a reference count.
    #[repr(C)]
    struct Counter {
        vtbl: *const IClassFactoryVtbl,
        refs: AtomicU32,
    }

    unsafe extern "system" fn query_interface(
        this: *mut c_void,
        riid: *const Guid,
        ppv: *mut *mut c_void,
    ) -> HResult {
        // SAFETY: the runtime (here the test) passes a valid IID and out pointer.
        let iid = unsafe { *riid };
        if iid == IID_IUNKNOWN || iid == IID_ICLASSFACTORY {
            // SAFETY: `ppv` is a valid out pointer and `this` a live `Counter`.
            unsafe {
                *ppv = this;
                add_ref(this);
            }
            HResult::S_OK
        } else {
            // SAFETY: `ppv` is a valid out pointer.
            unsafe { *ppv = ptr::null_mut() };
            HResult::E_NOINTERFACE
        }
    }

    unsafe extern "system" fn add_ref(this: *mut c_void) -> u32 {
        // SAFETY: `this` points to a live `Counter`.
        let counter = unsafe { &*this.cast::<Counter>() };
        counter.refs.fetch_add(1, Ordering::Relaxed) + 1
    }

    unsafe extern "system" fn release(this: *mut c_void) -> u32 {
        // SAFETY: `this` points to a live `Counter` (the test owns it on its stack).
        let counter = unsafe { &*this.cast::<Counter>() };
        counter.refs.fetch_sub(1, Ordering::Relaxed) - 1
    }

    unsafe extern "system" fn create_instance(
        _this: *mut c_void,
        outer: *mut c_void,
        _riid: *const Guid,
        ppv: *mut *mut c_void,
    ) -> HResult {
        // SAFETY: `ppv` is a valid out pointer.
        unsafe { *ppv = ptr::null_mut() };
        if outer.is_null() {
            HResult::CLASS_E_CLASSNOTAVAILABLE
        } else {
            HResult::CLASS_E_NOAGGREGATION
        }
    }

    unsafe extern "system" fn lock_server(_this: *mut c_void, _lock: i32) -> HResult {
        HResult::S_OK
    }

    static COUNTER_VTBL: IClassFactoryVtbl = IClassFactoryVtbl {
        base: IUnknownVtbl {
            QueryInterface: query_interface,
            AddRef: add_ref,
            Release: release,
        },
        CreateInstance: create_instance,
        LockServer: lock_server,
    };

    #[test]
    fn calls_go_through_the_vtable_slots() {
        let mut object = Counter {
            vtbl: &COUNTER_VTBL,
            refs: AtomicU32::new(1),
        };
        let this = (&raw mut object).cast::<c_void>();
        // What a caller holding only the interface pointer does: read the vtable pointer
        // at offset 0, then call a slot.
        // SAFETY: `this` points to `object`, whose first field is the vtable pointer.
        let vtbl = unsafe { &**this.cast::<*const IClassFactoryVtbl>() };
        let mut out = ptr::null_mut();
        // SAFETY: `this` is a live object implementing these slots; the IID and out
        // pointers are valid for the calls.
        unsafe {
            assert_eq!(
                (vtbl.base.QueryInterface)(this, &IID_ICLASSFACTORY, &mut out),
                HResult::S_OK
            );
            assert_eq!(out, this);
            assert_eq!((vtbl.base.Release)(this), 1);
            assert_eq!(
                (vtbl.base.QueryInterface)(this, &IID_ICLASSFACTORY_WRONG, &mut out),
                HResult::E_NOINTERFACE
            );
            assert!(out.is_null());
            assert_eq!((vtbl.base.AddRef)(this), 2);
            assert_eq!((vtbl.base.Release)(this), 1);
            assert_eq!((vtbl.LockServer)(this, 1), HResult::S_OK);
            assert_eq!(
                (vtbl.CreateInstance)(this, ptr::null_mut(), &IID_IUNKNOWN, &mut out),
                HResult::CLASS_E_CLASSNOTAVAILABLE
            );
        }
        // The slots sit where COM puts them: QueryInterface, AddRef, Release, then the
        // interface's own methods.
        assert_eq!(
            core::mem::offset_of!(IClassFactoryVtbl, CreateInstance),
            3 * core::mem::size_of::<usize>()
        );
        assert_eq!(
            core::mem::offset_of!(IClassFactoryVtbl, LockServer),
            4 * core::mem::size_of::<usize>()
        );
        assert_eq!(<IClassFactoryVtbl as ComVtable>::PARENT, Some("IUnknown"));
        assert_eq!(IClassFactoryVtbl::METHODS, ["CreateInstance", "LockServer"]);
        assert_eq!(IClassFactoryVtbl::IID, IID_ICLASSFACTORY);
        assert_eq!(
            IID_IUNKNOWN.to_string(),
            "{00000000-0000-0000-C000-000000000046}"
        );
    }

    const IID_ICLASSFACTORY_WRONG: Guid =
        Guid::parse_const("{00000001-0000-0000-C000-000000000047}");
}

//! COM vtables: [`ComVtable`], what every bound vtable declares about its interface; the
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

        impl $crate::clr::sys::vtable::ComVtable for $vtbl {
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
pub trait ComVtable {
    /// The interface's name (`"ICorProfilerInfo3"`).
    const NAME: &'static str;
    /// The interface's IID.
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

impl ComVtable for IUnknownVtbl {
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

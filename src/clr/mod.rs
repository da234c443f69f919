//! Raw bindings to the CLR profiling API (feature `clr`).
//!
//! * [`com`]: the COM basics every interface needs: [`Guid`], [`HResult`], `IUnknown` and
//!   `IClassFactory`.
//! * [`ffi`]: the vtables of the profiling interfaces (`ICorProfilerCallback` ..
//!   `ICorProfilerCallback11`, `ICorProfilerInfo` .. `ICorProfilerInfo15`,
//!   `ICorProfilerFunctionControl`, `IMethodMalloc`) and of the metadata interfaces a
//!   rewriting profiler uses (`IMetaDataImport`/`2`, `IMetaDataEmit`/`2`,
//!   `IMetaDataAssemblyImport`), with the IDL's structures, flag sets and enumerations.
//!
//! On top of them, the safe profiler layer:
//!
//! * [`Profiler`]: the trait a profiler implements, one method per callback with a
//!   default (see there for a profiler in a dozen lines).
//! * [`CallbackObject`]: the COM object the runtime calls, whose thunks mark the thread
//!   as inside a callback ([`guard`]) and keep panics from unwinding into the runtime.
//! * [`ClassFactory`], [`get_class_object`] and [`export_profiler!`](crate::export_profiler):
//!   the entry points a profiler `cdylib` exports.
//! * [`ProfilerInfo`]: the runtime's `ICorProfilerInfo`, typed and guarded.
//! * [`log`]: where the layer reports what it cannot return (panics, failed starts).
//!
//! Every vtable is declared once, by a macro that also records its method names in slot
//! order ([`ComVtable::METHODS`]), the parameter count of each method and the interface's
//! IID; `tests/clr_bindings.rs` compares all of that with the method lists, IIDs and enum
//! values extracted from the runtime's `corprof.idl`, `cor.h` and `corerror.h`.
//!
//! The layouts are those of the C headers on every target (`extern "system"` is the COM
//! calling convention: `stdcall` on 32-bit Windows, the C convention elsewhere); they are
//! exercised against a real runtime on Linux x86_64 first.
//!
//! What a runtime really asks for: CoreCLR 3.1 creates the profiler through
//! `IClassFactory::CreateInstance(IID_ICorProfilerCallback2)`, then queries up to
//! `ICorProfilerCallback9` and calls through that vtable, so every slot up to
//! `ICorProfilerCallback9` must be right; `ICorProfilerInfo` queries succeed up to
//! `ICorProfilerInfo11` there. Later interfaces are bound for newer runtimes, checked the
//! same way.
#![allow(unsafe_code)]

/// Declares a COM vtable: a `#[repr(C)]` struct whose first field `base` is the parent
/// interface's vtable, followed by one function pointer per method in slot order; the
/// interface's IID constant; and a [`com::ComVtable`] implementation listing the method
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
        pub const $iid_const: $crate::clr::com::Guid = $crate::clr::com::Guid::parse_const($iid);

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
            pub const IID: $crate::clr::com::Guid = $iid_const;
        }

        impl $crate::clr::com::ComVtable for $vtbl {
            const NAME: &'static str = stringify!($name);
            const IID: $crate::clr::com::Guid = $iid_const;
            const PARENT: Option<&'static str> =
                Some(<$parent as $crate::clr::com::ComVtable>::NAME);
            const METHODS: &'static [&'static str] = &[$(stringify!($method)),*];
            const PARAMS: &'static [&'static [&'static str]] = &[$(&[$(stringify!($arg)),*]),*];
            const SLOTS: usize = <$parent as $crate::clr::com::ComVtable>::SLOTS
                + <Self as $crate::clr::com::ComVtable>::METHODS.len();
        }

        // One pointer-sized slot per method, inherited ones included: the field list and
        // the name list cannot drift apart.
        const _: () = assert!(
            ::core::mem::size_of::<$vtbl>()
                == <$vtbl as $crate::clr::com::ComVtable>::SLOTS
                    * ::core::mem::size_of::<usize>()
        );
    };
}

mod callback;
pub mod com;
pub mod ffi;
pub mod guard;
mod info;
mod jit;
pub mod log;
mod metadata;
mod object;
mod profiler;
mod ptr;
mod server;
#[cfg(test)]
mod testing;

pub use callback::CallbackObject;
pub use com::{ComVtable, Guid, HResult, IClassFactoryVtbl, IUnknownVtbl};
pub use ffi::{
    AppDomainID, AssemblyID, ClassID, CorPrfHighMonitor, CorPrfMonitor, FunctionID, ModuleID,
    ObjectID, ReJITID, ThreadID, mdMethodDef, mdToken,
};
pub use info::{ClrError, ClrResult, FunctionInfo, InfoVtbl, ModuleInfo, ProfilerInfo};
pub use jit::{JitRewriter, MethodRewrite, ModuleState, PHASES, RewriteOutcome};
pub use metadata::ModuleMetadata;
pub use profiler::Profiler;
pub use ptr::ComPtr;
pub use server::{ClassFactory, get_class_object};

//! Floor 1, the raw ABI: the COM basics ([`Guid`], [`HResult`], [`IUnknownVtbl`],
//! [`IClassFactoryVtbl`], the [`ComVtable`] description and the [`FreeThreaded`]
//! marker), and the vtables, structures and constants transcribed from the runtime's
//! `corprof.idl` (profiling) and `cor.h` (metadata). Declarations only: nothing here
//! calls the runtime.
//!
//! Each interface `IFoo` is a `#[repr(C)]` struct `IFooVtbl` whose first field `base` is
//! the parent's vtable (down to [`IUnknownVtbl`]), followed by one
//! `unsafe extern "system" fn(this, ...)` per method in the header's order, plus a
//! constant `IID_IFOO`. A COM object is a pointer to a pointer to such a vtable.
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

// The declarations' files: their items' one path is `sys` itself.

pub(crate) mod callback;
pub(crate) mod enums;
mod guid;
mod hresult;
pub(crate) mod info;
pub(crate) mod metadata;
pub(crate) mod types;
mod vtable;

pub use callback::*;
pub use enums::*;
pub use guid::{Guid, ParseGuidError};
pub use hresult::HResult;
pub use info::*;
pub use metadata::*;
pub use types::*;
pub use vtable::{
    ComVtable, FreeThreaded, IClassFactoryVtbl, IID_ICLASSFACTORY, IID_IUNKNOWN, IUnknownVtbl,
};

//! Raw vtables, structures and constants transcribed from the runtime's `corprof.idl`
//! (profiling) and `cor.h` (metadata).
//!
//! Each interface `IFoo` is a `#[repr(C)]` struct `IFooVtbl` whose first field `base` is
//! the parent's vtable (down to [`IUnknownVtbl`](super::com::IUnknownVtbl)), followed by
//! one `unsafe extern "system" fn(this, ...)` per method in the header's order, plus a
//! constant `IID_IFOO`. A COM object is a pointer to a pointer to such a vtable.

pub mod callback;
pub mod enums;
pub mod info;
pub mod metadata;
pub mod types;

pub use callback::*;
pub use enums::*;
pub use info::*;
pub use metadata::*;
pub use types::*;

//! Floor 2, COM references and objects: [`ComPtr`], a reference the crate holds to an
//! object the runtime implements, and `ComObject`, the `IUnknown` half of the objects
//! the crate implements and serves to the runtime.
//!
//! The COM basics of [`sys`](super::sys) are reachable under this path too
//! (`clr::com::Guid`, `clr::com::ComVtable`, ...).
#![allow(unsafe_code)]

#[cfg(test)]
pub(crate) mod fake;
pub(crate) mod object;
mod ptr;

pub use super::sys::{
    ComVtable, Guid, HResult, IClassFactoryVtbl, IID_ICLASSFACTORY, IID_IUNKNOWN, IUnknownVtbl,
    ParseGuidError,
};
pub use ptr::ComPtr;

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

/// The COM basics under their former paths (`clr::com::Guid`, ...): not part of the
/// documented face (their one path is [`sys`](super::sys)); kept until the next
/// breaking release.
#[doc(hidden)]
pub use super::sys::{
    ComVtable, Guid, HResult, IClassFactoryVtbl, IID_ICLASSFACTORY, IID_IUNKNOWN, IUnknownVtbl,
    ParseGuidError,
};
pub use ptr::ComPtr;

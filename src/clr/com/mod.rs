//! Floor 2, COM objects: for now the COM basics of [`super::sys`], under this path.

pub use super::sys::{
    ComVtable, Guid, HResult, IClassFactoryVtbl, IID_ICLASSFACTORY, IID_IUNKNOWN, IUnknownVtbl,
    ParseGuidError,
};

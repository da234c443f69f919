//! Floor 3, the runtime's interfaces: [`ProfilerInfo`] (the runtime's
//! `ICorProfilerInfo`, typed), [`ModuleMetadata`] (a module's metadata, a
//! `MetadataSource`), [`ClrError`], and [`guard`], the call-sequence guard every
//! `ProfilerInfo` call goes through.
#![allow(unsafe_code)]

mod error;
pub mod guard;
mod info;
mod metadata;

pub use error::{ClrError, ClrResult};
pub use info::{FunctionInfo, InfoVtbl, ModuleInfo, ProfilerInfo};
pub use metadata::{AssemblyName, MethodReference, ModuleMetadata};

//! Floor 3, the runtime's interfaces: [`ProfilerInfo`] (the runtime's
//! `ICorProfilerInfo`, typed), [`ModuleMetadata`] (a module's metadata, a
//! `MetadataSource`), [`ClrError`], and [`guard`], the call-sequence guard every
//! `ProfilerInfo` call goes through.
#![allow(unsafe_code)]

mod error;
mod facts;
mod function_control;
pub mod guard;
mod info;
mod metadata;
mod provider;

pub use error::{ClrError, ClrResult};
pub use facts::ModuleFacts;
pub use function_control::{CodegenFlags, CodegenFlagsError, FunctionControl};
pub use info::{
    AssemblyInfo, ClassInfo, FieldOffset, FunctionInfo, InfoVtbl, InlinerIl, ModuleInfo,
    ProfilerInfo, RuntimeKind, RuntimeVersion,
};
pub use metadata::{AssemblyName, MethodReference, ModuleMetadata};
pub use provider::AssemblyReferenceProvider;

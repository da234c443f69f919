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

mod callback;
pub mod com;
pub mod guard;
mod info;
mod jit;
pub mod log;
mod metadata;
mod object;
mod profiler;
mod ptr;
mod server;
pub mod sys;
#[cfg(test)]
mod testing;

pub use sys as ffi;

pub use callback::CallbackObject;
pub use info::{ClrError, ClrResult, FunctionInfo, InfoVtbl, ModuleInfo, ProfilerInfo};
pub use jit::{JitRewriter, MethodRewrite, ModuleState, PHASES, RewriteOutcome};
pub use metadata::ModuleMetadata;
pub use profiler::Profiler;
pub use ptr::ComPtr;
pub use server::{ClassFactory, get_class_object};
pub use sys::{
    AppDomainID, AssemblyID, ClassID, ComVtable, CorPrfHighMonitor, CorPrfMonitor, FunctionID,
    Guid, HResult, IClassFactoryVtbl, IUnknownVtbl, ModuleID, ObjectID, ReJITID, ThreadID,
    mdMethodDef, mdToken,
};

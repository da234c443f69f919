//! The CLR profiling API (feature `clr`): raw bindings, and a safe profiler layer on top.
//!
//! The layer is a house of floors, one folder each, from the runtime up; a floor imports
//! only from the floors below it:
//!
//! 1. `sys`: the raw ABI, declarations only. The COM basics ([`Guid`], [`HResult`],
//!    [`IUnknownVtbl`], [`IClassFactoryVtbl`], the [`ComVtable`] description every bound
//!    vtable implements, declared by one macro per interface), the vtables of the
//!    profiling interfaces (`ICorProfilerCallback` .. `ICorProfilerCallback11`,
//!    `ICorProfilerInfo` .. `ICorProfilerInfo15`, `ICorProfilerFunctionControl`,
//!    `IMethodMalloc`) and of the metadata interfaces a rewriting profiler uses
//!    (`IMetaDataImport`/`2`, `IMetaDataEmit`/`2`, `IMetaDataAssemblyImport`), with the
//!    IDL's structures, flag sets and enumerations. Also reachable as `clr::ffi`, its
//!    former name.
//! 2. `com`: [`ComPtr`], a reference to an object the runtime implements, and the
//!    `IUnknown` half of the objects the crate implements and serves to the runtime.
//! 3. `runtime`: [`ProfilerInfo`] (the runtime's `ICorProfilerInfo`, typed, every call
//!    checked by the call-sequence [`guard`]), [`ModuleMetadata`] (a module's metadata
//!    inside the runtime) and [`ClrError`].
//! 4. `profiler`: the [`Profiler`] trait a profiler implements, one method per callback
//!    with a default (see there for a profiler in a dozen lines); [`CallbackObject`], the
//!    COM object the runtime calls, whose thunks mark the thread as inside a callback and
//!    keep panics from unwinding into the runtime; [`ClassFactory`],
//!    [`get_class_object`] and [`export_profiler!`](crate::export_profiler), the entry
//!    points a profiler `cdylib` exports.
//! 4. `hooks` (beside `profiler`; x86_64 Linux for now): the enter/leave/tailcall hooks
//!    the runtime calls from JIT-compiled code (`FunctionEnter3` ..), assembler stubs
//!    that keep the registers the JIT keeps live and call one Rust handler with the
//!    saved argument or return registers; `unsafe` allowed there item by item.
//! 5. `rewrite`: the rewrite pipeline, separate from its [`Delivery`] (first JIT:
//!    [`FirstJit`]); [`JitRewriter`], which rewrites methods as the JIT compiles them;
//!    per-module state freed when its module unloads; typed outcomes; the live dial's
//!    control channel ([`dial`], Unix). No `unsafe` there
//!    (`#![forbid(unsafe_code)]`): it reaches the runtime only through the floors below.
//!
//! [`log`], where the layer reports what it cannot return (panics, failed starts), may be
//! used by every floor and uses none. `unsafe` is allowed floor by floor (in `sys`,
//! `com`, `runtime` and `profiler`), not for the whole of `clr`. This module only
//! declares the floors and re-exports what a profiler uses.
//!
//! `tests/clr_bindings.rs` compares every vtable's slots, IID and parameter count, and
//! every flag and enumeration value, with facts extracted from the runtime's
//! `corprof.idl`, `cor.h` and `corerror.h`.

pub mod com;
#[cfg(unix)]
pub mod dial;
pub mod hooks;
mod host;
pub mod log;
mod profiler;
mod rejit;
mod rewrite;
mod runtime;
pub mod sys;

/// The raw ABI under its former name: `clr::ffi::…` paths still resolve.
pub use sys as ffi;

pub use com::ComPtr;
pub use host::{
    Candidate, Change, ConfigError, Configuration, Events, EventsHandle, InliningCallers,
    InstrumentationMethod, Interest, Manager, ManagerCounts, MethodEdit, MethodEntry, ModuleLoad,
    OptionKind, OptionSpec, Options, Plan, Position, ReJitControl, ReJitCounts, Request, Start,
};
pub use profiler::{Callback, CallbackObject, Callbacks, ClassFactory, Profiler, get_class_object};
pub use rejit::{
    FailedAt, IlTarget, MethodKey, MethodRecord, ReJitBatch, ReJitCall, ReJitFailure, ReJitMachine,
    ReJitParameters, ReJitStage, ReloadPolicy,
};
pub use rewrite::{
    Failure, FailureCause, Filter, Inlining, Instrumentation, JitRewriter, MethodRewrite,
    ModuleState, NativeCall, NativeFunction, NativeReturn, NativeType, Phase, RewriteOutcome,
};
pub use runtime::guard;
pub use runtime::{
    AssemblyInfo, AssemblyName, AssemblyReferenceProvider, ClassInfo, ClrError, ClrResult,
    CodegenFlags, CodegenFlagsError, FieldOffset, FunctionControl, FunctionInfo, InfoVtbl,
    InlinerIl, MethodReference, ModuleFacts, ModuleInfo, ModuleMetadata, ProfilerInfo, RuntimeKind,
    RuntimeVersion,
};
pub use sys::{
    AppDomainID, AssemblyID, ClassID, ComVtable, CorPrfHighMonitor, CorPrfMonitor, FreeThreaded,
    FunctionID, Guid, HResult, IClassFactoryVtbl, IUnknownVtbl, ModuleID, ObjectID, ReJITID,
    ThreadID, mdMethodDef, mdToken,
};

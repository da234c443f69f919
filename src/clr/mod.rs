//! The CLR profiling API (feature `clr`): raw bindings, and a safe profiler layer on top.
//!
//! The layer is a house of floors, one folder each, from the runtime up; a floor imports
//! only from the floors below it:
//!
//! 1. [`sys`]: the raw ABI, declarations only: the COM basics ([`sys::Guid`],
//!    [`sys::HResult`], [`sys::IUnknownVtbl`], the [`sys::ComVtable`] description every
//!    bound vtable implements), the ids ([`sys::FunctionID`], [`sys::ModuleID`], ..),
//!    the vtables of the profiling interfaces (`ICorProfilerCallback` ..
//!    `ICorProfilerCallback11`, `ICorProfilerInfo` .. `ICorProfilerInfo15`,
//!    `ICorProfilerFunctionControl`, `IMethodMalloc`) and of the metadata interfaces a
//!    rewriting profiler uses, with the IDL's structures, flag sets
//!    ([`sys::CorPrfMonitor`], ..) and enumerations. Each of these names has this one
//!    path.
//! 2. [`com`]: [`com::ComPtr`], a reference to an object the runtime implements, and the
//!    `IUnknown` half of the objects the crate implements and serves to the runtime.
//!    Beside it, `rejit`: the ReJIT state machine, pure (what the profiler wants of each
//!    method, where the runtime stands); only [`MethodKey`] is public.
//! 3. `runtime`: [`ProfilerInfo`] (the runtime's `ICorProfilerInfo`, typed, every call
//!    checked by the call-sequence [`guard`]), [`ModuleMetadata`] (a module's metadata
//!    inside the runtime) and [`ClrError`].
//! 4. `profiler`: the [`Profiler`] trait a profiler implements, one method per callback
//!    with a default; [`CallbackObject`], the COM object the runtime calls, whose thunks
//!    mark the thread as inside a callback and keep panics from unwinding into the
//!    runtime; [`ClassFactory`], [`get_class_object`] and
//!    [`export_profiler!`](crate::export_profiler), the entry points a profiler `cdylib`
//!    exports. Beside it: [`hooks`], the enter/leave/tailcall hooks (assembler stubs per
//!    platform, one Rust handler); `rewrite`, the rewrite engine (one method at a time,
//!    from a target and a plan to an outcome; [`JitRewriter`], the single-method path
//!    for a profiler that rewrites methods itself); and [`dial`] (Unix), the live dial's
//!    socket transport and command grammar, which knows only its `Dial` trait.
//! 5. `host`: the application on the top floor, the [`Manager`] of instrumentation
//!    methods: callback routing, configuration, events, data items, hook registration,
//!    the ReJIT driver, [`ReJitControl`] and the dial adapter. It makes each method's
//!    plan and hands it to the engine; nothing crosses from it to the engine but that
//!    plan and the target.
//! 6. Above the host, instrumentation methods the crate ships: `calltarget`
//!    ([`CallTargetMethod`], managed begin/end hooks) and `component` ([`LibraryMethod`]:
//!    one in a shared library of its own, through the C ABI of
//!    `include/ilrewrite_method.h`).
//!
//! [`log`], where the layer reports what it cannot return (panics, failed starts), and
//! the one place panics are contained, may be used by every floor and uses none.
//! `unsafe` is allowed floor by floor (in `sys`, `com`, `runtime`, `profiler`,
//! `component` and item by item in `hooks`), not for the whole of `clr`; `rejit`,
//! `rewrite`, `dial`, `host` and `calltarget` forbid it. This module only declares the floors and re-exports what a profiler uses,
//! each name at one path.
//!
//! `tests/clr_bindings.rs` compares every vtable's slots, IID and parameter count, and
//! every flag and enumeration value, with facts extracted from the runtime's
//! `corprof.idl`, `cor.h` and `corerror.h`.

mod calltarget;
pub mod com;
mod component;
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

/// The raw ABI under its former name: `clr::ffi::…` paths (and `ffi::callback::…`,
/// `ffi::enums::…`) still resolve. Not part of the documented face, where each name has
/// one path ([`sys`]); kept until the next breaking release.
#[doc(hidden)]
pub mod ffi {
    pub use super::sys::*;
    /// The former path of the callback interfaces' declarations.
    pub mod callback {
        pub use crate::clr::sys::*;
    }
    /// The former path of the IDL's enumerations and flag sets.
    pub mod enums {
        pub use crate::clr::sys::*;
    }
}

pub use calltarget::{CallTargetMethod, HelperAssembly, Integration};
pub use component::{LibraryMethod, LoadError};
pub use host::{
    Arrival, Attachable, Candidate, Change, ChangeError, ClientData, ConfigError, Configuration,
    Events, EventsHandle, InliningCallers, InstrumentationMethod, Interest, LibraryLoader, Manager,
    ManagerCounts, MethodEdit, MethodEntry, MethodError, ModuleLoad, OptionKind, OptionSpec,
    Options, Position, ReJitControl, ReJitCounts, ReadyToRun, Start,
};
pub use profiler::{
    Callback, CallbackEvents, CallbackObject, Callbacks, ClassFactory, Profiler, get_class_object,
};
pub use rejit::MethodKey;
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

//! The flag sets and enumerations of `corprof.idl`, with the IDL's values.
//!
//! The three flag sets a profiler combines are `bitflags` types whose flags are the IDL
//! names without their common prefix ([`CorPrfMonitor::ENABLE_REJIT`] is
//! `COR_PRF_ENABLE_REJIT`). The other enumerations are `u32` aliases with one constant per
//! IDL value, under the IDL's name, plus a table of all of them in IDL order (for
//! example [`COR_PRF_SUSPEND_REASON`]).

use bitflags::bitflags;

bitflags! {
    /// `COR_PRF_MONITOR`: the event mask of `SetEventMask` / the low half of
    /// `SetEventMask2`. Names drop the `COR_PRF_` prefix.
    #[repr(transparent)]
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
    pub struct CorPrfMonitor: u32 {
        /// `COR_PRF_MONITOR_NONE`.
        const MONITOR_NONE = 0x0000_0000;
        /// `COR_PRF_MONITOR_FUNCTION_UNLOADS`: `FunctionUnloadStarted`.
        const MONITOR_FUNCTION_UNLOADS = 0x0000_0001;
        /// `COR_PRF_MONITOR_CLASS_LOADS`: `ClassLoad*`, `ClassUnload*`.
        const MONITOR_CLASS_LOADS = 0x0000_0002;
        /// `COR_PRF_MONITOR_MODULE_LOADS`: `ModuleLoad*`, `ModuleUnload*`,
        /// `ModuleAttachedToAssembly`.
        const MONITOR_MODULE_LOADS = 0x0000_0004;
        /// `COR_PRF_MONITOR_ASSEMBLY_LOADS`: `AssemblyLoad*`, `AssemblyUnload*`.
        const MONITOR_ASSEMBLY_LOADS = 0x0000_0008;
        /// `COR_PRF_MONITOR_APPDOMAIN_LOADS`: `AppDomainCreation*`, `AppDomainShutdown*`.
        const MONITOR_APPDOMAIN_LOADS = 0x0000_0010;
        /// `COR_PRF_MONITOR_JIT_COMPILATION`: `JITCompilation*`, `JITFunctionPitched`,
        /// `JITInlining`.
        const MONITOR_JIT_COMPILATION = 0x0000_0020;
        /// `COR_PRF_MONITOR_EXCEPTIONS`: the `Exception*` callbacks except the CLR ones.
        const MONITOR_EXCEPTIONS = 0x0000_0040;
        /// `COR_PRF_MONITOR_GC`: GC callbacks.
        const MONITOR_GC = 0x0000_0080;
        /// `COR_PRF_MONITOR_OBJECT_ALLOCATED`: `ObjectAllocated`.
        const MONITOR_OBJECT_ALLOCATED = 0x0000_0100;
        /// `COR_PRF_MONITOR_THREADS`: thread callbacks.
        const MONITOR_THREADS = 0x0000_0200;
        /// `COR_PRF_MONITOR_REMOTING` (no remoting in CoreCLR).
        const MONITOR_REMOTING = 0x0000_0400;
        /// `COR_PRF_MONITOR_CODE_TRANSITIONS`: managed/unmanaged transitions.
        const MONITOR_CODE_TRANSITIONS = 0x0000_0800;
        /// `COR_PRF_MONITOR_ENTERLEAVE`: the enter/leave/tailcall hooks.
        const MONITOR_ENTERLEAVE = 0x0000_1000;
        /// `COR_PRF_MONITOR_CCW`: `COMClassicVTable*`.
        const MONITOR_CCW = 0x0000_2000;
        /// `COR_PRF_MONITOR_REMOTING_COOKIE` (includes `MONITOR_REMOTING`).
        const MONITOR_REMOTING_COOKIE = 0x0000_4000 | Self::MONITOR_REMOTING.bits();
        /// `COR_PRF_MONITOR_REMOTING_ASYNC` (includes `MONITOR_REMOTING`).
        const MONITOR_REMOTING_ASYNC = 0x0000_8000 | Self::MONITOR_REMOTING.bits();
        /// `COR_PRF_MONITOR_SUSPENDS`: runtime suspension callbacks.
        const MONITOR_SUSPENDS = 0x0001_0000;
        /// `COR_PRF_MONITOR_CACHE_SEARCHES`: `JITCachedFunctionSearch*`.
        const MONITOR_CACHE_SEARCHES = 0x0002_0000;
        /// `COR_PRF_ENABLE_REJIT`: allows `RequestReJIT` / `RequestRevert`.
        const ENABLE_REJIT = 0x0004_0000;
        /// `COR_PRF_ENABLE_INPROC_DEBUGGING` (no effect since V2).
        const ENABLE_INPROC_DEBUGGING = 0x0008_0000;
        /// `COR_PRF_ENABLE_JIT_MAPS` (always on since V2).
        const ENABLE_JIT_MAPS = 0x0010_0000;
        /// `COR_PRF_DISABLE_INLINING`: no inlining anywhere.
        const DISABLE_INLINING = 0x0020_0000;
        /// `COR_PRF_DISABLE_OPTIMIZATIONS`: no code optimizations anywhere.
        const DISABLE_OPTIMIZATIONS = 0x0040_0000;
        /// `COR_PRF_ENABLE_OBJECT_ALLOCATED`: required at startup for
        /// `MONITOR_OBJECT_ALLOCATED`.
        const ENABLE_OBJECT_ALLOCATED = 0x0080_0000;
        /// `COR_PRF_MONITOR_CLR_EXCEPTIONS`: `ExceptionCLRCatcher*`.
        const MONITOR_CLR_EXCEPTIONS = 0x0100_0000;
        /// `COR_PRF_MONITOR_ALL`: every callback event.
        const MONITOR_ALL = 0x0107_FFFF;
        /// `COR_PRF_ENABLE_FUNCTION_ARGS`: argument info for the enter hooks.
        const ENABLE_FUNCTION_ARGS = 0x0200_0000;
        /// `COR_PRF_ENABLE_FUNCTION_RETVAL`: return-value info for the leave hooks.
        const ENABLE_FUNCTION_RETVAL = 0x0400_0000;
        /// `COR_PRF_ENABLE_FRAME_INFO`: exact generic frame info for the hooks.
        const ENABLE_FRAME_INFO = 0x0800_0000;
        /// `COR_PRF_ENABLE_STACK_SNAPSHOT`: allows `DoStackSnapshot`.
        const ENABLE_STACK_SNAPSHOT = 0x1000_0000;
        /// `COR_PRF_USE_PROFILE_IMAGES`: prefer profiler-enhanced native images.
        const USE_PROFILE_IMAGES = 0x2000_0000;
        /// `COR_PRF_DISABLE_TRANSPARENCY_CHECKS_UNDER_FULL_TRUST`.
        const DISABLE_TRANSPARENCY_CHECKS_UNDER_FULL_TRUST = 0x4000_0000;
        /// `COR_PRF_DISABLE_ALL_NGEN_IMAGES`: load no native (NGEN/ReadyToRun) code.
        const DISABLE_ALL_NGEN_IMAGES = 0x8000_0000;
        /// `COR_PRF_ALL`: every valid bit.
        const ALL = 0x8FFF_FFFF;
        /// `COR_PRF_REQUIRE_PROFILE_IMAGE`: the flags that need profiler-enhanced images.
        const REQUIRE_PROFILE_IMAGE = Self::USE_PROFILE_IMAGES.bits()
            | Self::MONITOR_CODE_TRANSITIONS.bits()
            | Self::MONITOR_ENTERLEAVE.bits();
        /// `COR_PRF_ALLOWABLE_AFTER_ATTACH`: the flags an attaching profiler may set.
        const ALLOWABLE_AFTER_ATTACH = Self::MONITOR_THREADS.bits()
            | Self::MONITOR_MODULE_LOADS.bits()
            | Self::MONITOR_ASSEMBLY_LOADS.bits()
            | Self::MONITOR_APPDOMAIN_LOADS.bits()
            | Self::ENABLE_STACK_SNAPSHOT.bits()
            | Self::MONITOR_GC.bits()
            | Self::MONITOR_SUSPENDS.bits()
            | Self::MONITOR_CLASS_LOADS.bits()
            | Self::MONITOR_EXCEPTIONS.bits()
            | Self::MONITOR_JIT_COMPILATION.bits()
            | Self::DISABLE_INLINING.bits()
            | Self::DISABLE_OPTIMIZATIONS.bits()
            | Self::ENABLE_REJIT.bits();
        /// `COR_PRF_ALLOWABLE_NOTIFICATION_PROFILER`: the flags a notification-only
        /// profiler may set.
        const ALLOWABLE_NOTIFICATION_PROFILER = Self::MONITOR_FUNCTION_UNLOADS.bits()
            | Self::MONITOR_CLASS_LOADS.bits()
            | Self::MONITOR_MODULE_LOADS.bits()
            | Self::MONITOR_ASSEMBLY_LOADS.bits()
            | Self::MONITOR_APPDOMAIN_LOADS.bits()
            | Self::MONITOR_JIT_COMPILATION.bits()
            | Self::MONITOR_EXCEPTIONS.bits()
            | Self::MONITOR_OBJECT_ALLOCATED.bits()
            | Self::MONITOR_THREADS.bits()
            | Self::MONITOR_CODE_TRANSITIONS.bits()
            | Self::MONITOR_CCW.bits()
            | Self::MONITOR_SUSPENDS.bits()
            | Self::MONITOR_CACHE_SEARCHES.bits()
            | Self::DISABLE_INLINING.bits()
            | Self::DISABLE_OPTIMIZATIONS.bits()
            | Self::ENABLE_OBJECT_ALLOCATED.bits()
            | Self::MONITOR_CLR_EXCEPTIONS.bits()
            | Self::ENABLE_STACK_SNAPSHOT.bits()
            | Self::USE_PROFILE_IMAGES.bits()
            | Self::DISABLE_ALL_NGEN_IMAGES.bits();
        /// `COR_PRF_MONITOR_IMMUTABLE`: the flags that may only be set in `Initialize`.
        const MONITOR_IMMUTABLE = Self::MONITOR_CODE_TRANSITIONS.bits()
            | Self::MONITOR_REMOTING.bits()
            | Self::MONITOR_REMOTING_COOKIE.bits()
            | Self::MONITOR_REMOTING_ASYNC.bits()
            | Self::ENABLE_INPROC_DEBUGGING.bits()
            | Self::ENABLE_JIT_MAPS.bits()
            | Self::ENABLE_OBJECT_ALLOCATED.bits()
            | Self::ENABLE_FUNCTION_ARGS.bits()
            | Self::ENABLE_FUNCTION_RETVAL.bits()
            | Self::ENABLE_FRAME_INFO.bits()
            | Self::USE_PROFILE_IMAGES.bits()
            | Self::DISABLE_TRANSPARENCY_CHECKS_UNDER_FULL_TRUST.bits()
            | Self::DISABLE_ALL_NGEN_IMAGES.bits();
    }
}

bitflags! {
    /// `COR_PRF_HIGH_MONITOR`: the high half of `SetEventMask2`. Names drop the
    /// `COR_PRF_HIGH_` prefix.
    #[repr(transparent)]
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
    pub struct CorPrfHighMonitor: u32 {
        /// `COR_PRF_HIGH_MONITOR_NONE`.
        const MONITOR_NONE = 0x0000_0000;
        /// `COR_PRF_HIGH_ADD_ASSEMBLY_REFERENCES` (not checked by CoreCLR).
        const ADD_ASSEMBLY_REFERENCES = 0x0000_0001;
        /// `COR_PRF_HIGH_IN_MEMORY_SYMBOLS_UPDATED`: `ModuleInMemorySymbolsUpdated`.
        const IN_MEMORY_SYMBOLS_UPDATED = 0x0000_0002;
        /// `COR_PRF_HIGH_MONITOR_DYNAMIC_FUNCTION_UNLOADS`: `DynamicMethodUnloaded`.
        const MONITOR_DYNAMIC_FUNCTION_UNLOADS = 0x0000_0004;
        /// `COR_PRF_HIGH_DISABLE_TIERED_COMPILATION`.
        const DISABLE_TIERED_COMPILATION = 0x0000_0008;
        /// `COR_PRF_HIGH_BASIC_GC`: GC start/finish only.
        const BASIC_GC = 0x0000_0010;
        /// `COR_PRF_HIGH_MONITOR_GC_MOVED_OBJECTS`: `MovedReferences*` for compacting GCs.
        const MONITOR_GC_MOVED_OBJECTS = 0x0000_0020;
        /// `COR_PRF_HIGH_REQUIRE_PROFILE_IMAGE` (no flags).
        const REQUIRE_PROFILE_IMAGE = 0;
        /// `COR_PRF_HIGH_MONITOR_LARGEOBJECT_ALLOCATED`: allocations above the LOH threshold.
        const MONITOR_LARGEOBJECT_ALLOCATED = 0x0000_0040;
        /// `COR_PRF_HIGH_MONITOR_EVENT_PIPE`: `EventPipeEventDelivered`.
        const MONITOR_EVENT_PIPE = 0x0000_0080;
        /// `COR_PRF_HIGH_MONITOR_PINNEDOBJECT_ALLOCATED`: pinned-heap allocations.
        const MONITOR_PINNEDOBJECT_ALLOCATED = 0x0000_0100;
        /// `COR_PRF_HIGH_ALLOWABLE_AFTER_ATTACH`.
        const ALLOWABLE_AFTER_ATTACH = Self::IN_MEMORY_SYMBOLS_UPDATED.bits()
            | Self::MONITOR_DYNAMIC_FUNCTION_UNLOADS.bits()
            | Self::BASIC_GC.bits()
            | Self::MONITOR_GC_MOVED_OBJECTS.bits()
            | Self::MONITOR_LARGEOBJECT_ALLOCATED.bits()
            | Self::MONITOR_EVENT_PIPE.bits();
        /// `COR_PRF_HIGH_ALLOWABLE_NOTIFICATION_PROFILER`.
        const ALLOWABLE_NOTIFICATION_PROFILER = Self::IN_MEMORY_SYMBOLS_UPDATED.bits()
            | Self::MONITOR_DYNAMIC_FUNCTION_UNLOADS.bits()
            | Self::DISABLE_TIERED_COMPILATION.bits()
            | Self::BASIC_GC.bits()
            | Self::MONITOR_GC_MOVED_OBJECTS.bits()
            | Self::MONITOR_LARGEOBJECT_ALLOCATED.bits()
            | Self::MONITOR_EVENT_PIPE.bits();
        /// `COR_PRF_HIGH_MONITOR_IMMUTABLE`: the high flags that may only be set in
        /// `Initialize`.
        const MONITOR_IMMUTABLE = Self::DISABLE_TIERED_COMPILATION.bits();
    }
}

bitflags! {
    /// `COR_PRF_CODEGEN_FLAGS`: `ICorProfilerFunctionControl::SetCodegenFlags` for one
    /// re-JITed method. Names drop the `COR_PRF_CODEGEN_` prefix.
    #[repr(transparent)]
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
    pub struct CorPrfCodegenFlags: u32 {
        /// `COR_PRF_CODEGEN_DISABLE_INLINING`.
        const DISABLE_INLINING = 0x0001;
        /// `COR_PRF_CODEGEN_DISABLE_ALL_OPTIMIZATIONS`.
        const DISABLE_ALL_OPTIMIZATIONS = 0x0002;
        /// `COR_PRF_CODEGEN_DEBUG_INFO`: the IDL gives it 0x0003, the two flags above
        /// together.
        const DEBUG_INFO = 0x0003;
    }
}

/// Declares a `u32` enumeration of the IDL: the alias, one constant per value and the
/// table of all of them in IDL order.
macro_rules! prf_enum {
    (
        $(#[$attr:meta])*
        pub type $alias:ident; table $table:ident;
        { $($(#[$value_attr:meta])* $name:ident = $value:expr,)* }
    ) => {
        $(#[$attr])*
        pub type $alias = u32;
        $(
            #[doc = concat!("`", stringify!($name), "`: a [`", stringify!($alias), "`].")]
            $(#[$value_attr])*
            pub const $name: $alias = $value;
        )*
        #[doc = concat!("Every named [`", stringify!($alias), "`], in IDL order.")]
        pub const $table: &[(&str, $alias)] = &[$((stringify!($name), $name)),*];
    };
}

prf_enum! {
    /// `COR_PRF_SNAPSHOT_INFO`: what `DoStackSnapshot` reports per frame.
    pub type CorPrfSnapshotInfo; table COR_PRF_SNAPSHOT_INFO;
    {
        COR_PRF_SNAPSHOT_DEFAULT = 0x0,
        COR_PRF_SNAPSHOT_REGISTER_CONTEXT = 0x1,
        COR_PRF_SNAPSHOT_X86_OPTIMIZED = 0x2,
    }
}

prf_enum! {
    /// `COR_PRF_STATIC_TYPE`: the kinds of static a field is (bits, may combine).
    pub type CorPrfStaticType; table COR_PRF_STATIC_TYPE;
    {
        COR_PRF_FIELD_NOT_A_STATIC = 0x0,
        COR_PRF_FIELD_APP_DOMAIN_STATIC = 0x1,
        COR_PRF_FIELD_THREAD_STATIC = 0x2,
        COR_PRF_FIELD_CONTEXT_STATIC = 0x4,
        COR_PRF_FIELD_RVA_STATIC = 0x8,
    }
}

prf_enum! {
    /// `COR_PRF_MISC`: special id values.
    pub type CorPrfMisc; table COR_PRF_MISC;
    {
        PROFILER_PARENT_UNKNOWN = 0xFFFF_FFFD,
        PROFILER_GLOBAL_CLASS = 0xFFFF_FFFE,
        PROFILER_GLOBAL_MODULE = 0xFFFF_FFFF,
    }
}

prf_enum! {
    /// `COR_PRF_JIT_CACHE`: the result of a cached-function search (FOUND is 0).
    pub type CorPrfJitCache; table COR_PRF_JIT_CACHE;
    {
        COR_PRF_CACHED_FUNCTION_FOUND = 0,
        COR_PRF_CACHED_FUNCTION_NOT_FOUND = 1,
    }
}

prf_enum! {
    /// `COR_PRF_TRANSITION_REASON`: why a managed/unmanaged transition happened.
    pub type CorPrfTransitionReason; table COR_PRF_TRANSITION_REASON;
    {
        COR_PRF_TRANSITION_CALL = 0,
        COR_PRF_TRANSITION_RETURN = 1,
    }
}

prf_enum! {
    /// `COR_PRF_SUSPEND_REASON`: why the runtime suspends.
    pub type CorPrfSuspendReason; table COR_PRF_SUSPEND_REASON;
    {
        COR_PRF_SUSPEND_OTHER = 0,
        COR_PRF_SUSPEND_FOR_GC = 1,
        COR_PRF_SUSPEND_FOR_APPDOMAIN_SHUTDOWN = 2,
        COR_PRF_SUSPEND_FOR_CODE_PITCHING = 3,
        COR_PRF_SUSPEND_FOR_SHUTDOWN = 4,
        COR_PRF_SUSPEND_FOR_INPROC_DEBUGGER = 6,
        COR_PRF_SUSPEND_FOR_GC_PREP = 7,
        COR_PRF_SUSPEND_FOR_REJIT = 8,
        COR_PRF_SUSPEND_FOR_PROFILER = 9,
    }
}

prf_enum! {
    /// `COR_PRF_RUNTIME_TYPE`: from `GetRuntimeInformation`.
    pub type CorPrfRuntimeType; table COR_PRF_RUNTIME_TYPE;
    {
        COR_PRF_DESKTOP_CLR = 0x1,
        COR_PRF_CORE_CLR = 0x2,
    }
}

prf_enum! {
    /// `COR_PRF_REJIT_FLAGS`: for `RequestReJITWithInliners` (bits).
    pub type CorPrfRejitFlags; table COR_PRF_REJIT_FLAGS;
    {
        COR_PRF_REJIT_BLOCK_INLINING = 0x1,
        COR_PRF_REJIT_INLINING_CALLBACKS = 0x2,
    }
}

prf_enum! {
    /// `COR_PRF_EVENTPIPE_PARAM_TYPE`: the type of an EventPipe event parameter.
    pub type CorPrfEventPipeParamType; table COR_PRF_EVENTPIPE_PARAM_TYPE;
    {
        COR_PRF_EVENTPIPE_OBJECT = 1,
        COR_PRF_EVENTPIPE_BOOLEAN = 3,
        COR_PRF_EVENTPIPE_CHAR = 4,
        COR_PRF_EVENTPIPE_SBYTE = 5,
        COR_PRF_EVENTPIPE_BYTE = 6,
        COR_PRF_EVENTPIPE_INT16 = 7,
        COR_PRF_EVENTPIPE_UINT16 = 8,
        COR_PRF_EVENTPIPE_INT32 = 9,
        COR_PRF_EVENTPIPE_UINT32 = 10,
        COR_PRF_EVENTPIPE_INT64 = 11,
        COR_PRF_EVENTPIPE_UINT64 = 12,
        COR_PRF_EVENTPIPE_SINGLE = 13,
        COR_PRF_EVENTPIPE_DOUBLE = 14,
        COR_PRF_EVENTPIPE_DECIMAL = 15,
        COR_PRF_EVENTPIPE_DATETIME = 16,
        COR_PRF_EVENTPIPE_GUID = 17,
        COR_PRF_EVENTPIPE_STRING = 18,
        COR_PRF_EVENTPIPE_ARRAY = 19,
    }
}

prf_enum! {
    /// `COR_PRF_EVENTPIPE_LEVEL`.
    pub type CorPrfEventPipeLevel; table COR_PRF_EVENTPIPE_LEVEL;
    {
        COR_PRF_EVENTPIPE_LOGALWAYS = 0,
        COR_PRF_EVENTPIPE_CRITICAL = 1,
        COR_PRF_EVENTPIPE_ERROR = 2,
        COR_PRF_EVENTPIPE_WARNING = 3,
        COR_PRF_EVENTPIPE_INFORMATIONAL = 4,
        COR_PRF_EVENTPIPE_VERBOSE = 5,
    }
}

prf_enum! {
    /// `COR_PRF_HANDLE_TYPE`: for `ICorProfilerInfo13::CreateHandle`.
    pub type CorPrfHandleType; table COR_PRF_HANDLE_TYPE;
    {
        COR_PRF_HANDLE_TYPE_WEAK = 0x1,
        COR_PRF_HANDLE_TYPE_STRONG = 0x2,
        COR_PRF_HANDLE_TYPE_PINNED = 0x3,
    }
}

prf_enum! {
    /// `COR_PRF_GC_ROOT_KIND`: from `RootReferences2`.
    pub type CorPrfGcRootKind; table COR_PRF_GC_ROOT_KIND;
    {
        COR_PRF_GC_ROOT_STACK = 1,
        COR_PRF_GC_ROOT_FINALIZER = 2,
        COR_PRF_GC_ROOT_HANDLE = 3,
        COR_PRF_GC_ROOT_OTHER = 0,
    }
}

prf_enum! {
    /// `COR_PRF_GC_ROOT_FLAGS`: from `RootReferences2` (bits).
    pub type CorPrfGcRootFlags; table COR_PRF_GC_ROOT_FLAGS;
    {
        COR_PRF_GC_ROOT_PINNING = 0x1,
        COR_PRF_GC_ROOT_WEAKREF = 0x2,
        COR_PRF_GC_ROOT_INTERIOR = 0x4,
        COR_PRF_GC_ROOT_REFCOUNTED = 0x8,
    }
}

prf_enum! {
    /// `COR_PRF_FINALIZER_FLAGS`: from `FinalizeableObjectQueued`.
    pub type CorPrfFinalizerFlags; table COR_PRF_FINALIZER_FLAGS;
    {
        COR_PRF_FINALIZER_CRITICAL = 0x1,
    }
}

prf_enum! {
    /// `COR_PRF_GC_GENERATION`.
    pub type CorPrfGcGeneration; table COR_PRF_GC_GENERATION;
    {
        COR_PRF_GC_GEN_0 = 0,
        COR_PRF_GC_GEN_1 = 1,
        COR_PRF_GC_GEN_2 = 2,
        COR_PRF_GC_LARGE_OBJECT_HEAP = 3,
        COR_PRF_GC_PINNED_OBJECT_HEAP = 4,
    }
}

prf_enum! {
    /// `COR_PRF_CLAUSE_TYPE`: the kind of exception clause in [`CorPrfExClauseInfo`](super::types::CorPrfExClauseInfo).
    pub type CorPrfClauseType; table COR_PRF_CLAUSE_TYPE;
    {
        COR_PRF_CLAUSE_NONE = 0,
        COR_PRF_CLAUSE_FILTER = 1,
        COR_PRF_CLAUSE_CATCH = 2,
        COR_PRF_CLAUSE_FINALLY = 3,
    }
}

prf_enum! {
    /// `COR_PRF_GC_REASON`: why a GC happened.
    pub type CorPrfGcReason; table COR_PRF_GC_REASON;
    {
        COR_PRF_GC_INDUCED = 1,
        COR_PRF_GC_OTHER = 0,
    }
}

prf_enum! {
    /// `COR_PRF_MODULE_FLAGS`: from `GetModuleInfo2` (bits).
    pub type CorPrfModuleFlags; table COR_PRF_MODULE_FLAGS;
    {
        COR_PRF_MODULE_DISK = 0x0000_0001,
        COR_PRF_MODULE_NGEN = 0x0000_0002,
        COR_PRF_MODULE_DYNAMIC = 0x0000_0004,
        COR_PRF_MODULE_COLLECTIBLE = 0x0000_0008,
        COR_PRF_MODULE_RESOURCE = 0x0000_0010,
        COR_PRF_MODULE_FLAT_LAYOUT = 0x0000_0020,
        COR_PRF_MODULE_WINDOWS_RUNTIME = 0x0000_0040,
    }
}

prf_enum! {
    /// `CorDebugIlToNativeMappingTypes`: special `il_offset` values of
    /// [`CorDebugIlToNativeMap`](super::types::CorDebugIlToNativeMap) (negative in the IDL, here as their 32-bit
    /// patterns).
    pub type CorDebugIlToNativeMappingTypes; table COR_DEBUG_IL_TO_NATIVE_MAPPING_TYPES;
    {
        /// (-1)
        NO_MAPPING = 0xFFFF_FFFF,
        /// (-2)
        PROLOG = 0xFFFF_FFFE,
        /// (-3)
        EPILOG = 0xFFFF_FFFD,
    }
}

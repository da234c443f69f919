//! The [`Profiler`] trait: what a profiler written with this crate implements.
//!
//! One method per callback of `ICorProfilerCallback` .. `ICorProfilerCallback11` (95 in
//! all), each with a default, so that a profiler implements only the events it asks for.
//! The callback list below is the single source of the trait, of the FFI thunks and of
//! the vtable the runtime calls through (`thunks.rs`).

use core::ffi::c_void;

use crate::clr::runtime::{AssemblyReferenceProvider, FunctionControl, ProfilerInfo};
use crate::clr::sys::enums::{
    CorPrfGcReason, CorPrfGcRootFlags, CorPrfGcRootKind, CorPrfJitCache, CorPrfSuspendReason,
    CorPrfTransitionReason,
};
use crate::clr::sys::types::{
    AppDomainID, AssemblyID, ClassID, EventPipeProvider, FunctionID, GCHandleID, ModuleID,
    ObjectID, ReJITID, ThreadID, mdMethodDef,
};
use crate::clr::sys::{Guid, HResult};

/// The callback list: every callback of `ICorProfilerCallback` .. `ICorProfilerCallback11`,
/// grouped by interface in vtable order (`ICorProfilerCallback` first), read by its one
/// matcher (the `@match` rule) and handed to a macro in the shape it asks for.
///
/// # The list
///
/// A group: `VtblType as CONST [: PARENT_CONST] = "InterfaceName" { entries }`.
/// An entry, in slot order:
///
/// ```text
/// /// docs
/// SlotName [events] => trait_method(arg: Type, ...) [-> Return = default_value] [, custom thunk];
/// ```
///
/// `[events]` is the event mask the runtime checks before making the call: `[]` for
/// none, `[low FLAG | FLAG]` for `COR_PRF_MONITOR` flags (all needed), `[high FLAG]` for
/// `COR_PRF_HIGH_MONITOR` ones, both in that order, and after `, or` the flags any one of
/// which delivers it instead (some of its calls only: the small collections of
/// `BASIC_GC`, the large objects of `MONITOR_LARGEOBJECT_ALLOCATED`). The one table the
/// docs of each [`Profiler`] method, [`Callback::events`](super::Callback::events) and the
/// manager's derived events are made of; its sources, group by group, are in
/// `docs/design.md` ("Which events each callback needs").
///
/// Without `-> Return = default`, the method returns `Result<(), HResult>`, defaults to
/// `Ok(())` and its docs end with the common `# Errors` section. Without `custom`, the
/// thunk is generated: each argument is converted from its raw vtable type (a `bool` from
/// a `BOOL`, everything else as is) and the result turned into the `HRESULT`; `custom
/// thunk` names a hand-written one (for the callbacks with out-parameters or a
/// `ProfilerInfo`).
///
/// # The shapes
///
/// `for_each_callback!(m)` invokes `m!` once per callback, in slot order, in item
/// position (a trait's or an impl's body included), with the entry completed: the custom
/// thunk in brackets (`[]` for a generated one), the method's whole docs, its return type
/// and default written out:
///
/// ```text
/// SlotName [custom_thunk]
/// #[doc = "`InterfaceName::SlotName`."] #[doc = ""] /// docs
/// #[doc = "Needs `COR_PRF_..` in the event mask."] [# Errors section]
/// fn trait_method(arg: Type, ...) -> Return { default_value }
/// ```
///
/// `for_each_callback!(interfaces m)` invokes `m!` once with every interface, for what
/// needs all the slots at once (an enum's variants, a vtable's initializer):
///
/// ```text
/// "InterfaceName" (VtblType as CONST [: PARENT_CONST]) {
///     SlotName => trait_method [custom_thunk] [events], ...
/// } ...
/// ```
///
/// The names in the list are resolved where `m` expands: the modules that use it import
/// the same types.
macro_rules! for_each_callback {
    // `for_each_callback!(m)` or `for_each_callback!(interfaces m)`: the list, to its
    // matcher.
    ($($how:ident)+) => {
        $crate::clr::profiler::for_each_callback! { @match [$($how)+]
            ICorProfilerCallbackVtbl as CALLBACK1 = "ICorProfilerCallback" {
                /// The runtime is loading the profiler: `info` is its `ICorProfilerInfo`
                /// (at the newest version it gives). Set the event mask here
                /// ([`ProfilerInfo::set_event_mask`]); keep `info` for the other
                /// callbacks.
                ///
                /// If the runtime gives no `ICorProfilerInfo` at all, this method is not
                /// called and the thunk answers the failure.
                ///
                /// # Errors
                /// The `HRESULT` to answer: a failure (or a panic, answered with
                /// `E_FAIL`) makes the runtime unload the profiler.
                Initialize [] => initialize(info: ProfilerInfo) -> Result<(), HResult> = Ok(()),
                    custom initialize_thunk;
                /// The process is exiting (not called if it exits without running the
                /// runtime's shutdown, e.g. on `exit` from native code or an unhandled
                /// exception). Before it, the layer closes the shutdown gate: from then
                /// on, a call into the runtime from outside a callback (from the
                /// profiler's own threads included) is refused with
                /// [`ClrError::ShuttingDown`](crate::clr::ClrError::ShuttingDown), and the
                /// calls those threads had started are waited for, at most
                /// [`SHUTDOWN_WAIT`](crate::clr::guard::SHUTDOWN_WAIT) (after
                /// `Shutdown` returns, the runtime frees what such a call would use).
                /// After it, the layer writes the counts of throttled log lines
                /// ([`log::flush_repeats`](crate::clr::log::flush_repeats)).
                Shutdown [] => shutdown() -> () = (), custom shutdown_thunk;
                AppDomainCreationStarted [low MONITOR_APPDOMAIN_LOADS] => app_domain_creation_started(app_domain: AppDomainID);
                AppDomainCreationFinished [low MONITOR_APPDOMAIN_LOADS] => app_domain_creation_finished(
                    app_domain: AppDomainID,
                    status: HResult,
                );
                AppDomainShutdownStarted [low MONITOR_APPDOMAIN_LOADS] => app_domain_shutdown_started(app_domain: AppDomainID);
                AppDomainShutdownFinished [low MONITOR_APPDOMAIN_LOADS] => app_domain_shutdown_finished(
                    app_domain: AppDomainID,
                    status: HResult,
                );
                AssemblyLoadStarted [low MONITOR_ASSEMBLY_LOADS] => assembly_load_started(assembly: AssemblyID);
                AssemblyLoadFinished [low MONITOR_ASSEMBLY_LOADS] => assembly_load_finished(assembly: AssemblyID, status: HResult);
                AssemblyUnloadStarted [low MONITOR_ASSEMBLY_LOADS] => assembly_unload_started(assembly: AssemblyID);
                AssemblyUnloadFinished [low MONITOR_ASSEMBLY_LOADS] => assembly_unload_finished(
                    assembly: AssemblyID,
                    status: HResult,
                );
                ModuleLoadStarted [low MONITOR_MODULE_LOADS] => module_load_started(module: ModuleID);
                /// A module is loaded (`status` says whether that succeeded): its
                /// metadata can be read and extended from here on.
                ModuleLoadFinished [low MONITOR_MODULE_LOADS] => module_load_finished(module: ModuleID, status: HResult);
                /// A module is about to be unloaded: forget what is cached about it.
                ModuleUnloadStarted [low MONITOR_MODULE_LOADS] => module_unload_started(module: ModuleID);
                ModuleUnloadFinished [low MONITOR_MODULE_LOADS] => module_unload_finished(module: ModuleID, status: HResult);
                ModuleAttachedToAssembly [low MONITOR_MODULE_LOADS] => module_attached_to_assembly(
                    module: ModuleID,
                    assembly: AssemblyID,
                );
                ClassLoadStarted [low MONITOR_CLASS_LOADS] => class_load_started(class: ClassID);
                ClassLoadFinished [low MONITOR_CLASS_LOADS] => class_load_finished(class: ClassID, status: HResult);
                ClassUnloadStarted [low MONITOR_CLASS_LOADS] => class_unload_started(class: ClassID);
                ClassUnloadFinished [low MONITOR_CLASS_LOADS] => class_unload_finished(class: ClassID, status: HResult);
                FunctionUnloadStarted [low MONITOR_FUNCTION_UNLOADS] => function_unload_started(function: FunctionID);
                /// The JIT is about to compile `function`: the place to read its IL and
                /// give a rewritten body (`SetILFunctionBody`). Called again if the
                /// method is compiled again (another thread racing, tiered compilation).
                JITCompilationStarted [low MONITOR_JIT_COMPILATION] => jit_compilation_started(
                    function: FunctionID,
                    is_safe_to_block: bool,
                );
                JITCompilationFinished [low MONITOR_JIT_COMPILATION] => jit_compilation_finished(
                    function: FunctionID,
                    status: HResult,
                    is_safe_to_block: bool,
                );
                /// Whether to use the precompiled (ReadyToRun/NGEN) code found for
                /// `function` (default `true`); `false` makes the JIT compile it, so
                /// that its IL can be rewritten.
                JITCachedFunctionSearchStarted [low MONITOR_CACHE_SEARCHES] => jit_cached_function_search_started(
                    function: FunctionID,
                ) -> bool = true, custom jit_cached_function_search_started_thunk;
                JITCachedFunctionSearchFinished [low MONITOR_CACHE_SEARCHES] => jit_cached_function_search_finished(
                    function: FunctionID,
                    result: CorPrfJitCache,
                );
                JITFunctionPitched [low MONITOR_JIT_COMPILATION] => jit_function_pitched(function: FunctionID);
                /// Whether the JIT may inline `callee` into `caller` (default `true`).
                JITInlining [low MONITOR_JIT_COMPILATION] => jit_inlining(caller: FunctionID, callee: FunctionID) -> bool = true,
                    custom jit_inlining_thunk;
                ThreadCreated [low MONITOR_THREADS] => thread_created(thread: ThreadID);
                ThreadDestroyed [low MONITOR_THREADS] => thread_destroyed(thread: ThreadID);
                ThreadAssignedToOSThread [low MONITOR_THREADS] => thread_assigned_to_os_thread(
                    thread: ThreadID,
                    os_thread: u32,
                );
                RemotingClientInvocationStarted [low MONITOR_REMOTING] => remoting_client_invocation_started();
                RemotingClientSendingMessage [low MONITOR_REMOTING] => remoting_client_sending_message(
                    cookie: *mut Guid,
                    is_async: bool,
                );
                RemotingClientReceivingReply [low MONITOR_REMOTING] => remoting_client_receiving_reply(
                    cookie: *mut Guid,
                    is_async: bool,
                );
                RemotingClientInvocationFinished [low MONITOR_REMOTING] => remoting_client_invocation_finished();
                RemotingServerReceivingMessage [low MONITOR_REMOTING] => remoting_server_receiving_message(
                    cookie: *mut Guid,
                    is_async: bool,
                );
                RemotingServerInvocationStarted [low MONITOR_REMOTING] => remoting_server_invocation_started();
                RemotingServerInvocationReturned [low MONITOR_REMOTING] => remoting_server_invocation_returned();
                RemotingServerSendingReply [low MONITOR_REMOTING] => remoting_server_sending_reply(
                    cookie: *mut Guid,
                    is_async: bool,
                );
                UnmanagedToManagedTransition [low MONITOR_CODE_TRANSITIONS] => unmanaged_to_managed_transition(
                    function: FunctionID,
                    reason: CorPrfTransitionReason,
                );
                ManagedToUnmanagedTransition [low MONITOR_CODE_TRANSITIONS] => managed_to_unmanaged_transition(
                    function: FunctionID,
                    reason: CorPrfTransitionReason,
                );
                RuntimeSuspendStarted [low MONITOR_SUSPENDS] => runtime_suspend_started(reason: CorPrfSuspendReason);
                RuntimeSuspendFinished [low MONITOR_SUSPENDS] => runtime_suspend_finished();
                RuntimeSuspendAborted [low MONITOR_SUSPENDS] => runtime_suspend_aborted();
                RuntimeResumeStarted [low MONITOR_SUSPENDS] => runtime_resume_started();
                RuntimeResumeFinished [low MONITOR_SUSPENDS] => runtime_resume_finished();
                RuntimeThreadSuspended [low MONITOR_SUSPENDS] => runtime_thread_suspended(thread: ThreadID);
                RuntimeThreadResumed [low MONITOR_SUSPENDS] => runtime_thread_resumed(thread: ThreadID);
                /// `range_count` ranges: `old_starts[i]`, `new_starts[i]`, `lengths[i]`.
                MovedReferences [low MONITOR_GC, or high MONITOR_GC_MOVED_OBJECTS] => moved_references(
                    range_count: u32,
                    old_starts: *mut ObjectID,
                    new_starts: *mut ObjectID,
                    lengths: *mut u32,
                );
                ObjectAllocated [low MONITOR_OBJECT_ALLOCATED | ENABLE_OBJECT_ALLOCATED, or high MONITOR_LARGEOBJECT_ALLOCATED | MONITOR_PINNEDOBJECT_ALLOCATED] => object_allocated(object: ObjectID, class: ClassID);
                ObjectsAllocatedByClass [low MONITOR_GC] => objects_allocated_by_class(
                    class_count: u32,
                    classes: *mut ClassID,
                    counts: *mut u32,
                );
                ObjectReferences [low MONITOR_GC] => object_references(
                    object: ObjectID,
                    class: ClassID,
                    ref_count: u32,
                    refs: *mut ObjectID,
                );
                RootReferences [low MONITOR_GC] => root_references(root_count: u32, roots: *mut ObjectID);
                ExceptionThrown [low MONITOR_EXCEPTIONS] => exception_thrown(thrown: ObjectID);
                ExceptionSearchFunctionEnter [low MONITOR_EXCEPTIONS] => exception_search_function_enter(function: FunctionID);
                ExceptionSearchFunctionLeave [low MONITOR_EXCEPTIONS] => exception_search_function_leave();
                ExceptionSearchFilterEnter [low MONITOR_EXCEPTIONS] => exception_search_filter_enter(function: FunctionID);
                ExceptionSearchFilterLeave [low MONITOR_EXCEPTIONS] => exception_search_filter_leave();
                ExceptionSearchCatcherFound [low MONITOR_EXCEPTIONS] => exception_search_catcher_found(function: FunctionID);
                ExceptionOSHandlerEnter [low MONITOR_EXCEPTIONS] => exception_os_handler_enter(unused: usize);
                ExceptionOSHandlerLeave [low MONITOR_EXCEPTIONS] => exception_os_handler_leave(unused: usize);
                ExceptionUnwindFunctionEnter [low MONITOR_EXCEPTIONS] => exception_unwind_function_enter(function: FunctionID);
                ExceptionUnwindFunctionLeave [low MONITOR_EXCEPTIONS] => exception_unwind_function_leave();
                ExceptionUnwindFinallyEnter [low MONITOR_EXCEPTIONS] => exception_unwind_finally_enter(function: FunctionID);
                ExceptionUnwindFinallyLeave [low MONITOR_EXCEPTIONS] => exception_unwind_finally_leave();
                ExceptionCatcherEnter [low MONITOR_EXCEPTIONS] => exception_catcher_enter(
                    function: FunctionID,
                    object: ObjectID,
                );
                ExceptionCatcherLeave [low MONITOR_EXCEPTIONS] => exception_catcher_leave();
                COMClassicVTableCreated [low MONITOR_CCW] => com_classic_vtable_created(
                    class: ClassID,
                    iid: *const Guid,
                    vtable: *mut c_void,
                    slots: u32,
                );
                COMClassicVTableDestroyed [low MONITOR_CCW] => com_classic_vtable_destroyed(
                    class: ClassID,
                    iid: *const Guid,
                    vtable: *mut c_void,
                );
                ExceptionCLRCatcherFound [low MONITOR_CLR_EXCEPTIONS] => exception_clr_catcher_found();
                ExceptionCLRCatcherExecute [low MONITOR_CLR_EXCEPTIONS] => exception_clr_catcher_execute();
            }
            ICorProfilerCallback2Vtbl as CALLBACK2: CALLBACK1 = "ICorProfilerCallback2" {
                /// `name` holds `name_len` UTF-16 units, not null-terminated.
                ThreadNameChanged [low MONITOR_THREADS] => thread_name_changed(
                    thread: ThreadID,
                    name_len: u32,
                    name: *mut u16,
                );
                /// `generation_collected` holds `generation_count` `BOOL`s.
                GarbageCollectionStarted [low MONITOR_GC, or high BASIC_GC] => garbage_collection_started(
                    generation_count: i32,
                    generation_collected: *mut i32,
                    reason: CorPrfGcReason,
                );
                SurvivingReferences [low MONITOR_GC] => surviving_references(
                    range_count: u32,
                    starts: *mut ObjectID,
                    lengths: *mut u32,
                );
                GarbageCollectionFinished [low MONITOR_GC, or high BASIC_GC] => garbage_collection_finished();
                FinalizeableObjectQueued [low MONITOR_GC] => finalizeable_object_queued(
                    finalizer_flags: u32,
                    object: ObjectID,
                );
                RootReferences2 [low MONITOR_GC] => root_references2(
                    root_count: u32,
                    roots: *mut ObjectID,
                    kinds: *mut CorPrfGcRootKind,
                    flags: *mut CorPrfGcRootFlags,
                    root_ids: *mut usize,
                );
                HandleCreated [low MONITOR_GC] => handle_created(handle: GCHandleID, initial_object: ObjectID);
                HandleDestroyed [low MONITOR_GC] => handle_destroyed(handle: GCHandleID);
            }
            ICorProfilerCallback3Vtbl as CALLBACK3: CALLBACK2 = "ICorProfilerCallback3" {
                /// The profiler is being attached to a running process, with the client
                /// data the attaching tool sent.
                ///
                /// # Errors
                /// The `HRESULT` to answer: a failure makes the runtime unload the
                /// profiler. The default refuses (`CORPROF_E_PROFILER_NOT_ATTACHABLE`):
                /// a profiler that supports attaching says so by implementing this.
                InitializeForAttach [] => initialize_for_attach(
                    info: ProfilerInfo,
                    client_data: &[u8],
                ) -> Result<(), HResult> = Err(HResult::CORPROF_E_PROFILER_NOT_ATTACHABLE),
                    custom initialize_for_attach_thunk;
                ProfilerAttachComplete [] => profiler_attach_complete();
                ProfilerDetachSucceeded [] => profiler_detach_succeeded();
            }
            ICorProfilerCallback4Vtbl as CALLBACK4: CALLBACK3 = "ICorProfilerCallback4" {
                /// A re-JIT of `function` (version `rejit`) starts.
                ReJITCompilationStarted [low ENABLE_REJIT] => rejit_compilation_started(
                    function: FunctionID,
                    rejit: ReJITID,
                    is_safe_to_block: bool,
                );
                /// The runtime asks for the new IL of MethodDef `method` of `module`
                /// (re-JIT requested earlier, or a caller that inlined a method
                /// re-JIT-compiled with its inliners): give it, and the code-generation
                /// flags, to `control`, lent for the call only. A failure makes the
                /// runtime compile the method's default IL as this version.
                GetReJITParameters [low ENABLE_REJIT] => get_rejit_parameters(
                    module: ModuleID,
                    method: mdMethodDef,
                    control: &FunctionControl,
                ), custom get_rejit_parameters_thunk;
                ReJITCompilationFinished [low ENABLE_REJIT] => rejit_compilation_finished(
                    function: FunctionID,
                    rejit: ReJITID,
                    status: HResult,
                    is_safe_to_block: bool,
                );
                /// A re-JIT request failed for MethodDef `method` of `module`
                /// (`function` is 0 when the failure is not tied to one instantiation).
                ReJITError [low ENABLE_REJIT] => rejit_error(
                    module: ModuleID,
                    method: mdMethodDef,
                    function: FunctionID,
                    status: HResult,
                );
                MovedReferences2 [low MONITOR_GC, or high MONITOR_GC_MOVED_OBJECTS] => moved_references2(
                    range_count: u32,
                    old_starts: *mut ObjectID,
                    new_starts: *mut ObjectID,
                    lengths: *mut usize,
                );
                SurvivingReferences2 [low MONITOR_GC] => surviving_references2(
                    range_count: u32,
                    starts: *mut ObjectID,
                    lengths: *mut usize,
                );
            }
            ICorProfilerCallback5Vtbl as CALLBACK5: CALLBACK4 = "ICorProfilerCallback5" {
                ConditionalWeakTableElementReferences [low MONITOR_GC] => conditional_weak_table_element_references(
                    root_count: u32,
                    keys: *mut ObjectID,
                    values: *mut ObjectID,
                    root_ids: *mut GCHandleID,
                );
            }
            ICorProfilerCallback6Vtbl as CALLBACK6: CALLBACK5 = "ICorProfilerCallback6" {
                /// `assembly_path` (lossily decoded from UTF-16) will load; announce to
                /// `provider` the references the profiler will add to its modules
                /// (CoreCLR 3.1 never calls it; its assembly loads need no
                /// announcement).
                GetAssemblyReferences [high ADD_ASSEMBLY_REFERENCES] => get_assembly_references(
                    assembly_path: &str,
                    provider: &AssemblyReferenceProvider,
                ), custom get_assembly_references_thunk;
            }
            ICorProfilerCallback7Vtbl as CALLBACK7: CALLBACK6 = "ICorProfilerCallback7" {
                ModuleInMemorySymbolsUpdated [high IN_MEMORY_SYMBOLS_UPDATED] => module_in_memory_symbols_updated(module: ModuleID);
            }
            ICorProfilerCallback8Vtbl as CALLBACK8: CALLBACK7 = "ICorProfilerCallback8" {
                /// `il_header` (`il_header_len` bytes) is the dynamic method's IL, valid
                /// during the call.
                DynamicMethodJITCompilationStarted [low MONITOR_JIT_COMPILATION] => dynamic_method_jit_compilation_started(
                    function: FunctionID,
                    is_safe_to_block: bool,
                    il_header: *const u8,
                    il_header_len: u32,
                );
                DynamicMethodJITCompilationFinished [low MONITOR_JIT_COMPILATION] => dynamic_method_jit_compilation_finished(
                    function: FunctionID,
                    status: HResult,
                    is_safe_to_block: bool,
                );
            }
            ICorProfilerCallback9Vtbl as CALLBACK9: CALLBACK8 = "ICorProfilerCallback9" {
                DynamicMethodUnloaded [high MONITOR_DYNAMIC_FUNCTION_UNLOADS] => dynamic_method_unloaded(function: FunctionID);
            }
            ICorProfilerCallback10Vtbl as CALLBACK10: CALLBACK9 = "ICorProfilerCallback10" {
                EventPipeEventDelivered [high MONITOR_EVENT_PIPE] => event_pipe_event_delivered(
                    provider: EventPipeProvider,
                    event_id: u32,
                    event_version: u32,
                    metadata_len: u32,
                    metadata: *const u8,
                    data_len: u32,
                    data: *const u8,
                    activity_id: *const Guid,
                    related_activity_id: *const Guid,
                    thread: ThreadID,
                    frame_count: u32,
                    frames: *mut usize,
                );
                EventPipeProviderCreated [high MONITOR_EVENT_PIPE] => event_pipe_provider_created(provider: EventPipeProvider);
            }
            ICorProfilerCallback11Vtbl as CALLBACK11: CALLBACK10 = "ICorProfilerCallback11" {
                /// Whether the profiler only listens and never changes code (default
                /// `false`); asked before `initialize` on newer runtimes.
                LoadAsNotificationOnly [] => load_as_notification_only() -> bool = false,
                    custom load_as_notification_only_thunk;
            }
        }
    };
    // The list's one matcher: each entry completed and handed over in both shapes, of
    // which `@give` passes on the one asked for.
    (@match $how:tt
        $(
            $vtbl:ident as $konst:ident $(: $parent:ident)? = $iface:literal {
                $(
                    $(#[$doc:meta])*
                    $slot:ident $events:tt => $method:ident($($arg:ident: $ty:ty),* $(,)?)
                        $(-> $ret:ty = $default:expr)?
                        $(, custom $thunk:ident)?;
                )*
            }
        )*
    ) => {
        $crate::clr::profiler::for_each_callback! { @give $how
            [$($({
                $slot [$($thunk)?]
                #[doc = concat!("`", $iface, "::", stringify!($slot), "`.")]
                #[doc = ""]
                $(#[$doc])*
                #[doc = ""]
                #[doc = $crate::clr::profiler::for_each_callback!(@needs $events)]
                #[doc = $crate::clr::profiler::for_each_callback!(@errors $($ret)?)]
                fn $method($($arg: $ty),*)
                    -> $crate::clr::profiler::for_each_callback!(@ret $($ret)?)
                {
                    $crate::clr::profiler::for_each_callback!(@default $($default)?)
                }
            })*)*]
            [$(
                $iface ($vtbl as $konst $(: $parent)?) {
                    $($slot => $method [$($thunk)?] $events,)*
                }
            )*]
        }
    };
    (@give [interfaces $m:ident] $callbacks:tt [$($interfaces:tt)*]) => {
        $m! { $($interfaces)* }
    };
    (@give [$m:ident] [$($callback:tt)*] $interfaces:tt) => {
        $($m! $callback)*
    };
    // An entry's return type, default and end of docs: the list's, or, without
    // `-> Return = default`, `Result<(), HResult>`, `Ok(())` and the `# Errors` section.
    (@ret) => { Result<(), HResult> };
    (@ret $ret:ty) => { $ret };
    (@default) => {
        Ok(())
    };
    (@default $default:expr) => {
        $default
    };
    // An entry's events, as its docs say them.
    (@needs []) => {
        "Needs no event flag: the runtime calls it whatever the event mask."
    };
    (@needs [$(low $($low:ident)|+)? $(high $($high:ident)|+)?
        $(, or $(low $($or_low:ident)|+)? $(high $($or_high:ident)|+)?)?]) => {
        concat!(
            "Needs",
            $($(" `COR_PRF_", stringify!($low), "`",)+)?
            $($(" `COR_PRF_HIGH_", stringify!($high), "`",)+)?
            " in the event mask",
            $(
                "; or, for part of its calls, one of",
                $($(" `COR_PRF_", stringify!($or_low), "`",)+)?
                $($(" `COR_PRF_HIGH_", stringify!($or_high), "`",)+)?
            )?
            ". The `Manager` asks for it for the instrumentation methods that subscribe \
             (`InstrumentationMethod::callbacks`)."
        )
    };
    (@errors) => {
        "\n\n# Errors\nThe `HRESULT` to answer the runtime, which ignores it for most \
         callbacks (see the trait's conventions)."
    };
    (@errors $ret:ty) => {
        ""
    };
}
pub(crate) use for_each_callback;

/// One method of [`Profiler`], from its entry in the list: the default does nothing
/// with the arguments.
macro_rules! profiler_method {
    (
        $slot:ident $thunk:tt
        $(#[$doc:meta])*
        fn $method:ident($($arg:ident: $ty:ty),*) -> $ret:ty { $default:expr }
    ) => {
        $(#[$doc])*
        fn $method(&self $(, $arg: $ty)*) -> $ret {
            $(let _ = $arg;)*
            $default
        }
    };
}

/// A CLR profiler: the runtime's callbacks, as methods with defaults.
///
/// Implement the callbacks for the events the profiler asks for (in
/// [`initialize`](Profiler::initialize), with
/// [`ProfilerInfo::set_event_mask`]) and give the type to
/// [`export_profiler!`](crate::export_profiler), which builds the COM object
/// the runtime talks to. Each method is one slot of `ICorProfilerCallback` ..
/// `ICorProfilerCallback11`, named after it in snake case
/// (`JITCompilationStarted` is [`jit_compilation_started`](Profiler::jit_compilation_started)).
///
/// # Conventions
///
/// * **Results**: callbacks return `Result<(), HResult>`; `Ok(())` answers
///   `S_OK`, `Err(hr)` answers `hr`. A failure from
///   [`initialize`](Profiler::initialize) makes the runtime unload the
///   profiler; most other callbacks' results are ignored by the runtime. The
///   exceptions answer through an out-parameter and return what they answer:
///   [`jit_inlining`](Profiler::jit_inlining),
///   [`jit_cached_function_search_started`](Profiler::jit_cached_function_search_started),
///   [`load_as_notification_only`](Profiler::load_as_notification_only) (a
///   `bool`), and [`shutdown`](Profiler::shutdown) returns nothing.
/// * **Defaults** do nothing and succeed; the `bool` ones answer what the
///   runtime does without a profiler (inline, use precompiled code, not
///   notification-only), and
///   [`initialize_for_attach`](Profiler::initialize_for_attach) refuses to
///   attach.
/// * **Arguments** keep the raw types of the vtable (runtime ids, tokens,
///   `HResult` statuses, raw pointers valid during the call only), except that
///   `BOOL`s are `bool`, `initialize` receives a [`ProfilerInfo`] and
///   `initialize_for_attach` its client data as a slice.
/// * **Threads**: the runtime calls from many threads at once, hence `&self` and
///   `Send + Sync`. Each call runs inside a
///   [`CallbackScope`](crate::clr::guard::CallbackScope), so `ProfilerInfo`
///   calls made during it are synchronous.
/// * **Panics** never cross into the runtime: a panicking callback is logged
///   ([`clr::log`](crate::clr::log)) with its name and answers `E_FAIL`; the
///   profiler keeps being called (state it shares behind a `Mutex` is then
///   poisoned). With `panic = "abort"` a panic aborts the process instead.
///
/// # A profiler in a dozen lines
///
/// A `cdylib` that logs every method the JIT compiles:
///
/// ```no_run
/// use std::sync::OnceLock;
///
/// use ilrewrite::clr::sys::{CorPrfHighMonitor, CorPrfMonitor, FunctionID, HResult};
/// use ilrewrite::clr::{Profiler, ProfilerInfo, log};
///
/// #[derive(Default)]
/// struct JitLogger {
///     info: OnceLock<ProfilerInfo>,
/// }
///
/// impl Profiler for JitLogger {
///     fn initialize(&self, info: ProfilerInfo) -> Result<(), HResult> {
///         let jit = CorPrfMonitor::MONITOR_JIT_COMPILATION;
///         info.set_event_mask(jit, CorPrfHighMonitor::empty())?;
///         let _ = self.info.set(info);
///         Ok(())
///     }
///
///     fn jit_compilation_started(&self, function: FunctionID, _: bool) -> Result<(), HResult> {
///         let info = self.info.get().ok_or(HResult::E_UNEXPECTED)?;
///         let f = info.function_info(function)?;
///         log::write(&format!("JIT {:#010x} of module {:#x}", f.token, f.module));
///         Ok(())
///     }
/// }
///
/// ilrewrite::export_profiler!(
///     clsid = "{9E2B38F2-7355-4C61-A54F-434B7AC266C0}",
///     profiler = JitLogger::default,
/// );
/// ```
///
/// Built as a `cdylib` and loaded with `CORECLR_ENABLE_PROFILING=1`,
/// `CORECLR_PROFILER={9E2B38F2-7355-4C61-A54F-434B7AC266C0}` and
/// `CORECLR_PROFILER_PATH=/path/to/libjit_logger.so`.
#[allow(clippy::too_many_arguments)]
pub trait Profiler: Send + Sync + 'static {
    for_each_callback!(profiler_method);
}

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
/// SlotName => trait_method(arg: Type, ...) [-> Return = default_value] [, custom thunk];
/// ```
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
/// #[doc = "`InterfaceName::SlotName`."] #[doc = ""] /// docs [# Errors section]
/// fn trait_method(arg: Type, ...) -> Return { default_value }
/// ```
///
/// `for_each_callback!(interfaces m)` invokes `m!` once with every interface, for what
/// needs all the slots at once (an enum's variants, a vtable's initializer):
///
/// ```text
/// "InterfaceName" (VtblType as CONST [: PARENT_CONST]) {
///     SlotName => trait_method [custom_thunk], ...
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
                Initialize => initialize(info: ProfilerInfo) -> Result<(), HResult> = Ok(()),
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
                Shutdown => shutdown() -> () = (), custom shutdown_thunk;
                AppDomainCreationStarted => app_domain_creation_started(app_domain: AppDomainID);
                AppDomainCreationFinished => app_domain_creation_finished(
                    app_domain: AppDomainID,
                    status: HResult,
                );
                AppDomainShutdownStarted => app_domain_shutdown_started(app_domain: AppDomainID);
                AppDomainShutdownFinished => app_domain_shutdown_finished(
                    app_domain: AppDomainID,
                    status: HResult,
                );
                AssemblyLoadStarted => assembly_load_started(assembly: AssemblyID);
                AssemblyLoadFinished => assembly_load_finished(assembly: AssemblyID, status: HResult);
                AssemblyUnloadStarted => assembly_unload_started(assembly: AssemblyID);
                AssemblyUnloadFinished => assembly_unload_finished(
                    assembly: AssemblyID,
                    status: HResult,
                );
                /// Needs `MONITOR_MODULE_LOADS`.
                ModuleLoadStarted => module_load_started(module: ModuleID);
                /// A module is loaded (`status` says whether that succeeded): its
                /// metadata can be read and extended from here on. Needs
                /// `MONITOR_MODULE_LOADS`.
                ModuleLoadFinished => module_load_finished(module: ModuleID, status: HResult);
                /// A module is about to be unloaded: forget what is cached about it.
                /// Needs `MONITOR_MODULE_LOADS`.
                ModuleUnloadStarted => module_unload_started(module: ModuleID);
                ModuleUnloadFinished => module_unload_finished(module: ModuleID, status: HResult);
                ModuleAttachedToAssembly => module_attached_to_assembly(
                    module: ModuleID,
                    assembly: AssemblyID,
                );
                ClassLoadStarted => class_load_started(class: ClassID);
                ClassLoadFinished => class_load_finished(class: ClassID, status: HResult);
                ClassUnloadStarted => class_unload_started(class: ClassID);
                ClassUnloadFinished => class_unload_finished(class: ClassID, status: HResult);
                FunctionUnloadStarted => function_unload_started(function: FunctionID);
                /// The JIT is about to compile `function`: the place to read its IL and
                /// give a rewritten body (`SetILFunctionBody`). Called again if the
                /// method is compiled again (another thread racing, tiered compilation).
                /// Needs `MONITOR_JIT_COMPILATION`.
                JITCompilationStarted => jit_compilation_started(
                    function: FunctionID,
                    is_safe_to_block: bool,
                );
                /// Needs `MONITOR_JIT_COMPILATION`.
                JITCompilationFinished => jit_compilation_finished(
                    function: FunctionID,
                    status: HResult,
                    is_safe_to_block: bool,
                );
                /// Whether to use the precompiled (ReadyToRun/NGEN) code found for
                /// `function` (default `true`); `false` makes the JIT compile it, so
                /// that its IL can be rewritten. Needs `MONITOR_CACHE_SEARCHES`.
                JITCachedFunctionSearchStarted => jit_cached_function_search_started(
                    function: FunctionID,
                ) -> bool = true, custom jit_cached_function_search_started_thunk;
                JITCachedFunctionSearchFinished => jit_cached_function_search_finished(
                    function: FunctionID,
                    result: CorPrfJitCache,
                );
                JITFunctionPitched => jit_function_pitched(function: FunctionID);
                /// Whether the JIT may inline `callee` into `caller` (default `true`).
                /// Needs `MONITOR_JIT_COMPILATION`.
                JITInlining => jit_inlining(caller: FunctionID, callee: FunctionID) -> bool = true,
                    custom jit_inlining_thunk;
                ThreadCreated => thread_created(thread: ThreadID);
                ThreadDestroyed => thread_destroyed(thread: ThreadID);
                ThreadAssignedToOSThread => thread_assigned_to_os_thread(
                    thread: ThreadID,
                    os_thread: u32,
                );
                RemotingClientInvocationStarted => remoting_client_invocation_started();
                RemotingClientSendingMessage => remoting_client_sending_message(
                    cookie: *mut Guid,
                    is_async: bool,
                );
                RemotingClientReceivingReply => remoting_client_receiving_reply(
                    cookie: *mut Guid,
                    is_async: bool,
                );
                RemotingClientInvocationFinished => remoting_client_invocation_finished();
                RemotingServerReceivingMessage => remoting_server_receiving_message(
                    cookie: *mut Guid,
                    is_async: bool,
                );
                RemotingServerInvocationStarted => remoting_server_invocation_started();
                RemotingServerInvocationReturned => remoting_server_invocation_returned();
                RemotingServerSendingReply => remoting_server_sending_reply(
                    cookie: *mut Guid,
                    is_async: bool,
                );
                UnmanagedToManagedTransition => unmanaged_to_managed_transition(
                    function: FunctionID,
                    reason: CorPrfTransitionReason,
                );
                ManagedToUnmanagedTransition => managed_to_unmanaged_transition(
                    function: FunctionID,
                    reason: CorPrfTransitionReason,
                );
                RuntimeSuspendStarted => runtime_suspend_started(reason: CorPrfSuspendReason);
                RuntimeSuspendFinished => runtime_suspend_finished();
                RuntimeSuspendAborted => runtime_suspend_aborted();
                RuntimeResumeStarted => runtime_resume_started();
                RuntimeResumeFinished => runtime_resume_finished();
                RuntimeThreadSuspended => runtime_thread_suspended(thread: ThreadID);
                RuntimeThreadResumed => runtime_thread_resumed(thread: ThreadID);
                /// `range_count` ranges: `old_starts[i]`, `new_starts[i]`, `lengths[i]`.
                MovedReferences => moved_references(
                    range_count: u32,
                    old_starts: *mut ObjectID,
                    new_starts: *mut ObjectID,
                    lengths: *mut u32,
                );
                ObjectAllocated => object_allocated(object: ObjectID, class: ClassID);
                ObjectsAllocatedByClass => objects_allocated_by_class(
                    class_count: u32,
                    classes: *mut ClassID,
                    counts: *mut u32,
                );
                ObjectReferences => object_references(
                    object: ObjectID,
                    class: ClassID,
                    ref_count: u32,
                    refs: *mut ObjectID,
                );
                RootReferences => root_references(root_count: u32, roots: *mut ObjectID);
                ExceptionThrown => exception_thrown(thrown: ObjectID);
                ExceptionSearchFunctionEnter => exception_search_function_enter(function: FunctionID);
                ExceptionSearchFunctionLeave => exception_search_function_leave();
                ExceptionSearchFilterEnter => exception_search_filter_enter(function: FunctionID);
                ExceptionSearchFilterLeave => exception_search_filter_leave();
                ExceptionSearchCatcherFound => exception_search_catcher_found(function: FunctionID);
                ExceptionOSHandlerEnter => exception_os_handler_enter(unused: usize);
                ExceptionOSHandlerLeave => exception_os_handler_leave(unused: usize);
                ExceptionUnwindFunctionEnter => exception_unwind_function_enter(function: FunctionID);
                ExceptionUnwindFunctionLeave => exception_unwind_function_leave();
                ExceptionUnwindFinallyEnter => exception_unwind_finally_enter(function: FunctionID);
                ExceptionUnwindFinallyLeave => exception_unwind_finally_leave();
                ExceptionCatcherEnter => exception_catcher_enter(
                    function: FunctionID,
                    object: ObjectID,
                );
                ExceptionCatcherLeave => exception_catcher_leave();
                COMClassicVTableCreated => com_classic_vtable_created(
                    class: ClassID,
                    iid: *const Guid,
                    vtable: *mut c_void,
                    slots: u32,
                );
                COMClassicVTableDestroyed => com_classic_vtable_destroyed(
                    class: ClassID,
                    iid: *const Guid,
                    vtable: *mut c_void,
                );
                ExceptionCLRCatcherFound => exception_clr_catcher_found();
                ExceptionCLRCatcherExecute => exception_clr_catcher_execute();
            }
            ICorProfilerCallback2Vtbl as CALLBACK2: CALLBACK1 = "ICorProfilerCallback2" {
                /// `name` holds `name_len` UTF-16 units, not null-terminated.
                ThreadNameChanged => thread_name_changed(
                    thread: ThreadID,
                    name_len: u32,
                    name: *mut u16,
                );
                /// `generation_collected` holds `generation_count` `BOOL`s.
                GarbageCollectionStarted => garbage_collection_started(
                    generation_count: i32,
                    generation_collected: *mut i32,
                    reason: CorPrfGcReason,
                );
                SurvivingReferences => surviving_references(
                    range_count: u32,
                    starts: *mut ObjectID,
                    lengths: *mut u32,
                );
                GarbageCollectionFinished => garbage_collection_finished();
                FinalizeableObjectQueued => finalizeable_object_queued(
                    finalizer_flags: u32,
                    object: ObjectID,
                );
                RootReferences2 => root_references2(
                    root_count: u32,
                    roots: *mut ObjectID,
                    kinds: *mut CorPrfGcRootKind,
                    flags: *mut CorPrfGcRootFlags,
                    root_ids: *mut usize,
                );
                HandleCreated => handle_created(handle: GCHandleID, initial_object: ObjectID);
                HandleDestroyed => handle_destroyed(handle: GCHandleID);
            }
            ICorProfilerCallback3Vtbl as CALLBACK3: CALLBACK2 = "ICorProfilerCallback3" {
                /// The profiler is being attached to a running process, with the client
                /// data the attaching tool sent.
                ///
                /// # Errors
                /// The `HRESULT` to answer: a failure makes the runtime unload the
                /// profiler. The default refuses (`CORPROF_E_PROFILER_NOT_ATTACHABLE`):
                /// a profiler that supports attaching says so by implementing this.
                InitializeForAttach => initialize_for_attach(
                    info: ProfilerInfo,
                    client_data: &[u8],
                ) -> Result<(), HResult> = Err(HResult::CORPROF_E_PROFILER_NOT_ATTACHABLE),
                    custom initialize_for_attach_thunk;
                ProfilerAttachComplete => profiler_attach_complete();
                ProfilerDetachSucceeded => profiler_detach_succeeded();
            }
            ICorProfilerCallback4Vtbl as CALLBACK4: CALLBACK3 = "ICorProfilerCallback4" {
                /// A re-JIT of `function` (version `rejit`) starts.
                ReJITCompilationStarted => rejit_compilation_started(
                    function: FunctionID,
                    rejit: ReJITID,
                    is_safe_to_block: bool,
                );
                /// The runtime asks for the new IL of MethodDef `method` of `module`
                /// (re-JIT requested earlier, or a caller that inlined a method
                /// re-JIT-compiled with its inliners): give it, and the code-generation
                /// flags, to `control`, lent for the call only. A failure makes the
                /// runtime compile the method's default IL as this version.
                GetReJITParameters => get_rejit_parameters(
                    module: ModuleID,
                    method: mdMethodDef,
                    control: &FunctionControl,
                ), custom get_rejit_parameters_thunk;
                ReJITCompilationFinished => rejit_compilation_finished(
                    function: FunctionID,
                    rejit: ReJITID,
                    status: HResult,
                    is_safe_to_block: bool,
                );
                /// A re-JIT request failed for MethodDef `method` of `module`
                /// (`function` is 0 when the failure is not tied to one instantiation).
                ReJITError => rejit_error(
                    module: ModuleID,
                    method: mdMethodDef,
                    function: FunctionID,
                    status: HResult,
                );
                MovedReferences2 => moved_references2(
                    range_count: u32,
                    old_starts: *mut ObjectID,
                    new_starts: *mut ObjectID,
                    lengths: *mut usize,
                );
                SurvivingReferences2 => surviving_references2(
                    range_count: u32,
                    starts: *mut ObjectID,
                    lengths: *mut usize,
                );
            }
            ICorProfilerCallback5Vtbl as CALLBACK5: CALLBACK4 = "ICorProfilerCallback5" {
                ConditionalWeakTableElementReferences => conditional_weak_table_element_references(
                    root_count: u32,
                    keys: *mut ObjectID,
                    values: *mut ObjectID,
                    root_ids: *mut GCHandleID,
                );
            }
            ICorProfilerCallback6Vtbl as CALLBACK6: CALLBACK5 = "ICorProfilerCallback6" {
                /// `assembly_path` (lossily decoded from UTF-16) will load; announce to
                /// `provider` the references the profiler will add to its modules
                /// (with `COR_PRF_HIGH_ADD_ASSEMBLY_REFERENCES`). CoreCLR 3.1 never
                /// calls it; its assembly loads need no announcement.
                GetAssemblyReferences => get_assembly_references(
                    assembly_path: &str,
                    provider: &AssemblyReferenceProvider,
                ), custom get_assembly_references_thunk;
            }
            ICorProfilerCallback7Vtbl as CALLBACK7: CALLBACK6 = "ICorProfilerCallback7" {
                ModuleInMemorySymbolsUpdated => module_in_memory_symbols_updated(module: ModuleID);
            }
            ICorProfilerCallback8Vtbl as CALLBACK8: CALLBACK7 = "ICorProfilerCallback8" {
                /// `il_header` (`il_header_len` bytes) is the dynamic method's IL, valid
                /// during the call.
                DynamicMethodJITCompilationStarted => dynamic_method_jit_compilation_started(
                    function: FunctionID,
                    is_safe_to_block: bool,
                    il_header: *const u8,
                    il_header_len: u32,
                );
                DynamicMethodJITCompilationFinished => dynamic_method_jit_compilation_finished(
                    function: FunctionID,
                    status: HResult,
                    is_safe_to_block: bool,
                );
            }
            ICorProfilerCallback9Vtbl as CALLBACK9: CALLBACK8 = "ICorProfilerCallback9" {
                DynamicMethodUnloaded => dynamic_method_unloaded(function: FunctionID);
            }
            ICorProfilerCallback10Vtbl as CALLBACK10: CALLBACK9 = "ICorProfilerCallback10" {
                EventPipeEventDelivered => event_pipe_event_delivered(
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
                EventPipeProviderCreated => event_pipe_provider_created(provider: EventPipeProvider);
            }
            ICorProfilerCallback11Vtbl as CALLBACK11: CALLBACK10 = "ICorProfilerCallback11" {
                /// Whether the profiler only listens and never changes code (default
                /// `false`); asked before `initialize` on newer runtimes.
                LoadAsNotificationOnly => load_as_notification_only() -> bool = false,
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
                    $slot:ident => $method:ident($($arg:ident: $ty:ty),* $(,)?)
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
                #[doc = $crate::clr::profiler::for_each_callback!(@errors $($ret)?)]
                fn $method($($arg: $ty),*)
                    -> $crate::clr::profiler::for_each_callback!(@ret $($ret)?)
                {
                    $crate::clr::profiler::for_each_callback!(@default $($default)?)
                }
            })*)*]
            [$(
                $iface ($vtbl as $konst $(: $parent)?) {
                    $($slot => $method [$($thunk)?],)*
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

//! `ICorProfilerCallback` .. `ICorProfilerCallback11`: the interfaces a profiler
//! implements and the runtime calls (`corprof.idl`).

use core::ffi::c_void;

use super::enums::{
    CorPrfGcReason, CorPrfGcRootFlags, CorPrfGcRootKind, CorPrfJitCache, CorPrfSuspendReason,
    CorPrfTransitionReason,
};
use super::guid::Guid;
use super::hresult::HResult;
use super::types::{
    AppDomainID, AssemblyID, ClassID, EventPipeProvider, FunctionID, GCHandleID, ModuleID,
    ObjectID, ReJITID, ThreadID, mdMethodDef,
};
use super::vtable::{IUnknownVtbl, com_interface};

com_interface! {
    /// `ICorProfilerCallback`: the runtime's notifications to the profiler (69 methods).
    pub struct ICorProfilerCallbackVtbl for ICorProfilerCallback: IUnknownVtbl;
    /// `{176FBED1-A55C-4796-98CA-A9DA0EF883E7}`.
    pub const IID_ICORPROFILERCALLBACK = "176FBED1-A55C-4796-98CA-A9DA0EF883E7";
    {
        fn Initialize(p_icor_profiler_info_unk: *mut c_void) -> HResult;
        fn Shutdown() -> HResult;
        fn AppDomainCreationStarted(app_domain_id: AppDomainID) -> HResult;
        fn AppDomainCreationFinished(app_domain_id: AppDomainID, hr_status: HResult) -> HResult;
        fn AppDomainShutdownStarted(app_domain_id: AppDomainID) -> HResult;
        fn AppDomainShutdownFinished(app_domain_id: AppDomainID, hr_status: HResult) -> HResult;
        fn AssemblyLoadStarted(assembly_id: AssemblyID) -> HResult;
        fn AssemblyLoadFinished(assembly_id: AssemblyID, hr_status: HResult) -> HResult;
        fn AssemblyUnloadStarted(assembly_id: AssemblyID) -> HResult;
        fn AssemblyUnloadFinished(assembly_id: AssemblyID, hr_status: HResult) -> HResult;
        fn ModuleLoadStarted(module_id: ModuleID) -> HResult;
        fn ModuleLoadFinished(module_id: ModuleID, hr_status: HResult) -> HResult;
        fn ModuleUnloadStarted(module_id: ModuleID) -> HResult;
        fn ModuleUnloadFinished(module_id: ModuleID, hr_status: HResult) -> HResult;
        fn ModuleAttachedToAssembly(module_id: ModuleID, assembly_id: AssemblyID) -> HResult;
        fn ClassLoadStarted(class_id: ClassID) -> HResult;
        fn ClassLoadFinished(class_id: ClassID, hr_status: HResult) -> HResult;
        fn ClassUnloadStarted(class_id: ClassID) -> HResult;
        fn ClassUnloadFinished(class_id: ClassID, hr_status: HResult) -> HResult;
        fn FunctionUnloadStarted(function_id: FunctionID) -> HResult;
        fn JITCompilationStarted(function_id: FunctionID, is_safe_to_block: i32) -> HResult;
        fn JITCompilationFinished(
            function_id: FunctionID,
            hr_status: HResult,
            is_safe_to_block: i32,
        ) -> HResult;
        fn JITCachedFunctionSearchStarted(
            function_id: FunctionID,
            pb_use_cached_function: *mut i32,
        ) -> HResult;
        fn JITCachedFunctionSearchFinished(
            function_id: FunctionID,
            result: CorPrfJitCache,
        ) -> HResult;
        fn JITFunctionPitched(function_id: FunctionID) -> HResult;
        fn JITInlining(
            caller_id: FunctionID,
            callee_id: FunctionID,
            pf_should_inline: *mut i32,
        ) -> HResult;
        fn ThreadCreated(thread_id: ThreadID) -> HResult;
        fn ThreadDestroyed(thread_id: ThreadID) -> HResult;
        fn ThreadAssignedToOSThread(managed_thread_id: ThreadID, os_thread_id: u32) -> HResult;
        fn RemotingClientInvocationStarted() -> HResult;
        fn RemotingClientSendingMessage(p_cookie: *mut Guid, is_async: i32) -> HResult;
        fn RemotingClientReceivingReply(p_cookie: *mut Guid, is_async: i32) -> HResult;
        fn RemotingClientInvocationFinished() -> HResult;
        fn RemotingServerReceivingMessage(p_cookie: *mut Guid, is_async: i32) -> HResult;
        fn RemotingServerInvocationStarted() -> HResult;
        fn RemotingServerInvocationReturned() -> HResult;
        fn RemotingServerSendingReply(p_cookie: *mut Guid, is_async: i32) -> HResult;
        fn UnmanagedToManagedTransition(
            function_id: FunctionID,
            reason: CorPrfTransitionReason,
        ) -> HResult;
        fn ManagedToUnmanagedTransition(
            function_id: FunctionID,
            reason: CorPrfTransitionReason,
        ) -> HResult;
        fn RuntimeSuspendStarted(suspend_reason: CorPrfSuspendReason) -> HResult;
        fn RuntimeSuspendFinished() -> HResult;
        fn RuntimeSuspendAborted() -> HResult;
        fn RuntimeResumeStarted() -> HResult;
        fn RuntimeResumeFinished() -> HResult;
        fn RuntimeThreadSuspended(thread_id: ThreadID) -> HResult;
        fn RuntimeThreadResumed(thread_id: ThreadID) -> HResult;
        fn MovedReferences(
            c_moved_object_id_ranges: u32,
            old_object_id_range_start: *mut ObjectID,
            new_object_id_range_start: *mut ObjectID,
            c_object_id_range_length: *mut u32,
        ) -> HResult;
        fn ObjectAllocated(object_id: ObjectID, class_id: ClassID) -> HResult;
        fn ObjectsAllocatedByClass(
            c_class_count: u32,
            class_ids: *mut ClassID,
            c_objects: *mut u32,
        ) -> HResult;
        fn ObjectReferences(
            object_id: ObjectID,
            class_id: ClassID,
            c_object_refs: u32,
            object_ref_ids: *mut ObjectID,
        ) -> HResult;
        fn RootReferences(c_root_refs: u32, root_ref_ids: *mut ObjectID) -> HResult;
        fn ExceptionThrown(thrown_object_id: ObjectID) -> HResult;
        fn ExceptionSearchFunctionEnter(function_id: FunctionID) -> HResult;
        fn ExceptionSearchFunctionLeave() -> HResult;
        fn ExceptionSearchFilterEnter(function_id: FunctionID) -> HResult;
        fn ExceptionSearchFilterLeave() -> HResult;
        fn ExceptionSearchCatcherFound(function_id: FunctionID) -> HResult;
        fn ExceptionOSHandlerEnter(unused: usize) -> HResult;
        fn ExceptionOSHandlerLeave(unused: usize) -> HResult;
        fn ExceptionUnwindFunctionEnter(function_id: FunctionID) -> HResult;
        fn ExceptionUnwindFunctionLeave() -> HResult;
        fn ExceptionUnwindFinallyEnter(function_id: FunctionID) -> HResult;
        fn ExceptionUnwindFinallyLeave() -> HResult;
        fn ExceptionCatcherEnter(function_id: FunctionID, object_id: ObjectID) -> HResult;
        fn ExceptionCatcherLeave() -> HResult;
        fn COMClassicVTableCreated(
            wrapped_class_id: ClassID,
            implemented_iid: *const Guid,
            p_vtable: *mut c_void,
            c_slots: u32,
        ) -> HResult;
        fn COMClassicVTableDestroyed(
            wrapped_class_id: ClassID,
            implemented_iid: *const Guid,
            p_vtable: *mut c_void,
        ) -> HResult;
        fn ExceptionCLRCatcherFound() -> HResult;
        fn ExceptionCLRCatcherExecute() -> HResult;
    }
}

com_interface! {
    /// `ICorProfilerCallback2`: thread names, GC details, handles (V2.0).
    pub struct ICorProfilerCallback2Vtbl for ICorProfilerCallback2: ICorProfilerCallbackVtbl;
    /// `{8A8CC829-CCF2-49fe-BBAE-0F022228071A}`.
    pub const IID_ICORPROFILERCALLBACK2 = "8A8CC829-CCF2-49fe-BBAE-0F022228071A";
    {
        /// `name` is not null-terminated.
        fn ThreadNameChanged(thread_id: ThreadID, cch_name: u32, name: *mut u16) -> HResult;
        fn GarbageCollectionStarted(
            c_generations: i32,
            generation_collected: *mut i32,
            reason: CorPrfGcReason,
        ) -> HResult;
        fn SurvivingReferences(
            c_surviving_object_id_ranges: u32,
            object_id_range_start: *mut ObjectID,
            c_object_id_range_length: *mut u32,
        ) -> HResult;
        fn GarbageCollectionFinished() -> HResult;
        fn FinalizeableObjectQueued(finalizer_flags: u32, object_id: ObjectID) -> HResult;
        fn RootReferences2(
            c_root_refs: u32,
            root_ref_ids: *mut ObjectID,
            root_kinds: *mut CorPrfGcRootKind,
            root_flags: *mut CorPrfGcRootFlags,
            root_ids: *mut usize,
        ) -> HResult;
        fn HandleCreated(handle_id: GCHandleID, initial_object_id: ObjectID) -> HResult;
        fn HandleDestroyed(handle_id: GCHandleID) -> HResult;
    }
}

com_interface! {
    /// `ICorProfilerCallback3`: attach and detach.
    pub struct ICorProfilerCallback3Vtbl for ICorProfilerCallback3: ICorProfilerCallback2Vtbl;
    /// `{4FD2ED52-7731-4b8d-9469-03D2CC3086C5}`.
    pub const IID_ICORPROFILERCALLBACK3 = "4FD2ED52-7731-4b8d-9469-03D2CC3086C5";
    {
        fn InitializeForAttach(
            p_cor_profiler_info_unk: *mut c_void,
            pv_client_data: *mut c_void,
            cb_client_data: u32,
        ) -> HResult;
        fn ProfilerAttachComplete() -> HResult;
        fn ProfilerDetachSucceeded() -> HResult;
    }
}

com_interface! {
    /// `ICorProfilerCallback4`: ReJIT and 64-bit GC ranges.
    pub struct ICorProfilerCallback4Vtbl for ICorProfilerCallback4: ICorProfilerCallback3Vtbl;
    /// `{7B63B2E3-107D-4d48-B2F6-F61E229470D2}`.
    pub const IID_ICORPROFILERCALLBACK4 = "7B63B2E3-107D-4d48-B2F6-F61E229470D2";
    {
        fn ReJITCompilationStarted(
            function_id: FunctionID,
            rejit_id: ReJITID,
            is_safe_to_block: i32,
        ) -> HResult;
        /// `p_function_control` is an `ICorProfilerFunctionControl*`, valid during the call.
        fn GetReJITParameters(
            module_id: ModuleID,
            method_id: mdMethodDef,
            p_function_control: *mut c_void,
        ) -> HResult;
        fn ReJITCompilationFinished(
            function_id: FunctionID,
            rejit_id: ReJITID,
            hr_status: HResult,
            is_safe_to_block: i32,
        ) -> HResult;
        fn ReJITError(
            module_id: ModuleID,
            method_id: mdMethodDef,
            function_id: FunctionID,
            hr_status: HResult,
        ) -> HResult;
        fn MovedReferences2(
            c_moved_object_id_ranges: u32,
            old_object_id_range_start: *mut ObjectID,
            new_object_id_range_start: *mut ObjectID,
            c_object_id_range_length: *mut usize,
        ) -> HResult;
        fn SurvivingReferences2(
            c_surviving_object_id_ranges: u32,
            object_id_range_start: *mut ObjectID,
            c_object_id_range_length: *mut usize,
        ) -> HResult;
    }
}

com_interface! {
    /// `ICorProfilerCallback5`: dependent handles.
    pub struct ICorProfilerCallback5Vtbl for ICorProfilerCallback5: ICorProfilerCallback4Vtbl;
    /// `{8DFBA405-8C9F-45F8-BFFA-83B14CEF78B5}`.
    pub const IID_ICORPROFILERCALLBACK5 = "8DFBA405-8C9F-45F8-BFFA-83B14CEF78B5";
    {
        fn ConditionalWeakTableElementReferences(
            c_root_refs: u32,
            key_ref_ids: *mut ObjectID,
            value_ref_ids: *mut ObjectID,
            root_ids: *mut GCHandleID,
        ) -> HResult;
    }
}

com_interface! {
    /// `ICorProfilerCallback6`: assembly references (not called by CoreCLR).
    pub struct ICorProfilerCallback6Vtbl for ICorProfilerCallback6: ICorProfilerCallback5Vtbl;
    /// `{FC13DF4B-4448-4F4F-950C-BA8D19D00C36}`.
    pub const IID_ICORPROFILERCALLBACK6 = "FC13DF4B-4448-4F4F-950C-BA8D19D00C36";
    {
        /// `p_asm_ref_provider` is an `ICorProfilerAssemblyReferenceProvider*`.
        fn GetAssemblyReferences(
            wsz_assembly_path: *const u16,
            p_asm_ref_provider: *mut c_void,
        ) -> HResult;
    }
}

com_interface! {
    /// `ICorProfilerCallback7`: in-memory symbols.
    pub struct ICorProfilerCallback7Vtbl for ICorProfilerCallback7: ICorProfilerCallback6Vtbl;
    /// `{F76A2DBA-1D52-4539-866C-2AA518F9EFC3}`.
    pub const IID_ICORPROFILERCALLBACK7 = "F76A2DBA-1D52-4539-866C-2AA518F9EFC3";
    {
        fn ModuleInMemorySymbolsUpdated(module_id: ModuleID) -> HResult;
    }
}

com_interface! {
    /// `ICorProfilerCallback8`: dynamic methods (IL stubs, LCG).
    pub struct ICorProfilerCallback8Vtbl for ICorProfilerCallback8: ICorProfilerCallback7Vtbl;
    /// `{5BED9B15-C079-4D47-BFE2-215A140C07E0}`.
    pub const IID_ICORPROFILERCALLBACK8 = "5BED9B15-C079-4D47-BFE2-215A140C07E0";
    {
        /// `p_il_header` is valid during the call only.
        fn DynamicMethodJITCompilationStarted(
            function_id: FunctionID,
            is_safe_to_block: i32,
            p_il_header: *const u8,
            cb_il_header: u32,
        ) -> HResult;
        fn DynamicMethodJITCompilationFinished(
            function_id: FunctionID,
            hr_status: HResult,
            is_safe_to_block: i32,
        ) -> HResult;
    }
}

com_interface! {
    /// `ICorProfilerCallback9`: dynamic method unloads. The highest CoreCLR 3.1 uses.
    pub struct ICorProfilerCallback9Vtbl for ICorProfilerCallback9: ICorProfilerCallback8Vtbl;
    /// `{27583EC3-C8F5-482F-8052-194B8CE4705A}`.
    pub const IID_ICORPROFILERCALLBACK9 = "27583EC3-C8F5-482F-8052-194B8CE4705A";
    {
        fn DynamicMethodUnloaded(function_id: FunctionID) -> HResult;
    }
}

com_interface! {
    /// `ICorProfilerCallback10`: EventPipe.
    pub struct ICorProfilerCallback10Vtbl for ICorProfilerCallback10: ICorProfilerCallback9Vtbl;
    /// `{CEC5B60E-C69C-495F-87F6-84D28EE16FFB}`.
    pub const IID_ICORPROFILERCALLBACK10 = "CEC5B60E-C69C-495F-87F6-84D28EE16FFB";
    {
        fn EventPipeEventDelivered(
            provider: EventPipeProvider,
            event_id: u32,
            event_version: u32,
            cb_metadata_blob: u32,
            metadata_blob: *const u8,
            cb_event_data: u32,
            event_data: *const u8,
            p_activity_id: *const Guid,
            p_related_activity_id: *const Guid,
            event_thread: ThreadID,
            num_stack_frames: u32,
            stack_frames: *mut usize,
        ) -> HResult;
        fn EventPipeProviderCreated(provider: EventPipeProvider) -> HResult;
    }
}

com_interface! {
    /// `ICorProfilerCallback11`: notification-only profilers.
    pub struct ICorProfilerCallback11Vtbl for ICorProfilerCallback11: ICorProfilerCallback10Vtbl;
    /// `{42350846-AAED-47F7-B128-FD0C98881CDE}`.
    pub const IID_ICORPROFILERCALLBACK11 = "42350846-AAED-47F7-B128-FD0C98881CDE";
    {
        fn LoadAsNotificationOnly(pb_notification_only: *mut i32) -> HResult;
    }
}

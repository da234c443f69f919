//! `ICorProfilerInfo` .. `ICorProfilerInfo15`, `ICorProfilerFunctionControl` and
//! `IMethodMalloc`: the interfaces the runtime implements for the profiler
//! (`corprof.idl`).
//!
//! Interface pointers (`IUnknown*`, `IMethodMalloc*`, the enumerators, ...) are
//! `*mut c_void`; hook and callback parameters are `Option` of their function type (null
//! to disable).

use core::ffi::c_void;

use super::enums::{CorPrfHandleType, CorPrfRuntimeType, CorPrfStaticType};
use super::guid::Guid;
use super::hresult::HResult;
use super::types::{
    AppDomainID, AssemblyID, ClassID, ContextID, CorDebugIlToNativeMap, CorElementType,
    CorFieldOffset, CorIlMap, CorPrfAssemblyReferenceInfo, CorPrfCodeInfo, CorPrfEltInfo,
    CorPrfEventData, CorPrfEventPipeParamDesc, CorPrfEventPipeProviderConfig, CorPrfExClauseInfo,
    CorPrfFrameInfo, CorPrfFunction, CorPrfFunctionArgumentInfo, CorPrfFunctionArgumentRange,
    CorPrfGcGenerationRange, CorPrfNonGcHeapRange, EventPipeEvent, EventPipeProvider,
    EventPipeProviderCallback, EventPipeSession, FunctionEnter, FunctionEnter2, FunctionEnter3,
    FunctionEnter3WithInfo, FunctionID, FunctionIDMapper, FunctionIDMapper2, FunctionLeave,
    FunctionLeave2, FunctionLeave3, FunctionLeave3WithInfo, FunctionTailcall, FunctionTailcall2,
    FunctionTailcall3, FunctionTailcall3WithInfo, ModuleID, ObjectCallback, ObjectHandleID,
    ObjectID, ObjectReferenceCallback, ProcessID, ReJITID, StackSnapshotCallback, ThreadID,
    mdFieldDef, mdMethodDef, mdToken, mdTypeDef,
};
use super::vtable::{FreeThreaded, IUnknownVtbl, com_interface};

com_interface! {
    /// `ICorProfilerInfo`: the runtime's services to the profiler (33 methods).
    pub struct ICorProfilerInfoVtbl for ICorProfilerInfo: IUnknownVtbl;
    /// `{28B5557D-3F3F-48b4-90B2-5F9EEA2F6C48}`.
    pub const IID_ICORPROFILERINFO = "28B5557D-3F3F-48b4-90B2-5F9EEA2F6C48";
    {
        fn GetClassFromObject(object_id: ObjectID, p_class_id: *mut ClassID) -> HResult;
        fn GetClassFromToken(
            module_id: ModuleID,
            type_def: mdTypeDef,
            p_class_id: *mut ClassID,
        ) -> HResult;
        fn GetCodeInfo(
            function_id: FunctionID,
            p_start: *mut *const u8,
            pc_size: *mut u32,
        ) -> HResult;
        fn GetEventMask(pdw_events: *mut u32) -> HResult;
        fn GetFunctionFromIP(ip: *const u8, p_function_id: *mut FunctionID) -> HResult;
        fn GetFunctionFromToken(
            module_id: ModuleID,
            token: mdToken,
            p_function_id: *mut FunctionID,
        ) -> HResult;
        fn GetHandleFromThread(thread_id: ThreadID, ph_thread: *mut *mut c_void) -> HResult;
        fn GetObjectSize(object_id: ObjectID, pc_size: *mut u32) -> HResult;
        fn IsArrayClass(
            class_id: ClassID,
            p_base_elem_type: *mut CorElementType,
            p_base_class_id: *mut ClassID,
            pc_rank: *mut u32,
        ) -> HResult;
        fn GetThreadInfo(thread_id: ThreadID, pdw_win32_thread_id: *mut u32) -> HResult;
        fn GetCurrentThreadID(p_thread_id: *mut ThreadID) -> HResult;
        fn GetClassIDInfo(
            class_id: ClassID,
            p_module_id: *mut ModuleID,
            p_type_def_token: *mut mdTypeDef,
        ) -> HResult;
        fn GetFunctionInfo(
            function_id: FunctionID,
            p_class_id: *mut ClassID,
            p_module_id: *mut ModuleID,
            p_token: *mut mdToken,
        ) -> HResult;
        fn SetEventMask(dw_events: u32) -> HResult;
        fn SetEnterLeaveFunctionHooks(
            p_func_enter: Option<FunctionEnter>,
            p_func_leave: Option<FunctionLeave>,
            p_func_tailcall: Option<FunctionTailcall>,
        ) -> HResult;
        fn SetFunctionIDMapper(p_func: Option<FunctionIDMapper>) -> HResult;
        fn GetTokenAndMetaDataFromFunction(
            function_id: FunctionID,
            riid: *const Guid,
            pp_import: *mut *mut c_void,
            p_token: *mut mdToken,
        ) -> HResult;
        fn GetModuleInfo(
            module_id: ModuleID,
            pp_base_load_address: *mut *const u8,
            cch_name: u32,
            pcch_name: *mut u32,
            sz_name: *mut u16,
            p_assembly_id: *mut AssemblyID,
        ) -> HResult;
        /// `dw_open_flags`: `ofRead` (0) or `ofWrite` (1); `riid` the metadata interface.
        fn GetModuleMetaData(
            module_id: ModuleID,
            dw_open_flags: u32,
            riid: *const Guid,
            pp_out: *mut *mut c_void,
        ) -> HResult;
        fn GetILFunctionBody(
            module_id: ModuleID,
            method_id: mdMethodDef,
            pp_method_header: *mut *const u8,
            pcb_method_size: *mut u32,
        ) -> HResult;
        /// `pp_malloc` receives an `IMethodMalloc*`.
        fn GetILFunctionBodyAllocator(module_id: ModuleID, pp_malloc: *mut *mut c_void) -> HResult;
        fn SetILFunctionBody(
            module_id: ModuleID,
            method_id: mdMethodDef,
            pb_new_il_method_header: *const u8,
        ) -> HResult;
        fn GetAppDomainInfo(
            app_domain_id: AppDomainID,
            cch_name: u32,
            pcch_name: *mut u32,
            sz_name: *mut u16,
            p_process_id: *mut ProcessID,
        ) -> HResult;
        fn GetAssemblyInfo(
            assembly_id: AssemblyID,
            cch_name: u32,
            pcch_name: *mut u32,
            sz_name: *mut u16,
            p_app_domain_id: *mut AppDomainID,
            p_module_id: *mut ModuleID,
        ) -> HResult;
        fn SetFunctionReJIT(function_id: FunctionID) -> HResult;
        fn ForceGC() -> HResult;
        fn SetILInstrumentedCodeMap(
            function_id: FunctionID,
            start_jit: i32,
            c_il_map_entries: u32,
            rg_il_map_entries: *mut CorIlMap,
        ) -> HResult;
        fn GetInprocInspectionInterface(ppicd: *mut *mut c_void) -> HResult;
        fn GetInprocInspectionIThisThread(ppicd: *mut *mut c_void) -> HResult;
        fn GetThreadContext(thread_id: ThreadID, p_context_id: *mut ContextID) -> HResult;
        fn BeginInprocDebugging(this_thread_only: i32, pdw_profiler_context: *mut u32) -> HResult;
        fn EndInprocDebugging(dw_profiler_context: u32) -> HResult;
        fn GetILToNativeMapping(
            function_id: FunctionID,
            c_map: u32,
            pc_map: *mut u32,
            map: *mut CorDebugIlToNativeMap,
        ) -> HResult;
    }
}

com_interface! {
    /// `ICorProfilerInfo2`: stack snapshots, generics, statics, GC layout (V2.0).
    pub struct ICorProfilerInfo2Vtbl for ICorProfilerInfo2: ICorProfilerInfoVtbl;
    /// `{CC0935CD-A518-487d-B0BB-A93214E65478}`.
    pub const IID_ICORPROFILERINFO2 = "CC0935CD-A518-487d-B0BB-A93214E65478";
    {
        fn DoStackSnapshot(
            thread: ThreadID,
            callback: Option<StackSnapshotCallback>,
            info_flags: u32,
            client_data: *mut c_void,
            context: *mut u8,
            context_size: u32,
        ) -> HResult;
        fn SetEnterLeaveFunctionHooks2(
            p_func_enter: Option<FunctionEnter2>,
            p_func_leave: Option<FunctionLeave2>,
            p_func_tailcall: Option<FunctionTailcall2>,
        ) -> HResult;
        fn GetFunctionInfo2(
            func_id: FunctionID,
            frame_info: CorPrfFrameInfo,
            p_class_id: *mut ClassID,
            p_module_id: *mut ModuleID,
            p_token: *mut mdToken,
            c_type_args: u32,
            pc_type_args: *mut u32,
            type_args: *mut ClassID,
        ) -> HResult;
        fn GetStringLayout(
            p_buffer_length_offset: *mut u32,
            p_string_length_offset: *mut u32,
            p_buffer_offset: *mut u32,
        ) -> HResult;
        fn GetClassLayout(
            class_id: ClassID,
            r_field_offset: *mut CorFieldOffset,
            c_field_offset: u32,
            pc_field_offset: *mut u32,
            pul_class_size: *mut u32,
        ) -> HResult;
        fn GetClassIDInfo2(
            class_id: ClassID,
            p_module_id: *mut ModuleID,
            p_type_def_token: *mut mdTypeDef,
            p_parent_class_id: *mut ClassID,
            c_num_type_args: u32,
            pc_num_type_args: *mut u32,
            type_args: *mut ClassID,
        ) -> HResult;
        fn GetCodeInfo2(
            function_id: FunctionID,
            c_code_infos: u32,
            pc_code_infos: *mut u32,
            code_infos: *mut CorPrfCodeInfo,
        ) -> HResult;
        fn GetClassFromTokenAndTypeArgs(
            module_id: ModuleID,
            type_def: mdTypeDef,
            c_type_args: u32,
            type_args: *mut ClassID,
            p_class_id: *mut ClassID,
        ) -> HResult;
        fn GetFunctionFromTokenAndTypeArgs(
            module_id: ModuleID,
            func_def: mdMethodDef,
            class_id: ClassID,
            c_type_args: u32,
            type_args: *mut ClassID,
            p_function_id: *mut FunctionID,
        ) -> HResult;
        /// `pp_enum` receives an `ICorProfilerObjectEnum*`.
        fn EnumModuleFrozenObjects(module_id: ModuleID, pp_enum: *mut *mut c_void) -> HResult;
        fn GetArrayObjectInfo(
            object_id: ObjectID,
            c_dimensions: u32,
            p_dimension_sizes: *mut u32,
            p_dimension_lower_bounds: *mut i32,
            pp_data: *mut *mut u8,
        ) -> HResult;
        fn GetBoxClassLayout(class_id: ClassID, p_buffer_offset: *mut u32) -> HResult;
        fn GetThreadAppDomain(thread_id: ThreadID, p_app_domain_id: *mut AppDomainID) -> HResult;
        fn GetRVAStaticAddress(
            class_id: ClassID,
            field_token: mdFieldDef,
            pp_address: *mut *mut c_void,
        ) -> HResult;
        fn GetAppDomainStaticAddress(
            class_id: ClassID,
            field_token: mdFieldDef,
            app_domain_id: AppDomainID,
            pp_address: *mut *mut c_void,
        ) -> HResult;
        fn GetThreadStaticAddress(
            class_id: ClassID,
            field_token: mdFieldDef,
            thread_id: ThreadID,
            pp_address: *mut *mut c_void,
        ) -> HResult;
        fn GetContextStaticAddress(
            class_id: ClassID,
            field_token: mdFieldDef,
            context_id: ContextID,
            pp_address: *mut *mut c_void,
        ) -> HResult;
        fn GetStaticFieldInfo(
            class_id: ClassID,
            field_token: mdFieldDef,
            p_field_info: *mut CorPrfStaticType,
        ) -> HResult;
        fn GetGenerationBounds(
            c_object_ranges: u32,
            pc_object_ranges: *mut u32,
            ranges: *mut CorPrfGcGenerationRange,
        ) -> HResult;
        fn GetObjectGeneration(object_id: ObjectID, range: *mut CorPrfGcGenerationRange) -> HResult;
        fn GetNotifiedExceptionClauseInfo(pinfo: *mut CorPrfExClauseInfo) -> HResult;
    }
}

com_interface! {
    /// `ICorProfilerInfo3`: enumerations, attach/detach, the `...3` hooks.
    pub struct ICorProfilerInfo3Vtbl for ICorProfilerInfo3: ICorProfilerInfo2Vtbl;
    /// `{B555ED4F-452A-4E54-8B39-B5360BAD32A0}`.
    pub const IID_ICORPROFILERINFO3 = "B555ED4F-452A-4E54-8B39-B5360BAD32A0";
    {
        /// `pp_enum` receives an `ICorProfilerFunctionEnum*`.
        fn EnumJITedFunctions(pp_enum: *mut *mut c_void) -> HResult;
        fn RequestProfilerDetach(dw_expected_completion_milliseconds: u32) -> HResult;
        fn SetFunctionIDMapper2(
            p_func: Option<FunctionIDMapper2>,
            client_data: *mut c_void,
        ) -> HResult;
        fn GetStringLayout2(p_string_length_offset: *mut u32, p_buffer_offset: *mut u32) -> HResult;
        fn SetEnterLeaveFunctionHooks3(
            p_func_enter3: Option<FunctionEnter3>,
            p_func_leave3: Option<FunctionLeave3>,
            p_func_tailcall3: Option<FunctionTailcall3>,
        ) -> HResult;
        fn SetEnterLeaveFunctionHooks3WithInfo(
            p_func_enter3_with_info: Option<FunctionEnter3WithInfo>,
            p_func_leave3_with_info: Option<FunctionLeave3WithInfo>,
            p_func_tailcall3_with_info: Option<FunctionTailcall3WithInfo>,
        ) -> HResult;
        fn GetFunctionEnter3Info(
            function_id: FunctionID,
            elt_info: CorPrfEltInfo,
            p_frame_info: *mut CorPrfFrameInfo,
            pcb_argument_info: *mut u32,
            p_argument_info: *mut CorPrfFunctionArgumentInfo,
        ) -> HResult;
        fn GetFunctionLeave3Info(
            function_id: FunctionID,
            elt_info: CorPrfEltInfo,
            p_frame_info: *mut CorPrfFrameInfo,
            p_retval_range: *mut CorPrfFunctionArgumentRange,
        ) -> HResult;
        fn GetFunctionTailcall3Info(
            function_id: FunctionID,
            elt_info: CorPrfEltInfo,
            p_frame_info: *mut CorPrfFrameInfo,
        ) -> HResult;
        /// `pp_enum` receives an `ICorProfilerModuleEnum*`.
        fn EnumModules(pp_enum: *mut *mut c_void) -> HResult;
        fn GetRuntimeInformation(
            p_clr_instance_id: *mut u16,
            p_runtime_type: *mut CorPrfRuntimeType,
            p_major_version: *mut u16,
            p_minor_version: *mut u16,
            p_build_number: *mut u16,
            p_qfe_version: *mut u16,
            cch_version_string: u32,
            pcch_version_string: *mut u32,
            sz_version_string: *mut u16,
        ) -> HResult;
        fn GetThreadStaticAddress2(
            class_id: ClassID,
            field_token: mdFieldDef,
            app_domain_id: AppDomainID,
            thread_id: ThreadID,
            pp_address: *mut *mut c_void,
        ) -> HResult;
        fn GetAppDomainsContainingModule(
            module_id: ModuleID,
            c_app_domain_ids: u32,
            pc_app_domain_ids: *mut u32,
            app_domain_ids: *mut AppDomainID,
        ) -> HResult;
        /// `pdw_module_flags` receives `COR_PRF_MODULE_FLAGS` bits.
        fn GetModuleInfo2(
            module_id: ModuleID,
            pp_base_load_address: *mut *const u8,
            cch_name: u32,
            pcch_name: *mut u32,
            sz_name: *mut u16,
            p_assembly_id: *mut AssemblyID,
            pdw_module_flags: *mut u32,
        ) -> HResult;
    }
}

com_interface! {
    /// `IMethodMalloc`: the deprecated allocator for `SetILFunctionBody` (any allocator
    /// works now).
    pub struct IMethodMallocVtbl for IMethodMalloc: IUnknownVtbl;
    /// `{A0EFB28B-6EE2-4d7b-B983-A75EF7BEEDB8}`.
    pub const IID_IMETHODMALLOC = "A0EFB28B-6EE2-4d7b-B983-A75EF7BEEDB8";
    {
        /// Returns the memory (never freed), or null.
        fn Alloc(cb: u32) -> *mut c_void;
    }
}

com_interface! {
    /// `ICorProfilerAssemblyReferenceProvider`: given to `GetAssemblyReferences`, to
    /// announce the assembly references a profiler will add to an assembly's modules.
    pub struct ICorProfilerAssemblyReferenceProviderVtbl for ICorProfilerAssemblyReferenceProvider: IUnknownVtbl;
    /// `{66A78C24-2EEF-4F65-B45F-DD1D8038BF3C}`.
    pub const IID_ICORPROFILERASSEMBLYREFERENCEPROVIDER = "66A78C24-2EEF-4F65-B45F-DD1D8038BF3C";
    {
        /// The reference is read during the call only.
        fn AddAssemblyReference(info: *const CorPrfAssemblyReferenceInfo) -> HResult;
    }
}

com_interface! {
    /// `ICorProfilerFunctionControl`: given to `GetReJITParameters` to set the new body
    /// and code generation flags of a re-JITed method.
    pub struct ICorProfilerFunctionControlVtbl for ICorProfilerFunctionControl: IUnknownVtbl;
    /// `{F0963021-E1EA-4732-8581-E01B0BD3C0C6}`.
    pub const IID_ICORPROFILERFUNCTIONCONTROL = "F0963021-E1EA-4732-8581-E01B0BD3C0C6";
    {
        /// `flags`: `COR_PRF_CODEGEN_FLAGS` bits (see [`CorPrfCodegenFlags`](super::enums::CorPrfCodegenFlags)).
        fn SetCodegenFlags(flags: u32) -> HResult;
        fn SetILFunctionBody(
            cb_new_il_method_header: u32,
            pb_new_il_method_header: *const u8,
        ) -> HResult;
        /// Implemented by CoreCLR (copied; `CORPROF_E_DEBUGGING_DISABLED` without a
        /// debugger interface); the .NET Framework 4.5 documented it as not implemented.
        fn SetILInstrumentedCodeMap(
            c_il_map_entries: u32,
            rg_il_map_entries: *mut CorIlMap,
        ) -> HResult;
    }
}

com_interface! {
    /// `ICorProfilerInfo4`: ReJIT.
    pub struct ICorProfilerInfo4Vtbl for ICorProfilerInfo4: ICorProfilerInfo3Vtbl;
    /// `{0d8fdcaa-6257-47bf-b1bf-94dac88466ee}`.
    pub const IID_ICORPROFILERINFO4 = "0d8fdcaa-6257-47bf-b1bf-94dac88466ee";
    {
        /// `pp_enum` receives an `ICorProfilerThreadEnum*`.
        fn EnumThreads(pp_enum: *mut *mut c_void) -> HResult;
        fn InitializeCurrentThread() -> HResult;
        fn RequestReJIT(
            c_functions: u32,
            module_ids: *mut ModuleID,
            method_ids: *mut mdMethodDef,
        ) -> HResult;
        fn RequestRevert(
            c_functions: u32,
            module_ids: *mut ModuleID,
            method_ids: *mut mdMethodDef,
            status: *mut HResult,
        ) -> HResult;
        fn GetCodeInfo3(
            function_id: FunctionID,
            rejit_id: ReJITID,
            c_code_infos: u32,
            pc_code_infos: *mut u32,
            code_infos: *mut CorPrfCodeInfo,
        ) -> HResult;
        fn GetFunctionFromIP2(
            ip: *const u8,
            p_function_id: *mut FunctionID,
            p_rejit_id: *mut ReJITID,
        ) -> HResult;
        fn GetReJITIDs(
            function_id: FunctionID,
            c_rejit_ids: u32,
            pc_rejit_ids: *mut u32,
            rejit_ids: *mut ReJITID,
        ) -> HResult;
        fn GetILToNativeMapping2(
            function_id: FunctionID,
            rejit_id: ReJITID,
            c_map: u32,
            pc_map: *mut u32,
            map: *mut CorDebugIlToNativeMap,
        ) -> HResult;
        /// `pp_enum` receives an `ICorProfilerFunctionEnum*`.
        fn EnumJITedFunctions2(pp_enum: *mut *mut c_void) -> HResult;
        fn GetObjectSize2(object_id: ObjectID, pc_size: *mut usize) -> HResult;
    }
}

com_interface! {
    /// `ICorProfilerInfo5`: the 64-bit event mask.
    pub struct ICorProfilerInfo5Vtbl for ICorProfilerInfo5: ICorProfilerInfo4Vtbl;
    /// `{07602928-CE38-4B83-81E7-74ADAF781214}`.
    pub const IID_ICORPROFILERINFO5 = "07602928-CE38-4B83-81E7-74ADAF781214";
    {
        fn GetEventMask2(pdw_events_low: *mut u32, pdw_events_high: *mut u32) -> HResult;
        /// `COR_PRF_MONITOR` and `COR_PRF_HIGH_MONITOR` bits (see [`CorPrfMonitor`](super::enums::CorPrfMonitor),
        /// [`CorPrfHighMonitor`](super::enums::CorPrfHighMonitor)).
        fn SetEventMask2(dw_events_low: u32, dw_events_high: u32) -> HResult;
    }
}

com_interface! {
    /// `ICorProfilerInfo6`: inliners in native images.
    pub struct ICorProfilerInfo6Vtbl for ICorProfilerInfo6: ICorProfilerInfo5Vtbl;
    /// `{F30A070D-BFFB-46A7-B1D8-8781EF7B698A}`.
    pub const IID_ICORPROFILERINFO6 = "F30A070D-BFFB-46A7-B1D8-8781EF7B698A";
    {
        /// `pp_enum` receives an `ICorProfilerMethodEnum*`.
        fn EnumNgenModuleMethodsInliningThisMethod(
            inliners_module_id: ModuleID,
            inlinee_module_id: ModuleID,
            inlinee_method_id: mdMethodDef,
            incomplete_data: *mut i32,
            pp_enum: *mut *mut c_void,
        ) -> HResult;
    }
}

com_interface! {
    /// `ICorProfilerInfo7`: applying emitted metadata, in-memory symbols.
    pub struct ICorProfilerInfo7Vtbl for ICorProfilerInfo7: ICorProfilerInfo6Vtbl;
    /// `{9AEECC0D-63E0-4187-8C00-E312F503F663}`.
    pub const IID_ICORPROFILERINFO7 = "9AEECC0D-63E0-4187-8C00-E312F503F663";
    {
        fn ApplyMetaData(module_id: ModuleID) -> HResult;
        fn GetInMemorySymbolsLength(module_id: ModuleID, p_count_symbol_bytes: *mut u32) -> HResult;
        fn ReadInMemorySymbols(
            module_id: ModuleID,
            symbols_read_offset: u32,
            p_symbol_bytes: *mut u8,
            count_symbol_bytes: u32,
            p_count_symbol_bytes_read: *mut u32,
        ) -> HResult;
    }
}

com_interface! {
    /// `ICorProfilerInfo8`: dynamic methods.
    pub struct ICorProfilerInfo8Vtbl for ICorProfilerInfo8: ICorProfilerInfo7Vtbl;
    /// `{C5AC80A6-782E-4716-8044-39598C60CFBF}`.
    pub const IID_ICORPROFILERINFO8 = "C5AC80A6-782E-4716-8044-39598C60CFBF";
    {
        fn IsFunctionDynamic(function_id: FunctionID, is_dynamic: *mut i32) -> HResult;
        fn GetFunctionFromIP3(
            ip: *const u8,
            function_id: *mut FunctionID,
            p_rejit_id: *mut ReJITID,
        ) -> HResult;
        fn GetDynamicFunctionInfo(
            function_id: FunctionID,
            module_id: *mut ModuleID,
            ppv_sig: *mut *const u8,
            pb_sig: *mut u32,
            cch_name: u32,
            pcch_name: *mut u32,
            wsz_name: *mut u16,
        ) -> HResult;
    }
}

com_interface! {
    /// `ICorProfilerInfo9`: native code versions.
    pub struct ICorProfilerInfo9Vtbl for ICorProfilerInfo9: ICorProfilerInfo8Vtbl;
    /// `{008170DB-F8CC-4796-9A51-DC8AA0B47012}`.
    pub const IID_ICORPROFILERINFO9 = "008170DB-F8CC-4796-9A51-DC8AA0B47012";
    {
        fn GetNativeCodeStartAddresses(
            function_id: FunctionID,
            rejit_id: ReJITID,
            c_code_start_addresses: u32,
            pc_code_start_addresses: *mut u32,
            code_start_addresses: *mut usize,
        ) -> HResult;
        fn GetILToNativeMapping3(
            p_native_code_start_address: usize,
            c_map: u32,
            pc_map: *mut u32,
            map: *mut CorDebugIlToNativeMap,
        ) -> HResult;
        fn GetCodeInfo4(
            p_native_code_start_address: usize,
            c_code_infos: u32,
            pc_code_infos: *mut u32,
            code_infos: *mut CorPrfCodeInfo,
        ) -> HResult;
    }
}

com_interface! {
    /// `ICorProfilerInfo10`: object references, suspension, ReJIT with inliners.
    pub struct ICorProfilerInfo10Vtbl for ICorProfilerInfo10: ICorProfilerInfo9Vtbl;
    /// `{2F1B5152-C869-40C9-AA5F-3ABE026BD720}`.
    pub const IID_ICORPROFILERINFO10 = "2F1B5152-C869-40C9-AA5F-3ABE026BD720";
    {
        fn EnumerateObjectReferences(
            object_id: ObjectID,
            callback: Option<ObjectReferenceCallback>,
            client_data: *mut c_void,
        ) -> HResult;
        fn IsFrozenObject(object_id: ObjectID, pb_frozen: *mut i32) -> HResult;
        fn GetLOHObjectSizeThreshold(p_threshold: *mut u32) -> HResult;
        /// `dw_rejit_flags`: `COR_PRF_REJIT_FLAGS` bits.
        fn RequestReJITWithInliners(
            dw_rejit_flags: u32,
            c_functions: u32,
            module_ids: *mut ModuleID,
            method_ids: *mut mdMethodDef,
        ) -> HResult;
        fn SuspendRuntime() -> HResult;
        fn ResumeRuntime() -> HResult;
    }
}

com_interface! {
    /// `ICorProfilerInfo11`: environment variables. The highest CoreCLR 3.1 answers.
    pub struct ICorProfilerInfo11Vtbl for ICorProfilerInfo11: ICorProfilerInfo10Vtbl;
    /// `{06398876-8987-4154-B621-40A00D6E4D04}`.
    pub const IID_ICORPROFILERINFO11 = "06398876-8987-4154-B621-40A00D6E4D04";
    {
        fn GetEnvironmentVariable(
            sz_name: *const u16,
            cch_value: u32,
            pcch_value: *mut u32,
            sz_value: *mut u16,
        ) -> HResult;
        /// `sz_value` null deletes the variable.
        fn SetEnvironmentVariable(sz_name: *const u16, sz_value: *const u16) -> HResult;
    }
}

com_interface! {
    /// `ICorProfilerInfo12`: EventPipe sessions and providers.
    pub struct ICorProfilerInfo12Vtbl for ICorProfilerInfo12: ICorProfilerInfo11Vtbl;
    /// `{27b24ccd-1cb1-47c5-96ee-98190dc30959}`.
    pub const IID_ICORPROFILERINFO12 = "27b24ccd-1cb1-47c5-96ee-98190dc30959";
    {
        fn EventPipeStartSession(
            c_provider_configs: u32,
            p_provider_configs: *mut CorPrfEventPipeProviderConfig,
            request_rundown: i32,
            p_session: *mut EventPipeSession,
        ) -> HResult;
        fn EventPipeAddProviderToSession(
            session: EventPipeSession,
            provider_config: CorPrfEventPipeProviderConfig,
        ) -> HResult;
        fn EventPipeStopSession(session: EventPipeSession) -> HResult;
        fn EventPipeCreateProvider(
            provider_name: *const u16,
            p_provider: *mut EventPipeProvider,
        ) -> HResult;
        fn EventPipeGetProviderInfo(
            provider: EventPipeProvider,
            cch_name: u32,
            pcch_name: *mut u32,
            provider_name: *mut u16,
        ) -> HResult;
        fn EventPipeDefineEvent(
            provider: EventPipeProvider,
            event_name: *const u16,
            event_id: u32,
            keywords: u64,
            event_version: u32,
            level: u32,
            opcode: u8,
            need_stack: i32,
            c_param_descs: u32,
            p_param_descs: *mut CorPrfEventPipeParamDesc,
            p_event: *mut EventPipeEvent,
        ) -> HResult;
        fn EventPipeWriteEvent(
            event: EventPipeEvent,
            c_data: u32,
            data: *mut CorPrfEventData,
            p_activity_id: *const Guid,
            p_related_activity_id: *const Guid,
        ) -> HResult;
    }
}

com_interface! {
    /// `ICorProfilerInfo13`: GC handles.
    pub struct ICorProfilerInfo13Vtbl for ICorProfilerInfo13: ICorProfilerInfo12Vtbl;
    /// `{6E6C7EE2-0701-4EC2-9D29-2E8733B66934}`.
    pub const IID_ICORPROFILERINFO13 = "6E6C7EE2-0701-4EC2-9D29-2E8733B66934";
    {
        fn CreateHandle(
            object: ObjectID,
            handle_type: CorPrfHandleType,
            p_handle: *mut ObjectHandleID,
        ) -> HResult;
        fn DestroyHandle(handle: ObjectHandleID) -> HResult;
        fn GetObjectIDFromHandle(handle: ObjectHandleID, p_object: *mut ObjectID) -> HResult;
    }
}

com_interface! {
    /// `ICorProfilerInfo14`: the non-GC heap, provider callbacks.
    pub struct ICorProfilerInfo14Vtbl for ICorProfilerInfo14: ICorProfilerInfo13Vtbl;
    /// `{F460E352-D76D-4FE9-835F-F6AF9D6E862D}`.
    pub const IID_ICORPROFILERINFO14 = "F460E352-D76D-4FE9-835F-F6AF9D6E862D";
    {
        /// `pp_enum` receives an `ICorProfilerObjectEnum*`.
        fn EnumerateNonGCObjects(pp_enum: *mut *mut c_void) -> HResult;
        fn GetNonGCHeapBounds(
            c_object_ranges: u32,
            pc_object_ranges: *mut u32,
            ranges: *mut CorPrfNonGcHeapRange,
        ) -> HResult;
        fn EventPipeCreateProvider2(
            provider_name: *const u16,
            p_callback: Option<EventPipeProviderCallback>,
            p_provider: *mut EventPipeProvider,
        ) -> HResult;
    }
}

com_interface! {
    /// `ICorProfilerInfo15`: walking the GC heap.
    pub struct ICorProfilerInfo15Vtbl for ICorProfilerInfo15: ICorProfilerInfo14Vtbl;
    /// `{B446462D-BD22-41DD-872D-DC714C49EB56}`.
    pub const IID_ICORPROFILERINFO15 = "B446462D-BD22-41DD-872D-DC714C49EB56";
    {
        fn EnumerateGCHeapObjects(
            callback: Option<ObjectCallback>,
            callback_state: *mut c_void,
        ) -> HResult;
    }
}

com_interface! {
    /// `ICorProfilerModuleEnum`: the modules loaded (`EnumModules`).
    pub struct ICorProfilerModuleEnumVtbl for ICorProfilerModuleEnum: IUnknownVtbl;
    /// `{b0266d75-2081-4493-af7f-028ba34db891}`.
    pub const IID_ICORPROFILERMODULEENUM = "b0266d75-2081-4493-af7f-028ba34db891";
    {
        fn Skip(celt: u32) -> HResult;
        fn Reset() -> HResult;
        fn Clone(pp_enum: *mut *mut c_void) -> HResult;
        fn GetCount(pcelt: *mut u32) -> HResult;
        fn Next(celt: u32, ids: *mut ModuleID, pcelt_fetched: *mut u32) -> HResult;
    }
}

com_interface! {
    /// `ICorProfilerFunctionEnum`: the functions compiled (`EnumJITedFunctions2`).
    pub struct ICorProfilerFunctionEnumVtbl for ICorProfilerFunctionEnum: IUnknownVtbl;
    /// `{ff71301a-b994-429d-a10b-b345a65280ef}`.
    pub const IID_ICORPROFILERFUNCTIONENUM = "ff71301a-b994-429d-a10b-b345a65280ef";
    {
        fn Skip(celt: u32) -> HResult;
        fn Reset() -> HResult;
        fn Clone(pp_enum: *mut *mut c_void) -> HResult;
        fn GetCount(pcelt: *mut u32) -> HResult;
        fn Next(celt: u32, ids: *mut CorPrfFunction, pcelt_fetched: *mut u32) -> HResult;
    }
}

/// Implements [`FreeThreaded`] for vtables whose source is given in the comment above the
/// invocation.
macro_rules! free_threaded {
    ($($vtbl:ty),* $(,)?) => {
        // SAFETY: see the comment above the invocation.
        $(unsafe impl FreeThreaded for $vtbl {})*
    };
}

// What the runtime says of these interfaces' threading. corprof.idl (the runtime's
// src/coreclr/inc/corprof.idl, which tests/data/clr/README.md cites; line numbers from
// the same text in dotnet/diagnostics src/shared/inc/corprof.idl at 3c9f99e8):
// "The ICorProfilerInfo interface implemented by the CLR uses the free threaded model."
// (lines 2668-2669), the same sentence for ICorProfilerInfo2 (3095-3096),
// ICorProfilerInfo3 (3488-3489) and ICorProfilerInfo4 (3822-3823), and "The
// ICorProfilerFunctionControl interface implemented by the CLR uses the free threaded
// model." (3778-3779). ICorProfilerInfo5 .. 15 carry no comment of their own; each
// extends the one before, and one object implements them all (a single class,
// `ProfToEEInterfaceImpl : public ICorProfilerInfoN`, in the runtime's
// src/coreclr/vm/proftoeeinterfaceimpl.h), so their model is that object's.
// IMethodMalloc's comment says nothing of threads: not here.
free_threaded!(
    ICorProfilerInfoVtbl,
    ICorProfilerInfo2Vtbl,
    ICorProfilerInfo3Vtbl,
    ICorProfilerInfo4Vtbl,
    ICorProfilerInfo5Vtbl,
    ICorProfilerInfo6Vtbl,
    ICorProfilerInfo7Vtbl,
    ICorProfilerInfo8Vtbl,
    ICorProfilerInfo9Vtbl,
    ICorProfilerInfo10Vtbl,
    ICorProfilerInfo11Vtbl,
    ICorProfilerInfo12Vtbl,
    ICorProfilerInfo13Vtbl,
    ICorProfilerInfo14Vtbl,
    ICorProfilerInfo15Vtbl,
    ICorProfilerFunctionControlVtbl,
);

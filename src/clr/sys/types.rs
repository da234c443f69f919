//! The scalar types, structures and callback signatures of `corprof.idl` and `cor.h`.
//!
//! Runtime ids (`FunctionID`, `ModuleID`, ...) are pointer-sized (`UINT_PTR`); metadata
//! tokens (`mdToken`, `mdMethodDef`, ...) are 32-bit. Other C types are spelled as Rust
//! primitives in the vtables: `ULONG`/`ULONG32`/`DWORD`/`UINT` `u32`, `BOOL` `i32`,
//! `WCHAR` `u16` (UTF-16 on every platform), `BYTE` `u8`, `UINT_PTR`/`SIZE_T` `usize`,
//! `USHORT` `u16`, interface pointers `*mut c_void`.
#![allow(non_camel_case_types)]

use core::ffi::c_void;

use super::enums::{CorPrfClauseType, CorPrfGcGeneration};
use super::hresult::HResult;
use crate::ilmap::IlMapEntry;

/// `ProcessID`.
pub type ProcessID = usize;
/// `AssemblyID`.
pub type AssemblyID = usize;
/// `AppDomainID`.
pub type AppDomainID = usize;
/// `ModuleID`.
pub type ModuleID = usize;
/// `ClassID`.
pub type ClassID = usize;
/// `ThreadID`.
pub type ThreadID = usize;
/// `ContextID`.
pub type ContextID = usize;
/// `FunctionID`.
pub type FunctionID = usize;
/// `ObjectID`: the address of a managed object.
pub type ObjectID = usize;
/// `GCHandleID`.
pub type GCHandleID = usize;
/// `ReJITID`: 0 for the original code, else one re-JITed version.
pub type ReJITID = usize;
/// `COR_PRF_ELT_INFO`: opaque frame information passed to the `...3WithInfo` hooks.
pub type CorPrfEltInfo = usize;
/// `COR_PRF_FRAME_INFO`: opaque frame information, valid during one callback.
pub type CorPrfFrameInfo = usize;
/// `ObjectHandleID` (`void**`), from `ICorProfilerInfo13::CreateHandle`.
pub type ObjectHandleID = *mut *mut c_void;
/// `EVENTPIPE_PROVIDER`.
pub type EventPipeProvider = usize;
/// `EVENTPIPE_EVENT`.
pub type EventPipeEvent = usize;
/// `EVENTPIPE_SESSION`.
pub type EventPipeSession = u64;
/// `HCORENUM`: a metadata enumeration cursor; null to start, `CloseEnum` to free.
pub type HCorEnum = *mut c_void;
/// `CorElementType` (`ELEMENT_TYPE_*`).
pub type CorElementType = u32;
/// `CorSaveSize` (`cssAccurate` = 0, `cssQuick` = 1, `cssDiscardTransientCAs` = 2).
pub type CorSaveSize = u32;

/// `mdToken`: a metadata token (table in the high byte, row in the low 24 bits).
pub type mdToken = u32;
/// `mdModule` (table 0x00).
pub type mdModule = mdToken;
/// `mdTypeRef` (table 0x01).
pub type mdTypeRef = mdToken;
/// `mdTypeDef` (table 0x02).
pub type mdTypeDef = mdToken;
/// `mdFieldDef` (table 0x04).
pub type mdFieldDef = mdToken;
/// `mdMethodDef` (table 0x06).
pub type mdMethodDef = mdToken;
/// `mdParamDef` (table 0x08).
pub type mdParamDef = mdToken;
/// `mdInterfaceImpl` (table 0x09).
pub type mdInterfaceImpl = mdToken;
/// `mdMemberRef` (table 0x0A).
pub type mdMemberRef = mdToken;
/// `mdCustomAttribute` (table 0x0C).
pub type mdCustomAttribute = mdToken;
/// `mdPermission` (table 0x0E).
pub type mdPermission = mdToken;
/// `mdSignature` (table 0x11, StandAloneSig).
pub type mdSignature = mdToken;
/// `mdEvent` (table 0x14).
pub type mdEvent = mdToken;
/// `mdProperty` (table 0x17).
pub type mdProperty = mdToken;
/// `mdModuleRef` (table 0x1A).
pub type mdModuleRef = mdToken;
/// `mdTypeSpec` (table 0x1B).
pub type mdTypeSpec = mdToken;
/// `mdAssembly` (table 0x20).
pub type mdAssembly = mdToken;
/// `mdAssemblyRef` (table 0x23).
pub type mdAssemblyRef = mdToken;
/// `mdFile` (table 0x26).
pub type mdFile = mdToken;
/// `mdExportedType` (table 0x27).
pub type mdExportedType = mdToken;
/// `mdManifestResource` (table 0x28).
pub type mdManifestResource = mdToken;
/// `mdGenericParam` (table 0x2A).
pub type mdGenericParam = mdToken;
/// `mdMethodSpec` (table 0x2B).
pub type mdMethodSpec = mdToken;
/// `mdGenericParamConstraint` (table 0x2C).
pub type mdGenericParamConstraint = mdToken;
/// `mdString` (user-string heap, 0x70).
pub type mdString = mdToken;

/// `FunctionIDOrClientID`: what the `...3` hooks receive, the `FunctionID` or the value a
/// `FunctionIDMapper` returned for it.
#[repr(C)]
#[derive(Clone, Copy)]
pub union FunctionIDOrClientID {
    /// `functionID`.
    pub function_id: FunctionID,
    /// `clientID`.
    pub client_id: usize,
}

impl std::fmt::Debug for FunctionIDOrClientID {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // SAFETY: both fields are `usize` (`FunctionID` is `UINT_PTR`), so every bit
        // pattern of the union is a valid value of either; reading one is a plain copy.
        let value = unsafe { self.client_id };
        write!(f, "FunctionIDOrClientID({value:#x})")
    }
}

/// `COR_IL_MAP`: one old -> new IL offset pair for `SetILInstrumentedCodeMap`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct CorIlMap {
    /// `oldOffset`: offset in the original IL.
    pub old_offset: u32,
    /// `newOffset`: offset in the instrumented IL.
    pub new_offset: u32,
    /// `fAccurate` (`BOOL`).
    pub accurate: i32,
}

impl From<IlMapEntry> for CorIlMap {
    fn from(entry: IlMapEntry) -> CorIlMap {
        CorIlMap {
            old_offset: entry.old_offset,
            new_offset: entry.new_offset,
            accurate: i32::from(entry.accurate),
        }
    }
}

/// `COR_DEBUG_IL_TO_NATIVE_MAP`: one IL offset's native range.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct CorDebugIlToNativeMap {
    /// `ilOffset`, or one of `NO_MAPPING`, `PROLOG`, `EPILOG` (see
    /// [`super::enums::COR_DEBUG_IL_TO_NATIVE_MAPPING_TYPES`]).
    pub il_offset: u32,
    /// `nativeStartOffset`.
    pub native_start_offset: u32,
    /// `nativeEndOffset`.
    pub native_end_offset: u32,
}

/// `COR_FIELD_OFFSET`: a field and its offset in an object.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct CorFieldOffset {
    /// `ridOfField`: the field's `FieldDef` token.
    pub rid_of_field: mdFieldDef,
    /// `ulOffset`: offset from the `ObjectID`.
    pub offset: u32,
}

/// `COR_PRF_FUNCTION_ARGUMENT_RANGE`: arguments stored contiguously in memory.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct CorPrfFunctionArgumentRange {
    /// `startAddress`.
    pub start_address: usize,
    /// `length` in bytes.
    pub length: u32,
}

/// `COR_PRF_FUNCTION_ARGUMENT_INFO`: where a function's arguments are, left to right.
///
/// A C variable-length structure: `ranges` is declared with one element and the runtime
/// writes `num_ranges` of them; the caller sizes the buffer (`pcbArgumentInfo`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct CorPrfFunctionArgumentInfo {
    /// `numRanges`.
    pub num_ranges: u32,
    /// `totalArgumentSize`.
    pub total_argument_size: u32,
    /// `ranges[1]`: the first of `num_ranges` ranges.
    pub ranges: [CorPrfFunctionArgumentRange; 1],
}

/// `COR_PRF_CODE_INFO`: one contiguous chunk of native code.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct CorPrfCodeInfo {
    /// `startAddress`.
    pub start_address: usize,
    /// `size` (`SIZE_T`).
    pub size: usize,
}

/// `COR_PRF_FUNCTION`: a function and one of its re-JITed versions.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct CorPrfFunction {
    /// `functionId`.
    pub function_id: FunctionID,
    /// `reJitId`.
    pub rejit_id: ReJITID,
}

/// `COR_PRF_METHOD`: an IL method by module and token.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct CorPrfMethod {
    /// `moduleId`.
    pub module_id: ModuleID,
    /// `methodId`.
    pub method_id: mdMethodDef,
}

/// `COR_PRF_GC_GENERATION_RANGE`: one range of memory of a GC generation.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct CorPrfGcGenerationRange {
    /// `generation`.
    pub generation: CorPrfGcGeneration,
    /// `rangeStart`.
    pub range_start: ObjectID,
    /// `rangeLength`: the used length.
    pub range_length: usize,
    /// `rangeLengthReserved`.
    pub range_length_reserved: usize,
}

/// `COR_PRF_NONGC_HEAP_RANGE`: one range of the non-GC (frozen) heap.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct CorPrfNonGcHeapRange {
    /// `rangeStart`.
    pub range_start: ObjectID,
    /// `rangeLength`: the used length.
    pub range_length: usize,
    /// `rangeLengthReserved`.
    pub range_length_reserved: usize,
}

/// `COR_PRF_EX_CLAUSE_INFO`: the exception clause being entered or left, and its frame.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct CorPrfExClauseInfo {
    /// `clauseType`.
    pub clause_type: CorPrfClauseType,
    /// `programCounter`: the native entry point of the handler.
    pub program_counter: usize,
    /// `framePointer`: the handler's logical frame pointer.
    pub frame_pointer: usize,
    /// `shadowStackPointer` (IA64 only).
    pub shadow_stack_pointer: usize,
}

/// `COR_PRF_EVENTPIPE_PROVIDER_CONFIG`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CorPrfEventPipeProviderConfig {
    /// `providerName` (null-terminated UTF-16).
    pub provider_name: *const u16,
    /// `keywords`.
    pub keywords: u64,
    /// `loggingLevel`.
    pub logging_level: u32,
    /// `filterData`: `key=value;` pairs (null-terminated UTF-16), may be null.
    pub filter_data: *const u16,
}

/// `COR_PRF_EVENTPIPE_PARAM_DESC`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CorPrfEventPipeParamDesc {
    /// `type` (a `COR_PRF_EVENTPIPE_PARAM_TYPE`).
    pub param_type: u32,
    /// `elementType`, for arrays.
    pub element_type: u32,
    /// `name` (null-terminated UTF-16).
    pub name: *const u16,
}

/// `COR_PRF_EVENT_DATA`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct CorPrfEventData {
    /// `ptr`.
    pub ptr: u64,
    /// `size`.
    pub size: u32,
    /// `reserved`.
    pub reserved: u32,
}

/// `COR_PRF_FILTER_DATA`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct CorPrfFilterData {
    /// `Ptr`.
    pub ptr: u64,
    /// `Size`.
    pub size: u32,
    /// `Type`.
    pub data_type: u32,
}

/// `OSINFO` (`cor.h`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct OsInfo {
    /// `dwOSPlatformId`.
    pub os_platform_id: u32,
    /// `dwOSMajorVersion`.
    pub os_major_version: u32,
    /// `dwOSMinorVersion`.
    pub os_minor_version: u32,
}

/// `COR_PRF_ASSEMBLY_REFERENCE_INFO`: one assembly reference a profiler announces
/// (`ICorProfilerAssemblyReferenceProvider::AddAssemblyReference`).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CorPrfAssemblyReferenceInfo {
    /// `pbPublicKeyOrToken`.
    pub public_key_or_token: *const c_void,
    /// `cbPublicKeyOrToken`.
    pub public_key_or_token_len: u32,
    /// `szName`: NUL-terminated UTF-16.
    pub name: *const u16,
    /// `pMetaData`.
    pub metadata: *const AssemblyMetaData,
    /// `pbHashValue`.
    pub hash_value: *const c_void,
    /// `cbHashValue`.
    pub hash_value_len: u32,
    /// `dwAssemblyRefFlags` (`CorAssemblyFlags`).
    pub flags: u32,
}

/// `ASSEMBLYMETADATA` (`cor.h`): version, culture and platforms of an assembly.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct AssemblyMetaData {
    /// `usMajorVersion`.
    pub major_version: u16,
    /// `usMinorVersion`.
    pub minor_version: u16,
    /// `usBuildNumber`.
    pub build_number: u16,
    /// `usRevisionNumber`.
    pub revision_number: u16,
    /// `szLocale`: a buffer for the culture name (UTF-16), may be null.
    pub locale: *mut u16,
    /// `cbLocale`: in, the buffer's size in wide chars; out, the name's length.
    pub locale_len: u32,
    /// `rProcessor`: processor ids, may be null.
    pub processor: *mut u32,
    /// `ulProcessor`: in, the array's size; out, the entries written.
    pub processor_len: u32,
    /// `rOS`: `OSINFO` array, may be null.
    pub os: *mut OsInfo,
    /// `ulOS`: in, the array's size; out, the entries written.
    pub os_len: u32,
}

impl Default for AssemblyMetaData {
    /// No buffers: every count zero, every pointer null.
    fn default() -> AssemblyMetaData {
        AssemblyMetaData {
            major_version: 0,
            minor_version: 0,
            build_number: 0,
            revision_number: 0,
            locale: core::ptr::null_mut(),
            locale_len: 0,
            processor: core::ptr::null_mut(),
            processor_len: 0,
            os: core::ptr::null_mut(),
            os_len: 0,
        }
    }
}

/// `FunctionIDMapper`: maps a `FunctionID` to the value the hooks receive; sets
/// `*pbHookFunction` to `FALSE` to not hook the function.
pub type FunctionIDMapper =
    unsafe extern "system" fn(func_id: FunctionID, pb_hook_function: *mut i32) -> usize;
/// `FunctionIDMapper2`: [`FunctionIDMapper`] with the client data given to
/// `SetFunctionIDMapper2`.
pub type FunctionIDMapper2 = unsafe extern "system" fn(
    func_id: FunctionID,
    client_data: *mut c_void,
    pb_hook_function: *mut i32,
) -> usize;

// The enter/leave/tailcall hooks are declared with the COM calling convention, but the
// runtime calls them without saving registers: real hooks are assembly trampolines that
// preserve everything they use.
/// `FunctionEnter` (deprecated in V2).
pub type FunctionEnter = unsafe extern "system" fn(func_id: FunctionID);
/// `FunctionLeave` (deprecated in V2).
pub type FunctionLeave = unsafe extern "system" fn(func_id: FunctionID);
/// `FunctionTailcall` (deprecated in V2).
pub type FunctionTailcall = unsafe extern "system" fn(func_id: FunctionID);
/// `FunctionEnter2` (deprecated in V4).
pub type FunctionEnter2 = unsafe extern "system" fn(
    func_id: FunctionID,
    client_data: usize,
    func: CorPrfFrameInfo,
    argument_info: *mut CorPrfFunctionArgumentInfo,
);
/// `FunctionLeave2` (deprecated in V4).
pub type FunctionLeave2 = unsafe extern "system" fn(
    func_id: FunctionID,
    client_data: usize,
    func: CorPrfFrameInfo,
    retval_range: *mut CorPrfFunctionArgumentRange,
);
/// `FunctionTailcall2` (deprecated in V4).
pub type FunctionTailcall2 =
    unsafe extern "system" fn(func_id: FunctionID, client_data: usize, func: CorPrfFrameInfo);
/// `FunctionEnter3`.
pub type FunctionEnter3 = unsafe extern "system" fn(function_id_or_client_id: FunctionIDOrClientID);
/// `FunctionLeave3`.
pub type FunctionLeave3 = unsafe extern "system" fn(function_id_or_client_id: FunctionIDOrClientID);
/// `FunctionTailcall3`.
pub type FunctionTailcall3 =
    unsafe extern "system" fn(function_id_or_client_id: FunctionIDOrClientID);
/// `FunctionEnter3WithInfo`.
pub type FunctionEnter3WithInfo = unsafe extern "system" fn(
    function_id_or_client_id: FunctionIDOrClientID,
    elt_info: CorPrfEltInfo,
);
/// `FunctionLeave3WithInfo`.
pub type FunctionLeave3WithInfo = unsafe extern "system" fn(
    function_id_or_client_id: FunctionIDOrClientID,
    elt_info: CorPrfEltInfo,
);
/// `FunctionTailcall3WithInfo`.
pub type FunctionTailcall3WithInfo = unsafe extern "system" fn(
    function_id_or_client_id: FunctionIDOrClientID,
    elt_info: CorPrfEltInfo,
);

/// `StackSnapshotCallback`: called by `DoStackSnapshot` once per managed frame (or run of
/// unmanaged frames, `func_id` 0).
pub type StackSnapshotCallback = unsafe extern "system" fn(
    func_id: FunctionID,
    ip: usize,
    frame_info: CorPrfFrameInfo,
    context_size: u32,
    context: *mut u8,
    client_data: *mut c_void,
) -> HResult;

/// `ObjectReferenceCallback`: called once per reference by
/// `ICorProfilerInfo10::EnumerateObjectReferences`; returns `FALSE` to stop.
pub type ObjectReferenceCallback = unsafe extern "system" fn(
    root: ObjectID,
    reference: *mut ObjectID,
    client_data: *mut c_void,
) -> i32;

/// `ObjectCallback`: called once per object by `ICorProfilerInfo15::EnumerateGCHeapObjects`;
/// returns `FALSE` to stop.
pub type ObjectCallback =
    unsafe extern "system" fn(object: ObjectID, callback_state: *mut c_void) -> i32;

/// `EventPipeProviderCallback`: called when a session enables or disables a provider.
pub type EventPipeProviderCallback = unsafe extern "system" fn(
    source_id: *const u8,
    is_enabled: u32,
    level: u8,
    match_any_keywords: u64,
    match_all_keywords: u64,
    filter_data: *mut CorPrfFilterData,
    callback_data: *mut c_void,
);

// The layouts the C compilers give these structures on 64-bit targets.
#[cfg(target_pointer_width = "64")]
const _: () = {
    use core::mem::{align_of, size_of};
    assert!(size_of::<CorIlMap>() == 12 && align_of::<CorIlMap>() == 4);
    assert!(size_of::<CorDebugIlToNativeMap>() == 12);
    assert!(size_of::<CorFieldOffset>() == 8);
    assert!(size_of::<CorPrfFunctionArgumentRange>() == 16);
    assert!(size_of::<CorPrfFunctionArgumentInfo>() == 24);
    assert!(size_of::<CorPrfCodeInfo>() == 16);
    assert!(size_of::<CorPrfFunction>() == 16);
    assert!(size_of::<CorPrfMethod>() == 16);
    assert!(size_of::<CorPrfGcGenerationRange>() == 32);
    assert!(size_of::<CorPrfNonGcHeapRange>() == 24);
    assert!(size_of::<CorPrfExClauseInfo>() == 32);
    assert!(size_of::<CorPrfEventPipeProviderConfig>() == 32);
    assert!(size_of::<CorPrfEventPipeParamDesc>() == 16);
    assert!(size_of::<CorPrfEventData>() == 16);
    assert!(size_of::<CorPrfFilterData>() == 16);
    assert!(size_of::<OsInfo>() == 12);
    assert!(size_of::<AssemblyMetaData>() == 56);
    assert!(size_of::<FunctionIDOrClientID>() == 8);
};

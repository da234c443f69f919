//! The metadata interfaces of `cor.h` a rewriting profiler uses: `IMetaDataImport`,
//! `IMetaDataImport2`, `IMetaDataEmit`, `IMetaDataEmit2`, `IMetaDataAssemblyImport` and
//! `IMetaDataAssemblyEmit`.
//!
//! Signature blobs (`PCCOR_SIGNATURE`) are `*const u8`; strings are UTF-16 (`LPCWSTR`
//! `*const u16`, `LPWSTR` buffers `*mut u16`); interface pointers (`IUnknown*`,
//! `IStream*`, `IMetaDataImport*`, ...) are `*mut c_void`.

use core::ffi::{c_char, c_void};

use super::guid::Guid;
use super::hresult::HResult;
use super::types::{
    AssemblyMetaData, CorFieldOffset, CorSaveSize, HCorEnum, mdAssembly, mdAssemblyRef,
    mdCustomAttribute, mdEvent, mdExportedType, mdFieldDef, mdFile, mdGenericParam,
    mdGenericParamConstraint, mdInterfaceImpl, mdManifestResource, mdMemberRef, mdMethodDef,
    mdMethodSpec, mdModule, mdModuleRef, mdParamDef, mdPermission, mdProperty, mdSignature,
    mdString, mdToken, mdTypeDef, mdTypeRef, mdTypeSpec,
};
use super::vtable::{FreeThreaded, IUnknownVtbl, com_interface};

com_interface! {
    /// `IMetaDataImport`: reading a module's metadata (62 methods).
    pub struct IMetaDataImportVtbl for IMetaDataImport: IUnknownVtbl;
    /// `{7DAC8207-D3AE-4c75-9B67-92801A497D44}`.
    pub const IID_IMETADATAIMPORT = "7DAC8207-D3AE-4c75-9B67-92801A497D44";
    {
        fn CloseEnum(h_enum: HCorEnum);
        fn CountEnum(h_enum: HCorEnum, pul_count: *mut u32) -> HResult;
        fn ResetEnum(h_enum: HCorEnum, ul_pos: u32) -> HResult;
        fn EnumTypeDefs(
            ph_enum: *mut HCorEnum,
            r_type_defs: *mut mdTypeDef,
            c_max: u32,
            pc_type_defs: *mut u32,
        ) -> HResult;
        fn EnumInterfaceImpls(
            ph_enum: *mut HCorEnum,
            td: mdTypeDef,
            r_impls: *mut mdInterfaceImpl,
            c_max: u32,
            pc_impls: *mut u32,
        ) -> HResult;
        fn EnumTypeRefs(
            ph_enum: *mut HCorEnum,
            r_type_refs: *mut mdTypeRef,
            c_max: u32,
            pc_type_refs: *mut u32,
        ) -> HResult;
        fn FindTypeDefByName(
            sz_type_def: *const u16,
            tk_enclosing_class: mdToken,
            ptd: *mut mdTypeDef,
        ) -> HResult;
        fn GetScopeProps(
            sz_name: *mut u16,
            cch_name: u32,
            pch_name: *mut u32,
            pmvid: *mut Guid,
        ) -> HResult;
        fn GetModuleFromScope(pmd: *mut mdModule) -> HResult;
        fn GetTypeDefProps(
            td: mdTypeDef,
            sz_type_def: *mut u16,
            cch_type_def: u32,
            pch_type_def: *mut u32,
            pdw_type_def_flags: *mut u32,
            ptk_extends: *mut mdToken,
        ) -> HResult;
        fn GetInterfaceImplProps(
            ii_impl: mdInterfaceImpl,
            p_class: *mut mdTypeDef,
            ptk_iface: *mut mdToken,
        ) -> HResult;
        fn GetTypeRefProps(
            tr: mdTypeRef,
            ptk_resolution_scope: *mut mdToken,
            sz_name: *mut u16,
            cch_name: u32,
            pch_name: *mut u32,
        ) -> HResult;
        fn ResolveTypeRef(
            tr: mdTypeRef,
            riid: *const Guid,
            pp_iscope: *mut *mut c_void,
            ptd: *mut mdTypeDef,
        ) -> HResult;
        fn EnumMembers(
            ph_enum: *mut HCorEnum,
            cl: mdTypeDef,
            r_members: *mut mdToken,
            c_max: u32,
            pc_tokens: *mut u32,
        ) -> HResult;
        fn EnumMembersWithName(
            ph_enum: *mut HCorEnum,
            cl: mdTypeDef,
            sz_name: *const u16,
            r_members: *mut mdToken,
            c_max: u32,
            pc_tokens: *mut u32,
        ) -> HResult;
        fn EnumMethods(
            ph_enum: *mut HCorEnum,
            cl: mdTypeDef,
            r_methods: *mut mdMethodDef,
            c_max: u32,
            pc_tokens: *mut u32,
        ) -> HResult;
        fn EnumMethodsWithName(
            ph_enum: *mut HCorEnum,
            cl: mdTypeDef,
            sz_name: *const u16,
            r_methods: *mut mdMethodDef,
            c_max: u32,
            pc_tokens: *mut u32,
        ) -> HResult;
        fn EnumFields(
            ph_enum: *mut HCorEnum,
            cl: mdTypeDef,
            r_fields: *mut mdFieldDef,
            c_max: u32,
            pc_tokens: *mut u32,
        ) -> HResult;
        fn EnumFieldsWithName(
            ph_enum: *mut HCorEnum,
            cl: mdTypeDef,
            sz_name: *const u16,
            r_fields: *mut mdFieldDef,
            c_max: u32,
            pc_tokens: *mut u32,
        ) -> HResult;
        fn EnumParams(
            ph_enum: *mut HCorEnum,
            mb: mdMethodDef,
            r_params: *mut mdParamDef,
            c_max: u32,
            pc_tokens: *mut u32,
        ) -> HResult;
        fn EnumMemberRefs(
            ph_enum: *mut HCorEnum,
            tk_parent: mdToken,
            r_member_refs: *mut mdMemberRef,
            c_max: u32,
            pc_tokens: *mut u32,
        ) -> HResult;
        fn EnumMethodImpls(
            ph_enum: *mut HCorEnum,
            td: mdTypeDef,
            r_method_body: *mut mdToken,
            r_method_decl: *mut mdToken,
            c_max: u32,
            pc_tokens: *mut u32,
        ) -> HResult;
        fn EnumPermissionSets(
            ph_enum: *mut HCorEnum,
            tk: mdToken,
            dw_actions: u32,
            r_permission: *mut mdPermission,
            c_max: u32,
            pc_tokens: *mut u32,
        ) -> HResult;
        fn FindMember(
            td: mdTypeDef,
            sz_name: *const u16,
            pv_sig_blob: *const u8,
            cb_sig_blob: u32,
            pmb: *mut mdToken,
        ) -> HResult;
        fn FindMethod(
            td: mdTypeDef,
            sz_name: *const u16,
            pv_sig_blob: *const u8,
            cb_sig_blob: u32,
            pmb: *mut mdMethodDef,
        ) -> HResult;
        fn FindField(
            td: mdTypeDef,
            sz_name: *const u16,
            pv_sig_blob: *const u8,
            cb_sig_blob: u32,
            pmb: *mut mdFieldDef,
        ) -> HResult;
        fn FindMemberRef(
            td: mdTypeRef,
            sz_name: *const u16,
            pv_sig_blob: *const u8,
            cb_sig_blob: u32,
            pmr: *mut mdMemberRef,
        ) -> HResult;
        fn GetMethodProps(
            mb: mdMethodDef,
            p_class: *mut mdTypeDef,
            sz_method: *mut u16,
            cch_method: u32,
            pch_method: *mut u32,
            pdw_attr: *mut u32,
            ppv_sig_blob: *mut *const u8,
            pcb_sig_blob: *mut u32,
            pul_code_rva: *mut u32,
            pdw_impl_flags: *mut u32,
        ) -> HResult;
        fn GetMemberRefProps(
            mr: mdMemberRef,
            ptk: *mut mdToken,
            sz_member: *mut u16,
            cch_member: u32,
            pch_member: *mut u32,
            ppv_sig_blob: *mut *const u8,
            pb_sig: *mut u32,
        ) -> HResult;
        fn EnumProperties(
            ph_enum: *mut HCorEnum,
            td: mdTypeDef,
            r_properties: *mut mdProperty,
            c_max: u32,
            pc_properties: *mut u32,
        ) -> HResult;
        fn EnumEvents(
            ph_enum: *mut HCorEnum,
            td: mdTypeDef,
            r_events: *mut mdEvent,
            c_max: u32,
            pc_events: *mut u32,
        ) -> HResult;
        /// `sz_event` is declared `LPCWSTR` in `cor.h` but is the output buffer.
        fn GetEventProps(
            ev: mdEvent,
            p_class: *mut mdTypeDef,
            sz_event: *mut u16,
            cch_event: u32,
            pch_event: *mut u32,
            pdw_event_flags: *mut u32,
            ptk_event_type: *mut mdToken,
            pmd_add_on: *mut mdMethodDef,
            pmd_remove_on: *mut mdMethodDef,
            pmd_fire: *mut mdMethodDef,
            rmd_other_method: *mut mdMethodDef,
            c_max: u32,
            pc_other_method: *mut u32,
        ) -> HResult;
        fn EnumMethodSemantics(
            ph_enum: *mut HCorEnum,
            mb: mdMethodDef,
            r_event_prop: *mut mdToken,
            c_max: u32,
            pc_event_prop: *mut u32,
        ) -> HResult;
        fn GetMethodSemantics(
            mb: mdMethodDef,
            tk_event_prop: mdToken,
            pdw_semantics_flags: *mut u32,
        ) -> HResult;
        fn GetClassLayout(
            td: mdTypeDef,
            pdw_pack_size: *mut u32,
            r_field_offset: *mut CorFieldOffset,
            c_max: u32,
            pc_field_offset: *mut u32,
            pul_class_size: *mut u32,
        ) -> HResult;
        fn GetFieldMarshal(
            tk: mdToken,
            ppv_native_type: *mut *const u8,
            pcb_native_type: *mut u32,
        ) -> HResult;
        fn GetRVA(tk: mdToken, pul_code_rva: *mut u32, pdw_impl_flags: *mut u32) -> HResult;
        fn GetPermissionSetProps(
            pm: mdPermission,
            pdw_action: *mut u32,
            ppv_permission: *mut *const c_void,
            pcb_permission: *mut u32,
        ) -> HResult;
        fn GetSigFromToken(
            md_sig: mdSignature,
            ppv_sig: *mut *const u8,
            pcb_sig: *mut u32,
        ) -> HResult;
        fn GetModuleRefProps(
            mur: mdModuleRef,
            sz_name: *mut u16,
            cch_name: u32,
            pch_name: *mut u32,
        ) -> HResult;
        fn EnumModuleRefs(
            ph_enum: *mut HCorEnum,
            r_module_refs: *mut mdModuleRef,
            cmax: u32,
            pc_module_refs: *mut u32,
        ) -> HResult;
        fn GetTypeSpecFromToken(
            typespec: mdTypeSpec,
            ppv_sig: *mut *const u8,
            pcb_sig: *mut u32,
        ) -> HResult;
        /// `psz_utf8_name_ptr` receives a pointer into the string heap (UTF-8).
        fn GetNameFromToken(tk: mdToken, psz_utf8_name_ptr: *mut *const c_char) -> HResult;
        fn EnumUnresolvedMethods(
            ph_enum: *mut HCorEnum,
            r_methods: *mut mdToken,
            c_max: u32,
            pc_tokens: *mut u32,
        ) -> HResult;
        fn GetUserString(
            stk: mdString,
            sz_string: *mut u16,
            cch_string: u32,
            pch_string: *mut u32,
        ) -> HResult;
        fn GetPinvokeMap(
            tk: mdToken,
            pdw_mapping_flags: *mut u32,
            sz_import_name: *mut u16,
            cch_import_name: u32,
            pch_import_name: *mut u32,
            pmr_import_dll: *mut mdModuleRef,
        ) -> HResult;
        fn EnumSignatures(
            ph_enum: *mut HCorEnum,
            r_signatures: *mut mdSignature,
            cmax: u32,
            pc_signatures: *mut u32,
        ) -> HResult;
        fn EnumTypeSpecs(
            ph_enum: *mut HCorEnum,
            r_type_specs: *mut mdTypeSpec,
            cmax: u32,
            pc_type_specs: *mut u32,
        ) -> HResult;
        fn EnumUserStrings(
            ph_enum: *mut HCorEnum,
            r_strings: *mut mdString,
            cmax: u32,
            pc_strings: *mut u32,
        ) -> HResult;
        fn GetParamForMethodIndex(
            md: mdMethodDef,
            ul_param_seq: u32,
            ppd: *mut mdParamDef,
        ) -> HResult;
        fn EnumCustomAttributes(
            ph_enum: *mut HCorEnum,
            tk: mdToken,
            tk_type: mdToken,
            r_custom_attributes: *mut mdCustomAttribute,
            c_max: u32,
            pc_custom_attributes: *mut u32,
        ) -> HResult;
        fn GetCustomAttributeProps(
            cv: mdCustomAttribute,
            ptk_obj: *mut mdToken,
            ptk_type: *mut mdToken,
            pp_blob: *mut *const c_void,
            pcb_size: *mut u32,
        ) -> HResult;
        fn FindTypeRef(
            tk_resolution_scope: mdToken,
            sz_name: *const u16,
            ptr: *mut mdTypeRef,
        ) -> HResult;
        fn GetMemberProps(
            mb: mdToken,
            p_class: *mut mdTypeDef,
            sz_member: *mut u16,
            cch_member: u32,
            pch_member: *mut u32,
            pdw_attr: *mut u32,
            ppv_sig_blob: *mut *const u8,
            pcb_sig_blob: *mut u32,
            pul_code_rva: *mut u32,
            pdw_impl_flags: *mut u32,
            pdw_cplus_type_flag: *mut u32,
            pp_value: *mut *const c_void,
            pcch_value: *mut u32,
        ) -> HResult;
        fn GetFieldProps(
            mb: mdFieldDef,
            p_class: *mut mdTypeDef,
            sz_field: *mut u16,
            cch_field: u32,
            pch_field: *mut u32,
            pdw_attr: *mut u32,
            ppv_sig_blob: *mut *const u8,
            pcb_sig_blob: *mut u32,
            pdw_cplus_type_flag: *mut u32,
            pp_value: *mut *const c_void,
            pcch_value: *mut u32,
        ) -> HResult;
        /// `sz_property` is declared `LPCWSTR` in `cor.h` but is the output buffer.
        fn GetPropertyProps(
            prop: mdProperty,
            p_class: *mut mdTypeDef,
            sz_property: *mut u16,
            cch_property: u32,
            pch_property: *mut u32,
            pdw_prop_flags: *mut u32,
            ppv_sig: *mut *const u8,
            pb_sig: *mut u32,
            pdw_cplus_type_flag: *mut u32,
            pp_default_value: *mut *const c_void,
            pcch_default_value: *mut u32,
            pmd_setter: *mut mdMethodDef,
            pmd_getter: *mut mdMethodDef,
            rmd_other_method: *mut mdMethodDef,
            c_max: u32,
            pc_other_method: *mut u32,
        ) -> HResult;
        fn GetParamProps(
            tk: mdParamDef,
            pmd: *mut mdMethodDef,
            pul_sequence: *mut u32,
            sz_name: *mut u16,
            cch_name: u32,
            pch_name: *mut u32,
            pdw_attr: *mut u32,
            pdw_cplus_type_flag: *mut u32,
            pp_value: *mut *const c_void,
            pcch_value: *mut u32,
        ) -> HResult;
        fn GetCustomAttributeByName(
            tk_obj: mdToken,
            sz_name: *const u16,
            pp_data: *mut *const c_void,
            pcb_data: *mut u32,
        ) -> HResult;
        /// Returns a `BOOL`, not an `HRESULT`.
        fn IsValidToken(tk: mdToken) -> i32;
        fn GetNestedClassProps(
            td_nested_class: mdTypeDef,
            ptd_enclosing_class: *mut mdTypeDef,
        ) -> HResult;
        fn GetNativeCallConvFromSig(
            pv_sig: *const c_void,
            cb_sig: u32,
            p_call_conv: *mut u32,
        ) -> HResult;
        fn IsGlobal(pd: mdToken, pb_global: *mut i32) -> HResult;
    }
}

com_interface! {
    /// `IMetaDataImport2`: generics, PE kind, version string.
    pub struct IMetaDataImport2Vtbl for IMetaDataImport2: IMetaDataImportVtbl;
    /// `{FCE5EFA0-8BBA-4f8e-A036-8F2022B08466}`.
    pub const IID_IMETADATAIMPORT2 = "FCE5EFA0-8BBA-4f8e-A036-8F2022B08466";
    {
        fn EnumGenericParams(
            ph_enum: *mut HCorEnum,
            tk: mdToken,
            r_generic_params: *mut mdGenericParam,
            c_max: u32,
            pc_generic_params: *mut u32,
        ) -> HResult;
        fn GetGenericParamProps(
            gp: mdGenericParam,
            pul_param_seq: *mut u32,
            pdw_param_flags: *mut u32,
            pt_owner: *mut mdToken,
            reserved: *mut u32,
            wzname: *mut u16,
            cch_name: u32,
            pch_name: *mut u32,
        ) -> HResult;
        fn GetMethodSpecProps(
            mi: mdMethodSpec,
            tk_parent: *mut mdToken,
            ppv_sig_blob: *mut *const u8,
            pcb_sig_blob: *mut u32,
        ) -> HResult;
        fn EnumGenericParamConstraints(
            ph_enum: *mut HCorEnum,
            tk: mdGenericParam,
            r_generic_param_constraints: *mut mdGenericParamConstraint,
            c_max: u32,
            pc_generic_param_constraints: *mut u32,
        ) -> HResult;
        fn GetGenericParamConstraintProps(
            gpc: mdGenericParamConstraint,
            pt_generic_param: *mut mdGenericParam,
            ptk_constraint_type: *mut mdToken,
        ) -> HResult;
        fn GetPEKind(pdw_pe_kind: *mut u32, pdw_machine: *mut u32) -> HResult;
        fn GetVersionString(pwz_buf: *mut u16, cc_buf_size: u32, pcc_buf_size: *mut u32) -> HResult;
        fn EnumMethodSpecs(
            ph_enum: *mut HCorEnum,
            tk: mdToken,
            r_method_specs: *mut mdMethodSpec,
            c_max: u32,
            pc_method_specs: *mut u32,
        ) -> HResult;
    }
}

com_interface! {
    /// `IMetaDataEmit`: defining metadata in a module (49 methods).
    pub struct IMetaDataEmitVtbl for IMetaDataEmit: IUnknownVtbl;
    /// `{BA3FEE4C-ECB9-4e41-83B7-183FA41CD859}`.
    pub const IID_IMETADATAEMIT = "BA3FEE4C-ECB9-4e41-83B7-183FA41CD859";
    {
        fn SetModuleProps(sz_name: *const u16) -> HResult;
        fn Save(sz_file: *const u16, dw_save_flags: u32) -> HResult;
        fn SaveToStream(p_istream: *mut c_void, dw_save_flags: u32) -> HResult;
        fn GetSaveSize(f_save: CorSaveSize, pdw_save_size: *mut u32) -> HResult;
        fn DefineTypeDef(
            sz_type_def: *const u16,
            dw_type_def_flags: u32,
            tk_extends: mdToken,
            rtk_implements: *mut mdToken,
            ptd: *mut mdTypeDef,
        ) -> HResult;
        fn DefineNestedType(
            sz_type_def: *const u16,
            dw_type_def_flags: u32,
            tk_extends: mdToken,
            rtk_implements: *mut mdToken,
            td_encloser: mdTypeDef,
            ptd: *mut mdTypeDef,
        ) -> HResult;
        fn SetHandler(p_unk: *mut c_void) -> HResult;
        fn DefineMethod(
            td: mdTypeDef,
            sz_name: *const u16,
            dw_method_flags: u32,
            pv_sig_blob: *const u8,
            cb_sig_blob: u32,
            ul_code_rva: u32,
            dw_impl_flags: u32,
            pmd: *mut mdMethodDef,
        ) -> HResult;
        fn DefineMethodImpl(td: mdTypeDef, tk_body: mdToken, tk_decl: mdToken) -> HResult;
        fn DefineTypeRefByName(
            tk_resolution_scope: mdToken,
            sz_name: *const u16,
            ptr: *mut mdTypeRef,
        ) -> HResult;
        fn DefineImportType(
            p_assem_import: *mut c_void,
            pb_hash_value: *const c_void,
            cb_hash_value: u32,
            p_import: *mut c_void,
            td_import: mdTypeDef,
            p_assem_emit: *mut c_void,
            ptr: *mut mdTypeRef,
        ) -> HResult;
        fn DefineMemberRef(
            tk_import: mdToken,
            sz_name: *const u16,
            pv_sig_blob: *const u8,
            cb_sig_blob: u32,
            pmr: *mut mdMemberRef,
        ) -> HResult;
        fn DefineImportMember(
            p_assem_import: *mut c_void,
            pb_hash_value: *const c_void,
            cb_hash_value: u32,
            p_import: *mut c_void,
            mb_member: mdToken,
            p_assem_emit: *mut c_void,
            tk_parent: mdToken,
            pmr: *mut mdMemberRef,
        ) -> HResult;
        fn DefineEvent(
            td: mdTypeDef,
            sz_event: *const u16,
            dw_event_flags: u32,
            tk_event_type: mdToken,
            md_add_on: mdMethodDef,
            md_remove_on: mdMethodDef,
            md_fire: mdMethodDef,
            rmd_other_methods: *mut mdMethodDef,
            pmd_event: *mut mdEvent,
        ) -> HResult;
        fn SetClassLayout(
            td: mdTypeDef,
            dw_pack_size: u32,
            r_field_offsets: *mut CorFieldOffset,
            ul_class_size: u32,
        ) -> HResult;
        fn DeleteClassLayout(td: mdTypeDef) -> HResult;
        fn SetFieldMarshal(tk: mdToken, pv_native_type: *const u8, cb_native_type: u32) -> HResult;
        fn DeleteFieldMarshal(tk: mdToken) -> HResult;
        fn DefinePermissionSet(
            tk: mdToken,
            dw_action: u32,
            pv_permission: *const c_void,
            cb_permission: u32,
            ppm: *mut mdPermission,
        ) -> HResult;
        fn SetRVA(md: mdMethodDef, ul_rva: u32) -> HResult;
        fn GetTokenFromSig(pv_sig: *const u8, cb_sig: u32, pmsig: *mut mdSignature) -> HResult;
        fn DefineModuleRef(sz_name: *const u16, pmur: *mut mdModuleRef) -> HResult;
        fn SetParent(mr: mdMemberRef, tk: mdToken) -> HResult;
        fn GetTokenFromTypeSpec(
            pv_sig: *const u8,
            cb_sig: u32,
            ptypespec: *mut mdTypeSpec,
        ) -> HResult;
        fn SaveToMemory(pb_data: *mut c_void, cb_data: u32) -> HResult;
        fn DefineUserString(sz_string: *const u16, cch_string: u32, pstk: *mut mdString) -> HResult;
        fn DeleteToken(tk_obj: mdToken) -> HResult;
        fn SetMethodProps(
            md: mdMethodDef,
            dw_method_flags: u32,
            ul_code_rva: u32,
            dw_impl_flags: u32,
        ) -> HResult;
        fn SetTypeDefProps(
            td: mdTypeDef,
            dw_type_def_flags: u32,
            tk_extends: mdToken,
            rtk_implements: *mut mdToken,
        ) -> HResult;
        fn SetEventProps(
            ev: mdEvent,
            dw_event_flags: u32,
            tk_event_type: mdToken,
            md_add_on: mdMethodDef,
            md_remove_on: mdMethodDef,
            md_fire: mdMethodDef,
            rmd_other_methods: *mut mdMethodDef,
        ) -> HResult;
        fn SetPermissionSetProps(
            tk: mdToken,
            dw_action: u32,
            pv_permission: *const c_void,
            cb_permission: u32,
            ppm: *mut mdPermission,
        ) -> HResult;
        fn DefinePinvokeMap(
            tk: mdToken,
            dw_mapping_flags: u32,
            sz_import_name: *const u16,
            mr_import_dll: mdModuleRef,
        ) -> HResult;
        fn SetPinvokeMap(
            tk: mdToken,
            dw_mapping_flags: u32,
            sz_import_name: *const u16,
            mr_import_dll: mdModuleRef,
        ) -> HResult;
        fn DeletePinvokeMap(tk: mdToken) -> HResult;
        fn DefineCustomAttribute(
            tk_owner: mdToken,
            tk_ctor: mdToken,
            p_custom_attribute: *const c_void,
            cb_custom_attribute: u32,
            pcv: *mut mdCustomAttribute,
        ) -> HResult;
        fn SetCustomAttributeValue(
            pcv: mdCustomAttribute,
            p_custom_attribute: *const c_void,
            cb_custom_attribute: u32,
        ) -> HResult;
        fn DefineField(
            td: mdTypeDef,
            sz_name: *const u16,
            dw_field_flags: u32,
            pv_sig_blob: *const u8,
            cb_sig_blob: u32,
            dw_cplus_type_flag: u32,
            p_value: *const c_void,
            cch_value: u32,
            pmd: *mut mdFieldDef,
        ) -> HResult;
        fn DefineProperty(
            td: mdTypeDef,
            sz_property: *const u16,
            dw_prop_flags: u32,
            pv_sig: *const u8,
            cb_sig: u32,
            dw_cplus_type_flag: u32,
            p_value: *const c_void,
            cch_value: u32,
            md_setter: mdMethodDef,
            md_getter: mdMethodDef,
            rmd_other_methods: *mut mdMethodDef,
            pmd_prop: *mut mdProperty,
        ) -> HResult;
        fn DefineParam(
            md: mdMethodDef,
            ul_param_seq: u32,
            sz_name: *const u16,
            dw_param_flags: u32,
            dw_cplus_type_flag: u32,
            p_value: *const c_void,
            cch_value: u32,
            ppd: *mut mdParamDef,
        ) -> HResult;
        fn SetFieldProps(
            fd: mdFieldDef,
            dw_field_flags: u32,
            dw_cplus_type_flag: u32,
            p_value: *const c_void,
            cch_value: u32,
        ) -> HResult;
        fn SetPropertyProps(
            pr: mdProperty,
            dw_prop_flags: u32,
            dw_cplus_type_flag: u32,
            p_value: *const c_void,
            cch_value: u32,
            md_setter: mdMethodDef,
            md_getter: mdMethodDef,
            rmd_other_methods: *mut mdMethodDef,
        ) -> HResult;
        fn SetParamProps(
            pd: mdParamDef,
            sz_name: *const u16,
            dw_param_flags: u32,
            dw_cplus_type_flag: u32,
            p_value: *const c_void,
            cch_value: u32,
        ) -> HResult;
        /// `r_sec_attrs` is a `COR_SECATTR` array.
        fn DefineSecurityAttributeSet(
            tk_obj: mdToken,
            r_sec_attrs: *mut c_void,
            c_sec_attrs: u32,
            pul_error_attr: *mut u32,
        ) -> HResult;
        fn ApplyEditAndContinue(p_import: *mut c_void) -> HResult;
        fn TranslateSigWithScope(
            p_assem_import: *mut c_void,
            pb_hash_value: *const c_void,
            cb_hash_value: u32,
            import: *mut c_void,
            pb_sig_blob: *const u8,
            cb_sig_blob: u32,
            p_assem_emit: *mut c_void,
            emit: *mut c_void,
            pv_translated_sig: *mut u8,
            cb_translated_sig_max: u32,
            pcb_translated_sig: *mut u32,
        ) -> HResult;
        fn SetMethodImplFlags(md: mdMethodDef, dw_impl_flags: u32) -> HResult;
        fn SetFieldRVA(fd: mdFieldDef, ul_rva: u32) -> HResult;
        fn Merge(
            p_import: *mut c_void,
            p_host_map_token: *mut c_void,
            p_handler: *mut c_void,
        ) -> HResult;
        fn MergeEnd() -> HResult;
    }
}

com_interface! {
    /// `IMetaDataEmit2`: generics and deltas.
    pub struct IMetaDataEmit2Vtbl for IMetaDataEmit2: IMetaDataEmitVtbl;
    /// `{F5DD9950-F693-42e6-830E-7B833E8146A9}`.
    pub const IID_IMETADATAEMIT2 = "F5DD9950-F693-42e6-830E-7B833E8146A9";
    {
        fn DefineMethodSpec(
            tk_parent: mdToken,
            pv_sig_blob: *const u8,
            cb_sig_blob: u32,
            pmi: *mut mdMethodSpec,
        ) -> HResult;
        fn GetDeltaSaveSize(f_save: CorSaveSize, pdw_save_size: *mut u32) -> HResult;
        fn SaveDelta(sz_file: *const u16, dw_save_flags: u32) -> HResult;
        fn SaveDeltaToStream(p_istream: *mut c_void, dw_save_flags: u32) -> HResult;
        fn SaveDeltaToMemory(pb_data: *mut c_void, cb_data: u32) -> HResult;
        fn DefineGenericParam(
            tk: mdToken,
            ul_param_seq: u32,
            dw_param_flags: u32,
            szname: *const u16,
            reserved: u32,
            rtk_constraints: *mut mdToken,
            pgp: *mut mdGenericParam,
        ) -> HResult;
        fn SetGenericParamProps(
            gp: mdGenericParam,
            dw_param_flags: u32,
            sz_name: *const u16,
            reserved: u32,
            rtk_constraints: *mut mdToken,
        ) -> HResult;
        fn ResetENCLog() -> HResult;
    }
}

com_interface! {
    /// `IMetaDataAssemblyImport`: the assembly manifest of a module.
    pub struct IMetaDataAssemblyImportVtbl for IMetaDataAssemblyImport: IUnknownVtbl;
    /// `{EE62470B-E94B-424e-9B7C-2F00C9249F93}`.
    pub const IID_IMETADATAASSEMBLYIMPORT = "EE62470B-E94B-424e-9B7C-2F00C9249F93";
    {
        fn GetAssemblyProps(
            mda: mdAssembly,
            ppb_public_key: *mut *const c_void,
            pcb_public_key: *mut u32,
            pul_hash_alg_id: *mut u32,
            sz_name: *mut u16,
            cch_name: u32,
            pch_name: *mut u32,
            p_meta_data: *mut AssemblyMetaData,
            pdw_assembly_flags: *mut u32,
        ) -> HResult;
        fn GetAssemblyRefProps(
            mdar: mdAssemblyRef,
            ppb_public_key_or_token: *mut *const c_void,
            pcb_public_key_or_token: *mut u32,
            sz_name: *mut u16,
            cch_name: u32,
            pch_name: *mut u32,
            p_meta_data: *mut AssemblyMetaData,
            ppb_hash_value: *mut *const c_void,
            pcb_hash_value: *mut u32,
            pdw_assembly_ref_flags: *mut u32,
        ) -> HResult;
        fn GetFileProps(
            mdf: mdFile,
            sz_name: *mut u16,
            cch_name: u32,
            pch_name: *mut u32,
            ppb_hash_value: *mut *const c_void,
            pcb_hash_value: *mut u32,
            pdw_file_flags: *mut u32,
        ) -> HResult;
        fn GetExportedTypeProps(
            mdct: mdExportedType,
            sz_name: *mut u16,
            cch_name: u32,
            pch_name: *mut u32,
            ptk_implementation: *mut mdToken,
            ptk_type_def: *mut mdTypeDef,
            pdw_exported_type_flags: *mut u32,
        ) -> HResult;
        fn GetManifestResourceProps(
            mdmr: mdManifestResource,
            sz_name: *mut u16,
            cch_name: u32,
            pch_name: *mut u32,
            ptk_implementation: *mut mdToken,
            pdw_offset: *mut u32,
            pdw_resource_flags: *mut u32,
        ) -> HResult;
        fn EnumAssemblyRefs(
            ph_enum: *mut HCorEnum,
            r_assembly_refs: *mut mdAssemblyRef,
            c_max: u32,
            pc_tokens: *mut u32,
        ) -> HResult;
        fn EnumFiles(
            ph_enum: *mut HCorEnum,
            r_files: *mut mdFile,
            c_max: u32,
            pc_tokens: *mut u32,
        ) -> HResult;
        fn EnumExportedTypes(
            ph_enum: *mut HCorEnum,
            r_exported_types: *mut mdExportedType,
            c_max: u32,
            pc_tokens: *mut u32,
        ) -> HResult;
        fn EnumManifestResources(
            ph_enum: *mut HCorEnum,
            r_manifest_resources: *mut mdManifestResource,
            c_max: u32,
            pc_tokens: *mut u32,
        ) -> HResult;
        fn GetAssemblyFromScope(ptk_assembly: *mut mdAssembly) -> HResult;
        fn FindExportedTypeByName(
            sz_name: *const u16,
            mdt_exported_type: mdToken,
            ptk_exported_type: *mut mdExportedType,
        ) -> HResult;
        fn FindManifestResourceByName(
            sz_name: *const u16,
            ptk_manifest_resource: *mut mdManifestResource,
        ) -> HResult;
        fn CloseEnum(h_enum: HCorEnum);
        /// `pp_iunk` receives `IMetaDataAssemblyImport*` pointers.
        fn FindAssembliesByName(
            sz_app_base: *const u16,
            sz_private_bin: *const u16,
            sz_assembly_name: *const u16,
            pp_iunk: *mut *mut c_void,
            c_max: u32,
            pc_assemblies: *mut u32,
        ) -> HResult;
    }
}

com_interface! {
    /// `IMetaDataAssemblyEmit`: defining assembly references (to the assembly holding a
    /// profiler's helpers) and other manifest rows.
    pub struct IMetaDataAssemblyEmitVtbl for IMetaDataAssemblyEmit: IUnknownVtbl;
    /// `{211EF15B-5317-4438-B196-DEC87B887693}`.
    pub const IID_IMETADATAASSEMBLYEMIT = "211EF15B-5317-4438-B196-DEC87B887693";
    {
        fn DefineAssembly(
            pb_public_key: *const c_void,
            cb_public_key: u32,
            ul_hash_alg_id: u32,
            sz_name: *const u16,
            p_meta_data: *const AssemblyMetaData,
            dw_assembly_flags: u32,
            pma: *mut mdAssembly,
        ) -> HResult;
        fn DefineAssemblyRef(
            pb_public_key_or_token: *const c_void,
            cb_public_key_or_token: u32,
            sz_name: *const u16,
            p_meta_data: *const AssemblyMetaData,
            pb_hash_value: *const c_void,
            cb_hash_value: u32,
            dw_assembly_ref_flags: u32,
            pmdar: *mut mdAssemblyRef,
        ) -> HResult;
        fn DefineFile(
            sz_name: *const u16,
            pb_hash_value: *const c_void,
            cb_hash_value: u32,
            dw_file_flags: u32,
            pmdf: *mut mdFile,
        ) -> HResult;
        fn DefineExportedType(
            sz_name: *const u16,
            tk_implementation: mdToken,
            tk_type_def: mdTypeDef,
            dw_exported_type_flags: u32,
            pmdct: *mut mdExportedType,
        ) -> HResult;
        fn DefineManifestResource(
            sz_name: *const u16,
            tk_implementation: mdToken,
            dw_offset: u32,
            dw_resource_flags: u32,
            pmdmr: *mut mdManifestResource,
        ) -> HResult;
        fn SetAssemblyProps(
            pma: mdAssembly,
            pb_public_key: *const c_void,
            cb_public_key: u32,
            ul_hash_alg_id: u32,
            sz_name: *const u16,
            p_meta_data: *const AssemblyMetaData,
            dw_assembly_flags: u32,
        ) -> HResult;
        fn SetAssemblyRefProps(
            ar: mdAssemblyRef,
            pb_public_key_or_token: *const c_void,
            cb_public_key_or_token: u32,
            sz_name: *const u16,
            p_meta_data: *const AssemblyMetaData,
            pb_hash_value: *const c_void,
            cb_hash_value: u32,
            dw_assembly_ref_flags: u32,
        ) -> HResult;
        fn SetFileProps(
            file: mdFile,
            pb_hash_value: *const c_void,
            cb_hash_value: u32,
            dw_file_flags: u32,
        ) -> HResult;
        fn SetExportedTypeProps(
            ct: mdExportedType,
            tk_implementation: mdToken,
            tk_type_def: mdTypeDef,
            dw_exported_type_flags: u32,
        ) -> HResult;
        fn SetManifestResourceProps(
            mr: mdManifestResource,
            tk_implementation: mdToken,
            dw_offset: u32,
            dw_resource_flags: u32,
        ) -> HResult;
    }
}

// The metadata a profiler gets is thread-safe by the runtime's construction (no comment
// in cor.h names a threading model): `GetModuleMetaData` gives the module's public
// metadata object, for writing through a wrapper that forwards to it
// (`ProfilerMetadataEmitValidator` in recent runtimes). The runtime makes that object
// with `GetMDPublicInterfaceFromInternal` (src/coreclr/md/enc/mdinternalrw.cpp, about
// line 218 at 08038b39): a `RegMeta` created with the option `MDThreadSafetyOn` and
// sharing the module's internal reader-writer lock (`SetReaderWriterLock`), which its
// import methods take for reading (`LOCKREAD`) and its emit methods for writing
// (`LOCKWRITE`, as in `RegMeta::GetTokenFromSig`). Every interface below is a face of
// that one object.
// SAFETY: as just said: one object, thread-safe whatever interface it is seen through.
unsafe impl FreeThreaded for IMetaDataImportVtbl {}
// SAFETY: as for `IMetaDataImportVtbl`.
unsafe impl FreeThreaded for IMetaDataImport2Vtbl {}
// SAFETY: as for `IMetaDataImportVtbl`.
unsafe impl FreeThreaded for IMetaDataEmitVtbl {}
// SAFETY: as for `IMetaDataImportVtbl`.
unsafe impl FreeThreaded for IMetaDataEmit2Vtbl {}
// SAFETY: as for `IMetaDataImportVtbl`.
unsafe impl FreeThreaded for IMetaDataAssemblyImportVtbl {}
// SAFETY: as for `IMetaDataImportVtbl`.
unsafe impl FreeThreaded for IMetaDataAssemblyEmitVtbl {}

//! The host's function table (`ilr_host`): every host function of `host_fns`,
//! `module_fns` and `edit_fns`, in the header's order.

use std::sync::OnceLock;

use super::abi::{ABI_VERSION, HostApi};
use super::{edit_fns, host_fns, module_fns};

/// The host's function table, one for the process.
pub(super) fn host_api() -> &'static HostApi {
    static API: OnceLock<HostApi> = OnceLock::new();
    API.get_or_init(|| HostApi {
        size: u32::try_from(size_of::<HostApi>()).unwrap_or(u32::MAX),
        abi_version: ABI_VERSION,
        log: host_fns::host_log,
        option_integer: host_fns::option_integer,
        option_boolean: host_fns::option_boolean,
        option_string: host_fns::option_string,
        candidate_method: host_fns::candidate_method,
        candidate_name: host_fns::candidate_name,
        edit_method: host_fns::edit_method,
        edit_name: host_fns::edit_name,
        edit_options: host_fns::edit_options,
        edit_return_type: host_fns::edit_return_type,
        body_first: host_fns::body_first,
        body_next: host_fns::body_next,
        body_get: host_fns::body_get,
        body_insert_before: host_fns::body_insert_before,
        body_insert_after: host_fns::body_insert_after,
        body_insert_at_entry: host_fns::body_insert_at_entry,
        body_insert_before_returns: host_fns::body_insert_before_returns,
        option_string_at: host_fns::option_string_at,
        candidate_is_target: host_fns::candidate_is_target,
        module_id: module_fns::module_id,
        module_assembly_name: module_fns::module_assembly_name,
        module_assembly_ref: module_fns::module_assembly_ref,
        module_type_ref: module_fns::module_type_ref,
        module_find_type: module_fns::module_find_type,
        module_type_spec: module_fns::module_type_spec,
        module_method_ref: module_fns::module_method_ref,
        module_field_ref: module_fns::module_field_ref,
        module_method_spec: module_fns::module_method_spec,
        module_user_string: module_fns::module_user_string,
        module_signature: module_fns::module_signature,
        module_signature_bytes: module_fns::module_signature_bytes,
        module_set_item: module_fns::module_set_item,
        module_item: module_fns::module_item,
        edit_module_item: edit_fns::edit_module_item,
        edit_method_item: edit_fns::edit_method_item,
        edit_set_method_item: edit_fns::edit_set_method_item,
        edit_add_local: edit_fns::edit_add_local,
        edit_single_ret: edit_fns::edit_single_ret,
        edit_wrap: edit_fns::edit_wrap,
    })
}

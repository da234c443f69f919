//! The C ABI's types, as `include/ilrewrite_method.h` declares them (`#[repr(C)]`, the
//! same order and widths; a test compiles the header and compares every size and
//! offset).

use core::ffi::{c_char, c_void};

/// `ILR_ABI_VERSION`: the version of the ABI this crate speaks.
pub const ABI_VERSION: u32 = 1;

/// `ilr_status`.
pub type Status = i32;
/// `ILR_OK`.
pub const OK: Status = 0;
/// `ILR_E_INVALID_HANDLE`.
pub const E_INVALID_HANDLE: Status = -1;
/// `ILR_E_INVALID_ARGUMENT`.
pub const E_INVALID_ARGUMENT: Status = -2;
/// `ILR_E_NOT_FOUND`.
pub const E_NOT_FOUND: Status = -3;
/// `ILR_E_REFUSED`.
pub const E_REFUSED: Status = -5;
/// `ILR_E_FAILED`.
pub const E_FAILED: Status = -6;

/// `ILR_OPTION_*`.
pub const OPTION_INTEGER: u32 = 1;
pub const OPTION_BOOLEAN: u32 = 2;
pub const OPTION_STRING: u32 = 3;
pub const OPTION_STRINGS: u32 = 4;
pub const OPTION_SELECTORS: u32 = 5;

/// `ILR_OPERAND_*`.
pub const OPERAND_NONE: u16 = 0;
pub const OPERAND_INT: u16 = 1;
pub const OPERAND_LONG: u16 = 2;
pub const OPERAND_FLOAT32: u16 = 3;
pub const OPERAND_FLOAT64: u16 = 4;
pub const OPERAND_VAR: u16 = 5;
pub const OPERAND_TOKEN: u16 = 6;
pub const OPERAND_TARGET: u16 = 7;
pub const OPERAND_SWITCH: u16 = 8;
pub const OPERAND_STATE_LOCAL: u16 = 9;
pub const OPERAND_RETURN_LOCAL: u16 = 10;
pub const OPERAND_METHOD_ID: u16 = 11;
pub const OPERAND_MODULE_ID: u16 = 12;
pub const OPERAND_CODE: u16 = 13;

/// `ILR_REDIRECT`, `ILR_KEEP`.
pub const REDIRECT: u32 = 1;
pub const KEEP: u32 = 0;

/// `ILR_WANT_NO`.
#[allow(
    dead_code,
    reason = "the header's; `wants` takes any answer but ILR_WANT_EDIT and ILR_WANT_EDIT_SINGLE_RET as no (compared by layout_tests)"
)]
pub const WANT_NO: i32 = 0;
/// `ILR_WANT_EDIT`.
pub const WANT_EDIT: i32 = 1;
/// `ILR_WANT_EDIT_SINGLE_RET`.
pub const WANT_EDIT_SINGLE_RET: i32 = 2;

/// `ilr_options`, `ilr_candidate`, `ilr_edit`, `ilr_module`: handle numbers.
pub type Handle = u64;

/// `ilr_error`.
#[repr(C)]
#[derive(Debug)]
pub struct ErrorBuffer {
    pub data: *mut c_char,
    pub capacity: usize,
    pub length: usize,
}

/// `ilr_str`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct Str {
    pub data: *const c_char,
    pub length: usize,
}

/// `ilr_option_spec`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct OptionSpecC {
    pub name: *const c_char,
    pub kind: u32,
}

/// `ilr_instruction`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct InstructionC {
    pub id: u32,
    pub opcode: u16,
    pub operand_kind: u16,
    pub operand: i64,
}

/// `ilr_assembly_ref`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct AssemblyRefC {
    pub name: *const c_char,
    pub version: [u16; 4],
    pub public_key_token: *const u8,
}

/// `ilr_item_destructor`.
pub type ItemDestructor = Option<unsafe extern "C" fn(*mut c_void)>;

/// `ilr_wrap`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct WrapC {
    pub size: u32,
    pub entry: *const InstructionC,
    pub entry_count: usize,
    pub exit: *const InstructionC,
    pub exit_count: usize,
    pub on_return: *const InstructionC,
    pub on_return_count: usize,
    pub state_local: *const c_char,
}

/// `ilr_host`: what the crate gives a library.
#[repr(C)]
#[derive(Debug)]
pub struct HostApi {
    pub size: u32,
    pub abi_version: u32,
    pub log: unsafe extern "C" fn(*const c_char, usize),
    pub option_integer: unsafe extern "C" fn(Handle, *const c_char, *mut i64) -> Status,
    pub option_boolean: unsafe extern "C" fn(Handle, *const c_char, *mut i32) -> Status,
    pub option_string: unsafe extern "C" fn(Handle, *const c_char, *mut Str) -> Status,
    pub candidate_method: unsafe extern "C" fn(Handle, *mut u64, *mut u32) -> Status,
    pub candidate_name: unsafe extern "C" fn(Handle, *mut Str) -> Status,
    pub edit_method: unsafe extern "C" fn(Handle, *mut u64, *mut u32) -> Status,
    pub edit_name: unsafe extern "C" fn(Handle, *mut Str) -> Status,
    pub edit_options: unsafe extern "C" fn(Handle, *mut Handle) -> Status,
    pub edit_return_type: unsafe extern "C" fn(Handle, *mut u8) -> Status,
    pub body_first: unsafe extern "C" fn(Handle, *mut u32) -> Status,
    pub body_next: unsafe extern "C" fn(Handle, u32, *mut u32) -> Status,
    pub body_get: unsafe extern "C" fn(Handle, u32, *mut InstructionC) -> Status,
    pub body_insert_before:
        unsafe extern "C" fn(Handle, u32, u32, *const InstructionC, usize, *mut u32) -> Status,
    pub body_insert_after:
        unsafe extern "C" fn(Handle, u32, *const InstructionC, usize, *mut u32) -> Status,
    pub body_insert_at_entry:
        unsafe extern "C" fn(Handle, *const InstructionC, usize, *mut u32) -> Status,
    pub body_insert_before_returns:
        unsafe extern "C" fn(Handle, *const InstructionC, usize) -> Status,
    pub option_string_at: unsafe extern "C" fn(Handle, *const c_char, u32, *mut Str) -> Status,
    pub candidate_is_target: unsafe extern "C" fn(Handle, *mut i32) -> Status,
    pub module_id: unsafe extern "C" fn(Handle, *mut u64) -> Status,
    pub module_assembly_name: unsafe extern "C" fn(Handle, *mut Str) -> Status,
    pub module_assembly_ref: unsafe extern "C" fn(Handle, *const AssemblyRefC, *mut u32) -> Status,
    pub module_type_ref: unsafe extern "C" fn(Handle, u32, *const c_char, *mut u32) -> Status,
    pub module_find_type: unsafe extern "C" fn(Handle, *const c_char, *mut u32) -> Status,
    pub module_type_spec: unsafe extern "C" fn(Handle, *const c_char, *mut u32) -> Status,
    pub module_method_ref:
        unsafe extern "C" fn(Handle, u32, *const c_char, *const c_char, *mut u32) -> Status,
    pub module_field_ref:
        unsafe extern "C" fn(Handle, u32, *const c_char, *const c_char, *mut u32) -> Status,
    pub module_method_spec: unsafe extern "C" fn(Handle, u32, *const c_char, *mut u32) -> Status,
    pub module_user_string: unsafe extern "C" fn(Handle, *const c_char, usize, *mut u32) -> Status,
    pub module_signature: unsafe extern "C" fn(Handle, *const c_char, *mut u32) -> Status,
    pub module_signature_bytes: unsafe extern "C" fn(Handle, *const u8, usize, *mut u32) -> Status,
    pub module_set_item: unsafe extern "C" fn(Handle, *mut c_void, ItemDestructor) -> Status,
    pub module_item: unsafe extern "C" fn(Handle, *mut *mut c_void) -> Status,
    pub edit_module_item: unsafe extern "C" fn(Handle, *mut *mut c_void) -> Status,
    pub edit_method_item: unsafe extern "C" fn(Handle, *mut *mut c_void) -> Status,
    pub edit_set_method_item: unsafe extern "C" fn(Handle, *mut c_void, ItemDestructor) -> Status,
    pub edit_add_local: unsafe extern "C" fn(Handle, *const c_char, *mut u16) -> Status,
    pub edit_single_ret: unsafe extern "C" fn(Handle, *mut u32, *mut i32) -> Status,
    pub edit_wrap: unsafe extern "C" fn(Handle, *const WrapC) -> Status,
}

/// `ilr_method`: what a library gives the crate. Every function pointer may be null
/// where the header says so (`Option`).
#[repr(C)]
#[derive(Debug)]
pub struct MethodApi {
    pub size: u32,
    pub this: *mut c_void,
    pub name: *const c_char,
    pub priority: i32,
    pub options: *const OptionSpecC,
    pub option_count: u32,
    pub start: Option<unsafe extern "C" fn(*mut c_void, Handle, *mut ErrorBuffer) -> Status>,
    pub check_options:
        Option<unsafe extern "C" fn(*mut c_void, Handle, *mut ErrorBuffer) -> Status>,
    pub wants: Option<unsafe extern "C" fn(*mut c_void, Handle) -> i32>,
    pub edit:
        Option<unsafe extern "C" fn(*mut c_void, Handle, *mut i32, *mut ErrorBuffer) -> Status>,
    pub destroy: Option<unsafe extern "C" fn(*mut c_void)>,
    pub targets: Option<
        unsafe extern "C" fn(
            *mut c_void,
            *mut *const *const c_char,
            *mut u32,
            *mut ErrorBuffer,
        ) -> Status,
    >,
    pub module_loaded:
        Option<unsafe extern "C" fn(*mut c_void, Handle, *mut ErrorBuffer) -> Status>,
    pub events: u32,
    pub events_high: u32,
    pub callbacks: [u64; 2],
    pub callback: Option<unsafe extern "C" fn(*mut c_void, u32, *const u64, u32, *mut i32)>,
}

/// `ilrewrite_method_create`.
pub type CreateFn =
    unsafe extern "C" fn(*const HostApi, *mut MethodApi, *mut ErrorBuffer) -> Status;

/// The exported symbols' names (NUL-terminated, as `dlsym` takes them).
pub const VERSION_SYMBOL: &[u8] = b"ilrewrite_abi_version\0";
pub const CREATE_SYMBOL: &[u8] = b"ilrewrite_method_create\0";

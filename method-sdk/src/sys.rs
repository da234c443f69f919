//! The raw declarations of `include/ilrewrite_method.h` (ABI version 1), written by hand
//! with the header's own names: `#[repr(C)]` structs with the same fields in the same
//! order and widths, and the `#define`d constants. A test compiles the header with the
//! system C compiler and compares every size, offset and constant with these.
//!
//! Nothing here is safe to use on its own: the crate's safe API ([`Method`](crate::Method),
//! [`export_method!`](crate::export_method)) is built on it. It is public for what the
//! safe API does not cover, and for tests.
#![allow(
    non_camel_case_types,
    reason = "the header's names, so that each declaration can be checked against it"
)]

use core::ffi::{c_char, c_void};

/// `ILR_ABI_VERSION`: the version of the ABI these declarations are; a library exports
/// it as `ilrewrite_abi_version` and the host checks it before any call.
pub const ILR_ABI_VERSION: u32 = 1;

/// `ilr_status`: a function's result, [`ILR_OK`] or a negative error.
pub type ilr_status = i32;

/// `ILR_OK`: it worked.
pub const ILR_OK: ilr_status = 0;
/// `ILR_E_INVALID_HANDLE`: a handle used outside the call that received it (or on
/// another thread).
pub const ILR_E_INVALID_HANDLE: ilr_status = -1;
/// `ILR_E_INVALID_ARGUMENT`: an argument the host cannot take (a null pointer, an
/// unknown id, an operand that does not fit its opcode or the method: an argument or
/// local it does not have, a token of another table or of no row of the module; a
/// prefix without the instruction it prefixes after it in the same code; a name that is
/// not UTF-8); nothing was changed.
pub const ILR_E_INVALID_ARGUMENT: ilr_status = -2;
/// `ILR_E_NOT_FOUND`: what was asked for is not there (an option not given).
pub const ILR_E_NOT_FOUND: ilr_status = -3;
/// `ILR_E_REFUSED`: the host refused the edit (it would break the body); nothing was
/// changed.
pub const ILR_E_REFUSED: ilr_status = -5;
/// `ILR_E_FAILED`: the library's own failure, its message in the [`ilr_error`].
pub const ILR_E_FAILED: ilr_status = -6;

/// `ilr_error`: a message buffer the host provides; the library writes at most
/// `capacity` bytes of UTF-8 to `data` and sets `length`.
#[repr(C)]
#[derive(Debug)]
pub struct ilr_error {
    /// Where the message goes.
    pub data: *mut c_char,
    /// How many bytes `data` takes.
    pub capacity: usize,
    /// How many bytes were written.
    pub length: usize,
}

/// `ilr_str`: a UTF-8 string the host lends (not NUL-terminated) until the library's
/// current call returns.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ilr_str {
    /// The first byte.
    pub data: *const c_char,
    /// The number of bytes.
    pub length: usize,
}

/// `ilr_options`: a handle to an instrumentation method's options, valid only during
/// the call that received it and on its thread.
pub type ilr_options = u64;
/// `ilr_candidate`: a handle to a method being asked about (`wants`), valid as
/// [`ilr_options`].
pub type ilr_candidate = u64;
/// `ilr_edit`: a handle to a method body being edited (`edit`), valid as
/// [`ilr_options`].
pub type ilr_edit = u64;
/// `ilr_module`: a handle to a module that finished loading (`module_loaded`), valid as
/// [`ilr_options`].
pub type ilr_module = u64;

/// `ILR_OPTION_INTEGER`: an option whose value is a 64-bit integer.
pub const ILR_OPTION_INTEGER: u32 = 1;
/// `ILR_OPTION_BOOLEAN`: an option whose value is `true` or `false`.
pub const ILR_OPTION_BOOLEAN: u32 = 2;
/// `ILR_OPTION_STRING`: an option whose value is a string.
pub const ILR_OPTION_STRING: u32 = 3;
/// `ILR_OPTION_STRINGS`: an option whose value is a list of strings (ABI version 1
/// has no getter for it).
pub const ILR_OPTION_STRINGS: u32 = 4;
/// `ILR_OPTION_SELECTORS`: an option whose value is a list of method selectors (ABI
/// version 1 has no getter for it).
pub const ILR_OPTION_SELECTORS: u32 = 5;

/// `ilr_option_spec`: one option the library takes; the configuration may give only
/// these, of this kind (checked by the host before `start`).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ilr_option_spec {
    /// Its name, NUL-terminated UTF-8, valid until `destroy` returns.
    pub name: *const c_char,
    /// Its kind: one of the `ILR_OPTION_*`.
    pub kind: u32,
}

/// `ILR_OPERAND_NONE`: no operand.
pub const ILR_OPERAND_NONE: u16 = 0;
/// `ILR_OPERAND_INT`: `ldc.i4(.s)`, `unaligned.`, `no.`: the value.
pub const ILR_OPERAND_INT: u16 = 1;
/// `ILR_OPERAND_LONG`: `ldc.i8`'s value.
pub const ILR_OPERAND_LONG: u16 = 2;
/// `ILR_OPERAND_FLOAT32`: `ldc.r4`'s IEEE-754 bits, in the low 32 bits.
pub const ILR_OPERAND_FLOAT32: u16 = 3;
/// `ILR_OPERAND_FLOAT64`: `ldc.r8`'s IEEE-754 bits.
pub const ILR_OPERAND_FLOAT64: u16 = 4;
/// `ILR_OPERAND_VAR`: an argument or local index.
pub const ILR_OPERAND_VAR: u16 = 5;
/// `ILR_OPERAND_TOKEN`: a metadata token.
pub const ILR_OPERAND_TOKEN: u16 = 6;
/// `ILR_OPERAND_TARGET`: a branch's target, the id of an instruction.
pub const ILR_OPERAND_TARGET: u16 = 7;
/// `ILR_OPERAND_SWITCH`: `switch`'s number of targets (read only).
pub const ILR_OPERAND_SWITCH: u16 = 8;
/// `ILR_OPERAND_CODE`: only in code the library inserts (`body_insert_*` and
/// [`ilr_wrap`]): a branch to the instruction at this index (from 0) of the same code
/// array, which must be in it.
pub const ILR_OPERAND_CODE: u16 = 13;
/// `ILR_OPERAND_STATE_LOCAL`: only in the code of an [`ilr_wrap`]: `ldloc`, `ldloca` or
/// `stloc` of the wrap's state local (the operand's value is ignored).
pub const ILR_OPERAND_STATE_LOCAL: u16 = 9;
/// `ILR_OPERAND_RETURN_LOCAL`: only in the code of an [`ilr_wrap`]: `ldloc`, `ldloca` or
/// `stloc` of the return-value local.
pub const ILR_OPERAND_RETURN_LOCAL: u16 = 10;
/// `ILR_OPERAND_METHOD_ID`: only in the code of an [`ilr_wrap`]: `ldc.i4` of the
/// method's MethodDef token.
pub const ILR_OPERAND_METHOD_ID: u16 = 11;
/// `ILR_OPERAND_MODULE_ID`: only in the code of an [`ilr_wrap`]: `ldc.i8` of the
/// module's ModuleID.
pub const ILR_OPERAND_MODULE_ID: u16 = 12;

/// `ilr_instruction`: one instruction. `id` names an instruction of the body (1 or
/// more, stable for the edit call), 0 in new code; `opcode` is the ECMA-335 value (one
/// byte, or `0xFE00 |` the second byte).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ilr_instruction {
    /// The instruction's id, 0 in new code.
    pub id: u32,
    /// The opcode.
    pub opcode: u16,
    /// One of the `ILR_OPERAND_*`.
    pub operand_kind: u16,
    /// The operand, as its kind says.
    pub operand: i64,
}

/// `ilr_assembly_ref`: an assembly a module's new references resolve in (culture
/// neutral), for `module_assembly_ref`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ilr_assembly_ref {
    /// Its simple name, NUL-terminated UTF-8.
    pub name: *const c_char,
    /// Major, minor, build, revision.
    pub version: [u16; 4],
    /// 8 bytes, or null for none.
    pub public_key_token: *const u8,
}

/// `ilr_item_destructor`: a data item's destructor, called once, on any thread, when the
/// item is replaced or removed, or when what it belongs to goes (possibly after
/// `destroy`: the library stays loaded until the last item is destroyed). Null: none.
pub type ilr_item_destructor = Option<unsafe extern "C" fn(item: *mut c_void)>;

/// `ilr_wrap`: code run around the whole body (`ilr_host.edit_wrap`): `entry` before it,
/// `exit` in a finally on every way out, `on_return` after `exit` on a normal return
/// only. The code may use the `ILR_OPERAND_STATE_LOCAL`, `_RETURN_LOCAL`, `_METHOD_ID`
/// and `_MODULE_ID` pseudo-operands; the state local exists when `state_local` names
/// its type.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ilr_wrap {
    /// `sizeof(ilr_wrap)` as the library knows it.
    pub size: u32,
    /// The entry code (`entry_count` instructions).
    pub entry: *const ilr_instruction,
    /// The number of instructions of `entry`.
    pub entry_count: usize,
    /// The exit code, run in a finally (`exit_count` instructions).
    pub exit: *const ilr_instruction,
    /// The number of instructions of `exit`.
    pub exit_count: usize,
    /// The code run after a normal return (`on_return_count` instructions).
    pub on_return: *const ilr_instruction,
    /// The number of instructions of `on_return`.
    pub on_return_count: usize,
    /// The state local's type as text, NUL-terminated, or null for none.
    pub state_local: *const c_char,
}

/// `ILR_REDIRECT`: `body_insert_before`: branches and regions that named the
/// instruction now name the first new one.
pub const ILR_REDIRECT: u32 = 1;
/// `ILR_KEEP`: `body_insert_before`: they keep naming the old instruction.
pub const ILR_KEEP: u32 = 0;

/// `ilr_host`: the host's function table, valid until the library's `destroy`
/// returns. The functions' contracts are the header's.
#[repr(C)]
#[derive(Debug)]
pub struct ilr_host {
    /// `sizeof(ilr_host)` as the host knows it; fields past it are absent.
    pub size: u32,
    /// The host's `ILR_ABI_VERSION`.
    pub abi_version: u32,
    /// A line in the profiler's log.
    pub log: unsafe extern "C" fn(message: *const c_char, length: usize),
    /// An integer option's value; [`ILR_E_NOT_FOUND`] when not given.
    pub option_integer: unsafe extern "C" fn(
        options: ilr_options,
        name: *const c_char,
        value: *mut i64,
    ) -> ilr_status,
    /// A boolean option's value (0 or 1); [`ILR_E_NOT_FOUND`] when not given.
    pub option_boolean: unsafe extern "C" fn(
        options: ilr_options,
        name: *const c_char,
        value: *mut i32,
    ) -> ilr_status,
    /// A string option's value; [`ILR_E_NOT_FOUND`] when not given.
    pub option_string: unsafe extern "C" fn(
        options: ilr_options,
        name: *const c_char,
        value: *mut ilr_str,
    ) -> ilr_status,
    /// The candidate's module id and MethodDef token.
    pub candidate_method: unsafe extern "C" fn(
        candidate: ilr_candidate,
        module: *mut u64,
        token: *mut u32,
    ) -> ilr_status,
    /// The candidate's name, `Namespace.Type::Method` (nested types `Outer/Inner`).
    pub candidate_name:
        unsafe extern "C" fn(candidate: ilr_candidate, name: *mut ilr_str) -> ilr_status,
    /// The edited method's module id and token.
    pub edit_method:
        unsafe extern "C" fn(edit: ilr_edit, module: *mut u64, token: *mut u32) -> ilr_status,
    /// The edited method's name.
    pub edit_name: unsafe extern "C" fn(edit: ilr_edit, name: *mut ilr_str) -> ilr_status,
    /// The options of this edit (the configured ones, or a live request's).
    pub edit_options: unsafe extern "C" fn(edit: ilr_edit, options: *mut ilr_options) -> ilr_status,
    /// The ECMA-335 element type of the edited method's return type.
    pub edit_return_type: unsafe extern "C" fn(edit: ilr_edit, element_type: *mut u8) -> ilr_status,
    /// The first instruction's id.
    pub body_first: unsafe extern "C" fn(edit: ilr_edit, id: *mut u32) -> ilr_status,
    /// The id of the instruction after `id` (0 at the end).
    pub body_next: unsafe extern "C" fn(edit: ilr_edit, id: u32, next: *mut u32) -> ilr_status,
    /// The instruction `id`.
    pub body_get: unsafe extern "C" fn(
        edit: ilr_edit,
        id: u32,
        instruction: *mut ilr_instruction,
    ) -> ilr_status,
    /// Inserts `count` instructions right before `at` (`incoming`: [`ILR_REDIRECT`] or
    /// [`ILR_KEEP`]); `ids`, when not null, receives their ids.
    pub body_insert_before: unsafe extern "C" fn(
        edit: ilr_edit,
        at: u32,
        incoming: u32,
        code: *const ilr_instruction,
        count: usize,
        ids: *mut u32,
    ) -> ilr_status,
    /// Inserts `count` instructions right after `at`.
    pub body_insert_after: unsafe extern "C" fn(
        edit: ilr_edit,
        at: u32,
        code: *const ilr_instruction,
        count: usize,
        ids: *mut u32,
    ) -> ilr_status,
    /// Inserts `count` instructions before the first one, branches to it kept.
    pub body_insert_at_entry: unsafe extern "C" fn(
        edit: ilr_edit,
        code: *const ilr_instruction,
        count: usize,
        ids: *mut u32,
    ) -> ilr_status,
    /// Inserts a copy of `count` instructions before every `ret`.
    pub body_insert_before_returns: unsafe extern "C" fn(
        edit: ilr_edit,
        code: *const ilr_instruction,
        count: usize,
    ) -> ilr_status,
    /// Item `index` of a strings or selectors option.
    pub option_string_at: unsafe extern "C" fn(
        options: ilr_options,
        name: *const c_char,
        index: u32,
        value: *mut ilr_str,
    ) -> ilr_status,
    /// Whether the candidate is one of the library's targets.
    pub candidate_is_target:
        unsafe extern "C" fn(candidate: ilr_candidate, is_target: *mut i32) -> ilr_status,
    /// During `module_loaded`: the module's ModuleID.
    pub module_id: unsafe extern "C" fn(module: ilr_module, id: *mut u64) -> ilr_status,
    /// The simple name of the module's assembly.
    pub module_assembly_name:
        unsafe extern "C" fn(module: ilr_module, name: *mut ilr_str) -> ilr_status,
    /// An AssemblyRef (the existing one of that name, else a new row).
    pub module_assembly_ref: unsafe extern "C" fn(
        module: ilr_module,
        assembly: *const ilr_assembly_ref,
        token: *mut u32,
    ) -> ilr_status,
    /// A TypeRef to `name` (`Namespace.Type`) in `scope` (an AssemblyRef, a ModuleRef or,
    /// for a nested type, its enclosing TypeRef).
    pub module_type_ref: unsafe extern "C" fn(
        module: ilr_module,
        scope: u32,
        name: *const c_char,
        token: *mut u32,
    ) -> ilr_status,
    /// The module's own TypeDef `name` (nested `Outer/Inner`); [`ILR_E_NOT_FOUND`].
    pub module_find_type: unsafe extern "C" fn(
        module: ilr_module,
        name: *const c_char,
        token: *mut u32,
    ) -> ilr_status,
    /// A TypeSpec of a type as text.
    pub module_type_spec: unsafe extern "C" fn(
        module: ilr_module,
        type_: *const c_char,
        token: *mut u32,
    ) -> ilr_status,
    /// A MemberRef to method `name` of `parent` with `signature` (text).
    pub module_method_ref: unsafe extern "C" fn(
        module: ilr_module,
        parent: u32,
        name: *const c_char,
        signature: *const c_char,
        token: *mut u32,
    ) -> ilr_status,
    /// A MemberRef to field `name` of `parent` of type `type_` (text).
    pub module_field_ref: unsafe extern "C" fn(
        module: ilr_module,
        parent: u32,
        name: *const c_char,
        type_: *const c_char,
        token: *mut u32,
    ) -> ilr_status,
    /// A MethodSpec of generic method `method` with `arguments` (text).
    pub module_method_spec: unsafe extern "C" fn(
        module: ilr_module,
        method: u32,
        arguments: *const c_char,
        token: *mut u32,
    ) -> ilr_status,
    /// A user string (`ldstr`) of `length` bytes of UTF-8.
    pub module_user_string: unsafe extern "C" fn(
        module: ilr_module,
        text: *const c_char,
        length: usize,
        token: *mut u32,
    ) -> ilr_status,
    /// A StandAloneSig of a call-site signature as text.
    pub module_signature: unsafe extern "C" fn(
        module: ilr_module,
        signature: *const c_char,
        token: *mut u32,
    ) -> ilr_status,
    /// A StandAloneSig of a call-site signature as raw signature bytes.
    pub module_signature_bytes: unsafe extern "C" fn(
        module: ilr_module,
        blob: *const u8,
        length: usize,
        token: *mut u32,
    ) -> ilr_status,
    /// Sets the library's data item on the module (a null `item` removes it).
    pub module_set_item: unsafe extern "C" fn(
        module: ilr_module,
        item: *mut c_void,
        destroy: ilr_item_destructor,
    ) -> ilr_status,
    /// The library's data item on the module; [`ILR_E_NOT_FOUND`] when unset.
    pub module_item: unsafe extern "C" fn(module: ilr_module, item: *mut *mut c_void) -> ilr_status,
    /// During `edit`: the library's item on the edited method's module;
    /// [`ILR_E_NOT_FOUND`] when unset.
    pub edit_module_item:
        unsafe extern "C" fn(edit: ilr_edit, item: *mut *mut c_void) -> ilr_status,
    /// The library's item on the edited method; [`ILR_E_NOT_FOUND`] when unset.
    pub edit_method_item:
        unsafe extern "C" fn(edit: ilr_edit, item: *mut *mut c_void) -> ilr_status,
    /// Sets the library's item on the edited method (a null `item` removes it).
    pub edit_set_method_item: unsafe extern "C" fn(
        edit: ilr_edit,
        item: *mut c_void,
        destroy: ilr_item_destructor,
    ) -> ilr_status,
    /// A new local of `type_` (text); its index.
    pub edit_add_local:
        unsafe extern "C" fn(edit: ilr_edit, type_: *const c_char, index: *mut u16) -> ilr_status,
    /// The single-ret's epilogue (its first instruction's id) and return-value local (-1
    /// for `void`); [`ILR_E_NOT_FOUND`] unless `wants` answered
    /// [`ILR_WANT_EDIT_SINGLE_RET`].
    pub edit_single_ret: unsafe extern "C" fn(
        edit: ilr_edit,
        epilogue: *mut u32,
        return_local: *mut i32,
    ) -> ilr_status,
    /// Wraps the whole body (see [`ilr_wrap`]).
    pub edit_wrap: unsafe extern "C" fn(edit: ilr_edit, wrap: *const ilr_wrap) -> ilr_status,
}

/// `ILR_WANT_NO`: `wants`' answer: it does not edit this method.
pub const ILR_WANT_NO: i32 = 0;
/// `ILR_WANT_EDIT`: `wants`' answer: it edits this method.
pub const ILR_WANT_EDIT: i32 = 1;
/// `ILR_WANT_EDIT_SINGLE_RET`: `wants`' answer: it edits this method after the host
/// made it single-ret (`ilr_host.edit_single_ret`).
pub const ILR_WANT_EDIT_SINGLE_RET: i32 = 2;

/// `ilr_method`: what the library gives the host, filled by `ilrewrite_method_create`.
/// The function pointers the header allows to be null are `Option`s (a null `Option`
/// of a function pointer is the same bits as C's null).
#[repr(C)]
#[derive(Debug)]
pub struct ilr_method {
    /// `sizeof(ilr_method)` as the host knows it (set by the host).
    pub size: u32,
    /// The library's own state, passed back to every function (`self` in C).
    pub this: *mut c_void,
    /// The name configurations and logs use, NUL-terminated UTF-8, valid until
    /// `destroy` returns.
    pub name: *const c_char,
    /// The default priority (higher edits first).
    pub priority: i32,
    /// The options it takes (`option_count` of them), valid until `destroy` returns.
    pub options: *const ilr_option_spec,
    /// The number of entries of `options`.
    pub option_count: u32,
    /// Once, before anything else, with the configured options.
    pub start: Option<
        unsafe extern "C" fn(
            this: *mut c_void,
            options: ilr_options,
            error: *mut ilr_error,
        ) -> ilr_status,
    >,
    /// Checks the options of a live request.
    pub check_options: Option<
        unsafe extern "C" fn(
            this: *mut c_void,
            options: ilr_options,
            error: *mut ilr_error,
        ) -> ilr_status,
    >,
    /// Whether it edits this method: [`ILR_WANT_EDIT`] or [`ILR_WANT_NO`] (any other
    /// answer is taken as no).
    pub wants: Option<unsafe extern "C" fn(this: *mut c_void, candidate: ilr_candidate) -> i32>,
    /// Edits the body; sets `*changed` to 1 when it changed something.
    pub edit: Option<
        unsafe extern "C" fn(
            this: *mut c_void,
            edit: ilr_edit,
            changed: *mut i32,
            error: *mut ilr_error,
        ) -> ilr_status,
    >,
    /// Last: the profiler is done with it (not called when the runtime ends the
    /// process without releasing the profiler).
    pub destroy: Option<unsafe extern "C" fn(this: *mut c_void)>,
    /// After `start`, once: the methods it edits, as selectors.
    pub targets: Option<
        unsafe extern "C" fn(
            this: *mut c_void,
            selectors: *mut *const *const c_char,
            count: *mut u32,
            error: *mut ilr_error,
        ) -> ilr_status,
    >,
    /// A module finished loading: define the metadata later edits name.
    pub module_loaded: Option<
        unsafe extern "C" fn(
            this: *mut c_void,
            module: ilr_module,
            error: *mut ilr_error,
        ) -> ilr_status,
    >,
    /// The `COR_PRF_MONITOR` flags it needs beyond those of its callbacks.
    pub events: u32,
    /// The `COR_PRF_HIGH_MONITOR` flags it needs beyond those of its callbacks.
    pub events_high: u32,
    /// The callbacks it receives: bit `ILR_CALLBACK_x` of `callbacks[x / 64]`.
    pub callbacks: [u64; 2],
    /// Each subscribed callback: `id`, its `count` argument words at `args`, and
    /// `*answer` (arrives 1; 0 says no, for the callbacks that answer).
    pub callback: Option<
        unsafe extern "C" fn(
            this: *mut c_void,
            id: u32,
            args: *const u64,
            count: u32,
            answer: *mut i32,
        ),
    >,
}

/// `ilr_method_create_fn`: the type of the exported `ilrewrite_method_create`.
pub type ilr_method_create_fn = unsafe extern "C" fn(
    host: *const ilr_host,
    method: *mut ilr_method,
    error: *mut ilr_error,
) -> ilr_status;

/// Declares the `ILR_CALLBACK_*` ids (the header's "callbacks" section) once: each as a
/// constant here, as a [`CallbackId`](crate::CallbackId) constant of the same name
/// without the prefix, and in the list [`CallbackId::name`](crate::CallbackId::name)
/// reads. The layout test compares every value with the header's, and fails when the
/// header defines one this list lacks.
macro_rules! callback_ids {
    ($( $(#[doc = $doc:literal])* $c:ident $rust:ident = $id:literal; )*) => {
        $(
            $(#[doc = $doc])*
            pub const $c: u32 = $id;
        )*

        /// Every callback id, `(C name, id)`, in the header's order (each at its id:
        /// the layout test checks it).
        pub(crate) const CALLBACK_IDS: &[(&str, u32)] = &[$((stringify!($c), $c)),*];

        impl crate::CallbackId {
            $(
                $(#[doc = $doc])*
                pub const $rust: crate::CallbackId = crate::CallbackId::from_raw($c);
            )*
        }
    };
}

// The runtime's callbacks (ICorProfilerCallback .. ICorProfilerCallback11), one id each
// in the interfaces' slot order. Each carries its arguments as words (`uint64_t`), in
// the order given: IDs and pointers as their value, `uint32_t` and the `COR_PRF_*`
// enumerations zero-extended, `int32_t` and `HRESULT` sign-extended, `BOOL` 0 or 1.
callback_ids! {
    /// `ILR_CALLBACK_INITIALIZE`: not carried: the host answers it itself, and a library that
    /// subscribes to it is refused at load.
    ILR_CALLBACK_INITIALIZE INITIALIZE = 0;
    /// `ILR_CALLBACK_SHUTDOWN`: no arguments.
    ILR_CALLBACK_SHUTDOWN SHUTDOWN = 1;
    /// `ILR_CALLBACK_APP_DOMAIN_CREATION_STARTED`: arguments `AppDomainID app_domain`.
    ILR_CALLBACK_APP_DOMAIN_CREATION_STARTED APP_DOMAIN_CREATION_STARTED = 2;
    /// `ILR_CALLBACK_APP_DOMAIN_CREATION_FINISHED`: arguments `AppDomainID app_domain`,
    /// `HRESULT status`.
    ILR_CALLBACK_APP_DOMAIN_CREATION_FINISHED APP_DOMAIN_CREATION_FINISHED = 3;
    /// `ILR_CALLBACK_APP_DOMAIN_SHUTDOWN_STARTED`: arguments `AppDomainID app_domain`.
    ILR_CALLBACK_APP_DOMAIN_SHUTDOWN_STARTED APP_DOMAIN_SHUTDOWN_STARTED = 4;
    /// `ILR_CALLBACK_APP_DOMAIN_SHUTDOWN_FINISHED`: arguments `AppDomainID app_domain`,
    /// `HRESULT status`.
    ILR_CALLBACK_APP_DOMAIN_SHUTDOWN_FINISHED APP_DOMAIN_SHUTDOWN_FINISHED = 5;
    /// `ILR_CALLBACK_ASSEMBLY_LOAD_STARTED`: arguments `AssemblyID assembly`.
    ILR_CALLBACK_ASSEMBLY_LOAD_STARTED ASSEMBLY_LOAD_STARTED = 6;
    /// `ILR_CALLBACK_ASSEMBLY_LOAD_FINISHED`: arguments `AssemblyID assembly`, `HRESULT
    /// status`.
    ILR_CALLBACK_ASSEMBLY_LOAD_FINISHED ASSEMBLY_LOAD_FINISHED = 7;
    /// `ILR_CALLBACK_ASSEMBLY_UNLOAD_STARTED`: arguments `AssemblyID assembly`.
    ILR_CALLBACK_ASSEMBLY_UNLOAD_STARTED ASSEMBLY_UNLOAD_STARTED = 8;
    /// `ILR_CALLBACK_ASSEMBLY_UNLOAD_FINISHED`: arguments `AssemblyID assembly`, `HRESULT
    /// status`.
    ILR_CALLBACK_ASSEMBLY_UNLOAD_FINISHED ASSEMBLY_UNLOAD_FINISHED = 9;
    /// `ILR_CALLBACK_MODULE_LOAD_STARTED`: arguments `ModuleID module`.
    ILR_CALLBACK_MODULE_LOAD_STARTED MODULE_LOAD_STARTED = 10;
    /// `ILR_CALLBACK_MODULE_LOAD_FINISHED`: arguments `ModuleID module`, `HRESULT status`.
    ILR_CALLBACK_MODULE_LOAD_FINISHED MODULE_LOAD_FINISHED = 11;
    /// `ILR_CALLBACK_MODULE_UNLOAD_STARTED`: arguments `ModuleID module`.
    ILR_CALLBACK_MODULE_UNLOAD_STARTED MODULE_UNLOAD_STARTED = 12;
    /// `ILR_CALLBACK_MODULE_UNLOAD_FINISHED`: arguments `ModuleID module`, `HRESULT status`.
    ILR_CALLBACK_MODULE_UNLOAD_FINISHED MODULE_UNLOAD_FINISHED = 13;
    /// `ILR_CALLBACK_MODULE_ATTACHED_TO_ASSEMBLY`: arguments `ModuleID module`, `AssemblyID
    /// assembly`.
    ILR_CALLBACK_MODULE_ATTACHED_TO_ASSEMBLY MODULE_ATTACHED_TO_ASSEMBLY = 14;
    /// `ILR_CALLBACK_CLASS_LOAD_STARTED`: arguments `ClassID class`.
    ILR_CALLBACK_CLASS_LOAD_STARTED CLASS_LOAD_STARTED = 15;
    /// `ILR_CALLBACK_CLASS_LOAD_FINISHED`: arguments `ClassID class`, `HRESULT status`.
    ILR_CALLBACK_CLASS_LOAD_FINISHED CLASS_LOAD_FINISHED = 16;
    /// `ILR_CALLBACK_CLASS_UNLOAD_STARTED`: arguments `ClassID class`.
    ILR_CALLBACK_CLASS_UNLOAD_STARTED CLASS_UNLOAD_STARTED = 17;
    /// `ILR_CALLBACK_CLASS_UNLOAD_FINISHED`: arguments `ClassID class`, `HRESULT status`.
    ILR_CALLBACK_CLASS_UNLOAD_FINISHED CLASS_UNLOAD_FINISHED = 18;
    /// `ILR_CALLBACK_FUNCTION_UNLOAD_STARTED`: arguments `FunctionID function`.
    ILR_CALLBACK_FUNCTION_UNLOAD_STARTED FUNCTION_UNLOAD_STARTED = 19;
    /// `ILR_CALLBACK_JIT_COMPILATION_STARTED`: arguments `FunctionID function`, `BOOL
    /// is_safe_to_block`.
    ILR_CALLBACK_JIT_COMPILATION_STARTED JIT_COMPILATION_STARTED = 20;
    /// `ILR_CALLBACK_JIT_COMPILATION_FINISHED`: arguments `FunctionID function`, `HRESULT
    /// status`, `BOOL is_safe_to_block`.
    ILR_CALLBACK_JIT_COMPILATION_FINISHED JIT_COMPILATION_FINISHED = 21;
    /// `ILR_CALLBACK_JIT_CACHED_FUNCTION_SEARCH_STARTED`: arguments `FunctionID function`.
    ILR_CALLBACK_JIT_CACHED_FUNCTION_SEARCH_STARTED JIT_CACHED_FUNCTION_SEARCH_STARTED = 22;
    /// `ILR_CALLBACK_JIT_CACHED_FUNCTION_SEARCH_FINISHED`: arguments `FunctionID function`,
    /// `COR_PRF_JIT_CACHE result`.
    ILR_CALLBACK_JIT_CACHED_FUNCTION_SEARCH_FINISHED JIT_CACHED_FUNCTION_SEARCH_FINISHED = 23;
    /// `ILR_CALLBACK_JIT_FUNCTION_PITCHED`: arguments `FunctionID function`.
    ILR_CALLBACK_JIT_FUNCTION_PITCHED JIT_FUNCTION_PITCHED = 24;
    /// `ILR_CALLBACK_JIT_INLINING`: arguments `FunctionID caller`, `FunctionID callee`.
    ILR_CALLBACK_JIT_INLINING JIT_INLINING = 25;
    /// `ILR_CALLBACK_THREAD_CREATED`: arguments `ThreadID thread`.
    ILR_CALLBACK_THREAD_CREATED THREAD_CREATED = 26;
    /// `ILR_CALLBACK_THREAD_DESTROYED`: arguments `ThreadID thread`.
    ILR_CALLBACK_THREAD_DESTROYED THREAD_DESTROYED = 27;
    /// `ILR_CALLBACK_THREAD_ASSIGNED_TO_OS_THREAD`: arguments `ThreadID thread`, `uint32_t
    /// os_thread`.
    ILR_CALLBACK_THREAD_ASSIGNED_TO_OS_THREAD THREAD_ASSIGNED_TO_OS_THREAD = 28;
    /// `ILR_CALLBACK_REMOTING_CLIENT_INVOCATION_STARTED`: no arguments.
    ILR_CALLBACK_REMOTING_CLIENT_INVOCATION_STARTED REMOTING_CLIENT_INVOCATION_STARTED = 29;
    /// `ILR_CALLBACK_REMOTING_CLIENT_SENDING_MESSAGE`: arguments `GUID *cookie`, `BOOL
    /// is_async`.
    ILR_CALLBACK_REMOTING_CLIENT_SENDING_MESSAGE REMOTING_CLIENT_SENDING_MESSAGE = 30;
    /// `ILR_CALLBACK_REMOTING_CLIENT_RECEIVING_REPLY`: arguments `GUID *cookie`, `BOOL
    /// is_async`.
    ILR_CALLBACK_REMOTING_CLIENT_RECEIVING_REPLY REMOTING_CLIENT_RECEIVING_REPLY = 31;
    /// `ILR_CALLBACK_REMOTING_CLIENT_INVOCATION_FINISHED`: no arguments.
    ILR_CALLBACK_REMOTING_CLIENT_INVOCATION_FINISHED REMOTING_CLIENT_INVOCATION_FINISHED = 32;
    /// `ILR_CALLBACK_REMOTING_SERVER_RECEIVING_MESSAGE`: arguments `GUID *cookie`, `BOOL
    /// is_async`.
    ILR_CALLBACK_REMOTING_SERVER_RECEIVING_MESSAGE REMOTING_SERVER_RECEIVING_MESSAGE = 33;
    /// `ILR_CALLBACK_REMOTING_SERVER_INVOCATION_STARTED`: no arguments.
    ILR_CALLBACK_REMOTING_SERVER_INVOCATION_STARTED REMOTING_SERVER_INVOCATION_STARTED = 34;
    /// `ILR_CALLBACK_REMOTING_SERVER_INVOCATION_RETURNED`: no arguments.
    ILR_CALLBACK_REMOTING_SERVER_INVOCATION_RETURNED REMOTING_SERVER_INVOCATION_RETURNED = 35;
    /// `ILR_CALLBACK_REMOTING_SERVER_SENDING_REPLY`: arguments `GUID *cookie`, `BOOL is_async`.
    ILR_CALLBACK_REMOTING_SERVER_SENDING_REPLY REMOTING_SERVER_SENDING_REPLY = 36;
    /// `ILR_CALLBACK_UNMANAGED_TO_MANAGED_TRANSITION`: arguments `FunctionID function`,
    /// `COR_PRF_TRANSITION_REASON reason`.
    ILR_CALLBACK_UNMANAGED_TO_MANAGED_TRANSITION UNMANAGED_TO_MANAGED_TRANSITION = 37;
    /// `ILR_CALLBACK_MANAGED_TO_UNMANAGED_TRANSITION`: arguments `FunctionID function`,
    /// `COR_PRF_TRANSITION_REASON reason`.
    ILR_CALLBACK_MANAGED_TO_UNMANAGED_TRANSITION MANAGED_TO_UNMANAGED_TRANSITION = 38;
    /// `ILR_CALLBACK_RUNTIME_SUSPEND_STARTED`: arguments `COR_PRF_SUSPEND_REASON reason`.
    ILR_CALLBACK_RUNTIME_SUSPEND_STARTED RUNTIME_SUSPEND_STARTED = 39;
    /// `ILR_CALLBACK_RUNTIME_SUSPEND_FINISHED`: no arguments.
    ILR_CALLBACK_RUNTIME_SUSPEND_FINISHED RUNTIME_SUSPEND_FINISHED = 40;
    /// `ILR_CALLBACK_RUNTIME_SUSPEND_ABORTED`: no arguments.
    ILR_CALLBACK_RUNTIME_SUSPEND_ABORTED RUNTIME_SUSPEND_ABORTED = 41;
    /// `ILR_CALLBACK_RUNTIME_RESUME_STARTED`: no arguments.
    ILR_CALLBACK_RUNTIME_RESUME_STARTED RUNTIME_RESUME_STARTED = 42;
    /// `ILR_CALLBACK_RUNTIME_RESUME_FINISHED`: no arguments.
    ILR_CALLBACK_RUNTIME_RESUME_FINISHED RUNTIME_RESUME_FINISHED = 43;
    /// `ILR_CALLBACK_RUNTIME_THREAD_SUSPENDED`: arguments `ThreadID thread`.
    ILR_CALLBACK_RUNTIME_THREAD_SUSPENDED RUNTIME_THREAD_SUSPENDED = 44;
    /// `ILR_CALLBACK_RUNTIME_THREAD_RESUMED`: arguments `ThreadID thread`.
    ILR_CALLBACK_RUNTIME_THREAD_RESUMED RUNTIME_THREAD_RESUMED = 45;
    /// `ILR_CALLBACK_MOVED_REFERENCES`: arguments `uint32_t range_count`, `ObjectID
    /// *old_starts`, `ObjectID *new_starts`, `uint32_t *lengths`.
    ILR_CALLBACK_MOVED_REFERENCES MOVED_REFERENCES = 46;
    /// `ILR_CALLBACK_OBJECT_ALLOCATED`: arguments `ObjectID object`, `ClassID class`.
    ILR_CALLBACK_OBJECT_ALLOCATED OBJECT_ALLOCATED = 47;
    /// `ILR_CALLBACK_OBJECTS_ALLOCATED_BY_CLASS`: arguments `uint32_t class_count`, `ClassID
    /// *classes`, `uint32_t *counts`.
    ILR_CALLBACK_OBJECTS_ALLOCATED_BY_CLASS OBJECTS_ALLOCATED_BY_CLASS = 48;
    /// `ILR_CALLBACK_OBJECT_REFERENCES`: arguments `ObjectID object`, `ClassID class`,
    /// `uint32_t ref_count`, `ObjectID *refs`.
    ILR_CALLBACK_OBJECT_REFERENCES OBJECT_REFERENCES = 49;
    /// `ILR_CALLBACK_ROOT_REFERENCES`: arguments `uint32_t root_count`, `ObjectID *roots`.
    ILR_CALLBACK_ROOT_REFERENCES ROOT_REFERENCES = 50;
    /// `ILR_CALLBACK_EXCEPTION_THROWN`: arguments `ObjectID thrown`.
    ILR_CALLBACK_EXCEPTION_THROWN EXCEPTION_THROWN = 51;
    /// `ILR_CALLBACK_EXCEPTION_SEARCH_FUNCTION_ENTER`: arguments `FunctionID function`.
    ILR_CALLBACK_EXCEPTION_SEARCH_FUNCTION_ENTER EXCEPTION_SEARCH_FUNCTION_ENTER = 52;
    /// `ILR_CALLBACK_EXCEPTION_SEARCH_FUNCTION_LEAVE`: no arguments.
    ILR_CALLBACK_EXCEPTION_SEARCH_FUNCTION_LEAVE EXCEPTION_SEARCH_FUNCTION_LEAVE = 53;
    /// `ILR_CALLBACK_EXCEPTION_SEARCH_FILTER_ENTER`: arguments `FunctionID function`.
    ILR_CALLBACK_EXCEPTION_SEARCH_FILTER_ENTER EXCEPTION_SEARCH_FILTER_ENTER = 54;
    /// `ILR_CALLBACK_EXCEPTION_SEARCH_FILTER_LEAVE`: no arguments.
    ILR_CALLBACK_EXCEPTION_SEARCH_FILTER_LEAVE EXCEPTION_SEARCH_FILTER_LEAVE = 55;
    /// `ILR_CALLBACK_EXCEPTION_SEARCH_CATCHER_FOUND`: arguments `FunctionID function`.
    ILR_CALLBACK_EXCEPTION_SEARCH_CATCHER_FOUND EXCEPTION_SEARCH_CATCHER_FOUND = 56;
    /// `ILR_CALLBACK_EXCEPTION_OS_HANDLER_ENTER`: arguments `uintptr_t unused`.
    ILR_CALLBACK_EXCEPTION_OS_HANDLER_ENTER EXCEPTION_OS_HANDLER_ENTER = 57;
    /// `ILR_CALLBACK_EXCEPTION_OS_HANDLER_LEAVE`: arguments `uintptr_t unused`.
    ILR_CALLBACK_EXCEPTION_OS_HANDLER_LEAVE EXCEPTION_OS_HANDLER_LEAVE = 58;
    /// `ILR_CALLBACK_EXCEPTION_UNWIND_FUNCTION_ENTER`: arguments `FunctionID function`.
    ILR_CALLBACK_EXCEPTION_UNWIND_FUNCTION_ENTER EXCEPTION_UNWIND_FUNCTION_ENTER = 59;
    /// `ILR_CALLBACK_EXCEPTION_UNWIND_FUNCTION_LEAVE`: no arguments.
    ILR_CALLBACK_EXCEPTION_UNWIND_FUNCTION_LEAVE EXCEPTION_UNWIND_FUNCTION_LEAVE = 60;
    /// `ILR_CALLBACK_EXCEPTION_UNWIND_FINALLY_ENTER`: arguments `FunctionID function`.
    ILR_CALLBACK_EXCEPTION_UNWIND_FINALLY_ENTER EXCEPTION_UNWIND_FINALLY_ENTER = 61;
    /// `ILR_CALLBACK_EXCEPTION_UNWIND_FINALLY_LEAVE`: no arguments.
    ILR_CALLBACK_EXCEPTION_UNWIND_FINALLY_LEAVE EXCEPTION_UNWIND_FINALLY_LEAVE = 62;
    /// `ILR_CALLBACK_EXCEPTION_CATCHER_ENTER`: arguments `FunctionID function`, `ObjectID
    /// object`.
    ILR_CALLBACK_EXCEPTION_CATCHER_ENTER EXCEPTION_CATCHER_ENTER = 63;
    /// `ILR_CALLBACK_EXCEPTION_CATCHER_LEAVE`: no arguments.
    ILR_CALLBACK_EXCEPTION_CATCHER_LEAVE EXCEPTION_CATCHER_LEAVE = 64;
    /// `ILR_CALLBACK_COM_CLASSIC_VTABLE_CREATED`: arguments `ClassID class`, `const GUID *iid`,
    /// `void *vtable`, `uint32_t slots`.
    ILR_CALLBACK_COM_CLASSIC_VTABLE_CREATED COM_CLASSIC_VTABLE_CREATED = 65;
    /// `ILR_CALLBACK_COM_CLASSIC_VTABLE_DESTROYED`: arguments `ClassID class`, `const GUID
    /// *iid`, `void *vtable`.
    ILR_CALLBACK_COM_CLASSIC_VTABLE_DESTROYED COM_CLASSIC_VTABLE_DESTROYED = 66;
    /// `ILR_CALLBACK_EXCEPTION_CLR_CATCHER_FOUND`: no arguments.
    ILR_CALLBACK_EXCEPTION_CLR_CATCHER_FOUND EXCEPTION_CLR_CATCHER_FOUND = 67;
    /// `ILR_CALLBACK_EXCEPTION_CLR_CATCHER_EXECUTE`: no arguments.
    ILR_CALLBACK_EXCEPTION_CLR_CATCHER_EXECUTE EXCEPTION_CLR_CATCHER_EXECUTE = 68;
    /// `ILR_CALLBACK_THREAD_NAME_CHANGED`: arguments `ThreadID thread`, `uint32_t name_len`,
    /// `WCHAR *name`.
    ILR_CALLBACK_THREAD_NAME_CHANGED THREAD_NAME_CHANGED = 69;
    /// `ILR_CALLBACK_GARBAGE_COLLECTION_STARTED`: arguments `int32_t generation_count`,
    /// `int32_t *generation_collected`, `COR_PRF_GC_REASON reason`.
    ILR_CALLBACK_GARBAGE_COLLECTION_STARTED GARBAGE_COLLECTION_STARTED = 70;
    /// `ILR_CALLBACK_SURVIVING_REFERENCES`: arguments `uint32_t range_count`, `ObjectID
    /// *starts`, `uint32_t *lengths`.
    ILR_CALLBACK_SURVIVING_REFERENCES SURVIVING_REFERENCES = 71;
    /// `ILR_CALLBACK_GARBAGE_COLLECTION_FINISHED`: no arguments.
    ILR_CALLBACK_GARBAGE_COLLECTION_FINISHED GARBAGE_COLLECTION_FINISHED = 72;
    /// `ILR_CALLBACK_FINALIZEABLE_OBJECT_QUEUED`: arguments `uint32_t finalizer_flags`,
    /// `ObjectID object`.
    ILR_CALLBACK_FINALIZEABLE_OBJECT_QUEUED FINALIZEABLE_OBJECT_QUEUED = 73;
    /// `ILR_CALLBACK_ROOT_REFERENCES2`: arguments `uint32_t root_count`, `ObjectID *roots`,
    /// `COR_PRF_GC_ROOT_KIND *kinds`, `COR_PRF_GC_ROOT_FLAGS *flags`, `uintptr_t *root_ids`.
    ILR_CALLBACK_ROOT_REFERENCES2 ROOT_REFERENCES2 = 74;
    /// `ILR_CALLBACK_HANDLE_CREATED`: arguments `GCHandleID handle`, `ObjectID initial_object`.
    ILR_CALLBACK_HANDLE_CREATED HANDLE_CREATED = 75;
    /// `ILR_CALLBACK_HANDLE_DESTROYED`: arguments `GCHandleID handle`.
    ILR_CALLBACK_HANDLE_DESTROYED HANDLE_DESTROYED = 76;
    /// `ILR_CALLBACK_INITIALIZE_FOR_ATTACH`: not carried: the host answers it itself, and a
    /// library that subscribes to it is refused at load.
    ILR_CALLBACK_INITIALIZE_FOR_ATTACH INITIALIZE_FOR_ATTACH = 77;
    /// `ILR_CALLBACK_PROFILER_ATTACH_COMPLETE`: no arguments.
    ILR_CALLBACK_PROFILER_ATTACH_COMPLETE PROFILER_ATTACH_COMPLETE = 78;
    /// `ILR_CALLBACK_PROFILER_DETACH_SUCCEEDED`: no arguments.
    ILR_CALLBACK_PROFILER_DETACH_SUCCEEDED PROFILER_DETACH_SUCCEEDED = 79;
    /// `ILR_CALLBACK_REJIT_COMPILATION_STARTED`: arguments `FunctionID function`, `ReJITID
    /// rejit`, `BOOL is_safe_to_block`.
    ILR_CALLBACK_REJIT_COMPILATION_STARTED REJIT_COMPILATION_STARTED = 80;
    /// `ILR_CALLBACK_GET_REJIT_PARAMETERS`: not carried: the host answers it itself, and a
    /// library that subscribes to it is refused at load.
    ILR_CALLBACK_GET_REJIT_PARAMETERS GET_REJIT_PARAMETERS = 81;
    /// `ILR_CALLBACK_REJIT_COMPILATION_FINISHED`: arguments `FunctionID function`, `ReJITID
    /// rejit`, `HRESULT status`, `BOOL is_safe_to_block`.
    ILR_CALLBACK_REJIT_COMPILATION_FINISHED REJIT_COMPILATION_FINISHED = 82;
    /// `ILR_CALLBACK_REJIT_ERROR`: arguments `ModuleID module`, `mdMethodDef method`,
    /// `FunctionID function`, `HRESULT status`.
    ILR_CALLBACK_REJIT_ERROR REJIT_ERROR = 83;
    /// `ILR_CALLBACK_MOVED_REFERENCES2`: arguments `uint32_t range_count`, `ObjectID
    /// *old_starts`, `ObjectID *new_starts`, `uintptr_t *lengths`.
    ILR_CALLBACK_MOVED_REFERENCES2 MOVED_REFERENCES2 = 84;
    /// `ILR_CALLBACK_SURVIVING_REFERENCES2`: arguments `uint32_t range_count`, `ObjectID
    /// *starts`, `uintptr_t *lengths`.
    ILR_CALLBACK_SURVIVING_REFERENCES2 SURVIVING_REFERENCES2 = 85;
    /// `ILR_CALLBACK_CONDITIONAL_WEAK_TABLE_ELEMENT_REFERENCES`: arguments `uint32_t
    /// root_count`, `ObjectID *keys`, `ObjectID *values`, `GCHandleID *root_ids`.
    ILR_CALLBACK_CONDITIONAL_WEAK_TABLE_ELEMENT_REFERENCES
        CONDITIONAL_WEAK_TABLE_ELEMENT_REFERENCES = 86;
    /// `ILR_CALLBACK_GET_ASSEMBLY_REFERENCES`: not carried: the host answers it itself, and a
    /// library that subscribes to it is refused at load.
    ILR_CALLBACK_GET_ASSEMBLY_REFERENCES GET_ASSEMBLY_REFERENCES = 87;
    /// `ILR_CALLBACK_MODULE_IN_MEMORY_SYMBOLS_UPDATED`: arguments `ModuleID module`.
    ILR_CALLBACK_MODULE_IN_MEMORY_SYMBOLS_UPDATED MODULE_IN_MEMORY_SYMBOLS_UPDATED = 88;
    /// `ILR_CALLBACK_DYNAMIC_METHOD_JIT_COMPILATION_STARTED`: arguments `FunctionID function`,
    /// `BOOL is_safe_to_block`, `const BYTE *il_header`, `uint32_t il_header_len`.
    ILR_CALLBACK_DYNAMIC_METHOD_JIT_COMPILATION_STARTED DYNAMIC_METHOD_JIT_COMPILATION_STARTED = 89;
    /// `ILR_CALLBACK_DYNAMIC_METHOD_JIT_COMPILATION_FINISHED`: arguments `FunctionID function`,
    /// `HRESULT status`, `BOOL is_safe_to_block`.
    ILR_CALLBACK_DYNAMIC_METHOD_JIT_COMPILATION_FINISHED
        DYNAMIC_METHOD_JIT_COMPILATION_FINISHED = 90;
    /// `ILR_CALLBACK_DYNAMIC_METHOD_UNLOADED`: arguments `FunctionID function`.
    ILR_CALLBACK_DYNAMIC_METHOD_UNLOADED DYNAMIC_METHOD_UNLOADED = 91;
    /// `ILR_CALLBACK_EVENT_PIPE_EVENT_DELIVERED`: arguments `EVENTPIPE_PROVIDER provider`,
    /// `uint32_t event_id`, `uint32_t event_version`, `uint32_t metadata_len`, `const BYTE
    /// *metadata`, `uint32_t data_len`, `const BYTE *data`, `const GUID *activity_id`, `const
    /// GUID *related_activity_id`, `ThreadID thread`, `uint32_t frame_count`, `uintptr_t
    /// *frames`.
    ILR_CALLBACK_EVENT_PIPE_EVENT_DELIVERED EVENT_PIPE_EVENT_DELIVERED = 92;
    /// `ILR_CALLBACK_EVENT_PIPE_PROVIDER_CREATED`: arguments `EVENTPIPE_PROVIDER provider`.
    ILR_CALLBACK_EVENT_PIPE_PROVIDER_CREATED EVENT_PIPE_PROVIDER_CREATED = 93;
    /// `ILR_CALLBACK_LOAD_AS_NOTIFICATION_ONLY`: not carried: the host answers it itself, and a
    /// library that subscribes to it is refused at load.
    ILR_CALLBACK_LOAD_AS_NOTIFICATION_ONLY LOAD_AS_NOTIFICATION_ONLY = 94;

}

#[cfg(test)]
mod layout {
    //! The declarations against the header, compiled by the system C compiler (`cc`,
    //! or `$CC`): a small C program prints the size and alignment of every type, the
    //! offset and size of every struct field and the value of every constant, and each
    //! must equal the Rust one. Three more tests read the header's text and fail when
    //! it has a `#define`, a type or a struct field the tables below do not list.
    use super::*;
    use core::mem::{align_of, offset_of, size_of};
    use std::collections::HashMap;
    use std::path::{Path, PathBuf};
    use std::process::Command;

    fn header_path() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../include/ilrewrite_method.h")
    }

    fn header() -> String {
        std::fs::read_to_string(header_path())
            .unwrap_or_else(|e| panic!("{} is not readable: {e}", header_path().display()))
    }

    /// What the C program prints, `key value` per line, as a map.
    fn c_values(program: &str) -> HashMap<String, i64> {
        let include = header_path()
            .parent()
            .expect("the include directory")
            .to_owned();
        assert!(
            include.join("ilrewrite_method.h").is_file(),
            "{} has no ilrewrite_method.h",
            include.display()
        );
        let dir =
            std::env::temp_dir().join(format!("ilrewrite-method-layout-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a temporary directory");
        let source = dir.join("layout.c");
        let exe: PathBuf = dir.join("layout");
        std::fs::write(&source, program).expect("the C program is written");
        let cc = std::env::var_os("CC").unwrap_or_else(|| "cc".into());
        let out = Command::new(&cc)
            .args(["-std=c11", "-Wall", "-Werror", "-I"])
            .arg(&include)
            .arg(&source)
            .arg("-o")
            .arg(&exe)
            .output()
            .unwrap_or_else(|e| panic!("cannot run {cc:?}: {e}"));
        assert!(
            out.status.success(),
            "{cc:?} failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let out = Command::new(&exe)
            .output()
            .expect("the layout program runs");
        assert!(out.status.success(), "the layout program failed");
        let _ = std::fs::remove_dir_all(&dir);
        String::from_utf8(out.stdout)
            .expect("UTF-8")
            .lines()
            .map(|line| {
                let (key, value) = line.split_once(' ').expect("`key value`");
                (key.to_owned(), value.parse().expect("an integer"))
            })
            .collect()
    }

    /// The size of the field `field` selects (never called).
    fn field_size<T, F>(_field: fn(&T) -> &F) -> usize {
        size_of::<F>()
    }

    /// Every struct field the tables compare: (C struct, C field, Rust offset, Rust
    /// size). `rust_field = "c_field"` where the names differ.
    fn fields() -> Vec<(&'static str, &'static str, usize, usize)> {
        macro_rules! fields {
            ($($s:ident { $($field:ident $(= $c_field:literal)?),* $(,)? })*) => {
                vec![$($(
                    (
                        stringify!($s),
                        fields!(@name $field $($c_field)?),
                        offset_of!($s, $field),
                        field_size(|s: &$s| &s.$field),
                    ),
                )*)*]
            };
            (@name $field:ident) => { stringify!($field) };
            (@name $field:ident $c_field:literal) => { $c_field };
        }
        fields! {
            ilr_error { data, capacity, length }
            ilr_str { data, length }
            ilr_option_spec { name, kind }
            ilr_instruction { id, opcode, operand_kind, operand }
            ilr_assembly_ref { name, version, public_key_token }
            ilr_wrap {
                size, entry, entry_count, exit, exit_count, on_return, on_return_count,
                state_local,
            }
            ilr_host {
                size, abi_version, log, option_integer, option_boolean, option_string,
                candidate_method, candidate_name, edit_method, edit_name, edit_options,
                edit_return_type, body_first, body_next, body_get, body_insert_before,
                body_insert_after, body_insert_at_entry, body_insert_before_returns,
                option_string_at, candidate_is_target, module_id, module_assembly_name,
                module_assembly_ref, module_type_ref, module_find_type, module_type_spec,
                module_method_ref, module_field_ref, module_method_spec, module_user_string,
                module_signature, module_signature_bytes, module_set_item, module_item,
                edit_module_item, edit_method_item, edit_set_method_item, edit_add_local,
                edit_single_ret, edit_wrap,
            }
            ilr_method {
                size, this = "self", name, priority, options, option_count, start,
                check_options, wants, edit, destroy, targets, module_loaded, events,
                events_high, callbacks, callback,
            }
        }
    }

    /// Every type of the header: its name, the Rust size and alignment.
    fn types() -> Vec<(&'static str, usize, usize)> {
        macro_rules! types {
            ($($t:ident),* $(,)?) => {
                vec![$((stringify!($t), size_of::<$t>(), align_of::<$t>())),*]
            };
        }
        types![
            ilr_status,
            ilr_error,
            ilr_str,
            ilr_options,
            ilr_candidate,
            ilr_edit,
            ilr_module,
            ilr_option_spec,
            ilr_instruction,
            ilr_assembly_ref,
            ilr_item_destructor,
            ilr_wrap,
            ilr_host,
            ilr_method,
            ilr_method_create_fn,
        ]
    }

    /// Every constant the header `#define`s (but its include guard), and Rust's value:
    /// the callback ids from [`CALLBACK_IDS`], the list their declarations come from.
    fn constants() -> Vec<(String, i64)> {
        macro_rules! constants {
            ($($c:ident),* $(,)?) => {
                vec![$((stringify!($c).to_owned(), i64::from($c))),*]
            };
        }
        let mut all = constants![
            ILR_ABI_VERSION,
            ILR_OK,
            ILR_E_INVALID_HANDLE,
            ILR_E_INVALID_ARGUMENT,
            ILR_E_NOT_FOUND,
            ILR_E_REFUSED,
            ILR_E_FAILED,
            ILR_OPTION_INTEGER,
            ILR_OPTION_BOOLEAN,
            ILR_OPTION_STRING,
            ILR_OPTION_STRINGS,
            ILR_OPTION_SELECTORS,
            ILR_OPERAND_NONE,
            ILR_OPERAND_INT,
            ILR_OPERAND_LONG,
            ILR_OPERAND_FLOAT32,
            ILR_OPERAND_FLOAT64,
            ILR_OPERAND_VAR,
            ILR_OPERAND_TOKEN,
            ILR_OPERAND_TARGET,
            ILR_OPERAND_SWITCH,
            ILR_OPERAND_CODE,
            ILR_OPERAND_STATE_LOCAL,
            ILR_OPERAND_RETURN_LOCAL,
            ILR_OPERAND_METHOD_ID,
            ILR_OPERAND_MODULE_ID,
            ILR_REDIRECT,
            ILR_KEEP,
            ILR_WANT_NO,
            ILR_WANT_EDIT,
            ILR_WANT_EDIT_SINGLE_RET,
        ];
        all.extend(
            CALLBACK_IDS
                .iter()
                .map(|&(name, id)| (name.to_owned(), i64::from(id))),
        );
        all
    }

    #[test]
    fn matches_the_header() {
        // (the C expression, the Rust value), each printed by the C program as
        // `<index> <value>` and compared.
        let mut entries: Vec<(String, i64)> = Vec::new();
        let int = |v: usize| i64::try_from(v).expect("fits in i64");
        for (name, value) in constants() {
            entries.push((name, value));
        }
        for (name, size, align) in types() {
            entries.push((format!("sizeof({name})"), int(size)));
            entries.push((format!("_Alignof({name})"), int(align)));
        }
        for (s, field, offset, size) in fields() {
            entries.push((format!("offsetof({s}, {field})"), int(offset)));
            entries.push((format!("sizeof((({s} *)0)->{field})"), int(size)));
        }
        // The signedness of the scalar typedefs.
        entries.push((
            "(ilr_status)-1 < 0".to_owned(),
            i64::from(ilr_status::MIN < 0),
        ));
        for handle in ["ilr_options", "ilr_candidate", "ilr_edit", "ilr_module"] {
            entries.push((format!("({handle})-1 > 0"), 1));
        }
        let mut program = String::from(
            "#include <inttypes.h>\n#include <stddef.h>\n#include <stdio.h>\n\
             #include \"ilrewrite_method.h\"\nint main(void) {\n",
        );
        for (index, (c, _)) in entries.iter().enumerate() {
            program.push_str(&format!(
                "    printf(\"{index} %\" PRId64 \"\\n\", (int64_t)({c}));\n"
            ));
        }
        program.push_str("    return 0;\n}\n");
        let values = c_values(&program);
        let mut wrong = Vec::new();
        for (index, (c, rust)) in entries.iter().enumerate() {
            match values.get(&index.to_string()) {
                Some(v) if v == rust => {}
                found => wrong.push(format!("{c}: C {found:?}, Rust {rust}")),
            }
        }
        assert!(
            wrong.is_empty(),
            "the declarations differ from the header:\n{}",
            wrong.join("\n")
        );
    }

    /// The callback ids' list has each at its id, and `CallbackId` names them.
    #[test]
    fn the_callback_ids_are_in_order() {
        for (index, &(name, id)) in CALLBACK_IDS.iter().enumerate() {
            assert_eq!(usize::try_from(id), Ok(index), "{name}");
            assert_eq!(crate::CallbackId::from_raw(id).name(), Some(name));
        }
        assert_eq!(crate::CallbackId::SHUTDOWN.get(), ILR_CALLBACK_SHUTDOWN);
        assert_eq!(
            crate::CallbackId::LOAD_AS_NOTIFICATION_ONLY.get(),
            ILR_CALLBACK_LOAD_AS_NOTIFICATION_ONLY
        );
    }

    /// The header without its comments.
    fn code(header: &str) -> String {
        let mut code = String::new();
        let mut rest = header;
        while let Some(open) = rest.find("/*") {
            code.push_str(&rest[..open]);
            let close = rest[open..].find("*/").expect("a closed comment");
            rest = &rest[open + close + 2..];
        }
        code.push_str(rest);
        code
    }

    #[test]
    fn every_constant_of_the_header_is_compared() {
        let listed: Vec<String> = constants().into_iter().map(|(n, _)| n).collect();
        let missing: Vec<String> = code(&header())
            .lines()
            .filter_map(|l| l.trim_start().strip_prefix("#define "))
            .filter_map(|l| l.split_whitespace().next())
            .filter(|name| *name != "ILREWRITE_METHOD_H" && !listed.iter().any(|l| l == name))
            .map(str::to_owned)
            .collect();
        assert!(
            missing.is_empty(),
            "constants of the header that the layout test does not compare: {missing:?}"
        );
    }

    #[test]
    fn every_type_of_the_header_is_compared() {
        let listed: Vec<&str> = types().iter().map(|(n, _, _)| *n).collect();
        let code = code(&header());
        let missing: Vec<&str> = code
            .lines()
            .filter_map(|l| l.trim_start().strip_prefix("typedef "))
            .filter_map(|l| {
                // `typedef struct NAME {`, `typedef TYPE NAME;` or `typedef R (*NAME)(...`.
                if let Some(rest) = l.strip_prefix("struct ") {
                    return rest.split_whitespace().next();
                }
                if let Some(at) = l.find("(*") {
                    return l[at + 2..].split(')').next();
                }
                l.split(';').next()?.split_whitespace().last()
            })
            .filter(|name| !listed.contains(name))
            .collect();
        assert!(
            missing.is_empty(),
            "types of the header that the layout test does not compare: {missing:?}"
        );
    }

    /// The fields of each `typedef struct NAME { ... } NAME;` of the header, in order.
    fn header_fields(header: &str) -> Vec<(String, String)> {
        let code = code(header);
        let mut found = Vec::new();
        let mut rest = code.as_str();
        while let Some(at) = rest.find("typedef struct ") {
            rest = &rest[at + "typedef struct ".len()..];
            let name = rest
                .split_whitespace()
                .next()
                .expect("a struct name")
                .to_owned();
            let open = rest.find('{').expect("a struct body");
            let close = rest.find('}').expect("a struct body's end");
            for declaration in rest[open + 1..close].split(';') {
                let declaration = declaration.split_whitespace().collect::<Vec<_>>().join(" ");
                if declaration.is_empty() {
                    continue;
                }
                // `R (*NAME)(...)`, `T NAME[N]`, `T *NAME`.
                let field = match declaration.find("(*") {
                    Some(at) => declaration[at + 2..].split(')').next().unwrap_or(""),
                    None => declaration
                        .split('[')
                        .next()
                        .and_then(|d| d.split_whitespace().last())
                        .map_or("", |d| d.trim_start_matches('*')),
                };
                found.push((name.clone(), field.to_owned()));
            }
            rest = &rest[close..];
        }
        found
    }

    #[test]
    fn every_struct_field_of_the_header_is_compared() {
        let fields = header_fields(&header());
        assert!(
            fields
                .iter()
                .any(|(s, f)| s == "ilr_method" && f == "callback"),
            "the header's fields were not read: {fields:?}"
        );
        let listed: Vec<(&str, &str)> = self::fields().iter().map(|f| (f.0, f.1)).collect();
        let missing: Vec<String> = fields
            .iter()
            .filter(|(s, f)| !listed.contains(&(s.as_str(), f.as_str())))
            .map(|(s, f)| format!("{s}.{f}"))
            .collect();
        assert!(
            missing.is_empty(),
            "struct fields of the header that the layout test does not compare: {missing:?}"
        );
    }
}

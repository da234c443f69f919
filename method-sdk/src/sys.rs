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
}

/// `ILR_WANT_NO`: `wants`' answer: it does not edit this method.
pub const ILR_WANT_NO: i32 = 0;
/// `ILR_WANT_EDIT`: `wants`' answer: it edits this method.
pub const ILR_WANT_EDIT: i32 = 1;

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
}

/// `ilr_method_create_fn`: the type of the exported `ilrewrite_method_create`.
pub type ilr_method_create_fn = unsafe extern "C" fn(
    host: *const ilr_host,
    method: *mut ilr_method,
    error: *mut ilr_error,
) -> ilr_status;

#[cfg(test)]
mod layout {
    //! The declarations against the header, compiled by the system C compiler (`cc`,
    //! or `$CC`): a small C program prints every size, offset and constant, and each
    //! must equal the Rust one.
    use super::*;
    use core::mem::{align_of, offset_of, size_of};
    use std::collections::HashMap;
    use std::path::{Path, PathBuf};
    use std::process::Command;

    /// What the C program prints, `key value` per line, as a map.
    fn c_values(program: &str) -> HashMap<String, i64> {
        let include = Path::new(env!("CARGO_MANIFEST_DIR")).join("../include");
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

    #[test]
    fn matches_the_header() {
        // (the C expression, the Rust value), each printed by the C program as
        // `<index> <value>` and compared.
        macro_rules! entries {
            ($( $c:expr => $rust:expr ),* $(,)?) => {
                [ $( ($c, i64::try_from($rust).expect("fits in i64")) ),* ]
            };
        }
        let entries = entries![
            "ILR_ABI_VERSION" => ILR_ABI_VERSION,
            "ILR_OK" => ILR_OK,
            "ILR_E_INVALID_HANDLE" => ILR_E_INVALID_HANDLE,
            "ILR_E_INVALID_ARGUMENT" => ILR_E_INVALID_ARGUMENT,
            "ILR_E_NOT_FOUND" => ILR_E_NOT_FOUND,
            "ILR_E_REFUSED" => ILR_E_REFUSED,
            "ILR_E_FAILED" => ILR_E_FAILED,
            "ILR_OPTION_INTEGER" => ILR_OPTION_INTEGER,
            "ILR_OPTION_BOOLEAN" => ILR_OPTION_BOOLEAN,
            "ILR_OPTION_STRING" => ILR_OPTION_STRING,
            "ILR_OPTION_STRINGS" => ILR_OPTION_STRINGS,
            "ILR_OPTION_SELECTORS" => ILR_OPTION_SELECTORS,
            "ILR_OPERAND_NONE" => ILR_OPERAND_NONE,
            "ILR_OPERAND_INT" => ILR_OPERAND_INT,
            "ILR_OPERAND_LONG" => ILR_OPERAND_LONG,
            "ILR_OPERAND_FLOAT32" => ILR_OPERAND_FLOAT32,
            "ILR_OPERAND_FLOAT64" => ILR_OPERAND_FLOAT64,
            "ILR_OPERAND_VAR" => ILR_OPERAND_VAR,
            "ILR_OPERAND_TOKEN" => ILR_OPERAND_TOKEN,
            "ILR_OPERAND_TARGET" => ILR_OPERAND_TARGET,
            "ILR_OPERAND_SWITCH" => ILR_OPERAND_SWITCH,
            "ILR_REDIRECT" => ILR_REDIRECT,
            "ILR_KEEP" => ILR_KEEP,
            "ILR_WANT_NO" => ILR_WANT_NO,
            "ILR_WANT_EDIT" => ILR_WANT_EDIT,
            // The widths of the scalar typedefs.
            "sizeof(ilr_status)" => size_of::<ilr_status>(),
            "(ilr_status)-1 < 0" => i32::from(ilr_status::MIN < 0),
            "sizeof(ilr_options)" => size_of::<ilr_options>(),
            "sizeof(ilr_candidate)" => size_of::<ilr_candidate>(),
            "sizeof(ilr_edit)" => size_of::<ilr_edit>(),
            "(ilr_edit)-1 > 0" => 1,
            "sizeof(ilr_error)" => size_of::<ilr_error>(),
            "_Alignof(ilr_error)" => align_of::<ilr_error>(),
            "offsetof(ilr_error, data)" => offset_of!(ilr_error, data),
            "offsetof(ilr_error, capacity)" => offset_of!(ilr_error, capacity),
            "offsetof(ilr_error, length)" => offset_of!(ilr_error, length),
            "sizeof(ilr_str)" => size_of::<ilr_str>(),
            "_Alignof(ilr_str)" => align_of::<ilr_str>(),
            "offsetof(ilr_str, data)" => offset_of!(ilr_str, data),
            "offsetof(ilr_str, length)" => offset_of!(ilr_str, length),
            "sizeof(ilr_option_spec)" => size_of::<ilr_option_spec>(),
            "_Alignof(ilr_option_spec)" => align_of::<ilr_option_spec>(),
            "offsetof(ilr_option_spec, name)" => offset_of!(ilr_option_spec, name),
            "offsetof(ilr_option_spec, kind)" => offset_of!(ilr_option_spec, kind),
            "sizeof(ilr_instruction)" => size_of::<ilr_instruction>(),
            "_Alignof(ilr_instruction)" => align_of::<ilr_instruction>(),
            "offsetof(ilr_instruction, id)" => offset_of!(ilr_instruction, id),
            "offsetof(ilr_instruction, opcode)" => offset_of!(ilr_instruction, opcode),
            "offsetof(ilr_instruction, operand_kind)" => offset_of!(ilr_instruction, operand_kind),
            "offsetof(ilr_instruction, operand)" => offset_of!(ilr_instruction, operand),
            "sizeof(ilr_host)" => size_of::<ilr_host>(),
            "_Alignof(ilr_host)" => align_of::<ilr_host>(),
            "offsetof(ilr_host, size)" => offset_of!(ilr_host, size),
            "offsetof(ilr_host, abi_version)" => offset_of!(ilr_host, abi_version),
            "offsetof(ilr_host, log)" => offset_of!(ilr_host, log),
            "offsetof(ilr_host, option_integer)" => offset_of!(ilr_host, option_integer),
            "offsetof(ilr_host, option_boolean)" => offset_of!(ilr_host, option_boolean),
            "offsetof(ilr_host, option_string)" => offset_of!(ilr_host, option_string),
            "offsetof(ilr_host, candidate_method)" => offset_of!(ilr_host, candidate_method),
            "offsetof(ilr_host, candidate_name)" => offset_of!(ilr_host, candidate_name),
            "offsetof(ilr_host, edit_method)" => offset_of!(ilr_host, edit_method),
            "offsetof(ilr_host, edit_name)" => offset_of!(ilr_host, edit_name),
            "offsetof(ilr_host, edit_options)" => offset_of!(ilr_host, edit_options),
            "offsetof(ilr_host, edit_return_type)" => offset_of!(ilr_host, edit_return_type),
            "offsetof(ilr_host, body_first)" => offset_of!(ilr_host, body_first),
            "offsetof(ilr_host, body_next)" => offset_of!(ilr_host, body_next),
            "offsetof(ilr_host, body_get)" => offset_of!(ilr_host, body_get),
            "offsetof(ilr_host, body_insert_before)" => offset_of!(ilr_host, body_insert_before),
            "offsetof(ilr_host, body_insert_after)" => offset_of!(ilr_host, body_insert_after),
            "offsetof(ilr_host, body_insert_at_entry)" => offset_of!(ilr_host, body_insert_at_entry),
            "offsetof(ilr_host, body_insert_before_returns)" => offset_of!(ilr_host, body_insert_before_returns),
            "offsetof(ilr_host, option_string_at)" => offset_of!(ilr_host, option_string_at),
            "offsetof(ilr_host, candidate_is_target)" => offset_of!(ilr_host, candidate_is_target),
            "sizeof(ilr_method)" => size_of::<ilr_method>(),
            "_Alignof(ilr_method)" => align_of::<ilr_method>(),
            "offsetof(ilr_method, size)" => offset_of!(ilr_method, size),
            "offsetof(ilr_method, self)" => offset_of!(ilr_method, this),
            "offsetof(ilr_method, name)" => offset_of!(ilr_method, name),
            "offsetof(ilr_method, priority)" => offset_of!(ilr_method, priority),
            "offsetof(ilr_method, options)" => offset_of!(ilr_method, options),
            "offsetof(ilr_method, option_count)" => offset_of!(ilr_method, option_count),
            "offsetof(ilr_method, start)" => offset_of!(ilr_method, start),
            "offsetof(ilr_method, check_options)" => offset_of!(ilr_method, check_options),
            "offsetof(ilr_method, wants)" => offset_of!(ilr_method, wants),
            "offsetof(ilr_method, edit)" => offset_of!(ilr_method, edit),
            "offsetof(ilr_method, destroy)" => offset_of!(ilr_method, destroy),
            "offsetof(ilr_method, targets)" => offset_of!(ilr_method, targets),
            "sizeof(ilr_method_create_fn)" => size_of::<ilr_method_create_fn>(),
        ];
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
}

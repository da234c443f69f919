//! `include/ilrewrite_method.h` and [`abi`](super::abi) describe one ABI: a C program
//! that includes the header prints the size and alignment of every type, the offset and
//! size of every struct field and the value of every `#define`d constant; the test
//! compares each with the Rust side's and names every one that differs. The tables
//! below are the one list both sides are printed from; the test also fails when the
//! header defines a constant they do not list. The callback ids (`ILR_CALLBACK_*`) are
//! listed from [`Callback::ALL`] (their names by
//! [`c_name`](super::subscriptions::c_name)), so the header has one per callback of the
//! crate's list, each of the value `Callback as u8`; a last test reads their comments,
//! which must name the callback's arguments in order.
//!
//! Needs the system C compiler (`$CC`, else `cc`).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::abi::{
    ABI_VERSION, E_FAILED, E_INVALID_ARGUMENT, E_INVALID_HANDLE, E_NOT_FOUND, E_REFUSED,
    ErrorBuffer, Handle, HostApi, InstructionC, KEEP, MethodApi, OK, OPERAND_FLOAT32,
    OPERAND_FLOAT64, OPERAND_INT, OPERAND_LONG, OPERAND_NONE, OPERAND_SWITCH, OPERAND_TARGET,
    OPERAND_TOKEN, OPERAND_VAR, OPTION_BOOLEAN, OPTION_INTEGER, OPTION_SELECTORS, OPTION_STRING,
    OPTION_STRINGS, OptionSpecC, REDIRECT, Status, Str, WANT_EDIT, WANT_NO,
};
use super::abi::{
    AssemblyRefC, ItemDestructor, OPERAND_CODE, OPERAND_METHOD_ID, OPERAND_MODULE_ID,
    OPERAND_RETURN_LOCAL, OPERAND_STATE_LOCAL, WANT_EDIT_SINGLE_RET, WrapC,
};
use super::callbacks::argument_names;
use super::subscriptions::{NOT_CARRIED, c_name};
use crate::clr::profiler::Callback;

/// One struct field: the C struct and field, the Rust offset and size.
struct Field {
    c_struct: &'static str,
    c_field: &'static str,
    offset: usize,
    size: usize,
}

/// The size of the field `field` selects (never called).
fn field_size<T, F>(_field: fn(&T) -> &F) -> usize {
    size_of::<F>()
}

/// `C struct => Rust type { rust_field [= "c_field"], ... }`.
macro_rules! fields {
    ($($c:literal => $rust:ty { $($field:ident $(= $c_field:literal)?),* $(,)? })*) => {
        vec![$($(
            Field {
                c_struct: $c,
                c_field: fields!(@name $field $($c_field)?),
                offset: core::mem::offset_of!($rust, $field),
                size: field_size(|s: &$rust| &s.$field),
            },
        )*)*]
    };
    (@name $field:ident) => { stringify!($field) };
    (@name $field:ident $c_field:literal) => { $c_field };
}

fn fields() -> Vec<Field> {
    fields! {
        "ilr_error" => ErrorBuffer { data, capacity, length }
        "ilr_str" => Str { data, length }
        "ilr_option_spec" => OptionSpecC { name, kind }
        "ilr_instruction" => InstructionC { id, opcode, operand_kind, operand }
        "ilr_assembly_ref" => AssemblyRefC { name, version, public_key_token }
        "ilr_wrap" => WrapC {
            size, entry, entry_count, exit, exit_count, on_return, on_return_count,
            state_local,
        }
        "ilr_host" => HostApi {
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
        "ilr_method" => MethodApi {
            size, this = "self", name, priority, options, option_count, start,
            check_options, wants, edit, destroy, targets, module_loaded, events,
            events_high, callbacks, callback,
        }
    }
}

/// Every type of the header: its C name, the Rust size and alignment.
fn types() -> Vec<(&'static str, usize, usize)> {
    macro_rules! types {
        ($($c:literal => $rust:ty),* $(,)?) => {
            vec![$(($c, size_of::<$rust>(), align_of::<$rust>())),*]
        };
    }
    types! {
        "ilr_status" => Status,
        "ilr_options" => Handle,
        "ilr_candidate" => Handle,
        "ilr_edit" => Handle,
        "ilr_module" => Handle,
        "ilr_assembly_ref" => AssemblyRefC,
        "ilr_item_destructor" => ItemDestructor,
        "ilr_wrap" => WrapC,
        "ilr_error" => ErrorBuffer,
        "ilr_str" => Str,
        "ilr_option_spec" => OptionSpecC,
        "ilr_instruction" => InstructionC,
        "ilr_host" => HostApi,
        "ilr_method" => MethodApi,
        "ilr_method_create_fn" => super::abi::CreateFn,
    }
}

/// Every constant the header `#define`s (but its include guard), and Rust's value: the
/// callback ids last, one per [`Callback`], in order.
fn constants() -> Vec<(String, i64)> {
    let fixed: Vec<(&str, i64)> = vec![
        ("ILR_ABI_VERSION", ABI_VERSION.into()),
        ("ILR_OK", OK.into()),
        ("ILR_E_INVALID_HANDLE", E_INVALID_HANDLE.into()),
        ("ILR_E_INVALID_ARGUMENT", E_INVALID_ARGUMENT.into()),
        ("ILR_E_NOT_FOUND", E_NOT_FOUND.into()),
        ("ILR_E_REFUSED", E_REFUSED.into()),
        ("ILR_E_FAILED", E_FAILED.into()),
        ("ILR_OPTION_INTEGER", OPTION_INTEGER.into()),
        ("ILR_OPTION_BOOLEAN", OPTION_BOOLEAN.into()),
        ("ILR_OPTION_STRING", OPTION_STRING.into()),
        ("ILR_OPTION_STRINGS", OPTION_STRINGS.into()),
        ("ILR_OPTION_SELECTORS", OPTION_SELECTORS.into()),
        ("ILR_OPERAND_NONE", OPERAND_NONE.into()),
        ("ILR_OPERAND_INT", OPERAND_INT.into()),
        ("ILR_OPERAND_LONG", OPERAND_LONG.into()),
        ("ILR_OPERAND_FLOAT32", OPERAND_FLOAT32.into()),
        ("ILR_OPERAND_FLOAT64", OPERAND_FLOAT64.into()),
        ("ILR_OPERAND_VAR", OPERAND_VAR.into()),
        ("ILR_OPERAND_TOKEN", OPERAND_TOKEN.into()),
        ("ILR_OPERAND_TARGET", OPERAND_TARGET.into()),
        ("ILR_OPERAND_SWITCH", OPERAND_SWITCH.into()),
        ("ILR_OPERAND_STATE_LOCAL", OPERAND_STATE_LOCAL.into()),
        ("ILR_OPERAND_RETURN_LOCAL", OPERAND_RETURN_LOCAL.into()),
        ("ILR_OPERAND_METHOD_ID", OPERAND_METHOD_ID.into()),
        ("ILR_OPERAND_MODULE_ID", OPERAND_MODULE_ID.into()),
        ("ILR_OPERAND_CODE", OPERAND_CODE.into()),
        ("ILR_REDIRECT", REDIRECT.into()),
        ("ILR_KEEP", KEEP.into()),
        ("ILR_WANT_NO", WANT_NO.into()),
        ("ILR_WANT_EDIT", WANT_EDIT.into()),
        ("ILR_WANT_EDIT_SINGLE_RET", WANT_EDIT_SINGLE_RET.into()),
    ];
    fixed
        .into_iter()
        .map(|(name, value)| (name.to_owned(), value))
        .chain(
            Callback::ALL
                .iter()
                .map(|&callback| (c_name(callback), i64::from(callback as u8))),
        )
        .collect()
}

/// The C program printing what the tables list, one line each:
/// `field STRUCT FIELD OFFSET SIZE`, `type NAME SIZE ALIGN`, `const NAME VALUE`.
fn c_program() -> String {
    let mut c = String::from(
        "#include <stdio.h>\n#include <stddef.h>\n#include \"ilrewrite_method.h\"\n\
         int main(void) {\n",
    );
    for f in fields() {
        let (s, n) = (f.c_struct, f.c_field);
        let _ = writeln!(
            c,
            "    printf(\"field {s} {n} %zu %zu\\n\", offsetof({s}, {n}), sizeof((({s} *)0)->{n}));"
        );
    }
    for (name, _, _) in types() {
        let _ = writeln!(
            c,
            "    printf(\"type {name} %zu %zu\\n\", sizeof({name}), _Alignof({name}));"
        );
    }
    for (name, _) in constants() {
        let _ = writeln!(
            c,
            "    printf(\"const {name} %lld\\n\", (long long)({name}));"
        );
    }
    c.push_str("    return 0;\n}\n");
    c
}

/// The lines the Rust side expects, in the C program's order.
fn rust_lines() -> Vec<String> {
    let mut lines = Vec::new();
    for f in fields() {
        lines.push(format!(
            "field {} {} {} {}",
            f.c_struct, f.c_field, f.offset, f.size
        ));
    }
    for (name, size, align) in types() {
        lines.push(format!("type {name} {size} {align}"));
    }
    for (name, value) in constants() {
        lines.push(format!("const {name} {value}"));
    }
    lines
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Compiles and runs [`c_program`]; its stdout lines.
fn c_lines() -> Vec<String> {
    let dir: PathBuf =
        std::env::temp_dir().join(format!("ilrewrite-layout-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let source = dir.join("layout.c");
    let exe = dir.join("layout");
    std::fs::write(&source, c_program()).expect("the C program is written");
    let cc = std::env::var("CC")
        .ok()
        .filter(|cc| !cc.trim().is_empty())
        .unwrap_or_else(|| "cc".to_owned());
    let mut cmd = Command::new(&cc);
    cmd.args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-I"])
        .arg(root().join("include"))
        .arg(&source)
        .arg("-o")
        .arg(&exe);
    let built = cmd.output().unwrap_or_else(|e| {
        panic!(
            "this test compiles a C program with {cc:?} ($CC, else cc), which cannot be run: {e}"
        )
    });
    assert!(
        built.status.success(),
        "{cmd:?} failed:\n{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let ran = Command::new(&exe).output().expect("the C program runs");
    assert!(ran.status.success(), "{} failed", exe.display());
    let _ = std::fs::remove_dir_all(&dir);
    String::from_utf8(ran.stdout)
        .expect("UTF-8")
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_header_and_the_rust_types_agree() {
    let c = c_lines();
    let rust = rust_lines();
    assert_eq!(
        c.len(),
        rust.len(),
        "the C program printed:\n{}",
        c.join("\n")
    );
    let differ: Vec<String> = c
        .iter()
        .zip(&rust)
        .filter(|(c, r)| c != r)
        .map(|(c, r)| format!("C: {c}\n   Rust: {r}"))
        .collect();
    assert!(
        differ.is_empty(),
        "the header and abi.rs differ (kind, name, then offset and size, size and \
         alignment, or value):\n{}",
        differ.join("\n")
    );
}

#[test]
fn every_constant_of_the_header_is_compared() {
    let header = std::fs::read_to_string(root().join("include/ilrewrite_method.h"))
        .expect("the header is readable");
    let constants = constants();
    let listed: Vec<&str> = constants.iter().map(|(n, _)| n.as_str()).collect();
    let missing: Vec<&str> = header
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("#define "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "ILREWRITE_METHOD_H" && !listed.contains(name))
        .collect();
    assert!(
        missing.is_empty(),
        "constants of the header that layout_tests does not compare: {missing:?}"
    );
}

#[test]
fn every_struct_of_the_header_is_compared() {
    let header = std::fs::read_to_string(root().join("include/ilrewrite_method.h"))
        .expect("the header is readable");
    let listed: Vec<&str> = types().iter().map(|(n, _, _)| *n).collect();
    let missing: Vec<&str> = header
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
        "types of the header that layout_tests does not compare: {missing:?}"
    );
}

/// The header's `#define ILR_CALLBACK_<NAME> <id>` lines, in order: (name, id, the
/// comment after it, which may go on over the next lines).
fn header_callbacks(header: &str) -> Vec<(String, String, String)> {
    let lines: Vec<&str> = header.lines().collect();
    let mut found = Vec::new();
    for (at, line) in lines.iter().enumerate() {
        let Some(rest) = line.strip_prefix("#define ILR_CALLBACK_") else {
            continue;
        };
        let mut words = rest.split_whitespace();
        let name = format!("ILR_CALLBACK_{}", words.next().unwrap_or(""));
        let id = words.next().unwrap_or("").to_owned();
        // The comment: from `/*` on this line or the next, to `*/`.
        let mut comment = String::new();
        for text in lines[at..].iter().take(6) {
            let text = match comment.is_empty() {
                true => match text.find("/*") {
                    Some(open) => &text[open + 2..],
                    None => continue,
                },
                false => text,
            };
            comment.push(' ');
            match text.find("*/") {
                Some(close) => {
                    comment.push_str(&text[..close]);
                    break;
                }
                None => comment.push_str(text),
            }
        }
        found.push((name, id, comment.trim().to_owned()));
    }
    found
}

/// The header's callback ids are the crate's callback list: as many, in order, each
/// named from its slot ([`c_name`]) with the value `Callback as u8` (the C program
/// compares the values the compiler sees; this reads the text), each commented with its
/// arguments' names in order (`no arguments`, or `not carried` for [`NOT_CARRIED`]).
#[test]
fn the_headers_callback_ids_are_the_callback_list() {
    let header = std::fs::read_to_string(root().join("include/ilrewrite_method.h"))
        .expect("the header is readable");
    let found = header_callbacks(&header);
    assert_eq!(
        found.len(),
        Callback::ALL.len(),
        "the header has {} ILR_CALLBACK_ ids, the crate {} callbacks",
        found.len(),
        Callback::ALL.len()
    );
    let mut wrong = Vec::new();
    for ((name, id, comment), &callback) in found.iter().zip(Callback::ALL) {
        let want = (c_name(callback), (callback as u8).to_string());
        if (name, id) != (&want.0, &want.1) {
            wrong.push(format!("{name} {id}: {} {} expected", want.0, want.1));
        }
        // `TYPE name, TYPE *name, ...`: the last word of each, without `*`.
        let listed: Vec<&str> = comment
            .split(',')
            .filter_map(|part| part.split_whitespace().last())
            .map(|word| word.trim_start_matches('*'))
            .collect();
        let arguments = argument_names(callback);
        let fine = match () {
            _ if NOT_CARRIED.contains(&callback) => comment.starts_with("not carried"),
            _ if arguments.is_empty() => comment == "no arguments",
            _ => listed == arguments,
        };
        if !fine {
            wrong.push(format!(
                "{name}: comment {comment:?}, arguments {arguments:?}{}",
                match NOT_CARRIED.contains(&callback) {
                    true => " (not carried)",
                    false => "",
                }
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "the header's callback ids differ from the callback list:\n{}",
        wrong.join("\n")
    );
}

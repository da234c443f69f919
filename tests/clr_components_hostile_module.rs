//! Hostile libraries against the second part of the C ABI (`tests/components/
//! hostile_module.c`, `hostile_wrap.c`, `hostile_items.c`) under `examples/engine.rs`, on
//! both runtimes: what a library cannot do with module-load definitions, data items,
//! new locals, the single-ret and wraps.
//!
//! * every definition the host cannot take (null pointers, texts that do not parse or
//!   nest past the limit, tokens of the wrong table or of no row, `void` and `pinned`
//!   where no blob holds them, scopes and parents of the wrong table, a MethodSpec of a
//!   method that is not generic, invalid UTF-8, raw signatures truncated or with trailing
//!   bytes) is `ILR_E_INVALID_ARGUMENT`, logged briefly, and changes nothing; user strings
//!   with NULs and non-ASCII text come back out of the program as they went in; 10,000
//!   definitions in one call are taken, the same one answered with the same token;
//! * handles of the wrong kind (a module handle in an edit function and the reverse),
//!   kept past their call, or used on another thread are `ILR_E_INVALID_HANDLE`;
//! * data items are replaced, removed and destroyed exactly once, after the call that
//!   replaced them, on every thread; a destructor gets nothing from the host with the
//!   handles it kept; 32 threads compiling one method at once never see a held item
//!   destroyed;
//! * new locals, the single-ret and wraps stop at the locals limit (refused and rolled
//!   back), keep tail calls (or refuse the method), and refuse every misuse of their
//!   pseudo-operands; what they accept runs as the library wrote it.
#![cfg(feature = "clr")]

mod clr_support;

use std::time::Instant;

use clr_support::components::{assert_attached, assert_unchanged, library, run, toml_str};
use clr_support::{Output, Runtime, exit_code, expected_stdout, for_each_runtime};

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------

/// `hostile_mod` abusing `Answer.exe`'s module, with `options` (TOML inline-table
/// content) added.
fn hostile_mod(options: &str) -> String {
    format!(
        "[[method]]\nname = \"hostile_mod\"\nlibrary = {}\n\
         options = {{ assembly = \"Answer\", {options} }}\n",
        toml_str(&library("hostile_module"))
    )
}

/// `hostile_wrap` defining its strings in `assembly`'s module, with `options` added.
fn hostile_wrap(assembly: &str, options: &str) -> String {
    format!(
        "[[method]]\nname = \"hostile_wrap\"\nlibrary = {}\n\
         options = {{ assembly = \"{assembly}\", {options} }}\n",
        toml_str(&library("hostile_wrap"))
    )
}

/// The summary line of a batch of checks, `"{lib}: {what} done, N checks, W wrong"`:
/// every one present (as many as `times`), with at least `least` checks and none wrong.
fn checks_passed(err: &str, lib: &str, what: &str, least: u32, times: usize) {
    let prefix = format!("ilrewrite: {lib}: {what} done, ");
    let lines: Vec<&str> = err
        .lines()
        .filter_map(|l| l.strip_prefix(&prefix))
        .collect();
    assert_eq!(lines.len(), times, "summaries of {what}:\n{err}");
    for line in lines {
        let (made, wrong) = line
            .strip_suffix(" wrong")
            .and_then(|l| l.split_once(" checks, "))
            .unwrap_or_else(|| panic!("{line}"));
        let made: u32 = made.parse().expect("a count");
        assert!(made >= least, "{what}: {made} checks:\n{err}");
        assert_eq!(wrong, "0", "{what}:\n{err}");
    }
    assert!(!err.contains(&format!("{lib}: WRONG")), "{err}");
}

/// The status of every line `"{lib}: {what} status S"` (`observe` lines included, their
/// text after the status ignored).
fn statuses(err: &str, lib: &str, what: &str) -> Vec<i32> {
    let prefix = format!("ilrewrite: {lib}: {what} status ");
    err.lines()
        .filter_map(|l| l.strip_prefix(&prefix))
        .map(|rest| {
            let number = rest.split(' ').next().unwrap_or(rest);
            number.parse().unwrap_or_else(|_| panic!("{rest}"))
        })
        .collect()
}

/// The one status `lib` logged for `what`.
fn status(err: &str, lib: &str, what: &str) -> i32 {
    let all = statuses(err, lib, what);
    assert_eq!(all.len(), 1, "one status of {what} expected:\n{err}");
    all[0]
}

/// `config` on `program`: attached, the program's stdout and exit code as unprofiled.
fn unchanged(rt: &Runtime, program: &str, name: &str, config: &str) -> Output {
    let out = run(rt, program, name, config, &[]);
    assert_attached(&out);
    assert_unchanged(rt, program, &out);
    out
}

/// `Answer.exe` under `config`: attached, printed `stdout` and exited with `code`.
fn answers(rt: &Runtime, name: &str, config: &str, stdout: &str, code: i32) -> Output {
    let out = run(rt, "Answer", name, config, &[]);
    let err = &out.stderr;
    assert_attached(&out);
    assert_eq!(out.stdout, stdout, "{err}");
    assert_eq!(out.code(), code, "{err}");
    out
}

/// `text` with `lines` inserted before its line number `at` (from 0).
fn insert_lines(text: &str, at: usize, lines: &[&str]) -> String {
    let mut all: Vec<&str> = text.lines().collect();
    for (k, line) in lines.iter().enumerate() {
        all.insert(at + k, line);
    }
    all.iter().map(|l| format!("{l}\n")).collect()
}

/// The line number (from 0) of `line` in `program`'s expected output.
fn line_of(program: &str, line: &str) -> usize {
    expected_stdout(program)
        .lines()
        .position(|l| l == line)
        .unwrap_or_else(|| panic!("{program} prints no line {line:?}"))
}

// ---------------------------------------------------------------------------------------
// Definitions at module load
// ---------------------------------------------------------------------------------------

/// Proves that every definition the host cannot take is `ILR_E_INVALID_ARGUMENT` and
/// defines nothing: 300-odd calls of `module_loaded` on `Answer.exe`'s module (batch
/// `defs`): a null pointer in every argument of every `module_*` function; 37 type texts
/// and 20 method signature texts that do not parse (as a TypeSpec, a field's type, a
/// MemberRef's and a call site's signature), MethodSpec arguments that do not parse;
/// texts 256 levels deep (one past the limit) and 100,000 deep (arrays, generic
/// instantiations, pointers, function pointers, modifiers) and a raw signature 1,000,000
/// deep, each refused at once (255 levels are taken); tokens of the wrong table or of no
/// row in every kind of definition; `void` and `pinned` as a TypeSpec or a field's type
/// (`void*` is taken); a TypeRef scope, a MemberRef parent and a MethodSpec method of
/// the wrong table or of no row; invalid UTF-8 in names and user strings (overlong,
/// surrogates, past U+10FFFF, cut); raw signatures truncated, with trailing bytes, of a
/// field, locals, a property, a generic instantiation, a TypeRef of no row,
/// `ELEMENT_TYPE_INTERNAL`, a parameter count of 0x1FFFFFFF in six bytes, calling
/// convention 0x0F, `generic 0`, a `void` parameter. The same AssemblyRef and
/// StandAloneSig (from bytes and from text) come back for the same definition, and so
/// does a user string defined twice. The program runs unchanged.
#[test]
fn definitions_the_host_cannot_take_are_refused() {
    for_each_runtime(|rt| {
        let out = unchanged(rt, "Answer", "defs", &hostile_mod("deep = true"));
        let err = &out.stderr;
        checks_passed(err, "hostile_mod", "defs", 300, 1);
        for what in [
            "signature_bytes(void (void))",
            "signature_bytes(calling convention 0x0F)",
            "signature_bytes(generic 0)",
        ] {
            assert_eq!(
                status(err, "hostile_mod", &format!("observe {what}")),
                -2,
                "{what}"
            );
        }
        assert!(
            err.contains("hostile_mod: observe user_string(str0) again status 0 same 1"),
            "{err}"
        );
        assert!(err.contains("type_spec(typedref[]) status 0"), "{err}");
    });
}

/// Proves that a type or signature that parses but has no blob (`void` or `pinned`
/// nested where a signature cannot hold them: `void[]`, `void&`, `List<void>`, `int32
/// pinned[]`, a `void` or `pinned` parameter, a MethodSpec over `void`) is
/// `ILR_E_INVALID_ARGUMENT` like any other bad argument, and logged as the library's
/// text, not as a refusal of the runtime (nothing reached it). It was `ILR_E_FAILED`,
/// logged as "the runtime refused a definition ... the signature cannot be encoded".
#[test]
fn a_definition_without_a_blob_is_an_invalid_argument() {
    for_each_runtime(|rt| {
        let out = unchanged(rt, "Answer", "no-blob", &hostile_mod(""));
        let err = &out.stderr;
        for what in [
            "type_spec(void[])",
            "type_spec(void&)",
            "type_spec(List<void>)",
            "field_ref(F, void[])",
            "field_ref(F, int32 pinned[])",
            "method_ref(M, void (void))",
            "method_ref(M, void (int32 pinned))",
            "signature(void (void))",
            "method_spec(Empty, void)",
        ] {
            assert_eq!(
                status(err, "hostile_mod", &format!("observe {what}")),
                -2,
                "{what}:\n{err}"
            );
        }
        assert!(!err.contains("the runtime refused a definition"), "{err}");
    });
}

/// Proves that a MethodSpec the runtime cannot load is refused when it is defined, not
/// left for the JIT to fail on: `module_method_spec` of a method that is not generic
/// (the MemberRef `Console::WriteLine(string)`, the MethodDef `Answer::Get`) or with
/// another number of type arguments than the method has (`Array::Empty<T>` over `int32,
/// string`) is `ILR_E_INVALID_ARGUMENT`. Before the host checked, each was `ILR_OK` with
/// a token, and an edit calling the first one (which verifies: the stack is balanced)
/// made `Answer.Get` throw `BadImageFormatException` at its first call, ending the
/// program (exit 134, SIGABRT) on both runtimes.
#[test]
fn a_method_spec_of_a_method_that_is_not_generic_is_refused() {
    for_each_runtime(|rt| {
        let out = unchanged(rt, "Answer", "spec", &hostile_mod("trick = \"spec\""));
        let err = &out.stderr;
        for what in [
            "method_spec(WriteLine(string), int32)",
            "method_spec(MethodDef 0x06000001, int32)",
            "method_spec(Empty, int32, string)",
        ] {
            assert_eq!(
                status(err, "hostile_mod", &format!("observe {what}")),
                -2,
                "{what}:\n{err}"
            );
        }
        assert!(!err.contains("spec inserted"), "{err}");
    });
}

/// Proves that the host's log stays readable whatever a library writes: the texts it
/// cannot read, and its error messages that quote them, are cut short in its log lines
/// (the 100,000-deep texts are 200 KB to 1.9 MB each, and a word of 1,000,000 letters is
/// quoted by its error as well), so no line is longer than 1,000 bytes and the whole log
/// of the run stays under 200 KB. Each used to be quoted whole: 22 MB of log for the
/// five deep texts.
#[test]
fn a_text_the_host_cannot_read_is_quoted_short() {
    for_each_runtime(|rt| {
        let out = unchanged(rt, "Answer", "quoted", &hostile_mod("deep = true"));
        let err = &out.stderr;
        let longest = err.lines().map(str::len).max().unwrap_or(0);
        assert!(longest <= 1_000, "a line of {longest} bytes");
        assert!(err.len() < 200_000, "{} bytes of log", err.len());
        assert!(
            err.contains("ilr_host: cannot read \"int32[][][]"),
            "the deep text is quoted"
        );
    });
}

/// Proves that user strings are taken as any UTF-8 text and come back out of the
/// program as they went in: `ldstr` of each, printed by `Console.WriteLine` at the entry
/// of `Answer::Get`, gives NULs inside and at the end (`str0 a\0b\0`), two-, three- and
/// four-byte characters (the last a surrogate pair in the user string heap), the empty
/// string (null text, length 0), a lone NUL, and 70,005 characters; the program then
/// prints `answer 41` as ever.
#[test]
fn user_strings_come_back_as_they_went_in() {
    let mut want = String::from("str0 a\0b\0\n");
    want.push_str("str1 \u{e9} \u{2713} \u{65e5}\u{672c} \u{1f389}\n");
    want.push('\n');
    want.push_str("\0\n");
    want.push_str("str4 ");
    want.push_str(&"x".repeat(70_000));
    want.push('\n');
    want.push_str("answer 41\n");
    for_each_runtime(|rt| {
        let out = answers(
            rt,
            "strings",
            &hostile_mod("trick = \"strings\""),
            &want,
            41,
        );
        assert_eq!(
            status(&out.stderr, "hostile_mod", "observe strings inserted"),
            0
        );
    });
}

/// Proves that 10,000 definitions of each kind in one `module_loaded` are taken (in
/// about 0.1 s): 10,000 distinct MemberRefs (new rows, in order) and user strings; the
/// same AssemblyRef, MemberRef, user string, TypeSpec and StandAloneSig asked 10,000
/// times each come back as one token each. The last distinct user string, `s9999`, is
/// printed by `Answer::Get`.
#[test]
fn ten_thousand_definitions_in_one_call() {
    for_each_runtime(|rt| {
        let out = answers(
            rt,
            "many",
            &hostile_mod("many = 10000, trick = \"many\""),
            "s9999\nanswer 41\n",
            41,
        );
        let err = &out.stderr;
        checks_passed(err, "hostile_mod", "many", 7, 1);
        assert!(
            err.contains(
                "hostile_mod: observe many 10000: same MemberRef 10000, same user string \
                 10000, same TypeSpec 10000, in "
            ),
            "{err}"
        );
    });
}

// ---------------------------------------------------------------------------------------
// Handles and data items
// ---------------------------------------------------------------------------------------

/// Proves that a handle of the wrong kind, made up, kept, or on another thread is
/// `ILR_E_INVALID_HANDLE`: the module handle given to 14 functions of edits, options and
/// candidates during `module_loaded`; 0, `UINT64_MAX`, the handle's neighbours, the
/// options handle of `start`; the module handle on a thread of its own during the call
/// (joined inside it); in the edits of `Program::Main` and `Answer::Get`, the edit handle
/// and its options handle given to 7 module functions, and the module handle kept from
/// `module_loaded`; the kept module handle on a thread started during `module_loaded`
/// and used after it returned. Nothing given through a refused call was taken (the
/// items offered so are never destroyed). The program runs unchanged.
#[test]
fn handles_of_the_wrong_kind_or_kept_are_invalid() {
    for_each_runtime(|rt| {
        let out = unchanged(rt, "Answer", "kinds", &hostile_mod(""));
        let err = &out.stderr;
        checks_passed(err, "hostile_mod", "kinds", 27, 1);
        checks_passed(err, "hostile_mod", "edit kinds", 22, 2);
        checks_passed(err, "hostile_mod", "after", 26, 1);
    });
}

/// Proves the life of data items: on the module, set, replaced (the one replaced is
/// still there until the call returns, then destroyed once), removed by a null item
/// (with or without a destructor: no destructor is ever called with null), an item
/// without a destructor never destroyed; on the method, the same, and the same pointer
/// set twice (the host takes it as a replacement: that pointer's destructor runs once,
/// after the call, and the pointer stays the method's item). A destructor that calls the
/// host with the module or edit handle of the call that set the item gets
/// `ILR_E_INVALID_HANDLE` from every function (so it cannot set an item: the one it
/// offers is never taken). The checks made in the next edit all pass; the program runs
/// unchanged. The items still set when the program ends (the module's, and the method's
/// pointer set twice, now for the second time) are destroyed at the runtime's shutdown
/// on both runtimes (.NET 8, which never releases the profiler, too), before the
/// library's `destroy` where it runs (.NET Core 3.1 only). With `module_loaded` failing
/// after it set its item (`ILR_E_FAILED`, logged with its message), the item stays and
/// the edits find it.
#[test]
fn items_are_replaced_removed_and_destroyed_once() {
    for_each_runtime(|rt| {
        for (name, options) in [("items", ""), ("items-fail", "fail_load = true")] {
            let out = unchanged(rt, "Answer", name, &hostile_mod(options));
            let err = &out.stderr;
            checks_passed(err, "hostile_mod", "module items", 15, 1);
            checks_passed(err, "hostile_mod", "method items", 17, 1);
            checks_passed(err, "hostile_mod", "after", 26, 1);
            assert!(err.contains("hostile_mod: destructor of E ran"), "{err}");
            assert!(err.contains("hostile_mod: destructor of P3 ran"), "{err}");
            let failed = err
                .lines()
                .any(|l| l.contains("hostile_mod: module_loaded fails on purpose"));
            assert_eq!(failed, !options.is_empty(), "{err}");
            let at = |line: &str| err.lines().position(|l| l == line);
            let d = at("ilrewrite: hostile_mod: D destroyed at the end");
            let q = at("ilrewrite: hostile_mod: Q destroyed at the end");
            let destroy = at("ilrewrite: hostile_mod: destroy");
            assert!(d.is_some() && q.is_some(), "{err}");
            match rt.major() {
                3 => assert!(destroy > d.max(q), "{err}"),
                _ => assert_eq!(destroy, None, "{err}"),
            }
        }
    });
}

/// What `hostile_items` reported at the runtime's shutdown: created, destroyed, alive,
/// methods, edits, held, replaced while held, most in flight, wrong.
fn items_report(err: &str) -> [u64; 9] {
    let line = err
        .lines()
        .find_map(|l| l.strip_prefix("ilrewrite: hostile_items: created "))
        .unwrap_or_else(|| panic!("no report:\n{err}"));
    let numbers: Vec<u64> = format!("created {line}")
        .split(' ')
        .filter_map(|w| w.parse().ok())
        .collect();
    numbers
        .try_into()
        .unwrap_or_else(|n| panic!("{n:?} in {line}"))
}

/// Proves that method items survive many threads: `Concurrency.exe` (tiering off) has
/// its 2,225 compilations of 25 methods made by 32 threads, many instantiations of one
/// method at once; every edit reads its method's item, holds it (every other one for
/// 500 µs), checks it is alive and the method's, and replaces it. At the runtime's
/// shutdown: 2,225 items created, every one destroyed but the 25 alive (one per method,
/// each the last set), each edit but a method's first found an item to hold, no item was
/// destroyed twice, destroyed while a call held it, or handed out dead, and the program
/// ran unchanged. (The host never runs two edits of one method at once: a thread that
/// finds a method being rewritten waits, so "replaced while held" is 0; the host still
/// keeps what it hands out until the call returns.)
#[test]
fn method_items_replaced_by_many_threads_are_destroyed_once() {
    let config = format!(
        "[[method]]\nname = \"hostile_items\"\nlibrary = {}\n\
         options = {{ prefix = \"Concurrency.\", hold = 500 }}\n",
        toml_str(&library("hostile_items"))
    );
    for_each_runtime(|rt| {
        let out = run(
            rt,
            "Concurrency",
            "items-race",
            &config,
            &[("COMPlus_TieredCompilation", "0")],
        );
        let err = &out.stderr;
        assert_attached(&out);
        assert_eq!(out.stdout, expected_stdout("Concurrency"), "{err}");
        assert_eq!(out.code(), exit_code("Concurrency"), "{err}");
        assert!(!err.contains("hostile_items: WRONG"), "{err}");
        let [
            created,
            destroyed,
            alive,
            methods,
            edits,
            held,
            replaced,
            in_flight,
            wrong,
        ] = items_report(err);
        println!(
            "{rt}: {created} items, {destroyed} destroyed, {alive} alive, {replaced} \
             replaced while held, at most {in_flight} edits at once"
        );
        assert_eq!(created, 2_225, "{err}");
        assert_eq!(edits, created, "{err}");
        assert_eq!(methods, 25, "{err}");
        assert_eq!(destroyed + alive, created, "{err}");
        assert_eq!(alive, methods, "{err}");
        assert_eq!(held, created - methods, "{err}");
        assert_eq!(wrong, 0, "{err}");
    });
}

// ---------------------------------------------------------------------------------------
// Locals, the single-ret, wraps
// ---------------------------------------------------------------------------------------

/// `LocalsLimit.exe`'s expected output with `f` applied to its lines.
fn locals_limit_with(f: impl Fn(&str) -> String) -> String {
    expected_stdout("LocalsLimit").lines().map(f).collect()
}

/// Proves that new locals and wraps stop at the 65,535 locals a method can have, and
/// that what is refused is rolled back: in `LocalsLimit.Program::Full` (void, 65,535
/// locals) `edit_add_local` is `ILR_E_REFUSED`, and so is a wrap with a state local,
/// while a wrap that needs no local is taken (`full enter`, `full exit` around the
/// method's line); in `AlmostFull` (int32, 65,534 locals) one local is added (index
/// 65,534), a second is refused, and a wrap needing a return-value local is refused: the
/// library's edit then fails with that status and its added local goes with it (the
/// program unchanged); a wrap printing the return-value local (the 65,535th) is taken
/// (`65553` printed once more); one with a state local too (65,536) is refused; in
/// `FullReturning` (65,535) a wrap needing a return-value local and a new local are
/// refused; `AlmostFull` with only its 65,535th local added runs unchanged.
#[test]
fn the_locals_limit_holds_for_new_locals_and_wraps() {
    for_each_runtime(|rt| {
        let cases = [
            (0, "Full"),
            (1, "AlmostFull"),
            (2, "AlmostFull"),
            (3, "AlmostFull"),
            (4, "FullReturning"),
            (5, "AlmostFull"),
        ];
        for (case, method) in cases {
            let config = hostile_wrap(
                "LocalsLimit",
                &format!(
                    "method = \"LocalsLimit.Program::{method}\", trick = \"locals\", case = {case}"
                ),
            );
            let out = run(rt, "LocalsLimit", &format!("locals-{case}"), &config, &[]);
            let err = &out.stderr;
            assert_attached(&out);
            assert_eq!(out.code(), exit_code("LocalsLimit"), "{err}");
            let lib = "hostile_wrap";
            let want = match case {
                0 => {
                    assert_eq!(status(err, lib, "locals 0 add_local int32"), -5);
                    assert_eq!(status(err, lib, "locals 0 add_local int64"), -5);
                    assert_eq!(status(err, lib, "locals 0 wrap with a state local"), -5);
                    assert_eq!(status(err, lib, "locals 0 wrap without locals"), 0);
                    locals_limit_with(|l| match l == "full 65535" {
                        true => format!("full enter\n{l}\nfull exit\n"),
                        false => format!("{l}\n"),
                    })
                }
                1 => {
                    assert_eq!(
                        status(err, lib, "locals 1 add_local int32 (index 65534)"),
                        0
                    );
                    assert_eq!(status(err, lib, "locals 1 add_local int32 again"), -5);
                    assert_eq!(
                        status(err, lib, "locals 1 wrap with a return-value local"),
                        -5
                    );
                    assert!(
                        err.contains("the wrap was refused, the edit fails (status -5)"),
                        "{err}"
                    );
                    expected_stdout("LocalsLimit")
                }
                2 => {
                    assert_eq!(
                        status(err, lib, "locals 2 wrap with a return-value local"),
                        0
                    );
                    locals_limit_with(|l| match l.strip_prefix("almost full ") {
                        Some(value) => format!("almost full {value}\n{value}\n"),
                        None => format!("{l}\n"),
                    })
                }
                3 => {
                    assert_eq!(
                        status(
                            err,
                            lib,
                            "locals 3 wrap with a state and a return-value local"
                        ),
                        -5
                    );
                    expected_stdout("LocalsLimit")
                }
                4 => {
                    assert_eq!(
                        status(err, lib, "locals 4 wrap with a return-value local"),
                        -5
                    );
                    assert_eq!(status(err, lib, "locals 4 add_local int32"), -5);
                    expected_stdout("LocalsLimit")
                }
                _ => {
                    assert_eq!(
                        status(err, lib, "locals 5 add_local int32 (index 65534)"),
                        0
                    );
                    expected_stdout("LocalsLimit")
                }
            };
            assert_eq!(out.stdout, want, "case {case}:\n{err}");
            assert!(!err.contains("does not verify"), "case {case}:\n{err}");
        }
    });
}

/// Proves that `edit_add_local` refuses every type text it cannot make a local of, and
/// changes nothing then: a null type or index; empty text, `void`, text that does not
/// parse, a token of no row (TypeRef, TypeDef row 0, TypeSpec, a MethodDef's table),
/// `void[]`, `void&`, invalid UTF-8, a TypeDef row of CoreLib's (`0x02000400`: no row of
/// `Answer.exe`, tokens are the module's own), a modifier of no row, 100,000 levels deep.
/// It takes a byref, `typedref`, `void*`, a class of the module, a general array and a
/// function pointer, at consecutive indices, and the method runs with them (`+ 1000`:
/// `answer 1041`).
#[test]
fn add_local_refuses_the_types_it_cannot_take() {
    for_each_runtime(|rt| {
        let config = hostile_wrap(
            "Answer",
            "method = \"Answer::Get\", trick = \"local_types\"",
        );
        let out = answers(rt, "local-types", &config, "answer 1041\n", 1041 & 0xFF);
        checks_passed(&out.stderr, "hostile_wrap", "local_types", 25, 1);
    });
}

/// Proves that `edit_add_local` takes a pinned local (`object pinned`, `int32& pinned`:
/// what C#'s `fixed` compiles to; the text form writes them and a LocalVarSig holds
/// them), and the method runs with them (`answer 1041`). It refused them
/// (`ILR_E_INVALID_ARGUMENT`): it encoded the type as a plain type, where `pinned`
/// cannot be.
#[test]
fn add_local_takes_a_pinned_local() {
    for_each_runtime(|rt| {
        let config = hostile_wrap(
            "Answer",
            "method = \"Answer::Get\", trick = \"local_types\"",
        );
        let out = answers(rt, "pinned", &config, "answer 1041\n", 1041 & 0xFF);
        let err = &out.stderr;
        assert_eq!(
            status(err, "hostile_wrap", "add_local(\"object pinned\")"),
            0
        );
        assert_eq!(
            status(err, "hostile_wrap", "add_local(\"int32& pinned\")"),
            0
        );
    });
}

/// Proves that `edit_single_ret` answers when the body was made single-ret: null
/// out-pointers are `ILR_E_INVALID_ARGUMENT` either way; when no instrumentation method
/// asked for it, it is `ILR_E_NOT_FOUND` (the program unchanged); having asked, the
/// library gets the epilogue and the return-value local, and `+ 1000` through that
/// local before the epilogue makes `answer 1041`. When another library asked
/// (`tracer_c`, on `Returns.Values::Branches`), one that did not gets them too (`ILR_OK`:
/// the body is single-ret for every instrumentation method; the header said
/// `ILR_E_NOT_FOUND`).
#[test]
fn the_single_ret_answers_once_the_body_is_single_ret() {
    for_each_runtime(|rt| {
        let asked = hostile_wrap("Answer", "method = \"Answer::Get\", trick = \"single_ret\"");
        let out = answers(rt, "single-ret-1", &asked, "answer 41\n", 41);
        checks_passed(&out.stderr, "hostile_wrap", "single_ret", 2, 1);
        let got = status(
            &out.stderr,
            "hostile_wrap",
            "single_ret without having asked",
        );
        assert_eq!(got, -3);
        let config = format!(
            "[[method]]\nname = \"tracer_c\"\nlibrary = {}\noptions = {{ assembly = \"Returns\", \
             methods = [\"Returns.Values::Branches\"], single_ret = [\"Returns.Values::Branches\"] }}\n\n{}",
            toml_str(&library("tracer")),
            hostile_wrap(
                "Returns",
                "method = \"Returns.Values::Branches\", trick = \"single_ret\"",
            )
        );
        let out = run(rt, "Returns", "single-ret-other", &config, &[]);
        let err = &out.stderr;
        assert_attached(&out);
        assert_eq!(out.code(), exit_code("Returns"), "{err}");
        checks_passed(err, "hostile_wrap", "single_ret", 2, 1);
        assert_eq!(
            status(err, "hostile_wrap", "single_ret without having asked"),
            0
        );
        let asked = hostile_wrap(
            "Answer",
            "method = \"Answer::Get\", trick = \"single_ret\", want = 2",
        );
        let out = answers(rt, "single-ret-2", &asked, "answer 1041\n", 1041 & 0xFF);
        checks_passed(&out.stderr, "hostile_wrap", "single_ret", 4, 1);
    });
}

/// Proves that the single-ret's epilogue and return-value local stay right after the
/// library wrapped the body in the same edit: `Returns.Values::Branches` (two `ret`s,
/// made single-ret) is wrapped (entry and exit print), then its return-value local is
/// printed before the epilogue (`ILR_REDIRECT`): every call prints `hostile_wrap enter`,
/// its value (40 or 50, the value it returns), `hostile_wrap exit`, then the program's
/// line; with only an entry (case 1), the same without the exit line.
#[test]
fn the_single_ret_after_a_wrap_still_names_the_epilogue() {
    for_each_runtime(|rt| {
        for case in [0, 1] {
            let config = hostile_wrap(
                "Returns",
                &format!(
                    "method = \"Returns.Values::Branches\", trick = \"ret_after_wrap\", \
                     want = 2, case = {case}"
                ),
            );
            let out = run(
                rt,
                "Returns",
                &format!("ret-after-wrap-{case}"),
                &config,
                &[],
            );
            let err = &out.stderr;
            assert_attached(&out);
            assert_eq!(out.code(), exit_code("Returns"), "{err}");
            let mut want = String::new();
            for line in expected_stdout("Returns").lines() {
                if let Some(value) = line
                    .strip_prefix("Branches ")
                    .and_then(|r| r.split(' ').nth(1))
                {
                    want.push_str(&format!("hostile_wrap enter\n{value}\n"));
                    if case == 0 {
                        want.push_str("hostile_wrap exit\n");
                    }
                }
                want.push_str(line);
                want.push('\n');
            }
            assert_eq!(out.stdout, want, "case {case}:\n{err}");
            assert_eq!(status(err, "hostile_wrap", "ret_after_wrap wrap"), 0);
        }
    });
}

/// Proves that two wraps in one edit nest, the second around the first, and that an
/// `ilr_wrap` larger than the host's (a newer library's, 64 bytes more) is read up to
/// the host's size: each call of `Returns.Values::Plain` prints `w2 enter`, `w1 enter`,
/// `w1 exit`, the value (10, from the first wrap's return code), `w2 exit`, and the
/// second wrap's return code adds 100 to the result (`Plain 110`).
#[test]
fn two_wraps_in_one_edit_nest() {
    for_each_runtime(|rt| {
        let config = hostile_wrap(
            "Returns",
            "method = \"Returns.Values::Plain\", trick = \"wrap_twice\"",
        );
        let out = run(rt, "Returns", "wrap-twice", &config, &[]);
        let err = &out.stderr;
        assert_attached(&out);
        assert_eq!(out.code(), exit_code("Returns"), "{err}");
        let want: String = expected_stdout("Returns")
            .lines()
            .map(|l| match l {
                "Plain 10" => "w2 enter\nw1 enter\nw1 exit\n10\nw2 exit\nPlain 110\n".to_owned(),
                other => format!("{other}\n"),
            })
            .collect();
        assert_eq!(out.stdout, want, "{err}");
        assert_eq!(status(err, "hostile_wrap", "wrap_twice first"), 0);
        assert_eq!(status(err, "hostile_wrap", "wrap_twice second"), 0);
    });
}

/// Proves that a wrap keeps every `tail.` call a tail call or refuses the method: every
/// method of `TailCalls.exe` (tail calls 1,000,000 deep that overflow the stack unless
/// kept: self and mutual recursion, `callvirt` of a generic virtual method, a generic
/// method through a MethodSpec, `calli`, 16- and 24-byte structs, a byref, a value
/// type's `this`, a tail call mid-body) and of `EdgeCases.exe` (`jmp`, `localloc`, a
/// `switch` to `ret`s, loops to offset 0, filters, `rethrow`, a body ending in `throw`,
/// dead code, an empty method) is wrapped with a state local and a return-value local;
/// each program prints and exits as unprofiled. Every wrap is taken but
/// `EdgeCases.Program::JmpSource`'s (`jmp` cannot be inside a `try`: `ILR_E_REFUSED`,
/// the method left alone).
#[test]
fn wraps_keep_tail_calls_or_refuse_the_method() {
    for_each_runtime(|rt| {
        for (program, least) in [("TailCalls", 17), ("EdgeCases", 26)] {
            let config = hostile_wrap(
                program,
                &format!("prefix = \"{program}.\", trick = \"plain\""),
            );
            let out = unchanged(rt, program, &format!("plain-{program}"), &config);
            let err = &out.stderr;
            let taken = err
                .lines()
                .filter(|l| {
                    l.starts_with("ilrewrite: hostile_wrap: wrap ") && l.ends_with(" status 0")
                })
                .count();
            assert!(taken >= least, "{program}: {taken} wraps taken:\n{err}");
            let refused: Vec<&str> = err
                .lines()
                .filter(|l| {
                    l.starts_with("ilrewrite: hostile_wrap: wrap ") && !l.ends_with(" status 0")
                })
                .collect();
            let want: &[&str] = match program {
                "EdgeCases" => {
                    &["ilrewrite: hostile_wrap: wrap EdgeCases.Program::JmpSource status -5"]
                }
                _ => &[],
            };
            assert_eq!(refused, want, "{program}:\n{err}");
            assert!(!err.contains("does not verify"), "{program}:\n{err}");
        }
    });
}

/// Proves that the single-ret keeps tail calls (or leaves their methods alone): every
/// method of `TailCalls.exe` and `EdgeCases.exe` is edited by a library that asked for
/// the single-ret (`ILR_WANT_EDIT_SINGLE_RET`) and inserts a `nop` at the entry, so that
/// the single-ret body is handed over; each insertion is taken, nothing is rolled back,
/// and both programs print and exit as unprofiled (the 1,000,000-deep tail calls
/// overflow the stack unless kept).
#[test]
fn the_single_ret_keeps_tail_calls() {
    for_each_runtime(|rt| {
        for (program, least) in [("TailCalls", 17), ("EdgeCases", 27)] {
            let config = hostile_wrap(
                program,
                &format!("prefix = \"{program}.\", trick = \"nop\", want = 2"),
            );
            let out = unchanged(rt, program, &format!("single-ret-{program}"), &config);
            let err = &out.stderr;
            let all = err
                .lines()
                .filter(|l| l.starts_with("ilrewrite: hostile_wrap: nop "))
                .count();
            let taken = err
                .lines()
                .filter(|l| {
                    l.starts_with("ilrewrite: hostile_wrap: nop ") && l.ends_with(" status 0")
                })
                .count();
            assert!(taken >= least, "{program}: {taken} taken:\n{err}");
            assert_eq!(all, taken, "{program}:\n{err}");
            assert!(!err.contains("does not verify"), "{program}:\n{err}");
            assert!(!err.contains("original IL is kept"), "{program}:\n{err}");
        }
    });
}

/// Proves that a library's failed edit is rolled back alone, its new local with it,
/// whichever instrumentation method edits first: `scale` (x2) and `hostile_wrap` both
/// edit `LocalsLimit.Program::AlmostFull` (65,534 locals); `hostile_wrap` adds the
/// 65,535th local, is refused a wrap that needs one more, and fails its edit with that
/// status: its edit is rolled back (logged, naming it) and `scale`'s stands (`almost full
/// 131106`, twice 65,553), before it (priority 20) or after it (5).
#[test]
fn a_failed_edit_with_a_new_local_is_rolled_back_alone() {
    for_each_runtime(|rt| {
        for priority in [20, 5] {
            let config = format!(
                "[[method]]\nname = \"scale\"\npriority = {priority}\n\
                 options = {{ filter = \"LocalsLimit.Program::AlmostFull\", factor = 2 }}\n\n{}",
                hostile_wrap(
                    "LocalsLimit",
                    "method = \"LocalsLimit.Program::AlmostFull\", trick = \"locals\", case = 1",
                )
            );
            let out = run(
                rt,
                "LocalsLimit",
                &format!("rollback-{priority}"),
                &config,
                &[],
            );
            let err = &out.stderr;
            assert_attached(&out);
            assert_eq!(out.code(), exit_code("LocalsLimit"), "{err}");
            let want = locals_limit_with(|l| match l {
                "almost full 65553" => "almost full 131106\n".to_owned(),
                other => format!("{other}\n"),
            });
            assert_eq!(out.stdout, want, "scale at {priority}:\n{err}");
            assert!(
                err.lines()
                    .any(|l| l.contains("instrumentation method hostile_wrap")
                        && l.contains("the wrap was refused, the edit fails (status -5)")
                        && l.contains(
                            "its edits of this method are rolled back, the others' kept"
                        )),
                "scale at {priority}:\n{err}"
            );
        }
    });
}

/// Documents where a wrap's code may `localloc`: in the entry (before the `try`) it is
/// taken and runs (`answer 41`); in the exit (a `finally` handler, where the JIT rejects
/// it) `edit_wrap` answers `ILR_OK`, and the verification after the library's `edit`
/// returns rolls the edit back ("localloc in a handler or filter"): the method runs its
/// original IL.
#[test]
fn localloc_in_a_wrap_s_exit_is_rolled_back() {
    for_each_runtime(|rt| {
        for (case, what) in [(0, "localloc in exit"), (1, "localloc in entry")] {
            let config = hostile_wrap(
                "Answer",
                &format!("method = \"Answer::Get\", trick = \"localloc\", case = {case}"),
            );
            let out = answers(rt, &format!("localloc-{case}"), &config, "answer 41\n", 41);
            let err = &out.stderr;
            assert_eq!(status(err, "hostile_wrap", what), 0);
            let rolled_back = err.lines().any(|l| {
                l.contains("Answer::Get")
                    && l.contains("localloc in a handler or filter")
                    && l.contains("its original IL is kept")
            });
            assert_eq!(rolled_back, case == 0, "case {case}:\n{err}");
        }
    });
}

/// Proves that a wrap of a method that never returns normally, and of an empty one, runs
/// its exit on every way out: `EdgeCases.Program::ThrowAtEnd` (no `ret`, ends in
/// `throw`) prints `hostile_wrap enter` and `hostile_wrap exit` as its exception leaves
/// (before the catch prints `throw at end 44`), `Empty` (a lone `ret`) prints both where
/// it is called (before `done`); the rest of the output is unchanged.
#[test]
fn a_wrap_of_a_method_ending_in_throw_or_empty_runs_its_exit() {
    for_each_runtime(|rt| {
        for (method, before) in [("ThrowAtEnd", "throw at end 44"), ("Empty", "done")] {
            let config = hostile_wrap(
                "EdgeCases",
                &format!("method = \"EdgeCases.Program::{method}\", trick = \"print\""),
            );
            let out = run(rt, "EdgeCases", &format!("print-{method}"), &config, &[]);
            let err = &out.stderr;
            assert_attached(&out);
            assert_eq!(out.code(), exit_code("EdgeCases"), "{err}");
            let at = line_of("EdgeCases", before);
            let want = insert_lines(
                &expected_stdout("EdgeCases"),
                at,
                &["hostile_wrap enter", "hostile_wrap exit"],
            );
            assert_eq!(out.stdout, want, "{method}:\n{err}");
            assert_eq!(
                status(
                    err,
                    "hostile_wrap",
                    &format!("print EdgeCases.Program::{method}")
                ),
                0
            );
        }
    });
}

/// Proves that every misuse of `ilr_wrap` is refused and changes nothing (60-odd
/// checks, then the body compared instruction by instruction): a null wrap; `size` 0,
/// 4, 8 or one less than the struct; a null array with a count; `ILR_OPERAND_METHOD_ID`
/// on anything but `ldc.i4` (`ldc.i4.s`, `ldc.i8`, `nop`, `call`),
/// `ILR_OPERAND_MODULE_ID` on anything but `ldc.i8`; `ILR_OPERAND_STATE_LOCAL` without a
/// `state_local` type, or on `add`, `ldarg.0`, `starg.s`; `ILR_OPERAND_RETURN_LOCAL` in
/// the entry, in the exit, on `add`, or in a `void` method's code; `ILR_OPERAND_CODE`
/// past the end, negative, past 32 bits, on `ldc.i4`, `leave.s` or `switch`; a branch to
/// an instruction of the body; `ret`, `throw` last, `tail.`, `jmp`, `endfinally`, `leave`,
/// `rethrow`; an unknown opcode or operand kind; a local or token the method or module
/// does not have, `arglist` without varargs, `volatile.` before `nop` or last, `newobj`
/// and `callvirt` of the (static) method itself; a state local type of `void`, of no row, unparsable, empty, not UTF-8,
/// `void[]` (all `ILR_E_INVALID_ARGUMENT`); an entry that leaves a value or pops the empty
/// stack, a return code that leaves a value, an exit that pops the empty stack
/// (`ILR_E_REFUSED`, the body restored). Then the valid wrap runs: its entry prints the
/// method's token (`ILR_OPERAND_METHOD_ID`) and ModuleID (`ILR_OPERAND_MODULE_ID`), both
/// as the host's `edit_method` gives them, then 3, 2, 1 (a backward `ILR_OPERAND_CODE`
/// loop over the state local), and its return code adds 1000 to `Answer::Get`'s result
/// (`answer 1041`), or prints `void ret` after `EdgeCases.Program::Empty`.
#[test]
fn every_misuse_of_a_wrap_is_refused_and_changes_nothing() {
    for_each_runtime(|rt| {
        for (program, method) in [
            ("Answer", "Answer::Get"),
            ("EdgeCases", "EdgeCases.Program::Empty"),
        ] {
            let config = hostile_wrap(
                program,
                &format!("method = \"{method}\", trick = \"misuse\""),
            );
            let out = run(rt, program, &format!("misuse-{program}"), &config, &[]);
            let err = &out.stderr;
            assert_attached(&out);
            checks_passed(err, "hostile_wrap", "misuse", 60, 1);
            let ids = err
                .lines()
                .find_map(|l| l.strip_prefix("ilrewrite: hostile_wrap: method "))
                .unwrap_or_else(|| panic!("no ids:\n{err}"));
            let (token, module) = ids.split_once(" module ").expect("token and module");
            let printed = [token, module, "3", "2", "1"];
            let want = match program {
                "Answer" => {
                    assert_eq!(out.code(), 1041 & 0xFF, "{err}");
                    format!("{}\nanswer 1041\n", printed.join("\n"))
                }
                _ => {
                    assert_eq!(out.code(), exit_code("EdgeCases"), "{err}");
                    let mut lines = printed.to_vec();
                    lines.push("void ret");
                    insert_lines(
                        &expected_stdout("EdgeCases"),
                        line_of("EdgeCases", "done"),
                        &lines,
                    )
                }
            };
            assert_eq!(out.stdout, want, "{program}:\n{err}");
        }
    });
}

/// Documents what a wrap whose code leaves the stack unbalanced does: an entry that
/// leaves an `int32` is refused (`ILR_E_REFUSED`: the `try` must be entered with an
/// empty stack) and the program runs unchanged; an exit (the `finally`) that leaves one
/// is taken (`ILR_OK`): `endfinally` empties the stack, and both runtimes run it, the
/// exit's line printed and the result unchanged (`answer 41`).
#[test]
fn a_wrap_that_leaves_a_value_on_the_stack() {
    for_each_runtime(|rt| {
        let config = hostile_wrap(
            "Answer",
            "method = \"Answer::Get\", trick = \"entry_leaves\"",
        );
        let out = answers(rt, "entry-leaves", &config, "answer 41\n", 41);
        assert_eq!(status(&out.stderr, "hostile_wrap", "entry_leaves"), -5);
        let config = hostile_wrap(
            "Answer",
            "method = \"Answer::Get\", trick = \"exit_leaves\"",
        );
        let out = answers(
            rt,
            "exit-leaves",
            &config,
            "hostile_wrap exit\nanswer 41\n",
            41,
        );
        assert_eq!(status(&out.stderr, "hostile_wrap", "exit_leaves"), 0);
    });
}

/// Documents that a branch of inserted code to itself (`br.s` with `ILR_OPERAND_CODE`
/// naming its own index: an infinite loop, which is valid IL) is taken, in a wrap's entry
/// and inserted at the entry alike (`ILR_OK`): the host verifies the stack, not
/// termination. The library then fails its edit, which is rolled back (the program runs
/// unchanged, and does not hang).
#[test]
fn a_branch_to_itself_is_taken() {
    for_each_runtime(|rt| {
        for (case, what) in [(0, "self_loop wrap"), (1, "self_loop insert")] {
            let config = hostile_wrap(
                "Answer",
                &format!("method = \"Answer::Get\", trick = \"self_loop\", case = {case}"),
            );
            let out = answers(rt, &format!("self-loop-{case}"), &config, "answer 41\n", 41);
            let err = &out.stderr;
            assert_eq!(status(err, "hostile_wrap", what), 0);
            assert!(err.contains("self_loop rolls its edit back"), "{err}");
        }
    });
}

/// Proves that a wrap costs time in proportion to its code: an entry of 100,000 `nop`s
/// is wrapped in well under a second (the wrap is taken, the program unchanged). The
/// host looked for the targets of `ILR_OPERAND_CODE` branches once per instruction,
/// through the whole code each time: 10^10 steps, 11 seconds, for this entry (a million
/// instructions would have taken about 20 minutes, the runtime's thread blocked).
#[test]
fn a_huge_wrap_takes_time_in_proportion() {
    for_each_runtime(|rt| {
        let config = hostile_wrap(
            "Answer",
            "method = \"Answer::Get\", trick = \"huge\", case = 100000",
        );
        let started = Instant::now();
        let out = answers(rt, "huge", &config, "answer 41\n", 41);
        let err = &out.stderr;
        let line = err
            .lines()
            .find_map(|l| l.strip_prefix("ilrewrite: hostile_wrap: huge 100000 status 0 in "))
            .unwrap_or_else(|| panic!("no huge line:\n{err}"));
        let ms: u64 = line
            .strip_suffix(" ms")
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{line}"));
        println!(
            "{rt}: a wrap of 100,000 instructions in {ms} ms ({:?} the run)",
            started.elapsed()
        );
        assert!(ms < 1_500, "{ms} ms");
    });
}

/// Documents what the host keeps during one call: every `ilr_str` and item pointer it
/// gives is kept until the call returns (the ABI's promise), so 100,000 calls of
/// `edit_name`, `edit_module_item`, and `edit_options` with `option_string` in one edit
/// all answer `ILR_OK` and resident memory grows by about 50, 16 and 50 bytes a call
/// while the call runs (freed when it returns): bounded by the call, linear.
#[test]
fn what_the_host_keeps_during_a_call() {
    for_each_runtime(|rt| {
        let out = unchanged(rt, "Answer", "repeat", &hostile_mod("repeat = 100000"));
        let err = &out.stderr;
        let lines: Vec<&str> = err
            .lines()
            .filter_map(|l| l.strip_prefix("ilrewrite: hostile_mod: observe 100000 calls of "))
            .collect();
        assert_eq!(lines.len(), 3, "{err}");
        for line in lines {
            assert!(line.contains("(100000 OK)"), "{line}");
            let kib: i64 = line
                .rsplit(' ')
                .nth(1)
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("{line}"));
            println!("{rt}: {line}");
            // Under 200 bytes a call.
            assert!(kib < 20_000, "{line}");
        }
    });
}

/// Proves that a length or count no buffer can have never takes the program down: user
/// strings and raw signatures of `SIZE_MAX`, 2^62 and 2^40 bytes, code of as many
/// instructions inserted at the entry, before the returns, and as a wrap's entry and
/// exit, each given with a real buffer that is invalid from its first bytes (so a host
/// that reads no further than it must stays inside it), are `ILR_E_INVALID_ARGUMENT`
/// and change nothing; `host->log` of a 100,000-byte line, and of the same buffer with
/// the length `SIZE_MAX`, logs its first 64 KiB and says how long it was. Before, the
/// log call aborted the process (`String::from_utf8_lossy` asked for `SIZE_MAX` bytes),
/// and so did a wrap with 2^40 instructions (`snippet_of` allocated two arrays of that
/// many entries before reading one: 4 TB); a wrap of `SIZE_MAX` instructions panicked
/// inside the host (`ILR_E_FAILED`).
#[test]
fn lengths_no_buffer_can_have_are_refused() {
    for_each_runtime(|rt| {
        let out = unchanged(rt, "Answer", "lengths", &hostile_mod("lengths = true"));
        let err = &out.stderr;
        checks_passed(err, "hostile_mod", "lengths", 5, 1);
        checks_passed(err, "hostile_mod", "edit lengths", 12, 1);
        assert!(err.contains("hostile_mod: logged the long lines"), "{err}");
        let long: Vec<&str> = err
            .lines()
            .filter(|l| l.starts_with("ilrewrite: hostile_mod: long line "))
            .collect();
        assert_eq!(long.len(), 2, "{err}");
        for (line, length) in long.iter().zip(["100000", "18446744073709551615"]) {
            assert!(line.len() < 66_000, "a line of {} bytes", line.len());
            assert!(
                line.ends_with(&format!("... ({length} bytes)")),
                "{}",
                &line[line.len() - 60..]
            );
        }
    });
}

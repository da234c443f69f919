//! Instrumentation methods in shared libraries of their own (issue 33), end to end:
//! `examples/engine.rs` (the manager, configured by the file `ENGINE_CONFIG` names,
//! with the built-in `scale` and the C ABI's loader) on the test programs, with the C
//! libraries of `tests/components/` compiled by the system C compiler when the test
//! runs (`$CC`, else `cc`).
//!
//! * composition: the built-in `scale` and the C `offset_c` edit one method in the
//!   configured priority order, in both orders;
//! * fail closed: a library that cannot be used (missing, no symbols, another ABI
//!   version, a failing `create`, a failing `start`, an option it does not declare, a
//!   configured name that is not its own) is one line on stderr naming it and why, and
//!   the program runs exactly as unprofiled;
//! * a handle kept past its call gets `ILR_E_INVALID_HANDLE`, nothing worse;
//! * many threads compiling at once call the library's `wants` and `edit` at once.
//!
//! Also, in-process and without a runtime: what `LibraryMethod::load` answers for each
//! library that must be refused.
#![cfg(feature = "clr")]

mod clr_support;

use std::path::PathBuf;

use clr_support::components::{
    assert_attached, assert_unchanged, components, entry, library, library_file, refused, run,
    toml_str,
};
use clr_support::{exit_code, expected_stdout, for_each_runtime};
use ilrewrite::clr::{InstrumentationMethod, LibraryMethod, LoadError};

// ---------------------------------------------------------------------------------------
// Composition
// ---------------------------------------------------------------------------------------

/// `scale` (factor 2) and `offset_c` (addend 1) on `Answer::Get`, with the priorities
/// given.
fn composition(scale: i32, offset: i32) -> String {
    format!(
        r#"
[[method]]
name = "scale"
priority = {scale}
options = {{ filter = "Answer::Get", factor = 2 }}

[[method]]
name = "offset_c"
library = {}
priority = {offset}
options = {{ filter = "Answer::Get", addend = 1 }}
"#,
        toml_str(&library("offset"))
    )
}

/// Proves that a C instrumentation method composes with a built-in one in one priority
/// order (higher edits first, so the one that edits last wraps the other's `ret`s):
/// `scale` at 20 then `offset_c` at 10 make `Answer::Get` return 41 * 2 + 1 = 83;
/// swapped, (41 + 1) * 2 = 84. Stdout and exit code both show it, on both runtimes.
#[test]
fn a_c_method_and_a_built_in_one_compose_in_priority_order() {
    for_each_runtime(|rt| {
        for (scale, offset, answer) in [(20, 10, 83), (10, 20, 84)] {
            let out = run(
                rt,
                "Answer",
                &format!("compose-{scale}-{offset}"),
                &composition(scale, offset),
                &[],
            );
            let err = &out.stderr;
            assert_attached(&out);
            assert_eq!(
                out.stdout,
                format!("answer {answer}\n"),
                "scale {scale}, offset_c {offset}:\n{err}"
            );
            assert_eq!(out.code(), answer, "{err}");
        }
    });
}

// ---------------------------------------------------------------------------------------
// Fail closed
// ---------------------------------------------------------------------------------------

/// Proves that a library's `targets` reach precompiled code with ReadyToRun kept: the
/// selectors `offset_c` returns after `start` (from its `targets` option, read item by
/// item through `option_string_at`) make the manager turn ReJIT on, and the library's
/// `edit` is called for `StringBuilder::ToString()` (ReadyToRun code of CoreLib,
/// compiled again) and for the program's own `Serve` (JIT-compiled), once each, with
/// `candidate_is_target` answering its `wants`; `addend = 0` changes nothing the program
/// prints.
#[test]
fn a_librarys_targets_reach_precompiled_code_with_ready_to_run_kept() {
    let targets =
        "\"System.Text.StringBuilder::ToString()\", \"CallTargetFramework.Program::Serve\"";
    let config = entry(
        "offset_c",
        &library("offset"),
        &format!("targets = [{targets}], addend = 0, verbose = true"),
    );
    for_each_runtime(|rt| {
        let out = run(rt, "CallTargetFramework", "targets", &config, &[]);
        let err = &out.stderr;
        assert_attached(&out);
        assert_unchanged(rt, "CallTargetFramework", &out);
        assert!(
            err.contains(
                "instrumentation method offset_c has targets and ReadyToRun code is kept: ReJIT is on"
            ),
            "{err}"
        );
        let mut edits: Vec<&str> = err
            .lines()
            .filter_map(|l| l.strip_prefix("ilrewrite: offset_c: edit "))
            .collect();
        edits.sort_unstable();
        assert_eq!(
            edits,
            [
                "CallTargetFramework.Program::Serve",
                "System.Text.StringBuilder::ToString"
            ],
            "{err}"
        );
    });
}

/// Proves that a library path that names no file is refused with the loader's reason,
/// the path made absolute against the configuration file's directory (the path is
/// written relative).
#[test]
fn a_missing_library_is_refused() {
    let config = "[[method]]\nname = \"offset_c\"\nlibrary = \"no-such-dir/libnothing.so\"\n";
    refused(
        "missing",
        config,
        &[],
        &[
            "engine: ",
            &format!("{}/no-such-dir/libnothing.so", env!("CARGO_TARGET_TMPDIR")),
            "cannot load",
        ],
    );
}

/// Proves that a shared library exporting neither ABI symbol is refused, naming the
/// missing symbol.
#[test]
fn a_library_without_the_symbols_is_refused() {
    refused(
        "no-symbols",
        &entry("offset_c", &library("no_symbols"), ""),
        &[],
        &[
            "engine: ",
            &library_file("no_symbols"),
            "no symbol `ilrewrite_abi_version`",
        ],
    );
}

/// Proves that a library of ABI version 2 is refused from its version alone, before any
/// of its functions is called: its `ilrewrite_method_create` writes the file
/// `ILR_TEST_MARKER` names when called (`library_create_writes_the_marker` shows it
/// does), and the file is not there afterwards.
#[test]
fn another_abi_version_is_refused_before_any_call() {
    let marker = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("abi_v2-marker-{}", std::process::id()));
    let _ = std::fs::remove_file(&marker);
    let marker_text = marker.to_str().expect("a UTF-8 path");
    refused(
        "abi-v2",
        &entry("abi_v2", &library("abi_v2"), ""),
        &[("ILR_TEST_MARKER", marker_text)],
        &[
            "engine: ",
            &library_file("abi_v2"),
            "ABI version 2, this profiler speaks version 1",
        ],
    );
    assert!(
        !marker.exists(),
        "abi_v2's ilrewrite_method_create was called: {}",
        marker.display()
    );
}

/// Proves that a failing `ilrewrite_method_create` is refused with its status and the
/// message the library wrote.
#[test]
fn a_failing_create_is_refused_with_its_message() {
    refused(
        "create-fails",
        &entry("create_fails", &library("create_fails"), ""),
        &[],
        &[
            "engine: ",
            &library_file("create_fails"),
            "ilrewrite_method_create failed (status -6): create_fails: no licence for this machine",
        ],
    );
}

/// Proves that a `start` that fails stops the profiler's start: the library's message
/// is logged with its name and path, and nothing is rewritten (`Answer::Get`, which
/// the filter selects, still returns 41).
#[test]
fn a_failing_start_rewrites_nothing() {
    refused(
        "fail-start",
        &entry(
            "offset_c",
            &library("offset"),
            r#"filter = "Answer::Get", fail_start = true"#,
        ),
        &[],
        &[
            "ilrewrite: ",
            &library_file("offset"),
            "offset_c refuses to start (fail_start)",
        ],
    );
}

/// Proves that the options a library declares are the only ones a configuration may
/// give it: another is refused at the configuration, naming the method (the library's
/// name) and the option.
#[test]
fn an_option_the_library_does_not_declare_is_refused() {
    refused(
        "undeclared",
        &entry(
            "offset_c",
            &library("offset"),
            r#"filter = "Answer::Get", colour = "red""#,
        ),
        &[],
        &[
            "engine: ",
            "instrumentation method \"offset_c\" has no option `colour`",
        ],
    );
}

/// Proves that an entry's `name` must be the library's own: `offset` for the library
/// of `offset_c` is refused, naming the library and both names.
#[test]
fn a_configured_name_that_is_not_the_librarys_is_refused() {
    refused(
        "wrong-name",
        &entry("offset", &library("offset"), r#"filter = "Answer::Get""#),
        &[],
        &[
            "engine: ",
            &library_file("offset"),
            "is instrumentation method \"offset_c\", not \"offset\"",
        ],
    );
}

// ---------------------------------------------------------------------------------------
// Handles and threads
// ---------------------------------------------------------------------------------------

/// Proves that a handle used after the call that received it returned gets
/// `ILR_E_INVALID_HANDLE` (-1), neither a crash nor another edit's body: with
/// `stale = true`, `offset_c` calls `body_first` with the previous edit's handle at
/// each edit and logs the status. The filter `Returns.Values::` selects the six methods
/// of `Returns.Values` (five int32, one int64), so there are six edits and five stale
/// calls; every int32 result is one more than unprofiled, `Wide` (int64) unchanged.
#[test]
fn a_stale_edit_handle_gets_invalid_handle() {
    let config = entry(
        "offset_c",
        &library("offset"),
        r#"filter = "Returns.Values::", addend = 1, stale = true"#,
    );
    let expected: String = expected_stdout("Returns")
        .lines()
        .map(|line| {
            let (label, value) = line.rsplit_once(' ').expect("`NAME VALUE` lines");
            let value: i64 = value.parse().expect("a number");
            let value = if label == "Wide" { value } else { value + 1 };
            format!("{label} {value}\n")
        })
        .collect();
    for_each_runtime(|rt| {
        let out = run(rt, "Returns", "stale", &config, &[]);
        let err = &out.stderr;
        assert_attached(&out);
        assert_eq!(out.stdout, expected, "{err}");
        assert_eq!(out.code(), exit_code("Returns"), "{err}");
        let stale: Vec<&str> = err
            .lines()
            .filter(|l| l.contains("offset_c: stale handle status"))
            .collect();
        assert_eq!(stale.len(), 5, "{err}");
        assert!(
            stale
                .iter()
                .all(|l| l.ends_with("offset_c: stale handle status -1")),
            "{err}"
        );
    });
}

/// Proves that the library's `wants` and `edit` are called on many threads at once
/// (free-threaded) without harm: `Concurrency.exe`'s 32 threads compile instantiations
/// of generic methods at the same moment; `wants` is asked about every method the
/// program compiles, the filter selects `Concurrency.Gen::G0`..`G9` (they return int64,
/// which `offset_c` leaves alone: their edits run and change nothing). The output and
/// exit code (the program checks its own counts and results) are unchanged, with and
/// without tiering. With `concurrency = true` the library counts its calls in flight:
/// on a machine of two or more cores, some overlapped in each runtime's runs (the
/// largest count logged is 2 or more), so the calls were really concurrent.
#[test]
fn many_threads_compiling_at_once_call_the_library_at_once() {
    let config = entry(
        "offset_c",
        &library("offset"),
        r#"filter = "Concurrency.Gen::G", addend = 1000, concurrency = true"#,
    );
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    for_each_runtime(|rt| {
        let mut most = 0;
        for tiering in ["1", "0"] {
            let out = run(
                rt,
                "Concurrency",
                &format!("threads-{tiering}"),
                &config,
                &[("COMPlus_TieredCompilation", tiering)],
            );
            let err = &out.stderr;
            assert_attached(&out);
            assert_eq!(out.stdout, expected_stdout("Concurrency"), "{err}");
            assert_eq!(out.code(), exit_code("Concurrency"), "{err}");
            let at_once = err
                .lines()
                .filter_map(|l| l.strip_prefix("ilrewrite: offset_c: calls at once "))
                .map(|n| n.parse::<u32>().expect("a count"))
                .max();
            // `wants` is called at least once (the counter logs 1 first).
            assert!(
                at_once.is_some(),
                "offset_c was never called:
{err}"
            );
            most = most.max(at_once.unwrap_or(0));
        }
        println!("at most {most} calls of offset_c at once ({cores} cores)");
        if cores >= 2 {
            assert!(most >= 2, "the calls of offset_c never overlapped");
        }
    });
}

// ---------------------------------------------------------------------------------------
// In-process: what `LibraryMethod::load` answers
// ---------------------------------------------------------------------------------------

/// Proves each refusal's kind without a runtime: a missing file, no symbols, another
/// ABI version (its `create` not called: no marker), a failing `create` with its
/// message; and that `offset_c` loads with what it declares.
#[test]
fn load_answers_each_library_for_what_it_is() {
    let err = LibraryMethod::load(&components().join("libnothing.so")).unwrap_err();
    assert!(matches!(err, LoadError::Load { .. }), "{err}");
    let err = LibraryMethod::load(&library("no_symbols")).unwrap_err();
    assert!(
        matches!(
            err,
            LoadError::MissingSymbol {
                symbol: "ilrewrite_abi_version",
                ..
            }
        ),
        "{err}"
    );
    let err = LibraryMethod::load(&library("abi_v2")).unwrap_err();
    assert!(
        matches!(
            err,
            LoadError::Version {
                found: 2,
                expected: 1,
                ..
            }
        ),
        "{err}"
    );
    let err = LibraryMethod::load(&library("create_fails")).unwrap_err();
    match &err {
        LoadError::Create { reason, .. } => assert_eq!(
            reason,
            "ilrewrite_method_create failed (status -6): create_fails: no licence for this machine"
        ),
        other => panic!("{other}"),
    }
    let offset = LibraryMethod::load(&library("offset")).expect("offset_c loads");
    assert_eq!(offset.name(), "offset_c");
    assert_eq!(offset.priority(), 10);
    let options: Vec<&str> = offset.options().iter().map(|o| o.name).collect();
    assert_eq!(
        options,
        [
            "filter",
            "addend",
            "fail_start",
            "stale",
            "concurrency",
            "targets",
            "verbose"
        ]
    );
}

/// The negative control of `another_abi_version_is_refused_before_any_call`: called,
/// `abi_v2`'s `ilrewrite_method_create` does write the marker, so its absence there
/// means it was not called.
#[test]
#[allow(unsafe_code)]
fn library_create_writes_the_marker() {
    let marker = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("abi_v2-control-{}", std::process::id()));
    let _ = std::fs::remove_file(&marker);
    // The library reads the variable when called; no other test of this binary sets
    // or reads it in this process.
    // SAFETY: set before the call, read only by abi_v2's create below; tests that run
    // .NET programs pass it to the child explicitly.
    unsafe { std::env::set_var("ILR_TEST_MARKER", &marker) };
    // SAFETY: abi_v2's initializers do nothing; `create` is declared with this
    // signature by the header and, by abi_v2's source, reads none of its arguments.
    let status = unsafe {
        let lib = libloading::Library::new(library("abi_v2")).expect("abi_v2 loads");
        let create = lib
            .get::<unsafe extern "C" fn(*const u8, *mut u8, *mut u8) -> i32>(
                b"ilrewrite_method_create\0",
            )
            .expect("abi_v2 exports create");
        create(std::ptr::null(), std::ptr::null_mut(), std::ptr::null_mut())
    };
    assert_eq!(status, -6);
    assert!(
        marker.exists(),
        "the control did not write {}",
        marker.display()
    );
    let _ = std::fs::remove_file(&marker);
}

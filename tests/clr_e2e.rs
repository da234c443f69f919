//! The `clr` feature in a real CoreCLR 3.1.23: the test programs of `tests/programs/` run
//! under the sample profiler (`examples/profiler.rs`) and the test profilers
//! (`examples/tiny_profiler.rs`, `examples/test_profiler.rs`), and must behave exactly as
//! they do unprofiled, or exactly as the rewrite intends.
//!
//! Every test checks that the profiler attached, from the profiler's own output (a
//! wrong `CORECLR_*` value would run the program unprofiled, silently).
#![cfg(feature = "clr")]

mod clr_support;

use clr_support::{
    CALL_TREE_CALLS, PROGRAMS, Summary, TAIL_CALLS_CALLS, TAIL_CALLS_METHOD_CALLS,
    build_example_cdylib, exit_code, expected_stdout, run_profiled, run_unprofiled,
    sample_profiler,
};

/// The sample profiler's CLSID (README and `examples/profiler.rs`).
const SAMPLE: &str = "{8C1E2D4F-3B6A-4E59-A7C2-1F0D9B3E6A51}";
const TINY: &str = "{0B5C3F2A-7D41-4E8B-9A6C-2E1F4D7B8C93}";
const TEST: &str = "{4A7E2C19-5B3D-4F60-8E21-9C6D0B1A3F57}";

/// Runs `program` under the sample profiler in `mode` (tiering off, so that JIT counts
/// are the same from run to run), checks that stdout and the exit code are those of
/// the unprofiled run, and returns the profiler's summary.
fn sample(program: &str, mode: &str, filter: Option<&str>) -> Summary {
    sample_tiered(program, mode, filter, false)
}

/// [`sample`] with tiered compilation on or off.
fn sample_tiered(program: &str, mode: &str, filter: Option<&str>, tiering: bool) -> Summary {
    let tiering = if tiering { "1" } else { "0" };
    let mut env = vec![
        ("ILREWRITE_MODE", mode),
        ("COMPlus_TieredCompilation", tiering),
    ];
    if let Some(filter) = filter {
        env.push(("ILREWRITE_FILTER", filter));
    }
    let out = run_profiled(program, &sample_profiler(), SAMPLE, &env);
    let summary = Summary::parse(&out.stderr)
        .unwrap_or_else(|e| panic!("{program} {mode}: the profiler did not report: {e}"));
    assert_eq!(summary.mode, mode, "{program}");
    assert_eq!(
        out.stdout,
        expected_stdout(program),
        "{program} {mode}: stdout differs"
    );
    assert_eq!(
        out.status.code(),
        Some(exit_code(program)),
        "{program} {mode}: exit code"
    );
    eprintln!("{program} {mode}: {summary:?}");
    summary
}

#[test]
fn the_programs_run_unprofiled_as_expected() {
    for &(program, code) in PROGRAMS {
        let out = run_unprofiled(program);
        assert_eq!(out.stdout, expected_stdout(program), "{program}");
        assert_eq!(out.status.code(), Some(code), "{program}");
    }
}

/// `count` attaches and sees JIT compilations (framework methods included: ReadyToRun
/// images are disabled), and changes nothing.
#[test]
fn count_attaches_and_rewrites_nothing() {
    let s = sample("Answer", "count", None);
    assert!(s.jitted > 100, "{s:?}");
    assert_eq!((s.rewritten, s.refused, s.failed), (0, 0, 0));
}

/// `identity` decodes and re-encodes every JIT-compiled method, framework included, and
/// hands the bytes to the runtime: the programs behave as unprofiled, every method is
/// rewritten, none fails, and the bytes handed over are the original ones (the
/// rewriter refuses to hand over an unedited body whose bytes changed: `failed` would
/// count it).
#[test]
fn identity_on_every_jit_compiled_method() {
    for &(program, _) in PROGRAMS {
        let s = sample(program, "identity", None);
        assert!(s.jitted > 100, "{program}: {s:?}");
        assert_eq!(s.rewritten, s.jitted, "{program}: {s:?}");
        assert_eq!((s.refused, s.failed), (0, 0), "{program}: {s:?}");
    }
}

/// `wrap` puts every JIT-compiled method in try/finally with counting entry and exit
/// code: the programs behave as unprofiled, nothing fails, and every counted entry has
/// at most one exit (threads of the runtime may still be inside methods at shutdown).
/// The only refusals are bodies the crate cannot wrap (`jmp`).
#[test]
fn wrap_on_every_jit_compiled_method() {
    for &(program, _) in PROGRAMS {
        let s = sample(program, "wrap", None);
        assert_eq!(s.failed, 0, "{program}: {s:?}");
        assert!(s.rewritten + s.refused <= s.jitted, "{program}: {s:?}");
        assert!(s.rewritten > 100, "{program}: {s:?}");
        assert!(s.enters >= s.exits && s.exits > 0, "{program}: {s:?}");
        for (reason, _) in &s.reasons {
            assert!(reason.contains("jmp"), "{program}: refused for {reason}");
        }
    }
}

/// With the filter on the one type of a single-threaded program, the counters give the
/// exact number of calls of its call tree (recursion and exceptions included), each
/// call with its exit.
#[test]
fn wrap_counts_exactly_the_calls_of_a_known_call_tree() {
    let s = sample("CallTree", "wrap", Some("CallTree.Work::"));
    assert_eq!((s.failed, s.refused), (0, 0), "{s:?}");
    assert_eq!(s.enters, CALL_TREE_CALLS, "{s:?}");
    assert_eq!(s.exits, CALL_TREE_CALLS, "{s:?}");
}

/// Tail calls stay tail calls under `wrap`: `TailCalls.exe` and `EdgeCases.exe`, whose
/// `tail.` calls go 1,000,000 deep in every shape the runtime makes fast (and overflow
/// the stack when a profiler drops the prefixes; a 24-byte struct argument, which 3.1
/// never tail-calls fast, goes 2,000 deep), run as unprofiled with every JIT-compiled
/// method wrapped, tiering on and off; nothing fails, the only refusals are `jmp`.
#[test]
fn wrap_keeps_tail_calls_a_million_deep() {
    for program in ["TailCalls", "EdgeCases"] {
        for tiering in [false, true] {
            let s = sample_tiered(program, "wrap", None, tiering);
            assert_eq!(s.failed, 0, "{program} tiering {tiering}: {s:?}");
            assert!(s.rewritten > 100, "{program}: {s:?}");
            for (reason, _) in &s.reasons {
                assert!(reason.contains("jmp"), "{program}: refused for {reason}");
            }
        }
    }
}

/// Filtered to the tail-call program's types, and to each of its methods, the counters
/// give the exact number of calls, each with its exit: a tail-call exit counts as an
/// exit (the finally runs before the callee starts), every level of every chain once.
#[test]
fn wrap_counts_every_call_of_the_tail_call_program() {
    for tiering in [false, true] {
        let s = sample_tiered("TailCalls", "wrap", Some("TailCalls."), tiering);
        assert_eq!((s.failed, s.refused), (0, 0), "{s:?}");
        assert_eq!(s.enters, TAIL_CALLS_CALLS, "tiering {tiering}: {s:?}");
        assert_eq!(s.exits, TAIL_CALLS_CALLS, "tiering {tiering}: {s:?}");
    }
    for &(method, calls) in TAIL_CALLS_METHOD_CALLS {
        let s = sample("TailCalls", "wrap", Some(method));
        assert_eq!((s.failed, s.refused), (0, 0), "{method}: {s:?}");
        assert_eq!((s.enters, s.exits), (calls, calls), "{method}: {s:?}");
    }
}

/// A method JIT-compiled several times (one generic method instantiated over six
/// types) is instrumented once: every call counts once.
#[test]
fn a_method_compiled_again_is_not_instrumented_twice() {
    let s = sample("Generic", "wrap", Some("Generic.Gen::Show"));
    assert_eq!(s.failed, 0, "{s:?}");
    assert!(s.jitted >= 2, "compiled more than once: {s:?}");
    assert_eq!(s.rewritten, s.jitted, "{s:?}");
    assert_eq!((s.enters, s.exits), (11, 11), "{s:?}");
}

/// The smallest profiler of the README: `Answer::Get` returns 42 instead of 41.
#[test]
fn a_first_jit_rewrite_changes_behaviour_as_intended() {
    let tiny = build_example_cdylib("tiny_profiler", &features());
    let out = run_profiled("Answer", &tiny, TINY, &[]);
    assert_eq!(out.stdout, "answer 42\n", "{}", out.stderr);
    assert_eq!(out.status.code(), Some(42));
}

fn features() -> Vec<&'static str> {
    let mut f = vec!["clr"];
    if cfg!(feature = "pe") {
        f.push("pe");
    }
    f
}

fn test_profiler(case: &str) -> clr_support::Output {
    let profiler = build_example_cdylib("test_profiler", &features());
    run_profiled("Answer", &profiler, TEST, &[("ILREWRITE_TEST", case)])
}

/// The control that the runtime runs what it is handed: the same body with its exact
/// max stack runs (`answer 42`), and with the max stack understated by one is rejected.
#[test]
fn the_runtime_runs_what_it_is_handed() {
    let exact = test_profiler("exact");
    assert!(
        exact
            .stderr
            .contains("ilrewrite-test: exact: set a body with max stack 2: Ok(())"),
        "{}",
        exact.stderr
    );
    assert_eq!(exact.stdout, "answer 42\n");
    assert_eq!(exact.status.code(), Some(42));
    let under = test_profiler("understate");
    assert!(
        under.stderr.contains("max stack 1: Ok(())"),
        "{}",
        under.stderr
    );
    assert!(
        under.stderr.contains("InvalidProgramException"),
        "{}",
        under.stderr
    );
    assert_ne!(under.status.code(), Some(42));
    assert_ne!(under.status.code(), Some(41));
}

/// A panic in the user's edit does not take the process down, and the method keeps
/// its original IL.
#[test]
fn a_panicking_edit_keeps_the_original_il() {
    let out = test_profiler("panic");
    assert!(
        out.stderr
            .contains("ilrewrite-test: panic: failed: panic: an edit that panics"),
        "{}",
        out.stderr
    );
    assert_eq!(out.stdout, "answer 41\n");
    assert_eq!(out.status.code(), Some(41));
}

/// The call-sequence guard in the runtime: from instrumented code (a managed thread,
/// outside any callback) a method that is not safe asynchronously is refused with the
/// typed error, while a thread the profiler created is served.
#[test]
fn the_call_sequence_guard_refuses_asynchronous_calls() {
    let out = test_profiler("guard");
    assert!(
        out.stderr.contains("ilrewrite-test: guard: rewritten"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr
            .contains("ilrewrite-test: from instrumented code: refused GetILFunctionBody"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr
            .contains("ilrewrite-test: from a profiler thread: served"),
        "{}",
        out.stderr
    );
    assert_eq!(out.stdout, "answer 41\n");
}

/// The README shows the smallest profiler exactly as `examples/tiny_profiler.rs` has it
/// (the file the tests build and run).
#[test]
fn the_readme_shows_the_tested_tiny_profiler() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let example = std::fs::read_to_string(root.join("examples/tiny_profiler.rs")).unwrap();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let code = &example[example.find("use ilrewrite").expect("the example's code")..];
    assert!(
        readme.contains(&format!("```rust,ignore\n{code}```")),
        "README.md must show examples/tiny_profiler.rs from its first `use` on"
    );
}

//! The `clr` feature in a real CoreCLR 3.1.23: the test programs of `tests/programs/` run
//! under the sample profiler (`examples/profiler/`) and the test profilers
//! (`examples/tiny_profiler.rs`, `examples/test_profiler.rs`), and must behave exactly as
//! they do unprofiled, or exactly as the rewrite intends.
//!
//! Every test checks that the profiler attached, from the profiler's own output (a
//! wrong `CORECLR_*` value would run the program unprofiled, silently).
#![cfg(feature = "clr")]

mod clr_support;

use clr_support::{
    CALL_TREE_CALLS, CONCURRENCY_CALLS, CONCURRENCY_COMPILATIONS, INLINING_CALLS, PROGRAMS,
    RECURSION_CALLS, RECURSION_DEEP, Runtime, Summary, TAIL_CALLS_CALLS, TAIL_CALLS_METHOD_CALLS,
    UNLOAD_PLUGIN_CALLS, UNLOAD_PLUGIN_COMPILATIONS, build_example_cdylib, command_for, exit_code,
    expected_stdout, for_each_runtime, program, run_command, run_profiled, run_unprofiled,
    sample_profiler,
};

/// The sample profiler's CLSID (README and `examples/profiler/`).
const SAMPLE: &str = "{8C1E2D4F-3B6A-4E59-A7C2-1F0D9B3E6A51}";
const TINY: &str = "{0B5C3F2A-7D41-4E8B-9A6C-2E1F4D7B8C93}";
const TEST: &str = "{4A7E2C19-5B3D-4F60-8E21-9C6D0B1A3F57}";

/// Runs `program` under the sample profiler in `mode` (tiering off, so that JIT counts
/// are the same from run to run), checks that stdout and the exit code are those of
/// the unprofiled run, and returns the profiler's summary.
fn sample(rt: &Runtime, program: &str, mode: &str, filter: Option<&str>) -> Summary {
    sample_tiered(rt, program, mode, filter, false)
}

/// [`sample`] with tiered compilation on or off.
fn sample_tiered(
    rt: &Runtime,
    program: &str,
    mode: &str,
    filter: Option<&str>,
    tiering: bool,
) -> Summary {
    let tiering = if tiering { "1" } else { "0" };
    let mut env = vec![
        ("ILREWRITE_MODE", mode),
        ("COMPlus_TieredCompilation", tiering),
    ];
    if let Some(filter) = filter {
        env.push(("ILREWRITE_FILTER", filter));
    }
    let out = run_profiled(rt, program, &sample_profiler(), SAMPLE, &env);
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
    for_each_runtime(|rt| {
        for &(program, code) in PROGRAMS {
            let out = run_unprofiled(rt, program);
            assert_eq!(out.stdout, expected_stdout(program), "{program}");
            assert_eq!(out.status.code(), Some(code), "{program}");
        }
    })
}

/// `count` attaches and sees JIT compilations (framework methods included: ReadyToRun
/// images are disabled), and changes nothing.
#[test]
fn count_attaches_and_rewrites_nothing() {
    for_each_runtime(|rt| {
        let s = sample(rt, "Answer", "count", None);
        assert!(s.jitted > 100, "{s:?}");
        assert_eq!((s.rewritten, s.refused, s.failed), (0, 0, 0));
    })
}

/// `identity` decodes and re-encodes every JIT-compiled method, framework included, and
/// hands the bytes to the runtime: the programs behave as unprofiled, every method is
/// rewritten, none fails, and the bytes handed over are the original ones (the
/// rewriter refuses to hand over an unedited body whose bytes changed: `failed` would
/// count it).
#[test]
fn identity_on_every_jit_compiled_method() {
    for_each_runtime(|rt| {
        for &(program, _) in PROGRAMS {
            let s = sample(rt, program, "identity", None);
            assert!(s.jitted > 100, "{program}: {s:?}");
            assert_eq!(s.rewritten + s.already, s.jitted, "{program}: {s:?}");
            assert_eq!((s.refused, s.failed), (0, 0), "{program}: {s:?}");
        }
    })
}

/// `wrap` puts every JIT-compiled method in try/finally with counting entry and exit
/// code: the programs behave as unprofiled, nothing fails, and every counted entry has
/// at most one exit (threads of the runtime may still be inside methods at shutdown).
/// The only refusals are bodies the crate cannot wrap (`jmp`), and `LocalsLimit`'s method
/// whose 65,535 locals leave no room for the return-value local (a typed refusal).
#[test]
fn wrap_on_every_jit_compiled_method() {
    for_each_runtime(|rt| {
        for &(program, _) in PROGRAMS {
            let s = sample(rt, program, "wrap", None);
            assert_eq!(s.failed, 0, "{program}: {s:?}");
            assert!(
                s.rewritten + s.already + s.refused <= s.jitted,
                "{program}: {s:?}"
            );
            assert!(s.rewritten > 100, "{program}: {s:?}");
            assert!(s.enters >= s.exits && s.exits > 0, "{program}: {s:?}");
            for (reason, _) in &s.reasons {
                let limit = program == "LocalsLimit" && reason.contains(TOO_MANY_LOCALS);
                assert!(
                    reason.contains("jmp") || limit,
                    "{program}: refused for {reason}"
                );
            }
        }
    })
}

/// With the filter on the one type of a single-threaded program, the counters give the
/// exact number of calls of its call tree (recursion and exceptions included), each
/// call with its exit.
#[test]
fn wrap_counts_exactly_the_calls_of_a_known_call_tree() {
    for_each_runtime(|rt| {
        let s = sample(rt, "CallTree", "wrap", Some("CallTree.Work::"));
        assert_eq!((s.failed, s.refused), (0, 0), "{s:?}");
        assert_eq!(s.enters, CALL_TREE_CALLS, "{s:?}");
        assert_eq!(s.exits, CALL_TREE_CALLS, "{s:?}");
    })
}

/// Tail calls stay tail calls under `wrap`: `TailCalls.exe` and `EdgeCases.exe`, whose
/// `tail.` calls go 1,000,000 deep in every shape the runtime makes fast (and overflow
/// the stack when a profiler drops the prefixes; a 24-byte struct argument, which 3.1
/// never tail-calls fast, goes 2,000 deep), run as unprofiled with every JIT-compiled
/// method wrapped, tiering on and off; nothing fails, the only refusals are `jmp`.
#[test]
fn wrap_keeps_tail_calls_a_million_deep() {
    for_each_runtime(|rt| {
        for program in ["TailCalls", "EdgeCases"] {
            for tiering in [false, true] {
                let s = sample_tiered(rt, program, "wrap", None, tiering);
                assert_eq!(s.failed, 0, "{program} tiering {tiering}: {s:?}");
                assert!(s.rewritten > 100, "{program}: {s:?}");
                for (reason, _) in &s.reasons {
                    assert!(reason.contains("jmp"), "{program}: refused for {reason}");
                }
            }
        }
    })
}

/// Filtered to the tail-call program's types, and to each of its methods, the counters
/// give the exact number of calls, each with its exit: a tail-call exit counts as an
/// exit (the finally runs before the callee starts), every level of every chain once.
#[test]
fn wrap_counts_every_call_of_the_tail_call_program() {
    for_each_runtime(|rt| {
        for tiering in [false, true] {
            let s = sample_tiered(rt, "TailCalls", "wrap", Some("TailCalls."), tiering);
            assert_eq!((s.failed, s.refused), (0, 0), "{s:?}");
            assert_eq!(s.enters, TAIL_CALLS_CALLS, "tiering {tiering}: {s:?}");
            assert_eq!(s.exits, TAIL_CALLS_CALLS, "tiering {tiering}: {s:?}");
        }
        for &(method, calls) in TAIL_CALLS_METHOD_CALLS {
            let s = sample(rt, "TailCalls", "wrap", Some(method));
            assert_eq!((s.failed, s.refused), (0, 0), "{method}: {s:?}");
            assert_eq!((s.enters, s.exits), (calls, calls), "{method}: {s:?}");
        }
    })
}

/// Many instantiations of generic methods compiled on 32 threads at once (the first
/// calls of each method race behind a barrier): every compilation compiles instrumented
/// IL, so enters == exits == the exact number of calls, in each of 10 runs with tiering
/// off and 10 with tiering on; rewritten and already-rewritten add up to the
/// compilations seen. A thread that found a method being rewritten by another used to
/// return at once and compile the original IL (up to 51,840 of 164,129 calls lost).
#[test]
fn concurrent_compilations_of_one_method_are_all_instrumented() {
    for_each_runtime(|rt| {
        for tiering in [false, true] {
            for run in 0..10 {
                let s = sample_tiered(rt, "Concurrency", "wrap", Some("Concurrency."), tiering);
                let at = format!("tiering {tiering}, run {run}: {s:?}");
                assert_eq!((s.refused, s.failed), (0, 0), "{at}");
                assert_eq!(
                    (s.enters, s.exits),
                    (CONCURRENCY_CALLS, CONCURRENCY_CALLS),
                    "{at}"
                );
                assert_eq!(s.rewritten + s.already, s.jitted, "{at}");
                if !tiering {
                    assert_eq!(s.jitted, CONCURRENCY_COMPILATIONS, "{at}");
                }
            }
        }
    })
}

/// A method JIT-compiled several times (one generic method instantiated over six
/// types) is instrumented once: every call counts once.
#[test]
fn a_method_compiled_again_is_not_instrumented_twice() {
    for_each_runtime(|rt| {
        let s = sample(rt, "Generic", "wrap", Some("Generic.Gen::Show"));
        assert_eq!(s.failed, 0, "{s:?}");
        assert!(s.jitted >= 2, "compiled more than once: {s:?}");
        assert_eq!(s.rewritten, 1, "one compilation rewrites: {s:?}");
        assert_eq!(
            s.already,
            s.jitted - 1,
            "the others compile its body: {s:?}"
        );
        assert_eq!((s.enters, s.exits), (11, 11), "{s:?}");
    })
}

/// The smallest profiler of the README: `Answer::Get` returns 42 instead of 41.
#[test]
fn a_first_jit_rewrite_changes_behaviour_as_intended() {
    for_each_runtime(|rt| {
        let tiny = build_example_cdylib("tiny_profiler", &features());
        let out = run_profiled(rt, "Answer", &tiny, TINY, &[]);
        assert_eq!(out.stdout, "answer 42\n", "{}", out.stderr);
        assert_eq!(out.status.code(), Some(42));
    })
}

fn features() -> Vec<&'static str> {
    let mut f = vec!["clr"];
    if cfg!(feature = "pe") {
        f.push("pe");
    }
    f
}

fn test_profiler(rt: &Runtime, case: &str) -> clr_support::Output {
    let profiler = build_example_cdylib("test_profiler", &features());
    run_profiled(rt, "Answer", &profiler, TEST, &[("ILREWRITE_TEST", case)])
}

/// The control that the runtime runs what it is handed: the same body with its exact
/// max stack runs (`answer 42`), and with the max stack understated by one is rejected.
#[test]
fn the_runtime_runs_what_it_is_handed() {
    for_each_runtime(|rt| {
        let exact = test_profiler(rt, "exact");
        assert!(
            exact
                .stderr
                .contains("ilrewrite-test: exact: set a body with max stack 2: Ok(())"),
            "{}",
            exact.stderr
        );
        assert_eq!(exact.stdout, "answer 42\n");
        assert_eq!(exact.status.code(), Some(42));
        let under = test_profiler(rt, "understate");
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
    })
}

/// ReJIT through the crate's bindings in the real runtime: a pre-ReJIT of `Get`
/// requested from a thread the profiler created (before `Get`'s first call), its IL
/// built by the pipeline in `GetReJITParameters` and handed to the `FunctionControl`.
/// The first call already runs the new version (`answer 43`). With tiering on, `Get`
/// is never JIT-compiled from its original IL. With tiering off, CoreCLR 3.1 compiles
/// it (and never runs it), then re-JIT-compiles it, as the runtime's documentation of
/// pre-ReJIT says; .NET 8 never compiles the original IL (measured).
#[test]
fn a_pre_rejit_runs_the_pipelines_il_from_the_first_call() {
    for_each_runtime(|rt| {
        let profiler = build_example_cdylib("test_profiler", &features());
        for tiering in ["1", "0"] {
            let out = run_profiled(
                rt,
                "Answer",
                &profiler,
                TEST,
                &[
                    ("ILREWRITE_TEST", "rejit"),
                    ("COMPlus_TieredCompilation", tiering),
                ],
            );
            let lines: Vec<&str> = out
                .stderr
                .lines()
                .filter_map(|l| l.strip_prefix("ilrewrite-test: rejit: "))
                .collect();
            let mut expected = vec!["requested 0x06000002: Ok(Ok(Ok(())))"];
            if tiering == "0" && rt.major() < 5 {
                expected.push("Get compiled at its first JIT");
            }
            expected.push("parameters of 0x06000002: rewritten (6 bytes)");
            assert_eq!(
                lines[..expected.len()],
                expected[..],
                "tiering {tiering}: {}",
                out.stderr
            );
            assert!(
                lines.len() == expected.len() + 1
                    && lines[expected.len()].starts_with("compiled as ReJITID ")
                    && lines[expected.len()].ends_with("(S_OK)"),
                "tiering {tiering}: {}",
                out.stderr
            );
            assert_eq!(out.stdout, "answer 43\n", "tiering {tiering}");
            assert_eq!(out.status.code(), Some(43));
        }
    })
}

/// A panic in the user's edit does not take the process down, and the method keeps
/// its original IL.
#[test]
fn a_panicking_edit_keeps_the_original_il() {
    for_each_runtime(|rt| {
        let out = test_profiler(rt, "panic");
        assert!(
            out.stderr
                .contains("ilrewrite-test: panic: failed: edit: panic: an edit that panics"),
            "{}",
            out.stderr
        );
        assert_eq!(out.stdout, "answer 41\n");
        assert_eq!(out.status.code(), Some(41));
    })
}

/// The call-sequence guard in the runtime: from instrumented code (a managed thread,
/// outside any callback) a method that is not safe asynchronously is refused with the
/// typed error, while a thread the profiler created is served.
#[test]
fn the_call_sequence_guard_refuses_asynchronous_calls() {
    for_each_runtime(|rt| {
        let out = test_profiler(rt, "guard");
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
    })
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

// ---------------------------------------------------------------------------------------
// The runtime's limits: 65,535 locals, deeply nested generic types, long module paths
// ---------------------------------------------------------------------------------------

/// The refusal of a method whose 65,535 locals leave no room for the return-value local
/// (`Error::TooManyLocals`), as the summary's reason line has it.
const TOO_MANY_LOCALS: &str = "refused: TooManyLocals";

/// A fresh scratch directory under the target directory.
fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs the program at `exe` under the sample profiler in `mode` (tiering off), checks
/// that its stdout and exit code are `stdout` and `code`, and returns the summary.
fn sample_at(
    rt: &Runtime,
    exe: &std::path::Path,
    mode: &str,
    filter: Option<&str>,
    stdout: &str,
    code: i32,
) -> Summary {
    let mut cmd = clr_support::command_for(rt, exe);
    clr_support::profile(&mut cmd, &sample_profiler(), SAMPLE);
    cmd.env("ILREWRITE_MODE", mode)
        .env("COMPlus_TieredCompilation", "0");
    if let Some(filter) = filter {
        cmd.env("ILREWRITE_FILTER", filter);
    }
    let out = clr_support::run_command(cmd);
    let summary = Summary::parse(&out.stderr)
        .unwrap_or_else(|e| panic!("{} {mode}: the profiler did not report: {e}", exe.display()));
    assert_eq!(summary.mode, mode);
    assert_eq!(
        out.stdout,
        stdout,
        "{} {mode}: stdout differs",
        exe.display()
    );
    assert_eq!(
        out.status.code(),
        Some(code),
        "{} {mode}: exit code",
        exe.display()
    );
    eprintln!("{} {mode}: {summary:?}", exe.display());
    summary
}

/// Methods with 65,535 locals, the runtime's limit, and one fewer: under `identity`
/// every one is rewritten; under `wrap`, the void method (no local added) and the one
/// with 65,534 locals (its return-value local is the 65,535th) are rewritten and count
/// their calls, and the one with 65,535 locals and a value to return is refused with
/// the typed reason (no room for the return-value local), keeping its IL. Nothing
/// fails; the output and exit code are the unprofiled ones.
#[test]
fn methods_at_the_locals_limit_are_rewritten_or_refused_never_failed() {
    for_each_runtime(|rt| {
        let calls = clr_support::LOCALS_LIMIT_CALLS;
        let s = sample(rt, "LocalsLimit", "identity", Some("LocalsLimit."));
        assert_eq!((s.jitted, s.rewritten), (calls, calls), "{s:?}");
        assert_eq!((s.refused, s.failed), (0, 0), "{s:?}");
        let s = sample(rt, "LocalsLimit", "wrap", Some("LocalsLimit."));
        assert_eq!((s.jitted, s.rewritten), (calls, calls - 1), "{s:?}");
        assert_eq!((s.refused, s.failed), (1, 0), "{s:?}");
        assert_eq!(s.reasons.len(), 1, "{s:?}");
        assert!(s.reasons[0].0.contains(TOO_MANY_LOCALS), "{s:?}");
        assert_eq!((s.enters, s.exits), (calls - 1, calls - 1), "{s:?}");
    })
}

/// A generic class nested 65 and 1,000 deep (a local, a parameter, a return type, a
/// MethodSpec): every method is rewritten under `identity` and `wrap` (the walks the
/// rewrite needs have no nesting limit), the counters give the exact calls, the
/// program's output (the depths of the runtime's types) is unchanged.
#[test]
fn deeply_nested_generic_types_are_rewritten() {
    for_each_runtime(|rt| {
        let calls = clr_support::deep_types_calls(clr_support::DEEP_TYPES_DEPTHS.len() as u64);
        for mode in ["identity", "wrap"] {
            let s = sample(rt, "DeepTypes", mode, Some("DeepTypes."));
            assert_eq!((s.refused, s.failed), (0, 0), "{mode}: {s:?}");
            assert_eq!(s.rewritten, s.jitted, "{mode}: {s:?}");
            let counted = if mode == "wrap" { calls } else { 0 };
            assert_eq!((s.enters, s.exits), (counted, counted), "{mode}: {s:?}");
        }
    })
}

/// `DeepTypes.exe` at 5,000 levels, assembled here from `gen_limits.sh deep 5000` (the
/// committed one stops at 1,000: Mono's ilasm makes a 50 MB binary at 5,000); skipped,
/// with a note, without Mono's ilasm. CoreCLR runs it on its 8 MiB main thread; under
/// `identity` and `wrap`, on every JIT-compiled method, nothing fails or is refused
/// but for `jmp`, and filtered to its types the counters give the exact calls.
#[test]
fn generic_types_nested_5000_deep_are_rewritten() {
    for_each_runtime(|rt| {
        // Installed on first use when missing; a failure to have it fails the test.
        ilrewrite_corpus::mono_tools().unwrap_or_else(|e| panic!("{e}"));
        let dir = scratch("deep-types-5000");
        let programs = clr_support::programs_dir();
        let il = std::process::Command::new("sh")
            .arg(programs.join("gen_limits.sh"))
            .args(["deep", "5000"])
            .output()
            .unwrap();
        assert!(
            il.status.success(),
            "{}",
            String::from_utf8_lossy(&il.stderr)
        );
        std::fs::write(dir.join("DeepTypes.il"), il.stdout).unwrap();
        let built = std::process::Command::new("ilasm")
            .arg("/exe")
            .arg("/output:DeepTypes.exe")
            .arg("DeepTypes.il")
            .current_dir(&dir)
            .output()
            .unwrap();
        assert!(
            built.status.success(),
            "{}",
            String::from_utf8_lossy(&built.stdout)
        );
        std::fs::copy(
            programs.join("bin/DeepTypes.runtimeconfig.json"),
            dir.join("DeepTypes.runtimeconfig.json"),
        )
        .unwrap();
        let exe = dir.join("DeepTypes.exe");
        let stdout = "depth 5000 local 5000 param 5000 return 5000 spec 5000\n";
        let out = clr_support::run_command(clr_support::command_for(rt, &exe));
        assert_eq!((out.stdout.as_str(), out.status.code()), (stdout, Some(24)));
        for mode in ["identity", "wrap"] {
            let s = sample_at(rt, &exe, mode, None, stdout, 24);
            assert_eq!(s.failed, 0, "{mode}: {s:?}");
            assert!(s.rewritten > 100, "{mode}: {s:?}");
            for (reason, _) in &s.reasons {
                assert!(reason.contains("jmp"), "{mode}: refused for {reason}");
            }
        }
        let calls = clr_support::deep_types_calls(1);
        let s = sample_at(rt, &exe, "wrap", Some("DeepTypes."), stdout, 24);
        assert_eq!((s.refused, s.failed), (0, 0), "{s:?}");
        assert_eq!(s.rewritten, s.jitted, "{s:?}");
        assert_eq!((s.enters, s.exits), (calls, calls), "{s:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    })
}

/// A program run from a directory whose absolute path is longer than 260 UTF-16 units
/// and not ASCII: `ProfilerInfo::module_info` gives its module's whole path (the runtime
/// first answers ERROR_INSUFFICIENT_BUFFER with the length it needs), and the sample
/// profiler's `wrap` rewrites every method there as anywhere else.
#[test]
fn a_module_path_longer_than_260_characters() {
    for_each_runtime(|rt| {
        let root = scratch("module-path");
        let mut dir = root.clone();
        for i in 0..9 {
            dir.push(format!("répertoire-très-long-ünïcödé-目录-{i}"));
        }
        std::fs::create_dir_all(&dir).unwrap();
        let bin = clr_support::programs_dir().join("bin");
        for file in ["Answer.exe", "Answer.runtimeconfig.json"] {
            std::fs::copy(bin.join(file), dir.join(file)).unwrap();
        }
        let exe = dir.join("Answer.exe");
        let path = exe.to_str().expect("a UTF-8 path");
        assert!(
            path.encode_utf16().count() > 260 && !path.is_ascii(),
            "{path}"
        );

        let profiler = build_example_cdylib("test_profiler", &features());
        let mut cmd = clr_support::command_for(rt, &exe);
        clr_support::profile(&mut cmd, &profiler, TEST);
        cmd.env("ILREWRITE_TEST", "module");
        let out = clr_support::run_command(cmd);
        let reported = out
            .stderr
            .lines()
            .find_map(|l| l.strip_prefix("ilrewrite-test: module: "))
            .unwrap_or_else(|| panic!("no module line:\n{}", out.stderr));
        let canonical = std::fs::canonicalize(&exe).unwrap();
        assert!(
            reported == path || std::path::Path::new(reported) == canonical,
            "module_info gave {reported:?} for {path:?}"
        );
        assert_eq!(
            (out.stdout.as_str(), out.status.code()),
            ("answer 41\n", Some(41))
        );

        let s = sample_at(rt, &exe, "wrap", None, "answer 41\n", 41);
        assert_eq!(s.failed, 0, "{s:?}");
        assert!(s.rewritten > 100, "{s:?}");
        std::fs::remove_dir_all(&root).unwrap();
    })
}

// ---- module unloading, inlining ----------------------------------------------------------

/// `Unload.exe` loads a plugin into a collectible AssemblyLoadContext, JIT-compiles and
/// calls its methods and unloads it, 1,000 times; each load is a new module, often at
/// the address (the `ModuleID`) of one unloaded before. Under `identity` and `wrap`
/// (filtered to the plugin's types) the output is the unprofiled one, every compilation
/// of every cycle rewrites its module's methods afresh (a stale state of an earlier
/// module would say "already rewritten" and leave the method uninstrumented), `wrap`
/// counts exactly the plugin's calls,
/// and the growth of resident memory per cycle stays within 10 KB of the unprofiled
/// run's: the module state is freed at unload. Tiering off, so that the figure is not
/// dominated by the one-time growth of tier-1 compilations at 1,000 cycles.
#[test]
fn unloading_a_plugin_a_thousand_times_keeps_counts_exact_and_memory_flat() {
    for_each_runtime(|rt| {
        let mut unprofiled = command_for(rt, &program("Unload"));
        unprofiled.env("COMPlus_TieredCompilation", "0");
        let out = run_command(unprofiled);
        assert_eq!(
            out.status.code(),
            Some(exit_code("Unload")),
            "{}",
            out.stderr
        );
        let base = clr_support::rss_growth_per_cycle(&out.stderr);
        for mode in ["identity", "wrap"] {
            let env = [
                ("ILREWRITE_MODE", mode),
                ("ILREWRITE_FILTER", "UnloadPlugin."),
                ("COMPlus_TieredCompilation", "0"),
            ];
            let out = run_profiled(rt, "Unload", &sample_profiler(), SAMPLE, &env);
            let s = Summary::parse(&out.stderr).unwrap_or_else(|e| panic!("{mode}: {e}"));
            assert_eq!(out.stdout, expected_stdout("Unload"), "{mode}");
            assert_eq!(out.status.code(), Some(exit_code("Unload")), "{mode}");
            assert_eq!((s.refused, s.failed), (0, 0), "{mode}: {s:?}");
            assert_eq!(s.jitted, UNLOAD_PLUGIN_COMPILATIONS, "{mode}: {s:?}");
            // Per cycle: 6 methods rewritten, `Weigh<T>`'s second instantiation compiles
            // the rewritten body of the same load.
            assert_eq!(s.already, UNLOAD_PLUGIN_COMPILATIONS / 7, "{mode}: {s:?}");
            assert_eq!(s.rewritten + s.already, s.jitted, "{mode}: {s:?}");
            if mode == "wrap" {
                let calls = UNLOAD_PLUGIN_CALLS;
                assert_eq!((s.enters, s.exits), (calls, calls), "{s:?}");
                // `wrap`'s data item on every module, dropped with each plugin module the
                // program unloads (before shutdown drops the others).
                let made = clr_support::named_count(&out.stderr, "wrap items", "made");
                let loads = clr_support::named_count(&out.stderr, "manager", "module-loads");
                let dropped = clr_support::named_count(&out.stderr, "wrap items", "dropped");
                assert_eq!(made, loads, "{}", out.stderr);
                assert_eq!(dropped, clr_support::UNLOAD_CYCLES, "{}", out.stderr);
            }
            let growth = clr_support::rss_growth_per_cycle(&out.stderr);
            eprintln!("Unload {mode}: {growth} bytes per cycle, unprofiled {base}");
            assert!(
                growth - base <= 10_000,
                "{mode}: {growth} bytes per cycle against {base} unprofiled"
            );
        }
    })
}

/// `Inlining.exe` calls 32 small methods the JIT inlines (with tiering on and off).
/// Under `wrap` filtered to its types, with inlining left on for the process, the
/// rewriter keeps them from being inlined before they are instrumented: exact counts.
/// With `ILREWRITE_INLINING=allow` the JIT inlines them before their first compilation,
/// and their calls run uninstrumented: fewer enters than calls (the loss the default
/// prevents, shown to happen).
#[test]
fn inlined_methods_keep_their_instrumentation() {
    for_each_runtime(|rt| {
        for tiering in ["0", "1"] {
            let env = [
                ("ILREWRITE_MODE", "wrap"),
                ("ILREWRITE_FILTER", "Inlining."),
                ("COMPlus_TieredCompilation", tiering),
            ];
            let out = run_profiled(rt, "Inlining", &sample_profiler(), SAMPLE, &env);
            let s = Summary::parse(&out.stderr).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(out.stdout, expected_stdout("Inlining"));
            assert_eq!((s.refused, s.failed), (0, 0), "{s:?}");
            assert_eq!(
                (s.enters, s.exits),
                (INLINING_CALLS, INLINING_CALLS),
                "tiering {tiering}: {s:?}"
            );
            let mut allow = env.to_vec();
            allow.push(("ILREWRITE_INLINING", "allow"));
            let out = run_profiled(rt, "Inlining", &sample_profiler(), SAMPLE, &allow);
            let s = Summary::parse(&out.stderr).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(out.stdout, expected_stdout("Inlining"));
            assert!(s.enters < INLINING_CALLS, "tiering {tiering}: {s:?}");
            assert_eq!(s.enters, s.exits, "{s:?}");
        }
    })
}

/// Log lines go to the file `ILREWRITE_LOG` names, not to stderr (and never to stdout):
/// the refusal of `EdgeCases`' method with `jmp` under `wrap`, with its name, token and
/// typed reason, while the program's own output is unchanged.
#[test]
fn log_lines_go_to_the_file_named_by_ilrewrite_log() {
    for_each_runtime(|rt| {
        let log = std::env::temp_dir().join(format!("ilrewrite-log-{}.txt", std::process::id()));
        let _ = std::fs::remove_file(&log);
        let path = log.to_str().expect("a UTF-8 temporary directory");
        let env = [
            ("ILREWRITE_MODE", "wrap"),
            ("ILREWRITE_FILTER", "EdgeCases."),
            ("ILREWRITE_LOG", path),
        ];
        let out = run_profiled(rt, "EdgeCases", &sample_profiler(), SAMPLE, &env);
        assert_eq!(out.stdout, expected_stdout("EdgeCases"));
        let s = Summary::parse(&out.stderr).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((s.refused, s.failed), (1, 0), "{s:?}");
        assert!(
            !out.stderr.contains("original IL is kept"),
            "{}",
            out.stderr
        );
        let written = std::fs::read_to_string(&log).expect("the log file");
        let _ = std::fs::remove_file(&log);
        let lines: Vec<&str> = written.lines().collect();
        // The runtime the profiler is in, then the one refusal.
        assert_eq!(lines.len(), 2, "{written}");
        assert!(
            lines[0].starts_with("ilrewrite: runtime CoreCLR "),
            "{written}"
        );
        assert!(
            lines[1].starts_with("ilrewrite: int32 EdgeCases.Program::JmpSource(int32, int32)")
                && lines[1].contains("refused: unsupported:")
                && lines[1].contains("jmp")
                && lines[1].contains("its original IL is kept"),
            "{written}"
        );
    })
}

/// `Recursion.exe` (with `args`) under `wrap` on `Recursion.Deep::Sum` with
/// `ILREWRITE_PROBES=probes`.
fn recursion(rt: &Runtime, probes: &str, tiering: &str, args: &[&str]) -> clr_support::Output {
    let mut cmd = command_for(rt, &program("Recursion"));
    cmd.args(args);
    clr_support::profile(&mut cmd, &sample_profiler(), SAMPLE);
    cmd.envs([
        ("ILREWRITE_MODE", "wrap"),
        ("ILREWRITE_FILTER", "Recursion.Deep::Sum"),
        ("ILREWRITE_PROBES", probes),
        ("COMPlus_TieredCompilation", tiering),
    ]);
    run_command(cmd)
}

/// The stack one level of `Sum` takes under `wrap` with `probes`, from the program's
/// own measure, after checking its output and the counts (`enters` and `exits` are 0
/// without probes).
fn frame_bytes(rt: &Runtime, probes: &str, tiering: &str) -> u64 {
    let out = recursion(rt, probes, tiering, &[]);
    assert_eq!(
        out.code(),
        exit_code("Recursion"),
        "{probes}: {}",
        out.stderr
    );
    assert_eq!(out.stdout, expected_stdout("Recursion"), "{probes}");
    let s = Summary::parse(&out.stderr).unwrap_or_else(|e| panic!("{probes}: {e}"));
    let calls = if probes == "none" { 0 } else { RECURSION_CALLS };
    assert_eq!((s.rewritten, s.enters, s.exits), (1, calls, calls), "{s:?}");
    let bytes = out
        .stderr
        .lines()
        .find_map(|l| {
            l.strip_prefix("recursion: ")?
                .strip_suffix(" bytes per frame")
        })
        .unwrap_or_else(|| panic!("no frame size: {}", out.stderr));
    bytes.parse().unwrap_or_else(|e| panic!("{bytes}: {e}"))
}

/// The sample's managed probes (`Interlocked.Add` on the counter's address, which the
/// JIT makes a locked add) cost a wrapped recursion no stack beyond the try/finally's
/// own, at tier 0 and optimized, where native probes (a `calli`, with its transition
/// frame) cost several times a level's stack. At the limit: a recursion
/// `RECURSION_DEEP` levels deep on a 1 MiB thread fits with the managed probes and
/// overflows the stack with the native ones.
#[test]
fn the_sample_probes_cost_no_stack_beyond_the_wrap() {
    for_each_runtime(|rt| {
        for tiering in ["0", "1"] {
            let none = frame_bytes(rt, "none", tiering);
            let managed = frame_bytes(rt, "managed", tiering);
            let native = frame_bytes(rt, "native", tiering);
            eprintln!(
                "tiering {tiering}: bytes per level: none {none} managed {managed} native {native}"
            );
            assert_eq!(managed, none, "tiering {tiering}");
            assert!(
                native >= 2 * managed,
                "tiering {tiering}: {native} {managed}"
            );

            let depth = RECURSION_DEEP.to_string();
            let fits = recursion(rt, "managed", tiering, &[&depth]);
            assert_eq!(fits.code(), exit_code("Recursion"), "{}", fits.stderr);
            let sum = RECURSION_DEEP * (RECURSION_DEEP + 1) / 2;
            assert_eq!(fits.stdout, format!("sum {RECURSION_DEEP} = {sum}\n"));
            let s = Summary::parse(&fits.stderr).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(
                (s.enters, s.exits),
                (RECURSION_DEEP + 1, RECURSION_DEEP + 1)
            );

            let overflows = recursion(rt, "native", tiering, &[&depth]);
            assert!(!overflows.status.success(), "{overflows:?}");
            assert!(
                overflows.stderr.contains("Stack overflow"),
                "{}",
                overflows.stderr
            );
        }
    })
}

// ---- Frames open at shutdown, told from lost exits -----------------------------------------

/// The calls of `OpenFrames.*` in `OpenFrames.exe` (derived in its source's header).
const OPEN_FRAMES_CALLS: u64 = 190;
/// The frames of `OpenFrames.*` its two background threads leave open when it exits.
const OPEN_FRAMES_LEFT_OPEN: u64 = 8;

/// `OpenFrames.exe` under `wrap` with `probes`, tiering off, with `filter` (none:
/// every JIT-compiled method); its summary, after checking its output and exit code.
fn open_frames(rt: &Runtime, probes: &str, filter: Option<&str>) -> Summary {
    let mut env = vec![
        ("ILREWRITE_MODE", "wrap"),
        ("ILREWRITE_PROBES", probes),
        ("COMPlus_TieredCompilation", "0"),
    ];
    if let Some(filter) = filter {
        env.push(("ILREWRITE_FILTER", filter));
    }
    let out = run_profiled(rt, "OpenFrames", &sample_profiler(), SAMPLE, &env);
    assert_eq!(
        out.stdout,
        expected_stdout("OpenFrames"),
        "{probes} {filter:?}"
    );
    assert_eq!(
        out.status.code(),
        Some(exit_code("OpenFrames")),
        "{probes} {filter:?}: {}",
        out.stderr
    );
    Summary::parse(&out.stderr).unwrap_or_else(|e| panic!("{probes} {filter:?}: {e}"))
}

/// `wrap`'s summary tells the frames still open at shutdown from exits that were lost.
/// `OpenFrames.exe` exits with two background threads blocked inside 8 frames of
/// `OpenFrames.*`: with native probes (each thread's depth kept by the probes) the
/// summary says `open 8 lost 0`, and 190 enters for 182 exits. Unfiltered, every
/// JIT-compiled method wrapped (the runtime's own threads too: on .NET 8 the thread
/// pool and timers are managed and wait inside their frames), no exit is lost and every
/// missing exit is an open frame. The managed probes (one process-wide counter) cannot
/// tell threads apart: their summary has no `open`/`lost` pair, and enters - exits is
/// the same 8.
#[test]
fn wrap_tells_frames_open_at_shutdown_from_lost_exits() {
    for_each_runtime(|rt| {
        let s = open_frames(rt, "native", Some("OpenFrames."));
        assert_eq!(
            (s.enters, s.exits, s.open, s.lost),
            (
                OPEN_FRAMES_CALLS,
                OPEN_FRAMES_CALLS - OPEN_FRAMES_LEFT_OPEN,
                Some(OPEN_FRAMES_LEFT_OPEN),
                Some(0)
            ),
            "{s:?}"
        );

        let all = open_frames(rt, "native", None);
        let open = all.open.expect("native probes report open frames");
        assert_eq!(all.lost, Some(0), "{all:?}");
        assert!(open >= OPEN_FRAMES_LEFT_OPEN, "{all:?}");
        assert_eq!(all.enters - all.exits, open, "{all:?}");

        let managed = open_frames(rt, "managed", Some("OpenFrames."));
        assert_eq!(
            (managed.enters, managed.exits, managed.open, managed.lost),
            (
                OPEN_FRAMES_CALLS,
                OPEN_FRAMES_CALLS - OPEN_FRAMES_LEFT_OPEN,
                None,
                None
            ),
            "{managed:?}"
        );
    })
}

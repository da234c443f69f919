//! The enter/leave/tailcall hooks in a real CoreCLR 3.1.23: the sample profiler
//! (`examples/profiler/`, `ILREWRITE_MODE=elt|elt-values|elt-slow`) subscribes to them
//! through `ilrewrite::clr::Manager` and counts, per kind, the hook calls of the functions
//! its filter names.
//!
//! What is shown: on `EltCalls.exe`, whose call tree is known exactly (recursion, real
//! tail calls 1,000,000 deep, exceptions unwinding one to five frames through a
//! try/finally, filters that throw, recurse and catch), every count equals the known number and enters == leaves + tailcalls +
//! unwinds, on one thread and on 8 at once, with tiering off and with tiering on (call
//! counting from the first call, so methods are compiled again while the threads run),
//! on our fast trampolines and on the runtime's slow path alike; the shutdown report is
//! exactly one line; the program's output and exit code are those of an unprofiled run.
//!
//! And what the JIT leaves of the calls: on `Features.exe`'s `Ackermann`, optimized code
//! turns tail-position self-calls into loops (20 enters for 44 calls) on CoreCLR 3.1.23
//! and .NET 8.0.4 alike, on both paths; `HookCoverage::EveryCall` (unoptimized code)
//! gives all 44, and keeps the known call tree's counts (a `tail.` self-call stays a
//! loop).
#![cfg(all(feature = "clr", target_arch = "x86_64", target_os = "linux"))]

mod clr_support;

use clr_support::{
    Output, RUNTIME_LINE, Runtime, command_for, exit_code, for_each_runtime, profile, program,
    run_command, sample_profiler,
};

/// The sample profiler's CLSID.
const SAMPLE: &str = "{8C1E2D4F-3B6A-4E59-A7C2-1F0D9B3E6A51}";

/// The functions counted: every method of `EltCalls.Work`, none of `EltCalls.Program`.
const FILTER: &str = "EltCalls.Work::";

/// What the hooks of `EltCalls.Work` see in one `Run(depth)` (the table in
/// `tests/programs/EltCalls.il`): enters, leaves, tailcalls, unwinds.
fn one_run(depth: u64) -> [u64; 4] {
    [509 + depth, 482, depth, 27]
}

/// The hook report's counts: enters, leaves, tailcalls, unwinds.
fn counts(mode: &str, out: &Output) -> [u64; 4] {
    let lines: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.starts_with("ilrewrite:") && !l.starts_with(RUNTIME_LINE))
        .collect();
    assert_eq!(
        lines.len(),
        1,
        "the hook modes report exactly one line:\n{}",
        out.stderr
    );
    let words: Vec<&str> = lines[0].split_whitespace().collect();
    let shape = [
        "ilrewrite:",
        "mode",
        mode,
        "enters",
        "_",
        "leaves",
        "_",
        "tailcalls",
        "_",
        "unwinds",
        "_",
    ];
    assert_eq!(words.len(), shape.len(), "{}", lines[0]);
    for (word, want) in words.iter().zip(shape) {
        assert!(want == "_" || *word == want, "{}", lines[0]);
    }
    let number = |i: usize| words[i].parse::<u64>().expect("a count");
    [number(4), number(6), number(8), number(10)]
}

/// Runs `EltCalls.exe THREADS REPEATS DEPTH` under the sample profiler in `mode`.
fn run_elt_calls(rt: &Runtime, mode: &str, args: [u64; 3], env: &[(&str, &str)]) -> Output {
    let mut cmd = command_for(rt, &program("EltCalls"));
    profile(&mut cmd, &sample_profiler(), SAMPLE);
    cmd.args(args.map(|a| a.to_string()))
        .env("ILREWRITE_MODE", mode)
        .env("ILREWRITE_FILTER", FILTER)
        .envs(env.iter().copied());
    run_command(cmd)
}

/// The program's own output for these arguments: one `run` line per thread, `runs N`.
fn expected_stdout([threads, repeats, depth]: [u64; 3]) -> String {
    let result = 144 + depth * (depth + 1) - 5;
    let mut text = String::new();
    for _ in 0..threads.max(1) {
        text.push_str(&format!("run {result}\n"));
    }
    text.push_str(&format!("runs {}\n", repeats * threads.max(1)));
    text
}

/// Runs and checks everything: exit code, output, the one report line, exact counts.
fn check_exact(rt: &Runtime, mode: &str, args: [u64; 3], env: &[(&str, &str)]) {
    let out = run_elt_calls(rt, mode, args, env);
    assert_eq!(
        out.code(),
        exit_code("EltCalls"),
        "{mode} {args:?} {env:?}\n{}",
        out.stderr
    );
    assert_eq!(out.stdout, expected_stdout(args), "{mode} {args:?} {env:?}");
    let [threads, repeats, depth] = args;
    let runs = threads.max(1) * repeats;
    let want = one_run(depth).map(|n| n * runs);
    let got = counts(mode, &out);
    assert_eq!(
        got, want,
        "{mode} {args:?} {env:?}: [enters, leaves, tailcalls, unwinds]"
    );
    assert_eq!(got[0], got[1] + got[2] + got[3]);
}

/// Variables for a run.
type Env = &'static [(&'static str, &'static str)];

const TIERING_OFF: Env = &[("COMPlus_TieredCompilation", "0")];

/// Tiering on, call counting from the first call: hot methods (`Fib`, `Ping`, `Pong`)
/// are compiled again at tier 1 while the program runs; each compilation asks the
/// mapper again, and the hooks must keep counting across the switch.
const TIERING_EAGER: Env = &[
    ("COMPlus_TieredCompilation", "1"),
    ("COMPlus_TC_CallCountingDelayMs", "0"),
];

#[test]
fn fast_hooks_count_a_known_call_tree_exactly_with_tail_calls_a_million_deep() {
    for_each_runtime(|rt| {
        for env in [TIERING_OFF, TIERING_EAGER] {
            check_exact(rt, "elt", [0, 1, 1_000_000], env);
        }
    })
}

#[test]
fn fast_hooks_count_exactly_on_8_threads_while_methods_tier_up() {
    for_each_runtime(|rt| {
        for env in [TIERING_OFF, TIERING_EAGER] {
            check_exact(rt, "elt", [8, 40, 20_000], env);
        }
    })
}

#[test]
fn reading_values_changes_no_count() {
    for_each_runtime(|rt| {
        check_exact(rt, "elt-values", [8, 10, 20_000], TIERING_EAGER);
    })
}

#[test]
fn the_runtime_s_slow_path_counts_the_same() {
    for_each_runtime(|rt| {
        check_exact(rt, "elt-slow", [8, 10, 20_000], TIERING_EAGER);
    })
}

// ---- Tail-position self-recursion: what the JIT leaves of the calls ---------------------

/// The function counted: `Features.Program::Ackermann`, whose `Ackermann(2, 3)` (called
/// once, from `Recursion`) makes 44 calls: 20 that are not in tail position (the first,
/// and each inner `Ackermann(m, n - 1)`) and 24 in tail position (`return
/// Ackermann(m - 1, ..)`, no `tail.` prefix).
const ACKERMANN: &str = "Features.Program::Ackermann";

/// `Features.exe` under the sample profiler in `mode` counting [`ACKERMANN`]'s hooks,
/// after checking its exit code and output.
fn ackermann(rt: &Runtime, mode: &str, env: &[(&str, &str)]) -> [u64; 4] {
    let mut cmd = command_for(rt, &program("Features"));
    profile(&mut cmd, &sample_profiler(), SAMPLE);
    cmd.env("ILREWRITE_MODE", mode)
        .env("ILREWRITE_FILTER", ACKERMANN)
        .envs(env.iter().copied());
    let out = run_command(cmd);
    let runtime = rt.version();
    assert_eq!(
        out.code(),
        exit_code("Features"),
        "{runtime} {mode} {env:?}\n{}",
        out.stderr
    );
    assert_eq!(
        out.stdout,
        clr_support::expected_stdout("Features"),
        "{runtime} {mode} {env:?}"
    );
    counts(mode, &out)
}

/// Optimized code (tiering off) turns the 24 tail-position self-calls into jumps back
/// past the prolog: the hooks see 20 enters and 20 leaves, on our trampolines and on the
/// runtime's own slow path alike, on CoreCLR 3.1.23 and .NET 8.0.4 alike (measured:
/// both JITs do it; 3.1 does not differ). With the JIT's own switch for that
/// transformation off (`TailCallLoopOpt=0`, read by both runtimes' release builds) the
/// 24 become real tail calls, each an enter of the callee and a tailcall of the caller:
/// 44 enters, 20 leaves, 24 tailcalls. The hooks lose nothing: the JIT removed the calls.
#[test]
fn optimized_code_turns_tail_position_self_calls_into_loops_on_both_paths() {
    for_each_runtime(|rt| {
        let runtime = rt.version();
        for mode in ["elt", "elt-slow"] {
            assert_eq!(
                ackermann(rt, mode, TIERING_OFF),
                [20, 20, 0, 0],
                "{runtime} {mode}: [enters, leaves, tailcalls, unwinds]"
            );
            let no_loops = [
                ("COMPlus_TieredCompilation", "0"),
                ("COMPlus_TailCallLoopOpt", "0"),
            ];
            assert_eq!(
                ackermann(rt, mode, &no_loops),
                [44, 20, 24, 0],
                "{runtime} {mode} TailCallLoopOpt=0: [enters, leaves, tailcalls, unwinds]"
            );
        }
    })
}

/// `HookCoverage::EveryCall` (`ILREWRITE_ELT_CALLS=every`: the process runs without
/// optimization, where the JIT makes no implicit tail call) gives every one of the 44
/// calls its enter and leave, on both paths, with tiering off and with tiering asked
/// for (the flag turns tiering off: nothing is compiled again).
#[test]
fn every_call_coverage_sees_every_call_of_a_tail_position_self_recursion() {
    for_each_runtime(|rt| {
        let runtime = rt.version();
        for mode in ["elt", "elt-slow"] {
            for tiering in [TIERING_OFF, TIERING_EAGER] {
                let env: Vec<(&str, &str)> = tiering
                    .iter()
                    .copied()
                    .chain([("ILREWRITE_ELT_CALLS", "every")])
                    .collect();
                assert_eq!(
                    ackermann(rt, mode, &env),
                    [44, 44, 0, 0],
                    "{runtime} {mode} {env:?}: [enters, leaves, tailcalls, unwinds]"
                );
            }
        }
    })
}

/// Every-call coverage keeps the known call tree's exact counts, and shows its limit: a
/// self-call the IL marks `tail.` (`CountDown`) is still a loop (one enter, one leave)
/// in unoptimized code, since the prefix asks for the frame to go.
#[test]
fn every_call_coverage_keeps_explicit_tail_self_calls_as_loops() {
    for_each_runtime(|rt| {
        let every: Env = &[
            ("COMPlus_TieredCompilation", "0"),
            ("ILREWRITE_ELT_CALLS", "every"),
        ];
        check_exact(rt, "elt", [0, 1, 1000], every);
        check_exact(rt, "elt", [4, 5, 2000], every);
    })
}

/// Runs `program` (no arguments) under the sample profiler in mode `elt` with
/// `ILREWRITE_ELT_TEST=test`, hooking the functions `filter` names (every function
/// without one).
#[cfg(feature = "elt-test-modes")]
fn run_tested(
    rt: &Runtime,
    program_name: &str,
    test: &str,
    filter: Option<&str>,
    env: &[(&str, &str)],
) -> Output {
    let mut cmd = command_for(rt, &program(program_name));
    profile(&mut cmd, &sample_profiler(), SAMPLE);
    cmd.env("ILREWRITE_MODE", "elt")
        .env("ILREWRITE_ELT_TEST", test)
        .envs(env.iter().copied());
    if let Some(filter) = filter {
        cmd.env("ILREWRITE_FILTER", filter);
    }
    run_command(cmd)
}

/// A subscriber that overwrites every register a System V function may change
/// (RAX RCX RDX RSI RDI R8-R11, XMM0-15) at every enter, leave and tailcall: the
/// trampolines must give the JIT back every register it keeps live (the arguments at
/// enter, the return value at leave), and the registers they leave free must be free.
/// EltValues.exe passes and returns values in all of them; every function of the
/// process is hooked in the second run (framework code, optimized code at tier 1).
#[test]
#[cfg(feature = "elt-test-modes")]
fn a_subscriber_that_clobbers_every_free_register_changes_no_result() {
    for_each_runtime(|rt| {
        let runs: [(&str, Option<&str>, Env); 4] = [
            ("EltValues", Some("EltValues.Calls::"), TIERING_OFF),
            ("EltValues", None, TIERING_EAGER),
            ("Features", None, TIERING_OFF),
            ("Threads", None, TIERING_EAGER),
        ];
        for (name, filter, env) in runs {
            let out = run_tested(rt, name, "clobber", filter, env);
            assert_eq!(
                out.code(),
                exit_code(name),
                "{name} {filter:?}\n{}",
                out.stderr
            );
            assert_eq!(
                out.stdout,
                clr_support::expected_stdout(name),
                "{name} {filter:?}"
            );
            let [enters, leaves, tailcalls, unwinds] = counts("elt", &out);
            assert!(
                enters > 0 && enters >= leaves + tailcalls + unwinds,
                "{name}: {}",
                out.stderr
            );
        }
    })
}

/// The negative control: the same run through trampolines that forget XMM3 at enter
/// and RDX at leave changes exactly the results that depend on them: the fourth float
/// argument of `Floats`, `Mixed` and `MakeFFFF`, and the second half of `MakeLL`'s
/// RAX:RDX result. The test above can fail.
#[test]
#[cfg(feature = "elt-test-modes")]
fn trampolines_that_forget_a_live_register_change_the_results() {
    for_each_runtime(|rt| {
        let out = run_tested(
            rt,
            "EltValues",
            "negative-control",
            Some("EltValues.Calls::"),
            TIERING_OFF,
        );
        assert_eq!(out.code(), exit_code("EltValues"), "{}", out.stderr);
        let expected = clr_support::expected_stdout("EltValues");
        let changed: Vec<&str> = out
            .stdout
            .lines()
            .zip(expected.lines())
            .filter(|(got, want)| got != want)
            .map(|(_, want)| want.split_whitespace().next().unwrap_or(""))
            .collect();
        assert_eq!(changed, ["Floats", "Mixed", "LL", "FFFF"], "{}", out.stdout);
    })
}

/// The values the hooks read at enter and leave equal what `EltValues.exe` passed and
/// returned, call by call: its `trace` run prints them (`enter Calls::NAME ARGS`,
/// `leave Calls::NAME RESULT`), and `elt-values` writes what it read
/// (`ILREWRITE_ELT_TRACE`). That covers int, long, float, double, more than six integer
/// and eight float arguments (some on the caller's stack), every two-register struct
/// return class (RAX:RDX, RAX:XMM0, XMM0:RAX, XMM0:XMM1, four floats), a struct in one
/// register, a 24-byte struct passed on the stack and returned through a buffer, `this`
/// and a string. The constructor, which the program does not trace, is left out.
#[test]
fn values_read_at_enter_and_leave_are_what_the_program_passed_and_returned() {
    for_each_runtime(|rt| {
        for env in [TIERING_OFF, TIERING_EAGER] {
            let trace = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
                .join(format!("elt-values-trace-{}.txt", std::process::id()));
            let _ = std::fs::remove_file(&trace);
            let mut cmd = command_for(rt, &program("EltValues"));
            profile(&mut cmd, &sample_profiler(), SAMPLE);
            cmd.arg("trace")
                .env("ILREWRITE_MODE", "elt-values")
                .env("ILREWRITE_FILTER", "EltValues.Calls::")
                .env("ILREWRITE_ELT_TRACE", &trace)
                .envs(env.iter().copied());
            let out = run_command(cmd);
            assert_eq!(out.code(), exit_code("EltValues"), "{}", out.stderr);
            let [enters, leaves, _, _] = counts("elt-values", &out);
            let passed: Vec<&str> = out
                .stdout
                .lines()
                .filter(|l| l.starts_with("enter ") || l.starts_with("leave "))
                .collect();
            assert_eq!(passed.len(), 46, "{}", out.stdout);
            let read = std::fs::read_to_string(&trace).expect("the trace was written");
            let read: Vec<&str> = read
                .lines()
                .filter(|l| !l.contains("Calls::.ctor"))
                .collect();
            assert_eq!(
                read, passed,
                "{env:?}: the hooks read (left), the program passed (right)"
            );
            assert_eq!(
                (enters, leaves),
                (24, 24),
                "23 traced calls and the constructor"
            );
        }
    })
}

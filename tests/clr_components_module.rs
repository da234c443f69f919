//! The second part of the C ABI (issue 33), end to end with `tests/components/tracer.c`
//! under `examples/engine.rs`, on both runtimes:
//!
//! * metadata defined by value while a module loads (AssemblyRefs, TypeRefs, MemberRefs
//!   with signatures as text, a TypeSpec, a MethodSpec, user strings with non-ASCII
//!   text), kept in the module's data item and used by later edits;
//! * a wrap of the whole body (entry, exit in a `finally` on every way out, code after
//!   a normal return) with a state local, a return-value local and a local added by
//!   the library;
//! * the single-ret's epilogue and return-value local, and a branch inside inserted
//!   code;
//! * data items on modules and methods, destroyed by the library's destructor when the
//!   module unloads;
//! * a module handle used after its call returned gets `ILR_E_INVALID_HANDLE`.
#![cfg(feature = "clr")]

mod clr_support;

use clr_support::components::{
    assert_attached, count, library, run_traced as run, tracer_config, without_tracer,
};
use clr_support::{
    command_for, exit_code, expected_stdout, for_each_runtime, program, run_command,
};

/// `tracer_c`'s configuration.
fn tracer(assembly: &str, methods: &[&str], single_ret: &[&str]) -> String {
    tracer_config(
        "tracer_c",
        &library("tracer"),
        assembly,
        methods,
        single_ret,
    )
}

/// Proves the wrap, the state local, the added local and the return-value local, and
/// the metadata they name (defined at module load from text, found in the module's
/// item): every call of `TwoTools.Timed`'s four methods (194: Leaf 10, Fib 177,
/// Thrower 4, ManyLocals 3) prints `tracer enter`, then, from the `finally`, the exit
/// line (non-ASCII), 7001 (the state local set at entry, read in the finally) and
/// 40002 (the added `int64` local); the 190 that return normally (`Thrower` throws
/// every time) then print `tracer ret` and their result, `int32` or `int64`. `Leaf`'s
/// ten calls come first, in order. `TwoTools.TimedLib` is selected too but its module
/// is another assembly's, where `tracer_c` keeps no item: left alone. The program's
/// own output and exit code are unchanged; the stale module handle is refused.
#[test]
fn a_wrap_runs_entry_exit_and_return_code_with_its_locals() {
    for_each_runtime(|rt| {
        let config = tracer(
            "TwoTools",
            &["TwoTools.Timed::*", "TwoTools.TimedLib::*"],
            &[],
        );
        let out = run(rt, "TwoTools", &[], "wrap", &config);
        let err = &out.stderr;
        assert_attached(&out);
        assert_eq!(
            without_tracer(&out.stdout),
            expected_stdout("TwoTools"),
            "{err}"
        );
        assert_eq!(out.code(), exit_code("TwoTools"), "{err}");
        assert!(!err.contains("failed"), "{err}");
        let stdout = &out.stdout;
        assert_eq!(count(stdout, "tracer enter"), 194, "{stdout}\n{err}");
        assert_eq!(count(stdout, "tracer exit \u{2192}\u{2713}"), 194, "{err}");
        assert_eq!(count(stdout, "7001"), 194, "{err}");
        assert_eq!(count(stdout, "40002"), 194, "{err}");
        assert_eq!(count(stdout, "tracer ret"), 190, "{err}");
        let mut leaf = Vec::new();
        for i in 0..10 {
            leaf.extend([
                "tracer enter".to_owned(),
                "tracer exit \u{2192}\u{2713}".to_owned(),
                "7001".to_owned(),
                "40002".to_owned(),
                "tracer ret".to_owned(),
                (i + 1).to_string(),
            ]);
        }
        leaf.push("leaf 55".to_owned());
        let first: Vec<String> = stdout.lines().take(leaf.len()).map(str::to_owned).collect();
        assert_eq!(first, leaf, "{err}");
        let stale: Vec<&str> = err
            .lines()
            .filter(|l| l.contains("tracer_c: stale module handle"))
            .collect();
        assert_eq!(
            stale,
            ["ilrewrite: tracer_c: stale module handle -1"],
            "{err}"
        );
    });
}

/// Proves the single-ret through the ABI: `Returns.Values::Branches` (two `ret`s)
/// edited with `ILR_WANT_EDIT_SINGLE_RET` prints, before its one epilogue, `tracer
/// ret` and the value from the return-value local, `tracer small` only for 40 (a
/// branch to a later instruction of the inserted code), and 900 (a MethodSpec call,
/// `Array.Empty<int32>()`, and a constructor and method of the TypeSpec `List<int32>`),
/// for each of its six calls; nothing else changes.
#[test]
fn the_single_ret_gives_the_epilogue_and_the_return_value_local() {
    for_each_runtime(|rt| {
        let method = "Returns.Values::Branches";
        let out = run(
            rt,
            "Returns",
            &[],
            "single-ret",
            &tracer("Returns", &[method], &[method]),
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
                want.push_str(&format!("tracer ret\n{value}\n"));
                if value.parse::<i32>().unwrap() < 45 {
                    want.push_str("tracer small\n");
                }
                want.push_str("900\n");
            }
            want.push_str(line);
            want.push('\n');
        }
        assert_eq!(out.stdout, want, "{err}");
    });
}

/// Proves that data items are destroyed by the library's destructor when what they
/// belong to goes: `Unload.exe 40` loads and unloads `UnloadPlugin.dll` 40 times, each
/// load a new module with its own module item and method items (its methods wrapped).
/// The program's results are the unprofiled ones; before the program ends, the module
/// items of the unloaded modules are destroyed (at least 39 of 40: the last unload may
/// not be complete by then), and with each one the items of its six edited methods.
#[test]
fn items_are_destroyed_when_their_module_unloads() {
    for_each_runtime(|rt| {
        let config = tracer("UnloadPlugin", &["UnloadPlugin.Plugin::*"], &[]);
        let out = run(rt, "Unload", &["40"], "unload", &config);
        let err = &out.stderr;
        assert_attached(&out);
        let mut plain = command_for(rt, &program("Unload"));
        plain.arg("40");
        let plain = run_command(plain);
        assert_eq!(without_tracer(&out.stdout), plain.stdout, "{err}");
        assert_eq!(out.code(), exit_code("Unload"), "{err}");
        assert!(count(&out.stdout, "tracer enter") >= 40 * 9, "{err}");
        // Before the program's last line (its memory figure, written before it
        // returns from `Main`): destroyed at unload, not at the profiler's shutdown.
        let before_exit: Vec<&str> = err
            .lines()
            .take_while(|l| !l.starts_with("unload: rss-growth"))
            .collect();
        let modules = before_exit
            .iter()
            .filter(|l| l.starts_with("ilrewrite: tracer_c: module item destroyed"))
            .count();
        assert!(
            (39..=40).contains(&modules),
            "{modules} module items destroyed:\n{err}"
        );
        let methods = before_exit
            .iter()
            .filter(|l| **l == "ilrewrite: tracer_c: method item destroyed")
            .count();
        // Plugin::.ctor, Square, Scale, Guarded, Chain and Weigh (its instantiations
        // share the method's item) edited in each load.
        assert!(
            methods >= 39 * 6,
            "{methods} method items destroyed:\n{err}"
        );
    });
}

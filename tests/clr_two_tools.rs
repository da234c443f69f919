//! `examples/two_tools.rs` in a real runtime: a timer with native probes (the state local
//! carrying `begin()`'s timestamp to the `finally`, the module id telling methods of two
//! modules with the same token apart, names from `ProfilerInfo::method_name`) and an
//! exception counter (`ExceptionThrown`, names from `ProfilerInfo::class_name`), both
//! hosted by the `Manager` from a TOML file, on `tests/programs/TwoTools.exe`, whose
//! calls and exceptions are known exactly (derived in its source).
#![cfg(feature = "clr")]

mod clr_support;

use clr_support::{
    Runtime, build_example_cdylib, config_file, exit_code, expected_stdout, for_each_runtime,
    program, run_profiled, run_unprofiled,
};

const TWO_TOOLS: &str = "{6F1D2C3B-4A5E-4B7C-9D8E-0F1A2B3C4D5E}";

/// The calls of each timed method (`TwoTools.cs`'s header).
const CALLS: &[(&str, u64)] = &[
    ("TwoTools.Timed/Inner::Nested", 2),
    ("TwoTools.Timed::Fib", 177),
    ("TwoTools.Timed::Leaf", 10),
    ("TwoTools.Timed::ManyLocals", 3),
    ("TwoTools.Timed::Thrower", 4),
    ("TwoTools.TimedLib::Twice", 6),
];

/// The exceptions thrown, by type (`TwoTools.cs`'s header).
const EXCEPTIONS: &[(&str, u64)] = &[
    ("System.ArgumentException", 2),
    ("System.FormatException", 1),
    ("System.InvalidOperationException", 4),
    ("TwoTools.Program/Oops", 3),
];

const CONFIG: &str = r#"
[[method]]
name = "timer"
options = { filter = "TwoTools.Timed" }

[[method]]
name = "exceptions"
"#;

fn features() -> Vec<&'static str> {
    let mut f = vec!["clr"];
    if cfg!(feature = "pe") {
        f.push("pe");
    }
    f
}

/// The lines `two_tools: PREFIX NAME REST` of `stderr`: (name, rest).
fn lines<'a>(stderr: &'a str, prefix: &str) -> Vec<(&'a str, &'a str)> {
    let start = format!("two_tools: {prefix} ");
    stderr
        .lines()
        .filter_map(|l| l.strip_prefix(start.as_str()))
        .map(|l| l.split_once(' ').unwrap_or((l, "")))
        .collect()
}

/// Runs `TwoTools.exe` under `two_tools` with configuration `config`, written to the
/// file `name` (one per test: the tests run in parallel).
fn run(rt: &Runtime, name: &str, config: &str, env: &[(&str, &str)]) -> clr_support::Output {
    let so = build_example_cdylib("two_tools", &features());
    let config = config_file(name, config);
    let config = config.to_str().expect("a UTF-8 path");
    let mut vars = vec![("TWO_TOOLS_CONFIG", config)];
    vars.extend_from_slice(env);
    run_profiled(rt, "TwoTools", &so, TWO_TOOLS, &vars)
}

/// Exact calls per method (recursion, a body that throws, a nested type, a method with
/// many locals returning a value, and a method of another module with the same token as
/// one of this one), positive and plausible time, exact exceptions by type, the
/// program's own output and exit code unchanged; with tiering on and off.
#[test]
fn two_tools_count_calls_time_and_exceptions_exactly() {
    for_each_runtime(|rt| {
        let plain = run_unprofiled(rt, "TwoTools");
        assert_eq!(plain.stdout, expected_stdout("TwoTools"));
        assert_eq!(plain.code(), exit_code("TwoTools"));
        for tiering in ["1", "0"] {
            let out = run(
                rt,
                "two_tools",
                CONFIG,
                &[("COMPlus_TieredCompilation", tiering)],
            );
            let err = &out.stderr;
            assert!(
                err.contains("two_tools: timer started, filter \"TwoTools.Timed\""),
                "{err}"
            );
            assert!(err.contains("two_tools: exceptions started"), "{err}");
            assert_eq!(out.stdout, expected_stdout("TwoTools"), "{err}");
            assert_eq!(out.code(), exit_code("TwoTools"), "{err}");

            let timed = lines(err, "timer");
            let calls: Vec<(&str, u64)> = timed
                .iter()
                .filter(|(name, _)| !name.starts_with("started"))
                .map(|(name, rest)| {
                    let fields: Vec<&str> = rest.split(' ').collect();
                    let ["calls", calls, "ns", nanos] = fields[..] else {
                        panic!("{name} {rest}");
                    };
                    let (calls, nanos): (u64, u64) =
                        (calls.parse().unwrap(), nanos.parse().unwrap());
                    // Every call takes some time, and none of these takes a second.
                    assert!(nanos >= calls, "{name}: {calls} calls in {nanos} ns");
                    assert!(nanos < calls * 1_000_000_000, "{name}: {nanos} ns");
                    (*name, calls)
                })
                .collect();
            assert_eq!(calls, CALLS, "{err}");

            let exceptions: Vec<(&str, u64)> = lines(err, "exceptions")
                .into_iter()
                .filter(|(name, _)| *name != "started")
                .map(|(name, count)| (name, count.parse().unwrap()))
                .collect();
            assert_eq!(exceptions, EXCEPTIONS, "{err}");
        }
    })
}

/// `TimedLib::Twice` (TwoToolsLib.dll) and `Timed::Leaf` (TwoTools.exe) have the same
/// MethodDef token: without the module id the timer would count them as one method.
#[test]
fn the_two_modules_share_a_token() {
    let read = |path: &std::path::Path| std::fs::read(path).unwrap();
    let exe = read(&program("TwoTools"));
    let lib = read(&program("TwoTools").with_file_name("TwoToolsLib.dll"));
    let token = |data: &[u8], name: &str| {
        let asm = ilrewrite::pe::Assembly::parse(data).unwrap();
        asm.methods()
            .flatten()
            .find(|m| m.name == name)
            .map(|m| m.token)
            .unwrap()
    };
    assert_eq!(token(&exe, "Leaf"), 0x0600_0001);
    assert_eq!(token(&lib, "Twice"), 0x0600_0001);
}

/// A configuration error is one line, and then nothing runs: the program as unprofiled,
/// no tool's line.
#[test]
fn a_wrong_option_runs_nothing() {
    for_each_runtime(|rt| {
        let out = run(
            rt,
            "two_tools_wrong",
            "[[method]]\nname = \"timer\"\noptions = { filter = 3 }\n",
            &[],
        );
        assert_eq!(out.stdout, expected_stdout("TwoTools"));
        assert_eq!(out.code(), exit_code("TwoTools"));
        assert!(
            out.stderr.contains("two_tools: ") && out.stderr.contains("nothing runs"),
            "{}",
            out.stderr
        );
        assert!(lines(&out.stderr, "timer").is_empty(), "{}", out.stderr);
    })
}

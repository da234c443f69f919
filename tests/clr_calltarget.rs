//! `examples/calltarget.rs` (the library's `CallTargetMethod` in a profiler, configured
//! by TOML) on `tests/programs/CallTargetApp.exe` with the `Recorder` integration of
//! `CallTargetIntegrations.dll`: every call of a target gets one `ct begin` line with
//! exactly the arguments the program's own `call` line shows, right before it, and one
//! `ct end` line with the value of its `return` line, right after it; the program's own
//! output and exit code unchanged.
#![cfg(feature = "clr")]

mod clr_support;

use clr_support::{
    Runtime, build_example_cdylib, config_file, exit_code, expected_stdout, for_each_runtime,
    run_profiled,
};

const CALLTARGET: &str = "{0C7A7E15-3D2B-4C5A-9E61-2F0B8D4A1C93}";

/// The Recorder on `Statics`' 7 static methods (0 to 12 parameters, void and values,
/// a struct and an enum among them) and 4 instance methods of the class `Account`.
const RECORDER: &str = r#"
[[method]]
name = "calltarget"
options = { integrations = [
    "CallTargetApp.Statics::* => CallTargetIntegrations.Recorder, CallTargetIntegrations",
    "CallTargetApp.Account::Deposit => CallTargetIntegrations.Recorder, CallTargetIntegrations",
    "CallTargetApp.Account::Balance => CallTargetIntegrations.Recorder, CallTargetIntegrations",
    "CallTargetApp.Account::Describe => CallTargetIntegrations.Recorder, CallTargetIntegrations",
    "CallTargetApp.Account::Sum12 => CallTargetIntegrations.Recorder, CallTargetIntegrations, Version=1.0.0.0",
] }
"#;

/// The targets of [`RECORDER`], each called once by the program.
const TARGETS: &[&str] = &[
    "CallTargetApp.Statics::Nothing",
    "CallTargetApp.Statics::Answer",
    "CallTargetApp.Statics::Twice",
    "CallTargetApp.Statics::Join",
    "CallTargetApp.Statics::Move",
    "CallTargetApp.Statics::Say",
    "CallTargetApp.Statics::Twelve",
    "CallTargetApp.Account::Deposit",
    "CallTargetApp.Account::Balance",
    "CallTargetApp.Account::Describe",
    "CallTargetApp.Account::Sum12",
];

fn features() -> Vec<&'static str> {
    let mut f = vec!["clr"];
    if cfg!(feature = "pe") {
        f.push("pe");
    }
    f
}

fn run(rt: &Runtime, name: &str, config: &str, env: &[(&str, &str)]) -> clr_support::Output {
    let so = build_example_cdylib("calltarget", &features());
    let config = config_file(name, config);
    let config = config.to_str().expect("a UTF-8 path");
    let mut vars = vec![("CALLTARGET_CONFIG", config)];
    vars.extend_from_slice(env);
    run_profiled(rt, "CallTargetApp", &so, CALLTARGET, &vars)
}

/// `line` without its call id: `ct begin T #5 a b` -> (`T a b`, 5).
fn without_id(line: &str) -> (String, u64) {
    let mut words: Vec<&str> = line.split(' ').collect();
    let at = words
        .iter()
        .position(|w| w.starts_with('#'))
        .unwrap_or_else(|| panic!("no id in {line:?}"));
    let id = words.remove(at)[1..].parse().expect("a numeric id");
    (words.join(" "), id)
}

/// Checks the `ct` lines of `stdout` against the program's own trace: returns the
/// targets seen, in call order.
fn check_trace(stdout: &str) -> Vec<String> {
    let lines: Vec<&str> = stdout.lines().collect();
    let mut seen = Vec::new();
    let mut open = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if let Some(rest) = line.strip_prefix("ct begin ") {
            let (rest, id) = without_id(rest);
            assert_eq!(
                lines.get(i + 1).copied(),
                Some(format!("call {rest}").as_str()),
                "begin hook's arguments at line {i}"
            );
            let target = rest.split(' ').next().unwrap_or("").to_owned();
            seen.push(target.clone());
            open.push((target, id));
        } else if let Some(rest) = line.strip_prefix("ct end ") {
            let (rest, id) = without_id(rest);
            let (value, exception) = rest.rsplit_once(' ').expect("an exception field");
            assert_eq!(exception, "-", "{line}");
            assert_eq!(
                lines[i - 1],
                format!("return {value}"),
                "end hook's return value at line {i}"
            );
            let (target, begun) = open.pop().expect("an end after its begin");
            assert_eq!(id, begun, "{line}");
            assert!(value.starts_with(&format!("{target} ")), "{line}");
        } else if let Some(rest) = line.strip_prefix("call ") {
            let target = rest.split(' ').next().unwrap_or("");
            if TARGETS.contains(&target) {
                assert!(
                    i > 0 && lines[i - 1].starts_with(&format!("ct begin {target} ")),
                    "a target called without its begin hook at line {i}: {line}"
                );
            }
        }
    }
    assert!(open.is_empty(), "begins without ends: {open:?}");
    seen
}

/// The Recorder on static and instance methods of classes: its lines match the
/// program's own trace exactly, on both runtimes, tiering on and off; everything else
/// the program prints, and its exit code, unchanged.
#[test]
fn recorder_sees_what_the_program_passes_and_returns() {
    for_each_runtime(|rt| {
        for tiering in ["1", "0"] {
            let out = run(
                rt,
                "calltarget_recorder",
                RECORDER,
                &[("COMPlus_TieredCompilation", tiering)],
            );
            let err = &out.stderr;
            assert_eq!(out.code(), exit_code("CallTargetApp"), "{err}");
            assert!(!err.contains("keeps its IL"), "{err}");
            let seen = check_trace(&out.stdout);
            assert_eq!(seen, TARGETS, "{err}");
            let others: String = out
                .stdout
                .lines()
                .filter(|l| !l.starts_with("ct "))
                .flat_map(|l| [l, "\n"])
                .collect();
            assert_eq!(others, expected_stdout("CallTargetApp"), "{err}");
        }
    })
}

/// A malformed integration is a configuration error at its place: nothing runs, the
/// program's output as unprofiled.
#[test]
fn a_malformed_integration_runs_nothing() {
    for_each_runtime(|rt| {
        let out = run(
            rt,
            "calltarget_malformed",
            "[[method]]\nname = \"calltarget\"\noptions = { integrations = [\"CallTargetApp.Statics::* CallTargetIntegrations.Recorder\"] }\n",
            &[],
        );
        assert_eq!(
            out.stdout,
            expected_stdout("CallTargetApp"),
            "{}",
            out.stderr
        );
        assert_eq!(out.code(), exit_code("CallTargetApp"));
        assert!(
            out.stderr.contains("entry 0") && out.stderr.contains("no `=>`"),
            "{}",
            out.stderr
        );
    })
}

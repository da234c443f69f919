//! The sample profiler (`examples/profiler/`) fails closed: a configuration it cannot
//! read gives an error line at start-up and then nothing is rewritten, in a real
//! CoreCLR 3.1.23. A silent fallback would instrument more than asked (an unreadable
//! filter read as "no filter" wraps every method) or differently (an unknown mode read
//! as the default).
#![cfg(feature = "clr")]

mod clr_support;

use clr_support::{
    Output, Runtime, Summary, command_for, config_file, exit_code, expected_stdout,
    for_each_runtime, profile, program, run_command, sample_profiler,
};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

/// The sample profiler's CLSID (README and `examples/profiler/`).
const SAMPLE: &str = "{8C1E2D4F-3B6A-4E59-A7C2-1F0D9B3E6A51}";

/// Runs `CallTree` (every one of its methods JIT-compiled) under the sample profiler
/// with `env`, and checks that it behaved as unprofiled.
fn run(rt: &Runtime, env: &[(&str, &OsStr)]) -> (Output, Summary) {
    let mut cmd = command_for(rt, &program("CallTree"));
    profile(&mut cmd, &sample_profiler(), SAMPLE);
    cmd.env("COMPlus_TieredCompilation", "0");
    for (name, value) in env {
        cmd.env(name, value);
    }
    let out = run_command(cmd);
    assert_eq!(out.stdout, expected_stdout("CallTree"), "{}", out.stderr);
    assert_eq!(out.status.code(), Some(exit_code("CallTree")));
    let summary = Summary::parse(&out.stderr)
        .unwrap_or_else(|e| panic!("the profiler did not report: {e}\n{}", out.stderr));
    (out, summary)
}

/// Checks that the profiler attached, said what it could not read, and did nothing.
fn refused(rt: &Runtime, env: &[(&str, &OsStr)], error: &str) {
    let (out, s) = run(rt, env);
    let line = format!("ilrewrite: error: {error}; nothing is rewritten");
    assert!(out.stderr.contains(&line), "{line}\n{}", out.stderr);
    assert_eq!(s.mode, "off", "{s:?}");
    assert_eq!(
        (
            s.jitted,
            s.rewritten,
            s.already,
            s.refused,
            s.failed,
            s.enters,
            s.exits
        ),
        (0, 0, 0, 0, 0, 0, 0),
        "{s:?}"
    );
}

#[test]
fn an_unknown_mode_rewrites_nothing() {
    for_each_runtime(|rt| {
        refused(
            rt,
            &[("ILREWRITE_MODE", OsStr::new("bogus"))],
            "unknown ILREWRITE_MODE \"bogus\" (expected count, identity, decode, wrap, elt, elt-values, elt-slow or elt-empty)",
        );
        // A mode named with different case is not a mode either.
        refused(
            rt,
            &[("ILREWRITE_MODE", OsStr::new("Wrap"))],
            "unknown ILREWRITE_MODE \"Wrap\" (expected count, identity, decode, wrap, elt, elt-values, elt-slow or elt-empty)",
        );
    })
}

/// An unknown hook test mode is refused: the hooks would run otherwise than asked.
#[test]
fn an_unknown_hook_test_mode_rewrites_nothing() {
    for_each_runtime(|rt| {
        refused(
            rt,
            &[
                ("ILREWRITE_MODE", OsStr::new("elt")),
                ("ILREWRITE_ELT_TEST", OsStr::new("clobbers")),
            ],
            "unknown ILREWRITE_ELT_TEST \"clobbers\" (expected clobber or negative-control)",
        );
    })
}

/// An inlining choice other than `keep` or `allow` is refused the same way (read as the
/// default, it would instrument differently than asked).
#[test]
fn an_unknown_inlining_choice_rewrites_nothing() {
    for_each_runtime(|rt| {
        refused(
            rt,
            &[
                ("ILREWRITE_MODE", OsStr::new("wrap")),
                ("ILREWRITE_INLINING", OsStr::new("never")),
            ],
            "unknown ILREWRITE_INLINING \"never\" (expected keep or allow)",
        );
    })
}

/// An unknown kind of probe is refused the same way (read as the default, it would
/// count differently than asked).
#[test]
fn an_unknown_probe_kind_rewrites_nothing() {
    for_each_runtime(|rt| {
        refused(
            rt,
            &[
                ("ILREWRITE_MODE", OsStr::new("wrap")),
                ("ILREWRITE_PROBES", OsStr::new("fast")),
            ],
            "unknown ILREWRITE_PROBES \"fast\" (expected managed, native or none)",
        );
    })
}

/// An unknown call coverage for the hook modes is refused the same way (read as the
/// default, the hooks would see fewer calls than asked).
#[test]
fn an_unknown_elt_call_coverage_rewrites_nothing() {
    for_each_runtime(|rt| {
        refused(
            rt,
            &[
                ("ILREWRITE_MODE", OsStr::new("elt")),
                ("ILREWRITE_ELT_CALLS", OsStr::new("all")),
            ],
            "unknown ILREWRITE_ELT_CALLS \"all\" (expected optimized or every)",
        );
    })
}

#[test]
fn a_variable_that_is_not_utf8_rewrites_nothing() {
    for_each_runtime(|rt| {
        let raw = OsStr::from_bytes(b"CallTree.\xFFWork");
        refused(
            rt,
            &[
                ("ILREWRITE_MODE", OsStr::new("wrap")),
                ("ILREWRITE_FILTER", raw),
            ],
            "ILREWRITE_FILTER is not valid UTF-8 (\"CallTree.\\xFFWork\")",
        );
        refused(
            rt,
            &[("ILREWRITE_MODE", OsStr::from_bytes(b"wr\xC3ap"))],
            "ILREWRITE_MODE is not valid UTF-8 (\"wr\\xC3ap\")",
        );
    })
}

/// Runs `CallTree` with configuration file `text` (written as `name`.toml), expecting
/// the error `message` at `line:column` of the file, and nothing rewritten.
fn refused_file(rt: &Runtime, name: &str, text: &str, at: &str, message: &str) {
    let path = config_file(&format!("sample-{name}"), text);
    let error = format!("{}{at}: {message}", path.display());
    refused(rt, &[("ILREWRITE_CONFIG", path.as_os_str())], &error);
}

/// A configuration file with a mistake is an error naming the file, line and column;
/// the program runs unprofiled: a file that is not TOML, a name the profiler does not
/// offer, an option of the wrong type, an option the method does not take.
#[test]
fn a_configuration_file_with_a_mistake_rewrites_nothing() {
    for_each_runtime(|rt| {
        refused_file(
            rt,
            "malformed",
            "[[method]]\nname = \"wrap\noptions = {}\n",
            ":2:13",
            "invalid basic string, expected `\"`",
        );
        refused_file(
            rt,
            "unknown-name",
            "[[method]]\nname = \"wrap\"\n\n[[method]]\nname = \"wrapp\"\n",
            ":5:8",
            "unknown instrumentation method \"wrapp\" (this profiler has count, identity, decode, \
         wrap, scale, offset, faulty, listener, listener2, helper, facts, calls, elt, elt-values, elt-slow, elt-empty, nop, nop2, nop3, nop4)",
        );
        refused_file(
            rt,
            "option-type",
            "[[method]]\nname = \"scale\"\n[method.options]\nfilter = \"Work::\"\nfactor = \"2\"\n",
            ":5:10",
            "option `factor` of \"scale\" must be an integer, not a string",
        );
        refused_file(
            rt,
            "option-name",
            "[[method]]\nname = \"wrap\"\noptions = { filter = \"CallTree.\", probe = \"native\" }\n",
            ":3:35",
            "instrumentation method \"wrap\" has no option `probe` (it takes filter, probes)",
        );
        refused(
            rt,
            &[(
                "ILREWRITE_CONFIG",
                OsStr::new("/nonexistent/ilrewrite.toml"),
            )],
            "/nonexistent/ilrewrite.toml: cannot read the configuration: No such file or directory \
         (os error 2)",
        );
    })
}

/// A value an instrumentation method refuses at start (probes that do not exist, a
/// factor out of range) is logged with its place in the file, and then no
/// instrumentation method runs, not even the ones that started: the program runs as
/// unprofiled.
#[test]
fn an_option_value_refused_at_start_rewrites_nothing() {
    for_each_runtime(|rt| {
        let text = "[[method]]\nname = \"count\"\n\n[[method]]\nname = \"wrap\"\n\
                [method.options]\nprobes = \"fast\"\n";
        let path = config_file("sample-probes", text);
        let (out, s) = run(rt, &[("ILREWRITE_CONFIG", path.as_os_str())]);
        let line = format!(
            "instrumentation method wrap did not start: {}:7:10: option `probes`: \"fast\" is not \
         a kind of probes (managed, native or none)",
            path.display()
        );
        assert!(out.stderr.contains(&line), "{line}\n{}", out.stderr);
        assert_eq!(s.mode, "off", "{s:?}");
        assert_eq!((s.jitted, s.rewritten, s.enters), (0, 0, 0), "{s:?}");
    })
}

/// Both a file and a mode: which one was meant is unknown, so neither is followed.
#[test]
fn a_file_and_a_mode_together_rewrite_nothing() {
    for_each_runtime(|rt| {
        let path = config_file("sample-both", "[[method]]\nname = \"wrap\"\n");
        refused(
            rt,
            &[
                ("ILREWRITE_CONFIG", path.as_os_str()),
                ("ILREWRITE_MODE", OsStr::new("wrap")),
            ],
            "ILREWRITE_CONFIG and ILREWRITE_MODE are both set; set one",
        );
    })
}

/// The control: the same variables, readable, do what they say.
#[test]
fn a_readable_configuration_is_followed() {
    for_each_runtime(|rt| {
        let (out, s) = run(
            rt,
            &[
                ("ILREWRITE_MODE", OsStr::new("wrap")),
                ("ILREWRITE_FILTER", OsStr::new("CallTree.Work::")),
            ],
        );
        assert!(!out.stderr.contains("ilrewrite: error"), "{}", out.stderr);
        assert_eq!(s.mode, "wrap");
        assert!(s.rewritten > 0 && s.enters > 0, "{s:?}");
        let (_, s) = run(rt, &[]);
        assert_eq!(s.mode, "count", "the default when nothing is set");
    })
}

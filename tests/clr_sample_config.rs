//! The sample profiler (`examples/profiler.rs`) fails closed: a configuration it cannot
//! read gives an error line at start-up and then nothing is rewritten, in a real
//! CoreCLR 3.1.23. A silent fallback would instrument more than asked (an unreadable
//! filter read as "no filter" wraps every method) or differently (an unknown mode read
//! as the default).
#![cfg(feature = "clr")]

mod clr_support;

use clr_support::{
    Output, Summary, command_for, exit_code, expected_stdout, profile, program, run_command,
    sample_profiler,
};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

/// The sample profiler's CLSID (README and `examples/profiler.rs`).
const SAMPLE: &str = "{8C1E2D4F-3B6A-4E59-A7C2-1F0D9B3E6A51}";

/// Runs `CallTree` (every one of its methods JIT-compiled) under the sample profiler
/// with `env`, and checks that it behaved as unprofiled.
fn run(env: &[(&str, &OsStr)]) -> (Output, Summary) {
    let mut cmd = command_for(&program("CallTree"));
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
fn refused(env: &[(&str, &OsStr)], error: &str) {
    let (out, s) = run(env);
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
    refused(
        &[("ILREWRITE_MODE", OsStr::new("bogus"))],
        "unknown ILREWRITE_MODE \"bogus\" (expected count, identity, decode or wrap)",
    );
    // A mode named with different case is not a mode either.
    refused(
        &[("ILREWRITE_MODE", OsStr::new("Wrap"))],
        "unknown ILREWRITE_MODE \"Wrap\" (expected count, identity, decode or wrap)",
    );
}

/// An inlining choice other than `keep` or `allow` is refused the same way (read as the
/// default, it would instrument differently than asked).
#[test]
fn an_unknown_inlining_choice_rewrites_nothing() {
    refused(
        &[
            ("ILREWRITE_MODE", OsStr::new("wrap")),
            ("ILREWRITE_INLINING", OsStr::new("never")),
        ],
        "unknown ILREWRITE_INLINING \"never\" (expected keep or allow)",
    );
}

/// An unknown kind of probe is refused the same way (read as the default, it would
/// count differently than asked).
#[test]
fn an_unknown_probe_kind_rewrites_nothing() {
    refused(
        &[
            ("ILREWRITE_MODE", OsStr::new("wrap")),
            ("ILREWRITE_PROBES", OsStr::new("fast")),
        ],
        "unknown ILREWRITE_PROBES \"fast\" (expected managed, native or none)",
    );
}

#[test]
fn a_variable_that_is_not_utf8_rewrites_nothing() {
    let raw = OsStr::from_bytes(b"CallTree.\xFFWork");
    refused(
        &[
            ("ILREWRITE_MODE", OsStr::new("wrap")),
            ("ILREWRITE_FILTER", raw),
        ],
        "ILREWRITE_FILTER is not valid UTF-8 (\"CallTree.\\xFFWork\")",
    );
    refused(
        &[("ILREWRITE_MODE", OsStr::from_bytes(b"wr\xC3ap"))],
        "ILREWRITE_MODE is not valid UTF-8 (\"wr\\xC3ap\")",
    );
}

/// The control: the same variables, readable, do what they say.
#[test]
fn a_readable_configuration_is_followed() {
    let (out, s) = run(&[
        ("ILREWRITE_MODE", OsStr::new("wrap")),
        ("ILREWRITE_FILTER", OsStr::new("CallTree.Work::")),
    ]);
    assert!(!out.stderr.contains("ilrewrite: error"), "{}", out.stderr);
    assert_eq!(s.mode, "wrap");
    assert!(s.rewritten > 0 && s.enters > 0, "{s:?}");
    let (_, s) = run(&[]);
    assert_eq!(s.mode, "count", "the default when nothing is set");
}

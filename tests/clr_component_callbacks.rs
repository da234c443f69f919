//! The runtime's callbacks through the C ABI (`ILR_CALLBACK_*`, `ilr_method.callbacks`,
//! `events`, `callback`), end to end: `examples/engine.rs` loads the C libraries of
//! `tests/components/` (compiled when the test runs) and runs the test programs on .NET 8
//! and .NET Core 3.1.
//!
//! * `watcher.c` subscribes to six callbacks and counts them: each arrives, with the
//!   words the header describes, `ExceptionThrown` exactly once per exception
//!   `TwoTools.exe` throws, the events its callbacks need added by the host (and
//!   logged) unless its own `events` give them, the program unchanged;
//! * its `JITInlining` answer reaches the JIT: refusing every inlining makes the 32
//!   small methods of `Inlining.exe`, inlined otherwise, compile on their own;
//! * a subscription the ABI cannot carry, or to no callback, or without a `callback`
//!   function, is refused at load, naming the library and why; the program runs as
//!   unprofiled.
#![cfg(feature = "clr")]

mod clr_support;

use clr_support::components::{
    assert_attached, assert_unchanged, entry, library, library_file, refused, run,
};
use clr_support::{Output, for_each_runtime};

/// The exceptions `TwoTools.exe` throws (its source's header: 4 + 2 + 3 + 1), each
/// caught.
const TWO_TOOLS_EXCEPTIONS: u64 = 10;

/// `watcher`'s report at shutdown: (callback, count), in its order, then `bad`.
fn watcher_counts(out: &Output) -> Vec<(String, u64)> {
    out.stderr
        .lines()
        .filter_map(|l| l.strip_prefix("ilrewrite: watcher: "))
        .filter_map(|l| l.split_once(' '))
        .filter_map(|(name, n)| Some((name.to_owned(), n.parse().ok()?)))
        .collect()
}

/// The count `watcher` reported for `callback` (panics, with stderr, when it did not).
fn count(out: &Output, callback: &str) -> u64 {
    watcher_counts(out)
        .into_iter()
        .find(|(name, _)| name == callback)
        .unwrap_or_else(|| panic!("no count of {callback}:\n{}", out.stderr))
        .1
}

/// Proves that a C library receives the callbacks it subscribes to, on both runtimes,
/// with tiering on and off: `watcher` counts `ModuleLoadFinished`,
/// `JITCompilationStarted`, `ClassLoadFinished`, `JITInlining` (with tiering off, where
/// the JIT inlines) and `Shutdown` (once, its report written from it) as more than 0,
/// and `ExceptionThrown` exactly 10, the exceptions `TwoTools.exe` throws; every call
/// came after `start` with the words the header gives (`bad 0`: their count, BOOLs 0 or
/// 1, HRESULTs sign-extended, IDs not 0). `ClassLoadFinished`'s flag was added by the
/// host, which says so; `ExceptionThrown`'s came from the library's own `events`
/// (nothing added). The program's output and exit code are those of an unprofiled run.
#[test]
fn a_c_library_receives_the_callbacks_it_subscribes_to() {
    let config = entry("watcher", &library("watcher"), "");
    for_each_runtime(|rt| {
        for tiering in ["1", "0"] {
            let out = run(
                rt,
                "TwoTools",
                &format!("watcher-{tiering}"),
                &config,
                &[("COMPlus_TieredCompilation", tiering)],
            );
            let err = &out.stderr;
            assert_attached(&out);
            assert_unchanged(rt, "TwoTools", &out);
            assert!(
                err.contains(
                    "ilrewrite: instrumentation method watcher subscribes to ClassLoadFinished: \
                     asking for COR_PRF_MONITOR_CLASS_LOADS"
                ),
                "{err}"
            );
            assert!(
                !err.contains("watcher subscribes to ExceptionThrown"),
                "its own events give MONITOR_EXCEPTIONS:\n{err}"
            );
            let counts = watcher_counts(&out);
            let names: Vec<&str> = counts.iter().map(|(n, _)| n.as_str()).collect();
            assert_eq!(
                names,
                [
                    "ModuleLoadFinished",
                    "JITCompilationStarted",
                    "ClassLoadFinished",
                    "JITInlining",
                    "ExceptionThrown",
                    "Shutdown",
                    "bad"
                ],
                "{err}"
            );
            println!("{rt} tiering {tiering}: {counts:?}");
            // TwoTools.exe, TwoToolsLib.dll and CoreLib at least.
            assert!(count(&out, "ModuleLoadFinished") >= 3, "{err}");
            assert!(count(&out, "JITCompilationStarted") > 0, "{err}");
            assert!(count(&out, "ClassLoadFinished") > 0, "{err}");
            if tiering == "0" {
                assert!(count(&out, "JITInlining") > 0, "{err}");
            }
            assert_eq!(
                count(&out, "ExceptionThrown"),
                TWO_TOOLS_EXCEPTIONS,
                "{err}"
            );
            assert_eq!(count(&out, "Shutdown"), 1, "{err}");
            assert_eq!(count(&out, "bad"), 0, "{err}");
        }
    });
}

/// Proves that a library's `JITInlining` answer reaches the JIT: with tiering off,
/// `Inlining.exe`'s 32 small methods are inlined into its drivers and never compiled on
/// their own; when `watcher` answers 0 (`refuse_inlining`) every time, each of them is
/// compiled, so `JITCompilationStarted` counts at least 32 more compilations, and the
/// program prints and returns the same.
#[test]
fn a_librarys_inlining_answer_reaches_the_jit() {
    for_each_runtime(|rt| {
        let mut compilations = Vec::new();
        for refuse in [false, true] {
            let config = entry(
                "watcher",
                &library("watcher"),
                &format!("refuse_inlining = {refuse}"),
            );
            let out = run(
                rt,
                "Inlining",
                &format!("inlining-{refuse}"),
                &config,
                &[("COMPlus_TieredCompilation", "0")],
            );
            let err = &out.stderr;
            assert_attached(&out);
            assert_unchanged(rt, "Inlining", &out);
            assert!(count(&out, "JITInlining") > 0, "{err}");
            assert_eq!(count(&out, "bad"), 0, "{err}");
            compilations.push(count(&out, "JITCompilationStarted"));
        }
        println!("{rt}: compilations inlining allowed, refused: {compilations:?}");
        assert!(compilations[1] >= compilations[0] + 32, "{compilations:?}");
    });
}

/// Proves that a subscription to `GetReJITParameters`, which the C ABI does not carry
/// (the host answers it), refuses the library at load with a line naming it, the
/// callback and its id's name; the program runs as unprofiled.
#[test]
fn a_callback_the_abi_does_not_carry_is_refused() {
    refused(
        "subscribe-rejit",
        &entry("bad_subscription", &library("bad_subscription"), ""),
        &[("ILR_TEST_SUBSCRIPTION", "get_rejit_parameters")],
        &[
            "engine: ",
            &library_file("bad_subscription"),
            "it subscribes to GetReJITParameters (ILR_CALLBACK_GET_REJIT_PARAMETERS), \
             which the C ABI does not carry",
        ],
    );
}

/// Proves that a bit past the last callback (95: `LoadAsNotificationOnly` is 94) refuses
/// the library at load, naming it and the bit.
#[test]
fn a_bit_past_the_last_callback_is_refused() {
    refused(
        "subscribe-past",
        &entry("bad_subscription", &library("bad_subscription"), ""),
        &[("ILR_TEST_SUBSCRIPTION", "past_last")],
        &[
            "engine: ",
            &library_file("bad_subscription"),
            "it subscribes to callback 95 (bit 31 of callbacks[1]), which is no callback",
        ],
    );
}

/// Proves that a subscription without a `callback` function refuses the library at
/// load, naming the callback.
#[test]
fn a_subscription_without_a_callback_function_is_refused() {
    refused(
        "subscribe-no-callback",
        &entry("bad_subscription", &library("bad_subscription"), ""),
        &[("ILR_TEST_SUBSCRIPTION", "no_callback")],
        &[
            "engine: ",
            &library_file("bad_subscription"),
            "it subscribes to ExceptionThrown (ILR_CALLBACK_EXCEPTION_THROWN) and gives no \
             `callback` function",
        ],
    );
}

/// The control of the refusals: the same library, subscribed to `ExceptionThrown` with
/// a `callback`, is loaded and attached (the refusals come from what it subscribes to,
/// not from the library).
#[test]
fn the_same_library_with_a_carried_subscription_loads() {
    let config = entry("bad_subscription", &library("bad_subscription"), "");
    for_each_runtime(|rt| {
        let out = run(rt, "Answer", "subscribe-fine", &config, &[]);
        assert_attached(&out);
        assert_unchanged(rt, "Answer", &out);
    });
}

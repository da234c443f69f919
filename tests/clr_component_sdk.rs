//! Three instrumentation methods from three places in one profiler, in a real runtime:
//! `examples/engine.rs`'s built-in `scale` (Rust, in the profiler), `offset_c`
//! (`tests/components/offset.c`, a C library built against `include/ilrewrite_method.h`)
//! and `negate_rs` (`method-sdk/examples/negate_rs.rs`, a Rust library built with the
//! `ilrewrite-method` crate, which does not depend on this one), all on
//! `Answer::Get` of `tests/programs/Answer.exe` (41 unprofiled), each changing its
//! `int32` result before the `ret`: scale `* 2`, offset_c `+ 1`, negate_rs `neg`.
//!
//! Higher priority edits first, so its code runs first on the value: the answer shows
//! the order the three were applied in, and that each library's code ran. A
//! configuration the Rust library refuses (an option it does not declare) stops the
//! profiler's start: nothing is rewritten.
//!
//! Then `tracer_rs` (`method-sdk/examples/tracer_rs.rs`), `tests/components/tracer.c`
//! written with the crate's safe API, under the same expectations as `tracer_c` in
//! `tests/clr_components_module.rs`: metadata defined from text at module load and kept
//! in the module's item, a wrap of the whole body with a state local, an added local
//! and the return-value local, and the single-ret with a branch inside inserted code.
#![cfg(feature = "clr")]

mod clr_support;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use clr_support::components::{
    ENGINE, assert_attached, count, engine, library, run_traced, toml_str, tracer_config,
    without_tracer,
};
use clr_support::{
    Runtime, build_package_example_cdylib, command_for, config_file, exit_code, expected_stdout,
    for_each_runtime, program, run_command, run_profiled,
};

/// `negate_rs`, the example cdylib of the `ilrewrite-method` workspace member, built
/// once for this test binary's profile into its target directory.
fn negate_rs() -> PathBuf {
    static NEGATE_SO: OnceLock<PathBuf> = OnceLock::new();
    NEGATE_SO
        .get_or_init(|| build_package_example_cdylib("ilrewrite-method", "negate_rs"))
        .clone()
}

/// `tracer_rs`, the other example cdylib of `ilrewrite-method`, built likewise.
fn tracer_rs() -> PathBuf {
    static TRACER_SO: OnceLock<PathBuf> = OnceLock::new();
    TRACER_SO
        .get_or_init(|| build_package_example_cdylib("ilrewrite-method", "tracer_rs"))
        .clone()
}

/// `offset_c`: `tests/components/offset.c`, compiled by the system C compiler.
fn offset_c() -> PathBuf {
    library("offset")
}

/// A path as a TOML string.
fn literal(path: &Path) -> String {
    toml_str(path)
}

/// The engine's configuration: the three methods with these priorities, each on
/// `Answer::Get`; `negate_extra` is added to negate_rs's options.
fn config(name: &str, scale: i32, offset: i32, negate: i32, negate_extra: &str) -> PathBuf {
    let text = format!(
        r#"
[[method]]
name = "scale"
priority = {scale}
options = {{ filter = "Answer::Get", factor = 2 }}

[[method]]
name = "offset_c"
library = {offset_lib}
priority = {offset}
options = {{ filter = "Answer::Get", addend = 1 }}

[[method]]
name = "negate_rs"
library = {negate_lib}
priority = {negate}
options = {{ filter = "Answer::Get"{negate_extra} }}
"#,
        offset_lib = literal(&offset_c()),
        negate_lib = literal(&negate_rs()),
    );
    config_file(name, &text)
}

/// Runs `Answer.exe` on `rt` under the engine with `config`; checks that the program
/// printed `answer {expected}` (and exited with it, modulo 256: exit codes are a byte);
/// returns the stderr.
fn answer(rt: &Runtime, config: &Path, expected: i32) -> String {
    let config = config.to_str().expect("a UTF-8 path");
    let out = run_profiled(rt, "Answer", engine(), ENGINE, &[("ENGINE_CONFIG", config)]);
    assert_eq!(
        out.stdout.trim(),
        format!("answer {expected}"),
        "stderr:\n{}",
        out.stderr
    );
    assert_eq!(
        out.code(),
        expected.rem_euclid(256),
        "stderr:\n{}",
        out.stderr
    );
    out.stderr
}

/// Checks that the profiler attached and started its methods: the manager logs the
/// runtime once its methods started, and negate_rs's `start` logged its filter.
fn assert_started(stderr: &str) {
    assert!(
        stderr.contains("ilrewrite: runtime"),
        "the profiler did not attach or start; stderr:\n{stderr}"
    );
    assert!(
        stderr.contains(r#"negate_rs: filter "Answer::Get""#),
        "negate_rs's start did not log its filter; stderr:\n{stderr}"
    );
}

#[test]
fn scale_then_offset_then_negate() {
    let config = config("sdk-order-1", 20, 10, 5, "");
    for_each_runtime(|rt| {
        // ((41 * 2) + 1), negated.
        assert_started(&answer(rt, &config, -83));
    });
}

#[test]
fn negate_then_offset_then_scale() {
    let config = config("sdk-order-2", 10, 20, 30, "");
    for_each_runtime(|rt| {
        // (-41 + 1) * 2.
        assert_started(&answer(rt, &config, -80));
    });
}

#[test]
fn an_unknown_option_of_the_rust_library_stops_everything() {
    let config = config("sdk-unknown", 20, 10, 5, ", bogus = 1");
    for_each_runtime(|rt| {
        let stderr = answer(rt, &config, 41);
        // The engine ran in the process (its configuration error is its own line), the
        // library was loaded and its option refused before any method started: the
        // manager is then empty, attached but asking for no event (no runtime line).
        assert!(
            stderr.lines().any(|l| l.starts_with("engine: ")
                && l.contains(r#""negate_rs" has no option `bogus`"#)
                && l.ends_with("nothing runs")),
            "no configuration error naming the option; stderr:\n{stderr}"
        );
        assert!(
            !stderr.contains("negate_rs: filter"),
            "negate_rs started; stderr:\n{stderr}"
        );
    });
}

/// The Rust library's `targets` (its option `targets`, read item by item) reach the
/// host: it is asked only about `Answer::Get` (`Candidate::is_target`) and negates it,
/// with no filter; the manager turns ReJIT on for the targets (ReadyToRun kept).
#[test]
fn the_rust_librarys_targets_select_what_it_edits() {
    let text = format!(
        "[[method]]\nname = \"negate_rs\"\nlibrary = {}\noptions = {{ targets = [\"Answer::Get\"] }}\n",
        literal(&negate_rs())
    );
    let config = config_file("sdk-targets", &text);
    for_each_runtime(|rt| {
        let stderr = answer(rt, &config, -41);
        assert!(
            stderr.contains(r#"negate_rs: targets ["Answer::Get"]"#),
            "{stderr}"
        );
        assert!(
            stderr.contains("instrumentation method negate_rs has targets"),
            "{stderr}"
        );
    });
}

/// `tracer_rs`'s configuration.
fn tracer(assembly: &str, methods: &[&str], single_ret: &[&str]) -> String {
    tracer_config("tracer_rs", &tracer_rs(), assembly, methods, single_ret)
}

/// `a_wrap_runs_entry_exit_and_return_code_with_its_locals`
/// (`tests/clr_components_module.rs`) with `tracer_rs`: every call of
/// `TwoTools.Timed`'s four methods (194) prints `tracer enter`, the exit line
/// (non-ASCII), 7001 (the state local) and 40002 (the added `int64` local), and the 190
/// that return normally `tracer ret` and their result; `Leaf`'s ten calls first, in
/// order; `TwoTools.TimedLib`, in another assembly, left alone; the program's own
/// output and exit code unchanged. (`tracer_c`'s last check, a module handle used
/// after its call, cannot be written with the safe API: a `Module` does not outlive
/// its call.)
#[test]
fn tracer_rs_wraps_every_call_as_tracer_c_does() {
    for_each_runtime(|rt| {
        let config = tracer(
            "TwoTools",
            &["TwoTools.Timed::*", "TwoTools.TimedLib::*"],
            &[],
        );
        let out = run_traced(rt, "TwoTools", &[], "sdk-wrap", &config);
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
    });
}

/// `the_single_ret_gives_the_epilogue_and_the_return_value_local`
/// (`tests/clr_components_module.rs`) with `tracer_rs`: `Returns.Values::Branches`,
/// asked for with `Want::EditSingleRet`, prints before its one epilogue `tracer ret`
/// and the value from the return-value local, `tracer small` only for 40 (a branch to
/// a later instruction of the inserted code), and 900 (a MethodSpec call and a
/// constructor and method of a TypeSpec), for each of its six calls; nothing else
/// changes.
#[test]
fn tracer_rs_gives_the_single_ret_as_tracer_c_does() {
    for_each_runtime(|rt| {
        let method = "Returns.Values::Branches";
        let out = run_traced(
            rt,
            "Returns",
            &[],
            "sdk-single-ret",
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

/// `items_are_destroyed_when_their_module_unloads` (`tests/clr_components_module.rs`)
/// with `tracer_rs`: `Unload.exe 40` loads and unloads `UnloadPlugin.dll` 40 times;
/// before the program ends, the Rust values kept as the unloaded modules' items (at
/// least 39 of 40) and those of their six edited methods are dropped by the crate's
/// destructor, their `Drop` logging through the `Logger` they kept.
#[test]
fn tracer_rs_items_are_dropped_when_their_module_unloads() {
    for_each_runtime(|rt| {
        let config = tracer("UnloadPlugin", &["UnloadPlugin.Plugin::*"], &[]);
        let out = run_traced(rt, "Unload", &["40"], "sdk-unload", &config);
        let err = &out.stderr;
        assert_attached(&out);
        let mut plain = command_for(rt, &program("Unload"));
        plain.arg("40");
        let plain = run_command(plain);
        assert_eq!(without_tracer(&out.stdout), plain.stdout, "{err}");
        assert_eq!(out.code(), exit_code("Unload"), "{err}");
        assert!(count(&out.stdout, "tracer enter") >= 40 * 9, "{err}");
        let before_exit: Vec<&str> = err
            .lines()
            .take_while(|l| !l.starts_with("unload: rss-growth"))
            .collect();
        let modules = before_exit
            .iter()
            .filter(|l| l.starts_with("ilrewrite: tracer_rs: module item destroyed"))
            .count();
        assert!(
            (39..=40).contains(&modules),
            "{modules} module items destroyed:\n{err}"
        );
        let methods = before_exit
            .iter()
            .filter(|l| **l == "ilrewrite: tracer_rs: method item destroyed")
            .count();
        assert!(
            methods >= 39 * 6,
            "{methods} method items destroyed:\n{err}"
        );
    });
}

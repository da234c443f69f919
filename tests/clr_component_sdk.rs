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
#![cfg(feature = "clr")]

mod clr_support;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use clr_support::components::{ENGINE, engine, library, toml_str};
use clr_support::{
    Runtime, build_package_example_cdylib, config_file, for_each_runtime, run_profiled,
};

/// `negate_rs`, the example cdylib of the `ilrewrite-method` workspace member, built
/// once for this test binary's profile into its target directory.
fn negate_rs() -> PathBuf {
    static NEGATE_SO: OnceLock<PathBuf> = OnceLock::new();
    NEGATE_SO
        .get_or_init(|| build_package_example_cdylib("ilrewrite-method", "negate_rs"))
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

//! Targets found by name with ReadyToRun code kept, in real runtimes (both pinned ones):
//! the sample profiler's `calls` (`examples/profiler/calls.rs`) counts the calls of the
//! methods its targets name through a native probe at their entry; the manager finds
//! them when their modules load and re-JIT-compiles those of precompiled modules before
//! their first call.
//!
//! What is shown: exact counts of framework targets (`Dictionary`2::TryGetValue` over a
//! reference and a value type, `String::Concat`, `List`1::Add`,
//! `StringBuilder::Append`, `Stack`1::Push` of an assembly loaded late,
//! `String::IsNullOrEmpty` called through precompiled code that inlined it) and of the
//! program's own (a generic method over `int` and `string`, a method of a generic
//! type), with tiering on and off, the program's output unchanged; a target of a plugin
//! loaded 1,000 times into a collectible context, counts exact and memory flat; a
//! target that names nothing said at shutdown; a manager that keeps ReadyToRun code
//! refusing to start under an instrumentation method that disables it.
#![cfg(all(feature = "clr", feature = "pe"))]

mod clr_support;

use clr_support::{
    Output, Runtime, UNLOAD_CYCLES, command_for, config_file, exit_code, expected_stdout,
    for_each_runtime, program, run_command, run_profiled, sample_profiler,
};

/// The sample profiler's CLSID.
const SAMPLE: &str = "{8C1E2D4F-3B6A-4E59-A7C2-1F0D9B3E6A51}";

/// The loop count of `Targets.exe` (its default).
const N: u64 = 1_000;

/// Runs `name` under the sample profiler configured by `text`, with `env`.
fn configured(rt: &Runtime, name: &str, text: &str, env: &[(&str, &str)]) -> Output {
    let path = config_file(&format!("targets-{name}"), text);
    let path = path.to_str().expect("a UTF-8 temporary directory");
    let mut all = vec![("ILREWRITE_CONFIG", path)];
    all.extend_from_slice(env);
    run_profiled(rt, name, &sample_profiler(), SAMPLE, &all)
}

/// The `calls` line of `method`: (calls in the program's window, all calls).
fn calls(stderr: &str, method: &str) -> (u64, u64) {
    let prefix = format!("ilrewrite: calls {method} window ");
    let line = stderr
        .lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("no calls line for {method} in:\n{stderr}"));
    let (window, total) = line.split_once(" total ").expect("window N total N");
    (window.parse().unwrap(), total.parse().unwrap())
}

/// A number after `key` on the line starting with `prefix`.
fn number(stderr: &str, prefix: &str, key: &str) -> u64 {
    clr_support::named_count(stderr, prefix, key)
}

/// The targets of `Targets.exe`, and how many calls of each its window makes.
const TARGETS: &[(&str, u64)] = &[
    (
        "System.Collections.Generic.Dictionary`2::TryGetValue",
        2 * N,
    ),
    ("System.Collections.Generic.List`1::Add", N),
    ("System.String::Concat(string,string)", N),
    ("System.Text.StringBuilder::Append(string)", N),
    // Twice from `String::Concat(string,string)` (a target itself), twice from
    // `Path::CombineInternal`, whose precompiled code inlined it.
    ("System.String::IsNullOrEmpty", 4 * N),
    ("System.Collections.Generic.Stack`1::Push", N),
    ("Production.Gen::Id", 2 * N),
    ("Production.Box`1::Get", 2 * N),
];

fn targets_config() -> String {
    let names: Vec<String> = TARGETS.iter().map(|(t, _)| format!("{t:?}")).collect();
    format!(
        "[manager]\nready_to_run = \"keep\"\n\n[[method]]\nname = \"calls\"\noptions = {{ window = \
         \"Production.Window\", targets = [{}, \"No.Such.Type::Nothing\"] }}\n",
        names.join(", ")
    )
}

/// Every target's calls are counted exactly, from the first call after its module
/// loaded: framework methods of precompiled CoreLib and of `System.Collections` (loaded
/// while the program runs) through ReJIT requested at their module's load, the
/// program's own at their first JIT; with tiering on and off. The output is the
/// unprofiled one, the profiler said it turned ReJIT on, and the target that names no
/// method is said at shutdown.
#[test]
fn named_targets_are_counted_exactly_with_ready_to_run_kept() {
    for_each_runtime(|rt| {
        for tiering in ["0", "1"] {
            let out = configured(
                rt,
                "Targets",
                &targets_config(),
                &[("COMPlus_TieredCompilation", tiering)],
            );
            let what = format!("{} tiering {tiering}:\n{}", rt.version(), out.stderr);
            assert_eq!(out.stdout, expected_stdout("Targets"), "{what}");
            assert_eq!(out.status.code(), Some(exit_code("Targets")), "{what}");
            assert!(
                out.stderr
                    .contains("has targets and ReadyToRun code is kept: ReJIT is on"),
                "{what}"
            );
            for &(target, expected) in TARGETS {
                // Counted by name: the overload's parameter list selected it.
                let name = target.split('(').next().unwrap_or(target);
                let (window, total) = calls(&out.stderr, name);
                assert_eq!(window, expected, "{target}: {what}");
                assert!(total >= window, "{target}: {what}");
            }
            // The framework targets were requested as their precompiled modules loaded.
            assert_eq!(
                number(&out.stderr, "targets", "requested-at-load"),
                6,
                "{what}"
            );
            // Their precompiled callers, from the images' inlining records: requested
            // with them.
            assert!(
                number(&out.stderr, "targets", "inliners-at-load") > 50,
                "{what}"
            );
            assert_eq!(number(&out.stderr, "rejit", "errors"), 0, "{what}");
            assert!(
                out.stderr.contains(
                    "instrumentation method calls: target No.Such.Type::Nothing matched no method"
                ),
                "{what}"
            );
        }
    })
}

/// A target in a plugin loaded into a collectible context and unloaded 1,000 times:
/// each load is a new JIT-only module, found at its load and edited at its methods'
/// first JIT; every call counted, and resident memory per cycle within 10 KB of the
/// unprofiled run's.
#[test]
fn targets_of_a_plugin_loaded_a_thousand_times_are_counted_exactly() {
    const PLUGIN: &[(&str, u64)] = &[
        ("UnloadPlugin.Plugin::.ctor", 1),
        ("UnloadPlugin.Plugin::Square", 3),
        ("UnloadPlugin.Plugin::Scale", 1),
        ("UnloadPlugin.Plugin::Weigh", 2),
        ("UnloadPlugin.Plugin::Guarded", 1),
        ("UnloadPlugin.Plugin::Chain", 1),
    ];
    let config = "[manager]\nready_to_run = \"keep\"\n\n[[method]]\nname = \"calls\"\n\
                  options = { targets = [\"UnloadPlugin.Plugin::*\"] }\n";
    for_each_runtime(|rt| {
        let mut unprofiled = command_for(rt, &program("Unload"));
        unprofiled.env("COMPlus_TieredCompilation", "0");
        let base = clr_support::rss_growth_per_cycle(&run_command(unprofiled).stderr);
        let out = configured(rt, "Unload", config, &[("COMPlus_TieredCompilation", "0")]);
        let what = format!("{}:\n{}", rt.version(), out.stderr);
        assert_eq!(out.stdout, expected_stdout("Unload"), "{what}");
        assert_eq!(out.status.code(), Some(exit_code("Unload")), "{what}");
        for &(target, per_cycle) in PLUGIN {
            assert_eq!(
                calls(&out.stderr, target).1,
                per_cycle * UNLOAD_CYCLES,
                "{target}: {what}"
            );
        }
        let growth = clr_support::rss_growth_per_cycle(&out.stderr);
        eprintln!("Unload under calls: {growth} bytes per cycle, unprofiled {base}");
        assert!(growth - base <= 10_000, "{growth} against {base}: {what}");
    })
}

/// A manager that keeps ReadyToRun code, hosting an instrumentation method that asks
/// for `COR_PRF_DISABLE_ALL_NGEN_IMAGES` (the sample's `count`), does not start: an
/// error line names both, nothing is rewritten, the program runs unchanged. A value of
/// `ready_to_run` that is neither `keep` nor `disable` is an error at its place in the
/// file.
#[test]
fn keeping_ready_to_run_refuses_a_method_that_disables_it() {
    for_each_runtime(|rt| {
        let config = "[manager]\nready_to_run = \"keep\"\n\n[[method]]\nname = \"count\"\n";
        let out = configured(rt, "Answer", config, &[]);
        assert_eq!(out.stdout, expected_stdout("Answer"), "{}", out.stderr);
        assert!(
            out.stderr.contains(
                "instrumentation method count asks for COR_PRF_DISABLE_ALL_NGEN_IMAGES, but \
                 the manager keeps ReadyToRun code"
            ),
            "{}",
            out.stderr
        );
        assert!(out.stderr.contains("ilrewrite: mode off"), "{}", out.stderr);

        let config = "[manager]\nready_to_run = \"sometimes\"\n\n[[method]]\nname = \"count\"\n";
        let out = configured(rt, "Answer", config, &[]);
        assert_eq!(out.stdout, expected_stdout("Answer"), "{}", out.stderr);
        assert!(
            out.stderr
                .contains(":2:16: ready_to_run is \"keep\" or \"disable\", not \"sometimes\""),
            "{}",
            out.stderr
        );
    })
}

//! Several instrumentation methods in one profiler, in a real CoreCLR 3.1.23: the
//! sample profiler (`examples/profiler/`) hosts them through `ilrewrite::clr::Manager`,
//! chosen by a configuration file (`ILREWRITE_CONFIG`).
//!
//! What is shown: two edits of one method compose in the configured priority order
//! (swapping the priorities swaps the result); one that panics on some methods and
//! fails on others is rolled back there alone, logged once per method, while the
//! others' edits stay and the counting probes stay exact; each instrumentation method
//! receives exactly the callbacks it subscribed to, and the events it turns on later;
//! methods nobody wants are not decoded; a method's data item outlives its
//! compilations; a managed helper in its own assembly and a native function are called
//! from every method of an assembly through metadata defined at its load; the module
//! facts tell the framework, ReadyToRun and collectible modules apart; assembly data
//! items are dropped with their assemblies.
#![cfg(all(feature = "clr", feature = "pe"))]

mod clr_support;

use clr_support::{
    Output, RETURNS_CALLS, Runtime, Summary, UNLOAD_CYCLES, config_file, exit_code,
    expected_stdout, for_each_runtime, named_count, named_counts, run_profiled, sample_profiler,
};

/// The sample profiler's CLSID.
const SAMPLE: &str = "{8C1E2D4F-3B6A-4E59-A7C2-1F0D9B3E6A51}";

/// Runs `program` under the sample profiler configured by `text`, with `env`; checks
/// that the profiler attached (its summary is there) and returns the run.
fn configured(
    rt: &Runtime,
    program: &str,
    name: &str,
    text: &str,
    env: &[(&str, &str)],
) -> (Output, Summary) {
    let path = config_file(&format!("manager-{name}"), text);
    let path = path.to_str().expect("a UTF-8 temporary directory");
    let mut all = vec![
        ("ILREWRITE_CONFIG", path),
        ("COMPlus_TieredCompilation", "0"),
    ];
    all.extend_from_slice(env);
    let out = run_profiled(rt, program, &sample_profiler(), SAMPLE, &all);
    let summary = Summary::parse(&out.stderr)
        .unwrap_or_else(|e| panic!("the profiler did not report: {e}\n{}", out.stderr));
    (out, summary)
}

/// `scale` (×2) and `offset` (+1) on `Answer::Get` (41), with these priorities.
fn answer_config(scale: i32, offset: i32) -> String {
    format!(
        "[[method]]\nname = \"scale\"\npriority = {scale}\noptions = {{ filter = \
         \"Answer::Get\" }}\n\n[[method]]\nname = \"offset\"\npriority = {offset}\n\
         options = {{ filter = \"Answer::Get\" }}\n"
    )
}

/// Two instrumentation methods edit `Answer::Get` (returning 41): `scale` before
/// `offset` gives `2x + 1` (83), the priorities swapped in the file give `2(x + 1)`
/// (84); stdout and the exit code both show it.
#[test]
fn two_edits_of_one_method_run_in_the_configured_priority_order() {
    for_each_runtime(|rt| {
        for (scale, offset, expected) in [(20, 10, 83), (10, 20, 84)] {
            let (out, s) = configured(rt, "Answer", "answer", &answer_config(scale, offset), &[]);
            assert_eq!(
                (out.stdout.as_str(), out.code()),
                (format!("answer {expected}\n").as_str(), expected),
                "scale {scale}, offset {offset}: {}",
                out.stderr
            );
            let order = if scale > offset {
                "scale+offset"
            } else {
                "offset+scale"
            };
            assert_eq!(s.mode, order, "{s:?}");
            // One method wanted, decoded once and rewritten once, whatever the number of
            // edits; every other compilation not even decoded.
            assert_eq!((s.jitted, s.rewritten, s.failed), (1, 1, 0), "{s:?}");
            let decoded = named_count(&out.stderr, "manager", "decoded");
            let compilations = named_count(&out.stderr, "manager", "compilations");
            let not_decoded = named_count(&out.stderr, "manager", "not-decoded");
            assert_eq!(decoded, 1, "{}", out.stderr);
            assert_eq!(not_decoded, compilations - 1, "{}", out.stderr);
            assert!(compilations > 100, "{}", out.stderr);
        }
    })
}

/// `Returns.exe` under `scale` (priority 20), `faulty` (10) and `offset` (5) on
/// `Returns.Values`' methods, and `wrap` counting every call of `Returns.*`: `faulty`
/// adds 1000 and then panics on `PanicHere` and returns an error on `ErrorHere`. Each
/// printed value is `2v + 1000 + 1`, or `2v + 1` where `faulty` failed (its edit rolled
/// back, the others' kept), or `v` for the `int64` method none of them edits; the
/// counts of the probes are exact; one log line per (instrumentation method, method)
/// though each method runs three times.
#[test]
fn a_failing_instrumentation_method_is_rolled_back_alone() {
    for_each_runtime(|rt| {
        let text = "[[method]]\nname = \"wrap\"\noptions = { filter = \"Returns.\" }\n\n\
                [[method]]\nname = \"scale\"\npriority = 20\n[method.options]\nfilter = \
                \"Values::\"\nfactor = 2\n\n[[method]]\nname = \"faulty\"\npriority = 10\n\
                [method.options]\nfilter = \"Values::\"\npanic_on = \"PanicHere\"\n\
                error_on = \"ErrorHere\"\n\n[[method]]\nname = \"offset\"\npriority = 5\n\
                options = { filter = \"Values::\", addend = 1 }\n";
        let (out, s) = configured(rt, "Returns", "isolation", text, &[]);
        assert_eq!(out.code(), exit_code("Returns"), "{}", out.stderr);
        let expected: String = expected_stdout("Returns")
            .lines()
            .map(|line| {
                let (name, value) = line.rsplit_once(' ').expect("NAME VALUE");
                let v: i64 = value.parse().expect("a number");
                let changed = match name {
                    "Wide" => v,
                    "PanicHere" | "ErrorHere" => 2 * v + 1,
                    _ => 2 * v + 1000 + 1,
                };
                format!("{name} {changed}\n")
            })
            .collect();
        assert_eq!(out.stdout, expected, "{}", out.stderr);
        assert_eq!((s.enters, s.exits), (RETURNS_CALLS, RETURNS_CALLS), "{s:?}");
        assert_eq!((s.refused, s.failed), (0, 0), "{s:?}");
        assert_eq!(s.rewritten, s.jitted, "{s:?}");
        assert_eq!(named_count(&out.stderr, "manager", "rolled-back"), 2);
        for method in ["PanicHere", "ErrorHere"] {
            let logged: Vec<&str> = out
                .stderr
                .lines()
                .filter(|l| {
                    l.contains("instrumentation method faulty: ")
                        && l.contains(&format!("Values::{method}"))
                })
                .collect();
            assert_eq!(logged.len(), 1, "{method}: {}", out.stderr);
            assert!(
                logged[0].contains("rolled back, the others' kept"),
                "{}",
                logged[0]
            );
        }
        let rollbacks = out
            .stderr
            .lines()
            .filter(|l| l.contains("rolled back, the others' kept"))
            .count();
        assert_eq!(rollbacks, 2, "{}", out.stderr);
        // The contained panic is that one line: Rust's own panic message and backtrace
        // never reach the program's stderr.
        for rust_says in ["panicked at", "RUST_BACKTRACE", "stack backtrace"] {
            assert!(
                !out.stderr.contains(rust_says),
                "{rust_says}: {}",
                out.stderr
            );
        }
        // Asked for, its place and backtrace go through the crate's log.
        let (traced, _) = configured(
            rt,
            "Returns",
            "isolation-traced",
            text,
            &[("ILREWRITE_BACKTRACE", "1")],
        );
        let place = traced
            .stderr
            .lines()
            .position(|l| {
                l.starts_with("ilrewrite: contained panic at ")
                    && l.contains("returns.rs:")
                    && l.contains(": faulty panics on ")
                    && l.contains("PanicHere")
            })
            .unwrap_or_else(|| panic!("no contained panic's place: {}", traced.stderr));
        let trace = traced.stderr.lines().nth(place + 1).unwrap_or_default();
        assert!(trace.starts_with("ilrewrite:   "), "{}", traced.stderr);
        assert!(!traced.stderr.contains("panicked at"), "{}", traced.stderr);
        assert_eq!(traced.stdout, out.stdout);
    })
}

/// The lines `ilrewrite: NAME CALLBACK subscribed|unsubscribed N` of one listener.
fn received(stderr: &str, listener: &str) -> Vec<(String, bool, u64)> {
    let prefix = format!("ilrewrite: {listener} ");
    stderr
        .lines()
        .filter_map(|l| l.strip_prefix(&prefix))
        .filter_map(|rest| {
            let fields: Vec<&str> = rest.split(' ').collect();
            match fields.as_slice() {
                [callback, kind @ ("subscribed" | "unsubscribed"), n] => Some((
                    (*callback).to_owned(),
                    *kind == "subscribed",
                    n.parse().expect("a count"),
                )),
                _ => None,
            }
        })
        .collect()
}

/// Two listeners with different subscriptions: each receives exactly the callbacks it
/// subscribed to, as many times as the runtime delivered them (the manager's own
/// counts of compilations and module loads), and nothing else, though the manager
/// receives module-load-started, unload and inlining callbacks for its own needs and
/// class loads for the second listener. Neither wants a method: none is decoded.
#[test]
fn each_instrumentation_method_receives_only_the_callbacks_it_subscribed_to() {
    for_each_runtime(|rt| {
        let text = "[[method]]\nname = \"listener\"\noptions = { callbacks = \
                [\"ModuleLoadFinished\"] }\n\n[[method]]\nname = \"listener2\"\n\
                options = { callbacks = [\"JITCompilationStarted\", \"ClassLoadFinished\"] }\n";
        let (out, _) = configured(rt, "CallTree", "listeners", text, &[]);
        assert_eq!(out.stdout, expected_stdout("CallTree"), "{}", out.stderr);
        assert_eq!(out.code(), exit_code("CallTree"));
        let manager = named_counts(&out.stderr, "manager");
        let count = |name: &str| manager.iter().find(|(n, _)| n == name).unwrap().1;
        let first = received(&out.stderr, "listener");
        assert_eq!(
            first,
            [("ModuleLoadFinished".to_owned(), true, count("module-loads"))],
            "{}",
            out.stderr
        );
        let second = received(&out.stderr, "listener2");
        assert_eq!(second.len(), 2, "{second:?}");
        assert_eq!(
            second[0],
            ("ClassLoadFinished".to_owned(), true, second[0].2),
            "{second:?}"
        );
        assert!(second[0].2 > 100, "class loads delivered: {second:?}");
        assert_eq!(
            second[1],
            (
                "JITCompilationStarted".to_owned(),
                true,
                count("compilations")
            ),
            "{second:?}"
        );
        // ReadyToRun code stays in use (no listener asks to disable it): few compilations.
        assert!(count("compilations") > 0, "{manager:?}");
        assert_eq!(count("not-decoded"), count("compilations"), "{manager:?}");
        assert_eq!(count("decoded"), 0, "{manager:?}");
    })
}

/// A listener that declares no event and subscribes to `ExceptionThrown` and
/// `ClassLoadFinished` receives both (`CallTree` throws and catches): the manager asks
/// for `COR_PRF_MONITOR_EXCEPTIONS` and `COR_PRF_MONITOR_CLASS_LOADS` for it, and says so.
#[test]
fn a_callback_subscribed_without_its_flag_is_delivered() {
    for_each_runtime(|rt| {
        let text = "[[method]]\nname = \"listener\"\noptions = { callbacks = \
                [\"ExceptionThrown\", \"ClassLoadFinished\"] }\n";
        let (out, _) = configured(rt, "CallTree", "listener-derived", text, &[]);
        assert_eq!(out.stdout, expected_stdout("CallTree"), "{}", out.stderr);
        for (callback, flag) in [
            ("ExceptionThrown", "COR_PRF_MONITOR_EXCEPTIONS"),
            ("ClassLoadFinished", "COR_PRF_MONITOR_CLASS_LOADS"),
        ] {
            let said = format!(
                "ilrewrite: instrumentation method listener subscribes to {callback}: asking for {flag}"
            );
            assert!(
                out.stderr.lines().any(|l| l == said),
                "{said}: {}",
                out.stderr
            );
        }
        let got = received(&out.stderr, "listener");
        let count = |name: &str| got.iter().find(|(n, ..)| n == name).map(|g| g.2);
        assert!(count("ExceptionThrown") >= Some(1), "{got:?}");
        assert!(count("ClassLoadFinished") > Some(100), "{got:?}");
    })
}

/// A listener subscribed to `GetReJITParameters` in a manager without ReJIT (no dial, no
/// targets): the manager cannot ask for `COR_PRF_ENABLE_REJIT` for it, so it does not
/// start, with one error line naming the instrumentation method, the callback and the
/// flag; nothing runs, and the program's output is its own.
#[test]
fn a_rejit_callback_without_the_managers_rejit_stops_the_start() {
    for_each_runtime(|rt| {
        let text = "[[method]]\nname = \"listener\"\noptions = { callbacks = \
                [\"GetReJITParameters\"] }\n";
        let (out, _) = configured(rt, "Answer", "listener-rejit", text, &[]);
        assert_eq!(out.stdout, expected_stdout("Answer"), "{}", out.stderr);
        assert_eq!(out.status.code(), Some(41), "{}", out.stderr);
        assert!(
            out.stderr.contains(
                "ilrewrite: instrumentation method listener subscribes to GetReJITParameters, \
                 which needs COR_PRF_ENABLE_REJIT, which the manager cannot ask for"
            ),
            "{}",
            out.stderr
        );
        assert!(
            out.stderr
                .contains("ilrewrite: no instrumentation method runs: the program runs unchanged"),
            "{}",
            out.stderr
        );
        assert!(out.stderr.contains("ilrewrite: mode off"), "{}", out.stderr);
    })
}

/// `count`'s data item on a method counts its compilations: `Generic.Gen.Show<T>` is
/// compiled 6 times (tiering off), once per instantiation with its own code, so the
/// item kept across them reaches 6; the methods counted are fewer than the
/// compilations.
#[test]
fn a_method_data_item_outlives_its_compilations() {
    for_each_runtime(|rt| {
        let text = "[[method]]\nname = \"count\"\noptions = { filter = \"Generic.\" }\n";
        let (out, s) = configured(rt, "Generic", "count", text, &[]);
        assert_eq!(out.stdout, expected_stdout("Generic"), "{}", out.stderr);
        let methods = named_count(&out.stderr, "count", "methods");
        let most = named_count(&out.stderr, "count", "most");
        assert_eq!(most, 6, "{}", out.stderr);
        assert!(methods < s.jitted, "{methods} methods, {s:?}");
        assert_eq!(s.rewritten, 0, "{s:?}");
    })
}

/// The README's configuration file, run as it is: `answer 83`.
#[test]
fn the_readme_configuration_does_what_it_says() {
    for_each_runtime(|rt| {
        let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
            .expect("the README");
        let start = readme
            .find("```toml\n")
            .expect("a TOML block in the README")
            + 8;
        let text = &readme[start..start + readme[start..].find("```").expect("its end")];
        let (out, s) = configured(rt, "Answer", "readme", text, &[]);
        assert_eq!(
            (out.stdout.as_str(), out.code()),
            ("answer 83\n", 83),
            "{}",
            out.stderr
        );
        assert_eq!(s.mode, "scale+offset", "{s:?}");
    })
}

/// `helper` with `via = "managed"` on `Returns`: each of its 22 calls runs the entry
/// code that calls `ProbeHelper.dll`, a separate assembly, through an AssemblyRef,
/// TypeRefs, a field MemberRef (`Probe.Enabled`), a user string (the assembly's name),
/// a method MemberRef (`Enter`), a MethodSpec (`Touch<int>`) and a MemberRef on a
/// TypeSpec (`Counter<int>.Hit`), all defined when `Returns` loaded: the program's
/// output is unchanged, followed by the helper's own line counting 22 of each.
#[test]
fn a_managed_helper_assembly_is_called_from_every_method() {
    for_each_runtime(|rt| {
        let config = "[[method]]\nname = \"helper\"\noptions = { assembly = \"Returns\" }\n";
        let (out, s) = configured(rt, "Returns", "helper-managed", config, &[]);
        let expected = format!(
            "{}helper: Returns entered {RETURNS_CALLS} touched {RETURNS_CALLS} hit {RETURNS_CALLS}\n",
            expected_stdout("Returns")
        );
        assert_eq!(out.stdout, expected, "{}", out.stderr);
        assert_eq!(out.code(), exit_code("Returns"), "{}", out.stderr);
        assert_eq!(named_count(&out.stderr, "helper", "modules"), 1);
        // Every method of Returns (7) compiled once (tiering off) and rewritten.
        assert_eq!(
            (s.jitted, s.rewritten, s.refused, s.failed),
            (7, 7, 0, 0),
            "{s:?}"
        );
    })
}

/// `helper` with `via = "native"`: the entry code pushes the method's token and calls a
/// Rust function of the profiler through `calli`, whose signature (`unmanaged cdecl
/// void(int32)`, from the function's type) is a StandAloneSig defined once in the
/// module: the output is unchanged and the function counted 22 calls, each with a
/// MethodDef token.
#[test]
fn a_native_helper_is_called_through_calli() {
    for_each_runtime(|rt| {
        let config = "[[method]]\nname = \"helper\"\noptions = { assembly = \"Returns\", via = \"native\" }\n";
        let (out, s) = configured(rt, "Returns", "helper-native", config, &[]);
        assert_eq!(out.stdout, expected_stdout("Returns"), "{}", out.stderr);
        assert_eq!(out.code(), exit_code("Returns"), "{}", out.stderr);
        assert_eq!(
            named_counts(&out.stderr, "helper"),
            [
                ("modules".to_owned(), 1),
                ("native-calls".to_owned(), RETURNS_CALLS),
                ("method-defs".to_owned(), RETURNS_CALLS),
            ]
        );
        assert_eq!(
            (s.jitted, s.rewritten, s.refused, s.failed),
            (7, 7, 0, 0),
            "{s:?}"
        );
    })
}

/// The `facts` line of `assembly`.
fn fact<'a>(stderr: &'a str, assembly: &str) -> &'a str {
    let prefix = format!("ilrewrite: fact {assembly} ");
    stderr
        .lines()
        .find_map(|line| line.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("no facts for {assembly}:\n{stderr}"))
}

/// `facts` on `Unload`, which loads and unloads its plugin 1,000 times in collectible
/// `AssemblyLoadContext`s: the core library is the framework's and ReadyToRun; the
/// program and its plugin are neither, the plugin is collectible; they run in the app
/// domain the host names `clrhost`. An assembly data item is set on each assembly
/// loaded, and each plugin's is dropped when its assembly unloads: 1,000 dropped before
/// shutdown, one per cycle.
#[test]
fn module_facts_and_assembly_items_follow_the_runtime() {
    for_each_runtime(|rt| {
        let config = "[[method]]\nname = \"facts\"\n";
        let (out, _) = configured(rt, "Unload", "facts", config, &[]);
        assert_eq!(out.stdout, expected_stdout("Unload"), "{}", out.stderr);
        assert_eq!(out.code(), exit_code("Unload"), "{}", out.stderr);
        let e = &out.stderr;
        assert!(
            fact(e, "System.Private.CoreLib")
                .starts_with("framework=true ready-to-run=true dynamic=false collectible=false"),
            "{e}"
        );
        // System.Runtime is ReadyToRun in 3.1.23, a facade without ReadyToRun code in
        // 8.0.4: the fact follows the file (pe's reader says what the file is).
        let system_runtime = std::fs::read(rt.framework_dir().join("System.Runtime.dll")).unwrap();
        let r2r = ilrewrite::pe::Assembly::parse(&system_runtime)
            .unwrap()
            .is_ready_to_run();
        if let Some(f) = rt.facts() {
            assert_eq!(r2r, f.system_runtime_is_ready_to_run, "{rt}");
        }
        assert_eq!(
            fact(e, "System.Runtime"),
            format!(
                "framework=true ready-to-run={r2r} dynamic=false collectible=false \
                 domain=clrhost"
            )
        );
        assert_eq!(
            fact(e, "Unload"),
            "framework=false ready-to-run=false dynamic=false collectible=false domain=clrhost"
        );
        assert_eq!(
            fact(e, "UnloadPlugin"),
            "framework=false ready-to-run=false dynamic=false collectible=true domain=clrhost"
        );
        let counts = named_counts(e, "facts");
        let count = |name: &str| counts.iter().find(|(n, _)| n == name).unwrap().1;
        assert_eq!(count("unknown"), 0, "{e}");
        assert_eq!(count("assembly-dropped"), UNLOAD_CYCLES, "{e}");
        // Each plugin load is a new assembly, besides the program's and the framework's.
        assert!(count("assembly-items") > UNLOAD_CYCLES, "{e}");
        // One app domain, never shut down before the profiler is.
        assert_eq!(
            (count("domain-items"), count("domain-dropped")),
            (1, 0),
            "{e}"
        );
    })
}

/// A listener subscribed to `ClassLoadFinished` receives class loads from the start
/// when it asks for them at initialization; with `from_assembly = "Returns"` it asks
/// for them, through its events handle, only when `Returns` loads, and the manager
/// sets the new union: it then receives some (the program's and the framework's
/// classes loaded after), fewer than from the start (the runtime's start-up loads
/// none it sees).
#[test]
fn an_instrumentation_method_turns_its_events_on_later() {
    for_each_runtime(|rt| {
        let run = |later: &str, name: &str| {
            let config = format!(
                "[[method]]\nname = \"listener\"\noptions = {{ callbacks = [\"ClassLoadFinished\"]{later} }}\n"
            );
            let (out, _) = configured(rt, "Returns", name, &config, &[]);
            assert_eq!(out.stdout, expected_stdout("Returns"), "{}", out.stderr);
            let got = received(&out.stderr, "listener");
            assert_eq!(got.len(), 1, "{got:?}");
            assert_eq!((got[0].0.as_str(), got[0].1), ("ClassLoadFinished", true));
            got[0].2
        };
        let always = run("", "listener-always");
        let later = run(", from_assembly = \"Returns\"", "listener-later");
        assert!(
            0 < later && later < always,
            "later {later}, always {always}"
        );
    })
}

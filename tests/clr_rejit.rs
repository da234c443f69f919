//! ReJIT end to end: the sample profiler's live dial changes what the methods of a
//! running `Dial.exe` compute, under CoreCLR 3.1.23.
//!
//! The program answers commands on stdin (`round` calls its methods once and prints
//! their results); the test talks to the profiler's dial socket between rounds. Each
//! test asserts the profiler attached (its dial listened) before anything else.
#![cfg(all(feature = "clr", unix))]

mod clr_support;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::Command;

use clr_support::{
    Interactive, Runtime, command_for, config_file, for_each_runtime, profile, program,
    sample_profiler,
};

/// The sample profiler's CLSID (README and `examples/profiler/`).
const SAMPLE: &str = "{8C1E2D4F-3B6A-4E59-A7C2-1F0D9B3E6A51}";

/// The configuration of every dial test: `scale` doubles `Dial.Values::Configured` at its
/// first JIT, `offset` adds 1 to `Dial.Inline::Caller` at its first JIT; both are also
/// what dial requests name.
const CONFIG: &str = r#"
[[method]]
name = "scale"
options = { filter = "Dial.Values::Configured" }

[[method]]
name = "offset"
options = { filter = "Dial.Inline::Caller" }
"#;

/// What `round` prints with [`CONFIG`] and no dial request: `Configured` doubled (40),
/// `Caller` plus one (106).
const CONFIGURED_ROUND: [&str; 4] = ["Plain 10", "Branches 40", "Configured 40", "Caller 106"];

/// A fresh directory for one test's dial socket (not created: the profiler makes it).
fn socket_in(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("dial-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir.join("dial.sock")
}

/// `Dial.exe` under the sample profiler with [`CONFIG`], its dial at `socket`, tiering
/// `tiering` and `env`; returns once the dial listens (the profiler attached).
fn start(
    rt: &Runtime,
    name: &str,
    socket: &Path,
    tiering: &str,
    env: &[(&str, &str)],
) -> Interactive {
    start_with(rt, name, CONFIG, socket, tiering, env)
}

/// [`start`] with the configuration `config`.
fn start_with(
    rt: &Runtime,
    name: &str,
    config: &str,
    socket: &Path,
    tiering: &str,
    env: &[(&str, &str)],
) -> Interactive {
    let config = config_file(&format!("dial-{name}"), config);
    let mut cmd = command_for(rt, &program("Dial"));
    profile(&mut cmd, &sample_profiler(), SAMPLE);
    cmd.env("ILREWRITE_CONFIG", &config)
        .env("ILREWRITE_DIAL", socket)
        .env("COMPlus_TieredCompilation", tiering)
        .envs(env.iter().copied());
    let program = Interactive::start(cmd);
    let line = program.wait_stderr_line("ilrewrite: dial listening on ");
    assert!(line.ends_with(&socket.display().to_string()), "{line}");
    program
}

/// A connection to a dial.
struct Dial {
    reader: BufReader<UnixStream>,
}

impl Dial {
    fn connect(socket: &Path) -> Dial {
        let stream = UnixStream::connect(socket)
            .unwrap_or_else(|e| panic!("connect to {}: {e}", socket.display()));
        Dial {
            reader: BufReader::new(stream),
        }
    }

    /// Sends `line`; the answer's lines before `ok`, or the error after `error: `.
    fn ask(&mut self, line: &str) -> Result<Vec<String>, String> {
        let stream = self.reader.get_mut();
        stream
            .write_all(format!("{line}\n").as_bytes())
            .expect("the command is sent");
        let mut lines = Vec::new();
        loop {
            let mut answer = String::new();
            let n = self.reader.read_line(&mut answer).expect("an answer");
            if n == 0 {
                return Err(format!("CLOSED: the dial closed the connection: {lines:?}"));
            }
            let answer = answer.trim_end_matches('\n');
            if answer == "ok" {
                return Ok(lines);
            }
            if let Some(error) = answer.strip_prefix("error: ") {
                return Err(error.to_owned());
            }
            lines.push(answer.to_owned());
        }
    }

    /// Sends `line`, which must succeed.
    fn ok(&mut self, line: &str) -> Vec<String> {
        self.ask(line)
            .unwrap_or_else(|e| panic!("{line:?} failed: {e}"))
    }

    /// Sends `line`, which must succeed; on failure, panics with `program`'s stderr.
    fn ok_in(&mut self, line: &str, program: &Interactive) -> Vec<String> {
        self.ask(line).unwrap_or_else(|e| {
            std::thread::sleep(std::time::Duration::from_millis(500));
            panic!(
                "{line:?} failed: {e}\nstderr of the program:\n{}",
                program.stderr_so_far()
            )
        })
    }

    /// The state line of method `name` (`Type::Method`).
    fn state_of(&mut self, name: &str) -> String {
        let lines = self.ok("state");
        let prefix = format!("method {name} ");
        let found: Vec<&String> = lines.iter().filter(|l| l.starts_with(&prefix)).collect();
        assert_eq!(found.len(), 1, "{name} in {lines:#?}");
        found[0].clone()
    }
}

/// The value `round` printed for `name`.
fn value(round: &[String], name: &str) -> i64 {
    round
        .iter()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in {round:?}"))
}

/// The main story, with tiering on and off: instrument a running method and the next
/// call computes the new result; revert and it is back; other options, other result; a
/// method with two `ret`s; a pre-ReJIT of a method never called yet, effective at its
/// first call; a method rewritten at its first JIT set to the file's own IL and back;
/// a method of a dynamic module refused by the runtime, failed with its HRESULT in the
/// state; malformed commands and refused requests change nothing.
#[test]
fn the_dial_changes_running_methods_from_their_next_call() {
    for_each_runtime(|rt| {
        for tiering in ["1", "0"] {
            let socket = socket_in(&format!("story{tiering}"));
            let mut program = start(rt, &format!("story{tiering}"), &socket, tiering, &[]);
            let mut dial = Dial::connect(&socket);
            assert_eq!(
                program.answer("round"),
                CONFIGURED_ROUND,
                "tiering {tiering}"
            );

            // `Plain()`: the overload without parameters (the only one).
            assert_eq!(
                dial.ok("instrument Dial.Values::Plain() scale factor=3"),
                ["changed 1 method(s)"]
            );
            assert_eq!(value(&program.answer("round"), "Plain"), 30);
            let state = dial.state_of("Dial.Values::Plain");
            assert!(
                state.contains("wants=scale(factor=3)") && state.contains("stage=active rejit="),
                "{state}"
            );

            dial.ok("revert Dial.Values::Plain");
            assert_eq!(program.answer("round"), CONFIGURED_ROUND);

            dial.ok("instrument Dial.Values::Plain offset addend=5");
            assert_eq!(value(&program.answer("round"), "Plain"), 15);
            dial.ok("instrument Dial.Values::Plain scale factor=-2 flags=no-inlining");
            assert_eq!(value(&program.answer("round"), "Plain"), -20);
            let state = dial.state_of("Dial.Values::Plain");
            assert!(state.contains("flags=no-inlining"), "{state}");

            dial.ok("instrument Dial.Values::Branches scale factor=3");
            assert_eq!(value(&program.answer("round"), "Branches"), 120);

            // Malformed lines and refused requests: an error each, and nothing changes.
            let before = dial.ok("state");
            for bad in [
                "",
                "instrument",
                "instrument Dial.Values::Plain",
                "instrument Dial.Values::Plain scale factor=three",
                "instrument Dial.Values::Plain scale factor=99999999999",
                "instrument Dial.Values::Plain scale nofactor=3",
                "instrument Dial.Values::Plain nosuchmethod",
                "instrument Dial.Values::NoSuchMethod scale",
                "instrument NoSuch.Type::Plain scale",
                "instrument Dial.Values::Plain(no.such.Type) scale",
                "instrument Dial.Values::Plain(int32 scale",
                "revert Dial.Values",
                "flags Dial.Values::Plain fast",
                "frobnicate Dial.Values::Plain",
                "state please",
            ] {
                assert!(dial.ask(bad).is_err(), "{bad:?} was accepted");
            }
            assert_eq!(dial.ok("state"), before);
            assert_eq!(value(&program.answer("round"), "Plain"), -20);

            // A pre-ReJIT: `Later` was never called.
            dial.ok("instrument Dial.Values::Later scale factor=4");
            assert_eq!(program.answer("later"), ["Later 120"]);
            // A pre-ReJIT of every method of a type not loaded yet (`Dial.Worker`, loaded at
            // `start`): the runtime has no MethodDesc for them, which CoreCLR 3.1's
            // RequestReJITWithInliners dereferences (a crash): a plain request is made.
            dial.ok("instrument Dial.Worker::* offset addend=0");
            assert_eq!(program.answer("start 2"), ["started 2"]);
            let stopped = program.answer("stop");
            assert!(
                stopped
                    .iter()
                    .any(|l| l.starts_with("seen Plain -20 count ")),
                "{stopped:?}"
            );
            dial.ok("revert Dial.Worker::*");

            // Rewritten at its first JIT (doubled): the file's own IL, then back.
            dial.ok("original Dial.Values::Configured");
            assert_eq!(value(&program.answer("round"), "Configured"), 20);
            let state = dial.state_of("Dial.Values::Configured");
            assert!(state.contains("wants=file default=configured"), "{state}");
            dial.ok("revert Dial.Values::Configured");
            assert_eq!(value(&program.answer("round"), "Configured"), 40);

            // A dynamic module: the runtime refuses, the state says so.
            assert_eq!(program.answer("dynamic"), ["Emitted 7"]);
            dial.ok("instrument Dyn.Emitted::Value scale");
            let state = dial.state_of("Dyn.Emitted::Value");
            assert!(
                state.contains("stage=failed at=request status=0x8013137a"),
                "{state}"
            );
            assert_eq!(program.answer("dynamic"), ["Emitted 7"]);

            dial.ok("revert Dial.Values::*");
            assert_eq!(program.answer("round"), CONFIGURED_ROUND);
            drop(dial);
            let out = program.finish();
            assert_eq!(out.status.code(), Some(29), "{}", out.stderr);
            let rejit = clr_support::named_counts(&out.stderr, "rejit");
            let count = |name: &str| rejit.iter().find(|(n, _)| n == name).map(|(_, v)| *v);
            assert_eq!(count("unanswered"), Some(0), "{}", out.stderr);
            assert_eq!(count("fallbacks"), Some(0), "{}", out.stderr);
            assert!(count("errors") >= Some(1), "{}", out.stderr);
            if tiering == "0" && rt.major() < 5 {
                // `Later` was compiled at its first call, from what the dial wanted.
                // (.NET 8 never compiles a pre-ReJIT'd method's default IL, with tiering
                // off too: its first code is the version, from GetReJITParameters.)
                assert!(count("first-jit") >= Some(1), "{}", out.stderr);
            }
        }
    })
}

/// A small callee the JIT inlined into a hot caller, changed through the dial: the
/// caller is recompiled and sees the new result, with its own instrumentation (`offset`
/// from the configuration) kept. The control: with the callers left alone, the caller
/// keeps the copy it inlined, which shows that it was inlined; then the caller given
/// the flag `no-inlining` through the dial calls the changed callee.
#[test]
fn callers_that_inlined_a_changed_method_see_it_and_keep_their_instrumentation() {
    for_each_runtime(|rt| {
        for (callers, expected) in [("recompile", 116), ("leave", 106)] {
            let socket = socket_in(&format!("inline-{callers}"));
            let mut program = start(
                rt,
                &format!("inline-{callers}"),
                &socket,
                "0",
                &[("ILREWRITE_DIAL_CALLERS", callers)],
            );
            let mut dial = Dial::connect(&socket);
            assert_eq!(program.answer("hot 1000"), ["hot 1000 sum 106000"]);
            assert_eq!(value(&program.answer("round"), "Caller"), 106);
            dial.ok("instrument Dial.Inline::Callee scale factor=3");
            assert_eq!(
                value(&program.answer("round"), "Caller"),
                expected,
                "callers {callers}"
            );
            if callers == "leave" {
                // Code-generation flags take effect: the caller recompiled without inlining
                // (its own instrumentation kept) calls the changed callee.
                dial.ok("flags Dial.Inline::Caller no-inlining");
                assert_eq!(value(&program.answer("round"), "Caller"), 116);
                let state = dial.state_of("Dial.Inline::Caller");
                assert!(
                    state.contains("wants=configured flags=no-inlining default=configured"),
                    "{state}"
                );
            }
            let out = program.finish();
            assert_eq!(out.status.code(), Some(29), "{}", out.stderr);
        }
    })
}

/// 8 threads call the instrumented methods while 500 instrument/revert cycles run
/// through the dial, with tiering on and off: no crash, and every result one that a
/// version active during the call gives (`Plain` 10 or 30, `Caller` 106 or 116), both
/// seen.
#[test]
fn eight_threads_call_while_the_dial_changes_methods_500_times() {
    for_each_runtime(|rt| {
        for tiering in ["1", "0"] {
            let socket = socket_in(&format!("threads{tiering}"));
            let mut program = start(rt, &format!("threads{tiering}"), &socket, tiering, &[]);
            let mut dial = Dial::connect(&socket);
            assert_eq!(program.answer("start 8"), ["started 8"]);
            for _ in 0..500 {
                dial.ok_in("instrument Dial.Values::Plain scale factor=3", &program);
                dial.ok_in("instrument Dial.Inline::Callee scale factor=3", &program);
                dial.ok_in("revert Dial.Values::Plain", &program);
                dial.ok_in("revert Dial.Inline::Callee", &program);
            }
            let stopped = program.answer("stop");
            let calls: u64 = stopped[0]
                .strip_prefix("calls ")
                .and_then(|c| c.parse().ok())
                .unwrap_or_else(|| panic!("{stopped:?}"));
            assert!(calls > 0);
            let seen: Vec<&str> = stopped[1..]
                .iter()
                .map(|l| {
                    let (value, _) = l.rsplit_once(" count ").expect("seen ... count N");
                    value.strip_prefix("seen ").expect("seen ...")
                })
                .collect();
            for value in &seen {
                assert!(
                    ["Caller 106", "Caller 116", "Plain 10", "Plain 30"].contains(value),
                    "tiering {tiering}: {value} was never a version's result: {stopped:?}"
                );
            }
            assert!(seen.len() == 4, "tiering {tiering}: {stopped:?}");
            eprintln!("tiering {tiering}: {stopped:?}");
            let out = program.finish();
            assert_eq!(out.status.code(), Some(29), "{}", out.stderr);
        }
    })
}

/// Every method of two framework types (`System.String`, used by every line the program
/// prints, and the generic `Dictionary<TKey, TValue>`, whose instantiations share code)
/// changed by one command each while the program runs: each method's next call runs a
/// version with a `nop` at its entry, built from its pristine IL and verified; the
/// program computes the same results throughout, and the file's IL comes back with one
/// more command each.
#[test]
fn every_method_of_framework_types_changes_at_once() {
    for_each_runtime(|rt| {
        let socket = socket_in("framework");
        // `nop` (a `nop` at a method's entry) hosted for dial requests only: its filter
        // selects no method at first JIT.
        let config = format!(
            "{CONFIG}\n[[method]]\nname = \"nop\"\noptions = {{ filter = \"no method is named so\" }}\n"
        );
        let mut program = start_with(rt, "framework", &config, &socket, "1", &[]);
        let mut dial = Dial::connect(&socket);
        assert_eq!(program.answer("round"), CONFIGURED_ROUND);
        // One overload by its parameter list (a space after the comma: one word still);
        // a list no overload has selects nothing.
        assert_eq!(
            dial.ok("instrument System.String::Concat(string, string) nop"),
            ["changed 1 method(s)"]
        );
        assert!(
            dial.ask("instrument System.String::Concat(string, no.such.Type) nop")
                .is_err()
        );
        let mut total = 0;
        for selector in [
            "System.String::*",
            "System.Collections.Generic.Dictionary`2::*",
        ] {
            let answer = dial.ok(&format!("instrument {selector} nop"));
            let count: usize = answer[0]
                .strip_prefix("changed ")
                .and_then(|rest| rest.split(' ').next())
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("{answer:?}"));
            assert!(count >= 50, "{selector}: {answer:?}");
            total += count;
        }
        for _ in 0..3 {
            assert_eq!(program.answer("round"), CONFIGURED_ROUND);
        }
        assert_eq!(program.answer("later"), ["Later 30"]);
        assert_eq!(program.answer("dynamic"), ["Emitted 7"]);
        assert_eq!(program.answer("hot 1000"), ["hot 1000 sum 106000"]);
        let state = dial.ok("state");
        let listed = state
            .iter()
            .filter(|l| {
                l.starts_with("method System.String::")
                    || l.starts_with("method System.Collections.Generic.Dictionary`2::")
            })
            .count();
        assert_eq!(listed, total, "{state:#?}");
        let active = state.iter().filter(|l| l.contains("stage=active")).count();
        assert!(active >= 10, "few versions ran: {state:#?}");
        eprintln!("{total} methods changed, {active} of them called since (active versions)");
        assert!(
            state
                .iter()
                .all(|l| !l.contains("failed") && !l.contains("not built")),
            "{state:#?}"
        );
        dial.ok("original System.String::*");
        dial.ok("original System.Collections.Generic.Dictionary`2::*");
        assert_eq!(program.answer("round"), CONFIGURED_ROUND);
        drop(dial);
        let out = program.finish();
        assert_eq!(out.status.code(), Some(29), "{}", out.stderr);
        let rejit = clr_support::named_counts(&out.stderr, "rejit");
        let count = |name: &str| rejit.iter().find(|(n, _)| n == name).map(|(_, v)| *v);
        assert_eq!(count("fallbacks"), Some(0), "{}", out.stderr);
        assert_eq!(count("unanswered"), Some(0), "{}", out.stderr);
        assert!(count("parameters") >= Some(10), "{}", out.stderr);
    })
}

/// The reload policy at the limit: `Unload.exe` loads and unloads its plugin 3,000
/// times (a new module each time, often at an address an unloaded one had). Once a
/// dial request reached a method of one load, every later load's method is compiled
/// from what was wanted at its first JIT (the machine's template for the assembly),
/// and its records go with its module: the program runs unchanged, and the report
/// counts a first JIT from the wish per later load.
#[test]
fn what_was_wanted_follows_an_assembly_through_3000_reloads() {
    for_each_runtime(|rt| {
        const CYCLES: u64 = 3_000;
        let socket = socket_in("reload");
        let config = format!(
            "{CONFIG}\n[[method]]\nname = \"nop\"\noptions = {{ filter = \"no method is named so\" }}\n"
        );
        let config = config_file("dial-reload", &config);
        let mut cmd = command_for(rt, &program("Unload"));
        profile(&mut cmd, &sample_profiler(), SAMPLE);
        cmd.arg(CYCLES.to_string())
            .env("ILREWRITE_CONFIG", &config)
            .env("ILREWRITE_DIAL", &socket)
            .env("COMPlus_TieredCompilation", "0");
        let program = Interactive::start(cmd);
        program.wait_stderr_line("ilrewrite: dial listening on ");
        let mut dial = Dial::connect(&socket);
        // Until a load of the plugin is there to be selected.
        let started = std::time::Instant::now();
        loop {
            match dial.ask("instrument UnloadPlugin.Plugin::Square nop") {
                Ok(_) => break,
                Err(e) if e.starts_with("no loaded module") => {
                    assert!(
                        started.elapsed() < std::time::Duration::from_secs(30),
                        "the plugin never loaded: {}",
                        program.stderr_so_far()
                    );
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                Err(e) => panic!("{e}\n{}", program.stderr_so_far()),
            }
        }
        drop(dial);
        let out = program.finish();
        assert_eq!(out.status.code(), Some(25), "{}", out.stderr);
        let rejit = clr_support::named_counts(&out.stderr, "rejit");
        let count = |name: &str| rejit.iter().find(|(n, _)| n == name).map_or(0, |(_, v)| *v);
        eprintln!("{rejit:?}");
        assert!(count("first-jit") >= CYCLES / 2, "{}", out.stderr);
        assert!(count("first-jit") <= CYCLES, "{}", out.stderr);
        assert_eq!(count("fallbacks"), 0, "{}", out.stderr);
        assert_eq!(count("unanswered"), 0, "{}", out.stderr);
    })
}

/// A version whose IL cannot be built (an instrumentation method that errs on `Plain`
/// and panics on `Branches`, `faulty`) gets the IL the method ran before: the runtime
/// is never failed, the program keeps computing the previous results, and the state
/// says the wanted IL was not built. Where another edit stands (`Configured`: its
/// configured `scale` and `faulty`), only the failing one is rolled back. Afterwards
/// the same methods take other requests as usual.
#[test]
fn a_version_that_cannot_be_built_keeps_the_previous_il() {
    for_each_runtime(|rt| {
        for tiering in ["1", "0"] {
            let name = format!("faulty{tiering}");
            let socket = socket_in(&name);
            let config = format!(
                "{CONFIG}\n[[method]]\nname = \"faulty\"\npriority = -1\noptions = {{ filter = \"no method is named so\", error_on = \"Plain\", panic_on = \"Branches\" }}\n"
            );
            let mut program = start_with(rt, &name, &config, &socket, tiering, &[]);
            let mut dial = Dial::connect(&socket);
            assert_eq!(program.answer("round"), CONFIGURED_ROUND);
            // A request's options replace the configured ones: they say where faulty fails.
            dial.ok("instrument Dial.Values::Plain faulty error_on=Plain");
            dial.ok("instrument Dial.Values::Branches faulty panic_on=Branches");
            dial.ok("instrument Dial.Values::Configured faulty");
            let round = program.answer("round");
            assert_eq!(
                round,
                ["Plain 10", "Branches 40", "Configured 1040", "Caller 106"],
                "tiering {tiering}"
            );
            for (method, option) in [
                ("Plain", "error_on=Plain"),
                ("Branches", "panic_on=Branches"),
            ] {
                let state = dial.state_of(&format!("Dial.Values::{method}"));
                assert!(
                    state.contains(&format!("wants=faulty({option}) default=file stage=active"))
                        && state.contains("(file); wanted IL not built, status=0x80004005"),
                    "{state}"
                );
            }
            let state = dial.state_of("Dial.Values::Configured");
            assert!(
                state.contains("stage=active") && !state.contains("not built"),
                "{state}"
            );
            // Still the same methods, other requests.
            dial.ok("instrument Dial.Values::Plain scale factor=3");
            dial.ok("revert Dial.Values::Branches");
            dial.ok("revert Dial.Values::Configured");
            assert_eq!(
                program.answer("round"),
                ["Plain 30", "Branches 40", "Configured 40", "Caller 106"]
            );
            drop(dial);
            let out = program.finish();
            assert_eq!(out.status.code(), Some(29), "{}", out.stderr);
            let rejit = clr_support::named_counts(&out.stderr, "rejit");
            let count = |name: &str| rejit.iter().find(|(n, _)| n == name).map_or(0, |(_, v)| *v);
            assert_eq!(count("fallbacks"), 2, "{}", out.stderr);
            assert_eq!(count("unanswered"), 0, "{}", out.stderr);
            assert!(
                out.stderr.contains("faulty panics on"),
                "the panic is logged: {}",
                out.stderr
            );
        }
    })
}

/// A request whose instrumentation method's edit changes nothing (`listener` edits no
/// method) is carried out and says so: the method keeps computing what the
/// configuration makes it compute, the state names the instrumentation method that
/// changed nothing, and the log says it once. A later request that changes the method
/// clears it.
#[test]
fn a_request_whose_edit_changes_nothing_says_so() {
    for_each_runtime(|rt| {
        let socket = socket_in("idle");
        let config = format!("{CONFIG}\n[[method]]\nname = \"listener\"\n");
        let mut program = start_with(rt, "idle", &config, &socket, "0", &[]);
        let mut dial = Dial::connect(&socket);
        assert_eq!(program.answer("round"), CONFIGURED_ROUND);
        dial.ok_in("instrument Dial.Values::Plain listener", &program);
        assert_eq!(program.answer("round"), CONFIGURED_ROUND);
        let state = dial.state_of("Dial.Values::Plain");
        assert!(
            state.contains("stage=active") && state.ends_with("; listener changed nothing"),
            "{state}"
        );
        dial.ok_in("instrument Dial.Values::Plain scale factor=3", &program);
        assert_eq!(program.answer("round")[0], "Plain 30");
        let state = dial.state_of("Dial.Values::Plain");
        assert!(!state.contains("changed nothing"), "{state}");
        drop(dial);
        let out = program.finish();
        assert_eq!(out.status.code(), Some(29), "{}", out.stderr);
        let said = out
            .stderr
            .matches("instrumentation method listener changed nothing in method")
            .count();
        assert_eq!(said, 1, "{}", out.stderr);
    })
}

/// A dial directory open to others is refused at start-up: the profiler runs nothing
/// (fail closed), and the program computes its own results.
#[test]
fn a_dial_directory_open_to_others_is_refused() {
    for_each_runtime(|rt| {
        for mode in [0o777, 0o1777, 0o750] {
            let socket = socket_in(&format!("open{mode:o}"));
            let dir = socket.parent().expect("a directory");
            std::fs::create_dir_all(dir).expect("the directory is made");
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode)).expect("chmod");
            let config = config_file("dial-open", CONFIG);
            let mut cmd = command_for(rt, &program("Dial"));
            profile(&mut cmd, &sample_profiler(), SAMPLE);
            cmd.env("ILREWRITE_CONFIG", &config)
                .env("ILREWRITE_DIAL", &socket);
            let mut program = Interactive::start(cmd);
            assert_eq!(
                program.answer("round"),
                ["Plain 10", "Branches 40", "Configured 20", "Caller 105"]
            );
            let out = program.finish();
            assert_eq!(out.status.code(), Some(29));
            assert!(
                out.stderr.contains("ilrewrite: the dial cannot listen: ")
                    && out
                        .stderr
                        .contains("ilrewrite: no instrumentation method runs"),
                "mode {mode:o}: {}",
                out.stderr
            );
            assert!(!socket.exists());
        }
    })
}

/// Another user cannot use the dial: when the tests run as root, the client
/// (`ilrewrite dial`, built by `clr_support::build_cli`) runs as `nobody` (`setpriv`);
/// first through the directory as the profiler made it (mode 0700: refused by the file
/// system, exit status 3: cannot connect), then with the directory and socket opened to
/// everyone (refused by the peer check, exit status 1). Elsewhere the peer check's unit
/// tests stand for it.
#[test]
fn another_user_is_refused() {
    for_each_runtime(|rt| {
        let uid = std::fs::metadata("/proc/self").map(|m| std::os::unix::fs::MetadataExt::uid(&m));
        let setpriv = Path::new("/usr/bin/setpriv");
        if uid.ok() != Some(0) || !setpriv.exists() {
            eprintln!("not root or no setpriv: the peer check's unit tests cover this");
            return;
        }
        let client = clr_support::build_cli();
        let socket = socket_in("foreign");
        let mut program = start(rt, "foreign", &socket, "1", &[]);
        let as_nobody = |command: &str| {
            let mut cmd = Command::new(setpriv);
            cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
                .arg(&client)
                .arg("dial")
                .arg(&socket)
                .arg(command);
            cmd.output().expect("the client runs")
        };
        // Before, and after each attempt: nothing changed.
        let instrument = "instrument Dial.Values::Plain scale factor=3";
        let out = as_nobody(instrument);
        assert_eq!(out.status.code(), Some(3), "{out:?}");
        assert_eq!(value(&program.answer("round"), "Plain"), 10);
        let dir = socket.parent().expect("a directory");
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o666)).expect("chmod");
        let out = as_nobody(instrument);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "{out:?}");
        assert!(
            stdout.starts_with("error: refused: connection from uid 65534"),
            "{stdout}"
        );
        assert_eq!(value(&program.answer("round"), "Plain"), 10);
        // The owner still can.
        Dial::connect(&socket).ok(instrument);
        assert_eq!(value(&program.answer("round"), "Plain"), 30);
        let out = program.finish();
        assert_eq!(out.status.code(), Some(29));
    })
}

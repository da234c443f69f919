//! Instrumentation methods added and removed while the program runs (issue 33): the
//! live dial's `add SELECTOR LIBRARY PRIORITY [KEY=VALUE ...]` loads a C library's
//! instrumentation method into `examples/engine.rs` hosting the built-in `scale`, and
//! `remove METHOD` takes it out, on `tests/programs/bin/Dial.exe` (driven through stdin:
//! `round` calls `Dial.Values::Plain` (10), `Branches` (40, two `ret`s), `Configured`
//! (20) and `Dial.Inline::Caller` (105); `later` calls `Dial.Values::Later` (30), never
//! compiled before its first `later`).
#![cfg(all(feature = "clr", unix))]

mod clr_support;

use clr_support::components::{ENGINE, engine, library, toml_str};
use clr_support::dial::{DialClient, socket_in};
use clr_support::{
    Interactive, Runtime, command_for, config_file, for_each_runtime, profile, program,
};

/// The built-in `scale` doubles `Dial.Values::Configured` (priority 0).
const CONFIG: &str = "[[method]]\nname = \"scale\"\noptions = { filter = \"Dial.Values::Configured\", factor = 2 }\n";

/// `Dial.exe` under the engine with [`CONFIG`], its dial at `socket`, tiering
/// `tiering`; returns once the dial listens.
fn start(rt: &Runtime, name: &str, socket: &std::path::Path, tiering: &str) -> Interactive {
    let config = config_file(&format!("live-{name}"), CONFIG);
    let mut cmd = command_for(rt, &program("Dial"));
    profile(&mut cmd, engine(), ENGINE);
    cmd.env("ENGINE_CONFIG", &config)
        .env("ENGINE_DIAL", socket)
        .env("COMPlus_TieredCompilation", tiering);
    let program = Interactive::start(cmd);
    program.wait_stderr_line("ilrewrite: dial listening on ");
    program
}

/// Proves that a library added while the program runs edits at each method's next call,
/// in priority order with the configured `scale` (`offset_c` at 10 adds before `scale`
/// at 0 doubles: `Configured` (20 + 1) * 2 = 42), reaches a method first compiled after
/// it was added (`Later` 31), and that once removed its edits are gone at the next call
/// (every value back, `Configured` 40 by `scale` alone), also for the method it reached
/// at its first compilation. Adding a name that runs, removing one never added, a
/// library that does not load and one that subscribes to callbacks (which the runtime
/// would never deliver to it) are refused and change nothing; the same library can be
/// added again after its removal. Both runtimes, tiering on and off.
#[test]
fn a_library_added_while_the_program_runs_edits_from_the_next_call_and_removed_is_gone() {
    let offset = toml_str(&library("offset"));
    let offset = offset.trim_matches('"').to_owned();
    for_each_runtime(|rt| {
        for tiering in ["1", "0"] {
            let name = format!("add{tiering}");
            let socket = socket_in(&name);
            let mut program = start(rt, &name, &socket, tiering);
            let mut dial = DialClient::connect(&socket);
            assert_eq!(
                program.answer("round"),
                ["Plain 10", "Branches 40", "Configured 40", "Caller 105"],
            );
            let add = format!("add Dial.Values::* {offset} 10 filter=Dial.Values:: addend=1");
            let added = dial
                .ask(&add)
                .unwrap_or_else(|e| panic!("{e}\n{}", program.stderr_so_far()));
            assert_eq!(added.len(), 1, "{added:?}");
            assert!(added[0].starts_with("added; compiled again "), "{added:?}");
            let answer = program.answer("round");
            assert_eq!(
                answer,
                ["Plain 11", "Branches 41", "Configured 42", "Caller 105"],
                "{}",
                program.stderr_so_far()
            );
            let answer = program.answer("later");
            assert_eq!(answer, ["Later 31"], "{}", program.stderr_so_far());
            // Refused, nothing changed.
            let again = dial.ask(&add).expect_err("a name that runs");
            assert!(again.contains("runs already"), "{again}");
            let unknown = dial.ask("remove nothing_added").expect_err("never added");
            assert!(unknown.contains("was added"), "{unknown}");
            let missing = dial
                .ask("add Dial.Values::* /no/such/libx.so 1")
                .expect_err("no library");
            assert!(missing.contains("/no/such/libx.so"), "{missing}");
            // Callbacks cannot be added once the runtime runs: refused, not ignored.
            let watcher = toml_str(&library("watcher"));
            let subscribes = dial
                .ask(&format!(
                    "add Dial.Values::* {} 1",
                    watcher.trim_matches('"')
                ))
                .expect_err("a library with callbacks");
            assert!(
                subscribes
                    .contains("cannot be added while the program runs: it subscribes to callbacks"),
                "{subscribes}"
            );
            let removed = dial.ok("remove offset_c");
            assert!(
                removed[0].starts_with("removed; compiled again "),
                "{removed:?}"
            );
            let answer = program.answer("round");
            assert_eq!(
                answer,
                ["Plain 10", "Branches 40", "Configured 40", "Caller 105"],
                "{}",
                program.stderr_so_far()
            );
            let answer = program.answer("later");
            assert_eq!(answer, ["Later 30"], "{}", program.stderr_so_far());
            // Added again, with another addend.
            dial.ok(&format!(
                "add Dial.Values::* {offset} 10 filter=Dial.Values:: addend=5"
            ));
            let answer = program.answer("round");
            assert_eq!(
                answer,
                ["Plain 15", "Branches 45", "Configured 50", "Caller 105"],
                "{}",
                program.stderr_so_far()
            );
            drop(dial);
            let out = program.finish();
            assert_eq!(out.code(), 29, "{}", out.stderr);
        }
    });
}

/// Proves that adding and removing a library while 32 threads call the methods it
/// edits in a loop changes nothing but those methods' results, and only to what the
/// library computes: every result the threads saw of `Plain` is 10 (before the add and
/// after the removal) or 11 (while added), both are seen, `Caller` (not selected) is
/// always 105, and the program ends normally. Both runtimes, tiering on (the loops'
/// methods reach tier 1 while the library comes and goes).
#[test]
fn adding_and_removing_while_32_threads_call_changes_only_the_results() {
    let offset = toml_str(&library("offset"));
    let offset = offset.trim_matches('"').to_owned();
    for_each_runtime(|rt| {
        let socket = socket_in("threads");
        let mut program = start(rt, "threads", &socket, "1");
        let mut dial = DialClient::connect(&socket);
        assert_eq!(program.answer("start 32"), ["started 32"]);
        let add = format!("add Dial.Values::* {offset} 10 filter=Dial.Values:: addend=1");
        dial.ask(&add)
            .unwrap_or_else(|e| panic!("{e}\n{}", program.stderr_so_far()));
        // Let the threads run with it a while (rounds are answered in between).
        for _ in 0..20 {
            let answer = program.answer("round");
            assert_eq!(answer[0], "Plain 11", "{}", program.stderr_so_far());
        }
        dial.ok("remove offset_c");
        for _ in 0..20 {
            let answer = program.answer("round");
            assert_eq!(answer[0], "Plain 10", "{}", program.stderr_so_far());
        }
        let stopped = program.answer("stop");
        let seen: Vec<&String> = stopped.iter().filter(|l| l.starts_with("seen ")).collect();
        let values = |name: &str| -> Vec<i64> {
            seen.iter()
                .filter_map(|l| l.strip_prefix(&format!("seen {name} ")))
                .map(|rest| rest.split(' ').next().unwrap().parse().unwrap())
                .collect()
        };
        assert_eq!(values("Plain"), [10, 11], "{stopped:?}");
        assert_eq!(values("Caller"), [105], "{stopped:?}");
        drop(dial);
        let out = program.finish();
        assert_eq!(out.code(), 29, "{}", out.stderr);
    });
}

//! Attaching to a running process (issue 34), end to end on both runtimes: `Dial.exe`
//! started unprofiled and driven through stdin, `examples/engine.rs` attached through
//! the diagnostics IPC (`ilrewrite::diagnostics`) with its configuration in the client
//! data (`ClientData`), its live dial then used on the running program.
#![cfg(all(feature = "attach", feature = "clr", target_os = "linux"))]

mod clr_support;

use std::path::PathBuf;
use std::time::Duration;

use clr_support::components::{ENGINE, engine, library, toml_str};
use clr_support::dial::{DialClient, socket_in};
use clr_support::{
    DIAL_ROUND, Interactive, Runtime, command_for, config_file, for_each_runtime, program,
};
use ilrewrite::clr::ClientData;
use ilrewrite::diagnostics::{Guid, Process, RuntimeError};

/// `round`'s answer with `Plain` returning `plain`.
fn round_with(plain: i32) -> Vec<String> {
    DIAL_ROUND
        .iter()
        .map(|(n, v)| match *n {
            "Plain" => format!("{n} {plain}"),
            _ => format!("{n} {v}"),
        })
        .collect()
}

/// `Dial.exe` on `rt`, unprofiled, after `Plain` ran `rounds` times (tiering on: its
/// code promoted as in a long-running process).
fn start_dial(rt: &Runtime, rounds: usize) -> Interactive {
    let mut dial = Interactive::start(command_for(rt, &program("Dial")));
    for _ in 0..rounds {
        assert_eq!(dial.answer("round"), round_with(10));
    }
    dial
}

/// A configuration file: `scale` triples `Dial.Values::Plain`; `extra` appended.
fn config(name: &str, extra: &str) -> PathBuf {
    let text = format!(
        "[[method]]\nname = \"scale\"\noptions = {{ filter = \"Dial.Values::Plain\", factor = 3 }}\n{extra}"
    );
    config_file(&format!("attach-{name}"), &text)
}

/// Attaches the engine to `pid` with `data`.
fn attach(pid: u32, data: &ClientData) -> Result<(), ilrewrite::diagnostics::DiagnosticsError> {
    let clsid = Guid::parse(ENGINE).expect("the engine's CLSID");
    Process::open(pid)?
        .with_timeout(Duration::from_secs(30))
        .attach_profiler(clsid, engine(), &data.encode(), Duration::from_secs(10))
}

/// Proves attach on a program that has run for a while: `Dial.Values::Plain`, called
/// 200 times before (tiered up), returns 30 from its next call after the engine attached
/// with `scale` (factor 3) in its configuration; the other methods are unchanged. The
/// dial named in the client data then puts it back (`original`: 10 again); `detach`
/// reverts everything and is refused by the runtime
/// (`CORPROF_E_IRREVERSIBLE_INSTRUMENTATION_PRESENT`: ReJIT was enabled), the profiler
/// staying loaded and inert; a second attach is refused (a profiler is loaded). The
/// program's other output is unchanged and it exits with its own code.
#[test]
fn an_attached_engine_changes_a_running_method_and_its_dial_reverts_it() {
    for_each_runtime(|rt| {
        let mut dial = start_dial(rt, 200);
        let pid = dial.id();
        let socket = socket_in(&format!("attach{}", rt.major()));
        let data = ClientData {
            config: Some(config("scale", "")),
            dial: Some(socket.clone()),
        };
        attach(pid, &data).unwrap_or_else(|e| panic!("{e}\n{}", dial.stderr_so_far()));
        let err = dial.wait_stderr_line("ilrewrite: caught up at attach:");
        assert!(err.contains("1 to re-JIT-compile (requested)"), "{err}");
        assert_eq!(
            dial.answer("round"),
            round_with(30),
            "{}",
            dial.stderr_so_far()
        );
        let mut client = DialClient::connect(&socket);
        client.ok("original Dial.Values::Plain");
        assert_eq!(
            dial.answer("round"),
            round_with(10),
            "{}",
            dial.stderr_so_far()
        );
        client.ok("revert Dial.Values::Plain");
        assert_eq!(
            dial.answer("round"),
            round_with(30),
            "{}",
            dial.stderr_so_far()
        );
        let refused = client
            .ask("detach")
            .expect_err("the runtime refuses detach");
        assert!(refused.contains("0x80131370"), "{refused}");
        assert_eq!(
            dial.answer("round"),
            round_with(10),
            "{}",
            dial.stderr_so_far()
        );
        let again = attach(pid, &data).expect_err("a profiler is loaded already");
        assert_eq!(
            again.runtime_error(),
            Some(RuntimeError::ProfilerAlreadyActive)
        );
        assert_eq!(dial.answer("round"), round_with(10));
        drop(client);
        let out = dial.finish();
        assert_eq!(out.code(), clr_support::exit_code("Dial"), "{}", out.stderr);
        assert!(
            out.stderr
                .contains("ilrewrite: attached to a running process"),
            "{}",
            out.stderr
        );
    });
}

/// Proves that what only start-up allows is refused at attach before the runtime is
/// asked, with a line naming why, and the program unaffected (and still attachable):
/// an instrumentation method asking for object-allocation events (`allocations_c`), a
/// configuration disabling ReadyToRun, client data that is not `key=value`, and no
/// configuration at all.
#[test]
fn what_only_start_up_allows_is_refused_at_attach() {
    let allocations = format!(
        "[[method]]\nname = \"allocations_c\"\nlibrary = {}\n",
        toml_str(&library("allocations"))
    );
    for_each_runtime(|rt| {
        let mut dial = start_dial(rt, 3);
        let pid = dial.id();
        let cases: [(Vec<u8>, &str); 4] = [
            (
                ClientData {
                    config: Some(config("events", &allocations)),
                    dial: None,
                }
                .encode(),
                "MONITOR_OBJECT_ALLOCATED",
            ),
            (
                ClientData {
                    config: Some(config("r2r", "[manager]\nready_to_run = \"disable\"\n")),
                    dial: None,
                }
                .encode(),
                "ready_to_run = \"disable\"",
            ),
            (
                b"this is not key=value\nat all".to_vec(),
                "unknown client data key",
            ),
            (Vec::new(), "engine: no configuration"),
        ];
        for (data, says) in &cases {
            let clsid = Guid::parse(ENGINE).unwrap();
            let refused = Process::open(pid)
                .unwrap()
                .with_timeout(Duration::from_secs(30))
                .attach_profiler(clsid, engine(), data, Duration::from_secs(10))
                .expect_err("refused");
            assert_eq!(
                refused.runtime_error(),
                Some(RuntimeError::UnsupportedForAttaching),
                "{refused}"
            );
            let err = dial.stderr_so_far();
            assert!(err.contains(says), "{says:?} not in:\n{err}");
            assert_eq!(dial.answer("round"), round_with(10));
        }
        // Still attachable.
        let data = ClientData {
            config: Some(config("after", "")),
            dial: None,
        };
        attach(pid, &data).unwrap_or_else(|e| panic!("{e}\n{}", dial.stderr_so_far()));
        dial.wait_stderr_line("ilrewrite: caught up at attach:");
        assert_eq!(dial.answer("round"), round_with(30));
        let out = dial.finish();
        assert_eq!(out.code(), clr_support::exit_code("Dial"), "{}", out.stderr);
    });
}

/// Proves the command-line tool's path through the same steps: `ilrewrite ps` lists the
/// running `Dial.exe` with its runtime version; `ilrewrite attach PID --profiler ENGINE
/// --clsid ... --config FILE --dial SOCKET` attaches the engine (status 0), whose
/// configuration and dial come from the client data the tool wrote; `Plain` returns 30
/// from its next call; `ilrewrite dial SOCKET original Dial.Values::Plain` puts it back;
/// a second `ilrewrite attach` is refused (status 1, a profiler is loaded) and the
/// program exits with its own code.
#[test]
fn the_ilrewrite_command_lists_attaches_and_dials() {
    let cli = clr_support::build_cli();
    for_each_runtime(|rt| {
        let mut dial = start_dial(rt, 50);
        let pid = dial.id().to_string();
        let ps = std::process::Command::new(&cli).arg("ps").output().unwrap();
        let listed = String::from_utf8_lossy(&ps.stdout).into_owned();
        let line = listed
            .lines()
            .find(|l| l.split_whitespace().next() == Some(pid.as_str()))
            .unwrap_or_else(|| panic!("{pid} not listed:\n{listed}"));
        assert!(line.contains(rt.version()), "{line}");
        assert!(line.contains("Dial.exe"), "{line}");
        let socket = socket_in(&format!("cli{}", rt.major()));
        let config = config("cli", "");
        let attach = |config: &PathBuf, socket: &PathBuf| {
            std::process::Command::new(&cli)
                .args(["attach", &pid, "--clsid", ENGINE, "--profiler"])
                .arg(engine())
                .arg("--config")
                .arg(config)
                .arg("--dial")
                .arg(socket)
                .output()
                .unwrap()
        };
        let attached = attach(&config, &socket);
        assert_eq!(
            attached.status.code(),
            Some(0),
            "{}\n{}",
            String::from_utf8_lossy(&attached.stderr),
            dial.stderr_so_far()
        );
        assert_eq!(
            dial.answer("round"),
            round_with(30),
            "{}",
            dial.stderr_so_far()
        );
        let original = std::process::Command::new(&cli)
            .arg("dial")
            .arg(&socket)
            .arg("original Dial.Values::Plain")
            .output()
            .unwrap();
        assert_eq!(original.status.code(), Some(0), "{original:?}");
        assert_eq!(dial.answer("round"), round_with(10));
        let again = attach(&config, &socket);
        assert_eq!(again.status.code(), Some(1), "{again:?}");
        assert!(
            String::from_utf8_lossy(&again.stderr).contains("0x8013136A"),
            "{again:?}"
        );
        let out = dial.finish();
        assert_eq!(out.code(), clr_support::exit_code("Dial"), "{}", out.stderr);
    });
}

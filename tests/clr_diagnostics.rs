//! The diagnostics-IPC client against real runtimes, on each runtime the tests run on:
//! `Dial.exe` waits on its stdin while the client lists it, asks what it is, and asks it
//! to load profilers that it refuses; it must keep running and answering. A pid that
//! does not exist, a process that is not .NET and (as root, with `setpriv`) another
//! user's .NET process give their typed errors.
#![cfg(all(feature = "attach", target_os = "linux"))]

mod clr_support;

use clr_support::{DIAL_ROUND, Interactive, Runtime, command_for, for_each_runtime, program};
use ilrewrite::diagnostics::{
    DiagnosticsError, Guid, InfoSource, Process, RuntimeError, RuntimeVersion,
};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// `round`'s answer as `Dial.exe` prints it.
fn round_lines() -> Vec<String> {
    DIAL_ROUND.iter().map(|(n, v)| format!("{n} {v}")).collect()
}

/// The CLSID of `examples/engine.rs`.
const ENGINE_CLSID: &str = "{5B0E6A3C-8D21-4F7A-B6C9-2E1D4A7F3C85}";

/// Starts `Dial.exe` on `rt` and waits until it answers (its runtime, and so its
/// diagnostics server, is up).
fn start_dial(rt: &Runtime) -> Interactive {
    let mut dial = Interactive::start(command_for(rt, &program("Dial")));
    assert_eq!(dial.answer("round"), round_lines());
    dial
}

#[test]
fn list_info_and_refused_attaches_on_a_running_program() {
    // Built before any program starts, not while one waits.
    #[cfg(feature = "clr")]
    let engine = clr_support::build_example_cdylib("engine", &["clr"]);
    for_each_runtime(|rt| {
        let mut dial = start_dial(rt);
        let pid = dial.id();

        // Listed, with its info.
        let listed = Process::list().expect("the temporary directory is listed");
        let entry = listed
            .iter()
            .find(|e| e.process.pid() == pid)
            .unwrap_or_else(|| panic!("pid {pid} is not among {listed:#?}"));
        let listed_info = entry.info.as_ref().expect("the listed process answered");

        // What it is.
        let process = Process::open(pid).unwrap();
        assert_eq!(entry.process, process);
        let info = process.info().unwrap();
        println!("info: {info:#?}");
        assert_eq!(&info, listed_info);
        assert_eq!(info.pid, pid);
        let exe = program("Dial");
        assert!(
            info.command_line.contains(&*exe.to_string_lossy()),
            "{:?} does not name {}",
            info.command_line,
            exe.display()
        );
        match rt.major() {
            // .NET Core 3.1 has no Process command set: /proc's command line, and the
            // version from the framework directory its runtime was loaded from.
            3 => {
                assert_eq!(info.source, InfoSource::Proc);
                assert_eq!(info.runtime_pid, None);
                assert_eq!(
                    info.runtime_version,
                    RuntimeVersion::FrameworkDirectory(rt.version().to_owned())
                );
            }
            _ => {
                assert_eq!(info.source, InfoSource::ProcessInfo2);
                assert_eq!(info.runtime_pid, Some(u64::from(pid)));
                assert_eq!(
                    info.runtime_version,
                    RuntimeVersion::Reported(rt.version().to_owned())
                );
                assert_eq!(info.entrypoint_assembly.as_deref(), Some("Dial"));
                assert_eq!(info.os.as_deref(), Some("Linux"));
                assert!(info.runtime_cookie.is_some());
            }
        }

        // A profiler library that does not exist: the runtime's typed refusal, and the
        // program goes on.
        let clsid = Guid::parse(ENGINE_CLSID).unwrap();
        let missing = Path::new("/nonexistent/ilrewrite/libnothing.so");
        let refused = process
            .attach_profiler(clsid, missing, b"client data", Duration::from_secs(5))
            .expect_err("a missing library is not attached");
        println!("attach of a missing library: {refused}");
        assert_eq!(
            refused.runtime_error(),
            Some(RuntimeError::ProfilerLibraryNotLoaded)
        );
        assert_eq!(dial.answer("round"), round_lines());
        assert_eq!(process.info().unwrap(), info);

        // The engine without client data: it has no configuration, so it refuses to
        // attach (and says so on the program's stderr).
        #[cfg(feature = "clr")]
        {
            let refused = process
                .attach_profiler(clsid, &engine, &[], Duration::from_secs(5))
                .expect_err("the engine without a configuration does not attach");
            println!("attach of the engine: {refused}");
            assert_eq!(
                refused.runtime_error(),
                Some(RuntimeError::UnsupportedForAttaching)
            );
            assert_eq!(dial.answer("round"), round_lines());
            // A wrong CLSID for a library that exists.
            let other = Guid::parse("{00000000-0000-0000-0000-000000000001}").unwrap();
            let refused = process
                .attach_profiler(other, &engine, &[], Duration::from_secs(5))
                .expect_err("no class of that CLSID");
            println!("attach of the engine with another CLSID: {refused}");
            assert_eq!(
                refused.runtime_error(),
                Some(RuntimeError::ClassNotAvailable)
            );
            assert_eq!(dial.answer("round"), round_lines());
        }

        let out = dial.finish();
        assert_eq!(out.code(), clr_support::exit_code("Dial"), "{}", out.stderr);
    });
}

#[test]
fn no_such_process_and_not_dotnet() {
    // Above any pid_max (at most 2^22 on Linux).
    match Process::open(0x3FFF_FFFF) {
        Err(DiagnosticsError::NoSuchProcess { pid }) => assert_eq!(pid, 0x3FFF_FFFF),
        other => panic!("expected no such process, got {other:?}"),
    }
    let mut sleep = Command::new("sleep")
        .arg("30")
        .spawn()
        .expect("sleep starts");
    let result = Process::open(sleep.id());
    let _ = sleep.kill();
    let _ = sleep.wait();
    match result {
        Err(e @ DiagnosticsError::NotDotnet { .. }) => println!("sleep: {e}"),
        other => panic!("expected not .NET, got {other:?}"),
    }
    // Once it is gone, no such process (unless its pid was taken again meanwhile).
    if let Err(e) = Process::open(sleep.id()) {
        assert!(
            matches!(
                e,
                DiagnosticsError::NoSuchProcess { .. } | DiagnosticsError::NotDotnet { .. }
            ),
            "{e}"
        );
    }
}

#[test]
fn another_users_process_is_refused() {
    let root = rustix::process::geteuid().is_root();
    let setpriv = Path::new("/usr/bin/setpriv").is_file();
    if !root || !setpriv {
        println!("skipped: needs root ({root}) and /usr/bin/setpriv ({setpriv})");
        return;
    }
    for_each_runtime(|rt| {
        // Dial.exe as nobody (65534), its socket in /tmp (writable by all); the runtime
        // and the program are readable by all.
        let mut cmd = Command::new("/usr/bin/setpriv");
        cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
            .arg(rt.dotnet_exe())
            .arg(program("Dial"))
            .envs(rt.env())
            .env("HOME", "/tmp")
            .env("TMPDIR", "/tmp")
            .current_dir(program("Dial").parent().unwrap());
        let mut dial = Interactive::start(cmd);
        assert_eq!(dial.answer("round"), round_lines());
        let pid = dial.id();
        match Process::open_in(Path::new("/tmp"), pid) {
            Err(e @ DiagnosticsError::OtherUser { .. }) => {
                println!("{e}");
                let DiagnosticsError::OtherUser { owner, uid, .. } = e else {
                    unreachable!()
                };
                assert_eq!((owner, uid), (65_534, 0));
            }
            other => panic!("expected another user's socket, got {other:?}"),
        }
        let listed = Process::list_in(Path::new("/tmp"), Duration::from_secs(5)).unwrap();
        assert!(listed.iter().all(|e| e.process.pid() != pid), "{listed:#?}");
        let out = dial.finish();
        assert_eq!(out.code(), clr_support::exit_code("Dial"), "{}", out.stderr);
    });
}

//! `ilrewrite attach PID --profiler PATH --clsid GUID [--config FILE] [--dial SOCKET]`:
//! asks the .NET process PID to load a profiler now (the diagnostics IPC's
//! AttachProfiler). A profiler built on ilrewrite (`Attachable`, as
//! `examples/engine.rs`) reads its configuration and live dial socket from the client
//! data this sends: UTF-8 lines `config=ABSOLUTE PATH` and `dial=ABSOLUTE PATH`
//! (`ilrewrite::clr::ClientData`, which parses them; `tests/clr_attach.rs` checks the
//! two agree on a real process).
//!
//! Status 0 when the profiler attached; 1 when the runtime or the profiler refused
//! (the reason printed; the profiler's own on the process's stderr); 2 for bad
//! arguments; 3 when the process cannot be reached (no such process, not .NET,
//! another user's, no answer in time).

use crate::Status;
use std::path::PathBuf;

/// The arguments of `attach`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The process
    pid: u32,
    /// The profiler's shared library
    #[arg(long)]
    profiler: PathBuf,
    /// The profiler's CLSID ({XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX})
    #[arg(long)]
    clsid: String,
    /// The profiler's configuration file (sent as `config=`)
    #[arg(long)]
    config: Option<PathBuf>,
    /// The Unix socket the profiler's live dial listens on (sent as `dial=`)
    #[arg(long)]
    dial: Option<PathBuf>,
    /// Seconds the runtime may take to load the profiler
    #[arg(long, default_value_t = 10)]
    timeout: u64,
}

/// `path` made absolute against this directory (the process's is not ours).
fn absolute(path: PathBuf) -> Result<PathBuf, String> {
    std::path::absolute(&path).map_err(|e| format!("{}: {e}", path.display()))
}

/// The client data: `config=` and `dial=` lines.
fn client_data(config: Option<PathBuf>, dial: Option<PathBuf>) -> Result<Vec<u8>, String> {
    let mut text = String::new();
    for (key, path) in [("config", config), ("dial", dial)] {
        if let Some(path) = path {
            let path = absolute(path)?;
            let path = path
                .to_str()
                .ok_or_else(|| format!("{} is not UTF-8", path.display()))?;
            if path.contains('\n') {
                return Err(format!("{path:?} holds a newline"));
            }
            text.push_str(&format!("{key}={path}\n"));
        }
    }
    Ok(text.into_bytes())
}

#[cfg(unix)]
pub(crate) fn run(args: Args) -> Status {
    use ilrewrite::diagnostics::{DiagnosticsError, Guid, Process};
    use std::time::Duration;
    let Ok(clsid) = Guid::parse(&args.clsid) else {
        return crate::usage_error("attach", format!("{:?} is not a CLSID", args.clsid));
    };
    let data = match client_data(args.config, args.dial) {
        Ok(data) => data,
        Err(why) => return crate::usage_error("attach", why),
    };
    let profiler = match absolute(args.profiler) {
        Ok(path) => path,
        Err(why) => return crate::usage_error("attach", why),
    };
    let timeout = Duration::from_secs(args.timeout);
    eprintln!(
        "ilrewrite attach: asking process {} to load {}",
        args.pid,
        profiler.display()
    );
    let attached = Process::open(args.pid).and_then(|process| {
        process
            .with_timeout(timeout + Duration::from_secs(5))
            .attach_profiler(clsid, &profiler, &data, timeout)
    });
    match attached {
        Ok(()) => {
            println!("attached to {}", args.pid);
            Status::Ok
        }
        Err(e @ DiagnosticsError::Refused { .. }) => {
            eprintln!("ilrewrite attach: refused: {e}");
            Status::Failure
        }
        Err(e) => {
            eprintln!("ilrewrite attach: {e}");
            Status::Unreachable
        }
    }
}

#[cfg(not(unix))]
pub(crate) fn run(_: Args) -> Status {
    eprintln!("ilrewrite attach: the diagnostics IPC client is for Unix only");
    Status::Failure
}

//! `ilrewrite ps`: the .NET processes of this user (the diagnostics IPC,
//! `ilrewrite::diagnostics`): pid, runtime version, whether a profiler is loaded (when
//! the runtime says), command line.
//!
//! Status 0 when the list was made (empty or not); 3 when the temporary directory
//! cannot be read.

use crate::Status;

/// The arguments of `ps` (none).
#[derive(Debug, clap::Args)]
pub(crate) struct Args {}

#[cfg(unix)]
pub(crate) fn run(_: Args) -> Status {
    use ilrewrite::diagnostics::Process;
    let entries = match Process::list() {
        Ok(entries) => entries,
        Err(e) => {
            eprintln!("ilrewrite ps: cannot list the .NET processes: {e}");
            return Status::Unreachable;
        }
    };
    println!("{:>8}  {:<16}  COMMAND", "PID", "RUNTIME");
    for entry in entries {
        let pid = entry.process.pid();
        match &entry.info {
            Ok(info) => println!(
                "{pid:>8}  {:<16}  {}",
                info.runtime_version.to_string(),
                info.command_line
            ),
            Err(e) => println!("{pid:>8}  {:<16}  ({e})", "?"),
        }
    }
    Status::Ok
}

#[cfg(not(unix))]
pub(crate) fn run(_: Args) -> Status {
    eprintln!("ilrewrite ps: the diagnostics IPC client is for Unix only");
    Status::Failure
}

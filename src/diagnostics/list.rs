//! The .NET processes of this user: [`Process::list`], each with what it answered.

use super::client::{DEFAULT_TIMEOUT, Process, ProcessInfo};
use super::error::DiagnosticsError;
use super::socket;
use super::system;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

/// A .NET process of this user found by [`Process::list`], and its [`Process::info`]
/// (an error when it did not answer: it may be starting, shutting down or hung).
#[derive(Debug)]
pub struct ProcessEntry {
    /// The process, ready for further commands.
    pub process: Process,
    /// What it answered.
    pub info: Result<ProcessInfo, DiagnosticsError>,
}

impl Process {
    /// The .NET processes of this user in the runtime's default directory, with
    /// [`DEFAULT_TIMEOUT`]: [`Process::list_in`].
    ///
    /// # Errors
    ///
    /// As [`Process::list_in`].
    pub fn list() -> std::io::Result<Vec<ProcessEntry>> {
        Process::list_in(&system::temp_dir(), DEFAULT_TIMEOUT)
    }

    /// The .NET processes of this user whose sockets are in `dir`, ordered by pid: one
    /// entry for each live process that has a diagnostics socket there that is its own
    /// (as [`Process::open`] chooses it) and owned by this process's effective uid.
    /// Sockets of dead processes, of earlier processes with a reused id and of other
    /// users are left out. Each entry has the process's [`Process::info`] with `timeout`,
    /// all asked at once (a thread each), so the whole takes as long as the slowest
    /// answer: at most two exchanges' `timeout`.
    ///
    /// # Errors
    ///
    /// If `dir` cannot be listed.
    pub fn list_in(dir: &Path, timeout: Duration) -> std::io::Result<Vec<ProcessEntry>> {
        let uid = system::effective_uid();
        let mut by_pid: BTreeMap<u32, Vec<socket::SocketFile>> = BTreeMap::new();
        for file in socket::scan(dir, None)? {
            by_pid.entry(file.pid).or_default().push(file);
        }
        let processes: Vec<Process> = by_pid
            .into_iter()
            .filter(|(pid, _)| system::is_alive(*pid))
            .filter_map(|(pid, sockets)| {
                let own = socket::pick(sockets, system::start_time(pid))?.ok()?;
                (own.owner == uid).then(|| Process::found(pid, own.path, timeout))
            })
            .collect();
        let infos: Vec<Result<ProcessInfo, DiagnosticsError>> = std::thread::scope(|scope| {
            let asked: Vec<_> = processes
                .iter()
                .map(|process| {
                    std::thread::Builder::new()
                        .name(format!("diagnostics-{}", process.pid()))
                        .spawn_scoped(scope, || process.info())
                        .map_err(|_| process)
                })
                .collect();
            asked
                .into_iter()
                .map(|thread| match thread {
                    Ok(handle) => handle
                        .join()
                        .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
                    // No thread to be had: ask from this one.
                    Err(process) => process.info(),
                })
                .collect()
        });
        Ok(processes
            .into_iter()
            .zip(infos)
            .map(|(process, info)| ProcessEntry { process, info })
            .collect())
    }
}

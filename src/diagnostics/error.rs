//! [`DiagnosticsError`], why a request to a process failed, and [`RuntimeError`], the
//! HRESULT a runtime answered with, by name.

use super::message::{Command, MessageError};
use std::io;
use std::path::PathBuf;
use std::time::Duration;

/// An HRESULT a runtime answered a command with (an `Error` answer, or a failed
/// `AttachProfiler`), named when it is one of the codes below.
///
/// The values are those of the runtime's `corerror.h` (`CORPROF_E_*`,
/// `CORDIAGIPC_E_*`, `COR_E_*`) and `winerror.h`. [`RuntimeError::from_hresult`] and
/// [`RuntimeError::hresult`] are inverse: every HRESULT maps to exactly one variant,
/// [`RuntimeError::Other`] keeping the unnamed ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum RuntimeError {
    /// `CORPROF_E_PROFILER_ALREADY_ACTIVE` (0x8013136A): a profiler is already loaded
    /// (at startup or by an earlier attach); CoreCLR takes one.
    #[error("a profiler is already loaded (CORPROF_E_PROFILER_ALREADY_ACTIVE, 0x8013136A)")]
    ProfilerAlreadyActive,
    /// `CORPROF_E_PROFILER_NOT_ATTACHABLE` (0x80131368): the profiler does not support
    /// being attached.
    #[error(
        "the profiler does not support attaching (CORPROF_E_PROFILER_NOT_ATTACHABLE, 0x80131368)"
    )]
    ProfilerNotAttachable,
    /// `CORPROF_E_UNSUPPORTED_FOR_ATTACHING_PROFILER` (0x8013136F): the profiler refused
    /// what it was asked to do at attach (an ilrewrite manager says why on the
    /// process's stderr: events or hooks only start-up allows, no configuration).
    #[error(
        "the profiler cannot do this when attached (CORPROF_E_UNSUPPORTED_FOR_ATTACHING_PROFILER, 0x8013136F)"
    )]
    UnsupportedForAttaching,
    /// `CORPROF_E_PROFILER_DETACHING` (0x80131367): the profiler loaded before is
    /// detaching.
    #[error("the loaded profiler is detaching (CORPROF_E_PROFILER_DETACHING, 0x80131367)")]
    ProfilerDetaching,
    /// `CORPROF_E_CALLBACK3_REQUIRED` (0x8013136E): the profiler's object does not
    /// implement `ICorProfilerCallback3`, which has `InitializeForAttach`.
    #[error(
        "the profiler does not implement ICorProfilerCallback3 (CORPROF_E_CALLBACK3_REQUIRED, 0x8013136E)"
    )]
    Callback3Required,
    /// `CORPROF_E_PROFILER_CANCEL_ACTIVATION` (0x80131375): the profiler's
    /// `InitializeForAttach` declined to run in this process.
    #[error(
        "the profiler cancelled its activation (CORPROF_E_PROFILER_CANCEL_ACTIVATION, 0x80131375)"
    )]
    ProfilerCancelledActivation,
    /// `CORPROF_E_RUNTIME_UNINITIALIZED` (0x80131371): the runtime is not initialized
    /// far enough (too early in startup).
    #[error("the runtime is not initialized yet (CORPROF_E_RUNTIME_UNINITIALIZED, 0x80131371)")]
    RuntimeUninitialized,
    /// `CORPROF_E_TIMEOUT_WAITING_FOR_CONCURRENT_GC` (0x80131379): the attach timed out
    /// waiting for a concurrent garbage collection to finish.
    #[error(
        "the attach timed out waiting for a concurrent GC (CORPROF_E_TIMEOUT_WAITING_FOR_CONCURRENT_GC, 0x80131379)"
    )]
    TimeoutWaitingForConcurrentGc,
    /// `CORPROF_E_CONCURRENT_GC_NOT_PROFILABLE` (0x80131376): concurrent GC is on and
    /// the profiler's event mask does not allow it.
    #[error(
        "concurrent GC is on and not profilable with this event mask (CORPROF_E_CONCURRENT_GC_NOT_PROFILABLE, 0x80131376)"
    )]
    ConcurrentGcNotProfilable,
    /// `HRESULT_FROM_WIN32(ERROR_MOD_NOT_FOUND)` (0x8007007E): the runtime could not
    /// load the profiler's library (no such file, or it or one of its dependencies does
    /// not load). What CoreCLR 3.1 and 8 answer for a path that does not exist.
    #[error("the runtime could not load the profiler's library (ERROR_MOD_NOT_FOUND, 0x8007007E)")]
    ProfilerLibraryNotLoaded,
    /// `CLASS_E_CLASSNOTAVAILABLE` (0x80040111): the library has no class of that CLSID
    /// (its `DllGetClassObject` refused it).
    #[error(
        "the profiler's library has no class of that CLSID (CLASS_E_CLASSNOTAVAILABLE, 0x80040111)"
    )]
    ClassNotAvailable,
    /// `CORDIAGIPC_E_UNKNOWN_COMMAND` (0x80131385): the runtime does not know this
    /// command (e.g. the Process set before .NET 5, `ProcessInfo2` before .NET 6).
    #[error("the runtime does not know this command (CORDIAGIPC_E_UNKNOWN_COMMAND, 0x80131385)")]
    UnknownCommand,
    /// `CORDIAGIPC_E_BAD_ENCODING` (0x80131384): the runtime could not decode the
    /// request.
    #[error("the runtime could not decode the request (CORDIAGIPC_E_BAD_ENCODING, 0x80131384)")]
    BadEncoding,
    /// `CORDIAGIPC_E_UNKNOWN_MAGIC` (0x80131386): the runtime does not know the
    /// request's magic.
    #[error(
        "the runtime does not know the request's magic (CORDIAGIPC_E_UNKNOWN_MAGIC, 0x80131386)"
    )]
    UnknownMagic,
    /// `CORDIAGIPC_E_UNKNOWN_ERROR` (0x80131387).
    #[error("the diagnostics server failed (CORDIAGIPC_E_UNKNOWN_ERROR, 0x80131387)")]
    UnknownError,
    /// `COR_E_NOTSUPPORTED` (0x80131515): not supported by this runtime or build.
    #[error("not supported by this runtime (COR_E_NOTSUPPORTED, 0x80131515)")]
    NotSupported,
    /// `E_INVALIDARG` (0x80070057): an argument was refused.
    #[error("an argument was refused (E_INVALIDARG, 0x80070057)")]
    InvalidArgument,
    /// `E_FAIL` (0x80004005).
    #[error("the runtime failed (E_FAIL, 0x80004005)")]
    Fail,
    /// Any other HRESULT.
    #[error("the runtime answered HRESULT 0x{0:08X}")]
    Other(u32),
}

/// The named HRESULTs, in one table for both directions.
const NAMED: &[(u32, RuntimeError)] = &[
    (0x8013_136A, RuntimeError::ProfilerAlreadyActive),
    (0x8013_1368, RuntimeError::ProfilerNotAttachable),
    (0x8013_1367, RuntimeError::ProfilerDetaching),
    (0x8013_136E, RuntimeError::Callback3Required),
    (0x8013_1375, RuntimeError::ProfilerCancelledActivation),
    (0x8013_1371, RuntimeError::RuntimeUninitialized),
    (0x8013_1379, RuntimeError::TimeoutWaitingForConcurrentGc),
    (0x8013_1376, RuntimeError::ConcurrentGcNotProfilable),
    (0x8007_007E, RuntimeError::ProfilerLibraryNotLoaded),
    (0x8004_0111, RuntimeError::ClassNotAvailable),
    (0x8013_1385, RuntimeError::UnknownCommand),
    (0x8013_1384, RuntimeError::BadEncoding),
    (0x8013_1386, RuntimeError::UnknownMagic),
    (0x8013_1387, RuntimeError::UnknownError),
    (0x8013_1515, RuntimeError::NotSupported),
    (0x8013_136F, RuntimeError::UnsupportedForAttaching),
    (0x8007_0057, RuntimeError::InvalidArgument),
    (0x8000_4005, RuntimeError::Fail),
];

impl RuntimeError {
    /// The variant of `hresult`: its name if it has one, else [`RuntimeError::Other`].
    pub fn from_hresult(hresult: u32) -> RuntimeError {
        NAMED
            .iter()
            .find(|(code, _)| *code == hresult)
            .map_or(RuntimeError::Other(hresult), |(_, error)| *error)
    }

    /// The HRESULT the runtime answered.
    pub fn hresult(&self) -> u32 {
        match self {
            RuntimeError::Other(hresult) => *hresult,
            named => NAMED
                .iter()
                .find(|(_, error)| error == named)
                .map_or(0, |(code, _)| *code),
        }
    }
}

/// A step of an exchange with a process, for [`DiagnosticsError::Timeout`] and
/// [`DiagnosticsError::Io`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Connecting to the socket.
    Connect,
    /// Sending the request.
    Send,
    /// Receiving the answer.
    Receive,
}

impl std::fmt::Display for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Step::Connect => "connecting",
            Step::Send => "sending the request",
            Step::Receive => "waiting for the answer",
        })
    }
}

/// Why a request to a .NET process's diagnostics socket failed. Every message is one
/// line that names the process id.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DiagnosticsError {
    /// No process has this id (or it is not a valid process id).
    #[error("no process has id {pid}")]
    NoSuchProcess {
        /// The process id asked for.
        pid: u32,
    },
    /// The process is alive but has no diagnostics socket in the directory searched:
    /// it is not a .NET process, or its runtime is older than .NET Core 3.0, runs with
    /// `DOTNET_EnableDiagnostics=0`, or has another `TMPDIR`.
    #[error(
        "process {pid} has no diagnostics socket in {}: not a .NET (Core 3.0+) process, diagnostics disabled, or another TMPDIR",
        .dir.display()
    )]
    NotDotnet {
        /// The process id.
        pid: u32,
        /// The directory searched.
        dir: PathBuf,
    },
    /// The socket belongs to another user: checked against this process's effective uid
    /// before connecting (root is not exempt).
    #[error(
        "the diagnostics socket of process {pid} ({}) belongs to uid {owner}, not to uid {uid} (this process's)",
        .socket.display()
    )]
    OtherUser {
        /// The process id.
        pid: u32,
        /// The socket.
        socket: PathBuf,
        /// The socket file's owner.
        owner: u32,
        /// This process's effective uid.
        uid: u32,
    },
    /// Connecting was refused for lack of permission (`EACCES` or `EPERM`).
    #[error("not permitted to connect to the diagnostics socket of process {pid} ({}): {source}", .socket.display())]
    AccessDenied {
        /// The process id.
        pid: u32,
        /// The socket.
        socket: PathBuf,
        /// The system's error.
        source: io::Error,
    },
    /// The socket file is left over: no server listens on it (connection refused), or it
    /// is an earlier process's whose id was reused.
    #[error("the diagnostics socket {} of process {pid} is stale: {why}", .socket.display())]
    Stale {
        /// The process id.
        pid: u32,
        /// The socket.
        socket: PathBuf,
        /// How that was seen.
        why: &'static str,
    },
    /// A step did not complete in time.
    #[error("process {pid} did not answer in time: {step} took longer than {limit:?}")]
    Timeout {
        /// The process id.
        pid: u32,
        /// The step that ran out of time.
        step: Step,
        /// The time the exchange had.
        limit: Duration,
    },
    /// The system failed a step (a connection reset, a socket path too long, ...).
    #[error("{step} with process {pid} failed: {source}")]
    Io {
        /// The process id.
        pid: u32,
        /// The step.
        step: Step,
        /// The system's error.
        source: io::Error,
    },
    /// The answer is not what the protocol allows.
    #[error("process {pid} answered {command} with a malformed message: {problem}")]
    Malformed {
        /// The process id.
        pid: u32,
        /// The command asked.
        command: Command,
        /// What is wrong with the answer.
        problem: MessageError,
    },
    /// The runtime answered the command with an error.
    #[error("process {pid} refused {command}: {error}")]
    Refused {
        /// The process id.
        pid: u32,
        /// The command asked.
        command: Command,
        /// The runtime's HRESULT, by name.
        error: RuntimeError,
    },
    /// The request cannot be sent (too large for a message, a NUL in a string, a path
    /// that is not Unicode). Nothing was sent.
    #[error("cannot send {command} to process {pid}: {problem}")]
    InvalidRequest {
        /// The process id.
        pid: u32,
        /// The command.
        command: Command,
        /// What is wrong with it.
        problem: String,
    },
}

impl DiagnosticsError {
    /// The runtime's error, if the runtime refused the command.
    pub fn runtime_error(&self) -> Option<RuntimeError> {
        match self {
            DiagnosticsError::Refused { error, .. } => Some(*error),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hresults_map_both_ways() {
        for (code, error) in NAMED {
            assert_eq!(RuntimeError::from_hresult(*code), *error);
            assert_eq!(error.hresult(), *code);
            assert!(
                error.to_string().contains(&format!("{code:08X}")),
                "{error}"
            );
        }
        assert_eq!(
            RuntimeError::from_hresult(0x8000_FFFF),
            RuntimeError::Other(0x8000_FFFF)
        );
        assert_eq!(RuntimeError::Other(0x8000_FFFF).hresult(), 0x8000_FFFF);
        assert_eq!(
            RuntimeError::Other(0x1234).to_string(),
            "the runtime answered HRESULT 0x00001234"
        );
    }
}

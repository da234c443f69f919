//! The commands: [`Process`] (one .NET process's diagnostics socket), what it is
//! ([`Process::info`]), loading a profiler into it ([`Process::attach_profiler`]).

use super::error::{DiagnosticsError, RuntimeError};
use super::guid::Guid;
use super::message::{self, Answer, Command, MAX_MESSAGE, Payload};
use super::socket::{self, OwnedAnswer};
use super::system;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long an exchange with a process may take, unless [`Process::with_timeout`] says
/// otherwise: connecting, sending the request and receiving the answer, all together.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// The largest answer to `AttachProfiler` accepted: it is a header and an HRESULT (24
/// bytes); some room for a runtime that adds a message.
const MAX_ATTACH_ANSWER: usize = 1024;

/// A .NET process's diagnostics socket, found and checked to be this user's: what
/// [`Process::info`] and [`Process::attach_profiler`] talk to.
///
/// Each exchange is one connection (the protocol serves one command a connection) and
/// is over within its time limit, whatever the other end does: connecting (a full
/// listen queue included), every write and every read wait at most what is left of it.
/// [`Process::attach_profiler`] is one exchange; [`Process::info`] up to two (a
/// runtime that does not know `ProcessInfo2` is asked `ProcessInfo`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Process {
    pid: u32,
    socket: PathBuf,
    timeout: Duration,
}

/// Where [`Process::info`]'s answer came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InfoSource {
    /// The runtime's `ProcessInfo2` answer (.NET 6+): every field.
    ProcessInfo2,
    /// The runtime's `ProcessInfo` answer (.NET 5, which has no `ProcessInfo2`): no entry
    /// point, no version from the runtime.
    ProcessInfo,
    /// The operating system (`/proc`, Linux), because the runtime has no Process command
    /// set (before .NET 5: .NET Core 3.x): the command line only, no cookie, OS or
    /// architecture.
    Proc,
}

/// The version of a process's runtime, and how it is known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RuntimeVersion {
    /// The product version the runtime reported (`ProcessInfo2`), e.g. `8.0.4`.
    Reported(String),
    /// The name of the shared-framework directory its `libcoreclr.so` was loaded from
    /// (`.../Microsoft.NETCore.App/3.1.23/`, read from `/proc/PID/maps`): the runtime
    /// reports no version before .NET 6.
    FrameworkDirectory(String),
    /// Not known: the runtime reports none, and its library is not in a shared
    /// framework's directory (a self-contained app) or its maps cannot be read.
    Unknown,
}

impl RuntimeVersion {
    /// The version, however known.
    pub fn version(&self) -> Option<&str> {
        match self {
            RuntimeVersion::Reported(v) | RuntimeVersion::FrameworkDirectory(v) => Some(v),
            RuntimeVersion::Unknown => None,
        }
    }
}

impl fmt::Display for RuntimeVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RuntimeVersion::Reported(v) => f.write_str(v),
            RuntimeVersion::FrameworkDirectory(v) => write!(
                f,
                "{v} (its framework directory; the runtime reports no version before .NET 6)"
            ),
            RuntimeVersion::Unknown => {
                f.write_str("unknown (no ProcessInfo2 before .NET 6, and no framework directory)")
            }
        }
    }
}

/// What a .NET process is: [`Process::info`]'s answer. The fields the source does not
/// give are `None` ([`InfoSource`] says which source it was).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessInfo {
    /// The process id asked about (this process's pid namespace).
    pub pid: u32,
    /// The process id the runtime reported (its own pid namespace, which differs in a
    /// container).
    pub runtime_pid: Option<u64>,
    /// The runtime instance's cookie.
    pub runtime_cookie: Option<Guid>,
    /// The command line: on Unix the full path of the executable, then the arguments,
    /// separated by spaces (so `/usr/share/dotnet/dotnet /srv/app.dll ...` for an app
    /// started by the `dotnet` host).
    pub command_line: String,
    /// The OS the runtime reported (`Linux`, `macOS`, ...).
    pub os: Option<String>,
    /// The architecture the runtime reported (`x64`, `arm64`, ...).
    pub arch: Option<String>,
    /// The entry point's assembly name (`ProcessInfo2` only; empty if there is none).
    pub entrypoint_assembly: Option<String>,
    /// The runtime's version.
    pub runtime_version: RuntimeVersion,
    /// Where this came from.
    pub source: InfoSource,
}

impl Process {
    /// The diagnostics socket of process `pid` in the runtime's default directory
    /// (`$TMPDIR`, or `/tmp` when it is unset or empty), with [`DEFAULT_TIMEOUT`].
    ///
    /// Nothing is sent: this finds the socket whose name is the process's (on Linux, the
    /// one whose key is the process's start time, so a socket left by an earlier process
    /// with the same id is not taken; elsewhere the newest) and checks that its owner is
    /// this process's effective uid.
    ///
    /// # Errors
    ///
    /// [`DiagnosticsError::NoSuchProcess`], [`DiagnosticsError::NotDotnet`],
    /// [`DiagnosticsError::Stale`] (only an earlier process's sockets),
    /// [`DiagnosticsError::OtherUser`].
    pub fn open(pid: u32) -> Result<Process, DiagnosticsError> {
        Process::open_in(&system::temp_dir(), pid)
    }

    /// [`Process::open`] with the socket searched in `dir` (the target's `TMPDIR`, when
    /// it differs from this process's).
    ///
    /// # Errors
    ///
    /// As [`Process::open`].
    pub fn open_in(dir: &Path, pid: u32) -> Result<Process, DiagnosticsError> {
        let socket = socket::locate(dir, pid)?;
        Ok(Process {
            pid,
            socket,
            timeout: DEFAULT_TIMEOUT,
        })
    }

    /// The handle of a socket already found and checked ([`Process::list_in`]).
    pub(super) fn found(pid: u32, socket: PathBuf, timeout: Duration) -> Process {
        Process {
            pid,
            socket,
            timeout,
        }
    }

    /// This handle with every exchange limited to `timeout` (connect, send and receive
    /// together; [`Process::attach_profiler`] adds its attach timeout).
    #[must_use]
    pub fn with_timeout(self, timeout: Duration) -> Process {
        Process { timeout, ..self }
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The path of its diagnostics socket.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// The time limit of each exchange.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// What the process is: `ProcessInfo2` (.NET 6+); where the runtime does not know it,
    /// `ProcessInfo` (.NET 5); where it has no Process commands at all (.NET Core 3.x),
    /// what Linux's `/proc` says. [`ProcessInfo::source`] says which, and
    /// [`ProcessInfo::runtime_version`] how the version is known.
    ///
    /// # Errors
    ///
    /// Any [`DiagnosticsError`] of the exchange; [`DiagnosticsError::Refused`] with
    /// [`RuntimeError::UnknownCommand`] where neither the runtime nor `/proc` tells.
    pub fn info(&self) -> Result<ProcessInfo, DiagnosticsError> {
        let unknown =
            |e: &DiagnosticsError| e.runtime_error() == Some(RuntimeError::UnknownCommand);
        match self.process_info(Command::PROCESS_INFO2) {
            Err(e) if unknown(&e) => {}
            other => return other,
        }
        match self.process_info(Command::PROCESS_INFO) {
            Err(e) if unknown(&e) => match system::command_line(self.pid) {
                Some(command_line) => Ok(ProcessInfo {
                    pid: self.pid,
                    runtime_pid: None,
                    runtime_cookie: None,
                    command_line,
                    os: None,
                    arch: None,
                    entrypoint_assembly: None,
                    runtime_version: self.framework_version(),
                    source: InfoSource::Proc,
                }),
                None => Err(e),
            },
            other => other,
        }
    }

    /// The version from the framework directory, or unknown.
    fn framework_version(&self) -> RuntimeVersion {
        system::framework_version(self.pid)
            .map_or(RuntimeVersion::Unknown, RuntimeVersion::FrameworkDirectory)
    }

    /// Asks `ProcessInfo` or `ProcessInfo2` and decodes the answer.
    fn process_info(&self, command: Command) -> Result<ProcessInfo, DiagnosticsError> {
        let answer = self.exchange(command, &[], MAX_MESSAGE, self.timeout)?;
        let version2 = command == Command::PROCESS_INFO2;
        let payload = self.ok_payload(command, &answer)?;
        let fields = message::decode_process_info(payload, version2)
            .map_err(|problem| self.malformed(command, problem))?;
        let runtime_version = match fields.product_version {
            Some(version) if !version.is_empty() => RuntimeVersion::Reported(version),
            _ => self.framework_version(),
        };
        Ok(ProcessInfo {
            pid: self.pid,
            runtime_pid: Some(fields.pid),
            runtime_cookie: Some(fields.runtime_cookie),
            command_line: fields.command_line,
            os: Some(fields.os),
            arch: Some(fields.arch),
            entrypoint_assembly: fields.entrypoint_assembly,
            runtime_version,
            source: match version2 {
                true => InfoSource::ProcessInfo2,
                false => InfoSource::ProcessInfo,
            },
        })
    }

    /// Asks the runtime to load the profiler of class `clsid` from the library at `path`
    /// now (`AttachProfiler`), handing it `client_data` (its `InitializeForAttach`
    /// receives them). `attach_timeout` is the runtime's: how long the attach may wait
    /// for a concurrent garbage collection (sent in milliseconds, at most `u32::MAX`).
    /// The exchange may take [`Process::timeout`] plus `attach_timeout`, since the
    /// runtime answers once the profiler's `InitializeForAttach` returned.
    ///
    /// `path` is sent as it is and opened by the target process: a relative path is
    /// relative to its working directory.
    ///
    /// Returns once the runtime reported success. On a refusal the process goes on
    /// without the profiler (the runtime unloads what it loaded).
    ///
    /// # Errors
    ///
    /// [`DiagnosticsError::InvalidRequest`] (a path that is not Unicode or holds a NUL,
    /// or a request over 65,535 bytes: nothing is sent); [`DiagnosticsError::Refused`]
    /// with the runtime's HRESULT ([`RuntimeError::ProfilerAlreadyActive`],
    /// [`RuntimeError::ProfilerLibraryNotLoaded`], ...); any other error of the
    /// exchange.
    pub fn attach_profiler(
        &self,
        clsid: Guid,
        path: &Path,
        client_data: &[u8],
        attach_timeout: Duration,
    ) -> Result<(), DiagnosticsError> {
        let command = Command::ATTACH_PROFILER;
        let invalid = |problem: String| DiagnosticsError::InvalidRequest {
            pid: self.pid,
            command,
            problem,
        };
        let path = path.to_str().ok_or_else(|| {
            invalid(format!(
                "the profiler's path {} is not Unicode",
                path.display()
            ))
        })?;
        let millis = u32::try_from(attach_timeout.as_millis()).unwrap_or(u32::MAX);
        let mut payload = Payload::new();
        payload.u32(millis).guid(&clsid);
        payload
            .string(path, "profiler's path")
            .map_err(|e| invalid(e.to_string()))?;
        payload.bytes(client_data);
        let limit = self.timeout.saturating_add(attach_timeout);
        let answer = self.exchange(command, payload.as_bytes(), MAX_ATTACH_ANSWER, limit)?;
        let payload = self.ok_payload(command, &answer)?;
        let hresult = message::decode_attach_result(payload)
            .map_err(|problem| self.malformed(command, problem))?;
        // A failure code in an OK answer is still a failure (its high bit is set).
        match hresult & 0x8000_0000 {
            0 => Ok(()),
            _ => Err(self.refused(command, hresult)),
        }
    }

    /// One exchange with this process.
    fn exchange(
        &self,
        command: Command,
        payload: &[u8],
        max_answer: usize,
        limit: Duration,
    ) -> Result<OwnedAnswer, DiagnosticsError> {
        socket::exchange(&self.socket, self.pid, command, payload, max_answer, limit)
    }

    /// The payload of an OK answer; the runtime's error for an Error answer.
    fn ok_payload<'a>(
        &self,
        command: Command,
        answer: &'a OwnedAnswer,
    ) -> Result<&'a [u8], DiagnosticsError> {
        match answer.answer() {
            Ok(Answer::Ok(payload)) => Ok(payload),
            Ok(Answer::Error(hresult)) => Err(self.refused(command, hresult)),
            Err(problem) => Err(self.malformed(command, problem)),
        }
    }

    fn refused(&self, command: Command, hresult: u32) -> DiagnosticsError {
        DiagnosticsError::Refused {
            pid: self.pid,
            command,
            error: RuntimeError::from_hresult(hresult),
        }
    }

    fn malformed(&self, command: Command, problem: message::MessageError) -> DiagnosticsError {
        DiagnosticsError::Malformed {
            pid: self.pid,
            command,
            problem,
        }
    }
}

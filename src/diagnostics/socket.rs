//! The transport: finding a process's diagnostics socket, and one exchange on it (a
//! connection, a request, an answer), every step bounded by one deadline.
//!
//! The runtime listens on `dotnet-diagnostic-{pid}-{key}-socket` in its `TMPDIR` (or
//! `/tmp`), the key being, on Linux, the process's start time in clock ticks since boot
//! (`/proc/PID/stat`); sockets of processes that died without removing them stay
//! behind, and a pid can be reused. So a socket is the process's when its key is the
//! process's start time; where that cannot be read, the newest socket of the pid is
//! taken.

use super::error::{DiagnosticsError, Step};
use super::message::{
    self, Answer, AnswerKind, Command, HEADER_SIZE, MessageError, decode_answer_header,
};
use super::system;
use std::io::{self, Read, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

/// A diagnostics socket's file: whose it is and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SocketFile {
    /// The process id in its name.
    pub pid: u32,
    /// The disambiguation key in its name.
    pub key: u64,
    /// Its path.
    pub path: PathBuf,
    /// Its owner.
    pub owner: u32,
    /// Its modification time.
    pub modified: SystemTime,
}

/// The pid and key of a file named `dotnet-diagnostic-{pid}-{key}-socket` (decimal
/// digits only, each fitting its type).
pub(crate) fn parse_name(name: &str) -> Option<(u32, u64)> {
    let middle = name
        .strip_prefix("dotnet-diagnostic-")?
        .strip_suffix("-socket")?;
    let (pid, key) = middle.split_once('-')?;
    let decimal = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !decimal(pid) || !decimal(key) {
        return None;
    }
    Some((pid.parse().ok()?, key.parse().ok()?))
}

/// Every diagnostics socket in `dir` (of `pid` only, if given): files of that name that
/// are sockets (not symbolic links to one), in no particular order.
///
/// # Errors
///
/// If `dir` cannot be listed. Entries that vanish or cannot be inspected meanwhile are
/// left out.
pub(crate) fn scan(dir: &Path, pid: Option<u32>) -> io::Result<Vec<SocketFile>> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let Ok(entry) = entry else { continue };
        let name = entry.file_name();
        let Some((file_pid, key)) = name.to_str().and_then(parse_name) else {
            continue;
        };
        if pid.is_some_and(|p| p != file_pid) {
            continue;
        }
        let path = entry.path();
        // lstat: a symbolic link is not taken for the socket it points to.
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if !meta.file_type().is_socket() {
            continue;
        }
        found.push(SocketFile {
            pid: file_pid,
            key,
            path,
            owner: meta.uid(),
            modified: meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
        });
    }
    Ok(found)
}

/// Of the sockets of one live process, the one that is its own: the one whose key is
/// its start time when that is known (`Err` with the newest when none is: they are an
/// earlier process's), else the newest (by modification time, then key). `None` when
/// there is none.
pub(crate) fn pick(
    mut sockets: Vec<SocketFile>,
    start_time: Option<u64>,
) -> Option<Result<SocketFile, SocketFile>> {
    sockets.sort_by_key(|s| (s.modified, s.key));
    let newest = sockets.pop()?;
    Some(match start_time {
        None => Ok(newest),
        Some(start) if newest.key == start => Ok(newest),
        Some(start) => sockets.into_iter().find(|s| s.key == start).ok_or(newest),
    })
}

/// The socket of live process `pid` in `dir`, checked to be this user's.
///
/// # Errors
///
/// [`DiagnosticsError::NoSuchProcess`], [`DiagnosticsError::NotDotnet`] (no socket, or
/// `dir` cannot be listed), [`DiagnosticsError::Stale`] (only an earlier process's
/// sockets), [`DiagnosticsError::OtherUser`].
pub(crate) fn locate(dir: &Path, pid: u32) -> Result<PathBuf, DiagnosticsError> {
    if !system::is_alive(pid) {
        return Err(DiagnosticsError::NoSuchProcess { pid });
    }
    let not_dotnet = || DiagnosticsError::NotDotnet {
        pid,
        dir: dir.to_path_buf(),
    };
    let sockets = scan(dir, Some(pid)).map_err(|_| not_dotnet())?;
    let picked = pick(sockets, system::start_time(pid)).ok_or_else(not_dotnet)?;
    let socket = picked.map_err(|stale| {
        DiagnosticsError::Stale {
            pid,
            socket: stale.path,
            why: "its name's key is not the running process's start time (an earlier process had this id)",
        }
    })?;
    let uid = system::effective_uid();
    if socket.owner != uid {
        return Err(DiagnosticsError::OtherUser {
            pid,
            socket: socket.path,
            owner: socket.owner,
            uid,
        });
    }
    Ok(socket.path)
}

/// One exchange's connection, and the instant it must be over by.
#[derive(Debug)]
struct Connection {
    stream: UnixStream,
    pid: u32,
    deadline: Instant,
    limit: Duration,
}

impl Connection {
    /// The time left before the deadline, or the timeout error of `step`.
    fn left(&self, step: Step) -> Result<Duration, DiagnosticsError> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        match left.is_zero() {
            true => Err(self.timeout(step)),
            false => Ok(left),
        }
    }

    fn timeout(&self, step: Step) -> DiagnosticsError {
        DiagnosticsError::Timeout {
            pid: self.pid,
            step,
            limit: self.limit,
        }
    }

    /// The error of `step` for `e`: a timeout when the system says the wait ran out.
    fn failed(&self, step: Step, e: io::Error) -> DiagnosticsError {
        match e.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => self.timeout(step),
            _ => DiagnosticsError::Io {
                pid: self.pid,
                step,
                source: e,
            },
        }
    }

    fn send(&mut self, mut bytes: &[u8]) -> Result<(), DiagnosticsError> {
        while !bytes.is_empty() {
            let left = self.left(Step::Send)?;
            self.stream
                .set_write_timeout(Some(left))
                .map_err(|e| self.failed(Step::Send, e))?;
            match self.stream.write(bytes) {
                Ok(0) => {
                    let e = io::Error::new(io::ErrorKind::WriteZero, "the socket took no bytes");
                    return Err(self.failed(Step::Send, e));
                }
                Ok(n) => bytes = &bytes[n..],
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.failed(Step::Send, e)),
            }
        }
        Ok(())
    }

    /// Fills `buf`; `Ok(n)` with `n < buf.len()` when the peer closed the connection
    /// after `n` bytes.
    fn receive(&mut self, buf: &mut [u8]) -> Result<usize, DiagnosticsError> {
        let mut filled = 0;
        while filled < buf.len() {
            let left = self.left(Step::Receive)?;
            self.stream
                .set_read_timeout(Some(left))
                .map_err(|e| self.failed(Step::Receive, e))?;
            match self.stream.read(&mut buf[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.failed(Step::Receive, e)),
            }
        }
        Ok(filled)
    }
}

/// Connects to `socket` within `limit`: a socket whose connect waits for room in a full
/// listen queue at most that long (`SO_SNDTIMEO`, which Linux applies to a Unix
/// socket's connect).
fn connect(socket: &Path, pid: u32, limit: Duration) -> Result<UnixStream, DiagnosticsError> {
    use rustix::net::{AddressFamily, SocketAddrUnix, SocketFlags, SocketType, sockopt};
    let io_error = |e: io::Error| match e.kind() {
        io::ErrorKind::ConnectionRefused => DiagnosticsError::Stale {
            pid,
            socket: socket.to_path_buf(),
            why: "no server listens on it (connection refused)",
        },
        io::ErrorKind::PermissionDenied => DiagnosticsError::AccessDenied {
            pid,
            socket: socket.to_path_buf(),
            source: e,
        },
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => DiagnosticsError::Timeout {
            pid,
            step: Step::Connect,
            limit,
        },
        _ => DiagnosticsError::Io {
            pid,
            step: Step::Connect,
            source: e,
        },
    };
    let errno = |e: rustix::io::Errno| {
        // EPERM (an LSM's refusal) is a permission error too.
        match e == rustix::io::Errno::PERM {
            true => io_error(io::Error::from(io::ErrorKind::PermissionDenied)),
            false => io_error(io::Error::from(e)),
        }
    };
    let address = SocketAddrUnix::new(socket).map_err(errno)?;
    let fd = rustix::net::socket_with(
        AddressFamily::UNIX,
        SocketType::STREAM,
        SocketFlags::CLOEXEC,
        None,
    )
    .map_err(errno)?;
    sockopt::set_socket_timeout(&fd, sockopt::Timeout::Send, Some(limit)).map_err(errno)?;
    loop {
        match rustix::net::connect(&fd, &address) {
            Ok(()) => break,
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(errno(e)),
        }
    }
    Ok(UnixStream::from(fd))
}

/// An answer read off a connection: its kind and its payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OwnedAnswer {
    kind: AnswerKind,
    payload: Vec<u8>,
}

impl OwnedAnswer {
    /// The answer, its payload borrowed.
    ///
    /// # Errors
    ///
    /// As [`message::answer_from_payload`].
    pub fn answer(&self) -> Result<Answer<'_>, MessageError> {
        message::answer_from_payload(self.kind, &self.payload)
    }
}

/// Sends `command` with `payload` to the process `pid` listening on `socket`, and reads
/// one answer of at most `max_answer` bytes. The whole exchange (connect, send, receive)
/// must be over within `limit`; every read and write waits at most what is left.
///
/// # Errors
///
/// [`DiagnosticsError::InvalidRequest`] (too large: nothing is sent),
/// [`DiagnosticsError::Stale`], [`DiagnosticsError::AccessDenied`],
/// [`DiagnosticsError::Timeout`], [`DiagnosticsError::Io`],
/// [`DiagnosticsError::Malformed`] (a bad header, or the connection closed mid-answer).
pub(crate) fn exchange(
    socket: &Path,
    pid: u32,
    command: Command,
    payload: &[u8],
    max_answer: usize,
    limit: Duration,
) -> Result<OwnedAnswer, DiagnosticsError> {
    let request = message::encode_request(command, payload).map_err(|problem| {
        DiagnosticsError::InvalidRequest {
            pid,
            command,
            problem: problem.to_string(),
        }
    })?;
    let deadline = Instant::now() + limit;
    let stream = connect(socket, pid, limit)?;
    let mut connection = Connection {
        stream,
        pid,
        deadline,
        limit,
    };
    connection.send(&request)?;
    let malformed = |problem| DiagnosticsError::Malformed {
        pid,
        command,
        problem,
    };
    let mut header = [0u8; HEADER_SIZE];
    let got = connection.receive(&mut header)?;
    let header = decode_answer_header(&header[..got], max_answer).map_err(malformed)?;
    let mut payload = vec![0u8; header.payload_len];
    let got = connection.receive(&mut payload)?;
    if got < payload.len() {
        return Err(malformed(MessageError::Truncated {
            what: "the payload the header announces (the connection closed)",
            needed: HEADER_SIZE + payload.len(),
            got: HEADER_SIZE + got,
        }));
    }
    Ok(OwnedAnswer {
        kind: header.kind,
        payload,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_socket_names() {
        assert_eq!(
            parse_name("dotnet-diagnostic-23019-4294595-socket"),
            Some((23_019, 4_294_595))
        );
        for bad in [
            "dotnet-diagnostic-23019-socket",
            "dotnet-diagnostic--1-socket",
            "dotnet-diagnostic-+1-2-socket",
            "dotnet-diagnostic-1-2-3-socket",
            "dotnet-diagnostic-99999999999-2-socket",
            "dotnet-diagnostic-1-2-socket.bak",
            "dotnet-diagnostic-dsrouter-1-2-socket",
        ] {
            assert_eq!(parse_name(bad), None, "{bad}");
        }
    }

    fn file(key: u64, secs: u64) -> SocketFile {
        SocketFile {
            pid: 7,
            key,
            path: PathBuf::from(format!("/tmp/dotnet-diagnostic-7-{key}-socket")),
            owner: 0,
            modified: SystemTime::UNIX_EPOCH + Duration::from_secs(secs),
        }
    }

    #[test]
    fn picks_the_process_own_socket_or_the_newest() {
        let sockets = vec![file(100, 5), file(300, 9), file(200, 1)];
        let key = |picked: Option<Result<SocketFile, SocketFile>>| {
            picked.map(|p| p.map(|s| s.key).map_err(|s| s.key))
        };
        assert_eq!(key(pick(sockets.clone(), Some(200))), Some(Ok(200)));
        assert_eq!(key(pick(sockets.clone(), None)), Some(Ok(300)));
        assert_eq!(key(pick(sockets, Some(400))), Some(Err(300)));
        assert_eq!(key(pick(Vec::new(), None)), None);
    }
}

//! [`ControlServer`]: the dial's Unix socket, a thread that accepts connections, and a
//! thread per connection that serves it.

use std::collections::HashMap;
use std::fmt;
use std::fs;
use std::io::{self, Read};
use std::net::Shutdown;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::clr::log;
use crate::clr::runtime::guard::spawn_profiler_thread;

use super::command::Dial;
use super::directory::{clear_socket_path, prepare_directory};
use super::error::ControlError;
use super::peer::{effective_uid, peer_uid};
use super::session::{Ended, serve_connection, write_error};

/// How long a connection may stay silent (or leave an answer unread) before it is
/// closed.
pub(crate) const IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// How many connections are served at once; one more is answered
/// `error: busy: ...` and closed.
pub(crate) const MAX_CONNECTIONS: usize = 16;

/// How long a refused peer's input is drained before its connection is closed (so that
/// it reads its refusal, then the end, rather than a reset).
const DRAIN: Duration = Duration::from_millis(500);

/// The live dial's control channel: a Unix socket on which the process's own user
/// sends commands, one per line, to a [`Dial`].
///
/// [`start`](ControlServer::start) checks where the socket goes, binds it (mode 0600)
/// and accepts on a thread of its own; each connection is served on its own thread
/// (both are profiler threads: they may call any `ICorProfilerInfo` method), at most
/// 16 at once. A connection whose peer's user id (`SO_PEERCRED`) is
/// not the process's effective user id gets one line,
/// `error: refused: connection from uid N; only uid M may use this dial`, and is
/// closed: nothing it sends is read or carried out. Other connections are served line
/// by line: each line is answered by the lines of [`Dial::execute`] then `ok`, or by
/// one `error: WHY` line (a line that does not parse, or is longer than 4,096 bytes, or
/// is not UTF-8, or is empty, is answered so without calling the dial; a panic of the
/// dial is answered `error: internal: ...`). A connection silent for 60 s is closed.
///
/// Dropping it stops accepting (the accepting thread is woken and joined), closes
/// every open connection (a command being carried out finishes on its thread, its
/// answer lost), and removes the socket file if it is still the one bound.
pub struct ControlServer {
    path: PathBuf,
    /// The socket file's (device, inode), to remove only it.
    identity: (u64, u64),
    shared: Arc<Shared>,
    /// The listener's other handle, to shut it down (waking the accepting thread).
    listener: UnixListener,
    accept: Option<JoinHandle<()>>,
}

/// What the accepting thread and the connections share.
struct Shared {
    path: PathBuf,
    dial: Arc<dyn Dial>,
    own_uid: u32,
    stopping: AtomicBool,
    next_id: AtomicU64,
    /// The open connections (a handle each), to close them when the server stops.
    open: Mutex<HashMap<u64, UnixStream>>,
}

impl ControlServer {
    /// Listens on `socket` for the commands of the process's own user, carried out by
    /// `dial`.
    ///
    /// The socket's directory is created with mode 0700 when it is missing (its parent
    /// must exist); an existing one must be a real directory (not a symbolic link),
    /// owned by the process's effective user id, with no permission bit for its group
    /// or others. A stale socket of that user at `socket` (nothing listens) is removed;
    /// anything else there is an error. The socket gets mode 0600.
    ///
    /// # Errors
    /// [`ControlError`] naming the path: a directory that cannot be created or fails a
    /// check, a path taken, a socket that cannot be bound or given its mode, a thread
    /// that cannot be started. Nothing is left listening then.
    pub fn start(socket: &Path, dial: Arc<dyn Dial>) -> Result<ControlServer, ControlError> {
        let path = socket.to_path_buf();
        // `Path::file_name` ignores a final `/` (`dir/s/` names `s`), `bind` does not.
        if path.file_name().is_none() || path.as_os_str().as_bytes().ends_with(b"/") {
            return Err(ControlError::NoFileName { path });
        }
        let directory = match path.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent,
            _ => Path::new("."),
        };
        let own_uid = effective_uid();
        prepare_directory(directory, own_uid)?;
        clear_socket_path(&path, own_uid)?;
        let listener = UnixListener::bind(&path).map_err(|source| ControlError::Bind {
            path: path.clone(),
            source,
        })?;
        let io = |what, source| ControlError::Io {
            what,
            path: path.clone(),
            source,
        };
        let bound = (|| {
            fs::set_permissions(&path, fs::Permissions::from_mode(0o600))
                .map_err(|e| io("set the mode of", e))?;
            let metadata = fs::symlink_metadata(&path).map_err(|e| io("inspect", e))?;
            let wake = listener
                .try_clone()
                .map_err(|e| io("clone the socket of", e))?;
            Ok(((metadata.dev(), metadata.ino()), wake))
        })();
        let (identity, wake) = match bound {
            Ok(bound) => bound,
            Err(e) => {
                let _ = fs::remove_file(&path);
                return Err(e);
            }
        };
        let shared = Arc::new(Shared {
            path: path.clone(),
            dial,
            own_uid,
            stopping: AtomicBool::new(false),
            next_id: AtomicU64::new(0),
            open: Mutex::new(HashMap::new()),
        });
        let accepting = shared.clone();
        let accept = spawn_profiler_thread("ilrewrite dial", move || accepting.accept(&listener));
        let accept = match accept {
            Ok(handle) => handle,
            Err(source) => {
                let _ = fs::remove_file(&path);
                return Err(ControlError::Thread { path, source });
            }
        };
        Ok(ControlServer {
            path,
            identity,
            shared,
            listener: wake,
            accept: Some(accept),
        })
    }

    /// The socket's path, as given to [`start`](ControlServer::start).
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl fmt::Debug for ControlServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let open = self
            .shared
            .open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len();
        f.debug_struct("ControlServer")
            .field("path", &self.path)
            .field("open_connections", &open)
            .finish_non_exhaustive()
    }
}

impl Drop for ControlServer {
    fn drop(&mut self) {
        self.shared.stopping.store(true, Ordering::SeqCst);
        // Shutting the listening socket down makes a blocked accept return (Linux);
        // connecting wakes it elsewhere. When neither works the thread is left, ending
        // at its next connection.
        let woken = rustix::net::shutdown(&self.listener, rustix::net::Shutdown::Both).is_ok()
            || UnixStream::connect(&self.path).is_ok();
        if let (true, Some(accept)) = (woken, self.accept.take()) {
            let _ = accept.join();
        }
        let open: Vec<UnixStream> = self
            .shared
            .open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain()
            .map(|(_, stream)| stream)
            .collect();
        for stream in open {
            let _ = stream.shutdown(Shutdown::Both);
        }
        let ours = fs::symlink_metadata(&self.path)
            .is_ok_and(|metadata| (metadata.dev(), metadata.ino()) == self.identity);
        if ours {
            let _ = fs::remove_file(&self.path);
        }
    }
}

impl Shared {
    /// The accepting thread: until the server stops.
    fn accept(self: &Arc<Shared>, listener: &UnixListener) {
        loop {
            let accepted = listener.accept();
            if self.stopping.load(Ordering::SeqCst) {
                return;
            }
            match accepted {
                Ok((stream, _)) => self.connection(stream),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    log::throttled("dial: accept failed", || {
                        format!("dial {}: accept failed: {e}", self.path.display())
                    });
                    // Out of descriptors, say: do not spin.
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        }
    }

    /// Serves `stream` on a thread of its own, or answers `busy` when too many are open.
    fn connection(self: &Arc<Shared>, stream: UnixStream) {
        let _ = stream.set_read_timeout(Some(IDLE_TIMEOUT));
        let _ = stream.set_write_timeout(Some(IDLE_TIMEOUT));
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        {
            let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
            if open.len() >= MAX_CONNECTIONS {
                drop(open);
                let _ = stream.set_write_timeout(Some(DRAIN));
                let _ = refuse_busy(&stream);
                return;
            }
            match stream.try_clone() {
                Ok(handle) => open.insert(id, handle),
                Err(_) => return,
            };
        }
        let shared = self.clone();
        let spawned = spawn_profiler_thread("ilrewrite dial connection", move || {
            shared.serve(&stream);
            shared
                .open
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&id);
        });
        if spawned.is_err() {
            self.open
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&id);
        }
    }

    /// One connection, on its own thread.
    fn serve(&self, stream: &UnixStream) {
        let ended = match peer_uid(stream) {
            Ok(uid) => serve_connection(stream, uid, self.own_uid, &*self.dial),
            Err(why) => write_error(stream, &format!("refused: {why}")).map(|()| Ended::Refused),
        };
        if let Ok(Ended::Refused) = ended {
            log::throttled("dial: refused a connection", || {
                let peer = peer_uid(stream).map_or_else(|e| e, |uid| format!("uid {uid}"));
                format!(
                    "dial {}: refused a connection from {peer}",
                    self.path.display()
                )
            });
            drain(stream);
        }
    }
}

/// `error: busy: ...`, to a connection past [`MAX_CONNECTIONS`].
fn refuse_busy(stream: &UnixStream) -> io::Result<()> {
    write_error(
        stream,
        &format!("busy: {MAX_CONNECTIONS} connections are open; try again later"),
    )?;
    stream.shutdown(Shutdown::Write)
}

/// Closes the writing side, then reads and drops what the peer sends, for at most
/// [`DRAIN`] and 64 KiB, so that the peer reads the last line then the end of the
/// stream (a socket closed with unread input makes the peer's read fail instead).
fn drain(stream: &UnixStream) {
    let _ = stream.shutdown(Shutdown::Write);
    let _ = stream.set_read_timeout(Some(DRAIN));
    let mut sink = [0u8; 4096];
    let mut total = 0usize;
    let mut reader = stream;
    while total < 64 * 1024 {
        match reader.read(&mut sink) {
            Ok(0) | Err(_) => break,
            Ok(n) => total += n,
        }
    }
}

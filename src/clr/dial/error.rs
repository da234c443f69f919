//! [`ControlError`]: why the dial does not listen.

use std::io;
use std::path::PathBuf;

/// Why [`ControlServer::start`](super::ControlServer::start) did not listen. Every
/// message names the path concerned and is one line.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ControlError {
    /// The socket's path has no file name (it ends with `..` or `/`, or is empty).
    #[error("the dial's socket path {path:?} names no file")]
    NoFileName {
        /// The path given.
        path: PathBuf,
    },
    /// The directory was missing and could not be created (its parent must exist).
    #[error(
        "cannot create the dial's directory {path} (mode 0700; its parent must exist): {source}"
    )]
    CreateDirectory {
        /// The directory.
        path: PathBuf,
        /// The system's error.
        source: io::Error,
    },
    /// A file could not be inspected (`lstat`) or set up.
    #[error("cannot {what} {path}: {source}")]
    Io {
        /// What was done (`inspect`, `set the mode of`, `remove the stale socket`).
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The system's error.
        source: io::Error,
    },
    /// The directory is a symbolic link (its target could change under the dial).
    #[error("the dial's directory {path} is a symbolic link; it must be a real directory")]
    Symlink {
        /// The directory.
        path: PathBuf,
    },
    /// The directory is not a directory.
    #[error("the dial's directory {path} is not a directory")]
    NotADirectory {
        /// The path.
        path: PathBuf,
    },
    /// The directory belongs to another user.
    #[error(
        "the dial's directory {path} is owned by uid {owner}, not {expected} (this process's effective uid)"
    )]
    WrongOwner {
        /// The directory.
        path: PathBuf,
        /// Its owner.
        owner: u32,
        /// The process's effective user id.
        expected: u32,
    },
    /// The directory gives its group or others some access.
    #[error(
        "the dial's directory {path} is {what} (mode {mode:04o}); only its owner may have access (chmod 700)"
    )]
    OpenToOthers {
        /// The directory.
        path: PathBuf,
        /// Its permission bits (`st_mode & 07777`).
        mode: u32,
        /// The worst access it gives (`world-writable`, `group-writable`,
        /// `open to others`, `open to its group`).
        what: &'static str,
    },
    /// A file that is not a socket of this user's is at the socket's path.
    #[error("{path} exists and is not a socket of this user's; the dial does not replace it")]
    Occupied {
        /// The path.
        path: PathBuf,
    },
    /// A server listens at the socket's path already.
    #[error("{path} is in use: something listens there already")]
    InUse {
        /// The path.
        path: PathBuf,
    },
    /// The socket could not be bound.
    #[error("cannot listen on {path}: {source}")]
    Bind {
        /// The socket's path.
        path: PathBuf,
        /// The system's error.
        source: io::Error,
    },
    /// The thread that accepts connections could not be started.
    #[error("cannot start the thread of the dial on {path}: {source}")]
    Thread {
        /// The socket's path.
        path: PathBuf,
        /// The system's error.
        source: io::Error,
    },
}

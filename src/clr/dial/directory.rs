//! Where the dial's socket may be: a directory of the process's own user that nobody
//! else may enter, and a path free of anything but a stale socket of that user.

use std::fs::{self, DirBuilder};
use std::io;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};

use super::error::ControlError;

/// Makes sure `dir` can hold the dial's socket for user `euid`: creates it with mode
/// 0700 when it is missing (only the last component: its parent must exist), then
/// checks that it is a real directory (not a symbolic link), owned by `euid`, and with
/// no permission bit for its group or others.
pub(crate) fn prepare_directory(dir: &Path, euid: u32) -> Result<(), ControlError> {
    match fs::symlink_metadata(dir) {
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => create(dir)?,
        Err(source) => return Err(io_error("inspect", dir, source)),
    }
    let metadata = fs::symlink_metadata(dir).map_err(|e| io_error("inspect", dir, e))?;
    let path = dir.to_path_buf();
    if metadata.file_type().is_symlink() {
        return Err(ControlError::Symlink { path });
    }
    if !metadata.is_dir() {
        return Err(ControlError::NotADirectory { path });
    }
    if metadata.uid() != euid {
        return Err(ControlError::WrongOwner {
            path,
            owner: metadata.uid(),
            expected: euid,
        });
    }
    let mode = metadata.mode() & 0o7777;
    if let Some(what) = openness(mode) {
        return Err(ControlError::OpenToOthers { path, mode, what });
    }
    Ok(())
}

/// Frees `socket` for binding: nothing there, or a stale socket of user `euid`
/// (nothing listens: connecting is refused), which is removed.
pub(crate) fn clear_socket_path(socket: &Path, euid: u32) -> Result<(), ControlError> {
    let metadata = match fs::symlink_metadata(socket) {
        Ok(metadata) => metadata,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(source) => return Err(io_error("inspect", socket, source)),
    };
    if !metadata.file_type().is_socket() || metadata.uid() != euid {
        return Err(ControlError::Occupied {
            path: socket.to_path_buf(),
        });
    }
    match UnixStream::connect(socket) {
        Ok(_) => Err(ControlError::InUse {
            path: socket.to_path_buf(),
        }),
        Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => match fs::remove_file(socket) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(source) => Err(io_error("remove the stale socket", socket, source)),
        },
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(io_error("connect to the existing socket", socket, source)),
    }
}

/// The worst access that permission bits `mode` give the group or others, if any.
pub(crate) fn openness(mode: u32) -> Option<&'static str> {
    match mode {
        m if m & 0o002 != 0 => Some("world-writable"),
        m if m & 0o020 != 0 => Some("group-writable"),
        m if m & 0o007 != 0 => Some("open to others"),
        m if m & 0o070 != 0 => Some("open to its group"),
        _ => None,
    }
}

/// Creates `dir` (its last component) with mode 0700; one created meanwhile by someone
/// else is left to the checks.
fn create(dir: &Path) -> Result<(), ControlError> {
    match DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {
            // The umask may have taken bits away; the owner needs all three.
            fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
                .map_err(|e| io_error("set the mode of", dir, e))
        }
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(source) => Err(ControlError::CreateDirectory {
            path: dir.to_path_buf(),
            source,
        }),
    }
}

fn io_error(what: &'static str, path: &Path, source: io::Error) -> ControlError {
    ControlError::Io {
        what,
        path: PathBuf::from(path),
        source,
    }
}

//! Who may use the dial: the peer's user id (`SO_PEERCRED`, through `rustix`) against
//! the process's effective user id.

use std::os::unix::net::UnixStream;

/// Whether a peer whose user id is `peer_uid` may use the dial of a process whose
/// effective user id is `own_uid`: only when they are equal. Root is not special: the
/// dial of a process running as root accepts only root, and root cannot use the dial of
/// another user's process.
///
/// # Errors
/// `connection from uid N; only uid M may use this dial` (one line) for any other uid.
pub fn check_peer(peer_uid: u32, own_uid: u32) -> Result<(), String> {
    match peer_uid == own_uid {
        true => Ok(()),
        false => Err(format!(
            "connection from uid {peer_uid}; only uid {own_uid} may use this dial"
        )),
    }
}

/// The process's effective user id.
pub(crate) fn effective_uid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// The user id of the process at the other end of `stream`, as the kernel recorded it
/// when it connected (`SO_PEERCRED`).
#[cfg(any(target_os = "linux", target_os = "android"))]
pub(crate) fn peer_uid(stream: &UnixStream) -> Result<u32, String> {
    rustix::net::sockopt::socket_peercred(stream)
        .map(|credentials| credentials.uid.as_raw())
        .map_err(|e| format!("cannot read the peer's credentials (SO_PEERCRED): {e}"))
}

/// Elsewhere no peer is known, so every connection is refused.
#[cfg(not(any(target_os = "linux", target_os = "android")))]
pub(crate) fn peer_uid(_stream: &UnixStream) -> Result<u32, String> {
    Err("the peer's credentials cannot be read on this system (SO_PEERCRED is Linux's)".into())
}

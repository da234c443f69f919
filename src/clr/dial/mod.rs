//! The live dial: a line-based control channel through which the user who owns the
//! process changes, while it runs, which methods run which instrumentation (ReJIT).
//!
//! [`Command`], naming methods by [`Selector`](crate::selector::Selector), is what one line says ([`parse`], the
//! grammar; [`help_lines`], its description); [`Dial`] is what carries commands out
//! (the manager's ReJIT control); [`ControlServer`] is the channel: a Unix socket in a
//! directory only the process's user may enter, serving only connections whose peer
//! runs as that user ([`check_peer`]), each line answered by the dial's lines then
//! `ok`, or by one `error: WHY` line. Unix only: the peer's user id comes from
//! `SO_PEERCRED` (Linux; elsewhere every connection is refused).
//!
//! Files, one job each: `command.rs` (the commands and the [`Dial`] trait), `parse.rs`
//! (the grammar, pure), `peer.rs` (who may connect), `directory.rs` (where the socket
//! may be), `session.rs` (one connection: lines in, answers out), `server.rs` (the
//! socket and its threads), `error.rs` ([`ControlError`]).
#![forbid(unsafe_code)]

mod command;
mod directory;
mod error;
mod parse;
mod peer;
mod server;
mod session;

pub use command::{Command, Dial};
pub use error::ControlError;
pub use parse::{MAX_LINE, ParseError, help_lines, parse};
pub use peer::check_peer;
pub use server::ControlServer;

#[cfg(test)]
mod parse_tests;
#[cfg(test)]
mod property_tests;
#[cfg(test)]
mod server_tests;

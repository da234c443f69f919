//! A client of the .NET runtime's diagnostics IPC (feature `attach`, Unix): find the
//! .NET processes of this user, ask one what it is, ask it to load a profiler now.
//!
//! CoreCLR 3.0 and later listen on a Unix socket per process,
//! `$TMPDIR/dotnet-diagnostic-{pid}-{key}-socket` (`/tmp` without `TMPDIR`), and serve
//! one command a connection in the Diagnostics IPC protocol (dotnet/diagnostics,
//! `documentation/design-docs/ipc-protocol.md`). This module needs nothing of the `clr`
//! feature: a tool that only attaches carries no profiler code.
//!
//! ```no_run
//! use ilrewrite::diagnostics::{Guid, Process, RuntimeError};
//! use std::time::Duration;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! for entry in Process::list()? {
//!     match &entry.info {
//!         Ok(info) => println!("{} {} ({})", info.pid, info.command_line, info.runtime_version),
//!         Err(e) => println!("{}: {e}", entry.process.pid()),
//!     }
//! }
//! let process = Process::open(4242)?;
//! let info = process.info()?;
//! println!("{} on {}", info.command_line, info.runtime_version);
//! let clsid = Guid::parse("{0B5C3F2A-7D41-4E8B-9A6C-2E1F4D7B8C93}")?;
//! let library = std::path::Path::new("/opt/profiler/libprofiler.so");
//! match process.attach_profiler(clsid, library, b"", Duration::from_secs(10)) {
//!     Ok(()) => println!("attached"),
//!     Err(e) if e.runtime_error() == Some(RuntimeError::ProfilerAlreadyActive) => {
//!         println!("a profiler is loaded already")
//!     }
//!     Err(e) => return Err(e.into()),
//! }
//! # Ok(())
//! # }
//! ```
//!
//! Floors, each importing only from below:
//!
//! ```text
//! list.rs     6  Process::list: the .NET processes of this user, each one's info
//! client.rs   5  Process: open, info (ProcessInfo2, ProcessInfo, /proc), attach_profiler
//! socket.rs   4  the socket of a pid (its own, this user's); one exchange under one deadline
//! error.rs    3  DiagnosticsError; RuntimeError, the HRESULTs by name
//! message.rs  2  headers and payloads as bytes: encode requests, decode answers (never panics)
//! guid.rs     1  Guid, as the protocol sends it
//! system.rs   1  the OS: alive, start time, /proc command line and maps, our uid
//! ```
//!
//! What each call guarantees:
//!
//! * **Bounded time.** An exchange (connect, send, receive) is over within its time
//!   limit whatever the other end does: it answers garbage, half a header, nothing, or
//!   keeps its listen queue full.
//! * **No panic on any answer.** Answers are decoded by [`message`], which checks every
//!   length against the bytes it has; a bad answer is [`DiagnosticsError::Malformed`]
//!   saying what was wrong.
//! * **The right socket.** A socket is used only if its name's key is the live
//!   process's start time (Linux), so one left by an earlier process with a reused id
//!   is not, and only if this user owns it (checked before connecting, root included).
//! * **Typed failures.** No such process, not .NET, another user's, stale, timeout,
//!   malformed, and the runtime's refusals by HRESULT ([`RuntimeError`]).
#![forbid(unsafe_code)]

mod client;
mod error;
mod guid;
mod list;
pub mod message;
mod socket;
mod system;

pub use client::{DEFAULT_TIMEOUT, InfoSource, Process, ProcessInfo, RuntimeVersion};
pub use error::{DiagnosticsError, RuntimeError, Step};
pub use guid::{Guid, ParseGuidError};
pub use list::ProcessEntry;
pub use message::{Command, MessageError};

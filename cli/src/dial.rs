//! `ilrewrite dial SOCKET [COMMAND...]`: a client of the live dial, the control channel
//! through which the user who owns a profiled process changes, while it runs, which
//! methods run which instrumentation (`ilrewrite::clr::dial`, Unix only). Plain std: it
//! needs no feature of the crate.
//!
//! ```text
//! ilrewrite dial /run/user/1000/ilrewrite/dial.sock state
//! ilrewrite dial "$SOCK" 'instrument App.Orders::Place timing threshold_ms=5' state
//! printf 'revert App.Orders::*\nstate\n' | ilrewrite dial "$SOCK"
//! ```
//!
//! With commands as arguments it sends each (one argument, one line; an argument
//! holding a newline is refused) over one connection, in order; with none it sends
//! the lines of its standard input (blank lines skipped). It waits for each answer
//! before sending the next line, and prints every line of it on standard output.
//!
//! The protocol: the client sends one command per line (`\n`; a final `\r` is
//! ignored; at most 4,096 bytes; `help` lists the commands). The dial answers every
//! line with zero or more lines, then a final line that is either `ok` (done) or
//! `error: WHY` (nothing changed; the only line of the answer, most often). No other
//! line of an answer is `ok` or starts with `error:`. A connection whose peer is not
//! the process's own user gets one line, `error: refused: ...`, and is closed; one
//! past the dial's limit of open connections gets `error: busy: ...` and is closed:
//! after either, nothing more is sent.
//!
//! Status 0 when every answer ended in `ok`; 1 when one ended in `error: ` (a refused
//! or busy connection included); 2 for bad arguments (a command holding a newline
//! included); 3 when it cannot connect, or the connection (or standard input) failed,
//! or the connection ended before the final line of an answer (said on standard
//! error).

use crate::Status;
use std::ffi::OsString;
use std::path::PathBuf;

/// The arguments of `dial`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The dial's Unix socket (the profiler's ILREWRITE_DIAL; it prints `ilrewrite: dial
    /// listening on PATH` at start-up)
    socket: PathBuf,
    /// Commands, one argument each, sent in order over one connection (`help` lists
    /// them) [default: the lines of standard input, blank ones skipped]
    #[arg(value_name = "COMMAND")]
    commands: Vec<OsString>,
}

/// Runs `dial`.
#[cfg(not(unix))]
pub(crate) fn run(args: Args) -> Status {
    let _ = args;
    eprintln!("ilrewrite dial: the live dial is a Unix socket; this system has none");
    Status::Unreachable
}

/// Runs `dial`.
#[cfg(unix)]
pub(crate) fn run(args: Args) -> Status {
    unix::run(args)
}

#[cfg(unix)]
mod unix {
    use super::Args;
    use crate::Status;
    use std::ffi::OsString;
    use std::io::{self, BufRead, BufReader, Write};
    use std::os::unix::ffi::OsStringExt;
    use std::os::unix::net::UnixStream;

    /// What an answer ended with.
    enum Answer {
        Ok,
        Error,
        /// `error: refused: ...` or `error: busy: ...`: the dial closes the connection.
        Closed,
    }

    pub(super) fn run(args: Args) -> Status {
        let Args { socket, commands } = args;
        let commands: Vec<Vec<u8>> = commands.into_iter().map(OsString::into_vec).collect();
        if let Some(bad) = commands.iter().find(|c| c.contains(&b'\n')) {
            return crate::usage_error(
                "dial",
                format!(
                    "{:?} holds a newline; a command is one line (one argument each)",
                    String::from_utf8_lossy(bad)
                ),
            );
        }
        let stream = match UnixStream::connect(&socket) {
            Ok(stream) => stream,
            Err(e) => {
                eprintln!(
                    "ilrewrite dial: cannot connect to {}: {e}",
                    socket.display()
                );
                return Status::Unreachable;
            }
        };
        let mut connection = Connection::new(stream);
        let outcome = match commands.is_empty() {
            false => commands
                .iter()
                .try_fold(Status::Ok, |status, line| connection.send(line, status)),
            true => from_stdin(&mut connection),
        };
        match outcome {
            Ok(status) | Err(status) => status,
        }
    }

    /// Sends the lines of standard input (without their `\n`), skipping blank ones.
    fn from_stdin(connection: &mut Connection) -> Result<Status, Status> {
        let mut stdin = io::stdin().lock();
        let mut status = Status::Ok;
        let mut line = Vec::new();
        loop {
            line.clear();
            match stdin.read_until(b'\n', &mut line) {
                Ok(0) => return Ok(status),
                Ok(_) => {}
                Err(e) => {
                    eprintln!("ilrewrite dial: cannot read standard input: {e}");
                    return Err(Status::Unreachable);
                }
            }
            if line.last() == Some(&b'\n') {
                line.pop();
            }
            if line.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r')) {
                continue;
            }
            status = connection.send(&line, status)?;
        }
    }

    struct Connection {
        reader: BufReader<UnixStream>,
    }

    impl Connection {
        fn new(stream: UnixStream) -> Connection {
            Connection {
                reader: BufReader::new(stream),
            }
        }

        /// Sends `line`, prints its answer: the run's status so far, or `Err` with the
        /// final status when the connection is over.
        fn send(&mut self, line: &[u8], status: Status) -> Result<Status, Status> {
            let mut request = line.to_vec();
            request.push(b'\n');
            // A refused connection may be closed already; its refusal is still there
            // to read, so a failed write is reported only when no answer comes.
            let written = self.reader.get_mut().write_all(&request);
            match self.answer() {
                Ok(Answer::Ok) => Ok(status),
                Ok(Answer::Error) => Ok(status.max(Status::Failure)),
                Ok(Answer::Closed) => Err(status.max(Status::Failure)),
                Err(why) => {
                    match written {
                        Err(e) => eprintln!("ilrewrite dial: cannot send a command: {e}"),
                        Ok(()) => eprintln!("ilrewrite dial: {why}"),
                    }
                    Err(Status::Unreachable)
                }
            }
        }

        /// Reads and prints one answer, up to and including its final line.
        fn answer(&mut self) -> Result<Answer, String> {
            let mut stdout = io::stdout().lock();
            let mut line = Vec::new();
            loop {
                line.clear();
                let read = self.reader.read_until(b'\n', &mut line);
                let complete = line.last() == Some(&b'\n');
                if !line.is_empty() {
                    // What came is shown, even a line the connection cut short.
                    if !complete {
                        line.push(b'\n');
                    }
                    stdout
                        .write_all(&line)
                        .and_then(|()| stdout.flush())
                        .map_err(|e| format!("cannot write the answer: {e}"))?;
                }
                match read {
                    Err(e) => return Err(format!("the connection failed within an answer: {e}")),
                    Ok(_) if !complete => {
                        return Err("the connection ended before the answer's final line".into());
                    }
                    Ok(_) => {}
                }
                let text = &line[..line.len() - 1];
                if text == b"ok" {
                    return Ok(Answer::Ok);
                }
                if text.starts_with(b"error: refused: ") || text.starts_with(b"error: busy: ") {
                    return Ok(Answer::Closed);
                }
                if text.starts_with(b"error: ") {
                    return Ok(Answer::Error);
                }
            }
        }
    }
}

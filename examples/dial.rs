//! `dial`: a client of the live dial, the control channel through which the user who
//! owns a profiled process changes, while it runs, which methods run which
//! instrumentation (`ilrewrite::clr::dial`, Unix only). Plain std: it needs no feature
//! of the crate.
//!
//! ```text
//! dial SOCKET [COMMAND ...]
//!
//! cargo run --example dial -- /run/user/1000/ilrewrite/dial.sock state
//! cargo run --example dial -- "$SOCK" 'instrument App.Orders::Place timing threshold_ms=5' state
//! printf 'revert App.Orders::*\nstate\n' | cargo run --example dial -- "$SOCK"
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
//! Exit status: 0 when every answer ended in `ok`; 1 when one ended in `error: `
//! (a refused or busy connection included); 2 when it cannot connect, or the
//! connection failed or ended before the final line of an answer (said on standard
//! error), or for a usage error.

use std::process::ExitCode;

#[cfg(unix)]
fn main() -> ExitCode {
    unix::main()
}

#[cfg(not(unix))]
fn main() -> ExitCode {
    eprintln!("dial: the live dial is a Unix socket; this system has none");
    ExitCode::from(2)
}

#[cfg(unix)]
mod unix {
    use std::ffi::OsString;
    use std::io::{self, BufRead, BufReader, Write};
    use std::os::unix::ffi::OsStringExt;
    use std::os::unix::net::UnixStream;
    use std::path::PathBuf;
    use std::process::ExitCode;

    const USAGE: &str = "usage: dial SOCKET [COMMAND ...]   (no COMMAND: one per line on standard input; `help` lists them)";

    /// How a run ends, and its exit status.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
    enum Status {
        /// Every answer ended in `ok`.
        Ok = 0,
        /// An answer ended in `error: `.
        Error = 1,
        /// No connection, a connection that failed or ended early, a usage error.
        Failed = 2,
    }

    /// What an answer ended with.
    enum Answer {
        Ok,
        Error,
        /// `error: refused: ...` or `error: busy: ...`: the dial closes the connection.
        Closed,
    }

    pub(super) fn main() -> ExitCode {
        let status = run(std::env::args_os().skip(1).collect());
        ExitCode::from(status as u8)
    }

    fn run(args: Vec<OsString>) -> Status {
        let mut args = args.into_iter();
        let Some(socket) = args.next() else {
            eprintln!("{USAGE}");
            return Status::Failed;
        };
        if socket == "-h" || socket == "--help" {
            println!("{USAGE}");
            return Status::Ok;
        }
        let socket = PathBuf::from(socket);
        let commands: Vec<Vec<u8>> = args.map(OsString::into_vec).collect();
        if let Some(bad) = commands.iter().find(|c| c.contains(&b'\n')) {
            eprintln!(
                "dial: {:?} holds a newline; a command is one line (one argument each)",
                String::from_utf8_lossy(bad)
            );
            return Status::Failed;
        }
        let stream = match UnixStream::connect(&socket) {
            Ok(stream) => stream,
            Err(e) => {
                eprintln!("dial: cannot connect to {}: {e}", socket.display());
                return Status::Failed;
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
                    eprintln!("dial: cannot read standard input: {e}");
                    return Err(Status::Failed);
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
                Ok(Answer::Error) => Ok(status.max(Status::Error)),
                Ok(Answer::Closed) => Err(status.max(Status::Error)),
                Err(why) => {
                    match written {
                        Err(e) => eprintln!("dial: cannot send a command: {e}"),
                        Ok(()) => eprintln!("dial: {why}"),
                    }
                    Err(Status::Failed)
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

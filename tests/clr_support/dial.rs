//! A client of the live dial (a profiler's Unix socket): one command per line, answered
//! by lines and then `ok` or `error: WHY`.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};

/// A fresh path for one test's dial socket (its directory not created: the profiler
/// makes it).
pub fn socket_in(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("dial-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir.join("dial.sock")
}

/// A connection to a dial.
pub struct DialClient {
    reader: BufReader<UnixStream>,
}

impl DialClient {
    /// Connects to the dial listening at `socket`.
    pub fn connect(socket: &Path) -> DialClient {
        let stream = UnixStream::connect(socket)
            .unwrap_or_else(|e| panic!("connect to {}: {e}", socket.display()));
        DialClient {
            reader: BufReader::new(stream),
        }
    }

    /// Sends `line`; the answer's lines before `ok`, or the error after `error: `.
    pub fn ask(&mut self, line: &str) -> Result<Vec<String>, String> {
        self.reader
            .get_mut()
            .write_all(format!("{line}\n").as_bytes())
            .expect("the command is sent");
        let mut lines = Vec::new();
        loop {
            let mut answer = String::new();
            let n = self.reader.read_line(&mut answer).expect("an answer");
            if n == 0 {
                return Err(format!("CLOSED: the dial closed the connection: {lines:?}"));
            }
            let answer = answer.trim_end_matches('\n');
            if answer == "ok" {
                return Ok(lines);
            }
            if let Some(error) = answer.strip_prefix("error: ") {
                return Err(error.to_owned());
            }
            lines.push(answer.to_owned());
        }
    }

    /// Sends `line`, which must succeed.
    pub fn ok(&mut self, line: &str) -> Vec<String> {
        self.ask(line)
            .unwrap_or_else(|e| panic!("{line:?} failed: {e}"))
    }
}

//! One connection of the dial: the peer check, then line after line, each parsed,
//! carried out and answered ([`serve_connection`]). Generic over the stream, so that
//! it runs on a socket as on a pair made by a test.

use std::io::{self, BufRead, BufReader, Read, Write};

use super::command::Dial;
use super::parse::{MAX_LINE, ParseError, parse};
use super::peer::check_peer;
use crate::clr::log;

/// The last line of an answer that succeeded.
pub(crate) const OK: &str = "ok";

/// How every answer that failed starts (its last and often only line).
pub(crate) const ERROR: &str = "error: ";

/// How a connection ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ended {
    /// The peer was refused: one `error: refused: ...` line, nothing read.
    Refused,
    /// The peer closed its side (after its last line was answered).
    Closed,
}

/// Serves one connection from a peer whose user id is `peer_uid` in a process whose
/// effective user id is `own_uid`.
///
/// A refused peer ([`check_peer`]) gets exactly one line,
/// `error: refused: connection from uid N; only uid M may use this dial`, and nothing
/// of what it sends is read. Otherwise every line (up to `\n`, or the end of the
/// stream for a last line without one) gets exactly one answer, flushed at once:
///
/// * more than [`MAX_LINE`] bytes: `error: line of N bytes; ...` once the line ended;
/// * not UTF-8, or not a command ([`parse`]; an empty line too): `error: WHY`, and
///   `dial` is not called;
/// * otherwise `dial.execute(&command)`: on `Ok(lines)`, each line, then `ok`; on
///   `Err(why)`, `error: WHY`; on a panic, `error: internal: ...`.
///
/// No line of an answer holds `\n` or `\r` (they become spaces), and a line of the
/// dial's that reads `ok` or starts with `error:` is written after one space, so the
/// last line of an answer is the only one that is `ok` or starts with `error: `.
///
/// # Errors
/// The stream's read or write error (a timeout included): the connection is over.
pub(crate) fn serve_connection<S: Read + Write>(
    stream: S,
    peer_uid: u32,
    own_uid: u32,
    dial: &dyn Dial,
) -> io::Result<Ended> {
    let mut stream = stream;
    if let Err(why) = check_peer(peer_uid, own_uid) {
        write_error(&mut stream, &format!("refused: {why}"))?;
        return Ok(Ended::Refused);
    }
    let mut input = BufReader::new(stream);
    let mut line = Vec::new();
    let mut answer = Vec::new();
    while let Some(length) = read_line(&mut input, &mut line)? {
        answer.clear();
        match length {
            Length::Within => respond(&line, dial, &mut answer),
            Length::TooLong(n) => error(&mut answer, &ParseError::TooLong(n).to_string()),
        }
        let stream = input.get_mut();
        stream.write_all(&answer)?;
        stream.flush()?;
    }
    Ok(Ended::Closed)
}

/// Writes the line `error: WHY` and flushes it: the last line of a connection that is
/// not served (`refused: ...`, `busy: ...`).
pub(crate) fn write_error<W: Write>(mut stream: W, why: &str) -> io::Result<()> {
    let mut answer = Vec::new();
    error(&mut answer, why);
    stream.write_all(&answer)?;
    stream.flush()
}

/// Whether a line read fits [`MAX_LINE`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Length {
    /// It does; it is in the buffer.
    Within,
    /// It is this many bytes long (without its `\n`); the buffer holds nothing of it.
    TooLong(usize),
}

/// Reads the next line into `line` (without its `\n`), keeping at most [`MAX_LINE`]
/// bytes in memory: a longer line is read to its end and dropped. `None` at the end of
/// the stream.
fn read_line<R: BufRead>(input: &mut R, line: &mut Vec<u8>) -> io::Result<Option<Length>> {
    line.clear();
    let mut length = 0usize;
    let mut any = false;
    loop {
        let available = match input.fill_buf() {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            if !any {
                return Ok(None);
            }
            break;
        }
        any = true;
        let end = available.iter().position(|&b| b == b'\n');
        let chunk = &available[..end.unwrap_or(available.len())];
        length = length.saturating_add(chunk.len());
        if length <= MAX_LINE {
            line.extend_from_slice(chunk);
        } else {
            line.clear();
        }
        let consumed = chunk.len() + usize::from(end.is_some());
        input.consume(consumed);
        if end.is_some() {
            break;
        }
    }
    Ok(Some(match length <= MAX_LINE {
        true => Length::Within,
        false => Length::TooLong(length),
    }))
}

/// The answer to one line of at most [`MAX_LINE`] bytes.
fn respond(line: &[u8], dial: &dyn Dial, answer: &mut Vec<u8>) {
    let text = match std::str::from_utf8(line) {
        Ok(text) => text,
        Err(e) => return error(answer, &ParseError::NotUtf8(e.valid_up_to()).to_string()),
    };
    let command = match parse(text) {
        Ok(command) => command,
        Err(e) => return error(answer, &e.to_string()),
    };
    match log::contain(|| dial.execute(&command)) {
        Ok(Ok(lines)) => {
            for line in &lines {
                let line = one_line(line);
                if line == OK || line.starts_with(ERROR.trim_end()) {
                    answer.push(b' ');
                }
                push_line(answer, &line);
            }
            push_line(answer, OK);
        }
        Ok(Err(why)) => error(answer, &why),
        Err(message) => {
            let why = format!(
                "internal: the dial panicked while carrying out `{}`: {message}",
                command.verb(),
            );
            log::write(&format!("dial: {}", one_line(&why)));
            error(answer, &why);
        }
    }
}

/// Appends `error: WHY`.
fn error(answer: &mut Vec<u8>, why: &str) {
    push_line(answer, &format!("{ERROR}{why}"));
}

/// Appends `text` (already one line) and a `\n`.
fn push_line(answer: &mut Vec<u8>, text: &str) {
    answer.extend_from_slice(one_line(text).as_bytes());
    answer.push(b'\n');
}

/// `text` with every `\n` and `\r` made a space.
fn one_line(text: &str) -> String {
    text.replace(['\n', '\r'], " ")
}

//! The Diagnostics IPC protocol's messages, as bytes: requests encoded, answers decoded.
//!
//! A message is a 20-byte header, then a payload:
//!
//! ```text
//! magic     14 bytes  "DOTNET_IPC_V1\0"
//! size      u16       the whole message, header included (so at least 20)
//! set       u8        the command set (0x03 Profiler, 0x04 Process, 0xFF Server)
//! id        u8        the command within the set
//! reserved  u16       0
//! payload   size - 20 bytes
//! ```
//!
//! Numbers are little-endian; a string is a u32 count of UTF-16 code units, the
//! terminating NUL included (0 for an empty or absent string), then the units. Every
//! answer is of the Server set: `OK` (0x00) with the command's payload, or `Error`
//! (0xFF) with an HRESULT (u32) first.
//!
//! Nothing here panics on any input: every decoder checks each length against the
//! bytes it has (property-tested over random and mutated answers) and says what was
//! wrong in a [`MessageError`].

use super::guid::Guid;

/// The magic every message starts with: `DOTNET_IPC_V1` and a NUL.
pub const MAGIC: [u8; 14] = *b"DOTNET_IPC_V1\0";

/// The size of a header, and so the smallest message.
pub const HEADER_SIZE: usize = 20;

/// The largest message the protocol can describe (its size field is a u16).
pub const MAX_MESSAGE: usize = u16::MAX as usize;

/// The Server command set: every answer is of it.
pub const SERVER_SET: u8 = 0xFF;
/// The Server set's `OK` answer.
pub const ANSWER_OK: u8 = 0x00;
/// The Server set's `Error` answer: an HRESULT follows.
pub const ANSWER_ERROR: u8 = 0xFF;

/// A command: its set and its id within the set, and a name for messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Command {
    /// The command set (0x03 Profiler, 0x04 Process, ...).
    pub set: u8,
    /// The command's id within its set.
    pub id: u8,
    /// Its name in the protocol's documentation (`ProcessInfo2`).
    pub name: &'static str,
}

impl Command {
    /// Process set, `ProcessInfo` (.NET 5+): pid, runtime cookie, command line, OS and
    /// architecture.
    pub const PROCESS_INFO: Command = Command {
        set: 0x04,
        id: 0x00,
        name: "ProcessInfo",
    };
    /// Process set, `ProcessInfo2` (.NET 6+): `ProcessInfo`'s fields, then the managed
    /// entry point's assembly name and the runtime's product version.
    pub const PROCESS_INFO2: Command = Command {
        set: 0x04,
        id: 0x04,
        name: "ProcessInfo2",
    };
    /// Profiler set, `AttachProfiler` (.NET Core 3.0+): load a profiler into the running
    /// process.
    pub const ATTACH_PROFILER: Command = Command {
        set: 0x03,
        id: 0x01,
        name: "AttachProfiler",
    };
}

impl std::fmt::Display for Command {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (0x{:02X}{:02X})", self.name, self.set, self.id)
    }
}

/// What is wrong with a message: one being decoded (every variant but the last two),
/// or a request that cannot be encoded ([`MessageError::RequestTooLarge`],
/// [`MessageError::NulInString`]). Offsets count from the message's first byte.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MessageError {
    /// The bytes end before what they must hold (a header, a payload the header
    /// announced, a field).
    #[error("it ends after {got} bytes where {needed} are needed ({what})")]
    Truncated {
        /// What was being read.
        what: &'static str,
        /// How many bytes there had to be.
        needed: usize,
        /// How many there were.
        got: usize,
    },
    /// The first 14 bytes are not `DOTNET_IPC_V1\0`.
    #[error("its magic is {}, not \"DOTNET_IPC_V1\\0\"", escape(.0))]
    BadMagic([u8; 14]),
    /// The header's size is smaller than a header.
    #[error("its header gives a size of {0} bytes, less than the header's 20")]
    SizeTooSmall(u16),
    /// The header's size is larger than this answer may be.
    #[error("its header gives a size of {size} bytes; this answer may have at most {limit}")]
    SizeTooLarge {
        /// The size the header gives.
        size: u16,
        /// The largest the decoder accepts.
        limit: usize,
    },
    /// An answer of another command set than Server (0xFF).
    #[error("it is of command set 0x{set:02X} (command 0x{id:02X}), not an answer (set 0xFF)")]
    NotAnAnswer {
        /// Its command set.
        set: u8,
        /// Its command id.
        id: u8,
    },
    /// A Server answer that is neither OK (0x00) nor Error (0xFF).
    #[error("it is Server answer 0x{0:02X}, neither OK (0x00) nor Error (0xFF)")]
    UnknownAnswer(u8),
    /// The header's size and the bytes given disagree: more bytes than it announced, or
    /// a payload longer than its fields.
    #[error("{extra} bytes follow its last field ({what})")]
    TrailingBytes {
        /// What was complete.
        what: &'static str,
        /// How many bytes followed.
        extra: usize,
    },
    /// A string whose count of code units runs past the payload.
    #[error("the string at offset {at} claims {units} UTF-16 units; {left} bytes are left")]
    StringTooLong {
        /// Where its length is.
        at: usize,
        /// The count it gives.
        units: u32,
        /// The bytes after the count.
        left: usize,
    },
    /// A string whose last code unit is not a NUL.
    #[error("the string at offset {at} does not end with a NUL")]
    StringNotTerminated {
        /// Where its length is.
        at: usize,
    },
    /// A request whose size does not fit the header's u16.
    #[error("the request would be {size} bytes; a message has at most 65535")]
    RequestTooLarge {
        /// The size it would have.
        size: usize,
    },
    /// A string to send that holds a NUL (the runtime would read only what precedes it).
    #[error("the {what} holds a NUL character")]
    NulInString {
        /// Which string.
        what: &'static str,
    },
}

/// `bytes` as text, non-printable bytes escaped.
fn escape(bytes: &[u8]) -> String {
    format!("\"{}\"", bytes.escape_ascii())
}

/// A request's payload, written field by field in the protocol's encoding.
#[derive(Debug, Default, Clone)]
pub struct Payload(Vec<u8>);

impl Payload {
    /// An empty payload.
    pub fn new() -> Payload {
        Payload::default()
    }

    /// Appends a u32, little-endian.
    pub fn u32(&mut self, value: u32) -> &mut Payload {
        self.0.extend_from_slice(&value.to_le_bytes());
        self
    }

    /// Appends a GUID's 16 bytes ([`Guid::to_bytes`]).
    pub fn guid(&mut self, guid: &Guid) -> &mut Payload {
        self.0.extend_from_slice(&guid.to_bytes());
        self
    }

    /// Appends a string: its UTF-16 code units and a NUL, counted (an empty string is
    /// the count 1 and a NUL, as the runtime's own clients send it).
    ///
    /// # Errors
    ///
    /// [`MessageError::NulInString`] if `text` holds a NUL (named `what`).
    pub fn string(&mut self, text: &str, what: &'static str) -> Result<&mut Payload, MessageError> {
        if text.contains('\0') {
            return Err(MessageError::NulInString { what });
        }
        let units: Vec<u16> = text.encode_utf16().chain([0]).collect();
        // A string longer than a message is refused when the message is encoded.
        let count = u32::try_from(units.len()).unwrap_or(u32::MAX);
        self.u32(count);
        for unit in units {
            self.0.extend_from_slice(&unit.to_le_bytes());
        }
        Ok(self)
    }

    /// Appends an `array<byte>`: a u32 count, then the bytes.
    pub fn bytes(&mut self, bytes: &[u8]) -> &mut Payload {
        self.u32(u32::try_from(bytes.len()).unwrap_or(u32::MAX));
        self.0.extend_from_slice(bytes);
        self
    }

    /// The bytes written so far.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

/// The message for `command` with `payload`: a header whose size counts both, then the
/// payload.
///
/// # Errors
///
/// [`MessageError::RequestTooLarge`] if the message would exceed 65,535 bytes.
pub fn encode_request(command: Command, payload: &[u8]) -> Result<Vec<u8>, MessageError> {
    let size = HEADER_SIZE + payload.len();
    let size16 = u16::try_from(size).map_err(|_| MessageError::RequestTooLarge { size })?;
    let mut message = Vec::with_capacity(size);
    message.extend_from_slice(&MAGIC);
    message.extend_from_slice(&size16.to_le_bytes());
    message.extend_from_slice(&[command.set, command.id, 0, 0]);
    message.extend_from_slice(payload);
    Ok(message)
}

/// The kind of an answer, from its header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerKind {
    /// Server `OK`: the command's payload follows.
    Ok,
    /// Server `Error`: an HRESULT follows.
    Error,
}

/// An answer's header, checked: what it is and how many payload bytes follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AnswerHeader {
    /// OK or Error.
    pub kind: AnswerKind,
    /// The payload's length: the header's size less 20.
    pub payload_len: usize,
}

/// Decodes and checks the header at the start of `bytes` (at least 20 of them; more are
/// ignored) as an answer of at most `limit` bytes.
///
/// # Errors
///
/// [`MessageError::Truncated`] (fewer than 20 bytes), [`MessageError::BadMagic`],
/// [`MessageError::SizeTooSmall`], [`MessageError::SizeTooLarge`],
/// [`MessageError::NotAnAnswer`], [`MessageError::UnknownAnswer`].
pub fn decode_answer_header(bytes: &[u8], limit: usize) -> Result<AnswerHeader, MessageError> {
    let Some(header) = bytes.get(..HEADER_SIZE) else {
        return Err(MessageError::Truncated {
            what: "the header",
            needed: HEADER_SIZE,
            got: bytes.len(),
        });
    };
    let mut magic = [0u8; 14];
    magic.copy_from_slice(&header[..14]);
    if magic != MAGIC {
        return Err(MessageError::BadMagic(magic));
    }
    let size = u16::from_le_bytes([header[14], header[15]]);
    let (set, id) = (header[16], header[17]);
    if usize::from(size) < HEADER_SIZE {
        return Err(MessageError::SizeTooSmall(size));
    }
    if usize::from(size) > limit {
        return Err(MessageError::SizeTooLarge { size, limit });
    }
    if set != SERVER_SET {
        return Err(MessageError::NotAnAnswer { set, id });
    }
    let kind = match id {
        ANSWER_OK => AnswerKind::Ok,
        ANSWER_ERROR => AnswerKind::Error,
        other => return Err(MessageError::UnknownAnswer(other)),
    };
    Ok(AnswerHeader {
        kind,
        payload_len: usize::from(size) - HEADER_SIZE,
    })
}

/// A decoded answer; its payload borrows from the bytes decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer<'a> {
    /// `OK` and its payload (the command's; possibly empty).
    Ok(&'a [u8]),
    /// `Error` and its HRESULT (bytes after it, which some commands add, are ignored).
    Error(u32),
}

/// Decodes one whole answer of at most `limit` bytes: `bytes` must be exactly the
/// message (the header's size).
///
/// # Errors
///
/// As [`decode_answer_header`]; [`MessageError::Truncated`] when the payload is shorter
/// than the header says or an Error answer has no HRESULT;
/// [`MessageError::TrailingBytes`] when there are more bytes than it says.
pub fn decode_answer(bytes: &[u8], limit: usize) -> Result<Answer<'_>, MessageError> {
    let header = decode_answer_header(bytes, limit)?;
    let total = HEADER_SIZE + header.payload_len;
    if bytes.len() < total {
        return Err(MessageError::Truncated {
            what: "the payload the header announces",
            needed: total,
            got: bytes.len(),
        });
    }
    if bytes.len() > total {
        return Err(MessageError::TrailingBytes {
            what: "the size in the header",
            extra: bytes.len() - total,
        });
    }
    answer_from_payload(header.kind, &bytes[HEADER_SIZE..])
}

/// The answer of `kind` whose payload is `payload` (the bytes after the header).
///
/// # Errors
///
/// [`MessageError::Truncated`] for an Error answer of fewer than 4 payload bytes.
pub fn answer_from_payload(kind: AnswerKind, payload: &[u8]) -> Result<Answer<'_>, MessageError> {
    match kind {
        AnswerKind::Ok => Ok(Answer::Ok(payload)),
        AnswerKind::Error => {
            let mut reader = Reader::new(payload, HEADER_SIZE);
            Ok(Answer::Error(reader.u32("the error's HRESULT")?))
        }
    }
}

/// Reads a payload's fields in order, each checked against the bytes left.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
    /// The payload's offset in its message, for the offsets in errors.
    base: usize,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `payload`, which begins at offset `base` of its message
    /// (20 for a payload after its header).
    pub fn new(payload: &'a [u8], base: usize) -> Reader<'a> {
        Reader {
            bytes: payload,
            pos: 0,
            base,
        }
    }

    /// The next `n` bytes.
    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], MessageError> {
        let left = self.bytes.len() - self.pos;
        if n > left {
            return Err(MessageError::Truncated {
                what,
                needed: self.base + self.pos + n,
                got: self.base + self.bytes.len(),
            });
        }
        let field = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(field)
    }

    /// A u32 (little-endian), `what` naming it in errors.
    ///
    /// # Errors
    ///
    /// [`MessageError::Truncated`] if fewer than 4 bytes are left.
    pub fn u32(&mut self, what: &'static str) -> Result<u32, MessageError> {
        let b = self.take(4, what)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// A u64 (little-endian).
    ///
    /// # Errors
    ///
    /// [`MessageError::Truncated`] if fewer than 8 bytes are left.
    pub fn u64(&mut self, what: &'static str) -> Result<u64, MessageError> {
        let b = self.take(8, what)?;
        let mut array = [0u8; 8];
        array.copy_from_slice(b);
        Ok(u64::from_le_bytes(array))
    }

    /// A GUID's 16 bytes.
    ///
    /// # Errors
    ///
    /// [`MessageError::Truncated`] if fewer than 16 bytes are left.
    pub fn guid(&mut self, what: &'static str) -> Result<Guid, MessageError> {
        let b = self.take(16, what)?;
        let mut array = [0u8; 16];
        array.copy_from_slice(b);
        Ok(Guid::from_bytes(array))
    }

    /// A string: its count of UTF-16 units (0: empty), the units, the last a NUL, which
    /// is dropped. Units that are not valid UTF-16 (a lone surrogate) become U+FFFD: the
    /// structure is checked strictly, the text is taken as it comes.
    ///
    /// # Errors
    ///
    /// [`MessageError::Truncated`] (no count), [`MessageError::StringTooLong`],
    /// [`MessageError::StringNotTerminated`].
    pub fn string(&mut self, what: &'static str) -> Result<String, MessageError> {
        let at = self.base + self.pos;
        let units = self.u32(what)?;
        if units == 0 {
            return Ok(String::new());
        }
        let left = self.bytes.len() - self.pos;
        let len = usize::try_from(units)
            .ok()
            .and_then(|u| u.checked_mul(2))
            .filter(|&len| len <= left)
            .ok_or(MessageError::StringTooLong { at, units, left })?;
        let raw = self.take(len, what)?;
        let mut code_units: Vec<u16> = raw
            .chunks_exact(2)
            .map(|pair| u16::from_le_bytes([pair[0], pair[1]]))
            .collect();
        if code_units.pop() != Some(0) {
            return Err(MessageError::StringNotTerminated { at });
        }
        Ok(String::from_utf16_lossy(&code_units))
    }

    /// Checks that every byte was read.
    ///
    /// # Errors
    ///
    /// [`MessageError::TrailingBytes`] if some are left, `what` naming what was read.
    pub fn finish(self, what: &'static str) -> Result<(), MessageError> {
        match self.bytes.len() - self.pos {
            0 => Ok(()),
            extra => Err(MessageError::TrailingBytes { what, extra }),
        }
    }
}

/// The payload of an OK answer to `ProcessInfo` or `ProcessInfo2`, field by field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessInfoPayload {
    /// The process id, in the process's own pid namespace.
    pub pid: u64,
    /// A cookie unique to this runtime instance.
    pub runtime_cookie: Guid,
    /// The command line: on Unix the full path of `argv[0]`, then the arguments,
    /// separated by spaces.
    pub command_line: String,
    /// `Linux`, `macOS`, `Windows` or `Unknown`.
    pub os: String,
    /// `x64`, `x86`, `arm64`, `arm32` or `Unknown`.
    pub arch: String,
    /// `ProcessInfo2` only: the entry point's assembly name (empty when there is none).
    pub entrypoint_assembly: Option<String>,
    /// `ProcessInfo2` only: the runtime's product version (`8.0.4`, maybe with a
    /// prerelease label).
    pub product_version: Option<String>,
}

/// Decodes the payload of an OK answer to `ProcessInfo` (`version2` false) or
/// `ProcessInfo2` (true): every field, and nothing after them.
///
/// # Errors
///
/// [`MessageError::Truncated`], [`MessageError::StringTooLong`],
/// [`MessageError::StringNotTerminated`], [`MessageError::TrailingBytes`].
pub fn decode_process_info(
    payload: &[u8],
    version2: bool,
) -> Result<ProcessInfoPayload, MessageError> {
    let mut reader = Reader::new(payload, HEADER_SIZE);
    let pid = reader.u64("the process id")?;
    let runtime_cookie = reader.guid("the runtime cookie")?;
    let command_line = reader.string("the command line")?;
    let os = reader.string("the OS")?;
    let arch = reader.string("the architecture")?;
    let (entrypoint_assembly, product_version) = match version2 {
        true => (
            Some(reader.string("the entry point's assembly")?),
            Some(reader.string("the product version")?),
        ),
        false => (None, None),
    };
    reader.finish(match version2 {
        true => "ProcessInfo2's fields",
        false => "ProcessInfo's fields",
    })?;
    Ok(ProcessInfoPayload {
        pid,
        runtime_cookie,
        command_line,
        os,
        arch,
        entrypoint_assembly,
        product_version,
    })
}

/// Decodes the payload of an OK answer to `AttachProfiler`: the HRESULT of the attach
/// (the runtime sends 0; a success code is a success).
///
/// # Errors
///
/// [`MessageError::Truncated`] without it, [`MessageError::TrailingBytes`] after it.
pub fn decode_attach_result(payload: &[u8]) -> Result<u32, MessageError> {
    let mut reader = Reader::new(payload, HEADER_SIZE);
    let hresult = reader.u32("the attach's HRESULT")?;
    reader.finish("the attach's HRESULT")?;
    Ok(hresult)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(id: u8, payload: &[u8]) -> Vec<u8> {
        let mut bytes = encode_request(
            Command {
                set: SERVER_SET,
                id,
                name: "answer",
            },
            payload,
        )
        .unwrap();
        bytes.truncate(HEADER_SIZE + payload.len());
        bytes
    }

    #[test]
    fn encodes_the_header_of_the_protocol_document() {
        let message = encode_request(Command::PROCESS_INFO, &[]).unwrap();
        assert_eq!(message.len(), 20);
        assert_eq!(&message[..14], b"DOTNET_IPC_V1\0");
        assert_eq!(message[14..], [20, 0, 0x04, 0x00, 0, 0]);
        let too_big = vec![0; MAX_MESSAGE - HEADER_SIZE + 1];
        assert_eq!(
            encode_request(Command::ATTACH_PROFILER, &too_big),
            Err(MessageError::RequestTooLarge { size: 65_536 })
        );
    }

    #[test]
    fn encodes_strings_with_their_nul() {
        let mut payload = Payload::new();
        payload.string("ab", "path").unwrap();
        assert_eq!(payload.as_bytes(), [3, 0, 0, 0, b'a', 0, b'b', 0, 0, 0]);
        assert_eq!(
            Payload::new().string("a\0b", "path").map(|_| ()),
            Err(MessageError::NulInString { what: "path" })
        );
        let mut reader = Reader::new(payload.as_bytes(), 20);
        assert_eq!(reader.string("s").unwrap(), "ab");
        reader.finish("s").unwrap();
    }

    #[test]
    fn decodes_ok_and_error_answers() {
        assert_eq!(decode_answer(&answer(0, &[]), 100), Ok(Answer::Ok(&[])));
        let error = answer(0xFF, &0x8013_1385u32.to_le_bytes());
        assert_eq!(decode_answer(&error, 100), Ok(Answer::Error(0x8013_1385)));
        assert!(matches!(
            decode_answer(&answer(0xFF, &[1, 2]), 100),
            Err(MessageError::Truncated { .. })
        ));
        assert_eq!(
            decode_answer(&answer(0x01, &[]), 100),
            Err(MessageError::UnknownAnswer(1))
        );
        let mut not_answer = answer(0, &[]);
        not_answer[16] = 0x04;
        assert_eq!(
            decode_answer(&not_answer, 100),
            Err(MessageError::NotAnAnswer { set: 4, id: 0 })
        );
        let mut lying = answer(0, &[1, 2, 3]);
        lying[14] = 30;
        assert!(matches!(
            decode_answer(&lying, 100),
            Err(MessageError::Truncated {
                needed: 30,
                got: 23,
                ..
            })
        ));
        lying[14] = 21;
        assert_eq!(
            decode_answer(&lying, 100),
            Err(MessageError::TrailingBytes {
                what: "the size in the header",
                extra: 2
            })
        );
        lying[14] = 19;
        assert_eq!(
            decode_answer(&lying, 100),
            Err(MessageError::SizeTooSmall(19))
        );
        lying[14] = 23;
        assert_eq!(
            decode_answer(&lying, 22),
            Err(MessageError::SizeTooLarge {
                size: 23,
                limit: 22
            })
        );
        let mut magic = answer(0, &[]);
        magic[0] = b'X';
        assert!(matches!(
            decode_answer(&magic, 100),
            Err(MessageError::BadMagic(_))
        ));
        assert!(
            MessageError::BadMagic(magic[..14].try_into().unwrap())
                .to_string()
                .contains("XOTNET_IPC_V1\\x00")
        );
    }

    #[test]
    fn decodes_process_info_payloads() {
        let cookie = Guid::parse("{0B5C3F2A-7D41-4E8B-9A6C-2E1F4D7B8C93}").unwrap();
        let mut payload = Vec::new();
        payload.extend_from_slice(&1234u64.to_le_bytes());
        payload.extend_from_slice(&cookie.to_bytes());
        let mut strings = Payload::new();
        for s in ["/usr/bin/dotnet app.dll", "Linux", "x64"] {
            strings.string(s, "s").unwrap();
        }
        payload.extend_from_slice(strings.as_bytes());
        let v1 = decode_process_info(&payload, false).unwrap();
        assert_eq!(v1.pid, 1234);
        assert_eq!(v1.runtime_cookie, cookie);
        assert_eq!(v1.command_line, "/usr/bin/dotnet app.dll");
        assert_eq!((v1.os.as_str(), v1.arch.as_str()), ("Linux", "x64"));
        assert!(matches!(
            decode_process_info(&payload, true),
            Err(MessageError::Truncated { .. })
        ));
        let mut v2 = payload.clone();
        let mut more = Payload::new();
        more.string("app", "s")
            .unwrap()
            .string("8.0.4", "s")
            .unwrap();
        v2.extend_from_slice(more.as_bytes());
        let decoded = decode_process_info(&v2, true).unwrap();
        assert_eq!(decoded.product_version.as_deref(), Some("8.0.4"));
        assert_eq!(decoded.entrypoint_assembly.as_deref(), Some("app"));
        assert!(matches!(
            decode_process_info(&v2, false),
            Err(MessageError::TrailingBytes { extra: 28, .. })
        ));
        // A count of units past the end, and a string without its NUL.
        let mut long = payload[..24].to_vec();
        long.extend_from_slice(&u32::MAX.to_le_bytes());
        assert!(matches!(
            decode_process_info(&long, false),
            Err(MessageError::StringTooLong { at: 44, .. })
        ));
        let mut unterminated = payload[..24].to_vec();
        unterminated.extend_from_slice(&[1, 0, 0, 0, b'a', 0]);
        assert_eq!(
            decode_process_info(&unterminated, false),
            Err(MessageError::StringNotTerminated { at: 44 })
        );
    }
}

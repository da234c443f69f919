//! The crate's one error type.
//!
//! Every error raised while decoding bytes names what was wrong and the byte offset at
//! which it was found. Offsets are relative to the start of the input the decoder was
//! given (the method body, the signature blob, or the PE file), as each variant documents.
#![forbid(unsafe_code)]

/// Result alias used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in this crate.
///
/// Decoding never panics: malformed input always yields one of these variants.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    // ---- method body: header --------------------------------------------------------
    /// The input ended before a structure was complete.
    #[error("truncated {what} at offset {offset:#x}: needs {needed} bytes, {available} available")]
    Truncated {
        /// What was being read.
        what: &'static str,
        /// Offset where the structure starts.
        offset: usize,
        /// Bytes the structure needs.
        needed: usize,
        /// Bytes that were left.
        available: usize,
    },
    /// The low two bits of the first header byte are neither tiny (0b10) nor fat (0b11).
    #[error("bad method header format {byte:#04x} at offset {offset:#x}")]
    BadHeaderFormat {
        /// Offset of the header byte.
        offset: usize,
        /// The header byte.
        byte: u8,
    },
    /// A fat header whose size field (in 4-byte units) is not 3.
    #[error("bad fat header size {size} (dwords) at offset {offset:#x}; expected 3")]
    BadHeaderSize {
        /// Offset of the header.
        offset: usize,
        /// The size field.
        size: u8,
    },
    /// The header's code size runs past the end of the input.
    #[error(
        "code size {code_size} at offset {offset:#x} runs past the end ({available} bytes available)"
    )]
    CodeSizePastEnd {
        /// Offset where the code starts.
        offset: usize,
        /// The declared code size.
        code_size: u32,
        /// Bytes available after the header.
        available: usize,
    },

    // ---- method body: instructions --------------------------------------------------
    /// A byte (or `0xFE`-prefixed byte) that is not an ECMA-335 opcode.
    #[error("unknown opcode {}{byte:#04x} at code offset {offset:#x}", if *.prefixed { "0xfe " } else { "" })]
    UnknownOpcode {
        /// Code offset of the opcode.
        offset: usize,
        /// The opcode byte (the second byte for `0xFE` opcodes).
        byte: u8,
        /// Whether the byte followed the `0xFE` prefix.
        prefixed: bool,
    },
    /// An instruction's operand runs past the end of the code.
    #[error("operand of {opcode} at code offset {offset:#x} runs past the end of the code")]
    OperandPastEnd {
        /// Code offset of the instruction.
        offset: usize,
        /// The opcode's ilasm name.
        opcode: &'static str,
    },
    /// A switch table runs past the end of the code.
    #[error("switch at code offset {offset:#x} with {count} targets runs past the end of the code")]
    SwitchTablePastEnd {
        /// Code offset of the switch.
        offset: usize,
        /// The declared number of targets.
        count: u32,
    },
    /// A branch or switch target lies outside the code.
    #[error("branch at code offset {offset:#x} targets {target:#x}, outside the code")]
    BranchOutsideCode {
        /// Code offset of the branch.
        offset: usize,
        /// The target offset (may be negative).
        target: i64,
    },
    /// A branch or switch target falls inside another instruction.
    #[error("branch at code offset {offset:#x} targets {target:#x}, inside an instruction")]
    BranchIntoInstruction {
        /// Code offset of the branch.
        offset: usize,
        /// The target offset.
        target: u32,
    },

    // ---- method body: exception-handling sections -----------------------------------
    /// A data section whose kind byte is not an EH table, or has unknown bits set.
    #[error("bad data section kind {kind:#04x} at body offset {offset:#x}")]
    BadSectionKind {
        /// Body offset of the section.
        offset: usize,
        /// The kind byte.
        kind: u8,
    },
    /// A data section whose size cannot hold its header or its clauses.
    #[error("bad data section size {size} at body offset {offset:#x}")]
    BadSectionSize {
        /// Body offset of the section.
        offset: usize,
        /// The declared data size.
        size: u32,
    },
    /// An EH clause whose kind flags are not catch, filter, finally or fault.
    #[error("bad EH clause kind {flags:#x} at body offset {offset:#x}")]
    BadEhKind {
        /// Body offset of the clause.
        offset: usize,
        /// The clause flags.
        flags: u32,
    },
    /// An EH clause range that lies outside the code.
    #[error(
        "EH clause at body offset {offset:#x}: {what} range {start:#x}+{length:#x} lies outside the code"
    )]
    EhClauseOutOfRange {
        /// Body offset of the clause.
        offset: usize,
        /// Which range ("try", "handler" or "filter").
        what: &'static str,
        /// Start code offset.
        start: u32,
        /// Length in bytes.
        length: u32,
    },
    /// An EH clause boundary that is not the start (or end) of an instruction.
    #[error(
        "EH clause at body offset {offset:#x}: {what} boundary {boundary:#x} is not on an instruction boundary"
    )]
    EhClauseNotOnBoundary {
        /// Body offset of the clause.
        offset: usize,
        /// Which boundary.
        what: &'static str,
        /// The code offset.
        boundary: u32,
    },

    // ---- signatures ------------------------------------------------------------------
    /// A malformed signature blob.
    #[error("malformed signature at blob offset {offset:#x}: {what}")]
    BadSignature {
        /// Offset in the blob.
        offset: usize,
        /// What was wrong.
        what: &'static str,
    },

    // ---- PE / metadata ----------------------------------------------------------------
    /// A malformed PE file or metadata structure.
    #[error("malformed PE/metadata at file offset {offset:#x}: {what}")]
    BadPe {
        /// File offset.
        offset: usize,
        /// What was wrong.
        what: &'static str,
    },
    /// A metadata token that does not name an existing row of an expected table.
    #[error("bad metadata token {token:#010x}: {what}")]
    BadToken {
        /// The token.
        token: u32,
        /// What was expected.
        what: &'static str,
    },

    // ---- encoding and editing ---------------------------------------------------------
    /// An id that does not name an instruction of the body.
    #[error("{what} i{id} is not an instruction of this body")]
    NotInBody {
        /// The id's index.
        id: u32,
        /// What the id was used as.
        what: &'static str,
    },
    /// An edit refused because it would leave an exception region without instructions.
    #[error("removing i{id} would leave its {region} region empty")]
    EditWouldEmptyRegion {
        /// The instruction's id index.
        id: u32,
        /// The region kind ("try", "handler", "filter").
        region: &'static str,
    },
    /// An edit refused because branches would be left without a target.
    #[error(
        "removing i{id} would leave branches to it without a target (it is the last instruction)"
    )]
    EditWouldDangle {
        /// The instruction's id index.
        id: u32,
    },
    /// Exception clauses that are not properly nested or ordered.
    #[error("bad exception clause nesting: {what}")]
    BadEhNesting {
        /// What was wrong.
        what: &'static str,
    },
    /// An instruction whose operand does not fit its opcode (wrong variant or out of range).
    #[error("cannot encode {opcode}: {what}")]
    BadOperand {
        /// The opcode's ilasm name.
        opcode: &'static str,
        /// What was wrong.
        what: &'static str,
    },
    /// A transform that cannot be applied to this body.
    #[error("unsupported: {what}")]
    Unsupported {
        /// Why.
        what: &'static str,
    },
    /// A value that does not fit the encoding it must be written in.
    #[error("cannot encode: {what}")]
    Unencodable {
        /// What could not be encoded.
        what: &'static str,
    },
}

//! The crate's one error type.
//!
//! Every error raised while decoding bytes names what was wrong and the byte offset at
//! which it was found. Offsets are relative to the start of the input the decoder was
//! given (the method body, the signature blob, or the PE file), as each variant documents.
//!
//! This is the floor the modules that can fail stand on: they import [`Error`] and
//! [`Result`] from here, not through the crate root (which only re-exports them). It
//! needs only the two modules below it, neither of which fails with an [`Error`]:
//! [`crate::opcode`] ([`InstrSite`] names an opcode) and [`crate::graph`], for the
//! [`InstrId`] by which an error names an instruction.

use crate::graph::InstrId;
use crate::opcode::OpCode;
use std::fmt;

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
    /// Malformed signature text ([`crate::sig::text`]): where, as a character offset
    /// in the text, and what was expected there and found instead.
    #[error("bad signature text at {at}: {why}")]
    BadSignatureText {
        /// Character offset in the text (0-based; the text is ASCII up to there, so it
        /// is also the byte offset).
        at: usize,
        /// What was expected, and what was found.
        why: String,
    },
    /// A type nested deeper than the signature trees allow ([`crate::sig::MAX_NESTING`]):
    /// not malformed (the runtime may run it), but beyond what [`crate::sig::TypeSig`]
    /// and the signatures built from it parse or encode. The walks that skip types
    /// without building a tree (such as [`crate::sig::summarize_method_sig`]) have no
    /// such limit.
    #[error("type nesting deeper than {limit} levels at {}", nesting_offset_text(.offset))]
    TooDeep {
        /// Offset in the blob of the type that would be one level too deep (the
        /// character offset for [`crate::sig::text`]); `None` when encoding.
        offset: Option<usize>,
        /// The limit, [`crate::sig::MAX_NESTING`].
        limit: usize,
    },
    /// More locals than a method can have ([`crate::sig::LocalVarSig::MAX_LOCALS`],
    /// the runtime's limit): a LocalVarSig that declares them, or one that adding
    /// locals would take past the limit.
    #[error("{count} locals: a method can have at most {limit}")]
    TooManyLocals {
        /// The locals the signature declares, or would hold with the new ones.
        count: usize,
        /// The limit, [`crate::sig::LocalVarSig::MAX_LOCALS`].
        limit: usize,
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
    /// An edit refused because branches would be left without a target in the same region.
    #[error(
        "removing i{id} would leave branches to it without a target in the same region \
         (it is the last instruction, the last of a region, or right before a handler or \
         filter)"
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
    /// A snippet names a per-method value that cannot be filled in: the state local
    /// without a declared type, or the module's id where the method's context gives
    /// none. Refused before any edit: the body is left as it was.
    #[error("unfilled placeholder: {what}")]
    PlaceholderUnfilled {
        /// Which value, and what would give it.
        what: &'static str,
    },
    /// A `tail.` call that a transform was asked to keep and cannot: the method is
    /// refused before any edit (see [`TailCallRefusal`]).
    #[error("the tail call at {} cannot be kept: {reason}", offset_text(.offset))]
    TailCallNotKept {
        /// Code offset of the `tail.` prefix in the decoded bytes; `None` for one added
        /// since decoding.
        offset: Option<u32>,
        /// Why.
        reason: TailCallRefusal,
    },
    /// A method the CallTarget transform cannot instrument
    /// ([`crate::transform::CallTarget`]): refused before any edit, the body left as it
    /// was (see [`CallTargetRefusal`]).
    #[error("CallTarget refused: {reason}")]
    CallTargetRefused {
        /// Why.
        reason: CallTargetRefusal,
    },
    /// An edit made outside the crate failed: an instrumentation method in a library
    /// of its own (the `clr` feature's C ABI) returned an error, with its message.
    #[error("{library}: {message} (status {status})")]
    Foreign {
        /// The instrumentation method's name.
        library: String,
        /// Its status code.
        status: i32,
        /// Its message.
        message: String,
    },
    /// A value that does not fit the encoding it must be written in.
    #[error("cannot encode: {what}")]
    Unencodable {
        /// What could not be encoded.
        what: &'static str,
    },

    // ---- analysis: stack simulation and control flow ----------------------------------
    /// A body without instructions: control falls off its end at once.
    #[error("the method body has no instructions")]
    EmptyBody,
    /// An instruction pops more values than the stack holds on some path.
    #[error("stack underflow at {at}: pops {pops} with {height} on the stack")]
    StackUnderflow {
        /// The popping instruction.
        at: InstrSite,
        /// Stack height before it.
        height: u16,
        /// Values it pops.
        pops: u16,
    },
    /// Two paths reach one instruction with different stack heights.
    #[error("stack height mismatch at {at}: {expected} on an earlier path, {found} {}", from_text(.from))]
    StackMismatch {
        /// The join instruction.
        at: InstrSite,
        /// The instruction whose edge brought `found`; `None` when it is an exception
        /// handler's entry.
        from: Option<InstrSite>,
        /// The height recorded first.
        expected: u16,
        /// The conflicting height.
        found: u16,
    },
    /// The stack would hold more than 65,535 values, the most a header can declare.
    #[error("stack overflow at {at}: more than 65535 values")]
    StackOverflow {
        /// The pushing instruction.
        at: InstrSite,
    },
    /// A try region entered with values on the stack (ECMA-335 Partition I requires an
    /// empty stack on entry to a protected block; the JIT rejects it).
    #[error("try region of clause {clause} entered with {height} values on the stack at {at}")]
    NonEmptyStackAtTryEntry {
        /// The first instruction of the try region.
        at: InstrSite,
        /// Index of the clause in `MethodBody::clauses`.
        clause: usize,
        /// Stack height on entry.
        height: u16,
    },
    /// `ret` with a stack other than exactly the return value (or nothing, for `void`).
    #[error("ret at {at} with {height} values on the stack; expected {}", expected_ret(.expected))]
    BadReturnStack {
        /// The `ret`.
        at: InstrSite,
        /// Stack height before it.
        height: u16,
        /// The height required (from the method's return type or the first `ret`);
        /// `None` when it was being inferred and `height` is neither 0 nor 1.
        expected: Option<u16>,
    },
    /// `jmp` with a non-empty stack.
    #[error("jmp at {at} with {height} values on the stack; it requires an empty stack")]
    NonEmptyStackAtJmp {
        /// The `jmp`.
        at: InstrSite,
        /// Stack height before it.
        height: u16,
    },
    /// `endfilter` with a stack other than exactly the filter's result.
    #[error("endfilter at {at} with {height} values on the stack; it requires exactly 1")]
    BadEndfilterStack {
        /// The `endfilter`.
        at: InstrSite,
        /// Stack height before it.
        height: u16,
    },
    /// Control continues past the last instruction.
    #[error("control falls off the end of the code after {at}")]
    FallsOffEnd {
        /// The last instruction, which does not end control flow.
        at: InstrSite,
    },
    /// A branch, switch or leave whose target is not an instruction of the body.
    #[error("{at} targets {target:?}, which is not an instruction of this body")]
    BadBranchTarget {
        /// The branching instruction.
        at: InstrSite,
        /// The target id.
        target: InstrId,
    },
    /// An instruction whose operand does not fit its opcode.
    #[error("malformed instruction {at}: {what}")]
    MalformedInstruction {
        /// The instruction.
        at: InstrSite,
        /// What is wrong.
        what: &'static str,
    },
    /// Control flow the runtime rejects as invalid IL.
    #[error("illegal control flow at {at}: {what}")]
    IllegalControlFlow {
        /// The offending instruction (for edges, their source).
        at: InstrSite,
        /// What is wrong.
        what: &'static str,
    },
    /// An exception clause whose regions cannot be analysed.
    #[error("bad exception clause {clause}: {what}")]
    BadEhClause {
        /// Index of the clause in `MethodBody::clauses`.
        clause: usize,
        /// What is wrong.
        what: &'static str,
    },
    /// The call-site resolver failed for a call instruction.
    #[error("cannot resolve the call at {at}: {source}")]
    CallResolution {
        /// The call instruction.
        at: InstrSite,
        /// The resolver's error.
        source: Box<Error>,
    },
    /// A call site whose stack effect is unknown (e.g. no resolver was given).
    #[error("unresolved {opcode} token {token:#010x}: {what}")]
    UnresolvedCall {
        /// The opcode's ilasm name.
        opcode: &'static str,
        /// The method or signature token.
        token: u32,
        /// Why it could not be resolved.
        what: &'static str,
    },
    /// Signature facts that do not form a stack effect for the given opcode.
    #[error("bad call site for {opcode}: {what}")]
    BadCallSite {
        /// The opcode's ilasm name.
        opcode: &'static str,
        /// What is wrong.
        what: &'static str,
    },
}

impl Error {
    /// Whether this error is a limit rather than a defect: more locals than a method can
    /// have ([`Error::TooManyLocals`]) or a type nested deeper than the signature trees
    /// allow ([`Error::TooDeep`]), also when it is why a call site could not be resolved
    /// ([`Error::CallResolution`]). A method refused for a limit is valid IL that the
    /// crate declines to rewrite, not a failure.
    pub fn is_limit(&self) -> bool {
        match self {
            Error::TooDeep { .. } | Error::TooManyLocals { .. } => true,
            Error::CallResolution { source, .. } => source.is_limit(),
            _ => false,
        }
    }

    /// The variant's name, with the static part of its reason where it has one
    /// (`Unsupported: ...`, `TailCallNotKept: ...`, `CallResolution: <its cause's kind>`)
    /// and without what differs between occurrences (offsets, instruction ids, lengths):
    /// what repeated errors are counted and throttled under.
    pub fn kind(&self) -> String {
        let debug = format!("{self:?}");
        let name: String = debug
            .chars()
            .take_while(char::is_ascii_alphanumeric)
            .collect();
        match self {
            Error::Unsupported { what }
            | Error::Unencodable { what }
            | Error::PlaceholderUnfilled { what } => format!("{name}: {what}"),
            Error::TailCallNotKept { reason, .. } => format!("{name}: {reason}"),
            Error::CallTargetRefused { reason } => format!("{name}: {reason}"),
            Error::CallResolution { source, .. } => format!("{name}: {}", source.kind()),
            _ => name,
        }
    }
}

/// Why a `tail.` call cannot be kept by a transform that wraps its method
/// ([`Error::TailCallNotKept`]). Each is a refusal made before any edit: the method is
/// left as it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TailCallRefusal {
    /// The tail-call policy refuses every method with a `tail.` prefix.
    PolicyRefuses,
    /// The `tail.` prefix is not followed by `call`, `callvirt` or `calli` and then `ret`.
    NotCallThenRet,
    /// The tail call lies inside an exception-handling region of the method (invalid IL).
    InProtectedRegion,
    /// A branch targets the call instruction after its `tail.` prefix (invalid IL).
    BranchIntoCall,
    /// Another prefix (e.g. `constrained.`) comes with the `tail.` prefix: a tail call
    /// through it is not moved to a stub.
    OtherPrefix,
    /// No metadata to read the callee's signature from (the call-site resolver gives
    /// none, see [`crate::analysis::CallSiteResolver::metadata`]).
    NoMetadata,
    /// The callee's signature, its parent or its instantiation cannot be read.
    UnreadableSignature,
    /// The callee's signature nests types deeper than the crate builds trees of
    /// ([`crate::sig::MAX_NESTING`]).
    TooDeep,
    /// A vararg call site.
    VarArg,
    /// An operand typed by a generic parameter (`!n` or `!!n`) that the call site does
    /// not instantiate.
    UnboundGenericParameter,
    /// An instance call whose `this` may be an object reference or a managed pointer:
    /// the declaring type is defined in another module (a TypeRef) or is a generic
    /// parameter, or the call is an instance `calli`.
    UnknownThisKind,
    /// An operand whose type cannot be written into a LocalVarSig.
    UnstorableOperand,
    /// The locals needed for the operands would exceed the most a method can have.
    TooManyLocals,
    /// Values other than the call's operands are on the stack at the tail call (invalid
    /// IL: a tail call leaves nothing but its result), e.g. a `void` callee in a method
    /// that returns a value.
    ExtraStackValues,
}

impl fmt::Display for TailCallRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TailCallRefusal::PolicyRefuses => {
                "the tail-call policy refuses methods with tail calls"
            }
            TailCallRefusal::NotCallThenRet => {
                "tail. is not followed by call, callvirt or calli and then ret"
            }
            TailCallRefusal::InProtectedRegion => "it lies inside an exception-handling region",
            TailCallRefusal::BranchIntoCall => "a branch targets the call after its tail. prefix",
            TailCallRefusal::OtherPrefix => "another prefix (e.g. constrained.) comes with tail.",
            TailCallRefusal::NoMetadata => "no metadata to type the call's operands",
            TailCallRefusal::UnreadableSignature => "the callee's signature cannot be read",
            TailCallRefusal::TooDeep => "the callee's signature nests types too deep",
            TailCallRefusal::VarArg => "a vararg call",
            TailCallRefusal::UnboundGenericParameter => {
                "an operand's generic parameter is not instantiated at the call site"
            }
            TailCallRefusal::UnknownThisKind => {
                "whether `this` is an object reference or a managed pointer is unknown"
            }
            TailCallRefusal::UnstorableOperand => "an operand's type cannot be a local",
            TailCallRefusal::TooManyLocals => {
                "its operands need more locals than a method can have"
            }
            TailCallRefusal::ExtraStackValues => "values other than its operands are on the stack",
        })
    }
}

/// Why the CallTarget transform refuses a method ([`Error::CallTargetRefused`]). Each
/// is a refusal made before any edit: the method is left as it was.
///
/// The type refusals are about what cannot be a generic argument of the hooks
/// (`TTarget`, `A1..An`, `TReturn`). Byref-like types (`ref struct`s such as
/// `Span<T>`) cannot be one either, but a signature does not say whether a value type
/// is byref-like (that takes the type's `IsByRefLikeAttribute`, in metadata the core
/// does not read): refusing them is the caller's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CallTargetRefusal {
    /// A parameter or the return type is an unmanaged pointer (`T*`).
    Pointer,
    /// A parameter or the return type is a function pointer (`method void *()`).
    FunctionPointer,
    /// A parameter or the return type is `System.TypedReference`.
    TypedReference,
    /// A parameter of type `void` (invalid in a signature, refused all the same).
    VoidParameter,
    /// The method returns a managed reference (`ref T M()`): `TReturn` cannot be one.
    ByRefReturn,
    /// A by-ref parameter of a by-ref type (`T&&`), or a type no generic argument can
    /// be (`pinned`, a runtime-internal type handle).
    NotAGenericArgument,
    /// A vararg method (`VARARG` calling convention or a sentinel).
    VarArg,
    /// A signature with `EXPLICITTHIS`, or a calling convention other than the managed
    /// default: no hook can take its arguments.
    CallingConvention,
    /// The body has a `jmp`, which cannot sit in a try block.
    Jmp,
    /// A `ret` inside an exception handler (catch, filter, finally or fault block).
    RetInHandler,
    /// The hooks' generic argument count or the new locals exceed what metadata can
    /// hold (more than 65,535 parameters or locals).
    TooMany,
}

impl fmt::Display for CallTargetRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CallTargetRefusal::Pointer => "a parameter or the return type is a pointer",
            CallTargetRefusal::FunctionPointer => {
                "a parameter or the return type is a function pointer"
            }
            CallTargetRefusal::TypedReference => {
                "a parameter or the return type is a TypedReference"
            }
            CallTargetRefusal::VoidParameter => "a parameter of type void",
            CallTargetRefusal::ByRefReturn => "the method returns by reference",
            CallTargetRefusal::NotAGenericArgument => {
                "a parameter type cannot be a generic argument"
            }
            CallTargetRefusal::VarArg => "a vararg method",
            CallTargetRefusal::CallingConvention => {
                "an explicit this or an unmanaged calling convention"
            }
            CallTargetRefusal::Jmp => "jmp cannot be placed inside a try block",
            CallTargetRefusal::RetInHandler => "a ret inside an exception handler",
            CallTargetRefusal::TooMany => "more parameters or locals than metadata holds",
        })
    }
}

fn nesting_offset_text(offset: &Option<usize>) -> String {
    match offset {
        Some(o) => format!("blob offset {o:#x}"),
        None => "a type being encoded".to_string(),
    }
}

fn offset_text(offset: &Option<u32>) -> String {
    match offset {
        Some(o) => format!("IL_{o:04x}"),
        None => "a new instruction".to_string(),
    }
}

/// The instruction an analysis error is about: its id, its code offset in the decoded
/// bytes when it has one, and its opcode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct InstrSite {
    /// The instruction's id in its body.
    pub id: InstrId,
    /// Code offset in the bytes the body was decoded from; `None` for instructions added
    /// since decoding.
    pub offset: Option<u32>,
    /// The instruction's opcode.
    pub opcode: OpCode,
}

impl fmt::Display for InstrSite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.offset {
            Some(offset) => write!(f, "IL_{offset:04x} ({})", self.opcode),
            None => write!(f, "new instruction {:?} ({})", self.id, self.opcode),
        }
    }
}

fn from_text(from: &Option<InstrSite>) -> String {
    match from {
        Some(site) => format!("coming from {site}"),
        None => "on exception-handler entry".to_string(),
    }
}

fn expected_ret(expected: &Option<u16>) -> String {
    match expected {
        Some(n) => n.to_string(),
        None => "0 or 1".to_string(),
    }
}

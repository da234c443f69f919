//! Method bodies: header, instructions and exception-handling clauses, decoded from and
//! encoded to the ECMA-335 II.25.4 byte format, and the checked edits of a body (the
//! [`MethodBody`] methods that insert, replace, remove, retarget and add clauses), which
//! keep branches and exception regions consistent.
//!
//! # Region convention
//!
//! Every region of an [`ExceptionClause`] (try, handler, filter) is the *inclusive* range
//! `[start, last]` of instructions in list order. A region is never empty. The filter
//! region of a filter clause runs from `filter_start` to the instruction before
//! `handler_start`, as ECMA-335 requires the filter to immediately precede its handler.
//!
//! # Encoding choices
//!
//! Decoding records the encoding choices of the original bytes (tiny or fat header and its
//! flags, short or long instruction forms, small or fat EH sections and how clauses were
//! split into sections, empty sections included) and the bytes the runtime ignores (the
//! padding before the sections, the reserved bytes of small section headers, the class
//! token of finally and fault clauses). Encoding an unedited body reproduces the original
//! bytes exactly: any input the decoder accepts comes back byte for byte.
//! After edits, the original choices are kept unless they became illegal; new code takes
//! the smallest legal form (see [`encode`] for the rules).

pub mod decode;
mod edit;
pub mod encode;
mod header;
pub mod scan;
mod sections;

pub use decode::Decoder;
pub use encode::{EncodedHeader, Encoder};
pub use header::{FAT_HEADER_SIZE, TINY_MAX_CODE_SIZE, TINY_MAX_STACK};
pub use scan::{BodyExtent, scan_body};

use crate::error::Result;
use crate::graph::{InstrId, InstrList};
use smallvec::SmallVec;

/// What kind of handler an exception clause has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ClauseKind {
    /// A typed catch handler for exceptions of the given type token.
    Catch(u32),
    /// A filter, starting at the given instruction, deciding whether the handler runs.
    Filter(InstrId),
    /// A finally handler.
    Finally,
    /// A fault handler (runs only when an exception leaves the try).
    Fault,
}

impl ClauseKind {
    /// The ECMA-335 clause flags value (`COR_ILEXCEPTION_CLAUSE_*`).
    pub fn flags(self) -> u32 {
        match self {
            ClauseKind::Catch(_) => 0,
            ClauseKind::Filter(_) => 1,
            ClauseKind::Finally => 2,
            ClauseKind::Fault => 4,
        }
    }
}

/// One exception-handling clause with instruction-based, inclusive regions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ExceptionClause {
    /// Handler kind (and class token or filter start).
    pub kind: ClauseKind,
    /// First instruction of the protected block.
    pub try_start: InstrId,
    /// Last instruction of the protected block (inclusive).
    pub try_last: InstrId,
    /// First instruction of the handler.
    pub handler_start: InstrId,
    /// Last instruction of the handler (inclusive).
    pub handler_last: InstrId,
    /// The class-token field of finally/fault clauses, which the runtime ignores; kept so
    /// that bodies which store a non-zero value there re-encode byte-identical.
    pub(crate) unused_token: u32,
}

impl ExceptionClause {
    /// A clause over the given inclusive regions.
    pub fn new(
        kind: ClauseKind,
        try_start: InstrId,
        try_last: InstrId,
        handler_start: InstrId,
        handler_last: InstrId,
    ) -> Self {
        ExceptionClause {
            kind,
            try_start,
            try_last,
            handler_start,
            handler_last,
            unused_token: 0,
        }
    }

    /// The filter start, for filter clauses.
    pub fn filter_start(&self) -> Option<InstrId> {
        match self.kind {
            ClauseKind::Filter(f) => Some(f),
            _ => None,
        }
    }
}

/// A clause's regions as half-open `[start, end)` list positions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RegionSpans {
    pub try_: (u32, u32),
    pub handler: (u32, u32),
    /// The filter region, which ends where the handler starts.
    pub filter: Option<(u32, u32)>,
}

/// Why a clause's regions are not well-formed on their own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SpanError {
    /// A boundary that is not an instruction of the body (the id, and which boundary).
    NotInBody(InstrId, &'static str),
    /// Any other defect.
    Bad(&'static str),
}

impl ExceptionClause {
    /// The clause's regions as positions (`position` gives an id's list position, `None`
    /// for ids not in the body), checked on their own: every boundary is in the body,
    /// every region runs forward, the filter precedes its handler, and the clause's own
    /// regions do not overlap. How regions of different clauses relate is not checked.
    #[inline]
    pub(crate) fn region_spans(
        &self,
        position: impl Fn(InstrId) -> Option<u32>,
    ) -> std::result::Result<RegionSpans, SpanError> {
        let at = |id, what| position(id).ok_or(SpanError::NotInBody(id, what));
        let span = |start, last, names: [&'static str; 3]| {
            let (s, l) = (at(start, names[0])?, at(last, names[1])?);
            if l < s {
                return Err(SpanError::Bad(names[2]));
            }
            Ok((s, l + 1))
        };
        let try_ = span(
            self.try_start,
            self.try_last,
            [
                "try start is not an instruction of the body",
                "try end is not an instruction of the body",
                "try region ends before it starts",
            ],
        )?;
        let handler = span(
            self.handler_start,
            self.handler_last,
            [
                "handler start is not an instruction of the body",
                "handler end is not an instruction of the body",
                "handler region ends before it starts",
            ],
        )?;
        let filter = match self.kind {
            ClauseKind::Filter(f) => {
                let s = at(f, "filter start is not an instruction of the body")?;
                if s >= handler.0 {
                    return Err(SpanError::Bad("filter does not precede its handler"));
                }
                Some((s, handler.0))
            }
            _ => None,
        };
        let overlaps = |a: (u32, u32), b: (u32, u32)| a.0 < b.1 && b.0 < a.1;
        if overlaps(try_, handler)
            || filter.is_some_and(|f| overlaps(try_, f) || overlaps(handler, f))
        {
            return Err(SpanError::Bad("the clause's own regions overlap"));
        }
        Ok(RegionSpans {
            try_,
            handler,
            filter,
        })
    }
}

/// How the header was (or is to be) encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum HeaderFormat {
    /// Not decoded: choose the smallest legal header.
    #[default]
    Smallest,
    /// Decoded from a tiny header: stay tiny while legal.
    Tiny,
    /// Fat; `extra_flags` are flag bits other than format, MoreSects and InitLocals,
    /// preserved verbatim.
    Fat { extra_flags: u16 },
}

/// How one EH data section was encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SectionFormat {
    pub fat: bool,
    pub clauses: u32,
    /// The two bytes after a small section's data size, which ECMA-335 reserves and the
    /// runtime ignores (always 0 for fat sections); kept to reproduce the bytes.
    pub reserved: [u8; 2],
}

/// The encoding choices of a decoded body, used to reproduce its bytes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct BodyFormat {
    pub header: HeaderFormat,
    pub sections: SmallVec<[SectionFormat; 1]>,
    /// The bytes between the code and the first EH section (up to the 4-byte boundary),
    /// which the runtime ignores; kept to reproduce the bytes.
    pub padding: SmallVec<[u8; 3]>,
    /// Code offset of each decoded instruction; decoded ids are `0..len`, in offset order.
    pub original_offsets: Vec<u32>,
    /// The decoded code bytes followed by [`CODE_PADDING`] zero bytes (so the decoder
    /// reads every operand as one 8-byte word from here); the [`Encoder`] copies the code
    /// ([`BodyFormat::decoded_code`]) while the instruction list is unedited
    /// ([`crate::graph::InstrList::is_unedited`]) since this decode.
    pub original_code: Vec<u8>,
    /// The stamp of the decode that filled `original_code` (0: none), unique per decode;
    /// the list carries it while unedited.
    pub decode_stamp: u64,
    /// Code size of the decoded bytes.
    pub code_size: u32,
}

/// Zero bytes kept after the decoded code in [`BodyFormat::original_code`].
pub(crate) const CODE_PADDING: usize = 8;

impl BodyFormat {
    /// The decoded code without its padding (empty for bodies not decoded).
    pub fn decoded_code(&self) -> &[u8] {
        self.original_code
            .get(..self.code_size as usize)
            .unwrap_or_default()
    }
}

/// A method body: header fields, the instruction list and exception clauses.
#[derive(Debug, Clone, Default)]
pub struct MethodBody {
    /// The instructions, in order.
    pub instrs: InstrList,
    /// Exception clauses, in the order they are encoded (ECMA-335 requires inner first).
    pub clauses: Vec<ExceptionClause>,
    /// The header's max-stack value (8 for bodies decoded from a tiny header).
    pub max_stack: u16,
    /// Whether locals are zero-initialised (`CorILMethod_InitLocals`).
    pub init_locals: bool,
    /// StandAloneSig token of the LocalVarSig, or 0 for no locals.
    pub local_var_sig: u32,
    pub(crate) format: BodyFormat,
}

impl MethodBody {
    /// An empty body that will be encoded with the smallest legal header.
    pub fn new() -> Self {
        MethodBody {
            max_stack: 8,
            ..Default::default()
        }
    }

    /// Decodes a body from `bytes`, which start at the header and may extend past the body.
    ///
    /// Allocates fresh buffers; use a [`Decoder`] to reuse them across bodies.
    ///
    /// # Errors
    ///
    /// Those of [`Decoder::decode_into`]: the structural faults of the bytes.
    pub fn decode(bytes: &[u8]) -> Result<MethodBody> {
        let mut body = MethodBody::new();
        Decoder::new().decode_into(bytes, &mut body)?;
        Ok(body)
    }

    /// Encodes the body to a new vector (see [`encode`] for the rules), deriving every
    /// byte of the code from the instructions, even when the list is unedited (the
    /// reference path: a reusable [`Encoder`] copies unedited code instead, with the same
    /// result).
    ///
    /// # Errors
    ///
    /// Those of [`Encoder::encode`]: [`crate::Error::BadOperand`] for an operand that does
    /// not match or fit its opcode (or a `switch` table of another body),
    /// [`crate::Error::Unencodable`] for a branch target or EH boundary that is not an
    /// instruction of the body, an EH region that ends before it starts, or code or EH
    /// sections too large for the format.
    pub fn encode(&self) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        Encoder::deriving_every_byte().encode(self, &mut out)?;
        Ok(out)
    }

    /// Whether the body was decoded from (and will stay on) a tiny header.
    pub fn has_tiny_format(&self) -> bool {
        self.format.header == HeaderFormat::Tiny
    }

    /// Makes the encoder emit a fat header from now on, even where a tiny one is legal.
    pub fn force_fat_header(&mut self) {
        if !matches!(self.format.header, HeaderFormat::Fat { .. }) {
            self.format.header = HeaderFormat::Fat { extra_flags: 0 };
        }
    }

    /// Whether the encoder will emit a fat header regardless of size.
    pub fn is_fat_forced(&self) -> bool {
        matches!(self.format.header, HeaderFormat::Fat { .. })
    }

    /// Forgets the EH section layout of the original bytes, so that the next encoding
    /// chooses the smallest legal sections.
    pub fn reset_section_format(&mut self) {
        self.format.sections.clear();
    }

    /// The code offset `id` had in the decoded bytes; `None` for instructions added since.
    #[inline]
    pub fn original_offset(&self, id: InstrId) -> Option<u32> {
        self.format.original_offsets.get(id.index()).copied()
    }

    /// Code size of the bytes the body was decoded from (0 for bodies built from scratch).
    pub fn original_code_size(&self) -> u32 {
        self.format.code_size
    }

    /// Code offsets of every decoded instruction, indexed by id (ids `0..len` are the
    /// decoded instructions, in offset order), whether or not it survives edits.
    pub fn original_offsets(&self) -> &[u32] {
        &self.format.original_offsets
    }

    /// The surviving instruction whose original code offset is `offset`.
    pub fn find_by_original_offset(&self, offset: u32) -> Option<InstrId> {
        let index = self.format.original_offsets.binary_search(&offset).ok()?;
        let id = InstrId(index as u32);
        self.instrs.contains(id).then_some(id)
    }
}

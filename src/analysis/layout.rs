//! The linear view the analyses share: instruction positions and clause spans.

use crate::body::{ClauseKind, MethodBody, SpanError};
use crate::error::{Error, InstrSite, Result};
use crate::graph::InstrId;

/// Marks "no position" (an id not in the body) and "no filter".
pub(crate) const NONE: u32 = u32::MAX;

/// The handler kind of a clause, without its token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HandlerKind {
    Catch,
    Filter,
    Finally,
    Fault,
}

impl HandlerKind {
    /// Stack height on handler entry: the exception object for catch and filter handlers.
    #[inline]
    pub(crate) fn entry_height(self) -> u32 {
        match self {
            HandlerKind::Catch | HandlerKind::Filter => 1,
            HandlerKind::Finally | HandlerKind::Fault => 0,
        }
    }
}

/// One clause as inclusive position ranges.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ClauseSpan {
    pub kind: HandlerKind,
    pub try_start: u32,
    pub try_last: u32,
    pub handler_start: u32,
    pub handler_last: u32,
    /// First position of the filter region (which ends right before `handler_start`),
    /// or [`NONE`].
    pub filter_start: u32,
}

impl ClauseSpan {
    #[inline]
    pub(crate) fn in_try(&self, p: u32) -> bool {
        self.try_start <= p && p <= self.try_last
    }

    #[inline]
    pub(crate) fn in_handler(&self, p: u32) -> bool {
        self.handler_start <= p && p <= self.handler_last
    }

    #[inline]
    pub(crate) fn in_filter(&self, p: u32) -> bool {
        self.filter_start != NONE && self.filter_start <= p && p < self.handler_start
    }
}

/// Instruction positions in list order and clause spans, rebuilt per body into reused
/// buffers.
#[derive(Debug, Default, Clone)]
pub(crate) struct Layout {
    /// Position -> id.
    pub order: Vec<InstrId>,
    /// Id index -> position, or [`NONE`] for ids not in the body.
    pub pos_of: Vec<u32>,
    pub clauses: Vec<ClauseSpan>,
}

impl Layout {
    /// Lays out `body` and checks each clause on its own (see
    /// `ExceptionClause::region_spans`: regions in the body and non-empty, the filter
    /// before its handler, no overlap among the clause's own regions).
    pub(crate) fn build(&mut self, body: &MethodBody) -> Result<()> {
        self.order.clear();
        self.pos_of.clear();
        self.pos_of.resize(body.instrs.arena_len(), NONE);
        self.order.reserve(body.instrs.len());
        for id in body.instrs.ids() {
            self.pos_of[id.index()] = self.order.len() as u32;
            self.order.push(id);
        }
        self.build_clauses(body)
    }

    /// The clause spans, from `pos_of` (valid at every instruction of the body).
    fn build_clauses(&mut self, body: &MethodBody) -> Result<()> {
        let pos_of = &self.pos_of;
        build_clause_spans(&mut self.clauses, body, |id| {
            if body.instrs.contains(id) {
                pos_of.get(id.index()).copied()
            } else {
                None
            }
        })
    }

    /// Number of instructions (after [`Layout::build`]).
    #[inline]
    pub(crate) fn len(&self) -> u32 {
        self.order.len() as u32
    }

    /// Position of `id`, if it is in the body (after [`Layout::build`]).
    #[inline]
    pub(crate) fn pos(&self, id: InstrId) -> Option<u32> {
        match self.pos_of.get(id.index()) {
            Some(&p) if p != NONE => Some(p),
            _ => None,
        }
    }

    /// The error site of the instruction at position `p`.
    #[inline]
    pub(crate) fn site(&self, body: &MethodBody, p: u32) -> InstrSite {
        site(body, self.order[p as usize])
    }
}

/// Builds the clause spans of `body` into `clauses`, with `position` giving the position
/// of an instruction of the body (`None` for ids not in it), and checks each clause on
/// its own as [`Layout::build`] does.
pub(crate) fn build_clause_spans(
    clauses: &mut Vec<ClauseSpan>,
    body: &MethodBody,
    position: impl Fn(InstrId) -> Option<u32>,
) -> Result<()> {
    clauses.clear();
    for (index, clause) in body.clauses.iter().enumerate() {
        let spans = clause
            .region_spans(&position)
            .map_err(|e| Error::BadEhClause {
                clause: index,
                what: match e {
                    SpanError::NotInBody(_, what) | SpanError::Bad(what) => what,
                },
            })?;
        let span = ClauseSpan {
            kind: match clause.kind {
                ClauseKind::Catch(_) => HandlerKind::Catch,
                ClauseKind::Finally => HandlerKind::Finally,
                ClauseKind::Fault => HandlerKind::Fault,
                ClauseKind::Filter(_) => HandlerKind::Filter,
            },
            try_start: spans.try_.0,
            try_last: spans.try_.1 - 1,
            handler_start: spans.handler.0,
            handler_last: spans.handler.1 - 1,
            filter_start: spans.filter.map_or(NONE, |f| f.0),
        };
        clauses.push(span);
    }
    Ok(())
}

/// The error site of instruction `id` of `body` (which must be in its arena).
pub(crate) fn site(body: &MethodBody, id: InstrId) -> InstrSite {
    InstrSite {
        id,
        offset: body.original_offset(id),
        opcode: body.instrs.opcode(id),
    }
}

//! The linear view the analyses share: instruction positions and clause spans.
#![forbid(unsafe_code)]

use crate::body::{ClauseKind, MethodBody};
use crate::error::InstrSite;
use crate::graph::InstrId;
use crate::{Error, Result};

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
    /// Lays out `body` and checks that every clause region is a non-empty range of its
    /// instructions, that a filter precedes its handler, and that a clause's own regions
    /// do not overlap.
    pub(crate) fn build(&mut self, body: &MethodBody) -> Result<()> {
        self.order.clear();
        self.pos_of.clear();
        self.pos_of.resize(body.instrs.arena_len(), NONE);
        self.order.reserve(body.instrs.len());
        for id in body.instrs.ids() {
            self.pos_of[id.index()] = self.order.len() as u32;
            self.order.push(id);
        }
        self.clauses.clear();
        for (index, clause) in body.clauses.iter().enumerate() {
            let bad = |what| Error::BadEhClause {
                clause: index,
                what,
            };
            let at = |id: InstrId, what| match self.pos(id) {
                Some(p) => Ok(p),
                None => Err(bad(what)),
            };
            let try_start = at(
                clause.try_start,
                "try start is not an instruction of the body",
            )?;
            let try_last = at(clause.try_last, "try end is not an instruction of the body")?;
            let handler_start = at(
                clause.handler_start,
                "handler start is not an instruction of the body",
            )?;
            let handler_last = at(
                clause.handler_last,
                "handler end is not an instruction of the body",
            )?;
            if try_last < try_start {
                return Err(bad("try region ends before it starts"));
            }
            if handler_last < handler_start {
                return Err(bad("handler region ends before it starts"));
            }
            let (kind, filter_start) = match clause.kind {
                ClauseKind::Catch(_) => (HandlerKind::Catch, NONE),
                ClauseKind::Finally => (HandlerKind::Finally, NONE),
                ClauseKind::Fault => (HandlerKind::Fault, NONE),
                ClauseKind::Filter(f) => {
                    let f = at(f, "filter start is not an instruction of the body")?;
                    if f >= handler_start {
                        return Err(bad("filter does not precede its handler"));
                    }
                    (HandlerKind::Filter, f)
                }
            };
            let span = ClauseSpan {
                kind,
                try_start,
                try_last,
                handler_start,
                handler_last,
                filter_start,
            };
            let own_overlap = span.in_try(handler_start)
                || span.in_handler(try_start)
                || (filter_start != NONE
                    && (span.in_try(filter_start) || span.in_filter(try_start)));
            if own_overlap {
                return Err(bad("the clause's own regions overlap"));
            }
            self.clauses.push(span);
        }
        Ok(())
    }

    /// Number of instructions.
    #[inline]
    pub(crate) fn len(&self) -> u32 {
        self.order.len() as u32
    }

    /// Position of `id`, if it is in the body.
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

/// The error site of instruction `id` of `body` (which must be in its arena).
pub(crate) fn site(body: &MethodBody, id: InstrId) -> InstrSite {
    InstrSite {
        id,
        offset: body.original_offset(id),
        opcode: body.instrs.get(id).opcode,
    }
}

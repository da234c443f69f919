//! IL offset maps (`COR_IL_MAP`): where each original instruction lives after rewriting.
//!
//! For every surviving original instruction `X` the map holds one entry
//! `old = X's original offset -> new = start of X in the new code, including the run of
//! injected instructions immediately before X that flows into it`. Injected code
//! therefore maps to the original instruction that follows it, which is what a debugger
//! needs: a breakpoint on `X` stops before the code injected in front of it, and native
//! code generated from injected IL is attributed to `X`. A run ends at an injected
//! instruction that does not fall through (`ret`, `leave`, `br`, `throw`,
//! `endfinally`...): the code before it never reaches `X` that way, and stays with the
//! entry before it (a `leave` injected after a rewritten `ret` belongs to that `ret`,
//! the handlers a wrap adds do not make a breakpoint on the code after them fire on
//! every exit). Removed instructions have no entry.
//!
//! Maps from successive rewrite stages compose with [`IlMap::then`].

use crate::body::{Encoder, MethodBody};
use crate::error::Result;

/// One `COR_IL_MAP` entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IlMapEntry {
    /// Offset in the original IL.
    pub old_offset: u32,
    /// Offset in the rewritten IL.
    pub new_offset: u32,
    /// Whether the mapping is exact (`fAccurate`); always true for maps built here.
    pub accurate: bool,
}

/// An old -> new offset map, sorted by old offset (and then by new offset).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IlMap {
    entries: Vec<IlMapEntry>,
}

impl IlMap {
    /// The map of `body` as it would be encoded now, relative to the bytes it was decoded
    /// from.
    ///
    /// # Errors
    ///
    /// Those of [`Encoder::code_offsets`], which lays the body out:
    /// [`crate::Error::BadOperand`] for a `switch` or short branch whose operand is of
    /// another kind, [`crate::Error::Unencodable`] for a short branch to an instruction not
    /// in the body, or a `switch` table or code too large.
    pub fn of(body: &MethodBody) -> Result<IlMap> {
        let mut encoder = Encoder::new();
        let offsets = encoder.code_offsets(body)?;
        Ok(Self::from_offsets(body, offsets))
    }

    /// The map of `body` given its layout (`offsets` as returned by
    /// [`Encoder::code_offsets`] for this same body; panics if `offsets` is shorter than
    /// the body's arena).
    pub fn from_offsets(body: &MethodBody, offsets: &[u32]) -> IlMap {
        let originals = body.original_offsets();
        let mut entries = Vec::with_capacity(originals.len());
        let mut run_start: Option<u32> = None;
        for id in body.instrs.ids() {
            let new = offsets[id.index()];
            match originals.get(id.index()) {
                Some(&old) => {
                    entries.push(IlMapEntry {
                        old_offset: old,
                        new_offset: run_start.take().unwrap_or(new),
                        accurate: true,
                    });
                }
                None => {
                    run_start.get_or_insert(new);
                    if !body.instrs.opcode(id).flow().falls_through() {
                        run_start = None;
                    }
                }
            }
        }
        // Decoded ids are in offset order but may have been moved by edits.
        entries.sort_unstable_by_key(|e| (e.old_offset, e.new_offset));
        IlMap { entries }
    }

    /// The identity map over the given original offsets.
    pub fn identity(offsets: &[u32]) -> IlMap {
        IlMap {
            entries: offsets
                .iter()
                .map(|&o| IlMapEntry {
                    old_offset: o,
                    new_offset: o,
                    accurate: true,
                })
                .collect(),
        }
    }

    /// The entries, sorted by old offset.
    pub fn entries(&self) -> &[IlMapEntry] {
        &self.entries
    }

    /// Where the instruction at original offset `old` now starts (with its injected
    /// prefix), if it survived.
    pub fn map(&self, old: u32) -> Option<u32> {
        let i = self.entries.partition_point(|e| e.old_offset < old);
        self.entries
            .get(i)
            .filter(|e| e.old_offset == old)
            .map(|e| e.new_offset)
    }

    /// Composes `self` (original -> intermediate) with `next` (intermediate -> final).
    ///
    /// An intermediate offset that `next` removed maps to the next surviving
    /// intermediate instruction after it, so code is never attributed backwards; entries
    /// with nothing after them are dropped.
    pub fn then(&self, next: &IlMap) -> IlMap {
        let entries = self
            .entries
            .iter()
            .filter_map(|e| {
                let i = next
                    .entries
                    .partition_point(|n| n.old_offset < e.new_offset);
                next.entries.get(i).map(|n| IlMapEntry {
                    old_offset: e.old_offset,
                    new_offset: n.new_offset,
                    accurate: e.accurate && n.accurate && n.old_offset == e.new_offset,
                })
            })
            .collect();
        IlMap { entries }
    }
}

//! Bytes -> [`MethodBody`].
//!
//! Decoding validates everything the encoder later relies on: every opcode is defined,
//! every operand and switch table lies inside the code, every branch target and EH
//! boundary is the start of an instruction (EH ends may also be the end of the code).
//! Errors carry the offset: code offsets for instructions, body offsets for header and
//! sections.
// Errors are built only on the error path (`let ... else`, `ok_or_else`): `Error` has drop
// glue, so `ok_or(Error::..)` would build and drop one on every instruction.

use super::header::read_header;
use super::scan::switch_len;
use super::sections::{RawClause, read_sections};
use super::{CODE_PADDING, ClauseKind, ExceptionClause, MethodBody};
use crate::error::{Error, Result};
use crate::graph::packed::Slot;
use crate::graph::{InstrId, InstrList};
use crate::opcode::{DECODE_ONE, DECODE_TWO, OpCode, OperandKind};
use std::sync::atomic::{AtomicU64, Ordering};

/// Reusable scratch space for decoding many bodies without reallocating.
///
/// Holds about 24 bytes per code byte of the largest body decoded so far (a 64 KiB
/// method: 1.5 MiB); drop the decoder to release it.
#[derive(Debug, Default)]
pub struct Decoder {
    /// Ids of branch instructions whose operand still holds a target *offset*.
    pending_branches: Vec<u32>,
    /// Where the stream is decoded to before it is copied into the body: one slot per
    /// code byte (every instruction takes at least one), kept at the length of the
    /// largest code decoded so far, so the loop stores by index instead of pushing.
    slots: Vec<Slot>,
    /// The code offset of each instruction in `slots`.
    starts: Vec<u32>,
    /// Code offset -> id of the instruction starting there, for the current body's
    /// instruction starts only; other entries are stale, see [`OffsetIndex`].
    id_of: Vec<u32>,
}

impl Decoder {
    /// A decoder with empty scratch buffers.
    pub fn new() -> Self {
        Self::default()
    }

    /// Decodes the body at the start of `bytes` into `body`, reusing `body`'s buffers.
    ///
    /// `bytes` may extend past the end of the body. Returns the number of bytes the body
    /// occupies (header, code, padding and EH sections). On error `body` is left in an
    /// unspecified but valid state.
    ///
    /// # Errors
    ///
    /// The structural faults of the bytes, at their offset: [`Error::Truncated`],
    /// [`Error::BadHeaderFormat`], [`Error::BadHeaderSize`] and [`Error::CodeSizePastEnd`]
    /// in the header; [`Error::UnknownOpcode`], [`Error::OperandPastEnd`],
    /// [`Error::SwitchTablePastEnd`], [`Error::BranchOutsideCode`] and
    /// [`Error::BranchIntoInstruction`] in the code; [`Error::BadSectionKind`],
    /// [`Error::BadSectionSize`], [`Error::BadEhKind`], [`Error::EhClauseOutOfRange`] and
    /// [`Error::EhClauseNotOnBoundary`] in the EH sections.
    pub fn decode_into(&mut self, bytes: &[u8], body: &mut MethodBody) -> Result<usize> {
        let header = read_header(bytes)?;
        let code = header.code(bytes)?;
        let code_start = header.len;
        let code_size = code.len();

        body.instrs.clear();
        body.clauses.clear();
        body.max_stack = header.max_stack;
        body.init_locals = header.init_locals;
        body.local_var_sig = header.local_var_sig;
        // Fields are updated in place: moving the whole format out and back costs more
        // than the rest of a small body's decoding.
        let format = &mut body.format;
        format.header = header.format;
        format.sections.clear();
        format.padding.clear();
        format.code_size = header.code_size;
        format.decode_stamp = 0;
        // The one copy of the code: kept for the encoder, and padded so that the decoder
        // reads every operand as one 8-byte word.
        format.original_code.clear();
        format.original_code.extend_from_slice(code);
        format.original_code.extend_from_slice(&[0; CODE_PADDING]);
        let mut offsets = std::mem::take(&mut format.original_offsets);
        let decoded = self.decode_code(
            code,
            &body.format.original_code,
            &mut body.instrs,
            &mut offsets,
        );
        body.format.original_offsets = offsets;
        decoded?;
        let mut end = code_start + code_size;
        if header.more_sects {
            // Reading the sections checks that the padding is there.
            let padding = bytes.get(end..end.next_multiple_of(4)).unwrap_or_default();
            body.format.padding.extend_from_slice(padding);
            let index = OffsetIndex {
                offsets: &body.format.original_offsets,
                id_of: &self.id_of,
            };
            let clauses = &mut body.clauses;
            let (sections_end, sections) = read_sections(bytes, end, |raw| {
                let clause = resolve_clause(&raw, &index, code_size)?;
                clauses.push(clause);
                Ok(())
            })?;
            end = sections_end;
            body.format.sections = sections;
        }
        // A stamp no other decode has: a list moved into another body does not match
        // that body's code.
        static STAMPS: AtomicU64 = AtomicU64::new(1);
        let stamp = STAMPS.fetch_add(1, Ordering::Relaxed);
        body.format.decode_stamp = stamp;
        body.instrs.mark_unedited(stamp);
        Ok(end)
    }

    /// Decodes `code` (which `padded` holds, followed by [`CODE_PADDING`] zero bytes) into
    /// `instrs` and the original offsets into `offsets`.
    ///
    /// One pass appends the instructions in order, checking the structure and that branch
    /// targets lie inside the code, in stream order; branch operands hold the target
    /// *offset* until a second pass over the branches alone resolves them to ids.
    fn decode_code(
        &mut self,
        code: &[u8],
        padded: &[u8],
        instrs: &mut InstrList,
        offsets: &mut Vec<u32>,
    ) -> Result<()> {
        self.pending_branches.clear();
        offsets.clear();
        if self.slots.len() < code.len() {
            self.slots.resize(code.len(), Slot::new(OpCode::Nop, 0));
            self.starts.resize(code.len(), 0);
            self.id_of.resize(code.len(), 0);
        }
        let (slots, starts, id_of, pending) = (
            &mut self.slots[..],
            &mut self.starts[..],
            &mut self.id_of[..],
            &mut self.pending_branches,
        );
        instrs.append_in_order(0, |list| {
            let n = decode_stream(code, padded, slots, starts, id_of, list.pool, pending)?;
            let index = OffsetIndex {
                offsets: &starts[..n],
                id_of,
            };
            resolve_branches(&index, pending, &mut slots[..n], list.pool)?;
            list.slots.extend_from_slice(&slots[..n]);
            offsets.extend_from_slice(&starts[..n]);
            Ok(())
        })
    }
}

/// Replaces the target offsets held by the pending branches and switches of `slots` (and
/// of the switch targets in `pool`) by ids.
fn resolve_branches(
    index: &OffsetIndex<'_>,
    pending: &[u32],
    slots: &mut [Slot],
    pool: &mut [InstrId],
) -> Result<()> {
    let resolve = |from: usize, target: u32| -> Result<InstrId> {
        match index.id_at(target) {
            Some(id) => Ok(id),
            None => Err(Error::BranchIntoInstruction {
                offset: index.offsets.get(from).copied().unwrap_or_default() as usize,
                target,
            }),
        }
    };
    for &from in pending {
        let from = from as usize;
        let Some(slot) = slots.get_mut(from) else {
            continue;
        };
        if slot.opcode.operand() == OperandKind::Switch {
            let (start, len) = (slot.bits as u32 as usize, (slot.bits >> 32) as usize);
            for target in pool.get_mut(start..start + len).unwrap_or_default() {
                *target = resolve(from, target.0)?;
            }
        } else {
            slot.bits = u64::from(resolve(from, slot.bits as u32)?.0);
        }
    }
    Ok(())
}

/// Turns an offset-based clause into an id-based one with inclusive regions.
fn resolve_clause(
    raw: &RawClause,
    index: &OffsetIndex<'_>,
    code_size: usize,
) -> Result<ExceptionClause> {
    let region = |what, start: u32, length: u32| -> Result<(InstrId, InstrId)> {
        let end = u64::from(start) + u64::from(length);
        if length == 0 || end > code_size as u64 {
            return Err(Error::EhClauseOutOfRange {
                offset: raw.at,
                what,
                start,
                length,
            });
        }
        let first = instruction_at(index, start, raw.at, what)?;
        let end = end as u32;
        let last = if end as usize == code_size {
            index.offsets.len() as u32 - 1
        } else {
            instruction_at(index, end, raw.at, what)?.0 - 1
        };
        Ok((first, InstrId(last)))
    };
    let (try_start, try_last) = region("try", raw.try_offset, raw.try_length)?;
    let (handler_start, handler_last) = region("handler", raw.handler_offset, raw.handler_length)?;
    let kind = match raw.flags {
        0 => ClauseKind::Catch(raw.extra),
        1 => {
            if raw.extra >= raw.handler_offset {
                return Err(Error::EhClauseOutOfRange {
                    offset: raw.at,
                    what: "filter",
                    start: raw.extra,
                    length: raw.handler_offset.wrapping_sub(raw.extra),
                });
            }
            ClauseKind::Filter(instruction_at(index, raw.extra, raw.at, "filter")?)
        }
        2 => ClauseKind::Finally,
        4 => ClauseKind::Fault,
        flags => {
            return Err(Error::BadEhKind {
                offset: raw.at,
                flags,
            });
        }
    };
    let mut clause = ExceptionClause::new(kind, try_start, try_last, handler_start, handler_last);
    if matches!(kind, ClauseKind::Finally | ClauseKind::Fault) {
        clause.unused_token = raw.extra;
    }
    Ok(clause)
}

fn instruction_at(
    index: &OffsetIndex<'_>,
    offset: u32,
    at: usize,
    what: &'static str,
) -> Result<InstrId> {
    match index.id_at(offset) {
        Some(id) => Ok(id),
        None => Err(Error::EhClauseNotOnBoundary {
            offset: at,
            what,
            boundary: offset,
        }),
    }
}

/// Finds the decoded instruction starting at a code offset in O(1).
///
/// `id_of` is indexed by code offset and may hold stale ids from earlier bodies at offsets
/// where no instruction of this body starts; an entry counts only if the instruction it
/// names starts at that offset (`offsets[id] == offset`), the check of a sparse set.
struct OffsetIndex<'a> {
    /// Code offset of each instruction, by id.
    offsets: &'a [u32],
    /// Id of the instruction starting at each code offset, where one does.
    id_of: &'a [u32],
}

impl OffsetIndex<'_> {
    /// The id of the instruction starting at code offset `offset`, if one does.
    #[inline]
    fn id_at(&self, offset: u32) -> Option<InstrId> {
        let id = *self.id_of.get(offset as usize)?;
        (self.offsets.get(id as usize) == Some(&offset)).then_some(InstrId(id))
    }
}

/// Operand masks by operand size in bytes.
const OPERAND_MASK: [u64; 9] = [
    0,
    0xFF,
    0xFFFF,
    0xFF_FFFF,
    0xFFFF_FFFF,
    0xFF_FFFF_FFFF,
    0xFFFF_FFFF_FFFF,
    0xFF_FFFF_FFFF_FFFF,
    u64::MAX,
];

/// Decodes every instruction of `code` in stream order into `slots`, its code offset into
/// `starts`, its id into `id_of` at its code offset (all three at least `code.len()`
/// long) and, for branches and switches, its id to `pending`; returns the number of
/// instructions. `padded` is `code` followed by 8 zero bytes.
///
/// A slot's operand bits are the operand's bytes read as one little-endian word and
/// masked to the operand's size, whatever its kind: no branch on the kind but for
/// branches and switches, whose bits hold the target code offset (checked to lie inside
/// the code) until [`resolve_branches`]; switch targets are appended to `pool`, also as
/// offsets. Stores by index into pre-sized slices rather than pushing onto vectors.
#[inline(never)]
fn decode_stream(
    code: &[u8],
    padded: &[u8],
    slots: &mut [Slot],
    starts: &mut [u32],
    id_of: &mut [u32],
    pool: &mut Vec<InstrId>,
    pending: &mut Vec<u32>,
) -> Result<usize> {
    let size = code.len();
    // Every index below is less than `size` (an instruction takes at least one byte):
    // with the slices cut to `size`, one length bounds them all.
    let (Some(slots), Some(starts), Some(id_of), Some(padded)) = (
        slots.get_mut(..size),
        starts.get_mut(..size),
        id_of.get_mut(..size),
        padded.get(..size + 8),
    ) else {
        // `decode_code` sizes the scratch space to the code; never taken.
        return Err(Error::Truncated {
            what: "decoder scratch space",
            offset: 0,
            needed: size,
            available: 0,
        });
    };
    let mut pos = 0usize;
    let mut n = 0usize;
    while let Some(&first) = code.get(pos) {
        let start = pos;
        let (row, at) = if first == 0xFE {
            let Some(&second) = code.get(start + 1) else {
                return Err(Error::Truncated {
                    what: "two-byte opcode",
                    offset: start,
                    needed: 2,
                    available: 1,
                });
            };
            (DECODE_TWO[usize::from(second)], start + 2)
        } else {
            (DECODE_ONE[usize::from(first)], start + 1)
        };
        let Some(opcode) = row.opcode else {
            return Err(Error::UnknownOpcode {
                offset: start,
                byte: code[at - 1],
                prefixed: first == 0xFE,
            });
        };
        let len = match row.len {
            0 => switch_len(code, start)?,
            len => usize::from(len),
        };
        let end = start + len;
        if end > size {
            return Err(Error::OperandPastEnd {
                offset: start,
                opcode: opcode.name(),
            });
        }
        pos = end;
        let word = padded
            .get(at..at + 8)
            .and_then(|w| w.first_chunk::<8>())
            .map_or(0, |w| u64::from_le_bytes(*w));
        let mut bits = word & OPERAND_MASK[(end - at).min(8)];
        if row.control {
            pending.push(n as u32);
            bits = match row.operand {
                OperandKind::ShortBranch => {
                    let disp = i64::from(bits as u8 as i8);
                    u64::from(check_target(start, end, disp, size)?)
                }
                OperandKind::Branch => {
                    let disp = i64::from(bits as u32 as i32);
                    u64::from(check_target(start, end, disp, size)?)
                }
                _ => read_switch(
                    code.get(at..end).unwrap_or_default(),
                    start,
                    end,
                    size,
                    pool,
                )?,
            };
        }
        // `n < code.len() <= slots.len()`: an instruction takes at least one byte.
        if let (Some(slot), Some(at), Some(id)) =
            (slots.get_mut(n), starts.get_mut(n), id_of.get_mut(start))
        {
            *slot = Slot::new(opcode, bits);
            *at = start as u32;
            *id = n as u32;
        }
        n += 1;
    }
    Ok(n.min(slots.len()))
}

/// Appends the target offsets of a switch (operand `bytes`: count and table) to `pool`;
/// returns the switch's slot bits (its pool range).
#[cold]
fn read_switch(
    bytes: &[u8],
    start: usize,
    end: usize,
    size: usize,
    pool: &mut Vec<InstrId>,
) -> Result<u64> {
    let first = pool.len() as u32;
    let table = bytes.get(4..).unwrap_or_default();
    for chunk in table.chunks_exact(4) {
        let disp = i64::from(i32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]));
        pool.push(InstrId(check_target(start, end, disp, size)?));
    }
    Ok(u64::from(first) | ((table.len() / 4) as u64) << 32)
}

/// Checks a branch displacement and returns the target code offset.
#[inline]
fn check_target(from: usize, next: usize, disp: i64, size: usize) -> Result<u32> {
    let target = next as i64 + disp;
    if target < 0 || target >= size as i64 {
        return Err(Error::BranchOutsideCode {
            offset: from,
            target,
        });
    }
    Ok(target as u32)
}

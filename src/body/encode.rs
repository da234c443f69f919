//! [`MethodBody`] -> bytes.
//!
//! Rules, applied in order:
//! * **Instructions** are written in the form their opcode names. A short branch whose
//!   displacement does not fit in `int8` is written in its long form; this relaxation
//!   runs to a fixed point (growing one branch can push another out of range). Branches
//!   never shrink, so decoded long branches stay long and unedited code is reproduced.
//! * **Header**: tiny when the body was decoded tiny or never decoded, and a tiny header
//!   is legal (code <= 63 bytes, max stack <= 8, no locals signature, no InitLocals, no
//!   EH sections); otherwise fat, keeping any unknown flag bits of the original fat header.
//! * **EH sections**: the original split into sections and small/fat choice when the
//!   clause count still matches and every small section still fits (sections that hold
//!   no clause included, so a decoded body whose sections are all empty keeps them and
//!   its MoreSects flag; the reserved bytes of small section headers are kept too);
//!   otherwise one section, small when every clause fits the small
//!   format and there are at most 20 clauses, fat otherwise, and no section at all
//!   without clauses.
//! * **Padding** between code and sections, up to a 4-byte boundary, is the padding of
//!   the decoded body when it needs as many bytes, zero bytes otherwise.

use super::header::{
    FAT_HEADER_SIZE, FatHeader, TINY_MAX_CODE_SIZE, TINY_MAX_STACK, fat_header, tiny_header,
};
use super::sections::{RawClause, fit_small_section, write_section};
use super::{ClauseKind, HeaderFormat, MethodBody};
use crate::error::{Error, Result};
use crate::graph::packed::Slot;
use crate::graph::{InstrId, InstrList, Instruction, Operand};
use crate::opcode::{OpCode, OperandKind, Word};

const NOT_PLACED: u32 = u32::MAX;

/// The header [`Encoder::encode`] chose for a body, and the max stack the runtime will
/// take from it.
///
/// A tiny header states no max stack: the runtime assumes 8 ([`TINY_MAX_STACK`]), so a
/// body whose analysis says 2 is re-decoded with `max_stack == 8`. The encoder picks a
/// tiny header only when that is legal (code under 64 bytes, max stack at most 8, no
/// locals, no `InitLocals`, no exception clauses) and the body does not ask for a fat
/// one ([`MethodBody::force_fat_header`], or a decoded fat header kept unedited).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EncodedHeader {
    /// A one-byte tiny header.
    Tiny {
        /// The code size in bytes.
        code_size: u32,
    },
    /// A 12-byte fat header.
    Fat {
        /// The code size in bytes.
        code_size: u32,
        /// The max stack it states.
        max_stack: u16,
    },
}

impl EncodedHeader {
    /// The max stack the runtime takes from the header: the stated one, or 8 for a tiny
    /// header.
    pub fn max_stack(self) -> u16 {
        match self {
            EncodedHeader::Tiny { .. } => TINY_MAX_STACK,
            EncodedHeader::Fat { max_stack, .. } => max_stack,
        }
    }

    /// The code size in bytes.
    pub fn code_size(self) -> u32 {
        match self {
            EncodedHeader::Tiny { code_size } | EncodedHeader::Fat { code_size, .. } => code_size,
        }
    }
}

/// Reusable scratch space for encoding many bodies without reallocating.
#[derive(Debug, Default)]
pub struct Encoder {
    /// Code offset of each instruction, indexed by id (`NOT_PLACED` if unlinked), in
    /// `offsets[..arena]`; longer when an earlier body had more ids (never shortened).
    offsets: Vec<u32>,
    /// The arena length of the body being encoded: how many of `offsets` are its own.
    arena: usize,
    /// Whether a short-form branch must be written in its long form, indexed by id;
    /// empty while no branch of the body needs widening (the usual case).
    widened: Vec<bool>,
    /// Branch displacements to write once every instruction is placed, in
    /// `fixups[..fixup_count]`; the rest is room for the next round (never shortened).
    fixups: Vec<Fixup>,
    /// How many of `fixups` are the body's.
    fixup_count: usize,
    clauses: Vec<RawClause>,
    code_size: u32,
    /// The code of the body being encoded, in `code[..code_size]`. Never shortened: the
    /// bytes past the code are left from earlier bodies and rounds, and are overwritten
    /// (never read) by the next, so that no round pays for zeroing the buffer.
    code: Vec<u8>,
    /// Scratch of [`Encoder::widen_in_place`]: per fixup, whether it is widened.
    wide: Vec<bool>,
    /// Scratch of [`Encoder::widen_in_place`]: the end of each widened branch and the
    /// growth up to and including it.
    shifts: Vec<(u32, u32)>,
    /// Whether to derive the code from the instructions even when the list is unedited
    /// (see [`Encoder::deriving_every_byte`]).
    rederive: bool,
}

/// A branch displacement left as zeros while the code is written, filled in afterwards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Fixup {
    /// Code offset of the displacement.
    at: u32,
    /// Code offset the displacement counts from (the end of the instruction).
    next: u32,
    /// The branch target.
    target: InstrId,
    /// The branch or switch.
    from: InstrId,
    /// Its opcode as written: a short branch has a one-byte displacement, anything else
    /// (long branch, switch table entry) four bytes.
    opcode: OpCode,
}

impl Fixup {
    /// A placeholder filling the room of [`Encoder::fixups`].
    const NONE: Fixup = Fixup {
        at: 0,
        next: 0,
        target: InstrId(0),
        from: InstrId(0),
        opcode: OpCode::Nop,
    };
}

impl Encoder {
    /// The encoder to use: empty scratch buffers, kept and reused for every body it
    /// encodes. The code of a body whose instruction list is unedited since it was
    /// decoded (the common case for most methods a profiler sees) is copied from the
    /// decoded bytes instead of derived again; everything else is derived from the
    /// instructions.
    pub fn new() -> Self {
        Self::default()
    }

    /// The reference encoder: derives every byte of the code from the instructions, even
    /// for bodies whose instruction list is unedited since decoding (which
    /// [`Encoder::new`] copies). Both give the same bytes; this one is what the tests
    /// hold the copy to, and what [`MethodBody::encode`] uses.
    pub fn deriving_every_byte() -> Self {
        Encoder {
            rederive: true,
            ..Self::default()
        }
    }

    /// Takes the code and its offsets from the decoded body when the instruction list is
    /// unedited since the decode that filled this body (the stamps match): they are then
    /// exactly what [`Encoder::write_code`] would produce (the decoder accepted the code,
    /// and re-encoding accepted code reproduces it). Returns whether it did.
    fn copy_unedited(&mut self, body: &MethodBody) -> bool {
        let (offsets, code) = (&body.format.original_offsets, body.format.decoded_code());
        let n = body.instrs.arena_len();
        let stamp = body.instrs.unedited_stamp();
        if self.rederive
            || stamp == 0
            || stamp != body.format.decode_stamp
            || offsets.len() != n
            || code.len() != body.format.code_size as usize
        {
            return false;
        }
        if self.offsets.len() < n {
            self.offsets.resize(n, NOT_PLACED);
        }
        self.offsets[..n].copy_from_slice(offsets);
        self.arena = n;
        self.code_size = code.len() as u32;
        true
    }

    /// Appends the encoding of `body` to `out` and says which header it chose. On error
    /// `out` is left as it was.
    ///
    /// `out` is assumed to start at a 4-byte-aligned address (as method bodies with fat
    /// headers must); section padding is computed relative to where this body starts.
    ///
    /// # Errors
    /// [`Error::BadOperand`] for an instruction whose operand does not fit its opcode,
    /// [`Error::NotInBody`] or [`Error::Unencodable`] for a branch or clause boundary
    /// that names no instruction of the body, [`Error::Unencodable`] for a body or
    /// section too large for the format.
    pub fn encode(&mut self, body: &MethodBody, out: &mut Vec<u8>) -> Result<EncodedHeader> {
        let base = out.len();
        let result = self.encode_at(body, out, base);
        if result.is_err() {
            out.truncate(base);
        }
        result
    }

    fn encode_at(
        &mut self,
        body: &MethodBody,
        out: &mut Vec<u8>,
        base: usize,
    ) -> Result<EncodedHeader> {
        // Sections are written for clauses, and also when the decoded layout is kept even
        // though none of its sections holds a clause (`keeps_section_layout` agrees).
        let sections = &body.format.sections;
        let has_sections = !body.clauses.is_empty()
            || (!sections.is_empty() && sections.iter().all(|s| s.clauses == 0));
        let tiny_possible = matches!(
            body.format.header,
            HeaderFormat::Smallest | HeaderFormat::Tiny
        ) && body.max_stack <= TINY_MAX_STACK
            && body.local_var_sig == 0
            && !body.init_locals
            && !has_sections;
        let copied = self.copy_unedited(body);
        if !copied {
            self.write_code(&body.instrs, Check::All)?;
        }
        let code_size = self.code_size;
        let code = match copied {
            true => body.format.decoded_code(),
            false => &self.code[..code_size as usize],
        };
        // The code is laid out first: the header, which depends on its size, is then
        // composed whole and written before it.
        out.reserve(FAT_HEADER_SIZE + code.len() + 4);
        let tiny = tiny_possible && code_size <= TINY_MAX_CODE_SIZE;
        if tiny {
            out.push(tiny_header(code_size));
        } else {
            let extra_flags = match body.format.header {
                HeaderFormat::Fat { extra_flags } => extra_flags,
                _ => 0,
            };
            out.extend_from_slice(&fat_header(&FatHeader {
                extra_flags,
                more_sects: has_sections,
                init_locals: body.init_locals,
                max_stack: body.max_stack,
                code_size,
                local_var_sig: body.local_var_sig,
            }));
        }
        out.extend_from_slice(code);
        if has_sections {
            self.layout_clauses(body)?;
            let keep_sections = self.keeps_section_layout(body);
            let padding = (4 - (out.len() - base) % 4) % 4;
            if body.format.padding.len() == padding {
                out.extend_from_slice(&body.format.padding);
            } else {
                out.resize(out.len() + padding, 0);
            }
            self.write_sections(body, keep_sections, out)?;
        }
        Ok(match tiny {
            true => EncodedHeader::Tiny { code_size },
            false => EncodedHeader::Fat {
                code_size,
                max_stack: body.max_stack,
            },
        })
    }

    /// The code offset of every instruction of the body last encoded (by id index,
    /// `u32::MAX` for ids not in it), valid right after [`Encoder::encode`] succeeded.
    pub(crate) fn encoded_offsets(&self) -> &[u32] {
        &self.offsets[..self.arena]
    }

    /// Lays out `body` as [`Encoder::encode`] would and returns the code offset of every
    /// instruction, indexed by [`InstrId::index`] (`u32::MAX` for ids not in the body),
    /// followed by one extra entry: the code size.
    ///
    /// Checks only what decides the layout (switch and short-branch operands, and the
    /// targets of short branches), so it also lays out bodies that `encode` refuses for
    /// an operand value, e.g. to disassemble them.
    ///
    /// # Errors
    /// [`Error::BadOperand`] for a `switch` or short branch whose operand does not
    /// match its opcode, [`Error::NotInBody`] for a branch target that is not in the
    /// body, [`Error::Unencodable`] for code too large for the format.
    pub fn code_offsets(&mut self, body: &MethodBody) -> Result<&[u32]> {
        if !self.copy_unedited(body) {
            self.write_code(&body.instrs, Check::Layout)?;
        }
        let n = self.arena;
        if self.offsets.len() == n {
            self.offsets.push(self.code_size);
        } else {
            self.offsets[n] = self.code_size;
        }
        Ok(&self.offsets[..=n])
    }

    /// Writes the code to `self.code[..self.code_size]`, placing every instruction and
    /// widening short branches until every displacement fits.
    ///
    /// A round writes every instruction, branch displacements as zeros, then fills in the
    /// displacements. When a short branch's displacement does not fit, the widening runs
    /// to a fixed point (growing one branch can push another out of range) on offsets
    /// alone, see [`Encoder::widen_in_place`], and the written code is then moved apart
    /// to make room for the long forms, so that the instructions are written once. Should
    /// that not settle every branch, short branches found out of range are marked for
    /// their long form and another round writes the code again. Unedited code needs one
    /// round.
    fn write_code(&mut self, instrs: &InstrList, check: Check) -> Result<()> {
        self.widened.clear();
        loop {
            // Room for the usual case up front (at most 9 bytes and one fixup per
            // instruction; the code is written 8 bytes at a time): a round that runs out
            // of room writes what fits, and is run again with more.
            let n = instrs.len();
            let room = n.saturating_mul(9).saturating_add(16);
            if self.code.len() < room {
                grow(&mut self.code, room);
            }
            if self.fixups.len() < n {
                self.fixups
                    .resize(n.max(2 * self.fixups.len()), Fixup::NONE);
            }
            let walked = self.write_round(instrs, check)?;
            self.fixup_count = walked.fixups;
            let end = walked.end;
            let Ok(code_size) = u32::try_from(end) else {
                return Err(Error::Unencodable {
                    what: "code larger than 4 GiB",
                });
            };
            let code_short = self.code.len() < end.saturating_add(8);
            if code_short || self.fixups.len() < walked.fixups {
                if code_short {
                    grow(&mut self.code, end.saturating_add(8));
                }
                if self.fixups.len() < walked.fixups {
                    self.fixups.resize(walked.fixups, Fixup::NONE);
                }
                continue;
            }
            self.code_size = code_size;
            let mut code = std::mem::take(&mut self.code);
            let widened = self.fill_displacements(&mut code[..end], instrs.arena_len(), check);
            self.code = code;
            if !widened? {
                return Ok(());
            }
            if self.widen_in_place(instrs.arena_len())? {
                let mut code = std::mem::take(&mut self.code);
                let end = self.code_size as usize;
                let widened = self.fill_displacements(&mut code[..end], instrs.arena_len(), check);
                self.code = code;
                if !widened? {
                    return Ok(());
                }
            }
        }
    }

    /// Widens the short branches marked in `widened` by the last round, and any others
    /// that then fall out of range, without writing the code again: finds the fixed point
    /// on the offsets of the round, then moves the written code apart to make room for
    /// each long form (written with a zero displacement), and updates `offsets`,
    /// `fixups`, `widened` and `code_size` to match. Returns false, having changed
    /// nothing, when a short branch's target was not placed (the next round reports it).
    ///
    /// An instruction at offset `x` of the round moves by the growth of the widened
    /// branches that end at or before `x` (none starts or ends inside another).
    fn widen_in_place(&mut self, arena: usize) -> Result<bool> {
        let fixups = &self.fixups[..self.fixup_count];
        let offsets = &self.offsets[..self.arena];
        // Per fixup: whether it is a short branch to widen.
        let wide = &mut self.wide;
        wide.clear();
        wide.extend(fixups.iter().map(|f| {
            f.opcode.operand() == OperandKind::ShortBranch
                && self.widened.get(f.from.index()) == Some(&true)
        }));
        // (end of a widened branch in the round, growth of it and every one before).
        let shifts = &mut self.shifts;
        loop {
            shifts.clear();
            let mut grown = 0u32;
            for (f, _) in fixups.iter().zip(wide.iter()).filter(|(_, w)| **w) {
                grown = grown.saturating_add(growth(f.opcode));
                shifts.push((f.next, grown));
            }
            let shift = |x: u32| match shifts.partition_point(|&(end, _)| end <= x) {
                0 => 0,
                k => shifts[k - 1].1,
            };
            let mut changed = false;
            // The fixups are in code order: their ends only grow.
            let mut ends = Finger::default();
            for (f, w) in fixups.iter().zip(wide.iter_mut()) {
                if *w || f.opcode.operand() != OperandKind::ShortBranch {
                    continue;
                }
                let target = match offsets.get(f.target.index()) {
                    Some(&at) if at != NOT_PLACED => at,
                    _ => return Ok(false),
                };
                let disp = i64::from(target) + i64::from(shift(target))
                    - (i64::from(f.next) + i64::from(ends.shift(shifts, f.next)));
                if i8::try_from(disp).is_err() {
                    *w = true;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        let old_end = self.code_size as usize;
        let total = shifts.last().map_or(0, |&(_, grown)| grown);
        let Some(new_end) = self.code_size.checked_add(total) else {
            return Err(Error::Unencodable {
                what: "code larger than 4 GiB",
            });
        };
        let new_end = new_end as usize;
        if self.code.len() < new_end {
            grow(&mut self.code, new_end);
        }
        // Back to front: the code after each widened branch moves right by the growth up
        // to and including it, then the branch is written in its long form.
        let code = &mut self.code;
        let mut seg_end = old_end;
        let widened_fixups = fixups.iter().zip(wide.iter()).filter(|(_, w)| **w);
        for (k, (f, _)) in widened_fixups.rev().enumerate() {
            let j = shifts.len() - 1 - k;
            let before = if j == 0 { 0 } else { shifts[j - 1].1 } as usize;
            let after = shifts[j].1 as usize;
            let end = f.next as usize;
            code.copy_within(end..seg_end, end + after);
            let short = f.opcode.encoding();
            let long = f.opcode.long_form().unwrap_or(f.opcode).encoding();
            let start = end - usize::from(short.len) + before;
            let opcode_len = usize::from(long.opcode_len);
            code[start..start + opcode_len]
                .copy_from_slice(&long.bytes.to_le_bytes()[..opcode_len]);
            code[start + opcode_len..start + usize::from(long.len)].fill(0);
            seg_end = end - usize::from(short.len);
        }
        // The fixups are in code order, so their positions are looked up with fingers.
        let shifts = &shifts[..];
        shift_offsets(&mut self.offsets[..self.arena], shifts);
        if self.widened.is_empty() {
            self.widened.resize(arena, false);
        }
        let (mut starts, mut ats, mut nexts) =
            (Finger::default(), Finger::default(), Finger::default());
        for (f, &w) in self.fixups[..self.fixup_count].iter_mut().zip(wide.iter()) {
            if w {
                let short = f.opcode.encoding();
                let long_op = f.opcode.long_form().unwrap_or(f.opcode);
                let long = long_op.encoding();
                let start = f.next - u32::from(short.len);
                let start = start + starts.shift(shifts, start);
                f.at = start + u32::from(long.opcode_len);
                f.next = start + u32::from(long.len);
                f.opcode = long_op;
                if let Some(mark) = self.widened.get_mut(f.from.index()) {
                    *mark = true;
                }
            } else {
                f.at += ats.shift(shifts, f.at);
                f.next += nexts.shift(shifts, f.next);
            }
        }
        self.code_size = new_end as u32;
        Ok(true)
    }

    /// Writes the displacement of every fixup into `code`. Returns whether a short branch
    /// was out of range, in which case it is marked in `widened` and `code` is incomplete.
    fn fill_displacements(&mut self, code: &mut [u8], arena: usize, check: Check) -> Result<bool> {
        let mut widened_any = false;
        let offsets = &self.offsets[..self.arena];
        for fixup in &self.fixups[..self.fixup_count] {
            let short = fixup.opcode.operand() == OperandKind::ShortBranch;
            let target = match offsets.get(fixup.target.index()) {
                Some(&at) if at != NOT_PLACED => at,
                _ if check == Check::Layout && !short => continue,
                _ => {
                    return Err(Error::Unencodable {
                        what: "branch target is not an instruction of this body",
                    });
                }
            };
            let disp = i64::from(target) - i64::from(fixup.next);
            let at = fixup.at as usize;
            if short {
                match i8::try_from(disp) {
                    Ok(disp) => code[at] = disp as u8,
                    Err(_) => {
                        if self.widened.is_empty() {
                            self.widened.resize(arena, false);
                        }
                        self.widened[fixup.from.index()] = true;
                        widened_any = true;
                    }
                }
            } else if let Ok(disp) = i32::try_from(disp) {
                code[at..at + 4].copy_from_slice(&disp.to_le_bytes());
            } else if check == Check::All {
                return Err(out_of_range(fixup.opcode));
            }
        }
        Ok(widened_any)
    }

    /// Converts clauses to offsets using the current layout.
    fn layout_clauses(&mut self, body: &MethodBody) -> Result<()> {
        self.clauses.clear();
        for clause in &body.clauses {
            let (try_offset, try_length) =
                self.range(&body.instrs, clause.try_start, clause.try_last)?;
            let (handler_offset, handler_length) =
                self.range(&body.instrs, clause.handler_start, clause.handler_last)?;
            let extra = match clause.kind {
                ClauseKind::Catch(token) => token,
                ClauseKind::Filter(start) => self.placed(start)?,
                ClauseKind::Finally | ClauseKind::Fault => clause.unused_token,
            };
            self.clauses.push(RawClause {
                flags: clause.kind.flags(),
                try_offset,
                try_length,
                handler_offset,
                handler_length,
                extra,
                at: 0,
            });
        }
        Ok(())
    }

    fn placed(&self, id: InstrId) -> Result<u32> {
        match self.offsets[..self.arena].get(id.index()) {
            Some(&at) if at != NOT_PLACED => Ok(at),
            _ => Err(Error::Unencodable {
                what: "EH clause boundary is not an instruction of this body",
            }),
        }
    }

    /// Offset and length of the inclusive region `[first, last]`.
    fn range(&self, instrs: &InstrList, first: InstrId, last: InstrId) -> Result<(u32, u32)> {
        let start = self.placed(first)?;
        // `last` must be an instruction of this body before its neighbour is asked for.
        self.placed(last)?;
        let end = match instrs.next(last) {
            Some(next) => self.placed(next)?,
            None => self.code_size,
        };
        if end <= start {
            return Err(Error::Unencodable {
                what: "EH region ends before it starts",
            });
        }
        Ok((start, end - start))
    }

    /// Whether the decoded section layout is reused: there is one, it holds as many
    /// clauses as the body has now, and each of its small sections still fits its clauses.
    fn keeps_section_layout(&self, body: &MethodBody) -> bool {
        let sections = &body.format.sections;
        let total: u64 = sections.iter().map(|s| u64::from(s.clauses)).sum();
        if sections.is_empty() || total != self.clauses.len() as u64 {
            return false;
        }
        let mut at = 0usize;
        sections.iter().all(|s| {
            let part = &self.clauses[at..at + s.clauses as usize];
            at += s.clauses as usize;
            s.fat || fit_small_section(part)
        })
    }

    fn write_sections(&self, body: &MethodBody, keep: bool, out: &mut Vec<u8>) -> Result<()> {
        let sections = &body.format.sections;
        if keep {
            let mut at = 0usize;
            for (i, s) in sections.iter().enumerate() {
                let part = &self.clauses[at..at + s.clauses as usize];
                write_section(out, s.fat, s.reserved, part, i + 1 < sections.len())?;
                at += s.clauses as usize;
            }
            Ok(())
        } else {
            let fat = !fit_small_section(&self.clauses);
            write_section(out, fat, [0; 2], &self.clauses, false)
        }
    }
}

/// How much [`Encoder::write_code`] checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Check {
    /// Everything: the code is to be used.
    All,
    /// What decides the layout: switch operands, short-branch operands and the targets of
    /// short branches. Other operands that do not fit are written as zeros or truncated.
    Layout,
}

/// What a walk of [`walk`] wrote.
#[derive(Debug, Clone, Copy)]
struct Walked {
    /// Where the code ends.
    end: usize,
    /// How many fixups the code has (more than the room given when it did not fit).
    fixups: usize,
    /// Whether [`walk_words`] met an instruction it leaves to [`walk_all`]; what it
    /// wrote is then to be thrown away.
    bailed: bool,
}

impl Encoder {
    /// One round of [`Encoder::write_code`]: places and writes the instructions, in list
    /// order, from `code[0]` on, over whatever `code` holds, and records the fixups in
    /// `fixups`. The code and fixups are complete only if `code` is at least 8 bytes
    /// longer than the code and `fixups` holds them all: what does not fit is left out
    /// (the caller then grows the buffers and runs the round again), so that the walk
    /// keeps their bounds in registers and never reallocates.
    ///
    /// [`walk_words`], which has no calls in its loop, handles the instructions that fit
    /// a word, and `ldc.i8` and `ldc.r8`; a body with a `switch` or an odd instruction is
    /// walked again by [`walk_all`].
    fn write_round(&mut self, instrs: &InstrList, check: Check) -> Result<Walked> {
        let n = instrs.arena_len();
        // `offsets` only grows (`Vec::resize` fills element by element, a slice fill is
        // one `memset`): the body's offsets are `offsets[..n]`.
        if self.offsets.len() < n {
            self.offsets.resize(n, NOT_PLACED);
        }
        self.arena = n;
        let offsets = &mut self.offsets[..n];
        if instrs.len() != n {
            // Unlinked ids are `NOT_PLACED`. When every id is linked, every offset is
            // written (the walk places `len` distinct ids below n).
            offsets.fill(NOT_PLACED);
        }
        let (widened, fixups, code) = (&self.widened[..], &mut self.fixups[..], &mut self.code[..]);
        // `walk_words` keeps the position in a `u32`: at most 9 bytes per instruction.
        if instrs.len() < (u32::MAX / 16) as usize {
            let walked = match widened.is_empty() {
                true => walk_words::<false>(instrs, offsets, widened, fixups, code),
                false => walk_words::<true>(instrs, offsets, widened, fixups, code),
            };
            if !walked.bailed {
                return Ok(walked);
            }
        }
        match widened.is_empty() {
            true => walk_all::<false>(instrs, offsets, widened, fixups, check, code),
            false => walk_all::<true>(instrs, offsets, widened, fixups, check, code),
        }
    }
}

/// Fixups written into a slice of room, counted past its end (see
/// [`Encoder::write_round`]).
struct FixupSink<'a> {
    room: &'a mut [Fixup],
    count: usize,
}

impl FixupSink<'_> {
    #[inline(always)]
    fn push(&mut self, fixup: Fixup) {
        if let Some(place) = self.room.get_mut(self.count) {
            *place = fixup;
        }
        self.count += 1;
    }
}

/// The walk of [`Encoder::write_round`] for bodies whose every instruction fits a word
/// (see [`compose`]) or is `ldc.i8` or `ldc.r8`, with the body's offsets in `offsets`
/// (every slot of an unlinked id already `NOT_PLACED`). `WIDENING`: some short branches
/// are marked in `widened`.
///
/// Each instruction is composed in a `u64` (opcode bytes, then the operand) and stored
/// as 8 bytes at its offset, the next instruction overwriting the 2 or more bytes past
/// its end. The loop has no calls and keeps the code position in a `u32` (an instruction
/// it writes is at most 9 bytes, and the caller only comes here with fewer than 2^32 / 16
/// instructions), so that its pointers and bounds stay in registers. Flat
/// storage is walked as a slice, linked storage link by link
/// ([`InstrList::for_each_slot_in_order`]); both write each instruction with
/// [`word_step`]. Neither walk stops early: any other instruction (`switch`,
/// or an odd one) sets `bailed`, and the caller throws the walk away.
#[inline(never)]
fn walk_words<const WIDENING: bool>(
    instrs: &InstrList,
    offsets: &mut [u32],
    widened: &[bool],
    fixups: &mut [Fixup],
    out: &mut [u8],
) -> Walked {
    // The same length as the arena, so that an id of the walk indexes it unchecked.
    let Some(offsets) = offsets.get_mut(..instrs.arena_len()) else {
        return Walked {
            end: 0,
            fixups: 0,
            bailed: true,
        };
    };
    let mut fixups = FixupSink {
        room: fixups,
        count: 0,
    };
    let mut pos = 0u32;
    let mut bailed = false;
    if let Some(slots) = instrs.as_flat_slice() {
        // In arena order: the offsets are stored in turn, unchecked (the same length).
        let offsets = &mut offsets[..slots.len()];
        for i in 0..slots.len() {
            offsets[i] = pos;
            pos = word_step::<WIDENING>(
                pos,
                i as u32,
                slots[i],
                widened,
                &mut fixups,
                out,
                &mut bailed,
            );
        }
    } else {
        instrs.for_each_slot_in_order(
            #[inline(always)]
            |raw, &slot| {
                if let Some(place) = offsets.get_mut(raw as usize) {
                    *place = pos;
                }
                pos = word_step::<WIDENING>(pos, raw, slot, widened, &mut fixups, out, &mut bailed);
            },
        );
    }
    Walked {
        end: pos as usize,
        fixups: fixups.count,
        bailed,
    }
}

/// One step of [`walk_words`]: writes the instruction in `slot` (id `raw`) at `pos` and
/// returns the position after it; sets `bailed` instead for what it leaves to
/// [`walk_all`].
#[inline(always)]
fn word_step<const WIDENING: bool>(
    pos: u32,
    raw: u32,
    slot: Slot,
    widened: &[bool],
    fixups: &mut FixupSink<'_>,
    out: &mut [u8],
    bailed: &mut bool,
) -> u32 {
    let id = InstrId(raw);
    let opcode = if WIDENING && widened.get(id.index()) == Some(&true) {
        slot.opcode.long_form().unwrap_or(slot.opcode)
    } else {
        slot.opcode
    };
    let Some((word, len)) = compose(id, slot, opcode, pos, fixups) else {
        // `ldc.i8` and `ldc.r8`: a one-byte opcode and 8 operand bytes, as two words.
        let enc = opcode.encoding();
        if slot.odd || enc.len != 9 {
            *bailed = true;
            return pos;
        }
        let at = pos as usize;
        if let Some(window) = out.get_mut(at..at + 16) {
            let low = u64::from(enc.bytes) | slot.bits << 8;
            window[..8].copy_from_slice(&low.to_le_bytes());
            window[8..].copy_from_slice(&(slot.bits >> 56).to_le_bytes());
        }
        return pos + 9;
    };
    let at = pos as usize;
    if let Some(window) = out.get_mut(at..at + 8) {
        window.copy_from_slice(&word.to_le_bytes());
    }
    pos + len as u32
}

/// The walk of [`Encoder::write_round`] for any body: [`walk_words`], but writing what
/// does not fit a word with [`write_unusual`], which can fail. An error is kept and
/// returned once the walk is over.
#[inline(never)]
fn walk_all<const WIDENING: bool>(
    instrs: &InstrList,
    offsets: &mut [u32],
    widened: &[bool],
    fixups: &mut [Fixup],
    check: Check,
    out: &mut [u8],
) -> Result<Walked> {
    let mut fixups = FixupSink {
        room: fixups,
        count: 0,
    };
    let mut pos = 0;
    let mut failed = None;
    instrs.for_each_slot_in_order(
        #[inline(always)]
        |raw, &slot| {
            // Offsets wrap only past 4 GiB of code, which `write_code` then rejects.
            let offset = pos as u32;
            if let Some(place) = offsets.get_mut(raw as usize) {
                *place = offset;
            }
            let id = InstrId(raw);
            let opcode = if WIDENING && widened.get(id.index()) == Some(&true) {
                slot.opcode.long_form().unwrap_or(slot.opcode)
            } else {
                slot.opcode
            };
            let Some((word, len)) = compose(id, slot, opcode, offset, &mut fixups) else {
                let instr = instrs.unpack(slot);
                let written = write_unusual(
                    instrs,
                    id,
                    &instr,
                    opcode,
                    offset,
                    out,
                    pos,
                    &mut fixups,
                    check,
                );
                match written {
                    Ok(end) => pos = end,
                    Err(e) => {
                        failed.get_or_insert(e);
                    }
                }
                return;
            };
            if let Some(window) = out.get_mut(pos..).and_then(|rest| rest.first_chunk_mut()) {
                *window = word.to_le_bytes();
            }
            pos += len;
        },
    );
    match failed {
        Some(e) => Err(e),
        None => Ok(Walked {
            end: pos,
            fixups: fixups.count,
            bailed: false,
        }),
    }
}

/// Moves every placed offset in `offsets` by the growth of the widened branches that end
/// at or before it (`shifts`, see [`Finger`]). With few widened branches (the usual case)
/// each offset adds up the growth of those it passes, without a branch; otherwise each is
/// looked up with a [`Finger`].
fn shift_offsets(offsets: &mut [u32], shifts: &[(u32, u32)]) {
    const FEW: usize = 4;
    if shifts.len() <= FEW {
        // Each widened branch's own growth; unused entries end past every placed offset.
        let (mut ends, mut growths) = ([u32::MAX; FEW], [0u32; FEW]);
        let mut before = 0;
        for (j, &(end, grown)) in shifts.iter().enumerate() {
            ends[j] = end;
            growths[j] = grown.wrapping_sub(before);
            before = grown;
        }
        for at in offsets.iter_mut() {
            let x = *at;
            let add = ends.iter().zip(growths).fold(0u32, |sum, (&end, g)| {
                sum.wrapping_add(if end <= x { g } else { 0 })
            });
            *at = if x == NOT_PLACED {
                x
            } else {
                x.wrapping_add(add)
            };
        }
    } else {
        // Ids mostly follow the code order (the original instructions do, in runs), so
        // their offsets mostly grow: a finger walks forward from one to the next.
        let mut finger = Finger::default();
        for at in offsets.iter_mut().filter(|at| **at != NOT_PLACED) {
            *at += finger.shift(shifts, *at);
        }
    }
}

/// The shift of code offsets by the widened branches before them, for offsets looked up
/// mostly in increasing order: `shifts` holds (end of a widened branch, growth of it and
/// every one before) in code order, and an offset `x` moves by the growth of the last
/// entry that ends at or before `x`. The finger remembers that entry and walks forward
/// from it; an offset before it is looked up by binary search.
#[derive(Debug, Default)]
struct Finger {
    /// How many entries end at or before the last offset looked up.
    k: usize,
    /// The growth of entry `k - 1` (0 if `k` is 0).
    add: u32,
}

impl Finger {
    #[inline(always)]
    fn shift(&mut self, shifts: &[(u32, u32)], x: u32) -> u32 {
        if self.k > 0 && shifts[self.k - 1].0 > x {
            self.k = shifts.partition_point(|&(end, _)| end <= x);
            self.add = match self.k {
                0 => 0,
                k => shifts[k - 1].1,
            };
        }
        while let Some(&(end, grown)) = shifts.get(self.k) {
            if end > x {
                break;
            }
            self.k += 1;
            self.add = grown;
        }
        self.add
    }
}

/// How many bytes widening the short branch `opcode` adds.
fn growth(opcode: OpCode) -> u32 {
    let long = opcode.long_form().unwrap_or(opcode);
    u32::from(long.encoding().len).saturating_sub(u32::from(opcode.encoding().len))
}

/// Grows `out` (with zeros) to at least `len` bytes, at least doubling it.
#[cold]
fn grow(out: &mut Vec<u8>, len: usize) {
    let len = len.max(out.len().saturating_mul(2));
    out.resize(len, 0);
}

/// Writes `bytes` at `out[pos..]` if they fit (see [`Encoder::write_round`]); returns the
/// position after them.
fn put(out: &mut [u8], pos: usize, bytes: &[u8]) -> usize {
    let end = pos.saturating_add(bytes.len());
    if let Some(place) = out.get_mut(pos..end) {
        place.copy_from_slice(bytes);
    }
    end
}

/// The encoding of the instruction in `slot`, written as `opcode` at code offset
/// `offset`, as a little-endian word (opcode bytes, then the slot's operand bits) and its
/// length in bytes; `None` for what does not fit a word (`ldc.i8`, `ldc.r8`, `switch`)
/// and for odd slots (see [`write_unusual`]). Branch displacements are zeros, recorded
/// in `fixups`. Only branches are told apart: the operand bits of every other kind are
/// already its encoded bytes.
#[inline(always)]
fn compose(
    id: InstrId,
    slot: Slot,
    opcode: OpCode,
    offset: u32,
    fixups: &mut FixupSink<'_>,
) -> Option<(u64, usize)> {
    let enc = opcode.encoding();
    // One test for the common case: a word whose operand bytes are the slot's bits.
    let operand = if (enc.word as u8 | u8::from(slot.odd)) == 0 {
        slot.bits
    } else if !slot.odd && enc.word == Word::Branch {
        let at = offset.wrapping_add(u32::from(enc.opcode_len));
        fixups.push(Fixup {
            at,
            next: offset.wrapping_add(u32::from(enc.len)),
            target: InstrId(slot.bits as u32),
            from: id,
            opcode,
        });
        0
    } else {
        return None;
    };
    let word = u64::from(enc.bytes) | operand << enc.shift;
    Some((word, usize::from(enc.len)))
}

/// Writes what [`compose`] does not: `ldc.i8`, `ldc.r8` and `switch` (recording a fixup
/// per switch target), at `out[pos..]` if it fits (see [`Encoder::write_round`]); returns the
/// position after it. An operand that does not match the opcode is an error, or zeros of the
/// operand's size when only laying out.
#[allow(clippy::too_many_arguments)]
#[cold]
#[inline(never)]
fn write_unusual(
    instrs: &InstrList,
    id: InstrId,
    instr: &Instruction,
    opcode: OpCode,
    offset: u32,
    out: &mut [u8],
    pos: usize,
    fixups: &mut FixupSink<'_>,
    check: Check,
) -> Result<usize> {
    let enc = opcode.encoding();
    let pos = put(
        out,
        pos,
        &enc.bytes.to_le_bytes()[..usize::from(enc.opcode_len)],
    );
    match (enc.operand, instr.operand) {
        (OperandKind::I8, Operand::Long(v)) => Ok(put(out, pos, &v.to_le_bytes())),
        (OperandKind::R, Operand::Float64(v)) => Ok(put(out, pos, &v.to_le_bytes())),
        (OperandKind::Switch, Operand::Switch(targets)) => {
            match instrs.try_switch_targets(targets) {
                Some(targets) => write_switch(targets, id, offset, out, pos, fixups),
                // A handle from another list: its length is all the layout needs.
                None if check == Check::Layout => {
                    let table = 4 + 4 * targets.len();
                    Ok(put(out, pos, &vec![0; table]))
                }
                None => Err(Error::BadOperand {
                    opcode: opcode.name(),
                    what: "switch targets are not in this body's target pool",
                }),
            }
        }
        // Small operands that are out of range: an error, or truncated when only laying
        // out (the layout does not depend on the value).
        (OperandKind::ShortI | OperandKind::ShortU, Operand::Int(v)) => match check {
            Check::All => Err(out_of_range(opcode)),
            Check::Layout => Ok(put(out, pos, &[v as u8])),
        },
        (OperandKind::ShortVar, Operand::Var(v)) => match check {
            Check::All => Err(out_of_range(opcode)),
            Check::Layout => Ok(put(out, pos, &[v as u8])),
        },
        (kind, _) => match (check, kind.size()) {
            // Only laying out: the operand's size is all that matters, and the switch and
            // short-branch cases that matter to the layout are checked above.
            (Check::Layout, Some(size)) if kind != OperandKind::ShortBranch => {
                Ok(put(out, pos, &[0; 8][..size as usize]))
            }
            _ => Err(operand_mismatch(instr)),
        },
    }
}

/// Writes the count and table of the `switch` at code offset `offset` (its opcode
/// already written) at `out[pos..]` if it fits, recording a fixup per target; returns
/// the position after it.
fn write_switch(
    targets: &[InstrId],
    id: InstrId,
    offset: u32,
    out: &mut [u8],
    pos: usize,
    fixups: &mut FixupSink<'_>,
) -> Result<usize> {
    let Some(count) = u32::try_from(targets.len())
        .ok()
        .filter(|n| n.checked_mul(4).and_then(|t| t.checked_add(5)).is_some())
    else {
        return Err(Error::Unencodable {
            what: "switch table too large",
        });
    };
    let mut pos = put(out, pos, &count.to_le_bytes());
    let table = offset.wrapping_add(5);
    let next = table.wrapping_add(4 * count);
    for (i, &target) in targets.iter().enumerate() {
        fixups.push(Fixup {
            at: table.wrapping_add(4 * i as u32),
            next,
            target,
            from: id,
            opcode: OpCode::Switch,
        });
        pos = put(out, pos, &[0; 4]);
    }
    Ok(pos)
}

fn operand_mismatch(instr: &Instruction) -> Error {
    Error::BadOperand {
        opcode: instr.opcode.name(),
        what: "operand does not match the opcode's operand kind",
    }
}

fn out_of_range(opcode: OpCode) -> Error {
    Error::BadOperand {
        opcode: opcode.name(),
        what: "operand value out of range for the opcode's encoding",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::Incoming;

    fn next_rand(seed: &mut u64) -> u64 {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        *seed >> 33
    }

    /// A body of nops, short and long branches to random targets, `ldc.i8`s and
    /// switches, edited (so walked link by link) when `edited`.
    fn random_body(seed: &mut u64, edited: bool) -> MethodBody {
        let n = 20 + next_rand(seed) as usize % 400;
        let mut body = MethodBody::new();
        let ids: Vec<_> = (0..n)
            .map(|_| body.append(Instruction::simple(OpCode::Nop)))
            .collect();
        for &id in &ids[..n - 1] {
            let target = ids[next_rand(seed) as usize % n];
            let instr = match next_rand(seed) % 12 {
                0..=2 => Instruction::new(OpCode::BrS, Operand::Target(target)),
                3 => Instruction::new(OpCode::BeqS, Operand::Target(target)),
                4 => Instruction::new(OpCode::LeaveS, Operand::Target(target)),
                5 => Instruction::new(OpCode::Br, Operand::Target(target)),
                6 => Instruction::new(OpCode::LdcI8, Operand::Long(-2)),
                7 => {
                    let other = ids[next_rand(seed) as usize % n];
                    let targets = body.instrs.new_switch_targets(&[target, other]);
                    Instruction::new(OpCode::Switch, Operand::Switch(targets))
                }
                _ => continue,
            };
            body.replace(id, instr).unwrap();
        }
        body.replace(ids[n - 1], Instruction::simple(OpCode::Ret))
            .unwrap();
        if edited {
            for _ in 0..1 + next_rand(seed) % 8 {
                let at = ids[next_rand(seed) as usize % n];
                let filler = Instruction::new(OpCode::LdcI8, Operand::Long(1));
                body.insert_before(at, filler, Incoming::Keep).unwrap();
            }
        }
        body
    }

    /// A body of instructions that fit a word (one- and two-byte opcodes, operands of 0
    /// to 4 bytes, short and long branches to random targets), `ldc.i8` and `ldc.r8`,
    /// edited (so walked link by link) when `edited`.
    fn random_word_body(seed: &mut u64, edited: bool) -> MethodBody {
        let n = 1 + next_rand(seed) as usize % 300;
        let mut body = MethodBody::new();
        let ids: Vec<_> = (0..n)
            .map(|_| body.append(Instruction::simple(OpCode::Nop)))
            .collect();
        for &id in &ids {
            let target = Operand::Target(ids[next_rand(seed) as usize % n]);
            let value = next_rand(seed);
            let instr = match next_rand(seed) % 14 {
                0 => Instruction::new(OpCode::BrS, target),
                1 => Instruction::new(OpCode::BeqS, target),
                2 => Instruction::new(OpCode::Br, target),
                3 => Instruction::new(OpCode::LeaveS, target),
                4 => Instruction::new(OpCode::LdcI4, Operand::Int(value as i32)),
                5 => Instruction::new(OpCode::LdcI4S, Operand::Int(value as i8 as i32)),
                6 => Instruction::new(OpCode::Ldarg, Operand::Var(value as u16)),
                7 => Instruction::new(OpCode::LdlocS, Operand::Var(value as u8 as u16)),
                8 => Instruction::new(OpCode::Call, Operand::Token(value as u32)),
                9 => Instruction::new(OpCode::LdcI8, Operand::Long(value as i64 ^ -1)),
                10 => Instruction::new(OpCode::LdcR8, Operand::Float64(value << 40 | value)),
                11 => Instruction::new(OpCode::LdcR4, Operand::Float32(value as u32)),
                12 => Instruction::simple(OpCode::Ret),
                _ => continue,
            };
            body.replace(id, instr).unwrap();
        }
        if edited {
            for _ in 0..1 + next_rand(seed) % 8 {
                let at = ids[next_rand(seed) as usize % n];
                let filler = Instruction::new(OpCode::Ldstr, Operand::Token(0x7000_0001));
                body.insert_before(at, filler, Incoming::Keep).unwrap();
            }
            // Refused when it would leave a branch without a target: then nothing changes.
            let _ = body.remove(ids[next_rand(seed) as usize % n]);
        }
        body
    }

    /// What one walk wrote: its result, the offsets, the code and the fixups.
    type WalkOutput = (Walked, Vec<u32>, Vec<u8>, Vec<Fixup>);

    /// Runs `walk_words` (or `walk_all` when `general`) over `body` with roomy buffers.
    fn run_walk(body: &MethodBody, widened: &[bool], general: bool) -> WalkOutput {
        let instrs = &body.instrs;
        let n = instrs.arena_len();
        let mut offsets = vec![NOT_PLACED; n];
        let mut fixups = vec![Fixup::NONE; n + 1];
        let mut code = vec![0xAA; 9 * n + 16];
        let walked = match (general, widened.is_empty()) {
            (false, true) => {
                walk_words::<false>(instrs, &mut offsets, widened, &mut fixups, &mut code)
            }
            (false, false) => {
                walk_words::<true>(instrs, &mut offsets, widened, &mut fixups, &mut code)
            }
            (true, true) => walk_all::<false>(
                instrs,
                &mut offsets,
                widened,
                &mut fixups,
                Check::All,
                &mut code,
            )
            .unwrap(),
            (true, false) => walk_all::<true>(
                instrs,
                &mut offsets,
                widened,
                &mut fixups,
                Check::All,
                &mut code,
            )
            .unwrap(),
        };
        code.truncate(walked.end);
        fixups.truncate(walked.fixups);
        (walked, offsets, code, fixups)
    }

    /// The walk without calls writes exactly what the general walk writes (code,
    /// offsets, fixups), flat and linked, with and without branches marked for their long
    /// form, and bails out only on a `switch` or an odd instruction.
    #[test]
    fn the_word_walk_writes_what_the_general_walk_writes() {
        for case in 0..1500u64 {
            let mut seed = case;
            let mut body = random_word_body(&mut seed, case % 2 == 1);
            let n = body.instrs.arena_len();
            let widened: Vec<bool> = match case % 3 {
                0 => Vec::new(),
                _ => (0..n).map(|_| next_rand(&mut seed) % 3 == 0).collect(),
            };
            let bail = case % 5 == 4;
            if bail {
                let at = body.instrs.last().unwrap();
                let instr = match case % 2 {
                    0 => {
                        let targets = body.instrs.new_switch_targets(&[at]);
                        Instruction::new(OpCode::Switch, Operand::Switch(targets))
                    }
                    _ => Instruction::new(OpCode::LdcI4S, Operand::Int(300)),
                };
                body.instrs.set(at, instr);
            }
            let words = run_walk(&body, &widened, false);
            assert_eq!(words.0.bailed, bail, "case {case}");
            if bail {
                continue;
            }
            let general = run_walk(&body, &widened, true);
            assert_eq!(words.0.end, general.0.end, "case {case}");
            assert_eq!(words.0.fixups, general.0.fixups, "case {case}");
            assert_eq!(words.1, general.1, "case {case}");
            assert_eq!(words.2, general.2, "case {case}");
            assert_eq!(words.3, general.3, "case {case}");
        }
    }

    /// Both ways of shifting offsets, and the finger, agree with a binary search on
    /// every offset, for few and many widened branches and offsets in any order.
    #[test]
    fn offsets_shift_by_the_growth_of_the_widened_branches_before_them() {
        let mut seed = 7;
        for case in 0..2000u64 {
            let count = next_rand(&mut seed) as usize % 10;
            let mut ends: Vec<u32> = (0..count)
                .map(|_| next_rand(&mut seed) as u32 % 300)
                .collect();
            ends.sort_unstable();
            ends.dedup();
            let mut grown = 0;
            let shifts: Vec<(u32, u32)> = ends
                .iter()
                .map(|&end| {
                    grown += 3;
                    (end, grown)
                })
                .collect();
            let expected = |x: u32| match shifts.partition_point(|&(end, _)| end <= x) {
                0 => 0,
                k => shifts[k - 1].1,
            };
            let mut offsets: Vec<u32> = (0..50)
                .map(|_| match next_rand(&mut seed) % 8 {
                    0 => NOT_PLACED,
                    _ => next_rand(&mut seed) as u32 % 320,
                })
                .collect();
            if case % 2 == 0 {
                offsets.sort_unstable();
            }
            let mut finger = Finger::default();
            for &x in &offsets {
                if x != NOT_PLACED {
                    assert_eq!(finger.shift(&shifts, x), expected(x), "case {case}");
                }
            }
            let mut shifted = offsets.clone();
            shift_offsets(&mut shifted, &shifts);
            for (&x, &y) in offsets.iter().zip(&shifted) {
                let want = if x == NOT_PLACED { x } else { x + expected(x) };
                assert_eq!(y, want, "case {case}");
            }
        }
    }

    #[test]
    fn widening_in_place_writes_what_the_long_forms_write() {
        let mut widened_bodies = 0;
        for case in 0..400u64 {
            let mut seed = case;
            let body = random_body(&mut seed, case % 2 == 1);
            let bytes = body.encode().unwrap();
            // The short branches written long, from the layout.
            let offsets = Encoder::new().code_offsets(&body).unwrap().to_vec();
            let code_size = *offsets.last().unwrap();
            let mut long = body.clone();
            let mut any = false;
            for (id, instr) in body.instrs.iter() {
                let end = body
                    .instrs
                    .next(id)
                    .map_or(code_size, |next| offsets[next.index()]);
                let len = end - offsets[id.index()];
                if instr.opcode.operand() == OperandKind::ShortBranch && len != 2 {
                    assert_eq!(len, 5);
                    let mut changed = long.instrs.get(id);
                    changed.opcode = instr.opcode.long_form().unwrap();
                    long.instrs.set(id, changed);
                    any = true;
                }
            }
            widened_bodies += usize::from(any);
            assert_eq!(long.encode().unwrap(), bytes, "case {case}");
            // The branches left short fit (widening is the least fixed point).
            let decoded = MethodBody::decode(&bytes).unwrap();
            assert_eq!(decoded.encode().unwrap(), bytes, "case {case}");
        }
        assert!(widened_bodies > 100, "{widened_bodies}");
    }
}

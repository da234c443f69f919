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
#![forbid(unsafe_code)]

use super::header::{
    FAT_HEADER_SIZE, FatHeader, TINY_MAX_CODE_SIZE, TINY_MAX_STACK, fat_header, tiny_header,
};
use super::sections::{RawClause, fit_small_section, write_section};
use super::{ClauseKind, HeaderFormat, MethodBody};
use crate::graph::{InstrId, InstrList, Instruction, Operand};
use crate::opcode::{OpCode, OperandKind};
use crate::{Error, Result};

const NOT_PLACED: u32 = u32::MAX;

/// Reusable scratch space for encoding many bodies without reallocating.
#[derive(Debug, Default)]
pub struct Encoder {
    /// Code offset of each instruction, indexed by id (`NOT_PLACED` if unlinked).
    offsets: Vec<u32>,
    /// Whether a short-form branch must be written in its long form, indexed by id;
    /// empty while no branch of the body needs widening (the usual case).
    widened: Vec<bool>,
    /// Branch displacements to write once every instruction is placed.
    fixups: Vec<Fixup>,
    clauses: Vec<RawClause>,
    code_size: u32,
    /// Code written by [`Encoder::code_offsets`], which only wants the offsets.
    scratch: Vec<u8>,
}

/// A branch displacement left as zeros while the code is written, filled in afterwards.
#[derive(Debug, Clone, Copy)]
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

impl Encoder {
    /// An encoder with empty scratch buffers.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends the encoding of `body` to `out`. On error `out` is left as it was.
    ///
    /// `out` is assumed to start at a 4-byte-aligned address (as method bodies with fat
    /// headers must); section padding is computed relative to where this body starts.
    pub fn encode(&mut self, body: &MethodBody, out: &mut Vec<u8>) -> Result<()> {
        let base = out.len();
        let result = self.encode_at(body, out, base);
        if result.is_err() {
            out.truncate(base);
        }
        result
    }

    fn encode_at(&mut self, body: &MethodBody, out: &mut Vec<u8>, base: usize) -> Result<()> {
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
        // The header goes first, but its size depends on the code size: leave room for the
        // likely one and fill it in once the code is written.
        let header_len = if tiny_possible { 1 } else { FAT_HEADER_SIZE };
        out.reserve(header_len + body.format.code_size as usize + 4);
        out.resize(base + header_len, 0);
        self.write_code(&body.instrs, out, base + header_len, Check::All)?;
        let code_size = self.code_size;
        if tiny_possible && code_size <= TINY_MAX_CODE_SIZE {
            out[base] = tiny_header(code_size);
        } else {
            if tiny_possible {
                // Grown past what a tiny header can hold.
                out.splice(base + 1..base + 1, [0; FAT_HEADER_SIZE - 1]);
            }
            let extra_flags = match body.format.header {
                HeaderFormat::Fat { extra_flags } => extra_flags,
                _ => 0,
            };
            out[base..base + FAT_HEADER_SIZE].copy_from_slice(&fat_header(&FatHeader {
                extra_flags,
                more_sects: has_sections,
                init_locals: body.init_locals,
                max_stack: body.max_stack,
                code_size,
                local_var_sig: body.local_var_sig,
            }));
        }
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
        Ok(())
    }

    /// Lays out `body` as [`Encoder::encode`] would and returns the code offset of every
    /// instruction, indexed by [`InstrId::index`] (`u32::MAX` for ids not in the body),
    /// followed by one extra entry: the code size.
    ///
    /// Checks only what decides the layout (switch and short-branch operands, and the
    /// targets of short branches), so it also lays out bodies that `encode` refuses for
    /// an operand value, e.g. to disassemble them.
    pub fn code_offsets(&mut self, body: &MethodBody) -> Result<&[u32]> {
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        let result = self.write_code(&body.instrs, &mut scratch, 0, Check::Layout);
        self.scratch = scratch;
        result?;
        self.offsets.push(self.code_size);
        Ok(&self.offsets)
    }

    /// Writes the code at `out[code_start..]` (truncating `out` there first), placing
    /// every instruction and widening short branches until every displacement fits.
    ///
    /// Each round writes every instruction, branch displacements as zeros, then fills in
    /// the displacements. A short branch whose displacement does not fit is marked for
    /// its long form and the code written again; the rounds run to a fixed point (growing
    /// one branch can push another out of range). Unedited code needs one round.
    fn write_code(
        &mut self,
        instrs: &InstrList,
        out: &mut Vec<u8>,
        code_start: usize,
        check: Check,
    ) -> Result<()> {
        self.widened.clear();
        loop {
            out.truncate(code_start);
            self.offsets.clear();
            self.fixups.clear();
            // Unedited (and appended-to) lists are walked as a slice, not link by link,
            // and place ids `0..n` in turn: their offsets are appended.
            match instrs.iter_in_arena_order() {
                Some(order) => {
                    self.offsets.reserve(instrs.arena_len());
                    self.write_all::<true, _>(instrs, order, out, code_start, check)?;
                }
                None => {
                    self.offsets.resize(instrs.arena_len(), NOT_PLACED);
                    self.write_all::<false, _>(instrs, instrs.iter(), out, code_start, check)?;
                }
            }
            let Ok(code_size) = u32::try_from(out.len() - code_start) else {
                return Err(Error::Unencodable {
                    what: "code larger than 4 GiB",
                });
            };
            self.code_size = code_size;
            if !self.fill_displacements(&mut out[code_start..], instrs.arena_len(), check)? {
                return Ok(());
            }
        }
    }

    /// Places and writes the instructions of `order` (the list order of `instrs`), one
    /// round of [`Encoder::write_code`]. `IN_ARENA_ORDER`: `order` yields ids `0..n` in
    /// turn and `offsets` is empty, so offsets are appended rather than stored by id.
    #[inline(always)]
    fn write_all<'a, const IN_ARENA_ORDER: bool, I>(
        &mut self,
        instrs: &InstrList,
        order: I,
        out: &mut Vec<u8>,
        code_start: usize,
        check: Check,
    ) -> Result<()>
    where
        I: Iterator<Item = (InstrId, &'a Instruction)>,
    {
        let widening = !self.widened.is_empty();
        for (id, instr) in order {
            let offset = (out.len() - code_start) as u32;
            if IN_ARENA_ORDER {
                self.offsets.push(offset);
            } else {
                self.offsets[id.index()] = offset;
            }
            let opcode = if widening && self.widened[id.index()] {
                instr.opcode.long_form().unwrap_or(instr.opcode)
            } else {
                instr.opcode
            };
            write_instruction(
                instrs,
                id,
                instr,
                opcode,
                offset,
                out,
                &mut self.fixups,
                check,
            )?;
        }
        Ok(())
    }

    /// Writes the displacement of every fixup into `code`. Returns whether a short branch
    /// was out of range, in which case it is marked in `widened` and `code` is incomplete.
    fn fill_displacements(&mut self, code: &mut [u8], arena: usize, check: Check) -> Result<bool> {
        let mut widened_any = false;
        for fixup in &self.fixups {
            let short = fixup.opcode.operand() == OperandKind::ShortBranch;
            let target = match self.offsets.get(fixup.target.index()) {
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
        match self.offsets.get(id.index()) {
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

/// Appends `instr`, written as `opcode` at code offset `offset`, to `out`; branch
/// displacements are written as zeros and recorded in `fixups`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn write_instruction(
    instrs: &InstrList,
    id: InstrId,
    instr: &Instruction,
    opcode: OpCode,
    offset: u32,
    out: &mut Vec<u8>,
    fixups: &mut Vec<Fixup>,
    check: Check,
) -> Result<()> {
    // Small operands that are out of range: an error, or truncated when only laying out.
    let narrow = |fits: bool, byte: u8| match (fits, check) {
        (false, Check::All) => Err(out_of_range(opcode)),
        _ => Ok(byte),
    };
    let code = opcode.code();
    if code >= 0xFE00 {
        out.push(0xFE);
    }
    out.push(code as u8);
    match (opcode.operand(), instr.operand) {
        (OperandKind::None, Operand::None) => {}
        (OperandKind::ShortI, Operand::Int(v)) => {
            out.push(narrow(i8::try_from(v).is_ok(), v as u8)?);
        }
        (OperandKind::ShortU, Operand::Int(v)) => {
            out.push(narrow(u8::try_from(v).is_ok(), v as u8)?);
        }
        (OperandKind::I, Operand::Int(v)) => out.extend_from_slice(&v.to_le_bytes()),
        (OperandKind::I8, Operand::Long(v)) => out.extend_from_slice(&v.to_le_bytes()),
        (OperandKind::ShortR, Operand::Float32(v)) => out.extend_from_slice(&v.to_le_bytes()),
        (OperandKind::R, Operand::Float64(v)) => out.extend_from_slice(&v.to_le_bytes()),
        (OperandKind::ShortVar, Operand::Var(v)) => {
            out.push(narrow(u8::try_from(v).is_ok(), v as u8)?);
        }
        (OperandKind::Var, Operand::Var(v)) => out.extend_from_slice(&v.to_le_bytes()),
        // Offsets wrap only past 4 GiB of code, which `write_code` then rejects.
        (OperandKind::ShortBranch, Operand::Target(target)) => {
            let at = offset.wrapping_add(opcode.opcode_len());
            fixups.push(Fixup {
                at,
                next: at.wrapping_add(1),
                target,
                from: id,
                opcode,
            });
            out.push(0);
        }
        (OperandKind::Branch, Operand::Target(target)) => {
            let at = offset.wrapping_add(opcode.opcode_len());
            fixups.push(Fixup {
                at,
                next: at.wrapping_add(4),
                target,
                from: id,
                opcode,
            });
            out.extend_from_slice(&[0; 4]);
        }
        (OperandKind::Switch, Operand::Switch(targets)) => {
            match instrs.try_switch_targets(targets) {
                Some(targets) => write_switch(targets, id, offset, out, fixups)?,
                // A handle from another list: its length is all the layout needs.
                None if check == Check::Layout => {
                    let table = 4 + 4 * targets.len();
                    out.resize(out.len() + table, 0);
                }
                None => {
                    return Err(Error::BadOperand {
                        opcode: opcode.name(),
                        what: "switch targets are not in this body's target pool",
                    });
                }
            }
        }
        (kind, Operand::Token(t)) if kind.is_token() => out.extend_from_slice(&t.to_le_bytes()),
        (kind, _) => match (check, kind.size()) {
            // Only laying out: the operand's size is all that matters, and the switch and
            // short-branch cases that matter to the layout are checked above.
            (Check::Layout, Some(size)) if kind != OperandKind::ShortBranch => {
                out.resize(out.len() + size as usize, 0);
            }
            _ => return Err(operand_mismatch(instr)),
        },
    }
    Ok(())
}

/// Appends the count and table of the `switch` at code offset `offset` (its opcode
/// already written), recording a fixup per target.
#[cold]
fn write_switch(
    targets: &[InstrId],
    id: InstrId,
    offset: u32,
    out: &mut Vec<u8>,
    fixups: &mut Vec<Fixup>,
) -> Result<()> {
    let Some(count) = u32::try_from(targets.len())
        .ok()
        .filter(|n| n.checked_mul(4).and_then(|t| t.checked_add(5)).is_some())
    else {
        return Err(Error::Unencodable {
            what: "switch table too large",
        });
    };
    out.extend_from_slice(&count.to_le_bytes());
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
        out.extend_from_slice(&[0; 4]);
    }
    Ok(())
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

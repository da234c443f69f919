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

use super::header::{FatHeader, TINY_MAX_CODE_SIZE, TINY_MAX_STACK, write_fat, write_tiny};
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
    /// Whether a short-form branch must be written in its long form, indexed by id.
    widened: Vec<bool>,
    clauses: Vec<RawClause>,
    code_size: u32,
}

impl Encoder {
    /// An encoder with empty scratch buffers.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends the encoding of `body` to `out`.
    ///
    /// `out` is assumed to start at a 4-byte-aligned address (as method bodies with fat
    /// headers must); section padding is computed relative to where this body starts.
    pub fn encode(&mut self, body: &MethodBody, out: &mut Vec<u8>) -> Result<()> {
        self.layout(&body.instrs)?;
        self.layout_clauses(body)?;
        let base = out.len();
        let code_size = self.code_size;
        let keep_sections = self.keeps_section_layout(body);
        // Sections are written for clauses, and also when the decoded layout is kept even
        // though none of its sections holds a clause.
        let has_sections = keep_sections || !body.clauses.is_empty();
        let tiny_legal = code_size <= TINY_MAX_CODE_SIZE
            && body.max_stack <= TINY_MAX_STACK
            && body.local_var_sig == 0
            && !body.init_locals
            && !has_sections;
        out.reserve(code_size as usize + 12 + 4 + self.clauses.len() * 24);
        match body.format.header {
            HeaderFormat::Smallest | HeaderFormat::Tiny if tiny_legal => {
                write_tiny(out, code_size);
            }
            format => {
                let extra_flags = match format {
                    HeaderFormat::Fat { extra_flags } => extra_flags,
                    _ => 0,
                };
                write_fat(
                    out,
                    &FatHeader {
                        extra_flags,
                        more_sects: has_sections,
                        init_locals: body.init_locals,
                        max_stack: body.max_stack,
                        code_size,
                        local_var_sig: body.local_var_sig,
                    },
                );
            }
        }
        self.write_code(&body.instrs, out)?;
        if has_sections {
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
    pub fn code_offsets(&mut self, body: &MethodBody) -> Result<&[u32]> {
        self.layout(&body.instrs)?;
        self.offsets.push(self.code_size);
        Ok(&self.offsets)
    }

    /// Assigns code offsets, widening short branches until every displacement fits.
    fn layout(&mut self, instrs: &InstrList) -> Result<()> {
        let arena = instrs.arena_len();
        self.offsets.clear();
        self.offsets.resize(arena, NOT_PLACED);
        self.widened.clear();
        self.widened.resize(arena, false);
        loop {
            let mut offset = 0u32;
            for (id, instr) in instrs.iter() {
                self.offsets[id.index()] = offset;
                let size = self.size_of(instrs, id, instr)?;
                let Some(next) = offset.checked_add(size) else {
                    return Err(Error::Unencodable {
                        what: "code larger than 4 GiB",
                    });
                };
                offset = next;
            }
            self.code_size = offset;
            // Widen every short branch that is out of range; lay out again if any was.
            let mut widened_any = false;
            for (id, instr) in instrs.iter() {
                if instr.opcode.operand() != OperandKind::ShortBranch || self.widened[id.index()] {
                    continue;
                }
                let Operand::Target(target) = instr.operand else {
                    return Err(operand_mismatch(instr));
                };
                let next = self.offsets[id.index()] + instr.opcode.opcode_len() + 1;
                if i8::try_from(self.displacement(target, next)?).is_err() {
                    self.widened[id.index()] = true;
                    widened_any = true;
                }
            }
            if !widened_any {
                return Ok(());
            }
        }
    }

    #[inline]
    fn size_of(&self, instrs: &InstrList, id: InstrId, instr: &Instruction) -> Result<u32> {
        let opcode = self.effective_opcode(id, instr.opcode);
        match opcode.fixed_len() {
            Some(len) => Ok(len),
            None => match instr.operand {
                Operand::Switch(targets) => {
                    let Some(n) = u32::try_from(targets.len())
                        .ok()
                        .and_then(|n| n.checked_mul(4)?.checked_add(5))
                    else {
                        return Err(Error::Unencodable {
                            what: "switch table too large",
                        });
                    };
                    debug_assert_eq!(instrs.switch_targets(targets).len(), targets.len());
                    Ok(n)
                }
                _ => Err(operand_mismatch(instr)),
            },
        }
    }

    #[inline]
    fn effective_opcode(&self, id: InstrId, opcode: OpCode) -> OpCode {
        if self.widened[id.index()] {
            opcode.long_form().unwrap_or(opcode)
        } else {
            opcode
        }
    }

    /// Displacement from the end of a branch (code offset `next`) to `target`.
    fn displacement(&self, target: InstrId, next: u32) -> Result<i64> {
        match self.offsets.get(target.index()) {
            Some(&at) if at != NOT_PLACED => Ok(i64::from(at) - i64::from(next)),
            _ => Err(Error::Unencodable {
                what: "branch target is not an instruction of this body",
            }),
        }
    }

    fn write_code(&self, instrs: &InstrList, out: &mut Vec<u8>) -> Result<()> {
        for (id, instr) in instrs.iter() {
            let opcode = self.effective_opcode(id, instr.opcode);
            let code = opcode.code();
            if code >= 0xFE00 {
                out.push(0xFE);
            }
            out.push(code as u8);
            let next = self.offsets[id.index()] + opcode.fixed_len().unwrap_or(0);
            match (opcode.operand(), instr.operand) {
                (OperandKind::None, Operand::None) => {}
                (OperandKind::ShortI, Operand::Int(v)) => {
                    out.push(i8::try_from(v).map_err(|_| out_of_range(opcode))? as u8);
                }
                (OperandKind::ShortU, Operand::Int(v)) => {
                    out.push(u8::try_from(v).map_err(|_| out_of_range(opcode))?);
                }
                (OperandKind::I, Operand::Int(v)) => out.extend_from_slice(&v.to_le_bytes()),
                (OperandKind::I8, Operand::Long(v)) => out.extend_from_slice(&v.to_le_bytes()),
                (OperandKind::ShortR, Operand::Float32(v)) => {
                    out.extend_from_slice(&v.to_le_bytes());
                }
                (OperandKind::R, Operand::Float64(v)) => out.extend_from_slice(&v.to_le_bytes()),
                (OperandKind::ShortVar, Operand::Var(v)) => {
                    out.push(u8::try_from(v).map_err(|_| out_of_range(opcode))?);
                }
                (OperandKind::Var, Operand::Var(v)) => out.extend_from_slice(&v.to_le_bytes()),
                (OperandKind::ShortBranch, Operand::Target(t)) => {
                    // Layout guarantees the fit.
                    out.push(self.displacement(t, next)? as i8 as u8);
                }
                (OperandKind::Branch, Operand::Target(t)) => {
                    let disp = i32::try_from(self.displacement(t, next)?)
                        .map_err(|_| out_of_range(opcode))?;
                    out.extend_from_slice(&disp.to_le_bytes());
                }
                (OperandKind::Switch, Operand::Switch(targets)) => {
                    let targets = instrs.switch_targets(targets);
                    let next = self.offsets[id.index()] + 5 + 4 * targets.len() as u32;
                    out.extend_from_slice(&(targets.len() as u32).to_le_bytes());
                    for &t in targets {
                        let disp = i32::try_from(self.displacement(t, next)?)
                            .map_err(|_| out_of_range(opcode))?;
                        out.extend_from_slice(&disp.to_le_bytes());
                    }
                }
                (kind, Operand::Token(t)) if kind.is_token() => {
                    out.extend_from_slice(&t.to_le_bytes());
                }
                _ => return Err(operand_mismatch(instr)),
            }
        }
        Ok(())
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
        let end = match instrs.next(last) {
            Some(next) => self.placed(next)?,
            None => {
                self.placed(last)?;
                self.code_size
            }
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

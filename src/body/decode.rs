//! Bytes -> [`MethodBody`].
//!
//! Decoding validates everything the encoder later relies on: every opcode is defined,
//! every operand and switch table lies inside the code, every branch target and EH
//! boundary is the start of an instruction (EH ends may also be the end of the code).
//! Errors carry the offset: code offsets for instructions, body offsets for header and
//! sections.
#![forbid(unsafe_code)]

use super::header::read_header;
use super::sections::{RawClause, read_sections};
use super::{ClauseKind, ExceptionClause, MethodBody};
use crate::graph::{InstrId, Instruction, Operand, SwitchTargets};
use crate::opcode::{OpCode, OperandKind};
use crate::{Error, Result};

const NOT_AN_INSTRUCTION: u32 = u32::MAX;

/// Reusable scratch space for decoding many bodies without reallocating.
#[derive(Debug, Default)]
pub struct Decoder {
    /// Code offset -> id of the instruction starting there (or `NOT_AN_INSTRUCTION`).
    offset_to_id: Vec<u32>,
    /// Ids of branch instructions whose operand still holds a target *offset*.
    pending_branches: Vec<u32>,
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
        let mut format = std::mem::take(&mut body.format);
        format.header = header.format;
        format.sections.clear();
        format.padding.clear();
        format.original_offsets.clear();
        format.code_size = header.code_size;

        self.decode_code(code, body, &mut format.original_offsets)?;
        let mut end = code_start + code_size;
        if header.more_sects {
            // Reading the sections checks that the padding is there.
            let padding = bytes.get(end..end.next_multiple_of(4)).unwrap_or_default();
            format.padding.extend_from_slice(padding);
            let (sections_end, sections) = read_sections(bytes, end, |raw| {
                let clause = self.resolve_clause(&raw, code_size, body.instrs.len())?;
                body.clauses.push(clause);
                Ok(())
            })?;
            end = sections_end;
            format.sections = sections;
        }
        body.format = format;
        Ok(end)
    }

    fn decode_code(
        &mut self,
        code: &[u8],
        body: &mut MethodBody,
        offsets: &mut Vec<u32>,
    ) -> Result<()> {
        let size = code.len();
        self.offset_to_id.clear();
        self.offset_to_id.resize(size + 1, NOT_AN_INSTRUCTION);
        self.pending_branches.clear();
        // A rough guess that avoids most regrowth: IL averages 2-3 bytes per instruction.
        body.instrs.reserve(size / 2 + 1);
        offsets.reserve(size / 2 + 1);

        let mut pos = 0usize;
        while pos < size {
            let start = pos;
            let mut byte = code[pos];
            pos += 1;
            let opcode = if byte == 0xFE {
                let Some(&second) = code.get(pos) else {
                    return Err(Error::Truncated {
                        what: "two-byte opcode",
                        offset: start,
                        needed: 2,
                        available: 1,
                    });
                };
                byte = second;
                pos += 1;
                OpCode::from_fe_byte(second)
            } else {
                OpCode::from_byte(byte)
            };
            let Some(opcode) = opcode else {
                return Err(Error::UnknownOpcode {
                    offset: start,
                    byte,
                    prefixed: code[start] == 0xFE,
                });
            };

            let kind = opcode.operand();
            let operand = if kind == OperandKind::Switch {
                self.read_switch(code, start, &mut pos, body)?
            } else {
                let len = kind.size().unwrap_or(0) as usize;
                let bytes = code.get(pos..pos + len).ok_or(Error::OperandPastEnd {
                    offset: start,
                    opcode: opcode.name(),
                })?;
                pos += len;
                match kind {
                    OperandKind::None => Operand::None,
                    OperandKind::ShortI => Operand::Int(i32::from(bytes[0] as i8)),
                    OperandKind::ShortU => Operand::Int(i32::from(bytes[0])),
                    OperandKind::ShortVar => Operand::Var(u16::from(bytes[0])),
                    OperandKind::Var => Operand::Var(u16::from_le_bytes([bytes[0], bytes[1]])),
                    OperandKind::I => Operand::Int(le_i32(bytes)),
                    OperandKind::ShortR => Operand::Float32(le_i32(bytes) as u32),
                    OperandKind::I8 => Operand::Long(le_i64(bytes)),
                    OperandKind::R => Operand::Float64(le_i64(bytes) as u64),
                    OperandKind::ShortBranch | OperandKind::Branch => {
                        let disp = if len == 1 {
                            i64::from(bytes[0] as i8)
                        } else {
                            i64::from(le_i32(bytes))
                        };
                        let target = check_target(start, pos, disp, size)?;
                        self.pending_branches.push(body.instrs.arena_len() as u32);
                        // Holds the target *offset* until every instruction is known.
                        Operand::Target(InstrId(target))
                    }
                    OperandKind::Switch => unreachable!("handled above"),
                    _ => Operand::Token(le_i32(bytes) as u32),
                }
            };
            self.offset_to_id[start] = body.instrs.arena_len() as u32;
            body.instrs.push_raw(Instruction { opcode, operand });
            offsets.push(start as u32);
        }
        self.resolve_branches(body, offsets)
    }

    fn read_switch(
        &mut self,
        code: &[u8],
        start: usize,
        pos: &mut usize,
        body: &mut MethodBody,
    ) -> Result<Operand> {
        let count_bytes = code.get(*pos..*pos + 4).ok_or(Error::OperandPastEnd {
            offset: start,
            opcode: "switch",
        })?;
        let count = u32::from_le_bytes([
            count_bytes[0],
            count_bytes[1],
            count_bytes[2],
            count_bytes[3],
        ]);
        *pos += 4;
        let table_len = count as usize * 4;
        let table = code
            .get(*pos..)
            .and_then(|rest| rest.get(..table_len))
            .ok_or(Error::SwitchTablePastEnd {
                offset: start,
                count,
            })?;
        let end = *pos + table_len;
        let first = body.instrs.switch_pool_len();
        for chunk in table.chunks_exact(4) {
            let disp = i64::from(le_i32(chunk));
            let target = check_target(start, end, disp, code.len())?;
            body.instrs.push_switch_target(InstrId(target));
        }
        *pos = end;
        self.pending_branches.push(body.instrs.arena_len() as u32);
        Ok(Operand::Switch(SwitchTargets {
            start: first,
            len: count,
        }))
    }

    /// Replaces the target offsets stored in branch and switch operands by ids.
    fn resolve_branches(&mut self, body: &mut MethodBody, offsets: &[u32]) -> Result<()> {
        let map = &self.offset_to_id;
        let resolve = |from: InstrId, target: InstrId| -> Result<InstrId> {
            match map[target.index()] {
                NOT_AN_INSTRUCTION => Err(Error::BranchIntoInstruction {
                    offset: offsets[from.index()] as usize,
                    target: target.0,
                }),
                id => Ok(InstrId(id)),
            }
        };
        for &raw in &self.pending_branches {
            let id = InstrId(raw);
            match body.instrs.get(id).operand {
                Operand::Target(target) => {
                    body.instrs.get_mut(id).operand = Operand::Target(resolve(id, target)?);
                }
                Operand::Switch(targets) => {
                    for slot in body.instrs.switch_targets_mut(targets) {
                        *slot = resolve(id, *slot)?;
                    }
                }
                _ => unreachable!("only branches and switches are pending"),
            }
        }
        Ok(())
    }

    /// Turns an offset-based clause into an id-based one with inclusive regions.
    fn resolve_clause(
        &self,
        raw: &RawClause,
        code_size: usize,
        count: usize,
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
            let first = self.instruction_at(start, raw.at, what)?;
            let end = end as u32;
            let last = if end as usize == code_size {
                count as u32 - 1
            } else {
                self.instruction_at(end, raw.at, what)?.0 - 1
            };
            Ok((first, InstrId(last)))
        };
        let (try_start, try_last) = region("try", raw.try_offset, raw.try_length)?;
        let (handler_start, handler_last) =
            region("handler", raw.handler_offset, raw.handler_length)?;
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
                ClauseKind::Filter(self.instruction_at(raw.extra, raw.at, "filter")?)
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
        let mut clause =
            ExceptionClause::new(kind, try_start, try_last, handler_start, handler_last);
        if matches!(kind, ClauseKind::Finally | ClauseKind::Fault) {
            clause.unused_token = raw.extra;
        }
        Ok(clause)
    }

    fn instruction_at(&self, offset: u32, at: usize, what: &'static str) -> Result<InstrId> {
        match self.offset_to_id.get(offset as usize) {
            Some(&id) if id != NOT_AN_INSTRUCTION => Ok(InstrId(id)),
            _ => Err(Error::EhClauseNotOnBoundary {
                offset: at,
                what,
                boundary: offset,
            }),
        }
    }
}

/// Checks a branch displacement and returns the target code offset.
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

#[inline]
fn le_i32(b: &[u8]) -> i32 {
    i32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

#[inline]
fn le_i64(b: &[u8]) -> i64 {
    i64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
}

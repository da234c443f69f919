//! Textual listing of a method body in ilasm syntax, with `IL_xxxx:` labels.
//!
//! Labels are the offsets the body has *as it would be encoded now*, so an edited body
//! lists consistently. Tokens are printed by a [`TokenNames`] implementation; the default
//! prints them in hex.

use crate::body::{ClauseKind, Encoder, MethodBody};
use crate::graph::Operand;
use crate::opcode::{OpCode, OperandKind};
use std::fmt::Write;

/// Turns metadata tokens into names for a listing.
pub trait TokenNames {
    /// Writes a readable form of `token` (the operand of `opcode`) to `out`.
    fn write_token(&self, opcode: OpCode, token: u32, out: &mut String) {
        let _ = opcode;
        let _ = write!(out, "0x{token:08x}");
    }
}

/// Prints every token in hex.
#[derive(Debug, Clone, Copy, Default)]
pub struct HexTokens;

impl TokenNames for HexTokens {}

/// Lists `body` in ilasm syntax.
///
/// # Errors
/// Only if the body cannot be laid out: the errors of [`Encoder::code_offsets`].
pub fn disassemble(body: &MethodBody, names: &dyn TokenNames) -> crate::Result<String> {
    let mut encoder = Encoder::new();
    let offsets = encoder.code_offsets(body)?.to_vec();
    let label = |id: crate::InstrId| format!("IL_{:04x}", offsets[id.index()]);
    let mut out = String::new();
    let _ = writeln!(out, ".maxstack {}", body.max_stack);
    if body.local_var_sig != 0 {
        let init = if body.init_locals { " init" } else { "" };
        let _ = writeln!(
            out,
            ".locals{init} /* signature 0x{:08x} */",
            body.local_var_sig
        );
    }
    for (id, instr) in body.instrs.iter() {
        let opcode = instr.opcode;
        let _ = write!(out, "{}: {}", label(id), opcode.name());
        match instr.operand {
            Operand::None => {}
            Operand::Int(v) => {
                let _ = write!(out, " {v}");
            }
            Operand::Long(v) => {
                let _ = write!(out, " {v}");
            }
            Operand::Float32(bits) => {
                let v = f32::from_bits(bits);
                if v.is_finite() {
                    let _ = write!(out, " {v:?}");
                } else {
                    write_float_bytes(&mut out, &bits.to_le_bytes());
                }
            }
            Operand::Float64(bits) => {
                let v = f64::from_bits(bits);
                if v.is_finite() {
                    let _ = write!(out, " {v:?}");
                } else {
                    write_float_bytes(&mut out, &bits.to_le_bytes());
                }
            }
            Operand::Var(v) => {
                let _ = write!(out, " {v}");
            }
            Operand::Token(t) => {
                out.push(' ');
                names.write_token(opcode, t, &mut out);
            }
            Operand::Target(t) => {
                let _ = write!(out, " {}", label(t));
            }
            Operand::Switch(targets) => {
                out.push_str(" (");
                for (i, &t) in body.instrs.switch_targets(targets).iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    out.push_str(&label(t));
                }
                out.push(')');
            }
        }
        if !instr.operand_matches_opcode() && opcode.operand() != OperandKind::None {
            out.push_str(" /* operand does not match opcode */");
        }
        out.push('\n');
    }
    let code_size = offsets.last().copied().unwrap_or(0);
    let end = |last: crate::InstrId| match body.instrs.next(last) {
        Some(next) => label(next),
        None => format!("IL_{code_size:04x}"),
    };
    for clause in &body.clauses {
        let _ = write!(
            out,
            ".try {} to {} ",
            label(clause.try_start),
            end(clause.try_last)
        );
        match clause.kind {
            ClauseKind::Catch(token) => {
                out.push_str("catch ");
                names.write_token(OpCode::Ldtoken, token, &mut out);
            }
            ClauseKind::Filter(start) => {
                let _ = write!(out, "filter {}", label(start));
            }
            ClauseKind::Finally => out.push_str("finally"),
            ClauseKind::Fault => out.push_str("fault"),
        }
        let _ = writeln!(
            out,
            " handler {} to {}",
            label(clause.handler_start),
            end(clause.handler_last)
        );
    }
    Ok(out)
}

fn write_float_bytes(out: &mut String, bytes: &[u8]) {
    out.push_str(" (");
    for (i, b) in bytes.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        let _ = write!(out, "{b:02X}");
    }
    out.push(')');
}

#[cfg(feature = "pe")]
impl TokenNames for crate::pe::Assembly<'_> {
    /// Strings are quoted; methods and fields print their name, types their full name;
    /// anything unresolvable falls back to hex. The token follows in a comment.
    fn write_token(&self, opcode: OpCode, token: u32, out: &mut String) {
        let table = (token >> 24) as u8;
        let resolved = match table {
            0x70 => self
                .user_string(token)
                .ok()
                .map(|s| format!("{:?}", s.to_string_lossy())),
            0x01 | 0x02 => self.type_name(token).ok().map(|t| t.to_string()),
            0x04 | 0x06 | 0x0A | 0x2B => self.member_name(token).ok().map(|name| {
                let owner = match table {
                    0x06 => self
                        .declaring_type(token)
                        .ok()
                        .flatten()
                        .and_then(|t| self.type_name(t).ok())
                        .map(|t| format!("{t}::")),
                    _ => None,
                };
                format!("{}{name}", owner.unwrap_or_default())
            }),
            _ => None,
        };
        match resolved {
            Some(text) => {
                let _ = write!(out, "{text} /* {token:08x} */");
            }
            None => HexTokens.write_token(opcode, token, out),
        }
    }
}

//! Length-only scan of a method body: where it ends and how many instructions it holds,
//! without decoding operands or allocating.
//!
//! [`scan_body`] reads the header, steps over each instruction using the lengths in the
//! opcode table (switch tables included) and over the EH sections using their headers
//! only. It checks exactly the structure it walks: the header, that the code lies inside
//! the input, that every opcode is defined and every operand and switch table lies inside
//! the code, and that every section header is well-formed and its section inside the
//! input. It does not check branch targets or EH clause ranges, so it accepts some bodies
//! the [`Decoder`](super::Decoder) rejects; whenever the decoder accepts a body, the scan
//! accepts it too and reports the same length and instruction count.
//!
//! Uses: finding the size of a body in a PE image (the metadata records only its start),
//! counting instructions cheaply, and serving as the baseline the codec's speed is
//! measured against (`benches/codec.rs`, `examples/throughput.rs`).
// Errors are built only where they are returned (`let ... else`, `ok_or_else`), never
// with `ok_or(Error::..)`: `Error` has drop glue, so an eagerly built error costs a
// construction and a `drop_in_place` on every instruction.

use super::header::read_header;
use super::sections::read_section_header;
use crate::error::{Error, Result};
use crate::opcode::OpCode;

/// Where a method body's parts lie, as found by [`scan_body`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BodyExtent {
    /// Bytes the body occupies: header, code, padding and EH sections. The same value
    /// [`Decoder::decode_into`](super::Decoder::decode_into) returns.
    pub len: usize,
    /// Size of the header, which is also the body offset of the code (1 or 12).
    pub code_offset: usize,
    /// Bytes of IL code.
    pub code_size: u32,
    /// Number of instructions in the code (a prefix counts as an instruction, as in the
    /// decoded [`InstrList`](crate::graph::InstrList)).
    pub instructions: u32,
    /// Number of EH clauses in the sections, counted from the section sizes.
    pub eh_clauses: u32,
    /// Whether the header is tiny.
    pub tiny: bool,
}

/// Scans the body at the start of `bytes`, which may extend past the body's end.
///
/// Never panics and never allocates. Errors are the ones the decoder reports for the
/// same structural fault (see the module documentation for what is not checked).
///
/// # Errors
///
/// [`Error::Truncated`], [`Error::BadHeaderFormat`], [`Error::BadHeaderSize`] and
/// [`Error::CodeSizePastEnd`] for the header, those of [`scan_code`] for the code, and
/// [`Error::Truncated`], [`Error::BadSectionKind`] and [`Error::BadSectionSize`] for the
/// section headers.
pub fn scan_body(bytes: &[u8]) -> Result<BodyExtent> {
    let header = read_header(bytes)?;
    let code = header.code(bytes)?;
    let instructions = scan_code(code)?;
    let mut len = header.len + code.len();
    let mut eh_clauses = 0u32;
    if header.more_sects {
        loop {
            len = len.next_multiple_of(4);
            let section = read_section_header(bytes, len)?;
            eh_clauses = eh_clauses.saturating_add(section.clauses() as u32);
            len += section.size;
            if !section.more {
                break;
            }
        }
    }
    Ok(BodyExtent {
        len,
        code_offset: header.len,
        code_size: header.code_size,
        instructions,
        eh_clauses,
        tiny: header.len == 1,
    })
}

/// Counts the instructions of `code` (the IL code alone, without header), checking that
/// every opcode is defined and that every operand and switch table lies inside `code`.
///
/// Code offsets in errors are relative to the start of `code`.
///
/// # Errors
///
/// [`Error::Truncated`] for a two-byte opcode cut short, [`Error::UnknownOpcode`],
/// [`Error::OperandPastEnd`] and [`Error::SwitchTablePastEnd`].
pub fn scan_code(code: &[u8]) -> Result<u32> {
    let size = code.len();
    let mut pos = 0usize;
    let mut count = 0u32;
    while pos < size {
        let start = pos;
        let first = code[pos];
        let opcode = if first == 0xFE {
            let Some(&second) = code.get(pos + 1) else {
                return Err(Error::Truncated {
                    what: "two-byte opcode",
                    offset: start,
                    needed: 2,
                    available: 1,
                });
            };
            let Some(opcode) = OpCode::from_fe_byte(second) else {
                return Err(Error::UnknownOpcode {
                    offset: start,
                    byte: second,
                    prefixed: true,
                });
            };
            opcode
        } else {
            let Some(opcode) = OpCode::from_byte(first) else {
                return Err(Error::UnknownOpcode {
                    offset: start,
                    byte: first,
                    prefixed: false,
                });
            };
            opcode
        };
        pos += match opcode.fixed_len() {
            Some(len) => len as usize,
            None => switch_len(code, start)?,
        };
        if pos > size {
            return Err(Error::OperandPastEnd {
                offset: start,
                opcode: opcode.name(),
            });
        }
        count += 1;
    }
    Ok(count)
}

/// Length of the `switch` at `start`: opcode, count and table; the table must fit.
/// (The decoder measures switches with it too.)
#[cold]
pub(crate) fn switch_len(code: &[u8], start: usize) -> Result<usize> {
    let Some(count_bytes) = code
        .get(start + 1..)
        .and_then(|rest| rest.first_chunk::<4>())
    else {
        return Err(Error::OperandPastEnd {
            offset: start,
            opcode: "switch",
        });
    };
    let count = u32::from_le_bytes(*count_bytes);
    let available = code.len() - (start + 5);
    match (count as usize).checked_mul(4) {
        Some(table) if table <= available => Ok(5 + table),
        _ => Err(Error::SwitchTablePastEnd {
            offset: start,
            count,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiny_body_with_every_operand_size() {
        // ldc.i4.s 5; ldc.i8 ..; ldarg (FE 09) 0; pop; pop; pop; ret
        let code = [
            0x1F, 5, 0x21, 1, 2, 3, 4, 5, 6, 7, 8, 0xFE, 0x09, 0, 0, 0x26, 0x26, 0x26, 0x2A,
        ];
        let mut bytes = vec![(code.len() as u8) << 2 | 2];
        bytes.extend_from_slice(&code);
        bytes.extend_from_slice(&[0xAA; 7]); // whatever follows the body
        let extent = scan_body(&bytes).unwrap();
        assert_eq!(extent.len, 1 + code.len());
        assert_eq!(extent.instructions, 7);
        assert!(extent.tiny);
    }

    #[test]
    fn switch_table_is_skipped_and_bounded() {
        // switch (2 targets); ret
        let code = [0x45, 2, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0x2A];
        assert_eq!(scan_code(&code), Ok(2));
        assert_eq!(
            scan_code(&code[..12]),
            Err(Error::SwitchTablePastEnd {
                offset: 0,
                count: 2
            })
        );
        assert_eq!(
            scan_code(&[0x45, 0xFF, 0xFF, 0xFF, 0xFF]),
            Err(Error::SwitchTablePastEnd {
                offset: 0,
                count: u32::MAX
            })
        );
        assert!(matches!(
            scan_code(&[0x45, 1, 0]),
            Err(Error::OperandPastEnd { offset: 0, .. })
        ));
    }

    #[test]
    fn bad_opcodes_and_truncated_operands() {
        assert!(matches!(
            scan_code(&[0x00, 0x24]),
            Err(Error::UnknownOpcode {
                offset: 1,
                byte: 0x24,
                prefixed: false
            })
        ));
        assert!(matches!(
            scan_code(&[0xFE, 0x08]),
            Err(Error::UnknownOpcode { prefixed: true, .. })
        ));
        assert!(matches!(
            scan_code(&[0x00, 0xFE]),
            Err(Error::Truncated { offset: 1, .. })
        ));
        assert!(matches!(
            scan_code(&[0x28, 1, 2, 3]),
            Err(Error::OperandPastEnd { offset: 0, .. })
        ));
    }

    #[test]
    fn fat_body_with_two_sections() {
        let mut bytes = vec![0x1B, 0x30, 8, 0, 3, 0, 0, 0, 0, 0, 0, 0]; // fat, MoreSects
        bytes.extend_from_slice(&[0x00, 0x00, 0x2A, 0]); // nop nop ret + padding
        bytes.extend_from_slice(&[0x81, 16, 0, 0]); // small, more, one clause
        bytes.extend_from_slice(&[0; 12]);
        bytes.extend_from_slice(&[0x41, 28, 0, 0]); // fat, last, one clause
        bytes.extend_from_slice(&[0; 24]);
        let extent = scan_body(&bytes).unwrap();
        assert_eq!(extent.len, bytes.len());
        assert_eq!(
            (extent.instructions, extent.eh_clauses, extent.code_size),
            (3, 2, 3)
        );
        assert!(!extent.tiny);
        assert!(matches!(
            scan_body(&bytes[..bytes.len() - 1]),
            Err(Error::Truncated { .. })
        ));
    }
}

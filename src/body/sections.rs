//! Extra data sections after the code: EH tables, small and fat (ECMA-335 II.25.4.5-6).

use super::SectionFormat;
use crate::error::{Error, Result};
use smallvec::SmallVec;

const KIND_EH_TABLE: u8 = 0x01;
const KIND_MASK: u8 = 0x3F;
const KIND_FAT: u8 = 0x40;
const KIND_MORE_SECTS: u8 = 0x80;
const SECTION_HEADER: usize = 4;
const SMALL_CLAUSE: usize = 12;
const FAT_CLAUSE: usize = 24;
/// Most clauses a small section can hold: its data size is one byte (20 * 12 + 4 = 244).
pub(crate) const SMALL_MAX_CLAUSES: usize = (u8::MAX as usize - SECTION_HEADER) / SMALL_CLAUSE;
/// Largest fat-section data size (three bytes).
const FAT_MAX_DATA: usize = 0x00FF_FFFF;

/// One clause with offset-based ranges, as stored in a section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RawClause {
    pub flags: u32,
    pub try_offset: u32,
    pub try_length: u32,
    pub handler_offset: u32,
    pub handler_length: u32,
    /// Class token (catch), filter offset (filter), or the ignored field of finally/fault.
    pub extra: u32,
    /// Body offset of the clause bytes (for errors); 0 for clauses being written.
    pub at: usize,
}

impl RawClause {
    /// Whether every field fits the small clause format.
    pub fn fits_small(&self) -> bool {
        self.flags <= 0xFFFF
            && self.try_offset <= 0xFFFF
            && self.try_length <= 0xFF
            && self.handler_offset <= 0xFFFF
            && self.handler_length <= 0xFF
    }
}

fn le_u16(b: &[u8], at: usize) -> u32 {
    u32::from(u16::from_le_bytes([b[at], b[at + 1]]))
}

fn le_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// The header of one data section, validated against the bytes that hold it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SectionHeader {
    /// Fat (24-byte clauses, 3-byte size) or small (12-byte clauses, 1-byte size).
    pub fat: bool,
    /// Whether another section follows.
    pub more: bool,
    /// Bytes of the section, its 4-byte header included.
    pub size: usize,
}

impl SectionHeader {
    /// Number of clauses the section holds.
    #[inline]
    pub fn clauses(&self) -> usize {
        (self.size - SECTION_HEADER) / self.clause_size()
    }

    #[inline]
    fn clause_size(&self) -> usize {
        if self.fat { FAT_CLAUSE } else { SMALL_CLAUSE }
    }
}

/// Reads the header of the section at the (already aligned) body offset `pos` and checks
/// that its kind is an EH table, that its size holds whole clauses and that the section
/// lies inside `bytes`.
#[inline]
pub(crate) fn read_section_header(bytes: &[u8], pos: usize) -> Result<SectionHeader> {
    let header = bytes
        .get(pos..)
        .and_then(|rest| rest.get(..SECTION_HEADER))
        .ok_or_else(|| Error::Truncated {
            what: "data section header",
            offset: pos,
            needed: SECTION_HEADER,
            available: bytes.len().saturating_sub(pos),
        })?;
    let kind = header[0];
    if kind & KIND_MASK != KIND_EH_TABLE {
        return Err(Error::BadSectionKind { offset: pos, kind });
    }
    let fat = kind & KIND_FAT != 0;
    let (size, clause_size) = if fat {
        (
            u32::from_le_bytes([header[1], header[2], header[3], 0]) as usize,
            FAT_CLAUSE,
        )
    } else {
        (header[1] as usize, SMALL_CLAUSE)
    };
    if size < SECTION_HEADER || (size - SECTION_HEADER) % clause_size != 0 {
        return Err(Error::BadSectionSize {
            offset: pos,
            size: size as u32,
        });
    }
    if bytes.len() - pos < size {
        return Err(Error::Truncated {
            what: "EH section",
            offset: pos,
            needed: size,
            available: bytes.len() - pos,
        });
    }
    Ok(SectionHeader {
        fat,
        more: kind & KIND_MORE_SECTS != 0,
        size,
    })
}

/// Reads the chain of sections starting at (unaligned) body offset `pos`.
///
/// Calls `clause` for every clause in order; returns the body offset just past the last
/// section and the format of each section.
pub(crate) fn read_sections(
    bytes: &[u8],
    mut pos: usize,
    mut clause: impl FnMut(RawClause) -> Result<()>,
) -> Result<(usize, SmallVec<[SectionFormat; 1]>)> {
    let mut formats = SmallVec::new();
    loop {
        pos = pos.next_multiple_of(4);
        let section = read_section_header(bytes, pos)?;
        let data = &bytes[pos..pos + section.size];
        let fat = section.fat;
        let clause_size = section.clause_size();
        let count = section.clauses();
        for i in 0..count {
            let at = SECTION_HEADER + i * clause_size;
            let raw = if fat {
                RawClause {
                    flags: le_u32(data, at),
                    try_offset: le_u32(data, at + 4),
                    try_length: le_u32(data, at + 8),
                    handler_offset: le_u32(data, at + 12),
                    handler_length: le_u32(data, at + 16),
                    extra: le_u32(data, at + 20),
                    at: pos + at,
                }
            } else {
                RawClause {
                    flags: le_u16(data, at),
                    try_offset: le_u16(data, at + 2),
                    try_length: u32::from(data[at + 4]),
                    handler_offset: le_u16(data, at + 5),
                    handler_length: u32::from(data[at + 7]),
                    extra: le_u32(data, at + 8),
                    at: pos + at,
                }
            };
            clause(raw)?;
        }
        formats.push(SectionFormat {
            fat,
            clauses: count as u32,
            reserved: if fat { [0; 2] } else { [data[2], data[3]] },
        });
        pos += section.size;
        if !section.more {
            return Ok((pos, formats));
        }
    }
}

/// Whether `clauses` can be written as one small section.
pub(crate) fn fit_small_section(clauses: &[RawClause]) -> bool {
    clauses.len() <= SMALL_MAX_CLAUSES && clauses.iter().all(RawClause::fits_small)
}

/// Writes one EH section; `out` must already be 4-byte aligned relative to the body.
/// `reserved` fills the two reserved bytes of a small section's header (ignored if fat).
pub(crate) fn write_section(
    out: &mut Vec<u8>,
    fat: bool,
    reserved: [u8; 2],
    clauses: &[RawClause],
    more: bool,
) -> Result<()> {
    let more_bit = if more { KIND_MORE_SECTS } else { 0 };
    if fat {
        let size = SECTION_HEADER + clauses.len() * FAT_CLAUSE;
        if size > FAT_MAX_DATA {
            return Err(Error::Unencodable {
                what: "too many EH clauses for one fat section",
            });
        }
        out.reserve(size);
        let size = (size as u32).to_le_bytes();
        out.extend_from_slice(&[
            KIND_EH_TABLE | KIND_FAT | more_bit,
            size[0],
            size[1],
            size[2],
        ]);
        for c in clauses {
            // One clause, composed whole and appended at once.
            let mut bytes = [0u8; FAT_CLAUSE];
            let fields = [
                c.flags,
                c.try_offset,
                c.try_length,
                c.handler_offset,
                c.handler_length,
                c.extra,
            ];
            for (chunk, v) in bytes.chunks_exact_mut(4).zip(fields) {
                chunk.copy_from_slice(&v.to_le_bytes());
            }
            out.extend_from_slice(&bytes);
        }
    } else {
        debug_assert!(fit_small_section(clauses));
        let size = SECTION_HEADER + clauses.len() * SMALL_CLAUSE;
        out.reserve(size);
        out.extend_from_slice(&[
            KIND_EH_TABLE | more_bit,
            size as u8,
            reserved[0],
            reserved[1],
        ]);
        for c in clauses {
            let [f0, f1] = (c.flags as u16).to_le_bytes();
            let [t0, t1] = (c.try_offset as u16).to_le_bytes();
            let [h0, h1] = (c.handler_offset as u16).to_le_bytes();
            let [e0, e1, e2, e3] = c.extra.to_le_bytes();
            out.extend_from_slice(&[
                f0,
                f1,
                t0,
                t1,
                c.try_length as u8,
                h0,
                h1,
                c.handler_length as u8,
                e0,
                e1,
                e2,
                e3,
            ]);
        }
    }
    Ok(())
}

//! Tiny and fat method headers (ECMA-335 II.25.4.2, II.25.4.3).

use super::HeaderFormat;
use crate::error::{Error, Result};

/// Largest code size a tiny header can describe.
pub const TINY_MAX_CODE_SIZE: u32 = 63;
/// The max stack the runtime assumes for a tiny header.
pub const TINY_MAX_STACK: u16 = 8;
/// Size in bytes of a fat header.
pub const FAT_HEADER_SIZE: usize = 12;

const FORMAT_MASK: u8 = 0x3;
const TINY_FORMAT: u8 = 0x2;
const FAT_FORMAT: u16 = 0x3;
const MORE_SECTS: u16 = 0x8;
const INIT_LOCALS: u16 = 0x10;
/// Flag bits this crate interprets: format, MoreSects, InitLocals and the size nibble.
const KNOWN_FLAGS: u16 = 0xF000 | FAT_FORMAT | MORE_SECTS | INIT_LOCALS;
const FAT_SIZE_DWORDS: u8 = 3;

/// A header as read from bytes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RawHeader {
    pub len: usize,
    pub code_size: u32,
    pub max_stack: u16,
    pub init_locals: bool,
    pub local_var_sig: u32,
    pub more_sects: bool,
    pub format: HeaderFormat,
}

impl RawHeader {
    /// The code the header describes: `code_size` bytes right after the header.
    #[inline]
    pub fn code<'a>(&self, bytes: &'a [u8]) -> Result<&'a [u8]> {
        bytes
            .get(self.len..)
            .and_then(|rest| rest.get(..self.code_size as usize))
            .ok_or_else(|| Error::CodeSizePastEnd {
                offset: self.len,
                code_size: self.code_size,
                available: bytes.len().saturating_sub(self.len),
            })
    }
}

fn le_u16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn le_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// Reads the header at the start of `bytes`.
pub(crate) fn read_header(bytes: &[u8]) -> Result<RawHeader> {
    let Some(&first) = bytes.first() else {
        return Err(Error::Truncated {
            what: "method header",
            offset: 0,
            needed: 1,
            available: 0,
        });
    };
    match first & FORMAT_MASK {
        TINY_FORMAT => Ok(RawHeader {
            len: 1,
            code_size: u32::from(first >> 2),
            max_stack: TINY_MAX_STACK,
            init_locals: false,
            local_var_sig: 0,
            more_sects: false,
            format: HeaderFormat::Tiny,
        }),
        0x3 => {
            if bytes.len() < FAT_HEADER_SIZE {
                return Err(Error::Truncated {
                    what: "fat method header",
                    offset: 0,
                    needed: FAT_HEADER_SIZE,
                    available: bytes.len(),
                });
            }
            let flags = le_u16(bytes, 0);
            let size = (flags >> 12) as u8;
            if size != FAT_SIZE_DWORDS {
                return Err(Error::BadHeaderSize { offset: 0, size });
            }
            Ok(RawHeader {
                len: FAT_HEADER_SIZE,
                code_size: le_u32(bytes, 4),
                max_stack: le_u16(bytes, 2),
                init_locals: flags & INIT_LOCALS != 0,
                local_var_sig: le_u32(bytes, 8),
                more_sects: flags & MORE_SECTS != 0,
                format: HeaderFormat::Fat {
                    extra_flags: flags & !KNOWN_FLAGS,
                },
            })
        }
        _ => Err(Error::BadHeaderFormat {
            offset: 0,
            byte: first,
        }),
    }
}

/// The tiny header byte; the caller has checked `code_size <= TINY_MAX_CODE_SIZE`.
pub(crate) fn tiny_header(code_size: u32) -> u8 {
    debug_assert!(code_size <= TINY_MAX_CODE_SIZE);
    ((code_size as u8) << 2) | TINY_FORMAT
}

/// Fields of a fat header to write.
pub(crate) struct FatHeader {
    pub extra_flags: u16,
    pub more_sects: bool,
    pub init_locals: bool,
    pub max_stack: u16,
    pub code_size: u32,
    pub local_var_sig: u32,
}

/// The 12 bytes of a fat header.
pub(crate) fn fat_header(h: &FatHeader) -> [u8; FAT_HEADER_SIZE] {
    let mut flags = (u16::from(FAT_SIZE_DWORDS) << 12) | FAT_FORMAT | h.extra_flags;
    if h.more_sects {
        flags |= MORE_SECTS;
    }
    if h.init_locals {
        flags |= INIT_LOCALS;
    }
    let mut bytes = [0; FAT_HEADER_SIZE];
    bytes[0..2].copy_from_slice(&flags.to_le_bytes());
    bytes[2..4].copy_from_slice(&h.max_stack.to_le_bytes());
    bytes[4..8].copy_from_slice(&h.code_size.to_le_bytes());
    bytes[8..12].copy_from_slice(&h.local_var_sig.to_le_bytes());
    bytes
}

//! Bounds-checked little-endian readers shared by the PE modules.
//!
//! Every reader returns `None` instead of reading out of bounds; offsets are computed
//! with checked arithmetic, so no input can make them overflow.

use crate::error::Error;

/// `len` bytes of `data` at `off`, or `None` when they are not all there.
#[inline]
pub(crate) fn bytes_at(data: &[u8], off: usize, len: usize) -> Option<&[u8]> {
    data.get(off..off.checked_add(len)?)
}

/// The byte at `off`.
#[inline]
pub(crate) fn u8_at(data: &[u8], off: usize) -> Option<u8> {
    data.get(off).copied()
}

/// The little-endian `u16` at `off`.
#[inline]
pub(crate) fn u16_at(data: &[u8], off: usize) -> Option<u16> {
    let b = bytes_at(data, off, 2)?;
    Some(u16::from_le_bytes(b.try_into().ok()?))
}

/// The little-endian `u32` at `off`.
#[inline]
pub(crate) fn u32_at(data: &[u8], off: usize) -> Option<u32> {
    let b = bytes_at(data, off, 4)?;
    Some(u32::from_le_bytes(b.try_into().ok()?))
}

/// The little-endian `u64` at `off`.
#[inline]
pub(crate) fn u64_at(data: &[u8], off: usize) -> Option<u64> {
    let b = bytes_at(data, off, 8)?;
    Some(u64::from_le_bytes(b.try_into().ok()?))
}

/// A little-endian unsigned value of `size` (1, 2 or 4) bytes at `off`.
#[inline]
pub(crate) fn uint_at(data: &[u8], off: usize, size: u8) -> Option<u32> {
    match size {
        1 => u8_at(data, off).map(u32::from),
        2 => u16_at(data, off).map(u32::from),
        4 => u32_at(data, off),
        _ => None,
    }
}

/// Shorthand for [`Error::BadPe`].
#[inline]
pub(crate) fn bad_pe(offset: usize, what: &'static str) -> Error {
    Error::BadPe { offset, what }
}

/// Decodes an ECMA-335 §II.24.2.4 compressed unsigned length at `off`.
///
/// Returns `(value, bytes used)`, or `None` when the prefix is truncated or its first
/// byte is `0b111x_xxxx` (no such form).
#[inline]
pub(crate) fn compressed_u32_at(data: &[u8], off: usize) -> Option<(u32, usize)> {
    let b0 = u8_at(data, off)?;
    if b0 & 0x80 == 0 {
        Some((u32::from(b0), 1))
    } else if b0 & 0xC0 == 0x80 {
        let b1 = u8_at(data, off.checked_add(1)?)?;
        Some(((u32::from(b0 & 0x3F) << 8) | u32::from(b1), 2))
    } else if b0 & 0xE0 == 0xC0 {
        let b = bytes_at(data, off.checked_add(1)?, 3)?;
        let v = (u32::from(b0 & 0x1F) << 24)
            | (u32::from(b[0]) << 16)
            | (u32::from(b[1]) << 8)
            | u32::from(b[2]);
        Some((v, 4))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compressed_forms() {
        assert_eq!(compressed_u32_at(&[0x03], 0), Some((3, 1)));
        assert_eq!(compressed_u32_at(&[0x7F], 0), Some((0x7F, 1)));
        assert_eq!(compressed_u32_at(&[0x80, 0x80], 0), Some((0x80, 2)));
        assert_eq!(compressed_u32_at(&[0xAE, 0x57], 0), Some((0x2E57, 2)));
        assert_eq!(compressed_u32_at(&[0xBF, 0xFF], 0), Some((0x3FFF, 2)));
        assert_eq!(
            compressed_u32_at(&[0xC0, 0x00, 0x40, 0x00], 0),
            Some((0x4000, 4))
        );
        assert_eq!(
            compressed_u32_at(&[0xDF, 0xFF, 0xFF, 0xFF], 0),
            Some((0x1FFF_FFFF, 4))
        );
        assert_eq!(compressed_u32_at(&[0xE0, 0, 0, 0], 0), None);
        assert_eq!(compressed_u32_at(&[0x80], 0), None);
        assert_eq!(compressed_u32_at(&[0xC0, 0, 0], 0), None);
        assert_eq!(compressed_u32_at(&[], 0), None);
        assert_eq!(compressed_u32_at(&[1], usize::MAX), None);
    }

    #[test]
    fn readers_are_bounds_checked() {
        let d = [1u8, 2, 3, 4, 5];
        assert_eq!(u32_at(&d, 1), Some(0x0504_0302));
        assert_eq!(u32_at(&d, 2), None);
        assert_eq!(u16_at(&d, usize::MAX), None);
        assert_eq!(u64_at(&d, 0), None);
        assert_eq!(uint_at(&d, 0, 3), None);
    }
}

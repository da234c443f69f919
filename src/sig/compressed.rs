//! Compressed integers and `TypeDefOrRefOrSpecEncoded` tokens (ECMA-335 II.23.2).
//!
//! Signature blobs store counts, indices and tokens as *compressed* integers of one,
//! two or four bytes, big-endian, with the form given by the high bits of the first
//! byte:
//!
//! | first byte  | size | value bits | range                   |
//! |-------------|------|------------|-------------------------|
//! | `0xxxxxxx`  | 1    | 7          | `0..=0x7F`              |
//! | `10xxxxxx`  | 2    | 14         | `0..=0x3FFF`            |
//! | `110xxxxx`  | 4    | 29         | `0..=0x1FFF_FFFF`       |
//!
//! **Canonical form.** The writers always emit the shortest form. The reader accepts any
//! form, including non-canonical ones such as `0x80 0x05` for 5, because the CLR accepts
//! them; such inputs re-encode in canonical form (so they do not round-trip byte for
//! byte). Signed integers are not affected: their width is part of their value (see
//! [`SigReader::read_compressed_i32`]).

use crate::error::{Error, Result};

/// The largest value a compressed unsigned integer can hold.
pub const MAX_COMPRESSED_U32: u32 = 0x1FFF_FFFF;
/// The smallest value a compressed signed integer can hold (`-2^28`).
pub const MIN_COMPRESSED_I32: i32 = -0x1000_0000;
/// The largest value a compressed signed integer can hold (`2^28 - 1`).
pub const MAX_COMPRESSED_I32: i32 = 0x0FFF_FFFF;

/// Metadata table number of `TypeDef` (the high byte of a TypeDef token).
pub const TABLE_TYPE_DEF: u8 = 0x02;
/// Metadata table number of `TypeRef`.
pub const TABLE_TYPE_REF: u8 = 0x01;
/// Metadata table number of `TypeSpec`.
pub const TABLE_TYPE_SPEC: u8 = 0x1B;

/// A forward-only cursor over a signature blob.
///
/// Every read either advances the position past the item it returns or fails with
/// [`Error::BadSignature`] whose `offset` is the position (relative to the start of the
/// slice given to [`SigReader::new`]) where the offending item starts. A failed read
/// leaves the position unspecified; callers abandon the reader on error. No read ever
/// panics or looks past the end of the slice.
#[derive(Debug, Clone)]
pub struct SigReader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> SigReader<'a> {
    /// A reader positioned at the start of `data`.
    pub fn new(data: &'a [u8]) -> Self {
        SigReader { data, pos: 0 }
    }

    /// The current offset from the start of the blob.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Moves to `pos`, a position a caller found by reading the same data (crate-internal:
    /// the fast paths that look at the bytes directly).
    #[inline]
    pub(crate) fn seek(&mut self, pos: usize) {
        self.pos = pos;
    }

    /// The number of bytes not yet read.
    pub fn remaining(&self) -> usize {
        self.data.len().saturating_sub(self.pos)
    }

    /// Whether every byte has been read.
    pub fn is_at_end(&self) -> bool {
        self.remaining() == 0
    }

    /// The whole blob this reader walks.
    pub fn data(&self) -> &'a [u8] {
        self.data
    }

    /// Fails with "trailing bytes after signature" unless every byte has been read.
    ///
    /// # Errors
    ///
    /// [`Error::BadSignature`] if bytes are left.
    pub fn expect_end(&self) -> Result<()> {
        if self.is_at_end() {
            Ok(())
        } else {
            Err(bad(self.pos, "trailing bytes after signature"))
        }
    }

    /// The next byte, without consuming it.
    ///
    /// # Errors
    ///
    /// [`Error::BadSignature`] at the end of the blob.
    pub fn peek_u8(&self) -> Result<u8> {
        self.data
            .get(self.pos)
            .copied()
            .ok_or_else(|| bad(self.pos, "unexpected end of signature"))
    }

    /// Reads one byte.
    ///
    /// # Errors
    ///
    /// [`Error::BadSignature`] at the end of the blob.
    pub fn read_u8(&mut self) -> Result<u8> {
        let b = self.peek_u8()?;
        self.pos += 1;
        Ok(b)
    }

    /// Reads a little-endian `u64` (the payload of `ELEMENT_TYPE_INTERNAL`).
    ///
    /// # Errors
    ///
    /// [`Error::BadSignature`] if fewer than 8 bytes are left.
    pub fn read_u64_le(&mut self) -> Result<u64> {
        let start = self.pos;
        let bytes: [u8; 8] = self
            .data
            .get(start..)
            .and_then(|rest| rest.get(..8))
            .and_then(|s| s.try_into().ok())
            .ok_or_else(|| bad(start, "unexpected end of signature in 8-byte value"))?;
        self.pos = start + 8;
        Ok(u64::from_le_bytes(bytes))
    }

    /// Reads a compressed unsigned integer, returning its value and encoded width
    /// (1, 2 or 4 bytes).
    fn read_compressed_raw(&mut self) -> Result<(u32, u8)> {
        let start = self.pos;
        let b0 = self.peek_u8()?;
        let (len, value) = if b0 & 0x80 == 0 {
            (1usize, u32::from(b0))
        } else if b0 & 0xC0 == 0x80 {
            let s = self
                .data
                .get(start..)
                .and_then(|r| r.get(..2))
                .ok_or_else(|| bad(start, "truncated 2-byte compressed integer"))?;
            (2, (u32::from(s[0] & 0x3F) << 8) | u32::from(s[1]))
        } else if b0 & 0xE0 == 0xC0 {
            let s = self
                .data
                .get(start..)
                .and_then(|r| r.get(..4))
                .ok_or_else(|| bad(start, "truncated 4-byte compressed integer"))?;
            (
                4,
                (u32::from(s[0] & 0x1F) << 24)
                    | (u32::from(s[1]) << 16)
                    | (u32::from(s[2]) << 8)
                    | u32::from(s[3]),
            )
        } else {
            return Err(bad(
                start,
                "invalid compressed integer lead byte (0b111xxxxx)",
            ));
        };
        self.pos = start + len;
        // `len` is 1, 2 or 4.
        Ok((value, len as u8))
    }

    /// Reads a compressed unsigned integer (`0..=0x1FFF_FFFF`). Non-canonical (wider
    /// than necessary) encodings are accepted.
    ///
    /// # Errors
    ///
    /// [`Error::BadSignature`] for a truncated integer or a lead byte `0b111xxxxx`.
    pub fn read_compressed_u32(&mut self) -> Result<u32> {
        self.read_compressed_raw().map(|(v, _)| v)
    }

    /// Reads a compressed signed integer (II.23.2: the two's-complement value, 7, 14 or
    /// 29 bits wide, rotated left by one so the sign bit is bit 0).
    ///
    /// The width of the encoding determines the sign extension, so every byte string
    /// decodes to exactly one value and [`write_compressed_i32`] reproduces canonical
    /// input byte for byte.
    ///
    /// # Errors
    ///
    /// [`Error::BadSignature`] for a truncated integer or a lead byte `0b111xxxxx`.
    pub fn read_compressed_i32(&mut self) -> Result<i32> {
        let (raw, len) = self.read_compressed_raw()?;
        let sign_mask: u32 = match len {
            1 => 0xFFFF_FFC0,
            2 => 0xFFFF_E000,
            _ => 0xF000_0000,
        };
        let magnitude = raw >> 1;
        let bits = if raw & 1 != 0 {
            magnitude | sign_mask
        } else {
            magnitude
        };
        Ok(bits as i32)
    }

    /// Reads a `TypeDefOrRefOrSpecEncoded` value and returns it as a full metadata token
    /// (`0x02xxxxxx` TypeDef, `0x01xxxxxx` TypeRef or `0x1Bxxxxxx` TypeSpec).
    ///
    /// Fails on tag 3 and on row numbers wider than a token's 24 bits. Row 0 (a nil
    /// token) is accepted and returned as is: it is meaningless but harmless to carry,
    /// and rejecting it would make such blobs impossible to round-trip.
    ///
    /// # Errors
    ///
    /// [`Error::BadSignature`] for a malformed compressed integer, tag 3, or a row wider
    /// than 24 bits.
    pub fn read_type_def_or_ref(&mut self) -> Result<u32> {
        let start = self.pos;
        let coded = self.read_compressed_u32()?;
        decode_type_def_or_ref(coded).ok_or_else(|| {
            if coded & 3 == 3 {
                bad(start, "TypeDefOrRefOrSpecEncoded with invalid table tag 3")
            } else {
                bad(start, "TypeDefOrRefOrSpecEncoded row index exceeds 24 bits")
            }
        })
    }
}

/// Builds a [`Error::BadSignature`].
pub(crate) fn bad(offset: usize, what: &'static str) -> Error {
    Error::BadSignature { offset, what }
}

/// Builds a [`Error::Unencodable`].
pub(crate) fn unencodable(what: &'static str) -> Error {
    Error::Unencodable { what }
}

/// The number of bytes [`write_compressed_u32`] emits for `value`, or `None` if it
/// exceeds [`MAX_COMPRESSED_U32`].
pub const fn compressed_u32_len(value: u32) -> Option<usize> {
    if value <= 0x7F {
        Some(1)
    } else if value <= 0x3FFF {
        Some(2)
    } else if value <= MAX_COMPRESSED_U32 {
        Some(4)
    } else {
        None
    }
}

/// Appends `value` as a compressed unsigned integer in its shortest form.
///
/// # Errors
///
/// Fails with [`Error::Unencodable`] (writing nothing) if `value` exceeds
/// [`MAX_COMPRESSED_U32`].
pub fn write_compressed_u32(value: u32, out: &mut Vec<u8>) -> Result<()> {
    match compressed_u32_len(value) {
        Some(1) => out.push(value as u8),
        Some(2) => out.extend_from_slice(&((value as u16) | 0x8000).to_be_bytes()),
        Some(_) => out.extend_from_slice(&(value | 0xC000_0000).to_be_bytes()),
        None => {
            return Err(unencodable(
                "compressed unsigned integer exceeds 0x1FFFFFFF",
            ));
        }
    }
    Ok(())
}

/// Appends `value` as a compressed signed integer in its shortest form (1 byte for
/// `-64..=63`, 2 bytes for `-8192..=8191`, otherwise 4 bytes).
///
/// # Errors
///
/// Fails with [`Error::Unencodable`] (writing nothing) if `value` lies outside
/// [`MIN_COMPRESSED_I32`]`..=`[`MAX_COMPRESSED_I32`].
pub fn write_compressed_i32(value: i32, out: &mut Vec<u8>) -> Result<()> {
    let bits: u32 = if (-0x40..0x40).contains(&value) {
        7
    } else if (-0x2000..0x2000).contains(&value) {
        14
    } else if (MIN_COMPRESSED_I32..=MAX_COMPRESSED_I32).contains(&value) {
        29
    } else {
        return Err(unencodable("compressed signed integer out of range"));
    };
    let mask = (1u32 << bits) - 1;
    let raw = (((value as u32) << 1) & mask) | u32::from(value < 0);
    // The width is fixed by the value's range, not by `raw`: e.g. -8192 is `0x80 0x01`.
    match bits {
        7 => out.push(raw as u8),
        14 => out.extend_from_slice(&((raw as u16) | 0x8000).to_be_bytes()),
        _ => out.extend_from_slice(&(raw | 0xC000_0000).to_be_bytes()),
    }
    Ok(())
}

/// Converts a `TypeDefOrRefOrSpecEncoded` value (row << 2 | tag) to a metadata token,
/// or `None` for tag 3 or a row wider than 24 bits.
pub const fn decode_type_def_or_ref(coded: u32) -> Option<u32> {
    let row = coded >> 2;
    if row > 0x00FF_FFFF {
        return None;
    }
    let table = match coded & 3 {
        0 => TABLE_TYPE_DEF,
        1 => TABLE_TYPE_REF,
        2 => TABLE_TYPE_SPEC,
        _ => return None,
    };
    Some(((table as u32) << 24) | row)
}

/// Converts a TypeDef, TypeRef or TypeSpec token to its `TypeDefOrRefOrSpecEncoded`
/// value, or `None` for a token of any other table.
pub const fn encode_type_def_or_ref(token: u32) -> Option<u32> {
    let tag = match (token >> 24) as u8 {
        TABLE_TYPE_DEF => 0,
        TABLE_TYPE_REF => 1,
        TABLE_TYPE_SPEC => 2,
        _ => return None,
    };
    Some(((token & 0x00FF_FFFF) << 2) | tag)
}

/// Appends a TypeDef, TypeRef or TypeSpec token in `TypeDefOrRefOrSpecEncoded` form.
///
/// # Errors
///
/// Fails with [`Error::Unencodable`] (writing nothing) for a token of any other table.
pub fn write_type_def_or_ref(token: u32, out: &mut Vec<u8>) -> Result<()> {
    let coded = encode_type_def_or_ref(token)
        .ok_or_else(|| unencodable("token is not a TypeDef, TypeRef or TypeSpec"))?;
    write_compressed_u32(coded, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc_u(v: u32) -> Vec<u8> {
        let mut out = Vec::new();
        write_compressed_u32(v, &mut out).unwrap();
        out
    }

    fn enc_i(v: i32) -> Vec<u8> {
        let mut out = Vec::new();
        write_compressed_i32(v, &mut out).unwrap();
        out
    }

    fn dec_u(b: &[u8]) -> Result<(u32, usize)> {
        let mut r = SigReader::new(b);
        let v = r.read_compressed_u32()?;
        Ok((v, r.position()))
    }

    fn dec_i(b: &[u8]) -> Result<(i32, usize)> {
        let mut r = SigReader::new(b);
        let v = r.read_compressed_i32()?;
        Ok((v, r.position()))
    }

    #[test]
    fn unsigned_spec_examples_and_boundaries() {
        let cases: &[(u32, &[u8])] = &[
            (0x00, &[0x00]),
            (0x03, &[0x03]),
            (0x7F, &[0x7F]),
            (0x80, &[0x80, 0x80]),
            (0x2E57, &[0xAE, 0x57]),
            (0x3FFF, &[0xBF, 0xFF]),
            (0x4000, &[0xC0, 0x00, 0x40, 0x00]),
            (0x1FFF_FFFF, &[0xDF, 0xFF, 0xFF, 0xFF]),
        ];
        for &(v, bytes) in cases {
            assert_eq!(enc_u(v), bytes, "encode {v:#x}");
            assert_eq!(dec_u(bytes).unwrap(), (v, bytes.len()), "decode {v:#x}");
            assert_eq!(compressed_u32_len(v), Some(bytes.len()));
        }
        let mut out = vec![0xAA];
        assert_eq!(
            write_compressed_u32(0x2000_0000, &mut out),
            Err(Error::Unencodable {
                what: "compressed unsigned integer exceeds 0x1FFFFFFF"
            })
        );
        assert_eq!(out, [0xAA], "nothing written on error");
        assert_eq!(compressed_u32_len(u32::MAX), None);
    }

    #[test]
    fn unsigned_non_canonical_accepted() {
        assert_eq!(dec_u(&[0x80, 0x05]).unwrap(), (5, 2));
        assert_eq!(dec_u(&[0xC0, 0x00, 0x00, 0x05]).unwrap(), (5, 4));
        assert_eq!(enc_u(5), [0x05]);
    }

    #[test]
    fn unsigned_errors() {
        assert!(matches!(
            dec_u(&[]),
            Err(Error::BadSignature { offset: 0, .. })
        ));
        assert!(matches!(
            dec_u(&[0x80]),
            Err(Error::BadSignature { offset: 0, .. })
        ));
        assert!(matches!(
            dec_u(&[0xC0, 0, 0]),
            Err(Error::BadSignature { offset: 0, .. })
        ));
        assert!(matches!(
            dec_u(&[0xE0, 0, 0, 0]),
            Err(Error::BadSignature { offset: 0, .. })
        ));
        assert!(matches!(
            dec_u(&[0xFF]),
            Err(Error::BadSignature { offset: 0, .. })
        ));
        let mut r = SigReader::new(&[0x01, 0x80]);
        r.read_compressed_u32().unwrap();
        assert_eq!(
            r.read_compressed_u32(),
            Err(Error::BadSignature {
                offset: 1,
                what: "truncated 2-byte compressed integer"
            })
        );
    }

    #[test]
    fn signed_spec_examples_and_boundaries() {
        let cases: &[(i32, &[u8])] = &[
            (3, &[0x06]),
            (-3, &[0x7B]),
            (64, &[0x80, 0x80]),
            (-64, &[0x01]),
            (63, &[0x7E]),
            (-65, &[0xBF, 0x7F]),
            (8191, &[0xBF, 0xFE]),
            (8192, &[0xC0, 0x00, 0x40, 0x00]),
            (-8192, &[0x80, 0x01]),
            (-8193, &[0xDF, 0xFF, 0xBF, 0xFF]),
            (268_435_455, &[0xDF, 0xFF, 0xFF, 0xFE]),
            (-268_435_456, &[0xC0, 0x00, 0x00, 0x01]),
            (0, &[0x00]),
            (-1, &[0x7F]),
        ];
        for &(v, bytes) in cases {
            assert_eq!(enc_i(v), bytes, "encode {v}");
            assert_eq!(dec_i(bytes).unwrap(), (v, bytes.len()), "decode {v}");
        }
        let mut out = Vec::new();
        assert!(write_compressed_i32(MAX_COMPRESSED_I32 + 1, &mut out).is_err());
        assert!(write_compressed_i32(MIN_COMPRESSED_I32 - 1, &mut out).is_err());
        assert!(write_compressed_i32(i32::MIN, &mut out).is_err());
        assert!(out.is_empty());
    }

    #[test]
    fn signed_exhaustive_small_range() {
        for v in -20_000..20_000 {
            let b = enc_i(v);
            assert_eq!(dec_i(&b).unwrap(), (v, b.len()));
        }
    }

    #[test]
    fn type_def_or_ref() {
        let cases: &[(u32, &[u8])] = &[
            (0x0200_0001, &[0x04]),
            (0x0100_0001, &[0x05]),
            (0x1B00_0001, &[0x06]),
            (0x0100_0012, &[0x49]),
            (0x0100_0020, &[0x80, 0x81]),
            (0x0200_1000, &[0xC0, 0x00, 0x40, 0x00]),
            (0x1BFF_FFFF, &[0xC3, 0xFF, 0xFF, 0xFE]),
            (0x0200_0000, &[0x00]),
        ];
        for &(tok, bytes) in cases {
            let mut out = Vec::new();
            write_type_def_or_ref(tok, &mut out).unwrap();
            assert_eq!(out, bytes, "encode {tok:#x}");
            let mut r = SigReader::new(bytes);
            assert_eq!(r.read_type_def_or_ref().unwrap(), tok);
            assert!(r.is_at_end());
        }
        let mut out = Vec::new();
        assert!(write_type_def_or_ref(0x0600_0001, &mut out).is_err());
        assert!(out.is_empty());
        assert_eq!(
            SigReader::new(&[0x07]).read_type_def_or_ref(),
            Err(Error::BadSignature {
                offset: 0,
                what: "TypeDefOrRefOrSpecEncoded with invalid table tag 3"
            })
        );
        assert_eq!(
            SigReader::new(&[0xC4, 0x00, 0x00, 0x00]).read_type_def_or_ref(),
            Err(Error::BadSignature {
                offset: 0,
                what: "TypeDefOrRefOrSpecEncoded row index exceeds 24 bits"
            })
        );
    }

    #[test]
    fn reader_basics() {
        let mut r = SigReader::new(&[1, 2, 3, 4, 5, 6, 7, 8, 9]);
        assert_eq!(r.peek_u8().unwrap(), 1);
        assert_eq!(r.read_u8().unwrap(), 1);
        assert_eq!(r.read_u64_le().unwrap(), 0x0908_0706_0504_0302);
        assert!(r.is_at_end());
        assert!(r.expect_end().is_ok());
        assert!(r.read_u8().is_err());
        let mut r = SigReader::new(&[1, 2, 3]);
        assert_eq!(
            r.read_u64_le(),
            Err(Error::BadSignature {
                offset: 0,
                what: "unexpected end of signature in 8-byte value"
            })
        );
        assert_eq!(
            SigReader::new(&[0]).expect_end(),
            Err(Error::BadSignature {
                offset: 0,
                what: "trailing bytes after signature"
            })
        );
    }
}

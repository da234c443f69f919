//! The four metadata heaps (ECMA-335 §II.24.2.2-24.2.5): `#Strings`, `#Blob`, `#US` and
//! `#GUID`.
//!
//! Each heap is a borrowed view plus the file offset of its first byte. Lookups are
//! bounds checked and never allocate; errors are [`Error::BadPe`] whose offset is the
//! file offset where the requested item starts (heap start + index, which may lie past
//! the heap when the index is out of range).

use super::read::{bad_pe, compressed_u32_at};
use crate::error::{Error, Result};

/// The `#Strings` heap: NUL-terminated UTF-8 strings addressed by byte index.
#[derive(Debug, Clone, Copy, Default)]
pub struct StringsHeap<'a> {
    data: &'a [u8],
    file_offset: usize,
}

impl<'a> StringsHeap<'a> {
    /// Wraps heap bytes that start at `file_offset` in the file.
    pub fn new(data: &'a [u8], file_offset: usize) -> Self {
        StringsHeap { data, file_offset }
    }

    /// The heap's bytes.
    pub fn data(&self) -> &'a [u8] {
        self.data
    }

    /// File offset of the heap's first byte.
    pub fn file_offset(&self) -> usize {
        self.file_offset
    }

    /// The bytes of the string at `index`, without its NUL terminator.
    ///
    /// Index 0 is the empty string even when the heap is absent.
    ///
    /// # Errors
    ///
    /// [`Error::BadPe`] when `index` is past the heap or the string has no terminator
    /// inside the heap.
    pub fn get_bytes(&self, index: u32) -> Result<&'a [u8]> {
        let at = self.file_offset.saturating_add(index as usize);
        if index == 0 && self.data.is_empty() {
            return Ok(&[]);
        }
        let tail = self
            .data
            .get(index as usize..)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| bad_pe(at, "string index past the end of #Strings"))?;
        let len = tail
            .iter()
            .position(|&b| b == 0)
            .ok_or_else(|| bad_pe(at, "string in #Strings has no NUL terminator"))?;
        Ok(&tail[..len])
    }

    /// The string at `index` as UTF-8.
    ///
    /// # Errors
    ///
    /// [`Error::BadPe`] as [`get_bytes`](Self::get_bytes), and when the bytes are not
    /// valid UTF-8.
    pub fn get(&self, index: u32) -> Result<&'a str> {
        let bytes = self.get_bytes(index)?;
        std::str::from_utf8(bytes).map_err(|e| {
            bad_pe(
                self.file_offset
                    .saturating_add(index as usize)
                    .saturating_add(e.valid_up_to()),
                "invalid UTF-8 in #Strings",
            )
        })
    }
}

/// The `#Blob` heap: byte strings with a compressed length prefix, by byte index.
#[derive(Debug, Clone, Copy, Default)]
pub struct BlobHeap<'a> {
    data: &'a [u8],
    file_offset: usize,
}

/// The three error messages of a length-prefixed heap.
struct PrefixedHeapErrors {
    past_end: &'static str,
    bad_prefix: &'static str,
    overrun: &'static str,
}

const BLOB_ERRORS: PrefixedHeapErrors = PrefixedHeapErrors {
    past_end: "index past the end of #Blob",
    bad_prefix: "bad length prefix in #Blob",
    overrun: "blob runs past the end of #Blob",
};

const US_ERRORS: PrefixedHeapErrors = PrefixedHeapErrors {
    past_end: "index past the end of #US",
    bad_prefix: "bad length prefix in #US",
    overrun: "string runs past the end of #US",
};

/// Reads the length-prefixed item at `index` of a blob-shaped heap (`#Blob` or `#US`).
fn prefixed_item<'a>(
    data: &'a [u8],
    file_offset: usize,
    index: u32,
    errors: &PrefixedHeapErrors,
) -> Result<&'a [u8]> {
    let at = file_offset.saturating_add(index as usize);
    if index == 0 && data.is_empty() {
        return Ok(&[]);
    }
    let i = index as usize;
    if i >= data.len() {
        return Err(bad_pe(at, errors.past_end));
    }
    let (len, hdr) = compressed_u32_at(data, i).ok_or_else(|| bad_pe(at, errors.bad_prefix))?;
    let start = i + hdr;
    start
        .checked_add(len as usize)
        .and_then(|end| data.get(start..end))
        .ok_or_else(|| bad_pe(at, errors.overrun))
}

impl<'a> BlobHeap<'a> {
    /// Wraps heap bytes that start at `file_offset` in the file.
    pub fn new(data: &'a [u8], file_offset: usize) -> Self {
        BlobHeap { data, file_offset }
    }

    /// The heap's bytes.
    pub fn data(&self) -> &'a [u8] {
        self.data
    }

    /// File offset of the heap's first byte.
    pub fn file_offset(&self) -> usize {
        self.file_offset
    }

    /// The blob at `index`, without its length prefix.
    ///
    /// Index 0 is the empty blob even when the heap is absent.
    ///
    /// # Errors
    ///
    /// [`Error::BadPe`] when `index` is past the heap, the length prefix is malformed, or
    /// the blob runs past the heap.
    pub fn get(&self, index: u32) -> Result<&'a [u8]> {
        prefixed_item(self.data, self.file_offset, index, &BLOB_ERRORS)
    }

    /// File offset of the first content byte of the blob at `index` (after its prefix).
    pub fn content_offset(&self, index: u32) -> Option<usize> {
        let (_, hdr) = compressed_u32_at(self.data, index as usize)?;
        Some(self.file_offset + index as usize + hdr)
    }
}

/// The `#US` heap: UTF-16 user strings (the operands of `ldstr`), by byte index.
#[derive(Debug, Clone, Copy, Default)]
pub struct UserStringsHeap<'a> {
    data: &'a [u8],
    file_offset: usize,
}

/// One `#US` entry: UTF-16LE code units followed (normally) by one flag byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct UserString<'a> {
    /// The UTF-16LE bytes (always an even count).
    pub utf16: &'a [u8],
    /// The trailing byte: 1 when some character needs more than 8-bit handling, else 0.
    /// `None` when the entry's length was even (no trailing byte, a non-standard file).
    pub trailing: Option<u8>,
}

impl UserString<'_> {
    /// The UTF-16 code units.
    pub fn code_units(&self) -> impl ExactSizeIterator<Item = u16> + '_ {
        self.utf16
            .chunks_exact(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
    }

    /// Number of UTF-16 code units.
    pub fn len(&self) -> usize {
        self.utf16.len() / 2
    }

    /// Whether the string is empty.
    pub fn is_empty(&self) -> bool {
        self.utf16.is_empty()
    }

    /// Decodes to a `String`, replacing unpaired surrogates with U+FFFD (user strings
    /// may legally hold any UTF-16 sequence).
    pub fn to_string_lossy(&self) -> String {
        char::decode_utf16(self.code_units())
            .map(|r| r.unwrap_or(char::REPLACEMENT_CHARACTER))
            .collect()
    }
}

impl<'a> UserStringsHeap<'a> {
    /// Wraps heap bytes that start at `file_offset` in the file.
    pub fn new(data: &'a [u8], file_offset: usize) -> Self {
        UserStringsHeap { data, file_offset }
    }

    /// The heap's bytes.
    pub fn data(&self) -> &'a [u8] {
        self.data
    }

    /// File offset of the heap's first byte.
    pub fn file_offset(&self) -> usize {
        self.file_offset
    }

    /// The user string at byte `index` (the low 24 bits of an `ldstr` token).
    ///
    /// # Errors
    ///
    /// [`Error::BadPe`] as [`BlobHeap::get`].
    pub fn get(&self, index: u32) -> Result<UserString<'a>> {
        let raw = prefixed_item(self.data, self.file_offset, index, &US_ERRORS)?;
        Ok(if raw.len() % 2 == 1 {
            let (utf16, last) = raw.split_at(raw.len() - 1);
            UserString {
                utf16,
                trailing: last.first().copied(),
            }
        } else {
            UserString {
                utf16: raw,
                trailing: None,
            }
        })
    }
}

/// The `#GUID` heap: 16-byte GUIDs addressed by 1-based index.
#[derive(Debug, Clone, Copy, Default)]
pub struct GuidHeap<'a> {
    data: &'a [u8],
    file_offset: usize,
}

impl<'a> GuidHeap<'a> {
    /// Wraps heap bytes that start at `file_offset` in the file.
    pub fn new(data: &'a [u8], file_offset: usize) -> Self {
        GuidHeap { data, file_offset }
    }

    /// The heap's bytes.
    pub fn data(&self) -> &'a [u8] {
        self.data
    }

    /// File offset of the heap's first byte.
    pub fn file_offset(&self) -> usize {
        self.file_offset
    }

    /// Number of whole GUIDs in the heap.
    pub fn len(&self) -> usize {
        self.data.len() / 16
    }

    /// Whether the heap holds no GUID.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The GUID at 1-based `index` in its on-disk byte order; `None` for index 0 (the
    /// null GUID).
    ///
    /// # Errors
    ///
    /// [`Error::BadPe`] when the entry lies past the heap.
    pub fn get(&self, index: u32) -> Result<Option<&'a [u8; 16]>> {
        if index == 0 {
            return Ok(None);
        }
        let start = (index as usize - 1).checked_mul(16);
        start
            .and_then(|s| self.data.get(s..s.checked_add(16)?))
            .and_then(|b| b.try_into().ok())
            .map(Some)
            .ok_or_else(|| Error::BadPe {
                offset: start.map_or(usize::MAX, |s| self.file_offset.saturating_add(s)),
                what: "GUID index past the end of #GUID",
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings() {
        let h = StringsHeap::new(b"\0abc\0d\xffe\0tail", 100);
        assert_eq!(h.get(0).unwrap(), "");
        assert_eq!(h.get(1).unwrap(), "abc");
        assert_eq!(h.get(2).unwrap(), "bc");
        assert_eq!(
            h.get(5),
            Err(Error::BadPe {
                offset: 106,
                what: "invalid UTF-8 in #Strings"
            })
        );
        assert!(h.get(9).is_err()); // no terminator
        assert!(h.get(100).is_err());
        assert!(h.get(u32::MAX).is_err());
        assert_eq!(StringsHeap::default().get(0).unwrap(), "");
        assert!(StringsHeap::default().get(1).is_err());
    }

    #[test]
    fn blobs() {
        let h = BlobHeap::new(&[0, 3, 1, 2, 3, 0x80, 0x02, 9, 9, 0x05, 1], 0);
        assert_eq!(h.get(0).unwrap(), &[] as &[u8]);
        assert_eq!(h.get(1).unwrap(), &[1, 2, 3]);
        assert_eq!(h.get(5).unwrap(), &[9, 9]);
        assert!(h.get(9).is_err()); // runs past the end
        assert!(h.get(11).is_err());
        assert_eq!(h.content_offset(1), Some(2));
        let bad = BlobHeap::new(&[0, 0xE0, 0, 0, 0], 0);
        assert!(bad.get(1).is_err());
    }

    #[test]
    fn user_strings() {
        let h = UserStringsHeap::new(&[0, 5, b'h', 0, b'i', 0, 0, 2, 0x3D, 0xD8], 0);
        let s = h.get(1).unwrap();
        assert_eq!(s.to_string_lossy(), "hi");
        assert_eq!(s.trailing, Some(0));
        assert_eq!(s.len(), 2);
        let odd = h.get(7).unwrap();
        assert_eq!(odd.trailing, None);
        assert_eq!(odd.to_string_lossy(), "\u{FFFD}");
    }

    #[test]
    fn guids() {
        let mut d = [0u8; 32];
        d[16] = 7;
        let h = GuidHeap::new(&d, 0);
        assert_eq!(h.get(0).unwrap(), None);
        assert_eq!(h.get(2).unwrap().unwrap()[0], 7);
        assert!(h.get(3).is_err());
        assert!(h.get(u32::MAX).is_err());
    }
}

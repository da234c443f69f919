//! [`Guid`]: a COM CLSID or a runtime cookie, as the protocol sends it.

use std::fmt;

/// A GUID: a profiler's CLSID, or the cookie a runtime answers ProcessInfo with.
///
/// On the wire it is the 16 bytes of the Windows `GUID` structure: `data1` (u32),
/// `data2` and `data3` (u16), each little-endian, then the 8 bytes of `data4` in order
/// ([`Guid::to_bytes`], [`Guid::from_bytes`]). Displayed in registry form,
/// `{0B5C3F2A-7D41-4E8B-9A6C-2E1F4D7B8C93}` (upper-case hex, braces).
///
/// This is the diagnostics module's own type, so that it needs nothing of the `clr`
/// feature; a `clr::sys::Guid` converts with [`Guid::from_fields`] from its four
/// public fields.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Guid {
    /// The first 8 hex digits.
    pub data1: u32,
    /// The next 4 hex digits.
    pub data2: u16,
    /// The next 4 hex digits.
    pub data3: u16,
    /// The last 16 hex digits, as bytes in the order written.
    pub data4: [u8; 8],
}

/// Why a string is not a GUID: [`Guid::parse`] accepts only
/// `XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX` (hex digits of either case), with or without
/// braces around it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("not a GUID of the form {{XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX}}")]
pub struct ParseGuidError;

impl Guid {
    /// The GUID of these fields (as a `clr::sys::Guid` holds them).
    pub const fn from_fields(data1: u32, data2: u16, data3: u16, data4: [u8; 8]) -> Guid {
        Guid {
            data1,
            data2,
            data3,
            data4,
        }
    }

    /// Parses the registry form, `{XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX}`, braces optional.
    ///
    /// # Errors
    ///
    /// [`ParseGuidError`] for anything else (other lengths, misplaced dashes, a character
    /// that is not a hex digit, one brace without the other).
    pub fn parse(s: &str) -> Result<Guid, ParseGuidError> {
        let inner = match (s.strip_prefix('{'), s.strip_suffix('}')) {
            (Some(_), Some(_)) if s.len() >= 2 => &s[1..s.len() - 1],
            (None, None) => s,
            _ => return Err(ParseGuidError),
        };
        let b = inner.as_bytes();
        if b.len() != 36 || [8, 13, 18, 23].iter().any(|&i| b[i] != b'-') {
            return Err(ParseGuidError);
        }
        let hex = |start: usize, len: usize| -> Result<u64, ParseGuidError> {
            b[start..start + len].iter().try_fold(0u64, |acc, &c| {
                let digit = (c as char).to_digit(16).ok_or(ParseGuidError)?;
                Ok((acc << 4) | u64::from(digit))
            })
        };
        let tail = (hex(19, 4)? << 48) | hex(24, 12)?;
        Ok(Guid {
            data1: hex(0, 8)? as u32,
            data2: hex(9, 4)? as u16,
            data3: hex(14, 4)? as u16,
            data4: tail.to_be_bytes(),
        })
    }

    /// The 16 bytes the protocol sends: `data1`, `data2`, `data3` little-endian, then
    /// `data4`.
    pub fn to_bytes(&self) -> [u8; 16] {
        let mut bytes = [0u8; 16];
        bytes[0..4].copy_from_slice(&self.data1.to_le_bytes());
        bytes[4..6].copy_from_slice(&self.data2.to_le_bytes());
        bytes[6..8].copy_from_slice(&self.data3.to_le_bytes());
        bytes[8..16].copy_from_slice(&self.data4);
        bytes
    }

    /// The GUID whose protocol bytes are `bytes` (the inverse of [`Guid::to_bytes`]).
    pub fn from_bytes(bytes: [u8; 16]) -> Guid {
        let [a0, a1, a2, a3, b0, b1, c0, c1, d @ ..] = bytes;
        Guid {
            data1: u32::from_le_bytes([a0, a1, a2, a3]),
            data2: u16::from_le_bytes([b0, b1]),
            data3: u16::from_le_bytes([c0, c1]),
            data4: d,
        }
    }
}

impl fmt::Display for Guid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = &self.data4;
        write!(
            f,
            "{{{:08X}-{:04X}-{:04X}-{:02X}{:02X}-{:02X}{:02X}{:02X}{:02X}{:02X}{:02X}}}",
            self.data1, self.data2, self.data3, d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]
        )
    }
}

impl fmt::Debug for Guid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::str::FromStr for Guid {
    type Err = ParseGuidError;

    fn from_str(s: &str) -> Result<Guid, ParseGuidError> {
        Guid::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_displays_and_round_trips_bytes() {
        let text = "{0B5C3F2A-7D41-4E8B-9A6C-2E1F4D7B8C93}";
        let guid = Guid::parse(text).unwrap();
        assert_eq!(guid.to_string(), text);
        assert_eq!(Guid::parse(&text[1..37]).unwrap(), guid);
        assert_eq!(Guid::parse(&text.to_lowercase()).unwrap(), guid);
        let bytes = guid.to_bytes();
        assert_eq!(bytes[..4], [0x2A, 0x3F, 0x5C, 0x0B]);
        assert_eq!(bytes[8..], [0x9A, 0x6C, 0x2E, 0x1F, 0x4D, 0x7B, 0x8C, 0x93]);
        assert_eq!(Guid::from_bytes(bytes), guid);
    }

    #[test]
    fn refuses_other_shapes() {
        for bad in [
            "",
            "{}",
            "{0B5C3F2A-7D41-4E8B-9A6C-2E1F4D7B8C93",
            "0B5C3F2A-7D41-4E8B-9A6C-2E1F4D7B8C93}",
            "0B5C3F2A-7D41-4E8B-9A6C-2E1F4D7B8C9",
            "0B5C3F2A+7D41-4E8B-9A6C-2E1F4D7B8C93",
            "0B5C3F2G-7D41-4E8B-9A6C-2E1F4D7B8C93",
            "{0B5C3F2A-7D41-4E8B-9A6C-2E1F4D7B8C93}}",
            "é",
        ] {
            assert_eq!(Guid::parse(bad), Err(ParseGuidError), "{bad:?}");
        }
    }
}

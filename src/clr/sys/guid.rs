//! [`Guid`]: the COM `GUID` (`IID`, `CLSID`), parsed from and shown in registry form.

use core::fmt;
use core::str::FromStr;

/// A COM GUID (`GUID`, `IID`, `CLSID`), laid out as in C.
///
/// Displayed in registry form, `{XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX}` (upper case);
/// [`Guid::parse`] reads that form with or without the braces, in either case.
#[repr(C)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
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

/// Why a string is not a GUID in registry form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParseGuidError;

impl fmt::Display for ParseGuidError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("not a GUID of the form {XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX}")
    }
}

impl std::error::Error for ParseGuidError {}

/// The value of one hex digit.
const fn hex_digit(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// The number written by `s[start..start + len]` in hex (`len` <= 16).
const fn hex_field(s: &[u8], start: usize, len: usize) -> Option<u64> {
    let mut value = 0u64;
    let mut i = start;
    while i < start + len {
        match hex_digit(s[i]) {
            Some(d) => value = (value << 4) | d as u64,
            None => return None,
        }
        i += 1;
    }
    Some(value)
}

impl Guid {
    /// `{00000000-0000-0000-0000-000000000000}`.
    pub const NIL: Guid = Guid::new(0, 0, 0, [0; 8]);

    /// A GUID from its four fields, as `DEFINE_GUID` writes it.
    pub const fn new(data1: u32, data2: u16, data3: u16, data4: [u8; 8]) -> Guid {
        Guid {
            data1,
            data2,
            data3,
            data4,
        }
    }

    /// Parses the registry form, with or without braces; `None` if `s` is not one.
    const fn parse_bytes(s: &[u8]) -> Option<Guid> {
        let (start, len) = match s {
            [b'{', .., b'}'] => (1, s.len() - 2),
            _ => (0, s.len()),
        };
        if len != 36 {
            return None;
        }
        // Dashes after 8, 13, 18 and 23 characters.
        let dashes = [8, 13, 18, 23];
        let mut i = 0;
        while i < dashes.len() {
            if s[start + dashes[i]] != b'-' {
                return None;
            }
            i += 1;
        }
        let (Some(d1), Some(d2), Some(d3)) = (
            hex_field(s, start, 8),
            hex_field(s, start + 9, 4),
            hex_field(s, start + 14, 4),
        ) else {
            return None;
        };
        let mut data4 = [0u8; 8];
        let mut b = 0;
        while b < 8 {
            // Two bytes before the last dash, six after it.
            let at = if b < 2 {
                start + 19 + 2 * b
            } else {
                start + 24 + 2 * (b - 2)
            };
            match hex_field(s, at, 2) {
                Some(v) => data4[b] = v as u8,
                None => return None,
            }
            b += 1;
        }
        Some(Guid::new(d1 as u32, d2 as u16, d3 as u16, data4))
    }

    /// Parses `{XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX}` (braces optional, hex digits in
    /// either case).
    ///
    /// # Errors
    /// [`ParseGuidError`] when `s` does not have that shape.
    pub fn parse(s: &str) -> Result<Guid, ParseGuidError> {
        Self::parse_bytes(s.as_bytes()).ok_or(ParseGuidError)
    }

    /// [`Guid::parse`] for constants: a malformed string is a compile-time error when
    /// evaluated in a `const`, a panic otherwise.
    pub const fn parse_const(s: &str) -> Guid {
        match Self::parse_bytes(s.as_bytes()) {
            Some(guid) => guid,
            None => panic!("malformed GUID literal"),
        }
    }
}

impl FromStr for Guid {
    type Err = ParseGuidError;

    fn from_str(s: &str) -> Result<Guid, ParseGuidError> {
        Guid::parse(s)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guid_round_trips_through_the_registry_form() {
        let text = "{176FBED1-A55C-4796-98CA-A9DA0EF883E7}";
        let guid = Guid::parse(text).unwrap();
        assert_eq!(
            guid,
            Guid::new(
                0x176F_BED1,
                0xA55C,
                0x4796,
                [0x98, 0xCA, 0xA9, 0xDA, 0x0E, 0xF8, 0x83, 0xE7]
            )
        );
        assert_eq!(guid.to_string(), text);
        assert_eq!(format!("{guid:?}"), text);
        // No braces, lower case.
        assert_eq!(
            Guid::parse("176fbed1-a55c-4796-98ca-a9da0ef883e7"),
            Ok(guid)
        );
        assert_eq!(
            "176FBED1-A55C-4796-98CA-A9DA0EF883E7".parse::<Guid>(),
            Ok(guid)
        );
        assert_eq!(Guid::NIL, Guid::default());
    }

    #[test]
    fn malformed_guids_are_refused() {
        for bad in [
            "",
            "{}",
            "{176FBED1-A55C-4796-98CA-A9DA0EF883E7",
            "176FBED1-A55C-4796-98CA-A9DA0EF883E7}",
            "176FBED1A55C-4796-98CA-A9DA0EF883E7-",
            "176FBED1-A55C-4796-98CAA9DA0EF883E7",
            "176FBED1-A55C-4796-98CA-A9DA0EF883E",
            "176FBED1-A55C-4796-98CA-A9DA0EF883E77",
            "176FBED1-A55C-4796-98CA-A9DA0EF883EG",
            "+76FBED1-A55C-4796-98CA-A9DA0EF883E7",
            "{176FBED1-A55C-4796-98CA-A9DA0EF883E7}}",
        ] {
            assert_eq!(Guid::parse(bad), Err(ParseGuidError), "{bad:?}");
        }
    }
}

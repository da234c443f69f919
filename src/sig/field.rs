//! Field signatures (ECMA-335 II.23.2.4): `FIELD CustomMod* Type`.
//!
//! The custom modifiers are [`TypeSig::Modified`] wrappers on the field's type. A
//! `BYREF` type is accepted (ref fields of ref structs, .NET 7+).

use crate::error::Result;
use crate::sig::compressed::{SigReader, bad};
use crate::sig::types::{Ctx, TypeSig, callconv, encode_atomic, read_type, write_type};

/// An owned field signature.
///
/// Parsing then encoding reproduces a canonical blob byte for byte; encoding then
/// parsing gives back an equal value.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FieldSig {
    /// The field's type, including any custom modifiers.
    pub ty: TypeSig,
}

impl FieldSig {
    /// Parses a blob holding exactly one field signature (first byte `0x06`); trailing
    /// bytes are an error.
    ///
    /// # Errors
    ///
    /// [`crate::Error::BadSignature`] if the blob does not start with `FIELD`, its type is
    /// malformed, or bytes follow the type; [`crate::Error::TooDeep`] for a type nested
    /// deeper than [`crate::sig::MAX_NESTING`].
    pub fn parse(blob: &[u8]) -> Result<FieldSig> {
        let mut r = SigReader::new(blob);
        let at = r.position();
        if r.read_u8()? != callconv::FIELD {
            return Err(bad(at, "field signature does not start with FIELD (0x06)"));
        }
        let ty = read_type(&mut r, 0, Ctx::PLAIN)?;
        r.expect_end()?;
        Ok(FieldSig { ty })
    }

    /// Appends this signature's encoding to `out`.
    ///
    /// # Errors
    ///
    /// Fails as [`TypeSig::encode`], leaving `out` as it was, if the type does not
    /// encode.
    pub fn encode(&self, out: &mut Vec<u8>) -> Result<()> {
        encode_atomic(out, |out| {
            out.push(callconv::FIELD);
            write_type(&self.ty, out, 0, Ctx::PLAIN)
        })
    }

    /// This signature's encoding as a new vector; see [`FieldSig::encode`].
    ///
    /// # Errors
    ///
    /// [`crate::Error::Unencodable`] if the type does not encode, as [`FieldSig::encode`].
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.encode(&mut out)?;
        Ok(out)
    }
}

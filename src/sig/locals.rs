//! Local variable signatures (ECMA-335 II.23.2.6).
//!
//! ```text
//! LocalVarSig ::= LOCAL_SIG Count (TYPEDBYREF | ([CustomMod] [PINNED])* [BYREF] Type)*
//! ```
//!
//! Each local is a [`LocalType`] wrapping one [`TypeSig`] tree in which custom
//! modifiers, `PINNED` and `BYREF` are wrapper nodes in blob order
//! ([`TypeSig::Modified`], [`TypeSig::Pinned`], [`TypeSig::ByRef`]), so any
//! interleaving of modifiers and `PINNED` round-trips exactly. The accessors on
//! [`LocalType`] answer the usual questions (pinned? by-ref? modifiers?) without
//! caring about that order.

use crate::error::{Error, Result};
use crate::sig::compressed::{SigReader, bad, unencodable, write_compressed_u32};
use crate::sig::types::{
    Ctx, TypeSig, callconv, encode_atomic, read_type, skip_type_at, write_type,
};

/// One custom modifier (`CMOD_REQD`/`CMOD_OPT` + token).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CustomMod {
    /// `CMOD_REQD` (true) or `CMOD_OPT` (false).
    pub required: bool,
    /// The modifier type's token (TypeDef, TypeRef or TypeSpec).
    pub token: u32,
}

/// The type of one local variable, including its custom modifiers, `PINNED` and
/// `BYREF` prefixes (as wrapper nodes of [`LocalType::ty`], in blob order).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LocalType {
    /// The full type tree. [`TypeSig::Pinned`] is allowed only among the leading
    /// wrappers (modifiers and `PINNED`), before any `BYREF` or element type.
    pub ty: TypeSig,
}

impl LocalType {
    /// A local of type `ty` (which may carry modifiers, `PINNED` or `BYREF` wrappers).
    pub fn new(ty: TypeSig) -> Self {
        LocalType { ty }
    }

    /// A pinned local of type `ty` (`PINNED ty`; pass `TypeSig::ByRef(..)` for the
    /// usual pinned managed reference).
    pub fn pinned(ty: TypeSig) -> Self {
        LocalType {
            ty: TypeSig::Pinned(Box::new(ty)),
        }
    }

    /// Whether a `PINNED` constraint appears among the leading wrappers.
    pub fn is_pinned(&self) -> bool {
        let mut t = &self.ty;
        loop {
            match t {
                TypeSig::Pinned(_) => return true,
                TypeSig::Modified { inner, .. } => t = inner,
                _ => return false,
            }
        }
    }

    /// Whether the local is a managed reference (`BYREF` after the leading modifiers
    /// and `PINNED`).
    pub fn is_by_ref(&self) -> bool {
        matches!(self.unwrapped(), TypeSig::ByRef(_))
    }

    /// The type under the leading custom modifiers and `PINNED` constraints (a
    /// [`TypeSig::ByRef`] for by-ref locals).
    pub fn unwrapped(&self) -> &TypeSig {
        let mut t = &self.ty;
        loop {
            match t {
                TypeSig::Pinned(inner) | TypeSig::Modified { inner, .. } => t = inner,
                _ => return t,
            }
        }
    }

    /// The leading custom modifiers (before any `BYREF` or element type), in blob
    /// order, skipping `PINNED`.
    pub fn custom_mods(&self) -> impl Iterator<Item = CustomMod> + '_ {
        let mut t = &self.ty;
        std::iter::from_fn(move || {
            loop {
                match t {
                    TypeSig::Pinned(inner) => t = inner,
                    TypeSig::Modified {
                        required,
                        token,
                        inner,
                    } => {
                        t = inner;
                        return Some(CustomMod {
                            required: *required,
                            token: *token,
                        });
                    }
                    _ => return None,
                }
            }
        })
    }
}

/// The error for a signature of `count` locals, more than [`LocalVarSig::MAX_LOCALS`].
#[cold]
fn too_many_locals(count: usize) -> Error {
    Error::TooManyLocals {
        count,
        limit: LocalVarSig::MAX_LOCALS,
    }
}

impl From<TypeSig> for LocalType {
    fn from(ty: TypeSig) -> Self {
        LocalType::new(ty)
    }
}

/// A local variable signature: the types of a method body's locals.
///
/// Holds at most [`LocalVarSig::MAX_LOCALS`] locals, each of which encodes (both
/// [`LocalVarSig::parse`] and [`LocalVarSig::push`] check this). Parsing then encoding
/// reproduces a canonical blob byte for byte; encoding then parsing gives back an
/// equal value.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct LocalVarSig {
    locals: Vec<LocalType>,
}

impl LocalVarSig {
    /// The most locals a method may have: 65,535, indices 0 to 65,534 (the runtime's
    /// limit: the JIT keeps the count in a `u16`, and `ldloc` indices are `u16`).
    pub const MAX_LOCALS: usize = 0xFFFF;

    /// A signature with no locals (encodes as `07 00`).
    pub fn empty() -> Self {
        LocalVarSig::default()
    }

    /// Builds a signature from `locals`, checking each as [`LocalVarSig::push`] does.
    ///
    /// # Errors
    ///
    /// [`crate::Error::TooManyLocals`] for more than [`LocalVarSig::MAX_LOCALS`] locals,
    /// [`crate::Error::Unencodable`] or [`crate::Error::TooDeep`] for a local that does
    /// not encode, as [`LocalVarSig::push`].
    pub fn from_locals(locals: impl IntoIterator<Item = LocalType>) -> Result<Self> {
        let mut sig = LocalVarSig::empty();
        for l in locals {
            sig.push(l)?;
        }
        Ok(sig)
    }

    /// Reads `LOCAL_SIG` and the local count, checking the count's limit.
    fn read_head(r: &mut SigReader<'_>) -> Result<usize> {
        if r.read_u8()? != callconv::LOCAL_SIG {
            return Err(bad(
                0,
                "local variable signature does not start with LOCAL_SIG (0x07)",
            ));
        }
        let count = r.read_compressed_u32()? as usize;
        if count > Self::MAX_LOCALS {
            return Err(too_many_locals(count));
        }
        Ok(count)
    }

    /// Parses a blob holding exactly one local variable signature (first byte `0x07`);
    /// trailing bytes are an error, as is a count above [`LocalVarSig::MAX_LOCALS`].
    ///
    /// # Errors
    ///
    /// [`crate::Error::BadSignature`] if the blob does not start with `LOCAL_SIG`, holds a
    /// malformed type, or has trailing bytes; [`crate::Error::TooManyLocals`] if it
    /// counts more than [`LocalVarSig::MAX_LOCALS`] locals; [`crate::Error::TooDeep`] for
    /// a type nested deeper than [`crate::sig::MAX_NESTING`].
    pub fn parse(blob: &[u8]) -> Result<Self> {
        let mut r = SigReader::new(blob);
        let count = Self::read_head(&mut r)?;
        // Every local takes at least one byte, so this bounds the allocation.
        let mut locals = Vec::with_capacity(count.min(r.remaining()));
        for _ in 0..count {
            locals.push(LocalType {
                ty: read_type(&mut r, 0, Ctx::LOCAL)?,
            });
        }
        r.expect_end()?;
        Ok(LocalVarSig { locals })
    }

    /// Appends this signature's encoding to `out`.
    ///
    /// # Errors
    ///
    /// Cannot fail for signatures built by [`LocalVarSig::parse`] or
    /// [`LocalVarSig::push`]; the `Result` is kept for uniformity with the other
    /// encoders. On failure `out` is left as it was.
    pub fn encode(&self, out: &mut Vec<u8>) -> Result<()> {
        encode_atomic(out, |out| {
            out.push(callconv::LOCAL_SIG);
            // At most MAX_LOCALS, so this fits.
            write_compressed_u32(self.locals.len() as u32, out)?;
            for l in &self.locals {
                write_type(&l.ty, out, 0, Ctx::LOCAL)?;
            }
            Ok(())
        })
    }

    /// This signature's encoding as a new vector; see [`LocalVarSig::encode`].
    ///
    /// # Errors
    ///
    /// None for signatures built by [`LocalVarSig::parse`] or [`LocalVarSig::push`], as
    /// [`LocalVarSig::encode`].
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.encode(&mut out)?;
        Ok(out)
    }

    /// The number of locals.
    pub fn len(&self) -> usize {
        self.locals.len()
    }

    /// Whether there are no locals.
    pub fn is_empty(&self) -> bool {
        self.locals.is_empty()
    }

    /// The locals, in index order.
    pub fn locals(&self) -> &[LocalType] {
        &self.locals
    }

    /// The local with index `index`, if any.
    pub fn get(&self, index: u16) -> Option<&LocalType> {
        self.locals.get(usize::from(index))
    }

    /// Byte-level [`LocalVarSig::parse`] + [`LocalVarSig::push`] + [`LocalVarSig::encode`]:
    /// appends to `out` the signature `blob` extended with one local whose type is encoded
    /// by `local_type_bytes`, and returns the new local's index. Nothing is allocated but
    /// `out`'s growth, and no local is decoded into a tree.
    ///
    /// Accepts exactly what the parse/push pair accepts, and also types nested deeper
    /// than [`crate::sig::MAX_NESTING`] (nothing is decoded into a tree, so there is no
    /// nesting limit): `blob` must be one whole LocalVarSig (every local is checked,
    /// trailing bytes are an error; `07 00` is the empty signature), `local_type_bytes`
    /// exactly one type valid as a local (as [`LocalType`] allows: custom modifiers,
    /// `PINNED`, `BYREF`; not `VOID`), and the result may hold at most
    /// [`LocalVarSig::MAX_LOCALS`] locals.
    ///
    /// The count prefix is rewritten in its shortest form; the existing locals and the
    /// new type are copied verbatim (a blob using wider-than-needed compressed integers
    /// keeps them, where [`LocalVarSig::encode`] would write them canonically).
    ///
    /// # Errors
    ///
    /// [`crate::Error::BadSignature`] for a malformed `blob`,
    /// [`crate::Error::Unencodable`] for a bad `local_type_bytes`,
    /// [`crate::Error::TooManyLocals`] when the result would hold more than
    /// [`LocalVarSig::MAX_LOCALS`] locals (also when `blob` already does). On failure
    /// `out` is left as it was.
    pub fn append_to_blob(blob: &[u8], local_type_bytes: &[u8], out: &mut Vec<u8>) -> Result<u16> {
        Self::append_all_to_blob(blob, &[local_type_bytes], out)
    }

    /// [`LocalVarSig::append_to_blob`] for several new locals at once: appends to `out`
    /// the signature `blob` extended by one local per entry of `local_types` (each
    /// exactly one type valid as a local), in order, and returns the index of the
    /// first (the index the next local would get when `local_types` is empty).
    ///
    /// # Errors
    ///
    /// Those of [`LocalVarSig::append_to_blob`], for any of the new types or for the
    /// total count. On failure `out` is left as it was.
    #[inline]
    pub fn append_all_to_blob(
        blob: &[u8],
        local_types: &[&[u8]],
        out: &mut Vec<u8>,
    ) -> Result<u16> {
        let (index, locals_start) = Self::check_append(blob, local_types)?;
        // Checked: nothing below can fail (the count is at most `MAX_LOCALS`, far below
        // the largest compressed integer).
        let count = u32::from(index) + local_types.len() as u32;
        let added: usize = local_types.iter().map(|t| t.len()).sum();
        out.reserve(blob.len() + added + 5);
        out.push(callconv::LOCAL_SIG);
        match count {
            0..0x80 => out.push(count as u8),
            0x80..0x4000 => out.extend_from_slice(&[0x80 | (count >> 8) as u8, count as u8]),
            _ => out.extend_from_slice(&(0xC000_0000 | count).to_be_bytes()),
        }
        out.extend_from_slice(&blob[locals_start..]);
        for t in local_types {
            out.extend_from_slice(t);
        }
        Ok(index)
    }

    /// The checks of [`LocalVarSig::append_to_blob`] without writing anything: returns
    /// the index the new local would get. When this succeeds, `append_to_blob` with the
    /// same arguments succeeds too.
    ///
    /// # Errors
    ///
    /// Those of [`LocalVarSig::append_to_blob`]: [`crate::Error::BadSignature`] for a
    /// malformed `blob`, [`crate::Error::Unencodable`] for a bad `local_type_bytes`,
    /// [`crate::Error::TooManyLocals`] for too many locals.
    pub fn check_append_to_blob(blob: &[u8], local_type_bytes: &[u8]) -> Result<u16> {
        Self::check_append(blob, &[local_type_bytes]).map(|(index, _)| index)
    }

    /// The first new local's index and where the existing locals start in `blob`.
    #[inline]
    fn check_append(blob: &[u8], local_types: &[&[u8]]) -> Result<(u16, usize)> {
        let mut r = SigReader::new(blob);
        let count = Self::read_head(&mut r)?;
        let locals_start = r.position();
        for _ in 0..count {
            skip_type_at(&mut r, Ctx::LOCAL)?;
        }
        r.expect_end()?;
        // `read_head` checked that `count <= MAX_LOCALS`, which fits a `u16`.
        let index = u16::try_from(count)
            .ok()
            .filter(|&i| usize::from(i) + local_types.len() <= Self::MAX_LOCALS)
            .ok_or_else(|| too_many_locals(count + local_types.len()))?;
        for local_type in local_types {
            let mut t = SigReader::new(local_type);
            if skip_type_at(&mut t, Ctx::LOCAL).is_err() || !t.is_at_end() {
                return Err(unencodable(
                    "the new local's type is not exactly one type valid for a local",
                ));
            }
        }
        Ok((index, locals_start))
    }

    /// Appends a local and returns its index (for `ldloc`/`stloc`).
    ///
    /// # Errors
    ///
    /// Fails, leaving the signature unchanged, with [`crate::Error::TooManyLocals`] if it
    /// already holds [`LocalVarSig::MAX_LOCALS`] locals, and as [`TypeSig::encode`] if
    /// `local` does not encode as a local (`PINNED` is allowed among its leading
    /// wrappers).
    pub fn push(&mut self, local: LocalType) -> Result<u16> {
        let index = u16::try_from(self.locals.len())
            .ok()
            .filter(|&i| usize::from(i) < Self::MAX_LOCALS)
            .ok_or_else(|| too_many_locals(self.locals.len() + 1))?;
        write_type(&local.ty, &mut Vec::new(), 0, Ctx::LOCAL)?;
        self.locals.push(local);
        Ok(index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sig::{MethodSig, return_type_bytes};

    /// `append_to_blob` agrees with parse + push + encode.
    fn same_as_tree(blob: &[u8], ty: &[u8]) {
        let mut fast = vec![0xAA];
        let got = LocalVarSig::append_to_blob(blob, ty, &mut fast);
        let slow = LocalVarSig::parse(blob).and_then(|mut sig| {
            let local = TypeSig::parse(ty).map_err(|_| unencodable("x"))?;
            let index = sig.push(LocalType::new(local))?;
            Ok((index, sig.to_bytes()?))
        });
        match (got, slow) {
            (Ok(i), Ok((j, bytes))) => {
                assert_eq!(i, j);
                assert_eq!(LocalVarSig::check_append_to_blob(blob, ty), Ok(i));
                assert_eq!(&fast[1..], &bytes[..]);
            }
            (Err(_), Err(_)) => {
                assert_eq!(fast, [0xAA]);
                assert!(LocalVarSig::check_append_to_blob(blob, ty).is_err());
            }
            (a, b) => panic!("{blob:02x?} + {ty:02x?}: {a:?} vs {b:?}"),
        }
    }

    #[test]
    fn append_to_blob_matches_the_tree_api() {
        let blobs: &[&[u8]] = &[
            &[0x07, 0x00],
            &[0x07, 0x01, 0x08],
            &[0x07, 0x02, 0x45, 0x10, 0x08, 0x1D, 0x0E],
            &[0x07, 0x01, 0x12, 0x05],
            &[0x07, 0x02, 0x08],
            &[0x07, 0x01, 0x08, 0x08],
            &[0x06, 0x01, 0x08],
            &[0x07],
            &[],
        ];
        let types: &[&[u8]] = &[
            &[0x08],
            &[0x10, 0x0E],
            &[0x1F, 0x09, 0x08],
            &[0x15, 0x12, 0x05, 0x01, 0x08],
            &[0x01],
            &[0x08, 0x08],
            &[],
            &[0x41],
        ];
        for b in blobs {
            for t in types {
                same_as_tree(b, t);
            }
        }
        // The count's compressed form grows from one to two bytes (0x7F + 1 locals) and
        // from two to four (0x3FFF + 1).
        let mut one_byte = vec![0x07, 0x7F];
        one_byte.extend(std::iter::repeat_n(0x08, 0x7F));
        same_as_tree(&one_byte, &[0x08]);
        let mut two_bytes = vec![0x07, 0xBF, 0xFF];
        two_bytes.extend(std::iter::repeat_n(0x08, 0x3FFF));
        same_as_tree(&two_bytes, &[0x0E]);
        // Too many locals: 65,535 is the most.
        let mut full = vec![0x07, 0xC0, 0x00, 0xFF, 0xFF];
        full.extend(std::iter::repeat_n(0x08, 0xFFFF));
        same_as_tree(&full, &[0x08]);
        let too_many = Error::TooManyLocals {
            count: 0x1_0000,
            limit: 0xFFFF,
        };
        assert_eq!(
            LocalVarSig::append_to_blob(&full, &[0x08], &mut Vec::new()),
            Err(too_many.clone())
        );
        assert_eq!(
            LocalVarSig::append_all_to_blob(&full, &[], &mut Vec::new()),
            Ok(0xFFFF)
        );
        let mut almost = vec![0x07, 0xC0, 0x00, 0xFF, 0xFE];
        almost.extend(std::iter::repeat_n(0x08, 0xFFFE));
        same_as_tree(&almost, &[0x08]);
        let mut out = Vec::new();
        assert_eq!(
            LocalVarSig::append_to_blob(&almost, &[0x08], &mut out),
            Ok(0xFFFE)
        );
        assert_eq!(out, full);
        assert_eq!(LocalVarSig::parse(&out).map(|s| s.len()), Ok(0xFFFF));
        assert_eq!(
            LocalVarSig::append_all_to_blob(&almost, &[&[0x08], &[0x0E]], &mut Vec::new()),
            Err(too_many)
        );
    }

    #[test]
    fn return_type_bytes_matches_parse() {
        let sigs: &[&[u8]] = &[
            &[0x00, 0x00, 0x08],
            &[0x20, 0x01, 0x10, 0x0E, 0x08],
            &[0x00, 0x00, 0x01],
            &[0x10, 0x01, 0x00, 0x1F, 0x09, 0x1E, 0x00],
            &[0x00, 0x01, 0x08],
            &[0x00, 0x00, 0x08, 0x08],
            &[0x07, 0x00],
        ];
        for sig in sigs {
            match (return_type_bytes(sig), MethodSig::parse(sig)) {
                (Ok(bytes), Ok(m)) => match m.return_type.to_bytes() {
                    Ok(parsed) => assert_eq!(bytes, &parsed[..]),
                    // VOID does not encode as a standalone type.
                    Err(_) => assert_eq!(bytes, [0x01]),
                },
                (Err(_), Err(_)) => {}
                (a, b) => panic!("{sig:02x?}: {a:?} vs {b:?}"),
            }
        }
    }
}

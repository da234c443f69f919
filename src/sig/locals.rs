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
#![forbid(unsafe_code)]

use crate::error::Result;
use crate::sig::compressed::{SigReader, bad, unencodable, write_compressed_u32};
use crate::sig::method::callconv;
use crate::sig::types::{Ctx, TypeSig, encode_atomic, read_type, write_type};

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
    /// The most locals a method may have (the CLR's limit; `ldloc` indices are
    /// `u16`).
    pub const MAX_LOCALS: usize = 0xFFFE;

    /// A signature with no locals (encodes as `07 00`).
    pub fn empty() -> Self {
        LocalVarSig::default()
    }

    /// Builds a signature from `locals`, checking each as [`LocalVarSig::push`] does.
    pub fn from_locals(locals: impl IntoIterator<Item = LocalType>) -> Result<Self> {
        let mut sig = LocalVarSig::empty();
        for l in locals {
            sig.push(l)?;
        }
        Ok(sig)
    }

    /// Parses a blob holding exactly one local variable signature (first byte `0x07`);
    /// trailing bytes are an error, as is a count above [`LocalVarSig::MAX_LOCALS`].
    pub fn parse(blob: &[u8]) -> Result<Self> {
        let mut r = SigReader::new(blob);
        if r.read_u8()? != callconv::LOCAL_SIG {
            return Err(bad(
                0,
                "local variable signature does not start with LOCAL_SIG (0x07)",
            ));
        }
        let at = r.position();
        let count = r.read_compressed_u32()? as usize;
        if count > Self::MAX_LOCALS {
            return Err(bad(at, "more than 65534 locals"));
        }
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

    /// Appends a local and returns its index (for `ldloc`/`stloc`).
    ///
    /// Fails with [`crate::Error::Unencodable`], leaving the signature unchanged, if it
    /// already holds [`LocalVarSig::MAX_LOCALS`] locals or `local` does not encode as
    /// a local (see [`TypeSig::encode`]; `PINNED` is allowed among its leading
    /// wrappers).
    pub fn push(&mut self, local: LocalType) -> Result<u16> {
        let index = u16::try_from(self.locals.len())
            .ok()
            .filter(|&i| usize::from(i) < Self::MAX_LOCALS)
            .ok_or_else(|| unencodable("more than 65534 locals"))?;
        write_type(&local.ty, &mut Vec::new(), 0, Ctx::LOCAL)?;
        self.locals.push(local);
        Ok(index)
    }
}

//! Method signatures (ECMA-335 II.23.2.1–3): MethodDefSig, MethodRefSig and
//! StandAloneMethodSig, all represented by [`MethodSig`].
//!
//! ```text
//! MethodSig ::= CallConv [GenParamCount] ParamCount RetType Param* [SENTINEL Param+]
//! ```
//!
//! The first byte holds the calling convention kind in its low nibble (see
//! [`CallingConvention`]) and the flags `GENERIC` (0x10), `HASTHIS` (0x20) and
//! `EXPLICITTHIS` (0x40). `ParamCount` counts every parameter, fixed and vararg, but not
//! the `SENTINEL`. [`MethodSig::sentinel`] records where the sentinel sits, so vararg
//! call-site signatures round-trip exactly. Following II.23.2.2 a sentinel must be
//! followed by at least one parameter; a trailing sentinel is rejected (it would be
//! ambiguous inside a function-pointer type).
//!
//! The parser is lenient where the CLR is: the flags combine freely, and a sentinel is
//! accepted whatever the calling convention. It is strict about structure: unknown
//! calling-convention kinds, bit 0x80, `GENERIC` with zero generic parameters and
//! trailing bytes are errors.
//!
//! [`summarize_method_sig`] gives the facts stack analysis needs without allocating.

use crate::error::Result;
use crate::sig::compressed::SigReader;
pub use crate::sig::types::{CallingConvention, MethodSig, MethodSigSummary, callconv};
use crate::sig::types::{
    Ctx, TypeSig, compressed_at, encode_atomic, read_method_sig, skip_method_sig,
    skip_method_sig_spanning, skip_plain_type, write_method_sig,
};

impl MethodSig {
    /// A static, non-generic, managed (`DEFAULT`) signature without sentinel.
    pub fn new(return_type: TypeSig, params: Vec<TypeSig>) -> Self {
        MethodSig {
            calling_convention: CallingConvention::Default,
            has_this: false,
            explicit_this: false,
            generic_param_count: 0,
            return_type,
            params,
            sentinel: None,
        }
    }

    /// Parses a blob holding exactly one method signature; trailing bytes are an error.
    ///
    /// # Errors
    ///
    /// [`crate::Error::BadSignature`] for a malformed signature (see the [module
    /// documentation](self)) or trailing bytes.
    pub fn parse(blob: &[u8]) -> Result<MethodSig> {
        let mut r = SigReader::new(blob);
        let m = MethodSig::read(&mut r)?;
        r.expect_end()?;
        Ok(m)
    }

    /// Reads one method signature, leaving `r` just past it.
    ///
    /// # Errors
    ///
    /// [`crate::Error::BadSignature`] for a malformed signature.
    pub fn read(r: &mut SigReader<'_>) -> Result<MethodSig> {
        read_method_sig(r, 0)
    }

    /// Appends this signature's encoding to `out`.
    ///
    /// # Errors
    ///
    /// Any flag combination encodes. Fails with [`crate::Error::Unencodable`] (or
    /// [`crate::Error::TooDeep`] when nesting exceeds [`crate::sig::MAX_NESTING`]), leaving
    /// `out` as it was, if a type does not encode (see [`TypeSig::encode`]; the return
    /// type may additionally be `VOID`), a count exceeds 0x1FFF_FFFF, or `sentinel` is
    /// not below `params.len()`.
    pub fn encode(&self, out: &mut Vec<u8>) -> Result<()> {
        encode_atomic(out, |out| write_method_sig(self, out, 0))
    }

    /// This signature's encoding as a new vector; see [`MethodSig::encode`].
    ///
    /// # Errors
    ///
    /// [`crate::Error::Unencodable`] where [`MethodSig::encode`] fails.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.encode(&mut out)?;
        Ok(out)
    }

    /// The parameters before the sentinel (all of them if there is none).
    pub fn fixed_params(&self) -> &[TypeSig] {
        let split = self.sentinel.unwrap_or(self.params.len());
        self.params.get(..split).unwrap_or(&self.params)
    }

    /// The parameters after the sentinel (empty if there is none).
    pub fn vararg_params(&self) -> &[TypeSig] {
        let split = self.sentinel.unwrap_or(self.params.len());
        self.params.get(split..).unwrap_or(&[])
    }

    /// The same facts [`summarize_method_sig`] reports for this signature's encoding.
    ///
    /// `param_count` saturates at `u32::MAX` (such a signature would not encode).
    pub fn summary(&self) -> MethodSigSummary {
        MethodSigSummary {
            calling_convention: self.calling_convention,
            has_this: self.has_this,
            explicit_this: self.explicit_this,
            generic_param_count: self.generic_param_count,
            param_count: u32::try_from(self.params.len()).unwrap_or(u32::MAX),
            returns_value: !matches!(self.return_type.strip_modifiers(), TypeSig::Void),
        }
    }
}

impl MethodSigSummary {
    /// The number of arguments a `call`/`callvirt`/`calli` pops: the parameters plus an
    /// implicit `this` (`HASTHIS` without `EXPLICITTHIS`). For `newobj`, which pushes
    /// the new object instead of popping it, subtract one for the implicit `this`.
    pub fn arg_count(&self) -> u32 {
        // `param_count <= 0x1FFF_FFFF` when it comes from a blob; saturate otherwise.
        self.param_count
            .saturating_add(u32::from(self.has_this && !self.explicit_this))
    }
}

/// Validates a method signature blob and summarizes it without allocating.
///
/// Accepts exactly the blobs [`MethodSig::parse`] accepts (every parameter type is
/// checked, and trailing bytes are an error), and also types nested deeper than
/// [`crate::sig::MAX_NESTING`] (it does not recurse: there is no nesting limit), and
/// reports the same facts as [`MethodSig::summary`] would.
///
/// # Errors
///
/// [`crate::Error::BadSignature`] where [`MethodSig::parse`] fails with it.
pub fn summarize_method_sig(blob: &[u8]) -> Result<MethodSigSummary> {
    if let Some((s, _)) = summarize_plain(blob) {
        return Ok(s);
    }
    let mut r = SigReader::new(blob);
    let s = skip_method_sig(&mut r)?;
    r.expect_end()?;
    Ok(s)
}

/// The bytes of a method signature's return type (with its custom modifiers, and `BYREF`
/// if any), without allocating.
///
/// Accepts exactly the blobs [`MethodSig::parse`] accepts (the whole signature is
/// checked, trailing bytes are an error), and also types nested deeper than
/// [`crate::sig::MAX_NESTING`], as [`summarize_method_sig`]; the slice is what
/// [`MethodSig::return_type`] was parsed from, byte for byte (so compressed tokens keep
/// whatever width the blob used).
///
/// # Errors
///
/// [`crate::Error::BadSignature`] where [`MethodSig::parse`] fails with it.
pub fn return_type_bytes(blob: &[u8]) -> Result<&[u8]> {
    summarize_method_sig_and_return_type(blob).map(|(_, ret)| ret)
}

/// [`summarize_method_sig`] and [`return_type_bytes`] in one walk over the blob.
///
/// # Errors
///
/// [`crate::Error::BadSignature`] where [`MethodSig::parse`] fails with it.
#[inline]
pub fn summarize_method_sig_and_return_type(blob: &[u8]) -> Result<(MethodSigSummary, &[u8])> {
    if let Some((s, ret)) = summarize_plain(blob) {
        return Ok((s, &blob[ret]));
    }
    let mut r = SigReader::new(blob);
    let (summary, ret) = skip_method_sig_spanning(&mut r)?;
    r.expect_end()?;
    // The range was just read from `blob`.
    Ok((summary, blob.get(ret).unwrap_or_default()))
}

/// The common case of [`summarize_method_sig_and_return_type`] without a reader: a whole
/// blob whose types all have the shapes [`skip_plain_type`] knows, without a sentinel.
/// `None` for anything else, valid or not (the reader-based walk then decides, and
/// reports the error); where it answers, the walk would give the same answer.
#[inline]
fn summarize_plain(blob: &[u8]) -> Option<(MethodSigSummary, std::ops::Range<usize>)> {
    let b = *blob.first()?;
    if b & 0x80 != 0 {
        return None;
    }
    let calling_convention = CallingConvention::from_kind(b & callconv::KIND_MASK)?;
    let mut pos = 1;
    let generic_param_count = if b & callconv::GENERIC != 0 {
        let (n, end) = compressed_at(blob, pos)?;
        if n == 0 {
            return None;
        }
        pos = end;
        n
    } else {
        0
    };
    let (param_count, end) = compressed_at(blob, pos)?;
    let ret_start = end;
    let (mut pos, returns_void) = skip_plain_type(blob, ret_start, Ctx::RET)?;
    let ret = ret_start..pos;
    // Each parameter takes at least one byte, so a huge count ends at the blob's end. A
    // SENTINEL is no type, so `skip_plain_type` gives up on it.
    for _ in 0..param_count {
        pos = skip_plain_type(blob, pos, Ctx::PLAIN)?.0;
    }
    if pos != blob.len() {
        return None;
    }
    let summary = MethodSigSummary {
        calling_convention,
        has_this: b & callconv::HASTHIS != 0,
        explicit_this: b & callconv::EXPLICITTHIS != 0,
        generic_param_count,
        param_count,
        returns_value: !returns_void,
    };
    Some((summary, ret))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reader-based walk of [`summarize_method_sig_and_return_type`].
    fn walked(blob: &[u8]) -> Result<(MethodSigSummary, std::ops::Range<usize>)> {
        let mut r = SigReader::new(blob);
        let got = skip_method_sig_spanning(&mut r)?;
        r.expect_end()?;
        Ok(got)
    }

    /// Wherever [`summarize_plain`] answers, the walk gives the same summary and return
    /// type, over many pseudo-random signature-like blobs; and it does answer for the
    /// usual shapes.
    #[test]
    fn plain_summary_agrees_with_the_walk() {
        const BYTES: &[u8] = &[
            0x00, 0x01, 0x02, 0x03, 0x05, 0x07, 0x08, 0x0E, 0x0F, 0x10, 0x11, 0x12, 0x13, 0x14,
            0x15, 0x1C, 0x1D, 0x1E, 0x1F, 0x20, 0x30, 0x41, 0x45, 0x80, 0xC0, 0xFF,
        ];
        let mut answered = 0usize;
        let mut check = |blob: &[u8]| {
            if let Some(fast) = summarize_plain(blob) {
                answered += 1;
                assert_eq!(walked(blob), Ok(fast.clone()), "{blob:02x?}");
                assert_eq!(
                    summarize_method_sig_and_return_type(blob),
                    Ok((fast.0, &blob[fast.1]))
                );
            }
        };
        for mut blob in crate::sig::test_blobs(0x9E37_79B9_7F4A_7C15, 300_000, 2, 24, BYTES) {
            // Mostly small parameter counts, so that whole signatures occur.
            blob[1] &= 0x03;
            check(&blob);
        }
        for blob in [
            &[0x20, 0x00, 0x01][..],
            &[0x00, 0x02, 0x08, 0x0E, 0x12, 0x49],
            &[0x30, 0x01, 0x01, 0x1E, 0x00, 0x10, 0x1E, 0x00],
            &[
                0x20, 0x01, 0x15, 0x12, 0x80, 0x85, 0x01, 0x13, 0x00, 0x0F, 0x01,
            ],
        ] {
            check(blob);
        }
        assert!(answered > 1000, "{answered}");
    }
}

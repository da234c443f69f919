//! Signature blobs (ECMA-335 Partition II §23.2): decode, edit and re-encode.
//!
//! * [`compressed`]: compressed integers and `TypeDefOrRefOrSpecEncoded` tokens, and
//!   the [`SigReader`] cursor the parsers share.
//! * [`types`]: the type grammar, [`TypeSig`], and with it the grammar of method
//!   signatures ([`MethodSig`]), which a function-pointer type contains.
//! * [`method`]: method signatures, [`MethodSig`], and the allocation-free
//!   [`summarize_method_sig`] used on every call instruction.
//! * [`field`]: field signatures, [`FieldSig`].
//! * [`locals`]: local variable signatures, [`LocalVarSig`].
//!
//! Dependencies run one way: [`compressed`] needs nothing of the other modules;
//! [`types`] builds on it; [`method`], [`field`] and [`locals`] build on both and not on
//! each other. The grammar is recursive (a `FNPTR` type holds a method signature, whose
//! parameters are types), so the data types and the read, skip and write walks of both
//! types and method signatures live together in [`types`]; [`method`] adds the public
//! API of [`MethodSig`] and the summaries, and re-exports the method-signature items
//! defined in [`types`] under their usual paths.
//!
//! Guarantees common to all parsers: malformed input yields
//! [`Error::BadSignature`](crate::Error::BadSignature) with the offset in the blob,
//! never a panic; a tree nests at most [`MAX_NESTING`] levels (deeper input yields
//! [`Error::TooDeep`](crate::Error::TooDeep)), and the walks that skip types without a
//! tree ([`skip_type`], [`summarize_method_sig`], [`return_type_bytes`],
//! [`LocalVarSig::append_to_blob`]) loop rather than recurse, at any depth; no
//! allocation is sized by an unchecked count from the input; a whole-blob `parse`
//! rejects trailing bytes.
//!
//! Guarantees common to all encoders: values that encode parse back equal, and parsed
//! canonical blobs re-encode byte for byte. Compressed integers are always written in
//! their shortest form, so a blob using a wider form than needed (which the parsers
//! accept, as the CLR does) re-encodes canonically, i.e. shorter. A failing encoder
//! returns [`Error::Unencodable`](crate::Error::Unencodable) (or
//! [`Error::TooDeep`](crate::Error::TooDeep), [`Error::TooManyLocals`](crate::Error::TooManyLocals)
//! for the limits) and leaves its output buffer as it was.

pub mod compressed;
pub mod field;
pub mod locals;
pub mod method;
pub mod text;
pub mod types;

pub use compressed::{
    MAX_COMPRESSED_I32, MAX_COMPRESSED_U32, MIN_COMPRESSED_I32, SigReader, compressed_u32_len,
    decode_type_def_or_ref, encode_type_def_or_ref, write_compressed_i32, write_compressed_u32,
    write_type_def_or_ref,
};
pub use field::FieldSig;
pub use locals::{CustomMod, LocalType, LocalVarSig};
pub use method::{
    CallingConvention, MethodSig, MethodSigSummary, return_type_bytes, summarize_method_sig,
    summarize_method_sig_and_return_type,
};
pub use types::{ArrayType, MAX_NESTING, TypeSig, element_type, skip_type};

/// Pseudo-random signature-like blobs for the tests that hold a fast path to the full
/// walk: `count` blobs whose bytes come from `alphabet` (xorshift from `seed`), the
/// `n`-th of length `min_len + n % spread`.
#[cfg(test)]
pub(crate) fn test_blobs(
    seed: u64,
    count: usize,
    min_len: usize,
    spread: usize,
    alphabet: &[u8],
) -> impl Iterator<Item = Vec<u8>> + '_ {
    let mut x = seed;
    (0..count).map(move |n| {
        (0..min_len + n % spread)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                alphabet[(x % alphabet.len() as u64) as usize]
            })
            .collect()
    })
}

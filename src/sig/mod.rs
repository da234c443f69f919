//! Signature blobs (ECMA-335 Partition II §23.2): decode, edit and re-encode.
//!
//! * [`compressed`]: compressed integers and `TypeDefOrRefOrSpecEncoded` tokens, and
//!   the [`SigReader`] cursor the parsers share.
#![forbid(unsafe_code)]

pub mod compressed;

pub use compressed::{
    MAX_COMPRESSED_I32, MAX_COMPRESSED_U32, MIN_COMPRESSED_I32, SigReader, compressed_u32_len,
    decode_type_def_or_ref, encode_type_def_or_ref, write_compressed_i32, write_compressed_u32,
    write_type_def_or_ref,
};

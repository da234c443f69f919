//! ilrewrite: decode, edit, analyse and re-encode .NET IL method bodies.
#![cfg_attr(not(feature = "clr"), forbid(unsafe_code))]
#![warn(missing_docs)]

pub mod error;
#[cfg(feature = "pe")]
pub mod pe;

pub use error::{Error, Result};

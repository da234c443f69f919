//! Whole-body transforms built on the editing API: single-ret, fat-header conversion,
//! try/finally wrapping, prologue and epilogue injection.
//!
//! Transforms never recompute the max stack; run [`crate::analysis`] afterwards (the
//! usual pipeline is transform -> max stack -> encode -> IL map).

mod inject;
mod single_ret;
mod wrap;

pub use inject::{inject_epilogue, inject_prologue};
pub use single_ret::{Returns, SingleRet, single_ret};
pub use wrap::{CatchRethrow, WrapOptions, Wrapped, wrap_try_finally};
// Used by `audit` (feature `pe`).
#[cfg(all(test, feature = "pe"))]
pub(crate) use wrap::wrap_scanned_stored_linked;
#[cfg(feature = "pe")]
pub(crate) use wrap::{CodeScan, StoredCode, wrap_scanned_stored};

use crate::body::MethodBody;

/// Converts the body to a fat header: every later encoding uses a fat header, even where
/// a tiny one would be legal (so EH clauses and locals can be added freely).
pub fn to_fat_header(body: &mut MethodBody) {
    body.force_fat_header();
}

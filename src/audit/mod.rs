//! Whole-assembly checks: run the codec, the analyses and the transforms over every
//! method body of an assembly and report what happened. The corpus tests and the
//! examples use them; they are public so that users can check this crate against their
//! own assemblies before trusting it in production.

mod rewrite;
mod roundtrip;

pub use rewrite::{
    ENTER_HOOK, EXIT_HOOK, HookResolver, NEW_LOCALS_TOKEN, Outcome, RETURN_HOOK, RewriteReport,
    instrument, rewrite_assembly,
};
pub use roundtrip::{RoundTripReport, round_trip_assembly};

use std::fmt;

/// One method whose round trip failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// Assembly the method is in (file name or module name).
    pub assembly: String,
    /// MethodDef token (0 when the failure is not about one method).
    pub token: u32,
    /// What went wrong.
    pub error: String,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} 0x{:08x}: {}", self.assembly, self.token, self.error)
    }
}

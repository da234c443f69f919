//! Test support for `ilrewrite`, not part of the library users depend on: whole-assembly
//! checks that run the codec, the analyses and the instrumentation over every method
//! body of an assembly and report what happened, with made-up hook tokens. The corpus
//! tests, the command-line tool, the examples and the benchmarks use them; a user can
//! run them against their own assemblies (`ilrewrite roundtrip PATH...`, from `cli/`)
//! before trusting the crate in production.

mod rewrite;
mod roundtrip;

pub use rewrite::{
    ENTER_HOOK, EXIT_HOOK, HookResolver, NEW_LOCALS_TOKEN, Outcome, RETURN_HOOK, RewriteReport,
    hook_instrumenter, instrument, rewrite_assembly,
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

//! Floor 5, rewriting: [`JitRewriter`] rewrites methods as the JIT compiles them, with
//! per-module state ([`ModuleState`]) and typed outcomes ([`RewriteOutcome`]). Safe code
//! only: everything it asks of the runtime goes through the floors below.
#![forbid(unsafe_code)]

mod jit;
mod states;

pub use jit::{JitRewriter, MethodRewrite, ModuleState, PHASES, RewriteOutcome};

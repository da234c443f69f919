//! Floor 5, the rewrite engine: one method at a time, from a value to a value. The
//! [`Engine`](engine::Engine) takes a target (a first JIT, or a ReJIT version with its
//! function control and flags) and a method plan (the edit steps, in order) and runs the
//! pipeline (claim, read, decode, the plan's edits, verify, locals, encode, hand over,
//! map) through the target's delivery, returning a typed outcome ([`RewriteOutcome`],
//! [`Failure`] with its [`Phase`]) and the steps it rolled back. It keeps the per-module
//! state that lives as long as its module ([`ModuleState`], in a registry without fixed
//! capacity). [`JitRewriter`] is the single-method path on top of it, for a profiler that
//! rewrites methods itself. Safe code only: everything it asks of the runtime goes
//! through the floors below.
#![forbid(unsafe_code)]

pub(crate) mod clock;
mod delivery;
pub(crate) mod edits;
pub(crate) mod engine;
mod instrumentation;
pub(crate) mod items;
mod jit;
mod method_rewrite;
pub(crate) mod module;
mod native_call;
mod outcome;
pub(crate) mod pipeline;
mod registry;
mod states;

pub use instrumentation::Instrumentation;
pub use jit::{Filter, Inlining, JitRewriter};
pub use method_rewrite::MethodRewrite;
pub use module::ModuleState;
pub use native_call::{NativeCall, NativeFunction, NativeReturn, NativeType};
pub use outcome::{Failure, FailureCause, Phase, RewriteOutcome};

#[cfg(test)]
pub(crate) mod pipeline_tests;

//! Floor 5, rewriting: the pipeline that rewrites one method (claim, read, decode, edit,
//! verify, locals, encode, hand over), separate from where its IL comes from and goes to
//! ([`Delivery`]; first JIT: [`FirstJit`]); [`JitRewriter`], which runs it in
//! `JITCompilationStarted`; per-module state that lives as long as its module
//! ([`ModuleState`], in a registry without fixed capacity); typed outcomes
//! ([`RewriteOutcome`], [`Failure`] with its [`Phase`]). Safe code only: everything it
//! asks of the runtime goes through the floors below.
#![forbid(unsafe_code)]

mod delivery;
mod instrumentation;
pub(crate) mod items;
pub(crate) mod jit;
pub(crate) mod module;
mod native_call;
pub(crate) mod outcome;
pub(crate) mod pipeline;
mod registry;
mod states;

pub use delivery::{Delivery, FirstJit, ReJitDelivery};
pub use instrumentation::Instrumentation;
pub use jit::{Filter, Inlining, JitRewriter};
pub use module::ModuleState;
pub use native_call::{NativeCall, NativeFunction, NativeReturn, NativeType};
pub use outcome::{Failure, FailureCause, Phase, RewriteOutcome};
pub use pipeline::{MethodRewrite, PHASES};

#[cfg(test)]
pub(crate) mod pipeline_tests;

//! Whole-body transforms built on the editing API: single-ret, try/finally wrapping,
//! prologue and epilogue injection, [`Instrumenter`], which does all of method
//! entry/exit instrumentation for many bodies, and [`CallTarget`], managed begin/end
//! hooks that take the arguments by reference (fat-header conversion is
//! [`crate::MethodBody::force_fat_header`]).
//!
//! The transforms of the editing API never recompute the max stack; run
//! [`crate::analysis`] afterwards (the usual pipeline is transform -> max stack ->
//! encode -> IL map). [`Instrumenter`] and [`CallTarget`] compute it exactly and set it.

mod call_target;
mod inject;
mod instrument;
mod return_local;
mod returns;
mod single_ret;
mod snippet;
mod tail_call;
mod wrap;

pub use call_target::{CallTarget, CallTargetApplied, CallTargetHooks, HookSignatures, HookTypes};
pub use inject::{inject_epilogue, inject_prologue};
pub use instrument::{InstrumentationCode, Instrumented, Instrumenter, MethodContext};
pub use return_local::ReturnLocal;
pub use returns::Returns;
pub use single_ret::{SingleRet, single_ret};
pub use snippet::{Label, Snippet, SnippetBuilder};
pub use tail_call::TailCallPolicy;
pub use wrap::{CatchRethrow, WrapOptions, Wrapped, wrap_try_finally};

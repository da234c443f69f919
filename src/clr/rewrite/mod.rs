//! Floor 5, rewriting: the pipeline that rewrites one method (claim, read, decode, edit,
//! verify, locals, encode, hand over), separate from where its IL comes from and goes to
//! ([`Delivery`]; first JIT: [`FirstJit`]); [`JitRewriter`], which runs it in
//! `JITCompilationStarted`; per-module state that lives as long as its module
//! ([`ModuleState`], in a registry without fixed capacity); typed outcomes
//! ([`RewriteOutcome`], [`Failure`] with its [`Phase`]). Safe code only: everything it
//! asks of the runtime goes through the floors below.
#![forbid(unsafe_code)]

#[cfg(unix)]
pub mod control;
mod delivery;
mod instrumentation;
mod items;
mod jit;
mod manager;
mod module;
mod native_call;
mod outcome;
mod pipeline;
mod registry;
mod rejit;
mod states;

pub use delivery::{Delivery, FirstJit, ReJitDelivery};
pub use instrumentation::Instrumentation;
pub use jit::{Filter, Inlining, JitRewriter};
pub use manager::{
    Candidate, Change, ConfigError, Configuration, Events, EventsHandle, InliningCallers,
    InstrumentationMethod, Interest, Manager, ManagerCounts, MethodEdit, MethodEntry, ModuleLoad,
    OptionKind, OptionSpec, Options, Plan, Position, ReJitControl, ReJitCounts, Request, Start,
};
pub use module::ModuleState;
pub use native_call::{NativeCall, NativeFunction, NativeReturn, NativeType};
pub use outcome::{Failure, FailureCause, Phase, RewriteOutcome};
pub use pipeline::{MethodRewrite, PHASES};
pub use rejit::{
    FailedAt, IlTarget, MethodKey, MethodRecord, ReJitBatch, ReJitCall, ReJitFailure, ReJitMachine,
    ReJitParameters, ReJitStage, ReloadPolicy,
};

#[cfg(test)]
mod pipeline_tests;

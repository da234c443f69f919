//! ReJIT: changing what running methods execute. The state machine ([`ReJitMachine`]) that
//! tracks, per method, what the profiler wants and where the runtime stands.
#![forbid(unsafe_code)]

mod machine;

pub use machine::MethodKey;
pub(crate) use machine::{FailedAt, IlTarget, ReJitMachine, ReJitStage};

#[cfg(test)]
mod machine_tests;

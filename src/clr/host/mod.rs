//! The manager of instrumentation methods: several rewriters sharing one profiler
//! ([`Manager`]), each an [`InstrumentationMethod`] with its events, subscriptions,
//! module-load step, interest check, edit and data items, chosen and configured by a
//! [`Configuration`] file.
#![forbid(unsafe_code)]

mod added;
mod attach;
mod callbacks;
mod change;
mod config;
#[cfg(unix)]
mod dial;
mod events;
mod first_jit;
mod hosting;
mod initialize;
mod manager;
mod method;
mod plan;
mod ready_to_run;
mod rejit;
mod rejit_control;
mod report;
mod routing;

pub use attach::{Attachable, ClientData};
pub use change::{Change, ChangeError};
pub use config::{
    ConfigError, Configuration, MethodEntry, OptionKind, OptionSpec, Options, Position,
};
pub use events::{Events, EventsHandle};
pub use initialize::Arrival;
pub use manager::Manager;
pub use method::{
    Candidate, InstrumentationMethod, Interest, LibraryLoader, MethodEdit, MethodError, ModuleLoad,
    Start,
};
pub use plan::InliningCallers;
pub use ready_to_run::ReadyToRun;
pub use rejit::ReJitCounts;
pub use rejit_control::ReJitControl;
pub use report::ManagerCounts;

#[cfg(test)]
mod rejit_tests;
#[cfg(test)]
mod tests;

//! The manager of instrumentation methods: several rewriters sharing one profiler
//! ([`Manager`]), each an [`InstrumentationMethod`] with its events, subscriptions,
//! module-load step, interest check, edit and data items.

mod compose;
mod config;
mod host;
mod method;

pub use config::{
    ConfigError, Configuration, MethodEntry, OptionKind, OptionSpec, Options, Position,
};
pub use host::{Manager, ManagerCounts};
pub use method::{
    Candidate, Events, InstrumentationMethod, Interest, MethodEdit, ModuleLoad, Start,
};

#[cfg(test)]
mod tests;

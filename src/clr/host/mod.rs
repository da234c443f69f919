//! The manager of instrumentation methods: several rewriters sharing one profiler
//! ([`Manager`]), each an [`InstrumentationMethod`] with its events, subscriptions,
//! module-load step, interest check, edit and data items, chosen and configured by a
//! [`Configuration`] file.
//!
//! An instrumentation method that doubles the `int32` result of the methods named in its
//! option `method`, and a profiler hosting it with what a configuration file asks:
//!
//! ```no_run
//! use std::sync::{Arc, OnceLock};
//! use ilrewrite::body::MethodBody;
//! use ilrewrite::clr::{
//!     Candidate, Configuration, InstrumentationMethod, Interest, Manager, MethodEdit, MethodError,
//!     OptionKind, OptionSpec, Profiler, Start,
//! };
//! use ilrewrite::disasm::method_name;
//! use ilrewrite::graph::Incoming;
//! use ilrewrite::{Instruction, OpCode};
//!
//! #[derive(Default)]
//! struct Double {
//!     method: OnceLock<String>,
//! }
//!
//! impl Profiler for Double {} // the callbacks it subscribes to: none
//!
//! impl InstrumentationMethod for Double {
//!     fn name(&self) -> &str {
//!         "double"
//!     }
//!     fn options(&self) -> &[OptionSpec] {
//!         const OPTIONS: [OptionSpec; 1] = [OptionSpec::new("method", OptionKind::String)];
//!         &OPTIONS
//!     }
//!     fn start(&self, start: &Start<'_>) -> Result<(), MethodError> {
//!         let method = start.options().string("method").ok_or("`method` is required")?;
//!         let _ = self.method.set(method.to_owned());
//!         Ok(())
//!     }
//!     fn wants(&self, candidate: &Candidate<'_>) -> Interest {
//!         let name = method_name(candidate.module().metadata(), candidate.token());
//!         match self.method.get() == Some(&format!("{}::{}", name.owner, name.name)) {
//!             true => Interest::Edit,
//!             false => Interest::No,
//!         }
//!     }
//!     fn edit(&self, body: &mut MethodBody, _: &mut MethodEdit<'_, '_>) -> ilrewrite::Result<bool> {
//!         // Assumes an int32 result (MethodEdit::method().signature() tells).
//!         let rets: Vec<_> = body.instrs.opcodes().filter(|(_, op)| *op == OpCode::Ret).collect();
//!         for &(ret, _) in &rets {
//!             // Redirect: a branch to the `ret` runs the multiplication too.
//!             body.insert_before(ret, Instruction::ldc_i4(2), Incoming::Redirect)?;
//!             body.insert_before(ret, Instruction::simple(OpCode::Mul), Incoming::Keep)?;
//!         }
//!         Ok(!rets.is_empty())
//!     }
//! }
//!
//! fn profiler() -> Manager {
//!     let offered: Vec<Arc<dyn InstrumentationMethod>> = vec![Arc::new(Double::default())];
//!     let Some(path) = std::env::var_os("MY_PROFILER_CONFIG") else {
//!         return Manager::new(); // hosts nothing, asks for no event
//!     };
//!     Configuration::read(path.as_ref())
//!         .and_then(|configuration| Manager::configured(&configuration, &offered))
//!         .unwrap_or_else(|error| {
//!             eprintln!("my-profiler: {error}; nothing is rewritten"); // file:line:column: ...
//!             Manager::new()
//!         })
//! }
//!
//! ilrewrite::export_profiler!(clsid = "{1D2E3F40-5A6B-4C7D-8E9F-A0B1C2D3E4F5}", profiler = profiler);
//! ```
#![forbid(unsafe_code)]

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
mod rejit;
mod rejit_control;
mod report;
mod routing;

pub use change::{Change, ChangeError};
pub use config::{
    ConfigError, Configuration, MethodEntry, OptionKind, OptionSpec, Options, Position,
};
pub use events::{Events, EventsHandle};
pub use manager::Manager;
pub use method::{
    Candidate, InstrumentationMethod, Interest, MethodEdit, MethodError, ModuleLoad, Start,
};
pub use plan::InliningCallers;
pub use rejit::ReJitCounts;
pub use rejit_control::ReJitControl;
pub use report::ManagerCounts;

#[cfg(test)]
mod rejit_tests;
#[cfg(test)]
mod tests;

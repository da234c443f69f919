//! What a ReJIT request asks of the methods it selects ([`Change`]), and why one was not
//! made ([`ChangeError`]).

use super::config::ConfigError;
use super::method::MethodError;
use crate::clr::runtime::{ClrError, CodegenFlags};
use crate::clr::sys::ModuleID;
use crate::selector::Selector;

/// What a request asks of the methods it selects.
#[derive(Debug, Clone)]
pub enum Change {
    /// Run the configured instrumentation and `method` with `options` (checked against
    /// what it declares and accepted by its
    /// [`check_options`](super::InstrumentationMethod::check_options)), compiled with `flags`.
    Instrument {
        /// The instrumentation method's name.
        method: String,
        /// Its options as `key=value` words.
        options: Vec<(String, String)>,
        /// The code-generation flags.
        flags: CodegenFlags,
    },
    /// Back to what the first JIT gives them: the configured instrumentation, no flags.
    Configured,
    /// The file's own IL, no instrumentation at all.
    File,
    /// What they are wanted to run now, with these flags.
    Flags(CodegenFlags),
}

/// Why a change was not made ([`ReJitControl::apply`](super::ReJitControl::apply)): nothing was changed, except
/// for [`ChangeError::NotMadeInTime`] (the change is made later).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ChangeError {
    /// No hosted instrumentation method has this name.
    #[error("unknown instrumentation method {name:?} (this profiler runs {})", hosted.join(", "))]
    UnknownMethod {
        /// The name asked for.
        name: String,
        /// The names it hosts, in editing order.
        hosted: Vec<String>,
    },
    /// Options the instrumentation method does not declare, or of another type.
    #[error("{}", .0.message)]
    Options(ConfigError),
    /// Options its [`check_options`](super::InstrumentationMethod::check_options)
    /// refuses (or panicked on).
    #[error("{name} refuses these options: {why}")]
    OptionsRefused {
        /// The instrumentation method.
        name: String,
        /// Its reason.
        why: MethodError,
    },
    /// A selected method's module unloaded since it was selected.
    #[error("module {0:#x} is no longer loaded; nothing was changed")]
    ModuleUnloaded(ModuleID),
    /// A selector that names no method of a loaded module.
    #[error("no loaded module has a method {0}; nothing was changed")]
    NothingSelected(Selector),
    /// An empty selection.
    #[error("no loaded method is selected")]
    NoMethod,
    /// The runtime does not give a selected method's module.
    #[error("module {module:#x}: {source}; nothing was changed")]
    Module {
        /// The module.
        module: ModuleID,
        /// The runtime's answer.
        source: ClrError,
    },
    /// The runtime's `Shutdown` arrived: no request reaches it any more.
    #[error("the profiler is shutting down")]
    ShuttingDown,
    /// The runtime's calls were not made within this many seconds (the change is made
    /// later).
    #[error("the runtime calls were not made within {0} s")]
    NotMadeInTime(u64),
    /// An instrumentation method of this name runs already (configured or added).
    #[error("an instrumentation method {0:?} runs already; nothing was changed")]
    NameTaken(String),
    /// No instrumentation method of this name was added while the program runs (a
    /// configured one cannot be removed).
    #[error("no instrumentation method {0:?} was added; nothing was changed")]
    NotAdded(String),
    /// The instrumentation method to add did not start (or its library did not load).
    #[error("{name} did not start: {why}; nothing was changed")]
    DidNotStart {
        /// Its name (or its library's path).
        name: String,
        /// Why.
        why: String,
    },
    /// This profiler loads no instrumentation method libraries
    /// ([`Manager::with_library_loader`](super::Manager::with_library_loader)).
    #[error("this profiler loads no instrumentation method libraries; nothing was changed")]
    NoLoader,
    /// The runtime refused to detach the profiler.
    #[error("the runtime does not detach the profiler: {0}; its methods were reverted")]
    Detach(#[source] crate::clr::runtime::ClrError),
    /// The instrumentation method needs what only one configured at start can have:
    /// callbacks or runtime events (fixed once the runtime started) or targets (found
    /// as modules load).
    #[error("{name} cannot be added while the program runs: {why}; nothing was changed")]
    CannotBeAdded {
        /// Its name.
        name: String,
        /// What it needs.
        why: String,
    },
}

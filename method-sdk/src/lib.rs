//! Write an ilrewrite instrumentation method in Rust and ship it as a shared library of
//! its own: a `cdylib` that any profiler built on the `ilrewrite` crate loads through
//! the C ABI of `include/ilrewrite_method.h` (version 1), as it loads one written in C.
//!
//! This crate does not depend on `ilrewrite`: it declares the header's types itself
//! ([`sys`], checked against the header by a test) and wraps them in a safe API:
//!
//! * implement [`Method`] (name, priority, the options it takes, `start`, `wants`,
//!   `edit`);
//! * export it with [`export_method!`], which defines the library's two symbols
//!   (`ilrewrite_abi_version` and `ilrewrite_method_create`), keeps the strings of the
//!   table it gives the host alive until the host is done with it, and catches every
//!   panic at the boundary (nothing unwinds into the host: a panic becomes
//!   `ILR_E_FAILED` with its message);
//! * the host lends [`Options`], a [`Candidate`] and an [`Edit`] for the length of one
//!   call; their functions answer `Result<_, Status>`.
//!
//! ```no_run
//! use ilrewrite_method::{Edit, Error, Instruction, Method, Candidate, element_type, opcode};
//!
//! /// Negates the int32 result of every method it is asked about.
//! struct Negate;
//!
//! impl Method for Negate {
//!     fn name(&self) -> &str {
//!         "negate"
//!     }
//!     fn wants(&self, _candidate: &Candidate<'_>) -> bool {
//!         true
//!     }
//!     fn edit(&self, edit: &mut Edit<'_>) -> Result<bool, Error> {
//!         if edit.return_type()? != element_type::I4 {
//!             return Ok(false);
//!         }
//!         edit.insert_before_returns(&[Instruction::new(opcode::NEG)])?;
//!         Ok(true)
//!     }
//! }
//!
//! ilrewrite_method::export_method!(|| Negate);
//! ```
//!
//! Build it with `crate-type = ["cdylib"]` and name the library in the profiler's
//! configuration (`library = "path/to/libnegate.so"`).
//!
//! Threading: the host calls [`Method::wants`] and [`Method::edit`] on many threads at
//! once, so a method is `Send + Sync` and does its own locking (a `OnceLock` for what
//! `start` reads, typically).
#![warn(clippy::undocumented_unsafe_blocks)]

mod callback;
mod code;
#[doc(hidden)]
pub mod export;
mod host;
mod status;
pub mod sys;

use std::borrow::Cow;

pub use callback::{CallbackId, Callbacks, Events};
pub use code::{Incoming, Instruction, InstructionId, Operand, element_type, opcode};
pub use host::{Candidate, Edit, Instructions, Options};
pub use status::{Error, Status};

/// The kind of an option's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OptionKind {
    /// A 64-bit integer ([`Options::integer`]).
    Integer,
    /// `true` or `false` ([`Options::boolean`]).
    Boolean,
    /// A string ([`Options::string`]).
    String,
    /// A list of strings (declared so the configuration may give it; ABI version 1 has
    /// no getter for it).
    Strings,
    /// A list of method selectors (as `Strings`).
    Selectors,
}

/// One option a [`Method`] takes: the configuration may give only the declared ones,
/// each of its kind (the host checks that before [`Method::start`]; an unknown option
/// is a configuration error, and then nothing runs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptionSpec {
    name: Cow<'static, str>,
    kind: OptionKind,
}

impl OptionSpec {
    /// An option `name` of `kind`.
    pub const fn new(name: &'static str, kind: OptionKind) -> OptionSpec {
        OptionSpec {
            name: Cow::Borrowed(name),
            kind,
        }
    }

    /// An option whose name is made at run time.
    pub fn owned(name: String, kind: OptionKind) -> OptionSpec {
        OptionSpec {
            name: Cow::Owned(name),
            kind,
        }
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its kind.
    pub fn kind(&self) -> OptionKind {
        self.kind
    }
}

/// An instrumentation method, exported from its library by [`export_method!`].
///
/// `name`, `priority` and `options` are read once, when the library is loaded (the
/// strings are copied and kept until the host is done). Then the host calls
/// [`start`](Method::start) once, and [`wants`](Method::wants) and
/// [`edit`](Method::edit) on many threads at once. A panic in any of them is caught
/// (see [`export_method!`]).
pub trait Method: Send + Sync + 'static {
    /// The name configurations and logs use (unique in a profiler; no NUL byte).
    fn name(&self) -> &str;

    /// The default priority: higher edits first (a configuration may override it).
    fn priority(&self) -> i32 {
        0
    }

    /// The options it takes.
    fn options(&self) -> &[OptionSpec] {
        &[]
    }

    /// Once, before anything else, with the configured options.
    ///
    /// # Errors
    /// An error stops the profiler's start (nothing is rewritten); its message is
    /// shown.
    fn start(&self, options: &Options<'_>) -> Result<(), Error> {
        let _ = options;
        Ok(())
    }

    /// The options of a live request (already checked against [`Method::options`]).
    ///
    /// # Errors
    /// An error refuses the request.
    fn check_options(&self, options: &Options<'_>) -> Result<(), Error> {
        let _ = options;
        Ok(())
    }

    /// After [`start`](Method::start), once: the methods it edits, by name, as
    /// selectors (`Namespace.Type::Method`, `Namespace.Type::*`, nested types
    /// `Outer/Inner`, an overload `Type::Method(int32,string)`). The host then asks
    /// [`wants`](Method::wants) only of them ([`Candidate::is_target`]) and has
    /// precompiled (ReadyToRun) ones compiled again with the edits. Default: none
    /// (`wants` is asked of every method the JIT compiles).
    ///
    /// # Errors
    /// An error stops the profiler's start; so does a selector the host cannot read
    /// or one holding a NUL byte.
    fn targets(&self) -> Result<Vec<String>, Error> {
        Ok(Vec::new())
    }

    /// Whether it edits this method. Cheap: called at every method's first JIT
    /// compilation.
    fn wants(&self, candidate: &Candidate<'_>) -> bool;

    /// Edits the body; `Ok(true)` when it changed something.
    ///
    /// # Errors
    /// An error (or a body the host cannot verify afterwards) rolls back this method's
    /// edits alone; the other methods' stand.
    fn edit(&self, edit: &mut Edit<'_>) -> Result<bool, Error>;
}

/// Exports a [`Method`] from this library: defines `ilrewrite_abi_version` and
/// `ilrewrite_method_create`, which calls the constructor (a function or closure
/// without arguments that returns the method: `export_method!(Negate::new)`) once, when
/// the host loads the library.
///
/// Nothing unwinds into the host: a panic in the constructor, `name`, `options`,
/// `start`, `check_options` or `edit` becomes `ILR_E_FAILED` with the panic's message in
/// the host's error buffer; one in `wants` answers "no" and is logged; one in the
/// method's `Drop` is logged. Use it once per library, at the crate's top level.
#[macro_export]
macro_rules! export_method {
    ($constructor:expr $(,)?) => {
        /// The ABI version this library speaks, read by the host before any call.
        #[allow(unsafe_code, non_upper_case_globals)]
        #[unsafe(no_mangle)]
        pub static ilrewrite_abi_version: u32 = $crate::sys::ILR_ABI_VERSION;

        /// Fills the host's method table with this library's method (called once by the
        /// host, after the version matched).
        ///
        /// # Safety
        /// The contract of `include/ilrewrite_method.h`: `host`, `method` and `error`
        /// are the host's tables and buffer.
        #[allow(unsafe_code)]
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn ilrewrite_method_create(
            host: *const $crate::sys::ilr_host,
            method: *mut $crate::sys::ilr_method,
            error: *mut $crate::sys::ilr_error,
        ) -> $crate::sys::ilr_status {
            // SAFETY: the host's pointers, under the header's contract, which `create`
            // requires.
            unsafe { $crate::export::create(host, method, error, $constructor) }
        }

        // The symbol has the type the header declares.
        const _: $crate::sys::ilr_method_create_fn = ilrewrite_method_create;
    };
}

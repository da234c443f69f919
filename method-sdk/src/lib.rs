//! Write an ilrewrite instrumentation method in Rust and ship it as a shared library of
//! its own: a `cdylib` that any profiler built on the `ilrewrite` crate loads through
//! the C ABI of `include/ilrewrite_method.h` (version 1), as it loads one written in C.
//!
//! This crate does not depend on `ilrewrite`: it declares the header's types itself
//! ([`sys`], checked against the header by a test) and wraps them in a safe API:
//!
//! * implement [`Method`] (name, priority, the options it takes, `start`, `wants`,
//!   `edit`; `module_loaded` to define the metadata its edits name; the runtime's
//!   callbacks it listens to);
//! * export it with [`export_method!`], which defines the library's two symbols
//!   (`ilrewrite_abi_version` and `ilrewrite_method_create`), keeps the strings of the
//!   table it gives the host alive until the host is done with it, and catches every
//!   panic at the boundary (nothing unwinds into the host: a panic becomes
//!   `ILR_E_FAILED` with its message);
//! * the host lends [`Options`], a [`Candidate`], a [`Module`] and an [`Edit`] for the
//!   length of one call; their functions answer `Result<_, Status>`;
//! * data items ([`Module::set_item`], [`Edit::set_method_item`]) keep what a method
//!   defined at module load (tokens) or learned about a method, as any
//!   `Send + Sync + 'static` value the host drops when it is done with it.
//!
//! ```no_run
//! use ilrewrite_method::{Candidate, Edit, Error, Instruction, Method, Want, element_type, opcode};
//!
//! /// Negates the int32 result of every method it is asked about.
//! struct Negate;
//!
//! impl Method for Negate {
//!     fn name(&self) -> &str {
//!         "negate"
//!     }
//!     fn wants(&self, _candidate: &Candidate<'_>) -> Want {
//!         Want::Edit
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
//! Threading: the host calls [`Method::wants`], [`Method::edit`],
//! [`Method::module_loaded`] and [`Method::callback`] on many threads at once, so a
//! method is `Send + Sync` and does its own locking (a `OnceLock` for what `start`
//! reads, typically).
//!
//! `method-sdk/examples/tracer_rs.rs` uses all of it: metadata defined at module load,
//! data items, a new local, the single-ret, a wrap of the whole body with a state local.
#![warn(clippy::undocumented_unsafe_blocks)]

mod callback;
mod code;
#[doc(hidden)]
pub mod export;
mod host;
mod item;
mod status;
pub mod sys;

use std::borrow::Cow;

pub use callback::{CallbackId, Callbacks, Events};
pub use code::{Incoming, Instruction, InstructionId, Operand, element_type, opcode};
pub use host::{Candidate, Edit, Instructions, Module, Options, SingleRet, Token, Wrap};
pub use item::Logger;
pub use status::{Error, Status};

/// What [`Method::wants`] answers about a method.
///
/// `bool` converts into it (`true` is [`Want::Edit`]), so that a yes-or-no answer stays
/// short: `candidate.is_target().unwrap_or(false).into()`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Want {
    /// It does not edit the method (`ILR_WANT_NO`).
    #[default]
    No,
    /// It edits the method ([`Method::edit`]) as it is (`ILR_WANT_EDIT`).
    Edit,
    /// It edits the method after the host made it single-ret, every `ret` a jump to one
    /// epilogue with the return value in a local ([`Edit::single_ret`];
    /// `ILR_WANT_EDIT_SINGLE_RET`).
    EditSingleRet,
}

impl From<bool> for Want {
    /// `true`: [`Want::Edit`]; `false`: [`Want::No`].
    fn from(edit: bool) -> Want {
        match edit {
            true => Want::Edit,
            false => Want::No,
        }
    }
}

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
/// `name`, `priority`, `options`, `events` and `callbacks` are read once, when the
/// library is loaded (the strings are copied and kept until the host is done). Then the
/// host calls [`start`](Method::start) once, and [`module_loaded`](Method::module_loaded),
/// [`wants`](Method::wants), [`edit`](Method::edit) and [`callback`](Method::callback)
/// on many threads at once. A panic in any of them is caught (see [`export_method!`]).
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

    /// A module finished loading: define the metadata later edits name
    /// ([`Module::assembly_ref`], [`Module::method_ref`], [`Module::user_string`], ...)
    /// and keep the tokens in the module's data item ([`Module::set_item`]), which
    /// [`Edit::module_item`] reads back. Called once per module, for modules loaded
    /// before and after [`start`](Method::start), on many threads at once. Default:
    /// nothing to define.
    ///
    /// # Errors
    /// An error is logged; the module's item stays as the call left it.
    fn module_loaded(&self, module: &Module<'_>) -> Result<(), Error> {
        let _ = module;
        Ok(())
    }

    /// Whether it edits this method, and how ([`Want`]; a `bool` converts:
    /// `true.into()` is [`Want::Edit`]). Cheap: called at every method's first JIT
    /// compilation.
    fn wants(&self, candidate: &Candidate<'_>) -> Want;

    /// Edits the body; `Ok(true)` when it changed something.
    ///
    /// # Errors
    /// An error (or a body the host cannot verify afterwards) rolls back this method's
    /// edits alone; the other methods' stand.
    fn edit(&self, edit: &mut Edit<'_>) -> Result<bool, Error>;

    /// The runtime events it needs beyond those of its callbacks (read once, at load).
    /// Default: none.
    fn events(&self) -> Events {
        Events::default()
    }

    /// The runtime's callbacks it receives through [`callback`](Method::callback) (read
    /// once, at load; the host asks the runtime for the events they need). Subscribing
    /// to one the host does not carry refuses the library at load. Default: none.
    fn callbacks(&self) -> Callbacks {
        Callbacks::NONE
    }

    /// One of its [`callbacks`](Method::callbacks), on the runtime's thread (many at
    /// once), from after [`start`](Method::start) succeeded: `id` and its arguments, one
    /// word each, as the header's "callbacks" section and each [`CallbackId`] constant
    /// say (a pointer word points to data valid during this call only).
    ///
    /// The answer matters to the callbacks that answer
    /// ([`CallbackId::JIT_INLINING`]: may the callee be inlined;
    /// [`CallbackId::JIT_CACHED_FUNCTION_SEARCH_STARTED`]: may the precompiled code be
    /// used): `false` says no (the runtime is told no if any method says no); the others
    /// ignore it. The runtime's thread waits for it: keep it short. To log, keep a
    /// [`Logger`] (from [`Options::logger`] in `start`). Default: `true`.
    fn callback(&self, id: CallbackId, args: &[u64]) -> bool {
        let _ = (id, args);
        true
    }
}

/// Exports a [`Method`] from this library: defines `ilrewrite_abi_version` and
/// `ilrewrite_method_create`, which calls the constructor (a function or closure
/// without arguments that returns the method: `export_method!(Negate::new)`) once, when
/// the host loads the library.
///
/// Nothing unwinds into the host: a panic in the constructor, `name`, `options`,
/// `events`, `callbacks`, `start`, `check_options`, `module_loaded` or `edit` becomes
/// `ILR_E_FAILED` with the panic's message in the host's error buffer; one in `wants`
/// answers "no" and is logged; one in `callback` leaves the answer as it came (yes) and
/// is logged; one in the method's `Drop`, or in a data item's, is logged. Use it once
/// per library, at the crate's top level.
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

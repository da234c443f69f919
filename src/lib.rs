#![doc = include_str!("../README.md")]
//!
//! # Modules
//!
//! * [`opcode`]: the ECMA-335 opcode table, the one source of truth for decoder, encoder
//!   and stack analysis.
//! * [`body`]: method bodies (tiny/fat headers, EH clauses) decoded from and encoded to
//!   bytes, keeping the original encoding choices unless an edit forces a change, and the
//!   editing operations that keep branches and EH regions consistent.
//! * [`error`]: the crate's one error type, [`Error`], and its [`Result`]; the floor every
//!   module that can fail imports them from.
//! * [`graph`]: the editable instruction graph: stable [`InstrId`]s and branch targets
//!   that are ids.
//! * [`analysis`]: control flow, stack verification and the exact max stack.
//! * [`transform`]: single-ret, try/finally wrapping, prologue/epilogue injection, and
//!   the [`Instrumenter`] that applies method entry/exit instrumentation to many bodies.
//! * [`ilmap`]: `COR_IL_MAP` offset maps, composable across rewrite stages.
//! * [`sig`]: signatures, LocalVarSig editing.
//! * [`disasm`]: ilasm-syntax listings.
//! * [`metadata`]: signatures and names by token, from any metadata source.
//! * [`selector`]: methods named by text (`Namespace.Type::Method(string,int32)`), and
//!   the test whether a MethodDef is one of them.
//! * `pe` (feature `pe`): a reader of .NET assemblies.
//! * `diagnostics` (feature `attach`, Unix): a client of the runtime's diagnostics IPC:
//!   the .NET processes of this user, what each is, loading a profiler into one now.
//! * `clr` (feature `clr`): raw ICorProfiler and metadata COM bindings, checked slot by
//!   slot against facts read from the runtime's headers, and the safe profiler layer on
//!   top (a `Profiler` trait, `export_profiler!`); the only module with `unsafe`.
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod analysis;
pub mod body;
#[cfg(feature = "clr")]
pub mod clr;
#[cfg(all(feature = "attach", unix))]
#[cfg_attr(docsrs, doc(cfg(all(feature = "attach", unix))))]
pub mod diagnostics;
pub mod disasm;
pub mod error;
pub mod graph;
pub mod ilmap;
pub mod metadata;
pub mod opcode;
#[cfg(feature = "pe")]
#[cfg_attr(docsrs, doc(cfg(feature = "pe")))]
pub mod pe;
pub mod selector;
pub mod sig;
pub mod transform;

pub use body::{ClauseKind, ExceptionClause, MethodBody};
pub use error::{CallTargetRefusal, Error, InstrSite, Result, TailCallRefusal};
pub use graph::{InstrId, Instruction, Operand};
pub use opcode::OpCode;
pub use transform::Instrumenter;

//! ilrewrite: decode, edit, analyse and re-encode .NET IL method bodies.
//!
//! The crate is built for CLR profilers that rewrite IL inside the JIT callback of every
//! method: an unedited body re-encodes to exactly its original bytes, edits keep branches
//! and exception regions consistent or are refused, the encoder rejects operands and
//! targets that do not fit, and [`MethodBody::validate_clauses`] plus the stack analysis
//! ([`analysis`]) verify a rewritten body before its bytes go to the runtime — all in a
//! few microseconds per method.
//!
//! * [`opcode`]: the ECMA-335 opcode table, the one source of truth for decoder, encoder
//!   and stack analysis.
//! * [`body`]: method bodies (tiny/fat headers, EH clauses) decoded from and encoded to
//!   bytes, keeping the original encoding choices unless an edit forces a change.
//! * [`graph`]: the editable instruction graph: stable [`InstrId`]s, branch targets that
//!   are ids, and editing operations that keep branches and EH regions consistent.
//! * [`analysis`]: control flow, stack verification and the exact max stack.
//! * [`transform`]: single-ret, try/finally wrapping, prologue/epilogue injection.
//! * [`ilmap`]: `COR_IL_MAP` offset maps, composable across rewrite stages.
//! * [`sig`]: signatures, LocalVarSig editing.
//! * `pe` (feature `pe`): a reader of .NET assemblies; `audit` runs all of the above over
//!   every body of an assembly.
//! * `clr` (feature `clr`): raw ICorProfiler and metadata COM bindings, checked slot by
//!   slot against the runtime's headers; the only module with `unsafe`.
//!
//! # Example: a call at method entry and at every exit
//!
//! ```
//! use ilrewrite::analysis::{CallEffect, MaxStackMode, StackAnalyzer};
//! use ilrewrite::ilmap::IlMap;
//! use ilrewrite::transform::{Returns, inject_epilogue, inject_prologue, single_ret};
//! use ilrewrite::{Instruction, MethodBody, OpCode};
//!
//! // int M(int x) { if (x != 0) return 1; return 2; }  as a tiny body:
//! // ldarg.0; brfalse.s +2; ldc.i4.1; ret; ldc.i4.2; ret
//! let original = [0x1E, 0x02, 0x2C, 0x02, 0x17, 0x2A, 0x18, 0x2A];
//! let mut body = MethodBody::decode(&original)?;
//!
//! // The hooks: `void OnEnter()` and `void OnExit()`, MemberRef tokens a profiler would
//! // have defined with IMetaDataEmit when the module loaded.
//! const ON_ENTER: u32 = 0x0A00_0001;
//! const ON_EXIT: u32 = 0x0A00_0002;
//!
//! // Every `ret` jumps to one epilogue; the return value goes through local 0, which the
//! // profiler adds to the LocalVarSig (see `sig::LocalVarSig::push`) and whose new
//! // signature token it sets on the body.
//! let exits = single_ret(&mut body, Returns::Value { local: 0 })?;
//! body.local_var_sig = 0x1100_0001;
//! inject_prologue(&mut body, &[Instruction::with_token(OpCode::Call, ON_ENTER)])?;
//! inject_epilogue(&mut body, exits.epilogue, &[Instruction::with_token(OpCode::Call, ON_EXIT)])?;
//!
//! // The exact max stack; calls are resolved through metadata (here: both hooks are
//! // `void()`).
//! let resolver = |_op: OpCode, _token: u32| Ok(CallEffect { pops: 0, pushes: 0 });
//! StackAnalyzer::new().apply_max_stack(&mut body, &resolver, MaxStackMode::Compute, Some(true))?;
//!
//! let bytes = body.encode()?;
//! let map = IlMap::of(&body)?; // hand both to SetILFunctionBody / SetILInstrumentedCodeMap
//! assert_eq!(map.map(0), Some(0)); // the entry hook maps to the first instruction
//! assert_eq!(MethodBody::decode(&bytes)?.instrs.iter().filter(|(_, i)| i.opcode == OpCode::Ret).count(), 1);
//! # Ok::<(), ilrewrite::Error>(())
//! ```
#![cfg_attr(not(feature = "clr"), forbid(unsafe_code))]
#![warn(missing_docs)]

pub mod analysis;
#[cfg(feature = "pe")]
pub mod audit;
pub mod body;
#[cfg(feature = "clr")]
pub mod clr;
pub mod disasm;
pub mod error;
pub mod graph;
pub mod ilmap;
pub mod opcode;
#[cfg(feature = "pe")]
pub mod pe;
pub mod sig;
pub mod transform;

pub use body::{ClauseKind, ExceptionClause, MethodBody};
pub use error::{Error, InstrSite, Result};
pub use graph::{InstrId, Instruction, Operand};
pub use opcode::OpCode;

//! ilrewrite: decode, edit, analyse and re-encode .NET IL method bodies.
#![cfg_attr(not(feature = "clr"), forbid(unsafe_code))]
#![warn(missing_docs)]

pub mod analysis;
#[cfg(feature = "pe")]
pub mod audit;
pub mod body;
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

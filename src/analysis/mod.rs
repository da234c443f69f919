//! Analyses of method bodies: control flow, stack heights, max stack.
//!
//! * [`mod@cfg`]: basic blocks and a [`petgraph`] control-flow graph with typed edges
//!   (fall-through, branch, switch, leave, exceptional) and reachability.
//! * [`stack`]: the stack-height simulation that verifies the stack rules of ECMA-335 and
//!   the CLR JIT and computes the exact max stack, fast enough to run over every body of
//!   an assembly (it does not build the graph).
//! * [`resolve`]: the [`CallSiteResolver`] trait through which the stack analysis learns
//!   what `call`, `callvirt`, `newobj` and `calli` pop and push.
//!
//! Both analyses agree on what is reachable: the entry, everything reached from it, and
//! each handler (with its filter) whose try region holds a reachable instruction.

pub mod cfg;
mod layout;
pub mod resolve;
pub mod stack;

#[cfg(test)]
mod tests;

pub use cfg::{BasicBlock, BlockId, ControlFlowGraph, EdgeKind};
pub use resolve::{CachingResolver, CallEffect, CallSiteResolver, MetadataResolver, NoCalls};
pub use stack::{MaxStackMode, MaxStackReport, ReturnKind, StackAnalysis, StackAnalyzer};

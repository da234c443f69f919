//! What a wrap is asked ([`WrapOptions`], [`CatchRethrow`]) and what it gives
//! ([`Wrapped`]).

use crate::graph::{InstrId, Instruction};
use crate::transform::returns::Returns;
use crate::transform::tail_call::TailCallPolicy;

/// A catch handler that runs `code` and rethrows.
#[derive(Debug, Clone, Copy)]
pub struct CatchRethrow<'a> {
    /// Type token of the exceptions to catch (e.g. a TypeRef to `System.Exception`).
    pub type_token: u32,
    /// Code run with the exception object on the stack; it must consume it (store it,
    /// pass it to a call, or `pop` it). If empty, a `pop` is generated.
    pub code: &'a [Instruction],
}

/// What to inject around the body.
#[derive(Debug, Clone, Copy)]
pub struct WrapOptions<'a> {
    /// What the method returns (see [`Returns`]).
    pub returns: Returns,
    /// Code run on entry, before the try block; must leave the stack empty.
    pub entry: &'a [Instruction],
    /// Code run in the finally handler, on every exit; must leave the stack empty. With
    /// [`Returns::Value`] it can read the return value from the local (it holds the
    /// default value if an exception is propagating).
    pub exit: &'a [Instruction],
    /// An optional catch-and-rethrow handler around the original body, inside the finally.
    pub catch: Option<CatchRethrow<'a>>,
    /// What to do with `tail.` calls, which cannot stay in the try block. This wrap has
    /// no metadata to type a tail call's operands, so it cannot keep them:
    /// [`TailCallPolicy::DropPrefix`] removes the prefixes (changing what the program
    /// does: its stack grows with the tail recursion), the other two refuse a body with
    /// one ([`TailCallRefusal::NoMetadata`] for `Keep`,
    /// [`TailCallRefusal::PolicyRefuses`] for `Refuse`). To keep tail calls, use
    /// [`Instrumenter`].
    ///
    /// [`TailCallRefusal::NoMetadata`]: crate::error::TailCallRefusal::NoMetadata
    /// [`TailCallRefusal::PolicyRefuses`]: crate::error::TailCallRefusal::PolicyRefuses
    /// [`Instrumenter`]: crate::transform::Instrumenter
    pub tail_calls: TailCallPolicy,
}

/// Where the pieces of a wrapped body are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wrapped {
    /// First instruction of the original body (start of the try block).
    pub try_start: InstrId,
    /// First instruction of the finally handler.
    pub finally_start: InstrId,
    /// First instruction of the catch handler, if one was requested.
    pub catch_start: Option<InstrId>,
    /// First instruction of the epilogue after the handlers.
    pub epilogue: InstrId,
    /// `tail.` prefixes removed (a tail call cannot leave a try block).
    pub tail_prefixes_removed: usize,
    /// Tail calls kept, each moved to a stub after the handlers (only
    /// [`Instrumenter`](crate::transform::Instrumenter) keeps them).
    pub tail_calls_kept: usize,
}

/// Injected code placed in exception clauses of its own, so that what it throws does not
/// escape ([`super::wrap_guarded`]): the entry code becomes
/// `.try { <entry> leave B } catch T { <handler> leave B }  B: <try of the wrap>`, the
/// exit code `.try { <exit> leave E } catch T { <handler> leave E }  E: endfinally`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Guard<'a> {
    /// Type token of the exceptions the guards catch.
    pub type_token: u32,
    /// Code run with the exception object on the stack; it must consume it. If empty, a
    /// `pop` is generated.
    pub handler: &'a [Instruction],
}

impl Guard<'_> {
    /// The handler's code: `handler` (or `pop`), then a `leave` to `to`.
    pub(super) fn handler_then_leave(&self, to: InstrId) -> smallvec::SmallVec<[Instruction; 4]> {
        let mut code: smallvec::SmallVec<[Instruction; 4]> =
            smallvec::SmallVec::from_slice(self.handler);
        if code.is_empty() {
            code.push(Instruction::simple(crate::opcode::OpCode::Pop));
        }
        code.push(Instruction::branch(crate::opcode::OpCode::Leave, to));
        code
    }
}

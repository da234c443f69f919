//! What a rewrite did ([`RewriteOutcome`]) and, when it failed, in which phase and why
//! ([`Phase`], [`Failure`], [`FailureCause`]).

use core::fmt;

use crate::clr::runtime::ClrError;
use crate::clr::sys::mdToken;

/// The phases of a rewrite, in the order they run. A failure names the phase it
/// happened in; every phase before [`Phase::HandOver`] fails with nothing given to the
/// runtime (the original IL is kept).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Phase {
    /// Finding the method's module and token, and claiming the method.
    Locate,
    /// Getting the method's IL (the runtime's, or the pristine copy kept earlier).
    Read,
    /// Decoding it into an instruction graph.
    Decode,
    /// The caller's edit.
    Edit,
    /// The stack analysis (exact max stack) and the exception clauses of the edited body.
    Verify,
    /// Defining the token of a changed LocalVarSig.
    Locals,
    /// Encoding the body and its IL map.
    Encode,
    /// Handing the body to the runtime.
    HandOver,
    /// Handing the IL map over. Never a failure: the body is the runtime's already, and
    /// a refused map is [`RewriteOutcome::Rewritten`]'s `map_refused`. Timed
    /// ([`JitRewriter::timings`](super::JitRewriter::timings)) like the others.
    Map,
}

impl Phase {
    /// Every phase, in order.
    pub const ALL: [Phase; 9] = [
        Phase::Locate,
        Phase::Read,
        Phase::Decode,
        Phase::Edit,
        Phase::Verify,
        Phase::Locals,
        Phase::Encode,
        Phase::HandOver,
        Phase::Map,
    ];

    /// The phase's name, as log lines show it.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Locate => "locate",
            Phase::Read => "read",
            Phase::Decode => "decode",
            Phase::Edit => "edit",
            Phase::Verify => "verify",
            Phase::Locals => "locals",
            Phase::Encode => "encode",
            Phase::HandOver => "hand-over",
            Phase::Map => "map",
        }
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a phase failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FailureCause {
    /// An error of the crate's core (decoding, the edit, the verification, encoding).
    #[error(transparent)]
    Crate(#[from] crate::error::Error),
    /// A call to the runtime failed.
    #[error(transparent)]
    Runtime(#[from] ClrError),
    /// The edit (or the crate) panicked; the payload's message.
    #[error("panic: {0}")]
    Panic(String),
    /// Another thread was still rewriting the method after the wait limit (seconds).
    #[error("another thread was still rewriting this method after {0} s")]
    Busy(u64),
    /// The rewrite was entered again on the same thread (from inside the edit).
    #[error("re-entered on the same thread")]
    Reentered,
    /// A body the edit left unedited did not re-encode to its original bytes.
    #[error("re-encoding the unedited body changed its bytes")]
    NotRoundTrip,
    /// The token names no MethodDef row the crate can track.
    #[error("no MethodDef row {0:#010x}")]
    NoRow(mdToken),
}

impl FailureCause {
    /// A short name of the cause without the details that vary from method to method
    /// (offsets, instruction ids): what repeated log lines are counted under.
    pub fn kind(&self) -> String {
        match self {
            FailureCause::Crate(e) => e.kind(),
            FailureCause::Runtime(e) => e.to_string(),
            FailureCause::Panic(message) => format!("panic: {message}"),
            FailureCause::Busy(_) => "busy".to_string(),
            FailureCause::Reentered => "re-entered".to_string(),
            FailureCause::NotRoundTrip => "not round-trip".to_string(),
            FailureCause::NoRow(_) => "no MethodDef row".to_string(),
        }
    }
}

/// A rewrite that failed: the phase and the cause. The method's original IL is kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// Where it failed.
    pub phase: Phase,
    /// Why.
    pub cause: FailureCause,
}

impl Failure {
    /// A failure of `phase` with `cause`.
    pub fn new(phase: Phase, cause: impl Into<FailureCause>) -> Failure {
        Failure {
            phase,
            cause: cause.into(),
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.phase, self.cause)
    }
}

impl std::error::Error for Failure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.cause)
    }
}

/// What a rewrite did with one JIT compilation.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RewriteOutcome {
    /// The rewritten body was handed to the runtime. `map_refused` is the runtime's
    /// answer when it refused the IL map (the method is rewritten all the same: its
    /// code runs the new IL, but a debugger or a profiler mapping native code back to IL
    /// sees the new IL's offsets).
    Rewritten {
        /// The new body's size in bytes.
        bytes: usize,
        /// Why the IL map was not taken, if it was not.
        map_refused: Option<ClrError>,
    },
    /// The edit left the method as it was (it returned `false`).
    Unchanged,
    /// The method was rewritten by an earlier compilation (a generic instantiation, a
    /// tier-up): the runtime compiles the rewritten IL, which is not instrumented twice.
    AlreadyRewritten,
    /// The rewriter's filter does not select the method: it was not even decoded.
    NotSelected,
    /// The crate declined the method with a typed error (e.g. a body with `jmp`, which
    /// cannot be wrapped, a tail call that cannot be kept, more locals than a method can
    /// have): its original IL is kept.
    Refused(crate::error::Error),
    /// A phase failed (see [`Failure`]): the original IL is kept.
    Failed(Failure),
}

impl RewriteOutcome {
    /// Whether the method compiles rewritten IL after this compilation
    /// ([`RewriteOutcome::Rewritten`] or [`RewriteOutcome::AlreadyRewritten`]).
    pub fn is_rewritten(&self) -> bool {
        matches!(
            self,
            RewriteOutcome::Rewritten { .. } | RewriteOutcome::AlreadyRewritten
        )
    }

    /// The full text of a refusal, a failure or a refused IL map (`None` otherwise).
    pub fn reason(&self) -> Option<String> {
        match self {
            RewriteOutcome::Rewritten {
                map_refused: None, ..
            }
            | RewriteOutcome::Unchanged
            | RewriteOutcome::AlreadyRewritten
            | RewriteOutcome::NotSelected => None,
            _ => Some(self.to_string()),
        }
    }

    /// What repeated outcomes are counted under: the kind of refusal or failure with
    /// its phase, without the details that differ from method to method (`None` where
    /// [`RewriteOutcome::reason`] is `None`). E.g. `failed: verify: StackUnderflow`.
    pub fn key(&self) -> Option<String> {
        match self {
            RewriteOutcome::Rewritten {
                map_refused: Some(e),
                ..
            } => Some(format!("rewritten, IL map refused: {e}")),
            RewriteOutcome::Refused(e) => Some(format!("refused: {}", e.kind())),
            RewriteOutcome::Failed(failure) => Some(format!(
                "failed: {}: {}",
                failure.phase,
                failure.cause.kind()
            )),
            _ => None,
        }
    }
}

impl fmt::Display for RewriteOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RewriteOutcome::Rewritten {
                bytes,
                map_refused: None,
            } => write!(f, "rewritten ({bytes} bytes)"),
            RewriteOutcome::Rewritten {
                bytes,
                map_refused: Some(e),
            } => write!(f, "rewritten ({bytes} bytes), IL map refused: {e}"),
            RewriteOutcome::Unchanged => f.write_str("unchanged"),
            RewriteOutcome::AlreadyRewritten => f.write_str("already rewritten"),
            RewriteOutcome::NotSelected => f.write_str("not selected"),
            RewriteOutcome::Refused(e) => write!(f, "refused: {e}"),
            RewriteOutcome::Failed(failure) => write!(f, "failed: {failure}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_leave_out_what_differs_from_method_to_method() {
        let at = |offset| crate::error::Error::TailCallNotKept {
            offset: Some(offset),
            reason: crate::error::TailCallRefusal::VarArg,
        };
        let a = RewriteOutcome::Refused(at(4));
        let b = RewriteOutcome::Refused(at(40));
        assert_ne!(a.reason(), b.reason());
        assert_eq!(a.key(), b.key());
        assert_eq!(
            a.key().as_deref(),
            Some("refused: TailCallNotKept: a vararg call")
        );
        let failed =
            RewriteOutcome::Failed(Failure::new(Phase::Verify, crate::error::Error::EmptyBody));
        assert_eq!(failed.key().as_deref(), Some("failed: verify: EmptyBody"));
        assert_eq!(
            failed.to_string(),
            "failed: verify: the method body has no instructions"
        );
        assert_eq!(RewriteOutcome::Unchanged.key(), None);
    }
}

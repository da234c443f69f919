//! Wrapping a whole method body in try/finally (and optionally try/catch/rethrow), the
//! shape APM agents use for method entry/exit instrumentation.
//!
//! # Layout
//!
//! A wrap comes in two ways, from two callers: [`wrap_try_finally`] takes the injected
//! code as instructions (with a catch handler if asked), [`wrap_stored`] as
//! [`super::Instrumenter`] stores it (and keeps tail calls if asked); each makes the
//! refusals first, then takes one of two paths. Dependencies run one way, from this
//! module down:
//!
//! 1. `options`: what a wrap is asked ([`WrapOptions`], [`CatchRethrow`]) and gives
//!    ([`Wrapped`]).
//! 2. `scan`: [`CodeScan`], the instructions a wrap edits, found in one walk.
//! 3. `stored`: the injected code in stored form ([`StoredCode`]) and the placing of its
//!    relative branches; the entry-only prologue ([`prologue_stored`]).
//! 4. `refusals`: what every wrap refuses before its first edit.
//! 5. `flat`: the one-pass path, for the usual body (a flat list, no clauses, no
//!    `tail.`).
//! 6. `linked`: the general path, edit by edit, the only one that keeps tail calls; the
//!    one-pass path gives its result, id for id.

mod flat;
mod linked;
mod options;
mod refusals;
mod scan;
mod stored;
#[cfg(test)]
mod tests;

pub(crate) use options::Guard;
pub use options::{CatchRethrow, WrapOptions, Wrapped};
pub(crate) use scan::CodeScan;
pub(crate) use stored::{StoredCode, prologue_stored};

use super::returns::Returns;
use super::tail_call::{TailCallPolicy, TailPlan};
use crate::body::MethodBody;
use crate::error::{Error, Result, TailCallRefusal};
use flat::Injected;
use refusals::refusals;
use stored::Placement;

/// Wraps the body:
///
/// ```text
///       <entry>
///       .try {
///         [.try {]  <original body, every ret -> (stloc r;) leave EPI>
///         [} catch T { <catch code> rethrow }]
///       } finally { <exit> endfinally }
/// EPI:  [ldloc r] ret
/// ```
///
/// Branches back to the first original instruction stay inside the try (the entry code
/// runs once). A body with `tail.` prefixes is refused or has them removed, as
/// [`WrapOptions::tail_calls`] says (a tail call cannot leave a protected region;
/// [`super::Instrumenter`] keeps them). The max stack is not recomputed here; run the
/// stack analysis afterwards.
///
/// # Errors
/// Refusals made before any edit, leaving the body as it was: [`Error::EmptyBody`],
/// [`Error::TailCallNotKept`] for a body with `tail.` prefixes unless
/// [`WrapOptions::tail_calls`] is [`TailCallPolicy::DropPrefix`],
/// [`Error::Unsupported`] for a body with `jmp` (it cannot sit in a try block), of
/// nothing but `tail.` prefixes, with a `tail.` not followed by a call in its own
/// regions, or with a `ret` inside a finally, fault or filter block; the errors of
/// [`MethodBody::validate_clauses`] for a clause list that is not valid;
/// [`Error::NotInBody`] for entry, exit or catch code that branches to an instruction
/// not in the body.
pub fn wrap_try_finally(body: &mut MethodBody, opts: &WrapOptions<'_>) -> Result<Wrapped> {
    let scan = CodeScan::of(&body.instrs);
    if let Some(&tail) = scan.tails.first() {
        let reason = match opts.tail_calls {
            TailCallPolicy::DropPrefix => None,
            TailCallPolicy::Keep => Some(TailCallRefusal::NoMetadata),
            TailCallPolicy::Refuse => Some(TailCallRefusal::PolicyRefuses),
        };
        if let Some(reason) = reason {
            return Err(Error::TailCallNotKept {
                offset: body.original_offset(tail),
                reason,
            });
        }
    }
    refusals(body, &scan)?;
    let code = Injected::Instructions {
        entry: opts.entry,
        exit: opts.exit,
        epilogue: &[],
    };
    if opts.catch.is_none()
        && let Some(wrapped) = flat::wrap(body, opts.returns, &scan, code)
    {
        return Ok(wrapped);
    }
    linked::wrap(body, opts, &scan, &[], Placement::Absolute, None, None)
}

/// [`wrap_try_finally`] on the general path, for a caller that made its own tail-call
/// decision and refusals beyond the wrap's: the tail calls of `plan` kept (planned for
/// this body and this scan without a flag, their locals already part of the body's
/// signature) or, without a plan, the `tail.` prefixes removed; and with `guard`, the
/// entry and exit code each placed in a try/catch of its own (see [`Guard`]), so that
/// an exception they throw is caught there. Makes the refusals of every wrap first
/// (the body is then left as it was); `opts.tail_calls` is not read.
pub(crate) fn wrap_guarded(
    body: &mut MethodBody,
    opts: &WrapOptions<'_>,
    scan: &CodeScan,
    plan: Option<&mut TailPlan>,
    guard: Option<&Guard<'_>>,
) -> Result<Wrapped> {
    refusals(body, scan)?;
    linked::wrap_keeping(body, opts, scan, plan, guard)
}

/// Which path [`wrap_stored`] takes, and what it does with `tail.` calls.
#[derive(Debug)]
pub(crate) enum Path<'p> {
    /// The one-pass path where the body allows it, else the general path; `tail.`
    /// prefixes are removed.
    Best,
    /// The general path always, `tail.` prefixes removed (for the tests that hold the
    /// one-pass path to it).
    #[cfg(test)]
    Linked,
    /// The general path, keeping the tail calls of the plan (made by
    /// [`super::tail_call::plan`] for this body and this scan, with the locals it
    /// planned already part of the body's signature): each site stores its operands and
    /// leaves the try for a stub after the handlers that makes the tail call (see
    /// [`super::tail_call`]). The `leave` of each site is recorded in the plan.
    KeepingTailCalls(&'p mut TailPlan),
}

/// [`wrap_try_finally`] without a catch handler, given a [`CodeScan`] of the whole body
/// as it is and the injected code in stored form: a non-empty [`StoredCode::epilogue`]
/// starts the epilogue (the returned `epilogue` is its first instruction), as if
/// [`super::inject_epilogue`] had been called with the usual epilogue, without that
/// call's O(code) branch redirection. The `tail.` calls are handled as `path` says;
/// the caller has applied its tail-call policy.
pub(crate) fn wrap_stored(
    body: &mut MethodBody,
    returns: Returns,
    scan: &CodeScan,
    code: &StoredCode<'_>,
    path: Path<'_>,
) -> Result<Wrapped> {
    refusals(body, scan)?;
    let plan = match path {
        Path::Best => {
            if let Some(wrapped) = flat::wrap(body, returns, scan, Injected::Stored(code)) {
                return Ok(wrapped);
            }
            None
        }
        #[cfg(test)]
        Path::Linked => None,
        Path::KeepingTailCalls(plan) => Some(plan),
    };
    linked::wrap_stored(body, returns, scan, code, plan)
}

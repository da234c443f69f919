//! A method's plan of edits ([`MethodPlan`]), each an [`EditStep`], and how the engine runs
//! them on one shared body: the single-ret made once, the edits in plan order, each one
//! rolled back alone when it fails.

use std::cell::Cell;

use smallvec::SmallVec;

use super::method_rewrite::MethodRewrite;
use crate::body::MethodBody;
use crate::clr::log;
use crate::metadata::MetadataSource;
use crate::transform::{ReturnLocal, Returns, SingleRet, single_ret};

/// One edit of a method: what an instrumentation method (or a profiler's own closure)
/// does to the decoded body. The engine runs the steps of a [`MethodPlan`] in order, on
/// one body.
pub(crate) trait EditStep<M> {
    /// Whether the body must be single-ret (its one exit at the end, the return value
    /// in a local) before this step runs.
    fn wants_single_ret(&self) -> bool;

    /// Edits `body`; returns whether it changed anything. `single_ret` is what the
    /// single-ret made, when a step of the plan asked for it.
    ///
    /// # Errors
    /// Why the edit cannot be made: the step is rolled back (see [`MethodPlan`]).
    fn edit(
        &self,
        body: &mut MethodBody,
        rewrite: &mut MethodRewrite<'_, M>,
        single_ret: Option<SingleRet>,
    ) -> crate::error::Result<bool>;
}

/// What the engine does to one method: its edit steps, in the order they run. An empty
/// plan changes nothing.
///
/// The single-ret is made first, once, when a step asks for it. Before each step the
/// body and the rewrite's pending locals are kept when more than one step is to run, and
/// restored if the step fails (an error or a panic): its failure is reported in the
/// rewrite's [`Rollback`]s and the others' edits stay. When no step succeeds, nothing of
/// theirs stands and the first failure is the method's own outcome (a refusal or a
/// failure of [`Phase::Edit`](super::Phase::Edit)); the method keeps its IL.
pub(crate) struct MethodPlan<S> {
    /// The steps, in order.
    pub(crate) steps: SmallVec<[S; 4]>,
}

impl<S> MethodPlan<S> {
    /// A plan of one step.
    pub(crate) fn one(step: S) -> MethodPlan<S> {
        MethodPlan {
            steps: smallvec::smallvec![step],
        }
    }
}

/// Why one step of a plan was rolled back.
#[derive(Debug)]
pub(crate) enum EditFailure {
    /// It returned this error.
    Error(crate::error::Error),
    /// It panicked, with this message.
    Panic(String),
}

impl core::fmt::Display for EditFailure {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            EditFailure::Error(e) => write!(f, "{e}"),
            EditFailure::Panic(message) => write!(f, "panicked: {message}"),
        }
    }
}

/// A step rolled back while another step of the plan stands: its position in the plan
/// and why.
pub(crate) type Rollback = (usize, EditFailure);

/// The steps rolled back in one rewrite (most rewrites have none).
pub(crate) type Rollbacks = SmallVec<[Rollback; 1]>;

/// A step made of a closure that runs once: the single-method path's edit
/// ([`JitRewriter::rewrite`](super::JitRewriter::rewrite)).
pub(crate) struct OnceEdit<F>(Cell<Option<F>>);

impl<F> OnceEdit<F> {
    pub(crate) fn new(edit: F) -> OnceEdit<F> {
        OnceEdit(Cell::new(Some(edit)))
    }
}

impl<M, F> EditStep<M> for OnceEdit<F>
where
    F: FnOnce(&mut MethodBody, &mut MethodRewrite<'_, M>) -> crate::error::Result<bool>,
{
    fn wants_single_ret(&self) -> bool {
        false
    }

    fn edit(
        &self,
        body: &mut MethodBody,
        rewrite: &mut MethodRewrite<'_, M>,
        _: Option<SingleRet>,
    ) -> crate::error::Result<bool> {
        match self.0.take() {
            Some(edit) => edit(body, rewrite),
            None => Ok(false),
        }
    }
}

/// What running a plan did: whether the body changed, the steps rolled back while
/// another one stands, and the steps that ran and changed nothing (by position).
#[derive(Debug, Default)]
pub(crate) struct PlanRun {
    pub(crate) changed: bool,
    pub(crate) rolled_back: Rollbacks,
    pub(crate) idle: SmallVec<[usize; 4]>,
}

/// Runs `plan` on `body` (see [`MethodPlan`]).
///
/// # Errors
/// The single-ret's own failure (before any step ran), or the first step's error when
/// none succeeded (a panic of that step is resumed, for the pipeline to report).
pub(crate) fn run_plan<M: MetadataSource, S: EditStep<M>>(
    plan: &MethodPlan<S>,
    body: &mut MethodBody,
    rewrite: &mut MethodRewrite<'_, M>,
) -> crate::error::Result<PlanRun> {
    let single = match plan.steps.iter().any(EditStep::wants_single_ret) {
        true => Some(make_single_ret(body, rewrite)?),
        false => None,
    };
    let several = plan.steps.len() > 1;
    let mut run = PlanRun::default();
    let mut succeeded = false;
    for (position, step) in plan.steps.iter().enumerate() {
        let saved = several.then(|| (body.clone(), rewrite.checkpoint()));
        rewrite.unverified();
        let failure = match log::contain(|| step.edit(body, rewrite, single)) {
            Ok(Ok(edited)) => {
                run.changed |= edited;
                if !edited {
                    run.idle.push(position);
                }
                succeeded = true;
                continue;
            }
            Ok(Err(e)) => EditFailure::Error(e),
            Err(message) => EditFailure::Panic(message),
        };
        run.rolled_back.push((position, failure));
        if let Some((saved_body, checkpoint)) = saved {
            *body = saved_body;
            rewrite.restore(checkpoint);
        }
    }
    if !succeeded && !run.rolled_back.is_empty() {
        return match run.rolled_back.swap_remove(0).1 {
            EditFailure::Error(e) => Err(e),
            EditFailure::Panic(message) => std::panic::resume_unwind(Box::new(message)),
        };
    }
    Ok(run)
}

/// Makes `body` single-ret, the return value (if any) in a new local whose LocalVarSig
/// is set on `rewrite`, and gives it a fat header.
fn make_single_ret<M: MetadataSource>(
    body: &mut MethodBody,
    rewrite: &mut MethodRewrite<'_, M>,
) -> crate::error::Result<SingleRet> {
    let mut new_locals = Vec::new();
    let returns = {
        let context = rewrite.context(body)?;
        ReturnLocal::plan(context.signature, context.locals, &mut new_locals)?.returns
    };
    let done = single_ret(body, returns)?;
    if let Returns::Value { .. } = returns {
        rewrite.set_locals_signature(&new_locals);
    }
    body.force_fat_header();
    Ok(done)
}

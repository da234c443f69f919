//! One method's edits by several instrumentation methods, on one shared body: the
//! single-ret done once, the edits in priority order, each one rolled back alone when it
//! fails.

use std::panic::{AssertUnwindSafe, catch_unwind};

use smallvec::SmallVec;

use super::config::Options;
use super::method::{InstrumentationMethod, Interest, MethodEdit, Owner};
use crate::body::MethodBody;
use crate::clr::rewrite::items::Containers;
use crate::clr::rewrite::pipeline::MethodRewrite;
use crate::metadata::MetadataSource;
use crate::transform::{ReturnLocal, Returns, single_ret};

/// Why one instrumentation method's edit of one method was rolled back.
#[derive(Debug)]
pub(crate) enum EditFailure {
    /// It returned this error.
    Error(crate::Error),
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

/// One instrumentation method's part in a method's rewrite: its index among the
/// manager's, its [`Interest`], and the options its edit sees
/// ([`MethodEdit::options`]: the configured ones, or a ReJIT request's).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Wanted<'o> {
    pub(crate) index: usize,
    pub(crate) interest: Interest,
    pub(crate) options: &'o Options,
}

/// Runs the edits of the instrumentation methods `wanting` names (indices into
/// `methods`, in the order to run, with each one's [`Interest`] and options) on `body`. Returns
/// whether the body changed; `failed` hears of each edit rolled back while another
/// edit of the method stands.
///
/// The single-ret is made first, once, when any of them asks for it. Before each edit
/// the body and the rewrite's pending locals are kept when more than one edit is to
/// run, and restored if the edit fails. When no edit succeeds (a lone one failed, or
/// all did), nothing of theirs stands and the first failure is the method's own
/// outcome: its error is returned, or its panic resumed, for the pipeline to classify
/// (a refusal, a failure) and log as it does for a single rewriter; the method keeps
/// its IL.
///
/// # Errors
/// The single-ret's own failure (before any edit ran), or the first edit's error when
/// none succeeded.
pub(crate) fn compose<M: MetadataSource + 'static>(
    methods: &[&dyn InstrumentationMethod<M>],
    wanting: &[Wanted<'_>],
    body: &mut MethodBody,
    rewrite: &mut MethodRewrite<'_, M>,
    containers: &Containers,
    failed: &mut dyn FnMut(usize, EditFailure),
) -> crate::Result<bool> {
    let single = match wanting
        .iter()
        .any(|wanted| wanted.interest == Interest::EditSingleRet)
    {
        true => Some(make_single_ret(body, rewrite)?),
        false => None,
    };
    let several = wanting.len() > 1;
    let mut changed = false;
    let mut succeeded = false;
    let mut failures: SmallVec<[(usize, EditFailure); 1]> = SmallVec::new();
    for wanted in wanting {
        let index = wanted.index;
        let saved = several.then(|| (body.clone(), rewrite.checkpoint()));
        rewrite.unverified();
        let method = methods[index];
        let mut edit = MethodEdit {
            rewrite: &mut *rewrite,
            owner: Owner {
                index,
                count: methods.len(),
            },
            single_ret: single,
            containers,
            options: wanted.options,
        };
        let result = catch_unwind(AssertUnwindSafe(|| method.edit(body, &mut edit)));
        let failure = match result {
            Ok(Ok(edited)) => {
                changed |= edited;
                succeeded = true;
                continue;
            }
            Ok(Err(e)) => EditFailure::Error(e),
            Err(payload) => {
                EditFailure::Panic(crate::clr::log::panic_message(&*payload).to_owned())
            }
        };
        failures.push((index, failure));
        if let Some((saved_body, checkpoint)) = saved {
            *body = saved_body;
            rewrite.restore(checkpoint);
        }
    }
    if !succeeded && !failures.is_empty() {
        return match failures.swap_remove(0).1 {
            EditFailure::Error(e) => Err(e),
            EditFailure::Panic(message) => std::panic::resume_unwind(Box::new(message)),
        };
    }
    for (index, failure) in failures {
        failed(index, failure);
    }
    Ok(changed)
}

/// Makes `body` single-ret, the return value (if any) in a new local whose LocalVarSig
/// is set on `rewrite`, and gives it a fat header.
fn make_single_ret<M: MetadataSource>(
    body: &mut MethodBody,
    rewrite: &mut MethodRewrite<'_, M>,
) -> crate::Result<crate::transform::SingleRet> {
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

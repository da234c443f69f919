//! [`Hosting`]: the manager's instrumentation methods while it runs (their options,
//! the rewriter), shared by the JIT path, the ReJIT callbacks and the dial; and
//! [`merge`], how a ReJIT request's edit joins the configured ones.

use std::sync::Arc;

use smallvec::SmallVec;

use super::compose::{Wanted, compose};
use super::config::Options;
use super::method::{Candidate, InstrumentationMethod, Interest, Owner};
use super::plan::Request;
use super::report::{ManagerCounts, guarded, log_rollback};
use crate::body::MethodBody;
use crate::clr::log;
use crate::clr::profiler::Callback;
use crate::clr::rewrite::items::Containers;
use crate::clr::rewrite::jit::JitRewriter;
use crate::clr::rewrite::module::ModuleState;
use crate::clr::rewrite::pipeline::MethodRewrite;
use crate::clr::sys::mdToken;
use std::sync::atomic::Ordering::Relaxed;

/// What the manager's instrumentation methods are while it runs, shared by the JIT
/// path, the ReJIT callbacks and the dial.
pub(crate) struct Hosting {
    /// In editing order.
    pub(crate) methods: Arc<[Arc<dyn InstrumentationMethod>]>,
    /// Each one's configured options.
    pub(crate) options: Box<[Options]>,
    pub(crate) containers: Arc<Containers>,
    pub(crate) rewriter: JitRewriter,
    /// The manager's counts (edits rolled back).
    pub(crate) counts: Arc<ManagerCounts>,
}

impl Hosting {
    /// The configured instrumentation methods that want MethodDef `token` of `module`,
    /// in editing order, with their interest.
    pub(crate) fn wanting(
        &self,
        module: &ModuleState,
        token: mdToken,
        compiling: bool,
    ) -> SmallVec<[(usize, Interest); 4]> {
        let count = self.methods.len();
        self.methods
            .iter()
            .enumerate()
            .filter_map(|(index, method)| {
                let candidate = Candidate {
                    module,
                    token,
                    compiling,
                    owner: Owner { index, count },
                    containers: &self.containers,
                };
                let callback = match compiling {
                    true => Callback::JITCompilationStarted,
                    false => Callback::GetReJITParameters,
                };
                let interest = guarded(&**method, callback, || method.wants(&candidate))
                    .unwrap_or(Interest::No);
                (interest != Interest::No).then_some((index, interest))
            })
            .collect()
    }

    /// The edits `configured` and `request` make ([`merge`]) on MethodDef `token` of
    /// `module`; a request whose instrumentation method
    /// [`refuses`](InstrumentationMethod::refuses) the method is left out (the
    /// configured edits stay).
    pub(crate) fn wanted<'a>(
        &'a self,
        module: &ModuleState,
        token: mdToken,
        configured: &[(usize, Interest)],
        request: Option<&'a Request>,
    ) -> SmallVec<[Wanted<'a>; 4]> {
        let request = request.filter(|r| !self.refuses(module, token, r.index));
        merge(&self.options, configured, request)
    }

    /// Whether instrumentation method `index` refuses MethodDef `token` of `module`
    /// (a panic counts as a refusal).
    fn refuses(&self, module: &ModuleState, token: mdToken, index: usize) -> bool {
        let Some(method) = self.methods.get(index) else {
            return true;
        };
        let candidate = Candidate {
            module,
            token,
            compiling: true,
            owner: Owner {
                index,
                count: self.methods.len(),
            },
            containers: &self.containers,
        };
        let refused = guarded(&**method, Callback::GetReJITParameters, || {
            method.refuses(&candidate)
        })
        .unwrap_or(true);
        if refused {
            log::throttled(
                "a request names a method its instrumentation method refuses",
                || {
                    format!(
                        "instrumentation method {} refuses method {token:#010x}: the request's edit is left out",
                        method.name()
                    )
                },
            );
        }
        refused
    }

    /// Runs the `wanted` edits on `body` (rolled back one by one when they fail, logged).
    pub(crate) fn edit(
        &self,
        wanted: &[Wanted<'_>],
        body: &mut MethodBody,
        rewrite: &mut MethodRewrite<'_>,
    ) -> crate::Result<bool> {
        let all: SmallVec<[&dyn InstrumentationMethod; 4]> =
            self.methods.iter().map(|m| &**m).collect();
        let (module, token) = (rewrite.module, rewrite.token);
        compose(
            &all,
            wanted,
            body,
            rewrite,
            &self.containers,
            &mut |index, failure| {
                self.counts.rolled_back.fetch_add(1, Relaxed);
                log_rollback(&*self.methods[index], index, module, token, &failure);
            },
        )
    }
}

/// The edits `configured` (the configured instrumentation methods that want a method,
/// in editing order, with their interest) and `request` make, in editing order, each
/// configured one with its configured options (`options`, by index): a request's
/// instrumentation method edits with the request's options, in its place, once (with
/// its configured interest if it has one, else [`Interest::Edit`]).
pub(crate) fn merge<'a>(
    options: &'a [Options],
    configured: &[(usize, Interest)],
    request: Option<&'a Request>,
) -> SmallVec<[Wanted<'a>; 4]> {
    let mut wanted: SmallVec<[Wanted<'a>; 4]> = configured
        .iter()
        .filter(|(index, _)| request.is_none_or(|r| r.index != *index))
        .map(|&(index, interest)| Wanted {
            index,
            interest,
            options: &options[index],
        })
        .collect();
    if let Some(request) = request {
        let interest = configured
            .iter()
            .find(|(index, _)| *index == request.index)
            .map_or(Interest::Edit, |(_, interest)| *interest);
        let at = wanted.partition_point(|w| w.index < request.index);
        wanted.insert(
            at,
            Wanted {
                index: request.index,
                interest,
                options: &request.options,
            },
        );
    }
    wanted
}

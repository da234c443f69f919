//! [`Hosting`]: the manager's instrumentation methods while it runs (their options, the
//! rewrite engine), shared by the first-JIT path, the ReJIT callbacks and the dial; the
//! one function that makes a method's plan for both paths ([`Hosting::plan`]); and
//! [`merge`], how a ReJIT request's edit joins the configured ones.

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use smallvec::SmallVec;

use super::config::Options;
use super::method::{Candidate, InstrumentationMethod, Interest, MethodEdit, Owner};
use super::plan::{Plan, Request};
use super::report::{ManagerCounts, guarded, log_rollback};
use crate::body::MethodBody;
use crate::clr::log;
use crate::clr::profiler::Callback;
use crate::clr::rejit::MethodKey;
use crate::clr::rewrite::MethodRewrite;
use crate::clr::rewrite::edits::{EditStep, MethodPlan};
use crate::clr::rewrite::engine::{Engine, Located, Target};
use crate::clr::rewrite::items::Containers;
use crate::clr::rewrite::module::{ModuleState, Selectors};
use crate::clr::rewrite::pipeline::Rewrite;
use crate::clr::runtime::ModuleMetadata;
use crate::clr::sys::mdToken;
use crate::metadata::MetadataSource;
use crate::selector::Selector;
use crate::transform::SingleRet;

/// What the manager's instrumentation methods are while it runs, shared by the JIT
/// path, the ReJIT callbacks and the dial.
pub(crate) struct Hosting {
    /// In editing order.
    pub(crate) methods: Arc<[Arc<dyn InstrumentationMethod>]>,
    /// Each one's configured options.
    pub(crate) options: Box<[Options]>,
    pub(crate) containers: Arc<Containers>,
    pub(crate) engine: Engine,
    /// The manager's counts (edits rolled back).
    pub(crate) counts: Arc<ManagerCounts>,
    /// Each one's [`targets`](InstrumentationMethod::targets) (empty: it has none),
    /// with how many methods each selected so far.
    pub(crate) targets: Box<[Box<[NamedTarget]>]>,
    /// Each one's priority (descending: the editing order).
    pub(crate) priorities: Box<[i32]>,
    /// The instrumentation methods added while the program runs
    /// ([`Manager::add_method`](super::Manager::add_method)), replaced as a whole on
    /// each change: a plan keeps the list it was made with.
    pub(crate) added: RwLock<Arc<[Arc<Added>]>>,
    /// Makes the instrumentation method of a library named by a request (the dial's
    /// `add`), when the profiler loads libraries.
    pub(crate) loader: Option<Arc<super::method::LibraryLoader>>,
    /// Set when the profiler is detaching: nothing more is rewritten at first JIT and
    /// no module is announced.
    pub(crate) detaching: std::sync::atomic::AtomicBool,
}

/// An instrumentation method added while the program runs: it edits in priority order
/// with the configured ones, has no targets, events, callbacks or data items of its
/// own, and the methods it changed are compiled again when it is removed.
pub(crate) struct Added {
    pub(crate) method: Arc<dyn InstrumentationMethod>,
    pub(crate) options: Options,
    pub(crate) priority: i32,
    /// Its place among the data items' owners: past every hosted one (it has none).
    pub(crate) owner: usize,
    /// The methods its edit changed.
    pub(crate) edited: Mutex<HashSet<MethodKey>>,
}

/// One of an instrumentation method's targets, and how many methods it selected in the
/// modules loaded so far.
pub(crate) struct NamedTarget {
    pub(crate) selector: Selector,
    pub(crate) selected: AtomicU64,
}

impl NamedTarget {
    /// A target not yet matched.
    pub(crate) fn new(selector: Selector) -> NamedTarget {
        NamedTarget {
            selector,
            selected: AtomicU64::new(0),
        }
    }
}

/// One instrumentation method's step in a method's plan: its edit with its options and
/// data items, run by the engine.
pub(crate) struct HostedEdit<'a, M = ModuleMetadata> {
    pub(crate) method: &'a dyn InstrumentationMethod<M>,
    pub(crate) owner: Owner,
    pub(crate) interest: Interest,
    pub(crate) options: &'a Options,
    /// Whether it is a ReJIT request's edit (not a configured one).
    pub(crate) requested: bool,
    pub(crate) containers: &'a Containers,
    /// For a method added while the program runs: where the methods it changes go.
    pub(crate) edited: Option<&'a Mutex<HashSet<MethodKey>>>,
    /// Its instrumentation method's priority.
    pub(crate) priority: i32,
}

impl<M: MetadataSource + 'static> EditStep<M> for HostedEdit<'_, M> {
    fn wants_single_ret(&self) -> bool {
        self.interest == Interest::EditSingleRet
    }

    fn edit(
        &self,
        body: &mut MethodBody,
        rewrite: &mut MethodRewrite<'_, M>,
        single_ret: Option<SingleRet>,
    ) -> crate::error::Result<bool> {
        let key = self.edited.map(|_| MethodKey {
            module: rewrite.module.id(),
            token: rewrite.token,
        });
        let mut edit = MethodEdit {
            rewrite,
            owner: self.owner,
            single_ret,
            containers: self.containers,
            options: self.options,
        };
        let changed = self.method.edit(body, &mut edit)?;
        if let (true, Some(edited), Some(key)) = (changed, self.edited, key) {
            edited
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(key);
        }
        Ok(changed)
    }
}

/// What a method's plan is made for: its first JIT with nothing else wanted (the
/// configured instrumentation methods that want it), or what ReJIT wants it to run.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Wish<'p> {
    /// The configured instrumentation, as at a first JIT.
    Configured,
    /// A ReJIT [`Plan`] (at a first JIT the machine has a wish for, or a ReJIT version).
    Plan(&'p Plan),
}

impl Hosting {
    /// Instrumentation method `index`'s view of MethodDef `token` of `module`: the one
    /// place a [`Candidate`] is made.
    fn candidate<'a>(
        &'a self,
        module: &'a ModuleState,
        token: mdToken,
        compiling: bool,
        index: usize,
    ) -> Candidate<'a> {
        Candidate {
            module,
            token,
            compiling,
            targeted: self.selects(module, token, index),
            owner: Owner {
                index,
                count: self.methods.len(),
            },
            containers: &self.containers,
        }
    }

    /// Whether instrumentation method `index` is asked about MethodDef `token` of
    /// `module`: it declares no targets, or one of them selected the method.
    fn asks(&self, module: &ModuleState, token: mdToken, index: usize) -> bool {
        self.targets[index].is_empty() || self.selects(module, token, index)
    }

    /// Whether a target of instrumentation method `index` selected MethodDef `token` of
    /// `module` when the module loaded.
    fn selects(&self, module: &ModuleState, token: mdToken, index: usize) -> bool {
        !self.targets[index].is_empty() && module.selected(token).contains(&(index as u8))
    }

    /// Whether any instrumentation method declares targets.
    pub(crate) fn has_targets(&self) -> bool {
        self.targets.iter().any(|t| !t.is_empty())
    }

    /// Finds the instrumentation methods' targets among the methods of `module`, which
    /// just loaded (type and method names in its metadata), records them on the module
    /// and counts them; returns their tokens, in token order.
    pub(crate) fn select_targets(&self, module: &ModuleState) -> Vec<mdToken> {
        if !self.has_targets() {
            return Vec::new();
        }
        let metadata = module.metadata();
        let mut selected: BTreeMap<mdToken, Selectors> = BTreeMap::new();
        for (index, targets) in self.targets.iter().enumerate() {
            for target in targets.iter() {
                let Ok(Some(type_def)) = metadata.find_type_def_path(target.selector.type_name())
                else {
                    continue;
                };
                let Ok(methods) = metadata.methods_of(type_def) else {
                    continue;
                };
                for token in methods {
                    if target.selector.matches(metadata, token) {
                        target.selected.fetch_add(1, Relaxed);
                        let by = selected.entry(token).or_default();
                        if !by.contains(&(index as u8)) {
                            by.push(index as u8);
                        }
                    }
                }
            }
        }
        let tokens = selected.keys().copied().collect();
        module.set_selected(selected);
        tokens
    }

    /// The targets that selected no method in any module loaded so far, with their
    /// instrumentation method's name.
    pub(crate) fn unmatched_targets(&self) -> Vec<(&str, &Selector)> {
        self.methods
            .iter()
            .zip(self.targets.iter())
            .flat_map(|(method, targets)| {
                targets
                    .iter()
                    .filter(|t| t.selected.load(Relaxed) == 0)
                    .map(move |t| (method.name(), &t.selector))
            })
            .collect()
    }

    /// The configured instrumentation methods that want MethodDef `token` of `module`,
    /// in editing order, with their interest (a panic counts as no interest).
    pub(crate) fn wanting(
        &self,
        module: &ModuleState,
        token: mdToken,
        compiling: bool,
    ) -> SmallVec<[(usize, Interest); 4]> {
        let callback = match compiling {
            true => Callback::JITCompilationStarted,
            false => Callback::GetReJITParameters,
        };
        self.methods
            .iter()
            .enumerate()
            .filter(|(index, _)| self.asks(module, token, *index))
            .filter_map(|(index, method)| {
                let candidate = self.candidate(module, token, compiling, index);
                let interest = guarded(&**method, callback, || method.wants(&candidate))
                    .unwrap_or(Interest::No);
                (interest != Interest::No).then_some((index, interest))
            })
            .collect()
    }

    /// The instrumentation methods added while the program runs, now.
    pub(crate) fn added(&self) -> Arc<[Arc<Added>]> {
        self.added
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The added instrumentation methods of `added` that want MethodDef `token` of
    /// `module` (a panic counts as no interest), with their interest.
    fn added_wanting<'a>(
        &'a self,
        added: &'a [Arc<Added>],
        module: &'a ModuleState,
        token: mdToken,
        callback: Callback,
    ) -> impl Iterator<Item = (&'a Added, Interest)> + 'a {
        added.iter().filter_map(move |a| {
            let candidate = Candidate {
                module,
                token,
                compiling: callback == Callback::JITCompilationStarted,
                targeted: false,
                owner: Owner {
                    index: a.owner,
                    count: self.methods.len(),
                },
                containers: &self.containers,
            };
            let interest = guarded(&*a.method, callback, || a.method.wants(&candidate))
                .unwrap_or(Interest::No);
            (interest != Interest::No).then_some((&**a, interest))
        })
    }

    /// Whether any instrumentation method wants MethodDef `token` of `module` (asked as
    /// for inlining: nothing is being compiled).
    pub(crate) fn wanted_by_any(&self, module: &ModuleState, token: mdToken) -> bool {
        let added = self.added();
        if self
            .added_wanting(&added, module, token, Callback::JITInlining)
            .next()
            .is_some()
        {
            return true;
        }
        self.methods.iter().enumerate().any(|(index, method)| {
            if !self.asks(module, token, index) {
                return false;
            }
            let candidate = self.candidate(module, token, false, index);
            guarded(&**method, Callback::JITInlining, || {
                method.wants(&candidate)
            })
            .is_some_and(|interest| interest != Interest::No)
        })
    }

    /// The plan for MethodDef `token` of `module` under `wish`, for both paths (first
    /// JIT and ReJIT): the configured instrumentation methods that want it (when the
    /// wish includes them) and a request's ([`merge`]), each with its options. `None`
    /// when nothing wants the method at all (it need not even be decoded). A request
    /// whose instrumentation method [`refuses`](InstrumentationMethod::refuses) the
    /// method is left out; the configured edits stay.
    /// `added` are the instrumentation methods added while the program runs, as the
    /// caller took them ([`Hosting::added`]): they join the configured ones that want
    /// the method, in priority order (after configured ones of the same priority).
    pub(crate) fn plan<'a>(
        &'a self,
        module: &'a ModuleState,
        token: mdToken,
        wish: Wish<'a>,
        added: &'a [Arc<Added>],
    ) -> Option<MethodPlan<HostedEdit<'a>>> {
        let (configured, request, with_added) = match wish {
            Wish::Configured => (self.wanting(module, token, true), None, true),
            Wish::Plan(plan) => {
                let configured = match plan.configured {
                    true => self.wanting(module, token, true),
                    false => SmallVec::new(),
                };
                (configured, plan.request.as_deref(), plan.configured)
            }
        };
        let added: SmallVec<[(&Added, Interest); 2]> = match with_added && !added.is_empty() {
            true => self
                .added_wanting(added, module, token, Callback::JITCompilationStarted)
                .collect(),
            false => SmallVec::new(),
        };
        if configured.is_empty() && request.is_none() && added.is_empty() {
            return None;
        }
        let request = request.filter(|r| !self.refuses(module, token, r.index));
        let mut steps: SmallVec<[HostedEdit<'a>; 4]> = merge(&self.options, &configured, request)
            .into_iter()
            .map(|wanted| HostedEdit {
                method: &*self.methods[wanted.index],
                owner: Owner {
                    index: wanted.index,
                    count: self.methods.len(),
                },
                interest: wanted.interest,
                options: wanted.options,
                requested: wanted.requested,
                containers: &self.containers,
                edited: None,
                priority: self.priorities.get(wanted.index).copied().unwrap_or(0),
            })
            .collect();
        for (a, interest) in added {
            let at = steps
                .iter()
                .position(|s| s.priority < a.priority)
                .unwrap_or(steps.len());
            steps.insert(
                at,
                HostedEdit {
                    method: &*a.method,
                    owner: Owner {
                        index: a.owner,
                        count: self.methods.len(),
                    },
                    interest,
                    options: &a.options,
                    requested: false,
                    containers: &self.containers,
                    edited: Some(&a.edited),
                    priority: a.priority,
                },
            );
        }
        Some(MethodPlan { steps })
    }

    /// Runs `plan` on the method of `target` in the engine, then counts and logs the
    /// edits it rolled back.
    pub(crate) fn run(&self, target: Target<'_>, plan: &MethodPlan<HostedEdit<'_>>) -> Rewrite {
        let rewrite = self.engine.run(target, plan);
        if !rewrite.rolled_back.is_empty() {
            let method: &Located = match target {
                Target::FirstJit(method) | Target::ReJit { method, .. } => method,
            };
            for (position, failure) in &rewrite.rolled_back {
                let step = &plan.steps[*position];
                self.counts.rolled_back.fetch_add(1, Relaxed);
                log_rollback(
                    step.method,
                    step.owner.index,
                    &method.module,
                    method.token,
                    failure,
                );
            }
        }
        rewrite
    }

    /// Whether instrumentation method `index` refuses MethodDef `token` of `module`
    /// (a panic counts as a refusal).
    fn refuses(&self, module: &ModuleState, token: mdToken, index: usize) -> bool {
        let Some(method) = self.methods.get(index) else {
            return true;
        };
        let candidate = self.candidate(module, token, true, index);
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
}

/// One instrumentation method's part in a method's rewrite: its index among the
/// manager's, its [`Interest`], and the options its edit sees
/// ([`MethodEdit::options`]: the configured ones, or a ReJIT request's).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Wanted<'o> {
    pub(crate) index: usize,
    pub(crate) interest: Interest,
    pub(crate) options: &'o Options,
    /// Whether it is a ReJIT request's edit.
    pub(crate) requested: bool,
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
            requested: false,
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
                requested: true,
            },
        );
    }
    wanted
}

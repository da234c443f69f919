//! [`ReJitControl`]: the handle through which a profiler (or its live dial) changes what
//! running methods run, and sees where each stands.

use std::collections::HashSet;
use std::sync::Arc;

use super::change::{Change, ChangeError};
use super::config::Options;
use super::plan::{Plan, Request};
use super::rejit::{ReJitController, ReJitCounts};
use super::report::guarded;
use crate::clr::profiler::Callback;
use crate::clr::rejit::{IlTarget, MethodKey};
use crate::clr::runtime::CodegenFlags;
use crate::clr::sys::ModuleID;
use crate::selector::Selector;

/// How long the runtime is told a detach takes before it first checks that no thread is
/// in a callback (it checks again periodically after).
const DETACH_EXPECTED_MS: u32 = 500;

/// A handle on a running [`Manager`](super::Manager)'s ReJIT
/// ([`Manager::rejit`](super::Manager::rejit)): changes which instrumentation methods
/// edit which methods while the program runs, and says where each method stands.
///
/// A change applies from each selected method's next call (a method never called yet:
/// from its first call), to every instantiation, and to the callers that had inlined it
/// (with [`InliningCallers::Recompile`](super::InliningCallers::Recompile)). Each version's IL is built from the method's
/// pristine IL by the same pipeline as a first JIT, verified before the runtime gets it;
/// when it cannot be built the method keeps the IL it ran before, and the state says so.
/// Cheap to clone; usable from any thread (requests are made by the manager's own
/// thread).
#[derive(Clone)]
pub struct ReJitControl {
    pub(crate) controller: Arc<ReJitController>,
}

impl core::fmt::Debug for ReJitControl {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        self.controller.fmt(f)
    }
}

impl ReJitControl {
    /// The methods of every loaded module that `selector` selects
    /// ([`Selector::matches`]: the type whose full name is its type name, `Namespace.Type`,
    /// nested types as `Namespace.Outer/Inner`; its method name, or every method; its
    /// parameter types, when it has a list). In module order, then token order. A module
    /// may unload right after: [`ReJitControl::apply`] then refuses its methods.
    pub fn select(&self, selector: &Selector) -> Vec<MethodKey> {
        self.controller
            .with_modules(|loaded| self.select_among(loaded, selector))
    }

    /// [`ReJitControl::select`] among the modules `loaded`.
    fn select_among(&self, loaded: &HashSet<ModuleID>, selector: &Selector) -> Vec<MethodKey> {
        let mut keys = Vec::new();
        self.controller.hosting().engine.for_each_module(|state| {
            if !loaded.contains(&state.id()) {
                return;
            }
            let metadata = state.metadata();
            let Ok(Some(type_def)) = metadata.find_type_def_path(selector.type_name()) else {
                return;
            };
            let Ok(methods) = metadata.methods_of(type_def) else {
                return;
            };
            for token in methods {
                if selector.matches(metadata, token) {
                    keys.push(MethodKey {
                        module: state.id(),
                        token,
                    });
                }
            }
        });
        keys.sort_unstable();
        keys
    }

    /// Asks for `change` of the methods `keys` and waits until the runtime has been
    /// asked (its calls take effect at each method's next call). Returns how many
    /// methods the change named (a method never changed before that already runs what
    /// is asked is left out of the machine).
    ///
    /// # Errors
    /// An instrumentation method the manager does not host, options it does not take or
    /// accept, no method, or a method of a module unloaded since it was selected:
    /// nothing is changed. The runtime's calls not made in time (then the change is made
    /// later).
    pub fn apply(&self, keys: &[MethodKey], change: &Change) -> Result<usize, ChangeError> {
        let request = self.request_of(change)?;
        let ask = self.controller.with_modules(|loaded| {
            if let Some(gone) = keys.iter().find(|k| !loaded.contains(&k.module)) {
                return Err(ChangeError::ModuleUnloaded(gone.module));
            }
            self.want(keys, change, request.as_ref())
        })?;
        self.controller.wait_served(ask)?;
        Ok(keys.len())
    }

    /// [`ReJitControl::select`] and [`ReJitControl::apply`] in one step, with no module
    /// unloading in between.
    ///
    /// # Errors
    /// As [`ReJitControl::apply`]; no method selected.
    pub fn select_and_apply(
        &self,
        selector: &Selector,
        change: &Change,
    ) -> Result<usize, ChangeError> {
        let request = self.request_of(change)?;
        let (count, ask) = self.controller.with_modules(|loaded| {
            let keys = self.select_among(loaded, selector);
            if keys.is_empty() {
                return Err(ChangeError::NothingSelected(selector.clone()));
            }
            Ok((keys.len(), self.want(&keys, change, request.as_ref())?))
        })?;
        self.controller.wait_served(ask)?;
        Ok(count)
    }

    /// The request an [`Change::Instrument`] makes, checked.
    fn request_of(&self, change: &Change) -> Result<Option<Arc<Request>>, ChangeError> {
        match change {
            Change::Instrument {
                method, options, ..
            } => Ok(Some(Arc::new(self.request(method, options)?))),
            _ => Ok(None),
        }
    }

    /// Tells the machine what `change` wants of `keys` (of loaded modules, which stay
    /// loaded meanwhile); the driver's ask to wait for.
    fn want(
        &self,
        keys: &[MethodKey],
        change: &Change,
        request: Option<&Arc<Request>>,
    ) -> Result<u64, ChangeError> {
        if keys.is_empty() {
            return Err(ChangeError::NoMethod);
        }
        let hosting = self.controller.hosting();
        let mut targets = Vec::with_capacity(keys.len());
        for &key in keys {
            let state =
                hosting
                    .engine
                    .module(key.module)
                    .map_err(|source| ChangeError::Module {
                        module: key.module,
                        source,
                    })?;
            let configured = !hosting.wanting(&state, key.token, false).is_empty();
            let default = match state.was_rewritten(key.token) {
                true => IlTarget::Plan(Plan::CONFIGURED),
                false => IlTarget::File,
            };
            let target = match change {
                Change::Instrument { flags, .. } => Plan {
                    configured,
                    request: request.cloned(),
                    flags: *flags,
                }
                .into_target(),
                Change::Configured => Plan {
                    configured,
                    request: None,
                    flags: CodegenFlags::NONE,
                }
                .into_target(),
                Change::File => IlTarget::File,
                Change::Flags(flags) => {
                    let current = self
                        .controller
                        .desired(key)
                        .unwrap_or_else(|| default.clone());
                    let plan = match current {
                        IlTarget::File => Plan {
                            configured: false,
                            request: None,
                            flags: *flags,
                        },
                        IlTarget::Plan(plan) => Plan {
                            flags: *flags,
                            ..plan
                        },
                    };
                    plan.into_target()
                }
            };
            // A method never changed whose default IL is what is asked: nothing to
            // ask the runtime, and no record to keep.
            if target != default || self.controller.desired(key).is_some() {
                targets.push((key, target, default));
            }
        }
        Ok(self.controller.want(targets))
    }

    /// The request for instrumentation method `name` with `words` as options.
    fn request(&self, name: &str, words: &[(String, String)]) -> Result<Request, ChangeError> {
        let hosting = &self.controller.hosting();
        let Some(index) = hosting.methods.iter().position(|m| m.name() == name) else {
            return Err(ChangeError::UnknownMethod {
                name: name.to_owned(),
                hosted: hosting
                    .methods
                    .iter()
                    .map(|m| m.name().to_owned())
                    .collect(),
            });
        };
        let method = &hosting.methods[index];
        let options = Options::from_words("request", name, method.options(), words)
            .map_err(ChangeError::Options)?;
        guarded(&**method, Callback::GetReJITParameters, || {
            method.check_options(&options)
        })
        .unwrap_or_else(|| Err("its option check panicked".into()))
        .map_err(|why| ChangeError::OptionsRefused {
            name: name.to_owned(),
            why,
        })?;
        Ok(Request {
            index,
            name: name.to_owned(),
            options,
        })
    }

    /// Reverts every change and asks the runtime to detach the profiler: from now on
    /// nothing is rewritten at a first JIT and no module is announced; every method the
    /// profiler changed (rewritten at its first JIT, or given a ReJIT version) is
    /// compiled again with the file's own IL; once the runtime was asked for those, it
    /// is asked to detach ([`ProfilerInfo::request_profiler_detach`]), which it does
    /// once no thread is inside a callback. Returns how many methods were reverted.
    ///
    /// # Errors
    /// The runtime's calls not made in time, or its refusal to detach (then the
    /// profiler stays, with the methods reverted and nothing more rewritten). CoreCLR
    /// 3.1 and 8 refuse whenever `COR_PRF_ENABLE_REJIT` was set, even with no method
    /// ever re-JIT-compiled (`CORPROF_E_IRREVERSIBLE_INSTRUMENTATION_PRESENT`, measured):
    /// a manager with ReJIT, as every attached one, cannot leave the process.
    ///
    /// [`ProfilerInfo::request_profiler_detach`]: crate::clr::ProfilerInfo::request_profiler_detach
    pub fn detach(&self) -> Result<usize, ChangeError> {
        let hosting = self.controller.hosting();
        hosting
            .detaching
            .store(true, std::sync::atomic::Ordering::SeqCst);
        let keys: Vec<MethodKey> = self.controller.with_modules(|loaded| {
            let mut keys = std::collections::BTreeSet::new();
            hosting.engine.for_each_module(|state| {
                if loaded.contains(&state.id()) {
                    keys.extend(
                        state
                            .rewritten_methods()
                            .into_iter()
                            .map(|token| MethodKey {
                                module: state.id(),
                                token,
                            }),
                    );
                }
            });
            keys.extend(
                self.controller
                    .recorded()
                    .into_iter()
                    .filter(|k| loaded.contains(&k.module)),
            );
            keys.into_iter().collect()
        });
        let count = keys.len();
        if count > 0 {
            self.apply(&keys, &Change::File)?;
        }
        hosting
            .engine
            .info()
            .request_profiler_detach(DETACH_EXPECTED_MS)
            .map_err(ChangeError::Detach)?;
        crate::clr::log::write(&format!(
            "{count} method(s) back to their own IL; the runtime detaches the profiler"
        ));
        Ok(count)
    }

    /// One line per method the ReJIT machine has a record of: its name, module and
    /// assembly, what it is wanted to run, its default IL, where the runtime stands,
    /// failures with their `HRESULT`.
    pub fn states(&self) -> Vec<String> {
        let rewriter = &self.controller.hosting().engine;
        // Records are only of loaded modules, which stay loaded while their names are read.
        self.controller.with_modules(|_| {
            self.controller.listing(|key| {
                rewriter.module(key.module).map_or_else(
                    |_| ("?".to_owned(), "?".to_owned()),
                    |state| {
                        let name = crate::disasm::method_name(state.metadata(), key.token);
                        let assembly = state
                            .facts()
                            .map_or_else(|| "?".to_owned(), |f| f.assembly_name.clone());
                        (format!("{}::{}", name.owner, name.name), assembly)
                    },
                )
            })
        })
    }

    /// Counts of the ReJIT work so far.
    pub fn counts(&self) -> &ReJitCounts {
        &self.controller.counts
    }
}

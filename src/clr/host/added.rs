//! Instrumentation methods added and removed while the program runs
//! ([`ReJitControl::add_method`], [`ReJitControl::remove_method`], and the dial's `add`
//! and `remove`): each joins the configured ones in priority order at the next
//! compilation of the methods it wants, and the methods it is told to reach (or, when
//! removed, those it changed) are compiled again through ReJIT.

use std::collections::HashSet;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex, PoisonError};

use super::change::ChangeError;
use super::config::Options;
use super::events::{EventMasks, Events, EventsHandle};
use super::hosting::Added;
use super::method::{InstrumentationMethod, Start};
use super::rejit_control::ReJitControl;
use crate::clr::log;
use crate::clr::rejit::MethodKey;
use crate::selector::Selector;

/// The data-item owner numbers of added methods: past any hosted index (at most 255),
/// never reused.
static NEXT_OWNER: AtomicUsize = AtomicUsize::new(1 << 16);

impl ReJitControl {
    /// Adds `method`, with `options` (as `KEY=VALUE` words, checked against what it
    /// declares) and `priority`, while the program runs: it is started (its events
    /// handle refuses changes: the runtime's events are fixed by then), then edits every
    /// method it wants from that method's next compilation, in priority order with the
    /// configured instrumentation methods (after those of its priority). The methods
    /// `reach` selects are compiled again now (their next call runs the new IL); the
    /// others when they are first compiled. Returns how many were selected. It has no
    /// data items of its own (its module items are never set, since the modules loaded
    /// before it; its method items are not kept), and it may have no targets,
    /// callbacks or events.
    ///
    /// # Errors
    /// A name that runs already, options it does not declare or accept, a `start` that
    /// fails (nothing of it stays), callbacks, events or targets after its start
    /// ([`ChangeError::CannotBeAdded`]), the runtime's calls not made in time.
    pub fn add_method(
        &self,
        method: Arc<dyn InstrumentationMethod>,
        priority: i32,
        options: &[(String, String)],
        reach: &Selector,
    ) -> Result<usize, ChangeError> {
        let hosting = self.controller.hosting();
        let name = method.name().to_owned();
        if hosting.methods.iter().any(|m| m.name() == name)
            || hosting.added().iter().any(|a| a.method.name() == name)
        {
            return Err(ChangeError::NameTaken(name));
        }
        let options = Options::from_words("add", &name, method.options(), options)
            .map_err(ChangeError::Options)?;
        // Its own detached events: `set` answers that there is no such method.
        let handle = EventsHandle::new(EventMasks::new(Events::default(), Vec::new()), 0);
        let start = Start {
            info: hosting.engine.info(),
            options: &options,
            events: &handle,
        };
        match log::contain(|| method.start(&start)) {
            Ok(Ok(())) => {}
            Ok(Err(why)) => {
                return Err(ChangeError::DidNotStart {
                    name,
                    why: why.to_string(),
                });
            }
            Err(message) => {
                return Err(ChangeError::DidNotStart {
                    name,
                    why: format!("panicked: {message}"),
                });
            }
        }
        let needs = [
            (!method.callbacks().is_empty(), "it subscribes to callbacks"),
            (
                method.events() != Events::default(),
                "it asks for runtime events",
            ),
            (!method.targets().is_empty(), "it has targets"),
        ];
        if let Some((_, why)) = needs.iter().find(|(has, _)| *has) {
            return Err(ChangeError::CannotBeAdded {
                name,
                why: (*why).to_owned(),
            });
        }
        let added = Arc::new(Added {
            method,
            options,
            priority,
            owner: NEXT_OWNER.fetch_add(1, Relaxed),
            edited: Mutex::new(HashSet::new()),
        });
        {
            let mut list = hosting
                .added
                .write()
                .unwrap_or_else(PoisonError::into_inner);
            let mut methods: Vec<Arc<Added>> = list.iter().cloned().collect();
            methods.push(added);
            *list = Arc::from(methods);
        }
        let keys = self.select(reach);
        let count = keys.len();
        log::write(&format!(
            "instrumentation method {name} added (priority {priority}); {count} method(s) compiled again"
        ));
        self.renew(keys)?;
        Ok(count)
    }

    /// Loads the instrumentation method of the library at `path` with the manager's
    /// loader ([`Manager::with_library_loader`](super::Manager::with_library_loader))
    /// and adds it as [`ReJitControl::add_method`] does.
    ///
    /// # Errors
    /// No loader, a library it refuses, and those of [`ReJitControl::add_method`].
    pub fn add_library(
        &self,
        path: &Path,
        priority: i32,
        options: &[(String, String)],
        reach: &Selector,
    ) -> Result<usize, ChangeError> {
        let loader = self
            .controller
            .hosting()
            .loader
            .clone()
            .ok_or(ChangeError::NoLoader)?;
        let method = loader(path).map_err(|why| ChangeError::DidNotStart {
            name: path.display().to_string(),
            why,
        })?;
        self.add_method(method, priority, options, reach)
    }

    /// Removes the instrumentation method `name` added while the program runs: no
    /// compilation uses it from now on, and the methods it changed are compiled again
    /// (their next call runs the IL without its edits). Returns how many. It is dropped
    /// once no compilation under way holds it.
    ///
    /// # Errors
    /// No such added method (a configured one cannot be removed), the runtime's calls
    /// not made in time.
    pub fn remove_method(&self, name: &str) -> Result<usize, ChangeError> {
        let hosting = self.controller.hosting();
        let removed = {
            let mut list = hosting
                .added
                .write()
                .unwrap_or_else(PoisonError::into_inner);
            let Some(at) = list.iter().position(|a| a.method.name() == name) else {
                return Err(ChangeError::NotAdded(name.to_owned()));
            };
            let mut methods: Vec<Arc<Added>> = list.iter().cloned().collect();
            let removed = methods.remove(at);
            *list = Arc::from(methods);
            removed
        };
        let keys: Vec<MethodKey> = removed
            .edited
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .copied()
            .collect();
        let count = keys.len();
        log::write(&format!(
            "instrumentation method {name} removed; {count} method(s) it changed compiled again"
        ));
        self.renew(keys)?;
        Ok(count)
    }

    /// Has `keys`, of loaded modules, compiled again with what is wanted of them, and
    /// waits until the runtime was asked.
    fn renew(&self, keys: Vec<MethodKey>) -> Result<(), ChangeError> {
        let ask = self.controller.with_modules(|loaded| {
            let live: Vec<MethodKey> = keys
                .into_iter()
                .filter(|k| loaded.contains(&k.module))
                .collect();
            self.controller.renew(live)
        });
        self.controller.wait_served(ask)
    }
}

//! The runtime events of a manager's instrumentation methods: each one's current
//! flags (at start, what it declares and set, with what its callbacks need:
//! [`with_subscriptions`]), their union asked of the runtime, and [`EventsHandle`], with
//! which one changes its own flags later.

use std::sync::{Arc, Mutex, PoisonError};

use crate::clr::log;
use crate::clr::profiler::{Callback, Callbacks};
use crate::clr::runtime::{ClrError, ClrResult, ProfilerInfo};
use crate::clr::sys::{CorPrfHighMonitor, CorPrfMonitor};

/// The runtime events an instrumentation method needs (`COR_PRF_MONITOR` and
/// `COR_PRF_HIGH_MONITOR` flags); the manager asks the runtime for the union of all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Events {
    /// `COR_PRF_MONITOR` flags.
    pub low: CorPrfMonitor,
    /// `COR_PRF_HIGH_MONITOR` flags.
    pub high: CorPrfHighMonitor,
}

impl Default for Events {
    fn default() -> Events {
        Events {
            low: CorPrfMonitor::empty(),
            high: CorPrfHighMonitor::empty(),
        }
    }
}

/// Every instrumentation method's events, and the runtime to tell their union.
#[derive(Debug)]
pub(crate) struct EventMasks {
    state: Mutex<MaskState>,
}

#[derive(Debug)]
struct MaskState {
    /// What the manager needs itself.
    own: Events,
    /// Each instrumentation method's events, in the manager's order.
    each: Vec<Events>,
    /// The runtime, once the union was first asked for (changes before that are only
    /// recorded).
    info: Option<ProfilerInfo>,
    /// The manager runs nothing (an instrumentation method failed to start): no
    /// change is asked of the runtime again.
    closed: bool,
}

impl EventMasks {
    /// The masks of `each` (in the manager's order), with the manager's `own` events.
    pub(crate) fn new(own: Events, each: Vec<Events>) -> Arc<EventMasks> {
        Arc::new(EventMasks {
            state: Mutex::new(MaskState {
                own,
                each,
                info: None,
                closed: false,
            }),
        })
    }

    /// The union of the manager's events and every instrumentation method's.
    pub(crate) fn union(&self) -> Events {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        union(state.own, &state.each)
    }

    /// The manager's own events.
    pub(crate) fn own(&self) -> Events {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .own
    }

    /// Adds `events` to the manager's own (before [`EventMasks::arm`]).
    pub(crate) fn add_own(&self, events: Events) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.own = union(state.own, &[events]);
    }

    /// Asks the runtime for the union, and for the new union at every later change.
    pub(crate) fn arm(&self, info: &ProfilerInfo) -> ClrResult<()> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let events = union(state.own, &state.each);
        info.set_event_mask(events.low, events.high)?;
        state.info = Some(info.clone());
        Ok(())
    }

    /// No change is asked of the runtime from now on.
    pub(crate) fn close(&self) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.closed = true;
        state.info = None;
    }

    /// Instrumentation method `index`'s events (none for an index it does not have).
    pub(crate) fn get(&self, index: usize) -> Events {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.each.get(index).copied().unwrap_or_default()
    }

    fn set(&self, index: usize, events: Events) -> ClrResult<()> {
        const METHOD: &str = "SetEventMask2";
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if state.closed {
            return Err(ClrError::Unexpected {
                method: METHOD,
                what: "the manager runs no instrumentation method",
            });
        }
        let Some(old) = state.each.get(index).copied() else {
            return Err(ClrError::Unexpected {
                method: METHOD,
                what: "no such instrumentation method",
            });
        };
        if state.info.is_some() && changes_immutable(old, events) {
            return Err(ClrError::Unexpected {
                method: METHOD,
                what: "a flag the runtime takes only at initialization would change",
            });
        }
        state.each[index] = events;
        if let Some(info) = &state.info {
            // Under the lock: concurrent changes reach the runtime in the order they
            // were recorded, the last one with the union of all.
            let all = union(state.own, &state.each);
            if let Err(e) = info.set_event_mask(all.low, all.high) {
                state.each[index] = old;
                return Err(e);
            }
        }
        Ok(())
    }
}

/// A flag a subscribed callback needs that the manager cannot ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Unavailable {
    /// The callback.
    pub(crate) callback: Callback,
    /// The flag, as the IDL names it.
    pub(crate) flag: &'static str,
    /// Why not.
    pub(crate) why: &'static str,
}

/// The events of the instrumentation method `name` at start: `started` (what it declares
/// and what it set during its start), with, for each of its `callbacks` that neither
/// `started`, its `deferred` events nor the manager's `own` deliver, the flags the
/// callback needs ([`Callback::events`]), each addition logged. `COR_PRF_ENABLE_REJIT`
/// (the ReJIT callbacks) is the manager's to give: without its ReJIT, refused.
pub(crate) fn with_subscriptions(
    name: &str,
    callbacks: Callbacks,
    started: Events,
    deferred: Events,
    own: Events,
) -> Result<Events, Unavailable> {
    let mut events = started;
    for &callback in Callback::ALL.iter().filter(|&&c| callbacks.contains(c)) {
        let needs = callback.events();
        let have = union(own, &[events, deferred]);
        if needs.delivered_by(have.low, have.high) {
            continue;
        }
        if needs.low.contains(CorPrfMonitor::ENABLE_REJIT)
            && !have.low.contains(CorPrfMonitor::ENABLE_REJIT)
        {
            return Err(Unavailable {
                callback,
                flag: "COR_PRF_ENABLE_REJIT",
                why: "the manager's ReJIT is off (Manager::with_rejit)",
            });
        }
        let (low, high) = (needs.low - have.low, needs.high - have.high);
        let flags: Vec<String> = low
            .iter_names()
            .map(|(flag, _)| format!("COR_PRF_{flag}"))
            .chain(
                high.iter_names()
                    .map(|(flag, _)| format!("COR_PRF_HIGH_{flag}")),
            )
            .collect();
        log::write(&format!(
            "instrumentation method {name} subscribes to {}: asking for {}",
            callback.name(),
            flags.join(" "),
        ));
        events = union(events, &[Events { low, high }]);
    }
    Ok(events)
}

/// `own` and every one of `each`.
fn union(own: Events, each: &[Events]) -> Events {
    each.iter().fold(own, |all, e| Events {
        low: all.low | e.low,
        high: all.high | e.high,
    })
}

/// Whether going from `old` to `new` changes a flag the runtime takes only in
/// `Initialize`.
fn changes_immutable(old: Events, new: Events) -> bool {
    let low = (old.low ^ new.low) & CorPrfMonitor::MONITOR_IMMUTABLE;
    let high = (old.high ^ new.high) & CorPrfHighMonitor::MONITOR_IMMUTABLE;
    !low.is_empty() || !high.is_empty()
}

/// One instrumentation method's hold on its own runtime events
/// ([`Start::events`](super::Start::events)), to change them while the program runs
/// (turn on class loads once a module of interest loads, turn off allocations
/// tracking): the manager asks the runtime for the new union of everyone's events.
/// Cheap to clone and to keep; usable from any thread.
#[derive(Debug, Clone)]
pub struct EventsHandle {
    masks: Arc<EventMasks>,
    index: usize,
}

impl EventsHandle {
    pub(crate) fn new(masks: Arc<EventMasks>, index: usize) -> EventsHandle {
        EventsHandle { masks, index }
    }

    /// Its events now.
    pub fn get(&self) -> Events {
        self.masks.get(self.index)
    }

    /// Replaces its events with `events`; the runtime gets the union of everyone's at
    /// once (during [`start`](super::InstrumentationMethod::start), at the end of the
    /// initialization). Callbacks are still delivered only to their subscribers
    /// ([`callbacks`](super::InstrumentationMethod::callbacks)).
    ///
    /// # Errors
    /// After initialization, a change of a flag the runtime takes only then
    /// (`COR_PRF_MONITOR_IMMUTABLE`, `COR_PRF_HIGH_MONITOR_IMMUTABLE`); when the
    /// manager runs nothing; the runtime's refusal (its events are then as before).
    pub fn set(&self, events: Events) -> ClrResult<()> {
        self.masks.set(self.index, events)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(low: CorPrfMonitor) -> Events {
        Events {
            low,
            high: CorPrfHighMonitor::empty(),
        }
    }

    #[test]
    fn the_union_follows_each_change_before_initialization() {
        let own = events(CorPrfMonitor::MONITOR_JIT_COMPILATION);
        let masks = EventMasks::new(own, vec![Events::default(); 3]);
        let second = EventsHandle::new(masks.clone(), 1);
        second
            .set(events(CorPrfMonitor::MONITOR_CLASS_LOADS))
            .unwrap();
        let third = EventsHandle::new(masks.clone(), 2);
        third
            .set(events(
                CorPrfMonitor::MONITOR_CLASS_LOADS | CorPrfMonitor::MONITOR_THREADS,
            ))
            .unwrap();
        assert_eq!(
            masks.union().low,
            CorPrfMonitor::MONITOR_JIT_COMPILATION
                | CorPrfMonitor::MONITOR_CLASS_LOADS
                | CorPrfMonitor::MONITOR_THREADS
        );
        // One turning a flag off leaves it on while another still wants it.
        second.set(Events::default()).unwrap();
        assert!(
            masks
                .union()
                .low
                .contains(CorPrfMonitor::MONITOR_CLASS_LOADS)
        );
        third.set(Events::default()).unwrap();
        assert_eq!(masks.union(), own);
        assert_eq!(third.get(), Events::default());
        // Before initialization, immutable flags may still change.
        third
            .set(events(CorPrfMonitor::ENABLE_OBJECT_ALLOCATED))
            .unwrap();
    }

    /// A method subscribed to `ExceptionThrown` without declaring
    /// `MONITOR_EXCEPTIONS` gets it at start (and it reaches the union asked of the
    /// runtime; the log line naming both is checked by `tests/clr_manager.rs`, the log
    /// sink being the process's: `log.rs`'s own test replaces it); what the manager or its own events give, or
    /// what it defers, is not added; `ENABLE_REJIT` without the manager's ReJIT is
    /// refused, naming the callback and the flag.
    #[test]
    fn subscriptions_bring_the_events_they_need() {
        let own = events(CorPrfMonitor::MONITOR_JIT_COMPILATION);
        let subscribed = Callbacks::empty()
            .with(Callback::ExceptionThrown)
            .with(Callback::JITCompilationStarted);
        let started = events(CorPrfMonitor::MONITOR_THREADS);
        let got = with_subscriptions("counter", subscribed, started, Events::default(), own);
        let want = CorPrfMonitor::MONITOR_THREADS | CorPrfMonitor::MONITOR_EXCEPTIONS;
        assert_eq!(got, Ok(events(want)));
        let masks = EventMasks::new(own, vec![Events::default()]);
        EventsHandle::new(masks.clone(), 0)
            .set(got.unwrap())
            .unwrap();
        assert!(
            masks
                .union()
                .low
                .contains(CorPrfMonitor::MONITOR_EXCEPTIONS)
        );
        // Deferred: left for the method to ask later.
        let deferred = events(CorPrfMonitor::MONITOR_EXCEPTIONS);
        let later = with_subscriptions("later", subscribed, Events::default(), deferred, own);
        assert_eq!(later, Ok(Events::default()));
        // High flags, and an alternative already asked for.
        let references = Callbacks::empty().with(Callback::GetAssemblyReferences);
        let got = with_subscriptions(
            "refs",
            references,
            Events::default(),
            Events::default(),
            own,
        );
        assert_eq!(
            got.unwrap().high,
            CorPrfHighMonitor::ADD_ASSEMBLY_REFERENCES
        );
        let basic = Events {
            low: CorPrfMonitor::empty(),
            high: CorPrfHighMonitor::BASIC_GC,
        };
        let gc = Callbacks::empty().with(Callback::GarbageCollectionStarted);
        assert_eq!(
            with_subscriptions("gc", gc, basic, Events::default(), own),
            Ok(basic)
        );
        // ReJIT's callbacks: the manager's ReJIT, or a refusal naming both.
        let rejit = Callbacks::empty().with(Callback::ReJITError);
        let refused = with_subscriptions("r", rejit, Events::default(), Events::default(), own);
        let refused = refused.unwrap_err();
        assert_eq!(
            (refused.callback, refused.flag),
            (Callback::ReJITError, "COR_PRF_ENABLE_REJIT")
        );
        let with_rejit = events(CorPrfMonitor::ENABLE_REJIT);
        let got = with_subscriptions("r", rejit, Events::default(), Events::default(), with_rejit);
        assert_eq!(got, Ok(Events::default()));
    }

    #[test]
    fn immutable_flags_and_closed_managers_are_refused() {
        let old = events(CorPrfMonitor::ENABLE_OBJECT_ALLOCATED);
        assert!(changes_immutable(old, Events::default()));
        assert!(!changes_immutable(
            old,
            events(CorPrfMonitor::ENABLE_OBJECT_ALLOCATED | CorPrfMonitor::MONITOR_GC)
        ));
        let tiering = Events {
            low: CorPrfMonitor::empty(),
            high: CorPrfHighMonitor::DISABLE_TIERED_COMPILATION,
        };
        assert!(changes_immutable(Events::default(), tiering));
        let masks = EventMasks::new(Events::default(), vec![Events::default()]);
        masks.close();
        let handle = EventsHandle::new(masks.clone(), 0);
        assert!(handle.set(events(CorPrfMonitor::MONITOR_GC)).is_err());
        assert!(EventsHandle::new(masks, 5).get() == Events::default());
    }
}

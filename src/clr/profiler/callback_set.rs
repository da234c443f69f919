//! [`Callback`]: the runtime's callbacks by name, with the events each needs
//! ([`CallbackEvents`]), and [`Callbacks`], a set of them (what an instrumentation method
//! subscribes to), all made from the callback list.

use super::callbacks::for_each_callback;
use crate::clr::sys::{CorPrfHighMonitor, CorPrfMonitor};

/// [`Callback`], its order and its names, from every interface's slots.
macro_rules! define_callback_enum {
    ($( $iface:literal $vtable:tt {
        $( $slot:ident => $method:ident $thunk:tt $events:tt, )*
    } )*) => {
        /// One callback of `ICorProfilerCallback` .. `ICorProfilerCallback11`, named as
        /// its vtable slot; its [`Profiler`](super::Profiler) method is the name in
        /// snake case.
        #[allow(non_camel_case_types, clippy::upper_case_acronyms)]
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[repr(u8)]
        pub enum Callback {
            $($(
                #[doc = concat!("`", $iface, "::", stringify!($slot), "`: [`Profiler::",
                    stringify!($method), "`](super::Profiler::", stringify!($method), ").")]
                $slot,
            )*)*
        }

        impl Callback {
            /// Every callback, in vtable order.
            pub const ALL: &'static [Callback] = &[$($(Callback::$slot,)*)*];

            /// The slot's name (`"JITCompilationStarted"`).
            pub const fn name(self) -> &'static str {
                match self {
                    $($(Callback::$slot => stringify!($slot),)*)*
                }
            }

            /// The event flags the runtime checks before making this call (the list's
            /// `[events]`; sources in `docs/design.md`, "Which events each callback
            /// needs"): `Callback::ExceptionThrown.events().low` is
            /// `MONITOR_EXCEPTIONS`.
            pub const fn events(self) -> CallbackEvents {
                match self {
                    $($(Callback::$slot => callback_events!($events),)*)*
                }
            }
        }
    };
}

/// One entry's `[events]` as a [`CallbackEvents`].
macro_rules! callback_events {
    ([$(low $($low:ident)|+)? $(high $($high:ident)|+)?
        $(, or $(low $($or_low:ident)|+)? $(high $($or_high:ident)|+)?)?]) => {
        CallbackEvents {
            low: CorPrfMonitor::empty() $($(.union(CorPrfMonitor::$low))+)?,
            high: CorPrfHighMonitor::empty() $($(.union(CorPrfHighMonitor::$high))+)?,
            or_low: CorPrfMonitor::empty() $($($(.union(CorPrfMonitor::$or_low))+)?)?,
            or_high: CorPrfHighMonitor::empty() $($($(.union(CorPrfHighMonitor::$or_high))+)?)?,
        }
    };
}

/// The event flags the runtime checks before calling a [`Callback`]
/// ([`Callback::events`]): all of `low` and `high`, or any one of `or_low` and
/// `or_high`, which deliver part of its calls (the small collections of
/// `COR_PRF_HIGH_BASIC_GC`, the compacting ones of `COR_PRF_HIGH_MONITOR_GC_MOVED_OBJECTS`,
/// the large or pinned objects of `COR_PRF_HIGH_MONITOR_LARGEOBJECT_ALLOCATED` and
/// `COR_PRF_HIGH_MONITOR_PINNEDOBJECT_ALLOCATED`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallbackEvents {
    /// The `COR_PRF_MONITOR` flags it needs, all of them.
    pub low: CorPrfMonitor,
    /// The `COR_PRF_HIGH_MONITOR` flags it needs, all of them.
    pub high: CorPrfHighMonitor,
    /// `COR_PRF_MONITOR` flags any one of which delivers part of its calls instead.
    pub or_low: CorPrfMonitor,
    /// `COR_PRF_HIGH_MONITOR` flags any one of which delivers part of its calls instead.
    pub or_high: CorPrfHighMonitor,
}

impl CallbackEvents {
    /// Whether the runtime calls it whatever the event mask (`Initialize`, `Shutdown`,
    /// the attach and detach callbacks, `LoadAsNotificationOnly`).
    pub const fn is_empty(self) -> bool {
        self.low.is_empty() && self.high.is_empty()
    }

    /// Whether an event mask of `low` and `high` delivers it: every flag it needs, or
    /// one of those that deliver part of its calls instead.
    pub const fn delivered_by(self, low: CorPrfMonitor, high: CorPrfHighMonitor) -> bool {
        (low.contains(self.low) && high.contains(self.high))
            || low.intersects(self.or_low)
            || high.intersects(self.or_high)
    }
}

for_each_callback!(interfaces define_callback_enum);

/// A set of [`Callback`]s: those an instrumentation method subscribes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Callbacks(u128);

const _: () = assert!(Callback::ALL.len() <= 128);

impl Callbacks {
    /// No callback.
    pub const fn empty() -> Callbacks {
        Callbacks(0)
    }

    /// Every callback.
    pub const fn all() -> Callbacks {
        let mut bits = 0u128;
        let mut i = 0;
        while i < Callback::ALL.len() {
            bits |= 1 << i;
            i += 1;
        }
        Callbacks(bits)
    }

    /// This set and `callback`.
    #[must_use]
    pub const fn with(self, callback: Callback) -> Callbacks {
        Callbacks(self.0 | 1 << callback as u8)
    }

    /// Whether `callback` is in the set.
    pub const fn contains(self, callback: Callback) -> bool {
        self.0 & 1 << callback as u8 != 0
    }

    /// How many callbacks are in the set.
    pub const fn len(self) -> u32 {
        self.0.count_ones()
    }

    /// Whether the set is empty.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }
}

impl FromIterator<Callback> for Callbacks {
    fn from_iter<I: IntoIterator<Item = Callback>>(iter: I) -> Callbacks {
        iter.into_iter().fold(Callbacks::empty(), Callbacks::with)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The list has the 95 callbacks of the trait, in vtable order, each its own bit.
    #[test]
    fn one_bit_per_callback_in_vtable_order() {
        assert_eq!(Callback::ALL.len(), 95);
        assert_eq!(Callback::ALL[0], Callback::Initialize);
        assert_eq!(Callback::ALL[0].name(), "Initialize");
        assert_eq!(Callback::ALL[94], Callback::LoadAsNotificationOnly);
        for (i, c) in Callback::ALL.iter().enumerate() {
            assert_eq!(*c as usize, i);
        }
        assert_eq!(Callbacks::all().len(), 95);
        let set: Callbacks = [Callback::ModuleLoadFinished, Callback::Shutdown]
            .into_iter()
            .collect();
        assert!(set.contains(Callback::ModuleLoadFinished) && set.contains(Callback::Shutdown));
        assert!(!set.contains(Callback::JITCompilationStarted));
        assert_eq!(set.len(), 2);
        assert!(Callbacks::empty().is_empty());
    }

    /// The events table: every callback has its entry; the known pairs; those the
    /// runtime calls whatever the mask; the alternatives that deliver part of the calls.
    #[test]
    fn each_callback_names_the_events_it_needs() {
        let (low, high) = (CorPrfMonitor::empty(), CorPrfHighMonitor::empty());
        for (callback, flag) in [
            (Callback::ExceptionThrown, CorPrfMonitor::MONITOR_EXCEPTIONS),
            (
                Callback::ExceptionCatcherEnter,
                CorPrfMonitor::MONITOR_EXCEPTIONS,
            ),
            (
                Callback::ModuleLoadFinished,
                CorPrfMonitor::MONITOR_MODULE_LOADS,
            ),
            (
                Callback::ModuleAttachedToAssembly,
                CorPrfMonitor::MONITOR_MODULE_LOADS,
            ),
            (
                Callback::GarbageCollectionStarted,
                CorPrfMonitor::MONITOR_GC,
            ),
            (
                Callback::JITInlining,
                CorPrfMonitor::MONITOR_JIT_COMPILATION,
            ),
            (Callback::ThreadNameChanged, CorPrfMonitor::MONITOR_THREADS),
            (
                Callback::RuntimeThreadResumed,
                CorPrfMonitor::MONITOR_SUSPENDS,
            ),
            (Callback::GetReJITParameters, CorPrfMonitor::ENABLE_REJIT),
            (
                Callback::ExceptionCLRCatcherFound,
                CorPrfMonitor::MONITOR_CLR_EXCEPTIONS,
            ),
        ] {
            assert_eq!(
                (callback.events().low, callback.events().high),
                (flag, high)
            );
        }
        let references = Callback::GetAssemblyReferences.events();
        assert_eq!(
            (references.low, references.high),
            (low, CorPrfHighMonitor::ADD_ASSEMBLY_REFERENCES)
        );
        let allocated = Callback::ObjectAllocated.events();
        assert_eq!(
            allocated.low,
            CorPrfMonitor::MONITOR_OBJECT_ALLOCATED | CorPrfMonitor::ENABLE_OBJECT_ALLOCATED
        );
        assert!(!allocated.delivered_by(CorPrfMonitor::MONITOR_OBJECT_ALLOCATED, high));
        assert!(allocated.delivered_by(low, CorPrfHighMonitor::MONITOR_LARGEOBJECT_ALLOCATED));
        let gc = Callback::GarbageCollectionFinished.events();
        assert!(gc.delivered_by(CorPrfMonitor::MONITOR_GC, high));
        assert!(gc.delivered_by(low, CorPrfHighMonitor::BASIC_GC));
        assert!(!gc.delivered_by(low, high));
        let always = [
            Callback::Initialize,
            Callback::Shutdown,
            Callback::InitializeForAttach,
            Callback::ProfilerAttachComplete,
            Callback::ProfilerDetachSucceeded,
            Callback::LoadAsNotificationOnly,
        ];
        for callback in Callback::ALL {
            let events = callback.events();
            assert_eq!(events.is_empty(), always.contains(callback), "{callback:?}");
            assert_eq!(
                events.delivered_by(low, high),
                events.is_empty(),
                "{callback:?}"
            );
            assert!(events.delivered_by(CorPrfMonitor::all(), CorPrfHighMonitor::all()));
        }
    }
}

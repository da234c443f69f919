//! [`Callback`]: the runtime's callbacks by name, and [`Callbacks`], a set of them (what
//! an instrumentation method subscribes to), both made from the callback list.

use super::callbacks::for_each_callback;

/// [`Callback`], its order and its names, from every interface's slots.
macro_rules! define_callback_enum {
    ($( $iface:literal $vtable:tt { $( $slot:ident => $method:ident $thunk:tt, )* } )*) => {
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
        }
    };
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
}

//! Listening to the runtime: [`CallbackId`] (one of the runtime's profiling callbacks),
//! [`Callbacks`] (the set a method subscribes to) and [`Events`] (the event flags it
//! needs beyond those).

use core::fmt;

use crate::sys;

/// One of the runtime's profiling callbacks (`ICorProfilerCallback` ..
/// `ICorProfilerCallback11`), by its `ILR_CALLBACK_*` id: the constants of this type
/// are named as the header's without the prefix (`CallbackId::MODULE_LOAD_FINISHED` is
/// `ILR_CALLBACK_MODULE_LOAD_FINISHED`), each documented with the argument words
/// [`Method::callback`](crate::Method::callback) receives, in order.
///
/// Five are not carried (the host answers them itself: `INITIALIZE`,
/// `INITIALIZE_FOR_ATTACH`, `GET_REJIT_PARAMETERS`, `GET_ASSEMBLY_REFERENCES`,
/// `LOAD_AS_NOTIFICATION_ONLY`): a library that subscribes to one is refused at load.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CallbackId(u32);

impl CallbackId {
    /// The number of ids the header defines (`0 ..` this).
    pub const COUNT: u32 = sys::CALLBACK_IDS.len() as u32;

    /// The callback with id `id` (one the header may not define: a newer host's, or
    /// none; [`CallbackId::name`] tells).
    pub const fn from_raw(id: u32) -> CallbackId {
        CallbackId(id)
    }

    /// Its id, `ILR_CALLBACK_*`.
    pub const fn get(self) -> u32 {
        self.0
    }

    /// Its name in the header (`"ILR_CALLBACK_SHUTDOWN"`), or `None` for an id the
    /// header does not define.
    pub fn name(self) -> Option<&'static str> {
        let (name, id) = *sys::CALLBACK_IDS.get(usize::try_from(self.0).ok()?)?;
        (id == self.0).then_some(name)
    }
}

impl fmt::Debug for CallbackId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => write!(f, "CallbackId({name})"),
            None => write!(f, "CallbackId({})", self.0),
        }
    }
}

/// The callbacks a [`Method`](crate::Method) subscribes to
/// ([`Method::callbacks`](crate::Method::callbacks)): a set of [`CallbackId`]s, as the
/// header's bit set (bit `x % 64` of word `x / 64`).
///
/// ```
/// use ilrewrite_method::{CallbackId, Callbacks};
///
/// let set = Callbacks::NONE
///     .with(CallbackId::EXCEPTION_THROWN)
///     .with(CallbackId::SHUTDOWN);
/// assert!(set.contains(CallbackId::SHUTDOWN));
/// assert_eq!(set.iter().count(), 2);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Callbacks([u64; 2]);

impl Callbacks {
    /// No callback.
    pub const NONE: Callbacks = Callbacks([0; 2]);

    /// This set and `id`. An id past the 128 the ABI's bit set holds is left out; one
    /// past the last the host knows ([`CallbackId::COUNT`] for this header) refuses the
    /// library at load, as one of the callbacks not carried does.
    pub const fn with(self, id: CallbackId) -> Callbacks {
        let mut words = self.0;
        let (word, bit) = ((id.0 / 64) as usize, id.0 % 64);
        if word < words.len() {
            words[word] |= 1 << bit;
        }
        Callbacks(words)
    }

    /// Whether `id` is in the set.
    pub const fn contains(self, id: CallbackId) -> bool {
        let (word, bit) = ((id.0 / 64) as usize, id.0 % 64);
        word < self.0.len() && self.0[word] & (1 << bit) != 0
    }

    /// Whether the set is empty.
    pub const fn is_empty(self) -> bool {
        self.0[0] == 0 && self.0[1] == 0
    }

    /// The ids in the set, in order.
    pub fn iter(self) -> impl Iterator<Item = CallbackId> {
        (0..128u32)
            .map(CallbackId)
            .filter(move |&id| self.contains(id))
    }

    /// The set as the header's `ilr_method.callbacks` words.
    pub const fn words(self) -> [u64; 2] {
        self.0
    }
}

impl FromIterator<CallbackId> for Callbacks {
    fn from_iter<I: IntoIterator<Item = CallbackId>>(ids: I) -> Callbacks {
        ids.into_iter().fold(Callbacks::NONE, Callbacks::with)
    }
}

/// The runtime events a [`Method`](crate::Method) needs beyond those of its callbacks
/// ([`Method::events`](crate::Method::events)): `COR_PRF_MONITOR` and
/// `COR_PRF_HIGH_MONITOR` flags, as numbers (this crate does not name the runtime's
/// flags). The host adds those each subscribed callback needs itself; a `high` flag the
/// host does not know refuses the library at load.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Events {
    /// `COR_PRF_MONITOR` flags (`ilr_method.events`), e.g. `COR_PRF_DISABLE_INLINING`
    /// (0x200000).
    pub monitor: u32,
    /// `COR_PRF_HIGH_MONITOR` flags (`ilr_method.events_high`).
    pub high: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_and_names() {
        let set: Callbacks = [CallbackId::SHUTDOWN, CallbackId::from_raw(94)]
            .into_iter()
            .collect();
        assert_eq!(set.words(), [1 << 1, 1 << 30]);
        assert!(set.contains(CallbackId::LOAD_AS_NOTIFICATION_ONLY));
        assert!(!set.contains(CallbackId::INITIALIZE));
        assert_eq!(
            set.iter().collect::<Vec<_>>(),
            [CallbackId::SHUTDOWN, CallbackId::LOAD_AS_NOTIFICATION_ONLY]
        );
        // Past the bit set: left out.
        assert_eq!(
            Callbacks::NONE.with(CallbackId::from_raw(128)),
            Callbacks::NONE
        );
        assert!(Callbacks::NONE.is_empty() && !set.is_empty());
        assert_eq!(CallbackId::COUNT, 95);
        assert_eq!(
            CallbackId::EXCEPTION_THROWN.name(),
            Some("ILR_CALLBACK_EXCEPTION_THROWN")
        );
        assert_eq!(CallbackId::from_raw(95).name(), None);
        assert_eq!(
            format!("{:?}", CallbackId::SHUTDOWN),
            "CallbackId(ILR_CALLBACK_SHUTDOWN)"
        );
        assert_eq!(
            format!("{:?}", CallbackId::from_raw(200)),
            "CallbackId(200)"
        );
    }
}

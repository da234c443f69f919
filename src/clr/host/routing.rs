//! Which instrumentation methods hear which callback ([`Routing`]), and the delivery of a
//! callback to them, each inside its own panic guard.

use std::sync::Arc;

use smallvec::SmallVec;

use super::method::InstrumentationMethod;
use super::report::guarded;
use crate::clr::profiler::Callback;
use crate::clr::sys::HResult;

/// The manager's instrumentation methods, and per callback the indices of its
/// subscribers among them, in editing order.
pub(super) struct Routing {
    methods: Arc<[Arc<dyn InstrumentationMethod>]>,
    subscribers: Box<[SmallVec<[u8; 4]>]>,
}

impl Routing {
    /// The routes of `methods` (at most 255: the manager refuses to start with more).
    pub(super) fn new(methods: Arc<[Arc<dyn InstrumentationMethod>]>) -> Routing {
        let subscribers = Callback::ALL
            .iter()
            .map(|&callback| {
                (0..methods.len())
                    .filter(|&i| methods[i].callbacks().contains(callback))
                    .map(|i| i as u8)
                    .collect()
            })
            .collect();
        Routing {
            methods,
            subscribers,
        }
    }

    /// The subscribers of `callback`, in order.
    fn subscribers(&self, callback: Callback) -> impl Iterator<Item = &dyn InstrumentationMethod> {
        self.subscribers[callback as usize]
            .iter()
            .map(|&i| &*self.methods[usize::from(i)])
    }

    /// Delivers a callback to its subscribers, each in its own panic guard (a panic is
    /// logged and answered as `E_FAIL`); answers the first failure, after every
    /// subscriber had the callback.
    pub(super) fn forward(
        &self,
        callback: Callback,
        mut call: impl FnMut(&dyn InstrumentationMethod) -> Result<(), HResult>,
    ) -> Result<(), HResult> {
        let mut answer = Ok(());
        for method in self.subscribers(callback) {
            let result = guarded(method, callback, || call(method)).unwrap_or(Err(HResult::E_FAIL));
            if answer.is_ok() {
                answer = result;
            }
        }
        answer
    }

    /// A `bool` callback: `true` unless a subscriber answers `false` (a panic answers
    /// `default`).
    pub(super) fn all(
        &self,
        callback: Callback,
        default: bool,
        mut call: impl FnMut(&dyn InstrumentationMethod) -> bool,
    ) -> bool {
        // Every subscriber hears the callback, whatever the ones before answered.
        let mut all = true;
        for method in self.subscribers(callback) {
            all &= guarded(method, callback, || call(method)).unwrap_or(default);
        }
        all
    }
}

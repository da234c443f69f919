//! The time a rewrite spends in each [`Phase`], when timing is on: [`Timings`] and the
//! [`Clock`] that adds to them.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use super::outcome::Phase;

/// Nanoseconds spent in each phase, by [`Phase`].
#[derive(Debug, Default)]
pub(crate) struct Timings([AtomicU64; Phase::ALL.len()]);

impl Timings {
    /// Every phase with its nanoseconds so far, in order.
    pub(crate) fn read(&self) -> [(Phase, u64); Phase::ALL.len()] {
        Phase::ALL.map(|phase| (phase, self.0[phase as usize].load(Ordering::Relaxed)))
    }
}

/// Adds the time since its last lap to a phase's counter, when timing is on.
#[derive(Debug)]
pub(crate) struct Clock<'a> {
    timings: Option<&'a Timings>,
    last: Option<Instant>,
}

impl Clock<'_> {
    /// A clock started at `start` (when timing is on: `timings` is `Some`).
    pub(crate) fn started_at(timings: Option<&Timings>, start: Option<Instant>) -> Clock<'_> {
        Clock {
            timings,
            last: timings.and(start),
        }
    }

    /// A clock started now.
    #[cfg(test)]
    pub(crate) fn start(timings: Option<&Timings>) -> Clock<'_> {
        Clock {
            timings,
            last: timings.map(|_| Instant::now()),
        }
    }

    /// Adds the time since the last lap to `phase`.
    pub(crate) fn lap(&mut self, phase: Phase) {
        if let (Some(t), Some(last)) = (self.timings, self.last) {
            let now = Instant::now();
            let ns = u64::try_from((now - last).as_nanos()).unwrap_or(u64::MAX);
            t.0[phase as usize].fetch_add(ns, Ordering::Relaxed);
            self.last = Some(now);
        }
    }
}

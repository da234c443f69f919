//! Where each method of a module is in its rewrite: [`MethodStates`].
//!
//! Several threads may compile one method at once (generic instantiations, tier-up),
//! and the runtime compiles whatever IL the method has when a thread's callback
//! returns. So a thread that finds another one rewriting the method waits for it: it
//! returns only once the rewritten body has been handed over (its compilation then
//! takes that body), or once the other thread gave up (it then tries itself).
//!
//! Waiting cannot deadlock on the crate's side: a rewriting thread holds no lock of the
//! crate and waits for no other thread; the runtime calls it makes
//! (`GetILFunctionBody`, `SetILFunctionBody`, metadata) take no lock that a thread
//! inside `JITCompilationStarted` holds for another instantiation (each compilation
//! holds only its own instantiation's JIT lock). A wait is bounded all the same
//! ([`WAIT_LIMIT`]): past it, the method is reported as failed, never silently compiled
//! from its original IL.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{Duration, Instant};

/// No thread has rewritten the method, or the last attempt changed nothing or failed.
const NOT_STARTED: u8 = 0;
/// A thread is rewriting the method.
const IN_PROGRESS: u8 = 1;
/// A rewritten body was handed to the runtime.
const REWRITTEN: u8 = 2;
/// A thread went through the method and handed nothing over (its edit changed nothing,
/// refused or failed): its compilation took the original IL. Claimed again like
/// [`NOT_STARTED`]; told apart from it for inlining decisions.
const SETTLED: u8 = 3;

/// The longest a thread waits for another one rewriting the same method.
pub(crate) const WAIT_LIMIT: Duration = Duration::from_secs(20);

/// Rows per leaf chunk, chunks per middle block, blocks: 64 x 64 x 4,096 = 2^24 rows,
/// every row a MethodDef token can name.
const LEAF_BITS: u32 = 12;
const MID_BITS: u32 = 6;
const TOP: usize = 64;

type Leaf = Box<[AtomicU8]>;
type Mid = Box<[OnceLock<Leaf>]>;

/// The rewrite state of every method of one module, by MethodDef row, without a lock.
///
/// Memory grows with the rows used: a 64-entry top level (about 1 KiB), then 64-entry
/// blocks and 4,096-byte chunks allocated the first time a row in them is claimed. A
/// module whose methods are rows 1..5,000 costs about 10 KiB.
#[derive(Debug)]
pub(crate) struct MethodStates {
    top: Box<[OnceLock<Mid>]>,
}

impl Default for MethodStates {
    fn default() -> Self {
        MethodStates {
            top: (0..TOP).map(|_| OnceLock::new()).collect(),
        }
    }
}

/// One mark per method of a module, set once and never cleared (the JIT was allowed to
/// inline the method: [`ModuleState::note_inlined`](super::module::ModuleState)), by
/// MethodDef row, without a lock. Memory as [`MethodStates`]: nothing past the top
/// level until a row is marked.
#[derive(Debug, Default)]
pub(crate) struct MethodMarks(MethodStates);

impl MethodMarks {
    /// Marks MethodDef row `row` (a row past 2^24 - 1 cannot be marked, and none exists).
    pub(crate) fn mark(&self, row: u32) {
        if self.is_marked(row) {
            return;
        }
        if let Some(cell) = self.0.cell(row, true) {
            cell.store(1, Ordering::Release);
        }
    }

    /// Whether MethodDef row `row` was marked.
    pub(crate) fn is_marked(&self, row: u32) -> bool {
        self.0
            .cell(row, false)
            .is_some_and(|cell| cell.load(Ordering::Acquire) != 0)
    }
}

/// What [`MethodStates::claim`] found.
#[derive(Debug)]
pub(crate) enum Claim<'a> {
    /// This thread rewrites the method; the guard records the outcome.
    Won(Rewriting<'a>),
    /// A rewritten body was handed over already (by another thread, now or earlier).
    Rewritten,
    /// Another thread was still rewriting the method after [`WAIT_LIMIT`].
    TimedOut,
}

/// The claim of a method being rewritten by this thread. Dropped without
/// [`Rewriting::handed_over`] (an unchanged body, a refusal, a failure, a panic), it
/// gives the method back: a later compilation tries again.
#[derive(Debug)]
pub(crate) struct Rewriting<'a> {
    cell: &'a AtomicU8,
}

impl Rewriting<'_> {
    /// Records that the rewritten body was handed to the runtime: every compilation of
    /// the method from now on compiles it.
    pub(crate) fn handed_over(self) {
        self.cell.store(REWRITTEN, Ordering::Release);
        std::mem::forget(self);
    }
}

impl Drop for Rewriting<'_> {
    fn drop(&mut self) {
        self.cell.store(SETTLED, Ordering::Release);
    }
}

/// Where a method is, as [`MethodStates::state`] reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MethodState {
    /// No thread has gone through it.
    NotSeen,
    /// A thread is rewriting it.
    InProgress,
    /// A rewritten body was handed over.
    Rewritten,
    /// A thread went through it and handed nothing over (unchanged, refused, failed).
    Settled,
}

impl MethodStates {
    /// The cell of `row`, allocated when `create`.
    fn cell(&self, row: u32, create: bool) -> Option<&AtomicU8> {
        let row = row as usize;
        let top = self.top.get(row >> (LEAF_BITS + MID_BITS))?;
        let mid = match create {
            true => top.get_or_init(|| (0..1 << MID_BITS).map(|_| OnceLock::new()).collect()),
            false => top.get()?,
        };
        let leaf = &mid[(row >> LEAF_BITS) & ((1 << MID_BITS) - 1)];
        let leaf = match create {
            true => leaf.get_or_init(|| (0..1 << LEAF_BITS).map(|_| AtomicU8::new(0)).collect()),
            false => leaf.get()?,
        };
        leaf.get(row & ((1 << LEAF_BITS) - 1))
    }

    /// The MethodDef rows whose rewritten body was handed over, in order.
    pub(crate) fn rewritten_rows(&self) -> Vec<u32> {
        let mut rows = Vec::new();
        for (t, top) in self.top.iter().enumerate() {
            let Some(mid) = top.get() else { continue };
            for (m, leaf) in mid.iter().enumerate() {
                let Some(leaf) = leaf.get() else { continue };
                for (l, cell) in leaf.iter().enumerate() {
                    if cell.load(Ordering::Acquire) == REWRITTEN {
                        let row = (t << (LEAF_BITS + MID_BITS)) | (m << LEAF_BITS) | l;
                        rows.push(row as u32);
                    }
                }
            }
        }
        rows
    }

    /// Whether a rewritten body of MethodDef row `row` was handed over.
    pub(crate) fn is_rewritten(&self, row: u32) -> bool {
        self.state(row) == MethodState::Rewritten
    }

    /// Where MethodDef row `row` is.
    pub(crate) fn state(&self, row: u32) -> MethodState {
        match self.cell(row, false).map(|c| c.load(Ordering::Acquire)) {
            None | Some(NOT_STARTED) => MethodState::NotSeen,
            Some(IN_PROGRESS) => MethodState::InProgress,
            Some(REWRITTEN) => MethodState::Rewritten,
            Some(_) => MethodState::Settled,
        }
    }

    /// Claims MethodDef row `row` for rewriting, waiting while another thread rewrites
    /// it (see the module documentation). `None` for a row past 2^24 - 1 (none exists).
    pub(crate) fn claim(&self, row: u32) -> Option<Claim<'_>> {
        let cell = self.cell(row, true)?;
        let mut waited: Option<Instant> = None;
        let mut spins = 0u32;
        let mut free = NOT_STARTED;
        loop {
            match cell.compare_exchange(free, IN_PROGRESS, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return Some(Claim::Won(Rewriting { cell })),
                Err(REWRITTEN) => return Some(Claim::Rewritten),
                // Free, in the other way: try again at once.
                Err(found @ (NOT_STARTED | SETTLED)) => free = found,
                Err(_) => {
                    let since = *waited.get_or_insert_with(Instant::now);
                    if since.elapsed() > WAIT_LIMIT {
                        return Some(Claim::TimedOut);
                    }
                    // A rewrite takes microseconds: spin briefly, then yield, then sleep.
                    spins += 1;
                    match spins {
                        0..64 => std::hint::spin_loop(),
                        64..1024 => std::thread::yield_now(),
                        _ => std::thread::sleep(Duration::from_micros(100)),
                    }
                }
            }
        }
    }

    /// The bytes allocated for the states (for the memory tests).
    #[cfg(test)]
    fn allocated(&self) -> usize {
        let mut bytes = TOP * std::mem::size_of::<OnceLock<Mid>>();
        for mid in self.top.iter().filter_map(OnceLock::get) {
            bytes += mid.len() * std::mem::size_of::<OnceLock<Leaf>>();
            bytes += mid
                .iter()
                .filter_map(OnceLock::get)
                .map(|l| l.len())
                .sum::<usize>();
        }
        bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A mark stays; rows never marked are not, and cost nothing past the top level.
    #[test]
    fn marks_are_per_row_and_allocated_only_when_set() {
        let marks = MethodMarks::default();
        assert!(!marks.is_marked(7));
        let empty = marks.0.allocated();
        marks.mark(7);
        marks.mark(7);
        marks.mark(0xFF_FFFF);
        marks.mark(0x100_0000); // no such row: ignored
        assert!(marks.is_marked(7) && marks.is_marked(0xFF_FFFF));
        assert!(!marks.is_marked(6) && !marks.is_marked(8) && !marks.is_marked(0x100_0000));
        assert!(marks.0.allocated() > empty);
        assert!(!MethodMarks::default().is_marked(7));
        assert_eq!(MethodMarks::default().0.allocated(), empty);
    }
    use std::sync::Barrier;
    use std::sync::atomic::AtomicU32;

    /// 32 threads claim the same rows at once: exactly one rewrites each row, and every
    /// other one returns only after that rewrite was handed over (it never sees the row
    /// unclaimed while the winner is still working, which is how a compilation used to
    /// take the original IL).
    #[test]
    fn waiters_return_only_after_the_hand_over() {
        let states = MethodStates::default();
        let rows: Vec<u32> = (1..200).chain([0xFF_FFFF]).collect();
        let handed = rows.iter().map(|_| AtomicU8::new(0)).collect::<Vec<_>>();
        let (won, waited) = (AtomicU32::new(0), AtomicU32::new(0));
        let barrier = Barrier::new(32);
        std::thread::scope(|scope| {
            for t in 0..32 {
                let (states, rows, handed, won, waited, barrier) =
                    (&states, &rows, &handed, &won, &waited, &barrier);
                scope.spawn(move || {
                    barrier.wait();
                    for i in (0..rows.len()).map(|i| (i + t * 7) % rows.len()) {
                        match states.claim(rows[i]).expect("a row") {
                            Claim::Won(guard) => {
                                won.fetch_add(1, Ordering::Relaxed);
                                std::thread::sleep(Duration::from_micros(50));
                                handed[i].store(1, Ordering::Release);
                                guard.handed_over();
                            }
                            Claim::Rewritten => {
                                assert_eq!(handed[i].load(Ordering::Acquire), 1, "row {}", rows[i]);
                                waited.fetch_add(1, Ordering::Relaxed);
                            }
                            Claim::TimedOut => panic!("timed out"),
                        }
                    }
                });
            }
        });
        assert_eq!(won.load(Ordering::Relaxed) as usize, rows.len());
        assert_eq!(waited.load(Ordering::Relaxed) as usize, rows.len() * 31);
        assert!(rows.iter().all(|&r| states.is_rewritten(r)));
        assert!(!states.is_rewritten(200));
    }

    /// A claim given up (an unchanged body, a refusal, a failure, a panic) lets the next
    /// compilation try again, and a thread that waited for it gets the claim.
    #[test]
    fn a_claim_given_up_can_be_taken_again() {
        let states = MethodStates::default();
        let Some(Claim::Won(first)) = states.claim(7) else {
            panic!()
        };
        std::thread::scope(|scope| {
            let waiter = scope.spawn(|| matches!(states.claim(7), Some(Claim::Won(_))));
            std::thread::sleep(Duration::from_millis(20));
            drop(first);
            assert!(waiter.join().unwrap(), "the waiter takes the claim");
        });
        assert!(!states.is_rewritten(7));
        assert_eq!(states.state(7), MethodState::Settled);
        assert_eq!(states.state(8), MethodState::NotSeen);
        let r = std::panic::catch_unwind(|| {
            let _claim = states.claim(7);
            panic!("an edit that panics");
        });
        assert!(r.is_err());
        assert!(matches!(states.claim(7), Some(Claim::Won(_))));
    }

    /// Memory follows the rows used, not the largest row possible.
    #[test]
    fn memory_grows_with_the_rows_used() {
        let states = MethodStates::default();
        let empty = states.allocated();
        assert!(empty < 2 * 1024, "{empty}");
        for row in 1..5_000 {
            if let Some(Claim::Won(c)) = states.claim(row) {
                c.handed_over();
            }
        }
        let used = states.allocated();
        assert!(used < 16 * 1024, "{used}");
        assert!(states.claim(1 << 24).is_none());
    }
}

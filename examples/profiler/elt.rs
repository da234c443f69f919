//! `elt`, `elt-values`, `elt-slow` and `elt-empty`: no IL edit; a subscriber to the enter/leave/tailcall
//! hooks that counts, per kind, the calls of the functions that pass the filter (every
//! function without one). `elt-values` also reads every argument at enter and the return
//! value at leave (folded into a checksum so the reads cannot be optimized away);
//! `elt-slow` runs on the runtime's own slow path, and `elt-empty` counts nothing (both
//! measurements).

use std::cell::Cell;
use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};

use ilrewrite::clr::hooks::{Call, HookCandidate, HookInterest, HookSubscriber, HookedFunction};
use ilrewrite::clr::{Candidate, InstrumentationMethod, Interest, MethodEdit, Profiler};

/// Counter shards: each thread adds to its own cache line.
const SHARDS: usize = 64;

/// The counted kinds, in [`Shard::counts`] order.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Enter = 0,
    Leave = 1,
    Tailcall = 2,
    Unwound = 3,
}

#[repr(align(64))]
#[derive(Default)]
struct Shard {
    counts: [AtomicU64; 4],
}

/// Counts per kind, sharded by thread.
pub struct Counters {
    shards: Box<[Shard]>,
    next: AtomicUsize,
}

thread_local! {
    static SHARD: Cell<usize> = const { Cell::new(usize::MAX) };
}

impl Counters {
    fn new() -> Counters {
        Counters {
            shards: (0..SHARDS).map(|_| Shard::default()).collect(),
            next: AtomicUsize::new(0),
        }
    }

    #[inline]
    fn add(&self, kind: Kind) {
        let shard = SHARD.with(|s| {
            let mut i = s.get();
            if i == usize::MAX {
                i = self.next.fetch_add(1, Relaxed) % SHARDS;
                s.set(i);
            }
            i
        });
        self.shards[shard].counts[kind as usize].fetch_add(1, Relaxed);
    }

    fn total(&self, kind: Kind) -> u64 {
        self.shards
            .iter()
            .map(|s| s.counts[kind as usize].load(Relaxed))
            .sum()
    }
}

/// What the subscriber reads at each call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reads {
    /// Nothing, and counts nothing either (`elt-empty`: what the hooks alone cost).
    Empty,
    /// Nothing: counts only.
    Nothing,
    /// Every argument and return value.
    Values,
}

/// What `ILREWRITE_ELT_TEST` asks of the hooks (feature `elt-test-modes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EltTest {
    /// Nothing: the hooks as a user has them.
    #[default]
    Off,
    /// `clobber`: every hook overwrites every register a function may change.
    Clobber,
    /// `negative-control`: `clobber`, through trampolines that forget XMM3 at enter and
    /// RDX at leave.
    NegativeControl,
}

impl EltTest {
    /// Reads `ILREWRITE_ELT_TEST`'s value.
    pub fn parse(value: &str) -> Result<EltTest, String> {
        let test = match value {
            "clobber" => EltTest::Clobber,
            "negative-control" => EltTest::NegativeControl,
            other => {
                return Err(format!(
                    "unknown ILREWRITE_ELT_TEST {other:?} (expected clobber or negative-control)"
                ));
            }
        };
        if cfg!(feature = "elt-test-modes") {
            Ok(test)
        } else {
            Err("ILREWRITE_ELT_TEST needs the feature elt-test-modes".to_owned())
        }
    }
}

/// Overwrites the registers a function may change (with the feature), else nothing.
#[inline]
fn clobber() {
    #[cfg(feature = "elt-test-modes")]
    ilrewrite::clr::hooks::clobber_caller_saved_registers();
}

/// The hooks' subscriber.
pub struct EltSubscriber {
    filter: Option<String>,
    reads: Reads,
    clobbers: bool,
    counters: Counters,
    /// A fold of the values read (`elt-values`).
    checksum: AtomicU64,
}

impl HookSubscriber for EltSubscriber {
    fn name(&self) -> &str {
        "elt"
    }

    fn wants(&self, function: &HookCandidate<'_>) -> HookInterest {
        let wanted = match &self.filter {
            None => true,
            Some(filter) => function
                .name()
                .is_some_and(|name| format!("{}::{}", name.owner, name.name).contains(filter)),
        };
        if wanted {
            HookInterest::Calls
        } else {
            HookInterest::No
        }
    }

    fn enter(&self, call: &Call<'_>) {
        if self.reads == Reads::Empty {
            return;
        }
        self.counters.add(Kind::Enter);
        if self.reads == Reads::Values {
            self.fold(call);
        }
        if self.clobbers {
            clobber();
        }
    }

    fn leave(&self, call: &Call<'_>) {
        if self.reads == Reads::Empty {
            return;
        }
        self.counters.add(Kind::Leave);
        if self.reads == Reads::Values {
            self.fold(call);
        }
        if self.clobbers {
            clobber();
        }
    }

    fn tailcall(&self, _: &Call<'_>) {
        if self.reads == Reads::Empty {
            return;
        }
        self.counters.add(Kind::Tailcall);
        if self.clobbers {
            clobber();
        }
    }

    fn unwound(&self, _: &HookedFunction) {
        if self.reads == Reads::Empty {
            return;
        }
        self.counters.add(Kind::Unwound);
    }
}

impl EltSubscriber {
    /// Folds what the call's frame holds into the checksum.
    fn fold(&self, call: &Call<'_>) {
        let Some(frame) = call.frame() else { return };
        let mut sum = 0u64;
        if let Some(args) = frame.args() {
            for a in args {
                sum = sum.rotate_left(5) ^ a;
            }
        }
        if let Some(rax) = frame.return_rax() {
            sum ^= rax;
        }
        self.checksum.fetch_add(sum, Relaxed);
    }
}

/// The instrumentation method: edits nothing, offers the subscriber.
pub struct Elt {
    name: &'static str,
    subscriber: Arc<EltSubscriber>,
    started: OnceLock<()>,
}

impl Elt {
    pub fn new(name: &'static str, filter: Option<String>, reads: Reads, test: EltTest) -> Elt {
        Elt {
            name,
            subscriber: Arc::new(EltSubscriber {
                filter,
                reads,
                clobbers: test != EltTest::Off,
                counters: Counters::new(),
                checksum: AtomicU64::new(0),
            }),
            started: OnceLock::new(),
        }
    }

    /// The shutdown line's counts: enters, leaves, tailcalls, unwinds.
    pub fn counts(&self) -> [u64; 4] {
        let c = &self.subscriber.counters;
        [
            c.total(Kind::Enter),
            c.total(Kind::Leave),
            c.total(Kind::Tailcall),
            c.total(Kind::Unwound),
        ]
    }
}

impl Profiler for Elt {}

impl InstrumentationMethod for Elt {
    fn name(&self) -> &str {
        self.name
    }

    fn start(&self, _: &ilrewrite::clr::Start<'_>) -> Result<(), String> {
        let _ = self.started.set(());
        Ok(())
    }

    fn hook_subscriber(&self) -> Option<Arc<dyn HookSubscriber>> {
        Some(self.subscriber.clone())
    }

    fn wants(&self, _: &Candidate<'_>) -> Interest {
        Interest::No
    }

    fn edit(
        &self,
        _: &mut ilrewrite::body::MethodBody,
        _: &mut MethodEdit<'_, '_>,
    ) -> ilrewrite::Result<bool> {
        Ok(false)
    }
}

//! [`HookTable`]: the subscribers of a process's hooks, which functions each wants (the
//! `FunctionIDMapper2` answer), delivery of each hook call to the subscribers of its
//! function, and the unwind notifications that end the frames an exception leaves.
//!
//! ```text
//! JIT compiles F --> mapper(F) --> wants? --no--> hooks off for F (FALSE, F)
//!                                        --yes-> hooks on, client id = &HookedFunction
//! JIT code of F --> trampoline --> dispatch --> handler(kind, &HookedFunction, frame)
//!                                                --> each subscriber whose bit is set
//! ```

use std::cell::RefCell;
use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use super::arch::EltFrame;
use super::flags::{HookFlagsError, HookPath};
use super::kind::HookKind;
use super::subscriber::{Call, HookCandidate, HookInterest, HookSubscriber, HookedFunction};
use super::values::{ValuePlan, plan_for};
use crate::clr::log;
use crate::clr::runtime::{ClrError, FunctionInfo, ProfilerInfo};
use crate::clr::sys::{CorPrfMonitor, FunctionID, ModuleID};

/// The most subscribers one table takes (a function's subscribers are one `u64` mask).
pub const MAX_SUBSCRIBERS: usize = 64;

/// Shards of the decision map (the mapper and the inlining question take one lock).
const SHARDS: usize = 16;

/// The table registered with the runtime, once per process.
static TABLE: OnceLock<Arc<HookTable>> = OnceLock::new();

/// Why the hooks could not be registered. Nothing is hooked then.
#[derive(Debug, thiserror::Error)]
pub enum HookError {
    /// The event mask and the hook path do not go together.
    #[error(transparent)]
    Flags(#[from] HookFlagsError),
    /// The event mask lacks events the hooks need (named).
    #[error("the event mask lacks {0:?}, which the enter/leave hooks need")]
    MissingEvents(CorPrfMonitor),
    /// More than [`MAX_SUBSCRIBERS`] subscribers.
    #[error("{0} hook subscribers (at most {MAX_SUBSCRIBERS})")]
    TooManySubscribers(usize),
    /// Hooks were registered already in this process (the runtime takes them once).
    #[error("enter/leave hooks are registered already")]
    AlreadyRegistered,
    /// No fast-path trampolines for this platform (they exist for x86_64 Linux, aarch64
    /// Linux and x86_64 Windows).
    #[error("no fast-path enter/leave trampolines for this platform")]
    Unsupported,
    /// The runtime refused a call.
    #[error(transparent)]
    Runtime(#[from] ClrError),
}

/// What one decision holds: the function's ids when decided, and its entry if hooked.
struct Decision {
    facts: FunctionInfo,
    entry: Option<Box<HookedFunction>>,
}

impl Decision {
    fn entry_ptr(&self) -> Option<*const HookedFunction> {
        self.entry.as_deref().map(|e| e as *const HookedFunction)
    }
}

/// Counts of the table's work, for reports and benchmarks.
#[derive(Debug, Default)]
pub struct HookCounts {
    /// Functions decided (asked of the subscribers).
    pub decided: AtomicU64,
    /// Of those, functions some subscriber wanted (hooks on).
    pub hooked: AtomicU64,
    /// Mapper calls (one per JIT compilation).
    pub mapped: AtomicU64,
    /// Frames an exception unwound whose function had hooks on.
    pub unwound: AtomicU64,
    /// Decisions dropped because their module unloaded.
    pub forgotten: AtomicU64,
}

/// The subscribers of a process's hooks and their decisions, per function.
pub struct HookTable {
    path: HookPath,
    info: Option<ProfilerInfo>,
    subscribers: Box<[Arc<dyn HookSubscriber>]>,
    shards: [Mutex<HashMap<FunctionID, Decision>>; SHARDS],
    counts: HookCounts,
}

impl std::fmt::Debug for HookTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.subscribers.iter().map(|s| s.name()).collect();
        f.debug_struct("HookTable")
            .field("path", &self.path)
            .field("subscribers", &names)
            .field("counts", &self.counts)
            .finish_non_exhaustive()
    }
}

/// A filter running on a thread (`ExceptionSearchFilterEnter` .. `Leave`): an exception
/// that escapes it unwinds the filter funclet, which the runtime reports as an unwind
/// of the function the filter belongs to, whose frame stays (it leaves normally later).
struct FilterScope {
    function: FunctionID,
    /// Unwinds of `function` inside the filter not yet delivered: the last one is the
    /// funclet's if the filter ends by an exception; the others are frames of
    /// `function` called (recursively) from the filter.
    pending: Vec<*const HookedFunction>,
}

/// A thread's exception state, for the unwind notifications.
struct Unwinding {
    /// The frames being unwound (`ExceptionUnwindFunctionEnter` pushes, `...Leave`
    /// pops): the hooked function's entry, or null.
    frames: Vec<*const HookedFunction>,
    /// The filters running, innermost last.
    filters: Vec<FilterScope>,
}

thread_local! {
    static UNWINDING: RefCell<Unwinding> = const {
        RefCell::new(Unwinding { frames: Vec::new(), filters: Vec::new() })
    };
}

impl HookTable {
    pub(crate) fn new(
        path: HookPath,
        info: Option<ProfilerInfo>,
        subscribers: Vec<Arc<dyn HookSubscriber>>,
    ) -> Result<HookTable, HookError> {
        if subscribers.len() > MAX_SUBSCRIBERS {
            return Err(HookError::TooManySubscribers(subscribers.len()));
        }
        Ok(HookTable {
            path,
            info,
            subscribers: subscribers.into(),
            shards: std::array::from_fn(|_| Mutex::new(HashMap::new())),
            counts: HookCounts::default(),
        })
    }

    /// The path the hooks run on.
    pub fn path(&self) -> HookPath {
        self.path
    }

    /// The table's counts.
    pub fn counts(&self) -> &HookCounts {
        &self.counts
    }

    fn shard(&self, function: FunctionID) -> &Mutex<HashMap<FunctionID, Decision>> {
        &self.shards[(function >> 4) % SHARDS]
    }

    /// Whether some subscriber wants `function`'s hooks, and its entry if so: decided
    /// once per function (asking each subscriber), then remembered until its module
    /// unloads. A function whose ids cannot be read is not hooked.
    pub fn decide(&self, function: FunctionID) -> Option<*const HookedFunction> {
        let info = self.info.as_ref()?;
        let facts = match info.function_info(function) {
            Ok(facts) => facts,
            Err(e) => {
                log::throttled("hooks: function ids unreadable", || {
                    format!("hooks: {e}: function {function:#x} is not hooked")
                });
                return None;
            }
        };
        self.decide_with(function, facts, |candidate| {
            let (mask, values) = self.ask(&HookCandidate {
                function,
                facts: candidate,
                info,
            });
            (mask, values.then(|| plan_for(info, &candidate)).flatten())
        })
    }

    /// [`decide`](Self::decide) with the ids known and the subscribers' mask computed by
    /// `ask` (outside the lock: subscribers may read metadata).
    fn decide_with(
        &self,
        function: FunctionID,
        facts: FunctionInfo,
        ask: impl FnOnce(FunctionInfo) -> (u64, Option<ValuePlan>),
    ) -> Option<*const HookedFunction> {
        let shard = self.shard(function);
        {
            let map = shard.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(decision) = map.get(&function)
                && same_function(&decision.facts, &facts)
            {
                return decision.entry_ptr();
            }
        }
        let (mask, plan) = ask(facts);
        self.counts.decided.fetch_add(1, Relaxed);
        let entry = (mask != 0).then(|| Box::new(HookedFunction::new(function, facts, mask, plan)));
        let mut map = shard.lock().unwrap_or_else(PoisonError::into_inner);
        match map.entry(function) {
            Entry::Occupied(decision) if same_function(&decision.get().facts, &facts) => {
                // Another thread decided first: its entry is the one handed out.
                decision.get().entry_ptr()
            }
            Entry::Occupied(mut decision) => {
                // The id was reused: the function it named is gone with its loader
                // allocator (its code cannot run), and so is its entry.
                if entry.is_some() {
                    self.counts.hooked.fetch_add(1, Relaxed);
                }
                decision.insert(Decision { facts, entry });
                decision.get().entry_ptr()
            }
            Entry::Vacant(slot) => {
                if entry.is_some() {
                    self.counts.hooked.fetch_add(1, Relaxed);
                }
                slot.insert(Decision { facts, entry }).entry_ptr()
            }
        }
    }

    /// The subscribers' mask for a candidate (bit `i` if subscriber `i` wants it), and
    /// whether one wants values. A subscriber that panics does not want it (logged
    /// once).
    fn ask(&self, candidate: &HookCandidate<'_>) -> (u64, bool) {
        let mut mask = 0;
        let mut values = false;
        for (i, subscriber) in self.subscribers.iter().enumerate() {
            match log::contain(|| subscriber.wants(candidate)) {
                Ok(HookInterest::No) => {}
                Ok(HookInterest::Calls) => mask |= 1 << i,
                Ok(HookInterest::Values) => {
                    mask |= 1 << i;
                    values = true;
                }
                Err(message) => {
                    log::throttled("hooks: a subscriber's wants panicked", || {
                        format!(
                            "hooks: {}'s wants panicked: {message} (the function is not hooked for it)",
                            subscriber.name(),
                        )
                    });
                }
            }
        }
        (mask, values)
    }

    /// Whether `function` has hooks on, from its decision (none made yet: `false`).
    pub fn is_hooked(&self, function: FunctionID) -> bool {
        self.lookup(function).is_some()
    }

    fn lookup(&self, function: FunctionID) -> Option<*const HookedFunction> {
        let map = self
            .shard(function)
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        map.get(&function).and_then(Decision::entry_ptr)
    }

    /// Drops the decisions about the functions of `module`, which finished unloading
    /// (their ids may be reused by functions loaded later).
    pub fn forget_module(&self, module: ModuleID) {
        for shard in &self.shards {
            let mut map = shard.lock().unwrap_or_else(PoisonError::into_inner);
            let before = map.len();
            map.retain(|_, decision| decision.facts.module != module);
            let gone = (before - map.len()) as u64;
            self.counts.forgotten.fetch_add(gone, Relaxed);
        }
    }

    /// Delivers one hook call to the function's subscribers, in order. One panic guard
    /// covers them all (a guard is a call the optimizer cannot remove); a subscriber
    /// that panics is skipped and the delivery resumes with the next one.
    #[inline]
    pub(crate) fn deliver(&self, kind: HookKind, call: &Call<'_>) {
        let mut pending = call.function.subscribers;
        let mut current = 0;
        while pending != 0 {
            let delivered = log::contain(|| {
                while pending != 0 {
                    let i = pending.trailing_zeros() as usize;
                    // Cleared before the call: after a panic, delivery resumes past it.
                    pending &= pending - 1;
                    current = i;
                    let Some(subscriber) = self.subscribers.get(i) else {
                        return;
                    };
                    match kind {
                        HookKind::Enter => subscriber.enter(call),
                        HookKind::Leave => subscriber.leave(call),
                        HookKind::Tailcall => subscriber.tailcall(call),
                    }
                }
            });
            if let Err(message) = delivered {
                let name = self.subscribers.get(current).map_or("?", |s| s.name());
                contained(name, kind.name(), &message);
            }
        }
    }

    /// `ExceptionUnwindFunctionEnter`: an exception starts unwinding `function`'s frame.
    pub fn unwind_enter(&self, function: FunctionID) {
        let entry = self.lookup(function).unwrap_or(core::ptr::null());
        UNWINDING.with(|state| state.borrow_mut().frames.push(entry));
    }

    /// `ExceptionUnwindFunctionLeave`: the frame of the last `unwind_enter` is gone:
    /// its subscribers get [`HookSubscriber::unwound`], at once, or when the filter it
    /// is unwound in ends (see [`filter_leave`](Self::filter_leave)).
    pub fn unwind_leave(&self) {
        let ready = UNWINDING.with(|state| {
            let mut state = state.borrow_mut();
            let entry = state.frames.pop()?;
            if entry.is_null() {
                return None;
            }
            // SAFETY: see `deliver_unwound`.
            let function = unsafe { &*entry }.function;
            match state.filters.last_mut() {
                Some(scope) if scope.function == function => {
                    scope.pending.push(entry);
                    None
                }
                _ => Some(entry),
            }
        });
        if let Some(entry) = ready {
            self.deliver_unwound(entry);
        }
    }

    /// `ExceptionSearchFilterEnter`: a filter of `function` starts running.
    pub fn filter_enter(&self, function: FunctionID) {
        UNWINDING.with(|state| {
            state.borrow_mut().filters.push(FilterScope {
                function,
                pending: Vec::new(),
            });
        });
    }

    /// `ExceptionSearchFilterLeave`: the filter ended. If an exception escaped it (the
    /// runtime swallows it), the last unwind of its function inside it was the filter
    /// funclet's, not a frame's: dropped; the earlier ones are delivered.
    pub fn filter_leave(&self) {
        let Some(mut scope) = UNWINDING.with(|state| state.borrow_mut().filters.pop()) else {
            return;
        };
        scope.pending.pop();
        for entry in scope.pending {
            self.deliver_unwound(entry);
        }
    }

    /// `ExceptionCatcherEnter`: an exception was caught. Inside a filter, the unwinds of
    /// the filter's function so far were frames called from the filter (the funclet
    /// itself is not unwound by an exception caught inside it): delivered.
    pub fn catcher_enter(&self) {
        let caught = UNWINDING.with(|state| {
            state
                .borrow_mut()
                .filters
                .last_mut()
                .map(|scope| std::mem::take(&mut scope.pending))
                .unwrap_or_default()
        });
        for entry in caught {
            self.deliver_unwound(entry);
        }
    }

    /// Delivers [`HookSubscriber::unwound`] for a hooked function's frame.
    fn deliver_unwound(&self, entry: *const HookedFunction) {
        // SAFETY: non-null entries come from `lookup`, which hands out the address of a
        // boxed `HookedFunction` held by the decision map; the map drops an entry only
        // when its module unloads or its id is reused by another function, neither of
        // which can happen while an exception unwinds a frame of that function.
        let Some(function) = (unsafe { entry.as_ref() }) else {
            return;
        };
        self.counts.unwound.fetch_add(1, Relaxed);
        let mut mask = function.subscribers;
        while mask != 0 {
            let i = mask.trailing_zeros() as usize;
            mask &= mask - 1;
            if let Some(subscriber) = self.subscribers.get(i)
                && let Err(message) = log::contain(|| subscriber.unwound(function))
            {
                contained(subscriber.name(), "unwound", &message);
            }
        }
    }
}

/// Whether two decisions are about the same function (a reused id names another).
fn same_function(a: &FunctionInfo, b: &FunctionInfo) -> bool {
    a.module == b.module && a.token == b.token
}

/// Logs a subscriber's contained panic (once per process, the rest counted).
#[cold]
#[inline(never)]
fn contained(subscriber: &str, hook: &str, message: &str) {
    let _ = log::contain(|| {
        log::throttled("panic in a hook subscriber", || {
            format!("hooks: {subscriber}'s {hook} panicked: {message} (the hook returned normally)")
        })
    });
}

/// The registered table, if any.
pub fn registered() -> Option<&'static Arc<HookTable>> {
    TABLE.get()
}

/// Makes `table` the process's registered table (once).
///
/// # Errors
/// [`HookError::AlreadyRegistered`] if one was.
pub(crate) fn install(table: Arc<HookTable>) -> Result<(), HookError> {
    TABLE.set(table).map_err(|_| HookError::AlreadyRegistered)
}

/// The fast path, from the stubs' dispatcher: `id` is what `map_function` returned with
/// hooks on.
#[inline]
pub(crate) fn fast_call(table: &HookTable, kind: HookKind, id: usize, frame: &EltFrame) {
    // SAFETY: the runtime calls the hooks only for functions the mapper hooked, with the
    // id it returned: the address of a boxed `HookedFunction` the table keeps until the
    // function's module unloads or its id names another function, after which no code of
    // that function runs (the stubs are crate-private, registered only by `register`).
    let Some(function) = (unsafe { (id as *const HookedFunction).as_ref() }) else {
        return;
    };
    table.deliver(
        kind,
        &Call {
            function,
            frame: Some(frame),
            elt_info: 0,
        },
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// Wants the functions whose token is even; counts what it receives.
    #[derive(Default)]
    struct Even {
        asked: AtomicUsize,
        enters: AtomicUsize,
        unwound: AtomicUsize,
    }

    impl HookSubscriber for Even {
        fn name(&self) -> &str {
            "even"
        }
        fn wants(&self, function: &HookCandidate<'_>) -> HookInterest {
            self.asked.fetch_add(1, Relaxed);
            if function.token() % 2 == 0 {
                HookInterest::Calls
            } else {
                HookInterest::No
            }
        }
        fn enter(&self, _: &Call<'_>) {
            self.enters.fetch_add(1, Relaxed);
        }
        fn unwound(&self, _: &HookedFunction) {
            self.unwound.fetch_add(1, Relaxed);
        }
    }

    struct Panics;

    impl HookSubscriber for Panics {
        fn name(&self) -> &str {
            "panics"
        }
        fn wants(&self, _: &HookCandidate<'_>) -> HookInterest {
            HookInterest::Calls
        }
        fn enter(&self, _: &Call<'_>) {
            panic!("boom");
        }
    }

    fn facts(module: ModuleID, token: u32) -> FunctionInfo {
        FunctionInfo {
            class: 0,
            module,
            token,
        }
    }

    /// `decide_with` with the table's own subscribers asked (no runtime: a candidate
    /// without `ProfilerInfo` cannot be made, so the mask is computed from the token as
    /// `Even` would).
    fn decide(table: &HookTable, function: FunctionID, f: FunctionInfo) -> Option<usize> {
        table
            .decide_with(function, f, |f| {
                let mut mask = 0;
                for (i, _) in table.subscribers.iter().enumerate() {
                    if f.token % 2 == 0 {
                        mask |= 1 << i;
                    }
                }
                (mask, None)
            })
            .map(|p| p as usize)
    }

    /// A function is decided once (the same entry every time), a reused id (another
    /// module or token) gets a new decision, and an unloaded module's decisions go.
    #[test]
    fn decisions_are_made_once_per_function_and_forgotten_with_their_module() {
        let even = Arc::new(Even::default());
        let table = HookTable::new(HookPath::Fast, None, vec![even]).unwrap();
        let first = decide(&table, 0x1000, facts(7, 2)).expect("even token hooked");
        assert_eq!(decide(&table, 0x1000, facts(7, 2)), Some(first));
        assert_eq!(table.counts.decided.load(Relaxed), 1);
        assert_eq!(decide(&table, 0x2000, facts(7, 3)), None);
        assert!(!table.is_hooked(0x2000));
        assert!(table.is_hooked(0x1000));
        // The id reused by a function of another module: decided again.
        assert!(decide(&table, 0x2000, facts(9, 4)).is_some());
        assert_eq!(table.counts.decided.load(Relaxed), 3);
        table.forget_module(9);
        assert!(!table.is_hooked(0x2000));
        assert!(table.is_hooked(0x1000));
        table.forget_module(7);
        assert!(!table.is_hooked(0x1000));
        // One decision each: the reused id's replaced the first one.
        assert_eq!(table.counts.forgotten.load(Relaxed), 2);
    }

    /// A call reaches exactly the subscribers whose bit is set, a panicking one does
    /// not stop the others, and an unwind notifies the function's subscribers once per
    /// frame (frames of unhooked functions are skipped).
    #[test]
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    fn calls_and_unwinds_reach_the_function_s_subscribers() {
        let even = Arc::new(Even::default());
        let other = Arc::new(Even::default());
        let table = HookTable::new(
            HookPath::Fast,
            None,
            vec![Arc::new(Panics), even.clone(), other.clone()],
        )
        .unwrap();
        let function = HookedFunction {
            function: 0x1000,
            facts: facts(1, 2),
            subscribers: 0b011, // Panics and even, not other
            values: None,
        };
        let frame = EltFrame::enter([0; 6], [[0; 16]; 8], 0);
        let call = Call {
            function: &function,
            frame: Some(&frame),
            elt_info: 0,
        };
        table.deliver(HookKind::Enter, &call);
        table.deliver(HookKind::Enter, &call);
        assert_eq!(even.enters.load(Relaxed), 2);
        assert_eq!(other.enters.load(Relaxed), 0);

        let hooked = decide(&table, 0x3000, facts(1, 4)).unwrap();
        assert_ne!(hooked, 0);
        // A hooked frame inside an unhooked one, each unwound.
        table.unwind_enter(0x3000);
        table.unwind_leave();
        table.unwind_enter(0x5000);
        table.unwind_leave();
        // Nested: an exception during the unwind of a hooked frame.
        table.unwind_enter(0x3000);
        table.unwind_enter(0x3000);
        table.unwind_leave();
        table.unwind_leave();
        table.unwind_leave(); // unbalanced: ignored
        assert_eq!(even.unwound.load(Relaxed), 3);
        assert_eq!(other.unwound.load(Relaxed), 3);
        assert_eq!(table.counts.unwound.load(Relaxed), 3);

        // An exception escaping a filter of 0x3000: the funclet's unwind is not a frame.
        table.filter_enter(0x3000);
        table.unwind_enter(0x5000); // the thrower, not hooked
        table.unwind_leave();
        table.unwind_enter(0x3000); // the funclet
        table.unwind_leave();
        table.filter_leave();
        assert_eq!(even.unwound.load(Relaxed), 3);
        // The filter calls 0x3000 (recursion), which throws and is caught inside the
        // filter: that frame was unwound; then the filter returns normally.
        table.filter_enter(0x3000);
        table.unwind_enter(0x3000);
        table.unwind_leave();
        table.catcher_enter();
        table.filter_leave();
        assert_eq!(even.unwound.load(Relaxed), 4);
        // The filter calls 0x3000, whose exception escapes the filter: the recursive
        // frame and then the funclet are unwound; only the frame is.
        table.filter_enter(0x3000);
        table.unwind_enter(0x3000);
        table.unwind_leave();
        table.unwind_enter(0x3000);
        table.unwind_leave();
        table.filter_leave();
        assert_eq!(even.unwound.load(Relaxed), 5);
        assert_eq!(table.counts.unwound.load(Relaxed), 5);
    }

    #[test]
    fn more_than_64_subscribers_are_refused() {
        let many: Vec<Arc<dyn HookSubscriber>> = (0..=MAX_SUBSCRIBERS)
            .map(|_| Arc::new(Even::default()) as Arc<dyn HookSubscriber>)
            .collect();
        assert!(matches!(
            HookTable::new(HookPath::Fast, None, many),
            Err(HookError::TooManySubscribers(65))
        ));
    }
}

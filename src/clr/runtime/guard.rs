//! The call-sequence guard: which `ICorProfilerInfo` methods may be called from where.
//!
//! The runtime hands out ids that are pointers into its own data structures. A call into
//! `ICorProfilerInfo` made from inside one of its callbacks is *synchronous*: the runtime
//! is in a known state. A call made anywhere else on a managed thread (from instrumented
//! code that called into the profiler, from a fast-path enter/leave hook, from a thread
//! the profiler hijacked) is *asynchronous*: the runtime may be holding the locks the
//! call needs, or be half-way through changing what it reads, and the call can deadlock
//! or read garbage. Only a short list of methods is safe asynchronously; the runtime
//! answers the others with `CORPROF_E_UNSUPPORTED_CALL_SEQUENCE` when it notices, but
//! it cannot notice every case.
//!
//! [`ProfilerInfo`](super::info::ProfilerInfo) checks every call before making it: a method
//! that is not [`async_safe`] is refused with
//! [`ClrError::UnsupportedCallSequence`](super::error::ClrError::UnsupportedCallSequence)
//! unless the current thread is inside a callback ([`CallbackScope`], entered by the
//! crate's callback dispatch) or is a thread the profiler created itself
//! ([`spawn_profiler_thread`], [`mark_profiler_thread`]): such a thread was never in the
//! runtime, so its calls are synchronous too.
//!
//! **The shutdown gate.** After `ICorProfilerCallback::Shutdown` returns, a call into
//! the runtime is undefined behaviour (the profiling API's documentation), and it does
//! crash: CoreCLR 3.1's `ProfilingAPIUtility::TerminateProfiling` deletes the runtime's
//! profiler interface, sets `g_profControlBlock.pProfInterface` to null and the status
//! back to `kProfStatusNone`, so the entry check that would answer
//! `CORPROF_E_PROFILER_DETACHING` lets the call through and `RequestReJIT` dereferences
//! the null pointer (`IsCallback4Supported`; seen in a core of `Dial.exe`: the ReJIT
//! driver in `ProfToEEInterfaceImpl::RequestReJIT` at `cmpq $0x0,0x10(%rax)`, rax 0,
//! while the main thread was in `coreclr_shutdown_2` -> `PALCommonCleanup`). .NET 8
//! keeps the interface but goes on tearing the process down. So the crate's callback
//! dispatch closes the gate when `Shutdown` arrives ([`close_for_shutdown`], before the
//! profiler's own `shutdown`): from then on every call outside a callback (a profiler
//! thread's, or an asynchronous one) is refused with
//! [`ClrError::ShuttingDown`](super::error::ClrError::ShuttingDown) before it reaches the
//! runtime, and `Shutdown` waits, at most [`SHUTDOWN_WAIT`], for the calls that the
//! profiler's own threads had already started ([`RuntimeCall`]) to return. Calls inside
//! callbacks are not gated: the runtime makes those itself, and may still make some
//! after `Shutdown`.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

thread_local! {
    /// How many profiler callbacks the current thread is inside (callbacks nest: a
    /// callback may trigger another, e.g. a class load during a JIT event).
    static CALLBACK_DEPTH: Cell<u32> = const { Cell::new(0) };
    /// Whether the current thread was created by (or given to) the profiler.
    static PROFILER_THREAD: Cell<bool> = const { Cell::new(false) };
}

/// The `ICorProfilerInfo` methods that are safe to call asynchronously, from any thread
/// at any time (the runtime's own list): everything else needs a synchronous context.
pub const ASYNC_SAFE_METHODS: &[&str] = &[
    "GetEventMask",
    "SetEventMask",
    "GetEventMask2",
    "SetEventMask2",
    "GetCurrentThreadID",
    "GetThreadContext",
    "GetThreadAppDomain",
    "GetFunctionFromIP",
    "GetFunctionFromIP2",
    "GetFunctionInfo",
    "GetFunctionInfo2",
    "GetCodeInfo",
    "GetCodeInfo2",
    "GetModuleInfo",
    "GetModuleInfo2",
    "GetClassIDInfo",
    "GetClassIDInfo2",
    "IsArrayClass",
    "SetFunctionIDMapper",
    "DoStackSnapshot",
];

/// Whether `method` (an `ICorProfilerInfo` method name, e.g. `"GetModuleMetaData"`) may
/// be called asynchronously.
pub fn async_safe(method: &str) -> bool {
    ASYNC_SAFE_METHODS.contains(&method)
}

/// Where the current thread stands, for the guard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallContext {
    /// Inside a profiler callback: calls are synchronous.
    InCallback,
    /// A thread the profiler created: calls are synchronous.
    ProfilerThread,
    /// Anywhere else (instrumented code, a hook, a hijacked thread): calls are
    /// asynchronous.
    Asynchronous,
}

impl CallContext {
    /// The context of the current thread.
    pub fn current() -> CallContext {
        if CALLBACK_DEPTH.with(Cell::get) > 0 {
            CallContext::InCallback
        } else if PROFILER_THREAD.with(Cell::get) {
            CallContext::ProfilerThread
        } else {
            CallContext::Asynchronous
        }
    }

    /// Whether `method` may be called in this context.
    pub fn allows(self, method: &str) -> bool {
        self != CallContext::Asynchronous || async_safe(method)
    }
}

/// Marks the current thread as inside a profiler callback for the scope's lifetime (the
/// crate's callback dispatch enters one around every callback).
#[derive(Debug)]
pub struct CallbackScope {
    _not_send: core::marker::PhantomData<*const ()>,
}

impl CallbackScope {
    /// Enters a callback on the current thread.
    pub fn enter() -> CallbackScope {
        CALLBACK_DEPTH.with(|d| d.set(d.get() + 1));
        CallbackScope {
            _not_send: core::marker::PhantomData,
        }
    }
}

impl Drop for CallbackScope {
    fn drop(&mut self) {
        CALLBACK_DEPTH.with(|d| d.set(d.get().saturating_sub(1)));
    }
}

/// Marks the current thread as one the profiler owns (it never runs managed code), so
/// that its calls count as synchronous. Use [`spawn_profiler_thread`] where possible.
pub fn mark_profiler_thread() {
    PROFILER_THREAD.with(|p| p.set(true));
}

/// Spawns a thread of the profiler's own (for example the ReJIT driver), marked so that
/// it may call any `ICorProfilerInfo` method.
///
/// # Errors
/// The error of [`std::thread::Builder::spawn`] when the thread cannot be created.
pub fn spawn_profiler_thread<F, T>(name: &str, f: F) -> std::io::Result<JoinHandle<T>>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    std::thread::Builder::new()
        .name(name.to_string())
        .spawn(move || {
            mark_profiler_thread();
            f()
        })
}

/// How long `Shutdown` waits for the runtime calls the profiler's own threads had
/// started when it arrived.
///
/// The longest such call is a ReJIT request, which suspends the runtime: 0.6 s measured
/// on a loaded machine (CoreCLR 3.1.23; the shutdown thread waits in preemptive mode, so
/// it does not hold up that suspension). A call still under way after 5 s is not waited
/// for: the runtime's shutdown goes on (a process that cannot exit would be worse), and
/// the delay is logged.
pub const SHUTDOWN_WAIT: Duration = Duration::from_secs(5);

/// Whether the runtime may still be called, and how many calls of the profiler's own
/// threads are in it. One per process (`GATE`); one per test thread in the unit tests.
#[derive(Debug)]
pub(crate) struct Gate {
    closed: AtomicBool,
    in_flight: AtomicUsize,
    /// Taken only to wait for (and to announce) the end of the last call in flight
    /// once the gate is closed: never on a call's way in.
    lock: Mutex<()>,
    ended: Condvar,
}

/// The process's gate: there is one runtime per process.
#[cfg(not(test))]
static GATE: Gate = Gate::new();

/// The gate of the runtime this thread's calls go to: the process's. (In the crate's
/// unit tests, each test thread's own: tests that drive a `Shutdown` through the
/// thunks run beside tests that call a fake runtime, in one process.)
fn gate() -> &'static Gate {
    #[cfg(not(test))]
    {
        &GATE
    }
    #[cfg(test)]
    {
        thread_local! {
            static GATE: &'static Gate = Box::leak(Box::new(Gate::new()));
        }
        GATE.with(|gate| *gate)
    }
}

impl Gate {
    pub(crate) const fn new() -> Gate {
        Gate {
            closed: AtomicBool::new(false),
            in_flight: AtomicUsize::new(0),
            lock: Mutex::new(()),
            ended: Condvar::new(),
        }
    }

    /// A call from a context `context` may start: counted when it is a profiler
    /// thread's. `None` once the gate is closed (and for an asynchronous call, only the
    /// check is made).
    fn enter(&'static self, context: CallContext) -> Option<RuntimeCall> {
        match context {
            CallContext::InCallback => Some(RuntimeCall { gate: None }),
            CallContext::Asynchronous => {
                (!self.closed.load(SeqCst)).then_some(RuntimeCall { gate: None })
            }
            CallContext::ProfilerThread => {
                // Counted first, then checked; `close` sets the flag first, then reads
                // the count (both sequentially consistent): either this call sees the
                // gate closed, or `close` sees it counted and waits for it.
                self.in_flight.fetch_add(1, SeqCst);
                let call = RuntimeCall { gate: Some(self) };
                if self.closed.load(SeqCst) {
                    drop(call);
                    return None;
                }
                Some(call)
            }
        }
    }

    fn leave(&self) {
        if self.in_flight.fetch_sub(1, SeqCst) == 1 && self.closed.load(SeqCst) {
            // Under the lock, so a `close` between its check and its wait cannot miss it.
            let _lock = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
            self.ended.notify_all();
        }
    }

    /// Closes the gate, then waits at most `limit` for the counted calls to end.
    /// `Err(n)`: `n` calls were still under way at the deadline.
    pub(crate) fn close(&self, limit: Duration) -> Result<(), usize> {
        self.closed.store(true, SeqCst);
        let deadline = Instant::now() + limit;
        let mut lock = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            let left = self.in_flight.load(SeqCst);
            if left == 0 {
                return Ok(());
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(left);
            }
            lock = self
                .ended
                .wait_timeout(lock, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    fn is_closed(&self) -> bool {
        self.closed.load(SeqCst)
    }
}

/// A call into the runtime that the shutdown gate let through: while a profiler
/// thread holds one, `Shutdown` waits for it (at most [`SHUTDOWN_WAIT`]). Hold it for
/// the duration of the call, and no longer.
#[derive(Debug)]
#[must_use = "the call is counted only while this lives"]
pub struct RuntimeCall {
    /// The gate that counts it (a profiler thread's call), or none.
    gate: Option<&'static Gate>,
}

impl Drop for RuntimeCall {
    fn drop(&mut self) {
        if let Some(gate) = self.gate {
            gate.leave();
        }
    }
}

/// Asks the shutdown gate whether the current thread may call into the runtime now.
///
/// Inside a callback: always (and the call is not counted). On a thread the profiler
/// created: until `Shutdown` arrives, and the call is counted until the
/// [`RuntimeCall`] is dropped. Elsewhere (asynchronous calls): until `Shutdown`
/// arrives. `None` means the runtime is shutting down: make no call.
pub fn enter_runtime() -> Option<RuntimeCall> {
    gate().enter(CallContext::current())
}

/// Whether `Shutdown` has arrived: the profiler's threads may no longer call the
/// runtime (their calls are refused) and should stop what they do.
pub fn is_shutting_down() -> bool {
    gate().is_closed()
}

/// Closes the shutdown gate (the crate's `Shutdown` dispatch does it, before the
/// profiler's `shutdown`): no call outside a callback reaches the runtime from now on;
/// then waits, at most `limit`, for the calls the profiler's threads had started.
///
/// # Errors
/// The number of those calls still under way at the deadline.
pub fn close_for_shutdown(limit: Duration) -> Result<(), usize> {
    gate().close(limit)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clr::sys::info::{
        ICorProfilerInfo2Vtbl, ICorProfilerInfo3Vtbl, ICorProfilerInfo4Vtbl, ICorProfilerInfo5Vtbl,
        ICorProfilerInfo10Vtbl, ICorProfilerInfoVtbl,
    };

    /// Every name of the table is a method of some `ICorProfilerInfo` version (a typo
    /// would silently refuse a safe method), and the methods the runtime lists are in.
    #[test]
    fn the_table_names_real_methods() {
        let all: Vec<&str> = [
            ICorProfilerInfoVtbl::METHODS,
            ICorProfilerInfo2Vtbl::METHODS,
            ICorProfilerInfo3Vtbl::METHODS,
            ICorProfilerInfo4Vtbl::METHODS,
            ICorProfilerInfo5Vtbl::METHODS,
            ICorProfilerInfo10Vtbl::METHODS,
        ]
        .concat();
        for m in ASYNC_SAFE_METHODS {
            assert!(all.contains(m), "{m} is not an ICorProfilerInfo method");
        }
        for unsafe_async in [
            "GetModuleMetaData",
            "GetILFunctionBody",
            "SetILFunctionBody",
            "GetTokenAndMetaDataFromFunction",
            "RequestReJIT",
            "GetClassFromToken",
            "ForceGC",
        ] {
            assert!(!async_safe(unsafe_async), "{unsafe_async}");
        }
    }

    #[test]
    fn contexts_nest_and_profiler_threads_are_synchronous() {
        std::thread::spawn(|| {
            assert_eq!(CallContext::current(), CallContext::Asynchronous);
            assert!(!CallContext::current().allows("GetILFunctionBody"));
            assert!(CallContext::current().allows("GetFunctionInfo"));
            {
                let _outer = CallbackScope::enter();
                {
                    let _inner = CallbackScope::enter();
                    assert_eq!(CallContext::current(), CallContext::InCallback);
                }
                assert_eq!(CallContext::current(), CallContext::InCallback);
                assert!(CallContext::current().allows("GetILFunctionBody"));
            }
            assert_eq!(CallContext::current(), CallContext::Asynchronous);
        })
        .join()
        .unwrap();
        let t = spawn_profiler_thread("test", CallContext::current).unwrap();
        assert_eq!(t.join().unwrap(), CallContext::ProfilerThread);
    }

    /// The gate refuses every call outside a callback once closed, counts only the
    /// profiler threads' calls, and `close` waits for those (bounded).
    #[test]
    fn the_gate_waits_for_profiler_calls_and_refuses_new_ones() {
        static TEST_GATE: Gate = Gate::new();
        let held = TEST_GATE.enter(CallContext::ProfilerThread).expect("open");
        let uncounted = TEST_GATE.enter(CallContext::Asynchronous).expect("open");
        drop(uncounted);
        // One call in flight: close waits, and gives up at the deadline.
        assert_eq!(TEST_GATE.close(Duration::from_millis(50)), Err(1));
        assert!(TEST_GATE.enter(CallContext::ProfilerThread).is_none());
        assert!(TEST_GATE.enter(CallContext::Asynchronous).is_none());
        assert!(TEST_GATE.enter(CallContext::InCallback).is_some());
        // A call ending while close waits wakes it at once.
        let ender = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            drop(held);
        });
        let started = Instant::now();
        assert_eq!(TEST_GATE.close(Duration::from_secs(30)), Ok(()));
        assert!(started.elapsed() < Duration::from_secs(10));
        ender.join().unwrap();
        assert_eq!(TEST_GATE.in_flight.load(SeqCst), 0);
    }
}

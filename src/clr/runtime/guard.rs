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

use std::cell::Cell;
use std::thread::JoinHandle;

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
}

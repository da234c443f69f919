//! One instrumentation shared by every JIT thread: [`Instrumentation`].

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};

use super::method_rewrite::MethodRewrite;
use crate::body::MethodBody;
use crate::metadata::MetadataSource;
use crate::transform::{InstrumentationCode, Instrumenter, TailCallPolicy};

/// The code a profiler injects into the methods it instruments, shared by every JIT
/// thread (it is `Send + Sync`; no `RefCell`, no thread-local in the profiler). The
/// [`Instrumenter`] that does the work keeps scratch buffers; the pipeline keeps one per
/// thread and per `Instrumentation`, made the first time the thread uses it.
#[derive(Debug)]
pub struct Instrumentation {
    /// Names this instrumentation in the threads' caches.
    key: u64,
    code: InstrumentationCode,
    tail_calls: TailCallPolicy,
}

/// A source of [`Instrumentation::key`]s: never the same twice in a process.
static NEXT_KEY: AtomicU64 = AtomicU64::new(1);

/// How many instrumenters a thread keeps (a profiler has one or two instrumentations;
/// past this, the least recently used one is dropped and made again when needed).
const PER_THREAD: usize = 8;

thread_local! {
    /// Each thread's instrumenters, most recently used last.
    static INSTRUMENTERS: RefCell<Vec<(u64, Instrumenter)>> = const { RefCell::new(Vec::new()) };
}

impl Instrumentation {
    /// An instrumentation injecting `code`, keeping tail calls
    /// ([`TailCallPolicy::Keep`]).
    ///
    /// # Errors
    /// The errors of [`Instrumenter::new`], checked here once.
    pub fn new(code: InstrumentationCode) -> crate::error::Result<Instrumentation> {
        Instrumenter::new(code.clone())?;
        Ok(Instrumentation {
            key: NEXT_KEY.fetch_add(1, Ordering::Relaxed),
            code,
            tail_calls: TailCallPolicy::default(),
        })
    }

    /// This instrumentation with `policy` for `tail.` calls.
    pub fn with_tail_call_policy(mut self, policy: TailCallPolicy) -> Instrumentation {
        self.tail_calls = policy;
        // Instrumenters made for the old policy must not be found under the new one.
        self.key = NEXT_KEY.fetch_add(1, Ordering::Relaxed);
        self
    }

    /// The code it injects.
    pub fn code(&self) -> &InstrumentationCode {
        &self.code
    }

    fn instrumenter(&self) -> Instrumenter {
        Instrumenter::new(self.code.clone())
            .expect("checked by Instrumentation::new")
            .with_tail_call_policy(self.tail_calls)
    }

    /// The edit that instruments `body`, the method `method` names, with `tokens` as
    /// the per-method tokens: this thread's instrumenter, the method id
    /// [`MethodRewrite::method_id`], the module's resolver; the return-value local's
    /// signature goes to the pipeline, which defines it after verification, and the
    /// instrumenter's exact max stack is the verification of the stack. For an
    /// instrumentation method's [`edit`](crate::clr::InstrumentationMethod::edit), or a
    /// [`JitRewriter::rewrite`](super::JitRewriter::rewrite) edit.
    ///
    /// # Errors
    /// The method cannot be instrumented (the instrumenter's errors); `body` is then
    /// not to be handed over.
    pub fn edit<M: MetadataSource>(
        &self,
        body: &mut MethodBody,
        method: &mut MethodRewrite<'_, M>,
        tokens: &[u32],
    ) -> crate::error::Result<bool> {
        let mut context = method.context(body)?;
        context.tokens = tokens;
        let locals = self.with(|instrumenter| {
            let done = instrumenter.instrument(body, &context, method.module.resolver())?;
            crate::error::Result::Ok(done.new_locals_signature.map(<[u8]>::to_vec))
        })?;
        method.stack_verified();
        if let Some(locals) = locals {
            method.set_locals_signature(&locals);
        }
        Ok(true)
    }

    /// Runs `f` with this thread's instrumenter for this instrumentation.
    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut Instrumenter) -> R) -> R {
        let cached = INSTRUMENTERS.try_with(|cache| {
            let mut cache = cache.try_borrow_mut().ok()?;
            let at = cache.iter().position(|(k, _)| *k == self.key);
            let (_, instrumenter) = match at {
                Some(i) => cache.remove(i),
                None => (self.key, self.instrumenter()),
            };
            Some(instrumenter)
        });
        let mut instrumenter = match cached {
            Ok(Some(instrumenter)) => instrumenter,
            // Re-entered from inside `f`, or the thread is ending: a fresh one.
            _ => self.instrumenter(),
        };
        let result = f(&mut instrumenter);
        let _ = INSTRUMENTERS.try_with(|cache| {
            if let Ok(mut cache) = cache.try_borrow_mut() {
                if cache.len() >= PER_THREAD {
                    cache.remove(0);
                }
                cache.push((self.key, instrumenter));
            }
        });
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn shared_by_threads_each_with_its_own_instrumenter() {
        assert_send_sync::<Instrumentation>();
        let shared = Instrumentation::new(InstrumentationCode::default()).unwrap();
        std::thread::scope(|scope| {
            for _ in 0..4 {
                scope.spawn(|| {
                    for _ in 0..3 {
                        shared.with(|i| assert_eq!(i.code(), shared.code()));
                    }
                    // Made once on this thread, then reused.
                    let cached = INSTRUMENTERS.with(|c| c.borrow().len());
                    assert_eq!(cached, 1);
                    // Used again from inside its own use: a fresh one, no panic.
                    shared.with(|_| shared.with(|_| ()));
                });
            }
        });
    }
}

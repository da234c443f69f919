//! [`Logger`], the profiler's log for code that runs outside a call of the host (a data
//! item's `Drop`, a thread of the method's own), and the data items' boxes: what
//! [`Module::set_item`](crate::Module::set_item) and
//! [`Edit::set_method_item`](crate::Edit::set_method_item) give the host, and the
//! destructor the host calls.
#![allow(
    unsafe_code,
    reason = "the host's table, and item pointers given to the host"
)]

use core::ffi::{c_char, c_void};
use core::fmt;
use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, PoisonError, RwLock};

use crate::sys;

/// The host's table, while it is valid.
#[derive(Clone, Copy)]
struct HostTable(*const sys::ilr_host);

// SAFETY: the header makes `log` callable from any thread at any time after `create`,
// until `destroy` returns; the table is only read.
unsafe impl Send for HostTable {}
// SAFETY: as for `Send`.
unsafe impl Sync for HostTable {}

/// The profiler's log, usable from any thread and at any time: a line written through
/// it reaches the log until the host is done with the method (its `destroy`), and is
/// dropped silently afterwards (the header keeps the host's table valid only until
/// then, and a data item may be dropped later).
///
/// Get one from what the host lends ([`Options::logger`](crate::Options::logger),
/// [`Module::logger`](crate::Module::logger), [`Edit::logger`](crate::Edit::logger),
/// [`Candidate::logger`](crate::Candidate::logger)) and keep it: in the method (for
/// [`Method::callback`](crate::Method::callback), which gets nothing lent), in a data
/// item (for its `Drop`). Cloning it is cheap.
#[derive(Clone)]
pub struct Logger(Arc<RwLock<Option<HostTable>>>);

impl Logger {
    /// The log of the host behind `host` (null: a log that drops every line).
    pub(crate) fn new(host: *const sys::ilr_host) -> Logger {
        let table = (!host.is_null()).then_some(HostTable(host));
        Logger(Arc::new(RwLock::new(table)))
    }

    /// The host is done (its `destroy` is returning): later lines are dropped. Waits
    /// for the lines being written.
    pub(crate) fn close(&self) {
        *self.0.write().unwrap_or_else(PoisonError::into_inner) = None;
    }

    /// Writes `message` as a line of the profiler's log (begin it with the method's
    /// name: the host cannot tell which library writes). Dropped after the host's
    /// `destroy`.
    pub fn log(&self, message: &str) {
        let table = self.0.read().unwrap_or_else(PoisonError::into_inner);
        if let Some(HostTable(host)) = *table {
            // SAFETY: the host's table, valid until `destroy` returns, which `close`
            // (called before) waits for this read lock to be released to record; its
            // `log` may be called from any thread, with a pointer and a length valid
            // for the call.
            unsafe { ((*host).log)(message.as_ptr().cast::<c_char>(), message.len()) };
        }
    }

    /// Whether lines still reach the log (the host's `destroy` has not run).
    pub fn is_open(&self) -> bool {
        self.0
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some()
    }
}

impl fmt::Debug for Logger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Logger")
            .field("open", &self.is_open())
            .finish()
    }
}

/// A panic's message.
pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "a panic without a message".to_owned()
    }
}

/// What an item pointer given to the host points to: the value, type-erased (for
/// [`item`]'s downcast), and the log its destructor reports a panic to.
struct ItemBox {
    value: Box<dyn Any + Send + Sync>,
    logger: Logger,
}

/// `value` boxed as an item for the host: the pointer and its destructor
/// ([`destroy_item`]).
pub(crate) fn into_raw<T: Send + Sync + 'static>(value: T, logger: &Logger) -> *mut c_void {
    let boxed = Box::new(ItemBox {
        value: Box::new(value),
        logger: logger.clone(),
    });
    Box::into_raw(boxed).cast::<c_void>()
}

/// The destructor of every item [`into_raw`] made (`ilr_item_destructor`): drops the
/// value. Nothing unwinds into the host: a panic in the value's `Drop` is caught and
/// logged (while the [`Logger`] is open).
///
/// # Safety
/// `item` is null or a pointer [`into_raw`] made, not destroyed before (the host calls
/// the destructor once).
pub(crate) unsafe extern "C" fn destroy_item(item: *mut c_void) {
    if item.is_null() {
        return;
    }
    // SAFETY: made by `into_raw` from a `Box<ItemBox>`, given back once (the caller's
    // contract).
    let boxed = unsafe { Box::from_raw(item.cast::<ItemBox>()) };
    let logger = boxed.logger.clone();
    if let Err(payload) = catch_unwind(AssertUnwindSafe(move || drop(boxed))) {
        let _ = catch_unwind(AssertUnwindSafe(move || {
            let message = format!(
                "panicked in a data item's drop: {}",
                panic_message(&*payload)
            );
            // Dropping the payload runs its code: it may panic too (caught).
            drop(payload);
            logger.log(&message);
        }));
    }
}

/// The value behind an item pointer the host gave back, if it is a `T`.
///
/// # Safety
/// `item` is null or a pointer [`into_raw`] made whose item the host keeps alive for
/// `'a` (the header: until the call that received it returns).
pub(crate) unsafe fn downcast<'a, T: 'static>(item: *mut c_void) -> Option<&'a T> {
    if item.is_null() {
        return None;
    }
    // SAFETY: an `ItemBox` alive for 'a (the caller's contract), only ever shared: the
    // host hands out the pointer and calls the destructor after the last call that
    // received it returned.
    let boxed = unsafe { &*item.cast::<ItemBox>() };
    boxed.value.downcast_ref::<T>()
}

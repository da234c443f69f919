//! The handles a library gets during a call: numbers, never pointers. Each call into a
//! library registers what it lends (options, a candidate, an edit) on the calling
//! thread under a fresh number, and withdraws it when the call returns, panic or not.
//! A host function given a number finds the thing only if it is still lent on this
//! thread: a handle kept past its call, or used on another thread, finds nothing
//! ([`E_INVALID_HANDLE`]) instead of memory that is gone.

use core::cell::RefCell;
use core::ffi::c_void;
use std::any::Any;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use smallvec::SmallVec;

use super::abi::{E_INVALID_HANDLE, Handle, Status, Str};
use crate::body::MethodBody;
use crate::clr::host::{Candidate, MethodEdit, ModuleLoad, Options};

/// The library a call is into, kept loaded by every data item it gives the host.
pub(super) type Library = Arc<libloading::Library>;

/// What a handle lends.
#[derive(Clone, Copy)]
enum Lent {
    Options(*const Options),
    Candidate(*const c_void),
    Edit {
        body: *mut MethodBody,
        method: *mut c_void,
        /// The handle of the edit's options (lent with it).
        options: Handle,
        /// The library called.
        library: *const Library,
    },
    Module {
        load: *const c_void,
        /// The library called.
        library: *const Library,
    },
}

/// One handle lent on this thread, and the strings and data items given out through it
/// (kept until it is withdrawn, so that what the library was given stays valid until
/// its call returns, whatever other threads replace meanwhile).
struct Entry {
    handle: Handle,
    lent: Lent,
    strings: Vec<Box<str>>,
    items: Vec<Arc<dyn Any + Send + Sync>>,
}

thread_local! {
    /// The handles lent on this thread now (a call lends one or two).
    static LENT: RefCell<SmallVec<[Entry; 4]>> = RefCell::new(SmallVec::new());
}

/// The next handle number: never 0, never reused.
static NEXT: AtomicU64 = AtomicU64::new(1);

fn fresh() -> Handle {
    NEXT.fetch_add(1, Relaxed)
}

/// Withdraws the handles it lent when dropped (on return or unwind).
struct Lending {
    handles: SmallVec<[Handle; 2]>,
}

impl Lending {
    fn lend(lent: Lent) -> (Lending, Handle) {
        let handle = fresh();
        LENT.with(|l| {
            l.borrow_mut().push(Entry {
                handle,
                lent,
                strings: Vec::new(),
                items: Vec::new(),
            });
        });
        let mut handles = SmallVec::new();
        handles.push(handle);
        (Lending { handles }, handle)
    }

    fn also(&mut self, handle: Handle, lent: Lent) {
        LENT.with(|l| {
            l.borrow_mut().push(Entry {
                handle,
                lent,
                strings: Vec::new(),
                items: Vec::new(),
            });
        });
        self.handles.push(handle);
    }
}

impl Drop for Lending {
    fn drop(&mut self) {
        // The withdrawn entries are dropped after the list is released: an item's
        // destructor (the library's) may run here and must find the list free.
        let withdrawn: SmallVec<[Entry; 2]> = LENT
            .try_with(|l| {
                let mut lent = l.borrow_mut();
                let mut gone = SmallVec::new();
                let mut i = 0;
                while i < lent.len() {
                    match self.handles.contains(&lent[i].handle) {
                        true => gone.push(lent.remove(i)),
                        false => i += 1,
                    }
                }
                gone
            })
            .unwrap_or_default();
        drop(withdrawn);
    }
}

/// What `handle` lends on this thread now.
fn find(handle: Handle) -> Option<Lent> {
    LENT.try_with(|l| {
        l.borrow()
            .iter()
            .find(|e| e.handle == handle)
            .map(|e| e.lent)
    })
    .ok()
    .flatten()
}

/// Keeps `text` with `handle` until it is withdrawn; a pointer to it and its length.
///
/// # Errors
/// [`E_INVALID_HANDLE`] when `handle` lends nothing on this thread now.
pub(super) fn keep_string(handle: Handle, text: String) -> Result<Str, Status> {
    LENT.try_with(|l| {
        let mut lent = l.borrow_mut();
        let entry = lent
            .iter_mut()
            .find(|e| e.handle == handle)
            .ok_or(E_INVALID_HANDLE)?;
        let text: Box<str> = text.into();
        // The heap bytes do not move when the box does.
        let given = Str {
            data: text.as_ptr().cast(),
            length: text.len(),
        };
        entry.strings.push(text);
        Ok(given)
    })
    .unwrap_or(Err(E_INVALID_HANDLE))
}

/// Keeps `item` with `handle` until it is withdrawn.
///
/// # Errors
/// [`E_INVALID_HANDLE`] when `handle` lends nothing on this thread now.
pub(super) fn keep_item(handle: Handle, item: Arc<dyn Any + Send + Sync>) -> Result<(), Status> {
    LENT.try_with(|l| {
        let mut lent = l.borrow_mut();
        let entry = lent
            .iter_mut()
            .find(|e| e.handle == handle)
            .ok_or(E_INVALID_HANDLE)?;
        entry.items.push(item);
        Ok(())
    })
    .unwrap_or(Err(E_INVALID_HANDLE))
}

/// Calls `f` with a handle lending `options`, withdrawn when `f` returns.
pub(super) fn lend_options<R>(options: &Options, f: impl FnOnce(Handle) -> R) -> R {
    let (_lending, handle) = Lending::lend(Lent::Options(options));
    f(handle)
}

/// Calls `f` with a handle lending `candidate`, withdrawn when `f` returns.
pub(super) fn lend_candidate<R>(candidate: &Candidate<'_>, f: impl FnOnce(Handle) -> R) -> R {
    let pointer = (candidate as *const Candidate<'_>).cast::<c_void>();
    let (_lending, handle) = Lending::lend(Lent::Candidate(pointer));
    f(handle)
}

/// Calls `f` with a handle lending the edit of `body` through `method` (and its
/// options), withdrawn when `f` returns.
pub(super) fn lend_edit<R>(
    body: &mut MethodBody,
    method: &mut MethodEdit<'_, '_>,
    library: &Library,
    f: impl FnOnce(Handle) -> R,
) -> R {
    let options_handle = fresh();
    let options: *const Options = method.options();
    let method = (method as *mut MethodEdit<'_, '_>).cast::<c_void>();
    let (mut lending, handle) = Lending::lend(Lent::Edit {
        body,
        method,
        options: options_handle,
        library,
    });
    lending.also(options_handle, Lent::Options(options));
    f(handle)
}

/// Calls `f` with a handle lending the module load `load`, withdrawn when `f` returns.
pub(super) fn lend_module<R>(
    load: &ModuleLoad<'_>,
    library: &Library,
    f: impl FnOnce(Handle) -> R,
) -> R {
    let load = (load as *const ModuleLoad<'_>).cast::<c_void>();
    let (_lending, handle) = Lending::lend(Lent::Module { load, library });
    f(handle)
}

/// Runs `f` on the module load `handle` lends and the library called.
///
/// # Errors
/// [`E_INVALID_HANDLE`] when it lends none on this thread now.
pub(super) fn with_module<R>(
    handle: Handle,
    f: impl FnOnce(&ModuleLoad<'_>, &Library) -> R,
) -> Result<R, Status> {
    match find(handle) {
        // SAFETY: made from references by `lend_module`, whose caller holds them
        // borrowed until the entry is withdrawn, which has not happened (it is listed);
        // they do not leave `f`.
        Some(Lent::Module { load, library }) => {
            Ok(f(unsafe { &*load.cast::<ModuleLoad<'_>>() }, unsafe {
                &*library
            }))
        }
        _ => Err(E_INVALID_HANDLE),
    }
}

/// Runs `f` on the options `handle` lends.
///
/// # Errors
/// [`E_INVALID_HANDLE`] when it lends none on this thread now.
pub(super) fn with_options<R>(handle: Handle, f: impl FnOnce(&Options) -> R) -> Result<R, Status> {
    match find(handle) {
        // SAFETY: the pointer was made from a reference by `lend_options` or
        // `lend_edit`, whose caller holds it borrowed until the entry is withdrawn; the
        // entry is on this thread's list, so that call has not returned.
        Some(Lent::Options(options)) => Ok(f(unsafe { &*options })),
        _ => Err(E_INVALID_HANDLE),
    }
}

/// Runs `f` on the candidate `handle` lends.
///
/// # Errors
/// [`E_INVALID_HANDLE`] when it lends none on this thread now.
pub(super) fn with_candidate<R>(
    handle: Handle,
    f: impl FnOnce(&Candidate<'_>) -> R,
) -> Result<R, Status> {
    match find(handle) {
        // SAFETY: made from a `&Candidate` by `lend_candidate`, borrowed by its caller
        // until the entry is withdrawn, which has not happened (the entry is listed);
        // the reference does not leave `f`.
        Some(Lent::Candidate(c)) => Ok(f(unsafe { &*c.cast::<Candidate<'_>>() })),
        _ => Err(E_INVALID_HANDLE),
    }
}

/// Runs `f` on the body and method the edit `handle` lends, and the handle of its
/// options.
///
/// # Errors
/// [`E_INVALID_HANDLE`] when it lends none on this thread now.
pub(super) fn with_edit<R>(
    handle: Handle,
    f: impl FnOnce(&mut MethodBody, &mut MethodEdit<'_, '_>, Handle) -> R,
) -> Result<R, Status> {
    with_edit_of(handle, |body, method, options, _| f(body, method, options))
}

/// [`with_edit`], with the library called.
///
/// # Errors
/// [`E_INVALID_HANDLE`] when `handle` lends no edit on this thread now.
pub(super) fn with_edit_of<R>(
    handle: Handle,
    f: impl FnOnce(&mut MethodBody, &mut MethodEdit<'_, '_>, Handle, &Library) -> R,
) -> Result<R, Status> {
    match find(handle) {
        Some(Lent::Edit {
            body,
            method,
            options,
            library,
        }) => {
            // SAFETY: made from the `&mut` references `lend_edit` was given, whose
            // caller does not touch them until the call into the library returns and
            // the entry is withdrawn (it is still listed). The host functions run on
            // this thread, one at a time (none calls back into the library), so these
            // are the only live references; they do not leave `f`.
            let (body, method) = unsafe { (&mut *body, &mut *method.cast::<MethodEdit<'_, '_>>()) };
            // SAFETY: `library` is borrowed by `lend_edit`'s caller likewise.
            Ok(f(body, method, options, unsafe { &*library }))
        }
        _ => Err(E_INVALID_HANDLE),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_handle_is_found_only_during_its_call_and_on_its_thread() {
        let options = Options::default();
        let kept = lend_options(&options, |h| {
            assert!(with_options(h, |_| ()).is_ok());
            let elsewhere = std::thread::spawn(move || with_options(h, |_| ()).err())
                .join()
                .unwrap();
            assert_eq!(elsewhere, Some(E_INVALID_HANDLE));
            h
        });
        assert_eq!(with_options(kept, |_| ()).err(), Some(E_INVALID_HANDLE));
        // Never reused: the next one is another number.
        lend_options(&options, |h| assert_ne!(h, kept));
        assert_eq!(with_options(0, |_| ()).err(), Some(E_INVALID_HANDLE));
    }

    #[test]
    fn a_panic_inside_the_call_withdraws_the_handle() {
        let options = Options::default();
        let mut seen = 0;
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            lend_options(&options, |h| {
                seen = h;
                panic!("in the library");
            })
        }));
        assert!(caught.is_err());
        assert_eq!(with_options(seen, |_| ()).err(), Some(E_INVALID_HANDLE));
    }
}

//! What [`export_method!`](crate::export_method) expands to call: `create`, which fills
//! the host's `ilr_method` table with the `extern "C"` functions below, generic over the
//! [`Method`].
//!
//! Every function here catches panics (nothing unwinds into the host): a panic in
//! `create`, `start`, `check_options`, `module_loaded` or `edit` becomes `ILR_E_FAILED`
//! with its message in the host's buffer; one in `wants` answers `ILR_WANT_NO` and logs
//! its message; one in `callback` leaves `*answer` as it came and logs its message; one
//! in `destroy` (the method's `Drop`) is logged. (A data item's destructor is
//! `item::destroy_item`, which does the same.) The method's state is not poisoned by a
//! panic: later calls run as usual (a method that cannot go on after one should keep a
//! flag, or lock a `Mutex`, which poisons).
#![allow(
    unsafe_code,
    reason = "the exported C functions and the tables they fill"
)]

use core::ffi::{c_char, c_void};
use std::ffi::CString;
use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::host::{Candidate, Edit, Module, Options};
use crate::item::{Logger, panic_message};
use crate::status::{Error, Status};
use crate::{CallbackId, Method, OptionKind, Want, sys};

/// What `ilr_method.self` points to: the method, the host's table, and the strings the
/// `ilr_method` table points into (alive until `destroy`).
struct State<T> {
    method: T,
    host: *const sys::ilr_host,
    /// The host's log for what runs outside its calls (closed by `destroy`).
    logger: Logger,
    /// `ilr_method.name` points into it.
    _name: CString,
    /// The `ilr_option_spec`s' names point into them.
    _option_names: Vec<CString>,
    /// `ilr_method.options` points into it.
    _specs: Vec<sys::ilr_option_spec>,
    /// What `targets` gave the host: the strings and the array of pointers to them,
    /// kept until `destroy` (set once).
    targets: std::sync::OnceLock<(Vec<CString>, Vec<*const c_char>)>,
}

/// Runs `f`; its panic an [`Error`] (`ILR_E_FAILED`) saying it panicked in `what`.
fn guarded<R>(what: &str, f: impl FnOnce() -> Result<R, Error>) -> Result<R, Error> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(result) => result,
        Err(payload) => {
            let message = format!("panicked in `{what}`: {}", panic_message(&*payload));
            // Dropping the payload runs its code: it may panic too.
            let _ = catch_unwind(AssertUnwindSafe(move || drop(payload)));
            Err(Error::new(message))
        }
    }
}

/// Writes `message` to the host's buffer (at most its capacity, cut at a character
/// boundary).
///
/// # Safety
/// `error` is null or points to an `ilr_error` whose `data` is null or valid for
/// `capacity` writes (the header's contract).
unsafe fn tell(error: *mut sys::ilr_error, message: &str) {
    if error.is_null() {
        return;
    }
    // SAFETY: non-null, an `ilr_error` of the host (the caller's contract).
    let error = unsafe { &mut *error };
    if error.data.is_null() {
        error.length = 0;
        return;
    }
    let mut length = message.len().min(error.capacity);
    while !message.is_char_boundary(length) {
        length -= 1;
    }
    // SAFETY: `length` <= `capacity` bytes, writable at `data` (the caller's contract);
    // a buffer of the host cannot overlap our string.
    unsafe {
        core::ptr::copy_nonoverlapping(message.as_ptr(), error.data.cast::<u8>(), length);
    }
    error.length = length;
}

/// The status for `result`, its error's message told to the host.
///
/// # Safety
/// As [`tell`].
unsafe fn answer(result: Result<(), Error>, error: *mut sys::ilr_error) -> sys::ilr_status {
    match result {
        Ok(()) => sys::ILR_OK,
        Err(e) => {
            // SAFETY: the caller's contract.
            unsafe { tell(error, e.message()) };
            match e.status().code() {
                // An error must not read as success.
                sys::ILR_OK => sys::ILR_E_FAILED,
                code => code,
            }
        }
    }
}

/// Logs `message` through `host` (if not null).
///
/// # Safety
/// `host` is null or the host's table, still valid.
unsafe fn log(host: *const sys::ilr_host, message: &str) {
    if host.is_null() {
        return;
    }
    // SAFETY: the host's table (the caller's contract) and its function, with a pointer
    // and length valid for the call.
    unsafe { ((*host).log)(message.as_ptr().cast::<c_char>(), message.len()) };
}

/// `ilrewrite_method_create` for `T`, made by `constructor`: checks the host's tables,
/// and fills `method` with `T`'s name, priority, options and functions.
///
/// # Safety
/// The header's contract for `ilrewrite_method_create`: `host` is null or the host's
/// table (at least its `size` and `abi_version` readable, all of it valid until
/// `destroy` returns), `method` null or a table of `method->size` bytes, `error` null or
/// the host's buffer.
#[doc(hidden)]
pub unsafe fn create<T: Method, F: FnOnce() -> T>(
    host: *const sys::ilr_host,
    method: *mut sys::ilr_method,
    error: *mut sys::ilr_error,
    constructor: F,
) -> sys::ilr_status {
    // SAFETY: the caller's contract, passed on.
    let result = guarded("ilrewrite_method_create", || unsafe {
        fill(host, method, constructor)
    });
    // SAFETY: the caller's contract.
    unsafe { answer(result, error) }
}

/// The body of [`create`].
///
/// # Safety
/// As [`create`].
unsafe fn fill<T: Method, F: FnOnce() -> T>(
    host: *const sys::ilr_host,
    method: *mut sys::ilr_method,
    constructor: F,
) -> Result<(), Error> {
    let invalid = |message: String| Error::with_status(Status::INVALID_ARGUMENT, message);
    if host.is_null() || method.is_null() {
        return Err(invalid("no host table or no method table".to_owned()));
    }
    // Only the first two fields are read before the size says the rest is there.
    // SAFETY: the host's table, whose `size` and `abi_version` are always there.
    let (host_size, host_version) = unsafe { ((*host).size, (*host).abi_version) };
    if host_version != sys::ILR_ABI_VERSION {
        return Err(invalid(format!(
            "the host speaks ABI version {host_version}, this library version {}",
            sys::ILR_ABI_VERSION
        )));
    }
    if (host_size as usize) < size_of::<sys::ilr_host>() {
        return Err(invalid(format!(
            "the host's ilr_host has {host_size} bytes, this library needs {}",
            size_of::<sys::ilr_host>()
        )));
    }
    // SAFETY: the host's table, its `size` set by the host.
    let method_size = unsafe { (*method).size };
    if (method_size as usize) < size_of::<sys::ilr_method>() {
        return Err(invalid(format!(
            "the host's ilr_method has {method_size} bytes, this library needs {}",
            size_of::<sys::ilr_method>()
        )));
    }
    let made = constructor();
    let name = CString::new(made.name())
        .map_err(|_| Error::new(format!("the name {:?} has a NUL byte", made.name())))?;
    let mut option_names = Vec::new();
    let mut specs = Vec::new();
    for spec in made.options() {
        let name = CString::new(spec.name())
            .map_err(|_| Error::new(format!("the option {:?} has a NUL byte", spec.name())))?;
        let kind = match spec.kind() {
            OptionKind::Integer => sys::ILR_OPTION_INTEGER,
            OptionKind::Boolean => sys::ILR_OPTION_BOOLEAN,
            OptionKind::String => sys::ILR_OPTION_STRING,
            OptionKind::Strings => sys::ILR_OPTION_STRINGS,
            OptionKind::Selectors => sys::ILR_OPTION_SELECTORS,
        };
        // The CString's buffer does not move when the CString does.
        specs.push(sys::ilr_option_spec {
            name: name.as_ptr(),
            kind,
        });
        option_names.push(name);
    }
    let option_count = u32::try_from(specs.len()).map_err(|_| Error::new("too many options"))?;
    let priority = made.priority();
    let events = made.events();
    let callbacks = made.callbacks().words();
    let state = Box::new(State {
        method: made,
        host,
        logger: Logger::new(host),
        _name: name,
        _option_names: option_names,
        _specs: specs,
        targets: std::sync::OnceLock::new(),
    });
    // The Vec's and the CString's buffers stay where they are when the Box takes them.
    let (name, options) = (state._name.as_ptr(), state._specs.as_ptr());
    // SAFETY: the host's table of at least `size_of::<ilr_method>()` bytes (checked);
    // `size` is left as the host set it.
    unsafe {
        (*method).this = Box::into_raw(state).cast::<c_void>();
        (*method).name = name;
        (*method).priority = priority;
        (*method).options = options;
        (*method).option_count = option_count;
        (*method).start = Some(start::<T>);
        (*method).check_options = Some(check_options::<T>);
        (*method).wants = Some(wants::<T>);
        (*method).edit = Some(edit::<T>);
        (*method).destroy = Some(destroy::<T>);
        (*method).targets = Some(targets::<T>);
        (*method).module_loaded = Some(module_loaded::<T>);
        (*method).events = events.monitor;
        (*method).events_high = events.high;
        (*method).callbacks = callbacks;
        (*method).callback = Some(callback::<T>);
    }
    Ok(())
}

/// The state behind `this` and the host's table, for the length of one call.
///
/// # Safety
/// `this` is what `fill` put in `ilr_method.self` and `destroy` has not run.
unsafe fn state<'call, T>(this: *mut c_void) -> (&'call State<T>, &'call sys::ilr_host) {
    // SAFETY: a `State<T>` boxed by `fill`, alive until `destroy` (the caller's
    // contract); only shared references are made to it before `destroy`.
    let state = unsafe { &*this.cast::<State<T>>() };
    // SAFETY: the host's table, checked by `fill`, valid until `destroy` returns.
    let host = unsafe { &*state.host };
    (state, host)
}

/// `ilr_method.start`.
unsafe extern "C" fn start<T: Method>(
    this: *mut c_void,
    options: sys::ilr_options,
    error: *mut sys::ilr_error,
) -> sys::ilr_status {
    let result = guarded("start", || {
        // SAFETY: the host passes back `ilr_method.self` before `destroy`.
        let (state, host) = unsafe { state::<T>(this) };
        state
            .method
            .start(&Options::new(host, &state.logger, options))
    });
    // SAFETY: the host's buffer.
    unsafe { answer(result, error) }
}

/// `ilr_method.targets`.
unsafe extern "C" fn targets<T: Method>(
    this: *mut c_void,
    selectors: *mut *const *const c_char,
    count: *mut u32,
    error: *mut sys::ilr_error,
) -> sys::ilr_status {
    let result = guarded("targets", || {
        if selectors.is_null() || count.is_null() {
            return Err(Error::new("targets: a null out-pointer"));
        }
        // SAFETY: as in `start`.
        let (state, _) = unsafe { state::<T>(this) };
        let kept = match state.targets.get() {
            Some(kept) => kept,
            None => {
                let texts = state.method.targets()?;
                let strings = texts
                    .into_iter()
                    .map(|t| CString::new(t).map_err(|_| Error::new("a target holds a NUL byte")))
                    .collect::<Result<Vec<CString>, Error>>()?;
                let pointers = strings.iter().map(|s| s.as_ptr()).collect();
                // Set once; a second call (the host makes one) finds the first's.
                state.targets.get_or_init(|| (strings, pointers))
            }
        };
        let n = u32::try_from(kept.1.len()).map_err(|_| Error::new("too many targets"))?;
        // SAFETY: non-null out-pointers of the host, valid for the call; the array and
        // the strings live in the state until `destroy`.
        unsafe {
            selectors.write(kept.1.as_ptr());
            count.write(n);
        }
        Ok(())
    });
    // SAFETY: the host's buffer.
    unsafe { answer(result, error) }
}

/// `ilr_method.check_options`.
unsafe extern "C" fn check_options<T: Method>(
    this: *mut c_void,
    options: sys::ilr_options,
    error: *mut sys::ilr_error,
) -> sys::ilr_status {
    let result = guarded("check_options", || {
        // SAFETY: as in `start`.
        let (state, host) = unsafe { state::<T>(this) };
        state
            .method
            .check_options(&Options::new(host, &state.logger, options))
    });
    // SAFETY: the host's buffer.
    unsafe { answer(result, error) }
}

/// `ilr_method.wants`.
unsafe extern "C" fn wants<T: Method>(this: *mut c_void, candidate: sys::ilr_candidate) -> i32 {
    let mut host_table = core::ptr::null();
    let result = guarded("wants", || {
        // SAFETY: as in `start`.
        let (state, host) = unsafe { state::<T>(this) };
        host_table = state.host;
        Ok(state
            .method
            .wants(&Candidate::new(host, &state.logger, candidate)))
    });
    match result {
        Ok(Want::Edit) => sys::ILR_WANT_EDIT,
        Ok(Want::EditSingleRet) => sys::ILR_WANT_EDIT_SINGLE_RET,
        Ok(Want::No) => sys::ILR_WANT_NO,
        Err(e) => {
            // SAFETY: null, or the host's table (before `destroy`).
            unsafe { log(host_table, e.message()) };
            sys::ILR_WANT_NO
        }
    }
}

/// `ilr_method.edit`.
unsafe extern "C" fn edit<T: Method>(
    this: *mut c_void,
    edit: sys::ilr_edit,
    changed: *mut i32,
    error: *mut sys::ilr_error,
) -> sys::ilr_status {
    let result = guarded("edit", || {
        // SAFETY: as in `start`.
        let (state, host) = unsafe { state::<T>(this) };
        state.method.edit(&mut Edit::new(host, &state.logger, edit))
    });
    if !changed.is_null() {
        // SAFETY: the host's out-parameter, non-null.
        unsafe { changed.write(i32::from(matches!(result, Ok(true)))) };
    }
    // SAFETY: the host's buffer.
    unsafe { answer(result.map(drop), error) }
}

/// `ilr_method.module_loaded`.
unsafe extern "C" fn module_loaded<T: Method>(
    this: *mut c_void,
    module: sys::ilr_module,
    error: *mut sys::ilr_error,
) -> sys::ilr_status {
    let result = guarded("module_loaded", || {
        // SAFETY: as in `start`.
        let (state, host) = unsafe { state::<T>(this) };
        state
            .method
            .module_loaded(&Module::new(host, &state.logger, module))
    });
    // SAFETY: the host's buffer.
    unsafe { answer(result, error) }
}

/// `ilr_method.callback`: the method's answer written to `*answer` when it says no; a
/// panic logged, `*answer` left as it came.
unsafe extern "C" fn callback<T: Method>(
    this: *mut c_void,
    id: u32,
    args: *const u64,
    count: u32,
    answer: *mut i32,
) {
    let mut host_table = core::ptr::null();
    let result = guarded("callback", || {
        // SAFETY: as in `start`.
        let (state, _) = unsafe { state::<T>(this) };
        host_table = state.host;
        let args: &[u64] = match (args.is_null(), count) {
            (_, 0) | (true, _) => &[],
            // SAFETY: `count` words at `args`, valid for the call (the header).
            (false, n) => unsafe { core::slice::from_raw_parts(args, n as usize) },
        };
        Ok(state.method.callback(CallbackId::from_raw(id), args))
    });
    match result {
        Ok(true) => {}
        Ok(false) => {
            if !answer.is_null() {
                // SAFETY: the host's out-parameter, non-null.
                unsafe { answer.write(0) };
            }
        }
        Err(e) => {
            // SAFETY: null, or the host's table (before `destroy`).
            unsafe { log(host_table, e.message()) };
        }
    }
}

/// `ilr_method.destroy`: drops the state (the method first, then the strings), then
/// closes the method's [`Logger`]s (data items may be dropped later).
unsafe extern "C" fn destroy<T: Method>(this: *mut c_void) {
    if this.is_null() {
        return;
    }
    let mut host = core::ptr::null();
    let mut logger = None;
    let result = guarded("destroy", || {
        // SAFETY: the host's last call with `ilr_method.self`: the box `fill` made, no
        // other call in flight (the header), so it can be taken back.
        let state = unsafe { Box::from_raw(this.cast::<State<T>>()) };
        host = state.host;
        logger = Some(state.logger.clone());
        drop(state);
        Ok(())
    });
    if let Err(e) = result {
        // SAFETY: the host's table stays valid until `destroy` returns.
        unsafe { log(host, e.message()) };
    }
    if let Some(logger) = logger {
        logger.close();
    }
}

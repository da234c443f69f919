//! Registering a [`HookTable`] with the runtime: the function-id mapper, the three
//! hooks of the chosen path (our stubs, or the runtime's slow path through the
//! functions here), once per process, inside `Initialize`.

use core::ffi::c_void;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;

use super::flags::{HookCoverage, HookPath, check_flags};
use super::kind::HookKind;
use super::subscriber::{Call, HookSubscriber, HookedFunction};
use super::table::{HookError, HookTable, install, registered};
use super::trampolines;
use crate::clr::log;
use crate::clr::runtime::ProfilerInfo;
use crate::clr::runtime::guard::CallbackScope;
use crate::clr::sys::{
    CorPrfEltInfo, CorPrfMonitor, FunctionEnter3WithInfo, FunctionID, FunctionIDOrClientID,
    FunctionLeave3WithInfo, FunctionTailcall3WithInfo,
};

/// The events hooks on `path` for `subscribers` need: the path's
/// [`events`](HookPath::events) and those of the most any subscriber asks to see
/// ([`HookSubscriber::coverage`]). A subscriber's panic there counts as the default.
pub(crate) fn events_for(path: HookPath, subscribers: &[Arc<dyn HookSubscriber>]) -> CorPrfMonitor {
    let coverage = subscribers
        .iter()
        .map(|s| log::contain(|| s.coverage()).unwrap_or_default())
        .max()
        .unwrap_or(HookCoverage::Optimized);
    path.events() | coverage.events()
}

/// Registers `subscribers` on `path` with the runtime: the mapper and the three hooks.
/// Only during `Initialize`, after the event mask was set with
/// [`events_for`]`(path, subscribers)` (checked here, read back from the runtime, before
/// any hook is set).
///
/// # Errors
/// [`HookError`]; nothing is hooked then (the mapper may be set: without hooks the
/// runtime calls nothing).
pub(crate) fn register(
    info: &ProfilerInfo,
    path: HookPath,
    subscribers: Vec<Arc<dyn HookSubscriber>>,
) -> Result<Arc<HookTable>, HookError> {
    let (low, _) = info.event_mask()?;
    check_flags(path, low)?;
    let missing = events_for(path, &subscribers) - low;
    if !missing.is_empty() {
        return Err(HookError::MissingEvents(missing));
    }
    let table = Arc::new(HookTable::new(path, Some(info.clone()), subscribers)?);
    install(table.clone())?;
    let data = Arc::as_ptr(&table).cast_mut().cast::<c_void>();
    // SAFETY: `map_function` never unwinds and answers with the address of an entry the
    // table keeps (or the function's own id with hooks off); `data` points to the table,
    // which the static `TABLE` keeps for the rest of the process.
    unsafe { info.set_function_id_mapper2(map_function, data)? };
    match path {
        HookPath::Fast => {
            let Some((enter, leave, tailcall)) = trampolines::stubs() else {
                return Err(HookError::Unsupported);
            };
            // SAFETY: the stubs keep the fast-path contract's registers (checked by
            // tests/hooks_native.rs) and their dispatcher calls `fast_call` with the
            // registered table, which accepts exactly the ids `map_function` returns with
            // hooks on; they live in the crate's code.
            unsafe { info.set_enter_leave_hooks3(enter, leave, tailcall)? };
        }
        #[cfg(feature = "elt-test-modes")]
        HookPath::NegativeControl => {
            let Some((enter, leave, tailcall)) = trampolines::broken_stubs() else {
                return Err(HookError::Unsupported);
            };
            // SAFETY: as for the fast path, except the registers these stubs forget on
            // purpose (XMM3 at enter, RDX at leave): memory-safe for the runtime (a
            // wrong float or integer value, not a wrong pointer the runtime follows, in
            // the tests that use it), and documented as for tests only.
            unsafe { info.set_enter_leave_hooks3(enter, leave, tailcall)? };
        }
        HookPath::RuntimeWithInfo => {
            // SAFETY: C-ABI functions the runtime's wrappers call with the mapper's ids;
            // they never unwind.
            unsafe {
                info.set_enter_leave_hooks3_with_info(
                    slow_enter as FunctionEnter3WithInfo,
                    slow_leave as FunctionLeave3WithInfo,
                    slow_tailcall as FunctionTailcall3WithInfo,
                )?;
            }
        }
    }
    Ok(table)
}

/// The `FunctionIDMapper2` the runtime calls once per JIT compilation.
///
/// # Safety
/// `data` is the registered table's address; `hook` is null or writable.
unsafe extern "system" fn map_function(
    function: FunctionID,
    data: *mut c_void,
    hook: *mut i32,
) -> usize {
    // The runtime calls the mapper from a JIT compilation: a synchronous context.
    let _scope = CallbackScope::enter();
    // SAFETY: `register` passes the table's address, kept alive by `TABLE`.
    let table = unsafe { data.cast::<HookTable>().cast_const().as_ref() };
    let decided = table.and_then(|table| {
        table.counts().mapped.fetch_add(1, Relaxed);
        log::contain(|| table.decide(function)).unwrap_or(None)
    });
    let (on, id) = match decided {
        Some(entry) => (1, entry as usize),
        None => (0, function),
    };
    // SAFETY: the runtime passes a writable BOOL.
    if let Some(hook) = unsafe { hook.as_mut() } {
        *hook = on;
    }
    id
}

/// The slow path's common body.
fn slow(kind: HookKind, id: usize, elt_info: CorPrfEltInfo) {
    let Some(table) = registered() else {
        return;
    };
    // SAFETY: as in `fast_call`: the runtime's wrappers pass the mapper's id.
    let Some(function) = (unsafe { (id as *const HookedFunction).as_ref() }) else {
        return;
    };
    let call = Call {
        function,
        frame: None,
        elt_info,
    };
    // `deliver` contains each subscriber's panic; nothing else here can panic.
    table.deliver(kind, &call);
}

unsafe extern "system" fn slow_enter(id: FunctionIDOrClientID, elt_info: CorPrfEltInfo) {
    // SAFETY: both fields are `usize`: every bit pattern is a valid value of either.
    slow(HookKind::Enter, unsafe { id.client_id }, elt_info);
}

unsafe extern "system" fn slow_leave(id: FunctionIDOrClientID, elt_info: CorPrfEltInfo) {
    // SAFETY: both fields are `usize`: every bit pattern is a valid value of either.
    slow(HookKind::Leave, unsafe { id.client_id }, elt_info);
}

unsafe extern "system" fn slow_tailcall(id: FunctionIDOrClientID, elt_info: CorPrfEltInfo) {
    // SAFETY: both fields are `usize`: every bit pattern is a valid value of either.
    slow(HookKind::Tailcall, unsafe { id.client_id }, elt_info);
}

//! What the runtime has already done when a profiler arrives late (attached to a running
//! process): the modules loaded (`EnumModules`) and the functions compiled
//! (`EnumJITedFunctions2`); and the way out (`RequestProfilerDetach`).

use core::ffi::c_void;

use super::ProfilerInfo;
use crate::clr::com::ComPtr;
use crate::clr::runtime::error::{ClrError, ClrResult, check};
use crate::clr::sys::{
    CorPrfFunction, HResult, ICorProfilerFunctionEnumVtbl, ICorProfilerInfo3Vtbl,
    ICorProfilerInfo4Vtbl, ICorProfilerModuleEnumVtbl, ModuleID,
};

/// How many entries one `Next` call asks for.
const BATCH: usize = 256;

/// Every entry of an enumerator through its `Next`: `next(count, out, fetched)`.
fn drain<T: Copy + Default>(
    method: &'static str,
    mut next: impl FnMut(u32, *mut T, &mut u32) -> HResult,
) -> ClrResult<Vec<T>> {
    let mut all = Vec::new();
    let mut batch = [T::default(); BATCH];
    loop {
        let mut fetched = 0u32;
        let hr = next(BATCH as u32, batch.as_mut_ptr(), &mut fetched);
        // S_FALSE (1): fewer than asked, the end.
        if hr.is_err() {
            return Err(ClrError::Failed { method, hr });
        }
        let fetched = (fetched as usize).min(BATCH);
        all.extend_from_slice(&batch[..fetched]);
        if fetched < BATCH {
            return Ok(all);
        }
    }
}

impl ProfilerInfo {
    /// The modules loaded now (`EnumModules`), those still loading included: a late
    /// profiler's view of the `ModuleLoadFinished` callbacks it missed. Call it from
    /// `ProfilerAttachComplete` or later.
    ///
    /// # Errors
    /// [`ClrError::Failed`] when the runtime refuses (before attach completed, say).
    pub fn loaded_modules(&self) -> ClrResult<Vec<ModuleID>> {
        const METHOD: &str = "EnumModules";
        let v = self.at::<ICorProfilerInfo3Vtbl>(METHOD)?;
        let mut raw: *mut c_void = core::ptr::null_mut();
        // SAFETY: a live ICorProfilerInfo3; the out-pointer is a valid local.
        check(METHOD, unsafe { (v.EnumModules)(self.raw(), &mut raw) })?;
        // SAFETY: on success the runtime gives an ICorProfilerModuleEnum with one
        // reference for the caller; it is used on this thread only.
        let enumerator = unsafe { ComPtr::<ICorProfilerModuleEnumVtbl>::from_raw(raw) }.ok_or(
            ClrError::Unexpected {
                method: METHOD,
                what: "no enumerator",
            },
        )?;
        drain(METHOD, |count, out, fetched| {
            // SAFETY: a live enumerator; `out` has room for `count` module ids and
            // `fetched` is a valid local.
            unsafe { (enumerator.vtbl().Next)(enumerator.as_raw(), count, out, fetched) }
        })
    }

    /// Asks the runtime to detach the profiler (`RequestProfilerDetach`): it checks, on
    /// a thread of its own, after about `expected_ms` and then periodically, that no
    /// thread is inside the profiler's callbacks, then calls `ProfilerDetachSucceeded`
    /// and unloads the profiler's library. The profiler must have stopped its own
    /// threads by then.
    ///
    /// # Errors
    /// [`ClrError::Failed`] with the runtime's refusal (for example
    /// `CORPROF_E_IMMUTABLE_FLAGS_SET` for a profiler that set flags only start-up
    /// allows, or enter/leave hooks).
    pub fn request_profiler_detach(&self, expected_ms: u32) -> ClrResult<()> {
        const METHOD: &str = "RequestProfilerDetach";
        let v = self.at::<ICorProfilerInfo3Vtbl>(METHOD)?;
        // SAFETY: a live ICorProfilerInfo3; a plain value.
        check(METHOD, unsafe {
            (v.RequestProfilerDetach)(self.raw(), expected_ms)
        })
    }

    /// The functions compiled so far, each with the ReJIT version of its code (0: the
    /// original), from `EnumJITedFunctions2` (version 4; ReJIT versions included).
    ///
    /// # Errors
    /// [`ClrError::Failed`] when the runtime refuses.
    pub fn compiled_functions(&self) -> ClrResult<Vec<CorPrfFunction>> {
        const METHOD: &str = "EnumJITedFunctions2";
        let v = self.at::<ICorProfilerInfo4Vtbl>(METHOD)?;
        let mut raw: *mut c_void = core::ptr::null_mut();
        // SAFETY: a live ICorProfilerInfo4; the out-pointer is a valid local.
        check(METHOD, unsafe {
            (v.EnumJITedFunctions2)(self.raw(), &mut raw)
        })?;
        // SAFETY: as in `loaded_modules`, an ICorProfilerFunctionEnum.
        let enumerator = unsafe { ComPtr::<ICorProfilerFunctionEnumVtbl>::from_raw(raw) }.ok_or(
            ClrError::Unexpected {
                method: METHOD,
                what: "no enumerator",
            },
        )?;
        drain(METHOD, |count, out, fetched| {
            // SAFETY: a live enumerator; `out` has room for `count` entries and `fetched`
            // is a valid local.
            unsafe { (enumerator.vtbl().Next)(enumerator.as_raw(), count, out, fetched) }
        })
    }
}

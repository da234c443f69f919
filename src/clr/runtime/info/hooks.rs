//! Registering enter/leave/tailcall hooks and the function-id mapper
//! (`SetFunctionIDMapper2`, `SetEnterLeaveFunctionHooks3`, `...3WithInfo`), and reading
//! the event mask back (`GetEventMask2`).
//!
//! The setters are `unsafe` and crate-private: the runtime calls what they register from
//! JIT-compiled code with a contract no Rust signature states (registers to preserve,
//! ids that must be what the mapper returned). `clr::hooks` is their one caller.

use core::ffi::c_void;

use super::ProfilerInfo;
use crate::clr::runtime::error::{ClrResult, check};
use crate::clr::sys::{
    CorPrfHighMonitor, CorPrfMonitor, FunctionEnter3, FunctionEnter3WithInfo, FunctionIDMapper2,
    FunctionLeave3, FunctionLeave3WithInfo, FunctionTailcall3, FunctionTailcall3WithInfo,
    ICorProfilerInfo3Vtbl, ICorProfilerInfo5Vtbl, ICorProfilerInfoVtbl,
};

impl ProfilerInfo {
    /// The event mask the runtime holds (`GetEventMask2` from version 5, else
    /// `GetEventMask` with the high half empty).
    ///
    /// # Errors
    /// A failure of the runtime's call.
    pub fn event_mask(&self) -> ClrResult<(CorPrfMonitor, CorPrfHighMonitor)> {
        if self.version >= 5 {
            let v = self.at::<ICorProfilerInfo5Vtbl>("GetEventMask2")?;
            let (mut low, mut high) = (0, 0);
            // SAFETY: a live ICorProfilerInfo5; the out-pointers are valid locals.
            check("GetEventMask2", unsafe {
                (v.GetEventMask2)(self.raw(), &mut low, &mut high)
            })?;
            Ok((
                CorPrfMonitor::from_bits_retain(low),
                CorPrfHighMonitor::from_bits_retain(high),
            ))
        } else {
            let v = self.at::<ICorProfilerInfoVtbl>("GetEventMask")?;
            let mut low = 0;
            // SAFETY: a live ICorProfilerInfo; the out-pointer is a valid local.
            check("GetEventMask", unsafe {
                (v.GetEventMask)(self.raw(), &mut low)
            })?;
            Ok((
                CorPrfMonitor::from_bits_retain(low),
                CorPrfHighMonitor::empty(),
            ))
        }
    }

    /// `SetFunctionIDMapper2`: the runtime calls `mapper(function, client_data, &hook)`
    /// once per JIT compilation; what it returns is the id the hooks receive.
    ///
    /// # Safety
    /// `mapper` must be callable from any thread during any JIT compilation for the rest
    /// of the process, never unwind, and return ids the registered hooks accept;
    /// `client_data` must stay valid as long.
    ///
    /// # Errors
    /// A failure of the runtime's call.
    pub(crate) unsafe fn set_function_id_mapper2(
        &self,
        mapper: FunctionIDMapper2,
        client_data: *mut c_void,
    ) -> ClrResult<()> {
        let v = self.at::<ICorProfilerInfo3Vtbl>("SetFunctionIDMapper2")?;
        // SAFETY: a live ICorProfilerInfo3; the caller vouches for the mapper and data.
        check("SetFunctionIDMapper2", unsafe {
            (v.SetFunctionIDMapper2)(self.raw(), Some(mapper), client_data)
        })
    }

    /// `SetEnterLeaveFunctionHooks3`: the fast-path hooks, called from JIT-compiled
    /// prologs and epilogs. Only inside `Initialize` (later the runtime answers
    /// `CORPROF_E_CALL_ONLY_FROM_INIT`).
    ///
    /// # Safety
    /// Each function must keep the registers the runtime's fast-path contract leaves
    /// live, accept every id the mapper returns, never unwind, and stay for the rest of
    /// the process.
    ///
    /// # Errors
    /// A failure of the runtime's call (`CORPROF_E_INCONSISTENT_WITH_FLAGS` with the
    /// `ENABLE_FUNCTION_*`/`ENABLE_FRAME_INFO` flags set).
    pub(crate) unsafe fn set_enter_leave_hooks3(
        &self,
        enter: FunctionEnter3,
        leave: FunctionLeave3,
        tailcall: FunctionTailcall3,
    ) -> ClrResult<()> {
        let v = self.at::<ICorProfilerInfo3Vtbl>("SetEnterLeaveFunctionHooks3")?;
        // SAFETY: a live ICorProfilerInfo3; the caller vouches for the hooks.
        check("SetEnterLeaveFunctionHooks3", unsafe {
            (v.SetEnterLeaveFunctionHooks3)(self.raw(), Some(enter), Some(leave), Some(tailcall))
        })
    }

    /// `SetEnterLeaveFunctionHooks3WithInfo`: the slow-path hooks, called through the
    /// runtime's own wrappers with an `COR_PRF_ELT_INFO` handle. Only inside
    /// `Initialize`.
    ///
    /// # Safety
    /// Each function must accept every id the mapper returns, never unwind, and stay for
    /// the rest of the process.
    ///
    /// # Errors
    /// A failure of the runtime's call (`CORPROF_E_INCONSISTENT_WITH_FLAGS` without the
    /// `ENABLE_FUNCTION_*`/`ENABLE_FRAME_INFO` flags).
    pub(crate) unsafe fn set_enter_leave_hooks3_with_info(
        &self,
        enter: FunctionEnter3WithInfo,
        leave: FunctionLeave3WithInfo,
        tailcall: FunctionTailcall3WithInfo,
    ) -> ClrResult<()> {
        let v = self.at::<ICorProfilerInfo3Vtbl>("SetEnterLeaveFunctionHooks3WithInfo")?;
        // SAFETY: a live ICorProfilerInfo3; the caller vouches for the hooks.
        check("SetEnterLeaveFunctionHooks3WithInfo", unsafe {
            (v.SetEnterLeaveFunctionHooks3WithInfo)(
                self.raw(),
                Some(enter),
                Some(leave),
                Some(tailcall),
            )
        })
    }
}

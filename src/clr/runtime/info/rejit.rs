//! ReJIT requests (`RequestReJIT`, `RequestReJITWithInliners`, `RequestRevert`).

use super::ProfilerInfo;
use crate::clr::runtime::error::{ClrResult, check, to_ulong};
use crate::clr::sys::enums::{COR_PRF_REJIT_BLOCK_INLINING, COR_PRF_REJIT_INLINING_CALLBACKS};
use crate::clr::sys::{
    HResult, ICorProfilerInfo4Vtbl, ICorProfilerInfo10Vtbl, ModuleID, mdMethodDef,
};

/// What happens to the callers that inlined a method re-JIT-compiled with
/// [`ProfilerInfo::request_rejit_with_inliners`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InlinerIl {
    /// They are re-JIT-compiled too, and the runtime asks the profiler for their IL
    /// (`GetReJITParameters`, for methods it never requested): answer with each one's
    /// current IL, or it loses its own instrumentation.
    Ask,
    /// They are re-JIT-compiled with their default IL, without asking: a caller whose
    /// instrumentation came through an earlier ReJIT loses it.
    Default,
}

/// The two parallel arrays the runtime takes, owned here (it reads them during the call).
fn arrays(
    method: &'static str,
    methods: &[(ModuleID, mdMethodDef)],
) -> ClrResult<(u32, Vec<ModuleID>, Vec<mdMethodDef>)> {
    let n = to_ulong(method, "methods", methods.len())?;
    Ok((
        n,
        methods.iter().map(|m| m.0).collect(),
        methods.iter().map(|m| m.1).collect(),
    ))
}

impl ProfilerInfo {
    /// `RequestReJIT`: each method is re-JIT-compiled at its next call (the runtime
    /// then asks for its IL through `GetReJITParameters`); a method never called yet
    /// when it is first called. Only from a thread the profiler created or inside a
    /// callback (the guard refuses other threads). Nothing is called for an empty list.
    ///
    /// The runtime answers `S_OK` even for bad requests: a method it refuses is reported
    /// through `ReJITError`, on this thread, before this returns.
    ///
    /// # Errors
    /// The guard's refusal, or a failure of the call as a whole (out of memory, ReJIT
    /// not enabled at initialization: `CORPROF_E_REJIT_NOT_ENABLED`).
    pub fn request_rejit(&self, methods: &[(ModuleID, mdMethodDef)]) -> ClrResult<()> {
        const METHOD: &str = "RequestReJIT";
        let v = self.at::<ICorProfilerInfo4Vtbl>(METHOD)?;
        if methods.is_empty() {
            return Ok(());
        }
        let (n, mut modules, mut tokens) = arrays(METHOD, methods)?;
        // SAFETY: a live ICorProfilerInfo4; two arrays of `n` elements, alive during the
        // call, which only reads them.
        check(METHOD, unsafe {
            (v.RequestReJIT)(self.raw(), n, modules.as_mut_ptr(), tokens.as_mut_ptr())
        })
    }

    /// `RequestReJITWithInliners` (`ICorProfilerInfo10`): [`ProfilerInfo::request_rejit`],
    /// and the callers that inlined each method are re-JIT-compiled too
    /// (`COR_PRF_REJIT_BLOCK_INLINING`), with their IL as `inliners` says. Without
    /// it, a caller compiled with an inlined copy of the method keeps running that copy.
    ///
    /// # Errors
    /// As [`ProfilerInfo::request_rejit`]; [`ClrError::NotAvailable`](crate::clr::ClrError::NotAvailable)
    /// from a runtime older than .NET Core 3.0.
    pub fn request_rejit_with_inliners(
        &self,
        methods: &[(ModuleID, mdMethodDef)],
        inliners: InlinerIl,
    ) -> ClrResult<()> {
        const METHOD: &str = "RequestReJITWithInliners";
        let v = self.at::<ICorProfilerInfo10Vtbl>(METHOD)?;
        if methods.is_empty() {
            return Ok(());
        }
        // The runtime refuses INLINING_CALLBACKS without BLOCK_INLINING, and 0.
        let flags = match inliners {
            InlinerIl::Ask => COR_PRF_REJIT_BLOCK_INLINING | COR_PRF_REJIT_INLINING_CALLBACKS,
            InlinerIl::Default => COR_PRF_REJIT_BLOCK_INLINING,
        };
        let (n, mut modules, mut tokens) = arrays(METHOD, methods)?;
        // SAFETY: a live ICorProfilerInfo10; two arrays of `n` elements, alive during
        // the call, which only reads them; the flags are a valid combination.
        check(METHOD, unsafe {
            (v.RequestReJITWithInliners)(
                self.raw(),
                flags,
                n,
                modules.as_mut_ptr(),
                tokens.as_mut_ptr(),
            )
        })
    }

    /// `RequestRevert`: each method runs its default IL again from its next call (the
    /// file's, or what a first-JIT `SetILFunctionBody` gave: not necessarily the
    /// file's). Returns each method's status, in order. The same threads as
    /// [`ProfilerInfo::request_rejit`]; an empty list calls nothing.
    ///
    /// # Errors
    /// The guard's refusal, or a failure of the call as a whole.
    pub fn request_revert(&self, methods: &[(ModuleID, mdMethodDef)]) -> ClrResult<Vec<HResult>> {
        const METHOD: &str = "RequestRevert";
        let v = self.at::<ICorProfilerInfo4Vtbl>(METHOD)?;
        if methods.is_empty() {
            return Ok(Vec::new());
        }
        let (n, mut modules, mut tokens) = arrays(METHOD, methods)?;
        let mut statuses = vec![HResult::S_OK; methods.len()];
        // SAFETY: a live ICorProfilerInfo4; three arrays of `n` elements, alive during
        // the call, which reads the first two and writes the third.
        check(METHOD, unsafe {
            (v.RequestRevert)(
                self.raw(),
                n,
                modules.as_mut_ptr(),
                tokens.as_mut_ptr(),
                statuses.as_mut_ptr(),
            )
        })?;
        Ok(statuses)
    }
}

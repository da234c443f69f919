//! Assemblies and app domains as the runtime names them (`GetAssemblyInfo`,
//! `GetAppDomainInfo`).

use super::ProfilerInfo;
use crate::clr::runtime::error::{ClrResult, check, from_ulong, to_ulong};
use crate::clr::sys::{AppDomainID, AssemblyID, HResult, ICorProfilerInfoVtbl, ModuleID};

/// An assembly's name, app domain and manifest module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AssemblyInfo {
    /// Its simple name (`"System.Private.CoreLib"`).
    pub name: String,
    /// The app domain it is loaded in.
    pub app_domain: AppDomainID,
    /// Its manifest module.
    pub manifest_module: ModuleID,
}

/// Calls `call(buffer, capacity, &mut needed)`, with room for `initial` units first,
/// until the name fits, and returns it.
///
/// The runtime's answer when a name does not fit varies: CoreCLR 3.1's `GetModuleInfo2`
/// writes nothing and answers `ERROR_INSUFFICIENT_BUFFER`, its `GetAppDomainInfo`
/// truncates and succeeds; both say the length needed, terminating null included, and
/// get it at the next turn. The length grows at each turn, so this ends; a runtime that
/// asks for more room without saying a longer length gets the error.
pub(super) fn read_name(
    method: &'static str,
    initial: usize,
    mut call: impl FnMut(*mut u16, u32, &mut u32) -> ClrResult<HResult>,
) -> ClrResult<String> {
    /// `HRESULT_FROM_WIN32(ERROR_INSUFFICIENT_BUFFER)`.
    const INSUFFICIENT_BUFFER: HResult = HResult::from_u32(0x8007_007A);
    let mut name = vec![0u16; initial];
    loop {
        let capacity = to_ulong(method, "name buffer", name.len())?;
        let mut len = 0u32;
        let hr = call(name.as_mut_ptr(), capacity, &mut len)?;
        let needed = from_ulong(method, "name length", len)?;
        if (hr == INSUFFICIENT_BUFFER || hr.is_ok()) && needed > name.len() {
            name.resize(needed, 0);
            continue;
        }
        check(method, hr)?;
        let text = &name[..needed.min(name.len())];
        let text = text.strip_suffix(&[0]).unwrap_or(text);
        return Ok(String::from_utf16_lossy(text));
    }
}

impl ProfilerInfo {
    /// The name, app domain and manifest module of `assembly` (`GetAssemblyInfo`).
    ///
    /// # Errors
    /// [`ClrError::Failed`](crate::clr::ClrError::Failed) for an assembly the runtime
    /// does not know or not loaded far enough (`CORPROF_E_DATAINCOMPLETE`).
    pub fn assembly_info(&self, assembly: AssemblyID) -> ClrResult<AssemblyInfo> {
        const METHOD: &str = "GetAssemblyInfo";
        let v = self.at::<ICorProfilerInfoVtbl>(METHOD)?;
        let (mut app_domain, mut manifest_module) = (0, 0);
        let name = read_name(METHOD, 128, |buf, capacity, len| {
            // SAFETY: a live ICorProfilerInfo; `buf` has `capacity` writable units and
            // the other out-pointers are valid locals.
            Ok(unsafe {
                (v.GetAssemblyInfo)(
                    self.raw(),
                    assembly,
                    capacity,
                    len,
                    buf,
                    &mut app_domain,
                    &mut manifest_module,
                )
            })
        })?;
        Ok(AssemblyInfo {
            name,
            app_domain,
            manifest_module,
        })
    }

    /// The name of `app_domain` (`GetAppDomainInfo`): what the host named it (CoreCLR
    /// 3.1 under the `dotnet` host: `"clrhost"`).
    ///
    /// # Errors
    /// [`ClrError::Failed`](crate::clr::ClrError::Failed) for an app domain the runtime
    /// does not know.
    pub fn app_domain_name(&self, app_domain: AppDomainID) -> ClrResult<String> {
        const METHOD: &str = "GetAppDomainInfo";
        let v = self.at::<ICorProfilerInfoVtbl>(METHOD)?;
        let mut process = 0;
        read_name(METHOD, 128, |buf, capacity, len| {
            // SAFETY: a live ICorProfilerInfo; `buf` has `capacity` writable units and
            // the other out-pointers are valid locals.
            Ok(unsafe {
                (v.GetAppDomainInfo)(self.raw(), app_domain, capacity, len, buf, &mut process)
            })
        })
    }
}

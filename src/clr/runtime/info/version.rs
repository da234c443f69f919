//! Which runtime the profiler is in (`GetRuntimeInformation`), and what the crate does
//! differently because of it.

use super::ProfilerInfo;
use crate::clr::runtime::error::ClrResult;
use crate::clr::sys::{
    COR_PRF_CORE_CLR, COR_PRF_DESKTOP_CLR, CorPrfRuntimeType, ICorProfilerInfo3Vtbl,
};
use core::fmt;

/// The kind of CLR (`COR_PRF_RUNTIME_TYPE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuntimeKind {
    /// .NET Core and .NET 5 and later (`COR_PRF_CORE_CLR`).
    CoreClr,
    /// The .NET Framework (`COR_PRF_DESKTOP_CLR`).
    DesktopClr,
    /// A value this crate does not know.
    Other(CorPrfRuntimeType),
}

/// The runtime a profiler runs in, as `GetRuntimeInformation` reports it.
///
/// CoreCLR reports its product version from .NET 5 on (.NET 8.0.4: `CoreCLR 8.0.4.0
/// (8.0.4)`); before, the version of the CLR it descends from (.NET Core 3.1.23:
/// `CoreCLR 4.0.30319.0 (v4.0.30319)`), measured. [`RuntimeVersion::dotnet_major`] reads
/// both. The crate's workarounds of runtime bugs ask this value which runtimes
/// need them ([`RuntimeVersion::rejit_with_inliners_needs_a_method_desc`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeVersion {
    /// Which CLR.
    pub kind: RuntimeKind,
    /// The CLR instance id (as ETW events name it).
    pub instance: u16,
    /// Major version, as reported.
    pub major: u16,
    /// Minor version, as reported.
    pub minor: u16,
    /// Build number, as reported.
    pub build: u16,
    /// QFE (servicing) number, as reported.
    pub qfe: u16,
    /// The version string, as reported (may be empty).
    pub text: String,
}

impl RuntimeVersion {
    /// The .NET major version: the reported major for CoreCLR from .NET 5 on; `Some(3)`
    /// for a CoreCLR reporting 4.x (.NET Core 3.x and older report the CLR's 4.0; the
    /// crate needs `ICorProfilerInfo11`, which only .NET Core 3.x of those has); `None`
    /// for the .NET Framework or an unknown kind.
    pub fn dotnet_major(&self) -> Option<u16> {
        match (self.kind, self.major) {
            (RuntimeKind::CoreClr, 4) => Some(3),
            (RuntimeKind::CoreClr, major) => Some(major),
            _ => None,
        }
    }

    /// Whether `RequestReJITWithInliners` crashes the process for a method that has no
    /// `MethodDesc` yet (its type not loaded: a pre-ReJIT, a method of a module that
    /// just loaded), so that such methods must be requested with plain `RequestReJIT`.
    ///
    /// Measured on CoreCLR 3.1.23: `ReJitManager::UpdateJitInlinerActiveILVersions`
    /// calls `MethodDesc::GetModule` on the null `MethodDesc` (SIGSEGV, 3 of 3 runs of a
    /// plugin reloaded 3,000 times under a dial request). Not seen on .NET 8.0.4 with
    /// the workaround off (the same test). `true` for every runtime not measured to be
    /// free of it: a runtime before .NET 8, and one this crate cannot place.
    pub fn rejit_with_inliners_needs_a_method_desc(&self) -> bool {
        self.dotnet_major().is_none_or(|major| major < 8)
    }
}

impl fmt::Display for RuntimeVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            RuntimeKind::CoreClr => "CoreCLR".to_owned(),
            RuntimeKind::DesktopClr => "desktop CLR".to_owned(),
            RuntimeKind::Other(v) => format!("runtime type {v:#x}"),
        };
        write!(
            f,
            "{kind} {}.{}.{}.{}",
            self.major, self.minor, self.build, self.qfe
        )?;
        if !self.text.is_empty() {
            write!(f, " ({})", self.text)?;
        }
        Ok(())
    }
}

impl ProfilerInfo {
    /// The runtime this profiler runs in (`GetRuntimeInformation`, `ICorProfilerInfo3`).
    ///
    /// # Errors
    /// [`crate::clr::ClrError::NotAvailable`] before version 3; the runtime's failure.
    pub fn runtime_version(&self) -> ClrResult<RuntimeVersion> {
        const METHOD: &str = "GetRuntimeInformation";
        let v = self.at::<ICorProfilerInfo3Vtbl>(METHOD)?;
        let (mut instance, mut kind, mut major, mut minor, mut build, mut qfe) = (0, 0, 0, 0, 0, 0);
        let text = super::names::read_name(METHOD, 64, |buffer, capacity, needed| {
            // SAFETY: a live ICorProfilerInfo3 (checked by `at`); every out-pointer is a
            // valid local, and `buffer` has room for `capacity` UTF-16 units.
            let hr = unsafe {
                (v.GetRuntimeInformation)(
                    self.raw(),
                    &mut instance,
                    &mut kind,
                    &mut major,
                    &mut minor,
                    &mut build,
                    &mut qfe,
                    capacity,
                    needed,
                    buffer,
                )
            };
            Ok(hr)
        })?;
        Ok(RuntimeVersion {
            kind: match kind {
                COR_PRF_CORE_CLR => RuntimeKind::CoreClr,
                COR_PRF_DESKTOP_CLR => RuntimeKind::DesktopClr,
                other => RuntimeKind::Other(other),
            },
            instance,
            major,
            minor,
            build,
            qfe,
            text,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn version(kind: RuntimeKind, major: u16) -> RuntimeVersion {
        RuntimeVersion {
            kind,
            instance: 0,
            major,
            minor: 0,
            build: 0,
            qfe: 0,
            text: String::new(),
        }
    }

    #[test]
    fn dotnet_major_reads_both_numberings() {
        assert_eq!(version(RuntimeKind::CoreClr, 4).dotnet_major(), Some(3));
        assert_eq!(version(RuntimeKind::CoreClr, 8).dotnet_major(), Some(8));
        assert_eq!(version(RuntimeKind::CoreClr, 10).dotnet_major(), Some(10));
        assert_eq!(version(RuntimeKind::DesktopClr, 4).dotnet_major(), None);
        assert_eq!(version(RuntimeKind::Other(9), 8).dotnet_major(), None);
    }

    #[test]
    fn the_inliners_workaround_stays_where_not_measured_fixed() {
        assert!(version(RuntimeKind::CoreClr, 4).rejit_with_inliners_needs_a_method_desc());
        assert!(version(RuntimeKind::CoreClr, 6).rejit_with_inliners_needs_a_method_desc());
        assert!(!version(RuntimeKind::CoreClr, 8).rejit_with_inliners_needs_a_method_desc());
        assert!(!version(RuntimeKind::CoreClr, 9).rejit_with_inliners_needs_a_method_desc());
        assert!(version(RuntimeKind::Other(7), 8).rejit_with_inliners_needs_a_method_desc());
    }

    #[test]
    fn display_names_kind_numbers_and_text() {
        let mut v = version(RuntimeKind::CoreClr, 8);
        v.build = 4;
        assert_eq!(v.to_string(), "CoreCLR 8.0.4.0");
        v.text = "8.0.4".into();
        assert_eq!(v.to_string(), "CoreCLR 8.0.4.0 (8.0.4)");
    }
}

//! [`AssemblyReferenceProvider`]: the runtime's `ICorProfilerAssemblyReferenceProvider`
//! during one `GetAssemblyReferences` callback.

use core::ffi::c_void;

use super::error::{ClrError, ClrResult, check, to_ulong};
use super::metadata::AssemblyName;
use crate::clr::sys::{CorPrfAssemblyReferenceInfo, ICorProfilerAssemblyReferenceProviderVtbl};

/// Where a profiler announces the assembly references it will add to an assembly's
/// modules (`ICorProfilerCallback6::GetAssemblyReferences`), so that a runtime that
/// walks assembly closures before loading (the .NET Framework's binder; CoreCLR 3.1
/// never calls the callback) knows them. Only lent, by reference, for the callback's
/// duration.
#[derive(Debug)]
pub struct AssemblyReferenceProvider {
    ptr: *mut c_void,
}

impl AssemblyReferenceProvider {
    /// The provider the runtime passed.
    ///
    /// # Safety
    /// `ptr` is null or a live `ICorProfilerAssemblyReferenceProvider*` that stays
    /// valid while the value lives (the callback's duration).
    pub(crate) unsafe fn from_raw(ptr: *mut c_void) -> AssemblyReferenceProvider {
        AssemblyReferenceProvider { ptr }
    }

    /// Announces a reference to `assembly` (`AddAssemblyReference`).
    ///
    /// # Errors
    /// [`ClrError::Unexpected`] for a null provider; the runtime's refusal otherwise.
    pub fn add(&self, assembly: &AssemblyName<'_>) -> ClrResult<()> {
        const METHOD: &str = "AddAssemblyReference";
        if self.ptr.is_null() {
            return Err(ClrError::Unexpected {
                method: METHOD,
                what: "no provider",
            });
        }
        let name: Vec<u16> = assembly.name.encode_utf16().chain([0]).collect();
        let metadata = assembly.metadata();
        let key = assembly.public_key_token;
        let info = CorPrfAssemblyReferenceInfo {
            public_key_or_token: match key {
                [] => core::ptr::null(),
                key => key.as_ptr().cast(),
            },
            public_key_or_token_len: to_ulong(METHOD, "public key token length", key.len())?,
            name: name.as_ptr(),
            metadata: &metadata,
            hash_value: core::ptr::null(),
            hash_value_len: 0,
            flags: 0,
        };
        // SAFETY: `ptr` is a live provider (the constructor's contract), whose first
        // word is its vtable, laid out as `ICorProfilerAssemblyReferenceProviderVtbl`;
        // `info` and what it points to (name, metadata, key) are read during the call
        // only.
        check(METHOD, unsafe {
            let vtbl = &**(self.ptr as *const *const ICorProfilerAssemblyReferenceProviderVtbl);
            (vtbl.AddAssemblyReference)(self.ptr, &info)
        })
    }
}

/// Test support: a stand-in for the runtime's provider that records each reference
/// announced, as `name version token`.
#[cfg(test)]
pub(crate) mod fake {
    use super::*;
    use crate::clr::com::fake::FakeUnknown;
    use crate::clr::sys::HResult;
    use std::sync::Mutex;

    /// The fake: its `IUnknown` half first, as a fake's layout requires.
    #[repr(C)]
    pub(crate) struct RecordingProvider {
        unknown: FakeUnknown<ICorProfilerAssemblyReferenceProviderVtbl>,
        pub(crate) added: Mutex<Vec<String>>,
    }

    /// `AddAssemblyReference`: records the reference, reading it as the runtime would.
    unsafe extern "system" fn add_assembly_reference(
        this: *mut c_void,
        info: *const CorPrfAssemblyReferenceInfo,
    ) -> HResult {
        // SAFETY: the code under test passes the live fake and a reference whose
        // pointers are valid during the call.
        unsafe {
            let fake = &*this.cast::<RecordingProvider>();
            let info = &*info;
            let mut len = 0;
            while *info.name.add(len) != 0 {
                len += 1;
            }
            let name = String::from_utf16_lossy(core::slice::from_raw_parts(info.name, len));
            let m = &*info.metadata;
            let token: &[u8] = match info.public_key_or_token_len {
                0 => &[],
                n => core::slice::from_raw_parts(info.public_key_or_token.cast(), n as usize),
            };
            let token: String = token.iter().map(|b| format!("{b:02x}")).collect();
            fake.added.lock().unwrap().push(format!(
                "{name} {}.{}.{}.{} {token}",
                m.major_version, m.minor_version, m.build_number, m.revision_number
            ));
        }
        HResult::S_OK
    }

    static VTBL: ICorProfilerAssemblyReferenceProviderVtbl =
        ICorProfilerAssemblyReferenceProviderVtbl {
            base: crate::clr::sys::IUnknownVtbl {
                QueryInterface: FakeUnknown::query_interface,
                AddRef: FakeUnknown::add_ref,
                Release: FakeUnknown::release,
            },
            AddAssemblyReference: add_assembly_reference,
        };

    impl RecordingProvider {
        pub(crate) fn new() -> Box<RecordingProvider> {
            Box::new(RecordingProvider {
                unknown: FakeUnknown::with_vtable(&VTBL, None),
                added: Mutex::default(),
            })
        }

        /// The provider as the runtime would lend it; valid while `self` lives.
        pub(crate) fn provider(&self) -> AssemblyReferenceProvider {
            // SAFETY: a live fake provider, which the caller keeps alive while using
            // the value (it borrows nothing, so tests hold `self` for the scope).
            unsafe { AssemblyReferenceProvider::from_raw(self.unknown.as_ptr()) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::fake::RecordingProvider;
    use super::*;

    #[test]
    fn a_reference_reaches_the_provider_with_its_name_version_and_token() {
        let fake = RecordingProvider::new();
        let provider = fake.provider();
        provider.add(&AssemblyName::CORE_LIBRARY).unwrap();
        let helper = AssemblyName {
            name: "Hélper",
            version: [1, 2, 3, 4],
            public_key_token: &[],
        };
        provider.add(&helper).unwrap();
        assert_eq!(
            *fake.added.lock().unwrap(),
            [
                "System.Private.CoreLib 4.0.0.0 7cec85d7bea7798e",
                "Hélper 1.2.3.4 "
            ]
        );
        // SAFETY: null is allowed by the constructor's contract.
        let none = unsafe { AssemblyReferenceProvider::from_raw(core::ptr::null_mut()) };
        assert!(none.add(&helper).is_err());
    }
}

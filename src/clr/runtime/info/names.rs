//! Assemblies and app domains as the runtime names them (`GetAssemblyInfo`,
//! `GetAppDomainInfo`); methods and classes by their metadata (`GetFunctionInfo`,
//! `GetClassFromObject`, `GetClassIDInfo2`, then the module's metadata).

use super::ProfilerInfo;
use crate::clr::runtime::ModuleMetadata;
use crate::clr::runtime::error::{ClrError, ClrResult, check, from_ulong, to_ulong};
use crate::clr::sys::{
    AppDomainID, AssemblyID, ClassID, FunctionID, HResult, ICorProfilerInfoVtbl, ModuleID, ObjectID,
};
use crate::metadata::MetadataSource;

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

/// The name of TypeDef `type_def` as selectors write it: `Namespace.Type`, a nested type
/// `Namespace.Outer/Inner`; `None` when the metadata does not give a name.
fn type_def_name<M: MetadataSource + ?Sized>(metadata: &M, type_def: u32) -> Option<String> {
    let mut parts = Vec::new();
    let mut token = type_def;
    // A nesting deeper than the metadata can hold is a loop: stop.
    for _ in 0..64 {
        let name = metadata.type_name(token).ok()?;
        match name.enclosing {
            Some(outer) => {
                parts.push(name.name);
                token = outer;
            }
            None => {
                parts.push(match name.namespace.is_empty() {
                    true => name.name,
                    false => format!("{}.{}", name.namespace, name.name),
                });
                parts.reverse();
                return Some(parts.join("/"));
            }
        }
    }
    None
}

impl ProfilerInfo {
    /// The name of the method a function is, as the selectors of the crate write it:
    /// `Namespace.Type::Method`, a nested type as `Namespace.Outer/Inner`, a generic type
    /// with its arity (``Ns.Box`1::Get``), without type arguments (every instantiation
    /// of a method has its name). Read from the module's metadata (`GetFunctionInfo`,
    /// then `GetModuleMetaData`) at each call: keep it rather than ask again.
    ///
    /// # Errors
    /// [`ClrError::Failed`] for a function the runtime does not know, or a module whose
    /// metadata it does not give (unloading, say). A name the metadata cannot give is
    /// written in hex, not an error.
    pub fn method_name(&self, function: FunctionID) -> ClrResult<String> {
        let function = self.function_info(function)?;
        let metadata = ModuleMetadata::open(self, function.module)?;
        Ok(crate::disasm::selector_name(&metadata, function.token))
    }

    /// The class of an object (`GetClassFromObject`): for an exception thrown
    /// (`exception_thrown`), its type.
    ///
    /// # Errors
    /// [`ClrError::Failed`] for an address that is not an object the runtime knows.
    pub fn class_from_object(&self, object: ObjectID) -> ClrResult<ClassID> {
        let v = self.at::<ICorProfilerInfoVtbl>("GetClassFromObject")?;
        let mut class = 0;
        // SAFETY: a live ICorProfilerInfo; the out-pointer is a valid local.
        check("GetClassFromObject", unsafe {
            (v.GetClassFromObject)(self.raw(), object, &mut class)
        })?;
        Ok(class)
    }

    /// The name of a class's type as selectors write it: `Namespace.Type`, a nested
    /// type as `Namespace.Outer/Inner`, a generic type with its arity and without its
    /// type arguments (``System.Collections.Generic.List`1``), from its module's
    /// metadata (`GetClassIDInfo2`, then `GetModuleMetaData`).
    ///
    /// # Errors
    /// [`ClrError::Failed`] for a class the runtime does not know or has no TypeDef
    /// for (an array), [`ClrError::Unexpected`] when the metadata gives no name.
    pub fn class_name(&self, class: ClassID) -> ClrResult<String> {
        let info = self.class_info(class)?;
        let metadata = ModuleMetadata::open(self, info.module)?;
        type_def_name(&metadata, info.type_def).ok_or(ClrError::Unexpected {
            method: "GetTypeDefProps",
            what: "the metadata gives no name for the class's TypeDef",
        })
    }

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

#[cfg(all(test, feature = "pe"))]
mod tests {
    use super::*;

    /// Types named as selectors write them: namespace, nested types after `/`.
    #[test]
    fn type_names_nest_with_a_slash() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/programs/bin/TwoTools.exe"
        );
        let data = std::fs::read(path).unwrap();
        let asm = crate::pe::Assembly::parse(&data).unwrap();
        let owner = |method: &str| {
            let token = asm
                .methods()
                .flatten()
                .find(|m| m.name == method)
                .unwrap()
                .token;
            MetadataSource::member_name(&asm, token)
                .unwrap()
                .owner
                .unwrap()
        };
        let name = |method| type_def_name(&asm, owner(method));
        assert_eq!(name("Leaf").as_deref(), Some("TwoTools.Timed"));
        assert_eq!(name("Nested").as_deref(), Some("TwoTools.Timed/Inner"));
        assert_eq!(name("Check").as_deref(), Some("TwoTools.Program"));
        assert_eq!(type_def_name(&asm, 0x0200_7FFF), None);
    }
}

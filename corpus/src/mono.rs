//! Mono's `mcs` and `ilasm`, which the tests that rebuild or generate test programs run:
//! found on the `PATH`, or installed from Debian's packages (`mono-mcs`, `mono-devel`)
//! on first use, so that the test command provisions them on a fresh machine as it
//! provisions the runtimes. Never a silent skip: a test that needs them fails with what
//! to install when they cannot be had.

use std::process::Command;
use std::sync::OnceLock;

use crate::{Error, Result};

/// The Debian packages that hold each tool.
const PACKAGES: [(&str, &str); 2] = [("mcs", "mono-mcs"), ("ilasm", "mono-devel")];

/// The versions of Mono's `mcs` and `ilasm`, once both run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MonoTools {
    /// `mcs --version`'s first line.
    pub mcs: String,
    /// `ilasm --version`'s first line.
    pub ilasm: String,
}

/// `mcs` and `ilasm`, installed first when missing (once per process; `apt-get` waits
/// for another process's install through dpkg's own lock).
///
/// # Errors
/// When a tool is missing and cannot be installed (no `apt-get`, not root, no access to
/// Debian's packages): the message names the packages to install.
pub fn mono_tools() -> Result<&'static MonoTools> {
    static TOOLS: OnceLock<Result<MonoTools>> = OnceLock::new();
    TOOLS.get_or_init(provision).as_ref().map_err(Clone::clone)
}

fn provision() -> Result<MonoTools> {
    if let Some(tools) = found() {
        return Ok(tools);
    }
    let missing: Vec<&str> = PACKAGES
        .iter()
        .filter(|(tool, _)| version(tool).is_none())
        .map(|(_, package)| *package)
        .collect();
    let mut log = String::new();
    let mut apt = |args: &[&str]| match Command::new("apt-get")
        .args(["-o", "DPkg::Lock::Timeout=600", "-y", "-q"])
        .args(args)
        .env("DEBIAN_FRONTEND", "noninteractive")
        .output()
    {
        Ok(out) => log.push_str(&String::from_utf8_lossy(&out.stderr)),
        Err(e) => log.push_str(&format!("apt-get {}: {e}\n", args.join(" "))),
    };
    let mut install = vec!["install", "--no-install-recommends"];
    install.extend(&missing);
    // The package lists may be missing or stale on a fresh machine: update once, then
    // try again.
    apt(&install);
    if found().is_none() {
        apt(&["update"]);
        apt(&install);
    }
    if let Some(tools) = found() {
        return Ok(tools);
    }
    Err(Error::new(format!(
        "Mono's mcs and ilasm are needed to rebuild the test programs; install the Debian \
         packages {} (apt-get install -y {}), which this test could not do:\n{}",
        missing.join(" and "),
        missing.join(" "),
        log.trim_end()
    )))
}

/// Both tools' versions, when both run.
fn found() -> Option<MonoTools> {
    Some(MonoTools {
        mcs: version("mcs")?,
        ilasm: version("ilasm")?,
    })
}

/// `TOOL --version`'s first line, when it runs and succeeds.
fn version(tool: &str) -> Option<String> {
    let out = Command::new(tool).arg("--version").output().ok()?;
    out.status.success().then(|| {
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .next()
            .unwrap_or_default()
            .to_owned()
    })
}

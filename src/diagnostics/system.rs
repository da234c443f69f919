//! What the operating system says of processes: whether one is alive, when it started,
//! its command line, where its runtime was loaded from; and who we are. Linux reads
//! `/proc`; elsewhere the `/proc` facts are `None`.

use std::path::{Path, PathBuf};

/// This process's effective user id.
pub(crate) fn effective_uid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// Whether a process of id `pid` exists (`kill(pid, 0)` succeeds, or fails only for
/// lack of permission). A zombie counts as alive; 0 and ids above `i32::MAX` do not.
pub(crate) fn is_alive(pid: u32) -> bool {
    let Some(pid) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return false;
    };
    match rustix::process::test_kill_process(pid) {
        Ok(()) => true,
        Err(e) => e == rustix::io::Errno::PERM,
    }
}

/// The directory the runtime puts its socket in: `$TMPDIR`, or `/tmp` when it is unset
/// or empty.
pub(crate) fn temp_dir() -> PathBuf {
    match std::env::var_os("TMPDIR") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => PathBuf::from("/tmp"),
    }
}

/// The process's start time in clock ticks since boot (`/proc/PID/stat`, field 22):
/// the key the runtime puts in its socket's name on Linux.
pub(crate) fn start_time(pid: u32) -> Option<u64> {
    if !cfg!(target_os = "linux") {
        return None;
    }
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_start_time(&stat)
}

/// Field 22 of a `/proc/PID/stat` line: the 20th after the command's closing
/// parenthesis (the command may hold spaces and parentheses, so the last one counts).
fn parse_start_time(stat: &str) -> Option<u64> {
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_ascii_whitespace().nth(19)?.parse().ok()
}

/// The command line as the runtime reports it on Unix: the full path of the executable,
/// then the arguments after `argv[0]`, separated by spaces (`/proc/PID/exe` and
/// `/proc/PID/cmdline`; non-UTF-8 bytes replaced).
pub(crate) fn command_line(pid: u32) -> Option<String> {
    if !cfg!(target_os = "linux") {
        return None;
    }
    let exe = std::fs::read_link(format!("/proc/{pid}/exe")).ok()?;
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    Some(join_command_line(&exe, &cmdline))
}

/// The executable's path, then the arguments after `argv[0]` of `cmdline` (each ended
/// by a NUL), separated by spaces; an empty argument stays (two spaces).
fn join_command_line(exe: &Path, cmdline: &[u8]) -> String {
    let args = cmdline.strip_suffix(&[0]).unwrap_or(cmdline);
    let mut line = exe.to_string_lossy().into_owned();
    for arg in args.split(|&b| b == 0).skip(1) {
        line.push(' ');
        line.push_str(&String::from_utf8_lossy(arg));
    }
    line
}

/// The version of the shared framework the process's runtime was loaded from: the
/// name of the directory of the `libcoreclr` mapped in it (`/proc/PID/maps`) when that
/// directory is `.../Microsoft.NETCore.App/VERSION/`. `None` for a self-contained app,
/// another layout, or maps that cannot be read.
pub(crate) fn framework_version(pid: u32) -> Option<String> {
    if !cfg!(target_os = "linux") {
        return None;
    }
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).ok()?;
    framework_version_in_maps(&maps)
}

/// [`framework_version`] of a `maps` text.
fn framework_version_in_maps(maps: &str) -> Option<String> {
    maps.lines().find_map(|line| {
        // The path is the sixth field, and may hold spaces: it starts at the first `/`.
        let path = Path::new(&line[line.find('/')?..]);
        if path.file_name()? != "libcoreclr.so" {
            return None;
        }
        let dir = path.parent()?;
        let framework = dir.parent()?.file_name()?;
        (framework == "Microsoft.NETCore.App")
            .then(|| dir.file_name()?.to_str().map(str::to_owned))
            .flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_start_time_after_the_last_parenthesis() {
        let stat = "4242 (a) b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 9 0 \
                    4294595 300000000 5000";
        assert_eq!(parse_start_time(stat), Some(4_294_595));
        assert_eq!(parse_start_time("4242 (x) S 1"), None);
        assert_eq!(parse_start_time("no parenthesis"), None);
    }

    #[test]
    fn finds_the_framework_directory_of_libcoreclr() {
        let maps = "\
7f00-7f01 r-xp 00000000 08:01 1 /usr/lib/libc.so.6
7f02-7f03 r-xp 00000000 08:01 2 /opt/my dotnet/shared/Microsoft.NETCore.App/3.1.23/libcoreclr.so
";
        assert_eq!(framework_version_in_maps(maps).as_deref(), Some("3.1.23"));
        let self_contained = "7f02-7f03 r-xp 00000000 08:01 2 /srv/app/libcoreclr.so\n";
        assert_eq!(framework_version_in_maps(self_contained), None);
        assert_eq!(framework_version_in_maps("7f00-7f01 rw-p 0 0:0 0 \n"), None);
    }

    #[test]
    fn joins_the_command_line_as_the_runtime_does() {
        let exe = Path::new("/usr/share/dotnet/dotnet");
        let join = |raw: &[u8]| join_command_line(exe, raw);
        assert_eq!(
            join(b"dotnet\0app.dll\0\0x y\0"),
            "/usr/share/dotnet/dotnet app.dll  x y"
        );
        assert_eq!(join(b"dotnet\0"), "/usr/share/dotnet/dotnet");
        assert_eq!(join(b""), "/usr/share/dotnet/dotnet");
        assert_eq!(join(b"dotnet\0\xFF\0"), "/usr/share/dotnet/dotnet \u{FFFD}");
    }

    #[test]
    fn this_process_is_alive_and_pid_zero_is_not() {
        assert!(is_alive(std::process::id()));
        assert!(!is_alive(0));
        assert!(!is_alive(u32::MAX));
        if cfg!(target_os = "linux") {
            assert!(start_time(std::process::id()).is_some());
            assert!(command_line(std::process::id()).is_some());
        }
    }
}

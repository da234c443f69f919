//! The command line of the `throughput` example: bad arguments, a path that does not
//! exist and a file that is not an assembly are errors that name the problem and exit
//! non-zero, never a panic. (The `ilrewrite` command's subcommands have theirs in
//! `cli/tests/cli.rs`.)
//!
//! The examples are built (or found fresh) with the same cargo, profile and features
//! as this test, through `cargo build --message-format=json`, which says where each
//! executable is.
#![cfg(feature = "pe")]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// The string value starting right after `key` in a JSON line (escapes undone), if
/// `key` occurs in it.
fn json_string_after(line: &str, key: &str) -> Option<String> {
    let start = line.find(key)? + key.len();
    let mut value = String::new();
    let mut chars = line[start..].chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => return Some(value),
            '\\' => match chars.next()? {
                'n' => value.push('\n'),
                't' => value.push('\t'),
                other => value.push(other),
            },
            c => value.push(c),
        }
    }
    None
}

/// The executables of the examples, by name.
fn examples() -> &'static HashMap<String, PathBuf> {
    static EXAMPLES: OnceLock<HashMap<String, PathBuf>> = OnceLock::new();
    EXAMPLES.get_or_init(|| {
        let mut cmd = Command::new(env!("CARGO"));
        cmd.args([
            "build",
            "--message-format=json",
            "--examples",
            "--manifest-path",
        ])
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"));
        let mut features = vec!["pe"];
        if cfg!(feature = "clr") {
            features.push("clr");
        }
        cmd.args(["--features", &features.join(",")]);
        // This test runs from <target>/<profile dir>/deps/: build the same profile.
        let exe = std::env::current_exe().unwrap();
        let profile_dir = exe
            .parent()
            .and_then(Path::parent)
            .and_then(Path::file_name);
        match profile_dir.and_then(|d| d.to_str()) {
            Some("debug") => {
                cmd.args(["--profile", "dev"]);
            }
            Some(profile) => {
                cmd.args(["--profile", profile]);
            }
            None => {}
        }
        let out = cmd.output().expect("cargo runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "cargo build --examples failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut found = HashMap::new();
        for line in stdout.lines() {
            if !line.contains(r#""reason":"compiler-artifact""#)
                || !line.contains(r#""kind":["example"]"#)
            {
                continue;
            }
            let target = &line[line.find(r#""target":{"#).unwrap()..];
            let name = json_string_after(target, r#""name":""#).unwrap();
            if let Some(exe) = json_string_after(line, r#""executable":""#) {
                found.insert(name, PathBuf::from(exe));
            }
        }
        found
    })
}

/// Runs example `name` with `args`.
fn run(name: &str, args: &[&str]) -> Output {
    let exe = examples()
        .get(name)
        .unwrap_or_else(|| panic!("no example {name}: {:?}", examples()));
    Command::new(exe).args(args).output().unwrap()
}

/// Checks that `out` failed with exit status `code` and a message on stderr that
/// contains every one of `words`, without a panic.
fn assert_fails(what: &str, out: &Output, code: i32, words: &[&str]) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{what}: {stderr}");
    assert!(!stderr.contains("panicked"), "{what}: {stderr}");
    for w in words {
        assert!(stderr.contains(w), "{what}: {w:?} not in {stderr:?}");
    }
}

/// A scratch directory of this test (and of this process: two test runs of one target
/// directory do not share it), emptied.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn missing_paths_and_non_assemblies_are_errors_naming_the_path() {
    let dir = scratch("examples_cli_paths");
    let missing = dir.join("missing.dll");
    let text = dir.join("notes.dll");
    std::fs::write(&text, "not an assembly\n").unwrap();
    let (missing, text) = (missing.to_str().unwrap(), text.to_str().unwrap());
    let out = run("throughput", &[missing]);
    assert_fails("throughput", &out, 1, &[missing]);
    let out = run("throughput", &[text]);
    assert_fails("throughput", &out, 1, &[text, "not a .NET assembly"]);
}

#[test]
fn bad_arguments_print_the_usage() {
    for args in [&["--bogus"][..], &["a.dll", "b.dll"], &["-n", "zero"]] {
        let out = run("throughput", args);
        assert_fails(&format!("throughput {args:?}"), &out, 2, &["usage"]);
    }
}

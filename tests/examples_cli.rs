//! The examples' command lines: bad arguments, a path that does not exist and a file
//! that is not an assembly are errors that name the problem and exit non-zero, never a
//! panic or a silent "0 assemblies".
//!
//! The examples are built (or found fresh) with the same cargo, profile and features
//! as this test, through `cargo build --message-format=json`, which says where each
//! executable is.
#![cfg(feature = "pe")]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

mod clr_support;
use clr_support::{Runtime, for_each_runtime};

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
    for example in ["disasm", "roundtrip", "throughput"] {
        let out = run(example, &[missing]);
        assert_fails(example, &out, 1, &[missing]);
        let out = run(example, &[text]);
        assert_fails(example, &out, 1, &[text, "not a .NET assembly"]);
    }
    let out = run("disasm", &[text, "System.String::Concat"]);
    assert_fails("disasm", &out, 1, &[text, "not a .NET assembly"]);
}

#[test]
fn bad_arguments_print_the_usage() {
    for (example, args) in [
        ("disasm", &["--bogus"][..]),
        ("disasm", &["a.dll", "T::M", "extra"]),
        ("disasm", &["a.dll", "T::M(int32"]),
        ("disasm", &["a.dll", "0x0A000001"]),
        ("roundtrip", &["--bogus"]),
        ("throughput", &["--bogus"]),
        ("throughput", &["a.dll", "b.dll"]),
        ("throughput", &["-n", "zero"]),
    ] {
        let out = run(example, args);
        assert_fails(&format!("{example} {args:?}"), &out, 2, &["usage"]);
    }
}

#[test]
fn roundtrip_skips_and_counts_what_is_not_an_assembly_in_a_directory() {
    let dir = scratch("examples_cli_dir");
    std::fs::write(dir.join("native.dll"), "not an assembly\n").unwrap();
    let out = run("roundtrip", &[dir.to_str().unwrap()]);
    assert_fails(
        "roundtrip",
        &out,
        1,
        &["no .NET assemblies found (1 other files skipped)"],
    );
    let runtime = ilrewrite_corpus::default_runtime().unwrap_or_else(|e| panic!("{e}"));
    let framework = runtime.framework_dir();
    std::fs::copy(
        framework.join("System.Runtime.dll"),
        dir.join("System.Runtime.dll"),
    )
    .unwrap();
    let out = run("roundtrip", &[dir.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.contains("assemblies 1,"), "{stdout}");
    assert!(
        stdout.contains("skipped 1 files that are not .NET assemblies"),
        "{stdout}"
    );
}

#[test]
fn disasm_selects_methods() {
    for_each_runtime(disasm_selects_methods_of);
}

fn disasm_selects_methods_of(rt: &Runtime) {
    let corelib = rt.corelib();
    let corelib = corelib.to_str().unwrap();
    let listed = |args: &[&str]| {
        let out = run("disasm", args);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8(out.stdout).unwrap();
        stdout
            .lines()
            .filter(|l| {
                l.starts_with("// ") && !l.starts_with("// token") && !l.starts_with("// code size")
            })
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        listed(&[corelib, "System.String::Concat(string,string)"]),
        ["// string System.String::Concat(string, string)"]
    );
    assert_eq!(
        listed(&[
            corelib,
            "System.Collections.Generic.List`1/Enumerator::MoveNext"
        ]),
        ["// instance bool System.Collections.Generic.List`1/Enumerator::MoveNext()"]
    );
    let concats = listed(&[corelib, "System.String::Concat"]);
    let two_strings = "// string System.String::Concat(string, string)";
    assert!(concats.iter().any(|l| l == two_strings), "{concats:?}");
    let token = listed_token(corelib, "System.String::Concat(string,string)");
    assert_eq!(
        listed(&[corelib, &token]),
        [two_strings],
        "selected by its token {token}"
    );
    if let Some(f) = rt.facts() {
        assert_eq!(
            concats.len(),
            f.string_concat_overloads,
            "{rt}: {concats:?}"
        );
    }
    let out = run("disasm", &[corelib, "System.String::NoSuchMethod"]);
    assert_fails("disasm", &out, 1, &["System.String::NoSuchMethod"]);
}

/// The token the disassembler prints (`// token 0x........`) for the one method
/// `selector` names.
fn listed_token(assembly: &str, selector: &str) -> String {
    let out = run("disasm", &[assembly, selector]);
    let stdout = String::from_utf8(out.stdout).unwrap();
    let tokens: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("// token "))
        .collect();
    assert_eq!(tokens.len(), 1, "{selector}: {stdout}");
    tokens[0].split(',').next().unwrap().to_owned()
}

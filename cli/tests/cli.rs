//! The `ilrewrite` command, run as a program: its subcommands, their output and exit
//! statuses (0 done, 1 a failure found, 2 bad arguments, 3 the dial unreachable). A
//! path that does not exist and a file that is not an assembly are errors that name
//! the path, never a panic or a silent "0 assemblies".

use std::io::Write;
#[cfg(unix)]
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The committed test program whose `Answer::Get` returns 41
/// (`tests/programs/Answer.cs`).
fn answer_exe() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/programs/bin/Answer.exe")
}

/// Runs `ilrewrite` with `args`, standard input closed.
fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ilrewrite"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("ilrewrite runs")
}

/// Runs `ilrewrite` with `args` and `input` on its standard input.
fn run_with_input(args: &[&str], input: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ilrewrite"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ilrewrite runs");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Checks that `out` succeeded and returns its standard output.
fn assert_ok(what: &str, out: &Output) -> String {
    assert_eq!(out.status.code(), Some(0), "{what}: {}", stderr(out));
    stdout(out)
}

/// Checks that `out` failed with exit status `code` and a message on stderr that
/// contains every one of `words`, without a panic.
fn assert_fails(what: &str, out: &Output, code: i32, words: &[&str]) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(code), "{what}: {err}");
    assert!(!err.contains("panicked"), "{what}: {err}");
    for w in words {
        assert!(err.contains(w), "{what}: {w:?} not in {err:?}");
    }
}

/// A scratch directory of this test and process, emptied. Under the system's
/// temporary directory rather than the target directory: a Unix socket's path must be
/// short (108 bytes).
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ilrewrite-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn help_lists_the_subcommands_and_the_exit_statuses() {
    let out = run(&["--help"]);
    let help = assert_ok("--help", &out);
    for sub in ["roundtrip", "disasm", "dial", "ps", "attach"] {
        assert!(
            help.lines().any(|l| l.trim_start().starts_with(sub)),
            "{sub} not listed:\n{help}"
        );
    }
    for status in ["Exit status:", "  0  ", "  1  ", "  2  ", "  3  "] {
        assert!(help.contains(status), "{status:?} not in:\n{help}");
    }
    for sub in ["roundtrip", "disasm", "dial", "ps", "attach"] {
        let out = run(&[sub, "--help"]);
        let help = assert_ok(sub, &out);
        assert!(help.contains(&format!("Usage: ilrewrite {sub}")), "{help}");
        assert!(help.contains("Exit status:"), "{help}");
    }
}

#[test]
fn bad_arguments_exit_2_with_the_usage() {
    let nl = "a\nb";
    for args in [
        &[][..],
        &["--bogus"],
        &["no-such-subcommand"],
        &["ps", "extra"],
        &["attach", "1"],
        &[
            "attach",
            "1",
            "--profiler",
            "/p.so",
            "--clsid",
            "not-a-clsid",
        ],
        &["roundtrip", "--bogus"],
        &["disasm", "--bogus"],
        &["disasm", "a.dll", "T::M", "extra"],
        &["disasm", "a.dll", "T::M(int32"],
        &["disasm", "a.dll", "0x0A000001"],
        &["disasm", "0x0A000001"],
        &["dial"],
        &["dial", "/nonexistent/dial.sock", nl],
    ] {
        let out = run(args);
        assert_fails(&format!("{args:?}"), &out, 2, &["Usage: ilrewrite"]);
    }
}

#[test]
fn roundtrip_of_one_assembly_prints_the_counts() {
    let answer = answer_exe();
    let out = run(&["roundtrip", answer.to_str().unwrap()]);
    let text = assert_ok("roundtrip Answer.exe", &out);
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some(
            "assemblies 1, methods 3, bodies 3 (tiny 2, fat 1), instructions 14 (14 over all \
             methods), bodies with EH 0, EH clauses 0, IL bytes 39, LocalVarSigs 1, failures 0"
        ),
        "{text}"
    );
    assert!(
        lines.next().is_some_and(|l| l.ends_with(" us per body)")),
        "{text}"
    );
    assert_eq!(lines.next(), None, "{text}");
}

#[test]
fn roundtrip_without_paths_reads_the_default_framework() {
    let runtime = ilrewrite_corpus::default_runtime().unwrap_or_else(|e| panic!("{e}"));
    let assemblies = runtime.framework_assemblies().unwrap().len();
    let out = run(&["roundtrip"]);
    let text = assert_ok("roundtrip", &out);
    assert!(
        text.starts_with(&format!("assemblies {assemblies}, ")),
        "{text}"
    );
    assert!(text.contains(", failures 0\n"), "{text}");
}

#[test]
fn missing_paths_and_non_assemblies_are_errors_naming_the_path() {
    let dir = scratch("paths");
    let missing = dir.join("missing.dll");
    let text = dir.join("notes.dll");
    std::fs::write(&text, "not an assembly\n").unwrap();
    let (missing, text) = (missing.to_str().unwrap(), text.to_str().unwrap());
    let answer = answer_exe();
    let answer = answer.to_str().unwrap();
    for sub in ["disasm", "roundtrip"] {
        let out = run(&[sub, missing]);
        assert_fails(sub, &out, 1, &[missing]);
        let out = run(&[sub, text]);
        assert_fails(sub, &out, 1, &[text, "not a .NET assembly"]);
    }
    // Every named path is checked before any work: one bad path among good ones fails.
    let out = run(&["roundtrip", answer, missing]);
    assert_fails("roundtrip Answer.exe missing", &out, 1, &[missing]);
    assert!(stdout(&out).is_empty(), "{}", stdout(&out));
    let out = run(&["disasm", text, "System.String::Concat"]);
    assert_fails("disasm", &out, 1, &[text, "not a .NET assembly"]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn roundtrip_skips_and_counts_what_is_not_an_assembly_in_a_directory() {
    let dir = scratch("dir");
    std::fs::write(dir.join("native.dll"), "not an assembly\n").unwrap();
    let out = run(&["roundtrip", dir.to_str().unwrap()]);
    assert_fails(
        "roundtrip",
        &out,
        1,
        &["no .NET assemblies found (1 other files skipped)"],
    );
    std::fs::create_dir(dir.join("sub")).unwrap();
    std::fs::copy(answer_exe(), dir.join("sub").join("Answer.exe")).unwrap();
    let out = run(&["roundtrip", dir.to_str().unwrap()]);
    let text = assert_ok("roundtrip DIR", &out);
    assert!(text.starts_with("assemblies 1, methods 3,"), "{text}");
    assert!(
        text.contains("\nskipped 1 files that are not .NET assemblies\n"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn disasm_prints_the_il_of_answer_get() {
    let answer = answer_exe();
    let answer = answer.to_str().unwrap();
    let listing = "\
// token 0x06000002, RVA 0x2058
// int32 Answer::Get()
// code size 3 (0x3)
.maxstack 8
IL_0000:  ldc.i4.s   41
IL_0002:  ret
";
    for method in ["Answer::Get", "Answer::Get()", "Get", "0x06000002"] {
        let out = run(&["disasm", answer, method]);
        let text = assert_ok(method, &out);
        assert_eq!(text.trim_end(), listing.trim_end(), "{method}");
    }
    let out = run(&["disasm", answer, "Answer::Get(int32)"]);
    assert_fails("Get(int32)", &out, 1, &["matches Answer::Get(int32)"]);
}

#[test]
fn disasm_selects_methods_of_corelib() {
    let runtimes = ilrewrite_corpus::runtimes().unwrap_or_else(|e| panic!("{e}"));
    for rt in runtimes {
        disasm_selects_methods_of(rt);
    }
}

fn disasm_selects_methods_of(rt: &ilrewrite_corpus::Runtime) {
    let corelib = rt.corelib();
    let corelib = corelib.to_str().unwrap();
    let listed = |args: &[&str]| {
        let out = run(&[&["disasm"], args].concat());
        let text = assert_ok(&format!("{rt}: {args:?}"), &out);
        text.lines()
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
    let out = run(&["disasm", corelib, "System.String::NoSuchMethod"]);
    assert_fails("disasm", &out, 1, &["System.String::NoSuchMethod"]);
}

/// The token the disassembler prints (`// token 0x........`) for the one method
/// `selector` names.
fn listed_token(assembly: &str, selector: &str) -> String {
    let out = run(&["disasm", assembly, selector]);
    let text = stdout(&out);
    let tokens: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("// token "))
        .collect();
    assert_eq!(tokens.len(), 1, "{selector}: {text}");
    tokens[0].split(',').next().unwrap().to_owned()
}

#[cfg(unix)]
#[test]
fn dial_to_a_socket_that_does_not_exist_exits_3_naming_it() {
    let dir = scratch("nodial");
    let socket = dir.join("dial.sock");
    let socket = socket.to_str().unwrap();
    let out = run(&["dial", socket, "state"]);
    assert_fails(
        "dial",
        &out,
        3,
        &[&format!("ilrewrite dial: cannot connect to {socket}: ")],
    );
    assert!(stdout(&out).is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

#[cfg(unix)]
/// A stand-in for a profiler's dial on `socket`, for one connection: answers `state`
/// with a line and `ok`, `bad` with `error: ...`, `refuse` with `error: refused: ...`
/// and closes, `cut` with half a line and closes, anything else with `ok`. Returns the
/// lines it received.
fn fake_dial(socket: &Path) -> std::thread::JoinHandle<Vec<String>> {
    let listener = std::os::unix::net::UnixListener::bind(socket).unwrap();
    std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let mut writer = stream.try_clone().unwrap();
        let mut received = Vec::new();
        for line in BufReader::new(stream).lines() {
            let Ok(line) = line else { break };
            received.push(line.clone());
            let answer = match line.as_str() {
                "state" => "method A.B::C stage=active\nok\n",
                "bad" => "error: unknown command `bad`\n",
                "refuse" => "error: refused: connection from uid 65534\n",
                "cut" => "method A.B",
                _ => "ok\n",
            };
            writer.write_all(answer.as_bytes()).unwrap();
            if matches!(line.as_str(), "refuse" | "cut") {
                break;
            }
        }
        received
    })
}

/// One session of `ilrewrite dial SOCKET COMMANDS...` (no COMMANDS: the lines of
/// `input` on standard input) against a [`fake_dial`] at `socket`: exit status,
/// standard output, and the lines the dial received.
#[cfg(unix)]
fn dial_session(
    socket: &Path,
    commands: &[&str],
    input: &str,
) -> (Option<i32>, String, Vec<String>) {
    let server = fake_dial(socket);
    let args = [&["dial", socket.to_str().unwrap()][..], commands].concat();
    let out = match commands.is_empty() {
        true => run_with_input(&args, input),
        false => run(&args),
    };
    let received = server.join().unwrap();
    std::fs::remove_file(socket).unwrap();
    let err = stderr(&out);
    assert!(!err.contains("panicked"), "{err}");
    if out.status.code() == Some(3) {
        assert!(
            err.contains("the connection ended before the answer's final line"),
            "{err}"
        );
    }
    (out.status.code(), stdout(&out), received)
}

#[cfg(unix)]
#[test]
fn dial_sends_commands_and_exits_by_the_answers() {
    let dir = scratch("dial");
    let socket = dir.join("dial.sock");
    let state = "method A.B::C stage=active\nok\n";
    assert_eq!(
        dial_session(&socket, &["state", "revert A.B::C"], ""),
        (
            Some(0),
            format!("{state}ok\n"),
            vec!["state".into(), "revert A.B::C".into()]
        )
    );
    // An `error:` answer: status 1, and the commands after it are still sent.
    assert_eq!(
        dial_session(&socket, &["bad", "state"], ""),
        (
            Some(1),
            format!("error: unknown command `bad`\n{state}"),
            vec!["bad".into(), "state".into()]
        )
    );
    // From standard input, blank lines skipped; a refusal ends the run.
    assert_eq!(
        dial_session(&socket, &[], "state\n\n  \nrefuse\nstate\n"),
        (
            Some(1),
            format!("{state}error: refused: connection from uid 65534\n"),
            vec!["state".into(), "refuse".into()]
        )
    );
    // A connection that ends within an answer: status 3 (said on standard error), what
    // came is shown.
    assert_eq!(
        dial_session(&socket, &["cut", "state"], ""),
        (Some(3), "method A.B\n".into(), vec!["cut".into()])
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `attach` to a pid no process has: the reason, status 3 (unreachable), nothing else.
#[test]
fn attach_to_no_process_exits_3_naming_it() {
    let out = run(&[
        "attach",
        "999999999",
        "--profiler",
        "/nonexistent/libp.so",
        "--clsid",
        "{5B0E6A3C-8D21-4F7A-B6C9-2E1D4A7F3C85}",
    ]);
    assert_fails(
        "attach 999999999",
        &out,
        3,
        &["no process has id 999999999"],
    );
}

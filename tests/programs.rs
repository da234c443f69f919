//! The .NET test programs of `tests/programs/` themselves, before any profiler: each
//! committed binary runs under the provisioned CoreCLR 3.1.23 with its exit code and
//! its checked-in stdout; `build.sh` rebuilds the same binaries from source (with Mono's
//! `mcs` and `ilasm`, installed from Debian's packages on first use when missing);
//! `gen_many.sh` regenerates `Many.cs` and
//! `gen_calltarget.sh` `CallTargetIntegrations.cs`; the summary parser of the harness
//! reads the format it documents.

mod clr_support;

use clr_support::{
    CALL_TREE_CALLS, DIAL_EMITTED, DIAL_LATER, DIAL_ROUND, INLINING_CALLS, Interactive, LIBRARIES,
    MANY_METHODS, PROGRAMS, RECURSION_CALLS, Runtime, Summary, TAIL_CALLS_CALLS,
    TAIL_CALLS_DEEP_CALLS, TAIL_CALLS_DEPTH, TAIL_CALLS_METHOD_CALLS, TAIL_CALLS_STRUCT24_DEPTH,
    UNLOAD_PLUGIN_CALLS, command_for, exit_code, expected_stdout, for_each_runtime, program,
    programs_dir, run_command, run_unprofiled,
};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// Runs `name` unprofiled and checks its exit code, its stdout against the expected
/// file, and that it printed nothing on stderr.
fn check(rt: &Runtime, name: &str) -> String {
    let start = Instant::now();
    let out = run_unprofiled(rt, name);
    eprintln!("{name}: {:.3} s unprofiled", start.elapsed().as_secs_f64());
    assert_eq!(
        out.code(),
        exit_code(name),
        "{name}; stderr:\n{}",
        out.stderr
    );
    assert_eq!(out.stdout, expected_stdout(name), "{name}: stdout");
    assert_eq!(out.stderr, "", "{name}: stderr");
    out.stdout
}

#[test]
fn features() {
    for_each_runtime(|rt| {
        check(rt, "Features");
    })
}

#[test]
fn threads() {
    for_each_runtime(|rt| {
        // Several threads: run it twice to catch an output that depends on scheduling.
        check(rt, "Threads");
        check(rt, "Threads");
    })
}

/// `Unload.exe`: its output, and the call counts it checks itself are the ones the
/// profiler tests use; its one stderr line is the resident-memory figure.
#[test]
fn unload() {
    for_each_runtime(|rt| {
        let out = run_unprofiled(rt, "Unload");
        assert_eq!(out.code(), exit_code("Unload"), "stderr:\n{}", out.stderr);
        assert_eq!(out.stdout, expected_stdout("Unload"));
        let plugin = format!("calls UnloadPlugin.* {UNLOAD_PLUGIN_CALLS}");
        assert!(out.stdout.lines().any(|l| l == plugin), "{}", out.stdout);
        assert!(
            out.stderr
                .starts_with("unload: rss-growth-per-cycle-bytes "),
            "{}",
            out.stderr
        );
    })
}

#[test]
fn inlining() {
    for_each_runtime(|rt| {
        let stdout = check(rt, "Inlining");
        assert!(
            stdout.ends_with(&format!("calls {INLINING_CALLS}\n")),
            "{stdout}"
        );
    })
}

/// `Recursion.exe`: without arguments its two sums and its bytes-per-frame line (the
/// calls of `Sum` are the two depths plus one each); with a depth, the sum.
#[test]
fn recursion() {
    for_each_runtime(|rt| {
        let out = run_unprofiled(rt, "Recursion");
        assert_eq!(
            out.code(),
            exit_code("Recursion"),
            "stderr:\n{}",
            out.stderr
        );
        assert_eq!(out.stdout, expected_stdout("Recursion"));
        let depths: u64 = out
            .stdout
            .lines()
            .map(|l| l.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap())
            .sum();
        assert_eq!(depths + 2, RECURSION_CALLS);
        assert!(
            out.stderr.starts_with("recursion: ") && out.stderr.ends_with(" bytes per frame\n"),
            "{}",
            out.stderr
        );
        let mut cmd = command_for(rt, &program("Recursion"));
        cmd.arg("10000");
        let out = run_command(cmd);
        assert_eq!(
            out.code(),
            exit_code("Recursion"),
            "stderr:\n{}",
            out.stderr
        );
        assert_eq!(out.stdout, "sum 10000 = 50005000\n");
    })
}

#[test]
fn edge_cases() {
    for_each_runtime(|rt| {
        check(rt, "EdgeCases");
    })
}

#[test]
fn call_tree() {
    for_each_runtime(|rt| {
        let stdout = check(rt, "CallTree");
        assert!(
            stdout
                .lines()
                .any(|l| l == format!("calls {CALL_TREE_CALLS}")),
            "{stdout}"
        );
    })
}

#[test]
fn generic() {
    for_each_runtime(|rt| {
        check(rt, "Generic");
    })
}

#[test]
fn many() {
    for_each_runtime(|rt| {
        let stdout = check(rt, "Many");
        assert!(
            stdout.starts_with(&format!("methods {MANY_METHODS} ")),
            "{stdout}"
        );
    })
}

#[test]
fn tail_calls() {
    for_each_runtime(|rt| {
        let stdout = check(rt, "TailCalls");
        let lines: Vec<&str> = stdout.lines().collect();
        assert_eq!(lines.len(), 13, "{stdout}");
        let per_shape = format!(" calls {}", TAIL_CALLS_DEPTH + 1);
        for line in &lines[..11] {
            assert!(line.ends_with(&per_shape), "{line}");
        }
        let struct24 = format!(" calls {}", TAIL_CALLS_STRUCT24_DEPTH + 1);
        assert!(lines[11].starts_with("struct24 "), "{}", lines[11]);
        assert!(lines[11].ends_with(&struct24), "{}", lines[11]);
        assert_eq!(lines[12], format!("deep calls {TAIL_CALLS_DEEP_CALLS}"));
        assert_eq!(
            TAIL_CALLS_DEEP_CALLS,
            11 * (TAIL_CALLS_DEPTH + 1) + TAIL_CALLS_STRUCT24_DEPTH + 1
        );
    })
}

/// The call counts of `TailCalls.exe` in the harness are those derived in the header of
/// its source: one `//   TailCalls.Type::Method   count` line per method, then the total.
#[test]
fn tail_calls_counts_match_the_source() {
    let source = fs::read_to_string(programs_dir().join("TailCalls.il")).unwrap();
    let number = |s: &str| s.replace(',', "").parse::<u64>().unwrap();
    let mut documented = Vec::new();
    let mut total = None;
    for line in source.lines().take_while(|l| l.starts_with("//")) {
        let words: Vec<&str> = line.trim_start_matches('/').split_whitespace().collect();
        match words.as_slice() {
            [name, count, ..] if name.starts_with("TailCalls.") && name.contains("::") => {
                documented.push(((*name).to_owned(), number(count)));
            }
            ["all", "methods", "of", "TailCalls.*", count, ..] => total = Some(number(count)),
            _ => {}
        }
    }
    let harness: Vec<(String, u64)> = TAIL_CALLS_METHOD_CALLS
        .iter()
        .map(|&(n, c)| (n.to_owned(), c))
        .collect();
    assert_eq!(documented, harness);
    assert_eq!(total, Some(TAIL_CALLS_CALLS));
    let sum: u64 = TAIL_CALLS_METHOD_CALLS.iter().map(|(_, c)| c).sum();
    assert_eq!(sum, TAIL_CALLS_CALLS);
    let deep: u64 = TAIL_CALLS_METHOD_CALLS
        .iter()
        .filter(|(n, _)| !n.starts_with("TailCalls.Program::") && !n.ends_with("::.ctor"))
        .map(|(_, c)| c)
        .sum();
    assert_eq!(deep, TAIL_CALLS_DEEP_CALLS);
}

#[test]
fn answer() {
    for_each_runtime(|rt| {
        assert_eq!(check(rt, "Answer"), "answer 41\n");
    })
}

/// `Dial.exe` with stdin closed, as every test that runs each program sees it: `bye`.
#[test]
fn dial_at_eof() {
    for_each_runtime(|rt| {
        assert_eq!(check(rt, "Dial"), "bye\n");
    })
}

/// `Dial.exe` fed the script `Dial.in` (its deterministic commands, ending with `quit`)
/// prints `expected/Dial.in.out`.
#[test]
fn dial_script() {
    for_each_runtime(|rt| {
        let script = fs::read_to_string(programs_dir().join("Dial.in")).unwrap();
        let mut dial = Interactive::start(command_for(rt, &program("Dial")));
        for line in script.lines() {
            dial.send(line);
        }
        let out = dial.finish();
        assert_eq!(out.code(), exit_code("Dial"), "stderr:\n{}", out.stderr);
        let expected = fs::read_to_string(programs_dir().join("expected/Dial.in.out")).unwrap();
        assert_eq!(out.stdout, expected);
        assert_eq!(out.stderr, "");
    })
}

/// `Dial.exe` driven command by command through [`Interactive`]: each answer, the
/// threads of `start` and `stop` (which, unprofiled, see only the unprofiled values),
/// commands it does not know, and `bye` with its exit code once stdin is closed.
#[test]
fn dial_interactive() {
    for_each_runtime(|rt| {
        let mut dial = Interactive::start(command_for(rt, &program("Dial")));
        let round: Vec<String> = DIAL_ROUND.iter().map(|(n, v)| format!("{n} {v}")).collect();
        assert_eq!(dial.answer("round"), round);
        assert_eq!(dial.answer("later"), [format!("Later {DIAL_LATER}")]);
        assert_eq!(dial.answer("dynamic"), [format!("Emitted {DIAL_EMITTED}")]);
        assert_eq!(dial.answer("dynamic"), [format!("Emitted {DIAL_EMITTED}")]);
        assert_eq!(dial.answer("hot 1000"), ["hot 1000 sum 105000"]);
        assert_eq!(dial.answer("stop"), ["not started"]);
        assert_eq!(dial.answer("start 8"), ["started 8"]);
        assert_eq!(dial.answer("start 2"), ["already started"]);
        // The main thread's calls while the threads run.
        assert_eq!(dial.answer("round"), round);
        let stopped = dial.answer("stop");
        let calls: u64 = stopped[0]
            .strip_prefix("calls ")
            .and_then(|c| c.parse().ok())
            .unwrap_or_else(|| panic!("{stopped:?}"));
        assert!(calls >= 16, "{stopped:?}");
        let seen: Vec<(&str, &str)> = stopped[1..]
            .iter()
            .map(|l| {
                let words: Vec<&str> = l.split(' ').collect();
                match words.as_slice() {
                    ["seen", name, value, "count", count] => {
                        assert!(count.parse::<u64>().unwrap() > 0, "{l}");
                        (*name, *value)
                    }
                    _ => panic!("{stopped:?}"),
                }
            })
            .collect();
        assert_eq!(seen, [("Caller", "105"), ("Plain", "10")], "{stopped:?}");
        let counted: u64 = stopped[1..]
            .iter()
            .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
            .sum();
        assert_eq!(counted, calls, "{stopped:?}");
        assert_eq!(dial.answer("gc"), ["gc"]);
        assert_eq!(dial.answer(""), Vec::<String>::new());
        for bad in [
            "frobnicate",
            "hot",
            "hot x",
            "hot -1",
            "start 0",
            "start 65",
            "round 1",
        ] {
            assert_eq!(dial.answer(bad), [format!("unknown {bad}")]);
        }
        // Threads still running at EOF are stopped silently.
        assert_eq!(dial.answer("start 3"), ["started 3"]);
        assert!(dial.stderr_so_far().is_empty(), "{}", dial.stderr_so_far());
        let out = dial.finish();
        assert_eq!(out.code(), exit_code("Dial"), "stderr:\n{}", out.stderr);
        assert_eq!(out.stdout, "bye\n");
        assert_eq!(out.stderr, "");
    })
}

/// `CallTargetApp.exe`: its own trace (see the source's header), and with `selftest`
/// the self-test of `ILRewrite.CallTarget.dll`'s `AsyncEnd` (exit 0, `selftest ok N`).
#[test]
fn call_target_app() {
    for_each_runtime(|rt| {
        check(rt, "CallTargetApp");
        let mut cmd = command_for(rt, &program("CallTargetApp"));
        cmd.arg("selftest");
        let out = run_command(cmd);
        assert_eq!(out.code(), 0, "{}{}", out.stdout, out.stderr);
        assert!(out.stdout.starts_with("selftest ok "), "{}", out.stdout);
        assert_eq!(out.stdout.lines().count(), 1, "{}", out.stdout);
        assert_eq!(out.stderr, "");
    })
}

/// `CallTargetFramework.exe`: its requests, checksums and counts (it checks its sums
/// itself: exit 99 if one is wrong), the same on both runtimes.
#[test]
fn call_target_framework() {
    for_each_runtime(|rt| {
        check(rt, "CallTargetFramework");
    })
}

/// Every source has its binary and runtimeconfig in `bin/`, every binary its source,
/// and every program of the harness's table its expected output.
#[test]
fn committed_files_are_complete() {
    let dir = programs_dir();
    let mut sources: Vec<String> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "cs" || e == "il"))
        .map(|p| p.file_stem().unwrap().to_str().unwrap().to_owned())
        .collect();
    sources.sort();
    let mut listed: Vec<String> = PROGRAMS.iter().map(|(n, _)| (*n).to_owned()).collect();
    listed.sort();
    let mut with_libraries = listed.clone();
    with_libraries.extend(LIBRARIES.iter().map(|n| (*n).to_owned()));
    with_libraries.sort();
    assert_eq!(
        sources, with_libraries,
        "sources vs the PROGRAMS and LIBRARIES tables"
    );
    let mut binaries: Vec<String> = fs::read_dir(dir.join("bin"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    binaries.sort();
    let mut wanted: Vec<String> = listed
        .iter()
        .flat_map(|n| [format!("{n}.exe"), format!("{n}.runtimeconfig.json")])
        .chain(LIBRARIES.iter().map(|n| format!("{n}.dll")))
        .chain(["toolchain.txt".to_owned()])
        .collect();
    wanted.sort();
    assert_eq!(binaries, wanted, "files in bin/");
    for name in &listed {
        program(name);
        expected_stdout(name);
        let config =
            fs::read_to_string(dir.join(format!("bin/{name}.runtimeconfig.json"))).unwrap();
        assert!(
            config.contains("\"Microsoft.NETCore.App\"") && config.contains("\"3.1.23\""),
            "{name}: {config}"
        );
    }
}

/// `gen_calltarget.sh` produces the committed `CallTargetIntegrations.cs`.
#[test]
fn calltarget_integrations_source_is_generated() {
    let dir = programs_dir();
    let out = match Command::new("sh")
        .arg(dir.join("gen_calltarget.sh"))
        .output()
    {
        Ok(out) => out,
        Err(e) => {
            eprintln!("note: cannot run sh ({e}); gen_calltarget.sh not checked");
            return;
        }
    };
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let committed = fs::read(dir.join("CallTargetIntegrations.cs")).unwrap();
    assert!(
        out.stdout == committed,
        "gen_calltarget.sh does not produce the committed CallTargetIntegrations.cs; regenerate it"
    );
}

#[test]
fn many_source_is_generated() {
    let dir = programs_dir();
    let out = match Command::new("sh").arg(dir.join("gen_many.sh")).output() {
        Ok(out) => out,
        Err(e) => {
            eprintln!("note: cannot run sh ({e}); gen_many.sh not checked");
            return;
        }
    };
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let committed = fs::read(dir.join("Many.cs")).unwrap();
    assert!(
        out.stdout == committed,
        "gen_many.sh does not produce the committed Many.cs; regenerate it"
    );
}

// ---- rebuilding from source ------------------------------------------------------------

fn tool_version(tool: &str) -> Option<String> {
    let out = Command::new(tool).arg("--version").output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A fresh scratch directory for this test.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

fn u16_at(b: &[u8], o: usize) -> usize {
    usize::from(u16::from_le_bytes([b[o], b[o + 1]]))
}

fn u32_at(b: &[u8], o: usize) -> usize {
    u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]) as usize
}

/// The byte ranges of a PE file that ilasm fills with varying values: the COFF header's
/// TimeDateStamp and the metadata's `#GUID` heap (the module's MVID, random per build).
fn ilasm_varying_ranges(pe: &[u8]) -> [std::ops::Range<usize>; 2] {
    let coff = u32_at(pe, 0x3c) + 4;
    let sections = u16_at(pe, coff + 2);
    let opt = coff + 20;
    let opt_size = u16_at(pe, coff + 16);
    let dirs = opt + if u16_at(pe, opt) == 0x20b { 112 } else { 96 };
    let rva_to_offset = |rva: usize| {
        (0..sections)
            .map(|i| opt + opt_size + 40 * i)
            .find_map(|s| {
                let (va, raw_size, raw) =
                    (u32_at(pe, s + 12), u32_at(pe, s + 16), u32_at(pe, s + 20));
                (va..va + raw_size).contains(&rva).then(|| rva - va + raw)
            })
            .expect("an RVA inside a section")
    };
    let cli = rva_to_offset(u32_at(pe, dirs + 14 * 8));
    let root = rva_to_offset(u32_at(pe, cli + 8));
    assert_eq!(u32_at(pe, root), 0x424a_5342, "metadata signature");
    let version_len = u32_at(pe, root + 12);
    let streams = u16_at(pe, root + 16 + version_len + 2);
    let mut at = root + 16 + version_len + 4;
    let mut guid = None;
    for _ in 0..streams {
        let (offset, size) = (u32_at(pe, at), u32_at(pe, at + 4));
        let name_len = pe[at + 8..].iter().position(|&b| b == 0).unwrap();
        if &pe[at + 8..at + 8 + name_len] == b"#GUID" {
            assert!(guid.is_none(), "two #GUID heaps");
            guid = Some(root + offset..root + offset + size);
        }
        at += 8 + (name_len + 4) / 4 * 4;
    }
    [coff + 4..coff + 8, guid.expect("a #GUID heap")]
}

/// `build.sh` into a scratch directory: the same files as `bin/`; with the toolchain
/// recorded in `bin/toolchain.txt`, the mcs outputs byte-identical and the ilasm output
/// identical but for its timestamp and MVID; in any case, every rebuilt program gives
/// the expected output.
#[test]
fn build_reproduces_binaries() {
    {
        // Installed on first use when missing; a failure to have them fails the test.
        ilrewrite_corpus::mono_tools().unwrap_or_else(|e| panic!("{e}"));
        let (Some(mcs), Some(ilasm)) = (tool_version("mcs"), tool_version("ilasm")) else {
            panic!("mcs and ilasm were found, then did not run");
        };
        let dir = programs_dir();
        let out_dir = scratch("programs-rebuild");
        // build_framework.sh compiles against .NET Core 3.1.23's assemblies, the oldest
        // runtime the programs run on.
        let runtimes = ilrewrite_corpus::runtimes().unwrap_or_else(|e| panic!("{e}"));
        let Some(oldest) = runtimes.iter().find(|rt| rt.version() == "3.1.23") else {
            eprintln!(
                "note: .NET Core 3.1.23 is not among the runtimes tested; build.sh not checked"
            );
            return;
        };
        let runtime = oldest.root();
        let built = Command::new("sh")
            .arg(dir.join("build.sh"))
            .arg(&out_dir)
            .env("ILREWRITE_DOTNET_ROOT", runtime)
            .output()
            .unwrap();
        assert!(
            built.status.success(),
            "build.sh failed:\n{}{}",
            String::from_utf8_lossy(&built.stdout),
            String::from_utf8_lossy(&built.stderr)
        );
        let names = |d: &Path| {
            let mut v: Vec<_> = fs::read_dir(d)
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .collect();
            v.sort();
            v
        };
        assert_eq!(names(&out_dir), names(&dir.join("bin")), "files built");
        let recorded = fs::read_to_string(dir.join("bin/toolchain.txt")).unwrap();
        let same_toolchain = recorded == format!("{mcs}{ilasm}");
        if !same_toolchain {
            eprintln!(
                "note: this Mono differs from the one that built bin/ ({recorded:?}); \
             comparing the rebuilt programs' outputs only"
            );
        }
        for library in LIBRARIES {
            let file = format!("{library}.dll");
            assert!(
                !same_toolchain
                    || fs::read(out_dir.join(&file)).unwrap()
                        == fs::read(dir.join("bin").join(&file)).unwrap(),
                "{file}: not byte-identical"
            );
        }
        for (name, code) in PROGRAMS {
            let committed = fs::read(program(name)).unwrap();
            let rebuilt_exe = out_dir.join(format!("{name}.exe"));
            let rebuilt = fs::read(&rebuilt_exe).unwrap();
            let config = format!("{name}.runtimeconfig.json");
            assert_eq!(
                fs::read(out_dir.join(&config)).unwrap(),
                fs::read(dir.join("bin").join(&config)).unwrap(),
                "{config}"
            );
            if same_toolchain {
                if dir.join(format!("{name}.il")).exists() {
                    assert_eq!(rebuilt.len(), committed.len(), "{name}.exe: length");
                    let varying = ilasm_varying_ranges(&committed);
                    assert_eq!(
                        varying,
                        ilasm_varying_ranges(&rebuilt),
                        "{name}.exe: layout"
                    );
                    let differing: Vec<usize> = (0..rebuilt.len())
                        .filter(|&i| rebuilt[i] != committed[i])
                        .filter(|i| !varying.iter().any(|r| r.contains(i)))
                        .collect();
                    assert!(differing.is_empty(), "{name}.exe differs at {differing:x?}");
                } else {
                    assert!(rebuilt == committed, "{name}.exe: not byte-identical");
                }
            }
            for rt in runtimes {
                let run = run_command(command_for(rt, &rebuilt_exe));
                assert_eq!(
                    run.code(),
                    *code,
                    "{rt}: rebuilt {name}; stderr:\n{}",
                    run.stderr
                );
                assert_eq!(
                    run.stdout,
                    expected_stdout(name),
                    "{rt}: rebuilt {name}: stdout"
                );
            }
        }
        fs::remove_dir_all(&out_dir).unwrap();
    }
}

// ---- the summary parser ----------------------------------------------------------------

#[test]
fn summary_parses() {
    let stderr = "\
some runtime message
ilrewrite: profiler attached
ilrewrite: mode probes jitted 120 rewritten 100 already 17 refused 2 failed 1 enters 5000 exits 4999
ilrewrite:   1 jmp cannot be wrapped in a try block
ilrewrite:   1 a reason
ilrewrite:   1 a reason
ilrewrite: bye
ilrewrite:   7 not a reason line: after a line that ends the list
";
    let s = Summary::parse(stderr).unwrap();
    assert_eq!(
        s,
        Summary {
            mode: "probes".into(),
            jitted: 120,
            rewritten: 100,
            already: 17,
            refused: 2,
            failed: 1,
            enters: 5000,
            exits: 4999,
            open: None,
            lost: None,
            reasons: vec![
                ("jmp cannot be wrapped in a try block".into(), 1),
                ("a reason".into(), 1),
                ("a reason".into(), 1),
            ],
        }
    );
    assert_eq!(s.reason("a reason"), 2);
    assert_eq!(s.reason("other"), 0);

    let bare = Summary::parse(
        "ilrewrite: mode none jitted 0 rewritten 0 already 0 refused 0 failed 0 enters 0 exits 0\r\n",
    )
    .unwrap();
    assert_eq!(
        (bare.mode.as_str(), bare.jitted, bare.reasons.len()),
        ("none", 0, 0)
    );

    // `wrap` with native probes: the frames open at shutdown and the exits lost.
    let line =
        "ilrewrite: mode wrap jitted 9 rewritten 8 already 0 refused 1 failed 0 enters 40 exits 30";
    let open = Summary::parse(&format!("{line} open 8 lost 2\n")).unwrap();
    assert_eq!((open.enters, open.open, open.lost), (40, Some(8), Some(2)));
    let negative = Summary::parse(&format!("{line} open 11 lost -1\n")).unwrap();
    assert_eq!((negative.open, negative.lost), (Some(11), Some(-1)));
}

#[test]
fn summary_rejects_malformed() {
    let line =
        "ilrewrite: mode m jitted 1 rewritten 1 already 0 refused 0 failed 0 enters 2 exits 2";
    for bad in [
        String::new(),
        "ilrewrite: jitted 1".to_owned(),
        format!("{line}\n{line}\n"),
        line.replace("refused", "declined"),
        line.replace(" already 0", ""),
        line.replace("exits 2", "exits"),
        line.replace("exits 2", "exits 2 extra 3"),
        line.replace("enters 2", "enters -2"),
        line.replace("enters 2", "enters  2"),
        line.replace("mode m", "mode  m"),
        format!("{line} open 1"),
        format!("{line} open 1 lost"),
        format!("{line} lost 1 open 1"),
        format!("{line} open -1 lost 1"),
        format!("{line} open 1 lost +1"),
        format!("{line} open 1 lost --1"),
        format!("{line} open 1 lost 1 extra 1"),
        format!("{line}\nilrewrite:   x reason\n"),
        format!("{line}\nilrewrite:   3\n"),
        format!("{line}\nilrewrite:   3 \n"),
        format!("{line}\nilrewrite:   99999999999999999999 big\n"),
    ] {
        assert!(Summary::parse(&bad).is_err(), "accepted {bad:?}");
    }
}

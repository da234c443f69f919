//! Hostile tests of the ReJIT dial: legal programs and command sequences chosen to
//! break it (protocol limits, conflicting connections, hard method shapes, first calls
//! racing requests, socket paths at their limits, busy connections, shutdown during
//! requests, module unloads, `tail.` calls), under CoreCLR 3.1.23 and the sample
//! profiler.
//!
//! The tests that pass are regression tests. The ones marked `#[ignore = "BUG: ..."]`
//! show a bug each (the reason says what is wrong); run them with `--ignored`.
//!
//! Programs: `Dial.exe` (see `tests/programs/Dial.cs`), `HostileDial.exe` (methods with
//! exception handling, generics, constructors, a static constructor, virtual and
//! interface calls, a nested type, held recursion, a spinning loop, 64 methods never
//! called: `tests/programs/HostileDial.cs`), `HostileTail.exe` (a `tail.` call chain
//! 10,000,000 deep: `tests/programs/HostileTail.il`) and `Unload.exe`. Each test
//! asserts the profiler attached (its dial listened) before anything else.
#![cfg(all(feature = "clr", unix))]

mod clr_support;

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use clr_support::{
    Interactive, Output, Runtime, command_for, config_file, expected_stdout, for_each_runtime,
    profile, program, sample_profiler,
};

/// The sample profiler's CLSID (README and `examples/profiler/`).
const SAMPLE: &str = "{8C1E2D4F-3B6A-4E59-A7C2-1F0D9B3E6A51}";

/// The configuration of `tests/clr_rejit.rs`: `scale` doubles `Dial.Values::Configured`
/// at its first JIT, `offset` adds 1 to `Dial.Inline::Caller` at its first JIT; and
/// `nop` and `identity` hosted for dial requests only (their filter selects no method).
const CONFIG: &str = r#"
[[method]]
name = "scale"
options = { filter = "Dial.Values::Configured" }

[[method]]
name = "offset"
options = { filter = "Dial.Inline::Caller" }

[[method]]
name = "nop"
options = { filter = "no method is named so" }

[[method]]
name = "identity"
options = { filter = "no method is named so" }
"#;

/// What `Dial.exe`'s `round` prints with [`CONFIG`] and no dial request.
const CONFIGURED_ROUND: [&str; 4] = ["Plain 10", "Branches 40", "Configured 40", "Caller 106"];

/// What `Dial.exe`'s `round` prints unprofiled (nothing rewritten).
const UNPROFILED_ROUND: [&str; 4] = ["Plain 10", "Branches 40", "Configured 20", "Caller 105"];

/// [`CONFIG`] and more `[[method]]` entries.
fn config_with(more: &str) -> String {
    format!("{CONFIG}\n{more}\n")
}

/// A fresh directory for one test's dial socket (not created: the profiler makes it).
fn socket_in(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("hostile-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir.join("dial.sock")
}

/// The command running test program `name` with `args` under the sample profiler with
/// configuration `config`, its dial at `socket`, tiering `tiering` and `env`.
fn profiled(
    rt: &Runtime,
    name: &str,
    args: &[&str],
    config: &str,
    socket: &Path,
    tiering: &str,
    env: &[(&str, &str)],
) -> std::process::Command {
    let config = config_file(
        &format!("hostile-{}", socket.display().to_string().replace('/', "_")),
        config,
    );
    let mut cmd = command_for(rt, &program(name));
    profile(&mut cmd, &sample_profiler(), SAMPLE);
    cmd.args(args)
        .env("ILREWRITE_CONFIG", &config)
        .env("ILREWRITE_DIAL", socket)
        .env("COMPlus_TieredCompilation", tiering)
        .envs(env.iter().copied());
    cmd
}

/// Test program `name` started as [`profiled`] says; returns once the dial listens.
fn start_program(
    rt: &Runtime,
    name: &str,
    args: &[&str],
    config: &str,
    socket: &Path,
    tiering: &str,
    env: &[(&str, &str)],
) -> Interactive {
    let program = Interactive::start(profiled(rt, name, args, config, socket, tiering, env));
    let line = program.wait_stderr_line("ilrewrite: dial listening on ");
    assert!(line.ends_with(&socket.display().to_string()), "{line}");
    program
}

/// `Dial.exe` with `config` (see [`start_program`]).
fn start_dial(rt: &Runtime, config: &str, socket: &Path, tiering: &str) -> Interactive {
    start_program(rt, "Dial", &[], config, socket, tiering, &[])
}

/// `HostileDial.exe` with `config` (see [`start_program`]).
fn start_hostile(rt: &Runtime, config: &str, socket: &Path, tiering: &str) -> Interactive {
    start_program(rt, "HostileDial", &[], config, socket, tiering, &[])
}

/// A connection to a dial.
struct Dial {
    reader: BufReader<UnixStream>,
}

impl Dial {
    fn connect(socket: &Path) -> Dial {
        let stream = UnixStream::connect(socket)
            .unwrap_or_else(|e| panic!("connect to {}: {e}", socket.display()));
        Dial {
            reader: BufReader::new(stream),
        }
    }

    /// Sends `bytes` as they are; the answer's lines before `ok`, or the error after
    /// `error: ` (`CLOSED: ...` when the dial closed the connection first).
    fn ask_raw(&mut self, bytes: &[u8]) -> Result<Vec<String>, String> {
        let stream = self.reader.get_mut();
        if let Err(e) = stream.write_all(bytes) {
            return Err(format!("CLOSED: cannot send: {e}"));
        }
        let mut lines = Vec::new();
        loop {
            let mut answer = String::new();
            match self.reader.read_line(&mut answer) {
                Ok(0) => {
                    return Err(format!("CLOSED: the dial closed the connection: {lines:?}"));
                }
                Ok(_) => {}
                Err(e) => return Err(format!("CLOSED: cannot read: {e}")),
            }
            let answer = answer.trim_end_matches('\n');
            if answer == "ok" {
                return Ok(lines);
            }
            if let Some(error) = answer.strip_prefix("error: ") {
                return Err(error.to_owned());
            }
            lines.push(answer.to_owned());
        }
    }

    /// Sends `line` and a `\n` (see [`Dial::ask_raw`]).
    fn ask(&mut self, line: &str) -> Result<Vec<String>, String> {
        self.ask_raw(format!("{line}\n").as_bytes())
    }

    /// Sends `line`, which must succeed.
    fn ok(&mut self, line: &str) -> Vec<String> {
        self.ask(line)
            .unwrap_or_else(|e| panic!("{line:?} failed: {e}"))
    }

    /// Sends `line`, which must succeed; on failure, panics with `program`'s stderr.
    fn ok_in(&mut self, line: &str, program: &Interactive) -> Vec<String> {
        self.ask(line).unwrap_or_else(|e| {
            std::thread::sleep(Duration::from_millis(500));
            panic!(
                "{line:?} failed: {e}\nstderr of the program:\n{}",
                program.stderr_so_far()
            )
        })
    }

    /// The state line of method `name` (`Type::Method`).
    fn state_of(&mut self, name: &str) -> String {
        let lines = self.ok("state");
        let prefix = format!("method {name} ");
        let found: Vec<&String> = lines.iter().filter(|l| l.starts_with(&prefix)).collect();
        assert_eq!(found.len(), 1, "{name} in {lines:#?}");
        found[0].clone()
    }
}

/// The value a program printed for `name` (a line `NAME VALUE`).
fn value(answer: &[String], name: &str) -> i64 {
    answer
        .iter()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in {answer:?}"))
}

/// The counts of the profiler's `ilrewrite: rejit ...` line.
fn rejit_count(out: &Output, name: &str) -> u64 {
    clr_support::named_counts(&out.stderr, "rejit")
        .iter()
        .find(|(n, _)| n == name)
        .map_or_else(|| panic!("no rejit {name} in {}", out.stderr), |(_, v)| *v)
}

/// Ends `program` (stdin closed) and checks its exit code and that no ReJIT version went
/// unanswered or fell back.
fn finish_clean(program: Interactive, code: i32) -> Output {
    let out = program.finish();
    assert_eq!(out.status.code(), Some(code), "{}", out.stderr);
    assert_eq!(rejit_count(&out, "unanswered"), 0, "{}", out.stderr);
    assert_eq!(rejit_count(&out, "fallbacks"), 0, "{}", out.stderr);
    out
}

/// No state line says a request, a revert, a compilation or a build failed.
fn assert_no_failure(state: &[String]) {
    for line in state {
        assert!(
            !line.contains("failed") && !line.contains("not built"),
            "{line}\n{state:#?}"
        );
    }
}

/// A tiny deterministic generator (xorshift64*), for command sequences that are the
/// same in every run.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 33) as usize % n
    }
}

// ---------------------------------------------------------------------------------------
// The protocol at its limits
// ---------------------------------------------------------------------------------------

/// Lines at the protocol's limits: a command padded to exactly 4,096 bytes is carried
/// out; one byte more (a trailing `\r` counts), a 1 MiB line, bytes that are not UTF-8,
/// NUL, a lone `\r`, non-ASCII spaces and line separators, a zero-width space glued to
/// a word, a non-ASCII type name, an operand past 32 bits: an error each, and nothing
/// changes (the state and the program's results are the same before and after). A last
/// line without `\n` is answered when the client shuts its side down.
#[test]
fn lines_at_the_protocol_limits_change_nothing_when_refused() {
    for_each_runtime(|rt| {
        let socket = socket_in("limits");
        let mut program = start_dial(rt, CONFIG, &socket, "1");
        let mut dial = Dial::connect(&socket);
        assert_eq!(program.answer("round"), CONFIGURED_ROUND);

        let command = "instrument Dial.Values::Plain scale factor=3";
        let padded = format!("{command:<4096}");
        assert_eq!(padded.len(), 4096);
        assert_eq!(dial.ok(&padded), ["changed 1 method(s)"]);
        assert_eq!(value(&program.answer("round"), "Plain"), 30);
        let before = dial.ok("state");

        let four = |c: char| format!("instrument Dial.Values::Plain scale factor=4{c}");
        let mut bad: Vec<Vec<u8>> = vec![
            format!(
                "{:<4096}\r\n",
                "instrument Dial.Values::Plain scale factor=4"
            )
            .into_bytes(),
            format!("{:<4097}\n", "instrument Dial.Values::Plain scale factor=4").into_bytes(),
            format!("{}\n", "x".repeat(4096)).into_bytes(),
            format!("{}\n", "state ".repeat(1 << 18)).into_bytes(),
            b"instrument Dial.Values::Plain scale factor=\xff\n".to_vec(),
            b"instrument Dial.Values::Plain scale factor=4\x00\n".to_vec(),
            b"instrument Dial.Values::Plain scale factor=4\r\r\n".to_vec(),
            b"instrument Dial.Values::Plain\rscale factor=4\n".to_vec(),
            b"\xef\xbb\xbfstate\n".to_vec(),
            "instrument Dial.Values::Plain\u{a0}scale factor=4\n".into(),
            "instrument Dial.Values::Plain\u{2028}scale factor=4\n".into(),
            "instrument Dial.Values::Plain\u{200b}scale factor=4\n".into(),
            "instrument Dial.V\u{e4}lues::Plain scale factor=4\n".into(),
            "instrument Dial.Values::Plain sc\u{e4}le factor=4\n".into(),
            "instrument Dial.Values::Plain scale f\u{e4}ctor=4\n".into(),
            "instrument Dial.Values::Plain scale factor=2147483648\n".into(),
            "instrument Dial.Values::Plain scale factor=-2147483649\n".into(),
            "instrument Dial.Values::Plain scale factor=0x4\n".into(),
            "instrument Dial.Values::Plain scale factor=4 factor=4\n".into(),
            "instrument Dial.Values::Plain scale factor=4 flags=none flags=none\n".into(),
            "flags Dial.Values::Plain none,no-inlining\n".into(),
            "flags Dial.Values::Plain no-inlining,\n".into(),
            "INSTRUMENT Dial.Values::Plain scale factor=4\n".into(),
            "instrument Dial.Values:::Plain scale factor=4\n".into(),
            "instrument Dial.Values::Plain* scale factor=4\n".into(),
            "instrument Dial.Values::.ctor scale factor=4\n".into(),
            "\n".into(),
            " \t \n".into(),
        ];
        bad.push(format!("{}\n", four('ä')).into_bytes());
        for line in &bad {
            let answer = dial.ask_raw(line);
            assert!(
                matches!(&answer, Err(e) if !e.starts_with("CLOSED")),
                "{:?} was not refused with an error: {answer:?}",
                String::from_utf8_lossy(&line[..line.len().min(80)])
            );
        }
        assert_eq!(dial.ok("state"), before);
        assert_eq!(value(&program.answer("round"), "Plain"), 30);

        // A last line without its `\n`, the writing side shut down: answered, then the end.
        let mut last = UnixStream::connect(&socket).expect("connect");
        last.write_all(b"instrument Dial.Values::Plain scale factor=5")
            .expect("sent");
        last.shutdown(std::net::Shutdown::Write).expect("shutdown");
        let mut answer = String::new();
        last.read_to_string(&mut answer).expect("the answer");
        assert_eq!(answer, "changed 1 method(s)\nok\n");
        assert_eq!(value(&program.answer("round"), "Plain"), 50);
        drop(dial);
        finish_clean(program, 29);
    })
}

// ---------------------------------------------------------------------------------------
// Conflicting connections
// ---------------------------------------------------------------------------------------

/// Two connections issue 1,500 conflicting commands each (instrument, revert, original,
/// flags and state of `Plain` and of the inlined `Callee`, in an order that is the same
/// in every run) while 8 program threads call the methods, tiering on and off. Every
/// result a thread sees is one some version gives (`Plain` 10, 20, 30 or 17; `Caller`
/// 100 + `Callee` (5, 15 or 25) + 1 from its configured `offset`), no command fails,
/// and after two last commands on one connection the state and the results are exactly
/// what those say.
#[test]
fn two_connections_fight_over_methods_while_eight_threads_call_them() {
    for_each_runtime(|rt| {
        const COMMANDS: [&str; 14] = [
            "instrument Dial.Values::Plain scale factor=2",
            "instrument Dial.Values::Plain scale factor=3",
            "instrument Dial.Values::Plain offset addend=7",
            "revert Dial.Values::Plain",
            "original Dial.Values::Plain",
            "flags Dial.Values::Plain no-inlining",
            "flags Dial.Values::Plain none",
            "flags Dial.Values::Plain no-optimizations,no-inlining",
            "instrument Dial.Inline::Callee scale factor=3",
            "instrument Dial.Inline::Callee scale factor=5 flags=no-optimizations",
            "revert Dial.Inline::Callee",
            "original Dial.Inline::Callee",
            "instrument Dial.Inline::Callee offset addend=0",
            "state",
        ];
        for tiering in ["1", "0"] {
            let socket = socket_in(&format!("fight{tiering}"));
            let mut program = start_dial(rt, CONFIG, &socket, tiering);
            assert_eq!(program.answer("round"), CONFIGURED_ROUND);
            assert_eq!(program.answer("hot 1000"), ["hot 1000 sum 106000"]);
            assert_eq!(program.answer("start 8"), ["started 8"]);
            let fighters: Vec<_> = [1u64, 2]
                .into_iter()
                .map(|seed| {
                    let socket = socket.clone();
                    std::thread::spawn(move || {
                        let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ seed);
                        let mut dial = Dial::connect(&socket);
                        let mut failures = Vec::new();
                        for _ in 0..1500 {
                            let command = COMMANDS[rng.below(COMMANDS.len())];
                            if let Err(e) = dial.ask(command) {
                                failures.push(format!("{command}: {e}"));
                            }
                        }
                        failures
                    })
                })
                .collect();
            for fighter in fighters {
                let failures = fighter.join().expect("a fighter panicked");
                assert!(failures.is_empty(), "tiering {tiering}: {failures:#?}");
            }
            let stopped = program.answer("stop");
            for line in &stopped[1..] {
                let (seen, _) = line.rsplit_once(" count ").expect("seen ... count N");
                let seen = seen.strip_prefix("seen ").expect("seen ...");
                assert!(
                    [
                        "Plain 10",
                        "Plain 17",
                        "Plain 20",
                        "Plain 30",
                        "Caller 106",
                        "Caller 116",
                        "Caller 126"
                    ]
                    .contains(&seen),
                    "tiering {tiering}: {seen} is no version's result: {stopped:?}"
                );
            }
            let mut dial = Dial::connect(&socket);
            dial.ok_in("instrument Dial.Values::Plain scale factor=3", &program);
            dial.ok_in("instrument Dial.Inline::Callee offset addend=2", &program);
            assert_eq!(
                program.answer("round"),
                ["Plain 30", "Branches 40", "Configured 40", "Caller 108"],
                "tiering {tiering}"
            );
            let plain = dial.state_of("Dial.Values::Plain");
            assert!(
                plain.contains("wants=scale(factor=3) default=file stage=active")
                    && plain.ends_with("(scale(factor=3))"),
                "{plain}"
            );
            let callee = dial.state_of("Dial.Inline::Callee");
            assert!(callee.contains("wants=offset(addend=2) "), "{callee}");
            assert_no_failure(&dial.ok("state"));
            drop(dial);
            finish_clean(program, 29);
        }
    })
}

// ---------------------------------------------------------------------------------------
// Framework types
// ---------------------------------------------------------------------------------------

/// Every method of 16 more framework types (collections, text, I/O, threading,
/// reflection, delegates, `Interlocked`'s intrinsics, a delegate type's runtime-provided
/// `Invoke`) gets `nop`, then `identity`, then the file's IL, one command per type each
/// time, with tiering off, while the program runs all its commands; it computes the same
/// results throughout, no version fails or falls back.
#[test]
fn every_method_of_many_framework_types_changes_twice_and_comes_back() {
    for_each_runtime(|rt| {
        const TYPES: [&str; 16] = [
            "System.Collections.Generic.List`1",
            "System.Text.StringBuilder",
            "System.IO.TextWriter",
            "System.IO.StreamWriter",
            "System.Threading.Monitor",
            "System.Number",
            "System.Func`1",
            "System.Object",
            "System.Threading.Interlocked",
            "System.Buffer",
            "System.SpanHelpers",
            "System.Exception",
            "System.Delegate",
            "System.RuntimeType",
            "System.Threading.Thread",
            "System.Reflection.Emit.ILGenerator",
        ];
        let socket = socket_in("framework");
        let mut program = start_dial(rt, CONFIG, &socket, "0");
        let mut dial = Dial::connect(&socket);
        assert_eq!(program.answer("round"), CONFIGURED_ROUND);
        let exercise = |program: &mut Interactive| {
            assert_eq!(program.answer("round"), CONFIGURED_ROUND);
            assert_eq!(program.answer("later"), ["Later 30"]);
            assert_eq!(program.answer("dynamic"), ["Emitted 7"]);
            assert_eq!(program.answer("hot 1000"), ["hot 1000 sum 106000"]);
            assert_eq!(program.answer("start 4"), ["started 4"]);
            let stopped = program.answer("stop");
            assert_eq!(stopped.len(), 3, "{stopped:?}");
            assert!(
                stopped[1].starts_with("seen Caller 106 count "),
                "{stopped:?}"
            );
            assert!(
                stopped[2].starts_with("seen Plain 10 count "),
                "{stopped:?}"
            );
            assert_eq!(program.answer("gc"), ["gc"]);
        };
        for method in ["nop", "identity"] {
            for ty in TYPES {
                dial.ok_in(&format!("instrument {ty}::* {method}"), &program);
            }
            exercise(&mut program);
            assert_no_failure(&dial.ok("state"));
        }
        for ty in TYPES {
            dial.ok_in(&format!("original {ty}::*"), &program);
        }
        exercise(&mut program);
        assert_no_failure(&dial.ok("state"));
        drop(dial);
        finish_clean(program, 29);
    })
}

// ---------------------------------------------------------------------------------------
// Hard method shapes
// ---------------------------------------------------------------------------------------

/// Methods with exception handling (a filter, a finally, a rethrow), a generic method
/// over value and reference types, a generic class's methods, a struct's method,
/// constructors, virtual and interface calls (through the overriding methods; the
/// abstract ones have no IL and change nothing), tiering on and off: each changes at its
/// next call and comes back. A recursion held 5,000 deep on another thread while its
/// method changes: the frames already on the stack finish in the old code (5,001), new
/// calls run the new one (`offset` at every level: 2 * (10 + 1)). A loop spinning in
/// another thread while its method changes: that call returns the old result (100), the
/// next call the new one (300).
#[test]
fn hard_method_shapes_change_from_their_next_call() {
    for_each_runtime(|rt| {
        for tiering in ["1", "0"] {
            let socket = socket_in(&format!("shapes{tiering}"));
            let mut program = start_hostile(rt, CONFIG, &socket, tiering);
            let mut dial = Dial::connect(&socket);
            assert_eq!(
                program.answer("eh"),
                ["Filter 20", "Finally 12", "Nested 141"]
            );
            let generic = program.answer("gen");
            assert_eq!(
                generic,
                [
                    "Tag int 50",
                    "Tag string 50",
                    "Tag pair 50",
                    "Cell int 60",
                    "Cell long 60",
                    "Cell string 60",
                    "Pair 7"
                ]
            );
            assert_eq!(program.answer("obj"), ["Obj 70"]);
            assert_eq!(program.answer("virt"), ["Area 90", "IArea 90", "Sides 4"]);

            dial.ok_in("instrument HostileDial.Eh::* scale", &program);
            assert_eq!(
                program.answer("eh"),
                ["Filter 40", "Finally 24", "Nested 282"],
                "tiering {tiering}"
            );
            dial.ok_in("instrument HostileDial.Gen::Tag scale", &program);
            dial.ok_in("instrument HostileDial.Cell`1::* scale factor=3", &program);
            dial.ok_in("instrument HostileDial.Pair::* scale factor=5", &program);
            assert_eq!(
                program.answer("gen"),
                [
                    "Tag int 100",
                    "Tag string 100",
                    "Tag pair 100",
                    "Cell int 180",
                    "Cell long 180",
                    "Cell string 180",
                    "Pair 35"
                ],
                "tiering {tiering}"
            );
            dial.ok_in("instrument HostileDial.Obj::* scale", &program);
            assert_eq!(program.answer("obj"), ["Obj 140"]);
            dial.ok_in("instrument HostileDial.Shape::* scale", &program);
            dial.ok_in("instrument HostileDial.IArea::* scale", &program);
            assert_eq!(program.answer("virt"), ["Area 90", "IArea 90", "Sides 4"]);
            dial.ok_in("instrument HostileDial.Square::* scale factor=3", &program);
            assert_eq!(
                program.answer("virt"),
                ["Area 270", "IArea 270", "Sides 12"]
            );

            assert_eq!(program.answer("hold 5000"), ["holding 5000"]);
            dial.ok_in("instrument HostileDial.Rec::* offset addend=1", &program);
            assert_eq!(program.answer("call 10"), ["Hold 22"]);
            assert_eq!(program.answer("deep 10"), ["Deep 22"]);
            assert_eq!(
                program.answer("release"),
                ["Held 5001"],
                "tiering {tiering}"
            );
            assert_eq!(program.answer("call 10"), ["Hold 22"]);

            assert_eq!(program.answer("spin"), ["spinning"]);
            dial.ok_in("instrument HostileDial.Spin::Loop scale factor=3", &program);
            assert_eq!(program.answer("unspin"), ["Spun 100"], "tiering {tiering}");
            assert_eq!(program.answer("loop"), ["Loop 300"], "tiering {tiering}");

            dial.ok_in("revert HostileDial.Eh::*", &program);
            assert_eq!(
                program.answer("eh"),
                ["Filter 20", "Finally 12", "Nested 141"]
            );
            dial.ok_in("original HostileDial.Gen::*", &program);
            dial.ok_in("revert HostileDial.Cell`1::*", &program);
            dial.ok_in("original HostileDial.Pair::*", &program);
            assert_eq!(program.answer("gen"), generic);
            dial.ok_in("revert HostileDial.Square::*", &program);
            assert_eq!(program.answer("virt"), ["Area 90", "IArea 90", "Sides 4"]);
            assert_no_failure(&dial.ok("state"));
            drop(dial);
            finish_clean(program, 43);
        }
    })
}

/// 8 threads call a method with a filtered catch, a generic method over `int` and over
/// `string` (shared code), a generic class's method and a virtual method, while two
/// connections change them 800 times each (instrument, revert, original, flags, state),
/// tiering on and off: every result is one some version gives, no command fails, and
/// after four last commands new threads see only what those ask.
#[test]
fn eight_threads_call_hard_shapes_while_two_connections_change_them() {
    for_each_runtime(|rt| {
        const COMMANDS: [&str; 11] = [
            "instrument HostileDial.Eh::Filter scale",
            "revert HostileDial.Eh::Filter",
            "instrument HostileDial.Gen::Tag scale",
            "original HostileDial.Gen::Tag",
            "instrument HostileDial.Cell`1::Get scale factor=3",
            "revert HostileDial.Cell`1::*",
            "instrument HostileDial.Square::Area scale factor=3",
            "revert HostileDial.Square::Area",
            "flags HostileDial.Gen::Tag no-optimizations",
            "flags HostileDial.Eh::* no-inlining",
            "state",
        ];
        for tiering in ["1", "0"] {
            let socket = socket_in(&format!("shapes-threads{tiering}"));
            let mut program = start_hostile(rt, CONFIG, &socket, tiering);
            assert_eq!(program.answer("start 8"), ["started 8"]);
            let fighters: Vec<_> = [3u64, 4]
                .into_iter()
                .map(|seed| {
                    let socket = socket.clone();
                    std::thread::spawn(move || {
                        let mut rng = Rng(0x2545_F491_4F6C_DD1D ^ seed);
                        let mut dial = Dial::connect(&socket);
                        let mut failures = Vec::new();
                        for _ in 0..800 {
                            let command = COMMANDS[rng.below(COMMANDS.len())];
                            if let Err(e) = dial.ask(command) {
                                failures.push(format!("{command}: {e}"));
                            }
                        }
                        failures
                    })
                })
                .collect();
            for fighter in fighters {
                let failures = fighter.join().expect("a fighter panicked");
                assert!(failures.is_empty(), "tiering {tiering}: {failures:#?}");
            }
            let valid = [
                "Area 90",
                "Area 270",
                "Cell 60",
                "Cell 180",
                "Filter 20",
                "Filter 40",
                "TagInt 50",
                "TagInt 100",
                "TagString 50",
                "TagString 100",
            ];
            let seen = |stopped: &[String]| -> Vec<String> {
                stopped[1..]
                    .iter()
                    .map(|line| {
                        let (seen, _) = line.rsplit_once(" count ").expect("seen ... count N");
                        seen.strip_prefix("seen ").expect("seen ...").to_owned()
                    })
                    .collect()
            };
            let stopped = program.answer("stop");
            for value in seen(&stopped) {
                assert!(
                    valid.contains(&value.as_str()),
                    "tiering {tiering}: {value} is no version's result: {stopped:?}"
                );
            }
            let mut dial = Dial::connect(&socket);
            for command in [
                "instrument HostileDial.Eh::Filter scale",
                "instrument HostileDial.Gen::Tag scale",
                "instrument HostileDial.Cell`1::Get scale factor=3",
                "instrument HostileDial.Square::Area scale factor=3",
            ] {
                dial.ok_in(command, &program);
            }
            assert_eq!(program.answer("start 2"), ["started 2"]);
            let stopped = program.answer("stop");
            assert_eq!(
                seen(&stopped),
                [
                    "Area 270",
                    "Cell 180",
                    "Filter 40",
                    "TagInt 100",
                    "TagString 100"
                ],
                "tiering {tiering}"
            );
            assert_no_failure(&dial.ok("state"));
            drop(dial);
            finish_clean(program, 43);
        }
    })
}

/// Methods never run when the dial changes them: a generic method and a generic
/// class's method (their instantiations over value and reference types compiled later),
/// a static constructor and the method it calls. Each first call runs what was wanted
/// (`Lazy 81`: the type initializer, with `identity`, stored `Compute() + 1`); what was
/// wanted later replaces it; tiering on and off.
#[test]
fn methods_never_run_get_what_was_wanted_at_their_first_call() {
    for_each_runtime(|rt| {
        for tiering in ["1", "0"] {
            let socket = socket_in(&format!("first{tiering}"));
            let mut program = start_hostile(rt, CONFIG, &socket, tiering);
            let mut dial = Dial::connect(&socket);
            assert_eq!(program.answer("obj"), ["Obj 70"]);
            dial.ok_in("instrument HostileDial.Gen::Tag scale", &program);
            dial.ok_in(
                "instrument HostileDial.Cell`1::Get scale factor=3",
                &program,
            );
            dial.ok_in("instrument HostileDial.Lazy::.cctor identity", &program);
            dial.ok_in(
                "instrument HostileDial.Lazy::Compute offset addend=1",
                &program,
            );
            let tags = |v: i64| {
                [
                    format!("Tag int {v}"),
                    format!("Tag string {v}"),
                    format!("Tag pair {v}"),
                ]
            };
            let cells = |v: i64| {
                [
                    format!("Cell int {v}"),
                    format!("Cell long {v}"),
                    format!("Cell string {v}"),
                ]
            };
            let generic = |program: &mut Interactive| program.answer("gen");
            let expect = |tag: i64, cell: i64| {
                let mut lines: Vec<String> = tags(tag).into();
                lines.extend(cells(cell));
                lines.push("Pair 7".to_owned());
                lines
            };
            assert_eq!(generic(&mut program), expect(100, 180), "tiering {tiering}");
            assert_eq!(program.answer("lazy"), ["Lazy 81"], "tiering {tiering}");
            assert_eq!(generic(&mut program), expect(100, 180));
            dial.ok_in("revert HostileDial.Gen::Tag", &program);
            assert_eq!(generic(&mut program), expect(50, 180), "tiering {tiering}");
            dial.ok_in("revert HostileDial.Cell`1::*", &program);
            assert_eq!(generic(&mut program), expect(50, 60), "tiering {tiering}");
            dial.ok_in("instrument HostileDial.Gen::Tag scale", &program);
            assert_eq!(generic(&mut program), expect(100, 60));
            dial.ok_in("original HostileDial.Gen::Tag", &program);
            assert_eq!(generic(&mut program), expect(50, 60));
            dial.ok_in(
                "instrument HostileDial.Gen::Tag offset addend=-50",
                &program,
            );
            assert_eq!(generic(&mut program), expect(0, 60));
            // The type initializer ran once: changing it again changes nothing that runs.
            dial.ok_in("original HostileDial.Lazy::*", &program);
            assert_eq!(program.answer("lazy"), ["Lazy 81"]);
            assert_no_failure(&dial.ok("state"));
            drop(dial);
            finish_clean(program, 43);
        }
    })
}

/// The first call of each of 64 methods never compiled races a request for it (the
/// request sent first, the call a varying few hundred microseconds later), tiering on
/// and off: the call returns the old result or the new one, the next call the new one,
/// every request is answered `ok`, and nothing hangs.
#[test]
fn first_calls_racing_requests_run_the_old_or_the_new_version() {
    for_each_runtime(|rt| {
        for tiering in ["0", "1"] {
            let socket = socket_in(&format!("race{tiering}"));
            let mut program = start_hostile(rt, CONFIG, &socket, tiering);
            assert_eq!(program.answer("obj"), ["Obj 70"]);
            let mut dial = Dial::connect(&socket);
            for i in 0..64 {
                let (sender, answer) = std::sync::mpsc::channel();
                let request = format!("instrument HostileDial.Fresh::M{i:02} scale factor=2");
                let mut connection = Dial::connect(&socket);
                let requester = std::thread::spawn(move || {
                    let _ = sender.send(connection.ask(&request));
                });
                std::thread::sleep(Duration::from_micros(150 * (i % 8)));
                let first = program.answer(&format!("fresh {i:02}"));
                let v = 1000 + i;
                let answered = answer
                    .recv_timeout(Duration::from_secs(60))
                    .unwrap_or_else(|_| panic!("M{i:02}: the request was not answered"));
                requester.join().expect("the requester");
                assert!(answered.is_ok(), "M{i:02}: {answered:?}");
                assert!(
                    first == [format!("Fresh {i:02} {v}")]
                        || first == [format!("Fresh {i:02} {}", 2 * v)],
                    "tiering {tiering}: {first:?}"
                );
                assert_eq!(
                    program.answer(&format!("fresh {i:02}")),
                    [format!("Fresh {i:02} {}", 2 * v)],
                    "tiering {tiering}: {}",
                    dial.state_of(&format!("HostileDial.Fresh::M{i:02}"))
                );
            }
            assert_no_failure(&dial.ok("state"));
            drop(dial);
            finish_clean(program, 43);
        }
    })
}

// ---------------------------------------------------------------------------------------
// The socket
// ---------------------------------------------------------------------------------------

/// Runs `Dial.exe` with `ILREWRITE_DIAL=socket` and checks that the dial did not listen:
/// a clear start-up error containing `why`, nothing rewritten (the program computes
/// its unprofiled results) and no socket made.
fn refused_at_start(rt: &Runtime, socket: &Path, why: &str) {
    let mut program = Interactive::start(profiled(rt, "Dial", &[], CONFIG, socket, "1", &[]));
    assert_eq!(
        program.answer("round"),
        UNPROFILED_ROUND,
        "{}",
        socket.display()
    );
    let out = program.finish();
    assert_eq!(out.status.code(), Some(29), "{}", out.stderr);
    assert!(
        out.stderr.contains("ilrewrite: the dial cannot listen: ")
            && out.stderr.contains(why)
            && out
                .stderr
                .contains("ilrewrite: no instrumentation method runs"),
        "{}: {}",
        socket.display(),
        out.stderr
    );
    assert!(!out.stderr.contains("dial listening"), "{}", out.stderr);
}

/// Socket paths at their limits: a path of 107 bytes (the most `sun_path` holds with
/// its NUL) listens and serves; 108 bytes, a directory that is a symbolic link (to a
/// directory of the user's with mode 0700), a directory whose parent does not exist,
/// a regular file where the socket goes (left as it was) and a path ending in `/` are
/// each a clear start-up error, and the program runs unprofiled.
#[test]
fn socket_paths_at_their_limits_fail_closed() {
    for_each_runtime(|rt| {
        let base = socket_in("paths");
        let base = base.parent().expect("a directory").to_path_buf();
        std::fs::create_dir_all(&base).expect("the base directory");
        std::fs::set_permissions(&base, std::os::unix::fs::PermissionsExt::from_mode(0o700))
            .expect("chmod");
        let dir = base.join("d");
        let at_length = |n: usize| {
            let prefix = format!("{}/", dir.display());
            assert!(
                prefix.len() < n - 4,
                "the target directory's path is too long"
            );
            PathBuf::from(format!("{prefix}{}", "s".repeat(n - prefix.len())))
        };
        // 107 bytes: listens.
        let socket = at_length(107);
        assert_eq!(socket.as_os_str().len(), 107);
        let mut program = start_dial(rt, CONFIG, &socket, "1");
        assert_eq!(program.answer("round"), CONFIGURED_ROUND);
        Dial::connect(&socket).ok("instrument Dial.Values::Plain scale factor=3");
        assert_eq!(value(&program.answer("round"), "Plain"), 30);
        finish_clean(program, 29);
        assert!(!socket.exists(), "the socket is removed at exit");
        // 108 bytes.
        let socket = at_length(108);
        refused_at_start(rt, &socket, "SUN_LEN");
        // A symbolic link to a directory of the user's, mode 0700.
        let real = base.join("real");
        std::fs::create_dir_all(&real).expect("a directory");
        std::fs::set_permissions(&real, std::os::unix::fs::PermissionsExt::from_mode(0o700))
            .expect("chmod");
        let link = base.join("link");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&real, &link).expect("a symbolic link");
        refused_at_start(rt, &link.join("dial.sock"), "symbolic link");
        assert!(!real.join("dial.sock").exists());
        // A directory whose parent does not exist.
        refused_at_start(rt, &base.join("none/sub/dial.sock"), "parent must exist");
        // A regular file where the socket goes.
        let occupied = base.join("occupied");
        std::fs::create_dir_all(&occupied).expect("a directory");
        std::fs::set_permissions(
            &occupied,
            std::os::unix::fs::PermissionsExt::from_mode(0o700),
        )
        .expect("chmod");
        std::fs::write(occupied.join("dial.sock"), "mine").expect("a file");
        refused_at_start(rt, &occupied.join("dial.sock"), "not a socket");
        assert_eq!(
            std::fs::read_to_string(occupied.join("dial.sock")).expect("the file"),
            "mine"
        );
        // A path ending in `/`.
        refused_at_start(
            rt,
            Path::new(&format!("{}/dial.sock/", base.display())),
            "names no file",
        );
    })
}

/// A second process given a dial path in use does not take it (a start-up error, run
/// unprofiled) and, when it exits, leaves the first one's socket, which still serves.
/// A socket left by a process killed with SIGKILL (stale: nothing listens) is replaced
/// by the next process's.
#[test]
fn a_dial_in_use_is_not_taken_and_a_stale_one_is_replaced() {
    for_each_runtime(|rt| {
        let socket = socket_in("shared");
        let mut first = start_dial(rt, CONFIG, &socket, "1");
        assert_eq!(first.answer("round"), CONFIGURED_ROUND);
        Dial::connect(&socket).ok("instrument Dial.Values::Plain scale factor=3");
        refused_at_start(rt, &socket, "in use");
        assert!(
            socket.exists(),
            "the second process removed the first one's socket"
        );
        Dial::connect(&socket).ok("instrument Dial.Values::Plain scale factor=5");
        assert_eq!(value(&first.answer("round"), "Plain"), 50);
        let pid = first.id();
        let killed = std::process::Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status()
            .expect("kill runs");
        assert!(killed.success());
        let out = first.finish();
        assert!(out.status.code().is_none(), "killed: {:?}", out.status);
        assert!(socket.exists(), "a stale socket is left");
        let mut third = start_dial(rt, CONFIG, &socket, "1");
        assert_eq!(third.answer("round"), CONFIGURED_ROUND);
        Dial::connect(&socket).ok("instrument Dial.Values::Plain scale factor=7");
        assert_eq!(value(&third.answer("round"), "Plain"), 70);
        finish_clean(third, 29);
    })
}

/// Connections at the limit: 16 are served; a 17th reads `error: busy: ...` (whether it
/// reads first or sends first); a connection that sends 300 `state` commands (each
/// answer about 170 lines) and reads nothing does not hold up another one's command;
/// closed connections free their places, also after 200 connections opened and closed
/// at once.
#[test]
fn connections_at_the_limit() {
    for_each_runtime(|rt| {
        let socket = socket_in("connections");
        let mut program = start_dial(rt, CONFIG, &socket, "1");
        assert_eq!(program.answer("round"), CONFIGURED_ROUND);
        let mut open: Vec<Dial> = (0..16).map(|_| Dial::connect(&socket)).collect();
        for dial in &mut open {
            dial.ok("help");
        }
        let mut busy = BufReader::new(UnixStream::connect(&socket).expect("connect"));
        let mut line = String::new();
        busy.read_line(&mut line).expect("a line");
        assert!(line.starts_with("error: busy: "), "{line:?}");
        let mut busy = UnixStream::connect(&socket).expect("connect");
        let _ = busy.write_all(b"state\n");
        let mut line = String::new();
        let _ = BufReader::new(busy).read_line(&mut line);
        assert!(line.starts_with("error: busy: "), "{line:?}");
        drop(open.pop());
        std::thread::sleep(Duration::from_millis(300));
        open[0].ok("instrument System.String::* nop");
        let mut silent = UnixStream::connect(&socket).expect("connect");
        silent
            .write_all("state\n".repeat(300).as_bytes())
            .expect("sent");
        std::thread::sleep(Duration::from_millis(500));
        let started = Instant::now();
        open[1].ok("instrument Dial.Values::Plain scale factor=3");
        assert_eq!(value(&program.answer("round"), "Plain"), 30);
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        drop(open);
        drop(silent);
        std::thread::sleep(Duration::from_millis(300));
        for _ in 0..200 {
            drop(UnixStream::connect(&socket).expect("connect"));
        }
        std::thread::sleep(Duration::from_millis(1000));
        let mut all: Vec<Dial> = (0..16).map(|_| Dial::connect(&socket)).collect();
        for dial in &mut all {
            dial.ok("help");
        }
        drop(all);
        finish_clean(program, 29);
    })
}

/// The program exits while three connections keep asking for changes of hundreds of
/// methods (and their state), three times with tiering on and off: it exits with its
/// own code at once, and every connection ends with the end of the stream or an error,
/// none waits.
#[test]
fn the_program_exits_while_commands_are_carried_out() {
    for_each_runtime(|rt| {
        const SPAM: [&str; 4] = [
            "instrument System.String::* nop",
            "original System.String::*",
            "instrument System.Collections.Generic.Dictionary`2::* identity",
            "state",
        ];
        for tiering in ["1", "0"] {
            for run in 0..3u64 {
                let socket = socket_in(&format!("exit{tiering}{run}"));
                let mut program = start_dial(rt, CONFIG, &socket, tiering);
                assert_eq!(program.answer("round"), CONFIGURED_ROUND);
                let spammers: Vec<_> = (0..3)
                    .map(|_| {
                        let socket = socket.clone();
                        std::thread::spawn(move || {
                            let mut dial = Dial::connect(&socket);
                            for i in 0.. {
                                match dial.ask(SPAM[i % SPAM.len()]) {
                                    Ok(_) => {}
                                    Err(e) if e.starts_with("CLOSED") => return e,
                                    Err(e) if e.contains("shutting down") => return e,
                                    Err(e) => panic!("{e}"),
                                }
                            }
                            unreachable!()
                        })
                    })
                    .collect();
                std::thread::sleep(Duration::from_millis(300 + 70 * run));
                let started = Instant::now();
                let out = program.finish();
                assert_eq!(out.status.code(), Some(29), "{}", out.stderr);
                assert!(
                    started.elapsed() < Duration::from_secs(10),
                    "{:?}",
                    started.elapsed()
                );
                for spammer in spammers {
                    let end = spammer.join().expect("a spammer panicked");
                    eprintln!("tiering {tiering} run {run}: {end}");
                }
            }
        }
    })
}

/// How the program ends in [`the_program_exits_at_random_points_under_load`].
#[derive(Debug, Clone, Copy)]
enum Exit {
    /// stdin closed: `Main` returns (code 29).
    Returns,
    /// `exit 57`: `Environment.Exit(57)` on a thread of its own while `Main` waits.
    Environment,
    /// `throw`: an unhandled exception on a thread of its own (the runtime aborts).
    Unhandled,
}

/// Waits until process `pid` (a child not yet waited for) has ended: its
/// `/proc/PID/stat` says zombie, or it is gone. Bounded by 60 s.
fn wait_for_end(pid: u32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => return true,
            Ok(stat) => {
                let state = stat
                    .rsplit(')')
                    .next()
                    .and_then(|r| r.split_whitespace().next());
                if state == Some("Z") {
                    return true;
                }
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    false
}

/// The harder exit test: eight connections keep changing `Dial.*` methods (called by
/// four threads meanwhile) and framework methods, and listing the state, and the
/// program ends at a random point (0 to 800 ms in) by each of the three ways a
/// program ends: `Main` returning, `Environment.Exit` from another managed thread, an
/// unhandled exception on another thread; four runs of each, tiering on and off. The
/// program ends as it would unprofiled (code 29, code 57, `SIGABRT` with the
/// exception on stderr), within 10 s (60 s for the abort, which the requests still
/// being made delay: see the test's body), never by another signal; every connection ends
/// with the end of the stream or `error: the profiler is shutting down`.
///
/// Before the shutdown gate (the ReJIT driver kept calling the runtime after
/// `Shutdown`), 1 of 62 of its program runs on CoreCLR 3.1.23 died of SIGSEGV in
/// `RequestReJITWithInliners` (an `Environment.Exit` run) and 0 of 63 on .NET 8.0.4;
/// the older test above crashed 1 of its first 6 runs on 3.1. `ILREWRITE_EXIT_RUNS`
/// sets the runs per tiering (6 by default; 100 on each runtime for an evidence run).
#[test]
fn the_program_exits_at_random_points_under_load() {
    for_each_runtime(|rt| {
        const SPAM: [&str; 10] = [
            "instrument Dial.Values::* nop",
            "original Dial.Values::*",
            "instrument Dial.Inline::* identity",
            "flags Dial.Values::* no-optimizations",
            "revert Dial.Inline::*",
            "instrument System.String::* nop",
            "state",
            "original System.String::*",
            "instrument Dial.Values::Plain scale factor=3",
            "revert Dial.Values::*",
        ];
        let runs: u64 = std::env::var("ILREWRITE_EXIT_RUNS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(6);
        let mut seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64)
            | 1;
        let mut random = move |below: u64| {
            // xorshift64: a different exit point every run, printed for a replay.
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % below
        };
        let mut ended = std::collections::BTreeMap::<String, usize>::new();
        for tiering in ["1", "0"] {
            for run in 0..runs {
                let exit = [Exit::Returns, Exit::Environment, Exit::Unhandled][(run % 3) as usize];
                let delay = Duration::from_millis(random(800));
                eprintln!("tiering {tiering} run {run}: {exit:?} after {delay:?}");
                let socket = socket_in(&format!("rexit{tiering}{run}"));
                let mut program = start_dial(rt, CONFIG, &socket, tiering);
                assert_eq!(program.answer("round"), CONFIGURED_ROUND);
                assert_eq!(program.answer("start 4"), ["started 4"]);
                let spammers: Vec<_> = (0..8)
                    .map(|c| {
                        let socket = socket.clone();
                        std::thread::spawn(move || {
                            let mut dial = Dial::connect(&socket);
                            for i in c.. {
                                match dial.ask(SPAM[i % SPAM.len()]) {
                                    Ok(_) => {}
                                    Err(e) if e.starts_with("CLOSED") => {
                                        return "closed".to_owned();
                                    }
                                    Err(e) if e == "the profiler is shutting down" => return e,
                                    Err(e) => panic!("{e}"),
                                }
                            }
                            unreachable!()
                        })
                    })
                    .collect();
                std::thread::sleep(delay);
                let started = Instant::now();
                let pid = program.id();
                match exit {
                    Exit::Returns => {}
                    Exit::Environment => program.send("exit 57"),
                    Exit::Unhandled => program.send("throw"),
                }
                if !matches!(exit, Exit::Returns) {
                    assert!(wait_for_end(pid), "the program did not end by itself");
                }
                let out = program.finish();
                let elapsed = started.elapsed();
                use std::os::unix::process::ExitStatusExt;
                match exit {
                    Exit::Returns => assert_eq!(out.status.code(), Some(29), "{}", out.stderr),
                    Exit::Environment => assert_eq!(out.status.code(), Some(57), "{}", out.stderr),
                    Exit::Unhandled => {
                        assert_eq!(out.status.signal(), Some(6), "{}", out.stderr);
                        assert!(
                            out.stderr.contains("Dial: thrown by request"),
                            "{}",
                            out.stderr
                        );
                    }
                }
                // No `Shutdown` comes before the abort, so the driver goes on making the
                // requests the connections ask for until the process dies, each suspending
                // the runtime: the abort then took 10 to more than 20 s on a machine
                // loaded 7-fold (and writing a core file adds to it). Slow, but the end
                // unprofiled; what this test guards there is the signal.
                let bound = match exit {
                    Exit::Unhandled => Duration::from_secs(60),
                    _ => Duration::from_secs(10),
                };
                assert!(elapsed < bound, "{exit:?}: {elapsed:?}");
                for spammer in spammers {
                    let end = spammer.join().expect("a spammer panicked");
                    *ended.entry(format!("{exit:?}: {end}")).or_default() += 1;
                }
            }
        }
        eprintln!("connections ended: {ended:?}");
    })
}

// ---------------------------------------------------------------------------------------
// Module unloads
// ---------------------------------------------------------------------------------------

/// `Unload.exe` loads and unloads its plugin 1,000 times while one connection, without
/// pause, changes every method of the plugin (nop, identity, the file's IL, the
/// configured instrumentation, flags) and lists the state; commands that find no loaded
/// plugin are refused, the others carried out. The program prints exactly its
/// unprofiled output and exits with its own code (every context unloads), nothing goes
/// unanswered, and nothing is asked of the runtime for the plugin's methods (it never
/// re-JIT-compiles a collectible method). Was broken on .NET 8.0.4 (issue 29): exit 98,
/// a context alive after 100 collections, in 4 of 15 and 10 of 12 runs: the requests
/// for the plugin's methods made the runtime walk the assemblies while a context
/// unloaded, and a reference-count race in CoreCLR left the context alive for good.
/// And on CoreCLR 3.1 (ignored until then, both tierings): those requests, racing a
/// method's first call, livelocked the main thread in the prestub (gdb: ThePreStub ->
/// PreStubWorker -> MethodDesc::DoPrestub -> DoBackpatch, 100% CPU; 3 of 9 runs at
/// 5895c3b, 8 of 8 at bccd8ae). Now no request is made for a plugin method: 8 of 8 runs
/// pass on 3.1.
#[test]
fn commands_race_a_thousand_plugin_reloads() {
    for_each_runtime(|rt| {
        const COMMANDS: [&str; 7] = [
            "instrument UnloadPlugin.Plugin::* nop",
            "state",
            "original UnloadPlugin.Plugin::*",
            "instrument UnloadPlugin.Plugin::Square identity",
            "revert UnloadPlugin.Plugin::*",
            "instrument UnloadPlugin.Plugin::Weigh nop flags=no-inlining",
            "flags UnloadPlugin.Plugin::* no-optimizations",
        ];
        for tiering in ["0", "1"] {
            let socket = socket_in(&format!("reload{tiering}"));
            let program = start_program(rt, "Unload", &["1000"], CONFIG, &socket, tiering, &[]);
            let mut dial = Dial::connect(&socket);
            let (mut done, mut refused) = (0u64, 0u64);
            let started = Instant::now();
            for i in 0.. {
                // Unprofiled or not, 1,000 cycles take a few seconds.
                if started.elapsed() > Duration::from_secs(45) {
                    let state = Dial::connect(&socket).ask("state");
                    panic!(
                        "tiering {tiering}: the program did not end; the dial's state: \
                     {state:#?}\n{}",
                        program.stderr_so_far()
                    );
                }
                match dial.ask(COMMANDS[i % COMMANDS.len()]) {
                    Ok(_) => done += 1,
                    Err(e) if e.starts_with("no loaded module") => refused += 1,
                    Err(e) if e.starts_with("CLOSED") || e == "the profiler is shutting down" => {
                        break;
                    }
                    Err(e) => panic!("{e}\n{}", program.stderr_so_far()),
                }
            }
            eprintln!("tiering {tiering}: {done} commands carried out, {refused} refused");
            assert!(done > 100, "{done}");
            let out = program.finish();
            assert_eq!(out.status.code(), Some(25), "{}", out.stderr);
            assert_eq!(out.stdout, expected_stdout("Unload"));
            assert_eq!(rejit_count(&out, "unanswered"), 0, "{}", out.stderr);
            assert_eq!(rejit_count(&out, "requested"), 0, "{}", out.stderr);
        }
    })
}

/// `Unload.exe 1000` while one connection asks, without pause, for every method of the
/// plugin to be compiled without optimizations (`flags`, which a first JIT cannot
/// give): every context unloads (exit 25, the unprofiled output), the runtime is asked
/// nothing for the plugin, and no plugin method's state is ever `requested`: each runs
/// what its first JIT gave, and says `failed ... 0x8013137e`
/// (`CORPROF_E_FUNCTION_IS_COLLECTIBLE`) where that is not what is wanted. Found broken
/// (issue 29, .NET 8.0.4): exit 98 in 3 of 8 runs (2 of 20 here) after 15 to 985
/// loads: every load was followed by ReJIT requests of its methods with inliners, which
/// the runtime never acted on, and which walk the assemblies while the context unloads
/// (`docs/design.md`, "Collectible contexts and ReJIT requests").
#[test]
fn flags_churn_on_a_plugin_lets_every_context_unload() {
    for_each_runtime(|rt| {
        for tiering in ["1", "0"] {
            let socket = socket_in(&format!("flags-churn{tiering}"));
            let program = start_program(rt, "Unload", &["1000"], CONFIG, &socket, tiering, &[]);
            let mut dial = Dial::connect(&socket);
            let (mut done, mut states) = (0u64, 0u64);
            let started = Instant::now();
            loop {
                assert!(
                    started.elapsed() < Duration::from_secs(60),
                    "tiering {tiering}: the program did not end\n{}",
                    program.stderr_so_far()
                );
                match dial.ask("flags UnloadPlugin.Plugin::* no-optimizations") {
                    Ok(_) => done += 1,
                    Err(e) if e.starts_with("no loaded module") => continue,
                    Err(e) if e.starts_with("CLOSED") || e == "the profiler is shutting down" => {
                        break;
                    }
                    Err(e) => panic!("{e}\n{}", program.stderr_so_far()),
                }
                match dial.ask("state") {
                    Ok(lines) => {
                        for line in lines.iter().filter(|l| l.contains("UnloadPlugin.")) {
                            states += 1;
                            assert!(
                                line.ends_with("stage=original")
                                    || line.ends_with("stage=failed at=request status=0x8013137e"),
                                "tiering {tiering}: {line}"
                            );
                        }
                    }
                    Err(e) if e.starts_with("CLOSED") || e == "the profiler is shutting down" => {
                        break;
                    }
                    Err(e) => panic!("{e}\n{}", program.stderr_so_far()),
                }
            }
            eprintln!("tiering {tiering}: {done} flags commands, {states} plugin states seen");
            assert!(done > 100 && states > 100, "{done} {states}");
            let out = program.finish();
            assert_eq!(out.status.code(), Some(25), "{}", out.stderr);
            assert_eq!(out.stdout, expected_stdout("Unload"));
            assert_eq!(rejit_count(&out, "requested"), 0, "{}", out.stderr);
            assert_eq!(rejit_count(&out, "unanswered"), 0, "{}", out.stderr);
        }
    })
}

// ---------------------------------------------------------------------------------------
// Tail calls
// ---------------------------------------------------------------------------------------

/// A method whose `tail.` call chain goes 10,000,000 deep (it overflows the stack
/// without the prefix) changed through the dial to `nop`, `identity` and `wrap`
/// (try/finally with managed probes: its tail call kept through a stub) and back to the
/// file's IL, tiering on and off: the chain still runs, so every version kept the
/// prefix.
#[test]
fn tail_calls_stay_tail_calls_in_every_version() {
    for_each_runtime(|rt| {
        let config = config_with(
            "[[method]]\nname = \"wrap\"\noptions = { filter = \"no method is named so\" }\n",
        );
        for tiering in ["1", "0"] {
            let socket = socket_in(&format!("tail{tiering}"));
            let mut program = start_program(rt, "HostileTail", &[], &config, &socket, tiering, &[]);
            let mut dial = Dial::connect(&socket);
            assert_eq!(program.answer("count"), ["count 10000000"]);
            for change in [
                "instrument HostileTail.Deep::Count nop",
                "instrument HostileTail.Deep::Count identity",
                "instrument HostileTail.Deep::Count wrap",
                "original HostileTail.Deep::Count",
            ] {
                dial.ok_in(change, &program);
                assert_eq!(
                    program.answer("count"),
                    ["count 10000000"],
                    "tiering {tiering}: {change}"
                );
            }
            assert_no_failure(&dial.ok("state"));
            drop(dial);
            finish_clean(program, 44);
        }
    })
}

// ---------------------------------------------------------------------------------------
// Defects these tests found: the fixed ones (regression tests), then the open ones
// (ignored, with their evidence)
// ---------------------------------------------------------------------------------------

/// The help (and README) say a selector names nested types `Namespace.Outer/Inner`:
/// `HostileDial.Outer/Inner::Value` (`Inner 110`) is selected and changes (220). Found
/// broken: the type was looked up among top-level types only, so no nested type could
/// be selected ("no loaded module has a method ...").
#[test]
fn a_nested_type_can_be_selected_as_the_help_says() {
    for_each_runtime(|rt| {
        let socket = socket_in("nested");
        let mut program = start_hostile(rt, CONFIG, &socket, "1");
        let mut dial = Dial::connect(&socket);
        assert_eq!(program.answer("nested"), ["Inner 110"]);
        let help = dial.ok("help").join("\n");
        assert!(
            help.contains("nested types are Namespace.Outer/Inner"),
            "{help}"
        );
        let answer = dial.ask("instrument HostileDial.Outer/Inner::Value scale");
        assert_eq!(answer, Ok(vec!["changed 1 method(s)".to_owned()]));
        assert_eq!(program.answer("nested"), ["Inner 220"]);
        finish_clean(program, 43);
    })
}

/// Tiering off: `Caller` was compiled with `Callee` inlined; `Callee` changes (Caller
/// recompiled with it: 116); `Caller` gets the flag `no-inlining` (still 116); then
/// `revert Dial.Inline::Caller` (back to its configured instrumentation, which it has
/// had all along) must keep calling the changed `Callee`: 116. Found broken: the revert
/// was a RequestRevert, which brought back Caller's first native code with the old
/// `Callee` inlined (106) while the state said Caller reverted and Callee active.
#[test]
fn reverting_a_caller_does_not_bring_back_a_stale_inlined_callee() {
    for_each_runtime(|rt| {
        let socket = socket_in("stale-inline");
        let mut program = start_dial(rt, CONFIG, &socket, "0");
        let mut dial = Dial::connect(&socket);
        assert_eq!(program.answer("hot 1000"), ["hot 1000 sum 106000"]);
        assert_eq!(value(&program.answer("round"), "Caller"), 106);
        dial.ok("instrument Dial.Inline::Callee scale factor=3");
        assert_eq!(value(&program.answer("round"), "Caller"), 116);
        dial.ok("flags Dial.Inline::Caller no-inlining");
        assert_eq!(value(&program.answer("round"), "Caller"), 116);
        dial.ok("revert Dial.Inline::Caller");
        let state = dial.ok("state").join("\n");
        assert_eq!(
            value(&program.answer("round"), "Caller"),
            116,
            "the state: {state}"
        );
        finish_clean(program, 29);
    })
}

/// `HostileTail.Deep::Count` ends in `tail. call ...; ret`. `scale` inserts its multiply
/// before the `ret`, which leaves the `tail.` call not followed by `ret`: invalid IL
/// (ECMA-335 III.2.4). The version must be refused before the runtime gets it (the
/// method keeps what it ran, the state says the wanted IL was not built), as the README
/// promises ("verified before the runtime gets it"); the program must not die. Found
/// broken: the version passed verification, and the next call threw
/// InvalidProgramException, which killed the process (SIGABRT).
#[test]
fn a_version_that_breaks_a_tail_call_is_not_handed_to_the_runtime() {
    for_each_runtime(|rt| {
        for tiering in ["1", "0"] {
            let socket = socket_in(&format!("tail-scale{tiering}"));
            let mut program = start_program(rt, "HostileTail", &[], CONFIG, &socket, tiering, &[]);
            let mut dial = Dial::connect(&socket);
            assert_eq!(program.answer("count"), ["count 10000000"]);
            dial.ok("instrument HostileTail.Deep::Count scale factor=2");
            assert_eq!(
                program.answer("count"),
                ["count 10000000"],
                "tiering {tiering}"
            );
            let state = dial.state_of("HostileTail.Deep::Count");
            assert!(state.contains("wanted IL not built"), "{state}");
            let out = program.finish();
            assert_eq!(out.status.code(), Some(44), "{}", out.stderr);
        }
    })
}

/// The configuration of the `faulty` tests: hosted for dial requests only (its filter
/// selects no method at first JIT). A request's options replace the configured ones, so
/// the requests say where it errs (`error_on=Plain`) and panics (`panic_on=Branches`).
fn faulty_config() -> String {
    config_with(
        "[[method]]\nname = \"faulty\"\npriority = -1\noptions = { filter = \"no method is named so\", error_on = \"Plain\", panic_on = \"Branches\" }\n",
    )
}

/// `Plain` runs a dial version (`scale factor=3`: 30), `Branches` another (`offset
/// addend=5`: 45); then `faulty` is asked of both, and its IL cannot be built. The
/// README: "if it cannot be built the method keeps what it ran before". They ran the
/// dial's versions: 30 and 45. Found broken: their default IL (the file's: 10 and 40)
/// was handed over, the state saying "(file); wanted IL not built".
#[test]
fn a_version_that_cannot_be_built_keeps_the_dial_version_it_ran_before() {
    for_each_runtime(|rt| {
        for tiering in ["1", "0"] {
            let socket = socket_in(&format!("fallback{tiering}"));
            let mut program = start_dial(rt, &faulty_config(), &socket, tiering);
            let mut dial = Dial::connect(&socket);
            assert_eq!(program.answer("round"), CONFIGURED_ROUND);
            dial.ok("instrument Dial.Values::Plain scale factor=3");
            dial.ok("instrument Dial.Values::Branches offset addend=5");
            assert_eq!(
                program.answer("round"),
                ["Plain 30", "Branches 45", "Configured 40", "Caller 106"]
            );
            dial.ok("instrument Dial.Values::Plain faulty error_on=Plain");
            dial.ok("instrument Dial.Values::Branches faulty panic_on=Branches");
            let round = program.answer("round");
            let state = dial.ok("state").join("\n");
            assert_eq!(
                round,
                ["Plain 30", "Branches 45", "Configured 40", "Caller 106"],
                "tiering {tiering}: {state}"
            );
            let plain = dial.state_of("Dial.Values::Plain");
            assert!(
                plain.contains("(scale(factor=3)); wanted IL not built"),
                "{plain}"
            );
            drop(dial);
            let out = program.finish();
            assert_eq!(out.status.code(), Some(29), "{}", out.stderr);
        }
    })
}

/// `faulty` cannot be built for `Plain`, which falls back to the file's IL (10) and the
/// state says so. Then `revert Dial.Values::Plain`: what is wanted (the file's IL) is
/// what runs, no runtime call is needed, so no failure remains to report. Found broken:
/// the state kept "wanted IL not built" after the revert and after `original`.
#[test]
fn the_state_forgets_a_build_failure_once_what_is_wanted_runs() {
    for_each_runtime(|rt| {
        let socket = socket_in("stale-failure");
        let mut program = start_dial(rt, &faulty_config(), &socket, "1");
        let mut dial = Dial::connect(&socket);
        assert_eq!(program.answer("round"), CONFIGURED_ROUND);
        dial.ok("instrument Dial.Values::Plain faulty error_on=Plain");
        assert_eq!(value(&program.answer("round"), "Plain"), 10);
        let state = dial.state_of("Dial.Values::Plain");
        assert!(state.contains("wanted IL not built"), "{state}");
        dial.ok("revert Dial.Values::Plain");
        assert_eq!(value(&program.answer("round"), "Plain"), 10);
        let state = dial.state_of("Dial.Values::Plain");
        assert!(
            state.contains("wants=file default=file") && !state.contains("not built"),
            "{state}"
        );
        dial.ok("original Dial.Values::Plain");
        let state = dial.state_of("Dial.Values::Plain");
        assert!(!state.contains("not built"), "{state}");
        drop(dial);
        program.finish();
    })
}

/// `wrap` never wraps the methods its managed probes call (`Interlocked`'s: "a wrapped
/// one would call itself"): it `refuses` them. A dial request for
/// `System.Threading.Interlocked::Add wrap` must not force the edit; then `Plain`
/// wrapped runs its probe and returns 10. (Was broken: the request overrode `wants`,
/// wrapped `Interlocked.Add` and `Plain`'s next call recursed until the stack overflowed.)
#[test]
fn a_request_does_not_make_a_method_edit_what_it_refuses() {
    for_each_runtime(|rt| {
        let config = config_with(
            "[[method]]\nname = \"wrap\"\noptions = { filter = \"no method is named so\" }\n",
        );
        for tiering in ["1", "0"] {
            let socket = socket_in(&format!("wrap-own{tiering}"));
            let mut program = start_dial(rt, &config, &socket, tiering);
            let mut dial = Dial::connect(&socket);
            assert_eq!(program.answer("round"), CONFIGURED_ROUND);
            dial.ok("instrument System.Threading.Interlocked::Add wrap");
            dial.ok("instrument Dial.Values::Plain wrap");
            assert_eq!(
                program.answer("round"),
                CONFIGURED_ROUND,
                "tiering {tiering}"
            );
            drop(dial);
            let out = program.finish();
            assert_eq!(out.status.code(), Some(29), "{}", out.stderr);
        }
    })
}

/// `faulty` declares the options `panic_on` and `error_on`, so a request may give them
/// (it is accepted, and the state shows them); it must then panic on (or err on) the
/// methods they name: `Plain` keeps 10, and the state says the wanted IL was not built.
/// (Was broken: `faulty` read them only from its configured options at start.)
#[test]
fn a_request_option_the_method_declares_takes_effect() {
    for_each_runtime(|rt| {
        let config = config_with(
            "[[method]]\nname = \"faulty\"\npriority = -1\noptions = { filter = \"no method is named so\" }\n",
        );
        let socket = socket_in("faulty-options");
        let mut program = start_dial(rt, &config, &socket, "1");
        let mut dial = Dial::connect(&socket);
        assert_eq!(program.answer("round"), CONFIGURED_ROUND);
        dial.ok("instrument Dial.Values::Plain faulty panic_on=Plain");
        let state = dial.state_of("Dial.Values::Plain");
        assert!(state.contains("wants=faulty(panic_on=Plain)"), "{state}");
        assert_eq!(value(&program.answer("round"), "Plain"), 10, "{state}");
        drop(dial);
        program.finish();
    })
}

/// `scale` multiplies a method's `int32` result: `Choice::Pick(1)` returns `x >= 0 ? 130
/// : 0`, whose 130 reaches the `ret` by a branch; scaled by 3 it must answer 390 (the
/// state says the version with `scale(factor=3)` is active). (Was broken: the code went
/// before the `ret` with `Incoming::Keep`, which the branch skipped.)
#[test]
fn scale_changes_a_result_that_branches_to_the_ret() {
    for_each_runtime(|rt| {
        let socket = socket_in("pick");
        let mut program = start_hostile(rt, CONFIG, &socket, "1");
        let mut dial = Dial::connect(&socket);
        assert_eq!(program.answer("pick"), ["Pick 130"]);
        dial.ok("instrument HostileDial.Choice::Pick scale factor=3");
        let answer = program.answer("pick");
        let state = dial.state_of("HostileDial.Choice::Pick");
        assert!(state.contains("stage=active"), "{state}");
        assert_eq!(answer, ["Pick 390"], "{state}");
        drop(dial);
        finish_clean(program, 43);
    })
}

/// Three `Unload.exe` runs of 3,000 cycles at once (two cores: the runtime's threads
/// compete), each with a dial request for `UnloadPlugin.Plugin::Square` that follows the
/// plugin through its reloads: each must end in its usual time. Found broken
/// (intermittent, about 1 run in 20, also in clr_rejit's 3,000-reload test): the reload
/// policy requested a ReJIT in every new module, racing the method's first call, and the
/// main thread livelocked in CoreCLR 3.1's prestub (ThePreStub -> PreStubWorker ->
/// MethodDesc::DoPrestub -> DoBackpatch, 100% CPU) with the new load's record at
/// "wants=nop() default=nop() stage=requested". Now the wish is applied at the first JIT
/// with no request, and no request is ever made for a method of a collectible module
/// (the runtime never acts on one): [`commands_race_a_thousand_plugin_reloads`]. A
/// request for an ordinary module's method racing its first call may still meet the
/// livelock on 3.1.
#[test]
fn reloads_racing_requests_never_livelock_the_prestub() {
    for_each_runtime(|rt| {
        const CYCLES: &str = "3000";
        let runs: Vec<_> = (0..3)
            .map(|run| {
                std::thread::spawn(move || {
                    let socket = socket_in(&format!("livelock{run}"));
                    let program = start_program(rt, "Unload", &[CYCLES], CONFIG, &socket, "0", &[]);
                    let mut dial = Dial::connect(&socket);
                    let started = Instant::now();
                    loop {
                        match dial.ask("instrument UnloadPlugin.Plugin::Square nop") {
                            Ok(_) => break,
                            Err(e) if e.starts_with("no loaded module") => {
                                assert!(started.elapsed() < Duration::from_secs(30));
                                std::thread::sleep(Duration::from_millis(1));
                            }
                            Err(e) => panic!("{e}"),
                        }
                    }
                    drop(dial);
                    // The runs take about 25 s at once; a livelocked one never ends.
                    let deadline = Instant::now() + Duration::from_secs(90);
                    let ended = |pid: u32| {
                        std::fs::read_to_string(format!("/proc/{pid}/stat"))
                            .map_or(true, |stat| stat.contains(") Z "))
                    };
                    while !ended(program.id()) && Instant::now() < deadline {
                        std::thread::sleep(Duration::from_millis(100));
                    }
                    if !ended(program.id()) {
                        let state = Dial::connect(&socket).ask("state");
                        let stderr = program.stderr_so_far();
                        drop(program); // kills it
                        panic!("run {run} hung; the dial's state: {state:?}\n{stderr}");
                    }
                    let out = program.finish();
                    assert_eq!(out.status.code(), Some(25), "{}", out.stderr);
                })
            })
            .collect();
        for run in runs {
            run.join().expect("a run failed");
        }
    })
}

//! The cost of ReJIT through the sample profiler's live dial, inside a real process:
//! `tests/programs/bin/Dial.exe` runs under the sample profiler (`scale` doubles the
//! methods of `Dial.Values` at their first JIT) with its dial on, and this
//! program drives both.
//!
//! ```text
//! cargo build --release --features clr --example profiler
//! cargo run --release --features clr --example dial_bench [-- -n CYCLES]
//! ```
//!
//! Per cycle it asks the dial to instrument `Dial.Values::Plain` (`offset`), then to
//! revert it, and after each change makes the program call its methods (`round`):
//!
//! * **dial → ok**: from sending the command to the dial's `ok`, when the runtime has
//!   been asked (`RequestReJIT` or `RequestRevert` returned: the next call runs the new
//!   code);
//! * **first round**: the first `round` after the change, which re-JIT-compiles `Plain`
//!   at its first call (`GetReJITParameters`, the JIT) after an instrument, and only
//!   switches code after a revert; against **next round**, one more `round` at once,
//!   whose calls run compiled code: their difference is what the change costs the
//!   first call;
//! * **to new code**: dial → ok plus that difference: from the command to the first
//!   call having run the new code.
//!
//! Then, from the profiler's report, what one method's IL costs in the runtime's
//! callback: a ReJIT version (`GetReJITParameters`: the machine's answer, the pipeline
//! from the pristine IL, `SetILFunctionBody` on the function control) against a
//! first-JIT rewrite of the same kind of method (`JITCompilationStarted` callbacks
//! that handed a body over, timed by `ILREWRITE_TIMING`), and the pipeline's phases.
//! Tiering is on by default (`-t 0` turns it off); `-c 0` leaves `Plain` out of the
//! configuration, so that its versions run `offset` alone. It prints medians and 90th
//! percentiles, all from one run.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

const CLSID: &str = "{8C1E2D4F-3B6A-4E59-A7C2-1F0D9B3E6A51}";

/// The configuration: `scale` doubles the methods its filter selects at their first JIT
/// (`FILTER`); `offset` only through the dial.
const CONFIG: &str = r#"
[[method]]
name = "scale"
options = { filter = "FILTER" }

[[method]]
name = "offset"
"#;

/// The program, driven through stdin and stdout.
struct Program {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Program {
    /// Sends `command`; the answer's lines up to `done`.
    fn answer(&mut self, command: &str) -> Result<Vec<String>, String> {
        writeln!(self.stdin, "{command}").map_err(|e| format!("to the program: {e}"))?;
        self.stdin.flush().map_err(|e| e.to_string())?;
        let mut lines = Vec::new();
        loop {
            let mut line = String::new();
            if self
                .stdout
                .read_line(&mut line)
                .map_err(|e| e.to_string())?
                == 0
            {
                return Err(format!("the program ended during {command:?}"));
            }
            match line.trim_end() {
                "done" => return Ok(lines),
                other => lines.push(other.to_owned()),
            }
        }
    }
}

/// A connection to the dial.
struct Dial(BufReader<UnixStream>);

impl Dial {
    fn ok(&mut self, command: &str) -> Result<(), String> {
        writeln!(self.0.get_mut(), "{command}").map_err(|e| format!("to the dial: {e}"))?;
        loop {
            let mut line = String::new();
            if self.0.read_line(&mut line).map_err(|e| e.to_string())? == 0 {
                return Err(format!("the dial closed during {command:?}"));
            }
            match line.trim_end() {
                "ok" => return Ok(()),
                error if error.starts_with("error: ") => {
                    return Err(format!("{command:?}: {error}"));
                }
                _ => {}
            }
        }
    }
}

/// The sample profiler next to this example.
fn sample_profiler() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let path = exe.parent()?.join(format!(
        "{}profiler{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    ));
    path.is_file().then_some(path)
}

fn percentile(mut values: Vec<f64>, p: f64) -> f64 {
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => f64::NAN,
        n => values[((n - 1) as f64 * p).round() as usize],
    }
}

fn row(name: &str, values: &[f64]) {
    println!(
        "{name:<34} {:>10.3} {:>10.3}",
        percentile(values.to_vec(), 0.5),
        percentile(values.to_vec(), 0.9)
    );
}

/// The value of `name` in the profiler's `ilrewrite: PREFIX name N ...` line.
fn counter(stderr: &str, prefix: &str, name: &str) -> Option<f64> {
    let line = stderr
        .lines()
        .find_map(|l| l.strip_prefix(&format!("ilrewrite: {prefix} ")))?;
    let words: Vec<&str> = line.split(' ').collect();
    words
        .windows(2)
        .find(|w| w[0] == name)
        .and_then(|w| w[1].parse().ok())
}

fn run(cycles: usize, tiering: &str, configured: bool) -> Result<(), String> {
    // With `configured`, `Plain` is doubled at its first JIT and its versions compose
    // `scale` and `offset` (each asked whether it wants the method: a name lookup);
    // without, they run `offset` alone.
    let (filter, instrumented, plain) = match configured {
        true => ("Dial.Values::", 25, 20),
        false => ("Dial.Values::Configured", 15, 10),
    };
    let profiler = sample_profiler().ok_or(
        "the sample profiler is not built: cargo build --release --features clr --example profiler",
    )?;
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let program = root.join("tests/programs/bin/Dial.exe");
    let scratch = std::env::temp_dir().join(format!("ilrewrite-dial-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch).map_err(|e| e.to_string())?;
    let config = scratch.join("config.toml");
    std::fs::write(&config, CONFIG.replace("FILTER", filter)).map_err(|e| e.to_string())?;
    // The dial's own directory, made by the profiler (mode 0700).
    let socket = scratch.join("dial").join("dial.sock");
    let stderr_file = scratch.join("stderr.txt");
    let dotnet = ilrewrite_corpus::default_runtime()
        .map_err(|e| e.to_string())?
        .command();
    let mut cmd = Command::new(dotnet.get_program());
    cmd.args(dotnet.get_args())
        .envs(dotnet.get_envs().filter_map(|(k, v)| Some((k, v?))))
        .arg(&program)
        .current_dir(program.parent().unwrap_or(root))
        .env("CORECLR_ENABLE_PROFILING", "1")
        .env("CORECLR_PROFILER", CLSID)
        .env("CORECLR_PROFILER_PATH", &profiler)
        .env("ILREWRITE_CONFIG", &config)
        .env("ILREWRITE_DIAL", &socket)
        .env("ILREWRITE_TIMING", "1")
        .env("COMPlus_TieredCompilation", tiering)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&stderr_file).map_err(|e| e.to_string())?);
    let mut child = cmd.spawn().map_err(|e| format!("{cmd:?}: {e}"))?;
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err("no pipes".to_owned());
    };
    let mut program = Program {
        child,
        stdin,
        stdout: BufReader::new(stdout),
    };
    // The profiler attached and listens once `round` answers and the socket exists.
    let first = program.answer("round")?;
    let started = Instant::now();
    while !socket.exists() && started.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut dial = Dial(BufReader::new(
        UnixStream::connect(&socket).map_err(|e| format!("{}: {e}", socket.display()))?,
    ));
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let (mut command, mut first_round, mut next_round, mut to_new) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for cycle in 0..=cycles {
        for (change, plain) in [
            (
                "instrument Dial.Values::Plain offset addend=5",
                instrumented,
            ),
            ("revert Dial.Values::Plain", plain),
        ] {
            let t0 = Instant::now();
            dial.ok(change)?;
            let t1 = Instant::now();
            let after = program.answer("round")?;
            let t2 = Instant::now();
            program.answer("round")?;
            let t3 = Instant::now();
            if !after.iter().any(|l| *l == format!("Plain {plain}")) {
                return Err(format!("after {change:?}: {after:?} (before: {first:?})"));
            }
            if cycle > 0 {
                // The first cycle warms up (the dial's connection, the JIT of the round).
                command.push(ms(t1 - t0));
                first_round.push(ms(t2 - t1));
                next_round.push(ms(t3 - t2));
                to_new.push(ms(t1 - t0) + (ms(t2 - t1) - ms(t3 - t2)).max(0.0));
            }
        }
    }
    drop(dial);
    drop(program.stdin);
    let status = program.child.wait().map_err(|e| e.to_string())?;
    let stderr = std::fs::read_to_string(&stderr_file).map_err(|e| e.to_string())?;
    let _ = std::fs::remove_dir_all(&scratch);
    if status.code() != Some(29) {
        return Err(format!("the program ended with {status}:\n{stderr}"));
    }
    println!(
        "Dial.exe, tiering {tiering}, Plain {}: {cycles} cycles of instrument + revert of \
         one method (ms; median, p90)",
        match configured {
            true => "configured (scale) + offset",
            false => "offset alone",
        }
    );
    println!("{:<34} {:>10} {:>10}", "", "median", "p90");
    row("dial command -> ok", &command);
    row("first round after the change", &first_round);
    row("next round", &next_round);
    row("command -> first call on new code", &to_new);
    let parameters = counter(&stderr, "rejit", "parameters").unwrap_or(f64::NAN);
    let parameters_ns = counter(&stderr, "rejit", "parameters-ns").unwrap_or(f64::NAN);
    let (first_ns, first_n) = stderr
        .lines()
        .find_map(|l| {
            let rest = l.strip_prefix("ilrewrite: timing ")?;
            let rest = rest.strip_suffix(" rewriting callbacks")?;
            let mut words = rest.split(' ');
            let ns: f64 = words.next()?.parse().ok()?;
            let n: f64 = words.nth(2)?.parse().ok()?;
            Some((ns, n))
        })
        .ok_or_else(|| format!("no timing of rewriting callbacks:\n{stderr}"))?;
    let rejit_us = parameters_ns / parameters / 1e3;
    let first_us = first_ns / first_n / 1e3;
    println!(
        "GetReJITParameters: {rejit_us:.2} us per version ({parameters} versions); first-JIT \
         rewrite: {first_us:.2} us per method ({first_n} methods); ratio {:.2}",
        rejit_us / first_us
    );
    println!("pipeline phases, first JITs and ReJIT versions together (ns per rewrite):");
    let rewrites = parameters + first_n;
    for line in stderr.lines() {
        if let Some(rest) = line.strip_prefix("ilrewrite: timing phase ")
            && let Some((ns, phase)) = rest.split_once(" ns ")
            && let Ok(ns) = ns.parse::<f64>()
        {
            println!("  {:>9.0}  {phase}", ns / rewrites);
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let mut cycles = 200;
    let mut tiering = "1".to_owned();
    let mut configured = true;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match (arg.as_str(), args.next()) {
            ("-n", Some(n)) if n.parse::<usize>().is_ok_and(|n| n > 0) => {
                cycles = n.parse().unwrap_or(cycles);
            }
            ("-t", Some(t)) if t == "0" || t == "1" => tiering = t,
            ("-c", Some(c)) if c == "0" || c == "1" => configured = c == "1",
            _ => {
                eprintln!("usage: dial_bench [-n CYCLES] [-t 0|1] [-c 0|1]");
                return ExitCode::from(2);
            }
        }
    }
    match run(cycles, &tiering, configured) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("dial_bench: {e}");
            ExitCode::FAILURE
        }
    }
}

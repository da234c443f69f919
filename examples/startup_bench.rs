//! The start-up cost of instrumenting a few named methods with ReadyToRun code kept
//! (issue 31): whole processes, on each pinned runtime (`target/dotnet-8.0.4` and
//! `target/dotnet-3.1.23`, with the environment the tests use), for three programs of
//! growing size (`tests/programs/bin/Answer.exe`, hello-sized; `Features.exe`, an
//! application's worth of LINQ, Regex, async and exceptions; `Concurrency.exe`, 32
//! threads making about 2,200 JIT compilations of generic instantiations), each run
//!
//! * `unprofiled`;
//! * `attached`: the sample profiler (`examples/profiler/`) with `ready_to_run = "keep"`
//!   hosting `calls` with no targets: the cost of loading a profiler and of its
//!   callbacks (module loads, JIT compilations), with no ReJIT;
//! * `lookups`: the same with the targets of `kept` renamed so that they name no method
//!   (the same types, `::Method` changed to `::Method_none`): ReJIT on and every
//!   module's look-ups by name, with nothing requested;
//! * `program`: only the targets of `kept` that are the program's own (in its JIT-only
//!   module: edited at their first JIT, nothing requested): what `kept` costs beyond
//!   `lookups` apart from the framework's targets;
//! * `kept`: `calls` on about 20 named targets, methods of the program and of the
//!   framework (`` Dictionary`2::TryGetValue ``, `String::Concat`, `` List`1::Add ``,
//!   `StringBuilder::Append`, `Console::WriteLine`, ...), `ready_to_run = "keep"`: the
//!   targets in precompiled modules are re-JIT-compiled (only they), those of the
//!   program JIT-compiled edited;
//! * `disabled`: the same targets with `ready_to_run = "disable"`: every method the
//!   process runs is JIT-compiled.
//!
//! ```text
//! cargo build --release --features clr --example profiler -j2
//! cargo run --release --features clr --example startup_bench [-- -n ROUNDS]
//! ```
//!
//! Rounds (7 by default, after one untimed warm-up round) are interleaved: in each, every
//! runtime × program runs every variant once (in an order that rotates from round to
//! round), so that a change in machine load hits them alike. Every run's exit code and
//! stdout must be the program's own (`tests/programs/expected/`), and the profiler must
//! have attached (its `ilrewrite: mode` line on stderr): a failed run stops the
//! benchmark. Tiered compilation is left on (the runtime's default: what start-up costs
//! in practice).
//!
//! It prints, per runtime × program and variant: the median CPU time (user and system,
//! all threads, from bash's `time`: steadier than wall time on a busy machine) and its
//! ratio to `unprofiled` (the ratio of each round's pair, then the median), the same
//! for wall time, and from the profiler's summary the compilations it saw, the targets
//! it asked ReJIT for as their modules loaded, the re-JIT compilations, and how many
//! targets were called (from the `calls` lines at shutdown).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use ilrewrite_corpus::Runtime;

const CLSID: &str = "{8C1E2D4F-3B6A-4E59-A7C2-1F0D9B3E6A51}";

/// The variables that make CoreCLR load a profiler: removed from every run first.
const PROFILER_VARS: &[&str] = &[
    "CORECLR_ENABLE_PROFILING",
    "CORECLR_PROFILER",
    "CORECLR_PROFILER_PATH",
    "CORECLR_PROFILER_PATH_32",
    "CORECLR_PROFILER_PATH_64",
    "CORECLR_PROFILER_PATH_ARM32",
    "CORECLR_PROFILER_PATH_ARM64",
    "ILREWRITE_CONFIG",
    "ILREWRITE_MODE",
    "ILREWRITE_TIMING",
];

/// Framework targets of every program: called at start-up or by the programs' output.
const FRAMEWORK: &[&str] = &[
    "System.Collections.Generic.Dictionary`2::TryGetValue",
    "System.Collections.Generic.Dictionary`2::Add",
    "System.String::Concat",
    "System.Collections.Generic.List`1::Add",
    "System.Text.StringBuilder::Append",
    "System.Console::WriteLine",
    "System.String::Format",
    "System.Int32::ToString",
    "System.String::IndexOf",
    "System.String::Substring",
    "System.Environment::GetEnvironmentVariable",
    "System.AppContext::Setup",
    "System.IO.StreamWriter::Flush",
];

/// A program and its own targets (methods of the program, and framework methods it
/// calls beyond [`FRAMEWORK`]).
struct Program {
    name: &'static str,
    exit: i32,
    targets: &'static [&'static str],
}

const PROGRAMS: [Program; 3] = [
    Program {
        name: "Answer",
        exit: 41,
        targets: &[
            "Answer::Get",
            "Program::Main",
            "System.Console::get_Out",
            "System.AppContext::GetData",
            "System.String::Equals",
            "System.String::ToLowerInvariant",
            "System.Collections.Generic.Dictionary`2::.ctor",
        ],
    },
    Program {
        name: "Features",
        exit: 11,
        targets: &[
            "Features.Program::Main",
            "Features.Program::Section",
            "Features.Program::Fib",
            "Features.Program::Ackermann",
            "Features.Box`1::Map",
            "System.Linq.Enumerable::Select",
            "System.Text.RegularExpressions.Regex::IsMatch",
            "System.Threading.Tasks.Task::Delay",
            "System.String::Join",
        ],
    },
    Program {
        name: "Concurrency",
        exit: 18,
        targets: &[
            "Concurrency.Program::Main",
            "Concurrency.Program::Work",
            "Concurrency.Driver`1::Run",
            "Concurrency.Gen::G0",
            "Concurrency.Gen::G9",
            "Concurrency.C0`1::M",
            "System.Threading.Thread::Start",
            "System.Threading.Barrier::SignalAndWait",
            "System.Int64::ToString",
        ],
    },
];

/// The variants, in the order of the table.
const VARIANTS: [&str; 6] = [
    "unprofiled",
    "attached",
    "lookups",
    "program",
    "kept",
    "disabled",
];
/// The index of `kept` in [`VARIANTS`].
const KEPT: usize = 4;

impl Program {
    fn exe(&self) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/programs/bin")
            .join(format!("{}.exe", self.name))
    }

    fn expected_stdout(&self) -> Result<String, String> {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/programs/expected")
            .join(format!("{}.out", self.name));
        std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Every target of the program: [`FRAMEWORK`]'s and its own.
    fn all_targets(&self) -> Vec<&'static str> {
        FRAMEWORK.iter().chain(self.targets).copied().collect()
    }

    /// The configuration file of `variant` (`None` for `unprofiled`).
    fn config(&self, variant: &str) -> Result<Option<PathBuf>, String> {
        let (ready_to_run, targets) = match variant {
            "unprofiled" => return Ok(None),
            "attached" => ("keep", Vec::new()),
            "lookups" => (
                "keep",
                self.all_targets()
                    .iter()
                    .map(|t| format!("{t}_none"))
                    .collect(),
            ),
            "program" => (
                "keep",
                self.all_targets()
                    .iter()
                    .filter(|t| !t.starts_with("System."))
                    .map(|t| t.to_string())
                    .collect(),
            ),
            "kept" => (
                "keep",
                self.all_targets().iter().map(|t| t.to_string()).collect(),
            ),
            "disabled" => (
                "disable",
                self.all_targets().iter().map(|t| t.to_string()).collect(),
            ),
            other => return Err(format!("unknown variant {other}")),
        };
        let quoted: Vec<String> = targets.iter().map(|t| format!("{t:?}")).collect();
        let text = format!(
            "[manager]\nready_to_run = \"{ready_to_run}\"\n\n[[method]]\nname = \"calls\"\n\
             options = {{ targets = [{}] }}\n",
            quoted.join(", ")
        );
        let path = std::env::temp_dir().join(format!(
            "ilrewrite-startup-{}-{}-{variant}.toml",
            std::process::id(),
            self.name
        ));
        std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(Some(path))
    }
}

/// One run's figures.
struct Run {
    wall: Duration,
    /// User plus system CPU time of the process (all its threads).
    cpu: Duration,
    /// From the profiler's summary (profiled runs).
    summary: Option<Summary>,
}

/// What the profiler's summary says.
struct Summary {
    /// Compilations the manager saw (`ilrewrite: manager compilations N`).
    compilations: u64,
    /// Targets requested as their precompiled modules loaded.
    at_load: Option<u64>,
    /// Re-JIT compilations.
    rejit_compiled: Option<u64>,
    /// Nanoseconds in `GetReJITParameters` (building the re-JIT-compiled bodies).
    rejit_parameters_ns: Option<u64>,
    /// ReJIT errors.
    rejit_errors: Option<u64>,
    /// Calls per target method name (the `calls` lines).
    calls: BTreeMap<String, u64>,
}

/// The number after `key` on the stderr line starting with `ilrewrite: PREFIX `.
fn number(stderr: &str, prefix: &str, key: &str) -> Option<u64> {
    let line = stderr
        .lines()
        .find_map(|l| l.strip_prefix(&format!("ilrewrite: {prefix} ")))?;
    let words: Vec<&str> = line.split_whitespace().collect();
    words
        .windows(2)
        .find(|w| w[0] == key)
        .and_then(|w| w[1].parse().ok())
}

fn summary(stderr: &str) -> Option<Summary> {
    let mut calls = BTreeMap::new();
    for line in stderr.lines() {
        let Some(rest) = line.strip_prefix("ilrewrite: calls ") else {
            continue;
        };
        // `NAME window N total N`; `overflow N` is not a target.
        let Some((name, counts)) = rest.split_once(" window ") else {
            continue;
        };
        let total = counts
            .split_once(" total ")
            .and_then(|(_, t)| t.trim().parse().ok())?;
        calls.insert(name.to_owned(), total);
    }
    Some(Summary {
        compilations: number(stderr, "manager", "compilations")?,
        at_load: number(stderr, "targets", "requested-at-load"),
        rejit_compiled: number(stderr, "rejit", "compiled"),
        rejit_parameters_ns: number(stderr, "rejit", "parameters-ns"),
        rejit_errors: number(stderr, "rejit", "errors"),
        calls,
    })
}

fn run_once(
    rt: &Runtime,
    program: &Program,
    variant: &str,
    profiler: &Path,
) -> Result<Run, String> {
    let what = format!("{rt} {} {variant}", program.name);
    // Through bash's `time` keyword, for the child's CPU time.
    let dotnet = rt.command();
    let mut cmd = Command::new("bash");
    for var in PROFILER_VARS {
        cmd.env_remove(var);
    }
    let exe = program.exe();
    cmd.envs(dotnet.get_envs().filter_map(|(k, v)| Some((k, v?))))
        .env("TIMEFORMAT", "ilrewrite-bench-cpu %3U %3S")
        .args(["-c", "time \"$0\" \"$@\""])
        .arg(dotnet.get_program())
        .args(dotnet.get_args())
        .arg(&exe)
        .current_dir(exe.parent().unwrap_or(Path::new(".")))
        .stdin(std::process::Stdio::null());
    if let Some(config) = program.config(variant)? {
        cmd.env("CORECLR_ENABLE_PROFILING", "1")
            .env("CORECLR_PROFILER", CLSID)
            .env("CORECLR_PROFILER_PATH", profiler)
            .env("ILREWRITE_CONFIG", config);
    }
    let start = Instant::now();
    let out = cmd.output().map_err(|e| format!("{what}: {cmd:?}: {e}"))?;
    let wall = start.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.code() != Some(program.exit) {
        return Err(format!(
            "{what}: exit {:?}, not {}:\n{stderr}",
            out.status, program.exit
        ));
    }
    if stdout != program.expected_stdout()? {
        return Err(format!("{what}: stdout differs:\n{stdout}\n{stderr}"));
    }
    let cpu = stderr
        .lines()
        .find_map(|l| {
            let mut w = l.strip_prefix("ilrewrite-bench-cpu ")?.split_whitespace();
            let user: f64 = w.next()?.parse().ok()?;
            let sys: f64 = w.next()?.parse().ok()?;
            Some(Duration::from_secs_f64(user + sys))
        })
        .ok_or_else(|| format!("{what}: no CPU time from bash:\n{stderr}"))?;
    let summary = match variant {
        "unprofiled" => None,
        _ => {
            let attached = stderr.lines().any(|l| {
                l.starts_with("ilrewrite: mode ") && !l.starts_with("ilrewrite: mode off ")
            });
            if !attached {
                return Err(format!("{what}: the profiler did not attach:\n{stderr}"));
            }
            let summary =
                summary(&stderr).ok_or_else(|| format!("{what}: no summary:\n{stderr}"))?;
            if summary.rejit_errors.unwrap_or(0) > 0 {
                return Err(format!("{what}: ReJIT errors:\n{stderr}"));
            }
            Some(summary)
        }
    };
    Ok(Run { wall, cpu, summary })
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// The median of an optional count over runs, or `-`.
fn median_count(runs: &[Run], count: impl Fn(&Summary) -> Option<u64>) -> String {
    let v: Vec<f64> = runs
        .iter()
        .filter_map(|r| count(r.summary.as_ref()?))
        .map(|n| n as f64)
        .collect();
    if v.is_empty() {
        "-".into()
    } else {
        format!("{:.0}", median(v))
    }
}

/// How many of `targets` were called in every run (a target's name is its selector
/// without a parameter list; it is called when a `calls` line of that name counts
/// calls).
fn targets_hit(runs: &[Run], targets: &[&str]) -> usize {
    targets
        .iter()
        .filter(|target| {
            let name = target.split('(').next().unwrap_or(target);
            runs.iter().all(|r| {
                r.summary
                    .as_ref()
                    .and_then(|s| s.calls.get(name))
                    .is_some_and(|&n| n > 0)
            })
        })
        .count()
}

fn usage() -> ExitCode {
    eprintln!("usage: startup_bench [-n ROUNDS]");
    ExitCode::from(2)
}

/// The sample profiler, next to this example.
fn profiler() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let path = exe.parent()?.join(format!(
        "{}profiler{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    ));
    path.is_file().then_some(path)
}

fn main() -> ExitCode {
    let mut rounds = 7usize;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "-n" => match args.next().and_then(|n| n.parse().ok()) {
                Some(n) if n > 0 => rounds = n,
                _ => return usage(),
            },
            _ => return usage(),
        }
    }
    let Some(profiler) = profiler() else {
        eprintln!(
            "the sample profiler is not built: cargo build --release --features clr \
             --example profiler"
        );
        return ExitCode::FAILURE;
    };
    let runtimes = match ilrewrite_corpus::runtimes() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    // results[runtime][program][variant]: the runs, in round order.
    let mut results: Vec<Vec<Vec<Vec<Run>>>> = runtimes
        .iter()
        .map(|_| {
            PROGRAMS
                .iter()
                .map(|_| VARIANTS.iter().map(|_| Vec::new()).collect())
                .collect()
        })
        .collect();
    let started = Instant::now();
    // One untimed warm-up round, then the timed rounds.
    for round in 0..=rounds {
        eprintln!(
            "round {round}/{rounds} ({:.0} s)",
            started.elapsed().as_secs_f64()
        );
        for (r, rt) in runtimes.iter().enumerate() {
            for (p, program) in PROGRAMS.iter().enumerate() {
                for k in 0..VARIANTS.len() {
                    let v = (k + round) % VARIANTS.len();
                    match run_once(rt, program, VARIANTS[v], &profiler) {
                        Ok(run) if round > 0 => results[r][p][v].push(run),
                        Ok(_) => {}
                        Err(e) => {
                            eprintln!("{e}");
                            return ExitCode::FAILURE;
                        }
                    }
                }
            }
        }
    }
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "{rounds} rounds; {:.0} s; load average at the end: {}",
        started.elapsed().as_secs_f64(),
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    for (r, rt) in runtimes.iter().enumerate() {
        for (p, program) in PROGRAMS.iter().enumerate() {
            let targets = program.all_targets();
            println!();
            println!("{rt}, {}.exe ({} targets)", program.name, targets.len());
            println!(
                "{:<11} {:>8} {:>7} {:>9} {:>7} {:>6} {:>8} {:>7} {:>10} {:>7}",
                "variant",
                "cpu ms",
                "cpu x",
                "wall ms",
                "wall x",
                "jit",
                "at-load",
                "re-jit",
                "params ms",
                "called"
            );
            let base = &results[r][p][0];
            for (v, variant) in VARIANTS.iter().enumerate() {
                let runs = &results[r][p][v];
                let cpu = median(runs.iter().map(|r| ms(r.cpu)).collect());
                let wall = median(runs.iter().map(|r| ms(r.wall)).collect());
                let ratio = |f: fn(&Run) -> Duration| {
                    median(
                        runs.iter()
                            .zip(base)
                            .map(|(run, b)| ms(f(run)) / ms(f(b)))
                            .collect(),
                    )
                };
                let (cpu_x, wall_x) = match v {
                    0 => ("-".to_string(), "-".to_string()),
                    _ => (
                        format!("{:.2}", ratio(|r| r.cpu)),
                        format!("{:.2}", ratio(|r| r.wall)),
                    ),
                };
                let called = match *variant {
                    "kept" | "disabled" => {
                        format!("{}/{}", targets_hit(runs, &targets), targets.len())
                    }
                    "program" => {
                        let own: Vec<&str> = targets
                            .iter()
                            .filter(|t| !t.starts_with("System."))
                            .copied()
                            .collect();
                        format!("{}/{}", targets_hit(runs, &own), own.len())
                    }
                    _ => "-".into(),
                };
                println!(
                    "{variant:<11} {cpu:>8.0} {cpu_x:>7} {wall:>9.0} {wall_x:>7} {:>6} {:>8} \
                     {:>7} {:>10} {called:>7}",
                    median_count(runs, |s| Some(s.compilations)),
                    median_count(runs, |s| s.at_load),
                    median_count(runs, |s| s.rejit_compiled),
                    match median_count(runs, |s| s.rejit_parameters_ns) {
                        n if n == "-" => n,
                        n => format!("{:.1}", n.parse::<f64>().unwrap_or(f64::NAN) / 1e6),
                    },
                );
            }
            // The targets not called (in some run of `kept`).
            let missed: Vec<&str> = targets
                .iter()
                .filter(|t| targets_hit(&results[r][p][KEPT], &[t]) == 0)
                .copied()
                .collect();
            if !missed.is_empty() {
                println!("not called under kept: {}", missed.join(", "));
            }
        }
    }
    ExitCode::SUCCESS
}

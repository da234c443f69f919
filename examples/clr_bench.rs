//! The cost of the sample profiler inside a real process: a test program that
//! JIT-compiles thousands of methods (`tests/programs/bin/Many.exe` by default), run
//! unprofiled and under the sample profiler in `count`, `decode`, `identity` and `wrap`
//! modes; then the cost of its `Manager`: one edit (a `nop` at every method's entry)
//! through `JitRewriter` directly (`nop-direct`, `examples/direct_profiler.rs`) and
//! through the manager hosting 1, 2 and 4 instrumentation methods that each make it
//! (`nop×N`, from a configuration file). The runs of all variants take turns so that a
//! change in machine load hits them alike.
//!
//! ```text
//! cargo build --release --features clr --example profiler --example direct_profiler
//! cargo run --release --features clr --example clr_bench [-- -n RUNS] [PROGRAM]
//! ```
//!
//! It prints, per mode, the median and best wall time of a run (runtime start-up
//! included), the median CPU time (user and system, all threads: steadier than wall time
//! on a busy machine), each median's difference from `count` (the cost of rewriting over
//! the cost of being a profiler at all), and the time the profiler spent inside
//! `JITCompilationStarted` (median over runs), per callback. Tiered compilation is off,
//! so that every run compiles the same methods.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

const CLSID: &str = "{8C1E2D4F-3B6A-4E59-A7C2-1F0D9B3E6A51}";
const DIRECT_CLSID: &str = "{3F7B9C2E-5D1A-4C86-9E40-7A2B6D8C1F93}";

/// How one variant runs.
enum How {
    Unprofiled,
    /// The sample profiler in `ILREWRITE_MODE`.
    Mode(&'static str),
    /// The direct profiler.
    Direct,
    /// The sample profiler hosting the first N of `nop`, `nop2`, `nop3`, `nop4`.
    Nops(usize),
}

const VARIANTS: [(&str, How); 9] = [
    ("unprofiled", How::Unprofiled),
    ("count", How::Mode("count")),
    ("decode", How::Mode("decode")),
    ("identity", How::Mode("identity")),
    ("wrap", How::Mode("wrap")),
    ("nop-direct", How::Direct),
    ("nop×1", How::Nops(1)),
    ("nop×2", How::Nops(2)),
    ("nop×4", How::Nops(4)),
];

/// The configuration file hosting the first `n` nop instrumentation methods.
fn nops_config(n: usize) -> Result<PathBuf, String> {
    let path = std::env::temp_dir().join(format!("ilrewrite-bench-nop{n}.toml"));
    let text: String = ["nop", "nop2", "nop3", "nop4"][..n]
        .iter()
        .map(|name| format!("[[method]]\nname = \"{name}\"\n"))
        .collect();
    std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path)
}

struct Run {
    wall: Duration,
    /// User plus system CPU time of the process (all its threads).
    cpu: Duration,
    /// (nanoseconds in callbacks, callbacks), from the profiler's timing line.
    callbacks: Option<(u64, u64)>,
}

fn usage() -> ExitCode {
    eprintln!("usage: clr_bench [-n RUNS] [--only VARIANT,...] [PROGRAM.exe]");
    ExitCode::from(2)
}

/// The cdylib example `name` next to this example: `<target>/<profile>/examples/lib<name>.so`.
fn cdylib(name: &str) -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let path = exe.parent()?.join(format!(
        "{}{name}{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    ));
    path.is_file().then_some(path)
}

/// The two profilers: the sample's and the direct one.
struct Profilers {
    sample: PathBuf,
    direct: PathBuf,
}

fn run_once(program: &Path, mode: &str, how: &How, profilers: &Profilers) -> Result<Run, String> {
    // Through bash's `time` keyword, for the child's CPU time.
    let dotnet = ilrewrite_corpus::default_runtime()
        .map_err(|e| e.to_string())?
        .command();
    let mut cmd = Command::new("bash");
    cmd.envs(dotnet.get_envs().filter_map(|(k, v)| Some((k, v?))))
        .env("TIMEFORMAT", "ilrewrite-bench-cpu %3U %3S")
        .args(["-c", "time \"$0\" \"$@\""])
        .arg(dotnet.get_program())
        .args(dotnet.get_args());
    cmd.arg(program)
        .current_dir(program.parent().unwrap_or(Path::new(".")))
        .env("COMPlus_TieredCompilation", "0");
    let (clsid, profiler) = match how {
        How::Direct => (DIRECT_CLSID, &profilers.direct),
        _ => (CLSID, &profilers.sample),
    };
    if !matches!(how, How::Unprofiled) {
        cmd.env("CORECLR_ENABLE_PROFILING", "1")
            .env("CORECLR_PROFILER", clsid)
            .env("CORECLR_PROFILER_PATH", profiler)
            .env("ILREWRITE_TIMING", "1");
    }
    match how {
        How::Mode(mode) => {
            cmd.env("ILREWRITE_MODE", mode);
        }
        How::Nops(n) => {
            cmd.env("ILREWRITE_CONFIG", nops_config(*n)?);
        }
        How::Unprofiled | How::Direct => {}
    }
    let start = Instant::now();
    let out = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
    let wall = start.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let cpu = stderr
        .lines()
        .find_map(|l| {
            let mut w = l.strip_prefix("ilrewrite-bench-cpu ")?.split_whitespace();
            let user: f64 = w.next()?.parse().ok()?;
            let sys: f64 = w.next()?.parse().ok()?;
            Some(Duration::from_secs_f64(user + sys))
        })
        .ok_or_else(|| format!("{mode}: no CPU time from bash:\n{stderr}"))?;
    let attached = stderr
        .lines()
        .any(|l| l.starts_with("ilrewrite: mode ") && !l.starts_with("ilrewrite: mode off "));
    if !matches!(how, How::Unprofiled) && !attached {
        return Err(format!("{mode}: the profiler did not attach:\n{stderr}"));
    }
    let callbacks = stderr.lines().find_map(|l| {
        let rest = l.strip_prefix("ilrewrite: timing ")?;
        let mut words = rest.split_whitespace();
        let ns = words.next()?.parse().ok()?;
        let n = words.nth(2)?.parse().ok()?;
        Some((ns, n))
    });
    Ok(Run {
        wall,
        cpu,
        callbacks,
    })
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        f64::NAN
    } else {
        v[v.len() / 2]
    }
}

fn main() -> ExitCode {
    let mut runs = 11usize;
    let mut program = None;
    let mut only: Option<Vec<String>> = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "-n" => match args.next().and_then(|n| n.parse().ok()) {
                Some(n) if n > 0 => runs = n,
                _ => return usage(),
            },
            "--only" => match args.next() {
                Some(list) => only = Some(list.split(',').map(str::to_owned).collect()),
                None => return usage(),
            },
            a if a.starts_with('-') || program.is_some() => return usage(),
            a => program = Some(PathBuf::from(a)),
        }
    }
    let program = program.unwrap_or_else(|| {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs/bin/Many.exe")
    });
    if !program.is_file() {
        eprintln!("{}: no such program", program.display());
        return ExitCode::FAILURE;
    }
    let (Some(sample), Some(direct)) = (cdylib("profiler"), cdylib("direct_profiler")) else {
        eprintln!(
            "the profilers are not built: cargo build --release --features clr --example \
             profiler --example direct_profiler"
        );
        return ExitCode::FAILURE;
    };
    let profilers = Profilers { sample, direct };
    let mut results: Vec<Vec<Run>> = VARIANTS.iter().map(|_| Vec::new()).collect();
    // One untimed warm-up round, then the timed rounds, variants taking turns.
    for round in 0..=runs {
        for (i, (mode, how)) in VARIANTS.iter().enumerate() {
            if only
                .as_ref()
                .is_some_and(|only| !only.iter().any(|o| o == mode))
            {
                continue;
            }
            match run_once(&program, mode, how, &profilers) {
                Ok(run) if round > 0 => results[i].push(run),
                Ok(_) => {}
                Err(e) => {
                    eprintln!("{e}");
                    return ExitCode::FAILURE;
                }
            }
        }
    }
    println!("{}: {runs} runs per mode", program.display());
    println!(
        "{:<11} {:>10} {:>9} {:>10} {:>12} {:>10} {:>10} {:>14} {:>12}",
        "mode",
        "median ms",
        "best ms",
        "vs count",
        "cpu med ms",
        "vs count",
        "callbacks",
        "in callback ms",
        "us/callback"
    );
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let count_median = median(results[1].iter().map(|r| ms(r.wall)).collect());
    let count_cpu = median(results[1].iter().map(|r| ms(r.cpu)).collect());
    let mut per_callback = Vec::new();
    for ((mode, _), runs) in VARIANTS.iter().zip(&results) {
        if runs.is_empty() {
            continue;
        }
        let med = median(runs.iter().map(|r| ms(r.wall)).collect());
        let best = runs
            .iter()
            .map(|r| ms(r.wall))
            .fold(f64::INFINITY, f64::min);
        let (cb_ms, per, n) = match runs[0].callbacks {
            Some((_, n)) => {
                let cb = median(
                    runs.iter()
                        .filter_map(|r| r.callbacks)
                        .map(|(ns, _)| ns as f64 / 1e6)
                        .collect(),
                );
                per_callback.push((*mode, cb * 1e3 / n.max(1) as f64));
                (
                    format!("{cb:.2}"),
                    format!("{:.2}", cb * 1e3 / n.max(1) as f64),
                    n.to_string(),
                )
            }
            None => ("-".into(), "-".into(), "-".into()),
        };
        let cpu = median(runs.iter().map(|r| ms(r.cpu)).collect());
        let (vs, vs_cpu) = if *mode == "unprofiled" {
            ("-".to_string(), "-".to_string())
        } else {
            (
                format!("{:+.1}%", (med / count_median - 1.0) * 100.0),
                format!("{:+.1}%", (cpu / count_cpu - 1.0) * 100.0),
            )
        };
        println!(
            "{mode:<11} {med:>10.1} {best:>9.1} {vs:>10} {cpu:>12.1} {vs_cpu:>10} {n:>10} {cb_ms:>14} {per:>12}"
        );
    }
    // The manager's cost: each nop×N's time per callback against the direct edit's.
    let us = |name: &str| {
        per_callback
            .iter()
            .find(|(m, _)| *m == name)
            .map(|(_, us)| *us)
    };
    if let Some(direct) = us("nop-direct") {
        for name in ["nop×1", "nop×2", "nop×4"] {
            if let Some(managed) = us(name) {
                println!(
                    "{name} against nop-direct: {:+.3} us per callback ({:+.1}%)",
                    managed - direct,
                    (managed / direct - 1.0) * 100.0
                );
            }
        }
    }
    ExitCode::SUCCESS
}

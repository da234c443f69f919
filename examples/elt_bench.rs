//! The per-call cost of the enter/leave/tailcall hooks in a real process:
//! `tests/programs/bin/EltBench.exe` calls `EltBench.Target::Work(int, long, double)`
//! 20,000,000 times and reports the time per call; this runs it unprofiled and under the
//! sample profiler in each hook mode, in turn, several rounds, all in one run.
//!
//! ```text
//! cargo build --release --features clr --example profiler
//! cargo run --release --features clr --example elt_bench [-- -n ROUNDS -c CALLS]
//! ```
//!
//! The configurations (tiering off, so `Work` runs optimized code from its first call):
//!
//! * **none**: no profiler;
//! * **unwanted**: hooks on (`elt`), but no subscriber wants `Work` (the filter names
//!   `EltBench.Program::`): the mapper turns `Work`'s hooks off;
//! * **fast-empty**: our trampolines, a subscriber that does nothing (`elt-empty`);
//! * **fast**: our trampolines, a subscriber counting each call (`elt`);
//! * **values**: `fast`, reading every argument and the return value (`elt-values`);
//! * **slow**: the runtime's slow path (`FunctionEnter3WithInfo`), a subscriber counting
//!   each call (`elt-slow`).
//!
//! It prints the median ns per call of each, the cost over `none`, and the ratios the
//! targets are about: fast over none (at most 5 ns), slow / fast (at least 10), values /
//! slow (at most 1/3).

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

const CLSID: &str = "{8C1E2D4F-3B6A-4E59-A7C2-1F0D9B3E6A51}";

/// (name, ILREWRITE_MODE, ILREWRITE_FILTER); `None` mode: unprofiled.
const CONFIGS: [(&str, Option<&str>, &str); 6] = [
    ("none", None, ""),
    ("unwanted", Some("elt"), "EltBench.Program::"),
    ("fast-empty", Some("elt-empty"), "EltBench.Target::"),
    ("fast", Some("elt"), "EltBench.Target::"),
    ("values", Some("elt-values"), "EltBench.Target::"),
    ("slow", Some("elt-slow"), "EltBench.Target::"),
];

fn sample_profiler() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let path = exe.parent()?.join(format!(
        "{}profiler{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    ));
    path.is_file().then_some(path)
}

/// One run of the program: its ns per call.
fn run(profiler: &Path, mode: Option<&str>, filter: &str, calls: u64) -> Result<f64, String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let program = root.join("tests/programs/bin/EltBench.exe");
    let dotnet = ilrewrite_corpus::default_runtime()
        .map_err(|e| e.to_string())?
        .command();
    let mut cmd = Command::new(dotnet.get_program());
    cmd.args(dotnet.get_args())
        .envs(dotnet.get_envs().filter_map(|(k, v)| Some((k, v?))))
        .arg(&program)
        .arg(calls.to_string())
        .env("COMPlus_TieredCompilation", "0");
    if let Some(mode) = mode {
        cmd.env("CORECLR_ENABLE_PROFILING", "1")
            .env("CORECLR_PROFILER", CLSID)
            .env("CORECLR_PROFILER_PATH", profiler)
            .env("ILREWRITE_MODE", mode)
            .env("ILREWRITE_FILTER", filter);
    }
    let out = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.code() != Some(47) {
        return Err(format!("{mode:?}: exit {:?}\n{stderr}", out.status));
    }
    if let Some(mode) = mode
        && !stderr.contains(&format!("ilrewrite: mode {mode} "))
    {
        return Err(format!("{mode}: the profiler did not report:\n{stderr}"));
    }
    stderr
        .lines()
        .find_map(|l| l.strip_prefix("ns-per-call "))
        .and_then(|n| n.trim().parse().ok())
        .ok_or_else(|| format!("{mode:?}: no ns-per-call line:\n{stderr}"))
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

fn main() -> ExitCode {
    let mut rounds = 5usize;
    let mut calls = 20_000_000u64;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let value = args.next().and_then(|v| v.parse::<u64>().ok());
        match (arg.as_str(), value) {
            ("-n", Some(n)) if n > 0 => rounds = n as usize,
            ("-c", Some(c)) if c > 0 => calls = c,
            _ => {
                eprintln!("usage: elt_bench [-n ROUNDS] [-c CALLS]");
                return ExitCode::FAILURE;
            }
        }
    }
    let Some(profiler) = sample_profiler() else {
        eprintln!(
            "the sample profiler is not built: cargo build --release --features clr --example profiler"
        );
        return ExitCode::FAILURE;
    };
    let mut samples: Vec<Vec<f64>> = vec![Vec::new(); CONFIGS.len()];
    for _ in 0..rounds {
        // In turn, so that the machine's drift reaches every configuration alike.
        for (i, (_, mode, filter)) in CONFIGS.iter().enumerate() {
            match run(&profiler, *mode, filter, calls) {
                Ok(ns) => samples[i].push(ns),
                Err(e) => {
                    eprintln!("{e}");
                    return ExitCode::FAILURE;
                }
            }
        }
    }
    let medians: Vec<f64> = samples.into_iter().map(median).collect();
    let none = medians[0];
    println!("{rounds} rounds of {calls} calls of EltBench.Target::Work, median ns per call:");
    for ((name, _, _), ns) in CONFIGS.iter().zip(&medians) {
        println!(
            "  {name:<11} {ns:7.2} ns   (+{:.2} ns over none)",
            ns - none
        );
    }
    let at = |name: &str| {
        CONFIGS
            .iter()
            .position(|c| c.0 == name)
            .map_or(f64::NAN, |i| medians[i] - none)
    };
    println!(
        "fast over none: {:.2} ns (target <= 5); fast-empty over none: {:.2} ns",
        at("fast"),
        at("fast-empty")
    );
    println!(
        "slow / fast: {:.1}x (target >= 10); values / slow: {:.2} (target <= 0.33); unwanted over none: {:.2} ns",
        at("slow") / at("fast"),
        at("values") / at("slow"),
        at("unwanted")
    );
    ExitCode::SUCCESS
}

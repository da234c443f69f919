//! The per-call cost of a hooked call in a real process: `tests/programs/bin/EltBench.exe`
//! calls `EltBench.Target::Work(int, long, double)` 20,000,000 times and reports the time
//! per call; this runs it unprofiled, under the sample profiler in each hook mode and
//! with the native-probe wrap, and under the CallTarget profiler with managed begin/end
//! hooks, in turn, several rounds, all in one run, on each runtime the tests use.
//!
//! ```text
//! cargo build --release --features clr,pe --example profiler --example calltarget --example elt_bench
//! ./target/release/examples/elt_bench [-n ROUNDS] [-c CALLS] [-o NAME,NAME,...]
//! ```
//!
//! The runtimes are those of `ilrewrite_corpus::runtimes` (.NET 8.0.4 and .NET Core
//! 3.1.23; `ILREWRITE_RUNTIMES=8.0.4` picks one, `ILREWRITE_DOTNET_ROOT` names another
//! installation). `-o` runs only the configurations named (`none` is always run: the
//! costs are over it). The configurations (tiering off, so `Work` runs optimized code
//! from its first call):
//!
//! * **none**: no profiler;
//! * **unwanted**: hooks on (`elt`), but no subscriber wants `Work` (the filter names
//!   `EltBench.Program::`): the mapper turns `Work`'s hooks off;
//! * **fast-empty**: our trampolines, a subscriber that does nothing (`elt-empty`);
//! * **fast**: our trampolines, a subscriber counting each call (`elt`);
//! * **values**: `fast`, reading every argument and the return value (`elt-values`);
//! * **slow**: the runtime's slow path (`FunctionEnter3WithInfo`), a subscriber counting
//!   each call (`elt-slow`);
//! * **wrap**: `Work` rewritten in try/finally with native entry and exit probes (a
//!   `calli` of a Rust function each: the sample's `wrap` mode, `ILREWRITE_PROBES=native`);
//! * **wrap-managed**: the same with managed probes (an `Interlocked.Add` each);
//! * **calltarget-empty**: `Work` rewritten by `CallTargetMethod` (`examples/calltarget.rs`)
//!   to call the `Empty` integration of `tests/programs/bin/CallTargetIntegrations.dll`,
//!   begin and end hooks that do nothing;
//! * **calltarget-counter**: the same with the `Counter` integration (an
//!   `Interlocked.Increment` in each hook).
//!
//! Each profiled run must show that its instrumentation happened, or the benchmark
//! stops: the sample's summary line for its mode (for `wrap`, `rewritten 1` and every
//! call entered and exited); for CallTarget, the manager's line saying it has targets
//! and no target that keeps its IL (and for `Counter`, every call counted by both hooks).
//!
//! It prints, per runtime, the median ns per call of each, the cost over `none`, and the
//! ratios the targets are about: fast over none (at most 5 ns), slow / fast (at least
//! 10), values / slow (at most 1/3); and calltarget-empty against wrap.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use ilrewrite_corpus::Runtime;

/// The sample profiler's CLSID (`examples/profiler/`).
const SAMPLE_CLSID: &str = "{8C1E2D4F-3B6A-4E59-A7C2-1F0D9B3E6A51}";

/// The CallTarget profiler's CLSID (`examples/calltarget.rs`).
const CALLTARGET_CLSID: &str = "{0C7A7E15-3D2B-4C5A-9E61-2F0B8D4A1C93}";

/// The variables that make CoreCLR load a profiler: removed from every run before its
/// own are set, so the caller's shell cannot leak a profiler into `none`.
const PROFILER_VARS: [&str; 3] = [
    "CORECLR_ENABLE_PROFILING",
    "CORECLR_PROFILER",
    "CORECLR_PROFILER_PATH",
];

/// How a configuration runs the program.
#[derive(Debug, Clone, Copy)]
enum Setup {
    /// No profiler.
    Unprofiled,
    /// The sample profiler: `ILREWRITE_MODE`, `ILREWRITE_FILTER` and, if given,
    /// `ILREWRITE_PROBES`.
    Sample {
        mode: &'static str,
        filter: &'static str,
        probes: Option<&'static str>,
    },
    /// The CallTarget profiler with one integration type of `CallTargetIntegrations` on
    /// `Work`.
    CallTarget { integration: &'static str },
}

/// The configurations, in the order they run within a round; `none` first.
const CONFIGS: [(&str, Setup); 10] = [
    ("none", Setup::Unprofiled),
    ("unwanted", sample("elt", "EltBench.Program::", None)),
    ("fast-empty", sample("elt-empty", "EltBench.Target::", None)),
    ("fast", sample("elt", "EltBench.Target::", None)),
    ("values", sample("elt-values", "EltBench.Target::", None)),
    ("slow", sample("elt-slow", "EltBench.Target::", None)),
    ("wrap", sample("wrap", "EltBench.Target::", Some("native"))),
    (
        "wrap-managed",
        sample("wrap", "EltBench.Target::", Some("managed")),
    ),
    (
        "calltarget-empty",
        Setup::CallTarget {
            integration: "Empty",
        },
    ),
    (
        "calltarget-counter",
        Setup::CallTarget {
            integration: "Counter",
        },
    ),
];

/// The sample profiler in `mode` with `filter` and `probes` (see [`Setup::Sample`]).
const fn sample(mode: &'static str, filter: &'static str, probes: Option<&'static str>) -> Setup {
    Setup::Sample {
        mode,
        filter,
        probes,
    }
}

/// The command line: rounds, calls per run, the configurations to run (indices into
/// [`CONFIGS`], `none` always first).
#[derive(Debug)]
struct Options {
    rounds: usize,
    calls: u64,
    chosen: Vec<usize>,
}

/// Reads `-n ROUNDS`, `-c CALLS` and `-o NAME,...`; an unknown flag, a missing or
/// malformed value, or an unknown configuration name is an error.
fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Options, String> {
    let mut options = Options {
        rounds: 5,
        calls: 20_000_000,
        chosen: (0..CONFIGS.len()).collect(),
    };
    while let Some(flag) = args.next() {
        let value = args.next().ok_or(format!("{flag} needs a value"))?;
        let count = || value.parse::<u64>().ok().filter(|&n| n > 0);
        match flag.as_str() {
            "-n" => options.rounds = count().ok_or("-n: a positive count")? as usize,
            // EltBench.exe reads an `int`.
            "-c" => {
                options.calls = count()
                    .filter(|&c| c <= i32::MAX as u64)
                    .ok_or("-c: a count from 1 to 2^31 - 1")?
            }
            "-o" => options.chosen = chosen(&value)?,
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    Ok(options)
}

/// The indices of the configurations `names` (comma-separated) lists, in
/// [`CONFIGS`]' order, with `none`'s first whether listed or not.
fn chosen(names: &str) -> Result<Vec<usize>, String> {
    let wanted: Vec<&str> = names.split(',').map(str::trim).collect();
    if let Some(unknown) = wanted
        .iter()
        .find(|w| !CONFIGS.iter().any(|(name, _)| name == *w))
    {
        return Err(format!("-o: no configuration {unknown:?}"));
    }
    Ok((0..CONFIGS.len())
        .filter(|&i| i == 0 || wanted.contains(&CONFIGS[i].0))
        .collect())
}

/// Where the cdylib example `name` is built: beside this one.
fn example_cdylib(name: &str) -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| format!("this program's path: {e}"))?;
    let dir = exe.parent().ok_or("this program's path has no directory")?;
    Ok(dir.join(format!(
        "{}{name}{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    )))
}

/// What the runs need besides the program: the profilers' paths and the CallTarget
/// configuration files (removed when this is dropped).
struct Tools {
    sample: PathBuf,
    calltarget: PathBuf,
    config_files: Vec<PathBuf>,
}

impl Tools {
    /// The profilers, each checked to be built if one of the `chosen` configurations
    /// (indices into [`CONFIGS`]) uses it, and a configuration file written per chosen
    /// CallTarget integration.
    fn new(chosen: &[usize]) -> Result<Tools, String> {
        let setups = || chosen.iter().map(|&i| CONFIGS[i].1);
        let built = |name: &str, features: &str, needed: bool| {
            let path = example_cdylib(name)?;
            if needed && !path.is_file() {
                return Err(format!(
                    "the {name} profiler is not built: cargo build --release --features {features} --example {name}"
                ));
            }
            Ok(path)
        };
        let sample = setups().any(|s| matches!(s, Setup::Sample { .. }));
        let calltarget = setups().any(|s| matches!(s, Setup::CallTarget { .. }));
        let mut tools = Tools {
            sample: built("profiler", "clr", sample)?,
            calltarget: built("calltarget", "clr,pe", calltarget)?,
            config_files: Vec::new(),
        };
        for setup in setups() {
            if let Setup::CallTarget { integration } = setup {
                let path = Tools::config_path(integration);
                // Listed before it is written, so that a partial file is removed too.
                tools.config_files.push(path.clone());
                std::fs::write(&path, calltarget_config(integration))
                    .map_err(|e| format!("{}: {e}", path.display()))?;
            }
        }
        Ok(tools)
    }

    /// The configuration file of the CallTarget profiler for `integration`.
    fn config_path(integration: &str) -> PathBuf {
        std::env::temp_dir().join(format!(
            "ilrewrite-elt-bench-{}-{integration}.toml",
            std::process::id()
        ))
    }
}

impl Drop for Tools {
    fn drop(&mut self) {
        for path in &self.config_files {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// The CallTarget profiler's configuration: `Work` hooked by the `integration` type of
/// `CallTargetIntegrations`.
fn calltarget_config(integration: &str) -> String {
    format!(
        "[[method]]\nname = \"calltarget\"\noptions = {{ integrations = [ \
         \"EltBench.Target::Work => CallTargetIntegrations.{integration}, CallTargetIntegrations\" ] }}\n"
    )
}

/// The command running the program on `rt` with `calls` calls, tiering off, set up as
/// `setup` says.
fn command(rt: &Runtime, tools: &Tools, setup: Setup, calls: u64) -> Command {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut cmd = rt.command();
    for var in PROFILER_VARS {
        cmd.env_remove(var);
    }
    cmd.arg(root.join("tests/programs/bin/EltBench.exe"))
        .arg(calls.to_string())
        .env("COMPlus_TieredCompilation", "0");
    let (clsid, profiler) = match setup {
        Setup::Unprofiled => return cmd,
        Setup::Sample {
            mode,
            filter,
            probes,
        } => {
            cmd.env("ILREWRITE_MODE", mode)
                .env("ILREWRITE_FILTER", filter);
            if let Some(probes) = probes {
                cmd.env("ILREWRITE_PROBES", probes);
            }
            (SAMPLE_CLSID, &tools.sample)
        }
        Setup::CallTarget { integration } => {
            cmd.env("CALLTARGET_CONFIG", Tools::config_path(integration));
            (CALLTARGET_CLSID, &tools.calltarget)
        }
    };
    cmd.env("CORECLR_ENABLE_PROFILING", "1")
        .env("CORECLR_PROFILER", clsid)
        .env("CORECLR_PROFILER_PATH", profiler);
    cmd
}

/// Whether the run shows its instrumentation happened, `total` being the calls of
/// `Work` (the program's warm-up included): `Err` says what is missing.
fn check(setup: Setup, total: u64, stdout: &str, stderr: &str) -> Result<(), String> {
    let need = |text: &str, haystack: &str| {
        if haystack.contains(text) {
            Ok(())
        } else {
            Err(format!("no {text:?}"))
        }
    };
    match setup {
        Setup::Unprofiled => Ok(()),
        Setup::Sample { mode: "wrap", .. } => {
            need("ilrewrite: mode wrap jitted 1 rewritten 1 ", stderr)?;
            need(&format!(" enters {total} exits {total}"), stderr)
        }
        Setup::Sample { mode, .. } => need(&format!("ilrewrite: mode {mode} "), stderr),
        Setup::CallTarget { integration } => {
            need("instrumentation method calltarget has targets", stderr)?;
            if stderr.contains("keeps its IL") || stderr.contains("nothing runs") {
                return Err("the target was not rewritten".to_owned());
            }
            if integration == "Counter" {
                let line = format!("counter: EltBench.Target begins {total} ends {total} ");
                need(&line, stdout)?;
            }
            Ok(())
        }
    }
}

/// One run of the program: its ns per call, once its exit code and [`check`] passed.
fn run(rt: &Runtime, tools: &Tools, setup: Setup, calls: u64) -> Result<f64, String> {
    let mut cmd = command(rt, tools, setup, calls);
    let out = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.code() != Some(47) {
        return Err(format!("{setup:?}: exit {:?}\n{stderr}", out.status));
    }
    // EltBench warms up with calls / 10 calls before the timed loop.
    check(setup, calls + calls / 10, &stdout, &stderr)
        .map_err(|e| format!("{setup:?} on {rt}: {e}\nstdout:\n{stdout}\nstderr:\n{stderr}"))?;
    stderr
        .lines()
        .find_map(|l| l.strip_prefix("ns-per-call "))
        .and_then(|n| n.trim().parse().ok())
        .ok_or_else(|| format!("{setup:?}: no ns-per-call line:\n{stderr}"))
}

/// The middle value (the upper of the two middle ones of an even count); NaN if none.
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

/// The median ns per call of each chosen configuration on `rt` (in `options.chosen`'s
/// order), the configurations taking turns within each round.
fn measure(rt: &Runtime, tools: &Tools, options: &Options) -> Result<Vec<f64>, String> {
    let mut samples: Vec<Vec<f64>> = vec![Vec::new(); options.chosen.len()];
    for _ in 0..options.rounds {
        // In turn, so that the machine's drift reaches every configuration alike.
        for (slot, &i) in options.chosen.iter().enumerate() {
            samples[slot].push(run(rt, tools, CONFIGS[i].1, options.calls)?);
        }
    }
    Ok(samples.into_iter().map(median).collect())
}

/// Prints the medians of [`measure`], each with its cost over `none`, and the ratios
/// between the configurations measured.
fn report(rt: &Runtime, options: &Options, medians: &[f64]) {
    let none = medians[0];
    println!(
        "{rt}: {} rounds of {} calls of EltBench.Target::Work, median ns per call:",
        options.rounds, options.calls
    );
    for (&i, ns) in options.chosen.iter().zip(medians) {
        let name = CONFIGS[i].0;
        println!(
            "  {name:<18} {ns:7.2} ns   ({:+.2} ns over none)",
            ns - none
        );
    }
    // The cost over none of a configuration measured.
    let over = |name: &str| {
        let slot = options.chosen.iter().position(|&i| CONFIGS[i].0 == name)?;
        Some(medians[slot] - none)
    };
    if let (Some(fast), Some(empty)) = (over("fast"), over("fast-empty")) {
        println!(
            "  fast over none: {fast:.2} ns (target <= 5); fast-empty over none: {empty:.2} ns"
        );
    }
    if let (Some(fast), Some(slow), Some(values)) = (over("fast"), over("slow"), over("values")) {
        println!(
            "  slow / fast: {:.1}x (target >= 10); values / slow: {:.2} (target <= 0.33)",
            slow / fast,
            values / slow
        );
    }
    if let (Some(empty), Some(wrap)) = (over("calltarget-empty"), over("wrap")) {
        println!(
            "  calltarget-empty / wrap, costs over none: {:.2} ({empty:.2} ns / {wrap:.2} ns); \
             ns per call: {:.2}",
            empty / wrap,
            (empty + none) / (wrap + none)
        );
    }
}

fn main() -> ExitCode {
    let options = match parse_args(std::env::args().skip(1)) {
        Ok(options) => options,
        Err(e) => {
            eprintln!("{e}\nusage: elt_bench [-n ROUNDS] [-c CALLS] [-o NAME,NAME,...]");
            return ExitCode::FAILURE;
        }
    };
    let outcome = Tools::new(&options.chosen).and_then(|tools| {
        let runtimes = ilrewrite_corpus::runtimes().map_err(|e| e.to_string())?;
        for rt in runtimes {
            report(rt, &options, &measure(rt, &tools, &options)?);
        }
        Ok(())
    });
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}

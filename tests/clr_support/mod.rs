//! Running the .NET test programs of `tests/programs/` under each runtime the tests run
//! on (.NET 8.0.4 and .NET Core 3.1.23, or the one `ILREWRITE_DOTNET_ROOT` names), with
//! or without a profiler, and reading the sample profiler's summary.
//!
//! Include it from a test file with `mod clr_support;`. It uses `std` and
//! `ilrewrite_corpus` only, so it compiles with or without the `clr` feature.
//!
//! * [`program`] is the path of a committed program (`tests/programs/bin/<name>.exe`);
//!   [`PROGRAMS`] lists them with their exit codes and [`expected_stdout`] gives the
//!   checked-in output of an unprofiled run.
//! * [`for_each_runtime`] runs a test's body once on each runtime
//!   (`ilrewrite_corpus::runtimes`) and names the runtimes it failed on.
//! * [`run_unprofiled`] and [`run_profiled`] run one on a runtime and return its
//!   [`Output`]. A run that outlives [`timeout`] is killed and the test panics.
//! * [`Summary::parse`] reads the summary the sample profiler prints on stderr at
//!   shutdown; the format is documented on [`Summary`].
//! * [`components`]: the C instrumentation-method libraries of `tests/components/`
//!   and runs under `examples/engine.rs` configured with them.
//! * [`dial`]: a client of a profiler's live dial (Unix).
//! * [`sample_profiler`] builds the sample profiler (`examples/profiler/`, a cdylib)
//!   for the profile the test binary was built with and returns its path.
#![allow(dead_code, reason = "each test binary uses a different subset")]

pub mod components;
#[cfg(unix)]
pub mod dial;

pub use ilrewrite_corpus::Runtime;
use std::io::Read;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The committed programs and the exit code of each (unprofiled).
///
/// `CallTree` prints `calls 219`: see [`CALL_TREE_CALLS`]. `TailCalls` makes its
/// `tail.` calls [`TAIL_CALLS_DEPTH`] deep: it dies with a stack overflow when a
/// profiler drops their prefixes (all but those of its 24-byte struct shape, which the
/// runtime makes normal calls, [`TAIL_CALLS_STRUCT24_DEPTH`] deep); see
/// [`TAIL_CALLS_CALLS`]. `Concurrency` makes [`CONCURRENCY_CALLS`] calls from 32
/// threads that compile instantiations of the same generic methods at once.
/// `LocalsLimit` and `DeepTypes` are at the runtime's limits: methods with 65,535
/// locals ([`LOCALS_LIMIT_CALLS`]), and a generic class nested
/// [`DEEP_TYPES_DEPTHS`] deep ([`deep_types_calls`]). `Unload` loads and unloads a
/// plugin ([`LIBRARIES`]) in a collectible `AssemblyLoadContext` [`UNLOAD_CYCLES`]
/// times ([`UNLOAD_PLUGIN_CALLS`]); `Inlining` calls 32 small methods the JIT inlines
/// ([`INLINING_CALLS`]). `Recursion` measures the stack a recursive method takes per
/// level ([`RECURSION_CALLS`]) or recurses as deep as its argument says on a 1 MiB
/// thread ([`RECURSION_DEEP`]). `Dial` is driven through stdin, one command a line
/// (run it with [`Interactive`]); with stdin closed, as here, it prints only `bye`.
pub const PROGRAMS: &[(&str, i32)] = &[
    ("Features", 11),
    ("Threads", 12),
    ("EdgeCases", 13),
    ("CallTree", 14),
    ("Generic", 15),
    ("Many", 16),
    ("TailCalls", 17),
    ("Concurrency", 18),
    ("LocalsLimit", 23),
    ("DeepTypes", 24),
    ("Unload", 25),
    ("Inlining", 26),
    ("Recursion", 27),
    ("Returns", 28),
    ("Dial", 29),
    ("Targets", 30),
    ("Answer", 41),
    ("HostileDial", 43),
    ("HostileTail", 44),
    ("EltCalls", 45),
    ("EltValues", 46),
    ("EltBench", 47),
    ("OpenFrames", 48),
    ("TwoTools", 49),
    ("CallTargetApp", 50),
    ("CallTargetFramework", 51),
];

/// The number of calls of methods of `CallTree.Work` (its constructor included) that
/// `CallTree.exe` makes: what a profiler's enter and exit counters, filtered to that
/// type, must show. The derivation is in `tests/programs/CallTree.cs`.
pub const CALL_TREE_CALLS: u64 = 219;

/// The calls of all methods of `Concurrency.exe` (all in namespace `Concurrency`, so the
/// filter `Concurrency.` selects exactly them), made by 32 threads that a barrier
/// releases at once onto 20 generic methods and methods of generic classes, each over
/// 100 value types (unshared code) and 28 reference types (shared code), in a different
/// order per thread: what a profiler's enter and exit counters filtered to
/// `Concurrency.` must both show. The program prints it as `calls 164129` (and exits
/// with 99 if its own count differs); the derivation is in
/// `tests/programs/Concurrency.cs`.
pub const CONCURRENCY_CALLS: u64 = 164_129;

/// The JIT compilations of the methods of `Concurrency.exe` with tiered compilation
/// off: 101 (100 value types and one shared instantiation for the 28 reference types)
/// for each of its 20 generic methods, `Driver<T>.Run` and `Driver<T>`'s constructor,
/// and one each for `Driver`'s constructor, `Program.Work` and `Program.Main`. What the
/// sample profiler's `jitted` shows with the filter `Concurrency.`; with tiering on,
/// methods may be compiled again at tier 1.
pub const CONCURRENCY_COMPILATIONS: u64 = 2_225;

/// The libraries among the sources (`<Name>.dll` in `bin/`, loaded by a program, or
/// by the code a profiler injects).
pub const LIBRARIES: &[&str] = &[
    "ProbeHelper",
    "UnloadPlugin",
    "TwoToolsLib",
    "ILRewrite.CallTarget",
    "CallTargetIntegrations",
];

/// The calls of the methods of namespace `Returns` in `Returns.exe`: `Main`, then 3
/// rounds of 7 calls (derivation in `tests/programs/Returns.cs`).
pub const RETURNS_CALLS: u64 = 22;

/// The load-and-unload cycles of `Unload.exe` (its default).
pub const UNLOAD_CYCLES: u64 = 1_000;

/// The calls of the methods of the plugin `Unload.exe` loads (`UnloadPlugin.*`): 9 per
/// cycle (derivation in `tests/programs/Unload.cs`).
pub const UNLOAD_PLUGIN_CALLS: u64 = 9 * UNLOAD_CYCLES;

/// The JIT compilations of the plugin's methods with tiering off: 7 per cycle (each
/// load is a new module; `Weigh<T>` is compiled for `int` and once for reference
/// types).
pub const UNLOAD_PLUGIN_COMPILATIONS: u64 = 7 * UNLOAD_CYCLES;

/// The calls of the methods of `Inlining.*` in `Inlining.exe`: (k + 1) * 1,000 calls of
/// each of its 32 small methods (k = 0 .. 31), which the JIT inlines, and 8 calls of
/// the drivers, `Box`'s constructor, `Expected` and `Main` (derivation in
/// `tests/programs/Inlining.cs`).
pub const INLINING_CALLS: u64 = 528_008;

/// The calls of `Recursion.Deep::Sum` in a `Recursion.exe` run without arguments:
/// `Sum(1000)` and `Sum(3000)`, each level one call.
pub const RECURSION_CALLS: u64 = 1_001 + 3_001;

/// A recursion depth for `Recursion.exe DEPTH` that fits its 1 MiB thread with the
/// sample profiler's `wrap` and managed probes on `Sum` (deepest measured: 21,514 at
/// tier 0, 32,297 optimized; 32,277 unprofiled) and overflows it with native probes
/// (5,377 and 7,174): see `docs/performance.md`.
pub const RECURSION_DEEP: u64 = 16_000;

/// The number of methods of `Many.exe` (all in `Many.Program`), each called once.
pub const MANY_METHODS: u64 = 4041;

/// How deep each chain of `tail.` calls of `TailCalls.exe` goes, all but the
/// `struct24` shape: 1,000,000 tail calls (1,000,001 calls of the chain's methods).
/// `EdgeCases.exe`'s tail-call chains count down from the same number.
pub const TAIL_CALLS_DEPTH: u64 = 1_000_000;

/// How deep the `struct24` shape of `TailCalls.exe` goes (2,001 calls of
/// `TailCalls.Deep::Fold3`): a struct argument of 24 bytes is passed on the stack, and
/// CoreCLR 3.1 makes no fast tail call with it, so its `tail.` calls are normal calls
/// (unprofiled, it overflows the program's 1 MiB thread at about 21,600 deep). It
/// checks that a rewriter copies a 24-byte struct argument through its tail-call stub,
/// not that the stack stays flat.
pub const TAIL_CALLS_STRUCT24_DEPTH: u64 = 2_000;

/// The number of calls `TailCalls.exe` makes of each of its methods, by the name
/// `Namespace.Type::Method` that the sample profiler's `ILREWRITE_FILTER` matches (a
/// substring of it): the table of `tests/programs/TailCalls.il`'s header, which derives
/// them.
pub const TAIL_CALLS_METHOD_CALLS: &[(&str, u64)] = &[
    ("TailCalls.Program::Main", 1),
    ("TailCalls.Program::Run", 1),
    ("TailCalls.Program::Record", 12),
    ("TailCalls.Program::Line", 12),
    ("TailCalls.Program::Weight", 4),
    ("TailCalls.Walker`1::.ctor", 2),
    ("TailCalls.Walker`1::Walk", 2_000_002),
    ("TailCalls.Deep::SumTo", 1_000_001),
    ("TailCalls.Deep::Ping", 500_001),
    ("TailCalls.Deep::Pong", 500_000),
    ("TailCalls.Deep::Repeat", 2_000_002),
    ("TailCalls.Deep::Indirect", 1_000_001),
    ("TailCalls.Deep::Fold2", 1_000_001),
    ("TailCalls.Deep::Fold3", 2_001),
    ("TailCalls.Deep::Accumulate", 1_000_001),
    ("TailCalls.Deep::Early", 1_000_001),
    ("TailCalls.Cursor::Advance", 1_000_001),
];

/// The calls of all methods of `TailCalls.exe` (all in namespace `TailCalls`, so the
/// filter `TailCalls.` selects exactly them): the sum of [`TAIL_CALLS_METHOD_CALLS`].
/// Single-threaded apart from Main starting and joining one thread, with no exception:
/// a profiler's enter and exit counters filtered to `TailCalls.` must both show it.
pub const TAIL_CALLS_CALLS: u64 = 11_002_044;

/// The calls of `TailCalls.exe`'s deep methods (all but those of `TailCalls.Program`
/// and the constructor), which the program counts itself and prints as
/// `deep calls 11002012` (it exits with 99 if its count differs).
pub const TAIL_CALLS_DEEP_CALLS: u64 = 11_002_012;

/// The calls of the methods of `LocalsLimit.exe` (all in `LocalsLimit.Program`, which
/// the filter `LocalsLimit.` selects): `Main`, `Full` (void, 65,535 locals),
/// `AlmostFull` (65,534 locals and a value to return) and `FullReturning` (65,535 locals
/// and a value to return: no room for a return-value local), once each.
pub const LOCALS_LIMIT_CALLS: u64 = 4;

/// The depths at which the committed `DeepTypes.exe` nests its generic class `G<T>`
/// (`tests/programs/gen_limits.sh deep` without arguments).
pub const DEEP_TYPES_DEPTHS: &[u64] = &[65, 1_000];

/// The calls of the methods of `DeepTypes.*` (the filter `DeepTypes.`) that a
/// `DeepTypes.exe` made by `gen_limits.sh deep` for `depths` depths makes: `Main` once,
/// and per depth `RunD`, `LocalD`, `ParamD`, `ReturnD` and `Id` once each, `Depth` and
/// `G::.ctor` 4 times each.
pub const fn deep_types_calls(depths: u64) -> u64 {
    1 + 13 * depths
}

/// The exit code of a program of [`PROGRAMS`].
///
/// # Panics
///
/// If `name` is not in [`PROGRAMS`].
pub fn exit_code(name: &str) -> i32 {
    PROGRAMS
        .iter()
        .find(|(n, _)| *n == name)
        .unwrap_or_else(|| panic!("{name} is not one of the test programs"))
        .1
}

/// `tests/programs/`: sources, `build.sh`, `bin/`, `expected/`.
pub fn programs_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs")
}

/// The committed binary of a program: `tests/programs/bin/<name>.exe` (`name` without
/// `.exe`, e.g. `"Features"`). Its `<name>.runtimeconfig.json` lies next to it.
///
/// # Panics
///
/// If the file does not exist.
pub fn program(name: &str) -> PathBuf {
    let path = programs_dir().join("bin").join(format!("{name}.exe"));
    assert!(path.is_file(), "{} does not exist", path.display());
    path
}

/// The checked-in stdout of an unprofiled run: `tests/programs/expected/<name>.out`.
///
/// # Panics
///
/// If the file cannot be read.
pub fn expected_stdout(name: &str) -> String {
    let path = programs_dir().join("expected").join(format!("{name}.out"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// What a program run produced.
#[derive(Debug)]
pub struct Output {
    /// How the process ended.
    pub status: ExitStatus,
    /// Its standard output (lossily decoded as UTF-8).
    pub stdout: String,
    /// Its standard error (lossily decoded as UTF-8).
    pub stderr: String,
}

impl Output {
    /// The exit code.
    ///
    /// # Panics
    ///
    /// If the process was ended by a signal (a crash), with its stderr.
    pub fn code(&self) -> i32 {
        self.status.code().unwrap_or_else(|| {
            panic!(
                "the program was killed ({}); stderr:\n{}",
                self.status, self.stderr
            )
        })
    }
}

/// How long a program may run before it is killed: `ILREWRITE_PROGRAM_TIMEOUT`
/// seconds if set, else 120 s. Unprofiled, every program ends within a second.
pub fn timeout() -> Duration {
    let secs = std::env::var("ILREWRITE_PROGRAM_TIMEOUT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(120);
    Duration::from_secs(secs)
}

/// The variables that make CoreCLR load a profiler; removed from every run's
/// environment before [`run_profiled`] sets its own, so a developer's shell cannot
/// leak a profiler into a test.
const PROFILER_VARS: &[&str] = &[
    "CORECLR_ENABLE_PROFILING",
    "CORECLR_PROFILER",
    "CORECLR_PROFILER_PATH",
    "CORECLR_PROFILER_PATH_32",
    "CORECLR_PROFILER_PATH_64",
    "CORECLR_PROFILER_PATH_ARM32",
    "CORECLR_PROFILER_PATH_ARM64",
];

/// Runs `test` once on each runtime of `ilrewrite_corpus::runtimes` (newest first),
/// each run after the previous one returned or failed, with a line on stdout naming the
/// runtime (shown with a failing test's output). A failure on one runtime does not keep
/// the others from running; afterwards the test fails naming every runtime it failed
/// on (each failure's own message is printed where it happened). With a single
/// runtime, its failure is re-raised as it was.
///
/// # Panics
///
/// If the runtimes cannot be found or provisioned, or `test` failed on any of them.
pub fn for_each_runtime(test: impl Fn(&'static Runtime)) {
    let runtimes = ilrewrite_corpus::runtimes().unwrap_or_else(|e| panic!("{e}"));
    let mut failed = Vec::new();
    for rt in runtimes {
        println!("=== on {rt} ({})", rt.root().display());
        if let Err(panic) = catch_unwind(AssertUnwindSafe(|| test(rt))) {
            if runtimes.len() == 1 {
                resume_unwind(panic);
            }
            failed.push(rt.to_string());
        }
    }
    assert!(failed.is_empty(), "failed on {}", failed.join(" and "));
}

/// A [`Command`] running the program at `exe` on runtime `rt` (its `dotnet` host and
/// environment, `Runtime::command`), no profiler variables, and the program's
/// directory as working directory.
pub fn command_for(rt: &Runtime, exe: &Path) -> Command {
    let mut cmd = rt.command();
    for var in PROFILER_VARS {
        cmd.env_remove(var);
    }
    cmd.arg(exe);
    if let Some(dir) = exe.parent() {
        cmd.current_dir(dir);
    }
    cmd
}

/// Runs `cmd` to completion with stdin closed and stdout and stderr captured, killing it
/// after [`timeout`].
///
/// # Panics
///
/// If it cannot be started, or when it times out (with what it printed so far).
pub fn run_command(mut cmd: Command) -> Output {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
    // Drain both pipes on their own threads so a chatty program cannot block on a full
    // pipe while we wait for it.
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            String::from_utf8_lossy(&bytes).into_owned()
        })
    };
    let stdout = drain(child.stdout.take().map(|p| Box::new(p) as _));
    let stderr = drain(child.stderr.take().map(|p| Box::new(p) as _));
    let limit = timeout();
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if start.elapsed() >= limit => break None,
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => panic!("waiting for {cmd:?}: {e}"),
        }
    };
    let Some(status) = status else {
        let _ = child.kill();
        let _ = child.wait();
        let out = stdout.join().unwrap_or_default();
        let err = stderr.join().unwrap_or_default();
        panic!("{cmd:?} timed out after {limit:?}\nstdout:\n{out}\nstderr:\n{err}");
    };
    Output {
        status,
        stdout: stdout.join().expect("stdout reader panicked"),
        stderr: stderr.join().expect("stderr reader panicked"),
    }
}

/// Runs a committed program ([`program`]) on `rt` without a profiler.
///
/// # Panics
///
/// As [`program`] and [`run_command`].
pub fn run_unprofiled(rt: &Runtime, name: &str) -> Output {
    run_command(command_for(rt, &program(name)))
}

/// Runs a committed program ([`program`]) on `rt` with a profiler:
/// `CORECLR_ENABLE_PROFILING=1`, `CORECLR_PROFILER={clsid}` (braces added unless
/// `clsid` has them), `CORECLR_PROFILER_PATH=<profiler_so made absolute>`, then `env`
/// (which may override any of these, or set e.g. `COMPlus_TieredCompilation=0`).
///
/// # Panics
///
/// As [`run_unprofiled`], or if `profiler_so` cannot be made absolute.
pub fn run_profiled(
    rt: &Runtime,
    name: &str,
    profiler_so: &Path,
    clsid: &str,
    env: &[(&str, &str)],
) -> Output {
    let mut cmd = command_for(rt, &program(name));
    profile(&mut cmd, profiler_so, clsid);
    cmd.envs(env.iter().copied());
    run_command(cmd)
}

/// Sets the profiler variables of [`run_profiled`] on `cmd`.
///
/// # Panics
///
/// If `profiler_so` cannot be made absolute.
pub fn profile(cmd: &mut Command, profiler_so: &Path, clsid: &str) {
    let path = std::path::absolute(profiler_so)
        .unwrap_or_else(|e| panic!("{}: {e}", profiler_so.display()));
    let clsid = if clsid.starts_with('{') {
        clsid.to_owned()
    } else {
        format!("{{{clsid}}}")
    };
    cmd.env("CORECLR_ENABLE_PROFILING", "1")
        .env("CORECLR_PROFILER", clsid)
        .env("CORECLR_PROFILER_PATH", path);
}

// ---------------------------------------------------------------------------------------
// The sample profiler's summary
// ---------------------------------------------------------------------------------------

/// Writes `text` as configuration file `name`-PID.toml for the sample profiler
/// (`ILREWRITE_CONFIG`) in the tests' temporary directory (the process id keeps two
/// test runs of one target directory apart); returns its path.
pub fn config_file(name: &str, text: &str) -> PathBuf {
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("{name}-{}.toml", std::process::id()));
    std::fs::write(&path, text).expect("the configuration file is written");
    path
}

/// The growth of resident memory per cycle that `Unload.exe` prints on stderr.
pub fn rss_growth_per_cycle(stderr: &str) -> i64 {
    stderr
        .lines()
        .find_map(|l| l.strip_prefix("unload: rss-growth-per-cycle-bytes "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no memory line in:\n{stderr}"))
}

/// The counters of the sample profiler's line `ilrewrite: PREFIX NAME N NAME N ...`
/// (e.g. `manager`, `wrap items`, `count`): name and value, in order. Panics unless
/// exactly one such line is on stderr and it is name-value pairs.
pub fn named_counts(stderr: &str, prefix: &str) -> Vec<(String, u64)> {
    let start = format!("ilrewrite: {prefix} ");
    let lines: Vec<&str> = stderr.lines().filter(|l| l.starts_with(&start)).collect();
    let [line] = lines.as_slice() else {
        panic!(
            "expected one `{start}...` line in stderr, found {}:\n{stderr}",
            lines.len()
        );
    };
    let fields: Vec<&str> = line[start.len()..].split(' ').collect();
    assert!(fields.len() % 2 == 0, "not name-value pairs: {line:?}");
    fields
        .chunks(2)
        .map(|pair| {
            let value = pair[1]
                .parse()
                .unwrap_or_else(|_| panic!("`{}` is not a count: {line:?}", pair[0]));
            (pair[0].to_owned(), value)
        })
        .collect()
}

/// The value of counter `name` on the line `ilrewrite: PREFIX ...` ([`named_counts`]).
pub fn named_count(stderr: &str, prefix: &str, name: &str) -> u64 {
    named_counts(stderr, prefix)
        .into_iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("no counter `{name}` on the `{prefix}` line:\n{stderr}"))
        .1
}

/// The summary the sample profiler (`examples/profiler/`) prints on stderr when the
/// runtime shuts down.
///
/// The format, one summary line followed by zero or more reason lines:
///
/// ```text
/// ilrewrite: mode M jitted N rewritten N already N refused N failed N enters N exits N
/// ilrewrite:   N reason text
/// ilrewrite:   N another reason
/// ```
///
/// * The summary line is `ilrewrite: mode`, the mode (one word, no spaces), then the
///   counters `jitted`, `rewritten`, `already`, `refused`, `failed`, `enters`, `exits`,
///   in that
///   order, each a name, one space and a decimal number, all separated by single
///   spaces; optionally followed by `open N lost N` (`wrap` with native probes: the
///   frames still open on live threads at shutdown, and the exits lost, a decimal
///   number that may have a leading `-`). Exactly one such line must appear on stderr.
/// * Each reason line is `ilrewrite:` followed by three spaces (the one after the
///   colon, then two of indentation), a decimal count, one space, and the reason: the
///   rest of the line, which may contain spaces (trailing whitespace is dropped). The
///   reason lines are the lines right after the summary line that start with
///   `"ilrewrite:   "`; the first line that does not ends them. They give, per
///   distinct reason, how many methods were refused or failed; their order is the
///   profiler's.
/// * Anything else on stderr (other lines of the profiler, the runtime's messages) is
///   ignored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    /// The profiler's mode, as it names it.
    pub mode: String,
    /// Methods whose JIT compilation the profiler saw start.
    pub jitted: u64,
    /// Compilations that handed a rewritten body to the runtime.
    pub rewritten: u64,
    /// Compilations of a method rewritten by an earlier one (they compile its rewritten
    /// body).
    pub already: u64,
    /// Methods it chose not to rewrite (e.g. a `jmp` that cannot be wrapped).
    pub refused: u64,
    /// Methods whose rewriting failed.
    pub failed: u64,
    /// Calls counted by the entry probes.
    pub enters: u64,
    /// Returns (or unwinds) counted by the exit probes.
    pub exits: u64,
    /// Frames still open at shutdown on threads alive then (`open`; `None` when the line
    /// has no `open`/`lost` pair).
    pub open: Option<u64>,
    /// Exits lost: `enters - exits - open` (`lost`; negative if exits were counted that
    /// had no enter; `None` without the pair).
    pub lost: Option<i64>,
    /// The reason lines: (reason, count), in the order printed.
    pub reasons: Vec<(String, u64)>,
}

/// The start of the line the crate's manager logs once, at start: the runtime it is in
/// (`ilrewrite: runtime CoreCLR 8.0.4.0 (8.0.4)`).
pub const RUNTIME_LINE: &str = "ilrewrite: runtime ";

/// The start of the summary line.
pub const SUMMARY_PREFIX: &str = "ilrewrite: mode ";
/// The start of a reason line: `ilrewrite:`, then three spaces.
pub const REASON_PREFIX: &str = "ilrewrite:   ";

impl Summary {
    /// Parses the summary out of a profiled run's stderr.
    ///
    /// # Errors
    ///
    /// If there is no summary line or more than one, or if the summary line or one of
    /// its reason lines does not follow the format of [`Summary`]; the message quotes
    /// the offending line.
    pub fn parse(stderr: &str) -> Result<Summary, String> {
        let lines: Vec<&str> = stderr.lines().collect();
        let starts: Vec<usize> = (0..lines.len())
            .filter(|&i| lines[i].starts_with(SUMMARY_PREFIX))
            .collect();
        let start = match starts.as_slice() {
            [one] => *one,
            [] => {
                return Err(format!(
                    "no `{SUMMARY_PREFIX}...` line in stderr:\n{stderr}"
                ));
            }
            many => {
                return Err(format!(
                    "{} summary lines in stderr (expected one):\n{stderr}",
                    many.len()
                ));
            }
        };
        let mut summary = Self::parse_summary_line(lines[start])?;
        for line in &lines[start + 1..] {
            let Some(rest) = line.strip_prefix(REASON_PREFIX) else {
                break;
            };
            let bad = || {
                format!("bad reason line (expected `{REASON_PREFIX}<count> <reason>`): {line:?}")
            };
            let (count, reason) = rest.split_once(' ').ok_or_else(bad)?;
            let reason = reason.trim_end();
            if !is_decimal(count) || reason.is_empty() || reason.starts_with(' ') {
                return Err(bad());
            }
            let count = count.parse().map_err(|_| bad())?;
            summary.reasons.push((reason.to_owned(), count));
        }
        Ok(summary)
    }

    fn parse_summary_line(line: &str) -> Result<Summary, String> {
        let bad = |what: &str| format!("bad summary line ({what}): {line:?}");
        let rest = line
            .trim_end()
            .strip_prefix(SUMMARY_PREFIX)
            .ok_or_else(|| bad("prefix"))?;
        let fields: Vec<&str> = rest.split(' ').collect();
        const NAMES: [&str; 7] = [
            "jitted",
            "rewritten",
            "already",
            "refused",
            "failed",
            "enters",
            "exits",
        ];
        let with_open = fields.len() == 1 + 2 * (NAMES.len() + 2);
        if fields.len() != 1 + 2 * NAMES.len() && !with_open {
            return Err(bad(
                "expected a mode and seven named counters (then `open N lost N`), single-spaced",
            ));
        }
        let mode = fields[0];
        if mode.is_empty() {
            return Err(bad("empty mode"));
        }
        let mut counts = [0u64; NAMES.len()];
        for (i, name) in NAMES.iter().enumerate() {
            let (got, value) = (fields[1 + 2 * i], fields[2 + 2 * i]);
            if got != *name {
                return Err(bad(&format!("expected `{name}`, found `{got}`")));
            }
            if !is_decimal(value) {
                return Err(bad(&format!("`{name}` is not a decimal count")));
            }
            counts[i] = value
                .parse()
                .map_err(|_| bad(&format!("`{name}` overflows")))?;
        }
        let [jitted, rewritten, already, refused, failed, enters, exits] = counts;
        let (mut open, mut lost) = (None, None);
        if with_open {
            let at = 1 + 2 * NAMES.len();
            let (open_name, open_value, lost_name, lost_value) =
                (fields[at], fields[at + 1], fields[at + 2], fields[at + 3]);
            if open_name != "open" || lost_name != "lost" {
                return Err(bad("expected `open N lost N` after `exits`"));
            }
            if !is_decimal(open_value) {
                return Err(bad("`open` is not a decimal count"));
            }
            if !is_decimal(lost_value.strip_prefix('-').unwrap_or(lost_value)) {
                return Err(bad("`lost` is not a decimal number"));
            }
            open = Some(open_value.parse().map_err(|_| bad("`open` overflows"))?);
            lost = Some(lost_value.parse().map_err(|_| bad("`lost` overflows"))?);
        }
        Ok(Summary {
            mode: mode.to_owned(),
            jitted,
            rewritten,
            already,
            refused,
            failed,
            enters,
            exits,
            open,
            lost,
            reasons: Vec::new(),
        })
    }

    /// The count of a reason line whose reason is exactly `reason`, 0 if there is none.
    pub fn reason(&self, reason: &str) -> u64 {
        self.reasons
            .iter()
            .filter(|(r, _)| r == reason)
            .map(|(_, n)| n)
            .sum()
    }
}

fn is_decimal(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

// ---------------------------------------------------------------------------------------
// Building the sample profiler
// ---------------------------------------------------------------------------------------

/// The sample profiler cdylib, `<target>/<profile>/examples/libprofiler.so`, for the
/// profile this test binary was built with.
///
/// Unless `ILREWRITE_PROFILER` names a prebuilt cdylib (then that path is returned as
/// is), this runs `cargo build --example profiler --features clr[,pe]` (with `pe` when
/// this test binary has it, so the library is not rebuilt with other features) once
/// per process, with `--release` or `--profile <name>` to match the test binary: a
/// no-op when the cdylib is up to date, a build when it is missing or stale.
///
/// # Panics
///
/// If the build fails (with cargo's output) or the cdylib is not where expected.
pub fn sample_profiler() -> PathBuf {
    static PROFILER: OnceLock<PathBuf> = OnceLock::new();
    PROFILER
        .get_or_init(|| {
            if let Some(path) = std::env::var_os("ILREWRITE_PROFILER") {
                return PathBuf::from(path);
            }
            let mut features = vec!["clr"];
            if cfg!(feature = "pe") {
                features.push("pe");
            }
            if cfg!(feature = "elt-test-modes") {
                features.push("elt-test-modes");
            }
            build_example_cdylib("profiler", &features)
        })
        .clone()
}

/// The directory of the profile this test binary was built with: the parent of the
/// `deps/` directory holding the binary (`target/debug`, `target/release`, ...).
///
/// # Panics
///
/// If the binary is not in a `deps/` directory (not run from cargo's layout).
pub fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let deps = exe.parent().expect("the test binary's directory");
    assert!(
        deps.file_name().is_some_and(|n| n == "deps"),
        "{} is not in a cargo deps/ directory",
        exe.display()
    );
    deps.parent().expect("the profile directory").to_path_buf()
}

/// Builds the example `name` of this package, a cdylib, with `features`, into the
/// profile directory of this test binary ([`profile_dir`]) and returns
/// `<profile dir>/examples/lib<name>.so` (with the platform's prefix and suffix).
///
/// The target directory passed to cargo is the parent of the profile directory, so the
/// build reuses the test build's artifacts (when the test was built for an explicit
/// `--target`, that is `target/<triple>`, a separate directory; it still works).
///
/// # Panics
///
/// If cargo fails (with its output) or the cdylib is not there afterwards.
pub fn build_example_cdylib(name: &str, features: &[&str]) -> PathBuf {
    build_artifact(None, Artifact::ExampleCdylib(name), features)
}

/// [`build_example_cdylib`] for an example of the workspace member `package` (built
/// with its default features).
pub fn build_package_example_cdylib(package: &str, name: &str) -> PathBuf {
    build_artifact(Some(package), Artifact::ExampleCdylib(name), &[])
}

/// Builds the command-line tool `ilrewrite` (workspace member `cli/`) into the profile
/// directory of this test binary and returns its path (`<profile dir>/ilrewrite`), as
/// [`build_example_cdylib`] does for libraries. The library `ilrewrite` is built with
/// the features of this test, so that the build shares the test's.
///
/// # Panics
///
/// As [`build_example_cdylib`].
pub fn build_cli() -> PathBuf {
    let features: Vec<&str> = [
        ("ilrewrite/pe", cfg!(feature = "pe")),
        ("ilrewrite/clr", cfg!(feature = "clr")),
        ("ilrewrite/elt-test-modes", cfg!(feature = "elt-test-modes")),
    ]
    .into_iter()
    .filter_map(|(feature, on)| on.then_some(feature))
    .collect();
    build_artifact(Some("ilrewrite-cli"), Artifact::Bin("ilrewrite"), &features)
}

/// What [`build_artifact`] builds.
enum Artifact<'a> {
    /// An example that is a cdylib (`--example NAME`).
    ExampleCdylib(&'a str),
    /// A program (`--bin NAME`).
    Bin(&'a str),
}

fn build_artifact(package: Option<&str>, artifact: Artifact<'_>, features: &[&str]) -> PathBuf {
    let profile_dir = profile_dir();
    let target_dir = profile_dir.parent().expect("the target directory");
    let profile = profile_dir
        .file_name()
        .and_then(|n| n.to_str())
        .expect("a UTF-8 profile directory name");
    let mut cmd = Command::new(env!("CARGO"));
    cmd.arg("build")
        .arg("--manifest-path")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"));
    let built = match artifact {
        Artifact::ExampleCdylib(name) => {
            cmd.args(["--example", name]);
            profile_dir.join("examples").join(format!(
                "{}{name}{}",
                std::env::consts::DLL_PREFIX,
                std::env::consts::DLL_SUFFIX
            ))
        }
        Artifact::Bin(name) => {
            cmd.args(["--bin", name]);
            profile_dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX))
        }
    };
    cmd.arg("--target-dir").arg(target_dir);
    if let Some(package) = package {
        cmd.args(["-p", package]);
    }
    if !features.is_empty() {
        cmd.args(["--features", &features.join(",")]);
    }
    match profile {
        "debug" => {}
        "release" => {
            cmd.arg("--release");
        }
        other => {
            cmd.args(["--profile", other]);
        }
    }
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        built.is_file(),
        "{cmd:?} succeeded but {} does not exist",
        built.display()
    );
    built
}

// ---------------------------------------------------------------------------------------
// Interactive programs (`Dial.exe`)
// ---------------------------------------------------------------------------------------

/// What `Dial.exe` answers to `round` unprofiled: (name, value) of each line
/// `NAME VALUE`, in order. `Caller` is `Dial.Inline::Caller`, which returns
/// `Dial.Inline::Callee()` ([`DIAL_CALLEE`], inlined into it) + 100; the others are the
/// methods of `Dial.Values` of that name (`Branches` called with 2). Derivation in
/// `tests/programs/Dial.cs`.
pub const DIAL_ROUND: &[(&str, i32)] = &[
    ("Plain", 10),
    ("Branches", 40),
    ("Configured", 20),
    ("Caller", 105),
];

/// What `Dial.Inline::Callee` returns: the part of `Caller`'s 105 that a change of the
/// inlined method changes.
pub const DIAL_CALLEE: i32 = 5;

/// What `Dial.Values::Later` returns (`later` prints `Later 30`); nothing calls it
/// before the first `later`.
pub const DIAL_LATER: i32 = 30;

/// What the dynamic method `Dyn.Emitted::Value` returns (`dynamic` prints `Emitted 7`).
pub const DIAL_EMITTED: i32 = 7;

/// A running program with piped stdin, stdout and stderr, driven line by line: the
/// protocol of `Dial.exe` (a command a line; its answer, zero or more lines, ends with a
/// line `done`).
///
/// A thread reads stdout into a channel of lines; another appends stderr to a buffer
/// that [`Interactive::stderr_so_far`] and [`Interactive::wait_stderr_line`] read.
/// Every wait is bounded by [`timeout`]; when one runs out, or the program ends
/// before answering, the test panics with the whole exchange so far (the lines sent,
/// prefixed with `> `, and the lines received) and the stderr. Dropping it kills the
/// program if it is still running.
///
/// ```ignore
/// let mut dial = Interactive::start(command_for(rt, &program("Dial")));
/// assert_eq!(dial.answer("later"), ["Later 30"]);
/// let out = dial.finish();
/// ```
pub struct Interactive {
    child: std::process::Child,
    /// `None` once closed by [`Interactive::finish`].
    stdin: Option<std::process::ChildStdin>,
    /// Lines of stdout, each with its line terminator (`\n`) if it had one.
    lines: std::sync::mpsc::Receiver<String>,
    /// Everything on stderr so far.
    stderr: std::sync::Arc<std::sync::Mutex<String>>,
    stdout_reader: Option<std::thread::JoinHandle<()>>,
    stderr_reader: Option<std::thread::JoinHandle<()>>,
    /// The lines sent (`> line`) and received, in order, for panic messages.
    transcript: Vec<String>,
    /// The command, for panic messages.
    what: String,
}

impl Interactive {
    /// Spawns `cmd` (e.g. from [`command_for`], with [`profile`] and more variables set)
    /// with stdin, stdout and stderr piped.
    ///
    /// # Panics
    ///
    /// If it cannot be started.
    pub fn start(mut cmd: Command) -> Interactive {
        use std::io::BufRead;
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let what = format!("{cmd:?}");
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("piped stdout");
        let stderr_pipe = child.stderr.take().expect("piped stderr");
        let (sender, lines) = std::sync::mpsc::channel();
        let stdout_reader = std::thread::spawn(move || {
            let mut reader = std::io::BufReader::new(stdout);
            let mut bytes = Vec::new();
            loop {
                bytes.clear();
                match reader.read_until(b'\n', &mut bytes) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        let line = String::from_utf8_lossy(&bytes).into_owned();
                        if sender.send(line).is_err() {
                            break;
                        }
                    }
                }
            }
        });
        let stderr = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let buffer = std::sync::Arc::clone(&stderr);
        let stderr_reader = std::thread::spawn(move || {
            // Whole lines only (but the last, if it has no terminator), so that a line
            // is never seen half-written.
            let mut reader = std::io::BufReader::new(stderr_pipe);
            let mut bytes = Vec::new();
            loop {
                bytes.clear();
                match reader.read_until(b'\n', &mut bytes) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => buffer
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .push_str(&String::from_utf8_lossy(&bytes)),
                }
            }
        });
        Interactive {
            child,
            stdin,
            lines,
            stderr,
            stdout_reader: Some(stdout_reader),
            stderr_reader: Some(stderr_reader),
            transcript: Vec::new(),
            what,
        }
    }

    /// The process id of the program (e.g. to find `/tmp/perf-<pid>.map`, or a control
    /// socket named after it).
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// Writes `line` and a `\n` to the program's stdin and flushes it, without waiting
    /// for an answer.
    ///
    /// # Panics
    ///
    /// If stdin is closed or the write fails (the program has ended), with the exchange
    /// so far and stderr.
    pub fn send(&mut self, line: &str) {
        use std::io::Write;
        self.transcript.push(format!("> {line}"));
        let result = match self.stdin.as_mut() {
            Some(stdin) => stdin
                .write_all(format!("{line}\n").as_bytes())
                .and_then(|()| stdin.flush()),
            None => Err(std::io::Error::other("stdin is closed")),
        };
        if let Err(e) = result {
            self.fail(&format!("cannot send {line:?}: {e}"));
        }
    }

    /// Sends `line` ([`Interactive::send`]) and returns the lines of the answer: those
    /// received up to, not including, the next line `done` (without their line
    /// terminators).
    ///
    /// # Panics
    ///
    /// If `done` has not arrived within [`timeout`] of sending, or stdout ends before
    /// it (the program ended), with the exchange so far and stderr.
    pub fn answer(&mut self, line: &str) -> Vec<String> {
        self.send(line);
        let deadline = Instant::now() + timeout();
        let mut answer = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(raw) => {
                    let text = raw
                        .strip_suffix('\n')
                        .map(|l| l.strip_suffix('\r').unwrap_or(l))
                        .unwrap_or(&raw)
                        .to_owned();
                    self.transcript.push(text.clone());
                    if text == "done" {
                        return answer;
                    }
                    answer.push(text);
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    self.fail(&format!("no `done` for {line:?} within {:?}", timeout()))
                }
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    let status = self.wait_briefly();
                    self.fail(&format!(
                        "stdout ended before `done` for {line:?} (the program {status})"
                    ))
                }
            }
        }
    }

    /// Everything the program wrote on stderr so far.
    pub fn stderr_so_far(&self) -> String {
        self.stderr
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Waits until a line of stderr starts with `prefix` and returns the first such
    /// line (of all stderr so far, not only what came since the last call), without
    /// its terminator. Polls every 10 ms.
    ///
    /// # Panics
    ///
    /// After [`timeout`], or once the program has ended without such a line, with the
    /// exchange so far and stderr.
    pub fn wait_stderr_line(&self, prefix: &str) -> String {
        self.wait_stderr_lines(prefix, 1).swap_remove(0)
    }

    /// Waits until at least `count` lines of stderr start with `prefix` and returns all
    /// such lines so far (at least `count`), in order, without their terminators: for an
    /// event the program reports once per occurrence. Polls every 10 ms.
    ///
    /// # Panics
    ///
    /// As [`Interactive::wait_stderr_line`].
    pub fn wait_stderr_lines(&self, prefix: &str, count: usize) -> Vec<String> {
        let deadline = Instant::now() + timeout();
        loop {
            // Read the reader's state before stderr, so that a line written just
            // before the program ended is seen.
            let ended = self
                .stderr_reader
                .as_ref()
                .is_none_or(std::thread::JoinHandle::is_finished);
            let found: Vec<String> = self
                .stderr_so_far()
                .lines()
                .filter(|l| l.starts_with(prefix))
                .map(str::to_owned)
                .collect();
            if found.len() >= count {
                return found;
            }
            if ended {
                self.fail(&format!(
                    "stderr ended with {} of {count} lines starting with {prefix:?}",
                    found.len()
                ));
            }
            if Instant::now() >= deadline {
                self.fail(&format!(
                    "{} of {count} lines starting with {prefix:?} on stderr after {:?}",
                    found.len(),
                    timeout()
                ));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Closes stdin (the program sees EOF) and waits for the program to end, within
    /// [`timeout`]; returns its status, the stdout lines not yet returned by
    /// [`Interactive::answer`] (as written, terminators included) and all of stderr.
    ///
    /// # Panics
    ///
    /// If it does not end within [`timeout`] (it is killed), with the exchange so far
    /// and stderr.
    pub fn finish(mut self) -> Output {
        drop(self.stdin.take());
        let limit = timeout();
        let start = Instant::now();
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if start.elapsed() >= limit => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    self.fail(&format!("it did not end within {limit:?} of closing stdin"));
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(5)),
                Err(e) => self.fail(&format!("cannot wait for it: {e}")),
            }
        };
        // The pipes reach EOF when the process is gone.
        if let Some(reader) = self.stdout_reader.take() {
            reader.join().expect("the stdout reader panicked");
        }
        if let Some(reader) = self.stderr_reader.take() {
            reader.join().expect("the stderr reader panicked");
        }
        let stdout: String = self.lines.try_iter().collect();
        Output {
            status,
            stdout,
            stderr: self.stderr_so_far(),
        }
    }

    /// The status after at most a second's wait, as text, for a message.
    fn wait_briefly(&mut self) -> String {
        let start = Instant::now();
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => return format!("ended: {status}"),
                Ok(None) if start.elapsed() >= Duration::from_secs(1) => {
                    return "is still running".to_owned();
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(5)),
                Err(e) => return format!("cannot be waited for: {e}"),
            }
        }
    }

    /// Panics with `why`, the exchange so far, the stdout lines not yet read, and
    /// stderr.
    fn fail(&self, why: &str) -> ! {
        let pending: String = self.lines.try_iter().collect();
        panic!(
            "{}: {why}\nexchange:\n{}\nstdout not yet read:\n{pending}\nstderr:\n{}",
            self.what,
            self.transcript.join("\n"),
            self.stderr_so_far()
        );
    }
}

impl Drop for Interactive {
    /// Kills the program if it is still running (a test that panicked mid-exchange).
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

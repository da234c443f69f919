//! The C instrumentation-method libraries of `tests/components/` and runs of the test
//! programs under `examples/engine.rs` configured with them: the helpers of
//! `tests/clr_components.rs` and `tests/clr_components_hostile.rs`.
//!
//! * [`library`] compiles every `tests/components/*.c` once per test binary (the system
//!   C compiler: `$CC`, else `cc`) and gives one's path; [`entry`] is a configuration
//!   entry naming one;
//! * [`run`] runs a program under the engine with a configuration;
//! * [`assert_attached`], [`assert_unchanged`] and [`refused`] check a run;
//! * the tracers (`tests/components/tracer.c`, `method-sdk/examples/tracer_rs.rs`,
//!   which print the same lines): [`tracer_config`] configures one, [`run_traced`] runs
//!   a program under it, [`without_tracer`] and [`count`] read its stdout (for
//!   `tests/clr_components_module.rs` and `tests/clr_component_sdk.rs`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use super::{
    Output, Runtime, build_example_cdylib, command_for, config_file, exit_code, expected_stdout,
    for_each_runtime, profile, profile_dir, program, run_command, run_profiled, run_unprofiled,
};

/// `examples/engine.rs`'s CLSID.
pub const ENGINE: &str = "{5B0E6A3C-8D21-4F7A-B6C9-2E1D4A7F3C85}";

pub fn features() -> Vec<&'static str> {
    let mut f = vec!["clr"];
    if cfg!(feature = "pe") {
        f.push("pe");
    }
    f
}

/// The engine profiler, built once per test binary.
pub fn engine() -> &'static Path {
    static ENGINE_SO: OnceLock<PathBuf> = OnceLock::new();
    ENGINE_SO.get_or_init(|| build_example_cdylib("engine", &features()))
}

/// The C compiler: `$CC`, else `cc`.
pub fn c_compiler() -> String {
    std::env::var("CC")
        .ok()
        .filter(|cc| !cc.trim().is_empty())
        .unwrap_or_else(|| "cc".to_owned())
}

/// `tests/components/*.c`, each compiled (`-shared -fPIC -O2 -Wall -Wextra -Werror -I
/// include`) into `<profile dir>/components/lib<stem>.so`, once per test binary;
/// returns that directory.
///
/// # Panics
///
/// Without a C compiler (saying so), or when one does not compile (with its output).
pub fn components() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let out = profile_dir().join("components");
        std::fs::create_dir_all(&out).expect("the components directory is created");
        let cc = c_compiler();
        let mut sources: Vec<PathBuf> = std::fs::read_dir(root.join("tests/components"))
            .expect("tests/components is readable")
            .map(|e| e.expect("a directory entry").path())
            .filter(|p| p.extension().is_some_and(|e| e == "c"))
            .collect();
        sources.sort();
        assert!(!sources.is_empty(), "no C sources in tests/components");
        for source in &sources {
            let stem = source
                .file_stem()
                .and_then(|s| s.to_str())
                .expect("a UTF-8 name");
            let target = out.join(library_file(stem));
            // Written under a name of this process, then renamed: another test binary
            // compiling the same library at once never sees half a file.
            let partial = out.join(format!(
                "{}.{}.partial",
                library_file(stem),
                std::process::id()
            ));
            let mut cmd = Command::new(&cc);
            cmd.args([
                "-shared", "-fPIC", "-O2", "-Wall", "-Wextra", "-Werror", "-I",
            ])
            .arg(root.join("include"))
            .arg(source)
            .arg("-o")
            .arg(&partial);
            let done = cmd.output().unwrap_or_else(|e| {
                panic!(
                    "these tests compile tests/components/*.c with the system C compiler, and \
                     {cc:?} cannot be run ({e}): install one (cc, gcc or clang) or name it in $CC"
                )
            });
            assert!(
                done.status.success(),
                "{cmd:?} failed ({}):\n{}{}",
                done.status,
                String::from_utf8_lossy(&done.stdout),
                String::from_utf8_lossy(&done.stderr)
            );
            std::fs::rename(&partial, &target).expect("the library is moved into place");
        }
        out
    })
}

/// The file name of the library compiled from `tests/components/<stem>.c`.
pub fn library_file(stem: &str) -> String {
    format!(
        "{}{stem}{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    )
}

/// The library compiled from `tests/components/<stem>.c`.
pub fn library(stem: &str) -> PathBuf {
    components().join(library_file(stem))
}

/// `path` as a TOML basic string.
pub fn toml_str(path: &Path) -> String {
    let text = path.to_str().expect("a UTF-8 path");
    format!("{text:?}")
}

/// Test program `program` on `rt` under the engine, configured by `config` (written to
/// a file named after `name` and the runtime), with `env` added.
pub fn run(rt: &Runtime, program: &str, name: &str, config: &str, env: &[(&str, &str)]) -> Output {
    let engine = engine();
    let runtime: String = rt
        .to_string()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let config = config_file(&format!("components-{name}{runtime}"), config);
    let config = config.to_str().expect("a UTF-8 path");
    let mut vars = vec![("ENGINE_CONFIG", config)];
    vars.extend_from_slice(env);
    run_profiled(rt, program, engine, ENGINE, &vars)
}

/// The manager's line at initialization: the profiler was loaded and attached.
pub fn assert_attached(out: &Output) {
    assert!(
        out.stderr
            .lines()
            .any(|l| l.starts_with("ilrewrite: runtime ")),
        "the profiler did not attach:\n{}",
        out.stderr
    );
}

/// `out` is exactly what `program` does unprofiled: stdout and exit code.
pub fn assert_unchanged(rt: &Runtime, program: &str, out: &Output) {
    let err = &out.stderr;
    assert_eq!(out.stdout, expected_stdout(program), "{err}");
    assert_eq!(out.code(), exit_code(program), "{err}");
    let plain = run_unprofiled(rt, program);
    assert_eq!(out.stdout, plain.stdout, "{err}");
}

/// `config` must be refused: exactly one stderr line contains every one of `says` (the
/// library and the reason; written by the profiler, so it was loaded), and `Answer.exe`
/// runs as unprofiled (`answer 41`, exit 41).
pub fn refused(name: &str, config: &str, env: &[(&str, &str)], says: &[&str]) {
    for_each_runtime(|rt| {
        let out = run(rt, "Answer", name, config, env);
        let err = &out.stderr;
        assert_unchanged(rt, "Answer", &out);
        let lines: Vec<&str> = err
            .lines()
            .filter(|l| says.iter().all(|s| l.contains(s)))
            .collect();
        assert_eq!(
            lines.len(),
            1,
            "one line saying all of {says:?} expected:\n{err}"
        );
    });
}

/// `offset_c`'s entry with `path` and `options` (TOML inline table content), named
/// `name`.
pub fn entry(name: &str, path: &Path, options: &str) -> String {
    format!(
        "[[method]]\nname = \"{name}\"\nlibrary = {}\noptions = {{ {options} }}\n",
        toml_str(path)
    )
}

// ---- the tracers ---------------------------------------------------------------------

/// The lines a tracer's code prints (`tracer_c`'s, `tracer_rs`'s): removed, the
/// program's own output is left.
pub fn is_tracer_line(line: &str) -> bool {
    line.starts_with("tracer ") || matches!(line, "7001" | "40002" | "900")
}

/// `stdout` without a tracer's lines (and the value after each `tracer ret`).
pub fn without_tracer(stdout: &str) -> String {
    let mut kept = String::new();
    let mut lines = stdout.lines();
    while let Some(line) = lines.next() {
        if line == "tracer ret" {
            lines.next();
        } else if !is_tracer_line(line) {
            kept.push_str(line);
            kept.push('\n');
        }
    }
    kept
}

/// How many lines of `stdout` are `line`.
pub fn count(stdout: &str, line: &str) -> usize {
    stdout.lines().filter(|l| *l == line).count()
}

/// The configuration of the tracer `name` (`tracer_c` or `tracer_rs`) in `library`,
/// with its options `assembly`, `methods` and `single_ret`.
pub fn tracer_config(
    name: &str,
    library: &Path,
    assembly: &str,
    methods: &[&str],
    single_ret: &[&str],
) -> String {
    let list = |items: &[&str]| {
        items
            .iter()
            .map(|i| format!("{i:?}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    format!(
        "[[method]]\nname = \"{name}\"\nlibrary = {}\noptions = {{ assembly = {assembly:?}, methods = [{}], single_ret = [{}] }}\n",
        toml_str(library),
        list(methods),
        list(single_ret),
    )
}

/// `program_name` with `args` on `rt` under the engine configured by `config` (written
/// to a file named after `name` and the runtime), tiered compilation off.
pub fn run_traced(
    rt: &Runtime,
    program_name: &str,
    args: &[&str],
    name: &str,
    config: &str,
) -> Output {
    let runtime: String = rt
        .to_string()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let config = config_file(&format!("traced-{name}{runtime}"), config);
    let mut cmd = command_for(rt, &program(program_name));
    cmd.args(args);
    profile(&mut cmd, engine(), ENGINE);
    cmd.env("ENGINE_CONFIG", &config);
    cmd.env("COMPlus_TieredCompilation", "0");
    run_command(cmd)
}

//! The cost of an edit through the C ABI (issue 33) against the same edit as a Rust
//! trait object, per method, in one run: `tests/programs/bin/Many.exe` (thousands of
//! methods, each JIT-compiled once: tiering off) under `examples/engine.rs` with
//!
//! * **rust**: its built-in `scale` (`factor = 1`), a Rust instrumentation method;
//! * **c**: `tests/components/offset.c` (`addend = 0`), loaded from its library;
//!
//! both on every method of `Many.Program` (filter `Many.Program::`): the same work
//! (the name compared at `wants`, the return type read, two instructions before each
//! `ret`), and neither changes what the program computes (its output is checked
//! against the unprofiled one). Runs take turns, `-n` rounds (default 11), on each
//! runtime of `ilrewrite_corpus::runtimes`.
//!
//! ```text
//! cargo build --release --features clr,pe --example engine --example component_bench
//! ./target/release/examples/component_bench [-n ROUNDS]
//! ```
//!
//! It prints, per runtime and configuration, the medians of the time in the
//! instrumentation methods' edits per rewritten method (`edit ns/method`) and in the
//! whole `JITCompilationStarted` callback per compilation (`callback ns/method`: `wants`
//! and the pipeline included), and the difference c − rust of each: the ABI's cost.
//! `offset.c` is compiled with the system C compiler (`$CC`, else `cc`) into the target
//! directory.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use ilrewrite_corpus::Runtime;

const ENGINE_CLSID: &str = "{5B0E6A3C-8D21-4F7A-B6C9-2E1D4A7F3C85}";

/// (name, configuration); `{lib}` is the C library's path.
const CONFIGS: [(&str, &str); 2] = [
    (
        "rust",
        "[[method]]\nname = \"scale\"\noptions = { filter = \"Many.Program::\", factor = 1 }\n",
    ),
    (
        "c",
        "[[method]]\nname = \"offset_c\"\nlibrary = \"{lib}\"\noptions = { filter = \"Many.Program::\", addend = 0 }\n",
    ),
];

/// One run's figures.
#[derive(Debug, Clone, Copy)]
struct Figures {
    compilations: f64,
    rewritten: f64,
    callback_ns: f64,
    edit_ns: f64,
}

fn target_dir() -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    exe.parent()
        .map(Path::to_path_buf)
        .ok_or_else(|| "no directory of the example".to_owned())
}

/// Compiles `tests/components/offset.c` into `dir`.
fn build_c_library(dir: &Path) -> Result<PathBuf, String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = dir.join(format!(
        "{}offset_c_bench{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    ));
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_owned());
    let status = Command::new(&cc)
        .args([
            "-shared", "-fPIC", "-O2", "-Wall", "-Wextra", "-Werror", "-I",
        ])
        .arg(root.join("include"))
        .arg("-o")
        .arg(&out)
        .arg(root.join("tests/components/offset.c"))
        .status()
        .map_err(|e| format!("{cc}: {e}"))?;
    match status.success() {
        true => Ok(out),
        false => Err(format!("{cc} failed to compile offset.c")),
    }
}

/// Runs Many.exe on `rt`, profiled with `config` (a file path) or not.
fn run(rt: &Runtime, engine: &Path, config: Option<&Path>) -> Result<(String, String), String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut cmd = rt.command();
    cmd.arg(root.join("tests/programs/bin/Many.exe"))
        .env("COMPlus_TieredCompilation", "0");
    if let Some(config) = config {
        cmd.env("ENGINE_CONFIG", config)
            .env("ENGINE_TIMING", "1")
            .env("CORECLR_ENABLE_PROFILING", "1")
            .env("CORECLR_PROFILER", ENGINE_CLSID)
            .env("CORECLR_PROFILER_PATH", engine);
    }
    let out = cmd.output().map_err(|e| e.to_string())?;
    Ok((
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    ))
}

/// The engine's timing line.
fn figures(stderr: &str) -> Result<Figures, String> {
    let line = stderr
        .lines()
        .find_map(|l| l.strip_prefix("engine: compilations "))
        .ok_or_else(|| format!("no timing line in:\n{stderr}"))?;
    let words: Vec<&str> = line.split(' ').collect();
    let n = |at: usize| -> Result<f64, String> {
        words
            .get(at)
            .and_then(|w| w.parse::<f64>().ok())
            .ok_or_else(|| format!("bad timing line {line:?}"))
    };
    Ok(Figures {
        compilations: n(0)?,
        rewritten: n(2)?,
        callback_ns: n(4)?,
        edit_ns: n(6)?,
    })
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

fn bench(
    rt: &Runtime,
    engine: &Path,
    configs: &[(String, PathBuf)],
    rounds: usize,
) -> Result<(), String> {
    let (expected, _) = run(rt, engine, None)?;
    let mut seen: Vec<Vec<Figures>> = vec![Vec::new(); configs.len()];
    for _ in 0..rounds {
        for (i, (name, path)) in configs.iter().enumerate() {
            let (stdout, stderr) = run(rt, engine, Some(path))?;
            if stdout != expected {
                return Err(format!(
                    "{rt} {name}: the output differs from the unprofiled run\n{stderr}"
                ));
            }
            let f = figures(&stderr)?;
            if f.rewritten < 1000.0 {
                return Err(format!(
                    "{rt} {name}: only {} methods rewritten\n{stderr}",
                    f.rewritten
                ));
            }
            seen[i].push(f);
        }
    }
    println!("{rt}: {rounds} rounds, medians");
    println!("| configuration | rewritten | edit ns/method | callback ns/method |");
    println!("|---|---:|---:|---:|");
    let mut medians = Vec::new();
    for ((name, _), runs) in configs.iter().zip(&seen) {
        let edit = median(runs.iter().map(|f| f.edit_ns / f.rewritten).collect());
        let callback = median(
            runs.iter()
                .map(|f| f.callback_ns / f.compilations)
                .collect(),
        );
        let rewritten = runs[0].rewritten;
        println!("| {name} | {rewritten} | {edit:.0} | {callback:.0} |");
        medians.push((edit, callback));
    }
    if let [(re, rc), (ce, cc)] = medians[..] {
        println!(
            "c - rust: edit {:+.0} ns/method ({:.2}x), callback {:+.0} ns/method ({:.2}x)\n",
            ce - re,
            ce / re,
            cc - rc,
            cc / rc
        );
    }
    Ok(())
}

fn main() -> ExitCode {
    let result = (|| -> Result<(), String> {
        let args: Vec<String> = std::env::args().skip(1).collect();
        let rounds = match args.as_slice() {
            [] => 11,
            [flag, n] if flag == "-n" => n.parse().map_err(|_| format!("-n {n}: a count"))?,
            _ => return Err("usage: component_bench [-n ROUNDS]".to_owned()),
        };
        let dir = target_dir()?;
        let engine = dir.join(format!(
            "{}engine{}",
            std::env::consts::DLL_PREFIX,
            std::env::consts::DLL_SUFFIX
        ));
        if !engine.is_file() {
            return Err(format!(
                "{} is missing: cargo build --release --features clr,pe --example engine",
                engine.display()
            ));
        }
        let library = build_c_library(&dir)?;
        let mut configs = Vec::new();
        for (name, text) in CONFIGS {
            let path = dir.join(format!("component_bench_{name}.toml"));
            let text = text.replace("{lib}", &library.display().to_string());
            std::fs::write(&path, text).map_err(|e| e.to_string())?;
            configs.push((name.to_owned(), path));
        }
        let runtimes = ilrewrite_corpus::runtimes().map_err(|e| e.to_string())?;
        for rt in runtimes {
            bench(rt, &engine, &configs, rounds)?;
        }
        Ok(())
    })();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("component_bench: {e}");
            ExitCode::FAILURE
        }
    }
}

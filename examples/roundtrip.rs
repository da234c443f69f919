//! Decodes and re-encodes every method body of assemblies and reports the counts.
//!
//! ```text
//! cargo run --release --features pe --example roundtrip -- [PATH...]
//! ```
//! Each PATH is an assembly or a directory (searched recursively for .dll/.exe files that
//! are managed). Default: the .NET Core 3.1.23 shared framework (provisioned on first
//! use). Exits with status 1 if any body or LocalVarSig does not round-trip byte-identical.

use ilrewrite::pe::Assembly;
use ilrewrite_audit::{RoundTripReport, round_trip_assembly};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

fn collect(path: &Path, out: &mut Vec<PathBuf>) {
    if path.is_dir() {
        let mut entries: Vec<_> = std::fs::read_dir(path)
            .map(|rd| rd.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        entries.sort();
        for e in entries {
            collect(&e, out);
        }
    } else if path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("dll") || e.eq_ignore_ascii_case("exe"))
    {
        out.push(path.to_path_buf());
    }
}

fn main() -> ExitCode {
    let args: Vec<PathBuf> = std::env::args().skip(1).map(PathBuf::from).collect();
    let mut files = Vec::new();
    if args.is_empty() {
        files = ilrewrite_corpus::framework_assemblies().expect("a .NET 3.1 runtime");
    } else {
        for a in &args {
            collect(a, &mut files);
        }
    }
    let mut total = RoundTripReport::default();
    let mut skipped = 0;
    let start = Instant::now();
    for file in &files {
        let Ok(data) = std::fs::read(file) else {
            skipped += 1;
            continue;
        };
        // Native DLLs in a directory are not assemblies: skip what does not parse.
        let Ok(asm) = Assembly::parse(&data) else {
            skipped += 1;
            continue;
        };
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        let report = round_trip_assembly(&name, &asm);
        if !report.failures.is_empty() {
            println!("{name}: {} failures", report.failures.len());
        }
        total.merge(report);
    }
    let elapsed = start.elapsed();
    println!("{total}");
    if skipped > 0 {
        println!("skipped {skipped} files that are not .NET assemblies");
    }
    println!(
        "{:.1} ms including file reads ({:.2} us per body)",
        elapsed.as_secs_f64() * 1e3,
        elapsed.as_secs_f64() * 1e6 / total.bodies.max(1) as f64
    );
    for f in total.failures.iter().take(50) {
        println!("FAILED {f}");
    }
    if total.failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

//! `ilrewrite roundtrip [PATH...]`: decodes and re-encodes every method body of
//! assemblies and reports the counts (`ilrewrite_audit::round_trip_assembly`).
//!
//! Each PATH is an assembly or a directory (searched recursively for .dll/.exe files
//! that are managed). Default: the shared framework of the default runtime (.NET 8.0.4,
//! provisioned on first use; see `ilrewrite_corpus::default_runtime`).
//!
//! A PATH that does not exist, or a file named on the command line that is not a .NET
//! assembly, is an error (status 1, the path named); in a directory, files that are not
//! .NET assemblies (native DLLs) are skipped and counted. Status 1 too if any body or
//! LocalVarSig does not round-trip byte-identical, or if no assembly was found.
//!
//! Standard output: a line per assembly with failures, then the totals, the skipped
//! files, the time and the first 50 failures.

use crate::Status;
use ilrewrite::pe::Assembly;
use ilrewrite_audit::{RoundTripReport, round_trip_assembly};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The arguments of `roundtrip`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Assemblies, or directories searched recursively for .dll and .exe files (files
    /// there that are not .NET assemblies are skipped and counted) [default: the shared
    /// framework of .NET 8.0.4, downloaded into target/ on first use]
    #[arg(value_name = "PATH")]
    paths: Vec<PathBuf>,
}

/// Appends the .dll and .exe files under directory `dir` to `out`, recursively.
fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map(|rd| rd.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    entries.sort();
    for e in entries {
        if e.is_dir() {
            collect(&e, out);
        } else if e
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("dll") || e.eq_ignore_ascii_case("exe"))
        {
            out.push(e);
        }
    }
}

/// The files to round-trip, each with whether it was named on the command line (and so
/// must be an assembly), or a message naming the path that does not exist.
fn files_of(args: &[PathBuf]) -> Result<Vec<(PathBuf, bool)>, String> {
    let mut files = Vec::new();
    for a in args {
        let meta = std::fs::metadata(a).map_err(|e| format!("{}: {e}", a.display()))?;
        if meta.is_dir() {
            let mut found = Vec::new();
            collect(a, &mut found);
            files.extend(found.into_iter().map(|f| (f, false)));
        } else {
            files.push((a.clone(), true));
        }
    }
    Ok(files)
}

/// Runs `roundtrip`.
pub(crate) fn run(args: Args) -> Status {
    let files = if args.paths.is_empty() {
        match ilrewrite_corpus::default_runtime()
            .and_then(ilrewrite_corpus::Runtime::framework_assemblies)
        {
            Ok(files) => files.into_iter().map(|f| (f, false)).collect(),
            Err(e) => {
                eprintln!("ilrewrite roundtrip: no default assemblies: {e}");
                return Status::Failure;
            }
        }
    } else {
        match files_of(&args.paths) {
            Ok(files) => files,
            Err(e) => {
                eprintln!("ilrewrite roundtrip: {e}");
                return Status::Failure;
            }
        }
    };
    // A file named on the command line must be an assembly: check them all first.
    for (file, _) in files.iter().filter(|(_, named)| *named) {
        let checked = std::fs::read(file)
            .map_err(|e| e.to_string())
            .and_then(|data| {
                Assembly::parse(&data)
                    .map(drop)
                    .map_err(|e| format!("not a .NET assembly: {e}"))
            });
        if let Err(e) = checked {
            eprintln!("ilrewrite roundtrip: {}: {e}", file.display());
            return Status::Failure;
        }
    }
    let mut total = RoundTripReport::default();
    let mut skipped = 0;
    let start = Instant::now();
    let mut assemblies = 0;
    for (file, _) in &files {
        // Native DLLs in a directory are not assemblies: skip what does not parse.
        let Ok(data) = std::fs::read(file) else {
            skipped += 1;
            continue;
        };
        let Ok(asm) = Assembly::parse(&data) else {
            skipped += 1;
            continue;
        };
        assemblies += 1;
        let name = file.file_name().map_or_else(
            || file.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        let report = round_trip_assembly(&name, &asm);
        if !report.failures.is_empty() {
            println!("{name}: {} failures", report.failures.len());
        }
        total.merge(report);
    }
    let elapsed = start.elapsed();
    if assemblies == 0 {
        eprintln!("ilrewrite roundtrip: no .NET assemblies found ({skipped} other files skipped)");
        return Status::Failure;
    }
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
        Status::Ok
    } else {
        Status::Failure
    }
}

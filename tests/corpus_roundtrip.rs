//! The codec on real IL: every method body of every assembly of the .NET Core 3.1.23
//! shared framework (165 assemblies, provisioned on first use) decodes and re-encodes
//! byte-identical, and every LocalVarSig re-encodes byte-identical. Assemblies under the
//! directories named by `ILREWRITE_EXTRA_ASSEMBLIES` are checked the same way.
#![cfg(feature = "pe")]

use ilrewrite::pe::Assembly;
use ilrewrite_audit::{RoundTripReport, round_trip_assembly};
use std::path::PathBuf;

fn audit(paths: &[PathBuf]) -> RoundTripReport {
    let mut total = RoundTripReport::default();
    for path in paths {
        let data = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        match Assembly::parse(&data) {
            Ok(asm) => total.merge(round_trip_assembly(&name, &asm)),
            Err(e) => panic!("{name}: {e}"),
        }
    }
    total
}

fn assert_clean(label: &str, report: &RoundTripReport) {
    println!("{label}: {report}");
    for f in report.failures.iter().take(30) {
        println!("  FAILED {f}");
    }
    assert!(
        report.failures.is_empty(),
        "{label}: {} failures",
        report.failures.len()
    );
}

#[test]
fn every_framework_body_round_trips_byte_identical() {
    let assemblies = ilrewrite_corpus::framework_assemblies().expect("a .NET 3.1 runtime");
    assert_eq!(assemblies.len(), 165);
    let report = audit(&assemblies);
    assert_clean("framework", &report);
    assert_eq!(report.assemblies, 165);
    assert!(report.bodies > 80_000, "{report}");
}

#[test]
fn corelib_counts_match_the_checked_facts() {
    // Counted independently: a mis-decoded instruction length or a skipped clause changes
    // these numbers even when the bytes still round-trip.
    let corelib = ilrewrite_corpus::corelib().expect("a .NET 3.1 runtime");
    let report = audit(&[corelib]);
    assert_clean("System.Private.CoreLib", &report);
    assert_eq!(report.methods, 19_586);
    assert_eq!(report.bodies, 17_490);
    assert_eq!((report.tiny, report.fat), (11_546, 5_944));
    assert_eq!(report.bodies_with_eh, 686);
    assert_eq!(report.clauses, 862);
    assert_eq!(report.code_bytes, 984_975);
    assert_eq!(report.method_instructions, 425_247);
}

#[test]
fn extra_assemblies_round_trip() {
    let extra = ilrewrite_corpus::extra_assemblies();
    if extra.is_empty() {
        println!("no ILREWRITE_EXTRA_ASSEMBLIES given");
        return;
    }
    let report = audit(&extra);
    assert_clean(&format!("{} extra assemblies", extra.len()), &report);
}

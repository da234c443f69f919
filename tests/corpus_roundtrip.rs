//! The codec on real IL: every method body of every assembly of the shared framework of
//! each runtime the tests run on (.NET 8.0.4: 168 assemblies; .NET Core 3.1.23: 165;
//! provisioned on first use) decodes and re-encodes byte-identical, and every
//! LocalVarSig re-encodes byte-identical. Assemblies under the directories named by
//! `ILREWRITE_EXTRA_ASSEMBLIES` are checked the same way.
#![cfg(feature = "pe")]

use ilrewrite::pe::Assembly;
use ilrewrite_audit::{RoundTripReport, round_trip_assembly};
use std::path::PathBuf;

mod clr_support;
use clr_support::for_each_runtime;

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
    for_each_runtime(|rt| {
        let assemblies = rt.framework_assemblies().unwrap_or_else(|e| panic!("{e}"));
        let report = audit(&assemblies);
        assert_clean(&format!("{rt} framework"), &report);
        assert_eq!(report.assemblies, assemblies.len());
        assert!(report.bodies > 80_000, "{report}");
        if let Some(facts) = rt.facts() {
            assert_eq!(assemblies.len(), facts.assemblies);
        }
    });
}

#[test]
fn corelib_counts_match_the_checked_facts() {
    // Counted independently: a mis-decoded instruction length or a skipped clause changes
    // these numbers even when the bytes still round-trip.
    for_each_runtime(|rt| {
        let report = audit(&[rt.corelib()]);
        assert_clean(&format!("{rt} System.Private.CoreLib"), &report);
        let Some(f) = rt.facts() else { return };
        assert_eq!(report.methods, f.corelib_bodies);
        assert_eq!(report.bodies, f.corelib_distinct_bodies);
        assert_eq!((report.tiny, report.fat), (f.corelib_tiny, f.corelib_fat));
        assert_eq!(report.bodies_with_eh, f.corelib_bodies_with_eh);
        assert_eq!(report.clauses, f.corelib_clauses);
        assert_eq!(report.code_bytes, f.corelib_code_bytes);
        assert_eq!(report.method_instructions, f.corelib_method_instructions);
    });
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

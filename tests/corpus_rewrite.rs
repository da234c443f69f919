//! Analysis and instrumentation on real IL: every distinct method body of the framework
//! assemblies of .NET 8.0.4 (168) and .NET Core 3.1.23 (165), and of
//! `ILREWRITE_EXTRA_ASSEMBLIES`, is verified,
//! its max stack computed and compared with the compiler's, then wrapped in try/finally
//! with entry, exit and epilogue calls (single-ret first), re-encoded, re-decoded,
//! re-verified, and its IL map checked. See `ilrewrite_audit::rewrite` for the steps.
#![cfg(feature = "pe")]

use ilrewrite::pe::Assembly;
use ilrewrite_audit::{RewriteReport, rewrite_assembly};
use std::path::PathBuf;

mod clr_support;
use clr_support::for_each_runtime;

/// Refusals the transforms are expected to make, with why they are right.
const EXPECTED_REFUSALS: &[&str] = &[
    // ECMA-335 III.3.37: jmp requires an empty stack and no enclosing protected block;
    // wrapping would make it invalid. Profilers must leave such methods alone.
    "jmp cannot be placed inside a try block",
];

fn rewrite_all(paths: &[PathBuf]) -> RewriteReport {
    let mut total = RewriteReport::default();
    for path in paths {
        let data = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let asm = Assembly::parse(&data).unwrap_or_else(|e| panic!("{name}: {e}"));
        total.merge(rewrite_assembly(&name, &asm));
    }
    total
}

fn check(label: &str, r: &RewriteReport) {
    println!("{label}:\n{r}");
    for f in r
        .verify_failures
        .iter()
        .chain(&r.max_stack_higher)
        .chain(&r.rewrite_failures)
        .take(40)
    {
        println!("  FAILED {f}");
    }
    assert!(r.verify_failures.is_empty(), "unedited bodies must verify");
    assert!(
        r.max_stack_higher.is_empty(),
        "computed max stack above the header"
    );
    assert!(r.rewrite_failures.is_empty(), "rewrites must succeed");
    for reason in r.refused.keys() {
        assert!(
            EXPECTED_REFUSALS.contains(&reason.as_str()),
            "unexpected refusal class: {reason}"
        );
    }
    let refused: usize = r.refused.values().sum();
    assert_eq!(r.rewritten + refused, r.bodies);
    // Fat headers state a max stack: ours must equal it for at least 99% of them (the
    // rest: compilers over-estimate, never under). Tiny headers imply 8 and were checked
    // to need no more.
    let fat = r.bodies - r.tiny_bodies;
    assert!(
        r.max_stack_equal * 100 >= fat * 99,
        "only {} of {fat} fat-header max stacks equal",
        r.max_stack_equal,
    );
}

#[test]
fn every_framework_body_verifies_and_rewrites() {
    for_each_runtime(|rt| {
        let assemblies = rt.framework_assemblies().unwrap_or_else(|e| panic!("{e}"));
        if let Some(f) = rt.facts() {
            assert_eq!(assemblies.len(), f.assemblies);
        }
        let report = rewrite_all(&assemblies);
        check(&format!("{rt} framework"), &report);
        assert!(report.bodies > 80_000);
    });
}

#[test]
fn extra_assemblies_verify_and_rewrite() {
    let extra = ilrewrite_corpus::extra_assemblies();
    if extra.is_empty() {
        println!("no ILREWRITE_EXTRA_ASSEMBLIES given");
        return;
    }
    check("extra", &rewrite_all(&extra));
}

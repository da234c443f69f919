//! What the tests know of each pinned framework: one table per version.
//!
//! Every number here was counted on the framework it describes (by the tests that
//! assert it, which print how they count); a test that needs one asks the runtime in
//! hand ([`crate::Runtime::facts`]) rather than assuming a version.

/// Facts of one version of the `Microsoft.NETCore.App` shared framework (linux-x64).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrameworkFacts {
    /// The framework version these facts are of.
    pub version: &'static str,
    /// Managed assemblies (`*.dll` with a CLI header) in the framework directory.
    pub assemblies: usize,
    /// How many of them are ReadyToRun (precompiled).
    pub ready_to_run_assemblies: usize,
    /// Whether `System.Runtime.dll` is ReadyToRun (on 8.0.4 it is a facade without
    /// ReadyToRun code).
    pub system_runtime_is_ready_to_run: bool,
    /// Distinct IL bodies of all the framework's assemblies (distinct RVAs per assembly).
    pub distinct_bodies: usize,
    /// Rows of the MethodDef tables of all the framework's assemblies.
    pub method_defs: usize,
    /// MethodDef rows of `System.Private.CoreLib.dll`.
    pub corelib_method_defs: usize,
    /// CoreLib's methods with an IL body.
    pub corelib_bodies: usize,
    /// CoreLib's distinct bodies (distinct RVAs).
    pub corelib_distinct_bodies: usize,
    /// CoreLib's distinct bodies with a tiny header.
    pub corelib_tiny: usize,
    /// CoreLib's distinct bodies with a fat header.
    pub corelib_fat: usize,
    /// CoreLib's distinct bodies with exception-handling clauses.
    pub corelib_bodies_with_eh: usize,
    /// The exception-handling clauses of CoreLib's distinct bodies.
    pub corelib_clauses: usize,
    /// Instructions of CoreLib's methods with a body, each method counted (a body
    /// shared by several methods counts once for each).
    pub corelib_method_instructions: usize,
    /// Bytes of IL code in CoreLib's distinct bodies.
    pub corelib_code_bytes: usize,
    /// Instructions in CoreLib's distinct bodies.
    pub corelib_instructions: usize,
    /// Overloads of `System.String::Concat` in CoreLib.
    pub string_concat_overloads: usize,
}

/// .NET 8.0.4.
const NET_8_0_4: FrameworkFacts = FrameworkFacts {
    version: "8.0.4",
    assemblies: 168,
    ready_to_run_assemblies: 89,
    system_runtime_is_ready_to_run: false,
    distinct_bodies: 115_802,
    method_defs: 121_323,
    corelib_method_defs: 33_831,
    corelib_bodies: 31_877,
    corelib_distinct_bodies: 31_877,
    corelib_tiny: 23_458,
    corelib_fat: 8_419,
    corelib_bodies_with_eh: 869,
    corelib_clauses: 1_122,
    corelib_method_instructions: 566_561,
    corelib_code_bytes: 1_365_484,
    corelib_instructions: 566_561,
    string_concat_overloads: 14,
};

/// .NET Core 3.1.23.
const NET_CORE_3_1_23: FrameworkFacts = FrameworkFacts {
    version: "3.1.23",
    assemblies: 165,
    ready_to_run_assemblies: 163,
    system_runtime_is_ready_to_run: true,
    distinct_bodies: 87_194,
    method_defs: 101_912,
    corelib_method_defs: 21_220,
    corelib_bodies: 19_586,
    corelib_distinct_bodies: 17_490,
    corelib_tiny: 11_546,
    corelib_fat: 5_944,
    corelib_bodies_with_eh: 686,
    corelib_clauses: 862,
    corelib_method_instructions: 425_247,
    corelib_code_bytes: 984_975,
    corelib_instructions: 416_531,
    string_concat_overloads: 13,
};

impl FrameworkFacts {
    /// The facts of framework `version`, if it is one of the pinned ones.
    pub fn of(version: &str) -> Option<&'static FrameworkFacts> {
        [&NET_8_0_4, &NET_CORE_3_1_23]
            .into_iter()
            .find(|f| f.version == version)
    }
}

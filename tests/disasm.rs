//! The disassembler over System.Private.CoreLib of each runtime (.NET 8.0.4, .NET Core
//! 3.1.23): every body lists, every token is written as its name or signature, and
//! hand-picked methods list exactly as the checked-in
//! `tests/data/disasm/<version>/*.il` files say (regenerated with `ILREWRITE_BLESS=1`).
#![cfg(feature = "pe")]

use ilrewrite::MethodBody;
use ilrewrite::disasm::{MethodName, Unresolved, disassemble, method_name};
use ilrewrite::metadata::{MetadataSource, NoMetadata};
use ilrewrite::pe::Assembly;
use std::collections::HashMap;
use std::path::PathBuf;

mod clr_support;
use clr_support::{Runtime, for_each_runtime};

/// Runs `test` on each runtime's System.Private.CoreLib (provisioned on first use).
fn for_each_corelib(test: impl Fn(&Runtime, &Assembly<'_>)) {
    for_each_runtime(|rt| {
        let path = rt.corelib();
        let data = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        test(rt, &Assembly::parse(&data).unwrap());
    });
}

/// `s` without whitespace and quotes, as selectors are compared.
fn strip(s: &str) -> String {
    s.chars()
        .filter(|c| !c.is_whitespace() && *c != '\'')
        .collect()
}

/// The one MethodDef that `selector` (`Owner::Name` or `Owner::Name(params)`, as
/// listings write them) names.
fn select(asm: &Assembly<'_>, selector: &str) -> u32 {
    let (head, params) = match selector.split_once('(') {
        Some((head, params)) => (head, Some(strip(params.strip_suffix(')').unwrap()))),
        None => (selector, None),
    };
    let (owner, name) = head.rsplit_once("::").unwrap();
    let found: Vec<u32> = asm
        .methods()
        .map(Result::unwrap)
        .filter(|m| strip(m.name) == strip(name))
        .filter(|m| {
            let listed = method_name(asm, m.token);
            strip(&listed.owner) == strip(owner)
                && params
                    .as_ref()
                    .is_none_or(|p| strip(&listed.params.join(",")) == *p)
        })
        .map(|m| m.token)
        .collect();
    assert_eq!(found.len(), 1, "{selector} names {found:x?}");
    found[0]
}

#[test]
fn every_corelib_body_lists_with_every_token_resolved() {
    for_each_corelib(|rt, asm| {
        let (mut listings, mut with_clauses, mut by_label) = (0, 0, 0);
        let mut with = Unresolved::default();
        let mut total = Unresolved::default();
        for m in asm.methods() {
            let m = m.unwrap();
            let Some(bytes) = m.body else { continue };
            let body = MethodBody::decode(bytes).unwrap();
            let listing = disassemble(&body, asm, Some(m.token))
                .unwrap_or_else(|e| panic!("0x{:08x}: {e}", m.token));
            listings += 1;
            let u = listing.unresolved;
            with.hex_tokens += u32::from(u.hex_tokens > 0);
            with.ownerless_members += u32::from(u.ownerless_members > 0);
            with.undecoded_type_specs += u32::from(u.undecoded_type_specs > 0);
            with.undecoded_signatures += u32::from(u.undecoded_signatures > 0);
            total += u;
            if !body.clauses.is_empty() {
                with_clauses += 1;
                // Clauses listed as `.try IL_a to IL_b ...` lines rather than blocks.
                by_label += usize::from(listing.text.contains(".try IL_"));
            }
            assert!(
                !listing.text.contains("/* "),
                "0x{:08x}:\n{listing}",
                m.token
            );
        }
        eprintln!(
            "CoreLib: {listings} listings ({with_clauses} with EH clauses, {by_label} of them \
         by label); listings with hex tokens: {}, with ownerless members: {}, with \
         undecoded TypeSpecs: {}, with undecoded signatures: {}",
            with.hex_tokens,
            with.ownerless_members,
            with.undecoded_type_specs,
            with.undecoded_signatures
        );
        if let Some(f) = rt.facts() {
            assert_eq!(listings, f.corelib_bodies, "{rt}");
        }
        assert_eq!(with, Unresolved::default(), "totals: {total:?}");
        assert_eq!(by_label, 0);
    });
}

#[test]
fn method_names_tell_every_corelib_method_apart() {
    for_each_corelib(|rt, asm| {
        let mut seen: HashMap<String, u32> = HashMap::new();
        for m in asm.methods() {
            let m = m.unwrap();
            let name: MethodName = method_name(asm, m.token);
            assert!(name.unresolved.is_empty(), "{name}");
            assert!(!name.owner.is_empty(), "{name}");
            if let Some(other) = seen.insert(name.text.clone(), m.token) {
                panic!("0x{other:08x} and 0x{:08x} are both {name}", m.token);
            }
        }
        if let Some(f) = rt.facts() {
            assert_eq!(seen.len(), f.corelib_method_defs, "{rt}");
        }
        let concat = select(asm, "System.String::Concat(string, string)");
        assert_eq!(
            method_name(asm, concat).text,
            "string System.String::Concat(string, string)"
        );
    });
}

/// A source that gives signatures but no names.
struct SignaturesOnly<'a>(&'a Assembly<'a>);

impl MetadataSource for SignaturesOnly<'_> {
    fn signature(&self, token: u32) -> ilrewrite::Result<&[u8]> {
        self.0.signature(token)
    }
    fn method_spec_parent(&self, token: u32) -> ilrewrite::Result<u32> {
        self.0.method_spec_parent(token)
    }
}

#[test]
fn sources_without_names_still_list() {
    for_each_corelib(|rt, asm| {
        let token = select(asm, "System.Text.StringBuilder::ToString()");
        let body = MethodBody::decode(asm.method(token).unwrap().body.unwrap()).unwrap();
        let named = disassemble(&body, asm, Some(token)).unwrap();
        let signatures = disassemble(&body, &SignaturesOnly(asm), Some(token)).unwrap();
        let nothing = disassemble(&body, &NoMetadata, Some(token)).unwrap();
        // The same lines, the names replaced by tokens (without signatures, the locals
        // are one token).
        let instructions = |text: &str| text.lines().filter(|l| l.starts_with("IL_")).count();
        assert_eq!(named.text.lines().count(), signatures.text.lines().count());
        assert_eq!(instructions(&named.text), body.instrs.len(), "{rt}");
        assert_eq!(instructions(&nothing.text), body.instrs.len(), "{rt}");
        assert!(named.unresolved.is_empty());
        assert!(
            signatures.text.contains("ldfld      int32 /* 04000"),
            "{signatures}"
        );
        assert!(
            signatures.text.contains(".locals ([0] string V_0"),
            "{signatures}"
        );
        assert!(signatures.unresolved.hex_tokens > 0);
        assert_eq!(signatures.unresolved.undecoded_signatures, 0);
        assert!(nothing.text.contains("ldfld      /* 04000"), "{nothing}");
        assert!(nothing.unresolved.undecoded_signatures > 0);
    });
}

/// The methods listed in `tests/data/disasm/<version>/`, by file name: the same shapes
/// in each framework, some in other methods where a framework has no such method.
fn golden(version: &str) -> Vec<(&'static str, &'static str)> {
    let mut golden = GOLDEN.to_vec();
    let filter = match version {
        "3.1.23" => "System.RuntimeType::CreateInstanceDefaultCtor(bool, bool, bool, bool)",
        _ => "System.RuntimeType::CreateInstanceDefaultCtor(bool, bool)",
    };
    let ldtoken = match version {
        "3.1.23" => "System.Math::.cctor",
        _ => "System.Globalization.HebrewNumber::.cctor",
    };
    golden.extend([("exception_filter", filter), ("ldtoken_field", ldtoken)]);
    golden
}

/// The listings whose methods both frameworks have.
const GOLDEN: &[(&str, &str)] = &[
    ("switch", "System.Diagnostics.Tracing.Statics::Format16"),
    (
        "generic_method",
        "System.Runtime.CompilerServices.AsyncTaskMethodBuilder`1::AwaitOnCompleted(!!TAwaiter&, !!TStateMachine&)",
    ),
    (
        "generic_nested_type",
        "System.Runtime.CompilerServices.AsyncTaskMethodBuilder`1/AsyncStateMachineBox`1::ExecutionContextCallback",
    ),
    ("nested_try_finally", "System.IO.Stream/SyncStream::Close()"),
    (
        "fault_and_quoted_names",
        "System.Threading.Tasks.ThreadPoolTaskScheduler/'<FilterTasksFromWorkItems>d__6'::MoveNext",
    ),
    (
        "string_non_ascii",
        "System.Globalization.TextInfo::NeedsTurkishCasing",
    ),
    (
        "string_cjk",
        "System.Globalization.DateTimeFormatInfo::IsAllowedJapaneseTokenFollowedByNonSpaceLetter",
    ),
    (
        "string_bytearray",
        "System.Runtime.InteropServices.ComSourceInterfacesAttribute::.ctor(class System.Type, class System.Type)",
    ),
    (
        "multi_dim_array",
        "System.Globalization.ChineseLunisolarCalendar::GetYearInfo",
    ),
];

#[test]
fn golden_listings() {
    for_each_corelib(|rt, asm| {
        if rt.facts().is_none() {
            println!("{rt}: no listings recorded for this framework");
            return;
        }
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/disasm")
            .join(rt.version());
        let bless = std::env::var_os("ILREWRITE_BLESS").is_some_and(|v| v == "1");
        let mut failed = Vec::new();
        for (file, selector) in golden(rt.version()) {
            let token = select(asm, selector);
            let body = MethodBody::decode(asm.method(token).unwrap().body.unwrap()).unwrap();
            let listing = disassemble(&body, asm, Some(token)).unwrap();
            assert!(listing.unresolved.is_empty(), "{selector}");
            let path = dir.join(format!("{file}.il"));
            if bless {
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(&path, &listing.text).unwrap();
                continue;
            }
            let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
                panic!("{}: {e} (ILREWRITE_BLESS=1 writes it)", path.display())
            });
            if expected != listing.text {
                let line = expected
                    .lines()
                    .zip(listing.text.lines())
                    .position(|(a, b)| a != b)
                    .unwrap_or_else(|| expected.lines().count().min(listing.text.lines().count()));
                eprintln!(
                    "{}: differs from line {}:\n--- expected\n{}\n--- listed\n{}",
                    path.display(),
                    line + 1,
                    expected.lines().nth(line).unwrap_or("(end)"),
                    listing.text.lines().nth(line).unwrap_or("(end)")
                );
                failed.push(file);
            }
        }
        assert!(
            failed.is_empty(),
            "listings differ from tests/data/disasm: {failed:?}; ILREWRITE_BLESS=1 rewrites them"
        );
    });
}

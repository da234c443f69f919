//! Tests of the ReadyToRun header and inlining-record reader (`ilrewrite::pe::ready_to_run`)
//! against the real framework assemblies of both test runtimes (.NET 8.0.4: R2R 9.1 with
//! a `CrossModuleInlineInfo` section; .NET Core 3.1.23: R2R 3.1 with `InliningInfo`),
//! the committed test programs (not ReadyToRun), and mutated section bytes.
#![cfg(feature = "pe")]

use ilrewrite::body::{Decoder, MethodBody};
use ilrewrite::metadata::MetadataSource;
use ilrewrite::opcode::OpCode;
use ilrewrite::pe::ready_to_run::{
    InlineMethod, InliningFormat, InliningTable, ReadyToRun, inliners_in_file, read_inliners,
    section_type,
};
use ilrewrite::pe::{Assembly, PeFile, TableId};
use proptest::prelude::*;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::time::Instant;

mod clr_support;
mod common;
use clr_support::{Runtime, for_each_runtime, programs_dir};

/// What .NET 8.0.4 reported (`RequestReJITWithInliners`, in the runs where it found any)
/// as the inliners of `System.String::IsNullOrEmpty(string)` in CoreLib, and that
/// CoreLib's inlining records list too.
const IS_NULL_OR_EMPTY_INLINERS_8: &[&str] = &[
    "System.IO.Path::CombineInternal",
    "System.AppContext::TryGetSwitch",
    "System.ArgumentException::ThrowIfNullOrEmpty",
    "System.StartupHookProvider::ProcessStartupHooks",
    "System.Globalization.CultureData::GetNFIValues",
];

/// What .NET 8.0.4 also reported, but CoreLib's records do not list as inliners of
/// `IsNullOrEmpty` (they have records of their own, listing other inlinees): the runtime
/// must have found these elsewhere (its tracking of JIT-time inlining, for methods it
/// compiled itself in that run, is the one other source `RequestReJITWithInliners` has).
const IS_NULL_OR_EMPTY_NOT_IN_RECORDS_8: &[&str] = &[
    "System.Diagnostics.Tracing.EventListener::DisposeOnShutdown",
    "System.Diagnostics.Tracing.XplatEventLogger::.cctor",
    "System.Diagnostics.Tracing.EventListener::AddEventSource",
];

/// `Namespace.Type::Name` of a MethodDef (nested types by their own name).
fn method_name(asm: &Assembly<'_>, token: u32) -> String {
    let m = asm.method(token).unwrap();
    match m.declaring_type {
        Some(t) => format!("{t}::{}", m.name),
        None => format!("?::{}", m.name),
    }
}

/// The MethodDef of `Namespace.Type::name` (the first one, for overloads).
fn find_method(asm: &Assembly<'_>, ty: &str, name: &str) -> u32 {
    asm.methods()
        .map(Result::unwrap)
        .find(|m| m.name == name && m.declaring_type.is_some_and(|t| t.to_string() == ty))
        .unwrap_or_else(|| panic!("no {ty}::{name}"))
        .token
}

fn is_net8(rt: &Runtime) -> bool {
    rt.major() >= 8
}

// ---- the headers -----------------------------------------------------------------------

#[test]
fn headers_and_sections() {
    for_each_runtime(|rt| {
        for name in [
            "System.Private.CoreLib.dll",
            "System.Collections.dll",
            "System.Private.Uri.dll",
            "System.Linq.dll",
        ] {
            let data = std::fs::read(rt.framework_dir().join(name)).unwrap();
            let pe = PeFile::parse(&data).unwrap();
            let r2r = ReadyToRun::parse(&pe).unwrap().expect("a ReadyToRun image");
            let asm = Assembly::parse(&data).unwrap();
            assert_eq!(Some(r2r.version()), asm.ready_to_run_version());
            let types: Vec<u32> = r2r.sections().map(|(t, _)| t).collect();
            println!(
                "{name}: R2R {:?} flags {:#x} sections {types:?}",
                r2r.version(),
                r2r.flags()
            );
            let from_file = ReadyToRun::read_from(&mut Cursor::new(&data))
                .unwrap()
                .unwrap();
            assert_eq!(from_file, r2r);
            assert!(!r2r.is_composite());
            let formats: Vec<InliningFormat> = r2r.inlining_sections().map(|(f, _)| f).collect();
            if is_net8(rt) {
                assert_eq!(r2r.version(), (9, 1));
                assert_eq!(
                    formats,
                    [InliningFormat::CrossModuleInlineInfo { multi_module: true }],
                    "{name}"
                );
                assert!(r2r.section(section_type::INLINING_INFO).is_none());
                assert!(r2r.section(section_type::INLINING_INFO2).is_none());
            } else {
                assert_eq!(r2r.version(), (3, 1));
                assert_eq!(formats, [InliningFormat::InliningInfo], "{name}");
            }
        }
    });
}

#[test]
fn non_ready_to_run_images_give_none() {
    let mut programs = 0;
    for entry in std::fs::read_dir(programs_dir().join("bin")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "exe" && e != "dll") {
            continue;
        }
        let data = std::fs::read(&path).unwrap();
        let pe = PeFile::parse(&data).unwrap();
        assert_eq!(ReadyToRun::parse(&pe).unwrap(), None, "{}", path.display());
        assert_eq!(
            ReadyToRun::read_from(&mut Cursor::new(&data)).unwrap(),
            None
        );
        assert_eq!(inliners_in_file(&path, &[0x0600_0001]).unwrap(), None);
        programs += 1;
    }
    assert!(programs > 5, "only {programs} test programs");
    for_each_runtime(|rt| {
        let (mut none, mut some) = (0, 0);
        for path in rt.framework_assemblies().unwrap() {
            let data = std::fs::read(&path).unwrap();
            let asm = Assembly::parse(&data).unwrap();
            let r2r = ReadyToRun::parse(asm.pe()).unwrap();
            assert_eq!(r2r.is_some(), asm.is_ready_to_run(), "{}", path.display());
            match r2r {
                None => none += 1,
                Some(_) => some += 1,
            }
        }
        println!("{rt}: {some} ReadyToRun assemblies, {none} not (facades)");
        let facade = rt.framework_dir().join("netstandard.dll");
        let data = std::fs::read(&facade).unwrap();
        let r2r = ReadyToRun::parse(&PeFile::parse(&data).unwrap()).unwrap();
        if is_net8(rt) {
            assert_eq!(r2r, None);
            assert!(none > 0);
        } else {
            // .NET Core 3.1 compiled its facades too: a header, an empty InliningInfo.
            let r2r = r2r.unwrap();
            let tables = r2r.inlining_tables(&PeFile::parse(&data).unwrap()).unwrap();
            assert_eq!(tables.len(), 1);
            assert!(tables[0].records().unwrap().is_empty());
        }
    });
}

// ---- String.IsNullOrEmpty --------------------------------------------------------------

#[test]
fn is_null_or_empty_inliners() {
    for_each_runtime(|rt| {
        let path = rt.corelib();
        let data = std::fs::read(&path).unwrap();
        let asm = Assembly::parse(&data).unwrap();
        let r2r = ReadyToRun::parse(asm.pe()).unwrap().unwrap();
        let target = find_method(&asm, "System.String", "IsNullOrEmpty");
        let inliners = r2r.inliners_of(asm.pe(), target).unwrap();
        let names: Vec<String> = inliners.iter().map(|&t| method_name(&asm, t)).collect();
        println!("{rt}: {} inliners of String::IsNullOrEmpty:", names.len());
        for n in &names {
            println!("  {n}");
        }
        let from_file = inliners_in_file(&path, &[target]).unwrap().unwrap();
        assert_eq!(from_file, std::slice::from_ref(&inliners));
        let mut graph = CallGraph::new(&asm);
        if is_net8(rt) {
            for want in IS_NULL_OR_EMPTY_INLINERS_8 {
                assert!(names.iter().any(|n| n == want), "{want} missing");
            }
            for other in IS_NULL_OR_EMPTY_NOT_IN_RECORDS_8 {
                assert!(!names.iter().any(|n| n == other), "{other} listed");
                let (ty, name) = other.split_once("::").unwrap();
                let m = find_method(&asm, ty, name);
                println!(
                    "  not listed: {other}; calls from its IL to IsNullOrEmpty: {:?}",
                    graph.distance(m, target, true)
                );
            }
        } else {
            // No ground truth on 3.1 (the runtime never reported inliners there): the
            // list must be non-empty, of CoreLib methods with IL that call the target.
            assert!(!inliners.is_empty());
            for &t in &inliners {
                let d = graph.distance(t, target, true);
                assert!(d.is_some_and(|d| d <= 5), "{}", method_name(&asm, t));
            }
        }
    });
}

#[test]
fn file_reads_are_cheap() {
    for_each_runtime(|rt| {
        let path = rt.corelib();
        let data = std::fs::read(&path).unwrap();
        let asm = Assembly::parse(&data).unwrap();
        let targets = [
            find_method(&asm, "System.String", "IsNullOrEmpty"),
            find_method(&asm, "System.String", "get_Length"),
            find_method(&asm, "System.Math", "Min"),
        ];
        let r2r = ReadyToRun::parse(asm.pe()).unwrap().unwrap();
        let want: Vec<Vec<u32>> = targets
            .iter()
            .map(|&t| r2r.inliners_of(asm.pe(), t).unwrap())
            .collect();
        let n = 20;
        let start = Instant::now();
        for _ in 0..n {
            assert_eq!(inliners_in_file(&path, &targets).unwrap().unwrap(), want);
        }
        let per_call = start.elapsed() / n;
        let start = Instant::now();
        for _ in 0..n {
            let data = std::fs::read(&path).unwrap();
            let pe = PeFile::parse(&data).unwrap();
            let r2r = ReadyToRun::parse(&pe).unwrap().unwrap();
            for &t in &targets {
                r2r.inliners_of(&pe, t).unwrap();
            }
        }
        let whole = start.elapsed() / n;
        let inlining: u64 = r2r
            .inlining_sections()
            .map(|(_, d)| u64::from(d.size))
            .sum();
        println!(
            "{rt}: inliners of {} methods from the file: {per_call:?} a call (reads {inlining} \
             bytes of inlining records of a {} byte file); reading the whole file instead: \
             {whole:?}; counts {:?}",
            targets.len(),
            data.len(),
            want.iter().map(Vec::len).collect::<Vec<_>>()
        );
    });
}

// ---- every record against the IL ------------------------------------------------------

/// The TypeDef a TypeSpec blob instantiates (`GENERICINST CLASS|VALUETYPE TypeDef ...`).
fn type_spec_def(blob: &[u8]) -> Option<u32> {
    if blob.len() < 3 || blob[0] != 0x15 || !matches!(blob[1], 0x11 | 0x12) {
        return None;
    }
    let (v, _) = compressed(&blob[2..])?;
    (v & 3 == 0).then(|| TableId::TypeDef.token(v >> 2))
}

fn compressed(b: &[u8]) -> Option<(u32, usize)> {
    let b0 = *b.first()?;
    if b0 & 0x80 == 0 {
        Some((u32::from(b0), 1))
    } else if b0 & 0xC0 == 0x80 {
        Some(((u32::from(b0 & 0x3F) << 8) | u32::from(*b.get(1)?), 2))
    } else {
        let r = b.get(1..4)?;
        Some((
            (u32::from(b0 & 0x1F) << 24)
                | (u32::from(r[0]) << 16)
                | (u32::from(r[1]) << 8)
                | u32::from(r[2]),
            4,
        ))
    }
}

/// The image's MethodDefs by (declaring TypeDef, name, signature).
type MethodIndex<'a> = HashMap<(u32, &'a str, &'a [u8]), u32>;

fn method_index<'a>(asm: &Assembly<'a>) -> MethodIndex<'a> {
    asm.methods()
        .map(Result::unwrap)
        .filter_map(|m| Some(((m.declaring_type?.token, m.name, m.signature), m.token)))
        .collect()
}

/// The MethodDef of this image that a call token names: itself, a MethodSpec's method,
/// or a MemberRef on a TypeDef or on a generic instantiation of one.
fn local_method(asm: &Assembly<'_>, index: &MethodIndex<'_>, token: u32) -> Option<u32> {
    match TableId::of_token(token)? {
        TableId::MethodDef => Some(token),
        TableId::MethodSpec => local_method(asm, index, asm.method_spec_method(token).ok()?),
        TableId::MemberRef => {
            let parent = asm.member_ref_parent(token).ok()?;
            let ty = match TableId::of_token(parent)? {
                TableId::TypeDef => parent,
                TableId::TypeSpec => type_spec_def(asm.type_spec(parent).ok()?)?,
                TableId::MethodDef => return Some(parent),
                _ => return None,
            };
            let name = asm.member_name(token).ok()?;
            let sig = asm.call_site_signature(token).ok()?;
            index.get(&(ty, name, sig)).copied()
        }
        _ => None,
    }
}

/// The call tokens (`call`, `callvirt`, `newobj`, `jmp`, `ldftn`, `ldvirtftn`) of a
/// method's IL, unresolved; empty without an IL body.
fn call_tokens(asm: &Assembly<'_>, method: u32) -> Vec<u32> {
    let m = asm.method(method).unwrap();
    let Some(body) = m.body.filter(|_| m.is_il()) else {
        return Vec::new();
    };
    let mut decoded = MethodBody::new();
    if Decoder::new().decode_into(body, &mut decoded).is_err() {
        return Vec::new();
    }
    decoded
        .instrs
        .opcodes()
        .filter(|&(_, op)| {
            matches!(
                op,
                OpCode::Call
                    | OpCode::Callvirt
                    | OpCode::Newobj
                    | OpCode::Jmp
                    | OpCode::Ldftn
                    | OpCode::Ldvirtftn
            )
        })
        .filter_map(|(id, _)| decoded.instrs.token(id))
        .collect()
}

/// Why an inliner's IL does not reach its inlinee.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Miss {
    /// The inlinee's RID is past the image's MethodDef table: a method of another module
    /// (`InliningInfo` records do not say which; crossgen 3.1 writes CoreLib's
    /// `[NonVersionable]` methods inlined across modules this way).
    ForeignRid,
    /// The inliner has no IL body (runtime-implemented, abstract...).
    NoIl,
    /// An `InliningInfo` record after the first ascending run of the index: crossgen 3.1
    /// sorts its records by (inlinee module name, RID), so a record after a RID
    /// descent is of another module's method (one whose RID falls in the table).
    LaterRun,
    /// Reached only through more than 5 calls.
    TooDeep,
    /// Not reached through the image's own MethodDefs and their overrides.
    Unreached,
}

/// How far an inliner's IL is from its inlinee, in calls: `strict` through the call
/// targets only, `virtual` also through the image's methods of the same name and
/// signature as a virtual target (overrides a compiler may devirtualize to).
struct CallGraph<'s, 'a> {
    asm: &'s Assembly<'a>,
    index: MethodIndex<'a>,
    by_name: HashMap<(&'a str, &'a [u8]), Vec<u32>>,
    strict: HashMap<u32, Vec<u32>>,
    with_overrides: HashMap<u32, Vec<u32>>,
}

impl<'s, 'a> CallGraph<'s, 'a> {
    fn new(asm: &'s Assembly<'a>) -> Self {
        let mut by_name: HashMap<_, Vec<u32>> = HashMap::new();
        for m in asm.methods().map(Result::unwrap) {
            by_name
                .entry((short_name(m.name), m.signature))
                .or_default()
                .push(m.token);
        }
        CallGraph {
            asm,
            index: method_index(asm),
            by_name,
            strict: HashMap::new(),
            with_overrides: HashMap::new(),
        }
    }

    fn edges(&mut self, m: u32, overrides: bool) -> Vec<u32> {
        if !self.strict.contains_key(&m) {
            let (asm, index) = (self.asm, &self.index);
            let (mut direct, mut wide) = (Vec::new(), Vec::new());
            for t in call_tokens(asm, m) {
                let local = local_method(asm, index, t);
                direct.extend(local);
                wide.extend(local);
                // A virtual target of the image, or any method of another module, may be
                // implemented by a method of the image of that name and signature.
                let virtual_or_foreign = match local {
                    Some(c) => asm.method(c).unwrap().flags & 0x0040 != 0,
                    None => true,
                };
                let (Ok(name), Ok(sig)) = (asm.member_name(t), asm.call_site_signature(t)) else {
                    continue;
                };
                if virtual_or_foreign {
                    if let Some(impls) = self.by_name.get(&(short_name(name), sig)) {
                        wide.extend(impls);
                    }
                }
            }
            self.strict.insert(m, direct);
            self.with_overrides.insert(m, wide);
        }
        if overrides {
            self.with_overrides[&m].clone()
        } else {
            self.strict[&m].clone()
        }
    }

    /// The number of calls from `from` to `to` (breadth first, up to 8).
    fn distance(&mut self, from: u32, to: u32, overrides: bool) -> Option<usize> {
        let mut frontier = vec![from];
        let mut seen = HashSet::from([from]);
        for level in 1..=8 {
            let mut next = Vec::new();
            for m in frontier {
                for c in self.edges(m, overrides) {
                    if c == to {
                        return Some(level);
                    }
                    if seen.insert(c) {
                        next.push(c);
                    }
                }
            }
            frontier = next;
        }
        None
    }
}

/// A method name without the interface prefix of an explicit implementation
/// (`System.IDisposable.Dispose` -> `Dispose`).
fn short_name(name: &str) -> &str {
    if name.starts_with('.') {
        name
    } else {
        name.rsplit('.').next().unwrap_or(name)
    }
}

/// Checks every local record of every ReadyToRun framework assembly: the inliner calls
/// the inlinee directly, or through at most 4 methods between (5 calls), through the
/// image's MethodDefs, allowing a virtual call to reach an override of the image.
#[test]
fn every_inliner_calls_its_inlinee() {
    for_each_runtime(|rt| {
        let mut totals = BTreeMap::<&str, usize>::new();
        let mut misses = BTreeMap::<Miss, usize>::new();
        let mut strict = BTreeMap::<usize, usize>::new();
        let mut examples = Vec::new();
        for path in rt.framework_assemblies().unwrap() {
            let data = std::fs::read(&path).unwrap();
            let asm = Assembly::parse(&data).unwrap();
            let Some(r2r) = ReadyToRun::parse(asm.pe()).unwrap() else {
                continue;
            };
            let methods = asm.row_count(TableId::MethodDef);
            let mut graph = CallGraph::new(&asm);
            let file = path.file_name().unwrap().to_string_lossy().into_owned();
            for table in r2r.inlining_tables(asm.pe()).unwrap() {
                let (mut run, mut last) = (0, 0);
                for record in table.records().unwrap() {
                    *totals.entry("records").or_default() += 1;
                    if let Some(InlineMethod::MethodDefOfUnknownModule { token }) = record.inlinee {
                        run += usize::from(token < last);
                        last = token;
                    }
                    let inlinee = match record.inlinee.unwrap() {
                        InlineMethod::MethodDef { module: 0, token }
                        | InlineMethod::MethodDefOfUnknownModule { token } => token,
                        _ => {
                            *totals.entry("records with a foreign inlinee").or_default() += 1;
                            continue;
                        }
                    };
                    for inliner in &record.inliners {
                        let InlineMethod::MethodDef { module: 0, token } = *inliner else {
                            *totals.entry("foreign inliners").or_default() += 1;
                            continue;
                        };
                        *totals.entry("local pairs").or_default() += 1;
                        if inlinee & 0x00FF_FFFF > methods {
                            *misses.entry(Miss::ForeignRid).or_default() += 1;
                            continue;
                        }
                        if let Some(d) = graph.distance(token, inlinee, false).filter(|&d| d <= 5) {
                            *strict.entry(d).or_default() += 1;
                            continue;
                        }
                        let miss = match graph.distance(token, inlinee, true) {
                            Some(d) if d <= 5 => {
                                *totals.entry("reached through an override").or_default() += 1;
                                continue;
                            }
                            Some(_) => Miss::TooDeep,
                            None if asm.method(token).unwrap().body.is_none() => Miss::NoIl,
                            None if run > 0 => Miss::LaterRun,
                            None => Miss::Unreached,
                        };
                        *misses.entry(miss).or_default() += 1;
                        if miss == Miss::Unreached && examples.len() < 12 {
                            examples.push(format!(
                                "{file}: {} inlined {}",
                                method_name(&asm, token),
                                method_name(&asm, inlinee)
                            ));
                        }
                    }
                }
            }
        }
        println!("{rt}: {totals:?}; reached in n calls {strict:?}; misses {misses:?}");
        for e in &examples {
            println!("  unreached: {e}");
        }
        let pairs = totals["local pairs"];
        let missed: usize = misses
            .iter()
            .filter(|&(&m, _)| !matches!(m, Miss::ForeignRid | Miss::LaterRun))
            .map(|(_, n)| n)
            .sum();
        assert!(pairs > 100_000, "{pairs} pairs");
        // Measured: 1,504 of 137,815 pairs on 8.0.4 (1.1%), 3,877 of 147,693 on 3.1.23
        // (2.6%; plus 7,302 pairs of other modules' inlinees, not counted); what remains
        // is dispatch the name-and-signature match cannot follow (constrained calls on
        // generic parameters, `GenericArraySortHelper<T>` inlining `Decimal::CompareTo`;
        // generic interface methods implemented under other signatures).
        assert!(missed * 100 <= pairs * 3, "{missed} of {pairs} pairs miss");
    });
}

// ---- malformed input -------------------------------------------------------------------

/// The inlining section of a small framework assembly of each runtime, with its format.
fn small_sections() -> Vec<(InliningFormat, Vec<u8>)> {
    let out = std::sync::Mutex::new(Vec::new());
    for_each_runtime(|rt| {
        let path = rt.framework_dir().join("System.Private.Uri.dll");
        let data = std::fs::read(path).unwrap();
        let pe = PeFile::parse(&data).unwrap();
        let r2r = ReadyToRun::parse(&pe).unwrap().unwrap();
        for t in r2r.inlining_tables(&pe).unwrap() {
            out.lock().unwrap().push((t.format(), t.data().to_vec()));
        }
    });
    out.into_inner().unwrap()
}

fn sections() -> &'static [(InliningFormat, Vec<u8>)] {
    static S: std::sync::OnceLock<Vec<(InliningFormat, Vec<u8>)>> = std::sync::OnceLock::new();
    S.get_or_init(small_sections)
}

fn exercise(format: InliningFormat, bytes: &[u8]) {
    if let Ok(t) = InliningTable::new(format, bytes, 0) {
        let _ = t.records();
        let _ = t.inliners_of(0x0600_0001);
    }
}

#[test]
fn truncated_sections_are_errors() {
    for (format, bytes) in sections() {
        let whole = InliningTable::new(*format, bytes, 0).unwrap();
        let records = whole.records().unwrap();
        assert!(!records.is_empty(), "{format:?}");
        let mut errors = 0;
        for cut in 0..bytes.len() {
            match InliningTable::new(*format, &bytes[..cut], 0).and_then(|t| t.records()) {
                Err(_) => errors += 1,
                Ok(r) => assert!(r.len() <= records.len()),
            }
        }
        println!(
            "{format:?}: {errors} of {} truncations are errors",
            bytes.len()
        );
        assert!(errors > 0);
    }
}

proptest! {
    #![proptest_config(common::config(512))]

    #[test]
    fn mutated_sections_never_panic(
        which in 0usize..2,
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
        cut in any::<prop::sample::Index>(),
        truncate in any::<bool>(),
    ) {
        let all = sections();
        let (format, bytes) = &all[which % all.len()];
        let mut b = bytes.clone();
        for (at, v) in flips {
            let i = at.index(b.len());
            b[i] = v;
        }
        if truncate {
            b.truncate(cut.index(b.len() + 1));
        }
        exercise(*format, &b);
    }
}

/// Mutations of the headers of a whole (small) image, read both ways.
#[test]
fn mutated_headers_never_panic() {
    for_each_runtime(|rt| {
        let path: PathBuf = rt.framework_dir().join("System.Private.Uri.dll");
        let data = std::fs::read(&path).unwrap();
        let pe = PeFile::parse(&data).unwrap();
        let r2r = ReadyToRun::parse(&pe).unwrap().unwrap();
        let head = r2r.header_offset();
        let len = 16 + 12 * r2r.sections().count();
        let mut runner = proptest::test_runner::TestRunner::new(common::config(256));
        runner
            .run(
                &(
                    proptest::collection::vec((0..len, any::<u8>()), 1..6),
                    0..data.len(),
                ),
                |(flips, cut)| {
                    let mut b = data.clone();
                    for (at, v) in flips {
                        b[head + at] = v;
                    }
                    if let Ok(pe) = PeFile::parse(&b) {
                        if let Ok(Some(r)) = ReadyToRun::parse(&pe) {
                            let _ = r.inliners_of(&pe, 0x0600_0001);
                        }
                    }
                    let _ = read_inliners(&mut Cursor::new(&b), &[0x0600_0001]);
                    let _ = read_inliners(&mut Cursor::new(&b[..cut]), &[0x0600_0001]);
                    Ok(())
                },
            )
            .unwrap();
    });
}

#[test]
fn bad_inlinee_tokens_are_refused() {
    for_each_runtime(|rt| {
        let path: &Path = &rt.framework_dir().join("System.Private.Uri.dll");
        let err = inliners_in_file(path, &[0x0200_0001]).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidData);
        assert!(matches!(
            err.get_ref()
                .and_then(|e| e.downcast_ref::<ilrewrite::Error>()),
            Some(ilrewrite::Error::BadToken { .. })
        ));
    });
}

/// What the records of the whole framework hold, by kind of method, and the module
/// indices of foreign MethodDefs: each names an AssemblyRef row of the image (`1..=n`)
/// or one of its manifest metadata (`> n + 1`), never the manifest itself. Measured: on
/// 8.0.4 every record (29,082 inlinees, 137,815 inliners in 89 images) is of the image's
/// own MethodDefs, none of another module or an ILBody import, although every image has
/// the multi-module flag; on 3.1.23 every inlinee (28,421 in 163 images) is of a module
/// the format does not say, every inliner of the image.
#[test]
fn record_kinds() {
    for_each_runtime(|rt| {
        let mut kinds = BTreeMap::<String, usize>::new();
        let mut images = 0;
        for path in rt.framework_assemblies().unwrap() {
            let data = std::fs::read(&path).unwrap();
            let asm = Assembly::parse(&data).unwrap();
            let Some(r2r) = ReadyToRun::parse(asm.pe()).unwrap() else {
                continue;
            };
            images += 1;
            let refs = asm.row_count(TableId::AssemblyRef);
            let mut count = |role: &str, m: InlineMethod| {
                let kind = match m {
                    InlineMethod::MethodDef { module: 0, .. } => "MethodDef of the image",
                    InlineMethod::MethodDef { module, .. } => {
                        assert_ne!(module, refs + 1, "{}", path.display());
                        if module <= refs {
                            "MethodDef of an AssemblyRef"
                        } else {
                            "MethodDef of a manifest AssemblyRef"
                        }
                    }
                    InlineMethod::MethodDefOfUnknownModule { .. } => "MethodDef of unknown module",
                    InlineMethod::IlBody { .. } => "ILBody import",
                    InlineMethod::MethodDefOfInlineeModule { .. } => {
                        "MethodDef of the inlinee's module"
                    }
                };
                *kinds.entry(format!("{role}: {kind}")).or_default() += 1;
            };
            for table in r2r.inlining_tables(asm.pe()).unwrap() {
                for r in table.records().unwrap() {
                    count("inlinee", r.inlinee.unwrap());
                    for &i in &r.inliners {
                        count("inliner", i);
                    }
                }
            }
        }
        println!("{rt}: {images} images: {kinds:#?}");
        let inlinee = if is_net8(rt) {
            "inlinee: MethodDef of the image"
        } else {
            "inlinee: MethodDef of unknown module"
        };
        let keys: Vec<&str> = kinds.keys().map(String::as_str).collect();
        assert_eq!(keys, [inlinee, "inliner: MethodDef of the image"]);
    });
}

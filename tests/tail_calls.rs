//! `tail.` calls through entry/exit instrumentation, on real IL.
//!
//! C# never emits the `tail.` prefix: the framework assemblies of .NET 8.0.4 and .NET
//! Core 3.1.23 have none (recorded by the first test). The F# compiler emits thousands, so
//! these tests run on the F# corpus of `ilrewrite_corpus::fsharp_assemblies` (the F#
//! compiler service, `FSharp.Core` and the Fable compiler: about 83,000 distinct bodies):
//!
//! - every body with a `tail.` prefix, instrumented with entry, exit and value-epilogue
//!   code under the default policy (`TailCallPolicy::Keep`), must keep all its tail calls
//!   (out of every protected region, through a stub after the handlers), encode, decode
//!   back, verify with the max stack the instrumenter reported, and have a complete IL
//!   map in which each kept call maps to its stub; or be refused, untouched, for one of
//!   the reasons a tail call cannot be kept (none is, in this corpus);
//! - the same bodies under `Refuse` are refused untouched, under `DropPrefix` lose every
//!   prefix;
//! - entry-only instrumentation of every framework and F# body inserts the entry code
//!   and changes nothing else, byte for byte (so `tail.` and `jmp` stay).
//!
//! Run with `--nocapture` to see the counts.
#![cfg(feature = "pe")]

use ilrewrite::analysis::{ReturnKind, StackAnalyzer};
use ilrewrite::body::{Decoder, EncodedHeader, MethodBody};
use ilrewrite::pe::{Assembly, MethodDefInfo};
use ilrewrite::sig::summarize_method_sig;
use ilrewrite::transform::{
    InstrumentationCode, Instrumenter, MethodContext, Snippet, TailCallPolicy,
};
use ilrewrite::{ClauseKind, Error, InstrId, Instruction, OpCode, TailCallRefusal};
use ilrewrite_audit::{ENTER_HOOK, HookResolver, NEW_LOCALS_TOKEN, hook_instrumenter};
use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::sync::OnceLock;

mod clr_support;
use clr_support::{Runtime, for_each_runtime};

/// One assembly's file name and bytes.
struct File {
    name: String,
    data: Vec<u8>,
}

fn read_all(paths: &[PathBuf]) -> Vec<File> {
    paths
        .iter()
        .map(|p| File {
            name: p.file_name().unwrap().to_string_lossy().into_owned(),
            data: std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display())),
        })
        .collect()
}

/// The framework assemblies of `rt`.
fn framework(rt: &Runtime) -> Vec<File> {
    let paths = rt.framework_assemblies().unwrap_or_else(|e| panic!("{e}"));
    if let Some(f) = rt.facts() {
        assert_eq!(paths.len(), f.assemblies);
    }
    read_all(&paths)
}

/// The F# assemblies, read once per test binary (downloaded once per target directory).
fn fsharp() -> &'static [File] {
    static FILES: OnceLock<Vec<File>> = OnceLock::new();
    FILES.get_or_init(|| {
        let paths = ilrewrite_corpus::fsharp_assemblies().unwrap_or_else(|e| panic!("{e}"));
        read_all(&paths)
    })
}

/// One distinct method body of an assembly.
struct Body<'a> {
    method: MethodDefInfo<'a>,
    /// The body's bytes: header, code and EH sections.
    bytes: &'a [u8],
    decoded: MethodBody,
}

/// Calls `f` with every distinct IL body (deduplicated by RVA) of `asm`.
fn for_each_body<'a>(asm: &Assembly<'a>, mut f: impl FnMut(Body<'a>)) {
    let mut seen = HashSet::new();
    let mut decoder = Decoder::new();
    for method in asm.methods() {
        let method = method.expect("a readable MethodDef row");
        let Some(code) = method.body else { continue };
        if !method.is_il() || !seen.insert(method.rva) {
            continue;
        }
        let mut decoded = MethodBody::new();
        let len = decoder
            .decode_into(code, &mut decoded)
            .unwrap_or_else(|e| panic!("{:08x}: {e}", method.token));
        f(Body {
            method,
            bytes: &code[..len],
            decoded,
        });
    }
}

fn count(body: &MethodBody, opcode: OpCode) -> usize {
    body.instrs
        .opcodes()
        .filter(|&(_, op)| op == opcode)
        .count()
}

fn returns_value(method: &MethodDefInfo<'_>) -> bool {
    summarize_method_sig(method.signature)
        .expect("a readable signature")
        .returns_value
}

/// `n` tokens of `list`, for messages.
fn examples(list: &[(String, u32)], n: usize) -> String {
    let mut out: Vec<String> = list
        .iter()
        .take(n)
        .map(|(asm, token)| format!("{asm} 0x{token:08x}"))
        .collect();
    if list.len() > n {
        out.push(format!("... ({} in all)", list.len()));
    }
    out.join(", ")
}

// ---- 1. the framework has no tail calls ------------------------------------------------

/// Records that neither framework (.NET 8.0.4, .NET Core 3.1.23) has a `tail.` prefix
/// at all (C# never emits one): the framework corpus cannot test kept tail calls, hence
/// the F# corpus.
#[test]
fn the_framework_has_no_tail_calls() {
    for_each_runtime(|rt| {
        let (bodies, with_tail, prefixes) = tail_prefixes(&framework(rt));
        println!(
            "{rt} framework: {bodies} distinct bodies, {with_tail} with a tail. prefix \
             ({prefixes} prefixes)"
        );
        assert!(bodies > 80_000, "{bodies}");
        assert_eq!((with_tail, prefixes), (0, 0));
    });
}

/// Distinct bodies, bodies with a `tail.` prefix, and prefixes in `files`.
fn tail_prefixes(files: &[File]) -> (usize, usize, usize) {
    let (mut bodies, mut with_tail, mut prefixes) = (0, 0, 0);
    for file in files {
        let asm = Assembly::parse(&file.data).expect("parses");
        for_each_body(&asm, |b| {
            bodies += 1;
            let n = count(&b.decoded, OpCode::Tail);
            prefixes += n;
            with_tail += usize::from(n > 0);
        });
    }
    (bodies, with_tail, prefixes)
}

// ---- 2. F# tail calls kept --------------------------------------------------------------

/// Positions (by id index) of the instructions of `body`, and whether each position lies
/// in a region of some clause: a try block, a handler, or a filter.
fn protected_positions(body: &MethodBody) -> (Vec<u32>, Vec<bool>) {
    let pos = body.positions();
    let mut inside = vec![false; body.instrs.len()];
    let at = |id: InstrId| pos[id.index()] as usize;
    for c in &body.clauses {
        let mut mark = |start: usize, last: usize| inside[start..=last].fill(true);
        mark(at(c.try_start), at(c.try_last));
        mark(at(c.handler_start), at(c.handler_last));
        if let ClauseKind::Filter(f) = c.kind {
            mark(at(f), at(c.handler_start) - 1);
        }
    }
    (pos, inside)
}

/// The `tail.` prefixes of a re-decoded body: checks each is followed by a call and a
/// `ret`, all three outside every protected region. Returns how many there are.
fn check_tail_sites(again: &MethodBody) -> Result<usize, String> {
    let (pos, inside) = protected_positions(again);
    let mut n = 0;
    for (id, op) in again.instrs.opcodes() {
        if op != OpCode::Tail {
            continue;
        }
        n += 1;
        let at = again.original_offset(id).unwrap_or(u32::MAX);
        let call = again.instrs.next(id);
        let ret = call.and_then(|c| again.instrs.next(c));
        let (Some(call), Some(ret)) = (call, ret) else {
            return Err(format!("tail. at IL_{at:04x} ends the body"));
        };
        if !matches!(
            again.instrs.opcode(call),
            OpCode::Call | OpCode::Callvirt | OpCode::Calli
        ) || again.instrs.opcode(ret) != OpCode::Ret
        {
            return Err(format!(
                "tail. at IL_{at:04x} is not followed by a call and ret"
            ));
        }
        if [id, call, ret]
            .iter()
            .any(|i| inside[pos[i.index()] as usize])
        {
            return Err(format!(
                "tail. call at IL_{at:04x} is in a protected region"
            ));
        }
    }
    Ok(n)
}

/// What the checks of kept bodies counted.
#[derive(Default)]
struct KeptCounts {
    il_map_entries: usize,
    /// `ret`s of kept sites that stayed in place (a branch targets them).
    rets_stayed: usize,
}

/// Encodes an instrumented body, decodes it back and checks it (see the module docs).
fn check_kept(
    inst: &mut Instrumenter,
    resolver: &HookResolver<'_, '_>,
    analyzer: &mut StackAnalyzer,
    original: &MethodBody,
    body: &MethodBody,
    reported_max_stack: u16,
    returns: ReturnKind,
) -> Result<KeptCounts, String> {
    let mut bytes = Vec::new();
    let header = inst
        .encode(body, &mut bytes)
        .map_err(|e| format!("encode: {e}"))?;
    let mut again = MethodBody::new();
    let used = Decoder::new()
        .decode_into(&bytes, &mut again)
        .map_err(|e| format!("decode: {e}"))?;
    if used != bytes.len() {
        return Err(format!("decoding used {used} of {} bytes", bytes.len()));
    }
    again
        .validate_clauses()
        .map_err(|e| format!("clauses: {e}"))?;
    let max_stack = analyzer
        .analyze(&again, resolver, returns)
        .map_err(|e| format!("verify: {e}"))?
        .max_stack();
    if (max_stack, header.max_stack(), again.max_stack)
        != (reported_max_stack, reported_max_stack, reported_max_stack)
    {
        return Err(format!(
            "max stack: verified {max_stack}, header {}, reported {reported_max_stack}",
            header.max_stack()
        ));
    }
    let tails = check_tail_sites(&again)?;
    let tails_before = count(original, OpCode::Tail);
    if tails != tails_before {
        return Err(format!("{tails} tail. prefixes, {tails_before} before"));
    }

    // The IL map: one entry per original instruction (all survive: the `tail.`
    // prefix's id stays at the site, the call and its `ret` move to the stub). The
    // calls (and rets) moved to the stubs have their homes after the handlers; every
    // other entry is in code order, before the handlers' end.
    let map = inst.il_map(body);
    let offsets = ilrewrite::body::Encoder::new()
        .code_offsets(body)
        .map_err(|e| format!("layout: {e}"))?
        .to_vec();
    let surviving = original
        .instrs
        .ids()
        .filter(|&id| body.instrs.contains(id))
        .count();
    if map.entries().len() != surviving || surviving != original.instrs.len() {
        return Err(format!(
            "IL map has {} entries for {surviving} surviving of {} original instructions",
            map.entries().len(),
            original.instrs.len()
        ));
    }
    let handlers_end = again
        .clauses
        .iter()
        .filter_map(|c| again.instrs.next(c.handler_last))
        .filter_map(|id| again.original_offset(id))
        .max()
        .unwrap_or(0);
    let mut counts = KeptCounts {
        il_map_entries: map.entries().len(),
        ..KeptCounts::default()
    };
    let old = |id| {
        original
            .original_offset(id)
            .expect("an original instruction")
    };
    let new = |id| {
        map.map(old(id))
            .ok_or(format!("no IL map entry for IL_{:04x}", old(id)))
    };
    let home = |id: InstrId| offsets[id.index()];
    let mut moved = HashSet::new();
    for (tail, _) in original
        .instrs
        .opcodes()
        .filter(|&(_, op)| op == OpCode::Tail)
    {
        let call = original.instrs.next(tail).expect("a call after tail.");
        let ret = original.instrs.next(call).expect("a ret after the call");
        let site = format!("the tail call at IL_{:04x}", old(tail));
        // The prefix's id stays at the site, in the try; the call is in its stub, after
        // the handlers, behind a new `tail.` and the loads of its operands.
        if home(tail) >= handlers_end || new(tail)? > home(tail) {
            return Err(format!("IL map: {site} is not at its site"));
        }
        let new_tail = body.instrs.prev(call);
        if home(call) < handlers_end
            || new_tail.is_none_or(|t| {
                body.instrs.opcode(t) != OpCode::Tail || body.original_offset(t).is_some()
            })
            || body.instrs.get(call) != original.instrs.get(call)
        {
            return Err(format!("{site}: the call is not in a stub"));
        }
        let mut stub = new_tail.expect("checked");
        while let Some(p) = body.instrs.prev(stub).filter(|&p| {
            body.original_offset(p).is_none() && body.instrs.opcode(p).name().starts_with("ldloc")
        }) {
            stub = p;
        }
        // The call maps to its stub: the run of injected code before it starts there
        // (the code before the stub ends with a `ret`, which does not fall through).
        if new(call)? != home(stub) {
            return Err(format!("IL map: {site}: the call does not map to its stub"));
        }
        moved.insert(old(call));
        if body.instrs.prev(ret) == Some(call) {
            if new(ret)? != home(ret) {
                return Err(format!("IL map: {site}: its ret maps elsewhere"));
            }
            moved.insert(old(ret));
        } else if home(ret) < handlers_end {
            counts.rets_stayed += 1;
        } else {
            return Err(format!("{site}: its ret is misplaced"));
        }
    }
    let mut last = None;
    for e in map
        .entries()
        .iter()
        .filter(|e| !moved.contains(&e.old_offset))
    {
        if last.is_some_and(|l| e.new_offset <= l) || e.new_offset >= handlers_end {
            return Err(format!(
                "IL map: IL_{:04x} -> IL_{:04x} out of code order",
                e.old_offset, e.new_offset
            ));
        }
        last = Some(e.new_offset);
    }
    Ok(counts)
}

/// The refusals of the default policy, by reason.
type Refusals = BTreeMap<String, Vec<(String, u32)>>;

/// Reasons a well-formed body's tail call may not be kept: limits of keeping, documented
/// in `TailCallRefusal`, not defects. Any other reason fails the test.
fn refusal_is_allowed(reason: TailCallRefusal) -> bool {
    matches!(
        reason,
        TailCallRefusal::VarArg
            | TailCallRefusal::UnboundGenericParameter
            | TailCallRefusal::UnknownThisKind
            | TailCallRefusal::UnstorableOperand
            | TailCallRefusal::TooManyLocals
    )
}

/// What [`keep_all`] found.
#[derive(Default)]
struct Kept {
    bodies: usize,
    with_tail: usize,
    prefixes: usize,
    bodies_kept: usize,
    kept: usize,
    counts: KeptCounts,
    refused: Refusals,
    failures: Vec<String>,
}

/// Instruments every F# body with a `tail.` prefix under the default policy and checks
/// each result with [`check_kept`]; prints the counts of each assembly.
fn keep_all() -> Kept {
    let mut inst = hook_instrumenter();
    assert_eq!(inst.tail_call_policy(), TailCallPolicy::Keep);
    let mut analyzer = StackAnalyzer::new();
    let mut k = Kept::default();
    for file in fsharp() {
        let asm = Assembly::parse(&file.data).expect("parses");
        let resolver = HookResolver::new(&asm);
        let (mut file_bodies, mut file_tail, mut file_kept) = (0, 0, 0);
        for_each_body(&asm, |b| {
            file_bodies += 1;
            let tails = count(&b.decoded, OpCode::Tail);
            if tails == 0 {
                return;
            }
            file_tail += 1;
            k.prefixes += tails;
            let token = b.method.token;
            let fail = |what: String| format!("{} {token:08x}: {what}", file.name);
            let returns = ReturnKind::value_if(returns_value(&b.method));
            let mut body = b.decoded.clone();
            let context =
                MethodContext::from_metadata(&asm, token, &body, token as i32).expect("signatures");
            let done = match inst.instrument(&mut body, &context, &resolver) {
                Ok(done) => (
                    done.tail_calls_kept,
                    done.max_stack,
                    done.new_locals_signature.is_some(),
                ),
                Err(Error::TailCallNotKept { offset, reason }) => {
                    if format!("{body:?}") != format!("{:?}", b.decoded) {
                        k.failures
                            .push(fail(format!("refused ({reason:?}) but edited")));
                    }
                    let at = offset.map_or("?".into(), |o| format!("IL_{o:04x}"));
                    k.refused
                        .entry(format!("{reason:?}"))
                        .or_default()
                        .push((format!("{} (tail. at {at})", file.name), token));
                    if !refusal_is_allowed(reason) {
                        k.failures
                            .push(fail(format!("refused with {reason:?} at {at}")));
                    }
                    return;
                }
                Err(e) => {
                    k.failures.push(fail(e.to_string()));
                    return;
                }
            };
            let (sites, max_stack, new_locals) = done;
            if sites != tails || !new_locals {
                k.failures.push(fail(format!(
                    "{sites} of {tails} kept, locals added: {new_locals}"
                )));
                return;
            }
            body.local_var_sig = NEW_LOCALS_TOKEN;
            let checked = check_kept(
                &mut inst,
                &resolver,
                &mut analyzer,
                &b.decoded,
                &body,
                max_stack,
                returns,
            );
            match checked {
                Ok(c) => {
                    k.kept += sites;
                    file_kept += sites;
                    k.bodies_kept += 1;
                    k.counts.il_map_entries += c.il_map_entries;
                    k.counts.rets_stayed += c.rets_stayed;
                }
                Err(e) => k.failures.push(fail(e)),
            }
        });
        println!(
            "  {}: {file_bodies} bodies, {file_tail} with tail., {file_kept} tail calls kept",
            file.name
        );
        k.bodies += file_bodies;
        k.with_tail += file_tail;
    }
    k
}

/// Every F# body with a `tail.` prefix, instrumented with entry, exit and value-epilogue
/// code under the default policy (`Keep`), keeps all its tail calls out of every
/// protected region and comes back verified, with the max stack reported and a complete
/// IL map (see [`check_kept`]) in which every kept call maps to its own stub; or is
/// refused untouched, for a reason that [`refusal_is_allowed`] allows (none in the
/// pinned corpus: every one of its tail calls is kept).
#[test]
fn fsharp_tail_calls_are_kept_out_of_the_protected_region() {
    let k = keep_all();
    let refused: usize = k.refused.values().map(Vec::len).sum();
    println!(
        "F# corpus: {} distinct bodies, {} with a tail. prefix ({} prefixes); instrumented \
         {} bodies keeping {} tail calls (IL map entries {}, rets left in place {}); refused \
         {refused} bodies",
        k.bodies,
        k.with_tail,
        k.prefixes,
        k.bodies_kept,
        k.kept,
        k.counts.il_map_entries,
        k.counts.rets_stayed,
    );
    for (reason, list) in &k.refused {
        println!("  refused {reason}: {} ({})", list.len(), examples(list, 5));
    }
    for f in k.failures.iter().take(30) {
        println!("  FAILED {f}");
    }
    assert!(k.failures.is_empty(), "{} failures", k.failures.len());
    assert_eq!(k.bodies_kept + refused, k.with_tail);
    if ilrewrite_corpus::fsharp_assemblies_are_pinned() {
        assert_eq!(refused, 0);
        assert!(k.bodies > 80_000, "{}", k.bodies);
        assert_eq!(k.kept, k.prefixes, "every tail call kept");
        assert!(k.kept > 12_000, "{} tail calls kept", k.kept);
    }
}

// ---- 3. the other policies -------------------------------------------------------------

/// `Refuse` refuses every F# body with a `tail.` prefix, naming the first prefix, and
/// leaves it as it was; `DropPrefix` removes every prefix (and the result verifies).
#[test]
fn fsharp_tail_calls_under_refuse_and_drop_prefix() {
    let mut refuse = hook_instrumenter().with_tail_call_policy(TailCallPolicy::Refuse);
    let mut drop = hook_instrumenter().with_tail_call_policy(TailCallPolicy::DropPrefix);
    let mut analyzer = StackAnalyzer::new();
    let (mut bodies, mut refused, mut dropped, mut removed) = (0, 0, 0, 0);
    let mut failures = Vec::new();
    for file in fsharp() {
        let asm = Assembly::parse(&file.data).expect("parses");
        let resolver = HookResolver::new(&asm);
        for_each_body(&asm, |b| {
            let tails = count(&b.decoded, OpCode::Tail);
            if tails == 0 {
                return;
            }
            bodies += 1;
            let token = b.method.token;
            let fail = |what: String| format!("{} {token:08x}: {what}", file.name);
            let context = MethodContext::from_metadata(&asm, token, &b.decoded, token as i32)
                .expect("signatures");
            let first = b
                .decoded
                .instrs
                .opcodes()
                .find(|&(_, op)| op == OpCode::Tail)
                .and_then(|(id, _)| b.decoded.original_offset(id));

            let mut body = b.decoded.clone();
            match refuse.instrument(&mut body, &context, &resolver) {
                Err(Error::TailCallNotKept {
                    offset,
                    reason: TailCallRefusal::PolicyRefuses,
                }) if offset == first => {
                    if format!("{body:?}") == format!("{:?}", b.decoded) {
                        refused += 1;
                    } else {
                        failures.push(fail("Refuse: refused but edited".into()));
                    }
                }
                other => failures.push(fail(format!("Refuse: {:?}", other.map(|d| d.rets)))),
            }

            let mut body = b.decoded.clone();
            let done = match drop.instrument(&mut body, &context, &resolver) {
                Ok(done) => (
                    done.tail_prefixes_removed,
                    done.tail_calls_kept,
                    done.max_stack,
                ),
                Err(e) => {
                    failures.push(fail(format!("DropPrefix: {e}")));
                    return;
                }
            };
            let (n, kept, max_stack) = done;
            let left = count(&body, OpCode::Tail);
            if (n, kept, left) != (tails, 0, 0) {
                failures.push(fail(format!(
                    "DropPrefix: {n} removed, {kept} kept, {left} left of {tails}"
                )));
                return;
            }
            let returns = ReturnKind::value_if(returns_value(&b.method));
            let verified = drop
                .encode(&body, &mut Vec::new())
                .and_then(|_| {
                    let mut bytes = Vec::new();
                    drop.encode(&body, &mut bytes)?;
                    MethodBody::decode(&bytes)
                })
                .and_then(|again| {
                    again.validate_clauses()?;
                    Ok((
                        count(&again, OpCode::Tail),
                        analyzer.analyze(&again, &resolver, returns)?.max_stack(),
                    ))
                });
            match verified {
                Ok((0, m)) if m == max_stack => {
                    dropped += 1;
                    removed += n;
                }
                other => failures.push(fail(format!("DropPrefix: re-decoded: {other:?}"))),
            }
        });
    }
    println!(
        "F# bodies with tail.: {bodies}; Refuse: {refused} refused untouched; DropPrefix: \
         {dropped} instrumented, {removed} prefixes removed"
    );
    for f in failures.iter().take(30) {
        println!("  FAILED {f}");
    }
    assert!(failures.is_empty(), "{} failures", failures.len());
    assert_eq!((refused, dropped), (bodies, bodies));
    if ilrewrite_corpus::fsharp_assemblies_are_pinned() {
        assert!(removed > 11_000, "{removed}");
    }
}

// ---- 4. entry-only instrumentation ------------------------------------------------------

/// A body's bytes taken apart: its code and its EH clauses as stored (flags, try offset,
/// try length, handler offset, handler length, class token or filter offset), small and
/// fat sections alike.
struct RawBody<'a> {
    code: &'a [u8],
    clauses: Vec<[u32; 6]>,
}

fn raw_body(bytes: &[u8]) -> RawBody<'_> {
    let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
    let u16_at = |at: usize| u32::from(u16::from_le_bytes([bytes[at], bytes[at + 1]]));
    let (header, size, mut more) = if bytes[0] & 3 == 2 {
        (1, usize::from(bytes[0] >> 2), false)
    } else {
        (
            usize::from(bytes[1] >> 4) * 4,
            u32_at(4) as usize,
            bytes[0] & 0x08 != 0,
        )
    };
    let mut clauses = Vec::new();
    let mut at = header + size;
    while more {
        at = at.next_multiple_of(4);
        let kind = bytes[at];
        assert_eq!(kind & 0x3F, 0x01, "an EH table section");
        let fat = kind & 0x40 != 0;
        let len = if fat {
            u32_at(at) as usize >> 8
        } else {
            usize::from(bytes[at + 1])
        };
        let mut c = at + 4;
        while c + if fat { 24 } else { 12 } <= at + len {
            clauses.push(if fat {
                [0, 4, 8, 12, 16, 20].map(|o| u32_at(c + o))
            } else {
                [
                    u16_at(c),
                    u16_at(c + 2),
                    u32::from(bytes[c + 4]),
                    u16_at(c + 5),
                    u32::from(bytes[c + 7]),
                    u32_at(c + 8),
                ]
            });
            c += if fat { 24 } else { 12 };
        }
        more = kind & 0x80 != 0;
        at += len;
    }
    RawBody {
        code: &bytes[header..header + size],
        clauses,
    }
}

/// Counts of [`entry_only_over`].
#[derive(Default, Debug)]
struct EntryOnly {
    bodies: usize,
    with_clauses: usize,
    tails: usize,
    jmps: usize,
    refused: Vec<String>,
    failures: Vec<String>,
}

/// Instruments every body of `files` with `ldc.i4 id; call ENTER_HOOK` as the only code
/// and checks that this code is all that changed.
fn entry_only_over(files: &[File]) -> EntryOnly {
    let mut entry = Snippet::builder();
    entry.method_id();
    entry.push(Instruction::with_token(OpCode::Call, ENTER_HOOK));
    let mut inst = Instrumenter::new(InstrumentationCode {
        entry: entry.finish().expect("a valid snippet"),
        ..InstrumentationCode::default()
    })
    .expect("valid code");
    assert!(inst.code().is_entry_only());
    let mut analyzer = StackAnalyzer::new();
    let mut out = EntryOnly::default();
    let mut bytes = Vec::new();
    for file in files {
        let asm = Assembly::parse(&file.data).expect("parses");
        let resolver = HookResolver::new(&asm);
        for_each_body(&asm, |b| {
            out.bodies += 1;
            let token = b.method.token;
            let original = &b.decoded;
            let (tails, jmps) = (count(original, OpCode::Tail), count(original, OpCode::Jmp));
            out.tails += tails;
            out.jmps += jmps;
            out.with_clauses += usize::from(!original.clauses.is_empty());
            let context = MethodContext::from_metadata(&asm, token, original, token as i32)
                .expect("signatures");
            let mut body = original.clone();
            let done = match inst.instrument(&mut body, &context, &resolver) {
                Ok(done) => done,
                Err(e) => {
                    out.refused.push(format!("{} {token:08x}: {e}", file.name));
                    return;
                }
            };
            let mut fail = |what: String| {
                out.failures
                    .push(format!("{} {token:08x}: {what}", file.name))
            };
            if done.new_locals_signature.is_some()
                || (done.tail_calls_kept, done.tail_prefixes_removed) != (0, 0)
                || body.local_var_sig != original.local_var_sig
                || body.clauses.len() != original.clauses.len()
            {
                return fail(format!("more than the entry code changed: {done:?}"));
            }
            let max_stack = done.max_stack;
            bytes.clear();
            let header = match inst.encode(&body, &mut bytes) {
                Ok(h) => h,
                Err(e) => return fail(format!("encode: {e}")),
            };
            // The code: the entry code, then the original code byte for byte.
            let mut expected = vec![0x20];
            expected.extend_from_slice(&token.to_le_bytes());
            expected.push(0x28);
            expected.extend_from_slice(&ENTER_HOOK.to_le_bytes());
            let shift = expected.len() as u32;
            let (old, new) = (raw_body(b.bytes), raw_body(&bytes));
            expected.extend_from_slice(old.code);
            if new.code != expected {
                return fail("the code is not the entry code followed by the original".into());
            }
            // The clauses: the same, every offset moved by the entry code's length.
            let moved: Vec<[u32; 6]> = old
                .clauses
                .iter()
                .map(|&[flags, t, tl, h, hl, x]| {
                    [
                        flags,
                        t + shift,
                        tl,
                        h + shift,
                        hl,
                        if flags & 1 != 0 { x + shift } else { x },
                    ]
                })
                .collect();
            if new.clauses != moved {
                return fail(format!("clauses {:?}, expected {moved:?}", new.clauses));
            }
            // The IL map: the entry code maps to the first instruction, the rest moves.
            let map = inst.il_map(&body);
            let first = original
                .instrs
                .first()
                .and_then(|id| original.original_offset(id));
            let map_ok = map.entries().len() == original.instrs.len()
                && map.entries().iter().all(|e| {
                    e.new_offset
                        == if Some(e.old_offset) == first {
                            0
                        } else {
                            e.old_offset + shift
                        }
                });
            if !map_ok {
                return fail("IL map".into());
            }
            // Decoded back, it verifies with the max stack reported, and keeps its
            // `tail.` and `jmp`.
            let again = match MethodBody::decode(&bytes) {
                Ok(again) => again,
                Err(e) => return fail(format!("decode: {e}")),
            };
            if let Err(e) = again.validate_clauses() {
                return fail(format!("clauses: {e}"));
            }
            let returns = ReturnKind::value_if(returns_value(&b.method));
            match analyzer.analyze(&again, &resolver, returns) {
                // A tiny header states no max stack: the runtime takes 8.
                Ok(a)
                    if a.max_stack() == max_stack
                        && match header {
                            EncodedHeader::Tiny { .. } => max_stack <= header.max_stack(),
                            EncodedHeader::Fat { .. } => max_stack == header.max_stack(),
                        } => {}
                Ok(a) => {
                    return fail(format!(
                        "max stack: verified {}, header {}, reported {max_stack}",
                        a.max_stack(),
                        header.max_stack()
                    ));
                }
                Err(e) => return fail(format!("verify: {e}")),
            }
            if (count(&again, OpCode::Tail), count(&again, OpCode::Jmp)) != (tails, jmps) {
                fail("tail. or jmp lost".into());
            }
        });
    }
    out
}

fn report_entry_only(label: &str, r: &EntryOnly) {
    println!(
        "{label}: entry-only instrumentation of {} bodies ({} with clauses, {} tail., {} \
         jmp): {} refused, {} failures",
        r.bodies,
        r.with_clauses,
        r.tails,
        r.jmps,
        r.refused.len(),
        r.failures.len()
    );
    for f in r.refused.iter().chain(&r.failures).take(30) {
        println!("  {f}");
    }
    assert!(r.refused.is_empty() && r.failures.is_empty());
}

/// Entry-only instrumentation of every framework body: the entry code, then the original
/// code byte for byte (branches are relative, so nothing else moves), the clauses moved
/// by its length, no clause or local added, `jmp` kept.
#[test]
fn entry_only_instrumentation_of_the_framework_adds_only_the_entry_code() {
    for_each_runtime(|rt| {
        let r = entry_only_over(&framework(rt));
        report_entry_only(&format!("{rt} framework"), &r);
        assert!(r.bodies > 80_000, "{r:?}");
    });
}

/// Neither corpus has a `jmp`: a body of its own shows entry-only instrumentation keeps
/// it (the wrapping instrumentation refuses it).
#[test]
fn entry_only_instrumentation_keeps_jmp() {
    use ilrewrite::analysis::CallEffect;
    let mut entry = Snippet::builder();
    entry.method_id();
    entry.push(Instruction::with_token(OpCode::Call, ENTER_HOOK));
    let mut inst = Instrumenter::new(InstrumentationCode {
        entry: entry.finish().expect("a valid snippet"),
        ..InstrumentationCode::default()
    })
    .expect("valid code");
    let hook = |_: OpCode, token: u32| {
        assert_eq!(token, ENTER_HOOK);
        Ok(CallEffect { pops: 1, pushes: 0 })
    };
    // static void M(): jmp 0x06000001 (tiny)
    let original = [0x16, 0x27, 0x01, 0x00, 0x00, 0x06];
    let mut body = MethodBody::decode(&original).expect("decodes");
    let method = MethodContext {
        signature: &[0x00, 0x00, 0x01],
        locals: None,
        id: 0x0600_0002,
        tokens: &[],
        module_id: None,
    };
    let done = inst.instrument(&mut body, &method, &hook).expect("kept");
    assert_eq!((done.max_stack, done.new_locals_signature), (1, None));
    let mut bytes = Vec::new();
    inst.encode(&body, &mut bytes).expect("encodes");
    let code = [
        0x20, 0x02, 0x00, 0x00, 0x06, 0x28, 0xF0, 0xFF, 0xFF, 0x0A, 0x27, 0x01, 0x00, 0x00, 0x06,
    ];
    assert_eq!(raw_body(&bytes).code, code);
    assert_eq!(count(&MethodBody::decode(&bytes).unwrap(), OpCode::Jmp), 1);

    let mut wrapping = hook_instrumenter();
    let mut body = MethodBody::decode(&original).expect("decodes");
    assert!(matches!(
        wrapping.instrument(&mut body, &method, &hook),
        Err(Error::Unsupported { .. })
    ));
}

/// The same over every F# body: `tail.` prefixes are kept too.
#[test]
fn entry_only_instrumentation_of_fsharp_adds_only_the_entry_code() {
    let r = entry_only_over(fsharp());
    report_entry_only("F# corpus", &r);
    if ilrewrite_corpus::fsharp_assemblies_are_pinned() {
        assert!(r.bodies > 80_000 && r.tails > 11_000, "{r:?}");
    }
}

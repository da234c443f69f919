//! The public [`Instrumenter`] used as a profiler uses it, on every method body of the
//! framework assemblies of each runtime (.NET 8.0.4 and .NET Core 3.1.23): signatures
//! through the
//! [`MetadataSource`] trait, call sites through [`CachingResolver::for_module`], the
//! return-value local's new signature named only after the rewrite succeeded.
//!
//! It must give, byte for byte, the recorded digests (3.1.23: what the crate's
//! instrumentation path gave before the `Instrumenter` existed, recorded then;
//! `tests/data/instrument-digests-<version>.txt`),
//! and what the public edit-by-edit transforms give when composed by hand
//! ([`ReturnLocal::plan`], [`wrap_try_finally`], [`inject_epilogue`], the stack analysis
//! and an encoder that derives every byte): the one-pass wrap and the general path are
//! two implementations of one rewrite.

use ilrewrite::analysis::{
    CachingResolver, CallEffect, CallSiteResolver, MaxStackMode, MetadataResolver, ReturnKind,
    StackAnalyzer,
};
use ilrewrite::body::{Decoder, Encoder};
use ilrewrite::metadata::MetadataSource;
use ilrewrite::pe::Assembly;
use ilrewrite::transform::{
    InstrumentationCode, Instrumenter, MethodContext, ReturnLocal, Returns, Snippet,
    TailCallPolicy, WrapOptions, inject_epilogue, wrap_try_finally,
};
use ilrewrite::{Error, Instruction, MethodBody, OpCode};
use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;

mod clr_support;
use clr_support::{Runtime, for_each_runtime};

const ENTER: u32 = 0x0AFF_FFF0;
const EXIT: u32 = 0x0AFF_FFF1;
const RETURN: u32 = 0x0AFF_FFF2;
/// What the profiler would get from `GetTokenFromSig` for the extended locals.
const NEW_LOCALS: u32 = 0x11FF_FFFF;

/// The module's call sites through its metadata, cached, plus the hooks the profiler
/// injects (each pops one value).
struct ProfilerResolver<'r, 'a> {
    module: CachingResolver<MetadataResolver<&'r Assembly<'a>>>,
}

impl CallSiteResolver for ProfilerResolver<'_, '_> {
    fn call_effect(&self, opcode: OpCode, token: u32) -> ilrewrite::Result<CallEffect> {
        match token {
            ENTER | EXIT | RETURN => Ok(CallEffect { pops: 1, pushes: 0 }),
            _ => self.module.call_effect(opcode, token),
        }
    }
}

fn call_with_id(hook: u32) -> Snippet {
    let mut b = Snippet::builder();
    b.method_id();
    b.push(Instruction::with_token(OpCode::Call, hook));
    b.finish().expect("a valid snippet")
}

fn instrumenter() -> Instrumenter {
    let mut epilogue = Snippet::builder();
    epilogue.return_local(OpCode::Ldloc);
    epilogue.push(Instruction::with_token(OpCode::Call, RETURN));
    Instrumenter::new(InstrumentationCode {
        entry: call_with_id(ENTER),
        exit: call_with_id(EXIT),
        epilogue_value: epilogue.finish().expect("a valid snippet"),
        epilogue_void: Snippet::default(),
        tail_call: None,
        state_local: None,
    })
    .expect("valid code")
    // The shape recorded in the digests, and what `wrap_try_finally` gives: `tail.`
    // prefixes removed. Tail calls kept are checked by `tests/corpus_rewrite.rs`.
    .with_tail_call_policy(TailCallPolicy::DropPrefix)
}

/// The same rewrite composed from the public edit-by-edit transforms: plan the local,
/// wrap, put the return hook before the epilogue's load, exact max stack, encode every
/// byte from the instructions.
fn by_hand(
    asm: &Assembly<'_>,
    resolver: &ProfilerResolver<'_, '_>,
    token: u32,
    body: &mut MethodBody,
) -> ilrewrite::Result<Vec<u8>> {
    let method = MethodContext::from_metadata(asm, token, body, token as i32)?;
    let mut new_locals = Vec::new();
    let plan = ReturnLocal::plan(method.signature, method.locals, &mut new_locals)?;
    let id = Instruction::ldc_i4(token as i32);
    let wrapped = wrap_try_finally(
        body,
        &WrapOptions {
            returns: plan.returns,
            entry: &[id, Instruction::with_token(OpCode::Call, ENTER)],
            exit: &[id, Instruction::with_token(OpCode::Call, EXIT)],
            catch: None,
            tail_calls: TailCallPolicy::DropPrefix,
        },
    )?;
    if let Returns::Value { local } = plan.returns {
        let code = [
            Instruction::ldloc(local),
            Instruction::with_token(OpCode::Call, RETURN),
        ];
        inject_epilogue(body, wrapped.epilogue, &code)?;
        body.local_var_sig = NEW_LOCALS;
    }
    StackAnalyzer::new().apply_max_stack(
        body,
        resolver,
        MaxStackMode::Compute,
        ReturnKind::from(plan.returns),
    )?;
    let mut out = Vec::new();
    Encoder::deriving_every_byte().encode(body, &mut out)?;
    Ok(out)
}

fn fnv(h: &mut u64, bytes: &[u8]) {
    for &b in bytes {
        *h ^= u64::from(b);
        *h = h.wrapping_mul(0x0100_0000_01b3);
    }
}

/// The file of recorded digests of `rt`'s framework: `tests/data/instrument-digests-<version>.txt`.
fn digests_path(rt: &Runtime) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(format!("instrument-digests-{}.txt", rt.version()))
}

/// Per assembly of `rt`'s framework: bodies, instrumented, refused, digest (the
/// recorded format); `None` for a framework nothing was recorded for.
fn recorded(rt: &Runtime) -> Option<BTreeMap<String, String>> {
    let text = std::fs::read_to_string(digests_path(rt)).ok()?;
    let lines = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let (name, rest) = l.split_once(' ').expect("name and counts");
            (name.to_string(), rest.to_string())
        })
        .collect();
    Some(lines)
}

/// The digests of each framework were recorded once (3.1.23: from the instrumentation
/// path the crate had before the public `Instrumenter`, see the file's header; 8.0.4:
/// from the `Instrumenter`, with every body also equal to the hand-composed rewrite);
/// `ILREWRITE_BLESS=1` records the file of a framework anew.
#[test]
fn the_public_instrumenter_gives_the_recorded_bytes_on_every_framework_body() {
    for_each_runtime(instrument_every_framework_body);
}

fn instrument_every_framework_body(rt: &Runtime) {
    let bless = std::env::var_os("ILREWRITE_BLESS").is_some_and(|v| v == "1");
    let recorded = if bless { None } else { recorded(rt) };
    let mut blessed = vec![format!(
        "# Per assembly of the .NET {} framework: distinct IL bodies, bodies instrumented, \
         bodies refused, and\n# the FNV-1a-64 digest of (MethodDef token, little-endian) + \
         encoded bytes of every instrumented\n# body in MethodDef order, recorded from the \
         public Instrumenter (ILREWRITE_BLESS=1); see\n# instrument-digests-3.1.23.txt for \
         the instrumentation.",
        rt.version()
    )];
    let assemblies = rt.framework_assemblies().unwrap_or_else(|e| panic!("{e}"));
    let mut instrumenter = instrumenter();
    let mut decoder = Decoder::new();
    let (mut body, mut copy, mut bytes) = (MethodBody::new(), MethodBody::new(), Vec::new());
    let (mut total, mut rewritten, mut locals_added, mut compared_by_hand) = (0, 0, 0, 0);
    let mut differing = Vec::new();
    for path in &assemblies {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let data = std::fs::read(path).expect("reads");
        let asm = Assembly::parse(&data).expect("parses");
        // One per module, as a profiler keeps it.
        let resolver = ProfilerResolver {
            module: CachingResolver::for_module(&asm),
        };
        let (mut n, mut ok, mut refused) = (0, 0, 0);
        let mut digest: u64 = 0xcbf2_9ce4_8422_2325;
        let mut seen = HashSet::new();
        for method in asm.methods().flatten() {
            let Some(code) = method.body else { continue };
            if !method.is_il() || !seen.insert(method.rva) {
                continue;
            }
            n += 1;
            decoder.decode_into(code, &mut body).expect("decodes");
            copy.clone_from(&body);
            let token = method.token;
            let context =
                MethodContext::from_metadata(&asm, token, &body, token as i32).expect("signatures");
            let done = match instrumenter.instrument(&mut body, &context, &resolver) {
                Ok(done) => done,
                Err(Error::Unsupported { .. }) => {
                    refused += 1;
                    continue;
                }
                Err(e) => panic!("{name} {token:08x}: {e}"),
            };
            let max_stack = done.max_stack;
            if done.new_locals_signature.is_some() {
                // Named only now that the rewrite succeeded.
                body.local_var_sig = NEW_LOCALS;
                locals_added += 1;
            }
            bytes.clear();
            let header = instrumenter.encode(&body, &mut bytes).expect("encodes");
            assert_eq!(header.max_stack(), max_stack, "{name} {token:08x}");
            ok += 1;
            fnv(&mut digest, &token.to_le_bytes());
            fnv(&mut digest, &bytes);
            // The same rewrite by hand, with the public edit-by-edit transforms.
            match by_hand(&asm, &resolver, token, &mut copy) {
                Ok(hand) if hand == bytes => compared_by_hand += 1,
                other => differing.push(format!("{name} {token:08x}: {:?}", other.err())),
            }
        }
        total += n;
        rewritten += ok;
        let line = format!("{n} {ok} {refused} {digest:016x}");
        match &recorded {
            Some(recorded) => assert_eq!(recorded.get(&name), Some(&line), "{rt} {name}"),
            None => blessed.push(format!("{name} {line}")),
        }
    }
    eprintln!(
        "bodies {total}, instrumented {rewritten}, locals added {locals_added}, equal to the \
         hand-composed rewrite {compared_by_hand}"
    );
    assert!(
        differing.is_empty(),
        "{} differ: {:?}",
        differing.len(),
        &differing[..differing.len().min(5)]
    );
    assert_eq!(rewritten, total);
    assert_eq!(compared_by_hand, total);
    if let Some(f) = rt.facts() {
        assert_eq!(assemblies.len(), f.assemblies);
        assert_eq!(total, f.distinct_bodies);
    }
    if bless {
        blessed.push(String::new());
        std::fs::write(digests_path(rt), blessed.join("\n")).expect("digests written");
    } else {
        assert!(
            recorded.is_some() || rt.facts().is_none(),
            "no digests recorded for {rt}"
        );
    }
}

/// The caching resolver one module's JIT callbacks share from many threads: it is
/// `Send + Sync`, and threads resolving the same tokens at once all get the answers the
/// uncached resolver gives.
#[test]
fn a_module_resolver_is_shared_by_threads() {
    for_each_runtime(|rt| {
        let data = std::fs::read(rt.corelib()).expect("reads");
        share_a_module_resolver(&data);
    });
}

fn share_a_module_resolver(data: &[u8]) {
    fn shareable<T: Send + Sync>(_: &T) {}
    let asm = Assembly::parse(data).expect("parses");
    let shared = CachingResolver::for_module(&asm);
    shareable(&shared);
    let uncached = MetadataResolver::new(&asm);
    let tokens: Vec<(OpCode, u32)> = (1..=asm.row_count(ilrewrite::pe::TableId::MemberRef))
        .map(|rid| (OpCode::Call, 0x0A00_0000 | rid))
        .chain((1..=4000).map(|rid| (OpCode::Newobj, 0x0600_0000 | rid)))
        .filter(|&(_, t)| {
            asm.call_site_signature(t)
                .is_ok_and(|s| s.first().is_some_and(|&b| b & 0x0F != 6))
        })
        .collect();
    assert!(tokens.len() > 5000, "{}", tokens.len());
    std::thread::scope(|scope| {
        for k in 0..4 {
            let (shared, tokens, uncached) = (&shared, &tokens, &uncached);
            scope.spawn(move || {
                for round in 0..3 {
                    for i in 0..tokens.len() {
                        let (op, t) = tokens[(i * (k + 1) + round) % tokens.len()];
                        assert_eq!(shared.call_effect(op, t), uncached.call_effect(op, t));
                    }
                }
            });
        }
    });
}

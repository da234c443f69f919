//! Codec throughput over every distinct method body of System.Private.CoreLib of the default
//! runtime (.NET 8.0.4; see `ilrewrite_corpus::default_runtime`).
//!
//! Each iteration processes all 17,490 bodies. `scan` (the length-only walk of
//! `body::scan_body`) is the baseline the other stages are judged against (the targets in
//! docs/performance.md: decode+encode within 3x of it): on a shared machine read the ratios
//! between the groups' times, not the absolute times. `examples/throughput.rs` prints those
//! ratios directly.
//!
//! `encode` and `decode_encode` use a reused `Encoder`, which copies the code of bodies
//! whose instruction list is unedited since decoding; `encode_derived` and
//! `decode_encode_derived` derive every byte from the instructions, as for edited bodies.
//!
//! `rewrite` is what a profiler does in its JIT callback (target in docs/performance.md:
//! within 6x of the scan): decode, add a return-value local to the LocalVarSig,
//! single-ret + try/finally wrap with entry/exit/epilogue calls (the `Instrumenter` of
//! `ilrewrite_audit`), exact max stack, encode.
//!
//! Run with `cargo bench --features pe --bench codec`.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ilrewrite::MethodBody;
use ilrewrite::body::{Decoder, Encoder, scan_body};
use ilrewrite::pe::Assembly;
use ilrewrite_audit::{HookResolver, hook_instrumenter, instrument};
use std::collections::HashSet;
use std::hint::black_box;
use std::time::Duration;

/// A distinct IL body (cut to its own length) with the token of its first method.
struct Method<'a> {
    body: &'a [u8],
    token: u32,
}

/// The distinct IL bodies of `asm` (by RVA).
fn distinct_methods<'a>(asm: &Assembly<'a>) -> Vec<Method<'a>> {
    let mut seen = HashSet::new();
    asm.methods()
        .map(|m| m.expect("well-formed metadata"))
        .filter(|m| m.is_il() && seen.insert(m.rva))
        .filter_map(|m| {
            let bytes = m.body?;
            Some(Method {
                body: &bytes[..scan_body(bytes).expect("body scans").len],
                token: m.token,
            })
        })
        .collect()
}

fn codec(c: &mut Criterion) {
    let path = ilrewrite_corpus::default_runtime()
        .map(ilrewrite_corpus::Runtime::corelib)
        .expect("a .NET runtime");
    let data = std::fs::read(&path).expect("CoreLib is readable");
    let asm = Assembly::parse(&data).expect("assembly parses");
    let methods = distinct_methods(&asm);
    let bodies: Vec<&[u8]> = methods.iter().map(|m| m.body).collect();
    let total_bytes: usize = bodies.iter().map(|b| b.len()).sum();

    let mut decoder = Decoder::new();
    let decoded: Vec<MethodBody> = bodies
        .iter()
        .map(|bytes| {
            let mut body = MethodBody::new();
            decoder.decode_into(bytes, &mut body).expect("decodes");
            body
        })
        .collect();

    let mut group = c.benchmark_group("corelib");
    group
        .throughput(Throughput::Bytes(total_bytes as u64))
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));

    group.bench_function("scan", |b| {
        b.iter(|| {
            let mut instructions = 0u32;
            for bytes in &bodies {
                instructions += scan_body(black_box(bytes)).unwrap().instructions;
            }
            instructions
        })
    });

    group.bench_function("decode", |b| {
        let mut decoder = Decoder::new();
        let mut body = MethodBody::new();
        b.iter(|| {
            let mut used = 0usize;
            for bytes in &bodies {
                used += decoder.decode_into(black_box(bytes), &mut body).unwrap();
            }
            used
        })
    });

    // A reused `Encoder::new()` copies the code of unedited bodies; `Encoder::deriving_every_byte()`
    // derives every byte from the instructions, as for an edited body.
    type MakeEncoder = fn() -> Encoder;
    let encoders: [(&str, &str, MakeEncoder); 2] = [
        ("encode", "decode_encode", Encoder::new),
        (
            "encode_derived",
            "decode_encode_derived",
            Encoder::deriving_every_byte,
        ),
    ];
    for (encode_name, decode_encode_name, make) in encoders {
        group.bench_function(encode_name, |b| {
            let mut encoder = make();
            let mut out = Vec::new();
            b.iter(|| {
                let mut written = 0usize;
                for body in &decoded {
                    out.clear();
                    encoder.encode(black_box(body), &mut out).unwrap();
                    written += black_box(&out).len();
                }
                written
            })
        });

        group.bench_function(decode_encode_name, |b| {
            let mut decoder = Decoder::new();
            let mut encoder = make();
            let mut body = MethodBody::new();
            let mut out = Vec::new();
            b.iter(|| {
                let mut written = 0usize;
                for bytes in &bodies {
                    decoder.decode_into(black_box(bytes), &mut body).unwrap();
                    out.clear();
                    encoder.encode(&body, &mut out).unwrap();
                    written += black_box(&out).len();
                }
                written
            })
        });
    }

    group.bench_function("rewrite", |b| {
        let mut decoder = Decoder::new();
        let mut instrumenter = hook_instrumenter();
        let resolver = HookResolver::new(&asm);
        let mut body = MethodBody::new();
        let mut out = Vec::new();
        b.iter(|| {
            let mut written = 0usize;
            for m in &methods {
                decoder.decode_into(black_box(m.body), &mut body).unwrap();
                // Bodies with `jmp` are refused and left as they are, as a profiler would.
                let _ = instrument(&mut instrumenter, &asm, &resolver, m.token, &mut body);
                out.clear();
                instrumenter.encode(&body, &mut out).unwrap();
                written += black_box(&out).len();
            }
            written
        })
    });

    group.finish();
}

criterion_group!(benches, codec);
criterion_main!(benches);

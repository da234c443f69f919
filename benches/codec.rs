//! Codec throughput over every distinct method body of System.Private.CoreLib 3.1.23.
//!
//! Each iteration processes all 17,490 bodies. `scan` (the length-only walk of
//! `body::scan_body`) is the baseline the other stages are judged against (DESIGN.md §4b:
//! decode+encode within 3x of it): on a shared machine read the ratios between the groups'
//! times, not the absolute times. `examples/throughput.rs` prints those ratios directly.
//!
//! Run with `cargo bench --features pe --bench codec`.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ilrewrite::MethodBody;
use ilrewrite::body::{Decoder, Encoder, scan_body};
use ilrewrite::pe::Assembly;
use std::collections::HashSet;
use std::hint::black_box;
use std::time::Duration;

/// The distinct IL bodies of `data` (by RVA), each cut to its own length.
fn distinct_bodies(data: &[u8]) -> Vec<&[u8]> {
    let asm = Assembly::parse(data).expect("assembly parses");
    let mut seen = HashSet::new();
    asm.methods()
        .map(|m| m.expect("well-formed metadata"))
        .filter(|m| m.is_il() && seen.insert(m.rva))
        .filter_map(|m| m.body)
        .map(|bytes| &bytes[..scan_body(bytes).expect("body scans").len])
        .collect()
}

fn codec(c: &mut Criterion) {
    let path = ilrewrite_corpus::corelib().expect("a .NET 3.1 runtime");
    let data = std::fs::read(&path).expect("CoreLib is readable");
    let bodies = distinct_bodies(&data);
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

    group.bench_function("encode", |b| {
        let mut encoder = Encoder::new();
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

    group.bench_function("decode_encode", |b| {
        let mut decoder = Decoder::new();
        let mut encoder = Encoder::new();
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

    group.finish();
}

criterion_group!(benches, codec);
criterion_main!(benches);

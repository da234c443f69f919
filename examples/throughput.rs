//! Codec throughput on one assembly, as ratios to a length-only scan measured in the same
//! run.
//!
//! ```text
//! cargo run --release --features pe --example throughput [ASSEMBLY] [-n RUNS] [--only STAGE]
//! ```
//!
//! `ASSEMBLY` defaults to System.Private.CoreLib of the default runtime (.NET 8.0.4,
//! provisioned on first use), `RUNS` to 20. Every distinct method body (by RVA) is processed once per run
//! by each stage; the stages take turns within a run, so a change in machine load hits
//! them alike. For each stage the table shows the median and best time of a run, the
//! median over runs of the stage's time divided by the scan's time in that run (the
//! figure to compare across machines; docs/performance.md sets decode+encode within 3x),
//! and, from the median, bodies per second, MB of body bytes per second, nanoseconds per
//! instruction and microseconds per body.
//!
//! `--only STAGE` times that stage alone (no ratio), e.g. to profile it:
//! `valgrind --tool=callgrind --toggle-collect='*Stage*time*' target/release/examples/throughput
//! --only decode+encode -n 1` counts the instructions of two passes (warm-up and run).
//!
//! `encode` and `decode+encode` use a reused [`Encoder`], which copies the code of a body
//! whose instruction list is unedited since decoding instead of re-deriving it;
//! `encode-derived` and `dec+enc-derived` derive every byte from the instructions
//! (`Encoder::deriving_every_byte`), as for an edited body.
//!
//! A stage is a closure called once per body with the body's index and bytes; adding one
//! is one more `Stage::per_body` entry in `main`.
//!
//! The `rewrite` stage is what a profiler does in its JIT callback: decode, add a
//! return-value local to the LocalVarSig, single-ret + try/finally wrap with entry, exit
//! and epilogue calls (`ilrewrite::Instrumenter`, set up by
//! `ilrewrite_audit::hook_instrumenter`), exact max stack, encode. docs/performance.md
//! sets it a target of 6x the scan and says why it is not reached.

use ilrewrite::MethodBody;
use ilrewrite::analysis::{
    CallEffect, CallSiteResolver, ControlFlowGraph, MaxStackMode, ReturnKind, StackAnalyzer,
};
use ilrewrite::body::{Decoder, Encoder, scan_body};
use ilrewrite::graph::{Incoming, InstrId, Instruction};
use ilrewrite::metadata::MetadataSource;
use ilrewrite::opcode::OpCode;
use ilrewrite::pe::Assembly;
use ilrewrite::sig::summarize_method_sig;
use ilrewrite::transform::{Instrumenter, MethodContext};
use ilrewrite_audit::{HookResolver, NEW_LOCALS_TOKEN, hook_instrumenter};
use std::collections::HashSet;
use std::hint::black_box;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// The bodies every stage processes.
struct Corpus<'a> {
    bodies: Vec<&'a [u8]>,
    /// MethodDef token and signature blob of the (first) method of each body.
    methods: Vec<(u32, &'a [u8])>,
    /// Whether each body's method returns a value (from its signature).
    returns_value: Vec<bool>,
    bytes: usize,
    instructions: usize,
}

impl<'a> Corpus<'a> {
    /// The distinct IL bodies of `asm` (by RVA), each cut to its own length.
    fn new(asm: &Assembly<'a>) -> Result<Self, String> {
        let mut seen = HashSet::new();
        let mut corpus = Corpus {
            bodies: Vec::new(),
            methods: Vec::new(),
            returns_value: Vec::new(),
            bytes: 0,
            instructions: 0,
        };
        for method in asm.methods() {
            let method = method.map_err(|e| format!("metadata: {e}"))?;
            let Some(bytes) = method.body else { continue };
            if !method.is_il() || !seen.insert(method.rva) {
                continue;
            }
            let extent =
                scan_body(bytes).map_err(|e| format!("method 0x{:08x}: {e}", method.token))?;
            corpus.bodies.push(&bytes[..extent.len]);
            corpus.methods.push((method.token, method.signature));
            let summary = summarize_method_sig(method.signature)
                .map_err(|e| format!("method 0x{:08x}: signature: {e}", method.token))?;
            corpus.returns_value.push(summary.returns_value);
            corpus.bytes += extent.len;
            corpus.instructions += extent.instructions as usize;
        }
        Ok(corpus)
    }
}

/// The steps of the rewrite stages, each with its own reused buffers.
struct Rewriter {
    decoder: Decoder,
    body: MethodBody,
    analyzer: StackAnalyzer,
    instrumenter: Instrumenter,
}

impl Default for Rewriter {
    fn default() -> Self {
        Rewriter {
            decoder: Decoder::new(),
            body: MethodBody::new(),
            analyzer: StackAnalyzer::new(),
            instrumenter: hook_instrumenter(),
        }
    }
}

impl Rewriter {
    fn decode(&mut self, bytes: &[u8]) {
        self.decoder
            .decode_into(bytes, &mut self.body)
            .expect("decodes");
    }

    /// Instruments the body of `(token, signature)` with the audit's instrumenter
    /// (return-value local, wrap, exact max stack); returns the max stack, or `None` if
    /// the body is refused (left as it was).
    fn instrument(
        &mut self,
        asm: &Assembly<'_>,
        resolver: &HookResolver<'_, '_>,
        (token, signature): (u32, &[u8]),
    ) -> Option<u16> {
        let locals = match self.body.local_var_sig {
            0 => None,
            sig => Some(asm.signature(sig).expect("locals signature")),
        };
        let method = MethodContext {
            signature,
            locals,
            id: token as i32,
            tokens: &[],
            module_id: None,
        };
        let done = self
            .instrumenter
            .instrument(&mut self.body, &method, resolver)
            .ok()?;
        let max_stack = done.max_stack;
        if done.new_locals_signature.is_some() {
            self.body.local_var_sig = NEW_LOCALS_TOKEN;
        }
        Some(max_stack)
    }

    /// Computes and stores the exact max stack; returns it.
    fn max_stack(&mut self, resolver: &HookResolver<'_, '_>, returns_value: bool) -> usize {
        self.analyzer
            .apply_max_stack(
                &mut self.body,
                resolver,
                MaxStackMode::Compute,
                ReturnKind::value_if(returns_value),
            )
            .expect("verifies")
            .max_stack as usize
    }
}

/// The token of the coverage probe: a call no assembly defines that pops the block
/// number and pushes nothing (the coverage stage's resolver knows it).
const PROBE_HOOK: u32 = 0x0AFF_FFE0;

/// What the coverage stage inserts before every basic block: record block `n`.
fn probe(n: usize) -> [Instruction; 2] {
    [
        Instruction::ldc_i4(n as i32),
        Instruction::with_token(OpCode::Call, PROBE_HOOK),
    ]
}

impl Rewriter {
    /// Inserts a probe before the first instruction of every basic block, in one
    /// [`MethodBody::insert_before_each`] that moves branches and region starts to the
    /// probes; returns how many. A block right after a `tail.` call is left alone (the
    /// call must stay right before its `ret`).
    fn probe_blocks(&mut self, probes: &mut Vec<[Instruction; 2]>) -> usize {
        let cfg = ControlFlowGraph::build(&self.body).expect("builds");
        let body = &self.body;
        let after_tail_call = |id: InstrId| {
            let call = body.instrs.prev(id);
            call.and_then(|c| body.instrs.prev(c))
                .is_some_and(|t| body.instrs.opcode(t) == OpCode::Tail)
        };
        let leaders: Vec<InstrId> = cfg
            .blocks()
            .map(|(_, block)| block.first)
            .filter(|&first| !after_tail_call(first))
            .collect();
        probes.clear();
        probes.extend((0..leaders.len()).map(probe));
        let sites: Vec<(InstrId, &[Instruction])> = leaders
            .iter()
            .zip(probes.iter())
            .map(|(&at, code)| (at, &code[..]))
            .collect();
        self.body
            .insert_before_each(&sites, Incoming::Redirect)
            .expect("probes insert");
        sites.len()
    }
}

/// The work of one stage on the whole corpus; returns a number derived from the work.
type RunAll<'a> = Box<dyn FnMut(&[&[u8]]) -> usize + 'a>;

/// One row of the table: a name and the work done on the whole corpus per run.
struct Stage<'a> {
    name: &'static str,
    run: RunAll<'a>,
    times: Vec<Duration>,
}

impl<'a> Stage<'a> {
    /// A stage that calls `f(index, bytes)` on every body in order. `f` returns any
    /// number derived from its work (summed and kept from the optimiser); it should
    /// panic on failure, which would make the figures meaningless.
    fn per_body(name: &'static str, mut f: impl FnMut(usize, &[u8]) -> usize + 'a) -> Self {
        Stage {
            name,
            run: Box::new(move |bodies| {
                let mut sum = 0usize;
                for (i, bytes) in bodies.iter().enumerate() {
                    sum = sum.wrapping_add(f(i, black_box(bytes)));
                }
                sum
            }),
            times: Vec::new(),
        }
    }

    #[inline(never)] // a symbol for profilers to toggle on
    fn time(&mut self, corpus: &Corpus<'_>) {
        let start = Instant::now();
        black_box((self.run)(&corpus.bodies));
        self.times.push(start.elapsed());
    }
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

const USAGE: &str = "usage: throughput [ASSEMBLY] [-n RUNS] [--only STAGE]";

struct Args {
    /// `None`: System.Private.CoreLib.
    path: Option<PathBuf>,
    runs: usize,
    only: Option<String>,
}

/// The arguments, `None` for `--help`, or what is wrong with them.
fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Option<Args>, String> {
    let mut path = None;
    let mut runs = 20;
    let mut only = None;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "-n" | "--runs" => {
                let value = args.next().ok_or("-n needs a number")?;
                runs = value
                    .parse()
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or(format!("bad run count {value:?}"))?;
            }
            "--only" => only = Some(args.next().ok_or("--only needs a stage name")?),
            "-h" | "--help" => return Ok(None),
            _ if arg.starts_with('-') => return Err(format!("unknown option {arg:?}")),
            _ if path.is_none() => path = Some(PathBuf::from(arg)),
            _ => return Err(format!("unexpected argument {arg:?}")),
        }
    }
    Ok(Some(Args { path, runs, only }))
}

fn main() -> ExitCode {
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(Some(args)) => args,
        Ok(None) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("throughput: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("throughput: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Decodes and re-encodes every body once and checks the bytes, so that the timed
/// stages are known to do the real work.
fn check_round_trip(corpus: &Corpus<'_>) -> Result<(), String> {
    let (mut decoder, mut encoder) = (Decoder::new(), Encoder::new());
    let (mut body, mut out) = (MethodBody::new(), Vec::new());
    for (i, bytes) in corpus.bodies.iter().enumerate() {
        decoder
            .decode_into(bytes, &mut body)
            .map_err(|e| format!("body {i}: decode: {e}"))?;
        out.clear();
        encoder
            .encode(&body, &mut out)
            .map_err(|e| format!("body {i}: encode: {e}"))?;
        if out[..] != bytes[..] {
            return Err(format!("body {i} does not re-encode byte-identical"));
        }
    }
    Ok(())
}

fn run(args: &Args) -> Result<(), String> {
    let path = match &args.path {
        Some(path) => path.clone(),
        None => ilrewrite_corpus::default_runtime()
            .map(ilrewrite_corpus::Runtime::corelib)
            .map_err(|e| format!("no default assembly: {e}"))?,
    };
    let data = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let asm = Assembly::parse(&data)
        .map_err(|e| format!("{}: not a .NET assembly: {e}", path.display()))?;
    let corpus = Corpus::new(&asm)?;
    check_round_trip(&corpus)?;

    let decoded: Vec<MethodBody> = corpus
        .bodies
        .iter()
        .map(|bytes| MethodBody::decode(bytes).expect("checked above"))
        .collect();

    let mut decoder = Decoder::new();
    let mut decode_body = MethodBody::new();
    let mut encoder = Encoder::new();
    let mut encode_out = Vec::new();
    let (mut de_decoder, mut de_encoder) = (Decoder::new(), Encoder::new());
    let (mut de_body, mut de_out) = (MethodBody::new(), Vec::new());
    let mut derived_encoder = Encoder::deriving_every_byte();
    let mut derived_out = Vec::new();
    let (mut dd_decoder, mut dd_encoder) = (Decoder::new(), Encoder::deriving_every_byte());
    let (mut dd_body, mut dd_out) = (MethodBody::new(), Vec::new());
    let (mut rewriter, mut rw_out) = (Rewriter::default(), Vec::new());
    let (mut coverage, mut cov_encoder, mut cov_out, mut probes) =
        (Rewriter::default(), Encoder::new(), Vec::new(), Vec::new());
    let mut max_stack_only = Rewriter::default();
    let mut without_encode = Rewriter::default();
    // Created once per assembly, as a profiler would per module: each call-site token
    // is resolved once.
    let resolver = HookResolver::new(&asm);

    // The scan must stay first: it is the baseline of the ratios.
    let mut stages = vec![
        Stage::per_body("scan", |_, bytes| {
            scan_body(bytes).expect("scans").instructions as usize
        }),
        Stage::per_body("decode", |_, bytes| {
            decoder
                .decode_into(bytes, &mut decode_body)
                .expect("decodes")
        }),
        Stage::per_body("encode", |i, _| {
            encode_out.clear();
            encoder
                .encode(&decoded[i], &mut encode_out)
                .expect("encodes");
            encode_out.len()
        }),
        Stage::per_body("decode+encode", |_, bytes| {
            de_decoder
                .decode_into(bytes, &mut de_body)
                .expect("decodes");
            de_out.clear();
            de_encoder.encode(&de_body, &mut de_out).expect("encodes");
            de_out.len()
        }),
        // The same two with every byte of the code derived from the instructions, as for
        // an edited body (`Encoder::deriving_every_byte`).
        Stage::per_body("encode-derived", |i, _| {
            derived_out.clear();
            derived_encoder
                .encode(&decoded[i], &mut derived_out)
                .expect("encodes");
            derived_out.len()
        }),
        Stage::per_body("dec+enc-derived", |_, bytes| {
            dd_decoder
                .decode_into(bytes, &mut dd_body)
                .expect("decodes");
            dd_out.clear();
            dd_encoder.encode(&dd_body, &mut dd_out).expect("encodes");
            dd_out.len()
        }),
        // The parts of `rewrite`, to see where its time goes: max stack of the unedited
        // body, and the instrumentation (edits and the max stack of the result) without
        // the final encode.
        Stage::per_body("dec+maxstack", |i, bytes| {
            let r = &mut max_stack_only;
            r.decode(bytes);
            r.max_stack(&resolver, corpus.returns_value[i])
        }),
        Stage::per_body("dec+instrument", |i, bytes| {
            let r = &mut without_encode;
            r.decode(bytes);
            r.instrument(&asm, &resolver, corpus.methods[i])
                .map_or(0, usize::from)
        }),
        Stage::per_body("rewrite", |i, bytes| {
            let r = &mut rewriter;
            r.decode(bytes);
            // Bodies with `jmp` are refused (and left as they are), as a profiler would.
            r.instrument(&asm, &resolver, corpus.methods[i]);
            rw_out.clear();
            r.instrumenter
                .encode(&r.body, &mut rw_out)
                .expect("encodes");
            rw_out.len()
        }),
        // What a code-coverage tool does: a probe before every basic block.
        Stage::per_body("coverage", |i, bytes| {
            let r = &mut coverage;
            r.decode(bytes);
            let count = r.probe_blocks(&mut probes);
            let probe_resolver = |opcode: OpCode, token: u32| match token {
                PROBE_HOOK => Ok(CallEffect { pops: 1, pushes: 0 }),
                _ => resolver.call_effect(opcode, token),
            };
            r.analyzer
                .apply_max_stack(
                    &mut r.body,
                    &probe_resolver,
                    MaxStackMode::Compute,
                    ReturnKind::value_if(corpus.returns_value[i]),
                )
                .expect("verifies");
            cov_out.clear();
            cov_encoder.encode(&r.body, &mut cov_out).expect("encodes");
            count + cov_out.len()
        }),
    ];

    if let Some(only) = &args.only {
        stages.retain(|stage| stage.name == only);
        if stages.is_empty() {
            return Err(format!("no stage named {only:?}"));
        }
    }

    // One untimed warm-up run, then the timed runs, stages taking turns.
    for stage in &mut stages {
        stage.time(&corpus);
        stage.times.clear();
    }
    for _ in 0..args.runs {
        for stage in &mut stages {
            stage.time(&corpus);
        }
    }

    println!(
        "{}: {} bodies, {} bytes of bodies, {} instructions; {} runs",
        path.display(),
        corpus.bodies.len(),
        corpus.bytes,
        corpus.instructions,
        args.runs
    );
    println!(
        "{:<19} {:>9} {:>9} {:>7} {:>10} {:>8} {:>9} {:>9}",
        "stage", "median ms", "best ms", "x scan", "methods/s", "MB/s", "ns/instr", "us/method"
    );
    // Ratios need the scan, which is the first stage unless `--only` removed it.
    let scan_times: Vec<f64> = match stages[0].name {
        "scan" => stages[0].times.iter().map(Duration::as_secs_f64).collect(),
        _ => vec![f64::NAN; args.runs],
    };
    for stage in &stages {
        let mut secs: Vec<f64> = stage.times.iter().map(Duration::as_secs_f64).collect();
        // Ratio to the scan of the same run, then the median over runs.
        let mut ratios: Vec<f64> = secs.iter().zip(&scan_times).map(|(s, b)| s / b).collect();
        let best = secs.iter().copied().fold(f64::INFINITY, f64::min);
        let med = median(&mut secs);
        println!(
            "{:<19} {:>9.3} {:>9.3} {:>7.2} {:>10.0} {:>8.1} {:>9.2} {:>9.3}",
            stage.name,
            med * 1e3,
            best * 1e3,
            median(&mut ratios),
            corpus.bodies.len() as f64 / med,
            corpus.bytes as f64 / med / 1e6,
            med * 1e9 / corpus.instructions as f64,
            med * 1e6 / corpus.bodies.len() as f64,
        );
    }
    Ok(())
}

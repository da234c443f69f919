//! The sample profiler: a cdylib that CoreCLR loads, built on `ilrewrite::clr`.
//!
//! ```text
//! cargo build --release --features clr --example profiler
//! CORECLR_ENABLE_PROFILING=1 \
//! CORECLR_PROFILER={8C1E2D4F-3B6A-4E59-A7C2-1F0D9B3E6A51} \
//! CORECLR_PROFILER_PATH=$PWD/target/release/examples/libprofiler.so \
//! ILREWRITE_MODE=wrap dotnet app.dll
//! ```
//!
//! It disables ReadyToRun images, so that every method that runs, framework methods
//! included, is JIT-compiled and seen. Inlining stays on: the rewriter answers the JIT's
//! inlining questions so that a method it rewrites (or, with the filter, will rewrite) is
//! not inlined into its callers, and the other methods are inlined as the JIT decides
//! (`ILREWRITE_INLINING=allow` lets the JIT inline every method, at the cost of calls
//! that run a callee's uninstrumented IL inside its caller). `ILREWRITE_MODE` says what
//! it does with each compilation:
//!
//! * `count` (default): counts them, rewrites nothing;
//! * `identity`: decodes and re-encodes every method and hands the bytes to the runtime;
//! * `decode`: the same without handing the bytes over (a measurement: the crate's
//!   cost without the runtime's cost of taking a new body);
//! * `wrap`: wraps every method in try/finally (single-ret, return-value local), with
//!   entry and exit probes that count into this library's counters (see
//!   `ILREWRITE_PROBES`; no helper assembly needed). Tail calls stay tail
//!   calls: a `tail.` call leaves the try through a stub that makes the same tail call
//!   after the finally ran, so a tail-call exit counts in `exits` like a return, and a
//!   program that tail-recurses a million calls deep still runs in constant stack. A
//!   method whose tail call cannot be kept (its callee's signature cannot be typed) is
//!   refused and keeps its original IL; a method with `jmp` too.
//!
//! `ILREWRITE_PROBES` says what the `wrap` probes are:
//!
//! * `managed` (default): `Interlocked.Add(ref counter, 1)` on the native address of the
//!   counter, a call of a method of the core library (an AssemblyRef, TypeRef and
//!   MemberRef each module gains at its load; in the core library itself the method's
//!   own MethodDef). The JIT turns it into one locked add inside the method: no frame,
//!   no transition, so a wrapped recursion keeps most of its depth. The core library's
//!   `System.Threading.Interlocked` methods are not wrapped (the probes call them);
//! * `native`: `calli` of an unmanaged function pointer to a Rust function (a
//!   transition frame in every wrapped method: several times the stack per level);
//! * `none`: no counting (`enters` and `exits` stay 0): the finally only stores a byte
//!   to native memory (an empty finally the JIT would remove, with its try), so this
//!   measures the try/finally's own cost.
//!
//! `ILREWRITE_FILTER`, when set, limits counting and rewriting to the methods whose name
//! `Namespace.Type::Method` (nested types as `Outer/Inner`) contains it.
//!
//! A configuration it cannot read (an unknown mode, probe kind or inlining choice, a
//! variable that is not UTF-8) is an error line at start-up, `ilrewrite: error: ...; nothing is rewritten`, and then the
//! profiler stays attached in mode `off`: it asks for no event and rewrites nothing.
//!
//! At shutdown it prints to stderr one line,
//! `ilrewrite: mode M jitted N rewritten N already N refused N failed N enters N exits N`,
//! then one line per refusal or failure reason, `ilrewrite:   COUNT REASON`; with
//! `ILREWRITE_TIMING` set, then `ilrewrite: timing NS ns in N JITCompilationStarted
//! callbacks` (the time spent inside its JIT callback). `rewritten` counts the
//! compilations that handed a rewritten body over, `already` those of a method rewritten
//! by an earlier compilation (a generic instantiation, a tier-up): both compile
//! rewritten IL.

use ilrewrite::body::Encoder;
use ilrewrite::clr::{AssemblyName, CorPrfHighMonitor, CorPrfMonitor, FunctionID, ModuleID};
use ilrewrite::clr::{HResult, Inlining, Instrumentation, JitRewriter, Profiler, ProfilerInfo};
use ilrewrite::clr::{ModuleMetadata, ModuleState, RewriteOutcome, mdToken};
use ilrewrite::disasm::method_name;
use ilrewrite::sig::{MethodSig, TypeSig};
use ilrewrite::transform::{InstrumentationCode, Snippet};
use ilrewrite::{Instruction, OpCode};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, OnceLock};

/// Calls of instrumented methods, counted by the injected entry code.
static ENTERS: AtomicU64 = AtomicU64::new(0);
/// Returns and unwinds of instrumented methods, counted by the injected finally code.
static EXITS: AtomicU64 = AtomicU64::new(0);

/// `Probes::Native`'s entry probe (`calli unmanaged cdecl void()`).
extern "C" fn on_enter() {
    ENTERS.fetch_add(1, Relaxed);
}

/// `Probes::Native`'s exit probe, in the finally.
extern "C" fn on_exit() {
    EXITS.fetch_add(1, Relaxed);
}

/// `unmanaged cdecl void()`: the signature of the `calli` to the native counters.
const COUNTER_SIG: [u8; 3] = [0x01, 0x00, 0x01];

/// The type and method the managed probes call: `int64 Add(int64&, int64)`.
const INTERLOCKED: &str = "System.Threading.Interlocked";
const ADD: &str = "Add";

/// What the `wrap` probes are (`ILREWRITE_PROBES`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Probes {
    /// `Interlocked.Add(ref counter, 1)` on the counter's native address.
    Managed,
    /// `calli` of a native function.
    Native,
    /// No probe: the try/finally alone.
    None,
}

impl Probes {
    const CHOICES: [Probes; 3] = [Probes::Managed, Probes::Native, Probes::None];

    fn name(self) -> &'static str {
        match self {
            Probes::Managed => "managed",
            Probes::Native => "native",
            Probes::None => "none",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// The configuration could not be read: nothing is counted or rewritten.
    Off,
    Count,
    Decode,
    Identity,
    Wrap,
}

impl Mode {
    /// The modes `ILREWRITE_MODE` may name.
    const CHOICES: [Mode; 4] = [Mode::Count, Mode::Identity, Mode::Decode, Mode::Wrap];

    fn name(self) -> &'static str {
        match self {
            Mode::Off => "off",
            Mode::Count => "count",
            Mode::Decode => "decode",
            Mode::Identity => "identity",
            Mode::Wrap => "wrap",
        }
    }
}

/// What the environment asks for.
#[derive(Debug, Clone)]
struct Config {
    /// `ILREWRITE_MODE` (`count` when not set).
    mode: Mode,
    /// `ILREWRITE_FILTER` (none when not set or empty).
    filter: Option<String>,
    /// `ILREWRITE_INLINING`: `keep` (the default: what the rewriter rewrites is not
    /// inlined) or `allow`.
    inlining: Inlining,
    /// `ILREWRITE_PROBES` (`managed` when not set).
    probes: Probes,
}

/// Reads the [`Config`] from the environment.
///
/// Fails closed: a mode that is not one of [`Mode::CHOICES`], probes not one of
/// [`Probes::CHOICES`], an inlining choice other than `keep` or `allow`, or a variable that is not UTF-8, is an error, never a silent
/// fallback (an unreadable filter read as "no filter" would rewrite every method).
fn config() -> Result<Config, String> {
    let text = |name: &str| match std::env::var(name) {
        Ok(value) => Ok(Some(value)),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(raw)) => {
            Err(format!("{name} is not valid UTF-8 ({raw:?})"))
        }
    };
    let mode = match text("ILREWRITE_MODE")? {
        None => Mode::Count,
        Some(name) => Mode::CHOICES
            .into_iter()
            .find(|m| m.name() == name)
            .ok_or_else(|| {
                format!(
                    "unknown ILREWRITE_MODE {name:?} (expected count, identity, decode or wrap)"
                )
            })?,
    };
    let filter = text("ILREWRITE_FILTER")?.filter(|f| !f.is_empty());
    let inlining = match text("ILREWRITE_INLINING")?.as_deref() {
        None | Some("keep") => Inlining::KeepInstrumentation,
        Some("allow") => Inlining::Allow,
        Some(other) => {
            return Err(format!(
                "unknown ILREWRITE_INLINING {other:?} (expected keep or allow)"
            ));
        }
    };
    let probes = match text("ILREWRITE_PROBES")? {
        None => Probes::Managed,
        Some(name) => Probes::CHOICES
            .into_iter()
            .find(|p| p.name() == name)
            .ok_or_else(|| {
                format!("unknown ILREWRITE_PROBES {name:?} (expected managed, native or none)")
            })?,
    };
    Ok(Config {
        mode,
        filter,
        inlining,
        probes,
    })
}

/// Whether the method's name `Namespace.Type::Method` contains `filter`.
fn name_contains(module: &ModuleState, token: mdToken, filter: &str) -> bool {
    let name = method_name(module.metadata(), token);
    format!("{}::{}", name.owner, name.name).contains(filter)
}

/// `ldc.i8 address; conv.i; calli <token 0>`: a call of a native function.
fn native_call(function: extern "C" fn()) -> Snippet {
    let mut b = Snippet::builder();
    b.push(Instruction::ldc_i8(function as usize as i64));
    b.push(Instruction::simple(OpCode::ConvI));
    b.token(OpCode::Calli, 0);
    b.finish().expect("a valid snippet")
}

/// `Interlocked.Add(ref *counter, 1)`, its result dropped: `ldc.i8 address; conv.i;
/// ldc.i4.1; conv.i8; call <token 0>; pop`. The address is a native int where the
/// method takes an `int64&`, which the JIT accepts (unverifiable code); the counter is a
/// static, so the address stays valid and the garbage collector ignores it.
fn interlocked_add(counter: &'static AtomicU64) -> Snippet {
    let mut b = Snippet::builder();
    b.push(Instruction::ldc_i8(counter.as_ptr() as usize as i64));
    b.push(Instruction::simple(OpCode::ConvI));
    b.push(Instruction::ldc_i4(1));
    b.push(Instruction::simple(OpCode::ConvI8));
    b.token(OpCode::Call, 0);
    b.push(Instruction::simple(OpCode::Pop));
    b.finish().expect("a valid snippet")
}

/// Where `Probes::None`'s finally stores its byte.
static SINK: AtomicU8 = AtomicU8::new(0);

/// `*SINK = 1` through its native address: a finally that is not empty.
fn store_byte() -> Snippet {
    let mut b = Snippet::builder();
    b.push(Instruction::ldc_i8(SINK.as_ptr() as usize as i64));
    b.push(Instruction::simple(OpCode::ConvI));
    b.push(Instruction::ldc_i4(1));
    b.push(Instruction::simple(OpCode::StindI1));
    b.finish().expect("a valid snippet")
}

/// What a module's probes need, defined when it loads (`wrap` mode).
#[derive(Debug)]
struct ModuleProbes {
    /// The token the probes name (the method or the `calli` signature), or why the
    /// module has none.
    token: Result<mdToken, String>,
    /// The methods the probes call, never wrapped (a wrapped one would call itself):
    /// `Interlocked`'s, in the core library, with managed probes.
    own: Vec<mdToken>,
}

impl ModuleProbes {
    /// Defines (or finds) in `metadata` what `probes` need.
    fn define(metadata: &ModuleMetadata, probes: Probes) -> ModuleProbes {
        match probes {
            Probes::Managed => {
                let add = MethodSig::new(
                    TypeSig::I8,
                    vec![TypeSig::ByRef(Box::new(TypeSig::I8)), TypeSig::I8],
                );
                let token = metadata
                    .method_in(&AssemblyName::CORE_LIBRARY, INTERLOCKED, ADD, &add)
                    .map(|method| method.token());
                let own = match token {
                    Ok(token) if token >> 24 == 0x06 => metadata
                        .find_type_def(INTERLOCKED)
                        .ok()
                        .flatten()
                        .and_then(|ty| metadata.methods_of(ty).ok())
                        .unwrap_or_default(),
                    _ => Vec::new(),
                };
                ModuleProbes {
                    token: token.map_err(|e| e.to_string()),
                    own,
                }
            }
            Probes::Native => ModuleProbes {
                token: metadata
                    .token_from_sig(&COUNTER_SIG)
                    .map_err(|e| e.to_string()),
                own: Vec::new(),
            },
            Probes::None => ModuleProbes {
                token: Ok(0),
                own: Vec::new(),
            },
        }
    }

    /// The module's probes, defined now if its load was not seen.
    fn of(module: &ModuleState, probes: Probes) -> Option<&ModuleProbes> {
        module.data(|| ModuleProbes::define(module.metadata(), probes))
    }
}

thread_local! {
    /// Each JIT thread's encoder and output buffer (`decode` mode).
    static ENCODER: RefCell<(Encoder, Vec<u8>)> = RefCell::new((Encoder::new(), Vec::new()));
}

/// The `wrap` instrumentation, shared by every JIT thread.
fn counters(probes: Probes) -> Instrumentation {
    let (entry, exit) = match probes {
        Probes::Managed => (interlocked_add(&ENTERS), interlocked_add(&EXITS)),
        Probes::Native => (native_call(on_enter), native_call(on_exit)),
        Probes::None => (Snippet::default(), store_byte()),
    };
    Instrumentation::new(InstrumentationCode {
        entry,
        exit,
        ..Default::default()
    })
    .expect("the counters name no return-value local")
}

struct Sample {
    mode: Mode,
    config: Config,
    instrumentation: Instrumentation,
    rewriter: OnceLock<JitRewriter>,
    jitted: AtomicU64,
    rewritten: AtomicU64,
    /// Compilations of methods rewritten by an earlier compilation (generic
    /// instantiations, tier-up), which compile the rewritten body.
    already: AtomicU64,
    refused: AtomicU64,
    failed: AtomicU64,
    /// Refusal and failure reasons with their counts (the cold path only).
    reasons: Mutex<BTreeMap<String, u64>>,
    /// Whether to time the JIT callbacks (`ILREWRITE_TIMING`).
    timing: bool,
    /// Nanoseconds spent in `JITCompilationStarted`, and how many calls.
    callback_ns: AtomicU64,
    callbacks: AtomicU64,
}

impl Sample {
    fn new() -> Sample {
        let config = config().unwrap_or_else(|error| {
            eprintln!("ilrewrite: error: {error}; nothing is rewritten");
            Config {
                mode: Mode::Off,
                filter: None,
                inlining: Inlining::KeepInstrumentation,
                probes: Probes::Managed,
            }
        });
        Sample {
            mode: config.mode,
            instrumentation: counters(config.probes),
            config,
            rewriter: OnceLock::new(),
            jitted: AtomicU64::new(0),
            rewritten: AtomicU64::new(0),
            already: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            reasons: Mutex::new(BTreeMap::new()),
            timing: std::env::var_os("ILREWRITE_TIMING").is_some(),
            callback_ns: AtomicU64::new(0),
            callbacks: AtomicU64::new(0),
        }
    }

    /// Whether `function` passes the filter (`count` mode, which rewrites nothing).
    fn selected(&self, rewriter: &JitRewriter, function: FunctionID) -> bool {
        let Some(filter) = &self.config.filter else {
            return true;
        };
        match rewriter.locate(function) {
            Ok((module, token)) => name_contains(&module, token, filter),
            Err(_) => false,
        }
    }

    fn wrap(&self, rewriter: &JitRewriter, function: FunctionID) -> RewriteOutcome {
        let probes = self.config.probes;
        rewriter.instrument(
            function,
            &self.instrumentation,
            |module| match ModuleProbes::of(module, probes).map(|p| &p.token) {
                Some(Ok(token)) => Ok(vec![*token]),
                _ => Err(ilrewrite::Error::Unencodable {
                    what: "the probes' token could not be defined in this module",
                }),
            },
        )
    }
}

impl Profiler for Sample {
    fn initialize(&self, info: ProfilerInfo) -> Result<(), HResult> {
        if self.mode == Mode::Off {
            // Attached (its summary shows it), and asking for no event: the program
            // runs exactly as it would unprofiled.
            return info
                .set_event_mask(CorPrfMonitor::empty(), CorPrfHighMonitor::empty())
                .map_err(|_| HResult::E_FAIL);
        }
        let events = CorPrfMonitor::MONITOR_JIT_COMPILATION
            | CorPrfMonitor::MONITOR_MODULE_LOADS
            | CorPrfMonitor::DISABLE_ALL_NGEN_IMAGES;
        info.set_event_mask(events, CorPrfHighMonitor::empty())
            .map_err(|_| HResult::E_FAIL)?;
        let mut rewriter = JitRewriter::new(info).with_inlining(self.config.inlining);
        let filter = self.config.filter.clone();
        if self.mode == Mode::Wrap {
            // What the probes call is never wrapped; the rest as the filter says.
            let probes = self.config.probes;
            rewriter = rewriter.with_filter(move |module, token| {
                let own = ModuleProbes::of(module, probes).is_some_and(|p| p.own.contains(&token));
                !own && filter
                    .as_deref()
                    .is_none_or(|filter| name_contains(module, token, filter))
            });
        } else if let Some(filter) = filter {
            rewriter =
                rewriter.with_filter(move |module, token| name_contains(module, token, &filter));
        }
        let rewriter = match self.timing {
            true => rewriter.with_timings(),
            false => rewriter,
        };
        let _ = self.rewriter.set(rewriter);
        Ok(())
    }

    fn jit_compilation_started(
        &self,
        function: FunctionID,
        is_safe_to_block: bool,
    ) -> Result<(), HResult> {
        if !self.timing {
            return self.on_jit(function, is_safe_to_block);
        }
        let start = std::time::Instant::now();
        let result = self.on_jit(function, is_safe_to_block);
        self.callback_ns
            .fetch_add(start.elapsed().as_nanos() as u64, Relaxed);
        self.callbacks.fetch_add(1, Relaxed);
        result
    }

    fn module_load_finished(&self, module: ModuleID, status: HResult) -> Result<(), HResult> {
        // Metadata belongs to module load: the probes' references are defined now.
        if let (Mode::Wrap, true, Some(rewriter)) = (self.mode, status.is_ok(), self.rewriter.get())
            && let Ok(state) = rewriter.module(module)
        {
            ModuleProbes::of(&state, self.config.probes);
        }
        Ok(())
    }

    fn module_unload_started(&self, module: ModuleID) -> Result<(), HResult> {
        if let Some(rewriter) = self.rewriter.get() {
            rewriter.module_unloaded(module);
        }
        Ok(())
    }

    fn jit_inlining(&self, caller: FunctionID, callee: FunctionID) -> bool {
        match (self.mode, self.rewriter.get()) {
            // Nothing is rewritten: nothing to keep from being inlined.
            (Mode::Off | Mode::Count, _) | (_, None) => true,
            (_, Some(rewriter)) => rewriter.jit_inlining(caller, callee),
        }
    }

    fn shutdown(&self) {
        self.print_summary();
    }
}

impl Sample {
    fn on_jit(&self, function: FunctionID, _is_safe_to_block: bool) -> Result<(), HResult> {
        let Some(rewriter) = self.rewriter.get() else {
            return Ok(());
        };
        let outcome = match self.mode {
            Mode::Off => return Ok(()),
            Mode::Count => {
                if self.selected(rewriter, function) {
                    self.jitted.fetch_add(1, Relaxed);
                }
                return Ok(());
            }
            Mode::Identity => rewriter.rewrite(function, |_, _| Ok(true)),
            Mode::Decode => rewriter.rewrite(function, |body, _| {
                ENCODER.with(|e| {
                    let (encoder, out) = &mut *e.borrow_mut();
                    out.clear();
                    encoder.encode(body, out)?;
                    Ok(false)
                })
            }),
            Mode::Wrap => self.wrap(rewriter, function),
        };
        if outcome == RewriteOutcome::NotSelected {
            return Ok(());
        }
        self.jitted.fetch_add(1, Relaxed);
        if let Some(key) = outcome.key()
            && let Ok(mut reasons) = self.reasons.lock()
        {
            *reasons.entry(key).or_default() += 1;
        }
        match outcome {
            RewriteOutcome::Rewritten { .. } => {
                self.rewritten.fetch_add(1, Relaxed);
            }
            RewriteOutcome::AlreadyRewritten => {
                self.already.fetch_add(1, Relaxed);
            }
            // `decode` mode: everything but handing the bytes over.
            RewriteOutcome::Unchanged => {
                self.rewritten
                    .fetch_add(u64::from(self.mode == Mode::Decode), Relaxed);
            }
            RewriteOutcome::Refused(_) => {
                self.refused.fetch_add(1, Relaxed);
            }
            _ => {
                self.failed.fetch_add(1, Relaxed);
            }
        }
        Ok(())
    }

    fn print_summary(&self) {
        eprintln!(
            "ilrewrite: mode {} jitted {} rewritten {} already {} refused {} failed {} enters {} \
             exits {}",
            self.mode.name(),
            self.jitted.load(Relaxed),
            self.rewritten.load(Relaxed),
            self.already.load(Relaxed),
            self.refused.load(Relaxed),
            self.failed.load(Relaxed),
            ENTERS.load(Relaxed),
            EXITS.load(Relaxed),
        );
        if let Ok(reasons) = self.reasons.lock() {
            for (reason, count) in reasons.iter() {
                eprintln!("ilrewrite:   {count} {reason}");
            }
        }
        if self.timing {
            eprintln!(
                "ilrewrite: timing {} ns in {} JITCompilationStarted callbacks",
                self.callback_ns.load(Relaxed),
                self.callbacks.load(Relaxed)
            );
            if let Some(phases) = self.rewriter.get().and_then(JitRewriter::timings) {
                for (phase, ns) in phases {
                    eprintln!("ilrewrite: timing phase {ns} ns {phase}");
                }
            }
        }
    }
}

ilrewrite::export_profiler!(
    clsid = "{8C1E2D4F-3B6A-4E59-A7C2-1F0D9B3E6A51}",
    profiler = Sample::new
);

//! The sample profiler: a cdylib that CoreCLR loads, a [`Manager`] hosting the
//! instrumentation methods below, built on `ilrewrite::clr`.
//!
//! ```text
//! cargo build --release --features clr --example profiler
//! CORECLR_ENABLE_PROFILING=1 \
//! CORECLR_PROFILER={8C1E2D4F-3B6A-4E59-A7C2-1F0D9B3E6A51} \
//! CORECLR_PROFILER_PATH=$PWD/target/release/examples/libprofiler.so \
//! ILREWRITE_MODE=wrap dotnet app.dll
//! ```
//!
//! Its instrumentation methods disable ReadyToRun images, so that every method that
//! runs, framework methods included, is JIT-compiled and seen. Inlining stays on: the
//! rewriter answers the JIT's inlining questions so that a method it rewrites (or will
//! rewrite) is not inlined into its callers, and the other methods are inlined as the
//! JIT decides (`ILREWRITE_INLINING=allow` lets the JIT inline every method, at the
//! cost of calls that run a callee's uninstrumented IL inside its caller).
//!
//! What it hosts comes from a configuration file named by `ILREWRITE_CONFIG`
//! (`[[method]]` entries: `name`, `priority`, `enabled`, `options`; see
//! `ilrewrite::clr::Configuration`), or else one instrumentation method named by
//! `ILREWRITE_MODE`, with the filter `ILREWRITE_FILTER` and the probes
//! `ILREWRITE_PROBES`:
//!
//! * `count` (the default mode): counts the compilations, rewrites nothing;
//! * `identity`: decodes and re-encodes every method and hands the bytes to the runtime;
//! * `decode`: the same without handing the bytes over (a measurement: the crate's
//!   cost without the runtime's cost of taking a new body);
//! * `wrap`: wraps every method in try/finally (single-ret, return-value local), with
//!   entry and exit probes that count into this library's counters (option `probes`:
//!   `managed`, the default, an `Interlocked.Add(ref counter, 1)` on the counter's
//!   native address that the JIT makes one locked add, through an AssemblyRef, TypeRef
//!   and MemberRef each module gains at its load; `native`, a `calli` of a Rust
//!   function, a transition frame per call; `none`, a finally that stores a byte). Tail
//!   calls stay tail calls; a method whose tail call cannot be kept, or with `jmp`, is
//!   refused and keeps its original IL;
//! * `elt`: edits nothing; subscribes to the enter/leave/tailcall hooks (our fast
//!   trampolines) of the functions the filter passes (every one without a filter) and
//!   counts enters, leaves, tailcalls and unwinds; `elt-values` also reads every
//!   argument and return value; `elt-slow` the same as `elt` on the runtime's slow path,
//!   `elt-empty` counts nothing (measurements). With the feature `elt-test-modes`,
//!   `ILREWRITE_ELT_TEST=clobber` makes every hook overwrite every register a function
//!   may change, and `negative-control` does so through trampolines that forget XMM3 at
//!   enter and RDX at leave. `ILREWRITE_ELT_TRACE=FILE` makes `elt-values` write
//!   every call's values to FILE at shutdown (`enter Type::Method ARGS`,
//!   `leave Type::Method RESULT`). `ILREWRITE_ELT_CALLS=every` makes them ask for every
//!   call (`HookCoverage::EveryCall`: the whole process runs unoptimized code, where the
//!   JIT turns no tail-position self-call into a loop); `optimized` (the default) takes
//!   the code as the runtime makes it. These modes print one line at shutdown,
//!   `ilrewrite: mode M enters N leaves N tailcalls N unwinds N`;
//!
//! and, from a configuration file only:
//!
//! * `scale` and `offset`: multiply (option `factor`, 2) or add to (`addend`, 1) the
//!   `int32` result of the methods their `filter` selects (required);
//! * `faulty`: adds 1000 to such results, then panics on the methods whose name
//!   contains `panic_on` and fails on those containing `error_on`: its edit is rolled
//!   back there, the others' edits stay;
//! * `listener` and `listener2`: edit nothing, count the callbacks they receive (option
//!   `callbacks`, names of `ICorProfilerCallback` methods; `ModuleLoadFinished` by
//!   default); with option `from_assembly`, ask for those callbacks' events only once a
//!   module of that assembly loads (an events handle changing the mask later);
//! * `helper`: calls a helper at the entry of every method of the assembly its option
//!   `assembly` names: `tests/programs/ProbeHelper.dll` (`via = "managed"`, the
//!   default), through an AssemblyRef, TypeRefs, MemberRefs, a TypeSpec, a MethodSpec
//!   and a user string defined when the module loads; or a Rust function of this
//!   library through `calli` (`via = "native"`);
//! * `calls`: counts the calls of the methods its option `targets` names (selectors,
//!   `Namespace.Type::Method`, `Type::*`, an overload by its parameter list), found by
//!   name as their modules load, with ReadyToRun code kept (`[manager] ready_to_run =
//!   "keep"`): a native probe at each target's entry; with option `window` (a type's
//!   full name), calls of that type's `Open` and `Close` open and close a counting
//!   window on the calling thread. At shutdown `ilrewrite: calls NAME window N total
//!   N` per target method and `ilrewrite: calls overflow N`;
//! * `facts`: records each assembly's module facts (framework, ReadyToRun, dynamic,
//!   collectible, app domain) and keeps a data item on each assembly and app domain;
//! * `nop`, `nop2`, `nop3`, `nop4`: each inserts a `nop` at the entry of every method
//!   (option `filter`): the cheapest real edit, to measure what each further
//!   instrumentation method costs (`examples/clr_bench.rs`).
//!
//! Every `filter` keeps the methods whose name `Namespace.Type::Method` (nested types
//! as `Outer/Inner`) contains it.
//!
//! **The live dial.** With `ILREWRITE_DIAL=PATH` the manager turns ReJIT on and listens
//! on the Unix socket `PATH` (its directory made with mode 0700, or else the user's own
//! and closed to group and others; only the process's user may connect), printing
//! `ilrewrite: dial listening on PATH` at start-up. Its commands (one per line, answered
//! by lines then `ok`, or one `error: ...` line; `ilrewrite dial` is a client) change
//! what running methods compute from their next call: `instrument Type::Method NAME
//! [key=value ...] [flags=...]` (NAME one of the hosted instrumentation methods; `scale`
//! and `offset` then need no `filter`, and take their operand from the request),
//! `revert Type::Method` (back to the configured instrumentation), `original
//! Type::Method` (the file's own IL), `flags Type::Method FLAGS`, `state`, `help`.
//! `ILREWRITE_DIAL_CALLERS=leave` leaves the callers that inlined a changed method
//! alone (a measurement; `recompile` by default). A directory the dial may not use is
//! an error like any other: nothing is rewritten.
//!
//! A configuration it cannot read (a file with a mistake, an unknown mode, probe kind
//! or inlining choice, a variable that is not UTF-8, both `ILREWRITE_CONFIG` and
//! `ILREWRITE_MODE`) is an error line at start-up, `ilrewrite: error: ...; nothing is
//! rewritten`, with the file, line and column for a file; then the profiler stays
//! attached in mode `off`: it asks for no event and rewrites nothing.
//!
//! At shutdown it prints to stderr one line,
//! `ilrewrite: mode M jitted N rewritten N already N refused N failed N enters N exits N`
//! (M: the mode, or the hosted names joined by `+`), which `wrap` with native probes
//! ends with ` open N lost N`: the wrapped frames still open on threads alive at
//! shutdown (each thread's depth, kept by the probes), and the exits lost, `enters -
//! exits - open` (signed; 0 when every frame that ended was counted), then one line per refusal or
//! failure reason, `ilrewrite:   COUNT REASON`; with `ILREWRITE_TIMING` set,
//! `ilrewrite: timing NS ns in N JITCompilationStarted callbacks`, `ilrewrite: timing NS
//! ns in N rewriting callbacks` (those that handed a body over) and the pipeline's
//! phases; then `ilrewrite: manager compilations N not-decoded N decoded N rolled-back N
//! module-loads N`, `ilrewrite: wrap items made N dropped N` (module data items, and
//! those dropped before shutdown: by module unloads), `ilrewrite: count methods N most
//! N` (methods counted, most compilations of one), `ilrewrite: NAME CALLBACK
//! subscribed|unsubscribed N` per callback a hosted listener subscribed to or
//! received; when hosted, `ilrewrite: helper modules N native-calls N method-defs N`
//! and `ilrewrite: facts unknown N assembly-items N assembly-dropped N domain-items N
//! domain-dropped N` with one `ilrewrite: fact ASSEMBLY framework=B ready-to-run=B
//! dynamic=B collectible=B domain=NAME` per assembly (items dropped before shutdown:
//! by unloads); with the dial, `ilrewrite: rejit requested N reverted N parameters N
//! parameters-ns N inliners N fallbacks N unanswered N compiled N errors N first-jit
//! N` (`ReJitCounts`) and `ilrewrite: targets requested-at-load N inliners-at-load N`
//! (targets requested as their precompiled module loaded, and the methods whose
//! precompiled code inlined one, requested with them).
//! `jitted` counts the compilations of methods an instrumentation method wanted (and
//! `count` counted), `rewritten` those that handed a rewritten body over (for `decode`:
//! encoded), `already` those of a method rewritten by an earlier compilation (a generic
//! instantiation, a tier-up): both compile rewritten IL.

mod calls;
mod common;
mod elt;
mod helper;
mod listener;
mod modes;
mod returns;
mod wrap;

use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;

use ilrewrite::clr::{Configuration, Inlining, InliningCallers, InstrumentationMethod, Manager};

use calls::Calls;
use elt::{Elt, EltTest, Reads};
use helper::{
    ASSEMBLY_ITEMS_DROPPED, DOMAIN_ITEMS_DROPPED, Facts, Helper, NATIVE_CALLS, NATIVE_METHOD_DEFS,
};
use ilrewrite::clr::hooks::{HookCoverage, HookPath};
use listener::Listener;
use modes::{Count, Decode, EveryMethod, Filtered, Identity, Nop};
use returns::{Arithmetic, Faulty};
use wrap::{ENTERS, EXITS, ITEMS_DROPPED, Probes, Wrap};

/// The modes `ILREWRITE_MODE` may name.
const MODES: [&str; 8] = [
    "count",
    "identity",
    "decode",
    "wrap",
    "elt",
    "elt-values",
    "elt-slow",
    "elt-empty",
];

/// What the environment asks for.
#[derive(Debug)]
struct Settings {
    /// `ILREWRITE_CONFIG`'s file, read; or `None` for a mode.
    configuration: Option<Configuration>,
    /// `ILREWRITE_MODE` (`count` when not set).
    mode: &'static str,
    /// `ILREWRITE_FILTER` (none when not set or empty).
    filter: Option<String>,
    /// `ILREWRITE_PROBES` (`managed` when not set).
    probes: Probes,
    /// `ILREWRITE_INLINING`: `keep` (the default) or `allow`.
    inlining: Inlining,
    /// `ILREWRITE_DIAL`: the live dial's socket, when set.
    dial: Option<std::path::PathBuf>,
    /// `ILREWRITE_DIAL_CALLERS`: `recompile` (the default) or `leave`.
    callers: InliningCallers,
    /// `ILREWRITE_ELT_TEST`: the hooks' test modes (feature `elt-test-modes`).
    elt_test: EltTest,
    /// `ILREWRITE_ELT_TRACE`: where `elt-values` writes every call's values.
    elt_trace: Option<std::path::PathBuf>,
    /// `ILREWRITE_ELT_CALLS`: `optimized` (the default) or `every`.
    elt_calls: HookCoverage,
}

/// Reads the [`Settings`] from the environment.
///
/// Fails closed: an unknown mode, probes or inlining choice, a variable that is not
/// UTF-8, a configuration file with a mistake, or both a file and a mode, is an error,
/// never a silent fallback (an unreadable filter read as "no filter" would rewrite
/// every method).
fn settings() -> Result<Settings, String> {
    let text = |name: &str| match std::env::var(name) {
        Ok(value) => Ok(Some(value)),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(raw)) => {
            Err(format!("{name} is not valid UTF-8 ({raw:?})"))
        }
    };
    let mode = match text("ILREWRITE_MODE")? {
        None => None,
        Some(name) => Some(MODES.into_iter().find(|m| *m == name).ok_or_else(|| {
            format!(
                "unknown ILREWRITE_MODE {name:?} (expected count, identity, decode, wrap, elt, \
                 elt-values, elt-slow or elt-empty)"
            )
        })?),
    };
    let configuration = match std::env::var_os("ILREWRITE_CONFIG") {
        None => None,
        Some(_) if mode.is_some() => {
            return Err("ILREWRITE_CONFIG and ILREWRITE_MODE are both set; set one".to_owned());
        }
        Some(path) => {
            Some(Configuration::read(std::path::Path::new(&path)).map_err(|e| e.to_string())?)
        }
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
    let dial = match std::env::var_os("ILREWRITE_DIAL") {
        None => None,
        Some(path) if path.is_empty() => return Err("ILREWRITE_DIAL is empty".to_owned()),
        Some(path) => Some(std::path::PathBuf::from(path)),
    };
    let callers = match text("ILREWRITE_DIAL_CALLERS")?.as_deref() {
        None | Some("recompile") => InliningCallers::Recompile,
        Some("leave") => InliningCallers::Leave,
        Some(other) => {
            return Err(format!(
                "unknown ILREWRITE_DIAL_CALLERS {other:?} (expected recompile or leave)"
            ));
        }
    };
    let elt_test = match text("ILREWRITE_ELT_TEST")? {
        None => EltTest::Off,
        Some(value) => EltTest::parse(&value)?,
    };
    let elt_trace = match std::env::var_os("ILREWRITE_ELT_TRACE") {
        None => None,
        Some(path) if path.is_empty() => return Err("ILREWRITE_ELT_TRACE is empty".to_owned()),
        Some(path) => Some(std::path::PathBuf::from(path)),
    };
    let elt_calls = match text("ILREWRITE_ELT_CALLS")?.as_deref() {
        None | Some("optimized") => HookCoverage::Optimized,
        Some("every") => HookCoverage::EveryCall,
        Some(other) => {
            return Err(format!(
                "unknown ILREWRITE_ELT_CALLS {other:?} (expected optimized or every)"
            ));
        }
    };
    let probes = match text("ILREWRITE_PROBES")? {
        None => Probes::Managed,
        Some(name) => Probes::parse(&name).ok_or_else(|| {
            format!(
                "unknown ILREWRITE_PROBES {name:?} (expected {})",
                Probes::EXPECTED
            )
        })?,
    };
    Ok(Settings {
        configuration,
        mode: mode.unwrap_or("count"),
        filter,
        probes,
        inlining,
        dial,
        callers,
        elt_test,
        elt_trace,
        elt_calls,
    })
}

/// The instrumentation methods this profiler offers, kept for the report.
struct Offered {
    count: Arc<Count>,
    calls: Arc<Calls>,
    decode: Arc<EveryMethod<Decode>>,
    wrap: Arc<Wrap>,
    helper: Arc<Helper>,
    facts: Arc<Facts>,
    listeners: [Arc<Listener>; 2],
    /// `elt`, `elt-values`, `elt-slow`, `elt-empty`.
    elts: [Arc<Elt>; 4],
    all: Vec<Arc<dyn InstrumentationMethod>>,
}

impl Offered {
    /// Each with `settings`' filter and probes as its defaults.
    fn new(settings: &Settings) -> Offered {
        let filter = || Filtered::new(settings.filter.clone());
        let count = Arc::new(Count {
            filter: filter(),
            ..Count::default()
        });
        let decode = Arc::new(EveryMethod {
            filter: filter(),
            edit: Decode::default(),
        });
        let wrap = Arc::new(Wrap::new(settings.filter.clone(), settings.probes));
        let helper = Arc::new(Helper::default());
        let facts = Arc::new(Facts::default());
        let calls = Arc::new(Calls::default());
        let listeners = [
            Arc::new(Listener::new("listener")),
            Arc::new(Listener::new("listener2")),
        ];
        let elts = [
            Arc::new(Elt::new(
                "elt",
                settings.filter.clone(),
                Reads::Nothing,
                settings.elt_test,
                None,
                settings.elt_calls,
            )),
            Arc::new(Elt::new(
                "elt-values",
                settings.filter.clone(),
                Reads::Values,
                settings.elt_test,
                settings.elt_trace.clone(),
                settings.elt_calls,
            )),
            Arc::new(Elt::new(
                "elt-slow",
                settings.filter.clone(),
                Reads::Nothing,
                settings.elt_test,
                None,
                settings.elt_calls,
            )),
            Arc::new(Elt::new(
                "elt-empty",
                settings.filter.clone(),
                Reads::Empty,
                settings.elt_test,
                None,
                settings.elt_calls,
            )),
        ];
        let mut all: Vec<Arc<dyn InstrumentationMethod>> = vec![
            count.clone(),
            Arc::new(EveryMethod {
                filter: filter(),
                edit: Identity,
            }),
            decode.clone(),
            wrap.clone(),
            Arc::new(Arithmetic::scale(settings.dial.is_some())),
            Arc::new(Arithmetic::offset(settings.dial.is_some())),
            Arc::new(Faulty::default()),
            listeners[0].clone(),
            listeners[1].clone(),
            helper.clone(),
            facts.clone(),
            calls.clone(),
            elts[0].clone(),
            elts[1].clone(),
            elts[2].clone(),
            elts[3].clone(),
        ];
        for name in Nop::NAMES {
            all.push(Arc::new(EveryMethod {
                filter: filter(),
                edit: Nop(name),
            }));
        }
        Offered {
            count,
            calls,
            decode,
            wrap,
            helper,
            facts,
            listeners,
            elts,
            all,
        }
    }

    /// The one named `name`.
    fn named(&self, name: &str) -> Option<Arc<dyn InstrumentationMethod>> {
        self.all.iter().find(|m| m.name() == name).cloned()
    }
}

/// The manager the environment asks for, or one that hosts nothing (mode `off`) after
/// an error line.
fn sample() -> Manager {
    let made = settings().and_then(|settings| {
        let offered = Offered::new(&settings);
        let manager = match &settings.configuration {
            Some(configuration) => {
                Manager::configured(configuration, &offered.all).map_err(|e| e.to_string())?
            }
            None => {
                let method = offered.named(settings.mode).expect("a mode is offered");
                Manager::new().with_shared(method)
            }
        };
        let mode = match (&settings.configuration, manager.names().as_slice()) {
            (None, _) => settings.mode.to_owned(),
            (Some(_), []) => "none".to_owned(),
            (Some(_), names) => names.join("+"),
        };
        let manager = match (settings.mode, settings.elt_test) {
            (_, _) if settings.configuration.is_some() => manager,
            ("elt-slow", _) => manager.with_hook_path(HookPath::RuntimeWithInfo),
            #[cfg(feature = "elt-test-modes")]
            (_, EltTest::NegativeControl) => manager.with_hook_path(HookPath::NegativeControl),
            _ => manager,
        };
        let manager = match &settings.dial {
            Some(path) => manager.with_rejit(settings.callers).with_dial(path.clone()),
            None => manager,
        };
        Ok((manager, offered, settings.inlining, mode))
    });
    let (manager, offered, inlining, mode) = match made {
        Ok(made) => made,
        Err(error) => {
            eprintln!("ilrewrite: error: {error}; nothing is rewritten");
            let settings = Settings {
                configuration: None,
                mode: "off",
                filter: None,
                probes: Probes::Managed,
                inlining: Inlining::KeepInstrumentation,
                dial: None,
                callers: InliningCallers::Recompile,
                elt_test: EltTest::Off,
                elt_trace: None,
                elt_calls: HookCoverage::Optimized,
            };
            (
                Manager::new(),
                Offered::new(&settings),
                settings.inlining,
                "off".to_owned(),
            )
        }
    };
    let manager = manager.with_inlining(inlining);
    let manager = match std::env::var_os("ILREWRITE_TIMING") {
        Some(_) => manager.with_timings(),
        None => manager,
    };
    manager.with_report(move |manager| report(manager, &offered, &mode))
}

/// The summary at shutdown (see the crate documentation above for the format).
fn report(manager: &Manager, offered: &Offered, mode: &str) {
    // Nothing ran (an instrumentation method did not start): mode `off`.
    let mode = if !manager.running().is_empty() {
        mode
    } else {
        "off"
    };
    if let Some(elt) = offered.elts.iter().find(|e| e.name() == mode) {
        elt.write_trace();
        // The hook modes: exactly one line.
        let [enters, leaves, tailcalls, unwinds] = elt.counts();
        eprintln!(
            "ilrewrite: mode {mode} enters {enters} leaves {leaves} tailcalls {tailcalls} \
             unwinds {unwinds}"
        );
        return;
    }
    let counts = manager.counts();
    let compilations = counts.compilations.load(Relaxed);
    let not_wanted = counts.not_wanted.load(Relaxed);
    let jitted = compilations - not_wanted + offered.count.counted.load(Relaxed);
    let rewritten = counts.rewritten.load(Relaxed) + offered.decode.edit.encoded.load(Relaxed);
    // With native probes, the frames still open at shutdown and the lost exits apart.
    let native_wrap =
        mode.split('+').any(|m| m == "wrap") && offered.wrap.probes() == Probes::Native;
    let open = match native_wrap {
        true => {
            let (open, lost) = wrap::open_and_lost();
            format!(" open {open} lost {lost}")
        }
        false => String::new(),
    };
    eprintln!(
        "ilrewrite: mode {mode} jitted {jitted} rewritten {rewritten} already {} refused {} \
         failed {} enters {} exits {}{open}",
        counts.already.load(Relaxed),
        counts.refused.load(Relaxed),
        counts.failed.load(Relaxed),
        ENTERS.load(Relaxed),
        EXITS.load(Relaxed),
    );
    for (reason, count) in counts.reasons() {
        eprintln!("ilrewrite:   {count} {reason}");
    }
    if let Some(phases) = manager.timings() {
        eprintln!(
            "ilrewrite: timing {} ns in {compilations} JITCompilationStarted callbacks",
            counts.callback_ns.load(Relaxed),
        );
        eprintln!(
            "ilrewrite: timing {} ns in {} rewriting callbacks",
            counts.rewritten_ns.load(Relaxed),
            counts.rewritten.load(Relaxed),
        );
        for (phase, ns) in phases {
            eprintln!("ilrewrite: timing phase {ns} ns {phase}");
        }
    }
    eprintln!(
        "ilrewrite: manager compilations {compilations} not-decoded {not_wanted} decoded {} \
         rolled-back {} module-loads {}",
        counts.decoded.load(Relaxed),
        counts.rolled_back.load(Relaxed),
        counts.module_loads.load(Relaxed),
    );
    eprintln!(
        "ilrewrite: wrap items made {} dropped {}",
        offered.wrap.items_made.load(Relaxed),
        ITEMS_DROPPED.load(Relaxed)
    );
    eprintln!(
        "ilrewrite: count methods {} most {}",
        offered.count.methods.load(Relaxed),
        offered.count.most.load(Relaxed)
    );
    if let Some(rejit) = manager.rejit() {
        let c = rejit.counts();
        eprintln!(
            "ilrewrite: rejit requested {} reverted {} parameters {} parameters-ns {} inliners {} \
             fallbacks {} unanswered {} compiled {} errors {} first-jit {}",
            c.requested.load(Relaxed),
            c.reverted.load(Relaxed),
            c.parameters.load(Relaxed),
            c.parameters_ns.load(Relaxed),
            c.inliners.load(Relaxed),
            c.fallbacks.load(Relaxed),
            c.unanswered.load(Relaxed),
            c.compiled.load(Relaxed),
            c.errors.load(Relaxed),
            c.first_jit_wishes.load(Relaxed),
        );
        eprintln!(
            "ilrewrite: targets requested-at-load {} inliners-at-load {}",
            c.at_load.load(Relaxed),
            c.inliners_at_load.load(Relaxed)
        );
    }
    let hosted = manager.names();
    if hosted.contains(&"helper") {
        eprintln!(
            "ilrewrite: helper modules {} native-calls {} method-defs {}",
            offered.helper.modules.load(Relaxed),
            NATIVE_CALLS.load(Relaxed),
            NATIVE_METHOD_DEFS.load(Relaxed)
        );
    }
    if hosted.contains(&"calls") {
        for line in offered.calls.lines() {
            eprintln!("ilrewrite: calls {line}");
        }
        eprintln!(
            "ilrewrite: calls overflow {}",
            calls::OVERFLOW.load(Relaxed)
        );
    }
    if hosted.contains(&"facts") {
        eprintln!(
            "ilrewrite: facts unknown {} assembly-items {} assembly-dropped {} domain-items {} domain-dropped {}",
            offered.facts.unknown.load(Relaxed),
            offered.facts.assembly_items.load(Relaxed),
            ASSEMBLY_ITEMS_DROPPED.load(Relaxed),
            offered.facts.domain_items.load(Relaxed),
            DOMAIN_ITEMS_DROPPED.load(Relaxed)
        );
        for line in offered.facts.lines() {
            eprintln!("ilrewrite: fact {line}");
        }
    }
    for listener in &offered.listeners {
        if !hosted.contains(&listener.name()) {
            continue;
        }
        for (callback, subscribed, count) in listener.report() {
            let subscribed = if subscribed {
                "subscribed"
            } else {
                "unsubscribed"
            };
            eprintln!(
                "ilrewrite: {} {} {subscribed} {count}",
                listener.name(),
                callback.name()
            );
        }
    }
}

ilrewrite::export_profiler!(
    clsid = "{8C1E2D4F-3B6A-4E59-A7C2-1F0D9B3E6A51}",
    profiler = sample
);

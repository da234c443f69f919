//! Two tools in one profiler, hosted by the `Manager` and configured from a TOML file:
//! a **timer** whose injected IL calls two native probes (`t = begin()` at entry, kept
//! in the state local; `end(module, method, t)` in the `finally`), counting calls and
//! time per method, and an **exception counter** that only subscribes to
//! `ExceptionThrown`. No `unsafe`.
//!
//! ```text
//! cargo build --release --features clr --example two_tools
//! cat > two_tools.toml <<'EOF'
//! [[method]]
//! name = "timer"
//! options = { filter = "TwoTools.Timed" }   # a part of Namespace.Type::Method
//!
//! [[method]]
//! name = "exceptions"
//! EOF
//! TWO_TOOLS_CONFIG=two_tools.toml CORECLR_ENABLE_PROFILING=1 \
//! CORECLR_PROFILER={6F1D2C3B-4A5E-4B7C-9D8E-0F1A2B3C4D5E} \
//! CORECLR_PROFILER_PATH=$PWD/target/release/examples/libtwo_tools.so dotnet app.dll
//! ```
//!
//! At shutdown it prints, on stderr, one line per timed method
//! (`two_tools: timer NAME calls N ns T`) and per exception type
//! (`two_tools: exceptions TYPE N`).
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use ilrewrite::OpCode;
use ilrewrite::body::MethodBody;
use ilrewrite::clr::sys::{HResult, ObjectID, mdSignature};
use ilrewrite::clr::{
    Callback, Callbacks, Candidate, Configuration, Instrumentation, InstrumentationMethod,
    Interest, Manager, MethodEdit, MethodError, ModuleLoad, NativeCall, OptionKind, OptionSpec,
    Profiler, ProfilerInfo, Start,
};
use ilrewrite::sig::TypeSig;
use ilrewrite::transform::{InstrumentationCode, Snippet};

// ---- The timer's native probes --------------------------------------------------------

/// When the first probe ran: `begin` counts from it.
static EPOCH: OnceLock<Instant> = OnceLock::new();

/// Calls and nanoseconds per method, keyed by (module id, MethodDef token).
static TIMES: Mutex<BTreeMap<(u64, i32), (u64, u64)>> = Mutex::new(BTreeMap::new());

/// Entry probe: a timestamp in nanoseconds, which the injected IL keeps in the state
/// local.
extern "C" fn begin() -> i64 {
    let nanos = EPOCH.get_or_init(Instant::now).elapsed().as_nanos();
    i64::try_from(nanos).unwrap_or(i64::MAX)
}

/// Exit probe, in the `finally`: one call of `(module, method)` that began at `started`.
/// Never panics (a panic cannot cross into the runtime).
extern "C" fn end(module: u64, method: i32, started: i64) {
    let elapsed = u64::try_from(begin().saturating_sub(started)).unwrap_or(0);
    let mut times = TIMES.lock().unwrap_or_else(|e| e.into_inner());
    let (calls, nanos) = times.entry((module, method)).or_default();
    *calls += 1;
    *nanos += elapsed;
}

fn begin_call() -> NativeCall {
    NativeCall::new(begin as extern "C" fn() -> i64)
}

fn end_call() -> NativeCall {
    NativeCall::new(end as extern "C" fn(u64, i32, i64))
}

/// `t = begin(); try { body } finally { end(module, method, t) }`: the method's tokens
/// 0 and 1 are the module's signature tokens of `begin` and `end`.
fn timer_code() -> ilrewrite::Result<Instrumentation> {
    let mut entry = Snippet::builder();
    begin_call().push_keep(&mut entry, 0); // the i64 stays on the stack...
    entry.state_local(OpCode::Stloc); // ...and goes into the state local
    let mut exit = Snippet::builder();
    exit.module_id().method_id().state_local(OpCode::Ldloc);
    end_call().push(&mut exit, 1);
    Instrumentation::new(InstrumentationCode {
        entry: entry.finish()?,
        exit: exit.finish()?,
        state_local: Some(TypeSig::I8),
        ..Default::default()
    })
}

/// The module's tokens of the probes' signatures, defined when it loads.
struct ProbeTokens([mdSignature; 2]);

/// The timer: the methods whose name contains its option `filter`.
#[derive(Default)]
struct Timer {
    filter: OnceLock<String>,
    info: OnceLock<ProfilerInfo>,
    code: OnceLock<Instrumentation>,
    /// The names of the methods it instrumented, by (module id, token).
    names: Mutex<HashMap<(u64, i32), String>>,
}

impl Profiler for Timer {}

impl InstrumentationMethod for Timer {
    fn name(&self) -> &str {
        "timer"
    }
    fn options(&self) -> &[OptionSpec] {
        const OPTIONS: [OptionSpec; 1] = [OptionSpec::new("filter", OptionKind::String)];
        &OPTIONS
    }
    fn start(&self, start: &Start<'_>) -> Result<(), MethodError> {
        let filter = start.options().string("filter").unwrap_or_default();
        let _ = self.filter.set(filter.to_owned());
        let _ = self.info.set(start.info().clone());
        let _ = self.code.set(timer_code()?);
        eprintln!("two_tools: timer started, filter {filter:?}");
        Ok(())
    }
    fn module_loaded(&self, module: &ModuleLoad<'_>) -> Result<(), MethodError> {
        let metadata = module.module().metadata();
        let tokens = [
            begin_call().signature_token(metadata)?,
            end_call().signature_token(metadata)?,
        ];
        module.set_item(ProbeTokens(tokens));
        Ok(())
    }
    fn wants(&self, method: &Candidate<'_>) -> Interest {
        let filter = self.filter.get().map_or("", String::as_str);
        match method.name().contains(filter) {
            true => Interest::Edit,
            false => Interest::No,
        }
    }
    fn edit(
        &self,
        body: &mut MethodBody,
        method: &mut MethodEdit<'_, '_>,
    ) -> ilrewrite::Result<bool> {
        let missing = |what| ilrewrite::Error::Unencodable { what };
        let tokens = method.module_item::<ProbeTokens>().ok_or(missing(
            "the probes' signatures are not defined in this module",
        ))?;
        let code = self.code.get().ok_or(missing("the timer did not start"))?;
        let rewrite = method.method();
        let key = (rewrite.module.id() as u64, rewrite.method_id());
        // The name as the runtime's function id gives it (`ProfilerInfo::method_name`).
        let name = match self.info.get() {
            Some(info) => info
                .method_name(rewrite.function)
                .unwrap_or_else(|e| format!("?{e}")),
            None => "?".to_owned(),
        };
        self.names
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, name);
        code.edit(body, method.rewrite(), &tokens.0)
    }
}

impl Timer {
    fn report(&self) {
        let names = self.names.lock().unwrap_or_else(|e| e.into_inner());
        let times = TIMES.lock().unwrap_or_else(|e| e.into_inner());
        let mut lines: Vec<String> = times
            .iter()
            .map(|(key, (calls, nanos))| {
                let name = names.get(key).map_or("?", String::as_str);
                format!("two_tools: timer {name} calls {calls} ns {nanos}")
            })
            .collect();
        lines.sort();
        for line in lines {
            eprintln!("{line}");
        }
    }
}

// ---- The exception counter ------------------------------------------------------------

/// Counts the exceptions thrown, by type: a callback, no edit (the defaults of `wants`
/// and `edit`).
#[derive(Default)]
struct Exceptions {
    info: OnceLock<ProfilerInfo>,
    counts: Mutex<BTreeMap<String, u64>>,
}

impl Profiler for Exceptions {
    fn exception_thrown(&self, thrown: ObjectID) -> Result<(), HResult> {
        let info = self.info.get().ok_or(HResult::E_FAIL)?;
        let name = info
            .class_from_object(thrown)
            .and_then(|class| info.class_name(class))
            .unwrap_or_else(|e| format!("?{e}"));
        *self
            .counts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(name)
            .or_default() += 1;
        Ok(())
    }
}

impl InstrumentationMethod for Exceptions {
    fn name(&self) -> &str {
        "exceptions"
    }
    fn callbacks(&self) -> Callbacks {
        Callbacks::empty().with(Callback::ExceptionThrown)
    }
    fn start(&self, start: &Start<'_>) -> Result<(), MethodError> {
        let _ = self.info.set(start.info().clone());
        eprintln!("two_tools: exceptions started");
        Ok(())
    }
}

impl Exceptions {
    fn report(&self) {
        for (name, count) in self.counts.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            eprintln!("two_tools: exceptions {name} {count}");
        }
    }
}

// ---- The profiler ---------------------------------------------------------------------

/// The manager, with what `TWO_TOOLS_CONFIG` names; a configuration error is one line,
/// and then nothing runs.
fn profiler() -> Manager {
    let timer = Arc::new(Timer::default());
    let exceptions = Arc::new(Exceptions::default());
    let offered: Vec<Arc<dyn InstrumentationMethod>> = vec![timer.clone(), exceptions.clone()];
    let Some(path) = std::env::var_os("TWO_TOOLS_CONFIG") else {
        eprintln!("two_tools: TWO_TOOLS_CONFIG is not set; nothing runs");
        return Manager::new();
    };
    Configuration::read(path.as_ref())
        .and_then(|configuration| Manager::configured(&configuration, &offered))
        .map(|manager| {
            manager.with_report(move |_| {
                timer.report();
                exceptions.report();
            })
        })
        .unwrap_or_else(|error| {
            eprintln!("two_tools: {error}; nothing runs");
            Manager::new()
        })
}

ilrewrite::export_profiler!(
    clsid = "{6F1D2C3B-4A5E-4B7C-9D8E-0F1A2B3C4D5E}",
    profiler = profiler
);

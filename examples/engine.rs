//! A ready-made profiler: the manager, configured by the TOML file `ENGINE_CONFIG`
//! names, hosting the instrumentation methods it lists: the built-in ones (`calltarget`,
//! and `scale`, below) and those in libraries of their own (`library = "path"`,
//! relative to the file; the C ABI of `include/ilrewrite_method.h`), in one priority
//! order.
//!
//! ```text
//! cargo build --release --features clr,pe --example engine
//! cat > engine.toml <<'EOF2'
//! [[method]]
//! name = "offset_c"
//! library = "liboffset_c.so"
//! options = { filter = "Answer::Get", addend = 1 }
//! EOF2
//! ENGINE_CONFIG=engine.toml CORECLR_ENABLE_PROFILING=1 \
//! CORECLR_PROFILER={5B0E6A3C-8D21-4F7A-B6C9-2E1D4A7F3C85} \
//! CORECLR_PROFILER_PATH=$PWD/target/release/examples/libengine.so dotnet app.dll
//! ```
//!
//! A configuration error (a library that cannot be loaded, another ABI version, an
//! option it does not declare, a `start` that fails) is one line on stderr, and then
//! nothing runs. With `ENGINE_TIMING` set, it times the rewrites and prints at
//! shutdown `engine: compilations N rewritten N callback-ns N edit-ns N` (the time in
//! `JITCompilationStarted`, and in the instrumentation methods' edits). With
//! `ENGINE_DIAL` naming a Unix socket, it listens there for the live dial (ReJIT on),
//! whose `add SELECTOR LIBRARY PRIORITY [KEY=VALUE ...]` loads and adds a library's
//! instrumentation method while the program runs and `remove METHOD` takes it out.
//!
//! Attached to a running process (`ilrewrite attach PID --profiler libengine.so
//! --clsid {5B0E6A3C-...} --config FILE [--dial SOCKET]`), it reads the configuration
//! and dial socket from the attach's client data (`ClientData`) instead of the
//! environment: methods already compiled that it wants are re-JIT-compiled at their
//! next call. No `unsafe`.
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, OnceLock};

use ilrewrite::body::MethodBody;
use ilrewrite::clr::{
    Arrival, Attachable, CallTargetMethod, Candidate, ClientData, Configuration,
    InstrumentationMethod, Interest, LibraryMethod, Manager, MethodEdit, MethodError, OptionKind,
    OptionSpec, Phase, Profiler, Start,
};
use ilrewrite::graph::Incoming;
use ilrewrite::sig::{MethodSig, TypeSig};
use ilrewrite::{Instruction, OpCode};

/// `scale`: multiplies the `int32` result of the methods whose name contains `filter`
/// by `factor` (2 by default), before each `ret`. The same work as the C example
/// `tests/components/offset.c` (which adds): the benchmark of the ABI compares them.
#[derive(Debug)]
struct Scale {
    options: [OptionSpec; 2],
    /// The configured filter, read at start.
    filter: OnceLock<String>,
}

impl Scale {
    fn new() -> Scale {
        Scale {
            options: [
                OptionSpec::new("filter", OptionKind::String),
                OptionSpec::new("factor", OptionKind::Integer),
            ],
            filter: OnceLock::new(),
        }
    }

    fn factor(options: &ilrewrite::clr::Options) -> Result<i32, MethodError> {
        let factor = options.integer("factor").unwrap_or(2);
        i32::try_from(factor).map_err(|_| options.invalid("factor", "not a 32-bit integer").into())
    }
}

impl Profiler for Scale {}

impl InstrumentationMethod for Scale {
    fn name(&self) -> &str {
        "scale"
    }

    fn options(&self) -> &[OptionSpec] {
        &self.options
    }

    fn start(&self, start: &Start<'_>) -> Result<(), MethodError> {
        Scale::factor(start.options())?;
        let filter = start.options().string("filter").unwrap_or_default();
        let _ = self.filter.set(filter.to_owned());
        Ok(())
    }

    fn wants(&self, method: &Candidate<'_>) -> Interest {
        match self.filter.get() {
            Some(filter) if !filter.is_empty() && method.name().contains(filter.as_str()) => {
                Interest::Edit
            }
            _ => Interest::No,
        }
    }

    fn edit(
        &self,
        body: &mut MethodBody,
        method: &mut MethodEdit<'_, '_>,
    ) -> ilrewrite::Result<bool> {
        let options = method.options();
        let returns_int32 = method
            .method()
            .signature()
            .ok()
            .and_then(|blob| MethodSig::parse(blob).ok())
            .is_some_and(|sig| sig.return_type == TypeSig::I4);
        let Ok(factor) = Scale::factor(options) else {
            return Ok(false);
        };
        if !returns_int32 {
            return Ok(false);
        }
        let rets: Vec<_> = body
            .instrs
            .opcodes()
            .filter(|(_, op)| *op == OpCode::Ret)
            .map(|(id, _)| id)
            .collect();
        let code = [
            Instruction::ldc_i4(factor),
            Instruction::simple(OpCode::Mul),
        ];
        for &ret in &rets {
            body.insert_all_before(ret, &code, Incoming::Redirect)?;
        }
        Ok(!rets.is_empty())
    }
}

/// The manager, with what `ENGINE_CONFIG` names; a configuration error is one line,
/// and then nothing runs.
/// The manager for `arrival`: configured from the environment at start-up, from the
/// client data at attach.
fn manager(arrival: Arrival, client_data: &[u8]) -> Manager {
    let (config, dial) = match arrival {
        Arrival::Startup => (
            std::env::var_os("ENGINE_CONFIG"),
            std::env::var_os("ENGINE_DIAL"),
        ),
        Arrival::Attach => match ClientData::parse(client_data) {
            Ok(data) => (data.config.map(Into::into), data.dial.map(Into::into)),
            Err(why) => {
                eprintln!("engine: {why}; nothing runs");
                return Manager::new();
            }
        },
    };
    let offered: Vec<Arc<dyn InstrumentationMethod>> =
        vec![Arc::new(CallTargetMethod::new()), Arc::new(Scale::new())];
    let Some(path) = config else {
        eprintln!("engine: no configuration (ENGINE_CONFIG, or config= at attach); nothing runs");
        return Manager::new();
    };
    let manager = Configuration::read(path.as_ref())
        .and_then(|configuration| {
            Manager::configured_with_loader(&configuration, &offered, &LibraryMethod::loader)
        })
        .unwrap_or_else(|error| {
            eprintln!("engine: {error}; nothing runs");
            Manager::new()
        });
    let manager = manager.with_library_loader(Arc::new(LibraryMethod::loader));
    let manager = match dial {
        Some(socket) if !socket.is_empty() => manager.with_dial(socket),
        _ => manager,
    };
    match std::env::var_os("ENGINE_TIMING") {
        Some(_) => manager.with_timings().with_report(report_timing),
        None => manager,
    }
}

fn profiler() -> Attachable {
    Attachable::new(manager)
}

fn report_timing(manager: &Manager) {
    let counts = manager.counts();
    let edit_ns = manager
        .timings()
        .and_then(|phases| {
            phases
                .iter()
                .find(|(phase, _)| *phase == Phase::Edit)
                .map(|(_, ns)| *ns)
        })
        .unwrap_or(0);
    eprintln!(
        "engine: compilations {} rewritten {} callback-ns {} edit-ns {edit_ns}",
        counts.compilations.load(Relaxed),
        counts.rewritten.load(Relaxed),
        counts.callback_ns.load(Relaxed),
    );
}

ilrewrite::export_profiler!(
    clsid = "{5B0E6A3C-8D21-4F7A-B6C9-2E1D4A7F3C85}",
    profiler = profiler
);

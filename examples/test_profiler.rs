//! A profiler for the crate's end-to-end tests: what the sample profiler does not show.
//! `ILREWRITE_TEST` picks the case; every case acts on `Answer::Get` of the `Answer.exe`
//! test program (`static int32 Get()` returning 41) and leaves every other method alone.
//!
//! * `exact`: `Get` becomes `ldc.i4 20; ldc.i4 22; add; ret` with the exact max stack
//!   (2), handed over with `ProfilerInfo::set_il_function_body` directly: the program
//!   prints `answer 42`.
//! * `understate`: the same body with a max stack of 1: the runtime must reject it with
//!   `InvalidProgramException` (the control that the runtime runs what it is handed).
//! * `panic`: the edit of `Get` panics inside `JitRewriter::rewrite`: the process goes
//!   on, `Get` keeps its IL (`answer 41`), and the failure is reported.
//! * `guard`: `Get` calls into this library (through `calli` of a native function) at
//!   entry; from there, on a managed thread outside any callback, it asks the runtime
//!   for a method body, which the call-sequence guard must refuse; a thread the
//!   profiler created asks the same and must be served.
//! * `module`: when `Get` is compiled, reports the path of its module as
//!   `ProfilerInfo::module_info` gives it (`module: <path>`, or `module: failed ...`),
//!   and changes nothing: the program may be run from a directory whose path does not
//!   fit the 260 units first asked for.
//! * `rejit`: when `Main` is compiled, a thread the profiler created requests a ReJIT
//!   of `Get` (never called yet: a pre-ReJIT) while `Main` waits; in
//!   `GetReJITParameters` the pipeline builds `Get`'s new version from its IL (`+ 2`
//!   before the `ret`) with `JitRewriter::rejit` and hands it to the
//!   `FunctionControl`: the program prints `answer 43`, and the ReJIT compilation is
//!   reported with its ReJITID.
//!
//! Each case prints `ilrewrite-test: ...` lines to stderr as it observes things; at
//! shutdown the profiler waits (briefly) for its own thread's answer in the `guard` case.

use ilrewrite::clr::guard::spawn_profiler_thread;
use ilrewrite::clr::sys::{CorPrfHighMonitor, CorPrfMonitor, FunctionID, ModuleID, mdMethodDef};
use ilrewrite::clr::sys::{HResult, ReJITID};
use ilrewrite::clr::{
    ClrError, CodegenFlags, FunctionControl, JitRewriter, Profiler, ProfilerInfo,
};
use ilrewrite::disasm::method_name;
use ilrewrite::graph::Incoming;
use ilrewrite::transform::{InstrumentationCode, Instrumenter, Snippet};
use ilrewrite::{Instruction, OpCode};
use std::sync::mpsc::{Sender, channel};
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::Duration;

static REWRITER: OnceLock<JitRewriter> = OnceLock::new();
/// Where `Get` is, once it has been compiled.
static GET: OnceLock<(ModuleID, u32)> = OnceLock::new();
/// What the cases observed.
static REPORT: Mutex<Vec<String>> = Mutex::new(Vec::new());
/// Asks the profiler's own thread to read `Get`'s body.
static ASK: Mutex<Option<Sender<(ModuleID, u32)>>> = Mutex::new(None);
/// Set once the profiler's thread has reported its read: the instrumented code waits
/// for it, so that the program cannot end (and the runtime refuse every call after its
/// `Shutdown`) before the thread was served, however late it is scheduled.
static SERVED: (Mutex<bool>, Condvar) = (Mutex::new(false), Condvar::new());

/// Marks the profiler thread's read as reported.
fn served() {
    let (done, ready) = &SERVED;
    if let Ok(mut done) = done.lock() {
        *done = true;
        ready.notify_all();
    }
}

/// Waits (at most a minute) until the profiler thread's read was reported.
fn wait_until_served() {
    let (done, ready) = &SERVED;
    if let Ok(done) = done.lock() {
        let _ = ready.wait_timeout_while(done, Duration::from_secs(60), |done| !*done);
    }
}

/// Prints a line at once (a case may end the process before shutdown) and keeps it.
fn report(line: String) {
    eprintln!("ilrewrite-test: {line}");
    if let Ok(mut r) = REPORT.lock() {
        r.push(line);
    }
}

/// Called from `Get`'s injected entry code: a managed thread, outside any callback.
extern "C" fn from_managed_code() {
    let (Some(rewriter), Some(&(module, token))) = (REWRITER.get(), GET.get()) else {
        return;
    };
    let mut body = Vec::new();
    match rewriter.info().il_function_body(module, token, &mut body) {
        Err(ClrError::UnsupportedCallSequence { method }) => {
            report(format!("from instrumented code: refused {method}"))
        }
        other => report(format!("from instrumented code: not refused: {other:?}")),
    }
    wait_until_served();
}

/// A fat method body: header (max stack as given, no locals) and `code`.
fn fat_body(max_stack: u16, code: &[u8]) -> Vec<u8> {
    let mut b = vec![0x03, 0x30];
    b.extend_from_slice(&max_stack.to_le_bytes());
    b.extend_from_slice(&(code.len() as u32).to_le_bytes());
    b.extend_from_slice(&0u32.to_le_bytes());
    b.extend_from_slice(code);
    b
}

struct Test {
    case: String,
}

impl Profiler for Test {
    fn initialize(&self, info: ProfilerInfo) -> Result<(), HResult> {
        let mut events = CorPrfMonitor::MONITOR_JIT_COMPILATION | CorPrfMonitor::DISABLE_INLINING;
        if self.case == "rejit" {
            events |= CorPrfMonitor::ENABLE_REJIT;
        }
        info.set_event_mask(events, CorPrfHighMonitor::empty())
            .map_err(|_| HResult::E_FAIL)?;
        let _ = REWRITER.set(JitRewriter::new(info));
        if self.case == "guard" {
            let (send, receive) = channel::<(ModuleID, u32)>();
            if let Ok(mut ask) = ASK.lock() {
                *ask = Some(send);
            }
            let _ = spawn_profiler_thread("ilrewrite-test", move || {
                if let (Ok((module, token)), Some(rewriter)) = (receive.recv(), REWRITER.get()) {
                    let mut body = Vec::new();
                    match rewriter.info().il_function_body(module, token, &mut body) {
                        Ok(()) => report(format!(
                            "from a profiler thread: served {} bytes",
                            body.len()
                        )),
                        Err(e) => report(format!("from a profiler thread: {e}")),
                    }
                }
                served();
            });
        }
        Ok(())
    }

    fn jit_compilation_started(&self, function: FunctionID, _: bool) -> Result<(), HResult> {
        let Some(rewriter) = REWRITER.get() else {
            return Ok(());
        };
        let Ok((module, token)) = rewriter.locate(function) else {
            return Ok(());
        };
        let name = method_name(module.metadata(), token);
        if self.case == "rejit" && (name.owner.as_str(), name.name.as_str()) == ("Program", "Main")
        {
            request_rejit_of_get(rewriter, module.id());
            return Ok(());
        }
        if (name.owner.as_str(), name.name.as_str()) != ("Answer", "Get") {
            return Ok(());
        }
        if self.case == "rejit" {
            report("rejit: Get compiled at its first JIT".to_string());
            return Ok(());
        }
        let _ = GET.set((module.id(), token));
        // ldc.i4.s 20; ldc.i4.s 22; add; ret
        let code = [0x1F, 20, 0x1F, 22, 0x58, 0x2A];
        match self.case.as_str() {
            "exact" | "understate" => {
                let max_stack = if self.case == "exact" { 2 } else { 1 };
                let result = rewriter.info().set_il_function_body(
                    module.id(),
                    token,
                    &fat_body(max_stack, &code),
                );
                report(format!(
                    "{}: set a body with max stack {max_stack}: {result:?}",
                    self.case
                ));
            }
            "panic" => {
                let outcome = rewriter.rewrite(function, |_, _| panic!("an edit that panics"));
                report(format!("panic: {outcome}"));
            }
            "guard" => {
                let outcome = rewriter.rewrite(function, |body, method| {
                    let sig = method
                        .module
                        .metadata()
                        .token_from_sig(&[0x01, 0x00, 0x01])
                        .map_err(|_| ilrewrite::Error::Unencodable {
                            what: "calli signature",
                        })?;
                    let mut entry = Snippet::builder();
                    entry.push(Instruction::ldc_i8(
                        from_managed_code as *const () as usize as i64,
                    ));
                    entry.push(Instruction::simple(OpCode::ConvI));
                    entry.token(OpCode::Calli, 0);
                    let mut instrumenter = Instrumenter::new(InstrumentationCode {
                        entry: entry.finish()?,
                        ..Default::default()
                    })?;
                    let tokens = [sig];
                    let mut context = method.context(body)?;
                    context.tokens = &tokens;
                    let done = instrumenter.instrument(body, &context, method.module.resolver())?;
                    if let Some(locals) = done.new_locals_signature {
                        let locals = locals.to_vec();
                        method.set_locals_signature(&locals);
                    }
                    Ok(true)
                });
                report(format!("guard: {outcome}"));
                if let Ok(ask) = ASK.lock()
                    && let Some(ask) = ask.as_ref()
                {
                    let _ = ask.send((module.id(), token));
                }
            }
            "module" => match rewriter.info().module_info(module.id()) {
                Ok(info) => report(format!("module: {}", info.name)),
                Err(e) => report(format!("module: failed {e}")),
            },
            other => report(format!("unknown case {other:?}")),
        }
        Ok(())
    }

    fn get_rejit_parameters(
        &self,
        module: ModuleID,
        method: mdMethodDef,
        control: &FunctionControl,
    ) -> Result<(), HResult> {
        let Some(rewriter) = REWRITER.get() else {
            return Ok(());
        };
        let outcome = rewriter.rejit(module, method, control, CodegenFlags::NONE, |body, _| {
            let rets: Vec<_> = body
                .instrs
                .opcodes()
                .filter(|(_, op)| *op == OpCode::Ret)
                .map(|(id, _)| id)
                .collect();
            for ret in rets {
                body.insert_before(ret, Instruction::ldc_i4(2), Incoming::Keep)?;
                body.insert_before(ret, Instruction::simple(OpCode::Add), Incoming::Keep)?;
            }
            Ok(true)
        });
        report(format!("rejit: parameters of 0x{method:08x}: {outcome}"));
        Ok(())
    }

    fn rejit_compilation_finished(
        &self,
        _: FunctionID,
        rejit: ReJITID,
        status: HResult,
        _: bool,
    ) -> Result<(), HResult> {
        report(format!("rejit: compiled as ReJITID {rejit}: {status:?}"));
        Ok(())
    }

    fn rejit_error(
        &self,
        _: ModuleID,
        method: mdMethodDef,
        _: FunctionID,
        status: HResult,
    ) -> Result<(), HResult> {
        report(format!("rejit: error for 0x{method:08x}: {status:?}"));
        Ok(())
    }

    fn shutdown(&self) {
        // The profiler's thread answers soon after `Get` is compiled; give it a moment.
        for _ in 0..200 {
            let done = REPORT
                .lock()
                .map(|r| self.case != "guard" || r.iter().any(|l| l.contains("profiler thread")))
                .unwrap_or(true);
            if done {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
}

/// Finds `Answer::Get` in `module` and has a thread of the profiler request its ReJIT,
/// waiting until the request returned.
fn request_rejit_of_get(rewriter: &'static JitRewriter, module: ModuleID) {
    let Ok(state) = rewriter.module(module) else {
        return;
    };
    let metadata = state.metadata();
    let get = metadata
        .find_type_def("Answer")
        .ok()
        .flatten()
        .and_then(|answer| {
            metadata
                .find_method_def(answer, "Get", &[0x00, 0x00, 0x08])
                .ok()
        })
        .flatten();
    let Some(get) = get else {
        report("rejit: Answer::Get not found".to_string());
        return;
    };
    let requested = spawn_profiler_thread("ilrewrite-rejit", move || {
        rewriter.info().request_rejit(&[(module, get)])
    })
    .map(|thread| thread.join());
    report(format!("rejit: requested 0x{get:08x}: {requested:?}"));
}

impl Test {
    fn new() -> Test {
        Test {
            case: std::env::var("ILREWRITE_TEST").unwrap_or_default(),
        }
    }
}

ilrewrite::export_profiler!(
    clsid = "{4A7E2C19-5B3D-4F60-8E21-9C6D0B1A3F57}",
    profiler = Test::new
);

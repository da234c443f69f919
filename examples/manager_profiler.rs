//! Several instrumentation methods in one profiler, through `ilrewrite::clr::Manager`:
//! the end-to-end tests' host. Each instrumentation method edits `Answer::Get` of the
//! `Answer.exe` test program (`static int32 Get()` returning 41), which the program
//! prints and exits with:
//!
//! * `scale`: multiplies the returned value by 2 (`ldc.i4.2; mul` before the `ret`);
//! * `offset`: adds 1 (`ldc.i4.1; add`);
//! * `faulty`: adds a `nop` at entry, then panics (its edit is rolled back);
//! * `listener`: edits nothing, and subscribes to module loads only; it reports each
//!   callback it receives (`ilrewrite-manager: listener got NAME`).
//!
//! `ILREWRITE_METHODS` lists the ones to host, highest priority first (each gets
//! priority 100 minus its position), e.g. `scale,offset` (`answer 83`) or
//! `offset,scale` (`answer 84`). An unknown name is an error line at start-up and no
//! instrumentation method is hosted.

use ilrewrite::body::MethodBody;
use ilrewrite::clr::{
    Callback, Callbacks, FunctionID, HResult, InstrumentationMethod, Interest, Manager, MethodEdit,
    ModuleID, ModuleState, Profiler, mdToken,
};
use ilrewrite::disasm::method_name;
use ilrewrite::graph::Incoming;
use ilrewrite::{Instruction, OpCode};

/// Whether MethodDef `token` is `Answer::Get`.
fn is_get(module: &ModuleState, token: mdToken) -> bool {
    let name = method_name(module.metadata(), token);
    name.owner == "Answer" && name.name == "Get"
}

/// `Answer::Get` interests the instrumentation methods that edit; nothing else does.
fn get_only(module: &ModuleState, token: mdToken) -> Interest {
    match is_get(module, token) {
        true => Interest::Edit,
        false => Interest::No,
    }
}

/// Inserts `code` before every `ret` of `body`.
fn before_rets(body: &mut MethodBody, code: [Instruction; 2]) -> ilrewrite::Result<bool> {
    let rets: Vec<_> = body
        .instrs
        .opcodes()
        .filter(|(_, op)| *op == OpCode::Ret)
        .map(|(id, _)| id)
        .collect();
    for &ret in &rets {
        for instr in code {
            body.insert_before(ret, instr, Incoming::Keep)?;
        }
    }
    Ok(!rets.is_empty())
}

/// `Get` returns `value OP operand` (`scale`: `* 2`, `offset`: `+ 1`).
struct Arithmetic {
    name: &'static str,
    op: OpCode,
    operand: i32,
}
impl Profiler for Arithmetic {}
impl InstrumentationMethod for Arithmetic {
    fn name(&self) -> &str {
        self.name
    }
    fn wants(&self, module: &ModuleState, token: mdToken) -> Interest {
        get_only(module, token)
    }
    fn edit(&self, body: &mut MethodBody, _: &mut MethodEdit<'_, '_>) -> ilrewrite::Result<bool> {
        let code = [
            Instruction::ldc_i4(self.operand),
            Instruction::simple(self.op),
        ];
        before_rets(body, code)
    }
}

/// Edits `Get` and panics.
struct Faulty;
impl Profiler for Faulty {}
impl InstrumentationMethod for Faulty {
    fn name(&self) -> &str {
        "faulty"
    }
    fn wants(&self, module: &ModuleState, token: mdToken) -> Interest {
        get_only(module, token)
    }
    fn edit(&self, body: &mut MethodBody, _: &mut MethodEdit<'_, '_>) -> ilrewrite::Result<bool> {
        let first = body.instrs.first().expect("an instruction");
        body.insert_before(first, Instruction::simple(OpCode::Nop), Incoming::Keep)?;
        panic!("faulty edits Get and fails");
    }
}

/// Edits nothing; subscribed to module loads only, it reports every callback it gets.
struct Listener;
impl Listener {
    fn got(&self, callback: Callback) {
        eprintln!("ilrewrite-manager: listener got {}", callback.name());
    }
}
impl Profiler for Listener {
    fn module_load_finished(&self, _: ModuleID, _: HResult) -> Result<(), HResult> {
        self.got(Callback::ModuleLoadFinished);
        Ok(())
    }
    fn module_load_started(&self, _: ModuleID) -> Result<(), HResult> {
        self.got(Callback::ModuleLoadStarted);
        Ok(())
    }
    fn module_unload_started(&self, _: ModuleID) -> Result<(), HResult> {
        self.got(Callback::ModuleUnloadStarted);
        Ok(())
    }
    fn jit_compilation_started(&self, _: FunctionID, _: bool) -> Result<(), HResult> {
        self.got(Callback::JITCompilationStarted);
        Ok(())
    }
    fn jit_inlining(&self, _: FunctionID, _: FunctionID) -> bool {
        self.got(Callback::JITInlining);
        true
    }
    fn shutdown(&self) {
        self.got(Callback::Shutdown);
    }
}
impl InstrumentationMethod for Listener {
    fn name(&self) -> &str {
        "listener"
    }
    fn callbacks(&self) -> Callbacks {
        Callbacks::empty().with(Callback::ModuleLoadFinished)
    }
    fn wants(&self, _: &ModuleState, _: mdToken) -> Interest {
        Interest::No
    }
    fn edit(&self, _: &mut MethodBody, _: &mut MethodEdit<'_, '_>) -> ilrewrite::Result<bool> {
        Ok(false)
    }
}

fn manager() -> Manager {
    let list = std::env::var("ILREWRITE_METHODS").unwrap_or_default();
    let mut manager = Manager::new();
    for (position, name) in list.split(',').filter(|n| !n.is_empty()).enumerate() {
        let priority = 100 - position as i32;
        manager = match name {
            "scale" => {
                let scale = Arithmetic {
                    name: "scale",
                    op: OpCode::Mul,
                    operand: 2,
                };
                manager.with_priority(scale, priority)
            }
            "offset" => {
                let offset = Arithmetic {
                    name: "offset",
                    op: OpCode::Add,
                    operand: 1,
                };
                manager.with_priority(offset, priority)
            }
            "faulty" => manager.with_priority(Faulty, priority),
            "listener" => manager.with_priority(Listener, priority),
            other => {
                eprintln!(
                    "ilrewrite-manager: error: unknown instrumentation method {other:?} in \
                     ILREWRITE_METHODS; none is hosted"
                );
                return Manager::new();
            }
        };
    }
    eprintln!("ilrewrite-manager: hosting {:?}", manager.names());
    manager
}

ilrewrite::export_profiler!(
    clsid = "{6D2F4A81-3C5E-4B97-8E1A-0F9B2C7D5E34}",
    profiler = manager
);

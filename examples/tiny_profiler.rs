//! The smallest profiler that rewrites a method: `Answer::Get` returns 42.
//!
//! ```text
//! cargo build --release --features clr --example tiny_profiler
//! CORECLR_ENABLE_PROFILING=1 CORECLR_PROFILER={0B5C3F2A-7D41-4E8B-9A6C-2E1F4D7B8C93} \
//! CORECLR_PROFILER_PATH=$PWD/target/release/examples/libtiny_profiler.so dotnet Answer.exe
//! ```
use ilrewrite::clr::{CorPrfHighMonitor, CorPrfMonitor, FunctionID, HResult};
use ilrewrite::clr::{JitRewriter, Profiler, ProfilerInfo};
use ilrewrite::{Instruction, MethodBody, OpCode, disasm::method_name};
use std::sync::OnceLock;

#[derive(Default)]
struct Tiny(OnceLock<JitRewriter>);

impl Profiler for Tiny {
    fn initialize(&self, info: ProfilerInfo) -> Result<(), HResult> {
        let jit = CorPrfMonitor::MONITOR_JIT_COMPILATION;
        info.set_event_mask(jit, CorPrfHighMonitor::empty())?;
        let _ = self.0.set(JitRewriter::new(info));
        Ok(())
    }

    fn jit_compilation_started(&self, function: FunctionID, _: bool) -> Result<(), HResult> {
        let jit = self.0.get().ok_or(HResult::E_FAIL)?;
        jit.rewrite(function, |body, method| {
            let name = method_name(method.module.metadata(), method.token);
            if (name.owner.as_str(), name.name.as_str()) != ("Answer", "Get") {
                return Ok(false); // every other method keeps its IL
            }
            *body = MethodBody::new(); // return 42;
            body.append(Instruction::ldc_i4(42));
            body.append(Instruction::simple(OpCode::Ret));
            Ok(true)
        });
        Ok(())
    }
}

ilrewrite::export_profiler!(
    clsid = "{0B5C3F2A-7D41-4E8B-9A6C-2E1F4D7B8C93}",
    profiler = Tiny::default
);

//! CallTarget in a profiler: managed begin/end hooks (`OnMethodBegin`, `OnMethodEnd` of
//! an integration type) around the methods the integrations select, hosted by the
//! `Manager` and configured from a TOML file. No `unsafe`.
//!
//! ```text
//! cargo build --release --features clr --example calltarget
//! cat > calltarget.toml <<'EOF'
//! [[method]]
//! name = "calltarget"
//! options = { integrations = [
//!     "CallTargetApp.Statics::* => CallTargetIntegrations.Recorder, CallTargetIntegrations",
//! ] }
//! EOF
//! CALLTARGET_CONFIG=calltarget.toml CORECLR_ENABLE_PROFILING=1 \
//! CORECLR_PROFILER={0C7A7E15-3D2B-4C5A-9E61-2F0B8D4A1C93} \
//! CORECLR_PROFILER_PATH=$PWD/target/release/examples/libcalltarget.so dotnet app.dll
//! ```
//!
//! The integrations' assemblies (and `ILRewrite.CallTarget.dll`, the state's) must be
//! where the application's assemblies are found (its directory). A target the
//! references or the transform cannot handle keeps its IL, with a line on stderr.
use std::sync::Arc;

use ilrewrite::clr::{CallTargetMethod, Configuration, InstrumentationMethod, Manager};

/// The manager, with what `CALLTARGET_CONFIG` names; a configuration error is one line,
/// and then nothing runs.
fn profiler() -> Manager {
    let offered: Vec<Arc<dyn InstrumentationMethod>> = vec![Arc::new(CallTargetMethod::new())];
    let Some(path) = std::env::var_os("CALLTARGET_CONFIG") else {
        eprintln!("calltarget: CALLTARGET_CONFIG is not set; nothing runs");
        return Manager::new();
    };
    Configuration::read(path.as_ref())
        .and_then(|configuration| Manager::configured(&configuration, &offered))
        .unwrap_or_else(|error| {
            eprintln!("calltarget: {error}; nothing runs");
            Manager::new()
        })
}

ilrewrite::export_profiler!(
    clsid = "{0C7A7E15-3D2B-4C5A-9E61-2F0B8D4A1C93}",
    profiler = profiler
);

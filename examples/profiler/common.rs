//! What the sample's instrumentation methods share: the name filter, the events, edits
//! before every `ret`.

use ilrewrite::body::MethodBody;
use ilrewrite::clr::sys::{CorPrfHighMonitor, CorPrfMonitor, mdToken};
use ilrewrite::clr::{Events, MethodRewrite, ModuleState, OptionKind, OptionSpec, Options};
use ilrewrite::disasm::method_name;
use ilrewrite::graph::Incoming;
use ilrewrite::sig::{MethodSig, TypeSig};
use ilrewrite::{Instruction, OpCode};

/// The events of every sample instrumentation method: no ReadyToRun code, so that every
/// method that runs, framework methods included, is JIT-compiled and seen.
pub const SEE_EVERY_METHOD: Events = Events {
    low: CorPrfMonitor::DISABLE_ALL_NGEN_IMAGES,
    high: CorPrfHighMonitor::empty(),
};

/// The `filter` option: only the methods whose name contains it.
pub const FILTER: OptionSpec = OptionSpec::new("filter", OptionKind::String);

/// Whether the method's name `Namespace.Type::Method` (nested types as `Outer/Inner`)
/// contains `filter`; every method passes no filter.
pub fn passes(filter: Option<&str>, module: &ModuleState, token: mdToken) -> bool {
    let Some(filter) = filter else { return true };
    let name = method_name(module.metadata(), token);
    format!("{}::{}", name.owner, name.name).contains(filter)
}

/// The `filter` option if given, else `default`; an empty filter is none.
pub fn filter_option(options: &Options, default: &Option<String>) -> Option<String> {
    options
        .string("filter")
        .map(str::to_owned)
        .or_else(|| default.clone())
        .filter(|f| !f.is_empty())
}

/// Whether the method returns `int32`.
pub fn returns_int32(method: &MethodRewrite<'_>) -> bool {
    method
        .signature()
        .ok()
        .and_then(|blob| MethodSig::parse(blob).ok())
        .is_some_and(|sig| sig.return_type == TypeSig::I4)
}

/// Inserts `code` before every `ret` of `body`, on every path to it (a branch to the
/// `ret` now reaches the code first: `Incoming::Redirect` for the first instruction);
/// whether there was one.
pub fn before_rets(body: &mut MethodBody, code: &[Instruction]) -> ilrewrite::Result<bool> {
    let rets: Vec<_> = body
        .instrs
        .opcodes()
        .filter(|(_, op)| *op == OpCode::Ret)
        .map(|(id, _)| id)
        .collect();
    for &ret in &rets {
        for (i, &instr) in code.iter().enumerate() {
            let incoming = if i == 0 {
                Incoming::Redirect
            } else {
                Incoming::Keep
            };
            body.insert_before(ret, instr, incoming)?;
        }
    }
    Ok(!rets.is_empty())
}

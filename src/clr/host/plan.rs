//! What the manager's ReJIT wants a method to run: a [`Plan`] (the configured
//! instrumentation, a [`Request`], code-generation flags) or the file's IL, and what to
//! do with the callers that inlined a changed method ([`InliningCallers`]).

use std::sync::Arc;

use super::config::Options;
use crate::clr::rejit::IlTarget;
use crate::clr::runtime::CodegenFlags;

/// What one ReJIT request adds to a method: an instrumentation method of the manager,
/// with the options of this request.
#[derive(Debug)]
pub struct Request {
    pub(crate) index: usize,
    pub(crate) name: String,
    pub(crate) options: Options,
}

/// Two requests are the same IL when they name the same instrumentation method with the
/// same option values.
impl PartialEq for Request {
    fn eq(&self, other: &Request) -> bool {
        self.index == other.index && self.options.same_values(&other.options)
    }
}

/// What the manager builds a method's IL from: its pristine IL, edited by the configured
/// instrumentation methods that want it (when `configured`), and by a request's
/// instrumentation method with the request's options, compiled with `flags`. The file's
/// own IL is [`IlTarget::File`], never a plan.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The configured instrumentation methods that want the method edit it, as at its
    /// first JIT.
    pub configured: bool,
    /// A request's instrumentation method and options.
    pub request: Option<Arc<Request>>,
    /// The code-generation flags of the versions compiled from it.
    pub flags: CodegenFlags,
}

impl Plan {
    /// What a first JIT gives a method the configuration instruments.
    pub const CONFIGURED: Plan = Plan {
        configured: true,
        request: None,
        flags: CodegenFlags::NONE,
    };

    /// The plan as a target: the file's IL when it edits nothing and sets no flag.
    pub fn into_target(self) -> IlTarget<Plan> {
        match (&self.request, self.configured, self.flags) {
            (None, false, CodegenFlags::NONE) => IlTarget::File,
            _ => IlTarget::Plan(self),
        }
    }
}

/// How a target reads in the dial's state listing: `file`, or its parts joined by `+`
/// (`configured`, `NAME(key=value,...)`), then ` flags=...` when it has flags.
pub(crate) fn describe(target: &IlTarget<Plan>) -> String {
    let IlTarget::Plan(plan) = target else {
        return "file".to_owned();
    };
    let mut parts = Vec::new();
    if plan.configured {
        parts.push("configured".to_owned());
    }
    if let Some(request) = &plan.request {
        parts.push(format!(
            "{}({})",
            request.name,
            request.options.words().join(",")
        ));
    }
    if parts.is_empty() {
        parts.push("file".to_owned());
    }
    let mut text = parts.join("+");
    if plan.flags != CodegenFlags::NONE {
        text.push_str(&format!(" flags={}", plan.flags));
    }
    text
}

/// What to do with the callers that inlined a method when it is re-JIT-compiled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum InliningCallers {
    /// Recompile them too (`RequestReJITWithInliners`, where the runtime has it), each
    /// with its own current IL (its instrumentation kept): the method's new code runs
    /// wherever it is called. The default.
    #[default]
    Recompile,
    /// Leave them (`RequestReJIT`): a caller that inlined the method keeps running the
    /// copy it inlined. A measurement, or a runtime without `ICorProfilerInfo10`.
    Leave,
}

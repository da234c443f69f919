//! `values` where the hooks read none (every platform but x86_64 System V, whose frame
//! record the plans read): a value plan cannot be made, so a hooked function never has
//! one. It stands in so that the table asks for plans the same way on every platform.

use crate::clr::runtime::{FunctionInfo, ProfilerInfo};

/// A plan that cannot exist: the type has no values.
#[derive(Debug)]
pub(crate) enum ValuePlan {}

/// No plan, ever.
pub(crate) fn plan_for(_: &ProfilerInfo, _: &FunctionInfo) -> Option<ValuePlan> {
    None
}

//! Argument and return values at the enter and leave hooks (issue 19, "Values"), for
//! x86_64 System V as CoreCLR 3.1 passes them.
//!
//! Once per method (in `FunctionIDMapper2`, never in a hook), [`ValuePlan::new`] turns
//! its signature into a plan: each argument's register, XMM register, stack offset or
//! register pair, and its type (`values/plan.rs` has the rules and their sources; [`classify`]
//! the struct classification). What the signature does not say, a [`StructLayouts`]
//! provider answers: [`FixedLayouts`] in memory, [`RuntimeLayouts`] from the runtime.
//! At each call, [`ValuePlan::args`] and [`ValuePlan::ret`] read the [`Value`]s out of
//! the hook's [`EltFrame`](super::EltFrame) without allocating.
//!
//! ```text
//! MethodSig + HiddenArgs + StructLayouts --ValuePlan::new--> ValuePlan
//! ValuePlan + &EltFrame (+ caller stack / return buffer) --args/ret--> Value
//! ```
//!
//! Nothing is guessed: a value whose place or type is not known is
//! [`Value::Unavailable`], with the reason.

mod classify;
mod layout;
mod plan;
mod read;
mod runtime;
#[cfg(test)]
mod tests;

pub use classify::{Eightbyte, Eightbytes, MAX_REGISTER_STRUCT, Passing, classify};
pub use layout::{
    Field, FieldType, FixedLayouts, LayoutError, NoLayouts, Scalar, Shape, StructLayout,
    StructLayouts,
};
pub use plan::{
    ArgKind, Decode, HiddenArgs, Location, Part, PlanError, Register, Slot, Unavailable, ValuePlan,
};
pub use read::{Args, StructBytes, Value};
pub(crate) use runtime::plan_for;
pub use runtime::{RuntimeLayouts, hidden_args};

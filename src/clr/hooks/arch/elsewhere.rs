//! Every other platform: the crate has no stubs of its own there (`HookPath::Fast` is
//! refused with `HookError::Unsupported`; the runtime's slow path works), and the x86_64
//! System V record stands as [`EltFrame`], as it always has, so that the hooks' API
//! names the same types everywhere.

use crate::clr::sys::{FunctionEnter3, FunctionLeave3, FunctionTailcall3};

#[path = "x86_64_sysv/frame.rs"]
mod frame;

pub use frame::EltFrame;

/// Nothing beyond [`EltFrame`].
pub mod extras {}

/// No stubs.
pub(crate) fn stubs() -> Option<(FunctionEnter3, FunctionLeave3, FunctionTailcall3)> {
    None
}

/// No negative control.
#[cfg(feature = "elt-test-modes")]
pub(crate) fn broken_stubs() -> Option<(FunctionEnter3, FunctionLeave3, FunctionTailcall3)> {
    None
}

/// No stubs to assemble: the dispatcher is only checked against the signature the stubs
/// of the other platforms call (`unsafe extern "C" fn(kind: u32, id: usize, frame: *const
/// EltFrame)`).
macro_rules! assemble_stubs {
    ($dispatch:ident) => {
        const _: unsafe extern "C" fn(u32, usize, *const EltFrame) = $dispatch;
    };
}
pub(crate) use assemble_stubs;

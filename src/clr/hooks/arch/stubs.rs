//! The three stubs as Rust sees them: their symbols, which the `stubs.s` of every
//! platform that has stubs defines under the same names, and their addresses. Each such
//! platform includes this file as its `stubs` module (`#[path = "../stubs.rs"]`); its
//! `assemble_stubs!` puts the definitions into the crate.

use crate::clr::sys::{FunctionEnter3, FunctionIDOrClientID, FunctionLeave3, FunctionTailcall3};

// The stubs' ABI is not C (see the hooks' module documentation): these declarations give
// their addresses the types `SetEnterLeaveFunctionHooks3` takes; Rust never calls them as
// declared (the unit tests call them as the JIT does, with inline asm).
#[allow(unsafe_code)]
unsafe extern "system" {
    pub(super) fn ilrewrite_elt_enter3(function_id_or_client_id: FunctionIDOrClientID);
    pub(super) fn ilrewrite_elt_leave3(function_id_or_client_id: FunctionIDOrClientID);
    pub(super) fn ilrewrite_elt_tailcall3(function_id_or_client_id: FunctionIDOrClientID);
}

/// The enter stub, for `SetEnterLeaveFunctionHooks3`. Only the runtime may call it: it
/// reads the id and the SP where the JIT puts them (x86_64 System V: R14 and R15), not
/// from the C argument registers.
pub(super) fn enter3() -> FunctionEnter3 {
    ilrewrite_elt_enter3
}

/// The leave stub, for `SetEnterLeaveFunctionHooks3` (x86_64 System V: id in RDI, SP in
/// RSI).
pub(super) fn leave3() -> FunctionLeave3 {
    ilrewrite_elt_leave3
}

/// The tailcall stub, for `SetEnterLeaveFunctionHooks3` (x86_64 System V: id in RDI).
pub(super) fn tailcall3() -> FunctionTailcall3 {
    ilrewrite_elt_tailcall3
}

/// The three stubs (enter, leave, tailcall), for `SetEnterLeaveFunctionHooks3`.
pub(crate) fn stubs() -> Option<(FunctionEnter3, FunctionLeave3, FunctionTailcall3)> {
    Some((enter3(), leave3(), tailcall3()))
}

/// The code addresses of the three stubs (enter, leave, tailcall), with their symbol
/// names: to compare the crate's machine code with the assembler's (the stubs can only
/// be registered through a [`HookTable`](crate::clr::hooks::HookTable)).
pub fn stub_addresses() -> [(&'static str, *const u8); 3] {
    [
        ("ilrewrite_elt_enter3", enter3() as *const u8),
        ("ilrewrite_elt_leave3", leave3() as *const u8),
        ("ilrewrite_elt_tailcall3", tailcall3() as *const u8),
    ]
}

//! Windows x64: the stubs (`stubs.s`, with SEH unwind information; its header states
//! their register contract) and their frame record ([`EltFrame`]). Checked only by
//! assembling and inspecting them (tests/hooks_cross.rs): no Windows runs them here.

mod frame;
#[path = "../stubs.rs"]
mod stubs;

pub use frame::EltFrame;
pub(crate) use stubs::stubs;

/// What Windows x64 adds to the hooks' public API.
pub mod extras {
    pub use super::stubs::stub_addresses;
}

/// No negative control here (x86_64 System V only).
#[cfg(feature = "elt-test-modes")]
pub(crate) fn broken_stubs() -> Option<(
    crate::clr::sys::FunctionEnter3,
    crate::clr::sys::FunctionLeave3,
    crate::clr::sys::FunctionTailcall3,
)> {
    None
}

/// Assembles `stubs.s` into the crate, its stubs calling `$dispatch` (a function of the
/// invoking module, `unsafe extern "C" fn(kind: u32, id: usize, frame: *const EltFrame)`,
/// checked here).
macro_rules! assemble_stubs {
    ($dispatch:ident) => {
        const _: unsafe extern "C" fn(u32, usize, *const EltFrame) = $dispatch;

        #[allow(unsafe_code, bad_asm_style)]
        mod assembled {
            // The source says `.intel_syntax noprefix` and restores `.att_syntax` itself
            // (redundant here, hence `bad_asm_style`) so that binutils' assembler takes
            // the same file (tests/hooks_cross.rs).
            // SAFETY: the source defines only the three stubs (and local constants), in
            // their own section; a stub writes only below its own stack pointer, calls
            // `dispatch` with its declared C signature (checked above) on a 16-byte
            // aligned stack, and returns with the registers of the Windows x64 contract
            // (RAX XMM0 kept at leave) restored, with SEH unwind information; checked
            // only by assembling, tests/hooks_cross.rs.
            std::arch::global_asm!(
                include_str!(concat!(
                    env!("CARGO_MANIFEST_DIR"),
                    "/src/clr/hooks/arch/x86_64_windows/stubs.s"
                )),
                dispatch = sym super::$dispatch
            );
        }
    };
}
pub(crate) use assemble_stubs;

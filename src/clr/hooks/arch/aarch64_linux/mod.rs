//! arm64 Linux (.NET 5 and later: the 3.1 JIT emits no hook calls there): the stubs
//! (`stubs.s`, its header states their register contract, read from the runtime's
//! sources) and their frame record ([`EltFrame`]). Checked under qemu by
//! tests/hooks_cross.rs, not inside a runtime.

mod frame;
#[path = "../stubs.rs"]
mod stubs;

pub use frame::EltFrame;
pub(crate) use stubs::stubs;

/// What arm64 Linux adds to the hooks' public API.
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

        #[allow(unsafe_code)]
        mod assembled {
            // SAFETY: the source defines only the three stubs (and local constants), in
            // their own section; a stub writes only below its own stack pointer, calls
            // `dispatch` with its declared C signature (checked above) on a 16-byte
            // aligned stack, and returns with the registers of the arm64 contract
            // (x0-x8, q0-q7, fp kept) restored, checked by tests/hooks_cross.rs under
            // qemu.
            std::arch::global_asm!(
                include_str!(concat!(
                    env!("CARGO_MANIFEST_DIR"),
                    "/src/clr/hooks/arch/aarch64_linux/stubs.s"
                )),
                dispatch = sym super::$dispatch
            );
        }
    };
}
pub(crate) use assemble_stubs;

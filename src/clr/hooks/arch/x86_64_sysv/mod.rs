//! x86_64 System V (Linux): the stubs that run inside CoreCLR in the tests (`stubs.s`,
//! whose register contract the hooks' module documentation states), their frame record
//! ([`EltFrame`]), and the negative control (feature `elt-test-modes`: the same stubs
//! broken on purpose, and a clobber of every caller-saved register).

mod frame;
#[path = "../stubs.rs"]
mod stubs;
#[cfg(feature = "elt-test-modes")]
mod test_modes;
#[cfg(test)]
mod tests;

pub use frame::EltFrame;
pub(crate) use stubs::stubs;
#[cfg(feature = "elt-test-modes")]
pub(crate) use test_modes::broken_stubs;

/// What x86_64 System V adds to the hooks' public API.
pub mod extras {
    pub use super::stubs::stub_addresses;
    #[cfg(feature = "elt-test-modes")]
    pub use super::test_modes::clobber_caller_saved_registers;
}

/// Assembles `stubs.s` into the crate, its stubs calling `$dispatch` (a function of the
/// invoking module, `unsafe extern "C" fn(kind: u32, id: usize, frame: *const EltFrame)`,
/// checked here); with `elt-test-modes`, also the broken copy under other names.
macro_rules! assemble_stubs {
    ($dispatch:ident) => {
        const _: unsafe extern "C" fn(u32, usize, *const EltFrame) = $dispatch;

        #[allow(unsafe_code, bad_asm_style)]
        mod assembled {
            // `{dispatch}` in the source becomes the dispatcher's symbol. The source says
            // `.intel_syntax noprefix` and restores `.att_syntax` itself (redundant here,
            // hence `bad_asm_style`) so that the system assembler takes the same file
            // (tests/hooks_native.rs).
            // SAFETY: the source defines only the three stubs (and local constants), in
            // their own section; a stub writes only below its own stack pointer, calls
            // `dispatch` with its declared C signature (checked above) on a 16-byte
            // aligned stack, and returns with the registers of its contract (the hooks'
            // module documentation) restored, checked by tests/hooks_native.rs.
            std::arch::global_asm!(
                ".set ILREWRITE_ELT_BROKEN, 0",
                ".set ILREWRITE_ELT_RENAMED, 0",
                include_str!(concat!(
                    env!("CARGO_MANIFEST_DIR"),
                    "/src/clr/hooks/arch/x86_64_sysv/stubs.s"
                )),
                dispatch = sym super::$dispatch
            );

            // The negative control (feature `elt-test-modes`): the same source assembled
            // with the enter stub not keeping XMM3 and the leave stub not keeping RDX,
            // under other names. Each block sets both switches itself, so their order
            // does not matter.
            // SAFETY: as above, except that these stubs break the register contract on
            // purpose: they are registered only through `HookPath::NegativeControl`,
            // whose documentation says so, by tests that show a broken trampoline changes
            // what a program computes.
            #[cfg(feature = "elt-test-modes")]
            std::arch::global_asm!(
                ".set ILREWRITE_ELT_BROKEN, 1",
                ".set ILREWRITE_ELT_RENAMED, 1",
                include_str!(concat!(
                    env!("CARGO_MANIFEST_DIR"),
                    "/src/clr/hooks/arch/x86_64_sysv/stubs.s"
                )),
                dispatch = sym super::$dispatch
            );
        }
    };
}
pub(crate) use assemble_stubs;

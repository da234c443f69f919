//! The hooks' platform floor: the frame record ([`EltFrame`]) and the assembler stubs of
//! the platform the crate is built for, chosen here and nowhere else.
//!
//! One folder per platform, each with its `stubs.s` (the three stubs the runtime calls),
//! its `frame.rs` (the record the stubs build on their stack and hand to the
//! dispatcher) and a `mod.rs` that assembles the one into the crate:
//!
//! | folder            | target                   | stubs                                   |
//! |-------------------|--------------------------|-----------------------------------------|
//! | `x86_64_sysv/`    | `x86_64`, Linux          | run inside CoreCLR by the tests         |
//! | `aarch64_linux/`  | `aarch64`, Linux         | run under qemu by tests/hooks_cross.rs  |
//! | `x86_64_windows/` | `x86_64`, Windows        | assembled by tests/hooks_cross.rs only  |
//! | `elsewhere.rs`    | every other              | none (`HookPath::Fast` is refused)      |
//!
//! Every platform module offers the same names: [`EltFrame`]; `stubs()`, the three stubs
//! for `SetEnterLeaveFunctionHooks3` (`None` where there are none); `broken_stubs()` (the
//! negative control, feature `elt-test-modes`; x86_64 System V only); `assemble_stubs!`;
//! and `extras`, what the platform adds to the hooks' public API. The three stubs'
//! symbols and addresses are the same on every platform that has stubs (`stubs.rs`,
//! included by each).
//!
//! The floor imports nothing of the hooks above it (only `HookKind`, `kind.rs` beside it,
//! and `sys`). The stubs call the dispatcher, which lives above (it hands the call to the
//! table): the dispatcher's module names itself when it assembles the stubs,
//! `arch::assemble_stubs!(dispatch)`, which also checks its signature against the one the
//! stubs call.

// The platform, chosen once.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
#[path = "x86_64_sysv/mod.rs"]
mod platform;
#[cfg(all(target_arch = "aarch64", target_os = "linux"))]
#[path = "aarch64_linux/mod.rs"]
mod platform;
#[cfg(all(target_arch = "x86_64", windows))]
#[path = "x86_64_windows/mod.rs"]
mod platform;
#[cfg(not(any(
    all(target_arch = "x86_64", target_os = "linux"),
    all(target_arch = "aarch64", target_os = "linux"),
    all(target_arch = "x86_64", windows)
)))]
#[path = "elsewhere.rs"]
mod platform;

#[cfg(feature = "elt-test-modes")]
pub(crate) use platform::broken_stubs;
pub use platform::{EltFrame, extras};
pub(crate) use platform::{assemble_stubs, stubs};

//! Floor 4, beside `profiler`: the enter/leave/tailcall hooks the runtime calls from
//! JIT-compiled code (`FunctionEnter3`, `FunctionLeave3`, `FunctionTailcall3`, the fast
//! path without `WithInfo`), shared by several subscribers.
//!
//! The runtime calls these hooks from a method's prolog and epilogs
//! (`movabs r11, cell; call [r11]`), not with the C calling convention: the hook must give
//! back the registers the JIT keeps live across the call. The stubs are assembler, one
//! source per platform (`arch/x86_64_sysv/stubs.s`, and `arch/aarch64_linux/stubs.s`,
//! `arch/x86_64_windows/stubs.s` for the other targets; `arch/mod.rs` chooses): each
//! saves those registers in an [`EltFrame`] on its stack, calls the dispatcher with the
//! C ABI, restores them and returns. The dispatcher hands the call to the registered
//! [`HookTable`], which calls the subscribers of the function:
//!
//! ```text
//! JIT code --call--> ilrewrite_elt_enter3 (asm) --C ABI--> dispatch --> table --> subscribers
//! ```
//!
//! # The register contract
//!
//! Measured on CoreCLR 3.1.23 linux-x64 by clobbering each register in a test stub:
//!
//! | hook     | id in | SP in | must preserve (and RBX RBP R12-R15) | free |
//! |----------|-------|-------|-------------------------------------|------|
//! | enter    | R14   | R15   | RDI RSI RDX RCX R8 R9, XMM0-XMM7    | RAX R10 R11, XMM8-15, flags |
//! | leave    | RDI   | RSI   | RAX RDX, XMM0 XMM1                  | the other caller-saved, flags |
//! | tailcall | RDI   | (RSI) | RAX XMM0 (RDX XMM1 kept too)        | the other caller-saved, flags |
//!
//! The enter hook is entered with `rsp % 16 == 8`, as after a normal call; the stubs do
//! not rely on it (they align the stack themselves, with RBP as a frame pointer). Beyond
//! the contract, the enter stub also preserves RAX, R10 and R11 (three stores and loads:
//! they are where the JIT puts hidden arguments, a stub's secret argument in R10 and a
//! dispatch cell in R11, should a future JIT keep one live across the hook). XMM8-XMM15
//! and the upper halves of YMM/ZMM registers are not saved: the contract leaves them
//! free, and the stubs' legacy SSE moves leave the upper halves as the dispatcher does.
//!
//! `tests/hooks_native.rs` checks the contract without a runtime: a C/assembler harness
//! calls each stub as the JIT does, with every register set to a known value, through a
//! dispatcher that clobbers every register a C function may; and checks that the broken
//! variant of the stubs (`--defsym ILREWRITE_ELT_BROKEN=1`) fails.
//!
//! # The frame record
//!
//! See [`EltFrame`]: at enter the argument registers (RDI RSI RDX RCX R8 R9, XMM0-XMM7)
//! and the caller's SP (R15); at leave and tailcall the return registers (RAX RDX, XMM0
//! XMM1) and RSI. The frame is valid for the handler's call only.
//!
//! # The dispatcher
//!
//! The dispatcher never allocates on its way to the subscribers and never unwinds into
//! the runtime: a subscriber's panic is caught, logged once per process (later ones
//! counted, see [`crate::clr::log::throttled`]) and dropped, the other subscribers still
//! get the call, and the hook returns normally (this needs `panic = "unwind"`, the
//! default). A subscriber runs inside managed code's prolog or epilog, on the method's
//! thread, in cooperative GC mode: it must be short, must not block, and must not call
//! back into managed code.
//!
//! # Values
//!
//! A subscriber that answers [`HookInterest::Values`] gets typed arguments at enter and
//! the return value at leave ([`Call::args`], [`Call::ret`]; x86_64 System V), read from
//! the registers the stubs saved and the caller's stack, by a [`values::ValuePlan`] made
//! once per function from its signature and the runtime's layouts: exact where the 3.1
//! runtime's slow path is not (float arguments 3-8 survive a subscriber that uses
//! XMM2-7, structs returned in two registers come back whole). What cannot be known (a
//! value type of another module, shared generic code) is
//! [`Value::Unavailable`](values::Value::Unavailable), never a guess.
//!
//! # Subscribers
//!
//! Tools share the hooks as [`HookSubscriber`]s of one [`HookTable`]: the runtime's
//! `FunctionIDMapper2` asks each subscriber once per function whether it wants it
//! ([`HookSubscriber::wants`]); a function nobody wants has no hooks at all (it runs as
//! unprofiled), and for the others the mapper returns the address of the function's
//! [`HookedFunction`] (who wants it) as the id the hooks receive, so that the handler
//! reaches its subscribers without a lookup. For every enter, exactly one of leave,
//! tailcall or unwound follows: the runtime calls no leave hook for a frame an exception
//! unwinds, only `ExceptionUnwindFunctionLeave` (with `MONITOR_EXCEPTIONS`), which the
//! table turns into [`HookSubscriber::unwound`] for that frame's function.
//!
//! The hooks see the calls the compiled code makes: optimized code turns a
//! tail-position self-call into a jump past the prolog (no hook). A subscriber that
//! needs every call answers [`HookCoverage::EveryCall`] from
//! [`HookSubscriber::coverage`]: the whole process then runs unoptimized code.
//!
//! The runtime takes the hooks only during `Initialize`: there is no public function to
//! set them. An instrumentation method of the
//! [`Manager`](crate::clr::Manager) offers a subscriber
//! ([`InstrumentationMethod::hook_subscriber`](crate::clr::InstrumentationMethod::hook_subscriber)),
//! and the manager registers them all, with the events they need, inside its
//! `Initialize`, after checking the event mask ([`check_flags`]: fast hooks refuse the
//! `ENABLE_FUNCTION_*` flags, the runtime's slow path needs them).
//!
//! # Platforms
//!
//! x86_64 Linux runs inside CoreCLR in the tests; aarch64 Linux (.NET 5 and later: the
//! 3.1 JIT emits no hook calls there) is checked under qemu against the contract read
//! from the runtime's sources; Windows x64 only by assembling. Values are x86_64 System V
//! only. Each has a folder under `arch/` (its `stubs.s` and its `frame.rs`); on any other
//! target the crate has no stubs of its own ([`HookPath::Fast`] is refused with
//! [`HookError::Unsupported`]) and [`EltFrame`] is the x86_64 System V record.
// The platform floor: the frame record and the stubs of the target (one `cfg` block).
mod arch;
mod flags;
mod kind;
mod subscriber;
// Values are read from the x86_64 System V frame record; elsewhere a stand-in whose
// plans never exist.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
pub mod values;
#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
#[path = "no_values.rs"]
mod values;
// The mapper and the handlers turn the runtime's client ids back into entries.
#[allow(unsafe_code)]
mod register;
#[allow(unsafe_code)]
mod table;
// The dispatcher the platform's stubs call; the stubs are assembled there.
mod trampolines;

pub use arch::EltFrame;
// What the platform adds: `stub_addresses` where the crate has stubs of its own,
// `clobber_caller_saved_registers` on x86_64 System V (feature `elt-test-modes`);
// nothing elsewhere.
#[allow(unused_imports)]
pub use arch::extras::*;
pub use flags::{HookCoverage, HookFlagsError, HookPath, INFO_FLAGS, check_flags};
pub use kind::HookKind;
pub(crate) use register::{events_for, register};
pub use subscriber::{Call, HookCandidate, HookInterest, HookSubscriber, HookedFunction};
pub use table::{HookCounts, HookError, HookTable, MAX_SUBSCRIBERS, registered};

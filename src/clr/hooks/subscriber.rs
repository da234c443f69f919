//! What a subscriber to the hooks is ([`HookSubscriber`]) and what it sees: the
//! function it is asked about ([`HookCandidate`]), a function whose hooks are on
//! ([`HookedFunction`]), and one hook call ([`Call`]).

use std::fmt;

use super::arch::EltFrame;
use super::flags::HookCoverage;
use super::values::ValuePlan;
use crate::clr::runtime::{FunctionInfo, ModuleMetadata, ProfilerInfo};
use crate::clr::sys::{ClassID, CorPrfEltInfo, FunctionID, ModuleID, mdToken};
use crate::disasm::{MethodName, method_name};

/// Whether a subscriber wants a function's hooks ([`HookSubscriber::wants`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HookInterest {
    /// Not this function: if no subscriber wants it, the runtime calls no hook for it
    /// (it costs what it costs unprofiled).
    #[default]
    No,
    /// Its enter, leave, tailcall and unwound calls.
    Calls,
    /// Its calls, with their argument and return values ([`Call::args`],
    /// [`Call::ret`]): the function's value plan is made once, when it is decided.
    Values,
}

/// A function the runtime is about to compile (or asks about inlining), for
/// [`HookSubscriber::wants`]: its ids, and the runtime to learn more.
#[derive(Debug)]
pub struct HookCandidate<'a> {
    pub(crate) function: FunctionID,
    pub(crate) facts: FunctionInfo,
    pub(crate) info: &'a ProfilerInfo,
}

impl HookCandidate<'_> {
    /// Its `FunctionID`.
    pub fn function(&self) -> FunctionID {
        self.function
    }

    /// Its class (0 for a generic class's method whose instantiation is not known).
    pub fn class(&self) -> ClassID {
        self.facts.class
    }

    /// The module holding its metadata.
    pub fn module(&self) -> ModuleID {
        self.facts.module
    }

    /// Its MethodDef token.
    pub fn token(&self) -> mdToken {
        self.facts.token
    }

    /// The runtime (the call is synchronous: any `ICorProfilerInfo` method may be
    /// called).
    pub fn info(&self) -> &ProfilerInfo {
        self.info
    }

    /// Its name (`Namespace.Type`, nested types `Outer/Inner`, and the method's name),
    /// read from its module's metadata; `None` if the metadata cannot be opened.
    pub fn name(&self) -> Option<MethodName> {
        let metadata = ModuleMetadata::open(self.info, self.facts.module).ok()?;
        Some(method_name(&metadata, self.facts.token))
    }
}

/// A function whose hooks are on: who wants them, and its ids. The hooks reach it
/// without a lookup (the runtime passes its address as the client id); it lives until
/// its module unloads.
#[derive(Debug)]
pub struct HookedFunction {
    pub(crate) function: FunctionID,
    pub(crate) facts: FunctionInfo,
    /// Bit `i`: subscriber `i` wants its calls.
    pub(crate) subscribers: u64,
    /// Where its arguments and return value are, when a subscriber wants values and a
    /// plan could be made.
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    pub(crate) values: Option<ValuePlan>,
}

impl HookedFunction {
    /// `function`, hooked for `subscribers`, with its value plan (always `None` where the
    /// hooks read no values: there is nothing to keep then).
    pub(crate) fn new(
        function: FunctionID,
        facts: FunctionInfo,
        subscribers: u64,
        values: Option<ValuePlan>,
    ) -> Self {
        #[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
        let _: Option<ValuePlan> = values;
        Self {
            function,
            facts,
            subscribers,
            #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
            values,
        }
    }

    /// Its `FunctionID`.
    pub fn function(&self) -> FunctionID {
        self.function
    }

    /// Its class (0 for a generic class's method whose instantiation is not known).
    pub fn class(&self) -> ClassID {
        self.facts.class
    }

    /// The module holding its metadata.
    pub fn module(&self) -> ModuleID {
        self.facts.module
    }

    /// Its MethodDef token.
    pub fn token(&self) -> mdToken {
        self.facts.token
    }

    /// Its value plan, when a subscriber asked for values ([`HookInterest::Values`])
    /// and its signature could be read.
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    pub fn values(&self) -> Option<&ValuePlan> {
        self.values.as_ref()
    }
}

/// One hook call: the function, and what the hook saw.
pub struct Call<'a> {
    pub(crate) function: &'a HookedFunction,
    pub(crate) frame: Option<&'a EltFrame>,
    pub(crate) elt_info: CorPrfEltInfo,
}

impl<'a> Call<'a> {
    /// The function entered, left or tail-calling.
    pub fn function(&self) -> &'a HookedFunction {
        self.function
    }

    /// The registers the fast-path trampoline saved: the argument registers at enter,
    /// the return registers at leave (`None` on the runtime's slow path).
    pub fn frame(&self) -> Option<&'a EltFrame> {
        self.frame
    }

    /// The runtime's `COR_PRF_ELT_INFO` handle, for `GetFunctionEnter3Info` and its kin
    /// during this call (`None` on the fast path).
    pub fn elt_info(&self) -> Option<CorPrfEltInfo> {
        (self.frame.is_none()).then_some(self.elt_info)
    }
}

// Reading the caller's stack and the return buffer the hook's registers point to.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
#[allow(unsafe_code)]
impl<'a> Call<'a> {
    /// The arguments at enter (`this` first), typed by the function's signature; `None`
    /// without a value plan (no subscriber asked for values, or the signature could not
    /// be read) or on the slow path. An argument whose place or type is not known is
    /// [`Value::Unavailable`](super::values::Value::Unavailable). Does not allocate.
    #[inline]
    pub fn args(&self) -> Option<super::values::Args<'a>> {
        let plan = self.function.values.as_ref()?;
        let frame = self.frame?;
        // SAFETY: `frame` is the frame the enter stub handed the dispatcher for a call of
        // this function (a `Call` with a frame is made only by the fast path, from the
        // runtime's hook, with the entry the mapper made for it, whose plan is this
        // function's), and the slice lives no longer than `'a`, the hook's call.
        let stack = unsafe { plan.caller_stack(frame) };
        Some(plan.args(frame, stack))
    }

    /// The return value at leave; `None` for a `void` function, without a value plan,
    /// or on the slow path. Read from the registers the leave stub saved, or from the
    /// return buffer whose address RAX holds.
    #[inline]
    pub fn ret(&self) -> Option<super::values::Value<'a>> {
        let plan = self.function.values.as_ref()?;
        let frame = self.frame?;
        // SAFETY: as in `args`, for the leave stub's frame.
        let buffer = unsafe { plan.return_buffer(frame) };
        plan.ret(frame, buffer)
    }
}

impl fmt::Debug for Call<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Call")
            .field("function", &self.function)
            .field("fast", &self.frame.is_some())
            .finish_non_exhaustive()
    }
}

/// A subscriber to the enter/leave/tailcall hooks: one of several tools sharing them.
///
/// The runtime calls the hooks of a function only if some subscriber wants it
/// ([`wants`](HookSubscriber::wants), asked once per function); each call reaches only
/// the subscribers that want that function, in their registration order. For every
/// [`enter`](HookSubscriber::enter) of a function, exactly one of
/// [`leave`](HookSubscriber::leave), [`tailcall`](HookSubscriber::tailcall) (the function
/// ends by a tail call: its callee's leave comes instead of its own) or
/// [`unwound`](HookSubscriber::unwound) (an exception left its frame) follows, on the
/// same thread.
///
/// `enter`, `leave` and `tailcall` run inside managed code's prolog or epilog, on the
/// method's thread, in cooperative GC mode: they must be short, must not block, must not
/// call into managed code, and may call only the `ICorProfilerInfo` methods that are safe
/// asynchronously. A panic is caught, logged once, and the other subscribers still get
/// the call.
pub trait HookSubscriber: Send + Sync {
    /// A stable name, for the logs.
    fn name(&self) -> &str;

    /// Whether it wants the function's hooks. Asked once per function (at its first
    /// compilation, or when the JIT first asks whether it may inline it), in a
    /// synchronous context; the answer holds for the function's life.
    fn wants(&self, function: &HookCandidate<'_>) -> HookInterest;

    /// The function was entered (its prolog ran; its arguments are in the frame).
    fn enter(&self, call: &Call<'_>) {
        let _ = call;
    }

    /// The function returns (its return value is in the frame).
    fn leave(&self, call: &Call<'_>) {
        let _ = call;
    }

    /// The function ends by a tail call: the callee's frame replaces it.
    fn tailcall(&self, call: &Call<'_>) {
        let _ = call;
    }

    /// An exception unwound the function's frame (a synchronous context: the runtime's
    /// `ExceptionUnwindFunctionLeave`).
    fn unwound(&self, function: &HookedFunction) {
        let _ = function;
    }

    /// Which calls it needs to see (default [`HookCoverage::Optimized`]). Asked once,
    /// when the hooks are registered; the most any subscriber asks for holds for the
    /// process (and so for every subscriber): [`HookCoverage::EveryCall`] costs the
    /// whole process its optimized code.
    fn coverage(&self) -> HookCoverage {
        HookCoverage::Optimized
    }
}

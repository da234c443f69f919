//! Which hook path runs ([`HookPath`]), which calls the hooks must see
//! ([`HookCoverage`]), and the event flags each needs or forbids, checked before the
//! runtime is asked ([`check_flags`]).

use std::fmt;

use crate::clr::sys::CorPrfMonitor;

/// How the runtime calls the hooks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HookPath {
    /// This crate's trampolines (`FunctionEnter3`, no `WithInfo`), called directly from
    /// the JIT-compiled prolog and epilogs: the cheapest, and values come from the
    /// registers the trampolines saved (correct where the runtime's slow path is not).
    #[default]
    Fast,
    /// The runtime's slow path (`FunctionEnter3WithInfo`): its own wrappers call the
    /// hooks with a `COR_PRF_ELT_INFO` handle for `GetFunctionEnter3Info` and its kin.
    /// About ten times dearer; offered to compare, and for tools that need
    /// `COR_PRF_FRAME_INFO`. Its 3.1 wrappers restore only XMM0 and XMM1 (float
    /// arguments 3-8 can be corrupted by a subscriber that uses XMM2-7) and
    /// `GetFunctionLeave3Info` is wrong for structs returned in two registers.
    RuntimeWithInfo,
    /// Feature `elt-test-modes`, for tests only: [`Fast`](HookPath::Fast) through
    /// trampolines broken on purpose (the enter stub does not keep XMM3, the leave stub
    /// not RDX), to show that a register-safety test can fail. Never in production:
    /// float arguments and struct results are corrupted.
    #[cfg(feature = "elt-test-modes")]
    NegativeControl,
}

impl HookPath {
    /// Its name: `fast` or `runtime-with-info`.
    pub const fn name(self) -> &'static str {
        match self {
            HookPath::Fast => "fast",
            HookPath::RuntimeWithInfo => "runtime-with-info",
            #[cfg(feature = "elt-test-modes")]
            HookPath::NegativeControl => "negative-control",
        }
    }

    /// The events the hooks need on this path: `MONITOR_ENTERLEAVE`,
    /// `MONITOR_EXCEPTIONS` (the unwind notifications that end the frames an exception
    /// leaves), and for the slow path the three `ENABLE_*` info flags.
    pub const fn events(self) -> CorPrfMonitor {
        let base = CorPrfMonitor::MONITOR_ENTERLEAVE.union(CorPrfMonitor::MONITOR_EXCEPTIONS);
        match self {
            HookPath::RuntimeWithInfo => base.union(INFO_FLAGS),
            _ => base,
        }
    }
}

impl fmt::Display for HookPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Which calls of the functions it wants a subscriber needs the hooks to see
/// ([`HookSubscriber::coverage`](super::HookSubscriber::coverage)).
///
/// The hooks are in the code the JIT makes, so they see the calls that code makes. The
/// JIT's optimizer (CoreCLR 3.1 and .NET 8 alike, with tiering off or at tier 1) turns a
/// self-recursive call in tail position (`return F(..)` inside `F`, no `tail.` prefix)
/// into a jump back to the start of `F`'s body, after the prolog that calls the enter
/// hook: those calls have no enter, leave or tailcall (`Ackermann(2, 3)` makes 44 calls
/// and the hooks see 20). Unoptimized code (tier 0, minimal optimization, debuggable
/// code) makes no implicit tail call at all, so it keeps every call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum HookCoverage {
    /// The calls the code the runtime would run anyway makes: optimized code may have
    /// turned tail-position self-calls into loops (see above). Costs nothing.
    #[default]
    Optimized,
    /// Every call of a hooked function except a self-call the IL itself marks `tail.`
    /// (the JIT makes that a loop in unoptimized code too): the profiler sets
    /// `COR_PRF_DISABLE_OPTIMIZATIONS`, so the runtime compiles *every* method of the
    /// process, hooked or not, as debuggable code without optimization and without
    /// tiering. The cost is the process's speed: unoptimized code is several times
    /// slower in tight loops. The flag can be set only during `Initialize`, for the
    /// whole process: one subscriber asking for it makes all subscribers see every call.
    EveryCall,
}

impl HookCoverage {
    /// The events this coverage needs: none, or `COR_PRF_DISABLE_OPTIMIZATIONS`.
    pub const fn events(self) -> CorPrfMonitor {
        match self {
            HookCoverage::Optimized => CorPrfMonitor::empty(),
            HookCoverage::EveryCall => CorPrfMonitor::DISABLE_OPTIMIZATIONS,
        }
    }

    /// Its name: `optimized` or `every-call`.
    pub const fn name(self) -> &'static str {
        match self {
            HookCoverage::Optimized => "optimized",
            HookCoverage::EveryCall => "every-call",
        }
    }
}

impl fmt::Display for HookCoverage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The flags that give the slow path its information and that the fast path forbids:
/// `COR_PRF_ENABLE_FUNCTION_ARGS`, `COR_PRF_ENABLE_FUNCTION_RETVAL`,
/// `COR_PRF_ENABLE_FRAME_INFO`.
pub const INFO_FLAGS: CorPrfMonitor = CorPrfMonitor::ENABLE_FUNCTION_ARGS
    .union(CorPrfMonitor::ENABLE_FUNCTION_RETVAL)
    .union(CorPrfMonitor::ENABLE_FRAME_INFO);

/// An event mask the hook path cannot run with: the runtime would answer
/// `CORPROF_E_INCONSISTENT_WITH_FLAGS` to whichever of the mask and the hooks came
/// second.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookFlagsError {
    /// Fast hooks with info flags set (the flags named).
    FastWithInfoFlags(CorPrfMonitor),
    /// Slow hooks with none of the info flags.
    SlowWithoutInfoFlags,
}

impl fmt::Display for HookFlagsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HookFlagsError::FastWithInfoFlags(flags) => write!(
                f,
                "fast enter/leave hooks cannot run with {flags:?} (those flags are for the \
                 runtime's WithInfo hooks)"
            ),
            HookFlagsError::SlowWithoutInfoFlags => f.write_str(
                "the runtime's WithInfo hooks need one of ENABLE_FUNCTION_ARGS, \
                 ENABLE_FUNCTION_RETVAL, ENABLE_FRAME_INFO",
            ),
        }
    }
}

impl std::error::Error for HookFlagsError {}

/// Whether hooks on `path` can run with the event mask `low`.
///
/// # Errors
/// [`HookFlagsError`] naming the inconsistency.
pub fn check_flags(path: HookPath, low: CorPrfMonitor) -> Result<(), HookFlagsError> {
    let info = low & INFO_FLAGS;
    match path {
        HookPath::RuntimeWithInfo if info.is_empty() => Err(HookFlagsError::SlowWithoutInfoFlags),
        HookPath::RuntimeWithInfo => Ok(()),
        _ if !info.is_empty() => Err(HookFlagsError::FastWithInfoFlags(info)),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every combination of the three info flags with and without other flags: fast
    /// refuses any of them (and names exactly those set), slow needs at least one, and
    /// each path's own events pass its own check.
    #[test]
    fn each_path_takes_exactly_the_masks_the_runtime_takes() {
        let singles = [
            CorPrfMonitor::ENABLE_FUNCTION_ARGS,
            CorPrfMonitor::ENABLE_FUNCTION_RETVAL,
            CorPrfMonitor::ENABLE_FRAME_INFO,
        ];
        let others = [
            CorPrfMonitor::empty(),
            CorPrfMonitor::MONITOR_ENTERLEAVE | CorPrfMonitor::MONITOR_JIT_COMPILATION,
        ];
        for bits in 0..8u32 {
            let info = singles
                .iter()
                .enumerate()
                .filter(|(i, _)| bits & (1 << i) != 0)
                .fold(CorPrfMonitor::empty(), |acc, (_, f)| acc | *f);
            for other in others {
                let mask = info | other;
                let fast = check_flags(HookPath::Fast, mask);
                let slow = check_flags(HookPath::RuntimeWithInfo, mask);
                if info.is_empty() {
                    assert_eq!(fast, Ok(()));
                    assert_eq!(slow, Err(HookFlagsError::SlowWithoutInfoFlags));
                } else {
                    assert_eq!(fast, Err(HookFlagsError::FastWithInfoFlags(info)));
                    assert_eq!(slow, Ok(()));
                }
            }
        }
        for path in [HookPath::Fast, HookPath::RuntimeWithInfo] {
            assert_eq!(check_flags(path, path.events()), Ok(()), "{path}");
        }
    }

    /// Every-call coverage asks for exactly `DISABLE_OPTIMIZATIONS` (none of the info
    /// flags, so either path takes it), the default for nothing, and the most of several
    /// answers is every call.
    #[test]
    fn every_call_coverage_asks_only_for_unoptimized_code() {
        assert_eq!(HookCoverage::default(), HookCoverage::Optimized);
        assert_eq!(HookCoverage::Optimized.events(), CorPrfMonitor::empty());
        assert_eq!(
            HookCoverage::EveryCall.events(),
            CorPrfMonitor::DISABLE_OPTIMIZATIONS
        );
        for path in [HookPath::Fast, HookPath::RuntimeWithInfo] {
            let mask = path.events() | HookCoverage::EveryCall.events();
            assert_eq!(check_flags(path, mask), Ok(()), "{path}");
        }
        let answers = [HookCoverage::Optimized, HookCoverage::EveryCall];
        assert_eq!(answers.iter().max(), Some(&HookCoverage::EveryCall));
    }
}

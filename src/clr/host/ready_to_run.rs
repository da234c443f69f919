//! [`ReadyToRun`]: whether the manager keeps precompiled code.

/// What the manager does with the precompiled (ReadyToRun) code of the modules that
/// have it (`Manager::with_ready_to_run`, or `ready_to_run` in a configuration's
/// `[manager]` table).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReadyToRun {
    /// Keep it: start-up stays as fast as unprofiled. Precompiled methods are never
    /// JIT-compiled, so they reach an instrumentation method only as its targets
    /// (`InstrumentationMethod::targets`, re-JIT-compiled before their first call); an
    /// instrumentation method that asks for `COR_PRF_DISABLE_ALL_NGEN_IMAGES` stops the
    /// start with an error naming it.
    Keep,
    /// Disable it (`COR_PRF_DISABLE_ALL_NGEN_IMAGES`): every method that runs is
    /// JIT-compiled, and offered to `InstrumentationMethod::wants`, at a start-up cost of
    /// 2-4x the CPU time of an unprofiled run (`docs/performance.md`).
    Disable,
}

impl ReadyToRun {
    /// The value as a configuration writes it: `keep` or `disable`.
    pub fn parse(text: &str) -> Option<ReadyToRun> {
        match text {
            "keep" => Some(ReadyToRun::Keep),
            "disable" => Some(ReadyToRun::Disable),
            _ => None,
        }
    }
}

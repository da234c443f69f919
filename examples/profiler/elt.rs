//! `elt`, `elt-values`, `elt-slow` and `elt-empty`: no IL edit; a subscriber to the enter/leave/tailcall
//! hooks that counts, per kind, the calls of the functions that pass the filter (every
//! function without one). `elt-values` also reads every argument at enter and the return
//! value at leave (folded into a checksum so the reads cannot be optimized away);
//! `elt-slow` runs on the runtime's own slow path, and `elt-empty` counts nothing (both
//! measurements).

use std::cell::Cell;
use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};

use ilrewrite::clr::hooks::values::Value;
use ilrewrite::clr::hooks::{
    Call, HookCandidate, HookCoverage, HookInterest, HookSubscriber, HookedFunction,
};
use ilrewrite::clr::{Candidate, InstrumentationMethod, Interest, MethodEdit, Profiler};
use std::collections::HashMap;
use std::sync::Mutex;

/// Counter shards: each thread adds to its own cache line.
const SHARDS: usize = 64;

/// The counted kinds, in [`Shard::counts`] order.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Enter = 0,
    Leave = 1,
    Tailcall = 2,
    Unwound = 3,
}

#[repr(align(64))]
#[derive(Default)]
struct Shard {
    counts: [AtomicU64; 4],
    /// A fold of the values read (`elt-values`), so the reads cannot be optimized away.
    checksum: AtomicU64,
}

/// Counts per kind, sharded by thread.
pub struct Counters {
    shards: Box<[Shard]>,
    next: AtomicUsize,
}

thread_local! {
    static SHARD: Cell<usize> = const { Cell::new(usize::MAX) };
}

impl Counters {
    fn new() -> Counters {
        Counters {
            shards: (0..SHARDS).map(|_| Shard::default()).collect(),
            next: AtomicUsize::new(0),
        }
    }

    /// This thread's shard.
    #[inline]
    fn mine(&self) -> &Shard {
        let shard = SHARD.with(|s| {
            let mut i = s.get();
            if i == usize::MAX {
                i = self.next.fetch_add(1, Relaxed) % SHARDS;
                s.set(i);
            }
            i
        });
        &self.shards[shard]
    }

    #[inline]
    fn add(&self, kind: Kind) {
        self.mine().counts[kind as usize].fetch_add(1, Relaxed);
    }

    /// Folds `sum` into this thread's checksum (a plain store: only this thread writes
    /// its shard's checksum in practice, and a lost update changes nothing counted).
    #[inline]
    fn fold(&self, sum: u64) {
        let checksum = &self.mine().checksum;
        checksum.store(checksum.load(Relaxed) ^ sum, Relaxed);
    }

    fn total(&self, kind: Kind) -> u64 {
        self.shards
            .iter()
            .map(|s| s.counts[kind as usize].load(Relaxed))
            .sum()
    }
}

/// What the subscriber reads at each call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reads {
    /// Nothing, and counts nothing either (`elt-empty`: what the hooks alone cost).
    Empty,
    /// Nothing: counts only.
    Nothing,
    /// Every argument and return value.
    Values,
}

/// What `ILREWRITE_ELT_TEST` asks of the hooks (feature `elt-test-modes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EltTest {
    /// Nothing: the hooks as a user has them.
    #[default]
    Off,
    /// `clobber`: every hook overwrites every register a function may change.
    Clobber,
    /// `negative-control`: `clobber`, through trampolines that forget XMM3 at enter and
    /// RDX at leave.
    NegativeControl,
}

impl EltTest {
    /// Reads `ILREWRITE_ELT_TEST`'s value.
    pub fn parse(value: &str) -> Result<EltTest, String> {
        let test = match value {
            "clobber" => EltTest::Clobber,
            "negative-control" => EltTest::NegativeControl,
            other => {
                return Err(format!(
                    "unknown ILREWRITE_ELT_TEST {other:?} (expected clobber or negative-control)"
                ));
            }
        };
        if cfg!(feature = "elt-test-modes") {
            Ok(test)
        } else {
            Err("ILREWRITE_ELT_TEST needs the feature elt-test-modes".to_owned())
        }
    }
}

/// Overwrites the registers a function may change (with the feature), else nothing.
#[inline]
fn clobber() {
    #[cfg(feature = "elt-test-modes")]
    ilrewrite::clr::hooks::clobber_caller_saved_registers();
}

/// `ILREWRITE_ELT_TRACE`: every call's values as text lines (`elt-values`), for tests.
#[derive(Default)]
struct Trace {
    /// The hooked functions' names (`Type::Method`, the type without its namespace),
    /// recorded when they are decided (a synchronous context).
    names: Mutex<HashMap<usize, String>>,
    lines: Mutex<Vec<String>>,
}

/// The hooks' subscriber.
pub struct EltSubscriber {
    filter: Option<String>,
    reads: Reads,
    clobbers: bool,
    trace: Option<(std::path::PathBuf, Trace)>,
    counters: Counters,
    /// `ILREWRITE_ELT_CALLS`: `every` asks for every call (unoptimized code).
    coverage: HookCoverage,
}

impl HookSubscriber for EltSubscriber {
    fn name(&self) -> &str {
        "elt"
    }

    fn coverage(&self) -> HookCoverage {
        self.coverage
    }

    fn wants(&self, function: &HookCandidate<'_>) -> HookInterest {
        let name = function.name();
        let wanted = match &self.filter {
            None => true,
            Some(filter) => name
                .as_ref()
                .is_some_and(|name| format!("{}::{}", name.owner, name.name).contains(filter)),
        };
        if !wanted {
            return HookInterest::No;
        }
        if let (Some((_, trace)), Some(name)) = (&self.trace, &name) {
            let owner = name.owner.rsplit('.').next().unwrap_or(&name.owner);
            if let Ok(mut names) = trace.names.lock() {
                names.insert(function.function(), format!("{owner}::{}", name.name));
            }
        }
        match self.reads {
            Reads::Values => HookInterest::Values,
            _ => HookInterest::Calls,
        }
    }

    fn enter(&self, call: &Call<'_>) {
        if self.reads == Reads::Empty {
            return;
        }
        self.counters.add(Kind::Enter);
        if self.reads == Reads::Values {
            self.fold(call, true);
        }
        if self.clobbers {
            clobber();
        }
    }

    fn leave(&self, call: &Call<'_>) {
        if self.reads == Reads::Empty {
            return;
        }
        self.counters.add(Kind::Leave);
        if self.reads == Reads::Values {
            self.fold(call, false);
        }
        if self.clobbers {
            clobber();
        }
    }

    fn tailcall(&self, _: &Call<'_>) {
        if self.reads == Reads::Empty {
            return;
        }
        self.counters.add(Kind::Tailcall);
        if self.clobbers {
            clobber();
        }
    }

    fn unwound(&self, _: &HookedFunction) {
        if self.reads == Reads::Empty {
            return;
        }
        self.counters.add(Kind::Unwound);
    }
}

impl EltSubscriber {
    /// Reads the call's values (the arguments at enter, the return value at leave) and
    /// folds their bits into this thread's checksum; traces them when asked.
    #[inline]
    fn fold(&self, call: &Call<'_>, entering: bool) {
        if self.trace.is_some() {
            return self.fold_traced(call, entering);
        }
        let mut sum = 0u64;
        if entering {
            if let Some(args) = call.args() {
                for value in args {
                    sum = sum.rotate_left(5) ^ bits(&value);
                }
            }
        } else if let Some(value) = call.ret() {
            sum = bits(&value);
        }
        self.counters.fold(sum);
    }

    /// [`fold`](Self::fold) writing each call's values as a trace line.
    #[cold]
    fn fold_traced(&self, call: &Call<'_>, entering: bool) {
        let Some((_, trace)) = &self.trace else {
            return;
        };
        let mut text = String::new();
        let mut add = |value: Value<'_>| {
            text.push(' ');
            text.push_str(&traced(&value));
        };
        let kind = if entering {
            if let Some(args) = call.args() {
                args.for_each(&mut add);
            }
            "enter"
        } else {
            if let Some(value) = call.ret() {
                add(value);
            }
            "leave"
        };
        let name = trace
            .names
            .lock()
            .ok()
            .and_then(|names| names.get(&call.function().function()).cloned())
            .unwrap_or_default();
        if let Ok(mut lines) = trace.lines.lock() {
            lines.push(format!("{kind} {name}{text}"));
        }
    }
}

/// A value's bits, for the checksum.
#[inline]
fn bits(value: &Value<'_>) -> u64 {
    match *value {
        Value::I32(v) => v as u64,
        Value::I64(v) => v as u64,
        Value::F32(v) => u64::from(v.to_bits()),
        Value::F64(v) => v.to_bits(),
        Value::Object(v) | Value::ByRef(v) | Value::Pointer(v) => v as u64,
        Value::Struct(ref bytes) => bytes
            .as_bytes()
            .iter()
            .fold(0u64, |acc, b| acc.rotate_left(8) ^ u64::from(*b)),
        _ => 0,
    }
}

/// A value as EltValues.exe's trace writes it: integers in decimal, `f32:`/`f64:` and
/// the bits in hex, `struct:` and the bytes in hex, `obj` for a reference.
fn traced(value: &Value<'_>) -> String {
    match value {
        Value::F32(v) => format!("f32:{:08x}", v.to_bits()),
        Value::F64(v) => format!("f64:{:016x}", v.to_bits()),
        Value::Object(_) => "obj".to_owned(),
        Value::Struct(bytes) => {
            let mut text = "struct:".to_owned();
            for b in bytes.as_bytes() {
                text.push_str(&format!("{b:02x}"));
            }
            text
        }
        other => other.to_string(),
    }
}

/// The instrumentation method: edits nothing, offers the subscriber.
pub struct Elt {
    name: &'static str,
    subscriber: Arc<EltSubscriber>,
    started: OnceLock<()>,
}

impl Elt {
    pub fn new(
        name: &'static str,
        filter: Option<String>,
        reads: Reads,
        test: EltTest,
        trace: Option<std::path::PathBuf>,
        coverage: HookCoverage,
    ) -> Elt {
        Elt {
            name,
            subscriber: Arc::new(EltSubscriber {
                filter,
                reads,
                clobbers: test != EltTest::Off,
                trace: trace.map(|path| (path, Trace::default())),
                counters: Counters::new(),
                coverage,
            }),
            started: OnceLock::new(),
        }
    }

    /// Writes the trace file, if one was asked for (`ILREWRITE_ELT_TRACE`).
    pub fn write_trace(&self) {
        if let Some((path, trace)) = &self.subscriber.trace {
            let lines = trace.lines.lock().map(|l| l.join("\n")).unwrap_or_default();
            if let Err(e) = std::fs::write(path, lines + "\n") {
                eprintln!("ilrewrite: error: {}: {e}", path.display());
            }
        }
    }

    /// The shutdown line's counts: enters, leaves, tailcalls, unwinds.
    pub fn counts(&self) -> [u64; 4] {
        let c = &self.subscriber.counters;
        [
            c.total(Kind::Enter),
            c.total(Kind::Leave),
            c.total(Kind::Tailcall),
            c.total(Kind::Unwound),
        ]
    }
}

impl Profiler for Elt {}

impl InstrumentationMethod for Elt {
    fn name(&self) -> &str {
        self.name
    }

    fn start(&self, _: &ilrewrite::clr::Start<'_>) -> Result<(), ilrewrite::clr::MethodError> {
        let _ = self.started.set(());
        Ok(())
    }

    fn hook_subscriber(&self) -> Option<Arc<dyn HookSubscriber>> {
        Some(self.subscriber.clone())
    }

    fn wants(&self, _: &Candidate<'_>) -> Interest {
        Interest::No
    }

    fn edit(
        &self,
        _: &mut ilrewrite::body::MethodBody,
        _: &mut MethodEdit<'_, '_>,
    ) -> ilrewrite::Result<bool> {
        Ok(false)
    }
}

//! `wrap`: every method in try/finally with entry and exit probes that count into this
//! library's counters; the probes' references are each module's data item.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU8, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, OnceLock};

use ilrewrite::body::MethodBody;
use ilrewrite::clr::sys::mdToken;
use ilrewrite::clr::{
    AssemblyName, Candidate, Events, Instrumentation, InstrumentationMethod, Interest, MethodEdit,
    MethodError, ModuleLoad, ModuleMetadata, NativeCall, OptionKind, OptionSpec, Profiler, Start,
};
use ilrewrite::sig::{MethodSig, TypeSig};
use ilrewrite::transform::{InstrumentationCode, Snippet};
use ilrewrite::{Instruction, OpCode};

use crate::common::{FILTER, SEE_EVERY_METHOD};
use crate::modes::Filtered;

/// Calls of instrumented methods, counted by the injected entry code.
pub static ENTERS: AtomicU64 = AtomicU64::new(0);
/// Returns and unwinds of instrumented methods, counted by the injected finally code.
pub static EXITS: AtomicU64 = AtomicU64::new(0);
/// Module data items dropped (their module unloaded, or the profiler shut down).
pub static ITEMS_DROPPED: AtomicU64 = AtomicU64::new(0);

/// `Probes::Native`'s entry probe (`calli unmanaged cdecl void()`).
extern "C" fn on_enter() {
    ENTERS.fetch_add(1, Relaxed);
    depth_add(1);
}

/// `Probes::Native`'s exit probe, in the finally.
extern "C" fn on_exit() {
    EXITS.fetch_add(1, Relaxed);
    depth_add(-1);
}

// ---- Frames open per thread (native probes) -----------------------------------------
//
// The managed probes are one locked add on a process-wide counter: they cannot tell
// threads apart, so `enters - exits` at shutdown mixes the frames still on some
// thread's stack (a thread pool worker waiting for work, a thread blocked forever) with
// exits that were lost. The native probes run Rust code on the method's own thread
// (CoreCLR threads are OS threads), so they keep each thread's depth in a thread-local
// record: +1 at entry, -1 in the finally. A thread that ends has no frame left (no
// thread ends inside a method: nothing aborts threads in .NET Core), so the depth it
// ends with is lost exits; a thread still alive at shutdown has exactly its depth of
// frames open. The records stay in `THREADS` after their thread ends.

/// One thread's wrapped frames: written only by its own thread, read at shutdown.
#[derive(Debug, Default)]
struct ThreadDepth {
    depth: AtomicI64,
    ended: AtomicBool,
}

/// Every thread that ran a native probe, in the order of their first probe.
static THREADS: Mutex<Vec<Arc<ThreadDepth>>> = Mutex::new(Vec::new());

/// This thread's record; marks it ended when the thread exits.
struct DepthSlot(Arc<ThreadDepth>);

impl DepthSlot {
    fn register() -> DepthSlot {
        let record = Arc::new(ThreadDepth::default());
        THREADS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(record.clone());
        DepthSlot(record)
    }
}

impl Drop for DepthSlot {
    fn drop(&mut self) {
        self.0.ended.store(true, Relaxed);
    }
}

thread_local! {
    static DEPTH: DepthSlot = DepthSlot::register();
}

/// Adds `delta` to this thread's depth: a load and a store, no locked instruction (only
/// this thread writes it). A probe on a thread whose record is gone (its exit) is not
/// counted per thread, so it shows in the lost exits.
#[inline]
fn depth_add(delta: i64) {
    let _ = DEPTH.try_with(|slot| {
        let depth = &slot.0.depth;
        depth.store(depth.load(Relaxed) + delta, Relaxed);
    });
}

/// What the native probes know at shutdown: the frames still open on threads that are
/// alive (the sum of their positive depths), and the exits lost, `enters - exits -
/// open` (negative if more exits than enters were counted). Meaningful only with
/// native probes. A thread still running when this is read may be counted mid-call.
pub fn open_and_lost() -> (u64, i64) {
    let threads = THREADS.lock().unwrap_or_else(|e| e.into_inner());
    let open: i64 = threads
        .iter()
        .filter(|t| !t.ended.load(Relaxed))
        .map(|t| t.depth.load(Relaxed).max(0))
        .sum();
    let enters = ENTERS.load(Relaxed) as i64;
    let exits = EXITS.load(Relaxed) as i64;
    (open as u64, enters - exits - open)
}

/// The type and method the managed probes call: `int64 Add(int64&, int64)`.
const INTERLOCKED: &str = "System.Threading.Interlocked";
const ADD: &str = "Add";

/// What the probes are (`ILREWRITE_PROBES`, or the `probes` option).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probes {
    /// `Interlocked.Add(ref counter, 1)` on the counter's native address.
    Managed,
    /// `calli` of a native function.
    Native,
    /// No probe: the try/finally alone.
    None,
}

impl Probes {
    pub const EXPECTED: &str = "managed, native or none";

    pub fn parse(name: &str) -> Option<Probes> {
        match name {
            "managed" => Some(Probes::Managed),
            "native" => Some(Probes::Native),
            "none" => Some(Probes::None),
            _ => None,
        }
    }
}

/// A call of a native counter (`unmanaged cdecl void()`, from its type).
fn native_call(function: extern "C" fn()) -> NativeCall {
    NativeCall::new(function)
}

/// `Interlocked.Add(ref *counter, 1)`, its result dropped: `ldc.i8 address; conv.i;
/// ldc.i4.1; conv.i8; call <token 0>; pop`. The address is a native int where the
/// method takes an `int64&`, which the JIT accepts (unverifiable code); the counter is a
/// static, so the address stays valid and the garbage collector ignores it.
fn interlocked_add(counter: &'static AtomicU64) -> Snippet {
    let mut b = Snippet::builder();
    b.push(Instruction::ldc_i8(counter.as_ptr() as usize as i64));
    b.push(Instruction::simple(OpCode::ConvI));
    b.push(Instruction::ldc_i4(1));
    b.push(Instruction::simple(OpCode::ConvI8));
    b.token(OpCode::Call, 0);
    b.push(Instruction::simple(OpCode::Pop));
    b.finish().expect("a valid snippet")
}

/// Where `Probes::None`'s finally stores its byte.
static SINK: AtomicU8 = AtomicU8::new(0);

/// `*SINK = 1` through its native address: a finally that is not empty.
fn store_byte() -> Snippet {
    let mut b = Snippet::builder();
    b.push(Instruction::ldc_i8(SINK.as_ptr() as usize as i64));
    b.push(Instruction::simple(OpCode::ConvI));
    b.push(Instruction::ldc_i4(1));
    b.push(Instruction::simple(OpCode::StindI1));
    b.finish().expect("a valid snippet")
}

/// The instrumentation the probes make, shared by every JIT thread.
fn counters(probes: Probes) -> Instrumentation {
    let (entry, exit) = match probes {
        Probes::Managed => (interlocked_add(&ENTERS), interlocked_add(&EXITS)),
        Probes::Native => {
            let call = |f| native_call(f).snippet(&[]).expect("a valid snippet");
            (call(on_enter), call(on_exit))
        }
        Probes::None => (Snippet::default(), store_byte()),
    };
    Instrumentation::new(InstrumentationCode {
        entry,
        exit,
        ..Default::default()
    })
    .expect("the counters name no return-value local")
}

/// What a module's probes need, defined when it loads: `wrap`'s data item on the
/// module.
#[derive(Debug)]
struct ModuleProbes {
    /// The token the probes name (the method or the `calli` signature), or why the
    /// module has none.
    token: Result<mdToken, String>,
    /// The methods the probes call, never wrapped (a wrapped one would call itself):
    /// `Interlocked`'s, in the core library, with managed probes.
    own: Vec<mdToken>,
}

impl Drop for ModuleProbes {
    fn drop(&mut self) {
        ITEMS_DROPPED.fetch_add(1, Relaxed);
    }
}

impl ModuleProbes {
    /// Defines (or finds) in `metadata` what `probes` need.
    fn define(metadata: &ModuleMetadata, probes: Probes) -> ModuleProbes {
        match probes {
            Probes::Managed => {
                let add = MethodSig::new(
                    TypeSig::I8,
                    vec![TypeSig::ByRef(Box::new(TypeSig::I8)), TypeSig::I8],
                );
                let token = metadata
                    .method_in(&AssemblyName::CORE_LIBRARY, INTERLOCKED, ADD, &add)
                    .map(|method| method.token());
                let own = match token {
                    Ok(token) if token >> 24 == 0x06 => metadata
                        .find_type_def(INTERLOCKED)
                        .ok()
                        .flatten()
                        .and_then(|ty| metadata.methods_of(ty).ok())
                        .unwrap_or_default(),
                    _ => Vec::new(),
                };
                ModuleProbes {
                    token: token.map_err(|e| e.to_string()),
                    own,
                }
            }
            Probes::Native => ModuleProbes {
                // Both counters have the same signature: one token.
                token: native_call(on_enter)
                    .signature_token(metadata)
                    .map_err(|e| e.to_string()),
                own: Vec::new(),
            },
            Probes::None => ModuleProbes {
                token: Ok(0),
                own: Vec::new(),
            },
        }
    }
}

/// `wrap`: wraps every method that passes its filter in try/finally (single-ret,
/// return-value local), with entry and exit probes counting into [`ENTERS`] and
/// [`EXITS`]. Tail calls stay tail calls; a method whose tail call cannot be kept, or
/// with `jmp`, is refused and keeps its original IL.
#[derive(Debug)]
pub struct Wrap {
    pub filter: Filtered,
    default_probes: Probes,
    probes: OnceLock<(Probes, Instrumentation)>,
    /// Module data items made.
    pub items_made: AtomicU64,
}

impl Wrap {
    pub fn new(filter: Option<String>, probes: Probes) -> Wrap {
        Wrap {
            filter: Filtered::new(filter),
            default_probes: probes,
            probes: OnceLock::new(),
            items_made: AtomicU64::new(0),
        }
    }

    /// The probes it runs (its `probes` option, else `ILREWRITE_PROBES`).
    pub fn probes(&self) -> Probes {
        self.probes.get().map_or(self.default_probes, |(p, _)| *p)
    }
}

impl Profiler for Wrap {}

impl InstrumentationMethod for Wrap {
    fn name(&self) -> &str {
        "wrap"
    }
    fn events(&self) -> Events {
        SEE_EVERY_METHOD
    }
    fn options(&self) -> &[OptionSpec] {
        const OPTIONS: [OptionSpec; 2] = [FILTER, OptionSpec::new("probes", OptionKind::String)];
        &OPTIONS
    }
    fn start(&self, start: &Start<'_>) -> Result<(), MethodError> {
        let options = start.options();
        let probes = match options.string("probes") {
            None => self.default_probes,
            Some(name) => Probes::parse(name).ok_or_else(|| {
                let why = format!("{name:?} is not a kind of probes ({})", Probes::EXPECTED);
                options.invalid("probes", &why).to_string()
            })?,
        };
        self.filter.start(start);
        let _ = self.probes.set((probes, counters(probes)));
        Ok(())
    }
    fn module_loaded(&self, module: &ModuleLoad<'_>) -> Result<(), MethodError> {
        let probes = ModuleProbes::define(module.module().metadata(), self.probes());
        self.items_made.fetch_add(1, Relaxed);
        module.set_item(probes);
        Ok(())
    }
    fn wants(&self, method: &Candidate<'_>) -> Interest {
        match !self.refuses(method) && self.filter.passes(method) {
            true => Interest::Edit,
            false => Interest::No,
        }
    }
    /// The methods the probes call: wrapped, they would call themselves (also when a
    /// dial request names them).
    fn refuses(&self, method: &Candidate<'_>) -> bool {
        method
            .module_item::<ModuleProbes>()
            .is_some_and(|p| p.own.contains(&method.token()))
    }
    fn edit(
        &self,
        body: &mut MethodBody,
        method: &mut MethodEdit<'_, '_>,
    ) -> ilrewrite::Result<bool> {
        let unencodable = |what| ilrewrite::Error::Unencodable { what };
        let probes = method.module_item::<ModuleProbes>().ok_or(unencodable(
            "the module's load was not seen: no probes defined",
        ))?;
        let token = *probes
            .token
            .as_ref()
            .map_err(|_| unencodable("the probes' token could not be defined in this module"))?;
        let (_, instrumentation) = self.probes.get().ok_or(unencodable("wrap did not start"))?;
        instrumentation.edit(body, method.rewrite(), &[token])
    }
}

//! `calls`: counts the calls of the methods its targets name, through a native probe at
//! each target's entry, with ReadyToRun code kept (the targets are found by name when
//! their modules load, and re-JIT-compiled in precompiled modules before their first
//! call).
//!
//! Options: `targets` (selectors, required); `window` (a type's full name, optional):
//! calls of that type's `Open` and `Close` open and close a counting window on the
//! calling thread, so that a test counts exactly the calls its own code makes, away
//! from the framework's calls at start-up.
//!
//! At shutdown, one line per target method (by name, every module and instantiation
//! together): `ilrewrite: calls NAME window N total N`.

use std::cell::Cell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, OnceLock, PoisonError};

use ilrewrite::Instruction;
use ilrewrite::body::MethodBody;
use ilrewrite::clr::sys::mdSignature;
use ilrewrite::clr::{
    Instrumentation, InstrumentationMethod, MethodEdit, MethodError, ModuleLoad, NativeCall,
    OptionKind, OptionSpec, Profiler, Start, log,
};
use ilrewrite::selector::Selector;
use ilrewrite::transform::{InstrumentationCode, Snippet};

/// The most distinct target names counted; calls of more are counted as `overflow`.
const MOST: usize = 4096;
/// The probe's argument for `Open` and `Close` of the window type.
const OPEN: i32 = -1;
const CLOSE: i32 = -2;

thread_local! {
    /// Whether a window is open on this thread.
    static WINDOW: Cell<bool> = const { Cell::new(false) };
}

/// Calls per target id, all and in a window.
static TOTAL: [AtomicU64; MOST] = [const { AtomicU64::new(0) }; MOST];
static IN_WINDOW: [AtomicU64; MOST] = [const { AtomicU64::new(0) }; MOST];
/// Calls with an id past [`MOST`].
pub static OVERFLOW: AtomicU64 = AtomicU64::new(0);

/// The probe: counts call `id`, or opens or closes the thread's window.
extern "C" fn called(id: i32) {
    match id {
        OPEN => WINDOW.set(true),
        CLOSE => WINDOW.set(false),
        _ => match usize::try_from(id).ok().filter(|&i| i < MOST) {
            Some(i) => {
                TOTAL[i].fetch_add(1, Relaxed);
                if WINDOW.get() {
                    IN_WINDOW[i].fetch_add(1, Relaxed);
                }
            }
            None => {
                OVERFLOW.fetch_add(1, Relaxed);
            }
        },
    }
}

fn probe() -> NativeCall {
    NativeCall::new(called as extern "C" fn(i32))
}

/// The module's token of the probe's signature.
struct ProbeToken(mdSignature);

/// `calls` (see the module documentation).
#[derive(Default)]
pub struct Calls {
    targets: OnceLock<Vec<Selector>>,
    window: OnceLock<Option<String>>,
    /// Target names, by id.
    names: Mutex<(Vec<String>, HashMap<String, i32>)>,
}

impl Calls {
    /// The id of the method named `name` (made at its first edit).
    fn id(&self, name: &str) -> i32 {
        let mut names = self.names.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(&id) = names.1.get(name) {
            return id;
        }
        let id = i32::try_from(names.0.len()).unwrap_or(i32::MAX);
        names.0.push(name.to_owned());
        names.1.insert(name.to_owned(), id);
        id
    }

    /// One line per target method called or edited: `NAME window N total N`.
    pub fn lines(&self) -> Vec<String> {
        let names = self.names.lock().unwrap_or_else(PoisonError::into_inner);
        names
            .0
            .iter()
            .enumerate()
            .filter(|(id, _)| *id < MOST)
            .map(|(id, name)| {
                format!(
                    "{name} window {} total {}",
                    IN_WINDOW[id].load(Relaxed),
                    TOTAL[id].load(Relaxed)
                )
            })
            .collect()
    }
}

impl Profiler for Calls {}

impl InstrumentationMethod for Calls {
    fn name(&self) -> &str {
        "calls"
    }

    fn options(&self) -> &[OptionSpec] {
        const OPTIONS: [OptionSpec; 2] = [
            OptionSpec::new("targets", OptionKind::Selectors),
            OptionSpec::new("window", OptionKind::String),
        ];
        &OPTIONS
    }

    fn start(&self, start: &Start<'_>) -> Result<(), MethodError> {
        let options = start.options();
        let mut targets = options
            .selectors("targets")
            .ok_or("option `targets` (the methods to count) is required")?
            .to_vec();
        let window = options.string("window").map(str::to_owned);
        if let Some(window) = &window {
            targets.push(Selector::parse(&format!("{window}::Open")).map_err(|e| e.to_string())?);
            targets.push(Selector::parse(&format!("{window}::Close")).map_err(|e| e.to_string())?);
        }
        let _ = self.targets.set(targets);
        let _ = self.window.set(window);
        Ok(())
    }

    fn targets(&self) -> Vec<Selector> {
        self.targets.get().cloned().unwrap_or_default()
    }

    fn module_loaded(&self, module: &ModuleLoad<'_>) -> Result<(), MethodError> {
        if module.targets().is_empty() {
            return Ok(());
        }
        let token = probe().signature_token(module.module().metadata())?;
        module.set_item(ProbeToken(token));
        Ok(())
    }

    fn edit(
        &self,
        body: &mut MethodBody,
        method: &mut MethodEdit<'_, '_>,
    ) -> ilrewrite::Result<bool> {
        let missing = ilrewrite::Error::Unencodable {
            what: "the module has no probe token",
        };
        let token = method.module_item::<ProbeToken>().ok_or(missing)?;
        let name = method.name();
        let window = self.window.get().and_then(Option::as_deref);
        let id = match name.rsplit_once("::") {
            Some((owner, "Open")) if Some(owner) == window => OPEN,
            Some((owner, "Close")) if Some(owner) == window => CLOSE,
            _ => self.id(&name),
        };
        let mut entry = Snippet::builder();
        entry.push(Instruction::ldc_i4(id));
        probe().push(&mut entry, 0);
        let code = Instrumentation::new(InstrumentationCode {
            entry: entry.finish()?,
            ..Default::default()
        })?;
        code.edit(body, method.rewrite(), &[token.0])
            .inspect_err(|e| {
                log::write(&format!("calls: {name}: {e}"));
            })
    }
}

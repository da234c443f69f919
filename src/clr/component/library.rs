//! [`LibraryMethod`]: an instrumentation method in a shared library of its own, loaded
//! through the C ABI of `include/ilrewrite_method.h`, and hosted by the manager as any
//! other.

use core::cell::RefCell;
use core::ffi::{CStr, c_char, c_void};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use super::abi::{
    ABI_VERSION, CREATE_SYMBOL, CreateFn, E_REFUSED, ErrorBuffer, MethodApi, OK, OPTION_BOOLEAN,
    OPTION_INTEGER, OPTION_SELECTORS, OPTION_STRING, OPTION_STRINGS, OptionSpecC, Status,
    VERSION_SYMBOL, WANT_EDIT, WANT_EDIT_SINGLE_RET,
};
use super::context::{Library, lend_candidate, lend_edit, lend_module, lend_options};
use super::subscriptions::subscriptions;
use super::table::host_api;
use crate::analysis::{MaxStackMode, ReturnKind, StackAnalyzer};
use crate::body::{ClauseKind, MethodBody};
use crate::clr::host::{
    Candidate, Events, InstrumentationMethod, Interest, MethodEdit, MethodError, ModuleLoad,
    OptionKind, OptionSpec, Options, Start,
};
use crate::clr::profiler::{Callback, Callbacks};
use crate::clr::rewrite::pipeline::tail_calls_return;
use crate::graph::{InstrId, Operand};
use crate::opcode::{Flow, OpCode};
use crate::selector::Selector;
use crate::sig::summarize_method_sig;

/// Why a library could not be loaded as an instrumentation method: nothing of it ran
/// but what the reason says.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// The system loader refused it (missing file, not a shared library, a missing
    /// dependency).
    #[error("{}: cannot load: {reason}", .path.display())]
    Load {
        /// The library.
        path: PathBuf,
        /// The loader's reason.
        reason: String,
    },
    /// A symbol of the ABI is not exported.
    #[error("{}: no symbol `{symbol}` (not an ilrewrite instrumentation method library)", .path.display())]
    MissingSymbol {
        /// The library.
        path: PathBuf,
        /// The symbol.
        symbol: &'static str,
    },
    /// It speaks another version of the ABI; nothing of it was called.
    #[error("{}: ABI version {found}, this profiler speaks version {expected}", .path.display())]
    Version {
        /// The library.
        path: PathBuf,
        /// Its `ilrewrite_abi_version`.
        found: u32,
        /// The version this crate speaks (`ILR_ABI_VERSION` of `include/ilrewrite_method.h`).
        expected: u32,
    },
    /// `ilrewrite_method_create` failed, or what it gave is not usable (no name, an
    /// option of an unknown kind, a string that is not UTF-8, a subscription to a
    /// callback the C ABI does not carry or that is no callback, a subscription
    /// without a `callback` function, an event flag this crate does not know).
    #[error("{}: {reason}", .path.display())]
    Create {
        /// The library.
        path: PathBuf,
        /// Why.
        reason: String,
    },
}

/// An instrumentation method in a library of its own. What it declares (name, default
/// priority, options, the callbacks it subscribes to and the events it asks for) is
/// read once when it is loaded; its `start`, `check_options`, `wants` and `edit` are
/// called through the library's function table, each with handles valid only during
/// that call (a library that keeps one gets `ILR_E_INVALID_HANDLE` later, not undefined
/// behaviour), and each callback it subscribes to reaches its `callback` function (its
/// [`Profiler`](crate::clr::Profiler) methods). Its `destroy` runs when the last
/// reference to it goes, then the library is unloaded.
pub struct LibraryMethod {
    name: String,
    path: PathBuf,
    options: Vec<OptionSpec>,
    /// Its `callbacks`, read at load.
    callbacks: Callbacks,
    /// Its `events` and `events_high`, read at load.
    events: Events,
    /// What its `targets` gave after `start`.
    targets: OnceLock<Vec<Selector>>,
    api: MethodApi,
    /// Kept loaded while `api`'s functions may be called (and by each of its data
    /// items, whose destructors are its code); dropped last.
    library: Library,
}

// SAFETY: the ABI makes a library's functions free-threaded (the header's contract:
// "the library does its own locking"); `api.this` is the library's state, only ever
// passed back to those functions; the rest is owned data.
unsafe impl Send for LibraryMethod {}
// SAFETY: as for `Send`: nothing here is mutated after loading but through the
// library's free-threaded functions.
unsafe impl Sync for LibraryMethod {}

impl core::fmt::Debug for LibraryMethod {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("LibraryMethod")
            .field("name", &self.name)
            .field("path", &self.path)
            .field("priority", &self.api.priority)
            .finish_non_exhaustive()
    }
}

/// A message buffer for the library to fill: on the stack, so that a call costs no
/// allocation (the text is read only when the call failed).
struct Message {
    bytes: [u8; 1024],
    length: usize,
}

impl Message {
    fn new() -> Message {
        Message {
            bytes: [0; 1024],
            length: 0,
        }
    }

    /// The `ilr_error` the library writes to, valid while `self` is borrowed.
    fn buffer(&mut self) -> ErrorBuffer {
        ErrorBuffer {
            data: self.bytes.as_mut_ptr().cast(),
            capacity: self.bytes.len(),
            length: 0,
        }
    }

    /// Keeps the length the library set in `buffer`.
    fn written(&mut self, buffer: &ErrorBuffer) {
        self.length = buffer.length.min(self.bytes.len());
    }

    /// What the library wrote (at most the capacity, lossily UTF-8).
    fn text(&self) -> String {
        match self.length {
            0 => "no message".to_owned(),
            n => String::from_utf8_lossy(&self.bytes[..n]).into_owned(),
        }
    }
}

/// A NUL-terminated UTF-8 string of the library, or why not.
///
/// # Safety
/// `text` is null or points to a NUL-terminated string that outlives the result.
unsafe fn library_str<'a>(text: *const c_char, what: &str) -> Result<&'a str, String> {
    if text.is_null() {
        return Err(format!("no {what}"));
    }
    // SAFETY: non-null and NUL-terminated by the caller's contract.
    unsafe { CStr::from_ptr(text) }
        .to_str()
        .map_err(|_| format!("its {what} is not UTF-8"))
}

impl LibraryMethod {
    /// Loads the library at `path`: checks its `ilrewrite_abi_version` before calling
    /// anything of it, then calls its `ilrewrite_method_create` with the host's table
    /// and reads what it declares.
    ///
    /// # Errors
    /// A library the system cannot load, a missing symbol, another ABI version (nothing
    /// of the library called), a failed `create` (its message), a name, option name or
    /// option kind that is not usable.
    pub fn load(path: &Path) -> Result<LibraryMethod, LoadError> {
        let path = path.to_path_buf();
        // SAFETY: loading runs the library's initializers: the configuration that
        // names it vouches for the library (as CORECLR_PROFILER_PATH does for ours).
        let library = unsafe { libloading::Library::new(&path) }.map_err(|e| LoadError::Load {
            path: path.clone(),
            reason: e.to_string(),
        })?;
        let missing = |symbol: &'static str| LoadError::MissingSymbol {
            path: path.clone(),
            symbol,
        };
        // SAFETY: the symbol is declared `const uint32_t` by the ABI; its address is
        // read as such, without calling anything.
        let found = unsafe {
            let version = library
                .get::<*const u32>(VERSION_SYMBOL)
                .map_err(|_| missing("ilrewrite_abi_version"))?;
            (*version).read()
        };
        if found != ABI_VERSION {
            return Err(LoadError::Version {
                path,
                found,
                expected: ABI_VERSION,
            });
        }
        // SAFETY: the ABI declares the symbol with this signature.
        let create: CreateFn = unsafe {
            *library
                .get::<CreateFn>(CREATE_SYMBOL)
                .map_err(|_| missing("ilrewrite_method_create"))?
        };
        let mut api = MethodApi {
            size: u32::try_from(size_of::<MethodApi>()).unwrap_or(u32::MAX),
            this: core::ptr::null_mut(),
            name: core::ptr::null(),
            priority: 0,
            options: core::ptr::null(),
            option_count: 0,
            start: None,
            check_options: None,
            wants: None,
            edit: None,
            destroy: None,
            targets: None,
            module_loaded: None,
            events: 0,
            events_high: 0,
            callbacks: [0; 2],
            callback: None,
        };
        let mut message = Message::new();
        let mut buffer = message.buffer();
        // SAFETY: the host table is 'static; `api` and the buffer are valid for the
        // call; the library fills `api` as the header says.
        let status = unsafe { create(host_api(), &mut api, &mut buffer) };
        message.written(&buffer);
        let failed = |reason: String| LoadError::Create {
            path: path.clone(),
            reason,
        };
        if status != OK {
            return Err(failed(format!(
                "ilrewrite_method_create failed (status {status}): {}",
                message.text()
            )));
        }
        // From here on, a refusal must still let the library free what it made.
        let method = LibraryMethod {
            name: String::new(),
            path: path.clone(),
            options: Vec::new(),
            callbacks: Callbacks::empty(),
            events: Events::default(),
            targets: OnceLock::new(),
            api,
            library: Arc::new(library),
        };
        method.declared().map_err(failed)
    }

    /// This method with its name, options, callbacks and events read from its table.
    fn declared(mut self) -> Result<LibraryMethod, String> {
        // SAFETY: the ABI makes `name` a NUL-terminated string valid until `destroy`.
        self.name = unsafe { library_str(self.api.name, "name") }?.to_owned();
        if self.name.is_empty() {
            return Err("its name is empty".to_owned());
        }
        (self.callbacks, self.events) = subscriptions(&self.api)?;
        let count = self.api.option_count as usize;
        if count > 0 && self.api.options.is_null() {
            return Err(format!("{count} options, and no table of them"));
        }
        let specs: &[OptionSpecC] = match count {
            0 => &[],
            // SAFETY: non-null, `option_count` entries valid until `destroy` (the ABI).
            _ => unsafe { core::slice::from_raw_parts(self.api.options, count) },
        };
        for spec in specs {
            // SAFETY: as the name.
            let name = unsafe { library_str(spec.name, "option name") }?;
            let kind = match spec.kind {
                OPTION_INTEGER => OptionKind::Integer,
                OPTION_BOOLEAN => OptionKind::Boolean,
                OPTION_STRING => OptionKind::String,
                OPTION_STRINGS => OptionKind::Strings,
                OPTION_SELECTORS => OptionKind::Selectors,
                other => return Err(format!("option `{name}` of unknown kind {other}")),
            };
            if self.options.iter().any(|o| o.name == name) {
                return Err(format!("option `{name}` declared twice"));
            }
            // Option names are `&'static str` in the crate: one per option of a loaded
            // library, once per process (a library is loaded once).
            let name: &'static str = Box::leak(name.to_owned().into_boxed_str());
            self.options.push(OptionSpec::new(name, kind));
        }
        Ok(self)
    }

    /// [`LibraryMethod::load`] in the shape
    /// [`Manager::configured_with_loader`](crate::clr::Manager::configured_with_loader)
    /// takes: a profiler that passes it loads the libraries its configuration names.
    ///
    /// # Errors
    /// Those of [`LibraryMethod::load`], in words.
    pub fn loader(path: &Path) -> Result<Arc<dyn InstrumentationMethod>, String> {
        LibraryMethod::load(path)
            .map(|method| Arc::new(method) as Arc<dyn InstrumentationMethod>)
            .map_err(|e| e.to_string())
    }

    /// The library it came from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Calls the library's `callback` with `callback`'s id and `args`; its answer (1
    /// unless it wrote another). Without a `callback` function (then it subscribed to
    /// nothing: refused at load), 1.
    pub(super) fn call(&self, callback: Callback, args: &[u64]) -> i32 {
        let mut answer = 1i32;
        if let Some(function) = self.api.callback {
            // At most twelve words (`callbacks.rs`): the count fits.
            let count = args.len() as u32;
            // SAFETY: the library's function, with its state, `count` words valid for
            // the call and an out-parameter valid for it.
            unsafe {
                function(
                    self.api.this,
                    callback as u32,
                    args.as_ptr(),
                    count,
                    &mut answer,
                )
            };
        }
        answer
    }

    /// `error` as the crate's, naming this method.
    fn error(&self, status: Status, message: &Message) -> MethodError {
        MethodError::Reason(format!(
            "{} ({}): status {status}: {}",
            self.name,
            self.path.display(),
            message.text()
        ))
    }

    /// Calls an optional `fn(self, options, error)` of the library.
    fn with_options(
        &self,
        function: Option<unsafe extern "C" fn(*mut c_void, u64, *mut ErrorBuffer) -> Status>,
        options: &Options,
    ) -> Result<(), MethodError> {
        let Some(function) = function else {
            return Ok(());
        };
        let mut message = Message::new();
        let mut buffer = message.buffer();
        let status = lend_options(options, |handle| {
            // SAFETY: the library's function, with its state, a handle lent for this
            // call, and a buffer valid for it.
            unsafe { function(self.api.this, handle, &mut buffer) }
        });
        message.written(&buffer);
        match status {
            OK => Ok(()),
            _ => Err(self.error(status, &message)),
        }
    }
}

impl LibraryMethod {
    /// Its targets, from the library's `targets` (none when it has no such function),
    /// each read by [`Selector::parse`].
    fn read_targets(&self) -> Result<Vec<Selector>, MethodError> {
        let Some(targets) = self.api.targets else {
            return Ok(Vec::new());
        };
        let mut selectors: *const *const c_char = core::ptr::null();
        let mut count = 0u32;
        let mut message = Message::new();
        let mut buffer = message.buffer();
        // SAFETY: the library's function with its state and out-parameters and a buffer
        // valid for the call.
        let status = unsafe { targets(self.api.this, &mut selectors, &mut count, &mut buffer) };
        message.written(&buffer);
        if status != OK {
            return Err(self.error(status, &message));
        }
        if count > 0 && selectors.is_null() {
            return Err(format!("{}: {count} targets, and no array of them", self.name).into());
        }
        let items: &[*const c_char] = match count {
            0 => &[],
            // SAFETY: non-null, `count` entries valid until `destroy` (the ABI).
            _ => unsafe { core::slice::from_raw_parts(selectors, count as usize) },
        };
        items
            .iter()
            .enumerate()
            .map(|(i, &text)| {
                // SAFETY: each a NUL-terminated string valid until `destroy` (the ABI).
                let text = unsafe { library_str(text, "target") }
                    .map_err(|why| format!("{}: target {i}: {why}", self.name))?;
                Selector::parse(text)
                    .map_err(|e| format!("{}: target {i} ({text:?}): {e}", self.name).into())
            })
            .collect()
    }
}

#[cfg(all(test, unix))]
impl LibraryMethod {
    /// A method of the table `api` of functions of this process (the tests' own), read
    /// as [`LibraryMethod::load`] reads a library's.
    pub(super) fn of_table(api: MethodApi) -> Result<LibraryMethod, String> {
        LibraryMethod {
            name: String::new(),
            path: PathBuf::from("(this process)"),
            options: Vec::new(),
            callbacks: Callbacks::empty(),
            events: Events::default(),
            targets: OnceLock::new(),
            api,
            library: Arc::new(libloading::os::unix::Library::this().into()),
        }
        .declared()
    }
}

impl Drop for LibraryMethod {
    fn drop(&mut self) {
        if let Some(destroy) = self.api.destroy {
            // SAFETY: the last use of the library's state: no call can be in flight (a
            // call holds a reference to this method).
            unsafe { destroy(self.api.this) };
        }
    }
}

impl InstrumentationMethod for LibraryMethod {
    fn name(&self) -> &str {
        &self.name
    }

    fn priority(&self) -> i32 {
        self.api.priority
    }

    fn options(&self) -> &[OptionSpec] {
        &self.options
    }

    fn events(&self) -> Events {
        self.events
    }

    fn callbacks(&self) -> Callbacks {
        self.callbacks
    }

    fn start(&self, start: &Start<'_>) -> Result<(), MethodError> {
        self.with_options(self.api.start, start.options())?;
        let targets = self.read_targets()?;
        let _ = self.targets.set(targets);
        Ok(())
    }

    fn targets(&self) -> Vec<Selector> {
        self.targets.get().cloned().unwrap_or_default()
    }

    fn module_loaded(&self, module: &ModuleLoad<'_>) -> Result<(), MethodError> {
        let Some(loaded) = self.api.module_loaded else {
            return Ok(());
        };
        let mut message = Message::new();
        let mut buffer = message.buffer();
        let status = lend_module(module, &self.library, |handle| {
            // SAFETY: the library's function, with its state, a handle lent for the
            // call, and a buffer valid for it.
            unsafe { loaded(self.api.this, handle, &mut buffer) }
        });
        message.written(&buffer);
        match status {
            OK => Ok(()),
            _ => Err(self.error(status, &message)),
        }
    }

    fn check_options(&self, options: &Options) -> Result<(), MethodError> {
        self.with_options(self.api.check_options, options)
    }

    fn wants(&self, method: &Candidate<'_>) -> Interest {
        let Some(wants) = self.api.wants else {
            // With targets and no `wants`: it edits them all.
            return match method.is_target() {
                true => Interest::Edit,
                false => Interest::No,
            };
        };
        // SAFETY: the library's function, with its state and a handle lent for the call.
        let answer = lend_candidate(method, |handle| unsafe { wants(self.api.this, handle) });
        // ILR_WANT_NO, and any other answer: no.
        match answer {
            WANT_EDIT => Interest::Edit,
            WANT_EDIT_SINGLE_RET => Interest::EditSingleRet,
            _ => Interest::No,
        }
    }

    fn edit(
        &self,
        body: &mut MethodBody,
        method: &mut MethodEdit<'_, '_>,
    ) -> crate::error::Result<bool> {
        let Some(edit) = self.api.edit else {
            return Ok(false);
        };
        let mut changed = 0i32;
        let mut message = Message::new();
        let mut buffer = message.buffer();
        // The host's functions insert code and add locals: the body was touched when
        // it has more instructions, or the method other locals, than before the call.
        let before = (body.instrs.len(), method.rewrite().checkpoint().0);
        let status = lend_edit(body, method, &self.library, |handle| {
            // SAFETY: the library's function, with its state, a handle lent for the
            // call, and an out-parameter and buffer valid for it.
            unsafe { edit(self.api.this, handle, &mut changed, &mut buffer) }
        });
        message.written(&buffer);
        if status != OK {
            return Err(crate::error::Error::Foreign {
                library: self.name.clone(),
                status,
                message: message.text(),
            });
        }
        // What the library left is verified now, whatever it says it changed, so that
        // an edit the host cannot verify is rolled back alone (the pipeline verifies
        // only the result of every method's edits, and would drop them all).
        let touched = (body.instrs.len(), method.rewrite().checkpoint().0) != before;
        if touched {
            verify(body, method).map_err(|e| crate::error::Error::Foreign {
                library: self.name.clone(),
                status: E_REFUSED,
                message: format!("its edit does not verify: {e}"),
            })?;
        }
        Ok(changed != 0 || touched)
    }
}

/// Verifies `body` as the pipeline does before it hands a body over: its stack (the
/// exact max stack set), its clauses, its tail calls. The stack is then marked
/// verified for `method`, so that the pipeline does not analyse it again unless a
/// later edit follows.
fn verify(body: &mut MethodBody, method: &mut MethodEdit<'_, '_>) -> crate::error::Result<()> {
    thread_local! {
        static ANALYZER: RefCell<StackAnalyzer> = RefCell::new(StackAnalyzer::new());
    }
    let rewrite = method.rewrite();
    let sig = summarize_method_sig(rewrite.signature()?)?;
    let returns = ReturnKind::value_if(sig.returns_value);
    let resolver = rewrite.module.resolver();
    let analyze = |analyzer: &mut StackAnalyzer, body: &mut MethodBody| {
        analyzer
            .apply_max_stack(body, resolver, MaxStackMode::Compute, returns)
            .map(drop)
    };
    ANALYZER
        .try_with(|a| match a.try_borrow_mut() {
            Ok(mut analyzer) => analyze(&mut analyzer, body),
            Err(_) => analyze(&mut StackAnalyzer::new(), body),
        })
        .unwrap_or_else(|_| analyze(&mut StackAnalyzer::new(), body))?;
    body.validate_clauses()?;
    tail_calls_return(body)?;
    rethrow_in_catch(body)?;
    exception_regions_respected(body)?;
    rewrite.stack_verified();
    Ok(())
}

/// Every transfer of control in `body` (a branch, a `switch` target, a `leave`, a
/// fall-through) enters a protected block only at its first instruction, enters no
/// handler or filter (only an exception does), and leaves a region only by `leave`
/// (out of a protected block or a catch handler); no `localloc` is in a handler or
/// filter. As the JIT requires: the stack analysis checks the entries of catch
/// handlers and filters, not these.
fn exception_regions_respected(body: &MethodBody) -> crate::error::Result<()> {
    if body.clauses.is_empty() {
        return Ok(());
    }
    let order: Vec<InstrId> = body.instrs.ids().collect();
    let position: std::collections::HashMap<InstrId, usize> =
        order.iter().enumerate().map(|(p, &id)| (id, p)).collect();
    let at = |id: InstrId| position.get(&id).copied().unwrap_or(usize::MAX);
    /// A region: its first and last positions, whether it is a protected block, and
    /// whether `leave` may exit it.
    struct Region {
        first: usize,
        last: usize,
        is_try: bool,
        leave_exits: bool,
    }
    let mut regions = Vec::new();
    for c in &body.clauses {
        regions.push(Region {
            first: at(c.try_start),
            last: at(c.try_last),
            is_try: true,
            leave_exits: true,
        });
        regions.push(Region {
            first: at(c.handler_start),
            last: at(c.handler_last),
            is_try: false,
            leave_exits: matches!(c.kind, ClauseKind::Catch(_) | ClauseKind::Filter(_)),
        });
        if let ClauseKind::Filter(start) = c.kind {
            regions.push(Region {
                first: at(start),
                last: at(c.handler_start).saturating_sub(1),
                is_try: false,
                leave_exits: false,
            });
        }
    }
    let illegal = |what: &'static str| crate::error::Error::Unsupported { what };
    let mut targets: Vec<usize> = Vec::new();
    for (from, &id) in order.iter().enumerate() {
        let instruction = body.instrs.get(id);
        let flow = instruction.opcode.flow();
        targets.clear();
        match instruction.operand {
            Operand::Target(to) => targets.push(at(to)),
            Operand::Switch(table) => {
                targets.extend(body.instrs.switch_targets(table).iter().map(|&to| at(to)))
            }
            _ => {}
        }
        if flow.falls_through() && from + 1 < order.len() {
            targets.push(from + 1);
        }
        if instruction.opcode == OpCode::Localloc
            && regions
                .iter()
                .any(|r| !r.is_try && (r.first..=r.last).contains(&from))
        {
            return Err(illegal("localloc in a handler or filter"));
        }
        let leave = flow == Flow::Leave;
        for &to in &targets {
            for r in &regions {
                let has_from = (r.first..=r.last).contains(&from);
                let has_to = (r.first..=r.last).contains(&to);
                if has_to && !has_from && !(r.is_try && to == r.first) {
                    return Err(illegal(
                        "a transfer of control into a protected block past its first instruction, or into a handler or filter",
                    ));
                }
                if has_from && !has_to && !(leave && r.leave_exits) {
                    return Err(illegal(
                        "a transfer of control out of a protected block, handler or filter other than by leave",
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Every `rethrow` of `body` inside the handler of a catch or filter clause, as the JIT
/// requires (the stack analysis takes it as a `throw`).
fn rethrow_in_catch(body: &MethodBody) -> crate::error::Result<()> {
    if !body.instrs.opcodes().any(|(_, op)| op == OpCode::Rethrow) {
        return Ok(());
    }
    let position: std::collections::HashMap<InstrId, usize> = body
        .instrs
        .ids()
        .enumerate()
        .map(|(p, id)| (id, p))
        .collect();
    let at = |id: InstrId| position.get(&id).copied();
    for (id, op) in body.instrs.opcodes() {
        if op != OpCode::Rethrow {
            continue;
        }
        let p = at(id);
        let inside = body.clauses.iter().any(|c| {
            matches!(c.kind, ClauseKind::Catch(_) | ClauseKind::Filter(_))
                && p.is_some()
                && at(c.handler_start) <= p
                && p <= at(c.handler_last)
        });
        if !inside {
            return Err(crate::error::Error::Unsupported {
                what: "rethrow outside a catch handler",
            });
        }
    }
    Ok(())
}

//! The measuring instrumentation methods: `count` (counts compilations, keeping each
//! method's count as its data item), `identity` (hands every method back re-encoded,
//! unchanged) and `decode` (decodes and encodes, hands nothing back).

use std::cell::RefCell;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use ilrewrite::body::{Encoder, MethodBody};
use ilrewrite::clr::{
    Candidate, Events, InstrumentationMethod, Interest, MethodEdit, MethodError, OptionSpec,
    Profiler, Start,
};

use ilrewrite::{Instruction, OpCode};

use crate::common::{FILTER, SEE_EVERY_METHOD, filter_option, passes};

/// A filter given at construction (from `ILREWRITE_FILTER`), replaced by the `filter`
/// option when a configuration file gives one.
#[derive(Debug, Default)]
pub struct Filtered {
    default: Option<String>,
    chosen: OnceLock<Option<String>>,
}

impl Filtered {
    pub fn new(default: Option<String>) -> Filtered {
        Filtered {
            default,
            chosen: OnceLock::new(),
        }
    }

    pub fn start(&self, start: &Start<'_>) {
        let _ = self
            .chosen
            .set(filter_option(start.options(), &self.default));
    }

    /// Whether a filter was chosen (a method passes no filter: every one).
    pub fn is_set(&self) -> bool {
        self.chosen.get().is_some_and(Option::is_some)
    }

    /// Whether the candidate passes the filter.
    pub fn passes(&self, method: &Candidate<'_>) -> bool {
        let filter = self.chosen.get().and_then(Option::as_deref);
        passes(filter, method.module(), method.token())
    }
}

/// `count`: counts the JIT compilations of the methods that pass its filter and
/// rewrites nothing. Each method's compilations are counted in its data item, which
/// outlives the compilations: `most` is the most compilations of one method (above 1
/// only if the item was kept).
#[derive(Debug, Default)]
pub struct Count {
    pub filter: Filtered,
    /// Compilations counted.
    pub counted: AtomicU64,
    /// Methods counted (data items made).
    pub methods: AtomicU64,
    /// The most compilations of one method.
    pub most: AtomicU64,
}

impl Profiler for Count {}

impl InstrumentationMethod for Count {
    fn name(&self) -> &str {
        "count"
    }
    fn events(&self) -> Events {
        SEE_EVERY_METHOD
    }
    fn options(&self) -> &[OptionSpec] {
        &[FILTER]
    }
    fn start(&self, start: &Start<'_>) -> Result<(), MethodError> {
        self.filter.start(start);
        Ok(())
    }
    fn wants(&self, method: &Candidate<'_>) -> Interest {
        if method.compiling() && self.filter.passes(method) {
            self.counted.fetch_add(1, Relaxed);
            let compilations = match method.method_item::<AtomicU64>() {
                Some(count) => count.fetch_add(1, Relaxed) + 1,
                None => {
                    self.methods.fetch_add(1, Relaxed);
                    method.set_method_item(AtomicU64::new(1));
                    1
                }
            };
            self.most.fetch_max(compilations, Relaxed);
        }
        Interest::No
    }
    fn edit(&self, _: &mut MethodBody, _: &mut MethodEdit<'_, '_>) -> ilrewrite::Result<bool> {
        Ok(false)
    }
}

/// An edit of every method that passes a filter: what [`EveryMethod`] makes.
pub trait BodyEdit: Send + Sync + 'static {
    /// The instrumentation method's name.
    fn name(&self) -> &str;
    /// Edits `body`; whether it changed.
    fn edit(&self, body: &mut MethodBody) -> ilrewrite::Result<bool>;
}

/// The instrumentation method making edit `E` on every method that passes its filter
/// (option `filter`).
#[derive(Debug)]
pub struct EveryMethod<E> {
    pub filter: Filtered,
    pub edit: E,
}

impl<E: BodyEdit> Profiler for EveryMethod<E> {}

impl<E: BodyEdit> InstrumentationMethod for EveryMethod<E> {
    fn name(&self) -> &str {
        self.edit.name()
    }
    fn events(&self) -> Events {
        SEE_EVERY_METHOD
    }
    fn options(&self) -> &[OptionSpec] {
        &[FILTER]
    }
    fn start(&self, start: &Start<'_>) -> Result<(), MethodError> {
        self.filter.start(start);
        Ok(())
    }
    fn wants(&self, method: &Candidate<'_>) -> Interest {
        match self.filter.passes(method) {
            true => Interest::Edit,
            false => Interest::No,
        }
    }
    fn edit(&self, body: &mut MethodBody, _: &mut MethodEdit<'_, '_>) -> ilrewrite::Result<bool> {
        self.edit.edit(body)
    }
}

/// `identity`: every method is decoded, re-encoded and handed to the runtime unchanged.
#[derive(Debug)]
pub struct Identity;

impl BodyEdit for Identity {
    fn name(&self) -> &str {
        "identity"
    }
    fn edit(&self, _: &mut MethodBody) -> ilrewrite::Result<bool> {
        Ok(true)
    }
}

thread_local! {
    /// Each JIT thread's encoder and output buffer.
    static ENCODER: RefCell<(Encoder, Vec<u8>)> = RefCell::new((Encoder::new(), Vec::new()));
}

/// `decode`: every method is decoded and encoded, and nothing is handed over (a
/// measurement: the crate's cost without the runtime's cost of taking a new body).
#[derive(Debug, Default)]
pub struct Decode {
    /// Bodies encoded.
    pub encoded: AtomicU64,
}

impl BodyEdit for Decode {
    fn name(&self) -> &str {
        "decode"
    }
    fn edit(&self, body: &mut MethodBody) -> ilrewrite::Result<bool> {
        ENCODER.with(|e| {
            let (encoder, out) = &mut *e.borrow_mut();
            out.clear();
            encoder.encode(body, out)?;
            self.encoded.fetch_add(1, Relaxed);
            Ok(false)
        })
    }
}

/// `nop`, `nop2`, `nop3`, `nop4`: each inserts one `nop` at the entry of every method:
/// the cheapest real edit, hosted one to four times to measure what each further
/// instrumentation method costs the manager (`clr_bench`).
#[derive(Debug)]
pub struct Nop(pub &'static str);

impl Nop {
    pub const NAMES: [&str; 4] = ["nop", "nop2", "nop3", "nop4"];
}

impl BodyEdit for Nop {
    fn name(&self) -> &str {
        self.0
    }
    fn edit(&self, body: &mut MethodBody) -> ilrewrite::Result<bool> {
        let Some(first) = body.instrs.first() else {
            return Ok(false);
        };
        body.insert_before(
            first,
            Instruction::simple(OpCode::Nop),
            ilrewrite::graph::Incoming::Keep,
        )?;
        Ok(true)
    }
}

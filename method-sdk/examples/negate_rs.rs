//! `negate_rs`: an ilrewrite instrumentation method in Rust, in a library of its own.
//! It turns the `int32` result `x` of every method whose name contains its option
//! `filter` into `-x` (a `neg` before each `ret`). Default priority 5.
//!
//! ```text
//! cargo build --release -p ilrewrite-method --example negate_rs
//! # in the profiler's configuration (examples/engine.rs):
//! [[method]]
//! name = "negate_rs"
//! library = "target/release/examples/libnegate_rs.so"
//! options = { filter = "Answer::Get" }
//! ```
//!
//! Without `filter` (or with an empty one) it edits nothing. No `unsafe`.
use std::sync::OnceLock;

use ilrewrite_method::{
    Candidate, Edit, Error, Instruction, Method, OptionKind, OptionSpec, Options, element_type,
    opcode,
};

/// The options it takes.
const OPTIONS: &[OptionSpec] = &[OptionSpec::new("filter", OptionKind::String)];

/// The method: the filter, read once at `start`.
#[derive(Debug, Default)]
struct NegateRs {
    filter: OnceLock<String>,
}

impl NegateRs {
    fn new() -> NegateRs {
        NegateRs::default()
    }

    /// Whether `name` is one of the methods to edit.
    fn selects(&self, name: &str) -> bool {
        self.filter
            .get()
            .is_some_and(|filter| !filter.is_empty() && name.contains(filter.as_str()))
    }
}

impl Method for NegateRs {
    fn name(&self) -> &str {
        "negate_rs"
    }

    fn priority(&self) -> i32 {
        5
    }

    fn options(&self) -> &[OptionSpec] {
        OPTIONS
    }

    fn start(&self, options: &Options<'_>) -> Result<(), Error> {
        let filter = options.string("filter")?.unwrap_or_default();
        self.filter
            .set(filter.to_owned())
            .map_err(|_| Error::new("negate_rs: started twice"))?;
        options.log(&format!("negate_rs: filter {filter:?}"));
        Ok(())
    }

    fn wants(&self, candidate: &Candidate<'_>) -> bool {
        candidate.name().is_ok_and(|name| self.selects(name))
    }

    fn edit(&self, edit: &mut Edit<'_>) -> Result<bool, Error> {
        // `wants` said yes for the configured options; a live request may bring others.
        let name = edit.name()?;
        if !self.selects(name) || edit.return_type()? != element_type::I4 {
            return Ok(false);
        }
        edit.insert_before_returns(&[Instruction::new(opcode::NEG)])
            .map_err(|status| Error::with_status(status, format!("negate_rs: {name}: {status}")))?;
        Ok(true)
    }
}

ilrewrite_method::export_method!(NegateRs::new);

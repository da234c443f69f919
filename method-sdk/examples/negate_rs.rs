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
//! Without `filter` (or with an empty one) it edits nothing. With `targets` (selectors,
//! `targets = ["Answer::Get"]`) it edits those methods instead, ReadyToRun code
//! included: the host finds them by name. No `unsafe`.
use std::sync::OnceLock;

use ilrewrite_method::{
    Candidate, Edit, Error, Instruction, Method, OptionKind, OptionSpec, Options, Want,
    element_type, opcode,
};

/// The options it takes.
const OPTIONS: &[OptionSpec] = &[
    OptionSpec::new("filter", OptionKind::String),
    OptionSpec::new("targets", OptionKind::Selectors),
];

/// The method: the configured filter, read once at `start` (for `wants`).
#[derive(Debug, Default)]
struct NegateRs {
    filter: OnceLock<String>,
    /// The configured targets, read at `start`.
    targets: OnceLock<Vec<String>>,
}

impl NegateRs {
    fn new() -> NegateRs {
        NegateRs::default()
    }

    /// Whether `name` is one of the methods `filter` selects (none when it is empty).
    fn selects(filter: &str, name: &str) -> bool {
        !filter.is_empty() && name.contains(filter)
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
        let targets: Vec<String> = options
            .strings("targets")?
            .into_iter()
            .map(str::to_owned)
            .collect();
        if !targets.is_empty() {
            options.log(&format!("negate_rs: targets {targets:?}"));
        }
        let _ = self.targets.set(targets);
        Ok(())
    }

    fn targets(&self) -> Result<Vec<String>, Error> {
        Ok(self.targets.get().cloned().unwrap_or_default())
    }

    fn wants(&self, candidate: &Candidate<'_>) -> Want {
        if self.targets.get().is_some_and(|t| !t.is_empty()) {
            return candidate.is_target().unwrap_or(false).into();
        }
        let filter = self.filter.get().map_or("", String::as_str);
        candidate
            .name()
            .is_ok_and(|name| NegateRs::selects(filter, name))
            .into()
    }

    fn edit(&self, edit: &mut Edit<'_>) -> Result<bool, Error> {
        // The options of this edit: the configured ones, or a live request's.
        let filter = edit.options()?.string("filter")?.unwrap_or_default();
        let name = edit.name()?;
        let targeted = self.targets.get().is_some_and(|t| !t.is_empty());
        if !(targeted || NegateRs::selects(filter, name)) || edit.return_type()? != element_type::I4
        {
            return Ok(false);
        }
        edit.insert_before_returns(&[Instruction::new(opcode::NEG)])
            .map_err(|status| Error::with_status(status, format!("negate_rs: {name}: {status}")))?;
        Ok(true)
    }
}

ilrewrite_method::export_method!(NegateRs::new);

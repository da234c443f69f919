//! The instrumentation methods that change what a method computes, to show the order
//! and isolation of several edits on one method: `scale` and `offset` change an `int32`
//! result; `faulty` changes it and then fails on some methods.

use std::sync::OnceLock;

use ilrewrite::body::MethodBody;
use ilrewrite::clr::{
    Candidate, Events, InstrumentationMethod, Interest, MethodEdit, OptionKind, OptionSpec,
    Profiler, Start,
};
use ilrewrite::disasm::method_name;
use ilrewrite::{Instruction, OpCode};

use crate::common::{FILTER, SEE_EVERY_METHOD, before_rets, returns_int32};
use crate::modes::Filtered;

/// The filter these need: changing every method's result would break any program.
fn required_filter(start: &Start<'_>, filter: &Filtered, name: &str) -> Result<(), String> {
    if start.options().string("filter").is_none_or(str::is_empty) {
        return Err(format!(
            "{name} needs the option `filter` (the methods whose int32 result it changes)"
        ));
    }
    filter.start(start);
    Ok(())
}

/// The filter's methods interest it, none else.
fn interest(filter: &Filtered, method: &Candidate<'_>) -> Interest {
    match filter.passes(method) {
        true => Interest::Edit,
        false => Interest::No,
    }
}

/// `scale` (`value * factor`, 2 by default) or `offset` (`value + addend`, 1 by
/// default): the `int32` result of every method its `filter` selects, changed before
/// each `ret`.
#[derive(Debug)]
pub struct Arithmetic {
    name: &'static str,
    op: OpCode,
    options: [OptionSpec; 2],
    default: i32,
    operand: OnceLock<i32>,
    filter: Filtered,
}

impl Arithmetic {
    pub fn scale() -> Arithmetic {
        Arithmetic::new("scale", OpCode::Mul, "factor", 2)
    }

    pub fn offset() -> Arithmetic {
        Arithmetic::new("offset", OpCode::Add, "addend", 1)
    }

    fn new(name: &'static str, op: OpCode, operand: &'static str, default: i32) -> Arithmetic {
        Arithmetic {
            name,
            op,
            options: [FILTER, OptionSpec::new(operand, OptionKind::Integer)],
            default,
            operand: OnceLock::new(),
            filter: Filtered::default(),
        }
    }
}

impl Profiler for Arithmetic {}

impl InstrumentationMethod for Arithmetic {
    fn name(&self) -> &str {
        self.name
    }
    fn events(&self) -> Events {
        SEE_EVERY_METHOD
    }
    fn options(&self) -> &[OptionSpec] {
        &self.options
    }
    fn start(&self, start: &Start<'_>) -> Result<(), String> {
        let key = self.options[1].name;
        let operand = match start.options().integer(key) {
            None => self.default,
            Some(value) => i32::try_from(value).map_err(|_| {
                let why = format!("{value} is not a 32-bit integer");
                start.options().invalid(key, &why).to_string()
            })?,
        };
        let _ = self.operand.set(operand);
        required_filter(start, &self.filter, self.name)
    }
    fn wants(&self, method: &Candidate<'_>) -> Interest {
        interest(&self.filter, method)
    }
    fn edit(
        &self,
        body: &mut MethodBody,
        method: &mut MethodEdit<'_, '_>,
    ) -> ilrewrite::Result<bool> {
        if !returns_int32(method.method()) {
            return Ok(false);
        }
        let operand = *self.operand.get().unwrap_or(&self.default);
        before_rets(
            body,
            &[Instruction::ldc_i4(operand), Instruction::simple(self.op)],
        )
    }
}

/// `faulty`: adds 1000 to the `int32` result of every method its `filter` selects,
/// then panics on the methods whose name contains `panic_on` and returns an error on
/// those whose name contains `error_on`: on those its edit is rolled back, and the
/// others' edits stay.
#[derive(Debug, Default)]
pub struct Faulty {
    filter: Filtered,
    panic_on: OnceLock<Option<String>>,
    error_on: OnceLock<Option<String>>,
}

impl Profiler for Faulty {}

impl InstrumentationMethod for Faulty {
    fn name(&self) -> &str {
        "faulty"
    }
    fn events(&self) -> Events {
        SEE_EVERY_METHOD
    }
    fn options(&self) -> &[OptionSpec] {
        const OPTIONS: [OptionSpec; 3] = [
            FILTER,
            OptionSpec::new("panic_on", OptionKind::String),
            OptionSpec::new("error_on", OptionKind::String),
        ];
        &OPTIONS
    }
    fn start(&self, start: &Start<'_>) -> Result<(), String> {
        let text = |key| start.options().string(key).map(str::to_owned);
        let _ = self.panic_on.set(text("panic_on"));
        let _ = self.error_on.set(text("error_on"));
        required_filter(start, &self.filter, "faulty")
    }
    fn wants(&self, method: &Candidate<'_>) -> Interest {
        interest(&self.filter, method)
    }
    fn edit(
        &self,
        body: &mut MethodBody,
        method: &mut MethodEdit<'_, '_>,
    ) -> ilrewrite::Result<bool> {
        if !returns_int32(method.method()) {
            return Ok(false);
        }
        let edited = before_rets(
            body,
            &[Instruction::ldc_i4(1000), Instruction::simple(OpCode::Add)],
        )?;
        let rewrite = method.method();
        let name = method_name(rewrite.module.metadata(), rewrite.token).to_string();
        let hit = |on: &OnceLock<Option<String>>| {
            on.get()
                .and_then(Option::as_deref)
                .is_some_and(|part| name.contains(part))
        };
        if hit(&self.panic_on) {
            panic!("faulty panics on {name}, as configured");
        }
        if hit(&self.error_on) {
            return Err(ilrewrite::Error::Unencodable {
                what: "faulty returns an error here, as configured",
            });
        }
        Ok(edited)
    }
}

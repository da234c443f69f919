//! The instrumentation methods that change what a method computes, to show the order
//! and isolation of several edits on one method: `scale` and `offset` change an `int32`
//! result; `faulty` changes it and then fails on some methods.

use ilrewrite::clr::Options;

use ilrewrite::body::MethodBody;
use ilrewrite::clr::{
    Candidate, Events, InstrumentationMethod, Interest, MethodEdit, MethodError, OptionKind,
    OptionSpec, Profiler, Start,
};
use ilrewrite::disasm::method_name;
use ilrewrite::{Instruction, OpCode};

use crate::common::{FILTER, SEE_EVERY_METHOD, before_rets, returns_int32};
use crate::modes::Filtered;

/// The filter these need: changing every method's result would break any program.
/// With a live dial (`dial`), none means it edits only the methods a dial request names.
fn required_filter(
    start: &Start<'_>,
    filter: &Filtered,
    name: &str,
    dial: bool,
) -> Result<(), MethodError> {
    let given = start
        .options()
        .string("filter")
        .is_some_and(|f| !f.is_empty());
    if !given && !dial {
        return Err(format!(
            "{name} needs the option `filter` (the methods whose int32 result it changes)"
        )
        .into());
    }
    filter.start(start);
    Ok(())
}

/// The filter's methods interest it, none else; with no filter (allowed with a dial),
/// none.
fn interest_if_filtered(filter: &Filtered, method: &Candidate<'_>) -> Interest {
    match filter.is_set() {
        true => interest(filter, method),
        false => Interest::No,
    }
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
/// each `ret`. The operand is read from the edit's options, so a dial request can give
/// another one (checked to be a 32-bit integer before anything changes).
#[derive(Debug)]
pub struct Arithmetic {
    name: &'static str,
    op: OpCode,
    options: [OptionSpec; 2],
    default: i32,
    filter: Filtered,
    /// Whether the profiler runs a live dial (a filter is then optional).
    dial: bool,
}

impl Arithmetic {
    pub fn scale(dial: bool) -> Arithmetic {
        Arithmetic::new("scale", OpCode::Mul, "factor", 2, dial)
    }

    pub fn offset(dial: bool) -> Arithmetic {
        Arithmetic::new("offset", OpCode::Add, "addend", 1, dial)
    }

    fn new(
        name: &'static str,
        op: OpCode,
        operand: &'static str,
        default: i32,
        dial: bool,
    ) -> Arithmetic {
        Arithmetic {
            name,
            op,
            options: [FILTER, OptionSpec::new(operand, OptionKind::Integer)],
            default,
            filter: Filtered::default(),
            dial,
        }
    }

    /// The operand `options` give (the default when they give none).
    fn operand(&self, options: &Options) -> Result<i32, MethodError> {
        let key = self.options[1].name;
        match options.integer(key) {
            None => Ok(self.default),
            Some(value) => i32::try_from(value).map_err(|_| {
                let why = format!("{value} is not a 32-bit integer");
                options.invalid(key, &why).into()
            }),
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
    fn start(&self, start: &Start<'_>) -> Result<(), MethodError> {
        self.operand(start.options())?;
        required_filter(start, &self.filter, self.name, self.dial)
    }
    fn check_options(&self, options: &Options) -> Result<(), MethodError> {
        self.operand(options).map(|_| ())
    }
    fn wants(&self, method: &Candidate<'_>) -> Interest {
        interest_if_filtered(&self.filter, method)
    }
    fn edit(
        &self,
        body: &mut MethodBody,
        method: &mut MethodEdit<'_, '_>,
    ) -> ilrewrite::Result<bool> {
        if !returns_int32(method.method()) {
            return Ok(false);
        }
        let operand =
            self.operand(method.options())
                .map_err(|_| ilrewrite::Error::Unencodable {
                    what: "an operand that is not a 32-bit integer",
                })?;
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
    fn start(&self, start: &Start<'_>) -> Result<(), MethodError> {
        required_filter(start, &self.filter, "faulty", false)
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
        // The edit's own options: the configured ones, or a dial request's.
        let option = |key| method.options().string(key).map(str::to_owned);
        let (panic_on, error_on) = (option("panic_on"), option("error_on"));
        let rewrite = method.method();
        let name = method_name(rewrite.module.metadata(), rewrite.token).to_string();
        let hit = |on: &Option<String>| on.as_deref().is_some_and(|part| name.contains(part));
        if hit(&panic_on) {
            panic!("faulty panics on {name}, as configured");
        }
        if hit(&error_on) {
            return Err(ilrewrite::Error::Unencodable {
                what: "faulty returns an error here, as configured",
            });
        }
        Ok(edited)
    }
}

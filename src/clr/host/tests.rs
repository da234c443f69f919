//! The composition of several instrumentation methods' edits, without a runtime: the
//! pipeline's test delivery serves bodies from the test programs' files and records
//! what is handed over.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use super::callbacks::announce;
use super::config::{Configuration, OptionKind, OptionSpec, Options};
use super::hosting::HostedEdit;
use super::manager::Manager;
use super::method::{Candidate, InstrumentationMethod, Interest, MethodEdit, Owner};
use crate::body::MethodBody;
use crate::clr::profiler::Profiler;
use crate::clr::rewrite::RewriteOutcome;
use crate::clr::rewrite::clock::Clock;
use crate::clr::rewrite::edits::MethodPlan;
use crate::clr::rewrite::items::Containers;
use crate::clr::rewrite::pipeline::{self, Mode};
use crate::clr::rewrite::pipeline_tests::{TestDelivery, assembly, module, token_of};
use crate::clr::runtime::AssemblyName;
use crate::graph::Incoming;
use crate::graph::Instruction;
use crate::metadata::MetadataSource;
use crate::opcode::OpCode;
use crate::pe::Assembly;

type Asm = &'static Assembly<'static>;

/// What a test instrumentation method does to a body.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Does {
    /// `ldc.i4 n; mul` before every `ret`.
    Multiply(i32),
    /// `ldc.i4 n; add` before every `ret`.
    Add(i32),
    /// Adds a `nop` at entry, then fails with an error.
    NopThenError,
    /// Adds a `nop` at entry, then panics.
    NopThenPanic,
    /// Records what it sees of the single-ret, changes nothing.
    LookAtSingleRet,
}

struct Test {
    name: &'static str,
    does: Does,
    interest: Interest,
    edits: AtomicUsize,
    seen_epilogues: Mutex<Vec<Option<crate::graph::InstrId>>>,
}

impl Test {
    fn new(name: &'static str, does: Does, interest: Interest) -> Test {
        Test {
            name,
            does,
            interest,
            edits: AtomicUsize::new(0),
            seen_epilogues: Mutex::new(Vec::new()),
        }
    }
}

impl Profiler for Test {}

fn before_rets(body: &mut MethodBody, code: [Instruction; 2]) -> crate::error::Result<()> {
    let rets: Vec<_> = body
        .instrs
        .opcodes()
        .filter(|(_, op)| *op == OpCode::Ret)
        .map(|(id, _)| id)
        .collect();
    for ret in rets {
        for instr in code {
            body.insert_before(ret, instr, Incoming::Keep)?;
        }
    }
    Ok(())
}

fn entry_nop(body: &mut MethodBody) -> crate::error::Result<()> {
    let first = body.instrs.first().expect("an instruction");
    body.insert_before(first, Instruction::simple(OpCode::Nop), Incoming::Keep)?;
    Ok(())
}

impl InstrumentationMethod<Asm> for Test {
    fn name(&self) -> &str {
        self.name
    }

    fn wants(&self, _: &Candidate<'_, Asm>) -> Interest {
        self.interest
    }

    fn edit(
        &self,
        body: &mut MethodBody,
        method: &mut MethodEdit<'_, '_, Asm>,
    ) -> crate::error::Result<bool> {
        self.edits.fetch_add(1, Ordering::SeqCst);
        match self.does {
            Does::Multiply(n) => {
                before_rets(
                    body,
                    [Instruction::ldc_i4(n), Instruction::simple(OpCode::Mul)],
                )?;
            }
            Does::Add(n) => {
                before_rets(
                    body,
                    [Instruction::ldc_i4(n), Instruction::simple(OpCode::Add)],
                )?;
            }
            Does::NopThenError => {
                entry_nop(body)?;
                return Err(crate::error::Error::Unencodable {
                    what: "a test error",
                });
            }
            Does::NopThenPanic => {
                entry_nop(body)?;
                panic!("a test panic");
            }
            Does::LookAtSingleRet => {
                let seen = method.single_ret().map(|s| s.epilogue);
                self.seen_epilogues.lock().unwrap().push(seen);
                return Ok(false);
            }
        }
        Ok(true)
    }
}

/// The outcome, the handed-over body's opcodes, the failures heard of (instrumentation
/// method, what), and the delivery.
type Composed = (
    RewriteOutcome,
    Option<Vec<OpCode>>,
    Vec<(usize, String)>,
    TestDelivery,
);

/// Runs `methods` (all wanting the method, in this order) on `name` of `program`
/// through the pipeline; returns the outcome, the handed-over body's opcodes, and the
/// failures heard of.
fn compose_on(program: &str, name: &str, methods: &[&Test]) -> Composed {
    let asm = assembly(program);
    let token = token_of(asm, name);
    let module = module(asm);
    let delivery = TestDelivery::default();
    let options = Options::default();
    let containers = Containers::default();
    let plan = MethodPlan {
        steps: methods
            .iter()
            .enumerate()
            .map(|(index, m)| HostedEdit {
                method: *m as &dyn InstrumentationMethod<Asm>,
                owner: Owner {
                    index,
                    count: methods.len(),
                },
                interest: m.interest,
                options: &options,
                requested: false,
                containers: &containers,
                edited: None,
                priority: 0,
            })
            .collect(),
    };
    let rewrite = pipeline::run(
        &delivery,
        &module,
        0x7700,
        token,
        Mode::FirstJit {
            keep_pristine: true,
        },
        false,
        &mut Clock::start(None),
        &plan,
    );
    let outcome = rewrite.outcome;
    let failures: Vec<(usize, String)> = rewrite
        .rolled_back
        .iter()
        .map(|(position, f)| (plan.steps[*position].owner.index, f.to_string()))
        .collect();
    let handed = delivery.bodies.lock().unwrap().get(&token).map(|bytes| {
        let body = MethodBody::decode(bytes).expect("a valid handed-over body");
        body.instrs.opcodes().map(|(_, op)| op).collect()
    });
    (outcome, handed, failures, delivery)
}

/// The edits run in the order given, on one body: `Answer.Get` (`ldc.i4.s 41; ret`)
/// doubled then plus one is `(41 * 2) + 1`; the other order `(41 + 1) * 2`. One body
/// handed over.
#[test]
fn edits_compose_in_order_on_one_body() {
    let double = Test::new("double", Does::Multiply(2), Interest::Edit);
    let plus = Test::new("plus", Does::Add(1), Interest::Edit);
    let (outcome, handed, failures, _) = compose_on("Answer.exe", "Get", &[&double, &plus]);
    assert!(
        matches!(outcome, RewriteOutcome::Rewritten { .. }),
        "{outcome:?}"
    );
    assert!(failures.is_empty());
    let ops = handed.expect("a body handed over");
    let tail = &ops[ops.len() - 5..];
    assert_eq!(
        tail,
        [
            OpCode::LdcI42,
            OpCode::Mul,
            OpCode::LdcI41,
            OpCode::Add,
            OpCode::Ret
        ]
    );

    let (_, handed, _, _) = compose_on("Answer.exe", "Get", &[&plus, &double]);
    let ops = handed.expect("a body handed over");
    let tail = &ops[ops.len() - 5..];
    assert_eq!(
        tail,
        [
            OpCode::LdcI41,
            OpCode::Add,
            OpCode::LdcI42,
            OpCode::Mul,
            OpCode::Ret
        ]
    );
}

/// An edit that fails or panics is rolled back alone: the others' edits are handed
/// over, its `nop` is not, and each failure is heard of once with what it was.
#[test]
fn a_failing_edit_is_rolled_back_alone() {
    let double = Test::new("double", Does::Multiply(2), Interest::Edit);
    let error = Test::new("error", Does::NopThenError, Interest::Edit);
    let panic = Test::new("panic", Does::NopThenPanic, Interest::Edit);
    let plus = Test::new("plus", Does::Add(1), Interest::Edit);
    let (outcome, handed, failures, _) =
        compose_on("Answer.exe", "Get", &[&error, &double, &panic, &plus]);
    assert!(
        matches!(outcome, RewriteOutcome::Rewritten { .. }),
        "{outcome:?}"
    );
    let ops = handed.expect("a body handed over");
    assert!(!ops.contains(&OpCode::Nop), "{ops:?}");
    assert_eq!(
        &ops[ops.len() - 5..],
        [
            OpCode::LdcI42,
            OpCode::Mul,
            OpCode::LdcI41,
            OpCode::Add,
            OpCode::Ret
        ]
    );
    assert_eq!(failures.len(), 2, "{failures:?}");
    assert_eq!(failures[0].0, 0);
    assert!(failures[0].1.contains("a test error"), "{failures:?}");
    assert_eq!(failures[1].0, 2);
    assert!(
        failures[1].1.contains("panicked: a test panic"),
        "{failures:?}"
    );
}

/// A failing edit alone leaves the method as it was: nothing handed over.
#[test]
fn a_failing_edit_alone_hands_nothing_over() {
    // Alone, or with every other edit failing too: no edit stands, and the first
    // failure is the method's outcome (an error refused or failed as the pipeline
    // classifies it, a panic failed), not a rollback.
    let erring = Test::new("erring", Does::NopThenError, Interest::Edit);
    let panicking = Test::new("panicking", Does::NopThenPanic, Interest::Edit);
    for methods in [
        &[&erring][..],
        &[&panicking],
        &[&erring, &panicking],
        &[&panicking, &erring],
    ] {
        let (outcome, handed, failures, _) = compose_on("Answer.exe", "Get", methods);
        let names: Vec<&str> = methods.iter().map(|m| m.name).collect();
        let expected_panic = methods[0].does == Does::NopThenPanic;
        match &outcome {
            RewriteOutcome::Failed(failure) if expected_panic => {
                assert!(
                    failure.to_string().contains("panic"),
                    "{names:?}: {failure}"
                )
            }
            RewriteOutcome::Refused(_) | RewriteOutcome::Failed(_) if !expected_panic => {}
            other => panic!("{names:?}: {other:?}"),
        }
        assert!(handed.is_none(), "{names:?}");
        assert!(failures.is_empty(), "{names:?}: {failures:?}");
    }
}

/// The single-ret is made once when one instrumentation method asks, before the first
/// edit, and every edit sees the same epilogue; a method returning a value gets one
/// return-value local, defined once.
#[test]
fn single_ret_is_made_once_for_all() {
    let asm = assembly("CallTree.exe");
    // A method returning a value with more than one `ret`.
    let name = asm
        .methods()
        .flatten()
        .find(|m| {
            m.body.is_some_and(|b| {
                MethodBody::decode(b).is_ok_and(|body| {
                    body.instrs
                        .opcodes()
                        .filter(|(_, op)| *op == OpCode::Ret)
                        .count()
                        > 1
                })
            }) && crate::sig::summarize_method_sig(asm.signature(m.token).unwrap_or(&[]))
                .is_ok_and(|s| s.returns_value)
                && asm.methods().flatten().filter(|n| n.name == m.name).count() == 1
        })
        .map(|m| m.name)
        .expect("a method with several rets");
    let first = Test::new("first", Does::LookAtSingleRet, Interest::EditSingleRet);
    let plus = Test::new("plus", Does::Add(1), Interest::Edit);
    let second = Test::new("second", Does::LookAtSingleRet, Interest::EditSingleRet);
    let (outcome, handed, failures, delivery) =
        compose_on("CallTree.exe", name, &[&first, &plus, &second]);
    assert!(
        matches!(outcome, RewriteOutcome::Rewritten { .. }),
        "{name}: {outcome:?}"
    );
    assert!(failures.is_empty());
    let ops = handed.expect("a body handed over");
    assert_eq!(
        ops.iter().filter(|op| **op == OpCode::Ret).count(),
        1,
        "{ops:?}"
    );
    let seen_first = first.seen_epilogues.lock().unwrap().clone();
    let seen_second = second.seen_epilogues.lock().unwrap().clone();
    assert!(seen_first[0].is_some());
    assert_eq!(seen_first, seen_second);
    assert_eq!(
        delivery.locals.lock().unwrap().len(),
        1,
        "one return-value local"
    );
}

/// An instrumentation method that does not want the method is not asked to edit it
/// (the manager passes only those that want it).
#[test]
fn only_wanting_methods_edit() {
    let double = Test::new("double", Does::Multiply(2), Interest::Edit);
    let (_, _, _, _) = compose_on("Answer.exe", "Get", &[&double]);
    assert_eq!(double.edits.load(Ordering::SeqCst), 1);
}

/// An instrumentation method that only has a name and options.
struct Named(&'static str, &'static [OptionSpec]);
impl Profiler for Named {}
impl InstrumentationMethod for Named {
    fn name(&self) -> &str {
        self.0
    }
    fn priority(&self) -> i32 {
        7
    }
    fn options(&self) -> &[OptionSpec] {
        self.1
    }
    fn wants(&self, _: &Candidate<'_>) -> Interest {
        Interest::No
    }
    fn edit(&self, _: &mut MethodBody, _: &mut MethodEdit<'_, '_>) -> crate::error::Result<bool> {
        Ok(false)
    }
}

fn offered() -> Vec<Arc<dyn InstrumentationMethod>> {
    const FACTOR: &[OptionSpec] = &[OptionSpec::new("factor", OptionKind::Integer)];
    vec![
        Arc::new(Named("scale", FACTOR)),
        Arc::new(Named("offset", &[])),
        Arc::new(Named("count", &[])),
    ]
}

fn configured(text: &str) -> Result<Vec<String>, String> {
    let configuration = Configuration::parse(text, "m.toml").map_err(|e| e.to_string())?;
    let manager = Manager::configured(&configuration, &offered()).map_err(|e| e.to_string())?;
    Ok(manager.names().into_iter().map(str::to_owned).collect())
}

#[test]
fn a_configuration_chooses_orders_and_prioritizes_the_offered_methods() {
    // Listed order breaks ties; a priority from the file beats the method's own (7);
    // a disabled one is not hosted; one not listed is not hosted.
    let text = "[[method]]\nname = \"offset\"\n\n[[method]]\nname = \"scale\"\npriority = 8\n\
                options = { factor = 3 }\n\n[[method]]\nname = \"count\"\nenabled = false\n";
    assert_eq!(configured(text).unwrap(), ["scale", "offset"]);
    let text = "[[method]]\nname = \"offset\"\n[[method]]\nname = \"scale\"\n";
    assert_eq!(configured(text).unwrap(), ["offset", "scale"]);
    let text = "[[method]]\nname = \"offset\"\npriority = 6\n[[method]]\nname = \"scale\"\n";
    assert_eq!(configured(text).unwrap(), ["scale", "offset"]);
    assert_eq!(configured("").unwrap(), Vec::<String>::new());
}

#[test]
fn a_configuration_naming_what_is_not_offered_is_an_error_at_its_place() {
    assert_eq!(
        configured("[[method]]\nname = \"offset\"\n[[method]]\nname = \"sacle\"\n"),
        Err(
            "m.toml:4:8: unknown instrumentation method \"sacle\" (this profiler has scale, \
             offset, count)"
                .to_owned()
        )
    );
    assert_eq!(
        configured("[[method]]\nname = \"scale\"\n[method.options]\nfactor = true\n"),
        Err(
            "m.toml:4:10: option `factor` of \"scale\" must be an integer, not a boolean"
                .to_owned()
        )
    );
    assert_eq!(
        configured("[[method]]\nname = \"offset\"\n[method.options]\nfactor = 2\n"),
        Err(
            "m.toml:4:1: instrumentation method \"offset\" has no option `factor` (it takes \
             none)"
                .to_owned()
        )
    );
    // A disabled entry is checked too: a mistake is a mistake wherever it is.
    assert!(
        configured("[[method]]\nname = \"bogus\"\nenabled = false\n").is_err(),
        "a disabled unknown name"
    );
}

/// Announces the references it is built with.
struct Referencing(&'static str, Vec<&'static str>);

impl Profiler for Referencing {}

impl InstrumentationMethod for Referencing {
    fn name(&self) -> &str {
        self.0
    }
    fn assembly_references(&self) -> Vec<AssemblyName<'_>> {
        self.1
            .iter()
            .map(|&name| AssemblyName {
                name,
                version: [1, 0, 0, 0],
                public_key_token: &[],
            })
            .collect()
    }
    fn wants(&self, _: &Candidate<'_>) -> Interest {
        Interest::No
    }
    fn edit(&self, _: &mut MethodBody, _: &mut MethodEdit<'_, '_>) -> crate::error::Result<bool> {
        Ok(false)
    }
}

/// Every instrumentation method's references are announced for an assembly, in order,
/// except the assembly's reference to itself; a refusal does not stop the others.
#[test]
fn assembly_references_are_announced_except_to_themselves() {
    let methods: Vec<Arc<dyn InstrumentationMethod>> = vec![
        Arc::new(Referencing("a", vec!["Helper", "Other"])),
        Arc::new(Referencing("b", vec![])),
        Arc::new(Referencing("c", vec!["Third"])),
    ];
    let mut announced = Vec::new();
    announce(&methods, "/app/Program.dll", |m, r| {
        announced.push(format!("{}:{}", m.name(), r.name));
        Err(())
    });
    assert_eq!(announced, ["a:Helper", "a:Other", "c:Third"]);
    announced.clear();
    announce(&methods, "/app/helper.dll", |m, r| {
        announced.push(format!("{}:{}", m.name(), r.name));
        Ok(())
    });
    assert_eq!(announced, ["a:Other", "c:Third"]);
}

/// A candidate's name is the dial's selector syntax: the namespace and type, `::`, the
/// method's own name; a generic type with its arity.
#[test]
fn a_candidate_is_named_as_selectors_name_it() {
    let containers = Containers::default();
    let name = |program: &str, method: &str| {
        let asm = assembly(program);
        let module = module(asm);
        let candidate = Candidate {
            module: &module,
            token: token_of(asm, method),
            compiling: true,
            targeted: false,
            owner: Owner { index: 0, count: 1 },
            containers: &containers,
        };
        candidate.name()
    };
    assert_eq!(
        name("Returns.exe", "PanicHere"),
        "Returns.Values::PanicHere"
    );
    assert_eq!(name("Generic.exe", "Echo"), "Generic.Holder`1::Echo");
}

/// Before it runs, a manager runs no instrumentation method, whatever it hosts.
#[test]
fn a_manager_runs_nothing_before_it_is_initialized() {
    let manager = Manager::new().with(Named("scale", &[]));
    assert_eq!(manager.names(), ["scale"]);
    assert!(manager.running().is_empty());
}

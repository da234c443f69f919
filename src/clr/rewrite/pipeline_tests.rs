//! The pipeline without a runtime: a test delivery that serves method bodies from a
//! real assembly file and records what it is handed, with the file's metadata as the
//! module's metadata. Each phase's failure reaches its typed outcome and hands nothing
//! over; a rewrite hands over a verified body, its map, and keeps the pristine IL.

use std::collections::HashMap;
use std::sync::Mutex;

use super::clock::Clock;
use super::delivery::Delivery;
use super::edits::{MethodPlan, OnceEdit};
use super::instrumentation::Instrumentation;
use super::method_rewrite::MethodRewrite;
use super::module::ModuleState;
use super::outcome::{FailureCause, Phase, RewriteOutcome};
use super::pipeline::{self, Mode};
use crate::body::{Encoder, MethodBody};
use crate::clr::runtime::ClrError;
use crate::clr::sys::{FunctionID, HResult, mdToken};
use crate::graph::Incoming;
use crate::graph::Instruction;
use crate::ilmap::IlMap;
use crate::opcode::OpCode;
use crate::pe::Assembly;
use crate::transform::{InstrumentationCode, Snippet};

pub(crate) type Module = ModuleState<&'static Assembly<'static>>;

pub(crate) fn assembly(name: &str) -> &'static Assembly<'static> {
    let path = format!("{}/tests/programs/bin/{name}", env!("CARGO_MANIFEST_DIR"));
    let bytes: &'static [u8] = Box::leak(std::fs::read(&path).expect(&path).into_boxed_slice());
    Box::leak(Box::new(Assembly::parse(bytes).expect("a valid assembly")))
}

pub(crate) fn module(asm: &'static Assembly<'static>) -> Module {
    ModuleState::new(0x1000, 1, asm)
}

/// The body bytes of `token` in the file, cut to the body's length (re-encoding the
/// decoded body gives its bytes for the programs' compilers).
fn file_body(asm: &Assembly<'_>, token: mdToken) -> Option<Vec<u8>> {
    let bytes = asm.method(token).ok()?.body?;
    let body = MethodBody::decode(bytes).ok()?;
    let mut out = Vec::new();
    Encoder::new().encode(&body, &mut out).ok()?;
    (bytes.get(..out.len()) == Some(&out[..])).then_some(out)
}

/// A delivery into memory: IL from the assembly file, or `il` when set; the phase to
/// fail in, when set; what it was handed.
#[derive(Default)]
pub(crate) struct TestDelivery {
    il: Option<Vec<u8>>,
    fail: Option<Phase>,
    refuse_map: bool,
    reads: Mutex<Vec<mdToken>>,
    pub(crate) locals: Mutex<Vec<Vec<u8>>>,
    pub(crate) bodies: Mutex<HashMap<mdToken, Vec<u8>>>,
    maps: Mutex<Vec<(FunctionID, IlMap)>>,
}

const REFUSED: HResult = HResult::E_FAIL;

impl Delivery<&'static Assembly<'static>> for TestDelivery {
    fn read_il(&self, module: &Module, token: mdToken, out: &mut Vec<u8>) -> Result<(), ClrError> {
        self.reads.lock().unwrap().push(token);
        if self.fail == Some(Phase::Read) {
            return Err(ClrError::Failed {
                method: "GetILFunctionBody",
                hr: REFUSED,
            });
        }
        match &self.il {
            Some(il) => out.extend_from_slice(il),
            None => out.extend(file_body(module.metadata(), token).expect("an IL body")),
        }
        Ok(())
    }

    fn define_locals(&self, _: &Module, blob: &[u8]) -> Result<mdToken, ClrError> {
        if self.fail == Some(Phase::Locals) {
            return Err(ClrError::Failed {
                method: "GetTokenFromSig",
                hr: REFUSED,
            });
        }
        let mut locals = self.locals.lock().unwrap();
        locals.push(blob.to_vec());
        Ok(0x1100_0000 | locals.len() as u32)
    }

    fn set_body(&self, _: &Module, token: mdToken, body: &[u8]) -> Result<(), ClrError> {
        if self.fail == Some(Phase::HandOver) {
            return Err(ClrError::Failed {
                method: "SetILFunctionBody",
                hr: REFUSED,
            });
        }
        self.bodies.lock().unwrap().insert(token, body.to_vec());
        Ok(())
    }

    fn set_map(&self, function: FunctionID, map: &IlMap) -> Result<(), ClrError> {
        if self.refuse_map {
            return Err(ClrError::Failed {
                method: "SetILInstrumentedCodeMap",
                hr: HResult::from_u32(0x8013_1379),
            });
        }
        self.maps.lock().unwrap().push((function, map.clone()));
        Ok(())
    }
}

/// The first MethodDef of `asm` whose body has a `ret` and whose name is `name`.
pub(crate) fn token_of(asm: &Assembly<'_>, name: &str) -> mdToken {
    asm.methods()
        .flatten()
        .find(|m| m.name == name && m.body.is_some())
        .map(|m| m.token)
        .expect(name)
}

/// The pipeline on `token` of `module` with `edit` as a one-step plan, in `mode`,
/// untimed; its outcome.
pub(crate) fn run_in<F>(
    delivery: &TestDelivery,
    module: &Module,
    function: FunctionID,
    token: mdToken,
    mode: Mode,
    edit: F,
) -> RewriteOutcome
where
    F: FnOnce(
        &mut MethodBody,
        &mut MethodRewrite<'_, &'static Assembly<'static>>,
    ) -> crate::error::Result<bool>,
{
    let plan = MethodPlan::one(OnceEdit::new(edit));
    pipeline::run(
        delivery,
        module,
        function,
        token,
        mode,
        false,
        &mut Clock::start(None),
        &plan,
    )
    .outcome
}

pub(crate) fn run<F>(
    delivery: &TestDelivery,
    module: &Module,
    token: mdToken,
    edit: F,
) -> RewriteOutcome
where
    F: FnOnce(
        &mut MethodBody,
        &mut MethodRewrite<'_, &'static Assembly<'static>>,
    ) -> crate::error::Result<bool>,
{
    run_in(
        delivery,
        module,
        0x7700,
        token,
        Mode::FirstJit {
            keep_pristine: true,
        },
        edit,
    )
}

/// Inserts a `nop` before the first instruction: an edit that verifies.
fn add_nop(body: &mut MethodBody) -> crate::error::Result<bool> {
    let first = body.instrs.first().expect("an instruction");
    body.insert_before(first, Instruction::simple(OpCode::Nop), Incoming::Keep)?;
    Ok(true)
}

fn failed_in(outcome: &RewriteOutcome) -> Option<Phase> {
    match outcome {
        RewriteOutcome::Failed(f) => Some(f.phase),
        _ => None,
    }
}

/// An edit as a case of [`every_failure_names_its_phase_and_hands_nothing_over`] has it.
type Edit = fn(
    &mut MethodBody,
    &mut MethodRewrite<'_, &'static Assembly<'static>>,
) -> crate::error::Result<bool>;

/// A way to fail each phase that can fail: its name, the delivery, the edit, the phase.
fn failing_cases() -> Vec<(&'static str, TestDelivery, Edit, Phase)> {
    vec![
        (
            "read",
            TestDelivery {
                fail: Some(Phase::Read),
                ..Default::default()
            },
            |b, _| add_nop(b),
            Phase::Read,
        ),
        (
            "decode",
            TestDelivery {
                il: Some(vec![0x4E, 0x00]),
                ..Default::default()
            },
            |b, _| add_nop(b),
            Phase::Decode,
        ),
        (
            "edit",
            TestDelivery::default(),
            |_, _| {
                Err(crate::error::Error::BadOperand {
                    opcode: "ldc.i4",
                    what: "an edit's own error",
                })
            },
            Phase::Edit,
        ),
        (
            "panic",
            TestDelivery::default(),
            |_, _| panic!("an edit that panics"),
            Phase::Edit,
        ),
        (
            "verify",
            TestDelivery::default(),
            |b, _| {
                let first = b.instrs.first().unwrap();
                b.insert_before(first, Instruction::simple(OpCode::Pop), Incoming::Keep)?;
                Ok(true)
            },
            Phase::Verify,
        ),
        (
            "locals",
            TestDelivery {
                fail: Some(Phase::Locals),
                ..Default::default()
            },
            |b, m| {
                m.set_locals_signature(&[0x07, 0x01, 0x08]);
                add_nop(b)
            },
            Phase::Locals,
        ),
        (
            "encode",
            TestDelivery::default(),
            |b, m| {
                // An operand that does not match its opcode, with the stack said
                // verified: only the encoder sees it.
                let first = b.instrs.first().unwrap();
                let bad = Instruction {
                    opcode: OpCode::LdcI4,
                    ..Instruction::simple(OpCode::Nop)
                };
                b.insert_before(first, bad, Incoming::Keep)?;
                m.stack_verified();
                Ok(true)
            },
            Phase::Encode,
        ),
        (
            "hand-over",
            TestDelivery {
                fail: Some(Phase::HandOver),
                ..Default::default()
            },
            |b, _| add_nop(b),
            Phase::HandOver,
        ),
    ]
}

/// Each phase that can fail fails with its phase named, hands nothing over, keeps no
/// pristine IL, and leaves the method to be tried again (the next run rewrites it).
#[test]
fn every_failure_names_its_phase_and_hands_nothing_over() {
    let asm = assembly("Answer.exe");
    let token = token_of(asm, "Get");
    for (name, delivery, edit, phase) in failing_cases() {
        let module = module(asm);
        let outcome = run(&delivery, &module, token, edit);
        assert_eq!(failed_in(&outcome), Some(phase), "{name}: {outcome}");
        assert!(
            outcome
                .key()
                .unwrap()
                .starts_with(&format!("failed: {phase}: ")),
            "{name}"
        );
        assert!(
            delivery.bodies.lock().unwrap().is_empty(),
            "{name}: nothing handed over"
        );
        assert!(delivery.maps.lock().unwrap().is_empty(), "{name}");
        assert!(module.pristine_il(token).is_none(), "{name}");
        assert!(!module.was_rewritten(token), "{name}");
        // Tried again at the next compilation: it rewrites now.
        let retry = run(&TestDelivery::default(), &module, token, |b, _| add_nop(b));
        assert!(
            matches!(
                retry,
                RewriteOutcome::Rewritten {
                    map_refused: None,
                    ..
                }
            ),
            "{name}: {retry}"
        );
    }
    let module = module(asm);
    let panicked = run(&TestDelivery::default(), &module, token, |_, _| {
        panic!("boom")
    });
    assert_eq!(
        panicked,
        RewriteOutcome::Failed(super::Failure::new(
            Phase::Edit,
            FailureCause::Panic("boom".into())
        ))
    );
}

/// Refusals are not failures: the instrumenter's documented refusals and limits come
/// back as `Refused` with their typed error; an edit that changes nothing is
/// `Unchanged`; neither hands anything over.
#[test]
fn refusals_and_unchanged_hand_nothing_over() {
    let asm = assembly("Answer.exe");
    let token = token_of(asm, "Get");
    let delivery = TestDelivery::default();
    let module = module(asm);
    let refused = run(&delivery, &module, token, |_, _| {
        Err(crate::error::Error::Unsupported {
            what: "a body with jmp",
        })
    });
    assert!(matches!(
        refused,
        RewriteOutcome::Refused(crate::error::Error::Unsupported { .. })
    ));
    let limit = run(&delivery, &module, token, |_, _| {
        Err(crate::error::Error::TooManyLocals {
            count: 65_536,
            limit: 65_535,
        })
    });
    assert!(
        matches!(
            limit,
            RewriteOutcome::Refused(crate::error::Error::TooManyLocals { .. })
        ),
        "{limit}"
    );
    assert_eq!(
        run(&delivery, &module, token, |_, _| Ok(false)),
        RewriteOutcome::Unchanged
    );
    assert!(delivery.bodies.lock().unwrap().is_empty());
    assert_eq!(delivery.reads.lock().unwrap().len(), 3);
}

/// A rewrite hands over the verified body and its map once, keeps the IL it started
/// from, and later compilations are `AlreadyRewritten` without reading anything; a map
/// the runtime refuses leaves the method rewritten and says so.
#[test]
fn a_rewrite_hands_over_body_and_map_and_keeps_the_pristine_il() {
    let asm = assembly("Answer.exe");
    let token = token_of(asm, "Get");
    let original = file_body(asm, token).unwrap();
    let delivery = TestDelivery::default();
    let module = module(asm);
    let outcome = run(&delivery, &module, token, |b, _| add_nop(b));
    let RewriteOutcome::Rewritten {
        bytes,
        map_refused: None,
    } = outcome
    else {
        panic!("{outcome}")
    };
    let body = delivery.bodies.lock().unwrap()[&token].clone();
    assert_eq!(body.len(), bytes);
    let decoded = MethodBody::decode(&body).unwrap();
    assert_eq!(decoded.instrs.iter().next().unwrap().1.opcode, OpCode::Nop);
    let maps = delivery.maps.lock().unwrap().clone();
    assert_eq!(maps.len(), 1);
    assert_eq!(maps[0].0, 0x7700);
    assert_eq!(
        maps[0].1.map(0),
        Some(0),
        "the nop belongs to the first instruction"
    );
    assert_eq!(module.pristine_il(token).as_deref(), Some(&original[..]));
    assert!(module.was_rewritten(token));
    let again = run(&delivery, &module, token, |_, _| panic!("not run"));
    assert_eq!(again, RewriteOutcome::AlreadyRewritten);
    assert_eq!(delivery.reads.lock().unwrap().len(), 1);

    let refusing = TestDelivery {
        refuse_map: true,
        ..Default::default()
    };
    let module = self::module(asm);
    let outcome = run(&refusing, &module, token, |b, _| add_nop(b));
    assert!(
        matches!(
            &outcome,
            RewriteOutcome::Rewritten {
                map_refused: Some(_),
                ..
            }
        ),
        "{outcome}"
    );
    assert!(outcome.to_string().contains("IL map refused"));
    assert!(module.was_rewritten(token));

    // Not kept when not asked for.
    let module = self::module(asm);
    let delivery = TestDelivery::default();
    let outcome = run_in(
        &delivery,
        &module,
        1,
        token,
        Mode::FirstJit {
            keep_pristine: false,
        },
        |b, _| add_nop(b),
    );
    assert!(outcome.is_rewritten());
    assert!(module.pristine_il(token).is_none());
}

/// The LocalVarSig token is defined after verification, and set on the handed body.
#[test]
fn the_locals_token_is_defined_after_verification() {
    let asm = assembly("Answer.exe");
    let token = token_of(asm, "Get");
    let delivery = TestDelivery::default();
    let module = module(asm);
    let failed = run(&delivery, &module, token, |b, m| {
        m.set_locals_signature(&[0x07, 0x01, 0x08]);
        let first = b.instrs.first().unwrap();
        b.insert_before(first, Instruction::simple(OpCode::Pop), Incoming::Keep)?;
        Ok(true)
    });
    assert_eq!(failed_in(&failed), Some(Phase::Verify));
    assert!(
        delivery.locals.lock().unwrap().is_empty(),
        "nothing defined for a failed rewrite"
    );
    let outcome = run(&delivery, &module, token, |b, m| {
        m.set_locals_signature(&[0x07, 0x01, 0x08]);
        add_nop(b)
    });
    assert!(outcome.is_rewritten(), "{outcome}");
    let body = MethodBody::decode(&delivery.bodies.lock().unwrap()[&token]).unwrap();
    assert_eq!(body.local_var_sig, 0x1100_0001);
}

/// The pipeline fills in the module's id (`ModuleState::id`) where a snippet loads it,
/// and the state local is defined with the return-value local once the body verified:
/// `Answer::Get` (`int32 Get()`, no locals) gets `.locals (int32, int64)`, its entry
/// stores into local 1 and its finally loads the module id and local 1.
#[test]
fn the_module_id_and_the_state_local_reach_the_handed_body() {
    let mut entry = Snippet::builder();
    entry.push(Instruction::ldc_i8(7));
    entry.state_local(OpCode::Stloc);
    let mut exit = Snippet::builder();
    exit.module_id().state_local(OpCode::Ldloc);
    exit.push(Instruction::simple(OpCode::Add));
    exit.push(Instruction::simple(OpCode::Pop));
    let instrumentation = Instrumentation::new(InstrumentationCode {
        entry: entry.finish().unwrap(),
        exit: exit.finish().unwrap(),
        state_local: Some(crate::sig::TypeSig::I8),
        ..Default::default()
    })
    .unwrap();
    let asm = assembly("Answer.exe");
    let token = token_of(asm, "Get");
    let delivery = TestDelivery::default();
    let module = module(asm);
    let outcome = run(&delivery, &module, token, |body, method| {
        instrumentation.edit(body, method, &[])
    });
    assert!(outcome.is_rewritten(), "{outcome}");
    assert_eq!(
        *delivery.locals.lock().unwrap(),
        [vec![0x07, 0x02, 0x08, 0x0A]]
    );
    let body = MethodBody::decode(&delivery.bodies.lock().unwrap()[&token]).unwrap();
    let instrs: Vec<Instruction> = body.instrs.iter().map(|(_, i)| i).collect();
    assert_eq!(instrs[1], Instruction::stloc(1));
    let module_id = Instruction::ldc_i8(module.id() as i64);
    let at = instrs
        .iter()
        .position(|i| *i == module_id)
        .expect("the module id");
    assert_eq!(instrs[at + 1], Instruction::ldloc(1));
}

/// Every method of two real programs through the pipeline with a wrap instrumentation
/// (shared by 4 threads): each is rewritten or refused with a typed reason, none fails,
/// every handed-over body decodes, and every rewritten method's pristine IL is the
/// file's body.
#[test]
fn whole_programs_through_the_pipeline_are_rewritten_or_refused() {
    let mut b = Snippet::builder();
    b.push(Instruction::simple(OpCode::Nop));
    let nop = b.finish().unwrap();
    let code = InstrumentationCode {
        entry: nop.clone(),
        exit: nop,
        ..Default::default()
    };
    let instrumentation = Instrumentation::new(code).unwrap();
    for program in ["TailCalls.exe", "Features.exe"] {
        let asm = assembly(program);
        let module = module(asm);
        let delivery = TestDelivery::default();
        let tokens: Vec<mdToken> = asm
            .methods()
            .flatten()
            .filter(|m| m.is_il() && m.body.is_some())
            .map(|m| m.token)
            .collect();
        let outcomes: Mutex<Vec<RewriteOutcome>> = Mutex::default();
        std::thread::scope(|scope| {
            for t in 0..4 {
                let (tokens, module, delivery, outcomes, instrumentation) =
                    (&tokens, &module, &delivery, &outcomes, &instrumentation);
                scope.spawn(move || {
                    for &token in tokens.iter().skip(t).step_by(4) {
                        let outcome = run(delivery, module, token, |body, method| {
                            instrumentation.edit(body, method, &[])
                        });
                        outcomes.lock().unwrap().push(outcome);
                    }
                });
            }
        });
        let outcomes = outcomes.into_inner().unwrap();
        let rewritten = outcomes.iter().filter(|o| o.is_rewritten()).count();
        let refused: Vec<_> = outcomes
            .iter()
            .filter(|o| matches!(o, RewriteOutcome::Refused(_)))
            .collect();
        let failed: Vec<_> = outcomes.iter().filter(|o| failed_in(o).is_some()).collect();
        assert!(failed.is_empty(), "{program}: {failed:?}");
        assert_eq!(rewritten + refused.len(), tokens.len(), "{program}");
        assert!(
            rewritten * 10 > tokens.len() * 9,
            "{program}: {rewritten} of {}",
            tokens.len()
        );
        let bodies = delivery.bodies.lock().unwrap();
        assert_eq!(bodies.len(), rewritten);
        for (&token, body) in bodies.iter() {
            MethodBody::decode(body).expect("a handed-over body decodes");
            assert_eq!(
                module.pristine_il(token).as_deref(),
                file_body(asm, token).as_deref()
            );
        }
    }
}

/// The ReJIT mode: every version is built (no claim), an unchanged edit hands the IL
/// read over as it is (the version must run it, not the method's default IL), a refused
/// edit hands nothing over, and no pristine IL is kept.
#[test]
fn rejit_versions_are_each_built_and_an_unchanged_one_gets_the_il_read() {
    let asm = assembly("Answer.exe");
    let token = token_of(asm, "Get");
    let module = module(asm);
    let rejit = |delivery: &TestDelivery,
                 edit: &dyn Fn(&mut MethodBody) -> crate::error::Result<bool>| {
        run_in(delivery, &module, 0, token, Mode::ReJit, |b, _| edit(b))
    };
    let first = TestDelivery::default();
    assert!(rejit(&first, &add_nop).is_rewritten());
    let second = TestDelivery::default();
    assert!(rejit(&second, &add_nop).is_rewritten(), "no claim");
    assert_eq!(
        first.bodies.lock().unwrap()[&token],
        second.bodies.lock().unwrap()[&token]
    );
    assert!(module.pristine_il(token).is_none() && !module.was_rewritten(token));

    let unchanged = TestDelivery::default();
    assert!(matches!(
        rejit(&unchanged, &|_| Ok(false)),
        RewriteOutcome::Unchanged
    ));
    assert_eq!(
        unchanged.bodies.lock().unwrap().get(&token),
        file_body(asm, token).as_ref(),
        "the file's IL is handed over as read"
    );
    let refusing = TestDelivery {
        fail: Some(Phase::HandOver),
        ..Default::default()
    };
    assert!(matches!(
        rejit(&refusing, &|_| Ok(false)),
        RewriteOutcome::Failed(f) if f.phase == Phase::HandOver
    ));

    let refused = TestDelivery::default();
    let outcome = rejit(&refused, &|_| {
        Err(crate::error::Error::Unsupported { what: "a test" })
    });
    assert!(matches!(outcome, RewriteOutcome::Refused(_)), "{outcome}");
    assert!(refused.bodies.lock().unwrap().is_empty());

    // A first JIT after all that still claims and rewrites once.
    let jit = TestDelivery::default();
    assert!(run(&jit, &module, token, |b, _| add_nop(b)).is_rewritten());
    assert!(matches!(
        run(&jit, &module, token, |b, _| add_nop(b)),
        RewriteOutcome::AlreadyRewritten
    ));
}

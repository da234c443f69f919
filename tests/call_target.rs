//! The CallTarget transform on real IL: every distinct method body of
//! System.Private.CoreLib of .NET 8.0.4 and .NET Core 3.1.23 is transformed with fake
//! hook tokens, or refused with a typed reason; every result is encoded, decoded
//! again, re-verified, and its structure checked clause by clause against the
//! contract's shape (`target/calltarget_spec.md`, issue 32). A property test does the
//! same over CoreLib bodies drawn at random (bodies with EH clauses over-represented)
//! with every option.
#![cfg(feature = "pe")]

mod common;

use ilrewrite::analysis::{
    CachingResolver, CallEffect, CallSiteResolver, ReturnKind, StackAnalyzer,
};
use ilrewrite::metadata::MetadataSource;
use ilrewrite::pe::Assembly;
use ilrewrite::sig::{MethodSig, TypeSig};
use ilrewrite::transform::{
    CallTarget, CallTargetHooks, HookTypes, MethodContext, Returns, TailCallPolicy,
};
use ilrewrite::{ClauseKind, Error, InstrId, Instruction, MethodBody, OpCode, Operand};
use proptest::prelude::*;
use proptest::sample::Index;
use std::collections::{BTreeMap, HashSet};
use std::sync::LazyLock;

/// The hooks' MethodSpecs, past the end of any real MethodSpec table (as the rows the
/// clr side would append), and the reporting method's MemberRef.
const BEGIN: u32 = 0x2BFF_FF01;
const END: u32 = 0x2BFF_FF02;
const ON_HOOK: u32 = 0x0AFF_FF03;
/// TypeRefs of System.Exception and of CallTargetState (fake).
const EXCEPTION: u32 = 0x0100_0001;
const STATE: u32 = 0x0100_0002;

/// The hooks' stack effects for one target, every other call site through the module
/// (which also gives the metadata kept tail calls are typed from).
struct Hooks<'r, R> {
    module: &'r R,
    begin: CallEffect,
    end: CallEffect,
}

impl<R: CallSiteResolver> CallSiteResolver for Hooks<'_, R> {
    fn call_effect(&self, opcode: OpCode, token: u32) -> ilrewrite::Result<CallEffect> {
        match token {
            BEGIN => Ok(self.begin),
            END => Ok(self.end),
            ON_HOOK => Ok(CallEffect { pops: 1, pushes: 0 }),
            _ => self.module.call_effect(opcode, token),
        }
    }
    fn metadata(&self) -> Option<&dyn MetadataSource> {
        self.module.metadata()
    }
}

/// One target: a MethodDef with an IL body.
struct Target<'a> {
    token: u32,
    body: &'a [u8],
    signature: &'a [u8],
    locals: Option<&'a [u8]>,
    declaring: TypeSig,
}

/// The declaring type of `method` as its module writes it: a value type when it
/// extends System.ValueType or System.Enum (System.Enum itself is a class), generic
/// over `!0...` when it has generic parameters.
fn declaring_type(asm: &Assembly<'_>, method: u32) -> TypeSig {
    let Some(owner) = asm.declaring_type(method).expect("declaring type") else {
        return TypeSig::Object;
    };
    let name = |t: u32| {
        asm.type_name(t)
            .map(|n| format!("{}.{}", n.namespace, n.name))
            .unwrap_or_default()
    };
    let is_value_type = asm
        .type_extends(owner)
        .expect("extends")
        .is_some_and(|base| {
            let base = name(base);
            (base == "System.ValueType" || base == "System.Enum") && name(owner) != "System.Enum"
        });
    let arity = (0..)
        .take_while(|&i| asm.generic_param(owner, i).ok().flatten().is_some())
        .count() as u32;
    match (arity, is_value_type) {
        (0, true) => TypeSig::ValueType(owner),
        (0, false) => TypeSig::Class(owner),
        _ => TypeSig::GenericInst {
            is_value_type,
            token: owner,
            args: (0..arity).map(TypeSig::Var).collect(),
        },
    }
}

/// Every distinct IL body of `asm` (by RVA) as a target.
fn targets<'a>(asm: &Assembly<'a>) -> Vec<Target<'a>> {
    let mut seen = HashSet::new();
    let mut all = Vec::new();
    for m in asm.methods() {
        let m = m.expect("MethodDef rows resolve");
        let Some(body) = m.body else { continue };
        if !m.is_il() || !seen.insert(m.rva) {
            continue;
        }
        let decoded = MethodBody::decode(body).expect("decodes");
        let locals = match decoded.local_var_sig {
            0 => None,
            t => Some(asm.standalone_sig(t).expect("locals")),
        };
        all.push(Target {
            token: m.token,
            body,
            signature: m.signature,
            locals,
            declaring: declaring_type(asm, m.token),
        });
    }
    all
}

/// How a target came out.
enum Outcome {
    Transformed { eh: bool, tail_calls: usize },
    Refused(String),
}

/// Whether an error is a typed refusal (made before any edit, or after the wrap for a
/// tail call with more on the stack than its operands) rather than a failure.
fn is_refusal(e: &Error) -> bool {
    matches!(
        e,
        Error::CallTargetRefused { .. }
            | Error::TailCallNotKept { .. }
            | Error::Unsupported { .. }
            | Error::EmptyBody
    ) || e.is_limit()
}

/// Transforms `target` and checks everything about the result; `Err` is a failure.
fn run<R: CallSiteResolver>(
    target: &Target<'_>,
    module: &R,
    on_hook: bool,
    policy: TailCallPolicy,
) -> Result<Outcome, String> {
    let fail = |what: &str, e: &dyn std::fmt::Display| format!("{:08x}: {what}: {e}", target.token);
    let original = MethodBody::decode(target.body).map_err(|e| fail("decode", &e))?;
    let sig = match MethodSig::parse(target.signature) {
        Ok(sig) => sig,
        Err(e) if e.is_limit() => return Ok(Outcome::Refused(e.kind())),
        Err(e) => return Err(fail("signature", &e)),
    };
    let this = u16::from(sig.has_this);
    let value = !matches!(sig.return_type.strip_modifiers(), TypeSig::Void);
    let hooks = Hooks {
        module,
        begin: CallEffect {
            pops: this + sig.params.len() as u16,
            pushes: 1,
        },
        end: CallEffect {
            pops: this + u16::from(value) + 2,
            pushes: u16::from(value),
        },
    };
    let tokens = CallTargetHooks {
        begin: BEGIN,
        end: END,
        on_hook_exception: on_hook.then_some(ON_HOOK),
        types: HookTypes {
            exception: EXCEPTION,
            state: TypeSig::ValueType(STATE),
        },
    };
    let method = MethodContext {
        locals: target.locals,
        ..MethodContext::new(target.signature, 1)
    };
    let mut body = original.clone();
    let mut ct = CallTarget::new().with_tail_call_policy(policy);
    let done = match ct.apply(&mut body, &method, &target.declaring, &tokens, &hooks) {
        Ok(done) => done,
        Err(e) => {
            if format!("{body:?}") != format!("{original:?}") {
                return Err(fail("body changed by an error", &e));
            }
            return match is_refusal(&e) {
                true => Ok(Outcome::Refused(e.kind())),
                false => Err(fail("failed", &e)),
            };
        }
    };
    let facts = Facts {
        this: sig.has_this.then(|| match target.declaring {
            TypeSig::ValueType(_)
            | TypeSig::GenericInst {
                is_value_type: true,
                ..
            } => Instruction::ldarg(0),
            _ => Instruction::ldarga(0),
        }),
        params: sig
            .params
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let arg = this + i as u16;
                match p.strip_modifiers() {
                    TypeSig::ByRef(_) => Instruction::ldarg(arg),
                    _ => Instruction::ldarga(arg),
                }
            })
            .collect(),
        ret: match done.returns {
            Returns::Value { local } => Some(local),
            Returns::Void => None,
        },
        state: done.state_local,
        exception: done.exception_local,
        on_hook,
        tail_calls: done.tail_calls_kept,
        max_stack: done.max_stack,
    };
    body.local_var_sig = 0x1100_0001;
    let bytes = body.encode().map_err(|e| fail("encode", &e))?;
    let again = MethodBody::decode(&bytes).map_err(|e| fail("re-decode", &e))?;
    check_shape(&original, &again, &facts, &hooks).map_err(|e| fail("shape", &e))?;
    Ok(Outcome::Transformed {
        eh: !original.clauses.is_empty(),
        tail_calls: done.tail_calls_kept,
    })
}

/// What the transformed body must hold, from the target and the transform's report.
struct Facts {
    this: Option<Instruction>,
    params: Vec<Instruction>,
    ret: Option<u16>,
    state: u16,
    exception: u16,
    on_hook: bool,
    tail_calls: usize,
    max_stack: u16,
}

/// The contract's shape, checked on the re-decoded body: the begin hook in its own
/// try/catch first; the original body (and its clauses) in a try/catch that records the
/// exception and rethrows, in a try/finally whose handler holds the end hook in its own
/// try/catch; the epilogue after it, the only `ret` but those of kept tail calls'
/// stubs; no `box` added; the clause list valid (inner first); the stack verified, with
/// the max stack the transform computed equal to a fresh analysis.
fn check_shape<R: CallSiteResolver>(
    original: &MethodBody,
    again: &MethodBody,
    f: &Facts,
    resolver: &Hooks<'_, R>,
) -> Result<(), String> {
    let returns = ReturnKind::value_if(f.ret.is_some());
    let fresh = StackAnalyzer::new()
        .analyze(again, resolver, returns)
        .map_err(|e| format!("does not verify: {e}"))?
        .max_stack();
    ensure(
        fresh == f.max_stack,
        "max stack differs from a fresh analysis",
    )?;
    ensure(again.max_stack == fresh, "header max stack")?;
    ensure(again.init_locals, "localsinit")?;
    again
        .validate_clauses()
        .map_err(|e| format!("clauses: {e}"))?;
    let pos = again.positions();
    let at = |id: InstrId| pos[id.index()] as usize;
    let code: Vec<Instruction> = again.instrs.iter().map(|(_, i)| i).collect();
    let target = |i: usize| match code.get(i).map(|i| i.operand) {
        Some(Operand::Target(t)) => Some(at(t)),
        _ => None,
    };
    let is = |i: usize, instr: Instruction| code.get(i) == Some(&instr);
    let call = |t| Instruction::with_token(OpCode::Call, t);
    let handler_len = 2;
    let report = match f.on_hook {
        true => call(ON_HOOK),
        false => Instruction::simple(OpCode::Pop),
    };

    // The begin hook.
    let mut entry: Vec<Instruction> = f.this.into_iter().chain(f.params.clone()).collect();
    entry.push(call(BEGIN));
    entry.push(Instruction::stloc(f.state));
    let k = entry.len();
    ensure(code.get(..k) == Some(&entry[..]), "entry code")?;
    let body_start = k + 1 + handler_len;
    let leaves = |i: usize| {
        matches!(
            code.get(i).map(|i| i.opcode),
            Some(OpCode::Leave | OpCode::LeaveS)
        )
    };
    ensure(leaves(k) && leaves(k + 2), "entry leaves")?;
    ensure(target(k) == Some(body_start), "entry leave target")?;
    ensure(is(k + 1, report), "entry handler")?;
    ensure(target(k + 2) == Some(body_start), "entry handler's leave")?;
    let clauses: Vec<(ClauseKind, usize, usize, usize, usize, Option<usize>)> = again
        .clauses
        .iter()
        .map(|c| {
            let filter = match c.kind {
                ClauseKind::Filter(f) => Some(at(f)),
                _ => None,
            };
            (
                c.kind,
                at(c.try_start),
                at(c.try_last),
                at(c.handler_start),
                at(c.handler_last),
                filter,
            )
        })
        .collect();
    ensure(
        clauses.len() == original.clauses.len() + 4,
        "four clauses added",
    )?;
    let catch = ClauseKind::Catch(EXCEPTION);
    let find = |kind: ClauseKind, try_: (usize, usize), handler: (usize, usize)| {
        clauses
            .iter()
            .any(|c| c.0 == kind && (c.1, c.2) == try_ && (c.3, c.4) == handler)
    };
    ensure(
        find(catch, (0, k), (k + 1, k + 2)),
        "the begin hook's clause",
    )?;

    // The finally around the body and its recording catch: the widest try starting at
    // the body.
    let finally = clauses
        .iter()
        .filter(|c| c.0 == ClauseKind::Finally && c.1 == body_start)
        .max_by_key(|c| c.2)
        .ok_or("no finally around the body")?;
    let rethrow = finally.2;
    ensure(is(rethrow, Instruction::simple(OpCode::Rethrow)), "rethrow")?;
    ensure(
        is(rethrow - 1, Instruction::stloc(f.exception)),
        "stloc exception",
    )?;
    ensure(
        find(catch, (body_start, rethrow - 2), (rethrow - 1, rethrow)),
        "the recording catch",
    )?;
    // The original clauses, all inside the body's try.
    for c in &clauses {
        let added = match c.0 {
            ClauseKind::Finally => (c.1, c.2) == (body_start, rethrow),
            kind if kind == catch => {
                (c.1, c.2) == (0, k) || (c.1, c.3) == (body_start, rethrow - 1) || c.1 == finally.3
            }
            _ => false,
        };
        let first = c.5.unwrap_or(c.1).min(c.1);
        if !added && (first < body_start || c.4 > rethrow - 2) {
            return Err(format!("an original clause outside the body: {c:?}"));
        }
    }

    // The end hook.
    let mut exit: Vec<Instruction> = f.this.into_iter().collect();
    exit.extend(f.ret.map(Instruction::ldloc));
    exit.push(Instruction::ldloc(f.exception));
    exit.push(Instruction::ldloca(f.state));
    exit.push(call(END));
    exit.extend(f.ret.map(Instruction::stloc));
    let h = finally.3;
    let x = h + exit.len();
    ensure(code.get(h..x) == Some(&exit[..]), "exit code")?;
    let endfinally = x + 1 + handler_len;
    ensure(
        finally.4 == endfinally,
        "the finally ends after the end hook's catch",
    )?;
    ensure(
        is(endfinally, Instruction::simple(OpCode::Endfinally)),
        "endfinally",
    )?;
    ensure(leaves(x) && leaves(x + 2), "exit leaves")?;
    ensure(target(x) == Some(endfinally), "exit leave")?;
    ensure(is(x + 1, report), "exit handler")?;
    ensure(target(x + 2) == Some(endfinally), "exit handler's leave")?;
    ensure(find(catch, (h, x), (x + 1, x + 2)), "the end hook's clause")?;

    // The epilogue, the only `ret` but the stubs'.
    let mut epilogue = endfinally + 1;
    if let Some(ret) = f.ret {
        ensure(is(epilogue, Instruction::ldloc(ret)), "epilogue load")?;
        epilogue += 1;
    }
    ensure(
        is(epilogue, Instruction::simple(OpCode::Ret)),
        "epilogue ret",
    )?;
    let rets: Vec<usize> = (0..code.len())
        .filter(|&i| code[i].opcode == OpCode::Ret)
        .collect();
    ensure(rets.len() == 1 + f.tail_calls, "one ret, and one per stub")?;
    for &r in &rets[1..] {
        let is_call = matches!(
            code[r - 1].opcode,
            OpCode::Call | OpCode::Callvirt | OpCode::Calli
        );
        ensure(
            r > epilogue && is_call && code[r - 2].opcode == OpCode::Tail,
            "a stub's tail call",
        )?;
    }
    ensure(rets[0] == epilogue, "the epilogue's ret first")?;
    let boxes = |b: &MethodBody| {
        b.instrs
            .iter()
            .filter(|(_, i)| i.opcode == OpCode::Box)
            .count()
    };
    ensure(boxes(again) == boxes(original), "no box added")?;
    Ok(())
}

fn ensure(ok: bool, what: &str) -> Result<(), String> {
    ok.then_some(()).ok_or_else(|| what.to_string())
}

/// What the corpus test counts.
#[derive(Default, Debug)]
struct Counts {
    bodies: usize,
    transformed: usize,
    with_eh: usize,
    tail_calls_kept: usize,
    refused: BTreeMap<String, usize>,
    failures: Vec<String>,
}

/// Every distinct body of both runtimes' CoreLib: transformed and checked, or refused
/// with a typed reason; no failure.
#[test]
fn every_corelib_body_is_transformed_or_refused_typed() {
    let runtimes = ilrewrite_corpus::runtimes().unwrap_or_else(|e| panic!("{e}"));
    assert!(runtimes.len() >= 2, "both runtimes");
    for runtime in runtimes {
        let data = std::fs::read(runtime.corelib()).expect("reads");
        let asm = Assembly::parse(&data).expect("parses");
        let module = CachingResolver::for_module(&asm);
        let mut counts = Counts::default();
        for (i, target) in targets(&asm).iter().enumerate() {
            counts.bodies += 1;
            match run(target, &module, i % 2 == 1, TailCallPolicy::Keep) {
                Ok(Outcome::Transformed { eh, tail_calls }) => {
                    counts.transformed += 1;
                    counts.with_eh += usize::from(eh);
                    counts.tail_calls_kept += tail_calls;
                }
                Ok(Outcome::Refused(reason)) => *counts.refused.entry(reason).or_default() += 1,
                Err(e) => counts.failures.push(e),
            }
        }
        println!(
            "{runtime} CoreLib: {} bodies, {} transformed ({} with EH clauses, {} tail calls kept), {} failures",
            counts.bodies,
            counts.transformed,
            counts.with_eh,
            counts.tail_calls_kept,
            counts.failures.len()
        );
        for (reason, n) in &counts.refused {
            println!("  refused {n:6}  {reason}");
        }
        for f in counts.failures.iter().take(20) {
            println!("  FAILED {f}");
        }
        assert!(counts.failures.is_empty());
        let refused: usize = counts.refused.values().sum();
        assert_eq!(counts.transformed + refused, counts.bodies);
        assert!(counts.transformed * 100 >= counts.bodies * 95, "{counts:?}");
    }
}

/// The targets of the newest runtime's CoreLib, and those with EH clauses.
struct Corpus {
    data: &'static [u8],
    all: Vec<Target<'static>>,
    with_eh: Vec<usize>,
}

static CORPUS: LazyLock<Corpus> = LazyLock::new(|| {
    let runtime = ilrewrite_corpus::default_runtime().unwrap_or_else(|e| panic!("{e}"));
    let data: &'static [u8] = std::fs::read(runtime.corelib()).expect("reads").leak();
    let all = targets(&Assembly::parse(data).expect("parses"));
    let with_eh = (0..all.len())
        .filter(|&i| {
            !MethodBody::decode(all[i].body)
                .expect("decodes")
                .clauses
                .is_empty()
        })
        .collect();
    Corpus { data, all, with_eh }
});

fn sample() -> impl Strategy<Value = usize> {
    (any::<bool>(), any::<Index>()).prop_map(|(eh, i)| {
        let c = &*CORPUS;
        match eh {
            true => c.with_eh[i.index(c.with_eh.len())],
            false => i.index(c.all.len()),
        }
    })
}

proptest! {
    #![proptest_config(common::config(256))]

    /// Over CoreLib bodies drawn at random, half of them with EH clauses, with or
    /// without the hook-exception report, keeping or dropping tail calls: the result
    /// has the contract's shape (see `check_shape`), or the body is refused typed and
    /// left as it was.
    #[test]
    fn random_corelib_bodies_take_the_contracts_shape(
        i in sample(),
        on_hook in any::<bool>(),
        keep in any::<bool>(),
    ) {
        let c = &*CORPUS;
        let asm = Assembly::parse(c.data).expect("parses");
        let module = CachingResolver::for_module(&asm);
        let policy = match keep {
            true => TailCallPolicy::Keep,
            false => TailCallPolicy::DropPrefix,
        };
        if let Err(e) = run(&c.all[i], &module, on_hook, policy) {
            prop_assert!(false, "{}", e);
        }
    }
}

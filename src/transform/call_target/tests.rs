//! The shapes of the CallTarget transform, instruction by instruction, and the hooks'
//! signatures.

use super::*;
use crate::analysis::{CallEffect, MetadataResolver};
use crate::body::ExceptionClause;
use crate::metadata::MetadataSource;
use std::collections::HashMap;

const BEGIN: u32 = 0x2B00_0101;
const END: u32 = 0x2B00_0102;
const ON_HOOK: u32 = 0x0A00_0F01;
const EXCEPTION: u32 = 0x0100_0001;
const STATE: u32 = 0x0100_0002;
/// A class and a value type of the module.
const CLASS: u32 = 0x0200_0002;
const STRUCT: u32 = 0x0200_0003;
/// static int32 CLASS::Callee(int32, int64), a callee for the tail calls.
const CALLEE: u32 = 0x0600_0001;

fn hooks(on_hook: bool) -> CallTargetHooks {
    CallTargetHooks {
        begin: BEGIN,
        end: END,
        on_hook_exception: on_hook.then_some(ON_HOOK),
        types: HookTypes {
            exception: EXCEPTION,
            state: TypeSig::ValueType(STATE),
        },
    }
}

/// Metadata for the callee of the tail calls.
struct Fake(HashMap<u32, Vec<u8>>);

impl MetadataSource for Fake {
    fn signature(&self, token: u32) -> Result<&[u8]> {
        self.0.get(&token).map(|s| &s[..]).ok_or(Error::BadToken {
            token,
            what: "unknown",
        })
    }
    fn method_spec_parent(&self, token: u32) -> Result<u32> {
        Err(Error::BadToken {
            token,
            what: "unknown",
        })
    }
    fn member_parent(&self, _: u32) -> Result<u32> {
        Ok(CLASS)
    }
}

/// The hooks' stack effects for a target with signature `sig`, every other call through
/// the fake metadata.
struct Hooks(MetadataResolver<Fake>, CallEffect, CallEffect);

impl CallSiteResolver for Hooks {
    fn call_effect(&self, opcode: OpCode, token: u32) -> Result<CallEffect> {
        match token {
            BEGIN => Ok(self.1),
            END => Ok(self.2),
            ON_HOOK => Ok(CallEffect { pops: 1, pushes: 0 }),
            _ => self.0.call_effect(opcode, token),
        }
    }
    fn metadata(&self) -> Option<&dyn MetadataSource> {
        Some(self.0.metadata())
    }
}

fn resolver(sig: &[u8]) -> Hooks {
    let sig = MethodSig::parse(sig).unwrap();
    let this = u16::from(sig.has_this);
    let value = !matches!(sig.return_type, TypeSig::Void);
    let mut md = HashMap::new();
    md.insert(CALLEE, vec![0x00, 0x02, 0x08, 0x08, 0x0A]);
    Hooks(
        MetadataResolver::new(Fake(md)),
        CallEffect {
            pops: this + sig.params.len() as u16,
            pushes: 1,
        },
        CallEffect {
            pops: this + u16::from(value) + 2,
            pushes: u16::from(value),
        },
    )
}

/// A body from instructions (branch targets are positions), decoded from its encoding.
fn body(code: &[Instruction]) -> MethodBody {
    let mut b = MethodBody::new();
    for &i in code {
        b.append(i);
    }
    MethodBody::decode(&b.encode().unwrap()).unwrap()
}

fn op(opcode: OpCode) -> Instruction {
    Instruction::simple(opcode)
}

fn call(token: u32) -> Instruction {
    Instruction::with_token(OpCode::Call, token)
}

fn leave(to: u32) -> Instruction {
    Instruction::branch(OpCode::Leave, InstrId(to))
}

/// What a transformed body is once encoded and decoded again: its instructions in
/// order, its clauses as position ranges, and checked to verify with the max stack the
/// transform computed.
struct Transformed {
    code: Vec<Instruction>,
    /// (kind, try first..=last, handler first..=last), positions.
    clauses: Vec<Clause>,
    done: (Returns, u16, u16, Vec<u8>, usize, usize),
    listing: String,
}

/// A clause as positions: kind, try first and last, handler first and last.
type Clause = (ClauseKind, (u32, u32), (u32, u32));

fn transform(
    original: &MethodBody,
    sig: &[u8],
    locals: Option<&[u8]>,
    declaring: &TypeSig,
    on_hook: bool,
    policy: TailCallPolicy,
) -> Result<Transformed> {
    let mut body = original.clone();
    let method = MethodContext {
        locals,
        ..MethodContext::new(sig, 1)
    };
    let resolver = resolver(sig);
    let mut ct = CallTarget::new().with_tail_call_policy(policy);
    let done = match ct.apply(&mut body, &method, declaring, &hooks(on_hook), &resolver) {
        Ok(done) => done,
        Err(e) => {
            assert_eq!(
                format!("{body:?}"),
                format!("{original:?}"),
                "left as it was"
            );
            return Err(e);
        }
    };
    let done = (
        done.returns,
        done.state_local,
        done.exception_local,
        done.new_locals_signature.to_vec(),
        done.tail_calls_kept,
        done.max_stack as usize,
    );
    assert!(body.init_locals);
    body.local_var_sig = 0x1100_0001;
    let again = MethodBody::decode(&body.encode().unwrap()).unwrap();
    let returns = ReturnKind::from(done.0);
    let fresh = StackAnalyzer::new()
        .analyze(&again, &resolver, returns)
        .unwrap()
        .max_stack();
    assert_eq!(usize::from(fresh), done.5);
    assert_eq!(again.max_stack, fresh);
    again.validate_clauses().unwrap();
    let pos = again.positions();
    let at = |id: InstrId| pos[id.index()];
    let clauses: Vec<Clause> = again
        .clauses
        .iter()
        .map(|c: &ExceptionClause| {
            (
                c.kind,
                (at(c.try_start), at(c.try_last)),
                (at(c.handler_start), at(c.handler_last)),
            )
        })
        .collect::<Vec<_>>();
    let mut clauses = clauses;
    clauses.sort_by_key(|c| (c.1, c.2));
    // Branch targets as positions, to compare with the expected code.
    let code = again
        .instrs
        .iter()
        .map(|(_, i)| match i.operand {
            crate::graph::Operand::Target(t) => Instruction::branch(i.opcode, InstrId(at(t))),
            _ => i,
        })
        .collect();
    let listing = crate::disasm::disassemble(&again, &crate::metadata::NoMetadata, None)
        .unwrap()
        .to_string();
    Ok(Transformed {
        code,
        clauses,
        done,
        listing,
    })
}

fn catch() -> ClauseKind {
    ClauseKind::Catch(EXCEPTION)
}

/// static int32 M(int32 x): `ldarg.0; ret`, with one local already.
#[test]
fn a_static_value_method() {
    let original = body(&[op(OpCode::Ldarg0), op(OpCode::Ret)]);
    let sig = [0x00, 0x01, 0x08, 0x08];
    let r = transform(
        &original,
        &sig,
        Some(&[0x07, 0x01, 0x0E]),
        &TypeSig::Class(CLASS),
        false,
        TailCallPolicy::Keep,
    )
    .unwrap();
    println!("{}", r.listing);
    // Locals: string (existing), int32 ret = 1, state = 2, exception = 3.
    assert_eq!(r.done.0, Returns::Value { local: 1 });
    assert_eq!((r.done.1, r.done.2), (2, 3));
    assert_eq!(r.done.3, [0x07, 0x04, 0x0E, 0x08, 0x11, 0x09, 0x12, 0x05]);
    let expected = [
        // begin
        Instruction::ldarga(0),
        call(BEGIN),
        Instruction::stloc(2),
        leave(6),
        op(OpCode::Pop),
        leave(6),
        // body
        op(OpCode::Ldarg0),
        Instruction::stloc(1),
        leave(20),
        // catch: record, rethrow
        Instruction::stloc(3),
        op(OpCode::Rethrow),
        // finally: end
        Instruction::ldloc(1),
        Instruction::ldloc(3),
        Instruction::ldloca(2),
        call(END),
        Instruction::stloc(1),
        leave(19),
        op(OpCode::Pop),
        leave(19),
        op(OpCode::Endfinally),
        // epilogue
        Instruction::ldloc(1),
        op(OpCode::Ret),
    ];
    assert_eq!(r.code, expected);
    assert_eq!(
        r.clauses,
        [
            (catch(), (0, 3), (4, 5)),
            (catch(), (6, 8), (9, 10)),
            (ClauseKind::Finally, (6, 10), (11, 19)),
            (catch(), (11, 16), (17, 18)),
        ]
    );
    assert_eq!(r.done.5, 3);
}

/// instance void C::M(): `ret`; the hooks' exceptions reported.
#[test]
fn an_instance_void_method_reports_hook_exceptions() {
    let original = body(&[op(OpCode::Ret)]);
    let r = transform(
        &original,
        &[0x20, 0x00, 0x01],
        None,
        &TypeSig::Class(CLASS),
        true,
        TailCallPolicy::Keep,
    )
    .unwrap();
    println!("{}", r.listing);
    assert_eq!(r.done.0, Returns::Void);
    assert_eq!((r.done.1, r.done.2), (0, 1));
    assert_eq!(r.done.3, [0x07, 0x02, 0x11, 0x09, 0x12, 0x05]);
    let expected = [
        Instruction::ldarga(0),
        call(BEGIN),
        Instruction::stloc(0),
        leave(6),
        call(ON_HOOK),
        leave(6),
        leave(17),
        Instruction::stloc(1),
        op(OpCode::Rethrow),
        Instruction::ldarga(0),
        Instruction::ldloc(1),
        Instruction::ldloca(0),
        call(END),
        leave(16),
        call(ON_HOOK),
        leave(16),
        op(OpCode::Endfinally),
        // The epilogue: the `ret` (none of the body's `ret`s is left).
        op(OpCode::Ret),
    ];
    assert_eq!(r.code, expected);
    assert_eq!(
        r.clauses,
        [
            (catch(), (0, 3), (4, 5)),
            (catch(), (6, 6), (7, 8)),
            (ClauseKind::Finally, (6, 8), (9, 16)),
            (catch(), (9, 13), (14, 15)),
        ]
    );
    assert_eq!(r.done.5, 3);
}

/// A value type's `this` is its managed pointer already: `ldarg.0`, in both hooks.
#[test]
fn a_value_types_this_is_passed_as_it_is() {
    let original = body(&[op(OpCode::Ret)]);
    for declaring in [
        TypeSig::ValueType(STRUCT),
        TypeSig::I4,
        TypeSig::GenericInst {
            is_value_type: true,
            token: STRUCT,
            args: vec![TypeSig::Var(0)],
        },
    ] {
        let r = transform(
            &original,
            &[0x20, 0x00, 0x01],
            None,
            &declaring,
            false,
            TailCallPolicy::Keep,
        )
        .unwrap();
        assert_eq!(r.code[0], op(OpCode::Ldarg0), "{declaring:?}");
        assert_eq!(r.code[9], op(OpCode::Ldarg0), "{declaring:?}");
        assert!(!r.code.contains(&Instruction::ldarga(0)));
    }
}

/// Twelve parameters, by-ref ones among them: each by address or as it is, in order,
/// and no `box` anywhere; none at all for a method without parameters.
#[test]
fn parameters_by_address_or_as_they_are() {
    // static void M(int32, int32&, float64, valuetype S, int32, modreq(In) string&, ...,
    // object&): 12 params, by-ref at 1, 5 and 11.
    let mut sig = vec![0x00, 12, 0x01];
    for i in 0..12 {
        match i {
            1 => sig.extend([0x10, 0x08]),
            5 => sig.extend([0x1F, 0x05, 0x10, 0x0E]),
            11 => sig.extend([0x10, 0x1C]),
            _ => match i % 4 {
                0 => sig.push(0x08),
                1 => sig.push(0x0E),
                2 => sig.push(0x0D),
                _ => sig.extend([0x11, 0x0C]),
            },
        }
    }
    let original = body(&[op(OpCode::Ret)]);
    let r = transform(
        &original,
        &sig,
        None,
        &TypeSig::Class(CLASS),
        false,
        TailCallPolicy::Keep,
    )
    .unwrap();
    println!("{}", r.listing);
    for (i, instr) in r.code[..12].iter().enumerate() {
        let expected = match i {
            1 | 5 | 11 => Instruction::ldarg(i as u16),
            _ => Instruction::ldarga(i as u16),
        };
        assert_eq!(*instr, expected, "{i}");
    }
    assert_eq!(r.code[12], call(BEGIN));
    assert!(!r.code.iter().any(|i| i.opcode == OpCode::Box));
    assert_eq!(r.done.5, 12);
    // The begin hook's signature and instantiation agree.
    let target = MethodSig::parse(&sig).unwrap();
    let h = HookSignatures::of(&target, &TypeSig::Class(CLASS), &hooks(false).types).unwrap();
    assert_eq!(h.begin.generic_param_count, 13);
    assert_eq!(h.begin.params.len(), 12);
    assert_eq!(h.begin_instantiation[2], TypeSig::I4);
    assert_eq!(h.begin_instantiation[4], TypeSig::ValueType(STRUCT));
    assert_eq!(h.begin_instantiation[6], TypeSig::String);
    assert_eq!(h.begin_instantiation[12], TypeSig::Object);
    assert_eq!(h.end_instantiation, [TypeSig::Class(CLASS)]);

    // No parameter: the call alone.
    let r = transform(
        &original,
        &[0x00, 0x00, 0x01],
        None,
        &TypeSig::Class(CLASS),
        false,
        TailCallPolicy::Keep,
    )
    .unwrap();
    assert_eq!(r.code[0], call(BEGIN));
    // The end hook's exception and state.
    assert_eq!(r.done.5, 2);
}

/// The hooks' signatures as the contract writes them, for every kind of target.
#[test]
fn hook_signatures_follow_the_contract() {
    let types = hooks(false).types;
    let state = TypeSig::ValueType(STATE);
    let r = |t: TypeSig| TypeSig::ByRef(Box::new(t));
    // instance int32 C::M(string, int64&)
    let t = MethodSig::parse(&[0x20, 0x02, 0x08, 0x0E, 0x10, 0x0A]).unwrap();
    let h = HookSignatures::of(&t, &TypeSig::Class(CLASS), &types).unwrap();
    let mut begin = MethodSig::new(
        state.clone(),
        vec![
            r(TypeSig::MVar(0)),
            r(TypeSig::MVar(1)),
            r(TypeSig::MVar(2)),
        ],
    );
    begin.generic_param_count = 3;
    assert_eq!(h.begin, begin);
    let mut end = MethodSig::new(
        TypeSig::MVar(1),
        vec![
            r(TypeSig::MVar(0)),
            TypeSig::MVar(1),
            TypeSig::Class(EXCEPTION),
            r(state.clone()),
        ],
    );
    end.generic_param_count = 2;
    assert_eq!(h.end, end);
    // Encoded: GENERIC 3, 3 params, valuetype State, ref !!0, ref !!1, ref !!2.
    assert_eq!(
        h.begin.to_bytes().unwrap(),
        [
            0x10, 0x03, 0x03, 0x11, 0x09, 0x10, 0x1E, 0x00, 0x10, 0x1E, 0x01, 0x10, 0x1E, 0x02
        ]
    );
    // static void M(): arity 1 and 1, no instance parameter.
    let t = MethodSig::parse(&[0x00, 0x00, 0x01]).unwrap();
    let h = HookSignatures::of(&t, &TypeSig::Class(CLASS), &types).unwrap();
    assert_eq!(h.begin.generic_param_count, 1);
    assert!(h.begin.params.is_empty());
    assert_eq!(h.end.generic_param_count, 1);
    assert_eq!(h.end.params, [TypeSig::Class(EXCEPTION), r(state.clone())]);
    assert_eq!(h.end.return_type, TypeSig::Void);
    // A generic method of a generic type: static !!0 G<T>::M<U>(!0, !!0[], !!0&).
    let t = MethodSig::parse(&[
        0x10, 0x01, 0x03, 0x1E, 0x00, 0x13, 0x00, 0x1D, 0x1E, 0x00, 0x10, 0x1E, 0x00,
    ])
    .unwrap();
    let g = TypeSig::GenericInst {
        is_value_type: false,
        token: CLASS,
        args: vec![TypeSig::Var(0)],
    };
    let h = HookSignatures::of(&t, &g, &types).unwrap();
    assert_eq!(
        h.begin_instantiation,
        [
            g.clone(),
            TypeSig::Var(0),
            TypeSig::SzArray(Box::new(TypeSig::MVar(0))),
            TypeSig::MVar(0)
        ]
    );
    assert_eq!(h.end_instantiation, [g.clone(), TypeSig::MVar(0)]);
    // OnMethodEnd<G<!0>, !!0>: GENERICINST 2, GENERICINST CLASS C 1 VAR 0, MVAR 0.
    assert_eq!(
        HookSignatures::method_spec_blob(&h.end_instantiation).unwrap(),
        [0x0A, 0x02, 0x15, 0x12, 0x08, 0x01, 0x13, 0x00, 0x1E, 0x00]
    );
}

/// What cannot be a generic argument is refused, typed, before anything.
#[test]
fn what_cannot_be_a_generic_argument_is_refused() {
    use CallTargetRefusal::*;
    let refusal = |sig: &[u8]| {
        let original = body(&[op(OpCode::Ret)]);
        match transform(
            &original,
            sig,
            None,
            &TypeSig::Class(CLASS),
            false,
            TailCallPolicy::Keep,
        ) {
            Err(Error::CallTargetRefused { reason }) => Some(reason),
            Err(e) => panic!("{e}"),
            Ok(_) => None,
        }
    };
    assert_eq!(refusal(&[0x00, 0x01, 0x01, 0x0F, 0x08]), Some(Pointer)); // int32*
    assert_eq!(
        refusal(&[0x00, 0x01, 0x01, 0x10, 0x0F, 0x01]),
        Some(Pointer)
    ); // void*&
    assert_eq!(refusal(&[0x00, 0x00, 0x0F, 0x01]), Some(Pointer)); // returns void*
    assert_eq!(
        refusal(&[0x00, 0x01, 0x01, 0x1B, 0x00, 0x00, 0x01]),
        Some(FunctionPointer)
    );
    assert_eq!(refusal(&[0x00, 0x01, 0x01, 0x16]), Some(TypedReference));
    assert_eq!(refusal(&[0x00, 0x00, 0x10, 0x08]), Some(ByRefReturn));
    assert_eq!(refusal(&[0x05, 0x00, 0x01]), Some(VarArg));
    assert_eq!(
        refusal(&[0x60, 0x01, 0x01, 0x12, 0x08]),
        Some(CallingConvention)
    );
    assert_eq!(refusal(&[0x00, 0x01, 0x01, 0x0D]), None); // valuetype: fine
    // The refusals of the body: jmp, ret in a handler.
    let sig = [0x00, 0x00, 0x01];
    let jmp = body(&[Instruction::with_token(OpCode::Jmp, CALLEE)]);
    assert!(matches!(
        transform(
            &jmp,
            &sig,
            None,
            &TypeSig::Class(CLASS),
            false,
            TailCallPolicy::Keep
        ),
        Err(Error::CallTargetRefused { reason: Jmp })
    ));
    // .try { leave 3 } catch { pop; ret }  ret
    let mut in_handler = body(&[leave(3), op(OpCode::Pop), op(OpCode::Ret), op(OpCode::Ret)]);
    in_handler
        .add_clause(ExceptionClause::new(
            catch(),
            InstrId(0),
            InstrId(0),
            InstrId(1),
            InstrId(2),
        ))
        .unwrap();
    assert!(matches!(
        transform(
            &in_handler,
            &sig,
            None,
            &TypeSig::Class(CLASS),
            false,
            TailCallPolicy::Keep
        ),
        Err(Error::CallTargetRefused {
            reason: RetInHandler
        })
    ));
}

/// `tail. call Callee; ret` in a method that also has a plain return: kept through a
/// stub after the handlers under `Keep` (the call's operands stored in new locals
/// after the state and exception locals), refused under `Refuse`.
#[test]
fn tail_calls_are_kept_or_refused() {
    // static int32 M(int32 x, int64 y)
    let sig = [0x00, 0x02, 0x08, 0x08, 0x0A];
    // ldarg.0; brfalse 5; ldarg.0; ldarg.1; tail. call Callee; ret; ldc.i4.0; ret
    let original = body(&[
        op(OpCode::Ldarg0),
        Instruction::branch(OpCode::Brfalse, InstrId(7)),
        op(OpCode::Ldarg0),
        op(OpCode::Ldarg1),
        op(OpCode::Tail),
        call(CALLEE),
        op(OpCode::Ret),
        Instruction::ldc_i4(0),
        op(OpCode::Ret),
    ]);
    let r = transform(
        &original,
        &sig,
        None,
        &TypeSig::Class(CLASS),
        false,
        TailCallPolicy::Keep,
    )
    .unwrap();
    println!("{}", r.listing);
    // ret = 0, state = 1, exception = 2, the callee's operands 3 (int32) and 4 (int64).
    assert_eq!(r.done.4, 1);
    assert_eq!(
        r.done.3,
        [0x07, 0x05, 0x08, 0x11, 0x09, 0x12, 0x05, 0x08, 0x0A]
    );
    // The stub, last: ldloc.3; ldloc.s 4; tail. call Callee; ret, outside every clause.
    let n = r.code.len();
    assert_eq!(
        r.code[n - 5..],
        [
            Instruction::ldloc(3),
            Instruction::ldloc(4),
            op(OpCode::Tail),
            call(CALLEE),
            op(OpCode::Ret)
        ]
    );
    let last_handler = r.clauses.iter().map(|c| c.2.1).max().unwrap() as usize;
    assert!(last_handler < n - 5);
    assert!(matches!(
        transform(
            &original,
            &sig,
            None,
            &TypeSig::Class(CLASS),
            false,
            TailCallPolicy::Refuse
        ),
        Err(Error::TailCallNotKept {
            reason: TailCallRefusal::PolicyRefuses,
            ..
        })
    ));
    // Dropped: no stub, no tail. left.
    let r = transform(
        &original,
        &sig,
        None,
        &TypeSig::Class(CLASS),
        false,
        TailCallPolicy::DropPrefix,
    )
    .unwrap();
    assert!(!r.code.iter().any(|i| i.opcode == OpCode::Tail));
    assert_eq!(r.code.iter().filter(|i| i.opcode == OpCode::Ret).count(), 1);
}

/// A hook's stack effect the resolver cannot give fails after the edits: the body is
/// restored as it was.
#[test]
fn the_body_is_restored_on_a_late_error() {
    let original = body(&[op(OpCode::Ldarg0), op(OpCode::Ret)]);
    let mut b = original.clone();
    let method = MethodContext::new(&[0x00, 0x01, 0x08, 0x08], 1);
    let fails = |_: OpCode, token: u32| -> Result<CallEffect> {
        Err(Error::UnresolvedCall {
            opcode: "call",
            token,
            what: "unknown",
        })
    };
    let mut ct = CallTarget::new();
    let e = ct.apply(
        &mut b,
        &method,
        &TypeSig::Class(CLASS),
        &hooks(false),
        &fails,
    );
    assert!(matches!(e, Err(Error::CallResolution { .. })), "{e:?}");
    assert_eq!(format!("{b:?}"), format!("{original:?}"));
}

/// A body with its own try/finally and a tail call after it, the hooks' exceptions
/// reported: the tail call kept, the original clause inside the body's try, the four
/// new clauses around it.
#[test]
fn clauses_and_a_kept_tail_call_together() {
    // static int32 M(int32 x, int64 y):
    // .try { nop; leave 3 } finally { endfinally }  ldarg.0; ldarg.1; tail. call; ret
    let mut original = body(&[
        op(OpCode::Nop),
        leave(3),
        op(OpCode::Endfinally),
        op(OpCode::Ldarg0),
        op(OpCode::Ldarg1),
        op(OpCode::Tail),
        call(CALLEE),
        op(OpCode::Ret),
    ]);
    original
        .add_clause(ExceptionClause::new(
            ClauseKind::Finally,
            InstrId(0),
            InstrId(1),
            InstrId(2),
            InstrId(2),
        ))
        .unwrap();
    let r = transform(
        &original,
        &[0x00, 0x02, 0x08, 0x08, 0x0A],
        None,
        &TypeSig::Class(CLASS),
        true,
        TailCallPolicy::Keep,
    )
    .unwrap();
    println!("{}", r.listing);
    assert_eq!(r.done.4, 1);
    assert_eq!(r.clauses.len(), 5);
    // The original finally: `nop; leave` right after the begin hook's clause.
    let body_start = 7;
    assert!(r.clauses.contains(&(
        ClauseKind::Finally,
        (body_start, body_start + 1),
        (body_start + 2, body_start + 2)
    )));
    let n = r.code.len();
    assert_eq!(
        r.code[n - 3..],
        [op(OpCode::Tail), call(CALLEE), op(OpCode::Ret)]
    );
    assert_eq!(
        r.code.iter().filter(|i| **i == call(ON_HOOK)).count(),
        2,
        "both guards report"
    );
}

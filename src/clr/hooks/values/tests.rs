//! Plans against hand-worked System V cases, and values read back from synthetic frames.

use proptest::prelude::*;

use super::layout::{Field, FixedLayouts, NoLayouts, Scalar as S, Shape, StructLayout};
use super::plan::{ArgKind, Decode, HiddenArgs, Location, Part, Register, Unavailable, ValuePlan};
use super::read::{StructBytes, Value};
use crate::clr::hooks::EltFrame;
use crate::sig::{CallingConvention, MethodSig, TypeSig};

use Register::{Arg, Rax, Rdx, Xmm};

/// Value-type tokens of the test layouts.
const LL: u32 = 0x0200_0001; // {long, long}
const LD: u32 = 0x0200_0002; // {long, double}
const DL: u32 = 0x0200_0003; // {double, long}
const DD: u32 = 0x0200_0004; // {double, double}
const FFFF: u32 = 0x0200_0005; // {float, float, float, float}
const IF: u32 = 0x0200_0006; // {int, float}
const BIG: u32 = 0x0200_0007; // {long, long, long}: 24 bytes
const ENUM: u32 = 0x0200_0008; // enum : short
const UNKNOWN: u32 = 0x0200_0009; // not in the table

fn seq(size: u32, fields: &[(u32, S)]) -> Shape {
    Shape::Struct(StructLayout::sequential(
        size,
        fields.iter().map(|&(o, s)| Field::scalar(o, s)).collect(),
    ))
}

fn layouts() -> FixedLayouts {
    FixedLayouts::new()
        .with_type(LL, seq(16, &[(0, S::I8), (8, S::I8)]))
        .with_type(LD, seq(16, &[(0, S::I8), (8, S::R8)]))
        .with_type(DL, seq(16, &[(0, S::R8), (8, S::I8)]))
        .with_type(DD, seq(16, &[(0, S::R8), (8, S::R8)]))
        .with_type(
            FFFF,
            seq(16, &[(0, S::R4), (4, S::R4), (8, S::R4), (12, S::R4)]),
        )
        .with_type(IF, seq(8, &[(0, S::I4), (4, S::R4)]))
        .with_type(BIG, seq(24, &[(0, S::I8), (8, S::I8), (16, S::I8)]))
        .with_type(ENUM, Shape::Scalar(S::I2))
}

fn method(has_this: bool, ret: TypeSig, params: Vec<TypeSig>) -> MethodSig {
    let mut sig = MethodSig::new(ret, params);
    sig.has_this = has_this;
    sig
}

fn plan(sig: &MethodSig) -> ValuePlan {
    ValuePlan::new(sig, HiddenArgs::PLAIN, &layouts()).expect("plans")
}

fn locations(plan: &ValuePlan) -> Vec<Location> {
    plan.arg_slots().map(|(_, s)| s.location).collect()
}

fn reg(r: Register) -> Location {
    Location::Register(r)
}

fn pair(a: (Register, u8), b: (Register, u8)) -> Location {
    Location::Registers {
        parts: [
            Part {
                register: a.0,
                bytes: a.1,
            },
            Part {
                register: b.0,
                bytes: b.1,
            },
        ],
        count: 2,
    }
}

fn one(r: Register, bytes: u8) -> Location {
    Location::Registers {
        parts: [
            Part { register: r, bytes },
            Part {
                register: Rax,
                bytes: 0,
            },
        ],
        count: 1,
    }
}

/// Eight ints and ten doubles: the 7th and 8th int and the 9th and 10th double go to the
/// stack, in signature order, 8 bytes each.
#[test]
fn more_than_six_ints_and_eight_floats_spill_in_order() {
    let mut params = vec![TypeSig::I4; 8];
    params.extend(vec![TypeSig::R8; 10]);
    let p = plan(&method(false, TypeSig::Void, params));
    let mut want: Vec<Location> = (0..6).map(|i| reg(Arg(i))).collect();
    want.extend([Location::Stack(0), Location::Stack(8)]);
    want.extend((0..8).map(|i| reg(Xmm(i))));
    want.extend([Location::Stack(16), Location::Stack(24)]);
    assert_eq!(locations(&p), want);
    assert_eq!(p.stack_bytes(), 32);
    assert_eq!(p.ret_slot(), None);
}

/// `this`, then ints and floats each in their own sequence of registers.
#[test]
fn mixed_ints_and_floats_with_this() {
    let sig = method(
        true,
        TypeSig::R4,
        vec![
            TypeSig::I4,
            TypeSig::R8,
            TypeSig::I8,
            TypeSig::R4,
            TypeSig::String,
            TypeSig::Boolean,
        ],
    );
    let p = plan(&sig);
    assert_eq!(
        locations(&p),
        [
            reg(Arg(0)),
            reg(Arg(1)),
            reg(Xmm(0)),
            reg(Arg(2)),
            reg(Xmm(1)),
            reg(Arg(3)),
            reg(Arg(4))
        ]
    );
    let kinds: Vec<ArgKind> = p.arg_slots().map(|(k, _)| k).collect();
    assert_eq!(kinds[0], ArgKind::This);
    assert_eq!(kinds[1], ArgKind::Param(0));
    assert_eq!(p.arg_slots().next().unwrap().1.decode, Decode::Object);
    let ret = p.ret_slot().unwrap();
    assert_eq!(
        (ret.location, ret.decode),
        (reg(Xmm(0)), Decode::Scalar(S::R4))
    );
}

/// Each two-register struct class, returned: RAX:RDX, RAX:XMM0, XMM0:RAX, XMM0:XMM1;
/// four floats in XMM0:XMM1; {int, float} in one general register.
#[test]
fn struct_returns_in_every_register_pair() {
    let cases = [
        (LL, pair((Rax, 8), (Rdx, 8))),
        (LD, pair((Rax, 8), (Xmm(0), 8))),
        (DL, pair((Xmm(0), 8), (Rax, 8))),
        (DD, pair((Xmm(0), 8), (Xmm(1), 8))),
        (FFFF, pair((Xmm(0), 8), (Xmm(1), 8))),
        (IF, one(Rax, 8)),
    ];
    for (token, want) in cases {
        let p = plan(&method(false, TypeSig::ValueType(token), vec![TypeSig::I4]));
        assert_eq!(p.ret_slot().unwrap().location, want, "{token:#x}");
        assert_eq!(p.return_buffer_register(), None);
        // No return buffer: the int is in RDI.
        assert_eq!(locations(&p), [reg(Arg(0))]);
    }
}

/// The same structs as arguments take the next registers of each class.
#[test]
fn struct_arguments_take_registers_of_their_classes() {
    let sig = method(
        false,
        TypeSig::Void,
        [LL, LD, DL, DD, IF]
            .iter()
            .map(|&t| TypeSig::ValueType(t))
            .collect(),
    );
    assert_eq!(
        locations(&plan(&sig)),
        [
            pair((Arg(0), 8), (Arg(1), 8)),
            pair((Arg(2), 8), (Xmm(0), 8)),
            pair((Xmm(1), 8), (Arg(3), 8)),
            pair((Xmm(2), 8), (Xmm(3), 8)),
            one(Arg(4), 8),
        ]
    );
}

/// A 24-byte struct: on the stack as an argument, through a return buffer as a return
/// value, whose address takes the register after `this`.
#[test]
fn big_struct_on_the_stack_and_through_a_return_buffer() {
    let big = TypeSig::ValueType(BIG);
    let p = plan(&method(
        true,
        big.clone(),
        vec![TypeSig::I4, big.clone(), TypeSig::I4],
    ));
    assert_eq!(p.return_buffer_register(), Some(Arg(1)));
    assert_eq!(
        locations(&p),
        [reg(Arg(0)), reg(Arg(2)), Location::Stack(0), reg(Arg(3))]
    );
    assert_eq!(p.stack_bytes(), 24);
    let ret = p.ret_slot().unwrap();
    assert_eq!(
        (ret.location, ret.decode),
        (Location::ReturnBuffer, Decode::Struct(24))
    );
    // Static: the buffer in RDI.
    let p = plan(&method(false, big, vec![TypeSig::I4]));
    assert_eq!(p.return_buffer_register(), Some(Arg(0)));
    assert_eq!(locations(&p), [reg(Arg(1))]);
}

/// A struct needing two general registers when one is left goes whole on the stack; the
/// register left is taken by the next integer. The same for XMM registers.
#[test]
fn a_struct_that_does_not_fit_goes_whole_to_the_stack() {
    let mut params = vec![TypeSig::I8; 5];
    params.extend([TypeSig::ValueType(LL), TypeSig::I8, TypeSig::I8]);
    let p = plan(&method(false, TypeSig::Void, params));
    let got = locations(&p);
    assert_eq!(got[5], Location::Stack(0));
    assert_eq!(got[6], reg(Arg(5)));
    assert_eq!(got[7], Location::Stack(16));
    let mut params = vec![TypeSig::R8; 7];
    params.extend([TypeSig::ValueType(DD), TypeSig::R8]);
    let got = locations(&plan(&method(false, TypeSig::Void, params)));
    assert_eq!(got[7], Location::Stack(0));
    assert_eq!(got[8], reg(Xmm(7)));
    // {long, double} with the general registers gone but XMM free: stack.
    let mut params = vec![TypeSig::I8; 6];
    params.push(TypeSig::ValueType(LD));
    params.push(TypeSig::R8);
    let got = locations(&plan(&method(false, TypeSig::Void, params)));
    assert_eq!(got[6], Location::Stack(0));
    assert_eq!(got[7], reg(Xmm(0)));
}

/// An enum is its underlying type; `this` of a value type's method is a byref; a
/// `TypedReference` takes two general registers.
#[test]
fn enums_value_type_this_and_typed_references() {
    let sig = method(
        true,
        TypeSig::ValueType(ENUM),
        vec![TypeSig::ValueType(ENUM), TypeSig::TypedByRef],
    );
    let hidden = HiddenArgs {
        value_type_this: true,
        generic_context: Some(false),
    };
    let p = ValuePlan::new(&sig, hidden, &layouts()).unwrap();
    let slots: Vec<_> = p.arg_slots().map(|(_, s)| (s.location, s.decode)).collect();
    assert_eq!(slots[0], (reg(Arg(0)), Decode::Scalar(S::ByRef)));
    assert_eq!(slots[1], (reg(Arg(1)), Decode::Scalar(S::I2)));
    assert_eq!(
        slots[2],
        (pair((Arg(2), 8), (Arg(3), 8)), Decode::Struct(16))
    );
    assert_eq!(p.ret_slot().unwrap().location, reg(Rax));
}

/// Fail closed: an unknown layout makes that argument and every later one unavailable,
/// not the earlier ones; an unknown return layout makes all parameters unavailable (a
/// return buffer would shift them), not `this`; an unknown generic context the same.
#[test]
fn unknowns_fail_closed() {
    let u = TypeSig::ValueType(UNKNOWN);
    let p = plan(&method(
        false,
        TypeSig::Void,
        vec![TypeSig::I4, u.clone(), TypeSig::R8],
    ));
    assert_eq!(
        locations(&p),
        [
            reg(Arg(0)),
            Location::Unavailable(Unavailable::Layout),
            Location::Unavailable(Unavailable::AfterUnknown)
        ]
    );
    assert_eq!(p.layout_errors().len(), 1);
    let p = plan(&method(true, u, vec![TypeSig::I4]));
    assert_eq!(
        locations(&p),
        [
            reg(Arg(0)),
            Location::Unavailable(Unavailable::ReturnUnknown)
        ]
    );
    let sig = method(false, TypeSig::I4, vec![TypeSig::I4]);
    let unknown = HiddenArgs {
        value_type_this: false,
        generic_context: None,
    };
    let p = ValuePlan::new(&sig, unknown, &layouts()).unwrap();
    assert_eq!(
        locations(&p),
        [Location::Unavailable(Unavailable::GenericContext)]
    );
    assert_eq!(p.ret_slot().unwrap().location, reg(Rax));
    // With a generic context, it takes the register after the return buffer.
    let known = HiddenArgs {
        value_type_this: false,
        generic_context: Some(true),
    };
    let sig = method(true, TypeSig::ValueType(BIG), vec![TypeSig::I4]);
    let p = ValuePlan::new(&sig, known, &layouts()).unwrap();
    assert_eq!(p.return_buffer_register(), Some(Arg(1)));
    assert_eq!(p.generic_context_register(), Some(Arg(2)));
    assert_eq!(locations(&p), [reg(Arg(0)), reg(Arg(3))]);
    // Varargs: unavailable. A type variable without a provider: unavailable.
    let mut sig = method(false, TypeSig::Void, vec![TypeSig::I4]);
    sig.calling_convention = CallingConvention::VarArg;
    assert_eq!(
        locations(&plan(&sig)),
        [Location::Unavailable(Unavailable::VarArgs)]
    );
    let sig = method(false, TypeSig::Void, vec![TypeSig::MVar(0)]);
    let p = ValuePlan::new(&sig, HiddenArgs::PLAIN, &NoLayouts).unwrap();
    assert_eq!(locations(&p), [Location::Unavailable(Unavailable::Layout)]);
}

/// A blob plans as its parsed signature does; a malformed one is an error.
#[test]
fn from_blob() {
    // instance int32 (int64, float64)
    let blob = [0x20, 0x02, 0x08, 0x0A, 0x0D];
    let p = ValuePlan::from_blob(&blob, HiddenArgs::PLAIN, &NoLayouts).unwrap();
    assert_eq!(locations(&p), [reg(Arg(0)), reg(Arg(1)), reg(Xmm(0))]);
    assert!(ValuePlan::from_blob(&[0x20, 0x05], HiddenArgs::PLAIN, &NoLayouts).is_err());
}

fn xmm_f64(v: f64) -> [u8; 16] {
    let mut x = [0xEE; 16];
    x[..8].copy_from_slice(&v.to_le_bytes());
    x
}

/// Values read from a synthetic enter frame and a fake stack: registers, a struct split
/// over RSI:XMM0, stack scalars and a struct borrowed from the stack.
#[test]
fn reads_arguments_from_an_enter_frame() {
    let mut params = vec![TypeSig::ValueType(LD), TypeSig::I2, TypeSig::Char];
    params.extend(vec![TypeSig::I8; 3]); // RCX R8 R9
    params.extend([
        TypeSig::I4,
        TypeSig::ValueType(BIG),
        TypeSig::Boolean,
        TypeSig::R8,
    ]);
    let p = plan(&method(true, TypeSig::Void, params));
    let mut xmm = [[0u8; 16]; 8];
    xmm[0] = xmm_f64(2.5);
    xmm[1] = xmm_f64(-1.0);
    let args = [0x1000, 0x7777_0000_0000_0001, (-3i64) as u64, 0x41, 4, 5];
    let frame = EltFrame::enter(args, xmm, 0xdead_0000);
    // this RDI, LD RSI:XMM0, short RDX, char RCX, two longs R8 R9; then the stack: the
    // third long, the int (in an 8-byte slot), Big (24 bytes), the bool; the double XMM1.
    let mut stack = vec![0u8; 48];
    stack[0..8].copy_from_slice(&6u64.to_le_bytes());
    stack[8..16].copy_from_slice(&(-7i64 as u64).to_le_bytes()); // int: low 4 bytes
    for (i, v) in [11u64, 12, 13].iter().enumerate() {
        stack[16 + 8 * i..24 + 8 * i].copy_from_slice(&v.to_le_bytes());
    }
    stack[40] = 1;
    let got: Vec<Value<'_>> = p.args(&frame, &stack).collect();
    let mut ld = [0u8; 16];
    ld[..8].copy_from_slice(&0x7777_0000_0000_0001u64.to_le_bytes());
    ld[8..].copy_from_slice(&2.5f64.to_le_bytes());
    assert_eq!(got.len(), 11);
    assert_eq!(got[0], Value::Object(0x1000));
    assert_eq!(
        got[1],
        Value::Struct(StructBytes::Inline { bytes: ld, len: 16 })
    );
    assert_eq!(got[2], Value::I16(-3));
    assert_eq!(got[3], Value::Char(0x41));
    assert_eq!(got[4..7], [Value::I64(4), Value::I64(5), Value::I64(6)]);
    assert_eq!(got[7], Value::I32(-7));
    assert_eq!(got[8], Value::Struct(StructBytes::Borrowed(&stack[16..40])));
    assert_eq!(got[9], Value::Bool(true));
    assert_eq!(got[10], Value::F64(-1.0));
    // A stack too short for an argument: that one is unavailable, not read past.
    let short: Vec<Value<'_>> = p.args(&frame, &stack[..16]).collect();
    assert_eq!(short[7], Value::I32(-7));
    assert_eq!(short[8], Value::Unavailable(Unavailable::NotInFrame));
    // At leave, arguments are not in the frame.
    let leave = EltFrame::leave(1, 2, [0; 16], [0; 16], 0);
    assert!(
        p.args(&leave, &stack)
            .all(|v| v == Value::Unavailable(Unavailable::NotInFrame))
    );
}

/// A parameter type for the property test, with what the System V convention does with
/// it: eightbyte classes (true: SSE) for one taking registers, or its stack size.
fn arb_param() -> impl Strategy<Value = (TypeSig, Result<Vec<bool>, u32>)> {
    prop_oneof![
        Just((TypeSig::I4, Ok(vec![false]))),
        Just((TypeSig::I8, Ok(vec![false]))),
        Just((TypeSig::String, Ok(vec![false]))),
        Just((TypeSig::R4, Ok(vec![true]))),
        Just((TypeSig::R8, Ok(vec![true]))),
        Just((TypeSig::ValueType(LL), Ok(vec![false, false]))),
        Just((TypeSig::ValueType(LD), Ok(vec![false, true]))),
        Just((TypeSig::ValueType(DL), Ok(vec![true, false]))),
        Just((TypeSig::ValueType(DD), Ok(vec![true, true]))),
        Just((TypeSig::ValueType(FFFF), Ok(vec![true, true]))),
        Just((TypeSig::ValueType(IF), Ok(vec![false]))),
        Just((TypeSig::ValueType(BIG), Err(24))),
    ]
}

proptest! {
    /// Against a model of the System V allocation for any sequence of parameters (up to
    /// 24, so that both register files run out in every order): each parameter takes
    /// the next free integer or XMM registers for its eightbytes, all of them or none (a
    /// struct that does not fit what is left goes wholly to the stack, and the registers
    /// stay for later parameters); stack slots are 8-byte aligned, in order, and
    /// `stack_bytes` is their sum.
    #[test]
    fn plans_follow_the_system_v_allocation(params in prop::collection::vec(arb_param(), 0..24)) {
        let sig = method(false, TypeSig::Void, params.iter().map(|(t, _)| t.clone()).collect());
        let plan = plan(&sig);
        let got = locations(&plan);
        prop_assert_eq!(got.len(), params.len());
        let (mut ints, mut xmms, mut stack) = (0u8, 0u8, 0u32);
        for ((_, passing), location) in params.iter().zip(&got) {
            let on_stack = |size: u32, stack: &mut u32| {
                let at = *stack;
                *stack += size.div_ceil(8) * 8;
                Location::Stack(at)
            };
            let want = match passing {
                Err(size) => on_stack(*size, &mut stack),
                Ok(classes) => {
                    let need_int = classes.iter().filter(|sse| !**sse).count() as u8;
                    let need_xmm = classes.len() as u8 - need_int;
                    if ints + need_int > 6 || xmms + need_xmm > 8 {
                        on_stack(8 * classes.len() as u32, &mut stack)
                    } else {
                        let regs: Vec<Register> = classes
                            .iter()
                            .map(|sse| {
                                if *sse {
                                    xmms += 1;
                                    Xmm(xmms - 1)
                                } else {
                                    ints += 1;
                                    Arg(ints - 1)
                                }
                            })
                            .collect();
                        match location {
                            Location::Register(r) => {
                                prop_assert_eq!(regs.len(), 1);
                                reg(*r)
                            }
                            Location::Registers { parts, count } => {
                                prop_assert_eq!(usize::from(*count), regs.len());
                                for (part, r) in parts.iter().zip(&regs) {
                                    prop_assert_eq!(part.register, *r);
                                }
                                *location
                            }
                            other => {
                                prop_assert!(false, "registers expected, got {:?}", other);
                                unreachable!()
                            }
                        }
                    }
                }
            };
            match (passing, want) {
                (_, Location::Stack(_)) => prop_assert_eq!(*location, want),
                _ => {
                    if let Location::Register(r) = want {
                        prop_assert_eq!(*location, reg(r));
                    }
                }
            }
        }
        prop_assert_eq!(plan.stack_bytes(), stack);
    }
}

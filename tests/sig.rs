//! Signature blobs: hand-picked cases and property tests.

use ilrewrite::Error;
use ilrewrite::sig::{
    ArrayType, CallingConvention, CustomMod, FieldSig, LocalType, LocalVarSig, MAX_NESTING,
    MethodSig, MethodSigSummary, SigReader, TypeSig, skip_type, summarize_method_sig,
};

// TypeDefOrRefOrSpecEncoded bytes for a few tokens.
const TR1: u32 = 0x0100_0001; // 0x05
const TD2: u32 = 0x0200_0002; // 0x08
const TS3: u32 = 0x1B00_0003; // 0x0E
const TR_BIG: u32 = 0x0100_1234; // 0x80 0x48 0xD1 -> 4 bytes: C0 00 48 D1

fn bad_at(offset: usize) -> impl Fn(&Error) -> bool {
    move |e| matches!(e, Error::BadSignature { offset: o, .. } if *o == offset)
}

fn what(e: &Error) -> &'static str {
    match e {
        Error::BadSignature { what, .. } | Error::Unencodable { what } => what,
        other => panic!("unexpected error {other:?}"),
    }
}

/// Parses `bytes` as a type, checks the value, checks byte-exact re-encoding and that
/// `skip_type` agrees.
fn type_roundtrip(bytes: &[u8], expected: &TypeSig) {
    let t = TypeSig::parse(bytes).unwrap_or_else(|e| panic!("{bytes:02x?}: {e}"));
    assert_eq!(&t, expected, "{bytes:02x?}");
    assert_eq!(t.to_bytes().unwrap(), bytes);
    let mut r = SigReader::new(bytes);
    skip_type(&mut r).unwrap();
    assert!(r.is_at_end());
    assert_eq!(t.element_type(), bytes[0]);
}

#[test]
fn every_element_type() {
    use TypeSig::*;
    let prims: &[(u8, TypeSig)] = &[
        (0x02, Boolean),
        (0x03, Char),
        (0x04, I1),
        (0x05, U1),
        (0x06, I2),
        (0x07, U2),
        (0x08, I4),
        (0x09, U4),
        (0x0A, I8),
        (0x0B, U8),
        (0x0C, R4),
        (0x0D, R8),
        (0x0E, String),
        (0x16, TypedByRef),
        (0x18, I),
        (0x19, U),
        (0x1C, Object),
    ];
    for (b, t) in prims {
        type_roundtrip(&[*b], t);
    }
    type_roundtrip(&[0x12, 0x05], &Class(TR1));
    type_roundtrip(&[0x11, 0x08], &ValueType(TD2));
    type_roundtrip(&[0x12, 0x0E], &Class(TS3));
    type_roundtrip(&[0x12, 0xC0, 0x00, 0x48, 0xD1], &Class(TR_BIG));
    type_roundtrip(&[0x0F, 0x01], &Ptr(Box::new(Void)));
    type_roundtrip(&[0x0F, 0x0F, 0x08], &Ptr(Box::new(Ptr(Box::new(I4)))));
    type_roundtrip(&[0x10, 0x08], &ByRef(Box::new(I4)));
    type_roundtrip(&[0x1D, 0x0E], &SzArray(Box::new(String)));
    type_roundtrip(&[0x13, 0x00], &Var(0));
    type_roundtrip(&[0x1E, 0x80, 0x80], &MVar(0x80));
    type_roundtrip(
        &[0x15, 0x12, 0x05, 0x01, 0x08],
        &GenericInst {
            is_value_type: false,
            token: TR1,
            args: vec![I4],
        },
    );
    type_roundtrip(
        &[0x1B, 0x20, 0x02, 0x01, 0x08, 0x0E],
        &FnPtr(Box::new(MethodSig {
            has_this: true,
            ..MethodSig::new(Void, vec![I4, String])
        })),
    );
    type_roundtrip(
        &[0x1F, 0x05, 0x20, 0x08, 0x08],
        &Modified {
            required: true,
            token: TR1,
            inner: Box::new(Modified {
                required: false,
                token: TD2,
                inner: Box::new(I4),
            }),
        },
    );
    type_roundtrip(
        &[0x21, 1, 2, 3, 4, 5, 6, 7, 8],
        &Internal(0x0807_0605_0403_0201),
    );
    // VOID under modifiers behind a pointer.
    type_roundtrip(
        &[0x0F, 0x20, 0x05, 0x01],
        &Ptr(Box::new(Modified {
            required: false,
            token: TR1,
            inner: Box::new(Void),
        })),
    );
}

#[test]
fn nested_generic_inst() {
    // Dictionary<string, List<KeyValuePair<int, T>>>
    let bytes = [
        0x15, 0x12, 0x05, 0x02, 0x0E, // Dictionary`2<string,
        0x15, 0x12, 0x08, 0x01, // List`1<
        0x15, 0x11, 0x0E, 0x02, 0x08, 0x13, 0x00, // KeyValuePair`2<int32, !0>
    ];
    let kvp = TypeSig::GenericInst {
        is_value_type: true,
        token: TS3,
        args: vec![TypeSig::I4, TypeSig::Var(0)],
    };
    let list = TypeSig::GenericInst {
        is_value_type: false,
        token: TD2,
        args: vec![kvp],
    };
    let dict = TypeSig::GenericInst {
        is_value_type: false,
        token: TR1,
        args: vec![TypeSig::String, list],
    };
    type_roundtrip(&bytes, &dict);
}

#[test]
fn arrays_with_sizes_and_negative_bounds() {
    // int32[-5...5, 0...2, ] : rank 3, sizes [11, 3], lo bounds [-5, 0]
    let bytes = [0x14, 0x08, 0x03, 0x02, 0x0B, 0x03, 0x02, 0x77, 0x00];
    type_roundtrip(
        &bytes,
        &TypeSig::Array(Box::new(ArrayType {
            elem: TypeSig::I4,
            rank: 3,
            sizes: vec![11, 3],
            lo_bounds: vec![-5, 0],
        })),
    );
    // Large and 2-/4-byte forms: rank 2, no sizes, bounds [-8192, 0x0FFFFFFF].
    let bytes = [
        0x14, 0x0E, 0x02, 0x00, 0x02, 0x80, 0x01, 0xDF, 0xFF, 0xFF, 0xFE,
    ];
    type_roundtrip(
        &bytes,
        &TypeSig::Array(Box::new(ArrayType {
            elem: TypeSig::String,
            rank: 2,
            sizes: vec![],
            lo_bounds: vec![-8192, 0x0FFF_FFFF],
        })),
    );
    // Rank 0, too many sizes, too many bounds.
    let e = TypeSig::parse(&[0x14, 0x08, 0x00, 0x00, 0x00]).unwrap_err();
    assert!(bad_at(2)(&e), "{e}");
    let e = TypeSig::parse(&[0x14, 0x08, 0x01, 0x02, 0x01, 0x01, 0x00]).unwrap_err();
    assert!(bad_at(3)(&e), "{e}");
    let e = TypeSig::parse(&[0x14, 0x08, 0x01, 0x00, 0x02, 0x00, 0x00]).unwrap_err();
    assert!(bad_at(4)(&e), "{e}");
    let mut out = vec![0x99];
    let a = TypeSig::Array(Box::new(ArrayType {
        elem: TypeSig::I4,
        rank: 1,
        sizes: vec![1, 2],
        lo_bounds: vec![],
    }));
    assert_eq!(
        what(&a.encode(&mut out).unwrap_err()),
        "more array sizes than rank"
    );
    assert_eq!(out, [0x99]);
}

#[test]
fn misplaced_void_pinned_sentinel() {
    assert_eq!(
        TypeSig::parse(&[0x01]).unwrap_err(),
        Error::BadSignature {
            offset: 0,
            what: "VOID outside a return type or pointer target"
        }
    );
    assert!(bad_at(1)(&TypeSig::parse(&[0x1D, 0x01]).unwrap_err()));
    assert!(bad_at(1)(&TypeSig::parse(&[0x10, 0x01]).unwrap_err()));
    assert!(bad_at(0)(&TypeSig::parse(&[0x45, 0x08]).unwrap_err()));
    assert!(bad_at(0)(&TypeSig::parse(&[0x41, 0x08]).unwrap_err()));
    assert!(bad_at(0)(&TypeSig::parse(&[0x22, 0x08]).unwrap_err()));
    assert!(bad_at(0)(&TypeSig::parse(&[0x17]).unwrap_err()));
    assert!(bad_at(0)(&TypeSig::parse(&[0x00]).unwrap_err()));
    assert!(bad_at(0)(&TypeSig::parse(&[0x51]).unwrap_err()));
    // void parameter
    assert!(bad_at(3)(
        &MethodSig::parse(&[0x00, 0x01, 0x08, 0x01]).unwrap_err()
    ));
    // PINNED in a parameter
    assert!(bad_at(3)(
        &MethodSig::parse(&[0x00, 0x01, 0x08, 0x45, 0x08]).unwrap_err()
    ));
    // PINNED after BYREF in a local
    assert!(bad_at(3)(
        &LocalVarSig::parse(&[0x07, 0x01, 0x10, 0x45, 0x08]).unwrap_err()
    ));
    // encoder mirrors the parser
    assert!(TypeSig::Void.to_bytes().is_err());
    assert!(TypeSig::Pinned(Box::new(TypeSig::I4)).to_bytes().is_err());
    assert!(
        TypeSig::SzArray(Box::new(TypeSig::Void))
            .to_bytes()
            .is_err()
    );
    let mut m = MethodSig::new(TypeSig::Void, vec![TypeSig::Void]);
    assert!(m.to_bytes().is_err());
    m.params = vec![TypeSig::I4];
    m.sentinel = Some(1);
    assert_eq!(
        what(&m.to_bytes().unwrap_err()),
        "sentinel not followed by a parameter"
    );
}

#[test]
fn generic_inst_errors() {
    // zero args
    assert!(bad_at(3)(
        &TypeSig::parse(&[0x15, 0x12, 0x05, 0x00]).unwrap_err()
    ));
    // kind neither CLASS nor VALUETYPE
    assert!(bad_at(1)(
        &TypeSig::parse(&[0x15, 0x08, 0x05, 0x01, 0x08]).unwrap_err()
    ));
    // bad token tag
    assert!(bad_at(2)(
        &TypeSig::parse(&[0x15, 0x12, 0x07, 0x01, 0x08]).unwrap_err()
    ));
    let g = TypeSig::GenericInst {
        is_value_type: false,
        token: TR1,
        args: vec![],
    };
    assert!(g.to_bytes().is_err());
    assert!(TypeSig::Class(0x0600_0001).to_bytes().is_err());
    assert!(TypeSig::Var(0x2000_0000).to_bytes().is_err());
}

#[test]
fn nesting_limit() {
    assert_eq!(MAX_NESTING, 256);
    let too_deep = |offset| Error::TooDeep {
        offset,
        limit: MAX_NESTING,
    };
    let ok: Vec<u8> = std::iter::repeat_n(0x0F, MAX_NESTING - 1)
        .chain([0x08])
        .collect();
    TypeSig::parse(&ok).unwrap();
    let deep: Vec<u8> = std::iter::repeat_n(0x0F, MAX_NESTING)
        .chain([0x08])
        .collect();
    let e = TypeSig::parse(&deep).unwrap_err();
    assert_eq!(e, too_deep(Some(MAX_NESTING)));
    assert!(e.is_limit());
    assert_eq!(
        e.to_string(),
        "type nesting deeper than 256 levels at blob offset 0x100"
    );
    // A tree-less walk has no limit.
    let mut r = SigReader::new(&deep);
    skip_type(&mut r).unwrap();
    assert!(r.is_at_end());
    // A hostile blob of a million nested pointers fails quickly without overflowing:
    // the tree stops at the limit, the skip walks it to its (missing) end.
    let huge = vec![0x0F; 1_000_000];
    assert_eq!(
        TypeSig::parse(&huge).unwrap_err(),
        too_deep(Some(MAX_NESTING))
    );
    assert!(bad_at(1_000_000)(
        &skip_type(&mut SigReader::new(&huge)).unwrap_err()
    ));
    // Function pointers count too.
    let mut fnptrs = Vec::new();
    for _ in 0..MAX_NESTING {
        fnptrs.extend_from_slice(&[0x1B, 0x00, 0x00]);
    }
    fnptrs.push(0x01);
    // The last function pointer's return type, `VOID` at offset 3 * MAX_NESTING, is one
    // level too deep (the first pointer is at depth 0, its return type at 1, ...).
    assert_eq!(
        TypeSig::parse(&fnptrs).unwrap_err(),
        too_deep(Some(3 * MAX_NESTING))
    );
    let mut r = SigReader::new(&fnptrs);
    skip_type(&mut r).unwrap();
    assert!(r.is_at_end());
    assert_eq!(
        TypeSig::parse(&fnptrs[3..]).unwrap().to_bytes().unwrap(),
        fnptrs[3..]
    );
    // Encoder refuses what the parser would refuse.
    let mut t = TypeSig::I4;
    for _ in 0..MAX_NESTING {
        t = TypeSig::SzArray(Box::new(t));
    }
    assert_eq!(t.to_bytes().unwrap_err(), too_deep(None));
    assert_eq!(
        too_deep(None).to_string(),
        "type nesting deeper than 256 levels at a type being encoded"
    );
    let mut out = vec![0xAA];
    assert!(t.encode(&mut out).is_err());
    assert_eq!(out, [0xAA]);
    if let TypeSig::SzArray(inner) = t {
        assert!(inner.to_bytes().is_ok());
    }
}

/// Every shape nested far deeper than [`MAX_NESTING`], as programs the runtime runs
/// have them (CoreCLR 3.1 runs a local of a generic class nested 20,000 deep): the
/// tree-less walks (what rewriting a method needs) accept them without recursion, the
/// trees refuse them with [`Error::TooDeep`], a limit rather than a malformed blob.
#[test]
fn walks_without_a_tree_have_no_nesting_limit() {
    const DEPTH: usize = 100_000;
    // `class G<class G<... int32>>` (TypeDef 2), `G2<G2<..., int32>, int32>` nested in
    // the first argument, and arrays, pointers, modifiers and function pointers.
    let generic = [[0x15, 0x12, 0x08, 0x01].repeat(DEPTH), vec![0x08]].concat();
    let mut first_arg = [0x15, 0x12, 0x08, 0x02].repeat(DEPTH);
    first_arg.extend(std::iter::repeat_n(0x08, DEPTH + 1));
    let mut arrays = vec![0x14; DEPTH];
    arrays.push(0x08);
    arrays.extend([0x02, 0x01, 0x05, 0x01, 0x7F].repeat(DEPTH));
    let cmods = [[0x1F, 0x08].repeat(DEPTH), vec![0x0F, 0x01]].concat();
    let mut fnptrs = [0x1B, 0x00, 0x02, 0x01, 0x41].repeat(DEPTH);
    fnptrs.push(0x08);
    fnptrs.extend(std::iter::repeat_n(0x0E, DEPTH));
    for (name, ty) in [
        ("generic", generic),
        ("first argument", first_arg),
        ("arrays", arrays),
        ("modifiers", cmods),
        ("function pointers", fnptrs),
    ] {
        let mut r = SigReader::new(&ty);
        skip_type(&mut r).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(r.is_at_end(), "{name}");
        assert!(
            matches!(
                TypeSig::parse(&ty),
                Err(Error::TooDeep {
                    limit: MAX_NESTING,
                    ..
                })
            ),
            "{name}"
        );
        // As a parameter and as the return type of a method, and as a local.
        let mut method = vec![0x20, 0x02];
        method.extend_from_slice(&ty);
        method.extend_from_slice(&ty);
        method.push(0x0E);
        let s = summarize_method_sig(&method).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!((s.param_count, s.returns_value), (2, true), "{name}");
        assert_eq!(
            ilrewrite::sig::return_type_bytes(&method),
            Ok(&ty[..]),
            "{name}"
        );
        assert!(matches!(
            MethodSig::parse(&method),
            Err(Error::TooDeep { .. })
        ));
        let mut locals = vec![0x07, 0x02, 0x08];
        locals.extend_from_slice(&ty);
        let mut out = Vec::new();
        assert_eq!(
            LocalVarSig::append_to_blob(&locals, &ty, &mut out),
            Ok(2),
            "{name}"
        );
        assert_eq!(out[..2], [0x07, 0x03]);
        assert!(matches!(
            LocalVarSig::parse(&locals),
            Err(Error::TooDeep { .. })
        ));
        // Truncated anywhere, it is malformed, and says where it ends.
        for cut in [1, ty.len() / 2, ty.len() - 1] {
            let e = skip_type(&mut SigReader::new(&ty[..cut])).unwrap_err();
            assert!(
                matches!(e, Error::BadSignature { offset, .. } if offset == cut),
                "{name} {cut}: {e}"
            );
        }
    }
}

/// The tree walks at the nesting limit fit in a small stack: the measure behind
/// [`MAX_NESTING`], as a guard. In release builds every walk of a type nested
/// `MAX_NESTING` deep, in every shape, runs on a thread of 256 KiB (debug builds, whose
/// frames are several times larger, get 4 MiB); a walk that took more would overflow it
/// and abort the test binary.
#[test]
fn tree_walks_at_the_nesting_limit_fit_a_small_stack() {
    let stack = if cfg!(debug_assertions) {
        4 << 20
    } else {
        256 << 10
    };
    let n = MAX_NESTING - 2;
    let shapes: Vec<Vec<u8>> = vec![
        [[0x15, 0x12, 0x08, 0x01].repeat(n), vec![0x08]].concat(),
        [0x15, 0x12, 0x08, 0x02]
            .repeat(n)
            .into_iter()
            .chain(std::iter::repeat_n(0x08, n + 1))
            .collect(),
        std::iter::repeat_n(0x14, n)
            .chain([0x08])
            .chain([0x01, 0x00, 0x00].repeat(n))
            .collect(),
        [[0x1F, 0x08].repeat(n), vec![0x08]].concat(),
        [[0x1B, 0x00, 0x01, 0x01].repeat(n / 2), vec![0x08]].concat(),
        std::iter::repeat_n(0x0F, n).chain([0x08]).collect(),
    ];
    std::thread::Builder::new()
        .stack_size(stack)
        .spawn(move || {
            for bytes in &shapes {
                let t = TypeSig::parse(bytes).unwrap();
                assert_eq!(&t.to_bytes().unwrap(), bytes);
                let copy = t.clone();
                assert_eq!(copy, t);
                let mut hasher = std::collections::hash_map::DefaultHasher::new();
                std::hash::Hash::hash(&copy, &mut hasher);
                assert!(!format!("{copy:?}").is_empty());
                drop(copy);
                let mut method = vec![0x00, 0x01, 0x01];
                method.extend_from_slice(bytes);
                assert_eq!(MethodSig::parse(&method).unwrap().params, [t]);
            }
        })
        .unwrap()
        .join()
        .unwrap();
}

#[test]
fn huge_counts_do_not_allocate() {
    // GENERICINST with 0x1FFFFFFF args but no bytes for them.
    let e = TypeSig::parse(&[0x15, 0x12, 0x05, 0xDF, 0xFF, 0xFF, 0xFF]).unwrap_err();
    assert!(bad_at(7)(&e), "{e}");
    // Method with 0x1FFFFFFF params.
    assert!(MethodSig::parse(&[0x00, 0xDF, 0xFF, 0xFF, 0xFF, 0x01]).is_err());
    assert!(summarize_method_sig(&[0x00, 0xDF, 0xFF, 0xFF, 0xFF, 0x01]).is_err());
    // Array with huge rank and sizes count.
    assert!(TypeSig::parse(&[0x14, 0x08, 0xDF, 0xFF, 0xFF, 0xFF, 0xDF, 0xFF, 0xFF, 0xFF]).is_err());
    // Locals: count over the limit, and a plausible count with no data.
    let e = LocalVarSig::parse(&[0x07, 0xC0, 0x01, 0x00, 0x00]).unwrap_err();
    assert_eq!(
        e,
        Error::TooManyLocals {
            count: 0x1_0000,
            limit: 0xFFFF
        }
    );
    assert!(e.is_limit());
    assert_eq!(
        e.to_string(),
        "65536 locals: a method can have at most 65535"
    );
    assert!(matches!(
        LocalVarSig::parse(&[0x07, 0xDF, 0xFF, 0xFF, 0xFF]),
        Err(Error::TooManyLocals {
            count: 0x1FFF_FFFF,
            ..
        })
    ));
    assert!(bad_at(5)(
        &LocalVarSig::parse(&[0x07, 0xC0, 0x00, 0xFF, 0xFF]).unwrap_err()
    ));
}

#[test]
fn locals_basic() {
    // 3 locals: int32, pinned byref uint8, fnptr int32(int32)
    let bytes = [
        0x07, 0x03, 0x08, 0x45, 0x10, 0x05, 0x1B, 0x00, 0x01, 0x08, 0x08,
    ];
    let sig = LocalVarSig::parse(&bytes).unwrap();
    assert_eq!(sig.len(), 3);
    assert!(!sig.is_empty());
    let l = sig.locals();
    assert_eq!(l[0], LocalType::new(TypeSig::I4));
    assert_eq!(
        l[1],
        LocalType::pinned(TypeSig::ByRef(Box::new(TypeSig::U1)))
    );
    assert!(l[1].is_pinned() && l[1].is_by_ref());
    assert!(!l[0].is_pinned() && !l[0].is_by_ref());
    assert_eq!(
        l[2].ty,
        TypeSig::FnPtr(Box::new(MethodSig::new(TypeSig::I4, vec![TypeSig::I4])))
    );
    assert_eq!(sig.to_bytes().unwrap(), bytes);
    assert_eq!(sig.get(2), Some(&l[2]));
    assert_eq!(sig.get(3), None);

    // Rebuild with push.
    let mut built = LocalVarSig::empty();
    assert_eq!(built.to_bytes().unwrap(), [0x07, 0x00]);
    for (i, local) in l.iter().enumerate() {
        assert_eq!(usize::from(built.push(local.clone()).unwrap()), i);
    }
    assert_eq!(built, sig);
    assert_eq!(LocalVarSig::from_locals(l.to_vec()).unwrap(), sig);

    // Empty and typedbyref.
    assert!(LocalVarSig::parse(&[0x07, 0x00]).unwrap().is_empty());
    let tbr = LocalVarSig::parse(&[0x07, 0x01, 0x16]).unwrap();
    assert_eq!(tbr.locals()[0].ty, TypeSig::TypedByRef);
    // Wrong lead byte, trailing bytes.
    assert!(bad_at(0)(&LocalVarSig::parse(&[0x06, 0x00]).unwrap_err()));
    assert!(bad_at(3)(
        &LocalVarSig::parse(&[0x07, 0x01, 0x08, 0x08]).unwrap_err()
    ));
    assert!(bad_at(0)(&LocalVarSig::parse(&[]).unwrap_err()));
}

#[test]
fn locals_modifier_interleavings_roundtrip() {
    // CMOD_OPT TR1, PINNED, CMOD_REQD TD2, BYREF, CMOD_OPT TS3, I4
    let bytes = [
        0x07, 0x01, 0x20, 0x05, 0x45, 0x1F, 0x08, 0x10, 0x20, 0x0E, 0x08,
    ];
    let sig = LocalVarSig::parse(&bytes).unwrap();
    let l = &sig.locals()[0];
    assert!(l.is_pinned());
    assert!(l.is_by_ref());
    assert_eq!(
        l.custom_mods().collect::<Vec<_>>(),
        [
            CustomMod {
                required: false,
                token: TR1
            },
            CustomMod {
                required: true,
                token: TD2
            }
        ]
    );
    assert_eq!(
        l.unwrapped(),
        &TypeSig::ByRef(Box::new(TypeSig::Modified {
            required: false,
            token: TS3,
            inner: Box::new(TypeSig::I4)
        }))
    );
    assert_eq!(sig.to_bytes().unwrap(), bytes);
    // PINNED PINNED is structurally allowed too.
    let bytes = [0x07, 0x01, 0x45, 0x45, 0x08];
    assert_eq!(
        LocalVarSig::parse(&bytes).unwrap().to_bytes().unwrap(),
        bytes
    );
}

#[test]
fn locals_push_limit() {
    let mut sig = LocalVarSig::empty();
    for i in 0..LocalVarSig::MAX_LOCALS {
        assert_eq!(usize::from(sig.push(TypeSig::I4.into()).unwrap()), i);
    }
    // 65,535 locals, indices 0 to 65,534: the runtime's limit.
    assert_eq!(sig.len(), 65_535);
    assert_eq!(sig.get(65_534), Some(&TypeSig::I4.into()));
    assert_eq!(
        sig.push(TypeSig::I4.into()).unwrap_err(),
        Error::TooManyLocals {
            count: 65_536,
            limit: 65_535
        }
    );
    assert_eq!(sig.len(), 65_535);
    let bytes = sig.to_bytes().unwrap();
    assert_eq!(&bytes[..5], [0x07, 0xC0, 0x00, 0xFF, 0xFF]);
    assert_eq!(LocalVarSig::parse(&bytes).unwrap(), sig);
    assert!(matches!(
        LocalVarSig::from_locals(std::iter::repeat_n(TypeSig::I4.into(), 65_536)),
        Err(Error::TooManyLocals { count: 65_536, .. })
    ));
    // The last local appended to the byte form too, and no more.
    let mut almost = vec![0x07, 0xC0, 0x00, 0xFF, 0xFE];
    almost.extend(std::iter::repeat_n(0x08, 65_534));
    let mut out = Vec::new();
    assert_eq!(
        LocalVarSig::append_to_blob(&almost, &[0x08], &mut out),
        Ok(65_534)
    );
    assert_eq!(out, bytes);
    assert_eq!(
        LocalVarSig::check_append_to_blob(&almost, &[0x08]),
        Ok(65_534)
    );
    assert_eq!(
        LocalVarSig::check_append_to_blob(&bytes, &[0x08]),
        Err(Error::TooManyLocals {
            count: 65_536,
            limit: 65_535
        })
    );

    // push validates the type and leaves the signature unchanged on error.
    let mut small = LocalVarSig::empty();
    assert!(small.push(TypeSig::Void.into()).is_err());
    assert!(small.push(TypeSig::Class(0x0A00_0001).into()).is_err());
    assert!(
        small
            .push(LocalType::new(TypeSig::ByRef(Box::new(TypeSig::Pinned(
                Box::new(TypeSig::I4)
            )))))
            .is_err()
    );
    assert!(small.is_empty());
}

#[test]
fn non_canonical_reencodes_canonically() {
    // count 1 written as 0x80 0x01; class token as 4-byte form.
    let bytes = [0x07, 0x80, 0x01, 0x12, 0xC0, 0x00, 0x00, 0x05];
    let sig = LocalVarSig::parse(&bytes).unwrap();
    assert_eq!(sig.locals()[0].ty, TypeSig::Class(TR1));
    assert_eq!(sig.to_bytes().unwrap(), [0x07, 0x01, 0x12, 0x05]);
}

#[test]
fn method_sigs() {
    // instance generic string M<2>(int32&, !!0)
    let bytes = [0x30, 0x02, 0x02, 0x0E, 0x10, 0x08, 0x1E, 0x00];
    let m = MethodSig::parse(&bytes).unwrap();
    assert_eq!(
        m,
        MethodSig {
            has_this: true,
            generic_param_count: 2,
            ..MethodSig::new(
                TypeSig::String,
                vec![TypeSig::ByRef(Box::new(TypeSig::I4)), TypeSig::MVar(0)]
            )
        }
    );
    assert_eq!(m.to_bytes().unwrap(), bytes);
    let s = summarize_method_sig(&bytes).unwrap();
    assert_eq!(
        s,
        MethodSigSummary {
            calling_convention: CallingConvention::Default,
            has_this: true,
            explicit_this: false,
            generic_param_count: 2,
            param_count: 2,
            returns_value: true,
        }
    );
    assert_eq!(s, m.summary());
    assert_eq!(s.arg_count(), 3);

    // explicit this: this is counted among the params.
    let bytes = [0x60, 0x01, 0x01, 0x12, 0x05];
    let s = summarize_method_sig(&bytes).unwrap();
    assert!(s.has_this && s.explicit_this && !s.returns_value);
    assert_eq!(s.arg_count(), 1);
    assert_eq!(MethodSig::parse(&bytes).unwrap().to_bytes().unwrap(), bytes);

    // void return under modifiers (C++/CLI, unmanaged callconv modopts).
    let bytes = [0x09, 0x00, 0x20, 0x05, 0x20, 0x08, 0x01];
    let s = summarize_method_sig(&bytes).unwrap();
    assert_eq!(s.calling_convention, CallingConvention::Unmanaged);
    assert!(!s.returns_value);
    let m = MethodSig::parse(&bytes).unwrap();
    assert_eq!(m.summary(), s);
    assert_eq!(m.to_bytes().unwrap(), bytes);

    // every unmanaged calling convention
    for (b, cc) in [
        (0x01, CallingConvention::C),
        (0x02, CallingConvention::StdCall),
        (0x03, CallingConvention::ThisCall),
        (0x04, CallingConvention::FastCall),
    ] {
        let bytes = [b, 0x01, 0x18, 0x0F, 0x01];
        let m = MethodSig::parse(&bytes).unwrap();
        assert_eq!(m.calling_convention, cc);
        assert_eq!(m.to_bytes().unwrap(), bytes);
    }
}

#[test]
fn varargs_with_sentinel() {
    // vararg void f(int32, ..., string, object)
    let bytes = [0x05, 0x03, 0x01, 0x08, 0x41, 0x0E, 0x1C];
    let m = MethodSig::parse(&bytes).unwrap();
    assert_eq!(m.calling_convention, CallingConvention::VarArg);
    assert_eq!(m.sentinel, Some(1));
    assert_eq!(m.fixed_params(), [TypeSig::I4]);
    assert_eq!(m.vararg_params(), [TypeSig::String, TypeSig::Object]);
    assert_eq!(m.to_bytes().unwrap(), bytes);
    let s = summarize_method_sig(&bytes).unwrap();
    assert_eq!(s.param_count, 3);
    assert!(!s.returns_value);
    // Sentinel first.
    let bytes = [0x05, 0x01, 0x01, 0x41, 0x08];
    let m = MethodSig::parse(&bytes).unwrap();
    assert_eq!(m.sentinel, Some(0));
    assert!(m.fixed_params().is_empty());
    assert_eq!(m.to_bytes().unwrap(), bytes);
    // No sentinel.
    let m = MethodSig::parse(&[0x05, 0x01, 0x01, 0x08]).unwrap();
    assert_eq!(m.vararg_params(), &[] as &[TypeSig]);
    assert_eq!(m.fixed_params(), [TypeSig::I4]);
    // Trailing sentinel, second sentinel.
    let e = MethodSig::parse(&[0x05, 0x01, 0x01, 0x08, 0x41]).unwrap_err();
    assert!(bad_at(4)(&e), "{e}");
    let e = MethodSig::parse(&[0x05, 0x02, 0x01, 0x41, 0x08, 0x41, 0x08]).unwrap_err();
    assert!(bad_at(5)(&e), "{e}");
    assert!(summarize_method_sig(&[0x05, 0x02, 0x01, 0x41, 0x08, 0x41, 0x08]).is_err());
    // Vararg call through a function pointer in a local.
    let bytes = [0x07, 0x01, 0x1B, 0x05, 0x02, 0x01, 0x08, 0x41, 0x0E];
    let l = LocalVarSig::parse(&bytes).unwrap();
    assert_eq!(l.to_bytes().unwrap(), bytes);
}

#[test]
fn method_sig_header_errors() {
    for (bytes, offset, msg) in [
        (
            &[0x06, 0x08][..],
            0,
            "field signature where a method signature was expected",
        ),
        (
            &[0x07, 0x00],
            0,
            "local variable signature where a method signature was expected",
        ),
        (
            &[0x08, 0x00, 0x08],
            0,
            "property signature where a method signature was expected",
        ),
        (
            &[0x0A, 0x01, 0x08],
            0,
            "MethodSpec instantiation where a method signature was expected",
        ),
        (&[0x0B, 0x00, 0x01], 0, "unknown calling convention"),
        (
            &[0x80, 0x00, 0x01],
            0,
            "reserved calling convention bit 0x80 set",
        ),
        (
            &[0x10, 0x00, 0x00, 0x01],
            1,
            "GENERIC method signature with zero generic parameters",
        ),
        (
            &[0x00, 0x00, 0x01, 0x00],
            3,
            "trailing bytes after signature",
        ),
        (&[0x00, 0x00], 2, "unexpected end of signature"),
    ] {
        let e = Error::BadSignature { offset, what: msg };
        assert_eq!(MethodSig::parse(bytes).unwrap_err(), e, "{bytes:02x?}");
        assert_eq!(summarize_method_sig(bytes).unwrap_err(), e, "{bytes:02x?}");
    }
}

#[test]
fn field_sigs() {
    let bytes = [0x06, 0x1F, 0x05, 0x08];
    let f = FieldSig::parse(&bytes).unwrap();
    assert_eq!(
        f.ty,
        TypeSig::Modified {
            required: true,
            token: TR1,
            inner: Box::new(TypeSig::I4)
        }
    );
    assert_eq!(f.to_bytes().unwrap(), bytes);
    // ref field
    let bytes = [0x06, 0x10, 0x0E];
    assert_eq!(FieldSig::parse(&bytes).unwrap().to_bytes().unwrap(), bytes);
    assert!(bad_at(0)(&FieldSig::parse(&[0x26, 0x08]).unwrap_err()));
    assert!(bad_at(1)(&FieldSig::parse(&[0x06, 0x01]).unwrap_err()));
    assert!(bad_at(2)(
        &FieldSig::parse(&[0x06, 0x08, 0x08]).unwrap_err()
    ));
    assert!(FieldSig { ty: TypeSig::Void }.to_bytes().is_err());
}

/// Every strict prefix of a valid blob must fail (never panic), at an offset inside
/// the prefix.
#[test]
fn truncation_at_every_byte() {
    let types: &[&[u8]] = &[
        &[0x15, 0x12, 0x05, 0x02, 0x0E, 0x15, 0x12, 0x08, 0x01, 0x08],
        &[0x14, 0x08, 0x03, 0x02, 0x0B, 0x03, 0x02, 0x77, 0x00],
        &[
            0x14, 0x0E, 0x02, 0x00, 0x02, 0x80, 0x01, 0xDF, 0xFF, 0xFF, 0xFE,
        ],
        &[0x12, 0xC0, 0x00, 0x48, 0xD1],
        &[0x21, 1, 2, 3, 4, 5, 6, 7, 8],
        &[0x1B, 0x20, 0x02, 0x01, 0x08, 0x0E],
        &[0x1F, 0x05, 0x20, 0x08, 0x0F, 0x01],
    ];
    for blob in types {
        TypeSig::parse(blob).unwrap();
        for n in 0..blob.len() {
            let e = TypeSig::parse(&blob[..n]).unwrap_err();
            assert!(
                matches!(e, Error::BadSignature { offset, .. } if offset <= n),
                "{:02x?}: {e}",
                &blob[..n]
            );
            assert!(skip_type(&mut SigReader::new(&blob[..n])).is_err());
        }
    }
    let methods: &[&[u8]] = &[
        &[0x30, 0x02, 0x02, 0x0E, 0x10, 0x08, 0x1E, 0x00],
        &[0x05, 0x03, 0x01, 0x08, 0x41, 0x0E, 0x1C],
        &[0x09, 0x00, 0x20, 0x05, 0x20, 0x08, 0x01],
    ];
    for blob in methods {
        MethodSig::parse(blob).unwrap();
        for n in 0..blob.len() {
            assert!(MethodSig::parse(&blob[..n]).is_err());
            assert!(summarize_method_sig(&blob[..n]).is_err());
        }
    }
    let locals: &[&[u8]] = &[
        &[
            0x07, 0x03, 0x08, 0x45, 0x10, 0x05, 0x1B, 0x00, 0x01, 0x08, 0x08,
        ],
        &[
            0x07, 0x01, 0x20, 0x05, 0x45, 0x1F, 0x08, 0x10, 0x20, 0x0E, 0x08,
        ],
    ];
    for blob in locals {
        LocalVarSig::parse(blob).unwrap();
        for n in 0..blob.len() {
            assert!(LocalVarSig::parse(&blob[..n]).is_err());
        }
    }
}

mod props {
    use super::*;
    use ilrewrite::sig::{MAX_COMPRESSED_I32, MAX_COMPRESSED_U32, MIN_COMPRESSED_I32};
    use proptest::prelude::*;

    fn token() -> impl Strategy<Value = u32> {
        (
            prop::sample::select(vec![0x01u32, 0x02, 0x1B]),
            0u32..=0x00FF_FFFF,
        )
            .prop_map(|(t, row)| (t << 24) | row)
    }

    fn small_u32() -> impl Strategy<Value = u32> {
        prop_oneof![0u32..0x100, 0u32..=MAX_COMPRESSED_U32]
    }

    fn leaf() -> impl Strategy<Value = TypeSig> {
        use TypeSig::*;
        prop_oneof![
            prop::sample::select(vec![
                Boolean, Char, I1, U1, I2, U2, I4, U4, I8, U8, R4, R8, I, U, String, Object,
                TypedByRef,
            ]),
            token().prop_map(Class),
            token().prop_map(ValueType),
            small_u32().prop_map(Var),
            small_u32().prop_map(MVar),
            any::<u64>().prop_map(Internal),
        ]
    }

    fn modified(inner: impl Strategy<Value = TypeSig>) -> impl Strategy<Value = TypeSig> {
        (any::<bool>(), token(), inner).prop_map(|(required, token, inner)| TypeSig::Modified {
            required,
            token,
            inner: Box::new(inner),
        })
    }

    /// A return-position type: any type, or VOID possibly under modifiers.
    fn ret(t: BoxedStrategy<TypeSig>) -> BoxedStrategy<TypeSig> {
        prop_oneof![
            3 => t,
            1 => Just(TypeSig::Void),
            1 => modified(Just(TypeSig::Void)),
        ]
        .boxed()
    }

    fn calling_convention() -> impl Strategy<Value = CallingConvention> {
        use CallingConvention::*;
        prop::sample::select(vec![
            Default, C, StdCall, ThisCall, FastCall, VarArg, Unmanaged,
        ])
    }

    fn method(t: BoxedStrategy<TypeSig>) -> impl Strategy<Value = MethodSig> {
        (
            calling_convention(),
            any::<bool>(),
            any::<bool>(),
            prop_oneof![Just(0u32), 1u32..4, 1u32..=MAX_COMPRESSED_U32],
            ret(t.clone()),
            prop::collection::vec(t, 0..4),
            any::<Option<prop::sample::Index>>(),
        )
            .prop_map(|(cc, has_this, explicit_this, g, ret, params, sentinel)| {
                MethodSig {
                    calling_convention: cc,
                    has_this,
                    explicit_this,
                    generic_param_count: g,
                    return_type: ret,
                    sentinel: if params.is_empty() {
                        None
                    } else {
                        sentinel.map(|i| i.index(params.len()))
                    },
                    params,
                }
            })
    }

    fn array(elem: BoxedStrategy<TypeSig>) -> impl Strategy<Value = TypeSig> {
        (
            elem,
            1u32..6,
            prop::collection::vec(small_u32(), 0..6),
            prop::collection::vec(
                prop_oneof![-100i32..100, MIN_COMPRESSED_I32..=MAX_COMPRESSED_I32],
                0..6,
            ),
        )
            .prop_map(|(elem, rank, mut sizes, mut lo_bounds)| {
                sizes.truncate(rank as usize);
                lo_bounds.truncate(rank as usize);
                TypeSig::Array(Box::new(ArrayType {
                    elem,
                    rank,
                    sizes,
                    lo_bounds,
                }))
            })
    }

    /// Types valid in an ordinary position.
    fn ty() -> BoxedStrategy<TypeSig> {
        leaf()
            .prop_recursive(6, 48, 4, |inner| {
                prop_oneof![
                    ret(inner.clone()).prop_map(|t| TypeSig::Ptr(Box::new(t))),
                    inner.clone().prop_map(|t| TypeSig::ByRef(Box::new(t))),
                    inner.clone().prop_map(|t| TypeSig::SzArray(Box::new(t))),
                    array(inner.clone()),
                    (
                        any::<bool>(),
                        token(),
                        prop::collection::vec(inner.clone(), 1..4)
                    )
                        .prop_map(|(is_value_type, token, args)| {
                            TypeSig::GenericInst {
                                is_value_type,
                                token,
                                args,
                            }
                        }),
                    method(inner.clone()).prop_map(|m| TypeSig::FnPtr(Box::new(m))),
                    modified(inner),
                ]
            })
            .boxed()
    }

    /// A local: a prefix of modifiers and PINNED, then a type.
    fn local() -> impl Strategy<Value = LocalType> {
        (
            prop::collection::vec(prop::option::of((any::<bool>(), token())), 0..4),
            ty(),
        )
            .prop_map(|(prefix, t)| {
                let ty = prefix.into_iter().rev().fold(t, |inner, p| match p {
                    None => TypeSig::Pinned(Box::new(inner)),
                    Some((required, token)) => TypeSig::Modified {
                        required,
                        token,
                        inner: Box::new(inner),
                    },
                });
                LocalType::new(ty)
            })
    }

    /// Bytes biased towards meaningful signature bytes.
    fn sig_bytes(lead: Option<u8>) -> impl Strategy<Value = Vec<u8>> {
        let byte = prop_oneof![
            2 => any::<u8>(),
            3 => prop::sample::select((0x00u8..=0x22).chain([0x41, 0x45]).collect::<Vec<_>>()),
            1 => prop::sample::select(vec![0x80u8, 0xC0, 0xDF, 0xFF]),
        ];
        prop::collection::vec(byte, 0..48).prop_map(move |mut v| {
            if let Some(b) = lead {
                v.insert(0, b);
            }
            v
        })
    }

    /// Checks that every parser agrees on `bytes` and never panics.
    fn check_all_parsers(bytes: &[u8]) {
        // TypeSig: read vs skip agree on success and length.
        let mut r1 = SigReader::new(bytes);
        let mut r2 = SigReader::new(bytes);
        let read = TypeSig::read(&mut r1);
        let skipped = skip_type(&mut r2);
        match (read, skipped) {
            (Ok(t), Ok(())) => {
                assert_eq!(r1.position(), r2.position());
                let enc = t.to_bytes().unwrap();
                assert!(enc.len() <= r1.position());
                assert_eq!(TypeSig::parse(&enc).unwrap(), t);
            }
            (Err(a), Err(b)) => assert_eq!(a, b),
            // Only a tree has a nesting limit.
            (Err(Error::TooDeep { .. }), Ok(())) => {}
            (a, b) => panic!("{bytes:02x?}: read {a:?} vs skip {b:?}"),
        }
        // MethodSig vs summary.
        match (MethodSig::parse(bytes), summarize_method_sig(bytes)) {
            (Ok(m), Ok(s)) => {
                assert_eq!(m.summary(), s);
                let enc = m.to_bytes().unwrap();
                assert!(enc.len() <= bytes.len());
                assert_eq!(MethodSig::parse(&enc).unwrap(), m);
            }
            (Err(a), Err(b)) => assert_eq!(a, b),
            (Err(Error::TooDeep { .. }), Ok(_)) => {}
            (a, b) => panic!("{bytes:02x?}: parse {a:?} vs summary {b:?}"),
        }
        // A method signature at the start of `bytes`, ignoring what follows.
        let mut r = SigReader::new(bytes);
        if let Ok(m) = MethodSig::read(&mut r) {
            let used = &bytes[..r.position()];
            assert_eq!(summarize_method_sig(used).unwrap(), m.summary());
            let enc = m.to_bytes().unwrap();
            assert!(enc.len() <= used.len());
            assert_eq!(MethodSig::parse(&enc).unwrap(), m);
        }
        if let Ok(l) = LocalVarSig::parse(bytes) {
            let enc = l.to_bytes().unwrap();
            assert!(enc.len() <= bytes.len());
            assert_eq!(LocalVarSig::parse(&enc).unwrap(), l);
        }
        if let Ok(f) = FieldSig::parse(bytes) {
            let enc = f.to_bytes().unwrap();
            assert_eq!(FieldSig::parse(&enc).unwrap(), f);
        }
        let mut r = SigReader::new(bytes);
        let _ = r.read_compressed_i32();
        let _ = r.read_type_def_or_ref();
    }

    proptest! {
        #[test]
        fn compressed_u32_roundtrip(v in 0u32..=MAX_COMPRESSED_U32) {
            let mut out = Vec::new();
            ilrewrite::sig::write_compressed_u32(v, &mut out).unwrap();
            let mut r = SigReader::new(&out);
            prop_assert_eq!(r.read_compressed_u32().unwrap(), v);
            prop_assert!(r.is_at_end());
        }

        #[test]
        fn compressed_i32_roundtrip(v in MIN_COMPRESSED_I32..=MAX_COMPRESSED_I32) {
            let mut out = Vec::new();
            ilrewrite::sig::write_compressed_i32(v, &mut out).unwrap();
            let mut r = SigReader::new(&out);
            prop_assert_eq!(r.read_compressed_i32().unwrap(), v);
            prop_assert!(r.is_at_end());
        }

        #[test]
        fn type_roundtrip(t in ty()) {
            let bytes = t.to_bytes().unwrap();
            let back = TypeSig::parse(&bytes).unwrap();
            prop_assert_eq!(&back, &t);
            prop_assert_eq!(back.to_bytes().unwrap(), bytes.clone());
            let mut r = SigReader::new(&bytes);
            skip_type(&mut r).unwrap();
            prop_assert!(r.is_at_end());
        }

        #[test]
        fn method_roundtrip(m in method(ty())) {
            let bytes = m.to_bytes().unwrap();
            let back = MethodSig::parse(&bytes).unwrap();
            prop_assert_eq!(&back, &m);
            prop_assert_eq!(back.to_bytes().unwrap(), bytes.clone());
            prop_assert_eq!(summarize_method_sig(&bytes).unwrap(), m.summary());
        }

        #[test]
        fn locals_roundtrip(locals in prop::collection::vec(local(), 0..6)) {
            let sig = LocalVarSig::from_locals(locals.clone()).unwrap();
            prop_assert_eq!(sig.locals(), &locals[..]);
            let bytes = sig.to_bytes().unwrap();
            let back = LocalVarSig::parse(&bytes).unwrap();
            prop_assert_eq!(&back, &sig);
            prop_assert_eq!(back.to_bytes().unwrap(), bytes);
        }

        #[test]
        fn field_roundtrip(t in ty()) {
            let f = FieldSig { ty: t };
            let bytes = f.to_bytes().unwrap();
            prop_assert_eq!(FieldSig::parse(&bytes).unwrap(), f);
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in sig_bytes(None)) {
            check_all_parsers(&bytes);
        }

        #[test]
        fn arbitrary_locals_never_panic(bytes in sig_bytes(Some(0x07))) {
            check_all_parsers(&bytes);
        }

        #[test]
        fn mutated_valid_sigs_never_panic(
            m in method(ty()),
            edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
            cut in any::<prop::sample::Index>(),
        ) {
            let mut bytes = m.to_bytes().unwrap();
            for (i, b) in edits {
                let i = i.index(bytes.len());
                bytes[i] = b;
            }
            check_all_parsers(&bytes);
            let n = cut.index(bytes.len() + 1);
            check_all_parsers(&bytes[..n]);
            let mut locals = vec![0x07, 0x01, 0x1B];
            locals.extend_from_slice(&bytes);
            check_all_parsers(&locals);
        }

        #[test]
        fn mutated_valid_locals_never_panic(
            locals in prop::collection::vec(local(), 1..4),
            edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
            cut in any::<prop::sample::Index>(),
        ) {
            let mut bytes = LocalVarSig::from_locals(locals).unwrap().to_bytes().unwrap();
            for (i, b) in edits {
                let i = i.index(bytes.len());
                bytes[i] = b;
            }
            check_all_parsers(&bytes);
            let n = cut.index(bytes.len() + 1);
            check_all_parsers(&bytes[..n]);
        }
    }
}

/// The `Instrumenter`'s return-value local at the locals limit: a value-returning method
/// with 65,534 locals gets the 65,535th; one with 65,535 is refused with
/// [`Error::TooManyLocals`], a limit ([`Error::is_limit`]: the `clr` rewriter reports
/// it as a refusal, not a failure), and the body is left as it was. A return type
/// nested far deeper than [`MAX_NESTING`] is copied into the new local all the same.
#[test]
fn the_return_value_local_at_the_locals_limit() {
    use ilrewrite::analysis::NoCalls;
    use ilrewrite::transform::{InstrumentationCode, Instrumenter, MethodContext, Snippet};
    use ilrewrite::{Instruction, MethodBody, OpCode};

    let nop = || {
        let mut b = Snippet::builder();
        b.push(Instruction::simple(OpCode::Nop));
        b.finish().unwrap()
    };
    let mut instrumenter = Instrumenter::new(InstrumentationCode {
        entry: nop(),
        exit: nop(),
        ..Default::default()
    })
    .unwrap();
    // `static int32 M()`: ldc.i4.0; ret.
    let body = MethodBody::decode(&[0x0A, 0x16, 0x2A]).unwrap();
    let locals = |n: usize| {
        let mut blob = vec![0x07];
        ilrewrite::sig::write_compressed_u32(n as u32, &mut blob).unwrap();
        blob.extend(std::iter::repeat_n(0x08, n));
        blob
    };
    let returns_int = [0x00, 0x00, 0x08];
    let (almost, full) = (locals(65_534), locals(65_535));
    let context = |signature, locals| MethodContext {
        signature,
        locals: Some(locals),
        id: 0,
        tokens: &[],
        module_id: None,
    };

    let mut edited = body.clone();
    let done = instrumenter
        .instrument(&mut edited, &context(&returns_int, &almost), &NoCalls)
        .unwrap();
    let new_locals = done.new_locals_signature.unwrap().to_vec();
    assert_eq!(new_locals, full);
    assert_eq!(LocalVarSig::parse(&new_locals).unwrap().len(), 65_535);

    let mut refused = body.clone();
    let e = instrumenter
        .instrument(&mut refused, &context(&returns_int, &full), &NoCalls)
        .unwrap_err();
    assert_eq!(
        e,
        Error::TooManyLocals {
            count: 65_536,
            limit: 65_535
        }
    );
    assert!(e.is_limit());
    assert!(refused.instrs.is_unedited());
    // `void` methods add no local: 65,535 locals are wrapped as they are.
    let mut void = MethodBody::decode(&[0x06, 0x2A]).unwrap();
    let done = instrumenter
        .instrument(&mut void, &context(&[0x00, 0x00, 0x01], &full), &NoCalls)
        .unwrap();
    assert_eq!(done.new_locals_signature, None);

    // A return type 100,000 levels deep: no tree, no limit.
    let deep = [[0x15, 0x12, 0x08, 0x01].repeat(100_000), vec![0x08]].concat();
    let signature = [vec![0x00, 0x00], deep.clone()].concat();
    let mut edited = MethodBody::decode(&[0x0A, 0x14, 0x2A]).unwrap();
    let done = instrumenter
        .instrument(&mut edited, &context(&signature, &[0x07, 0x00]), &NoCalls)
        .unwrap();
    assert_eq!(
        done.new_locals_signature.unwrap(),
        [vec![0x07, 0x01], deep].concat()
    );
}

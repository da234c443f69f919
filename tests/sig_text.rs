//! The text form of signature types (`ilrewrite::sig::text`): hand-picked cases, errors
//! with their offsets, nesting far past the limit, and property tests (print then parse
//! gives the same value).

use ilrewrite::Error;
use ilrewrite::sig::text::{MethodSigText, TypeText, parse_method_sig, parse_type, parse_types};
use ilrewrite::sig::{ArrayType, CallingConvention, MAX_NESTING, MethodSig, TypeSig};

const TR1: u32 = 0x0100_0001;
const TR2: u32 = 0x0100_0002;
const TR3: u32 = 0x0100_0003;

fn b(t: TypeSig) -> Box<TypeSig> {
    Box::new(t)
}

fn print(t: &TypeSig) -> String {
    TypeText(t).to_string()
}

/// Parses `text`, checks it prints as `canonical`, and that the canonical text parses
/// back to the same value.
fn check(text: &str, canonical: &str) -> TypeSig {
    let t = parse_type(text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
    assert_eq!(print(&t), canonical, "{text:?}");
    assert_eq!(parse_type(canonical), Ok(t.clone()), "{canonical:?}");
    t
}

fn check_method(text: &str, canonical: &str) -> MethodSig {
    let m = parse_method_sig(text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
    assert_eq!(MethodSigText(&m).to_string(), canonical, "{text:?}");
    assert_eq!(parse_method_sig(canonical), Ok(m.clone()), "{canonical:?}");
    m
}

/// The offset and message of a text error.
fn text_err<T: std::fmt::Debug>(r: Result<T, Error>) -> (usize, String) {
    match r {
        Err(Error::BadSignatureText { at, why }) => (at, why),
        other => panic!("expected BadSignatureText, got {other:?}"),
    }
}

/// The offset of a too-deep error.
fn deep_at<T: std::fmt::Debug>(r: Result<T, Error>) -> usize {
    match r {
        Err(Error::TooDeep {
            offset: Some(at),
            limit,
        }) => {
            assert_eq!(limit, MAX_NESTING);
            at
        }
        Ok(_) => panic!("expected TooDeep, got a value"),
        Err(e) => panic!("expected TooDeep, got {e}"),
    }
}

#[test]
fn every_primitive() {
    use TypeSig::*;
    let cases = [
        ("void", Void),
        ("bool", Boolean),
        ("char", Char),
        ("int8", I1),
        ("uint8", U1),
        ("int16", I2),
        ("uint16", U2),
        ("int32", I4),
        ("uint32", U4),
        ("int64", I8),
        ("uint64", U8),
        ("float32", R4),
        ("float64", R8),
        ("native int", I),
        ("native uint", U),
        ("string", String),
        ("object", Object),
        ("typedref", TypedByRef),
    ];
    for (text, t) in cases {
        assert_eq!(check(text, text), t);
    }
    // Aliases print in ILAsm form.
    assert_eq!(check("nint", "native int"), I);
    assert_eq!(check("nuint", "native uint"), U);
    assert_eq!(check("native unsigned int", "native uint"), U);
    assert_eq!(check(" native\t\nint ", "native int"), I);
    // Keywords are case-sensitive.
    assert_eq!(text_err(parse_type("Int32")).0, 0);
    assert_eq!(text_err(parse_type("native Int")).0, 7);
    assert_eq!(text_err(parse_type("native")).0, 6);
    assert_eq!(text_err(parse_type("native unsigned uint")).0, 16);
}

#[test]
fn every_suffix() {
    use TypeSig::*;
    assert_eq!(check("int32[]", "int32[]"), SzArray(b(I4)));
    assert_eq!(check("int32&", "int32&"), ByRef(b(I4)));
    assert_eq!(check("int32*", "int32*"), Ptr(b(I4)));
    assert_eq!(check("void*", "void*"), Ptr(b(Void)));
    assert_eq!(check("int32 pinned", "int32 pinned"), Pinned(b(I4)));
    let array = |rank, sizes: Vec<u32>, lo_bounds: Vec<i32>| {
        Array(Box::new(ArrayType {
            elem: I4,
            rank,
            sizes,
            lo_bounds,
        }))
    };
    assert_eq!(check("int32[...]", "int32[...]"), array(1, vec![], vec![]));
    assert_eq!(check("int32[,]", "int32[,]"), array(2, vec![], vec![]));
    assert_eq!(
        check("int32[...,...]", "int32[,]"),
        array(2, vec![], vec![])
    );
    assert_eq!(check("int32[,,]", "int32[,,]"), array(3, vec![], vec![]));
    assert_eq!(check("int32[5]", "int32[5]"), array(1, vec![5], vec![]));
    assert_eq!(
        check("int32[0...]", "int32[0...]"),
        array(1, vec![], vec![0])
    );
    assert_eq!(
        check("int32[0...4]", "int32[0...4]"),
        array(1, vec![5], vec![0])
    );
    assert_eq!(
        check("int32[ -3 ... 3 , 2 ... , ]", "int32[-3...3,2...,]"),
        array(3, vec![7], vec![-3, 2])
    );
    assert_eq!(
        check("int32[0...1, 3]", "int32[0...1,3]"),
        array(2, vec![2, 3], vec![0])
    );
    assert_eq!(
        check("int32 modreq(0x01000003)", "int32 modreq(0x01000003)"),
        Modified {
            required: true,
            token: TR3,
            inner: b(I4)
        }
    );
    assert_eq!(
        check("int32 modopt(0x1B000001)", "int32 modopt(0x1b000001)"),
        Modified {
            required: false,
            token: 0x1B00_0001,
            inner: b(I4)
        }
    );
    // Suffixes wrap left to right: the last one is the outermost node, as in ILAsm
    // (blob order: BYREF SZARRAY CMOD_OPT CMOD_REQD I4).
    let t = check(
        "int32 modreq ( 0x01000003 ) modopt(0x01000002) [ ] & pinned",
        "int32 modreq(0x01000003) modopt(0x01000002)[]& pinned",
    );
    assert_eq!(
        t,
        Pinned(b(ByRef(b(SzArray(b(Modified {
            required: false,
            token: TR2,
            inner: b(Modified {
                required: true,
                token: TR3,
                inner: b(I4),
            }),
        }))))))
    );
    assert_eq!(
        t.to_bytes(),
        Err(Error::Unencodable {
            what: "PINNED outside a local variable signature"
        })
    );
    // Modifiers under and over pinned, as a local can have them.
    let t = check(
        "int32& modopt(0x01000001) pinned modreq(0x02000001)",
        "int32& modopt(0x01000001) pinned modreq(0x02000001)",
    );
    let local =
        ilrewrite::sig::LocalVarSig::from_locals(vec![ilrewrite::sig::LocalType::new(t.clone())])
            .unwrap();
    let bytes = local.to_bytes().unwrap();
    assert_eq!(
        bytes,
        [0x07, 0x01, 0x1F, 0x04, 0x45, 0x20, 0x05, 0x10, 0x08],
        "{bytes:02x?}"
    );
    assert_eq!(ilrewrite::sig::LocalVarSig::parse(&bytes).unwrap(), local);
}

#[test]
fn generics_and_tokens() {
    use TypeSig::*;
    assert_eq!(
        check("class 0x01000005", "class 0x01000005"),
        Class(0x0100_0005)
    );
    assert_eq!(
        check("valuetype 0x2000003", "valuetype 0x02000003"),
        ValueType(0x0200_0003)
    );
    assert_eq!(check("!0", "!0"), Var(0));
    assert_eq!(check("!!12", "!!12"), MVar(12));
    let text = "class 0x01000001<class 0x01000002<!!0[]>, int32&>";
    let t = check(text, text);
    assert_eq!(
        t,
        GenericInst {
            is_value_type: false,
            token: TR1,
            args: vec![
                GenericInst {
                    is_value_type: false,
                    token: TR2,
                    args: vec![SzArray(b(MVar(0)))],
                },
                ByRef(b(I4)),
            ],
        }
    );
    assert_eq!(
        TypeSig::parse(&t.to_bytes().unwrap()).unwrap(),
        t,
        "the binary form agrees"
    );
    let t = check(
        "valuetype 0x1b000001<int32>[]",
        "valuetype 0x1b000001<int32>[]",
    );
    assert_eq!(
        t,
        SzArray(b(GenericInst {
            is_value_type: true,
            token: 0x1B00_0001,
            args: vec![I4],
        }))
    );
    assert_eq!(
        parse_types("int32, class 0x01000001<!0>, !!1[]"),
        Ok(vec![
            I4,
            GenericInst {
                is_value_type: false,
                token: TR1,
                args: vec![Var(0)]
            },
            SzArray(b(MVar(1)))
        ])
    );
    assert_eq!(parse_types(" string "), Ok(vec![String]));
}

#[test]
fn function_pointers() {
    use TypeSig::*;
    let t = check(
        "method void *(int32, string)",
        "method void *(int32, string)",
    );
    let TypeSig::FnPtr(m) = &t else {
        panic!("{t:?}")
    };
    assert_eq!(**m, MethodSig::new(Void, vec![I4, String]));
    let t = check("method instance int32 *(!0)", "method instance int32 *(!0)");
    let TypeSig::FnPtr(m) = &t else {
        panic!("{t:?}")
    };
    assert!(m.has_this);
    assert_eq!(m.params, [Var(0)]);
    // The return type's own `*` and the one before the parameters.
    let t = check("method int32**(int32*)*", "method int32* *(int32*)*");
    assert_eq!(
        t,
        Ptr(b(FnPtr(Box::new(MethodSig::new(
            Ptr(b(I4)),
            vec![Ptr(b(I4))]
        )))))
    );
    // Inside generic arguments, and a function pointer returning one.
    let text = "class 0x01000001<method unmanaged cdecl void *(), method method bool *() *(int32)>";
    let t = check(text, text);
    assert_eq!(TypeSig::parse(&t.to_bytes().unwrap()).unwrap(), t);
    let TypeSig::GenericInst { args, .. } = &t else {
        panic!("{t:?}")
    };
    let FnPtr(first) = &args[0] else { panic!() };
    assert_eq!(first.calling_convention, CallingConvention::C);
    let FnPtr(second) = &args[1] else { panic!() };
    assert_eq!(
        second.return_type,
        FnPtr(Box::new(MethodSig::new(Boolean, vec![])))
    );
    // A vararg function pointer with its sentinel.
    let t = check(
        "method vararg void *(int32, ..., string)",
        "method vararg void *(int32, ..., string)",
    );
    let FnPtr(m) = &t else { panic!() };
    assert_eq!(m.sentinel, Some(1));
    assert_eq!(TypeSig::parse(&t.to_bytes().unwrap()).unwrap(), t);
}

#[test]
fn method_signatures() {
    use TypeSig::*;
    let m = check_method("void ()", "void ()");
    assert_eq!(m, MethodSig::new(Void, vec![]));
    assert_eq!(m.to_bytes().unwrap(), [0x00, 0x00, 0x01]);
    let m = check_method(
        "instance explicit generic 2 !!1 (class 0x01000001, !!0&)",
        "instance explicit generic 2 !!1 (class 0x01000001, !!0&)",
    );
    assert!(m.has_this && m.explicit_this);
    assert_eq!(m.generic_param_count, 2);
    assert_eq!(
        m.to_bytes().unwrap(),
        [0x70, 0x02, 0x02, 0x1E, 0x01, 0x12, 0x05, 0x10, 0x1E, 0x00]
    );
    // `explicit` alone, as the blob can say it.
    assert!(check_method("explicit void ()", "explicit void ()").explicit_this);
    // Every calling convention, printed and encoded.
    for (text, cc) in [
        ("default ", CallingConvention::Default),
        ("vararg ", CallingConvention::VarArg),
        ("unmanaged cdecl ", CallingConvention::C),
        ("unmanaged stdcall ", CallingConvention::StdCall),
        ("unmanaged thiscall ", CallingConvention::ThisCall),
        ("unmanaged fastcall ", CallingConvention::FastCall),
        ("unmanaged ", CallingConvention::Unmanaged),
    ] {
        let canonical = if cc == CallingConvention::Default {
            "instance int32 (int32)".to_string()
        } else {
            format!("instance {text}int32 (int32)")
        };
        let m = check_method(&format!("instance {text}int32 (int32)"), &canonical);
        assert_eq!(m.calling_convention, cc);
        let bytes = m.to_bytes().unwrap();
        assert_eq!(bytes, [0x20 | cc.kind(), 0x01, 0x08, 0x08]);
        assert_eq!(MethodSig::parse(&bytes).unwrap(), m);
    }
    // A return type that is a pointer: no `*` before the list outside `method`.
    let m = check_method("int32*(int32)", "int32* (int32)");
    assert_eq!(m.return_type, Ptr(b(I4)));
}

#[test]
fn vararg_sentinel_round_trips_where_it_sits() {
    use TypeSig::*;
    let m = check_method(
        "vararg void (int32, ..., string, object)",
        "vararg void (int32, ..., string, object)",
    );
    assert_eq!(m.sentinel, Some(1));
    assert_eq!(m.fixed_params(), [I4]);
    assert_eq!(m.vararg_params(), [String, Object]);
    let bytes = m.to_bytes().unwrap();
    assert_eq!(bytes, [0x05, 0x03, 0x01, 0x08, 0x41, 0x0E, 0x1C]);
    assert_eq!(MethodSig::parse(&bytes).unwrap(), m);
    let m = check_method("vararg void(...,int32)", "vararg void (..., int32)");
    assert_eq!(m.sentinel, Some(0));
    let m = check_method(
        "vararg void (int32, string, ..., int32)",
        "vararg void (int32, string, ..., int32)",
    );
    assert_eq!(m.sentinel, Some(2));
    // A sentinel without a following parameter, or a second one, is an error.
    let (at, why) = text_err(parse_method_sig("vararg void (int32, ...)"));
    assert_eq!(at, 23, "{why}");
    assert!(why.contains("sentinel"), "{why}");
    assert_eq!(text_err(parse_method_sig("vararg void (...)")).0, 16);
    assert_eq!(
        text_err(parse_method_sig("vararg void (..., int32, ..., int32)")).0,
        25
    );
    assert_eq!(
        text_err(parse_method_sig("vararg void (..., ..., int32)")).0,
        18
    );
    assert_eq!(text_err(parse_type("...")).0, 0);
}

#[test]
fn whitespace_variants() {
    let canonical = "class 0x01000001<int32, string[]>&";
    for text in [
        canonical,
        "class 0x01000001<int32,string[]>&",
        "  class\t0x01000001 <\n int32 ,\r\nstring [ ] > &  ",
        "class 0x01000001< int32 , string [] >\x0c&",
    ] {
        check(text, canonical);
    }
    let canonical = "instance vararg generic 1 void (int32, ..., method void *(!!0))";
    for text in [
        canonical,
        "instance vararg generic 1 void(int32,...,method void*(!!0))",
        " instance\nvararg\tgeneric  1 void\n(\nint32\n,\n...\n,\nmethod void * ( !!0 ) ) ",
    ] {
        check_method(text, canonical);
    }
    // Words and numbers are single tokens.
    assert_eq!(text_err(parse_type("int 32")).0, 0);
    // (`0x0100` is a token of table 0x00.)
    assert_eq!(text_err(parse_type("class 0x0100 0001")).0, 6);
    assert_eq!(text_err(parse_type("class 0x01000001 0001")).0, 17);
    assert_eq!(text_err(parse_type("int32[. ..]")).0, 6);
}

#[test]
fn errors_say_where_and_what() {
    // Display.
    assert_eq!(
        parse_method_sig("void (int32, )").unwrap_err().to_string(),
        "bad signature text at 13: expected a type, found `)`"
    );
    // Unknown word.
    let (at, why) = text_err(parse_type("class 0x01000001<int32, integer>"));
    assert_eq!(at, 24);
    assert_eq!(why, "expected a type, found unknown word `integer`");
    assert!(text_err(parse_type("unsigned int32")).1.contains("uint8"));
    assert!(
        text_err(parse_method_sig("vararg instance void ()"))
            .1
            .contains("in this order")
    );
    // Missing `>`.
    let (at, why) = text_err(parse_type("class 0x01000001<int32"));
    assert_eq!(at, 22);
    assert!(
        why.contains("`>`") && why.contains("the end of the text"),
        "{why}"
    );
    assert_eq!(text_err(parse_type("class 0x01000001<int32 int32>")).0, 23);
    // Empty generic arguments.
    let (at, why) = text_err(parse_type("class 0x01000001<>"));
    assert_eq!(at, 17);
    assert!(why.contains("at least one type argument"), "{why}");
    assert_eq!(text_err(parse_type("class 0x01000001<int32,>")).0, 23);
    // A token of a table a signature cannot hold.
    let (at, why) = text_err(parse_type("class 0x0A000001"));
    assert_eq!(at, 6);
    assert!(why.contains("table 0x0a"), "{why}");
    assert_eq!(text_err(parse_type("int32 modopt(0x06000001)")).0, 13);
    assert_eq!(text_err(parse_type("valuetype 0x00000001")).0, 10);
    assert_eq!(text_err(parse_type("class int32")).0, 6);
    // `generic 0`.
    let (at, why) = text_err(parse_method_sig("instance generic 0 void ()"));
    assert_eq!(at, 17);
    assert!(why.contains("generic 0"), "{why}");
    // Trailing text.
    let (at, why) = text_err(parse_type("int32 string"));
    assert_eq!(at, 6);
    assert!(
        why.contains("the end of the text") && why.contains("`string`"),
        "{why}"
    );
    assert_eq!(text_err(parse_type("int32[]>")).0, 7);
    assert_eq!(text_err(parse_method_sig("void () int32")).0, 8);
    assert_eq!(text_err(parse_method_sig("void (int32))")).0, 12);
    assert_eq!(text_err(parse_types("int32, string,")).0, 14);
    assert_eq!(text_err(parse_types("int32 string")).0, 6);
    assert_eq!(text_err(parse_types("int32,,string")).0, 6);
    // Non-ASCII text: the offset counts characters.
    let (at, why) = text_err(parse_type("int32[] é"));
    assert_eq!(at, 8);
    assert!(why.contains("non-ASCII") && why.contains("U+00E9"), "{why}");
    assert_eq!(text_err(parse_type("Ωint32")).0, 0);
    assert_eq!(
        text_err(parse_method_sig("void (int32,\u{a0}string)")).0,
        12
    );
    assert_eq!(text_err(parse_types("string\u{1F600}")).0, 6);
    // Empty (or blank) text.
    for text in ["", "   ", "\n"] {
        let (at, why) = text_err(parse_type(text));
        assert_eq!(at, text.len());
        assert_eq!(why, "expected a type, found the end of the text");
        assert_eq!(text_err(parse_types(text)).0, text.len());
        assert_eq!(text_err(parse_method_sig(text)).0, text.len());
    }
    // Misplaced modifiers and the unwritable `internal`.
    assert!(
        text_err(parse_type("modreq(0x01000001) int32"))
            .1
            .contains("follow the type")
    );
    assert!(
        text_err(parse_type("pinned int32"))
            .1
            .contains("follow the type")
    );
    assert!(
        text_err(parse_type("internal(0x0000000000001234)"))
            .1
            .contains("runtime type handle")
    );
    assert_eq!(text_err(parse_type("int32 modreq 0x01000001")).0, 13);
    // Long words are quoted in part.
    let long = "x".repeat(100_000);
    let (at, why) = text_err(parse_type(&format!("int32 {long}")));
    assert_eq!(at, 6);
    assert!(why.len() < 200, "{}", why.len());
    assert_eq!(text_err(parse_type("int32 modreq(0x01000001")).0, 23);
    // Function pointers.
    assert_eq!(text_err(parse_type("method void (int32)")).0, 12);
    assert_eq!(text_err(parse_type("method void *(int32")).0, 19);
    assert_eq!(text_err(parse_type("method")).0, 6);
}

/// Nesting 100,000 deep, every way the grammar nests: an error, quickly, with no stack
/// overflow; the offset is where the level beyond [`MAX_NESTING`] starts.
#[test]
fn hundred_thousand_deep_is_an_error() {
    const N: usize = 100_000;
    let limit = MAX_NESTING;
    let cases: Vec<(String, usize)> = vec![
        // 256 levels fit: the 256th suffix is the one too many.
        (format!("int32{}", "[]".repeat(N)), 5 + 2 * (limit - 1)),
        (format!("int32{}", "&".repeat(N)), 5 + (limit - 1)),
        (format!("int32{}", " pinned".repeat(N)), 6 + 7 * (limit - 1)),
        (
            format!("{}int32{}", "class 0x01000001<".repeat(N), ">".repeat(N)),
            17 * limit,
        ),
        (
            format!("{}int32", "class 0x01000001<".repeat(N)),
            17 * limit,
        ),
        (format!("{}void", "method ".repeat(N)), 7 * limit),
        // The return type of the 256th function pointer is the level too many.
        (
            format!("{}int32", "method void *(".repeat(N)),
            14 * (limit - 1) + 7,
        ),
        (
            format!("{}int32{}", "method void *(".repeat(N), ")".repeat(N)),
            14 * (limit - 1) + 7,
        ),
    ];
    for (text, offset) in &cases {
        assert_eq!(deep_at(parse_type(text)), *offset, "{}", &text[..40]);
        assert_eq!(deep_at(parse_types(text)), *offset);
        let m = format!("void ({text})");
        assert_eq!(deep_at(parse_method_sig(&m)), offset + 6);
    }
    // Text that nests only in what the grammar does not have fails at once.
    for text in [
        "(".repeat(N),
        "<".repeat(N),
        "[".repeat(N),
        format!("int32{}", "[".repeat(N)),
    ] {
        text_err(parse_type(&text));
        text_err(parse_method_sig(&text));
    }
}

/// Trees deeper than the limit, built by hand, print without recursing; the text then
/// fails to parse with [`Error::TooDeep`], as the blob fails to encode.
#[test]
fn deep_trees_print_without_recursing() {
    let mut t = TypeSig::I4;
    for i in 0..100_000u32 {
        t = match i % 4 {
            0 => TypeSig::SzArray(Box::new(t)),
            1 => TypeSig::GenericInst {
                is_value_type: false,
                token: TR1,
                args: vec![t],
            },
            2 => TypeSig::FnPtr(Box::new(MethodSig::new(TypeSig::Void, vec![t]))),
            _ => TypeSig::Modified {
                required: true,
                token: TR2,
                inner: Box::new(t),
            },
        };
    }
    let text = print(&t);
    assert!(text.len() > 1_000_000);
    deep_at(parse_type(&text));
    assert!(matches!(t.to_bytes(), Err(Error::TooDeep { .. })));
    // Taken apart level by level: dropping it whole would recurse 100,000 deep.
    loop {
        t = match t {
            TypeSig::SzArray(inner) | TypeSig::Modified { inner, .. } => *inner,
            TypeSig::GenericInst { mut args, .. } => args.pop().unwrap(),
            TypeSig::FnPtr(mut m) => m.params.pop().unwrap(),
            _ => break,
        };
    }
}

/// Parsing and printing at the nesting limit fit in a small stack, in every shape: 256
/// KiB in release builds (4 MiB in debug builds, whose frames are several times larger).
#[test]
fn parsing_at_the_nesting_limit_fits_a_small_stack() {
    let stack = if cfg!(debug_assertions) {
        4 << 20
    } else {
        256 << 10
    };
    let k = MAX_NESTING - 1;
    let texts = vec![
        format!("{}int32{}", "class 0x01000001<".repeat(k), ">".repeat(k)),
        format!("{}void{}", "method ".repeat(k), " *()".repeat(k)),
        format!("{}int32{}", "method void *(".repeat(k), ")".repeat(k)),
        format!(
            "{}int32[]{}",
            "method void *(class 0x01000001<".repeat(k / 2),
            ">)".repeat(k / 2)
        ),
        format!("int32{}", "[0...5]".repeat(k)),
        format!("int32{}", " modopt(0x01000001)".repeat(k)),
    ];
    std::thread::Builder::new()
        .stack_size(stack)
        .spawn(move || {
            for text in &texts {
                let t = parse_type(text).unwrap();
                assert_eq!(&print(&t), text);
                t.to_bytes().unwrap();
                let m = parse_method_sig(&format!("{text} ({text})")).unwrap();
                assert_eq!(m.params[0], t);
                // One more level is too deep, whichever way.
                deep_at(parse_type(&format!("{text}[]")));
            }
        })
        .unwrap()
        .join()
        .unwrap();
}

/// Values the grammar cannot write print as text the parser rejects; the encoder
/// rejects them too, but for `Internal`, which it writes.
#[test]
fn unwritable_values_print_rejected_text() {
    use TypeSig::*;
    let array = |rank, sizes: Vec<u32>, lo_bounds: Vec<i32>| {
        Array(Box::new(ArrayType {
            elem: I4,
            rank,
            sizes,
            lo_bounds,
        }))
    };
    let cases = [
        (Internal(0x1234), "internal(0x0000000000001234)", 0),
        (
            SzArray(b(Internal(u64::MAX))),
            "internal(0xffffffffffffffff)[]",
            0,
        ),
        (Class(0x0A00_0001), "class 0x0a000001", 6),
        (ValueType(5), "valuetype 0x00000005", 10),
        (
            Modified {
                required: true,
                token: 0x0600_0001,
                inner: b(I4),
            },
            "int32 modreq(0x06000001)",
            13,
        ),
        (
            GenericInst {
                is_value_type: true,
                token: TR1,
                args: vec![],
            },
            "valuetype 0x01000001<>",
            21,
        ),
        (
            array(0, vec![], vec![]),
            "int32[invalid shape: rank 0, sizes [], lower bounds []]",
            6,
        ),
        (
            array(1, vec![1, 2], vec![]),
            "int32[invalid shape: rank 1, sizes [1, 2], lower bounds []]",
            6,
        ),
        (
            array(2, vec![], vec![1, 2, 3]),
            "int32[invalid shape: rank 2, sizes [], lower bounds [1, 2, 3]]",
            6,
        ),
    ];
    for (t, text, at) in cases {
        assert_eq!(print(&t), text);
        assert_eq!(text_err(parse_type(text)).0, at, "{text}");
        let internal = text.starts_with("internal");
        assert_eq!(t.to_bytes().is_ok(), internal, "{t:?}");
    }
    // A sentinel not followed by a parameter.
    for (params, sentinel, text, at) in [
        (vec![I4], Some(1), "vararg void (int32, ...)", 23),
        (vec![], Some(0), "vararg void (...)", 16),
        (vec![I4], Some(7), "vararg void (int32, ...)", 23),
    ] {
        let m = MethodSig {
            calling_convention: CallingConvention::VarArg,
            sentinel,
            ..MethodSig::new(Void, params)
        };
        assert_eq!(MethodSigText(&m).to_string(), text);
        assert_eq!(text_err(parse_method_sig(text)).0, at);
        assert!(m.to_bytes().is_err());
    }
}

/// Every signature blob of the corpus of hand-written blobs in `tests/sig.rs` style
/// that parses prints as text that parses back to the same tree.
#[test]
fn binary_and_text_agree_on_sample_blobs() {
    let types: &[&[u8]] = &[
        &[0x08],
        &[0x1D, 0x0E],
        &[0x15, 0x12, 0x05, 0x02, 0x08, 0x1E, 0x00],
        &[0x14, 0x08, 0x02, 0x01, 0x05, 0x02, 0x00, 0x03],
        &[0x1F, 0x05, 0x20, 0x0E, 0x10, 0x0F, 0x01],
        &[0x1B, 0x25, 0x02, 0x02, 0x08, 0x41, 0x13, 0x03],
        &[0x0F, 0x1B, 0x00, 0x00, 0x01],
    ];
    for bytes in types {
        let t = TypeSig::parse(bytes).unwrap_or_else(|e| panic!("{bytes:02x?}: {e}"));
        let text = print(&t);
        assert_eq!(parse_type(&text), Ok(t.clone()), "{text}");
        assert_eq!(&t.to_bytes().unwrap(), bytes);
    }
}

mod props {
    use super::*;
    use proptest::prelude::*;

    /// Tokens of the tables a signature holds.
    fn token() -> impl Strategy<Value = u32> {
        (
            prop::sample::select(vec![0x01u32, 0x02, 0x1B]),
            prop_oneof![0u32..0x10, 0u32..=0x00FF_FFFF],
        )
            .prop_map(|(t, row)| (t << 24) | row)
    }

    /// Numbers of any size the grammar writes (not only the encodable ones).
    fn number() -> impl Strategy<Value = u32> {
        prop_oneof![0u32..0x100, 0u32..=0x1FFF_FFFF, any::<u32>()]
    }

    /// The types without nested types the grammar writes: all but `Internal`.
    fn leaf() -> impl Strategy<Value = TypeSig> {
        use TypeSig::*;
        prop_oneof![
            8 => prop::sample::select(vec![
                Boolean, Char, I1, U1, I2, U2, I4, U4, I8, U8, R4, R8, I, U, String, Object,
                TypedByRef,
            ]),
            1 => Just(Void),
            2 => token().prop_map(Class),
            2 => token().prop_map(ValueType),
            1 => number().prop_map(Var),
            1 => number().prop_map(MVar),
        ]
    }

    fn modified(inner: impl Strategy<Value = TypeSig>) -> impl Strategy<Value = TypeSig> {
        (any::<bool>(), token(), inner).prop_map(|(required, token, inner)| TypeSig::Modified {
            required,
            token,
            inner: Box::new(inner),
        })
    }

    fn calling_convention() -> impl Strategy<Value = CallingConvention> {
        use CallingConvention::*;
        prop::sample::select(vec![
            Default, C, StdCall, ThisCall, FastCall, VarArg, Unmanaged,
        ])
    }

    /// Method signatures: any flags, counts and a sentinel before any parameter.
    fn method(t: BoxedStrategy<TypeSig>) -> impl Strategy<Value = MethodSig> {
        (
            calling_convention(),
            any::<bool>(),
            any::<bool>(),
            prop_oneof![Just(0u32), 1u32..4, 1u32..=u32::MAX],
            t.clone(),
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

    /// Valid array shapes, with sizes and lower bounds of any value.
    fn array(elem: BoxedStrategy<TypeSig>) -> impl Strategy<Value = TypeSig> {
        (
            elem,
            prop_oneof![1u32..6, 1u32..40],
            prop::collection::vec(number(), 0..6),
            prop::collection::vec(prop_oneof![-100i32..100, any::<i32>()], 0..6),
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

    /// Every type the grammar writes: `void` and `pinned` anywhere too.
    fn ty() -> BoxedStrategy<TypeSig> {
        leaf()
            .prop_recursive(6, 48, 4, |inner| {
                prop_oneof![
                    inner.clone().prop_map(|t| TypeSig::Ptr(Box::new(t))),
                    inner.clone().prop_map(|t| TypeSig::ByRef(Box::new(t))),
                    inner.clone().prop_map(|t| TypeSig::SzArray(Box::new(t))),
                    inner.clone().prop_map(|t| TypeSig::Pinned(Box::new(t))),
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

    /// Bits of text, both valid and not, for the parser to chew on.
    fn fragments() -> impl Strategy<Value = String> {
        let piece = prop::sample::select(vec![
            "int32",
            "void",
            "string",
            "native",
            "int",
            "uint",
            "nint",
            "class",
            "valuetype",
            "0x01000001",
            "0x1b000002",
            "0x0a000001",
            "0x",
            "<",
            ">",
            ",",
            "[",
            "]",
            "&",
            "*",
            "(",
            ")",
            "...",
            "..",
            "!",
            "!!",
            "0",
            "7",
            "-3",
            "4294967296",
            "method",
            "instance",
            "explicit",
            "vararg",
            "unmanaged",
            "cdecl",
            "generic",
            "generic 1",
            "modreq",
            "modopt",
            "(0x01000003)",
            "pinned",
            "internal",
            " ",
            "\t",
            "é",
            "#",
        ]);
        prop::collection::vec(piece, 0..24).prop_map(|v| v.join(" "))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn type_print_parse(t in ty()) {
            let text = print(&t);
            let back = parse_type(&text);
            prop_assert_eq!(back.as_ref(), Ok(&t), "{}", text);
            let back = back.unwrap();
            // Equal values: the parsed one encodes exactly when the original does.
            prop_assert_eq!(back.to_bytes(), t.to_bytes());
            prop_assert_eq!(print(&back), text);
        }

        #[test]
        fn method_print_parse(m in method(ty())) {
            let text = MethodSigText(&m).to_string();
            let back = parse_method_sig(&text);
            prop_assert_eq!(back.as_ref(), Ok(&m), "{}", text);
            let back = back.unwrap();
            prop_assert_eq!(back.to_bytes(), m.to_bytes());
            prop_assert_eq!(MethodSigText(&back).to_string(), text);
            // And as a function pointer.
            let fn_ptr = TypeSig::FnPtr(Box::new(m));
            let text = print(&fn_ptr);
            prop_assert_eq!(parse_type(&text), Ok(fn_ptr), "{}", text);
        }

        #[test]
        fn types_print_parse(ts in prop::collection::vec(ty(), 1..5)) {
            let text = ts.iter().map(print).collect::<Vec<_>>().join(", ");
            prop_assert_eq!(parse_types(&text), Ok(ts), "{}", text);
        }

        /// Blobs that parse print as text that parses to the same tree (unless they hold a
        /// runtime-internal type handle, which text cannot).
        #[test]
        fn parsed_blobs_print_parse(bytes in prop::collection::vec(
            prop_oneof![
                2 => any::<u8>(),
                3 => prop::sample::select((0x00u8..=0x22).chain([0x41, 0x45]).collect::<Vec<_>>()),
            ],
            0..40,
        )) {
            if let Ok(t) = TypeSig::parse(&bytes) {
                let text = print(&t);
                if text.contains("internal(") {
                    prop_assert!(parse_type(&text).is_err());
                } else {
                    prop_assert_eq!(parse_type(&text), Ok(t), "{}", text);
                }
            }
            if let Ok(m) = MethodSig::parse(&bytes) {
                let text = MethodSigText(&m).to_string();
                if text.contains("internal(") {
                    prop_assert!(parse_method_sig(&text).is_err());
                } else {
                    prop_assert_eq!(parse_method_sig(&text), Ok(m), "{}", text);
                }
            }
        }

        /// Arbitrary text never panics; what parses prints canonically and parses back.
        #[test]
        fn arbitrary_text(text in fragments()) {
            for r in [parse_type(&text).map(|t| vec![t]), parse_types(&text)] {
                match r {
                    Ok(ts) => {
                        for t in ts {
                            let printed = print(&t);
                            prop_assert_eq!(parse_type(&printed), Ok(t), "{}", text);
                        }
                    }
                    Err(Error::BadSignatureText { at, .. }) => prop_assert!(at <= text.len()),
                    Err(e) => prop_assert!(false, "{}: {}", text, e),
                }
            }
            match parse_method_sig(&text) {
                Ok(m) => {
                    let printed = MethodSigText(&m).to_string();
                    prop_assert_eq!(parse_method_sig(&printed), Ok(m), "{}", text);
                }
                Err(Error::BadSignatureText { at, .. }) => prop_assert!(at <= text.len()),
                Err(e) => prop_assert!(false, "{}: {}", text, e),
            }
        }
    }
}

//! The grammar, the canonical form of parameter types, and random text.

use proptest::prelude::*;

use super::{Selector, SelectorError, canonical, unquote};
use crate::disasm::MethodName;

fn err(text: &str) -> SelectorError {
    match Selector::parse(text) {
        Ok(s) => panic!("{text:?} parsed as {s:?}"),
        Err(e) => e,
    }
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

#[test]
fn selectors_read_and_write_back() {
    for (text, type_name, method, params) in [
        ("App.Orders::Place", "App.Orders", Some("Place"), None),
        ("App.Orders::*", "App.Orders", None, None),
        (
            "App.Outer/<>c::<Run>b__0_0",
            "App.Outer/<>c",
            Some("<Run>b__0_0"),
            None,
        ),
        ("A::.ctor()", "A", Some(".ctor"), Some(&[][..])),
        (
            "System.String::Concat(string,string)",
            "System.String",
            Some("Concat"),
            Some(&["string", "string"][..]),
        ),
        (
            "D`2::M(!0,!!1&,int32[0...,0...],method void*(int32),'a,b')",
            "D`2",
            Some("M"),
            Some(
                &[
                    "!0",
                    "!!1&",
                    "int32[0...,0...]",
                    "method void*(int32)",
                    "'a,b'",
                ][..],
            ),
        ),
        (
            "A::M(System.Collections.Generic.Dictionary`2<string,native int>)",
            "A",
            Some("M"),
            Some(&["System.Collections.Generic.Dictionary`2<string,native int>"][..]),
        ),
    ] {
        let s = Selector::parse(text).unwrap();
        assert_eq!(s.type_name(), type_name, "{text}");
        assert_eq!(s.method_name(), method, "{text}");
        assert_eq!(s.params(), params.map(strings).as_deref(), "{text}");
        assert_eq!(s.to_string(), text);
        assert_eq!(text.parse::<Selector>(), Ok(s));
    }
}

#[test]
fn parameter_types_are_compared_in_canonical_form() {
    let verbose = Selector::parse(
        "A::M( class [System.Runtime]System.Object ,valuetype [System.Runtime]System.Nullable`1< int32 >, \
         class System.Collections.Generic.List`1<class [mscorlib]System.String>,\tint32 &,native  int )",
    )
    .unwrap();
    assert_eq!(
        verbose.to_string(),
        "A::M(System.Object,System.Nullable`1<int32>,System.Collections.Generic.List`1<System.String>,int32&,native int)"
    );
    assert_eq!(
        Selector::method("A", "M").with_params(strings(&[
            "class [System.Runtime]System.Object",
            "valuetype System.Nullable`1<int32>",
            "System.Collections.Generic.List`1<[x]System.String>",
            "int32&",
            "native int"
        ])),
        verbose
    );
    assert_eq!(canonical("int32 modreq([mscorlib]X) &"), "int32 modreq(X)&");
    assert_eq!(canonical("'class' x"), "'class' x", "quoted names stay");
    assert_eq!(canonical("classic"), "classic");
    assert_eq!(canonical("[a]class [b]X"), "X");
    assert_eq!(
        Selector::every_method("A").with_params(vec![]),
        Selector::every_method("A"),
        "`*` takes no list"
    );
}

#[test]
fn malformed_selectors_say_what_and_where() {
    for (text, character, why) in [
        ("App.Orders", 11, "not TYPE::METHOD"),
        ("App.Orders:Place", 11, "not TYPE::METHOD"),
        ("::Place", 1, "no type name"),
        ("A::", 4, "no method name"),
        ("A::B::C", 2, "`:` in the type name"),
        ("A::B:", 5, "`:` in the method name"),
        ("A+B::C", 2, "nested types are written Outer/Inner"),
        ("A.*::C", 3, "`*` in the type name"),
        ("A::C*", 5, "`*` in the method name"),
        (
            "A B::C",
            2,
            "whitespace or a control character in the type name",
        ),
        (
            "A::B C",
            5,
            "whitespace or a control character in the method name",
        ),
        ("A..B::C", 3, "an empty part"),
        ("A./B::C", 3, "an empty part"),
        (".A::C", 1, "the type name starts or ends"),
        ("A/::C", 2, "the type name starts or ends"),
        ("A(x)::C", 2, "`(` in the type name"),
        ("A)::C", 2, "`)` in the type name"),
        ("A::B)", 5, "`)` in the method name"),
        ("A::*()", 5, "`*` takes no parameter list"),
        ("A::B(", 6, "the parameter list is not closed"),
        ("A::B(int32", 11, "the parameter list is not closed"),
        ("A::B(x)y", 8, "text after the parameter list"),
        ("A::B(x))", 8, "text after the parameter list"),
        ("A::B(x<y)", 9, "unbalanced brackets"),
        ("A::B(x>)", 7, "unbalanced brackets"),
        ("A::B(x,,y)", 8, "an empty parameter type"),
        // Found by the dial's property test: a tab would stay in the canonical form.
        ("A::B(class 'a\tb')", 14, "a tab inside a quoted name"),
        ("A::B(x,)", 8, "an empty parameter type"),
        ("A::B([a])", 6, "an empty parameter type"),
        ("A::B('x)", 6, "a quote that is not closed"),
        ("A::B(x\ny)", 7, "a control character"),
        ("A::B(é\u{a0})", 7, "a control character"),
    ] {
        let e = err(text);
        assert!(e.why().starts_with(why), "{text:?}: {e}");
        assert_eq!(e.character(), character, "{text:?}: {e}");
        assert_eq!(e.text(), text);
        let message = e.to_string();
        assert!(
            message.starts_with(&format!("selector {text:?}: {why}")),
            "{message}"
        );
        assert!(message.ends_with(&format!("(at character {character})")));
        assert!(!message.contains('\n'));
    }
}

#[test]
fn names_the_disassembler_gave_match_unquoted() {
    let name = |owner: &str, method: &str, params: &[&str]| MethodName {
        owner: owner.into(),
        name: method.into(),
        params: strings(params),
        ..MethodName::default()
    };
    let listed = name(
        "App.Outer/'<>c'",
        "'<Run>b__0_0'",
        &["class [System.Runtime]System.Object", "!T"],
    );
    assert_eq!(unquote("App.Outer/'<>c'"), "App.Outer/<>c");
    assert_eq!(unquote(r"'a\'b\\c'"), r"a'b\c");
    for (text, expected) in [
        ("App.Outer/<>c::<Run>b__0_0", true),
        ("App.Outer/<>c::*", true),
        ("App.Outer/<>c::<Run>b__0_0(System.Object,!T)", true),
        ("App.Outer/<>c::<Run>b__0_0(object,!T)", false),
        ("App.Outer/<>c::<Run>b__0_0(System.Object)", false),
        ("App.Outer/<>c::<Run>b__0_0(System.Object,!0)", false),
        ("App.Outer/<>c::<Run>b__0_0()", false),
        ("Outer/<>c::*", false),
        ("App.Outer::*", false),
        ("App.Outer/<>c::Run", false),
    ] {
        let s = Selector::parse(text).unwrap();
        assert_eq!(s.matches_name(&listed), expected, "{text}");
    }
}

/// Text near the grammar: its punctuation, names, keywords and whitespace.
fn near_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("::".to_string()),
        Just("(".to_string()),
        Just(")".to_string()),
        Just(",".to_string()),
        Just(", ".to_string()),
        Just("<".to_string()),
        Just(">".to_string()),
        Just("[".to_string()),
        Just("]".to_string()),
        Just("'".to_string()),
        Just("\\".to_string()),
        Just("class ".to_string()),
        Just("valuetype ".to_string()),
        Just("[System.Runtime]".to_string()),
        Just(" ".to_string()),
        Just("\t".to_string()),
        Just("*".to_string()),
        Just(".".to_string()),
        Just("/".to_string()),
        Just("&".to_string()),
        "[A-Za-z!0-9`]{1,6}",
        any::<char>().prop_map(String::from),
    ];
    prop::collection::vec(piece, 0..24).prop_map(|pieces| pieces.concat())
}

/// Valid selectors, with verbose parameter lists.
fn valid_text() -> impl Strategy<Value = String> {
    let param = prop_oneof![
        Just("string"),
        Just("int32&"),
        Just("!0"),
        Just("!!1[]"),
        Just(" class [System.Runtime]System.Object "),
        Just("valuetype System.Nullable`1< int32 >"),
        Just("class System.Collections.Generic.Dictionary`2<string, class X>"),
        Just("method void *(int32)"),
        Just("'a,b'"),
        Just("native int"),
    ];
    (
        "[A-Za-z_][A-Za-z0-9_`]{0,6}(\\.[A-Za-z_<>][A-Za-z0-9_<>]{0,5}){0,2}(/[A-Za-z<>]{1,4})?",
        prop_oneof!["[A-Za-z_.<][A-Za-z0-9_<>$`]{0,8}", Just("*".to_string())],
        prop::option::of(prop::collection::vec(param, 0..4)),
    )
        .prop_map(|(t, m, params)| match (m.as_str(), params) {
            (_, None) | ("*", _) => format!("{t}::{m}"),
            (_, Some(params)) => format!("{t}::{m}({})", params.join(", ")),
        })
}

fn check(text: &str) {
    match Selector::parse(text) {
        Ok(selector) => {
            let written = selector.to_string();
            assert_eq!(Selector::parse(&written), Ok(selector.clone()), "{text:?}");
            if let Some(params) = selector.params() {
                for p in params {
                    assert_eq!(canonical(p), *p, "{text:?}");
                }
                let rebuilt = Selector::method(
                    selector.type_name(),
                    selector.method_name().unwrap_or_default(),
                )
                .with_params(params.to_vec());
                assert_eq!(rebuilt, selector);
            }
        }
        Err(e) => {
            assert_eq!(e.text(), text);
            assert!(e.character() >= 1 && e.character() <= text.chars().count() + 1);
        }
    }
}

proptest! {
    #[test]
    fn any_text_parses_and_reads_back_or_is_an_error(text in any::<String>()) {
        check(&text);
    }

    #[test]
    fn text_near_the_grammar_parses_and_reads_back_or_is_an_error(
        prefix in "[A-Za-z.]{0,4}(::)?[A-Za-z]{0,3}",
        text in near_text(),
    ) {
        check(&format!("{prefix}{text}"));
    }

    #[test]
    fn valid_selectors_parse_and_read_back(text in valid_text()) {
        let selector = Selector::parse(&text).unwrap();
        check(&text);
        check(&selector.to_string());
    }

    #[test]
    fn the_canonical_form_is_its_own(text in near_text()) {
        let once = canonical(&text);
        prop_assert_eq!(canonical(&once), once);
    }
}

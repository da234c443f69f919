//! [`Selector::matches`] over System.Private.CoreLib of each runtime (.NET 8.0.4, .NET
//! Core 3.1.23): hand-picked selectors select exactly the methods they name (overloads
//! by their parameter lists, nested types, every method of a type), and every method is
//! selected by the selector written from its own listed name, as `matches_name` says.
#![cfg(feature = "pe")]

use ilrewrite::disasm::method_name;
use ilrewrite::pe::Assembly;
use ilrewrite::selector::Selector;

mod clr_support;
use clr_support::{Runtime, for_each_runtime};

/// Runs `test` on each runtime's System.Private.CoreLib (provisioned on first use).
fn for_each_corelib(test: impl Fn(&Runtime, &Assembly<'_>)) {
    for_each_runtime(|rt| {
        let path = rt.corelib();
        let data = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        test(rt, &Assembly::parse(&data).unwrap());
    });
}

/// The MethodDefs `text` selects, in token order.
fn selected(asm: &Assembly<'_>, text: &str) -> Vec<u32> {
    let selector = Selector::parse(text).unwrap_or_else(|e| panic!("{e}"));
    asm.methods()
        .map(Result::unwrap)
        .filter(|m| selector.matches(asm, m.token))
        .map(|m| m.token)
        .collect()
}

/// The one MethodDef `text` selects.
fn one(asm: &Assembly<'_>, text: &str) -> u32 {
    let found = selected(asm, text);
    assert_eq!(found.len(), 1, "{text} selects {found:x?}");
    found[0]
}

#[test]
fn overloads_are_told_apart_by_their_parameter_lists() {
    for_each_corelib(|rt, asm| {
        let concat = selected(asm, "System.String::Concat");
        assert!(concat.len() >= 10, "{rt}: {concat:x?}");
        let two_strings = one(asm, "System.String::Concat(string,string)");
        let object = one(asm, "System.String::Concat(object)");
        assert_ne!(two_strings, object);
        assert!(concat.contains(&two_strings) && concat.contains(&object));
        assert_eq!(
            method_name(asm, two_strings).text,
            "string System.String::Concat(string, string)"
        );
        assert_eq!(
            method_name(asm, object).text,
            "string System.String::Concat(object)"
        );
        // Whitespace and ilasm's keywords are not significant.
        assert_eq!(
            one(asm, "System.String::Concat( string, string )"),
            two_strings
        );
        let spans = one(
            asm,
            "System.String::Concat(valuetype System.ReadOnlySpan`1<char>, System.ReadOnlySpan`1<char>)",
        );
        assert!(concat.contains(&spans));
        // No overload has these.
        assert_eq!(selected(asm, "System.String::Concat()"), []);
        assert_eq!(selected(asm, "System.String::Concat(int32)"), []);
        assert_eq!(selected(asm, "System.String::Concat(string,object)"), []);
    });
}

#[test]
fn generic_types_nested_types_and_every_method() {
    for_each_corelib(|rt, asm| {
        let dictionary = "System.Collections.Generic.Dictionary`2";
        let try_get = one(asm, &format!("{dictionary}::TryGetValue"));
        // A type's generic parameters by number or by name.
        assert_eq!(
            one(asm, &format!("{dictionary}::TryGetValue(!0,!1&)")),
            try_get
        );
        assert_eq!(
            one(asm, &format!("{dictionary}::TryGetValue(!TKey, !TValue&)")),
            try_get
        );
        assert_eq!(
            selected(asm, &format!("{dictionary}::TryGetValue(!1,!0&)")),
            []
        );

        let move_next = one(asm, &format!("{dictionary}/Enumerator::MoveNext"));
        let name = method_name(asm, move_next);
        assert_eq!(name.owner, format!("{dictionary}/Enumerator"));
        // The whole name, exactly: not the outer type, not the inner one alone.
        assert_eq!(selected(asm, &format!("{dictionary}::MoveNext")), []);
        assert_eq!(selected(asm, "Enumerator::MoveNext"), []);
        assert_eq!(
            selected(asm, "Generic.Dictionary`2/Enumerator::MoveNext"),
            []
        );
        assert!(
            selected(
                asm,
                &format!("{dictionary}/KeyCollection/Enumerator::MoveNext")
            )
            .len()
                == 1
        );

        // Every method of the type: exactly those the listing says are its own.
        let every = selected(asm, "System.String::*");
        let listed: Vec<u32> = asm
            .methods()
            .map(Result::unwrap)
            .filter(|m| method_name(asm, m.token).owner == "System.String")
            .map(|m| m.token)
            .collect();
        assert!(every.len() > 100, "{rt}: {}", every.len());
        assert_eq!(every, listed);
        assert_eq!(selected(asm, "System.Strin::*"), []);
        assert_eq!(selected(asm, "String::*"), []);
    });
}

/// Every method (whose names need no quotes) is selected by the selector of its own
/// listed name and parameter types, which reads back as itself; `matches` and
/// `matches_name` agree on it and on its type's every-method selector; and the
/// selector selects no method with another name or another parameter list.
#[test]
fn every_method_is_selected_by_its_own_listed_name() {
    for_each_corelib(|rt, asm| {
        let mut checked = 0;
        let mut tokens = Vec::new();
        for method in asm.methods().map(Result::unwrap) {
            let name = method_name(asm, method.token);
            if !name.unresolved.is_empty()
                || name.owner.is_empty()
                || name.owner.contains('\'')
                || name.name.contains('\'')
            {
                continue;
            }
            let selector = Selector::method(name.owner.as_str(), name.name.as_str())
                .with_params(name.params.clone());
            assert!(
                selector.matches(asm, method.token),
                "{rt}: {selector} ({name})"
            );
            assert!(selector.matches_name(&name), "{rt}: {selector} ({name})");
            assert_eq!(
                Selector::parse(&selector.to_string()).as_ref(),
                Ok(&selector),
                "{rt}: {name}"
            );
            let every = Selector::every_method(name.owner.as_str());
            assert!(every.matches(asm, method.token) && every.matches_name(&name));
            let other = Selector::method(name.owner.as_str(), format!("{}x", name.name));
            assert!(!other.matches(asm, method.token) && !other.matches_name(&name));
            tokens.push((method.token, selector));
            checked += 1;
        }
        assert!(checked > 10_000, "{rt}: {checked}");
        // A selector selects its method and those with the same name and list only:
        // overloads that differ in their return type alone (conversion operators,
        // `op_Explicit`) are not told apart (checked on a sample; a full check is
        // quadratic).
        for (token, selector) in tokens.iter().step_by(97) {
            let found: Vec<u32> = asm
                .methods()
                .map(Result::unwrap)
                .filter(|m| selector.matches(asm, m.token))
                .map(|m| m.token)
                .collect();
            assert!(found.contains(token), "{rt}: {selector}");
            let listed = method_name(asm, *token);
            for other in found {
                let other = method_name(asm, other);
                assert_eq!(
                    (&other.owner, &other.name, &other.params),
                    (&listed.owner, &listed.name, &listed.params),
                    "{rt}: {selector}"
                );
                if other.text != listed.text {
                    assert!(listed.name.starts_with("op_"), "{rt}: {selector}");
                }
            }
        }
    });
}

//! The grammar, command by command and at each boundary.

use super::command::Command;
use super::parse::{MAX_LINE, ParseError, help_lines, parse};
use crate::clr::runtime::{CodegenFlags, CodegenFlagsError};
use crate::selector::Selector;

fn sel(type_name: &str, method: &str) -> Selector {
    Selector::method(type_name, method)
}

fn err(line: &str) -> ParseError {
    match parse(line) {
        Ok(command) => panic!("{line:?} parsed as {command:?}"),
        Err(e) => e,
    }
}

fn bad_selector(line: &str) -> &'static str {
    match err(line) {
        ParseError::BadSelector(e) => e.why(),
        other => panic!("{line:?}: {other:?}"),
    }
}

#[test]
fn instrument_with_options_and_flags() {
    assert_eq!(
        parse("instrument App.Orders::Place timing threshold_ms=5 label=a=b flags=no-inlining"),
        Ok(Command::Instrument {
            selector: sel("App.Orders", "Place"),
            method: "timing".into(),
            options: vec![
                ("threshold_ms".into(), "5".into()),
                ("label".into(), "a=b".into())
            ],
            flags: CodegenFlags::NO_INLINING,
        })
    );
    assert_eq!(
        parse("instrument App.Orders::* my-probe_2"),
        Ok(Command::Instrument {
            selector: Selector::every_method("App.Orders"),
            method: "my-probe_2".into(),
            options: vec![],
            flags: CodegenFlags::NONE,
        })
    );
    let Ok(Command::Instrument { flags, .. }) =
        parse("instrument A::B m flags=no-optimizations,no-inlining")
    else {
        panic!()
    };
    assert_eq!(
        flags,
        CodegenFlags::NO_INLINING.union(CodegenFlags::NO_OPTIMIZATIONS)
    );
    let Ok(Command::Instrument { flags, .. }) = parse("instrument A::B m flags=none") else {
        panic!()
    };
    assert_eq!(flags, CodegenFlags::NONE);
    // Keys: letters, digits, `_`, not starting with a digit.
    assert!(parse("instrument A::B m _k=1 K9=2 a_b_C=3").is_ok());
}

#[test]
fn instrument_refuses_bad_words() {
    assert!(matches!(
        err("instrument"),
        ParseError::Missing {
            what: "a selector",
            ..
        }
    ));
    assert!(matches!(
        err("instrument A::B"),
        ParseError::Missing {
            what: "an instrumentation method",
            ..
        }
    ));
    assert_eq!(
        err("instrument A::B k=v"),
        ParseError::BadMethodName("k=v".into())
    );
    assert_eq!(
        err("instrument A::B tim.ing"),
        ParseError::BadMethodName("tim.ing".into())
    );
    assert_eq!(
        err("instrument A::B timing k=1 k=2"),
        ParseError::DuplicateKey("k".into())
    );
    assert_eq!(
        err("instrument A::B timing flags=none flags=no-inlining"),
        ParseError::DuplicateKey("flags".into())
    );
    for (word, why) in [
        ("novalue", "not KEY=VALUE"),
        ("=v", "no key before `=`"),
        ("k=", "no value after `=`"),
        (
            "9k=v",
            "a key is a letter or `_`, then letters, digits or `_`",
        ),
        (
            "k-1=v",
            "a key is a letter or `_`, then letters, digits or `_`",
        ),
        (
            "kä=v",
            "a key is a letter or `_`, then letters, digits or `_`",
        ),
    ] {
        assert_eq!(
            err(&format!("instrument A::B timing {word}")),
            ParseError::BadOption {
                word: word.into(),
                why
            },
            "{word}"
        );
    }
    assert_eq!(
        err("instrument A::B timing flags=fast"),
        ParseError::BadFlags {
            value: "fast".into(),
            source: CodegenFlagsError::UnknownName("fast".into())
        }
    );
    assert!(matches!(
        err("instrument A::B timing flags=none,no-inlining"),
        ParseError::BadFlags { .. }
    ));
}

#[test]
fn revert_original_flags_state_help() {
    assert_eq!(
        parse("revert App.Orders::Place"),
        Ok(Command::Revert {
            selector: sel("App.Orders", "Place")
        })
    );
    assert_eq!(
        parse("original App.Orders::*"),
        Ok(Command::Original {
            selector: Selector::every_method("App.Orders")
        })
    );
    assert_eq!(
        parse("flags App.Orders::Place no-optimizations"),
        Ok(Command::Flags {
            selector: sel("App.Orders", "Place"),
            flags: CodegenFlags::NO_OPTIMIZATIONS
        })
    );
    assert_eq!(parse("state"), Ok(Command::State));
    assert_eq!(parse("help"), Ok(Command::Help));
    assert!(matches!(
        err("flags App.Orders::Place"),
        ParseError::Missing {
            what: "the flags",
            ..
        }
    ));
    assert!(matches!(
        err("flags App.Orders::Place slow"),
        ParseError::BadFlags { .. }
    ));
    assert!(matches!(
        err("revert"),
        ParseError::Missing {
            command: "revert",
            ..
        }
    ));
    assert!(matches!(
        err("original"),
        ParseError::Missing {
            command: "original",
            ..
        }
    ));
}

#[test]
fn extra_words_are_refused() {
    for (line, command, extra) in [
        ("state now", "state", "now"),
        ("help me", "help", "me"),
        ("revert A::B A::C", "revert", "A::C"),
        ("original A::B x", "original", "x"),
        ("flags A::B none none", "flags", "none"),
    ] {
        match err(line) {
            ParseError::ExtraWords {
                command: c,
                extra: e,
                ..
            } => assert_eq!((c, e.as_str()), (command, extra), "{line}"),
            other => panic!("{line}: {other:?}"),
        }
    }
}

#[test]
fn empty_and_unknown_lines() {
    for line in ["", " ", "\t \t", "\r", " \r"] {
        assert_eq!(err(line), ParseError::Empty, "{line:?}");
    }
    assert_eq!(err("State"), ParseError::UnknownCommand("State".into()));
    assert_eq!(
        err("rejit A::B"),
        ParseError::UnknownCommand("rejit".into())
    );
}

#[test]
fn separators_and_line_ends() {
    assert_eq!(parse("state\r"), Ok(Command::State));
    assert_eq!(parse("  \tstate \t "), Ok(Command::State));
    assert_eq!(
        parse("revert\t\tA::B\r"),
        Ok(Command::Revert {
            selector: sel("A", "B")
        })
    );
    // Only one final `\r` is a line end; any other control or whitespace character is
    // refused where it stands.
    assert_eq!(
        err("state\r\r"),
        ParseError::BadCharacter { ch: '\r', at: 5 }
    );
    assert_eq!(
        err("revert A::B\rx"),
        ParseError::BadCharacter { ch: '\r', at: 11 }
    );
    assert_eq!(err("state\n"), ParseError::BadCharacter { ch: '\n', at: 5 });
    assert_eq!(
        err("revert\u{b}A::B"),
        ParseError::BadCharacter { ch: '\u{b}', at: 6 }
    );
    assert_eq!(
        err("revert\u{a0}A::B"),
        ParseError::BadCharacter {
            ch: '\u{a0}',
            at: 6
        }
    );
    assert_eq!(err("state\0"), ParseError::BadCharacter { ch: '\0', at: 5 });
}

#[test]
fn lines_up_to_4096_bytes() {
    let pad = |n: usize| format!("state{}", " ".repeat(n - "state".len()));
    assert_eq!(pad(MAX_LINE).len(), 4096);
    assert_eq!(parse(&pad(MAX_LINE)), Ok(Command::State));
    assert_eq!(err(&pad(MAX_LINE + 1)), ParseError::TooLong(4097));
    // The final `\r` counts.
    assert_eq!(
        parse(&format!("{}\r", pad(MAX_LINE - 1))),
        Ok(Command::State)
    );
    assert_eq!(
        err(&format!("{}\r", pad(MAX_LINE))),
        ParseError::TooLong(4097)
    );
    // A long word is fine within the limit.
    let name = "N".repeat(MAX_LINE - "revert A::".len());
    assert!(parse(&format!("revert A::{name}")).is_ok());
    assert_eq!(
        err(&format!("revert A::{name}x")),
        ParseError::TooLong(MAX_LINE + 1)
    );
}

#[test]
fn selectors_that_name_methods() {
    for (word, type_name, method) in [
        ("App.Orders::Place", "App.Orders", Some("Place")),
        ("Orders::Place", "Orders", Some("Place")),
        ("App.Outer/Inner::Run", "App.Outer/Inner", Some("Run")),
        ("App.Outer/Inner/Deeper::*", "App.Outer/Inner/Deeper", None),
        (
            "System.Collections.Generic.List`1::Add",
            "System.Collections.Generic.List`1",
            Some("Add"),
        ),
        ("App.Orders::.ctor", "App.Orders", Some(".ctor")),
        ("App.Orders::.cctor", "App.Orders", Some(".cctor")),
        ("Program::<Main>$", "Program", Some("<Main>$")),
        (
            "App.Outer/<>c::<Run>b__0_0",
            "App.Outer/<>c",
            Some("<Run>b__0_0"),
        ),
        ("App.Orders::Get.Item", "App.Orders", Some("Get.Item")),
        ("Ünïcode.Typ::Méthode", "Ünïcode.Typ", Some("Méthode")),
    ] {
        let expected = match method {
            Some(method) => Selector::method(type_name, method),
            None => Selector::every_method(type_name),
        };
        assert_eq!(
            parse(&format!("revert {word}")),
            Ok(Command::Revert {
                selector: expected.clone()
            }),
            "{word}"
        );
        assert_eq!(expected.to_string(), word);
    }
}

#[test]
fn selectors_that_do_not() {
    for (word, why) in [
        (
            "App.Orders",
            "not TYPE::METHOD or TYPE::* (for example App.Orders::Place)",
        ),
        (
            "App.Orders:Place",
            "not TYPE::METHOD or TYPE::* (for example App.Orders::Place)",
        ),
        ("::Place", "no type name before `::`"),
        (
            "App.Orders::",
            "no method name after `::` (TYPE::* names every method)",
        ),
        ("::", "no type name before `::`"),
        ("A::B::C", "`:` in the type name"),
        ("A:::B", "`:` in the type name"),
        ("A::B:", "`:` in the method name"),
        (
            "App.Outer+Inner::Run",
            "nested types are written Outer/Inner, not with `+`",
        ),
        (
            "App.*::Run",
            "`*` in the type name (it stands only for a whole method name)",
        ),
        (
            "*::Run",
            "`*` in the type name (it stands only for a whole method name)",
        ),
        (
            "App.Orders::Pl*",
            "`*` in the method name (only `*` alone, for every method)",
        ),
        (
            "App.Orders::**",
            "`*` in the method name (only `*` alone, for every method)",
        ),
        (
            ".App.Orders::Place",
            "the type name starts or ends with `.` or `/`",
        ),
        (
            "App.Orders.::Place",
            "the type name starts or ends with `.` or `/`",
        ),
        (
            "/App.Orders::Place",
            "the type name starts or ends with `.` or `/`",
        ),
        (
            "App.Orders/::Place",
            "the type name starts or ends with `.` or `/`",
        ),
        (".::Place", "the type name starts or ends with `.` or `/`"),
        (
            "App..Orders::Place",
            "an empty part in the type name (`..`, `./`, `/.` or `//`)",
        ),
        (
            "App.Outer//Inner::Run",
            "an empty part in the type name (`..`, `./`, `/.` or `//`)",
        ),
        (
            "App./Inner::Run",
            "an empty part in the type name (`..`, `./`, `/.` or `//`)",
        ),
    ] {
        assert_eq!(bad_selector(&format!("original {word}")), why, "{word}");
    }
}

#[test]
fn messages_are_one_line_and_say_what_is_wrong() {
    let cases = [
        ("", "empty line"),
        ("fly", "unknown command \"fly\""),
        ("state x", "`state` takes no more words, got \"x\""),
        (
            "revert",
            "`revert` needs a selector (usage: revert SELECTOR)",
        ),
        ("revert A\u{b}::B", "character '\\u{b}' at byte 8"),
        ("revert A::", "selector \"A::\": no method name"),
        ("instrument A::B m k=1 k=2", "option key \"k\" given twice"),
        (
            "flags A::B fast",
            "flags \"fast\": unknown code-generation flag \"fast\"",
        ),
    ];
    for (line, start) in cases {
        let message = err(line).to_string();
        assert!(message.starts_with(start), "{line:?}: {message}");
        assert!(!message.contains(['\n', '\r']), "{message}");
    }
    assert_eq!(
        ParseError::NotUtf8(3).to_string(),
        "line is not UTF-8 (invalid byte at offset 3)"
    );
    assert_eq!(
        ParseError::TooLong(5000).to_string(),
        "line of 5000 bytes; at most 4096 are read"
    );
}

#[test]
fn display_reads_back() {
    for line in [
        "instrument A.B/C::* timing k=v flags=no-inlining,no-optimizations",
        "instrument A::B m",
        "revert A::.ctor",
        "original A.B::*",
        "flags A::B none",
        "flags A::B no-inlining",
        "state",
        "help",
    ] {
        let command = parse(line).unwrap();
        assert_eq!(command.to_string(), line);
        assert_eq!(parse(&command.to_string()), Ok(command));
    }
    // `flags=none` is the default: not written.
    assert_eq!(
        parse("instrument A::B m flags=none").unwrap().to_string(),
        "instrument A::B m"
    );
}

#[test]
fn help_names_every_command_and_no_line_ends_an_answer() {
    let lines = help_lines();
    for verb in ["instrument", "revert", "original", "flags", "state", "help"] {
        assert!(
            lines.iter().any(|l| l.starts_with(&format!("{verb} "))),
            "{verb}"
        );
    }
    for line in &lines {
        assert!(line != "ok" && !line.starts_with("error:"), "{line}");
        assert!(!line.contains(['\n', '\r']), "{line}");
    }
}

#[test]
fn a_parameter_list_may_hold_spaces_and_stays_one_word() {
    let concat = Selector::method("System.String", "Concat")
        .with_params(vec!["string".into(), "string".into()]);
    assert_eq!(
        parse("instrument System.String::Concat(string, string) timing\tk=v"),
        Ok(Command::Instrument {
            selector: concat.clone(),
            method: "timing".into(),
            options: vec![("k".into(), "v".into())],
            flags: CodegenFlags::NONE,
        })
    );
    assert_eq!(
        parse("flags  System.String::Concat( class string ,\tstring )  none"),
        Ok(Command::Flags {
            selector: concat.clone(),
            flags: CodegenFlags::NONE
        })
    );
    let none = Selector::method("A", "M").with_params(vec![]);
    assert_eq!(
        parse("revert A::M( )"),
        Ok(Command::Revert {
            selector: none.clone()
        })
    );
    assert_eq!(none.to_string(), "A::M()");
    let native = Command::Original {
        selector: Selector::method("A", "M").with_params(vec!["native int".into()]),
    };
    assert_eq!(native.to_string(), "original A::M(native int)");
    assert_eq!(parse(&native.to_string()), Ok(native));
    // A quoted name in the list may hold `)` and spaces.
    let Ok(Command::Revert { selector }) = parse("revert A::M('a) b', int32)") else {
        panic!()
    };
    assert_eq!(
        selector.params(),
        Some(&["'a) b'".into(), "int32".into()][..])
    );
}

#[test]
fn a_parameter_list_that_is_not_one_is_refused_where_it_goes_wrong() {
    for (line, why) in [
        (
            "revert A::M(string x",
            "the parameter list is not closed with `)`",
        ),
        (
            "instrument A::M(string timing",
            "the parameter list is not closed with `)`",
        ),
        ("revert A::M(x)y", "text after the parameter list"),
        (
            "revert A::*()",
            "`*` takes no parameter list (it names every method, every overload)",
        ),
        (
            "revert A::M(x,,y)",
            "an empty parameter type (nothing, or only a keyword or resolution scope)",
        ),
        (
            "revert A::M(x<y)",
            "unbalanced brackets in the parameter list",
        ),
    ] {
        assert_eq!(bad_selector(line), why, "{line}");
    }
    assert!(
        err("revert A::M(x,,y)")
            .to_string()
            .starts_with("selector \"A::M(x,,y)\": an empty parameter type"),
        "{}",
        err("revert A::M(x,,y)")
    );
    assert!(
        err("revert A::M(x,,y)")
            .to_string()
            .ends_with("(at character 8)")
    );
    assert!(matches!(
        err("revert A::M(x, y) z"),
        ParseError::ExtraWords { extra, .. } if extra == "z"
    ));
    assert!(help_lines().iter().any(|l| l.contains("::Method(P1,P2)")));
}

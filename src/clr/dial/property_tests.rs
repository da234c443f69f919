//! The grammar and one connection, on random input.
//!
//! Pure ([`parse`]): arbitrary strings (any Unicode, control characters, very long
//! words) and valid commands mutated (words dropped, repeated, swapped, characters
//! inserted, case changed) never make it panic; what it accepts is consistent (the
//! selector's and the options' rules hold, its words are the line's, its
//! [`Display`](core::fmt::Display) reads back as itself); what it refuses is one line.
//!
//! Through [`serve_connection`], on an in-memory stream and on a socket pair: every line
//! gets exactly the answer `parse` predicts, the dial is called once for a line that
//! parses and never for one that does not; a stream of random bytes (not UTF-8, `\r`
//! anywhere, lines over [`MAX_LINE`]) gets one answer per line.

use std::io::{self, BufRead, BufReader, Cursor, Read, Write};
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;

use proptest::prelude::*;
use proptest::sample::Index;

use super::command::{Command, Dial};
use super::parse::{MAX_LINE, ParseError, parse};
use super::session::{Ended, serve_connection};
use crate::clr::runtime::CodegenFlags;
use crate::selector::Selector;

/// The user id both ends run as (they must be equal to be served).
const UID: u32 = 1000;

// ---------------------------------------------------------------------------------
// Valid commands, as words and as the command they mean.

/// One part of a type name: no `.`, `/`, `:`, `+`, `*`, whitespace or control.
fn type_part() -> impl Strategy<Value = String> {
    prop_oneof![
        "[A-Za-z_][A-Za-z0-9_]{0,8}",
        "[A-Z][a-z]{0,5}`[1-3]",
        "<>c|<Main>\\$|<>c__DisplayClass0_0",
        "\\p{L}{1,4}",
    ]
}

fn type_name() -> impl Strategy<Value = String> {
    (
        type_part(),
        prop::collection::vec((prop_oneof![Just('.'), Just('/')], type_part()), 0..4),
    )
        .prop_map(|(first, rest)| {
            rest.into_iter().fold(first, |mut name, (sep, part)| {
                name.push(sep);
                name.push_str(&part);
                name
            })
        })
}

/// A method's name, or `None` for `*`.
fn method_name() -> impl Strategy<Value = Option<String>> {
    prop_oneof![
        4 => "[A-Za-z_<][A-Za-z0-9_<>$.`]{0,10}".prop_map(Some),
        1 => prop_oneof![Just(".ctor"), Just(".cctor"), Just("<Main>$")]
            .prop_map(|m| Some(m.to_string())),
        1 => Just(None),
    ]
}

/// A parameter type as listings write it, verbose or not, spaces included.
fn param() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("string"),
        Just("int32&"),
        Just("!0"),
        Just("!!1[]"),
        Just("native int"),
        Just("class [System.Runtime]System.Object"),
        Just("valuetype System.Nullable`1<int32>"),
        Just("class System.Collections.Generic.Dictionary`2<string, class X>"),
        Just("method void *(int32)"),
        Just("'a b,c'"),
    ]
    .prop_map(str::to_string)
}

/// A selector as a line writes it (the parameter list perhaps with spaces and tabs
/// after its commas and around it) and the selector it means.
fn selector() -> BoxedStrategy<(String, Selector)> {
    (
        type_name(),
        method_name(),
        prop::option::of(prop::collection::vec(param(), 0..4)),
        prop_oneof![Just(","), Just(", "), Just(",\t "), Just(" , ")],
        prop_oneof![Just(("(", ")")), Just(("( ", " )")), Just(("(\t", ")"))],
    )
        .prop_map(|(type_name, method, params, comma, (open, close))| {
            let Some(method) = method else {
                return (format!("{type_name}::*"), Selector::every_method(type_name));
            };
            let Some(params) = params else {
                return (
                    format!("{type_name}::{method}"),
                    Selector::method(type_name, method),
                );
            };
            let text = format!("{type_name}::{method}{open}{}{close}", params.join(comma));
            (
                text,
                Selector::method(type_name, method).with_params(params),
            )
        })
        .boxed()
}

fn flags() -> impl Strategy<Value = (String, CodegenFlags)> {
    let both = CodegenFlags::NO_INLINING.union(CodegenFlags::NO_OPTIMIZATIONS);
    prop_oneof![
        Just(("none".to_string(), CodegenFlags::NONE)),
        Just(("no-inlining".to_string(), CodegenFlags::NO_INLINING)),
        Just((
            "no-optimizations".to_string(),
            CodegenFlags::NO_OPTIMIZATIONS
        )),
        Just(("no-inlining,no-optimizations".to_string(), both)),
        Just(("no-optimizations,no-inlining".to_string(), both)),
    ]
}

/// Options with distinct keys other than `flags`, in order.
fn options() -> BoxedStrategy<Vec<(String, String)>> {
    prop::collection::vec(("[A-Za-z_][A-Za-z0-9_]{0,6}", "[!-~]{1,8}|\\PC{1,3}"), 0..4)
        .prop_map(|pairs| {
            let mut options: Vec<(String, String)> = Vec::new();
            for (key, value) in pairs {
                let value: String = value
                    .chars()
                    .filter(|c| !c.is_whitespace() && !c.is_control())
                    .collect();
                if key != "flags" && !value.is_empty() && !options.iter().any(|(k, _)| *k == key) {
                    options.push((key, value));
                }
            }
            options
        })
        .boxed()
}

/// A valid command: its words and what it means.
fn valid_command() -> BoxedStrategy<(Vec<String>, Command)> {
    let instrument = (
        selector(),
        "[A-Za-z0-9_-]{1,10}",
        options(),
        prop::option::of(flags()),
        any::<Index>(),
    )
        .prop_map(|((text, selector), method, options, flags, at)| {
            let mut words = vec!["instrument".to_string(), text, method.clone()];
            words.extend(options.iter().map(|(k, v)| format!("{k}={v}")));
            if let Some((text, _)) = &flags {
                // `flags=` may stand anywhere among the options.
                let at = 3 + at.index(options.len() + 1);
                words.insert(at, format!("flags={text}"));
            }
            let flags = flags.map_or(CodegenFlags::NONE, |(_, f)| f);
            let command = Command::Instrument {
                selector,
                method,
                options,
                flags,
            };
            (words, command)
        })
        .boxed();
    prop_oneof![
        3 => instrument,
        1 => selector().prop_map(|(word, s)| (
            vec!["revert".to_string(), word],
            Command::Revert { selector: s }
        )),
        1 => selector().prop_map(|(word, s)| (
            vec!["original".to_string(), word],
            Command::Original { selector: s }
        )),
        1 => (selector(), flags()).prop_map(|((word, s), (text, flags))| (
            vec!["flags".to_string(), word, text],
            Command::Flags { selector: s, flags }
        )),
        1 => (selector(), "[A-Za-z0-9_./-]{1,20}", any::<i32>(), options()).prop_map(
            |((word, s), library, priority, options)| {
                let mut words = vec!["add".to_string(), word, library.clone(), priority.to_string()];
                words.extend(options.iter().map(|(k, v)| format!("{k}={v}")));
                (words, Command::Add { selector: s, library, priority, options })
            }
        ),
        1 => "[A-Za-z0-9_-]{1,10}".prop_map(|method| (
            vec!["remove".to_string(), method.clone()],
            Command::Remove { method }
        )),
        1 => Just((vec!["state".to_string()], Command::State)),
        1 => Just((vec!["detach".to_string()], Command::Detach)),
        1 => Just((vec!["help".to_string()], Command::Help)),
    ]
    .boxed()
}

/// Separators between words: spaces and tabs, one or more.
fn separator() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => Just(" ".to_string()),
        1 => "[ \t]{1,4}",
    ]
}

/// `words` joined by random separators, with random leading and trailing ones and
/// perhaps a final `\r`.
fn join(words: &[String], separators: &[String], ends: (bool, bool, bool)) -> String {
    let mut line = String::new();
    if ends.0 {
        line.push('\t');
    }
    for (i, word) in words.iter().enumerate() {
        if i > 0 {
            line.push_str(
                separators
                    .get(i % separators.len().max(1))
                    .map_or(" ", |s| s),
            );
        }
        line.push_str(word);
    }
    if ends.1 {
        line.push_str("  ");
    }
    if ends.2 {
        line.push('\r');
    }
    line
}

fn valid_line() -> BoxedStrategy<(String, Command)> {
    (
        valid_command(),
        prop::collection::vec(separator(), 1..4),
        any::<(bool, bool, bool)>(),
    )
        .prop_map(|((words, command), separators, ends)| (join(&words, &separators, ends), command))
        .boxed()
}

// ---------------------------------------------------------------------------------
// Mutations of valid commands.

#[derive(Debug, Clone)]
enum Mutation {
    Drop(Index),
    Repeat(Index),
    Swap(Index, Index),
    /// A character at a character boundary of a word.
    Insert(Index, Index, char),
    /// Upper or lower case, character by character, as the bits say.
    Case(Index, u64),
    /// Two words run together.
    Glue(Index),
    /// A word cut at a character boundary.
    Cut(Index, Index),
}

fn mutation() -> BoxedStrategy<Mutation> {
    let interesting = prop_oneof![
        any::<char>(),
        prop::sample::select(vec![
            ':', '*', '+', '.', '/', '=', ',', '\r', '\n', '\t', ' ', '\0', '\u{b}', '\u{a0}',
            '\u{2028}', '\u{feff}', '-', '_', 'é',
        ]),
    ];
    prop_oneof![
        2 => any::<Index>().prop_map(Mutation::Drop),
        2 => any::<Index>().prop_map(Mutation::Repeat),
        2 => (any::<Index>(), any::<Index>()).prop_map(|(a, b)| Mutation::Swap(a, b)),
        3 => (any::<Index>(), any::<Index>(), interesting)
            .prop_map(|(w, at, c)| Mutation::Insert(w, at, c)),
        1 => (any::<Index>(), any::<u64>()).prop_map(|(w, bits)| Mutation::Case(w, bits)),
        1 => any::<Index>().prop_map(Mutation::Glue),
        2 => (any::<Index>(), any::<Index>()).prop_map(|(w, at)| Mutation::Cut(w, at)),
    ]
    .boxed()
}

fn boundary(word: &str, at: Index) -> usize {
    let boundaries: Vec<usize> = word
        .char_indices()
        .map(|(i, _)| i)
        .chain([word.len()])
        .collect();
    boundaries[at.index(boundaries.len())]
}

fn mutate(words: &mut Vec<String>, mutation: &Mutation) {
    if words.is_empty() {
        return;
    }
    let n = words.len();
    match mutation {
        Mutation::Drop(i) => {
            words.remove(i.index(n));
        }
        Mutation::Repeat(i) => {
            let i = i.index(n);
            words.insert(i, words[i].clone());
        }
        Mutation::Swap(a, b) => words.swap(a.index(n), b.index(n)),
        Mutation::Insert(w, at, c) => {
            let word = &mut words[w.index(n)];
            let at = boundary(word, *at);
            word.insert(at, *c);
        }
        Mutation::Case(w, bits) => {
            let word = &mut words[w.index(n)];
            *word = word
                .chars()
                .enumerate()
                .flat_map(|(i, c)| -> Vec<char> {
                    match bits >> (i % 64) & 1 {
                        1 => c.to_uppercase().collect(),
                        _ => c.to_lowercase().collect(),
                    }
                })
                .collect();
        }
        Mutation::Glue(i) => {
            let i = i.index(n);
            if i + 1 < n {
                let next = words.remove(i + 1);
                words[i].push_str(&next);
            }
        }
        Mutation::Cut(w, at) => {
            let word = &mut words[w.index(n)];
            let at = boundary(word, *at);
            word.truncate(at);
        }
    }
}

fn mutated_line() -> BoxedStrategy<String> {
    (
        valid_command(),
        prop::collection::vec(mutation(), 1..5),
        prop::collection::vec(separator(), 1..4),
        any::<(bool, bool, bool)>(),
    )
        .prop_map(|((mut words, _), mutations, separators, ends)| {
            for m in &mutations {
                mutate(&mut words, m);
            }
            join(&words, &separators, ends)
        })
        .boxed()
}

// ---------------------------------------------------------------------------------
// Arbitrary lines.

fn arbitrary_line() -> BoxedStrategy<String> {
    prop_oneof![
        // Any Unicode, control characters included.
        any::<String>(),
        "\\PC{0,40}",
        "[\\x00-\\x1f\\x7f ]{0,10}",
        // Words of the grammar's alphabet, run together or not.
        "[a-z:.*/+=,\\- \t\r]{0,60}",
        // Very long words, on both sides of MAX_LINE.
        (
            prop::sample::select(vec![
                "",
                "revert ",
                "revert A::",
                "instrument A::B m k=",
                "flags "
            ]),
            "[A-Za-z]{1,8}|[A-Za-z:.]{1,8}",
            (MAX_LINE - 40)..(MAX_LINE + 40),
        )
            .prop_map(|(prefix, unit, n)| {
                let mut line = prefix.to_string();
                while line.len() < n {
                    line.push_str(&unit);
                }
                line
            }),
        "\\PC{1000,1500}",
    ]
    .boxed()
}

// ---------------------------------------------------------------------------------
// Consistency of what `parse` accepts.

fn is_separator(c: char) -> bool {
    c == ' ' || c == '\t'
}

fn check_selector(selector: &Selector) {
    let t = selector.type_name();
    assert!(!t.is_empty(), "{selector:?}");
    assert!(
        !t.chars().any(|c| c.is_whitespace()
            || c.is_control()
            || matches!(c, ':' | '+' | '*' | '(' | ')')),
        "{selector:?}"
    );
    assert!(!t.split(['.', '/']).any(str::is_empty), "{selector:?}");
    if let Some(m) = selector.method_name() {
        assert!(!m.is_empty(), "{selector:?}");
        assert!(
            !m.chars()
                .any(|c| c.is_whitespace() || c.is_control() || matches!(c, ':' | '*' | '(' | ')')),
            "{selector:?}"
        );
    }
    if let Some(params) = selector.params() {
        let m = selector.method_name().expect("`*` takes no list");
        for p in params {
            assert!(!p.is_empty(), "{selector:?}");
            assert!(!p.contains(['\t', '\n', '\r']), "{selector:?}");
            assert_eq!(p.trim(), p, "{selector:?}");
        }
        // In canonical form already.
        assert_eq!(
            &Selector::method(t, m).with_params(params.to_vec()),
            selector
        );
    }
}

/// The words of `body` as the dial reads them: split at separators, except that the
/// selector (the second word, when `selector`) runs on through its parameter list.
fn words_of(body: &str, selector: bool) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    let mut rest = body.trim_start_matches(is_separator);
    while !rest.is_empty() {
        let list = selector && words.len() == 1;
        let (mut depth, mut quoted, mut escaped) = (0usize, false, false);
        let mut end = rest.len();
        for (at, c) in rest.char_indices() {
            if quoted {
                match (escaped, c) {
                    (true, _) => escaped = false,
                    (false, '\\') => escaped = true,
                    (false, '\'') => quoted = false,
                    _ => {}
                }
                continue;
            }
            match c {
                '\'' if list && depth > 0 => quoted = true,
                '(' if list => depth += 1,
                ')' if list => depth = depth.saturating_sub(1),
                c if is_separator(c) && depth == 0 => {
                    end = at;
                    break;
                }
                _ => {}
            }
        }
        words.push(rest[..end].trim_end_matches(is_separator).to_string());
        rest = rest[end..].trim_start_matches(is_separator);
    }
    words
}

fn is_key(key: &str) -> bool {
    let mut chars = key.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// What `parse(line)` gave, `command`, is what the line says, and reads back.
fn check_accepted(line: &str, command: &Command) {
    assert!(line.len() <= MAX_LINE);
    let body = line.strip_suffix('\r').unwrap_or(line);
    assert!(
        !body
            .chars()
            .any(|c| !is_separator(c) && (c.is_control() || c.is_whitespace()))
    );
    let words = words_of(body, command.selector().is_some());
    assert_eq!(words[0], command.verb(), "{line:?}");
    if let Some(selector) = command.selector() {
        check_selector(selector);
        assert_eq!(
            Selector::parse(&words[1]).as_ref(),
            Ok(selector),
            "{line:?}"
        );
        assert_eq!(
            Selector::parse(&selector.to_string()).as_ref(),
            Ok(selector),
            "{line:?}"
        );
    }
    match command {
        Command::Instrument {
            method,
            options,
            flags,
            ..
        } => {
            assert_eq!(&words[2], method);
            assert!(!method.is_empty());
            assert!(
                method
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
            );
            let mut given_flags = None;
            let mut given_options = Vec::new();
            for word in &words[3..] {
                let (key, value) = word.split_once('=').expect("KEY=VALUE");
                match key {
                    "flags" => {
                        assert!(given_flags.is_none(), "{line:?}");
                        given_flags = Some(value.parse::<CodegenFlags>().expect("flags"));
                    }
                    _ => given_options.push((key.to_string(), value.to_string())),
                }
            }
            assert_eq!(&given_options, options, "{line:?}");
            assert_eq!(*flags, given_flags.unwrap_or(CodegenFlags::NONE));
            for (i, (key, value)) in options.iter().enumerate() {
                assert!(is_key(key) && key != "flags", "{key:?}");
                assert!(!value.is_empty());
                assert!(!options[..i].iter().any(|(k, _)| k == key), "{key:?} twice");
            }
        }
        Command::Flags { flags, .. } => {
            assert_eq!(words.len(), 3);
            assert_eq!(words[2].parse::<CodegenFlags>().as_ref(), Ok(flags));
        }
        Command::Revert { .. } | Command::Original { .. } => assert_eq!(words.len(), 2),
        Command::Add {
            library,
            priority,
            options,
            ..
        } => {
            assert_eq!(&words[2], library, "{line:?}");
            assert_eq!(words[3].parse::<i32>().as_ref(), Ok(priority), "{line:?}");
            let given: Vec<(String, String)> = words[4..]
                .iter()
                .map(|w| {
                    let (k, v) = w.split_once('=').expect("KEY=VALUE");
                    (k.to_string(), v.to_string())
                })
                .collect();
            assert_eq!(&given, options, "{line:?}");
        }
        Command::Remove { method } => {
            assert_eq!(words.len(), 2);
            assert_eq!(&words[1], method);
        }
        Command::State | Command::Detach | Command::Help => assert_eq!(words.len(), 1),
    }
    // The command's own line reads back as it, with any separators around it.
    let rendered = command.to_string();
    assert_eq!(parse(&rendered).as_ref(), Ok(command), "{rendered:?}");
    let padded = format!(" \t{rendered}\t \r");
    if padded.len() <= MAX_LINE {
        assert_eq!(parse(&padded).as_ref(), Ok(command), "{padded:?}");
    }
}

/// Whatever `parse` says of `line`, it says it consistently and without panicking.
fn check_line(line: &str) {
    match parse(line) {
        Ok(command) => check_accepted(line, &command),
        Err(e) => {
            let message = e.to_string();
            assert!(!message.is_empty());
            assert!(!message.contains(['\n', '\r']), "{message:?}");
            if line.len() > MAX_LINE {
                assert_eq!(e, ParseError::TooLong(line.len()));
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// Arbitrary strings: no panic; anything accepted is consistent.
    #[test]
    fn arbitrary_lines_parse_or_are_refused_in_one_line(line in arbitrary_line()) {
        check_line(&line);
    }

    /// Valid commands, however separated, parse to what they say.
    #[test]
    fn valid_lines_parse_to_their_command((line, command) in valid_line()) {
        prop_assume!(line.len() <= MAX_LINE);
        prop_assert_eq!(parse(&line), Ok(command.clone()));
        check_accepted(&line, &command);
    }

    /// Valid commands mutated: no panic; anything accepted is consistent.
    #[test]
    fn mutated_lines_parse_or_are_refused_in_one_line(line in mutated_line()) {
        check_line(&line);
    }
}

// ---------------------------------------------------------------------------------
// Through `serve_connection`.

/// A dial that records every command and answers with lines that need escaping.
#[derive(Default)]
struct Recorder {
    calls: Mutex<Vec<Command>>,
}

impl Recorder {
    fn calls(&self) -> Vec<Command> {
        self.calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl Dial for Recorder {
    fn execute(&self, command: &Command) -> Result<Vec<String>, String> {
        self.calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(command.clone());
        Ok(vec![
            format!("did {command}"),
            "ok".into(),
            "error: not the end".into(),
            "two\r\nlines".into(),
            String::new(),
        ])
    }
}

/// What the recorder's answer to `command` is on the wire.
fn recorder_answer(command: &Command) -> String {
    format!("did {command}\n ok\n error: not the end\ntwo  lines\n\nok\n")
}

/// What the server answers to one line (bytes without its `\n`), and the command the
/// dial is called with, if any.
fn expected(line: &[u8]) -> (String, Option<Command>) {
    if line.len() > MAX_LINE {
        return (
            format!("error: {}\n", ParseError::TooLong(line.len())),
            None,
        );
    }
    let text = match std::str::from_utf8(line) {
        Ok(text) => text,
        Err(e) => {
            return (
                format!("error: {}\n", ParseError::NotUtf8(e.valid_up_to())),
                None,
            );
        }
    };
    match parse(text) {
        Ok(command) => (recorder_answer(&command), Some(command)),
        Err(e) => (format!("error: {e}\n"), None),
    }
}

/// A stream over bytes in memory: reads `input`, collects what is written.
struct Memory {
    input: Cursor<Vec<u8>>,
    output: Vec<u8>,
}

impl Read for Memory {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.input.read(buf)
    }
}

impl Write for Memory {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.output.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Serves `input` on an in-memory stream: the output and the dial's calls.
fn serve_memory(input: Vec<u8>) -> (Vec<u8>, Vec<Command>) {
    let dial = Recorder::default();
    let mut stream = Memory {
        input: Cursor::new(input),
        output: Vec::new(),
    };
    let ended = serve_connection(&mut stream, UID, UID, &dial).expect("in memory");
    assert_eq!(ended, Ended::Closed);
    (stream.output, dial.calls())
}

/// `lines` as one stream: each ended by `\n`, the last perhaps not (when it is not
/// empty: an empty last line without `\n` is no line).
fn stream_of(lines: &[Vec<u8>], last_unterminated: bool) -> Vec<u8> {
    let mut input = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        input.extend_from_slice(line);
        let last = i + 1 == lines.len();
        if !(last && last_unterminated && !line.is_empty()) {
            input.push(b'\n');
        }
    }
    input
}

/// The final lines of answers in `output`: `ok` or starting with `error: `.
fn count_answers(output: &[u8]) -> usize {
    String::from_utf8_lossy(output)
        .split_terminator('\n')
        .filter(|l| *l == "ok" || l.starts_with("error: "))
        .count()
}

/// A line for the server: valid, mutated or arbitrary, without `\n`.
fn one_line() -> BoxedStrategy<String> {
    prop_oneof![
        valid_line().prop_map(|(line, _)| line),
        mutated_line(),
        arbitrary_line(),
    ]
    .prop_map(|line| line.replace('\n', "\u{b}"))
    .boxed()
}

/// A line of random bytes: not UTF-8, `\r` anywhere, over MAX_LINE; or a valid or
/// mutated command, perhaps with bytes spliced in.
fn byte_line() -> BoxedStrategy<Vec<u8>> {
    let byte = prop_oneof![any::<u8>(), Just(b'\r'), Just(0xff), Just(0xc3)];
    prop_oneof![
        prop::collection::vec(byte.clone(), 0..40),
        (
            valid_line(),
            prop::collection::vec((any::<Index>(), byte), 0..3)
        )
            .prop_map(|((line, _), splices)| {
                let mut bytes = line.into_bytes();
                for (at, b) in splices {
                    bytes.insert(at.index(bytes.len() + 1), b);
                }
                bytes
            }),
        valid_line().prop_map(|(line, _)| line.into_bytes()),
        mutated_line().prop_map(String::into_bytes),
        ((MAX_LINE - 2)..(MAX_LINE * 3), any::<u8>()).prop_map(|(n, b)| {
            let mut bytes = b"revert A::".to_vec();
            bytes.resize(n, b);
            bytes
        }),
    ]
    .prop_map(|mut bytes| {
        for b in &mut bytes {
            if *b == b'\n' {
                *b = b'\r';
            }
        }
        bytes
    })
    .boxed()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// One line: a line that does not parse gets one `error: ` line and no call; one
    /// that parses gets one call, the dial's lines and `ok`.
    #[test]
    fn one_line_gets_the_answer_parse_predicts(line in one_line(), terminated in any::<bool>()) {
        let mut input = line.clone().into_bytes();
        if terminated || line.is_empty() {
            input.push(b'\n');
        }
        let (output, calls) = serve_memory(input);
        let output = String::from_utf8(output).expect("answers are UTF-8");
        match parse(&line) {
            Err(e) => {
                prop_assert!(calls.is_empty(), "{:?}", calls);
                prop_assert!(output.starts_with("error: "), "{:?}", output);
                prop_assert_eq!(output.matches('\n').count(), 1);
                prop_assert!(output.ends_with('\n'));
                prop_assert_eq!(output, format!("error: {e}\n"));
            }
            Ok(command) => {
                prop_assert_eq!(calls.as_slice(), std::slice::from_ref(&command));
                prop_assert!(output.ends_with("\nok\n"), "{:?}", output);
                prop_assert_eq!(output, recorder_answer(&command));
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Many lines of random bytes as one stream: one answer per line, each the one
    /// predicted, the dial called for exactly the lines that parse, in order.
    #[test]
    fn a_stream_of_random_bytes_gets_one_answer_per_line(
        lines in prop::collection::vec(byte_line(), 0..24),
        last_unterminated in any::<bool>(),
    ) {
        let (output, calls) = serve_memory(stream_of(&lines, last_unterminated));
        prop_assert_eq!(count_answers(&output), lines.len());
        let mut want = String::new();
        let mut want_calls = Vec::new();
        for line in &lines {
            let (answer, call) = expected(line);
            want.push_str(&answer);
            want_calls.extend(call);
        }
        prop_assert_eq!(String::from_utf8(output).expect("answers are UTF-8"), want);
        prop_assert_eq!(calls, want_calls);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// The same on a real socket pair, the connection served on a thread of its own
    /// and the client writing all its lines, then reading every answer.
    #[test]
    fn a_socket_pair_gets_one_answer_per_line(
        lines in prop::collection::vec(
            prop_oneof![one_line().prop_map(String::into_bytes), byte_line()],
            1..12,
        ),
        last_unterminated in any::<bool>(),
    ) {
        let (client, server) = UnixStream::pair().expect("socket pair");
        let dial = Arc::new(Recorder::default());
        let serving = {
            let dial = dial.clone();
            thread::spawn(move || serve_connection(&server, UID, UID, &*dial))
        };
        let input = stream_of(&lines, last_unterminated);
        let writer = {
            let client = client.try_clone().expect("clone");
            thread::spawn(move || {
                (&client).write_all(&input)?;
                client.shutdown(std::net::Shutdown::Write)
            })
        };
        let mut output = Vec::new();
        BufReader::new(&client).read_to_end(&mut output).expect("read the answers");
        writer.join().expect("writer").expect("write the lines");
        let ended = serving.join().expect("server thread");
        prop_assert_eq!(ended.expect("served"), Ended::Closed);
        prop_assert_eq!(count_answers(&output), lines.len());
        let mut want = String::new();
        let mut want_calls = Vec::new();
        for line in &lines {
            let (answer, call) = expected(line);
            want.push_str(&answer);
            want_calls.extend(call);
        }
        prop_assert_eq!(String::from_utf8(output).expect("answers are UTF-8"), want);
        prop_assert_eq!(dial.calls(), want_calls);
    }
}

/// The answers on a socket pair come one by one: each line is answered (and flushed)
/// before the next is read.
#[test]
fn each_answer_is_flushed_before_the_next_line() {
    let (client, server) = UnixStream::pair().expect("socket pair");
    let dial = Arc::new(Recorder::default());
    let serving = {
        let dial = dial.clone();
        thread::spawn(move || serve_connection(&server, UID, UID, &*dial))
    };
    let mut reader = BufReader::new(&client);
    for (line, want) in [
        ("state", recorder_answer(&Command::State)),
        ("bogus", format!("error: {}\n", parse("bogus").unwrap_err())),
        ("help\r", recorder_answer(&Command::Help)),
    ] {
        (&client).write_all(format!("{line}\n").as_bytes()).unwrap();
        let mut answer = String::new();
        while !answer.ends_with("\nok\n") && !answer.starts_with("error: ") {
            let mut next = String::new();
            assert_ne!(reader.read_line(&mut next).unwrap(), 0, "{answer:?}");
            answer.push_str(&next);
        }
        assert_eq!(answer, want);
    }
    client.shutdown(std::net::Shutdown::Write).unwrap();
    assert_eq!(serving.join().unwrap().unwrap(), Ended::Closed);
    assert_eq!(dial.calls(), [Command::State, Command::Help]);
}

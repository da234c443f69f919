//! The dial's grammar: one line, one [`Command`] ([`parse`]), and its description
//! ([`help_lines`]). Pure: no I/O.

use crate::clr::runtime::{CodegenFlags, CodegenFlagsError};
use crate::selector::{Selector, SelectorError};

use super::command::Command;

/// The longest line the dial reads: 4,096 bytes, without the `\n` that ends it (a
/// `\r` before it counts).
pub const MAX_LINE: usize = 4096;

/// The commands, for error messages.
const COMMANDS: &str = "instrument, revert, original, flags, add, remove, state, help";

const INSTRUMENT: &str = "instrument SELECTOR METHOD [KEY=VALUE ...]";
const REVERT: &str = "revert SELECTOR";
const ORIGINAL: &str = "original SELECTOR";
const FLAGS: &str = "flags SELECTOR FLAGS";
const ADD: &str = "add SELECTOR LIBRARY PRIORITY [KEY=VALUE ...]";
const REMOVE: &str = "remove METHOD";
const STATE: &str = "state";
const DETACH: &str = "detach";
const HELP: &str = "help";

/// Why a line is not a command. Its [`Display`](core::fmt::Display) is one line (the
/// words it quotes are escaped) saying what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParseError {
    /// No word (nothing, or only spaces and tabs).
    #[error("empty line (commands: {COMMANDS})")]
    Empty,
    /// More than [`MAX_LINE`] bytes.
    #[error("line of {0} bytes; at most {MAX_LINE} are read")]
    TooLong(usize),
    /// Bytes that are not UTF-8 (found by the server, which reads bytes): the offset of
    /// the first invalid byte.
    #[error("line is not UTF-8 (invalid byte at offset {0})")]
    NotUtf8(usize),
    /// A control or whitespace character other than the separators (space and tab) and
    /// a final `\r`.
    #[error(
        "character {ch:?} at byte {at}: words are separated by spaces or tabs and hold no other whitespace or control character"
    )]
    BadCharacter {
        /// The character.
        ch: char,
        /// Its byte offset in the line.
        at: usize,
    },
    /// A first word that is not a command.
    #[error("unknown command {0:?} (commands: {COMMANDS})")]
    UnknownCommand(String),
    /// A command without a word it needs.
    #[error("`{command}` needs {what} (usage: {usage})")]
    Missing {
        /// The command.
        command: &'static str,
        /// What is missing.
        what: &'static str,
        /// The command's usage.
        usage: &'static str,
    },
    /// A command with more words than it takes.
    #[error("`{command}` takes no more words, got {extra:?} (usage: {usage})")]
    ExtraWords {
        /// The command.
        command: &'static str,
        /// The first word too many.
        extra: String,
        /// The command's usage.
        usage: &'static str,
    },
    /// A selector that does not read as one
    /// ([`Selector::parse`]'s error: what is wrong, at which character of the selector).
    #[error("{0}")]
    BadSelector(SelectorError),
    /// An instrumentation method's name with characters other than ASCII letters,
    /// digits, `_` and `-`.
    #[error(
        "instrumentation method name {0:?}: only ASCII letters, digits, `_` and `-` (a KEY=VALUE option comes after the name)"
    )]
    BadMethodName(String),
    /// An option word that is not `KEY=VALUE` with a valid key and a non-empty value.
    #[error("option {word:?}: {why}")]
    BadOption {
        /// The word.
        word: String,
        /// Why.
        why: &'static str,
    },
    /// A key given twice (`flags` included).
    #[error("option key {0:?} given twice")]
    DuplicateKey(String),
    /// A priority that is not a 32-bit integer.
    #[error("priority {0:?}: a 32-bit integer")]
    BadPriority(String),
    /// Code-generation flags that do not parse.
    #[error("flags {value:?}: {source}")]
    BadFlags {
        /// The word.
        value: String,
        /// Why.
        source: CodegenFlagsError,
    },
}

/// Parses one line (without its `\n`; a final `\r` is ignored) into a [`Command`].
///
/// The grammar: words separated by ASCII spaces and tabs (leading, trailing and
/// repeated separators are ignored), the first one the command, lowercase:
///
/// * `instrument SELECTOR METHOD [KEY=VALUE ...]`: METHOD is ASCII letters, digits,
///   `_` and `-`; a KEY is a letter or `_` followed by letters, digits or `_`, given at
///   most once; a VALUE is non-empty (it may hold `=`). The key `flags` is not an
///   option: its value is the code-generation flags, as in `flags`.
/// * `revert SELECTOR`, `original SELECTOR`.
/// * `flags SELECTOR FLAGS`: FLAGS is `none`, or `no-inlining`, `no-optimizations`
///   joined by commas.
/// * `add SELECTOR LIBRARY PRIORITY [KEY=VALUE ...]`: LIBRARY a path (one word),
///   PRIORITY a 32-bit integer, the options as for `instrument` (no `flags`).
/// * `remove METHOD`: METHOD as for `instrument`.
/// * `state`, `help`.
///
/// A SELECTOR is read by [`Selector::parse`]: `TYPE::METHOD`, `TYPE::*` (every method)
/// or `TYPE::METHOD(P1,P2)` (one overload, its parameter types as listings write them),
/// split at the last `::` before the parameter list. TYPE is the full name,
/// `Namespace.Type`, nested types `Namespace.Outer/Inner` (generic arity as in metadata:
/// ``List`1``); no `:`, `+`, `*`, `(` or `)`, no empty part between `.` and `/`, and it
/// neither starts nor ends with one. METHOD is any non-empty name without `:`, `*`, `(`
/// or `)` (`.ctor`, `<Main>$` are fine). The selector is one word, except that a
/// parameter list may hold spaces and tabs (`Concat(string, string)`,
/// `M(native int)`): from its `(` to the matching `)` separators do not end the word (a
/// list that is not closed takes the rest of the line, and the selector is refused).
///
/// # Errors
/// [`ParseError`] for a line longer than [`MAX_LINE`] bytes, a control or whitespace
/// character inside the line, no word, an unknown command, a missing or extra word, or
/// a word that does not read as the command says.
pub fn parse(line: &str) -> Result<Command, ParseError> {
    if line.len() > MAX_LINE {
        return Err(ParseError::TooLong(line.len()));
    }
    let line = line.strip_suffix('\r').unwrap_or(line);
    if let Some((at, ch)) = line
        .char_indices()
        .find(|&(_, c)| !is_separator(c) && (c.is_control() || c.is_whitespace()))
    {
        return Err(ParseError::BadCharacter { ch, at });
    }
    let mut words = Words { rest: line };
    let Some(verb) = words.next() else {
        return Err(ParseError::Empty);
    };
    let command = match verb {
        "instrument" => {
            let selector = selector(&mut words, "instrument", INSTRUMENT)?;
            let method = next(
                &mut words,
                "instrument",
                "an instrumentation method",
                INSTRUMENT,
            )?;
            if !method
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
            {
                return Err(ParseError::BadMethodName(method.to_string()));
            }
            let (options, flags) = options(words)?;
            return Ok(Command::Instrument {
                selector,
                method: method.to_string(),
                options,
                flags,
            });
        }
        "revert" => Command::Revert {
            selector: selector(&mut words, "revert", REVERT)?,
        },
        "original" => Command::Original {
            selector: selector(&mut words, "original", ORIGINAL)?,
        },
        "flags" => {
            let selector = selector(&mut words, "flags", FLAGS)?;
            let value = next(&mut words, "flags", "the flags", FLAGS)?;
            Command::Flags {
                selector,
                flags: flags(value)?,
            }
        }
        "add" => {
            let selector = selector(&mut words, "add", ADD)?;
            let library = next(&mut words, "add", "a library's path", ADD)?;
            let priority = next(&mut words, "add", "a priority", ADD)?;
            let priority = priority
                .parse::<i32>()
                .map_err(|_| ParseError::BadPriority(priority.to_string()))?;
            let (options, flags) = options(words)?;
            if flags != CodegenFlags::NONE {
                return Err(ParseError::BadOption {
                    word: format!("flags={flags}"),
                    why: "`add` takes no code-generation flags",
                });
            }
            return Ok(Command::Add {
                selector,
                library: library.to_string(),
                priority,
                options,
            });
        }
        "remove" => {
            let method = next(&mut words, "remove", "an instrumentation method", REMOVE)?;
            if !method
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
            {
                return Err(ParseError::BadMethodName(method.to_string()));
            }
            Command::Remove {
                method: method.to_string(),
            }
        }
        "state" => Command::State,
        "detach" => Command::Detach,
        "help" => Command::Help,
        other => return Err(ParseError::UnknownCommand(other.to_string())),
    };
    match words.next() {
        None => Ok(command),
        Some(extra) => Err(ParseError::ExtraWords {
            command: command.verb(),
            extra: extra.to_string(),
            usage: usage(&command),
        }),
    }
}

/// One line per command, then how a selector is written: the answer to `help`. No
/// line is `ok` or starts with `error:`.
pub fn help_lines() -> Vec<String> {
    [
        "instrument SELECTOR METHOD [KEY=VALUE ...]  run the configured instrumentation plus instrumentation method METHOD with these options; the key flags=FLAGS sets the code-generation flags",
        "revert SELECTOR  back to what the first JIT gives (the configured instrumentation, no flags)",
        "original SELECTOR  the file's own IL, without any instrumentation",
        "flags SELECTOR FLAGS  what runs now, compiled with FLAGS: none, or no-inlining and no-optimizations joined by a comma",
        "add SELECTOR LIBRARY PRIORITY [KEY=VALUE ...]  load the instrumentation method of the library at LIBRARY, start it with these options and let it edit, at PRIORITY, every method it wants; SELECTOR's methods are compiled again now",
        "remove METHOD  an instrumentation method added with add edits nothing from now on; the methods it changed are compiled again",
        "state  one line per method the dial or the runtime has a record of",
        "detach  every method changed back to its own IL and nothing more rewritten, then the runtime is asked to detach the profiler; it refuses once ReJIT was enabled (CORPROF_E_IRREVERSIBLE_INSTRUMENTATION_PRESENT, 0x80131370), and the profiler stays loaded and inert",
        "help  this text",
        "SELECTOR is Namespace.Type::Method (every overload), Namespace.Type::Method(P1,P2) (the overload with exactly these parameter types, as listings write them: string, int32&, !0, System.Collections.Generic.List`1<string>; spaces after commas are fine) or Namespace.Type::* (every method); nested types are Namespace.Outer/Inner",
        "changes take effect at each method's next call; each line is answered by its lines, then ok or error: WHY",
    ]
    .into_iter()
    .map(str::to_string)
    .collect()
}

fn is_separator(c: char) -> bool {
    c == ' ' || c == '\t'
}

/// The words of a line: runs of characters between separators, or for a selector
/// ([`Words::selector`]) up to the first separator outside its parameter list.
struct Words<'a> {
    rest: &'a str,
}

impl<'a> Iterator for Words<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        self.word_until(is_separator)
    }
}

impl<'a> Words<'a> {
    /// The next word, which ends before the first character for which `ends` (told
    /// each character of the word in turn) says so; `None` at the end of the line.
    fn word_until(&mut self, mut ends: impl FnMut(char) -> bool) -> Option<&'a str> {
        let rest = self.rest.trim_start_matches(is_separator);
        if rest.is_empty() {
            self.rest = rest;
            return None;
        }
        let end = rest
            .char_indices()
            .find(|&(_, c)| ends(c))
            .map_or(rest.len(), |(at, _)| at);
        self.rest = &rest[end..];
        Some(&rest[..end])
    }

    /// The next word as a selector: a separator inside a parameter list (between a
    /// `(` and its `)`, quoted names in the list skipped) does not end it. A list that
    /// is not closed takes the rest of the line (without trailing separators).
    fn selector(&mut self) -> Option<&'a str> {
        let (mut depth, mut quoted, mut escaped) = (0usize, false, false);
        self.word_until(|c| {
            if quoted {
                match (escaped, c) {
                    (true, _) => escaped = false,
                    (false, '\\') => escaped = true,
                    (false, '\'') => quoted = false,
                    _ => {}
                }
                return false;
            }
            match c {
                '\'' if depth > 0 => quoted = true,
                '(' => depth += 1,
                ')' => depth = depth.saturating_sub(1),
                c => return is_separator(c) && depth == 0,
            }
            false
        })
        .map(|w| w.trim_end_matches(is_separator))
    }
}

fn usage(command: &Command) -> &'static str {
    match command {
        Command::Instrument { .. } => INSTRUMENT,
        Command::Revert { .. } => REVERT,
        Command::Original { .. } => ORIGINAL,
        Command::Flags { .. } => FLAGS,
        Command::Add { .. } => ADD,
        Command::Remove { .. } => REMOVE,
        Command::State => STATE,
        Command::Detach => DETACH,
        Command::Help => HELP,
    }
}

fn next<'a>(
    words: &mut impl Iterator<Item = &'a str>,
    command: &'static str,
    what: &'static str,
    usage: &'static str,
) -> Result<&'a str, ParseError> {
    words.next().ok_or(ParseError::Missing {
        command,
        what,
        usage,
    })
}

fn selector(
    words: &mut Words<'_>,
    command: &'static str,
    usage: &'static str,
) -> Result<Selector, ParseError> {
    let word = words.selector().ok_or(ParseError::Missing {
        command,
        what: "a selector",
        usage,
    })?;
    Selector::parse(word).map_err(ParseError::BadSelector)
}

/// The `KEY=VALUE` words of `instrument`: the options in order, and the flags.
fn options<'a>(
    words: impl Iterator<Item = &'a str>,
) -> Result<(Vec<(String, String)>, CodegenFlags), ParseError> {
    let mut options: Vec<(String, String)> = Vec::new();
    let mut flags_given = None;
    for word in words {
        let bad = |why| {
            Err(ParseError::BadOption {
                word: word.to_string(),
                why,
            })
        };
        let Some((key, value)) = word.split_once('=') else {
            return bad("not KEY=VALUE");
        };
        if key.is_empty() {
            return bad("no key before `=`");
        }
        let mut bytes = key.bytes();
        let first_ok = bytes
            .next()
            .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_');
        if !first_ok || !bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return bad("a key is a letter or `_`, then letters, digits or `_`");
        }
        if value.is_empty() {
            return bad("no value after `=`");
        }
        let seen = match key {
            "flags" => flags_given.is_some(),
            _ => options.iter().any(|(k, _)| k == key),
        };
        if seen {
            return Err(ParseError::DuplicateKey(key.to_string()));
        }
        match key {
            "flags" => flags_given = Some(flags(value)?),
            _ => options.push((key.to_string(), value.to_string())),
        }
    }
    Ok((options, flags_given.unwrap_or(CodegenFlags::NONE)))
}

fn flags(value: &str) -> Result<CodegenFlags, ParseError> {
    value.parse().map_err(|source| ParseError::BadFlags {
        value: value.to_string(),
        source,
    })
}

//! [`Selector`]: a method named by its type, its name and, optionally, its parameter
//! types, as text (`App.Orders::Place`, `App.Orders::*`,
//! `System.String::Concat(string,string)`), and the test whether a MethodDef is one it
//! names ([`Selector::matches`], through any [`MetadataSource`]). Pure: no I/O.
//!
//! The grammar ([`Selector::parse`]):
//!
//! * `TYPE::METHOD`: every overload of method METHOD of type TYPE;
//! * `TYPE::METHOD(P1,P2)`, `TYPE::METHOD()`: the overload whose parameter types are
//!   exactly P1, P2 (none);
//! * `TYPE::*`: every method of TYPE (no parameter list).
//!
//! TYPE is the type's full name as metadata gives it, `Namespace.Type`, nested types
//! `Namespace.Outer/Inner`, generic arity as in metadata (``Dictionary`2``), names as
//! they are (`App.Outer/<>c`, not quoted). METHOD is the method's metadata name
//! (`.ctor`, `<Main>$`). A generic method's arity is not part of the grammar: a
//! selector names the generic and the non-generic methods of that name alike (told
//! apart only by their parameter types, if at all). Nor is the return type: overloads
//! that differ in it alone (conversion operators, `op_Explicit`) are selected together.
//!
//! The parameter types are written as the disassembler writes them in
//! [`MethodName::params`] (ilasm syntax: `string`, `int32`, `int32&`, `string[]`,
//! `!0`, `!!0`, ``class System.Collections.Generic.List`1<string>``, names ilasm cannot
//! read unquoted in single quotes). Where ilasm is verbose the comparison is lenient:
//! the keywords `class` and `valuetype` and resolution scopes (`[System.Runtime]`) are
//! ignored on both sides, and so is whitespace after commas, around brackets and
//! around the list.

use core::fmt;
use std::borrow::Cow;
use std::str::FromStr;

use crate::disasm::MethodName;
use crate::metadata::MetadataSource;
use crate::sig::MethodSig;

/// Nested types deeper than this are taken for a cycle in the metadata.
const MAX_ENCLOSING: usize = 64;

/// Which methods a selector names: every method called [`method_name`] (every
/// overload, or the one whose parameter types are [`params`]) of the type whose full
/// name is [`type_name`]; or every method of the type.
///
/// [`Selector::parse`] gives only selectors whose type name is non-empty, holds no
/// whitespace, control character, `:`, `+`, `*`, `(` or `)`, and has no empty part
/// between its `.` and `/` separators; whose method name is non-empty and holds no
/// whitespace, control character, `:`, `*`, `(` or `)`; and whose parameter types are
/// non-empty, balanced (`<>`, `()`, `[]`, quotes) and in their canonical form (see
/// [`Selector::params`]). For those, [`Display`](fmt::Display) writes the text that
/// `parse` reads back as the same selector. Two selectors are equal when their type
/// names, method names and canonical parameter types are.
///
/// [`method_name`]: Selector::method_name
/// [`params`]: Selector::params
/// [`type_name`]: Selector::type_name
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Selector {
    type_name: String,
    method: Option<String>,
    params: Option<Vec<String>>,
}

/// Why a text is not a selector: the text, the character where the problem is (from
/// 1; one past the last for something missing at the end) and what is wrong. Its
/// [`Display`](fmt::Display) is one line: `selector "TEXT": WHY (at character N)`,
/// with the text escaped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("selector {text:?}: {why} (at character {character})")]
pub struct SelectorError {
    text: String,
    character: usize,
    why: &'static str,
}

impl SelectorError {
    fn new(text: &str, byte: usize, why: &'static str) -> SelectorError {
        let byte = byte.min(text.len());
        let character = text.get(..byte).map_or(byte, |s| s.chars().count()) + 1;
        SelectorError {
            text: text.to_owned(),
            character,
            why,
        }
    }

    /// The text that is not a selector.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Where in it the problem is: a character index from 1 (one past the last
    /// character when something is missing at the end).
    pub fn character(&self) -> usize {
        self.character
    }

    /// What is wrong, without the text and the position.
    pub fn why(&self) -> &'static str {
        self.why
    }
}

impl Selector {
    /// Reads a selector: `TYPE::METHOD`, `TYPE::METHOD(P1,P2)`, `TYPE::METHOD()` or
    /// `TYPE::*` (see the [module](self) for what each part is). The type and method
    /// are split at the last `::` before the parameter list. Whitespace (spaces and
    /// tabs) is allowed only inside the parameter list, where it is not significant
    /// but between two words of a type (`native int`).
    ///
    /// # Errors
    /// [`SelectorError`], never a panic, for any text that is not so: no `::`, an empty,
    /// ill-formed or ill-charactered type or method name (rules on [`Selector`]), a `*`
    /// with a parameter list, a list that is not closed, closed twice or followed by
    /// more text, unbalanced brackets or quotes in it, an empty parameter type.
    pub fn parse(text: &str) -> Result<Selector, SelectorError> {
        let bad = |byte: usize, why| Err(SelectorError::new(text, byte, why));
        let open = text.find('(');
        let head = &text[..open.unwrap_or(text.len())];
        let Some((type_name, method)) = head.rsplit_once("::") else {
            if let Some(open) = open
                && text[open..].contains("::")
            {
                return bad(
                    open,
                    "`(` in the type name (a parameter list follows the method name)",
                );
            }
            if let Some(at) = head.find(':') {
                return bad(
                    at,
                    "not TYPE::METHOD or TYPE::* (for example App.Orders::Place)",
                );
            }
            return bad(
                head.len(),
                "not TYPE::METHOD or TYPE::* (for example App.Orders::Place)",
            );
        };
        let method_at = type_name.len() + 2;
        if let Some(at) = type_name.find(|c: char| c.is_whitespace() || c.is_control()) {
            return bad(at, "whitespace or a control character in the type name");
        }
        if type_name.is_empty() {
            return bad(0, "no type name before `::`");
        }
        if let Some(at) = type_name.find(':') {
            return bad(at, "`:` in the type name");
        }
        if let Some(at) = type_name.find('+') {
            return bad(at, "nested types are written Outer/Inner, not with `+`");
        }
        if let Some(at) = type_name.find('*') {
            return bad(
                at,
                "`*` in the type name (it stands only for a whole method name)",
            );
        }
        if let Some(at) = type_name.find(')') {
            return bad(at, "`)` in the type name");
        }
        if type_name.starts_with(['.', '/']) {
            return bad(0, "the type name starts or ends with `.` or `/`");
        }
        if type_name.ends_with(['.', '/']) {
            return bad(
                type_name.len() - 1,
                "the type name starts or ends with `.` or `/`",
            );
        }
        if let Some(at) = empty_part(type_name) {
            return bad(
                at,
                "an empty part in the type name (`..`, `./`, `/.` or `//`)",
            );
        }
        if let Some(at) = method.find(|c: char| c.is_whitespace() || c.is_control()) {
            return bad(
                method_at + at,
                "whitespace or a control character in the method name",
            );
        }
        if method.is_empty() {
            return bad(
                method_at,
                "no method name after `::` (TYPE::* names every method)",
            );
        }
        if let Some(at) = method.find(':') {
            return bad(method_at + at, "`:` in the method name");
        }
        if let Some(at) = method.find(')') {
            return bad(method_at + at, "`)` in the method name without `(`");
        }
        if method == "*" {
            if let Some(open) = open {
                return bad(
                    open,
                    "`*` takes no parameter list (it names every method, every overload)",
                );
            }
            return Ok(Selector::every_method(type_name));
        }
        if let Some(at) = method.find('*') {
            return bad(
                method_at + at,
                "`*` in the method name (only `*` alone, for every method)",
            );
        }
        let selector = Selector::method(type_name, method);
        match open {
            None => Ok(selector),
            Some(open) => Ok(Selector {
                params: Some(param_list(text, open)?),
                ..selector
            }),
        }
    }

    /// Every method called `method` (every overload) of the type whose full name is
    /// `type_name`. The names are taken as they are, unchecked.
    pub fn method(type_name: impl Into<String>, method: impl Into<String>) -> Selector {
        Selector {
            type_name: type_name.into(),
            method: Some(method.into()),
            params: None,
        }
    }

    /// Every method of the type whose full name is `type_name` (written `TYPE::*`),
    /// unchecked.
    pub fn every_method(type_name: impl Into<String>) -> Selector {
        Selector {
            type_name: type_name.into(),
            method: None,
            params: None,
        }
    }

    /// The same method, but only the overload whose parameter types are exactly
    /// `params` (none for an empty list), each written as the disassembler writes it
    /// and kept in canonical form (see [`Selector::params`]). A selector of every
    /// method takes no list: it is returned unchanged.
    pub fn with_params(self, params: Vec<String>) -> Selector {
        if self.method.is_none() {
            return self;
        }
        Selector {
            params: Some(params.iter().map(|p| canonical(p)).collect()),
            ..self
        }
    }

    /// The type's full name: `Namespace.Type`, nested types `Namespace.Outer/Inner`.
    pub fn type_name(&self) -> &str {
        &self.type_name
    }

    /// The method's name; `None` when the selector names every method of the type.
    pub fn method_name(&self) -> Option<&str> {
        self.method.as_deref()
    }

    /// The parameter types the selected overload has; `None` for every overload (and
    /// for every method). Each in canonical form: without the keywords `class` and
    /// `valuetype` and without resolution scopes (`[System.Runtime]`) where a type
    /// starts, whitespace runs as one space and none next to brackets, commas, `&` or
    /// `*`, the rest (quoted names too) as written.
    pub fn params(&self) -> Option<&[String]> {
        self.params.as_deref()
    }

    /// Whether MethodDef `method` of `metadata` is selected: its declaring type's full
    /// name (as [`method_name`](crate::disasm::method_name) writes the owner, nested
    /// types `Outer/Inner`, but names unquoted) is exactly [`Selector::type_name`], its
    /// name is [`Selector::method_name`] (any, for every method) and, when the selector
    /// has a parameter list, its parameter types are those, compared in canonical form,
    /// a generic parameter matching by its number (`!0`, `!!0`) or by its name (`!T`).
    /// False for a token the source cannot name or whose signature does not parse
    /// (when parameters are compared). Only the parameter types are written as text,
    /// and only when the names match and the counts agree.
    pub fn matches<M: MetadataSource + ?Sized>(&self, metadata: &M, method: u32) -> bool {
        let Ok(member) = metadata.member_name(method) else {
            return false;
        };
        if self.method.as_ref().is_some_and(|m| *m != member.name) {
            return false;
        }
        let Some(owner) = member.owner else {
            return false;
        };
        if !owner_is(metadata, owner, &self.type_name) {
            return false;
        }
        let Some(params) = &self.params else {
            return true;
        };
        let Ok(sig) = metadata.signature(method).and_then(MethodSig::parse) else {
            return false;
        };
        if sig.params.len() != params.len() {
            return false;
        }
        let numbered = crate::disasm::param_texts(metadata, method, &sig, false);
        let same = |have: &[String]| -> Vec<bool> {
            have.iter()
                .zip(params)
                .map(|(have, want)| canonical(have) == *want)
                .collect()
        };
        let by_number = same(&numbered);
        if by_number.iter().all(|&b| b) {
            return true;
        }
        let named = crate::disasm::param_texts(metadata, method, &sig, true);
        same(&named)
            .iter()
            .zip(&by_number)
            .all(|(&by_name, &by_number)| by_name || by_number)
    }

    /// The same test on a name the disassembler gave: its owner and name, unquoted,
    /// are the type and method names, and (when the selector has a list) its
    /// parameter types are those in canonical form. Generic parameters are compared as
    /// the name writes them (by name when the source knew it: `!T`), so a selector
    /// writing `!0` matches only a name that does too.
    pub fn matches_name(&self, name: &MethodName) -> bool {
        if self
            .method
            .as_ref()
            .is_some_and(|m| *m != *unquote(&name.name))
        {
            return false;
        }
        if *unquote(&name.owner) != *self.type_name {
            return false;
        }
        self.params.as_ref().is_none_or(|params| {
            name.params.len() == params.len()
                && name
                    .params
                    .iter()
                    .zip(params)
                    .all(|(have, want)| canonical(have) == *want)
        })
    }
}

impl FromStr for Selector {
    type Err = SelectorError;

    /// [`Selector::parse`].
    fn from_str(text: &str) -> Result<Selector, SelectorError> {
        Selector::parse(text)
    }
}

/// `TYPE::METHOD`, `TYPE::METHOD(P1,P2)` (the canonical parameter types joined by
/// commas, no space) or `TYPE::*`.
impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let method = self.method.as_deref().unwrap_or("*");
        write!(f, "{}::{method}", self.type_name)?;
        if let Some(params) = &self.params {
            write!(f, "({})", params.join(","))?;
        }
        Ok(())
    }
}

/// The byte offset of the first empty part between `.` and `/` separators (of a name
/// that neither starts nor ends with one).
fn empty_part(type_name: &str) -> Option<usize> {
    let bytes = type_name.as_bytes();
    bytes
        .windows(2)
        .position(|w| matches!(w[0], b'.' | b'/') && matches!(w[1], b'.' | b'/'))
        .map(|at| at + 1)
}

/// Whether the TypeDef `type_def`'s full name, nested types joined by `/`, is `want`:
/// compared from the innermost type outwards, without writing the name.
fn owner_is<M: MetadataSource + ?Sized>(metadata: &M, type_def: u32, want: &str) -> bool {
    let mut rest = want;
    let mut token = type_def;
    for _ in 0..MAX_ENCLOSING {
        let Ok(name) = metadata.type_name(token) else {
            return false;
        };
        let Some(before) = rest.strip_suffix(name.name.as_str()) else {
            return false;
        };
        let before = match name.namespace.is_empty() {
            true => Some(before),
            false => before
                .strip_suffix('.')
                .and_then(|b| b.strip_suffix(name.namespace.as_str())),
        };
        let Some(before) = before else {
            return false;
        };
        match name.enclosing {
            None => return before.is_empty(),
            Some(enclosing) => {
                let Some(before) = before.strip_suffix('/') else {
                    return false;
                };
                rest = before;
                token = enclosing;
            }
        }
    }
    false
}

/// `s` without the disassembler's quotes: each `'...'` replaced by what it holds, `\\`
/// and `\'` inside unescaped.
fn unquote(s: &str) -> Cow<'_, str> {
    if !s.contains('\'') {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut quoted = false;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (false, '\'') => quoted = true,
            (true, '\'') => quoted = false,
            (true, '\\') => out.extend(chars.next()),
            (_, c) => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// The parameter list of `text`, whose `(` is at byte `open`: its types in canonical
/// form.
fn param_list(text: &str, open: usize) -> Result<Vec<String>, SelectorError> {
    let bad = |byte: usize, why| Err(SelectorError::new(text, byte, why));
    let mut closers: Vec<char> = Vec::new();
    let mut quote: Option<usize> = None;
    let mut escaped = false;
    let mut pieces: Vec<(usize, usize)> = Vec::new();
    let mut start = open + 1;
    let mut close = None;
    for (at, c) in text[open + 1..].char_indices() {
        let at = open + 1 + at;
        if (c.is_control() || c.is_whitespace()) && c != ' ' && c != '\t' {
            return bad(
                at,
                "a control character or whitespace other than space and tab in the parameter list",
            );
        }
        if quote.is_some() {
            if c == '\t' {
                // Tabs separate, like spaces; inside a quoted name one would stay in
                // the canonical form, which holds none.
                return bad(at, "a tab inside a quoted name in the parameter list");
            }
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '\'') => quote = None,
                _ => {}
            }
            continue;
        }
        match c {
            '\'' => quote = Some(at),
            '(' => closers.push(')'),
            '<' => closers.push('>'),
            '[' => closers.push(']'),
            ')' | '>' | ']' => match closers.pop() {
                Some(expected) if expected == c => {}
                Some(_) => return bad(at, "unbalanced brackets in the parameter list"),
                None if c == ')' => {
                    close = Some(at);
                    break;
                }
                None => return bad(at, "unbalanced brackets in the parameter list"),
            },
            ',' if closers.is_empty() => {
                pieces.push((start, at));
                start = at + 1;
            }
            _ => {}
        }
    }
    if let Some(at) = quote {
        return bad(at, "a quote that is not closed in the parameter list");
    }
    let Some(close) = close else {
        return bad(text.len(), "the parameter list is not closed with `)`");
    };
    if close + 1 != text.len() {
        return bad(close + 1, "text after the parameter list");
    }
    pieces.push((start, close));
    if let [(start, end)] = pieces[..]
        && text[start..end].trim_matches([' ', '\t']).is_empty()
    {
        return Ok(Vec::new());
    }
    let mut params = Vec::with_capacity(pieces.len());
    for (start, end) in pieces {
        let param = canonical(&text[start..end]);
        if param.is_empty() {
            return bad(
                start,
                "an empty parameter type (nothing, or only a keyword or resolution scope)",
            );
        }
        params.push(param);
    }
    Ok(params)
}

/// Whether `c` may stand next to a bracket, comma, `&` or `*` without a space.
fn hugs(c: char) -> bool {
    matches!(c, '<' | '>' | '(' | ')' | '[' | ']' | ',' | '&' | '*')
}

/// One parameter type in canonical form: no `class `/`valuetype ` keyword and no
/// `[Scope]` where a type starts (at the beginning, after `<`, `(` or `,`), whitespace
/// runs as one space, none at the ends or next to a bracket, comma, `&` or `*`; quoted
/// names as they are. Total on any text; the same on its own output.
fn canonical(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut type_start = true;
    let mut space = false;
    while let Some(c) = rest.chars().next() {
        if c == ' ' || c == '\t' {
            space = true;
            rest = &rest[1..];
            continue;
        }
        if type_start {
            if let Some(after) = keyword(rest) {
                rest = after;
                continue;
            }
            if c == '[' {
                rest = skip_scope(rest);
                continue;
            }
        }
        if space {
            space = false;
            if out.chars().next_back().is_some_and(|p| !hugs(p)) && !hugs(c) {
                out.push(' ');
            }
        }
        if c == '\'' {
            let end = quoted_end(rest);
            out.push_str(&rest[..end]);
            rest = &rest[end..];
            type_start = false;
            continue;
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
        type_start = matches!(c, '<' | '(' | ',');
    }
    out
}

/// `rest` after `class` or `valuetype` and the whitespace that follows, when it starts
/// so.
fn keyword(rest: &str) -> Option<&str> {
    ["class", "valuetype"].iter().find_map(|k| {
        let after = rest.strip_prefix(k)?;
        after
            .starts_with([' ', '\t'])
            .then(|| after.trim_start_matches([' ', '\t']))
    })
}

/// `rest` (starting with `[`) after the bracketed scope, nested brackets and quotes
/// included; empty when it is not closed.
fn skip_scope(rest: &str) -> &str {
    let mut depth = 0usize;
    let mut at = 0;
    while let Some(c) = rest[at..].chars().next() {
        match c {
            '\'' => {
                at += quoted_end(&rest[at..]);
                continue;
            }
            '[' => depth += 1,
            ']' => {
                depth -= 1;
                if depth == 0 {
                    return &rest[at + 1..];
                }
            }
            _ => {}
        }
        at += c.len_utf8();
    }
    ""
}

/// The byte length of the quoted name `rest` starts with (its `'`, what it holds, its
/// closing `'`); all of `rest` when it is not closed.
fn quoted_end(rest: &str) -> usize {
    let mut escaped = false;
    for (at, c) in rest.char_indices().skip(1) {
        match (escaped, c) {
            (true, _) => escaped = false,
            (false, '\\') => escaped = true,
            (false, '\'') => return at + 1,
            _ => {}
        }
    }
    rest.len()
}

#[cfg(test)]
mod tests;

//! Signature types and method signatures as text, in an ILAsm-like syntax: a parser
//! ([`parse_type`], [`parse_types`], [`parse_method_sig`]) and a printer ([`TypeText`],
//! [`MethodSigText`]).
//!
//! This is how code that cannot build a [`TypeSig`] itself (instrumentation methods
//! written in C, through the C ABI) describes types and method signatures *by value*,
//! rather than as signature bytes. Types of the module are named by their metadata
//! tokens (TypeRef, TypeDef or TypeSpec, defined beforehand), written in hex.
//!
//! # Grammar
//!
//! Tokens may be separated by any ASCII whitespace; keywords are case-sensitive; the
//! text must be ASCII.
//!
//! ```text
//! type       = head { suffix } ;
//! head       = prim
//!            | ( "class" | "valuetype" ) token [ "<" type { "," type } ">" ]
//!            | "!" uint                                  (* Var  *)
//!            | "!!" uint                                 (* MVar *)
//!            | "method" sig-head type "*" "(" [ params ] ")" ;   (* FnPtr *)
//! prim       = "void" | "bool" | "char" | "int8" | "uint8" | "int16" | "uint16"
//!            | "int32" | "uint32" | "int64" | "uint64" | "float32" | "float64"
//!            | "native" "int" | "nint" | "native" "uint" | "nuint"
//!            | "native" "unsigned" "int" | "string" | "object" | "typedref" ;
//! suffix     = "[" "]"                                   (* SzArray *)
//!            | "[" dim { "," dim } "]"                   (* Array; rank = number of dims *)
//!            | "&"                                       (* ByRef *)
//!            | "*"                                       (* Ptr *)
//!            | "pinned"                                  (* Pinned *)
//!            | ( "modreq" | "modopt" ) "(" token ")" ;   (* Modified, required or not *)
//! dim        = [ "..." ]                                 (* no size, no lower bound *)
//!            | int                                       (* size, no lower bound *)
//!            | int "..."                                 (* lower bound, no size *)
//!            | int "..." int ;                           (* lower bound L, upper bound U:
//!                                                           size U - L + 1 *)
//! method-sig = sig-head type "(" [ params ] ")" ;
//! sig-head   = [ "instance" ] [ "explicit" ] [ callconv ] [ "generic" uint ] ;
//! callconv   = "default" | "vararg"
//!            | "unmanaged" [ "cdecl" | "stdcall" | "thiscall" | "fastcall" ] ;
//! params     = param { "," param } ;
//! param      = type | "..." ;                            (* "...": the vararg sentinel *)
//! types      = type { "," type } ;                       (* parse_types *)
//! token      = "0x" hexdigit { hexdigit } ;              (* 1 to 8 digits *)
//! uint       = digit { digit } ;                         (* decimal, 0 to 4294967295 *)
//! int        = [ "-" ] digit { digit } ;                 (* decimal *)
//! ```
//!
//! What the grammar means, and what it does not say:
//!
//! * **Suffixes** apply left to right, each wrapping everything to its left, as in
//!   ILAsm: `int32 modreq(0x01000001)[]&` is `ByRef(SzArray(Modified(I4)))`, whose blob
//!   is `BYREF SZARRAY CMOD_REQD <token> I4`. Any nesting of modifiers, `pinned` and the
//!   other wrappers round-trips.
//! * **Tokens** must be of the TypeRef (`0x01`), TypeDef (`0x02`) or TypeSpec (`0x1B`)
//!   table: the only ones a signature can hold. Other tables are rejected when parsing.
//! * **Arrays**: `[]` is a single-dimension zero-based array (`SZARRAY`); anything else
//!   in brackets is a general array (`ARRAY`) whose rank is the number of dimensions,
//!   so a rank-1 general array without size or bound is `[...]`. Each dimension says
//!   whether it has a size and whether it has a lower bound, so [`ArrayType::sizes`]
//!   and [`ArrayType::lo_bounds`] round-trip exactly. Unlike ILAsm, a lone number `N`
//!   is a size *without* a lower bound (the runtime's default bound, 0, applies);
//!   `0...N-1` gives both. Since a shape lists sizes and lower bounds for leading
//!   dimensions only, a dimension with a size after one without (or a bound after one
//!   without) is rejected. Sizes are 0 to 4294967295, lower bounds 32-bit signed.
//! * **Function pointers**: `method void *(int32, string)`. In a function pointer's
//!   return type, a `*` followed by `(` is the one before the parameter list, not a
//!   pointer: `method int32* *()` returns `int32*`. In a method signature (outside
//!   `method`) there is no `*` before the list: `int32* (int32)` returns `int32*`.
//! * **Method signatures**: `instance` sets [`MethodSig::has_this`], `explicit`
//!   [`MethodSig::explicit_this`] (accepted without `instance` too, as the blob can say
//!   it), `generic N` (N ≥ 1) [`MethodSig::generic_param_count`]; `default` is the
//!   default calling convention, `unmanaged` alone is
//!   [`CallingConvention::Unmanaged`], `unmanaged cdecl` is [`CallingConvention::C`].
//!   The sentinel `...` sits in the parameter list where [`MethodSig::sentinel`] says:
//!   `(int32, ..., string)` has `sentinel == Some(1)`. It must be followed by a
//!   parameter, as in the blob.
//! * **Positions are not checked**: `void` and `pinned` parse anywhere, as the
//!   [`TypeSig`] tree allows them; the encoder ([`TypeSig::encode`]) rejects them where
//!   a blob cannot hold them. Likewise for values beyond what a blob can encode (a
//!   generic parameter number or size above `0x1FFFFFFF`, …): they parse and print,
//!   the encoder refuses them.
//! * **Nesting**: a parsed tree nests at most [`MAX_NESTING`] levels, counted as the
//!   binary parser counts them (every wrapper, generic instantiation and function
//!   pointer is a level); deeper text fails with [`Error::TooDeep`] whose `offset` is
//!   the character offset in the text (its message says "blob offset", as for blobs).
//!   The parser recurses only into generic arguments and function pointers, after
//!   checking the depth, and reads suffixes in a loop, so no text, however deep, takes
//!   more stack than the limit allows: measured in release builds (x86-64), about 650
//!   bytes a level for generic instantiations and 720 for function pointers, so about
//!   200 KiB at the limit (`tests/sig_text.rs` runs it on a thread of 256 KiB). The
//!   printer does not recurse at all, so it prints trees of any depth (text that then
//!   fails to parse with [`Error::TooDeep`] if they are deeper than the limit).
//!
//! # Printing
//!
//! The printer writes the canonical form of the grammar: one space between words,
//! `, ` between list items, none elsewhere (`class 0x01000005<int32, string[]>`,
//! `int32 modreq(0x01000003)&`, `instance vararg void (int32, ..., string)`), tokens
//! as `0x` and 8 lowercase hex digits, `native int`/`native uint` for `I`/`U`, and
//! omits `default`. For every value the grammar can write, parsing the printed text
//! gives back an equal value. The values it cannot write print as text that the
//! parser rejects, with an error at the offending place:
//!
//! * [`TypeSig::Internal`] prints as `internal(0x…)` (a runtime type handle: never in
//!   metadata, never parsed);
//! * a token of a table other than TypeRef, TypeDef or TypeSpec prints as it is, and
//!   is rejected as such;
//! * a generic instantiation without arguments prints as `<>`;
//! * an array shape that is invalid (rank 0, more sizes or lower bounds than its rank)
//!   prints as `[invalid shape: rank R, sizes [..], lower bounds [..]]`;
//! * a sentinel not below the number of parameters prints as a trailing `...`.
//!
//! All but `Internal` (which the encoder writes, for the runtime's own signatures) are
//! also values the encoder rejects. The parser never produces any of them. An array of
//! rank `R` prints `R - 1` commas, however large `R` is.

use std::fmt;

use crate::error::{Error, Result};
use crate::sig::types::{ArrayType, CallingConvention, MAX_NESTING, MethodSig, TypeSig};

/// Parses the text of one type (the `type` rule of the [grammar](self)), with nothing
/// after it but whitespace.
///
/// Guarantees: for every `t` the grammar can write, `parse_type(&TypeText(&t).to_string())
/// == Ok(t)`; the result nests at most [`MAX_NESTING`] levels; no input panics or
/// exhausts the stack. `void` and `pinned` are accepted anywhere (the encoder checks
/// positions).
///
/// # Errors
///
/// [`Error::BadSignatureText`] with the character offset and what was expected there
/// (non-ASCII text, an unknown word, a missing `>`, a token of another table, trailing
/// text, …); [`Error::TooDeep`] with the character offset for a type nested deeper than
/// [`MAX_NESTING`].
pub fn parse_type(text: &str) -> Result<TypeSig> {
    let mut p = Parser::new(text)?;
    let (t, _) = p.ty(0, false)?;
    p.end(SUFFIX_OR_END)?;
    Ok(t)
}

/// Parses a comma-separated list of at least one type (the `types` rule of the
/// [grammar](self)), such as the generic arguments of a MethodSpec.
///
/// Guarantees: as [`parse_type`] for each type; the list is never empty (empty text is
/// an error) and keeps the order of the text.
///
/// # Errors
///
/// As [`parse_type`]; also for empty text, an empty item or a trailing comma.
pub fn parse_types(text: &str) -> Result<Vec<TypeSig>> {
    let mut p = Parser::new(text)?;
    let mut types = Vec::new();
    loop {
        types.push(p.ty(0, false)?.0);
        let t = p.peek()?;
        match t.kind {
            Kind::Punct(b',') => p.bump(t),
            Kind::End => return Ok(types),
            _ => {
                return Err(p.expected(
                    t,
                    "a suffix (`[]`, `&`, `*`, `modreq(...)`, `modopt(...)`, `pinned`), `,` \
                     or the end of the text",
                ));
            }
        }
    }
}

/// Parses the text of one method signature (the `method-sig` rule of the
/// [grammar](self)), e.g. `instance vararg int32 (string, ..., object)`, with nothing
/// after it but whitespace.
///
/// Guarantees: for every `m` the grammar can write, `parse_method_sig(
/// &MethodSigText(&m).to_string()) == Ok(m)`; every type in it nests at most
/// [`MAX_NESTING`] levels; `generic_param_count` is never set to 0 by `generic`;
/// a sentinel is always followed by a parameter (`sentinel < params.len()`); no input
/// panics or exhausts the stack.
///
/// # Errors
///
/// As [`parse_type`]; also for `generic 0`, a second sentinel, or one not followed by
/// a parameter.
pub fn parse_method_sig(text: &str) -> Result<MethodSig> {
    let mut p = Parser::new(text)?;
    let (m, _) = p.method_sig(0, false)?;
    p.end("the end of the text after the parameter list")?;
    Ok(*m)
}

/// Prints a type in the canonical form of the [grammar](self).
///
/// Guarantees: for every value the grammar can write, [`parse_type`] of the text gives
/// back an equal value; for the others (see the [module documentation](self#printing))
/// the text is one [`parse_type`] rejects. Printing does not recurse: trees of any
/// depth print without exhausting the stack.
#[derive(Debug, Clone, Copy)]
pub struct TypeText<'a>(pub &'a TypeSig);

/// Prints a method signature in the canonical form of the [grammar](self), e.g.
/// `instance void (int32, ..., string)`.
///
/// Guarantees: for every value the grammar can write, [`parse_method_sig`] of the text
/// gives back an equal value; for the others (see the [module
/// documentation](self#printing)) the text is one [`parse_method_sig`] rejects. Printing
/// does not recurse.
#[derive(Debug, Clone, Copy)]
pub struct MethodSigText<'a>(pub &'a MethodSig);

// ---- errors -----------------------------------------------------------------------------

const SUFFIX_OR_END: &str =
    "a suffix (`[]`, `&`, `*`, `modreq(...)`, `modopt(...)`, `pinned`) or the end of the text";

fn err(at: usize, why: impl Into<String>) -> Error {
    Error::BadSignatureText {
        at,
        why: why.into(),
    }
}

#[cold]
fn too_deep(at: usize) -> Error {
    Error::TooDeep {
        offset: Some(at),
        limit: MAX_NESTING,
    }
}

// ---- lexer ------------------------------------------------------------------------------

/// What a token is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// `[A-Za-z_][A-Za-z0-9_]*`.
    Word,
    /// `0x` and 1 to 8 hex digits.
    Hex(u32),
    /// A decimal number, possibly negative.
    Int(i64),
    /// One of `< > ( ) [ ] , & * !`.
    Punct(u8),
    /// `!!`.
    Bang2,
    /// `...`.
    Ellipsis,
    /// The end of the text.
    End,
}

/// A token and where it is in the text.
#[derive(Debug, Clone, Copy)]
struct Tok {
    kind: Kind,
    start: usize,
    end: usize,
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// A recursive-descent parser over an ASCII text, lexing on demand.
struct Parser<'a> {
    src: &'a str,
    pos: usize,
}

impl<'a> Parser<'a> {
    fn new(src: &'a str) -> Result<Self> {
        if let Some((at, c)) = src.chars().enumerate().find(|(_, c)| !c.is_ascii()) {
            return Err(err(
                at,
                format!(
                    "non-ASCII character `{c}` (U+{:04X}): signature text is ASCII",
                    u32::from(c)
                ),
            ));
        }
        Ok(Parser { src, pos: 0 })
    }

    /// The token at `pos` (after whitespace).
    #[inline(never)]
    fn lex(&self, mut pos: usize) -> Result<Tok> {
        let b = self.src.as_bytes();
        while b.get(pos).is_some_and(u8::is_ascii_whitespace) {
            pos += 1;
        }
        let start = pos;
        let tok = |kind, end| Ok(Tok { kind, start, end });
        let Some(&c) = b.get(pos) else {
            return tok(Kind::End, start);
        };
        match c {
            b'A'..=b'Z' | b'a'..=b'z' | b'_' => tok(Kind::Word, self.word_end(pos)),
            b'0'..=b'9' => self.lex_number(start),
            b'-' if b.get(pos + 1).is_some_and(u8::is_ascii_digit) => self.lex_number(start),
            b'.' if b[pos..].starts_with(b"...") => tok(Kind::Ellipsis, pos + 3),
            b'.' => Err(err(
                start,
                "unexpected `.`: the only token with dots is `...`",
            )),
            b'!' if b.get(pos + 1) == Some(&b'!') => tok(Kind::Bang2, pos + 2),
            b'<' | b'>' | b'(' | b')' | b'[' | b']' | b',' | b'&' | b'*' | b'!' => {
                tok(Kind::Punct(c), pos + 1)
            }
            _ => Err(err(
                start,
                format!("unexpected character `{}`", char::from(c).escape_default()),
            )),
        }
    }

    fn word_end(&self, mut pos: usize) -> usize {
        let b = self.src.as_bytes();
        while b.get(pos).is_some_and(|&c| is_word_byte(c)) {
            pos += 1;
        }
        pos
    }

    /// A number starting at `start` (a digit, or `-` and a digit).
    fn lex_number(&self, start: usize) -> Result<Tok> {
        let digits_at = start + usize::from(self.src.as_bytes()[start] == b'-');
        let end = self.word_end(digits_at);
        let text = &self.src[start..end];
        let kind = if let Some(hex) = text.strip_prefix("0x") {
            if hex.is_empty() || !hex.bytes().all(|c| c.is_ascii_hexdigit()) {
                return Err(err(
                    start,
                    format!("malformed token `{text}`: expected `0x` and 1 to 8 hex digits"),
                ));
            }
            if hex.len() > 8 {
                return Err(err(
                    start,
                    format!("token `{text}` has more than 8 hex digits"),
                ));
            }
            // At most 8 hex digits: always a u32.
            Kind::Hex(u32::from_str_radix(hex, 16).map_err(|_| err(start, "bad token"))?)
        } else {
            if !self.src[digits_at..end].bytes().all(|c| c.is_ascii_digit()) {
                return Err(err(start, format!("malformed number `{text}`")));
            }
            Kind::Int(
                text.parse::<i64>()
                    .map_err(|_| err(start, format!("number `{text}` is too large")))?,
            )
        };
        Ok(Tok { kind, start, end })
    }

    fn peek(&self) -> Result<Tok> {
        self.lex(self.pos)
    }

    fn bump(&mut self, t: Tok) {
        self.pos = t.end;
    }

    fn next(&mut self) -> Result<Tok> {
        let t = self.peek()?;
        self.bump(t);
        Ok(t)
    }

    fn text(&self, t: Tok) -> &'a str {
        &self.src[t.start..t.end]
    }

    /// What `t` is, for a message: the token quoted (its first 40 characters if
    /// longer), or the end of the text.
    fn found(&self, t: Tok) -> String {
        let text = self.text(t);
        match t.kind {
            Kind::End => "the end of the text".to_string(),
            _ if text.len() > 40 => format!("`{}`...", &text[..40]),
            _ => format!("`{text}`"),
        }
    }

    #[cold]
    #[inline(never)]
    fn expected(&self, t: Tok, what: &str) -> Error {
        err(t.start, format!("expected {what}, found {}", self.found(t)))
    }

    /// Consumes the word `w` if it comes next.
    fn take_word(&mut self, w: &str) -> Result<bool> {
        let t = self.peek()?;
        let yes = t.kind == Kind::Word && self.text(t) == w;
        if yes {
            self.bump(t);
        }
        Ok(yes)
    }

    /// Consumes `c`, or fails saying `what` was expected.
    fn expect_punct(&mut self, c: u8, what: &str) -> Result<()> {
        let t = self.next()?;
        if t.kind == Kind::Punct(c) {
            Ok(())
        } else {
            Err(self.expected(t, what))
        }
    }

    /// Fails unless only whitespace is left.
    fn end(&self, what: &str) -> Result<()> {
        let t = self.peek()?;
        if t.kind == Kind::End {
            Ok(())
        } else {
            Err(self.expected(t, what))
        }
    }

    // ---- parser -----------------------------------------------------------------------
    //
    // The parser recurses once per generic instantiation or function pointer, through
    // `ty`, `head` and `generic_inst` or `fn_ptr`/`method_sig`; these keep their frames
    // small (errors are built out of line, suffixes and leaves are read by functions of
    // their own), and `ty` checks the depth before going deeper.
    // `tests/sig_text.rs` (`parsing_at_the_nesting_limit_fits_a_small_stack`) guards the
    // cost.

    /// A type whose node would sit at nesting `depth` (the number of enclosing nodes
    /// known so far); returns it with its height (levels, itself included). Fails with
    /// [`Error::TooDeep`] as soon as `depth + height` would exceed [`MAX_NESTING`].
    /// `fn_ret`: this is a function pointer's return type, so a `*` followed by `(`
    /// ends it.
    fn ty(&mut self, depth: usize, fn_ret: bool) -> Result<(TypeSig, usize)> {
        if depth >= MAX_NESTING {
            return Err(too_deep(self.peek()?.start));
        }
        let (t, height) = self.head(depth)?;
        self.suffixes(t, height, depth, fn_ret)
    }

    /// The suffixes after a type `t` of height `height` at nesting `depth`, in a loop
    /// (kept out of [`Parser::ty`], whose frame is on the path of recursion).
    #[inline(never)]
    fn suffixes(
        &mut self,
        mut t: TypeSig,
        mut height: usize,
        depth: usize,
        fn_ret: bool,
    ) -> Result<(TypeSig, usize)> {
        while let Some(s) = self.next_suffix(fn_ret)? {
            if depth + height >= MAX_NESTING {
                return Err(too_deep(s.start));
            }
            height += 1;
            t = self.suffix(s, t)?;
        }
        Ok((t, height))
    }

    /// The suffix that comes next, if one does.
    #[inline(never)]
    fn next_suffix(&self, fn_ret: bool) -> Result<Option<Tok>> {
        let s = self.peek()?;
        let is_suffix = match s.kind {
            Kind::Punct(b'[' | b'&') => true,
            Kind::Punct(b'*') => !(fn_ret && self.lex(s.end)?.kind == Kind::Punct(b'(')),
            Kind::Word => matches!(self.text(s), "modreq" | "modopt" | "pinned"),
            _ => false,
        };
        Ok(is_suffix.then_some(s))
    }

    /// Reads the suffix `s` (from [`Parser::next_suffix`]) and wraps `t` in it.
    #[inline(never)]
    fn suffix(&mut self, s: Tok, t: TypeSig) -> Result<TypeSig> {
        self.bump(s);
        let inner = Box::new(t);
        Ok(match s.kind {
            Kind::Punct(b'[') => self.array(inner)?,
            Kind::Punct(b'&') => TypeSig::ByRef(inner),
            Kind::Punct(_) => TypeSig::Ptr(inner),
            _ if self.text(s) == "pinned" => TypeSig::Pinned(inner),
            _ => {
                let required = self.text(s) == "modreq";
                self.expect_punct(
                    b'(',
                    if required {
                        "`(` and a token after `modreq`"
                    } else {
                        "`(` and a token after `modopt`"
                    },
                )?;
                let token = self.token()?;
                self.expect_punct(b')', "`)` after the modifier's token")?;
                TypeSig::Modified {
                    required,
                    token,
                    inner,
                }
            }
        })
    }

    /// The head of a type at nesting `depth`, and its height.
    #[inline(always)]
    fn head(&mut self, depth: usize) -> Result<(TypeSig, usize)> {
        let t = self.next()?;
        match t.kind {
            Kind::Word => match self.text(t) {
                "class" => self.class(depth, false),
                "valuetype" => self.class(depth, true),
                "method" => self.fn_ptr(depth),
                _ => Ok((self.leaf(t)?, 1)),
            },
            Kind::Punct(b'!') => Ok((TypeSig::Var(self.generic_number(t)?), 1)),
            Kind::Bang2 => Ok((TypeSig::MVar(self.generic_number(t)?), 1)),
            _ => Err(self.expected(t, "a type")),
        }
    }

    /// A type named by the word `t` (but `class`, `valuetype` and `method`).
    #[inline(never)]
    fn leaf(&mut self, t: Tok) -> Result<TypeSig> {
        Ok(match self.text(t) {
            "void" => TypeSig::Void,
            "bool" => TypeSig::Boolean,
            "char" => TypeSig::Char,
            "int8" => TypeSig::I1,
            "uint8" => TypeSig::U1,
            "int16" => TypeSig::I2,
            "uint16" => TypeSig::U2,
            "int32" => TypeSig::I4,
            "uint32" => TypeSig::U4,
            "int64" => TypeSig::I8,
            "uint64" => TypeSig::U8,
            "float32" => TypeSig::R4,
            "float64" => TypeSig::R8,
            "nint" => TypeSig::I,
            "nuint" => TypeSig::U,
            "string" => TypeSig::String,
            "object" => TypeSig::Object,
            "typedref" => TypeSig::TypedByRef,
            "native" => self.native()?,
            w => return Err(not_a_type(t.start, w)),
        })
    }

    /// `int` or `uint` (or `unsigned int`) after `native`.
    fn native(&mut self) -> Result<TypeSig> {
        let t = self.next()?;
        match (t.kind, self.text(t)) {
            (Kind::Word, "int") => Ok(TypeSig::I),
            (Kind::Word, "uint") => Ok(TypeSig::U),
            (Kind::Word, "unsigned") => {
                let t = self.next()?;
                match (t.kind, self.text(t)) {
                    (Kind::Word, "int") => Ok(TypeSig::U),
                    _ => Err(self.expected(t, "`int` after `native unsigned`")),
                }
            }
            _ => Err(self.expected(t, "`int` or `uint` after `native`")),
        }
    }

    /// The number after `!` or `!!` (the token `sigil`).
    #[inline(never)]
    fn generic_number(&mut self, sigil: Tok) -> Result<u32> {
        let t = self.next()?;
        match t.kind {
            Kind::Int(n) => u32::try_from(n).map_err(|_| {
                out_of_range(t.start, "generic parameter number", n, 0, u32::MAX.into())
            }),
            _ => Err(self.expected(
                t,
                if sigil.kind == Kind::Bang2 {
                    "a generic parameter number (decimal) after `!!`"
                } else {
                    "a generic parameter number (decimal) after `!`"
                },
            )),
        }
    }

    /// A TypeDef, TypeRef or TypeSpec token.
    fn token(&mut self) -> Result<u32> {
        let t = self.next()?;
        let Kind::Hex(v) = t.kind else {
            return Err(self.expected(t, "a token (`0x` and 1 to 8 hex digits)"));
        };
        match v >> 24 {
            0x01 | 0x02 | 0x1B => Ok(v),
            _ => Err(wrong_table(t.start, self.text(t), v)),
        }
    }

    /// The rest of `class`/`valuetype` at nesting `depth`: a token, then generic
    /// arguments if `<` follows.
    #[inline(never)]
    fn class(&mut self, depth: usize, is_value_type: bool) -> Result<(TypeSig, usize)> {
        let token = self.token()?;
        let lt = self.peek()?;
        if lt.kind != Kind::Punct(b'<') {
            let t = if is_value_type {
                TypeSig::ValueType(token)
            } else {
                TypeSig::Class(token)
            };
            return Ok((t, 1));
        }
        self.bump(lt);
        let first = self.peek()?;
        if first.kind == Kind::Punct(b'>') {
            return Err(err(
                first.start,
                "empty generic argument list: an instantiation has at least one type argument",
            ));
        }
        let mut args = Vec::new();
        let mut height = 0;
        loop {
            let (a, h) = self.ty(depth + 1, false)?;
            args.push(a);
            height = height.max(h);
            let t = self.next()?;
            match t.kind {
                Kind::Punct(b',') => {}
                Kind::Punct(b'>') => break,
                _ => return Err(self.expected(t, "a suffix, `,` or `>` after a generic argument")),
            }
        }
        let t = TypeSig::GenericInst {
            is_value_type,
            token,
            args,
        };
        Ok((t, height + 1))
    }

    /// The rest of `method` at nesting `depth`.
    #[inline(never)]
    fn fn_ptr(&mut self, depth: usize) -> Result<(TypeSig, usize)> {
        let (m, h) = self.method_sig(depth + 1, true)?;
        Ok((TypeSig::FnPtr(m), h + 1))
    }

    /// An array suffix after its `[`, around `elem`.
    fn array(&mut self, elem: Box<TypeSig>) -> Result<TypeSig> {
        let t = self.peek()?;
        if t.kind == Kind::Punct(b']') {
            self.bump(t);
            return Ok(TypeSig::SzArray(elem));
        }
        let mut rank = 0u32;
        let mut sizes = Vec::new();
        let mut lo_bounds = Vec::new();
        loop {
            let at = self.peek()?.start;
            let (lo, size) = self.dim()?;
            if let Some(size) = size {
                if sizes.len() != rank as usize {
                    return Err(err(
                        at,
                        "a size on a dimension after one without: sizes can only be given \
                         for leading dimensions",
                    ));
                }
                sizes.push(size);
            }
            if let Some(lo) = lo {
                if lo_bounds.len() != rank as usize {
                    return Err(err(
                        at,
                        "a lower bound on a dimension after one without: lower bounds can \
                         only be given for leading dimensions",
                    ));
                }
                lo_bounds.push(lo);
            }
            rank = rank
                .checked_add(1)
                .ok_or_else(|| err(at, "more than 4294967295 array dimensions"))?;
            let t = self.next()?;
            match t.kind {
                Kind::Punct(b',') => {}
                Kind::Punct(b']') => break,
                _ => return Err(self.expected(t, "`,` or `]` after an array dimension")),
            }
        }
        Ok(TypeSig::Array(Box::new(ArrayType {
            elem: *elem,
            rank,
            sizes,
            lo_bounds,
        })))
    }

    /// One dimension of an array shape: its lower bound and size, if any.
    fn dim(&mut self) -> Result<(Option<i32>, Option<u32>)> {
        let t = self.peek()?;
        match t.kind {
            Kind::Punct(b',' | b']') => Ok((None, None)),
            Kind::Ellipsis => {
                self.bump(t);
                Ok((None, None))
            }
            Kind::Int(n) => {
                self.bump(t);
                let dots = self.peek()?;
                if dots.kind != Kind::Ellipsis {
                    let size = u32::try_from(n)
                        .map_err(|_| out_of_range(t.start, "array size", n, 0, u32::MAX.into()))?;
                    return Ok((None, Some(size)));
                }
                self.bump(dots);
                let lo = i32::try_from(n).map_err(|_| {
                    out_of_range(
                        t.start,
                        "array lower bound",
                        n,
                        i32::MIN.into(),
                        i32::MAX.into(),
                    )
                })?;
                let u = self.peek()?;
                let Kind::Int(hi) = u.kind else {
                    return Ok((Some(lo), None));
                };
                self.bump(u);
                // A size of 0 to u32::MAX: `hi` from `lo - 1` to `lo + u32::MAX - 1`.
                let size = i128::from(hi) - i128::from(lo) + 1;
                let size = u32::try_from(size).map_err(|_| {
                    out_of_range(
                        u.start,
                        "array upper bound",
                        hi,
                        i64::from(lo) - 1,
                        i64::from(lo) + i64::from(u32::MAX) - 1,
                    )
                })?;
                Ok((Some(lo), Some(size)))
            }
            _ => Err(self.expected(
                t,
                "an array dimension (`N`, `L...`, `L...U` or `...`), `,` or `]`",
            )),
        }
    }

    /// `instance`, `explicit`, the calling convention and `generic N`, each if present.
    #[inline(never)]
    fn sig_head(&mut self) -> Result<Box<MethodSig>> {
        let has_this = self.take_word("instance")?;
        let explicit_this = self.take_word("explicit")?;
        let calling_convention = if self.take_word("default")? {
            CallingConvention::Default
        } else if self.take_word("vararg")? {
            CallingConvention::VarArg
        } else if self.take_word("unmanaged")? {
            if self.take_word("cdecl")? {
                CallingConvention::C
            } else if self.take_word("stdcall")? {
                CallingConvention::StdCall
            } else if self.take_word("thiscall")? {
                CallingConvention::ThisCall
            } else if self.take_word("fastcall")? {
                CallingConvention::FastCall
            } else {
                CallingConvention::Unmanaged
            }
        } else {
            CallingConvention::Default
        };
        let generic_param_count = if self.take_word("generic")? {
            let t = self.next()?;
            match t.kind {
                Kind::Int(0) => {
                    return Err(err(
                        t.start,
                        "`generic 0`: a generic method has 1 to 4294967295 generic \
                         parameters (leave `generic` out for none)",
                    ));
                }
                Kind::Int(n) => u32::try_from(n).map_err(|_| {
                    out_of_range(t.start, "generic parameter count", n, 1, u32::MAX.into())
                })?,
                _ => return Err(self.expected(t, "the number of generic parameters")),
            }
        } else {
            0
        };
        Ok(Box::new(MethodSig {
            calling_convention,
            has_this,
            explicit_this,
            generic_param_count,
            return_type: TypeSig::Void,
            params: Vec::new(),
            sentinel: None,
        }))
    }

    /// A method signature whose types sit at nesting `depth`, and their greatest
    /// height; `fn_ptr`: inside `method`, so `*` precedes the parameter list.
    fn method_sig(&mut self, depth: usize, fn_ptr: bool) -> Result<(Box<MethodSig>, usize)> {
        let mut m = self.sig_head()?;
        let (return_type, mut height) = self.ty(depth, fn_ptr)?;
        m.return_type = return_type;
        self.open_params(fn_ptr)?;
        let t = self.peek()?;
        if t.kind == Kind::Punct(b')') {
            self.bump(t);
            return Ok((m, height));
        }
        loop {
            if self.sentinel(&mut m)? {
                continue;
            }
            let (p, h) = self.ty(depth, false)?;
            m.params.push(p);
            height = height.max(h);
            let c = self.next()?;
            match c.kind {
                Kind::Punct(b',') => {}
                Kind::Punct(b')') => return Ok((m, height)),
                _ => return Err(self.expected(c, "a suffix, `,` or `)` after a parameter")),
            }
        }
    }

    /// The `(` (for a function pointer, `*(`) before a parameter list.
    #[inline(never)]
    fn open_params(&mut self, fn_ptr: bool) -> Result<()> {
        if fn_ptr {
            self.expect_punct(
                b'*',
                "a suffix, or `*` and the parameter list of a function pointer (as in \
                 `method void *(int32)`)",
            )?;
            self.expect_punct(b'(', "`(` after the `*` of a function pointer")
        } else {
            self.expect_punct(b'(', "a suffix, or `(` and the parameter list")
        }
    }

    /// Reads a sentinel `...` and the `,` after it, if one comes next, and records it in
    /// `m`.
    #[inline(never)]
    fn sentinel(&mut self, m: &mut MethodSig) -> Result<bool> {
        let t = self.peek()?;
        if t.kind != Kind::Ellipsis {
            return Ok(false);
        }
        self.bump(t);
        if m.sentinel.is_some() {
            return Err(err(
                t.start,
                "a second sentinel `...`: a parameter list has at most one",
            ));
        }
        m.sentinel = Some(m.params.len());
        let c = self.next()?;
        if c.kind != Kind::Punct(b',') {
            return Err(self.expected(
                c,
                "`,` and a parameter after the sentinel `...` (a sentinel precedes the first \
                 variable argument)",
            ));
        }
        Ok(true)
    }
}

#[cold]
#[inline(never)]
fn out_of_range(at: usize, what: &str, n: i64, min: i64, max: i64) -> Error {
    err(at, format!("{what} {n} out of range: {min} to {max}"))
}

#[cold]
#[inline(never)]
fn wrong_table(at: usize, text: &str, token: u32) -> Error {
    err(
        at,
        format!(
            "token `{text}` is of table {:#04x}: expected a TypeRef (0x01), TypeDef (0x02) \
             or TypeSpec (0x1B) token",
            token >> 24
        ),
    )
}

/// The error for the word `w` at `at` where a type was expected.
#[cold]
#[inline(never)]
fn not_a_type(at: usize, w: &str) -> Error {
    match w {
        "internal" => err(
            at,
            "`internal(...)`, a runtime type handle, cannot be written as signature text",
        ),
        "modreq" | "modopt" | "pinned" => err(
            at,
            format!(
                "expected a type, found `{w}`: modifiers and `pinned` follow the type they \
                 apply to, as in `int32 {w}{}`",
                if w == "pinned" { "" } else { "(0x01000001)" }
            ),
        ),
        _ => err(at, unknown_word(w)),
    }
}

/// The message for a word that does not start a type.
fn unknown_word(w: &str) -> String {
    let hint = match w {
        "int" | "uint" => " (write `int32`, `uint32`, …, or `native int`)",
        "unsigned" => " (write `uint8`, …, `uint64`, or `native uint`)",
        "instance" | "explicit" | "default" | "vararg" | "unmanaged" | "generic" | "cdecl"
        | "stdcall" | "thiscall" | "fastcall" => {
            " (a method signature starts with `instance`, `explicit`, the calling \
             convention and `generic N`, in this order)"
        }
        _ => "",
    };
    format!("expected a type, found unknown word `{w}`{hint}")
}

// ---- printer ----------------------------------------------------------------------------

/// What the printer writes next: its explicit stack holds these, so that it does not
/// recurse.
enum Item<'a> {
    /// A whole type.
    Type(&'a TypeSig),
    /// Fixed text.
    Str(&'static str),
    /// A `modreq(...)`/`modopt(...)` suffix.
    Mod { required: bool, token: u32 },
    /// An array-shape suffix.
    Shape(&'a ArrayType),
}

impl fmt::Display for TypeText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        drain(f, vec![Item::Type(self.0)])
    }
}

impl fmt::Display for MethodSigText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut stack = Vec::new();
        push_sig(f, self.0, false, &mut stack)?;
        drain(f, stack)
    }
}

/// Writes the items of `stack`, last first, until it is empty.
fn drain<'a>(f: &mut fmt::Formatter<'_>, mut stack: Vec<Item<'a>>) -> fmt::Result {
    while let Some(item) = stack.pop() {
        match item {
            Item::Type(t) => write_type(f, t, &mut stack)?,
            Item::Str(s) => f.write_str(s)?,
            Item::Mod { required, token } => write!(
                f,
                " {}({token:#010x})",
                if required { "modreq" } else { "modopt" }
            )?,
            Item::Shape(a) => write_shape(f, a)?,
        }
    }
    Ok(())
}

/// Writes the head of `t` (under its wrappers), pushing its suffixes, and its nested
/// types, for [`drain`] to write.
fn write_type<'a>(
    f: &mut fmt::Formatter<'_>,
    mut t: &'a TypeSig,
    stack: &mut Vec<Item<'a>>,
) -> fmt::Result {
    loop {
        let keyword = match t {
            TypeSig::Class(token) => return write!(f, "class {token:#010x}"),
            TypeSig::ValueType(token) => return write!(f, "valuetype {token:#010x}"),
            TypeSig::Var(n) => return write!(f, "!{n}"),
            TypeSig::MVar(n) => return write!(f, "!!{n}"),
            TypeSig::Internal(h) => return write!(f, "internal({h:#018x})"),
            TypeSig::GenericInst {
                is_value_type,
                token,
                args,
            } => {
                let kind = if *is_value_type { "valuetype" } else { "class" };
                write!(f, "{kind} {token:#010x}<")?;
                stack.push(Item::Str(">"));
                for (i, a) in args.iter().enumerate().rev() {
                    stack.push(Item::Type(a));
                    if i > 0 {
                        stack.push(Item::Str(", "));
                    }
                }
                return Ok(());
            }
            TypeSig::FnPtr(m) => {
                f.write_str("method ")?;
                return push_sig(f, m, true, stack);
            }
            TypeSig::Ptr(inner) => {
                stack.push(Item::Str("*"));
                t = inner;
                continue;
            }
            TypeSig::ByRef(inner) => {
                stack.push(Item::Str("&"));
                t = inner;
                continue;
            }
            TypeSig::SzArray(inner) => {
                stack.push(Item::Str("[]"));
                t = inner;
                continue;
            }
            TypeSig::Pinned(inner) => {
                stack.push(Item::Str(" pinned"));
                t = inner;
                continue;
            }
            TypeSig::Modified {
                required,
                token,
                inner,
            } => {
                stack.push(Item::Mod {
                    required: *required,
                    token: *token,
                });
                t = inner;
                continue;
            }
            TypeSig::Array(a) => {
                stack.push(Item::Shape(a));
                t = &a.elem;
                continue;
            }
            // The primitives: every other variant is written above.
            primitive => primitive_keyword(primitive).unwrap_or_default(),
        };
        return f.write_str(keyword);
    }
}

/// The ILAsm keyword of a primitive type (`int32`, `native int`, `typedref`, ...), `None`
/// for the others: the one table the printer here and the disassembler write from.
pub(crate) fn primitive_keyword(t: &TypeSig) -> Option<&'static str> {
    Some(match t {
        TypeSig::Void => "void",
        TypeSig::Boolean => "bool",
        TypeSig::Char => "char",
        TypeSig::I1 => "int8",
        TypeSig::U1 => "uint8",
        TypeSig::I2 => "int16",
        TypeSig::U2 => "uint16",
        TypeSig::I4 => "int32",
        TypeSig::U4 => "uint32",
        TypeSig::I8 => "int64",
        TypeSig::U8 => "uint64",
        TypeSig::R4 => "float32",
        TypeSig::R8 => "float64",
        TypeSig::I => "native int",
        TypeSig::U => "native uint",
        TypeSig::String => "string",
        TypeSig::Object => "object",
        TypeSig::TypedByRef => "typedref",
        _ => return None,
    })
}

/// Writes the head of a method signature (`instance`, `explicit`, calling convention,
/// `generic N`) and pushes the rest: return type, ` (` or ` *(`, parameters, `)`.
fn push_sig<'a>(
    f: &mut fmt::Formatter<'_>,
    m: &'a MethodSig,
    fn_ptr: bool,
    stack: &mut Vec<Item<'a>>,
) -> fmt::Result {
    if m.has_this {
        f.write_str("instance ")?;
    }
    if m.explicit_this {
        f.write_str("explicit ")?;
    }
    f.write_str(match m.calling_convention {
        CallingConvention::Default => "",
        CallingConvention::VarArg => "vararg ",
        CallingConvention::C => "unmanaged cdecl ",
        CallingConvention::StdCall => "unmanaged stdcall ",
        CallingConvention::ThisCall => "unmanaged thiscall ",
        CallingConvention::FastCall => "unmanaged fastcall ",
        CallingConvention::Unmanaged => "unmanaged ",
    })?;
    if m.generic_param_count != 0 {
        write!(f, "generic {} ", m.generic_param_count)?;
    }
    stack.push(Item::Str(")"));
    let n = m.params.len();
    if let Some(s) = m.sentinel
        && s >= n
    {
        // Not writable (the parser rejects a trailing sentinel), as not encodable.
        stack.push(Item::Str(if n > 0 { ", ..." } else { "..." }));
    }
    for (i, p) in m.params.iter().enumerate().rev() {
        stack.push(Item::Type(p));
        if m.sentinel == Some(i) {
            stack.push(Item::Str("..., "));
        }
        if i > 0 {
            stack.push(Item::Str(", "));
        }
    }
    stack.push(Item::Str(if fn_ptr { " *(" } else { " (" }));
    stack.push(Item::Type(&m.return_type));
    Ok(())
}

/// Writes an array shape: `[...]`, `[,]`, `[5,0...,-1...3]`, or, for an invalid shape,
/// text the parser rejects.
fn write_shape(f: &mut fmt::Formatter<'_>, a: &ArrayType) -> fmt::Result {
    let rank = a.rank as usize;
    if rank == 0 || a.sizes.len() > rank || a.lo_bounds.len() > rank {
        return write!(
            f,
            "[invalid shape: rank {}, sizes {:?}, lower bounds {:?}]",
            a.rank, a.sizes, a.lo_bounds
        );
    }
    if rank == 1 && a.sizes.is_empty() && a.lo_bounds.is_empty() {
        return f.write_str("[...]");
    }
    f.write_str("[")?;
    for dim in 0..rank {
        if dim > 0 {
            f.write_str(",")?;
        }
        match (a.lo_bounds.get(dim), a.sizes.get(dim)) {
            (None, None) => {}
            (None, Some(size)) => write!(f, "{size}")?,
            (Some(lo), None) => write!(f, "{lo}...")?,
            (Some(&lo), Some(&size)) => {
                write!(f, "{lo}...{}", i64::from(lo) + i64::from(size) - 1)?;
            }
        }
    }
    f.write_str("]")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(r: Result<impl fmt::Debug>) -> (usize, String) {
        match r {
            Err(Error::BadSignatureText { at, why }) => (at, why),
            Err(Error::TooDeep {
                offset: Some(at), ..
            }) => (at, "too deep".to_string()),
            other => panic!("expected a text error, got {other:?}"),
        }
    }

    fn roundtrip(text: &str) -> TypeSig {
        let t = parse_type(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        let printed = TypeText(&t).to_string();
        assert_eq!(parse_type(&printed).as_ref(), Ok(&t), "{text} -> {printed}");
        t
    }

    #[test]
    fn tokens_and_numbers_at_their_bounds() {
        assert_eq!(
            parse_type("class 0x1"),
            Err(err(
                6,
                "token `0x1` is of table 0x00: expected a TypeRef (0x01), TypeDef (0x02) or TypeSpec (0x1B) token"
            ))
        );
        assert_eq!(
            parse_type("class 0x1B00_0001").map_err(|e| at(Err::<(), _>(e)).0),
            Err(6)
        );
        assert_eq!(roundtrip("class 0x1bFFFFFF"), TypeSig::Class(0x1BFF_FFFF));
        assert_eq!(
            roundtrip("valuetype 0x2000000"),
            TypeSig::ValueType(0x0200_0000)
        );
        assert_eq!(at(parse_type("class 0x010000001")).0, 6);
        assert!(
            at(parse_type("class 0x010000001"))
                .1
                .contains("more than 8")
        );
        assert_eq!(at(parse_type("class 0x")).0, 6);
        assert_eq!(at(parse_type("class 0X01000001")).0, 6);
        assert_eq!(at(parse_type("class 1000001")).0, 6);
        assert_eq!(at(parse_type("class 0x1F000001")).0, 6);
        assert_eq!(at(parse_type("class 0x0A000001")).0, 6);
        assert_eq!(at(parse_type("class 0x06000001")).0, 6);
        // Generic parameter numbers: u32.
        assert_eq!(roundtrip("!4294967295"), TypeSig::Var(u32::MAX));
        assert_eq!(roundtrip("!! 0"), TypeSig::MVar(0));
        assert_eq!(at(parse_type("!4294967296")).0, 1);
        assert_eq!(at(parse_type("!-1")).0, 1);
        assert_eq!(at(parse_type("!0x1")).0, 1);
        assert_eq!(at(parse_type("!99999999999999999999")).0, 1);
        assert_eq!(at(parse_type("! !0")).0, 2);
        assert_eq!(at(parse_type("!!!0")).0, 2);
        assert_eq!(at(parse_type("!1a")).0, 1);
        // Lexer leftovers.
        assert_eq!(at(parse_type("int32 -")).0, 6);
        assert_eq!(at(parse_type("int32 ..")).0, 6);
        assert_eq!(at(parse_type("int32 #")).0, 6);
        assert_eq!(at(parse_type("int32\0")).0, 5);
    }

    #[test]
    fn generic_counts_at_their_bounds() {
        let m = parse_method_sig("generic 4294967295 void ()").unwrap();
        assert_eq!(m.generic_param_count, u32::MAX);
        assert_eq!(
            parse_method_sig("generic 1 void ()")
                .unwrap()
                .generic_param_count,
            1
        );
        assert_eq!(at(parse_method_sig("generic 0 void ()")).0, 8);
        assert_eq!(at(parse_method_sig("generic 4294967296 void ()")).0, 8);
        assert_eq!(at(parse_method_sig("generic -1 void ()")).0, 8);
        assert_eq!(at(parse_method_sig("generic void ()")).0, 8);
    }

    #[test]
    fn array_dimensions_at_their_bounds() {
        let shape = |text: &str| match roundtrip(text) {
            TypeSig::Array(a) => (a.rank, a.sizes, a.lo_bounds),
            other => panic!("{other:?}"),
        };
        assert_eq!(
            roundtrip("int32[]"),
            TypeSig::SzArray(Box::new(TypeSig::I4))
        );
        assert_eq!(shape("int32[...]"), (1, vec![], vec![]));
        assert_eq!(
            roundtrip("int32[ ]"),
            TypeSig::SzArray(Box::new(TypeSig::I4))
        );
        assert_eq!(shape("int32[,]"), (2, vec![], vec![]));
        assert_eq!(shape("int32[...,...,]"), (3, vec![], vec![]));
        assert_eq!(shape("int32[4294967295]"), (1, vec![u32::MAX], vec![]));
        assert_eq!(shape("int32[0]"), (1, vec![0], vec![]));
        assert_eq!(shape("int32[-2147483648...]"), (1, vec![], vec![i32::MIN]));
        assert_eq!(
            shape("int32[2147483647...2147483647]"),
            (1, vec![1], vec![i32::MAX])
        );
        assert_eq!(shape("int32[5...4]"), (1, vec![0], vec![5]));
        assert_eq!(shape("int32[0...4294967294]"), (1, vec![u32::MAX], vec![0]));
        assert_eq!(
            shape("int32[-2147483648...2147483646]"),
            (1, vec![u32::MAX], vec![i32::MIN])
        );
        assert_eq!(shape("int32[3,,]"), (3, vec![3], vec![]));
        assert_eq!(shape("int32[0...,,]"), (3, vec![], vec![0]));
        assert_eq!(shape("int32[1...2, 3...]"), (2, vec![2], vec![1, 3]));
        assert_eq!(shape("int32[7, 8, ...]"), (3, vec![7, 8], vec![]));
        // Out of range.
        assert_eq!(at(parse_type("int32[4294967296]")).0, 6);
        assert_eq!(at(parse_type("int32[-1]")).0, 6);
        assert_eq!(at(parse_type("int32[2147483648...]")).0, 6);
        assert_eq!(at(parse_type("int32[-2147483649...]")).0, 6);
        assert_eq!(at(parse_type("int32[0...4294967295]")).0, 10);
        assert_eq!(at(parse_type("int32[5...3]")).0, 10);
        assert_eq!(at(parse_type("int32[0...9223372036854775807]")).0, 10);
        // Sizes and bounds of leading dimensions only.
        assert_eq!(at(parse_type("int32[,5]")).0, 7);
        assert_eq!(at(parse_type("int32[1,...,5]")).0, 12);
        assert_eq!(at(parse_type("int32[5,0...]")).0, 8);
        assert_eq!(at(parse_type("int32[0...,0...5]")).0, 11);
        // Malformed shapes.
        assert_eq!(at(parse_type("int32[...5]")).0, 9);
        assert_eq!(at(parse_type("int32[")).0, 6);
        assert_eq!(at(parse_type("int32[5")).0, 7);
        assert_eq!(at(parse_type("int32[int32]")).0, 6);
    }

    /// Trees exactly [`MAX_NESTING`] levels deep parse (and encode); one more level
    /// fails with [`Error::TooDeep`] in text as in bytes, for every way of nesting.
    #[test]
    fn nesting_at_the_limit() {
        let n = MAX_NESTING;
        /// A text nesting as many levels as it is given, and its name.
        type Shape = (fn(usize) -> String, &'static str);
        let shapes: Vec<Shape> = vec![
            (|k| format!("int32{}", "[]".repeat(k - 1)), "suffixes"),
            (
                |k| format!("int32{}", " modopt(0x01000001)".repeat(k - 1)),
                "modifiers",
            ),
            (
                |k| {
                    format!(
                        "{}int32{}",
                        "class 0x01000001<".repeat(k - 1),
                        ">".repeat(k - 1)
                    )
                },
                "generic",
            ),
            (
                |k| format!("{}void{}", "method ".repeat(k - 1), " *()".repeat(k - 1)),
                "fnptr return",
            ),
            (
                |k| {
                    format!(
                        "{}int32{}",
                        "method void *(".repeat(k - 1),
                        ")".repeat(k - 1)
                    )
                },
                "fnptr param",
            ),
            (
                // Half generic nesting, half suffixes on the innermost argument.
                |k| {
                    let g = k / 2;
                    format!(
                        "{}int32{}{}",
                        "valuetype 0x02000001<".repeat(g),
                        "*".repeat(k - 1 - g),
                        ">".repeat(g)
                    )
                },
                "mixed inner",
            ),
            (
                // Suffixes after each generic instantiation deepen it.
                |k| {
                    let g = (k - 1) / 2;
                    format!(
                        "{}int32{}{}",
                        "valuetype 0x02000001<".repeat(g),
                        ">&".repeat(g),
                        "[]".repeat(k - 1 - 2 * g)
                    )
                },
                "mixed outer",
            ),
        ];
        for (make, name) in &shapes {
            let ok = make(n);
            let t = parse_type(&ok).unwrap_or_else(|e| panic!("{name}: {e}"));
            t.to_bytes().unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(parse_type(&TypeText(&t).to_string()), Ok(t), "{name}");
            let deep = make(n + 1);
            match parse_type(&deep) {
                Err(Error::TooDeep {
                    offset: Some(_),
                    limit,
                }) => assert_eq!(limit, MAX_NESTING),
                other => panic!("{name}: {other:?}"),
            }
        }
        // The error is where the level too many starts: here the last suffix.
        let deep = format!("int32{}", "[]".repeat(n));
        assert_eq!(at(parse_type(&deep)).0, 5 + 2 * (n - 1));
        // In a method signature, every type may nest the full depth.
        let t = format!("int32{}", "[]".repeat(n - 1));
        parse_method_sig(&format!("{t} ({t}, ..., {t})"))
            .unwrap()
            .to_bytes()
            .unwrap();
        assert!(matches!(
            parse_method_sig(&format!("{t}[] ()")),
            Err(Error::TooDeep { .. })
        ));
        assert!(matches!(
            parse_types(&format!("{t}, {t}[]")),
            Err(Error::TooDeep { .. })
        ));
    }

    #[test]
    fn fn_ptr_star_before_parameters() {
        let t = roundtrip("method int32* *()");
        let TypeSig::FnPtr(m) = &t else { panic!() };
        assert_eq!(m.return_type, TypeSig::Ptr(Box::new(TypeSig::I4)));
        let t = roundtrip("method void * * (int32)*");
        let TypeSig::Ptr(inner) = &t else { panic!() };
        let TypeSig::FnPtr(m) = &**inner else {
            panic!()
        };
        assert_eq!(m.return_type, TypeSig::Ptr(Box::new(TypeSig::Void)));
        let m = parse_method_sig("int32* (int32)").unwrap();
        assert_eq!(m.return_type, TypeSig::Ptr(Box::new(TypeSig::I4)));
        assert_eq!(at(parse_type("method void (int32)")).0, 12);
        assert_eq!(at(parse_type("method void *")).0, 13);
    }
}

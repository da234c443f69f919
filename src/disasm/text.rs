//! The lexical side of listings: identifiers quoted as ilasm needs them, string
//! literals, floating-point literals.

use crate::opcode::OpCode;
use std::fmt::Write;

/// Words ilasm reads as keywords, which it therefore needs quoted when they are names
/// (besides the instruction names, which [`is_keyword`] checks through the opcode
/// table).
const KEYWORDS: &[&str] = &[
    "abstract",
    "aggressiveinlining",
    "algorithm",
    "alignment",
    "ansi",
    "any",
    "array",
    "as",
    "assembly",
    "assert",
    "at",
    "auto",
    "autochar",
    "beforefieldinit",
    "blob",
    "blob_object",
    "bool",
    "bstr",
    "bytearray",
    "byvalstr",
    "callmostderived",
    "carray",
    "catch",
    "cdecl",
    "cf",
    "char",
    "cil",
    "class",
    "clsid",
    "compilercontrolled",
    "currency",
    "custom",
    "date",
    "decimal",
    "default",
    "demand",
    "deny",
    "error",
    "explicit",
    "extends",
    "extern",
    "false",
    "famandassem",
    "family",
    "famorassem",
    "fastcall",
    "fault",
    "field",
    "filetime",
    "filter",
    "final",
    "finally",
    "fixed",
    "flags",
    "float",
    "float32",
    "float64",
    "forwardref",
    "fromunmanaged",
    "handler",
    "hidebysig",
    "hresult",
    "idispatch",
    "il",
    "illegal",
    "implements",
    "implicitcom",
    "implicitres",
    "import",
    "in",
    "inheritcheck",
    "init",
    "initonly",
    "instance",
    "int",
    "int16",
    "int32",
    "int64",
    "int8",
    "interface",
    "internalcall",
    "iunknown",
    "lasterr",
    "lcid",
    "legacy",
    "linkcheck",
    "literal",
    "lpstr",
    "lpstruct",
    "lptstr",
    "lpvoid",
    "lpwstr",
    "managed",
    "marshal",
    "mdtoken",
    "method",
    "modopt",
    "modreq",
    "native",
    "nested",
    "newslot",
    "noappdomain",
    "noinlining",
    "nomachine",
    "nomangle",
    "nometadata",
    "noncasdemand",
    "noncasinheritance",
    "noncaslinkdemand",
    "noplatform",
    "noprocess",
    "not",
    "not_in_gc_heap",
    "notremotable",
    "notserialized",
    "null",
    "nullref",
    "object",
    "objectref",
    "opt",
    "optil",
    "out",
    "permitonly",
    "pinned",
    "pinvokeimpl",
    "preservesig",
    "private",
    "privatescope",
    "protected",
    "public",
    "record",
    "refany",
    "reqmin",
    "reqopt",
    "reqrefuse",
    "reqsecobj",
    "request",
    "retargetable",
    "retval",
    "rtspecialname",
    "runtime",
    "safearray",
    "sealed",
    "sequential",
    "serializable",
    "specialname",
    "static",
    "stdcall",
    "storage",
    "stored_object",
    "stream",
    "streamed_object",
    "strict",
    "string",
    "struct",
    "synchronized",
    "syschar",
    "sysstring",
    "tbstr",
    "thiscall",
    "tls",
    "to",
    "true",
    "type",
    "typedref",
    "uint",
    "uint16",
    "uint32",
    "uint64",
    "uint8",
    "unicode",
    "unmanaged",
    "unmanagedexp",
    "unsigned",
    "unused",
    "userdefined",
    "value",
    "valuetype",
    "vararg",
    "variant",
    "vector",
    "virtual",
    "void",
    "wchar",
    "winapi",
    "with",
    "wrapper",
];

/// Whether ilasm reads `word` as a keyword or an instruction name.
fn is_keyword(word: &str) -> bool {
    KEYWORDS.binary_search(&word).is_ok() || OpCode::from_name(word).is_some()
}

/// Whether `c` may start an ilasm identifier.
fn is_id_start(c: char) -> bool {
    c.is_ascii_alphabetic()
        || matches!(c, '_' | '$' | '@' | '`' | '?')
        || (!c.is_ascii() && c.is_alphabetic())
}

/// Whether `c` may continue an ilasm identifier.
fn is_id_char(c: char) -> bool {
    is_id_start(c) || c.is_ascii_digit() || (!c.is_ascii() && c.is_alphanumeric())
}

/// Whether `s` is an identifier ilasm reads as such, unquoted.
fn is_plain_id(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(is_id_start) && chars.all(is_id_char) && !is_keyword(s)
}

/// Writes `s` in single quotes, with `\` and `'` escaped.
fn write_quoted(out: &mut String, s: &str) {
    out.push('\'');
    for c in s.chars() {
        if matches!(c, '\\' | '\'') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('\'');
}

/// Writes a simple name (a generic parameter, an assembly): as is when it is an
/// identifier, else quoted.
pub(super) fn write_id(out: &mut String, s: &str) {
    if is_plain_id(s) {
        out.push_str(s);
    } else {
        write_quoted(out, s);
    }
}

/// Writes a dotted name (a type's full name, a member's name such as
/// `System.IDisposable.Dispose`): as is when every dot-separated part is an
/// identifier, else the whole name quoted. `.ctor` and `.cctor` are written as is.
pub(super) fn write_dotted(out: &mut String, s: &str) {
    if s == ".ctor" || s == ".cctor" || s.split('.').all(is_plain_id) {
        out.push_str(s);
    } else {
        write_quoted(out, s);
    }
}

/// Whether ilasm can write `units` as a quoted string literal: well-formed UTF-16 and
/// no control characters other than the ones with a short escape.
fn is_quotable(units: &[u16]) -> bool {
    char::decode_utf16(units.iter().copied()).all(|c| match c {
        Ok('\t' | '\n' | '\r') => true,
        Ok(c) => !c.is_control(),
        Err(_) => false,
    })
}

/// Writes a user string as ilasm reads it: a quoted literal (`"a\"b\n"`, other
/// characters as they are) when [`is_quotable`], else `bytearray (41 00 ...)`, its
/// UTF-16LE bytes (an unpaired surrogate, a control character ilasm cannot escape).
pub(super) fn write_user_string(out: &mut String, units: &[u16]) {
    if is_quotable(units) {
        out.push('"');
        for c in char::decode_utf16(units.iter().copied()).flatten() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                c => out.push(c),
            }
        }
        out.push('"');
    } else {
        out.push_str("bytearray (");
        let bytes = units.iter().flat_map(|u| u.to_le_bytes());
        write_bytes(out, bytes);
        out.push(')');
    }
}

/// Writes bytes as space-separated hex pairs.
pub(super) fn write_bytes(out: &mut String, bytes: impl IntoIterator<Item = u8>) {
    for (i, b) in bytes.into_iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        let _ = write!(out, "{b:02X}");
    }
}

/// Writes a floating-point operand: a decimal literal that reads back to the same
/// value (always with a `.` so that ilasm reads a float), or, for infinities and NaNs,
/// `(bytes)` as ilasm writes them.
pub(super) fn write_float(out: &mut String, text: String, finite: bool, bytes: &[u8]) {
    if !finite {
        out.push('(');
        write_bytes(out, bytes.iter().copied());
        out.push(')');
        return;
    }
    match text.find(['e', 'E']) {
        Some(e) if !text[..e].contains('.') => {
            out.push_str(&text[..e]);
            out.push_str(".0");
            out.push_str(&text[e..]);
        }
        _ => out.push_str(&text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keywords_are_sorted_for_the_binary_search() {
        assert!(KEYWORDS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn names_are_quoted_where_ilasm_needs_it() {
        let id = |s: &str| {
            let mut out = String::new();
            write_id(&mut out, s);
            out
        };
        let dotted = |s: &str| {
            let mut out = String::new();
            write_dotted(&mut out, s);
            out
        };
        assert_eq!(id("T"), "T");
        assert_eq!(id("value"), "'value'");
        assert_eq!(id("add"), "'add'");
        assert_eq!(id("Add"), "Add");
        assert_eq!(id("<T>"), "'<T>'");
        assert_eq!(id("it's"), "'it\\'s'");
        assert_eq!(id(""), "''");
        assert_eq!(
            dotted("System.Collections.Generic.List`1"),
            "System.Collections.Generic.List`1"
        );
        assert_eq!(dotted(".ctor"), ".ctor");
        assert_eq!(dotted("<>c"), "'<>c'");
        assert_eq!(
            dotted("System.IDisposable.Dispose"),
            "System.IDisposable.Dispose"
        );
        assert_eq!(dotted("A..B"), "'A..B'");
        assert_eq!(dotted("Grüße"), "Grüße");
    }

    #[test]
    fn strings_are_escaped_or_written_as_bytes() {
        let s = |units: &[u16]| {
            let mut out = String::new();
            write_user_string(&mut out, units);
            out
        };
        let utf16 = |s: &str| s.encode_utf16().collect::<Vec<_>>();
        assert_eq!(s(&utf16("a\"b\\\n\r\t")), r#""a\"b\\\n\r\t""#);
        assert_eq!(s(&utf16("héllo 😀")), "\"héllo 😀\"");
        assert_eq!(s(&[]), "\"\"");
        assert_eq!(s(&[0x41, 0xD800]), "bytearray (41 00 00 D8)");
        assert_eq!(s(&[0x41, 0x00]), "bytearray (41 00 00 00)");
        assert_eq!(s(&[0x85]), "bytearray (85 00)");
    }

    #[test]
    fn floats_always_read_back_as_floats() {
        let f = |text: &str| {
            let mut out = String::new();
            write_float(&mut out, text.to_string(), true, &[]);
            out
        };
        assert_eq!(f("1.5"), "1.5");
        assert_eq!(f("1e-5"), "1.0e-5");
        assert_eq!(f("1.5e20"), "1.5e20");
        let mut out = String::new();
        write_float(&mut out, String::new(), false, &[0, 0, 0xC0, 0x7F]);
        assert_eq!(out, "(00 00 C0 7F)");
    }
}

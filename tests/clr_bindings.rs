//! The `clr` bindings against the runtime's headers.
//!
//! `tests/data/clr/headers.spec` records, for every interface of `corprof.idl` and the
//! metadata interfaces of `cor.h`, the parent, the IID and the methods in slot order with
//! their parameter counts; every enumeration of `corprof.idl` with its values; and the
//! `CORPROF_E_*` codes of `corerror.h`. It is produced by the small parsers below from the
//! upstream files (see `tests/data/clr/README.md`), and every binding is compared with
//! it: a swapped, missing or extra slot, a wrong parent, IID, parameter count, flag or
//! error code fails here.
//!
//! With `ILREWRITE_CLR_HEADERS=DIR` (a directory holding `corprof.idl`, `cor.h` and
//! `corerror.h`), `spec_is_what_the_headers_say` parses the headers again and compares the
//! result with the committed spec; `ILREWRITE_BLESS=1` rewrites the spec instead.
#![cfg(feature = "clr")]

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use bitflags::Flags;
use ilrewrite::clr::sys::*;

// ------------------------------------------------------------------------------------
// The spec: what the headers declare.

/// One interface as a header declares it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Interface {
    name: String,
    parent: String,
    iid: Guid,
    /// Own methods in slot order, with their parameter counts (without `this`).
    methods: Vec<(String, usize)>,
}

/// One `typedef enum { ... } NAME;` with its evaluated values, in declaration order.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Enum {
    name: String,
    values: Vec<(String, u32)>,
}

#[derive(Debug, Default, PartialEq, Eq)]
struct Spec {
    interfaces: Vec<Interface>,
    enums: Vec<Enum>,
    hresults: Vec<(String, u32)>,
}

/// The interfaces of `cor.h` the spec records (the file declares more).
const COR_H_INTERFACES: &[&str] = &[
    "IMetaDataImport",
    "IMetaDataImport2",
    "IMetaDataEmit",
    "IMetaDataEmit2",
    "IMetaDataAssemblyImport",
    "IMetaDataAssemblyEmit",
];

const SPEC_HEADER: &str = "\
# The CLR profiling and metadata interfaces as the runtime's headers declare them:
# `interface NAME : PARENT IID` then one `  METHOD PARAMS` line per own method in slot
# order; `enum NAME` then `  VALUE 0xBITS`; `hresult NAME 0xBITS`.
# Written by tests/clr_bindings.rs (ILREWRITE_CLR_HEADERS=DIR ILREWRITE_BLESS=1) from
# corprof.idl, cor.h and corerror.h; README.md names their origin.
";

impl Spec {
    fn render(&self) -> String {
        let mut out = String::from(SPEC_HEADER);
        for i in &self.interfaces {
            writeln!(out, "interface {} : {} {}", i.name, i.parent, i.iid).unwrap();
            for (method, params) in &i.methods {
                writeln!(out, "  {method} {params}").unwrap();
            }
        }
        for e in &self.enums {
            writeln!(out, "enum {}", e.name).unwrap();
            for (value, bits) in &e.values {
                writeln!(out, "  {value} 0x{bits:08X}").unwrap();
            }
        }
        for (name, bits) in &self.hresults {
            writeln!(out, "hresult {name} 0x{bits:08X}").unwrap();
        }
        out
    }

    fn parse(text: &str) -> Spec {
        let hex = |s: &str| u32::from_str_radix(s.trim_start_matches("0x"), 16).unwrap();
        let mut spec = Spec::default();
        // Which list the indented lines belong to.
        let mut in_enum = false;
        for line in text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        {
            let words: Vec<&str> = line.split_whitespace().collect();
            if line.starts_with("  ") {
                if in_enum {
                    spec.enums
                        .last_mut()
                        .unwrap()
                        .values
                        .push((words[0].to_string(), hex(words[1])));
                } else {
                    let params = words[1].parse().unwrap();
                    spec.interfaces
                        .last_mut()
                        .unwrap()
                        .methods
                        .push((words[0].to_string(), params));
                }
                continue;
            }
            match words.as_slice() {
                ["interface", name, ":", parent, iid] => {
                    in_enum = false;
                    spec.interfaces.push(Interface {
                        name: name.to_string(),
                        parent: parent.to_string(),
                        iid: Guid::parse(iid).unwrap(),
                        methods: Vec::new(),
                    });
                }
                ["enum", name] => {
                    in_enum = true;
                    spec.enums.push(Enum {
                        name: name.to_string(),
                        values: Vec::new(),
                    });
                }
                ["hresult", name, bits] => spec.hresults.push((name.to_string(), hex(bits))),
                _ => panic!("unexpected spec line {line:?}"),
            }
        }
        spec
    }

    fn interface(&self, name: &str) -> Option<&Interface> {
        self.interfaces.iter().find(|i| i.name == name)
    }

    fn enumeration(&self, name: &str) -> Option<&Enum> {
        self.enums.iter().find(|e| e.name == name)
    }

    /// Slots of the whole vtable of `name`, IUnknown's three included.
    fn slots(&self, name: &str) -> Option<usize> {
        if name == "IUnknown" {
            return Some(3);
        }
        let i = self.interface(name)?;
        Some(self.slots(&i.parent)? + i.methods.len())
    }

    fn from_headers(corprof_idl: &str, cor_h: &str, corerror_h: &str) -> Spec {
        let (mut interfaces, enums) = parse_idl(corprof_idl);
        let metadata = parse_cor_h(cor_h);
        for name in COR_H_INTERFACES {
            let found = metadata.iter().find(|i| i.name == *name);
            interfaces.push(
                found
                    .unwrap_or_else(|| panic!("cor.h declares no {name}"))
                    .clone(),
            );
        }
        let hresults = parse_corerror(corerror_h)
            .into_iter()
            .filter(|(name, _)| name.starts_with("CORPROF_E_"))
            .collect();
        Spec {
            interfaces,
            enums,
            hresults,
        }
    }
}

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/clr")
}

fn committed_spec() -> Spec {
    let path = data_dir().join("headers.spec");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    Spec::parse(&text)
}

// ------------------------------------------------------------------------------------
// A small C/IDL scanner: enough for the declarations of these three files.

/// `src` without `//` and `/* */` comments (string literals kept, newlines kept).
fn strip_comments(src: &str) -> String {
    let bytes = src.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match (bytes[i], bytes.get(i + 1)) {
            (b'/', Some(b'/')) => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            (b'/', Some(b'*')) => {
                i += 2;
                while i < bytes.len() && !(bytes[i] == b'*' && bytes.get(i + 1) == Some(&b'/')) {
                    if bytes[i] == b'\n' {
                        out.push(b'\n');
                    }
                    i += 1;
                }
                i += 2;
                out.push(b' ');
            }
            (b'"', _) => {
                out.push(b'"');
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    if bytes[i] == b'\\' {
                        out.push(bytes[i]);
                        i += 1;
                    }
                    out.push(bytes[i]);
                    i += 1;
                }
                out.push(b'"');
                i += 1;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8(out).unwrap()
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Byte offsets of `word` standing alone (not inside a longer identifier).
fn find_words<'a>(src: &'a str, word: &'a str) -> impl Iterator<Item = usize> + 'a {
    let bytes = src.as_bytes();
    src.match_indices(word)
        .map(|(at, _)| at)
        .filter(move |&at| {
            let before = at.checked_sub(1).map(|b| bytes[b]);
            let after = bytes.get(at + word.len()).copied();
            !before.is_some_and(is_ident) && !after.is_some_and(is_ident)
        })
}

/// The identifier starting at `at` after any whitespace, and the offset after it.
fn ident_at(src: &str, at: usize) -> Option<(&str, usize)> {
    let bytes = src.as_bytes();
    let start = at + src[at..].len() - src[at..].trim_start().len();
    let mut end = start;
    while end < bytes.len() && is_ident(bytes[end]) {
        end += 1;
    }
    (end > start).then(|| (&src[start..end], end))
}

/// The offset of the first non-whitespace byte at or after `at`.
fn skip_ws(src: &str, at: usize) -> usize {
    at + src[at..].len() - src[at..].trim_start().len()
}

/// For the opening bracket at `open`, the offset of its closing bracket; strings are
/// skipped and `()`, `[]`, `{}` nest.
fn matching(src: &str, open: usize) -> usize {
    let bytes = src.as_bytes();
    let mut depth = 0usize;
    let mut i = open;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                i += 1;
                while bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => {
                depth -= 1;
                if depth == 0 {
                    return i;
                }
            }
            _ => {}
        }
        i += 1;
    }
    panic!(
        "unbalanced bracket at {open}: {:?}",
        &src[open..(open + 60).min(src.len())]
    );
}

/// `text` split at the separators `sep` that are outside brackets and strings.
fn split_top(text: &str, sep: u8) -> Vec<&str> {
    let bytes = text.as_bytes();
    let mut parts = Vec::new();
    let (mut depth, mut start, mut i) = (0usize, 0, 0);
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                i += 1;
                while bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth -= 1,
            c if c == sep && depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    parts.push(&text[start..]);
    parts
}

/// Parameters in a parenthesized list's inside: `()` and `(void)` have none.
fn param_count(inside: &str) -> usize {
    match inside.trim() {
        "" | "void" => 0,
        params => split_top(params, b',').len(),
    }
}

/// The IDL's interfaces (`[ ... uuid(...) ... ] interface Name : Parent { methods }`) and
/// enumerations (`typedef enum [tag] { ... } Name;`), in file order.
fn parse_idl(src: &str) -> (Vec<Interface>, Vec<Enum>) {
    let src = strip_comments(src);
    let mut interfaces = Vec::new();
    for at in find_words(&src, "interface") {
        let (name, after_name) = ident_at(&src, at + "interface".len()).unwrap();
        let colon = skip_ws(&src, after_name);
        if src.as_bytes()[colon] != b':' {
            continue; // a forward declaration
        }
        let (parent, after_parent) = ident_at(&src, colon + 1).unwrap();
        let open = skip_ws(&src, after_parent);
        assert_eq!(src.as_bytes()[open], b'{', "interface {name}");
        // The attribute block is the bracket right before the keyword.
        let attrs_end = src[..at].trim_end();
        assert!(
            attrs_end.ends_with(']'),
            "interface {name} has no attribute block"
        );
        let attrs_open = attrs_end.rfind('[').unwrap();
        let attrs = &src[attrs_open..attrs_end.len()];
        let uuid = attrs
            .split("uuid(")
            .nth(1)
            .and_then(|s| s.split(')').next());
        let iid =
            Guid::parse(uuid.unwrap_or_else(|| panic!("interface {name} has no uuid"))).unwrap();
        let close = matching(&src, open);
        let mut methods = Vec::new();
        for statement in split_top(&src[open + 1..close], b';') {
            let statement = statement.trim();
            if statement.is_empty() {
                continue;
            }
            let paren = statement
                .find('(')
                .unwrap_or_else(|| panic!("{name}: {statement:?}"));
            let method = statement[..paren].split_whitespace().last().unwrap();
            let end = matching(statement, paren);
            assert_eq!(statement[end + 1..].trim(), "", "{name}::{method}");
            methods.push((method.to_string(), param_count(&statement[paren + 1..end])));
        }
        interfaces.push(Interface {
            name: name.to_string(),
            parent: parent.to_string(),
            iid,
            methods,
        });
    }

    let mut enums = Vec::new();
    for at in find_words(&src, "typedef") {
        let Some((word, after_enum)) = ident_at(&src, at + "typedef".len()) else {
            continue;
        };
        if word != "enum" {
            continue;
        }
        let open = src[after_enum..].find('{').unwrap() + after_enum;
        let close = matching(&src, open);
        let (name, _) = ident_at(&src, close + 1).unwrap();
        let mut values: Vec<(String, u32)> = Vec::new();
        let mut next = 0u32;
        for item in split_top(&src[open + 1..close], b',') {
            let item = item.trim();
            if item.is_empty() {
                continue;
            }
            let (value, bits) = match item.split_once('=') {
                None => (item, next),
                Some((value, expr)) => (value.trim(), eval_enum_expr(expr, &values)),
            };
            values.push((value.to_string(), bits));
            next = bits.wrapping_add(1);
        }
        enums.push(Enum {
            name: name.to_string(),
            values,
        });
    }
    (interfaces, enums)
}

/// `0x..`, decimal (possibly negative) and earlier names of the same enum, or-ed with `|`.
fn eval_enum_expr(expr: &str, earlier: &[(String, u32)]) -> u32 {
    split_top(expr, b'|')
        .into_iter()
        .map(|term| {
            let term = term.trim();
            let hex = term.strip_prefix("0x").or_else(|| term.strip_prefix("0X"));
            if let Some(hex) = hex {
                u32::from_str_radix(hex, 16).unwrap()
            } else if let Ok(n) = term.parse::<i64>() {
                n as u32
            } else {
                let found = earlier.iter().find(|(name, _)| name == term);
                found
                    .unwrap_or_else(|| panic!("unknown enum term {term:?}"))
                    .1
            }
        })
        .fold(0, |acc, bits| acc | bits)
}

/// `cor.h`'s interfaces: `DECLARE_INTERFACE_(Name, Parent) { STDMETHOD(M)(...) PURE; ... }`
/// (also `STDMETHOD_(type, M)`), with the IIDs of its `EXTERN_GUID(IID_Name, ...)` lines.
fn parse_cor_h(src: &str) -> Vec<Interface> {
    let src = strip_comments(src);
    let mut iids = Vec::new();
    for at in find_words(&src, "EXTERN_GUID") {
        let open = skip_ws(&src, at + "EXTERN_GUID".len());
        let close = matching(&src, open);
        let args: Vec<&str> = split_top(&src[open + 1..close], b',')
            .into_iter()
            .map(str::trim)
            .collect();
        assert_eq!(args.len(), 12, "EXTERN_GUID({})", args[0]);
        let num = |s: &str| {
            u32::from_str_radix(s.trim_start_matches("0x").trim_start_matches("0X"), 16).unwrap()
        };
        let mut data4 = [0u8; 8];
        for (b, arg) in data4.iter_mut().zip(&args[4..]) {
            *b = u8::try_from(num(arg)).unwrap();
        }
        let guid = Guid::new(
            num(args[1]),
            num(args[2]) as u16,
            num(args[3]) as u16,
            data4,
        );
        iids.push((args[0].to_string(), guid));
    }

    let mut interfaces = Vec::new();
    for at in find_words(&src, "DECLARE_INTERFACE_") {
        let open = skip_ws(&src, at + "DECLARE_INTERFACE_".len());
        let close = matching(&src, open);
        let args: Vec<&str> = split_top(&src[open + 1..close], b',')
            .into_iter()
            .map(str::trim)
            .collect();
        let [name, parent] = args[..] else {
            panic!("DECLARE_INTERFACE_{args:?}")
        };
        let body_open = skip_ws(&src, close + 1);
        assert_eq!(src.as_bytes()[body_open], b'{', "interface {name}");
        let body_close = matching(&src, body_open);
        let body = &src[body_open + 1..body_close];
        let mut methods = Vec::new();
        for statement in split_top(body, b';') {
            let statement = statement.trim();
            if statement.is_empty() {
                continue;
            }
            // STDMETHOD(Name)(params) PURE  or  STDMETHOD_(type, Name)(params) PURE
            let rest = statement
                .strip_prefix("STDMETHOD")
                .unwrap_or_else(|| panic!("{name}: {statement:?}"));
            let rest = rest.strip_prefix('_').unwrap_or(rest);
            let name_open = skip_ws(rest, 0);
            let name_close = matching(rest, name_open);
            let method = split_top(&rest[name_open + 1..name_close], b',')
                .last()
                .unwrap()
                .trim()
                .to_string();
            let params_open = skip_ws(rest, name_close + 1);
            let params_close = matching(rest, params_open);
            assert_eq!(rest[params_close + 1..].trim(), "PURE", "{name}::{method}");
            methods.push((method, param_count(&rest[params_open + 1..params_close])));
        }
        let iid_name = format!("IID_{name}");
        let iid = iids.iter().find(|(n, _)| *n == iid_name).map(|&(_, g)| g);
        // Interfaces without an IID in the file are not recorded.
        if let Some(iid) = iid {
            interfaces.push(Interface {
                name: name.to_string(),
                parent: parent.to_string(),
                iid,
                methods,
            });
        }
    }
    interfaces
}

/// `corerror.h`'s `#define NAME EMAKEHR(0x....)` / `SMAKEHR(...)` codes.
fn parse_corerror(src: &str) -> Vec<(String, u32)> {
    let src = strip_comments(src);
    let mut codes = Vec::new();
    for line in src.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        let ["#define", name, value] = words[..] else {
            continue;
        };
        let (severity, inner) = if let Some(inner) = value.strip_prefix("EMAKEHR(") {
            (0x8000_0000u32, inner)
        } else if let Some(inner) = value.strip_prefix("SMAKEHR(") {
            (0, inner)
        } else {
            continue;
        };
        let Some(code) = inner.strip_suffix(')').and_then(|c| c.strip_prefix("0x")) else {
            continue;
        };
        codes.push((
            name.to_string(),
            severity | 0x0013_0000 | u32::from_str_radix(code, 16).unwrap(),
        ));
    }
    codes
}

// ------------------------------------------------------------------------------------
// The bound side.

/// What a bound vtable says about itself.
struct Bound {
    name: &'static str,
    parent: Option<&'static str>,
    iid: Guid,
    methods: &'static [&'static str],
    params: &'static [&'static [&'static str]],
    size: usize,
}

fn bound<V: ComVtable>() -> Bound {
    Bound {
        name: V::NAME,
        parent: V::PARENT,
        iid: V::IID,
        methods: V::METHODS,
        params: V::PARAMS,
        size: size_of::<V>(),
    }
}

/// Every vtable the crate binds from the headers.
fn bound_interfaces() -> Vec<Bound> {
    vec![
        bound::<ICorProfilerCallbackVtbl>(),
        bound::<ICorProfilerCallback2Vtbl>(),
        bound::<ICorProfilerCallback3Vtbl>(),
        bound::<ICorProfilerCallback4Vtbl>(),
        bound::<ICorProfilerCallback5Vtbl>(),
        bound::<ICorProfilerCallback6Vtbl>(),
        bound::<ICorProfilerCallback7Vtbl>(),
        bound::<ICorProfilerCallback8Vtbl>(),
        bound::<ICorProfilerCallback9Vtbl>(),
        bound::<ICorProfilerCallback10Vtbl>(),
        bound::<ICorProfilerCallback11Vtbl>(),
        bound::<ICorProfilerInfoVtbl>(),
        bound::<ICorProfilerInfo2Vtbl>(),
        bound::<ICorProfilerInfo3Vtbl>(),
        bound::<ICorProfilerInfo4Vtbl>(),
        bound::<ICorProfilerInfo5Vtbl>(),
        bound::<ICorProfilerInfo6Vtbl>(),
        bound::<ICorProfilerInfo7Vtbl>(),
        bound::<ICorProfilerInfo8Vtbl>(),
        bound::<ICorProfilerInfo9Vtbl>(),
        bound::<ICorProfilerInfo10Vtbl>(),
        bound::<ICorProfilerInfo11Vtbl>(),
        bound::<ICorProfilerInfo12Vtbl>(),
        bound::<ICorProfilerInfo13Vtbl>(),
        bound::<ICorProfilerInfo14Vtbl>(),
        bound::<ICorProfilerInfo15Vtbl>(),
        bound::<ICorProfilerFunctionControlVtbl>(),
        bound::<IMethodMallocVtbl>(),
        bound::<ICorProfilerAssemblyReferenceProviderVtbl>(),
        bound::<IMetaDataImportVtbl>(),
        bound::<IMetaDataImport2Vtbl>(),
        bound::<IMetaDataEmitVtbl>(),
        bound::<IMetaDataEmit2Vtbl>(),
        bound::<IMetaDataAssemblyImportVtbl>(),
        bound::<IMetaDataAssemblyEmitVtbl>(),
    ]
}

/// Every difference between one binding and the spec, as readable lines.
fn compare(b: &Bound, spec: &Spec) -> Vec<String> {
    let mut problems = Vec::new();
    let Some(i) = spec.interface(b.name) else {
        return vec![format!("{}: not declared by the headers", b.name)];
    };
    if b.parent != Some(i.parent.as_str()) {
        problems.push(format!(
            "{}: parent {:?}, the header says {}",
            b.name, b.parent, i.parent
        ));
    }
    if b.iid != i.iid {
        problems.push(format!(
            "{}: IID {}, the header says {}",
            b.name, b.iid, i.iid
        ));
    }
    let names: Vec<&str> = i.methods.iter().map(|(m, _)| m.as_str()).collect();
    if b.methods != names.as_slice() {
        let first = (0..b.methods.len().max(names.len()))
            .find(|&k| b.methods.get(k) != names.get(k))
            .unwrap();
        problems.push(format!(
            "{}: {} methods, the header has {}; first difference at own slot {first}: {:?} vs {:?}",
            b.name,
            b.methods.len(),
            names.len(),
            b.methods.get(first),
            names.get(first)
        ));
    } else {
        for ((method, params), bound_params) in i.methods.iter().zip(b.params) {
            if *params != bound_params.len() {
                problems.push(format!(
                    "{}::{method}: {} parameters, the header has {params}",
                    b.name,
                    bound_params.len()
                ));
            }
        }
    }
    match spec.slots(b.name) {
        Some(slots) if slots * size_of::<usize>() == b.size => {}
        slots => problems.push(format!(
            "{}: vtable of {} bytes, the header gives {slots:?} slots",
            b.name, b.size
        )),
    }
    problems
}

// ------------------------------------------------------------------------------------
// Tests.

#[test]
fn vtables_match_the_headers() {
    let spec = committed_spec();
    let bound = bound_interfaces();
    let mut problems: Vec<String> = bound.iter().flat_map(|b| compare(b, &spec)).collect();
    // Every profiling interface of a family the runtime walks (Callback*, Info*) is bound.
    for i in &spec.interfaces {
        let family =
            i.name.starts_with("ICorProfilerCallback") || i.name.starts_with("ICorProfilerInfo");
        if family && !bound.iter().any(|b| b.name == i.name) {
            problems.push(format!("{}: declared by the header, not bound", i.name));
        }
    }
    assert!(
        problems.is_empty(),
        "{} differences:\n{}",
        problems.len(),
        problems.join("\n")
    );
    // What CoreCLR 3.1 uses: Callback9 and Info11 lie within what is checked.
    assert_eq!(
        spec.slots("ICorProfilerCallback9"),
        Some(3 + 69 + 8 + 3 + 6 + 1 + 1 + 1 + 2 + 1)
    );
    assert!(spec.slots("ICorProfilerInfo11").is_some());
}

#[test]
fn com_basics_are_consistent() {
    let unknown = bound::<IUnknownVtbl>();
    assert_eq!(
        (unknown.parent, unknown.methods.len(), unknown.size),
        (None, 3, 3 * size_of::<usize>())
    );
    let factory = bound::<IClassFactoryVtbl>();
    assert_eq!(
        (factory.parent, factory.size),
        (Some("IUnknown"), 5 * size_of::<usize>())
    );
    for b in bound_interfaces() {
        assert_eq!(b.methods.len(), b.params.len(), "{}", b.name);
    }
}

/// The paths the bindings had before `clr::sys` (`clr::ffi::…`, `clr::com::Guid`, ...)
/// name the same items: they are re-exports, not copies.
#[test]
fn the_former_paths_name_the_same_items() {
    use core::any::TypeId;
    use ilrewrite::clr::{com, ffi};
    assert_eq!(TypeId::of::<com::Guid>(), TypeId::of::<Guid>());
    assert_eq!(TypeId::of::<com::HResult>(), TypeId::of::<HResult>());
    assert_eq!(
        TypeId::of::<com::IUnknownVtbl>(),
        TypeId::of::<IUnknownVtbl>()
    );
    assert_eq!(
        TypeId::of::<com::IClassFactoryVtbl>(),
        TypeId::of::<IClassFactoryVtbl>()
    );
    assert_eq!(com::IID_IUNKNOWN, IID_IUNKNOWN);
    assert_eq!(<com::IUnknownVtbl as com::ComVtable>::NAME, "IUnknown");
    assert_eq!(
        TypeId::of::<ffi::ICorProfilerInfoVtbl>(),
        TypeId::of::<ICorProfilerInfoVtbl>()
    );
    assert_eq!(
        TypeId::of::<ffi::callback::ICorProfilerCallback9Vtbl>(),
        TypeId::of::<ICorProfilerCallback9Vtbl>()
    );
    assert_eq!(
        TypeId::of::<ffi::enums::CorPrfMonitor>(),
        TypeId::of::<CorPrfMonitor>()
    );
    assert_eq!(ffi::IID_ICORPROFILERINFO, IID_ICORPROFILERINFO);
}

#[test]
fn a_swapped_slot_is_reported() {
    let spec = committed_spec();
    let mut methods: Vec<&'static str> = ICorProfilerCallback4Vtbl::METHODS.to_vec();
    methods.swap(1, 2); // GetReJITParameters <-> ReJITCompilationFinished
    let swapped = Bound {
        methods: methods.leak(),
        ..bound::<ICorProfilerCallback4Vtbl>()
    };
    let problems = compare(&swapped, &spec);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].contains("own slot 1"), "{problems:?}");
    // A missing slot changes the size too.
    let shortened = Bound {
        methods: &ICorProfilerInfoVtbl::METHODS[1..],
        ..bound::<ICorProfilerInfoVtbl>()
    };
    assert!(!compare(&shortened, &spec).is_empty());
}

/// `bitflags` flags under their IDL names.
fn flag_values<F: Flags<Bits = u32>>(prefix: &str) -> Vec<(String, u32)> {
    F::FLAGS
        .iter()
        .map(|f| (format!("{prefix}{}", f.name()), f.value().bits()))
        .collect()
}

#[test]
fn flags_and_enums_match_the_idl() {
    let spec = committed_spec();
    let bound: Vec<(&str, Vec<(String, u32)>)> = vec![
        ("COR_PRF_MONITOR", flag_values::<CorPrfMonitor>("COR_PRF_")),
        (
            "COR_PRF_HIGH_MONITOR",
            flag_values::<CorPrfHighMonitor>("COR_PRF_HIGH_"),
        ),
        (
            "COR_PRF_CODEGEN_FLAGS",
            flag_values::<CorPrfCodegenFlags>("COR_PRF_CODEGEN_"),
        ),
        ("COR_PRF_SNAPSHOT_INFO", table(COR_PRF_SNAPSHOT_INFO)),
        ("COR_PRF_STATIC_TYPE", table(COR_PRF_STATIC_TYPE)),
        ("COR_PRF_MISC", table(COR_PRF_MISC)),
        ("COR_PRF_JIT_CACHE", table(COR_PRF_JIT_CACHE)),
        (
            "COR_PRF_TRANSITION_REASON",
            table(COR_PRF_TRANSITION_REASON),
        ),
        ("COR_PRF_SUSPEND_REASON", table(COR_PRF_SUSPEND_REASON)),
        ("COR_PRF_RUNTIME_TYPE", table(COR_PRF_RUNTIME_TYPE)),
        ("COR_PRF_REJIT_FLAGS", table(COR_PRF_REJIT_FLAGS)),
        (
            "COR_PRF_EVENTPIPE_PARAM_TYPE",
            table(COR_PRF_EVENTPIPE_PARAM_TYPE),
        ),
        ("COR_PRF_EVENTPIPE_LEVEL", table(COR_PRF_EVENTPIPE_LEVEL)),
        ("COR_PRF_HANDLE_TYPE", table(COR_PRF_HANDLE_TYPE)),
        ("COR_PRF_GC_ROOT_KIND", table(COR_PRF_GC_ROOT_KIND)),
        ("COR_PRF_GC_ROOT_FLAGS", table(COR_PRF_GC_ROOT_FLAGS)),
        ("COR_PRF_FINALIZER_FLAGS", table(COR_PRF_FINALIZER_FLAGS)),
        ("COR_PRF_GC_GENERATION", table(COR_PRF_GC_GENERATION)),
        ("COR_PRF_CLAUSE_TYPE", table(COR_PRF_CLAUSE_TYPE)),
        ("COR_PRF_GC_REASON", table(COR_PRF_GC_REASON)),
        ("COR_PRF_MODULE_FLAGS", table(COR_PRF_MODULE_FLAGS)),
        (
            "CorDebugIlToNativeMappingTypes",
            table(COR_DEBUG_IL_TO_NATIVE_MAPPING_TYPES),
        ),
    ];
    let mut problems = Vec::new();
    for (name, values) in &bound {
        match spec.enumeration(name) {
            None => problems.push(format!("{name}: not in the IDL")),
            Some(e) if e.values != *values => problems.push(format!(
                "{name}:\n  bound {values:x?}\n  IDL   {:x?}",
                e.values
            )),
            Some(_) => {}
        }
    }
    for e in &spec.enums {
        if !bound.iter().any(|(name, _)| *name == e.name) {
            problems.push(format!("{}: in the IDL, not bound", e.name));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // The values the profiler core depends on, spelled out.
    assert_eq!(CorPrfMonitor::ENABLE_REJIT.bits(), 0x0004_0000);
    assert_eq!(CorPrfMonitor::DISABLE_ALL_NGEN_IMAGES.bits(), 0x8000_0000);
    assert_eq!(CorPrfCodegenFlags::DISABLE_INLINING.bits(), 1);
    assert_eq!(CorPrfCodegenFlags::DISABLE_ALL_OPTIMIZATIONS.bits(), 2);
}

fn table(values: &[(&str, u32)]) -> Vec<(String, u32)> {
    values
        .iter()
        .map(|&(name, bits)| (name.to_string(), bits))
        .collect()
}

#[test]
fn hresults_match_corerror() {
    let spec = committed_spec();
    let bound: Vec<(String, u32)> = HResult::KNOWN
        .iter()
        .filter(|(_, name)| name.starts_with("CORPROF_E_"))
        .map(|&(code, name)| (name.to_string(), code.as_u32()))
        .collect();
    assert_eq!(bound, spec.hresults);
    for (name, bits) in [
        ("CORPROF_E_UNSUPPORTED_CALL_SEQUENCE", 0x8013_1363),
        ("CORPROF_E_DATAINCOMPLETE", 0x8013_1351),
        ("CORPROF_E_INCONSISTENT_WITH_FLAGS", 0x8013_1374),
        ("CORPROF_E_FUNCTION_NOT_IL", 0x8013_1354),
        ("CORPROF_E_NOT_MANAGED_THREAD", 0x8013_1355),
        ("CORPROF_E_NOT_YET_AVAILABLE", 0x8013_135B),
    ] {
        assert_eq!(HResult::from_u32(bits).name(), Some(name));
    }
}

#[test]
fn spec_is_what_the_headers_say() {
    let Some(dir) = std::env::var_os("ILREWRITE_CLR_HEADERS") else {
        eprintln!("ILREWRITE_CLR_HEADERS not set: the headers were not parsed again");
        return;
    };
    let dir = PathBuf::from(dir);
    let read = |name: &str| {
        let path = dir.join(name);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    };
    let parsed = Spec::from_headers(&read("corprof.idl"), &read("cor.h"), &read("corerror.h"));
    let rendered = parsed.render();
    assert_eq!(
        Spec::parse(&rendered),
        parsed,
        "the spec format round-trips"
    );
    let path = data_dir().join("headers.spec");
    if std::env::var_os("ILREWRITE_BLESS").is_some() {
        std::fs::write(&path, &rendered).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap();
    assert!(
        committed == rendered,
        "{} differs from the headers (ILREWRITE_BLESS=1 rewrites it)",
        path.display()
    );
}

// The scanner on constructs the headers use.

#[test]
fn comments_are_stripped_but_strings_kept() {
    let src = "a // x ( y\nb /* c\n ) */ d \"// e /* f\" g";
    assert_eq!(strip_comments(src), "a \nb \n  d \"// e /* f\" g");
}

#[test]
fn idl_interfaces_and_enums_parse() {
    let src = r#"
        interface IFoo;
        typedef enum { A, B = 0x10, C, D = A | B, E = -1, } E1;
        typedef enum _T { X = 0X2 } E2;
        [ object, uuid(11111111-2222-3333-4444-555555555555), local ]
        interface IFoo : IUnknown
        {
            /* HRESULT Hidden(); */
            HRESULT First();
            HRESULT Second([in] ULONG c, [out, size_is(c), length_is(*n)] ULONG x[],
                           [out, annotation("_Out_writes_to_(c, *n)")] WCHAR s[]);
            PVOID Third([in] ULONG cb);
        };
    "#;
    let (interfaces, enums) = parse_idl(src);
    assert_eq!(interfaces.len(), 1);
    let i = &interfaces[0];
    assert_eq!((i.name.as_str(), i.parent.as_str()), ("IFoo", "IUnknown"));
    assert_eq!(
        i.iid,
        Guid::parse("11111111-2222-3333-4444-555555555555").unwrap()
    );
    let methods: Vec<(&str, usize)> = i.methods.iter().map(|(m, n)| (m.as_str(), *n)).collect();
    assert_eq!(methods, [("First", 0), ("Second", 3), ("Third", 1)]);
    assert_eq!(enums[0].name, "E1");
    let values: Vec<u32> = enums[0].values.iter().map(|v| v.1).collect();
    assert_eq!(values, [0, 0x10, 0x11, 0x10, 0xFFFF_FFFF]);
    assert_eq!(enums[1].values, [("X".to_string(), 2)]);
}

#[test]
fn cor_h_interfaces_parse() {
    let src = r#"
        EXTERN_GUID(IID_IBar, 0x1, 0x2, 0x3, 0x4, 0x5, 0x6, 0x7, 0x8, 0x9, 0xa, 0xB);
        #define INTERFACE IBar
        DECLARE_INTERFACE_(IBar, IFoo)
        {
            STDMETHOD_(void, Close)(HCORENUM h) PURE;
            STDMETHOD (Props)(                // S_OK (or not)
              _Out_writes_to_opt_(cch, *pch)
                LPWSTR sz,                    // [OUT] name (wide chars)
                ULONG cch, ULONG *pch) PURE;
            STDMETHOD(End)() PURE;
            STDMETHOD(Validate)(
                ) PURE;
        };
        DECLARE_INTERFACE_(INoIid, IUnknown)
        {
            STDMETHOD(X)() PURE;
        };
    "#;
    let interfaces = parse_cor_h(src);
    assert_eq!(interfaces.len(), 1);
    let i = &interfaces[0];
    assert_eq!((i.name.as_str(), i.parent.as_str()), ("IBar", "IFoo"));
    assert_eq!(i.iid, Guid::new(1, 2, 3, [4, 5, 6, 7, 8, 9, 0xa, 0xb]));
    let methods: Vec<(&str, usize)> = i.methods.iter().map(|(m, n)| (m.as_str(), *n)).collect();
    assert_eq!(
        methods,
        [("Close", 1), ("Props", 3), ("End", 0), ("Validate", 0)]
    );
}

#[test]
fn corerror_codes_parse() {
    let src = "#define CORPROF_E_X EMAKEHR(0x1363) // why\n#define S_X SMAKEHR(0x1106)\n#define COR_E_Y E_INVALIDARG\n";
    assert_eq!(
        parse_corerror(src),
        [
            ("CORPROF_E_X".to_string(), 0x8013_1363),
            ("S_X".to_string(), 0x0013_1106)
        ]
    );
}

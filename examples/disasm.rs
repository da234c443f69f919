//! Prints methods of a .NET assembly in ilasm syntax.
//!
//! ```text
//! cargo run --release --features pe --example disasm -- [ASSEMBLY] [METHOD]
//! ```
//!
//! METHOD selects the methods to list:
//!
//! * `Namespace.Type::Name`, with nested types as `Namespace.Outer/Inner::Name`;
//! * with a signature suffix for one overload: `System.String::Concat(string,string)`
//!   (parameter types as listings write them; spaces do not matter);
//! * `Name`: every method of that name;
//! * a MethodDef token: `0x06000123`.
//!
//! Defaults: System.Private.CoreLib of the default runtime (.NET 8.0.4, provisioned on
//! first use; see `ilrewrite_corpus::default_runtime`) and
//! `System.Text.StringBuilder::ToString()`. A single argument is the METHOD when it is
//! not an existing file and looks like one (has `::` or starts with `0x`).
//!
//! Exit status: 0 when methods were listed, 1 when none matched or the assembly could
//! not be read, 2 for bad arguments.

use ilrewrite::MethodBody;
use ilrewrite::disasm::{MethodName, disassemble, method_name};
use ilrewrite::pe::{Assembly, MethodDefInfo};
use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "usage: disasm [ASSEMBLY] [METHOD]
  METHOD: Namespace.Type::Name, Namespace.Outer/Inner::Name, Type::Name(param,...),
          Name, or a MethodDef token 0x06xxxxxx
  defaults: System.Private.CoreLib and System.Text.StringBuilder::ToString()";

/// Which methods to list.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Query {
    /// A MethodDef token.
    Token(u32),
    /// An owner (when given), a name, and the parameter list without spaces (when
    /// given).
    Name {
        owner: Option<String>,
        name: String,
        params: Option<String>,
    },
}

impl Query {
    fn parse(text: &str) -> Result<Query, String> {
        if let Some(hex) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
            return u32::from_str_radix(hex, 16)
                .ok()
                .filter(|t| t >> 24 == 0x06)
                .map(Query::Token)
                .ok_or_else(|| format!("{text:?} is not a MethodDef token (0x06xxxxxx)"));
        }
        let (head, params) = match text.find('(') {
            Some(open) => {
                let params = text[open + 1..]
                    .strip_suffix(')')
                    .ok_or_else(|| format!("{text:?}: the parameter list does not end with ')'"))?;
                (&text[..open], Some(strip(params)))
            }
            None => (text, None),
        };
        let (owner, name) = match head.rsplit_once("::") {
            Some((owner, name)) => (Some(strip(owner)), name),
            None => (None, head),
        };
        if name.is_empty() || owner.as_deref() == Some("") {
            return Err(format!("{text:?} names no method"));
        }
        Ok(Query::Name {
            owner,
            name: strip(name),
            params,
        })
    }

    /// Whether the query needs the listing's name of the method (owner or parameters).
    fn needs_name(&self) -> bool {
        matches!(self, Query::Name { owner, params, .. } if owner.is_some() || params.is_some())
    }

    fn matches(&self, method: &MethodDefInfo<'_>, name: Option<&MethodName>) -> bool {
        match self {
            Query::Token(token) => method.token == *token,
            Query::Name {
                owner: want_owner,
                name: want_name,
                params: want_params,
            } => {
                if strip(method.name) != *want_name {
                    return false;
                }
                let Some(name) = name else {
                    return want_owner.is_none() && want_params.is_none();
                };
                want_owner.as_ref().is_none_or(|o| strip(&name.owner) == *o)
                    && want_params
                        .as_ref()
                        .is_none_or(|p| strip(&name.params.join(",")) == *p)
            }
        }
    }
}

/// `s` without whitespace and without the quotes ilasm puts around names.
fn strip(s: &str) -> String {
    s.chars()
        .filter(|c| !c.is_whitespace() && *c != '\'')
        .collect()
}

/// The assembly (`None`: the default) and the query (as given and parsed), or a
/// message for bad arguments.
fn parse_args(args: &[String]) -> Result<(Option<PathBuf>, String, Query), String> {
    let mut positional = Vec::new();
    let mut options_done = false;
    for arg in args {
        if !options_done && arg == "--" {
            options_done = true;
        } else if !options_done && arg.starts_with('-') && arg.len() > 1 {
            return Err(format!("unknown option {arg:?}"));
        } else {
            positional.push(arg.as_str());
        }
    }
    let default_query = "System.Text.StringBuilder::ToString()";
    let (path, query) = match positional[..] {
        [] => (None, default_query),
        [one] => {
            let looks_like_method = one.contains("::") || one.starts_with("0x");
            if looks_like_method && !std::path::Path::new(one).exists() {
                (None, one)
            } else {
                (Some(PathBuf::from(one)), default_query)
            }
        }
        [path, query] => (Some(PathBuf::from(path)), query),
        _ => return Err(format!("too many arguments ({})", positional.len())),
    };
    Ok((path, query.to_string(), Query::parse(query)?))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "-h" || a == "--help") {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    let (path, query_text, query) = match parse_args(&args) {
        Ok(parsed) => parsed,
        Err(e) => {
            eprintln!("disasm: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let path = match path {
        Some(path) => path,
        None => match ilrewrite_corpus::default_runtime().map(ilrewrite_corpus::Runtime::corelib) {
            Ok(path) => path,
            Err(e) => {
                eprintln!("disasm: no default assembly: {e}");
                return ExitCode::FAILURE;
            }
        },
    };
    let data = match std::fs::read(&path) {
        Ok(data) => data,
        Err(e) => {
            eprintln!("disasm: {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
    };
    let asm = match Assembly::parse(&data) {
        Ok(asm) => asm,
        Err(e) => {
            eprintln!("disasm: {}: not a .NET assembly: {e}", path.display());
            return ExitCode::FAILURE;
        }
    };
    let mut found = 0;
    for method in asm.methods() {
        let method = match method {
            Ok(method) => method,
            Err(e) => {
                eprintln!("disasm: {}: {e}", path.display());
                continue;
            }
        };
        let name_matches = match &query {
            Query::Token(_) => true,
            Query::Name { name, .. } => strip(method.name) == *name,
        };
        if !name_matches {
            continue;
        }
        let name = query.needs_name().then(|| method_name(&asm, method.token));
        if !query.matches(&method, name.as_ref()) {
            continue;
        }
        found += 1;
        println!("// token 0x{:08x}, RVA 0x{:x}", method.token, method.rva);
        let Some(bytes) = method.body.filter(|_| method.is_il()) else {
            println!("// {}\n// no IL body\n", method_name(&asm, method.token));
            continue;
        };
        match MethodBody::decode(bytes)
            .and_then(|body| disassemble(&body, &asm, Some(method.token)))
        {
            Ok(listing) => println!("{listing}"),
            Err(e) => println!(
                "// {}\n// cannot decode: {e}\n",
                method_name(&asm, method.token)
            ),
        }
    }
    if found == 0 {
        eprintln!(
            "disasm: no method of {} matches {query_text}",
            path.display()
        );
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

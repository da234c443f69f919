//! `ilrewrite disasm [ASSEMBLY] [METHOD]`: prints methods of a .NET assembly in ilasm
//! syntax (`ilrewrite::disasm`).
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
//! Status 0 when methods were listed, 1 when none matched or the assembly could not be
//! read, 2 for bad arguments (a METHOD that cannot be parsed included).

use crate::Status;
use ilrewrite::MethodBody;
use ilrewrite::disasm::{MethodName, disassemble, method_name};
use ilrewrite::pe::{Assembly, MethodDefInfo};
use std::path::PathBuf;

/// The METHOD listed when none is given.
const DEFAULT_METHOD: &str = "System.Text.StringBuilder::ToString()";

/// The arguments of `disasm`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The assembly [default: System.Private.CoreLib of .NET 8.0.4, downloaded into
    /// target/ on first use]. A single argument that is not an existing file and looks
    /// like a METHOD (has `::` or starts with `0x`) is the METHOD
    assembly: Option<PathBuf>,
    /// The methods to list: Namespace.Type::Name, Namespace.Outer/Inner::Name,
    /// Type::Name(param,...) for one overload (parameter types as listings write them),
    /// Name, or a MethodDef token 0x06xxxxxx [default: System.Text.StringBuilder::ToString()]
    method: Option<String>,
}

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

/// The assembly (`None`: the default) and the METHOD text, the single-argument rule
/// applied.
fn resolve_args(args: Args) -> (Option<PathBuf>, String) {
    match (args.assembly, args.method) {
        (None, _) => (None, DEFAULT_METHOD.to_string()),
        (Some(path), Some(method)) => (Some(path), method),
        (Some(one), None) => match one.to_str() {
            Some(text) if (text.contains("::") || text.starts_with("0x")) && !one.exists() => {
                (None, text.to_string())
            }
            _ => (Some(one), DEFAULT_METHOD.to_string()),
        },
    }
}

/// Runs `disasm`.
pub(crate) fn run(args: Args) -> Status {
    let (path, query_text) = resolve_args(args);
    let query = match Query::parse(&query_text) {
        Ok(query) => query,
        Err(e) => return crate::usage_error("disasm", e),
    };
    let path = match path {
        Some(path) => path,
        None => match ilrewrite_corpus::default_runtime().map(ilrewrite_corpus::Runtime::corelib) {
            Ok(path) => path,
            Err(e) => {
                eprintln!("ilrewrite disasm: no default assembly: {e}");
                return Status::Failure;
            }
        },
    };
    let data = match std::fs::read(&path) {
        Ok(data) => data,
        Err(e) => {
            eprintln!("ilrewrite disasm: {}: {e}", path.display());
            return Status::Failure;
        }
    };
    let asm = match Assembly::parse(&data) {
        Ok(asm) => asm,
        Err(e) => {
            eprintln!(
                "ilrewrite disasm: {}: not a .NET assembly: {e}",
                path.display()
            );
            return Status::Failure;
        }
    };
    let mut found = 0;
    for method in asm.methods() {
        let method = match method {
            Ok(method) => method,
            Err(e) => {
                eprintln!("ilrewrite disasm: {}: {e}", path.display());
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
            "ilrewrite disasm: no method of {} matches {query_text}",
            path.display()
        );
        return Status::Failure;
    }
    Status::Ok
}

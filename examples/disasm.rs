//! Prints methods of a .NET assembly in ilasm syntax.
//!
//! ```text
//! cargo run --release --features pe --example disasm -- [ASSEMBLY] [METHOD]
//! ```
//! METHOD is a MethodDef token (`0x06000123`), `Namespace.Type::Name`, or `Name` (every
//! method of that name). Defaults: System.Private.CoreLib (provisioned on first use) and
//! `System.Text.StringBuilder::ToString`.

use ilrewrite::MethodBody;
use ilrewrite::disasm::disassemble;
use ilrewrite::pe::{Assembly, MethodDefInfo};
use std::process::ExitCode;

fn matches(method: &MethodDefInfo<'_>, query: &str) -> bool {
    if let Some(hex) = query.strip_prefix("0x") {
        return u32::from_str_radix(hex, 16).is_ok_and(|t| t == method.token);
    }
    match query.rsplit_once("::") {
        Some((ty, name)) => {
            name == method.name
                && method
                    .declaring_type
                    .as_ref()
                    .is_some_and(|t| t.to_string() == ty)
        }
        None => query == method.name,
    }
}

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let path = match args.next() {
        Some(p) => p.into(),
        None => ilrewrite_corpus::corelib().expect("a .NET 3.1 runtime"),
    };
    let query = args
        .next()
        .unwrap_or_else(|| "System.Text.StringBuilder::ToString".to_string());
    let data = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let asm = match Assembly::parse(&data) {
        Ok(asm) => asm,
        Err(e) => {
            eprintln!("{}: {e}", path.display());
            return ExitCode::FAILURE;
        }
    };
    let mut found = 0;
    for method in asm.methods().flatten() {
        if !matches(&method, &query) {
            continue;
        }
        found += 1;
        let owner = method
            .declaring_type
            .map(|t| t.to_string())
            .unwrap_or_default();
        println!(
            "// {owner}::{} (token 0x{:08x}, RVA 0x{:x})",
            method.name, method.token, method.rva
        );
        let Some(bytes) = method.body else {
            println!("// no body\n");
            continue;
        };
        match MethodBody::decode(bytes).and_then(|body| disassemble(&body, &asm)) {
            Ok(text) => println!("{text}"),
            Err(e) => println!("// cannot decode: {e}\n"),
        }
    }
    if found == 0 {
        eprintln!("no method matches {query:?}");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

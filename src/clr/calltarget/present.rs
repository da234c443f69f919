//! Whether an integration's hooks are where the runtime will look for them: its assembly
//! beside the application, the type in it, and hooks of the arity and parameter count a
//! target needs. The runtime resolves the references only at the target's first call,
//! where a missing assembly, type or hook throws to the program (and an unhandled one
//! ends it): so a target whose hooks are not present keeps its IL.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Mutex, PoisonError};

use crate::metadata::MetadataSource;
use crate::pe::Assembly;
use crate::sig::MethodSig;

/// A hook's shape: its name, generic arity and parameter count.
pub(super) type Shape = (&'static str, u32, usize);

/// An integration type's hooks, or why they cannot be read.
type Hooks = Result<Vec<Shape>, String>;

/// The hooks each integration type defines (by assembly and type name), read once from
/// the assembly file; or why they cannot be read.
#[derive(Debug, Default)]
pub(super) struct Inventory {
    types: Mutex<HashMap<(String, String), Hooks>>,
}

impl Inventory {
    /// Whether `needed` are all among the hooks of `type_name` in `assembly`, looked for
    /// as `DIR/ASSEMBLY.dll` in `dir` (the application's directory); why not, if not.
    pub(super) fn check(
        &self,
        dir: &Path,
        assembly: &str,
        type_name: &str,
        needed: &[Shape],
    ) -> Result<(), String> {
        let mut types = self.types.lock().unwrap_or_else(PoisonError::into_inner);
        let hooks = types
            .entry((assembly.to_owned(), type_name.to_owned()))
            .or_insert_with(|| read(&dir.join(format!("{assembly}.dll")), type_name));
        let hooks = hooks.as_ref().map_err(Clone::clone)?;
        match needed.iter().find(|n| !hooks.contains(n)) {
            None => Ok(()),
            Some((name, generic, params)) => Err(format!(
                "{type_name} in {assembly} has no {name} with {generic} generic parameters \
                 and {params} parameters"
            )),
        }
    }
}

/// The `OnMethodBegin` and `OnMethodEnd` methods of `type_name` in the assembly at
/// `path`.
fn read(path: &Path, type_name: &str) -> Hooks {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let assembly = Assembly::parse(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    let (namespace, name) = type_name.rsplit_once('.').unwrap_or(("", type_name));
    let rows = assembly.row_count(crate::pe::TableId::TypeDef);
    let Some(type_def) = (1..=rows).map(|rid| 0x0200_0000 | rid).find(|&t| {
        assembly
            .type_name(t)
            .is_ok_and(|n| n.namespace == namespace && n.name == name)
            && assembly.enclosing_type(t).is_ok_and(|e| e.is_none())
    }) else {
        return Err(format!("{} defines no type {type_name}", path.display()));
    };
    let mut hooks = Vec::new();
    for rid in 1..=assembly.row_count(crate::pe::TableId::MethodDef) {
        let token = 0x0600_0000 | rid;
        if assembly.declaring_type(token).ok().flatten() != Some(type_def) {
            continue;
        }
        let hook = match assembly.member_name(token) {
            Ok("OnMethodBegin") => "OnMethodBegin",
            Ok("OnMethodEnd") => "OnMethodEnd",
            _ => continue,
        };
        if let Ok(sig) = MetadataSource::signature(&assembly, token).and_then(MethodSig::parse) {
            hooks.push((hook, sig.generic_param_count, sig.params.len()));
        }
    }
    Ok(hooks)
}

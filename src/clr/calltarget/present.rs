//! Whether an integration's hooks and the state type are where the runtime will look for
//! them: each assembly beside the application, of the name and at least the version the
//! references ask, the type in it, and hooks of the arity and parameter count a target
//! needs. The runtime resolves the references only at the target's first call, where a
//! missing assembly, type or hook throws to the program (and an unhandled one ends it):
//! so a target whose hooks or state are not present keeps its IL.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Mutex, PoisonError};

use super::HelperAssembly;
use crate::metadata::MetadataSource;
use crate::pe::{Assembly, TableId};
use crate::sig::MethodSig;

/// A hook's shape: its name, generic arity and parameter count.
pub(super) type Shape = (&'static str, u32, usize);

/// A type's hooks, or why the type cannot be used.
type Hooks = Result<Vec<Shape>, String>;

/// The hooks each type defines (by assembly and type name), read once from the assembly
/// file; or why they cannot be read.
#[derive(Debug, Default)]
pub(super) struct Inventory {
    types: Mutex<HashMap<(HelperAssembly, String), Hooks>>,
}

impl Inventory {
    /// Whether `type_name` is defined by `assembly`, looked for as `ASSEMBLY.dll` in
    /// `dir` (the application's directory), and `needed` are all among its hooks; why
    /// not, if not.
    pub(super) fn check(
        &self,
        dir: &Path,
        assembly: &HelperAssembly,
        type_name: &str,
        needed: &[Shape],
    ) -> Result<(), String> {
        let mut types = self.types.lock().unwrap_or_else(PoisonError::into_inner);
        let hooks = types
            .entry((assembly.clone(), type_name.to_owned()))
            .or_insert_with(|| read(dir, assembly, type_name));
        let hooks = hooks.as_ref().map_err(Clone::clone)?;
        match needed.iter().find(|n| !hooks.contains(n)) {
            None => Ok(()),
            Some((name, generic, params)) => Err(format!(
                "{type_name} in {} has no {name} with {generic} generic parameters \
                 and {params} parameters",
                assembly.name
            )),
        }
    }
}

/// The `OnMethodBegin` and `OnMethodEnd` methods of `type_name` in `assembly`'s file in
/// `dir`, once the file is known to be that assembly at a version the binder accepts
/// for the reference (the same or higher).
fn read(dir: &Path, assembly: &HelperAssembly, type_name: &str) -> Hooks {
    let path = dir.join(format!("{}.dll", assembly.name));
    let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let file = Assembly::parse(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    let name = file.assembly_name().ok().flatten();
    let version = file.assembly_version().ok().flatten();
    match (name, version) {
        (Some(name), Some(version))
            if name.eq_ignore_ascii_case(&assembly.name) && version >= assembly.version => {}
        (Some(name), Some([a, b, c, d])) => {
            let [w, x, y, z] = assembly.version;
            return Err(format!(
                "{} is assembly {name} {a}.{b}.{c}.{d}, not {} at {w}.{x}.{y}.{z} or later",
                path.display(),
                assembly.name
            ));
        }
        _ => return Err(format!("{} has no assembly manifest", path.display())),
    }
    let type_def = type_def(&file, type_name)
        .ok_or_else(|| format!("{} defines no type {type_name}", path.display()))?;
    let mut hooks = Vec::new();
    for rid in 1..=file.row_count(TableId::MethodDef) {
        let token = 0x0600_0000 | rid;
        if file.declaring_type(token).ok().flatten() != Some(type_def) {
            continue;
        }
        let hook = match file.member_name(token) {
            Ok("OnMethodBegin") => "OnMethodBegin",
            Ok("OnMethodEnd") => "OnMethodEnd",
            _ => continue,
        };
        if let Ok(sig) = MetadataSource::signature(&file, token).and_then(MethodSig::parse) {
            hooks.push((hook, sig.generic_param_count, sig.params.len()));
        }
    }
    Ok(hooks)
}

/// The TypeDef of top-level type `type_name` (`Namespace.Type`) in `file`.
fn type_def(file: &Assembly<'_>, type_name: &str) -> Option<u32> {
    let (namespace, name) = type_name.rsplit_once('.').unwrap_or(("", type_name));
    (1..=file.row_count(TableId::TypeDef))
        .map(|rid| 0x0200_0000 | rid)
        .find(|&t| {
            file.type_name(t)
                .is_ok_and(|n| n.namespace == namespace && n.name == name)
                && file.enclosing_type(t).is_ok_and(|e| e.is_none())
        })
}

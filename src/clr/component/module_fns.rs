//! The `ilr_host.module_*` functions: what a library defines in a module's metadata
//! while it loads (by value: names, and types and signatures as text), and its data
//! item on the module. Each checks its handle and pointers, catches any panic, and
//! answers a status.

use core::ffi::{c_char, c_void};

use super::abi::{
    AssemblyRefC, E_FAILED, E_INVALID_ARGUMENT, E_NOT_FOUND, Handle, ItemDestructor, Status, Str,
};
use super::context::{keep_item, keep_string, with_module};
use super::host_fns::{array, guarded, name_of, not_null, put};
use super::items::{ForeignItem, item_pointer};
use crate::clr::runtime::{AssemblyName, ClrError, ModuleMetadata};
use crate::metadata::{MetadataSource, table, token_table};
use crate::sig::text::{parse_method_sig, parse_type, parse_types};
use crate::sig::{FieldSig, MethodSig, TypeSig};

/// A metadata call's failure as a status: the runtime refused (or could not be asked).
fn runtime(e: ClrError) -> Status {
    crate::clr::log::write(&format!("ilr_host: the runtime refused a definition: {e}"));
    E_FAILED
}

/// Whether `token` is of one of `tables` and names a row of the module.
fn names_row(metadata: &ModuleMetadata, token: u32, tables: &[u8]) -> Result<(), Status> {
    match tables.contains(&token_table(token))
        && token & 0x00FF_FFFF != 0
        && metadata.is_valid_token(token)
    {
        true => Ok(()),
        false => Err(E_INVALID_ARGUMENT),
    }
}

/// Every token `ty` names is a row of the module (the encoder checks their tables).
pub(super) fn type_rows(metadata: &ModuleMetadata, ty: &TypeSig) -> Result<(), Status> {
    let tables = [table::TYPE_DEF, table::TYPE_REF, table::TYPE_SPEC];
    let mut pending: Vec<&TypeSig> = vec![ty];
    while let Some(ty) = pending.pop() {
        match ty {
            TypeSig::Class(t) | TypeSig::ValueType(t) => names_row(metadata, *t, &tables)?,
            TypeSig::GenericInst { token, args, .. } => {
                names_row(metadata, *token, &tables)?;
                pending.extend(args);
            }
            TypeSig::Modified { token, inner, .. } => {
                names_row(metadata, *token, &tables)?;
                pending.push(inner);
            }
            TypeSig::Ptr(inner)
            | TypeSig::ByRef(inner)
            | TypeSig::SzArray(inner)
            | TypeSig::Pinned(inner) => pending.push(inner),
            TypeSig::Array(array) => pending.push(&array.elem),
            TypeSig::FnPtr(sig) => {
                pending.push(&sig.return_type);
                pending.extend(&sig.params);
            }
            TypeSig::Internal(_) => return Err(E_INVALID_ARGUMENT),
            _ => {}
        }
    }
    Ok(())
}

/// The type `text` writes, its tokens rows of the module, as a blob holds it (a field's
/// type, a TypeSpec, a type argument).
///
/// # Safety
/// `text` is null or NUL-terminated.
unsafe fn type_of(metadata: &ModuleMetadata, text: *const c_char) -> Result<TypeSig, Status> {
    // SAFETY: the caller's contract.
    let text = unsafe { name_of(text) }?;
    let ty = parse_type(text).map_err(|e| said(text, e))?;
    type_rows(metadata, &ty)?;
    encodes(text, ty.to_bytes())?;
    Ok(ty)
}

/// The method signature `text` writes, its tokens rows of the module, as a blob holds
/// it.
///
/// # Safety
/// `text` is null or NUL-terminated.
unsafe fn signature_of(
    metadata: &ModuleMetadata,
    text: *const c_char,
) -> Result<MethodSig, Status> {
    // SAFETY: the caller's contract.
    let text = unsafe { name_of(text) }?;
    let sig = parse_method_sig(text).map_err(|e| said(text, e))?;
    type_rows(metadata, &sig.return_type)?;
    sig.params.iter().try_for_each(|p| type_rows(metadata, p))?;
    encodes(text, sig.to_bytes())?;
    Ok(sig)
}

/// What `text` writes has a blob (the text form parses `void` and `pinned` anywhere;
/// `void[]`, a `void` parameter, `int32 pinned[]` have none): else logged,
/// [`E_INVALID_ARGUMENT`], and nothing is asked of the runtime.
fn encodes(text: &str, blob: crate::error::Result<Vec<u8>>) -> Result<(), Status> {
    match blob {
        Ok(_) => Ok(()),
        Err(e) => {
            crate::clr::log::write(&format!(
                "ilr_host: cannot take {}: {}",
                quoted(text),
                cut(&e.to_string())
            ));
            Err(E_INVALID_ARGUMENT)
        }
    }
}

/// A text the library wrote that does not parse: logged (the status alone would not
/// say where), [`E_INVALID_ARGUMENT`].
pub(super) fn said(text: &str, e: crate::error::Error) -> Status {
    crate::clr::log::write(&format!(
        "ilr_host: cannot read {}: {}",
        quoted(text),
        cut(&e.to_string())
    ));
    E_INVALID_ARGUMENT
}

/// At most this many characters of a library's text go into a log line (a text can be
/// megabytes long), and at most [`SHOWN_ERROR`] of an error message (which may quote it).
const SHOWN: usize = 160;
const SHOWN_ERROR: usize = 400;

/// `text` cut after [`SHOWN_ERROR`] characters, saying how long it was.
fn cut(text: &str) -> String {
    match text.char_indices().nth(SHOWN_ERROR) {
        None => text.to_owned(),
        Some((end, _)) => format!("{}... ({} bytes)", &text[..end], text.len()),
    }
}

/// `text` quoted for the log (Rust's debug form), cut after [`SHOWN`] characters.
fn quoted(text: &str) -> String {
    match text.char_indices().nth(SHOWN) {
        None => format!("{text:?}"),
        Some((end, _)) => format!("{:?}... ({} bytes)", &text[..end], text.len()),
    }
}

/// Runs `define` on the module `module` lends, and writes the token it gives to `token`.
fn define(
    what: &str,
    module: Handle,
    token: *mut u32,
    define: impl FnOnce(&ModuleMetadata) -> Result<u32, Status>,
) -> Status {
    guarded(what, || {
        not_null(token)?;
        let defined = with_module(module, |load, _| define(load.module().metadata()))??;
        // SAFETY: checked non-null; writable by the library's contract.
        unsafe { put(token, defined) }
    })
}

pub(super) unsafe extern "C" fn module_id(module: Handle, id: *mut u64) -> Status {
    guarded("ilr_host.module_id", || {
        let got = with_module(module, |load, _| load.module().id() as u64)?;
        // SAFETY: null (refused) or writable.
        unsafe { put(id, got) }
    })
}

pub(super) unsafe extern "C" fn module_assembly_name(module: Handle, name: *mut Str) -> Status {
    guarded("ilr_host.module_assembly_name", || {
        not_null(name)?;
        let text = with_module(module, |load, _| load.module().metadata().assembly_name())?
            .map_err(runtime)?;
        let text = keep_string(module, text)?;
        // SAFETY: checked non-null.
        unsafe { put(name, text) }
    })
}

pub(super) unsafe extern "C" fn module_assembly_ref(
    module: Handle,
    assembly: *const AssemblyRefC,
    token: *mut u32,
) -> Status {
    define("ilr_host.module_assembly_ref", module, token, |metadata| {
        if assembly.is_null() {
            return Err(E_INVALID_ARGUMENT);
        }
        // SAFETY: non-null, an `ilr_assembly_ref` by the library's contract.
        let assembly = unsafe { *assembly };
        // SAFETY: NUL-terminated or null (refused).
        let name = unsafe { name_of(assembly.name) }?;
        if name.is_empty() {
            return Err(E_INVALID_ARGUMENT);
        }
        let key: &[u8] = match assembly.public_key_token.is_null() {
            true => &[],
            // SAFETY: 8 readable bytes by the header's contract.
            false => unsafe { core::slice::from_raw_parts(assembly.public_key_token, 8) },
        };
        let name = AssemblyName {
            name,
            version: assembly.version,
            public_key_token: key,
        };
        metadata.assembly_ref(&name).map_err(runtime)
    })
}

pub(super) unsafe extern "C" fn module_type_ref(
    module: Handle,
    scope: u32,
    name: *const c_char,
    token: *mut u32,
) -> Status {
    define("ilr_host.module_type_ref", module, token, |metadata| {
        let scopes = [table::ASSEMBLY_REF, table::MODULE_REF, table::TYPE_REF];
        names_row(metadata, scope, &scopes)?;
        // SAFETY: NUL-terminated or null (refused).
        let name = unsafe { name_of(name) }?;
        if name.is_empty() {
            return Err(E_INVALID_ARGUMENT);
        }
        metadata.define_type_ref(scope, name).map_err(runtime)
    })
}

pub(super) unsafe extern "C" fn module_find_type(
    module: Handle,
    name: *const c_char,
    token: *mut u32,
) -> Status {
    define("ilr_host.module_find_type", module, token, |metadata| {
        // SAFETY: NUL-terminated or null (refused).
        let name = unsafe { name_of(name) }?;
        metadata
            .find_type_def_path(name)
            .map_err(runtime)?
            .ok_or(E_NOT_FOUND)
    })
}

pub(super) unsafe extern "C" fn module_type_spec(
    module: Handle,
    text: *const c_char,
    token: *mut u32,
) -> Status {
    define("ilr_host.module_type_spec", module, token, |metadata| {
        // SAFETY: NUL-terminated or null (refused).
        let ty = unsafe { type_of(metadata, text) }?;
        if matches!(ty, TypeSig::Void | TypeSig::Pinned(_)) {
            return Err(E_INVALID_ARGUMENT);
        }
        metadata.type_spec(&ty).map_err(runtime)
    })
}

/// The parents a MemberRef may have.
const MEMBER_PARENTS: [u8; 4] = [
    table::TYPE_DEF,
    table::TYPE_REF,
    table::TYPE_SPEC,
    table::MODULE_REF,
];

pub(super) unsafe extern "C" fn module_method_ref(
    module: Handle,
    parent: u32,
    name: *const c_char,
    signature: *const c_char,
    token: *mut u32,
) -> Status {
    define("ilr_host.module_method_ref", module, token, |metadata| {
        names_row(metadata, parent, &MEMBER_PARENTS)?;
        // SAFETY: NUL-terminated or null (refused).
        let name = unsafe { name_of(name) }?;
        // SAFETY: as `name`.
        let sig = unsafe { signature_of(metadata, signature) }?;
        if name.is_empty() {
            return Err(E_INVALID_ARGUMENT);
        }
        metadata.method_ref(parent, name, &sig).map_err(runtime)
    })
}

pub(super) unsafe extern "C" fn module_field_ref(
    module: Handle,
    parent: u32,
    name: *const c_char,
    text: *const c_char,
    token: *mut u32,
) -> Status {
    define("ilr_host.module_field_ref", module, token, |metadata| {
        names_row(metadata, parent, &MEMBER_PARENTS)?;
        // SAFETY: NUL-terminated or null (refused).
        let name = unsafe { name_of(name) }?;
        // SAFETY: as `name`.
        let ty = unsafe { type_of(metadata, text) }?;
        if name.is_empty() || matches!(ty, TypeSig::Void | TypeSig::Pinned(_)) {
            return Err(E_INVALID_ARGUMENT);
        }
        metadata
            .field_ref(parent, name, &FieldSig { ty })
            .map_err(runtime)
    })
}

pub(super) unsafe extern "C" fn module_method_spec(
    module: Handle,
    method: u32,
    arguments: *const c_char,
    token: *mut u32,
) -> Status {
    define("ilr_host.module_method_spec", module, token, |metadata| {
        names_row(metadata, method, &[table::METHOD_DEF, table::MEMBER_REF])?;
        // SAFETY: NUL-terminated or null (refused).
        let text = unsafe { name_of(arguments) }?;
        let types = parse_types(text).map_err(|e| said(text, e))?;
        types.iter().try_for_each(|t| type_rows(metadata, t))?;
        types.iter().try_for_each(|t| encodes(text, t.to_bytes()))?;
        // The runtime defines a MethodSpec of any method with any arguments, and fails
        // only when the JIT loads it (`BadImageFormatException` from the method that
        // calls it): the method must be generic, with as many type parameters.
        let parameters = MetadataSource::signature(metadata, method)
            .ok()
            .and_then(|blob| MethodSig::parse(blob).ok())
            .map_or(0, |sig| sig.generic_param_count);
        if parameters as usize != types.len() {
            crate::clr::log::write(&format!(
                "ilr_host: no MethodSpec of {method:#010x} over {} type arguments: the \
                 method has {parameters} type parameters",
                types.len()
            ));
            return Err(E_INVALID_ARGUMENT);
        }
        metadata.method_spec(method, &types).map_err(runtime)
    })
}

pub(super) unsafe extern "C" fn module_user_string(
    module: Handle,
    text: *const c_char,
    length: usize,
    token: *mut u32,
) -> Status {
    define("ilr_host.module_user_string", module, token, |metadata| {
        let bytes: &[u8] = match length {
            0 => &[],
            // SAFETY: `length` readable bytes by the library's contract (refused unread
            // when null or longer than any array).
            n => unsafe { array(text.cast(), n) }?,
        };
        let text = core::str::from_utf8(bytes).map_err(|_| E_INVALID_ARGUMENT)?;
        metadata.user_string(text).map_err(runtime)
    })
}

pub(super) unsafe extern "C" fn module_signature(
    module: Handle,
    text: *const c_char,
    token: *mut u32,
) -> Status {
    define("ilr_host.module_signature", module, token, |metadata| {
        // SAFETY: NUL-terminated or null (refused).
        let sig = unsafe { signature_of(metadata, text) }?;
        metadata.call_site_signature(&sig).map_err(runtime)
    })
}

pub(super) unsafe extern "C" fn module_signature_bytes(
    module: Handle,
    blob: *const u8,
    length: usize,
    token: *mut u32,
) -> Status {
    define(
        "ilr_host.module_signature_bytes",
        module,
        token,
        |metadata| {
            if length == 0 {
                return Err(E_INVALID_ARGUMENT);
            }
            // SAFETY: `length` readable bytes by the library's contract (refused unread
            // when null or longer than any array).
            let bytes = unsafe { array(blob, length) }?;
            let sig = MethodSig::parse(bytes).map_err(|_| E_INVALID_ARGUMENT)?;
            type_rows(metadata, &sig.return_type)?;
            sig.params.iter().try_for_each(|p| type_rows(metadata, p))?;
            metadata.call_site_signature(&sig).map_err(runtime)
        },
    )
}

pub(super) unsafe extern "C" fn module_set_item(
    module: Handle,
    item: *mut c_void,
    destroy: ItemDestructor,
) -> Status {
    guarded("ilr_host.module_set_item", || {
        let old = with_module(module, |load, library| {
            let new = ForeignItem::shared(item, destroy, library);
            load.replace_item(new)
        })?;
        // The one replaced is destroyed once the library's call returned.
        if let Some(old) = old {
            keep_item(module, old)?;
        }
        Ok(())
    })
}

pub(super) unsafe extern "C" fn module_item(module: Handle, item: *mut *mut c_void) -> Status {
    guarded("ilr_host.module_item", || {
        not_null(item)?;
        let found = with_module(module, |load, _| load.item_any())?.ok_or(E_NOT_FOUND)?;
        let pointer = item_pointer(&found).ok_or(E_NOT_FOUND)?;
        keep_item(module, found)?;
        // SAFETY: checked non-null.
        unsafe { put(item, pointer) }
    })
}

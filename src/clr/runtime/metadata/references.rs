//! References from a module to methods of another assembly (a profiler's helper, a
//! framework method its probes call): the assembly's name, finding or defining the
//! AssemblyRef, TypeRef and MemberRef, or the method's own MethodDef when the module is
//! that assembly's.

use core::ffi::c_void;

use super::{ModuleMetadata, read_string};
use crate::clr::runtime::error::{ClrError, ClrResult, check, from_ulong, to_ulong};
use crate::clr::sys::{
    AssemblyMetaData, HCorEnum, HResult, IMetaDataAssemblyEmitVtbl, mdAssemblyRef, mdToken,
};
use crate::sig::MethodSig;

/// `CLDB_E_RECORD_NOTFOUND`: what the `Find*` methods answer when nothing matches.
const CLDB_E_RECORD_NOTFOUND: u32 = 0x8013_1130;

/// An assembly as a reference to it names it: simple name, version and public key token
/// (culture neutral).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AssemblyName<'a> {
    /// The simple name (`"System.Private.CoreLib"`).
    pub name: &'a str,
    /// Major, minor, build and revision.
    pub version: [u16; 4],
    /// The 8-byte public key token, or empty for an assembly without a strong name.
    pub public_key_token: &'a [u8],
}

impl AssemblyName<'static> {
    /// CoreCLR's core library, `System.Private.CoreLib, Version=4.0.0.0,
    /// PublicKeyToken=7cec85d7bea7798e`: the runtime binds this name to the core library
    /// it runs on, whichever version that is, from any module.
    pub const CORE_LIBRARY: AssemblyName<'static> = AssemblyName {
        name: "System.Private.CoreLib",
        version: [4, 0, 0, 0],
        public_key_token: &[0x7c, 0xec, 0x85, 0xd7, 0xbe, 0xa7, 0x79, 0x8e],
    };
}

impl AssemblyName<'_> {
    /// Its version as the metadata API takes it (culture neutral, no platforms).
    pub(crate) fn metadata(&self) -> AssemblyMetaData {
        let [major, minor, build, revision] = self.version;
        AssemblyMetaData {
            major_version: major,
            minor_version: minor,
            build_number: build,
            revision_number: revision,
            ..AssemblyMetaData::default()
        }
    }
}

/// A method of another assembly, or of this module's own, as a token this module's IL
/// can call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MethodReference {
    /// The module belongs to the method's assembly: the method's own MethodDef.
    Definition(mdToken),
    /// A MemberRef of this module (with the AssemblyRef and TypeRef it needs).
    Reference(mdToken),
}

impl MethodReference {
    /// The token a `call` names.
    pub fn token(self) -> mdToken {
        match self {
            MethodReference::Definition(token) | MethodReference::Reference(token) => token,
        }
    }
}

/// `name` as NUL-terminated UTF-16.
fn wide(name: &str) -> Vec<u16> {
    name.encode_utf16().chain([0]).collect()
}

impl ModuleMetadata {
    /// The simple name of the assembly this module belongs to (its manifest's
    /// Assembly row).
    ///
    /// # Errors
    /// [`ClrError::Failed`] for a module without a manifest (a netmodule) or when the
    /// runtime cannot read it.
    pub fn assembly_name(&self) -> ClrResult<String> {
        let a = self.assembly_import("GetAssemblyProps")?;
        let (v, this) = (a.vtbl(), a.as_raw());
        let mut assembly = 0;
        // SAFETY: a live IMetaDataAssemblyImport; one token written.
        check("GetAssemblyFromScope", unsafe {
            (v.GetAssemblyFromScope)(this, &mut assembly)
        })?;
        read_string("GetAssemblyProps", |buf, cap, needed| {
            // SAFETY: a live IMetaDataAssemblyImport; `buf` has `cap` writable units; the
            // outputs not needed are null, which the API allows.
            unsafe {
                (v.GetAssemblyProps)(
                    this,
                    assembly,
                    core::ptr::null_mut(),
                    core::ptr::null_mut(),
                    core::ptr::null_mut(),
                    buf,
                    cap,
                    needed,
                    core::ptr::null_mut(),
                    core::ptr::null_mut(),
                )
            }
        })
    }

    /// This module's AssemblyRefs, in table order.
    ///
    /// # Errors
    /// [`ClrError::Failed`] when the runtime cannot enumerate them.
    pub fn assembly_refs(&self) -> ClrResult<Vec<mdAssemblyRef>> {
        let a = self.assembly_import("EnumAssemblyRefs")?;
        let (v, this) = (a.vtbl(), a.as_raw());
        read_enum(
            "EnumAssemblyRefs",
            // SAFETY: a live IMetaDataAssemblyImport; `read_enum` passes the handle it
            // keeps (null at first) and a buffer of `cap` writable tokens.
            |handle, buf, cap, count| unsafe {
                (v.EnumAssemblyRefs)(this, handle, buf, cap, count)
            },
            // SAFETY: a handle the API opened, closed once.
            |handle| unsafe { (v.CloseEnum)(this, handle) },
        )
    }

    /// The AssemblyRef to `assembly`: the module's first one with its simple name
    /// (compared ignoring ASCII case, as the runtime's binder does), or a new one.
    ///
    /// # Errors
    /// [`ClrError::Failed`] when the metadata cannot be read, or opened for writing, or
    /// the runtime refuses the row.
    pub fn assembly_ref(&self, assembly: &AssemblyName<'_>) -> ClrResult<mdAssemblyRef> {
        for token in self.assembly_refs()? {
            if self
                .assembly_ref_name(token)?
                .eq_ignore_ascii_case(assembly.name)
            {
                return Ok(token);
            }
        }
        self.define_assembly_ref(assembly)
    }

    /// A new AssemblyRef row to `assembly` (`DefineAssemblyRef`), even if one exists.
    ///
    /// A module that gains an AssemblyRef is one the runtime has to resolve it from;
    /// CoreCLR 3.1 resolves it when a method using it is compiled.
    ///
    /// # Errors
    /// As [`ModuleMetadata::assembly_ref`].
    pub fn define_assembly_ref(&self, assembly: &AssemblyName<'_>) -> ClrResult<mdAssemblyRef> {
        const METHOD: &str = "DefineAssemblyRef";
        let emit = self.emit_ptr()?;
        let a = emit
            .query::<IMetaDataAssemblyEmitVtbl>()
            .map_err(|hr| ClrError::Failed {
                method: "QueryInterface(IMetaDataAssemblyEmit)",
                hr,
            })?;
        let name = wide(assembly.name);
        let data = assembly.metadata();
        let key_len = to_ulong(
            METHOD,
            "public key token length",
            assembly.public_key_token.len(),
        )?;
        let key = match assembly.public_key_token {
            [] => core::ptr::null(),
            key => key.as_ptr().cast::<c_void>(),
        };
        let mut token = 0;
        // SAFETY: a live IMetaDataAssemblyEmit; the key token (`key_len` bytes, all of
        // it), the NUL-terminated name and `data` (no buffers) are read during the call;
        // no hash value; flags 0 (the key is a token, not a full key).
        check(METHOD, unsafe {
            (a.vtbl().DefineAssemblyRef)(
                a.as_raw(),
                key,
                key_len,
                name.as_ptr(),
                &data,
                core::ptr::null(),
                0,
                0,
                &mut token,
            )
        })?;
        Ok(token)
    }

    /// Whether `token` (a TypeDef, MethodDef, parameter...) carries a custom attribute
    /// of the type named `name` (`System.Runtime.CompilerServices.IsByRefLikeAttribute`),
    /// by the attribute type's full name (`GetCustomAttributeByName`).
    ///
    /// # Errors
    /// [`ClrError::Failed`] when the runtime cannot read the attributes.
    pub fn has_custom_attribute(&self, token: mdToken, name: &str) -> ClrResult<bool> {
        let (v, this, _call) = self.import()?;
        let name = wide(name);
        let mut data: *const c_void = core::ptr::null();
        let mut len = 0u32;
        // SAFETY: a live import; `name` is NUL-terminated and read during the call; `data`
        // and `len` are valid out-pointers (the blob they point to is not read).
        let hr = unsafe {
            (v.base.GetCustomAttributeByName)(this, token, name.as_ptr(), &mut data, &mut len)
        };
        check("GetCustomAttributeByName", hr)?;
        // S_FALSE: no such attribute.
        Ok(hr.as_u32() == 0)
    }

    /// The TypeDef of the top-level type `name` (namespace included), if the module
    /// defines it.
    ///
    /// # Errors
    /// [`ClrError::Failed`] when the runtime fails otherwise than by not finding it.
    pub fn find_type_def(&self, name: &str) -> ClrResult<Option<mdToken>> {
        let (v, this, _call) = self.import()?;
        let name = wide(name);
        let mut token = 0;
        // SAFETY: a live import; the NUL-terminated name is read during the call.
        let hr = unsafe { (v.base.FindTypeDefByName)(this, name.as_ptr(), 0, &mut token) };
        found("FindTypeDefByName", hr, token)
    }

    /// The TypeDef of the type nested in TypeDef `enclosing` whose name is `name` (a
    /// nested type has no namespace of its own), if the module defines it.
    ///
    /// # Errors
    /// [`ClrError::Failed`] when the runtime fails otherwise than by not finding it.
    pub fn find_nested_type_def(
        &self,
        name: &str,
        enclosing: mdToken,
    ) -> ClrResult<Option<mdToken>> {
        let (v, this, _call) = self.import()?;
        let name = wide(name);
        let mut token = 0;
        // SAFETY: a live import; the NUL-terminated name is read during the call.
        let hr = unsafe { (v.base.FindTypeDefByName)(this, name.as_ptr(), enclosing, &mut token) };
        found("FindTypeDefByName", hr, token)
    }

    /// The TypeDef named `path`: a top-level type (`Namespace.Type`), or a nested one
    /// with each enclosing type before it, separated by `/` (`Namespace.Outer/Inner`).
    ///
    /// # Errors
    /// As [`ModuleMetadata::find_type_def`].
    pub fn find_type_def_path(&self, path: &str) -> ClrResult<Option<mdToken>> {
        let mut names = path.split('/');
        let Some(mut found) = self.find_type_def(names.next().unwrap_or(""))? else {
            return Ok(None);
        };
        for name in names {
            match self.find_nested_type_def(name, found)? {
                Some(nested) => found = nested,
                None => return Ok(None),
            }
        }
        Ok(Some(found))
    }

    /// The MethodDef of `name` with exactly the signature `signature` on TypeDef
    /// `type_def`, if there is one.
    ///
    /// # Errors
    /// As [`ModuleMetadata::find_type_def`], and [`ClrError::LengthOverflow`] for a
    /// signature of 4 GiB or more.
    pub fn find_method_def(
        &self,
        type_def: mdToken,
        name: &str,
        signature: &[u8],
    ) -> ClrResult<Option<mdToken>> {
        let (v, this, _call) = self.import()?;
        let len = to_ulong("FindMethod", "signature length", signature.len())?;
        let name = wide(name);
        let mut token = 0;
        // SAFETY: a live import; the NUL-terminated name and the signature (`len` bytes,
        // all of it) are read during the call.
        let hr = unsafe {
            (v.base.FindMethod)(
                this,
                type_def,
                name.as_ptr(),
                signature.as_ptr(),
                len,
                &mut token,
            )
        };
        found("FindMethod", hr, token)
    }

    /// The MethodDefs of TypeDef `type_def`, in table order.
    ///
    /// # Errors
    /// [`ClrError::Failed`] when the runtime cannot enumerate them.
    pub fn methods_of(&self, type_def: mdToken) -> ClrResult<Vec<mdToken>> {
        let (v, this, _call) = self.import()?;
        read_enum(
            "EnumMethods",
            // SAFETY: a live import; `read_enum` passes the handle it keeps (null at
            // first) and a buffer of `cap` writable tokens.
            |handle, buf, cap, count| unsafe {
                (v.base.EnumMethods)(this, handle, type_def, buf, cap, count)
            },
            // SAFETY: a handle the API opened, closed once.
            |handle| unsafe { (v.base.CloseEnum)(this, handle) },
        )
    }

    /// A token for calling static or instance method `method` (signature `signature`)
    /// of the top-level type `type_name` of `assembly`: in a module of that assembly
    /// its MethodDef, found by name and exact signature; elsewhere a MemberRef on a
    /// TypeRef on the module's AssemblyRef to it ([`ModuleMetadata::assembly_ref`]),
    /// each found or defined.
    ///
    /// Metadata belongs to module load: call it from `ModuleLoadFinished` for the
    /// methods a later rewrite (at first JIT or by ReJIT) will call.
    ///
    /// # Errors
    /// [`ClrError::Unexpected`] when the module is the assembly's and has no such type
    /// or method; the errors of the metadata calls otherwise.
    pub fn method_in(
        &self,
        assembly: &AssemblyName<'_>,
        type_name: &str,
        method: &str,
        signature: &MethodSig,
    ) -> ClrResult<MethodReference> {
        let blob = signature.to_bytes().map_err(|_| ClrError::Unexpected {
            method: "method_in",
            what: "the signature cannot be encoded",
        })?;
        if self.assembly_name()?.eq_ignore_ascii_case(assembly.name) {
            let not_found = ClrError::Unexpected {
                method: "method_in",
                what: "the module is the assembly's and does not define the method",
            };
            let type_def = self.find_type_def(type_name)?.ok_or(not_found.clone())?;
            let token = self
                .find_method_def(type_def, method, &blob)?
                .ok_or(not_found)?;
            return Ok(MethodReference::Definition(token));
        }
        let scope = self.assembly_ref(assembly)?;
        let type_ref = self.define_type_ref(scope, type_name)?;
        let member = self.define_member_ref(type_ref, method, &blob)?;
        Ok(MethodReference::Reference(member))
    }
}

/// Reads a metadata enumeration to its end: `next(handle, buffer, capacity, count)`
/// writes the next batch of tokens (none at the end), `close` closes the handle if the
/// first call opened one, whatever the outcome.
fn read_enum(
    method: &'static str,
    mut next: impl FnMut(*mut HCorEnum, *mut mdToken, u32, *mut u32) -> HResult,
    close: impl FnOnce(HCorEnum),
) -> ClrResult<Vec<mdToken>> {
    const BATCH: u32 = 64;
    let mut handle: HCorEnum = core::ptr::null_mut();
    let mut tokens = Vec::new();
    let mut batch = [0; BATCH as usize];
    let result = loop {
        let mut count = 0u32;
        let hr = next(&mut handle, batch.as_mut_ptr(), BATCH, &mut count);
        if let Err(e) = check(method, hr) {
            break Err(e);
        }
        // A count beyond the batch (or beyond `usize`) reads only the tokens written.
        let count =
            from_ulong(method, "token count", count).map_or(batch.len(), |n| n.min(batch.len()));
        if count == 0 {
            break Ok(tokens);
        }
        tokens.extend_from_slice(&batch[..count]);
    };
    if !handle.is_null() {
        close(handle);
    }
    result
}

/// `Some(token)` for a success, `None` for `CLDB_E_RECORD_NOTFOUND`, an error otherwise.
fn found(method: &'static str, hr: HResult, token: mdToken) -> ClrResult<Option<mdToken>> {
    if hr.as_u32() == CLDB_E_RECORD_NOTFOUND {
        return Ok(None);
    }
    check(method, hr)?;
    Ok(Some(token))
}

//! [`ModuleMetadata`]: a module's metadata inside the runtime (`IMetaDataImport2`, and
//! `IMetaDataEmit2` when opened for writing), as a [`MetadataSource`].

use core::ffi::c_void;

use super::error::{ClrError, ClrResult, check, from_ulong, to_ulong};
use super::guard::{RuntimeCall, enter_runtime};
use super::info::ProfilerInfo;
use crate::clr::com::ComPtr;
use crate::clr::sys::{
    HCorEnum, HResult, IMetaDataAssemblyImportVtbl, IMetaDataEmit2Vtbl, IMetaDataImport2Vtbl,
    ModuleID, mdToken,
};
use crate::error::{Error, Result};
use crate::metadata::{MemberName, MetadataSource, TypeName, table, token_table};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

mod define;
mod references;

pub use references::{AssemblyName, MethodReference};

/// `CLDB_E_RECORD_NOTFOUND`: what `GetNestedClassProps` answers for a type that is not
/// nested.
const CLDB_E_RECORD_NOTFOUND: u32 = 0x8013_1130;

/// A module's metadata as the runtime holds it: read through `IMetaDataImport2`, and
/// when opened for writing, extended through `IMetaDataEmit2` (signature tokens, type
/// and member references for injected calls).
///
/// Implements [`MetadataSource`], so the stack analysis
/// ([`crate::analysis::CachingResolver::for_module`]), the return-value local and the
/// disassembler work on it as on an assembly file. Signature blobs are borrowed from the
/// runtime's metadata, which keeps them at their place while the module is loaded (its
/// heaps grow by new segments, never by moving old ones).
///
/// The runtime's metadata interfaces are free-threaded: one `ModuleMetadata` per module
/// is shared by every thread (`Send + Sync`).
///
/// # Read-only until something is defined
///
/// Opened with [`ModuleMetadata::open`], the metadata is read-only until the first
/// definition ([`ModuleMetadata::token_from_sig`], ...): only then is it opened for
/// writing, which makes the runtime convert the module's metadata to its read-write
/// form, a cost it then pays on later metadata accesses (on a program that JIT-compiles
/// 4,500 methods, rewriting every method unchanged cost about 5% of its run time with
/// write access from the start and about 3% without, in one comparison). From then on
/// every read goes through the read-write import, which sees the new definitions.
/// Clones share all of this: one per module is enough.
#[derive(Debug, Clone)]
pub struct ModuleMetadata(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    info: ProfilerInfo,
    module: ModuleID,
    /// The import opened first (read-only unless `open` was asked for writing).
    import: ComPtr<IMetaDataImport2Vtbl>,
    /// The read-write import and the emitter, once opened (or why they could not be).
    write: OnceLock<ClrResult<(ComPtr<IMetaDataImport2Vtbl>, ComPtr<IMetaDataEmit2Vtbl>)>>,
    assembly_import: Option<ComPtr<IMetaDataAssemblyImportVtbl>>,
    /// Call-site signatures defined, by blob
    /// ([`ModuleMetadata::call_site_signature`]): a few per module.
    call_sites: Mutex<HashMap<Box<[u8]>, mdToken>>,
}

/// Reads a UTF-16 string the metadata API writes into a caller's buffer: `call(buffer,
/// capacity, &mut needed)`, again with a larger buffer if it was too small.
fn read_string(
    method: &'static str,
    mut call: impl FnMut(*mut u16, u32, &mut u32) -> HResult,
) -> ClrResult<String> {
    let mut buf = vec![0u16; 256];
    loop {
        let capacity = to_ulong(method, "name buffer length", buf.len())?;
        let mut needed = 0u32;
        let hr = call(buf.as_mut_ptr(), capacity, &mut needed);
        let needed = from_ulong(method, "name length", needed)?;
        // CLDB_S_TRUNCATION (0x00131106) is a success code: grow and ask again.
        if (hr.is_ok() && needed > buf.len()) || hr.as_u32() == 0x0013_1106 {
            if needed <= buf.len() {
                buf.resize(buf.len() * 2, 0);
            } else {
                buf.resize(needed, 0);
            }
            continue;
        }
        check(method, hr)?;
        let text = &buf[..needed.min(buf.len())];
        let text = text.strip_suffix(&[0]).unwrap_or(text);
        return Ok(String::from_utf16_lossy(text));
    }
}

/// The crate's error for a failed metadata call, naming the token.
fn bad(token: u32, _e: ClrError) -> Error {
    Error::BadToken {
        token,
        what: "the runtime's metadata does not resolve this token",
    }
}

/// A blob the metadata API returned, as a slice borrowed from `_owner`.
///
/// # Safety
/// `ptr` must point to `len` bytes that stay valid and unchanged while `_owner` lives.
unsafe fn blob<T>(_owner: &T, ptr: *const u8, len: usize) -> &[u8] {
    if ptr.is_null() || len == 0 {
        return &[];
    }
    // SAFETY: the caller's promise.
    unsafe { core::slice::from_raw_parts(ptr, len) }
}

impl ModuleMetadata {
    /// Opens the metadata of `module` for reading; it is opened for writing the first
    /// time something is defined (see the type's documentation; it works on every
    /// module, ReadyToRun ones included).
    ///
    /// # Errors
    /// The errors of [`ProfilerInfo::module_metadata`].
    pub fn open(info: &ProfilerInfo, module: ModuleID) -> ClrResult<ModuleMetadata> {
        let import: ComPtr<IMetaDataImport2Vtbl> = info.module_metadata(module, false)?;
        let assembly_import = import.query::<IMetaDataAssemblyImportVtbl>().ok();
        Ok(ModuleMetadata(Arc::new(Inner {
            info: info.clone(),
            module,
            import,
            write: OnceLock::new(),
            assembly_import,
            call_sites: Mutex::default(),
        })))
    }

    /// What tells this module's metadata apart from any other module's while this
    /// value is alive: the address of the metadata object it holds a reference to (a
    /// later module given the same `ModuleID` after this one unloaded cannot have its
    /// metadata at that address while the reference is held).
    pub fn identity(&self) -> usize {
        self.0.import.as_raw() as usize
    }

    /// The [`ModuleMetadata::identity`] module `module` has now, without opening it
    /// (after a module's first `GetModuleMetaData`, CoreCLR answers from its cached
    /// metadata object: a `QueryInterface`).
    ///
    /// # Errors
    /// [`ClrError::Failed`] for a module the runtime does not know or that is unloading
    /// (`CORPROF_E_DATAINCOMPLETE`).
    pub fn identity_of(info: &ProfilerInfo, module: ModuleID) -> ClrResult<usize> {
        let import: ComPtr<IMetaDataImport2Vtbl> = info.module_metadata(module, false)?;
        Ok(import.as_raw() as usize)
    }

    /// The import to read through (the read-write one once it exists), with the
    /// shutdown gate's count of the call to be made through it ([`RuntimeCall`]: keep
    /// it until the call returned).
    ///
    /// # Errors
    /// [`ClrError::ShuttingDown`] once the runtime's `Shutdown` arrived (outside a
    /// callback).
    fn import(&self) -> ClrResult<(&IMetaDataImport2Vtbl, *mut c_void, RuntimeCall)> {
        let call = enter_runtime().ok_or(ClrError::ShuttingDown {
            method: "IMetaDataImport2",
        })?;
        let import = match self.0.write.get() {
            Some(Ok((import, _))) => import,
            _ => &self.0.import,
        };
        Ok((import.vtbl(), import.as_raw(), call))
    }

    /// The emitter, the module's metadata opened for writing on first use, with the
    /// shutdown gate's count of the call (as for [`ModuleMetadata::import`]).
    fn emit(
        &self,
        method: &'static str,
    ) -> ClrResult<(&IMetaDataEmit2Vtbl, *mut c_void, RuntimeCall)> {
        let call = enter_runtime().ok_or(ClrError::ShuttingDown { method })?;
        let opened = self.0.write.get_or_init(|| {
            let import: ComPtr<IMetaDataImport2Vtbl> =
                self.0.info.module_metadata(self.0.module, true)?;
            let emit = import
                .query::<IMetaDataEmit2Vtbl>()
                .map_err(|hr| ClrError::Failed {
                    method: "QueryInterface(IMetaDataEmit2)",
                    hr,
                })?;
            Ok((import, emit))
        });
        match opened {
            Ok((_, emit)) => Ok((emit.vtbl(), emit.as_raw(), call)),
            Err(e) => Err(match e {
                ClrError::Failed { hr, .. } => ClrError::Failed { method, hr: *hr },
                other => other.clone(),
            }),
        }
    }

    /// A TypeDef's flags (`CorTypeAttr`: visibility, layout, semantics), from
    /// `GetTypeDefProps`.
    ///
    /// # Errors
    /// [`ClrError::Failed`] for a token the module does not define.
    pub fn type_def_flags(&self, type_def: mdToken) -> ClrResult<u32> {
        let (v, this, _call) = self.import()?;
        let (mut needed, mut flags) = (0u32, 0u32);
        // SAFETY: a live import; no name buffer (a null buffer of 0 units is allowed, the
        // needed length goes to `needed`), `flags` a valid out-pointer, extends null.
        let hr = unsafe {
            (v.base.GetTypeDefProps)(
                this,
                type_def,
                core::ptr::null_mut(),
                0,
                &mut needed,
                &mut flags,
                core::ptr::null_mut(),
            )
        };
        // CLDB_S_TRUNCATION: the name did not fit the empty buffer, the rest is read.
        if hr.as_u32() != 0x0013_1106 {
            check("GetTypeDefProps", hr)?;
        }
        Ok(flags)
    }

    /// Whether the module's metadata has been opened for writing.
    pub fn is_writable(&self) -> bool {
        matches!(self.0.write.get(), Some(Ok(_)))
    }

    /// The StandAloneSig token of a signature (a LocalVarSig, or the method signature of
    /// a `calli`), defined if the module has none yet (`GetTokenFromSig`).
    ///
    /// # Errors
    /// [`ClrError::Failed`] when the metadata cannot be opened for writing or the
    /// runtime refuses the blob.
    pub fn token_from_sig(&self, signature: &[u8]) -> ClrResult<mdToken> {
        let (v, this, _call) = self.emit("GetTokenFromSig")?;
        let len = to_ulong("GetTokenFromSig", "signature length", signature.len())?;
        let mut token = 0;
        // SAFETY: a live IMetaDataEmit2; the blob, `len` bytes (all of it), is read during
        // the call only.
        check("GetTokenFromSig", unsafe {
            (v.base.GetTokenFromSig)(this, signature.as_ptr(), len, &mut token)
        })?;
        Ok(token)
    }

    /// A TypeRef to `name` (namespace included, e.g. `"System.Object"`) resolved in
    /// `scope` (an AssemblyRef, ModuleRef or enclosing TypeRef), defined if absent.
    ///
    /// # Errors
    /// As [`ModuleMetadata::token_from_sig`].
    pub fn define_type_ref(&self, scope: mdToken, name: &str) -> ClrResult<mdToken> {
        let (v, this, _call) = self.emit("DefineTypeRefByName")?;
        let name: Vec<u16> = name.encode_utf16().chain([0]).collect();
        let mut token = 0;
        // SAFETY: a live IMetaDataEmit2; `name` is NUL-terminated UTF-16 read during the
        // call.
        check("DefineTypeRefByName", unsafe {
            (v.base.DefineTypeRefByName)(this, scope, name.as_ptr(), &mut token)
        })?;
        Ok(token)
    }

    /// A MemberRef to method or field `name` with `signature` on `parent` (a TypeRef,
    /// TypeDef, TypeSpec or ModuleRef), defined if absent.
    ///
    /// # Errors
    /// As [`ModuleMetadata::token_from_sig`].
    pub fn define_member_ref(
        &self,
        parent: mdToken,
        name: &str,
        signature: &[u8],
    ) -> ClrResult<mdToken> {
        let (v, this, _call) = self.emit("DefineMemberRef")?;
        let len = to_ulong("DefineMemberRef", "signature length", signature.len())?;
        let name: Vec<u16> = name.encode_utf16().chain([0]).collect();
        let mut token = 0;
        // SAFETY: a live IMetaDataEmit2; `name` and `signature` (`len` bytes, all of it)
        // are read during the call.
        check("DefineMemberRef", unsafe {
            (v.base.DefineMemberRef)(
                this,
                parent,
                name.as_ptr(),
                signature.as_ptr(),
                len,
                &mut token,
            )
        })?;
        Ok(token)
    }

    /// Whether `token` names a row (or a string-heap entry) of this module's metadata
    /// (`IMetaDataImport::IsValidToken`); false when the metadata cannot be read.
    pub fn is_valid_token(&self, token: mdToken) -> bool {
        let Ok((v, this, _call)) = self.import() else {
            return false;
        };
        // SAFETY: a live IMetaDataImport2; the call takes a number and reads nothing else.
        unsafe { (v.base.IsValidToken)(this, token) != 0 }
    }

    /// The raw `IMetaDataImport2` reads go through, for what this wrapper does not cover.
    pub fn import_ptr(&self) -> &ComPtr<IMetaDataImport2Vtbl> {
        match self.0.write.get() {
            Some(Ok((import, _))) => import,
            _ => &self.0.import,
        }
    }

    /// The raw `IMetaDataEmit2`, opening the metadata for writing if needed.
    ///
    /// # Errors
    /// When the runtime does not open the module's metadata for writing.
    pub fn emit_ptr(&self) -> ClrResult<&ComPtr<IMetaDataEmit2Vtbl>> {
        let (_, _, _opened) = self.emit("IMetaDataEmit2")?;
        match self.0.write.get() {
            Some(Ok((_, emit))) => Ok(emit),
            _ => Err(ClrError::Unexpected {
                method: "IMetaDataEmit2",
                what: "not opened",
            }),
        }
    }

    /// The `IMetaDataAssemblyImport` of the import reads go through (the read-write
    /// one, which sees new AssemblyRefs, once the module is open for writing).
    fn assembly_import(
        &self,
        method: &'static str,
    ) -> ClrResult<std::borrow::Cow<'_, ComPtr<IMetaDataAssemblyImportVtbl>>> {
        let missing = ClrError::Unexpected {
            method,
            what: "no IMetaDataAssemblyImport",
        };
        match self.0.write.get() {
            Some(Ok((import, _))) => import
                .query::<IMetaDataAssemblyImportVtbl>()
                .map(std::borrow::Cow::Owned)
                .map_err(|_| missing),
            _ => self
                .0
                .assembly_import
                .as_ref()
                .map(std::borrow::Cow::Borrowed)
                .ok_or(missing),
        }
    }

    /// The name of an AssemblyRef.
    fn assembly_ref_name(&self, token: mdToken) -> ClrResult<String> {
        let a = self.assembly_import("GetAssemblyRefProps")?;
        read_string("GetAssemblyRefProps", |buf, cap, needed| {
            // SAFETY: a live IMetaDataAssemblyImport; `buf` has `cap` writable units;
            // the out-parameters the crate does not need are null, which the API allows.
            unsafe {
                (a.vtbl().GetAssemblyRefProps)(
                    a.as_raw(),
                    token,
                    core::ptr::null_mut(),
                    core::ptr::null_mut(),
                    buf,
                    cap,
                    needed,
                    core::ptr::null_mut(),
                    core::ptr::null_mut(),
                    core::ptr::null_mut(),
                    core::ptr::null_mut(),
                )
            }
        })
    }
}

/// Splits a metadata full name `Namespace.Name` at its last dot.
fn split_name(full: String) -> (String, String) {
    match full.rfind('.') {
        Some(i) if i > 0 => (full[..i].to_string(), full[i + 1..].to_string()),
        _ => (String::new(), full),
    }
}

impl MetadataSource for ModuleMetadata {
    fn signature(&self, token: u32) -> Result<&[u8]> {
        let (v, this, _call) = self.import().map_err(|e| bad(token, e))?;
        let (mut ptr, mut len) = (core::ptr::null(), 0u32);
        let null = core::ptr::null_mut();
        // SAFETY (every arm): a live IMetaDataImport2; out-pointers are valid locals or
        // null where the API allows it; a zero-capacity name buffer asks for no name.
        let hr = unsafe {
            match token_table(token) {
                table::METHOD_DEF => (v.base.GetMethodProps)(
                    this, token, null as _, null as _, 0, null as _, null as _, &mut ptr, &mut len,
                    null as _, null as _,
                ),
                table::MEMBER_REF => (v.base.GetMemberRefProps)(
                    this, token, null as _, null as _, 0, null as _, &mut ptr, &mut len,
                ),
                table::FIELD => (v.base.GetFieldProps)(
                    this, token, null as _, null as _, 0, null as _, null as _, &mut ptr, &mut len,
                    null as _, null as _, null as _,
                ),
                table::STANDALONE_SIG => (v.base.GetSigFromToken)(this, token, &mut ptr, &mut len),
                table::TYPE_SPEC => (v.base.GetTypeSpecFromToken)(this, token, &mut ptr, &mut len),
                table::METHOD_SPEC => {
                    (v.GetMethodSpecProps)(this, token, null as _, &mut ptr, &mut len)
                }
                _ => {
                    return Err(Error::BadToken {
                        token,
                        what: "not a token with a signature",
                    });
                }
            }
        };
        check("signature", hr).map_err(|e| bad(token, e))?;
        let len = from_ulong("signature", "blob length", len).map_err(|e| bad(token, e))?;
        // SAFETY: the runtime returned `len` bytes of the module's blob heap, which stay
        // in place while the module is loaded: the read-only import (to which `self`
        // holds a reference, also after the read-write one exists) reads the module's
        // mapped image, and the read-write heaps grow by new segments.
        Ok(unsafe { blob(self, ptr, len) })
    }

    fn method_spec_parent(&self, token: u32) -> Result<u32> {
        if token_table(token) != table::METHOD_SPEC {
            return Err(Error::BadToken {
                token,
                what: "not a MethodSpec token",
            });
        }
        let (v, this, _call) = self.import().map_err(|e| bad(token, e))?;
        let (mut parent, mut ptr, mut len) = (0, core::ptr::null(), 0u32);
        // SAFETY: a live IMetaDataImport2; valid out-pointers.
        let hr = unsafe { (v.GetMethodSpecProps)(this, token, &mut parent, &mut ptr, &mut len) };
        check("GetMethodSpecProps", hr).map_err(|e| bad(token, e))?;
        Ok(parent)
    }

    fn type_name(&self, token: u32) -> Result<TypeName> {
        let (v, this, _call) = self.import().map_err(|e| bad(token, e))?;
        match token_table(token) {
            table::TYPE_DEF => {
                let full = read_string("GetTypeDefProps", |buf, cap, needed| {
                    // SAFETY: a live import; `buf` has `cap` units; flags/extends null.
                    unsafe {
                        (v.base.GetTypeDefProps)(
                            this,
                            token,
                            buf,
                            cap,
                            needed,
                            core::ptr::null_mut(),
                            core::ptr::null_mut(),
                        )
                    }
                })
                .map_err(|e| bad(token, e))?;
                let mut enclosing = 0;
                // SAFETY: a live import; a valid out-pointer.
                let hr = unsafe { (v.base.GetNestedClassProps)(this, token, &mut enclosing) };
                let enclosing = match hr {
                    hr if hr.is_ok() && enclosing != 0 => Some(enclosing),
                    hr if hr.is_ok() || hr.as_u32() == CLDB_E_RECORD_NOTFOUND => None,
                    hr => {
                        return Err(bad(
                            token,
                            ClrError::Failed {
                                method: "GetNestedClassProps",
                                hr,
                            },
                        ));
                    }
                };
                let (namespace, name) = split_name(full);
                Ok(TypeName {
                    namespace,
                    name,
                    enclosing,
                    assembly: None,
                })
            }
            table::TYPE_REF => {
                let mut scope = 0;
                let full = read_string("GetTypeRefProps", |buf, cap, needed| {
                    // SAFETY: a live import; `buf` has `cap` units; `scope` is valid.
                    unsafe { (v.base.GetTypeRefProps)(this, token, &mut scope, buf, cap, needed) }
                })
                .map_err(|e| bad(token, e))?;
                let (namespace, name) = split_name(full);
                let (enclosing, assembly) = match token_table(scope) {
                    table::TYPE_REF => (Some(scope), None),
                    0x23 => (None, self.assembly_ref_name(scope).ok()),
                    _ => (None, None),
                };
                Ok(TypeName {
                    namespace,
                    name,
                    enclosing,
                    assembly,
                })
            }
            _ => Err(Error::BadToken {
                token,
                what: "not a TypeDef or TypeRef token",
            }),
        }
    }

    fn type_extends(&self, type_def: u32) -> Result<Option<u32>> {
        if token_table(type_def) != table::TYPE_DEF {
            return Err(Error::BadToken {
                token: type_def,
                what: "not a TypeDef token",
            });
        }
        let (v, this, _call) = self.import().map_err(|e| bad(type_def, e))?;
        let (mut needed, mut extends) = (0u32, 0u32);
        // SAFETY: a live import; no name buffer (a null buffer of 0 units is allowed, the
        // needed length goes to `needed`), the flags null, `extends` a valid out-pointer.
        let hr = unsafe {
            (v.base.GetTypeDefProps)(
                this,
                type_def,
                core::ptr::null_mut(),
                0,
                &mut needed,
                core::ptr::null_mut(),
                &mut extends,
            )
        };
        // CLDB_S_TRUNCATION: the name did not fit the empty buffer, the rest is read.
        if hr.as_u32() != 0x0013_1106 {
            check("GetTypeDefProps", hr).map_err(|e| bad(type_def, e))?;
        }
        Ok((extends & 0x00FF_FFFF != 0).then_some(extends))
    }

    fn member_name(&self, token: u32) -> Result<MemberName> {
        let (v, this, _call) = self.import().map_err(|e| bad(token, e))?;
        let mut owner = 0;
        let null = core::ptr::null_mut();
        let name = match token_table(token) {
            table::METHOD_DEF => read_string("GetMethodProps", |buf, cap, needed| {
                // SAFETY: a live import; `buf` has `cap` units; other outs valid or null.
                unsafe {
                    (v.base.GetMethodProps)(
                        this, token, &mut owner, buf, cap, needed, null, null as _, null, null,
                        null,
                    )
                }
            }),
            table::FIELD => read_string("GetFieldProps", |buf, cap, needed| {
                // SAFETY: as above.
                unsafe {
                    (v.base.GetFieldProps)(
                        this, token, &mut owner, buf, cap, needed, null, null as _, null, null,
                        null as _, null,
                    )
                }
            }),
            table::MEMBER_REF => read_string("GetMemberRefProps", |buf, cap, needed| {
                // SAFETY: as above.
                unsafe {
                    (v.base.GetMemberRefProps)(
                        this, token, &mut owner, buf, cap, needed, null as _, null,
                    )
                }
            }),
            _ => {
                return Err(Error::BadToken {
                    token,
                    what: "not a MethodDef, Field or MemberRef token",
                });
            }
        }
        .map_err(|e| bad(token, e))?;
        // TypeDef row 1 is `<Module>`, the owner of global members.
        let owner = (owner != 0 && owner != 0x0200_0001).then_some(owner);
        Ok(MemberName { owner, name })
    }

    fn user_string(&self, token: u32) -> Result<Vec<u16>> {
        let (v, this, _call) = self.import().map_err(|e| bad(token, e))?;
        let mut buf = vec![0u16; 256];
        loop {
            let capacity = to_ulong("GetUserString", "string buffer length", buf.len())
                .map_err(|e| bad(token, e))?;
            let mut needed = 0u32;
            // SAFETY: a live import; `buf` has `capacity` (its length) writable units.
            let hr = unsafe {
                (v.base.GetUserString)(this, token, buf.as_mut_ptr(), capacity, &mut needed)
            };
            let needed =
                from_ulong("GetUserString", "string length", needed).map_err(|e| bad(token, e))?;
            if (hr.is_ok() || hr.as_u32() == 0x0013_1106) && needed > buf.len() {
                buf.resize(needed, 0);
                continue;
            }
            check("GetUserString", hr).map_err(|e| bad(token, e))?;
            buf.truncate(needed);
            return Ok(buf);
        }
    }

    fn generic_param_name(&self, owner: u32, index: u32) -> Option<String> {
        let (v, this, _call) = self.import().ok()?;
        let mut handle: HCorEnum = core::ptr::null_mut();
        let mut params = [0u32; 64];
        let mut count = 0u32;
        // SAFETY: a live import; `handle` starts null as the API requires, `params` has
        // 64 writable tokens, the capacity passed.
        let hr = unsafe {
            (v.EnumGenericParams)(
                this,
                &mut handle,
                owner,
                params.as_mut_ptr(),
                64,
                &mut count,
            )
        };
        if !handle.is_null() {
            // SAFETY: a handle the API opened, closed once.
            unsafe { (v.base.CloseEnum)(this, handle) };
        }
        if hr.is_err() {
            return None;
        }
        // A count beyond the capacity (or beyond `usize`) reads only the tokens written.
        let count = usize::try_from(count).map_or(params.len(), |n| n.min(params.len()));
        for &param in &params[..count] {
            let mut seq = 0u32;
            let name = read_string("GetGenericParamProps", |buf, cap, needed| {
                // SAFETY: a live import; `buf` has `cap` units; other outs valid or null.
                unsafe {
                    (v.GetGenericParamProps)(
                        this,
                        param,
                        &mut seq,
                        core::ptr::null_mut(),
                        core::ptr::null_mut(),
                        core::ptr::null_mut(),
                        buf,
                        cap,
                        needed,
                    )
                }
            })
            .ok()?;
            if seq == index {
                return Some(name);
            }
        }
        None
    }
}

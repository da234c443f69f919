//! Typed definitions in a module's metadata: the tokens injected IL names (TypeSpec,
//! MemberRef to a method or a field, MethodSpec, StandAloneSig, user string), each from
//! a signature value ([`TypeSig`], [`MethodSig`], [`FieldSig`]) rather than
//! hand-written bytes.
//!
//! Each one is found if the module has it already (the runtime's emitter checks for
//! duplicates of these rows) or defined. Metadata belongs to module load: define what a
//! rewrite will name in `ModuleLoadFinished` and keep the tokens (the one exception the
//! runtime makes is the StandAloneSig of a method's new locals, which the pipeline
//! defines at JIT time).

use super::ModuleMetadata;
use crate::clr::runtime::error::{ClrError, ClrResult, check, to_ulong};
use crate::clr::sys::{mdMemberRef, mdMethodSpec, mdSignature, mdString, mdToken, mdTypeSpec};
use crate::sig::{FieldSig, MethodSig, TypeSig, write_compressed_u32};

/// `IMAGE_CEE_CS_CALLCONV_GENERICINST`: the first byte of a MethodSpec's instantiation.
const GENERIC_INST: u8 = 0x0A;

/// The error for a signature value that does not encode.
fn unencodable(method: &'static str) -> ClrError {
    ClrError::Unexpected {
        method,
        what: "the signature cannot be encoded",
    }
}

/// A MethodSpec instantiation blob: `GENERICINST count type*`.
fn instantiation_blob(arguments: &[TypeSig]) -> Option<Vec<u8>> {
    if arguments.is_empty() {
        return None;
    }
    let mut blob = vec![GENERIC_INST];
    write_compressed_u32(u32::try_from(arguments.len()).ok()?, &mut blob).ok()?;
    for argument in arguments {
        argument.encode(&mut blob).ok()?;
    }
    Some(blob)
}

impl ModuleMetadata {
    /// The TypeSpec token of `ty` (a generic instantiation `List<int>`, an array, a
    /// pointer: any type a TypeRef cannot name), found or defined
    /// (`GetTokenFromTypeSpec`). Its `Class`/`ValueType`/`GenericInst` tokens must be
    /// this module's.
    ///
    /// # Errors
    /// [`ClrError::Unexpected`] for a type that does not encode; the runtime's refusal
    /// otherwise.
    pub fn type_spec(&self, ty: &TypeSig) -> ClrResult<mdTypeSpec> {
        const METHOD: &str = "GetTokenFromTypeSpec";
        let mut blob = Vec::new();
        ty.encode(&mut blob).map_err(|_| unencodable(METHOD))?;
        let (v, this, _call) = self.emit(METHOD)?;
        let len = to_ulong(METHOD, "signature length", blob.len())?;
        let mut token = 0;
        // SAFETY: a live IMetaDataEmit2; the blob (`len` bytes, all of it) is read during
        // the call.
        check(METHOD, unsafe {
            (v.base.GetTokenFromTypeSpec)(this, blob.as_ptr(), len, &mut token)
        })?;
        Ok(token)
    }

    /// A MemberRef to method `name` of `parent` (a TypeRef, TypeDef or TypeSpec of this
    /// module) with `signature`, found or defined.
    ///
    /// # Errors
    /// As [`ModuleMetadata::type_spec`].
    pub fn method_ref(
        &self,
        parent: mdToken,
        name: &str,
        signature: &MethodSig,
    ) -> ClrResult<mdMemberRef> {
        let blob = signature
            .to_bytes()
            .map_err(|_| unencodable("DefineMemberRef"))?;
        self.define_member_ref(parent, name, &blob)
    }

    /// A MemberRef to field `name` of `parent` (a TypeRef, TypeDef or TypeSpec of this
    /// module) of type `signature`, found or defined: what `ldsfld`, `stfld` and
    /// `ldflda` name.
    ///
    /// # Errors
    /// As [`ModuleMetadata::type_spec`].
    pub fn field_ref(
        &self,
        parent: mdToken,
        name: &str,
        signature: &FieldSig,
    ) -> ClrResult<mdMemberRef> {
        let blob = signature
            .to_bytes()
            .map_err(|_| unencodable("DefineMemberRef"))?;
        self.define_member_ref(parent, name, &blob)
    }

    /// The MethodSpec of generic method `method` (its MethodDef or MemberRef)
    /// instantiated with `arguments` (`Touch<int>`), found or defined
    /// (`DefineMethodSpec`).
    ///
    /// # Errors
    /// [`ClrError::Unexpected`] for no arguments or one that does not encode; the
    /// runtime's refusal otherwise.
    pub fn method_spec(&self, method: mdToken, arguments: &[TypeSig]) -> ClrResult<mdMethodSpec> {
        const METHOD: &str = "DefineMethodSpec";
        let blob = instantiation_blob(arguments).ok_or(ClrError::Unexpected {
            method: METHOD,
            what: "no type arguments, or one that does not encode",
        })?;
        let (v, this, _call) = self.emit(METHOD)?;
        let len = to_ulong(METHOD, "signature length", blob.len())?;
        let mut token = 0;
        // SAFETY: a live IMetaDataEmit2; the blob (`len` bytes, all of it) is read during
        // the call.
        check(METHOD, unsafe {
            (v.DefineMethodSpec)(this, method, blob.as_ptr(), len, &mut token)
        })?;
        Ok(token)
    }

    /// The StandAloneSig of a method signature, what a `calli` names, found or defined
    /// once per module: later calls with the same signature answer from this module's
    /// cache without calling the runtime.
    ///
    /// # Errors
    /// As [`ModuleMetadata::type_spec`].
    pub fn call_site_signature(&self, signature: &MethodSig) -> ClrResult<mdSignature> {
        let blob = signature
            .to_bytes()
            .map_err(|_| unencodable("GetTokenFromSig"))?;
        self.cached_signature(&blob)
    }

    /// [`ModuleMetadata::token_from_sig`] through this module's cache of call-site
    /// signatures.
    fn cached_signature(&self, blob: &[u8]) -> ClrResult<mdSignature> {
        let cache = &self.0.call_sites;
        if let Some(&token) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(blob) {
            return Ok(token);
        }
        // Defined outside the lock: two threads may both ask the runtime, which
        // answers both with the same row (it checks for duplicate signatures).
        let token = self.token_from_sig(blob)?;
        cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(blob.into(), token);
        Ok(token)
    }

    /// The token of user string `text` (what `ldstr` names), found or defined
    /// (`DefineUserString`). Any text, non-ASCII and embedded NULs included.
    ///
    /// # Errors
    /// The runtime's refusal, and [`ClrError::LengthOverflow`] for a string longer than
    /// a user string can be.
    pub fn user_string(&self, text: &str) -> ClrResult<mdString> {
        const METHOD: &str = "DefineUserString";
        let units: Vec<u16> = text.encode_utf16().collect();
        let len = to_ulong(METHOD, "string length", units.len())?;
        let (v, this, _call) = self.emit(METHOD)?;
        let mut token = 0;
        // SAFETY: a live IMetaDataEmit2; `units` (`len` UTF-16 units, all of it, no
        // terminator needed: the length is given) is read during the call.
        check(METHOD, unsafe {
            (v.base.DefineUserString)(this, units.as_ptr(), len, &mut token)
        })?;
        Ok(token)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_instantiation_blob_counts_its_arguments() {
        let blob = instantiation_blob(&[TypeSig::I4, TypeSig::String]).unwrap();
        assert_eq!(blob, [GENERIC_INST, 2, 0x08, 0x0E]);
    }

    #[test]
    fn an_instantiation_needs_an_argument_that_encodes() {
        assert_eq!(instantiation_blob(&[]), None);
        assert_eq!(instantiation_blob(&[TypeSig::Void]), None);
    }
}

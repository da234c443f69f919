//! Call-site stack effects from an assembly's metadata.

use super::Assembly;
use crate::Result;
use crate::analysis::{CallEffect, CallSiteResolver};
use crate::opcode::OpCode;
use crate::sig::summarize_method_sig;

/// Resolves `call`/`callvirt`/`newobj`/`jmp` tokens (MethodDef, MemberRef, MethodSpec)
/// and `calli` tokens (StandAloneSig) through the signature blobs of this assembly,
/// without allocating.
impl CallSiteResolver for Assembly<'_> {
    fn call_effect(&self, opcode: OpCode, token: u32) -> Result<CallEffect> {
        let sig = summarize_method_sig(self.call_site_signature(token)?)?;
        CallEffect::from_parts(
            sig.has_this,
            sig.explicit_this,
            sig.param_count,
            sig.returns_value,
            opcode,
        )
    }
}

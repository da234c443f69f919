//! The return-value local: one call from a method's signature and its LocalVarSig to the
//! [`Returns`] the transforms take and the LocalVarSig to emit.

use super::returns::Returns;
use crate::error::Result;
use crate::sig::{LocalVarSig, summarize_method_sig_and_return_type};

/// The empty LocalVarSig (`LOCAL_SIG`, no locals), what a body without one extends.
const EMPTY_LOCALS: &[u8] = &[0x07, 0x00];

/// Where a method's return value is kept on its way out, for [`super::single_ret`],
/// [`super::wrap_try_finally`] and [`super::Instrumenter`].
///
/// A method that returns a value needs a local of its return type to carry the value
/// from each `ret` to the single epilogue (a `leave` out of a try block empties the
/// stack). [`ReturnLocal::plan`] appends that local to the body's LocalVarSig, at the
/// byte level, keeping every existing local as it is encoded.
///
/// # The rule for the new signature token
///
/// The extended LocalVarSig needs a StandAloneSig token (from
/// `IMetaDataEmit::GetTokenFromSig` inside a profiler), which the body then names in
/// [`crate::MethodBody::local_var_sig`]. Define that token and set it on the body only
/// **after** the transform succeeded: a refused transform leaves the body as it was,
/// still naming its old locals, and a token defined for it would name a signature that
/// nothing uses (metadata cannot be taken back from a running module).
///
/// ```
/// use ilrewrite::transform::{ReturnLocal, Returns};
///
/// // static int32 M(), whose body has `.locals (string)`.
/// let (method, locals) = ([0x00, 0x00, 0x08], [0x07, 0x01, 0x0E]);
/// let mut new_locals = Vec::new();
/// let plan = ReturnLocal::plan(&method, Some(&locals), &mut new_locals)?;
/// assert_eq!(plan.returns, Returns::Value { local: 1 });
/// assert_eq!(new_locals, [0x07, 0x02, 0x0E, 0x08]); // .locals (string, int32)
///
/// // static void M(): nothing to add.
/// new_locals.clear();
/// let plan = ReturnLocal::plan(&[0x00, 0x00, 0x01], None, &mut new_locals)?;
/// assert_eq!(plan.returns, Returns::Void);
/// assert!(new_locals.is_empty() && !plan.extends_locals);
/// # Ok::<(), ilrewrite::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReturnLocal {
    /// What to give the transforms: [`Returns::Void`], or [`Returns::Value`] naming the
    /// new local.
    pub returns: Returns,
    /// Whether a LocalVarSig was written (exactly when the method returns a value).
    pub extends_locals: bool,
}

impl ReturnLocal {
    /// Plans the return-value local of a method.
    ///
    /// `method_signature` is the method's `MethodDefSig` blob; `locals` the blob of its
    /// body's LocalVarSig, or `None` when the body has none (`local_var_sig == 0`). For
    /// a method that returns a value, the LocalVarSig extended with one local of the
    /// return type (its bytes copied from the signature, custom modifiers and `BYREF`
    /// included) is appended to `new_locals`, and the new local's index is returned in
    /// [`Returns::Value`]. For a `void` method nothing is written. See the type's
    /// documentation for when to define the new signature's token.
    ///
    /// # Errors
    /// [`crate::Error::BadSignature`] for a malformed method signature or LocalVarSig,
    /// and [`crate::Error::TooManyLocals`] when the LocalVarSig already holds the most
    /// locals a method can have (65,535). `new_locals` is left as it was on error.
    pub fn plan(
        method_signature: &[u8],
        locals: Option<&[u8]>,
        new_locals: &mut Vec<u8>,
    ) -> Result<ReturnLocal> {
        let (summary, ret_type) = summarize_method_sig_and_return_type(method_signature)?;
        if !summary.returns_value {
            return Ok(ReturnLocal {
                returns: Returns::Void,
                extends_locals: false,
            });
        }
        let local =
            LocalVarSig::append_to_blob(locals.unwrap_or(EMPTY_LOCALS), ret_type, new_locals)?;
        Ok(ReturnLocal {
            returns: Returns::Value { local },
            extends_locals: true,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    #[test]
    fn the_return_type_is_copied_with_its_modifiers() {
        // instance int32& modreq(InAttribute) M(int32): HASTHIS, 1 param,
        // CMOD_REQD TypeRef 1, BYREF I4, param I4.
        let method = [0x20, 0x01, 0x1F, 0x05, 0x10, 0x08, 0x08];
        let mut out = vec![0xAA];
        let plan = ReturnLocal::plan(&method, None, &mut out).unwrap();
        assert_eq!(plan.returns, Returns::Value { local: 0 });
        assert_eq!(out, [0xAA, 0x07, 0x01, 0x1F, 0x05, 0x10, 0x08]);
    }

    #[test]
    fn bad_input_is_refused_and_nothing_written() {
        let mut out = Vec::new();
        assert!(matches!(
            ReturnLocal::plan(&[0x00, 0x00], None, &mut out),
            Err(Error::BadSignature { .. })
        ));
        // A LocalVarSig with a trailing byte.
        assert!(matches!(
            ReturnLocal::plan(&[0x00, 0x00, 0x08], Some(&[0x07, 0x00, 0x08]), &mut out),
            Err(Error::BadSignature { .. })
        ));
        assert!(out.is_empty());
    }
}

//! [`MethodRewrite`]: the method being rewritten, as an edit sees it.

use crate::body::MethodBody;
use crate::clr::runtime::ModuleMetadata;
use crate::clr::sys::{FunctionID, mdToken};
use crate::metadata::MetadataSource;
use crate::transform::MethodContext;

use super::module::ModuleState;

/// The method being rewritten, as the edit sees it.
#[derive(Debug)]
pub struct MethodRewrite<'a, M = ModuleMetadata> {
    /// The function being compiled.
    pub function: FunctionID,
    /// Its MethodDef token.
    pub token: mdToken,
    /// Its module.
    pub module: &'a ModuleState<M>,
    pub(crate) new_locals: Option<Vec<u8>>,
    /// Whether the edit's result has been analysed already, with this module's resolver
    /// (by an `Instrumenter`, whose exact max stack is that analysis).
    pub(crate) stack_verified: bool,
}

impl<M: MetadataSource> MethodRewrite<'_, M> {
    /// The method's signature blob.
    ///
    /// # Errors
    /// When the module's metadata does not give it.
    pub fn signature(&self) -> crate::error::Result<&[u8]> {
        self.module.metadata().signature(self.token)
    }

    /// The method id the pipeline gives instrumentation: the method's MethodDef token
    /// (with [`ModuleState::id`] it names the method in the process).
    pub fn method_id(&self) -> i32 {
        self.token as i32
    }

    /// What an [`crate::Instrumenter`] needs of this method, with
    /// [`MethodRewrite::method_id`] as its id and the module's `ModuleID`
    /// ([`ModuleState::id`]) as its
    /// [`module_id`](crate::transform::MethodContext::module_id), so that snippets
    /// loading either ([`crate::transform::SnippetBuilder::module_id`]) are filled in.
    ///
    /// # Errors
    /// When the module's metadata does not give the signatures.
    ///
    /// Its locals are the LocalVarSig an earlier edit set
    /// ([`MethodRewrite::set_locals_signature`]) when there is one, so that edits
    /// composed on one body each extend what the one before left.
    pub fn context(&self, body: &MethodBody) -> crate::error::Result<MethodContext<'_>> {
        let mut context = MethodContext::from_metadata(
            self.module.metadata(),
            self.token,
            body,
            self.method_id(),
        )?;
        if let Some(locals) = &self.new_locals {
            context.locals = Some(locals);
        }
        context.module_id = Some(self.module.id() as u64);
        Ok(context)
    }
}

impl<M> MethodRewrite<'_, M> {
    /// The LocalVarSig the rewritten body needs (e.g. with a return-value local added):
    /// its token is defined only once the rewritten body has been verified, so a failed
    /// rewrite defines nothing.
    pub fn set_locals_signature(&mut self, blob: &[u8]) {
        self.new_locals = Some(blob.to_vec());
    }

    /// Tells the pipeline that the edited body's stack was analysed (exact max stack
    /// set) with this module's resolver, so it need not analyse it again. The clauses
    /// are still checked.
    pub(crate) fn stack_verified(&mut self) {
        self.stack_verified = true;
    }

    /// What later edits may change and a rollback restores: the pending LocalVarSig
    /// and whether the stack was verified.
    pub(crate) fn checkpoint(&self) -> (Option<Vec<u8>>, bool) {
        (self.new_locals.clone(), self.stack_verified)
    }

    /// Back to a [`MethodRewrite::checkpoint`].
    pub(crate) fn restore(&mut self, (locals, verified): (Option<Vec<u8>>, bool)) {
        self.new_locals = locals;
        self.stack_verified = verified;
    }

    /// Forgets that the stack was verified: a further edit follows.
    pub(crate) fn unverified(&mut self) {
        self.stack_verified = false;
    }
}

impl<'a, M> MethodRewrite<'a, M> {
    /// The rewrite of MethodDef `token` of `module`, compiled as `function` (0 for a
    /// ReJIT version), before any edit.
    pub(crate) fn new(
        function: FunctionID,
        token: mdToken,
        module: &'a ModuleState<M>,
    ) -> MethodRewrite<'a, M> {
        MethodRewrite {
            function,
            token,
            module,
            new_locals: None,
            stack_verified: false,
        }
    }
}

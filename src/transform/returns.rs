//! [`Returns`]: what a method returns, the shape every transform gives its epilogue.

use crate::analysis::ReturnKind;

/// What the method returns, which decides the epilogue's shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Returns {
    /// `void`: the epilogue is `ret`.
    Void,
    /// A value: each `ret` stores it in `local` first, and the epilogue is
    /// `ldloc local; ret`. The local must have the method's return type (add it with the
    /// LocalVarSig editing API and set the body's signature token).
    Value {
        /// Index of the return-value local.
        local: u16,
    },
}

impl From<Returns> for ReturnKind {
    /// What `ret` pops once a transform has given the method this return shape.
    fn from(returns: Returns) -> Self {
        match returns {
            Returns::Void => ReturnKind::Void,
            Returns::Value { .. } => ReturnKind::Value,
        }
    }
}

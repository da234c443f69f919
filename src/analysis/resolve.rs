//! Stack effects of call sites, supplied by whoever can read signatures.
//!
//! The opcode table knows every instruction's stack effect except those of `call`,
//! `callvirt`, `newobj` and `calli`, which depend on the callee's signature. A
//! [`CallSiteResolver`] supplies them; [`CallEffect::from_parts`] applies the ECMA-335
//! rules to the facts a signature decoder extracts, so every resolver agrees on them.
#![forbid(unsafe_code)]

use crate::opcode::OpCode;
use crate::{Error, Result};

/// How many stack slots one call instruction pops and pushes.
///
/// `pops` counts every value the instruction consumes: the arguments, the `this` pointer
/// when the signature has an implicit one, and for `calli` the function pointer. `pushes`
/// is 1 when the callee returns a value (anything but `void`), else 0; `newobj` always
/// pushes 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CallEffect {
    /// Values popped.
    pub pops: u16,
    /// Values pushed (0 or 1).
    pub pushes: u16,
}

impl CallEffect {
    /// Applies the ECMA-335 Partition III rules to a method signature's facts:
    ///
    /// * `call`, `callvirt`: pops `param_count` plus 1 for an implicit `this`
    ///   (`has_this && !explicit_this`; with EXPLICITTHIS the `this` is already the first
    ///   parameter); pushes 1 iff `returns_value`.
    /// * `newobj`: pops `param_count` (the object is created, not passed); pushes 1.
    /// * `calli`: as `call`, plus 1 for the function pointer on top of the arguments.
    /// * `jmp`: pops and pushes nothing (it requires an empty stack).
    ///
    /// `param_count` counts every parameter of the call-site signature, including the
    /// variable arguments after a vararg sentinel. Fails with [`Error::BadCallSite`] for
    /// any other opcode, or when the pop count exceeds 65,535.
    pub fn from_parts(
        has_this: bool,
        explicit_this: bool,
        param_count: u32,
        returns_value: bool,
        opcode: OpCode,
    ) -> Result<CallEffect> {
        let this = u32::from(has_this && !explicit_this);
        let (extra, pushes) = match opcode {
            OpCode::Call | OpCode::Callvirt => (this, u16::from(returns_value)),
            OpCode::Newobj => (0, 1),
            OpCode::Calli => (this + 1, u16::from(returns_value)),
            OpCode::Jmp => return Ok(CallEffect { pops: 0, pushes: 0 }),
            _ => {
                return Err(Error::BadCallSite {
                    opcode: opcode.name(),
                    what: "not a call instruction",
                });
            }
        };
        let pops = param_count
            .checked_add(extra)
            .and_then(|p| u16::try_from(p).ok())
            .ok_or_else(|| Error::BadCallSite {
                opcode: opcode.name(),
                what: "more than 65535 values popped",
            })?;
        Ok(CallEffect { pops, pushes })
    }
}

/// Supplies the stack effect of call sites (`call`, `callvirt`, `newobj`, `calli`).
///
/// The stack analysis asks once per reachable call instruction, passing its opcode and
/// operand token (a MethodDef, MemberRef or MethodSpec token, or a StandAloneSig token for
/// `calli`). Implementations should build the answer with [`CallEffect::from_parts`].
/// Any error is reported wrapped in [`Error::CallResolution`], naming the instruction.
pub trait CallSiteResolver {
    /// The stack effect of `opcode` with operand `token`.
    fn call_effect(&self, opcode: OpCode, token: u32) -> Result<CallEffect>;
}

/// Any `Fn(OpCode, u32) -> Result<CallEffect>` closure is a resolver.
impl<F> CallSiteResolver for F
where
    F: Fn(OpCode, u32) -> Result<CallEffect>,
{
    #[inline]
    fn call_effect(&self, opcode: OpCode, token: u32) -> Result<CallEffect> {
        self(opcode, token)
    }
}

/// A resolver for bodies without calls: every call site fails with
/// [`Error::UnresolvedCall`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NoCalls;

impl CallSiteResolver for NoCalls {
    fn call_effect(&self, opcode: OpCode, token: u32) -> Result<CallEffect> {
        Err(Error::UnresolvedCall {
            opcode: opcode.name(),
            token,
            what: "no call-site resolver was given",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn effect(pops: u16, pushes: u16) -> CallEffect {
        CallEffect { pops, pushes }
    }

    #[test]
    fn from_parts_applies_the_rules() {
        use OpCode::*;
        // static int F(int, int)
        assert_eq!(
            CallEffect::from_parts(false, false, 2, true, Call),
            Ok(effect(2, 1))
        );
        // instance void M(int)
        assert_eq!(
            CallEffect::from_parts(true, false, 1, false, Callvirt),
            Ok(effect(2, 0))
        );
        // explicit this: `this` is the first declared parameter already
        assert_eq!(
            CallEffect::from_parts(true, true, 2, false, Call),
            Ok(effect(2, 0))
        );
        // .ctor(int, int): the object is not on the stack before newobj
        assert_eq!(
            CallEffect::from_parts(true, false, 2, false, Newobj),
            Ok(effect(2, 1))
        );
        // calli instance int32(int32): this + arg + function pointer
        assert_eq!(
            CallEffect::from_parts(true, false, 1, true, Calli),
            Ok(effect(3, 1))
        );
        assert_eq!(
            CallEffect::from_parts(false, false, 0, false, Calli),
            Ok(effect(1, 0))
        );
        assert_eq!(
            CallEffect::from_parts(true, false, 7, true, Jmp),
            Ok(effect(0, 0))
        );
        assert!(matches!(
            CallEffect::from_parts(false, false, 0, false, Ldftn),
            Err(Error::BadCallSite { .. })
        ));
        assert!(matches!(
            CallEffect::from_parts(true, false, 65535, false, Call),
            Err(Error::BadCallSite { .. })
        ));
        assert_eq!(
            CallEffect::from_parts(false, false, 65535, false, Call),
            Ok(effect(65535, 0))
        );
        assert!(CallEffect::from_parts(false, false, u32::MAX, false, Calli).is_err());
    }

    #[test]
    fn closures_and_no_calls() {
        let r = |_: OpCode, token: u32| Ok(effect(token as u16, 1));
        assert_eq!(r.call_effect(OpCode::Call, 3), Ok(effect(3, 1)));
        assert!(matches!(
            NoCalls.call_effect(OpCode::Call, 0x0A00_0001),
            Err(Error::UnresolvedCall {
                token: 0x0A00_0001,
                ..
            })
        ));
    }
}

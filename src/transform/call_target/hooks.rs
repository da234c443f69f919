//! The hooks' signatures from the target's: [`HookSignatures`], what the caller defines
//! (the MemberRefs of the hooks' generic method definitions and the MethodSpecs of their
//! instantiations) before [`super::CallTarget`] calls them.

use crate::error::{CallTargetRefusal, Error, Result};
use crate::sig::{CallingConvention, MethodSig, TypeSig};

/// The types the hooks' signatures name that the target's signature does not give: the
/// managed helper's `CallTargetState` and `System.Exception`, as the target's module
/// names them.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct HookTypes {
    /// `System.Exception`: a TypeDef, TypeRef or TypeSpec token of the target's module
    /// (written `CLASS token` in the signatures; the type of the exception local).
    pub exception: u32,
    /// `ILRewrite.CallTarget.CallTargetState` (usually `TypeSig::ValueType` of a TypeRef
    /// of the target's module): the return type of `OnMethodBegin`, the `ref` parameter
    /// of `OnMethodEnd`, and the type of the state local.
    pub state: TypeSig,
}

/// The signatures of the hooks' generic method definitions and their instantiations for
/// one target method, exactly as the CallTarget contract writes them.
///
/// For a target with parameters `P1..Pn` (`Ai` is `Pi` without its custom modifiers and
/// without its `&` if it is by-ref), return type `R` and declaring type `T`:
///
/// ```text
/// begin:  static S OnMethodBegin<(n+1)>([ref !!0,] ref !!1, ..., ref !!n)
///         instantiated <T, A1, ..., An>
/// end:    static !!1 OnMethodEnd<2>([ref !!0,] !!1, class E, ref S)   instantiated <T, R>
///         static void OnMethodEnd<1>([ref !!0,] class E, ref S)       instantiated <T>
///                                                                     (void targets)
/// ```
///
/// with `S` the state type and `E` the exception type ([`HookTypes`]); the `ref !!0`
/// instance parameter is there exactly for instance targets (`HASTHIS`), the generic
/// arity is the same either way. The instantiations use the target's own generic
/// context: `T` as the caller gives it (`!0`... for a generic type's methods) and the
/// parameter and return types as the target's signature writes them (`!!0`... for a
/// generic method's), so that shared generic code instantiates the hooks with the
/// target's own type arguments.
///
/// ```
/// use ilrewrite::sig::{MethodSig, TypeSig};
/// use ilrewrite::transform::{HookSignatures, HookTypes};
///
/// // instance int32 C::M(string, int64&), C a class (TypeDef 0x02000002).
/// let target = MethodSig::parse(&[0x20, 0x02, 0x08, 0x0E, 0x10, 0x0A])?;
/// let types = HookTypes { exception: 0x0100_0001, state: TypeSig::ValueType(0x0100_0002) };
/// let hooks = HookSignatures::of(&target, &TypeSig::Class(0x0200_0002), &types)?;
/// assert_eq!(hooks.begin.generic_param_count, 3);
/// assert_eq!(hooks.begin_instantiation, [TypeSig::Class(0x0200_0002), TypeSig::String, TypeSig::I8]);
/// assert_eq!(hooks.end_instantiation, [TypeSig::Class(0x0200_0002), TypeSig::I4]);
/// // The MethodSpec blob of OnMethodBegin<C, string, int64>:
/// assert_eq!(
///     HookSignatures::method_spec_blob(&hooks.begin_instantiation)?,
///     [0x0A, 0x03, 0x12, 0x08, 0x0E, 0x0A]
/// );
/// # Ok::<(), ilrewrite::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct HookSignatures {
    /// The signature of `OnMethodBegin`'s generic method definition.
    pub begin: MethodSig,
    /// `OnMethodBegin`'s type arguments: the declaring type, then the parameter types.
    pub begin_instantiation: Vec<TypeSig>,
    /// The signature of `OnMethodEnd`'s generic method definition (arity 2, or 1 for a
    /// `void` target).
    pub end: MethodSig,
    /// `OnMethodEnd`'s type arguments: the declaring type, then the return type unless
    /// the target is `void`.
    pub end_instantiation: Vec<TypeSig>,
}

impl HookSignatures {
    /// The hooks' signatures for a target with signature `target` (its `MethodDefSig`:
    /// an instance method exactly when it has `HASTHIS`) declared on `declaring_type`
    /// (as the target's module writes it: `CLASS`/`VALUETYPE` token, a primitive type
    /// for the methods of `System.Int32` and the like, or `GENERICINST` over `!0`... for a
    /// generic type).
    ///
    /// A pure function of its arguments; the refusals come first, see
    /// [`HookSignatures::check_target`].
    ///
    /// # Errors
    /// Those of [`HookSignatures::check_target`], and
    /// [`CallTargetRefusal::NotAGenericArgument`] for a declaring type that is no type
    /// a method is declared on (a pointer, a by-ref, a generic parameter...).
    pub fn of(
        target: &MethodSig,
        declaring_type: &TypeSig,
        types: &HookTypes,
    ) -> Result<HookSignatures> {
        check_target(target)?;
        let declaring = declaring_argument(declaring_type)?;
        let n = target.params.len() as u32;
        let by_ref_mvar = |i: u32| TypeSig::ByRef(Box::new(TypeSig::MVar(i)));
        let instance = target.has_this.then(|| by_ref_mvar(0));
        let returns_value = !matches!(target.return_type.strip_modifiers(), TypeSig::Void);
        let begin = MethodSig {
            generic_param_count: n + 1,
            ..MethodSig::new(
                types.state.clone(),
                instance
                    .clone()
                    .into_iter()
                    .chain((1..=n).map(by_ref_mvar))
                    .collect(),
            )
        };
        let mut begin_instantiation = Vec::with_capacity(target.params.len() + 1);
        begin_instantiation.push(declaring.clone());
        begin_instantiation.extend(target.params.iter().map(|p| argument(p).clone()));
        let tail = [
            TypeSig::Class(types.exception),
            TypeSig::ByRef(Box::new(types.state.clone())),
        ];
        let (end, end_instantiation) = match returns_value {
            true => (
                MethodSig {
                    generic_param_count: 2,
                    ..MethodSig::new(
                        TypeSig::MVar(1),
                        instance
                            .into_iter()
                            .chain(std::iter::once(TypeSig::MVar(1)))
                            .chain(tail)
                            .collect(),
                    )
                },
                vec![declaring, target.return_type.strip_modifiers().clone()],
            ),
            false => (
                MethodSig {
                    generic_param_count: 1,
                    ..MethodSig::new(TypeSig::Void, instance.into_iter().chain(tail).collect())
                },
                vec![declaring],
            ),
        };
        Ok(HookSignatures {
            begin,
            begin_instantiation,
            end,
            end_instantiation,
        })
    }

    /// The refusals of [`HookSignatures::of`] that only the target's signature decides,
    /// for a caller that checks a method before defining anything.
    ///
    /// Byref-like value types (`ref struct`s: `Span<T>`, ...) cannot be generic
    /// arguments either, but a signature does not say whether a value type is one (that
    /// takes its `IsByRefLikeAttribute`, in metadata the core does not read): refusing
    /// them is the caller's.
    ///
    /// # Errors
    /// [`Error::CallTargetRefused`] with [`CallTargetRefusal::VarArg`] for a vararg
    /// signature (the convention or a sentinel), [`CallTargetRefusal::CallingConvention`]
    /// for `EXPLICITTHIS` or an unmanaged convention, [`CallTargetRefusal::TooMany`] for
    /// more than 65,534 parameters, then for the first parameter (in order) or the return
    /// type that cannot be a generic argument once its custom modifiers (and, for a
    /// parameter, its `&`) are stripped: [`CallTargetRefusal::Pointer`],
    /// [`CallTargetRefusal::FunctionPointer`], [`CallTargetRefusal::TypedReference`],
    /// [`CallTargetRefusal::VoidParameter`], [`CallTargetRefusal::NotAGenericArgument`]
    /// (a by-ref of a by-ref, `pinned`, a runtime-internal type) and
    /// [`CallTargetRefusal::ByRefReturn`] for a by-ref return type.
    pub fn check_target(target: &MethodSig) -> Result<()> {
        check_target(target)
    }

    /// The MethodSpec blob (`GENERICINST count type...`, ECMA-335 II.23.2.15) of an
    /// instantiation, as [`HookSignatures::begin_instantiation`] or
    /// [`HookSignatures::end_instantiation`] gives it.
    ///
    /// # Errors
    /// [`Error::Unencodable`] (or [`Error::TooDeep`]) for a type that does not encode
    /// (see [`TypeSig::encode`]).
    pub fn method_spec_blob(instantiation: &[TypeSig]) -> Result<Vec<u8>> {
        let mut out = vec![0x0A];
        crate::sig::write_compressed_u32(instantiation.len() as u32, &mut out)?;
        for t in instantiation {
            t.encode(&mut out)?;
        }
        Ok(out)
    }
}

/// Refused with `reason`.
pub(super) fn refused(reason: CallTargetRefusal) -> Error {
    Error::CallTargetRefused { reason }
}

/// See [`HookSignatures::check_target`].
pub(super) fn check_target(target: &MethodSig) -> Result<()> {
    if target.calling_convention == CallingConvention::VarArg || target.sentinel.is_some() {
        return Err(refused(CallTargetRefusal::VarArg));
    }
    if target.calling_convention != CallingConvention::Default || target.explicit_this {
        return Err(refused(CallTargetRefusal::CallingConvention));
    }
    if target.params.len() > usize::from(u16::MAX) - 1 {
        return Err(refused(CallTargetRefusal::TooMany));
    }
    for p in &target.params {
        let stripped = match p.strip_modifiers() {
            TypeSig::ByRef(inner) => inner.strip_modifiers(),
            other => other,
        };
        if matches!(stripped, TypeSig::Void) {
            return Err(refused(CallTargetRefusal::VoidParameter));
        }
        check_argument(stripped)?;
    }
    match target.return_type.strip_modifiers() {
        TypeSig::Void => Ok(()),
        TypeSig::ByRef(_) => Err(refused(CallTargetRefusal::ByRefReturn)),
        other => check_argument(other),
    }
}

/// Whether `t` (without modifiers) can be a generic argument, as far as its signature
/// says.
fn check_argument(t: &TypeSig) -> Result<()> {
    let reason = match t {
        TypeSig::Ptr(_) => CallTargetRefusal::Pointer,
        TypeSig::FnPtr(_) => CallTargetRefusal::FunctionPointer,
        TypeSig::TypedByRef => CallTargetRefusal::TypedReference,
        TypeSig::Void => CallTargetRefusal::VoidParameter,
        TypeSig::ByRef(_) | TypeSig::Pinned(_) | TypeSig::Internal(_) => {
            CallTargetRefusal::NotAGenericArgument
        }
        _ => return Ok(()),
    };
    Err(refused(reason))
}

/// A parameter's type argument: without custom modifiers and `&` (checked by
/// [`check_target`]).
pub(super) fn argument(p: &TypeSig) -> &TypeSig {
    match p.strip_modifiers() {
        TypeSig::ByRef(inner) => inner.strip_modifiers(),
        other => other,
    }
}

/// Whether a parameter is by-ref (passed as it is, `ldarg`).
pub(super) fn is_by_ref(p: &TypeSig) -> bool {
    matches!(p.strip_modifiers(), TypeSig::ByRef(_))
}

/// The declaring type as a type argument, refused where no method can be declared.
fn declaring_argument(t: &TypeSig) -> Result<TypeSig> {
    match t.strip_modifiers() {
        TypeSig::Void
        | TypeSig::Ptr(_)
        | TypeSig::ByRef(_)
        | TypeSig::FnPtr(_)
        | TypeSig::Pinned(_)
        | TypeSig::Internal(_)
        | TypeSig::Var(_)
        | TypeSig::MVar(_)
        | TypeSig::TypedByRef => Err(refused(CallTargetRefusal::NotAGenericArgument)),
        other => Ok(other.clone()),
    }
}

/// Whether a method declared on `t` has a managed pointer as `this` (a value type's
/// method): `VALUETYPE`, a value type's `GENERICINST` or a primitive value type.
pub(super) fn is_value_type(t: &TypeSig) -> bool {
    use TypeSig::*;
    matches!(
        t.strip_modifiers(),
        Boolean
            | Char
            | I1
            | U1
            | I2
            | U2
            | I4
            | U4
            | I8
            | U8
            | R4
            | R8
            | I
            | U
            | ValueType(_)
            | GenericInst {
                is_value_type: true,
                ..
            }
    )
}

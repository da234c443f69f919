//! What the planner must know of a type the signature only names: [`StructLayouts`], the
//! [`Shape`] it answers, and [`FixedLayouts`], an in-memory answer for tests.
//!
//! A value type's layout is a tree, not a flat list of primitives: CoreCLR classifies a
//! struct recursively, and some of its rules look at a nested struct as a whole (a nested
//! struct without fields, or one that is a fixed buffer, changes the outcome; see
//! [`classify`](super::classify)). The provider describes each struct as the runtime laid
//! it out (offsets and size from `GetClassLayout`); the planner applies the rules.

use std::collections::HashMap;
use std::fmt;

use crate::sig::TypeSig;

/// A primitive the runtime passes as one scalar: what a `bool`, `char`, integer, float,
/// native int, pointer or byref is, and what an enum is after its underlying type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scalar {
    /// `bool`, one byte.
    Bool,
    /// `char`, a UTF-16 code unit.
    Char,
    /// `sbyte`.
    I1,
    /// `byte`.
    U1,
    /// `short`.
    I2,
    /// `ushort`.
    U2,
    /// `int`.
    I4,
    /// `uint`.
    U4,
    /// `long`.
    I8,
    /// `ulong`.
    U8,
    /// `float`.
    R4,
    /// `double`.
    R8,
    /// `nint` (`IntPtr`).
    I,
    /// `nuint` (`UIntPtr`).
    U,
    /// An unmanaged pointer or function pointer.
    Pointer,
    /// A managed reference (`ref T`), possibly interior.
    ByRef,
}

impl Scalar {
    /// The scalar's size in bytes (pointer-sized ones 8: x86_64).
    pub const fn size(self) -> u32 {
        match self {
            Self::Bool | Self::I1 | Self::U1 => 1,
            Self::Char | Self::I2 | Self::U2 => 2,
            Self::I4 | Self::U4 | Self::R4 => 4,
            Self::I8 | Self::U8 | Self::R8 | Self::I | Self::U | Self::Pointer | Self::ByRef => 8,
        }
    }

    /// Whether it is a floating-point scalar (passed in an XMM register).
    pub const fn is_float(self) -> bool {
        matches!(self, Self::R4 | Self::R8)
    }

    /// The scalar of a primitive element type of a signature (`None` for other types).
    pub fn of_sig(ty: &TypeSig) -> Option<Scalar> {
        Some(match ty.strip_modifiers() {
            TypeSig::Boolean => Self::Bool,
            TypeSig::Char => Self::Char,
            TypeSig::I1 => Self::I1,
            TypeSig::U1 => Self::U1,
            TypeSig::I2 => Self::I2,
            TypeSig::U2 => Self::U2,
            TypeSig::I4 => Self::I4,
            TypeSig::U4 => Self::U4,
            TypeSig::I8 => Self::I8,
            TypeSig::U8 => Self::U8,
            TypeSig::R4 => Self::R4,
            TypeSig::R8 => Self::R8,
            TypeSig::I => Self::I,
            TypeSig::U => Self::U,
            TypeSig::Ptr(_) | TypeSig::FnPtr(_) => Self::Pointer,
            TypeSig::ByRef(_) => Self::ByRef,
            _ => return None,
        })
    }

    /// Whether CoreCLR counts it as a primitive type (`CorTypeInfo::IsPrimitiveType`:
    /// the numeric types, `bool`, `char` and native ints; not pointers or byrefs), which
    /// the fixed-buffer rule asks.
    pub const fn is_primitive(self) -> bool {
        !matches!(self, Self::Pointer | Self::ByRef)
    }
}

/// What a type is at the calling convention's level.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shape {
    /// A reference type: an object reference (one pointer-sized integer).
    Reference,
    /// A value passed as a scalar: an enum (its underlying type), or a type variable
    /// instantiated with a primitive.
    Scalar(Scalar),
    /// A struct.
    Struct(StructLayout),
}

/// A value type's layout as the runtime made it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StructLayout {
    /// Its size unboxed, in bytes (`GetClassLayout`'s class size for a value type: the
    /// runtime's `GetNumInstanceFieldBytes`).
    pub size: u32,
    /// Whether the type has sequential or explicit layout (CoreCLR's `HasLayout`), as
    /// opposed to auto layout: the fixed-buffer rule applies only to those.
    pub has_layout: bool,
    /// Whether CoreCLR treats it as a SIMD intrinsic (`Vector64<T>`, `Vector128<T>`,
    /// `Vector256<T>` of `System.Runtime.Intrinsics`, `Vector<T>` of `System.Numerics`),
    /// never passed in registers by CoreCLR 3.1's classifier.
    pub simd_intrinsic: bool,
    /// The instance fields, in the runtime's order (static fields excluded).
    pub fields: Vec<Field>,
}

/// An instance field of a struct: where it is, and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// Its offset from the struct's start, in bytes.
    pub offset: u32,
    /// Its type.
    pub ty: FieldType,
}

/// The type of a struct's field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldType {
    /// A scalar (an enum field is its underlying type).
    Scalar(Scalar),
    /// An object reference.
    Reference,
    /// A nested struct.
    Struct(StructLayout),
    /// A `TypedReference` (a byref and a type handle, 16 bytes).
    TypedReference,
}

impl FieldType {
    /// The field's size in bytes.
    pub fn size(&self) -> u32 {
        match self {
            Self::Scalar(s) => s.size(),
            Self::Reference => 8,
            Self::Struct(layout) => layout.size,
            Self::TypedReference => 16,
        }
    }
}

impl StructLayout {
    /// A sequential struct of `fields` and `size` bytes (not a SIMD type).
    pub fn sequential(size: u32, fields: Vec<Field>) -> Self {
        Self {
            size,
            has_layout: true,
            simd_intrinsic: false,
            fields,
        }
    }

    /// The layout CoreCLR gives `System.TypedReference`: 16 bytes, a byref and a type
    /// handle.
    pub fn typed_reference() -> Self {
        Self::sequential(
            16,
            vec![Field {
                offset: 0,
                ty: FieldType::TypedReference,
            }],
        )
    }
}

impl Field {
    /// A field of type `ty` at `offset`.
    pub fn new(offset: u32, ty: FieldType) -> Self {
        Self { offset, ty }
    }

    /// A scalar field at `offset`.
    pub fn scalar(offset: u32, scalar: Scalar) -> Self {
        Self::new(offset, FieldType::Scalar(scalar))
    }
}

/// Why a provider could not say what a type is. The planner never guesses: the value of
/// that type, and of every argument whose place depends on it, is unavailable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayoutError {
    /// The type asked about (its first element type byte and token, if any).
    pub what: String,
    /// Why it could not be resolved.
    pub why: String,
}

impl LayoutError {
    /// An error about `ty`.
    pub fn new(ty: &TypeSig, why: impl Into<String>) -> Self {
        Self {
            what: format!("{ty:?}"),
            why: why.into(),
        }
    }
}

impl fmt::Display for LayoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "no layout for {}: {}", self.what, self.why)
    }
}

impl std::error::Error for LayoutError {}

/// What the planner asks of the types a signature names without saying what they are.
///
/// The planner asks only about `VALUETYPE` tokens, value-type `GENERICINST`s, and type
/// variables (`VAR`, `MVAR`); it decides primitives, strings, arrays, classes, pointers
/// and byrefs itself. An implementation answers for the module and instantiation of the
/// one method being planned. Answering wrongly gives wrong values; answering `Err` makes
/// the planner mark values unavailable, so answer `Err` whenever unsure.
pub trait StructLayouts {
    /// What `ty` is: a reference (e.g. a type variable instantiated with a class, or
    /// `System.__Canon` in shared code), a scalar (an enum's underlying type), or a
    /// struct with its layout (nested structs resolved).
    ///
    /// # Errors
    ///
    /// [`LayoutError`] when the provider cannot tell.
    fn shape(&self, ty: &TypeSig) -> Result<Shape, LayoutError>;
}

/// A provider that knows nothing: every question is an error (all values of value-type
/// or type-variable types unavailable).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoLayouts;

impl StructLayouts for NoLayouts {
    fn shape(&self, ty: &TypeSig) -> Result<Shape, LayoutError> {
        Err(LayoutError::new(ty, "no layout provider"))
    }
}

/// An in-memory provider: shapes given by token (for `VALUETYPE t` and the definition
/// token of a `GENERICINST`) and by type variable. For tests, and for callers that know
/// their layouts in advance.
#[derive(Debug, Clone, Default)]
pub struct FixedLayouts {
    by_token: HashMap<u32, Shape>,
    vars: HashMap<(bool, u32), Shape>,
}

impl FixedLayouts {
    /// An empty provider (every question an error).
    pub fn new() -> Self {
        Self::default()
    }

    /// Answers `shape` for `VALUETYPE token` (and value-type `GENERICINST` of `token`,
    /// whatever its arguments).
    pub fn with_type(mut self, token: u32, shape: Shape) -> Self {
        self.by_token.insert(token, shape);
        self
    }

    /// Answers `shape` for `VAR n` (`method` false) or `MVAR n` (`method` true).
    pub fn with_var(mut self, method: bool, n: u32, shape: Shape) -> Self {
        self.vars.insert((method, n), shape);
        self
    }
}

impl StructLayouts for FixedLayouts {
    fn shape(&self, ty: &TypeSig) -> Result<Shape, LayoutError> {
        let found = match ty.strip_modifiers() {
            TypeSig::ValueType(token) => self.by_token.get(token),
            TypeSig::GenericInst { token, .. } => self.by_token.get(token),
            TypeSig::Var(n) => self.vars.get(&(false, *n)),
            TypeSig::MVar(n) => self.vars.get(&(true, *n)),
            _ => None,
        };
        found
            .cloned()
            .ok_or_else(|| LayoutError::new(ty, "not in the fixed table"))
    }
}

//! The type grammar of signatures (ECMA-335 II.23.2.12 and neighbours).
//!
//! [`TypeSig`] is an owned tree that mirrors the bytes one to one: every element-type
//! byte becomes one node, in blob order. That makes the mapping exact in both
//! directions: [`TypeSig::encode`] of a parsed canonical blob reproduces it byte for
//! byte, and parsing an encoded value gives back an equal value.
//!
//! **Custom modifiers** (`CMOD_REQD`/`CMOD_OPT` + token) are wrapper nodes,
//! [`TypeSig::Modified`], around the type they precede. Likewise `PINNED` is the
//! wrapper [`TypeSig::Pinned`] and `BYREF` is [`TypeSig::ByRef`]. This keeps any
//! interleaving the blob uses (`CMOD PINNED CMOD BYREF T` included) and needs no
//! separate modifier lists. The parser accepts modifiers before *any* type, a superset
//! of where II.23.2 places them, matching the CLR's own parser.
//!
//! Position rules the parser enforces (and the encoder enforces identically, so that
//! every value that encodes also parses):
//! * `VOID` only as a return type or a pointer target (possibly under modifiers);
//! * `PINNED` only at the head of a local variable (possibly under modifiers or other
//!   `PINNED`s); see [`crate::sig::LocalVarSig`];
//! * `SENTINEL` never inside a type (method signatures handle it);
//! * at most [`MAX_NESTING`] nested levels in a tree, so hostile input cannot exhaust the
//!   stack ([`crate::Error::TooDeep`] beyond); the walks that skip types without a tree
//!   ([`skip_type`] and the method-signature summaries) do not recurse and have no
//!   limit.
//!
//! **`ELEMENT_TYPE_INTERNAL`** (`0x21`) never occurs in metadata; the runtime uses it in
//! signatures it builds itself, followed by a raw `TypeHandle` pointer. It is parsed as
//! [`TypeSig::Internal`] holding an 8-byte little-endian value, i.e. assuming a 64-bit
//! runtime; signatures from a 32-bit runtime that contain it mis-parse (and almost
//! surely fail later). `ELEMENT_TYPE_CMOD_INTERNAL` (`0x22`) and the obsolete or
//! custom-attribute-only element types are rejected.
//!
//! **Method signatures** appear inside types (`FNPTR`), and types inside them, so the
//! method-signature grammar ([`MethodSig`], [`CallingConvention`], [`callconv`] and the
//! walks over them) is defined here too; [`crate::sig::method`] has the rest of the
//! method-signature API and re-exports these items.

use crate::error::{Error, Result};
use crate::sig::compressed::{
    SigReader, bad, decode_type_def_or_ref, unencodable, write_compressed_i32,
    write_compressed_u32, write_type_def_or_ref,
};

/// The deepest nesting of types (and function-pointer signatures) that the signature
/// trees ([`TypeSig`], [`MethodSig`], [`crate::sig::LocalVarSig`],
/// [`crate::sig::FieldSig`]) parse and encode; deeper input fails with
/// [`crate::Error::TooDeep`], which says the type is too deep for a tree, not that it is
/// malformed.
///
/// Every wrapper node ([`TypeSig::Modified`], [`TypeSig::Pinned`], pointers, arrays,
/// generic arguments, function-pointer parameters, …) counts as one level.
///
/// The walks that skip types without building a tree ([`skip_type`],
/// [`crate::sig::summarize_method_sig`], [`crate::sig::return_type_bytes`],
/// [`crate::sig::LocalVarSig::append_to_blob`]: what rewriting a method needs) have no
/// nesting limit: they loop rather than recurse, and accept every depth the runtime
/// does.
///
/// The limit bounds the stack the tree walks take, since each recurses once per level.
/// Measured in release builds (x86-64, `tests/sig.rs` keeps a guard), a level costs
/// parsing 160 (pointers) to 672 bytes (function pointers; 400 for generic
/// instantiations), encoding 127 to 240, cloning 288, dropping 64, formatting with
/// `Debug` 737 at most; so the deepest tree walk takes about 190 KiB at this limit
/// (`Debug` of nested function pointers; parsing them, 172 KiB), under a fifth of a
/// 1 MiB thread. The runtime itself takes about 225 bytes per level to load
/// a nested generic type (CoreCLR 3.1: 4,578 levels run on a thread of 1 MiB, 1,094 on
/// 256 KiB; 20,000 on the 8 MiB main thread).
pub const MAX_NESTING: usize = 256;

/// Element-type bytes (`CorElementType`, ECMA-335 II.23.1.16) used in signatures.
pub mod element_type {
    /// Marks the end of a list (unused in signatures).
    pub const END: u8 = 0x00;
    /// `void`.
    pub const VOID: u8 = 0x01;
    /// `bool`.
    pub const BOOLEAN: u8 = 0x02;
    /// `char`.
    pub const CHAR: u8 = 0x03;
    /// `int8`.
    pub const I1: u8 = 0x04;
    /// `unsigned int8`.
    pub const U1: u8 = 0x05;
    /// `int16`.
    pub const I2: u8 = 0x06;
    /// `unsigned int16`.
    pub const U2: u8 = 0x07;
    /// `int32`.
    pub const I4: u8 = 0x08;
    /// `unsigned int32`.
    pub const U4: u8 = 0x09;
    /// `int64`.
    pub const I8: u8 = 0x0A;
    /// `unsigned int64`.
    pub const U8: u8 = 0x0B;
    /// `float32`.
    pub const R4: u8 = 0x0C;
    /// `float64`.
    pub const R8: u8 = 0x0D;
    /// `string`.
    pub const STRING: u8 = 0x0E;
    /// Unmanaged pointer, followed by the target type.
    pub const PTR: u8 = 0x0F;
    /// Managed reference, followed by the target type.
    pub const BYREF: u8 = 0x10;
    /// Value type, followed by a TypeDefOrRefOrSpecEncoded token.
    pub const VALUETYPE: u8 = 0x11;
    /// Reference type, followed by a TypeDefOrRefOrSpecEncoded token.
    pub const CLASS: u8 = 0x12;
    /// Type generic parameter, followed by its compressed index.
    pub const VAR: u8 = 0x13;
    /// General array, followed by the element type and the array shape.
    pub const ARRAY: u8 = 0x14;
    /// Generic instantiation.
    pub const GENERICINST: u8 = 0x15;
    /// `typedref`.
    pub const TYPEDBYREF: u8 = 0x16;
    /// `native int`.
    pub const I: u8 = 0x18;
    /// `native unsigned int`.
    pub const U: u8 = 0x19;
    /// Function pointer, followed by a method signature.
    pub const FNPTR: u8 = 0x1B;
    /// `object`.
    pub const OBJECT: u8 = 0x1C;
    /// Single-dimension zero-based array, followed by the element type.
    pub const SZARRAY: u8 = 0x1D;
    /// Method generic parameter, followed by its compressed index.
    pub const MVAR: u8 = 0x1E;
    /// Required custom modifier, followed by a TypeDefOrRefOrSpecEncoded token.
    pub const CMOD_REQD: u8 = 0x1F;
    /// Optional custom modifier, followed by a TypeDefOrRefOrSpecEncoded token.
    pub const CMOD_OPT: u8 = 0x20;
    /// Runtime-internal type handle, followed by a pointer-sized value.
    pub const INTERNAL: u8 = 0x21;
    /// Runtime-internal custom modifier (never in metadata; rejected).
    pub const CMOD_INTERNAL: u8 = 0x22;
    /// Flag bit of the modifier element types.
    pub const MODIFIER: u8 = 0x40;
    /// Separates fixed from variable arguments in a vararg call site signature.
    pub const SENTINEL: u8 = 0x41;
    /// Pinned local variable.
    pub const PINNED: u8 = 0x45;
}

use element_type as et;

/// One type in a signature. See the [module documentation](self) for how the tree maps
/// to bytes.
///
/// Tokens are full metadata tokens (`0x02xxxxxx` TypeDef, `0x01xxxxxx` TypeRef or
/// `0x1Bxxxxxx` TypeSpec); the encoder rejects tokens of other tables.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TypeSig {
    /// `VOID` (return types and pointer targets only).
    Void,
    /// `BOOLEAN`.
    Boolean,
    /// `CHAR`.
    Char,
    /// `I1`.
    I1,
    /// `U1`.
    U1,
    /// `I2`.
    I2,
    /// `U2`.
    U2,
    /// `I4`.
    I4,
    /// `U4`.
    U4,
    /// `I8`.
    I8,
    /// `U8`.
    U8,
    /// `R4`.
    R4,
    /// `R8`.
    R8,
    /// `I` (native int).
    I,
    /// `U` (native unsigned int).
    U,
    /// `STRING`.
    String,
    /// `OBJECT`.
    Object,
    /// `TYPEDBYREF`.
    TypedByRef,
    /// `CLASS` token: a reference type.
    Class(u32),
    /// `VALUETYPE` token: a value type.
    ValueType(u32),
    /// `PTR` type: an unmanaged pointer (the target may be [`TypeSig::Void`]).
    Ptr(Box<TypeSig>),
    /// `BYREF` type: a managed reference.
    ByRef(Box<TypeSig>),
    /// `SZARRAY` type: a single-dimension, zero-based array.
    SzArray(Box<TypeSig>),
    /// `ARRAY` type shape: a general array.
    Array(Box<ArrayType>),
    /// `GENERICINST (CLASS|VALUETYPE) token count args…`.
    GenericInst {
        /// Whether the generic type is a value type (`VALUETYPE`) or not (`CLASS`).
        is_value_type: bool,
        /// The generic type definition's token.
        token: u32,
        /// The type arguments; never empty in a valid signature.
        args: Vec<TypeSig>,
    },
    /// `VAR n`: the `n`th generic parameter of the enclosing type.
    Var(u32),
    /// `MVAR n`: the `n`th generic parameter of the enclosing method.
    MVar(u32),
    /// `FNPTR` method signature: a function pointer.
    FnPtr(Box<MethodSig>),
    /// `CMOD_REQD token inner` or `CMOD_OPT token inner`: a custom modifier on `inner`.
    Modified {
        /// `CMOD_REQD` (true) or `CMOD_OPT` (false).
        required: bool,
        /// The modifier type's token.
        token: u32,
        /// The modified type (may itself be `Modified`).
        inner: Box<TypeSig>,
    },
    /// `PINNED inner`: a pinned local (local variable signatures only).
    Pinned(Box<TypeSig>),
    /// `ELEMENT_TYPE_INTERNAL` followed by a raw 8-byte runtime `TypeHandle` (never in
    /// metadata; see the [module documentation](self)).
    Internal(u64),
}

/// A general (`ELEMENT_TYPE_ARRAY`) array type: element type and `ArrayShape`.
///
/// Valid shapes have `rank >= 1`, `sizes.len() <= rank` and `lo_bounds.len() <= rank`;
/// the parser and encoder both enforce this.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ArrayType {
    /// The element type.
    pub elem: TypeSig,
    /// The number of dimensions (`1..=0x1FFF_FFFF`).
    pub rank: u32,
    /// Sizes of the leading dimensions that have one (each `<= 0x1FFF_FFFF`).
    pub sizes: Vec<u32>,
    /// Lower bounds of the leading dimensions that have one (compressed signed, so
    /// `-2^28..2^28`).
    pub lo_bounds: Vec<i32>,
}

/// Where a type appears, which decides whether `VOID` and `PINNED` may head it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ctx {
    void: bool,
    pinned: bool,
}

impl Ctx {
    /// An ordinary type position.
    pub(crate) const PLAIN: Ctx = Ctx {
        void: false,
        pinned: false,
    };
    /// A method's return type, or a pointer's target.
    pub(crate) const RET: Ctx = Ctx {
        void: true,
        pinned: false,
    };
    /// A local variable.
    pub(crate) const LOCAL: Ctx = Ctx {
        void: false,
        pinned: true,
    };
}

fn primitive_from_byte(b: u8) -> Option<TypeSig> {
    Some(match b {
        et::VOID => TypeSig::Void,
        et::BOOLEAN => TypeSig::Boolean,
        et::CHAR => TypeSig::Char,
        et::I1 => TypeSig::I1,
        et::U1 => TypeSig::U1,
        et::I2 => TypeSig::I2,
        et::U2 => TypeSig::U2,
        et::I4 => TypeSig::I4,
        et::U4 => TypeSig::U4,
        et::I8 => TypeSig::I8,
        et::U8 => TypeSig::U8,
        et::R4 => TypeSig::R4,
        et::R8 => TypeSig::R8,
        et::I => TypeSig::I,
        et::U => TypeSig::U,
        et::STRING => TypeSig::String,
        et::OBJECT => TypeSig::Object,
        et::TYPEDBYREF => TypeSig::TypedByRef,
        _ => return None,
    })
}

#[inline(always)]
fn is_primitive_byte(b: u8) -> bool {
    // One bit per element type, so the test is a shift rather than a jump table.
    const PRIMITIVE: u64 = {
        let mut mask = 0u64;
        let mut b = et::BOOLEAN;
        while b <= et::STRING {
            mask |= 1 << b;
            b += 1;
        }
        mask | 1 << et::TYPEDBYREF | 1 << et::I | 1 << et::U | 1 << et::OBJECT
    };
    b < 64 && (PRIMITIVE >> b) & 1 != 0
}

impl TypeSig {
    /// Parses a blob holding exactly one type, such as a TypeSpec blob.
    ///
    /// `VOID` and `PINNED` are rejected at the top level (they belong in return types
    /// and locals); bytes left after the type are an error.
    ///
    /// # Errors
    ///
    /// [`crate::Error::BadSignature`] for a malformed type (see the [module
    /// documentation](self)), `VOID` or `PINNED` at the top level, or trailing bytes;
    /// [`crate::Error::TooDeep`] for a type nested deeper than [`MAX_NESTING`].
    pub fn parse(blob: &[u8]) -> Result<TypeSig> {
        let mut r = SigReader::new(blob);
        let t = TypeSig::read(&mut r)?;
        r.expect_end()?;
        Ok(t)
    }

    /// Reads one type in an ordinary position (not a return type, not a local) and
    /// leaves `r` just past it.
    ///
    /// # Errors
    ///
    /// [`crate::Error::BadSignature`] for a malformed type; [`crate::Error::TooDeep`] for
    /// a type nested deeper than [`MAX_NESTING`].
    pub fn read(r: &mut SigReader<'_>) -> Result<TypeSig> {
        read_type(r, 0, Ctx::PLAIN)
    }

    /// Appends this type's encoding (as in an ordinary position) to `out`.
    ///
    /// # Errors
    ///
    /// Fails with [`crate::Error::Unencodable`] if a token belongs to the wrong
    /// table, an integer exceeds its compressed range, an array shape or generic
    /// instantiation is invalid, or `VOID`/`PINNED` appear where not allowed; with
    /// [`crate::Error::TooDeep`] if nesting exceeds [`MAX_NESTING`]. On failure `out`
    /// is left as it was.
    pub fn encode(&self, out: &mut Vec<u8>) -> Result<()> {
        encode_atomic(out, |out| write_type(self, out, 0, Ctx::PLAIN))
    }

    /// This type's encoding as a new vector; see [`TypeSig::encode`].
    ///
    /// # Errors
    ///
    /// Where [`TypeSig::encode`] fails.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.encode(&mut out)?;
        Ok(out)
    }

    /// The type under any leading custom modifiers.
    pub fn strip_modifiers(&self) -> &TypeSig {
        let mut t = self;
        while let TypeSig::Modified { inner, .. } = t {
            t = inner;
        }
        t
    }

    /// The first byte of this type's encoding (its element type).
    pub fn element_type(&self) -> u8 {
        match self {
            TypeSig::Void => et::VOID,
            TypeSig::Boolean => et::BOOLEAN,
            TypeSig::Char => et::CHAR,
            TypeSig::I1 => et::I1,
            TypeSig::U1 => et::U1,
            TypeSig::I2 => et::I2,
            TypeSig::U2 => et::U2,
            TypeSig::I4 => et::I4,
            TypeSig::U4 => et::U4,
            TypeSig::I8 => et::I8,
            TypeSig::U8 => et::U8,
            TypeSig::R4 => et::R4,
            TypeSig::R8 => et::R8,
            TypeSig::I => et::I,
            TypeSig::U => et::U,
            TypeSig::String => et::STRING,
            TypeSig::Object => et::OBJECT,
            TypeSig::TypedByRef => et::TYPEDBYREF,
            TypeSig::Class(_) => et::CLASS,
            TypeSig::ValueType(_) => et::VALUETYPE,
            TypeSig::Ptr(_) => et::PTR,
            TypeSig::ByRef(_) => et::BYREF,
            TypeSig::SzArray(_) => et::SZARRAY,
            TypeSig::Array(_) => et::ARRAY,
            TypeSig::GenericInst { .. } => et::GENERICINST,
            TypeSig::Var(_) => et::VAR,
            TypeSig::MVar(_) => et::MVAR,
            TypeSig::FnPtr(_) => et::FNPTR,
            TypeSig::Modified { required: true, .. } => et::CMOD_REQD,
            TypeSig::Modified {
                required: false, ..
            } => et::CMOD_OPT,
            TypeSig::Pinned(_) => et::PINNED,
            TypeSig::Internal(_) => et::INTERNAL,
        }
    }
}

/// Skips one type in an ordinary position, leaving `r` just past it, without recursion
/// and without allocating (but for types with more than eight arrays or function
/// pointers nested in one another). Accepts exactly the inputs [`TypeSig::read`]
/// accepts, and also types nested deeper than [`MAX_NESTING`]: it has no nesting limit.
///
/// # Errors
///
/// [`crate::Error::BadSignature`] where [`TypeSig::read`] fails with it.
pub fn skip_type(r: &mut SigReader<'_>) -> Result<()> {
    skip_type_at(r, Ctx::PLAIN).map(|_| ())
}

/// Runs `f`, truncating `out` back to its length on failure.
pub(crate) fn encode_atomic(
    out: &mut Vec<u8>,
    f: impl FnOnce(&mut Vec<u8>) -> Result<()>,
) -> Result<()> {
    let len = out.len();
    let r = f(out);
    if r.is_err() {
        out.truncate(len);
    }
    r
}

const VOID_MISPLACED: &str = "VOID outside a return type or pointer target";
const PINNED_MISPLACED: &str = "PINNED outside a local variable signature";
const RANK_ZERO: &str = "array rank is zero";
const TOO_MANY_SIZES: &str = "more array sizes than rank";
const TOO_MANY_BOUNDS: &str = "more array lower bounds than rank";
const NO_GENERIC_ARGS: &str = "generic instantiation with no type arguments";

/// The error for a type at blob offset `at` one level deeper than [`MAX_NESTING`].
#[cold]
fn too_deep(at: Option<usize>) -> Error {
    Error::TooDeep {
        offset: at,
        limit: MAX_NESTING,
    }
}

/// Reads the parts of an `ARRAY` after the element type; `on_size`/`on_bound` see each
/// value.
fn read_array_shape(
    r: &mut SigReader<'_>,
    mut on_size: impl FnMut(u32),
    mut on_bound: impl FnMut(i32),
) -> Result<u32> {
    let at = r.position();
    let rank = r.read_compressed_u32()?;
    if rank == 0 {
        return Err(bad(at, RANK_ZERO));
    }
    let at = r.position();
    let num_sizes = r.read_compressed_u32()?;
    if num_sizes > rank {
        return Err(bad(at, TOO_MANY_SIZES));
    }
    for _ in 0..num_sizes {
        on_size(r.read_compressed_u32()?);
    }
    let at = r.position();
    let num_bounds = r.read_compressed_u32()?;
    if num_bounds > rank {
        return Err(bad(at, TOO_MANY_BOUNDS));
    }
    for _ in 0..num_bounds {
        on_bound(r.read_compressed_i32()?);
    }
    Ok(rank)
}

/// Reads the head of a `GENERICINST` (after the `0x15` byte): kind, token and argument
/// count.
fn read_generic_inst_head(r: &mut SigReader<'_>) -> Result<(bool, u32, u32)> {
    let at = r.position();
    let is_value_type = match r.read_u8()? {
        et::CLASS => false,
        et::VALUETYPE => true,
        _ => return Err(bad(at, "GENERICINST not followed by CLASS or VALUETYPE")),
    };
    let token = r.read_type_def_or_ref()?;
    let at = r.position();
    let count = r.read_compressed_u32()?;
    if count == 0 {
        return Err(bad(at, NO_GENERIC_ARGS));
    }
    Ok((is_value_type, token, count))
}

/// The error for an element-type byte that cannot start a type.
fn bad_element(at: usize, b: u8) -> Error {
    bad(
        at,
        match b {
            et::SENTINEL => "SENTINEL outside a method signature's parameter list",
            et::CMOD_INTERNAL => "runtime-internal ELEMENT_TYPE_CMOD_INTERNAL not supported",
            et::PINNED => PINNED_MISPLACED,
            et::VOID => VOID_MISPLACED,
            et::END => "ELEMENT_TYPE_END where a type was expected",
            _ => "unknown element type",
        },
    )
}

// The tree walks (`read_type`, `write_type` and the method-signature walks they call)
// recurse once per level of nesting, so each keeps its own frame small: the shapes
// with more state (arrays, generic instantiations, function pointers, modifiers) are
// read and written by functions of their own, kept out of line, so that a chain of
// wrappers or of generic instantiations costs only the frames it uses.
// `tests/sig.rs` (`stack_per_nesting_level`) measures the cost per level.

/// Reads one type at nesting `depth` in position `ctx`.
pub(crate) fn read_type(r: &mut SigReader<'_>, depth: usize, ctx: Ctx) -> Result<TypeSig> {
    let at = r.position();
    if depth >= MAX_NESTING {
        return Err(too_deep(Some(at)));
    }
    let next = depth + 1;
    let b = r.read_u8()?;
    let (wrap, inner_ctx): (fn(Box<TypeSig>) -> TypeSig, Ctx) = match b {
        et::PTR => (TypeSig::Ptr, Ctx::RET),
        et::BYREF => (TypeSig::ByRef, Ctx::PLAIN),
        et::SZARRAY => (TypeSig::SzArray, Ctx::PLAIN),
        et::PINNED if ctx.pinned => (TypeSig::Pinned, Ctx::LOCAL),
        et::ARRAY => return read_array(r, next),
        et::GENERICINST => return read_generic_inst(r, next),
        et::FNPTR => return read_fn_ptr(r, next),
        et::CMOD_REQD | et::CMOD_OPT => return read_modified(r, b == et::CMOD_REQD, next, ctx),
        _ => return read_leaf(r, at, b, ctx),
    };
    Ok(wrap(Box::new(read_type(r, next, inner_ctx)?)))
}

/// [`read_type`] of a type without nested types, whose first byte `b` was at `at`.
#[inline(never)]
fn read_leaf(r: &mut SigReader<'_>, at: usize, b: u8, ctx: Ctx) -> Result<TypeSig> {
    if is_primitive_byte(b) || (b == et::VOID && ctx.void) {
        // `primitive_from_byte` covers exactly these bytes.
        return primitive_from_byte(b).ok_or_else(|| bad_element(at, b));
    }
    Ok(match b {
        et::VALUETYPE => TypeSig::ValueType(r.read_type_def_or_ref()?),
        et::CLASS => TypeSig::Class(r.read_type_def_or_ref()?),
        et::VAR => TypeSig::Var(r.read_compressed_u32()?),
        et::MVAR => TypeSig::MVar(r.read_compressed_u32()?),
        et::INTERNAL => TypeSig::Internal(r.read_u64_le()?),
        _ => return Err(bad_element(at, b)),
    })
}

/// [`read_type`] of an `ARRAY` after its first byte; its element type nests at `depth`.
#[inline(never)]
fn read_array(r: &mut SigReader<'_>, depth: usize) -> Result<TypeSig> {
    let elem = read_type(r, depth, Ctx::PLAIN)?;
    let mut sizes = Vec::new();
    let mut lo_bounds = Vec::new();
    let rank = read_array_shape(r, |s| sizes.push(s), |b| lo_bounds.push(b))?;
    Ok(TypeSig::Array(Box::new(ArrayType {
        elem,
        rank,
        sizes,
        lo_bounds,
    })))
}

/// [`read_type`] of a `GENERICINST` after its first byte; its arguments nest at
/// `depth`.
#[inline(never)]
fn read_generic_inst(r: &mut SigReader<'_>, depth: usize) -> Result<TypeSig> {
    let (is_value_type, token, count) = read_generic_inst_head(r)?;
    // Every argument takes at least one byte, so this bounds the allocation.
    let cap = r.remaining().min(count as usize);
    let mut args = Vec::with_capacity(cap);
    for _ in 0..count {
        args.push(read_type(r, depth, Ctx::PLAIN)?);
    }
    Ok(TypeSig::GenericInst {
        is_value_type,
        token,
        args,
    })
}

/// [`read_type`] of a `FNPTR` after its first byte; its types nest at `depth`.
#[inline(never)]
fn read_fn_ptr(r: &mut SigReader<'_>, depth: usize) -> Result<TypeSig> {
    Ok(TypeSig::FnPtr(Box::new(read_method_sig(r, depth)?)))
}

/// [`read_type`] of a `CMOD_REQD` or `CMOD_OPT` after its first byte; the modified type
/// nests at `depth`, in position `ctx`.
#[inline(never)]
fn read_modified(r: &mut SigReader<'_>, required: bool, depth: usize, ctx: Ctx) -> Result<TypeSig> {
    let token = r.read_type_def_or_ref()?;
    let inner = read_type(r, depth, ctx)?;
    Ok(TypeSig::Modified {
        required,
        token,
        inner: Box::new(inner),
    })
}

/// Skips one type in position `ctx`, without recursion and without a nesting limit;
/// accepts exactly what [`read_type`] accepts at any depth, and also types nested
/// deeper than [`MAX_NESTING`]. Returns whether the type was `VOID` under any
/// modifiers.
#[inline]
pub(crate) fn skip_type_at(r: &mut SigReader<'_>, ctx: Ctx) -> Result<bool> {
    match skip_plain_type(r.data(), r.position(), ctx) {
        Some((end, void)) => {
            r.seek(end);
            Ok(void)
        }
        None => skip_type_full(r, ctx),
    }
}

/// The common shapes of [`skip_type_at`] in one loop: element types without operands,
/// `CLASS`/`VALUETYPE` tokens, `VAR`/`MVAR` numbers, `BYREF`/`SZARRAY`/`PTR`/`PINNED`
/// wrappers and `GENERICINST`s of those, at any depth. Returns the end of the type
/// starting at `start` in `data` and whether it is `VOID`, as [`skip_type_full`] would;
/// `None` for any other shape and for anything malformed, where [`skip_type_full`]
/// decides (and reports the error).
#[inline(always)]
pub(crate) fn skip_plain_type(data: &[u8], start: usize, ctx: Ctx) -> Option<(usize, bool)> {
    let mut pos = start;
    let mut ctx = ctx;
    // Types still to skip: the one at `pos`, then generic arguments. Each takes at
    // least one byte, so a count beyond the data's length ends at its end.
    let mut pending = 1u64;
    loop {
        let b = *data.get(pos)?;
        pos += 1;
        if !is_primitive_byte(b) {
            match b {
                et::CLASS | et::VALUETYPE => pos = token_end(data, pos)?,
                et::VAR | et::MVAR => pos = compressed_at(data, pos)?.1,
                et::BYREF | et::SZARRAY => {
                    ctx = Ctx::PLAIN;
                    continue;
                }
                et::PTR => {
                    ctx = Ctx::RET;
                    continue;
                }
                et::PINNED if ctx.pinned => {
                    ctx = Ctx::LOCAL;
                    continue;
                }
                // Only a whole type that is `VOID` counts as void (a pointer target does
                // not).
                et::VOID if ctx.void && pos == start + 1 => return Some((pos, true)),
                et::VOID if ctx.void => {}
                et::GENERICINST => {
                    if !matches!(data.get(pos), Some(&(et::CLASS | et::VALUETYPE))) {
                        return None;
                    }
                    let (count, end) = compressed_at(data, token_end(data, pos + 1)?)?;
                    if count == 0 {
                        return None;
                    }
                    pos = end;
                    pending += u64::from(count);
                }
                _ => return None,
            }
        }
        pending -= 1;
        if pending == 0 {
            return Some((pos, false));
        }
        ctx = Ctx::PLAIN;
    }
}

/// The compressed unsigned integer at `pos` and its end (as
/// [`SigReader::read_compressed_u32`] reads it); `None` for an invalid first byte or
/// truncation.
#[inline(always)]
pub(crate) fn compressed_at(data: &[u8], pos: usize) -> Option<(u32, usize)> {
    let b0 = *data.get(pos)?;
    if b0 & 0x80 == 0 {
        Some((u32::from(b0), pos + 1))
    } else if b0 & 0xC0 == 0x80 {
        let b1 = *data.get(pos + 1)?;
        Some(((u32::from(b0 & 0x3F) << 8) | u32::from(b1), pos + 2))
    } else if b0 & 0xE0 == 0xC0 {
        let s = data.get(pos..pos + 4)?;
        let v = u32::from_be_bytes([s[0] & 0x1F, s[1], s[2], s[3]]);
        Some((v, pos + 4))
    } else {
        None
    }
}

/// The end of the `TypeDefOrRefOrSpecEncoded` token at `pos`; `None` where
/// [`SigReader::read_type_def_or_ref`] fails.
#[inline(always)]
fn token_end(data: &[u8], pos: usize) -> Option<usize> {
    let (coded, end) = compressed_at(data, pos)?;
    decode_type_def_or_ref(coded)?;
    Some(end)
}

/// What [`skip_type_full`] reads once the types of a level are skipped.
#[derive(Debug, Clone, Copy)]
enum Then {
    /// An `ARRAY`'s shape, after its element type.
    Shape,
    /// A function pointer's parameters, after its return type and after each parameter:
    /// `left` more, and whether a `SENTINEL` came before one of them.
    Params { left: u32, sentinel: bool },
}

/// A level of [`skip_type_full`] inside an `ARRAY` or `FNPTR`: what comes after its
/// types, and the types the enclosing level still had to skip.
#[derive(Debug, Clone, Copy)]
struct Frame {
    then: Then,
    outer_pending: u64,
}

/// [`skip_type_at`] for every shape, in one loop: the types still to skip at the current
/// level are a count (generic arguments add to it), and only arrays and function
/// pointers, which have more to read after their types, push a frame (on the heap
/// beyond the eight kept inline). Reads the bytes in the order [`read_type`] reads them
/// and fails with the same errors, at any depth.
#[inline(never)]
fn skip_type_full(r: &mut SigReader<'_>, ctx: Ctx) -> Result<bool> {
    let mut frames: smallvec::SmallVec<[Frame; 8]> = smallvec::SmallVec::new();
    let mut ctx = ctx;
    // Types still to skip at this level, the current one included. Each takes at least
    // one byte, so a count beyond the data's length ends in a truncation error.
    let mut pending = 1u64;
    // Whether the current type is the whole type `r` started at, under modifiers only
    // (a `VOID` there is a void return type).
    let mut whole = true;
    loop {
        let at = r.position();
        let b = r.read_u8()?;
        if !is_primitive_byte(b) {
            match b {
                et::VOID if ctx.void => {
                    if whole {
                        return Ok(true);
                    }
                }
                et::PTR => {
                    ctx = Ctx::RET;
                    whole = false;
                    continue;
                }
                et::BYREF | et::SZARRAY => {
                    ctx = Ctx::PLAIN;
                    whole = false;
                    continue;
                }
                et::PINNED if ctx.pinned => {
                    ctx = Ctx::LOCAL;
                    whole = false;
                    continue;
                }
                et::CMOD_REQD | et::CMOD_OPT => {
                    r.read_type_def_or_ref()?;
                    continue;
                }
                et::VALUETYPE | et::CLASS => {
                    r.read_type_def_or_ref()?;
                }
                et::VAR | et::MVAR => {
                    r.read_compressed_u32()?;
                }
                et::INTERNAL => {
                    r.read_u64_le()?;
                }
                et::GENERICINST => {
                    let (_, _, count) = read_generic_inst_head(r)?;
                    // This type is replaced by its arguments.
                    pending += u64::from(count) - 1;
                    ctx = Ctx::PLAIN;
                    whole = false;
                    continue;
                }
                et::ARRAY => {
                    frames.push(Frame {
                        then: Then::Shape,
                        outer_pending: pending - 1,
                    });
                    pending = 1;
                    ctx = Ctx::PLAIN;
                    whole = false;
                    continue;
                }
                et::FNPTR => {
                    let head = read_head(r)?;
                    frames.push(Frame {
                        then: Then::Params {
                            left: head.param_count,
                            sentinel: false,
                        },
                        outer_pending: pending - 1,
                    });
                    pending = 1;
                    ctx = Ctx::RET;
                    whole = false;
                    continue;
                }
                _ => return Err(bad_element(at, b)),
            }
        }
        // A type without operand types ended: on to the next one, after whatever ends
        // with it.
        pending -= 1;
        whole = false;
        ctx = Ctx::PLAIN;
        while pending == 0 {
            let Some(frame) = frames.pop() else {
                return Ok(false);
            };
            match frame.then {
                Then::Shape => {
                    read_array_shape(r, |_| {}, |_| {})?;
                    pending = frame.outer_pending;
                }
                Then::Params { left: 0, .. } => pending = frame.outer_pending,
                Then::Params { left, sentinel } => {
                    let sentinel = take_sentinel(r, sentinel)? || sentinel;
                    frames.push(Frame {
                        then: Then::Params {
                            left: left - 1,
                            sentinel,
                        },
                        outer_pending: frame.outer_pending,
                    });
                    pending = 1;
                }
            }
        }
    }
}

/// Writes one type at nesting `depth` in position `ctx`; fails exactly where
/// [`read_type`] would fail to read the result back.
pub(crate) fn write_type(t: &TypeSig, out: &mut Vec<u8>, depth: usize, ctx: Ctx) -> Result<()> {
    if depth >= MAX_NESTING {
        return Err(too_deep(None));
    }
    let next = depth + 1;
    out.push(t.element_type());
    match t {
        TypeSig::Void if !ctx.void => return Err(unencodable(VOID_MISPLACED)),
        TypeSig::Void
        | TypeSig::Boolean
        | TypeSig::Char
        | TypeSig::I1
        | TypeSig::U1
        | TypeSig::I2
        | TypeSig::U2
        | TypeSig::I4
        | TypeSig::U4
        | TypeSig::I8
        | TypeSig::U8
        | TypeSig::R4
        | TypeSig::R8
        | TypeSig::I
        | TypeSig::U
        | TypeSig::String
        | TypeSig::Object
        | TypeSig::TypedByRef => {}
        TypeSig::Class(token) | TypeSig::ValueType(token) => write_type_def_or_ref(*token, out)?,
        TypeSig::Ptr(inner) => write_type(inner, out, next, Ctx::RET)?,
        TypeSig::ByRef(inner) | TypeSig::SzArray(inner) => {
            write_type(inner, out, next, Ctx::PLAIN)?
        }
        TypeSig::Array(a) => write_array(a, out, next)?,
        TypeSig::GenericInst {
            is_value_type,
            token,
            args,
        } => write_generic_inst(*is_value_type, *token, args, out, next)?,
        TypeSig::Var(n) | TypeSig::MVar(n) => write_compressed_u32(*n, out)?,
        TypeSig::FnPtr(m) => write_fn_ptr(m, out, next)?,
        TypeSig::Modified { token, inner, .. } => {
            write_type_def_or_ref(*token, out)?;
            write_type(inner, out, next, ctx)?;
        }
        TypeSig::Pinned(inner) => {
            if !ctx.pinned {
                return Err(unencodable(PINNED_MISPLACED));
            }
            write_type(inner, out, next, Ctx::LOCAL)?;
        }
        TypeSig::Internal(handle) => out.extend_from_slice(&handle.to_le_bytes()),
    }
    Ok(())
}

/// [`write_type`] of an array after its first byte; its element type nests at `depth`.
#[inline(never)]
fn write_array(a: &ArrayType, out: &mut Vec<u8>, depth: usize) -> Result<()> {
    write_type(&a.elem, out, depth, Ctx::PLAIN)?;
    if a.rank == 0 {
        return Err(unencodable(RANK_ZERO));
    }
    if a.sizes.len() > a.rank as usize {
        return Err(unencodable(TOO_MANY_SIZES));
    }
    if a.lo_bounds.len() > a.rank as usize {
        return Err(unencodable(TOO_MANY_BOUNDS));
    }
    write_compressed_u32(a.rank, out)?;
    // Both lengths are at most `rank`, a u32.
    write_compressed_u32(a.sizes.len() as u32, out)?;
    for &s in &a.sizes {
        write_compressed_u32(s, out)?;
    }
    write_compressed_u32(a.lo_bounds.len() as u32, out)?;
    for &lb in &a.lo_bounds {
        write_compressed_i32(lb, out)?;
    }
    Ok(())
}

/// [`write_type`] of a generic instantiation after its first byte; its arguments nest
/// at `depth`.
#[inline(never)]
fn write_generic_inst(
    is_value_type: bool,
    token: u32,
    args: &[TypeSig],
    out: &mut Vec<u8>,
    depth: usize,
) -> Result<()> {
    out.push(if is_value_type {
        et::VALUETYPE
    } else {
        et::CLASS
    });
    write_type_def_or_ref(token, out)?;
    if args.is_empty() {
        return Err(unencodable(NO_GENERIC_ARGS));
    }
    let count = u32::try_from(args.len())
        .map_err(|_| unencodable("compressed unsigned integer exceeds 0x1FFFFFFF"))?;
    write_compressed_u32(count, out)?;
    for arg in args {
        write_type(arg, out, depth, Ctx::PLAIN)?;
    }
    Ok(())
}

/// [`write_type`] of a function pointer after its first byte; its types nest at
/// `depth`.
#[inline(never)]
fn write_fn_ptr(m: &MethodSig, out: &mut Vec<u8>, depth: usize) -> Result<()> {
    write_method_sig(m, out, depth)
}

/// Calling-convention byte values and flags (`CorCallingConvention`, II.23.2.3).
pub mod callconv {
    /// Managed default.
    pub const DEFAULT: u8 = 0x0;
    /// Unmanaged cdecl.
    pub const C: u8 = 0x1;
    /// Unmanaged stdcall.
    pub const STDCALL: u8 = 0x2;
    /// Unmanaged thiscall.
    pub const THISCALL: u8 = 0x3;
    /// Unmanaged fastcall.
    pub const FASTCALL: u8 = 0x4;
    /// Managed varargs.
    pub const VARARG: u8 = 0x5;
    /// A field signature.
    pub const FIELD: u8 = 0x6;
    /// A local variable signature.
    pub const LOCAL_SIG: u8 = 0x7;
    /// A property signature.
    pub const PROPERTY: u8 = 0x8;
    /// Unmanaged, convention given by modifiers on the return type (.NET 5+).
    pub const UNMANAGED: u8 = 0x9;
    /// A MethodSpec instantiation blob.
    pub const GENERICINST: u8 = 0xA;
    /// Mask of the calling-convention kind.
    pub const KIND_MASK: u8 = 0x0F;
    /// Flag: generic method; a generic parameter count follows.
    pub const GENERIC: u8 = 0x10;
    /// Flag: instance method.
    pub const HASTHIS: u8 = 0x20;
    /// Flag: the `this` parameter is listed explicitly as the first parameter.
    pub const EXPLICITTHIS: u8 = 0x40;
}

/// The calling-convention kind of a method signature (low nibble of its first byte).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum CallingConvention {
    /// `DEFAULT` (0x0): managed.
    #[default]
    Default,
    /// `C` (0x1): unmanaged cdecl.
    C,
    /// `STDCALL` (0x2).
    StdCall,
    /// `THISCALL` (0x3).
    ThisCall,
    /// `FASTCALL` (0x4).
    FastCall,
    /// `VARARG` (0x5): managed varargs.
    VarArg,
    /// `UNMANAGED` (0x9): unmanaged, convention given by return-type modifiers.
    Unmanaged,
}

impl CallingConvention {
    /// The convention for a kind nibble, or `None` if it is not a method-signature
    /// kind.
    pub const fn from_kind(kind: u8) -> Option<Self> {
        Some(match kind {
            callconv::DEFAULT => CallingConvention::Default,
            callconv::C => CallingConvention::C,
            callconv::STDCALL => CallingConvention::StdCall,
            callconv::THISCALL => CallingConvention::ThisCall,
            callconv::FASTCALL => CallingConvention::FastCall,
            callconv::VARARG => CallingConvention::VarArg,
            callconv::UNMANAGED => CallingConvention::Unmanaged,
            _ => return None,
        })
    }

    /// The kind nibble of this convention.
    pub const fn kind(self) -> u8 {
        match self {
            CallingConvention::Default => callconv::DEFAULT,
            CallingConvention::C => callconv::C,
            CallingConvention::StdCall => callconv::STDCALL,
            CallingConvention::ThisCall => callconv::THISCALL,
            CallingConvention::FastCall => callconv::FASTCALL,
            CallingConvention::VarArg => callconv::VARARG,
            CallingConvention::Unmanaged => callconv::UNMANAGED,
        }
    }
}

/// An owned method signature (MethodDefSig, MethodRefSig, StandAloneMethodSig, or the
/// signature inside a function-pointer type).
///
/// Parsing then encoding reproduces a canonical blob byte for byte; encoding then
/// parsing gives back an equal value.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MethodSig {
    /// The calling-convention kind.
    pub calling_convention: CallingConvention,
    /// `HASTHIS`: an instance method (a `this` argument is passed).
    pub has_this: bool,
    /// `EXPLICITTHIS`: `this` is listed as the first of [`MethodSig::params`].
    pub explicit_this: bool,
    /// The number of generic parameters; nonzero exactly when the `GENERIC` flag is set.
    pub generic_param_count: u32,
    /// The return type ([`TypeSig::Void`] for none, possibly under modifiers).
    pub return_type: TypeSig,
    /// All parameters, fixed ones first, then varargs (if any).
    pub params: Vec<TypeSig>,
    /// Where a `SENTINEL` precedes `params[i]`: `Some(i)` with `i < params.len()`
    /// (vararg call sites), else `None`.
    pub sentinel: Option<usize>,
}

/// What stack analysis needs to know about a method signature, computed without
/// allocating by [`summarize_method_sig`](crate::sig::summarize_method_sig).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MethodSigSummary {
    /// The calling-convention kind.
    pub calling_convention: CallingConvention,
    /// `HASTHIS`: an instance method.
    pub has_this: bool,
    /// `EXPLICITTHIS`: `this` is counted in `param_count`.
    pub explicit_this: bool,
    /// The number of generic parameters (0 if not generic).
    pub generic_param_count: u32,
    /// The number of parameters, fixed and vararg (not counting the sentinel, nor an
    /// implicit `this`).
    pub param_count: u32,
    /// False only when the return type is `VOID` (possibly under custom modifiers).
    pub returns_value: bool,
}

/// The fixed part of a method signature.
struct Head {
    calling_convention: CallingConvention,
    has_this: bool,
    explicit_this: bool,
    generic_param_count: u32,
    param_count: u32,
}

fn read_head(r: &mut SigReader<'_>) -> Result<Head> {
    let at = r.position();
    let b = r.read_u8()?;
    if b & 0x80 != 0 {
        return Err(bad(at, "reserved calling convention bit 0x80 set"));
    }
    let kind = b & callconv::KIND_MASK;
    let calling_convention = CallingConvention::from_kind(kind).ok_or_else(|| {
        bad(
            at,
            match kind {
                callconv::FIELD => "field signature where a method signature was expected",
                callconv::LOCAL_SIG => {
                    "local variable signature where a method signature was expected"
                }
                callconv::PROPERTY => "property signature where a method signature was expected",
                callconv::GENERICINST => {
                    "MethodSpec instantiation where a method signature was expected"
                }
                _ => "unknown calling convention",
            },
        )
    })?;
    let generic_param_count = if b & callconv::GENERIC != 0 {
        let at = r.position();
        let n = r.read_compressed_u32()?;
        if n == 0 {
            return Err(bad(
                at,
                "GENERIC method signature with zero generic parameters",
            ));
        }
        n
    } else {
        0
    };
    let param_count = r.read_compressed_u32()?;
    Ok(Head {
        calling_convention,
        has_this: b & callconv::HASTHIS != 0,
        explicit_this: b & callconv::EXPLICITTHIS != 0,
        generic_param_count,
        param_count,
    })
}

/// Consumes a `SENTINEL` before parameter `index` if there is one, recording it.
fn read_sentinel(r: &mut SigReader<'_>, sentinel: &mut Option<usize>, index: usize) -> Result<()> {
    if take_sentinel(r, sentinel.is_some())? {
        *sentinel = Some(index);
    }
    Ok(())
}

/// Consumes a `SENTINEL` if one comes next, and says whether it did; `seen`: whether
/// the parameter list had one already (a second is an error).
fn take_sentinel(r: &mut SigReader<'_>, seen: bool) -> Result<bool> {
    if r.peek_u8()? != element_type::SENTINEL {
        return Ok(false);
    }
    if seen {
        return Err(bad(r.position(), "second SENTINEL in parameter list"));
    }
    r.read_u8()?;
    Ok(true)
}

/// Reads a method signature whose types nest at `depth`.
pub(crate) fn read_method_sig(r: &mut SigReader<'_>, depth: usize) -> Result<MethodSig> {
    let head = read_head(r)?;
    let return_type = read_type(r, depth, Ctx::RET)?;
    // Every parameter takes at least one byte, so this bounds the allocation.
    let count = head.param_count as usize;
    let mut params = Vec::with_capacity(count.min(r.remaining()));
    let mut sentinel = None;
    for i in 0..count {
        read_sentinel(r, &mut sentinel, i)?;
        params.push(read_type(r, depth, Ctx::PLAIN)?);
    }
    Ok(MethodSig {
        calling_convention: head.calling_convention,
        has_this: head.has_this,
        explicit_this: head.explicit_this,
        generic_param_count: head.generic_param_count,
        return_type,
        params,
        sentinel,
    })
}

/// Skips a method signature, summarizing it, without recursion and without a nesting
/// limit; accepts exactly what [`read_method_sig`] accepts at any depth, and also
/// types nested deeper than [`MAX_NESTING`].
pub(crate) fn skip_method_sig(r: &mut SigReader<'_>) -> Result<MethodSigSummary> {
    skip_method_sig_spanning(r).map(|(s, _)| s)
}

/// [`skip_method_sig`], also giving the return type's byte range in the reader's data.
pub(crate) fn skip_method_sig_spanning(
    r: &mut SigReader<'_>,
) -> Result<(MethodSigSummary, std::ops::Range<usize>)> {
    let head = read_head(r)?;
    let ret_start = r.position();
    let returns_void = skip_type_at(r, Ctx::RET)?;
    let ret = ret_start..r.position();
    let mut sentinel = false;
    for _ in 0..head.param_count {
        sentinel |= take_sentinel(r, sentinel)?;
        skip_type_at(r, Ctx::PLAIN)?;
    }
    let summary = MethodSigSummary {
        calling_convention: head.calling_convention,
        has_this: head.has_this,
        explicit_this: head.explicit_this,
        generic_param_count: head.generic_param_count,
        param_count: head.param_count,
        returns_value: !returns_void,
    };
    Ok((summary, ret))
}

/// Writes a method signature whose types nest at `depth`; fails exactly where
/// [`read_method_sig`] would fail to read the result back.
pub(crate) fn write_method_sig(m: &MethodSig, out: &mut Vec<u8>, depth: usize) -> Result<()> {
    let mut b = m.calling_convention.kind();
    if m.generic_param_count != 0 {
        b |= callconv::GENERIC;
    }
    if m.has_this {
        b |= callconv::HASTHIS;
    }
    if m.explicit_this {
        b |= callconv::EXPLICITTHIS;
    }
    out.push(b);
    if m.generic_param_count != 0 {
        write_compressed_u32(m.generic_param_count, out)?;
    }
    if let Some(s) = m.sentinel
        && s >= m.params.len()
    {
        return Err(unencodable("sentinel not followed by a parameter"));
    }
    let count = u32::try_from(m.params.len())
        .map_err(|_| unencodable("compressed unsigned integer exceeds 0x1FFFFFFF"))?;
    write_compressed_u32(count, out)?;
    write_type(&m.return_type, out, depth, Ctx::RET)?;
    for (i, p) in m.params.iter().enumerate() {
        if m.sentinel == Some(i) {
            out.push(element_type::SENTINEL);
        }
        write_type(p, out, depth, Ctx::PLAIN)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`skip_type_full`] reads what [`read_type`] reads, in every context: the same
    /// end, the same `VOID`, the same error, but for [`crate::Error::TooDeep`], which
    /// only the tree has. Over pseudo-random blobs rich in nesting bytes, long enough for
    /// more nested arrays and function pointers than the frames kept inline, and
    /// started at every depth near the limit.
    #[test]
    fn full_skip_agrees_with_read() {
        const BYTES: &[u8] = &[
            0x01, 0x08, 0x0E, 0x0F, 0x10, 0x12, 0x14, 0x14, 0x15, 0x15, 0x1B, 0x1B, 0x1D, 0x1F,
            0x45, 0x41, 0x00, 0x01, 0x02, 0x03, 0x08, 0x08, 0x12, 0x7F, 0x80, 0xC0,
        ];
        let (mut ok, mut deep, mut errors) = (0usize, 0usize, 0usize);
        for blob in crate::sig::test_blobs(0x0123_4567_89AB_CDEF, 300_000, 1, 400, BYTES) {
            for ctx in [Ctx::PLAIN, Ctx::RET, Ctx::LOCAL] {
                let mut a = SigReader::new(&blob);
                let mut b = SigReader::new(&blob);
                match (read_type(&mut a, 0, ctx), skip_type_full(&mut b, ctx)) {
                    (Ok(t), Ok(void)) => {
                        ok += 1;
                        assert_eq!(a.position(), b.position(), "{blob:02x?}");
                        assert_eq!(t.strip_modifiers() == &TypeSig::Void, void, "{blob:02x?}");
                    }
                    (Err(Error::TooDeep { .. }), _) => deep += 1,
                    (Err(x), Err(y)) => {
                        errors += 1;
                        assert_eq!(x, y, "{blob:02x?}");
                    }
                    (x, y) => panic!("{blob:02x?} {ctx:?}: read {x:?} vs skip {y:?}"),
                }
            }
        }
        // Deep blobs: each shape at the limit and past it.
        for n in [MAX_NESTING - 1, MAX_NESTING, MAX_NESTING + 1] {
            for unit in [
                &[0x14][..],
                &[0x1B, 0x00, 0x01, 0x01],
                &[0x15, 0x12, 0x08, 0x02],
            ] {
                let mut blob = unit.repeat(n);
                blob.extend(std::iter::repeat_n(0x08, 2 * n + 1));
                blob.extend([0x01, 0x00, 0x00].repeat(n));
                let mut a = SigReader::new(&blob);
                let mut b = SigReader::new(&blob);
                let read = read_type(&mut a, 0, Ctx::PLAIN);
                let skipped = skip_type_full(&mut b, Ctx::PLAIN);
                if let Err(Error::TooDeep { .. }) = read {
                    deep += 1;
                } else {
                    assert_eq!(read.map(|_| a.position()), skipped.map(|_| b.position()));
                }
            }
        }
        assert!(
            ok > 10_000 && deep > 3 && errors > 10_000,
            "{ok} {deep} {errors}"
        );
    }

    /// Wherever the loop of [`skip_plain_type`] answers, it agrees with
    /// [`skip_type_full`]: over every short string of signature-like bytes and many
    /// longer pseudo-random ones, in every context.
    #[test]
    fn plain_type_loop_agrees_with_full_skip() {
        const BYTES: &[u8] = &[
            0x00, 0x01, 0x02, 0x08, 0x0E, 0x0F, 0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x18,
            0x1B, 0x1C, 0x1D, 0x1E, 0x1F, 0x20, 0x41, 0x45, 0x03, 0x07, 0x7F, 0x80, 0xBF, 0xC0,
            0xFF,
        ];
        let contexts = [Ctx::PLAIN, Ctx::RET, Ctx::LOCAL];
        let answered = std::cell::Cell::new(0usize);
        let check = |blob: &[u8]| {
            for start in 0..blob.len().min(2) {
                for ctx in contexts {
                    let Some((end, void)) = skip_plain_type(blob, start, ctx) else {
                        continue;
                    };
                    answered.set(answered.get() + 1);
                    let mut r = SigReader::new(blob);
                    r.seek(start);
                    assert_eq!(
                        skip_type_full(&mut r, ctx),
                        Ok(void),
                        "{blob:02x?} at {start}, {ctx:?}"
                    );
                    assert_eq!(r.position(), end, "{blob:02x?} at {start}");
                }
            }
        };
        for a in BYTES {
            check(&[*a]);
            for b in BYTES {
                check(&[*a, *b]);
                for c in BYTES {
                    check(&[*a, *b, *c]);
                    for d in [0x01, 0x08, 0x12, 0x15, 0x1D, 0x80, 0x01] {
                        check(&[*a, *b, *c, d]);
                    }
                }
            }
        }
        // Longer strings: xorshift over the same alphabet, plus deep wrapper chains.
        for blob in crate::sig::test_blobs(0x2545_F491_4F6C_DD1D, 200_000, 4, 40, BYTES) {
            check(&blob);
        }
        // Deep chains of wrappers and of generic instantiations, at no depth limit.
        for n in [1, 63, 64, 65, MAX_NESTING, MAX_NESTING + 1, 100_000] {
            for wrapper in [et::SZARRAY, et::BYREF, et::PTR, et::PINNED] {
                let mut blob = vec![wrapper; n];
                blob.push(et::I4);
                check(&blob);
                *blob.last_mut().unwrap() = et::VOID;
                check(&blob);
            }
            let mut blob = [et::GENERICINST, et::CLASS, 0x08, 0x02].repeat(n);
            blob.extend(std::iter::repeat_n(et::I4, n + 1));
            let answered_before = answered.get();
            check(&blob);
            assert!(answered.get() > answered_before, "{n}");
        }
        assert!(answered.get() > 10_000, "{answered:?}");
    }
}

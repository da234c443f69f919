//! Metadata by token, from any source: the signatures that rewriting needs and the names
//! that listings need.
//!
//! A method body names everything it uses by metadata token: the methods it calls, the
//! types and fields it touches, its LocalVarSig, its strings. Two kinds of readers hold
//! that metadata: an assembly file ([`crate::pe::Assembly`], feature `pe`) and, inside a
//! running process, the runtime's `IMetaDataImport` (feature `clr`). [`MetadataSource`]
//! is what both implement, so that the stack analysis
//! ([`crate::analysis::MetadataResolver`]), the return-value local
//! ([`crate::transform::ReturnLocal`]) and the disassembler ([`crate::disasm`]) work the
//! same on either.
//!
//! Only [`MetadataSource::signature`] and [`MetadataSource::method_spec_parent`] are
//! required; the names have default implementations that report them unavailable, so a
//! source that only rewrites need not provide them.

use crate::error::{Error, Result};

/// The table a token belongs to: its high byte.
#[inline]
pub const fn token_table(token: u32) -> u8 {
    (token >> 24) as u8
}

/// Token table numbers (the high byte of a token) of the tables a method body names,
/// and of AssemblyRef, which the references it names resolve in.
pub mod table {
    /// TypeRef (`0x01`).
    pub const TYPE_REF: u8 = 0x01;
    /// TypeDef (`0x02`).
    pub const TYPE_DEF: u8 = 0x02;
    /// Field (`0x04`).
    pub const FIELD: u8 = 0x04;
    /// MethodDef (`0x06`).
    pub const METHOD_DEF: u8 = 0x06;
    /// MemberRef (`0x0A`).
    pub const MEMBER_REF: u8 = 0x0A;
    /// StandAloneSig (`0x11`).
    pub const STANDALONE_SIG: u8 = 0x11;
    /// ModuleRef (`0x1A`).
    pub const MODULE_REF: u8 = 0x1A;
    /// AssemblyRef (`0x23`), the scope of a TypeRef to another assembly.
    pub const ASSEMBLY_REF: u8 = 0x23;
    /// TypeSpec (`0x1B`).
    pub const TYPE_SPEC: u8 = 0x1B;
    /// MethodSpec (`0x2B`).
    pub const METHOD_SPEC: u8 = 0x2B;
    /// User string (`0x70`), the operand of `ldstr`.
    pub const USER_STRING: u8 = 0x70;
}

/// The name of a TypeDef or TypeRef, with where it is nested or defined.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TypeName {
    /// The namespace; empty for nested types and the global namespace.
    pub namespace: String,
    /// The simple name (for a generic type, with its arity suffix, e.g. ``List`1``).
    pub name: String,
    /// For a nested type, the TypeDef (or for a TypeRef, the TypeRef) token of the type
    /// it is nested in.
    pub enclosing: Option<u32>,
    /// For a TypeRef resolved in another assembly, that assembly's name (what ilasm
    /// prints in brackets: `[System.Runtime]System.Object`).
    pub assembly: Option<String>,
}

/// The name of a member (method or field) and the type that owns it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MemberName {
    /// The owner: a TypeDef for MethodDef and Field tokens; for a MemberRef its parent
    /// (TypeDef, TypeRef, TypeSpec, ModuleRef or MethodDef token). `None` for members of
    /// the global `<Module>` type.
    pub owner: Option<u32>,
    /// The member's name.
    pub name: String,
}

/// Signatures and names by metadata token.
///
/// Implementations must answer the same token the same way every time (callers cache
/// answers, see [`crate::analysis::CachingResolver`]), never panic on a token they do
/// not know, and report one with [`Error::BadToken`]. The blobs returned are borrowed
/// from the source and live as long as the borrow of it.
pub trait MetadataSource {
    /// The signature blob of a token:
    ///
    /// * MethodDef (`0x06`): its `MethodDefSig`;
    /// * MemberRef (`0x0A`): its `MethodRefSig` (with the vararg part of a call site) or
    ///   its `FieldSig`;
    /// * Field (`0x04`): its `FieldSig`;
    /// * StandAloneSig (`0x11`): its `LocalVarSig` or `StandAloneMethodSig`;
    /// * TypeSpec (`0x1B`): its type signature;
    /// * MethodSpec (`0x2B`): its instantiation blob (`GENERICINST` and the type
    ///   arguments); the method it instantiates is [`MetadataSource::method_spec_parent`].
    ///
    /// # Errors
    /// [`Error::BadToken`] for a token of another table or a row that does not exist,
    /// and whatever error the source gives for malformed metadata.
    fn signature(&self, token: u32) -> Result<&[u8]>;

    /// The MethodDef or MemberRef token a MethodSpec token instantiates.
    ///
    /// # Errors
    /// [`Error::BadToken`] when `token` is not an existing MethodSpec.
    fn method_spec_parent(&self, token: u32) -> Result<u32>;

    /// The signature that describes a call through `token`, as the stack analysis needs
    /// it: the signature of a MethodDef, MemberRef or StandAloneSig (the operand of
    /// `calli`), and for a MethodSpec the signature of the generic method it
    /// instantiates.
    ///
    /// # Errors
    /// [`Error::BadToken`] for any other token, or a MethodSpec whose parent is neither
    /// a MethodDef nor a MemberRef; the errors of [`MetadataSource::signature`].
    fn call_site_signature(&self, token: u32) -> Result<&[u8]> {
        match token_table(token) {
            table::METHOD_DEF | table::MEMBER_REF | table::STANDALONE_SIG => self.signature(token),
            table::METHOD_SPEC => {
                let parent = self.method_spec_parent(token)?;
                match token_table(parent) {
                    table::METHOD_DEF | table::MEMBER_REF => self.signature(parent),
                    _ => Err(Error::BadToken {
                        token: parent,
                        what: "MethodSpec names neither a MethodDef nor a MemberRef",
                    }),
                }
            }
            _ => Err(Error::BadToken {
                token,
                what: "not a MethodDef, MemberRef, MethodSpec or StandAloneSig token",
            }),
        }
    }

    /// The name of a TypeDef (`0x02`) or TypeRef (`0x01`).
    ///
    /// # Errors
    /// [`Error::BadToken`] for other tokens or rows that do not exist; by default, for
    /// every token (a source without names).
    fn type_name(&self, token: u32) -> Result<TypeName> {
        Err(no_names(token))
    }

    /// The name and owner of a MethodDef (`0x06`), Field (`0x04`) or MemberRef (`0x0A`).
    ///
    /// # Errors
    /// [`Error::BadToken`] for other tokens or rows that do not exist; by default, for
    /// every token (a source without names).
    fn member_name(&self, token: u32) -> Result<MemberName> {
        Err(no_names(token))
    }

    /// The type a TypeDef (`0x02`) extends: a TypeDef, TypeRef or TypeSpec token, or
    /// `None` for a type that extends nothing (`System.Object`, interfaces, `<Module>`).
    /// Whether a type is a value type follows from it (it extends `System.ValueType` or
    /// `System.Enum`).
    ///
    /// # Errors
    /// [`Error::BadToken`] for other tokens or rows that do not exist; by default, for
    /// every token (a source without type definitions).
    fn type_extends(&self, type_def: u32) -> Result<Option<u32>> {
        Err(no_names(type_def))
    }

    /// The parent of a member: for a MethodDef (`0x06`) the TypeDef that declares it
    /// (the global `<Module>` type for a global function), for a MemberRef (`0x0A`) its
    /// `Class` (a TypeDef, TypeRef, TypeSpec, ModuleRef or MethodDef token).
    ///
    /// # Errors
    /// [`Error::BadToken`] for other tokens or rows that do not exist. By default it is
    /// read from [`MetadataSource::member_name`], whose owner leaves out `<Module>`: a
    /// member without an owner there is reported as [`Error::BadToken`].
    fn member_parent(&self, token: u32) -> Result<u32> {
        self.member_name(token)?.owner.ok_or(Error::BadToken {
            token,
            what: "the member has no parent type",
        })
    }

    /// The UTF-16 code units of a user string (`0x70`, the operand of `ldstr`), as
    /// stored: unpaired surrogates are kept.
    ///
    /// # Errors
    /// [`Error::BadToken`] for other tokens or strings that do not exist; by default,
    /// for every token (a source without names).
    fn user_string(&self, token: u32) -> Result<Vec<u16>> {
        Err(no_names(token))
    }

    /// The name of generic parameter `index` of a type (`owner` a TypeDef) or method
    /// (`owner` a MethodDef), when the source knows it. The disassembler prints `!0`
    /// and `!!0` where this is `None` (the default).
    fn generic_param_name(&self, owner: u32, index: u32) -> Option<String> {
        let _ = (owner, index);
        None
    }
}

/// A source that knows no token: every lookup fails with [`Error::BadToken`]. For
/// listing a body without metadata ([`crate::disasm::disassemble`] then writes every
/// token in hex).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoMetadata;

impl MetadataSource for NoMetadata {
    fn signature(&self, token: u32) -> Result<&[u8]> {
        Err(no_metadata(token))
    }

    fn method_spec_parent(&self, token: u32) -> Result<u32> {
        Err(no_metadata(token))
    }
}

/// The error of every lookup on [`NoMetadata`].
fn no_metadata(token: u32) -> Error {
    Error::BadToken {
        token,
        what: "no metadata source",
    }
}

/// The error of a name lookup on a source without names.
fn no_names(token: u32) -> Error {
    Error::BadToken {
        token,
        what: "this metadata source gives no names",
    }
}

/// Forwards every method of [`MetadataSource`] through a pointer type.
macro_rules! forward_metadata_source {
    ($($pointer:ty),*) => {$(
        impl<T: MetadataSource + ?Sized> MetadataSource for $pointer {
            #[inline]
            fn signature(&self, token: u32) -> Result<&[u8]> {
                (**self).signature(token)
            }
            #[inline]
            fn method_spec_parent(&self, token: u32) -> Result<u32> {
                (**self).method_spec_parent(token)
            }
            #[inline]
            fn call_site_signature(&self, token: u32) -> Result<&[u8]> {
                (**self).call_site_signature(token)
            }
            fn type_name(&self, token: u32) -> Result<TypeName> {
                (**self).type_name(token)
            }
            fn member_name(&self, token: u32) -> Result<MemberName> {
                (**self).member_name(token)
            }
            fn type_extends(&self, type_def: u32) -> Result<Option<u32>> {
                (**self).type_extends(type_def)
            }
            fn member_parent(&self, token: u32) -> Result<u32> {
                (**self).member_parent(token)
            }
            fn user_string(&self, token: u32) -> Result<Vec<u16>> {
                (**self).user_string(token)
            }
            fn generic_param_name(&self, owner: u32, index: u32) -> Option<String> {
                (**self).generic_param_name(owner, index)
            }
        }
    )*};
}

forward_metadata_source!(&T, std::sync::Arc<T>, Box<T>);

#[cfg(test)]
mod tests {
    use super::*;

    /// A source with two methods and a MethodSpec, and no names.
    struct Tiny;

    impl MetadataSource for Tiny {
        fn signature(&self, token: u32) -> Result<&[u8]> {
            match token {
                0x0600_0001 => Ok(&[0x00, 0x01, 0x01, 0x08]), // static void (int32)
                0x0A00_0001 => Ok(&[0x30, 0x01, 0x00, 0x08]), // instance generic int32()
                0x2B00_0001 => Ok(&[0x0A, 0x01, 0x08]),       // <int32>
                _ => Err(Error::BadToken { token, what: "no" }),
            }
        }
        fn method_spec_parent(&self, token: u32) -> Result<u32> {
            match token {
                0x2B00_0001 => Ok(0x0A00_0001),
                0x2B00_0002 => Ok(0x0200_0001),
                _ => Err(Error::BadToken { token, what: "no" }),
            }
        }
    }

    #[test]
    fn call_site_signature_follows_method_specs_and_refuses_other_tables() {
        assert_eq!(Tiny.call_site_signature(0x0600_0001), Ok(&[0, 1, 1, 8][..]));
        assert_eq!(
            Tiny.call_site_signature(0x2B00_0001),
            Ok(&[0x30, 1, 0, 8][..])
        );
        assert!(matches!(
            Tiny.call_site_signature(0x2B00_0002),
            Err(Error::BadToken {
                token: 0x0200_0001,
                ..
            })
        ));
        assert!(matches!(
            Tiny.call_site_signature(0x1B00_0001),
            Err(Error::BadToken { .. })
        ));
        assert!(matches!(
            Tiny.type_name(0x0200_0001),
            Err(Error::BadToken { .. })
        ));
        assert_eq!(Tiny.generic_param_name(0x0200_0001, 0), None);
    }
}

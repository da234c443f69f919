//! [`MetadataSource`] over an assembly file: signatures by token, and the names of
//! types, members, user strings and generic parameters.

use super::{Assembly, TableId, col, tables::MAX_ROWS};
use crate::error::{Error, Result};
use crate::metadata::{MemberName, MetadataSource, TypeName};

/// Signatures straight from the `#Blob` heap, without allocating; names from the
/// `#Strings` and `#US` heaps and the TypeDef, TypeRef, NestedClass, MemberRef and
/// GenericParam tables.
impl MetadataSource for Assembly<'_> {
    fn signature(&self, token: u32) -> Result<&[u8]> {
        let rid = token & MAX_ROWS;
        let (table, column) = match TableId::of_token(token) {
            Some(TableId::MethodDef) => (TableId::MethodDef, col::METHODDEF_SIGNATURE),
            Some(TableId::MemberRef) => (TableId::MemberRef, col::MEMBERREF_SIGNATURE),
            Some(TableId::Field) => (TableId::Field, col::FIELD_SIGNATURE),
            Some(TableId::StandAloneSig) => (TableId::StandAloneSig, col::STANDALONESIG_SIGNATURE),
            Some(TableId::TypeSpec) => (TableId::TypeSpec, col::TYPESPEC_SIGNATURE),
            Some(TableId::MethodSpec) => (TableId::MethodSpec, col::METHODSPEC_INSTANTIATION),
            _ => {
                return Err(Error::BadToken {
                    token,
                    what: "not a token with a signature",
                });
            }
        };
        self.blob_cell(table, rid, column)
    }

    fn method_spec_parent(&self, token: u32) -> Result<u32> {
        self.method_spec_method(token)
    }

    /// A TypeDef's enclosing type comes from the NestedClass table. A TypeRef's
    /// resolution scope decides the rest: another TypeRef is the enclosing type, an
    /// AssemblyRef gives [`TypeName::assembly`]; the module itself, a ModuleRef and a
    /// null scope give neither.
    fn type_name(&self, token: u32) -> Result<TypeName> {
        let name = Assembly::type_name(self, token)?;
        let (enclosing, assembly) = match TableId::of_token(token) {
            Some(TableId::TypeDef) => (self.enclosing_type(token)?, None),
            _ => {
                let scope = self.resolution_scope(token)?;
                match TableId::of_token(scope) {
                    _ if scope & MAX_ROWS == 0 => (None, None),
                    Some(TableId::TypeRef) => (Some(scope), None),
                    Some(TableId::AssemblyRef) => (None, Some(self.scope_name(scope)?.to_string())),
                    _ => (None, None),
                }
            }
        };
        Ok(TypeName {
            namespace: name.namespace.to_string(),
            name: name.name.to_string(),
            enclosing,
            assembly,
        })
    }

    /// Owners: the TypeDef whose MethodList (MethodDef) or FieldList (Field) range holds
    /// the member, or a MemberRef's `Class`. The global `<Module>` type (TypeDef row 1)
    /// is reported as no owner.
    fn member_name(&self, token: u32) -> Result<MemberName> {
        let owner = match TableId::of_token(token) {
            Some(TableId::MethodDef) => self.declaring_type(token)?,
            Some(TableId::Field) => self.field_declaring_type(token)?,
            Some(TableId::MemberRef) => Some(self.member_ref_parent(token)?),
            _ => {
                return Err(Error::BadToken {
                    token,
                    what: "not a MethodDef, Field or MemberRef token",
                });
            }
        };
        let owner = owner.filter(|&t| t & MAX_ROWS != 0 && t != TableId::TypeDef.token(1));
        Ok(MemberName {
            owner,
            name: Assembly::member_name(self, token)?.to_string(),
        })
    }

    fn type_extends(&self, type_def: u32) -> Result<Option<u32>> {
        Assembly::type_extends(self, type_def)
    }

    fn member_parent(&self, token: u32) -> Result<u32> {
        match TableId::of_token(token) {
            Some(TableId::MethodDef) => self.declaring_type(token)?.ok_or(Error::BadToken {
                token,
                what: "no TypeDef declares this MethodDef",
            }),
            Some(TableId::MemberRef) => self.member_ref_parent(token),
            _ => Err(Error::BadToken {
                token,
                what: "not a MethodDef or MemberRef token",
            }),
        }
    }

    fn user_string(&self, token: u32) -> Result<Vec<u16>> {
        Ok(Assembly::user_string(self, token)?.code_units().collect())
    }

    fn generic_param_name(&self, owner: u32, index: u32) -> Option<String> {
        let param = self.generic_param(owner, index).ok()??;
        self.string_cell(
            TableId::GenericParam,
            param & MAX_ROWS,
            col::GENERICPARAM_NAME,
        )
        .ok()
        .map(str::to_string)
    }
}

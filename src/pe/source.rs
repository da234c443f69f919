//! [`MetadataSource`] over an assembly file: signatures by token.

use super::{Assembly, TableId, col};
use crate::metadata::MetadataSource;
use crate::{Error, Result};

/// Signatures straight from the `#Blob` heap, without allocating.
impl MetadataSource for Assembly<'_> {
    fn signature(&self, token: u32) -> Result<&[u8]> {
        let rid = token & super::tables::MAX_ROWS;
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
}

//! A read-only, zero-copy reader of .NET PE files (ECMA-335 Partition II §24-25 and the
//! PE/COFF specification).
//!
//! [`Assembly::parse`] reads every header once (PE headers, section table, CLI header,
//! metadata root, stream headers, table layouts); afterwards every accessor is a bounds
//! checked view into the caller's buffer, and iteration allocates nothing per row.
//! Malformed input never panics: it yields [`Error::BadPe`] with the file offset of the
//! offending structure, or [`Error::BadToken`] for a token that names no row.
//!
//! ReadyToRun images (the .NET Core framework assemblies) are read like any other: their
//! metadata and IL are intact, only the CLI header flags and ManagedNativeHeader differ.
//!
//! ```no_run
//! # fn main() -> ilrewrite::Result<()> {
//! let bytes = std::fs::read("System.Private.CoreLib.dll").unwrap();
//! let asm = ilrewrite::pe::Assembly::parse(&bytes)?;
//! for m in asm.methods() {
//!     let m = m?;
//!     if let Some(body) = m.body {
//!         // `body` runs from the method's RVA to the end of its section; the method
//!         // body decoder decides how many of these bytes the method uses.
//!         let _ = (m.token, m.name, body.len());
//!     }
//! }
//! # Ok(()) }
//! ```

pub mod file;
pub mod heaps;
pub mod metadata;
mod read;
pub mod ready_to_run;
mod source;
pub mod tables;

use std::fmt;

pub use file::{DataDirectory, PeFile, SectionHeader};
pub use heaps::{BlobHeap, GuidHeap, StringsHeap, UserString, UserStringsHeap};
pub use metadata::{CliHeader, Metadata, MetadataRoot, StreamHeader};
pub use ready_to_run::{InlineMethod, InliningFormat, InliningRecord, InliningTable, ReadyToRun};
pub use tables::{CodedIndex, Column, ColumnKind, Row, TableId, TableLayout, Tables};

use crate::error::{Error, Result};
use read::{bad_pe, u16_at, u32_at};

/// The token "table" byte of `ldstr` operands (an index into `#US`, not a table).
pub const USER_STRING_TOKEN_TYPE: u8 = 0x70;

/// `MethodImplAttributes.CodeTypeMask`: the low two bits of a method's `ImplFlags`.
pub const METHOD_IMPL_CODE_TYPE_MASK: u16 = 0x0003;
/// `MethodImplAttributes.IL`: the method body is CIL.
pub const METHOD_IMPL_IL: u16 = 0x0000;

/// Column numbers of the tables this module reads by name.
mod col {
    pub const MODULE_NAME: usize = 1;
    pub const TYPEREF_RESOLUTION_SCOPE: usize = 0;
    pub const TYPEREF_NAME: usize = 1;
    pub const TYPEREF_NAMESPACE: usize = 2;
    pub const TYPEDEF_NAME: usize = 1;
    pub const TYPEDEF_NAMESPACE: usize = 2;
    pub const TYPEDEF_EXTENDS: usize = 3;
    pub const TYPEDEF_FIELD_LIST: usize = 4;
    pub const TYPEDEF_METHOD_LIST: usize = 5;
    pub const FIELD_NAME: usize = 1;
    pub const FIELD_SIGNATURE: usize = 2;
    pub const METHODPTR_METHOD: usize = 0;
    pub const METHODDEF_RVA: usize = 0;
    pub const METHODDEF_IMPL_FLAGS: usize = 1;
    pub const METHODDEF_FLAGS: usize = 2;
    pub const METHODDEF_NAME: usize = 3;
    pub const METHODDEF_SIGNATURE: usize = 4;
    pub const MEMBERREF_CLASS: usize = 0;
    pub const MEMBERREF_NAME: usize = 1;
    pub const MEMBERREF_SIGNATURE: usize = 2;
    pub const STANDALONESIG_SIGNATURE: usize = 0;
    pub const TYPESPEC_SIGNATURE: usize = 0;
    pub const MODULEREF_NAME: usize = 0;
    pub const ASSEMBLY_MAJOR: usize = 1;
    pub const ASSEMBLY_NAME: usize = 7;
    pub const ASSEMBLYREF_NAME: usize = 6;
    pub const GENERICPARAM_NUMBER: usize = 0;
    pub const GENERICPARAM_OWNER: usize = 2;
    pub const GENERICPARAM_NAME: usize = 3;
    pub const NESTEDCLASS_NESTED: usize = 0;
    pub const NESTEDCLASS_ENCLOSING: usize = 1;
    pub const METHODSPEC_METHOD: usize = 0;
    pub const METHODSPEC_INSTANTIATION: usize = 1;
}

/// The namespace and name of a TypeDef or TypeRef.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TypeName<'a> {
    /// The TypeDef (0x02) or TypeRef (0x01) token.
    pub token: u32,
    /// The namespace (empty for nested types and the global namespace).
    pub namespace: &'a str,
    /// The simple name.
    pub name: &'a str,
}

impl fmt::Display for TypeName<'_> {
    /// Writes `Namespace.Name`, or just `Name` when the namespace is empty.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.namespace.is_empty() {
            f.write_str(self.name)
        } else {
            write!(f, "{}.{}", self.namespace, self.name)
        }
    }
}

/// One MethodDef row, with its strings, signature and body bytes resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MethodDefInfo<'a> {
    /// The MethodDef token (`0x06000000 | row`).
    pub token: u32,
    /// The body's RVA; 0 for abstract, extern (P/Invoke) and runtime-implemented
    /// methods. Methods that share a body share an RVA: dedupe bodies by this field.
    pub rva: u32,
    /// `ImplFlags` (`MethodImplAttributes`).
    pub impl_flags: u16,
    /// `Flags` (`MethodAttributes`).
    pub flags: u16,
    /// The method name.
    pub name: &'a str,
    /// The `MethodDefSig` blob.
    pub signature: &'a [u8],
    /// The declaring type found through the TypeDef `MethodList` ranges (via MethodPtr
    /// when present). `None` only in malformed metadata where no range holds the method.
    pub declaring_type: Option<TypeName<'a>>,
    /// When `rva != 0`: the bytes from the RVA to the end of its section's raw data
    /// (never empty). The body's length is not known here; the body decoder decides how
    /// many of these bytes it consumes. Not IL when [`is_il`](Self::is_il) is false.
    pub body: Option<&'a [u8]>,
    /// File offset of [`body`](Self::body)'s first byte, for error reporting.
    pub body_offset: Option<usize>,
}

impl MethodDefInfo<'_> {
    /// The 1-based MethodDef row number.
    pub fn rid(&self) -> u32 {
        self.token & tables::MAX_ROWS
    }

    /// Whether `ImplFlags` says the implementation is CIL (rather than native, OPTIL
    /// or runtime-provided). Combine with `body.is_some()` to find IL bodies.
    pub fn is_il(&self) -> bool {
        self.impl_flags & METHOD_IMPL_CODE_TYPE_MASK == METHOD_IMPL_IL
    }
}

/// A parsed .NET assembly (or module) image borrowing the file's bytes.
///
/// Construction validates every header and the layout of every table; accessors then
/// never read out of bounds, and report malformed rows or heap entries as errors.
#[derive(Debug, Clone)]
pub struct Assembly<'a> {
    pe: PeFile<'a>,
    cli: CliHeader,
    md: Metadata<'a>,
}

impl<'a> Assembly<'a> {
    /// Parses the PE headers, CLI header, metadata root, heaps and table stream of
    /// `data`.
    ///
    /// # Errors
    ///
    /// [`Error::BadPe`] when any of them is malformed or truncated, when the
    /// image has no CLI header, or when a table runs past the end of the table stream.
    pub fn parse(data: &'a [u8]) -> Result<Self> {
        let pe = PeFile::parse(data)?;
        let cli = CliHeader::parse(&pe)?;
        let md = Metadata::parse(&pe, &cli)?;
        Ok(Assembly { pe, cli, md })
    }

    /// The PE container (headers, sections, RVA mapping).
    pub fn pe(&self) -> &PeFile<'a> {
        &self.pe
    }

    /// The whole file.
    pub fn data(&self) -> &'a [u8] {
        self.pe.data()
    }

    /// The CLI header.
    pub fn cli_header(&self) -> &CliHeader {
        &self.cli
    }

    /// The metadata root, heaps and tables.
    pub fn metadata(&self) -> &Metadata<'a> {
        &self.md
    }

    /// The table stream.
    pub fn tables(&self) -> &Tables<'a> {
        &self.md.tables
    }

    /// The metadata version string (e.g. `v4.0.30319`).
    pub fn version(&self) -> &'a str {
        self.md.root.version
    }

    /// Number of rows in `table`.
    pub fn row_count(&self, table: TableId) -> u32 {
        self.md.tables.rows(table)
    }

    /// Row `rid` of `table`.
    ///
    /// # Errors
    ///
    /// [`Error::BadToken`] when it does not exist.
    pub fn row(&self, table: TableId, rid: u32) -> Result<Row<'a>> {
        self.md.tables.row(table, rid)
    }

    /// The row a token names, for tokens of any known table.
    ///
    /// # Errors
    ///
    /// [`Error::BadToken`] when the token names no metadata table or a row that does not
    /// exist.
    pub fn row_of_token(&self, token: u32) -> Result<Row<'a>> {
        let table = TableId::of_token(token).ok_or(Error::BadToken {
            token,
            what: "token names no metadata table",
        })?;
        self.row(table, token & tables::MAX_ROWS)
    }

    /// The file offset of `sub` if it is a subslice of this file (for example a blob
    /// or body returned by this reader), else `None`.
    pub fn offset_of(&self, sub: &[u8]) -> Option<usize> {
        let base = self.data().as_ptr() as usize;
        let start = (sub.as_ptr() as usize).checked_sub(base)?;
        (start.checked_add(sub.len())? <= self.data().len()).then_some(start)
    }

    /// Whether this is a ReadyToRun image: its ManagedNativeHeader names a header with
    /// the `RTR` signature.
    pub fn is_ready_to_run(&self) -> bool {
        self.ready_to_run_version().is_some()
    }

    /// The (major, minor) version of the ReadyToRun header, if this is an R2R image.
    pub fn ready_to_run_version(&self) -> Option<(u16, u16)> {
        let d = self.cli.managed_native_header;
        if d.is_empty() {
            return None;
        }
        let b = self.pe.slice_rva(d.rva, 8)?;
        (u32_at(b, 0)? == metadata::READY_TO_RUN_SIGNATURE)
            .then_some((u16_at(b, 4)?, u16_at(b, 6)?))
    }

    // ---- heaps and cells ---------------------------------------------------------

    fn cell(&self, table: TableId, rid: u32, col: usize) -> Result<u32> {
        self.md.tables.cell(table, rid, col)
    }

    fn string_cell(&self, table: TableId, rid: u32, col: usize) -> Result<&'a str> {
        let index = self.cell(table, rid, col)?;
        self.md.strings.get(index)
    }

    fn blob_cell(&self, table: TableId, rid: u32, col: usize) -> Result<&'a [u8]> {
        let index = self.cell(table, rid, col)?;
        self.md.blobs.get(index)
    }

    /// Checks that `token` belongs to `table` and returns its row number (row range is
    /// checked on access).
    fn rid_in(token: u32, table: TableId, what: &'static str) -> Result<u32> {
        if token >> 24 == table as u32 {
            Ok(token & tables::MAX_ROWS)
        } else {
            Err(Error::BadToken { token, what })
        }
    }

    /// The name of the module (Module row 1).
    ///
    /// # Errors
    ///
    /// [`Error::BadToken`] when there is no Module row, [`Error::BadPe`] when the name is
    /// not a valid `#Strings` entry.
    pub fn module_name(&self) -> Result<&'a str> {
        self.string_cell(TableId::Module, 1, col::MODULE_NAME)
    }

    /// The assembly's simple name (Assembly row 1), or `None` for a module without an
    /// assembly manifest.
    ///
    /// # Errors
    ///
    /// [`Error::BadPe`] when the name is not a valid `#Strings` entry.
    pub fn assembly_name(&self) -> Result<Option<&'a str>> {
        if self.row_count(TableId::Assembly) == 0 {
            return Ok(None);
        }
        self.string_cell(TableId::Assembly, 1, col::ASSEMBLY_NAME)
            .map(Some)
    }

    /// The assembly's version (Assembly row 1): major, minor, build and revision; `None`
    /// for a module without an assembly manifest.
    ///
    /// # Errors
    ///
    /// [`Error::BadPe`] when the table cannot be read.
    pub fn assembly_version(&self) -> Result<Option<[u16; 4]>> {
        if self.row_count(TableId::Assembly) == 0 {
            return Ok(None);
        }
        let mut version = [0u16; 4];
        for (i, part) in version.iter_mut().enumerate() {
            let cell = self.cell(TableId::Assembly, 1, col::ASSEMBLY_MAJOR + i)?;
            // The four version columns are 2 bytes wide (ECMA-335 II.22.2).
            *part = u16::try_from(cell).unwrap_or(u16::MAX);
        }
        Ok(Some(version))
    }

    /// The user string an `ldstr` token (`0x70xxxxxx`) names.
    ///
    /// # Errors
    ///
    /// Errors with [`Error::BadToken`] when the token is not a user-string token or its
    /// index lies past `#US`, and [`Error::BadPe`] when the entry is malformed.
    pub fn user_string(&self, token: u32) -> Result<UserString<'a>> {
        if token >> 24 != u32::from(USER_STRING_TOKEN_TYPE) {
            return Err(Error::BadToken {
                token,
                what: "not a user-string (0x70) token",
            });
        }
        let index = token & tables::MAX_ROWS;
        if index as usize >= self.md.user_strings.data().len() {
            return Err(Error::BadToken {
                token,
                what: "user-string index past the end of #US",
            });
        }
        self.md.user_strings.get(index)
    }

    /// The LocalVarSig or StandAloneMethodSig blob of a StandAloneSig token
    /// (`0x11xxxxxx`).
    ///
    /// # Errors
    ///
    /// [`Error::BadToken`] for a token of another table or a row that does not exist,
    /// [`Error::BadPe`] for a malformed `#Blob` entry.
    pub fn standalone_sig(&self, token: u32) -> Result<&'a [u8]> {
        let rid = Self::rid_in(token, TableId::StandAloneSig, "not a StandAloneSig token")?;
        self.blob_cell(TableId::StandAloneSig, rid, col::STANDALONESIG_SIGNATURE)
    }

    /// The TypeSpec signature blob of a TypeSpec token (`0x1Bxxxxxx`).
    ///
    /// # Errors
    ///
    /// [`Error::BadToken`] for a token of another table or a row that does not exist,
    /// [`Error::BadPe`] for a malformed `#Blob` entry.
    pub fn type_spec(&self, token: u32) -> Result<&'a [u8]> {
        let rid = Self::rid_in(token, TableId::TypeSpec, "not a TypeSpec token")?;
        self.blob_cell(TableId::TypeSpec, rid, col::TYPESPEC_SIGNATURE)
    }

    /// The instantiation blob (`GenericInst` signature) of a MethodSpec token.
    ///
    /// # Errors
    ///
    /// [`Error::BadToken`] for a token of another table or a row that does not exist,
    /// [`Error::BadPe`] for a malformed `#Blob` entry.
    pub fn method_spec_instantiation(&self, token: u32) -> Result<&'a [u8]> {
        let rid = Self::rid_in(token, TableId::MethodSpec, "not a MethodSpec token")?;
        self.blob_cell(TableId::MethodSpec, rid, col::METHODSPEC_INSTANTIATION)
    }

    /// The MethodDef or MemberRef token a MethodSpec instantiates.
    ///
    /// # Errors
    ///
    /// [`Error::BadToken`] for a token of another table or a row that does not exist,
    /// [`Error::BadPe`] when the Method column is not a valid MethodDefOrRef coded index.
    pub fn method_spec_method(&self, token: u32) -> Result<u32> {
        let rid = Self::rid_in(token, TableId::MethodSpec, "not a MethodSpec token")?;
        self.coded_cell(
            TableId::MethodSpec,
            rid,
            col::METHODSPEC_METHOD,
            CodedIndex::MethodDefOrRef,
            "MethodSpec.Method is not a valid MethodDefOrRef coded index",
        )
    }

    /// The namespace and name of a TypeDef (0x02) or TypeRef (0x01) token.
    ///
    /// # Errors
    ///
    /// [`Error::BadToken`] for a token of another table or a row that does not exist,
    /// [`Error::BadPe`] for a malformed `#Strings` entry.
    pub fn type_name(&self, token: u32) -> Result<TypeName<'a>> {
        let rid = token & tables::MAX_ROWS;
        let (table, ns_col, name_col) = match TableId::of_token(token) {
            Some(TableId::TypeDef) => (TableId::TypeDef, col::TYPEDEF_NAMESPACE, col::TYPEDEF_NAME),
            Some(TableId::TypeRef) => (TableId::TypeRef, col::TYPEREF_NAMESPACE, col::TYPEREF_NAME),
            _ => {
                return Err(Error::BadToken {
                    token,
                    what: "not a TypeDef or TypeRef token",
                });
            }
        };
        Ok(TypeName {
            token,
            namespace: self.string_cell(table, rid, ns_col)?,
            name: self.string_cell(table, rid, name_col)?,
        })
    }

    /// The name of a MethodDef (0x06), MemberRef (0x0A) or Field (0x04) token; for a
    /// MethodSpec (0x2B), the name of the method it instantiates.
    ///
    /// # Errors
    ///
    /// [`Error::BadToken`] for a token of another table or a row that does not exist (or a
    /// MethodSpec that instantiates neither a MethodDef nor a MemberRef), [`Error::BadPe`]
    /// for a malformed `#Strings` entry or MethodSpec.
    pub fn member_name(&self, token: u32) -> Result<&'a str> {
        let rid = token & tables::MAX_ROWS;
        match TableId::of_token(token) {
            Some(TableId::MethodDef) => {
                self.string_cell(TableId::MethodDef, rid, col::METHODDEF_NAME)
            }
            Some(TableId::MemberRef) => {
                self.string_cell(TableId::MemberRef, rid, col::MEMBERREF_NAME)
            }
            Some(TableId::Field) => self.string_cell(TableId::Field, rid, col::FIELD_NAME),
            Some(TableId::MethodSpec) => {
                let method = self.method_spec_method(token)?;
                match TableId::of_token(method) {
                    Some(TableId::MethodDef | TableId::MemberRef) => self.member_name(method),
                    _ => Err(Error::BadToken {
                        token: method,
                        what: "MethodSpec names neither a MethodDef nor a MemberRef",
                    }),
                }
            }
            _ => Err(Error::BadToken {
                token,
                what: "not a MethodDef, MemberRef, Field or MethodSpec token",
            }),
        }
    }

    /// The TypeDef token of the type enclosing nested type `typedef` (from the
    /// NestedClass table), or `None` when it is not nested.
    ///
    /// # Errors
    ///
    /// [`Error::BadToken`] when `typedef` is not a TypeDef token or names a row that does
    /// not exist.
    pub fn enclosing_type(&self, typedef: u32) -> Result<Option<u32>> {
        let rid = Self::rid_in(typedef, TableId::TypeDef, "not a TypeDef token")?;
        self.row(TableId::TypeDef, rid)?;
        let n = self.row_count(TableId::NestedClass);
        let nested_of = |r: u32| self.cell(TableId::NestedClass, r, col::NESTEDCLASS_NESTED);
        let found = if self.md.tables.is_sorted(TableId::NestedClass) {
            // Binary search for the first row whose NestedClass >= rid.
            let (mut lo, mut hi) = (1u32, n + 1);
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                if nested_of(mid)? < rid {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            (lo <= n && nested_of(lo)? == rid).then_some(lo)
        } else {
            let mut hit = None;
            for r in 1..=n {
                if nested_of(r)? == rid {
                    hit = Some(r);
                    break;
                }
            }
            hit
        };
        match found {
            Some(r) => {
                let enclosing = self.cell(TableId::NestedClass, r, col::NESTEDCLASS_ENCLOSING)?;
                Ok(Some(TableId::TypeDef.token(enclosing)))
            }
            None => Ok(None),
        }
    }

    // ---- methods -----------------------------------------------------------------

    /// The `MethodList` value of TypeDef row `t`, or `u32::MAX` past the last type.
    fn method_list(&self, t: u32) -> u32 {
        self.cell(TableId::TypeDef, t, col::TYPEDEF_METHOD_LIST)
            .unwrap_or(u32::MAX)
    }

    /// Whether MethodDef rows are reached through the MethodPtr indirection table.
    fn has_method_ptr(&self) -> bool {
        self.row_count(TableId::MethodPtr) > 0
    }

    /// The TypeDef row whose `list` range (MethodList or FieldList) holds list
    /// position `pos`, by binary search (largest `t` with `list(t) <= pos`); 0 when
    /// there is none.
    fn type_owning_position(&self, pos: u32, list: usize) -> u32 {
        let start = |t: u32| self.cell(TableId::TypeDef, t, list).unwrap_or(u32::MAX);
        let (mut lo, mut hi) = (1u32, self.row_count(TableId::TypeDef) + 1);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if start(mid) <= pos {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo - 1
    }

    /// The TypeDef token whose `list` range holds row `rid` of a member table, reached
    /// through the indirection table `ptr` (column 0) when that has rows.
    fn member_owner(&self, rid: u32, ptr: TableId, list: usize) -> Result<Option<u32>> {
        let pos = if self.row_count(ptr) > 0 {
            let mut found = None;
            for p in 1..=self.row_count(ptr) {
                if self.cell(ptr, p, 0)? == rid {
                    found = Some(p);
                    break;
                }
            }
            match found {
                Some(p) => p,
                None => return Ok(None),
            }
        } else {
            rid
        };
        let t = self.type_owning_position(pos, list);
        Ok((t != 0).then(|| TableId::TypeDef.token(t)))
    }

    /// The TypeDef token of the type that declares MethodDef `method`, or `None` when
    /// no TypeDef's method range holds it (malformed metadata).
    ///
    /// Follows MethodPtr indirection when present (a linear scan of MethodPtr). When
    /// the MethodList column is not non-decreasing (invalid metadata) the answer is
    /// deterministic but unspecified.
    ///
    /// # Errors
    ///
    /// [`Error::BadToken`] when `method` is not a MethodDef token or names a row that does
    /// not exist.
    pub fn declaring_type(&self, method: u32) -> Result<Option<u32>> {
        let rid = Self::rid_in(method, TableId::MethodDef, "not a MethodDef token")?;
        self.row(TableId::MethodDef, rid)?;
        self.member_owner(rid, TableId::MethodPtr, col::TYPEDEF_METHOD_LIST)
    }

    /// The TypeDef token of the type that declares Field `field` (through the TypeDef
    /// `FieldList` ranges, and FieldPtr when present), or `None` when no TypeDef's field
    /// range holds it (malformed metadata). As for [`declaring_type`](Self::declaring_type),
    /// an unsorted FieldList column gives a deterministic but unspecified answer.
    ///
    /// # Errors
    ///
    /// [`Error::BadToken`] when `field` is not a Field token or names a row that does not
    /// exist.
    pub fn field_declaring_type(&self, field: u32) -> Result<Option<u32>> {
        let rid = Self::rid_in(field, TableId::Field, "not a Field token")?;
        self.row(TableId::Field, rid)?;
        self.member_owner(rid, TableId::FieldPtr, col::TYPEDEF_FIELD_LIST)
    }

    /// The parent of a MemberRef (its `Class` column) as a token: a TypeDef, TypeRef,
    /// ModuleRef, MethodDef (a vararg call site) or TypeSpec token. Its row number is 0
    /// when the column is null (invalid metadata).
    ///
    /// # Errors
    ///
    /// [`Error::BadToken`] when `member_ref` is not a MemberRef token or names a row that
    /// does not exist, [`Error::BadPe`] when the column is not a valid MemberRefParent
    /// coded index.
    pub fn member_ref_parent(&self, member_ref: u32) -> Result<u32> {
        let rid = Self::rid_in(member_ref, TableId::MemberRef, "not a MemberRef token")?;
        self.coded_cell(
            TableId::MemberRef,
            rid,
            col::MEMBERREF_CLASS,
            CodedIndex::MemberRefParent,
            "MemberRef.Class is not a valid MemberRefParent coded index",
        )
    }

    /// The type TypeDef `typedef` extends (its `Extends` column) as a TypeDef, TypeRef or
    /// TypeSpec token, or `None` when the column is null (`System.Object`, interfaces,
    /// the global `<Module>` type).
    ///
    /// # Errors
    ///
    /// [`Error::BadToken`] when `typedef` is not a TypeDef token or names a row that does
    /// not exist, [`Error::BadPe`] when the column is not a valid TypeDefOrRef coded index.
    pub fn type_extends(&self, typedef: u32) -> Result<Option<u32>> {
        let rid = Self::rid_in(typedef, TableId::TypeDef, "not a TypeDef token")?;
        let token = self.coded_cell(
            TableId::TypeDef,
            rid,
            col::TYPEDEF_EXTENDS,
            CodedIndex::TypeDefOrRef,
            "TypeDef.Extends is not a valid TypeDefOrRef coded index",
        )?;
        Ok((token & tables::MAX_ROWS != 0).then_some(token))
    }

    /// The resolution scope of a TypeRef as a token: a Module, ModuleRef, AssemblyRef
    /// or TypeRef (the enclosing type of a nested type) token. Its row number is 0 when
    /// the column is null (the type is found through the ExportedType table).
    ///
    /// # Errors
    ///
    /// [`Error::BadToken`] when `type_ref` is not a TypeRef token or names a row that does
    /// not exist, [`Error::BadPe`] when the column is not a valid ResolutionScope coded
    /// index.
    pub fn resolution_scope(&self, type_ref: u32) -> Result<u32> {
        let rid = Self::rid_in(type_ref, TableId::TypeRef, "not a TypeRef token")?;
        self.coded_cell(
            TableId::TypeRef,
            rid,
            col::TYPEREF_RESOLUTION_SCOPE,
            CodedIndex::ResolutionScope,
            "TypeRef.ResolutionScope is not a valid ResolutionScope coded index",
        )
    }

    /// The name of an AssemblyRef (`0x23`) or ModuleRef (`0x1A`) token.
    ///
    /// # Errors
    ///
    /// [`Error::BadToken`] for a token of another table or a row that does not exist,
    /// [`Error::BadPe`] for a malformed `#Strings` entry.
    pub fn scope_name(&self, token: u32) -> Result<&'a str> {
        let rid = token & tables::MAX_ROWS;
        match TableId::of_token(token) {
            Some(TableId::AssemblyRef) => {
                self.string_cell(TableId::AssemblyRef, rid, col::ASSEMBLYREF_NAME)
            }
            Some(TableId::ModuleRef) => {
                self.string_cell(TableId::ModuleRef, rid, col::MODULEREF_NAME)
            }
            _ => Err(Error::BadToken {
                token,
                what: "not an AssemblyRef or ModuleRef token",
            }),
        }
    }

    /// The GenericParam token of generic parameter `number` of `owner` (a TypeDef or
    /// MethodDef token), or `None` when the GenericParam table has no such row. Binary
    /// search when the table is marked sorted (by owner, as ECMA-335 requires), else a
    /// linear scan.
    ///
    /// # Errors
    ///
    /// [`Error::BadToken`] when `owner` is neither a TypeDef nor a MethodDef token.
    pub fn generic_param(&self, owner: u32, number: u32) -> Result<Option<u32>> {
        let table = match TableId::of_token(owner) {
            Some(t @ (TableId::TypeDef | TableId::MethodDef)) => t,
            _ => {
                return Err(Error::BadToken {
                    token: owner,
                    what: "not a TypeDef or MethodDef token",
                });
            }
        };
        let Some(coded) = CodedIndex::TypeOrMethodDef.encode(table, owner & tables::MAX_ROWS)
        else {
            return Ok(None);
        };
        let gp = TableId::GenericParam;
        let n = self.row_count(gp);
        let owner_of = |r: u32| self.cell(gp, r, col::GENERICPARAM_OWNER);
        let number_of = |r: u32| self.cell(gp, r, col::GENERICPARAM_NUMBER);
        let sorted = self.md.tables.is_sorted(gp);
        let first = if sorted {
            // The first row whose Owner >= coded.
            let (mut lo, mut hi) = (1u32, n + 1);
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                if owner_of(mid)? < coded {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            lo
        } else {
            1
        };
        for r in first..=n {
            let o = owner_of(r)?;
            if o == coded && number_of(r)? == number {
                return Ok(Some(gp.token(r)));
            }
            if sorted && o > coded {
                break;
            }
        }
        Ok(None)
    }

    /// Cell `column` of row `rid` of `table`, a coded index, decoded to a token.
    fn coded_cell(
        &self,
        table: TableId,
        rid: u32,
        column: usize,
        kind: CodedIndex,
        what: &'static str,
    ) -> Result<u32> {
        let value = self.cell(table, rid, column)?;
        kind.decode_token(value).ok_or_else(|| {
            bad_pe(
                self.md
                    .tables
                    .cell_file_offset(table, rid, column)
                    .unwrap_or(0),
                what,
            )
        })
    }

    /// The name of TypeDef row `owner`, or `None` for row 0 (no declaring type).
    fn owner_name(&self, owner: u32) -> Result<Option<TypeName<'a>>> {
        if owner == 0 {
            Ok(None)
        } else {
            self.type_name(TableId::TypeDef.token(owner)).map(Some)
        }
    }

    /// Builds the info of MethodDef row `rid` whose declaring type is `declaring_type`.
    fn method_info(
        &self,
        rid: u32,
        declaring_type: Option<TypeName<'a>>,
    ) -> Result<MethodDefInfo<'a>> {
        let t = TableId::MethodDef;
        let row = self.row(t, rid)?;
        let get = |c: usize| row.get(c).unwrap_or(0);
        let rva = get(col::METHODDEF_RVA);
        let name = self.md.strings.get(get(col::METHODDEF_NAME))?;
        let signature = self.md.blobs.get(get(col::METHODDEF_SIGNATURE))?;
        let (body, body_offset) = if rva == 0 {
            (None, None)
        } else {
            let body = self.pe.slice_at_rva(rva).ok_or_else(|| {
                bad_pe(
                    row.file_offset(),
                    "method RVA lies outside every section's raw data",
                )
            })?;
            (Some(body), self.offset_of(body))
        };
        Ok(MethodDefInfo {
            token: t.token(rid),
            rva,
            impl_flags: get(col::METHODDEF_IMPL_FLAGS) as u16,
            flags: get(col::METHODDEF_FLAGS) as u16,
            name,
            signature,
            declaring_type,
            body,
            body_offset,
        })
    }

    /// The MethodDef a token names, resolved as [`methods`](Self::methods) would yield it.
    ///
    /// # Errors
    ///
    /// [`Error::BadToken`] when `token` is not a MethodDef token or names a row that does
    /// not exist, [`Error::BadPe`] for a malformed name or signature entry, a method RVA
    /// outside every section, or a malformed declaring type name.
    pub fn method(&self, token: u32) -> Result<MethodDefInfo<'a>> {
        let owner = self
            .declaring_type(token)?
            .map_or(0, |t| t & tables::MAX_ROWS);
        self.method_info(token & tables::MAX_ROWS, self.owner_name(owner)?)
    }

    /// Every MethodDef row in row order, each resolved to a [`MethodDefInfo`].
    ///
    /// Yields exactly `row_count(MethodDef)` items; a malformed row yields an `Err` and
    /// iteration continues with the next row. Declaring types are tracked with a cursor
    /// over the TypeDef MethodList ranges (no allocation), or, when the MethodPtr
    /// indirection table is present, with an owner map built once (one allocation).
    pub fn methods(&self) -> Methods<'_, 'a> {
        let count = self.row_count(TableId::MethodDef);
        let owners = if self.has_method_ptr() {
            Owners::Map(self.method_owner_map())
        } else {
            let types = self.row_count(TableId::TypeDef);
            Owners::Cursor {
                current: 0,
                next_start: if types >= 1 {
                    self.method_list(1)
                } else {
                    u32::MAX
                },
            }
        };
        Methods {
            asm: self,
            next: 1,
            count,
            owners,
            cached_owner: None,
        }
    }

    /// Maps each MethodDef row to the TypeDef row owning it through MethodPtr ranges.
    ///
    /// Ranges are clamped to be non-decreasing so the work is linear in the table
    /// sizes whatever the (possibly malformed) MethodList values are.
    fn method_owner_map(&self) -> Vec<u32> {
        let methods = self.row_count(TableId::MethodDef);
        let ptrs = self.row_count(TableId::MethodPtr);
        let types = self.row_count(TableId::TypeDef);
        let mut owner = vec![0u32; methods as usize + 1];
        let mut prev_end = 1u32;
        for t in 1..=types {
            let start = self.method_list(t).max(prev_end);
            let end = if t < types {
                self.method_list(t + 1)
            } else {
                ptrs + 1
            }
            .min(ptrs + 1);
            for p in start..end {
                let m = self
                    .cell(TableId::MethodPtr, p, col::METHODPTR_METHOD)
                    .unwrap_or(0);
                if let Some(slot) = owner.get_mut(m as usize).filter(|_| m != 0) {
                    *slot = t;
                }
            }
            prev_end = prev_end.max(end);
        }
        owner
    }
}

/// How [`Methods`] finds each method's declaring type.
#[derive(Debug)]
enum Owners {
    /// Direct MethodList ranges: `current` is the TypeDef row whose range we are in
    /// (0 before the first), `next_start` the MethodList of the next TypeDef.
    Cursor { current: u32, next_start: u32 },
    /// MethodPtr indirection: owner TypeDef row per MethodDef row.
    Map(Vec<u32>),
}

/// Iterator over every MethodDef row; see [`Assembly::methods`].
#[derive(Debug)]
pub struct Methods<'s, 'a> {
    asm: &'s Assembly<'a>,
    next: u32,
    count: u32,
    owners: Owners,
    /// The last declaring type resolved: (TypeDef row, its name or the error).
    cached_owner: Option<(u32, Result<Option<TypeName<'a>>>)>,
}

impl<'a> Iterator for Methods<'_, 'a> {
    type Item = Result<MethodDefInfo<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.next > self.count {
            return None;
        }
        let rid = self.next;
        self.next += 1;
        let owner = match &mut self.owners {
            Owners::Cursor {
                current,
                next_start,
            } => {
                let types = self.asm.row_count(TableId::TypeDef);
                // Each step moves to the next TypeDef, so this runs at most `types`
                // times over the whole iteration.
                while rid >= *next_start && *current < types {
                    *current += 1;
                    *next_start = if *current < types {
                        self.asm.method_list(*current + 1)
                    } else {
                        u32::MAX
                    };
                }
                *current
            }
            Owners::Map(map) => map.get(rid as usize).copied().unwrap_or(0),
        };
        let name = match &self.cached_owner {
            Some((row, name)) if *row == owner => name.clone(),
            _ => {
                let name = self.asm.owner_name(owner);
                self.cached_owner = Some((owner, name.clone()));
                name
            }
        };
        Some(name.and_then(|t| self.asm.method_info(rid, t)))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = (self.count + 1 - self.next) as usize;
        (n, Some(n))
    }
}

impl ExactSizeIterator for Methods<'_, '_> {}
impl std::iter::FusedIterator for Methods<'_, '_> {}

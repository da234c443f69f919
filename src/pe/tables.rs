//! The metadata table stream (`#~`, or the uncompressed `#-`), ECMA-335 §II.22 and
//! §II.24.2.6.
//!
//! The schema of every table 0x00-0x2C is described once, as data, in [`TableId::columns`];
//! column widths, column offsets and row sizes are computed from it and from the stream
//! header (heap-size bits and row counts) by [`Tables::parse`]. There is no per-table
//! offset arithmetic anywhere else.
//!
//! [`Tables::parse`] guarantees that every table of a known kind lies entirely inside the
//! stream, so row and cell access afterwards only has to check the row number.

use super::read::{bad_pe, bytes_at, u32_at, u64_at, uint_at};
use crate::error::{Error, Result};

/// Number of table kinds this reader knows (0x00 through 0x2C).
pub const TABLE_COUNT: usize = 0x2D;
/// Largest number of columns any table has (Assembly and AssemblyRef have 9).
pub const MAX_COLUMNS: usize = 9;
/// Largest row number a metadata token can express (24 bits).
pub const MAX_ROWS: u32 = 0x00FF_FFFF;

/// `HeapSizes` bit: `#Strings` indexes are 4 bytes wide.
pub const HEAP_STRINGS_WIDE: u8 = 0x01;
/// `HeapSizes` bit: `#GUID` indexes are 4 bytes wide.
pub const HEAP_GUID_WIDE: u8 = 0x02;
/// `HeapSizes` bit: `#Blob` indexes are 4 bytes wide.
pub const HEAP_BLOB_WIDE: u8 = 0x04;
/// `HeapSizes` bit: the stream holds only an edit-and-continue delta (no layout effect).
pub const HEAP_DELTA_ONLY: u8 = 0x20;
/// `HeapSizes` bit: a 4-byte "extra data" field follows the row counts.
pub const HEAP_EXTRA_DATA: u8 = 0x40;
/// `HeapSizes` bit: the stream may contain deleted (`_Deleted`) rows (no layout effect).
pub const HEAP_HAS_DELETE: u8 = 0x80;

macro_rules! tables {
    ($($(#[$doc:meta])* $name:ident = $id:literal,)*) => {
        /// A metadata table kind (the high byte of a token).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(u8)]
        pub enum TableId {
            $($(#[$doc])* $name = $id,)*
        }

        impl TableId {
            /// Every table kind, in table-number order (index = table number).
            pub const ALL: [TableId; TABLE_COUNT] = [$(TableId::$name,)*];

            /// The ECMA-335 name of the table.
            pub const fn name(self) -> &'static str {
                match self {
                    $(TableId::$name => stringify!($name),)*
                }
            }
        }
    };
}

tables! {
    /// 0x00 Module.
    Module = 0x00,
    /// 0x01 TypeRef.
    TypeRef = 0x01,
    /// 0x02 TypeDef.
    TypeDef = 0x02,
    /// 0x03 FieldPtr (uncompressed streams only).
    FieldPtr = 0x03,
    /// 0x04 Field.
    Field = 0x04,
    /// 0x05 MethodPtr (uncompressed streams only).
    MethodPtr = 0x05,
    /// 0x06 MethodDef.
    MethodDef = 0x06,
    /// 0x07 ParamPtr (uncompressed streams only).
    ParamPtr = 0x07,
    /// 0x08 Param.
    Param = 0x08,
    /// 0x09 InterfaceImpl.
    InterfaceImpl = 0x09,
    /// 0x0A MemberRef.
    MemberRef = 0x0A,
    /// 0x0B Constant.
    Constant = 0x0B,
    /// 0x0C CustomAttribute.
    CustomAttribute = 0x0C,
    /// 0x0D FieldMarshal.
    FieldMarshal = 0x0D,
    /// 0x0E DeclSecurity.
    DeclSecurity = 0x0E,
    /// 0x0F ClassLayout.
    ClassLayout = 0x0F,
    /// 0x10 FieldLayout.
    FieldLayout = 0x10,
    /// 0x11 StandAloneSig.
    StandAloneSig = 0x11,
    /// 0x12 EventMap.
    EventMap = 0x12,
    /// 0x13 EventPtr (uncompressed streams only).
    EventPtr = 0x13,
    /// 0x14 Event.
    Event = 0x14,
    /// 0x15 PropertyMap.
    PropertyMap = 0x15,
    /// 0x16 PropertyPtr (uncompressed streams only).
    PropertyPtr = 0x16,
    /// 0x17 Property.
    Property = 0x17,
    /// 0x18 MethodSemantics.
    MethodSemantics = 0x18,
    /// 0x19 MethodImpl.
    MethodImpl = 0x19,
    /// 0x1A ModuleRef.
    ModuleRef = 0x1A,
    /// 0x1B TypeSpec.
    TypeSpec = 0x1B,
    /// 0x1C ImplMap.
    ImplMap = 0x1C,
    /// 0x1D FieldRVA.
    FieldRva = 0x1D,
    /// 0x1E EncLog.
    EncLog = 0x1E,
    /// 0x1F EncMap.
    EncMap = 0x1F,
    /// 0x20 Assembly.
    Assembly = 0x20,
    /// 0x21 AssemblyProcessor.
    AssemblyProcessor = 0x21,
    /// 0x22 AssemblyOS.
    AssemblyOs = 0x22,
    /// 0x23 AssemblyRef.
    AssemblyRef = 0x23,
    /// 0x24 AssemblyRefProcessor.
    AssemblyRefProcessor = 0x24,
    /// 0x25 AssemblyRefOS.
    AssemblyRefOs = 0x25,
    /// 0x26 File.
    File = 0x26,
    /// 0x27 ExportedType.
    ExportedType = 0x27,
    /// 0x28 ManifestResource.
    ManifestResource = 0x28,
    /// 0x29 NestedClass.
    NestedClass = 0x29,
    /// 0x2A GenericParam.
    GenericParam = 0x2A,
    /// 0x2B MethodSpec.
    MethodSpec = 0x2B,
    /// 0x2C GenericParamConstraint.
    GenericParamConstraint = 0x2C,
}

impl TableId {
    /// The table with number `n`, or `None` for numbers this reader does not know.
    pub const fn from_u8(n: u8) -> Option<TableId> {
        if (n as usize) < TABLE_COUNT {
            Some(Self::ALL[n as usize])
        } else {
            None
        }
    }

    /// The table named by a token's high byte, if it is a table this reader knows.
    pub const fn of_token(token: u32) -> Option<TableId> {
        Self::from_u8((token >> 24) as u8)
    }

    /// The token of row `rid` (1-based) of this table. Only the low 24 bits of `rid`
    /// are kept.
    pub const fn token(self, rid: u32) -> u32 {
        ((self as u32) << 24) | (rid & MAX_ROWS)
    }

    /// The table's columns, in on-disk order (ECMA-335 §II.22).
    pub const fn columns(self) -> &'static [Column] {
        SCHEMA[self as usize]
    }
}

/// Coded index kinds (ECMA-335 §II.24.2.6): a tag in the low bits picks the table, the
/// remaining bits hold the row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CodedIndex {
    /// TypeDef, TypeRef, TypeSpec.
    TypeDefOrRef,
    /// Field, Param, Property.
    HasConstant,
    /// The 22 tables that can carry custom attributes.
    HasCustomAttribute,
    /// Field, Param.
    HasFieldMarshal,
    /// TypeDef, MethodDef, Assembly.
    HasDeclSecurity,
    /// TypeDef, TypeRef, ModuleRef, MethodDef, TypeSpec.
    MemberRefParent,
    /// Event, Property.
    HasSemantics,
    /// MethodDef, MemberRef.
    MethodDefOrRef,
    /// Field, MethodDef.
    MemberForwarded,
    /// File, AssemblyRef, ExportedType.
    Implementation,
    /// (unused), (unused), MethodDef, MemberRef, (unused).
    CustomAttributeType,
    /// Module, ModuleRef, AssemblyRef, TypeRef.
    ResolutionScope,
    /// TypeDef, MethodDef.
    TypeOrMethodDef,
}

use TableId as T;

impl CodedIndex {
    /// The tables selected by each tag value, in tag order; `None` marks a tag that is
    /// reserved (CustomAttributeType has unused tags 0, 1 and 4).
    pub const fn tables(self) -> &'static [Option<TableId>] {
        match self {
            CodedIndex::TypeDefOrRef => &[Some(T::TypeDef), Some(T::TypeRef), Some(T::TypeSpec)],
            CodedIndex::HasConstant => &[Some(T::Field), Some(T::Param), Some(T::Property)],
            CodedIndex::HasCustomAttribute => &[
                Some(T::MethodDef),
                Some(T::Field),
                Some(T::TypeRef),
                Some(T::TypeDef),
                Some(T::Param),
                Some(T::InterfaceImpl),
                Some(T::MemberRef),
                Some(T::Module),
                Some(T::DeclSecurity),
                Some(T::Property),
                Some(T::Event),
                Some(T::StandAloneSig),
                Some(T::ModuleRef),
                Some(T::TypeSpec),
                Some(T::Assembly),
                Some(T::AssemblyRef),
                Some(T::File),
                Some(T::ExportedType),
                Some(T::ManifestResource),
                Some(T::GenericParam),
                Some(T::GenericParamConstraint),
                Some(T::MethodSpec),
            ],
            CodedIndex::HasFieldMarshal => &[Some(T::Field), Some(T::Param)],
            CodedIndex::HasDeclSecurity => {
                &[Some(T::TypeDef), Some(T::MethodDef), Some(T::Assembly)]
            }
            CodedIndex::MemberRefParent => &[
                Some(T::TypeDef),
                Some(T::TypeRef),
                Some(T::ModuleRef),
                Some(T::MethodDef),
                Some(T::TypeSpec),
            ],
            CodedIndex::HasSemantics => &[Some(T::Event), Some(T::Property)],
            CodedIndex::MethodDefOrRef => &[Some(T::MethodDef), Some(T::MemberRef)],
            CodedIndex::MemberForwarded => &[Some(T::Field), Some(T::MethodDef)],
            CodedIndex::Implementation => {
                &[Some(T::File), Some(T::AssemblyRef), Some(T::ExportedType)]
            }
            CodedIndex::CustomAttributeType => {
                &[None, None, Some(T::MethodDef), Some(T::MemberRef), None]
            }
            CodedIndex::ResolutionScope => &[
                Some(T::Module),
                Some(T::ModuleRef),
                Some(T::AssemblyRef),
                Some(T::TypeRef),
            ],
            CodedIndex::TypeOrMethodDef => &[Some(T::TypeDef), Some(T::MethodDef)],
        }
    }

    /// Number of tag bits: the fewest bits that can number every entry of
    /// [`tables`](Self::tables).
    pub const fn tag_bits(self) -> u32 {
        let n = self.tables().len() as u32;
        u32::BITS - (n - 1).leading_zeros()
    }

    /// Splits a coded index value into its table and row (row 0 is the null reference).
    ///
    /// `None` when the tag names a reserved slot or no slot at all.
    pub const fn decode(self, value: u32) -> Option<(TableId, u32)> {
        let bits = self.tag_bits();
        let tag = (value & ((1 << bits) - 1)) as usize;
        let tables = self.tables();
        if tag >= tables.len() {
            return None;
        }
        match tables[tag] {
            Some(t) => Some((t, value >> bits)),
            None => None,
        }
    }

    /// Decodes `value` straight to a token (`table << 24 | row`); `None` as for
    /// [`decode`](Self::decode) or when the row does not fit 24 bits.
    pub const fn decode_token(self, value: u32) -> Option<u32> {
        match self.decode(value) {
            Some((t, rid)) if rid <= MAX_ROWS => Some(t.token(rid)),
            _ => None,
        }
    }

    /// Encodes a reference to row `rid` of `table`; `None` when `table` is not one of
    /// this coded index's tables or `rid` does not fit beside the tag.
    pub fn encode(self, table: TableId, rid: u32) -> Option<u32> {
        let bits = self.tag_bits();
        let tag = self.tables().iter().position(|t| *t == Some(table))? as u32;
        if rid > (u32::MAX >> bits) {
            return None;
        }
        Some((rid << bits) | tag)
    }
}

/// What a column holds, which decides its width.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ColumnKind {
    /// A 1-byte constant.
    U8,
    /// A 2-byte constant.
    U16,
    /// A 4-byte constant.
    U32,
    /// An index into `#Strings` (2 or 4 bytes).
    String,
    /// A 1-based index into `#GUID` (2 or 4 bytes).
    Guid,
    /// An index into `#Blob` (2 or 4 bytes).
    Blob,
    /// A 1-based row index into one table (2 or 4 bytes).
    Index(TableId),
    /// A coded index (2 or 4 bytes).
    Coded(CodedIndex),
}

/// One column of a table schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Column {
    /// The ECMA-335 column name.
    pub name: &'static str,
    /// What the column holds.
    pub kind: ColumnKind,
}

const fn c(name: &'static str, kind: ColumnKind) -> Column {
    Column { name, kind }
}

use CodedIndex as CI;
use ColumnKind as K;

/// The schema of every table, indexed by table number.
static SCHEMA: [&[Column]; TABLE_COUNT] = [
    // 0x00 Module
    &[
        c("Generation", K::U16),
        c("Name", K::String),
        c("Mvid", K::Guid),
        c("EncId", K::Guid),
        c("EncBaseId", K::Guid),
    ],
    // 0x01 TypeRef
    &[
        c("ResolutionScope", K::Coded(CI::ResolutionScope)),
        c("TypeName", K::String),
        c("TypeNamespace", K::String),
    ],
    // 0x02 TypeDef
    &[
        c("Flags", K::U32),
        c("TypeName", K::String),
        c("TypeNamespace", K::String),
        c("Extends", K::Coded(CI::TypeDefOrRef)),
        c("FieldList", K::Index(T::Field)),
        c("MethodList", K::Index(T::MethodDef)),
    ],
    // 0x03 FieldPtr
    &[c("Field", K::Index(T::Field))],
    // 0x04 Field
    &[
        c("Flags", K::U16),
        c("Name", K::String),
        c("Signature", K::Blob),
    ],
    // 0x05 MethodPtr
    &[c("Method", K::Index(T::MethodDef))],
    // 0x06 MethodDef
    &[
        c("RVA", K::U32),
        c("ImplFlags", K::U16),
        c("Flags", K::U16),
        c("Name", K::String),
        c("Signature", K::Blob),
        c("ParamList", K::Index(T::Param)),
    ],
    // 0x07 ParamPtr
    &[c("Param", K::Index(T::Param))],
    // 0x08 Param
    &[
        c("Flags", K::U16),
        c("Sequence", K::U16),
        c("Name", K::String),
    ],
    // 0x09 InterfaceImpl
    &[
        c("Class", K::Index(T::TypeDef)),
        c("Interface", K::Coded(CI::TypeDefOrRef)),
    ],
    // 0x0A MemberRef
    &[
        c("Class", K::Coded(CI::MemberRefParent)),
        c("Name", K::String),
        c("Signature", K::Blob),
    ],
    // 0x0B Constant
    &[
        c("Type", K::U8),
        c("Padding", K::U8),
        c("Parent", K::Coded(CI::HasConstant)),
        c("Value", K::Blob),
    ],
    // 0x0C CustomAttribute
    &[
        c("Parent", K::Coded(CI::HasCustomAttribute)),
        c("Type", K::Coded(CI::CustomAttributeType)),
        c("Value", K::Blob),
    ],
    // 0x0D FieldMarshal
    &[
        c("Parent", K::Coded(CI::HasFieldMarshal)),
        c("NativeType", K::Blob),
    ],
    // 0x0E DeclSecurity
    &[
        c("Action", K::U16),
        c("Parent", K::Coded(CI::HasDeclSecurity)),
        c("PermissionSet", K::Blob),
    ],
    // 0x0F ClassLayout
    &[
        c("PackingSize", K::U16),
        c("ClassSize", K::U32),
        c("Parent", K::Index(T::TypeDef)),
    ],
    // 0x10 FieldLayout
    &[c("Offset", K::U32), c("Field", K::Index(T::Field))],
    // 0x11 StandAloneSig
    &[c("Signature", K::Blob)],
    // 0x12 EventMap
    &[
        c("Parent", K::Index(T::TypeDef)),
        c("EventList", K::Index(T::Event)),
    ],
    // 0x13 EventPtr
    &[c("Event", K::Index(T::Event))],
    // 0x14 Event
    &[
        c("EventFlags", K::U16),
        c("Name", K::String),
        c("EventType", K::Coded(CI::TypeDefOrRef)),
    ],
    // 0x15 PropertyMap
    &[
        c("Parent", K::Index(T::TypeDef)),
        c("PropertyList", K::Index(T::Property)),
    ],
    // 0x16 PropertyPtr
    &[c("Property", K::Index(T::Property))],
    // 0x17 Property
    &[c("Flags", K::U16), c("Name", K::String), c("Type", K::Blob)],
    // 0x18 MethodSemantics
    &[
        c("Semantics", K::U16),
        c("Method", K::Index(T::MethodDef)),
        c("Association", K::Coded(CI::HasSemantics)),
    ],
    // 0x19 MethodImpl
    &[
        c("Class", K::Index(T::TypeDef)),
        c("MethodBody", K::Coded(CI::MethodDefOrRef)),
        c("MethodDeclaration", K::Coded(CI::MethodDefOrRef)),
    ],
    // 0x1A ModuleRef
    &[c("Name", K::String)],
    // 0x1B TypeSpec
    &[c("Signature", K::Blob)],
    // 0x1C ImplMap
    &[
        c("MappingFlags", K::U16),
        c("MemberForwarded", K::Coded(CI::MemberForwarded)),
        c("ImportName", K::String),
        c("ImportScope", K::Index(T::ModuleRef)),
    ],
    // 0x1D FieldRVA
    &[c("RVA", K::U32), c("Field", K::Index(T::Field))],
    // 0x1E EncLog
    &[c("Token", K::U32), c("FuncCode", K::U32)],
    // 0x1F EncMap
    &[c("Token", K::U32)],
    // 0x20 Assembly
    &[
        c("HashAlgId", K::U32),
        c("MajorVersion", K::U16),
        c("MinorVersion", K::U16),
        c("BuildNumber", K::U16),
        c("RevisionNumber", K::U16),
        c("Flags", K::U32),
        c("PublicKey", K::Blob),
        c("Name", K::String),
        c("Culture", K::String),
    ],
    // 0x21 AssemblyProcessor
    &[c("Processor", K::U32)],
    // 0x22 AssemblyOS
    &[
        c("OSPlatformId", K::U32),
        c("OSMajorVersion", K::U32),
        c("OSMinorVersion", K::U32),
    ],
    // 0x23 AssemblyRef
    &[
        c("MajorVersion", K::U16),
        c("MinorVersion", K::U16),
        c("BuildNumber", K::U16),
        c("RevisionNumber", K::U16),
        c("Flags", K::U32),
        c("PublicKeyOrToken", K::Blob),
        c("Name", K::String),
        c("Culture", K::String),
        c("HashValue", K::Blob),
    ],
    // 0x24 AssemblyRefProcessor
    &[
        c("Processor", K::U32),
        c("AssemblyRef", K::Index(T::AssemblyRef)),
    ],
    // 0x25 AssemblyRefOS
    &[
        c("OSPlatformId", K::U32),
        c("OSMajorVersion", K::U32),
        c("OSMinorVersion", K::U32),
        c("AssemblyRef", K::Index(T::AssemblyRef)),
    ],
    // 0x26 File
    &[
        c("Flags", K::U32),
        c("Name", K::String),
        c("HashValue", K::Blob),
    ],
    // 0x27 ExportedType
    &[
        c("Flags", K::U32),
        c("TypeDefId", K::U32),
        c("TypeName", K::String),
        c("TypeNamespace", K::String),
        c("Implementation", K::Coded(CI::Implementation)),
    ],
    // 0x28 ManifestResource
    &[
        c("Offset", K::U32),
        c("Flags", K::U32),
        c("Name", K::String),
        c("Implementation", K::Coded(CI::Implementation)),
    ],
    // 0x29 NestedClass
    &[
        c("NestedClass", K::Index(T::TypeDef)),
        c("EnclosingClass", K::Index(T::TypeDef)),
    ],
    // 0x2A GenericParam
    &[
        c("Number", K::U16),
        c("Flags", K::U16),
        c("Owner", K::Coded(CI::TypeOrMethodDef)),
        c("Name", K::String),
    ],
    // 0x2B MethodSpec
    &[
        c("Method", K::Coded(CI::MethodDefOrRef)),
        c("Instantiation", K::Blob),
    ],
    // 0x2C GenericParamConstraint
    &[
        c("Owner", K::Index(T::GenericParam)),
        c("Constraint", K::Coded(CI::TypeDefOrRef)),
    ],
];

/// Where one table lives in the stream and how its rows are laid out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TableLayout {
    rows: u32,
    row_size: u8,
    column_count: u8,
    offset: usize,
    column_offsets: [u8; MAX_COLUMNS],
    column_sizes: [u8; MAX_COLUMNS],
}

impl TableLayout {
    /// Number of rows.
    pub fn rows(&self) -> u32 {
        self.rows
    }

    /// Bytes per row.
    pub fn row_size(&self) -> usize {
        usize::from(self.row_size)
    }

    /// Offset of the table's first row from the start of the table stream.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// Number of columns.
    pub fn column_count(&self) -> usize {
        usize::from(self.column_count)
    }

    /// Offset of column `col` within a row, or `None` past the last column.
    pub fn column_offset(&self, col: usize) -> Option<usize> {
        (col < self.column_count()).then(|| usize::from(self.column_offsets[col]))
    }

    /// Width in bytes (1, 2 or 4) of column `col`, or `None` past the last column.
    pub fn column_size(&self, col: usize) -> Option<usize> {
        (col < self.column_count()).then(|| usize::from(self.column_sizes[col]))
    }
}

/// The parsed table stream header and the layout of every known table.
///
/// Guarantees: every known table's rows lie inside the stream; no table has more than
/// [`MAX_ROWS`] rows.
#[derive(Debug, Clone)]
pub struct Tables<'a> {
    data: &'a [u8],
    file_offset: usize,
    major_version: u8,
    minor_version: u8,
    heap_sizes: u8,
    valid: u64,
    sorted: u64,
    extra_data: Option<u32>,
    layouts: [TableLayout; TABLE_COUNT],
    unknown_tables: u64,
}

impl<'a> Tables<'a> {
    /// Parses the table stream header and lays out every table.
    ///
    /// `data` is the whole stream and `file_offset` its position in the file (used only
    /// for error offsets). Tables numbered above 0x2C (for example portable-PDB tables)
    /// are tolerated: their row counts are read and skipped, and since they follow every
    /// known table they do not move them; they cannot be accessed.
    ///
    /// # Errors
    ///
    /// [`Error::BadPe`] when the header or row counts are truncated, a row count exceeds
    /// [`MAX_ROWS`], or the tables run past the end of the stream.
    pub fn parse(data: &'a [u8], file_offset: usize) -> Result<Self> {
        let at = |o: usize| file_offset.saturating_add(o);
        let hdr =
            bytes_at(data, 0, 24).ok_or_else(|| bad_pe(at(0), "truncated table stream header"))?;
        let major_version = hdr[4];
        let minor_version = hdr[5];
        let heap_sizes = hdr[6];
        let valid = u64_at(hdr, 8).unwrap_or(0);
        let sorted = u64_at(hdr, 16).unwrap_or(0);

        let mut rows = [0u32; TABLE_COUNT];
        let mut pos = 24usize;
        for bit in 0..64u32 {
            if valid & (1u64 << bit) == 0 {
                continue;
            }
            let n =
                u32_at(data, pos).ok_or_else(|| bad_pe(at(pos), "truncated table row counts"))?;
            if n > MAX_ROWS {
                return Err(bad_pe(at(pos), "table row count exceeds 2^24 - 1"));
            }
            if let Some(slot) = rows.get_mut(bit as usize) {
                *slot = n;
            }
            pos += 4;
        }
        let extra_data = if heap_sizes & HEAP_EXTRA_DATA != 0 {
            let v =
                u32_at(data, pos).ok_or_else(|| bad_pe(at(pos), "truncated extra data field"))?;
            pos += 4;
            Some(v)
        } else {
            None
        };

        let string_size = if heap_sizes & HEAP_STRINGS_WIDE != 0 {
            4
        } else {
            2
        };
        let guid_size = if heap_sizes & HEAP_GUID_WIDE != 0 {
            4
        } else {
            2
        };
        let blob_size = if heap_sizes & HEAP_BLOB_WIDE != 0 {
            4
        } else {
            2
        };
        let index_size = |t: TableId| if rows[t as usize] < 1 << 16 { 2u8 } else { 4 };
        let coded_size = |ci: CodedIndex| {
            let limit = 1u32 << (16 - ci.tag_bits());
            let max = ci
                .tables()
                .iter()
                .flatten()
                .map(|t| rows[*t as usize])
                .max()
                .unwrap_or(0);
            if max < limit { 2u8 } else { 4 }
        };

        let mut layouts = [TableLayout::default(); TABLE_COUNT];
        let mut offset = pos;
        for (id, layout) in TableId::ALL.iter().zip(layouts.iter_mut()) {
            let mut row_size = 0u8;
            let columns = id.columns();
            for (i, col) in columns.iter().enumerate() {
                let size = match col.kind {
                    ColumnKind::U8 => 1,
                    ColumnKind::U16 => 2,
                    ColumnKind::U32 => 4,
                    ColumnKind::String => string_size,
                    ColumnKind::Guid => guid_size,
                    ColumnKind::Blob => blob_size,
                    ColumnKind::Index(t) => index_size(t),
                    ColumnKind::Coded(ci) => coded_size(ci),
                };
                layout.column_offsets[i] = row_size;
                layout.column_sizes[i] = size;
                row_size += size;
            }
            layout.rows = rows[*id as usize];
            layout.row_size = row_size;
            layout.column_count = columns.len() as u8;
            layout.offset = offset;
            // rows <= 2^24 - 1 and row_size <= 36, so this cannot overflow a u64.
            let bytes = u64::from(layout.rows) * u64::from(row_size);
            let end = offset as u64 + bytes;
            if end > data.len() as u64 {
                return Err(bad_pe(
                    at(offset),
                    "metadata table runs past the end of the table stream",
                ));
            }
            offset = end as usize;
        }

        Ok(Tables {
            data,
            file_offset,
            major_version,
            minor_version,
            heap_sizes,
            valid,
            sorted,
            extra_data,
            layouts,
            unknown_tables: valid & !((1u64 << TABLE_COUNT) - 1),
        })
    }

    /// The whole table stream.
    pub fn data(&self) -> &'a [u8] {
        self.data
    }

    /// File offset of the table stream.
    pub fn file_offset(&self) -> usize {
        self.file_offset
    }

    /// `MajorVersion` of the table schema (2 for all current files).
    pub fn major_version(&self) -> u8 {
        self.major_version
    }

    /// `MinorVersion` of the table schema (0 for all current files).
    pub fn minor_version(&self) -> u8 {
        self.minor_version
    }

    /// The raw `HeapSizes` byte (see the `HEAP_*` constants).
    pub fn heap_sizes(&self) -> u8 {
        self.heap_sizes
    }

    /// The `Valid` mask: bit n set when table n is present.
    pub fn valid_mask(&self) -> u64 {
        self.valid
    }

    /// The `Sorted` mask: bit n set when table n is sorted by its key.
    pub fn sorted_mask(&self) -> u64 {
        self.sorted
    }

    /// Bits of [`valid_mask`](Self::valid_mask) naming tables above 0x2C, which this
    /// reader skipped.
    pub fn unknown_tables_mask(&self) -> u64 {
        self.unknown_tables
    }

    /// The 4-byte field present after the row counts when `HeapSizes` has bit 0x40.
    pub fn extra_data(&self) -> Option<u32> {
        self.extra_data
    }

    /// Whether the `Sorted` mask claims `table` is sorted.
    pub fn is_sorted(&self, table: TableId) -> bool {
        self.sorted & (1u64 << table as u32) != 0
    }

    /// Number of rows in `table` (0 when absent).
    pub fn rows(&self, table: TableId) -> u32 {
        self.layouts[table as usize].rows
    }

    /// The layout of `table`.
    pub fn layout(&self, table: TableId) -> &TableLayout {
        &self.layouts[table as usize]
    }

    /// Byte offset in the stream of row `rid` of `table`; errors unless
    /// `1 <= rid <= rows(table)`.
    fn row_offset(&self, table: TableId, rid: u32) -> Result<usize> {
        let l = &self.layouts[table as usize];
        if rid == 0 || rid > l.rows {
            return Err(Error::BadToken {
                token: table.token(rid),
                what: "row number out of range for its table",
            });
        }
        Ok(l.offset + (rid as usize - 1) * l.row_size())
    }

    /// Row `rid` (1-based) of `table`.
    ///
    /// # Errors
    ///
    /// [`Error::BadToken`] unless `1 <= rid <= rows(table)`.
    pub fn row(&self, table: TableId, rid: u32) -> Result<Row<'a>> {
        let off = self.row_offset(table, rid)?;
        let layout = self.layouts[table as usize];
        let bytes = bytes_at(self.data, off, layout.row_size()).ok_or_else(|| {
            bad_pe(
                self.file_offset.saturating_add(off),
                "row past end of stream",
            )
        })?;
        Ok(Row {
            table,
            rid,
            bytes,
            file_offset: self.file_offset + off,
            layout,
        })
    }

    /// The value of column `col` of row `rid` of `table`, zero-extended.
    ///
    /// # Errors
    ///
    /// [`Error::BadToken`] when the row does not exist or the table has no column `col`.
    pub fn cell(&self, table: TableId, rid: u32, col: usize) -> Result<u32> {
        let off = self.row_offset(table, rid)?;
        let l = &self.layouts[table as usize];
        let (Some(co), Some(cs)) = (l.column_offset(col), l.column_size(col)) else {
            return Err(Error::BadToken {
                token: table.token(rid),
                what: "column index out of range for its table",
            });
        };
        uint_at(self.data, off + co, cs as u8).ok_or_else(|| {
            bad_pe(
                self.file_offset.saturating_add(off),
                "row past end of stream",
            )
        })
    }

    /// File offset of column `col` of row `rid` of `table`, if both exist.
    pub fn cell_file_offset(&self, table: TableId, rid: u32, col: usize) -> Option<usize> {
        let off = self.row_offset(table, rid).ok()?;
        Some(self.file_offset + off + self.layouts[table as usize].column_offset(col)?)
    }
}

/// One row of a table: its bytes and the layout to read them.
#[derive(Debug, Clone, Copy)]
pub struct Row<'a> {
    table: TableId,
    rid: u32,
    bytes: &'a [u8],
    file_offset: usize,
    layout: TableLayout,
}

impl<'a> Row<'a> {
    /// The row's table.
    pub fn table(&self) -> TableId {
        self.table
    }

    /// The 1-based row number.
    pub fn rid(&self) -> u32 {
        self.rid
    }

    /// The row's token (`table << 24 | rid`).
    pub fn token(&self) -> u32 {
        self.table.token(self.rid)
    }

    /// The row's raw bytes (exactly one row).
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// File offset of the row's first byte.
    pub fn file_offset(&self) -> usize {
        self.file_offset
    }

    /// Number of columns.
    pub fn column_count(&self) -> usize {
        self.layout.column_count()
    }

    /// The schema of column `col`, or `None` past the last column.
    pub fn column(&self, col: usize) -> Option<&'static Column> {
        self.table.columns().get(col)
    }

    /// The value of column `col`, zero-extended; `None` past the last column.
    pub fn get(&self, col: usize) -> Option<u32> {
        let off = self.layout.column_offset(col)?;
        let size = self.layout.column_size(col)?;
        uint_at(self.bytes, off, size as u8)
    }

    /// Column `col` decoded as a coded index, when the column is one: `(table, row)`,
    /// row 0 meaning null. `None` past the last column, when the column is not a coded
    /// index, or when its tag is reserved.
    pub fn coded(&self, col: usize) -> Option<(TableId, u32)> {
        match self.column(col)?.kind {
            ColumnKind::Coded(ci) => ci.decode(self.get(col)?),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_ids_match_their_numbers() {
        for (i, t) in TableId::ALL.iter().enumerate() {
            assert_eq!(*t as usize, i);
            assert_eq!(TableId::from_u8(i as u8), Some(*t));
            assert!(!t.columns().is_empty() && t.columns().len() <= MAX_COLUMNS);
        }
        assert_eq!(TableId::from_u8(0x2D), None);
        assert_eq!(TableId::MethodDef.token(5), 0x0600_0005);
        assert_eq!(TableId::of_token(0x2B00_0001), Some(TableId::MethodSpec));
    }

    #[test]
    fn coded_index_tag_bits() {
        let all = [
            (CI::TypeDefOrRef, 2, 3),
            (CI::HasConstant, 2, 3),
            (CI::HasCustomAttribute, 5, 22),
            (CI::HasFieldMarshal, 1, 2),
            (CI::HasDeclSecurity, 2, 3),
            (CI::MemberRefParent, 3, 5),
            (CI::HasSemantics, 1, 2),
            (CI::MethodDefOrRef, 1, 2),
            (CI::MemberForwarded, 1, 2),
            (CI::Implementation, 2, 3),
            (CI::CustomAttributeType, 3, 5),
            (CI::ResolutionScope, 2, 4),
            (CI::TypeOrMethodDef, 1, 2),
        ];
        for (ci, bits, n) in all {
            assert_eq!(ci.tag_bits(), bits, "{ci:?}");
            assert_eq!(ci.tables().len(), n, "{ci:?}");
        }
        assert_eq!(
            CI::MethodDefOrRef.decode(0x0B),
            Some((TableId::MemberRef, 5))
        );
        assert_eq!(CI::CustomAttributeType.decode(0x01), None);
        assert_eq!(CI::CustomAttributeType.decode(0x07), None);
        assert_eq!(CI::TypeDefOrRef.decode(0x03), None);
        assert_eq!(
            CI::HasCustomAttribute.encode(TableId::MethodSpec, 2),
            Some((2 << 5) | 21)
        );
        assert_eq!(CI::TypeDefOrRef.decode_token(9), Some(0x0100_0002));
    }

    /// Builds a table stream with the given heap bits and row counts and zeroed rows.
    fn stream(heap_sizes: u8, rows: &[(TableId, u32)], extra: usize) -> Vec<u8> {
        let mut valid = 0u64;
        for (t, _) in rows {
            valid |= 1 << *t as u32;
        }
        let mut v = vec![0, 0, 0, 0, 2, 0, heap_sizes, 1];
        v.extend_from_slice(&valid.to_le_bytes());
        v.extend_from_slice(&0u64.to_le_bytes());
        let mut sorted: Vec<_> = rows.to_vec();
        sorted.sort();
        for (_, n) in &sorted {
            v.extend_from_slice(&n.to_le_bytes());
        }
        v.resize(v.len() + extra, 0xAB);
        v
    }

    #[test]
    fn narrow_and_wide_row_sizes() {
        let s = stream(0, &[(TableId::Module, 1), (TableId::MethodDef, 3)], 1000);
        let t = Tables::parse(&s, 0).unwrap();
        assert_eq!(t.layout(TableId::Module).row_size(), 10);
        assert_eq!(t.layout(TableId::MethodDef).row_size(), 14);
        assert_eq!(t.layout(TableId::TypeDef).row_size(), 14);
        assert_eq!(t.layout(TableId::CustomAttribute).row_size(), 6);
        assert_eq!(t.layout(TableId::Assembly).row_size(), 22);
        assert_eq!(t.layout(TableId::AssemblyRef).row_size(), 20);
        assert_eq!(t.layout(TableId::Constant).row_size(), 6);
        assert_eq!(t.layout(TableId::MethodDef).offset(), 24 + 8 + 10);
        assert_eq!(t.row(TableId::MethodDef, 1).unwrap().bytes()[0], 0xAB);

        let s = stream(0x07, &[(TableId::Module, 1)], 1000);
        let t = Tables::parse(&s, 0).unwrap();
        assert_eq!(t.layout(TableId::Module).row_size(), 2 + 4 * 4);
        assert_eq!(
            t.layout(TableId::MethodDef).row_size(),
            4 + 2 + 2 + 4 + 4 + 2
        );
    }

    #[test]
    fn coded_index_width_threshold() {
        // HasCustomAttribute has 5 tag bits: 2 bytes up to 2^11 - 1 rows.
        let need = |rows: u32| {
            let s = stream(0, &[(TableId::MethodDef, rows)], rows as usize * 14 + 64);
            let t = Tables::parse(&s, 0).unwrap();
            t.layout(TableId::CustomAttribute).row_size()
        };
        assert_eq!(need(2047), 6);
        assert_eq!(need(2048), 8);
        // TypeDefOrRef (2 bits) is still narrow for 2048 TypeSpec rows...
        let s = stream(0, &[(TableId::TypeSpec, 2048)], 2048 * 2 + 8);
        let t = Tables::parse(&s, 0).unwrap();
        assert_eq!(t.layout(TableId::InterfaceImpl).row_size(), 4);
        // ...and wide at 2^14.
        let s = stream(0, &[(TableId::TypeSpec, 1 << 14)], (1 << 15) + 8);
        let t = Tables::parse(&s, 0).unwrap();
        assert_eq!(t.layout(TableId::InterfaceImpl).row_size(), 6);
    }

    #[test]
    fn extra_data_and_unknown_tables() {
        let mut s = stream(HEAP_EXTRA_DATA, &[(TableId::Module, 1)], 0);
        s.extend_from_slice(&0xDEAD_BEEFu32.to_le_bytes());
        s.extend_from_slice(&[7; 10]);
        let t = Tables::parse(&s, 0).unwrap();
        assert_eq!(t.extra_data(), Some(0xDEAD_BEEF));
        assert_eq!(t.row(TableId::Module, 1).unwrap().get(0), Some(0x0707));

        // A table bit above 0x2C: its count is read and skipped.
        let mut s = vec![0, 0, 0, 0, 2, 0, 0, 1];
        s.extend_from_slice(&(1u64 | 1 << 0x30).to_le_bytes());
        s.extend_from_slice(&0u64.to_le_bytes());
        s.extend_from_slice(&1u32.to_le_bytes());
        s.extend_from_slice(&5u32.to_le_bytes());
        s.extend_from_slice(&[9; 10]);
        let t = Tables::parse(&s, 0).unwrap();
        assert_eq!(t.unknown_tables_mask(), 1 << 0x30);
        assert_eq!(t.row(TableId::Module, 1).unwrap().get(0), Some(0x0909));
    }

    #[test]
    fn malformed_streams() {
        assert!(Tables::parse(&[0; 10], 0).is_err());
        let s = stream(0, &[(TableId::Module, 2)], 19);
        assert!(Tables::parse(&s, 0).is_err());
        let s = stream(0, &[(TableId::Module, 0x0100_0000)], 0);
        assert!(Tables::parse(&s, 0).is_err());
        let mut s = stream(HEAP_EXTRA_DATA, &[(TableId::Module, 0)], 0);
        s.truncate(s.len() - 1);
        assert!(Tables::parse(&s, 0).is_err());
        let s = stream(0, &[(TableId::Module, 1)], 10);
        let t = Tables::parse(&s, 0).unwrap();
        assert!(t.row(TableId::Module, 0).is_err());
        assert!(t.row(TableId::Module, 2).is_err());
        assert!(t.cell(TableId::Module, 1, 5).is_err());
        assert!(t.cell(TableId::Module, 1, 4).is_ok());
        assert_eq!(t.row(TableId::Module, 1).unwrap().get(5), None);
    }
}

//! ReadyToRun (precompiled) images: the `READYTORUN_HEADER`, its section table, and the
//! inlining records a profiler needs to find the precompiled callers into which a
//! method was inlined.
//!
//! A ReadyToRun image is an ordinary .NET image whose CLI header's `ManagedNativeHeader`
//! names a header with the `RTR` signature, a format version and a table of
//! `(type, RVA, size)` sections, sorted by type (dotnet/runtime
//! `docs/design/coreclr/botr/readytorun-format.md`, `src/coreclr/inc/readytorun.h`).
//! Three section types record which methods were inlined into which precompiled
//! methods; each image carries the one(s) its compiler wrote:
//!
//! | type | name | written by | layout |
//! |-----:|------|------------|--------|
//! | 110 | `InliningInfo` | crossgen (R2R 2.1 - 3.x; .NET Core 3.1's framework, R2R 3.1) | an `i32` index size, a sorted index of `(inlinee RID, offset)` pairs, then per inlinee a nibble-encoded count and RID deltas of its inliners |
//! | 114 | `InliningInfo2` | crossgen2, R2R 4.1+ without cross-module inlining | a native hashtable; each entry: inlinee RID (low bit: a module index follows), inliner RID deltas (low bit: a module index follows) |
//! | 119 | `CrossModuleInlineInfo` | crossgen2, R2R 6.3+ (.NET 8's framework, R2R 9.1, has only this one) | a native hashtable; each entry: inlinee index with two flags (cross-module inlinee: an ILBody import index; has cross-module inliners: a count and ILBody import indices follow), a module index when the image has a multi-module version bubble, then inliner RID deltas (low bit in multi-module form: a module index follows) |
//!
//! Every method in these records is one of:
//! - a MethodDef RID of a module named by a ReadyToRun *module index*: 0 is the image's
//!   own module (in a non-composite image); `1..=n` are the rows of its AssemblyRef
//!   table; `n + 1` is the manifest metadata (section 112) itself and `n + 1 + k` row `k`
//!   of the manifest metadata's AssemblyRef table;
//! - (section 119 only) an index into the image's `ILBodyFixups` import section: a
//!   method of *another* module whose IL the image's code was compiled against
//!   (cross-module inlining). Which method that is, only its fixup signature says; this
//!   module does not resolve it, it reports the index ([`InlineMethod::IlBody`]).
//!
//! Measured on the test frameworks: .NET 8.0.4's 89 ReadyToRun assemblies carry only
//! section 119 (multi-module form), and every one of its 29,082 records names MethodDefs
//! of the image itself (no module indices, no ILBody entries); .NET Core 3.1.23's 163
//! carry only section 110 (its facades an empty one). Two things this reader does
//! differently from CoreCLR's: it scans the 110 index rather than binary-searching it
//! (crossgen sorts the records by inlinee *module name*, then RID, so an image with
//! another module's inlinees has an index that is not sorted by RID), and in the
//! single-module form of 119 it adds the RID deltas as crossgen2 writes them (the
//! runtime's reader, `CrossModulePersistentInlineTrackingMapR2R::GetInliners`, advances
//! the RID only in the multi-module form).
//!
//! [`ReadyToRun::inliners_of`] answers the profiler's question for the image's own
//! methods: the MethodDefs of this image whose precompiled code inlined a MethodDef of
//! this image. [`read_inliners`] and [`inliners_in_file`] answer it from a file, reading
//! only the headers and the inlining sections (a few hundred KB of a 10 MB CoreLib).
//!
//! Composite images (several assemblies compiled into one native image, section 115)
//! and their component assemblies are recognised but their inlining records are not
//! interpreted: [`ReadyToRun::inliners_of`] refuses a composite image, and a component
//! assembly has no inlining section of its own.
//!
//! Like the rest of [`crate::pe`], everything here is bounds checked: malformed input
//! yields [`Error::BadPe`] with a file offset, never a panic, and no count read from the
//! file sizes an allocation before the bytes it describes have been seen.

use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

use super::file::{CLI_HEADER_DIRECTORY, DataDirectory, PeFile, SectionHeader};
use super::metadata::{CLI_HEADER_SIZE, READY_TO_RUN_SIGNATURE};
use super::read::{bad_pe, bytes_at, u16_at, u32_at};
use super::tables::{MAX_ROWS, TableId};
use crate::error::{Error, Result};

/// ReadyToRun section types (`ReadyToRunSectionType` in `readytorun.h`).
pub mod section_type {
    /// `CompilerIdentifier`: a NUL-terminated compiler name.
    pub const COMPILER_IDENTIFIER: u32 = 100;
    /// `ImportSections`: the `READYTORUN_IMPORT_SECTION` array.
    pub const IMPORT_SECTIONS: u32 = 101;
    /// `RuntimeFunctions`.
    pub const RUNTIME_FUNCTIONS: u32 = 102;
    /// `MethodDefEntryPoints`.
    pub const METHOD_DEF_ENTRY_POINTS: u32 = 103;
    /// `ExceptionInfo`.
    pub const EXCEPTION_INFO: u32 = 104;
    /// `DebugInfo`.
    pub const DEBUG_INFO: u32 = 105;
    /// `DelayLoadMethodCallThunks`.
    pub const DELAY_LOAD_METHOD_CALL_THUNKS: u32 = 106;
    /// `AvailableTypes`.
    pub const AVAILABLE_TYPES: u32 = 108;
    /// `InstanceMethodEntryPoints`.
    pub const INSTANCE_METHOD_ENTRY_POINTS: u32 = 109;
    /// `InliningInfo` (R2R 2.1+, crossgen): see [`super::InliningFormat::InliningInfo`].
    pub const INLINING_INFO: u32 = 110;
    /// `ProfileDataInfo`.
    pub const PROFILE_DATA_INFO: u32 = 111;
    /// `ManifestMetadata`: extra metadata whose AssemblyRefs extend the module indices.
    pub const MANIFEST_METADATA: u32 = 112;
    /// `AttributePresence`.
    pub const ATTRIBUTE_PRESENCE: u32 = 113;
    /// `InliningInfo2` (R2R 4.1+): see [`super::InliningFormat::InliningInfo2`].
    pub const INLINING_INFO2: u32 = 114;
    /// `ComponentAssemblies`: present in composite images only.
    pub const COMPONENT_ASSEMBLIES: u32 = 115;
    /// `OwnerCompositeExecutable`: present in component assemblies of a composite image.
    pub const OWNER_COMPOSITE_EXECUTABLE: u32 = 116;
    /// `PgoInstrumentationData`.
    pub const PGO_INSTRUMENTATION_DATA: u32 = 117;
    /// `ManifestAssemblyMvids`.
    pub const MANIFEST_ASSEMBLY_MVIDS: u32 = 118;
    /// `CrossModuleInlineInfo` (R2R 6.3+): see
    /// [`super::InliningFormat::CrossModuleInlineInfo`].
    pub const CROSS_MODULE_INLINE_INFO: u32 = 119;
    /// `HotColdMap`.
    pub const HOT_COLD_MAP: u32 = 120;
    /// `MethodIsGenericMap`.
    pub const METHOD_IS_GENERIC_MAP: u32 = 121;
    /// `EnclosingTypeMap`.
    pub const ENCLOSING_TYPE_MAP: u32 = 122;
    /// `TypeGenericInfoMap`.
    pub const TYPE_GENERIC_INFO_MAP: u32 = 123;
}

/// `READYTORUN_CORE_HEADER::Flags` bits (`ReadyToRunFlag` in `readytorun.h`).
pub mod flags {
    /// The original IL image was platform neutral.
    pub const PLATFORM_NEUTRAL_SOURCE: u32 = 0x01;
    /// All types loaded at compile time; the runtime may skip type validation.
    pub const SKIP_TYPE_VALIDATION: u32 = 0x02;
    /// Only some methods were compiled.
    pub const PARTIAL: u32 = 0x04;
    /// P/Invoke stubs compiled into the image are not shareable.
    pub const NONSHARED_PINVOKE_STUBS: u32 = 0x08;
    /// The input MSIL is embedded in the (composite) image.
    pub const EMBEDDED_MSIL: u32 = 0x10;
    /// This header describes a component assembly of a composite image.
    pub const COMPONENT: u32 = 0x20;
    /// The image's version bubble holds several modules: the `CrossModuleInlineInfo`
    /// records then carry module indices.
    pub const MULTIMODULE_VERSION_BUBBLE: u32 = 0x40;
    /// The image has code that would not naturally be in this module.
    pub const UNRELATED_R2R_CODE: u32 = 0x80;
}

/// Size of `READYTORUN_HEADER` up to its section array (signature, versions, flags,
/// section count).
const HEADER_SIZE: usize = 16;
/// Size of one `READYTORUN_SECTION`.
const SECTION_ENTRY_SIZE: usize = 12;
/// More sections than any format defines (the types run 100..=123); a larger count is
/// treated as corruption rather than allocated.
const MAX_SECTIONS: u32 = 1024;
/// The MethodDef token type.
const METHOD_DEF: u32 = (TableId::MethodDef as u32) << 24;

/// The ReadyToRun header of an image: format version, flags and section table.
///
/// Holds no borrowed bytes: built by [`ReadyToRun::parse`] from a [`PeFile`] or by
/// [`ReadyToRun::read_from`] from a file's headers, it keeps a copy of the PE section
/// table so that it can map its sections' RVAs to file offsets by itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadyToRun {
    version: (u16, u16),
    flags: u32,
    header_rva: u32,
    header_offset: usize,
    sections: Vec<(u32, DataDirectory)>,
    pe_sections: Vec<SectionHeader>,
}

impl ReadyToRun {
    /// Reads the ReadyToRun header of `file`.
    ///
    /// `Ok(None)` when the image is not ReadyToRun: it has no CLI header, or its
    /// `ManagedNativeHeader` is empty or names a header without the `RTR` signature.
    ///
    /// # Errors
    ///
    /// [`Error::BadPe`] when the CLI header is malformed, or the ReadyToRun header or its
    /// section table is truncated, has more than 1024 sections, or is not sorted by
    /// strictly increasing section type.
    pub fn parse(file: &PeFile<'_>) -> Result<Option<ReadyToRun>> {
        let Some(cli) = file
            .data_directory(CLI_HEADER_DIRECTORY)
            .filter(|d| d.rva != 0)
        else {
            return Ok(None);
        };
        let cli_at = file.rva_to_offset(cli.rva).ok_or_else(|| {
            bad_pe(
                file.data_directory_offset(14),
                "CLI header outside the file",
            )
        })?;
        let cli_bytes = file
            .slice_rva(cli.rva, CLI_HEADER_SIZE)
            .ok_or_else(|| bad_pe(cli_at, "truncated CLI header"))?;
        let mnh = managed_native_header(cli_bytes);
        if mnh.rva == 0 {
            return Ok(None);
        }
        let at = file
            .rva_to_offset(mnh.rva)
            .ok_or_else(|| bad_pe(cli_at + 64, "ManagedNativeHeader outside the file"))?;
        let bytes = file.slice_at_rva(mnh.rva).unwrap_or_default();
        parse_header(bytes, at, mnh.rva, file.sections().to_vec())
    }

    /// Reads the ReadyToRun header of the image `reader` holds, reading only the PE
    /// headers, the CLI header and the ReadyToRun header (a few hundred bytes).
    ///
    /// `Ok(None)` under the same conditions as [`parse`](Self::parse).
    ///
    /// # Errors
    ///
    /// The reader's I/O errors, and [`io::ErrorKind::InvalidData`] wrapping the
    /// [`Error::BadPe`] [`parse`](Self::parse) would report, or one for PE headers that
    /// are malformed or a structure that lies outside the file.
    pub fn read_from<R: Read + Seek>(reader: &mut R) -> io::Result<Option<ReadyToRun>> {
        let len = reader.seek(SeekFrom::End(0))?;
        let pe = read_pe_headers(reader, len)?;
        let Some(cli) = pe.cli.filter(|d| d.rva != 0) else {
            return Ok(None);
        };
        let cli_bytes = read_rva(reader, &pe.sections, cli.rva, CLI_HEADER_SIZE as usize, len)?;
        let mnh = managed_native_header(&cli_bytes);
        if mnh.rva == 0 {
            return Ok(None);
        }
        let head = read_rva(reader, &pe.sections, mnh.rva, HEADER_SIZE, len)?;
        let at = rva_to_offset(&pe.sections, mnh.rva).unwrap_or(0);
        if u32_at(&head, 0) != Some(READY_TO_RUN_SIGNATURE) {
            return Ok(None);
        }
        let count = u32_at(&head, 12).unwrap_or(0);
        if count > MAX_SECTIONS {
            return Err(invalid(bad_pe(
                at + 12,
                "more than 1024 ReadyToRun sections",
            )));
        }
        let whole = HEADER_SIZE + count as usize * SECTION_ENTRY_SIZE;
        let bytes = read_rva(reader, &pe.sections, mnh.rva, whole, len)?;
        parse_header(&bytes, at, mnh.rva, pe.sections).map_err(invalid)
    }

    /// The format version (major, minor): (3, 1) for .NET Core 3.1's framework, (9, 1)
    /// for .NET 8's.
    pub fn version(&self) -> (u16, u16) {
        self.version
    }

    /// `READYTORUN_CORE_HEADER::Flags` (see [`flags`]).
    pub fn flags(&self) -> u32 {
        self.flags
    }

    /// RVA of the `READYTORUN_HEADER`.
    pub fn header_rva(&self) -> u32 {
        self.header_rva
    }

    /// File offset of the `READYTORUN_HEADER`.
    pub fn header_offset(&self) -> usize {
        self.header_offset
    }

    /// The sections as stored: `(type, location)` in strictly increasing type order (see
    /// [`section_type`]). Locations are not checked against the file here; the readers
    /// of each section check them.
    pub fn sections(&self) -> impl Iterator<Item = (u32, DataDirectory)> + '_ {
        self.sections.iter().copied()
    }

    /// The location of the section of type `ty`, if the image has one.
    pub fn section(&self, ty: u32) -> Option<DataDirectory> {
        self.sections
            .binary_search_by_key(&ty, |&(t, _)| t)
            .ok()
            .map(|i| self.sections[i].1)
    }

    /// Whether this is a composite image (it has a `ComponentAssemblies` section).
    pub fn is_composite(&self) -> bool {
        self.section(section_type::COMPONENT_ASSEMBLIES).is_some()
    }

    /// The inlining sections this image has, in section type order, with the format of
    /// each (that of section 119 depends on [`flags::MULTIMODULE_VERSION_BUBBLE`]).
    pub fn inlining_sections(&self) -> impl Iterator<Item = (InliningFormat, DataDirectory)> + '_ {
        let multi_module = self.flags & flags::MULTIMODULE_VERSION_BUBBLE != 0;
        self.sections.iter().filter_map(move |&(ty, dir)| {
            let format = match ty {
                section_type::INLINING_INFO => InliningFormat::InliningInfo,
                section_type::INLINING_INFO2 => InliningFormat::InliningInfo2,
                section_type::CROSS_MODULE_INLINE_INFO => {
                    InliningFormat::CrossModuleInlineInfo { multi_module }
                }
                _ => return None,
            };
            Some((format, dir))
        })
    }

    /// Views of this image's inlining sections (see
    /// [`inlining_sections`](Self::inlining_sections)) in `file`, which must be the file
    /// this header was read from.
    ///
    /// # Errors
    ///
    /// [`Error::BadPe`] when a section does not lie within one PE section's raw data, or
    /// its header is malformed ([`InliningTable::new`]).
    pub fn inlining_tables<'a>(&self, file: &PeFile<'a>) -> Result<Vec<InliningTable<'a>>> {
        self.inlining_sections()
            .map(|(format, dir)| {
                let at = file.rva_to_offset(dir.rva).unwrap_or(self.header_offset);
                let bytes = file
                    .slice_rva(dir.rva, dir.size)
                    .ok_or_else(|| bad_pe(at, "inlining section outside the file"))?;
                InliningTable::new(format, bytes, at)
            })
            .collect()
    }

    /// Reads this image's inlining sections from `reader` (the file this header was read
    /// from), and nothing else.
    ///
    /// # Errors
    ///
    /// The reader's I/O errors, and [`io::ErrorKind::InvalidData`] wrapping an
    /// [`Error::BadPe`] when a section does not lie within one PE section's raw data and
    /// the file.
    pub fn read_inlining_sections<R: Read + Seek>(
        &self,
        reader: &mut R,
    ) -> io::Result<Vec<InliningSection>> {
        let len = reader.seek(SeekFrom::End(0))?;
        self.inlining_sections()
            .map(|(format, dir)| {
                let bytes = read_rva(reader, &self.pe_sections, dir.rva, dir.size as usize, len)?;
                let file_offset = rva_to_offset(&self.pe_sections, dir.rva).unwrap_or(0);
                Ok(InliningSection {
                    format,
                    file_offset,
                    bytes,
                })
            })
            .collect()
    }

    /// The MethodDef tokens of this image whose precompiled code inlined MethodDef
    /// `inlinee` (a token, `0x06xxxxxx`) of this same image, sorted and without
    /// duplicates: the union over every inlining section the image has.
    ///
    /// Only what the records say: an inliner that is not a MethodDef of this image (a
    /// method of another module, or an ILBody import entry) is left out, and an image
    /// without inlining sections has no inliners. With an `InliningInfo` section (R2R
    /// 3.x), whose records do not say the inlinee's module, the list can also hold the
    /// inliners of another module's method that has the same RID
    /// ([`InlineMethod::MethodDefOfUnknownModule`]): a superset, never fewer.
    ///
    /// # Errors
    ///
    /// [`Error::BadToken`] when `inlinee` is not a MethodDef token; [`Error::BadPe`] for
    /// a composite image, or when an inlining section is outside the file or malformed.
    pub fn inliners_of(&self, file: &PeFile<'_>, inlinee: u32) -> Result<Vec<u32>> {
        self.check_inlinee(inlinee)?;
        let mut out = Vec::new();
        for table in self.inlining_tables(file)? {
            table.inliners_into(inlinee, &mut out)?;
        }
        out.sort_unstable();
        out.dedup();
        Ok(out)
    }

    fn check_inlinee(&self, inlinee: u32) -> Result<()> {
        if inlinee & !MAX_ROWS != METHOD_DEF || inlinee & MAX_ROWS == 0 {
            return Err(Error::BadToken {
                token: inlinee,
                what: "an inlinee must be a MethodDef token",
            });
        }
        if self.is_composite() {
            return Err(bad_pe(
                self.header_offset,
                "composite ReadyToRun image: inlining records are per component, not read",
            ));
        }
        Ok(())
    }
}

/// `ManagedNativeHeader` (offset 64) of a 72-byte CLI header.
fn managed_native_header(cli: &[u8]) -> DataDirectory {
    DataDirectory {
        rva: u32_at(cli, 64).unwrap_or(0),
        size: u32_at(cli, 68).unwrap_or(0),
    }
}

/// Parses a `READYTORUN_HEADER` at the start of `bytes` (file offset `at`).
fn parse_header(
    bytes: &[u8],
    at: usize,
    rva: u32,
    pe_sections: Vec<SectionHeader>,
) -> Result<Option<ReadyToRun>> {
    let head =
        bytes_at(bytes, 0, HEADER_SIZE).ok_or_else(|| bad_pe(at, "truncated ReadyToRun header"))?;
    if u32_at(head, 0) != Some(READY_TO_RUN_SIGNATURE) {
        return Ok(None);
    }
    let field = |o: usize| u32_at(head, o).unwrap_or(0);
    let major = u16_at(head, 4).unwrap_or(0);
    let minor = u16_at(head, 6).unwrap_or(0);
    let count = field(12);
    if count > MAX_SECTIONS {
        return Err(bad_pe(at + 12, "more than 1024 ReadyToRun sections"));
    }
    let table = bytes_at(bytes, HEADER_SIZE, count as usize * SECTION_ENTRY_SIZE)
        .ok_or_else(|| bad_pe(at + HEADER_SIZE, "truncated ReadyToRun section table"))?;
    let mut sections = Vec::with_capacity(count as usize);
    for (i, e) in table.chunks_exact(SECTION_ENTRY_SIZE).enumerate() {
        let f = |o: usize| u32_at(e, o).unwrap_or(0);
        let ty = f(0);
        if sections.last().is_some_and(|&(prev, _)| prev >= ty) {
            return Err(bad_pe(
                at + HEADER_SIZE + i * SECTION_ENTRY_SIZE,
                "ReadyToRun sections not sorted by type",
            ));
        }
        sections.push((
            ty,
            DataDirectory {
                rva: f(4),
                size: f(8),
            },
        ));
    }
    Ok(Some(ReadyToRun {
        version: (major, minor),
        flags: field(8),
        header_rva: rva,
        header_offset: at,
        sections,
        pe_sections,
    }))
}

// ---- reading a file's headers without reading the file ---------------------------------

/// What [`read_pe_headers`] finds.
struct PeHeaders {
    cli: Option<DataDirectory>,
    sections: Vec<SectionHeader>,
}

/// Wraps a format error for an `io::Result`.
fn invalid(e: Error) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e)
}

/// Reads `len` bytes at file offset `at`, refusing ranges past `file_len` (so that no
/// allocation is larger than the file).
fn read_at<R: Read + Seek>(
    r: &mut R,
    at: u64,
    len: usize,
    file_len: u64,
    what: &'static str,
) -> io::Result<Vec<u8>> {
    let end = at.checked_add(len as u64);
    if end.is_none_or(|e| e > file_len) {
        return Err(invalid(bad_pe(
            usize::try_from(at).unwrap_or(usize::MAX),
            what,
        )));
    }
    r.seek(SeekFrom::Start(at))?;
    let mut buf = vec![0; len];
    r.read_exact(&mut buf)?;
    Ok(buf)
}

/// The DOS header, PE signature, COFF header, optional header (its data directory 14)
/// and section table, in three reads.
fn read_pe_headers<R: Read + Seek>(r: &mut R, len: u64) -> io::Result<PeHeaders> {
    let dos = read_at(r, 0, 0x40, len, "truncated DOS header")?;
    if u16_at(&dos, 0) != Some(0x5A4D) {
        return Err(invalid(bad_pe(0, "missing MZ signature")));
    }
    let pe = u64::from(u32_at(&dos, 0x3C).unwrap_or(0));
    let coff = read_at(r, pe, 24, len, "e_lfanew points past the end of the file")?;
    if u32_at(&coff, 0) != Some(0x0000_4550) {
        return Err(invalid(bad_pe(pe as usize, "missing PE\\0\\0 signature")));
    }
    let count = usize::from(u16_at(&coff, 6).unwrap_or(0));
    let opt_size = usize::from(u16_at(&coff, 20).unwrap_or(0));
    let opt_at = pe + 24;
    let rest = read_at(
        r,
        opt_at,
        opt_size + count * 40,
        len,
        "truncated optional header or section table",
    )?;
    let (fixed, count_at) = match u16_at(&rest, 0) {
        Some(super::file::PE32_MAGIC) => (96, 92),
        Some(super::file::PE32_PLUS_MAGIC) => (112, 108),
        _ => {
            return Err(invalid(bad_pe(
                opt_at as usize,
                "unknown optional header magic",
            )));
        }
    };
    if opt_size < fixed {
        return Err(invalid(bad_pe(
            pe as usize + 20,
            "SizeOfOptionalHeader too small for its magic",
        )));
    }
    let dirs = u32_at(&rest, count_at).unwrap_or(0) as usize;
    let cli_at = fixed + CLI_HEADER_DIRECTORY * 8;
    let cli = (dirs > CLI_HEADER_DIRECTORY && cli_at + 8 <= opt_size).then(|| DataDirectory {
        rva: u32_at(&rest, cli_at).unwrap_or(0),
        size: u32_at(&rest, cli_at + 4).unwrap_or(0),
    });
    let sections = rest[opt_size..]
        .chunks_exact(40)
        .map(|raw| {
            let f = |o: usize| u32_at(raw, o).unwrap_or(0);
            let mut name = [0u8; 8];
            name.copy_from_slice(&raw[..8]);
            SectionHeader {
                name,
                virtual_size: f(8),
                virtual_address: f(12),
                size_of_raw_data: f(16),
                pointer_to_raw_data: f(20),
                characteristics: f(36),
            }
        })
        .collect();
    Ok(PeHeaders { cli, sections })
}

/// The file offset of `rva` and the bytes of raw data from there to its section's end,
/// as [`PeFile::rva_to_offset`] maps it.
fn rva_to_offset(sections: &[SectionHeader], rva: u32) -> Option<usize> {
    let s = sections.iter().find(|s| s.contains_rva(rva))?;
    let delta = rva - s.virtual_address;
    (delta < s.size_of_raw_data).then(|| s.pointer_to_raw_data as usize + delta as usize)
}

/// Reads `len` bytes at `rva`, which must all lie in one section's raw data and the
/// file.
fn read_rva<R: Read + Seek>(
    r: &mut R,
    sections: &[SectionHeader],
    rva: u32,
    len: usize,
    file_len: u64,
) -> io::Result<Vec<u8>> {
    let s = sections
        .iter()
        .find(|s| s.contains_rva(rva))
        .ok_or_else(|| invalid(bad_pe(0, "RVA outside every section")))?;
    let delta = rva - s.virtual_address;
    let at = u64::from(s.pointer_to_raw_data) + u64::from(delta);
    if u64::from(delta) + len as u64 > u64::from(s.size_of_raw_data) {
        return Err(invalid(bad_pe(
            usize::try_from(at).unwrap_or(usize::MAX),
            "structure runs past its section's raw data",
        )));
    }
    read_at(
        r,
        at,
        len,
        file_len,
        "structure runs past the end of the file",
    )
}

// ---- the inlining records --------------------------------------------------------------

/// The layout of an inlining section.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum InliningFormat {
    /// Section 110, written by crossgen (R2R up to 3.x): an `i32` byte size of the
    /// inlinee index, the index (`(inlinee RID, offset)` pairs of `u32`, sorted by RID),
    /// then the inliner lists it points into (a nibble-encoded count, then as many
    /// nibble-encoded deltas of the inliners' RIDs). Every method is a MethodDef of the
    /// image's own module.
    InliningInfo,
    /// Section 114, crossgen2 without cross-module inlining: a native hashtable whose
    /// entries hold a length, the inlinee's RID shifted left by one (low bit: a module
    /// index follows), then inliner RID deltas shifted left by one (low bit: a module
    /// index follows).
    InliningInfo2,
    /// Section 119, crossgen2 R2R 6.3+: a native hashtable whose entries hold a length,
    /// the inlinee index shifted left by two (bit 0: it is an ILBody import index rather
    /// than a MethodDef RID; bit 1: cross-module inliners follow), the inlinee's module
    /// index when `multi_module` and the inlinee is a MethodDef, then (bit 1) a count and
    /// as many ILBody import indices of inliners, then inliner RID deltas (when
    /// `multi_module`, shifted left by one, low bit: a module index follows; otherwise
    /// the inliner is in the inlinee's module).
    CrossModuleInlineInfo {
        /// The image has [`flags::MULTIMODULE_VERSION_BUBBLE`].
        multi_module: bool,
    },
}

impl InliningFormat {
    /// The section type holding records of this format.
    pub fn section_type(self) -> u32 {
        match self {
            InliningFormat::InliningInfo => section_type::INLINING_INFO,
            InliningFormat::InliningInfo2 => section_type::INLINING_INFO2,
            InliningFormat::CrossModuleInlineInfo { .. } => section_type::CROSS_MODULE_INLINE_INFO,
        }
    }
}

/// A method named by an inlining record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum InlineMethod {
    /// MethodDef `token` (`0x06xxxxxx`) of the module with ReadyToRun module index
    /// `module`: 0 is the image's own module (non-composite images), `1..=n` the rows of
    /// its AssemblyRef table, `n + 1 + k` row `k` of the manifest metadata's
    /// AssemblyRef table.
    MethodDef {
        /// The ReadyToRun module index.
        module: u32,
        /// The MethodDef token.
        token: u32,
    },
    /// Entry `index` of the image's `ILBodyFixups` import section: a method of another
    /// module whose IL the image's code depends on (section 119 only; not resolved here).
    IlBody {
        /// Index of the entry in the import section.
        index: u32,
    },
    /// MethodDef `token` of a module the format does not record: the inlinee of an
    /// `InliningInfo` (section 110) record. Usually the image's own module, but crossgen
    /// (.NET Core 3.1) also records methods of another module inlined across modules
    /// (CoreLib's `[NonVersionable]` methods, such as `Object::.ctor`) under their RID in
    /// that module, with nothing to tell the two apart; a RID past the image's MethodDef
    /// table is certainly another module's.
    MethodDefOfUnknownModule {
        /// The MethodDef token.
        token: u32,
    },
    /// MethodDef `token` of the module of the record's inlinee, where the inlinee is an
    /// [`InlineMethod::IlBody`] (so which module that is, only the import entry says).
    MethodDefOfInlineeModule {
        /// The MethodDef token.
        token: u32,
    },
}

/// One inlining record: an inlinee and the precompiled methods that inlined it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InliningRecord {
    /// The inlined method (`None` only in a record being filled).
    pub inlinee: Option<InlineMethod>,
    /// The methods whose precompiled code inlined it, in record order.
    pub inliners: Vec<InlineMethod>,
}

/// An inlining section's bytes read from a file by
/// [`ReadyToRun::read_inlining_sections`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InliningSection {
    /// The section's format.
    pub format: InliningFormat,
    /// File offset of the first byte.
    pub file_offset: usize,
    /// The section's bytes.
    pub bytes: Vec<u8>,
}

impl InliningSection {
    /// A view of the records.
    ///
    /// # Errors
    ///
    /// Those of [`InliningTable::new`].
    pub fn table(&self) -> Result<InliningTable<'_>> {
        InliningTable::new(self.format, &self.bytes, self.file_offset)
    }
}

/// A view of one inlining section's records.
///
/// Construction checks the section's header (index size or hashtable shape); the
/// records are decoded, with bounds checks, each time they are asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InliningTable<'a> {
    format: InliningFormat,
    data: &'a [u8],
    file_offset: usize,
}

impl<'a> InliningTable<'a> {
    /// A view of `data`, an inlining section of `format` at file offset `file_offset`
    /// (used in errors only).
    ///
    /// # Errors
    ///
    /// [`Error::BadPe`] when the section is too short for its header, an `InliningInfo`
    /// index size is negative, not a multiple of 8 or larger than the section, or a
    /// hashtable's header names an entry size other than 1, 2 or 4 bytes, more than 2^31
    /// buckets, or a bucket table larger than the section.
    pub fn new(format: InliningFormat, data: &'a [u8], file_offset: usize) -> Result<Self> {
        let table = InliningTable {
            format,
            data,
            file_offset,
        };
        match format {
            InliningFormat::InliningInfo => {
                table.index()?;
            }
            _ => {
                table.hashtable()?;
            }
        }
        Ok(table)
    }

    /// The section's format.
    pub fn format(&self) -> InliningFormat {
        self.format
    }

    /// The section's bytes.
    pub fn data(&self) -> &'a [u8] {
        self.data
    }

    /// Calls `f` with each record, in storage order (index order for `InliningInfo`,
    /// bucket order for the hashtables). The record passed is reused between calls.
    ///
    /// # Errors
    ///
    /// [`Error::BadPe`] when a record lies outside the section, a number is truncated or
    /// of no defined encoding, a record's length is shorter than its content, or a RID
    /// sum passes 2^24 - 1.
    pub fn for_each_record(&self, mut f: impl FnMut(&InliningRecord)) -> Result<()> {
        let mut record = InliningRecord::default();
        match self.format {
            InliningFormat::InliningInfo => {
                let (index, buffer_at) = self.index()?;
                for pair in index.chunks_exact(8) {
                    let key = u32_at(pair, 0).unwrap_or(0);
                    let offset = u32_at(pair, 4).unwrap_or(0) as usize;
                    record.inlinee = Some(InlineMethod::MethodDefOfUnknownModule {
                        token: self.token(key, buffer_at)?,
                    });
                    record.inliners.clear();
                    self.nibble_inliners(buffer_at, offset, &mut record.inliners)?;
                    f(&record);
                }
            }
            format => {
                let multi_module = matches!(
                    format,
                    InliningFormat::CrossModuleInlineInfo { multi_module: true }
                );
                let cross = matches!(format, InliningFormat::CrossModuleInlineInfo { .. });
                self.for_each_entry(|entry| {
                    if cross {
                        self.cross_module_entry(entry, multi_module, &mut record)?;
                    } else {
                        self.inlining_info2_entry(entry, &mut record)?;
                    }
                    f(&record);
                    Ok(())
                })?;
            }
        }
        Ok(())
    }

    /// Every record, in storage order.
    ///
    /// # Errors
    ///
    /// Those of [`for_each_record`](Self::for_each_record).
    pub fn records(&self) -> Result<Vec<InliningRecord>> {
        let mut out = Vec::new();
        self.for_each_record(|r| out.push(r.clone()))?;
        Ok(out)
    }

    /// The MethodDef tokens of the image's own module that this section lists as
    /// inliners of MethodDef `inlinee` of the image's own module, sorted, without
    /// duplicates (see [`ReadyToRun::inliners_of`], which also refuses composite images).
    ///
    /// # Errors
    ///
    /// [`Error::BadToken`] when `inlinee` is not a MethodDef token, and those of
    /// [`for_each_record`](Self::for_each_record).
    pub fn inliners_of(&self, inlinee: u32) -> Result<Vec<u32>> {
        if inlinee & !MAX_ROWS != METHOD_DEF || inlinee & MAX_ROWS == 0 {
            return Err(Error::BadToken {
                token: inlinee,
                what: "an inlinee must be a MethodDef token",
            });
        }
        let mut out = Vec::new();
        self.inliners_into(inlinee, &mut out)?;
        out.sort_unstable();
        out.dedup();
        Ok(out)
    }

    /// Appends the local inliners of local MethodDef `inlinee` to `out`.
    fn inliners_into(&self, inlinee: u32, out: &mut Vec<u32>) -> Result<()> {
        self.for_each_record(|r| {
            if r.inlinee.is_some_and(|m| is_local(m, inlinee)) {
                out.extend(r.inliners.iter().filter_map(|m| match *m {
                    InlineMethod::MethodDef { module: 0, token } => Some(token),
                    _ => None,
                }));
            }
        })
    }

    // ---- decoding --------------------------------------------------------------------

    fn err(&self, at: usize, what: &'static str) -> Error {
        bad_pe(self.file_offset.saturating_add(at), what)
    }

    /// A MethodDef token from a RID, refusing RIDs past the token's 24 bits.
    fn token(&self, rid: u32, at: usize) -> Result<u32> {
        if rid == 0 || rid > MAX_ROWS {
            return Err(self.err(at, "inlining record names RID 0 or one past 2^24 - 1"));
        }
        Ok(METHOD_DEF | rid)
    }

    /// `InliningInfo`: the inlinee index and the offset of the inliner lists.
    fn index(&self) -> Result<(&'a [u8], usize)> {
        let size =
            u32_at(self.data, 0).ok_or_else(|| self.err(0, "truncated InliningInfo header"))?;
        let size = size as i32;
        if size < 0 || size % 8 != 0 || size as usize > self.data.len() - 4 {
            return Err(self.err(
                0,
                "InliningInfo index size is negative, ragged or too large",
            ));
        }
        let end = 4 + size as usize;
        Ok((&self.data[4..end], end))
    }

    /// `InliningInfo`: the inliner list at `buffer_at + offset`.
    fn nibble_inliners(
        &self,
        buffer_at: usize,
        offset: usize,
        out: &mut Vec<InlineMethod>,
    ) -> Result<()> {
        let start = buffer_at
            .checked_add(offset)
            .filter(|&s| s < self.data.len())
            .ok_or_else(|| self.err(buffer_at, "InliningInfo inliner list outside the section"))?;
        let mut nibbles = Nibbles {
            data: self.data,
            byte: start,
            high: false,
        };
        let count = nibbles
            .read_u32()
            .ok_or_else(|| self.err(start, "truncated or oversized nibble count"))?;
        let mut rid = 0u32;
        for _ in 0..count {
            let at = nibbles.byte;
            let delta = nibbles
                .read_u32()
                .ok_or_else(|| self.err(at, "truncated or oversized nibble-encoded RID delta"))?;
            rid = rid
                .checked_add(delta)
                .ok_or_else(|| self.err(at, "inliner RID overflows"))?;
            out.push(InlineMethod::MethodDef {
                module: 0,
                token: self.token(rid, at)?,
            });
        }
        Ok(())
    }

    /// A native hashtable's shape: `(entry size, bucket count)`; its bucket table starts
    /// at offset 1.
    fn hashtable(&self) -> Result<(usize, usize)> {
        let header = *self
            .data
            .first()
            .ok_or_else(|| self.err(0, "empty hashtable section"))?;
        let shift = u32::from(header >> 2);
        let entry_size = match header & 3 {
            0 => 1,
            1 => 2,
            2 => 4,
            _ => return Err(self.err(0, "hashtable entry index size is not 1, 2 or 4")),
        };
        if shift > 31 {
            return Err(self.err(0, "hashtable has more than 2^31 buckets"));
        }
        let buckets = 1usize << shift;
        let table = buckets
            .checked_add(1)
            .and_then(|n| n.checked_mul(entry_size))
            .and_then(|n| n.checked_add(1));
        if table.is_none_or(|t| t > self.data.len()) {
            return Err(self.err(0, "hashtable bucket table runs past the section"));
        }
        Ok((entry_size, buckets))
    }

    /// Calls `f` with the section offset of each hashtable entry.
    fn for_each_entry(&self, mut f: impl FnMut(usize) -> Result<()>) -> Result<()> {
        let (size, buckets) = self.hashtable()?;
        let bound = |i: usize| -> usize {
            let at = 1 + i * size;
            let v = match size {
                1 => self.data.get(at).map(|&b| u32::from(b)),
                2 => u16_at(self.data, at).map(u32::from),
                _ => u32_at(self.data, at),
            };
            // In bounds: `hashtable` checked the whole bucket table.
            1usize.saturating_add(v.unwrap_or(0) as usize)
        };
        for b in 0..buckets {
            let (start, end) = (bound(b), bound(b + 1));
            if start > end || end > self.data.len() {
                return Err(self.err(1 + b * size, "hashtable bucket outside the section"));
            }
            let mut p = start;
            while p < end {
                // One byte of the entry's hash code, then its signed relative offset.
                p += 1;
                let (delta, used) = decode_signed(self.data, p)
                    .ok_or_else(|| self.err(p, "truncated or undefined signed number"))?;
                let target = i64::try_from(p).unwrap_or(i64::MAX) + i64::from(delta);
                let entry = usize::try_from(target)
                    .ok()
                    .filter(|&t| t < self.data.len())
                    .ok_or_else(|| self.err(p, "hashtable entry outside the section"))?;
                p += used;
                f(entry)?;
            }
        }
        Ok(())
    }

    /// `InliningInfo2`: decodes the entry at `at` into `record`.
    fn inlining_info2_entry(&self, at: usize, record: &mut InliningRecord) -> Result<()> {
        let mut s = Stream::new(self, at)?;
        let first = s.next()?;
        let module = if first & 1 != 0 { s.next()? } else { 0 };
        record.inlinee = Some(InlineMethod::MethodDef {
            module,
            token: self.token(first >> 1, at)?,
        });
        record.inliners.clear();
        let mut rid = 0u32;
        while s.left > 0 {
            let v = s.next()?;
            rid = rid
                .checked_add(v >> 1)
                .ok_or_else(|| self.err(s.at, "inliner RID overflows"))?;
            let module = if v & 1 != 0 { s.next()? } else { 0 };
            record.inliners.push(InlineMethod::MethodDef {
                module,
                token: self.token(rid, s.at)?,
            });
        }
        Ok(())
    }

    /// `CrossModuleInlineInfo`: decodes the entry at `at` into `record`.
    fn cross_module_entry(
        &self,
        at: usize,
        multi_module: bool,
        record: &mut InliningRecord,
    ) -> Result<()> {
        let mut s = Stream::new(self, at)?;
        let first = s.next()?;
        let index = first >> 2;
        let inlinee = if first & 1 != 0 {
            InlineMethod::IlBody { index }
        } else {
            let module = if multi_module { s.next()? } else { 0 };
            InlineMethod::MethodDef {
                module,
                token: self.token(index, at)?,
            }
        };
        record.inlinee = Some(inlinee);
        record.inliners.clear();
        if first & 2 != 0 {
            let count = s.next()?;
            if count > s.left {
                return Err(self.err(s.at, "more cross-module inliners than the entry holds"));
            }
            for _ in 0..count {
                let index = s.next()?;
                record.inliners.push(InlineMethod::IlBody { index });
            }
        }
        let mut rid = 0u32;
        while s.left > 0 {
            let v = s.next()?;
            let (delta, module) = if multi_module {
                let module = if v & 1 != 0 { Some(s.next()?) } else { None };
                (v >> 1, module)
            } else {
                (v, None)
            };
            rid = rid
                .checked_add(delta)
                .ok_or_else(|| self.err(s.at, "inliner RID overflows"))?;
            let token = self.token(rid, s.at)?;
            record.inliners.push(match (module, inlinee) {
                (Some(module), _) | (None, InlineMethod::MethodDef { module, .. }) => {
                    InlineMethod::MethodDef { module, token }
                }
                (None, _) => InlineMethod::MethodDefOfInlineeModule { token },
            });
        }
        Ok(())
    }
}

/// Whether a record's inlinee may be the image's own MethodDef `token`: a MethodDef of
/// module 0, or one of a module the format does not record (`InliningInfo`).
fn is_local(m: InlineMethod, token: u32) -> bool {
    match m {
        InlineMethod::MethodDef {
            module: 0,
            token: t,
        }
        | InlineMethod::MethodDefOfUnknownModule { token: t } => t == token,
        _ => false,
    }
}

/// A hashtable entry's numbers: a leading count, then that many unsigned numbers.
struct Stream<'t, 'a> {
    table: &'t InliningTable<'a>,
    at: usize,
    left: u32,
}

impl<'t, 'a> Stream<'t, 'a> {
    fn new(table: &'t InliningTable<'a>, at: usize) -> Result<Self> {
        let (left, used) = decode_unsigned(table.data, at)
            .ok_or_else(|| table.err(at, "truncated or undefined unsigned number"))?;
        if left == 0 {
            return Err(table.err(at, "empty inlining entry"));
        }
        Ok(Stream {
            table,
            at: at + used,
            left,
        })
    }

    /// The next number, counting it against the entry's length.
    fn next(&mut self) -> Result<u32> {
        if self.left == 0 {
            return Err(self
                .table
                .err(self.at, "inlining entry shorter than its content"));
        }
        let (v, used) = decode_unsigned(self.table.data, self.at).ok_or_else(|| {
            self.table
                .err(self.at, "truncated or undefined unsigned number")
        })?;
        self.left -= 1;
        self.at += used;
        Ok(v)
    }
}

/// Decodes a native-format unsigned number at `at`: the count of low one bits of the
/// first byte (0 to 3) says how many more bytes follow, the remaining bits are the value
/// low bits first; a first byte with its four low bits set (`xxx0_1111`) is followed by
/// the value as a little-endian `u32`. Returns `(value, bytes used)`.
fn decode_unsigned(data: &[u8], at: usize) -> Option<(u32, usize)> {
    let b = |i: usize| data.get(at.checked_add(i)?).map(|&x| u32::from(x));
    let b0 = b(0)?;
    Some(match b0.trailing_ones() {
        0 => (b0 >> 1, 1),
        1 => ((b0 >> 2) | (b(1)? << 6), 2),
        2 => ((b0 >> 3) | (b(1)? << 5) | (b(2)? << 13), 3),
        3 => ((b0 >> 4) | (b(1)? << 4) | (b(2)? << 12) | (b(3)? << 20), 4),
        4 => (u32_at(data, at.checked_add(1)?)?, 5),
        _ => return None,
    })
}

/// Decodes a native-format signed number at `at`: the unsigned layout, with the last
/// byte's top bit sign-extended. Returns `(value, bytes used)`.
fn decode_signed(data: &[u8], at: usize) -> Option<(i32, usize)> {
    let b = |i: usize| data.get(at.checked_add(i)?).copied();
    let s = |i: usize| b(i).map(|x| i32::from(x as i8));
    let u = |i: usize| b(i).map(i32::from);
    let b0 = b(0)?;
    Some(match b0.trailing_ones() {
        0 => (i32::from(b0 as i8) >> 1, 1),
        1 => ((u(0)? >> 2) | (s(1)? << 6), 2),
        2 => ((u(0)? >> 3) | (u(1)? << 5) | (s(2)? << 13), 3),
        3 => (
            (u(0)? >> 4) | (u(1)? << 4) | (u(2)? << 12) | (s(3)? << 20),
            4,
        ),
        4 => (u32_at(data, at.checked_add(1)?)? as i32, 5),
        _ => return None,
    })
}

/// A reader of nibble-encoded unsigned numbers (CoreCLR's `NibbleReader`): nibbles are
/// taken low half of a byte first; each gives 3 value bits, most significant first, and
/// its high bit says whether another nibble follows.
struct Nibbles<'a> {
    data: &'a [u8],
    byte: usize,
    high: bool,
}

impl Nibbles<'_> {
    fn nibble(&mut self) -> Option<u8> {
        let b = *self.data.get(self.byte)?;
        Some(if self.high {
            self.high = false;
            self.byte += 1;
            b >> 4
        } else {
            self.high = true;
            b & 0x0F
        })
    }

    /// The next number; `None` when truncated or wider than 32 bits.
    fn read_u32(&mut self) -> Option<u32> {
        let mut v = 0u64;
        loop {
            let n = self.nibble()?;
            v = (v << 3) | u64::from(n & 7);
            if v > u64::from(u32::MAX) {
                return None;
            }
            if n & 8 == 0 {
                return Some(v as u32);
            }
        }
    }
}

// ---- from a file -----------------------------------------------------------------------

/// The inliners of each of `inlinees` (MethodDef tokens of the image), as
/// [`ReadyToRun::inliners_of`] finds them, reading from `reader` only the PE, CLI and
/// ReadyToRun headers and the inlining sections. The result is parallel to `inlinees`;
/// `Ok(None)` when the image is not ReadyToRun.
///
/// # Errors
///
/// The reader's I/O errors, and [`io::ErrorKind::InvalidData`] wrapping the crate
/// [`Error`] ([`Error::BadPe`] or [`Error::BadToken`]) that
/// [`ReadyToRun::read_from`], [`ReadyToRun::read_inlining_sections`] or
/// [`ReadyToRun::inliners_of`] would report.
pub fn read_inliners<R: Read + Seek>(
    reader: &mut R,
    inlinees: &[u32],
) -> io::Result<Option<Vec<Vec<u32>>>> {
    let Some(r2r) = ReadyToRun::read_from(reader)? else {
        return Ok(None);
    };
    for &t in inlinees {
        r2r.check_inlinee(t).map_err(invalid)?;
    }
    let sections = r2r.read_inlining_sections(reader)?;
    let tables = sections
        .iter()
        .map(InliningSection::table)
        .collect::<Result<Vec<_>>>()
        .map_err(invalid)?;
    let mut out = vec![Vec::new(); inlinees.len()];
    for table in &tables {
        table
            .for_each_record(|r| {
                let Some(inlinee) = r.inlinee else {
                    return;
                };
                for (i, _) in inlinees
                    .iter()
                    .enumerate()
                    .filter(|&(_, &t)| is_local(inlinee, t))
                {
                    out[i].extend(r.inliners.iter().filter_map(|m| match *m {
                        InlineMethod::MethodDef { module: 0, token } => Some(token),
                        _ => None,
                    }));
                }
            })
            .map_err(invalid)?;
    }
    for list in &mut out {
        list.sort_unstable();
        list.dedup();
    }
    Ok(Some(out))
}

/// [`read_inliners`] on the file at `path` (opened read-only, not read whole).
///
/// # Errors
///
/// Those of [`std::fs::File::open`] and [`read_inliners`].
pub fn inliners_in_file(path: &Path, inlinees: &[u32]) -> io::Result<Option<Vec<Vec<u32>>>> {
    let mut file = io::BufReader::new(std::fs::File::open(path)?);
    read_inliners(&mut file, inlinees)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsigned_forms() {
        assert_eq!(decode_unsigned(&[0x06], 0), Some((3, 1)));
        assert_eq!(
            decode_unsigned(&[0xFD, 0x03], 0),
            Some(((0xFD >> 2) | (3 << 6), 2))
        );
        assert_eq!(decode_unsigned(&[0x0F, 1, 0, 0, 0], 0), Some((1, 5)));
        assert_eq!(decode_unsigned(&[0x1F, 1, 0, 0, 0], 0), None);
        assert_eq!(decode_unsigned(&[0x01], 0), None);
        assert_eq!(decode_unsigned(&[], 0), None);
        assert_eq!(decode_unsigned(&[0], usize::MAX), None);
    }

    #[test]
    fn signed_forms() {
        assert_eq!(decode_signed(&[0xFE], 0), Some((-1, 1)));
        assert_eq!(decode_signed(&[0x04], 0), Some((2, 1)));
        // -2 in the two-byte form: low 6 bits in the first byte, the rest sign-extended.
        assert_eq!(decode_signed(&[0xF9, 0xFF], 0), Some((-2, 2)));
        assert_eq!(
            decode_signed(&[0x0F, 0xFF, 0xFF, 0xFF, 0xFF], 0),
            Some((-1, 5))
        );
        assert_eq!(decode_signed(&[0x03, 0], 0), None);
    }

    #[test]
    fn nibble_numbers() {
        // 5 = one nibble 0b0101; 9 = 0b1001 (more) then 0b0001: (1 << 3) | 1.
        let data = [0x95, 0x01];
        let mut n = Nibbles {
            data: &data,
            byte: 0,
            high: false,
        };
        assert_eq!(n.read_u32(), Some(5));
        assert_eq!(n.read_u32(), Some(9));
        assert_eq!(n.read_u32(), Some(0));
        assert_eq!(n.read_u32(), None);
        let wide = [0xFF; 8];
        let mut n = Nibbles {
            data: &wide,
            byte: 0,
            high: false,
        };
        assert_eq!(n.read_u32(), None);
    }

    #[test]
    fn inlining_info_by_hand() {
        // Index of two records (RID 7 -> offset 0, RID 9 -> offset 2), then the lists:
        // [count 2: +3, +2] and [count 1: +4]. Nibbles: 2,3 | 2,1 | 4,0.
        let mut d = Vec::new();
        d.extend(16u32.to_le_bytes());
        d.extend([7, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 2, 0, 0, 0]);
        d.extend([0x32, 0x02, 0x41, 0x04]);
        let t = InliningTable::new(InliningFormat::InliningInfo, &d, 0).unwrap();
        assert_eq!(
            t.inliners_of(0x0600_0007).unwrap(),
            vec![0x0600_0003, 0x0600_0005]
        );
        assert_eq!(t.inliners_of(0x0600_0009).unwrap(), vec![0x0600_0004]);
        assert!(t.inliners_of(0x0200_0009).is_err());
        d[0] = 0xF0;
        assert!(InliningTable::new(InliningFormat::InliningInfo, &d, 0).is_err());
    }
    /// A one-bucket native hashtable (1-byte bucket bounds) holding `entries` (each
    /// already encoded), every entry placed after the bucket's list.
    fn hashtable(entries: &[Vec<u8>]) -> Vec<u8> {
        let list_at = 3;
        let data_at = list_at + 2 * entries.len();
        let mut d = vec![0x00, (list_at - 1) as u8, (data_at - 1) as u8];
        let mut at = data_at;
        for (i, e) in entries.iter().enumerate() {
            let rel_at = list_at + 2 * i + 1;
            d.push(0xAA);
            d.push(((at - rel_at) as u8) << 1);
            at += e.len();
        }
        for e in entries {
            d.extend(e);
        }
        d
    }

    /// Small unsigned numbers in the one-byte native form.
    fn nums(v: &[u8]) -> Vec<u8> {
        v.iter().map(|&x| x << 1).collect()
    }

    #[test]
    fn inlining_info2_by_hand() {
        let d = hashtable(&[
            // 4 numbers: inlinee RID 5; +2; +3 with module 4.
            nums(&[4, 5 << 1, 2 << 1, (3 << 1) | 1, 4]),
            // 3 numbers: inlinee RID 7 of module 3; +1.
            nums(&[3, (7 << 1) | 1, 3, 1 << 1]),
        ]);
        let t = InliningTable::new(InliningFormat::InliningInfo2, &d, 0).unwrap();
        let records = t.records().unwrap();
        let md = |module, rid| InlineMethod::MethodDef {
            module,
            token: METHOD_DEF | rid,
        };
        assert_eq!(records[0].inlinee, Some(md(0, 5)));
        assert_eq!(records[0].inliners, [md(0, 2), md(4, 5)]);
        assert_eq!(records[1].inlinee, Some(md(3, 7)));
        assert_eq!(records[1].inliners, [md(0, 1)]);
        assert_eq!(t.inliners_of(0x0600_0005).unwrap(), [0x0600_0002]);
        assert!(t.inliners_of(0x0600_0007).unwrap().is_empty());
        // A length one more than the last entry holds runs past the section: an error.
        let mut short = d.clone();
        let last = short.len() - 4;
        short[last] = 4 << 1;
        assert!(
            InliningTable::new(InliningFormat::InliningInfo2, &short, 0)
                .unwrap()
                .records()
                .is_err()
        );
    }

    #[test]
    fn cross_module_inline_info_by_hand() {
        let d = hashtable(&[
            // Inlinee RID 5 of module 0 with one cross-module inliner (ILBody 9), then
            // +4 (the inlinee's module) and +1 of module 2.
            nums(&[7, (5 << 2) | 2, 0, 1, 9, 4 << 1, (1 << 1) | 1, 2]),
            // Inlinee ILBody 3; inliner +6 of the inlinee's module.
            nums(&[2, (3 << 2) | 1, 6 << 1]),
        ]);
        let multi = InliningFormat::CrossModuleInlineInfo { multi_module: true };
        let t = InliningTable::new(multi, &d, 0).unwrap();
        let records = t.records().unwrap();
        let md = |module, rid| InlineMethod::MethodDef {
            module,
            token: METHOD_DEF | rid,
        };
        assert_eq!(records[0].inlinee, Some(md(0, 5)));
        assert_eq!(
            records[0].inliners,
            [InlineMethod::IlBody { index: 9 }, md(0, 4), md(2, 5)]
        );
        assert_eq!(records[1].inlinee, Some(InlineMethod::IlBody { index: 3 }));
        assert_eq!(
            records[1].inliners,
            [InlineMethod::MethodDefOfInlineeModule {
                token: METHOD_DEF | 6
            }]
        );
        assert_eq!(t.inliners_of(0x0600_0005).unwrap(), [0x0600_0004]);
        // The single-module form: no module indices, plain RID deltas.
        let d = hashtable(&[nums(&[3, 5 << 2, 2, 3])]);
        let single = InliningFormat::CrossModuleInlineInfo {
            multi_module: false,
        };
        let t = InliningTable::new(single, &d, 0).unwrap();
        assert_eq!(
            t.inliners_of(0x0600_0005).unwrap(),
            [0x0600_0002, 0x0600_0005]
        );
        // More cross-module inliners than the entry holds.
        let d = hashtable(&[nums(&[3, (5 << 2) | 2, 0, 9])]);
        assert!(InliningTable::new(multi, &d, 0).unwrap().records().is_err());
    }

    #[test]
    fn hashtable_headers() {
        for bad in [&[][..], &[0x03], &[0xFC], &[0x04, 0, 0]] {
            let f = InliningFormat::InliningInfo2;
            assert!(InliningTable::new(f, bad, 0).is_err(), "{bad:x?}");
        }
        // A bucket whose end precedes its start.
        let t = InliningTable::new(InliningFormat::InliningInfo2, &[0, 2, 1], 0).unwrap();
        assert!(t.records().is_err());
    }
}

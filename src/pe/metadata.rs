//! The CLI header (ECMA-335 §II.25.3.3) and the metadata root with its stream headers
//! (§II.24.2.1-24.2.2).

use super::file::{CLI_HEADER_DIRECTORY, DataDirectory, PeFile};
use super::heaps::{BlobHeap, GuidHeap, StringsHeap, UserStringsHeap};
use super::read::{bad_pe, bytes_at, u16_at, u32_at};
use super::tables::Tables;
use crate::error::Result;

/// `COMIMAGE_FLAGS_ILONLY`.
pub const COMIMAGE_FLAGS_ILONLY: u32 = 0x0000_0001;
/// `COMIMAGE_FLAGS_32BITREQUIRED`.
pub const COMIMAGE_FLAGS_32BITREQUIRED: u32 = 0x0000_0002;
/// `COMIMAGE_FLAGS_IL_LIBRARY` (set on ReadyToRun images).
pub const COMIMAGE_FLAGS_IL_LIBRARY: u32 = 0x0000_0004;
/// `COMIMAGE_FLAGS_STRONGNAMESIGNED`.
pub const COMIMAGE_FLAGS_STRONGNAMESIGNED: u32 = 0x0000_0008;
/// `COMIMAGE_FLAGS_NATIVE_ENTRYPOINT`: the entry point field is an RVA, not a token.
pub const COMIMAGE_FLAGS_NATIVE_ENTRYPOINT: u32 = 0x0000_0010;
/// `COMIMAGE_FLAGS_TRACKDEBUGDATA`.
pub const COMIMAGE_FLAGS_TRACKDEBUGDATA: u32 = 0x0001_0000;
/// `COMIMAGE_FLAGS_32BITPREFERRED`.
pub const COMIMAGE_FLAGS_32BITPREFERRED: u32 = 0x0002_0000;

/// Size of the CLI header (`IMAGE_COR20_HEADER`).
pub const CLI_HEADER_SIZE: u32 = 72;
/// `BSJB`, the metadata root signature.
pub const METADATA_SIGNATURE: u32 = 0x424A_5342;
/// `RTR`, the signature of a ReadyToRun header (found via the ManagedNativeHeader).
pub const READY_TO_RUN_SIGNATURE: u32 = 0x0052_5452;

/// The CLI header (`IMAGE_COR20_HEADER`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CliHeader {
    /// File offset of the header.
    pub file_offset: usize,
    /// `cb`: the size the header claims (72 in every known file; not validated).
    pub cb: u32,
    /// `MajorRuntimeVersion`.
    pub major_runtime_version: u16,
    /// `MinorRuntimeVersion`.
    pub minor_runtime_version: u16,
    /// Location of the metadata root.
    pub metadata: DataDirectory,
    /// `Flags` (see the `COMIMAGE_FLAGS_*` constants).
    pub flags: u32,
    /// `EntryPointToken`, or an RVA when [`COMIMAGE_FLAGS_NATIVE_ENTRYPOINT`] is set.
    pub entry_point: u32,
    /// Managed resources.
    pub resources: DataDirectory,
    /// Strong-name signature.
    pub strong_name_signature: DataDirectory,
    /// `CodeManagerTable` (always zero).
    pub code_manager_table: DataDirectory,
    /// VTable fixups (mixed-mode images).
    pub vtable_fixups: DataDirectory,
    /// `ExportAddressTableJumps` (always zero).
    pub export_address_table_jumps: DataDirectory,
    /// `ManagedNativeHeader`: the ReadyToRun header in R2R images, else zero.
    pub managed_native_header: DataDirectory,
}

impl CliHeader {
    /// Reads the CLI header named by data directory 14.
    ///
    /// The header's `cb` is reported as stored.
    ///
    /// # Errors
    ///
    /// [`crate::Error::BadPe`] when the directory is missing or empty, or when its 72
    /// bytes are not all in one section's raw data.
    pub fn parse(pe: &PeFile<'_>) -> Result<Self> {
        let dir_offset = pe.data_directory_offset(CLI_HEADER_DIRECTORY);
        let dir = pe
            .data_directory(CLI_HEADER_DIRECTORY)
            .filter(|d| d.rva != 0)
            .ok_or_else(|| bad_pe(dir_offset, "no CLI header: not a .NET image"))?;
        let file_offset = pe
            .rva_to_offset(dir.rva)
            .ok_or_else(|| bad_pe(dir_offset, "CLI header RVA lies outside every section"))?;
        let b = pe
            .slice_rva(dir.rva, CLI_HEADER_SIZE)
            .ok_or_else(|| bad_pe(file_offset, "truncated CLI header"))?;
        let u = |o: usize| u32_at(b, o).unwrap_or(0);
        let d = |o: usize| DataDirectory {
            rva: u(o),
            size: u(o + 4),
        };
        Ok(CliHeader {
            file_offset,
            cb: u(0),
            major_runtime_version: u16_at(b, 4).unwrap_or(0),
            minor_runtime_version: u16_at(b, 6).unwrap_or(0),
            metadata: d(8),
            flags: u(16),
            entry_point: u(20),
            resources: d(24),
            strong_name_signature: d(32),
            code_manager_table: d(40),
            vtable_fixups: d(48),
            export_address_table_jumps: d(56),
            managed_native_header: d(64),
        })
    }
}

/// One stream header of the metadata root, with the stream's bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamHeader<'a> {
    /// The stream name (`#~`, `#Strings`, ...).
    pub name: &'a str,
    /// Offset of the stream from the metadata root.
    pub offset: u32,
    /// Size of the stream in bytes.
    pub size: u32,
    /// File offset of the stream.
    pub file_offset: usize,
    /// The stream's bytes.
    pub data: &'a [u8],
}

/// Longest stream name, including its NUL terminator (ECMA-335 §II.24.2.2).
const MAX_STREAM_NAME: usize = 32;

/// The metadata root: version string and stream headers.
#[derive(Debug, Clone)]
pub struct MetadataRoot<'a> {
    /// File offset of the root (the `BSJB` signature).
    pub file_offset: usize,
    /// The metadata bytes named by the CLI header.
    pub data: &'a [u8],
    /// `MajorVersion` (1).
    pub major_version: u16,
    /// `MinorVersion` (1).
    pub minor_version: u16,
    /// The version string, up to its first NUL (e.g. `v4.0.30319`).
    pub version: &'a str,
    /// `Flags` (reserved, 0).
    pub flags: u16,
    /// The stream headers in file order.
    pub streams: Vec<StreamHeader<'a>>,
}

impl<'a> MetadataRoot<'a> {
    /// Parses the root at the start of `data`, which lies at `file_offset` in the file.
    ///
    /// # Errors
    ///
    /// [`crate::Error::BadPe`] when the signature is not `BSJB`, the version string or a
    /// stream header is truncated or not UTF-8, a stream name has no NUL within 32 bytes,
    /// or a stream lies outside `data`.
    pub fn parse(data: &'a [u8], file_offset: usize) -> Result<Self> {
        let at = |o: usize| file_offset.saturating_add(o);
        if u32_at(data, 0) != Some(METADATA_SIGNATURE) {
            return Err(bad_pe(at(0), "missing BSJB metadata signature"));
        }
        let hdr = bytes_at(data, 0, 16).ok_or_else(|| bad_pe(at(0), "truncated metadata root"))?;
        let major_version = u16_at(hdr, 4).unwrap_or(0);
        let minor_version = u16_at(hdr, 6).unwrap_or(0);
        let version_len = u32_at(hdr, 12).unwrap_or(0) as usize;
        let version_bytes = bytes_at(data, 16, version_len)
            .ok_or_else(|| bad_pe(at(12), "metadata version string runs past the metadata"))?;
        let version_end = version_bytes
            .iter()
            .position(|&b| b == 0)
            .unwrap_or(version_bytes.len());
        let version = std::str::from_utf8(&version_bytes[..version_end])
            .map_err(|_| bad_pe(at(16), "metadata version string is not UTF-8"))?;
        let mut pos = 16 + version_len;
        let flags = u16_at(data, pos).ok_or_else(|| bad_pe(at(pos), "truncated metadata root"))?;
        let count =
            u16_at(data, pos + 2).ok_or_else(|| bad_pe(at(pos), "truncated metadata root"))?;
        pos += 4;

        let mut streams = Vec::with_capacity(usize::from(count).min(16));
        for _ in 0..count {
            let header_at = pos;
            let (Some(offset), Some(size)) = (u32_at(data, pos), u32_at(data, pos + 4)) else {
                return Err(bad_pe(at(header_at), "truncated stream header"));
            };
            pos += 8;
            let name_area = data.get(pos..).unwrap_or(&[]);
            let name_area = &name_area[..name_area.len().min(MAX_STREAM_NAME)];
            let name_len = name_area.iter().position(|&b| b == 0).ok_or_else(|| {
                bad_pe(at(pos), "stream name has no NUL terminator within 32 bytes")
            })?;
            let name = std::str::from_utf8(&name_area[..name_len])
                .map_err(|_| bad_pe(at(pos), "stream name is not UTF-8"))?;
            pos += (name_len + 1).next_multiple_of(4);
            let stream = (offset as usize)
                .checked_add(size as usize)
                .and_then(|end| data.get(offset as usize..end))
                .ok_or_else(|| bad_pe(at(header_at), "stream lies outside the metadata"))?;
            streams.push(StreamHeader {
                name,
                offset,
                size,
                file_offset: at(offset as usize),
                data: stream,
            });
        }
        Ok(MetadataRoot {
            file_offset,
            data,
            major_version,
            minor_version,
            version,
            flags,
            streams,
        })
    }

    /// The last stream named `name` (the CLR, too, lets a later duplicate win).
    pub fn stream(&self, name: &str) -> Option<&StreamHeader<'a>> {
        self.streams.iter().rev().find(|s| s.name == name)
    }
}

/// The metadata: root, heaps and tables.
#[derive(Debug, Clone)]
pub struct Metadata<'a> {
    /// The metadata root and its stream headers.
    pub root: MetadataRoot<'a>,
    /// `#Strings` (empty when absent).
    pub strings: StringsHeap<'a>,
    /// `#US` (empty when absent).
    pub user_strings: UserStringsHeap<'a>,
    /// `#GUID` (empty when absent).
    pub guids: GuidHeap<'a>,
    /// `#Blob` (empty when absent).
    pub blobs: BlobHeap<'a>,
    /// The table stream.
    pub tables: Tables<'a>,
    /// Whether the table stream is the uncompressed `#-` form (which may use the
    /// `*Ptr` indirection tables) rather than `#~`.
    pub uncompressed: bool,
}

impl<'a> Metadata<'a> {
    /// Parses the metadata the CLI header names: the root, the heaps and the table
    /// stream (`#~` or `#-`; if both are present the later one wins).
    ///
    /// # Errors
    ///
    /// [`crate::Error::BadPe`] when the metadata is not inside one section's raw data,
    /// the root is malformed, or there is no table stream or it is malformed.
    pub fn parse(pe: &PeFile<'a>, cli: &CliHeader) -> Result<Self> {
        let md = cli.metadata;
        let file_offset = pe.rva_to_offset(md.rva).ok_or_else(|| {
            bad_pe(
                cli.file_offset + 8,
                "metadata RVA lies outside every section's raw data",
            )
        })?;
        let data = pe.slice_rva(md.rva, md.size).ok_or_else(|| {
            bad_pe(
                cli.file_offset + 12,
                "metadata size runs past the end of its section",
            )
        })?;
        let root = MetadataRoot::parse(data, file_offset)?;
        let heap = |name: &str| {
            root.stream(name)
                .map_or((&[][..], root.file_offset), |s| (s.data, s.file_offset))
        };
        let (d, o) = heap("#Strings");
        let strings = StringsHeap::new(d, o);
        let (d, o) = heap("#US");
        let user_strings = UserStringsHeap::new(d, o);
        let (d, o) = heap("#GUID");
        let guids = GuidHeap::new(d, o);
        let (d, o) = heap("#Blob");
        let blobs = BlobHeap::new(d, o);
        let table_stream = root
            .streams
            .iter()
            .rev()
            .find(|s| s.name == "#~" || s.name == "#-")
            .ok_or_else(|| bad_pe(root.file_offset, "metadata has no #~ or #- table stream"))?;
        let uncompressed = table_stream.name == "#-";
        let tables = Tables::parse(table_stream.data, table_stream.file_offset)?;
        Ok(Metadata {
            strings,
            user_strings,
            guids,
            blobs,
            tables,
            uncompressed,
            root,
        })
    }
}

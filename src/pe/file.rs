//! PE/COFF container: DOS header, PE signature, COFF header, optional header (PE32 and
//! PE32+), data directories and section table, and RVA → file offset mapping.
//!
//! Everything is parsed once by [`PeFile::parse`]; afterwards every lookup is a bounds
//! checked view into the caller's buffer. Parsing guarantees that every section's raw
//! data lies inside the file, so any slice handed out by this module is in bounds.

use super::read::{bad_pe, bytes_at, u16_at, u32_at, u64_at};
use crate::error::Result;

/// `IMAGE_NT_OPTIONAL_HDR32_MAGIC`: a PE32 optional header.
pub const PE32_MAGIC: u16 = 0x10B;
/// `IMAGE_NT_OPTIONAL_HDR64_MAGIC`: a PE32+ optional header.
pub const PE32_PLUS_MAGIC: u16 = 0x20B;
/// Index of the CLI header (`IMAGE_DIRECTORY_ENTRY_COM_DESCRIPTOR`) in the data directories.
pub const CLI_HEADER_DIRECTORY: usize = 14;
/// Number of data directories this reader keeps (the Windows loader's limit too).
pub const MAX_DATA_DIRECTORIES: usize = 16;

const DOS_MAGIC: u16 = 0x5A4D; // "MZ"
const PE_SIGNATURE: u32 = 0x0000_4550; // "PE\0\0"
const COFF_HEADER_SIZE: usize = 20;
const SECTION_HEADER_SIZE: usize = 40;

/// An RVA and size pair from the optional header's data directories or the CLI header.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct DataDirectory {
    /// Relative virtual address of the data (0 when absent).
    pub rva: u32,
    /// Size of the data in bytes.
    pub size: u32,
}

impl DataDirectory {
    /// Whether the directory names no data (RVA 0 or size 0).
    pub fn is_empty(&self) -> bool {
        self.rva == 0 || self.size == 0
    }
}

/// One entry of the section table, as stored in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SectionHeader {
    /// The 8-byte name field, NUL padded.
    pub name: [u8; 8],
    /// `VirtualSize`: bytes the section occupies in memory.
    pub virtual_size: u32,
    /// `VirtualAddress`: RVA of the section's first byte.
    pub virtual_address: u32,
    /// `SizeOfRawData`: bytes of initialised data in the file.
    pub size_of_raw_data: u32,
    /// `PointerToRawData`: file offset of the raw data.
    pub pointer_to_raw_data: u32,
    /// `Characteristics` flags.
    pub characteristics: u32,
}

impl SectionHeader {
    /// The name with trailing NUL padding removed (bytes; not necessarily UTF-8).
    pub fn name(&self) -> &[u8] {
        let end = self.name.iter().position(|&b| b == 0).unwrap_or(8);
        &self.name[..end]
    }

    /// Bytes of address space the section covers starting at its RVA: the larger of
    /// `VirtualSize` and `SizeOfRawData` (linkers leave either one zero or short).
    pub fn extent(&self) -> u32 {
        self.virtual_size.max(self.size_of_raw_data)
    }

    /// Whether `rva` falls inside [`extent`](Self::extent) of this section.
    pub fn contains_rva(&self, rva: u32) -> bool {
        rva >= self.virtual_address && rva - self.virtual_address < self.extent()
    }
}

/// A parsed PE/COFF image borrowing the file's bytes.
///
/// Guarantees: the headers and the whole section table are inside the file, and every
/// section's raw data (`PointerToRawData .. + SizeOfRawData`) is inside the file.
#[derive(Debug, Clone)]
pub struct PeFile<'a> {
    data: &'a [u8],
    pe_offset: usize,
    machine: u16,
    characteristics: u16,
    time_date_stamp: u32,
    pe32_plus: bool,
    image_base: u64,
    section_alignment: u32,
    file_alignment: u32,
    size_of_image: u32,
    size_of_headers: u32,
    subsystem: u16,
    dll_characteristics: u16,
    directories: [DataDirectory; MAX_DATA_DIRECTORIES],
    directory_count: usize,
    directories_offset: usize,
    sections: Vec<SectionHeader>,
    section_table_offset: usize,
}

impl<'a> PeFile<'a> {
    /// Parses the DOS header, PE signature, COFF header, optional header, data
    /// directories and section table.
    ///
    /// # Errors
    ///
    /// [`crate::Error::BadPe`], with the offset of the offending field, when a
    /// signature or magic is wrong, a structure is truncated, the optional header is too
    /// small for its data directories, or a section's raw data lies outside the file.
    pub fn parse(data: &'a [u8]) -> Result<Self> {
        if u16_at(data, 0) != Some(DOS_MAGIC) {
            return Err(bad_pe(0, "missing MZ signature"));
        }
        let e_lfanew = u32_at(data, 0x3C).ok_or_else(|| bad_pe(0x3C, "truncated DOS header"))?;
        let pe_offset = e_lfanew as usize;
        match u32_at(data, pe_offset) {
            Some(PE_SIGNATURE) => {}
            Some(_) => return Err(bad_pe(pe_offset, "missing PE\\0\\0 signature")),
            None => return Err(bad_pe(0x3C, "e_lfanew points past the end of the file")),
        }
        let coff = pe_offset + 4;
        let coff_bytes = bytes_at(data, coff, COFF_HEADER_SIZE)
            .ok_or_else(|| bad_pe(coff, "truncated COFF header"))?;
        let field16 = |o: usize| u16::from_le_bytes([coff_bytes[o], coff_bytes[o + 1]]);
        let machine = field16(0);
        let number_of_sections = usize::from(field16(2));
        let time_date_stamp = u32_at(coff_bytes, 4).unwrap_or(0);
        let size_of_optional_header = usize::from(field16(16));
        let characteristics = field16(18);

        let opt = coff + COFF_HEADER_SIZE;
        let opt_bytes = bytes_at(data, opt, size_of_optional_header)
            .ok_or_else(|| bad_pe(opt, "truncated optional header"))?;
        let magic = u16_at(opt_bytes, 0)
            .ok_or_else(|| bad_pe(coff + 16, "optional header too small for its magic"))?;
        let (pe32_plus, fixed_size, count_at) = match magic {
            PE32_MAGIC => (false, 96, 92),
            PE32_PLUS_MAGIC => (true, 112, 108),
            _ => return Err(bad_pe(opt, "unknown optional header magic")),
        };
        if size_of_optional_header < fixed_size {
            return Err(bad_pe(
                coff + 16,
                "SizeOfOptionalHeader too small for its magic",
            ));
        }
        let o32 = |o: usize| u32_at(opt_bytes, o).unwrap_or(0);
        let image_base = if pe32_plus {
            u64_at(opt_bytes, 24).unwrap_or(0)
        } else {
            u64::from(o32(28))
        };
        let declared_dirs = o32(count_at) as usize;
        let directory_count = declared_dirs.min(MAX_DATA_DIRECTORIES);
        if fixed_size + directory_count * 8 > size_of_optional_header {
            return Err(bad_pe(
                opt + count_at,
                "NumberOfRvaAndSizes does not fit SizeOfOptionalHeader",
            ));
        }
        let mut directories = [DataDirectory::default(); MAX_DATA_DIRECTORIES];
        for (i, dir) in directories.iter_mut().enumerate().take(directory_count) {
            let at = fixed_size + i * 8;
            *dir = DataDirectory {
                rva: o32(at),
                size: o32(at + 4),
            };
        }

        let section_table_offset = opt + size_of_optional_header;
        let table = bytes_at(
            data,
            section_table_offset,
            number_of_sections * SECTION_HEADER_SIZE,
        )
        .ok_or_else(|| bad_pe(section_table_offset, "truncated section table"))?;
        let mut sections = Vec::with_capacity(number_of_sections);
        for (i, raw) in table.chunks_exact(SECTION_HEADER_SIZE).enumerate() {
            let mut name = [0u8; 8];
            name.copy_from_slice(&raw[..8]);
            let f = |o: usize| u32_at(raw, o).unwrap_or(0);
            let s = SectionHeader {
                name,
                virtual_size: f(8),
                virtual_address: f(12),
                size_of_raw_data: f(16),
                pointer_to_raw_data: f(20),
                characteristics: f(36),
            };
            let end = u64::from(s.pointer_to_raw_data) + u64::from(s.size_of_raw_data);
            if s.size_of_raw_data != 0 && end > data.len() as u64 {
                return Err(bad_pe(
                    section_table_offset + i * SECTION_HEADER_SIZE + 16,
                    "section raw data runs past the end of the file",
                ));
            }
            sections.push(s);
        }

        Ok(PeFile {
            data,
            pe_offset,
            machine,
            characteristics,
            time_date_stamp,
            pe32_plus,
            image_base,
            section_alignment: o32(32),
            file_alignment: o32(36),
            size_of_image: o32(56),
            size_of_headers: o32(60),
            subsystem: u16_at(opt_bytes, 68).unwrap_or(0),
            dll_characteristics: u16_at(opt_bytes, 70).unwrap_or(0),
            directories,
            directory_count,
            directories_offset: opt + fixed_size,
            sections,
            section_table_offset,
        })
    }

    /// The whole file.
    pub fn data(&self) -> &'a [u8] {
        self.data
    }

    /// File offset of the `PE\0\0` signature (`e_lfanew`).
    pub fn pe_offset(&self) -> usize {
        self.pe_offset
    }

    /// COFF `Machine` (0x14C i386, 0x8664 AMD64, 0xAA64 ARM64, ...; R2R images on
    /// non-Windows hosts XOR it with an OS value).
    pub fn machine(&self) -> u16 {
        self.machine
    }

    /// COFF `Characteristics` flags.
    pub fn characteristics(&self) -> u16 {
        self.characteristics
    }

    /// COFF `TimeDateStamp` (a hash in deterministic builds).
    pub fn time_date_stamp(&self) -> u32 {
        self.time_date_stamp
    }

    /// Whether the optional header is PE32+ (magic 0x20B) rather than PE32 (0x10B).
    pub fn is_pe32_plus(&self) -> bool {
        self.pe32_plus
    }

    /// `ImageBase` (widened to 64 bits for PE32).
    pub fn image_base(&self) -> u64 {
        self.image_base
    }

    /// `SectionAlignment`.
    pub fn section_alignment(&self) -> u32 {
        self.section_alignment
    }

    /// `FileAlignment`.
    pub fn file_alignment(&self) -> u32 {
        self.file_alignment
    }

    /// `SizeOfImage`.
    pub fn size_of_image(&self) -> u32 {
        self.size_of_image
    }

    /// `SizeOfHeaders`.
    pub fn size_of_headers(&self) -> u32 {
        self.size_of_headers
    }

    /// `Subsystem`.
    pub fn subsystem(&self) -> u16 {
        self.subsystem
    }

    /// `DllCharacteristics`.
    pub fn dll_characteristics(&self) -> u16 {
        self.dll_characteristics
    }

    /// The data directories present (at most [`MAX_DATA_DIRECTORIES`]).
    pub fn data_directories(&self) -> &[DataDirectory] {
        &self.directories[..self.directory_count]
    }

    /// Data directory `index`, or `None` when the optional header has fewer entries.
    pub fn data_directory(&self, index: usize) -> Option<DataDirectory> {
        self.data_directories().get(index).copied()
    }

    /// File offset of data directory `index`'s entry in the optional header (whether or
    /// not the header has that many entries).
    pub fn data_directory_offset(&self, index: usize) -> usize {
        self.directories_offset + index * 8
    }

    /// The section table in file order.
    pub fn sections(&self) -> &[SectionHeader] {
        &self.sections
    }

    /// File offset of the section table.
    pub fn section_table_offset(&self) -> usize {
        self.section_table_offset
    }

    /// The first section (in table order) whose extent contains `rva`.
    pub fn section_for_rva(&self, rva: u32) -> Option<&SectionHeader> {
        self.sections.iter().find(|s| s.contains_rva(rva))
    }

    /// Maps `rva` to a file offset.
    ///
    /// `None` when no section contains `rva`, or `rva` lies in the zero-filled tail of a
    /// section (past `SizeOfRawData`), which has no bytes in the file. A `Some` offset is
    /// always `< data().len()`.
    pub fn rva_to_offset(&self, rva: u32) -> Option<usize> {
        let s = self.section_for_rva(rva)?;
        let delta = rva - s.virtual_address;
        (delta < s.size_of_raw_data).then(|| s.pointer_to_raw_data as usize + delta as usize)
    }

    /// The bytes from `rva` to the end of its section's raw data (never empty).
    ///
    /// `None` under the same conditions as [`rva_to_offset`](Self::rva_to_offset).
    pub fn slice_at_rva(&self, rva: u32) -> Option<&'a [u8]> {
        let s = self.section_for_rva(rva)?;
        let delta = rva - s.virtual_address;
        if delta >= s.size_of_raw_data {
            return None;
        }
        let start = s.pointer_to_raw_data as usize + delta as usize;
        let end = s.pointer_to_raw_data as usize + s.size_of_raw_data as usize;
        self.data.get(start..end)
    }

    /// Exactly `size` bytes at `rva`, which must all lie in one section's raw data.
    pub fn slice_rva(&self, rva: u32, size: u32) -> Option<&'a [u8]> {
        self.slice_at_rva(rva)?.get(..size as usize)
    }
}

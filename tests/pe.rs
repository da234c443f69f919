//! Tests of the PE/metadata reader: a hand-built minimal image (valid and malformed),
//! property tests that mutate it, and tests against the real .NET Core 3.1 framework
//! assemblies (provisioned by `ilrewrite-corpus` on first use).
#![cfg(feature = "pe")]

use ilrewrite::Error;
use ilrewrite::metadata::{MemberName, MetadataSource, TypeName};
use ilrewrite::pe::{Assembly, TableId};
use proptest::prelude::*;
use std::collections::HashSet;
use std::path::PathBuf;

mod clr_support;
use clr_support::{Runtime, for_each_runtime};

// ---- a minimal .NET image, built in memory ------------------------------------------

/// Knobs for [`build`].
#[derive(Debug, Clone, Copy, Default)]
struct Opts {
    /// PE32+ optional header instead of PE32.
    pe32_plus: bool,
    /// Uncompressed `#-` table stream with a MethodPtr table permuting the methods.
    method_ptr: bool,
    /// Set HeapSizes bit 0x40 and add the 4-byte extra-data field.
    extra_data: bool,
}

/// The built image and the file offsets tests patch.
#[derive(Debug, Clone)]
struct Image {
    bytes: Vec<u8>,
    opt: usize,
    size_of_opt: usize,
    section_table: usize,
    cli: usize,
    md: usize,
    md_len: usize,
    stream_headers: usize,
    tables: usize,
    row_counts: usize,
    strings: usize,
    blobs: usize,
    method_rows: usize,
    body1_rva: u32,
    body2_rva: u32,
}

const TEXT_RAW: usize = 0x200;
const TEXT_RVA: u32 = 0x2000;

fn put16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_le_bytes());
}
fn put32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}
fn get32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}
fn align(v: &mut Vec<u8>, to: usize) {
    while v.len() % to != 0 {
        v.push(0);
    }
}

/// An append-only heap that hands out the index of each added item.
struct Heap(Vec<u8>);
impl Heap {
    fn string(&mut self, s: &str) -> u32 {
        let i = self.0.len() as u32;
        self.0.extend_from_slice(s.as_bytes());
        self.0.push(0);
        i
    }
    fn blob(&mut self, b: &[u8]) -> u32 {
        assert!(b.len() < 0x80);
        let i = self.0.len() as u32;
        self.0.push(b.len() as u8);
        self.0.extend_from_slice(b);
        i
    }
}

/// Cells of one row: (value, width in bytes).
type RowCells = Vec<(u32, usize)>;

fn build(o: Opts) -> Image {
    // ---- heaps
    let mut strings = Heap(vec![0]);
    let mut blobs = Heap(vec![0]);
    let s_module = strings.string("Test.dll");
    let s_console = strings.string("Console");
    let s_system = strings.string("System");
    let s_modty = strings.string("<Module>");
    let s_foo = strings.string("Foo");
    let s_ns = strings.string("Ns");
    let s_bar = strings.string("Bar");
    let s_count = strings.string("count");
    let s_main = strings.string("Main");
    let s_abs = strings.string("Abs");
    let s_gen = strings.string("Gen");
    let s_writeline = strings.string("WriteLine");
    let s_runtime = strings.string("System.Runtime");
    let s_t = strings.string("T");
    align(&mut strings.0, 4);
    let b_field = blobs.blob(&[0x06, 0x08]);
    let b_main = blobs.blob(&[0x00, 0x00, 0x01]);
    let b_abs = blobs.blob(&[0x20, 0x00, 0x01]);
    let b_gen = blobs.blob(&[0x10, 0x01, 0x00, 0x01]);
    let b_writeline = blobs.blob(&[0x00, 0x01, 0x01, 0x0E]);
    let b_locals = blobs.blob(&[0x07, 0x01, 0x08]);
    let b_typespec = blobs.blob(&[0x15, 0x12, 0x05, 0x01, 0x08]);
    let b_inst = blobs.blob(&[0x0A, 0x01, 0x08]);
    align(&mut blobs.0, 4);
    let mut us = vec![0u8, 11];
    for c in "Hello".encode_utf16() {
        us.extend_from_slice(&c.to_le_bytes());
    }
    us.push(0);
    align(&mut us, 4);
    let guid: Vec<u8> = (1..=16).collect();

    // ---- .text layout: CLI header, two method bodies, metadata
    let mut text = vec![0u8; 72];
    let body1 = text.len();
    // tiny header (7 bytes of code): ldstr 0x70000001; pop; ret
    text.extend_from_slice(&[0x1E, 0x72, 0x01, 0, 0, 0x70, 0x26, 0x2A]);
    align(&mut text, 4);
    let body2 = text.len();
    text.extend_from_slice(&[0x06, 0x2A]); // tiny: ret
    align(&mut text, 4);
    let body1_rva = TEXT_RVA + body1 as u32;
    let body2_rva = TEXT_RVA + body2 as u32;

    // ---- tables
    let w2 = |v: u32| (v, 2usize);
    let w4 = |v: u32| (v, 4usize);
    let mut tables: Vec<(TableId, Vec<RowCells>)> = vec![
        (
            TableId::Module,
            vec![vec![w2(0), w2(s_module), w2(1), w2(0), w2(0)]],
        ),
        (
            TableId::TypeRef,
            // Resolution scope: AssemblyRef row 1 (tag 2).
            vec![vec![w2((1 << 2) | 2), w2(s_console), w2(s_system)]],
        ),
        (
            TableId::TypeDef,
            vec![
                vec![w4(0), w2(s_modty), w2(0), w2(0), w2(1), w2(1)],
                vec![w4(0x0010_0001), w2(s_foo), w2(s_ns), w2(5), w2(1), w2(1)],
                vec![w4(0x0000_0002), w2(s_bar), w2(0), w2(5), w2(2), w2(3)],
            ],
        ),
        (TableId::Field, vec![vec![w2(1), w2(s_count), w2(b_field)]]),
        (
            TableId::MethodDef,
            vec![
                vec![
                    w4(body1_rva),
                    w2(0),
                    w2(0x96),
                    w2(s_main),
                    w2(b_main),
                    w2(1),
                ],
                vec![w4(0), w2(0), w2(0x5C6), w2(s_abs), w2(b_abs), w2(1)],
                vec![w4(body2_rva), w2(0), w2(0x96), w2(s_gen), w2(b_gen), w2(1)],
            ],
        ),
        (
            TableId::MemberRef,
            vec![vec![w2((1 << 3) | 1), w2(s_writeline), w2(b_writeline)]],
        ),
        (TableId::StandAloneSig, vec![vec![w2(b_locals)]]),
        (TableId::TypeSpec, vec![vec![w2(b_typespec)]]),
        (
            TableId::AssemblyRef,
            vec![vec![
                w2(4),
                w2(0),
                w2(0),
                w2(0),
                w4(0),
                w2(0),
                w2(s_runtime),
                w2(0),
                w2(0),
            ]],
        ),
        (TableId::NestedClass, vec![vec![w2(3), w2(2)]]),
        // T of method Gen (TypeOrMethodDef: MethodDef row 3, tag 1).
        (
            TableId::GenericParam,
            vec![vec![w2(0), w2(0), w2((3 << 1) | 1), w2(s_t)]],
        ),
        (TableId::MethodSpec, vec![vec![w2(3 << 1), w2(b_inst)]]),
    ];
    if o.method_ptr {
        tables.push((
            TableId::MethodPtr,
            vec![vec![w2(3)], vec![w2(1)], vec![w2(2)]],
        ));
    }
    tables.sort_by_key(|(t, _)| *t);
    let mut ts = vec![0, 0, 0, 0, 2, 0, if o.extra_data { 0x40 } else { 0 }, 1];
    let valid: u64 = tables.iter().map(|(t, _)| 1u64 << *t as u32).sum();
    let sorted: u64 = 1 << TableId::NestedClass as u32 | 1 << TableId::GenericParam as u32;
    ts.extend_from_slice(&valid.to_le_bytes());
    ts.extend_from_slice(&sorted.to_le_bytes());
    let row_counts_rel = ts.len();
    for (_, rows) in &tables {
        ts.extend_from_slice(&(rows.len() as u32).to_le_bytes());
    }
    if o.extra_data {
        ts.extend_from_slice(&0x1234_5678u32.to_le_bytes());
    }
    let mut method_rows_rel = 0;
    for (t, rows) in &tables {
        if *t == TableId::MethodDef {
            method_rows_rel = ts.len();
        }
        for row in rows {
            for &(v, w) in row {
                ts.extend_from_slice(&v.to_le_bytes()[..w]);
            }
        }
    }
    align(&mut ts, 4);

    // ---- metadata root
    let table_name = if o.method_ptr { "#-" } else { "#~" };
    let streams: Vec<(&str, &[u8])> = vec![
        (table_name, &ts),
        ("#Strings", &strings.0),
        ("#US", &us),
        ("#GUID", &guid),
        ("#Blob", &blobs.0),
    ];
    let mut md = Vec::new();
    md.extend_from_slice(&0x424A_5342u32.to_le_bytes());
    md.extend_from_slice(&[1, 0, 1, 0, 0, 0, 0, 0]);
    md.extend_from_slice(&12u32.to_le_bytes());
    md.extend_from_slice(b"v4.0.30319\0\0");
    md.extend_from_slice(&[0, 0]);
    md.extend_from_slice(&(streams.len() as u16).to_le_bytes());
    let stream_headers_rel = md.len();
    let headers_len: usize = streams
        .iter()
        .map(|(n, _)| 8 + (n.len() + 1).next_multiple_of(4))
        .sum();
    let mut offset = md.len() + headers_len;
    let mut offsets = Vec::new();
    for (name, data) in &streams {
        md.extend_from_slice(&(offset as u32).to_le_bytes());
        md.extend_from_slice(&(data.len() as u32).to_le_bytes());
        md.extend_from_slice(name.as_bytes());
        md.push(0);
        align(&mut md, 4);
        offsets.push(offset);
        offset += data.len();
    }
    for (_, data) in &streams {
        md.extend_from_slice(data);
    }
    let md_rel = text.len();
    let md_len = md.len();
    text.extend_from_slice(&md);

    // ---- CLI header
    put32(&mut text, 0, 72);
    put16(&mut text, 4, 2);
    put16(&mut text, 6, 5);
    put32(&mut text, 8, TEXT_RVA + md_rel as u32);
    put32(&mut text, 12, md_len as u32);
    put32(&mut text, 16, 1);
    put32(&mut text, 20, 0x0600_0001);

    // ---- PE headers
    let mut f = vec![0u8; TEXT_RAW];
    f[0] = b'M';
    f[1] = b'Z';
    put32(&mut f, 0x3C, 0x40);
    f[0x40..0x44].copy_from_slice(b"PE\0\0");
    let coff = 0x44;
    let (magic, fixed) = if o.pe32_plus {
        (0x20B, 112)
    } else {
        (0x10B, 96)
    };
    let size_of_opt = fixed + 16 * 8;
    put16(&mut f, coff, if o.pe32_plus { 0x8664 } else { 0x14C });
    put16(&mut f, coff + 2, 1);
    put16(&mut f, coff + 16, size_of_opt as u16);
    put16(&mut f, coff + 18, 0x2022);
    let opt = coff + 20;
    put16(&mut f, opt, magic);
    put32(&mut f, opt + 32, 0x2000);
    put32(&mut f, opt + 36, 0x200);
    put32(&mut f, opt + 60, 0x200);
    put32(&mut f, opt + fixed - 4, 16);
    let cli_dir = opt + fixed + 14 * 8;
    put32(&mut f, cli_dir, TEXT_RVA);
    put32(&mut f, cli_dir + 4, 72);
    let section_table = opt + size_of_opt;
    f[section_table..section_table + 8].copy_from_slice(b".text\0\0\0");
    let raw_size = text.len().next_multiple_of(0x200);
    put32(&mut f, section_table + 8, text.len() as u32);
    put32(&mut f, section_table + 12, TEXT_RVA);
    put32(&mut f, section_table + 16, raw_size as u32);
    put32(&mut f, section_table + 20, TEXT_RAW as u32);
    put32(&mut f, section_table + 36, 0x6000_0020);
    put32(&mut f, opt + 56, TEXT_RVA + raw_size as u32);
    text.resize(raw_size, 0);
    f.extend_from_slice(&text);

    let md = TEXT_RAW + md_rel;
    let tables_at = md + offsets[0];
    Image {
        bytes: f,
        opt,
        size_of_opt,
        section_table,
        cli: TEXT_RAW,
        md,
        md_len,
        stream_headers: md + stream_headers_rel,
        tables: tables_at,
        row_counts: tables_at + row_counts_rel,
        strings: md + offsets[1],
        blobs: md + offsets[4],
        method_rows: tables_at + method_rows_rel,
        body1_rva,
        body2_rva,
    }
}

fn all_opts() -> Vec<Opts> {
    let mut v = Vec::new();
    for pe32_plus in [false, true] {
        for method_ptr in [false, true] {
            for extra_data in [false, true] {
                v.push(Opts {
                    pe32_plus,
                    method_ptr,
                    extra_data,
                });
            }
        }
    }
    v
}

/// Calls every accessor on every row, token and column of `asm`; returns how many
/// accessor calls succeeded. Used to prove that nothing panics on malformed input.
fn exercise(asm: &Assembly<'_>) -> usize {
    let mut ok = 0usize;
    let mut count = |r: bool| ok += usize::from(r);
    let _ = asm.version();
    count(asm.module_name().is_ok());
    count(asm.assembly_name().is_ok());
    count(asm.assembly_version().is_ok());
    let _ = asm.is_ready_to_run();
    let mut unique = HashSet::new();
    for m in asm.methods() {
        if let Ok(m) = m {
            unique.insert(m.rva);
            if let Some(b) = m.body {
                assert!(!b.is_empty());
                assert_eq!(asm.offset_of(b), m.body_offset);
            }
            count(asm.method(m.token).is_ok());
        } else {
            count(false);
        }
    }
    for t in TableId::ALL {
        let n = asm.row_count(t);
        for rid in 0..=n.min(2000) + 1 {
            if let Ok(row) = asm.row(t, rid) {
                for c in 0..=row.column_count() {
                    let _ = row.get(c);
                    let _ = row.coded(c);
                }
            }
            let token = t.token(rid);
            count(asm.call_site_signature(token).is_ok());
            count(asm.type_name(token).is_ok());
            count(asm.member_name(token).is_ok());
            count(asm.standalone_sig(token).is_ok());
            count(asm.type_spec(token).is_ok());
            count(asm.enclosing_type(token).is_ok());
            count(asm.declaring_type(token).is_ok());
            count(asm.row_of_token(token).is_ok());
            count(asm.field_declaring_type(token).is_ok());
            count(asm.member_ref_parent(token).is_ok());
            count(asm.resolution_scope(token).is_ok());
            count(asm.scope_name(token).is_ok());
            count(asm.generic_param(token, 0).is_ok());
            count(MetadataSource::type_name(asm, token).is_ok());
            count(MetadataSource::member_name(asm, token).is_ok());
            count(MetadataSource::user_string(asm, token).is_ok());
            count(MetadataSource::generic_param_name(asm, token, 0).is_some());
        }
    }
    for i in [0u32, 1, 2, 3, 0xFF_FFFF] {
        count(asm.user_string(0x7000_0000 | i).is_ok());
    }
    ok + unique.len()
}

fn parse(bytes: &[u8]) -> ilrewrite::Result<Assembly<'_>> {
    Assembly::parse(bytes)
}

fn bad_pe_offset(r: ilrewrite::Result<impl std::fmt::Debug>) -> (usize, &'static str) {
    match r {
        Err(Error::BadPe { offset, what }) => (offset, what),
        other => panic!("expected BadPe, got {other:?}"),
    }
}

// ---- the valid image ----------------------------------------------------------------

#[test]
fn minimal_image_reads_back() {
    for o in all_opts() {
        let img = build(o);
        let asm = parse(&img.bytes).unwrap_or_else(|e| panic!("{o:?}: {e}"));
        assert_eq!(asm.version(), "v4.0.30319");
        assert_eq!(asm.module_name().unwrap(), "Test.dll");
        assert_eq!(asm.assembly_name().unwrap(), None);
        assert_eq!(asm.assembly_version().unwrap(), None);
        assert_eq!(asm.pe().is_pe32_plus(), o.pe32_plus);
        assert_eq!(asm.metadata().uncompressed, o.method_ptr);
        assert_eq!(
            asm.tables().extra_data(),
            o.extra_data.then_some(0x1234_5678)
        );
        assert!(!asm.is_ready_to_run());
        assert_eq!(asm.cli_header().entry_point, 0x0600_0001);
        assert_eq!(asm.row_count(TableId::MethodDef), 3);
        assert_eq!(asm.row_count(TableId::TypeDef), 3);
        assert_eq!(asm.row_count(TableId::Assembly), 0);
        assert_eq!(asm.pe().sections()[0].name(), b".text");

        let methods: Vec<_> = asm.methods().map(Result::unwrap).collect();
        assert_eq!(asm.methods().len(), 3);
        let names: Vec<_> = methods.iter().map(|m| m.name).collect();
        assert_eq!(names, ["Main", "Abs", "Gen"]);
        let owners: Vec<_> = methods
            .iter()
            .map(|m| m.declaring_type.unwrap().to_string())
            .collect();
        if o.method_ptr {
            // MethodPtr = [3, 1, 2]: Foo owns positions 1-2 (methods 3, 1), Bar owns 3.
            assert_eq!(owners, ["Ns.Foo", "Bar", "Ns.Foo"]);
        } else {
            assert_eq!(owners, ["Ns.Foo", "Ns.Foo", "Bar"]);
        }
        for m in &methods {
            assert_eq!(asm.method(m.token).unwrap(), *m);
            assert_eq!(
                asm.declaring_type(m.token).unwrap(),
                m.declaring_type.map(|t| t.token)
            );
            assert!(m.is_il());
        }
        assert_eq!(methods[0].token, 0x0600_0001);
        assert_eq!(methods[0].rva, img.body1_rva);
        assert_eq!(methods[0].body.unwrap()[..2], [0x1E, 0x72]);
        assert_eq!(
            methods[0].body_offset,
            Some(TEXT_RAW + (img.body1_rva - TEXT_RVA) as usize)
        );
        assert_eq!(methods[1].rva, 0);
        assert_eq!(methods[1].body, None);
        assert_eq!(methods[1].flags, 0x5C6);
        assert_eq!(methods[2].rva, img.body2_rva);
        assert_eq!(methods[2].body.unwrap()[..2], [0x06, 0x2A]);
        assert_eq!(methods[0].signature, [0x00, 0x00, 0x01]);

        assert_eq!(
            asm.call_site_signature(0x0600_0003).unwrap(),
            [0x10, 1, 0, 1]
        );
        assert_eq!(
            asm.call_site_signature(0x0A00_0001).unwrap(),
            [0, 1, 1, 0x0E]
        );
        assert_eq!(
            asm.call_site_signature(0x2B00_0001).unwrap(),
            [0x10, 1, 0, 1]
        );
        assert_eq!(asm.call_site_signature(0x1100_0001).unwrap(), [7, 1, 8]);
        assert_eq!(asm.standalone_sig(0x1100_0001).unwrap(), [7, 1, 8]);
        assert_eq!(asm.type_spec(0x1B00_0001).unwrap(), [0x15, 0x12, 5, 1, 8]);
        assert_eq!(asm.method_spec_method(0x2B00_0001).unwrap(), 0x0600_0003);
        assert_eq!(
            asm.method_spec_instantiation(0x2B00_0001).unwrap(),
            [0x0A, 1, 8]
        );
        let s = asm.user_string(0x7000_0001).unwrap();
        assert_eq!(s.to_string_lossy(), "Hello");
        assert_eq!(s.trailing, Some(0));
        assert_eq!(asm.type_name(0x0200_0002).unwrap().to_string(), "Ns.Foo");
        assert_eq!(
            asm.type_name(0x0100_0001).unwrap().to_string(),
            "System.Console"
        );
        assert_eq!(asm.member_name(0x0600_0002).unwrap(), "Abs");
        assert_eq!(asm.member_name(0x0A00_0001).unwrap(), "WriteLine");
        assert_eq!(asm.member_name(0x0400_0001).unwrap(), "count");
        assert_eq!(asm.member_name(0x2B00_0001).unwrap(), "Gen");
        assert_eq!(asm.enclosing_type(0x0200_0003).unwrap(), Some(0x0200_0002));
        assert_eq!(asm.enclosing_type(0x0200_0002).unwrap(), None);
        assert_names(&asm, o);
        let row = asm.row(TableId::MemberRef, 1).unwrap();
        assert_eq!(row.coded(0), Some((TableId::TypeRef, 1)));
        assert_eq!(row.token(), 0x0A00_0001);
        assert_eq!(asm.metadata().guids.get(1).unwrap().unwrap()[0], 1);
        assert!(exercise(&asm) > 0);
    }
}

/// The names the minimal image gives through [`MetadataSource`].
fn assert_names(asm: &Assembly<'_>, o: Opts) {
    let md: &dyn MetadataSource = asm;
    let ty = |namespace: &str, name: &str, enclosing, assembly: Option<&str>| TypeName {
        namespace: namespace.into(),
        name: name.into(),
        enclosing,
        assembly: assembly.map(Into::into),
    };
    assert_eq!(
        md.type_name(0x0100_0001).unwrap(),
        ty("System", "Console", None, Some("System.Runtime"))
    );
    assert_eq!(
        md.type_name(0x0200_0002).unwrap(),
        ty("Ns", "Foo", None, None)
    );
    assert_eq!(
        md.type_name(0x0200_0003).unwrap(),
        ty("", "Bar", Some(0x0200_0002), None)
    );
    assert_eq!(
        md.type_name(0x0200_0001).unwrap(),
        ty("", "<Module>", None, None)
    );
    assert!(md.type_name(0x1B00_0001).is_err());
    let member = |owner, name: &str| MemberName {
        owner,
        name: name.into(),
    };
    assert_eq!(
        md.member_name(0x0400_0001).unwrap(),
        member(Some(0x0200_0002), "count")
    );
    assert_eq!(
        md.member_name(0x0A00_0001).unwrap(),
        member(Some(0x0100_0001), "WriteLine")
    );
    let (abs_owner, gen_owner) = if o.method_ptr {
        (0x0200_0003, 0x0200_0002)
    } else {
        (0x0200_0002, 0x0200_0003)
    };
    assert_eq!(
        md.member_name(0x0600_0002).unwrap(),
        member(Some(abs_owner), "Abs")
    );
    assert_eq!(
        md.member_name(0x0600_0003).unwrap(),
        member(Some(gen_owner), "Gen")
    );
    assert!(md.member_name(0x2B00_0001).is_err());
    assert!(md.member_name(0x0400_0002).is_err());
    assert_eq!(
        md.user_string(0x7000_0001).unwrap(),
        "Hello".encode_utf16().collect::<Vec<_>>()
    );
    assert!(md.user_string(0x0100_0001).is_err());
    assert_eq!(md.generic_param_name(0x0600_0003, 0).as_deref(), Some("T"));
    assert_eq!(md.generic_param_name(0x0600_0003, 1), None);
    assert_eq!(md.generic_param_name(0x0600_0001, 0), None);
    assert_eq!(md.generic_param_name(0x0200_0002, 0), None);
    assert_eq!(md.generic_param_name(0x0A00_0001, 0), None);
    assert_eq!(asm.resolution_scope(0x0100_0001).unwrap(), 0x2300_0001);
    assert_eq!(asm.scope_name(0x2300_0001).unwrap(), "System.Runtime");
    assert_eq!(asm.member_ref_parent(0x0A00_0001).unwrap(), 0x0100_0001);
    assert_eq!(
        asm.field_declaring_type(0x0400_0001).unwrap(),
        Some(0x0200_0002)
    );
    assert_eq!(
        asm.generic_param(0x0600_0003, 0).unwrap(),
        Some(0x2A00_0001)
    );
}

// ---- malformed inputs ---------------------------------------------------------------

#[test]
fn empty_and_tiny_files() {
    assert_eq!(bad_pe_offset(parse(&[])), (0, "missing MZ signature"));
    assert_eq!(bad_pe_offset(parse(b"MZ")), (0x3C, "truncated DOS header"));
    assert_eq!(bad_pe_offset(parse(b"ZM")), (0, "missing MZ signature"));
    let mut dos = vec![0u8; 0x40];
    dos[..2].copy_from_slice(b"MZ");
    put32(&mut dos, 0x3C, 0xFFFF_FFFF);
    assert_eq!(bad_pe_offset(parse(&dos)).0, 0x3C);
}

#[test]
fn bad_signatures_and_headers() {
    let img = build(Opts::default());

    let mut b = img.bytes.clone();
    b[0x41] = b'X';
    assert_eq!(
        bad_pe_offset(parse(&b)),
        (0x40, "missing PE\\0\\0 signature")
    );

    let mut b = img.bytes.clone();
    let len = b.len() as u32;
    put32(&mut b, 0x3C, len - 2);
    assert_eq!(bad_pe_offset(parse(&b)).0, 0x3C);

    let mut b = img.bytes.clone();
    put16(&mut b, img.opt, 0x107);
    assert_eq!(
        bad_pe_offset(parse(&b)),
        (img.opt, "unknown optional header magic")
    );

    let mut b = img.bytes.clone();
    put16(&mut b, 0x44 + 16, 64); // SizeOfOptionalHeader below the PE32 fixed part
    assert_eq!(bad_pe_offset(parse(&b)).0, 0x44 + 16);

    let mut b = img.bytes.clone();
    put16(&mut b, 0x44 + 16, 0xFFFF); // optional header runs past the end of the file
    assert_eq!(bad_pe_offset(parse(&b)).1, "truncated optional header");

    let mut b = img.bytes.clone();
    put32(&mut b, img.opt + 92, 14); // no CLI header directory
    assert_eq!(
        bad_pe_offset(parse(&b)),
        (img.opt + 96 + 14 * 8, "no CLI header: not a .NET image")
    );

    let mut b = img.bytes.clone();
    put32(&mut b, img.opt + 92, 0xFFFF_FFFF); // clamped to 16: fine
    assert!(parse(&b).is_ok());

    let mut b = img.bytes.clone();
    put16(&mut b, 0x44 + 16, (img.size_of_opt - 8) as u16); // 16 dirs no longer fit
    assert_eq!(
        bad_pe_offset(parse(&b)).1,
        "NumberOfRvaAndSizes does not fit SizeOfOptionalHeader"
    );

    let mut b = img.bytes.clone();
    put16(&mut b, 0x44 + 2, 200); // section table runs past the end
    assert_eq!(bad_pe_offset(parse(&b)).1, "truncated section table");

    let mut b = img.bytes.clone();
    put32(&mut b, img.section_table + 16, 0x10_0000); // raw data past EOF
    assert_eq!(bad_pe_offset(parse(&b)).0, img.section_table + 16);

    let mut b = img.bytes.clone();
    b[img.md] = b'X';
    assert_eq!(
        bad_pe_offset(parse(&b)),
        (img.md, "missing BSJB metadata signature")
    );
}

#[test]
fn rvas_outside_sections() {
    let img = build(Opts::default());
    let cli_dir = img.opt + 96 + 14 * 8;

    let mut b = img.bytes.clone();
    put32(&mut b, cli_dir, 0x9000);
    assert_eq!(
        bad_pe_offset(parse(&b)),
        (cli_dir, "CLI header RVA lies outside every section")
    );

    let mut b = img.bytes.clone();
    let len = b.len() as u32;
    put32(&mut b, cli_dir, TEXT_RVA + len - TEXT_RAW as u32 - 10);
    assert_eq!(bad_pe_offset(parse(&b)).1, "truncated CLI header");

    let mut b = img.bytes.clone();
    put32(&mut b, img.cli + 8, 0x100);
    assert_eq!(
        bad_pe_offset(parse(&b)),
        (
            img.cli + 8,
            "metadata RVA lies outside every section's raw data"
        )
    );

    let mut b = img.bytes.clone();
    put32(&mut b, img.cli + 12, 0x10_0000);
    assert_eq!(bad_pe_offset(parse(&b)).0, img.cli + 12);

    // A method RVA outside every section: that method's item fails at its row.
    let mut b = img.bytes.clone();
    put32(&mut b, img.method_rows, 0x7000_0000);
    let asm = parse(&b).unwrap();
    let items: Vec<_> = asm.methods().collect();
    assert_eq!(items.len(), 3);
    assert_eq!(
        bad_pe_offset(items[0].clone()),
        (
            img.method_rows,
            "method RVA lies outside every section's raw data"
        )
    );
    assert!(items[1].is_ok() && items[2].is_ok());

    // An RVA in the zero-filled tail of a section (VirtualSize > SizeOfRawData).
    let mut b = img.bytes.clone();
    put32(&mut b, img.section_table + 8, 0x10_0000);
    put32(&mut b, img.method_rows, TEXT_RVA + 0x8_0000);
    let asm = parse(&b).unwrap();
    assert!(asm.methods().next().unwrap().is_err());
    assert_eq!(asm.pe().rva_to_offset(TEXT_RVA + 0x8_0000), None);
    assert_eq!(asm.pe().rva_to_offset(TEXT_RVA + 4), Some(TEXT_RAW + 4));
    assert!(asm.pe().slice_at_rva(0).is_none());
}

#[test]
fn bad_metadata_root_and_streams() {
    let img = build(Opts::default());

    let mut b = img.bytes.clone();
    put32(&mut b, img.md + 12, 0x1000_0000); // version length
    assert_eq!(bad_pe_offset(parse(&b)).0, img.md + 12);

    let mut b = img.bytes.clone();
    b[img.md + 16] = 0xFF; // version string not UTF-8
    assert_eq!(
        bad_pe_offset(parse(&b)).1,
        "metadata version string is not UTF-8"
    );

    let mut b = img.bytes.clone();
    put32(&mut b, img.stream_headers, img.md_len as u32); // #~ offset at the end
    assert_eq!(
        bad_pe_offset(parse(&b)),
        (img.stream_headers, "stream lies outside the metadata")
    );

    let mut b = img.bytes.clone();
    put32(&mut b, img.stream_headers + 4, 0xFFFF_FFFF); // #~ size overflows
    assert_eq!(
        bad_pe_offset(parse(&b)).1,
        "stream lies outside the metadata"
    );

    let mut b = img.bytes.clone();
    b[img.stream_headers + 9] = b'X'; // "#~" -> "#X": no table stream
    assert_eq!(
        bad_pe_offset(parse(&b)).1,
        "metadata has no #~ or #- table stream"
    );

    let mut b = img.bytes.clone();
    put16(&mut b, img.stream_headers - 2, 0x7FFF); // many more streams than present
    assert!(parse(&b).is_err());

    // Stream name with no NUL within 32 bytes.
    let mut b = img.bytes.clone();
    let name = img.stream_headers + 8;
    for i in 0..32 {
        b[name + i] = b'A';
    }
    assert_eq!(
        bad_pe_offset(parse(&b)),
        (name, "stream name has no NUL terminator within 32 bytes")
    );
}

#[test]
fn table_counts_past_stream_end() {
    for o in all_opts() {
        let img = build(o);
        // MethodDef is the 4th/5th present table; find its count by value.
        let idx = if o.method_ptr { 5 } else { 4 };
        let at = img.row_counts + 4 * idx;
        assert_eq!(get32(&img.bytes, at), 3, "{o:?}");

        let mut b = img.bytes.clone();
        put32(&mut b, at, 1000);
        let (off, what) = bad_pe_offset(parse(&b));
        assert_eq!(what, "metadata table runs past the end of the table stream");
        assert!(off >= img.tables && off < img.md + img.md_len);

        let mut b = img.bytes.clone();
        put32(&mut b, at, 0x0100_0000);
        assert_eq!(
            bad_pe_offset(parse(&b)),
            (at, "table row count exceeds 2^24 - 1")
        );

        // Every bit of Valid set: 64 row counts that are not there.
        let mut b = img.bytes.clone();
        for i in 8..16 {
            b[img.tables + i] = 0xFF;
        }
        assert!(parse(&b).is_err());

        // A valid image whose table stream is cut: shrink the #~ size.
        let mut b = img.bytes.clone();
        put32(&mut b, img.stream_headers + 4, 30);
        assert!(parse(&b).is_err());
    }
}

#[test]
fn heap_indexes_out_of_range() {
    let img = build(Opts::default());
    let row1 = img.method_rows;

    // MethodDef 1 Name -> past #Strings.
    let mut b = img.bytes.clone();
    put16(&mut b, row1 + 8, 0xFFFF);
    let asm = parse(&b).unwrap();
    let items: Vec<_> = asm.methods().collect();
    let (off, what) = bad_pe_offset(items[0].clone());
    assert_eq!(what, "string index past the end of #Strings");
    assert_eq!(off, img.strings + 0xFFFF);
    assert!(items[1].is_ok());
    assert!(asm.member_name(0x0600_0001).is_err());
    exercise(&asm);

    // MethodDef 1 Signature -> past #Blob.
    let mut b = img.bytes.clone();
    put16(&mut b, row1 + 10, 0xFFFF);
    let asm = parse(&b).unwrap();
    assert_eq!(
        bad_pe_offset(asm.methods().next().unwrap()).1,
        "index past the end of #Blob"
    );
    assert!(asm.call_site_signature(0x0600_0001).is_err());

    // A blob whose length runs past the heap, and a bad length prefix.
    let mut b = img.bytes.clone();
    let sig = get32(&b, row1 + 10) & 0xFFFF;
    b[img.blobs + sig as usize] = 0x7F;
    let asm = parse(&b).unwrap();
    assert!(asm.methods().next().unwrap().is_err());
    b[img.blobs + sig as usize] = 0xFF;
    let asm = parse(&b).unwrap();
    assert_eq!(
        bad_pe_offset(asm.methods().next().unwrap()).1,
        "bad length prefix in #Blob"
    );

    // Invalid UTF-8 in a name.
    let mut b = img.bytes.clone();
    let name = (get32(&b, row1 + 8) & 0xFFFF) as usize;
    b[img.strings + name + 1] = 0xC3; // "M\xC3in"
    let asm = parse(&b).unwrap();
    assert_eq!(
        bad_pe_offset(asm.methods().next().unwrap()),
        (img.strings + name + 1, "invalid UTF-8 in #Strings")
    );

    // TypeDef 2 (Ns.Foo) name out of range: its two methods fail, Bar's does not.
    let mut b = img.bytes.clone();
    let typedef2 = img.method_rows - 6 - 3 * 14 + 14;
    put16(&mut b, typedef2 + 4, 0xFFF0);
    let asm = parse(&b).unwrap();
    let ok: Vec<_> = asm.methods().map(|m| m.is_ok()).collect();
    assert_eq!(ok, [false, false, true]);
    assert!(asm.method(0x0600_0002).is_err());
    assert!(asm.method(0x0600_0003).is_ok());

    // Module name index out of range.
    let mut b = img.bytes.clone();
    // Module (10) | TypeRef (6) | TypeDef (3 x 14) | Field (6) | MethodDef
    let module_row = img.method_rows - 6 - 3 * 14 - 6 - 10;
    put16(&mut b, module_row + 2, 0xF000);
    let asm = parse(&b).unwrap();
    assert!(asm.module_name().is_err());
}

#[test]
fn bad_tokens() {
    let img = build(Opts::default());
    let asm = parse(&img.bytes).unwrap();
    let is_bad_token = |r: ilrewrite::Result<_>| matches!(r, Err(Error::BadToken { .. }));
    assert!(is_bad_token(asm.standalone_sig(0x0600_0001).map(|_| ())));
    assert!(is_bad_token(asm.standalone_sig(0x1100_0002).map(|_| ())));
    assert!(is_bad_token(asm.standalone_sig(0x1100_0000).map(|_| ())));
    assert!(is_bad_token(asm.user_string(0x7000_0100).map(|_| ())));
    assert!(is_bad_token(asm.user_string(0x7100_0001).map(|_| ())));
    assert!(is_bad_token(
        asm.call_site_signature(0x0200_0001).map(|_| ())
    ));
    assert!(is_bad_token(
        asm.call_site_signature(0x0600_0004).map(|_| ())
    ));
    assert!(is_bad_token(
        asm.call_site_signature(0xFF00_0001).map(|_| ())
    ));
    assert!(is_bad_token(asm.type_name(0x1B00_0001).map(|_| ())));
    assert!(is_bad_token(asm.type_name(0x0200_0009).map(|_| ())));
    assert!(is_bad_token(asm.member_name(0x0A00_0000).map(|_| ())));
    assert!(is_bad_token(asm.method(0x0600_0000).map(|_| ())));
    assert!(is_bad_token(asm.method(0x0A00_0001).map(|_| ())));
    assert!(is_bad_token(asm.row_of_token(0x4000_0001).map(|_| ())));
    assert!(is_bad_token(asm.enclosing_type(0x0200_0004).map(|_| ())));
    assert!(asm.tables().cell(TableId::Module, 1, 9).is_err());

    // A MethodSpec whose MethodDefOrRef names MemberRef row 5 (absent).
    let mut b = img.bytes.clone();
    // MethodDef | MemberRef | StandAloneSig | TypeSpec | AssemblyRef | NestedClass |
    // GenericParam | MethodSpec
    let spec_row = img.method_rows + 3 * 14 + 6 + 2 + 2 + 20 + 4 + 8;
    assert_eq!(get32(&b, spec_row) & 0xFFFF, 6);
    put16(&mut b, spec_row, (5 << 1) | 1);
    let asm = parse(&b).unwrap();
    assert_eq!(
        asm.call_site_signature(0x2B00_0001),
        Err(Error::BadToken {
            token: 0x0A00_0005,
            what: "row number out of range for its table"
        })
    );
}

/// Truncates the file and shrinks the section so the PE layer still accepts it: the
/// cut then lands inside the CLI header, metadata root, streams or tables.
fn truncate_consistently(img: &Image, len: usize) -> Vec<u8> {
    let mut b = img.bytes[..len].to_vec();
    if len >= img.section_table + 40 {
        put32(
            &mut b,
            img.section_table + 16,
            len.saturating_sub(TEXT_RAW) as u32,
        );
    }
    b
}

#[test]
fn truncation_at_every_length() {
    for o in all_opts() {
        let img = build(o);
        let end_of_md = img.md + img.md_len;
        for len in 0..img.bytes.len() {
            let b = truncate_consistently(&img, len);
            match parse(&b) {
                Ok(asm) => {
                    assert!(len >= end_of_md, "{o:?}: parsed with {len} < {end_of_md}");
                    exercise(&asm);
                }
                Err(Error::BadPe { offset, .. }) => assert!(offset <= img.bytes.len()),
                Err(e) => panic!("unexpected error {e:?}"),
            }
            // The plain (inconsistent) truncation must fail cleanly too.
            assert!(parse(&img.bytes[..len]).is_err());
        }
    }
}

fn mutate(bytes: &mut Vec<u8>, flips: &[(usize, u8)], cut: Option<usize>) {
    for &(pos, v) in flips {
        let i = pos % bytes.len();
        bytes[i] ^= v;
    }
    if let Some(c) = cut {
        bytes.truncate(c % (bytes.len() + 1));
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 512,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Random byte flips and truncations of the minimal image never panic.
    #[test]
    fn mutated_minimal_image_never_panics(
        opt in 0usize..8,
        flips in prop::collection::vec((any::<usize>(), 1u8..=255), 1..8),
        cut in prop::option::weighted(0.2, any::<usize>()),
        focus_metadata in any::<bool>(),
    ) {
        let img = build(all_opts()[opt]);
        let mut b = img.bytes.clone();
        let flips: Vec<_> = if focus_metadata {
            // Aim at the metadata, where most of the structure is.
            flips.iter().map(|&(p, v)| (img.md + p % img.md_len, v)).collect()
        } else {
            flips
        };
        mutate(&mut b, &flips, cut);
        if let Ok(asm) = parse(&b) {
            exercise(&asm);
        }
    }
}

// ---- the real framework assemblies --------------------------------------------------

fn framework_dlls(rt: &Runtime) -> Vec<PathBuf> {
    rt.framework_assemblies()
        .unwrap_or_else(|e| panic!("no .NET runtime: {e}"))
}

/// Whether `b` can start a StandAloneSig blob: LOCAL_SIG (0x07) or a method calling
/// convention (DEFAULT, C, STDCALL, THISCALL, FASTCALL, VARARG, UNMANAGED) with only
/// the HASTHIS / EXPLICITTHIS flags.
fn is_standalone_sig_start(b: u8) -> bool {
    b == 0x07 || (matches!(b & 0x0F, 0..=5 | 9) && b & !0x6F == 0)
}

#[test]
fn framework_assemblies() {
    for_each_runtime(read_every_framework_assembly);
}

fn read_every_framework_assembly(rt: &Runtime) {
    let dlls = framework_dlls(rt);
    let (mut methods, mut bodies, mut sigs, mut member_refs, mut specs) = (0, 0, 0, 0, 0);
    let mut r2r = 0;
    let mut names = NameCounts::default();
    for path in &dlls {
        let data = std::fs::read(path).unwrap();
        let asm = Assembly::parse(&data).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        assert_eq!(asm.version(), "v4.0.30319", "{file}");
        assert_eq!(asm.module_name().unwrap(), file);
        r2r += usize::from(asm.is_ready_to_run());
        for m in asm.methods() {
            let m = m.unwrap_or_else(|e| panic!("{file}: {e}"));
            methods += 1;
            assert!(m.declaring_type.is_some(), "{file}: {:#x}", m.token);
            assert_eq!(asm.call_site_signature(m.token).unwrap(), m.signature);
            if let Some(body) = m.body {
                bodies += 1;
                assert!(m.is_il());
                // Every IL body starts with a tiny (0b10) or fat (0b11, size 3) header.
                match body[0] & 3 {
                    2 => {}
                    3 => assert_eq!(body[1] >> 4, 3, "{file}: {:#x}", m.token),
                    _ => panic!("{file}: {:#x}: bad body header {:#x}", m.token, body[0]),
                }
            }
        }
        for rid in 1..=asm.row_count(TableId::StandAloneSig) {
            let sig = asm
                .standalone_sig(TableId::StandAloneSig.token(rid))
                .unwrap();
            assert!(is_standalone_sig_start(sig[0]), "{file}: {:#x}", sig[0]);
            sigs += 1;
        }
        for rid in 1..=asm.row_count(TableId::MemberRef) {
            let t = TableId::MemberRef.token(rid);
            assert!(!asm.call_site_signature(t).unwrap().is_empty());
            asm.member_name(t).unwrap();
            member_refs += 1;
        }
        for rid in 1..=asm.row_count(TableId::MethodSpec) {
            let t = TableId::MethodSpec.token(rid);
            let sig = asm.call_site_signature(t).unwrap();
            assert!(
                sig[0] & 0x10 != 0,
                "{file}: MethodSpec names a non-generic method"
            );
            specs += 1;
        }
        for rid in 1..=asm.row_count(TableId::TypeDef) {
            asm.type_name(TableId::TypeDef.token(rid)).unwrap();
            asm.enclosing_type(TableId::TypeDef.token(rid)).unwrap();
        }
        for rid in 1..=asm.row_count(TableId::TypeRef) {
            asm.type_name(TableId::TypeRef.token(rid)).unwrap();
        }
        names.add(&asm, &file);
    }
    eprintln!("names through MetadataSource: {names:?}");
    assert!(names.nested_type_refs > 0 && names.assembly_type_refs > 0);
    assert!(names.generic_params > 0 && names.fields > 0);
    eprintln!(
        "{} assemblies ({r2r} ReadyToRun): {methods} MethodDefs, {bodies} with a body, \
         {sigs} StandAloneSigs, {member_refs} MemberRefs, {specs} MethodSpecs",
        dlls.len()
    );
    let system_runtime = std::fs::read(rt.framework_dir().join("System.Runtime.dll")).unwrap();
    let system_runtime_r2r = Assembly::parse(&system_runtime).unwrap().is_ready_to_run();
    if let Some(f) = rt.facts() {
        assert_eq!(dlls.len(), f.assemblies);
        assert_eq!(r2r, f.ready_to_run_assemblies);
        assert_eq!(methods, f.method_defs);
        assert_eq!(system_runtime_r2r, f.system_runtime_is_ready_to_run);
    }
}

/// What [`NameCounts::add`] resolved over the framework.
#[derive(Debug, Default)]
struct NameCounts {
    type_refs: usize,
    nested_type_refs: usize,
    assembly_type_refs: usize,
    nested_type_defs: usize,
    fields: usize,
    members: usize,
    generic_params: usize,
}

impl NameCounts {
    /// Resolves through [`MetadataSource`] the name of every TypeDef, TypeRef, Field,
    /// MethodDef, MemberRef and GenericParam of `asm`, and checks what it can: every
    /// member but those of `<Module>` has an owner, a nested TypeDef's enclosing type
    /// agrees with [`Assembly::enclosing_type`], a field lies in its owner's FieldList
    /// range, and each generic parameter is found again by owner and number.
    fn add(&mut self, asm: &Assembly<'_>, file: &str) {
        let md: &dyn MetadataSource = asm;
        for rid in 1..=asm.row_count(TableId::TypeRef) {
            let name = md.type_name(TableId::TypeRef.token(rid)).unwrap();
            self.type_refs += 1;
            self.nested_type_refs += usize::from(name.enclosing.is_some());
            self.assembly_type_refs += usize::from(name.assembly.is_some());
            if let Some(e) = name.enclosing {
                assert_eq!(e >> 24, 0x01, "{file}: TypeRef {rid}");
                assert!(name.assembly.is_none());
            }
        }
        for rid in 1..=asm.row_count(TableId::TypeDef) {
            let token = TableId::TypeDef.token(rid);
            let name = md.type_name(token).unwrap();
            assert_eq!(name.enclosing, asm.enclosing_type(token).unwrap());
            assert!(name.assembly.is_none());
            self.nested_type_defs += usize::from(name.enclosing.is_some());
        }
        let field_list = |t: u32| asm.tables().cell(TableId::TypeDef, t, 4).unwrap();
        for rid in 1..=asm.row_count(TableId::Field) {
            let token = TableId::Field.token(rid);
            let owner = asm.field_declaring_type(token).unwrap().unwrap();
            let t = owner & 0xFF_FFFF;
            assert!(field_list(t) <= rid, "{file}: field {rid}");
            if t < asm.row_count(TableId::TypeDef) {
                assert!(rid < field_list(t + 1), "{file}: field {rid}");
            }
            let member = md.member_name(token).unwrap();
            assert_eq!(member.owner, (t != 1).then_some(owner));
            self.fields += 1;
        }
        for table in [TableId::MethodDef, TableId::MemberRef] {
            for rid in 1..=asm.row_count(table) {
                let member = md.member_name(table.token(rid)).unwrap();
                let global = table == TableId::MethodDef
                    && asm.declaring_type(table.token(rid)).unwrap() == Some(0x0200_0001);
                assert_eq!(member.owner.is_none(), global, "{file}: {table:?} {rid}");
                self.members += 1;
            }
        }
        for rid in 1..=asm.row_count(TableId::GenericParam) {
            let row = asm.row(TableId::GenericParam, rid).unwrap();
            let (owner_table, owner_rid) = row.coded(2).unwrap();
            let owner = owner_table.token(owner_rid);
            let number = row.get(0).unwrap();
            let name = asm.metadata().strings.get(row.get(3).unwrap()).unwrap();
            assert_eq!(
                asm.generic_param(owner, number).unwrap(),
                Some(TableId::GenericParam.token(rid))
            );
            assert_eq!(md.generic_param_name(owner, number).as_deref(), Some(name));
            self.generic_params += 1;
        }
    }
}

#[test]
fn corelib_facts() {
    for_each_runtime(|rt| {
        let data = std::fs::read(rt.corelib()).unwrap();
        corelib_facts_of(rt, &data);
    });
}

fn corelib_facts_of(rt: &Runtime, data: &[u8]) {
    let asm = Assembly::parse(data).unwrap();
    assert!(asm.is_ready_to_run());
    assert_eq!(asm.assembly_name().unwrap(), Some("System.Private.CoreLib"));
    // CoreLib's assembly version: 4.0.0.0 through .NET Core 3.1, then the major release.
    let major = match rt.to_string().as_str() {
        ".NET 8.0.4" => 8,
        _ => 4,
    };
    assert_eq!(asm.assembly_version().unwrap(), Some([major, 0, 0, 0]));
    let mut with_body = 0;
    let mut rvas = HashSet::new();
    for m in asm.methods() {
        let m = m.unwrap();
        if m.body.is_some() {
            with_body += 1;
            rvas.insert(m.rva);
        }
    }
    println!(
        "{rt} CoreLib: {} MethodDefs, {with_body} with a body, {} distinct",
        asm.row_count(TableId::MethodDef),
        rvas.len()
    );
    if let Some(f) = rt.facts() {
        assert_eq!(
            asm.row_count(TableId::MethodDef) as usize,
            f.corelib_method_defs
        );
        assert_eq!(with_body, f.corelib_bodies);
        assert_eq!(rvas.len(), f.corelib_distinct_bodies);
    }
}

/// Runs `cases` random mutations of `data` through parse + [`exercise`]; flips land in
/// `[0, window)` and in the metadata, and a quarter of the cases also truncate.
fn fuzz_real(data: &[u8], window: usize, cases: u32) {
    use proptest::test_runner::{Config, TestRunner};
    let asm = Assembly::parse(data).unwrap();
    let md_start = asm.cli_header().metadata.rva;
    let md = asm.pe().rva_to_offset(md_start).unwrap();
    let md_len = asm.cli_header().metadata.size as usize;
    let window = window.min(data.len());
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let strategy = (
        prop::collection::vec((any::<usize>(), 1u8..=255, any::<bool>()), 1..16),
        prop::option::weighted(0.25, 0..window),
    );
    runner
        .run(&strategy, |(flips, cut)| {
            let mut b = data.to_vec();
            for (p, v, in_md) in flips {
                let i = if in_md { md + p % md_len } else { p % window };
                b[i] ^= v;
            }
            if let Some(c) = cut {
                b.truncate(c);
            }
            if let Ok(asm) = Assembly::parse(&b) {
                exercise(&asm);
            }
            Ok(())
        })
        .unwrap();
}

#[test]
fn mutated_framework_assemblies_never_panic() {
    for_each_runtime(|rt| mutate_framework_assemblies(&rt.framework_dir()));
}

fn mutate_framework_assemblies(dir: &std::path::Path) {
    for (name, cases) in [
        ("System.Runtime.CompilerServices.Unsafe.dll", 256),
        ("System.Net.WebProxy.dll", 256),
        ("System.Private.CoreLib.dll", 24),
    ] {
        let data = std::fs::read(dir.join(name)).unwrap();
        fuzz_real(&data, 64 * 1024, cases);
    }
}

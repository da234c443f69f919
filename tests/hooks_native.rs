//! The enter/leave/tailcall stubs (`src/clr/hooks/arch/x86_64_sysv/stubs.s`) without a runtime.
//!
//! The crate's assembler source is assembled again with the system C compiler, the
//! dispatcher placeholder replaced by `harness_dispatch`, and linked into the C/assembler
//! harness of `tests/hooks/`, which calls each stub as the JIT does (every register set
//! to a known value, the id and SP where the JIT puts them) through a dispatcher that
//! clobbers every register a C function may, and checks the stub's register contract,
//! the dispatcher's arguments and stack alignment, and the frame record. The same harness
//! over the stubs assembled with `ILREWRITE_ELT_BROKEN` (the enter stub forgets XMM3, the
//! leave stub RDX) must fail and name them: the harness can fail.
//!
//! Skipped, with a note, when there is no C compiler (`$CC`, else `cc`).
#![cfg(all(target_arch = "x86_64", target_os = "linux"))]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The crate's stubs, the harness's C and assembler halves.
const STUBS: &str = "src/clr/hooks/arch/x86_64_sysv/stubs.s";
const HARNESS_C: &str = "tests/hooks/harness_x86_64.c";
const HARNESS_S: &str = "tests/hooks/harness_x86_64.s";

/// The placeholder `global_asm!` fills with the dispatcher's symbol.
const PLACEHOLDER: &str = "{dispatch}";

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The C compiler, if one runs.
fn compiler() -> Option<String> {
    let cc = std::env::var("CC")
        .ok()
        .filter(|cc| !cc.is_empty())
        .unwrap_or_else(|| "cc".to_string());
    let works = Command::new(&cc)
        .arg("--version")
        .output()
        .is_ok_and(|out| out.status.success());
    if works {
        Some(cc)
    } else {
        println!("note: no C compiler ({cc}): the native hook harness is skipped");
        None
    }
}

/// A fresh directory for one test's files.
fn work_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("hooks_native")
        .join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs a build step, panicking with its output if it fails.
fn build(cmd: &mut Command) {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The crate's stub source with the placeholder replaced by `harness_dispatch`.
fn stub_source() -> String {
    let text = std::fs::read_to_string(root().join(STUBS)).unwrap();
    assert!(text.contains(PLACEHOLDER), "{STUBS} calls no {PLACEHOLDER}");
    let text = text.replace(PLACEHOLDER, "harness_dispatch");
    // global_asm! reads every other brace as an operand or an escape.
    assert!(
        !text.contains(['{', '}']),
        "{STUBS} holds braces besides {PLACEHOLDER}"
    );
    text
}

/// Assembles the stubs (broken: with `ILREWRITE_ELT_BROKEN` defined) into `dir`.
fn assemble_stubs(cc: &str, dir: &Path, broken: bool) -> PathBuf {
    let source = dir.join("elt_stubs.s");
    std::fs::write(&source, stub_source()).unwrap();
    let object = dir.join("elt_stubs.o");
    let mut cmd = Command::new(cc);
    cmd.args(["-c", "-x", "assembler", "-Wa,--noexecstack"]);
    if broken {
        cmd.arg("-Wa,--defsym,ILREWRITE_ELT_BROKEN=1");
    }
    build(cmd.arg(&source).arg("-o").arg(&object));
    object
}

/// Builds the harness over the stubs and runs it.
fn run_harness(name: &str, broken: bool) -> Option<(Output, String)> {
    let cc = compiler()?;
    let dir = work_dir(name);
    let stubs = assemble_stubs(&cc, &dir, broken);
    let harness_s = dir.join("harness_asm.o");
    build(
        Command::new(&cc)
            .args(["-c", "-Wa,--noexecstack"])
            .arg(root().join(HARNESS_S))
            .arg("-o")
            .arg(&harness_s),
    );
    let exe = dir.join("harness");
    build(
        Command::new(&cc)
            .args(["-O2", "-std=c11", "-Wall", "-Wextra"])
            .arg(root().join(HARNESS_C))
            .arg(&harness_s)
            .arg(&stubs)
            .arg("-o")
            .arg(&exe),
    );
    let out = Command::new(&exe).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    println!("{name} harness, {}:\n{text}", out.status);
    Some((out, text))
}

#[test]
fn the_stubs_keep_their_contract_under_a_hostile_dispatcher() {
    let Some((out, text)) = run_harness("normal", false) else {
        return;
    };
    assert!(
        out.status.success(),
        "{}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    for stub in ["enter", "leave", "tailcall"] {
        for alignment in [8, 0] {
            let line = format!("ok   {stub} (entry rsp%16={alignment})");
            assert!(text.contains(&line), "no '{line}' in\n{text}");
        }
    }
    assert!(!text.contains("FAIL"), "{text}");
    assert!(
        text.contains("also kept (beyond the contract): RAX R10 R11"),
        "{text}"
    );
}

#[test]
fn the_harness_fails_stubs_that_drop_a_register() {
    let Some((out, text)) = run_harness("broken", true) else {
        return;
    };
    assert_eq!(
        out.status.code(),
        Some(1),
        "the broken stubs passed:\n{text}"
    );
    for alignment in [8, 0] {
        for (stub, register) in [("enter", "XMM3"), ("leave", "RDX")] {
            let line = format!("FAIL {stub} (entry rsp%16={alignment}): {register} not preserved");
            assert!(text.contains(&line), "no '{line}' in\n{text}");
        }
        let line = format!("ok   tailcall (entry rsp%16={alignment})");
        assert!(text.contains(&line), "no '{line}' in\n{text}");
    }
    // Every failure is about the dropped register, nothing else.
    for line in text.lines().filter(|l| l.starts_with("FAIL")) {
        assert!(
            (line.starts_with("FAIL enter") && line.contains("XMM3"))
                || (line.starts_with("FAIL leave") && line.contains("RDX")),
            "unexpected failure: {line}"
        );
    }
}

#[test]
fn the_stubs_are_sized_functions() {
    let Some(cc) = compiler() else {
        return;
    };
    let dir = work_dir("symbols");
    let object = assemble_stubs(&cc, &dir, false);
    let Ok(out) = Command::new("readelf").arg("-sW").arg(&object).output() else {
        println!("note: no readelf: the symbol check is skipped");
        return;
    };
    assert!(out.status.success());
    let table = String::from_utf8_lossy(&out.stdout);
    for name in [
        "ilrewrite_elt_enter3",
        "ilrewrite_elt_leave3",
        "ilrewrite_elt_tailcall3",
    ] {
        // Num: Value Size Type Bind Vis Ndx Name
        let fields: Vec<&str> = table
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .find(|f| f.last() == Some(&name))
            .unwrap_or_else(|| panic!("{name} not in\n{table}"));
        assert_eq!(
            &fields[3..6],
            ["FUNC", "GLOBAL", "HIDDEN"],
            "{name}: {fields:?}"
        );
        let size: u64 = fields[2].parse().unwrap();
        assert!(size > 0, "{name} has size 0");
        println!("{name}: {size} bytes");
    }
}

#[test]
fn the_source_states_the_documented_frame_layout() {
    let text = std::fs::read_to_string(root().join(STUBS)).unwrap();
    let constant = |name: &str| -> u64 {
        let prefix = format!(".set {name},");
        let line = text
            .lines()
            .map(str::trim)
            .find(|l| l.starts_with(&prefix))
            .unwrap_or_else(|| panic!("no {prefix} in {STUBS}"));
        line[prefix.len()..].trim().parse().unwrap()
    };
    let layout = [
        ("ILREWRITE_EF_XMM", 0),
        ("ILREWRITE_EF_ARGS", 128),
        ("ILREWRITE_EF_RET", 176),
        ("ILREWRITE_EF_SP", 192),
        ("ILREWRITE_EF_KIND", 200),
        ("ILREWRITE_EF_SIZE", 208),
    ];
    for (name, offset) in layout {
        assert_eq!(constant(name), offset, "{name}");
    }
    #[cfg(feature = "clr")]
    {
        use ilrewrite::clr::hooks::EltFrame;
        assert_eq!(std::mem::size_of::<EltFrame>(), 208);
        assert_eq!(EltFrame::SIZE, 208);
        assert_eq!(std::mem::align_of::<EltFrame>(), 16);
    }
}

/// The stubs the harness checks are the crate's: the machine code `global_asm!` put into
/// the crate (LLVM's assembler) is byte for byte what the system assembler makes of the
/// same file, but for the dispatcher's call displacements (relocations).
#[cfg(feature = "clr")]
#[test]
#[allow(unsafe_code)]
fn the_crates_stubs_are_the_bytes_the_harness_checks() {
    use ilrewrite::clr::hooks;

    let Some(cc) = compiler() else {
        return;
    };
    let dir = work_dir("bytes");
    let object = assemble_stubs(&cc, &dir, false);
    let tool = |name: &str, args: &[&str]| -> Option<String> {
        let out = Command::new(name).args(args).arg(&object).output().ok()?;
        assert!(out.status.success(), "{name} {args:?} failed");
        Some(String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let (Some(symbols), Some(relocations)) = (tool("readelf", &["-sW"]), tool("readelf", &["-rW"]))
    else {
        println!("note: no readelf: the byte comparison is skipped");
        return;
    };
    let section = dir.join("text.bin");
    let copied = Command::new("objcopy")
        .args(["-O", "binary", "--only-section=.text.ilrewrite_elt"])
        .arg(&object)
        .arg(&section)
        .status();
    if !copied.is_ok_and(|s| s.success()) {
        println!("note: no objcopy: the byte comparison is skipped");
        return;
    }
    let text = std::fs::read(&section).unwrap();
    // The offsets of the section's relocations (the calls to the dispatcher).
    let relocated: Vec<usize> = relocations
        .split("Relocation section")
        .find(|part| part.contains("'.rela.text.ilrewrite_elt'"))
        .expect("the stubs' relocations")
        .lines()
        .filter(|l| l.contains("harness_dispatch"))
        .map(|l| usize::from_str_radix(l.split_whitespace().next().unwrap(), 16).unwrap())
        .collect();
    assert_eq!(relocated.len(), 3, "{relocations}");

    for (name, code) in hooks::stub_addresses() {
        let fields: Vec<&str> = symbols
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .find(|f| f.last() == Some(&name))
            .unwrap_or_else(|| panic!("{name} not in\n{symbols}"));
        let start = usize::from_str_radix(fields[1], 16).unwrap();
        let size: usize = fields[2].parse().unwrap();
        let mut want = text[start..start + size].to_vec();
        // SAFETY: `code` is the address of the stub in this test binary's text, which is
        // mapped readable; the stub is `size` bytes long if it is the same code (and the
        // following bytes are still text: padding and the next stub, or the section's end
        // rounded up to a page), so the read stays in the mapping.
        let mut got = unsafe { std::slice::from_raw_parts(code, size) }.to_vec();
        for &at in relocated
            .iter()
            .filter(|&&at| (start..start + size).contains(&at))
        {
            want[at - start..at - start + 4].fill(0);
            got[at - start..at - start + 4].fill(0);
        }
        assert_eq!(
            got, want,
            "{name}: the crate's bytes differ from the assembled file's"
        );
        println!("{name}: {size} bytes, the same as the harness's");
    }
}

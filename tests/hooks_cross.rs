//! The enter/leave/tailcall stubs of the other platforms, checked from an x86_64 Linux
//! host without their runtimes (x86_64 System V is tests/hooks_native.rs).
//!
//! * arm64 Linux (`src/clr/hooks/arch/aarch64_linux/stubs.s`), run: assembled with Debian's
//!   `aarch64-linux-gnu-gcc`, linked `-static` with the C/assembler harness of
//!   `tests/hooks/harness_aarch64.*` and run under `qemu-aarch64`. The harness calls each
//!   stub as the JIT does (id in x10, caller SP in x11, every x and q register set to a
//!   known value) through a dispatcher that clobbers every register an AAPCS64 function
//!   may, and checks the contract, the dispatcher's arguments and alignment, and the frame
//!   record. The broken variant (`ILREWRITE_ELT_BROKEN`: enter forgets q5, leave x1) must
//!   fail, naming exactly those. What this does not prove: that the JIT calls the hooks
//!   as the runtime's sources say (no arm64 runtime here), nor anything about the real
//!   CPU's behaviour beyond qemu's emulation of it.
//! * Windows x64 (`src/clr/hooks/arch/x86_64_windows/stubs.s`), only assembled and inspected: with
//!   binutils-mingw-w64's `x86_64-w64-mingw32-as`, its symbols are three functions, each
//!   has a `.pdata` entry whose range is the function's bytes and whose `.xdata` unwind
//!   codes say what its prolog does (after linking into a DLL with
//!   `x86_64-w64-mingw32-ld` and reading the function table `objdump -p` prints), and its
//!   disassembly saves before the dispatcher call and restores after it every register
//!   the stub promises (the broken variant, R8 at enter and XMM0 at leave dropped, must
//!   fail that check, naming them). No Windows runs these stubs here: whether Windows
//!   unwinds through them and the JIT's contract holds is not tested.
//!
//! The tools come from Debian packages, which the tests install when they are missing
//! (`tests/hooks/provision.rs`: as root with apt-get; otherwise the tests fail and say
//! what to install).
#![cfg(all(target_arch = "x86_64", target_os = "linux"))]

#[path = "hooks/provision.rs"]
mod provision;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const ARM64_STUBS: &str = "src/clr/hooks/arch/aarch64_linux/stubs.s";
const ARM64_HARNESS_C: &str = "tests/hooks/harness_aarch64.c";
const ARM64_HARNESS_S: &str = "tests/hooks/harness_aarch64.S";
const WIN64_STUBS: &str = "src/clr/hooks/arch/x86_64_windows/stubs.s";

/// The placeholder `global_asm!` fills with the dispatcher's symbol.
const PLACEHOLDER: &str = "{dispatch}";

const STUB_NAMES: [&str; 3] = [
    "ilrewrite_elt_enter3",
    "ilrewrite_elt_leave3",
    "ilrewrite_elt_tailcall3",
];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The arm64 tools, installed if missing (the test fails if they cannot be).
fn arm64_tools() {
    provision::ensure(&[
        (
            "aarch64-linux-gnu-gcc",
            "gcc-aarch64-linux-gnu libc6-dev-arm64-cross",
        ),
        ("qemu-aarch64", "qemu-user"),
    ])
    .unwrap_or_else(|e| panic!("the arm64 stub tests need their tools: {e}"));
}

/// The Windows x64 tools (as, ld, objdump, nm), installed if missing.
fn win64_tools() {
    provision::ensure(&[
        ("x86_64-w64-mingw32-as", "binutils-mingw-w64-x86-64"),
        ("x86_64-w64-mingw32-ld", "binutils-mingw-w64-x86-64"),
        ("x86_64-w64-mingw32-objdump", "binutils-mingw-w64-x86-64"),
    ])
    .unwrap_or_else(|e| panic!("the Windows x64 stub tests need their tools: {e}"));
}

/// A fresh directory for one test's files.
fn work_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("hooks_cross")
        .join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs a tool, panicking with its output if it fails; its standard output.
fn run(cmd: &mut Command) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A stub source with the placeholder replaced by `harness_dispatch`, written to `dir`.
fn stub_source(path: &str, dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(root().join(path)).unwrap();
    assert!(text.contains(PLACEHOLDER), "{path} calls no {PLACEHOLDER}");
    let text = text.replace(PLACEHOLDER, "harness_dispatch");
    // global_asm! reads every other brace as an operand or an escape.
    assert!(
        !text.contains(['{', '}']),
        "{path} holds braces besides {PLACEHOLDER}"
    );
    let file = dir.join("elt_stubs.s");
    std::fs::write(&file, text).unwrap();
    file
}

/// The value of `.set NAME, VALUE` in an assembler source (a plain number).
fn set_constant(path: &str, name: &str) -> u64 {
    let text = std::fs::read_to_string(root().join(path)).unwrap();
    let prefix = format!(".set {name},");
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with(&prefix))
        .unwrap_or_else(|| panic!("no {prefix} in {path}"));
    line[prefix.len()..]
        .trim()
        .parse()
        .unwrap_or_else(|e| panic!("{path}: {line}: {e}"))
}

// ---------------------------------------------------------------------------------------
// arm64 Linux

/// Assembles the arm64 stubs (broken: with `ILREWRITE_ELT_BROKEN`) into `dir`.
fn arm64_stubs(dir: &Path, broken: bool) -> PathBuf {
    let source = stub_source(ARM64_STUBS, dir);
    let object = dir.join("elt_stubs.o");
    let mut cmd = Command::new("aarch64-linux-gnu-gcc");
    cmd.args(["-c", "-x", "assembler", "-Wa,--noexecstack"]);
    if broken {
        cmd.arg("-Wa,--defsym,ILREWRITE_ELT_BROKEN=1");
    }
    run(cmd.arg(&source).arg("-o").arg(&object));
    object
}

/// Builds the arm64 harness over the stubs and runs it under qemu.
fn arm64_harness(name: &str, broken: bool) -> (Output, String) {
    arm64_tools();
    let dir = work_dir(name);
    let stubs = arm64_stubs(&dir, broken);
    let exe = dir.join("harness");
    run(Command::new("aarch64-linux-gnu-gcc")
        .args(["-static", "-O2", "-std=c11", "-Wall", "-Wextra", "-Werror"])
        .arg(root().join(ARM64_HARNESS_C))
        .arg(root().join(ARM64_HARNESS_S))
        .arg(&stubs)
        .arg("-o")
        .arg(&exe));
    let out = Command::new("qemu-aarch64")
        .arg(&exe)
        .output()
        .unwrap_or_else(|e| panic!("cannot run qemu-aarch64: {e}"));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    println!("arm64 {name} harness, {}:\n{text}", out.status);
    (out, text)
}

#[test]
fn arm64_stubs_keep_their_contract_under_a_hostile_dispatcher() {
    let (out, text) = arm64_harness("normal", false);
    assert!(
        out.status.success(),
        "{}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    for stub in ["enter", "leave", "tailcall"] {
        let line = format!("ok   {stub:<9} kept: X0-X8 Q0-Q7 X29 (FP) + X19-X28 D8-D15 SP");
        assert!(text.contains(&line), "no '{line}' in\n{text}");
    }
    assert!(!text.contains("FAIL"), "{text}");
    // The dispatcher's clobbers reached the free registers: the harness can see a
    // dropped register (every line lists X9-X18, the upper halves of Q8-Q15, Q16-Q31).
    for line in text.lines().filter(|l| l.starts_with("ok")) {
        for free in ["X9 ", "X18 ", "Q8[127:64]", "Q15[127:64]", "Q31"] {
            assert!(line.contains(free), "{free} not clobbered: {line}");
        }
    }
}

#[test]
fn arm64_harness_fails_stubs_that_drop_a_register() {
    let (out, text) = arm64_harness("broken", true);
    assert_eq!(
        out.status.code(),
        Some(1),
        "the broken stubs passed:\n{text}"
    );
    for line in [
        "FAIL enter: Q5 not preserved",
        "FAIL enter: frame q[5] (Q5)",
        "FAIL leave: X1 not preserved",
        "FAIL leave: frame x[1] (X1)",
        "ok   tailcall",
    ] {
        assert!(text.contains(line), "no '{line}' in\n{text}");
    }
    // Every failure is about the dropped register, nothing else.
    for line in text.lines().filter(|l| l.starts_with("FAIL")) {
        assert!(
            (line.starts_with("FAIL enter") && line.contains("Q5"))
                || (line.starts_with("FAIL leave") && line.contains("X1")),
            "unexpected failure: {line}"
        );
    }
}

#[test]
fn arm64_stubs_are_sized_hidden_functions() {
    arm64_tools();
    let dir = work_dir("arm64-symbols");
    let object = arm64_stubs(&dir, false);
    // The host's readelf reads any ELF machine.
    let table = run(Command::new("readelf").arg("-sW").arg(&object));
    for name in STUB_NAMES {
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
        assert!(size > 0 && size % 4 == 0, "{name} has size {size}");
        println!("{name}: {size} bytes");
    }
}

// ---------------------------------------------------------------------------------------
// Windows x64

/// Assembles the Windows stubs into `dir` (broken: with `ILREWRITE_ELT_BROKEN`).
fn win64_stubs(dir: &Path, broken: bool) -> PathBuf {
    let source = stub_source(WIN64_STUBS, dir);
    let object = dir.join(if broken { "broken.o" } else { "elt_stubs.o" });
    let mut cmd = Command::new("x86_64-w64-mingw32-as");
    if broken {
        cmd.args(["--defsym", "ILREWRITE_ELT_BROKEN=1"]);
    }
    run(cmd.arg(&source).arg("-o").arg(&object));
    object
}

/// One `.pdata` entry and its decoded `.xdata`, as `objdump -p` prints them for a DLL.
#[derive(Debug, Default)]
struct Unwind {
    begin: u64,
    end: u64,
    frame_reg: String,
    codes: Vec<String>,
}

/// Parses the function table and the `.xdata` dump of `objdump -p` (binutils' format:
/// an entry line `vma: begin end unwind`, then per unwind block a header
/// `addr (rva: ...): begin - end`, a `Frame reg:` line and one line per unwind code).
fn parse_unwind(dump: &str) -> Vec<Unwind> {
    let mut entries = Vec::new();
    let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok();
    let mut in_xdata = false;
    for line in dump.lines() {
        let t = line.trim();
        if t.starts_with("Dump of .xdata") {
            in_xdata = true;
            continue;
        }
        if !in_xdata {
            continue;
        }
        if let Some((_, range)) = t.split_once("):") {
            let bounds: Vec<&str> = range.split('-').map(str::trim).collect();
            if let (Some(begin), Some(end)) = (
                bounds.first().and_then(|b| hex(b)),
                bounds.get(1).and_then(|e| hex(e)),
            ) {
                entries.push(Unwind {
                    begin,
                    end,
                    ..Unwind::default()
                });
            }
        } else if let Some(current) = entries.last_mut() {
            if let Some((_, reg)) = t.split_once("Frame reg: ") {
                current.frame_reg = reg.trim().to_string();
            } else if t.starts_with("pc+") {
                current.codes.push(t.to_string());
            }
        }
    }
    entries
}

#[test]
fn win64_stubs_are_functions_with_unwind_info() {
    win64_tools();
    let dir = work_dir("win64-unwind");
    let object = win64_stubs(&dir, false);

    // The object's symbol table: each stub global, in the stubs' section, of COFF type
    // 0x20 (a function), the `.def`/`.type 32` of the source.
    let symbols = run(Command::new("x86_64-w64-mingw32-objdump")
        .arg("-t")
        .arg(&object));
    for name in STUB_NAMES {
        // "[ 14](sec  4)(fl 0x00)(ty   20)(scl   2) (nx 1) 0x0 name", spaces collapsed.
        let line = symbols
            .lines()
            .find(|l| l.ends_with(&format!(" {name}")))
            .unwrap_or_else(|| panic!("{name} not in\n{symbols}"))
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        assert!(line.contains("(ty 20)"), "{name} is not a function: {line}");
        assert!(line.contains("(scl 2)"), "{name} is not external: {line}");
    }

    // Linked into a DLL (with a one-instruction dispatcher), the image's function table
    // is what Windows would use to unwind through the stubs.
    let dispatch = dir.join("dispatch.s");
    std::fs::write(
        &dispatch,
        "\t.text\n\t.globl harness_dispatch\nharness_dispatch:\n\tret\n",
    )
    .unwrap();
    let dispatch_o = dir.join("dispatch.o");
    run(Command::new("x86_64-w64-mingw32-as")
        .arg(&dispatch)
        .arg("-o")
        .arg(&dispatch_o));
    let dll = dir.join("stubs.dll");
    run(Command::new("x86_64-w64-mingw32-ld")
        .args(["--dll", "-e", "0", "--image-base", "0x10000000", "-o"])
        .arg(&dll)
        .arg(&object)
        .arg(&dispatch_o));
    let nm = run(Command::new("x86_64-w64-mingw32-nm").arg("-n").arg(&dll));
    let address: BTreeMap<&str, u64> = nm
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 3).then(|| (f[2], u64::from_str_radix(f[0], 16).unwrap()))
        })
        .collect();
    let dump = run(Command::new("x86_64-w64-mingw32-objdump")
        .arg("-p")
        .arg(&dll));
    let unwind = parse_unwind(&dump);
    // The stubs' and nothing else's (the dispatcher has no unwind info: a leaf).
    assert_eq!(unwind.len(), 3, "{dump}");

    let starts: Vec<u64> = STUB_NAMES.iter().map(|n| address[n]).collect();
    for (i, name) in STUB_NAMES.iter().enumerate() {
        let start = starts[i];
        let entry = unwind
            .iter()
            .find(|u| u.begin == start)
            .unwrap_or_else(|| panic!("no unwind entry begins at {name} ({start:#x}):\n{dump}"));
        let size = entry.end - entry.begin;
        // The range ends where the function's code does: before the next stub, at most
        // 15 bytes of alignment padding away from it.
        if let Some(&next) = starts.get(i + 1) {
            assert!(
                entry.end <= next && next - entry.end < 16,
                "{name}: unwind range {:#x}..{:#x}, next stub at {next:#x}",
                entry.begin,
                entry.end
            );
        }
        assert!(size > 16, "{name}: unwind range of {size} bytes");
        // The codes, last prolog step first: the fixed allocation, RBP as the frame
        // register (RBP = RSP + 0), the push of RBP.
        let alloc = if i == 0 { 0xe0 } else { 0xa0 };
        assert_eq!(entry.frame_reg, "rbp", "{name}: {entry:?}");
        assert_eq!(entry.codes.len(), 3, "{name}: {entry:?}");
        assert!(
            entry.codes[0].ends_with(&format!("rsp = rsp - {alloc:#x}")),
            "{name}: {entry:?}"
        );
        assert!(
            entry.codes[1].contains("FPReg: rbp = rsp + 0x0"),
            "{name}: {entry:?}"
        );
        assert!(entry.codes[2].ends_with("push rbp"), "{name}: {entry:?}");
        println!(
            "{name}: {size} bytes, unwind: frame rbp, {}",
            entry.codes.join("; ")
        );
    }
    // The allocations the unwind codes state (0xe0, 0xa0) are the source's stack sizes:
    // its `.if` checks fail the assembly otherwise.
}

/// What a stub's code saves before its call to the dispatcher and restores after it:
/// for each register, whether a store of its entry value to `[rsp+X]` precedes the call
/// and a load of it from the same `[rsp+X]` follows.
fn saved_and_restored(instructions: &[(String, Vec<String>)]) -> Vec<String> {
    let is_reg = |op: &str| !op.contains('[') && !op.starts_with("0x") && !op.starts_with('-');
    let call = instructions
        .iter()
        .position(|(m, _)| m == "call")
        .expect("the stub calls the dispatcher");
    let mut written: Vec<String> = Vec::new();
    let mut saved: BTreeMap<String, String> = BTreeMap::new();
    for (mnemonic, ops) in &instructions[..call] {
        if ops.len() == 2 && ops[0].contains("[rsp") && is_reg(&ops[1]) {
            if !written.contains(&ops[1]) {
                saved
                    .entry(ops[1].clone())
                    .or_insert_with(|| ops[0].clone());
            }
        } else if let Some(dest) = ops.first().filter(|d| is_reg(d)) {
            if !matches!(mnemonic.as_str(), "push" | "cmp" | "test") {
                written.push(dest.clone());
            }
        }
    }
    let mut restored = Vec::new();
    for (_, ops) in &instructions[call + 1..] {
        if ops.len() == 2 && is_reg(&ops[0]) && saved.get(&ops[0]) == Some(&ops[1]) {
            restored.push(ops[0].clone());
        }
    }
    restored
}

/// The stubs' instructions, by stub, from `objdump -d -M intel` of the object.
fn disassemble(object: &Path) -> BTreeMap<String, Vec<(String, Vec<String>)>> {
    let text = run(Command::new("x86_64-w64-mingw32-objdump")
        .args(["-d", "-M", "intel", "--no-show-raw-insn"])
        .arg(object));
    let mut stubs: BTreeMap<String, Vec<(String, Vec<String>)>> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        if let Some(name) = line.strip_suffix(">:").and_then(|l| l.split_once(" <")) {
            current = Some(name.1.to_string());
            continue;
        }
        let (Some(stub), Some((_, insn))) = (&current, line.split_once(":\t")) else {
            continue;
        };
        let insn = insn.trim();
        let (mnemonic, operands) = insn.split_once(' ').unwrap_or((insn, ""));
        let ops = operands
            .split(',')
            .map(|o| {
                // "QWORD PTR [rsp+0xa0]" -> "[rsp+0xa0]", comments dropped.
                let o = o.split('#').next().unwrap_or("").trim();
                o.rsplit(" PTR ").next().unwrap_or(o).trim().to_string()
            })
            .filter(|o| !o.is_empty())
            .collect();
        stubs
            .entry(stub.clone())
            .or_default()
            .push((mnemonic.to_string(), ops));
    }
    stubs
}

/// The registers each stub must give back (its contract and promises), and the ones its
/// code fails to save before the call and restore after it.
fn win64_missing(object: &Path) -> Vec<(&'static str, Vec<&'static str>)> {
    let enter = [
        "rax", "rcx", "rdx", "r8", "r9", "r10", "r11", "xmm0", "xmm1", "xmm2", "xmm3",
    ];
    let returning = ["rax", "xmm0"];
    let code = disassemble(object);
    let mut report = Vec::new();
    for (name, wanted) in [
        (STUB_NAMES[0], &enter[..]),
        (STUB_NAMES[1], &returning[..]),
        (STUB_NAMES[2], &returning[..]),
    ] {
        let instructions = code
            .get(name)
            .unwrap_or_else(|| panic!("{name} not disassembled"));
        let restored = saved_and_restored(instructions);
        let missing: Vec<&'static str> = wanted
            .iter()
            .copied()
            .filter(|r| !restored.iter().any(|x| x == r))
            .collect();
        // Nothing before the call is stored into the dispatcher's shadow space
        // ([rsp+0x0] .. [rsp+0x1f]): it belongs to the callee.
        let call = instructions.iter().position(|(m, _)| m == "call").unwrap();
        for (mnemonic, ops) in &instructions[..call] {
            let into_shadow = ops.first().is_some_and(|d| {
                d == "[rsp]"
                    || d.strip_prefix("[rsp+0x")
                        .and_then(|x| x.strip_suffix(']'))
                        .and_then(|x| u64::from_str_radix(x, 16).ok())
                        .is_some_and(|x| x < 32)
            });
            assert!(
                !into_shadow,
                "{name} stores into the shadow space: {mnemonic} {ops:?}"
            );
        }
        println!("{name}: saves and restores {restored:?}; missing {missing:?}");
        report.push((name, missing));
    }
    report
}

#[test]
fn win64_stubs_save_and_restore_what_they_promise() {
    win64_tools();
    let dir = work_dir("win64-registers");
    let object = win64_stubs(&dir, false);
    for (name, missing) in win64_missing(&object) {
        assert!(missing.is_empty(), "{name} does not keep {missing:?}");
    }
}

#[test]
fn win64_register_check_fails_stubs_that_drop_a_register() {
    win64_tools();
    let dir = work_dir("win64-broken");
    let object = win64_stubs(&dir, true);
    let report = win64_missing(&object);
    assert_eq!(
        report,
        [
            (STUB_NAMES[0], vec!["r8"]),
            (STUB_NAMES[1], vec!["xmm0"]),
            (STUB_NAMES[2], vec![]),
        ]
    );
}

// ---------------------------------------------------------------------------------------
// The frame records' layouts: the assembler constants, the Rust mirrors (compiled here
// from the crate's files; the C harness checks its copy with _Static_assert).

#[cfg(feature = "clr")]
mod clr {
    pub mod hooks {
        pub mod kind {
            pub use ilrewrite::clr::hooks::HookKind;
        }
    }
}

#[cfg(feature = "clr")]
#[allow(dead_code, unreachable_pub)]
#[path = "../src/clr/hooks/arch/aarch64_linux/frame.rs"]
mod frame_aarch64;

#[cfg(feature = "clr")]
#[allow(dead_code, unreachable_pub)]
#[path = "../src/clr/hooks/arch/x86_64_windows/frame.rs"]
mod frame_windows_x64;

#[test]
fn the_sources_state_the_documented_frame_layouts() {
    for (name, offset) in [
        ("ILREWRITE_EF_Q", 0),
        ("ILREWRITE_EF_X", 128),
        ("ILREWRITE_EF_SP", 200),
        ("ILREWRITE_EF_KIND", 208),
        ("ILREWRITE_EF_SIZE", 224),
    ] {
        assert_eq!(set_constant(ARM64_STUBS, name), offset, "{name}");
    }
    for (name, offset) in [
        ("ILREWRITE_WF_XMM", 0),
        ("ILREWRITE_WF_HOME", 64),
        ("ILREWRITE_WF_RET", 96),
        ("ILREWRITE_WF_SP", 104),
        ("ILREWRITE_WF_KIND", 112),
        ("ILREWRITE_WF_SIZE", 128),
    ] {
        assert_eq!(set_constant(WIN64_STUBS, name), offset, "{name}");
    }
    #[cfg(feature = "clr")]
    {
        use clr::hooks::kind::HookKind;
        assert_eq!(std::mem::size_of::<frame_aarch64::EltFrame>(), 224);
        assert_eq!(frame_aarch64::EltFrame::SIZE, 224);
        assert_eq!(std::mem::size_of::<frame_windows_x64::EltFrame>(), 128);
        assert_eq!(frame_windows_x64::EltFrame::SIZE, 128);

        // The accessors read what the constructors (the stubs' stand-ins) wrote.
        let q = std::array::from_fn(|i| [i as u8 + 1; 16]);
        let a = frame_aarch64::EltFrame::new(HookKind::Leave, [7; 9], q, 0x1000);
        assert_eq!(a.kind(), HookKind::Leave);
        assert_eq!((a.x(8), a.x(9), a.sp()), (Some(7), None, 0x1000));
        assert_eq!((a.q(7), a.q(8)), (Some([8; 16]), None));

        let xmm = std::array::from_fn(|i| [i as u8 + 1; 16]);
        let w = frame_windows_x64::EltFrame::enter([1, 2, 3, 4], xmm, 0x2000);
        assert_eq!(
            (w.home(3), w.home(4), w.return_rax()),
            (Some(4), None, None)
        );
        assert_eq!((w.xmm(3), w.xmm(4)), (Some([4; 16]), None));
        let w = frame_windows_x64::EltFrame::leave(
            42,
            1.5f64.to_bits().to_le_bytes().repeat(2).try_into().unwrap(),
            0x2000,
        );
        assert_eq!(
            (w.return_rax(), w.home(0), w.xmm(1)),
            (Some(42), None, None)
        );
        assert!(w.return_xmm0().is_some());
        println!("{a:?}\n{w:?}");
    }
}

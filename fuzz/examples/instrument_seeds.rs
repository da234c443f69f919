//! Seeds for the `instrument` fuzz target: hand-made bodies with tail calls, and bodies
//! of an assembly (e.g. System.Private.CoreLib) whose call-site tokens are rewritten so
//! that their bits (see `fuzz_targets/instrument.rs`) give each call its real stack
//! effect, which makes most of them verify under the target's resolver.
//!
//! ```sh
//! cargo run --release --example instrument_seeds -- OUT_DIR [ASSEMBLY [COUNT]]
//! ```
//!
//! Each file is the target's six-byte prefix (shape, flags, method id) and an encoded
//! body. Bodies whose analysis fails under the target's resolver are left out.

use ilrewrite::analysis::{CallEffect, ReturnKind, StackAnalyzer};
use ilrewrite::metadata::MetadataSource;
use ilrewrite::pe::Assembly;
use ilrewrite::sig::method::summarize_method_sig;
use ilrewrite::{
    ClauseKind, Error, ExceptionClause, InstrId, Instruction, MethodBody, OpCode, Operand, Result,
};
use std::path::Path;

/// The target's resolver (without its hooks): effects from the token's bits.
fn effect(opcode: OpCode, token: u32) -> Result<CallEffect> {
    if token & 0x10 != 0 {
        return Err(Error::UnresolvedCall {
            opcode: opcode.name(),
            token,
            what: "seed resolver",
        });
    }
    CallEffect::from_parts(token & 0x20 != 0, false, token & 3, token & 4 != 0, opcode)
}

/// The target's input: six bytes, then the body.
fn seed(shape: u8, flags: u8, id: i32, body: &MethodBody) -> Option<Vec<u8>> {
    let bytes = body.encode().ok()?;
    let decoded = MethodBody::decode(&bytes).ok()?;
    let returns = ReturnKind::value_if(!matches!(shape & 7, 0));
    StackAnalyzer::new()
        .analyze(&decoded, &effect, returns)
        .ok()?;
    let mut out = vec![shape, flags];
    out.extend_from_slice(&id.to_le_bytes());
    out.extend_from_slice(&bytes);
    Some(out)
}

/// A body of `code`.
fn body(code: &[Instruction]) -> MethodBody {
    body_ids(code).0
}

/// A body of `code`, and the ids of its instructions.
fn body_ids(code: &[Instruction]) -> (MethodBody, Vec<InstrId>) {
    let mut b = MethodBody::new();
    let ids = code.iter().map(|&i| b.append(i)).collect();
    (b, ids)
}

fn op(opcode: OpCode) -> Instruction {
    Instruction::simple(opcode)
}

fn tok(opcode: OpCode, token: u32) -> Instruction {
    Instruction::with_token(opcode, token)
}

fn ldarg(i: u16) -> Instruction {
    Instruction::ldarg(i)
}

/// Method shapes (the target's first byte): return type (0 void, 1 int32), parameters,
/// HASTHIS.
fn shape(returns: bool, params: u8, has_this: bool) -> u8 {
    u8::from(returns) | params.min(3) << 3 | if has_this { 0x20 } else { 0 }
}

/// Hand-made bodies with tail calls (flags: all instrumenters, or just the two).
fn hand_made() -> Vec<(&'static str, u8, u8, MethodBody)> {
    use OpCode::*;
    let tail = op(Tail);
    let ret = op(Ret);
    let mut out = vec![
        // static int32 M(int32, int32) => tail. call static int32 (int32, int32)
        (
            "static",
            shape(true, 2, false),
            0x72,
            body(&[ldarg(0), ldarg(1), tail, tok(Call, 0x0600_0006), ret]),
        ),
        // instance callvirt of a MethodSpec: void (!!0 = string, int32)
        (
            "methodspec",
            shape(false, 1, true),
            0x11,
            body(&[
                ldarg(0),
                op(Ldnull),
                Instruction::ldc_i4(1),
                tail,
                tok(Callvirt, 0x2B00_00A2),
                ret,
            ]),
        ),
        // call instance void STRUCT::M(int64): this is a managed pointer
        (
            "struct",
            shape(false, 1, false),
            0x30,
            body(&[
                Instruction::ldarga(0),
                Instruction::ldc_i8(5),
                tail,
                tok(Call, 0x0A00_0161),
                ret,
            ]),
        ),
        // call instance void valuetype GV<int64>::M(!0)
        (
            "generic-type",
            shape(false, 1, false),
            0x52,
            body(&[
                Instruction::ldarga(0),
                Instruction::ldc_i8(1),
                tail,
                tok(Call, 0x0A00_04E1),
                ret,
            ]),
        ),
        // calli int32 (int32)
        (
            "calli",
            shape(true, 2, false),
            0x12,
            body(&[ldarg(0), ldarg(1), tail, tok(Calli, 0x1100_0005), ret]),
        ),
        // instance void M(): a TypeRef's method (refused: UnknownThisKind)
        (
            "typeref",
            shape(false, 0, true),
            0x10,
            body(&[ldarg(0), tail, tok(Call, 0x0A00_0220), ret]),
        ),
        // !!0 without a MethodSpec (refused: UnboundGenericParameter)
        (
            "unbound",
            shape(false, 0, false),
            0x00,
            body(&[op(Ldnull), tail, tok(Call, 0x0600_0081), ret]),
        ),
        // vararg (refused)
        (
            "vararg",
            shape(false, 0, false),
            0x00,
            body(&[Instruction::ldc_i4(1), tail, tok(Call, 0x0A00_0809), ret]),
        ),
        // calls followed by ret without tail. (the target inserts the prefixes)
        (
            "insert",
            shape(true, 2, false),
            0x7A,
            body(&[ldarg(0), ldarg(1), tok(Call, 0x0600_0006), ret]),
        ),
        (
            "insert-virt",
            shape(false, 1, true),
            0x1B,
            body(&[
                ldarg(0),
                op(Ldnull),
                Instruction::ldc_i4(1),
                tok(Callvirt, 0x2B00_00A2),
                ret,
            ]),
        ),
        // constrained. T tail. callvirt: valid IL, the runtime takes either order
        (
            "constrained",
            shape(false, 1, false),
            0x10,
            body(&[
                Instruction::ldarga(0),
                tok(Constrained, 0x0200_0003),
                tail,
                tok(Callvirt, 0x0A00_0020),
                ret,
            ]),
        ),
        // static int32 M(int32, int32) { a; tail. call static void (int32)(b); ret }:
        // the ret returns the value below the call's operands (invalid IL the analysis
        // accepts; the instrumenter fails after editing instead of refusing it)
        (
            "void-tail",
            shape(true, 2, false),
            0x00,
            body(&[ldarg(0), ldarg(1), tail, tok(Call, 0x0600_0001), ret]),
        ),
    ];
    // if (a) return; tail. call static void (int32): the ret is shared.
    let (mut b, id) = body_ids(&[
        ldarg(0),
        op(Nop),
        ldarg(0),
        tail,
        tok(Call, 0x0600_0001),
        ret,
    ]);
    b.replace(id[1], Instruction::branch(BrtrueS, id[5]))
        .expect("replaces");
    out.push(("shared-ret", shape(false, 1, false), 0x70, b));
    // if (a) tail. call f(a) else tail. call g(a): two sites.
    let (mut b, id) = body_ids(&[
        ldarg(0),
        op(Nop),
        ldarg(0),
        tail,
        tok(Call, 0x0600_0005),
        ret,
        ldarg(0),
        tail,
        tok(Call, 0x0A00_1105),
        ret,
    ]);
    b.replace(id[1], Instruction::branch(BrtrueS, id[6]))
        .expect("replaces");
    out.push(("two-sites", shape(true, 1, false), 0x72, b));
    // try { call f(a); leave L } catch { pop; leave L } L: tail. call f(a); ret
    let (mut b, id) = body_ids(&[
        ldarg(0),
        tok(Call, 0x0600_0001),
        op(Nop),
        op(Pop),
        op(Nop),
        ldarg(0),
        tail,
        tok(Call, 0x0600_0001),
        ret,
    ]);
    b.replace(id[2], Instruction::branch(LeaveS, id[5]))
        .expect("replaces");
    b.replace(id[4], Instruction::branch(LeaveS, id[5]))
        .expect("replaces");
    b.add_clause(ExceptionClause::new(
        ClauseKind::Catch(0x0100_0001),
        id[0],
        id[2],
        id[3],
        id[4],
    ))
    .expect("a valid clause");
    out.push(("after-try", shape(false, 1, false), 0x70, b));
    out
}

/// A xorshift generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Bodies of `assembly` with their call-site tokens rewritten (see the module
/// documentation), those with a call followed by `ret` first.
fn from_assembly(path: &Path, count: usize) -> Vec<(String, Vec<u8>)> {
    let data = std::fs::read(path).expect("reads the assembly");
    let asm = Assembly::parse(&data).expect("parses the assembly");
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let (mut with_ret_call, mut others) = (Vec::new(), Vec::new());
    let mut seen = std::collections::HashSet::new();
    'methods: for method in asm.methods().flatten() {
        let Some(bytes) = method.body else { continue };
        if !method.is_il() || !seen.insert(method.rva) {
            continue;
        }
        let Ok(mut b) = MethodBody::decode(bytes) else {
            continue;
        };
        let Ok(own) = asm.signature(method.token).and_then(summarize_method_sig) else {
            continue;
        };
        let ids: Vec<InstrId> = b.instrs.ids().collect();
        let mut call_then_ret = false;
        for id in ids {
            let instr = b.instrs.get(id);
            let Operand::Token(token) = instr.operand else {
                continue;
            };
            if !matches!(
                instr.opcode,
                OpCode::Call | OpCode::Callvirt | OpCode::Calli | OpCode::Newobj
            ) {
                continue;
            }
            let Ok(s) = asm
                .call_site_signature(token)
                .and_then(summarize_method_sig)
            else {
                continue 'methods;
            };
            if s.param_count > 3 || s.explicit_this {
                continue 'methods;
            }
            // Random type, parent and generic bits, never "unresolvable".
            let extra = (rng.next() as u32) & 0x1FC8;
            let key = s.param_count
                | u32::from(s.returns_value) << 2
                | u32::from(s.has_this) << 5
                | extra;
            b.instrs.set(
                id,
                Instruction::with_token(instr.opcode, token & 0xFF00_0000 | key),
            );
            call_then_ret |= instr.opcode != OpCode::Newobj
                && b.instrs
                    .next(id)
                    .is_some_and(|r| b.instrs.opcode(r) == OpCode::Ret);
        }
        let r = rng.next();
        let locals = if b.local_var_sig != 0 { 4 } else { 0 };
        // Insert tail. prefixes where a call is followed by ret; the other instrumenters
        // and the re-encoding at random; no metadata now and then.
        let flags = locals | if call_then_ret { 0x08 } else { 0 } | (r as u8 & 0x70);
        let shape = shape(own.returns_value, own.param_count as u8, own.has_this)
            | (r >> 8) as u8 & 0x40
            | if r >> 16 & 7 == 0 { 0x80 } else { 0 };
        let Some(s) = seed(shape, flags, method.token as i32, &b) else {
            continue;
        };
        let name = format!("corelib-{:08x}", method.token);
        match call_then_ret {
            true => with_ret_call.push((name, s)),
            false => others.push((name, s)),
        }
    }
    let half = count / 2;
    let mut out: Vec<_> = with_ret_call.into_iter().take(half).collect();
    let rest = count - out.len();
    out.extend(others.into_iter().take(rest));
    out
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let out = Path::new(
        args.first()
            .expect("usage: instrument_seeds OUT_DIR [ASSEMBLY [COUNT]]"),
    );
    std::fs::create_dir_all(out).expect("creates the output directory");
    let mut written = 0;
    for (name, shape, flags, b) in hand_made() {
        let id = 0x0600_0100 + written;
        let s = seed(shape, flags, id, &b).unwrap_or_else(|| panic!("{name} verifies"));
        std::fs::write(out.join(format!("hand-{name}")), s).expect("writes");
        written += 1;
    }
    if let Some(assembly) = args.get(1) {
        let count = args.get(2).map_or(400, |c| c.parse().expect("a count"));
        for (name, s) in from_assembly(Path::new(assembly), count) {
            std::fs::write(out.join(name), s).expect("writes");
            written += 1;
        }
    }
    println!("{written} seeds in {}", out.display());
}

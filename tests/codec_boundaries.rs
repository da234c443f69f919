//! Boundary cases of the method-body codec, and the codec-level bugs of peer libraries
//! (listed in docs/design.md), each as a regression test.

use ilrewrite::body::{Decoder, Encoder};
use ilrewrite::{ClauseKind, Error, ExceptionClause, Instruction, MethodBody, OpCode, Operand};

fn nop() -> Instruction {
    Instruction::simple(OpCode::Nop)
}

fn ret() -> Instruction {
    Instruction::simple(OpCode::Ret)
}

/// A body of `n` nops followed by `ret`.
fn nops_then_ret(n: usize) -> MethodBody {
    let mut body = MethodBody::new();
    for _ in 0..n {
        body.append(nop());
    }
    body.append(ret());
    body
}

fn round_trip(bytes: &[u8]) -> MethodBody {
    let body = MethodBody::decode(bytes).expect("decodes");
    assert_eq!(
        body.encode().expect("encodes"),
        bytes,
        "re-encodes byte-identical"
    );
    body
}

fn is_tiny(bytes: &[u8]) -> bool {
    bytes[0] & 3 == 2
}

// ---- headers ------------------------------------------------------------------------

#[test]
fn tiny_header_holds_63_bytes_of_code_but_not_64() {
    // Peer bug (elastic's `cil`): a "tiny" header emitted for 64..255 bytes of code.
    let at_limit = nops_then_ret(62).encode().unwrap();
    assert!(is_tiny(&at_limit));
    assert_eq!(at_limit[0] >> 2, 63);
    assert_eq!(at_limit.len(), 64);

    let over = nops_then_ret(63).encode().unwrap();
    assert!(!is_tiny(&over), "64 bytes of code need a fat header");
    assert_eq!(u32::from_le_bytes(over[4..8].try_into().unwrap()), 64);
    assert_eq!(over.len(), 12 + 64);

    for bytes in [at_limit, over] {
        round_trip(&bytes);
    }
}

#[test]
fn tiny_header_only_with_max_stack_at_most_8_and_no_locals() {
    let mut body = nops_then_ret(1);
    body.max_stack = 8;
    assert!(is_tiny(&body.encode().unwrap()));
    body.max_stack = 9;
    let bytes = body.encode().unwrap();
    assert!(!is_tiny(&bytes), "max stack 9 needs a fat header");
    assert_eq!(u16::from_le_bytes([bytes[2], bytes[3]]), 9);
    round_trip(&bytes);

    let mut body = nops_then_ret(1);
    body.local_var_sig = 0x1100_0001;
    assert!(
        !is_tiny(&body.encode().unwrap()),
        "locals need a fat header"
    );
    let mut body = nops_then_ret(1);
    body.init_locals = true;
    assert!(
        !is_tiny(&body.encode().unwrap()),
        "InitLocals needs a fat header"
    );
}

#[test]
fn fat_header_of_a_small_body_stays_fat_and_keeps_its_flags() {
    // Peer bug (CLR Instrumentation Engine): every body re-emitted fat with InitLocals
    // forced. The converse matters too: an original fat header must stay as it was.
    let mut bytes = vec![0x03, 0x30, 0x02, 0x00, 0x01, 0, 0, 0, 0, 0, 0, 0, 0x2A];
    let body = round_trip(&bytes);
    assert!(!body.init_locals);
    assert_eq!(body.max_stack, 2);
    // With InitLocals (0x10) and a locals token.
    bytes[0] = 0x13;
    bytes[8..12].copy_from_slice(&0x1100_0007u32.to_le_bytes());
    let body = round_trip(&bytes);
    assert!(body.init_locals);
    assert_eq!(body.local_var_sig, 0x1100_0007);
    // An unknown flag bit (0x0004) is preserved verbatim.
    bytes[0] = 0x17;
    round_trip(&bytes);
}

#[test]
fn tiny_body_with_no_changes_round_trips_identically() {
    // Peer bug (CLR IE): "invalid program with no changes" — re-emitted fat, InitLocals
    // forced, branches long. Unedited bodies must come back byte for byte.
    // ldarg.0; brtrue.s +1; nop; ret
    let bytes = [(5 << 2) | 2, 0x02, 0x2D, 0x01, 0x00, 0x2A];
    let body = round_trip(&bytes);
    assert!(body.has_tiny_format());
}

#[test]
fn bad_headers_are_typed_errors() {
    assert!(matches!(
        MethodBody::decode(&[]),
        Err(Error::Truncated { offset: 0, .. })
    ));
    assert!(matches!(
        MethodBody::decode(&[0x00]),
        Err(Error::BadHeaderFormat { byte: 0, .. })
    ));
    assert!(matches!(
        MethodBody::decode(&[0x03, 0x20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
        Err(Error::BadHeaderSize { size: 2, .. })
    ));
    assert!(matches!(
        MethodBody::decode(&[0x03, 0x30, 0, 0]),
        Err(Error::Truncated { .. })
    ));
    // Tiny header claiming 4 bytes of code, 1 available.
    assert!(matches!(
        MethodBody::decode(&[(4 << 2) | 2, 0x2A]),
        Err(Error::CodeSizePastEnd {
            code_size: 4,
            available: 1,
            ..
        })
    ));
}

// ---- instructions ---------------------------------------------------------------------

#[test]
fn unknown_opcodes_name_the_byte_and_offset() {
    for (code, byte, prefixed, offset) in [
        (vec![0x00, 0x24], 0x24, false, 1),
        (vec![0xA6], 0xA6, false, 0),
        (vec![0x00, 0x00, 0xFE, 0x08], 0x08, true, 2),
        (vec![0xFE, 0x1F], 0x1F, true, 0),
        (vec![0xFF], 0xFF, false, 0),
    ] {
        let mut bytes = vec![((code.len() as u8) << 2) | 2];
        bytes.extend(&code);
        match MethodBody::decode(&bytes) {
            Err(Error::UnknownOpcode {
                offset: o,
                byte: b,
                prefixed: p,
            }) => assert_eq!((o, b, p), (offset, byte, prefixed), "{code:02x?}"),
            other => panic!("{code:02x?}: {other:?}"),
        }
    }
}

#[test]
fn no_prefix_is_decoded_with_its_operand() {
    // Peer bug (CLR IE): `no.` (FE 19) mis-decoded. `no. 0x01; ldelem.ref; ret` — wait, `no.`
    // precedes typecheck instructions like castclass/ldelem: use `no. 1 ; ldelema <tok>`.
    let code = [0xFE, 0x19, 0x01, 0x8F, 0x02, 0x00, 0x00, 0x01, 0x2A];
    let mut bytes = vec![((code.len() as u8) << 2) | 2];
    bytes.extend(code);
    let body = round_trip(&bytes);
    let ops: Vec<_> = body
        .instrs
        .iter()
        .map(|(_, i)| (i.opcode, i.operand))
        .collect();
    assert_eq!(
        ops,
        vec![
            (OpCode::No, Operand::Int(1)),
            (OpCode::Ldelema, Operand::Token(0x0100_0002)),
            (OpCode::Ret, Operand::None),
        ]
    );
}

#[test]
fn operand_past_end_is_an_error() {
    // ldc.i4 with only 2 of its 4 operand bytes.
    let bytes = [(3 << 2) | 2, 0x20, 0x01, 0x02];
    assert!(matches!(
        MethodBody::decode(&bytes),
        Err(Error::OperandPastEnd {
            offset: 0,
            opcode: "ldc.i4"
        })
    ));
}

/// `br.s`/`br` at the start, `filler` nops, then the target `ret`.
fn forward_branch(short_disp: usize) -> MethodBody {
    let mut body = MethodBody::new();
    let branch = body.append(nop());
    for _ in 0..short_disp {
        body.append(nop());
    }
    let target = body.append(ret());
    body.replace(branch, Instruction::branch(OpCode::Br, target))
        .unwrap();
    body
}

#[test]
fn short_forward_branch_reaches_127_and_widens_at_128() {
    let bytes = forward_branch(127).encode().unwrap();
    // Fat header: 127 nops + 2 + 1 = 130 bytes of code.
    assert_eq!(&bytes[12..14], &[0x2B, 127]);
    round_trip(&bytes);

    let bytes = forward_branch(128).encode().unwrap();
    assert_eq!(bytes[12], 0x38, "displacement 128 needs br");
    assert_eq!(i32::from_le_bytes(bytes[13..17].try_into().unwrap()), 128);
    round_trip(&bytes);
}

#[test]
fn short_backward_branch_reaches_minus_128_and_widens_at_minus_129() {
    for (nops, short) in [(126, true), (127, false)] {
        // target: nop*nops; br.s target  => displacement = -(nops + 2)
        let mut body = MethodBody::new();
        let target = body.append(nop());
        for _ in 1..nops {
            body.append(nop());
        }
        body.append(Instruction::branch(OpCode::Br, target));
        body.append(ret());
        let bytes = body.encode().unwrap();
        let at = 12 + nops;
        if short {
            assert_eq!(&bytes[at..at + 2], &[0x2B, (-128i8) as u8]);
        } else {
            assert_eq!(bytes[at], 0x38);
            assert_eq!(
                i32::from_le_bytes(bytes[at + 1..at + 5].try_into().unwrap()),
                -(nops as i32 + 5)
            );
        }
        round_trip(&bytes);
    }
}

#[test]
fn branch_form_depends_on_byte_distance_not_instruction_count() {
    // Peer bug (dotnetdll): short form chosen because the target is < 128 *instructions*
    // away while it is > 127 *bytes* away.
    let mut body = MethodBody::new();
    let branch = body.append(nop());
    for i in 0..20 {
        body.append(Instruction::ldc_i8(i)); // 9 bytes each: 180 bytes in 20 instructions
        body.append(Instruction::simple(OpCode::Pop));
    }
    let target = body.append(ret());
    body.replace(branch, Instruction::branch(OpCode::Br, target))
        .unwrap();
    let bytes = body.encode().unwrap();
    assert_eq!(bytes[12], 0x38);
    let decoded = round_trip(&bytes);
    let first = decoded.instrs.first().unwrap();
    assert_eq!(
        decoded.instrs.get(first).operand,
        Operand::Target(decoded.instrs.last().unwrap())
    );
}

#[test]
fn relaxation_reaches_a_fixed_point_across_chained_branches() {
    // Branch A jumps over branch B; B is pushed out of range only when A is widened.
    // b0: br.s L1 ; [125 nops] ; b1: br.s L2 ; L1: nop ; [filler] ; L2: ret
    let mut body = MethodBody::new();
    let a = body.append(nop());
    for _ in 0..124 {
        body.append(nop());
    }
    let b = body.append(nop());
    let l1 = body.append(nop());
    for _ in 0..124 {
        body.append(nop());
    }
    let l2 = body.append(ret());
    body.replace(a, Instruction::branch(OpCode::Br, l1))
        .unwrap();
    body.replace(b, Instruction::branch(OpCode::Br, l2))
        .unwrap();
    // a: 2 + 124 + b(2) => a's displacement 126: fits. b's: 1 + 124 = 125: fits.
    let bytes = body.encode().unwrap();
    let decoded = round_trip(&bytes);
    assert!(decoded.instrs.iter().all(|(_, i)| i.opcode != OpCode::Br));
    // Add 2 nops in front of l1: a now needs 128 -> widened (+3 bytes), which moves
    // nothing between b and l2, but verify fixed point with a tighter layout:
    body.insert_before(l1, nop(), ilrewrite::graph::Incoming::Keep)
        .unwrap();
    body.insert_before(l1, nop(), ilrewrite::graph::Incoming::Keep)
        .unwrap();
    let bytes = body.encode().unwrap();
    let decoded = round_trip(&bytes);
    let forms: Vec<_> = decoded
        .instrs
        .iter()
        .filter(|(_, i)| i.opcode.is_branch())
        .map(|(_, i)| i.opcode)
        .collect();
    assert_eq!(forms, vec![OpCode::Br, OpCode::BrS]);
    // Every branch lands where it should.
    let offsets = Encoder::new().code_offsets(&decoded).unwrap().to_vec();
    for (id, instr) in decoded.instrs.iter() {
        if let Operand::Target(t) = instr.operand {
            let at = offsets[id.index()] + instr.opcode.fixed_len().unwrap();
            let disp = offsets[t.index()] as i64 - at as i64;
            match instr.opcode {
                OpCode::BrS => assert!((-128..=127).contains(&disp)),
                _ => assert!(disp > 127),
            }
        }
    }
}

#[test]
fn leave_s_round_trips_and_widens() {
    // try { nop; leave.s L } finally { endfinally } L: ret
    let mut body = MethodBody::new();
    let t0 = body.append(nop());
    let leave = body.append(nop());
    let h = body.append(Instruction::simple(OpCode::Endfinally));
    let l = body.append(ret());
    body.replace(leave, Instruction::branch(OpCode::Leave, l))
        .unwrap();
    body.add_clause(ExceptionClause::new(ClauseKind::Finally, t0, leave, h, h))
        .unwrap();
    let bytes = body.encode().unwrap();
    let decoded = round_trip(&bytes);
    assert_eq!(
        decoded
            .instrs
            .get(decoded.instrs.ids().nth(1).unwrap())
            .opcode,
        OpCode::LeaveS
    );
    assert_eq!(decoded.clauses.len(), 1);

    // Push the target out of short range.
    for _ in 0..130 {
        body.insert_before(l, nop(), ilrewrite::graph::Incoming::Keep)
            .unwrap();
    }
    let decoded = round_trip(&body.encode().unwrap());
    assert_eq!(
        decoded
            .instrs
            .get(decoded.instrs.ids().nth(1).unwrap())
            .opcode,
        OpCode::Leave
    );
}

#[test]
fn branch_outside_code_or_into_an_instruction_is_an_error() {
    // br.s +5 past the end.
    let bytes = [(3 << 2) | 2, 0x2B, 0x05, 0x2A];
    assert!(matches!(
        MethodBody::decode(&bytes),
        Err(Error::BranchOutsideCode {
            offset: 0,
            target: 7
        })
    ));
    // br.s -3 before the start.
    let bytes = [(3 << 2) | 2, 0x2B, 0xFD, 0x2A];
    assert!(matches!(
        MethodBody::decode(&bytes),
        Err(Error::BranchOutsideCode { target: -1, .. })
    ));
    // br.s +1 into the middle of ldc.i4.s.
    let bytes = [(5 << 2) | 2, 0x2B, 0x01, 0x1F, 0x07, 0x2A];
    assert!(matches!(
        MethodBody::decode(&bytes),
        Err(Error::BranchIntoInstruction {
            offset: 0,
            target: 3
        })
    ));
}

/// A reused decoder remembers where the instructions of earlier bodies started; those
/// must not make a branch into the middle of an instruction (or an EH boundary inside
/// one) of a later body look valid.
#[test]
fn a_reused_decoder_still_rejects_targets_inside_instructions() {
    let mut decoder = Decoder::new();
    let mut body = MethodBody::new();
    // Six nops and ret: instructions start at every offset 0..=6.
    let nops = [(7 << 2) | 2, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x2A];
    decoder.decode_into(&nops, &mut body).expect("decodes");
    // br.s +1 into the middle of ldc.i4.s (offset 3 started a nop above).
    let bad_branch = [(5 << 2) | 2, 0x2B, 0x01, 0x1F, 0x07, 0x2A];
    assert!(matches!(
        decoder.decode_into(&bad_branch, &mut body),
        Err(Error::BranchIntoInstruction {
            offset: 0,
            target: 3
        })
    ));
    // switch (1 target: +1) into the middle of ldc.i4.s.
    decoder.decode_into(&nops, &mut body).expect("decodes");
    let mut bad_switch = vec![(12 << 2) | 2, 0x45, 1, 0, 0, 0, 1, 0, 0, 0];
    bad_switch.extend([0x1F, 0x07, 0x2A]);
    assert!(matches!(
        decoder.decode_into(&bad_switch, &mut body),
        Err(Error::BranchIntoInstruction { offset: 0, .. })
    ));
    // A try ending inside ldc.i4.s (offset 2 started a nop above).
    decoder.decode_into(&nops, &mut body).expect("decodes");
    let mut bad_try = vec![0x1B, 0x30, 0x01, 0x00];
    let code = [0x00, 0x1F, 0x07, 0xDE, 0x00, 0xDC, 0x2A];
    bad_try.extend((code.len() as u32).to_le_bytes());
    bad_try.extend(0u32.to_le_bytes());
    bad_try.extend(code);
    while bad_try.len() % 4 != 0 {
        bad_try.push(0);
    }
    // Small section, one finally clause: try [0, 2), handler [5, 6).
    bad_try.extend([0x01, 16, 0, 0, 2, 0, 0, 0, 2, 5, 0, 1, 0, 0, 0, 0]);
    assert!(matches!(
        decoder.decode_into(&bad_try, &mut body),
        Err(Error::EhClauseNotOnBoundary { boundary: 2, .. })
    ));
    // And the decoder still decodes good bodies after errors.
    decoder.decode_into(&nops, &mut body).expect("decodes");
    assert_eq!(body.instrs.len(), 7);
}

// ---- switch ---------------------------------------------------------------------------

fn switch_body(targets: usize) -> MethodBody {
    let mut body = MethodBody::new();
    body.append(Instruction::ldc_i4(0));
    let sw = body.append(nop());
    let mut ids = Vec::new();
    for i in 0..targets.max(1) {
        ids.push(body.append(Instruction::ldc_i4(i as i32)));
        body.append(Instruction::simple(OpCode::Pop));
    }
    let end = body.append(ret());
    ids.truncate(targets);
    if targets > 0 {
        ids[targets - 1] = end;
    }
    let handle = body.instrs.new_switch_targets(&ids);
    body.replace(
        sw,
        Instruction::new(OpCode::Switch, Operand::Switch(handle)),
    )
    .unwrap();
    body
}

#[test]
fn switch_with_zero_and_thousands_of_targets_round_trips() {
    for n in [0usize, 1, 5000] {
        let bytes = switch_body(n).encode().unwrap();
        let decoded = round_trip(&bytes);
        let (_, sw) = decoded
            .instrs
            .iter()
            .find(|(_, i)| i.opcode == OpCode::Switch)
            .unwrap();
        let Operand::Switch(t) = sw.operand else {
            panic!()
        };
        assert_eq!(t.len(), n);
    }
}

#[test]
fn switch_table_past_the_end_is_an_error() {
    // Peer bug (CLR IE): switch table not bounds-checked. Count 0x40000000 with 0 entries.
    let code = [0x16, 0x45, 0x00, 0x00, 0x00, 0x40, 0x2A];
    let mut bytes = vec![((code.len() as u8) << 2) | 2];
    bytes.extend(code);
    assert!(matches!(
        MethodBody::decode(&bytes),
        Err(Error::SwitchTablePastEnd {
            offset: 1,
            count: 0x4000_0000
        })
    ));
    // Count field itself cut off.
    let code = [0x16, 0x45, 0x01, 0x00];
    let mut bytes = vec![((code.len() as u8) << 2) | 2];
    bytes.extend(code);
    assert!(matches!(
        MethodBody::decode(&bytes),
        Err(Error::OperandPastEnd {
            opcode: "switch",
            ..
        })
    ));
}

// ---- EH sections ---------------------------------------------------------------------

/// `n` independent try/finally blocks, each `nop; leave.s next; endfinally`, then `ret`.
/// `pad` nops at the start and `handler_len` extra nops inside each handler let the
/// ranges be pushed to the small-format limits.
fn finally_blocks(n: usize, pad: usize, handler_len: usize) -> MethodBody {
    let mut body = MethodBody::new();
    for _ in 0..pad {
        body.append(nop());
    }
    let mut pending = Vec::new();
    for _ in 0..n {
        let t0 = body.append(nop());
        let leave = body.append(nop());
        let h0 = body.append(nop());
        for _ in 0..handler_len {
            body.append(nop());
        }
        let h1 = body.append(Instruction::simple(OpCode::Endfinally));
        pending.push((t0, leave, h0, h1));
    }
    let end = body.append(ret());
    for (t0, leave, h0, h1) in pending {
        body.replace(leave, Instruction::new(OpCode::Leave, Operand::Target(end)))
            .unwrap();
        body.add_clause(ExceptionClause::new(ClauseKind::Finally, t0, leave, h0, h1))
            .unwrap();
    }
    body
}

fn first_section_is_fat(bytes: &[u8]) -> bool {
    let code_size = u32::from_le_bytes(bytes[4..8].try_into().unwrap()) as usize;
    let at = (12 + code_size).next_multiple_of(4);
    bytes[at] & 0x40 != 0
}

#[test]
fn small_eh_section_holds_20_clauses_but_not_21() {
    let bytes = finally_blocks(20, 0, 0).encode().unwrap();
    assert!(!first_section_is_fat(&bytes));
    assert_eq!(round_trip(&bytes).clauses.len(), 20);
    let bytes = finally_blocks(21, 0, 0).encode().unwrap();
    assert!(
        first_section_is_fat(&bytes),
        "21 small clauses exceed 255 bytes"
    );
    assert_eq!(round_trip(&bytes).clauses.len(), 21);
}

#[test]
fn small_eh_section_limits_on_offsets_and_lengths() {
    // Handler length: 1 + handler_len + 1 bytes. 255 fits, 256 does not.
    let bytes = finally_blocks(1, 0, 253).encode().unwrap();
    assert!(!first_section_is_fat(&bytes));
    round_trip(&bytes);
    let bytes = finally_blocks(1, 0, 254).encode().unwrap();
    assert!(first_section_is_fat(&bytes));
    round_trip(&bytes);
    // Handler offset (try is 6 bytes before it): 0xFFFF fits, 0x10000 does not.
    let bytes = finally_blocks(1, 0xFFFF - 6, 0).encode().unwrap();
    assert!(!first_section_is_fat(&bytes));
    round_trip(&bytes);
    let bytes = finally_blocks(1, 0x10000 - 6, 0).encode().unwrap();
    assert!(first_section_is_fat(&bytes));
    round_trip(&bytes);
}

#[test]
fn more_sects_chain_round_trips_section_by_section() {
    // Hand-built: code `nop; leave.s +1; endfinally; ret` with two small sections, each
    // holding one identical clause, chained by MoreSects.
    let code = [0x00, 0xDE, 0x01, 0xDC, 0x2A];
    let mut bytes = vec![0x1B, 0x30, 0x01, 0x00];
    bytes.extend((code.len() as u32).to_le_bytes());
    bytes.extend(0u32.to_le_bytes());
    bytes.extend(code);
    while bytes.len() % 4 != 0 {
        bytes.push(0);
    }
    let clause = [0x02, 0x00, 0x00, 0x00, 0x03, 0x03, 0x00, 0x01, 0, 0, 0, 0];
    bytes.extend([0x81, 16, 0, 0]); // EH table | MoreSects
    bytes.extend(clause);
    bytes.extend([0x01, 16, 0, 0]); // EH table, last
    bytes.extend(clause);
    let body = round_trip(&bytes);
    assert_eq!(body.clauses.len(), 2);
    // Trailing bytes after the body are not part of it.
    let mut longer = bytes.clone();
    longer.extend([0xAA; 8]);
    let mut decoded = MethodBody::new();
    let used = Decoder::new().decode_into(&longer, &mut decoded).unwrap();
    assert_eq!(used, bytes.len());
}

#[test]
fn bad_eh_sections_are_typed_errors() {
    let code = [0x00, 0xDE, 0x01, 0xDC, 0x2A];
    let base = {
        let mut b = vec![0x1B, 0x30, 0x01, 0x00];
        b.extend((code.len() as u32).to_le_bytes());
        b.extend(0u32.to_le_bytes());
        b.extend(code);
        while b.len() % 4 != 0 {
            b.push(0);
        }
        b
    };
    let with = |section: &[u8]| {
        let mut b = base.clone();
        b.extend(section);
        MethodBody::decode(&b)
    };
    let clause = |flags: u8, try_off: u8, try_len: u8, h_off: u8, h_len: u8| {
        vec![
            0x01, 16, 0, 0, flags, 0, try_off, 0, try_len, h_off, 0, h_len, 0, 0, 0, 0,
        ]
    };
    // OptILTable kind.
    let mut s = clause(2, 0, 3, 3, 1);
    s[0] = 0x02;
    assert!(matches!(
        with(&s),
        Err(Error::BadSectionKind { kind: 2, .. })
    ));
    // Size not a multiple of the clause size.
    let mut s = clause(2, 0, 3, 3, 1);
    s[1] = 15;
    assert!(matches!(
        with(&s),
        Err(Error::BadSectionSize { size: 15, .. })
    ));
    // Unknown clause kind 3.
    assert!(matches!(
        with(&clause(3, 0, 3, 3, 1)),
        Err(Error::BadEhKind { flags: 3, .. })
    ));
    // Try range past the end of the code.
    assert!(matches!(
        with(&clause(2, 0, 9, 3, 1)),
        Err(Error::EhClauseOutOfRange { what: "try", .. })
    ));
    // Try end in the middle of leave.s.
    assert!(matches!(
        with(&clause(2, 0, 2, 3, 1)),
        Err(Error::EhClauseNotOnBoundary {
            what: "try",
            boundary: 2,
            ..
        })
    ));
    // Empty handler.
    assert!(matches!(
        with(&clause(2, 0, 3, 3, 0)),
        Err(Error::EhClauseOutOfRange {
            what: "handler",
            ..
        })
    ));
    // Section cut short.
    assert!(matches!(
        with(&clause(2, 0, 3, 3, 1)[..10]),
        Err(Error::Truncated { .. })
    ));
}

// ---- truncation -----------------------------------------------------------------------

#[test]
fn a_valid_body_truncated_at_every_byte_is_an_error_not_a_panic() {
    let mut body = finally_blocks(3, 2, 2);
    body.max_stack = 3;
    body.local_var_sig = 0x1100_0001;
    let bytes = body.encode().unwrap();
    assert!(MethodBody::decode(&bytes).is_ok());
    for len in 0..bytes.len() {
        assert!(
            MethodBody::decode(&bytes[..len]).is_err(),
            "truncated to {len} of {} bytes",
            bytes.len()
        );
    }
    let switch = switch_body(7).encode().unwrap();
    for len in 0..switch.len() {
        assert!(MethodBody::decode(&switch[..len]).is_err());
    }
}

#[test]
fn original_offsets_are_kept_and_searchable() {
    let bytes = finally_blocks(2, 1, 1).encode().unwrap();
    let body = MethodBody::decode(&bytes).unwrap();
    let offsets = Encoder::new().code_offsets(&body).unwrap().to_vec();
    for (id, _) in body.instrs.iter() {
        assert_eq!(body.original_offset(id), Some(offsets[id.index()]));
        assert_eq!(body.find_by_original_offset(offsets[id.index()]), Some(id));
    }
    assert_eq!(body.find_by_original_offset(offsets[1] + 1000), None);
}

/// Instructions whose operand cannot be encoded (a small operand out of range, an operand
/// of the wrong kind) are kept as given, read back unchanged, and refused by the encoder
/// with a typed error naming the opcode; laying out the code still works, since their
/// size is known.
#[test]
fn unencodable_operands_are_kept_and_reported_not_truncated() {
    let cases = [
        (
            Instruction::new(OpCode::LdcI4S, Operand::Int(300)),
            "operand value out of range for the opcode's encoding",
        ),
        (
            Instruction::new(OpCode::LdargS, Operand::Var(256)),
            "operand value out of range for the opcode's encoding",
        ),
        (
            Instruction::new(OpCode::Unaligned, Operand::Int(-1)),
            "operand value out of range for the opcode's encoding",
        ),
        (
            Instruction::new(OpCode::Ldarg0, Operand::Token(0x0A00_0001)),
            "operand does not match the opcode's operand kind",
        ),
        (
            Instruction::new(OpCode::Call, Operand::Int(1)),
            "operand does not match the opcode's operand kind",
        ),
    ];
    for (odd, what) in cases {
        let mut body = nops_then_ret(2);
        let first = body.instrs.first().expect("has code");
        let id = body.instrs.push_back(ret());
        body.instrs.set(first, odd);
        assert_eq!(body.instrs.get(first), odd, "read back as stored");
        let err = body.encode().expect_err("refused");
        assert!(
            matches!(err, Error::BadOperand { opcode, what: w } if opcode == odd.opcode.name() && w == what),
            "{odd:?}: {err:?}"
        );
        // The layout needs only the operand's size.
        let offsets = Encoder::new()
            .code_offsets(&body)
            .expect("lays out")
            .to_vec();
        let size = odd.opcode.fixed_len().expect("fixed length");
        assert_eq!(offsets[1], size, "{odd:?}");
        assert_eq!(offsets[id.index()], size + 2);
        // Setting an encodable instruction back makes the body encodable again.
        body.instrs.set(first, nop());
        body.encode().expect("encodes");
    }
}

/// A decoded body's list is unedited until something changes its code, and only then
/// does the encoder derive the code again: every kind of change is seen, even one that
/// stores an instruction equal to the old one or only touches the switch-target pool.
#[test]
fn the_list_knows_when_it_is_edited_and_the_encoder_follows() {
    // ldc.i4.0; switch (1 target: +0); ldc.i4.1; ret
    let bytes = [
        (12 << 2) | 2,
        0x16,
        0x45,
        1,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0x17,
        0x2A,
    ];
    let decoded = MethodBody::decode(&bytes).expect("decodes");
    assert!(decoded.instrs.is_unedited());
    let ids: Vec<_> = decoded.instrs.ids().collect();
    type Edit = fn(&mut MethodBody, &[ilrewrite::InstrId]);
    let edits: [(&str, Edit); 6] = [
        ("set to an equal instruction", |b, ids| {
            let same = b.instrs.get(ids[0]);
            b.instrs.set(ids[0], same);
        }),
        ("replace", |b, ids| {
            b.replace(ids[2], Instruction::new(OpCode::LdcI4S, Operand::Int(9)))
                .expect("replaces");
        }),
        ("switch pool written", |b, ids| {
            let Operand::Switch(t) = b.instrs.get(ids[1]).operand else {
                panic!("a switch")
            };
            b.instrs.switch_targets_mut(t)[0] = ids[3];
        }),
        ("push_back", |b, _| {
            b.instrs.push_back(ret());
        }),
        ("insert", |b, ids| {
            b.insert_before(ids[2], nop(), ilrewrite::graph::Incoming::Keep)
                .expect("inserts");
        }),
        ("unlink", |b, ids| b.instrs.unlink(ids[0])),
    ];
    for (what, edit) in edits {
        let mut body = decoded.clone();
        edit(&mut body, &ids);
        assert!(!body.instrs.is_unedited(), "{what}");
        let mut copied = Vec::new();
        Encoder::new().encode(&body, &mut copied).expect("encodes");
        assert_eq!(copied, body.encode().expect("encodes"), "{what}");
    }
    // The changes that alter the code do alter the bytes.
    let mut body = decoded.clone();
    body.replace(ids[2], Instruction::new(OpCode::LdcI4S, Operand::Int(9)))
        .expect("replaces");
    let mut copied = Vec::new();
    Encoder::new().encode(&body, &mut copied).expect("encodes");
    assert_ne!(copied, bytes);
    // Unedited, both encoders give the original bytes; a decode that fails in the code
    // leaves the list marked edited (one that fails before reading the code leaves the
    // body as it was).
    let mut out = Vec::new();
    Encoder::new().encode(&decoded, &mut out).expect("encodes");
    assert_eq!(out, bytes);
    let mut reused = decoded.clone();
    let mut bad = bytes;
    bad[11] = 0x24; // an undefined opcode in place of ldc.i4.1
    assert!(Decoder::new().decode_into(&bad, &mut reused).is_err());
    assert!(!reused.instrs.is_unedited());
}

/// An unedited list moved into another body is not taken for that body's code: the
/// copy is tied to the decode that produced both.
#[test]
fn an_unedited_list_moved_between_bodies_is_encoded_from_its_instructions() {
    // Same size and instruction count, different code: ldc.i4.1; ret and ldc.i4.2; ret.
    let one = MethodBody::decode(&[(2 << 2) | 2, 0x17, 0x2A]).expect("decodes");
    let mut two = MethodBody::decode(&[(2 << 2) | 2, 0x18, 0x2A]).expect("decodes");
    two.instrs = one.instrs.clone();
    assert!(two.instrs.is_unedited());
    let mut out = Vec::new();
    Encoder::new().encode(&two, &mut out).expect("encodes");
    assert_eq!(out, [(2 << 2) | 2, 0x17, 0x2A]);
    assert_eq!(out, two.encode().expect("encodes"));
    // Also when one decoder decoded both (its stamps are its own and never repeat).
    let mut decoder = Decoder::new();
    let (mut three, mut four) = (MethodBody::default(), MethodBody::default());
    decoder
        .decode_into(&[(2 << 2) | 2, 0x17, 0x2A], &mut three)
        .expect("decodes");
    decoder
        .decode_into(&[(2 << 2) | 2, 0x18, 0x2A], &mut four)
        .expect("decodes");
    four.instrs = three.instrs.clone();
    out.clear();
    Encoder::new().encode(&four, &mut out).expect("encodes");
    assert_eq!(out, [(2 << 2) | 2, 0x17, 0x2A]);
    // A clone of the whole body keeps its code and its mark together.
    let copy = one.clone();
    out.clear();
    Encoder::new().encode(&copy, &mut out).expect("encodes");
    assert_eq!(out, [(2 << 2) | 2, 0x17, 0x2A]);
}

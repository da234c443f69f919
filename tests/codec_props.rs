//! Property tests of the method-body codec.
//!
//! Two families:
//!
//! * **Any bytes.** Whatever the input, `decode` returns a value or a typed error, never a
//!   panic. When it accepts the input, `encode` succeeds and gives back exactly the bytes
//!   the decoder consumed: any byte string the decoder accepts is reproduced
//!   byte-identically. Inputs come from five generators of increasing structure (raw
//!   bytes, a valid tiny or fat header prefix, code made of well-formed instructions
//!   followed by hand-assembled EH sections, and mutated encodings of valid bodies).
//! * **Valid bodies.** Bodies built through the editing API from every opcode of the
//!   table, with random operands, headers and well-formed (disjoint, nested and
//!   shared-try) EH clauses, survive encode -> decode structurally (short branches may come
//!   back widened, and only when they had to be) and re-encode to the same bytes.
//!
//! `generators_cover_what_the_properties_claim` checks, with a fixed seed, that the
//! valid-body generator really produces every opcode, widened and kept-short branches,
//! tiny and fat headers, small and fat EH sections and every clause kind and nesting.
//!
//! The valid-body generator and the body snapshot live in `tests/common` (shared with
//! `tests/edit_props.rs`).

mod common;

use common::{Arg, BodySpec, body_spec, build, shape};
use ilrewrite::body::{Decoder, Encoder};
use ilrewrite::opcode::OperandKind;
use ilrewrite::{ClauseKind, ExceptionClause, InstrId, Instruction, MethodBody, OpCode, Operand};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestRunner;
use std::collections::BTreeSet;

const CASES: u32 = 256;

fn config() -> ProptestConfig {
    common::config(CASES)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

// ---- property 1: any bytes the decoder accepts are reproduced ---------------------------

/// A decoder and a body that already hold a decoded body with a fat header, a switch and
/// EH clauses, so that decoding into them again exercises buffer reuse.
fn dirty_decoder_and_body() -> (Decoder, MethodBody) {
    let mut b = MethodBody::new();
    b.local_var_sig = 0x1100_0001;
    b.append(Instruction::ldc_i4(1));
    let sw = b.append(Instruction::simple(OpCode::Nop));
    let t0 = b.append(Instruction::simple(OpCode::Nop));
    let leave1 = b.append(Instruction::simple(OpCode::Nop));
    let h0 = b.append(Instruction::simple(OpCode::Pop));
    let leave2 = b.append(Instruction::simple(OpCode::Nop));
    let end = b.append(Instruction::simple(OpCode::Ret));
    let targets = b.instrs.new_switch_targets(&[t0, end, h0]);
    b.replace(
        sw,
        Instruction::new(OpCode::Switch, Operand::Switch(targets)),
    )
    .unwrap();
    b.replace(leave1, Instruction::branch(OpCode::Leave, end))
        .unwrap();
    b.replace(leave2, Instruction::branch(OpCode::Leave, end))
        .unwrap();
    b.add_clause(ExceptionClause::new(
        ClauseKind::Catch(0x0100_0001),
        t0,
        leave1,
        h0,
        leave2,
    ))
    .unwrap();
    let bytes = b.encode().unwrap();
    let mut decoder = Decoder::new();
    let mut body = MethodBody::new();
    decoder.decode_into(&bytes, &mut body).unwrap();
    (decoder, body)
}

/// The decoder contract on one input: no panic; a fresh and a reused decoder agree; an
/// accepted input re-encodes to exactly its consumed prefix, bytes past the body do not
/// matter, and the recorded original offsets are the encoder's layout.
fn check_accepted_bytes_are_reproduced(bytes: &[u8]) -> Result<(), TestCaseError> {
    let fresh = MethodBody::decode(bytes);
    let (mut decoder, mut reused) = dirty_decoder_and_body();
    let used = decoder.decode_into(bytes, &mut reused);
    let (fresh, used) = match (fresh, used) {
        (Err(a), Err(b)) => {
            prop_assert_eq!(a, b, "fresh and reused decoders report different errors");
            return Ok(());
        }
        (Ok(fresh), Ok(used)) => (fresh, used),
        (fresh, used) => {
            return Err(TestCaseError::fail(format!(
                "fresh and reused decoders disagree: {:?} vs {:?}",
                fresh.map(|_| ()),
                used
            )));
        }
    };
    prop_assert!(used <= bytes.len());
    let consumed = &bytes[..used];
    let expected = shape(&fresh);
    prop_assert_eq!(&shape(&reused), &expected, "reused decoder state leaked");
    prop_assert_eq!(fresh.has_tiny_format(), reused.has_tiny_format());

    let encoded = match fresh.encode() {
        Ok(e) => e,
        Err(e) => {
            return Err(TestCaseError::fail(format!(
                "accepted input {} does not re-encode: {e}",
                hex(consumed)
            )));
        }
    };
    prop_assert_eq!(
        hex(&encoded),
        hex(consumed),
        "accepted input is not reproduced byte-identically"
    );
    prop_assert_eq!(hex(&reused.encode().unwrap()), hex(consumed));
    // A reused encoder copies the unedited code: the same bytes.
    let mut copied = Vec::new();
    Encoder::new().encode(&reused, &mut copied).unwrap();
    prop_assert_eq!(hex(&copied), hex(consumed));

    // The consumed prefix alone decodes to the same body.
    let again = MethodBody::decode(consumed).unwrap();
    prop_assert_eq!(shape(&again), expected);

    let offsets = Encoder::deriving_every_byte()
        .code_offsets(&fresh)
        .unwrap()
        .to_vec();
    for (id, _) in fresh.instrs.iter() {
        prop_assert_eq!(fresh.original_offset(id), Some(offsets[id.index()]));
    }
    Ok(())
}

/// One-byte opcodes without an operand: code made of them keeps EH boundaries likely to
/// fall on instruction starts.
fn plain_opcodes() -> Vec<OpCode> {
    OpCode::ALL
        .iter()
        .copied()
        .filter(|op| op.fixed_len() == Some(1))
        .collect()
}

/// The encoding of one instruction: a defined opcode, an operand of the right size, and
/// branch displacements small enough to stay inside short code now and then.
fn instruction_bytes() -> impl Strategy<Value = Vec<u8>> {
    let any_op = prop::sample::select(OpCode::ALL);
    let op = prop_oneof![1 => any_op, 1 => prop::sample::select(plain_opcodes())];
    op.prop_flat_map(|op| {
        let operand: BoxedStrategy<Vec<u8>> = match op.operand() {
            OperandKind::ShortBranch => (-6i8..6).prop_map(|d| vec![d as u8]).boxed(),
            OperandKind::Branch => (-12i32..12).prop_map(|d| d.to_le_bytes().to_vec()).boxed(),
            OperandKind::Switch => vec(-12i32..12, 0..4)
                .prop_map(|ds| {
                    let mut v = (ds.len() as u32).to_le_bytes().to_vec();
                    for d in ds {
                        v.extend(d.to_le_bytes());
                    }
                    v
                })
                .boxed(),
            kind => vec(any::<u8>(), kind.size().unwrap() as usize).boxed(),
        };
        operand.prop_map(move |operand| {
            let code = op.code();
            let mut v = if code >= 0xFE00 {
                vec![0xFE, code as u8]
            } else {
                vec![code as u8]
            };
            v.extend(operand);
            v
        })
    })
}

/// Raw fields of one EH clause; offsets are reduced modulo the code size when assembled.
#[derive(Debug, Clone)]
struct RawClauseSeed {
    flags: u32,
    try_offset: u32,
    try_length: u32,
    handler_offset: u32,
    handler_length: u32,
    extra: u32,
}

#[derive(Debug, Clone)]
struct SectionSeed {
    kind: u8,
    reserved: [u8; 2],
    clauses: Vec<RawClauseSeed>,
    /// Replaces the data size computed from the clause count.
    size_override: Option<u32>,
}

fn section_seed() -> impl Strategy<Value = SectionSeed> {
    let flags = prop_oneof![4 => prop::sample::select(vec![0u32, 1, 2, 4]), 1 => any::<u32>()];
    let clause = (
        flags,
        any::<u32>(),
        any::<u32>(),
        any::<u32>(),
        any::<u32>(),
        any::<u32>(),
    )
        .prop_map(|(flags, a, b, c, d, e)| RawClauseSeed {
            flags,
            try_offset: a,
            try_length: b,
            handler_offset: c,
            handler_length: d,
            extra: e,
        });
    (
        prop_oneof![4 => prop::sample::select(vec![0x01u8, 0x41]), 1 => any::<u8>()],
        prop_oneof![4 => Just([0u8; 2]), 1 => any::<[u8; 2]>()],
        vec(clause, 0..4),
        prop::option::weighted(0.1, any::<u32>()),
    )
        .prop_map(|(kind, reserved, clauses, size_override)| SectionSeed {
            kind,
            reserved,
            clauses,
            size_override,
        })
}

/// A fat header (random flags, MoreSects usually set), code made of whole instructions,
/// padding (usually zero), a chain of EH sections and trailing bytes.
fn code_and_sections() -> impl Strategy<Value = Vec<u8>> {
    (
        (
            any::<u16>(),
            prop::bool::weighted(0.85),
            any::<u16>(),
            any::<u32>(),
        ),
        vec(instruction_bytes(), 0..24),
        prop_oneof![4 => Just([0u8; 3]), 1 => any::<[u8; 3]>()],
        vec(section_seed(), 1..3),
        vec(any::<u8>(), 0..8),
    )
        .prop_map(
            |((flags, more, max_stack, sig), code, pad, sections, tail)| {
                let code: Vec<u8> = code.concat();
                let n = code.len() as u32 + 1;
                let mut flags = (flags & 0x0FF4) | 0x3003;
                if more {
                    flags |= 0x8;
                }
                let mut b = flags.to_le_bytes().to_vec();
                b.extend(max_stack.to_le_bytes());
                b.extend((code.len() as u32).to_le_bytes());
                b.extend(sig.to_le_bytes());
                b.extend(&code);
                let mut i = 0;
                while b.len() % 4 != 0 {
                    b.push(pad[i]);
                    i += 1;
                }
                let last = sections.len() - 1;
                for (s, section) in sections.iter().enumerate() {
                    let fat = section.kind & 0x40 != 0;
                    let mut kind = section.kind;
                    if s != last && kind & 0x3F == 1 {
                        kind |= 0x80;
                    }
                    let clause_size = if fat { 24 } else { 12 };
                    let size = section
                        .size_override
                        .unwrap_or(4 + clause_size * section.clauses.len() as u32);
                    b.push(kind);
                    if fat {
                        b.extend(&size.to_le_bytes()[..3]);
                    } else {
                        b.push(size as u8);
                        b.extend(section.reserved);
                    }
                    for c in &section.clauses {
                        let try_offset = c.try_offset % n;
                        let handler_offset = c.handler_offset % n;
                        let try_length = c.try_length % (n + 1);
                        let handler_length = c.handler_length % (n + 1);
                        let extra = if c.flags == 1 { c.extra % n } else { c.extra };
                        if fat {
                            for v in [
                                c.flags,
                                try_offset,
                                try_length,
                                handler_offset,
                                handler_length,
                                extra,
                            ] {
                                b.extend(v.to_le_bytes());
                            }
                        } else {
                            b.extend((c.flags as u16).to_le_bytes());
                            b.extend((try_offset as u16).to_le_bytes());
                            b.push(try_length as u8);
                            b.extend((handler_offset as u16).to_le_bytes());
                            b.push(handler_length as u8);
                            b.extend(extra.to_le_bytes());
                        }
                    }
                }
                b.extend(tail);
                b
            },
        )
}

fn tiny_prefixed() -> impl Strategy<Value = Vec<u8>> {
    (0u8..64, vec(any::<u8>(), 0..600)).prop_map(|(size, rest)| {
        let mut v = vec![(size << 2) | 2];
        v.extend(rest);
        v
    })
}

fn fat_prefixed() -> impl Strategy<Value = Vec<u8>> {
    (
        any::<u8>(),
        prop_oneof![3 => Just(0u8), 1 => 0u8..16],
        any::<u16>(),
        (any::<u32>(), prop::bool::weighted(0.9)),
        any::<u32>(),
        vec(any::<u8>(), 0..600),
    )
        .prop_map(|(low, high, max_stack, (size, fits), sig, rest)| {
            let size = if fits {
                size % (rest.len() as u32 + 1)
            } else {
                size
            };
            let mut v = vec![low | 3, 0x30 | high];
            v.extend(max_stack.to_le_bytes());
            v.extend(size.to_le_bytes());
            v.extend(sig.to_le_bytes());
            v.extend(rest);
            v
        })
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn arbitrary_bytes_never_panic_and_accepted_bytes_round_trip(
        bytes in vec(any::<u8>(), 0..600)
    ) {
        check_accepted_bytes_are_reproduced(&bytes)?;
    }

    #[test]
    fn tiny_prefixed_bytes_never_panic_and_accepted_bytes_round_trip(bytes in tiny_prefixed()) {
        check_accepted_bytes_are_reproduced(&bytes)?;
    }

    #[test]
    fn fat_prefixed_bytes_never_panic_and_accepted_bytes_round_trip(bytes in fat_prefixed()) {
        check_accepted_bytes_are_reproduced(&bytes)?;
    }

    #[test]
    fn code_and_section_bytes_never_panic_and_accepted_bytes_round_trip(
        bytes in code_and_sections()
    ) {
        check_accepted_bytes_are_reproduced(&bytes)?;
    }

    #[test]
    fn mutated_valid_bodies_never_panic_and_accepted_bytes_round_trip(
        spec in body_spec(),
        edits in vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
        cut in prop::option::weighted(0.2, any::<prop::sample::Index>()),
    ) {
        let (body, _) = build(&spec);
        let mut bytes = body.encode().unwrap();
        for (at, byte) in edits {
            let i = at.index(bytes.len());
            bytes[i] = byte;
        }
        if let Some(cut) = cut {
            bytes.truncate(cut.index(bytes.len() + 1));
        }
        check_accepted_bytes_are_reproduced(&bytes)?;
    }
}

// ---- property 2: valid bodies survive encode -> decode ---------------------------------

/// What one encode -> decode of a valid body did, for the coverage check.
#[derive(Debug, Default)]
struct RoundTripFacts {
    widened: usize,
    kept_short: usize,
    tiny: bool,
    fat_section: Option<bool>,
}

fn check_valid_body_round_trips(spec: &BodySpec) -> Result<RoundTripFacts, TestCaseError> {
    let (body, _) = build(spec);
    let original = shape(&body);
    let bytes = body
        .encode()
        .map_err(|e| TestCaseError::fail(format!("a valid body does not encode: {e}")))?;
    let layout = Encoder::new().code_offsets(&body).unwrap().to_vec();
    let code_size = *layout.last().unwrap();

    let mut input = bytes.clone();
    input.extend(&spec.tail);
    let mut decoded = MethodBody::new();
    let used = Decoder::new()
        .decode_into(&input, &mut decoded)
        .map_err(|e| TestCaseError::fail(format!("encoded body does not decode: {e}")))?;
    prop_assert_eq!(used, bytes.len(), "decoder consumed a different length");
    let got = shape(&decoded);

    // Header: tiny exactly when legal and not forced fat; a tiny header means max stack 8.
    let tiny = !spec.force_fat
        && code_size <= 63
        && spec.max_stack <= 8
        && spec.local_var_sig == 0
        && !spec.init_locals
        && body.clauses.is_empty();
    prop_assert_eq!(decoded.has_tiny_format(), tiny);
    prop_assert_eq!(bytes[0] & 3, if tiny { 2 } else { 3 });
    prop_assert_eq!(got.max_stack, if tiny { 8 } else { original.max_stack });
    prop_assert_eq!(got.init_locals, original.init_locals);
    prop_assert_eq!(got.local_var_sig, original.local_var_sig);

    // Code: same operands by position; same opcodes, except that a short branch may come
    // back in its long form, and then only because its short displacement did not fit.
    prop_assert_eq!(got.code.len(), original.code.len());
    let offsets = Encoder::deriving_every_byte()
        .code_offsets(&decoded)
        .unwrap()
        .to_vec();
    let positions: Vec<usize> = decoded.instrs.ids().map(InstrId::index).collect();
    let mut facts = RoundTripFacts {
        tiny,
        ..Default::default()
    };
    for (i, ((op, arg), (dop, darg))) in original.code.iter().zip(&got.code).enumerate() {
        prop_assert_eq!(arg, darg, "operand of instruction {} ({})", i, op);
        if op == dop {
            if op.operand() == OperandKind::ShortBranch {
                facts.kept_short += 1;
            }
            continue;
        }
        prop_assert_eq!(
            op.long_form()
                .filter(|_| op.operand() == OperandKind::ShortBranch),
            Some(*dop),
            "instruction {} changed from {} to {}",
            i,
            op,
            dop
        );
        let Arg::Target(t) = arg else { unreachable!() };
        let short_next = offsets[positions[i]] + op.fixed_len().unwrap();
        let disp = i64::from(offsets[positions[*t]]) - i64::from(short_next);
        prop_assert!(
            i8::try_from(disp).is_err(),
            "instruction {} ({}) widened although {} fits in int8",
            i,
            op,
            disp
        );
        facts.widened += 1;
    }

    // Clauses: same, in the same order.
    prop_assert_eq!(&got.clauses, &original.clauses);
    if !got.clauses.is_empty() {
        // Clauses imply a fat header; the first section follows the code, 4-aligned.
        let at = (12 + code_size as usize).next_multiple_of(4);
        facts.fat_section = Some(bytes[at] & 0x40 != 0);
    }

    // Original offsets are where the encoder put each instruction.
    for (p, id) in decoded.instrs.ids().enumerate() {
        let orig_id = body.instrs.ids().nth(p).unwrap();
        prop_assert_eq!(decoded.original_offset(id), Some(layout[orig_id.index()]));
    }

    // Idempotence: the decoded body encodes to the same bytes.
    let again = decoded.encode().unwrap();
    prop_assert_eq!(
        hex(&again),
        hex(&bytes),
        "re-encoding the decoded body differs"
    );
    Ok(facts)
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn valid_bodies_round_trip_structurally_and_reencode_identically(spec in body_spec()) {
        check_valid_body_round_trips(&spec)?;
    }
}

/// The generator does what the properties above rely on: checked over a fixed-seed
/// sample, so that a change that starves a case (say, no branch is ever widened) fails
/// here instead of silently weakening the properties.
#[test]
fn generators_cover_what_the_properties_claim() {
    let mut runner = TestRunner::deterministic();
    let strategy = body_spec();
    let mut opcodes = BTreeSet::new();
    let mut kinds = BTreeSet::new();
    let (mut widened, mut kept_short, mut tiny, mut fat) = (0, 0, 0, 0);
    let (mut small_sections, mut fat_sections) = (0, 0);
    let (mut nested, mut shared_try, mut handlers_before_try) = (0, 0, 0);
    for _ in 0..CASES {
        let spec = strategy.new_tree(&mut runner).unwrap().current();
        let facts = check_valid_body_round_trips(&spec).unwrap();
        let (body, clauses) = build(&spec);
        opcodes.extend(body.instrs.iter().map(|(_, i)| i.opcode));
        widened += facts.widened;
        kept_short += facts.kept_short;
        if facts.tiny {
            tiny += 1;
        } else {
            fat += 1;
        }
        match facts.fat_section {
            Some(true) => fat_sections += 1,
            Some(false) => small_sections += 1,
            None => {}
        }
        for (i, a) in clauses.iter().enumerate() {
            kinds.insert(a.kind.flags());
            handlers_before_try += usize::from(a.handler.1 < a.try_.0);
            for b in &clauses[i + 1..] {
                let inside = |x: (usize, usize), y: (usize, usize)| y.0 <= x.0 && x.1 <= y.1;
                if a.try_ == b.try_ {
                    shared_try += 1;
                } else if inside(a.try_, b.try_)
                    || inside(a.try_, b.handler)
                    || inside(b.try_, a.try_)
                    || inside(b.try_, a.handler)
                {
                    nested += 1;
                }
            }
        }
    }
    eprintln!(
        "{CASES} bodies: {} opcodes, {widened} widened / {kept_short} short branches, \
         {tiny} tiny / {fat} fat headers, {small_sections} small / {fat_sections} fat EH \
         sections, {nested} nested pairs, {shared_try} shared tries, \
         {handlers_before_try} handlers before their try",
        opcodes.len()
    );
    let missing: Vec<_> = OpCode::ALL
        .iter()
        .filter(|op| !opcodes.contains(op))
        .collect();
    assert!(missing.is_empty(), "opcodes never generated: {missing:?}");
    assert_eq!(kinds.len(), 4, "every clause kind");
    for (what, count) in [
        ("widened branches", widened),
        ("short branches kept short", kept_short),
        ("tiny headers", tiny),
        ("fat headers", fat),
        ("small EH sections", small_sections),
        ("fat EH sections", fat_sections),
        ("nested clauses", nested),
        ("clauses sharing a try", shared_try),
        ("handlers placed before their try", handlers_before_try),
    ] {
        assert!(count > 0, "the generator produced no {what}");
    }
}

// ---- regressions: minimal inputs the properties found ----------------------------------

/// Asserts the any-bytes property on one input, which must be accepted.
fn assert_reproduced(bytes: &[u8]) {
    assert!(MethodBody::decode(bytes).is_ok(), "{}", hex(bytes));
    if let Err(e) = check_accepted_bytes_are_reproduced(bytes) {
        panic!("{e}");
    }
}

/// A fat header with MoreSects (and `flags`), the code `nop; leave.s +1; endfinally; ret`
/// (5 bytes), the 3 padding bytes `pad`, then `sections`.
fn try_finally_with_sections(pad: [u8; 3], sections: &[&[u8]]) -> Vec<u8> {
    let code = [0x00, 0xDE, 0x01, 0xDC, 0x2A];
    let mut b = vec![0x0B, 0x30, 0x01, 0x00];
    b.extend((code.len() as u32).to_le_bytes());
    b.extend(0u32.to_le_bytes());
    b.extend(code);
    b.extend(pad);
    for s in sections {
        b.extend(*s);
    }
    b
}

/// The small clause `finally: try [0, 3) handler [3, 4)`.
const FINALLY_CLAUSE: [u8; 12] = [0x02, 0x00, 0x00, 0x00, 0x03, 0x03, 0x00, 0x01, 0, 0, 0, 0];

#[test]
fn regression_eh_sections_without_clauses_are_kept() {
    // Found by `code_and_section_bytes_...`: MoreSects and one small EH section holding
    // no clause. The encoder wrote neither the section nor MoreSects.
    assert_reproduced(&[
        0x0B, 0x30, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x04, 0x00,
        0x00,
    ]);
    // An empty fat section, and an empty section chained before a non-empty one.
    assert_reproduced(&try_finally_with_sections([0; 3], &[&[0x41, 4, 0, 0]]));
    let mut clause = vec![0x01, 16, 0, 0];
    clause.extend(FINALLY_CLAUSE);
    assert_reproduced(&try_finally_with_sections(
        [0; 3],
        &[&[0x81, 4, 0, 0], &clause],
    ));
}

#[test]
fn regression_reserved_bytes_of_small_eh_sections_are_kept() {
    // Found by `mutated_valid_bodies_...`: the two bytes after a small section's size
    // were written back as zero.
    let mut section = vec![0x01, 16, 0xAB, 0xCD];
    section.extend(FINALLY_CLAUSE);
    assert_reproduced(&try_finally_with_sections([0; 3], &[&section]));
}

#[test]
fn regression_padding_before_eh_sections_is_kept() {
    // Found by `code_and_section_bytes_...`: the padding between the code and the first
    // section was written back as zero.
    let mut section = vec![0x01, 16, 0, 0];
    section.extend(FINALLY_CLAUSE);
    assert_reproduced(&try_finally_with_sections([0xFF, 0x00, 0x5A], &[&section]));
}

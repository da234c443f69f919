//! `scan_body` against the decoder: on every CoreLib body both report the same length and
//! instruction count; on arbitrary and mutated bytes the scan never panics, and accepts
//! (with the decoder's figures) every body the decoder accepts.

use ilrewrite::body::{BodyExtent, Decoder, scan_body};
use ilrewrite::opcode::OperandKind;
use ilrewrite::{MethodBody, OpCode};
use proptest::prelude::*;

/// Checks the scan against the decoder on one input; returns the extent when the decoder
/// accepts the input.
fn agree(
    bytes: &[u8],
    decoder: &mut Decoder,
    body: &mut MethodBody,
) -> Result<Option<BodyExtent>, String> {
    let scanned = scan_body(bytes);
    match decoder.decode_into(bytes, body) {
        Ok(len) => {
            let extent = scanned.map_err(|e| format!("decoder accepts, scan fails: {e}"))?;
            let expected = BodyExtent {
                len,
                code_offset: extent.code_offset,
                code_size: body.original_code_size(),
                instructions: body.instrs.len() as u32,
                eh_clauses: body.clauses.len() as u32,
                tiny: body.has_tiny_format(),
            };
            if extent != expected {
                return Err(format!("scan {extent:?}, decoder {expected:?}"));
            }
            if extent.code_offset != if extent.tiny { 1 } else { 12 } {
                return Err(format!("code offset {extent:?}"));
            }
            Ok(Some(extent))
        }
        Err(decode_error) => {
            // The scan checks less (no branch targets, no clause ranges), so it may accept;
            // when it does, its length still covers what it walked.
            if let Ok(extent) = scanned
                && extent.len > bytes.len()
            {
                return Err(format!("scan past the input: {extent:?} ({decode_error})"));
            }
            Ok(None)
        }
    }
}

#[cfg(feature = "pe")]
mod corelib {
    use super::*;
    use ilrewrite::pe::Assembly;
    use ilrewrite_corpus::Runtime;
    use std::collections::HashSet;
    use std::sync::OnceLock;

    /// Each runtime's System.Private.CoreLib and its bytes, read once.
    fn corelibs() -> &'static [(&'static Runtime, Vec<u8>)] {
        static DATA: OnceLock<Vec<(&'static Runtime, Vec<u8>)>> = OnceLock::new();
        DATA.get_or_init(|| {
            let runtimes = ilrewrite_corpus::runtimes().unwrap_or_else(|e| panic!("{e}"));
            runtimes
                .iter()
                .map(|rt| {
                    let path = rt.corelib();
                    let data =
                        std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                    (rt, data)
                })
                .collect()
        })
    }

    /// The distinct IL bodies (by RVA) of the CoreLib in `data`, each running to the end
    /// of its section.
    fn distinct_bodies(data: &'static [u8]) -> Vec<&'static [u8]> {
        let asm = Assembly::parse(data).expect("CoreLib parses");
        let mut seen = HashSet::new();
        asm.methods()
            .map(|m| m.expect("CoreLib metadata is well-formed"))
            .filter(|m| m.is_il() && seen.insert(m.rva))
            .filter_map(|m| m.body)
            .collect()
    }

    /// The distinct IL bodies of every runtime's CoreLib: what the mutations start from.
    pub fn bodies() -> &'static [&'static [u8]] {
        static BODIES: OnceLock<Vec<&'static [u8]>> = OnceLock::new();
        BODIES.get_or_init(|| {
            corelibs()
                .iter()
                .flat_map(|(_, data)| distinct_bodies(data))
                .collect()
        })
    }

    #[test]
    fn scan_agrees_with_the_decoder_on_every_corelib_body() {
        for (rt, data) in corelibs() {
            let bodies = distinct_bodies(data);
            let (mut decoder, mut body) = (Decoder::new(), MethodBody::new());
            let mut instructions = 0usize;
            let mut code_bytes = 0usize;
            for (i, bytes) in bodies.iter().enumerate() {
                let extent = agree(bytes, &mut decoder, &mut body)
                    .unwrap_or_else(|e| panic!("{rt} body {i}: {e}"))
                    .unwrap_or_else(|| panic!("{rt} body {i}: the decoder rejects it"));
                instructions += extent.instructions as usize;
                code_bytes += extent.code_size as usize;
                // The scan sees only the body: what follows it does not matter.
                assert_eq!(scan_body(&bytes[..extent.len]), Ok(extent), "{rt} body {i}");
            }
            // corpus_roundtrip checks the code size through the decoder; the instruction
            // count is over distinct bodies, each counted once.
            println!(
                "{rt}: {} bodies, {code_bytes} bytes, {instructions} instructions",
                bodies.len()
            );
            if let Some(f) = rt.facts() {
                assert_eq!(bodies.len(), f.corelib_distinct_bodies, "{rt}");
                assert_eq!(code_bytes, f.corelib_code_bytes, "{rt}");
                assert_eq!(instructions, f.corelib_instructions, "{rt}");
            }
        }
    }

    /// A CoreLib body, trimmed to its length, with a few bytes overwritten.
    pub fn mutated_body() -> impl Strategy<Value = Vec<u8>> {
        let count = bodies().len();
        (
            0..count,
            prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
            any::<bool>(),
        )
            .prop_map(|(i, edits, truncate)| {
                let bytes = bodies()[i];
                let len = scan_body(bytes).expect("CoreLib body scans").len;
                let mut v = bytes[..len].to_vec();
                for (at, byte) in edits {
                    let at = at.index(v.len());
                    v[at] = byte;
                }
                if truncate {
                    v.pop();
                }
                v
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn mutated_corelib_bodies(bytes in mutated_body()) {
            let (mut decoder, mut body) = (Decoder::new(), MethodBody::new());
            agree(&bytes, &mut decoder, &mut body).map_err(TestCaseError::fail)?;
        }
    }
}

/// Encodes instructions drawn from the opcode table with arbitrary operands, except that
/// branch displacements are 0 and switches have up to 3 targets of displacement 0; a
/// final `ret` gives those a target.
fn plausible_code() -> impl Strategy<Value = Vec<u8>> {
    let instr = (prop::sample::select(OpCode::ALL), any::<[u8; 8]>(), 0u32..4);
    prop::collection::vec(instr, 0..40).prop_map(|instrs| {
        let mut code = Vec::new();
        for (opcode, operand, targets) in instrs {
            let encoding = opcode.code();
            if encoding >= 0xFE00 {
                code.push(0xFE);
            }
            code.push(encoding as u8);
            match opcode.operand() {
                OperandKind::Switch => {
                    code.extend_from_slice(&targets.to_le_bytes());
                    code.extend(std::iter::repeat_n(0, 4 * targets as usize));
                }
                OperandKind::ShortBranch | OperandKind::Branch => {
                    code.extend(std::iter::repeat_n(
                        0,
                        opcode.operand().size().unwrap() as usize,
                    ));
                }
                kind => code.extend_from_slice(&operand[..kind.size().unwrap() as usize]),
            }
        }
        code.push(OpCode::Ret.code() as u8);
        code
    })
}

/// Bytes biased towards well-formed bodies: a tiny or fat header, code that mostly
/// decodes, possibly with a few bytes overwritten, then arbitrary bytes (where EH
/// sections would be).
fn plausible_body() -> impl Strategy<Value = Vec<u8>> {
    (
        any::<bool>(),
        plausible_code(),
        prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..2),
        prop::collection::vec(any::<u8>(), 0..64),
        any::<u8>(),
    )
        .prop_map(|(fat, mut code, edits, tail, flags)| {
            for (at, byte) in edits {
                let at = at.index(code.len());
                code[at] = byte;
            }
            let mut v = Vec::new();
            if fat || code.len() > 63 {
                // Fat header; MoreSects and InitLocals taken from `flags`.
                v.extend_from_slice(&[0x03 | (flags & 0x18), 0x30, 8, 0]);
                v.extend_from_slice(&(code.len() as u32).to_le_bytes());
                v.extend_from_slice(&[0; 4]);
            } else {
                v.push(((code.len() as u8) << 2) | 2);
            }
            v.extend_from_slice(&code);
            v.extend_from_slice(&tail);
            v
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]

    #[test]
    fn arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        let (mut decoder, mut body) = (Decoder::new(), MethodBody::new());
        agree(&bytes, &mut decoder, &mut body).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn plausible_bodies(bytes in plausible_body()) {
        let (mut decoder, mut body) = (Decoder::new(), MethodBody::new());
        agree(&bytes, &mut decoder, &mut body).map_err(TestCaseError::fail)?;
    }
}

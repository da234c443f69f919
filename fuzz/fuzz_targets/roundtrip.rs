//! decode -> encode -> decode: any input the decoder accepts is reproduced exactly.
//!
//! If the first decode succeeds, encoding must succeed and give exactly the bytes the
//! decoder consumed; decoding those bytes must succeed, consume all of them and give the
//! same body; and encoding that body must give the same bytes again.
#![no_main]

use ilrewrite::body::{Decoder, Encoder};
use ilrewrite::{ClauseKind, InstrId, MethodBody, OpCode, Operand};
use libfuzzer_sys::fuzz_target;

/// An operand with branch targets replaced by instruction positions.
#[derive(Debug, PartialEq, Eq)]
enum Arg {
    Plain(Operand),
    Target(u32),
    Switch(Vec<u32>),
}

/// Everything observable about a body, with ids replaced by positions.
#[derive(Debug, PartialEq, Eq)]
struct Shape {
    header: (u16, bool, u32, bool),
    code: Vec<(OpCode, Arg)>,
    clauses: Vec<(u32, u32, [u32; 4])>,
}

fn shape(body: &MethodBody) -> Shape {
    let pos = body.positions();
    let at = |id: InstrId| pos.get(id.index()).copied().unwrap_or(u32::MAX);
    let code = body
        .instrs
        .iter()
        .map(|(_, i)| {
            let arg = match i.operand {
                Operand::Target(t) => Arg::Target(at(t)),
                Operand::Switch(s) => Arg::Switch(
                    body.instrs
                        .switch_targets(s)
                        .iter()
                        .map(|&t| at(t))
                        .collect(),
                ),
                other => Arg::Plain(other),
            };
            (i.opcode, arg)
        })
        .collect();
    let clauses = body
        .clauses
        .iter()
        .map(|c| {
            let extra = match c.kind {
                ClauseKind::Catch(token) => token,
                ClauseKind::Filter(start) => at(start),
                ClauseKind::Finally | ClauseKind::Fault => 0,
            };
            let regions = [
                at(c.try_start),
                at(c.try_last),
                at(c.handler_start),
                at(c.handler_last),
            ];
            (c.kind.flags(), extra, regions)
        })
        .collect();
    Shape {
        header: (
            body.max_stack,
            body.init_locals,
            body.local_var_sig,
            body.has_tiny_format(),
        ),
        code,
        clauses,
    }
}

fuzz_target!(|data: &[u8]| {
    let mut first = MethodBody::new();
    let Ok(used) = Decoder::new().decode_into(data, &mut first) else {
        return;
    };
    let consumed = &data[..used];
    let encoded = first.encode().expect("an accepted body re-encodes");
    assert!(
        encoded == consumed,
        "not reproduced byte-identically:\n  input   {consumed:02x?}\n  encoded {encoded:02x?}"
    );
    let mut second = MethodBody::new();
    let used_again = Decoder::new()
        .decode_into(&encoded, &mut second)
        .expect("the re-encoded body decodes");
    assert_eq!(used_again, encoded.len());
    assert_eq!(shape(&second), shape(&first));
    assert!(second.encode().expect("encodes again") == encoded);
    // A reused encoder copies the unedited code: the same bytes.
    let mut copied = Vec::new();
    Encoder::new()
        .encode(&second, &mut copied)
        .expect("a reused encoder encodes");
    assert!(copied == encoded);
});

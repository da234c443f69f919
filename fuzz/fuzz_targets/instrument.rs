//! Any bytes -> a method signature, a LocalVarSig and a body -> `Instrumenter` (one with
//! straight snippets, one with branching snippets, per-module tokens and the return-value
//! local): never panics, reads out of bounds or hangs, and keeps its promises.
//!
//! The first two bytes pick the method's signature (return type, parameter count) and
//! its LocalVarSig from small tables, the next four its id; the rest is the body. For a
//! body the analysis accepts, the instrumenter either refuses it before any edit (the body
//! is left exactly as it was) or rewrites it; a rewritten body encodes (when the original
//! did), decodes back with one more clause, verifies with the max stack the instrumenter
//! reported, and its IL map has one entry per original instruction, in code order.
#![no_main]

use ilrewrite::analysis::{CallEffect, ReturnKind, StackAnalyzer};
use ilrewrite::body::Decoder;
use ilrewrite::opcode::OpCode;
use ilrewrite::transform::{InstrumentationCode, Instrumenter, MethodContext, Snippet};
use ilrewrite::{Error, Instruction, MethodBody, Result};
use libfuzzer_sys::fuzz_target;
use std::cell::RefCell;

/// The tokens the snippets call: each pops one value and pushes none.
const HOOK: u32 = 0x0AFF_FF00;
/// The per-module tokens of the snippets (`MethodContext::tokens`).
const MODULE_TOKENS: [u32; 2] = [0x0AFF_FF01, 0x0AFF_FF02];
/// The token the rewritten body names its extended LocalVarSig by.
const NEW_LOCALS: u32 = 0x11FF_FFFF;

/// Effects from the token's low bits (as the analyze target), the hooks pop one value;
/// tokens with bit 4 set do not resolve.
fn resolver(opcode: OpCode, token: u32) -> Result<CallEffect> {
    if token & 0xFFFF_FF00 == HOOK {
        return Ok(CallEffect { pops: 1, pushes: 0 });
    }
    if token & 0x10 != 0 {
        return Err(Error::UnresolvedCall {
            opcode: opcode.name(),
            token,
            what: "fuzz resolver",
        });
    }
    CallEffect::from_parts(token & 0x20 != 0, false, token & 3, token & 4 != 0, opcode)
}

/// Return types (signature bytes): void, int32, string, int32&, a value type, !!0,
/// int32 modreq(TypeRef 1), int32[].
const RETURN_TYPES: [&[u8]; 8] = [
    &[0x01],
    &[0x08],
    &[0x0E],
    &[0x10, 0x08],
    &[0x11, 0x05],
    &[0x1E, 0x00],
    &[0x1F, 0x05, 0x08],
    &[0x1D, 0x08],
];

/// LocalVarSigs: none, empty, (int32), (string, object, int32&) and one with 130 locals
/// (a two-byte count).
fn locals(pick: u8) -> Option<Vec<u8>> {
    Some(match pick % 5 {
        0 => return None,
        1 => vec![0x07, 0x00],
        2 => vec![0x07, 0x01, 0x08],
        3 => vec![0x07, 0x03, 0x0E, 0x1C, 0x10, 0x08],
        _ => {
            let mut sig = vec![0x07, 0x80, 130];
            sig.extend(std::iter::repeat_n(0x08, 130));
            sig
        }
    })
}

/// `if (token 0) { hook(id) }` when `guarded`, else `hook(id)`.
fn probe(guarded: bool) -> Snippet {
    let mut b = Snippet::builder();
    let skip = b.new_label();
    if guarded {
        b.token(OpCode::Ldsfld, 0);
        b.branch(OpCode::BrfalseS, skip);
    }
    b.method_id();
    b.push(Instruction::with_token(OpCode::Call, HOOK));
    b.bind(skip);
    b.finish().expect("a valid snippet")
}

fn instrumenter(guarded: bool) -> Instrumenter {
    let mut value = Snippet::builder();
    if guarded {
        // Reads the return value and stores it back, then calls a hook with a
        // per-module token's field.
        value.return_local(OpCode::Ldloc);
        value.return_local(OpCode::Stloc);
        value.token(OpCode::Ldsfld, 1);
        value.push(Instruction::with_token(OpCode::Call, HOOK));
    }
    Instrumenter::new(InstrumentationCode {
        entry: probe(guarded),
        exit: probe(guarded),
        epilogue_value: value.finish().expect("a valid snippet"),
        epilogue_void: if guarded {
            probe(true)
        } else {
            Snippet::default()
        },
    })
    .expect("valid instrumentation code")
}

thread_local! {
    static STATE: RefCell<(Decoder, [Instrumenter; 2], StackAnalyzer)> = RefCell::new((
        Decoder::new(),
        [instrumenter(false), instrumenter(true)],
        StackAnalyzer::new(),
    ));
}

fuzz_target!(|data: &[u8]| {
    let [shape, locals_pick, a, b, c, d, code @ ..] = data else {
        return;
    };
    let ret = RETURN_TYPES[usize::from(shape & 7)];
    let params = (shape >> 3) & 3;
    // DEFAULT calling convention (HASTHIS when bit 5 is set), `params` int32 parameters.
    let mut signature = vec![if shape & 0x20 != 0 { 0x20 } else { 0x00 }, params];
    signature.extend_from_slice(ret);
    signature.extend(std::iter::repeat_n(0x08, usize::from(params)));
    let locals = locals(*locals_pick);
    let id = i32::from_le_bytes([*a, *b, *c, *d]);
    let returns_value = ret != [0x01];

    STATE.with_borrow_mut(|(decoder, instrumenters, analyzer)| {
        let mut original = MethodBody::new();
        if decoder.decode_into(code, &mut original).is_err() {
            return;
        }
        let returns = ReturnKind::value_if(returns_value);
        if analyzer.analyze(&original, &resolver, returns).is_err() {
            return;
        }
        let encodes = original.encode().is_ok();
        let method = MethodContext {
            signature: &signature,
            locals: locals.as_deref(),
            id,
            tokens: &MODULE_TOKENS,
        };
        for instrumenter in instrumenters.iter_mut() {
            let mut body = original.clone();
            let done = match instrumenter.instrument(&mut body, &method, &resolver) {
                Ok(done) => done,
                Err(
                    Error::Unsupported { .. }
                    | Error::EmptyBody
                    | Error::BadEhNesting { .. }
                    | Error::NotInBody { .. },
                ) => {
                    // Refused before any edit (an unsupported body, or an invalid clause
                    // list in code the analysis does not reach).
                    assert_eq!(format!("{body:?}"), format!("{original:?}"));
                    continue;
                }
                Err(e) => panic!("a verified body failed to instrument: {e}"),
            };
            assert_eq!(done.new_locals_signature.is_some(), returns_value);
            let (max_stack, new_locals) = (done.max_stack, done.new_locals_signature.is_some());
            let done_tails = done.tail_prefixes_removed;
            if new_locals {
                body.local_var_sig = NEW_LOCALS;
            }
            let mut bytes = Vec::new();
            match instrumenter.encode(&body, &mut bytes) {
                Ok(_) => {}
                // The original's own odd instructions do not encode either.
                Err(_) if !encodes => continue,
                Err(e) => panic!("an instrumented body of an encodable one failed: {e}"),
            }
            let map = instrumenter.il_map(&body);
            let again = MethodBody::decode(&bytes).expect("the new bytes decode");
            assert_eq!(again.clauses.len(), original.clauses.len() + 1);
            let analysis = analyzer
                .analyze(&again, &resolver, ReturnKind::value_if(returns_value))
                .expect("the decoded rewrite verifies");
            assert_eq!(analysis.max_stack(), max_stack);
            assert_eq!(again.max_stack, max_stack);
            // One entry per surviving original instruction (the wrap removes `tail.`
            // prefixes), old offsets rising, new offsets rising and inside the code.
            let entries = map.entries();
            assert_eq!(
                entries.len(),
                original.instrs.len() - done_tails,
                "IL map entries"
            );
            assert!(entries.windows(2).all(|w| {
                w[0].old_offset < w[1].old_offset && w[0].new_offset < w[1].new_offset
            }));
        }
    });
});

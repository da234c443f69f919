//! Any bytes -> decode -> stack analysis, then wrap -> analysis of the edited body: never
//! panics, reads out of bounds or hangs, and agrees with itself.
//!
//! One analyzer is reused across inputs (stale position maps and buffers from earlier,
//! larger or linked bodies are exercised) and compared with a fresh one: both must give
//! the same result, error or max stack and heights. Call sites get their effect from
//! their token's low bits, and fail for some tokens, so unresolvable calls in reachable
//! and unreachable code are exercised. After a successful analysis the body is wrapped in
//! try/finally (a linked list with a clause) and analysed again the same way; a wrapped
//! body that was valid must stay valid.
#![no_main]

use ilrewrite::MethodBody;
use ilrewrite::analysis::{CallEffect, ReturnKind, StackAnalyzer};
use ilrewrite::body::Decoder;
use ilrewrite::opcode::OpCode;
use ilrewrite::transform::{Returns, TailCallPolicy, WrapOptions, wrap_try_finally};
use ilrewrite::{Error, Result};
use libfuzzer_sys::fuzz_target;
use std::cell::RefCell;

thread_local! {
    static STATE: RefCell<(Decoder, MethodBody, StackAnalyzer)> =
        RefCell::new((Decoder::new(), MethodBody::new(), StackAnalyzer::new()));
}

/// Effects from the token's low bits; tokens with bit 4 set do not resolve.
fn resolver(opcode: OpCode, token: u32) -> Result<CallEffect> {
    if token & 0x10 != 0 {
        return Err(Error::UnresolvedCall {
            opcode: opcode.name(),
            token,
            what: "fuzz resolver",
        });
    }
    CallEffect::from_parts(token & 0x20 != 0, false, token & 3, token & 4 != 0, opcode)
}

type Outcome = std::result::Result<(u16, Option<bool>, Vec<Option<u16>>), String>;

fn analyse(analyzer: &mut StackAnalyzer, body: &MethodBody, returns: Option<bool>) -> Outcome {
    analyzer
        .analyze(
            body,
            &resolver,
            returns.map_or(ReturnKind::Infer, ReturnKind::value_if),
        )
        .map(|a| (a.max_stack(), a.returns_value(), a.heights_by_id()))
        .map_err(|e| e.to_string())
}

fuzz_target!(|data: &[u8]| {
    STATE.with_borrow_mut(|(decoder, body, shared)| {
        if decoder.decode_into(data, body).is_err() {
            return;
        }
        let reused = analyse(shared, body, None);
        assert_eq!(reused, analyse(&mut StackAnalyzer::new(), body, None));
        let Ok((_, returns_value, _)) = reused else {
            return;
        };
        let returns = match returns_value {
            Some(true) => Returns::Value { local: 0 },
            _ => Returns::Void,
        };
        let options = WrapOptions {
            returns,
            entry: &[],
            exit: &[],
            catch: None,
            // As before the policy existed: the prefixes are removed.
            tail_calls: TailCallPolicy::DropPrefix,
        };
        if wrap_try_finally(body, &options).is_err() {
            return;
        }
        let wrapped = analyse(shared, body, returns_value);
        assert_eq!(
            wrapped,
            analyse(&mut StackAnalyzer::new(), body, returns_value)
        );
        if let Err(e) = wrapped {
            panic!("a valid body is invalid after wrapping: {e}");
        }
    });
});

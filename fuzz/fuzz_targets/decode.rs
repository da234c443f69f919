//! Any bytes -> `MethodBody` decoding never panics, reads out of bounds or hangs.
//!
//! The decoder and the body are reused across inputs, as a profiler decoding many bodies
//! would, so stale state left by a previous (possibly failed) decode is exercised too.
//! When decoding succeeds, laying the body out and disassembling it must succeed as well.
#![no_main]

use ilrewrite::MethodBody;
use ilrewrite::body::{Decoder, Encoder};
use ilrewrite::disasm::disassemble;
use ilrewrite::metadata::NoMetadata;
use libfuzzer_sys::fuzz_target;
use std::cell::RefCell;

thread_local! {
    static STATE: RefCell<(Decoder, MethodBody, Encoder)> =
        RefCell::new((Decoder::new(), MethodBody::new(), Encoder::new()));
}

fuzz_target!(|data: &[u8]| {
    STATE.with_borrow_mut(|(decoder, body, encoder)| {
        let Ok(used) = decoder.decode_into(data, body) else {
            return;
        };
        assert!(used <= data.len());
        let offsets = encoder.code_offsets(body).expect("a decoded body lays out");
        assert_eq!(offsets.len(), body.instrs.arena_len() + 1);
        disassemble(body, &NoMetadata, None).expect("a decoded body disassembles");
    });
});

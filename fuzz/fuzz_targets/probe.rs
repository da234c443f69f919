//! Any bytes -> decode -> control-flow graph -> a probe before every basic block in one
//! `insert_before_each` -> encode -> decode: never panics, reads out of bounds or hangs,
//! and does what a code-coverage tool relies on.
//!
//! The graph must partition the code into blocks in list order. After the probes, every
//! branch operand and region start that named a block's first instruction names that
//! block's probe instead, and the probes' own operands are as given. A body that encoded
//! before the probes still encodes, and decodes back with the probes' instructions added.
#![no_main]

use ilrewrite::analysis::ControlFlowGraph;
use ilrewrite::graph::Incoming;
use ilrewrite::{ClauseKind, InstrId, Instruction, MethodBody, OpCode, Operand};
use libfuzzer_sys::fuzz_target;
use std::collections::HashMap;

/// Every branch and switch target of the body, in code order, and the region starts.
fn references(body: &MethodBody) -> Vec<InstrId> {
    let mut refs = Vec::new();
    for (_, instr) in body.instrs.iter() {
        match instr.operand {
            Operand::Target(t) => refs.push(t),
            Operand::Switch(s) => refs.extend(body.instrs.switch_targets(s)),
            _ => {}
        }
    }
    for c in &body.clauses {
        refs.push(c.try_start);
        refs.push(c.handler_start);
        if let ClauseKind::Filter(f) = c.kind {
            refs.push(f);
        }
    }
    refs
}

fuzz_target!(|data: &[u8]| {
    let Ok(mut body) = MethodBody::decode(data) else {
        return;
    };
    let Ok(cfg) = ControlFlowGraph::build(&body) else {
        return;
    };
    // The blocks, in order, cover the code exactly once.
    let order: Vec<InstrId> = body.instrs.ids().collect();
    let mut at = 0usize;
    for (b, block) in cfg.blocks() {
        assert_eq!(
            order.get(at),
            Some(&block.first),
            "block {b:?} starts out of order"
        );
        let len = block.len as usize;
        assert!(
            len >= 1 && at + len <= order.len(),
            "block {b:?} has a bad length"
        );
        assert_eq!(
            order[at + len - 1],
            block.last,
            "block {b:?} ends out of order"
        );
        for &id in &order[at..at + len] {
            assert_eq!(cfg.block_of(id), Some(b), "{id:?} is not in its block");
        }
        at += len;
    }
    assert_eq!(at, order.len(), "the blocks do not cover the code");

    let encodes = body.encode().is_ok();
    let before = references(&body);
    let leaders: Vec<InstrId> = cfg.blocks().map(|(_, block)| block.first).collect();
    let probes: Vec<[Instruction; 2]> = (0..leaders.len())
        .map(|n| {
            [
                Instruction::ldc_i4(n as i32),
                Instruction::with_token(OpCode::Call, 0x0A00_0001),
            ]
        })
        .collect();
    let sites: Vec<(InstrId, &[Instruction])> = leaders
        .iter()
        .zip(&probes)
        .map(|(&l, p)| (l, &p[..]))
        .collect();
    let ids = body
        .insert_before_each(&sites, Incoming::Redirect)
        .expect("probes before instructions of the body are never refused");
    let probe_of: HashMap<InstrId, InstrId> = leaders
        .iter()
        .zip(&ids)
        .map(|(&l, ids)| (l, ids[0]))
        .collect();
    // Each reference moved to the probe of the block it named (every target and region
    // start is the first instruction of a block).
    let after = references(&body);
    assert_eq!(after.len(), before.len(), "probes have no branch operands");
    for (old, new) in before.iter().zip(&after) {
        assert_eq!(
            probe_of.get(old),
            Some(new),
            "{old:?} was not moved to its probe"
        );
    }
    assert!(ids.iter().flatten().all(|&id| body.instrs.contains(id)));
    assert_eq!(body.instrs.len(), order.len() + 2 * leaders.len());
    if encodes {
        let bytes = body
            .encode()
            .expect("a body that encoded still encodes with probes");
        let again = MethodBody::decode(&bytes).expect("the probed body decodes");
        assert_eq!(again.instrs.len(), body.instrs.len());
    }
});

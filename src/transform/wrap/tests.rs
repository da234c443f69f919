//! The one-pass path held to the general path.

use super::flat::{self, Injected};
use super::linked;
use super::scan::CodeScan;
use super::stored::{Placement, StoredCode};
use super::{Returns, TailCallPolicy, WrapOptions};
use crate::body::MethodBody;
use crate::graph::packed::Slot;
use crate::graph::{InstrId, Instruction, Operand};
use crate::opcode::OpCode;
use crate::transform::snippet::Fill;

/// A flat body of `len` pseudo-random instructions (some `ret`s, branches, an odd
/// instruction now and then).
fn body(seed: &mut u64, len: u32) -> MethodBody {
    let mut next = || {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        *seed
    };
    let mut body = MethodBody::new();
    for _ in 0..len {
        let instr = match next() % 8 {
            0 | 1 => Instruction::simple(OpCode::Ret),
            2 => Instruction::branch(OpCode::Br, InstrId((next() % u64::from(len)) as u32)),
            3 => Instruction::new(OpCode::LdcI4S, Operand::Int(300)),
            4 => Instruction::with_token(OpCode::Call, 0x0A00_0001),
            5 => Instruction::ldc_i4(7),
            _ => Instruction::simple(OpCode::Nop),
        };
        body.append(instr);
    }
    body
}

/// The one-pass path gives what the edit-by-edit path gives, down to the ids, the
/// arena, the links and the side tables, for every shape of return (macro, short and
/// long local forms) and of injected code (operand-less, token, int, local, odd),
/// with the code packed by the wrap or given in stored form.
#[test]
fn flat_wrap_is_the_linked_wrap_at_once() {
    use crate::graph::packed::stored;
    let call = Instruction::with_token(OpCode::Call, 0x0AFF_FFF0);
    let odd = Instruction::new(OpCode::LdcI4S, Operand::Int(-1000));
    let codes: [&[Instruction]; 5] = [
        &[],
        &[Instruction::ldc_i4(5), call],
        &[odd, call],
        &[Instruction::ldc_i4(0x0600_1234), call],
        &[Instruction::ldloc(300), Instruction::ldloc(9), call],
    ];
    let store = |code: &[Instruction]| -> Option<Vec<Slot>> { code.iter().map(stored).collect() };
    let mut seed = 0x1234_5678_9ABC_DEF1u64;
    let (mut checked, mut checked_stored) = (0, 0);
    for len in 1..24 {
        for _ in 0..12 {
            let original = body(&mut seed, len);
            let scan = CodeScan::of(&original.instrs);
            let returns = [
                Returns::Void,
                Returns::Value { local: 3 },
                Returns::Value { local: 200 },
                Returns::Value { local: 1000 },
            ];
            for returns in returns {
                let epilogue = match returns {
                    Returns::Void => vec![],
                    Returns::Value { local } => vec![Instruction::ldloc(local), call],
                };
                for (entry, exit) in [(0, 1), (1, 1), (2, 0), (1, 2), (3, 4), (4, 3)] {
                    let opts = WrapOptions {
                        returns,
                        entry: codes[entry],
                        exit: codes[exit],
                        catch: None,
                        tail_calls: TailCallPolicy::DropPrefix,
                    };
                    let mut slow = original.clone();
                    let b = linked::wrap(
                        &mut slow,
                        &opts,
                        &scan,
                        &epilogue,
                        Placement::Absolute,
                        None,
                        None,
                    )
                    .expect("wraps");
                    let mut fast = original.clone();
                    let code = Injected::Instructions {
                        entry: opts.entry,
                        exit: opts.exit,
                        epilogue: &epilogue,
                    };
                    let a = flat::wrap(&mut fast, returns, &scan, code).expect("flat");
                    assert_eq!(a, b);
                    assert_eq!(format!("{fast:?}"), format!("{slow:?}"));
                    checked += 1;
                    let (Some(entry), Some(exit), Some(epi)) =
                        (store(opts.entry), store(opts.exit), store(&epilogue))
                    else {
                        continue;
                    };
                    let code = StoredCode {
                        entry: &entry,
                        exit: &exit,
                        epilogue: &epi,
                        tail_exit: None,
                        branches: false,
                        fill: Fill::new(0, None, &[]),
                        placeholders: false,
                    };
                    let mut fast = original.clone();
                    let a = flat::wrap(&mut fast, returns, &scan, Injected::Stored(&code))
                        .expect("flat");
                    assert_eq!(a, b);
                    assert_eq!(format!("{fast:?}"), format!("{slow:?}"));
                    // The general path from stored code is the one from instructions.
                    let mut linked = original.clone();
                    let c = linked::wrap_stored(&mut linked, returns, &scan, &code, None);
                    assert_eq!(c, Ok(b));
                    assert_eq!(format!("{linked:?}"), format!("{slow:?}"));
                    checked_stored += 1;
                }
            }
        }
    }
    assert!(
        checked > 6000 && checked_stored > 3000,
        "{checked} {checked_stored}"
    );
}

/// Bodies the one-pass path does not handle are left to the general path untouched.
#[test]
fn flat_wrap_declines_without_editing() {
    let mut seed = 99u64;
    let mut b = body(&mut seed, 6);
    let scan = CodeScan::of(&b.instrs);
    // Entry code given as instructions names ids of the body; stored code's branches
    // are relative and placed (see `branching_snippets_are_placed_on_both_paths`).
    let branchy = [Instruction::branch(OpCode::Br, InstrId(0))];
    let none = |entry| Injected::Instructions {
        entry,
        exit: &[],
        epilogue: &[],
    };
    let stored = |entry| StoredCode {
        entry,
        exit: &[],
        epilogue: &[],
        tail_exit: None,
        branches: false,
        fill: Fill::new(0, None, &[]),
        placeholders: false,
    };
    let before = format!("{b:?}");
    assert!(flat::wrap(&mut b, Returns::Void, &scan, none(&branchy)).is_none());
    assert_eq!(format!("{b:?}"), before);
    b.instrs
        .link_after(InstrId(0), Instruction::simple(OpCode::Nop));
    let before = format!("{b:?}");
    assert!(flat::wrap(&mut b, Returns::Void, &scan, none(&[])).is_none());
    let code = stored(&[]);
    assert!(flat::wrap(&mut b, Returns::Void, &scan, Injected::Stored(&code)).is_none());
    assert_eq!(format!("{b:?}"), before);
}

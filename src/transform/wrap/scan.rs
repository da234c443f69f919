//! [`CodeScan`]: the instructions a wrap edits, found in one walk over the code.

use crate::graph::packed::Slot;
use crate::graph::{InstrId, InstrList};
use crate::opcode::OpCode;
use smallvec::SmallVec;

/// The instructions [`super::wrap_try_finally`] edits, found in one walk over the code.
#[derive(Debug, Default)]
pub(crate) struct CodeScan {
    /// `tail.` prefixes, in list order.
    pub tails: SmallVec<[InstrId; 4]>,
    /// `ret`s, in list order.
    pub rets: SmallVec<[InstrId; 8]>,
    /// Whether there is a `jmp`, which cannot sit inside a try block.
    pub has_jmp: bool,
}

impl CodeScan {
    /// Scans the whole list, in list order.
    #[inline]
    pub(crate) fn of(list: &InstrList) -> CodeScan {
        let mut scan = CodeScan::default();
        match list.as_flat_slice() {
            // A decoded list: a tight loop over the slots, almost every one of them
            // rejected by one test.
            Some(slots) => {
                // A table load per slot, or-ed over four slots, and one (rarely taken)
                // branch per four.
                const SEEN: [u8; 256] = {
                    let mut t = [0; 256];
                    t[OpCode::Tail as usize] = 1;
                    t[OpCode::Ret as usize] = 1;
                    t[OpCode::Jmp as usize] = 1;
                    t
                };
                let seen = |slot: &Slot| SEEN[slot.opcode as usize];
                let mut quads = slots.chunks_exact(4);
                let mut id = 0u32;
                for quad in &mut quads {
                    if seen(&quad[0]) | seen(&quad[1]) | seen(&quad[2]) | seen(&quad[3]) != 0 {
                        for (i, slot) in (id..).zip(quad) {
                            if seen(slot) != 0 {
                                scan.see(InstrId(i), slot.opcode);
                            }
                        }
                    }
                    id += 4;
                }
                for (i, slot) in (id..).zip(quads.remainder()) {
                    if seen(slot) != 0 {
                        scan.see(InstrId(i), slot.opcode);
                    }
                }
            }
            None => {
                for (id, opcode) in list.opcodes() {
                    scan.see(id, opcode);
                }
            }
        }
        scan
    }

    /// Records instruction `id` with `opcode`; call in list order for every instruction.
    #[inline]
    pub(crate) fn see(&mut self, id: InstrId, opcode: OpCode) {
        match opcode {
            OpCode::Tail => self.tails.push(id),
            OpCode::Ret => self.rets.push(id),
            OpCode::Jmp => self.has_jmp = true,
            _ => {}
        }
    }
}

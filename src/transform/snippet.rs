//! Code to inject, given once and placed into many bodies: [`Snippet`].

use crate::error::{Error, Result};
use crate::graph::build::stored;
use crate::graph::packed::{Slot, operand_bits};
use crate::graph::{InstrId, Instruction, Operand};
use crate::opcode::{Flow, OpCode, OperandKind};

/// A piece of code to inject into many method bodies, built once: straight-line
/// instructions, branches within the snippet, and values that differ per method and are
/// filled in when the snippet is placed (see [`SnippetBuilder::method_id`],
/// [`SnippetBuilder::module_id`], [`SnippetBuilder::token`],
/// [`SnippetBuilder::return_local`] and [`SnippetBuilder::state_local`]).
///
/// A snippet guarantees, when built: every instruction encodes (its operand fits its
/// opcode), every branch targets an instruction of the snippet or the end of the snippet
/// (the instruction that follows it where it is placed), and control never leaves it
/// other than by falling off its end (no `ret`, `jmp`, `leave`, `endfinally`,
/// `endfilter`, `rethrow`, `switch`, `tail.`, and the last instruction falls through).
/// Whether it keeps the stack balanced is checked with the whole body by the stack
/// analysis that follows every rewrite.
///
/// ```
/// use ilrewrite::transform::Snippet;
/// use ilrewrite::{Instruction, OpCode};
///
/// // if (Probe.Enabled) Probe.Enter(methodId);
/// const ENABLED: u32 = 0x0A00_0010; // static bool Enabled (a MemberRef to a field)
/// const ENTER: u32 = 0x0A00_0011; // static void Enter(int32)
/// let mut b = Snippet::builder();
/// let skip = b.new_label();
/// b.push(Instruction::with_token(OpCode::Ldsfld, ENABLED));
/// b.branch(OpCode::BrfalseS, skip);
/// b.method_id();
/// b.push(Instruction::with_token(OpCode::Call, ENTER));
/// b.bind(skip);
/// let entry = b.finish()?;
/// assert_eq!(entry.len(), 4);
/// # Ok::<(), ilrewrite::Error>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snippet {
    parts: Vec<Part>,
    /// The stored form of `parts`, each placeholder as a marked slot that [`Fill::slot`]
    /// replaces where the snippet is placed.
    template: Vec<Slot>,
    /// Whether any part is a placeholder.
    has_placeholders: bool,
    /// Whether any part is a branch (its slot holds a position in the snippet).
    branches: bool,
    /// Whether any part names the return-value local.
    uses_return_local: bool,
    /// Whether any part names the state local.
    uses_state_local: bool,
    /// Whether any part loads the module's id.
    uses_module_id: bool,
    /// How many of the method's tokens the snippet uses (one past the highest index).
    tokens_used: usize,
}

/// One instruction of a snippet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    /// An instruction in stored form; for a branch, the bits are the target's position
    /// in the snippet (the snippet's length for its end).
    Fixed(Slot),
    /// `ldc.i4` of the method's id, in its shortest form.
    MethodId,
    /// `ldloc`, `ldloca` or `stloc` of the return-value local, in its shortest form.
    ReturnLocal(OpCode),
    /// `ldloc`, `ldloca` or `stloc` of the state local, in its shortest form.
    StateLocal(OpCode),
    /// `ldc.i8` of the module's id.
    ModuleId,
    /// An instruction whose token operand is the given entry of the method's tokens.
    Token(OpCode, u16),
}

/// A position in a [`Snippet`] being built, for branches; see [`SnippetBuilder::bind`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Label(u32);

/// Builds a [`Snippet`]; see its example.
#[derive(Debug, Clone, Default)]
pub struct SnippetBuilder {
    parts: Vec<Part>,
    /// Per label, the position it is bound to.
    labels: Vec<Option<u32>>,
    /// The first problem met, reported by [`SnippetBuilder::finish`].
    error: Option<Error>,
}

impl Snippet {
    /// A builder for a snippet with branches or per-method values.
    pub fn builder() -> SnippetBuilder {
        SnippetBuilder::default()
    }

    /// A snippet of straight-line instructions.
    ///
    /// # Errors
    /// As [`SnippetBuilder::finish`]; instructions with branch targets are refused
    /// ([`Error::BadOperand`]): use a builder and its labels.
    pub fn from_instructions(code: &[Instruction]) -> Result<Snippet> {
        let mut b = Snippet::builder();
        for &i in code {
            b.push(i);
        }
        b.finish()
    }

    /// The number of instructions.
    pub fn len(&self) -> usize {
        self.parts.len()
    }

    /// Whether the snippet has no instructions.
    pub fn is_empty(&self) -> bool {
        self.parts.is_empty()
    }

    /// Whether it names the return-value local ([`SnippetBuilder::return_local`]).
    pub fn uses_return_local(&self) -> bool {
        self.uses_return_local
    }

    /// Whether it names the state local ([`SnippetBuilder::state_local`]): an
    /// instrumentation using it must declare the local's type
    /// ([`crate::transform::InstrumentationCode::state_local`]).
    pub fn uses_state_local(&self) -> bool {
        self.uses_state_local
    }

    /// Whether it loads the module's id ([`SnippetBuilder::module_id`]): a method can be
    /// instrumented with it only when its context gives one
    /// ([`crate::transform::MethodContext::module_id`]).
    pub fn uses_module_id(&self) -> bool {
        self.uses_module_id
    }

    /// Whether it branches (within itself).
    pub(crate) fn has_branches(&self) -> bool {
        self.branches
    }

    /// The number of per-method tokens it uses ([`SnippetBuilder::token`]): one past the
    /// highest index, 0 if none.
    pub fn tokens_used(&self) -> usize {
        self.tokens_used
    }

    /// The stored form, each placeholder marked (see [`Fill`]).
    pub(crate) fn stored(&self) -> &[Slot] {
        &self.template
    }

    /// Whether it has placeholders (slots that [`Fill::slot`] replaces).
    pub(crate) fn has_placeholders(&self) -> bool {
        self.has_placeholders
    }

    /// Appends the stored form with its placeholders filled in by `fill` to `out`.
    #[cfg(test)]
    pub(crate) fn store_into(&self, fill: &Fill<'_>, out: &mut Vec<Slot>) {
        out.extend(self.template.iter().map(|&slot| fill.slot(slot)));
    }
}

/// The values of a snippet's placeholders for one method, filled in as its stored form
/// is placed (no copy of the snippet is made per method).
///
/// In a snippet's stored form a placeholder is a slot marked `odd` (stored code has no
/// odd slots otherwise: those name a body's side table) whose opcode says which value
/// it takes: `ldc.i4` the method id, `ldc.i8` the module id, `ldloc`/`ldloca`/`stloc`
/// the return-value local (`bits` 0) or the state local (`bits` 1), any other (an
/// instruction with a token operand) entry `bits` of the method's tokens.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fill<'a> {
    /// `ldc.i4` of the method id, in its shortest form (computed once per method).
    id: Slot,
    /// The return-value local (0 when the method has none: only code placed in
    /// value-returning methods names it).
    local: u16,
    /// The state local (0 when there is none: the instrumenter refuses snippets naming
    /// it then).
    state: u16,
    /// The module's id (0 when there is none: the instrumenter refuses snippets loading
    /// it then).
    module: u64,
    /// The method's tokens; a missing entry is stored as 0 (the instrumenter checks
    /// there are enough).
    tokens: &'a [u32],
}

impl<'a> Fill<'a> {
    /// The values for a method with id `method_id`, return-value local `local` and
    /// tokens `tokens`.
    #[inline]
    pub(crate) fn new(method_id: i32, local: Option<u16>, tokens: &'a [u32]) -> Self {
        Fill {
            id: stored::ldc_i4(method_id),
            local: local.unwrap_or(0),
            state: 0,
            module: 0,
            tokens,
        }
    }

    /// These values with state local `state` and module id `module`.
    #[inline]
    pub(crate) fn with(mut self, state: Option<u16>, module: Option<u64>) -> Self {
        self.state = state.unwrap_or(0);
        self.module = module.unwrap_or(0);
        self
    }

    /// `slot` of a snippet's stored form as placed: itself, or a placeholder's value.
    #[inline(always)]
    pub(crate) fn slot(&self, slot: Slot) -> Slot {
        if slot.odd { self.value(slot) } else { slot }
    }

    /// The value of placeholder `slot`.
    #[inline]
    fn value(&self, slot: Slot) -> Slot {
        let local = match slot.bits {
            STATE_LOCAL => self.state,
            _ => self.local,
        };
        match slot.opcode {
            OpCode::LdcI4 => self.id,
            OpCode::LdcI8 => Slot::new(OpCode::LdcI8, self.module),
            OpCode::Ldloc => stored::ldloc(local),
            OpCode::Stloc => stored::stloc(local),
            OpCode::Ldloca => stored::ldloca(local),
            op => {
                let token = usize::try_from(slot.bits)
                    .ok()
                    .and_then(|i| self.tokens.get(i))
                    .copied()
                    .unwrap_or(0);
                Slot::new(op, u64::from(token))
            }
        }
    }
}

/// The `bits` of a local's placeholder that names the state local (0 names the
/// return-value local).
const STATE_LOCAL: u64 = 1;

/// The stored form of `part`: a placeholder as its marked slot (see [`Fill`]).
fn stored_part(part: Part) -> Slot {
    let (opcode, bits) = match part {
        Part::Fixed(slot) => return slot,
        Part::MethodId => (OpCode::LdcI4, 0),
        Part::ModuleId => (OpCode::LdcI8, 0),
        Part::ReturnLocal(op) => (op, 0),
        Part::StateLocal(op) => (op, STATE_LOCAL),
        Part::Token(op, index) => (op, u64::from(index)),
    };
    Slot {
        opcode,
        odd: true,
        bits,
    }
}

/// The slot of a snippet instruction placed with its first instruction at id `base`:
/// a branch to position `p` goes to `base + p`, and one to the snippet's end (`p ==
/// len`) to `end`. Other slots are returned as they are.
#[inline]
pub(crate) fn relocate(slot: Slot, len: u32, base: u32, end: InstrId) -> Slot {
    match slot.opcode.operand() {
        OperandKind::Branch | OperandKind::ShortBranch => {
            let p = slot.bits as u32;
            let target = if p >= len { end.0 } else { base + p };
            Slot::new(slot.opcode, u64::from(target))
        }
        _ => slot,
    }
}

/// Opcodes that transfer control out of a snippet, or that a snippet must not hold.
fn leaves_snippet(op: OpCode) -> bool {
    matches!(
        op,
        OpCode::Ret
            | OpCode::Jmp
            | OpCode::Leave
            | OpCode::LeaveS
            | OpCode::Endfinally
            | OpCode::Endfilter
            | OpCode::Rethrow
            | OpCode::Switch
            | OpCode::Tail
    )
}

impl SnippetBuilder {
    fn fail(&mut self, error: Error) {
        self.error.get_or_insert(error);
    }

    /// Appends an instruction. Branches, `switch` and instructions that leave the
    /// snippet are refused (reported by [`SnippetBuilder::finish`]); use
    /// [`SnippetBuilder::branch`] for branches.
    pub fn push(&mut self, instr: Instruction) -> &mut Self {
        let op = instr.opcode;
        if matches!(instr.operand, Operand::Target(_) | Operand::Switch(_))
            || matches!(op.operand(), OperandKind::Branch | OperandKind::ShortBranch)
        {
            self.fail(Error::BadOperand {
                opcode: op.name(),
                what: "a snippet branches to its labels only (SnippetBuilder::branch)",
            });
        } else if leaves_snippet(op) {
            self.fail(Error::Unsupported {
                what: "a snippet cannot hold ret, jmp, leave, endfinally, endfilter, rethrow, switch or tail.",
            });
        } else {
            match operand_bits(&instr) {
                Some(bits) => self.parts.push(Part::Fixed(Slot::new(op, bits))),
                None => self.fail(Error::BadOperand {
                    opcode: op.name(),
                    what: "the operand does not match the opcode or does not fit it",
                }),
            }
        }
        self
    }

    /// A new label, bound later with [`SnippetBuilder::bind`].
    pub fn new_label(&mut self) -> Label {
        self.labels.push(None);
        Label(self.labels.len() as u32 - 1)
    }

    /// Binds `label` to the next instruction appended, or to the end of the snippet
    /// (the instruction that follows the snippet where it is placed) if none follows.
    /// Binding a label twice is an error reported by [`SnippetBuilder::finish`].
    pub fn bind(&mut self, label: Label) -> &mut Self {
        let here = self.parts.len() as u32;
        match self.labels.get_mut(label.0 as usize) {
            Some(slot @ None) => *slot = Some(here),
            _ => self.fail(Error::Unsupported {
                what: "a snippet label bound twice, or from another builder",
            }),
        }
        self
    }

    /// Appends a branch (`br`, `brtrue`, `beq.s`, ...: any opcode with a branch operand
    /// but `leave`) to `label`. Short forms are widened by the encoder when the target
    /// is out of their range.
    pub fn branch(&mut self, opcode: OpCode, label: Label) -> &mut Self {
        if !matches!(
            opcode.operand(),
            OperandKind::Branch | OperandKind::ShortBranch
        ) || leaves_snippet(opcode)
        {
            self.fail(Error::BadOperand {
                opcode: opcode.name(),
                what: "not a branch a snippet can hold",
            });
            return self;
        }
        // The label's number for now; `finish` turns it into its position.
        self.parts
            .push(Part::Fixed(Slot::new(opcode, u64::from(label.0))));
        self
    }

    /// Appends `ldc.i4` of the method's id: the value given for each method when the
    /// snippet is placed (e.g. a profiler's own index of the method, or its token), in
    /// the shortest form for that value.
    pub fn method_id(&mut self) -> &mut Self {
        self.parts.push(Part::MethodId);
        self
    }

    /// Appends `ldc.i8` of the module's id: a value that tells the method's module apart
    /// from every other module loaded in the process (inside a profiler, the runtime's
    /// `ModuleID`), given for each method when the snippet is placed
    /// ([`crate::transform::MethodContext::module_id`]). With the method id (a MethodDef
    /// token, which repeats across modules) it names the method in the process. It pushes
    /// an `int64`: a native function takes it as `i64` or `u64`.
    ///
    /// A method whose context gives no module id is refused
    /// ([`Error::PlaceholderUnfilled`]) before any edit.
    pub fn module_id(&mut self) -> &mut Self {
        self.parts.push(Part::ModuleId);
        self
    }

    /// Appends `opcode`, an instruction with a token operand (`call`, `calli`, `newobj`,
    /// `ldsfld`, ...), whose token is entry `index` of the method's
    /// [`crate::transform::MethodContext::tokens`]: for tokens that differ from module to
    /// module, such as the MemberRef of a probe or the signature of a `calli`, which a
    /// profiler defines in each module it instruments.
    pub fn token(&mut self, opcode: OpCode, index: u16) -> &mut Self {
        if !opcode.operand().is_token() || leaves_snippet(opcode) {
            self.fail(Error::BadOperand {
                opcode: opcode.name(),
                what: "not an instruction with a token operand that a snippet can hold",
            });
            return self;
        }
        self.parts.push(Part::Token(opcode, index));
        self
    }

    /// Appends `ldloc`, `ldloca` or `stloc` (any form: the shortest is chosen where it
    /// is placed) of the return-value local, the local that holds a value-returning
    /// method's return value on its way out. Only code that runs on return may name it
    /// (see [`crate::transform::InstrumentationCode`]).
    pub fn return_local(&mut self, opcode: OpCode) -> &mut Self {
        if let Some(op) = self.local_access(opcode) {
            self.parts.push(Part::ReturnLocal(op));
        }
        self
    }

    /// Appends `ldloc`, `ldloca` or `stloc` (any form: the shortest is chosen where it
    /// is placed) of the state local: one local per instrumented method, of the type
    /// [`crate::transform::InstrumentationCode::state_local`] declares, added to the
    /// method's locals once and shared by all its snippets. The entry code runs before
    /// the protected region and the exit code in its `finally`, so a value the entry
    /// stores there is what the exit reads (`t = Begin(); try { body } finally { End(t)
    /// }`); the entry runs once per call, so each call has its own.
    ///
    /// An instrumentation whose snippets name it without declaring its type is refused
    /// ([`Error::PlaceholderUnfilled`], from
    /// [`crate::transform::Instrumenter::new`]).
    pub fn state_local(&mut self, opcode: OpCode) -> &mut Self {
        if let Some(op) = self.local_access(opcode) {
            self.parts.push(Part::StateLocal(op));
        }
        self
    }

    /// The long form of a local access (`ldloc`, `ldloca`, `stloc`), or `None` and the
    /// error recorded.
    fn local_access(&mut self, opcode: OpCode) -> Option<OpCode> {
        use OpCode::*;
        match opcode {
            Ldloc | LdlocS | Ldloc0 | Ldloc1 | Ldloc2 | Ldloc3 => Some(Ldloc),
            Ldloca | LdlocaS => Some(Ldloca),
            Stloc | StlocS | Stloc0 | Stloc1 | Stloc2 | Stloc3 => Some(Stloc),
            _ => {
                self.fail(Error::BadOperand {
                    opcode: opcode.name(),
                    what: "a placeholder local is read with ldloc/ldloca or set with stloc",
                });
                None
            }
        }
    }

    /// The snippet.
    ///
    /// # Errors
    /// The first problem met while building: [`Error::BadOperand`] for an instruction
    /// that does not encode or a bad branch, [`Error::Unsupported`] for an instruction
    /// that leaves the snippet, a label bound twice, a branch to a label never bound, or
    /// a last instruction that does not fall through (`br`, `throw`).
    pub fn finish(mut self) -> Result<Snippet> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        let mut branches = false;
        for part in &mut self.parts {
            if let Part::Fixed(slot) = part
                && matches!(
                    slot.opcode.operand(),
                    OperandKind::Branch | OperandKind::ShortBranch
                )
            {
                let at = self.labels.get(slot.bits as usize).copied().flatten();
                let Some(at) = at else {
                    return Err(Error::Unsupported {
                        what: "a snippet branches to a label that was never bound",
                    });
                };
                slot.bits = u64::from(at);
                branches = true;
            }
        }
        let last_falls_through = match self.parts.last() {
            Some(Part::Fixed(slot)) => !matches!(slot.opcode.flow(), Flow::Branch | Flow::Throw),
            _ => true,
        };
        if !last_falls_through {
            return Err(Error::Unsupported {
                what: "a snippet must end with an instruction that falls through",
            });
        }
        let uses_return_local = self.parts.iter().any(|p| matches!(p, Part::ReturnLocal(_)));
        let uses_state_local = self.parts.iter().any(|p| matches!(p, Part::StateLocal(_)));
        let uses_module_id = self.parts.iter().any(|p| matches!(p, Part::ModuleId));
        let template = self.parts.iter().map(|&part| stored_part(part)).collect();
        let has_placeholders = self.parts.iter().any(|p| !matches!(p, Part::Fixed(_)));
        let tokens_used = self
            .parts
            .iter()
            .filter_map(|p| match *p {
                Part::Token(_, index) => Some(usize::from(index) + 1),
                _ => None,
            })
            .max()
            .unwrap_or(0);
        Ok(Snippet {
            parts: self.parts,
            template,
            has_placeholders,
            branches,
            uses_return_local,
            uses_state_local,
            uses_module_id,
            tokens_used,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_become_positions_and_the_end_is_the_length() {
        let mut b = Snippet::builder();
        let (top, end) = (b.new_label(), b.new_label());
        b.bind(top);
        b.push(Instruction::simple(OpCode::Nop));
        b.branch(OpCode::BrtrueS, end);
        b.branch(OpCode::Br, top);
        b.push(Instruction::simple(OpCode::Nop));
        b.bind(end);
        let s = b.finish().unwrap();
        assert!(s.has_branches());
        let mut slots = Vec::new();
        s.store_into(&Fill::new(0, None, &[]), &mut slots);
        assert_eq!(slots[1], Slot::new(OpCode::BrtrueS, 4));
        assert_eq!(slots[2], Slot::new(OpCode::Br, 0));
        let placed = relocate(slots[1], 4, 100, InstrId(7));
        assert_eq!(placed, Slot::new(OpCode::BrtrueS, 7));
        assert_eq!(
            relocate(slots[2], 4, 100, InstrId(7)),
            Slot::new(OpCode::Br, 100)
        );
        assert_eq!(relocate(slots[0], 4, 100, InstrId(7)), slots[0]);
    }

    #[test]
    fn placeholders_take_their_shortest_forms() {
        let mut b = Snippet::builder();
        b.method_id();
        b.return_local(OpCode::LdlocS);
        b.return_local(OpCode::Stloc0);
        b.return_local(OpCode::Ldloca);
        let s = b.finish().unwrap();
        assert!(s.uses_return_local() && !s.has_branches());
        let mut slots = Vec::new();
        s.store_into(&Fill::new(5, Some(2), &[]), &mut slots);
        s.store_into(&Fill::new(1000, Some(300), &[]), &mut slots);
        let ops: Vec<OpCode> = slots.iter().map(|s| s.opcode).collect();
        use OpCode::*;
        assert_eq!(
            ops,
            [LdcI45, Ldloc2, Stloc2, LdlocaS, LdcI4, Ldloc, Stloc, Ldloca]
        );
        assert_eq!(slots[3].bits, 2);
        assert_eq!(slots[4].bits, 1000);
        assert_eq!(slots[5].bits, 300);
    }

    #[test]
    fn the_state_local_and_the_module_id_are_filled_in() {
        let mut b = Snippet::builder();
        b.module_id();
        b.state_local(OpCode::StlocS);
        b.state_local(OpCode::Ldloc0);
        b.state_local(OpCode::LdlocaS);
        b.return_local(OpCode::Ldloc);
        let s = b.finish().unwrap();
        assert!(s.uses_state_local() && s.uses_module_id() && s.uses_return_local());
        let mut slots = Vec::new();
        let module = 0x7F12_3456_7890_u64;
        s.store_into(
            &Fill::new(1, Some(2), &[]).with(Some(3), Some(module)),
            &mut slots,
        );
        s.store_into(
            &Fill::new(1, Some(2), &[]).with(Some(300), None),
            &mut slots,
        );
        use OpCode::*;
        let ops: Vec<OpCode> = slots.iter().map(|s| s.opcode).collect();
        assert_eq!(
            ops,
            [
                LdcI8, Stloc3, Ldloc3, LdlocaS, Ldloc2, LdcI8, Stloc, Ldloc, Ldloca, Ldloc2
            ]
        );
        assert_eq!(slots[0].bits, module);
        assert_eq!((slots[3].bits, slots[5].bits, slots[6].bits), (3, 0, 300));
        assert!(slots.iter().all(|s| !s.odd));
        // A snippet without them says so.
        let plain = Snippet::from_instructions(&[Instruction::simple(OpCode::Nop)]).unwrap();
        assert!(!plain.uses_state_local() && !plain.uses_module_id());
        let mut b = Snippet::builder();
        b.state_local(OpCode::Ldarg);
        assert!(matches!(b.finish(), Err(Error::BadOperand { .. })));
    }

    #[test]
    fn tokens_come_from_the_method() {
        let mut b = Snippet::builder();
        b.token(OpCode::Calli, 1);
        b.token(OpCode::Call, 0);
        let s = b.finish().unwrap();
        assert_eq!(s.tokens_used(), 2);
        let mut slots = Vec::new();
        s.store_into(&Fill::new(0, None, &[0x0A00_0005, 0x1100_0002]), &mut slots);
        assert_eq!(slots[0], Slot::new(OpCode::Calli, 0x1100_0002));
        assert_eq!(slots[1], Slot::new(OpCode::Call, 0x0A00_0005));
        let mut b = Snippet::builder();
        b.token(OpCode::Ldarg, 0);
        assert!(matches!(b.finish(), Err(Error::BadOperand { .. })));
        let mut b = Snippet::builder();
        b.token(OpCode::Jmp, 0);
        assert!(matches!(b.finish(), Err(Error::BadOperand { .. })));
    }

    #[test]
    fn what_a_snippet_refuses() {
        let refused = |f: &dyn Fn(&mut SnippetBuilder)| {
            let mut b = Snippet::builder();
            f(&mut b);
            b.finish().unwrap_err()
        };
        assert!(matches!(
            refused(&|b| {
                b.push(Instruction::branch(OpCode::Br, InstrId(0)));
            }),
            Error::BadOperand { .. }
        ));
        for op in [
            OpCode::Ret,
            OpCode::Endfinally,
            OpCode::Rethrow,
            OpCode::Tail,
        ] {
            assert!(matches!(
                refused(&|b| {
                    b.push(Instruction::simple(op));
                }),
                Error::Unsupported { .. }
            ));
        }
        assert!(matches!(
            refused(&|b| {
                b.push(Instruction::new(OpCode::LdcI4S, Operand::Int(300)));
            }),
            Error::BadOperand { .. }
        ));
        assert!(matches!(
            refused(&|b| {
                let l = b.new_label();
                b.branch(OpCode::Br, l);
                b.push(Instruction::simple(OpCode::Nop));
            }),
            Error::Unsupported { .. }
        ));
        assert!(matches!(
            refused(&|b| {
                let l = b.new_label();
                b.bind(l);
                b.push(Instruction::simple(OpCode::Nop));
                b.bind(l);
            }),
            Error::Unsupported { .. }
        ));
        assert!(matches!(
            refused(&|b| {
                let l = b.new_label();
                b.branch(OpCode::LeaveS, l);
            }),
            Error::BadOperand { .. }
        ));
        assert!(matches!(
            refused(&|b| {
                b.push(Instruction::simple(OpCode::Ldnull));
                b.push(Instruction::simple(OpCode::Throw));
            }),
            Error::Unsupported { .. }
        ));
        assert!(matches!(
            refused(&|b| {
                b.return_local(OpCode::Ldarg);
            }),
            Error::BadOperand { .. }
        ));
        // A throw in the middle is fine.
        let mut b = Snippet::builder();
        b.push(Instruction::simple(OpCode::Ldnull));
        b.push(Instruction::simple(OpCode::Throw));
        b.push(Instruction::simple(OpCode::Nop));
        assert!(b.finish().is_ok());
    }
}

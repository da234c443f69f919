//! Shared by the property tests: a generator of valid method bodies built through the
//! editing API, and a position-based snapshot of a body to compare bodies with.
//!
//! Each test binary compiles this module on its own and uses a different part of it.
#![allow(dead_code, reason = "each test binary uses a different subset")]

use ilrewrite::opcode::OperandKind;
use ilrewrite::{ClauseKind, ExceptionClause, InstrId, Instruction, MethodBody, OpCode, Operand};
use proptest::collection::vec;
use proptest::prelude::*;

/// `cases` cases per property, or `PROPTEST_CASES` when set (for longer soak runs).
/// Failures are not persisted: proptest cannot place its regression file next to an
/// integration test, and the minimal inputs it reports are kept as named regression
/// tests instead.
pub fn config(cases: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(cases);
    ProptestConfig {
        failure_persistence: None,
        ..ProptestConfig::with_cases(cases)
    }
}

// ---- a comparable snapshot of a body --------------------------------------------------

/// An operand with branch targets replaced by instruction positions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Arg {
    None,
    Int(i32),
    Long(i64),
    F32(u32),
    F64(u64),
    Var(u16),
    Token(u32),
    Target(usize),
    Switch(Vec<usize>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Catch(u32),
    Filter(usize),
    Finally,
    Fault,
}

impl Kind {
    pub fn flags(self) -> u32 {
        match self {
            Kind::Catch(_) => 0,
            Kind::Filter(_) => 1,
            Kind::Finally => 2,
            Kind::Fault => 4,
        }
    }
}

/// A clause with inclusive position ranges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Clause {
    pub kind: Kind,
    pub try_: (usize, usize),
    pub handler: (usize, usize),
}

/// Everything observable about a body, with ids replaced by positions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shape {
    pub max_stack: u16,
    pub init_locals: bool,
    pub local_var_sig: u32,
    pub code: Vec<(OpCode, Arg)>,
    pub clauses: Vec<Clause>,
}

pub fn shape(body: &MethodBody) -> Shape {
    let pos = body.positions();
    let at = |id: InstrId| pos.get(id.index()).map_or(usize::MAX, |&p| p as usize);
    let code = body
        .instrs
        .iter()
        .map(|(_, i)| {
            let arg = match i.operand {
                Operand::None => Arg::None,
                Operand::Int(v) => Arg::Int(v),
                Operand::Long(v) => Arg::Long(v),
                Operand::Float32(v) => Arg::F32(v),
                Operand::Float64(v) => Arg::F64(v),
                Operand::Var(v) => Arg::Var(v),
                Operand::Token(v) => Arg::Token(v),
                Operand::Target(t) => Arg::Target(at(t)),
                Operand::Switch(s) => Arg::Switch(
                    body.instrs
                        .switch_targets(s)
                        .iter()
                        .map(|&t| at(t))
                        .collect(),
                ),
            };
            (i.opcode, arg)
        })
        .collect();
    let clauses = body
        .clauses
        .iter()
        .map(|c| Clause {
            kind: match c.kind {
                ClauseKind::Catch(t) => Kind::Catch(t),
                ClauseKind::Filter(f) => Kind::Filter(at(f)),
                ClauseKind::Finally => Kind::Finally,
                ClauseKind::Fault => Kind::Fault,
            },
            try_: (at(c.try_start), at(c.try_last)),
            handler: (at(c.handler_start), at(c.handler_last)),
        })
        .collect();
    Shape {
        max_stack: body.max_stack,
        init_locals: body.init_locals,
        local_var_sig: body.local_var_sig,
        code,
        clauses,
    }
}

// ---- a generator of valid bodies ----------------------------------------------------

/// Where a branch or switch operand points, relative to the instruction holding it.
#[derive(Debug, Clone, Copy)]
pub enum TargetSeed {
    /// A few instructions away: usually stays short.
    Near(i16),
    /// Any instruction of the body: usually far enough to force widening.
    Anywhere(u32),
}

impl TargetSeed {
    fn resolve(self, at: usize, n: usize) -> usize {
        match self {
            TargetSeed::Near(d) => (at as i64 + i64::from(d)).clamp(0, n as i64 - 1) as usize,
            TargetSeed::Anywhere(x) => x as usize % n,
        }
    }
}

fn target_seed() -> impl Strategy<Value = TargetSeed> {
    prop_oneof![
        (-30i16..30).prop_map(TargetSeed::Near),
        any::<u32>().prop_map(TargetSeed::Anywhere),
    ]
}

/// Bit patterns worth hitting on purpose: NaNs with payloads (quiet and signalling, both
/// signs, as `f64` and in the low 32 bits as `f32`), infinities, negative zero, and the
/// edges of the narrow integer operands.
const SPECIAL_BITS: &[u64] = &[
    0x7FF8_0000_0000_0000,
    0x7FF0_0000_0000_0001,
    0xFFF4_DEAD_BEEF_0001,
    0x7FFF_FFFF_FFFF_FFFF,
    0x7FF0_0000_0000_0000,
    0x8000_0000_0000_0000,
    0x7FC0_0001,
    0x7F80_0001,
    0xFFA0_5A5A,
    0x7F80_0000,
    0x8000_0000,
    0x7F,
    0x80,
    0xFF,
    0xFFFF,
    u64::MAX,
];

pub fn operand_bits() -> impl Strategy<Value = u64> {
    prop_oneof![
        6 => any::<u64>(),
        2 => 0u64..300,
        2 => prop::sample::select(SPECIAL_BITS),
    ]
}

#[derive(Debug, Clone)]
pub struct InstrSeed {
    pub op: OpCode,
    pub bits: u64,
    pub target: TargetSeed,
    pub switch: Vec<TargetSeed>,
}

fn instr_seed() -> impl Strategy<Value = InstrSeed> {
    prop::sample::select(OpCode::ALL).prop_flat_map(|op| {
        let switch = if op == OpCode::Switch {
            prop_oneof![8 => vec(target_seed(), 0..6), 1 => vec(target_seed(), 0..200)].boxed()
        } else {
            Just(Vec::new()).boxed()
        };
        (operand_bits(), target_seed(), switch).prop_map(move |(bits, target, switch)| InstrSeed {
            op,
            bits,
            target,
            switch,
        })
    })
}

#[derive(Debug, Clone, Copy)]
pub enum KindSeed {
    Catch(u32),
    /// A filter clause whose filter region has this many instructions.
    Filter(usize),
    Finally,
    Fault,
}

/// A region length in instructions: mostly short, sometimes long enough to need a fat
/// EH section (lengths over 255 bytes).
fn region_len() -> impl Strategy<Value = usize> {
    prop_oneof![6 => 1usize..6, 1 => 1usize..120]
}

fn kind_seed() -> impl Strategy<Value = KindSeed> {
    prop_oneof![
        any::<u32>().prop_map(KindSeed::Catch),
        region_len().prop_map(KindSeed::Filter),
        Just(KindSeed::Finally),
        Just(KindSeed::Fault),
    ]
}

#[derive(Debug, Clone, Copy)]
pub struct HandlerSeed {
    pub kind: KindSeed,
    pub len: usize,
}

fn handler_seed() -> impl Strategy<Value = HandlerSeed> {
    (kind_seed(), region_len()).prop_map(|(kind, len)| HandlerSeed { kind, len })
}

/// An optional outer clause around a group.
#[derive(Debug, Clone, Copy)]
pub enum WrapSeed {
    None,
    /// The whole group (try and handlers) is the outer clause's try.
    InTry(HandlerSeed),
    /// The group lies inside the outer clause's handler, after `pad` and before `tail`
    /// extra instructions.
    InHandler {
        try_len: usize,
        kind: KindSeed,
        pad: usize,
        tail: usize,
    },
}

/// One try block with one or two handlers (two: a shared try), placed after `gap`
/// instructions, handlers after the try or before it, optionally wrapped.
#[derive(Debug, Clone)]
pub struct GroupSeed {
    pub gap: usize,
    pub try_len: usize,
    pub handlers: Vec<HandlerSeed>,
    pub handlers_first: bool,
    pub wrap: WrapSeed,
}

fn group_seed() -> impl Strategy<Value = GroupSeed> {
    let wrap = prop_oneof![
        3 => Just(WrapSeed::None),
        1 => handler_seed().prop_map(WrapSeed::InTry),
        1 => (region_len(), kind_seed(), 0usize..3, 0usize..3).prop_map(
            |(try_len, kind, pad, tail)| WrapSeed::InHandler { try_len, kind, pad, tail }
        ),
    ];
    (
        0usize..4,
        region_len(),
        vec(handler_seed(), 1..=2),
        prop::bool::weighted(0.2),
        wrap,
    )
        .prop_map(|(gap, try_len, handlers, handlers_first, wrap)| GroupSeed {
            gap,
            try_len,
            handlers,
            handlers_first,
            wrap,
        })
}

#[derive(Debug, Clone)]
pub struct BodySpec {
    pub instrs: Vec<InstrSeed>,
    pub groups: Vec<GroupSeed>,
    pub max_stack: u16,
    pub init_locals: bool,
    pub local_var_sig: u32,
    pub force_fat: bool,
    /// Seeds the order in which clauses are handed to `add_clause`.
    pub clause_order: u64,
    /// Bytes after the body in the decoder's input.
    pub tail: Vec<u8>,
}

pub fn body_spec() -> impl Strategy<Value = BodySpec> {
    (
        prop_oneof![1 => vec(instr_seed(), 1..24), 3 => vec(instr_seed(), 1..300)],
        prop_oneof![1 => Just(Vec::new()), 3 => vec(group_seed(), 1..4)],
        prop_oneof![1 => 0u16..=8, 1 => any::<u16>()],
        prop::bool::weighted(0.3),
        prop_oneof![1 => Just(0u32), 1 => any::<u32>()],
        prop::bool::weighted(0.15),
        any::<u64>(),
        vec(any::<u8>(), 0..8),
    )
        .prop_map(
            |(
                instrs,
                groups,
                max_stack,
                init_locals,
                local_var_sig,
                force_fat,
                clause_order,
                tail,
            )| {
                BodySpec {
                    instrs,
                    groups,
                    max_stack,
                    init_locals,
                    local_var_sig,
                    force_fat,
                    clause_order,
                    tail,
                }
            },
        )
}

fn handlers_len(handlers: &[HandlerSeed]) -> usize {
    handlers
        .iter()
        .map(|h| match h.kind {
            KindSeed::Filter(f) => f + h.len,
            _ => h.len,
        })
        .sum()
}

/// Places a filter region (for filter kinds) at `*at` and returns the clause kind.
fn place_kind(kind: KindSeed, at: &mut usize) -> Kind {
    match kind {
        KindSeed::Catch(t) => Kind::Catch(t),
        KindSeed::Filter(len) => {
            let start = *at;
            *at += len;
            Kind::Filter(start)
        }
        KindSeed::Finally => Kind::Finally,
        KindSeed::Fault => Kind::Fault,
    }
}

fn place_handlers(handlers: &[HandlerSeed], try_: (usize, usize), at: &mut usize) -> Vec<Clause> {
    handlers
        .iter()
        .map(|h| {
            let kind = place_kind(h.kind, at);
            let start = *at;
            *at += h.len;
            Clause {
                kind,
                try_,
                handler: (start, *at - 1),
            }
        })
        .collect()
}

/// A try block and its handlers, starting at `*at`.
fn place_core(g: &GroupSeed, at: &mut usize) -> Vec<Clause> {
    if g.handlers_first {
        let try_start = *at + handlers_len(&g.handlers);
        let clauses = place_handlers(&g.handlers, (try_start, try_start + g.try_len - 1), at);
        *at += g.try_len;
        clauses
    } else {
        let try_ = (*at, *at + g.try_len - 1);
        *at += g.try_len;
        place_handlers(&g.handlers, try_, at)
    }
}

/// The clauses of a group placed at `start`, and the position just past it.
fn place_group(g: &GroupSeed, start: usize) -> (Vec<Clause>, usize) {
    let mut at = start + g.gap;
    let clauses = match g.wrap {
        WrapSeed::None => place_core(g, &mut at),
        WrapSeed::InTry(h) => {
            let outer_start = at;
            let mut clauses = place_core(g, &mut at);
            clauses.extend(place_handlers(&[h], (outer_start, at - 1), &mut at));
            clauses
        }
        WrapSeed::InHandler {
            try_len,
            kind,
            pad,
            tail,
        } => {
            let try_ = (at, at + try_len - 1);
            at += try_len;
            let kind = place_kind(kind, &mut at);
            let handler_start = at;
            at += pad;
            let mut clauses = place_core(g, &mut at);
            at += tail;
            clauses.push(Clause {
                kind,
                try_,
                handler: (handler_start, at - 1),
            });
            clauses
        }
    };
    (clauses, at)
}

/// Places groups one after the other while they fit in `n` instructions.
fn place_clauses(groups: &[GroupSeed], n: usize) -> Vec<Clause> {
    let mut clauses = Vec::new();
    let mut at = 0;
    for g in groups {
        let (placed, end) = place_group(g, at);
        if end > n {
            break;
        }
        clauses.extend(placed);
        at = end;
    }
    clauses
}

/// The operand of kind `kind` (neither a branch nor a switch) that `bits` encode, in range
/// for its encoding.
pub fn operand_from_bits(kind: OperandKind, bits: u64) -> Operand {
    match kind {
        OperandKind::None => Operand::None,
        OperandKind::ShortI => Operand::Int(i32::from(bits as u8 as i8)),
        OperandKind::ShortU => Operand::Int(i32::from(bits as u8)),
        OperandKind::I => Operand::Int(bits as u32 as i32),
        OperandKind::I8 => Operand::Long(bits as i64),
        OperandKind::ShortR => Operand::Float32(bits as u32),
        OperandKind::R => Operand::Float64(bits),
        OperandKind::ShortVar => Operand::Var(u16::from(bits as u8)),
        OperandKind::Var => Operand::Var(bits as u16),
        OperandKind::ShortBranch | OperandKind::Branch | OperandKind::Switch => {
            panic!("{kind:?} operands name instructions")
        }
        _ => Operand::Token(bits as u32),
    }
}

/// Builds the body through the public editing API. Returns it with the clauses in the
/// order they were added.
pub fn build(spec: &BodySpec) -> (MethodBody, Vec<Clause>) {
    let n = spec.instrs.len();
    let mut body = MethodBody::new();
    let ids: Vec<InstrId> = (0..n)
        .map(|_| body.append(Instruction::simple(OpCode::Nop)))
        .collect();
    for (i, s) in spec.instrs.iter().enumerate() {
        let operand = match s.op.operand() {
            OperandKind::ShortBranch | OperandKind::Branch => {
                Operand::Target(ids[s.target.resolve(i, n)])
            }
            OperandKind::Switch => {
                let targets: Vec<InstrId> = s.switch.iter().map(|t| ids[t.resolve(i, n)]).collect();
                Operand::Switch(body.instrs.new_switch_targets(&targets))
            }
            kind => operand_from_bits(kind, s.bits),
        };
        body.replace(ids[i], Instruction::new(s.op, operand))
            .unwrap();
    }
    body.max_stack = spec.max_stack;
    body.init_locals = spec.init_locals;
    body.local_var_sig = spec.local_var_sig;
    if spec.force_fat {
        body.force_fat_header();
    }

    let mut clauses = place_clauses(&spec.groups, n);
    // A deterministic shuffle: add_clause must find the inner-first order on its own.
    let mut state = spec.clause_order | 1;
    for i in (1..clauses.len()).rev() {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        clauses.swap(i, (state >> 33) as usize % (i + 1));
    }
    for c in &clauses {
        let kind = match c.kind {
            Kind::Catch(t) => ClauseKind::Catch(t),
            Kind::Filter(f) => ClauseKind::Filter(ids[f]),
            Kind::Finally => ClauseKind::Finally,
            Kind::Fault => ClauseKind::Fault,
        };
        let clause = ExceptionClause::new(
            kind,
            ids[c.try_.0],
            ids[c.try_.1],
            ids[c.handler.0],
            ids[c.handler.1],
        );
        if let Err(e) = body.add_clause(clause) {
            panic!("well-formed clause {c:?} refused: {e}; clauses {clauses:?}");
        }
    }
    body.validate_clauses()
        .expect("add_clause keeps the clauses valid");
    (body, clauses)
}

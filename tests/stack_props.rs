//! Property tests of the stack analysis and the control-flow graph.
//!
//! 1. Bodies generated from a stack-balanced grammar (pushes and pops, forward branches
//!    carrying values, loops, switches, dead code, try/catch and try/finally with leave)
//!    whose exact max stack the generator knows: the analysis must compute exactly it,
//!    find dead code unreachable, and agree with the CFG on reachability.
//! 2. Arbitrary instruction soup with arbitrary clauses: the analyses never panic, always
//!    terminate, and when the stack analysis succeeds its result is consistent.

use ilrewrite::analysis::{CallEffect, ControlFlowGraph, MaxStackMode, ReturnKind, StackAnalyzer};
use ilrewrite::{
    ClauseKind, Error, ExceptionClause, InstrId, Instruction, MethodBody, OpCode, Operand,
};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum G {
    /// Push `k` values with `ldc`, fold them with `add`, pop the result.
    Adds(u8),
    /// Push one value, `dup` it to `k` values, pop them all.
    Dups(u8),
    Seq(Vec<G>),
    /// Push `carry` values, branch forward over `inner` on a condition, pop them.
    IfCarry(u8, Box<G>),
    /// `inner` in a loop closed by a conditional back branch.
    Loop(Box<G>),
    /// An unconditional branch over `k` dead pushes.
    Dead(u8),
    /// A switch with `n` cases to the end of `inner`.
    Switch(u8, Box<G>),
    /// try { body; push `extra`; leave } catch/finally { handler } (needs height 0).
    Try {
        finally: bool,
        body: Box<G>,
        extra: u8,
        handler: Box<G>,
    },
}

fn grammar() -> impl Strategy<Value = G> {
    let leaf = prop_oneof![
        (0u8..6).prop_map(G::Adds),
        (1u8..6).prop_map(G::Dups),
        (1u8..6).prop_map(G::Dead),
    ];
    leaf.prop_recursive(6, 160, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 1..5).prop_map(G::Seq),
            (0u8..4, inner.clone()).prop_map(|(c, g)| G::IfCarry(c, Box::new(g))),
            inner.clone().prop_map(|g| G::Loop(Box::new(g))),
            (1u8..5, inner.clone()).prop_map(|(n, g)| G::Switch(n, Box::new(g))),
            (any::<bool>(), inner.clone(), 0u8..4, inner).prop_map(
                |(finally, body, extra, handler)| G::Try {
                    finally,
                    body: Box::new(body),
                    extra,
                    handler: Box::new(handler),
                }
            ),
        ]
    })
}

struct Emitter {
    body: MethodBody,
    dead: Vec<InstrId>,
}

impl Emitter {
    fn op(&mut self, opcode: OpCode) -> InstrId {
        self.body.instrs.push_back(Instruction::simple(opcode))
    }

    /// A branch whose target is patched later.
    fn branch(&mut self, opcode: OpCode) -> InstrId {
        let id = self.op(OpCode::Nop);
        self.body
            .instrs
            .set(id, Instruction::new(opcode, Operand::Target(id)));
        id
    }

    fn patch(&mut self, branch: InstrId, target: InstrId) {
        let mut changed = self.body.instrs.get(branch);
        changed.operand = Operand::Target(target);
        self.body.instrs.set(branch, changed);
    }

    /// Emits `g` entered with height `h`; it leaves `h`. Returns the exact max height.
    fn emit(&mut self, g: &G, h: u32) -> u32 {
        match g {
            G::Adds(0) => {
                self.op(OpCode::Nop);
                h
            }
            G::Adds(k) => {
                for _ in 0..*k {
                    self.op(OpCode::LdcI41);
                }
                for _ in 1..*k {
                    self.op(OpCode::Add);
                }
                self.op(OpCode::Pop);
                h + u32::from(*k)
            }
            G::Dups(k) => {
                self.op(OpCode::Ldnull);
                for _ in 1..*k {
                    self.op(OpCode::Dup);
                }
                for _ in 0..*k {
                    self.op(OpCode::Pop);
                }
                h + u32::from(*k)
            }
            G::Seq(gs) => gs.iter().map(|g| self.emit(g, h)).fold(h, u32::max),
            G::IfCarry(c, inner) => {
                let c32 = u32::from(*c);
                for _ in 0..*c {
                    self.op(OpCode::LdcI40);
                }
                self.op(OpCode::Ldarg0);
                let br = self.branch(OpCode::Brtrue);
                let m = self.emit(inner, h + c32);
                let l = self.op(OpCode::Nop);
                self.patch(br, l);
                for _ in 0..*c {
                    self.op(OpCode::Pop);
                }
                m.max(h + c32 + 1)
            }
            G::Loop(inner) => {
                let l = self.op(OpCode::Nop);
                let m = self.emit(inner, h);
                self.op(OpCode::Ldarg0);
                let br = self.branch(OpCode::BrtrueS);
                self.patch(br, l);
                m.max(h + 1)
            }
            G::Dead(k) => {
                let br = self.branch(OpCode::Br);
                for _ in 0..*k {
                    let d = self.op(OpCode::LdcI45);
                    self.dead.push(d);
                }
                let l = self.op(OpCode::Nop);
                self.patch(br, l);
                h
            }
            G::Switch(n, inner) => {
                self.op(OpCode::Ldarg0);
                let sw = self.op(OpCode::Switch);
                let m = self.emit(inner, h);
                let l = self.op(OpCode::Nop);
                let targets = vec![l; usize::from(*n)];
                let handle = self.body.instrs.new_switch_targets(&targets);
                let mut changed = self.body.instrs.get(sw);
                changed.operand = Operand::Switch(handle);
                self.body.instrs.set(sw, changed);
                m.max(h + 1)
            }
            G::Try {
                finally,
                body,
                extra,
                handler,
            } => {
                if h != 0 {
                    return self.emit(body, h);
                }
                let try_start = self.op(OpCode::Nop);
                let mut m = self.emit(body, 0);
                for _ in 0..*extra {
                    self.op(OpCode::LdcI42);
                }
                m = m.max(u32::from(*extra));
                let leave = self.branch(OpCode::LeaveS);
                let entry = u32::from(!finally);
                let handler_start = self.op(OpCode::Nop);
                m = m.max(entry).max(self.emit(handler, entry));
                let handler_last = if *finally {
                    self.op(OpCode::Endfinally)
                } else {
                    self.op(OpCode::Pop);
                    self.branch(OpCode::Leave)
                };
                let end = self.op(OpCode::Nop);
                self.patch(leave, end);
                if !finally {
                    self.patch(handler_last, end);
                }
                let kind = if *finally {
                    ClauseKind::Finally
                } else {
                    ClauseKind::Catch(0x0100_0001)
                };
                // Inner clauses are emitted first, so pushing keeps them inner-first.
                self.body.clauses.push(ExceptionClause::new(
                    kind,
                    try_start,
                    leave,
                    handler_start,
                    handler_last,
                ));
                m
            }
        }
    }
}

fn generate(g: &G) -> (MethodBody, u16, Vec<InstrId>) {
    let mut e = Emitter {
        body: MethodBody::new(),
        dead: Vec::new(),
    };
    let max = e.emit(g, 0);
    e.op(OpCode::Ret);
    (e.body, max as u16, e.dead)
}

/// Resolver for the soup: the token says what the call pops and pushes.
fn soup_resolver(_: OpCode, token: u32) -> ilrewrite::Result<CallEffect> {
    Ok(CallEffect {
        pops: (token % 4) as u16,
        pushes: (token / 4 % 2) as u16,
    })
}

fn check_against_cfg(body: &MethodBody, heights: &[Option<u16>]) {
    let cfg = ControlFlowGraph::build(body).expect("cfg of an analysable body");
    let reachable = cfg.reachable();
    for id in body.instrs.ids() {
        let b = cfg.block_of(id).expect("every instruction has a block");
        assert_eq!(
            reachable[b.index()],
            heights[id.index()].is_some(),
            "reachability of {id:?} disagrees"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn computed_max_equals_the_generators_max(g in grammar()) {
        let (mut body, expected, dead) = generate(&g);
        let mut analyzer = StackAnalyzer::new();
        let analysis = analyzer.analyze(&body, &soup_resolver, ReturnKind::Void);
        let analysis = match analysis {
            Ok(a) => a,
            Err(e) => panic!("{e}\n{g:?}"),
        };
        prop_assert_eq!(analysis.max_stack(), expected);
        for d in &dead {
            prop_assert_eq!(analysis.height_before(*d), None);
        }
        let heights = analysis.heights_by_id();
        check_against_cfg(&body, &heights);
        // The body stays valid for the encoder's own checks, and apply_max_stack stores it.
        body.max_stack = 0;
        let report = StackAnalyzer::new().apply_max_stack(&mut body, &soup_resolver, MaxStackMode::Compute, ReturnKind::Void)
            .unwrap();
        prop_assert_eq!(body.max_stack, expected);
        prop_assert_eq!(report.computed, Some(expected));
        prop_assert!(body.validate_clauses().is_ok());
        let bytes = body.encode().unwrap();
        let decoded = MethodBody::decode(&bytes).unwrap();
        let mut analyzer = StackAnalyzer::new();
        prop_assert_eq!(
            analyzer.analyze(&decoded, &soup_resolver, ReturnKind::Infer).map(|a| a.max_stack()),
            Ok(expected)
        );
    }

    #[test]
    fn arbitrary_bodies_never_panic(
        ops in prop::collection::vec((0u8..36, any::<u16>(), prop::collection::vec(any::<u16>(), 0..4)), 1..40),
        clauses in prop::collection::vec((0u8..4, any::<bool>(), prop::array::uniform5(any::<u16>())), 0..4),
        returns in prop::option::of(any::<bool>()),
        unlink in prop::option::of(any::<u16>()),
    ) {
        // Weighted towards pushes so that some bodies are balanced.
        const SOUP: [OpCode; 36] = [
            OpCode::Nop, OpCode::LdcI40, OpCode::LdcI41, OpCode::Pop, OpCode::Add, OpCode::Dup,
            OpCode::Br, OpCode::BrtrueS, OpCode::Beq, OpCode::Leave, OpCode::Ret, OpCode::Throw,
            OpCode::Rethrow, OpCode::Switch, OpCode::Endfinally, OpCode::Endfilter, OpCode::Call,
            OpCode::Newobj, OpCode::Calli, OpCode::Jmp, OpCode::Tail, OpCode::Ldnull,
            OpCode::Stloc0, OpCode::Ldloc0, OpCode::LdcI40, OpCode::LdcI40, OpCode::LdcI40,
            OpCode::LdcI40, OpCode::Ldnull, OpCode::Ldnull, OpCode::Leave, OpCode::Leave,
            OpCode::Endfinally, OpCode::Ret, OpCode::Ret, OpCode::Br,
        ];
        let mut body = MethodBody::new();
        let ids: Vec<InstrId> = ops
            .iter()
            .map(|&(o, _, _)| body.instrs.push_back(Instruction::simple(SOUP[o as usize])))
            .collect();
        let n = ids.len();
        let pick = |x: u16| ids[x as usize % n];
        for (i, (o, arg, targets)) in ops.iter().enumerate() {
            let opcode = SOUP[*o as usize];
            let operand = if opcode.is_branch() {
                Operand::Target(pick(*arg))
            } else if opcode == OpCode::Switch {
                let t: Vec<InstrId> = targets.iter().map(|&x| pick(x)).collect();
                Operand::Switch(body.instrs.new_switch_targets(&t))
            } else if opcode.operand().is_token() {
                Operand::Token(u32::from(*arg))
            } else {
                Operand::None
            };
            let mut changed = body.instrs.get(ids[i]);
            changed.operand = operand;
            body.instrs.set(ids[i], changed);
        }
        for (kind, sorted, mut points) in clauses {
            if sorted {
                // Mostly well-formed: try, then filter, then handler, in order.
                for p in &mut points {
                    *p = (*p as usize % n) as u16;
                }
                points.sort_unstable();
                points = [points[0], points[1], points[3], points[4], points[2]];
            }
            let [a, b, c, d, f] = points;
            let kind = match kind {
                0 => ClauseKind::Catch(1),
                1 => ClauseKind::Finally,
                2 => ClauseKind::Fault,
                _ => ClauseKind::Filter(pick(f)),
            };
            body.clauses.push(ExceptionClause::new(kind, pick(a), pick(b), pick(c), pick(d)));
        }
        if let Some(u) = unlink {
            body.instrs.unlink(pick(u));
        }
        let cfg = ControlFlowGraph::build(&body);
        let mut analyzer = StackAnalyzer::new();
        if let Ok(a) = analyzer.analyze(&body, &soup_resolver, return_kind(returns)) {
            let max = a.max_stack();
            let heights = a.heights_by_id();
            for h in heights.iter().flatten() {
                prop_assert!(*h <= max);
            }
            prop_assert!(heights.iter().any(Option::is_some));
            match &cfg {
                Ok(_) => check_against_cfg(&body, &heights),
                // The graph needs every target; the stack analysis checks reachable code
                // only, so they may disagree only about an unreachable instruction.
                Err(Error::BadBranchTarget { at, .. } | Error::MalformedInstruction { at, .. }) => {
                    prop_assert_eq!(heights[at.id.index()], None);
                }
                Err(e) => prop_assert!(false, "cfg failed: {e}"),
            }
        }
        let mut copy = body.clone();
        let original = copy.max_stack;
        let report = StackAnalyzer::new().apply_max_stack(&mut copy, &soup_resolver, MaxStackMode::ComputeOrFallback, return_kind(returns))
            .unwrap();
        prop_assert_eq!(report.error.is_some(), report.computed.is_none());
        if report.error.is_some() {
            prop_assert_eq!(copy.max_stack, original);
        }
    }
}

/// What `ret` pops, from the generated `Option<bool>` (`None`: inferred).
fn return_kind(returns: Option<bool>) -> ReturnKind {
    returns.map_or(ReturnKind::Infer, ReturnKind::value_if)
}

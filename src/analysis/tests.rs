//! Unit tests of the analyses, on bodies written in a tiny assembly syntax.

use super::*;
use crate::body::{ClauseKind, ExceptionClause, MethodBody};
use crate::error::{Error, Result};
use crate::graph::{Incoming, InstrId, Instruction, Operand, SwitchTargets};
use crate::opcode::{OpCode, OperandKind};
use std::collections::HashMap;

/// A body plus its labels.
struct Asm {
    body: MethodBody,
    labels: HashMap<String, InstrId>,
}

impl Asm {
    fn id(&self, label: &str) -> InstrId {
        self.labels[label]
    }

    /// Adds a clause given by labels: `try_start try_last handler_start handler_last`.
    fn clause(mut self, kind: ClauseKind, labels: [&str; 4]) -> Self {
        let [ts, tl, hs, hl] = labels.map(|l| self.id(l));
        self.body
            .clauses
            .push(ExceptionClause::new(kind, ts, tl, hs, hl));
        self
    }

    fn catch(self, labels: [&str; 4]) -> Self {
        self.clause(ClauseKind::Catch(0x0100_0001), labels)
    }

    fn filter(self, filter: &str, labels: [&str; 4]) -> Self {
        let f = self.id(filter);
        self.clause(ClauseKind::Filter(f), labels)
    }

    fn analyze(&self, returns: ReturnKind) -> Result<(u16, Vec<Option<u16>>)> {
        let mut analyzer = StackAnalyzer::new();
        let a = analyzer.analyze(&self.body, &NoCalls, returns)?;
        Ok((a.max_stack(), a.heights_by_id()))
    }

    fn max(&self) -> Result<u16> {
        self.analyze(ReturnKind::Infer).map(|(m, _)| m)
    }

    fn height(&self, label: &str) -> Option<u16> {
        self.analyze(ReturnKind::Infer).unwrap().1[self.id(label).index()]
    }
}

/// Assembles one instruction per line: `[label:] opcode [operand]`. Branch operands are
/// labels, `switch` takes `(L1,L2,...)`, tokens and numbers are decimal or `0x` hex.
fn asm(src: &str) -> Asm {
    let mut body = MethodBody::new();
    let mut labels = HashMap::new();
    let mut fixups: Vec<(InstrId, Vec<String>)> = Vec::new();
    for line in src.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let (label, rest) = match line.split_once(':') {
            Some((l, r)) if !l.contains(' ') => (Some(l.trim()), r.trim()),
            _ => (None, line),
        };
        let mut words = rest.split_whitespace();
        let name = words.next().expect("opcode");
        let opcode = OpCode::from_name(name).unwrap_or_else(|| panic!("no opcode {name}"));
        let arg = words.next();
        let num = |a: Option<&str>| -> i64 {
            let a = a.expect("operand");
            match a.strip_prefix("0x") {
                Some(hex) => i64::from_str_radix(hex, 16).unwrap(),
                None => a.parse().unwrap(),
            }
        };
        let mut pending = Vec::new();
        let operand = match opcode.operand() {
            OperandKind::None => Operand::None,
            OperandKind::ShortI | OperandKind::ShortU | OperandKind::I => {
                Operand::Int(num(arg) as i32)
            }
            OperandKind::I8 => Operand::Long(num(arg)),
            OperandKind::ShortR => Operand::Float32(0),
            OperandKind::R => Operand::Float64(0),
            OperandKind::ShortVar | OperandKind::Var => Operand::Var(num(arg) as u16),
            OperandKind::ShortBranch | OperandKind::Branch => {
                pending.push(arg.expect("label").to_string());
                Operand::Target(InstrId(0))
            }
            OperandKind::Switch => {
                let list = arg.expect("(labels)");
                let list = list.trim_start_matches('(').trim_end_matches(')');
                pending.extend(list.split(',').map(|s| s.trim().to_string()));
                Operand::Switch(SwitchTargets { start: 0, len: 0 })
            }
            _ => Operand::Token(num(arg) as u32),
        };
        let id = body.instrs.push_back(Instruction::new(opcode, operand));
        if let Some(l) = label {
            labels.insert(l.to_string(), id);
        }
        if !pending.is_empty() {
            fixups.push((id, pending));
        }
    }
    for (id, targets) in fixups {
        let ids: Vec<InstrId> = targets
            .iter()
            .map(|l| *labels.get(l).unwrap_or_else(|| panic!("no label {l}")))
            .collect();
        let operand = if body.instrs.get(id).opcode == OpCode::Switch {
            Operand::Switch(body.instrs.new_switch_targets(&ids))
        } else {
            Operand::Target(ids[0])
        };
        let mut changed = body.instrs.get(id);
        changed.operand = operand;
        body.instrs.set(id, changed);
    }
    Asm { body, labels }
}

fn site_id(e: &Error) -> InstrId {
    match e {
        Error::StackUnderflow { at, .. }
        | Error::StackMismatch { at, .. }
        | Error::StackOverflow { at }
        | Error::NonEmptyStackAtTryEntry { at, .. }
        | Error::BadReturnStack { at, .. }
        | Error::NonEmptyStackAtJmp { at, .. }
        | Error::BadEndfilterStack { at, .. }
        | Error::FallsOffEnd { at }
        | Error::BadBranchTarget { at, .. }
        | Error::MalformedInstruction { at, .. }
        | Error::IllegalControlFlow { at, .. }
        | Error::CallResolution { at, .. } => at.id,
        other => panic!("no site in {other:?}"),
    }
}

// ---- straight line, loops, joins -------------------------------------------------------

#[test]
fn straight_line() {
    let a = asm("
        ldarg.0
        ldarg.1
        add
        ldc.i4.2
        mul
        dup
        pop
        ret
    ");
    let mut analyzer = StackAnalyzer::new();
    let r = analyzer
        .analyze(&a.body, &NoCalls, ReturnKind::Infer)
        .unwrap();
    assert_eq!(r.max_stack(), 2);
    assert_eq!(r.returns_value(), Some(true));
    let heights: Vec<_> = a.body.instrs.ids().map(|id| r.height_before(id)).collect();
    let expect = [0, 1, 2, 1, 2, 1, 2, 1];
    assert_eq!(heights, expect.map(Some));
}

#[test]
fn loop_with_back_branch() {
    let a = asm("
            ldc.i4.0
            stloc.0
        L:  ldloc.0
            ldc.i4.1
            add
            stloc.0
            ldloc.0
            ldc.i4.s 10
            blt.s L
            ldloc.0
            ret
    ");
    assert_eq!(a.max(), Ok(2));
    assert_eq!(a.height("L"), Some(0));
}

#[test]
fn loop_carrying_a_value() {
    // The loop head is reached with height 1 from both the entry and the back edge.
    let a = asm("
            ldc.i4.0
        L:  ldc.i4.1
            add
            dup
            ldc.i4.s 10
            blt L
            ret
    ");
    assert_eq!(a.max(), Ok(3));
    assert_eq!(a.height("L"), Some(1));
}

#[test]
fn join_with_equal_heights() {
    let a = asm("
            ldarg.0
            brtrue.s A
            ldc.i4.1
            br.s J
        A:  ldc.i4.2
        J:  ret
    ");
    assert_eq!(a.max(), Ok(1));
    assert_eq!(a.height("J"), Some(1));
    assert_eq!(a.height("A"), Some(0));
}

#[test]
fn join_with_different_heights_is_an_error() {
    let a = asm("
            ldarg.0
            brtrue.s J
            ldc.i4.1
        J:  ret
    ");
    let e = a.max().unwrap_err();
    match &e {
        Error::StackMismatch {
            at,
            from: Some(from),
            expected: 0,
            found: 1,
        } => {
            assert_eq!(at.id, a.id("J"));
            assert_eq!(from.opcode, OpCode::LdcI41);
        }
        other => panic!("{other:?}"),
    }
    assert!(e.to_string().contains("mismatch"), "{e}");
}

#[test]
fn underflow_is_an_error() {
    let a = asm("
            ldc.i4.0
        X:  add
            ret
    ");
    let e = a.max().unwrap_err();
    assert!(matches!(
        e,
        Error::StackUnderflow {
            height: 1,
            pops: 2,
            ..
        }
    ));
    assert_eq!(site_id(&e), a.id("X"));
    // Popping the empty stack on entry.
    assert!(matches!(
        asm("pop\nret").max(),
        Err(Error::StackUnderflow { height: 0, .. })
    ));
}

#[test]
fn falling_off_the_end_is_an_error() {
    let a = asm("
            ldc.i4.0
        X:  pop
    ");
    let e = a.max().unwrap_err();
    assert!(matches!(e, Error::FallsOffEnd { .. }));
    assert_eq!(site_id(&e), a.id("X"));
    // A conditional branch falls through too; so does a trailing prefix.
    let a = asm("
        L:  ldarg.0
        X:  brtrue.s L
    ");
    assert_eq!(site_id(&a.max().unwrap_err()), a.id("X"));
    assert!(matches!(asm("tail.").max(), Err(Error::FallsOffEnd { .. })));
    // But an unconditional branch or a throw at the end is fine.
    assert_eq!(asm("L: br.s L").max(), Ok(0));
    assert_eq!(asm("ldnull\nthrow").max(), Ok(1));
}

#[test]
fn empty_body_is_an_error() {
    assert_eq!(asm("").max(), Err(Error::EmptyBody));
}

#[test]
fn ret_rules() {
    // Two values left under the return value.
    let a = asm("
            ldc.i4.1
            ldc.i4.2
        X:  ret
    ");
    let e = a.analyze(ReturnKind::Infer).unwrap_err();
    assert!(matches!(
        e,
        Error::BadReturnStack {
            height: 2,
            expected: None,
            ..
        }
    ));
    assert_eq!(site_id(&e), a.id("X"));
    assert!(matches!(
        a.analyze(ReturnKind::Value),
        Err(Error::BadReturnStack {
            height: 2,
            expected: Some(1),
            ..
        })
    ));
    // Declared void but returns a value, declared non-void but returns nothing.
    let one = asm("ldc.i4.1\nret");
    assert_eq!(one.analyze(ReturnKind::Value).map(|r| r.0), Ok(1));
    assert!(matches!(
        one.analyze(ReturnKind::Void),
        Err(Error::BadReturnStack {
            height: 1,
            expected: Some(0),
            ..
        })
    ));
    assert!(matches!(
        asm("ret").analyze(ReturnKind::Value),
        Err(Error::BadReturnStack {
            height: 0,
            expected: Some(1),
            ..
        })
    ));
    // Inferred: the rets must agree.
    let a = asm("
            ldarg.0
            brtrue.s A
            ret
        A:  ldc.i4.1
            ret
    ");
    assert!(matches!(
        a.analyze(ReturnKind::Infer),
        Err(Error::BadReturnStack { .. })
    ));
    // No reachable ret: nothing inferred.
    let mut analyzer = StackAnalyzer::new();
    let r = analyzer
        .analyze(&asm("ldnull\nthrow").body, &NoCalls, ReturnKind::Infer)
        .unwrap();
    assert_eq!(r.returns_value(), None);
}

#[test]
fn jmp_needs_an_empty_stack() {
    assert_eq!(asm("jmp 0x06000001").max(), Ok(0));
    assert!(matches!(
        asm("ldc.i4.0\njmp 0x06000001").max(),
        Err(Error::NonEmptyStackAtJmp { height: 1, .. })
    ));
}

#[test]
fn switch_targets_get_the_height_after_the_switch() {
    let a = asm("
            ldc.i4.7
            ldarg.0
            switch (A,B,A)
            ldc.i4.1
            add
            br.s E
        A:  ldc.i4.2
            add
            br.s E
        B:  ldc.i4.3
            ldc.i4.4
            add
            add
        E:  ret
    ");
    assert_eq!(a.max(), Ok(3));
    assert_eq!(a.height("A"), Some(1));
    assert_eq!(a.height("B"), Some(1));
    assert_eq!(a.height("E"), Some(1));
}

#[test]
fn switch_join_mismatch() {
    let a = asm("
            ldarg.0
            switch (A)
            ldc.i4.1
        A:  ret
    ");
    assert!(matches!(a.max(), Err(Error::StackMismatch { .. })));
}

// ---- exception handling ----------------------------------------------------------------

#[test]
fn catch_handler_is_entered_with_the_exception() {
    let a = asm("
        T:  ldc.i4.1
            pop
        TL: leave.s E
        H:  stloc.0
            ldloc.0
            ldloc.0
            pop
            pop
        HL: leave.s E
        E:  ret
    ")
    .catch(["T", "TL", "H", "HL"]);
    assert_eq!(a.max(), Ok(2));
    assert_eq!(a.height("H"), Some(1));
    assert_eq!(a.height("E"), Some(0));
    // A handler that only pops still needs one slot.
    let a = asm("
        T:  nop
        TL: leave.s E
        H:  pop
        HL: leave.s E
        E:  ret
    ")
    .catch(["T", "TL", "H", "HL"]);
    assert_eq!(a.max(), Ok(1));
}

#[test]
fn finally_and_fault_are_entered_empty() {
    for kind in [ClauseKind::Finally, ClauseKind::Fault] {
        let a = asm("
            T:  nop
            TL: leave.s E
            H:  nop
            HL: endfinally
            E:  ret
        ")
        .clause(kind, ["T", "TL", "H", "HL"]);
        assert_eq!(a.max(), Ok(0), "{kind:?}");
        assert_eq!(a.height("H"), Some(0));
        // Popping in a finally underflows.
        let a = asm("
            T:  nop
            TL: leave.s E
            H:  pop
            HL: endfinally
            E:  ret
        ")
        .clause(kind, ["T", "TL", "H", "HL"]);
        assert!(matches!(a.max(), Err(Error::StackUnderflow { .. })));
    }
}

#[test]
fn endfinally_may_leave_values_behind() {
    let a = asm("
        T:  nop
        TL: leave.s E
        H:  ldc.i4.1
            ldc.i4.2
        HL: endfinally
        E:  ret
    ")
    .clause(ClauseKind::Finally, ["T", "TL", "H", "HL"]);
    assert_eq!(a.max(), Ok(2));
}

#[test]
fn filter_and_its_handler() {
    let a = asm("
        T:  nop
        TL: leave.s E
        F:  isinst 0x02000001
            ldnull
            cgt.un
            endfilter
        H:  pop
        HL: leave.s E
        E:  ret
    ")
    .filter("F", ["T", "TL", "H", "HL"]);
    assert_eq!(a.max(), Ok(2));
    assert_eq!(a.height("F"), Some(1));
    assert_eq!(a.height("H"), Some(1));
}

#[test]
fn endfilter_needs_exactly_one_value() {
    for (src, height) in [("F: pop\nendfilter", 0), ("F: ldc.i4.1\nendfilter", 2)] {
        let a = asm(&format!(
            "T: nop\nTL: leave.s E\n{src}\nH: pop\nHL: leave.s E\nE: ret"
        ))
        .filter("F", ["T", "TL", "H", "HL"]);
        assert!(
            matches!(a.max(), Err(Error::BadEndfilterStack { height: h, .. }) if h == height),
            "{:?}",
            a.max()
        );
    }
}

#[test]
fn leave_empties_the_stack() {
    let a = asm("
        T:  ldc.i4.1
            ldc.i4.2
        TL: leave.s E
        H:  ldc.i4.3
        HL: leave.s E
        E:  ret
    ")
    .catch(["T", "TL", "H", "HL"]);
    assert_eq!(a.max(), Ok(2));
    assert_eq!(a.height("E"), Some(0));
    // The leave target may also be reached by a plain branch with an empty stack only.
    let a = asm("
            ldarg.0
            brtrue.s E
        T:  ldc.i4.1
        TL: leave.s E
        H:  pop
        HL: leave.s E
        E:  ret
    ")
    .catch(["T", "TL", "H", "HL"]);
    assert_eq!(a.max(), Ok(1));
}

#[test]
fn try_must_be_entered_with_an_empty_stack() {
    let a = asm("
            ldc.i4.0
        T:  pop
        TL: leave.s E
        H:  pop
        HL: leave.s E
        E:  ret
    ")
    .catch(["T", "TL", "H", "HL"]);
    let e = a.max().unwrap_err();
    assert!(matches!(
        e,
        Error::NonEmptyStackAtTryEntry {
            clause: 0,
            height: 1,
            ..
        }
    ));
    assert_eq!(site_id(&e), a.id("T"));
    // A catch handler cannot start with a try: the exception object is on the stack.
    let a = asm("
        T:  nop
        TL: leave.s E
        H:  nop
        HL2: leave.s X
        X:  pop
        HL: leave.s E
        E:  ret
    ")
    .catch(["H", "HL2", "X", "X"])
    .catch(["T", "TL", "H", "HL"]);
    assert!(matches!(
        a.max(),
        Err(Error::NonEmptyStackAtTryEntry { clause: 0, .. })
    ));
}

#[test]
fn nested_handlers_are_reached_through_their_enclosing_try() {
    // try { try { } catch { <inner handler> } } finally { }
    let a = asm("
        T:  nop
        IT: nop
        ITL: leave.s OUT
        IH: pop
            ldc.i4.1
            ldc.i4.2
            ldc.i4.3
            pop
            pop
            pop
        IHL: leave.s OUT
        OUT: nop
        TL: leave.s E
        FH: ldc.i4.1
            pop
        FL: endfinally
        E:  ret
    ")
    .catch(["IT", "ITL", "IH", "IHL"])
    .clause(ClauseKind::Finally, ["T", "TL", "FH", "FL"]);
    assert_eq!(a.max(), Ok(3));
    assert_eq!(a.height("IH"), Some(1));
    assert_eq!(a.height("FH"), Some(0));
}

#[test]
fn a_handler_whose_try_is_unreachable_is_unreachable() {
    let a = asm("
            br.s E
        T:  nop
        TL: leave.s E
        H:  ldc.i4.1
            ldc.i4.2
            ldc.i4.3
            pop
            pop
            pop
        HL: leave.s E
        E:  ret
    ")
    .catch(["T", "TL", "H", "HL"]);
    assert_eq!(a.max(), Ok(0));
    assert_eq!(a.height("T"), None);
    assert_eq!(a.height("H"), None);
    // Reached only through a branch into the middle of the try: still reachable.
    let a = asm("
            br.s M
        T:  nop
        M:  nop
        TL: leave.s E
        H:  pop
        HL: leave.s E
        E:  ret
    ")
    .catch(["T", "TL", "H", "HL"]);
    assert_eq!(a.max(), Ok(1));
    assert_eq!(a.height("H"), Some(1));
    assert_eq!(a.height("T"), None);
}

#[test]
fn illegal_eh_control_flow() {
    // Branch to the start of a catch handler.
    let a = asm("
            ldnull
        X:  br.s H
        T:  nop
        TL: leave.s E
        H:  pop
        HL: leave.s E
        E:  ret
    ")
    .catch(["T", "TL", "H", "HL"]);
    let e = a.max().unwrap_err();
    assert!(matches!(e, Error::IllegalControlFlow { .. }), "{e:?}");
    assert_eq!(site_id(&e), a.id("X"));
    // Falling from the try into its catch handler.
    let a = asm("
        T:  nop
        X:  ldnull
        H:  pop
        HL: leave.s E
        E:  ret
    ")
    .catch(["T", "X", "H", "HL"]);
    assert_eq!(site_id(&a.max().unwrap_err()), a.id("X"));
    // ret inside a try.
    let a = asm("
        T:  nop
        X:  ret
        H:  endfinally
        E:  ret
    ")
    .clause(ClauseKind::Finally, ["T", "X", "H", "H"]);
    let e = a.max().unwrap_err();
    assert!(matches!(e, Error::IllegalControlFlow { .. }));
    assert_eq!(site_id(&e), a.id("X"));
    // endfinally outside a finally, endfilter outside a filter.
    assert!(matches!(
        asm("endfinally").max(),
        Err(Error::IllegalControlFlow { .. })
    ));
    assert!(matches!(
        asm("ldc.i4.0\nendfilter").max(),
        Err(Error::IllegalControlFlow { .. })
    ));
    let a = asm("
        T:  nop
        TL: leave.s E
        H:  pop
        HL: endfinally
        E:  ret
    ")
    .catch(["T", "TL", "H", "HL"]);
    assert!(matches!(a.max(), Err(Error::IllegalControlFlow { .. })));
    // A method that starts with a handler (found by fuzzing: the try was unreachable, so
    // the handler was entered only by the method's entry, with an empty stack).
    let a = asm("
        H:  pop
        HL: leave.s E
        T:  nop
        TL: leave.s E
        E:  ret
    ")
    .catch(["T", "TL", "H", "HL"]);
    let e = a.max().unwrap_err();
    assert!(matches!(e, Error::IllegalControlFlow { .. }), "{e:?}");
    assert_eq!(site_id(&e), a.id("H"));
    let a = asm("
        H:  endfinally
        T:  nop
        TL: leave.s E
        E:  ret
    ")
    .clause(ClauseKind::Finally, ["T", "TL", "H", "H"]);
    assert!(matches!(a.max(), Err(Error::IllegalControlFlow { .. })));
    // A finally may loop back to its own first instruction.
    let a = asm("
        T:  nop
        TL: leave.s E
        H:  ldarg.0
            brtrue.s H
        HL: endfinally
        E:  ret
    ")
    .clause(ClauseKind::Finally, ["T", "TL", "H", "HL"]);
    assert_eq!(a.max(), Ok(1));
}

#[test]
fn bad_clauses_are_reported_not_panicked_on() {
    let a = asm("
        T:  nop
        TL: leave.s E
        H:  pop
        HL: leave.s E
        E:  ret
    ");
    let t = a.id("T");
    let tl = a.id("TL");
    let h = a.id("H");
    let hl = a.id("HL");
    let cases = [
        ExceptionClause::new(ClauseKind::Finally, tl, t, h, hl),
        ExceptionClause::new(ClauseKind::Finally, t, tl, hl, h),
        ExceptionClause::new(ClauseKind::Finally, t, h, h, hl),
        ExceptionClause::new(ClauseKind::Filter(hl), t, tl, h, hl),
        ExceptionClause::new(ClauseKind::Filter(t), t, tl, h, hl),
        ExceptionClause::new(ClauseKind::Finally, InstrId(99), tl, h, hl),
    ];
    for clause in cases {
        let mut body = a.body.clone();
        body.clauses.push(clause);
        let mut analyzer = StackAnalyzer::new();
        assert!(
            matches!(
                analyzer.analyze(&body, &NoCalls, ReturnKind::Infer),
                Err(Error::BadEhClause { clause: 0, .. })
            ),
            "{clause:?}"
        );
        assert!(ControlFlowGraph::build(&body).is_err());
    }
}

#[test]
fn a_reused_analyzer_rejects_clause_boundaries_removed_since() {
    // The analyzer keeps its position table across bodies; an instruction removed from
    // the body must not pass for one through a position left from an earlier body.
    let a = asm("
        T:  nop
        TL: leave.s E
        H:  nop
        HL: endfinally
        E:  ret
    ")
    .clause(ClauseKind::Finally, ["T", "TL", "H", "HL"]);
    let mut analyzer = StackAnalyzer::new();
    assert_eq!(
        analyzer
            .analyze(&a.body, &NoCalls, ReturnKind::Infer)
            .map(|s| s.max_stack()),
        Ok(0)
    );
    let mut body = a.body.clone();
    body.instrs.unlink(a.id("H"));
    assert!(matches!(
        analyzer.analyze(&body, &NoCalls, ReturnKind::Infer),
        Err(Error::BadEhClause { clause: 0, .. })
    ));
    // The first body still analyses the same afterwards.
    assert_eq!(
        analyzer
            .analyze(&a.body, &NoCalls, ReturnKind::Infer)
            .map(|s| s.max_stack()),
        Ok(0)
    );
}

// ---- unreachable code ------------------------------------------------------------------

#[test]
fn unreachable_code_is_not_simulated() {
    let a = asm("
            br.s L
        D:  ldc.i4.1
            ldc.i4.2
            ldc.i4.3
            ldc.i4.4
            add
        L:  ret
    ");
    assert_eq!(a.max(), Ok(0));
    assert_eq!(a.height("D"), None);
    assert_eq!(a.height("L"), Some(0));
    // Even invalid unreachable code is ignored, as the JIT never imports it.
    let a = asm("
            ret
            pop
            pop
    ");
    assert_eq!(a.max(), Ok(0));
}

// ---- malformed bodies ------------------------------------------------------------------

#[test]
fn targets_outside_the_body_are_errors() {
    let mut a = asm("
        X:  br.s L
        L:  nop
            ret
    ");
    let l = a.id("L");
    a.body.instrs.unlink(l);
    let e = a.max().unwrap_err();
    assert!(matches!(e, Error::BadBranchTarget { target, .. } if target == l));
    assert_eq!(site_id(&e), a.id("X"));
    assert!(ControlFlowGraph::build(&a.body).is_err());

    let mut a = asm("
            ldc.i4.0
        X:  switch (L)
        L:  ret
    ");
    let x = a.id("X");
    let mut changed = a.body.instrs.get(x);
    changed.operand = Operand::Switch(SwitchTargets {
        start: 1000,
        len: 3,
    });
    a.body.instrs.set(x, changed);
    let e = a.max().unwrap_err();
    assert!(matches!(e, Error::MalformedInstruction { .. }));
    assert!(ControlFlowGraph::build(&a.body).is_err());
    let mut changed = a.body.instrs.get(x);
    changed.operand = Operand::None;
    a.body.instrs.set(x, changed);
    assert!(matches!(a.max(), Err(Error::MalformedInstruction { .. })));
    let mut changed = a.body.instrs.get(x);
    changed.operand = Operand::Switch(SwitchTargets {
        start: u32::MAX,
        len: u32::MAX,
    });
    a.body.instrs.set(x, changed);
    assert!(matches!(a.max(), Err(Error::MalformedInstruction { .. })));

    let mut a = asm("X: br.s X");
    let x = a.id("X");
    let mut changed = a.body.instrs.get(x);
    changed.operand = Operand::Int(3);
    a.body.instrs.set(x, changed);
    assert!(matches!(a.max(), Err(Error::MalformedInstruction { .. })));
    let mut a = asm("X: call 1\nret");
    let x = a.id("X");
    let mut changed = a.body.instrs.get(x);
    changed.operand = Operand::None;
    a.body.instrs.set(x, changed);
    let r = |_: OpCode, _: u32| Ok(CallEffect { pops: 0, pushes: 0 });
    assert!(matches!(
        StackAnalyzer::new()
            .analyze(&a.body, &r, ReturnKind::Infer)
            .map(|a| a.max_stack()),
        Err(Error::MalformedInstruction { .. })
    ));
}

#[test]
fn stack_overflow_is_an_error() {
    let mut body = MethodBody::new();
    for _ in 0..65535 {
        body.instrs.push_back(Instruction::simple(OpCode::Ldnull));
    }
    body.instrs.push_back(Instruction::simple(OpCode::Throw));
    assert_eq!(
        StackAnalyzer::new()
            .analyze(&body, &NoCalls, ReturnKind::Infer)
            .map(|a| a.max_stack()),
        Ok(65535)
    );
    let first = body.instrs.first().unwrap();
    body.instrs
        .link_before(first, Instruction::simple(OpCode::Ldnull));
    assert!(matches!(
        StackAnalyzer::new()
            .analyze(&body, &NoCalls, ReturnKind::Infer)
            .map(|a| a.max_stack()),
        Err(Error::StackOverflow { .. })
    ));
}

// ---- calls -----------------------------------------------------------------------------

/// A resolver over a token table, as a closure.
fn table_resolver(
    table: &[(u32, bool, bool, u32, bool)],
) -> impl Fn(OpCode, u32) -> Result<CallEffect> + '_ {
    move |opcode, token| {
        let &(_, has_this, explicit_this, params, ret) = table
            .iter()
            .find(|e| e.0 == token)
            .ok_or(Error::UnresolvedCall {
                opcode: opcode.name(),
                token,
                what: "unknown token",
            })?;
        CallEffect::from_parts(has_this, explicit_this, params, ret, opcode)
    }
}

#[test]
fn calls_take_their_effect_from_the_resolver() {
    let table = [
        // token, has_this, explicit_this, params, returns
        (0x0600_0001, false, false, 2, true), // static int F(int, int)
        (0x0600_0002, true, false, 1, false), // instance void M(int)
        (0x0600_0003, true, false, 3, false), // .ctor(int, int, int)
        (0x1100_0004, true, false, 1, true),  // calli instance int (int)
        (0x0A00_0005, false, false, 5, true), // vararg int V(int, ...; int, int, int, int)
        (0x0600_0006, true, true, 2, false),  // explicit this: void (object this, int)
    ];
    let resolver = table_resolver(&table);
    let a = asm("
            ldc.i4.1
            ldc.i4.2
            ldc.i4.3
            newobj 0x06000003
            ldc.i4.4
            callvirt 0x06000002
            ldc.i4.1
            ldc.i4.2
            call 0x06000001
            ldnull
            ldc.i4.1
            ldftn 0x06000009
            calli 0x11000004
            ldc.i4.1
            ldc.i4.2
            ldc.i4.3
            ldc.i4.4
        V:  call 0x0A000005
            add
            pop
            ldnull
            ldc.i4.0
            call 0x06000006
            ret
    ");
    let mut analyzer = StackAnalyzer::new();
    let r = analyzer
        .analyze(&a.body, &resolver, ReturnKind::Void)
        .unwrap();
    // Deepest: the int from F, the calli result, then 4 pushes before V's fifth arg... :
    // before V: [F-result, calli-result, 1, 2, 3, 4] = 6.
    assert_eq!(r.height_before(a.id("V")), Some(6));
    assert_eq!(r.max_stack(), 6);

    // A resolver failure names the call.
    let e = StackAnalyzer::new()
        .analyze(&a.body, &NoCalls, ReturnKind::Void)
        .map(|a| a.max_stack())
        .unwrap_err();
    match e {
        Error::CallResolution { at, source } => {
            assert_eq!(at.opcode, OpCode::Newobj);
            assert!(matches!(*source, Error::UnresolvedCall { .. }));
        }
        other => panic!("{other:?}"),
    }
    // A call that pops more than the stack holds underflows.
    let a = asm("
            ldc.i4.1
            call 0x06000001
            ret
    ");
    assert!(matches!(
        StackAnalyzer::new()
            .analyze(&a.body, &resolver, ReturnKind::Infer)
            .map(|a| a.max_stack()),
        Err(Error::StackUnderflow {
            height: 1,
            pops: 2,
            ..
        })
    ));
}

#[test]
fn newobj_always_pushes_one() {
    // Even if a resolver claims otherwise, the table's fixed push count wins.
    let a = asm("newobj 0x06000001\nret");
    let r = |_: OpCode, _: u32| Ok(CallEffect { pops: 0, pushes: 0 });
    assert_eq!(
        StackAnalyzer::new()
            .analyze(&a.body, &r, ReturnKind::Infer)
            .map(|a| a.max_stack()),
        Ok(1)
    );
}

// ---- peers' bugs (listed in docs/design.md) -----------------------------------------------

/// CLR Instrumentation Engine: max stack over-estimated because the depth recorded at a
/// branch target was the deepest depth seen before the branch, not the depth at it.
#[test]
fn peer_bug_depth_at_branch_targets_is_the_true_depth() {
    let a = asm("
            ldc.i4.0
            ldc.i4.0
            ldc.i4.0
            pop
            pop
            ldarg.0
            brtrue.s L
            nop
        L:  ldc.i4.0
            ldc.i4.0
            pop
            pop
            pop
            ret
    ");
    assert_eq!(a.height("L"), Some(1));
    // True max: 3 (three pushes at the start, or 1 + 2 after L); a peer that carried the
    // depth 3 into L would report 5.
    assert_eq!(a.max(), Ok(3));
}

/// ILRewriter (runtime sample, dd-trace): max stack = original + every push. We compute
/// the exact value instead.
#[test]
fn peer_bug_max_stack_is_not_a_sum_of_pushes() {
    let mut src = String::new();
    for _ in 0..100 {
        src.push_str("ldc.i4.0\npop\n");
    }
    src.push_str("ret");
    let mut a = asm(&src);
    a.body.max_stack = 8;
    let report = StackAnalyzer::new()
        .apply_max_stack(
            &mut a.body,
            &NoCalls,
            MaxStackMode::Compute,
            ReturnKind::Void,
        )
        .unwrap();
    assert_eq!(report.computed, Some(1));
    assert_eq!(a.body.max_stack, 1);
}

// ---- modes -----------------------------------------------------------------------------

#[test]
fn max_stack_modes() {
    let good = asm("ldc.i4.1\nldc.i4.2\nadd\nret");
    let bad = asm("ldc.i4.1\nadd\nret");

    let mut body = good.body.clone();
    body.max_stack = 5;
    let r = StackAnalyzer::new()
        .apply_max_stack(
            &mut body,
            &NoCalls,
            MaxStackMode::Compute,
            ReturnKind::Infer,
        )
        .unwrap();
    assert_eq!(
        r,
        MaxStackReport {
            original: 5,
            computed: Some(2),
            max_stack: 2,
            error: None
        }
    );
    assert_eq!(body.max_stack, 2);

    let mut body = good.body.clone();
    body.max_stack = 5;
    let r = StackAnalyzer::new()
        .apply_max_stack(
            &mut body,
            &NoCalls,
            MaxStackMode::KeepOriginal,
            ReturnKind::Infer,
        )
        .unwrap();
    assert_eq!((r.computed, r.max_stack, body.max_stack), (None, 5, 5));

    let mut body = good.body.clone();
    body.max_stack = 5;
    let r = StackAnalyzer::new()
        .apply_max_stack(
            &mut body,
            &NoCalls,
            MaxStackMode::ComputeOrFallback,
            ReturnKind::Infer,
        )
        .unwrap();
    assert_eq!((r.computed, r.max_stack, body.max_stack), (Some(2), 2, 2));

    let mut body = bad.body.clone();
    body.max_stack = 5;
    let e = StackAnalyzer::new()
        .apply_max_stack(
            &mut body,
            &NoCalls,
            MaxStackMode::Compute,
            ReturnKind::Infer,
        )
        .unwrap_err();
    assert!(matches!(e, Error::StackUnderflow { .. }));
    assert_eq!(body.max_stack, 5);

    let r = StackAnalyzer::new()
        .apply_max_stack(
            &mut body,
            &NoCalls,
            MaxStackMode::ComputeOrFallback,
            ReturnKind::Infer,
        )
        .unwrap();
    assert_eq!((r.computed, r.max_stack, body.max_stack), (None, 5, 5));
    assert!(matches!(r.error, Some(Error::StackUnderflow { .. })));
}

#[test]
fn analyzer_reuse_gives_identical_results() {
    let bodies = [
        asm("ldc.i4.1\nldc.i4.2\nldc.i4.3\npop\npop\nret"),
        asm("
            T:  nop
            TL: leave.s E
            H:  pop
            HL: leave.s E
            E:  ret
        ")
        .catch(["T", "TL", "H", "HL"]),
        asm("ldc.i4.1\nadd\nret"),
        asm("ret"),
    ];
    let mut shared = StackAnalyzer::new();
    for _ in 0..3 {
        for a in &bodies {
            let fresh = a.analyze(ReturnKind::Infer);
            let reused = shared
                .analyze(&a.body, &NoCalls, ReturnKind::Infer)
                .map(|r| (r.max_stack(), r.heights_by_id()));
            assert_eq!(fresh, reused);
        }
    }
}

// ---- decoded bodies ----------------------------------------------------------------------

/// Fat header + code + one small EH section.
fn fat_body(max_stack: u16, code: &[u8], clauses: &[[u32; 6]]) -> Vec<u8> {
    let mut out = Vec::new();
    let flags: u16 = 0x3003 | if clauses.is_empty() { 0 } else { 0x08 };
    out.extend_from_slice(&flags.to_le_bytes());
    out.extend_from_slice(&max_stack.to_le_bytes());
    out.extend_from_slice(&(code.len() as u32).to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(code);
    if !clauses.is_empty() {
        while out.len() % 4 != 0 {
            out.push(0);
        }
        out.push(0x01);
        out.push((4 + 12 * clauses.len()) as u8);
        out.extend_from_slice(&[0, 0]);
        for &[flags, to, tl, ho, hl, extra] in clauses {
            out.extend_from_slice(&(flags as u16).to_le_bytes());
            out.extend_from_slice(&(to as u16).to_le_bytes());
            out.push(tl as u8);
            out.extend_from_slice(&(ho as u16).to_le_bytes());
            out.push(hl as u8);
            out.extend_from_slice(&extra.to_le_bytes());
        }
    }
    out
}

#[test]
fn decoded_try_catch_body() {
    // static int M(int x) {
    //     try { return 10 / x; }
    //     catch (DivideByZeroException e) { Log(e.Message, x, x); return -1; }
    // }
    #[rustfmt::skip]
    let code = [
        0x1F, 0x0A,                   // 00 ldc.i4.s 10          try start
        0x02,                         // 02 ldarg.0
        0x5B,                         // 03 div
        0x0A,                         // 04 stloc.0
        0xDE, 0x10,                   // 05 leave.s IL_0017      try end
        0x6F, 0x01, 0x00, 0x00, 0x0A, // 07 callvirt get_Message handler start
        0x02,                         // 0c ldarg.0
        0x02,                         // 0d ldarg.0
        0x28, 0x02, 0x00, 0x00, 0x06, // 0e call Log(string, int32, int32)
        0x15,                         // 13 ldc.i4.m1
        0x0A,                         // 14 stloc.0
        0xDE, 0x00,                   // 15 leave.s IL_0017      handler end
        0x06,                         // 17 ldloc.0
        0x2A,                         // 18 ret
    ];
    let bytes = fat_body(3, &code, &[[0, 0x00, 0x07, 0x07, 0x10, 0x0100_0005]]);
    let body = MethodBody::decode(&bytes).unwrap();
    assert_eq!(body.clauses.len(), 1);
    let resolver = |opcode: OpCode, token: u32| match token {
        0x0A00_0001 => CallEffect::from_parts(true, false, 0, true, opcode),
        0x0600_0002 => CallEffect::from_parts(false, false, 3, false, opcode),
        _ => Err(Error::UnresolvedCall {
            opcode: opcode.name(),
            token,
            what: "unknown",
        }),
    };
    let mut analyzer = StackAnalyzer::new();
    let r = analyzer
        .analyze(&body, &resolver, ReturnKind::Value)
        .unwrap();
    assert_eq!(r.max_stack(), body.max_stack);
    assert_eq!(r.max_stack(), 3);
    let handler = body.clauses[0].handler_start;
    assert_eq!(r.height_before(handler), Some(1));
    let target = body.find_by_original_offset(0x17).unwrap();
    assert_eq!(r.height_before(target), Some(0));
}

#[test]
fn errors_name_the_original_offset() {
    // Tiny header, code: ldc.i4.0; add; ret
    let body = MethodBody::decode(&[0x0E, 0x16, 0x58, 0x2A]).unwrap();
    let e = StackAnalyzer::new()
        .analyze(&body, &NoCalls, ReturnKind::Infer)
        .map(|a| a.max_stack())
        .unwrap_err();
    match &e {
        Error::StackUnderflow { at, .. } => {
            assert_eq!(at.offset, Some(1));
            assert_eq!(at.opcode, OpCode::Add);
        }
        other => panic!("{other:?}"),
    }
    assert!(e.to_string().contains("IL_0001 (add)"), "{e}");
    // An instruction added after decoding has no offset; the error names its id.
    let mut body = body;
    let ids: Vec<InstrId> = body.instrs.ids().collect();
    body.instrs.unlink(ids[0]);
    body.instrs.unlink(ids[1]);
    let new = body
        .instrs
        .link_before(ids[2], Instruction::simple(OpCode::Pop));
    let e = StackAnalyzer::new()
        .analyze(&body, &NoCalls, ReturnKind::Infer)
        .map(|a| a.max_stack())
        .unwrap_err();
    match &e {
        Error::StackUnderflow { at, .. } => {
            assert_eq!(at.id, new);
            assert_eq!(at.offset, None);
        }
        other => panic!("{other:?}"),
    }
    assert!(e.to_string().contains("new instruction"), "{e}");
}

// ---- control-flow graph ------------------------------------------------------------------

#[test]
fn cfg_blocks_and_edges() {
    let a = asm("
            ldarg.0
            brtrue.s A
            ldc.i4.1
            br.s J
        A:  ldc.i4.2
        J:  ldarg.0
            switch (K,J)
            pop
        K:  ret
    ");
    let cfg = ControlFlowGraph::build(&a.body).unwrap();
    let firsts: Vec<InstrId> = cfg.blocks().map(|(_, b)| b.first).collect();
    let ids: Vec<InstrId> = a.body.instrs.ids().collect();
    assert_eq!(
        firsts,
        vec![ids[0], ids[2], a.id("A"), a.id("J"), ids[7], a.id("K")]
    );
    let lens: Vec<u32> = cfg.blocks().map(|(_, b)| b.len).collect();
    assert_eq!(lens, vec![2, 2, 1, 2, 1, 1]);
    let succ = |b: usize| {
        let mut s: Vec<(usize, EdgeKind)> = cfg
            .successors(BlockId::new(b))
            .map(|(t, k)| (t.index(), k))
            .collect();
        s.sort_by_key(|&(t, _)| t);
        s
    };
    assert_eq!(
        succ(0),
        vec![(1, EdgeKind::Fallthrough), (2, EdgeKind::Branch)]
    );
    assert_eq!(succ(1), vec![(3, EdgeKind::Branch)]);
    assert_eq!(succ(2), vec![(3, EdgeKind::Fallthrough)]);
    assert_eq!(
        succ(3),
        vec![
            (3, EdgeKind::Switch { case: 1 }),
            (4, EdgeKind::Fallthrough),
            (5, EdgeKind::Switch { case: 0 }),
        ]
    );
    assert_eq!(succ(5), vec![]);
    assert_eq!(cfg.entry(), Some(BlockId::new(0)));
    assert_eq!(cfg.block_of(a.id("J")), Some(BlockId::new(3)));
    assert_eq!(cfg.predecessors(BlockId::new(3)).count(), 3);
    assert_eq!(cfg.falls_off_end(), None);
    assert!(cfg.reachable().iter().all(|&r| r));
    assert_eq!(cfg.successors(BlockId::new(99)).count(), 0);
    assert_eq!(cfg.block(BlockId::new(99)), None);
    assert_eq!(cfg.block(BlockId::new(usize::MAX)), None);
    // The petgraph graph has a node per block, with the block as its weight, and the
    // same edges.
    use petgraph::visit::EdgeRef;
    let graph = cfg.graph();
    assert_eq!(graph.node_count(), cfg.block_count());
    for (b, block) in cfg.blocks() {
        assert_eq!(BlockId::from_node(b.node()), b);
        assert_eq!(graph[b.node()], *block);
        let mut edges: Vec<(BlockId, EdgeKind)> = graph
            .edges(b.node())
            .map(|e| (BlockId::from_node(e.target()), *e.weight()))
            .collect();
        let mut succs: Vec<(BlockId, EdgeKind)> = cfg.successors(b).collect();
        edges.sort_by_key(|&(t, k)| (t, format!("{k:?}")));
        succs.sort_by_key(|&(t, k)| (t, format!("{k:?}")));
        assert_eq!(edges, succs);
    }
}

#[test]
fn cfg_exception_edges_and_reachability() {
    let a = asm("
            br.s T
        D:  nop
            ret
        T:  nop
            ldarg.0
            brtrue.s TL
            nop
        TL: leave.s E
        F:  pop
            ldc.i4.1
            endfilter
        H:  pop
        HL: leave.s E
        E:  ret
    ")
    .filter("F", ["T", "TL", "H", "HL"]);
    let cfg = ControlFlowGraph::build(&a.body).unwrap();
    let block = |l: &str| cfg.block_of(a.id(l)).unwrap();
    let reachable = cfg.reachable();
    assert!(!reachable[block("D").index()]);
    for l in ["T", "TL", "F", "H", "E"] {
        assert!(reachable[block(l).index()], "{l}");
    }
    // Every try block has exceptional edges to the filter and to the handler.
    let try_blocks: Vec<BlockId> = (block("T").index()..=block("TL").index())
        .map(BlockId::new)
        .collect();
    assert_eq!(try_blocks.len(), 3);
    for b in try_blocks {
        let mut exc: Vec<BlockId> = cfg
            .successors(b)
            .filter(|(_, k)| *k == EdgeKind::Exception { clause: 0 })
            .map(|(t, _)| t)
            .collect();
        exc.sort();
        assert_eq!(exc, vec![block("F"), block("H")]);
    }
    let leave: Vec<_> = cfg
        .successors(block("TL"))
        .filter(|(_, k)| *k == EdgeKind::Leave)
        .collect();
    assert_eq!(leave, vec![(block("E"), EdgeKind::Leave)]);
    // The filter block ends right before the handler; endfilter has no successors.
    let filter_last = cfg.block(block("F")).unwrap().last;
    assert_eq!(Some(filter_last), a.body.instrs.prev(a.id("H")));
    assert_eq!(cfg.successors(block("F")).count(), 0);
    // The stack analysis agrees on reachability.
    let (_, heights) = a.analyze(ReturnKind::Infer).unwrap();
    for (id, _) in a.body.instrs.iter() {
        assert_eq!(
            reachable[cfg.block_of(id).unwrap().index()],
            heights[id.index()].is_some()
        );
    }
}

#[test]
fn cfg_falls_off_end_and_empty() {
    let cfg = ControlFlowGraph::build(&asm("nop\nnop").body).unwrap();
    assert_eq!(cfg.block_count(), 1);
    assert_eq!(cfg.falls_off_end(), Some(BlockId::new(0)));
    let cfg = ControlFlowGraph::build(&MethodBody::new()).unwrap();
    assert_eq!(cfg.block_count(), 0);
    assert_eq!(cfg.entry(), None);
    assert!(cfg.reachable().is_empty());
}

/// Linked storage: positions are not ids, and a reused analyzer's id -> position map
/// still holds entries from earlier bodies. A branch to a removed instruction must be
/// reported (not resolved through a stale entry), and heights are reported by id.
#[test]
fn reused_analyzer_maps_positions_of_edited_bodies_exactly() {
    let mut shared = StackAnalyzer::new();
    // A larger edited body first, so that every id of the next one has a stale entry.
    let mut big = asm("ldc.i4.1\nldc.i4.2\nldc.i4.3\npop\npop\npop\nret");
    let first = big.body.instrs.first().unwrap();
    big.body
        .insert_all_before(
            first,
            &[Instruction::simple(OpCode::Nop); 8],
            Incoming::Redirect,
        )
        .unwrap();
    assert_eq!(
        shared
            .analyze(&big.body, &NoCalls, ReturnKind::Infer)
            .unwrap()
            .max_stack(),
        3
    );

    let mut a = asm("
        ldc.i4.0
        brtrue.s L
        X: nop
        L: ldc.i4.1
        pop
        ret
    ");
    let (x, l) = (a.id("X"), a.id("L"));
    // Prepend one instruction: every position is now its id + 1.
    let entry = a.body.instrs.first().unwrap();
    let nop = a
        .body
        .insert_before(entry, Instruction::simple(OpCode::Nop), Incoming::Keep)
        .unwrap();
    let fresh = StackAnalyzer::new()
        .analyze(&a.body, &NoCalls, ReturnKind::Infer)
        .map(|r| (r.max_stack(), r.heights_by_id()))
        .unwrap();
    let reused = shared
        .analyze(&a.body, &NoCalls, ReturnKind::Infer)
        .map(|r| (r.max_stack(), r.heights_by_id()))
        .unwrap();
    assert_eq!(fresh, reused);
    let analysis = shared
        .analyze(&a.body, &NoCalls, ReturnKind::Infer)
        .unwrap();
    assert_eq!(analysis.height_before(nop), Some(0));
    assert_eq!(analysis.height_before(x), Some(0));
    assert_eq!(analysis.height_before(l), Some(0));

    // Remove X, then point the branch at it behind the editing API's back.
    a.body.remove(x).unwrap();
    let branch = a
        .body
        .instrs
        .next(a.body.instrs.next(nop).unwrap())
        .unwrap();
    a.body.instrs.set(
        branch,
        Instruction::new(OpCode::BrtrueS, Operand::Target(x)),
    );
    for analyzer in [&mut StackAnalyzer::new(), &mut shared] {
        let e = analyzer
            .analyze(&a.body, &NoCalls, ReturnKind::Infer)
            .unwrap_err();
        assert!(
            matches!(e, Error::BadBranchTarget { target, .. } if target == x),
            "{e:?}"
        );
    }
    // And a successful analysis reports nothing for the removed id.
    a.body.instrs.set(
        branch,
        Instruction::new(OpCode::BrtrueS, Operand::Target(l)),
    );
    let analysis = shared
        .analyze(&a.body, &NoCalls, ReturnKind::Infer)
        .unwrap();
    assert_eq!(analysis.height_before(x), None);
    assert_eq!(analysis.height_before(l), Some(0));
}

//! Editing and transform behaviour on hand-built boundary cases, including the
//! graph-level bugs of peer libraries (listed in docs/design.md).

use ilrewrite::graph::Incoming;
use ilrewrite::ilmap::IlMap;
use ilrewrite::transform::{
    CatchRethrow, Returns, TailCallPolicy, WrapOptions, Wrapped, inject_epilogue, inject_prologue,
    single_ret, wrap_try_finally,
};
use ilrewrite::{
    ClauseKind, Error, ExceptionClause, InstrId, Instruction, MethodBody, OpCode, Operand,
    TailCallRefusal,
};

const HOOK: u32 = 0x0A00_0099;

fn op(o: OpCode) -> Instruction {
    Instruction::simple(o)
}

fn call(token: u32) -> Instruction {
    Instruction::with_token(OpCode::Call, token)
}

/// Encodes, decodes, and checks the decoded body encodes to the same bytes again.
fn reencode(body: &MethodBody) -> (Vec<u8>, MethodBody) {
    let bytes = body.encode().expect("encodes");
    let decoded = MethodBody::decode(&bytes).expect("re-decodes");
    assert_eq!(decoded.encode().unwrap(), bytes);
    decoded
        .validate_clauses()
        .expect("clauses stay well-formed");
    (bytes, decoded)
}

fn opcodes(body: &MethodBody) -> Vec<OpCode> {
    body.instrs.iter().map(|(_, i)| i.opcode).collect()
}

fn target_of(body: &MethodBody, id: InstrId) -> InstrId {
    match body.instrs.get(id).operand {
        Operand::Target(t) => t,
        other => panic!("not a branch: {other:?}"),
    }
}

// ---- editing ------------------------------------------------------------------------

#[test]
fn remove_retargets_branches_to_the_next_instruction() {
    // Peer bug (CLR IE): Remove does not retarget branches.
    let mut body = MethodBody::new();
    let br = body.append(op(OpCode::Nop));
    let victim = body.append(op(OpCode::Nop));
    let next = body.append(op(OpCode::Ret));
    body.replace(br, Instruction::branch(OpCode::Br, victim))
        .unwrap();
    body.remove(victim).unwrap();
    assert_eq!(target_of(&body, br), next);
    assert!(!body.instrs.contains(victim));
    reencode(&body);
}

#[test]
fn removing_the_last_instruction_of_a_try_never_widens_it() {
    // Peer bug (CLR IE): removing the last instruction of a try widened the try.
    let mut body = MethodBody::new();
    let t0 = body.append(op(OpCode::Nop));
    let t1 = body.append(op(OpCode::Nop));
    let leave = body.append(op(OpCode::Nop));
    let h = body.append(op(OpCode::Endfinally));
    let end = body.append(op(OpCode::Ret));
    body.replace(leave, Instruction::branch(OpCode::Leave, end))
        .unwrap();
    body.add_clause(ExceptionClause::new(ClauseKind::Finally, t0, leave, h, h))
        .unwrap();
    // Make t1 the try's last instruction and remove it: the try must shrink to t0.
    body.clauses[0].try_last = t1;
    body.remove(t1).unwrap();
    assert_eq!(body.clauses[0].try_last, t0);
    assert_eq!(body.clauses[0].try_start, t0);
    // Removing the only instruction of a region is refused, body untouched.
    let before = opcodes(&body);
    assert!(matches!(
        body.remove(t0),
        Err(Error::EditWouldEmptyRegion { region: "try", .. })
    ));
    assert!(matches!(
        body.remove(h),
        Err(Error::EditWouldEmptyRegion {
            region: "handler",
            ..
        })
    ));
    assert_eq!(opcodes(&body), before);
}

#[test]
fn removing_the_first_instruction_of_a_handler_moves_its_start() {
    let mut body = MethodBody::new();
    let t0 = body.append(op(OpCode::Nop));
    let leave = body.append(op(OpCode::Nop));
    let h0 = body.append(op(OpCode::Nop));
    let h1 = body.append(op(OpCode::Endfinally));
    let end = body.append(op(OpCode::Ret));
    body.replace(leave, Instruction::branch(OpCode::Leave, end))
        .unwrap();
    body.add_clause(ExceptionClause::new(ClauseKind::Finally, t0, leave, h0, h1))
        .unwrap();
    body.remove(h0).unwrap();
    assert_eq!(body.clauses[0].handler_start, h1);
    reencode(&body);
}

#[test]
fn removing_a_branch_target_that_is_the_last_instruction_is_refused() {
    let mut body = MethodBody::new();
    let br = body.append(op(OpCode::Nop));
    let last = body.append(op(OpCode::Ret));
    body.replace(br, Instruction::branch(OpCode::Br, last))
        .unwrap();
    assert!(matches!(
        body.remove(last),
        Err(Error::EditWouldDangle { .. })
    ));
    assert!(body.instrs.contains(last));
}

#[test]
fn insert_before_keep_and_redirect_differ_only_in_who_points_where() {
    let mut body = MethodBody::new();
    let t0 = body.append(op(OpCode::Nop));
    let br = body.append(op(OpCode::Nop));
    let leave = body.append(op(OpCode::Nop));
    let h = body.append(op(OpCode::Endfinally));
    let end = body.append(op(OpCode::Ret));
    body.replace(br, Instruction::branch(OpCode::Br, t0))
        .unwrap();
    body.replace(leave, Instruction::branch(OpCode::Leave, end))
        .unwrap();
    body.add_clause(ExceptionClause::new(ClauseKind::Finally, t0, leave, h, h))
        .unwrap();

    let mut keep = body.clone();
    let k = keep
        .insert_before(t0, op(OpCode::Nop), Incoming::Keep)
        .unwrap();
    assert_eq!(target_of(&keep, br), t0);
    assert_eq!(
        keep.clauses[0].try_start, t0,
        "the new code is outside the try"
    );
    assert_eq!(keep.instrs.first(), Some(k));

    let mut redirect = body.clone();
    let r = redirect
        .insert_before(t0, op(OpCode::Nop), Incoming::Redirect)
        .unwrap();
    assert_eq!(target_of(&redirect, br), r);
    assert_eq!(
        redirect.clauses[0].try_start, r,
        "the new code starts the try"
    );

    // Handler start follows Redirect too.
    let mut h_redirect = body.clone();
    let hr = h_redirect
        .insert_before(h, op(OpCode::Nop), Incoming::Redirect)
        .unwrap();
    assert_eq!(h_redirect.clauses[0].handler_start, hr);
    // insert_after at a region's last instruction does not grow the region.
    let mut after = body.clone();
    after.insert_after(h, op(OpCode::Nop)).unwrap();
    assert_eq!(after.clauses[0].handler_last, h);
    for b in [keep, redirect, h_redirect] {
        reencode(&b);
    }
}

#[test]
fn clauses_are_ordered_inner_first_including_try_inside_handler() {
    // Peer bug (ILRewriter): clauses must be sorted inner-first, including a try block
    // nested inside another clause's handler.
    //   outer try { a } catch { [inner try { b } finally { c }] d }
    let mut body = MethodBody::new();
    let a = body.append(op(OpCode::Nop));
    let leave_outer = body.append(op(OpCode::Nop));
    let catch0 = body.append(op(OpCode::Pop));
    let b = body.append(op(OpCode::Nop));
    let leave_inner = body.append(op(OpCode::Nop));
    let c = body.append(op(OpCode::Endfinally));
    let d = body.append(op(OpCode::Nop));
    let leave_catch = body.append(op(OpCode::Nop));
    let end = body.append(op(OpCode::Ret));
    body.replace(leave_outer, Instruction::branch(OpCode::Leave, end))
        .unwrap();
    body.replace(leave_inner, Instruction::branch(OpCode::Leave, d))
        .unwrap();
    body.replace(leave_catch, Instruction::branch(OpCode::Leave, end))
        .unwrap();
    let outer = ExceptionClause::new(
        ClauseKind::Catch(0x0100_0001),
        a,
        leave_outer,
        catch0,
        leave_catch,
    );
    let inner = ExceptionClause::new(ClauseKind::Finally, b, leave_inner, c, c);
    // Add the outer first: the inner must still be placed before it.
    body.add_clause(outer).unwrap();
    assert_eq!(body.add_clause(inner).unwrap(), 0);
    assert_eq!(body.clauses, vec![inner, outer]);
    body.validate_clauses().unwrap();
    // The wrong order is detected.
    let mut wrong = body.clone();
    wrong.clauses.swap(0, 1);
    assert!(matches!(
        wrong.validate_clauses(),
        Err(Error::BadEhNesting { .. })
    ));
    // Overlapping without nesting is refused.
    let bad = ExceptionClause::new(ClauseKind::Finally, a, catch0, b, b);
    assert!(matches!(
        body.add_clause(bad),
        Err(Error::BadEhNesting { .. })
    ));
    let (_, decoded) = reencode(&body);
    assert_eq!(decoded.clauses.len(), 2);
}

#[test]
fn builders_pick_the_shortest_forms() {
    assert_eq!(Instruction::ldarg(0).opcode, OpCode::Ldarg0);
    assert_eq!(Instruction::ldarg(4).opcode, OpCode::LdargS);
    assert_eq!(Instruction::ldarg(256).opcode, OpCode::Ldarg);
    assert_eq!(Instruction::stloc(3).opcode, OpCode::Stloc3);
    assert_eq!(Instruction::stloc(255).opcode, OpCode::StlocS);
    assert_eq!(Instruction::ldloca(0).opcode, OpCode::LdlocaS);
    assert_eq!(Instruction::ldc_i4(-1).opcode, OpCode::LdcI4M1);
    assert_eq!(Instruction::ldc_i4(8).opcode, OpCode::LdcI48);
    assert_eq!(Instruction::ldc_i4(9).opcode, OpCode::LdcI4S);
    assert_eq!(Instruction::ldc_i4(-128).opcode, OpCode::LdcI4S);
    assert_eq!(Instruction::ldc_i4(128).opcode, OpCode::LdcI4);
    assert_eq!(Instruction::ldc_i4(-129).opcode, OpCode::LdcI4);
}

// ---- single-ret -----------------------------------------------------------------------

/// `ldarg.0; brtrue.s L; ldc.i4.1; ret; L: ldc.i4.2; ret` (value-returning, two rets).
fn two_returns() -> (MethodBody, InstrId, InstrId) {
    let mut body = MethodBody::new();
    body.append(Instruction::ldarg(0));
    let br = body.append(op(OpCode::Nop));
    body.append(Instruction::ldc_i4(1));
    let r1 = body.append(op(OpCode::Ret));
    let l = body.append(Instruction::ldc_i4(2));
    let r2 = body.append(op(OpCode::Ret));
    body.replace(br, Instruction::branch(OpCode::Brtrue, l))
        .unwrap();
    (body, r1, r2)
}

#[test]
fn single_ret_value_method_stores_and_jumps_to_one_epilogue() {
    let (mut body, r1, r2) = two_returns();
    let s = single_ret(&mut body, Returns::Value { local: 0 }).unwrap();
    assert_eq!(s.rewritten, 2);
    assert_eq!(s.leaves, 0);
    assert_eq!(
        opcodes(&body),
        vec![
            OpCode::Ldarg0,
            OpCode::BrtrueS,
            OpCode::LdcI41,
            OpCode::Stloc0,
            OpCode::BrS,
            OpCode::LdcI42,
            OpCode::Stloc0,
            OpCode::Ldloc0,
            OpCode::Ret
        ]
    );
    assert_eq!(body.instrs.get(r1).opcode, OpCode::Stloc0, "ids survive");
    assert_eq!(body.instrs.get(r2).opcode, OpCode::Stloc0);
    assert_eq!(
        body.instrs
            .iter()
            .filter(|(_, i)| i.opcode == OpCode::Ret)
            .count(),
        1
    );
    reencode(&body);
}

#[test]
fn single_ret_void_method_reuses_a_final_ret() {
    let mut body = MethodBody::new();
    let br = body.append(op(OpCode::Nop));
    let r1 = body.append(op(OpCode::Ret));
    let last = body.append(op(OpCode::Ret));
    body.replace(br, Instruction::branch(OpCode::Brtrue, last))
        .unwrap();
    let s = single_ret(&mut body, Returns::Void).unwrap();
    assert_eq!(s.ret, last);
    assert_eq!(s.rewritten, 1);
    assert_eq!(target_of(&body, r1), last);
    reencode(&body);
}

#[test]
fn switch_targeting_a_ret_lands_on_the_return_sequence() {
    let mut body = MethodBody::new();
    body.append(Instruction::ldarg(0));
    let sw = body.append(op(OpCode::Nop));
    let r1 = body.append(op(OpCode::Ret));
    let l = body.append(op(OpCode::Nop));
    let r2 = body.append(op(OpCode::Ret));
    let targets = body.instrs.new_switch_targets(&[r1, l, r2, r1]);
    body.replace(
        sw,
        Instruction::new(OpCode::Switch, Operand::Switch(targets)),
    )
    .unwrap();
    let s = single_ret(&mut body, Returns::Void).unwrap();
    // r1 became `br epilogue`; r2 is the reused final ret (the epilogue).
    assert_eq!(body.instrs.switch_targets(targets), &[r1, l, r2, r1]);
    assert_eq!(target_of(&body, r1), s.epilogue);
    assert_eq!(s.epilogue, r2);
    reencode(&body);
}

/// try { ldc.i4.1; ret-or-leave } <handler kind> { ...; ret } ; ret
fn ret_in(kind: &str) -> MethodBody {
    let mut body = MethodBody::new();
    let t0 = body.append(Instruction::ldc_i4(1));
    let t1 = body.append(op(OpCode::Ret));
    let (h0, h1, clause_kind) = match kind {
        "catch" => {
            let h0 = body.append(op(OpCode::Pop));
            body.append(Instruction::ldc_i4(2));
            let h1 = body.append(op(OpCode::Ret));
            (h0, h1, ClauseKind::Catch(0x0100_0001))
        }
        "finally" => {
            let h0 = body.append(Instruction::ldc_i4(2));
            let h1 = body.append(op(OpCode::Ret));
            (h0, h1, ClauseKind::Finally)
        }
        "filter" => {
            // filter { pop; ldc.i4.1; ret } handler { pop; ldc.i4.2; ret }
            let f0 = body.append(op(OpCode::Pop));
            body.append(Instruction::ldc_i4(1));
            body.append(op(OpCode::Ret));
            let h0 = body.append(op(OpCode::Pop));
            body.append(Instruction::ldc_i4(2));
            let h1 = body.append(op(OpCode::Ret));
            (h0, h1, ClauseKind::Filter(f0))
        }
        _ => unreachable!(),
    };
    body.add_clause(ExceptionClause::new(clause_kind, t0, t1, h0, h1))
        .unwrap();
    body
}

#[test]
fn ret_inside_try_and_catch_becomes_leave() {
    let mut body = ret_in("catch");
    let s = single_ret(&mut body, Returns::Value { local: 3 }).unwrap();
    assert_eq!((s.rewritten, s.leaves), (2, 2));
    let leaves: Vec<_> = body
        .instrs
        .iter()
        .filter(|(_, i)| i.opcode == OpCode::LeaveS)
        .map(|(id, _)| target_of(&body, id))
        .collect();
    assert_eq!(leaves, vec![s.epilogue, s.epilogue]);
    // The epilogue is outside every region.
    let c = body.clauses[0];
    let pos = body.positions();
    assert!(pos[s.epilogue.index()] > pos[c.handler_last.index()]);
    let (_, decoded) = reencode(&body);
    assert_eq!(decoded.clauses.len(), 1);
}

#[test]
fn ret_inside_finally_or_filter_is_refused_untouched() {
    for kind in ["finally", "filter"] {
        let mut body = ret_in(kind);
        let before = opcodes(&body);
        assert!(
            matches!(
                single_ret(&mut body, Returns::Value { local: 0 }),
                Err(Error::Unsupported { .. })
            ),
            "{kind}"
        );
        assert_eq!(opcodes(&body), before, "{kind}: body untouched");
    }
}

#[test]
fn ret_inside_nested_regions_leaves_to_the_outer_epilogue() {
    // try { try { ldc.i4.1; ret } catch { pop; leave X } X: ldc.i4.2; ret } finally {...}
    let mut body = MethodBody::new();
    let a0 = body.append(Instruction::ldc_i4(1));
    let a1 = body.append(op(OpCode::Ret));
    let c0 = body.append(op(OpCode::Pop));
    let c1 = body.append(op(OpCode::Nop));
    let x = body.append(Instruction::ldc_i4(2));
    let x1 = body.append(op(OpCode::Ret));
    let f = body.append(op(OpCode::Endfinally));
    body.replace(c1, Instruction::branch(OpCode::Leave, x))
        .unwrap();
    body.add_clause(ExceptionClause::new(ClauseKind::Finally, a0, x1, f, f))
        .unwrap();
    body.add_clause(ExceptionClause::new(
        ClauseKind::Catch(0x0100_0001),
        a0,
        a1,
        c0,
        c1,
    ))
    .unwrap();
    assert_eq!(body.clauses[0].kind, ClauseKind::Catch(0x0100_0001));
    let s = single_ret(&mut body, Returns::Value { local: 0 }).unwrap();
    assert_eq!(s.leaves, 2);
    reencode(&body);
}

#[test]
fn tail_call_ret_sequences_are_left_intact() {
    let mut body = MethodBody::new();
    body.append(op(OpCode::Tail));
    body.append(call(HOOK));
    let tail_ret = body.append(op(OpCode::Ret));
    let s = single_ret(&mut body, Returns::Void).unwrap();
    assert_eq!(s.tail_calls_kept, 1);
    assert_eq!(s.rewritten, 0);
    assert_eq!(body.instrs.get(tail_ret).opcode, OpCode::Ret);
}

// ---- prologue, epilogue, wrap --------------------------------------------------------

#[test]
fn prologue_is_not_captured_by_a_backward_branch_to_offset_0() {
    // L: ldarg.0; brtrue.s L; ret  — a loop back to the first instruction.
    let mut body = MethodBody::new();
    let first = body.append(Instruction::ldarg(0));
    let br = body.append(op(OpCode::Nop));
    body.append(op(OpCode::Ret));
    body.replace(br, Instruction::branch(OpCode::Brtrue, first))
        .unwrap();
    let bytes_before = body.encode().unwrap();
    let original = MethodBody::decode(&bytes_before).unwrap();
    let mut body = original.clone();
    let ids = inject_prologue(&mut body, &[Instruction::ldc_i4(7), call(HOOK)]).unwrap();
    let loop_head = body.instrs.next(ids[1]).unwrap();
    assert_eq!(body.original_offset(loop_head), Some(0));
    let br = body.instrs.next(loop_head).unwrap();
    assert_eq!(
        target_of(&body, br),
        loop_head,
        "the loop does not re-run the prologue"
    );
    let (bytes, _) = reencode(&body);
    // The IL map sends old offset 0 to the start of the prologue (new code maps forward).
    let map = IlMap::of(&body).unwrap();
    assert_eq!(map.map(0), Some(0));
    // Prologue: ldc.i4.7 (1 byte) + call (5 bytes); brtrue.s was at 1.
    assert_eq!(map.map(1), Some(1 + 6));
    assert!(bytes.len() > bytes_before.len());
}

#[test]
fn epilogue_code_runs_on_every_exit() {
    let (mut body, _, _) = two_returns();
    let s = single_ret(&mut body, Returns::Value { local: 0 }).unwrap();
    let ids = inject_epilogue(&mut body, s.epilogue, &[call(HOOK)]).unwrap();
    // Every jump that went to the epilogue now goes to the injected call.
    for (id, instr) in body.instrs.iter() {
        if instr.opcode.is_branch() && instr.opcode != OpCode::BrtrueS {
            assert_eq!(target_of(&body, id), ids[0]);
        }
    }
    reencode(&body);
}

#[test]
fn wrap_builds_try_finally_with_entry_exit_and_catch_rethrow() {
    let (mut body, _, _) = two_returns();
    let original = MethodBody::decode(&body.encode().unwrap()).unwrap();
    body = original.clone();
    let w = wrap_try_finally(
        &mut body,
        &WrapOptions {
            returns: Returns::Value { local: 0 },
            entry: &[call(HOOK)],
            exit: &[Instruction::ldloc(0), call(HOOK)],
            catch: Some(CatchRethrow {
                type_token: 0x0100_0002,
                code: &[],
            }),
            tail_calls: TailCallPolicy::DropPrefix,
        },
    )
    .unwrap();
    assert!(w.catch_start.is_some());
    assert_eq!(body.clauses.len(), 2);
    assert!(matches!(
        body.clauses[0].kind,
        ClauseKind::Catch(0x0100_0002)
    ));
    assert_eq!(body.clauses[1].kind, ClauseKind::Finally);
    assert_eq!(body.clauses[0].try_start, w.try_start);
    assert_eq!(body.clauses[1].try_start, w.try_start);
    assert!(body.is_fat_forced());
    let (_, decoded) = reencode(&body);
    assert_eq!(decoded.clauses.len(), 2);
    // Every original instruction survives and the IL map says where.
    let map = IlMap::of(&body).unwrap();
    assert_eq!(map.entries().len(), original.instrs.len());
    assert_eq!(
        map.map(0),
        Some(0),
        "entry code maps to the first instruction"
    );
}

/// The low-level wrap has no metadata to keep a tail call with: unless told to drop the
/// prefixes, it refuses the body, untouched, with a typed reason.
#[test]
fn wrap_refuses_tail_calls_unless_told_to_drop_them() {
    let mut body = MethodBody::new();
    body.append(op(OpCode::Tail));
    body.append(call(HOOK));
    body.append(op(OpCode::Ret));
    let before = format!("{body:?}");
    for (policy, reason) in [
        (TailCallPolicy::Keep, TailCallRefusal::NoMetadata),
        (TailCallPolicy::Refuse, TailCallRefusal::PolicyRefuses),
    ] {
        let opts = WrapOptions {
            returns: Returns::Void,
            entry: &[call(HOOK)],
            exit: &[call(HOOK)],
            catch: None,
            tail_calls: policy,
        };
        assert_eq!(
            wrap_try_finally(&mut body, &opts),
            Err(Error::TailCallNotKept {
                offset: None,
                reason
            })
        );
        assert_eq!(format!("{body:?}"), before);
    }
}

#[test]
fn wrap_removes_tail_prefixes_and_handles_throw_only_methods() {
    let mut body = MethodBody::new();
    body.append(op(OpCode::Tail));
    body.append(call(HOOK));
    body.append(op(OpCode::Ret));
    let w = wrap_try_finally(
        &mut body,
        &WrapOptions {
            returns: Returns::Void,
            entry: &[],
            exit: &[],
            catch: None,
            tail_calls: TailCallPolicy::DropPrefix,
        },
    )
    .unwrap();
    assert_eq!(w.tail_prefixes_removed, 1);
    assert!(!opcodes(&body).contains(&OpCode::Tail));
    reencode(&body);

    // throw-only: `ldnull; throw` — no ret at all.
    let mut body = MethodBody::new();
    body.append(op(OpCode::Ldnull));
    body.append(op(OpCode::Throw));
    let w = wrap_try_finally(
        &mut body,
        &WrapOptions {
            returns: Returns::Void,
            entry: &[call(HOOK)],
            exit: &[call(HOOK)],
            catch: None,
            tail_calls: TailCallPolicy::DropPrefix,
        },
    )
    .unwrap();
    assert_eq!(body.instrs.get(w.epilogue).opcode, OpCode::Ret);
    reencode(&body);
}

#[test]
fn empty_body_cannot_be_wrapped_but_round_trips() {
    let mut body = MethodBody::new();
    let (bytes, _) = reencode(&body);
    assert_eq!(bytes, vec![0x02]);
    assert!(
        wrap_try_finally(
            &mut body,
            &WrapOptions {
                returns: Returns::Void,
                entry: &[],
                exit: &[],
                catch: None,
                tail_calls: TailCallPolicy::DropPrefix,
            }
        )
        .is_err()
    );
}

#[test]
fn growing_a_tiny_body_past_64_bytes_and_past_small_eh_limits() {
    let mut body = MethodBody::new();
    body.append(op(OpCode::Ret));
    let (bytes, mut body) = reencode(&body);
    assert_eq!(bytes[0] & 3, 2, "starts tiny");
    let first = body.instrs.first().unwrap();
    for _ in 0..63 {
        body.insert_before(first, op(OpCode::Nop), Incoming::Keep)
            .unwrap();
    }
    let (bytes, mut body) = reencode(&body);
    assert_eq!(bytes[0] & 3, 3, "64 bytes of code need a fat header");

    // Wrap with a 300-byte finally: its handler length exceeds the small EH format.
    let exit: Vec<_> = (0..300).map(|_| op(OpCode::Nop)).collect();
    wrap_try_finally(
        &mut body,
        &WrapOptions {
            returns: Returns::Void,
            entry: &[],
            exit: &exit,
            catch: None,
            tail_calls: TailCallPolicy::DropPrefix,
        },
    )
    .unwrap();
    let (bytes, decoded) = reencode(&body);
    let code_size = u32::from_le_bytes(bytes[4..8].try_into().unwrap()) as usize;
    let sect = (12 + code_size).next_multiple_of(4);
    assert_ne!(bytes[sect] & 0x40, 0, "fat EH section");
    assert_eq!(decoded.clauses.len(), 1);
}

#[test]
fn il_maps_of_two_rewrite_stages_compose() {
    // Original: ldarg.0 (0); brtrue.s (1) -> L; ldc.i4.1 (3); ret (4); L: ldc.i4.2 (5); ret (6)
    let original = [0x1E, 0x02, 0x2D, 0x02, 0x17, 0x2A, 0x18, 0x2A];
    let mut stage1 = MethodBody::decode(&original).unwrap();
    inject_prologue(&mut stage1, &[call(HOOK)]).unwrap(); // +5 bytes in front
    let map1 = IlMap::of(&stage1).unwrap();
    let bytes1 = stage1.encode().unwrap();
    assert_eq!(map1.map(0), Some(0));
    assert_eq!(map1.map(1), Some(6));
    assert_eq!(map1.map(5), Some(10));

    // Stage 2 works on the stage-1 bytes: a nop before `ldc.i4.2` (stage-1 offset 10),
    // and the stage-1 prologue call (offset 0) is removed again.
    let mut stage2 = MethodBody::decode(&bytes1).unwrap();
    let at = stage2.find_by_original_offset(10).unwrap();
    stage2
        .insert_before(at, op(OpCode::Nop), Incoming::Redirect)
        .unwrap();
    let hook = stage2.find_by_original_offset(0).unwrap();
    stage2.remove(hook).unwrap();
    let map2 = IlMap::of(&stage2).unwrap();
    let bytes2 = stage2.encode().unwrap();
    let composed = map1.then(&map2);

    // Original offsets -> final offsets, checked against the final code itself.
    let last = MethodBody::decode(&bytes2).unwrap();
    let at = |off: u32| {
        last.instrs
            .get(last.find_by_original_offset(off).unwrap())
            .opcode
    };
    assert_eq!(composed.map(0), Some(0));
    assert_eq!(at(0), OpCode::Ldarg0);
    assert_eq!(composed.map(1), Some(1));
    assert_eq!(at(1), OpCode::BrtrueS);
    // ldc.i4.2 (original 5) now has the stage-2 nop in front: the map points at the nop.
    assert_eq!(composed.map(5), Some(5));
    assert_eq!(at(5), OpCode::Nop);
    assert_eq!(at(6), OpCode::LdcI42);
    assert_eq!(composed.entries().len(), 6);
    // Offset 0 went through the stage-1 prologue, which stage 2 removed: it lands on the
    // next surviving instruction and is marked inexact; every other entry is exact.
    let inexact: Vec<u32> = composed
        .entries()
        .iter()
        .filter(|e| !e.accurate)
        .map(|e| e.old_offset)
        .collect();
    assert_eq!(inexact, vec![0]);
}

#[test]
fn removing_a_branch_target_that_ends_a_region_is_refused() {
    // try { nop; br.s L; L: leave.s END } finally { endfinally } END: ret
    // Removing L would move `br.s` to the finally handler: refused, body untouched.
    let mut body = MethodBody::new();
    let t0 = body.append(op(OpCode::Nop));
    let br = body.append(op(OpCode::Nop));
    let l = body.append(op(OpCode::Nop));
    let h = body.append(op(OpCode::Endfinally));
    let end = body.append(op(OpCode::Ret));
    body.replace(br, Instruction::branch(OpCode::Br, l))
        .unwrap();
    body.replace(l, Instruction::branch(OpCode::Leave, end))
        .unwrap();
    body.add_clause(ExceptionClause::new(ClauseKind::Finally, t0, l, h, h))
        .unwrap();
    let before = opcodes(&body);
    assert!(matches!(body.remove(l), Err(Error::EditWouldDangle { .. })));
    assert_eq!(opcodes(&body), before);
    assert_eq!(target_of(&body, br), l);
    assert_eq!(body.clauses[0].try_last, l);
}

#[test]
fn a_ret_ending_a_try_becomes_stloc_and_a_leave_inside_the_try() {
    // try { ldc.i4.0; ret } finally { endfinally }  (a ret inside a try is invalid input,
    // but single-ret promises a `leave` inside the region, not after it)
    let mut body = MethodBody::new();
    let t0 = body.append(Instruction::ldc_i4(0));
    let r = body.append(op(OpCode::Ret));
    let h = body.append(op(OpCode::Endfinally));
    body.add_clause(ExceptionClause::new(ClauseKind::Finally, t0, r, h, h))
        .unwrap();
    let s = single_ret(&mut body, Returns::Value { local: 0 }).unwrap();
    let leave = body.instrs.next(r).unwrap();
    assert_eq!(body.instrs.get(leave).opcode, OpCode::LeaveS);
    assert_eq!(body.clauses[0].try_last, leave, "the leave ends the try");
    assert_eq!(body.instrs.next(leave), Some(h));
    assert_eq!(target_of(&body, leave), s.epilogue);
    reencode(&body);
}

/// Wraps `body` (a void method) in try/finally with no entry or exit code.
fn wrap(body: &mut MethodBody) -> Result<Wrapped, Error> {
    wrap_try_finally(
        body,
        &WrapOptions {
            returns: Returns::Void,
            entry: &[],
            exit: &[],
            catch: None,
            tail_calls: TailCallPolicy::DropPrefix,
        },
    )
}

#[test]
fn wrap_refuses_before_editing() {
    // A lone `tail.` decodes; wrapping it is refused, not a panic.
    let mut body = MethodBody::decode(&[0x0A, 0xFE, 0x14]).unwrap();
    assert!(matches!(wrap(&mut body), Err(Error::Unsupported { .. })));
    assert_eq!(opcodes(&body), vec![OpCode::Tail]);
    // `jmp` cannot sit in a try block.
    let mut body = MethodBody::new();
    body.append(Instruction::with_token(OpCode::Jmp, 0x0600_0001));
    assert!(matches!(wrap(&mut body), Err(Error::Unsupported { .. })));
    assert_eq!(opcodes(&body), vec![OpCode::Jmp]);
    // A `ret` inside a finally is refused with the `tail.` prefixes still in place.
    let mut body = MethodBody::new();
    body.append(op(OpCode::Tail));
    body.append(call(HOOK));
    body.append(op(OpCode::Ret));
    let t0 = body.append(op(OpCode::Nop));
    let leave = body.append(op(OpCode::Nop));
    let h0 = body.append(op(OpCode::Ret));
    let end = body.append(op(OpCode::Ret));
    body.replace(leave, Instruction::branch(OpCode::Leave, end))
        .unwrap();
    body.add_clause(ExceptionClause::new(ClauseKind::Finally, t0, leave, h0, h0))
        .unwrap();
    let before = opcodes(&body);
    assert!(matches!(wrap(&mut body), Err(Error::Unsupported { .. })));
    assert_eq!(opcodes(&body), before);
    // The empty body.
    assert!(matches!(
        wrap(&mut MethodBody::new()),
        Err(Error::EmptyBody)
    ));
}

/// Found by the `instrument` fuzz target: a `tail.` that ends a try block, followed by
/// a `nop`, in unreachable code the stack analysis accepts. Removing it would move the
/// branch to it out of the try, so the wrap failed after its first edits; it is now
/// refused before any edit, as every `tail.` that does not prefix a call in its own
/// regions is.
#[test]
fn a_tail_prefix_without_its_call_is_refused_before_any_edit() {
    // ldarg.0; ret; then (unreachable) ldsfld; brfalse.s -> tail.;
    // .try { ldloc.0; call; tail. } nop; ...: the fuzzer's input, as it came.
    let bytes = [
        0x1B, 0x30, 0x3C, 0x00, 0x2C, 0x00, 0x00, 0x00, 0x79, 0x09, 0x00, 0x11, 0x02, 0x2A, 0x7E,
        0x1A, 0x00, 0x04, 0x07, 0x2C, 0x06, 0x06, 0x28, 0xFD, 0x1B, 0x00, 0x0A, 0xFE, 0x14, 0x00,
        0xFE, 0x05, 0x2A, 0x7E, 0x00, 0x00, 0x00, 0x00, 0x0E, 0x00, 0x06, 0x0C, 0xDE, 0x0A, 0x07,
        0x2C, 0x06, 0x06, 0x28, 0xFD, 0x1B, 0x00, 0x06, 0xDC, 0x08, 0x2A, 0x01, 0x10, 0x00, 0x00,
        0x02, 0x00, 0x09, 0x00, 0x08, 0x2A, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00,
    ];
    let mut body = MethodBody::decode(&bytes).unwrap();
    let before = format!("{body:?}");
    assert!(matches!(wrap(&mut body), Err(Error::Unsupported { .. })));
    assert_eq!(format!("{body:?}"), before);
    // The same shape built by hand: `tail.` ends the try, its call follows outside.
    let mut body = MethodBody::new();
    let t0 = body.append(op(OpCode::Nop));
    let tail = body.append(op(OpCode::Tail));
    let h0 = body.append(op(OpCode::Endfinally));
    body.append(call(HOOK));
    body.append(op(OpCode::Ret));
    body.add_clause(ExceptionClause::new(ClauseKind::Finally, t0, tail, h0, h0))
        .unwrap();
    let before = format!("{body:?}");
    assert!(matches!(wrap(&mut body), Err(Error::Unsupported { .. })));
    assert_eq!(format!("{body:?}"), before);
    // A `tail.` that prefixes its call, as compilers emit it, is still removed.
    let mut body = MethodBody::new();
    body.append(op(OpCode::Tail));
    body.append(call(HOOK));
    body.append(op(OpCode::Ret));
    let wrapped = wrap(&mut body).unwrap();
    assert_eq!(wrapped.tail_prefixes_removed, 1);
    assert!(!opcodes(&body).contains(&OpCode::Tail));
}

/// Found by the `instrument` fuzz target: a decoded body whose two try regions overlap
/// without nesting, in code the stack analysis never reaches. The wrap failed when it
/// added its clause, after rewriting the `ret`s; an invalid clause list is now refused
/// before any edit.
#[test]
fn an_invalid_clause_list_is_refused_before_any_edit() {
    // Fat header, code `ret; nop x6`, two finally clauses: try [1, 3) handler [5, 6) and
    // try [2, 4) handler [6, 7).
    #[rustfmt::skip]
    let bytes = [
        0x1B, 0x30, 0x08, 0x00, 0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x2A, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x01, 28, 0x00, 0x00,
        0x02, 0x00, 0x01, 0x00, 0x02, 0x05, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00,
        0x02, 0x00, 0x02, 0x00, 0x02, 0x06, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00,
    ];
    let mut body = MethodBody::decode(&bytes).unwrap();
    assert_eq!(body.clauses.len(), 2);
    assert!(matches!(
        body.validate_clauses(),
        Err(Error::BadEhNesting { .. })
    ));
    let before = format!("{body:?}");
    let wrapped = wrap(&mut body);
    assert!(
        matches!(wrapped, Err(Error::BadEhNesting { .. })),
        "{wrapped:?}"
    );
    assert_eq!(format!("{body:?}"), before);
}

#[test]
fn new_branches_must_target_instructions_of_this_body() {
    let mut body = MethodBody::new();
    let a = body.append(op(OpCode::Nop));
    let gone = body.append(op(OpCode::Nop));
    body.append(op(OpCode::Ret));
    body.remove(gone).unwrap();
    let stale = Instruction::branch(OpCode::Br, gone);
    let before = opcodes(&body);
    assert!(matches!(
        body.insert_before(a, stale, Incoming::Keep),
        Err(Error::NotInBody { .. })
    ));
    assert!(matches!(
        body.insert_after(a, stale),
        Err(Error::NotInBody { .. })
    ));
    assert!(matches!(
        body.replace(a, stale),
        Err(Error::NotInBody { .. })
    ));
    assert!(matches!(
        body.insert_all_before(a, &[op(OpCode::Nop), stale], Incoming::Redirect),
        Err(Error::NotInBody { .. })
    ));
    assert_eq!(opcodes(&body), before, "nothing was linked");
    // A switch handle of another body is refused too.
    let mut other = MethodBody::new();
    let t = other.append(op(OpCode::Ret));
    let foreign = other.instrs.new_switch_targets(&[t, t, t]);
    assert!(matches!(
        body.replace(
            a,
            Instruction::new(OpCode::Switch, Operand::Switch(foreign))
        ),
        Err(Error::BadOperand { .. } | Error::NotInBody { .. })
    ));
}

//! Hostile instrumentation-method libraries (`tests/components/hostile_*.c`) under
//! `examples/engine.rs`, on both runtimes: what the C ABI promises a library cannot do.
//!
//! * an edit that breaks the body (the stack underflows, a `ret` with the wrong height,
//!   a branch to a `ret` with an empty stack), returned as `ILR_OK` with `changed = 1`,
//!   or with `changed` left 0, is rolled back alone: the program runs the other
//!   methods' edits, or its original IL, and the rollback is logged;
//! * code that keeps the stack's height but that the JIT would reject never reaches
//!   it: operands that do not fit the method or module (an argument or local it does
//!   not have, a token of another table or past its table), a dangling prefix,
//!   `arglist` without varargs (refused at once), `rethrow` outside a catch, a branch
//!   into or out of an exception region, `localloc` in a handler (rolled back alone);
//! * every bad argument of every host function is `ILR_E_INVALID_ARGUMENT` and changes
//!   nothing; every handle used outside its call, of the wrong kind, made up or on
//!   another thread is `ILR_E_INVALID_HANDLE`; one valid edit afterwards is exactly
//!   that edit;
//! * an error message longer than the host's buffer, its `length` past the capacity, is
//!   cut at the buffer; `wants` answering neither 0 nor 1 means no;
//! * a library that declares what the host cannot use (no name, an option of an unknown
//!   kind, a count with no table, a selector that does not parse, ...) is refused with
//!   one line and nothing of it runs.
#![cfg(feature = "clr")]

mod clr_support;

use clr_support::components::{
    assert_attached, assert_unchanged, entry, library, library_file, run, toml_str,
};
use clr_support::{Runtime, expected_stdout, for_each_runtime};

/// `hostile` on `Answer::Get` with `options` (TOML inline-table content) added to its
/// filter, alone or after `scale` (factor 2, priority 20) when `scale_priority` is
/// given (`hostile` is at 10: higher edits first).
fn hostile(options: &str, scale_priority: Option<i32>) -> String {
    let mut config = String::new();
    if let Some(priority) = scale_priority {
        config.push_str(&format!(
            "[[method]]\nname = \"scale\"\npriority = {priority}\n\
             options = {{ filter = \"Answer::Get\", factor = 2 }}\n\n"
        ));
    }
    config.push_str(&format!(
        "[[method]]\nname = \"hostile\"\nlibrary = {}\npriority = 10\n\
         options = {{ filter = \"Answer::Get\", {options} }}\n",
        toml_str(&library("hostile_edit"))
    ));
    config
}

/// `Answer` on `rt` under `config`: it attached, printed `answer {answer}` and exited
/// with it (mod 256), and `hostile`'s `edit` was called once; its stderr.
fn answers(rt: &Runtime, name: &str, config: &str, answer: i32) -> String {
    let out = run(rt, "Answer", name, config, &[]);
    let err = out.stderr.clone();
    assert_attached(&out);
    assert_eq!(out.stdout, format!("answer {answer}\n"), "{err}");
    assert_eq!(out.code(), answer & 0xFF, "{err}");
    let edits = err
        .lines()
        .filter(|l| *l == "ilrewrite: hostile: edit Answer::Get")
        .count();
    assert_eq!(edits, 1, "{err}");
    err
}

/// The line that says `hostile`'s edit of `Answer::Get` was rolled back while the
/// others' stand.
fn rolled_back_alone(err: &str) -> bool {
    err.lines().any(|l| {
        l.contains("instrumentation method hostile: int32 Answer::Get()")
            && l.contains("hostile: its edit does not verify")
            && l.contains("its edits of this method are rolled back, the others' kept")
    })
}

/// Proves that an edit the host cannot verify, returned as `ILR_OK` with `changed = 1`,
/// is rolled back alone, whichever instrumentation method edits first: a `pop` on the
/// empty stack at the entry, `ldc.i4.1` before the `ret` (two values at `ret`), a `br`
/// to the `ret` at the entry (`ret` with an empty stack). Alone, `Answer::Get` runs its
/// original IL (`answer 41`); with `scale` (x2) before or after it, `scale`'s edit
/// stands (`answer 82`) and the rollback of `hostile`'s is logged, naming it.
#[test]
fn an_edit_that_breaks_the_body_is_rolled_back_alone() {
    for_each_runtime(|rt| {
        for trick in ["pop_empty", "ret_height", "branch_empty"] {
            let options = format!("trick = \"{trick}\"");
            for scale in [20, 5] {
                let config = hostile(&options, Some(scale));
                let err = answers(rt, &format!("broken-{trick}-{scale}"), &config, 82);
                assert!(rolled_back_alone(&err), "{trick}, scale at {scale}:\n{err}");
            }
            let err = answers(rt, &format!("broken-{trick}"), &hostile(&options, None), 41);
            assert!(kept_original(&err), "{trick}:\n{err}");
        }
    });
}

/// The line that says `Answer::Get` runs its original IL because `hostile`'s edit did
/// not verify.
fn kept_original(err: &str) -> bool {
    err.lines().any(|l| {
        l.contains("Answer::Get")
            && l.contains("hostile: its edit does not verify")
            && l.contains("its original IL is kept")
    })
}

/// Proves that a library that edits the body and says it did not (`changed` left 0)
/// cannot slip an edit past the host's verification: its `pop` on the empty stack is
/// rolled back alone as if it had said so, and `scale`'s edit stands (`answer 82`).
/// Alone, the program runs its original IL.
#[test]
fn an_edit_that_says_it_changed_nothing_is_still_verified() {
    let options = "trick = \"lie\"";
    for_each_runtime(|rt| {
        for scale in [20, 5] {
            let err = answers(
                rt,
                &format!("lie-{scale}"),
                &hostile(options, Some(scale)),
                82,
            );
            assert!(rolled_back_alone(&err), "scale at {scale}:\n{err}");
        }
        let err = answers(rt, "lie", &hostile(options, None), 41);
        assert!(kept_original(&err), "{err}");
    });
}

/// The summary line of a `hostile` check: "hostile: {what} done, N checks, 0 wrong",
/// with N at least `least`.
fn checks_passed(err: &str, what: &str, least: u32) {
    let prefix = format!("ilrewrite: hostile: {what} done, ");
    let line = err
        .lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("no summary of {what}:\n{err}"));
    let (made, wrong) = line
        .strip_suffix(" wrong")
        .and_then(|l| l.split_once(" checks, "))
        .unwrap_or_else(|| panic!("{line}"));
    let made: u32 = made.parse().expect("a count");
    assert!(made >= least, "{made} checks:\n{err}");
    assert_eq!(wrong, "0", "{err}");
}

/// Proves that every bad argument is `ILR_E_INVALID_ARGUMENT` and changes nothing: null
/// out-pointers of every host function, ids 0, unknown or past the end, `incoming`
/// neither 0 nor 1, a huge `count` with null code, unknown opcodes (0xFE99, 0x24,
/// 0x0100, 0xFFFF), operands of the wrong kind or out of range (`ldc.i4.s 300`,
/// `ldarg.s 1000`, a branch to id 0, to an id not in the body, to -1, a token past 32
/// bits), `switch`, names that are not UTF-8, each alone and after a good instruction
/// (all or nothing: the `ids` array untouched); after them the body is instruction for
/// instruction what it was, and one valid edit (`+ 1000`) is exactly that edit
/// (`answer 1041`).
#[test]
fn bad_arguments_are_refused_and_change_nothing() {
    for_each_runtime(|rt| {
        let err = answers(rt, "bad-args", &hostile("trick = \"bad_args\"", None), 1041);
        checks_passed(&err, "bad_args", 100);
    });
}

/// Proves that every handle used outside its call is `ILR_E_INVALID_HANDLE`: made-up
/// numbers (0, 1, `UINT64_MAX`), the options handle of `start` (in `wants` and in
/// `edit`), a candidate handle of `wants` (in `edit`), a candidate handle used as an
/// edit or options one, the edit handle as options and its options handle as an edit,
/// the edit handle on another thread during the edit call (a pthread joined inside
/// it); the body unchanged after them, and the valid edit exactly that (`answer 1041`).
#[test]
fn handles_outside_their_call_are_invalid() {
    for_each_runtime(|rt| {
        let err = answers(rt, "handles", &hostile("trick = \"handles\"", None), 1041);
        checks_passed(&err, "handles", 20);
    });
}

/// Proves that an error message longer than the host's buffer, its `length` set past
/// the `capacity`, is read only up to the buffer (1024 bytes of `x`, then the line
/// ends), and that the error rolls back the library's edit made before it: the program
/// runs its original IL (`answer 41`).
#[test]
fn a_message_longer_than_the_buffer_is_cut() {
    for_each_runtime(|rt| {
        let err = answers(
            rt,
            "long-error",
            &hostile("trick = \"long_error\"", None),
            41,
        );
        let x = "x".repeat(1024);
        let line = err
            .lines()
            .find(|l| l.contains(&x))
            .unwrap_or_else(|| panic!("no message logged:\n{err}"));
        assert!(!line.contains(&format!("{x}x")), "{line}");
        assert!(line.contains("hostile"), "{line}");
    });
}

/// Proves that `wants` answering neither `ILR_WANT_NO` nor `ILR_WANT_EDIT` (7, -1) is
/// taken as no: `edit` is never called and the program runs unchanged.
#[test]
fn wants_answers_other_than_0_or_1_mean_no() {
    for_each_runtime(|rt| {
        for answer in [7, -1] {
            let config = hostile(&format!("trick = \"valid\", answer = {answer}"), None);
            let out = run(rt, "Answer", &format!("wants-{answer}"), &config, &[]);
            assert_attached(&out);
            assert_unchanged(rt, "Answer", &out);
            assert!(!out.stderr.contains("hostile: edit"), "{}", out.stderr);
        }
        // The control: answer 1 edits.
        answers(
            rt,
            "wants-1",
            &hostile("trick = \"valid\", answer = 1", None),
            1041,
        );
    });
}

// ---------------------------------------------------------------------------------------
// Declarations the host cannot use
// ---------------------------------------------------------------------------------------

/// `hostile_declare` with `ILR_HOSTILE_CREATE = create` (when given) and option
/// `mode = mode` must be refused: exactly one stderr line contains every one of `says`,
/// `Answer.exe` runs as unprofiled, and neither `wants` nor `edit` of the library was
/// ever called.
fn declared_refused(name: &str, create: Option<&str>, mode: &str, says: &[&str]) {
    let config = entry(
        "hostile_declare",
        &library("hostile_declare"),
        &format!("mode = \"{mode}\""),
    );
    let env: Vec<(&str, &str)> = create
        .map(|c| ("ILR_HOSTILE_CREATE", c))
        .into_iter()
        .collect();
    for_each_runtime(|rt| {
        let out = run(rt, "Answer", name, &config, &env);
        let err = &out.stderr;
        assert_unchanged(rt, "Answer", &out);
        let lines = err
            .lines()
            .filter(|l| says.iter().all(|s| l.contains(s)))
            .count();
        assert_eq!(lines, 1, "one line saying all of {says:?} expected:\n{err}");
        assert!(!err.contains("hostile_declare: wants called"), "{err}");
        assert!(!err.contains("hostile_declare: edit called"), "{err}");
    });
}

/// Proves that a `create` that returns `ILR_OK` but declares what the host cannot use
/// is refused at load with one line naming the library and the reason, and nothing of
/// it runs: no name, an empty name, a name that is not UTF-8, an option of kind 99,
/// `option_count` 5 with a null table, an option with a null name or one that is not
/// UTF-8, an option declared twice.
#[test]
fn a_declaration_the_host_cannot_use_is_refused_at_load() {
    let file = library_file("hostile_declare");
    for (trick, says) in [
        ("null_name", "no name"),
        ("empty_name", "its name is empty"),
        ("non_utf8_name", "its name is not UTF-8"),
        ("kind99", "option `mode` of unknown kind 99"),
        ("count_null_table", "5 options, and no table of them"),
        ("null_option_name", "no option name"),
        ("non_utf8_option", "its option name is not UTF-8"),
        ("duplicate_option", "option `mode` declared twice"),
    ] {
        declared_refused(
            &format!("declare-{trick}"),
            Some(trick),
            "good",
            &["engine: ", &file, says],
        );
    }
}

/// Proves that `targets` answers the host cannot use stop the start with one line
/// naming the method and the reason, and then nothing of it runs: a selector that does
/// not parse, a count of 3 with a null array, a null selector, one that is not UTF-8, a
/// failing `targets` (its message).
#[test]
fn targets_the_host_cannot_use_stop_the_start() {
    for (mode, says) in [
        ("bad_selector", "target 0 (\"Answer::Get(\")"),
        ("null_array", "3 targets, and no array of them"),
        ("null_entry", "target 1: no target"),
        ("non_utf8_entry", "target 0: its target is not UTF-8"),
        ("targets_fail", "hostile_declare: no targets today"),
    ] {
        declared_refused(
            &format!("targets-{mode}"),
            None,
            mode,
            &["hostile_declare", says],
        );
    }
}

/// The control of the two tests above: the usable declaration with a good selector
/// loads, starts, and its `wants` is asked about `Answer::Get` (its target).
#[test]
fn the_usable_declaration_runs() {
    let config = entry(
        "hostile_declare",
        &library("hostile_declare"),
        "mode = \"good\"",
    );
    for_each_runtime(|rt| {
        let out = run(rt, "Answer", "declare-good", &config, &[]);
        assert_attached(&out);
        assert_unchanged(rt, "Answer", &out);
        assert!(
            out.stderr.contains("hostile_declare: wants called"),
            "{}",
            out.stderr
        );
    });
}

/// Proves that an operand of the right kind that does not fit the method or the module
/// never reaches the runtime: `ldarg 1000`, `ldloc 1000`, `ldarga.s 5`, `ldarg.3` and
/// `ldloc.0` in `Answer::Get` (no arguments, no locals), `ldstr` of a MethodDef token or
/// past the string heap, `ldtoken`, `call` and `box` of tokens past their tables are
/// each refused at once (`ILR_E_INVALID_ARGUMENT`), and `scale`'s edit stands
/// (`answer 82`), and so are `newobj` and `callvirt` of a static method (the method
/// itself); `ldtoken` and `ldftn` of the method's own token, and `newobj` of an instance
/// constructor, are taken. Before the host checked them, the first three and `ldtoken` made the
/// runtime throw `InvalidProgramException` or `TypeLoadException` from `Answer::Get`,
/// `newobj` of it `InvalidProgramException` and `callvirt` of it
/// `MissingMethodException`.
#[test]
fn operands_that_do_not_fit_the_method_never_reach_the_runtime() {
    for_each_runtime(|rt| {
        for case in 0..10 {
            let options = format!("trick = \"bad_operand\", case = {case}");
            let config = hostile(&options, Some(20));
            let err = answers(rt, &format!("operand-{case}"), &config, 82);
            assert!(
                err.contains(&format!("hostile: bad_operand {case} status -2")),
                "case {case}:\n{err}"
            );
        }
        // `newobj` and `callvirt` of `Answer::Get` (static, no constructor) are
        // refused; the controls fit and stand: `ldtoken` and `ldftn` of it, `newobj`
        // of an instance constructor of a MemberRef.
        for (case, status) in [(10, 0), (11, -2), (12, -2), (13, 0), (14, 0)] {
            let options = format!("trick = \"bad_operand\", case = {case}");
            let err = answers(
                rt,
                &format!("operand-{case}"),
                &hostile(&options, Some(20)),
                82,
            );
            assert!(
                err.contains(&format!("hostile: bad_operand {case} status {status}")),
                "case {case}:\n{err}"
            );
            assert!(!err.contains("rolled back"), "{err}");
        }
    });
}

/// Proves that code keeping the stack's height that the JIT would still reject never
/// reaches it: a prefix not followed by an instruction it may prefix (`tail. nop`,
/// `volatile. nop`, `volatile.` last in the code) and `arglist` in a method without
/// varargs are refused at once (`ILR_E_INVALID_ARGUMENT`); `endfinally`, `endfilter` and
/// `rethrow` outside their handlers are rolled back alone; `scale`'s edit stands
/// (`answer 82`) each time. Before the host checked them, `volatile. nop`, `rethrow` and
/// `arglist` made the runtime throw `InvalidProgramException` from `Answer::Get`.
#[test]
fn code_the_jit_would_reject_never_reaches_it() {
    for_each_runtime(|rt| {
        for (case, refused_at_once) in [
            (0, true),
            (1, true),
            (2, false),
            (3, false),
            (4, true),
            (5, false),
            (6, true),
        ] {
            let options = format!("trick = \"bad_code\", case = {case}");
            let err = answers(
                rt,
                &format!("code-{case}"),
                &hostile(&options, Some(20)),
                82,
            );
            match refused_at_once {
                true => assert!(
                    err.contains(&format!("hostile: bad_code {case} status -2")),
                    "case {case}:\n{err}"
                ),
                false => assert!(
                    err.contains(&format!("hostile: bad_code {case} status 0"))
                        && rolled_back_alone(&err),
                    "case {case}:\n{err}"
                ),
            }
        }
    });
}

/// The control of the checks above on original code: `offset_c` (addend 0) edits
/// `EdgeCases.Program::Filter`, whose filter clause's handler ends in a `rethrow`; the
/// edited body is verified with the `rethrow` in place and stands (no rollback), and the
/// program prints what it prints unprofiled.
#[test]
fn the_checks_take_a_rethrow_inside_its_handler() {
    let config = entry(
        "offset_c",
        &library("offset"),
        r#"filter = "EdgeCases.Program::Filter", addend = 0, verbose = true"#,
    );
    for_each_runtime(|rt| {
        let out = run(rt, "EdgeCases", "rethrow-control", &config, &[]);
        let err = &out.stderr;
        assert_attached(&out);
        assert_unchanged(rt, "EdgeCases", &out);
        assert!(
            err.contains("offset_c: edit EdgeCases.Program::Filter"),
            "{err}"
        );
        assert!(!err.contains("does not verify"), "{err}");
        assert!(!err.contains("original IL is kept"), "{err}");
    });
}

/// `hostile` alone on `EdgeCases.Program::Fault` (an int32 method with a try/fault
/// nested in a try/catch) with `options` added.
fn on_fault(options: &str) -> String {
    format!(
        "[[method]]\nname = \"hostile\"\nlibrary = {}\n\
         options = {{ filter = \"EdgeCases.Program::Fault\", {options} }}\n",
        toml_str(&library("hostile_edit"))
    )
}

/// Proves that a branch the JIT would reject because of the exception regions never
/// reaches it: a `br` inserted at the entry of `EdgeCases.Program::Fault` to an
/// instruction in the middle of its inner and outer protected blocks (positions 3 and
/// 6), to the start and the middle of its fault handler (9, 10) and to the start and
/// the middle of its catch handler (12, 14) is rolled back (the method runs its
/// original IL, the program prints what it prints unprofiled). Before the host checked
/// regions, 3, 6, 9 and 14 made the runtime throw `InvalidProgramException`. The
/// control: a `br` to the instruction after the regions (17, `ldloc.0` before `ret`) is
/// a valid edit and stands (`Fault` returns 0: the output changes).
#[test]
fn a_branch_into_a_region_never_reaches_the_runtime() {
    for_each_runtime(|rt| {
        for case in [3, 6, 9, 10, 12, 14] {
            let config = on_fault(&format!("trick = \"branch_to\", case = {case}"));
            let out = run(rt, "EdgeCases", &format!("branch-{case}"), &config, &[]);
            let err = &out.stderr;
            assert_attached(&out);
            assert_unchanged(rt, "EdgeCases", &out);
            assert!(
                err.contains(&format!("hostile: branch_to {case} status 0"))
                    && err.lines().any(|l| l.contains("EdgeCases.Program::Fault")
                        && l.contains("hostile: its edit does not verify")
                        && l.contains("its original IL is kept")),
                "case {case}:\n{err}"
            );
        }
        let config = on_fault("trick = \"branch_to\", case = 17");
        let out = run(rt, "EdgeCases", "branch-17", &config, &[]);
        let err = &out.stderr;
        assert_attached(&out);
        assert_ne!(out.stdout, expected_stdout("EdgeCases"), "{err}");
        assert!(!err.contains("does not verify"), "{err}");
    });
}

/// The control of the checks above on the code of real programs: `offset_c` with
/// `addend = 0` edits every int32 method the JIT compiles in `EdgeCases`, `Features`
/// and `CallTree` (nested and sibling try blocks, catch, filter, finally and fault
/// handlers, `leave` out of them, loops, async state machines, `rethrow`); every edited
/// body passes the checks (nothing is rolled back but the edits that would break a
/// `tail.` call) and each program prints what it prints unprofiled. `edit_return_type`
/// answers for every method, `void` ones included (it failed for them before).
#[test]
fn the_checks_take_the_code_of_real_programs() {
    let config = entry(
        "offset_c",
        &library("offset"),
        r#"filter = "::", addend = 0"#,
    );
    for_each_runtime(|rt| {
        for program in ["EdgeCases", "Features", "CallTree"] {
            let out = run(rt, program, &format!("all-{program}"), &config, &[]);
            let err = &out.stderr;
            assert_attached(&out);
            assert_unchanged(rt, program, &out);
            // The only edits refused are those before the `ret` of a `tail.` call,
            // which `offset_c` would break (its `add` between the call and `ret`).
            let refused: Vec<&str> = err
                .lines()
                .filter(|l| l.contains("does not verify") || l.contains("original IL is kept"))
                .filter(|l| {
                    !l.contains("tail. is not followed by call, callvirt or calli and then ret")
                })
                .collect();
            assert!(refused.is_empty(), "{program}:\n{err}");
            assert!(
                !err.contains("edit_return_type failed"),
                "{program}:\n{err}"
            );
        }
    });
}

/// Proves that `localloc` inserted in a handler never reaches the JIT (which rejects
/// it there): `ldc.i4.4; localloc; pop` before an instruction of the fault handler
/// (position 10) or of the catch handler (13) of `EdgeCases.Program::Fault` is rolled
/// back and the method runs its original IL; in the protected block (3) or after the
/// regions (17) it is a valid edit and stands. Before the host checked it, 10 and 13
/// made the runtime throw `InvalidProgramException`.
#[test]
fn localloc_in_a_handler_never_reaches_the_runtime() {
    for_each_runtime(|rt| {
        for (case, stands) in [(3, true), (10, false), (13, false), (17, true)] {
            let config = on_fault(&format!("trick = \"localloc_at\", case = {case}"));
            let out = run(rt, "EdgeCases", &format!("localloc-{case}"), &config, &[]);
            let err = &out.stderr;
            assert_attached(&out);
            assert_unchanged(rt, "EdgeCases", &out);
            assert!(
                err.contains(&format!("hostile: localloc_at {case} status 0")),
                "{err}"
            );
            let rolled_back = err
                .lines()
                .any(|l| l.contains("localloc in a handler or filter") && l.contains("Fault"));
            assert_eq!(rolled_back, !stands, "case {case}:\n{err}");
        }
    });
}

/// Proves that the host's verification holds at the limit of the stack: 65,535
/// `ldc.i4.0` then as many `pop` at the entry of `Answer::Get` verify and stand, one more
/// is rolled back alone (a max stack past 65,535 cannot be encoded); `scale`'s edit
/// stands (`answer 82`) both times.
#[test]
fn a_stack_deeper_than_a_body_can_declare_is_rolled_back() {
    for_each_runtime(|rt| {
        for (depth, stands) in [(65_535, true), (65_536, false)] {
            let options = format!("trick = \"deep_stack\", case = {depth}");
            let config = hostile(&options, Some(20));
            let err = answers(rt, &format!("deep-{depth}"), &config, 82);
            assert!(
                err.contains(&format!("hostile: deep_stack {depth} status 0")),
                "{err}"
            );
            assert_eq!(rolled_back_alone(&err), !stands, "depth {depth}:\n{err}");
        }
    });
}

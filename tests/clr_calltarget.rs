//! `examples/calltarget.rs` (the library's `CallTargetMethod` in a profiler, configured
//! by TOML) on `tests/programs/CallTargetApp.exe` with the `Recorder` integration of
//! `CallTargetIntegrations.dll`: every call of a target gets one `ct begin` line with
//! exactly the arguments the program's own `call` line shows, right before it, and one
//! `ct end` line with the value of its `return` line, right after it; the program's own
//! output and exit code unchanged. And on framework targets with ReadyToRun code kept:
//! `String.Concat` under `CallTargetApp.exe`, and StringBuilder's, Dictionary`2's and
//! Task's methods on `tests/programs/CallTargetFramework.exe`'s request path with the
//! `Counter` and `Thrower` integrations.
#![cfg(feature = "clr")]

mod clr_support;

use clr_support::{
    Runtime, build_example_cdylib, config_file, exit_code, expected_stdout, for_each_runtime,
    run_profiled,
};

const CALLTARGET: &str = "{0C7A7E15-3D2B-4C5A-9E61-2F0B8D4A1C93}";

/// The Recorder on `Statics`' 7 static methods (0 to 12 parameters, void and values,
/// a struct and an enum among them) and 4 instance methods of the class `Account`.
const RECORDER: &str = r#"
[[method]]
name = "calltarget"
options = { integrations = [
    "CallTargetApp.Statics::* => CallTargetIntegrations.Recorder, CallTargetIntegrations",
    "CallTargetApp.Account::Deposit => CallTargetIntegrations.Recorder, CallTargetIntegrations",
    "CallTargetApp.Account::Balance => CallTargetIntegrations.Recorder, CallTargetIntegrations",
    "CallTargetApp.Account::Describe => CallTargetIntegrations.Recorder, CallTargetIntegrations",
    "CallTargetApp.Account::Sum12 => CallTargetIntegrations.Recorder, CallTargetIntegrations, Version=1.0.0.0",
] }
"#;

/// The targets of [`RECORDER`], each called once by the program.
const TARGETS: &[&str] = &[
    "CallTargetApp.Statics::Nothing",
    "CallTargetApp.Statics::Answer",
    "CallTargetApp.Statics::Twice",
    "CallTargetApp.Statics::Join",
    "CallTargetApp.Statics::Move",
    "CallTargetApp.Statics::Say",
    "CallTargetApp.Statics::Twelve",
    "CallTargetApp.Account::Deposit",
    "CallTargetApp.Account::Balance",
    "CallTargetApp.Account::Describe",
    "CallTargetApp.Account::Sum12",
];

fn features() -> Vec<&'static str> {
    let mut f = vec!["clr"];
    if cfg!(feature = "pe") {
        f.push("pe");
    }
    f
}

/// `CallTargetApp.exe` under the CallTarget profiler, configured by `config` (written to
/// a file called `name`), with `env` added.
fn run(rt: &Runtime, name: &str, config: &str, env: &[(&str, &str)]) -> clr_support::Output {
    run_program(rt, "CallTargetApp", name, config, env)
}

/// Runs test program `program` under the profiler with configuration `config` (written
/// to a file named after `name`) and the variables `env`.
fn run_program(
    rt: &Runtime,
    program: &str,
    name: &str,
    config: &str,
    env: &[(&str, &str)],
) -> clr_support::Output {
    let so = build_example_cdylib("calltarget", &features());
    let config = config_file(name, config);
    let config = config.to_str().expect("a UTF-8 path");
    let mut vars = vec![("CALLTARGET_CONFIG", config)];
    vars.extend_from_slice(env);
    run_profiled(rt, program, &so, CALLTARGET, &vars)
}

/// `line` without its call id: `ct begin T #5 a b` -> (`T a b`, 5).
fn without_id(line: &str) -> (String, u64) {
    let mut words: Vec<&str> = line.split(' ').collect();
    let at = words
        .iter()
        .position(|w| w.starts_with('#'))
        .unwrap_or_else(|| panic!("no id in {line:?}"));
    let id = words.remove(at)[1..].parse().expect("a numeric id");
    (words.join(" "), id)
}

/// The call lines (`call T ...`) of `stdout` whose target `is_target`: their targets, in
/// order.
fn calls(stdout: &str, is_target: &dyn Fn(&str) -> bool) -> Vec<String> {
    stdout
        .lines()
        .filter_map(|l| l.strip_prefix("call "))
        .map(|rest| rest.split(' ').next().unwrap_or("").to_owned())
        .filter(|t| is_target(t))
        .collect()
}

/// `T` without the type arguments of its type: `N.Box`1[System.Int32]::Swap` ->
/// `N.Box`1::Swap`.
fn open_name(target: &str) -> String {
    match (target.find('['), target.rfind("]::")) {
        (Some(a), Some(b)) if a < b => format!("{}{}", &target[..a], &target[b + 1..]),
        _ => target.to_owned(),
    }
}

/// Checks the `ct` lines of `stdout` against the program's own trace: each begin right
/// before its target's `call` line with the same arguments (an `out` argument, which the
/// program prints as `(out)`, as the caller's `out-before` line gave it), each end right
/// after its `return` line with the same value and no exception, or after an exception
/// with the type of the last `throw` line and the default value, ends paired with their
/// begins by id; every call of a target has its begin. Returns the targets seen, in call
/// order.
fn check_trace(stdout: &str, is_target: &dyn Fn(&str) -> bool) -> Vec<String> {
    let lines: Vec<&str> = stdout.lines().collect();
    let mut seen = Vec::new();
    let mut open = Vec::new();
    let mut out_before = String::new();
    let mut thrown = String::new();
    for (i, line) in lines.iter().enumerate() {
        if let Some(rest) = line.strip_prefix("out-before ") {
            out_before = rest.to_owned();
        } else if let Some(rest) = line.strip_prefix("throw ") {
            thrown = rest.rsplit(' ').next().unwrap_or("").to_owned();
        } else if let Some(rest) = line.strip_prefix("ct begin ") {
            let (rest, id) = without_id(rest);
            let call = lines
                .get(i + 1)
                .map(|l| l.replace(" (out)", &format!(" {out_before}")));
            assert_eq!(
                call,
                Some(format!("call {rest}")),
                "begin hook's arguments at line {i}"
            );
            let target = rest.split(' ').next().unwrap_or("").to_owned();
            seen.push(target.clone());
            open.push((target, id));
        } else if let Some(rest) = line.strip_prefix("ct end ") {
            let (rest, id) = without_id(rest);
            let (value, exception) = rest.rsplit_once(' ').expect("an exception field");
            let (target, begun) = open.pop().expect("an end after its begin");
            assert_eq!(id, begun, "{line}");
            let value = value
                .strip_prefix(&format!("{target} "))
                .unwrap_or_else(|| panic!("{line}: not {target}'s"));
            if exception == "-" {
                assert_eq!(
                    lines[i - 1],
                    format!("return {target} {value}"),
                    "end hook's return value at line {i}"
                );
            } else {
                assert_eq!(exception, thrown, "{line}");
                assert!(["0", "void", "null"].contains(&value), "{line}");
            }
        } else if let Some(rest) = line.strip_prefix("call ") {
            let target = rest.split(' ').next().unwrap_or("");
            if is_target(target) {
                assert!(
                    i > 0 && lines[i - 1].starts_with(&format!("ct begin {target} ")),
                    "a target called without its begin hook at line {i}: {line}"
                );
            }
        }
    }
    assert!(open.is_empty(), "begins without ends: {open:?}");
    seen
}

/// The program's stdout without the `ct` lines.
fn without_ct(stdout: &str) -> String {
    stdout
        .lines()
        .filter(|l| !l.starts_with("ct "))
        .flat_map(|l| [l, "\n"])
        .collect()
}

/// Runs `config`, checks the trace of the targets `is_target` selects against the
/// program's own, and everything else unchanged; returns the run.
fn check_recorder(
    rt: &Runtime,
    name: &str,
    config: &str,
    is_target: &dyn Fn(&str) -> bool,
) -> clr_support::Output {
    let expected = expected_stdout("CallTargetApp");
    let mut last = None;
    for tiering in ["1", "0"] {
        let out = run(rt, name, config, &[("COMPlus_TieredCompilation", tiering)]);
        let err = &out.stderr;
        assert_eq!(out.code(), exit_code("CallTargetApp"), "{err}");
        assert!(!err.contains("keeps its IL"), "{err}");
        let seen = check_trace(&out.stdout, is_target);
        assert_eq!(seen, calls(&expected, is_target), "{err}");
        assert!(!seen.is_empty());
        assert_eq!(without_ct(&out.stdout), expected, "{err}");
        last = Some(out);
    }
    last.expect("two runs")
}

/// The listings `[manager] show_il` logged on `stderr`: (the first line, the rest).
fn listings(stderr: &str) -> Vec<(&str, Vec<&str>)> {
    let mut found: Vec<(&str, Vec<&str>)> = Vec::new();
    let mut open = false;
    for line in stderr.lines() {
        if line.starts_with("ilrewrite: IL handed over at ") {
            found.push((line, Vec::new()));
            open = true;
        } else if line.starts_with("ilrewrite: ") {
            open = false;
        } else if open && let Some((_, body)) = found.last_mut() {
            body.push(line);
        }
    }
    found
}

/// What a listing of a 12-parameter target shows: the begin hook gets `this` (for an
/// instance method) and every argument by address, `ldarga` each, with no `box` before
/// the call; the end hook's code (from `finally` on) has no `box` either.
fn check_twelve(listing: &[&str], instance: bool) {
    let text = listing.join("\n");
    let begin = listing
        .iter()
        .position(|l| l.contains("::OnMethodBegin<"))
        .unwrap_or_else(|| panic!("no begin hook:\n{text}"));
    let opcode = |l: &&str| l.split_whitespace().nth(1).unwrap_or("").to_owned();
    let prologue = &listing[..begin];
    let addresses = prologue
        .iter()
        .filter(|l| opcode(l).starts_with("ldarga"))
        .count();
    assert_eq!(addresses, 12 + usize::from(instance), "{text}");
    assert!(listing[begin].ends_with("!!11&, !!12&)"), "{text}");
    let end = listing
        .iter()
        .position(|l| l.starts_with("finally"))
        .unwrap_or_else(|| panic!("no finally:\n{text}"));
    for part in [prologue, &listing[end..]] {
        assert!(!part.iter().any(|l| opcode(l) == "box"), "{text}");
    }
}

/// The Recorder on static and instance methods of classes: its lines match the
/// program's own trace exactly, on both runtimes, tiering on and off; everything else
/// the program prints, and its exit code, unchanged. The IL handed over for the two
/// 12-parameter targets (one static, one an instance method), as `[manager] show_il`
/// logs it, passes every argument by address: no `box`, no array.
#[test]
fn recorder_sees_what_the_program_passes_and_returns() {
    for_each_runtime(|rt| {
        let is_target = |t: &str| TARGETS.contains(&t);
        let config = format!(
            "[manager]\nshow_il = [\"CallTargetApp.Statics::Twelve\", \
             \"CallTargetApp.Account::Sum12\"]\n{RECORDER}"
        );
        let out = check_recorder(rt, "calltarget_recorder", &config, &is_target);
        let listings = listings(&out.stderr);
        assert_eq!(listings.len(), 2, "{}", out.stderr);
        for (first, listing) in listings {
            let instance = listing[0].contains("Account::Sum12");
            assert!(first.ends_with(":"), "{first}");
            check_twelve(&listing, instance);
        }
    })
}

/// The targets of [`RECORDER_WIDE`] (by name, generic types without their arguments).
const WIDE_TARGETS: &[&str] = &[
    "CallTargetApp.RefOut::Swap",
    "CallTargetApp.RefOut::TryHalf",
    "CallTargetApp.RefOut::Shift",
    "CallTargetApp.Generics::Id",
    "CallTargetApp.Generics::Pair",
    "CallTargetApp.Box`1::Swap",
    "CallTargetApp.Cell`1::Set",
    "CallTargetApp.Counter::Bump",
    "CallTargetApp.Counter::Read",
    "CallTargetApp.Recursion::Fact",
    "CallTargetApp.Failing::Outer",
    "CallTargetApp.Failing::Inner",
    "CallTargetApp.Failing::VoidThrows",
];

/// The Recorder on by-ref and `out` parameters (`ref int`, `ref string`, `ref Point`),
/// generic methods (one and two type parameters, over `int`, `string` and an enum), a
/// generic class and a generic struct over `int` and `string` (shared code included),
/// a struct's instance methods (on a local and on an array element), recursion, and
/// exceptions through two frames and from a `void` method.
const RECORDER_WIDE: &str = r#"
[[method]]
name = "calltarget"
options = { integrations = [
    "CallTargetApp.RefOut::* => CallTargetIntegrations.Recorder, CallTargetIntegrations",
    "CallTargetApp.Generics::* => CallTargetIntegrations.Recorder, CallTargetIntegrations",
    "CallTargetApp.Box`1::Swap => CallTargetIntegrations.Recorder, CallTargetIntegrations",
    "CallTargetApp.Cell`1::Set => CallTargetIntegrations.Recorder, CallTargetIntegrations",
    "CallTargetApp.Counter::Bump => CallTargetIntegrations.Recorder, CallTargetIntegrations",
    "CallTargetApp.Counter::Read => CallTargetIntegrations.Recorder, CallTargetIntegrations",
    "CallTargetApp.Recursion::* => CallTargetIntegrations.Recorder, CallTargetIntegrations",
    "CallTargetApp.Failing::* => CallTargetIntegrations.Recorder, CallTargetIntegrations",
] }
"#;

/// The Recorder on by-refs, generics, value types, recursion and exceptions: its lines
/// match the program's own trace, everything else unchanged.
#[test]
fn recorder_on_by_refs_generics_structs_recursion_and_exceptions() {
    for_each_runtime(|rt| {
        let is_target = |t: &str| WIDE_TARGETS.contains(&open_name(t).as_str());
        let out = check_recorder(rt, "calltarget_wide", RECORDER_WIDE, &is_target);
        // The exceptions reached the end hooks: Inner's and Outer's, and VoidThrows'.
        let ends_with = |e: &str| {
            out.stdout
                .lines()
                .filter(|l| l.starts_with("ct end ") && l.ends_with(e))
                .count()
        };
        assert_eq!(
            ends_with(" System.InvalidOperationException"),
            2,
            "{}",
            out.stdout
        );
        assert_eq!(ends_with(" System.ArgumentException"), 1, "{}", out.stdout);
    })
}

/// Three integrations in one run: `StructMutator` on a struct's and a generic struct's
/// instance methods, `Replacer` on `Statics`, `Thrower` on `RefOut`, `Generics` and
/// `Failing`.
const THREE: &str = r#"
[[method]]
name = "calltarget"
options = { integrations = [
    "CallTargetApp.Counter::Bump => CallTargetIntegrations.StructMutator, CallTargetIntegrations",
    "CallTargetApp.Counter::Read => CallTargetIntegrations.StructMutator, CallTargetIntegrations",
    "CallTargetApp.Cell`1::Set => CallTargetIntegrations.StructMutator, CallTargetIntegrations",
    "CallTargetApp.Statics::* => CallTargetIntegrations.Replacer, CallTargetIntegrations",
    "CallTargetApp.RefOut::* => CallTargetIntegrations.Thrower, CallTargetIntegrations",
    "CallTargetApp.Generics::* => CallTargetIntegrations.Thrower, CallTargetIntegrations",
    "CallTargetApp.Failing::* => CallTargetIntegrations.Thrower, CallTargetIntegrations",
] }
"#;

/// What the program prints under [`THREE`]: the unprofiled output with the changes the
/// integrations make on purpose. `StructMutator` adds 1 at begin and 10 at end to the
/// `Mutations` field of the caller's own struct (`this` by reference: on a local, an
/// array element, a generic struct over `int` and over `string`); `Replacer` adds 1000
/// to the `int` results (`Answer`, `Twice`; the `return` lines, printed inside, keep 42);
/// `Thrower`'s hooks throw at each of its 13 calls' begin and end, and nothing else
/// changes.
fn three_expected() -> String {
    let plain = expected_stdout("CallTargetApp");
    let mut lines: Vec<String> = plain.lines().map(str::to_owned).collect();
    let mut replace = |at: usize, from: &str, to: &str| {
        assert_eq!(lines[at], from, "line {}", at + 1);
        lines[at] = to.to_owned();
    };
    replace(5, "got 42", "got 1042");
    replace(8, "got 42", "got 1042");
    replace(
        72,
        "after Cell(8) mutations 0",
        "after Cell(8) mutations 11",
    );
    replace(
        76,
        "after Cell(x) mutations 0",
        "after Cell(x) mutations 11",
    );
    replace(
        80,
        "after value 5 mutations 0",
        "after value 5 mutations 11",
    );
    replace(
        84,
        "after value 5 mutations 0",
        "after value 5 mutations 22",
    );
    replace(
        87,
        "after array value 7 mutations 0",
        "after array value 7 mutations 11",
    );
    lines.push("thrower: begins 13 ends 13".to_owned());
    lines.iter().flat_map(|l| [l.as_str(), "\n"]).collect()
}

/// `StructMutator`, `Replacer` and `Thrower` together: a change through a struct's
/// `this` is the caller's own struct's (by reference), a replaced `int` result is what
/// the caller gets, hooks that throw change nothing the program observes (exceptions
/// through two frames included: `same True`), on both runtimes, tiering on and off.
#[test]
fn struct_mutator_replacer_and_thrower() {
    for_each_runtime(|rt| {
        for tiering in ["1", "0"] {
            let out = run(
                rt,
                "calltarget_three",
                THREE,
                &[("COMPlus_TieredCompilation", tiering)],
            );
            let err = &out.stderr;
            assert_eq!(out.code(), exit_code("CallTargetApp"), "{err}");
            assert!(!err.contains("keeps its IL"), "{err}");
            assert_eq!(out.stdout, three_expected(), "{err}");
        }
    })
}

/// `Thrower` on every overload of the core library's `String.Concat` (ReadyToRun code
/// kept: the targets are re-JIT-compiled; `System.Exception` is CoreLib's own TypeDef).
const FRAMEWORK: &str = r#"
[[method]]
name = "calltarget"
options = { integrations = [
    "System.String::Concat => CallTargetIntegrations.Thrower, CallTargetIntegrations",
] }
"#;

/// A framework target with ReadyToRun code kept: the hooks run (the `Thrower`'s count,
/// printed at exit, is positive, as many ends as begins), throwing from them changes
/// nothing the program prints; the overloads taking `ReadOnlySpan<char>` (byref-like,
/// no generic argument) keep their IL, each with its reason logged: 4 on .NET 8.0.4, 3
/// on .NET 3.1.23.
#[test]
fn framework_targets_with_ready_to_run_and_byref_like_refusals() {
    for_each_runtime(|rt| {
        let out = run(rt, "calltarget_framework", FRAMEWORK, &[]);
        let err = &out.stderr;
        assert_eq!(out.code(), exit_code("CallTargetApp"), "{err}");
        let (rest, last) = out.stdout.trim_end().rsplit_once('\n').expect("lines");
        assert_eq!(
            format!("{rest}\n"),
            expected_stdout("CallTargetApp"),
            "{err}"
        );
        let counts: Vec<u64> = last
            .strip_prefix("thrower: begins ")
            .and_then(|l| l.split_once(" ends "))
            .map(|(b, e)| vec![b.parse().unwrap(), e.parse().unwrap()])
            .unwrap_or_else(|| panic!("{last}"));
        assert!(counts[0] > 0 && counts[0] == counts[1], "{last}");
        let refused = err
            .lines()
            .filter(|l| l.contains("calltarget: System.String::Concat keeps its IL"))
            .inspect(|l| assert!(l.ends_with("byref-like (a `ref struct`)"), "{l}"))
            .count();
        match rt.to_string().as_str() {
            ".NET 8.0.4" => assert_eq!(refused, 4, "{err}"),
            ".NET 3.1.23" => assert_eq!(refused, 3, "{err}"),
            _ => assert!(refused > 0, "{err}"),
        }
    })
}

/// The framework methods on `CallTargetFramework.exe`'s request path (all in
/// `System.Private.CoreLib`, precompiled: ReadyToRun code kept, so each is re-JIT-compiled
/// with its hooks): every overload of StringBuilder's `Append`, `AppendFormat`, `Insert`
/// and `ToString`; Dictionary`2's public methods the program calls and its internal
/// lookup (`FindEntry`, returning an index, on .NET 3.1; `FindValue`, returning by
/// reference, on .NET 8: each selector matches nothing on the other runtime); every
/// overload of `Task.Run` and of `Task`'s and `Task<TResult>`'s `ContinueWith`.
/// Dictionary`2's `Add` and its internal `TryInsert` (which `Add` and the indexer's set
/// call) too: the runtime calls both before the program's own module loads (on .NET
/// 3.1.23 and 8.0.4 alike), so their first compilation keeps its IL (the application's
/// directory, where the integrations' assemblies are looked for, is not known yet) and
/// they are compiled again with their hooks once it is.
const FRAMEWORK_PATH: &[&str] = &[
    "System.Text.StringBuilder::Append",
    "System.Text.StringBuilder::AppendFormat",
    "System.Text.StringBuilder::Insert",
    "System.Text.StringBuilder::ToString",
    "System.Collections.Generic.Dictionary`2::Add",
    "System.Collections.Generic.Dictionary`2::TryInsert",
    "System.Collections.Generic.Dictionary`2::TryGetValue",
    "System.Collections.Generic.Dictionary`2::ContainsKey",
    "System.Collections.Generic.Dictionary`2::Remove",
    "System.Collections.Generic.Dictionary`2::get_Item",
    "System.Collections.Generic.Dictionary`2::set_Item",
    "System.Collections.Generic.Dictionary`2::FindEntry",
    "System.Collections.Generic.Dictionary`2::FindValue",
    "System.Threading.Tasks.Task::Run",
    "System.Threading.Tasks.Task::ContinueWith",
    "System.Threading.Tasks.Task`1::ContinueWith",
];

/// [`FRAMEWORK_PATH`], each target to `integration` of `CallTargetIntegrations`.
fn framework_path_config(integration: &str) -> String {
    let mut config =
        String::from("[[method]]\nname = \"calltarget\"\noptions = { integrations = [\n");
    for target in FRAMEWORK_PATH {
        config += &format!(
            "    \"{target} => CallTargetIntegrations.{integration}, CallTargetIntegrations\",\n"
        );
    }
    config + "] }\n"
}

/// The overloads of [`FRAMEWORK_PATH`] that keep their IL on `rt`, each with its
/// reason, as the log says them (after `calltarget: `), sorted; `None` for a runtime
/// other than the two pinned ones.
fn framework_path_refusals(rt: &Runtime) -> Option<Vec<String>> {
    const SPAN: &str = "type is byref-like (a `ref struct`)";
    const POINTER: &str = "CallTarget refused: a parameter or the return type is a pointer";
    let sb = "System.Text.StringBuilder";
    let mut refusals = match rt.to_string().as_str() {
        // Append(ReadOnlySpan<char>), Insert(int, ReadOnlySpan<char>), Append(char*,
        // int), Insert(int, char*, int).
        ".NET 3.1.23" => vec![
            format!("{sb}::Append keeps its IL: parameter 0's {SPAN}"),
            format!("{sb}::Insert keeps its IL: parameter 1's {SPAN}"),
            format!("{sb}::Append keeps its IL: {POINTER}"),
            format!("{sb}::Insert keeps its IL: {POINTER}"),
        ],
        // Append(ReadOnlySpan<char>), Insert(int, ReadOnlySpan<char>) and Insert(int,
        // ReadOnlySpan<char>, int), AppendFormat(IFormatProvider, CompositeFormat,
        // ReadOnlySpan<object>) and its generic overload with three arguments before
        // the span, Append(char*, int), and FindValue's `ref TValue`. (Append(ref
        // AppendInterpolatedStringHandler) is rewritten: that handler is a plain
        // struct.)
        ".NET 8.0.4" => vec![
            format!("{sb}::Append keeps its IL: parameter 0's {SPAN}"),
            format!("{sb}::Insert keeps its IL: parameter 1's {SPAN}"),
            format!("{sb}::Insert keeps its IL: parameter 1's {SPAN}"),
            format!("{sb}::AppendFormat keeps its IL: parameter 2's {SPAN}"),
            format!("{sb}::AppendFormat keeps its IL: parameter 5's {SPAN}"),
            format!("{sb}::Append keeps its IL: {POINTER}"),
            "System.Collections.Generic.Dictionary`2::FindValue keeps its IL: CallTarget \
             refused: the method returns by reference"
                .to_owned(),
        ],
        _ => return None,
    };
    refusals.sort();
    Some(refusals)
}

/// Runs `CallTargetFramework.exe` with `integration` on [`FRAMEWORK_PATH`], tiering as
/// `tiering` says, and checks what every such run must show: the exit code; stdout,
/// without the lines starting with `prefix` (the integration's, at exit), exactly the
/// unprofiled one; ReJIT on for the targets (ReadyToRun code kept); exactly the
/// refusals of [`framework_path_refusals`] (on another runtime, only refusals for a
/// byref-like type, a pointer or a return by reference). Returns the run.
fn check_framework_path(
    rt: &Runtime,
    integration: &str,
    prefix: &str,
    tiering: &str,
) -> clr_support::Output {
    let out = run_program(
        rt,
        "CallTargetFramework",
        &format!("calltarget_path_{integration}"),
        &framework_path_config(integration),
        &[("COMPlus_TieredCompilation", tiering)],
    );
    let err = &out.stderr;
    assert_eq!(out.code(), exit_code("CallTargetFramework"), "{err}");
    let own: String = out
        .stdout
        .lines()
        .filter(|l| !l.starts_with(prefix))
        .flat_map(|l| [l, "\n"])
        .collect();
    assert_eq!(own, expected_stdout("CallTargetFramework"), "{err}");
    assert!(
        err.contains(
            "instrumentation method calltarget has targets and ReadyToRun code is kept: ReJIT is on"
        ),
        "{err}"
    );
    // The targets the runtime compiled before the program's module loaded (Dictionary`2's
    // Add and TryInsert at least) wait for it, and are compiled again then.
    const WAITING: &str = "keeps its IL: the application's directory is not known yet";
    assert!(err.contains(WAITING), "{err}");
    assert!(
        err.contains(
            "targets compiled before the application's directory was known are compiled \
             again with their hooks"
        ),
        "{err}"
    );
    let mut refused: Vec<String> = err
        .lines()
        .filter(|l| l.contains(" keeps its IL: ") && !l.ends_with(WAITING))
        .map(|l| {
            l.split_once("calltarget: ")
                .map_or(l, |(_, r)| r)
                .to_owned()
        })
        .collect();
    refused.sort();
    match framework_path_refusals(rt) {
        Some(expected) => assert_eq!(refused, expected, "{err}"),
        None => {
            for line in &refused {
                assert!(
                    line.ends_with("byref-like (a `ref struct`)")
                        || line.ends_with("is a pointer")
                        || line.ends_with("returns by reference"),
                    "{line}"
                );
            }
        }
    }
    out
}

/// `own <type> N`, `own-continue <type> N` and `own-add <type> N` of the program's
/// stdout: per target type, the program's own calls of [`FRAMEWORK_PATH`]'s methods,
/// summed.
fn own_calls(stdout: &str) -> Vec<(String, u64)> {
    let mut own: Vec<(String, u64)> = Vec::new();
    for line in stdout.lines() {
        let Some(rest) = line
            .strip_prefix("own ")
            .or_else(|| line.strip_prefix("own-continue "))
            .or_else(|| line.strip_prefix("own-add "))
        else {
            continue;
        };
        let (t, n) = rest.rsplit_once(' ').expect("`own <type> N`");
        let n: u64 = n.parse().expect("a count");
        match own.iter_mut().find(|(o, _)| o == t) {
            Some((_, sum)) => *sum += n,
            None => own.push((t.to_owned(), n)),
        }
    }
    own
}

/// The `Counter` on the framework's request path (StringBuilder, Dictionary`2 over
/// `string`/`string` in shared canonical code, `string`/`int` and `int`/`int` in
/// value-type instantiations, `Task.Run`, `ContinueWith`, with `await`, `WhenAll` and a
/// faulted task caught), ReadyToRun code kept, on both runtimes, tiering on and off
/// (with tiering, the program's rounds are 100 ms apart so that tiered compilation
/// promotes hot code while it runs): the hooks ran for the program's calls (per target
/// type, at least as many begins as the program's own calls of the selected methods,
/// and as many ends as begins), the task-returning targets' ends continued the tasks
/// (at least one async end per task the program got from them; the faulted `Task.Run`s
/// seen as faulted), and the program computes and prints exactly what it does
/// unprofiled; only the overloads that cannot be rewritten keep their IL, each for its
/// reason.
#[test]
fn counter_on_framework_request_path() {
    for_each_runtime(|rt| {
        for tiering in ["1", "0"] {
            let out = check_framework_path(rt, "Counter", "counter: ", tiering);
            let err = &out.stderr;
            // counter: <type> begins N ends N async-ends N faulted N
            let counts: Vec<(String, [u64; 4])> = out
                .stdout
                .lines()
                .filter_map(|l| l.strip_prefix("counter: "))
                .map(|l| {
                    let words: Vec<&str> = l.split(' ').collect();
                    assert_eq!(words.len(), 9, "{l}");
                    let n = |at: usize| words[at].parse::<u64>().unwrap_or_else(|_| panic!("{l}"));
                    (words[0].to_owned(), [n(2), n(4), n(6), n(8)])
                })
                .collect();
            for (t, [begins, ends, _, _]) in &counts {
                assert!(*begins > 0 && begins == ends, "{t}: {begins} {ends}\n{err}");
            }
            let of = |t: &str| {
                counts
                    .iter()
                    .find(|(c, _)| c == t)
                    .map(|(_, n)| *n)
                    .unwrap_or_else(|| panic!("no counter line for {t}:\n{}", out.stdout))
            };
            let own = own_calls(&out.stdout);
            assert_eq!(own.len(), 6, "{}", out.stdout);
            for (t, calls) in &own {
                let [begins, _, async_ends, _] = of(t);
                assert!(begins >= *calls, "{t}: {begins} begins < {calls} own calls");
                if t.starts_with("System.Threading.Tasks.Task") {
                    assert!(
                        async_ends >= *calls,
                        "{t}: {async_ends} async ends < {calls} own calls"
                    );
                }
            }
            // Each faulting send's id is run twice (the send and its continuation's
            // antecedent): both tasks end faulted.
            let faults: u64 = out
                .stdout
                .lines()
                .find_map(|l| l.strip_prefix("status 500 "))
                .and_then(|n| n.parse().ok())
                .expect("a `status 500` line");
            let [_, _, _, faulted] = of("System.Threading.Tasks.Task");
            assert!(
                faults > 0 && faulted >= 2 * faults,
                "{faulted} < 2 * {faults}"
            );
        }
    })
}

/// `Counter` on Dictionary`2's `Add` alone: the runtime calls it before the program's
/// module loads, when the integrations' directory is not known, so that compilation
/// keeps its IL; it is compiled again with its hooks once the directory is known, and
/// the program's own `Add`s (in three instantiations, one in shared canonical code) get
/// begins and ends. The new version is requested by the profiler's ReJIT thread right
/// after the program's module loads, so the program's first calls may still run the old
/// code: each count is positive and at most the program's own (all 13,000 `Add`s on
/// `<string, string>` counted in the runs measured; at least half asserted).
#[test]
fn a_target_compiled_before_the_application_loads_gets_its_hooks_once_it_does() {
    const ADD: &str = "[[method]]\nname = \"calltarget\"\noptions = { integrations = [\
        \"System.Collections.Generic.Dictionary`2::Add => CallTargetIntegrations.Counter, \
        CallTargetIntegrations\"] }\n";
    for_each_runtime(|rt| {
        let out = run_program(rt, "CallTargetFramework", "calltarget_add", ADD, &[]);
        let err = &out.stderr;
        assert_eq!(out.code(), exit_code("CallTargetFramework"), "{err}");
        assert!(
            err.contains(
                "calltarget: System.Collections.Generic.Dictionary`2::Add keeps its IL: the \
                 application's directory is not known yet"
            ),
            "{err}"
        );
        assert!(
            err.contains("calltarget: 1 targets compiled before the application's directory was known are compiled again with their hooks"),
            "{err}"
        );
        let mut seen = 0;
        for line in out.stdout.lines() {
            let Some(rest) = line.strip_prefix("own-add ") else {
                continue;
            };
            let (t, own) = rest.rsplit_once(' ').expect("`own-add <type> N`");
            let own: u64 = own.parse().expect("a count");
            let prefix = format!("counter: {t} begins ");
            let counted = out
                .stdout
                .lines()
                .find_map(|l| l.strip_prefix(&prefix))
                .unwrap_or_else(|| panic!("no counter for {t}:\n{}", out.stdout));
            let words: Vec<&str> = counted.split(' ').collect();
            assert_eq!(words[1..3], ["ends", words[0]], "{counted}");
            let begins: u64 = words[0].parse().expect("a count");
            assert!(begins > 0 && begins <= own, "{t}: {begins} of {own}");
            if own > 1000 {
                assert!(begins >= own / 2, "{t}: {begins} of {own}");
            }
            seen += 1;
        }
        assert_eq!(seen, 3, "{}", out.stdout);
    })
}

/// `Thrower` on [`FRAMEWORK_PATH`]: every begin and end hook of ~200,000 calls of
/// StringBuilder's, Dictionary`2's and Task's methods throws, and the program computes
/// and prints exactly what it does unprofiled (the exceptions caught in the rewritten
/// code, the targets' own results and exceptions untouched), on both runtimes, tiering
/// on and off; the hooks ran (`thrower: begins N ends N`, positive and equal, at least
/// the program's own calls).
#[test]
fn thrower_on_framework_request_path() {
    for_each_runtime(|rt| {
        for tiering in ["1", "0"] {
            let out = check_framework_path(rt, "Thrower", "thrower: ", tiering);
            let last = out
                .stdout
                .lines()
                .filter_map(|l| l.strip_prefix("thrower: begins "))
                .collect::<Vec<_>>();
            assert_eq!(last.len(), 1, "{}", out.stdout);
            let (begins, ends) = last[0]
                .split_once(" ends ")
                .map(|(b, e)| (b.parse::<u64>().unwrap(), e.parse::<u64>().unwrap()))
                .unwrap_or_else(|| panic!("{}", last[0]));
            let own: u64 = own_calls(&out.stdout).iter().map(|(_, n)| n).sum();
            assert!(begins >= own && begins == ends, "{begins} {ends} {own}");
        }
    })
}

/// The Recorder on the async methods (`Task`, `Task<int>`, `ValueTask<int>`,
/// completing synchronously and later, faulting, cancelled, and a non-async method
/// returning `ValueTask<int>`), `Thrower` on the targets 8 threads call at once.
const ASYNC_AND_THREADS: &str = r#"
[[method]]
name = "calltarget"
options = { integrations = [
    "CallTargetApp.Async::* => CallTargetIntegrations.Recorder, CallTargetIntegrations",
    "CallTargetApp.Shared::* => CallTargetIntegrations.Thrower, CallTargetIntegrations",
] }
"#;

/// What the end hook's continuation sees of each async target (its `ct async-end`
/// result and exception): what the program's own `awaited` and `caught` lines show.
const ASYNC_ENDS: &[(&str, &str)] = &[
    ("DoneAsync", "void -"),
    ("LaterAsync", "void -"),
    ("ValueNowAsync", "4 -"),
    ("ValueLaterAsync", "6 -"),
    ("FaultNowAsync", "0 System.InvalidOperationException"),
    ("FaultLaterAsync", "0 System.FormatException"),
    ("FaultVoidLaterAsync", "null System.ArgumentException"),
    ("CancelNowAsync", "0 System.OperationCanceledException"),
    ("CancelLaterAsync", "0 System.OperationCanceledException"),
    ("VtNowAsync", "11 -"),
    ("VtLaterAsync", "13 -"),
    ("VtPlain", "15 -"),
    ("VtFaultAsync", "0 System.NotSupportedException"),
    ("VtCancelAsync", "0 System.OperationCanceledException"),
];

/// Async targets: the end hook gets the task (its type as the result, no exception) and
/// its continuation the awaited result or exception, before the caller goes on; the
/// caller observes what it observes unprofiled (status, result, the same exception
/// objects, the token). 8 threads through `Thrower`'s targets: 2,400 begins and ends,
/// the sums unchanged.
#[test]
fn async_targets_and_eight_threads() {
    for_each_runtime(|rt| {
        for tiering in ["1", "0"] {
            let out = run(
                rt,
                "calltarget_async",
                ASYNC_AND_THREADS,
                &[("COMPlus_TieredCompilation", tiering)],
            );
            let err = &out.stderr;
            assert_eq!(out.code(), exit_code("CallTargetApp"), "{err}");
            assert!(!err.contains("keeps its IL"), "{err}");
            let expected = expected_stdout("CallTargetApp") + "thrower: begins 2400 ends 2400\n";
            assert_eq!(without_ct(&out.stdout), expected, "{err}");
            let lines: Vec<&str> = out.stdout.lines().collect();
            let mut done = Vec::new();
            for (i, line) in lines.iter().enumerate() {
                let Some(rest) = line.strip_prefix("ct begin CallTargetApp.Async::") else {
                    continue;
                };
                let (rest, id) = without_id(rest);
                let (method, args) = rest.split_once(' ').unwrap_or((&rest, ""));
                // The program prints a token as whether it can be cancelled.
                let args = args.replace("System.Threading.CancellationToken", "True");
                assert_eq!(
                    lines[i + 1].trim_end(),
                    format!("call CallTargetApp.Async::{method} {args}").trim_end()
                );
                let end = lines[i + 1..]
                    .iter()
                    .position(|l| l.starts_with("ct end "))
                    .map(|at| lines[i + 1 + at])
                    .expect("an end");
                let task = if method.starts_with("Vt") {
                    "System.Threading.Tasks.ValueTask`1[System.Int32]"
                } else if ["DoneAsync", "LaterAsync", "FaultVoidLaterAsync"].contains(&method) {
                    "System.Threading.Tasks.Task"
                } else {
                    "System.Threading.Tasks.Task`1[System.Int32]"
                };
                assert_eq!(
                    end,
                    format!("ct end CallTargetApp.Async::{method} #{id} {task} -")
                );
                // The continuation ran before the caller printed what `await` gave.
                let next_begin = lines[i + 1..]
                    .iter()
                    .position(|l| l.starts_with("ct begin ") || l.starts_with("== "))
                    .map_or(lines.len(), |at| i + 1 + at);
                let (_, expected) = ASYNC_ENDS
                    .iter()
                    .find(|(m, _)| *m == method)
                    .unwrap_or_else(|| panic!("{method}"));
                let async_end =
                    format!("ct async-end CallTargetApp.Async::{method} #{id} {expected}");
                let at = lines[i + 1..next_begin]
                    .iter()
                    .position(|l| *l == async_end)
                    .map(|at| i + 1 + at)
                    .unwrap_or_else(|| panic!("no {async_end:?} in {:?}", &lines[i..next_begin]));
                let observed = lines[i + 1..next_begin]
                    .iter()
                    .position(|l| l.starts_with("awaited ") || l.starts_with("caught "))
                    .map(|p| i + 1 + p)
                    .expect("what the caller observed");
                assert!(at < observed, "{:?}", &lines[i..next_begin]);
                done.push(method.to_owned());
            }
            let all: Vec<&str> = ASYNC_ENDS.iter().map(|(m, _)| *m).collect();
            assert_eq!(done, all, "{err}");
        }
    })
}

/// `Counter` on every method of `TailCalls.exe` (its header lists them and their calls).
const TAIL_CALLS: &str = r#"
[[method]]
name = "calltarget"
options = { integrations = [
    "TailCalls.Program::* => CallTargetIntegrations.Counter, CallTargetIntegrations",
    "TailCalls.Deep::* => CallTargetIntegrations.Counter, CallTargetIntegrations",
    "TailCalls.Walker`1::* => CallTargetIntegrations.Counter, CallTargetIntegrations",
    "TailCalls.Cursor::* => CallTargetIntegrations.Counter, CallTargetIntegrations",
] }
"#;

/// What `Counter` prints at exit for [`TAIL_CALLS`]: each type's calls as the header
/// of `TailCalls.il` derives them (`Walker`1`'s 2,000,004 are one constructor call and
/// 1,000,001 `Walk`s per instantiation), each ended once.
const TAIL_CALL_COUNTS: &[(&str, u64)] = &[
    ("TailCalls.Cursor", 1_000_001),
    ("TailCalls.Deep", 8_002_009),
    ("TailCalls.Program", 30),
    ("TailCalls.Walker`1[System.Int64]", 1_000_002),
    ("TailCalls.Walker`1[System.String]", 1_000_002),
];

/// Begin and end hooks around every method of `TailCalls.exe`: `tail.` calls 1,000,000
/// deep on a 1 MiB thread (a dropped prefix overflows the stack) in every shape there
/// is (self and mutual recursion, `callvirt` of a generic class's method over a
/// reference and a value type, a generic method over both, `calli`, a 16-byte struct,
/// a by-ref to the heap, a tail call in the middle, a struct's `this`), and a 24-byte
/// struct passed on the stack through 2,000 levels. Every result is the unprofiled
/// one, the exit code too; every call of every method got one begin and one end,
/// exactly as many as the program makes; both runtimes, tiering on and off.
#[test]
fn tail_calls_stay_tail_calls_between_begin_and_end() {
    for_each_runtime(|rt| {
        for tiering in ["1", "0"] {
            let env = [("COMPlus_TieredCompilation", tiering)];
            let out = run_program(rt, "TailCalls", "calltarget_tail", TAIL_CALLS, &env);
            let err = &out.stderr;
            assert_eq!(out.code(), exit_code("TailCalls"), "{err}");
            assert!(!err.contains("keeps its IL"), "{err}");
            let (program, counter): (Vec<&str>, Vec<&str>) = out
                .stdout
                .lines()
                .partition(|l| !l.starts_with("counter: "));
            assert_eq!(
                program.iter().map(|l| format!("{l}\n")).collect::<String>(),
                expected_stdout("TailCalls"),
                "{err}"
            );
            let expected: Vec<String> = TAIL_CALL_COUNTS
                .iter()
                .map(|(t, n)| format!("counter: {t} begins {n} ends {n} async-ends 0 faulted 0"))
                .collect();
            assert_eq!(counter, expected, "{err}");
        }
    })
}

/// A malformed integration is a configuration error at its place: nothing runs, the
/// program's output as unprofiled.
#[test]
fn a_malformed_integration_runs_nothing() {
    for_each_runtime(|rt| {
        let out = run(
            rt,
            "calltarget_malformed",
            "[[method]]\nname = \"calltarget\"\noptions = { integrations = [\"CallTargetApp.Statics::* CallTargetIntegrations.Recorder\"] }\n",
            &[],
        );
        assert_eq!(
            out.stdout,
            expected_stdout("CallTargetApp"),
            "{}",
            out.stderr
        );
        assert_eq!(out.code(), exit_code("CallTargetApp"));
        assert!(
            out.stderr.contains("entry 0") && out.stderr.contains("no `=>`"),
            "{}",
            out.stderr
        );
    })
}

/// Integrations whose hooks are not where the runtime will look (an assembly not beside
/// the program, a type its assembly does not define, a type without the hooks, an
/// assembly older than the version the reference asks for): the
/// runtime would throw at each target's first call (and the unhandled exception would
/// end the program), so every target keeps its IL, each integration said once in the
/// log, and the program runs as unprofiled.
#[test]
fn integrations_whose_hooks_are_missing_keep_the_targets_il() {
    for_each_runtime(|rt| {
        let config = "[[method]]\nname = \"calltarget\"\noptions = { integrations = [\
            \"CallTargetApp.Statics::* => CallTargetIntegrations.Recorder, Nope\", \
            \"CallTargetApp.Account::* => CallTargetIntegrations.NoSuchType, CallTargetIntegrations\", \
            \"CallTargetApp.Generics::* => ILRewrite.CallTarget.AsyncEnd, ILRewrite.CallTarget\", \
            \"CallTargetApp.Async::* => CallTargetIntegrations.Recorder, CallTargetIntegrations, Version=1.0.0.1\"] }\n";
        let out = run(rt, "calltarget_missing", config, &[]);
        assert_eq!(
            out.stdout,
            expected_stdout("CallTargetApp"),
            "{}",
            out.stderr
        );
        assert_eq!(out.code(), exit_code("CallTargetApp"), "{}", out.stderr);
        for said in [
            "Nope.dll: No such file",
            "defines no type CallTargetIntegrations.NoSuchType",
            "ILRewrite.CallTarget.AsyncEnd in ILRewrite.CallTarget has no OnMethodBegin",
            "CallTargetIntegrations.dll is assembly CallTargetIntegrations 1.0.0.0, \
             not CallTargetIntegrations at 1.0.0.1 or later",
        ] {
            assert!(out.stderr.contains(said), "{said}:\n{}", out.stderr);
        }
    })
}

/// The state type not where the runtime will look (its assembly's file older than the
/// reference asks for; a name no file beside the program has): every target keeps its
/// IL, said once, and the program runs as unprofiled.
#[test]
fn a_state_assembly_not_present_keeps_the_targets_il() {
    for_each_runtime(|rt| {
        for (state, said) in [
            (
                "ILRewrite.CallTarget, Version=1.1.0.0",
                "ILRewrite.CallTarget.dll is assembly ILRewrite.CallTarget 1.0.0.0, \
                 not ILRewrite.CallTarget at 1.1.0.0 or later",
            ),
            ("NoSuchState", "NoSuchState.dll: No such file"),
        ] {
            let config = format!(
                "[[method]]\nname = \"calltarget\"\noptions = {{ state_assembly = \"{state}\", \
                 integrations = [\"CallTargetApp.Statics::* => CallTargetIntegrations.Recorder, \
                 CallTargetIntegrations\"] }}\n"
            );
            let out = run(rt, "calltarget_state", &config, &[]);
            let err = &out.stderr;
            assert_eq!(out.stdout, expected_stdout("CallTargetApp"), "{err}");
            assert_eq!(out.code(), exit_code("CallTargetApp"), "{err}");
            let lines = err.lines().filter(|l| l.contains("keeps its IL"));
            assert_eq!(
                lines.filter(|l| l.contains(said)).count(),
                1,
                "{said}:\n{err}"
            );
        }
    })
}

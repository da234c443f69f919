//! `tracer_rs`: `tests/components/tracer.c` in Rust, through the safe API: metadata
//! defined by value while a module loads, data items on modules and methods, a new
//! local, the single-ret's epilogue and return-value local, and a wrap of the whole
//! body with a state local. No `unsafe`.
//!
//! ```text
//! cargo build --release -p ilrewrite-method --example tracer_rs
//! # in the profiler's configuration (examples/engine.rs):
//! [[method]]
//! name = "tracer_rs"
//! library = "target/release/examples/libtracer_rs.so"
//! options = { assembly = "TwoTools", methods = ["TwoTools.Timed::*"], single_ret = [] }
//! ```
//!
//! Options:
//! * `assembly` (string): the assembly whose modules it defines references in (others
//!   get no item, so their methods are left alone);
//! * `methods` (selectors): its targets;
//! * `single_ret` (strings): names (as [`Edit::name`] gives them) edited through the
//!   single-ret instead of wrapped.
//!
//! Module load (its assembly only): AssemblyRefs to System.Console, System.Collections
//! and System.Runtime, TypeRefs System.Console, System.Array and
//! System.Collections.Generic.List`1, MemberRefs Console::WriteLine(string/int32/int64),
//! Array::Empty<T>() and, on the TypeSpec List<int32>, .ctor and get_Count, the
//! MethodSpec Array::Empty<int32>, user strings; all kept in the module's item (its
//! `Drop` logs "tracer_rs: module item destroyed N").
//!
//! A wrapped method, per call, prints (Console.WriteLine, in the program's stdout):
//! * "tracer enter" at entry;
//! * "tracer exit →✓" in the finally, on every exit (exceptions too);
//! * 7001: the state local, 7000 set at entry, + 1 in the exit;
//! * 40002: the added int64 local, 40000 set at entry, + 2;
//! * "tracer ret" and the value after a normal return of an int32/int64 method.
//!
//! A single-ret method prints, before its one epilogue: "tracer ret", the value,
//! "tracer small" when it is below 45 (a branch inside the inserted code), and 900
//! (Array.Empty<int32>().Length + new List<int32>().Count + 900).
//!
//! Each method's item counts its compilations (its `Drop` logs "tracer_rs: method item
//! destroyed").
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

use ilrewrite_method::{
    Candidate, Edit, Error, Incoming, Instruction, Logger, Method, Module, Operand, OptionKind,
    OptionSpec, Options, Status, Token, Want, Wrap, element_type, opcode,
};

/// The options it takes.
const OPTIONS: &[OptionSpec] = &[
    OptionSpec::new("assembly", OptionKind::String),
    OptionSpec::new("methods", OptionKind::Selectors),
    OptionSpec::new("single_ret", OptionKind::Strings),
];

/// The public key token of the framework's assemblies.
const KEY: [u8; 8] = [0xb0, 0x3f, 0x5f, 0x7f, 0x11, 0xd5, 0x0a, 0x3a];

/// The module items destroyed so far (for the log line).
static MODULES_DESTROYED: AtomicUsize = AtomicUsize::new(0);

/// What `start` read.
#[derive(Debug)]
struct Config {
    assembly: String,
    targets: Vec<String>,
    single_ret: Vec<String>,
}

/// The method.
#[derive(Debug, Default)]
struct TracerRs {
    config: OnceLock<Config>,
}

/// The module item: the tokens its edits name.
#[derive(Debug)]
struct Defs {
    wl_str: Token,
    wl_i4: Token,
    wl_i8: Token,
    s_enter: Token,
    s_exit: Token,
    s_ret: Token,
    s_small: Token,
    empty_int32: Token,
    list_ctor: Token,
    list_count: Token,
    logger: Logger,
}

impl Drop for Defs {
    fn drop(&mut self) {
        let n = MODULES_DESTROYED.fetch_add(1, Ordering::Relaxed) + 1;
        self.logger
            .log(&format!("tracer_rs: module item destroyed {n}"));
    }
}

/// The method item: its compilations.
#[derive(Debug)]
struct Compilations {
    count: AtomicU32,
    logger: Logger,
}

impl Drop for Compilations {
    fn drop(&mut self) {
        self.logger.log("tracer_rs: method item destroyed");
    }
}

/// `what` failed with `status`, as the method's error.
fn failed(what: &str) -> impl FnOnce(Status) -> Error + '_ {
    move |status| Error::with_status(status, format!("tracer_rs: {what} failed with {status}"))
}

impl TracerRs {
    fn new() -> TracerRs {
        TracerRs::default()
    }

    fn config(&self) -> Result<&Config, Error> {
        self.config
            .get()
            .ok_or_else(|| Error::new("tracer_rs: not started"))
    }

    /// Whether `name` is edited through the single-ret.
    fn is_single(&self, name: &str) -> bool {
        self.config
            .get()
            .is_some_and(|c| c.single_ret.iter().any(|s| s == name))
    }

    /// Defines what the edits name in `module`.
    fn define(module: &Module<'_>) -> Result<Defs, Error> {
        let assembly = |name: &str| {
            module
                .assembly_ref(name, [4, 0, 0, 0], Some(KEY))
                .map_err(failed("assembly ref"))
        };
        let console_asm = assembly("System.Console")?;
        let collections_asm = assembly("System.Collections")?;
        let corlib = assembly("System.Runtime")?;
        let type_ref =
            |scope: Token, name: &str| module.type_ref(scope, name).map_err(failed("type ref"));
        let console = type_ref(console_asm, "System.Console")?;
        let array = type_ref(corlib, "System.Array")?;
        let list = type_ref(collections_asm, "System.Collections.Generic.List`1")?;
        let method_ref = |parent: Token, name: &str, signature: &str| {
            module
                .method_ref(parent, name, signature)
                .map_err(failed("member ref"))
        };
        let wl_str = method_ref(console, "WriteLine", "void (string)")?;
        let wl_i4 = method_ref(console, "WriteLine", "void(int32)")?;
        let wl_i8 = method_ref(console, "WriteLine", "void (int64)")?;
        let empty = method_ref(array, "Empty", "generic 1 !!0[] ()")?;
        let empty_int32 = module
            .method_spec(empty, "int32")
            .map_err(failed("method spec"))?;
        let list_int32 = module
            .type_spec(&format!("class 0x{list:08x}<int32>"))
            .map_err(failed("type spec"))?;
        let list_ctor = method_ref(list_int32, ".ctor", "instance void ()")?;
        let list_count = method_ref(list_int32, "get_Count", "instance int32 ()")?;
        let string = |text: &str| module.user_string(text).map_err(failed("string"));
        Ok(Defs {
            wl_str,
            wl_i4,
            wl_i8,
            s_enter: string("tracer enter")?,
            s_exit: string("tracer exit \u{2192}\u{2713}")?,
            s_ret: string("tracer ret")?,
            s_small: string("tracer small")?,
            empty_int32,
            list_ctor,
            list_count,
            logger: module.logger(),
        })
    }

    /// Counts this compilation in the method's item (set at the first).
    fn count_compilation(edit: &Edit<'_>) -> Result<(), Error> {
        let item = match edit.method_item::<Compilations>()? {
            Some(item) => item,
            None => {
                edit.set_method_item(Compilations {
                    count: AtomicU32::new(0),
                    logger: edit.logger(),
                })?;
                edit.method_item::<Compilations>()?
                    .ok_or_else(|| Error::new("tracer_rs: the method item is not there"))?
            }
        };
        item.count.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Before the single-ret's epilogue: the return value, `tracer small` below 45, 900.
    fn edit_single_ret(d: &Defs, edit: &mut Edit<'_>) -> Result<(), Error> {
        let single = edit
            .single_ret()?
            .filter(|s| s.return_local.is_some())
            .ok_or_else(|| Error::new("tracer_rs: no single-ret with a return-value local"))?;
        let local = single.return_local.unwrap_or_default();
        let code = [
            Instruction::ldstr(d.s_ret),
            Instruction::call(d.wl_str),
            Instruction::ldloc(local),
            Instruction::call(d.wl_i4),
            Instruction::ldloc(local),
            Instruction::ldc_i4(45),
            Instruction::branch_to(opcode::BGE_S, 9),
            Instruction::ldstr(d.s_small),
            Instruction::call(d.wl_str),
            /* 9: */ Instruction::call(d.empty_int32),
            Instruction::new(opcode::LDLEN),
            Instruction::new(opcode::CONV_I4),
            Instruction::with(opcode::NEWOBJ, Operand::Token(d.list_ctor)),
            Instruction::with(opcode::CALLVIRT, Operand::Token(d.list_count)),
            Instruction::new(opcode::ADD),
            Instruction::ldc_i4(900),
            Instruction::new(opcode::ADD),
            Instruction::call(d.wl_i4),
        ];
        edit.insert_before(single.epilogue, Incoming::Redirect, &code)?;
        Ok(())
    }

    /// The wrap: entry, exit in a finally, on_return, a state local and a new local.
    fn edit_wrap(d: &Defs, edit: &mut Edit<'_>) -> Result<(), Error> {
        let extra = edit.add_local("int64")?;
        let ret = edit.return_type()?;
        let entry = [
            Instruction::ldstr(d.s_enter),
            Instruction::call(d.wl_str),
            Instruction::ldc_i4(7000),
            Instruction::state_local(opcode::STLOC),
            Instruction::ldc_i8(40000),
            Instruction::stloc(extra),
        ];
        let exit = [
            Instruction::ldstr(d.s_exit),
            Instruction::call(d.wl_str),
            Instruction::state_local(opcode::LDLOC),
            Instruction::ldc_i4(1),
            Instruction::new(opcode::ADD),
            Instruction::call(d.wl_i4),
            Instruction::ldloc(extra),
            Instruction::ldc_i8(2),
            Instruction::new(opcode::ADD),
            Instruction::call(d.wl_i8),
        ];
        let on_return = [
            Instruction::ldstr(d.s_ret),
            Instruction::call(d.wl_str),
            Instruction::return_local(opcode::LDLOC),
            Instruction::call(match ret {
                element_type::I8 => d.wl_i8,
                _ => d.wl_i4,
            }),
        ];
        let prints_value = matches!(ret, element_type::I4 | element_type::I8);
        edit.wrap(&Wrap {
            entry: &entry,
            exit: &exit,
            on_return: if prints_value { &on_return } else { &[] },
            state_local: Some("int32"),
        })?;
        Ok(())
    }
}

impl Method for TracerRs {
    fn name(&self) -> &str {
        "tracer_rs"
    }

    fn priority(&self) -> i32 {
        5
    }

    fn options(&self) -> &[OptionSpec] {
        OPTIONS
    }

    fn start(&self, options: &Options<'_>) -> Result<(), Error> {
        let assembly = options
            .string("assembly")?
            .ok_or_else(|| Error::new("tracer_rs: option `assembly` is needed"))?;
        let owned = |items: Vec<&str>| items.into_iter().map(str::to_owned).collect();
        let config = Config {
            assembly: assembly.to_owned(),
            targets: owned(options.strings("methods")?),
            single_ret: owned(options.strings("single_ret")?),
        };
        self.config
            .set(config)
            .map_err(|_| Error::new("tracer_rs: started twice"))
    }

    fn targets(&self) -> Result<Vec<String>, Error> {
        Ok(self.config()?.targets.clone())
    }

    fn module_loaded(&self, module: &Module<'_>) -> Result<(), Error> {
        let Ok(name) = module.assembly_name() else {
            return Ok(()); // no manifest: not ours
        };
        if name != self.config()?.assembly {
            return Ok(());
        }
        module.set_item(TracerRs::define(module)?)?;
        match module.item::<Defs>()? {
            Some(_) => Ok(()),
            None => Err(Error::new(
                "tracer_rs: module_item does not give back the item",
            )),
        }
    }

    fn wants(&self, candidate: &Candidate<'_>) -> Want {
        if !candidate.is_target().unwrap_or(false) {
            return Want::No;
        }
        match candidate.name() {
            Ok(name) if self.is_single(name) => Want::EditSingleRet,
            _ => Want::Edit,
        }
    }

    fn edit(&self, edit: &mut Edit<'_>) -> Result<bool, Error> {
        let Some(defs) = edit.module_item::<Defs>()? else {
            return Ok(false); // not a module of its assembly
        };
        TracerRs::count_compilation(edit)?;
        let name = edit.name()?;
        let done = match self.is_single(name) {
            true => TracerRs::edit_single_ret(defs, edit),
            false => TracerRs::edit_wrap(defs, edit),
        };
        done.map_err(|e| Error::with_status(e.status(), format!("tracer_rs: {name}: {e}")))?;
        Ok(true)
    }
}

ilrewrite_method::export_method!(TracerRs::new);

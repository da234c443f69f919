//! Listings of method bodies in ilasm syntax, with names and signatures resolved
//! through a [`MetadataSource`].
//!
//! ```text
//! // instance string System.Text.StringBuilder::ToString()
//! // code size 97 (0x61)
//! .maxstack 5
//! .locals init ([0] string V_0,
//!               [1] class System.Text.StringBuilder V_1)
//! IL_0000:  ldarg.0
//! IL_0001:  callvirt   instance int32 System.Text.StringBuilder::get_Length()
//! ...
//! .try
//! {
//!   IL_0010:  ldstr      "a\"b\n"
//!   ...
//! }  // end .try
//! catch System.Exception
//! {
//!   ...
//! }  // end handler
//! ```
//!
//! * Labels are the offsets the body has *as it would be encoded now*, so an edited
//!   body lists consistently.
//! * Names and signatures come only from the [`MetadataSource`], so a profiler can list
//!   a body inside the runtime (over `IMetaDataImport`) as well as from a file
//!   ([`crate::pe::Assembly`]). Whatever the source cannot give is written as the token
//!   in hex, `/* 0A000012 */`, and counted in [`Listing::unresolved`]; a source without
//!   names ([`crate::metadata::NoMetadata`]) still gives a listing.
//! * Types are written as ilasm writes them: TypeRefs of other assemblies with the
//!   assembly (`[System.Runtime]System.Object`), nested types as `Outer/Inner`,
//!   `class`/`valuetype` as the signature says, primitive keywords (`int32`,
//!   `native int`, `string`), arrays (`int32[]`, `int32[0...,0...]`), `pinned`,
//!   `modreq(...)`, function pointers (`method void *(int32)`). Generic parameters of
//!   the listed method and its type are written by name when the source knows it
//!   (`!T`, `!!TResult`), else by number; the signatures of the members a body refers
//!   to always by number (`!0`, `!!0`), as ilasm reads them.
//! * Names ilasm cannot read unquoted are quoted (`'<>c'`, `'value'`). Strings are
//!   quoted literals with `\"`, `\\`, `\n`, `\r`, `\t` escaped and other characters as
//!   they are, or `bytearray (...)` when ilasm cannot write them as a literal (an
//!   unpaired surrogate, another control character).
//! * Exception handling is shown as ilasm writes it, in nested blocks (`.try { } catch T
//!   { }`, `filter { } { }`, `finally`, `fault`), each level indented by two spaces.
//!   Regions that cannot be written so (a handler that does not follow its try block,
//!   regions that overlap) are listed as `.try IL_a to IL_b ... handler IL_c to IL_d`
//!   lines after the code instead.

mod names;
mod text;

use crate::body::{ClauseKind, Encoder, MethodBody};
use crate::error::Result;
use crate::graph::{InstrId, Operand};
use crate::metadata::MetadataSource;
use crate::opcode::OperandKind;
use crate::sig::MethodSig;
use names::{Context, Printer};
use std::fmt::{self, Write};
use text::{write_dotted, write_float, write_id};

/// What a listing could not resolve through its [`MetadataSource`]. All zero means
/// every token was written as its name or signature.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Unresolved {
    /// Tokens written in hex (`/* 0A000012 */`) because the source gave no name or
    /// signature for them (including the TypeSpecs counted below).
    pub hex_tokens: u32,
    /// Members written without an owner type: the source named none (the members of
    /// the global `<Module>` type have none).
    pub ownerless_members: u32,
    /// TypeSpec tokens whose signature the source did not give or which did not parse.
    pub undecoded_type_specs: u32,
    /// Member, local variable, `calli` and MethodSpec signatures the source did not
    /// give or which did not parse.
    pub undecoded_signatures: u32,
}

impl Unresolved {
    /// Whether everything was resolved.
    pub fn is_empty(&self) -> bool {
        *self == Unresolved::default()
    }
}

impl std::ops::AddAssign for Unresolved {
    fn add_assign(&mut self, other: Unresolved) {
        self.hex_tokens += other.hex_tokens;
        self.ownerless_members += other.ownerless_members;
        self.undecoded_type_specs += other.undecoded_type_specs;
        self.undecoded_signatures += other.undecoded_signatures;
    }
}

/// A listing: the text and what it could not resolve.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Listing {
    /// The listing, one line per `\n`-terminated line.
    pub text: String,
    /// What the metadata source could not resolve.
    pub unresolved: Unresolved,
}

impl fmt::Display for Listing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// A method as listings name it, in parts, so that tools can select methods by what
/// the listing shows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MethodName {
    /// The declaring type as listings write it (`System.String`,
    /// `System.Collections.Generic.List`1/Enumerator`); empty for a global method, a
    /// token in hex when the source cannot name it.
    pub owner: String,
    /// The name as listings write it (quoted when ilasm needs it: `'<Main>b__0_0'`).
    pub name: String,
    /// The parameter types as listings write them (`string`, `!T`).
    pub params: Vec<String>,
    /// The whole: `instance bool System.String::Equals(string)`, with the method's
    /// generic parameters after its name (`!!T[] System.Array::Empty<T>()`).
    pub text: String,
    /// What the metadata source could not resolve.
    pub unresolved: Unresolved,
}

impl fmt::Display for MethodName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// The parameter types of `sig`, the signature of MethodDef `method`, as
/// [`MethodName::params`] writes them: the generic parameters of the method and its type
/// by name when `named` (and the source knows the name), else by number (`!0`, `!!0`).
/// Only the parameters are written, not the whole name.
pub(crate) fn param_texts<M: MetadataSource + ?Sized>(
    metadata: &M,
    method: u32,
    sig: &MethodSig,
    named: bool,
) -> Vec<String> {
    let mut p = Printer {
        md: metadata,
        unresolved: Unresolved::default(),
    };
    let ctx = match named {
        true => p.context_of(Some(method)),
        false => names::Context::NUMBERS,
    };
    p.param_texts(sig, ctx)
}

/// The name of MethodDef `method` as selectors write it: `Namespace.Type::Method`, a
/// nested type as `Namespace.Outer/Inner`, a generic type with its arity; the method's
/// name as the metadata has it (unquoted). Never fails: what the source cannot give is
/// written in hex ([`method_name`]). Used by the `clr` feature's code only.
#[cfg(feature = "clr")]
pub(crate) fn selector_name<M: MetadataSource + ?Sized>(metadata: &M, method: u32) -> String {
    let listed = method_name(metadata, method);
    let name = metadata
        .member_name(method)
        .map_or(listed.name, |member| member.name);
    format!("{}::{}", listed.owner, name)
}

/// Names the MethodDef `method` through `metadata`, as the first line of its listing
/// does. Never fails: what the source cannot give is written in hex and counted.
pub fn method_name<M: MetadataSource + ?Sized>(metadata: &M, method: u32) -> MethodName {
    let mut p = Printer {
        md: metadata,
        unresolved: Unresolved::default(),
    };
    let ctx = p.context_of(Some(method));
    let mut name = MethodName::default();
    match metadata.member_name(method) {
        Ok(member) => {
            p.owner(member.owner, ctx, &mut name.owner);
            if let Some(owner) = name.owner.strip_suffix("::") {
                name.owner.truncate(owner.len());
            }
            write_dotted(&mut name.name, &member.name);
        }
        Err(_) => p.hex(method, &mut name.name),
    }
    let generic = |p: &Printer<'_, M>, count: u32, out: &mut String| {
        if count == 0 {
            return;
        }
        out.push('<');
        for n in 0..count {
            if n > 0 {
                out.push(',');
            }
            match p.md.generic_param_name(method, n) {
                Some(param) => write_id(out, &param),
                None => {
                    let _ = write!(out, "!!{n}");
                }
            }
        }
        out.push('>');
    };
    let full_name = |p: &Printer<'_, M>, name: &MethodName, count: u32, out: &mut String| {
        if !name.owner.is_empty() {
            out.push_str(&name.owner);
            out.push_str("::");
        }
        out.push_str(&name.name);
        generic(p, count, out);
    };
    match metadata.signature(method).and_then(MethodSig::parse) {
        Ok(sig) => {
            name.params = p.param_texts(&sig, ctx);
            let mut text = String::new();
            p.method_sig(&sig, ctx, &mut text, |p, out| {
                out.push(' ');
                full_name(p, &name, sig.generic_param_count, out);
            });
            name.text = text;
        }
        Err(_) => {
            p.unresolved.undecoded_signatures += 1;
            let mut text = String::new();
            full_name(&p, &name, 0, &mut text);
            name.text = text;
        }
    }
    name.unresolved = p.unresolved;
    name
}

/// Lists `body` in ilasm syntax, resolving tokens through `metadata`.
///
/// With `method` (the body's MethodDef token) the listing starts with the method's
/// name and signature (see [`method_name`]) and names the generic parameters of the
/// method and its type; without, it starts at `.maxstack`.
///
/// # Errors
/// Only if the body cannot be laid out: the errors of [`Encoder::code_offsets`].
pub fn disassemble<M: MetadataSource + ?Sized>(
    body: &MethodBody,
    metadata: &M,
    method: Option<u32>,
) -> Result<Listing> {
    let mut encoder = Encoder::new();
    let offsets = encoder.code_offsets(body)?;
    let code_size = offsets.last().copied().unwrap_or(0);
    let mut p = Printer {
        md: metadata,
        unresolved: Unresolved::default(),
    };
    let ctx = p.context_of(method);
    let mut out = String::new();
    if let Some(method) = method {
        let name = method_name(metadata, method);
        p.unresolved += name.unresolved;
        let _ = writeln!(out, "// {}", name.text);
    }
    let _ = writeln!(out, "// code size {code_size} (0x{code_size:x})");
    let _ = writeln!(out, ".maxstack {}", body.max_stack);
    if body.local_var_sig != 0 {
        let init = if body.init_locals { " init" } else { "" };
        match p.locals(body.local_var_sig, ctx) {
            Some(locals) => {
                let head = format!(".locals{init} (");
                out.push_str(&head);
                for (i, local) in locals.iter().enumerate() {
                    if i > 0 {
                        out.push_str(",\n");
                        out.push_str(&" ".repeat(head.len()));
                    }
                    let _ = write!(out, "[{i}] {local} V_{i}");
                }
                out.push_str(")\n");
            }
            None => {
                let _ = write!(out, ".locals{init} ");
                p.hex(body.local_var_sig, &mut out);
                out.push('\n');
            }
        }
    }
    let label = |id: InstrId| match offsets.get(id.index()) {
        Some(&o) if o != u32::MAX => format!("IL_{o:04x}"),
        _ => format!("IL_????/*{}*/", id.index()),
    };
    let order: Vec<InstrId> = body.instrs.ids().collect();
    let blocks = Blocks::of(body, &order);
    let mut depth = 0usize;
    for (pos, &id) in order.iter().enumerate() {
        if let Some(blocks) = &blocks {
            for &b in &blocks.opens[pos] {
                blocks.open(b, body, &mut p, ctx, depth, &mut out);
                depth += 1;
            }
        }
        indent(&mut out, depth);
        write_instruction(body, id, &label, &mut p, ctx, &mut out);
        out.push('\n');
        if let Some(blocks) = &blocks {
            for &b in &blocks.closes[pos] {
                depth -= 1;
                indent(&mut out, depth);
                out.push_str(blocks.list[b].kind.closing());
                out.push('\n');
            }
        }
    }
    if blocks.is_none() {
        let end = |last: InstrId| match body.instrs.next(last) {
            Some(next) => label(next),
            None => format!("IL_{code_size:04x}"),
        };
        for clause in &body.clauses {
            let _ = write!(
                out,
                ".try {} to {} ",
                label(clause.try_start),
                end(clause.try_last)
            );
            match clause.kind {
                ClauseKind::Catch(token) => {
                    out.push_str("catch ");
                    p.type_token(token, ctx, &mut out);
                }
                ClauseKind::Filter(start) => {
                    let _ = write!(out, "filter {}", label(start));
                }
                ClauseKind::Finally => out.push_str("finally"),
                ClauseKind::Fault => out.push_str("fault"),
            }
            let _ = writeln!(
                out,
                " handler {} to {}",
                label(clause.handler_start),
                end(clause.handler_last)
            );
        }
    }
    Ok(Listing {
        text: out,
        unresolved: p.unresolved,
    })
}

fn indent(out: &mut String, depth: usize) {
    for _ in 0..depth {
        out.push_str("  ");
    }
}

/// Writes `IL_xxxx:  opcode     operand`.
fn write_instruction<M: MetadataSource + ?Sized>(
    body: &MethodBody,
    id: InstrId,
    label: &dyn Fn(InstrId) -> String,
    p: &mut Printer<'_, M>,
    ctx: Context,
    out: &mut String,
) {
    let instr = body.instrs.get(id);
    let opcode = instr.opcode;
    let _ = write!(out, "{}:  {}", label(id), opcode.name());
    if !matches!(instr.operand, Operand::None) {
        let pad = 11usize.saturating_sub(opcode.name().len()).max(1);
        out.push_str(&" ".repeat(pad));
    }
    match instr.operand {
        Operand::None => {}
        Operand::Int(v) => {
            let _ = write!(out, "{v}");
        }
        Operand::Long(v) => {
            let _ = write!(out, "{v}");
        }
        Operand::Float32(bits) => {
            let v = f32::from_bits(bits);
            write_float(out, format!("{v:?}"), v.is_finite(), &bits.to_le_bytes());
        }
        Operand::Float64(bits) => {
            let v = f64::from_bits(bits);
            write_float(out, format!("{v:?}"), v.is_finite(), &bits.to_le_bytes());
        }
        Operand::Var(v) => {
            let _ = write!(out, "{v}");
        }
        Operand::Token(t) => {
            if opcode.operand().is_token() {
                p.operand_token(opcode, t, ctx, out);
            } else {
                p.hex(t, out);
            }
        }
        Operand::Target(t) => out.push_str(&label(t)),
        Operand::Switch(targets) => {
            out.push('(');
            let targets = body.instrs.try_switch_targets(targets).unwrap_or(&[]);
            for (i, &t) in targets.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&label(t));
            }
            out.push(')');
        }
    }
    if !instr.operand_matches_opcode() && opcode.operand() != OperandKind::None {
        out.push_str(" /* operand does not match opcode */");
    }
}

// ---- exception handling as nested blocks ------------------------------------------

/// What a block of a structured listing is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BlockKind {
    /// A protected block (shared by the clauses with the same try region).
    Try,
    /// The filter of clause `n`.
    Filter(usize),
    /// The handler of clause `n`.
    Handler(usize),
}

impl BlockKind {
    /// Orders blocks with the same range: a handler or filter encloses a try block
    /// with its range (a try nested in a handler), never the other way round.
    fn rank(self) -> u8 {
        match self {
            BlockKind::Filter(_) | BlockKind::Handler(_) => 0,
            BlockKind::Try => 1,
        }
    }

    fn closing(self) -> &'static str {
        match self {
            BlockKind::Try => "}  // end .try",
            BlockKind::Filter(_) => "}  // end filter",
            BlockKind::Handler(_) => "}  // end handler",
        }
    }
}

/// One block: the positions (in list order) of its first and last instructions.
#[derive(Debug, Clone, Copy)]
struct Block {
    start: usize,
    end: usize,
    kind: BlockKind,
}

/// The blocks of a body whose clauses can be written as nested blocks.
#[derive(Debug)]
struct Blocks {
    list: Vec<Block>,
    /// Per position, the blocks opening there, outermost first.
    opens: Vec<Vec<usize>>,
    /// Per position, the blocks closing after it, innermost first.
    closes: Vec<Vec<usize>>,
}

impl Blocks {
    /// The blocks of `body`, or `None` when its clauses cannot be written as nested
    /// blocks: a region that is not in the list or empty, regions that overlap without
    /// nesting, or a handler that does not directly follow its try block (or the
    /// previous handler of the same try block) at the same level.
    fn of(body: &MethodBody, order: &[InstrId]) -> Option<Blocks> {
        if body.clauses.is_empty() {
            return Some(Blocks {
                list: Vec::new(),
                opens: vec![Vec::new(); order.len()],
                closes: vec![Vec::new(); order.len()],
            });
        }
        let mut pos_of = vec![usize::MAX; body.instrs.arena_len()];
        for (pos, id) in order.iter().enumerate() {
            pos_of[id.index()] = pos;
        }
        let pos = |id: InstrId| pos_of.get(id.index()).copied().filter(|&p| p != usize::MAX);
        let mut list: Vec<Block> = Vec::new();
        // Per clause: its try block and its handler region (filter start to handler
        // end).
        let mut clause_try = Vec::new();
        let mut clause_region = Vec::new();
        for (n, clause) in body.clauses.iter().enumerate() {
            let (ts, te) = (pos(clause.try_start)?, pos(clause.try_last)?);
            let (hs, he) = (pos(clause.handler_start)?, pos(clause.handler_last)?);
            if ts > te || hs > he {
                return None;
            }
            let t = match list
                .iter()
                .position(|b| b.kind == BlockKind::Try && b.start == ts && b.end == te)
            {
                Some(t) => t,
                None => {
                    list.push(Block {
                        start: ts,
                        end: te,
                        kind: BlockKind::Try,
                    });
                    list.len() - 1
                }
            };
            clause_try.push(t);
            let mut region_start = hs;
            if let ClauseKind::Filter(filter) = clause.kind {
                let fs = pos(filter)?;
                if fs >= hs {
                    return None;
                }
                region_start = fs;
                list.push(Block {
                    start: fs,
                    end: hs - 1,
                    kind: BlockKind::Filter(n),
                });
            }
            clause_region.push((region_start, he));
            list.push(Block {
                start: hs,
                end: he,
                kind: BlockKind::Handler(n),
            });
        }
        // Outermost first: by start, then the longer, then handlers around tries.
        let mut sorted: Vec<usize> = (0..list.len()).collect();
        sorted.sort_by_key(|&b| {
            let b = &list[b];
            (b.start, std::cmp::Reverse(b.end), b.kind.rank())
        });
        // Nesting: every block lies within the blocks open at its start.
        let mut parent = vec![usize::MAX; list.len()];
        let mut stack: Vec<usize> = Vec::new();
        for &b in &sorted {
            while stack.last().is_some_and(|&s| list[s].end < list[b].start) {
                stack.pop();
            }
            if let Some(&s) = stack.last() {
                if list[s].end < list[b].end {
                    return None;
                }
                parent[b] = s;
            }
            stack.push(b);
        }
        // Each try block is followed by its handler regions, one after the other, at
        // its own level.
        for (t, block) in list.iter().enumerate() {
            if block.kind != BlockKind::Try {
                continue;
            }
            let mut regions: Vec<usize> = (0..body.clauses.len())
                .filter(|&n| clause_try[n] == t)
                .collect();
            regions.sort_by_key(|&n| clause_region[n].0);
            let mut next = block.end + 1;
            for n in regions {
                let (start, end) = clause_region[n];
                if start != next {
                    return None;
                }
                next = end + 1;
            }
        }
        for (b, block) in list.iter().enumerate() {
            let n = match block.kind {
                BlockKind::Try => continue,
                BlockKind::Filter(n) | BlockKind::Handler(n) => n,
            };
            if parent[b] != parent[clause_try[n]] {
                return None;
            }
        }
        let mut opens = vec![Vec::new(); order.len()];
        let mut closes = vec![Vec::new(); order.len()];
        for &b in &sorted {
            opens[list[b].start].push(b);
        }
        for &b in sorted.iter().rev() {
            closes[list[b].end].push(b);
        }
        Some(Blocks {
            list,
            opens,
            closes,
        })
    }

    /// Writes the lines that open block `b` at `depth`.
    fn open<M: MetadataSource + ?Sized>(
        &self,
        b: usize,
        body: &MethodBody,
        p: &mut Printer<'_, M>,
        ctx: Context,
        depth: usize,
        out: &mut String,
    ) {
        indent(out, depth);
        match self.list[b].kind {
            BlockKind::Try => out.push_str(".try\n"),
            BlockKind::Filter(_) => out.push_str("filter\n"),
            BlockKind::Handler(n) => match body.clauses[n].kind {
                ClauseKind::Catch(token) => {
                    out.push_str("catch ");
                    p.type_token(token, ctx, out);
                    out.push('\n');
                }
                ClauseKind::Finally => out.push_str("finally\n"),
                ClauseKind::Fault => out.push_str("fault\n"),
                ClauseKind::Filter(_) => {
                    out.push_str("{  // handler\n");
                    return;
                }
            },
        }
        indent(out, depth);
        out.push_str("{\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::ExceptionClause;
    use crate::error::Error;
    use crate::graph::Instruction;
    use crate::metadata::{MemberName, NoMetadata, TypeName};
    use crate::opcode::OpCode;
    use std::collections::HashMap;

    /// A source over a few hand-made rows.
    #[derive(Default)]
    struct Fake {
        sigs: HashMap<u32, Vec<u8>>,
        specs: HashMap<u32, u32>,
        types: HashMap<u32, TypeName>,
        members: HashMap<u32, MemberName>,
        strings: HashMap<u32, Vec<u16>>,
        params: HashMap<(u32, u32), String>,
    }

    fn missing(token: u32) -> Error {
        Error::BadToken {
            token,
            what: "not in the fake",
        }
    }

    impl MetadataSource for Fake {
        fn signature(&self, token: u32) -> Result<&[u8]> {
            self.sigs
                .get(&token)
                .map(Vec::as_slice)
                .ok_or(missing(token))
        }
        fn method_spec_parent(&self, token: u32) -> Result<u32> {
            self.specs.get(&token).copied().ok_or(missing(token))
        }
        fn type_name(&self, token: u32) -> Result<TypeName> {
            self.types.get(&token).cloned().ok_or(missing(token))
        }
        fn member_name(&self, token: u32) -> Result<MemberName> {
            self.members.get(&token).cloned().ok_or(missing(token))
        }
        fn user_string(&self, token: u32) -> Result<Vec<u16>> {
            self.strings.get(&token).cloned().ok_or(missing(token))
        }
        fn generic_param_name(&self, owner: u32, index: u32) -> Option<String> {
            self.params.get(&(owner, index)).cloned()
        }
    }

    fn type_name(
        namespace: &str,
        name: &str,
        enclosing: Option<u32>,
        assembly: Option<&str>,
    ) -> TypeName {
        TypeName {
            namespace: namespace.into(),
            name: name.into(),
            enclosing,
            assembly: assembly.map(Into::into),
        }
    }

    fn member(owner: Option<u32>, name: &str) -> MemberName {
        MemberName {
            owner,
            name: name.into(),
        }
    }

    fn fake() -> Fake {
        let mut f = Fake::default();
        let types = [
            (
                0x0100_0001,
                type_name("System", "Object", None, Some("System.Runtime")),
            ),
            (0x0100_0002, type_name("", "Inner", Some(0x0100_0003), None)),
            (0x0100_0003, type_name("N", "Outer", None, Some("Lib"))),
            (
                0x0100_0004,
                type_name("System", "Array", None, Some("System.Runtime")),
            ),
            (
                0x0200_0002,
                type_name("System.Collections.Generic", "List`1", None, None),
            ),
            (0x0200_0003, type_name("", "<>c", Some(0x0200_0002), None)),
        ];
        f.types.extend(types);
        let members = [
            (0x0600_0001, member(Some(0x0200_0002), "Add")),
            (0x0600_0002, member(None, "Main")),
            (0x0600_0003, member(Some(0x0200_0003), "Printf")),
            (0x0A00_0001, member(Some(0x0100_0001), "ToString")),
            (0x0A00_0002, member(Some(0x0100_0004), "Empty")),
            (0x0A00_0003, member(Some(0x1B00_0001), "value")),
            (0x0A00_0004, member(Some(0x0600_0003), "Printf")),
        ];
        f.members.extend(members);
        let sigs: [(u32, &[u8]); 14] = [
            (0x0600_0001, &[0x20, 0x01, 0x01, 0x13, 0x00]),
            (0x0600_0002, &[0x00, 0x00, 0x01]),
            (0x0600_0003, &[0x05, 0x01, 0x01, 0x08]),
            (0x0A00_0001, &[0x20, 0x00, 0x0E]),
            (0x0A00_0002, &[0x10, 0x01, 0x00, 0x1D, 0x1E, 0x00]),
            (0x0A00_0003, &[0x06, 0x13, 0x00]),
            (0x0A00_0004, &[0x05, 0x02, 0x01, 0x08, 0x41, 0x0E]),
            (0x2B00_0001, &[0x0A, 0x01, 0x08]),
            (0x1B00_0001, &[0x15, 0x12, 0x08, 0x01, 0x13, 0x00]),
            (0x1B00_0002, &[0x14, 0x08, 0x02, 0x00, 0x02, 0x00, 0x00]),
            (0x1B00_0003, &[0x1B, 0x00, 0x01, 0x01, 0x08]),
            (0x1B00_0004, &[0xFF]),
            (
                0x1100_0001,
                &[0x07, 0x03, 0x08, 0x45, 0x10, 0x07, 0x1F, 0x05, 0x08],
            ),
            (0x1100_0002, &[0x01, 0x01, 0x08, 0x18]),
        ];
        f.sigs.extend(sigs.iter().map(|&(t, s)| (t, s.to_vec())));
        f.specs.insert(0x2B00_0001, 0x0A00_0002);
        f.strings
            .insert(0x7000_0001, "a\"b\n".encode_utf16().collect());
        f.params.insert((0x0200_0002, 0), "T".into());
        f
    }

    fn op(opcode: OpCode) -> Instruction {
        Instruction::simple(opcode)
    }

    fn tok(opcode: OpCode, token: u32) -> Instruction {
        Instruction::new(opcode, Operand::Token(token))
    }

    #[test]
    fn operands_are_written_as_ilasm_writes_them() {
        let mut body = MethodBody::new();
        body.max_stack = 4;
        body.local_var_sig = 0x1100_0001;
        body.init_locals = true;
        for instr in [
            op(OpCode::Ldarg0),
            tok(OpCode::Ldfld, 0x0A00_0003),
            tok(OpCode::Box, 0x1B00_0001),
            tok(OpCode::Constrained, 0x1B00_0001),
            tok(OpCode::Callvirt, 0x0A00_0001),
            tok(OpCode::Ldstr, 0x7000_0001),
            tok(OpCode::Call, 0x2B00_0001),
            tok(OpCode::Newarr, 0x1B00_0002),
            tok(OpCode::Ldtoken, 0x1B00_0003),
            tok(OpCode::Ldtoken, 0x0A00_0003),
            tok(OpCode::Ldftn, 0x0600_0002),
            tok(OpCode::Call, 0x0A00_0004),
            tok(OpCode::Calli, 0x1100_0002),
            tok(OpCode::Castclass, 0x0100_0002),
            tok(OpCode::Isinst, 0x1B00_0004),
            op(OpCode::Ret),
        ] {
            body.append(instr);
        }
        let listing = disassemble(&body, &fake(), Some(0x0600_0001)).unwrap();
        let expected = "\
// instance void System.Collections.Generic.List`1::Add(!T)
// code size 74 (0x4a)
.maxstack 4
.locals init ([0] int32 V_0,
              [1] uint16& pinned V_1,
              [2] int32 modreq([System.Runtime]System.Object) V_2)
IL_0000:  ldarg.0
IL_0001:  ldfld      !0 class System.Collections.Generic.List`1<!T>::'value'
IL_0006:  box        class System.Collections.Generic.List`1<!T>
IL_000b:  constrained. class System.Collections.Generic.List`1<!T>
IL_0011:  callvirt   instance string [System.Runtime]System.Object::ToString()
IL_0016:  ldstr      \"a\\\"b\\n\"
IL_001b:  call       !!0[] [System.Runtime]System.Array::Empty<int32>()
IL_0020:  newarr     int32[0...,0...]
IL_0025:  ldtoken    method void *(int32)
IL_002a:  ldtoken    field !0 class System.Collections.Generic.List`1<!T>::'value'
IL_002f:  ldftn      void Main()
IL_0035:  call       vararg void System.Collections.Generic.List`1/'<>c'::Printf(int32, ..., string)
IL_003a:  calli      unmanaged cdecl int32(native int)
IL_003f:  castclass  [Lib]N.Outer/Inner
IL_0044:  isinst     /* 1B000004 */
IL_0049:  ret
";
        assert_eq!(listing.text, expected);
        assert_eq!(
            listing.unresolved,
            Unresolved {
                hex_tokens: 1,
                ownerless_members: 1,
                undecoded_type_specs: 1,
                undecoded_signatures: 0,
            }
        );
        let name = method_name(&fake(), 0x0600_0001);
        assert_eq!(name.owner, "System.Collections.Generic.List`1");
        assert_eq!(name.name, "Add");
        assert_eq!(name.params, ["!T"]);
        assert!(name.unresolved.is_empty());
    }

    #[test]
    fn a_source_without_names_gives_a_listing_in_hex() {
        let mut body = MethodBody::new();
        body.local_var_sig = 0x1100_0001;
        body.append(tok(OpCode::Ldstr, 0x7000_0001));
        body.append(tok(OpCode::Call, 0x0A00_0012));
        body.append(op(OpCode::Ret));
        let listing = disassemble(&body, &NoMetadata, Some(0x0600_0001)).unwrap();
        let expected = "\
// /* 06000001 */
// code size 11 (0xb)
.maxstack 8
.locals /* 11000001 */
IL_0000:  ldstr      /* 70000001 */
IL_0005:  call       /* 0A000012 */
IL_000a:  ret
";
        assert_eq!(listing.text, expected);
        assert_eq!(listing.unresolved.hex_tokens, 4);
        assert_eq!(listing.unresolved.undecoded_signatures, 3);
    }

    /// `nop; leave.s END; (handler) endfinally; END: ret` with a try/finally, and the
    /// ids of the four instructions.
    fn try_finally() -> (MethodBody, [InstrId; 4]) {
        let mut body = MethodBody::new();
        let t0 = body.append(op(OpCode::Nop));
        let leave = body.append(op(OpCode::Nop));
        let h = body.append(op(OpCode::Endfinally));
        let end = body.append(op(OpCode::Ret));
        body.replace(leave, Instruction::branch(OpCode::LeaveS, end))
            .unwrap();
        (body, [t0, leave, h, end])
    }

    #[test]
    fn clauses_are_nested_blocks() {
        let (mut body, [t0, leave, h, _]) = try_finally();
        body.add_clause(ExceptionClause::new(ClauseKind::Finally, t0, leave, h, h))
            .unwrap();
        let text = disassemble(&body, &NoMetadata, None).unwrap().text;
        let expected = "\
// code size 5 (0x5)
.maxstack 8
.try
{
  IL_0000:  nop
  IL_0001:  leave.s    IL_0004
}  // end .try
finally
{
  IL_0003:  endfinally
}  // end handler
IL_0004:  ret
";
        assert_eq!(text, expected);
    }

    #[test]
    fn clauses_that_are_not_blocks_are_listed_by_label() {
        // The handler before its try block: ilasm's blocks cannot say that.
        let (mut body, [t0, leave, h, end]) = try_finally();
        body.clauses
            .push(ExceptionClause::new(ClauseKind::Finally, h, end, t0, leave));
        let text = disassemble(&body, &NoMetadata, None).unwrap().text;
        assert!(!text.contains('{'), "{text}");
        assert!(
            text.ends_with(".try IL_0003 to IL_0005 finally handler IL_0000 to IL_0003\n"),
            "{text}"
        );
        // Overlapping regions.
        let (mut body, [t0, leave, h, end]) = try_finally();
        body.clauses
            .push(ExceptionClause::new(ClauseKind::Finally, t0, h, end, end));
        body.clauses
            .push(ExceptionClause::new(ClauseKind::Fault, leave, end, t0, t0));
        let text = disassemble(&body, &NoMetadata, None).unwrap().text;
        assert!(!text.contains('{'), "{text}");
        assert_eq!(text.matches(".try IL_").count(), 2, "{text}");
    }
}

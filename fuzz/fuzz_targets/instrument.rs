//! Any bytes -> a method signature, a LocalVarSig and a body -> `Instrumenter`s (straight
//! snippets; branching snippets with per-module tokens and the return-value local; a
//! distinct tail-call snippet; entry-only code; `TailCallPolicy::DropPrefix`): never
//! panics, reads out of bounds or hangs, and keeps its promises.
//!
//! Six bytes lead the body:
//!
//! * `shape`: bits 0-2 the method's return type ([`RETURN_TYPES`]), 3-4 its parameter
//!   count, 5 `HASTHIS`; bit 6 re-encodes the body after the `tail.` prefixes are
//!   inserted (so that they are decoded instructions too); bit 7 gives the instrumenters
//!   a resolver without metadata (every tail call is then refused with `NoMetadata`).
//! * `flags`: bits 0-2 the LocalVarSig ([`locals`]); bit 3 inserts a `tail.` prefix
//!   (through the editing API, branches redirected to it) before every `call`,
//!   `callvirt` and `calli` followed by `ret`; bits 4, 5, 6 also run the instrumenter
//!   with a tail-call snippet, the entry-only one and the one that drops `tail.`
//!   prefixes.
//! * four bytes: the method id.
//!
//! Call sites take their stack effect from their token's low bits, and the metadata the
//! instrumenters type kept tail calls from ([`Fake`]) gives signatures that agree with
//! those bits (checked once), with more bits choosing parameter types, generic
//! parameters, the declaring type and vararg ([`expected_operands`] predicts, from the
//! bits alone, what the library must conclude).
//!
//! For a body the analysis accepts (after the prefixes, when inserted), each instrumenter
//! either refuses it before any edit, leaving it exactly as it was, or rewrites it. The
//! first tail call that cannot be kept is predicted and must be the one refused, for the
//! predicted reason; a body whose tail calls can all be kept must not be refused for
//! them. A rewritten body encodes (when the original did), decodes back with one more
//! clause (none for entry-only code), verifies with the max stack reported, and its IL
//! map has one entry per surviving original instruction, old offsets rising, new offsets
//! rising except those of kept calls and their moved `ret`s (in the stubs, after every
//! handler). Every `tail.` in it is followed by a call and `ret`, outside every protected
//! region; the prefixes are the original's minus those removed, the tail calls kept are
//! the original's sites, each stub loads locals of the types the callee's signature
//! gives, and no `constrained.` prefixes a kept `tail.` (a tail call with another
//! prefix is refused). Each kept call's IL-map entry is the start of its stub, a moved
//! `ret`'s the stub's `ret`. Entry-only code gives the entry code followed by the
//! original code, byte for byte.
#![no_main]

use ilrewrite::analysis::{CallEffect, CallSiteResolver, ReturnKind, StackAnalyzer};
use ilrewrite::body::{Decoder, Encoder};
use ilrewrite::graph::Incoming;
use ilrewrite::metadata::{MetadataSource, TypeName, table, token_table};
use ilrewrite::opcode::OpCode;
use ilrewrite::sig::locals::LocalVarSig;
use ilrewrite::sig::method::summarize_method_sig;
use ilrewrite::sig::types::TypeSig;
use ilrewrite::transform::{
    InstrumentationCode, Instrumenter, MethodContext, Snippet, TailCallPolicy,
};
use ilrewrite::{
    ClauseKind, Error, InstrId, Instruction, MethodBody, Operand, Result, TailCallRefusal,
};
use libfuzzer_sys::fuzz_target;
use std::cell::RefCell;
use std::collections::HashSet;
use std::sync::LazyLock;

/// The tokens the snippets call: each pops one value and pushes none.
const HOOK: u32 = 0x0AFF_FF00;
/// The hook of the tail-call snippet.
const TAIL_HOOK: u32 = 0x0AFF_FF03;
/// The per-module tokens of the snippets (`MethodContext::tokens`).
const MODULE_TOKENS: [u32; 2] = [0x0AFF_FF01, 0x0AFF_FF02];
/// The token the rewritten body names its extended LocalVarSig by.
const NEW_LOCALS: u32 = 0x11FF_FFFF;

// ---- call sites: effects and metadata from the token's bits ---------------------------
//
// A call-site token's low 13 bits (its key) say what its signature is, whatever its
// table (MethodDef, MemberRef, StandAloneSig and MethodSpec tokens alike):
//
// * 0x0003: parameter count; 0x0004: returns a value (int32); 0x0020: HASTHIS;
// * 0x0010: unresolvable (no effect, no signature, no parent);
// * 0x00C0: parameter types: all int32; mixed (int64, string, a value type of another
//   module, int32&); the first `!!0` (the rest int32); the first `!0`;
// * 0x0700: the declaring type ([`PARENTS`]);
// * 0x0800: a MethodSpec instantiates a MethodDef (else a MemberRef); with 0x0008 the
//   signature is vararg;
// * 0x1000: a MethodSpec's type argument is int64 (else string).

/// The key bits of a token.
const KEY: u32 = 0x1FFF;
/// A class (extends System.Object).
const CLASS: u32 = 0x0200_0002;
/// A value type (extends System.ValueType).
const STRUCT: u32 = 0x0200_0003;
/// An enum (extends System.Enum).
const ENUM: u32 = 0x0200_0004;
/// A generic value type, named without its instantiation (`this` cannot be typed).
const GENERIC_STRUCT: u32 = 0x0200_0005;
/// System.Enum itself: extends System.ValueType but is a reference type.
const SYSTEM_ENUM: u32 = 0x0200_0006;
/// class G`1<T>.
const G: u32 = 0x0200_0007;
/// valuetype GV`1<T>.
const GV: u32 = 0x0200_0008;
const VALUE_TYPE_REF: u32 = 0x0100_0001;
const ENUM_REF: u32 = 0x0100_0002;
const OBJECT_REF: u32 = 0x0100_0003;
/// A type of another module (a TypeRef: `this` cannot be typed).
const EXTERNAL: u32 = 0x0100_0004;
/// A value type of another module, as a parameter type.
const EXTERNAL_STRUCT: u32 = 0x0100_0005;
/// class G<int64>.
const G_INT64: u32 = 0x1B00_0001;
/// valuetype GV<int64>.
const GV_INT64: u32 = 0x1B00_0002;
const G_INT64_SIG: &[u8] = &[0x15, 0x12, 0x1C, 0x01, 0x0A];
const GV_INT64_SIG: &[u8] = &[0x15, 0x11, 0x20, 0x01, 0x0A];
/// The declaring type, by bits 8-10 of the key.
const PARENTS: [u32; 8] = [
    CLASS,
    STRUCT,
    EXTERNAL,
    G_INT64,
    GV_INT64,
    ENUM,
    GENERIC_STRUCT,
    SYSTEM_ENUM,
];

fn has_this(key: u32) -> bool {
    key & 0x20 != 0
}
fn param_count(key: u32) -> u32 {
    key & 3
}
fn returns(key: u32) -> bool {
    key & 4 != 0
}
fn unresolvable(key: u32) -> bool {
    key & 0x10 != 0
}
fn vararg(key: u32) -> bool {
    key & 0x808 == 0x808
}
fn variant(key: u32) -> u32 {
    (key >> 6) & 3
}
fn generic_method(key: u32) -> bool {
    variant(key) == 2 && !vararg(key)
}

/// Parameter `i` of a `mixed` signature: int64, string, a value type, int32&.
fn mixed(key: u32, i: u32) -> TypeSig {
    match (i + (key >> 12)) % 4 {
        0 => TypeSig::I8,
        1 => TypeSig::String,
        2 => TypeSig::ValueType(EXTERNAL_STRUCT),
        _ => TypeSig::ByRef(Box::new(TypeSig::I4)),
    }
}

/// The method signature blob of `key`.
fn method_sig(key: u32) -> Vec<u8> {
    let mut conv = if vararg(key) { 0x05 } else { 0x00 };
    if has_this(key) {
        conv |= 0x20;
    }
    if generic_method(key) {
        conv |= 0x10;
    }
    let mut sig = vec![conv];
    if generic_method(key) {
        sig.push(1);
    }
    sig.push(param_count(key) as u8);
    sig.push(if returns(key) { 0x08 } else { 0x01 });
    for i in 0..param_count(key) {
        match (variant(key), i) {
            (0, _) | (2 | 3, 1..) => sig.push(0x08),
            (1, _) => sig.extend(mixed(key, i).to_bytes().expect("encodes")),
            (2, _) => sig.extend([0x1E, 0x00]),
            _ => sig.extend([0x13, 0x00]),
        }
    }
    sig
}

/// Metadata whose answers follow the key bits (see above).
struct Fake {
    /// Method signatures by key.
    methods: Vec<Vec<u8>>,
    /// MethodSpec instantiations by key.
    specs: Vec<Vec<u8>>,
}

fn bad(token: u32) -> Error {
    Error::BadToken {
        token,
        what: "fuzz metadata",
    }
}

impl Fake {
    fn new() -> Fake {
        let fake = Fake {
            methods: (0..=KEY).map(method_sig).collect(),
            specs: (0..=KEY)
                .map(|key| vec![0x0A, 0x01, if key & 0x1000 != 0 { 0x0A } else { 0x0E }])
                .collect(),
        };
        // The signatures agree with the effects the bits give.
        for key in (0..=KEY).filter(|&k| !unresolvable(k)) {
            for t in [
                table::METHOD_DEF,
                table::MEMBER_REF,
                table::STANDALONE_SIG,
                table::METHOD_SPEC,
            ] {
                let token = u32::from(t) << 24 | key;
                let sig = fake.call_site_signature(token).expect("a signature");
                let s = summarize_method_sig(sig).expect("a valid signature");
                for opcode in [
                    OpCode::Call,
                    OpCode::Callvirt,
                    OpCode::Calli,
                    OpCode::Newobj,
                ] {
                    let from_sig = CallEffect::from_parts(
                        s.has_this,
                        s.explicit_this,
                        s.param_count,
                        s.returns_value,
                        opcode,
                    );
                    assert_eq!(from_sig, effect(opcode, token), "{token:08x}");
                }
            }
        }
        fake
    }
}

impl MetadataSource for Fake {
    fn signature(&self, token: u32) -> Result<&[u8]> {
        let key = token & KEY;
        match token_table(token) {
            _ if token == G_INT64 => Ok(G_INT64_SIG),
            _ if token == GV_INT64 => Ok(GV_INT64_SIG),
            _ if unresolvable(key) => Err(bad(token)),
            table::METHOD_DEF | table::MEMBER_REF | table::STANDALONE_SIG => {
                Ok(&self.methods[key as usize])
            }
            table::METHOD_SPEC => Ok(&self.specs[key as usize]),
            _ => Err(bad(token)),
        }
    }

    fn method_spec_parent(&self, token: u32) -> Result<u32> {
        let key = token & KEY;
        match token_table(token) {
            table::METHOD_SPEC if !unresolvable(key) => Ok(match key & 0x800 {
                0 => 0x0A00_0000 | key,
                _ => 0x0600_0000 | key,
            }),
            _ => Err(bad(token)),
        }
    }

    fn member_parent(&self, token: u32) -> Result<u32> {
        let key = token & KEY;
        match token_table(token) {
            table::METHOD_DEF | table::MEMBER_REF if !unresolvable(key) => {
                Ok(PARENTS[(key >> 8) as usize & 7])
            }
            _ => Err(bad(token)),
        }
    }

    fn type_extends(&self, type_def: u32) -> Result<Option<u32>> {
        match type_def {
            CLASS | G => Ok(Some(OBJECT_REF)),
            STRUCT | GENERIC_STRUCT | SYSTEM_ENUM | GV => Ok(Some(VALUE_TYPE_REF)),
            ENUM => Ok(Some(ENUM_REF)),
            _ => Err(bad(type_def)),
        }
    }

    fn type_name(&self, token: u32) -> Result<TypeName> {
        let (namespace, name) = match token {
            VALUE_TYPE_REF => ("System", "ValueType"),
            ENUM_REF | SYSTEM_ENUM => ("System", "Enum"),
            OBJECT_REF => ("System", "Object"),
            CLASS => ("N", "C"),
            STRUCT => ("N", "S"),
            ENUM => ("N", "E"),
            GENERIC_STRUCT => ("N", "GS`1"),
            G => ("N", "G`1"),
            GV => ("N", "GV`1"),
            EXTERNAL => ("X", "External"),
            EXTERNAL_STRUCT => ("X", "ExternalStruct"),
            _ => return Err(bad(token)),
        };
        Ok(TypeName {
            namespace: namespace.into(),
            name: name.into(),
            ..TypeName::default()
        })
    }

    fn generic_param_name(&self, owner: u32, index: u32) -> Option<String> {
        matches!((owner, index), (GENERIC_STRUCT | G | GV, 0)).then(|| "T".into())
    }
}

static FAKE: LazyLock<Fake> = LazyLock::new(Fake::new);

/// Effects from the token's bits; the hooks pop one value.
fn effect(opcode: OpCode, token: u32) -> Result<CallEffect> {
    if token & 0xFFFF_FF00 == HOOK {
        return Ok(CallEffect { pops: 1, pushes: 0 });
    }
    if unresolvable(token) {
        return Err(Error::UnresolvedCall {
            opcode: opcode.name(),
            token,
            what: "fuzz resolver",
        });
    }
    CallEffect::from_parts(
        has_this(token),
        false,
        param_count(token),
        returns(token),
        opcode,
    )
}

/// The effects of [`effect`], with [`Fake`] as metadata or none.
struct Resolver(Option<&'static Fake>);

impl CallSiteResolver for Resolver {
    fn call_effect(&self, opcode: OpCode, token: u32) -> Result<CallEffect> {
        effect(opcode, token)
    }
    fn metadata(&self) -> Option<&dyn MetadataSource> {
        self.0.map(|m| m as &dyn MetadataSource)
    }
}

/// What the library must conclude, from the bits alone, of a tail call of `opcode` with
/// operand `token`: the types of the locals its operands go to (`this`, the parameters,
/// `calli`'s function pointer), or why it cannot be kept. `None` for the TypeSpec tokens
/// the metadata gives signatures to (what their blobs read as method signatures is not
/// modelled).
fn expected_operands(
    opcode: OpCode,
    token: u32,
) -> Option<std::result::Result<Vec<TypeSig>, TailCallRefusal>> {
    use TailCallRefusal::*;
    if token == G_INT64 || token == GV_INT64 {
        return None;
    }
    let key = token & KEY;
    let t = token_table(token);
    if unresolvable(key)
        || !matches!(
            t,
            table::METHOD_DEF | table::MEMBER_REF | table::STANDALONE_SIG | table::METHOD_SPEC
        )
    {
        return Some(Err(UnreadableSignature));
    }
    let (method_table, method_arg) = match t {
        table::METHOD_SPEC => (
            if key & 0x800 != 0 {
                table::METHOD_DEF
            } else {
                table::MEMBER_REF
            },
            Some(if key & 0x1000 != 0 {
                TypeSig::I8
            } else {
                TypeSig::String
            }),
        ),
        t => (t, None),
    };
    if vararg(key) {
        return Some(Err(VarArg));
    }
    let parent = match opcode {
        OpCode::Calli => None,
        _ if matches!(method_table, table::METHOD_DEF | table::MEMBER_REF) => {
            Some(PARENTS[(key >> 8) as usize & 7])
        }
        _ => return Some(Err(UnreadableSignature)),
    };
    let type_arg = matches!(parent, Some(G_INT64 | GV_INT64)).then_some(TypeSig::I8);
    let mut types = Vec::new();
    if has_this(key) {
        let by_ref = |t| TypeSig::ByRef(Box::new(t));
        types.push(match (opcode, parent) {
            (OpCode::Callvirt, _) => TypeSig::Object,
            (OpCode::Call, Some(CLASS | G_INT64 | SYSTEM_ENUM)) => TypeSig::Object,
            (OpCode::Call, Some(STRUCT)) => by_ref(TypeSig::ValueType(STRUCT)),
            (OpCode::Call, Some(ENUM)) => by_ref(TypeSig::ValueType(ENUM)),
            (OpCode::Call, Some(GV_INT64)) => by_ref(TypeSig::GenericInst {
                is_value_type: true,
                token: GV,
                args: vec![TypeSig::I8],
            }),
            (OpCode::Call, Some(GENERIC_STRUCT)) => return Some(Err(UnboundGenericParameter)),
            _ => return Some(Err(UnknownThisKind)),
        });
    }
    for i in 0..param_count(key) {
        types.push(match (variant(key), i) {
            (0, _) | (2 | 3, 1..) => TypeSig::I4,
            (1, _) => mixed(key, i),
            (2, _) => match &method_arg {
                Some(arg) => arg.clone(),
                None => return Some(Err(UnboundGenericParameter)),
            },
            _ => match &type_arg {
                Some(arg) => arg.clone(),
                None => return Some(Err(UnboundGenericParameter)),
            },
        });
    }
    if opcode == OpCode::Calli {
        types.push(TypeSig::I);
    }
    Some(Ok(types))
}

// ---- the method: signature and locals --------------------------------------------------

/// Return types (signature bytes): void, int32, string, int32&, a value type, !!0,
/// int32 modreq(TypeRef 1), int32[].
const RETURN_TYPES: [&[u8]; 8] = [
    &[0x01],
    &[0x08],
    &[0x0E],
    &[0x10, 0x08],
    &[0x11, 0x05],
    &[0x1E, 0x00],
    &[0x1F, 0x05, 0x08],
    &[0x1D, 0x08],
];

/// LocalVarSigs: none, empty, (int32), (string, object, int32&) and one with 130 locals
/// (a two-byte count).
fn locals(pick: u8) -> Option<Vec<u8>> {
    Some(match pick % 5 {
        0 => return None,
        1 => vec![0x07, 0x00],
        2 => vec![0x07, 0x01, 0x08],
        3 => vec![0x07, 0x03, 0x0E, 0x1C, 0x10, 0x08],
        _ => {
            let mut sig = vec![0x07, 0x80, 130];
            sig.extend(std::iter::repeat_n(0x08, 130));
            sig
        }
    })
}

// ---- the instrumenters ------------------------------------------------------------------

/// `if (token 0) { hook(id) }` when `guarded`, else `hook(id)`.
fn probe(guarded: bool, hook: u32) -> Snippet {
    let mut b = Snippet::builder();
    let skip = b.new_label();
    if guarded {
        b.token(OpCode::Ldsfld, 0);
        b.branch(OpCode::BrfalseS, skip);
    }
    b.method_id();
    b.push(Instruction::with_token(OpCode::Call, hook));
    b.bind(skip);
    b.finish().expect("a valid snippet")
}

/// Reads the return value and stores it back, then calls a hook with a per-module
/// token's field.
fn value_epilogue() -> Snippet {
    let mut value = Snippet::builder();
    value.return_local(OpCode::Ldloc);
    value.return_local(OpCode::Stloc);
    value.token(OpCode::Ldsfld, 1);
    value.push(Instruction::with_token(OpCode::Call, HOOK));
    value.finish().expect("a valid snippet")
}

fn instrumenter(guarded: bool) -> Instrumenter {
    Instrumenter::new(InstrumentationCode {
        entry: probe(guarded, HOOK),
        exit: probe(guarded, HOOK),
        epilogue_value: match guarded {
            true => value_epilogue(),
            false => Snippet::default(),
        },
        epilogue_void: match guarded {
            true => probe(true, HOOK),
            false => Snippet::default(),
        },
        tail_call: None,
        state_local: None,
    })
    .expect("valid instrumentation code")
}

/// What an instrumenter does, for the checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Wraps, keeping tail calls.
    Keep,
    /// Wraps, keeping tail calls, with a tail-call snippet.
    KeepWithSnippet,
    /// Inserts the entry code only.
    EntryOnly,
    /// Wraps, dropping `tail.` prefixes.
    Drop,
}

/// The instrumenters, each with what it does.
type Instrumenters = [(Kind, Instrumenter); 5];

fn instrumenters() -> Instrumenters {
    let with_snippet = Instrumenter::new(InstrumentationCode {
        entry: probe(false, HOOK),
        exit: probe(true, HOOK),
        epilogue_value: value_epilogue(),
        epilogue_void: probe(false, HOOK),
        tail_call: Some(probe(true, TAIL_HOOK)),
        state_local: None,
    })
    .expect("valid instrumentation code");
    let entry_only = Instrumenter::new(InstrumentationCode {
        entry: probe(true, HOOK),
        ..Default::default()
    })
    .expect("valid instrumentation code");
    [
        (Kind::Keep, instrumenter(false)),
        (Kind::Keep, instrumenter(true)),
        (Kind::KeepWithSnippet, with_snippet),
        (Kind::EntryOnly, entry_only),
        (
            Kind::Drop,
            instrumenter(true).with_tail_call_policy(TailCallPolicy::DropPrefix),
        ),
    ]
}

// ---- facts about bodies ---------------------------------------------------------------

/// The code bytes of an encoded method body (after its tiny or fat header).
fn code_bytes(bytes: &[u8]) -> &[u8] {
    if bytes[0] & 3 == 2 {
        &bytes[1..1 + usize::from(bytes[0] >> 2)]
    } else {
        let header = usize::from(bytes[1] >> 4) * 4;
        let size = u32::from_le_bytes(bytes[4..8].try_into().expect("4 bytes")) as usize;
        &bytes[header..header + size]
    }
}

/// By position, whether an instruction lies in a region (try, handler or filter) of
/// any clause; `pos` is `body.positions()`.
fn protected(body: &MethodBody, pos: &[u32]) -> Vec<bool> {
    let mut inside = vec![false; body.instrs.len()];
    let at = |id: InstrId| pos.get(id.index()).copied().unwrap_or(u32::MAX) as usize;
    let mut mark = |first: usize, last: usize| {
        if first <= last && last < inside.len() {
            inside[first..=last].fill(true);
        }
    };
    for c in &body.clauses {
        mark(at(c.try_start), at(c.try_last));
        mark(at(c.handler_start), at(c.handler_last));
        if let ClauseKind::Filter(f) = c.kind {
            mark(at(f), at(c.handler_start).wrapping_sub(1));
        }
    }
    inside
}

/// By id, whether a branch or switch names the instruction.
fn branch_targets(body: &MethodBody) -> Vec<bool> {
    let mut targets = vec![false; body.instrs.arena_len()];
    for (_, instr) in body.instrs.iter() {
        match instr.operand {
            Operand::Target(t) => targets[t.index()] = true,
            Operand::Switch(s) => {
                for t in body.instrs.try_switch_targets(s).unwrap_or(&[]) {
                    targets[t.index()] = true;
                }
            }
            _ => {}
        }
    }
    targets
}

fn is_call(opcode: OpCode) -> bool {
    matches!(opcode, OpCode::Call | OpCode::Callvirt | OpCode::Calli)
}

/// Each `tail.` of `body` with the call and `ret` that follow it, in list order (`None`
/// for a `tail.` not followed by a call and `ret`).
type Site = (InstrId, Option<(InstrId, InstrId)>);

fn tail_sites(body: &MethodBody) -> Vec<Site> {
    body.instrs
        .opcodes()
        .filter(|&(_, op)| op == OpCode::Tail)
        .map(|(tail, _)| {
            let call = body
                .instrs
                .next(tail)
                .filter(|&c| is_call(body.instrs.opcode(c)));
            let ret = call.and_then(|c| body.instrs.next(c));
            let pair = call.zip(ret.filter(|&r| body.instrs.opcode(r) == OpCode::Ret));
            (tail, pair)
        })
        .collect()
}

/// What keeping the tail calls of a body must give.
#[derive(Debug)]
enum Prediction {
    /// Every site can be kept.
    Keep,
    /// This `tail.` is the first that cannot be kept, for this reason.
    Refuse(InstrId, TailCallRefusal),
    /// Not modelled.
    Unknown,
}

fn predict(body: &MethodBody, sites: &[Site], metadata: bool, returns_value: bool) -> Prediction {
    use TailCallRefusal::*;
    let pos = body.positions();
    let inside = protected(body, &pos);
    let targets = branch_targets(body);
    let prefix = |id: Option<InstrId>| id.is_some_and(|p| body.instrs.opcode(p).is_prefix());
    for &(tail, pair) in sites {
        if prefix(body.instrs.prev(tail)) || prefix(body.instrs.next(tail)) {
            return Prediction::Refuse(tail, OtherPrefix);
        }
        let Some((call, ret)) = pair else {
            return Prediction::Refuse(tail, NotCallThenRet);
        };
        if [tail, call, ret]
            .iter()
            .any(|id| inside[pos[id.index()] as usize])
        {
            return Prediction::Refuse(tail, InProtectedRegion);
        }
        if targets[call.index()] {
            return Prediction::Refuse(tail, BranchIntoCall);
        }
        if !metadata {
            return Prediction::Refuse(tail, NoMetadata);
        }
        let (opcode, token) = (
            body.instrs.opcode(call),
            body.instrs.token(call).unwrap_or(0),
        );
        match expected_operands(opcode, token) {
            None => return Prediction::Unknown,
            Some(Err(reason)) => return Prediction::Refuse(tail, reason),
            Some(Ok(_)) => {}
        }
        // A `void` callee in a method that returns a value: the `ret` returns a value
        // from below the call's operands (invalid IL the stack rules let through).
        if returns_value && effect(opcode, token).is_ok_and(|e| e.pushes == 0) {
            return Prediction::Refuse(tail, ExtraStackValues);
        }
    }
    Prediction::Keep
}

/// The index of the local an `ldloc` (any form) loads.
fn ldloc_index(instr: Instruction) -> Option<u16> {
    match (instr.opcode, instr.operand) {
        (OpCode::Ldloc0, _) => Some(0),
        (OpCode::Ldloc1, _) => Some(1),
        (OpCode::Ldloc2, _) => Some(2),
        (OpCode::Ldloc3, _) => Some(3),
        (OpCode::LdlocS | OpCode::Ldloc, Operand::Var(i)) => Some(i),
        _ => None,
    }
}

/// How many `tail.` prefixes follow a `constrained.` prefix (`constrained. T tail.
/// callvirt M` is valid IL, the runtime takes the prefixes in either order).
fn constrained_tails(body: &MethodBody) -> usize {
    body.instrs
        .opcodes()
        .filter(|&(id, op)| {
            op == OpCode::Tail
                && body
                    .instrs
                    .prev(id)
                    .is_some_and(|p| body.instrs.opcode(p) == OpCode::Constrained)
        })
        .count()
}

/// The code bytes of the entry-only instrumenter's entry code for method `id`:
/// `ldsfld token 0; brfalse.s END; ldc.i4 id; call HOOK; END:`.
fn entry_code(id: i32) -> Vec<u8> {
    let mut b = MethodBody::new();
    b.append(Instruction::with_token(OpCode::Ldsfld, MODULE_TOKENS[0]));
    let branch = b.append(Instruction::simple(OpCode::Nop));
    b.append(Instruction::ldc_i4(id));
    b.append(Instruction::with_token(OpCode::Call, HOOK));
    let end = b.append(Instruction::simple(OpCode::Ret));
    b.replace(branch, Instruction::branch(OpCode::BrfalseS, end))
        .expect("replaces");
    let mut bytes = Vec::new();
    Encoder::new().encode(&b, &mut bytes).expect("encodes");
    let code = code_bytes(&bytes);
    code[..code.len() - 1].to_vec()
}

/// The listing of `body`, for failure messages.
fn listing(body: &MethodBody) -> String {
    ilrewrite::disasm::disassemble(body, &ilrewrite::metadata::NoMetadata, None)
        .map_or_else(|e| e.to_string(), |l| l.text)
}

/// Inserts a `tail.` before every call followed by `ret` that has none; returns how many.
fn insert_tail_prefixes(body: &mut MethodBody) -> usize {
    let calls: Vec<InstrId> = body
        .instrs
        .opcodes()
        .filter(|&(id, op)| {
            is_call(op)
                && body
                    .instrs
                    .next(id)
                    .is_some_and(|r| body.instrs.opcode(r) == OpCode::Ret)
                && body
                    .instrs
                    .prev(id)
                    .is_none_or(|p| body.instrs.opcode(p) != OpCode::Tail)
        })
        .map(|(id, _)| id)
        .collect();
    for &call in &calls {
        body.insert_before(call, Instruction::simple(OpCode::Tail), Incoming::Redirect)
            .expect("inserts before an instruction of the body");
    }
    calls.len()
}

thread_local! {
    static STATE: RefCell<(Decoder, Instrumenters, StackAnalyzer)> = RefCell::new((
        Decoder::new(),
        instrumenters(),
        StackAnalyzer::new(),
    ));
}

fuzz_target!(|data: &[u8]| {
    let [shape, flags, a, b, c, d, code @ ..] = data else {
        return;
    };
    let ret = RETURN_TYPES[usize::from(shape & 7)];
    let params = (shape >> 3) & 3;
    // DEFAULT calling convention (HASTHIS when bit 5 is set), `params` int32 parameters.
    let mut signature = vec![if shape & 0x20 != 0 { 0x20 } else { 0x00 }, params];
    signature.extend_from_slice(ret);
    signature.extend(std::iter::repeat_n(0x08, usize::from(params)));
    let locals = locals(flags & 7);
    let id = i32::from_le_bytes([*a, *b, *c, *d]);
    let returns_value = ret != [0x01];
    let return_kind = ReturnKind::value_if(returns_value);
    let (reencode, with_metadata) = (shape & 0x40 != 0, shape & 0x80 == 0);
    let insert_tails = flags & 0x08 != 0;
    let run = |kind: Kind| match kind {
        Kind::Keep => true,
        Kind::KeepWithSnippet => flags & 0x10 != 0,
        Kind::EntryOnly => flags & 0x20 != 0,
        Kind::Drop => flags & 0x40 != 0,
    };
    let resolver = Resolver(with_metadata.then(|| &*FAKE));

    STATE.with_borrow_mut(|(decoder, instrumenters, analyzer)| {
        let mut input = MethodBody::new();
        if decoder.decode_into(code, &mut input).is_err() {
            return;
        }
        if analyzer.analyze(&input, &resolver, return_kind).is_err() {
            return;
        }
        // The code bytes `input` was decoded from, if it is unedited.
        let mut input_code = Some(code_bytes(code).to_vec());
        if insert_tails && insert_tail_prefixes(&mut input) > 0 {
            input_code = None;
            if reencode {
                let Ok(bytes) = input.encode() else { return };
                input = MethodBody::decode(&bytes).expect("the encoding decodes");
                input_code = Some(code_bytes(&bytes).to_vec());
            }
            if analyzer.analyze(&input, &resolver, return_kind).is_err() {
                return;
            }
        }
        let encodes = input.encode().is_ok();
        let sites = tail_sites(&input);
        let prediction = predict(&input, &sites, with_metadata, returns_value);
        let originals = input
            .instrs
            .ids()
            .filter(|&i| input.original_offset(i).is_some())
            .count();
        let decoded_tails = sites
            .iter()
            .filter(|(t, _)| input.original_offset(*t).is_some())
            .count();
        let targets = branch_targets(&input);
        let constrained = constrained_tails(&input);
        let method = MethodContext {
            signature: &signature,
            locals: locals.as_deref(),
            id,
            tokens: &MODULE_TOKENS,
            module_id: None,
        };
        for (kind, instrumenter) in instrumenters.iter_mut() {
            let kind = *kind;
            if !run(kind) {
                continue;
            }
            let keeps = matches!(kind, Kind::Keep | Kind::KeepWithSnippet);
            let mut body = input.clone();
            let done = match instrumenter.instrument(&mut body, &method, &resolver) {
                Ok(done) => done,
                Err(
                    e @ (Error::Unsupported { .. }
                    | Error::EmptyBody
                    | Error::BadEhNesting { .. }
                    | Error::NotInBody { .. }
                    | Error::TailCallNotKept { .. }),
                ) if kind != Kind::EntryOnly => {
                    // Refused before any edit (an unsupported body, an invalid clause
                    // list in code the analysis does not reach, a tail call that cannot
                    // be kept).
                    if let Error::TailCallNotKept { offset, reason } = &e {
                        let (offset, reason) = (*offset, *reason);
                        assert!(keeps, "{kind:?} refused a tail call: {e}");
                        match prediction {
                            Prediction::Refuse(tail, r) => {
                                assert_eq!((reason, offset), (r, input.original_offset(tail)))
                            }
                            Prediction::Keep => panic!("refused a tail call it can keep: {e}"),
                            Prediction::Unknown => {}
                        }
                    }
                    assert_eq!(format!("{body:?}"), format!("{input:?}"), "{e}");
                    continue;
                }
                Err(e) => panic!("{kind:?}: a verified body failed to instrument: {e}"),
            };
            if keeps && let Prediction::Refuse(tail, reason) = prediction {
                panic!(
                    "kept the tail calls, but the one at {:?} cannot be: {reason:?}",
                    input.original_offset(tail)
                );
            }
            let (max_stack, removed, kept) = (
                done.max_stack,
                done.tail_prefixes_removed,
                done.tail_calls_kept,
            );
            let new_locals = done.new_locals_signature.map(<[u8]>::to_vec);
            match kind {
                Kind::EntryOnly => {
                    assert_eq!((removed, kept, new_locals.as_deref()), (0, 0, None));
                }
                Kind::Drop => {
                    assert_eq!((removed, kept), (sites.len(), 0));
                    assert_eq!(new_locals.is_some(), returns_value);
                }
                Kind::Keep | Kind::KeepWithSnippet => {
                    assert_eq!((removed, kept), (0, sites.len()));
                    assert_eq!(new_locals.is_some(), returns_value || kept > 0);
                }
            }
            // The new LocalVarSig starts with the method's locals.
            let new_sig = new_locals.as_deref().map(|blob| {
                let sig = LocalVarSig::parse(blob).expect("the new LocalVarSig parses");
                let old =
                    LocalVarSig::parse(locals.as_deref().unwrap_or(&[0x07, 0x00])).expect("parses");
                assert_eq!(&sig.locals()[..old.len()], old.locals());
                sig
            });
            if new_sig.is_some() {
                body.local_var_sig = NEW_LOCALS;
            }
            let mut bytes = Vec::new();
            match instrumenter.encode(&body, &mut bytes) {
                Ok(_) => {}
                // The original's own odd instructions do not encode either.
                Err(_) if !encodes => continue,
                Err(e) => panic!("{kind:?}: an instrumented body of an encodable one failed: {e}"),
            }
            let map = instrumenter.il_map(&body);
            let again = MethodBody::decode(&bytes).expect("the new bytes decode");
            let added = usize::from(kind != Kind::EntryOnly);
            assert_eq!(again.clauses.len(), input.clauses.len() + added);
            let analysis = analyzer
                .analyze(&again, &resolver, return_kind)
                .expect("the decoded rewrite verifies");
            assert_eq!(analysis.max_stack(), max_stack, "{kind:?}");
            match bytes[0] & 3 {
                // A tiny header states no max stack: 8 is implied.
                2 => assert!(max_stack <= 8, "{kind:?}"),
                _ => assert_eq!(again.max_stack, max_stack, "{kind:?}"),
            }

            // Every `tail.` is followed by a call and `ret`, all three unprotected.
            let again_sites = tail_sites(&again);
            assert_eq!(again_sites.len(), sites.len() - removed);
            let pos = again.positions();
            let inside = protected(&again, &pos);
            for &(tail, pair) in &again_sites {
                if kind == Kind::EntryOnly {
                    // Left as they were, whatever they are.
                    continue;
                }
                let (call, ret) = pair.expect("tail. call; ret");
                for i in [tail, call, ret] {
                    assert!(!inside[pos[i.index()] as usize], "a tail call protected");
                }
                // Each stub loads its operands from locals of the callee's types.
                if keeps
                    && let Some(Ok(types)) = expected_operands(
                        again.instrs.opcode(call),
                        again.instrs.token(call).unwrap_or(0),
                    )
                {
                    let sig = new_sig.as_ref().expect("a LocalVarSig with the operands");
                    let mut at = tail;
                    for ty in types.iter().rev() {
                        at = again.instrs.prev(at).expect("an operand load");
                        let local = ldloc_index(again.instrs.get(at)).expect("ldloc");
                        let local = sig.get(local).expect("a local of the new LocalVarSig");
                        assert_eq!(&local.ty, ty, "operand local");
                    }
                }
            }
            if keeps {
                assert_eq!(
                    constrained_tails(&again),
                    constrained,
                    "{kind:?}: constrained. no longer prefixes a tail call\n{}\n{}",
                    listing(&input),
                    listing(&again)
                );
            }
            if kind == Kind::KeepWithSnippet {
                let tail_hooks = again
                    .instrs
                    .iter()
                    .filter(|(_, i)| i.opcode == OpCode::Call)
                    .filter(|(_, i)| i.operand == Operand::Token(TAIL_HOOK))
                    .count();
                assert_eq!(tail_hooks, usize::from(kept > 0));
            }

            // The IL map: one entry per surviving original instruction, old offsets
            // rising; new offsets rising, but for the kept calls and their moved `ret`s,
            // which are in the stubs after every handler.
            let entries = map.entries();
            let dropped = if kind == Kind::Drop { decoded_tails } else { 0 };
            assert_eq!(entries.len(), originals - dropped, "IL map entries");
            assert!(
                entries
                    .windows(2)
                    .all(|w| w[0].old_offset < w[1].old_offset)
            );
            let moved: HashSet<u32> = match keeps {
                true => sites
                    .iter()
                    .filter_map(|(_, pair)| *pair)
                    .flat_map(|(call, ret)| {
                        let ret = (!targets[ret.index()]).then_some(ret);
                        [Some(call), ret].into_iter().flatten()
                    })
                    .filter_map(|i| input.original_offset(i))
                    .collect(),
                false => HashSet::new(),
            };
            let handlers_end = again
                .clauses
                .iter()
                .filter_map(|c| again.original_offset(c.handler_last))
                .max();
            let mut in_order = entries.iter().filter(|e| !moved.contains(&e.old_offset));
            let mut last = in_order.next().map(|e| e.new_offset);
            for e in in_order {
                assert!(Some(e.new_offset) > last, "IL map new offsets");
                last = Some(e.new_offset);
            }
            for e in entries.iter().filter(|e| moved.contains(&e.old_offset)) {
                assert!(
                    Some(e.new_offset) > handlers_end,
                    "{kind:?}: a kept call or ret not in a stub: {e:?} in {entries:?}\n{}",
                    listing(&again)
                );
            }
            assert_eq!(
                entries
                    .iter()
                    .filter(|e| moved.contains(&e.old_offset))
                    .count(),
                moved.len()
            );
            // Exactly: each kept call maps to the start of its stub (the loads of its
            // operands), its moved `ret` to the stub's `ret`; the stubs are in site order.
            if keeps {
                for (&(_, site), &(stub, pair)) in sites.iter().zip(&again_sites) {
                    let ((call, ret), (_, new_ret)) = (site.expect("kept"), pair.expect("kept"));
                    let mut start = stub;
                    while let Some(p) = again.instrs.prev(start)
                        && ldloc_index(again.instrs.get(p)).is_some()
                    {
                        start = p;
                    }
                    let new = |i| again.original_offset(i);
                    if let Some(old) = input.original_offset(call) {
                        assert_eq!(map.map(old), new(start), "{kind:?}: a kept call's entry");
                    }
                    if let Some(old) = input.original_offset(ret)
                        && !targets[ret.index()]
                    {
                        assert_eq!(map.map(old), new(new_ret), "{kind:?}: a moved ret's entry");
                    }
                }
            }

            if kind == Kind::EntryOnly
                && let Some(original) = &input_code
            {
                // The entry code, then the original code byte for byte.
                let mut expected = entry_code(id);
                expected.extend_from_slice(original);
                assert_eq!(code_bytes(&bytes), &expected[..], "entry code + original");
            }
        }
    });
});

//! Tail calls kept through a try/finally wrap.
//!
//! A `tail.` call cannot leave a protected region, and removing its prefix turns a
//! program that recurses a million calls deep in constant stack into one that
//! overflows it. So the wrap moves each tail call out of the try block instead: at the
//! call site the call's operands (`this`, the arguments, `calli`'s function pointer)
//! are stored into new locals and a `leave` goes to a stub placed after the handlers,
//! which loads them back and makes the same `tail.` call. The `finally` runs on that
//! `leave`, so the exit code runs before the callee starts, as the runtime's own
//! tail-call notification does.
//!
//! The locals' types come from the callee's signature, read through
//! [`MetadataSource`], with generic substitution: `!n` from the instantiation of the
//! callee's declaring type (a MemberRef whose parent is a TypeSpec), `!!n` from its
//! MethodSpec; a `calli` from its StandAloneSig. `this` is an object reference
//! (`object`) for `callvirt` and for methods of reference types, a managed pointer to
//! the value type for `call` of a value type's method. What cannot be typed is refused
//! with a [`TailCallRefusal`], before any edit.

use crate::body::{ClauseKind, MethodBody};
use crate::error::{Error, Result, TailCallRefusal};
use crate::graph::{InstrId, Operand};
use crate::metadata::{MetadataSource, table, token_table};
use crate::opcode::OpCode;
use crate::sig::compressed::SigReader;
use crate::sig::{CallingConvention, MethodSig, TypeSig};
use smallvec::SmallVec;

/// What a wrapping transform does with `tail.` calls, which cannot stay inside the
/// protected region it adds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum TailCallPolicy {
    /// Keep every tail call a tail call: it leaves the protected region through a stub
    /// (see [`crate::transform::Instrumenter`]). A method with a tail call that cannot
    /// be kept is refused with [`Error::TailCallNotKept`] and left as it was.
    #[default]
    Keep,
    /// Refuse every method with a `tail.` prefix ([`TailCallRefusal::PolicyRefuses`]),
    /// leaving it as it was.
    Refuse,
    /// Remove the `tail.` prefixes, so that the calls become ordinary calls inside the
    /// protected region. This changes what the program does: the stack then grows with
    /// the depth of the tail recursion, and a program that recursed in constant stack
    /// can die of a stack overflow. Only for users who know their tail calls are shallow.
    DropPrefix,
}

/// One tail call to keep.
#[derive(Debug, Clone)]
pub(crate) struct Site {
    /// The `tail.` prefix; at the site it is replaced by the first instruction that
    /// stores the operands (so branches to it, and its original offset, stay there).
    pub tail: InstrId,
    /// The call, moved to the stub.
    pub call: InstrId,
    /// The `ret` after the call: moved to the stub, unless a branch targets it
    /// (`ret_stays`), in which case it stays a return of the method and the stub gets a
    /// `ret` of its own.
    pub ret: InstrId,
    /// Whether a branch targets the `ret`.
    pub ret_stays: bool,
    /// The locals holding the operands, in the order the call pops them from the
    /// bottom: `this`, the arguments, then `calli`'s function pointer.
    pub locals: SmallVec<[u16; 6]>,
    /// The `leave` that ends the site once wrapped (set by the wrap).
    pub leave: Option<InstrId>,
}

/// The tail calls of one body, planned before any edit.
#[derive(Debug, Clone, Default)]
pub(crate) struct TailPlan {
    /// The sites, in list order.
    pub sites: SmallVec<[Site; 2]>,
    /// The local that tells the `finally` a tail-call exit from any other, when the
    /// tail-call exit runs code of its own.
    pub flag: Option<u16>,
}

/// The types of the new locals a plan needs, each encoded as a local type.
#[derive(Debug, Default)]
pub(crate) struct NewLocals {
    /// Encoded types, one after another.
    bytes: Vec<u8>,
    /// End of each type in `bytes`.
    ends: Vec<usize>,
}

impl NewLocals {
    /// The types, in order.
    pub(crate) fn types(&self) -> SmallVec<[&[u8]; 8]> {
        let mut start = 0;
        self.ends
            .iter()
            .map(|&end| {
                let t = &self.bytes[start..end];
                start = end;
                t
            })
            .collect()
    }

    /// Forgets every type.
    pub(crate) fn clear(&mut self) {
        self.bytes.clear();
        self.ends.clear();
    }

    fn len(&self) -> usize {
        self.ends.len()
    }

    fn get(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.bytes[start..self.ends[i]]
    }

    fn push(&mut self, ty: &[u8]) {
        self.bytes.extend_from_slice(ty);
        self.ends.push(self.bytes.len());
    }
}

/// The `int32` local type of the tail-call flag.
const FLAG_TYPE: &[u8] = &[0x08];

/// Plans keeping the tail calls `tails` (the `tail.` prefixes of `body`, in list order)
/// of a body whose locals number `first_local` before the new ones: checks each site,
/// types its operands through `metadata`, and gives each operand a new local (locals of
/// one type are shared between sites). With `flag`, one more `int32` local is planned
/// for [`TailPlan::flag`]. The new locals' types go to `locals`, in index order from
/// `first_local`. `returns_value` says whether the method returns a value.
///
/// # Errors
/// [`Error::TailCallNotKept`] naming the first site that cannot be kept and why. Nothing
/// is edited.
pub(crate) fn plan(
    body: &MethodBody,
    tails: &[InstrId],
    metadata: Option<&dyn MetadataSource>,
    first_local: usize,
    flag: bool,
    returns_value: bool,
    locals: &mut NewLocals,
) -> Result<TailPlan> {
    let refuse = |tail: InstrId, reason| Error::TailCallNotKept {
        offset: body.original_offset(tail),
        reason,
    };
    // Where the clauses' regions are, and which instructions branches name: one pass
    // each, for the rare bodies with tail calls.
    let regions = (!body.clauses.is_empty()).then(|| region_depths(body));
    let targets = branch_targets(body);
    let mut plan = TailPlan::default();
    let mut types: SmallVec<[Vec<u8>; 6]> = SmallVec::new();
    for &tail in tails {
        // `constrained. T` (or `no.`) before or after the `tail.` would have to move to
        // the stub with it, and types `this` differently: not done.
        let prefixed = |id: Option<InstrId>| id.is_some_and(|p| body.instrs.opcode(p).is_prefix());
        if prefixed(body.instrs.prev(tail)) || prefixed(body.instrs.next(tail)) {
            return Err(refuse(tail, TailCallRefusal::OtherPrefix));
        }
        let (call, ret) =
            call_then_ret(body, tail).ok_or(refuse(tail, TailCallRefusal::NotCallThenRet))?;
        if let Some((pos, inside)) = &regions
            && [tail, call, ret]
                .iter()
                .any(|id| inside[pos[id.index()] as usize])
        {
            return Err(refuse(tail, TailCallRefusal::InProtectedRegion));
        }
        if targets[call.index()] {
            return Err(refuse(tail, TailCallRefusal::BranchIntoCall));
        }
        let metadata = metadata.ok_or(refuse(tail, TailCallRefusal::NoMetadata))?;
        let opcode = body.instrs.opcode(call);
        let token = body.instrs.token(call).unwrap_or(0);
        types.clear();
        let callee_returns =
            operand_types(metadata, opcode, token, &mut types).map_err(|r| refuse(tail, r))?;
        // The `ret` after a `void` callee returns a value from below the call's operands:
        // the stack held more than the operands (invalid IL the stack rules let through).
        if returns_value && !callee_returns {
            return Err(refuse(tail, TailCallRefusal::ExtraStackValues));
        }
        // Each operand gets a local of its type not yet used by this site.
        let mut used: SmallVec<[bool; 16]> = SmallVec::from_elem(false, locals.len());
        let mut site_locals = SmallVec::new();
        for ty in &types {
            let reuse = (0..locals.len()).find(|&i| !used[i] && locals.get(i) == &ty[..]);
            let i = match reuse {
                Some(i) => i,
                None => {
                    locals.push(ty);
                    used.push(false);
                    locals.len() - 1
                }
            };
            used[i] = true;
            let index = u16::try_from(first_local + i)
                .map_err(|_| refuse(tail, TailCallRefusal::TooManyLocals))?;
            site_locals.push(index);
        }
        plan.sites.push(Site {
            tail,
            call,
            ret,
            ret_stays: targets[ret.index()],
            locals: site_locals,
            leave: None,
        });
    }
    if flag && !plan.sites.is_empty() {
        locals.push(FLAG_TYPE);
        plan.flag = u16::try_from(first_local + locals.len() - 1).ok();
        if plan.flag.is_none() {
            return Err(refuse(tails[0], TailCallRefusal::TooManyLocals));
        }
    }
    Ok(plan)
}

/// The call and `ret` that follow `tail` in list order, if they are a call and a `ret`.
fn call_then_ret(body: &MethodBody, tail: InstrId) -> Option<(InstrId, InstrId)> {
    let call = body.instrs.next(tail)?;
    let ret = body.instrs.next(call)?;
    let is_call = matches!(
        body.instrs.opcode(call),
        OpCode::Call | OpCode::Callvirt | OpCode::Calli
    );
    (is_call && body.instrs.opcode(ret) == OpCode::Ret).then_some((call, ret))
}

/// The position of every instruction (indexed by id) and, by position, whether it lies
/// in a region of any clause (try, handler or filter).
fn region_depths(body: &MethodBody) -> (Vec<u32>, Vec<bool>) {
    let pos = body.positions();
    let mut inside = vec![false; body.instrs.len()];
    let at = |id: InstrId| pos.get(id.index()).copied().unwrap_or(u32::MAX) as usize;
    let mut mark = |start: usize, last: usize| {
        if start <= last && last < inside.len() {
            inside[start..=last].iter_mut().for_each(|b| *b = true);
        }
    };
    for c in &body.clauses {
        mark(at(c.try_start), at(c.try_last));
        mark(at(c.handler_start), at(c.handler_last));
        if let ClauseKind::Filter(f) = c.kind {
            mark(at(f), at(c.handler_start).wrapping_sub(1));
        }
    }
    (pos, inside)
}

/// Whether each id (by index) is named by a branch or switch operand.
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

/// The local types of the values `opcode` with operand `token` pops, bottom first:
/// `this` (unless explicit), the parameters, and for `calli` the function pointer.
/// Returns whether the callee returns a value.
fn operand_types(
    md: &dyn MetadataSource,
    opcode: OpCode,
    token: u32,
    out: &mut SmallVec<[Vec<u8>; 6]>,
) -> std::result::Result<bool, TailCallRefusal> {
    use TailCallRefusal::*;
    let unreadable = unreadable_or_too_deep;
    // The method named, and the instantiation of its generic parameters.
    let (method, method_args) = match token_table(token) {
        table::METHOD_SPEC => {
            let parent = md.method_spec_parent(token).map_err(unreadable)?;
            let args = instantiation(md.signature(token).map_err(unreadable)?)?;
            (parent, Some(args))
        }
        _ => (token, None),
    };
    let sig = MethodSig::parse(md.signature(method).map_err(unreadable)?).map_err(unreadable)?;
    if sig.calling_convention == CallingConvention::VarArg || sig.sentinel.is_some() {
        return Err(VarArg);
    }
    // The declaring type, for `!n` and for the kind of `this`.
    let parent = match (opcode, token_table(method)) {
        (OpCode::Calli, _) => None,
        (_, table::METHOD_DEF | table::MEMBER_REF) => {
            Some(md.member_parent(method).map_err(unreadable)?)
        }
        _ => return Err(UnreadableSignature),
    };
    let parent_type = match parent {
        Some(p) if token_table(p) == table::TYPE_SPEC => {
            Some(TypeSig::parse(md.signature(p).map_err(unreadable)?).map_err(unreadable)?)
        }
        _ => None,
    };
    let type_args = match &parent_type {
        Some(TypeSig::GenericInst { args, .. }) => Some(&args[..]),
        _ => None,
    };
    let method_args = method_args.as_deref();
    if sig.has_this && !sig.explicit_this {
        let this = this_type(md, opcode, parent, parent_type.as_ref())?;
        out.push(encode(&this)?);
    }
    for param in &sig.params {
        out.push(encode(&substitute(param, type_args, method_args)?)?);
    }
    if opcode == OpCode::Calli {
        out.push(encode(&TypeSig::I)?);
    }
    Ok(sig.return_type.strip_modifiers() != &TypeSig::Void)
}

/// The refusal for a signature that cannot be read: [`TailCallRefusal::TooDeep`] when it
/// nests types past the crate's limit, else [`TailCallRefusal::UnreadableSignature`].
fn unreadable_or_too_deep(e: Error) -> TailCallRefusal {
    match e {
        Error::TooDeep { .. } => TailCallRefusal::TooDeep,
        _ => TailCallRefusal::UnreadableSignature,
    }
}

/// The type arguments of a MethodSpec instantiation blob (`GENERICINST count types`).
fn instantiation(blob: &[u8]) -> std::result::Result<SmallVec<[TypeSig; 2]>, TailCallRefusal> {
    let unreadable = unreadable_or_too_deep;
    let mut r = SigReader::new(blob);
    if r.read_u8().map_err(unreadable)? != 0x0A {
        return Err(TailCallRefusal::UnreadableSignature);
    }
    let count = r.read_compressed_u32().map_err(unreadable)?;
    let mut args = SmallVec::new();
    for _ in 0..count {
        args.push(TypeSig::read(&mut r).map_err(unreadable)?);
    }
    r.expect_end().map_err(unreadable)?;
    Ok(args)
}

/// The local type of `this` for an instance call: `object` for `callvirt` and for the
/// methods of reference types (every object reference is one), a managed pointer to
/// the type for `call` of a value type's method.
fn this_type(
    md: &dyn MetadataSource,
    opcode: OpCode,
    parent: Option<u32>,
    parent_type: Option<&TypeSig>,
) -> std::result::Result<TypeSig, TailCallRefusal> {
    use TailCallRefusal::*;
    let by_ref = |t: TypeSig| TypeSig::ByRef(Box::new(t));
    match (opcode, parent) {
        // `callvirt` takes an object reference (ECMA-335 III.4.2).
        (OpCode::Callvirt, _) => Ok(TypeSig::Object),
        (OpCode::Call, Some(parent)) => match token_table(parent) {
            table::TYPE_SPEC => match parent_type.map(TypeSig::strip_modifiers) {
                Some(
                    t @ (TypeSig::GenericInst {
                        is_value_type: true,
                        ..
                    }
                    | TypeSig::ValueType(_)),
                ) => Ok(by_ref(t.clone())),
                Some(
                    TypeSig::GenericInst { .. }
                    | TypeSig::Class(_)
                    | TypeSig::SzArray(_)
                    | TypeSig::Array(_)
                    | TypeSig::Object
                    | TypeSig::String,
                ) => Ok(TypeSig::Object),
                _ => Err(UnknownThisKind),
            },
            table::TYPE_DEF => match is_value_type(md, parent).map_err(|_| UnreadableSignature)? {
                // A generic type named without its instantiation: no type to point to.
                true if md.generic_param_name(parent, 0).is_some() => Err(UnboundGenericParameter),
                true => Ok(by_ref(TypeSig::ValueType(parent))),
                false => Ok(TypeSig::Object),
            },
            _ => Err(UnknownThisKind),
        },
        _ => Err(UnknownThisKind),
    }
}

/// Whether TypeDef `type_def` is a value type: it extends `System.ValueType` (and is not
/// `System.Enum`, which does too) or `System.Enum`.
fn is_value_type(md: &dyn MetadataSource, type_def: u32) -> Result<bool> {
    let Some(base) = md.type_extends(type_def)? else {
        return Ok(false);
    };
    if !matches!(token_table(base), table::TYPE_DEF | table::TYPE_REF) {
        return Ok(false);
    }
    let base = md.type_name(base)?;
    if base.namespace != "System" || base.enclosing.is_some() {
        return Ok(false);
    }
    Ok(match base.name.as_str() {
        "Enum" => true,
        "ValueType" => {
            let me = md.type_name(type_def)?;
            !(me.namespace == "System" && me.name == "Enum" && me.enclosing.is_none())
        }
        _ => false,
    })
}

/// `t` with `!n` replaced by `type_args[n]` and `!!n` by `method_args[n]`.
fn substitute(
    t: &TypeSig,
    type_args: Option<&[TypeSig]>,
    method_args: Option<&[TypeSig]>,
) -> std::result::Result<TypeSig, TailCallRefusal> {
    let sub = |t: &TypeSig| substitute(t, type_args, method_args);
    let boxed = |t: &TypeSig| sub(t).map(Box::new);
    let arg = |args: Option<&[TypeSig]>, n: u32| {
        args.and_then(|a| a.get(n as usize))
            .cloned()
            .ok_or(TailCallRefusal::UnboundGenericParameter)
    };
    Ok(match t {
        TypeSig::Var(n) => arg(type_args, *n)?,
        TypeSig::MVar(n) => arg(method_args, *n)?,
        TypeSig::Ptr(inner) => TypeSig::Ptr(boxed(inner)?),
        TypeSig::ByRef(inner) => TypeSig::ByRef(boxed(inner)?),
        TypeSig::SzArray(inner) => TypeSig::SzArray(boxed(inner)?),
        TypeSig::Pinned(inner) => TypeSig::Pinned(boxed(inner)?),
        TypeSig::Array(a) => {
            let mut a = a.clone();
            a.elem = sub(&a.elem)?;
            TypeSig::Array(a)
        }
        TypeSig::GenericInst {
            is_value_type,
            token,
            args,
        } => TypeSig::GenericInst {
            is_value_type: *is_value_type,
            token: *token,
            args: args
                .iter()
                .map(sub)
                .collect::<std::result::Result<_, _>>()?,
        },
        TypeSig::Modified {
            required,
            token,
            inner,
        } => TypeSig::Modified {
            required: *required,
            token: *token,
            inner: boxed(inner)?,
        },
        TypeSig::FnPtr(m) => {
            let mut m = m.clone();
            m.return_type = sub(&m.return_type)?;
            m.params = m
                .params
                .iter()
                .map(sub)
                .collect::<std::result::Result<_, _>>()?;
            TypeSig::FnPtr(m)
        }
        other => other.clone(),
    })
}

/// `t` encoded as a local's type.
fn encode(t: &TypeSig) -> std::result::Result<Vec<u8>, TailCallRefusal> {
    t.to_bytes().map_err(|_| TailCallRefusal::UnstorableOperand)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::{
        CallEffect, CallSiteResolver, MetadataResolver, ReturnKind, StackAnalyzer,
    };
    use crate::graph::Instruction;
    use crate::metadata::{MemberName, TypeName};
    use crate::transform::{InstrumentationCode, Instrumenter, MethodContext, Snippet};
    use std::collections::HashMap;

    /// Metadata held in maps: signatures, parents, type names and bases.
    #[derive(Default)]
    struct Fake {
        sigs: HashMap<u32, Vec<u8>>,
        parents: HashMap<u32, u32>,
        spec_parents: HashMap<u32, u32>,
        names: HashMap<u32, (&'static str, &'static str)>,
        extends: HashMap<u32, u32>,
    }

    impl MetadataSource for Fake {
        fn signature(&self, token: u32) -> Result<&[u8]> {
            self.sigs
                .get(&token)
                .map(|s| &s[..])
                .ok_or(Error::BadToken {
                    token,
                    what: "unknown",
                })
        }
        fn method_spec_parent(&self, token: u32) -> Result<u32> {
            self.spec_parents
                .get(&token)
                .copied()
                .ok_or(Error::BadToken {
                    token,
                    what: "unknown",
                })
        }
        fn member_parent(&self, token: u32) -> Result<u32> {
            self.parents.get(&token).copied().ok_or(Error::BadToken {
                token,
                what: "unknown",
            })
        }
        fn type_extends(&self, type_def: u32) -> Result<Option<u32>> {
            Ok(self.extends.get(&type_def).copied())
        }
        fn type_name(&self, token: u32) -> Result<TypeName> {
            let (namespace, name) = self.names.get(&token).ok_or(Error::BadToken {
                token,
                what: "unknown",
            })?;
            Ok(TypeName {
                namespace: namespace.to_string(),
                name: name.to_string(),
                ..TypeName::default()
            })
        }
        fn member_name(&self, token: u32) -> Result<MemberName> {
            Ok(MemberName {
                owner: self.parents.get(&token).copied(),
                name: format!("m{token:x}"),
            })
        }
    }

    const ENTER: u32 = 0x0AFF_FFF0;
    const EXIT: u32 = 0x0AFF_FFF1;
    const TAIL_EXIT: u32 = 0x0AFF_FFF2;
    /// A class.
    const CLASS: u32 = 0x0200_0002;
    /// A value type (extends System.ValueType).
    const STRUCT: u32 = 0x0200_0003;
    const VALUE_TYPE: u32 = 0x0100_0001;
    /// A type of another module.
    const EXTERNAL: u32 = 0x0100_0002;
    /// static int32 CLASS::M(int32, int64)
    const STATIC: u32 = 0x0600_0001;
    /// instance void STRUCT::S(float64)
    const STRUCT_METHOD: u32 = 0x0600_0002;
    /// instance void class G<int64>::M<string>(!0, !!0): MethodSpec of a MemberRef.
    const GENERIC: u32 = 0x2B00_0001;
    const GENERIC_REF: u32 = 0x0A00_0001;
    const G_INT64: u32 = 0x1B00_0001;
    /// instance void EXTERNAL::X()
    const EXTERNAL_METHOD: u32 = 0x0A00_0002;
    /// vararg void CLASS::V(int32, ..., int32)
    const VARARG: u32 = 0x0A00_0003;
    /// int32(int32): a calli signature.
    const CALLI_SIG: u32 = 0x1100_0001;
    /// static void CLASS::Open(!0): a MethodDef naming a generic parameter.
    const OPEN: u32 = 0x0600_0003;
    /// static void CLASS::V(float64)
    const STRUCT_STATIC_VOID: u32 = 0x0600_0004;
    /// static void CLASS::D(int32[][]...[]), the array 300 deep.
    const DEEP: u32 = 0x0600_0005;

    fn metadata() -> Fake {
        let mut m = Fake::default();
        m.sigs.insert(STATIC, vec![0x00, 0x02, 0x08, 0x08, 0x0A]);
        m.parents.insert(STATIC, CLASS);
        m.sigs.insert(STRUCT_METHOD, vec![0x20, 0x01, 0x01, 0x0D]);
        m.parents.insert(STRUCT_METHOD, STRUCT);
        m.extends.insert(STRUCT, VALUE_TYPE);
        m.names.insert(VALUE_TYPE, ("System", "ValueType"));
        m.names.insert(STRUCT, ("N", "S"));
        m.names.insert(CLASS, ("N", "C"));
        // GENERIC | HASTHIS, 1 generic param, 2 params, void (!0, !!0)
        m.sigs.insert(
            GENERIC_REF,
            vec![0x30, 0x01, 0x02, 0x01, 0x13, 0x00, 0x1E, 0x00],
        );
        m.parents.insert(GENERIC_REF, G_INT64);
        // GENERICINST CLASS TypeDef(2) 1 I8
        m.sigs.insert(G_INT64, vec![0x15, 0x12, 0x08, 0x01, 0x0A]);
        m.spec_parents.insert(GENERIC, GENERIC_REF);
        m.sigs.insert(GENERIC, vec![0x0A, 0x01, 0x0E]);
        m.sigs.insert(EXTERNAL_METHOD, vec![0x20, 0x00, 0x01]);
        m.parents.insert(EXTERNAL_METHOD, EXTERNAL);
        m.sigs
            .insert(VARARG, vec![0x05, 0x02, 0x01, 0x08, 0x41, 0x08]);
        m.parents.insert(VARARG, CLASS);
        m.sigs.insert(CALLI_SIG, vec![0x00, 0x01, 0x08, 0x08]);
        m.sigs.insert(OPEN, vec![0x00, 0x01, 0x01, 0x13, 0x00]);
        m.parents.insert(OPEN, CLASS);
        m.sigs
            .insert(STRUCT_STATIC_VOID, vec![0x00, 0x01, 0x01, 0x0D]);
        m.parents.insert(STRUCT_STATIC_VOID, CLASS);
        let mut deep = vec![0x00, 0x01, 0x01];
        deep.extend(std::iter::repeat_n(0x1D, 300));
        deep.push(0x08);
        m.sigs.insert(DEEP, deep);
        m.parents.insert(DEEP, CLASS);
        m
    }

    /// Resolves the hooks (one pop each) and every other call through the metadata.
    struct Resolver(MetadataResolver<Fake>, bool);

    impl CallSiteResolver for Resolver {
        fn call_effect(&self, opcode: OpCode, token: u32) -> Result<CallEffect> {
            match token {
                ENTER | EXIT | TAIL_EXIT => Ok(CallEffect { pops: 1, pushes: 0 }),
                _ => self.0.call_effect(opcode, token),
            }
        }
        fn metadata(&self) -> Option<&dyn MetadataSource> {
            self.1.then(|| self.0.metadata() as &dyn MetadataSource)
        }
    }

    fn resolver() -> Resolver {
        Resolver(MetadataResolver::new(metadata()), true)
    }

    fn hook(token: u32) -> Snippet {
        let mut b = Snippet::builder();
        b.method_id();
        b.push(Instruction::with_token(OpCode::Call, token));
        b.finish().unwrap()
    }

    fn instrumenter(tail_exit: bool) -> Instrumenter {
        Instrumenter::new(InstrumentationCode {
            entry: hook(ENTER),
            exit: hook(EXIT),
            tail_call: tail_exit.then(|| hook(TAIL_EXIT)),
            ..Default::default()
        })
        .unwrap()
    }

    /// A body from instructions (branch targets are positions).
    fn body(code: &[Instruction]) -> MethodBody {
        let mut b = MethodBody::new();
        for &i in code {
            b.append(i);
        }
        let mut bytes = Vec::new();
        crate::body::Encoder::new().encode(&b, &mut bytes).unwrap();
        MethodBody::decode(&bytes).unwrap()
    }

    fn op(opcode: OpCode) -> Instruction {
        Instruction::simple(opcode)
    }

    fn call(opcode: OpCode, token: u32) -> Instruction {
        Instruction::with_token(opcode, token)
    }

    /// The listing of `body` once encoded and decoded again, checked to verify with the
    /// max stack it states and to keep every `tail.` outside all protected regions,
    /// followed by its call and `ret`.
    fn encoded(inst: &mut Instrumenter, body: &MethodBody, returns: ReturnKind) -> String {
        let mut bytes = Vec::new();
        inst.encode(body, &mut bytes).unwrap();
        let again = MethodBody::decode(&bytes).unwrap();
        let mut analyzer = StackAnalyzer::new();
        let analysis = analyzer.analyze(&again, &resolver(), returns).unwrap();
        assert_eq!(analysis.max_stack(), again.max_stack);
        let (pos, inside) = region_depths(&again);
        for (id, _) in again
            .instrs
            .iter()
            .filter(|(_, i)| i.opcode == OpCode::Tail)
        {
            let (call, ret) = call_then_ret(&again, id).expect("tail. call; ret");
            for i in [id, call, ret] {
                assert!(!inside[pos[i.index()] as usize], "{i:?} protected");
            }
        }
        crate::disasm::disassemble(&again, &crate::metadata::NoMetadata, None)
            .unwrap()
            .text
    }

    fn context(signature: &[u8], locals: Option<&[u8]>) -> (Vec<u8>, Option<Vec<u8>>) {
        (signature.to_vec(), locals.map(<[u8]>::to_vec))
    }

    /// `static int32 M(int32 a, int64 b) => tail. call STATIC(a, b)`: the call moves to
    /// a stub after the finally, its operands through new locals after the return
    /// value's, and the IL map sends the site to the prefix's offset and the stub to the
    /// call's.
    #[test]
    fn a_static_tail_call_leaves_through_a_stub() {
        let mut b = body(&[
            Instruction::ldarg(0),
            Instruction::ldarg(1),
            op(OpCode::Tail),
            call(OpCode::Call, STATIC),
            op(OpCode::Ret),
        ]);
        let (sig, _) = context(&[0x00, 0x02, 0x08, 0x08, 0x0A], None);
        let method = MethodContext {
            signature: &sig,
            locals: None,
            id: 5,
            tokens: &[],
            module_id: None,
        };
        let mut inst = instrumenter(false);
        let done = inst.instrument(&mut b, &method, &resolver()).unwrap();
        assert_eq!(done.tail_calls_kept, 1);
        assert_eq!(done.tail_prefixes_removed, 0);
        // The return local (int32), then the operands (int32, int64).
        assert_eq!(
            done.new_locals_signature,
            Some(&[0x07, 0x03, 0x08, 0x08, 0x0A][..])
        );
        b.local_var_sig = 0x1100_0009;
        let text = encoded(&mut inst, &b, ReturnKind::Value);
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        let stub = lines.iter().position(|l| l.contains("tail.")).expect(&text);
        assert!(
            lines[stub - 2].ends_with("ldloc.1") && lines[stub - 1].ends_with("ldloc.2"),
            "{text}"
        );
        assert!(
            lines[stub + 1].contains("call") && lines[stub + 2].ends_with("ret"),
            "{text}"
        );
        assert!(
            text.contains("stloc.2") && text.contains("stloc.1"),
            "{text}"
        );
        let map = inst.il_map(&b);
        // ldarg.0 ldarg.1 at 0, 1; tail. at 2; call at 4; ret at 9.
        let (site, stub_at) = (map.map(2).unwrap(), map.map(4).unwrap());
        assert!(site < stub_at);
        assert_eq!(map.map(9).map(|r| r > stub_at), Some(true));
        assert_eq!(map.entries().len(), 5);
    }

    /// The operand types come from the callee's declaration with `!0` from the
    /// TypeSpec's instantiation and `!!0` from the MethodSpec's; `this` of a
    /// `callvirt` is an object reference.
    #[test]
    fn generic_operands_are_substituted() {
        let mut b = body(&[
            op(OpCode::Ldnull),
            Instruction::ldc_i8(7),
            op(OpCode::Ldnull),
            op(OpCode::Tail),
            call(OpCode::Callvirt, GENERIC),
            op(OpCode::Ret),
        ]);
        let method = MethodContext {
            signature: &[0x00, 0x00, 0x01],
            locals: None,
            id: 5,
            tokens: &[],
            module_id: None,
        };
        let mut inst = instrumenter(false);
        let done = inst.instrument(&mut b, &method, &resolver()).unwrap();
        // object (this), int64 (!0 = int64), string (!!0 = string).
        assert_eq!(
            done.new_locals_signature,
            Some(&[0x07, 0x03, 0x1C, 0x0A, 0x0E][..])
        );
        b.local_var_sig = 0x1100_0009;
        encoded(&mut inst, &b, ReturnKind::Void);
    }

    /// `call` of a value type's instance method: `this` is a managed pointer to it.
    #[test]
    fn a_value_type_this_is_a_managed_pointer() {
        let mut b = body(&[
            Instruction::ldarga(0),
            Instruction::ldc_r8(1.5),
            op(OpCode::Tail),
            call(OpCode::Call, STRUCT_METHOD),
            op(OpCode::Ret),
        ]);
        let method = MethodContext {
            signature: &[0x00, 0x01, 0x01, 0x11, 0x0C],
            locals: None,
            id: 5,
            tokens: &[],
            module_id: None,
        };
        let mut inst = instrumenter(false);
        let done = inst.instrument(&mut b, &method, &resolver()).unwrap();
        // BYREF VALUETYPE TypeDef(3), float64.
        assert_eq!(
            done.new_locals_signature,
            Some(&[0x07, 0x02, 0x10, 0x11, 0x0C, 0x0D][..])
        );
    }

    /// `calli`: the StandAloneSig's parameters, then the function pointer (`native int`).
    /// With a tail-call snippet, a flag local tells the finally which exit it is.
    #[test]
    fn calli_and_a_tail_call_snippet() {
        let mut b = body(&[
            Instruction::ldarg(0),
            Instruction::ldarg(1),
            op(OpCode::Tail),
            call(OpCode::Calli, CALLI_SIG),
            op(OpCode::Ret),
        ]);
        let method = MethodContext {
            signature: &[0x00, 0x02, 0x08, 0x08, 0x18],
            locals: None,
            id: 5,
            tokens: &[],
            module_id: None,
        };
        let mut inst = instrumenter(true);
        let done = inst.instrument(&mut b, &method, &resolver()).unwrap();
        // return (int32), int32, native int, the flag (int32).
        assert_eq!(
            done.new_locals_signature,
            Some(&[0x07, 0x04, 0x08, 0x08, 0x18, 0x08][..])
        );
        b.local_var_sig = 0x1100_0009;
        let text = encoded(&mut inst, &b, ReturnKind::Value);
        // The flag starts false, is set at the site, and chooses the snippet.
        assert_eq!(text.matches("stloc.3").count(), 2, "{text}");
        assert!(
            text.contains("ldloc.3") && text.contains("brtrue"),
            "{text}"
        );
        assert_eq!(text.matches("endfinally").count(), 2, "{text}");
        assert!(text.contains("call       /* 0AFFFFF2 */"), "{text}");
    }

    /// A `ret` that a branch also reaches stays a return; the stub gets its own.
    #[test]
    fn a_shared_ret_stays() {
        // ldarg.0; ldarg.0; brtrue RET; pop; ldarg.0; ldc.i8 1; tail. call STATIC; RET: ret
        let mut b = MethodBody::new();
        b.append(Instruction::ldarg(0));
        b.append(Instruction::ldarg(0));
        let branch = b.append(op(OpCode::Nop));
        b.append(op(OpCode::Pop));
        b.append(Instruction::ldarg(0));
        b.append(Instruction::ldc_i8(1));
        b.append(op(OpCode::Tail));
        b.append(call(OpCode::Call, STATIC));
        let ret = b.append(op(OpCode::Ret));
        b.replace(branch, Instruction::branch(OpCode::Brtrue, ret))
            .unwrap();
        let mut bytes = Vec::new();
        crate::body::Encoder::new().encode(&b, &mut bytes).unwrap();
        let mut b = MethodBody::decode(&bytes).unwrap();
        let method = MethodContext {
            signature: &[0x00, 0x01, 0x08, 0x08],
            locals: None,
            id: 5,
            tokens: &[],
            module_id: None,
        };
        let mut inst = instrumenter(false);
        let done = inst.instrument(&mut b, &method, &resolver()).unwrap();
        assert_eq!((done.tail_calls_kept, done.rets), (1, 1));
        b.local_var_sig = 0x1100_0009;
        let text = encoded(&mut inst, &b, ReturnKind::Value);
        // The epilogue's `ret` and the stub's; the shared one became a leave.
        let rets = text
            .lines()
            .filter(|l| l.trim_end().ends_with(" ret"))
            .count();
        assert_eq!(rets, 2, "{text}");
    }

    /// The signature of a method without parameters returning nothing.
    const VOID_SIG: &[u8] = &[0x00, 0x00, 0x01];

    /// Every refusal leaves the body as it was.
    #[test]
    fn refusals_leave_the_body_as_it_was() {
        let cases: [(&[Instruction], TailCallRefusal, bool); 6] = [
            (
                &[
                    op(OpCode::Ldnull),
                    op(OpCode::Tail),
                    call(OpCode::Call, EXTERNAL_METHOD),
                    op(OpCode::Ret),
                ],
                TailCallRefusal::UnknownThisKind,
                true,
            ),
            (
                &[
                    Instruction::ldc_i4(1),
                    Instruction::ldc_i4(2),
                    op(OpCode::Tail),
                    call(OpCode::Call, VARARG),
                    op(OpCode::Ret),
                ],
                TailCallRefusal::VarArg,
                true,
            ),
            (
                &[
                    op(OpCode::Ldnull),
                    op(OpCode::Tail),
                    call(OpCode::Call, OPEN),
                    op(OpCode::Ret),
                ],
                TailCallRefusal::UnboundGenericParameter,
                true,
            ),
            (
                &[
                    Instruction::ldc_i4(1),
                    Instruction::ldc_i8(2),
                    op(OpCode::Tail),
                    call(OpCode::Call, STATIC),
                    op(OpCode::Pop),
                    op(OpCode::Ret),
                ],
                TailCallRefusal::NotCallThenRet,
                true,
            ),
            (
                &[
                    Instruction::ldc_i4(1),
                    Instruction::ldc_i8(2),
                    op(OpCode::Tail),
                    call(OpCode::Call, STATIC),
                    op(OpCode::Ret),
                ],
                TailCallRefusal::NoMetadata,
                false,
            ),
            (
                &[
                    Instruction::ldc_i4(1),
                    Instruction::ldc_i8(2),
                    op(OpCode::Tail),
                    call(OpCode::Call, 0x0A00_00FF),
                    op(OpCode::Ret),
                ],
                TailCallRefusal::UnreadableSignature,
                true,
            ),
        ];
        for (code, reason, with_metadata) in cases {
            refused(code, VOID_SIG, reason, with_metadata);
        }
    }

    /// A `constrained.` prefix beside `tail.` is refused, the body left as it was.
    #[test]
    fn other_prefixes_at_a_tail_call_are_refused() {
        // Found by the instrument fuzz target. `constrained.` with the `tail.` prefix
        // (valid IL: the importer skips prefixes) would be left before the site's
        // stores, and is refused; so is the other order.
        let constrained = Instruction::with_token(OpCode::Constrained, CLASS);
        for order in [
            [constrained, op(OpCode::Tail)],
            [op(OpCode::Tail), constrained],
        ] {
            let mut code = vec![Instruction::ldarga(0)];
            code.extend(order);
            code.extend([call(OpCode::Callvirt, EXTERNAL_METHOD), op(OpCode::Ret)]);
            refused(&code, VOID_SIG, TailCallRefusal::OtherPrefix, true);
        }
    }

    /// A tail call with more on the stack than its operands is refused before any edit,
    /// the body left as it was.
    #[test]
    fn extra_stack_values_are_refused_before_any_edit() {
        // A `void` callee in a method returning int32: the `ret` returns a value from
        // below the call's operands, which the stack rules let through; refused before
        // any edit (it used to fail in the analysis after the wrap).
        let code = [
            Instruction::ldarg(0),
            Instruction::ldc_r8(1.0),
            op(OpCode::Tail),
            call(OpCode::Call, STRUCT_STATIC_VOID),
            op(OpCode::Ret),
        ];
        refused(
            &code,
            &[0x00, 0x01, 0x08, 0x08],
            TailCallRefusal::ExtraStackValues,
            true,
        );
    }

    /// A tail call to a callee nested too deep is refused, the body left as it was.
    #[test]
    fn too_deep_callees_are_refused() {
        // A callee whose parameter nests types deeper than the trees the crate builds.
        let code = [
            op(OpCode::Ldnull),
            op(OpCode::Tail),
            call(OpCode::Call, DEEP),
            op(OpCode::Ret),
        ];
        refused(&code, VOID_SIG, TailCallRefusal::TooDeep, true);
    }

    /// Instruments `code` in a method of signature `signature` and expects the refusal
    /// `reason`, with the body left as it was.
    fn refused(code: &[Instruction], signature: &[u8], reason: TailCallRefusal, metadata: bool) {
        let mut b = body(code);
        let before = format!("{b:?}");
        let method = MethodContext {
            signature,
            locals: None,
            id: 5,
            tokens: &[],
            module_id: None,
        };
        let mut inst = instrumenter(false);
        let r = Resolver(MetadataResolver::new(self::metadata()), metadata);
        match inst.instrument(&mut b, &method, &r) {
            Err(Error::TailCallNotKept { reason: r, offset }) => {
                assert_eq!(r, reason);
                assert!(offset.is_some());
            }
            other => panic!("{reason:?}: {other:?}"),
        }
        assert_eq!(format!("{b:?}"), before, "{reason:?}");
    }

    /// The policies: `Refuse` refuses the method untouched, `DropPrefix` removes the
    /// prefix (the call stays in the try, an ordinary call).
    #[test]
    fn the_other_policies() {
        let code = [
            Instruction::ldarg(0),
            Instruction::ldarg(1),
            op(OpCode::Tail),
            call(OpCode::Call, STATIC),
            op(OpCode::Ret),
        ];
        let method = MethodContext {
            signature: &[0x00, 0x02, 0x08, 0x08, 0x0A],
            locals: None,
            id: 5,
            tokens: &[],
            module_id: None,
        };
        let mut b = body(&code);
        let before = format!("{b:?}");
        let mut inst = instrumenter(false).with_tail_call_policy(TailCallPolicy::Refuse);
        assert!(matches!(
            inst.instrument(&mut b, &method, &resolver()),
            Err(Error::TailCallNotKept {
                reason: TailCallRefusal::PolicyRefuses,
                ..
            })
        ));
        assert_eq!(format!("{b:?}"), before);
        let mut inst = instrumenter(false).with_tail_call_policy(TailCallPolicy::DropPrefix);
        let done = inst.instrument(&mut b, &method, &resolver()).unwrap();
        assert_eq!((done.tail_prefixes_removed, done.tail_calls_kept), (1, 0));
        assert!(b.instrs.iter().all(|(_, i)| i.opcode != OpCode::Tail));
    }

    /// Entry-only code: inserted before the first instruction (a loop back to it does
    /// not run it again); no clause, no local; `tail.` and `jmp` stay.
    #[test]
    fn entry_only_inserts_the_entry_and_nothing_else() {
        let mut inst = Instrumenter::new(InstrumentationCode {
            entry: hook(ENTER),
            ..Default::default()
        })
        .unwrap();
        for code in [
            &[
                Instruction::ldarg(0),
                Instruction::ldarg(1),
                op(OpCode::Tail),
                call(OpCode::Call, STATIC),
                op(OpCode::Ret),
            ][..],
            &[Instruction::new(
                OpCode::Jmp,
                crate::graph::Operand::Token(STATIC),
            )][..],
        ] {
            let mut b = body(code);
            let original: Vec<Instruction> = b.instrs.iter().map(|(_, i)| i).collect();
            let method = MethodContext {
                signature: &[0x00, 0x02, 0x08, 0x08, 0x0A],
                locals: None,
                id: 5,
                tokens: &[],
                module_id: None,
            };
            let done = inst.instrument(&mut b, &method, &resolver()).unwrap();
            assert_eq!(done.new_locals_signature, None);
            assert!(b.clauses.is_empty());
            let now: Vec<Instruction> = b.instrs.iter().map(|(_, i)| i).collect();
            assert_eq!(now.len(), original.len() + 2);
            assert_eq!(&now[2..], &original[..]);
            assert_eq!(now[1].opcode, OpCode::Call);
        }
    }
}

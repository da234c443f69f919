//! The functions a library calls (`ilr_host`): each checks its handle and pointers,
//! catches any panic (nothing unwinds into the library) and answers a status.

use core::ffi::{CStr, c_char};

use smallvec::SmallVec;

use super::abi::{
    E_FAILED, E_INVALID_ARGUMENT, E_NOT_FOUND, E_REFUSED, Handle, InstructionC, KEEP, OK,
    OPERAND_CODE, OPERAND_FLOAT32, OPERAND_FLOAT64, OPERAND_INT, OPERAND_LONG, OPERAND_NONE,
    OPERAND_SWITCH, OPERAND_TARGET, OPERAND_TOKEN, OPERAND_VAR, REDIRECT, Status, Str,
};
use super::context::{keep_string, with_candidate, with_edit, with_options};
use crate::body::MethodBody;
use crate::clr::host::MethodEdit;
use crate::clr::log;
use crate::graph::{Incoming, InstrId, Instruction, Operand};
use crate::metadata::{MetadataSource, token_table};
use crate::opcode::{OpCode, OperandKind};
use crate::sig::{CallingConvention, LocalVarSig, MethodSig, summarize_method_sig};

/// Runs `f`, its panic a logged [`E_FAILED`].
pub(super) fn guarded(what: &str, f: impl FnOnce() -> Result<(), Status>) -> Status {
    match log::contain_logged(what, f) {
        Some(Ok(())) => OK,
        Some(Err(status)) => status,
        None => E_FAILED,
    }
}

/// `name`, a NUL-terminated UTF-8 string of the library.
///
/// # Safety
/// `name` is null or points to a NUL-terminated string.
pub(super) unsafe fn name_of<'a>(name: *const c_char) -> Result<&'a str, Status> {
    if name.is_null() {
        return Err(E_INVALID_ARGUMENT);
    }
    // SAFETY: non-null and NUL-terminated by the caller's contract.
    unsafe { CStr::from_ptr(name) }
        .to_str()
        .map_err(|_| E_INVALID_ARGUMENT)
}

/// Writes `value` through `out`.
///
/// # Safety
/// `out` is null or valid for a write of a `T`.
pub(super) unsafe fn put<T>(out: *mut T, value: T) -> Result<(), Status> {
    if out.is_null() {
        return Err(E_INVALID_ARGUMENT);
    }
    // SAFETY: non-null and writable by the caller's contract.
    unsafe { out.write(value) };
    Ok(())
}

/// [`E_INVALID_ARGUMENT`] when `out` is null: checked before anything is looked up or
/// written, so that a null out-pointer is always that status (not the option's absence)
/// and no other out-parameter of the call is written.
pub(super) fn not_null<T>(out: *mut T) -> Result<(), Status> {
    match out.is_null() {
        true => Err(E_INVALID_ARGUMENT),
        false => Ok(()),
    }
}

/// The `count` values at `at` as a slice; [`E_INVALID_ARGUMENT`], nothing read, when `at`
/// is null or no array can be that long (more than `isize::MAX` bytes, which
/// `from_raw_parts` cannot take: a count the library got wrong).
///
/// # Safety
/// `at` is null or valid for `count` reads.
pub(super) unsafe fn array<'a, T>(at: *const T, count: usize) -> Result<&'a [T], Status> {
    let bytes = count.checked_mul(size_of::<T>());
    if at.is_null() || bytes.is_none_or(|b| b > isize::MAX as usize) {
        return Err(E_INVALID_ARGUMENT);
    }
    // SAFETY: non-null, valid for `count` reads by the caller's contract, and within
    // `isize::MAX` bytes.
    Ok(unsafe { core::slice::from_raw_parts(at, count) })
}

/// Code a library gives: its instructions, and its branches to its own instructions
/// (`ILR_OPERAND_CODE`: the branch's position and the target's), whose operands are a
/// placeholder until [`Code::link`] sets them once the code has ids.
pub(super) struct Code {
    pub(super) instrs: SmallVec<[Instruction; 8]>,
    pub(super) inner: SmallVec<[(usize, usize); 4]>,
}

impl Code {
    /// Sets the branches to the code's own instructions, now at `ids` in `body`.
    pub(super) fn link(&self, body: &mut MethodBody, ids: &[InstrId]) {
        for &(at, to) in &self.inner {
            let (Some(&at), Some(&to)) = (ids.get(at), ids.get(to)) else {
                continue;
            };
            let mut branch = body.instrs.get(at);
            branch.operand = Operand::Target(to);
            body.instrs.set(at, branch);
        }
    }
}

/// `count` instructions at `code`, as the crate's.
///
/// # Safety
/// `code` is null only with `count` 0, else valid for `count` reads.
pub(super) unsafe fn code_of(
    body: &MethodBody,
    code: *const InstructionC,
    count: usize,
) -> Result<Code, Status> {
    let mut out = Code {
        instrs: SmallVec::new(),
        inner: SmallVec::new(),
    };
    if count == 0 {
        return Ok(out);
    }
    // SAFETY: valid for `count` reads by the caller's contract (refused unread when
    // null or when no array can be that long).
    let code = unsafe { array(code, count) }?;
    // A placeholder for branches into the code: any instruction of the body.
    let placeholder = body.instrs.first().ok_or(E_REFUSED)?;
    for (at, c) in code.iter().enumerate() {
        match c.operand_kind {
            OPERAND_CODE => {
                let opcode = OpCode::from_code(c.opcode).ok_or(E_INVALID_ARGUMENT)?;
                let to = usize::try_from(c.operand).map_err(|_| E_INVALID_ARGUMENT)?;
                let branch = matches!(
                    opcode.operand(),
                    OperandKind::Branch | OperandKind::ShortBranch
                );
                if !branch || to >= count {
                    return Err(E_INVALID_ARGUMENT);
                }
                out.inner.push((at, to));
                let target = Operand::Target(placeholder);
                out.instrs.push(Instruction::new(opcode, target));
            }
            _ => out.instrs.push(instruction_of(body, c)?),
        }
    }
    Ok(out)
}

/// The crate's instruction for `c`: its opcode known, its operand of the opcode's kind
/// and range, a branch's target an instruction of `body`.
pub(super) fn instruction_of(body: &MethodBody, c: &InstructionC) -> Result<Instruction, Status> {
    let opcode = OpCode::from_code(c.opcode).ok_or(E_INVALID_ARGUMENT)?;
    let value = c.operand;
    let in_range = |low: i64, high: i64| (low..=high).contains(&value);
    let operand = match (opcode.operand(), c.operand_kind) {
        (OperandKind::None, OPERAND_NONE) => Operand::None,
        (OperandKind::ShortI, OPERAND_INT) if in_range(-128, 127) => Operand::Int(value as i32),
        (OperandKind::ShortU, OPERAND_INT) if in_range(0, 255) => Operand::Int(value as i32),
        (OperandKind::I, OPERAND_INT) if in_range(i32::MIN.into(), i32::MAX.into()) => {
            Operand::Int(value as i32)
        }
        (OperandKind::I8, OPERAND_LONG) => Operand::Long(value),
        (OperandKind::ShortR, OPERAND_FLOAT32) if in_range(0, u32::MAX.into()) => {
            Operand::Float32(value as u32)
        }
        (OperandKind::R, OPERAND_FLOAT64) => Operand::Float64(value as u64),
        (OperandKind::ShortVar, OPERAND_VAR) if in_range(0, 255) => Operand::Var(value as u16),
        (OperandKind::Var, OPERAND_VAR) if in_range(0, 65_535) => Operand::Var(value as u16),
        (OperandKind::ShortBranch | OperandKind::Branch, OPERAND_TARGET) => {
            Operand::Target(instr_id(body, value).ok_or(E_INVALID_ARGUMENT)?)
        }
        (
            OperandKind::Method
            | OperandKind::Field
            | OperandKind::Type
            | OperandKind::String
            | OperandKind::Sig
            | OperandKind::Tok,
            OPERAND_TOKEN,
        ) if in_range(0, u32::MAX.into()) => Operand::Token(value as u32),
        _ => return Err(E_INVALID_ARGUMENT),
    };
    Ok(Instruction::new(opcode, operand))
}

/// Whether `code` fits the edited method and its module beyond what each opcode takes,
/// as the JIT requires (else `InvalidProgramException`, or a `TypeLoadException`, at
/// run time, which the stack analysis does not see): an argument or local index the
/// method has (`ldarg.3`, `ldloc 1000` in a method with fewer are refused), a token of
/// a table the opcode takes that names a row of the module (for `newobj` an instance
/// constructor, for `callvirt` an instance method), each prefix followed in
/// `code` by an instruction it may prefix, `arglist` only in a method with varargs.
pub(super) fn fits(
    body: &MethodBody,
    method: &MethodEdit<'_, '_>,
    code: &[Instruction],
) -> Result<(), Status> {
    // A prefix comes with the instruction it prefixes, in the same code.
    for (i, instruction) in code.iter().enumerate() {
        if instruction.opcode.is_prefix()
            && !code
                .get(i + 1)
                .is_some_and(|next| may_prefix(instruction.opcode, next.opcode))
        {
            return Err(E_INVALID_ARGUMENT);
        }
    }
    let needs = |i: &Instruction| {
        matches!(i.operand, Operand::Token(_)) || var_of(i).is_some() || i.opcode == OpCode::Arglist
    };
    if !code.iter().any(needs) {
        return Ok(());
    }
    let rewrite = method.method();
    let sig = rewrite
        .signature()
        .and_then(summarize_method_sig)
        .map_err(|_| E_FAILED)?;
    let args = sig.param_count + u32::from(sig.has_this && !sig.explicit_this);
    let locals = match rewrite.context(body).map_err(|_| E_FAILED)?.locals {
        None => 0,
        Some(blob) => LocalVarSig::parse(blob).map_err(|_| E_FAILED)?.len() as u32,
    };
    for instruction in code {
        if instruction.opcode == OpCode::Arglist
            && sig.calling_convention != CallingConvention::VarArg
        {
            return Err(E_INVALID_ARGUMENT);
        }
        let fit = match (var_of(instruction), instruction.operand) {
            (Some((Var::Argument, index)), _) => u32::from(index) < args,
            (Some((Var::Local, index)), _) => u32::from(index) < locals,
            (None, Operand::Token(token)) => {
                let metadata = rewrite.module.metadata();
                token_fits(instruction.opcode.operand(), token)
                    && metadata.is_valid_token(token)
                    && callee_fits(metadata, instruction.opcode, token)
            }
            _ => true,
        };
        if !fit {
            return Err(E_INVALID_ARGUMENT);
        }
    }
    Ok(())
}

/// Whether the method `token` names may be the operand of `opcode`: `newobj` takes an
/// instance constructor (`.ctor`, a MethodDef or MemberRef), `callvirt` an instance
/// method (else the JIT throws `InvalidProgramException` or `MissingMethodException`).
fn callee_fits(metadata: &impl MetadataSource, opcode: OpCode, token: u32) -> bool {
    let instance = || {
        metadata
            .call_site_signature(token)
            .and_then(summarize_method_sig)
            .is_ok_and(|sig| sig.has_this)
    };
    match opcode {
        OpCode::Callvirt => instance(),
        OpCode::Newobj => {
            matches!(
                token_table(token),
                crate::metadata::table::METHOD_DEF | crate::metadata::table::MEMBER_REF
            ) && instance()
                && metadata
                    .member_name(token)
                    .is_ok_and(|member| member.name == ".ctor")
        }
        _ => true,
    }
}

/// Whether prefix `prefix` may come right before `next` (ECMA-335 III.2; `unaligned.`
/// and `volatile.` may also prefix each other).
fn may_prefix(prefix: OpCode, next: OpCode) -> bool {
    use OpCode::*;
    let memory = matches!(
        next,
        LdindI1
            | LdindU1
            | LdindI2
            | LdindU2
            | LdindI4
            | LdindU4
            | LdindI8
            | LdindI
            | LdindR4
            | LdindR8
            | LdindRef
            | StindRef
            | StindI1
            | StindI2
            | StindI4
            | StindI8
            | StindR4
            | StindR8
            | StindI
            | Ldfld
            | Stfld
            | Ldobj
            | Stobj
            | Initblk
            | Cpblk
    );
    match prefix {
        Tail => matches!(next, Call | Callvirt | Calli),
        Constrained => matches!(next, Callvirt | Call | Ldftn),
        Readonly => matches!(next, Ldelema | Call),
        Unaligned => memory || next == Volatile,
        Volatile => memory || matches!(next, Ldsfld | Stsfld | Unaligned),
        No => matches!(
            next,
            Castclass
                | Unbox
                | UnboxAny
                | Ldelema
                | LdelemI1
                | LdelemU1
                | LdelemI2
                | LdelemU2
                | LdelemI4
                | LdelemU4
                | LdelemI8
                | LdelemI
                | LdelemR4
                | LdelemR8
                | LdelemRef
                | Ldelem
                | StelemI
                | StelemI1
                | StelemI2
                | StelemI4
                | StelemI8
                | StelemR4
                | StelemR8
                | StelemRef
                | Stelem
                | Ldfld
                | Stfld
                | Callvirt
                | Ldvirtftn
        ),
        _ => false,
    }
}

/// An argument or a local.
pub(super) enum Var {
    Argument,
    Local,
}

/// The argument or local `instruction` names, if any.
pub(super) fn var_of(instruction: &Instruction) -> Option<(Var, u16)> {
    use OpCode::*;
    let operand = match instruction.operand {
        Operand::Var(v) => v,
        _ => 0,
    };
    Some(match instruction.opcode {
        Ldarg0 => (Var::Argument, 0),
        Ldarg1 => (Var::Argument, 1),
        Ldarg2 => (Var::Argument, 2),
        Ldarg3 => (Var::Argument, 3),
        Ldloc0 | Stloc0 => (Var::Local, 0),
        Ldloc1 | Stloc1 => (Var::Local, 1),
        Ldloc2 | Stloc2 => (Var::Local, 2),
        Ldloc3 | Stloc3 => (Var::Local, 3),
        LdargS | LdargaS | StargS | Ldarg | Ldarga | Starg => (Var::Argument, operand),
        LdlocS | LdlocaS | StlocS | Ldloc | Ldloca | Stloc => (Var::Local, operand),
        _ => return None,
    })
}

/// Whether `token`'s table is one an operand of `kind` takes (and its row is not 0).
fn token_fits(kind: OperandKind, token: u32) -> bool {
    use crate::metadata::table::*;
    let tables: &[u8] = match kind {
        OperandKind::Method => &[METHOD_DEF, MEMBER_REF, METHOD_SPEC],
        OperandKind::Field => &[FIELD, MEMBER_REF],
        OperandKind::Type => &[TYPE_DEF, TYPE_REF, TYPE_SPEC],
        OperandKind::String => &[USER_STRING],
        OperandKind::Sig => &[STANDALONE_SIG],
        OperandKind::Tok => &[
            TYPE_DEF,
            TYPE_REF,
            TYPE_SPEC,
            METHOD_DEF,
            MEMBER_REF,
            METHOD_SPEC,
            FIELD,
        ],
        _ => return false,
    };
    tables.contains(&token_table(token)) && token & 0x00FF_FFFF != 0
}

/// The instruction of `body` a C id (1 or more) names.
fn instr_id(body: &MethodBody, id: impl TryInto<u32>) -> Option<InstrId> {
    let id: u32 = id.try_into().ok()?.checked_sub(1)?;
    let id = InstrId(id);
    body.instrs.contains(id).then_some(id)
}

/// The C id of `id`.
fn c_id(id: InstrId) -> u32 {
    id.0 + 1
}

/// `instr` (with id `id`) as the ABI gives it.
fn c_instruction(id: InstrId, instr: Instruction) -> InstructionC {
    let (operand_kind, operand) = match instr.operand {
        Operand::None => (OPERAND_NONE, 0),
        Operand::Int(v) => (OPERAND_INT, i64::from(v)),
        Operand::Long(v) => (OPERAND_LONG, v),
        Operand::Float32(bits) => (OPERAND_FLOAT32, i64::from(bits)),
        Operand::Float64(bits) => (OPERAND_FLOAT64, bits as i64),
        Operand::Var(v) => (OPERAND_VAR, i64::from(v)),
        Operand::Token(t) => (OPERAND_TOKEN, i64::from(t)),
        Operand::Target(to) => (OPERAND_TARGET, i64::from(c_id(to))),
        Operand::Switch(targets) => (OPERAND_SWITCH, targets.len() as i64),
    };
    InstructionC {
        id: c_id(id),
        opcode: instr.opcode.code(),
        operand_kind,
        operand,
    }
}

/// Writes the new instructions' ids to `ids` (when not null).
///
/// # Safety
/// `ids` is null or valid for `new.len()` writes.
unsafe fn put_ids(ids: *mut u32, new: &[InstrId]) {
    if ids.is_null() {
        return;
    }
    for (i, &id) in new.iter().enumerate() {
        // SAFETY: valid for `new.len()` writes by the caller's contract.
        unsafe { ids.add(i).write(c_id(id)) };
    }
}

/// The most of one message `host->log` reads and writes.
const LOG_LIMIT: usize = 64 * 1024;

pub(super) unsafe extern "C" fn host_log(message: *const c_char, length: usize) {
    let _ = log::contain_logged("ilr_host.log", || {
        if message.is_null() {
            return;
        }
        // Only what is written is read: a length the library got wrong (`SIZE_MAX`) reads
        // no more than the limit, and allocates no more.
        let shown = length.min(LOG_LIMIT);
        // SAFETY: valid for `length` reads by the library's contract, so for `shown`.
        let bytes = unsafe { core::slice::from_raw_parts(message.cast::<u8>(), shown) };
        let text = String::from_utf8_lossy(bytes);
        match length > LOG_LIMIT {
            true => log::write(&format!("{text}... ({length} bytes)")),
            false => log::write(&text),
        }
    });
}

pub(super) unsafe extern "C" fn option_integer(
    options: Handle,
    name: *const c_char,
    value: *mut i64,
) -> Status {
    guarded("ilr_host.option_integer", || {
        not_null(value)?;
        // SAFETY: the library passes a NUL-terminated name (or null, refused).
        let name = unsafe { name_of(name) }?;
        let found = with_options(options, |o| o.integer(name))?;
        // SAFETY: `value` is null (refused) or writable.
        unsafe { put(value, found.ok_or(E_NOT_FOUND)?) }
    })
}

pub(super) unsafe extern "C" fn option_boolean(
    options: Handle,
    name: *const c_char,
    value: *mut i32,
) -> Status {
    guarded("ilr_host.option_boolean", || {
        not_null(value)?;
        // SAFETY: as in `option_integer`.
        let name = unsafe { name_of(name) }?;
        let found = with_options(options, |o| o.boolean(name))?;
        // SAFETY: as in `option_integer`.
        unsafe { put(value, i32::from(found.ok_or(E_NOT_FOUND)?)) }
    })
}

pub(super) unsafe extern "C" fn option_string(
    options: Handle,
    name: *const c_char,
    value: *mut Str,
) -> Status {
    guarded("ilr_host.option_string", || {
        not_null(value)?;
        // SAFETY: as in `option_integer`.
        let name = unsafe { name_of(name) }?;
        let found = with_options(options, |o| o.string(name).map(str::to_owned))?;
        let text = keep_string(options, found.ok_or(E_NOT_FOUND)?)?;
        // SAFETY: as in `option_integer`.
        unsafe { put(value, text) }
    })
}

pub(super) unsafe extern "C" fn option_string_at(
    options: Handle,
    name: *const c_char,
    index: u32,
    value: *mut Str,
) -> Status {
    guarded("ilr_host.option_string_at", || {
        not_null(value)?;
        // SAFETY: as in `option_integer`.
        let name = unsafe { name_of(name) }?;
        let found = with_options(options, |o| {
            let at = index as usize;
            match (o.strings(name), o.selectors(name)) {
                (Some(items), _) => items.get(at).cloned(),
                (_, Some(selectors)) => selectors.get(at).map(ToString::to_string),
                _ => None,
            }
        })?;
        let text = keep_string(options, found.ok_or(E_NOT_FOUND)?)?;
        // SAFETY: as in `option_integer`.
        unsafe { put(value, text) }
    })
}

pub(super) unsafe extern "C" fn candidate_is_target(
    candidate: Handle,
    is_target: *mut i32,
) -> Status {
    guarded("ilr_host.candidate_is_target", || {
        let target = with_candidate(candidate, |c| c.is_target())?;
        // SAFETY: null (refused) or writable.
        unsafe { put(is_target, i32::from(target)) }
    })
}

pub(super) unsafe extern "C" fn candidate_method(
    candidate: Handle,
    module: *mut u64,
    token: *mut u32,
) -> Status {
    guarded("ilr_host.candidate_method", || {
        not_null(module)?;
        not_null(token)?;
        let (m, t) = with_candidate(candidate, |c| (c.module().id() as u64, c.token()))?;
        // SAFETY: null (refused) or writable, by the library's contract.
        unsafe { put(module, m).and_then(|()| put(token, t)) }
    })
}

pub(super) unsafe extern "C" fn candidate_name(candidate: Handle, name: *mut Str) -> Status {
    guarded("ilr_host.candidate_name", || {
        let text = with_candidate(candidate, |c| c.name())?;
        let text = keep_string(candidate, text)?;
        // SAFETY: null (refused) or writable.
        unsafe { put(name, text) }
    })
}

pub(super) unsafe extern "C" fn edit_method(
    edit: Handle,
    module: *mut u64,
    token: *mut u32,
) -> Status {
    guarded("ilr_host.edit_method", || {
        not_null(module)?;
        not_null(token)?;
        let (m, t) = with_edit(edit, |_, method, _| {
            let rewrite = method.method();
            (rewrite.module.id() as u64, rewrite.token)
        })?;
        // SAFETY: null (refused) or writable.
        unsafe { put(module, m).and_then(|()| put(token, t)) }
    })
}

pub(super) unsafe extern "C" fn edit_name(edit: Handle, name: *mut Str) -> Status {
    guarded("ilr_host.edit_name", || {
        let text = with_edit(edit, |_, method, _| method.name())?;
        let text = keep_string(edit, text)?;
        // SAFETY: null (refused) or writable.
        unsafe { put(name, text) }
    })
}

pub(super) unsafe extern "C" fn edit_options(edit: Handle, options: *mut Handle) -> Status {
    guarded("ilr_host.edit_options", || {
        let handle = with_edit(edit, |_, _, options| options)?;
        // SAFETY: null (refused) or writable.
        unsafe { put(options, handle) }
    })
}

pub(super) unsafe extern "C" fn edit_return_type(edit: Handle, element_type: *mut u8) -> Status {
    guarded("ilr_host.edit_return_type", || {
        let first = with_edit(edit, |_, method, _| {
            let sig = MethodSig::parse(method.method().signature().ok()?).ok()?;
            // The element type under any custom modifiers (not by encoding the type
            // alone: `void` encodes only in a signature's return position).
            Some(sig.return_type.strip_modifiers().element_type())
        })?;
        // SAFETY: null (refused) or writable.
        unsafe { put(element_type, first.ok_or(E_FAILED)?) }
    })
}

pub(super) unsafe extern "C" fn body_first(edit: Handle, id: *mut u32) -> Status {
    guarded("ilr_host.body_first", || {
        let first = with_edit(edit, |body, _, _| body.instrs.first().map_or(0, c_id))?;
        // SAFETY: null (refused) or writable.
        unsafe { put(id, first) }
    })
}

pub(super) unsafe extern "C" fn body_next(edit: Handle, id: u32, next: *mut u32) -> Status {
    guarded("ilr_host.body_next", || {
        let after = with_edit(edit, |body, _, _| {
            let at = instr_id(body, id).ok_or(E_INVALID_ARGUMENT)?;
            Ok::<u32, Status>(body.instrs.next(at).map_or(0, c_id))
        })??;
        // SAFETY: null (refused) or writable.
        unsafe { put(next, after) }
    })
}

pub(super) unsafe extern "C" fn body_get(
    edit: Handle,
    id: u32,
    instruction: *mut InstructionC,
) -> Status {
    guarded("ilr_host.body_get", || {
        let got = with_edit(edit, |body, _, _| {
            let at = instr_id(body, id).ok_or(E_INVALID_ARGUMENT)?;
            Ok::<InstructionC, Status>(c_instruction(at, body.instrs.get(at)))
        })??;
        // SAFETY: null (refused) or writable.
        unsafe { put(instruction, got) }
    })
}

/// An edit error of the crate's as a status: the body is as it was.
pub(super) fn refused(e: crate::error::Error) -> Status {
    match e {
        crate::error::Error::NotInBody { .. } | crate::error::Error::BadOperand { .. } => {
            E_INVALID_ARGUMENT
        }
        _ => E_REFUSED,
    }
}

pub(super) unsafe extern "C" fn body_insert_before(
    edit: Handle,
    at: u32,
    incoming: u32,
    code: *const InstructionC,
    count: usize,
    ids: *mut u32,
) -> Status {
    guarded("ilr_host.body_insert_before", || {
        let incoming = match incoming {
            REDIRECT => Incoming::Redirect,
            KEEP => Incoming::Keep,
            _ => return Err(E_INVALID_ARGUMENT),
        };
        with_edit(edit, |body, method, _| {
            let at = instr_id(body, at).ok_or(E_INVALID_ARGUMENT)?;
            // SAFETY: `code` is valid for `count` reads by the library's contract.
            let code = unsafe { code_of(body, code, count) }?;
            fits(body, method, &code.instrs)?;
            let new = body
                .insert_all_before(at, &code.instrs, incoming)
                .map_err(refused)?;
            code.link(body, &new);
            // SAFETY: `ids` is null or valid for `count` writes.
            unsafe { put_ids(ids, &new) };
            Ok(())
        })?
    })
}

pub(super) unsafe extern "C" fn body_insert_after(
    edit: Handle,
    at: u32,
    code: *const InstructionC,
    count: usize,
    ids: *mut u32,
) -> Status {
    guarded("ilr_host.body_insert_after", || {
        with_edit(edit, |body, method, _| {
            let at = instr_id(body, at).ok_or(E_INVALID_ARGUMENT)?;
            // SAFETY: as in `body_insert_before`.
            let code = unsafe { code_of(body, code, count) }?;
            fits(body, method, &code.instrs)?;
            let new = body.insert_all_after(at, &code.instrs).map_err(refused)?;
            code.link(body, &new);
            // SAFETY: as in `body_insert_before`.
            unsafe { put_ids(ids, &new) };
            Ok(())
        })?
    })
}

pub(super) unsafe extern "C" fn body_insert_at_entry(
    edit: Handle,
    code: *const InstructionC,
    count: usize,
    ids: *mut u32,
) -> Status {
    guarded("ilr_host.body_insert_at_entry", || {
        with_edit(edit, |body, method, _| {
            let first = body.instrs.first().ok_or(E_REFUSED)?;
            // SAFETY: as in `body_insert_before`.
            let code = unsafe { code_of(body, code, count) }?;
            fits(body, method, &code.instrs)?;
            let new = body
                .insert_all_before(first, &code.instrs, Incoming::Keep)
                .map_err(refused)?;
            code.link(body, &new);
            // SAFETY: as in `body_insert_before`.
            unsafe { put_ids(ids, &new) };
            Ok(())
        })?
    })
}

pub(super) unsafe extern "C" fn body_insert_before_returns(
    edit: Handle,
    code: *const InstructionC,
    count: usize,
) -> Status {
    guarded("ilr_host.body_insert_before_returns", || {
        with_edit(edit, |body, method, _| {
            // SAFETY: as in `body_insert_before`.
            let code = unsafe { code_of(body, code, count) }?;
            fits(body, method, &code.instrs)?;
            let rets: Vec<InstrId> = body
                .instrs
                .opcodes()
                .filter(|(_, op)| *op == OpCode::Ret)
                .map(|(id, _)| id)
                .collect();
            let sites: Vec<(InstrId, &[Instruction])> =
                rets.iter().map(|&r| (r, &code.instrs[..])).collect();
            let new = body
                .insert_before_each(&sites, Incoming::Redirect)
                .map_err(refused)?;
            new.iter().for_each(|ids| code.link(body, ids));
            Ok(())
        })?
    })
}

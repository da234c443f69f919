//! The functions a library calls (`ilr_host`): each checks its handle and pointers,
//! catches any panic (nothing unwinds into the library) and answers a status.

use core::ffi::{CStr, c_char};
use std::sync::OnceLock;

use smallvec::SmallVec;

use super::abi::{
    ABI_VERSION, E_FAILED, E_INVALID_ARGUMENT, E_NOT_FOUND, E_REFUSED, Handle, HostApi,
    InstructionC, KEEP, OK, OPERAND_FLOAT32, OPERAND_FLOAT64, OPERAND_INT, OPERAND_LONG,
    OPERAND_NONE, OPERAND_SWITCH, OPERAND_TARGET, OPERAND_TOKEN, OPERAND_VAR, REDIRECT, Status,
    Str,
};
use super::context::{keep_string, with_candidate, with_edit, with_options};
use crate::body::MethodBody;
use crate::clr::log;
use crate::graph::{Incoming, InstrId, Instruction, Operand};
use crate::opcode::{OpCode, OperandKind};
use crate::sig::{MethodSig, TypeSig};

/// The host's function table, one for the process.
pub(super) fn host_api() -> &'static HostApi {
    static API: OnceLock<HostApi> = OnceLock::new();
    API.get_or_init(|| HostApi {
        size: u32::try_from(size_of::<HostApi>()).unwrap_or(u32::MAX),
        abi_version: ABI_VERSION,
        log: host_log,
        option_integer,
        option_boolean,
        option_string,
        candidate_method,
        candidate_name,
        edit_method,
        edit_name,
        edit_options,
        edit_return_type,
        body_first,
        body_next,
        body_get,
        body_insert_before,
        body_insert_after,
        body_insert_at_entry,
        body_insert_before_returns,
        option_string_at,
        candidate_is_target,
    })
}

/// Runs `f`, its panic a logged [`E_FAILED`].
fn guarded(what: &str, f: impl FnOnce() -> Result<(), Status>) -> Status {
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
unsafe fn name_of<'a>(name: *const c_char) -> Result<&'a str, Status> {
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
unsafe fn put<T>(out: *mut T, value: T) -> Result<(), Status> {
    if out.is_null() {
        return Err(E_INVALID_ARGUMENT);
    }
    // SAFETY: non-null and writable by the caller's contract.
    unsafe { out.write(value) };
    Ok(())
}

/// `count` instructions at `code`, as the crate's.
///
/// # Safety
/// `code` is null only with `count` 0, else valid for `count` reads.
unsafe fn code_of(
    body: &MethodBody,
    code: *const InstructionC,
    count: usize,
) -> Result<SmallVec<[Instruction; 8]>, Status> {
    if count == 0 {
        return Ok(SmallVec::new());
    }
    if code.is_null() {
        return Err(E_INVALID_ARGUMENT);
    }
    // SAFETY: non-null and valid for `count` reads by the caller's contract.
    let code = unsafe { core::slice::from_raw_parts(code, count) };
    code.iter().map(|c| instruction_of(body, c)).collect()
}

/// The crate's instruction for `c`: its opcode known, its operand of the opcode's kind
/// and range, a branch's target an instruction of `body`.
fn instruction_of(body: &MethodBody, c: &InstructionC) -> Result<Instruction, Status> {
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

unsafe extern "C" fn host_log(message: *const c_char, length: usize) {
    let _ = log::contain_logged("ilr_host.log", || {
        if message.is_null() {
            return;
        }
        // SAFETY: valid for `length` reads by the library's contract.
        let bytes = unsafe { core::slice::from_raw_parts(message.cast::<u8>(), length) };
        log::write(&String::from_utf8_lossy(bytes));
    });
}

unsafe extern "C" fn option_integer(
    options: Handle,
    name: *const c_char,
    value: *mut i64,
) -> Status {
    guarded("ilr_host.option_integer", || {
        // SAFETY: the library passes a NUL-terminated name (or null, refused).
        let name = unsafe { name_of(name) }?;
        let found = with_options(options, |o| o.integer(name))?;
        // SAFETY: `value` is null (refused) or writable.
        unsafe { put(value, found.ok_or(E_NOT_FOUND)?) }
    })
}

unsafe extern "C" fn option_boolean(
    options: Handle,
    name: *const c_char,
    value: *mut i32,
) -> Status {
    guarded("ilr_host.option_boolean", || {
        // SAFETY: as in `option_integer`.
        let name = unsafe { name_of(name) }?;
        let found = with_options(options, |o| o.boolean(name))?;
        // SAFETY: as in `option_integer`.
        unsafe { put(value, i32::from(found.ok_or(E_NOT_FOUND)?)) }
    })
}

unsafe extern "C" fn option_string(
    options: Handle,
    name: *const c_char,
    value: *mut Str,
) -> Status {
    guarded("ilr_host.option_string", || {
        // SAFETY: as in `option_integer`.
        let name = unsafe { name_of(name) }?;
        let found = with_options(options, |o| o.string(name).map(str::to_owned))?;
        let text = keep_string(options, found.ok_or(E_NOT_FOUND)?)?;
        // SAFETY: as in `option_integer`.
        unsafe { put(value, text) }
    })
}

unsafe extern "C" fn option_string_at(
    options: Handle,
    name: *const c_char,
    index: u32,
    value: *mut Str,
) -> Status {
    guarded("ilr_host.option_string_at", || {
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

unsafe extern "C" fn candidate_is_target(candidate: Handle, is_target: *mut i32) -> Status {
    guarded("ilr_host.candidate_is_target", || {
        let target = with_candidate(candidate, |c| c.is_target())?;
        // SAFETY: null (refused) or writable.
        unsafe { put(is_target, i32::from(target)) }
    })
}

unsafe extern "C" fn candidate_method(
    candidate: Handle,
    module: *mut u64,
    token: *mut u32,
) -> Status {
    guarded("ilr_host.candidate_method", || {
        let (m, t) = with_candidate(candidate, |c| (c.module().id() as u64, c.token()))?;
        // SAFETY: null (refused) or writable, by the library's contract.
        unsafe { put(module, m).and_then(|()| put(token, t)) }
    })
}

unsafe extern "C" fn candidate_name(candidate: Handle, name: *mut Str) -> Status {
    guarded("ilr_host.candidate_name", || {
        let text = with_candidate(candidate, |c| c.name())?;
        let text = keep_string(candidate, text)?;
        // SAFETY: null (refused) or writable.
        unsafe { put(name, text) }
    })
}

unsafe extern "C" fn edit_method(edit: Handle, module: *mut u64, token: *mut u32) -> Status {
    guarded("ilr_host.edit_method", || {
        let (m, t) = with_edit(edit, |_, method, _| {
            let rewrite = method.method();
            (rewrite.module.id() as u64, rewrite.token)
        })?;
        // SAFETY: null (refused) or writable.
        unsafe { put(module, m).and_then(|()| put(token, t)) }
    })
}

unsafe extern "C" fn edit_name(edit: Handle, name: *mut Str) -> Status {
    guarded("ilr_host.edit_name", || {
        let text = with_edit(edit, |_, method, _| method.name())?;
        let text = keep_string(edit, text)?;
        // SAFETY: null (refused) or writable.
        unsafe { put(name, text) }
    })
}

unsafe extern "C" fn edit_options(edit: Handle, options: *mut Handle) -> Status {
    guarded("ilr_host.edit_options", || {
        let handle = with_edit(edit, |_, _, options| options)?;
        // SAFETY: null (refused) or writable.
        unsafe { put(options, handle) }
    })
}

unsafe extern "C" fn edit_return_type(edit: Handle, element_type: *mut u8) -> Status {
    guarded("ilr_host.edit_return_type", || {
        let first = with_edit(edit, |_, method, _| {
            let sig = MethodSig::parse(method.method().signature().ok()?).ok()?;
            // The element type under any custom modifiers.
            let mut ret = &sig.return_type;
            while let TypeSig::Modified { inner, .. } = ret {
                ret = inner;
            }
            let mut bytes = Vec::new();
            ret.encode(&mut bytes).ok()?;
            bytes.first().copied()
        })?;
        // SAFETY: null (refused) or writable.
        unsafe { put(element_type, first.ok_or(E_FAILED)?) }
    })
}

unsafe extern "C" fn body_first(edit: Handle, id: *mut u32) -> Status {
    guarded("ilr_host.body_first", || {
        let first = with_edit(edit, |body, _, _| body.instrs.first().map_or(0, c_id))?;
        // SAFETY: null (refused) or writable.
        unsafe { put(id, first) }
    })
}

unsafe extern "C" fn body_next(edit: Handle, id: u32, next: *mut u32) -> Status {
    guarded("ilr_host.body_next", || {
        let after = with_edit(edit, |body, _, _| {
            let at = instr_id(body, id).ok_or(E_INVALID_ARGUMENT)?;
            Ok::<u32, Status>(body.instrs.next(at).map_or(0, c_id))
        })??;
        // SAFETY: null (refused) or writable.
        unsafe { put(next, after) }
    })
}

unsafe extern "C" fn body_get(edit: Handle, id: u32, instruction: *mut InstructionC) -> Status {
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
fn refused(e: crate::error::Error) -> Status {
    match e {
        crate::error::Error::NotInBody { .. } | crate::error::Error::BadOperand { .. } => {
            E_INVALID_ARGUMENT
        }
        _ => E_REFUSED,
    }
}

unsafe extern "C" fn body_insert_before(
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
        with_edit(edit, |body, _, _| {
            let at = instr_id(body, at).ok_or(E_INVALID_ARGUMENT)?;
            // SAFETY: `code` is valid for `count` reads by the library's contract.
            let code = unsafe { code_of(body, code, count) }?;
            let new = body
                .insert_all_before(at, &code, incoming)
                .map_err(refused)?;
            // SAFETY: `ids` is null or valid for `count` writes.
            unsafe { put_ids(ids, &new) };
            Ok(())
        })?
    })
}

unsafe extern "C" fn body_insert_after(
    edit: Handle,
    at: u32,
    code: *const InstructionC,
    count: usize,
    ids: *mut u32,
) -> Status {
    guarded("ilr_host.body_insert_after", || {
        with_edit(edit, |body, _, _| {
            let at = instr_id(body, at).ok_or(E_INVALID_ARGUMENT)?;
            // SAFETY: as in `body_insert_before`.
            let code = unsafe { code_of(body, code, count) }?;
            let new = body.insert_all_after(at, &code).map_err(refused)?;
            // SAFETY: as in `body_insert_before`.
            unsafe { put_ids(ids, &new) };
            Ok(())
        })?
    })
}

unsafe extern "C" fn body_insert_at_entry(
    edit: Handle,
    code: *const InstructionC,
    count: usize,
    ids: *mut u32,
) -> Status {
    guarded("ilr_host.body_insert_at_entry", || {
        with_edit(edit, |body, _, _| {
            let first = body.instrs.first().ok_or(E_REFUSED)?;
            // SAFETY: as in `body_insert_before`.
            let code = unsafe { code_of(body, code, count) }?;
            let new = body
                .insert_all_before(first, &code, Incoming::Keep)
                .map_err(refused)?;
            // SAFETY: as in `body_insert_before`.
            unsafe { put_ids(ids, &new) };
            Ok(())
        })?
    })
}

unsafe extern "C" fn body_insert_before_returns(
    edit: Handle,
    code: *const InstructionC,
    count: usize,
) -> Status {
    guarded("ilr_host.body_insert_before_returns", || {
        with_edit(edit, |body, _, _| {
            // SAFETY: as in `body_insert_before`.
            let code = unsafe { code_of(body, code, count) }?;
            let rets: Vec<InstrId> = body
                .instrs
                .opcodes()
                .filter(|(_, op)| *op == OpCode::Ret)
                .map(|(id, _)| id)
                .collect();
            let sites: Vec<(InstrId, &[Instruction])> =
                rets.iter().map(|&r| (r, &code[..])).collect();
            body.insert_before_each(&sites, Incoming::Redirect)
                .map_err(refused)?;
            Ok(())
        })?
    })
}

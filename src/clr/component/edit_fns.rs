//! The `ilr_host.edit_*` functions beyond reading and inserting instructions: data
//! items on the method and its module, new locals, the single-ret's epilogue and
//! return-value local, and wrapping the whole body (entry, exit in a finally, the
//! state local). Each checks its handle and pointers, catches any panic, and answers
//! a status; each leaves the body as it was when it fails.

use core::ffi::{c_char, c_void};

use super::abi::{
    E_INVALID_ARGUMENT, E_NOT_FOUND, E_REFUSED, Handle, InstructionC, ItemDestructor, OPERAND_CODE,
    OPERAND_METHOD_ID, OPERAND_MODULE_ID, OPERAND_RETURN_LOCAL, OPERAND_STATE_LOCAL, Status, WrapC,
};
use super::context::{keep_item, with_edit, with_edit_of};
use super::host_fns::{
    Var, array, fits, guarded, instruction_of, name_of, not_null, put, refused, var_of,
};
use super::items::{ForeignItem, item_pointer};
use super::module_fns::{said, type_rows};
use crate::body::MethodBody;
use crate::clr::host::MethodEdit;
use crate::opcode::{OpCode, OperandKind};
use crate::sig::text::parse_type;
use crate::sig::types::{Ctx, write_type};
use crate::sig::{LocalVarSig, TypeSig, summarize_method_sig};
use crate::transform::{InstrumentationCode, Instrumenter, Snippet};

pub(super) unsafe extern "C" fn edit_module_item(edit: Handle, item: *mut *mut c_void) -> Status {
    guarded("ilr_host.edit_module_item", || {
        not_null(item)?;
        let found = with_edit(edit, |_, method, _| method.module_item_any())?.ok_or(E_NOT_FOUND)?;
        let pointer = item_pointer(&found).ok_or(E_NOT_FOUND)?;
        keep_item(edit, found)?;
        // SAFETY: checked non-null.
        unsafe { put(item, pointer) }
    })
}

pub(super) unsafe extern "C" fn edit_method_item(edit: Handle, item: *mut *mut c_void) -> Status {
    guarded("ilr_host.edit_method_item", || {
        not_null(item)?;
        let found = with_edit(edit, |_, method, _| method.method_item_any())?.ok_or(E_NOT_FOUND)?;
        let pointer = item_pointer(&found).ok_or(E_NOT_FOUND)?;
        // Kept until the call returns: another thread compiling the method may replace
        // it meanwhile.
        keep_item(edit, found)?;
        // SAFETY: checked non-null.
        unsafe { put(item, pointer) }
    })
}

pub(super) unsafe extern "C" fn edit_set_method_item(
    edit: Handle,
    item: *mut c_void,
    destroy: ItemDestructor,
) -> Status {
    guarded("ilr_host.edit_set_method_item", || {
        let old = with_edit_of(edit, |_, method, _, library| {
            // Refused before the item is made: its destructor must not run here.
            if !method.keeps_items() {
                return Err(E_REFUSED);
            }
            Ok(method.replace_method_item(ForeignItem::shared(item, destroy, library)))
        })??;
        // Destroyed once the library's call returned, not inside this function.
        if let Some(old) = old {
            keep_item(edit, old)?;
        }
        Ok(())
    })
}

/// The type `text` writes, for a local of the method `method` edits.
///
/// # Safety
/// `text` is null or NUL-terminated.
unsafe fn local_type(method: &MethodEdit<'_, '_>, text: *const c_char) -> Result<TypeSig, Status> {
    // SAFETY: the caller's contract.
    let text = unsafe { name_of(text) }?;
    let ty = parse_type(text).map_err(|e| said(text, e))?;
    if matches!(ty, TypeSig::Void) {
        return Err(E_INVALID_ARGUMENT);
    }
    type_rows(method.method().module.metadata(), &ty)?;
    Ok(ty)
}

pub(super) unsafe extern "C" fn edit_add_local(
    edit: Handle,
    text: *const c_char,
    index: *mut u16,
) -> Status {
    guarded("ilr_host.edit_add_local", || {
        not_null(index)?;
        let added = with_edit(edit, |body, method, _| {
            // SAFETY: NUL-terminated or null (refused), by the library's contract.
            let ty = unsafe { local_type(method, text) }?;
            let mut local = Vec::new();
            // As a local, where `pinned` may head the type (not as a plain type).
            write_type(&ty, &mut local, 0, Ctx::LOCAL).map_err(|_| E_INVALID_ARGUMENT)?;
            let locals = method
                .method()
                .context(body)
                .map_err(|_| E_REFUSED)?
                .locals
                .map(<[u8]>::to_vec);
            let current = match locals {
                Some(blob) => blob,
                None => LocalVarSig::empty().to_bytes().map_err(|_| E_REFUSED)?,
            };
            let mut blob = Vec::new();
            // Refused past the 65,535 locals a method may have.
            let at =
                LocalVarSig::append_to_blob(&current, &local, &mut blob).map_err(|_| E_REFUSED)?;
            method.rewrite().set_locals_signature(&blob);
            body.force_fat_header();
            Ok::<u16, Status>(at)
        })??;
        // SAFETY: checked non-null.
        unsafe { put(index, added) }
    })
}

pub(super) unsafe extern "C" fn edit_single_ret(
    edit: Handle,
    epilogue: *mut u32,
    return_local: *mut i32,
) -> Status {
    guarded("ilr_host.edit_single_ret", || {
        not_null(epilogue)?;
        not_null(return_local)?;
        let (first, local) = with_edit(edit, |body, method, _| {
            let single = method.single_ret().ok_or(E_NOT_FOUND)?;
            if !body.instrs.contains(single.epilogue) {
                return Err(E_NOT_FOUND);
            }
            let local = match var_of(&body.instrs.get(single.epilogue)) {
                Some((Var::Local, index)) => i32::from(index),
                _ => -1,
            };
            Ok((single.epilogue.0 + 1, local))
        })??;
        // SAFETY: both checked non-null.
        unsafe { put(epilogue, first).and_then(|()| put(return_local, local)) }
    })
}

/// `count` instructions at `code` as a snippet of a wrap: placeholders for the
/// `ILR_OPERAND_*_LOCAL` and `_ID` operands, labels for `ILR_OPERAND_CODE` branches.
///
/// # Safety
/// `code` is null only with `count` 0, else valid for `count` reads.
unsafe fn snippet_of(
    body: &MethodBody,
    method: &MethodEdit<'_, '_>,
    code: *const InstructionC,
    count: usize,
) -> Result<Snippet, Status> {
    if count == 0 {
        return Ok(Snippet::default());
    }
    // SAFETY: non-null and valid for `count` reads by the caller's contract (refused
    // unread when null or when no array can be that long).
    let code = unsafe { array(code, count) }?;
    // First every opcode known and every operand kind the ABI's, up to the first that is
    // not, and the targets of the code's own branches: nothing is allocated in
    // proportion to `count` (which a library can get wrong) before its instructions are
    // read, and a count longer than the array stops at the garbage after it.
    let mut targets = Vec::new();
    for c in code {
        OpCode::from_code(c.opcode).ok_or(E_INVALID_ARGUMENT)?;
        match c.operand_kind {
            OPERAND_CODE => match usize::try_from(c.operand) {
                Ok(to) if to < count => targets.push(to),
                _ => return Err(E_INVALID_ARGUMENT),
            },
            kind if kind > OPERAND_CODE => return Err(E_INVALID_ARGUMENT),
            _ => {}
        }
    }
    targets.sort_unstable();
    targets.dedup();
    let mut builder = Snippet::builder();
    let labels: Vec<_> = targets.iter().map(|_| builder.new_label()).collect();
    let label = |to: usize| targets.binary_search(&to).ok().map(|i| labels[i]);
    let mut plain = smallvec::SmallVec::<[_; 8]>::new();
    for (at, c) in code.iter().enumerate() {
        if let Some(here) = label(at) {
            builder.bind(here);
        }
        let opcode = OpCode::from_code(c.opcode).ok_or(E_INVALID_ARGUMENT)?;
        match c.operand_kind {
            OPERAND_STATE_LOCAL => {
                builder.state_local(opcode);
            }
            OPERAND_RETURN_LOCAL => {
                builder.return_local(opcode);
            }
            OPERAND_METHOD_ID if opcode == OpCode::LdcI4 => {
                builder.method_id();
            }
            OPERAND_MODULE_ID if opcode == OpCode::LdcI8 => {
                builder.module_id();
            }
            OPERAND_CODE => {
                let branch = matches!(
                    opcode.operand(),
                    OperandKind::Branch | OperandKind::ShortBranch
                );
                let to = usize::try_from(c.operand).ok().and_then(label);
                match (branch, to) {
                    (true, Some(to)) => builder.branch(opcode, to),
                    _ => return Err(E_INVALID_ARGUMENT),
                };
            }
            OPERAND_METHOD_ID | OPERAND_MODULE_ID => return Err(E_INVALID_ARGUMENT),
            _ => {
                // Branches out of the snippet are refused by the builder; an operand of
                // the body's instructions has no meaning in code copied to many places.
                let instruction = instruction_of(body, c)?;
                if matches!(instruction.operand, crate::graph::Operand::Target(_)) {
                    return Err(E_INVALID_ARGUMENT);
                }
                plain.push(instruction);
                builder.push(instruction);
            }
        }
    }
    fits(body, method, &plain)?;
    builder.finish().map_err(|_| E_INVALID_ARGUMENT)
}

pub(super) unsafe extern "C" fn edit_wrap(edit: Handle, wrap: *const WrapC) -> Status {
    guarded("ilr_host.edit_wrap", || {
        if wrap.is_null() {
            return Err(E_INVALID_ARGUMENT);
        }
        // SAFETY: non-null; the library's `ilr_wrap`, at least `size` bytes of it.
        let size = unsafe { (*wrap).size } as usize;
        if size < size_of::<WrapC>() {
            return Err(E_INVALID_ARGUMENT);
        }
        // SAFETY: as above, the whole struct this host knows is there.
        let wrap = unsafe { *wrap };
        with_edit(edit, |body, method, _| {
            // SAFETY: each array valid for its count, by the library's contract.
            let (entry, exit, on_return) = unsafe {
                (
                    snippet_of(body, method, wrap.entry, wrap.entry_count)?,
                    snippet_of(body, method, wrap.exit, wrap.exit_count)?,
                    snippet_of(body, method, wrap.on_return, wrap.on_return_count)?,
                )
            };
            let state_local = match wrap.state_local.is_null() {
                true => None,
                false => {
                    // SAFETY: NUL-terminated, by the library's contract.
                    Some(unsafe { local_type(method, wrap.state_local) }?)
                }
            };
            let returns_value = method
                .method()
                .signature()
                .and_then(summarize_method_sig)
                .map_err(|_| E_REFUSED)?
                .returns_value;
            let mut code = InstrumentationCode {
                entry,
                exit,
                state_local,
                ..Default::default()
            };
            match returns_value {
                true => code.epilogue_value = on_return,
                false => code.epilogue_void = on_return,
            }
            let mut instrumenter = Instrumenter::new(code).map_err(|_| E_INVALID_ARGUMENT)?;
            let rewrite = method.rewrite();
            let context = rewrite.context(body).map_err(|_| E_REFUSED)?;
            let saved = body.clone();
            let done = instrumenter
                .instrument(body, &context, rewrite.module.resolver())
                .map(|done| done.new_locals_signature.map(<[u8]>::to_vec));
            match done {
                Ok(locals) => {
                    if let Some(locals) = locals {
                        rewrite.set_locals_signature(&locals);
                    }
                    Ok(())
                }
                Err(e) => {
                    *body = saved;
                    Err(refused(e))
                }
            }
        })?
    })
}

//! What the host lends a method during one call: [`Options`], [`Candidate`], [`Edit`].
//!
//! Each wraps a handle (a number) and the host's function table. A handle is valid only
//! during the call that received it and on its thread; the types are tied to that call
//! by their lifetime `'call` (a [`Method`](crate::Method) gets them by reference, for any
//! lifetime, so it cannot keep them) and are neither `Send` nor `Sync`. The strings they
//! answer are the host's, lent for the same call (`&'call str`). A handle used wrongly
//! anyway gets `ILR_E_INVALID_HANDLE` from the host, never undefined behaviour (the
//! header's promise).
#![allow(unsafe_code, reason = "calls through the host's function table")]

use core::ffi::c_char;
use core::fmt;
use core::marker::PhantomData;
use std::ffi::CString;

use crate::code::{Incoming, Instruction, InstructionId};
use crate::status::Status;
use crate::sys;

/// Neither `Send` nor `Sync`: handles are valid on the calling thread only.
type ThisThread = PhantomData<*const ()>;

/// The host's table and a handle, lent for one call.
#[derive(Clone, Copy)]
struct Lent<'call> {
    host: &'call sys::ilr_host,
    handle: u64,
    _thread: ThisThread,
}

impl<'call> Lent<'call> {
    /// Writes `message` to the profiler's log.
    fn log(self, message: &str) {
        // SAFETY: the host's function, with a pointer and length valid for the call.
        unsafe { (self.host.log)(message.as_ptr().cast::<c_char>(), message.len()) };
    }
}

/// A name for the host: NUL-terminated.
fn c_name(name: &str) -> Result<CString, Status> {
    CString::new(name).map_err(|_| Status::INVALID_ARGUMENT)
}

/// The string the host lent, as `&'call str`.
///
/// # Safety
/// `value` was filled by a host function that answered `ILR_OK` during the current call
/// of the library, which lasts at least `'call` (the header: such a string stays valid
/// until the library's call that received the handle returns).
unsafe fn lent_str<'call>(value: sys::ilr_str) -> Result<&'call str, Status> {
    if value.length == 0 {
        return Ok("");
    }
    if value.data.is_null() {
        return Err(Status::INVALID_ARGUMENT);
    }
    // SAFETY: `length` readable bytes at `data`, valid for `'call` (the caller's
    // contract, which is the header's).
    let bytes = unsafe { core::slice::from_raw_parts(value.data.cast::<u8>(), value.length) };
    // The header promises UTF-8; a host that breaks it gets an error, not a panic.
    core::str::from_utf8(bytes).map_err(|_| Status::INVALID_ARGUMENT)
}

const NO_STR: sys::ilr_str = sys::ilr_str {
    data: core::ptr::null(),
    length: 0,
};

/// An instrumentation method's options: the configured ones (in
/// [`Method::start`](crate::Method::start)), a live request's (in
/// [`Method::check_options`](crate::Method::check_options)), or those of an edit
/// ([`Edit::options`]). Only the options the method declares can be given (the host
/// checks their names and kinds first).
///
/// Each getter answers `Ok(None)` when the option is not given, and the host's status
/// for anything else that goes wrong (a name with a NUL byte is
/// [`Status::INVALID_ARGUMENT`]).
pub struct Options<'call> {
    lent: Lent<'call>,
}

impl fmt::Debug for Options<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Options")
            .field("handle", &self.lent.handle)
            .finish()
    }
}

/// `Ok(Some(value))`, `Ok(None)` for `ILR_E_NOT_FOUND`, or the failure.
fn found<T>(status: sys::ilr_status, value: T) -> Result<Option<T>, Status> {
    match Status::check(status) {
        Ok(()) => Ok(Some(value)),
        Err(Status::NOT_FOUND) => Ok(None),
        Err(other) => Err(other),
    }
}

impl<'call> Options<'call> {
    /// The options behind `handle`.
    pub(crate) fn new(host: &'call sys::ilr_host, handle: sys::ilr_options) -> Options<'call> {
        Options {
            lent: Lent {
                host,
                handle,
                _thread: PhantomData,
            },
        }
    }

    /// An integer option's value.
    ///
    /// # Errors
    /// The host's status (e.g. [`Status::INVALID_ARGUMENT`] for an option of another
    /// kind, or a name with a NUL byte).
    pub fn integer(&self, name: &str) -> Result<Option<i64>, Status> {
        let name = c_name(name)?;
        let mut value = 0i64;
        // SAFETY: the host's function, with its handle, a NUL-terminated name and an
        // out-pointer, all valid for the call.
        let status =
            unsafe { (self.lent.host.option_integer)(self.lent.handle, name.as_ptr(), &mut value) };
        found(status, value)
    }

    /// A boolean option's value.
    ///
    /// # Errors
    /// As [`Options::integer`].
    pub fn boolean(&self, name: &str) -> Result<Option<bool>, Status> {
        let name = c_name(name)?;
        let mut value = 0i32;
        // SAFETY: as in `integer`.
        let status =
            unsafe { (self.lent.host.option_boolean)(self.lent.handle, name.as_ptr(), &mut value) };
        found(status, value != 0)
    }

    /// A string option's value, lent for the current call (copy it to keep it).
    ///
    /// # Errors
    /// As [`Options::integer`].
    pub fn string(&self, name: &str) -> Result<Option<&'call str>, Status> {
        let name = c_name(name)?;
        let mut value = NO_STR;
        // SAFETY: as in `integer`.
        let status =
            unsafe { (self.lent.host.option_string)(self.lent.handle, name.as_ptr(), &mut value) };
        match found(status, ())? {
            // SAFETY: filled by the host with `ILR_OK` during this call ('call).
            Some(()) => unsafe { lent_str(value) }.map(Some),
            None => Ok(None),
        }
    }

    /// The items of a strings or selectors option (a selector as written), lent for
    /// the current call; empty when the option is not given.
    ///
    /// # Errors
    /// As [`Options::integer`].
    pub fn strings(&self, name: &str) -> Result<Vec<&'call str>, Status> {
        let name = c_name(name)?;
        let mut items = Vec::new();
        for index in 0u32.. {
            let mut value = NO_STR;
            // SAFETY: as in `integer`.
            let status = unsafe {
                (self.lent.host.option_string_at)(
                    self.lent.handle,
                    name.as_ptr(),
                    index,
                    &mut value,
                )
            };
            match found(status, ())? {
                // SAFETY: filled by the host with `ILR_OK` during this call ('call).
                Some(()) => items.push(unsafe { lent_str(value) }?),
                None => break,
            }
        }
        Ok(items)
    }

    /// Writes `message` as a line of the profiler's log.
    pub fn log(&self, message: &str) {
        self.lent.log(message);
    }
}

/// A method the host asks about ([`Method::wants`](crate::Method::wants)), at its first
/// JIT compilation.
pub struct Candidate<'call> {
    lent: Lent<'call>,
}

impl fmt::Debug for Candidate<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Candidate")
            .field("handle", &self.lent.handle)
            .finish()
    }
}

impl<'call> Candidate<'call> {
    /// The candidate behind `handle`.
    pub(crate) fn new(host: &'call sys::ilr_host, handle: sys::ilr_candidate) -> Candidate<'call> {
        Candidate {
            lent: Lent {
                host,
                handle,
                _thread: PhantomData,
            },
        }
    }

    /// Its module id and MethodDef token.
    ///
    /// # Errors
    /// The host's status.
    pub fn method(&self) -> Result<(u64, u32), Status> {
        let (mut module, mut token) = (0u64, 0u32);
        // SAFETY: the host's function, with its handle and out-pointers valid for the call.
        let status =
            unsafe { (self.lent.host.candidate_method)(self.lent.handle, &mut module, &mut token) };
        Status::check(status).map(|()| (module, token))
    }

    /// Whether it is one of the method's [`targets`](crate::Method::targets).
    ///
    /// # Errors
    /// The host's status.
    pub fn is_target(&self) -> Result<bool, Status> {
        let mut is_target = 0i32;
        // SAFETY: the host's function, with its handle and an out-pointer valid for the
        // call.
        let status =
            unsafe { (self.lent.host.candidate_is_target)(self.lent.handle, &mut is_target) };
        Status::check(status).map(|()| is_target != 0)
    }

    /// Its module id.
    ///
    /// # Errors
    /// The host's status.
    pub fn module(&self) -> Result<u64, Status> {
        self.method().map(|(module, _)| module)
    }

    /// Its MethodDef token.
    ///
    /// # Errors
    /// The host's status.
    pub fn token(&self) -> Result<u32, Status> {
        self.method().map(|(_, token)| token)
    }

    /// Its name, `Namespace.Type::Method` (nested types `Outer/Inner`), lent for the
    /// current call.
    ///
    /// # Errors
    /// The host's status.
    pub fn name(&self) -> Result<&'call str, Status> {
        let mut name = NO_STR;
        // SAFETY: the host's function, with its handle and an out-pointer valid for the
        // call.
        let status = unsafe { (self.lent.host.candidate_name)(self.lent.handle, &mut name) };
        Status::check(status)?;
        // SAFETY: filled by the host with `ILR_OK` during this call ('call).
        unsafe { lent_str(name) }
    }

    /// Writes `message` as a line of the profiler's log.
    pub fn log(&self, message: &str) {
        self.lent.log(message);
    }
}

/// A method body being edited ([`Method::edit`](crate::Method::edit)): what the method
/// is, and its instructions, which it reads and inserts code among. Every insert is all
/// or nothing: on an error the body is as it was.
pub struct Edit<'call> {
    lent: Lent<'call>,
}

impl fmt::Debug for Edit<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Edit")
            .field("handle", &self.lent.handle)
            .finish()
    }
}

/// The raw form of `code`.
fn raw_code(code: &[Instruction]) -> Vec<sys::ilr_instruction> {
    code.iter().map(|i| i.to_raw()).collect()
}

/// The ids the host wrote.
fn new_ids(ids: Vec<u32>) -> Result<Vec<InstructionId>, Status> {
    ids.into_iter()
        .map(|id| InstructionId::new(id).ok_or(Status::FAILED))
        .collect()
}

impl<'call> Edit<'call> {
    /// The edit behind `handle`.
    pub(crate) fn new(host: &'call sys::ilr_host, handle: sys::ilr_edit) -> Edit<'call> {
        Edit {
            lent: Lent {
                host,
                handle,
                _thread: PhantomData,
            },
        }
    }

    /// The edited method's module id and MethodDef token.
    ///
    /// # Errors
    /// The host's status.
    pub fn method(&self) -> Result<(u64, u32), Status> {
        let (mut module, mut token) = (0u64, 0u32);
        // SAFETY: the host's function, with its handle and out-pointers valid for the call.
        let status =
            unsafe { (self.lent.host.edit_method)(self.lent.handle, &mut module, &mut token) };
        Status::check(status).map(|()| (module, token))
    }

    /// The edited method's name, `Namespace.Type::Method`, lent for the current call.
    ///
    /// # Errors
    /// The host's status.
    pub fn name(&self) -> Result<&'call str, Status> {
        let mut name = NO_STR;
        // SAFETY: as in `method`.
        let status = unsafe { (self.lent.host.edit_name)(self.lent.handle, &mut name) };
        Status::check(status)?;
        // SAFETY: filled by the host with `ILR_OK` during this call ('call).
        unsafe { lent_str(name) }
    }

    /// The options of this edit: the configured ones, or a live request's.
    ///
    /// # Errors
    /// The host's status.
    pub fn options(&self) -> Result<Options<'call>, Status> {
        let mut options: sys::ilr_options = 0;
        // SAFETY: as in `method`.
        let status = unsafe { (self.lent.host.edit_options)(self.lent.handle, &mut options) };
        Status::check(status).map(|()| Options::new(self.lent.host, options))
    }

    /// The ECMA-335 element type of its return type
    /// ([`element_type`](crate::element_type): `VOID`, `I4`, ...).
    ///
    /// # Errors
    /// The host's status.
    pub fn return_type(&self) -> Result<u8, Status> {
        let mut element_type = 0u8;
        // SAFETY: as in `method`.
        let status =
            unsafe { (self.lent.host.edit_return_type)(self.lent.handle, &mut element_type) };
        Status::check(status).map(|()| element_type)
    }

    /// The first instruction (`None` for an empty body).
    ///
    /// # Errors
    /// The host's status.
    pub fn first(&self) -> Result<Option<InstructionId>, Status> {
        let mut id = 0u32;
        // SAFETY: as in `method`.
        let status = unsafe { (self.lent.host.body_first)(self.lent.handle, &mut id) };
        Status::check(status).map(|()| InstructionId::new(id))
    }

    /// The instruction after `id` (`None` at the end).
    ///
    /// # Errors
    /// The host's status.
    pub fn next(&self, id: InstructionId) -> Result<Option<InstructionId>, Status> {
        let mut next = 0u32;
        // SAFETY: as in `method`.
        let status = unsafe { (self.lent.host.body_next)(self.lent.handle, id.get(), &mut next) };
        Status::check(status).map(|()| InstructionId::new(next))
    }

    /// The instruction `id`.
    ///
    /// # Errors
    /// The host's status ([`Status::INVALID_ARGUMENT`] for an id not in the body).
    pub fn get(&self, id: InstructionId) -> Result<Instruction, Status> {
        let mut raw = sys::ilr_instruction::default();
        // SAFETY: as in `method`.
        let status = unsafe { (self.lent.host.body_get)(self.lent.handle, id.get(), &mut raw) };
        Status::check(status).map(|()| Instruction::from_raw(&raw))
    }

    /// The body's instructions in order; after an error (its last item), nothing.
    pub fn instructions(&self) -> Instructions<'_, 'call> {
        Instructions {
            edit: self,
            at: Walk::Start,
        }
    }

    /// Inserts `code` right before instruction `at`; `incoming` says what becomes of the
    /// branches and regions that named it. Answers the new instructions' ids.
    ///
    /// # Errors
    /// The host's status ([`Status::INVALID_ARGUMENT`] for an operand that does not fit
    /// its opcode, [`Status::REFUSED`] for code that would break the body); the body is
    /// then unchanged.
    pub fn insert_before(
        &mut self,
        at: InstructionId,
        incoming: Incoming,
        code: &[Instruction],
    ) -> Result<Vec<InstructionId>, Status> {
        let raw = raw_code(code);
        let mut ids = vec![0u32; raw.len()];
        // SAFETY: the host's function, with its handle, `raw.len()` instructions to read
        // and as many ids to write, valid for the call.
        let status = unsafe {
            (self.lent.host.body_insert_before)(
                self.lent.handle,
                at.get(),
                incoming.to_raw(),
                raw.as_ptr(),
                raw.len(),
                ids.as_mut_ptr(),
            )
        };
        Status::check(status)?;
        new_ids(ids)
    }

    /// Inserts `code` right after instruction `at` (nothing that names `at` changes).
    /// Answers the new instructions' ids.
    ///
    /// # Errors
    /// As [`Edit::insert_before`].
    pub fn insert_after(
        &mut self,
        at: InstructionId,
        code: &[Instruction],
    ) -> Result<Vec<InstructionId>, Status> {
        let raw = raw_code(code);
        let mut ids = vec![0u32; raw.len()];
        // SAFETY: as in `insert_before`.
        let status = unsafe {
            (self.lent.host.body_insert_after)(
                self.lent.handle,
                at.get(),
                raw.as_ptr(),
                raw.len(),
                ids.as_mut_ptr(),
            )
        };
        Status::check(status)?;
        new_ids(ids)
    }

    /// Inserts `code` before the first instruction, branches to it kept (a loop back to
    /// the start does not run the new code again). Answers the new instructions' ids.
    ///
    /// # Errors
    /// As [`Edit::insert_before`].
    pub fn insert_at_entry(&mut self, code: &[Instruction]) -> Result<Vec<InstructionId>, Status> {
        let raw = raw_code(code);
        let mut ids = vec![0u32; raw.len()];
        // SAFETY: as in `insert_before`.
        let status = unsafe {
            (self.lent.host.body_insert_at_entry)(
                self.lent.handle,
                raw.as_ptr(),
                raw.len(),
                ids.as_mut_ptr(),
            )
        };
        Status::check(status)?;
        new_ids(ids)
    }

    /// Inserts a copy of `code` before every `ret` (the return value, if any, on the
    /// stack), the branches to the `ret` redirected to it; each copy must leave the
    /// stack as it found it.
    ///
    /// # Errors
    /// As [`Edit::insert_before`].
    pub fn insert_before_returns(&mut self, code: &[Instruction]) -> Result<(), Status> {
        let raw = raw_code(code);
        // SAFETY: the host's function, with its handle and `raw.len()` instructions to
        // read, valid for the call.
        let status = unsafe {
            (self.lent.host.body_insert_before_returns)(self.lent.handle, raw.as_ptr(), raw.len())
        };
        Status::check(status)
    }

    /// Writes `message` as a line of the profiler's log.
    pub fn log(&self, message: &str) {
        self.lent.log(message);
    }
}

/// Where an [`Instructions`] walk is.
#[derive(Debug, Clone, Copy)]
enum Walk {
    Start,
    After(InstructionId),
    Done,
}

/// The instructions of an [`Edit`], in order ([`Edit::instructions`]).
#[derive(Debug)]
pub struct Instructions<'edit, 'call> {
    edit: &'edit Edit<'call>,
    at: Walk,
}

impl Iterator for Instructions<'_, '_> {
    type Item = Result<Instruction, Status>;

    fn next(&mut self) -> Option<Self::Item> {
        let id = match self.at {
            Walk::Start => self.edit.first(),
            Walk::After(id) => self.edit.next(id),
            Walk::Done => return None,
        };
        let got = id.and_then(|id| id.map(|id| self.edit.get(id).map(|i| (id, i))).transpose());
        match got {
            Ok(Some((id, instruction))) => {
                self.at = Walk::After(id);
                Some(Ok(instruction))
            }
            Ok(None) => {
                self.at = Walk::Done;
                None
            }
            Err(status) => {
                self.at = Walk::Done;
                Some(Err(status))
            }
        }
    }
}

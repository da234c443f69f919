//! What the host lends a method during one call: [`Options`], [`Candidate`], [`Edit`],
//! [`Module`].
//!
//! Each wraps a handle (a number) and the host's function table. A handle is valid only
//! during the call that received it and on its thread; the types are tied to that call
//! by their lifetime `'call` (a [`Method`](crate::Method) gets them by reference, for any
//! lifetime, so it cannot keep them) and are neither `Send` nor `Sync`. The strings they
//! answer are the host's, lent for the same call (`&'call str`). A handle used wrongly
//! anyway gets `ILR_E_INVALID_HANDLE` from the host, never undefined behaviour (the
//! header's promise).
//!
//! The data items a method keeps on modules and methods ([`Module::set_item`],
//! [`Edit::set_method_item`]) are any `Send + Sync + 'static` value, boxed and given
//! to the host with this crate's destructor; reading one back ([`Module::item`],
//! [`Edit::module_item`], [`Edit::method_item`]) answers a `&'call T`, valid until the
//! call returns: the host keeps every item it gave out during a call alive until the
//! call returns, even if another thread (or the method itself) replaces it meanwhile.
//! (The reads take every item of the library to be one of this crate's boxes: a library
//! whose own `unsafe` code sets items through [`sys`](crate::sys) must not mix the two.)
#![allow(unsafe_code, reason = "calls through the host's function table")]

use core::ffi::{c_char, c_void};
use core::fmt;
use core::marker::PhantomData;
use std::ffi::CString;

use crate::code::{Incoming, Instruction, InstructionId};
use crate::item::{self, Logger};
use crate::status::Status;
use crate::sys;

/// Neither `Send` nor `Sync`: handles are valid on the calling thread only.
type ThisThread = PhantomData<*const ()>;

/// The host's table and a handle, lent for one call, and the method's [`Logger`].
#[derive(Clone, Copy)]
struct Lent<'call> {
    host: &'call sys::ilr_host,
    logger: &'call Logger,
    handle: u64,
    _thread: ThisThread,
}

impl<'call> Lent<'call> {
    /// `handle` of `host`.
    fn new(host: &'call sys::ilr_host, logger: &'call Logger, handle: u64) -> Lent<'call> {
        Lent {
            host,
            logger,
            handle,
            _thread: PhantomData,
        }
    }

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

/// The item a host function answered (`pointer`, with `status`): `Ok(None)` for
/// `ILR_E_NOT_FOUND` or an item of another type than `T`.
///
/// # Safety
/// `pointer` was written by the host's item function of a handle lent for `'call`,
/// which answered `status` (the host keeps the item alive until the call returns), and
/// every item of this library was made by `item::into_raw`.
unsafe fn lent_item<'call, T: 'static>(
    status: sys::ilr_status,
    pointer: *mut c_void,
) -> Result<Option<&'call T>, Status> {
    match found(status, pointer)? {
        // SAFETY: the caller's contract.
        Some(pointer) => Ok(unsafe { item::downcast::<T>(pointer) }),
        None => Ok(None),
    }
}

/// Gives `value` as an item to `set` (a host function taking the pointer and the
/// destructor); when the host refuses it, destroys it here.
fn give_item<T: Send + Sync + 'static>(
    value: T,
    logger: &Logger,
    set: impl FnOnce(*mut c_void, sys::ilr_item_destructor) -> sys::ilr_status,
) -> Result<(), Status> {
    let pointer = item::into_raw(value, logger);
    let status = set(pointer, Some(item::destroy_item));
    if status != sys::ILR_OK {
        // SAFETY: made by `into_raw` just now; the host did not take it.
        unsafe { item::destroy_item(pointer) };
    }
    Status::check(status)
}

impl<'call> Options<'call> {
    /// The options behind `handle`.
    pub(crate) fn new(
        host: &'call sys::ilr_host,
        logger: &'call Logger,
        handle: sys::ilr_options,
    ) -> Options<'call> {
        Options {
            lent: Lent::new(host, logger, handle),
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

    /// The profiler's log, to keep: for lines written outside the host's calls (a
    /// data item's `Drop`, [`Method::callback`](crate::Method::callback)).
    pub fn logger(&self) -> Logger {
        self.lent.logger.clone()
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
    pub(crate) fn new(
        host: &'call sys::ilr_host,
        logger: &'call Logger,
        handle: sys::ilr_candidate,
    ) -> Candidate<'call> {
        Candidate {
            lent: Lent::new(host, logger, handle),
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

    /// The profiler's log, to keep: for lines written outside the host's calls (a
    /// data item's `Drop`, [`Method::callback`](crate::Method::callback)).
    pub fn logger(&self) -> Logger {
        self.lent.logger.clone()
    }
}

/// A metadata token (`0xTTRRRRRR`: table and row), as the [`Module`] definitions answer
/// and [`Operand::Token`](crate::Operand::Token) takes.
pub type Token = u32;

/// A module that finished loading ([`Method::module_loaded`](crate::Method::module_loaded)):
/// what its metadata has, and new definitions in it, by value: names, and types and
/// method signatures as text (`int32`, `class 0x01000005<string>`, `!!0[]`;
/// `instance void (int32, string&)`, `generic 1 !!0[] ()`: the grammar is
/// `docs/components.md`, "Types as text"). Each definition answers the existing row
/// when the module has one. Keep the tokens in the module's data item
/// ([`Module::set_item`]) for the edits ([`Edit::module_item`]).
///
/// Each function answers the host's status on failure: `INVALID_ARGUMENT` for text
/// that does not parse (the host logs where and why), a token of no row of the module
/// or of a table it does not take, a string with a NUL byte; `FAILED` for a definition
/// the runtime refused (logged with its reason).
pub struct Module<'call> {
    lent: Lent<'call>,
}

impl fmt::Debug for Module<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Module")
            .field("handle", &self.lent.handle)
            .finish()
    }
}

impl<'call> Module<'call> {
    /// The module behind `handle`.
    pub(crate) fn new(
        host: &'call sys::ilr_host,
        logger: &'call Logger,
        handle: sys::ilr_module,
    ) -> Module<'call> {
        Module {
            lent: Lent::new(host, logger, handle),
        }
    }

    /// Runs a definition `define(handle, &mut token)`; the token.
    fn define(
        &self,
        define: impl FnOnce(sys::ilr_module, &mut u32) -> sys::ilr_status,
    ) -> Result<Token, Status> {
        let mut token = 0u32;
        let status = define(self.lent.handle, &mut token);
        Status::check(status).map(|()| token)
    }

    /// Its ModuleID.
    ///
    /// # Errors
    /// The host's status.
    pub fn id(&self) -> Result<u64, Status> {
        let mut id = 0u64;
        // SAFETY: the host's function, with its handle and an out-pointer valid for the
        // call.
        let status = unsafe { (self.lent.host.module_id)(self.lent.handle, &mut id) };
        Status::check(status).map(|()| id)
    }

    /// The simple name of its assembly, lent for the current call.
    ///
    /// # Errors
    /// The host's status (a module without an assembly manifest has no name).
    pub fn assembly_name(&self) -> Result<&'call str, Status> {
        let mut name = NO_STR;
        // SAFETY: as in `id`.
        let status = unsafe { (self.lent.host.module_assembly_name)(self.lent.handle, &mut name) };
        Status::check(status)?;
        // SAFETY: filled by the host with `ILR_OK` during this call ('call).
        unsafe { lent_str(name) }
    }

    /// An AssemblyRef to the assembly `name` (simple name; culture neutral) of
    /// `version` (major, minor, build, revision) and public key token: the existing one
    /// of that name, else a new row.
    ///
    /// # Errors
    /// The host's status.
    pub fn assembly_ref(
        &self,
        name: &str,
        version: [u16; 4],
        public_key_token: Option<[u8; 8]>,
    ) -> Result<Token, Status> {
        let name = c_name(name)?;
        let assembly = sys::ilr_assembly_ref {
            name: name.as_ptr(),
            version,
            public_key_token: public_key_token
                .as_ref()
                .map_or(core::ptr::null(), |key| key.as_ptr()),
        };
        // SAFETY: the host's function, with its handle, an `ilr_assembly_ref` whose name
        // and key are valid for the call, and an out-pointer.
        self.define(|h, token| unsafe { (self.lent.host.module_assembly_ref)(h, &assembly, token) })
    }

    /// A TypeRef to `name` (`Namespace.Type`) in `scope`: an AssemblyRef, a ModuleRef
    /// or, for a nested type, its enclosing TypeRef.
    ///
    /// # Errors
    /// The host's status.
    pub fn type_ref(&self, scope: Token, name: &str) -> Result<Token, Status> {
        let name = c_name(name)?;
        // SAFETY: the host's function, with its handle, a NUL-terminated name and an
        // out-pointer, valid for the call.
        self.define(|h, token| unsafe {
            (self.lent.host.module_type_ref)(h, scope, name.as_ptr(), token)
        })
    }

    /// The module's own TypeDef `name` (`Namespace.Type`, nested `Outer/Inner`), or
    /// `None`.
    ///
    /// # Errors
    /// The host's status.
    pub fn find_type(&self, name: &str) -> Result<Option<Token>, Status> {
        let name = c_name(name)?;
        let mut token = 0u32;
        // SAFETY: as in `type_ref`.
        let status = unsafe {
            (self.lent.host.module_find_type)(self.lent.handle, name.as_ptr(), &mut token)
        };
        found(status, token)
    }

    /// A TypeSpec of the type `text` writes (`class 0x01000005<int32>`, `!0[]`).
    ///
    /// # Errors
    /// The host's status.
    pub fn type_spec(&self, text: &str) -> Result<Token, Status> {
        let text = c_name(text)?;
        // SAFETY: as in `type_ref`.
        self.define(|h, token| unsafe {
            (self.lent.host.module_type_spec)(h, text.as_ptr(), token)
        })
    }

    /// A MemberRef to the method `name` of `parent` (a TypeRef, TypeDef, TypeSpec or
    /// ModuleRef) with the signature `signature` writes (`instance void (int32)`).
    ///
    /// # Errors
    /// The host's status.
    pub fn method_ref(&self, parent: Token, name: &str, signature: &str) -> Result<Token, Status> {
        let (name, signature) = (c_name(name)?, c_name(signature)?);
        // SAFETY: as in `type_ref`.
        self.define(|h, token| unsafe {
            (self.lent.host.module_method_ref)(h, parent, name.as_ptr(), signature.as_ptr(), token)
        })
    }

    /// A MemberRef to the field `name` of `parent` of the type `type_text` writes.
    ///
    /// # Errors
    /// The host's status.
    pub fn field_ref(&self, parent: Token, name: &str, type_text: &str) -> Result<Token, Status> {
        let (name, text) = (c_name(name)?, c_name(type_text)?);
        // SAFETY: as in `type_ref`.
        self.define(|h, token| unsafe {
            (self.lent.host.module_field_ref)(h, parent, name.as_ptr(), text.as_ptr(), token)
        })
    }

    /// A MethodSpec of the generic method `method` (a MethodDef or MemberRef) with the
    /// type arguments `arguments` writes (`int32, string`).
    ///
    /// # Errors
    /// The host's status.
    pub fn method_spec(&self, method: Token, arguments: &str) -> Result<Token, Status> {
        let arguments = c_name(arguments)?;
        // SAFETY: as in `type_ref`.
        self.define(|h, token| unsafe {
            (self.lent.host.module_method_spec)(h, method, arguments.as_ptr(), token)
        })
    }

    /// A user string, for `ldstr` ([`Instruction::ldstr`](crate::Instruction::ldstr)):
    /// any text, NULs and non-ASCII kept.
    ///
    /// # Errors
    /// The host's status.
    pub fn user_string(&self, text: &str) -> Result<Token, Status> {
        // SAFETY: the host's function, with its handle, `text.len()` bytes and an
        // out-pointer, valid for the call.
        self.define(|h, token| unsafe {
            (self.lent.host.module_user_string)(
                h,
                text.as_ptr().cast::<c_char>(),
                text.len(),
                token,
            )
        })
    }

    /// A StandAloneSig of the call-site signature `text` writes, for `calli`.
    ///
    /// # Errors
    /// The host's status.
    pub fn signature(&self, text: &str) -> Result<Token, Status> {
        let text = c_name(text)?;
        // SAFETY: as in `type_ref`.
        self.define(|h, token| unsafe {
            (self.lent.host.module_signature)(h, text.as_ptr(), token)
        })
    }

    /// A StandAloneSig of a call-site signature as raw ECMA-335 signature bytes
    /// (checked by the host to be one method signature).
    ///
    /// # Errors
    /// The host's status.
    pub fn signature_bytes(&self, blob: &[u8]) -> Result<Token, Status> {
        // SAFETY: the host's function, with its handle, `blob.len()` bytes and an
        // out-pointer, valid for the call.
        self.define(|h, token| unsafe {
            (self.lent.host.module_signature_bytes)(h, blob.as_ptr(), blob.len(), token)
        })
    }

    /// Sets the method's data item on the module to `value`, replacing the one before
    /// (which is dropped once this call returns). The host keeps it until the module
    /// unloads, it is replaced or removed, or the profiler releases its methods, and
    /// then drops it: on any thread, possibly after the method's `destroy` (log from
    /// its `Drop` with a [`Logger`], which drops lines after `destroy`); a panic in its
    /// `Drop` is caught and logged. A runtime that never releases the profiler (.NET 8
    /// at exit) never drops the items of modules still loaded.
    ///
    /// # Errors
    /// The host's status; `value` is then dropped here.
    pub fn set_item<T: Send + Sync + 'static>(&self, value: T) -> Result<(), Status> {
        give_item(value, self.lent.logger, |pointer, destroy| {
            // SAFETY: the host's function, with its handle, an item and its destructor.
            unsafe { (self.lent.host.module_set_item)(self.lent.handle, pointer, destroy) }
        })
    }

    /// Removes the method's data item from the module (dropped once this call
    /// returns).
    ///
    /// # Errors
    /// The host's status.
    pub fn remove_item(&self) -> Result<(), Status> {
        // SAFETY: the host's function, with its handle; a null item removes.
        let status = unsafe {
            (self.lent.host.module_set_item)(self.lent.handle, core::ptr::null_mut(), None)
        };
        Status::check(status)
    }

    /// The method's data item on the module, if it is a `T` (`None` when there is none
    /// or it is of another type), valid until the current call returns.
    ///
    /// # Errors
    /// The host's status.
    pub fn item<T: 'static>(&self) -> Result<Option<&'call T>, Status> {
        let mut pointer = core::ptr::null_mut();
        // SAFETY: the host's function, with its handle and an out-pointer.
        let status = unsafe { (self.lent.host.module_item)(self.lent.handle, &mut pointer) };
        // SAFETY: written by the host's item function for a handle lent for 'call; the
        // library's items are all made by `give_item`.
        unsafe { lent_item(status, pointer) }
    }

    /// Writes `message` as a line of the profiler's log.
    pub fn log(&self, message: &str) {
        self.lent.log(message);
    }

    /// The profiler's log, to keep: for lines written outside the host's calls (a
    /// data item's `Drop`, [`Method::callback`](crate::Method::callback)).
    pub fn logger(&self) -> Logger {
        self.lent.logger.clone()
    }
}

/// What [`Edit::single_ret`] gives: the body's one epilogue, which every normal return
/// reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SingleRet {
    /// The epilogue's first instruction: code inserted before it with
    /// [`Incoming::Redirect`] runs once on every normal return.
    pub epilogue: InstructionId,
    /// The local holding the return value before the epilogue (`None` for a `void`
    /// method).
    pub return_local: Option<u16>,
}

/// Code run around a whole body ([`Edit::wrap`]): `entry` first, `exit` in a `finally`
/// on every way out (a return, an exception), then `on_return` after a normal return.
///
/// The code may use the pseudo-operands: the state local
/// ([`Instruction::state_local`](crate::Instruction::state_local), of the type
/// `state_local` writes: one per call, so that `t = begin(); try { ... } finally {
/// end(t) }` works on every thread and in recursion), the return-value local
/// ([`Instruction::return_local`](crate::Instruction::return_local)), the method's
/// token ([`Instruction::method_id`](crate::Instruction::method_id)) and the ModuleID
/// ([`Instruction::module_id`](crate::Instruction::module_id)); and branch within
/// itself ([`Instruction::branch_to`](crate::Instruction::branch_to)).
#[derive(Debug, Clone, Copy, Default)]
pub struct Wrap<'a> {
    /// Runs first.
    pub entry: &'a [Instruction],
    /// Runs in a `finally`, on every way out.
    pub exit: &'a [Instruction],
    /// Runs after `exit` on a normal return.
    pub on_return: &'a [Instruction],
    /// The state local's type as text (`int32`, `int64`, `class 0x01000005`), or
    /// `None` for no state local.
    pub state_local: Option<&'a str>,
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
    pub(crate) fn new(
        host: &'call sys::ilr_host,
        logger: &'call Logger,
        handle: sys::ilr_edit,
    ) -> Edit<'call> {
        Edit {
            lent: Lent::new(host, logger, handle),
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
        Status::check(status).map(|()| Options::new(self.lent.host, self.lent.logger, options))
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

    /// The method's data item on the edited method's module ([`Module::set_item`]), if
    /// it is a `T`; `None` when there is none (a module of no interest, or one whose
    /// [`module_loaded`](crate::Method::module_loaded) failed) or it is of another
    /// type. Valid until the current call returns.
    ///
    /// # Errors
    /// The host's status.
    pub fn module_item<T: 'static>(&self) -> Result<Option<&'call T>, Status> {
        let mut pointer = core::ptr::null_mut();
        // SAFETY: the host's function, with its handle and an out-pointer.
        let status = unsafe { (self.lent.host.edit_module_item)(self.lent.handle, &mut pointer) };
        // SAFETY: written by the host's item function for a handle lent for 'call; the
        // library's items are all made by `give_item`.
        unsafe { lent_item(status, pointer) }
    }

    /// The method's data item on the edited method ([`Edit::set_method_item`]), if it
    /// is a `T`. Valid until the current call returns.
    ///
    /// # Errors
    /// The host's status.
    pub fn method_item<T: 'static>(&self) -> Result<Option<&'call T>, Status> {
        let mut pointer = core::ptr::null_mut();
        // SAFETY: as in `module_item`.
        let status = unsafe { (self.lent.host.edit_method_item)(self.lent.handle, &mut pointer) };
        // SAFETY: as in `module_item`.
        unsafe { lent_item(status, pointer) }
    }

    /// Sets the method's data item on the edited method to `value`, replacing the one
    /// before (dropped once this call returns). It lives across the method's
    /// compilations (generic instantiations, tier-up, ReJIT), which may run on other
    /// threads at once, while its module is loaded; it is dropped as
    /// [`Module::set_item`]'s.
    ///
    /// # Errors
    /// The host's status; `value` is then dropped here.
    pub fn set_method_item<T: Send + Sync + 'static>(&self, value: T) -> Result<(), Status> {
        give_item(value, self.lent.logger, |pointer, destroy| {
            // SAFETY: the host's function, with its handle, an item and its destructor.
            unsafe { (self.lent.host.edit_set_method_item)(self.lent.handle, pointer, destroy) }
        })
    }

    /// Removes the method's data item from the edited method (dropped once this call
    /// returns).
    ///
    /// # Errors
    /// The host's status.
    pub fn remove_method_item(&self) -> Result<(), Status> {
        // SAFETY: the host's function, with its handle; a null item removes.
        let status = unsafe {
            (self.lent.host.edit_set_method_item)(self.lent.handle, core::ptr::null_mut(), None)
        };
        Status::check(status)
    }

    /// A new local of the type `type_text` writes (`int64`, `class 0x01000005`); its
    /// index, for `ldloc`/`stloc` ([`Instruction::ldloc`](crate::Instruction::ldloc)).
    /// It is kept only if the edit succeeds.
    ///
    /// # Errors
    /// The host's status ([`Status::REFUSED`] for a method with no room for another
    /// local).
    pub fn add_local(&mut self, type_text: &str) -> Result<u16, Status> {
        let text = c_name(type_text)?;
        let mut index = 0u16;
        // SAFETY: the host's function, with its handle, a NUL-terminated text and an
        // out-pointer, valid for the call.
        let status =
            unsafe { (self.lent.host.edit_add_local)(self.lent.handle, text.as_ptr(), &mut index) };
        Status::check(status).map(|()| index)
    }

    /// The body's single-ret epilogue and return-value local, when
    /// [`Method::wants`](crate::Method::wants) answered
    /// [`Want::EditSingleRet`](crate::Want::EditSingleRet) (the host made the body
    /// single-ret before the first edit); `None` otherwise.
    ///
    /// # Errors
    /// The host's status.
    pub fn single_ret(&self) -> Result<Option<SingleRet>, Status> {
        let (mut epilogue, mut local) = (0u32, -1i32);
        // SAFETY: the host's function, with its handle and out-pointers.
        let status = unsafe {
            (self.lent.host.edit_single_ret)(self.lent.handle, &mut epilogue, &mut local)
        };
        let Some(()) = found(status, ())? else {
            return Ok(None);
        };
        let epilogue = InstructionId::new(epilogue).ok_or(Status::FAILED)?;
        let return_local = match local {
            -1 => None,
            index => Some(u16::try_from(index).map_err(|_| Status::FAILED)?),
        };
        Ok(Some(SingleRet {
            epilogue,
            return_local,
        }))
    }

    /// Wraps the whole body: `entry; try { body } finally { exit }`, then `on_return`
    /// ([`Wrap`]). All or nothing. Afterwards the body's instruction ids are new: walk
    /// it again (ids kept from before may name moved code).
    ///
    /// # Errors
    /// The host's status ([`Status::INVALID_ARGUMENT`] for code the host cannot take,
    /// [`Status::REFUSED`] for a body it cannot wrap, e.g. a tail call it cannot keep);
    /// the body is then unchanged.
    pub fn wrap(&mut self, wrap: &Wrap<'_>) -> Result<(), Status> {
        let state_local = wrap.state_local.map(c_name).transpose()?;
        let (entry, exit, on_return) = (
            raw_code(wrap.entry),
            raw_code(wrap.exit),
            raw_code(wrap.on_return),
        );
        let raw = sys::ilr_wrap {
            size: size_of::<sys::ilr_wrap>() as u32,
            entry: entry.as_ptr(),
            entry_count: entry.len(),
            exit: exit.as_ptr(),
            exit_count: exit.len(),
            on_return: on_return.as_ptr(),
            on_return_count: on_return.len(),
            state_local: state_local
                .as_ref()
                .map_or(core::ptr::null(), |text| text.as_ptr()),
        };
        // SAFETY: the host's function, with its handle and an `ilr_wrap` whose arrays
        // and text are valid for the call.
        let status = unsafe { (self.lent.host.edit_wrap)(self.lent.handle, &raw) };
        Status::check(status)
    }

    /// Writes `message` as a line of the profiler's log.
    pub fn log(&self, message: &str) {
        self.lent.log(message);
    }

    /// The profiler's log, to keep: for lines written outside the host's calls (a
    /// data item's `Drop`, [`Method::callback`](crate::Method::callback)).
    pub fn logger(&self) -> Logger {
        self.lent.logger.clone()
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

//! The exported functions against a fake host (a Rust `ilr_host` with a few canned
//! answers): what `ilrewrite_method_create` puts in the table, that the strings it
//! points to are the method's, that a panic anywhere becomes `ILR_E_FAILED` with its
//! message (or a logged "no" in `wants`) instead of unwinding into the host, that an
//! error's message reaches the host's buffer (cut to its capacity at a character
//! boundary), and that `destroy` drops the method.
#![allow(
    unsafe_code,
    reason = "the test plays the host: raw tables and C calls"
)]

use core::ffi::{CStr, c_char, c_void};
use std::cell::{Cell, RefCell};

use ilrewrite_method::sys::{self, ilr_error, ilr_host, ilr_instruction, ilr_method, ilr_str};
use ilrewrite_method::{
    Candidate, Edit, Error, Instruction, Method, OptionKind, OptionSpec, Options, element_type,
    opcode,
};

// ---- the method -------------------------------------------------------------------------

thread_local! {
    /// How many `Probe`s this thread dropped (each test on its own thread).
    static DROPS: Cell<usize> = const { Cell::new(0) };
}

const OPTIONS: &[OptionSpec] = &[
    OptionSpec::new("mode", OptionKind::String),
    OptionSpec::new("count", OptionKind::Integer),
];

/// Does what its option `mode` says: `panic`, `fail`, or its job.
struct Probe;

impl Drop for Probe {
    fn drop(&mut self) {
        DROPS.with(|d| d.set(d.get() + 1));
    }
}

impl Method for Probe {
    fn name(&self) -> &str {
        "probe"
    }

    fn priority(&self) -> i32 {
        7
    }

    fn options(&self) -> &[OptionSpec] {
        OPTIONS
    }

    fn start(&self, options: &Options<'_>) -> Result<(), Error> {
        match options.string("mode")? {
            Some("panic") => panic!("boom in start"),
            Some("fail") => Err(Error::new("startété refused")),
            _ => Ok(()),
        }
    }

    fn wants(&self, candidate: &Candidate<'_>) -> bool {
        let name = candidate.name().expect("a name");
        assert!(!name.contains("Panic"), "boom in wants");
        name.contains("Answer")
    }

    fn edit(&self, edit: &mut Edit<'_>) -> Result<bool, Error> {
        if edit.return_type()? != element_type::I4 {
            return Ok(false);
        }
        if edit.name()?.contains("Panic") {
            panic!("boom in edit");
        }
        edit.insert_before_returns(&[Instruction::new(opcode::NEG)])?;
        Ok(true)
    }
}

ilrewrite_method::export_method!(|| Probe);

// ---- the fake host ----------------------------------------------------------------------

thread_local! {
    static LOG: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
    static INSERTED: RefCell<Vec<ilr_instruction>> = const { RefCell::new(Vec::new()) };
}

/// Handles: options 1 `mode = "panic"`, 2 `mode = "fail"`, 3 none; candidates and
/// edits 10 `Answer::Get`, 11 `X::Panic`, both returning int32.
fn name_of(handle: u64) -> Option<&'static str> {
    match handle {
        10 => Some("Answer::Get"),
        11 => Some("X::Panic"),
        _ => None,
    }
}

fn lend(out: *mut ilr_str, text: &'static str) -> sys::ilr_status {
    // SAFETY: the library's out-pointer.
    unsafe {
        out.write(ilr_str {
            data: text.as_ptr().cast(),
            length: text.len(),
        })
    };
    sys::ILR_OK
}

unsafe extern "C" fn log(message: *const c_char, length: usize) {
    // SAFETY: the library's bytes.
    let bytes = unsafe { core::slice::from_raw_parts(message.cast::<u8>(), length) };
    LOG.with(|l| {
        l.borrow_mut()
            .push(String::from_utf8_lossy(bytes).into_owned())
    });
}
unsafe extern "C" fn option_integer(_: u64, _: *const c_char, _: *mut i64) -> sys::ilr_status {
    sys::ILR_E_NOT_FOUND
}
unsafe extern "C" fn option_boolean(_: u64, _: *const c_char, _: *mut i32) -> sys::ilr_status {
    sys::ILR_E_NOT_FOUND
}
unsafe extern "C" fn option_string(
    options: u64,
    name: *const c_char,
    value: *mut ilr_str,
) -> sys::ilr_status {
    // SAFETY: the library's NUL-terminated name.
    let name = unsafe { CStr::from_ptr(name) };
    match (options, name.to_bytes()) {
        (1, b"mode") => lend(value, "panic"),
        (2, b"mode") => lend(value, "fail"),
        (1..=3, _) => sys::ILR_E_NOT_FOUND,
        _ => sys::ILR_E_INVALID_HANDLE,
    }
}
unsafe extern "C" fn candidate_method(_: u64, _: *mut u64, _: *mut u32) -> sys::ilr_status {
    sys::ILR_E_INVALID_HANDLE
}
unsafe extern "C" fn candidate_name(candidate: u64, name: *mut ilr_str) -> sys::ilr_status {
    name_of(candidate).map_or(sys::ILR_E_INVALID_HANDLE, |n| lend(name, n))
}
unsafe extern "C" fn edit_method(_: u64, _: *mut u64, _: *mut u32) -> sys::ilr_status {
    sys::ILR_E_INVALID_HANDLE
}
unsafe extern "C" fn edit_name(edit: u64, name: *mut ilr_str) -> sys::ilr_status {
    name_of(edit).map_or(sys::ILR_E_INVALID_HANDLE, |n| lend(name, n))
}
unsafe extern "C" fn edit_options(_: u64, _: *mut u64) -> sys::ilr_status {
    sys::ILR_E_INVALID_HANDLE
}
unsafe extern "C" fn edit_return_type(edit: u64, out: *mut u8) -> sys::ilr_status {
    if name_of(edit).is_none() {
        return sys::ILR_E_INVALID_HANDLE;
    }
    // SAFETY: the library's out-pointer.
    unsafe { out.write(element_type::I4) };
    sys::ILR_OK
}
unsafe extern "C" fn body_first(_: u64, _: *mut u32) -> sys::ilr_status {
    sys::ILR_E_INVALID_HANDLE
}
unsafe extern "C" fn body_next(_: u64, _: u32, _: *mut u32) -> sys::ilr_status {
    sys::ILR_E_INVALID_HANDLE
}
unsafe extern "C" fn body_get(_: u64, _: u32, _: *mut ilr_instruction) -> sys::ilr_status {
    sys::ILR_E_INVALID_HANDLE
}
unsafe extern "C" fn body_insert_before(
    _: u64,
    _: u32,
    _: u32,
    _: *const ilr_instruction,
    _: usize,
    _: *mut u32,
) -> sys::ilr_status {
    sys::ILR_E_INVALID_HANDLE
}
unsafe extern "C" fn body_insert_after(
    _: u64,
    _: u32,
    _: *const ilr_instruction,
    _: usize,
    _: *mut u32,
) -> sys::ilr_status {
    sys::ILR_E_INVALID_HANDLE
}
unsafe extern "C" fn body_insert_at_entry(
    _: u64,
    _: *const ilr_instruction,
    _: usize,
    _: *mut u32,
) -> sys::ilr_status {
    sys::ILR_E_INVALID_HANDLE
}
unsafe extern "C" fn body_insert_before_returns(
    edit: u64,
    code: *const ilr_instruction,
    count: usize,
) -> sys::ilr_status {
    if name_of(edit).is_none() {
        return sys::ILR_E_INVALID_HANDLE;
    }
    // SAFETY: the library's `count` instructions.
    let code = unsafe { core::slice::from_raw_parts(code, count) };
    INSERTED.with(|i| i.borrow_mut().extend_from_slice(code));
    sys::ILR_OK
}

unsafe extern "C" fn option_string_at(
    _: u64,
    _: *const core::ffi::c_char,
    _: u32,
    _: *mut sys::ilr_str,
) -> sys::ilr_status {
    sys::ILR_E_NOT_FOUND
}
unsafe extern "C" fn candidate_is_target(_: u64, _: *mut i32) -> sys::ilr_status {
    sys::ILR_E_INVALID_HANDLE
}

static HOST: ilr_host = ilr_host {
    size: size_of::<ilr_host>() as u32,
    abi_version: sys::ILR_ABI_VERSION,
    log,
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
};

/// A zeroed `ilr_method` with its size set, as the host passes it.
fn empty_table() -> ilr_method {
    ilr_method {
        size: size_of::<ilr_method>() as u32,
        this: core::ptr::null_mut(),
        name: core::ptr::null(),
        priority: 0,
        options: core::ptr::null(),
        option_count: 0,
        start: None,
        check_options: None,
        wants: None,
        edit: None,
        destroy: None,
        targets: None,
    }
}

/// A message buffer of `capacity` bytes.
struct Buffer {
    bytes: Vec<u8>,
    error: ilr_error,
}

impl Buffer {
    fn new(capacity: usize) -> Buffer {
        let mut bytes = vec![0u8; capacity];
        let error = ilr_error {
            data: bytes.as_mut_ptr().cast(),
            capacity,
            length: 0,
        };
        Buffer { bytes, error }
    }

    fn text(&self) -> &str {
        core::str::from_utf8(&self.bytes[..self.error.length]).expect("UTF-8, cut at a boundary")
    }
}

/// The library's table, made by its exported `ilrewrite_method_create`.
fn created() -> ilr_method {
    let mut table = empty_table();
    let mut buffer = Buffer::new(1024);
    // SAFETY: the host's tables and buffer, valid for the call (HOST for ever).
    let status = unsafe { ilrewrite_method_create(&HOST, &mut table, &mut buffer.error) };
    assert_eq!(status, sys::ILR_OK, "{}", buffer.text());
    table
}

// ---- the tests --------------------------------------------------------------------------

#[test]
fn create_fills_the_table() {
    assert_eq!(ilrewrite_abi_version, 1);
    let table = created();
    // SAFETY: strings the table promises valid until `destroy`.
    unsafe {
        assert_eq!(CStr::from_ptr(table.name).to_str(), Ok("probe"));
        assert_eq!(table.priority, 7);
        assert_eq!(table.option_count, 2);
        let specs = core::slice::from_raw_parts(table.options, 2);
        assert_eq!(CStr::from_ptr(specs[0].name).to_str(), Ok("mode"));
        assert_eq!(specs[0].kind, sys::ILR_OPTION_STRING);
        assert_eq!(CStr::from_ptr(specs[1].name).to_str(), Ok("count"));
        assert_eq!(specs[1].kind, sys::ILR_OPTION_INTEGER);
    }
    assert_eq!(
        table.size as usize,
        size_of::<ilr_method>(),
        "size left as the host set it"
    );
    let destroy = table.destroy.expect("destroy");
    let before = DROPS.with(Cell::get);
    // SAFETY: the host's last call.
    unsafe { destroy(table.this) };
    assert_eq!(DROPS.with(Cell::get), before + 1);
}

#[test]
fn panics_and_errors_become_statuses() {
    let table = created();
    let start = table.start.expect("start");
    let mut buffer = Buffer::new(1024);
    // SAFETY: the table's function, with its state and the host's buffer.
    let status = unsafe { start(table.this, 1, &mut buffer.error) };
    assert_eq!(status, sys::ILR_E_FAILED);
    assert_eq!(buffer.text(), "panicked in `start`: boom in start");

    // An error's message, cut to the buffer's capacity at a character boundary: 6
    // bytes of "startété refused" end inside the first "é" (bytes 5 and 6).
    let mut small = Buffer::new(6);
    // SAFETY: as above.
    let status = unsafe { start(table.this, 2, &mut small.error) };
    assert_eq!(status, sys::ILR_E_FAILED);
    assert_eq!(small.text(), "start");

    let mut buffer = Buffer::new(1024);
    // SAFETY: as above.
    assert_eq!(
        unsafe { start(table.this, 3, &mut buffer.error) },
        sys::ILR_OK
    );

    // A host function's status passes through `?` as the method's answer.
    let mut buffer = Buffer::new(1024);
    // SAFETY: as above.
    let status = unsafe { start(table.this, 99, &mut buffer.error) };
    assert_eq!(status, sys::ILR_E_INVALID_HANDLE);
    assert!(
        buffer.text().contains("invalid handle"),
        "{}",
        buffer.text()
    );

    let wants = table.wants.expect("wants");
    // SAFETY: the table's function, with its state.
    unsafe {
        assert_eq!(wants(table.this, 10), sys::ILR_WANT_EDIT);
        assert_eq!(wants(table.this, 11), sys::ILR_WANT_NO);
    }
    let logged = LOG.with(|l| l.borrow().clone());
    assert!(
        logged
            .iter()
            .any(|l| l == "panicked in `wants`: boom in wants"),
        "{logged:?}"
    );

    let edit = table.edit.expect("edit");
    let mut changed = -1;
    let mut buffer = Buffer::new(1024);
    // SAFETY: the table's function, with its state, an out-parameter and a buffer.
    let status = unsafe { edit(table.this, 10, &mut changed, &mut buffer.error) };
    assert_eq!((status, changed), (sys::ILR_OK, 1), "{}", buffer.text());
    let inserted = INSERTED.with(|i| i.borrow().clone());
    assert_eq!(
        inserted,
        [Instruction::new(opcode::NEG)].map(|i| ilr_instruction {
            id: 0,
            opcode: i.opcode,
            operand_kind: sys::ILR_OPERAND_NONE,
            operand: 0,
        })
    );
    // SAFETY: as above.
    let status = unsafe { edit(table.this, 11, &mut changed, &mut buffer.error) };
    assert_eq!((status, changed), (sys::ILR_E_FAILED, 0));
    assert_eq!(buffer.text(), "panicked in `edit`: boom in edit");

    // Still usable after its panics.
    // SAFETY: as above.
    assert_eq!(unsafe { wants(table.this, 10) }, sys::ILR_WANT_EDIT);
    // SAFETY: the host's last call.
    unsafe { table.destroy.expect("destroy")(table.this) };
}

#[test]
fn create_refuses_what_it_cannot_serve() {
    // A panicking constructor.
    let mut table = empty_table();
    let mut buffer = Buffer::new(1024);
    // SAFETY: the host's tables and buffer.
    let status = unsafe {
        ilrewrite_method::export::create(&HOST, &mut table, &mut buffer.error, || -> Probe {
            panic!("no state")
        })
    };
    assert_eq!(status, sys::ILR_E_FAILED);
    assert_eq!(
        buffer.text(),
        "panicked in `ilrewrite_method_create`: no state"
    );
    assert!(
        table.this.is_null() && table.destroy.is_none(),
        "nothing filled"
    );

    // A host of another ABI version, and a method table smaller than version 1's.
    let other = ilr_host {
        abi_version: 2,
        ..HOST
    };
    let mut buffer = Buffer::new(1024);
    // SAFETY: as above.
    let status = unsafe { ilrewrite_method_create(&other, &mut table, &mut buffer.error) };
    assert_eq!(status, sys::ILR_E_INVALID_ARGUMENT);
    assert!(buffer.text().contains("ABI version 2"), "{}", buffer.text());
    let mut small = ilr_method {
        size: 8,
        ..empty_table()
    };
    let mut buffer = Buffer::new(1024);
    // SAFETY: as above.
    let status = unsafe { ilrewrite_method_create(&HOST, &mut small, &mut buffer.error) };
    assert_eq!(status, sys::ILR_E_INVALID_ARGUMENT);
    assert!(small.this.is_null(), "nothing filled");
}

/// The method's own `Drop` panicking in `destroy` is logged, not unwound.
#[test]
fn destroy_contains_a_panicking_drop() {
    struct Bad;
    impl Drop for Bad {
        fn drop(&mut self) {
            panic!("boom in drop");
        }
    }
    impl Method for Bad {
        fn name(&self) -> &str {
            "bad"
        }
        fn wants(&self, _: &Candidate<'_>) -> bool {
            false
        }
        fn edit(&self, _: &mut Edit<'_>) -> Result<bool, Error> {
            Ok(false)
        }
    }
    let mut table = empty_table();
    let mut buffer = Buffer::new(1024);
    // SAFETY: the host's tables and buffer.
    let status =
        unsafe { ilrewrite_method::export::create(&HOST, &mut table, &mut buffer.error, || Bad) };
    assert_eq!(status, sys::ILR_OK);
    // SAFETY: the host's last call.
    unsafe { table.destroy.expect("destroy")(table.this.cast::<c_void>()) };
    let logged = LOG.with(|l| l.borrow().clone());
    assert!(
        logged
            .iter()
            .any(|l| l == "panicked in `destroy`: boom in drop"),
        "{logged:?}"
    );
}

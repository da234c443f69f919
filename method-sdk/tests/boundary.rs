//! The exported functions against a fake host (a Rust `ilr_host` with a few canned
//! answers): what `ilrewrite_method_create` puts in the table, that the strings it
//! points to are the method's, that a panic anywhere becomes `ILR_E_FAILED` with its
//! message (or a logged "no" in `wants`, a logged no-op in `callback`, a logged line
//! for a data item's `Drop`) instead of unwinding into the host, that an error's
//! message reaches the host's buffer (cut to its capacity at a character boundary),
//! and that `destroy` drops the method. Then the second part of the ABI: what the
//! module-load definitions, the data items, `add_local`, `single_ret`, `wrap` and the
//! pseudo-operands pass to the host, the callbacks' words and answers, and that a
//! data item dropped after `destroy` logs nothing.
#![allow(
    unsafe_code,
    reason = "the test plays the host: raw tables and C calls"
)]

use core::ffi::{CStr, c_char, c_void};
use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicU32, Ordering};

use ilrewrite_method::sys::{
    self, ilr_assembly_ref, ilr_error, ilr_host, ilr_instruction, ilr_item_destructor, ilr_method,
    ilr_str, ilr_wrap,
};
use ilrewrite_method::{
    CallbackId, Callbacks, Candidate, Edit, Error, Events, Incoming, Instruction, Logger, Method,
    Module, OptionKind, OptionSpec, Options, Status, Want, Wrap, element_type, opcode,
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

    fn wants(&self, candidate: &Candidate<'_>) -> Want {
        let name = candidate.name().expect("a name");
        assert!(!name.contains("Panic"), "boom in wants");
        name.contains("Answer").into()
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
/// edits 10 `Answer::Get`, 11 `X::Panic`, 12 `X::Single` (single-ret, its return value
/// in local 2), 13 `X::Void` (single-ret, void), 14 `X::Wrapped`, all returning int32
/// (12 to 14 of module 20); modules 20 (assembly `Answer`), 21 (no assembly name), 22
/// (assembly `Panic`).
fn name_of(handle: u64) -> Option<&'static str> {
    match handle {
        10 => Some("Answer::Get"),
        11 => Some("X::Panic"),
        12 => Some("X::Single"),
        13 => Some("X::Void"),
        14 => Some("X::Wrapped"),
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
    edit: u64,
    at: u32,
    incoming: u32,
    code: *const ilr_instruction,
    count: usize,
    ids: *mut u32,
) -> sys::ilr_status {
    if !(12..=14).contains(&edit) {
        return sys::ILR_E_INVALID_HANDLE;
    }
    // SAFETY: the library's `count` instructions and ids.
    let (code, ids) = unsafe {
        (
            core::slice::from_raw_parts(code, count),
            core::slice::from_raw_parts_mut(ids, count),
        )
    };
    for (n, id) in ids.iter_mut().enumerate() {
        *id = 100 + n as u32;
    }
    call(format!("insert_before {at} {incoming}"));
    INSERTED.with(|i| i.borrow_mut().extend_from_slice(code));
    sys::ILR_OK
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

// The second part: module-load definitions, items, locals, single-ret, wrap.

/// A wrap as the host got it: its entry, exit and on_return code, its state local.
type Wrapped = (
    Vec<ilr_instruction>,
    Vec<ilr_instruction>,
    Vec<ilr_instruction>,
    Option<String>,
);

thread_local! {
    /// What the library asked of the host, one line each.
    static CALLS: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
    /// The last token given out of each table.
    static ROWS: RefCell<[u32; 256]> = const { RefCell::new([0; 256]) };
    /// The items set: (slot, pointer, destructor); slot a module handle, or 1000 + an
    /// edit's handle for its method's item.
    static ITEMS: RefCell<Vec<(u64, usize, ilr_item_destructor)>> =
        const { RefCell::new(Vec::new()) };
    /// Items replaced or removed, destroyed by `retire` (as the host does once the
    /// library's call returned).
    static RETIRED: RefCell<Vec<(usize, ilr_item_destructor)>> = const { RefCell::new(Vec::new()) };
    /// The last wrap: its three codes and state local.
    static WRAPPED: RefCell<Option<Wrapped>> = const { RefCell::new(None) };
}

fn call(line: String) {
    CALLS.with(|c| c.borrow_mut().push(line));
}

/// The calls made so far, and none kept.
fn calls() -> Vec<String> {
    CALLS.with(|c| c.take())
}

/// A new token of `table`.
fn row(table: u8) -> u32 {
    ROWS.with(|r| {
        let mut rows = r.borrow_mut();
        rows[table as usize] += 1;
        (u32::from(table) << 24) | rows[table as usize]
    })
}

/// Destroys the items replaced or removed (and, with `all`, every item still set: the
/// module unloads).
fn retire(all: bool) {
    let mut gone = RETIRED.with(|r| r.take());
    if all {
        gone.extend(ITEMS.with(|i| i.take()).into_iter().map(|(_, p, d)| (p, d)));
    }
    for (pointer, destroy) in gone {
        if let Some(destroy) = destroy {
            // SAFETY: the library's destructor with its own item, once.
            unsafe { destroy(pointer as *mut c_void) };
        }
    }
}

fn set_item(slot: u64, item: *mut c_void, destroy: ilr_item_destructor) -> sys::ilr_status {
    ITEMS.with(|i| {
        let mut items = i.borrow_mut();
        if let Some(at) = items.iter().position(|(s, _, _)| *s == slot) {
            let (_, pointer, old) = items.remove(at);
            RETIRED.with(|r| r.borrow_mut().push((pointer, old)));
        }
        if !item.is_null() {
            items.push((slot, item as usize, destroy));
        }
    });
    sys::ILR_OK
}

fn get_item(slot: u64, out: *mut *mut c_void) -> sys::ilr_status {
    let found = ITEMS.with(|i| i.borrow().iter().find(|(s, _, _)| *s == slot).map(|e| e.1));
    match found {
        Some(pointer) => {
            // SAFETY: the library's out-pointer.
            unsafe { out.write(pointer as *mut c_void) };
            sys::ILR_OK
        }
        None => sys::ILR_E_NOT_FOUND,
    }
}

/// A NUL-terminated string of the library.
fn text(p: *const c_char) -> String {
    // SAFETY: the library's NUL-terminated string.
    unsafe { CStr::from_ptr(p) }
        .to_str()
        .expect("UTF-8")
        .to_owned()
}

/// Answers `token` of `table` through `out`, the call recorded as `line`, for modules
/// 20 and 22.
fn defined(module: u64, line: String, table: u8, out: *mut u32) -> sys::ilr_status {
    if !matches!(module, 20 | 22) {
        return sys::ILR_E_INVALID_HANDLE;
    }
    call(line);
    // SAFETY: the library's out-pointer.
    unsafe { out.write(row(table)) };
    sys::ILR_OK
}

unsafe extern "C" fn module_id(module: u64, id: *mut u64) -> sys::ilr_status {
    // SAFETY: the library's out-pointer.
    unsafe { id.write(0x7F00_0000 + module) };
    sys::ILR_OK
}
unsafe extern "C" fn module_assembly_name(module: u64, name: *mut ilr_str) -> sys::ilr_status {
    match module {
        20 => lend(name, "Answer"),
        21 => sys::ILR_E_FAILED,
        22 => lend(name, "Panic"),
        _ => sys::ILR_E_INVALID_HANDLE,
    }
}
unsafe extern "C" fn module_assembly_ref(
    module: u64,
    assembly: *const ilr_assembly_ref,
    token: *mut u32,
) -> sys::ilr_status {
    // SAFETY: the library's `ilr_assembly_ref`.
    let assembly = unsafe { *assembly };
    let key = match assembly.public_key_token.is_null() {
        true => "none".to_owned(),
        // SAFETY: 8 bytes, by the header.
        false => unsafe { core::slice::from_raw_parts(assembly.public_key_token, 8) }
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect(),
    };
    let [a, b, c, d] = assembly.version;
    let line = format!("assembly_ref {} {a}.{b}.{c}.{d} {key}", text(assembly.name));
    defined(module, line, 0x23, token)
}
unsafe extern "C" fn module_type_ref(
    module: u64,
    scope: u32,
    name: *const c_char,
    token: *mut u32,
) -> sys::ilr_status {
    defined(
        module,
        format!("type_ref {scope:#010x} {}", text(name)),
        0x01,
        token,
    )
}
unsafe extern "C" fn module_find_type(
    module: u64,
    name: *const c_char,
    token: *mut u32,
) -> sys::ilr_status {
    let name = text(name);
    call(format!("find_type {name}"));
    match (module, name.as_str()) {
        (20, "Answer.Program") => {
            // SAFETY: the library's out-pointer.
            unsafe { token.write(0x0200_0002) };
            sys::ILR_OK
        }
        (20, _) => sys::ILR_E_NOT_FOUND,
        _ => sys::ILR_E_INVALID_HANDLE,
    }
}
unsafe extern "C" fn module_type_spec(
    module: u64,
    type_: *const c_char,
    token: *mut u32,
) -> sys::ilr_status {
    defined(module, format!("type_spec {}", text(type_)), 0x1B, token)
}
unsafe extern "C" fn module_method_ref(
    module: u64,
    parent: u32,
    name: *const c_char,
    signature: *const c_char,
    token: *mut u32,
) -> sys::ilr_status {
    let line = format!(
        "method_ref {parent:#010x} {} {}",
        text(name),
        text(signature)
    );
    defined(module, line, 0x0A, token)
}
unsafe extern "C" fn module_field_ref(
    module: u64,
    parent: u32,
    name: *const c_char,
    type_: *const c_char,
    token: *mut u32,
) -> sys::ilr_status {
    let line = format!("field_ref {parent:#010x} {} {}", text(name), text(type_));
    defined(module, line, 0x0A, token)
}
unsafe extern "C" fn module_method_spec(
    module: u64,
    method: u32,
    arguments: *const c_char,
    token: *mut u32,
) -> sys::ilr_status {
    let line = format!("method_spec {method:#010x} {}", text(arguments));
    defined(module, line, 0x2B, token)
}
unsafe extern "C" fn module_user_string(
    module: u64,
    data: *const c_char,
    length: usize,
    token: *mut u32,
) -> sys::ilr_status {
    // SAFETY: the library's `length` bytes.
    let bytes = unsafe { core::slice::from_raw_parts(data.cast::<u8>(), length) };
    let line = format!("user_string {:?}", String::from_utf8_lossy(bytes));
    defined(module, line, 0x70, token)
}
unsafe extern "C" fn module_signature(
    module: u64,
    signature: *const c_char,
    token: *mut u32,
) -> sys::ilr_status {
    defined(
        module,
        format!("signature {}", text(signature)),
        0x11,
        token,
    )
}
unsafe extern "C" fn module_signature_bytes(
    module: u64,
    blob: *const u8,
    length: usize,
    token: *mut u32,
) -> sys::ilr_status {
    // SAFETY: the library's `length` bytes.
    let bytes = unsafe { core::slice::from_raw_parts(blob, length) };
    defined(module, format!("signature_bytes {bytes:02x?}"), 0x11, token)
}
unsafe extern "C" fn module_set_item(
    module: u64,
    item: *mut c_void,
    destroy: ilr_item_destructor,
) -> sys::ilr_status {
    match module {
        20..=22 => set_item(module, item, destroy),
        _ => sys::ILR_E_INVALID_HANDLE,
    }
}
unsafe extern "C" fn module_item(module: u64, item: *mut *mut c_void) -> sys::ilr_status {
    match module {
        20..=22 => get_item(module, item),
        _ => sys::ILR_E_INVALID_HANDLE,
    }
}
unsafe extern "C" fn edit_module_item(edit: u64, item: *mut *mut c_void) -> sys::ilr_status {
    match edit {
        12..=14 => get_item(20, item),
        _ => sys::ILR_E_NOT_FOUND,
    }
}
unsafe extern "C" fn edit_method_item(edit: u64, item: *mut *mut c_void) -> sys::ilr_status {
    match name_of(edit) {
        Some(_) => get_item(1000 + edit, item),
        None => sys::ILR_E_INVALID_HANDLE,
    }
}
unsafe extern "C" fn edit_set_method_item(
    edit: u64,
    item: *mut c_void,
    destroy: ilr_item_destructor,
) -> sys::ilr_status {
    match name_of(edit) {
        Some(_) => set_item(1000 + edit, item, destroy),
        None => sys::ILR_E_INVALID_HANDLE,
    }
}
unsafe extern "C" fn edit_add_local(
    edit: u64,
    type_: *const c_char,
    index: *mut u16,
) -> sys::ilr_status {
    if name_of(edit).is_none() {
        return sys::ILR_E_INVALID_HANDLE;
    }
    call(format!("add_local {}", text(type_)));
    // SAFETY: the library's out-pointer.
    unsafe { index.write(3) };
    sys::ILR_OK
}
unsafe extern "C" fn edit_single_ret(
    edit: u64,
    epilogue: *mut u32,
    return_local: *mut i32,
) -> sys::ilr_status {
    let (first, local) = match edit {
        12 => (5, 2),
        13 => (7, -1),
        10 | 11 | 14 => return sys::ILR_E_NOT_FOUND,
        _ => return sys::ILR_E_INVALID_HANDLE,
    };
    // SAFETY: the library's out-pointers.
    unsafe {
        epilogue.write(first);
        return_local.write(local);
    }
    sys::ILR_OK
}
unsafe extern "C" fn edit_wrap(edit: u64, wrap: *const ilr_wrap) -> sys::ilr_status {
    if name_of(edit).is_none() {
        return sys::ILR_E_INVALID_HANDLE;
    }
    // SAFETY: the library's `ilr_wrap`, its arrays valid for their counts.
    let wrap = unsafe { *wrap };
    assert_eq!(wrap.size as usize, size_of::<ilr_wrap>());
    let code = |p: *const ilr_instruction, n: usize| match n {
        0 => Vec::new(),
        // SAFETY: as above.
        n => unsafe { core::slice::from_raw_parts(p, n) }.to_vec(),
    };
    let state = (!wrap.state_local.is_null()).then(|| text(wrap.state_local));
    WRAPPED.with(|w| {
        *w.borrow_mut() = Some((
            code(wrap.entry, wrap.entry_count),
            code(wrap.exit, wrap.exit_count),
            code(wrap.on_return, wrap.on_return_count),
            state,
        ))
    });
    sys::ILR_OK
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
    module_id,
    module_assembly_name,
    module_assembly_ref,
    module_type_ref,
    module_find_type,
    module_type_spec,
    module_method_ref,
    module_field_ref,
    module_method_spec,
    module_user_string,
    module_signature,
    module_signature_bytes,
    module_set_item,
    module_item,
    edit_module_item,
    edit_method_item,
    edit_set_method_item,
    edit_add_local,
    edit_single_ret,
    edit_wrap,
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
        module_loaded: None,
        events: 0,
        events_high: 0,
        callbacks: [0; 2],
        callback: None,
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
        fn wants(&self, _: &Candidate<'_>) -> Want {
            Want::No
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

// ---- the second part: module load, items, edits, callbacks ------------------------------

/// What `Definer` defines at module load, kept in the module's item.
#[derive(Debug, PartialEq, Eq)]
struct Tokens {
    console: u32,
    write_line: u32,
    hello: u32,
}

thread_local! {
    /// The `Noisy` items this thread dropped, by name.
    static DROPPED: RefCell<Vec<&'static str>> = const { RefCell::new(Vec::new()) };
}

/// An item that says when it is dropped (through the log it keeps, and `DROPPED`), and
/// panics then when it is named `bomb`.
struct Noisy {
    name: &'static str,
    logger: Logger,
}

impl Drop for Noisy {
    fn drop(&mut self) {
        DROPPED.with(|d| d.borrow_mut().push(self.name));
        self.logger.log(&format!("item: {} dropped", self.name));
        assert!(self.name != "bomb", "boom in an item's drop");
    }
}

const KEY: [u8; 8] = [0xb0, 0x3f, 0x5f, 0x7f, 0x11, 0xd5, 0x0a, 0x3a];

/// Uses the second part of the ABI: defines at module load, keeps items, edits through
/// the single-ret or a wrap, listens to three callbacks.
struct Definer;

impl Method for Definer {
    fn name(&self) -> &str {
        "definer"
    }

    fn module_loaded(&self, module: &Module<'_>) -> Result<(), Error> {
        let name = module.assembly_name()?;
        assert!(name != "Panic", "boom in module_loaded");
        assert_eq!(module.id()?, 0x7F00_0000 + 20);
        let scope = module.assembly_ref("System.Console", [4, 0, 1, 2], Some(KEY))?;
        let none = module.assembly_ref("Other", [1, 2, 3, 4], None)?;
        let console = module.type_ref(scope, "System.Console")?;
        let write_line = module.method_ref(console, "WriteLine", "void (string)")?;
        let hello = module.user_string("h\u{e9}llo\0!")?;
        module.field_ref(console, "Out", "class 0x01000001")?;
        let list = module.type_spec("class 0x01000001<int32>")?;
        module.method_spec(write_line, "int32, string")?;
        module.signature("int32 (int32)")?;
        module.signature_bytes(&[0x00, 0x01, 0x08, 0x08])?;
        assert_eq!(module.find_type("Answer.Program")?, Some(0x0200_0002));
        assert_eq!(module.find_type("Nope")?, None);
        // Text with a NUL byte never reaches the host.
        assert_eq!(module.type_spec("int32\0"), Err(Status::INVALID_ARGUMENT));
        assert_eq!((none, list), (0x2300_0002, 0x1B00_0001));
        let logger = module.logger();
        module.set_item(Noisy {
            name: "first",
            logger: logger.clone(),
        })?;
        // Replaced: the first is dropped once the call returned, not now.
        module.set_item(Tokens {
            console,
            write_line,
            hello,
        })?;
        assert!(DROPPED.with(|d| d.borrow().is_empty()));
        // Another type: none.
        assert!(module.item::<Noisy>()?.is_none());
        let back = module.item::<Tokens>()?.expect("the item just set");
        assert_eq!(back.hello, hello);
        Ok(())
    }

    fn wants(&self, candidate: &Candidate<'_>) -> Want {
        match candidate.name() {
            Ok(name) if name.contains("Single") || name.contains("Void") => Want::EditSingleRet,
            Ok(name) if name.contains("Wrapped") => Want::Edit,
            _ => Want::No,
        }
    }

    fn edit(&self, edit: &mut Edit<'_>) -> Result<bool, Error> {
        let Some(tokens) = edit.module_item::<Tokens>()? else {
            return Ok(false);
        };
        // Counts its compilations in the method's item.
        if edit.method_item::<AtomicU32>()?.is_none() {
            edit.set_method_item(AtomicU32::new(0))?;
        }
        let count = edit.method_item::<AtomicU32>()?.expect("the item just set");
        count.fetch_add(1, Ordering::Relaxed);
        if let Some(single) = edit.single_ret()? {
            let mut code = vec![
                Instruction::ldstr(tokens.hello),
                Instruction::call(tokens.write_line),
            ];
            if let Some(local) = single.return_local {
                code.extend([
                    Instruction::ldloc(local),
                    Instruction::ldc_i4(45),
                    Instruction::branch_to(opcode::BGE_S, 5),
                    Instruction::new(opcode::NOP),
                ]);
            }
            edit.insert_before(single.epilogue, Incoming::Redirect, &code)?;
            return Ok(true);
        }
        let extra = edit.add_local("int64")?;
        edit.wrap(&Wrap {
            entry: &[
                Instruction::method_id(),
                Instruction::state_local(opcode::STLOC),
                Instruction::module_id(),
                Instruction::stloc(extra),
            ],
            exit: &[
                Instruction::state_local(opcode::LDLOC),
                Instruction::call(tokens.write_line),
            ],
            on_return: &[
                Instruction::return_local(opcode::LDLOC),
                Instruction::new(opcode::POP),
            ],
            state_local: Some("int32"),
        })?;
        Ok(true)
    }

    fn events(&self) -> Events {
        Events {
            monitor: 0x20_0000,
            high: 0x10,
        }
    }

    fn callbacks(&self) -> Callbacks {
        Callbacks::NONE
            .with(CallbackId::SHUTDOWN)
            .with(CallbackId::JIT_INLINING)
            .with(CallbackId::EXCEPTION_THROWN)
    }

    fn callback(&self, id: CallbackId, args: &[u64]) -> bool {
        match id {
            // No to inlining callee 2.
            CallbackId::JIT_INLINING => args != [1, 2],
            CallbackId::EXCEPTION_THROWN => panic!("boom in callback {args:?}"),
            _ => {
                assert!(args.is_empty());
                true
            }
        }
    }
}

/// `Definer`'s table, made by `create`.
fn definer() -> ilr_method {
    let mut table = empty_table();
    let mut buffer = Buffer::new(1024);
    // SAFETY: the host's tables and buffer.
    let status = unsafe {
        ilrewrite_method::export::create(&HOST, &mut table, &mut buffer.error, || Definer)
    };
    assert_eq!(status, sys::ILR_OK, "{}", buffer.text());
    table
}

/// Calls the table's `module_loaded` on `module`: its status and message.
fn load(table: &ilr_method, module: u64) -> (sys::ilr_status, String) {
    let loaded = table.module_loaded.expect("module_loaded");
    let mut buffer = Buffer::new(1024);
    // SAFETY: the table's function, with its state, a handle and a buffer.
    let status = unsafe { loaded(table.this, module, &mut buffer.error) };
    (status, buffer.text().to_owned())
}

/// Calls the table's `edit` on `edit`: its status, `changed` and message.
fn edit_with(table: &ilr_method, edit: u64) -> (sys::ilr_status, i32, String) {
    let function = table.edit.expect("edit");
    let mut changed = -1;
    let mut buffer = Buffer::new(1024);
    // SAFETY: the table's function, with its state, a handle, an out-parameter and a
    // buffer.
    let status = unsafe { function(table.this, edit, &mut changed, &mut buffer.error) };
    (status, changed, buffer.text().to_owned())
}

#[test]
fn create_fills_the_second_part_of_the_table() {
    let table = definer();
    assert!(table.module_loaded.is_some() && table.callback.is_some());
    assert_eq!((table.events, table.events_high), (0x20_0000, 0x10));
    assert_eq!(
        table.callbacks,
        [
            1 << sys::ILR_CALLBACK_SHUTDOWN
                | 1 << sys::ILR_CALLBACK_JIT_INLINING
                | 1 << sys::ILR_CALLBACK_EXCEPTION_THROWN,
            0
        ]
    );
    // Without callbacks: an empty set, no events.
    let probe = created();
    assert_eq!(probe.callbacks, [0; 2]);
    assert_eq!((probe.events, probe.events_high), (0, 0));
    // SAFETY: the host's last calls.
    unsafe {
        table.destroy.expect("destroy")(table.this);
        probe.destroy.expect("destroy")(probe.this);
    }
}

#[test]
fn module_load_defines_by_value_and_keeps_an_item() {
    let table = definer();
    let (status, message) = load(&table, 20);
    assert_eq!(status, sys::ILR_OK, "{message}");
    assert_eq!(
        calls(),
        [
            "assembly_ref System.Console 4.0.1.2 b03f5f7f11d50a3a",
            "assembly_ref Other 1.2.3.4 none",
            "type_ref 0x23000001 System.Console",
            "method_ref 0x01000001 WriteLine void (string)",
            "user_string \"h\u{e9}llo\\0!\"",
            "field_ref 0x01000001 Out class 0x01000001",
            "type_spec class 0x01000001<int32>",
            "method_spec 0x0a000001 int32, string",
            "signature int32 (int32)",
            "signature_bytes [00, 01, 08, 08]",
            "find_type Answer.Program",
            "find_type Nope",
        ]
    );
    // The item replaced during the call is dropped after it, by the library's
    // destructor, through the log it kept.
    retire(false);
    assert_eq!(DROPPED.with(|d| d.take()), ["first"]);
    assert!(
        LOG.with(|l| l.borrow().iter().any(|l| l == "item: first dropped")),
        "{:?}",
        LOG.with(|l| l.borrow().clone())
    );

    // A host status passes through `?`: the module without a name.
    let (status, message) = load(&table, 21);
    assert_eq!(status, sys::ILR_E_FAILED);
    assert!(message.contains("failed"), "{message}");

    // A panic is a status with its message, never an unwinding.
    let (status, message) = load(&table, 22);
    assert_eq!(status, sys::ILR_E_FAILED);
    assert_eq!(
        message,
        "panicked in `module_loaded`: boom in module_loaded"
    );

    // SAFETY: the host's last call.
    unsafe { table.destroy.expect("destroy")(table.this) };
    retire(true);
}

#[test]
fn edits_use_the_module_item_locals_single_ret_and_wrap() {
    let table = definer();
    assert_eq!(load(&table, 20).0, sys::ILR_OK);
    calls();
    retire(false);
    let wants = table.wants.expect("wants");
    // SAFETY: the table's function, with its state and a handle.
    unsafe {
        assert_eq!(wants(table.this, 12), sys::ILR_WANT_EDIT_SINGLE_RET);
        assert_eq!(wants(table.this, 14), sys::ILR_WANT_EDIT);
        assert_eq!(wants(table.this, 10), sys::ILR_WANT_NO);
    }
    let tokens = (0x0A00_0001, 0x7000_0001);

    // The single-ret: code before the epilogue (5), the return-value local (2) read,
    // a branch within the code.
    INSERTED.with(|i| i.borrow_mut().clear());
    let (status, changed, message) = edit_with(&table, 12);
    assert_eq!((status, changed), (sys::ILR_OK, 1), "{message}");
    assert_eq!(calls(), ["insert_before 5 1"]);
    let inserted: Vec<_> = INSERTED
        .with(|i| i.take())
        .iter()
        .map(|r| (r.opcode, r.operand_kind, r.operand))
        .collect();
    assert_eq!(
        inserted,
        [
            (opcode::LDSTR, sys::ILR_OPERAND_TOKEN, tokens.1),
            (opcode::CALL, sys::ILR_OPERAND_TOKEN, tokens.0),
            (opcode::LDLOC, sys::ILR_OPERAND_VAR, 2),
            (opcode::LDC_I4, sys::ILR_OPERAND_INT, 45),
            (opcode::BGE_S, sys::ILR_OPERAND_CODE, 5),
            (opcode::NOP, sys::ILR_OPERAND_NONE, 0),
        ]
    );
    // A void method's single-ret has no return-value local.
    let (status, _, message) = edit_with(&table, 13);
    assert_eq!(status, sys::ILR_OK, "{message}");
    assert_eq!(INSERTED.with(|i| i.take()).len(), 2);
    calls();

    // The wrap: a new local, the pseudo-operands, the state local's type.
    let (status, changed, message) = edit_with(&table, 14);
    assert_eq!((status, changed), (sys::ILR_OK, 1), "{message}");
    assert_eq!(calls(), ["add_local int64"]);
    let (entry, exit, on_return, state) = WRAPPED.with(|w| w.take()).expect("a wrap");
    let triples = |code: &[ilr_instruction]| -> Vec<(u16, u16, i64)> {
        code.iter()
            .map(|r| (r.opcode, r.operand_kind, r.operand))
            .collect()
    };
    assert_eq!(
        triples(&entry),
        [
            (opcode::LDC_I4, sys::ILR_OPERAND_METHOD_ID, 0),
            (opcode::STLOC, sys::ILR_OPERAND_STATE_LOCAL, 0),
            (opcode::LDC_I8, sys::ILR_OPERAND_MODULE_ID, 0),
            (opcode::STLOC, sys::ILR_OPERAND_VAR, 3),
        ]
    );
    assert_eq!(
        triples(&exit),
        [
            (opcode::LDLOC, sys::ILR_OPERAND_STATE_LOCAL, 0),
            (opcode::CALL, sys::ILR_OPERAND_TOKEN, tokens.0),
        ]
    );
    assert_eq!(
        triples(&on_return),
        [
            (opcode::LDLOC, sys::ILR_OPERAND_RETURN_LOCAL, 0),
            (opcode::POP, sys::ILR_OPERAND_NONE, 0),
        ]
    );
    assert_eq!(state.as_deref(), Some("int32"));

    // Each edited method got its item; a second edit finds it (it sets none).
    let slots = || ITEMS.with(|i| i.borrow().iter().map(|e| e.0).collect::<Vec<_>>());
    assert_eq!(slots(), [20, 1012, 1013, 1014]);
    assert_eq!(edit_with(&table, 12).0, sys::ILR_OK);
    assert_eq!(slots(), [20, 1012, 1013, 1014]);
    assert!(RETIRED.with(|r| r.borrow().is_empty()));
    // The items are freed by the library's destructor (retire).
    // SAFETY: the host's last call.
    unsafe { table.destroy.expect("destroy")(table.this) };
    retire(true);
}

#[test]
fn callbacks_answer_and_contain_their_panics() {
    let table = definer();
    let callback = table.callback.expect("callback");
    let call = |id: u32, args: &[u64]| {
        let mut answer = 1;
        // SAFETY: the table's function, with its state, `args.len()` words (or null for
        // none) and an out-parameter.
        unsafe {
            callback(
                table.this,
                id,
                if args.is_empty() {
                    core::ptr::null()
                } else {
                    args.as_ptr()
                },
                args.len() as u32,
                &mut answer,
            )
        };
        answer
    };
    assert_eq!(call(sys::ILR_CALLBACK_JIT_INLINING, &[1, 2]), 0);
    assert_eq!(call(sys::ILR_CALLBACK_JIT_INLINING, &[1, 3]), 1);
    assert_eq!(call(sys::ILR_CALLBACK_SHUTDOWN, &[]), 1);
    // A panic: logged, the answer left as it came.
    assert_eq!(call(sys::ILR_CALLBACK_EXCEPTION_THROWN, &[0xdead]), 1);
    let logged = LOG.with(|l| l.borrow().clone());
    assert!(
        logged
            .iter()
            .any(|l| l == "panicked in `callback`: boom in callback [57005]"),
        "{logged:?}"
    );
    // SAFETY: the host's last call.
    unsafe { table.destroy.expect("destroy")(table.this) };
}

/// Sets a `Noisy` item on each module it is told of: `bomb` on module 20, `late` on
/// module 22.
struct Keeper;

impl Method for Keeper {
    fn name(&self) -> &str {
        "keeper"
    }

    fn module_loaded(&self, module: &Module<'_>) -> Result<(), Error> {
        let name = match module.assembly_name()? {
            "Answer" => "bomb",
            _ => "late",
        };
        module.set_item(Noisy {
            name,
            logger: module.logger(),
        })?;
        Ok(())
    }

    fn wants(&self, _: &Candidate<'_>) -> Want {
        Want::No
    }

    fn edit(&self, _: &mut Edit<'_>) -> Result<bool, Error> {
        Ok(false)
    }
}

/// Destroys the item of `slot` (its module unloads).
fn unload(slot: u64) {
    let item = ITEMS.with(|i| {
        let mut items = i.borrow_mut();
        let at = items.iter().position(|(s, _, _)| *s == slot)?;
        Some(items.remove(at))
    });
    let (_, pointer, destroy) = item.expect("an item on the slot");
    // SAFETY: the library's destructor with its own item, once.
    unsafe { destroy.expect("a destructor")(pointer as *mut c_void) };
}

/// An item's `Drop` that panics is caught and logged; an item dropped after the
/// method's `destroy` (as the host may) runs its `Drop`, and the line it logs is
/// dropped (the host's table may be gone by then).
#[test]
fn items_dropped_late_or_panicking_never_unwind() {
    let mut table = empty_table();
    let mut buffer = Buffer::new(1024);
    // SAFETY: the host's tables and buffer.
    let status = unsafe {
        ilrewrite_method::export::create(&HOST, &mut table, &mut buffer.error, || Keeper)
    };
    assert_eq!(status, sys::ILR_OK, "{}", buffer.text());
    assert_eq!(load(&table, 20).0, sys::ILR_OK);
    assert_eq!(load(&table, 22).0, sys::ILR_OK);
    LOG.with(|l| l.borrow_mut().clear());

    unload(20);
    assert_eq!(DROPPED.with(|d| d.take()), ["bomb"]);
    assert_eq!(
        LOG.with(|l| l.take()),
        [
            "item: bomb dropped",
            "panicked in a data item's drop: boom in an item's drop"
        ]
    );

    // SAFETY: the host's last call.
    unsafe { table.destroy.expect("destroy")(table.this) };
    unload(22);
    assert_eq!(DROPPED.with(|d| d.take()), ["late"]);
    assert_eq!(LOG.with(|l| l.take()), Vec::<String>::new());
}

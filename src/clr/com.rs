//! COM basics: [`Guid`], [`HResult`], the `IUnknown` and `IClassFactory` vtables, and
//! the [`ComVtable`] description every bound vtable implements.

use core::ffi::c_void;
use core::fmt;
use core::str::FromStr;

/// A COM GUID (`GUID`, `IID`, `CLSID`), laid out as in C.
///
/// Displayed in registry form, `{XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX}` (upper case);
/// [`Guid::parse`] reads that form with or without the braces, in either case.
#[repr(C)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Guid {
    /// The first 8 hex digits.
    pub data1: u32,
    /// The next 4 hex digits.
    pub data2: u16,
    /// The next 4 hex digits.
    pub data3: u16,
    /// The last 16 hex digits, as bytes in the order written.
    pub data4: [u8; 8],
}

/// Why a string is not a GUID in registry form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParseGuidError;

impl fmt::Display for ParseGuidError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("not a GUID of the form {XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX}")
    }
}

impl std::error::Error for ParseGuidError {}

/// The value of one hex digit.
const fn hex_digit(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// The number written by `s[start..start + len]` in hex (`len` <= 16).
const fn hex_field(s: &[u8], start: usize, len: usize) -> Option<u64> {
    let mut value = 0u64;
    let mut i = start;
    while i < start + len {
        match hex_digit(s[i]) {
            Some(d) => value = (value << 4) | d as u64,
            None => return None,
        }
        i += 1;
    }
    Some(value)
}

impl Guid {
    /// `{00000000-0000-0000-0000-000000000000}`.
    pub const NIL: Guid = Guid::new(0, 0, 0, [0; 8]);

    /// A GUID from its four fields, as `DEFINE_GUID` writes it.
    pub const fn new(data1: u32, data2: u16, data3: u16, data4: [u8; 8]) -> Guid {
        Guid {
            data1,
            data2,
            data3,
            data4,
        }
    }

    /// Parses the registry form, with or without braces; `None` if `s` is not one.
    const fn parse_bytes(s: &[u8]) -> Option<Guid> {
        let (start, len) = match s {
            [b'{', .., b'}'] => (1, s.len() - 2),
            _ => (0, s.len()),
        };
        if len != 36 {
            return None;
        }
        // Dashes after 8, 13, 18 and 23 characters.
        let dashes = [8, 13, 18, 23];
        let mut i = 0;
        while i < dashes.len() {
            if s[start + dashes[i]] != b'-' {
                return None;
            }
            i += 1;
        }
        let (Some(d1), Some(d2), Some(d3)) = (
            hex_field(s, start, 8),
            hex_field(s, start + 9, 4),
            hex_field(s, start + 14, 4),
        ) else {
            return None;
        };
        let mut data4 = [0u8; 8];
        let mut b = 0;
        while b < 8 {
            // Two bytes before the last dash, six after it.
            let at = if b < 2 {
                start + 19 + 2 * b
            } else {
                start + 24 + 2 * (b - 2)
            };
            match hex_field(s, at, 2) {
                Some(v) => data4[b] = v as u8,
                None => return None,
            }
            b += 1;
        }
        Some(Guid::new(d1 as u32, d2 as u16, d3 as u16, data4))
    }

    /// Parses `{XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX}` (braces optional, hex digits in
    /// either case).
    ///
    /// # Errors
    /// [`ParseGuidError`] when `s` does not have that shape.
    pub fn parse(s: &str) -> Result<Guid, ParseGuidError> {
        Self::parse_bytes(s.as_bytes()).ok_or(ParseGuidError)
    }

    /// [`Guid::parse`] for constants: a malformed string is a compile-time error when
    /// evaluated in a `const`, a panic otherwise.
    pub const fn parse_const(s: &str) -> Guid {
        match Self::parse_bytes(s.as_bytes()) {
            Some(guid) => guid,
            None => panic!("malformed GUID literal"),
        }
    }
}

impl FromStr for Guid {
    type Err = ParseGuidError;

    fn from_str(s: &str) -> Result<Guid, ParseGuidError> {
        Guid::parse(s)
    }
}

impl fmt::Display for Guid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = &self.data4;
        write!(
            f,
            "{{{:08X}-{:04X}-{:04X}-{:02X}{:02X}-{:02X}{:02X}{:02X}{:02X}{:02X}{:02X}}}",
            self.data1, self.data2, self.data3, d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]
        )
    }
}

impl fmt::Debug for Guid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// A COM `HRESULT`: negative values are failures.
///
/// Displayed as `0x80131363 (CORPROF_E_UNSUPPORTED_CALL_SEQUENCE)` for the codes named
/// here, as bare hex otherwise.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HResult(pub i32);

/// Declares the named `HResult` constants and the table [`HResult::name`] searches.
macro_rules! hresults {
    ($($(#[$attr:meta])* $name:ident = $value:literal;)*) => {
        impl HResult {
            $(
                $(#[$attr])*
                pub const $name: HResult = HResult::from_u32($value);
            )*

            /// Every named code, in declaration order.
            pub const KNOWN: &'static [(HResult, &'static str)] =
                &[$((HResult::$name, stringify!($name))),*];
        }
    };
}

hresults! {
    /// Success.
    S_OK = 0x0000_0000;
    /// Success, with a "no" or "nothing done" meaning.
    S_FALSE = 0x0000_0001;
    /// Not implemented.
    E_NOTIMPL = 0x8000_4001;
    /// The interface is not supported.
    E_NOINTERFACE = 0x8000_4002;
    /// An invalid (usually null) pointer.
    E_POINTER = 0x8000_4003;
    /// The operation was aborted.
    E_ABORT = 0x8000_4004;
    /// Unspecified failure.
    E_FAIL = 0x8000_4005;
    /// Catastrophic failure.
    E_UNEXPECTED = 0x8000_FFFF;
    /// Access denied.
    E_ACCESSDENIED = 0x8007_0005;
    /// A handle is invalid.
    E_HANDLE = 0x8007_0006;
    /// Out of memory.
    E_OUTOFMEMORY = 0x8007_000E;
    /// An invalid argument.
    E_INVALIDARG = 0x8007_0057;
    /// `IClassFactory::CreateInstance` was asked to aggregate, which it does not support.
    CLASS_E_NOAGGREGATION = 0x8004_0110;
    /// `DllGetClassObject` was asked for a class it does not provide.
    CLASS_E_CLASSNOTAVAILABLE = 0x8004_0111;
    /// The function has not been compiled yet.
    CORPROF_E_FUNCTION_NOT_COMPILED = 0x8013_1350;
    /// The requested data is not available yet (for example a static without a home yet).
    CORPROF_E_DATAINCOMPLETE = 0x8013_1351;
    /// The function has no IL (abstract, P/Invoke, runtime-implemented).
    CORPROF_E_FUNCTION_NOT_IL = 0x8013_1354;
    /// The calling thread is not a managed thread.
    CORPROF_E_NOT_MANAGED_THREAD = 0x8013_1355;
    /// The method may only be called from `Initialize`.
    CORPROF_E_CALL_ONLY_FROM_INIT = 0x8013_1356;
    /// The requested information is not available yet.
    CORPROF_E_NOT_YET_AVAILABLE = 0x8013_135B;
    /// The class is an unbound generic type.
    CORPROF_E_TYPE_IS_PARAMETERIZED = 0x8013_135C;
    /// The function is an unbound generic method.
    CORPROF_E_FUNCTION_IS_PARAMETERIZED = 0x8013_135D;
    /// `DoStackSnapshot` was asked for a thread it cannot walk.
    CORPROF_E_STACKSNAPSHOT_INVALID_TGT_THREAD = 0x8013_135E;
    /// `DoStackSnapshot` was given a context that is not in managed code.
    CORPROF_E_STACKSNAPSHOT_UNMANAGED_CTX = 0x8013_135F;
    /// `DoStackSnapshot` cannot walk the stack safely now.
    CORPROF_E_STACKSNAPSHOT_UNSAFE = 0x8013_1360;
    /// The stack-snapshot callback asked to abort the walk.
    CORPROF_E_STACKSNAPSHOT_ABORTED = 0x8013_1361;
    /// A literal static has no address.
    CORPROF_E_LITERALS_HAVE_NO_ADDRESS = 0x8013_1362;
    /// The call was made at a time the runtime does not support (for example from a thread
    /// or callback where it is illegal).
    CORPROF_E_UNSUPPORTED_CALL_SEQUENCE = 0x8013_1363;
    /// A legal asynchronous call was made at an unsafe time.
    CORPROF_E_ASYNCHRONOUS_UNSAFE = 0x8013_1364;
    /// The class is an array.
    CORPROF_E_CLASSID_IS_ARRAY = 0x8013_1365;
    /// The class is a composite (array, pointer, byref, ...).
    CORPROF_E_CLASSID_IS_COMPOSITE = 0x8013_1366;
    /// The profiler is detaching.
    CORPROF_E_PROFILER_DETACHING = 0x8013_1367;
    /// The profiler does not support attaching.
    CORPROF_E_PROFILER_NOT_ATTACHABLE = 0x8013_1368;
    /// An attach message had an unknown format.
    CORPROF_E_UNRECOGNIZED_PIPE_MSG_FORMAT = 0x8013_1369;
    /// A profiler is already loaded.
    CORPROF_E_PROFILER_ALREADY_ACTIVE = 0x8013_136A;
    /// The process cannot be profiled by this trigger.
    CORPROF_E_PROFILEE_INCOMPATIBLE_WITH_TRIGGER = 0x8013_136B;
    /// Inter-process communication with the profilee failed.
    CORPROF_E_IPC_FAILED = 0x8013_136C;
    /// The profilee process was not found.
    CORPROF_E_PROFILEE_PROCESS_NOT_FOUND = 0x8013_136D;
    /// The profiler must implement `ICorProfilerCallback3`.
    CORPROF_E_CALLBACK3_REQUIRED = 0x8013_136E;
    /// Not supported for a profiler that attached.
    CORPROF_E_UNSUPPORTED_FOR_ATTACHING_PROFILER = 0x8013_136F;
    /// Instrumentation that cannot be undone is present.
    CORPROF_E_IRREVERSIBLE_INSTRUMENTATION_PRESENT = 0x8013_1370;
    /// The runtime is not initialized yet.
    CORPROF_E_RUNTIME_UNINITIALIZED = 0x8013_1371;
    /// Immutable event-mask flags were already set.
    CORPROF_E_IMMUTABLE_FLAGS_SET = 0x8013_1372;
    /// The profiler has not finished initializing.
    CORPROF_E_PROFILER_NOT_YET_INITIALIZED = 0x8013_1373;
    /// The call is inconsistent with the event mask (for example a ReJIT request without
    /// `COR_PRF_ENABLE_REJIT`).
    CORPROF_E_INCONSISTENT_WITH_FLAGS = 0x8013_1374;
    /// The profiler cancelled its own activation.
    CORPROF_E_PROFILER_CANCEL_ACTIVATION = 0x8013_1375;
    /// Concurrent GC is enabled and prevents profiling.
    CORPROF_E_CONCURRENT_GC_NOT_PROFILABLE = 0x8013_1376;
    /// Debugging is disabled.
    CORPROF_E_DEBUGGING_DISABLED = 0x8013_1378;
    /// Timed out waiting for a concurrent GC.
    CORPROF_E_TIMEOUT_WAITING_FOR_CONCURRENT_GC = 0x8013_1379;
    /// The module is dynamic (Reflection.Emit).
    CORPROF_E_MODULE_IS_DYNAMIC = 0x8013_137A;
    /// The profiler must implement `ICorProfilerCallback4`.
    CORPROF_E_CALLBACK4_REQUIRED = 0x8013_137B;
    /// ReJIT was not enabled at startup.
    CORPROF_E_REJIT_NOT_ENABLED = 0x8013_137C;
    /// The function belongs to a collectible assembly.
    CORPROF_E_FUNCTION_IS_COLLECTIBLE = 0x8013_137E;
    /// The profiler must implement `ICorProfilerCallback6`.
    CORPROF_E_CALLBACK6_REQUIRED = 0x8013_1380;
    /// The profiler must implement `ICorProfilerCallback7`.
    CORPROF_E_CALLBACK7_REQUIRED = 0x8013_1382;
    /// ReJIT with inlining tracking is disabled.
    CORPROF_E_REJIT_INLINING_DISABLED = 0x8013_1383;
    /// A runtime suspension is already in progress.
    CORPROF_E_SUSPENSION_IN_PROGRESS = 0x8013_1388;
    /// The object is not a GC heap object.
    CORPROF_E_NOT_GC_OBJECT = 0x8013_1389;
}

impl HResult {
    /// The code with this 32-bit pattern.
    pub const fn from_u32(bits: u32) -> HResult {
        HResult(bits as i32)
    }

    /// The 32-bit pattern.
    pub const fn as_u32(self) -> u32 {
        self.0 as u32
    }

    /// `SUCCEEDED(hr)`: the severity bit is clear (`S_OK`, `S_FALSE`, ...).
    pub const fn is_ok(self) -> bool {
        self.0 >= 0
    }

    /// `FAILED(hr)`.
    pub const fn is_err(self) -> bool {
        self.0 < 0
    }

    /// `Ok(self)` for a success code, `Err(self)` for a failure.
    ///
    /// # Errors
    /// `self`, when it is a failure code.
    pub const fn ok(self) -> Result<HResult, HResult> {
        if self.is_ok() { Ok(self) } else { Err(self) }
    }

    /// The constant's name for the codes named here (`"E_FAIL"`, ...).
    pub fn name(self) -> Option<&'static str> {
        Self::KNOWN
            .iter()
            .find(|(code, _)| *code == self)
            .map(|&(_, name)| name)
    }
}

impl fmt::Display for HResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "0x{:08X}", self.as_u32())?;
        if let Some(name) = self.name() {
            write!(f, " ({name})")?;
        }
        Ok(())
    }
}

impl fmt::Debug for HResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for HResult {}

/// What every bound vtable declares about its interface; implemented by the macro that
/// declares the vtable, from the same tokens as its fields.
pub trait ComVtable {
    /// The interface's name (`"ICorProfilerInfo3"`).
    const NAME: &'static str;
    /// The interface's IID.
    const IID: Guid;
    /// The parent interface's name, `None` for `IUnknown`.
    const PARENT: Option<&'static str>;
    /// The interface's own methods, in slot order.
    const METHODS: &'static [&'static str];
    /// The parameter names of each own method (after `this`), parallel to `METHODS`.
    const PARAMS: &'static [&'static [&'static str]];
    /// Slots in the whole vtable, inherited ones included.
    const SLOTS: usize;
}

/// `{00000000-0000-0000-C000-000000000046}`.
pub const IID_IUNKNOWN: Guid = Guid::parse_const("00000000-0000-0000-C000-000000000046");

/// The `IUnknown` vtable, the root of every COM interface.
#[repr(C)]
#[allow(non_snake_case)]
#[derive(Debug)]
pub struct IUnknownVtbl {
    /// `IUnknown::QueryInterface(riid, ppvObject)`.
    pub QueryInterface: unsafe extern "system" fn(
        this: *mut c_void,
        riid: *const Guid,
        ppv_object: *mut *mut c_void,
    ) -> HResult,
    /// `IUnknown::AddRef()`: the new reference count.
    pub AddRef: unsafe extern "system" fn(this: *mut c_void) -> u32,
    /// `IUnknown::Release()`: the new reference count.
    pub Release: unsafe extern "system" fn(this: *mut c_void) -> u32,
}

impl ComVtable for IUnknownVtbl {
    const NAME: &'static str = "IUnknown";
    const IID: Guid = IID_IUNKNOWN;
    const PARENT: Option<&'static str> = None;
    const METHODS: &'static [&'static str] = &["QueryInterface", "AddRef", "Release"];
    const PARAMS: &'static [&'static [&'static str]] = &[&["riid", "ppv_object"], &[], &[]];
    const SLOTS: usize = 3;
}

const _: () = assert!(core::mem::size_of::<IUnknownVtbl>() == 3 * core::mem::size_of::<usize>());

com_interface! {
    /// The `IClassFactory` vtable: what `DllGetClassObject` hands to the runtime.
    pub struct IClassFactoryVtbl for IClassFactory: IUnknownVtbl;
    /// `{00000001-0000-0000-C000-000000000046}`.
    pub const IID_ICLASSFACTORY = "00000001-0000-0000-C000-000000000046";
    {
        fn CreateInstance(
            outer: *mut c_void,
            riid: *const Guid,
            ppv_object: *mut *mut c_void,
        ) -> HResult;
        fn LockServer(lock: i32) -> HResult;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::ptr;
    use core::sync::atomic::{AtomicU32, Ordering};

    #[test]
    fn guid_round_trips_through_the_registry_form() {
        let text = "{176FBED1-A55C-4796-98CA-A9DA0EF883E7}";
        let guid = Guid::parse(text).unwrap();
        assert_eq!(
            guid,
            Guid::new(
                0x176F_BED1,
                0xA55C,
                0x4796,
                [0x98, 0xCA, 0xA9, 0xDA, 0x0E, 0xF8, 0x83, 0xE7]
            )
        );
        assert_eq!(guid.to_string(), text);
        assert_eq!(format!("{guid:?}"), text);
        // No braces, lower case.
        assert_eq!(
            Guid::parse("176fbed1-a55c-4796-98ca-a9da0ef883e7"),
            Ok(guid)
        );
        assert_eq!(
            "176FBED1-A55C-4796-98CA-A9DA0EF883E7".parse::<Guid>(),
            Ok(guid)
        );
        assert_eq!(
            IID_IUNKNOWN.to_string(),
            "{00000000-0000-0000-C000-000000000046}"
        );
        assert_eq!(Guid::NIL, Guid::default());
    }

    #[test]
    fn malformed_guids_are_refused() {
        for bad in [
            "",
            "{}",
            "{176FBED1-A55C-4796-98CA-A9DA0EF883E7",
            "176FBED1-A55C-4796-98CA-A9DA0EF883E7}",
            "176FBED1A55C-4796-98CA-A9DA0EF883E7-",
            "176FBED1-A55C-4796-98CAA9DA0EF883E7",
            "176FBED1-A55C-4796-98CA-A9DA0EF883E",
            "176FBED1-A55C-4796-98CA-A9DA0EF883E77",
            "176FBED1-A55C-4796-98CA-A9DA0EF883EG",
            "+76FBED1-A55C-4796-98CA-A9DA0EF883E7",
            "{176FBED1-A55C-4796-98CA-A9DA0EF883E7}}",
        ] {
            assert_eq!(Guid::parse(bad), Err(ParseGuidError), "{bad:?}");
        }
    }

    #[test]
    fn hresults_show_their_names() {
        assert_eq!(
            HResult::CORPROF_E_UNSUPPORTED_CALL_SEQUENCE.to_string(),
            "0x80131363 (CORPROF_E_UNSUPPORTED_CALL_SEQUENCE)"
        );
        assert_eq!(format!("{:?}", HResult::S_OK), "0x00000000 (S_OK)");
        assert_eq!(HResult::from_u32(0x8013_1999).to_string(), "0x80131999");
        assert_eq!(HResult::E_FAIL.name(), Some("E_FAIL"));
        assert_eq!(HResult(2).name(), None);
        assert!(HResult::S_OK.is_ok() && HResult::S_FALSE.is_ok());
        assert!(HResult::E_NOINTERFACE.is_err() && HResult::CORPROF_E_DATAINCOMPLETE.is_err());
        assert_eq!(HResult::S_FALSE.ok(), Ok(HResult::S_FALSE));
        assert_eq!(HResult::E_POINTER.ok(), Err(HResult::E_POINTER));
        assert_eq!(HResult::E_OUTOFMEMORY.as_u32(), 0x8007_000E);
        // Every name is unique and every code is named once.
        for (i, (code, name)) in HResult::KNOWN.iter().enumerate() {
            for (other_code, other_name) in &HResult::KNOWN[i + 1..] {
                assert_ne!(code, other_code, "{name} and {other_name}");
                assert_ne!(name, other_name);
            }
        }
    }

    /// A minimal COM object: a pointer to its vtable, then a reference count.
    #[repr(C)]
    struct Counter {
        vtbl: *const IClassFactoryVtbl,
        refs: AtomicU32,
    }

    unsafe extern "system" fn query_interface(
        this: *mut c_void,
        riid: *const Guid,
        ppv: *mut *mut c_void,
    ) -> HResult {
        // SAFETY: the runtime (here the test) passes a valid IID and out pointer.
        let iid = unsafe { *riid };
        if iid == IID_IUNKNOWN || iid == IID_ICLASSFACTORY {
            // SAFETY: `ppv` is a valid out pointer and `this` a live `Counter`.
            unsafe {
                *ppv = this;
                add_ref(this);
            }
            HResult::S_OK
        } else {
            // SAFETY: `ppv` is a valid out pointer.
            unsafe { *ppv = ptr::null_mut() };
            HResult::E_NOINTERFACE
        }
    }

    unsafe extern "system" fn add_ref(this: *mut c_void) -> u32 {
        // SAFETY: `this` points to a live `Counter`.
        let counter = unsafe { &*this.cast::<Counter>() };
        counter.refs.fetch_add(1, Ordering::Relaxed) + 1
    }

    unsafe extern "system" fn release(this: *mut c_void) -> u32 {
        // SAFETY: `this` points to a live `Counter` (the test owns it on its stack).
        let counter = unsafe { &*this.cast::<Counter>() };
        counter.refs.fetch_sub(1, Ordering::Relaxed) - 1
    }

    unsafe extern "system" fn create_instance(
        _this: *mut c_void,
        outer: *mut c_void,
        _riid: *const Guid,
        ppv: *mut *mut c_void,
    ) -> HResult {
        // SAFETY: `ppv` is a valid out pointer.
        unsafe { *ppv = ptr::null_mut() };
        if outer.is_null() {
            HResult::CLASS_E_CLASSNOTAVAILABLE
        } else {
            HResult::CLASS_E_NOAGGREGATION
        }
    }

    unsafe extern "system" fn lock_server(_this: *mut c_void, _lock: i32) -> HResult {
        HResult::S_OK
    }

    static COUNTER_VTBL: IClassFactoryVtbl = IClassFactoryVtbl {
        base: IUnknownVtbl {
            QueryInterface: query_interface,
            AddRef: add_ref,
            Release: release,
        },
        CreateInstance: create_instance,
        LockServer: lock_server,
    };

    #[test]
    fn calls_go_through_the_vtable_slots() {
        let mut object = Counter {
            vtbl: &COUNTER_VTBL,
            refs: AtomicU32::new(1),
        };
        let this = (&raw mut object).cast::<c_void>();
        // What a caller holding only the interface pointer does: read the vtable pointer
        // at offset 0, then call a slot.
        // SAFETY: `this` points to `object`, whose first field is the vtable pointer.
        let vtbl = unsafe { &**this.cast::<*const IClassFactoryVtbl>() };
        let mut out = ptr::null_mut();
        // SAFETY: `this` is a live object implementing these slots; the IID and out
        // pointers are valid for the calls.
        unsafe {
            assert_eq!(
                (vtbl.base.QueryInterface)(this, &IID_ICLASSFACTORY, &mut out),
                HResult::S_OK
            );
            assert_eq!(out, this);
            assert_eq!((vtbl.base.Release)(this), 1);
            assert_eq!(
                (vtbl.base.QueryInterface)(this, &IID_ICLASSFACTORY_WRONG, &mut out),
                HResult::E_NOINTERFACE
            );
            assert!(out.is_null());
            assert_eq!((vtbl.base.AddRef)(this), 2);
            assert_eq!((vtbl.base.Release)(this), 1);
            assert_eq!((vtbl.LockServer)(this, 1), HResult::S_OK);
            assert_eq!(
                (vtbl.CreateInstance)(this, ptr::null_mut(), &IID_IUNKNOWN, &mut out),
                HResult::CLASS_E_CLASSNOTAVAILABLE
            );
        }
        // The slots sit where COM puts them: QueryInterface, AddRef, Release, then the
        // interface's own methods.
        assert_eq!(
            core::mem::offset_of!(IClassFactoryVtbl, CreateInstance),
            3 * core::mem::size_of::<usize>()
        );
        assert_eq!(
            core::mem::offset_of!(IClassFactoryVtbl, LockServer),
            4 * core::mem::size_of::<usize>()
        );
        assert_eq!(<IClassFactoryVtbl as ComVtable>::PARENT, Some("IUnknown"));
        assert_eq!(IClassFactoryVtbl::METHODS, ["CreateInstance", "LockServer"]);
        assert_eq!(IClassFactoryVtbl::IID, IID_ICLASSFACTORY);
    }

    const IID_ICLASSFACTORY_WRONG: Guid =
        Guid::parse_const("{00000001-0000-0000-C000-000000000047}");
}

//! [`ProfilerInfo`]: the runtime's `ICorProfilerInfo`, with typed results, named errors and
//! the call-sequence guard.

use core::ffi::c_void;

use super::error::{ClrError, ClrResult, check, from_ulong, to_ulong};
use super::guard::{CallContext, RuntimeCall, enter_runtime};
use crate::clr::com::ComPtr;
use crate::clr::sys::{
    AssemblyID, ClassID, ComVtable, CorIlMap, CorPrfHighMonitor, CorPrfModuleFlags, CorPrfMonitor,
    FunctionID, Guid, HResult, ICorProfilerInfo2Vtbl, ICorProfilerInfo3Vtbl, ICorProfilerInfo4Vtbl,
    ICorProfilerInfo5Vtbl, ICorProfilerInfo6Vtbl, ICorProfilerInfo7Vtbl, ICorProfilerInfo8Vtbl,
    ICorProfilerInfo9Vtbl, ICorProfilerInfo10Vtbl, ICorProfilerInfo11Vtbl, ICorProfilerInfo12Vtbl,
    ICorProfilerInfo13Vtbl, ICorProfilerInfo14Vtbl, ICorProfilerInfo15Vtbl, ICorProfilerInfoVtbl,
    IMethodMallocVtbl, IUnknownVtbl, ModuleID, ThreadID, mdToken,
};
use crate::ilmap::IlMap;

mod classes;
mod enumerate;
mod hooks;
mod names;
mod rejit;
mod version;

pub use classes::{ClassInfo, FieldOffset};
pub use names::AssemblyInfo;
pub use rejit::InlinerIl;
pub use version::{RuntimeKind, RuntimeVersion};

/// The function, class, module and token of a `FunctionID`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FunctionInfo {
    /// The class (0 for a method of a generic class whose instantiation is not known).
    pub class: ClassID,
    /// The module holding its metadata.
    pub module: ModuleID,
    /// Its MethodDef token.
    pub token: mdToken,
}

/// The name and assembly of a module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleInfo {
    /// The module's file path (or name, for modules without a file).
    pub name: String,
    /// The assembly the module belongs to.
    pub assembly: AssemblyID,
    /// Where the module is loaded.
    pub base_address: usize,
    /// Its `COR_PRF_MODULE_*` flags (empty from a runtime older than
    /// `ICorProfilerInfo3`).
    pub flags: CorPrfModuleFlags,
}

/// The runtime's `ICorProfilerInfo`, at the highest version the runtime gives.
///
/// Every method checks the call-sequence guard ([`super::guard`]) before calling the
/// runtime, and names the method in its errors. Cheap to clone (a reference count).
#[derive(Debug, Clone)]
pub struct ProfilerInfo {
    ptr: ComPtr<ICorProfilerInfoVtbl>,
    version: u32,
}

/// A vtable to make one call through, with the shutdown gate's count of that call
/// ([`RuntimeCall`]): the call is made while this lives.
struct Gated<'a, V> {
    vtbl: &'a V,
    _call: RuntimeCall,
}

impl<V> core::ops::Deref for Gated<'_, V> {
    type Target = V;
    fn deref(&self) -> &V {
        self.vtbl
    }
}

impl ProfilerInfo {
    /// Queries `unknown` (the `IUnknown*` that `ICorProfilerCallback::Initialize`
    /// receives) for the newest `ICorProfilerInfo` it implements, down to the first.
    ///
    /// # Safety
    /// `unknown` must be a live COM interface pointer (the caller keeps its own
    /// reference; this takes a new one).
    ///
    /// # Errors
    /// [`ClrError::Failed`] with `E_NOINTERFACE` when it implements none of them.
    pub unsafe fn from_unknown(unknown: *mut c_void) -> ClrResult<ProfilerInfo> {
        let method = "QueryInterface(ICorProfilerInfo)";
        // SAFETY: the caller promises a live interface pointer; it is borrowed, not
        // released: `ManuallyDrop` keeps the caller's reference.
        let unknown = core::mem::ManuallyDrop::new(
            unsafe { ComPtr::<IUnknownVtbl>::from_raw(unknown) }.ok_or(ClrError::Failed {
                method,
                hr: HResult::E_POINTER,
            })?,
        );
        for &(version, iid) in VERSIONS {
            let mut out = core::ptr::null_mut();
            // SAFETY: a live interface pointer; QueryInterface writes an owned pointer
            // to the interface `iid` names, or fails and writes nothing we use.
            let hr = unsafe { (unknown.vtbl().QueryInterface)(unknown.as_raw(), &iid, &mut out) };
            if hr.is_ok() {
                // SAFETY: `out` holds one reference to ICorProfilerInfo{version} (COM's
                // QueryInterface contract; `iid` is that version's, from the sealed
                // `InfoVtbl` list), whose vtable starts with ICorProfilerInfo's (each
                // version extends the last). The object is free-threaded (see the
                // `FreeThreaded` implementations in sys/info.rs), as `ComPtr`'s `Send`
                // and `Sync` for `ICorProfilerInfoVtbl` assume.
                if let Some(ptr) = unsafe { ComPtr::from_raw(out) } {
                    return Ok(ProfilerInfo { ptr, version });
                }
            }
        }
        Err(ClrError::Failed {
            method,
            hr: HResult::E_NOINTERFACE,
        })
    }

    /// The `ICorProfilerInfo` version the runtime gives (11 on .NET Core 3.1).
    pub fn version(&self) -> u32 {
        self.version
    }

    /// The guards: refuses `method` in an asynchronous context unless it is safe there,
    /// and any call outside a callback once the runtime is shutting down (the shutdown
    /// gate, [`super::guard`]); the call, counted by the gate while it lasts.
    fn guard(&self, method: &'static str) -> ClrResult<RuntimeCall> {
        if !CallContext::current().allows(method) {
            return Err(ClrError::UnsupportedCallSequence { method });
        }
        enter_runtime().ok_or(ClrError::ShuttingDown { method })
    }

    /// The vtable at version `V::VERSION`'s layout, after the guards; the call is to be
    /// made through the value returned, which keeps it counted by the shutdown gate.
    fn at<V: InfoVtbl>(&self, method: &'static str) -> ClrResult<Gated<'_, V>> {
        let call = self.guard(method)?;
        let needs = V::VERSION;
        if self.version < needs {
            return Err(ClrError::NotAvailable {
                method,
                needs,
                has: self.version,
            });
        }
        // SAFETY: the object implements ICorProfilerInfo{version} (queried in
        // `from_unknown` with the IID of that version's vtable), and `V` is the vtable
        // of ICorProfilerInfo{needs} with `needs <= version`: `InfoVtbl` is sealed and
        // implemented only by `info_versions!`, for those vtables with their version,
        // whose layouts `ComVtable` (an unsafe trait, implemented by the declaring macro)
        // vouches for. Interface versions only append methods, so the object's vtable
        // starts with `V`'s slots; it lives while `self.ptr` holds its reference, which
        // outlives the borrow.
        let vtbl = unsafe { &**(self.ptr.as_raw() as *const *const V) };
        Ok(Gated { vtbl, _call: call })
    }

    fn raw(&self) -> *mut c_void {
        self.ptr.as_raw()
    }

    /// Sets the events and code-generation controls the profiler wants
    /// (`SetEventMask2` from version 5, else `SetEventMask` with `high` empty).
    ///
    /// # Errors
    /// [`ClrError::Failed`] when the runtime refuses a flag (e.g. an immutable flag after
    /// initialization); [`ClrError::NotAvailable`] for high flags before version 5.
    pub fn set_event_mask(&self, low: CorPrfMonitor, high: CorPrfHighMonitor) -> ClrResult<()> {
        if self.version >= 5 {
            let v = self.at::<ICorProfilerInfo5Vtbl>("SetEventMask2")?;
            // SAFETY: a live ICorProfilerInfo5; plain values.
            check("SetEventMask2", unsafe {
                (v.SetEventMask2)(self.raw(), low.bits(), high.bits())
            })
        } else if high.is_empty() {
            let v = self.at::<ICorProfilerInfoVtbl>("SetEventMask")?;
            // SAFETY: a live ICorProfilerInfo; a plain value.
            check("SetEventMask", unsafe {
                (v.SetEventMask)(self.raw(), low.bits())
            })
        } else {
            Err(ClrError::NotAvailable {
                method: "SetEventMask2",
                needs: 5,
                has: self.version,
            })
        }
    }

    /// The class, module and MethodDef token of a function.
    ///
    /// # Errors
    /// [`ClrError::Failed`] for an id the runtime does not know.
    pub fn function_info(&self, function: FunctionID) -> ClrResult<FunctionInfo> {
        let v = self.at::<ICorProfilerInfoVtbl>("GetFunctionInfo")?;
        let (mut class, mut module, mut token) = (0, 0, 0);
        // SAFETY: a live ICorProfilerInfo; the out-pointers are valid locals.
        check("GetFunctionInfo", unsafe {
            (v.GetFunctionInfo)(self.raw(), function, &mut class, &mut module, &mut token)
        })?;
        Ok(FunctionInfo {
            class,
            module,
            token,
        })
    }

    /// The function of MethodDef `token` in `module` (`GetFunctionFromToken`): its
    /// `MethodDesc`, which the runtime makes when the method's type loads.
    ///
    /// # Errors
    /// [`ClrError::Failed`] when the runtime has none yet (the method's type not loaded),
    /// for a generic method's instantiation, or a module unloading.
    pub fn function_from_token(&self, module: ModuleID, token: mdToken) -> ClrResult<FunctionID> {
        let v = self.at::<ICorProfilerInfoVtbl>("GetFunctionFromToken")?;
        let mut function = 0;
        // SAFETY: a live ICorProfilerInfo; the out-pointer is a valid local.
        check("GetFunctionFromToken", unsafe {
            (v.GetFunctionFromToken)(self.raw(), module, token, &mut function)
        })?;
        match function {
            0 => Err(ClrError::Failed {
                method: "GetFunctionFromToken",
                hr: HResult::E_FAIL,
            }),
            function => Ok(function),
        }
    }

    /// The name (path), assembly, load address and flags of a module
    /// (`GetModuleInfo2` from version 3, else `GetModuleInfo` without flags).
    ///
    /// The name may be of any length: when it does not fit the buffer (260 units at
    /// first), the runtime answers `ERROR_INSUFFICIENT_BUFFER` (0x8007007A) with the
    /// length it needs, and the call is made again with that length.
    ///
    /// # Errors
    /// [`ClrError::Failed`] for a module the runtime does not know (or not loaded yet,
    /// or unloading: `CORPROF_E_DATAINCOMPLETE`), or when the runtime asks for a longer
    /// buffer without saying a length longer than the one it was given.
    pub fn module_info(&self, module: ModuleID) -> ClrResult<ModuleInfo> {
        let method = if self.version >= 3 {
            "GetModuleInfo2"
        } else {
            "GetModuleInfo"
        };
        let (mut base, mut assembly, mut flags) = (core::ptr::null(), 0, 0);
        let name = names::read_name(method, 260, |buf, capacity, len| {
            if self.version >= 3 {
                let v = self.at::<ICorProfilerInfo3Vtbl>(method)?;
                // SAFETY: a live ICorProfilerInfo3; `buf` has `capacity` writable units
                // and the other out-pointers are valid locals.
                Ok(unsafe {
                    (v.GetModuleInfo2)(
                        self.raw(),
                        module,
                        &mut base,
                        capacity,
                        len,
                        buf,
                        &mut assembly,
                        &mut flags,
                    )
                })
            } else {
                let v = self.at::<ICorProfilerInfoVtbl>(method)?;
                // SAFETY: a live ICorProfilerInfo; `buf` has `capacity` writable units
                // and the other out-pointers are valid locals.
                Ok(unsafe {
                    (v.GetModuleInfo)(
                        self.raw(),
                        module,
                        &mut base,
                        capacity,
                        len,
                        buf,
                        &mut assembly,
                    )
                })
            }
        })?;
        Ok(ModuleInfo {
            name,
            assembly,
            base_address: base as usize,
            flags,
        })
    }

    /// Appends to `out` the IL method body (header, code and sections) of MethodDef
    /// `token` of `module`, as the runtime will compile it: the original body, or the
    /// one an earlier `SetILFunctionBody` gave.
    ///
    /// # Errors
    /// [`ClrError::Failed`] (`CORPROF_E_FUNCTION_NOT_IL` for a method without IL).
    pub fn il_function_body(
        &self,
        module: ModuleID,
        token: mdToken,
        out: &mut Vec<u8>,
    ) -> ClrResult<()> {
        let v = self.at::<ICorProfilerInfoVtbl>("GetILFunctionBody")?;
        let (mut header, mut size) = (core::ptr::null(), 0u32);
        // SAFETY: a live ICorProfilerInfo; valid out-pointers.
        check("GetILFunctionBody", unsafe {
            (v.GetILFunctionBody)(self.raw(), module, token, &mut header, &mut size)
        })?;
        if header.is_null() {
            return Err(ClrError::Unexpected {
                method: "GetILFunctionBody",
                what: "no body",
            });
        }
        let size = from_ulong("GetILFunctionBody", "method body size", size)?;
        // SAFETY: the runtime returned a pointer to `size` bytes of the method's body,
        // valid while the module is loaded (it is: a method of it is being compiled or
        // the caller holds its id); they are copied before returning.
        out.extend_from_slice(unsafe { core::slice::from_raw_parts(header, size) });
        Ok(())
    }

    /// Hands `body` (a whole method body: header, code, sections) to the runtime for
    /// MethodDef `token` of `module`: copied into memory from the module's
    /// `IMethodMalloc`, then `SetILFunctionBody`.
    ///
    /// # Errors
    /// [`ClrError::Failed`] when the allocator cannot be had or the runtime refuses the
    /// body; [`ClrError::Unexpected`] when the allocation fails.
    pub fn set_il_function_body(
        &self,
        module: ModuleID,
        token: mdToken,
        body: &[u8],
    ) -> ClrResult<()> {
        let v = self.at::<ICorProfilerInfoVtbl>("GetILFunctionBodyAllocator")?;
        let mut malloc = core::ptr::null_mut();
        // SAFETY: a live ICorProfilerInfo; a valid out-pointer.
        check("GetILFunctionBodyAllocator", unsafe {
            (v.GetILFunctionBodyAllocator)(self.raw(), module, &mut malloc)
        })?;
        // SAFETY: on success the runtime wrote an owned IMethodMalloc pointer.
        let malloc: ComPtr<IMethodMallocVtbl> =
            unsafe { ComPtr::from_raw(malloc) }.ok_or(ClrError::Unexpected {
                method: "GetILFunctionBodyAllocator",
                what: "null allocator",
            })?;
        let len = to_ulong("IMethodMalloc::Alloc", "method body size", body.len())?;
        // SAFETY: a live IMethodMalloc; the size is a plain value.
        let dest = unsafe { (malloc.vtbl().Alloc)(malloc.as_raw(), len) } as *mut u8;
        if dest.is_null() {
            return Err(ClrError::Unexpected {
                method: "IMethodMalloc::Alloc",
                what: "allocation failed",
            });
        }
        // SAFETY: `dest` is a fresh allocation of `len` bytes (the runtime owns it; it
        // must stay alive, which is the runtime's business), `body` has `len` bytes, and
        // they cannot overlap.
        unsafe { core::ptr::copy_nonoverlapping(body.as_ptr(), dest, body.len()) };
        let v = self.at::<ICorProfilerInfoVtbl>("SetILFunctionBody")?;
        // SAFETY: a live ICorProfilerInfo; `dest` holds the whole body.
        check("SetILFunctionBody", unsafe {
            (v.SetILFunctionBody)(self.raw(), module, token, dest)
        })
    }

    /// Tells the runtime where each original IL offset went (for debuggers and IL-to-
    /// native maps), for the function being compiled.
    ///
    /// # Errors
    /// [`ClrError::Failed`] when the runtime refuses the map.
    pub fn set_il_instrumented_code_map(&self, function: FunctionID, map: &IlMap) -> ClrResult<()> {
        let v = self.at::<ICorProfilerInfoVtbl>("SetILInstrumentedCodeMap")?;
        let n = to_ulong(
            "SetILInstrumentedCodeMap",
            "IL map entries",
            map.entries().len(),
        )?;
        // The runtime copies the array and never frees the caller's: CoreCLR 3.1.23,
        // src/vm/proftoeeinterfaceimpl.cpp, ProfToEEInterfaceImpl::SetILInstrumentedCodeMap
        // (lines 4626-4631: `new COR_IL_MAP[cILMapEntries]`, then a copy of the entries,
        // handed to the debugger interface); the same in dotnet/runtime since. So the
        // array is ours, allocated by Rust and dropped when the call returns, whatever
        // the answer. (An array from CoTaskMemAlloc was leaked here before: 1.18 MB over
        // 4,512 methods.)
        let array = MapArray::new(map);
        // SAFETY: a live ICorProfilerInfo; `array` holds `n` maps and outlives the call;
        // the runtime only reads it during the call.
        check("SetILInstrumentedCodeMap", unsafe {
            (v.SetILInstrumentedCodeMap)(self.raw(), function, 1, n, array.as_ptr())
        })
    }

    /// The runtime's id of the current thread (safe to call asynchronously).
    ///
    /// # Errors
    /// [`ClrError::Failed`] (`CORPROF_E_NOT_MANAGED_THREAD` on a thread the runtime does
    /// not know).
    pub fn current_thread_id(&self) -> ClrResult<ThreadID> {
        let v = self.at::<ICorProfilerInfoVtbl>("GetCurrentThreadID")?;
        let mut id = 0;
        // SAFETY: a live ICorProfilerInfo; a valid out-pointer.
        check("GetCurrentThreadID", unsafe {
            (v.GetCurrentThreadID)(self.raw(), &mut id)
        })?;
        Ok(id)
    }

    /// The metadata interface `V` (`IMetaDataImport2`, `IMetaDataEmit2`, ...) of a
    /// module, opened for reading, or for reading and writing (`write`).
    ///
    /// # Errors
    /// [`ClrError::Failed`] for a module the runtime does not know or an interface it
    /// does not give.
    pub fn module_metadata<V: ComVtable>(
        &self,
        module: ModuleID,
        write: bool,
    ) -> ClrResult<ComPtr<V>> {
        let v = self.at::<ICorProfilerInfoVtbl>("GetModuleMetaData")?;
        let mut out = core::ptr::null_mut();
        // SAFETY: a live ICorProfilerInfo; the IID and out-pointer are valid for the call;
        // on success `out` receives an owned pointer to the interface `V::IID` names.
        check("GetModuleMetaData", unsafe {
            (v.GetModuleMetaData)(self.raw(), module, u32::from(write), &V::IID, &mut out)
        })?;
        // SAFETY: on success `out` holds one reference to the interface `V::IID` names,
        // whose vtable is `V`: `ComVtable`'s contract (an unsafe trait) for `V`. If `V`
        // is `FreeThreaded`, the module's metadata object is (sys/metadata.rs says why).
        unsafe { ComPtr::from_raw(out) }.ok_or(ClrError::Unexpected {
            method: "GetModuleMetaData",
            what: "null interface",
        })
    }

    /// The raw interface at version `V` and the `this` pointer to pass, for the methods
    /// this wrapper does not cover. Calls through it bypass the call-sequence guard.
    ///
    /// # Errors
    /// [`ClrError::NotAvailable`] when the runtime's version is older than `V`'s.
    pub fn raw_vtable<V: InfoVtbl>(&self) -> ClrResult<(&V, *mut c_void)> {
        if self.version < V::VERSION {
            return Err(ClrError::NotAvailable {
                method: V::NAME,
                needs: V::VERSION,
                has: self.version,
            });
        }
        // SAFETY: as in `at` (same version check, same sealed `InfoVtbl`).
        Ok((
            unsafe { &**(self.ptr.as_raw() as *const *const V) },
            self.raw(),
        ))
    }
}

/// Implemented by the vtable of each `ICorProfilerInfo` version, with its number: the
/// `V` of [`ProfilerInfo::raw_vtable`].
///
/// Sealed: only the crate's `ICorProfilerInfo` .. `ICorProfilerInfo15` vtables implement
/// it. [`ProfilerInfo`] reads the runtime's object as a `V` once the runtime's version is
/// at least `V::VERSION`; an implementation elsewhere (a vtable with more slots than its
/// version has, a wrong number) would make that read, and the calls through it, go past
/// the object's vtable. The set of versions is the runtime's, not the user's, so the
/// trait is closed rather than `unsafe`.
///
/// ```compile_fail,E0277
/// use core::ffi::c_void;
/// use ilrewrite::clr::InfoVtbl;
/// use ilrewrite::clr::sys::{ComVtable, Guid, HResult};
/// use ilrewrite::clr::sys::ICorProfilerInfoVtbl;
///
/// /// ICorProfilerInfo with a slot it does not have.
/// #[repr(C)]
/// #[allow(non_snake_case)]
/// struct LongerVtbl {
///     base: ICorProfilerInfoVtbl,
///     Extra: unsafe extern "system" fn(this: *mut c_void) -> HResult,
/// }
///
/// // SAFETY: (the point of the example is the next impl, refused however this one is
/// // argued).
/// unsafe impl ComVtable for LongerVtbl {
///     const NAME: &'static str = "ILonger";
///     const IID: Guid = Guid::parse_const("{8F4A3C52-0C1E-4E8B-9D2A-6B7E5F1A2C3E}");
///     const PARENT: Option<&'static str> = Some("ICorProfilerInfo");
///     const METHODS: &'static [&'static str] = &["Extra"];
///     const PARAMS: &'static [&'static [&'static str]] = &[&[]];
///     const SLOTS: usize = <ICorProfilerInfoVtbl as ComVtable>::SLOTS + 1;
/// }
///
/// impl InfoVtbl for LongerVtbl {
///     const VERSION: u32 = 1; // the private supertrait is not implemented: refused
/// }
/// ```
pub trait InfoVtbl: ComVtable + sealed::Sealed {
    /// The interface's version: 1 for `ICorProfilerInfo`, 2 for `ICorProfilerInfo2`, ...
    const VERSION: u32;
}

/// The private supertrait that seals [`InfoVtbl`]: nameable only inside this module.
mod sealed {
    /// Implemented, with `InfoVtbl`, by `info_versions!` only.
    pub trait Sealed {}
}

/// Implements [`InfoVtbl`] for each `ICorProfilerInfo` vtable with its version, and lists
/// the versions for `ProfilerInfo::from_unknown`. The unsafe reads of `ProfilerInfo::at`
/// and `raw_vtable` rely on each pair being right: the vtable of `ICorProfilerInfo{n}` and
/// `n` (each version's vtable extends the previous one's, parent first, as the `sys`
/// declarations and `tests/clr_bindings.rs` check).
macro_rules! info_versions {
    ($($vtbl:ident = $n:literal),* $(,)?) => {
        $(
            impl sealed::Sealed for $vtbl {}
            impl InfoVtbl for $vtbl { const VERSION: u32 = $n; }
        )*
        /// The `ICorProfilerInfo` IIDs, newest first, with their version numbers.
        const VERSIONS: &[(u32, Guid)] = &[$(($n, <$vtbl as ComVtable>::IID)),*];
    };
}

info_versions! {
    ICorProfilerInfo15Vtbl = 15,
    ICorProfilerInfo14Vtbl = 14,
    ICorProfilerInfo13Vtbl = 13,
    ICorProfilerInfo12Vtbl = 12,
    ICorProfilerInfo11Vtbl = 11,
    ICorProfilerInfo10Vtbl = 10,
    ICorProfilerInfo9Vtbl = 9,
    ICorProfilerInfo8Vtbl = 8,
    ICorProfilerInfo7Vtbl = 7,
    ICorProfilerInfo6Vtbl = 6,
    ICorProfilerInfo5Vtbl = 5,
    ICorProfilerInfo4Vtbl = 4,
    ICorProfilerInfo3Vtbl = 3,
    ICorProfilerInfo2Vtbl = 2,
    ICorProfilerInfoVtbl = 1,
}

/// An IL map as the runtime takes it (`COR_IL_MAP[]`), owned by Rust: the runtime copies
/// it during `SetILInstrumentedCodeMap` and keeps no pointer to it.
pub(super) struct MapArray(Box<[CorIlMap]>);

#[cfg(test)]
/// Arrays made and dropped (for the test that none is left behind).
static MAP_ARRAYS: [core::sync::atomic::AtomicUsize; 2] =
    [const { core::sync::atomic::AtomicUsize::new(0) }; 2];

impl MapArray {
    pub(super) fn new(map: &IlMap) -> MapArray {
        #[cfg(test)]
        MAP_ARRAYS[0].fetch_add(1, core::sync::atomic::Ordering::SeqCst);
        MapArray(map.entries().iter().map(|&e| CorIlMap::from(e)).collect())
    }

    /// The first entry (dangling but aligned for an empty map, which the runtime
    /// does not read).
    pub(super) fn as_ptr(&self) -> *mut CorIlMap {
        self.0.as_ptr().cast_mut()
    }
}

#[cfg(test)]
impl Drop for MapArray {
    fn drop(&mut self) {
        MAP_ARRAYS[1].fetch_add(1, core::sync::atomic::Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clr::com::fake::FakeUnknown;

    /// A stand-in for the runtime's `ICorProfilerInfo` that answers `GetModuleInfo` as
    /// CoreCLR 3.1 does (proftoeeinterfaceimpl.cpp, `GetModuleInfo2`): a name that does
    /// not fit is not written, the answer is `ERROR_INSUFFICIENT_BUFFER` and the length
    /// needed (null included) is given. Only its `IUnknown` slots and `GetModuleInfo`
    /// may be called.
    #[repr(C)]
    struct FakeInfo {
        /// Its `IUnknown` half; first, as the layout of a fake requires.
        unknown: FakeUnknown<ICorProfilerInfoVtbl>,
        name: Vec<u16>,
        /// The `cchName` of each call.
        calls: std::sync::Mutex<Vec<u32>>,
        /// Answer `ERROR_INSUFFICIENT_BUFFER` with this length instead (a runtime that
        /// misbehaves), when set.
        lying_len: Option<u32>,
        /// The IL maps `SetILInstrumentedCodeMap` copied, as the runtime does.
        maps: std::sync::Mutex<Vec<Vec<CorIlMap>>>,
    }

    /// `SetILInstrumentedCodeMap` as CoreCLR 3.1 answers it: the entries are copied
    /// (never the caller's pointer kept); a map for function 0 is refused with
    /// `E_INVALIDARG`, as the runtime refuses a null `FunctionID`.
    unsafe extern "system" fn set_il_instrumented_code_map(
        this: *mut c_void,
        function: FunctionID,
        _start_jit: i32,
        count: u32,
        entries: *mut CorIlMap,
    ) -> HResult {
        if function == 0 {
            return HResult::E_INVALIDARG;
        }
        // SAFETY: the code under test passes the live fake and `count` readable entries.
        unsafe {
            let fake = &*this.cast::<FakeInfo>();
            let copy = std::slice::from_raw_parts(entries, count as usize).to_vec();
            fake.maps.lock().unwrap().push(copy);
        }
        HResult::S_OK
    }

    /// Fills the slots of `ICorProfilerInfo` that the tests must not call.
    unsafe extern "system" fn not_called() -> HResult {
        unreachable!("a slot of the fake ICorProfilerInfo that the tests do not call")
    }

    unsafe extern "system" fn get_module_info(
        this: *mut c_void,
        _module: ModuleID,
        base: *mut *const u8,
        cch_name: u32,
        pcch_name: *mut u32,
        name: *mut u16,
        assembly: *mut AssemblyID,
    ) -> HResult {
        // SAFETY: the code under test passes the live fake, valid out-pointers and a
        // buffer of `cch_name` writable units.
        unsafe {
            let fake = &*this.cast::<FakeInfo>();
            fake.calls.lock().unwrap().push(cch_name);
            *base = 0x1000 as *const u8;
            *assembly = 0x2000;
            *name = 0;
            let true_len = fake.name.len() as u32 + 1;
            *pcch_name = true_len;
            if let Some(len) = fake.lying_len {
                *pcch_name = len;
                return HResult::from_u32(0x8007_007A);
            }
            if cch_name < true_len {
                return HResult::from_u32(0x8007_007A);
            }
            core::ptr::copy_nonoverlapping(fake.name.as_ptr(), name, fake.name.len());
            *name.add(fake.name.len()) = 0;
            HResult::S_OK
        }
    }

    fn vtable() -> &'static ICorProfilerInfoVtbl {
        static VTBL: std::sync::OnceLock<ICorProfilerInfoVtbl> = std::sync::OnceLock::new();
        VTBL.get_or_init(|| {
            const SLOTS: usize = <ICorProfilerInfoVtbl as ComVtable>::SLOTS;
            let slots: [unsafe extern "system" fn() -> HResult; SLOTS] = [not_called; SLOTS];
            // SAFETY: the vtable is `#[repr(C)]`, `SLOTS` function pointers (checked by
            // `com_interface!`); each slot gets a valid function pointer. Those of other
            // signatures are never called (the fake's contract): the ones the tests
            // call are set to functions of their right signatures below.
            let mut vtbl: ICorProfilerInfoVtbl = unsafe { core::mem::transmute(slots) };
            vtbl.base.QueryInterface = FakeUnknown::query_interface;
            vtbl.base.AddRef = FakeUnknown::add_ref;
            vtbl.base.Release = FakeUnknown::release;
            vtbl.GetModuleInfo = get_module_info;
            vtbl.SetILInstrumentedCodeMap = set_il_instrumented_code_map;
            vtbl
        })
    }

    fn fake(name: &str, lying_len: Option<u32>) -> Box<FakeInfo> {
        let iid = <ICorProfilerInfoVtbl as ComVtable>::IID;
        Box::new(FakeInfo {
            unknown: FakeUnknown::with_vtable(vtable(), Some(iid)),
            name: name.encode_utf16().collect(),
            calls: std::sync::Mutex::new(Vec::new()),
            lying_len,
            maps: std::sync::Mutex::new(Vec::new()),
        })
    }

    fn info(fake: &FakeInfo) -> ProfilerInfo {
        // SAFETY: a live object answering `QueryInterface` for `ICorProfilerInfo` with
        // itself; the test keeps its own reference.
        let info = unsafe { ProfilerInfo::from_unknown(fake.unknown.as_ptr()) };
        let info = info.expect("the fake answers ICorProfilerInfo");
        assert_eq!(info.version(), 1);
        info
    }

    /// A module path of more than 260 units, not all ASCII, comes whole: the first call
    /// gets `ERROR_INSUFFICIENT_BUFFER` and the length, the second the name.
    #[test]
    fn module_info_asks_again_with_the_length_the_runtime_needs() {
        let dir = "/tmp/".to_string() + &"répertoire-très-long-ünïcödé-目录/".repeat(12);
        let path = dir + "Program.exe";
        let units = path.encode_utf16().count();
        assert!(units > 260 && path.len() > units, "{units}");
        let fake = fake(&path, None);
        {
            let info = info(&fake);
            let got = info.module_info(0x42).expect("module_info");
            assert_eq!(got.name, path);
            assert_eq!((got.base_address, got.assembly), (0x1000, 0x2000));
            assert_eq!(*fake.calls.lock().unwrap(), [260, units as u32 + 1]);
            // A short name fits the first buffer.
        }
        let short = self::fake("/app/Short.dll", None);
        assert_eq!(info(&short).module_info(1).unwrap().name, "/app/Short.dll");
        assert_eq!(*short.calls.lock().unwrap(), [260]);
        // Every reference the code took was given back.
        assert_eq!((fake.unknown.refs(), short.unknown.refs()), (1, 1));
    }

    /// A runtime that asks for a longer buffer without a longer length gets no third
    /// call: its answer is the error.
    #[test]
    fn module_info_does_not_loop_on_a_length_that_does_not_grow() {
        let fake = fake("/app/Program.exe", Some(100));
        let e = info(&fake).module_info(1).unwrap_err();
        assert!(
            matches!(e, ClrError::Failed { method: "GetModuleInfo", hr } if hr.as_u32() == 0x8007_007A),
            "{e:?}"
        );
        assert_eq!(*fake.calls.lock().unwrap(), [260]);
        let grows_once = self::fake("/app/Program.exe", Some(300));
        assert!(info(&grows_once).module_info(1).is_err());
        assert_eq!(*grows_once.calls.lock().unwrap(), [260, 300]);
    }

    /// Every IL map array handed to the runtime is freed when the call returns, taken
    /// or refused (CoreCLR copies it: the array is the caller's), and the runtime gets
    /// the entries as the map has them.
    #[test]
    fn no_il_map_array_is_left_behind() {
        use core::sync::atomic::Ordering::SeqCst;
        let fake = fake("/app/Program.exe", None);
        let info = info(&fake);
        // As inside JITCompilationStarted (the guard refuses the call elsewhere).
        let _scope = super::super::guard::CallbackScope::enter();
        let mut body = crate::body::MethodBody::new();
        for i in 0..40 {
            body.append(crate::graph::Instruction::ldc_i4(i));
            body.append(crate::graph::Instruction::simple(
                crate::opcode::OpCode::Pop,
            ));
        }
        body.append(crate::graph::Instruction::simple(
            crate::opcode::OpCode::Ret,
        ));
        let code = body.encode().expect("encodes");
        let decoded = crate::body::MethodBody::decode(&code).expect("decodes");
        let mut encoder = crate::body::Encoder::new();
        encoder.encode(&decoded, &mut Vec::new()).expect("encodes");
        let map = IlMap::from_offsets(&decoded, encoder.encoded_offsets());
        assert!(map.entries().len() > 40);
        let (made, dropped) = (MAP_ARRAYS[0].load(SeqCst), MAP_ARRAYS[1].load(SeqCst));
        let mut refused = 0;
        for function in 0..1_000usize {
            if info
                .set_il_instrumented_code_map(function % 4, &map)
                .is_err()
            {
                refused += 1;
            }
        }
        assert_eq!(refused, 250);
        assert_eq!(MAP_ARRAYS[0].load(SeqCst) - made, 1_000);
        assert_eq!(
            MAP_ARRAYS[1].load(SeqCst) - dropped,
            1_000,
            "every array freed"
        );
        let maps = fake.maps.lock().unwrap();
        assert_eq!(maps.len(), 750);
        let expected: Vec<CorIlMap> = map.entries().iter().map(|&e| e.into()).collect();
        assert!(maps.iter().all(|m| *m == expected));
    }
}

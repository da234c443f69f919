//! `alc_probe`: a profiler with no state of the crate (no `JitRewriter`, no `Manager`, no
//! ReJIT machine) that only asks the runtime for ReJITs, to show which requests keep a
//! collectible `AssemblyLoadContext` from unloading (issue 29; `docs/design.md`,
//! "Collectible contexts and ReJIT requests"). Run `Unload.exe` under it.
//!
//! A profiler thread of its own calls, every `ALC_PROBE_PAUSE_US` microseconds (1,000 by
//! default), one request chosen by `ALC_PROBE`:
//!
//! * `host-inliners`: `RequestReJITWithInliners(BLOCK_INLINING | INLINING_CALLBACKS)`
//!   of one method of the program's own, non-collectible module (`Unload.exe`'s
//!   `ALC_PROBE_TOKEN`, default `0x06000001`): nothing of the plugin is named.
//! * `host`: `RequestReJIT` of the same method.
//! * `plugin-inliners`, `plugin`: the same two calls for the methods of the loaded
//!   `UnloadPlugin.dll` whose MethodDef rows `ALC_PROBE_ROWS` lists (`1,2,3,4,5,6` by
//!   default, every method: `.ctor`, `Square`, `Scale`, `Weigh<T>`, `Guarded`, `Chain`),
//!   while it is loaded (a lock that `ModuleUnloadStarted` takes too, so no request
//!   names an unloaded module).
//!
//! `GetReJITParameters` sets no IL (the version runs the method's own), and the codegen
//! flags `ALC_PROBE_FLAGS` names (`no-optimizations`, `no-inlining`, or none). At
//! shutdown it prints `alc_probe: requests N errors N parameters N` (requests made,
//! `ReJITError`s and failed calls, `GetReJITParameters` calls).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use ilrewrite::clr::sys::{
    CorPrfHighMonitor, CorPrfMonitor, FunctionID, HResult, ModuleID, mdMethodDef,
};
use ilrewrite::clr::{CodegenFlags, FunctionControl, InlinerIl, Profiler, ProfilerInfo, guard};

/// What the request thread asks for.
#[derive(Clone, Copy, PartialEq)]
enum Target {
    Host,
    Plugin,
}

#[derive(Default)]
struct Probe {
    info: OnceLock<ProfilerInfo>,
    flags: OnceLock<CodegenFlags>,
    /// The program's module and the plugin's module now loaded.
    host: Mutex<Option<ModuleID>>,
    plugin: Mutex<Option<ModuleID>>,
    stop: AtomicBool,
    requests: AtomicU64,
    errors: AtomicU64,
    parameters: AtomicU64,
}

/// The one profiler object, leaked: the request thread borrows it for the process's life.
static PROBE: OnceLock<&'static Probe> = OnceLock::new();

impl Probe {
    /// The request loop, on a profiler thread.
    fn run(
        &self,
        target: Target,
        inliners: bool,
        token: mdMethodDef,
        rows: &[u32],
        pause: Duration,
    ) {
        let Some(info) = self.info.get() else { return };
        while !self.stop.load(Relaxed) {
            let slot = match target {
                Target::Host => &self.host,
                Target::Plugin => &self.plugin,
            };
            let guard = slot.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(module) = *guard {
                let methods: Vec<(ModuleID, mdMethodDef)> = match target {
                    Target::Host => vec![(module, token)],
                    Target::Plugin => rows.iter().map(|r| (module, 0x0600_0000 | r)).collect(),
                };
                let done = match inliners {
                    true => info.request_rejit_with_inliners(&methods, InlinerIl::Ask),
                    false => info.request_rejit(&methods),
                };
                self.requests.fetch_add(1, Relaxed);
                if done.is_err() {
                    self.errors.fetch_add(1, Relaxed);
                }
            }
            drop(guard);
            std::thread::sleep(pause);
        }
    }
}

impl Profiler for &'static Probe {
    fn initialize(&self, info: ProfilerInfo) -> Result<(), HResult> {
        let events = CorPrfMonitor::MONITOR_MODULE_LOADS | CorPrfMonitor::ENABLE_REJIT;
        info.set_event_mask(events, CorPrfHighMonitor::empty())
            .map_err(|_| HResult::E_FAIL)?;
        let flags = match std::env::var("ALC_PROBE_FLAGS").as_deref() {
            Ok("no-optimizations") => CodegenFlags::NO_OPTIMIZATIONS,
            Ok("no-inlining") => CodegenFlags::NO_INLINING,
            _ => CodegenFlags::NONE,
        };
        let (target, inliners) = match std::env::var("ALC_PROBE").as_deref() {
            Ok("host-inliners") => (Target::Host, true),
            Ok("host") => (Target::Host, false),
            Ok("plugin-inliners") => (Target::Plugin, true),
            Ok("plugin") => (Target::Plugin, false),
            _ => {
                eprintln!(
                    "alc_probe: ALC_PROBE must be host-inliners, host, plugin-inliners or plugin"
                );
                return Err(HResult::E_FAIL);
            }
        };
        let number = |name: &str, default: u32| {
            std::env::var(name)
                .ok()
                .and_then(|v| u32::from_str_radix(v.trim_start_matches("0x"), 16).ok())
                .unwrap_or(default)
        };
        let token = number("ALC_PROBE_TOKEN", 0x0600_0001);
        let pause = std::env::var("ALC_PROBE_PAUSE_US")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(1000);
        let rows: Vec<u32> = std::env::var("ALC_PROBE_ROWS")
            .unwrap_or_else(|_| "1,2,3,4,5,6".to_owned())
            .split(',')
            .filter_map(|r| r.trim().parse().ok())
            .collect();
        let _ = self.flags.set(flags);
        let _ = self.info.set(info);
        let me: &'static Probe = self;
        guard::spawn_profiler_thread("alc_probe", move || {
            me.run(target, inliners, token, &rows, Duration::from_micros(pause));
        })
        .map_err(|_| HResult::E_FAIL)?;
        Ok(())
    }

    fn module_load_finished(&self, module: ModuleID, status: HResult) -> Result<(), HResult> {
        let Some(info) = self.info.get() else {
            return Ok(());
        };
        if status.is_err() {
            return Ok(());
        }
        let Ok(found) = info.module_info(module) else {
            return Ok(());
        };
        if found.name.ends_with("UnloadPlugin.dll") {
            *self.plugin.lock().unwrap_or_else(|e| e.into_inner()) = Some(module);
        } else if found.name.ends_with("Unload.exe") {
            *self.host.lock().unwrap_or_else(|e| e.into_inner()) = Some(module);
        }
        Ok(())
    }

    fn module_unload_started(&self, module: ModuleID) -> Result<(), HResult> {
        let mut plugin = self.plugin.lock().unwrap_or_else(|e| e.into_inner());
        if *plugin == Some(module) {
            *plugin = None;
        }
        Ok(())
    }

    fn get_rejit_parameters(
        &self,
        _: ModuleID,
        _: mdMethodDef,
        control: &FunctionControl,
    ) -> Result<(), HResult> {
        self.parameters.fetch_add(1, Relaxed);
        let flags = self.flags.get().copied().unwrap_or(CodegenFlags::NONE);
        if flags != CodegenFlags::NONE {
            control
                .set_codegen_flags(flags)
                .map_err(|_| HResult::E_FAIL)?;
        }
        Ok(())
    }

    fn rejit_error(
        &self,
        _: ModuleID,
        _: mdMethodDef,
        _: FunctionID,
        _: HResult,
    ) -> Result<(), HResult> {
        self.errors.fetch_add(1, Relaxed);
        Ok(())
    }

    fn shutdown(&self) {
        self.stop.store(true, Relaxed);
        eprintln!(
            "alc_probe: requests {} errors {} parameters {}",
            self.requests.load(Relaxed),
            self.errors.load(Relaxed),
            self.parameters.load(Relaxed)
        );
    }
}

ilrewrite::export_profiler!(
    clsid = "{6A1D4E7B-2C93-4F58-B0E6-9D3C5A7F1E24}",
    profiler = || *PROBE.get_or_init(|| Box::leak(Box::new(Probe::default())))
);

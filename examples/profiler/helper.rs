//! `helper`: calls a helper at the entry of every method of one assembly, the managed
//! `ProbeHelper.dll` (`tests/programs/ProbeHelper.cs`) through references defined when
//! the module loads, or a native function of this library through `calli`.
//!
//! `facts`: records what the runtime says of each module, and keeps data items on
//! assemblies and app domains (counted as they are made and dropped).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, OnceLock};

use ilrewrite::OpCode;
use ilrewrite::body::MethodBody;
use ilrewrite::clr::sys::mdToken;
use ilrewrite::clr::{
    AssemblyName, Candidate, ClrResult, Instrumentation, InstrumentationMethod, Interest,
    MethodEdit, MethodError, ModuleLoad, ModuleMetadata, NativeCall, OptionKind, OptionSpec,
    Profiler, Start, log,
};
use ilrewrite::sig::{FieldSig, MethodSig, TypeSig};
use ilrewrite::transform::{InstrumentationCode, Snippet};

/// The helper assembly, as `ProbeHelper.cs` builds it (mcs's default version, no
/// strong name).
const PROBE_HELPER: AssemblyName<'static> = AssemblyName {
    name: "ProbeHelper",
    version: [0, 0, 0, 0],
    public_key_token: &[],
};

/// Calls of [`helper_entered`].
pub static NATIVE_CALLS: AtomicU64 = AtomicU64::new(0);
/// Of those, calls whose argument was a MethodDef token (the method's own).
pub static NATIVE_METHOD_DEFS: AtomicU64 = AtomicU64::new(0);

/// The native helper: counts the calls, and those naming a MethodDef.
extern "C" fn helper_entered(method: i32) {
    NATIVE_CALLS.fetch_add(1, Relaxed);
    if (method as u32) >> 24 == 0x06 {
        NATIVE_METHOD_DEFS.fetch_add(1, Relaxed);
    }
}

/// Which helper `helper` calls (its option `via`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Via {
    Managed,
    Native,
}

/// The tokens a module's injected code names, in the order of the snippet's indices.
#[derive(Debug)]
struct HelperTokens(Vec<mdToken>);

/// `helper` (see the module documentation): option `assembly` (required), the simple
/// name of the assembly whose every method calls the helper; option `via`, `managed`
/// (the default) or `native`.
#[derive(Debug, Default)]
pub struct Helper {
    assembly: OnceLock<String>,
    via: OnceLock<Via>,
    code: OnceLock<Instrumentation>,
    /// Modules given the helper's tokens.
    pub modules: AtomicU64,
}

impl Helper {
    /// The entry code: managed, `if (Probe.Enabled != 0) { Probe.Enter(<assembly>);
    /// Probe.Touch<int>(); Counter<int>.Hit(); }` (tokens 0 to 4); native,
    /// `helper_entered(<method token>)` (token 0, the call-site signature).
    fn entry(via: Via) -> ilrewrite::Result<Snippet> {
        let mut b = Snippet::builder();
        match via {
            Via::Managed => {
                let skip = b.new_label();
                b.token(OpCode::Ldsfld, 0);
                b.branch(OpCode::BrfalseS, skip);
                b.token(OpCode::Ldstr, 1);
                b.token(OpCode::Call, 2);
                b.token(OpCode::Call, 3);
                b.token(OpCode::Call, 4);
                b.bind(skip);
            }
            Via::Native => {
                b.method_id();
                native_call().push(&mut b, 0);
            }
        }
        b.finish()
    }

    /// Defines in `metadata` what the entry code names.
    fn define(&self, metadata: &ModuleMetadata, assembly: &str) -> ClrResult<HelperTokens> {
        if self.via.get() == Some(&Via::Native) {
            return Ok(HelperTokens(vec![native_call().signature_token(metadata)?]));
        }
        let scope = metadata.assembly_ref(&PROBE_HELPER)?;
        let probe = metadata.define_type_ref(scope, "ProbeHelper.Probe")?;
        let counter = metadata.define_type_ref(scope, "ProbeHelper.Counter`1")?;
        let enabled = metadata.field_ref(probe, "Enabled", &FieldSig { ty: TypeSig::I4 })?;
        let name = metadata.user_string(assembly)?;
        let enter = metadata.method_ref(
            probe,
            "Enter",
            &MethodSig::new(TypeSig::Void, vec![TypeSig::String]),
        )?;
        let mut touch = MethodSig::new(TypeSig::Void, vec![]);
        touch.generic_param_count = 1;
        let touch = metadata.method_ref(probe, "Touch", &touch)?;
        let touch_int = metadata.method_spec(touch, &[TypeSig::I4])?;
        let counter_int = metadata.type_spec(&TypeSig::GenericInst {
            is_value_type: false,
            token: counter,
            args: vec![TypeSig::I4],
        })?;
        let hit =
            metadata.method_ref(counter_int, "Hit", &MethodSig::new(TypeSig::Void, vec![]))?;
        Ok(HelperTokens(vec![enabled, name, enter, touch_int, hit]))
    }
}

/// The native helper's call.
fn native_call() -> NativeCall {
    NativeCall::new(helper_entered as extern "C" fn(i32))
}

impl Profiler for Helper {}

impl InstrumentationMethod for Helper {
    fn name(&self) -> &str {
        "helper"
    }
    fn options(&self) -> &[OptionSpec] {
        const OPTIONS: [OptionSpec; 2] = [
            OptionSpec::new("assembly", OptionKind::String),
            OptionSpec::new("via", OptionKind::String),
        ];
        &OPTIONS
    }
    fn start(&self, start: &Start<'_>) -> Result<(), MethodError> {
        let options = start.options();
        let assembly = options
            .string("assembly")
            .ok_or("option `assembly` (the assembly to instrument) is required")?;
        let via = match options.string("via") {
            None | Some("managed") => Via::Managed,
            Some("native") => Via::Native,
            Some(other) => {
                let why = format!("{other:?} is not a helper (managed or native)");
                return Err(options.invalid("via", &why).into());
            }
        };
        let entry = Helper::entry(via).map_err(|e| e.to_string())?;
        let code = Instrumentation::new(InstrumentationCode {
            entry,
            ..Default::default()
        })
        .map_err(|e| e.to_string())?;
        let _ = self.assembly.set(assembly.to_owned());
        let _ = self.via.set(via);
        let _ = self.code.set(code);
        Ok(())
    }
    fn assembly_references(&self) -> Vec<AssemblyName<'_>> {
        match self.via.get() {
            Some(Via::Managed) => vec![PROBE_HELPER],
            _ => Vec::new(),
        }
    }
    fn module_loaded(&self, module: &ModuleLoad<'_>) -> Result<(), MethodError> {
        let (Some(facts), Some(assembly)) = (module.facts(), self.assembly.get()) else {
            return Ok(());
        };
        if facts.assembly_name != *assembly {
            return Ok(());
        }
        match self.define(module.module().metadata(), assembly) {
            Ok(tokens) => {
                self.modules.fetch_add(1, Relaxed);
                module.set_item(tokens);
            }
            // Without its tokens, the module's methods are not wanted: they keep
            // their IL.
            Err(e) => log::write(&format!("helper: {assembly}: no tokens defined: {e}")),
        }
        Ok(())
    }
    fn wants(&self, method: &Candidate<'_>) -> Interest {
        match method.module_item::<HelperTokens>() {
            Some(_) => Interest::Edit,
            None => Interest::No,
        }
    }
    fn edit(
        &self,
        body: &mut MethodBody,
        method: &mut MethodEdit<'_, '_>,
    ) -> ilrewrite::Result<bool> {
        let missing = ilrewrite::Error::Unencodable {
            what: "the module has no helper tokens",
        };
        let tokens = method.module_item::<HelperTokens>().ok_or(missing)?;
        let code = self.code.get().ok_or(ilrewrite::Error::Unencodable {
            what: "helper did not start",
        })?;
        code.edit(body, method.rewrite(), &tokens.0)
    }
}

/// A data item that counts its drops.
#[derive(Debug)]
struct Counted(&'static AtomicU64);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, Relaxed);
    }
}

/// Assembly items dropped.
pub static ASSEMBLY_ITEMS_DROPPED: AtomicU64 = AtomicU64::new(0);
/// App-domain items dropped.
pub static DOMAIN_ITEMS_DROPPED: AtomicU64 = AtomicU64::new(0);

/// `facts` (see the module documentation).
#[derive(Debug, Default)]
pub struct Facts {
    /// One line per assembly name, as first seen.
    seen: Mutex<BTreeMap<String, String>>,
    /// Modules without facts.
    pub unknown: AtomicU64,
    /// Assembly items made.
    pub assembly_items: AtomicU64,
    /// App-domain items made.
    pub domain_items: AtomicU64,
}

impl Facts {
    /// `NAME framework=B ready-to-run=B dynamic=B collectible=B domain=NAME`, per
    /// assembly name.
    pub fn lines(&self) -> Vec<String> {
        let seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        seen.values().cloned().collect()
    }
}

impl Profiler for Facts {}

impl InstrumentationMethod for Facts {
    fn name(&self) -> &str {
        "facts"
    }
    fn module_loaded(&self, module: &ModuleLoad<'_>) -> Result<(), MethodError> {
        let Some(facts) = module.facts() else {
            self.unknown.fetch_add(1, Relaxed);
            return Ok(());
        };
        let line = format!(
            "{} framework={} ready-to-run={} dynamic={} collectible={} domain={}",
            facts.assembly_name,
            facts.is_framework(),
            facts.is_ready_to_run(),
            facts.is_dynamic(),
            facts.is_collectible(),
            facts.app_domain_name
        );
        self.seen
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(facts.assembly_name.clone())
            .or_insert(line);
        if module.assembly_item::<Counted>().is_none()
            && module.set_assembly_item(Counted(&ASSEMBLY_ITEMS_DROPPED))
        {
            self.assembly_items.fetch_add(1, Relaxed);
        }
        if module.app_domain_item::<Counted>().is_none()
            && module.set_app_domain_item(Counted(&DOMAIN_ITEMS_DROPPED))
        {
            self.domain_items.fetch_add(1, Relaxed);
        }
        Ok(())
    }
    fn wants(&self, _: &Candidate<'_>) -> Interest {
        Interest::No
    }
    fn edit(&self, _: &mut MethodBody, _: &mut MethodEdit<'_, '_>) -> ilrewrite::Result<bool> {
        Ok(false)
    }
}

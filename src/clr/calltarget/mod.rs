//! CallTarget in a profiler: [`CallTargetMethod`], an instrumentation method that puts
//! managed begin/end hooks ([`crate::transform::CallTarget`]) around the methods its
//! [`Integration`]s select, each integration a target selector and a managed type of
//! an assembly holding the hooks (`OnMethodBegin`, `OnMethodEnd`).
//!
//! A floor above the host: it uses the [`InstrumentationMethod`] trait and the
//! runtime's metadata, nothing above them.
#![forbid(unsafe_code)]

use std::cell::Cell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock, PoisonError};

use super::host::{
    InstrumentationMethod, MethodEdit, MethodError, ModuleLoad, OptionKind, OptionSpec, Options,
    Start,
};
use super::log;
use super::profiler::Profiler;
use super::rejit::MethodKey;
use super::runtime::{AssemblyName, ModuleMetadata};
use super::sys::mdToken;
use crate::analysis::{CallEffect, CallSiteResolver};
use crate::body::MethodBody;
use crate::metadata::MetadataSource;
use crate::opcode::OpCode;
use crate::selector::Selector;
use crate::sig::{MethodSig, TypeSig};
use crate::transform::{CallTarget, CallTargetHooks, HookSignatures, HookTypes};
use present::{Inventory, Shape};

mod present;
#[cfg(test)]
mod tests;

/// The attribute the compiler puts on a `ref struct` (a byref-like type, which cannot be
/// a generic argument).
const IS_BY_REF_LIKE: &str = "System.Runtime.CompilerServices.IsByRefLikeAttribute";

/// The byref-like types of the core library, known by name where a module only
/// references them (its TypeRefs carry no attributes).
const BY_REF_LIKE_NAMES: [&str; 5] = [
    "Span`1",
    "ReadOnlySpan`1",
    "TypedReference",
    "ArgIterator",
    "RuntimeArgumentHandle",
];

/// The state type's full name in its assembly.
const STATE_TYPE: &str = "ILRewrite.CallTarget.CallTargetState";

/// A managed assembly as the references to it name it: simple name and version (no
/// public key: the helper assemblies are not strong-named).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct HelperAssembly {
    /// The simple name (`"CallTargetIntegrations"`).
    pub name: String,
    /// Major, minor, build and revision.
    pub version: [u16; 4],
}

impl HelperAssembly {
    /// The assembly `name` at `version`.
    pub fn new(name: impl Into<String>, version: [u16; 4]) -> HelperAssembly {
        HelperAssembly {
            name: name.into(),
            version,
        }
    }

    /// The state's assembly, `ILRewrite.CallTarget` 1.0.0.0 (the default).
    pub fn call_target() -> HelperAssembly {
        HelperAssembly::new("ILRewrite.CallTarget", [1, 0, 0, 0])
    }

    /// Reads `Name` or `Name, Version=a.b.c.d` (the version 0.0.0.0 when not given).
    ///
    /// # Errors
    /// Why not, in words: an empty name, a part other than `Version=`, a version that is
    /// not four numbers of 0 to 65535.
    pub fn parse(text: &str) -> Result<HelperAssembly, String> {
        let mut parts = text.split(',').map(str::trim);
        let name = parts
            .next()
            .filter(|n| !n.is_empty() && !n.contains(char::is_whitespace))
            .ok_or_else(|| format!("no assembly name in {text:?}"))?;
        let mut version = [0u16; 4];
        for part in parts {
            let Some(v) = part.strip_prefix("Version=") else {
                return Err(format!(
                    "{part:?}: only `Version=a.b.c.d` may follow the assembly name"
                ));
            };
            let numbers: Vec<&str> = v.split('.').collect();
            let bad = || format!("{v:?}: a version is four numbers of 0 to 65535");
            if numbers.len() != 4 {
                return Err(bad());
            }
            for (slot, n) in version.iter_mut().zip(numbers) {
                *slot = n.parse().map_err(|_| bad())?;
            }
        }
        Ok(HelperAssembly::new(name, version))
    }

    /// As the metadata API takes it.
    fn reference(&self) -> AssemblyName<'_> {
        AssemblyName {
            name: &self.name,
            version: self.version,
            public_key_token: &[],
        }
    }
}

/// One integration: the methods [`Integration::target`] selects get the hooks of
/// managed type [`Integration::type_name`] of [`Integration::assembly`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Integration {
    /// The target methods.
    pub target: Selector,
    /// The integration type's full name (`Namespace.Type`, a top-level type), whose
    /// static generic methods `OnMethodBegin` and `OnMethodEnd` are the hooks
    /// ([`HookSignatures`] gives their signatures).
    pub type_name: String,
    /// The assembly that defines it.
    pub assembly: HelperAssembly,
}

impl Integration {
    /// Integration `type_name` of `assembly` for the methods `target` selects.
    pub fn new(
        target: Selector,
        type_name: impl Into<String>,
        assembly: HelperAssembly,
    ) -> Integration {
        Integration {
            target,
            type_name: type_name.into(),
            assembly,
        }
    }

    /// Reads the option format `SELECTOR => Namespace.Type, Assembly[, Version=a.b.c.d]`
    /// (`"App.Orders::Place => Tracing.OrderIntegration, Tracing"`).
    ///
    /// # Errors
    /// Why not, in words: no `=>`, a selector [`Selector::parse`] refuses, no type or an
    /// empty, nested (`/`) or spaced type name, the errors of [`HelperAssembly::parse`].
    pub fn parse(text: &str) -> Result<Integration, String> {
        let (selector, rest) = text
            .rsplit_once("=>")
            .ok_or("no `=>` between the target selector and the integration type")?;
        let target = Selector::parse(selector.trim()).map_err(|e| e.to_string())?;
        let (type_name, assembly) = rest
            .split_once(',')
            .ok_or("no `, Assembly` after the integration type")?;
        let type_name = type_name.trim();
        if type_name.is_empty()
            || type_name.contains(char::is_whitespace)
            || type_name.contains('/')
            || type_name.starts_with('.')
            || type_name.ends_with('.')
        {
            return Err(format!(
                "{type_name:?}: the integration type is a top-level type's full name, `Namespace.Type`"
            ));
        }
        let assembly = HelperAssembly::parse(assembly)?;
        Ok(Integration::new(target, type_name, assembly))
    }
}

/// The instrumentation method that applies [`CallTarget`] to the methods its
/// integrations select, at first JIT and at ReJIT alike (ReadyToRun code kept: its
/// targets are the integrations' selectors, [`InstrumentationMethod::targets`]).
///
/// * At start: the integrations given in code ([`CallTargetMethod::with_integration`])
///   and those of its option `integrations` (an array of strings, each
///   `SELECTOR => Namespace.Type, Assembly[, Version=a.b.c.d]`, see
///   [`Integration::parse`]; a malformed one refuses the start, at the option's place,
///   with its index); its option `state_assembly` (`Name[, Version=a.b.c.d]`) replaces
///   the state's assembly ([`HelperAssembly::call_target`] by default).
/// * At module load, in a module with targets: the AssemblyRefs (the integrations' and
///   the state's), the TypeRefs (the integration types, `CallTargetState`,
///   `System.Exception` through the core library the module's types derive from, or
///   its TypeDef in the core library itself), and per target the declaring type's
///   signature (a TypeSpec over its own generic parameters for a generic type), the
///   MemberRefs of the hooks' generic definitions and their MethodSpecs
///   ([`HookSignatures::of`]), kept as the module's data item. A target it cannot
///   handle (a signature [`HookSignatures::check_target`] refuses, a byref-like
///   parameter, return or declaring type, a metadata error) is logged with the reason
///   and keeps its IL.
/// * At each edit: [`CallTarget::apply`] with the module's tokens (the hooks' stack
///   effects known from their signatures); the new locals go to the pipeline, which
///   defines their signature once the body verified.
///
/// The integration types are top-level types; the hooks' exception handlers drop what
/// a hook throws (`on_hook_exception` is `None`).
///
/// Checked at each edit, before anything changes: that the integration's assembly is
/// beside the application (the directory of the first module loaded that is not the
/// framework's), that it defines the integration type, and that the type has an
/// `OnMethodBegin` and an `OnMethodEnd` of the generic arity and parameter count the
/// target needs (read once per type from the file). The runtime resolves the
/// references only at the target's first call, and a missing one
/// (`FileNotFoundException`, `TypeLoadException`, `MissingMethodException`) would be
/// thrown to the target's caller: so a target whose hooks are not present keeps its IL,
/// said once per integration in the log. The same for the state's assembly: beside the
/// application, defining `ILRewrite.CallTarget.CallTargetState`. Each assembly file must
/// be the assembly its reference names, at the reference's version or later (what the
/// binder accepts). Not checked: the hooks' exact parameter types.
///
/// A target first compiled before the application's own module loaded (a framework
/// method the runtime calls while it starts, such as `Dictionary`2::Add`) has no
/// directory to look in yet: it keeps its IL then, and is compiled again, with its
/// hooks, once that module loads ([`ModuleLoad::recompile`]; with ReJIT off it keeps
/// its IL, said in the log).
#[derive(Debug)]
pub struct CallTargetMethod {
    name: String,
    given: Vec<Integration>,
    state_assembly: HelperAssembly,
    /// What start settled: the integrations and the state's assembly.
    started: OnceLock<(Vec<Integration>, HelperAssembly)>,
    /// The application's directory: that of the first module loaded that is not the
    /// framework's (the program's own assembly), where the binder finds the
    /// integrations' assemblies.
    app_dir: OnceLock<PathBuf>,
    /// The hooks each integration type has, read from its assembly file once.
    inventory: Inventory,
    /// The targets that kept their IL because the application's directory was not
    /// known yet; `None` once it is (after `app_dir` is set).
    waiting: Mutex<Option<Vec<MethodKey>>>,
}

impl Default for CallTargetMethod {
    fn default() -> CallTargetMethod {
        CallTargetMethod::new()
    }
}

/// The module's tokens, as [`CallTargetMethod`] keeps them: per target MethodDef, its
/// hooks or why it keeps its IL.
#[derive(Debug, Default)]
struct ModuleHooks {
    targets: HashMap<mdToken, Result<TargetHooks, String>>,
}

/// One target's hooks in its module.
#[derive(Debug, Clone)]
struct TargetHooks {
    hooks: CallTargetHooks,
    /// The integration's assembly and type, and the hooks' shapes it must have.
    integration: (HelperAssembly, String),
    shapes: [Shape; 2],
    /// The declaring type as the target's module writes it.
    declaring: TypeSig,
    begin: CallEffect,
    end: CallEffect,
}

impl CallTargetMethod {
    /// Named `calltarget`, with no integration, the state in
    /// [`HelperAssembly::call_target`].
    pub fn new() -> CallTargetMethod {
        CallTargetMethod {
            name: "calltarget".to_owned(),
            given: Vec::new(),
            app_dir: OnceLock::new(),
            inventory: Inventory::default(),
            waiting: Mutex::new(Some(Vec::new())),
            state_assembly: HelperAssembly::call_target(),
            started: OnceLock::new(),
        }
    }

    /// The application's directory, once its module loaded.
    fn app_dir(&self) -> Option<&PathBuf> {
        self.app_dir.get()
    }

    /// Keeps `key` to compile again once the application's directory is known; `false`
    /// when it is known by now (nothing kept).
    fn wait_for_app_dir(&self, key: MethodKey) -> bool {
        let mut waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        match waiting.as_mut() {
            Some(keys) => {
                if !keys.contains(&key) {
                    keys.push(key);
                }
                true
            }
            None => false,
        }
    }

    /// The application's directory became known with `module`: the targets that kept
    /// their IL waiting for it are compiled again.
    fn recompile_waiting(&self, module: &ModuleLoad<'_>) {
        let keys = self
            .waiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
            .unwrap_or_default();
        if keys.is_empty() {
            return;
        }
        let count = keys.len();
        let what = match module.recompile(keys) {
            true => "are compiled again with their hooks",
            false => "keep their IL (ReJIT is off)",
        };
        log::write(&format!(
            "{}: {count} targets compiled before the application's directory was known {what}",
            self.name
        ));
    }

    /// This one named `name` (how the configuration and the logs name it).
    pub fn named(mut self, name: impl Into<String>) -> CallTargetMethod {
        self.name = name.into();
        self
    }

    /// This one with `integration` too (before those of its options).
    pub fn with_integration(mut self, integration: Integration) -> CallTargetMethod {
        self.given.push(integration);
        self
    }

    /// This one with the state type `ILRewrite.CallTarget.CallTargetState` in
    /// `assembly` (its option `state_assembly` overrides it).
    pub fn with_state_assembly(mut self, assembly: HelperAssembly) -> CallTargetMethod {
        self.state_assembly = assembly;
        self
    }

    /// Its integrations: after start, those given in code then those of its options;
    /// before, those given in code.
    pub fn integrations(&self) -> &[Integration] {
        match self.started.get() {
            Some((all, _)) => all,
            None => &self.given,
        }
    }

    /// The state type's assembly (after start, as its options set it).
    pub fn state_assembly(&self) -> &HelperAssembly {
        match self.started.get() {
            Some((_, state)) => state,
            None => &self.state_assembly,
        }
    }

    /// The integrations and state assembly its options give, after those in code.
    ///
    /// # Errors
    /// A malformed entry, at the option's place, with its index (from 0) and reason;
    /// no integration at all.
    pub fn settle(
        &self,
        options: &Options,
    ) -> Result<(Vec<Integration>, HelperAssembly), MethodError> {
        let mut all = self.given.clone();
        for (i, text) in options
            .strings("integrations")
            .unwrap_or(&[])
            .iter()
            .enumerate()
        {
            let integration = Integration::parse(text).map_err(|why| {
                options.invalid("integrations", &format!("entry {i} ({text:?}): {why}"))
            })?;
            all.push(integration);
        }
        if all.is_empty() {
            return Err(options
                .invalid(
                    "integrations",
                    "no integration (`SELECTOR => Namespace.Type, Assembly`)",
                )
                .into());
        }
        let state = match options.string("state_assembly") {
            Some(text) => HelperAssembly::parse(text)
                .map_err(|why| options.invalid("state_assembly", &why))?,
            None => self.state_assembly.clone(),
        };
        Ok((all, state))
    }

    /// The tokens `metadata` needs for target `token` of `integration`.
    fn target_hooks(
        &self,
        metadata: &ModuleMetadata,
        refs: &mut ModuleRefs,
        integration: &Integration,
        token: mdToken,
    ) -> Result<TargetHooks, MethodError> {
        let target = MethodSig::parse(metadata.signature(token)?)?;
        HookSignatures::check_target(&target)?;
        let type_def = metadata.member_parent(token)?;
        let declaring = declaring_type(metadata, type_def)?;
        if matches!(
            declaring,
            TypeSig::ValueType(_)
                | TypeSig::GenericInst {
                    is_value_type: true,
                    ..
                }
        ) && metadata.has_custom_attribute(type_def, IS_BY_REF_LIKE)?
        {
            return Err("its declaring type is byref-like (a `ref struct`)".into());
        }
        for (i, p) in target.params.iter().enumerate() {
            if by_ref_like(metadata, p)? {
                return Err(format!("parameter {i}'s type is byref-like (a `ref struct`)").into());
            }
        }
        if by_ref_like(metadata, &target.return_type)? {
            return Err("its return type is byref-like (a `ref struct`)".into());
        }
        let types = HookTypes {
            exception: refs.exception(metadata, type_def)?,
            state: TypeSig::ValueType(refs.state(metadata, self.state_assembly())?),
        };
        let signatures = HookSignatures::of(&target, &declaring, &types)?;
        if matches!(declaring, TypeSig::GenericInst { .. }) {
            metadata.type_spec(&declaring)?;
        }
        let parent = refs.integration(metadata, integration)?;
        let begin_def = metadata.method_ref(parent, "OnMethodBegin", &signatures.begin)?;
        let end_def = metadata.method_ref(parent, "OnMethodEnd", &signatures.end)?;
        let begin = metadata.method_spec(begin_def, &signatures.begin_instantiation)?;
        let end = metadata.method_spec(end_def, &signatures.end_instantiation)?;
        let effect = |sig: &MethodSig| CallEffect {
            pops: u16::try_from(sig.params.len()).unwrap_or(u16::MAX),
            pushes: u16::from(!matches!(sig.return_type, TypeSig::Void)),
        };
        let shape = |name, sig: &MethodSig| (name, sig.generic_param_count, sig.params.len());
        Ok(TargetHooks {
            integration: (integration.assembly.clone(), integration.type_name.clone()),
            shapes: [
                shape("OnMethodBegin", &signatures.begin),
                shape("OnMethodEnd", &signatures.end),
            ],
            begin: effect(&signatures.begin),
            end: effect(&signatures.end),
            hooks: CallTargetHooks {
                begin,
                end,
                on_hook_exception: None,
                types,
            },
            declaring,
        })
    }
}

/// The references a module's targets share, defined once per module.
#[derive(Default)]
struct ModuleRefs {
    exception: Option<mdToken>,
    state: Option<mdToken>,
    integrations: HashMap<(String, String), mdToken>,
}

impl ModuleRefs {
    /// `System.Exception`: its TypeDef in the core library; elsewhere a TypeRef on the
    /// AssemblyRef the module's own types derive from `System.*` through.
    fn exception(
        &mut self,
        metadata: &ModuleMetadata,
        type_def: mdToken,
    ) -> Result<mdToken, MethodError> {
        if let Some(token) = self.exception {
            return Ok(token);
        }
        let token = if metadata
            .assembly_name()?
            .eq_ignore_ascii_case("System.Private.CoreLib")
        {
            metadata
                .find_type_def("System.Exception")?
                .ok_or("the core library has no System.Exception")?
        } else {
            let core = core_library(metadata, type_def)?;
            let scope = metadata.assembly_ref(&AssemblyName {
                name: &core,
                version: [0; 4],
                public_key_token: &[],
            })?;
            metadata.define_type_ref(scope, "System.Exception")?
        };
        self.exception = Some(token);
        Ok(token)
    }

    /// The TypeRef of `CallTargetState` in `assembly`.
    fn state(
        &mut self,
        metadata: &ModuleMetadata,
        assembly: &HelperAssembly,
    ) -> Result<mdToken, MethodError> {
        if let Some(token) = self.state {
            return Ok(token);
        }
        let scope = metadata.assembly_ref(&assembly.reference())?;
        let token = metadata.define_type_ref(scope, STATE_TYPE)?;
        self.state = Some(token);
        Ok(token)
    }

    /// The TypeRef of the integration type.
    fn integration(
        &mut self,
        metadata: &ModuleMetadata,
        integration: &Integration,
    ) -> Result<mdToken, MethodError> {
        let key = (
            integration.assembly.name.clone(),
            integration.type_name.clone(),
        );
        if let Some(&token) = self.integrations.get(&key) {
            return Ok(token);
        }
        let scope = metadata.assembly_ref(&integration.assembly.reference())?;
        let token = metadata.define_type_ref(scope, &integration.type_name)?;
        self.integrations.insert(key, token);
        Ok(token)
    }
}

/// The assembly of the `System` type that `type_def`'s base types reach first (the
/// core library as this module references it: `System.Runtime`, `mscorlib`...).
fn core_library(metadata: &ModuleMetadata, mut type_def: mdToken) -> Result<String, MethodError> {
    for _ in 0..64 {
        let Some(base) = metadata.type_extends(type_def)? else {
            break;
        };
        if base >> 24 == 0x02 {
            type_def = base;
            continue;
        }
        let name = metadata.type_name(base)?;
        if name.namespace == "System" && name.enclosing.is_none() {
            if let Some(assembly) = name.assembly {
                return Ok(assembly);
            }
        }
        break;
    }
    Err("no reference to the core library through the declaring type's base types".into())
}

/// The declaring TypeDef as its methods' signatures write it: `CLASS`/`VALUETYPE` token,
/// or `GENERICINST` over its own parameters `!0`...
fn declaring_type(metadata: &ModuleMetadata, type_def: mdToken) -> Result<TypeSig, MethodError> {
    let own = metadata.type_name(type_def)?;
    let value_type = match metadata.type_extends(type_def)? {
        Some(base) => {
            let name = metadata.type_name(base)?;
            let system = name.namespace == "System" && name.enclosing.is_none();
            let own_is_enum = own.namespace == "System" && own.name == "Enum";
            system && (name.name == "ValueType" || name.name == "Enum") && !own_is_enum
        }
        None => false,
    };
    let arity = (0..64u32)
        .take_while(|&i| metadata.generic_param_name(type_def, i).is_some())
        .count() as u32;
    Ok(match (arity, value_type) {
        (0, false) => TypeSig::Class(type_def),
        (0, true) => TypeSig::ValueType(type_def),
        (n, is_value_type) => TypeSig::GenericInst {
            is_value_type,
            token: type_def,
            args: (0..n).map(TypeSig::Var).collect(),
        },
    })
}

/// Whether `t` (a parameter's or the return's type, its `&` and modifiers aside) is a
/// byref-like value type: a TypeDef of this module with `IsByRefLikeAttribute`, or a
/// referenced core-library type known as one.
fn by_ref_like(metadata: &ModuleMetadata, t: &TypeSig) -> Result<bool, MethodError> {
    let t = match t.strip_modifiers() {
        TypeSig::ByRef(inner) => inner.strip_modifiers(),
        other => other,
    };
    let token = match t {
        TypeSig::ValueType(token)
        | TypeSig::GenericInst {
            is_value_type: true,
            token,
            ..
        } => *token,
        TypeSig::TypedByRef => return Ok(true),
        _ => return Ok(false),
    };
    Ok(match token >> 24 {
        0x02 => metadata.has_custom_attribute(token, IS_BY_REF_LIKE)?,
        0x01 => {
            let name = metadata.type_name(token)?;
            name.namespace == "System" && BY_REF_LIKE_NAMES.contains(&name.name.as_str())
        }
        _ => false,
    })
}

thread_local! {
    /// Each JIT thread's transform (its scratch buffers kept between bodies; a body
    /// whose transform fails leaves a fresh one for the next).
    static TRANSFORM: Cell<CallTarget> = Cell::new(CallTarget::new());
}

/// The module's resolver, with the hooks' stack effects.
struct HookResolver<'a, R: ?Sized> {
    inner: &'a R,
    target: &'a TargetHooks,
}

impl<R: CallSiteResolver + ?Sized> CallSiteResolver for HookResolver<'_, R> {
    fn call_effect(&self, opcode: OpCode, token: u32) -> crate::error::Result<CallEffect> {
        match token {
            t if opcode == OpCode::Call && t == self.target.hooks.begin => Ok(self.target.begin),
            t if opcode == OpCode::Call && t == self.target.hooks.end => Ok(self.target.end),
            _ => self.inner.call_effect(opcode, token),
        }
    }

    fn metadata(&self) -> Option<&dyn MetadataSource> {
        self.inner.metadata()
    }
}

impl Profiler for CallTargetMethod {}

impl InstrumentationMethod for CallTargetMethod {
    fn name(&self) -> &str {
        &self.name
    }

    fn options(&self) -> &[OptionSpec] {
        const OPTIONS: [OptionSpec; 2] = [
            OptionSpec::new("integrations", OptionKind::Strings),
            OptionSpec::new("state_assembly", OptionKind::String),
        ];
        &OPTIONS
    }

    fn start(&self, start: &Start<'_>) -> Result<(), MethodError> {
        let settled = self.settle(start.options())?;
        let _ = self.started.set(settled);
        Ok(())
    }

    /// Options of a request (the dial's `instrument`) may repeat the integrations and the
    /// state's assembly the method started with, not change them: their references are
    /// defined in each module as it loads, so other ones would not be what the edits
    /// call.
    fn check_options(&self, options: &Options) -> Result<(), MethodError> {
        let changed = || {
            options.invalid(
                "integrations",
                "the integrations and the state's assembly are fixed at start (their \
                 references are defined as modules load): a request may repeat them, not \
                 change them",
            )
        };
        let started = self.started.get();
        if options.strings("integrations").is_some() {
            let (integrations, _) = self.settle(options)?;
            if started.is_some_and(|(given, _)| *given != integrations) {
                return Err(changed().into());
            }
        }
        if let Some(text) = options.string("state_assembly") {
            let state = HelperAssembly::parse(text)
                .map_err(|why| options.invalid("state_assembly", &why))?;
            if started.is_some_and(|(_, given)| *given != state) {
                return Err(changed().into());
            }
        }
        Ok(())
    }

    fn assembly_references(&self) -> Vec<AssemblyName<'_>> {
        let mut names: Vec<AssemblyName<'_>> = vec![self.state_assembly().reference()];
        for i in self.integrations() {
            let name = i.assembly.reference();
            if !names.iter().any(|n| n.name.eq_ignore_ascii_case(name.name)) {
                names.push(name);
            }
        }
        names
    }

    fn targets(&self) -> Vec<Selector> {
        self.integrations()
            .iter()
            .map(|i| i.target.clone())
            .collect()
    }

    fn module_loaded(&self, module: &ModuleLoad<'_>) -> Result<(), MethodError> {
        if let Some(facts) = module.facts()
            && !facts.framework
            && !facts.is_dynamic()
            && self.app_dir.get().is_none()
            && let Some(dir) = Path::new(&facts.path).parent()
        {
            let _ = self.app_dir.set(dir.to_owned());
            self.recompile_waiting(module);
        }
        let targets = module.targets();
        if targets.is_empty() {
            return Ok(());
        }
        let metadata = module.module().metadata();
        let mut refs = ModuleRefs::default();
        let mut hooks = ModuleHooks::default();
        for token in targets {
            let Some(integration) = self
                .integrations()
                .iter()
                .find(|i| i.target.matches(metadata, token))
            else {
                continue;
            };
            let entry = self
                .target_hooks(metadata, &mut refs, integration, token)
                .map_err(|e| {
                    let name = crate::disasm::selector_name(metadata, token);
                    let reason = e.to_string();
                    log::write(&format!("{}: {name} keeps its IL: {reason}", self.name));
                    reason
                });
            hooks.targets.insert(token, entry);
        }
        module.set_item(hooks);
        Ok(())
    }

    fn edit(
        &self,
        body: &mut MethodBody,
        method: &mut MethodEdit<'_, '_>,
    ) -> crate::error::Result<bool> {
        let Some(module) = method.module_item::<ModuleHooks>() else {
            return Ok(false);
        };
        // Refused at module load (logged then): the IL is kept.
        let Some(Ok(target)) = module.targets.get(&method.method().token) else {
            return Ok(false);
        };
        // The runtime would throw at the target's first call if the hooks were not
        // where it looks: keep the IL, and say so once per integration.
        let present = match self.app_dir() {
            Some(dir) => {
                let (assembly, type_name) = &target.integration;
                self.inventory
                    .check(dir, self.state_assembly(), STATE_TYPE, &[])
                    .and_then(|()| {
                        self.inventory
                            .check(dir, assembly, type_name, &target.shapes)
                    })
            }
            None => {
                let key = MethodKey {
                    module: method.method().module.id(),
                    token: method.method().token,
                };
                match self.wait_for_app_dir(key) {
                    true => Err("the application's directory is not known yet".to_owned()),
                    // Known since: look again.
                    false => return self.edit(body, method),
                }
            }
        };
        if let Err(why) = present {
            log::throttled(&format!("{}: hooks not present: {why}", self.name), || {
                format!("{}: {} keeps its IL: {why}", self.name, method.name())
            });
            return Ok(false);
        }
        let rewrite = method.rewrite();
        let locals = {
            let context = rewrite.context(body)?;
            let resolver = HookResolver {
                inner: rewrite.module.resolver(),
                target,
            };
            let mut transform = TRANSFORM.try_with(Cell::take).unwrap_or_default();
            let done =
                transform.apply(body, &context, &target.declaring, &target.hooks, &resolver)?;
            let locals = done.new_locals_signature.to_vec();
            let _ = TRANSFORM.try_with(|cell| cell.set(transform));
            locals
        };
        rewrite.stack_verified();
        rewrite.set_locals_signature(&locals);
        Ok(true)
    }
}

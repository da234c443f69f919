//! [`RuntimeLayouts`]: value-type layouts from the runtime, for the methods of one module,
//! [`hidden_args`], what the runtime knows of a method's hidden arguments, and
//! `plan_for`, a function's plan made from both (the hook table's way in).
//!
//! A value type defined in the method's own module is resolved fully: its `ClassID`
//! (`GetClassFromTokenAndTypeArgs`), its field offsets and size (`GetClassLayout`), its
//! fields' types from its metadata, nested structs recursively, enums as their
//! underlying type. A value type of another module (a TypeRef), a generic value type
//! and a type variable are not resolved: their values are unavailable (never guessed).
//! Called in `FunctionIDMapper2`, a synchronous context; never in a hook.

use super::layout::{Field, FieldType, LayoutError, Scalar, Shape, StructLayout, StructLayouts};
use super::plan::{HiddenArgs, ValuePlan};
use crate::clr::log;
use crate::clr::runtime::{FunctionInfo, ModuleMetadata, ProfilerInfo};
use crate::clr::sys::{ModuleID, mdToken};
use crate::metadata::{MetadataSource, table, token_table};
use crate::sig::{FieldSig, MethodSig, TypeSig};

/// How deep nested structs are followed (a deeper one is an error, not a guess).
const MAX_DEPTH: u32 = 16;

/// `tdLayoutMask`: auto (0), sequential (0x8) or explicit (0x10) layout.
const TD_LAYOUT_MASK: u32 = 0x18;

/// Layouts of the value types a method of `module` names, from the runtime.
#[derive(Debug)]
pub struct RuntimeLayouts<'a> {
    info: &'a ProfilerInfo,
    module: ModuleID,
    metadata: &'a ModuleMetadata,
}

impl<'a> RuntimeLayouts<'a> {
    /// The provider for the methods of `module`, whose metadata is `metadata`.
    pub fn new(info: &'a ProfilerInfo, module: ModuleID, metadata: &'a ModuleMetadata) -> Self {
        Self {
            info,
            module,
            metadata,
        }
    }

    /// Whether TypeDef `type_def` extends `System.Enum` (then it is passed as its
    /// underlying type) or `System.ValueType` (`Some(false)`), or neither (`None`).
    fn value_kind(&self, type_def: mdToken) -> Option<bool> {
        let extends = self.metadata.type_extends(type_def).ok()??;
        let name = self.metadata.type_name(extends).ok()?;
        match (name.namespace.as_str(), name.name.as_str()) {
            ("System", "Enum") => Some(true),
            ("System", "ValueType") => Some(false),
            _ => None,
        }
    }

    /// The shape of value type `type_def` of this module.
    fn value_type(
        &self,
        ty: &TypeSig,
        type_def: mdToken,
        depth: u32,
    ) -> Result<Shape, LayoutError> {
        if depth > MAX_DEPTH {
            return Err(LayoutError::new(ty, "structs nested too deep"));
        }
        let is_enum = self
            .value_kind(type_def)
            .ok_or_else(|| LayoutError::new(ty, "not a value type of this module"))?;
        let class = self
            .info
            .class_from_type_def(self.module, type_def)
            .map_err(|e| LayoutError::new(ty, e.to_string()))?;
        let (offsets, size) = self
            .info
            .class_layout(class)
            .map_err(|e| LayoutError::new(ty, e.to_string()))?;
        let mut fields = Vec::with_capacity(offsets.len());
        for place in offsets {
            let blob = self
                .metadata
                .signature(place.field)
                .map_err(|e| LayoutError::new(ty, e.to_string()))?;
            let sig = FieldSig::parse(blob).map_err(|e| LayoutError::new(ty, e.to_string()))?;
            let field_type = self.field_type(&sig.ty, depth)?;
            fields.push(Field::new(place.offset, field_type));
        }
        if is_enum {
            return match fields.as_slice() {
                [
                    Field {
                        ty: FieldType::Scalar(underlying),
                        ..
                    },
                ] => Ok(Shape::Scalar(*underlying)),
                _ => Err(LayoutError::new(ty, "an enum without one scalar field")),
            };
        }
        let flags = self
            .metadata
            .type_def_flags(type_def)
            .map_err(|e| LayoutError::new(ty, e.to_string()))?;
        Ok(Shape::Struct(StructLayout {
            size,
            has_layout: flags & TD_LAYOUT_MASK != 0,
            // The SIMD types live in System.Private.CoreLib, always another module
            // than the method's: never resolved here.
            simd_intrinsic: false,
            fields,
        }))
    }

    /// A field's type, nested value types resolved.
    fn field_type(&self, ty: &TypeSig, depth: u32) -> Result<FieldType, LayoutError> {
        if let Some(scalar) = Scalar::of_sig(ty) {
            return Ok(FieldType::Scalar(scalar));
        }
        match ty.strip_modifiers() {
            TypeSig::TypedByRef => Ok(FieldType::TypedReference),
            TypeSig::ValueType(token) if token_table(*token) == table::TYPE_DEF => {
                match self.value_type(ty, *token, depth + 1)? {
                    Shape::Scalar(scalar) => Ok(FieldType::Scalar(scalar)),
                    Shape::Struct(layout) => Ok(FieldType::Struct(layout)),
                    Shape::Reference => Ok(FieldType::Reference),
                }
            }
            other if is_reference(other) => Ok(FieldType::Reference),
            _ => Err(LayoutError::new(ty, "a field type not resolved here")),
        }
    }
}

/// Whether a type is an object reference.
fn is_reference(ty: &TypeSig) -> bool {
    matches!(
        ty,
        TypeSig::String
            | TypeSig::Object
            | TypeSig::Class(_)
            | TypeSig::SzArray(_)
            | TypeSig::Array { .. }
    )
}

impl StructLayouts for RuntimeLayouts<'_> {
    fn shape(&self, ty: &TypeSig) -> Result<Shape, LayoutError> {
        match ty.strip_modifiers() {
            TypeSig::ValueType(token) if token_table(*token) == table::TYPE_DEF => {
                self.value_type(ty, *token, 0)
            }
            TypeSig::ValueType(_) => Err(LayoutError::new(
                ty,
                "a value type of another module (not resolved)",
            )),
            _ => Err(LayoutError::new(
                ty,
                "generic or variable type (not resolved)",
            )),
        }
    }
}

/// What the runtime knows of a method's hidden arguments: whether its `this` is a
/// byref (a method of a value type), and whether it takes a generic context: unknown
/// (its values then unavailable) for a generic method, a method of a generic class
/// (type arguments per `GetClassIDInfo2`, nested types included) or of a class the
/// runtime did not name (shared code).
pub fn hidden_args(
    info: &ProfilerInfo,
    metadata: &ModuleMetadata,
    function: &FunctionInfo,
    sig: &MethodSig,
) -> HiddenArgs {
    let owner = metadata
        .member_parent(function.token)
        .ok()
        .filter(|o| token_table(*o) == table::TYPE_DEF);
    let value_type_this = owner
        .and_then(|o| metadata.type_extends(o).ok().flatten())
        .and_then(|e| metadata.type_name(e).ok())
        .is_some_and(|n| n.namespace == "System" && (n.name == "ValueType" || n.name == "Enum"));
    let generic_class = function.class == 0
        || info
            .class_info(function.class)
            .map_or(true, |class| class.type_args > 0);
    let generic = sig.generic_param_count > 0 || generic_class;
    HiddenArgs {
        value_type_this,
        generic_context: if generic { None } else { Some(false) },
    }
}

/// The value plan of a function, from its signature and the runtime's layouts; `None`
/// (logged once) when the signature cannot be read.
pub(crate) fn plan_for(info: &ProfilerInfo, facts: &FunctionInfo) -> Option<ValuePlan> {
    let made = (|| -> Result<ValuePlan, String> {
        let metadata = ModuleMetadata::open(info, facts.module).map_err(|e| e.to_string())?;
        let blob = metadata.signature(facts.token).map_err(|e| e.to_string())?;
        let sig = MethodSig::parse(blob).map_err(|e| e.to_string())?;
        let hidden = hidden_args(info, &metadata, facts, &sig);
        let layouts = RuntimeLayouts::new(info, facts.module, &metadata);
        ValuePlan::new(&sig, hidden, &layouts).map_err(|e| e.to_string())
    })();
    match made {
        Ok(plan) => Some(plan),
        Err(e) => {
            log::throttled("hooks: no value plan", || {
                format!("hooks: no value plan for token {:#x}: {e}", facts.token)
            });
            None
        }
    }
}

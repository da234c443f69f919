//! Classes: a TypeDef's `ClassID`, a class's module and parent, and its field layout
//! (`GetClassFromTokenAndTypeArgs`, `GetClassIDInfo2`, `GetClassLayout`).

use super::ProfilerInfo;
use crate::clr::runtime::error::{ClrResult, check, from_ulong};
use crate::clr::sys::{
    ClassID, CorFieldOffset, ICorProfilerInfo2Vtbl, ModuleID, mdFieldDef, mdTypeDef,
};

/// What `GetClassIDInfo2` says of a class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClassInfo {
    /// The module that defines it.
    pub module: ModuleID,
    /// Its TypeDef in that module.
    pub type_def: mdTypeDef,
    /// Its parent class (0 for `System.Object` and interfaces).
    pub parent: ClassID,
    /// How many type arguments it has (0 for a non-generic class).
    pub type_args: u32,
}

/// An instance field's place in a class (`COR_FIELD_OFFSET`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldOffset {
    /// The field's FieldDef token.
    pub field: mdFieldDef,
    /// Its offset: from the start of the unboxed value for a value type.
    pub offset: u32,
}

impl ProfilerInfo {
    /// The `ClassID` of non-generic TypeDef `type_def` of `module`, loading the type if
    /// needed (`GetClassFromTokenAndTypeArgs` without type arguments). Only TypeDefs: the
    /// runtime's answer for a TypeRef is not defined.
    ///
    /// # Errors
    /// [`ClrError::Failed`](crate::clr::runtime::ClrError) when the type cannot be
    /// loaded, or is generic.
    pub fn class_from_type_def(&self, module: ModuleID, type_def: mdTypeDef) -> ClrResult<ClassID> {
        let v = self.at::<ICorProfilerInfo2Vtbl>("GetClassFromTokenAndTypeArgs")?;
        let mut class = 0;
        // SAFETY: a live ICorProfilerInfo2; no type arguments; the out-pointer is a
        // valid local.
        check("GetClassFromTokenAndTypeArgs", unsafe {
            (v.GetClassFromTokenAndTypeArgs)(
                self.raw(),
                module,
                type_def,
                0,
                core::ptr::null_mut(),
                &mut class,
            )
        })?;
        Ok(class)
    }

    /// A class's module, TypeDef, parent and number of type arguments
    /// (`GetClassIDInfo2`).
    ///
    /// # Errors
    /// [`ClrError::Failed`](crate::clr::runtime::ClrError) for an id the runtime does
    /// not know, or a class not fully loaded.
    pub fn class_info(&self, class: ClassID) -> ClrResult<ClassInfo> {
        let v = self.at::<ICorProfilerInfo2Vtbl>("GetClassIDInfo2")?;
        let (mut module, mut type_def, mut parent, mut type_args) = (0, 0, 0, 0);
        // SAFETY: a live ICorProfilerInfo2; a zero-length type-argument array (only
        // their count is asked for); the out-pointers are valid locals.
        check("GetClassIDInfo2", unsafe {
            (v.GetClassIDInfo2)(
                self.raw(),
                class,
                &mut module,
                &mut type_def,
                &mut parent,
                0,
                &mut type_args,
                core::ptr::null_mut(),
            )
        })?;
        Ok(ClassInfo {
            module,
            type_def,
            parent,
            type_args,
        })
    }

    /// A class's instance fields and their offsets, and its size (for a value type,
    /// the unboxed size) (`GetClassLayout`, asked twice: the count, then the fields).
    ///
    /// # Errors
    /// [`ClrError::Failed`](crate::clr::runtime::ClrError) for an array or string class,
    /// or one not loaded.
    pub fn class_layout(&self, class: ClassID) -> ClrResult<(Vec<FieldOffset>, u32)> {
        const METHOD: &str = "GetClassLayout";
        let v = self.at::<ICorProfilerInfo2Vtbl>(METHOD)?;
        let (mut count, mut size) = (0u32, 0u32);
        // SAFETY: a live ICorProfilerInfo2; an empty array asks for the count only.
        check(METHOD, unsafe {
            (v.GetClassLayout)(
                self.raw(),
                class,
                core::ptr::null_mut(),
                0,
                &mut count,
                &mut size,
            )
        })?;
        let mut raw = vec![
            CorFieldOffset {
                rid_of_field: 0,
                offset: 0,
            };
            from_ulong(METHOD, "fields", count)?
        ];
        let mut written = 0u32;
        // SAFETY: as above, with an array of `count` elements the runtime fills.
        check(METHOD, unsafe {
            (v.GetClassLayout)(
                self.raw(),
                class,
                raw.as_mut_ptr(),
                count,
                &mut written,
                &mut size,
            )
        })?;
        raw.truncate(from_ulong(METHOD, "fields", written)?);
        let fields = raw
            .into_iter()
            .map(|f| FieldOffset {
                field: f.rid_of_field,
                offset: f.offset,
            })
            .collect();
        Ok((fields, size))
    }
}

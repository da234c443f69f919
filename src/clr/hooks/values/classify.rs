//! The System V eightbyte classification of a struct, as CoreCLR 3.1 does it for managed
//! calls: pure, from a [`StructLayout`].
//!
//! Source: dotnet/coreclr v3.1.23, `src/vm/methodtablebuilder.cpp`
//! (`MethodTableBuilder::SystemVAmd64CheckForPassStructInRegister`) and
//! `src/vm/methodtable.cpp` (`MethodTable::ClassifyEightBytesWithManagedLayout`,
//! `ReClassifyField`, `AssignClassifiedEightByteTypes`); the JIT asks the same
//! classification (`CEEInfo::getSystemVAmd64PassStructInRegisterDescriptor`,
//! `src/vm/jitinterface.cpp`). The rules, as implemented here:
//!
//! 1. A struct of more than 16 bytes is passed in memory.
//! 2. The fields are walked recursively (a nested struct's fields at their offset plus
//!    the nested struct's). A struct (at any level) without instance fields, or a SIMD
//!    intrinsic (`Vector64/128/256<T>`, `Vector<T>`), makes the whole struct memory.
//! 3. Fixed buffer: a struct with exactly one instance field, of a primitive or value
//!    type, at offset 0, with sequential or explicit layout, whose size is a multiple of
//!    the field's, is classified as that field repeated to fill it.
//! 4. A field that ends past the struct, or is not at its natural alignment (offset a
//!    multiple of its size; a nested struct is not checked itself, its fields are), makes
//!    the struct memory.
//! 5. Fields at the same offset (explicit layout) are one field of the largest size;
//!    their classes merge: INTEGER wins over SSE, SSE with SSE stays SSE, a reference
//!    or byref keeps its class.
//! 6. Per eightbyte, byte by byte: a field's class spreads over the eightbytes it covers;
//!    bytes no field covers are padding: between fields NO_CLASS, after the last field
//!    (the one at the highest offset) that field's class; classes merge (equal stays,
//!    NO_CLASS takes the other, INTEGER wins, then reference, then byref, else SSE). An
//!    eightbyte in which no field starts and that is still NO_CLASS becomes INTEGER.
//! 7. `TypedReference` is a byref at 0 and an integer at 8.
//!
//! INTEGER, reference and byref eightbytes all travel in general registers; only the
//! register file matters here, so the result is [`Eightbyte::Integer`] or
//! [`Eightbyte::Sse`] with the byte count the eightbyte holds.

use super::layout::{FieldType, Scalar, StructLayout};

/// The class of one eightbyte of a struct passed in registers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Eightbyte {
    /// In a general-purpose register (INTEGER, or a reference or byref).
    Integer,
    /// In an XMM register.
    Sse,
}

/// The eightbytes of a struct passed in registers: one or two, each with its class and
/// the number of bytes of the struct it holds (8, or fewer for a last partial one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Eightbytes {
    parts: [(Eightbyte, u8); 2],
    count: u8,
}

impl Eightbytes {
    /// The eightbytes, in order.
    pub fn parts(&self) -> &[(Eightbyte, u8)] {
        &self.parts[..usize::from(self.count)]
    }

    /// How many general and XMM registers they take.
    pub fn registers(&self) -> (usize, usize) {
        let ints = self
            .parts()
            .iter()
            .filter(|(c, _)| *c == Eightbyte::Integer)
            .count();
        (ints, self.parts().len() - ints)
    }
}

/// The classes CoreCLR tracks while classifying (`SystemVClassificationType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    /// No field seen in the eightbyte yet (`SystemVClassificationTypeNoClass`).
    Unset,
    Integer,
    Reference,
    ByRef,
    Sse,
}

/// The largest struct passed in registers (`CLR_SYSTEMV_MAX_STRUCT_BYTES_TO_PASS_IN_REGISTERS`).
pub const MAX_REGISTER_STRUCT: u32 = 16;

/// How deep nested structs may be before the classifier gives up (memory is then not
/// claimed either: see [`classify`]).
const MAX_DEPTH: usize = 64;

/// One distinct field offset seen (CoreCLR's `fieldOffsets`/`fieldSizes`/`fieldClassifications`).
#[derive(Debug, Clone, Copy)]
struct Seen {
    offset: u32,
    size: u32,
    class: Class,
}

/// What the classification of a struct found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Passing {
    /// In registers, these eightbytes.
    Registers(Eightbytes),
    /// In memory: on the stack as an argument, through a return buffer as a return value.
    Memory,
    /// The layout could not be classified (nested too deep, or inconsistent: a size of
    /// 0): the struct's place is unknown.
    Unknown,
}

/// Classifies a struct for passing (and returning) by CoreCLR 3.1's rules (module
/// documentation).
pub fn classify(layout: &StructLayout) -> Passing {
    if layout.size == 0 {
        return Passing::Unknown;
    }
    if layout.size > MAX_REGISTER_STRUCT {
        return Passing::Memory;
    }
    let mut seen: Vec<Seen> = Vec::with_capacity(4);
    match collect(layout, 0, layout.size, &mut seen, 0) {
        Walk::Registers => {}
        Walk::Memory => return Passing::Memory,
        Walk::TooDeep => return Passing::Unknown,
    }
    match assign(&seen, layout.size) {
        Some(eightbytes) => Passing::Registers(eightbytes),
        None => Passing::Unknown,
    }
}

enum Walk {
    Registers,
    Memory,
    TooDeep,
}

/// The class of a non-struct field (`CorInfoType2UnixAmd64Classification`).
fn class_of(scalar: Scalar) -> Class {
    match scalar {
        Scalar::R4 | Scalar::R8 => Class::Sse,
        Scalar::ByRef => Class::ByRef,
        _ => Class::Integer,
    }
}

/// Walks `layout`'s fields at `base` into `seen` (`ClassifyEightBytesWithManagedLayout`).
fn collect(
    layout: &StructLayout,
    base: u32,
    total: u32,
    seen: &mut Vec<Seen>,
    depth: usize,
) -> Walk {
    if depth > MAX_DEPTH {
        return Walk::TooDeep;
    }
    if layout.fields.is_empty() || layout.simd_intrinsic {
        return Walk::Memory;
    }
    let repeat = fixed_buffer_repeat(layout);
    let fields = layout.fields.iter();
    // A fixed buffer is its one field at 0, size, 2 * size, ...
    let expanded = fields.flat_map(|field| {
        let step = field.ty.size();
        (0..repeat).map(move |i| (field.offset + i * step, &field.ty))
    });
    for (offset, ty) in expanded {
        let Some(at) = base.checked_add(offset) else {
            return Walk::Memory;
        };
        let size = ty.size();
        if at.checked_add(size).is_none_or(|end| end > total) {
            return Walk::Memory;
        }
        let class = match ty {
            FieldType::Struct(nested) => match collect(nested, at, total, seen, depth + 1) {
                Walk::Registers => continue,
                other => return other,
            },
            FieldType::TypedReference => {
                // A byref at 0 and a type handle at 8, each at natural alignment.
                for (part, class) in [(0, Class::ByRef), (8, Class::Integer)] {
                    if !record(seen, at + part, 8, class) {
                        return Walk::Memory;
                    }
                }
                continue;
            }
            FieldType::Reference => Class::Reference,
            FieldType::Scalar(s) => class_of(*s),
        };
        if !record(seen, at, size, class) {
            return Walk::Memory;
        }
    }
    Walk::Registers
}

/// How many times the only field repeats (CoreCLR's fixed-buffer test); 1 otherwise.
fn fixed_buffer_repeat(layout: &StructLayout) -> u32 {
    let [only] = layout.fields.as_slice() else {
        return 1;
    };
    let eligible = match &only.ty {
        FieldType::Scalar(s) => s.is_primitive(),
        FieldType::Struct(_) => true,
        FieldType::Reference | FieldType::TypedReference => false,
    };
    let size = only.ty.size();
    if eligible && only.offset == 0 && layout.has_layout && size != 0 && layout.size % size == 0 {
        layout.size / size
    } else {
        1
    }
}

/// Records a field at `at` of `size` bytes and `class`, merged with one at the same
/// offset; false if it is not at its natural alignment (the struct goes to memory).
fn record(seen: &mut Vec<Seen>, at: u32, size: u32, class: Class) -> bool {
    if size == 0 || at % size != 0 {
        return false;
    }
    if let Some(same) = seen.iter_mut().find(|s| s.offset == at) {
        same.size = same.size.max(size);
        same.class = reclassify(same.class, class);
    } else {
        seen.push(Seen {
            offset: at,
            size,
            class,
        });
    }
    true
}

/// Two fields at one offset (`ReClassifyField`, release-build behaviour).
fn reclassify(old: Class, new: Class) -> Class {
    match new {
        Class::Sse if old == Class::Sse => Class::Sse,
        Class::Sse | Class::Integer => Class::Integer,
        other => other,
    }
}

/// Merges a byte's class into its eightbyte's (`AssignClassifiedEightByteTypes`).
fn merge(old: Class, new: Class) -> Class {
    if old == new {
        old
    } else if old == Class::Unset {
        new
    } else if old == Class::Integer || new == Class::Integer {
        Class::Integer
    } else if old == Class::Reference || new == Class::Reference {
        Class::Reference
    } else if old == Class::ByRef || new == Class::ByRef {
        Class::ByRef
    } else {
        Class::Sse
    }
}

/// The eightbytes of a struct of `size` (at most 16) bytes from its fields
/// (`AssignClassifiedEightByteTypes`); `None` if an eightbyte would be left without a
/// class (CoreCLR asserts it never is).
fn assign(seen: &[Seen], size: u32) -> Option<Eightbytes> {
    let last = seen.iter().max_by_key(|s| s.offset)?;
    let after_last = last.offset + last.size;
    let mut classes = [Class::Unset; 2];
    let mut used = 0u32;
    let mut covered = 0u32;
    let mut field_in_eightbyte = false;
    for offset in 0..size {
        let (len, class) = match seen.iter().find(|s| s.offset == offset) {
            Some(field) => {
                field_in_eightbyte = true;
                (field.size, field.class)
            }
            None if offset < covered => continue,
            None if offset < after_last => (1, Class::Unset),
            None => (1, last.class),
        };
        let first = offset / 8;
        let end = (offset + len - 1) / 8;
        if end >= 2 {
            return None;
        }
        used = used.max(end + 1);
        for eightbyte in first..=end {
            let slot = &mut classes[eightbyte as usize];
            *slot = merge(*slot, class);
        }
        if (offset + 1) % 8 == 0 {
            let slot = &mut classes[(offset / 8) as usize];
            if !field_in_eightbyte && *slot == Class::Unset {
                *slot = Class::Integer;
            }
            field_in_eightbyte = false;
        }
        covered = covered.max(offset + len);
    }
    let mut parts = [(Eightbyte::Integer, 0u8); 2];
    for i in 0..used {
        let bytes = if covered < 8 * (i + 1) {
            covered % 8
        } else {
            8
        };
        let class = match classes[i as usize] {
            Class::Unset => return None,
            Class::Sse => Eightbyte::Sse,
            Class::Integer | Class::Reference | Class::ByRef => Eightbyte::Integer,
        };
        parts[i as usize] = (class, u8::try_from(bytes).ok()?);
    }
    Some(Eightbytes {
        parts,
        count: u8::try_from(used).ok()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clr::hooks::values::layout::{Field, FieldType, Scalar as S};
    use Eightbyte::{Integer as I, Sse};

    fn seq(size: u32, fields: &[(u32, S)]) -> StructLayout {
        StructLayout::sequential(
            size,
            fields.iter().map(|&(o, s)| Field::scalar(o, s)).collect(),
        )
    }

    fn regs(layout: &StructLayout) -> Vec<(Eightbyte, u8)> {
        match classify(layout) {
            Passing::Registers(e) => e.parts().to_vec(),
            other => panic!("{layout:?}: {other:?}"),
        }
    }

    /// The two-eightbyte classes of the usual 16-byte pairs, and the one-eightbyte ones.
    #[test]
    fn pairs_and_singles() {
        assert_eq!(regs(&seq(16, &[(0, S::I8), (8, S::I8)])), [(I, 8), (I, 8)]);
        assert_eq!(
            regs(&seq(16, &[(0, S::I8), (8, S::R8)])),
            [(I, 8), (Sse, 8)]
        );
        assert_eq!(
            regs(&seq(16, &[(0, S::R8), (8, S::I8)])),
            [(Sse, 8), (I, 8)]
        );
        assert_eq!(
            regs(&seq(16, &[(0, S::R8), (8, S::R8)])),
            [(Sse, 8), (Sse, 8)]
        );
        let four_floats = seq(16, &[(0, S::R4), (4, S::R4), (8, S::R4), (12, S::R4)]);
        assert_eq!(regs(&four_floats), [(Sse, 8), (Sse, 8)]);
        // int and float share an eightbyte: INTEGER wins.
        assert_eq!(regs(&seq(8, &[(0, S::I4), (4, S::R4)])), [(I, 8)]);
        assert_eq!(regs(&seq(8, &[(0, S::R4), (4, S::I4)])), [(I, 8)]);
        assert_eq!(regs(&seq(4, &[(0, S::I4)])), [(I, 4)]);
        assert_eq!(regs(&seq(8, &[(0, S::R4), (4, S::R4)])), [(Sse, 8)]);
        // Three floats: the second eightbyte holds 4 bytes.
        assert_eq!(
            regs(&seq(12, &[(0, S::R4), (4, S::R4), (8, S::R4)])),
            [(Sse, 8), (Sse, 4)]
        );
        // {double, byte}: padding after the last field takes its class.
        assert_eq!(
            regs(&seq(16, &[(0, S::R8), (8, S::U1)])),
            [(Sse, 8), (I, 8)]
        );
        // Object references and byrefs travel in general registers.
        let refs = StructLayout::sequential(
            16,
            vec![Field::new(0, FieldType::Reference), Field::scalar(8, S::R8)],
        );
        assert_eq!(regs(&refs), [(I, 8), (Sse, 8)]);
        assert_eq!(regs(&StructLayout::typed_reference()), [(I, 8), (I, 8)]);
    }

    /// Larger than 16 bytes, empty, SIMD, misaligned: memory.
    #[test]
    fn memory_cases() {
        assert_eq!(
            classify(&seq(24, &[(0, S::I8), (8, S::I8), (16, S::I8)])),
            Passing::Memory
        );
        assert_eq!(classify(&seq(1, &[])), Passing::Memory);
        let mut simd = seq(16, &[(0, S::R4), (4, S::R4), (8, S::R4), (12, S::R4)]);
        simd.simd_intrinsic = true;
        assert_eq!(classify(&simd), Passing::Memory);
        // Pack=1 {byte, int}: the int at offset 1 is not naturally aligned.
        assert_eq!(
            classify(&seq(5, &[(0, S::U1), (1, S::I4)])),
            Passing::Memory
        );
        // A nested empty struct makes the whole struct memory.
        let nested_empty = StructLayout::sequential(
            8,
            vec![
                Field::scalar(0, S::I4),
                Field::new(4, FieldType::Struct(seq(1, &[]))),
            ],
        );
        assert_eq!(classify(&nested_empty), Passing::Memory);
        assert_eq!(classify(&seq(0, &[])), Passing::Unknown);
    }

    /// Nested structs are classified at their offsets; a fixed buffer repeats its field.
    #[test]
    fn nesting_and_fixed_buffers() {
        let inner = seq(8, &[(0, S::R4), (4, S::R4)]);
        let outer = StructLayout::sequential(
            16,
            vec![
                Field::scalar(0, S::I8),
                Field::new(8, FieldType::Struct(inner.clone())),
            ],
        );
        assert_eq!(regs(&outer), [(I, 8), (Sse, 8)]);
        // fixed int buf[3]: one int field, size 12.
        assert_eq!(regs(&seq(12, &[(0, S::I4)])), [(I, 8), (I, 4)]);
        // A fixed buffer of {int, float} pairs: both eightbytes INTEGER (without the
        // rule, the padding after the one field would make the second SSE).
        let pair = seq(8, &[(0, S::I4), (4, S::R4)]);
        let buffer =
            StructLayout::sequential(16, vec![Field::new(0, FieldType::Struct(pair.clone()))]);
        assert_eq!(regs(&buffer), [(I, 8), (I, 8)]);
        // Auto layout: no fixed-buffer rule; the padding takes the last field's class.
        let mut auto = buffer.clone();
        auto.has_layout = false;
        assert_eq!(regs(&auto), [(I, 8), (Sse, 8)]);
    }

    /// Explicit layout with overlapping fields: same offsets merge, INTEGER wins.
    #[test]
    fn unions() {
        let union = seq(8, &[(0, S::R8), (0, S::I8)]);
        assert_eq!(regs(&union), [(I, 8)]);
        let float_union = seq(8, &[(0, S::R8), (0, S::R4)]);
        assert_eq!(regs(&float_union), [(Sse, 8)]);
        // A float at 0 overlapping a double at 0, and an int at 4 inside it.
        let mixed = seq(8, &[(0, S::R8), (4, S::I4)]);
        assert_eq!(regs(&mixed), [(I, 8)]);
        // Fields that overlap at different offsets in the second eightbyte.
        let wide = seq(16, &[(0, S::R8), (8, S::R8), (12, S::R4)]);
        assert_eq!(regs(&wide), [(Sse, 8), (Sse, 8)]);
    }
}

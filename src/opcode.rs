//! The opcode table: every ECMA-335 Partition III opcode, listed once.
//!
//! One macro invocation lists each opcode with its ilasm name, encoding, operand kind,
//! stack pops and pushes, and control-flow kind. The decoder, the encoder and the stack
//! analysis all read this table; nothing else in the crate restates an opcode's properties.
//! Short/long branch and variable forms are paired in [`OpCode::long_form`] /
//! [`OpCode::short_form`], derived from one list of pairs.

use std::fmt;

/// What follows an opcode in the instruction stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OperandKind {
    /// No operand.
    None,
    /// `int8` (`ldc.i4.s`).
    ShortI,
    /// `uint8` (`unaligned.`, `no.`).
    ShortU,
    /// `int32` (`ldc.i4`).
    I,
    /// `int64` (`ldc.i8`).
    I8,
    /// `float32` (`ldc.r4`).
    ShortR,
    /// `float64` (`ldc.r8`).
    R,
    /// `uint8` argument or local index (`ldarg.s`, `stloc.s`, ...).
    ShortVar,
    /// `uint16` argument or local index (`ldarg`, `stloc`, ...).
    Var,
    /// `int8` branch displacement from the end of the instruction.
    ShortBranch,
    /// `int32` branch displacement from the end of the instruction.
    Branch,
    /// `uint32` count N followed by N `int32` displacements from the end of the instruction.
    Switch,
    /// Metadata token of a method (MethodDef, MemberRef, MethodSpec).
    Method,
    /// Metadata token of a field (FieldDef, MemberRef).
    Field,
    /// Metadata token of a type (TypeDef, TypeRef, TypeSpec).
    Type,
    /// `#US` heap token (`ldstr`).
    String,
    /// StandAloneSig token (`calli`).
    Sig,
    /// Any of type, method or field token (`ldtoken`).
    Tok,
}

impl OperandKind {
    /// Size in bytes of the operand, or `None` for `switch` (whose size depends on its count).
    pub const fn size(self) -> Option<u32> {
        Some(match self {
            OperandKind::None => 0,
            OperandKind::ShortI
            | OperandKind::ShortU
            | OperandKind::ShortVar
            | OperandKind::ShortBranch => 1,
            OperandKind::Var => 2,
            OperandKind::I8 | OperandKind::R => 8,
            OperandKind::Switch => return None,
            OperandKind::I
            | OperandKind::ShortR
            | OperandKind::Branch
            | OperandKind::Method
            | OperandKind::Field
            | OperandKind::Type
            | OperandKind::String
            | OperandKind::Sig
            | OperandKind::Tok => 4,
        })
    }

    /// Whether the operand is a metadata token.
    pub const fn is_token(self) -> bool {
        matches!(
            self,
            OperandKind::Method
                | OperandKind::Field
                | OperandKind::Type
                | OperandKind::String
                | OperandKind::Sig
                | OperandKind::Tok
        )
    }
}

/// How many stack slots an opcode pops or pushes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StackCount {
    /// Always this many.
    Fixed(u8),
    /// Depends on a signature (calls) or on the method's return type (`ret`).
    Variable,
}

/// How control leaves an instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Flow {
    /// Falls through to the next instruction.
    Next,
    /// A call that returns to the next instruction.
    Call,
    /// The `break` debugger trap; falls through.
    Break,
    /// A prefix to the next instruction.
    Prefix,
    /// Unconditional branch (`br`, `br.s`).
    Branch,
    /// Conditional branch: target or next.
    CondBranch,
    /// `switch`: one of the targets or next.
    Switch,
    /// `leave`/`leave.s`: exits protected regions, empties the stack.
    Leave,
    /// `ret`.
    Return,
    /// `jmp`: transfers to another method with the current arguments.
    Jmp,
    /// `throw`.
    Throw,
    /// `rethrow` (only inside a catch handler).
    Rethrow,
    /// `endfinally` (also `endfault`).
    EndFinally,
    /// `endfilter`.
    EndFilter,
}

impl Flow {
    /// Whether control can continue to the next instruction in the stream.
    pub const fn falls_through(self) -> bool {
        matches!(
            self,
            Flow::Next | Flow::Call | Flow::Break | Flow::Prefix | Flow::CondBranch | Flow::Switch
        )
    }
}

/// Static facts about one opcode, straight from the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpInfo {
    /// The encoding: one byte (`0x00..=0xE0`) or `0xFE00 | second byte`.
    pub code: u16,
    /// The ilasm mnemonic.
    pub name: &'static str,
    /// The operand that follows the opcode.
    pub operand: OperandKind,
    /// Stack slots popped.
    pub pops: StackCount,
    /// Stack slots pushed.
    pub pushes: StackCount,
    /// Control-flow kind.
    pub flow: Flow,
}

macro_rules! count {
    (V) => {
        StackCount::Variable
    };
    ($n:literal) => {
        StackCount::Fixed($n)
    };
}

macro_rules! opcodes {
    ($( $variant:ident = $code:literal $name:literal $operand:ident $pops:tt $pushes:tt $flow:ident ;)*) => {
        /// An ECMA-335 opcode. The discriminant is a dense index into the table, not the encoding.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(u8)]
        #[allow(missing_docs)]
        pub enum OpCode { $( $variant, )* }

        const INFO: &[OpInfo] = &[ $( OpInfo {
            code: $code,
            name: $name,
            operand: OperandKind::$operand,
            pops: count!($pops),
            pushes: count!($pushes),
            flow: Flow::$flow,
        }, )* ];

        impl OpCode {
            /// Every opcode, in table order.
            pub const ALL: &'static [OpCode] = &[ $( OpCode::$variant, )* ];
        }

        /// Opcode -> operand kind (one byte per opcode, where a row of `INFO` is a
        /// multiplication away), from the same rows.
        static OPERAND: [OperandKind; OPCODE_COUNT] = [ $( OperandKind::$operand, )* ];

        /// Opcode -> encoding, from the same rows.
        static CODE: [u16; OPCODE_COUNT] = [ $( $code, )* ];
    };
}

opcodes! {
    // variant      encoding  name            operand     pops pushes flow
    Nop           = 0x00 "nop"              None        0 0 Next;
    Break         = 0x01 "break"            None        0 0 Break;
    Ldarg0        = 0x02 "ldarg.0"          None        0 1 Next;
    Ldarg1        = 0x03 "ldarg.1"          None        0 1 Next;
    Ldarg2        = 0x04 "ldarg.2"          None        0 1 Next;
    Ldarg3        = 0x05 "ldarg.3"          None        0 1 Next;
    Ldloc0        = 0x06 "ldloc.0"          None        0 1 Next;
    Ldloc1        = 0x07 "ldloc.1"          None        0 1 Next;
    Ldloc2        = 0x08 "ldloc.2"          None        0 1 Next;
    Ldloc3        = 0x09 "ldloc.3"          None        0 1 Next;
    Stloc0        = 0x0A "stloc.0"          None        1 0 Next;
    Stloc1        = 0x0B "stloc.1"          None        1 0 Next;
    Stloc2        = 0x0C "stloc.2"          None        1 0 Next;
    Stloc3        = 0x0D "stloc.3"          None        1 0 Next;
    LdargS        = 0x0E "ldarg.s"          ShortVar    0 1 Next;
    LdargaS       = 0x0F "ldarga.s"         ShortVar    0 1 Next;
    StargS        = 0x10 "starg.s"          ShortVar    1 0 Next;
    LdlocS        = 0x11 "ldloc.s"          ShortVar    0 1 Next;
    LdlocaS       = 0x12 "ldloca.s"         ShortVar    0 1 Next;
    StlocS        = 0x13 "stloc.s"          ShortVar    1 0 Next;
    Ldnull        = 0x14 "ldnull"           None        0 1 Next;
    LdcI4M1       = 0x15 "ldc.i4.m1"        None        0 1 Next;
    LdcI40        = 0x16 "ldc.i4.0"         None        0 1 Next;
    LdcI41        = 0x17 "ldc.i4.1"         None        0 1 Next;
    LdcI42        = 0x18 "ldc.i4.2"         None        0 1 Next;
    LdcI43        = 0x19 "ldc.i4.3"         None        0 1 Next;
    LdcI44        = 0x1A "ldc.i4.4"         None        0 1 Next;
    LdcI45        = 0x1B "ldc.i4.5"         None        0 1 Next;
    LdcI46        = 0x1C "ldc.i4.6"         None        0 1 Next;
    LdcI47        = 0x1D "ldc.i4.7"         None        0 1 Next;
    LdcI48        = 0x1E "ldc.i4.8"         None        0 1 Next;
    LdcI4S        = 0x1F "ldc.i4.s"         ShortI      0 1 Next;
    LdcI4         = 0x20 "ldc.i4"           I           0 1 Next;
    LdcI8         = 0x21 "ldc.i8"           I8          0 1 Next;
    LdcR4         = 0x22 "ldc.r4"           ShortR      0 1 Next;
    LdcR8         = 0x23 "ldc.r8"           R           0 1 Next;
    Dup           = 0x25 "dup"              None        1 2 Next;
    Pop           = 0x26 "pop"              None        1 0 Next;
    Jmp           = 0x27 "jmp"              Method      0 0 Jmp;
    Call          = 0x28 "call"             Method      V V Call;
    Calli         = 0x29 "calli"            Sig         V V Call;
    Ret           = 0x2A "ret"              None        V 0 Return;
    BrS           = 0x2B "br.s"             ShortBranch 0 0 Branch;
    BrfalseS      = 0x2C "brfalse.s"        ShortBranch 1 0 CondBranch;
    BrtrueS       = 0x2D "brtrue.s"         ShortBranch 1 0 CondBranch;
    BeqS          = 0x2E "beq.s"            ShortBranch 2 0 CondBranch;
    BgeS          = 0x2F "bge.s"            ShortBranch 2 0 CondBranch;
    BgtS          = 0x30 "bgt.s"            ShortBranch 2 0 CondBranch;
    BleS          = 0x31 "ble.s"            ShortBranch 2 0 CondBranch;
    BltS          = 0x32 "blt.s"            ShortBranch 2 0 CondBranch;
    BneUnS        = 0x33 "bne.un.s"         ShortBranch 2 0 CondBranch;
    BgeUnS        = 0x34 "bge.un.s"         ShortBranch 2 0 CondBranch;
    BgtUnS        = 0x35 "bgt.un.s"         ShortBranch 2 0 CondBranch;
    BleUnS        = 0x36 "ble.un.s"         ShortBranch 2 0 CondBranch;
    BltUnS        = 0x37 "blt.un.s"         ShortBranch 2 0 CondBranch;
    Br            = 0x38 "br"               Branch      0 0 Branch;
    Brfalse       = 0x39 "brfalse"          Branch      1 0 CondBranch;
    Brtrue        = 0x3A "brtrue"           Branch      1 0 CondBranch;
    Beq           = 0x3B "beq"              Branch      2 0 CondBranch;
    Bge           = 0x3C "bge"              Branch      2 0 CondBranch;
    Bgt           = 0x3D "bgt"              Branch      2 0 CondBranch;
    Ble           = 0x3E "ble"              Branch      2 0 CondBranch;
    Blt           = 0x3F "blt"              Branch      2 0 CondBranch;
    BneUn         = 0x40 "bne.un"           Branch      2 0 CondBranch;
    BgeUn         = 0x41 "bge.un"           Branch      2 0 CondBranch;
    BgtUn         = 0x42 "bgt.un"           Branch      2 0 CondBranch;
    BleUn         = 0x43 "ble.un"           Branch      2 0 CondBranch;
    BltUn         = 0x44 "blt.un"           Branch      2 0 CondBranch;
    Switch        = 0x45 "switch"           Switch      1 0 Switch;
    LdindI1       = 0x46 "ldind.i1"         None        1 1 Next;
    LdindU1       = 0x47 "ldind.u1"         None        1 1 Next;
    LdindI2       = 0x48 "ldind.i2"         None        1 1 Next;
    LdindU2       = 0x49 "ldind.u2"         None        1 1 Next;
    LdindI4       = 0x4A "ldind.i4"         None        1 1 Next;
    LdindU4       = 0x4B "ldind.u4"         None        1 1 Next;
    LdindI8       = 0x4C "ldind.i8"         None        1 1 Next;
    LdindI        = 0x4D "ldind.i"          None        1 1 Next;
    LdindR4       = 0x4E "ldind.r4"         None        1 1 Next;
    LdindR8       = 0x4F "ldind.r8"         None        1 1 Next;
    LdindRef      = 0x50 "ldind.ref"        None        1 1 Next;
    StindRef      = 0x51 "stind.ref"        None        2 0 Next;
    StindI1       = 0x52 "stind.i1"         None        2 0 Next;
    StindI2       = 0x53 "stind.i2"         None        2 0 Next;
    StindI4       = 0x54 "stind.i4"         None        2 0 Next;
    StindI8       = 0x55 "stind.i8"         None        2 0 Next;
    StindR4       = 0x56 "stind.r4"         None        2 0 Next;
    StindR8       = 0x57 "stind.r8"         None        2 0 Next;
    Add           = 0x58 "add"              None        2 1 Next;
    Sub           = 0x59 "sub"              None        2 1 Next;
    Mul           = 0x5A "mul"              None        2 1 Next;
    Div           = 0x5B "div"              None        2 1 Next;
    DivUn         = 0x5C "div.un"           None        2 1 Next;
    Rem           = 0x5D "rem"              None        2 1 Next;
    RemUn         = 0x5E "rem.un"           None        2 1 Next;
    And           = 0x5F "and"              None        2 1 Next;
    Or            = 0x60 "or"               None        2 1 Next;
    Xor           = 0x61 "xor"              None        2 1 Next;
    Shl           = 0x62 "shl"              None        2 1 Next;
    Shr           = 0x63 "shr"              None        2 1 Next;
    ShrUn         = 0x64 "shr.un"           None        2 1 Next;
    Neg           = 0x65 "neg"              None        1 1 Next;
    Not           = 0x66 "not"              None        1 1 Next;
    ConvI1        = 0x67 "conv.i1"          None        1 1 Next;
    ConvI2        = 0x68 "conv.i2"          None        1 1 Next;
    ConvI4        = 0x69 "conv.i4"          None        1 1 Next;
    ConvI8        = 0x6A "conv.i8"          None        1 1 Next;
    ConvR4        = 0x6B "conv.r4"          None        1 1 Next;
    ConvR8        = 0x6C "conv.r8"          None        1 1 Next;
    ConvU4        = 0x6D "conv.u4"          None        1 1 Next;
    ConvU8        = 0x6E "conv.u8"          None        1 1 Next;
    Callvirt      = 0x6F "callvirt"         Method      V V Call;
    Cpobj         = 0x70 "cpobj"            Type        2 0 Next;
    Ldobj         = 0x71 "ldobj"            Type        1 1 Next;
    Ldstr         = 0x72 "ldstr"            String      0 1 Next;
    Newobj        = 0x73 "newobj"           Method      V 1 Call;
    Castclass     = 0x74 "castclass"        Type        1 1 Next;
    Isinst        = 0x75 "isinst"           Type        1 1 Next;
    ConvRUn       = 0x76 "conv.r.un"        None        1 1 Next;
    Unbox         = 0x79 "unbox"            Type        1 1 Next;
    Throw         = 0x7A "throw"            None        1 0 Throw;
    Ldfld         = 0x7B "ldfld"            Field       1 1 Next;
    Ldflda        = 0x7C "ldflda"           Field       1 1 Next;
    Stfld         = 0x7D "stfld"            Field       2 0 Next;
    Ldsfld        = 0x7E "ldsfld"           Field       0 1 Next;
    Ldsflda       = 0x7F "ldsflda"          Field       0 1 Next;
    Stsfld        = 0x80 "stsfld"           Field       1 0 Next;
    Stobj         = 0x81 "stobj"            Type        2 0 Next;
    ConvOvfI1Un   = 0x82 "conv.ovf.i1.un"   None        1 1 Next;
    ConvOvfI2Un   = 0x83 "conv.ovf.i2.un"   None        1 1 Next;
    ConvOvfI4Un   = 0x84 "conv.ovf.i4.un"   None        1 1 Next;
    ConvOvfI8Un   = 0x85 "conv.ovf.i8.un"   None        1 1 Next;
    ConvOvfU1Un   = 0x86 "conv.ovf.u1.un"   None        1 1 Next;
    ConvOvfU2Un   = 0x87 "conv.ovf.u2.un"   None        1 1 Next;
    ConvOvfU4Un   = 0x88 "conv.ovf.u4.un"   None        1 1 Next;
    ConvOvfU8Un   = 0x89 "conv.ovf.u8.un"   None        1 1 Next;
    ConvOvfIUn    = 0x8A "conv.ovf.i.un"    None        1 1 Next;
    ConvOvfUUn    = 0x8B "conv.ovf.u.un"    None        1 1 Next;
    Box           = 0x8C "box"              Type        1 1 Next;
    Newarr        = 0x8D "newarr"           Type        1 1 Next;
    Ldlen         = 0x8E "ldlen"            None        1 1 Next;
    Ldelema       = 0x8F "ldelema"          Type        2 1 Next;
    LdelemI1      = 0x90 "ldelem.i1"        None        2 1 Next;
    LdelemU1      = 0x91 "ldelem.u1"        None        2 1 Next;
    LdelemI2      = 0x92 "ldelem.i2"        None        2 1 Next;
    LdelemU2      = 0x93 "ldelem.u2"        None        2 1 Next;
    LdelemI4      = 0x94 "ldelem.i4"        None        2 1 Next;
    LdelemU4      = 0x95 "ldelem.u4"        None        2 1 Next;
    LdelemI8      = 0x96 "ldelem.i8"        None        2 1 Next;
    LdelemI       = 0x97 "ldelem.i"         None        2 1 Next;
    LdelemR4      = 0x98 "ldelem.r4"        None        2 1 Next;
    LdelemR8      = 0x99 "ldelem.r8"        None        2 1 Next;
    LdelemRef     = 0x9A "ldelem.ref"       None        2 1 Next;
    StelemI       = 0x9B "stelem.i"         None        3 0 Next;
    StelemI1      = 0x9C "stelem.i1"        None        3 0 Next;
    StelemI2      = 0x9D "stelem.i2"        None        3 0 Next;
    StelemI4      = 0x9E "stelem.i4"        None        3 0 Next;
    StelemI8      = 0x9F "stelem.i8"        None        3 0 Next;
    StelemR4      = 0xA0 "stelem.r4"        None        3 0 Next;
    StelemR8      = 0xA1 "stelem.r8"        None        3 0 Next;
    StelemRef     = 0xA2 "stelem.ref"       None        3 0 Next;
    Ldelem        = 0xA3 "ldelem"           Type        2 1 Next;
    Stelem        = 0xA4 "stelem"           Type        3 0 Next;
    UnboxAny      = 0xA5 "unbox.any"        Type        1 1 Next;
    ConvOvfI1     = 0xB3 "conv.ovf.i1"      None        1 1 Next;
    ConvOvfU1     = 0xB4 "conv.ovf.u1"      None        1 1 Next;
    ConvOvfI2     = 0xB5 "conv.ovf.i2"      None        1 1 Next;
    ConvOvfU2     = 0xB6 "conv.ovf.u2"      None        1 1 Next;
    ConvOvfI4     = 0xB7 "conv.ovf.i4"      None        1 1 Next;
    ConvOvfU4     = 0xB8 "conv.ovf.u4"      None        1 1 Next;
    ConvOvfI8     = 0xB9 "conv.ovf.i8"      None        1 1 Next;
    ConvOvfU8     = 0xBA "conv.ovf.u8"      None        1 1 Next;
    Refanyval     = 0xC2 "refanyval"        Type        1 1 Next;
    Ckfinite      = 0xC3 "ckfinite"         None        1 1 Next;
    Mkrefany      = 0xC6 "mkrefany"         Type        1 1 Next;
    Ldtoken       = 0xD0 "ldtoken"          Tok         0 1 Next;
    ConvU2        = 0xD1 "conv.u2"          None        1 1 Next;
    ConvU1        = 0xD2 "conv.u1"          None        1 1 Next;
    ConvI         = 0xD3 "conv.i"           None        1 1 Next;
    ConvOvfI      = 0xD4 "conv.ovf.i"       None        1 1 Next;
    ConvOvfU      = 0xD5 "conv.ovf.u"       None        1 1 Next;
    AddOvf        = 0xD6 "add.ovf"          None        2 1 Next;
    AddOvfUn      = 0xD7 "add.ovf.un"       None        2 1 Next;
    MulOvf        = 0xD8 "mul.ovf"          None        2 1 Next;
    MulOvfUn      = 0xD9 "mul.ovf.un"       None        2 1 Next;
    SubOvf        = 0xDA "sub.ovf"          None        2 1 Next;
    SubOvfUn      = 0xDB "sub.ovf.un"       None        2 1 Next;
    Endfinally    = 0xDC "endfinally"       None        0 0 EndFinally;
    Leave         = 0xDD "leave"            Branch      0 0 Leave;
    LeaveS        = 0xDE "leave.s"          ShortBranch 0 0 Leave;
    StindI        = 0xDF "stind.i"          None        2 0 Next;
    ConvU         = 0xE0 "conv.u"           None        1 1 Next;
    Arglist       = 0xFE00 "arglist"        None        0 1 Next;
    Ceq           = 0xFE01 "ceq"            None        2 1 Next;
    Cgt           = 0xFE02 "cgt"            None        2 1 Next;
    CgtUn         = 0xFE03 "cgt.un"         None        2 1 Next;
    Clt           = 0xFE04 "clt"            None        2 1 Next;
    CltUn         = 0xFE05 "clt.un"         None        2 1 Next;
    Ldftn         = 0xFE06 "ldftn"          Method      0 1 Next;
    Ldvirtftn     = 0xFE07 "ldvirtftn"      Method      1 1 Next;
    Ldarg         = 0xFE09 "ldarg"          Var         0 1 Next;
    Ldarga        = 0xFE0A "ldarga"         Var         0 1 Next;
    Starg         = 0xFE0B "starg"          Var         1 0 Next;
    Ldloc         = 0xFE0C "ldloc"          Var         0 1 Next;
    Ldloca        = 0xFE0D "ldloca"         Var         0 1 Next;
    Stloc         = 0xFE0E "stloc"          Var         1 0 Next;
    Localloc      = 0xFE0F "localloc"       None        1 1 Next;
    Endfilter     = 0xFE11 "endfilter"      None        1 0 EndFilter;
    Unaligned     = 0xFE12 "unaligned."     ShortU      0 0 Prefix;
    Volatile      = 0xFE13 "volatile."      None        0 0 Prefix;
    Tail          = 0xFE14 "tail."          None        0 0 Prefix;
    Initobj       = 0xFE15 "initobj"        Type        1 0 Next;
    Constrained   = 0xFE16 "constrained."   Type        0 0 Prefix;
    Cpblk         = 0xFE17 "cpblk"          None        3 0 Next;
    Initblk       = 0xFE18 "initblk"        None        3 0 Next;
    No            = 0xFE19 "no."            ShortU      0 0 Prefix;
    Rethrow       = 0xFE1A "rethrow"        None        0 0 Rethrow;
    Sizeof        = 0xFE1C "sizeof"         Type        0 1 Next;
    Refanytype    = 0xFE1D "refanytype"     None        1 1 Next;
    Readonly      = 0xFE1E "readonly."      None        0 0 Prefix;
}

/// Short form and long form of each opcode that has both, listed once.
const SHORT_LONG: &[(OpCode, OpCode)] = &[
    (OpCode::LdargS, OpCode::Ldarg),
    (OpCode::LdargaS, OpCode::Ldarga),
    (OpCode::StargS, OpCode::Starg),
    (OpCode::LdlocS, OpCode::Ldloc),
    (OpCode::LdlocaS, OpCode::Ldloca),
    (OpCode::StlocS, OpCode::Stloc),
    (OpCode::LdcI4S, OpCode::LdcI4),
    (OpCode::BrS, OpCode::Br),
    (OpCode::BrfalseS, OpCode::Brfalse),
    (OpCode::BrtrueS, OpCode::Brtrue),
    (OpCode::BeqS, OpCode::Beq),
    (OpCode::BgeS, OpCode::Bge),
    (OpCode::BgtS, OpCode::Bgt),
    (OpCode::BleS, OpCode::Ble),
    (OpCode::BltS, OpCode::Blt),
    (OpCode::BneUnS, OpCode::BneUn),
    (OpCode::BgeUnS, OpCode::BgeUn),
    (OpCode::BgtUnS, OpCode::BgtUn),
    (OpCode::BleUnS, OpCode::BleUn),
    (OpCode::BltUnS, OpCode::BltUn),
    (OpCode::LeaveS, OpCode::Leave),
];

const NO_OPCODE: u8 = u8::MAX;
const OPCODE_COUNT: usize = INFO.len();

// The lookup maps below are derived from `INFO` at compile time; they restate nothing.
// They exist so that the hot paths (decoding an opcode byte, stepping over an
// instruction) are one load each instead of a chain of dependent loads and branches.

/// Builds the byte -> opcode map for one- or two-byte opcodes at compile time.
const fn decode_map(two_byte: bool) -> [Option<OpCode>; 256] {
    let mut map = [None; 256];
    let mut i = 0;
    while i < INFO.len() {
        let code = INFO[i].code;
        if (code >= 0xFE00) == two_byte {
            map[(code & 0xFF) as usize] = Some(OpCode::ALL[i]);
        }
        i += 1;
    }
    map
}

static ONE_BYTE: [Option<OpCode>; 256] = decode_map(false);
static TWO_BYTE: [Option<OpCode>; 256] = decode_map(true);

/// Builds the opcode -> encoded length map (0 for `switch`) at compile time.
const fn fixed_lens() -> [u8; OPCODE_COUNT] {
    let mut lens = [0; OPCODE_COUNT];
    let mut i = 0;
    while i < OPCODE_COUNT {
        let opcode_len = if INFO[i].code >= 0xFE00 { 2 } else { 1 };
        if let Some(operand) = INFO[i].operand.size() {
            lens[i] = opcode_len + operand as u8;
        }
        i += 1;
    }
    lens
}

static FIXED_LEN: [u8; OPCODE_COUNT] = fixed_lens();

/// Builds the short <-> long partner map at compile time from [`SHORT_LONG`].
const fn partner_map(short_to_long: bool) -> [u8; 256] {
    let mut map = [NO_OPCODE; 256];
    let mut i = 0;
    while i < SHORT_LONG.len() {
        let (short, long) = SHORT_LONG[i];
        if short_to_long {
            map[short as usize] = long as u8;
        } else {
            map[long as usize] = short as u8;
        }
        i += 1;
    }
    map
}

static LONG_OF: [u8; 256] = partner_map(true);
static SHORT_OF: [u8; 256] = partner_map(false);

/// Everything decoding needs about the opcode one byte selects, in one row (one load on
/// the decoder's hot path): the opcode, its total encoded length and its operand kind.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ByteDecode {
    /// The opcode, `None` for an undefined byte.
    pub opcode: Option<OpCode>,
    /// Total encoded length, opcode bytes included; 0 for `switch` and undefined bytes.
    pub len: u8,
    /// The operand kind (`None` for undefined bytes).
    pub operand: OperandKind,
    /// Whether the operand is a branch target or a switch table.
    pub control: bool,
}

/// Builds the byte -> [`ByteDecode`] map from [`decode_map`], [`FIXED_LEN`] and the table
/// rows.
const fn byte_decode_map(two_byte: bool) -> [ByteDecode; 256] {
    let opcodes = decode_map(two_byte);
    let mut map = [ByteDecode {
        opcode: None,
        len: 0,
        operand: OperandKind::None,
        control: false,
    }; 256];
    let mut b = 0;
    while b < 256 {
        if let Some(opcode) = opcodes[b] {
            let row = &INFO[opcode as usize];
            map[b] = ByteDecode {
                opcode: Some(opcode),
                len: FIXED_LEN[opcode as usize],
                operand: row.operand,
                control: matches!(
                    row.operand,
                    OperandKind::ShortBranch | OperandKind::Branch | OperandKind::Switch
                ),
            };
        }
        b += 1;
    }
    map
}

/// One-byte opcodes, by byte.
pub(crate) static DECODE_ONE: [ByteDecode; 256] = byte_decode_map(false);
/// Two-byte opcodes, by the byte after `0xFE`.
pub(crate) static DECODE_TWO: [ByteDecode; 256] = byte_decode_map(true);

impl OpCode {
    /// The table row of this opcode.
    #[inline]
    pub fn info(self) -> &'static OpInfo {
        &INFO[self as usize]
    }

    /// The ilasm mnemonic, e.g. `"ldc.i4.s"`.
    #[inline]
    pub fn name(self) -> &'static str {
        self.info().name
    }

    /// The operand kind.
    #[inline]
    pub fn operand(self) -> OperandKind {
        OPERAND[self as usize]
    }

    /// The control-flow kind.
    #[inline]
    pub fn flow(self) -> Flow {
        self.info().flow
    }

    /// The encoding: a single byte, or `0xFE00 | b` for two-byte opcodes.
    #[inline]
    pub fn code(self) -> u16 {
        CODE[self as usize]
    }

    /// Number of bytes of the opcode itself (1 or 2).
    #[inline]
    pub fn opcode_len(self) -> u32 {
        if self.code() >= 0xFE00 { 2 } else { 1 }
    }

    /// Total encoded size, or `None` for `switch` (size depends on its target count).
    #[inline]
    pub fn fixed_len(self) -> Option<u32> {
        match FIXED_LEN[self as usize] {
            0 => None,
            len => Some(u32::from(len)),
        }
    }

    /// The opcode encoded by a single byte, if any (`0xFE` itself is not an opcode).
    #[inline]
    pub fn from_byte(byte: u8) -> Option<OpCode> {
        ONE_BYTE[byte as usize]
    }

    /// The opcode encoded by `0xFE byte`, if any.
    #[inline]
    pub fn from_fe_byte(byte: u8) -> Option<OpCode> {
        TWO_BYTE[byte as usize]
    }

    /// Looks up an opcode by its encoding (`0x00..=0xFF` or `0xFE00 | b`).
    pub fn from_code(code: u16) -> Option<OpCode> {
        match code {
            0..=0xFF => Self::from_byte(code as u8),
            0xFE00..=0xFEFF => Self::from_fe_byte(code as u8),
            _ => None,
        }
    }

    /// Looks up an opcode by its ilasm mnemonic (exact match).
    pub fn from_name(name: &str) -> Option<OpCode> {
        OpCode::ALL.iter().copied().find(|op| op.name() == name)
    }

    #[inline]
    fn from_index(index: u8) -> Option<OpCode> {
        OpCode::ALL.get(index as usize).copied()
    }

    /// The long form of a short-form opcode (`br.s` -> `br`, `ldloc.s` -> `ldloc`).
    #[inline]
    pub fn long_form(self) -> Option<OpCode> {
        Self::from_index(LONG_OF[self as usize])
    }

    /// The short form of a long-form opcode (`br` -> `br.s`, `ldc.i4` -> `ldc.i4.s`).
    #[inline]
    pub fn short_form(self) -> Option<OpCode> {
        Self::from_index(SHORT_OF[self as usize])
    }

    /// Whether the operand is a branch displacement (short or long), `switch` excluded.
    #[inline]
    pub fn is_branch(self) -> bool {
        matches!(
            self.operand(),
            OperandKind::Branch | OperandKind::ShortBranch
        )
    }

    /// Whether this is a prefix (`unaligned.`, `volatile.`, `tail.`, `constrained.`,
    /// `readonly.`, `no.`).
    #[inline]
    pub fn is_prefix(self) -> bool {
        self.flow() == Flow::Prefix
    }
}

impl fmt::Display for OpCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_encodings_are_unique_and_round_trip() {
        assert!(INFO.len() < NO_OPCODE as usize);
        for &op in OpCode::ALL {
            assert_eq!(OpCode::from_code(op.code()), Some(op), "{op}");
            assert_eq!(OpCode::from_name(op.name()), Some(op));
        }
    }

    #[test]
    fn table_has_every_ecma_opcode() {
        // ECMA-335 Partition III defines 219 opcodes in 3.1.23's runtime opcode.def
        // (excluding the reserved prefix1..7/prefixref encodings and `illegal`/`endmac`).
        assert_eq!(OpCode::ALL.len(), 219);
        let one = (0..=255u8)
            .filter(|&b| OpCode::from_byte(b).is_some())
            .count();
        let two = (0..=255u8)
            .filter(|&b| OpCode::from_fe_byte(b).is_some())
            .count();
        assert_eq!(one + two, OpCode::ALL.len());
        assert_eq!(OpCode::from_byte(0xFE), None);
        assert_eq!(OpCode::from_byte(0x24), None);
        assert_eq!(OpCode::from_fe_byte(0x08), None);
        assert_eq!(OpCode::from_fe_byte(0x19), Some(OpCode::No));
    }

    #[test]
    fn derived_maps_agree_with_the_table() {
        for &op in OpCode::ALL {
            let expected = op.operand().size().map(|size| op.opcode_len() + size);
            assert_eq!(op.fixed_len(), expected, "{op}");
        }
        assert_eq!(OpCode::Switch.fixed_len(), None);
        for b in 0..=255u8 {
            let one = OpCode::ALL.iter().find(|op| op.code() == u16::from(b));
            assert_eq!(OpCode::from_byte(b), one.copied());
            let two = OpCode::ALL
                .iter()
                .find(|op| op.code() == 0xFE00 | u16::from(b));
            assert_eq!(OpCode::from_fe_byte(b), two.copied());
        }
    }

    #[test]
    fn short_long_partners_are_consistent() {
        for &(short, long) in SHORT_LONG {
            assert_eq!(short.long_form(), Some(long));
            assert_eq!(long.short_form(), Some(short));
            assert_eq!(short.flow(), long.flow());
            assert_eq!(short.info().pops, long.info().pops);
            assert_eq!(short.info().pushes, long.info().pushes);
        }
        for &op in OpCode::ALL {
            if op.operand() == OperandKind::ShortBranch {
                assert!(op.long_form().is_some(), "{op} lacks a long form");
            }
        }
    }
}

/// How the encoder writes one opcode: its row of the encoding map, derived from the table
/// so that one load gives everything the encoder asks of an opcode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Encoding {
    /// The opcode bytes in stream order as a little-endian word: `b` for one-byte
    /// opcodes, `0xFE | b << 8` for two-byte ones.
    pub bytes: u16,
    /// Number of opcode bytes (1 or 2).
    pub opcode_len: u8,
    /// Total encoded length, 0 for `switch` (as in [`OpCode::fixed_len`]).
    pub len: u8,
    /// The operand kind.
    pub operand: OperandKind,
    /// How far the operand is shifted in the instruction's little-endian word: 8 bits per
    /// opcode byte.
    pub shift: u8,
    /// How the instruction is written (one test for the common case).
    pub word: Word,
}

/// How the encoder writes an opcode's instructions, from its operand kind and length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Word {
    /// As one word of at most 8 bytes whose operand bytes are the operand's bits.
    Plain = 0,
    /// As one word with a zero displacement, filled in later (short and long branches).
    Branch = 1,
    /// Not as one word: `switch`, `ldc.i8`, `ldc.r8`.
    Unusual = 2,
}

/// Builds the opcode -> [`Encoding`] map at compile time from `INFO` and `FIXED_LEN`.
const fn encodings() -> [Encoding; OPCODE_COUNT] {
    let mut map = [Encoding {
        bytes: 0,
        opcode_len: 0,
        len: 0,
        operand: OperandKind::None,
        shift: 0,
        word: Word::Plain,
    }; OPCODE_COUNT];
    let mut i = 0;
    while i < OPCODE_COUNT {
        let code = INFO[i].code;
        let two_byte = code >= 0xFE00;
        map[i] = Encoding {
            bytes: if two_byte {
                0xFE | (code & 0xFF) << 8
            } else {
                code
            },
            opcode_len: if two_byte { 2 } else { 1 },
            len: FIXED_LEN[i],
            operand: INFO[i].operand,
            shift: if two_byte { 16 } else { 8 },
            word: if FIXED_LEN[i] == 0 || FIXED_LEN[i] > 8 {
                Word::Unusual
            } else if matches!(
                INFO[i].operand,
                OperandKind::ShortBranch | OperandKind::Branch
            ) {
                Word::Branch
            } else {
                Word::Plain
            },
        };
        i += 1;
    }
    map
}

static ENCODING: [Encoding; OPCODE_COUNT] = encodings();

impl OpCode {
    /// The encoder's row for this opcode (see [`Encoding`]).
    #[inline(always)]
    pub(crate) fn encoding(self) -> Encoding {
        ENCODING[self as usize]
    }
}

#[cfg(test)]
mod encoding_tests {
    use super::*;

    #[test]
    fn encoding_rows_agree_with_the_table() {
        for &op in OpCode::ALL {
            let e = op.encoding();
            let code = op.code();
            let expected: &[u8] = if code >= 0xFE00 {
                &[0xFE, code as u8]
            } else {
                &[code as u8]
            };
            assert_eq!(&e.bytes.to_le_bytes()[..expected.len()], expected, "{op}");
            assert_eq!(u32::from(e.opcode_len), op.opcode_len(), "{op}");
            assert_eq!(op.fixed_len().unwrap_or(0), u32::from(e.len), "{op}");
            assert_eq!(e.operand, op.operand(), "{op}");
            assert_eq!(u32::from(e.shift), 8 * op.opcode_len(), "{op}");
            let word = match op.fixed_len() {
                None | Some(9..) => Word::Unusual,
                Some(_) if op.is_branch() => Word::Branch,
                Some(_) => Word::Plain,
            };
            assert_eq!(e.word, word, "{op}");
        }
    }
}

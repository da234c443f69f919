//! Tokens, types and signatures as ilasm writes them, resolved through a
//! [`MetadataSource`].

use super::Unresolved;
use super::text::{write_dotted, write_id, write_user_string};
use crate::error::Result;
use crate::metadata::{MetadataSource, table, token_table};
use crate::opcode::{OpCode, OperandKind};
use crate::sig::compressed::{SigReader, bad};
use crate::sig::types::callconv;
use crate::sig::{ArrayType, CallingConvention, FieldSig, LocalVarSig, MethodSig, TypeSig};
use std::fmt::Write;

/// Nested types deeper than this are taken for a cycle in the metadata.
const MAX_ENCLOSING: usize = 64;

/// Whose generic parameters `!n` and `!!n` are, when their names are wanted: the
/// method being listed and its type. Signatures of the members a body refers to are
/// written with numbers, as ilasm reads them.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Context {
    /// The TypeDef whose parameters `!n` names.
    pub(super) ty: Option<u32>,
    /// The MethodDef whose parameters `!!n` names.
    pub(super) method: Option<u32>,
}

impl Context {
    /// Generic parameters by number.
    pub(super) const NUMBERS: Context = Context {
        ty: None,
        method: None,
    };
}

/// Writes tokens as text, counting what it cannot resolve.
pub(super) struct Printer<'m, M: ?Sized> {
    pub(super) md: &'m M,
    pub(super) unresolved: Unresolved,
}

impl<M: MetadataSource + ?Sized> Printer<'_, M> {
    /// The fallback for a token the source gives no text for: `/* 0A000012 */`.
    pub(super) fn hex(&mut self, token: u32, out: &mut String) {
        self.unresolved.hex_tokens += 1;
        let _ = write!(out, "/* {token:08X} */");
    }

    /// The generic context of the method `method` (a MethodDef token) for its own body.
    pub(super) fn context_of(&self, method: Option<u32>) -> Context {
        let Some(method) = method.filter(|&m| token_table(m) == table::METHOD_DEF) else {
            return Context::NUMBERS;
        };
        let ty = self
            .md
            .member_name(method)
            .ok()
            .and_then(|m| m.owner)
            .filter(|&t| token_table(t) == table::TYPE_DEF);
        Context {
            ty,
            method: Some(method),
        }
    }

    // ---- types ---------------------------------------------------------------------

    /// Writes the name of a TypeDef or TypeRef: `[Assembly]Namespace.Outer/Inner`.
    /// Returns false (writing nothing) when the source cannot name it.
    fn try_type_def_or_ref(&self, token: u32, out: &mut String) -> bool {
        let mut chain = Vec::new();
        let mut t = token;
        loop {
            let Ok(name) = self.md.type_name(t) else {
                return false;
            };
            let enclosing = name.enclosing;
            chain.push(name);
            match enclosing {
                Some(e) if chain.len() < MAX_ENCLOSING => t = e,
                Some(_) => return false,
                None => break,
            }
        }
        for (i, name) in chain.iter().rev().enumerate() {
            if i == 0 {
                if let Some(assembly) = &name.assembly {
                    out.push('[');
                    write_dotted(out, assembly);
                    out.push(']');
                }
            } else {
                out.push('/');
            }
            if name.namespace.is_empty() {
                write_dotted(out, &name.name);
            } else {
                write_dotted(out, &format!("{}.{}", name.namespace, name.name));
            }
        }
        true
    }

    /// Writes a type token as an operand or a member's owner: a TypeDef or TypeRef by
    /// name (`System.String`), a TypeSpec as its decoded signature (`!0`, `int32[]`,
    /// `class System.Collections.Generic.List`1<string>`).
    pub(super) fn type_token(&mut self, token: u32, ctx: Context, out: &mut String) {
        match token_table(token) {
            table::TYPE_DEF | table::TYPE_REF => {
                if !self.try_type_def_or_ref(token, out) {
                    self.hex(token, out);
                }
            }
            table::TYPE_SPEC => match self.md.signature(token).and_then(TypeSig::parse) {
                Ok(sig) => self.type_sig(&sig, ctx, out),
                Err(_) => {
                    self.unresolved.undecoded_type_specs += 1;
                    self.hex(token, out);
                }
            },
            _ => self.hex(token, out),
        }
    }

    /// Writes a type of a signature in ilasm syntax.
    pub(super) fn type_sig(&mut self, t: &TypeSig, ctx: Context, out: &mut String) {
        let keyword = crate::sig::text::primitive_keyword(t).unwrap_or_default();
        if !keyword.is_empty() {
            out.push_str(keyword);
            return;
        }
        match t {
            TypeSig::Class(token) => {
                out.push_str("class ");
                self.type_token(*token, ctx, out);
            }
            TypeSig::ValueType(token) => {
                out.push_str("valuetype ");
                self.type_token(*token, ctx, out);
            }
            TypeSig::Ptr(inner) => {
                self.type_sig(inner, ctx, out);
                out.push('*');
            }
            TypeSig::ByRef(inner) => {
                self.type_sig(inner, ctx, out);
                out.push('&');
            }
            TypeSig::SzArray(inner) => {
                self.type_sig(inner, ctx, out);
                out.push_str("[]");
            }
            TypeSig::Array(array) => self.array(array, ctx, out),
            TypeSig::GenericInst {
                is_value_type,
                token,
                args,
            } => {
                out.push_str(if *is_value_type {
                    "valuetype "
                } else {
                    "class "
                });
                self.type_token(*token, ctx, out);
                self.type_args(args, ctx, out);
            }
            TypeSig::Var(n) => self.generic_param("!", ctx.ty, *n, out),
            TypeSig::MVar(n) => self.generic_param("!!", ctx.method, *n, out),
            TypeSig::FnPtr(sig) => {
                out.push_str("method ");
                self.method_sig(sig, ctx, out, |_, out| out.push_str(" *"));
            }
            TypeSig::Modified {
                required,
                token,
                inner,
            } => {
                self.type_sig(inner, ctx, out);
                out.push_str(if *required { " modreq(" } else { " modopt(" });
                self.type_token(*token, ctx, out);
                out.push(')');
            }
            TypeSig::Pinned(inner) => {
                self.type_sig(inner, ctx, out);
                out.push_str(" pinned");
            }
            TypeSig::Internal(handle) => {
                let _ = write!(out, "/* ELEMENT_TYPE_INTERNAL 0x{handle:016X} */");
            }
            _ => {}
        }
    }

    /// `<int32,string>`.
    pub(super) fn type_args(&mut self, args: &[TypeSig], ctx: Context, out: &mut String) {
        out.push('<');
        for (i, arg) in args.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            self.type_sig(arg, ctx, out);
        }
        out.push('>');
    }

    /// `!T` when the owner's parameter has a name, else `!0`.
    fn generic_param(&self, sigil: &str, owner: Option<u32>, n: u32, out: &mut String) {
        out.push_str(sigil);
        match owner.and_then(|o| self.md.generic_param_name(o, n)) {
            Some(name) => write_id(out, &name),
            None => {
                let _ = write!(out, "{n}");
            }
        }
    }

    /// `int32[0...,0...]`: per dimension, `lo...hi`, `lo...`, a size, or nothing.
    fn array(&mut self, array: &ArrayType, ctx: Context, out: &mut String) {
        self.type_sig(&array.elem, ctx, out);
        out.push('[');
        for dim in 0..array.rank as usize {
            if dim > 0 {
                out.push(',');
            }
            let lo = array.lo_bounds.get(dim).copied();
            let size = array.sizes.get(dim).copied();
            match (lo, size) {
                (Some(lo), Some(size)) => {
                    let hi = i64::from(lo) + i64::from(size) - 1;
                    let _ = write!(out, "{lo}...{hi}");
                }
                (Some(lo), None) => {
                    let _ = write!(out, "{lo}...");
                }
                (None, Some(size)) => {
                    let _ = write!(out, "{size}");
                }
                (None, None) => {}
            }
            // Ranks beyond any bound or size are written as empty dimensions; a very
            // large rank is still written in full, as ilasm would need it.
        }
        out.push(']');
    }

    // ---- method signatures -----------------------------------------------------------

    /// `instance `, `explicit `, and the calling convention's keyword.
    fn call_conv(sig: &MethodSig, out: &mut String) {
        if sig.has_this {
            out.push_str("instance ");
        }
        if sig.explicit_this {
            out.push_str("explicit ");
        }
        out.push_str(match sig.calling_convention {
            CallingConvention::Default => "",
            CallingConvention::VarArg => "vararg ",
            CallingConvention::C => "unmanaged cdecl ",
            CallingConvention::StdCall => "unmanaged stdcall ",
            CallingConvention::ThisCall => "unmanaged thiscall ",
            CallingConvention::FastCall => "unmanaged fastcall ",
            CallingConvention::Unmanaged => "unmanaged ",
        });
    }

    /// Writes `[instance] [callconv] ret` then `middle` (the owner and name, or `*`
    /// for a function pointer) then `(params)`, with `...` before the vararg part.
    pub(super) fn method_sig(
        &mut self,
        sig: &MethodSig,
        ctx: Context,
        out: &mut String,
        middle: impl FnOnce(&mut Self, &mut String),
    ) {
        Self::call_conv(sig, out);
        self.type_sig(&sig.return_type, ctx, out);
        middle(self, out);
        out.push('(');
        for (i, p) in sig.params.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            if sig.sentinel == Some(i) {
                out.push_str("..., ");
            }
            self.type_sig(p, ctx, out);
        }
        out.push(')');
    }

    /// The parameter types of a method signature, each as written in a listing.
    pub(super) fn param_texts(&mut self, sig: &MethodSig, ctx: Context) -> Vec<String> {
        sig.params
            .iter()
            .map(|p| {
                let mut s = String::new();
                self.type_sig(p, ctx, &mut s);
                s
            })
            .collect()
    }

    // ---- members ---------------------------------------------------------------------

    /// Writes the owner of a member and `::`, or counts an ownerless member. An owner
    /// that is a MethodDef (the parent of a vararg call site's MemberRef) stands for
    /// that method's type.
    pub(super) fn owner(&mut self, owner: Option<u32>, ctx: Context, out: &mut String) {
        let owner = match owner {
            Some(o) if token_table(o) == table::METHOD_DEF => match self.md.member_name(o) {
                Ok(m) => m.owner,
                Err(_) => {
                    self.hex(o, out);
                    out.push_str("::");
                    return;
                }
            },
            other => other,
        };
        match owner {
            Some(o) => {
                self.type_token(o, ctx, out);
                out.push_str("::");
            }
            None => self.unresolved.ownerless_members += 1,
        }
    }

    /// Writes a method operand: `instance string System.Object::ToString()`, a
    /// MethodSpec with its instantiation (`!!0 System.Array::Empty<int32>()`).
    pub(super) fn method_ref(&mut self, token: u32, ctx: Context, out: &mut String) {
        if token_table(token) == table::METHOD_SPEC {
            let parent = self.md.method_spec_parent(token);
            let args = self.md.signature(token).and_then(parse_instantiation);
            match (parent, args) {
                (Ok(parent), Ok(args)) => self.member_method(parent, Some(&args), ctx, out),
                (_, args) => {
                    if args.is_err() {
                        self.unresolved.undecoded_signatures += 1;
                    }
                    self.hex(token, out);
                }
            }
        } else {
            self.member_method(token, None, ctx, out);
        }
    }

    /// Writes a MethodDef or MemberRef with its signature; `args` instantiates a
    /// generic method (written in the body's context `ctx`). Without a name the token
    /// stands for owner and name; without a signature, the token alone is written.
    fn member_method(
        &mut self,
        token: u32,
        args: Option<&[TypeSig]>,
        ctx: Context,
        out: &mut String,
    ) {
        let member = self.md.member_name(token).ok();
        let Ok(sig) = self.md.signature(token).and_then(MethodSig::parse) else {
            self.unresolved.undecoded_signatures += 1;
            return self.hex(token, out);
        };
        self.method_sig(&sig, Context::NUMBERS, out, |p, out| {
            out.push(' ');
            match &member {
                Some(member) => {
                    p.owner(member.owner, ctx, out);
                    write_dotted(out, &member.name);
                }
                None => p.hex(token, out),
            }
            if let Some(args) = args {
                p.type_args(args, ctx, out);
            }
        });
    }

    /// Writes a field operand: `int32 System.Text.StringBuilder::m_ChunkLength`. Without
    /// a name the token stands for owner and name; without a signature, the token alone
    /// is written.
    pub(super) fn field_ref(&mut self, token: u32, ctx: Context, out: &mut String) {
        let Ok(sig) = self.md.signature(token).and_then(FieldSig::parse) else {
            self.unresolved.undecoded_signatures += 1;
            return self.hex(token, out);
        };
        self.type_sig(&sig.ty, Context::NUMBERS, out);
        out.push(' ');
        match self.md.member_name(token) {
            Ok(member) => {
                self.owner(member.owner, ctx, out);
                write_dotted(out, &member.name);
            }
            Err(_) => self.hex(token, out),
        }
    }

    /// Writes the operand of `ldtoken`: a type, `field ...` or `method ...`.
    fn any_token(&mut self, token: u32, ctx: Context, out: &mut String) {
        match token_table(token) {
            table::TYPE_DEF | table::TYPE_REF | table::TYPE_SPEC => {
                self.type_token(token, ctx, out);
            }
            table::FIELD => {
                out.push_str("field ");
                self.field_ref(token, ctx, out);
            }
            table::METHOD_DEF | table::METHOD_SPEC => {
                out.push_str("method ");
                self.method_ref(token, ctx, out);
            }
            table::MEMBER_REF => match self.md.signature(token) {
                Ok([first, ..]) if *first == callconv::FIELD => {
                    out.push_str("field ");
                    self.field_ref(token, ctx, out);
                }
                _ => {
                    out.push_str("method ");
                    self.method_ref(token, ctx, out);
                }
            },
            _ => self.hex(token, out),
        }
    }

    /// Writes the token operand of `opcode`.
    pub(super) fn operand_token(
        &mut self,
        opcode: OpCode,
        token: u32,
        ctx: Context,
        out: &mut String,
    ) {
        match opcode.operand() {
            OperandKind::Method => self.method_ref(token, ctx, out),
            OperandKind::Field => self.field_ref(token, ctx, out),
            OperandKind::Type => self.type_token(token, ctx, out),
            OperandKind::Tok => self.any_token(token, ctx, out),
            OperandKind::String => match self.md.user_string(token) {
                Ok(units) => write_user_string(out, &units),
                Err(_) => self.hex(token, out),
            },
            OperandKind::Sig => match self.md.signature(token).and_then(MethodSig::parse) {
                Ok(sig) => self.method_sig(&sig, ctx, out, |_, _| {}),
                Err(_) => {
                    self.unresolved.undecoded_signatures += 1;
                    self.hex(token, out);
                }
            },
            _ => self.hex(token, out),
        }
    }

    /// The locals of a LocalVarSig token, each as `type`, or `None` (counted) when the
    /// source does not give the signature or it does not parse.
    pub(super) fn locals(&mut self, token: u32, ctx: Context) -> Option<Vec<String>> {
        match self.md.signature(token).and_then(LocalVarSig::parse) {
            Ok(sig) => Some(
                sig.locals()
                    .iter()
                    .map(|l| {
                        let mut s = String::new();
                        self.type_sig(&l.ty, ctx, &mut s);
                        s
                    })
                    .collect(),
            ),
            Err(_) => {
                self.unresolved.undecoded_signatures += 1;
                None
            }
        }
    }
}

/// The type arguments of a MethodSpec instantiation blob (`GENERICINST count types`).
fn parse_instantiation(blob: &[u8]) -> Result<Vec<TypeSig>> {
    let mut r = SigReader::new(blob);
    if r.read_u8()? != callconv::GENERICINST {
        return Err(bad(
            0,
            "MethodSpec instantiation does not start with GENERICINST (0x0A)",
        ));
    }
    let at = r.position();
    let count = r.read_compressed_u32()?;
    if count == 0 {
        return Err(bad(at, "MethodSpec instantiation with no type arguments"));
    }
    // Every argument takes at least one byte, so this bounds the allocation.
    let mut args = Vec::with_capacity(r.remaining().min(count as usize));
    for _ in 0..count {
        args.push(TypeSig::read(&mut r)?);
    }
    r.expect_end()?;
    Ok(args)
}

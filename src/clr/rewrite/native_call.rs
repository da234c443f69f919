//! [`NativeCall`]: injected IL that calls a native function of the profiler through
//! `calli`, its signature derived from the function's Rust type.

use super::super::runtime::{ClrResult, ModuleMetadata};
use crate::clr::sys::mdSignature;
use crate::graph::Instruction;
use crate::opcode::OpCode;
use crate::sig::{CallingConvention, MethodSig, TypeSig};
use crate::transform::{Snippet, SnippetBuilder};

mod sealed {
    pub trait Sealed {}
}

/// A Rust type a native function called from IL may take or return, with the signature
/// type the IL passes it as. Sealed: only types whose value the JIT passes exactly as the
/// C ABI expects (integers, floats, raw pointers) implement it.
pub trait NativeType: sealed::Sealed {
    /// Its type in a signature.
    fn signature_type() -> TypeSig;
}

/// An `extern "C"` function IL may call, of at most four [`NativeType`] parameters,
/// returning one or nothing. Sealed: its signature comes from its type, so the call the
/// JIT makes always matches the function.
pub trait NativeFunction: sealed::Sealed + Copy {
    /// Its address.
    fn address(self) -> usize;
    /// Its signature: unmanaged, C calling convention.
    fn signature() -> MethodSig;
}

macro_rules! native_types {
    ($($ty:ty => $sig:expr),* $(,)?) => {$(
        impl sealed::Sealed for $ty {}
        impl NativeType for $ty {
            fn signature_type() -> TypeSig {
                $sig
            }
        }
    )*};
}

native_types! {
    i8 => TypeSig::I1, u8 => TypeSig::U1, i16 => TypeSig::I2, u16 => TypeSig::U2,
    i32 => TypeSig::I4, u32 => TypeSig::U4, i64 => TypeSig::I8, u64 => TypeSig::U8,
    isize => TypeSig::I, usize => TypeSig::U, f32 => TypeSig::R4, f64 => TypeSig::R8,
}

impl<T> sealed::Sealed for *const T {}
impl<T> NativeType for *const T {
    fn signature_type() -> TypeSig {
        TypeSig::I
    }
}

impl<T> sealed::Sealed for *mut T {}
impl<T> NativeType for *mut T {
    fn signature_type() -> TypeSig {
        TypeSig::I
    }
}

/// The signature type of a return value: `void` for `()`.
pub trait NativeReturn: sealed::Sealed {
    /// Its type in a signature.
    fn return_type() -> TypeSig;
}

impl sealed::Sealed for () {}
impl NativeReturn for () {
    fn return_type() -> TypeSig {
        TypeSig::Void
    }
}

impl<T: NativeType> NativeReturn for T {
    fn return_type() -> TypeSig {
        T::signature_type()
    }
}

macro_rules! native_functions {
    ($(($($arg:ident),*)),* $(,)?) => {$(
        impl<R: NativeReturn $(, $arg: NativeType)*> sealed::Sealed for extern "C" fn($($arg),*) -> R {}
        impl<R: NativeReturn $(, $arg: NativeType)*> NativeFunction for extern "C" fn($($arg),*) -> R {
            fn address(self) -> usize {
                self as usize
            }
            fn signature() -> MethodSig {
                let mut signature = MethodSig::new(R::return_type(), vec![$($arg::signature_type()),*]);
                signature.calling_convention = CallingConvention::C;
                signature
            }
        }
    )*};
}

native_functions!((), (A), (A, B), (A, B, C), (A, B, C, D));

/// A call of a native function from injected IL: the arguments the caller pushed, then
/// `ldc.i8 address; conv.i; calli <signature>`, and, with [`NativeCall::push`], a `pop`
/// of the result when the function returns one, so that the call leaves the stack as it
/// found it below its arguments; [`NativeCall::push_keep`] leaves the result on the
/// stack instead (to store it into the state local, say).
///
/// The `calli` names a StandAloneSig, which differs from module to module:
/// [`NativeCall::signature_token`] finds or defines it in a module once (define it when
/// the module loads and keep it, or ask at each edit: later asks answer from the
/// module's cache), and the snippet names it as one of the method's tokens.
///
/// ```
/// use ilrewrite::clr::NativeCall;
/// use ilrewrite::{Instruction, OpCode};
///
/// extern "C" fn entered(method: i32) {
///     let _ = method;
/// }
///
/// let call = NativeCall::new(entered as extern "C" fn(i32));
/// // entered(<method id>): token 0 of each method is the module's signature token.
/// let mut b = ilrewrite::transform::Snippet::builder();
/// b.method_id();
/// call.push(&mut b, 0);
/// let entry = b.finish()?;
/// assert_eq!(entry.tokens_used(), 1);
/// # Ok::<(), ilrewrite::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NativeCall {
    address: usize,
    signature: MethodSig,
}

impl NativeCall {
    /// A call of `function`, whose signature its type gives.
    pub fn new<F: NativeFunction>(function: F) -> NativeCall {
        NativeCall {
            address: function.address(),
            signature: F::signature(),
        }
    }

    /// The function's address.
    pub fn address(&self) -> usize {
        self.address
    }

    /// The signature the `calli` names.
    pub fn signature(&self) -> &MethodSig {
        &self.signature
    }

    /// Appends the call to `builder`: the address, `calli` naming the method's token
    /// `token` (the module's [`NativeCall::signature_token`]), and `pop` when the
    /// function returns a value. The arguments must be on the stack before it.
    pub fn push(&self, builder: &mut SnippetBuilder, token: u16) {
        self.push_keep(builder, token);
        if self.signature.return_type != TypeSig::Void {
            builder.push(Instruction::simple(OpCode::Pop));
        }
    }

    /// Appends the call to `builder` as [`NativeCall::push`] does, but keeps the result:
    /// after it, the stack holds what it held below the arguments plus the function's
    /// return value, typed by the function's return type (`int64` for an `i64`, say).
    /// For a function returning nothing this is [`NativeCall::push`].
    ///
    /// ```
    /// use ilrewrite::clr::NativeCall;
    /// use ilrewrite::sig::TypeSig;
    /// use ilrewrite::transform::{InstrumentationCode, Snippet};
    /// use ilrewrite::OpCode;
    ///
    /// extern "C" fn begin() -> i64 {
    ///     0 // a timestamp
    /// }
    /// extern "C" fn end(module: u64, method: i32, started: i64) {
    ///     let _ = (module, method, started);
    /// }
    ///
    /// // t = begin(); try { body } finally { end(module, method, t) }
    /// let mut entry = Snippet::builder();
    /// NativeCall::new(begin as extern "C" fn() -> i64).push_keep(&mut entry, 0);
    /// entry.state_local(OpCode::Stloc);
    /// let mut exit = Snippet::builder();
    /// exit.module_id().method_id().state_local(OpCode::Ldloc);
    /// NativeCall::new(end as extern "C" fn(u64, i32, i64)).push(&mut exit, 1);
    /// let code = InstrumentationCode {
    ///     entry: entry.finish()?,
    ///     exit: exit.finish()?,
    ///     state_local: Some(TypeSig::I8),
    ///     ..Default::default()
    /// };
    /// assert_eq!(code.exit.tokens_used(), 2); // each module's two signature tokens
    /// # Ok::<(), ilrewrite::Error>(())
    /// ```
    pub fn push_keep(&self, builder: &mut SnippetBuilder, token: u16) {
        // A usize always fits an i64's bits; the address is reinterpreted, not
        // converted.
        builder.push(Instruction::ldc_i8(self.address as i64));
        builder.push(Instruction::simple(OpCode::ConvI));
        builder.token(OpCode::Calli, token);
    }

    /// A snippet pushing `arguments`, then the call ([`NativeCall::push`]) naming the
    /// method's token 0.
    ///
    /// # Errors
    /// An argument instruction a snippet cannot hold ([`SnippetBuilder::finish`]).
    pub fn snippet(&self, arguments: &[Instruction]) -> crate::error::Result<Snippet> {
        let mut builder = Snippet::builder();
        for &argument in arguments {
            builder.push(argument);
        }
        self.push(&mut builder, 0);
        builder.finish()
    }

    /// The StandAloneSig token of the call's signature in `module`, defined once per
    /// module ([`ModuleMetadata::call_site_signature`]).
    ///
    /// # Errors
    /// The runtime refuses the signature or to open the metadata for writing.
    pub fn signature_token(&self, module: &ModuleMetadata) -> ClrResult<mdSignature> {
        module.call_site_signature(&self.signature)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    extern "C" fn nothing() {}
    extern "C" fn two(_: i32, _: *const u8) -> u64 {
        0
    }

    #[test]
    fn the_signature_comes_from_the_function_type() {
        let call = NativeCall::new(nothing as extern "C" fn());
        assert_eq!(call.signature().to_bytes().unwrap(), [0x01, 0x00, 0x01]);
        assert_eq!(call.address(), nothing as extern "C" fn() as usize);
        let call = NativeCall::new(two as extern "C" fn(i32, *const u8) -> u64);
        // C, two parameters, returns U8, takes I4 and I.
        assert_eq!(
            call.signature().to_bytes().unwrap(),
            [0x01, 0x02, 0x0B, 0x08, 0x18]
        );
    }

    #[test]
    fn a_result_is_popped_so_the_call_leaves_the_stack_as_it_was() {
        let call = NativeCall::new(two as extern "C" fn(i32, *const u8) -> u64);
        let args = [Instruction::ldc_i4(7), Instruction::ldc_i8(0)];
        let snippet = call.snippet(&args).unwrap();
        // 2 arguments, ldc.i8, conv.i, calli, pop.
        assert_eq!(snippet.len(), 6);
        assert_eq!(snippet.tokens_used(), 1);
        let void = NativeCall::new(nothing as extern "C" fn());
        assert_eq!(void.snippet(&[]).unwrap().len(), 3);
    }

    /// `push_keep` leaves the result on the stack: the snippet ends with the `calli`,
    /// and placed as an entry storing into an `int64` state local it verifies with a max
    /// stack of 3 (two arguments, then the address), where `push`'s `pop` would leave
    /// nothing to store.
    #[test]
    fn a_kept_result_stays_on_the_stack() {
        use crate::analysis::CallEffect;
        use crate::body::MethodBody;
        use crate::transform::{InstrumentationCode, Instrumenter, MethodContext};
        extern "C" fn stamp(_: i32, _: i32) -> i64 {
            0
        }
        let call = NativeCall::new(stamp as extern "C" fn(i32, i32) -> i64);
        let entry = |keep: bool| {
            let mut b = Snippet::builder();
            b.push(Instruction::ldc_i4(1)).push(Instruction::ldc_i4(2));
            match keep {
                true => call.push_keep(&mut b, 0),
                false => call.push(&mut b, 0),
            }
            b.state_local(OpCode::Stloc);
            b.finish().unwrap()
        };
        let kept = entry(true);
        assert_eq!(kept.len(), 6); // 2 arguments, ldc.i8, conv.i, calli, stloc
        let resolver = |_: OpCode, _: u32| Ok(CallEffect { pops: 3, pushes: 1 });
        let method = MethodContext {
            tokens: &[0x1100_0001],
            ..MethodContext::new(&[0x00, 0x00, 0x01], 1)
        };
        for keep in [true, false] {
            let mut instrumenter = Instrumenter::new(InstrumentationCode {
                entry: entry(keep),
                state_local: Some(TypeSig::I8),
                ..Default::default()
            })
            .unwrap();
            let mut body = MethodBody::decode(&[0x06, 0x2A]).unwrap();
            let done = instrumenter.instrument(&mut body, &method, &resolver);
            match keep {
                true => assert_eq!(done.unwrap().max_stack, 3),
                false => assert!(done.is_err()), // stloc of an empty stack
            }
        }
    }
}

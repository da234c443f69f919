//! Stack effects of call sites, supplied by whoever can read signatures.
//!
//! The opcode table knows every instruction's stack effect except those of `call`,
//! `callvirt`, `newobj` and `calli`, which depend on the callee's signature. A
//! [`CallSiteResolver`] supplies them; [`CallEffect::from_parts`] applies the ECMA-335
//! rules to the facts a signature decoder extracts, so every resolver agrees on them.

use crate::error::{Error, Result};
use crate::metadata::MetadataSource;
use crate::opcode::OpCode;
use crate::sig::summarize_method_sig;
use std::fmt;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};

/// How many stack slots one call instruction pops and pushes.
///
/// `pops` counts every value the instruction consumes: the arguments, the `this` pointer
/// when the signature has an implicit one, and for `calli` the function pointer. `pushes`
/// is 1 when the callee returns a value (anything but `void`), else 0; `newobj` always
/// pushes 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CallEffect {
    /// Values popped.
    pub pops: u16,
    /// Values pushed (0 or 1).
    pub pushes: u16,
}

impl CallEffect {
    /// Applies the ECMA-335 Partition III rules to a method signature's facts:
    ///
    /// * `call`, `callvirt`: pops `param_count` plus 1 for an implicit `this`
    ///   (`has_this && !explicit_this`; with EXPLICITTHIS the `this` is already the first
    ///   parameter); pushes 1 iff `returns_value`.
    /// * `newobj`: pops `param_count` (the object is created, not passed); pushes 1.
    /// * `calli`: as `call`, plus 1 for the function pointer on top of the arguments.
    /// * `jmp`: pops and pushes nothing (it requires an empty stack).
    ///
    /// `param_count` counts every parameter of the call-site signature, including the
    /// variable arguments after a vararg sentinel.
    ///
    /// # Errors
    /// [`Error::BadCallSite`] for any other opcode, or when the pop count exceeds 65,535.
    pub fn from_parts(
        has_this: bool,
        explicit_this: bool,
        param_count: u32,
        returns_value: bool,
        opcode: OpCode,
    ) -> Result<CallEffect> {
        let this = u32::from(has_this && !explicit_this);
        let (extra, pushes) = match opcode {
            OpCode::Call | OpCode::Callvirt => (this, u16::from(returns_value)),
            OpCode::Newobj => (0, 1),
            OpCode::Calli => (this + 1, u16::from(returns_value)),
            OpCode::Jmp => return Ok(CallEffect { pops: 0, pushes: 0 }),
            _ => {
                return Err(Error::BadCallSite {
                    opcode: opcode.name(),
                    what: "not a call instruction",
                });
            }
        };
        let pops = param_count
            .checked_add(extra)
            .and_then(|p| u16::try_from(p).ok())
            .ok_or_else(|| Error::BadCallSite {
                opcode: opcode.name(),
                what: "more than 65535 values popped",
            })?;
        Ok(CallEffect { pops, pushes })
    }
}

/// Supplies the stack effect of call sites (`call`, `callvirt`, `newobj`, `calli`).
///
/// The stack analysis asks once per call instruction of the body, before simulating
/// (so that the simulation of a call is a table read), passing its opcode and operand
/// token (a MethodDef, MemberRef or MethodSpec token, or a StandAloneSig token for
/// `calli`). Implementations should build the answer with [`CallEffect::from_parts`].
/// An error matters only if the simulation reaches the call: the resolver is then asked
/// again, and its error is reported wrapped in [`Error::CallResolution`], naming the
/// instruction. Unreachable calls are asked about but never fail the analysis.
pub trait CallSiteResolver {
    /// The stack effect of `opcode` with operand `token`.
    ///
    /// # Errors
    /// Whatever the implementation reports for a token it cannot resolve: typically
    /// [`Error::BadToken`], [`Error::BadSignature`] or [`Error::UnresolvedCall`], and
    /// [`Error::BadCallSite`] from [`CallEffect::from_parts`].
    fn call_effect(&self, opcode: OpCode, token: u32) -> Result<CallEffect>;

    /// The metadata the call-site tokens are read from, for what needs more of a callee
    /// than its stack effect: [`crate::transform::Instrumenter`] types the operands of the
    /// tail calls it keeps from the callee's signature. `None` (the default) for a
    /// resolver that has none; what needs it is then refused.
    fn metadata(&self) -> Option<&dyn MetadataSource> {
        None
    }
}

/// Any `Fn(OpCode, u32) -> Result<CallEffect>` closure is a resolver.
impl<F> CallSiteResolver for F
where
    F: Fn(OpCode, u32) -> Result<CallEffect>,
{
    #[inline]
    fn call_effect(&self, opcode: OpCode, token: u32) -> Result<CallEffect> {
        self(opcode, token)
    }
}

/// A resolver for bodies without calls: every call site fails with
/// [`Error::UnresolvedCall`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NoCalls;

impl CallSiteResolver for NoCalls {
    fn call_effect(&self, opcode: OpCode, token: u32) -> Result<CallEffect> {
        Err(Error::UnresolvedCall {
            opcode: opcode.name(),
            token,
            what: "no call-site resolver was given",
        })
    }
}

/// Resolves call sites from the signatures of a [`MetadataSource`]: an assembly file
/// ([`crate::pe::Assembly`]) or the runtime's metadata import (feature `clr`).
///
/// Each request reads the call site's signature ([`MetadataSource::call_site_signature`]:
/// a MethodSpec resolves to the generic method it instantiates, a MemberRef of a vararg
/// call site counts its variable arguments) and applies [`CallEffect::from_parts`]. It
/// keeps no state; wrap it in a [`CachingResolver`] (see [`CachingResolver::for_module`])
/// so that each token is read once.
#[derive(Debug, Clone, Copy, Default)]
pub struct MetadataResolver<M>(M);

impl<M: MetadataSource> MetadataResolver<M> {
    /// A resolver reading signatures from `metadata`.
    pub fn new(metadata: M) -> Self {
        MetadataResolver(metadata)
    }

    /// The metadata it reads.
    pub fn metadata(&self) -> &M {
        &self.0
    }
}

impl<M: MetadataSource> CallSiteResolver for MetadataResolver<M> {
    fn call_effect(&self, opcode: OpCode, token: u32) -> Result<CallEffect> {
        let sig = summarize_method_sig(self.0.call_site_signature(token)?)?;
        CallEffect::from_parts(
            sig.has_this,
            sig.explicit_this,
            sig.param_count,
            sig.returns_value,
            opcode,
        )
    }

    fn metadata(&self) -> Option<&dyn MetadataSource> {
        Some(&self.0)
    }
}

/// A memoising wrapper: resolves each call-site token once per module, and can be
/// shared by every thread that rewrites the module's methods.
///
/// A profiler rewrites many bodies of one module, and the same callees are called from
/// many of them; resolving a token means reading and summarising its signature blob.
/// `CachingResolver` remembers every successful answer of the wrapped resolver, keyed by
/// the opcode's class (`call`/`callvirt`, `newobj`, `calli`: the classes whose effects
/// differ) and the token, and answers repeats from memory. Errors are not remembered (the
/// wrapped resolver is asked again), nor are `jmp` sites (their effect is fixed).
///
/// # One per module, shared by threads
///
/// Tokens from different modules must not share a cache: a profiler keeps one
/// `CachingResolver` per module, created when the module loads (for example in a map
/// from `ModuleID` to `Arc<CachingResolver<..>>`) and dropped when it unloads. JIT
/// callbacks arrive on any thread, several at once: the cache is `Sync` when the
/// wrapped resolver is, a hit is a few plain loads (no lock, no read-modify-write), and
/// a miss stores its answer with one atomic store (two threads missing on the same token
/// both ask the wrapped resolver and store the same answer). The wrapped resolver must
/// answer the same `(opcode, token)` the same way every time; a module whose metadata
/// changes keeps that promise as long as tokens are only added (as `IMetaDataEmit` does),
/// otherwise call [`CachingResolver::clear`].
///
/// Tokens of the MethodDef, MemberRef, MethodSpec and StandAloneSig tables with rows up
/// to [`CachingResolver::MAX_CACHED_ROW`] are cached, in chunks of 4,096 rows allocated
/// on first use (memory grows with the rows seen, 4 bytes a row); any other token is
/// passed through uncached.
pub struct CachingResolver<R> {
    inner: R,
    /// Per (opcode class, table) slot: rid -> packed effect (0 = unknown).
    cache: [Rows; SLOTS],
}

/// Opcode classes times cached tables.
const SLOTS: usize = 12;
/// Rows per chunk.
const CHUNK_BITS: u32 = 12;
const CHUNK: usize = 1 << CHUNK_BITS;
/// Chunks per slot: rows `0..=MAX_CACHED_ROW`.
const CHUNKS: usize = ((1 << 20) >> CHUNK_BITS) + 1;

/// One chunk of cached rows: the packed effect of each (0 = unknown).
type Chunk = Box<[AtomicU32]>;

/// The cached rows of one slot: a directory of chunks, both allocated on first use.
#[derive(Default)]
struct Rows(OnceLock<Box<[OnceLock<Chunk>]>>);

impl Rows {
    /// The packed effect of row `rid`, or 0.
    #[inline(always)]
    fn get(&self, rid: usize) -> u32 {
        match self
            .0
            .get()
            .and_then(|dir| dir.get(rid >> CHUNK_BITS)?.get())
        {
            Some(chunk) => chunk[rid & (CHUNK - 1)].load(Ordering::Relaxed),
            None => 0,
        }
    }

    /// Stores the packed effect of row `rid` (`rid <= MAX_CACHED_ROW`).
    fn set(&self, rid: usize, packed: u32) {
        let dir = self
            .0
            .get_or_init(|| (0..CHUNKS).map(|_| OnceLock::new()).collect());
        if let Some(chunk) = dir.get(rid >> CHUNK_BITS) {
            let chunk = chunk.get_or_init(|| (0..CHUNK).map(|_| AtomicU32::new(0)).collect());
            chunk[rid & (CHUNK - 1)].store(packed, Ordering::Relaxed);
        }
    }
}

impl<R: CallSiteResolver> CachingResolver<R> {
    /// The highest row number cached; larger rows are resolved on every request.
    pub const MAX_CACHED_ROW: u32 = 1 << 20;

    /// Wraps `inner` with an empty cache.
    pub fn new(inner: R) -> Self {
        CachingResolver {
            inner,
            cache: Default::default(),
        }
    }

    /// The wrapped resolver.
    pub fn inner(&self) -> &R {
        &self.inner
    }

    /// Forgets every remembered answer (e.g. after tokens of the module were redefined).
    pub fn clear(&mut self) {
        self.cache = Default::default();
    }

    /// The cache slot and row index of a request, or `None` if it is not cached.
    #[inline(always)]
    fn slot(opcode: OpCode, token: u32) -> Option<(usize, usize)> {
        let class = match opcode {
            OpCode::Call | OpCode::Callvirt => 0,
            OpCode::Newobj => 1,
            OpCode::Calli => 2,
            _ => return None,
        };
        let table = CACHED_TABLE[(token >> 24) as usize];
        let rid = token & 0x00FF_FFFF;
        (table != NOT_CACHED && rid <= Self::MAX_CACHED_ROW)
            .then_some((class * 4 + usize::from(table), rid as usize))
    }

    /// Asks the wrapped resolver and remembers a successful answer.
    #[cold]
    #[inline(never)]
    fn miss(&self, opcode: OpCode, token: u32, slot: usize, rid: usize) -> Result<CallEffect> {
        let effect = self.inner.call_effect(opcode, token)?;
        if let Some(packed) = pack(effect) {
            self.cache[slot].set(rid, packed);
        }
        Ok(effect)
    }
}

impl<M: MetadataSource> CachingResolver<MetadataResolver<M>> {
    /// The resolver a profiler keeps for one module: the call sites of `metadata`, each
    /// resolved once (see [`MetadataResolver`] and the type's documentation).
    pub fn for_module(metadata: M) -> Self {
        CachingResolver::new(MetadataResolver::new(metadata))
    }
}

/// [`NOT_CACHED`], or the cache table of a token's metadata table (its high byte):
/// MethodDef (0x06), MemberRef (0x0A), MethodSpec (0x2B), StandAloneSig (0x11).
const CACHED_TABLE: [u8; 256] = {
    let mut table = [NOT_CACHED; 256];
    table[0x06] = 0;
    table[0x0A] = 1;
    table[0x2B] = 2;
    table[0x11] = 3;
    table
};
const NOT_CACHED: u8 = u8::MAX;

/// Packs an effect into a non-zero `u32` (pops fit 16 bits, pushes are 0 or 1).
fn pack(effect: CallEffect) -> Option<u32> {
    (effect.pushes <= 1)
        .then(|| (u32::from(effect.pops) << 2) | (u32::from(effect.pushes) << 1) | 1)
}

fn unpack(packed: u32) -> CallEffect {
    CallEffect {
        pops: (packed >> 2) as u16,
        pushes: ((packed >> 1) & 1) as u16,
    }
}

impl<R: CallSiteResolver> CallSiteResolver for CachingResolver<R> {
    #[inline(always)]
    fn call_effect(&self, opcode: OpCode, token: u32) -> Result<CallEffect> {
        let Some((slot, rid)) = Self::slot(opcode, token) else {
            return self.inner.call_effect(opcode, token);
        };
        let packed = self.cache[slot].get(rid);
        if packed != 0 {
            return Ok(unpack(packed));
        }
        self.miss(opcode, token, slot, rid)
    }

    fn metadata(&self) -> Option<&dyn MetadataSource> {
        self.inner.metadata()
    }
}

impl<R: fmt::Debug> fmt::Debug for CachingResolver<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CachingResolver")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn effect(pops: u16, pushes: u16) -> CallEffect {
        CallEffect { pops, pushes }
    }

    #[test]
    fn from_parts_applies_the_rules() {
        use OpCode::*;
        // static int F(int, int)
        assert_eq!(
            CallEffect::from_parts(false, false, 2, true, Call),
            Ok(effect(2, 1))
        );
        // instance void M(int)
        assert_eq!(
            CallEffect::from_parts(true, false, 1, false, Callvirt),
            Ok(effect(2, 0))
        );
        // explicit this: `this` is the first declared parameter already
        assert_eq!(
            CallEffect::from_parts(true, true, 2, false, Call),
            Ok(effect(2, 0))
        );
        // .ctor(int, int): the object is not on the stack before newobj
        assert_eq!(
            CallEffect::from_parts(true, false, 2, false, Newobj),
            Ok(effect(2, 1))
        );
        // calli instance int32(int32): this + arg + function pointer
        assert_eq!(
            CallEffect::from_parts(true, false, 1, true, Calli),
            Ok(effect(3, 1))
        );
        assert_eq!(
            CallEffect::from_parts(false, false, 0, false, Calli),
            Ok(effect(1, 0))
        );
        assert_eq!(
            CallEffect::from_parts(true, false, 7, true, Jmp),
            Ok(effect(0, 0))
        );
        assert!(matches!(
            CallEffect::from_parts(false, false, 0, false, Ldftn),
            Err(Error::BadCallSite { .. })
        ));
        assert!(matches!(
            CallEffect::from_parts(true, false, 65535, false, Call),
            Err(Error::BadCallSite { .. })
        ));
        assert_eq!(
            CallEffect::from_parts(false, false, 65535, false, Call),
            Ok(effect(65535, 0))
        );
        assert!(CallEffect::from_parts(false, false, u32::MAX, false, Calli).is_err());
    }

    #[test]
    fn caching_resolver_remembers_answers() {
        use std::cell::Cell;
        let calls = Cell::new(0u32);
        let inner = |op: OpCode, token: u32| {
            calls.set(calls.get() + 1);
            if token == 0x0A00_0002 {
                return Err(Error::BadCallSite {
                    opcode: op.name(),
                    what: "test",
                });
            }
            CallEffect::from_parts(true, false, token & 0xFF, true, op)
        };
        let r = CachingResolver::new(inner);
        assert_eq!(r.call_effect(OpCode::Call, 0x0A00_0003), Ok(effect(4, 1)));
        assert_eq!(
            r.call_effect(OpCode::Callvirt, 0x0A00_0003),
            Ok(effect(4, 1))
        );
        assert_eq!(calls.get(), 1);
        assert_eq!(r.call_effect(OpCode::Newobj, 0x0A00_0003), Ok(effect(3, 1)));
        assert_eq!(r.call_effect(OpCode::Newobj, 0x0A00_0003), Ok(effect(3, 1)));
        assert_eq!(calls.get(), 2);
        assert!(r.call_effect(OpCode::Call, 0x0A00_0002).is_err());
        assert!(r.call_effect(OpCode::Call, 0x0A00_0002).is_err());
        assert_eq!(calls.get(), 4);
        // Uncached: rows past the limit, other tables, jmp.
        let big = 0x0A00_0000 | (CachingResolver::<NoCalls>::MAX_CACHED_ROW + 1);
        r.call_effect(OpCode::Call, big).unwrap();
        r.call_effect(OpCode::Call, big).unwrap();
        assert_eq!(calls.get(), 6);
        r.call_effect(OpCode::Jmp, 0x0600_0001).unwrap();
        r.call_effect(OpCode::Jmp, 0x0600_0001).unwrap();
        assert_eq!(calls.get(), 8);
        assert!(matches!(
            r.call_effect(OpCode::Ldftn, 0x0600_0001),
            Err(Error::BadCallSite { .. })
        ));
        let mut r = r;
        r.clear();
        r.call_effect(OpCode::Call, 0x0A00_0003).unwrap();
        assert_eq!(calls.get(), 10);
    }

    #[test]
    fn closures_and_no_calls() {
        let r = |_: OpCode, token: u32| Ok(effect(token as u16, 1));
        assert_eq!(r.call_effect(OpCode::Call, 3), Ok(effect(3, 1)));
        assert!(matches!(
            NoCalls.call_effect(OpCode::Call, 0x0A00_0001),
            Err(Error::UnresolvedCall {
                token: 0x0A00_0001,
                ..
            })
        ));
    }
}

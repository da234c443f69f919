//! Method entry/exit instrumentation, set up once and applied to every body:
//! [`Instrumenter`].

use super::return_local::ReturnLocal;
use super::returns::Returns;
use super::snippet::{Fill, Snippet};
use super::tail_call::{self, NewLocals, TailCallPolicy};
use super::wrap::{CodeScan, Path, StoredCode, prologue_stored, wrap_stored};
use crate::analysis::{CallSiteResolver, MaxStackMode, ReturnKind, StackAnalyzer};
use crate::body::{EncodedHeader, Encoder, MethodBody};
use crate::error::{Error, Result, TailCallRefusal};
use crate::ilmap::IlMap;
use crate::metadata::MetadataSource;
use crate::sig::{LocalVarSig, TypeSig, summarize_method_sig};

/// The empty LocalVarSig (`LOCAL_SIG`, no locals), what a body without one extends.
const EMPTY_LOCALS: &[u8] = &[0x07, 0x00];

/// The code an [`Instrumenter`] injects into every method, given once.
///
/// Each method is rewritten to
///
/// ```text
///       <entry>
///       .try {
///         <original body, every ret -> (stloc r;) leave EPI>
///       } finally { <exit> endfinally }
/// EPI:  <epilogue_value> ldloc r ret        (methods that return a value)
/// EPI:  <epilogue_void> ret                 (void methods)
/// ```
///
/// `entry` runs once per call, before the protected region (a loop back to the first
/// instruction does not run it again); `exit` runs on every way out, normal or by an
/// exception; the epilogue runs on every normal return, after `exit`. All of them must
/// leave the stack as they found it (empty); the stack analysis that ends every rewrite
/// checks it. Only `epilogue_value` may name the return-value local
/// ([`crate::transform::SnippetBuilder::return_local`]), which holds the value being
/// returned (and which it may change with `stloc`).
///
/// # Tail calls
///
/// A `tail.` call stays a tail call (under the default [`TailCallPolicy::Keep`]): its
/// operands are stored into new locals, a `leave` runs the `finally`, and a stub after
/// the handlers makes the same `tail.` call:
///
/// ```text
///       .try { ... stloc a1; stloc a0; leave TC ... } finally { <exit> endfinally }
/// TC:   ldloc a0; ldloc a1; tail. call M; ret
/// ```
///
/// So on a tail-call exit the `finally` runs before the callee starts, and no epilogue
/// runs: the method does not return, its callee does, and the value it returns is not
/// known to the instrumented method (the return-value local holds nothing meaningful
/// then). `tail_call`, when given, runs in the `finally` instead of `exit` on a
/// tail-call exit (a flag local set at the site tells the two apart); by default `exit`
/// runs on every exit.
///
/// # Entry-only instrumentation
///
/// With `exit`, both epilogues and `tail_call` empty, the entry code is inserted before
/// the first instruction (branches to it do not run it again) and nothing else
/// changes: no try/finally, no return-value local, `tail.` and `jmp` kept (the state
/// local, when declared, is still added).
///
/// # State from entry to exit
///
/// With [`InstrumentationCode::state_local`] declared, each instrumented method gets one
/// more local of that type, which every snippet may name
/// ([`crate::transform::SnippetBuilder::state_local`]): the entry stores into it before
/// the `try`, the exit reads it in the `finally`, so that a timer is
/// `t = Begin(); try { body } finally { End(t) }`:
///
/// ```
/// use ilrewrite::analysis::CallEffect;
/// use ilrewrite::sig::TypeSig;
/// use ilrewrite::transform::{InstrumentationCode, Instrumenter, MethodContext, Snippet};
/// use ilrewrite::{Instruction, MethodBody, OpCode};
///
/// const BEGIN: u32 = 0x0A00_0001; // static int64 Begin()
/// const END: u32 = 0x0A00_0002; // static void End(int64 module, int32 method, int64 t)
/// let mut entry = Snippet::builder();
/// entry.push(Instruction::with_token(OpCode::Call, BEGIN));
/// entry.state_local(OpCode::Stloc);
/// let mut exit = Snippet::builder();
/// exit.module_id().method_id().state_local(OpCode::Ldloc);
/// exit.push(Instruction::with_token(OpCode::Call, END));
/// let code = InstrumentationCode {
///     entry: entry.finish()?,
///     exit: exit.finish()?,
///     state_local: Some(TypeSig::I8),
///     ..Default::default()
/// };
/// let mut instrumenter = Instrumenter::new(code)?;
///
/// // static int32 M(): ldc.i4.1; ret, in module 0x7f00_1000.
/// let mut body = MethodBody::decode(&[0x0A, 0x17, 0x2A])?;
/// let method = MethodContext {
///     module_id: Some(0x7f00_1000),
///     ..MethodContext::new(&[0x00, 0x00, 0x08], 5)
/// };
/// let resolver = |_: OpCode, token: u32| {
///     Ok(match token {
///         BEGIN => CallEffect { pops: 0, pushes: 1 },
///         _ => CallEffect { pops: 3, pushes: 0 },
///     })
/// };
/// let done = instrumenter.instrument(&mut body, &method, &resolver)?;
/// // .locals (int32 return value, int64 state)
/// assert_eq!(done.new_locals_signature, Some(&[0x07, 0x02, 0x08, 0x0A][..]));
/// assert_eq!(done.max_stack, 3);
/// # Ok::<(), ilrewrite::Error>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InstrumentationCode {
    /// Run on entry, before the try block.
    pub entry: Snippet,
    /// Run in the finally handler, on every exit.
    pub exit: Snippet,
    /// Run on the normal return of a method that returns a value, after `exit`.
    pub epilogue_value: Snippet,
    /// Run on the normal return of a `void` method, after `exit`.
    pub epilogue_void: Snippet,
    /// Run by the `finally` on a tail-call exit instead of `exit`; `None` to run `exit`
    /// there too (see the type's documentation).
    pub tail_call: Option<Snippet>,
    /// The type of the state local the snippets share
    /// ([`crate::transform::SnippetBuilder::state_local`]; see the type's
    /// documentation), added to each instrumented method's locals after the
    /// return-value local; `None` for none. Snippets naming it without a type here are
    /// refused by [`Instrumenter::new`].
    pub state_local: Option<TypeSig>,
}

impl InstrumentationCode {
    /// The snippets, `tail_call` last when given.
    fn snippets(&self) -> impl Iterator<Item = &Snippet> {
        [
            &self.entry,
            &self.exit,
            &self.epilogue_value,
            &self.epilogue_void,
        ]
        .into_iter()
        .chain(self.tail_call.as_ref())
    }

    /// Whether only entry code is given (see the type's documentation).
    pub fn is_entry_only(&self) -> bool {
        self.snippets().skip(1).all(Snippet::is_empty)
    }
}

/// The method an [`Instrumenter`] rewrites: what its body does not say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MethodContext<'a> {
    /// The method's signature blob (`MethodDefSig`).
    pub signature: &'a [u8],
    /// The blob of the body's LocalVarSig, `None` when the body has none
    /// (`local_var_sig == 0`).
    pub locals: Option<&'a [u8]>,
    /// The value [`crate::transform::SnippetBuilder::method_id`] loads for this method.
    pub id: i32,
    /// The tokens [`crate::transform::SnippetBuilder::token`] names, for this method's
    /// module (e.g. the MemberRefs of the probes, defined in each module).
    pub tokens: &'a [u32],
    /// The value [`crate::transform::SnippetBuilder::module_id`] loads for this method:
    /// an id of its module, unique among the modules loaded (a profiler's `ModuleID`);
    /// `None` when there is none, and then a method whose snippets load it is refused.
    pub module_id: Option<u64>,
}

impl<'a> MethodContext<'a> {
    /// The context of a method with signature `signature` and id `id`: no locals, no
    /// tokens, no module id (set the fields that apply).
    pub fn new(signature: &'a [u8], id: i32) -> MethodContext<'a> {
        MethodContext {
            signature,
            locals: None,
            id,
            tokens: &[],
            module_id: None,
        }
    }

    /// The context of MethodDef `method` whose decoded body is `body`, with both
    /// signatures read from `metadata`, and no tokens (set [`MethodContext::tokens`]
    /// when the snippets use some).
    ///
    /// # Errors
    /// [`Error::BadToken`] when `method` or the body's LocalVarSig token names nothing
    /// in `metadata`, or whatever the source reports for malformed metadata.
    pub fn from_metadata<M: MetadataSource + ?Sized>(
        metadata: &'a M,
        method: u32,
        body: &MethodBody,
        id: i32,
    ) -> Result<MethodContext<'a>> {
        let locals = match body.local_var_sig {
            0 => None,
            token => Some(metadata.signature(token)?),
        };
        Ok(MethodContext {
            signature: metadata.signature(method)?,
            locals,
            id,
            tokens: &[],
            module_id: None,
        })
    }
}

/// What [`Instrumenter::instrument`] did to one body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Instrumented<'a> {
    /// Where the return value goes: [`Returns::Value`] names the new local;
    /// [`Returns::Void`] when no return-value local was added (a `void` method, or
    /// entry-only instrumentation).
    pub returns: Returns,
    /// For a method that returns a value, or when a state local is declared
    /// ([`InstrumentationCode::state_local`]), the LocalVarSig with the return-value
    /// local and then the state local added (and the locals of kept tail calls). Get a
    /// token for it (`IMetaDataEmit::GetTokenFromSig`) and set it on the
    /// body ([`MethodBody::local_var_sig`]) before encoding: see
    /// [`ReturnLocal`](crate::transform::ReturnLocal) for why only now.
    pub new_locals_signature: Option<&'a [u8]>,
    /// `ret`s the body had.
    pub rets: usize,
    /// `tail.` prefixes removed under [`TailCallPolicy::DropPrefix`].
    pub tail_prefixes_removed: usize,
    /// Tail calls kept under [`TailCallPolicy::Keep`], each leaving the protected region
    /// through a stub (see [`InstrumentationCode`]).
    pub tail_calls_kept: usize,
    /// The exact max stack of the rewritten body, now in [`MethodBody::max_stack`].
    pub max_stack: u16,
}

/// Method entry/exit instrumentation, set up once and applied to many bodies: the shape
/// APM agents and tracers inject (see [`InstrumentationCode`]).
///
/// For each body it plans the return-value local ([`ReturnLocal`]), wraps the body in
/// try/finally with the entry, exit and epilogue code (in one pass for a body without
/// clauses, `tail.` or earlier edits; edit by edit otherwise), computes the exact max
/// stack (which also verifies the stack of the rewritten body), and then encodes it and
/// gives its IL map. Its scratch buffers are kept between bodies:
/// keep one per thread (it is `Send`, not shared).
///
/// ```
/// use ilrewrite::analysis::{CallEffect, CallSiteResolver};
/// use ilrewrite::transform::{InstrumentationCode, Instrumenter, MethodContext, Snippet};
/// use ilrewrite::{Instruction, MethodBody, OpCode};
///
/// const ENTER: u32 = 0x0A00_0001; // static void Enter(int32 methodId)
/// const LEAVE: u32 = 0x0A00_0002; // static void Leave(int32 methodId)
/// let call_with_id = |hook| {
///     let mut b = Snippet::builder();
///     b.method_id();
///     b.push(Instruction::with_token(OpCode::Call, hook));
///     b.finish()
/// };
/// let mut instrumenter = Instrumenter::new(InstrumentationCode {
///     entry: call_with_id(ENTER)?,
///     exit: call_with_id(LEAVE)?,
///     ..Default::default()
/// })?;
///
/// // static int32 M(int32 x) { if (x != 0) return 1; return 2; }, a tiny body.
/// let original = [0x1E, 0x02, 0x2C, 0x02, 0x17, 0x2A, 0x18, 0x2A];
/// let method = MethodContext::new(&[0x00, 0x01, 0x08, 0x08], 7); // no locals, tokens or module id
/// // Call sites resolve through metadata (`MetadataResolver`); both hooks pop one value.
/// let resolver = |_: OpCode, _: u32| Ok(CallEffect { pops: 1, pushes: 0 });
///
/// let mut body = MethodBody::decode(&original)?;
/// let done = instrumenter.instrument(&mut body, &method, &resolver)?;
/// // The return value now goes through a new local: define its signature now that
/// // the rewrite succeeded (IMetaDataEmit::GetTokenFromSig), and name it.
/// assert_eq!(done.new_locals_signature, Some(&[0x07, 0x01, 0x08][..]));
/// body.local_var_sig = 0x1100_0001;
///
/// let mut bytes = Vec::new();
/// let header = instrumenter.encode(&body, &mut bytes)?; // for SetILFunctionBody
/// let map = instrumenter.il_map(&body); // for SetILInstrumentedCodeMap
/// assert_eq!(header.max_stack(), 1);
/// assert_eq!(map.map(0), Some(0)); // the entry code maps to the first instruction
/// let again = MethodBody::decode(&bytes)?;
/// assert_eq!(again.clauses.len(), 1); // the finally
/// # Ok::<(), ilrewrite::Error>(())
/// ```
#[derive(Debug, Default)]
pub struct Instrumenter {
    code: InstrumentationCode,
    /// Whether any snippet branches.
    branches: bool,
    /// How many per-method tokens the snippets use.
    tokens_used: usize,
    /// Whether any snippet has placeholders (filled in per body as it is placed).
    placeholders: bool,
    /// The encoded type of the state local, when declared.
    state_type: Option<Vec<u8>>,
    /// Whether any snippet loads the module's id.
    uses_module_id: bool,
    /// The LocalVarSig before the state local is added (scratch).
    state_scratch: Vec<u8>,
    /// What to do with `tail.` calls.
    tail_calls: TailCallPolicy,
    /// Whether only entry code is injected.
    entry_only: bool,
    locals: Vec<u8>,
    /// The types of the locals kept tail calls need (scratch).
    tail_locals: NewLocals,
    analyzer: StackAnalyzer,
    encoder: Encoder,
    /// Whether to wrap edit by edit even where the one-pass wrap applies (for the tests
    /// that hold one to the other).
    #[cfg(test)]
    general_path_only: bool,
}

impl Instrumenter {
    /// An instrumenter injecting `code`, keeping tail calls ([`TailCallPolicy::Keep`]).
    ///
    /// # Errors
    /// [`Error::Unsupported`] when `entry`, `exit`, `epilogue_void` or `tail_call` names
    /// the return-value local (only `epilogue_value` runs where it holds the value);
    /// [`Error::PlaceholderUnfilled`] when a snippet names the state local and
    /// [`InstrumentationCode::state_local`] declares no type; the errors of
    /// [`TypeSig::encode`] and of [`LocalVarSig::append_to_blob`] for a declared type
    /// that is not valid as a local (`void`, say).
    pub fn new(code: InstrumentationCode) -> Result<Instrumenter> {
        let reads_return = code
            .snippets()
            .filter(|&s| !std::ptr::eq(s, &code.epilogue_value))
            .any(Snippet::uses_return_local);
        if reads_return {
            return Err(Error::Unsupported {
                what: "only the epilogue of value-returning methods can name the return-value local",
            });
        }
        let state_type = match &code.state_local {
            Some(ty) => {
                let bytes = ty.to_bytes()?;
                LocalVarSig::check_append_to_blob(EMPTY_LOCALS, &bytes)?;
                Some(bytes)
            }
            None if code.snippets().any(Snippet::uses_state_local) => {
                return Err(Error::PlaceholderUnfilled {
                    what: "a snippet names the state local and InstrumentationCode::state_local declares no type",
                });
            }
            None => None,
        };
        let uses_module_id = code.snippets().any(Snippet::uses_module_id);
        let placeholders = code.snippets().any(Snippet::has_placeholders);
        let branches = code.snippets().any(Snippet::has_branches);
        let tokens_used = code.snippets().map(Snippet::tokens_used).max().unwrap_or(0);
        Ok(Instrumenter {
            placeholders,
            state_type,
            uses_module_id,
            branches,
            tokens_used,
            entry_only: code.is_entry_only(),
            code,
            ..Instrumenter::default()
        })
    }

    /// This instrumenter with `policy` for `tail.` calls (the default is
    /// [`TailCallPolicy::Keep`]). Entry-only instrumentation leaves tail calls alone
    /// whatever the policy.
    pub fn with_tail_call_policy(mut self, policy: TailCallPolicy) -> Instrumenter {
        self.tail_calls = policy;
        self
    }

    /// What it does with `tail.` calls.
    pub fn tail_call_policy(&self) -> TailCallPolicy {
        self.tail_calls
    }

    /// The code it injects.
    pub fn code(&self) -> &InstrumentationCode {
        &self.code
    }

    /// Instruments `body`: return-value local, try/finally wrap with the entry, exit
    /// and epilogue code, tail calls kept (see [`InstrumentationCode`]), exact max stack
    /// (set in the header), which also verifies the stack of the rewritten body. For
    /// entry-only code, the entry code is inserted and nothing else changes.
    ///
    /// `method` gives the signatures the body does not hold and the method's id;
    /// `resolver` the stack effects of the body's call sites and of the calls the
    /// snippets make (see [`crate::analysis::MetadataResolver`] and
    /// [`crate::analysis::CachingResolver`]), and for a body with tail calls to keep,
    /// the metadata their callees' signatures are read from
    /// ([`CallSiteResolver::metadata`]).
    ///
    /// On success the body is ready to encode once its new LocalVarSig token is set
    /// (see [`Instrumented::new_locals_signature`]).
    ///
    /// # Errors
    /// Refusals, made before any edit (the body is left as it was):
    /// [`Error::Unsupported`] for a body with `jmp`, of nothing but `tail.` prefixes or
    /// with a `tail.` not followed by a call in its own regions, or a context with
    /// fewer [`MethodContext::tokens`] than the snippets use;
    /// [`Error::PlaceholderUnfilled`] for a context without a
    /// [`MethodContext::module_id`] when the snippets load it;
    /// [`Error::TailCallNotKept`] for a tail call the policy refuses or that cannot be
    /// kept (see [`TailCallRefusal`]); the errors of [`MethodBody::validate_clauses`]
    /// for a clause list that is not valid; [`Error::EmptyBody`], and the errors of
    /// [`ReturnLocal::plan`] for malformed signatures. After the wrap, the errors of the
    /// stack analysis (a call site the resolver cannot resolve, code that does not
    /// verify), and [`Error::TailCallNotKept`] with
    /// [`TailCallRefusal::ExtraStackValues`] for a tail call with more on the stack than
    /// its operands (invalid IL): the body is then left edited and must not be used —
    /// fall back to the original IL.
    pub fn instrument<R: CallSiteResolver + ?Sized>(
        &mut self,
        body: &mut MethodBody,
        method: &MethodContext<'_>,
        resolver: &R,
    ) -> Result<Instrumented<'_>> {
        // One pass: the `ret`s and `tail.` prefixes the wrap edits, and whether a `jmp`
        // makes the body unwrappable (refused before anything is planned).
        let scan = CodeScan::of(&body.instrs);
        if method.tokens.len() < self.tokens_used {
            return Err(Error::Unsupported {
                what: "the method context gives fewer tokens than the snippets use",
            });
        }
        if self.uses_module_id && method.module_id.is_none() {
            return Err(Error::PlaceholderUnfilled {
                what: "a snippet loads the module id and the method context gives none",
            });
        }
        if self.entry_only {
            return self.instrument_entry(body, method, resolver, &scan);
        }
        if scan.has_jmp {
            return Err(Error::Unsupported {
                what: "jmp cannot be placed inside a try block",
            });
        }
        self.locals.clear();
        let mut plan = ReturnLocal::plan(method.signature, method.locals, &mut self.locals)?;
        let returns = ReturnKind::from(plan.returns);
        let state = match &self.state_type {
            Some(ty) => {
                self.state_scratch.clear();
                match plan.extends_locals {
                    true => self.state_scratch.extend_from_slice(&self.locals),
                    false => self
                        .state_scratch
                        .extend_from_slice(method.locals.unwrap_or(EMPTY_LOCALS)),
                }
                self.locals.clear();
                let index = LocalVarSig::append_to_blob(&self.state_scratch, ty, &mut self.locals)?;
                plan.extends_locals = true;
                Some(index)
            }
            None => None,
        };
        let (local, epilogue) = match plan.returns {
            Returns::Value { local } => (Some(local), &self.code.epilogue_value),
            Returns::Void => (None, &self.code.epilogue_void),
        };
        // The snippets are placed as stored, their placeholders filled in on the way.
        let code = StoredCode {
            entry: self.code.entry.stored(),
            exit: self.code.exit.stored(),
            epilogue: epilogue.stored(),
            tail_exit: self.code.tail_call.as_ref().map(Snippet::stored),
            branches: self.branches,
            fill: Fill::new(method.id, local, method.tokens).with(state, method.module_id),
            placeholders: self.placeholders,
        };
        if !scan.tails.is_empty() && self.tail_calls != TailCallPolicy::DropPrefix {
            return instrument_keeping_tail_calls(
                body,
                method,
                resolver,
                &scan,
                plan,
                &code,
                TailScratch {
                    policy: self.tail_calls,
                    locals: &mut self.locals,
                    tail_locals: &mut self.tail_locals,
                    analyzer: &mut self.analyzer,
                },
            );
        }
        #[cfg(test)]
        let path = match self.general_path_only {
            true => Path::Linked,
            false => Path::Best,
        };
        #[cfg(not(test))]
        let path = Path::Best;
        let wrapped = wrap_stored(body, plan.returns, &scan, &code, path)?;
        // The clause list needs no check of its own: the wrap adds its clause through the
        // editing API, which keeps the list valid (or, in one pass, builds the lone
        // clause of a body that had none), and the stack analysis checks the regions it
        // simulates.
        let report =
            self.analyzer
                .apply_max_stack(body, resolver, MaxStackMode::Compute, returns)?;
        Ok(Instrumented {
            returns: plan.returns,
            new_locals_signature: plan.extends_locals.then_some(&self.locals[..]),
            rets: scan.rets.len(),
            tail_prefixes_removed: wrapped.tail_prefixes_removed,
            tail_calls_kept: 0,
            max_stack: report.max_stack,
        })
    }

    /// [`Instrumenter::instrument`] for entry-only code (out of line: the wrapping path
    /// is the hot one).
    #[cold]
    #[inline(never)]
    fn instrument_entry<R: CallSiteResolver + ?Sized>(
        &mut self,
        body: &mut MethodBody,
        method: &MethodContext<'_>,
        resolver: &R,
        scan: &CodeScan,
    ) -> Result<Instrumented<'_>> {
        let returns_value = summarize_method_sig(method.signature)?.returns_value;
        let state = match &self.state_type {
            Some(ty) => {
                self.locals.clear();
                let locals = method.locals.unwrap_or(EMPTY_LOCALS);
                Some(LocalVarSig::append_to_blob(locals, ty, &mut self.locals)?)
            }
            None => None,
        };
        let fill = Fill::new(method.id, None, method.tokens).with(state, method.module_id);
        prologue_stored(body, self.code.entry.stored(), &fill)?;
        let returns = ReturnKind::value_if(returns_value);
        let report =
            self.analyzer
                .apply_max_stack(body, resolver, MaxStackMode::Compute, returns)?;
        Ok(Instrumented {
            returns: Returns::Void,
            new_locals_signature: state.map(|_| &self.locals[..]),
            rets: scan.rets.len(),
            tail_prefixes_removed: 0,
            tail_calls_kept: 0,
            max_stack: report.max_stack,
        })
    }

    /// Appends the encoding of `body` (as [`Encoder::encode`], with this instrumenter's
    /// reused encoder) to `out`; returns the header chosen.
    ///
    /// # Errors
    /// The errors of [`Encoder::encode`]; `out` is left as it was.
    pub fn encode(&mut self, body: &MethodBody, out: &mut Vec<u8>) -> Result<EncodedHeader> {
        self.encoder.encode(body, out)
    }

    /// The IL map of the body last encoded by [`Instrumenter::encode`] (pass the same
    /// body): for `SetILInstrumentedCodeMap`.
    ///
    /// # Panics
    /// If `body` has more instructions than the body last encoded (another body).
    pub fn il_map(&self, body: &MethodBody) -> IlMap {
        IlMap::from_offsets(body, self.encoder.encoded_offsets())
    }
}

/// The parts of an [`Instrumenter`] the tail-call path uses, borrowed apart from its
/// code.
struct TailScratch<'a> {
    policy: TailCallPolicy,
    locals: &'a mut Vec<u8>,
    tail_locals: &'a mut NewLocals,
    analyzer: &'a mut StackAnalyzer,
}

/// [`Instrumenter::instrument`] for a body with `tail.` prefixes, under
/// [`TailCallPolicy::Keep`] or [`TailCallPolicy::Refuse`]: the sites are planned (and
/// refused) before any edit, their locals added to the LocalVarSig after the return
/// local's, the body wrapped with the calls moved to stubs, and the stack at each site
/// checked to hold nothing but the call's operands. Out of line: few bodies have tail
/// calls.
#[cold]
#[inline(never)]
fn instrument_keeping_tail_calls<'s, R: CallSiteResolver + ?Sized>(
    body: &mut MethodBody,
    method: &MethodContext<'_>,
    resolver: &R,
    scan: &CodeScan,
    plan: ReturnLocal,
    code: &StoredCode<'_>,
    scratch: TailScratch<'s>,
) -> Result<Instrumented<'s>> {
    let not_kept = |reason| Error::TailCallNotKept {
        offset: body.original_offset(scan.tails[0]),
        reason,
    };
    if scratch.policy == TailCallPolicy::Refuse {
        return Err(not_kept(TailCallRefusal::PolicyRefuses));
    }
    // The locals as the return local left them, and how many there are.
    let base: Vec<u8> = match plan.extends_locals {
        true => scratch.locals.clone(),
        false => method.locals.unwrap_or(EMPTY_LOCALS).to_vec(),
    };
    let too_many = |e: Error| match e {
        Error::Unencodable { .. } | Error::TooManyLocals { .. } => {
            not_kept(TailCallRefusal::TooManyLocals)
        }
        e => e,
    };
    let first_local = LocalVarSig::append_all_to_blob(&base, &[], &mut Vec::new())?;
    scratch.tail_locals.clear();
    let mut sites = tail_call::plan(
        body,
        &scan.tails,
        resolver.metadata(),
        usize::from(first_local),
        code.tail_exit.is_some(),
        matches!(plan.returns, Returns::Value { .. }),
        scratch.tail_locals,
    )?;
    let extends_locals = plan.extends_locals || !sites.sites.is_empty();
    if !sites.sites.is_empty() {
        scratch.locals.clear();
        LocalVarSig::append_all_to_blob(&base, &scratch.tail_locals.types(), scratch.locals)
            .map_err(too_many)?;
    }
    let keeping = Path::KeepingTailCalls(&mut sites);
    let wrapped = wrap_stored(body, plan.returns, scan, code, keeping)?;
    let returns = ReturnKind::from(plan.returns);
    let analysis = scratch.analyzer.analyze(body, resolver, returns)?;
    for site in &sites.sites {
        if site
            .leave
            .and_then(|leave| analysis.height_before(leave))
            .is_some_and(|h| h != 0)
        {
            return Err(Error::TailCallNotKept {
                offset: body.original_offset(site.tail),
                reason: TailCallRefusal::ExtraStackValues,
            });
        }
    }
    body.max_stack = analysis.max_stack();
    let locals: &'s Vec<u8> = scratch.locals;
    Ok(Instrumented {
        returns: plan.returns,
        new_locals_signature: extends_locals.then_some(&locals[..]),
        rets: scan.rets.len(),
        tail_prefixes_removed: 0,
        tail_calls_kept: wrapped.tail_calls_kept,
        max_stack: body.max_stack,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::CallEffect;
    use crate::graph::Instruction;
    use crate::opcode::OpCode;

    const HOOK: u32 = 0x0A00_0001;

    fn hooks(pops: u16) -> impl Fn(OpCode, u32) -> Result<CallEffect> {
        move |_, _| Ok(CallEffect { pops, pushes: 0 })
    }

    /// A snippet `if (flag) Hook(id)`, the flag read with `ldc.i4.1` (always true).
    fn guarded() -> Snippet {
        let mut b = Snippet::builder();
        let skip = b.new_label();
        b.push(Instruction::ldc_i4(1));
        b.branch(OpCode::BrfalseS, skip);
        b.method_id();
        b.push(Instruction::with_token(OpCode::Call, HOOK));
        b.bind(skip);
        b.finish().unwrap()
    }

    #[test]
    fn the_return_local_is_only_for_the_value_epilogue() {
        let mut b = Snippet::builder();
        b.return_local(OpCode::Ldloc);
        b.push(Instruction::simple(OpCode::Pop));
        let reads = b.finish().unwrap();
        for code in [
            InstrumentationCode {
                entry: reads.clone(),
                ..Default::default()
            },
            InstrumentationCode {
                exit: reads.clone(),
                ..Default::default()
            },
            InstrumentationCode {
                epilogue_void: reads.clone(),
                ..Default::default()
            },
        ] {
            assert!(matches!(
                Instrumenter::new(code),
                Err(Error::Unsupported { .. })
            ));
        }
        assert!(
            Instrumenter::new(InstrumentationCode {
                epilogue_value: reads,
                ..Default::default()
            })
            .is_ok()
        );
    }

    /// Branching snippets are placed by the one-pass wrap (no clauses) and by the general
    /// path (a body with a clause) alike: the branches land on the snippet's own
    /// instructions and, for the end label, on what follows it.
    #[test]
    fn branching_snippets_are_placed_on_both_paths() {
        let mut inst = Instrumenter::new(InstrumentationCode {
            entry: guarded(),
            exit: guarded(),
            epilogue_value: guarded(),
            epilogue_void: guarded(),
            tail_call: None,
            state_local: None,
        })
        .unwrap();
        // static int32 M(): ldc.i4.1; ret (tiny)
        let flat = [0x0A, 0x17, 0x2A];
        // The same with a try/finally around a nop, by hand (fat header, small EH).
        // nop; leave.s +1 (try: 0..3); endfinally (handler 3..4); ldc.i4.1; ret
        let mut fat = vec![0x03, 0x30, 0x01, 0x00, 0x06, 0x00, 0x00, 0x00, 0, 0, 0, 0];
        fat[0] |= 0x08; // MoreSects
        fat.extend_from_slice(&[0x00, 0xDE, 0x01, 0xDC, 0x17, 0x2A, 0x00, 0x00]);
        fat.extend_from_slice(&[0x01, 0x10, 0x00, 0x00]); // small EH section, one clause
        fat.extend_from_slice(&[0x02, 0x00, 0x00, 0x00, 0x03, 0x03, 0x00, 0x01, 0, 0, 0, 0]);
        for original in [&flat[..], &fat[..]] {
            let mut body = MethodBody::decode(original).unwrap();
            let method = MethodContext {
                signature: &[0x00, 0x00, 0x08],
                locals: None,
                id: 9,
                tokens: &[],
                module_id: None,
            };
            let done = inst.instrument(&mut body, &method, &hooks(1)).unwrap();
            assert_eq!(done.max_stack, 1);
            let mut bytes = Vec::new();
            inst.encode(&body, &mut bytes).unwrap();
            let again = MethodBody::decode(&bytes).unwrap();
            // Every branch of the snippets lands on an instruction of the body, three
            // guards jump over their call, and the analysis of the re-decoded body
            // agrees.
            let text = crate::disasm::disassemble(&again, &crate::metadata::NoMetadata, None)
                .unwrap()
                .text;
            assert_eq!(text.matches("brfalse.s").count(), 3, "{text}");
            let mut analyzer = StackAnalyzer::new();
            let a = analyzer
                .analyze(&again, &hooks(1), ReturnKind::Value)
                .unwrap();
            assert_eq!(a.max_stack(), 1);
            for (id, instr) in again.instrs.iter() {
                if instr.opcode == OpCode::BrfalseS {
                    let crate::graph::Operand::Target(t) = instr.operand else {
                        panic!()
                    };
                    // Skips `ldc.i4.s 9; call`: lands three instructions on.
                    let mut n = again.instrs.next(id);
                    for _ in 0..2 {
                        n = n.and_then(|n| again.instrs.next(n));
                    }
                    assert_eq!(n, Some(t), "{text}");
                }
            }
        }
    }

    /// The one-pass wrap gives, id for id, what the edit-by-edit wrap gives with the same
    /// code, with the same outcome or refusal, on every distinct body of
    /// System.Private.CoreLib of each runtime: with straight-line snippets and with
    /// branching ones.
    #[cfg(feature = "pe")]
    #[test]
    fn the_one_pass_wrap_is_the_edit_by_edit_wrap_on_real_bodies() {
        use crate::analysis::CachingResolver;
        use crate::pe::Assembly;
        let runtimes = ilrewrite_corpus::runtimes().unwrap_or_else(|e| panic!("{e}"));
        for runtime in runtimes {
            let data = std::fs::read(runtime.corelib()).expect("reads");
            let asm = Assembly::parse(&data).expect("parses");
            let module = CachingResolver::for_module(&asm);
            let resolver = |op: OpCode, token: u32| match token {
                HOOK | BEGIN | END => timer_calls(op, token),
                _ => module.call_effect(op, token),
            };
            let plain = {
                let mut b = Snippet::builder();
                b.method_id();
                b.push(Instruction::with_token(OpCode::Call, HOOK));
                b.finish().unwrap()
            };
            let mut epilogue = Snippet::builder();
            epilogue.return_local(OpCode::Ldloc);
            epilogue.push(Instruction::with_token(OpCode::Call, HOOK));
            let epilogue = epilogue.finish().unwrap();
            // The timer's state local comes after the return-value local and before the
            // kept tail calls' locals.
            let timer = timer(Some(TypeSig::I8));
            for (entry, exit, state_local) in [
                (plain.clone(), plain, None),
                (guarded(), guarded(), None),
                (timer.entry, timer.exit, timer.state_local),
            ] {
                let code = InstrumentationCode {
                    entry,
                    exit,
                    epilogue_value: epilogue.clone(),
                    epilogue_void: guarded(),
                    tail_call: None,
                    state_local,
                };
                let mut fast = Instrumenter::new(code.clone()).unwrap();
                let mut slow = Instrumenter::new(code).unwrap();
                slow.general_path_only = true;
                let (mut seen, mut checked) = (std::collections::HashSet::new(), 0);
                let mut decoder = crate::body::Decoder::new();
                for method in asm.methods().flatten() {
                    let Some(bytes) = method.body else { continue };
                    if !method.is_il() || !seen.insert(method.rva) {
                        continue;
                    }
                    let mut a = MethodBody::new();
                    decoder.decode_into(bytes, &mut a).expect("decodes");
                    let mut b = a.clone();
                    let token = method.token;
                    let mut context =
                        MethodContext::from_metadata(&asm, token, &a, token as i32).unwrap();
                    context.module_id = Some(0x7F00_1234_5678);
                    let x = fast.instrument(&mut a, &context, &resolver).map(|d| {
                        (
                            d.returns,
                            d.max_stack,
                            d.new_locals_signature.map(<[u8]>::to_vec),
                        )
                    });
                    let y = slow.instrument(&mut b, &context, &resolver).map(|d| {
                        (
                            d.returns,
                            d.max_stack,
                            d.new_locals_signature.map(<[u8]>::to_vec),
                        )
                    });
                    assert_eq!(x, y, "{token:08x}");
                    assert_eq!(format!("{a:?}"), format!("{b:?}"), "{token:08x}");
                    checked += 1;
                }
                assert!(checked > 17_000, "{checked}");
            }
        }
    }

    /// Per-module tokens reach the injected code; a context without them is refused
    /// before any edit.
    #[test]
    fn snippets_take_the_method_context_tokens() {
        let mut b = Snippet::builder();
        b.push(Instruction::ldc_i4(0));
        b.token(OpCode::Call, 0);
        let mut inst = Instrumenter::new(InstrumentationCode {
            entry: b.finish().unwrap(),
            ..Default::default()
        })
        .unwrap();
        // static void M(): ret (tiny)
        let mut body = MethodBody::decode(&[0x06, 0x2A]).unwrap();
        let mut method = MethodContext {
            signature: &[0x00, 0x00, 0x01],
            locals: None,
            id: 1,
            tokens: &[],
            module_id: None,
        };
        let before = format!("{body:?}");
        assert!(matches!(
            inst.instrument(&mut body, &method, &hooks(1)),
            Err(Error::Unsupported { .. })
        ));
        assert_eq!(format!("{body:?}"), before);
        method.tokens = &[0x0A00_0042];
        inst.instrument(&mut body, &method, &hooks(1)).unwrap();
        let first = body.instrs.first().unwrap();
        let call = body.instrs.next(first).unwrap();
        assert_eq!(body.instrs.token(call), Some(0x0A00_0042));
    }

    const BEGIN: u32 = 0x0A00_0003;
    const END: u32 = 0x0A00_0004;

    /// `Begin` pushes an `int64`, `End(int64 module, int32 method, int64 t)` pops three,
    /// `HOOK` pops one.
    fn timer_calls(_: OpCode, token: u32) -> Result<CallEffect> {
        Ok(match token {
            BEGIN => CallEffect { pops: 0, pushes: 1 },
            END => CallEffect { pops: 3, pushes: 0 },
            _ => CallEffect { pops: 1, pushes: 0 },
        })
    }

    /// `t = Begin()` at entry, `End(module, method, t)` in the finally.
    fn timer(state: Option<TypeSig>) -> InstrumentationCode {
        let mut entry = Snippet::builder();
        entry.push(Instruction::with_token(OpCode::Call, BEGIN));
        entry.state_local(OpCode::Stloc);
        let mut exit = Snippet::builder();
        exit.module_id().method_id().state_local(OpCode::Ldloc);
        exit.push(Instruction::with_token(OpCode::Call, END));
        InstrumentationCode {
            entry: entry.finish().unwrap(),
            exit: exit.finish().unwrap(),
            state_local: state,
            ..Default::default()
        }
    }

    /// The local an `ldloc`/`stloc` (any form) names.
    fn local_of(instr: &Instruction) -> Option<u16> {
        use crate::graph::Operand;
        use OpCode::*;
        match (instr.opcode, instr.operand) {
            (Ldloc0 | Stloc0, _) => Some(0),
            (Ldloc1 | Stloc1, _) => Some(1),
            (Ldloc2 | Stloc2, _) => Some(2),
            (Ldloc3 | Stloc3, _) => Some(3),
            (LdlocS | Ldloc | StlocS | Stloc, Operand::Var(v)) => Some(v),
            _ => None,
        }
    }

    #[test]
    fn a_state_local_without_a_type_or_a_module_id_without_a_value_is_refused() {
        assert!(matches!(
            Instrumenter::new(timer(None)),
            Err(Error::PlaceholderUnfilled { .. })
        ));
        // A type that is no local's.
        assert!(Instrumenter::new(timer(Some(TypeSig::Void))).is_err());
        let mut inst = Instrumenter::new(timer(Some(TypeSig::I8))).unwrap();
        let mut body = MethodBody::decode(&[0x06, 0x2A]).unwrap(); // nop... ret (tiny)
        let before = format!("{body:?}");
        let method = MethodContext::new(&[0x00, 0x00, 0x01], 3);
        assert!(matches!(
            inst.instrument(&mut body, &method, &timer_calls),
            Err(Error::PlaceholderUnfilled { .. })
        ));
        assert_eq!(format!("{body:?}"), before);
        // A declared state local nobody names is still added (and harmless).
        let mut unused = timer(Some(TypeSig::I8));
        unused.entry = guarded();
        unused.exit = guarded();
        let mut inst = Instrumenter::new(unused).unwrap();
        let done = inst.instrument(&mut body, &method, &hooks(1)).unwrap();
        assert_eq!(done.new_locals_signature, Some(&[0x07, 0x01, 0x0A][..]));
    }

    /// Entry-only code may use the state local too: it is added, nothing else.
    #[test]
    fn entry_only_code_gets_the_state_local() {
        let mut entry = Snippet::builder();
        entry.push(Instruction::with_token(OpCode::Call, BEGIN));
        entry.state_local(OpCode::Stloc0);
        let mut inst = Instrumenter::new(InstrumentationCode {
            entry: entry.finish().unwrap(),
            state_local: Some(TypeSig::I8),
            ..Default::default()
        })
        .unwrap();
        let mut body = MethodBody::decode(&[0x06, 0x2A]).unwrap();
        let method = MethodContext {
            locals: Some(&[0x07, 0x01, 0x0E]),
            ..MethodContext::new(&[0x00, 0x00, 0x01], 3)
        };
        let done = inst.instrument(&mut body, &method, &timer_calls).unwrap();
        assert_eq!(
            done.new_locals_signature,
            Some(&[0x07, 0x02, 0x0E, 0x0A][..])
        );
        let first = body.instrs.first().unwrap();
        let store = body.instrs.next(first).unwrap();
        assert_eq!(local_of(&body.instrs.get(store)), Some(1));
        assert!(body.clauses.is_empty());
    }

    proptest::proptest! {
        /// For any number of existing locals, a void or value-returning method and any
        /// ids: the state local is added once, after the return-value local; the entry
        /// stores into it before the try and the finally loads the same local, after the
        /// module id; the exact max stack is that of the re-decoded body; the one-pass
        /// and edit-by-edit wraps agree.
        #[test]
        fn the_state_local_is_shared_by_entry_and_exit(
            existing in 0usize..300,
            returns_value in proptest::bool::ANY,
            with_clause in proptest::bool::ANY,
            id in proptest::num::i32::ANY,
            module in proptest::num::u64::ANY,
        ) {
            let mut locals = vec![0x07];
            crate::sig::write_compressed_u32(existing as u32, &mut locals).unwrap();
            locals.extend(std::iter::repeat_n(0x0E, existing)); // strings
            let signature: &[u8] = match returns_value {
                true => &[0x00, 0x00, 0x08],
                false => &[0x00, 0x00, 0x01],
            };
            // ldc.i4.1 (pop: void) ret, tiny; or with a try/finally around a nop.
            let value_or_pop = if returns_value { 0x17 } else { 0x00 };
            let flat = [0x0A, value_or_pop, 0x2A];
            let mut fat = vec![0x0B, 0x30, 0x01, 0x00, 0x06, 0x00, 0x00, 0x00, 0, 0, 0, 0];
            fat.extend_from_slice(&[0x00, 0xDE, 0x01, 0xDC, value_or_pop, 0x2A, 0x00, 0x00]);
            fat.extend_from_slice(&[0x01, 0x10, 0x00, 0x00]);
            fat.extend_from_slice(&[0x02, 0x00, 0x00, 0x00, 0x03, 0x03, 0x00, 0x01, 0, 0, 0, 0]);
            let original: &[u8] = if with_clause { &fat } else { &flat };
            let method = MethodContext {
                locals: (existing > 0).then_some(&locals[..]),
                module_id: Some(module),
                ..MethodContext::new(signature, id)
            };
            let mut results = Vec::new();
            for general in [false, true] {
                let mut inst = Instrumenter::new(timer(Some(TypeSig::I8))).unwrap();
                inst.general_path_only = general;
                let mut body = MethodBody::decode(original).unwrap();
                let done = inst.instrument(&mut body, &method, &timer_calls).unwrap();
                let new_locals = done.new_locals_signature.unwrap().to_vec();
                let max_stack = done.max_stack;
                proptest::prop_assert_eq!(max_stack, 3);
                let mut expected = vec![0x07];
                let count = existing + usize::from(returns_value) + 1;
                crate::sig::write_compressed_u32(count as u32, &mut expected).unwrap();
                expected.extend(std::iter::repeat_n(0x0E, existing));
                if returns_value {
                    expected.push(0x08);
                }
                expected.push(0x0A);
                proptest::prop_assert_eq!(&new_locals, &expected);
                let state = (count - 1) as u16;
                let mut bytes = Vec::new();
                body.local_var_sig = 0x1100_0001;
                inst.encode(&body, &mut bytes).unwrap();
                let again = MethodBody::decode(&bytes).unwrap();
                let analysis = StackAnalyzer::new()
                    .analyze(&again, &timer_calls, ReturnKind::value_if(returns_value))
                    .unwrap()
                    .max_stack();
                proptest::prop_assert_eq!(analysis, max_stack);
                // The entry: call Begin; stloc state, then the try.
                let instrs: Vec<_> = again.instrs.iter().collect();
                proptest::prop_assert_eq!(instrs[0].1.opcode, OpCode::Call);
                proptest::prop_assert_eq!(local_of(&instrs[1].1), Some(state));
                proptest::prop_assert!(instrs[1].1.opcode.name().starts_with("stloc"));
                let finally = again.clauses.last().unwrap();
                proptest::prop_assert_eq!(finally.try_start, instrs[2].0);
                // The finally: ldc.i8 module; ldc.i4 id; ldloc state; call End.
                let at = instrs.iter().position(|(i, _)| *i == finally.handler_start).unwrap();
                let exit: Vec<&Instruction> = instrs[at..at + 4].iter().map(|(_, i)| i).collect();
                proptest::prop_assert_eq!(
                    exit[0],
                    &Instruction::ldc_i8(module as i64)
                );
                proptest::prop_assert_eq!(exit[1], &Instruction::ldc_i4(id));
                proptest::prop_assert!(exit[2].opcode.name().starts_with("ldloc"));
                proptest::prop_assert_eq!(local_of(exit[2]), Some(state));
                results.push(bytes);
            }
            proptest::prop_assert_eq!(&results[0], &results[1]);
        }
    }

    #[test]
    fn a_refused_body_is_left_as_it_was() {
        let mut inst = Instrumenter::new(InstrumentationCode {
            entry: guarded(),
            exit: guarded(),
            ..Default::default()
        })
        .unwrap();
        // jmp 0x06000001 (tiny)
        let mut body = MethodBody::decode(&[0x16, 0x27, 0x01, 0x00, 0x00, 0x06]).unwrap();
        let before = format!("{body:?}");
        let method = MethodContext {
            signature: &[0x00, 0x00, 0x08],
            locals: None,
            id: 1,
            tokens: &[],
            module_id: None,
        };
        assert!(matches!(
            inst.instrument(&mut body, &method, &hooks(1)),
            Err(Error::Unsupported { .. })
        ));
        assert_eq!(format!("{body:?}"), before);
    }
}

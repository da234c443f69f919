//! CallTarget: managed begin/end hooks around a target method, every argument passed by
//! reference ([`CallTarget`]), and the hooks' signatures from the target's
//! ([`HookSignatures`]).
//!
//! Dependencies run one way: `hooks` (the signatures and the refusals a signature
//! decides) needs nothing of the transform; the transform (this module) builds on it and
//! on the wrap's general path, which places the hooks in clauses of their own.

mod hooks;
#[cfg(test)]
mod tests;

pub use hooks::{HookSignatures, HookTypes};

use super::returns::Returns;
use super::tail_call::{self, NewLocals, TailCallPolicy};
use super::wrap::{CatchRethrow, CodeScan, Guard, WrapOptions, Wrapped, wrap_guarded};
use super::{MethodContext, ReturnLocal};
use crate::analysis::{CallSiteResolver, ReturnKind, StackAnalyzer};
use crate::body::{ClauseKind, MethodBody};
use crate::error::{CallTargetRefusal, Error, Result, TailCallRefusal};
use crate::graph::{InstrId, Instruction};
use crate::opcode::OpCode;
use crate::sig::{LocalVarSig, MethodSig, TypeSig};
use hooks::refused;
use smallvec::SmallVec;

/// The empty LocalVarSig (`LOCAL_SIG`, no locals), what a body without one extends.
const EMPTY_LOCALS: &[u8] = &[0x07, 0x00];

/// What [`CallTarget::apply`] calls, as tokens of the target's module: the caller
/// defines them (see [`HookSignatures`] for the signatures and instantiations).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CallTargetHooks {
    /// `OnMethodBegin<T, A1..An>`: the MethodSpec of this target's instantiation (or any
    /// method token whose stack effect is the begin hook's: it pops the instance, when
    /// the target has one, and the n arguments' addresses, and pushes the state).
    pub begin: u32,
    /// `OnMethodEnd<T, R>` (or `OnMethodEnd<T>` for a `void` target): the MethodSpec of
    /// this target's instantiation.
    pub end: u32,
    /// Called instead of `pop` in the hooks' own catch handlers with the exception a
    /// hook threw: a `static void (System.Exception)` method token; `None` to drop the
    /// exception.
    pub on_hook_exception: Option<u32>,
    /// The exception and state types: the exception type is what the catch handlers
    /// catch and the exception local's type, the state type the state local's.
    pub types: HookTypes,
}

/// What [`CallTarget::apply`] did to one body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallTargetApplied<'a> {
    /// Where the return value goes: [`Returns::Value`] names the new return-value local
    /// (`void` targets: [`Returns::Void`]).
    pub returns: Returns,
    /// The index of the new state local.
    pub state_local: u16,
    /// The index of the new exception local.
    pub exception_local: u16,
    /// The LocalVarSig with the new locals appended, in this order: the return-value
    /// local (targets that return a value), the state local, the exception local, then
    /// the locals of kept tail calls. Get a token for it and set it on the body
    /// ([`MethodBody::local_var_sig`]) before encoding (see [`ReturnLocal`] for why only
    /// now).
    pub new_locals_signature: &'a [u8],
    /// `ret`s the body had.
    pub rets: usize,
    /// Tail calls kept under [`TailCallPolicy::Keep`], each leaving the protected region
    /// through a stub after the handlers.
    pub tail_calls_kept: usize,
    /// `tail.` prefixes removed under [`TailCallPolicy::DropPrefix`].
    pub tail_prefixes_removed: usize,
    /// Where the wrap's pieces are: the original body's try block, the finally, the
    /// catch that records the exception, the epilogue.
    pub wrapped: Wrapped,
    /// The exact max stack of the rewritten body, now in [`MethodBody::max_stack`].
    pub max_stack: u16,
}

/// The CallTarget transform: the target's body wrapped so that a begin hook runs on
/// entry and an end hook on every exit, each receiving the arguments by reference, the
/// end hook the return value (which it may replace) and the exception (the shape of the
/// issue 32 contract):
///
/// ```text
///       .try {
///         [ldarg.0 | ldarga.0]  (ldarg i | ldarga i for each parameter)
///         call BEGIN;  stloc state;  leave L_body
///       } catch E { pop | call ON_HOOK_EXCEPTION;  leave L_body }
/// L_body:
///       .try {
///         .try {
///           <original body, every ret -> (stloc ret;) leave EPI>
///         } catch E { stloc exception;  rethrow }
///       } finally {
///         .try {
///           [this]  [ldloc ret]  ldloc exception  ldloca state
///           call END;  [stloc ret];  leave L_end
///         } catch E { pop | call ON_HOOK_EXCEPTION;  leave L_end }
/// L_end:  endfinally
///       }
/// EPI:  [ldloc ret] ret
/// ```
///
/// * Arguments: `this` of a reference type by address (`ldarga.0`); `this` of a value
///   type as it is (`ldarg.0`: it already is the managed pointer to the caller's own
///   instance, the `ref TTarget` the hook takes); a by-ref parameter as it is
///   (`ldarg`), every other parameter by address (`ldarga`): no copy, no `box`. Static
///   targets pass no instance.
/// * A hook that throws changes nothing the target's caller sees: its exception is
///   caught in the hook's own handler; the state then stays as it was (zero), the return
///   value as the body left it, and the body's own exception is rethrown (`rethrow`).
/// * The locals are zero-initialized (the header's `localsinit` flag is set), so that
///   the end hook receives `default(TReturn)` and a null exception where the body left
///   none, and a default state when the begin hook threw.
/// * `tail.` calls: as [`CallTarget::with_tail_call_policy`] says, kept through the
///   wrap's stubs by default (the finally, hence the end hook, runs before the callee
///   starts; the end hook then receives `default(TReturn)`, and what it returns is not
///   used: the callee returns to the caller).
/// * The max stack is computed exactly (which also verifies the stack of the rewritten
///   body) and set in the header.
///
/// Keep one per thread (it keeps scratch buffers between bodies).
///
/// ```
/// use ilrewrite::analysis::CallEffect;
/// use ilrewrite::sig::TypeSig;
/// use ilrewrite::transform::{CallTarget, CallTargetHooks, HookTypes, MethodContext};
/// use ilrewrite::{MethodBody, OpCode};
///
/// // static int32 M(int32 x): ldarg.0; ret
/// let mut body = MethodBody::decode(&[0x0A, 0x02, 0x2A])?;
/// let method = MethodContext::new(&[0x00, 0x01, 0x08, 0x08], 1);
/// let hooks = CallTargetHooks {
///     begin: 0x2B00_0001,
///     end: 0x2B00_0002,
///     on_hook_exception: None,
///     types: HookTypes { exception: 0x0100_0001, state: TypeSig::ValueType(0x0100_0002) },
/// };
/// // OnMethodBegin<T, int32>(ref int32) -> state; OnMethodEnd<T, int32>(int32, Exception, ref state) -> int32
/// let resolver = |_: OpCode, token: u32| {
///     Ok(match token {
///         0x2B00_0001 => CallEffect { pops: 1, pushes: 1 },
///         _ => CallEffect { pops: 3, pushes: 1 },
///     })
/// };
/// let declaring = TypeSig::Class(0x0200_0002);
/// let mut call_target = CallTarget::new();
/// let done = call_target.apply(&mut body, &method, &declaring, &hooks, &resolver)?;
/// // .locals init (int32 ret, valuetype CallTargetState state, class Exception exception)
/// assert_eq!(done.new_locals_signature, [0x07, 0x03, 0x08, 0x11, 0x09, 0x12, 0x05]);
/// assert_eq!(body.clauses.len(), 4);
/// assert_eq!(done.max_stack, 3);
/// # Ok::<(), ilrewrite::Error>(())
/// ```
#[derive(Debug, Default)]
pub struct CallTarget {
    /// What to do with `tail.` calls.
    tail_calls: TailCallPolicy,
    /// The new LocalVarSig (scratch, then the result).
    locals: Vec<u8>,
    /// The LocalVarSig before the tail calls' locals (scratch).
    base: Vec<u8>,
    /// The types of the locals kept tail calls need (scratch).
    tail_locals: NewLocals,
    analyzer: StackAnalyzer,
}

impl CallTarget {
    /// The transform, keeping tail calls ([`TailCallPolicy::Keep`]).
    pub fn new() -> CallTarget {
        CallTarget::default()
    }

    /// This transform with `policy` for `tail.` calls (the default is
    /// [`TailCallPolicy::Keep`]).
    pub fn with_tail_call_policy(mut self, policy: TailCallPolicy) -> CallTarget {
        self.tail_calls = policy;
        self
    }

    /// What it does with `tail.` calls.
    pub fn tail_call_policy(&self) -> TailCallPolicy {
        self.tail_calls
    }

    /// Rewrites `body` to the CallTarget shape (see the type's documentation).
    ///
    /// `method` gives the target's signature and LocalVarSig (its other fields are not
    /// read); `declaring_type` the target's declaring type as its module writes it (it
    /// decides how `this` is passed: see [`HookSignatures::of`]); `hooks` the tokens to
    /// call; `resolver` the stack effects of the body's call sites and of the hooks, and
    /// for a body with tail calls to keep, the metadata their callees' signatures are
    /// read from ([`CallSiteResolver::metadata`]).
    ///
    /// On success the body is ready to encode once its new LocalVarSig token is set
    /// ([`CallTargetApplied::new_locals_signature`]). On any error the body is left
    /// exactly as it was.
    ///
    /// # Errors
    /// Refusals, made before any edit: [`Error::CallTargetRefused`] for what
    /// [`HookSignatures::of`] refuses (from the signature and the declaring type), for a
    /// body with `jmp` ([`CallTargetRefusal::Jmp`]) or with a `ret` inside an exception
    /// handler ([`CallTargetRefusal::RetInHandler`]); [`Error::TailCallNotKept`] for a
    /// tail call the policy refuses or that cannot be kept (see [`TailCallRefusal`]);
    /// [`Error::EmptyBody`], [`Error::Unsupported`] for a body of nothing but `tail.`
    /// prefixes or with a `tail.` not followed by a call in its own regions, the errors
    /// of [`MethodBody::validate_clauses`] for a clause list that is not valid, of
    /// [`MethodSig::parse`] and [`ReturnLocal::plan`] for malformed signatures, and
    /// [`Error::TooManyLocals`] when the new locals do not fit. After the wrap (the
    /// body then restored): the errors of the stack analysis (a call site the resolver
    /// cannot resolve, code that does not verify), and [`Error::TailCallNotKept`] with
    /// [`TailCallRefusal::ExtraStackValues`] for a tail call with more on the stack
    /// than its operands (invalid IL).
    pub fn apply<R: CallSiteResolver + ?Sized>(
        &mut self,
        body: &mut MethodBody,
        method: &MethodContext<'_>,
        declaring_type: &TypeSig,
        hooks: &CallTargetHooks,
        resolver: &R,
    ) -> Result<CallTargetApplied<'_>> {
        let target = MethodSig::parse(method.signature)?;
        let (scan, keep_tail_calls) = self.refusals(body, &target, declaring_type, hooks)?;
        let mut locals = self.locals(body, method, hooks, &scan, keep_tail_calls, resolver)?;
        let code = HookCode::of(&target, declaring_type, hooks, &locals);
        let (wrapped, max_stack) = self.wrap(body, &code, &scan, &mut locals, hooks, resolver)?;
        Ok(CallTargetApplied {
            returns: locals.returns,
            state_local: locals.state,
            exception_local: locals.exception,
            new_locals_signature: &self.locals,
            rets: scan.rets.len(),
            tail_calls_kept: wrapped.tail_calls_kept,
            tail_prefixes_removed: wrapped.tail_prefixes_removed,
            wrapped,
            max_stack,
        })
    }

    /// What is refused before any edit; the body's scan and whether tail calls are
    /// kept.
    fn refusals(
        &self,
        body: &MethodBody,
        target: &MethodSig,
        declaring_type: &TypeSig,
        hooks: &CallTargetHooks,
    ) -> Result<(CodeScan, bool)> {
        // The signature's refusals (and the declaring type's), through the same function
        // the caller defines the hooks with.
        HookSignatures::of(target, declaring_type, &hooks.types)?;
        let scan = CodeScan::of(&body.instrs);
        if body.instrs.is_empty() {
            return Err(Error::EmptyBody);
        }
        if scan.has_jmp {
            return Err(refused(CallTargetRefusal::Jmp));
        }
        if ret_in_handler(body, &scan.rets) {
            return Err(refused(CallTargetRefusal::RetInHandler));
        }
        let keep_tail_calls =
            !scan.tails.is_empty() && self.tail_calls != TailCallPolicy::DropPrefix;
        if keep_tail_calls && self.tail_calls == TailCallPolicy::Refuse {
            return Err(Error::TailCallNotKept {
                offset: body.original_offset(scan.tails[0]),
                reason: TailCallRefusal::PolicyRefuses,
            });
        }
        Ok((scan, keep_tail_calls))
    }

    /// The new locals: the return value's, the state, the exception, then the tail
    /// calls' (the new LocalVarSig in `self.locals`).
    fn locals<R: CallSiteResolver + ?Sized>(
        &mut self,
        body: &MethodBody,
        method: &MethodContext<'_>,
        hooks: &CallTargetHooks,
        scan: &CodeScan,
        keep_tail_calls: bool,
        resolver: &R,
    ) -> Result<Locals> {
        self.locals.clear();
        let plan = ReturnLocal::plan(method.signature, method.locals, &mut self.locals)?;
        let previous = match plan.extends_locals {
            true => std::mem::take(&mut self.locals),
            false => method.locals.unwrap_or(EMPTY_LOCALS).to_vec(),
        };
        let state_type = hooks.types.state.to_bytes()?;
        let exception_type = TypeSig::Class(hooks.types.exception).to_bytes()?;
        self.base.clear();
        let state = LocalVarSig::append_all_to_blob(
            &previous,
            &[&state_type, &exception_type],
            &mut self.base,
        )?;
        let exception = state + 1;
        self.tail_locals.clear();
        let tail_plan = match keep_tail_calls {
            true => Some(tail_call::plan(
                body,
                &scan.tails,
                resolver.metadata(),
                usize::from(exception) + 1,
                false,
                matches!(plan.returns, Returns::Value { .. }),
                &mut self.tail_locals,
            )?),
            false => None,
        };
        self.locals.clear();
        let tail_types = self.tail_locals.types();
        LocalVarSig::append_all_to_blob(&self.base, &tail_types, &mut self.locals).map_err(
            |e| match e {
                Error::Unencodable { .. } | Error::TooManyLocals { .. } => Error::TailCallNotKept {
                    offset: body.original_offset(scan.tails[0]),
                    reason: TailCallRefusal::TooManyLocals,
                },
                e => e,
            },
        )?;
        Ok(Locals {
            returns: plan.returns,
            state,
            exception,
            tail_plan,
        })
    }

    /// Wraps `body` with `code`, then analyses it (the exact max stack, and the tail
    /// calls' stack heights); on any error the body is restored.
    fn wrap<R: CallSiteResolver + ?Sized>(
        &mut self,
        body: &mut MethodBody,
        code: &HookCode,
        scan: &CodeScan,
        locals: &mut Locals,
        hooks: &CallTargetHooks,
        resolver: &R,
    ) -> Result<(Wrapped, u16)> {
        let record = [Instruction::stloc(locals.exception)];
        let opts = WrapOptions {
            returns: locals.returns,
            entry: &code.entry,
            exit: &code.exit,
            catch: Some(CatchRethrow {
                type_token: hooks.types.exception,
                code: &record,
            }),
            tail_calls: self.tail_calls,
        };
        let report = hooks
            .on_hook_exception
            .map(|h| Instruction::with_token(OpCode::Call, h));
        let guard = Guard {
            type_token: hooks.types.exception,
            handler: report.as_slice(),
        };
        let original = body.clone();
        let tail_plan = &mut locals.tail_plan;
        let outcome = (|| {
            let wrapped = wrap_guarded(body, &opts, scan, tail_plan.as_mut(), Some(&guard))?;
            body.init_locals = true;
            let analysis =
                self.analyzer
                    .analyze(body, resolver, ReturnKind::from(locals.returns))?;
            for site in tail_plan.iter().flat_map(|p| &p.sites) {
                if site
                    .leave
                    .and_then(|leave| analysis.height_before(leave))
                    .is_some_and(|h| h != 0)
                {
                    return Err(Error::TailCallNotKept {
                        offset: original.original_offset(site.tail),
                        reason: TailCallRefusal::ExtraStackValues,
                    });
                }
            }
            Ok((wrapped, analysis.max_stack()))
        })();
        match outcome {
            Ok((wrapped, max_stack)) => {
                body.max_stack = max_stack;
                Ok((wrapped, max_stack))
            }
            Err(e) => {
                *body = original;
                Err(e)
            }
        }
    }
}

/// The new locals of one method, and its tail calls' plan.
struct Locals {
    returns: Returns,
    state: u16,
    exception: u16,
    tail_plan: Option<tail_call::TailPlan>,
}

/// The code that calls the hooks: the begin hook's (entry) and the end hook's (exit).
struct HookCode {
    entry: SmallVec<[Instruction; 16]>,
    exit: SmallVec<[Instruction; 8]>,
}

impl HookCode {
    /// `this` by address (a value type's `this` is one already), by-ref parameters as
    /// they are, the others by address; the state stored by the begin hook; the end
    /// hook given the return value, the exception and the state, its result stored
    /// back.
    fn of(
        target: &MethodSig,
        declaring_type: &TypeSig,
        hooks: &CallTargetHooks,
        locals: &Locals,
    ) -> HookCode {
        let instance = target.has_this;
        let value_this = instance && hooks::is_value_type(declaring_type);
        let load_this = || match value_this {
            true => Instruction::ldarg(0),
            false => Instruction::ldarga(0),
        };
        let first_param = u16::from(instance);
        let mut entry: SmallVec<[Instruction; 16]> = SmallVec::new();
        if instance {
            entry.push(load_this());
        }
        for (i, p) in target.params.iter().enumerate() {
            // At most 65,534 parameters (checked by `HookSignatures::of`).
            let arg = first_param + i as u16;
            entry.push(match hooks::is_by_ref(p) {
                true => Instruction::ldarg(arg),
                false => Instruction::ldarga(arg),
            });
        }
        entry.push(Instruction::with_token(OpCode::Call, hooks.begin));
        entry.push(Instruction::stloc(locals.state));
        let mut exit: SmallVec<[Instruction; 8]> = SmallVec::new();
        if instance {
            exit.push(load_this());
        }
        if let Returns::Value { local } = locals.returns {
            exit.push(Instruction::ldloc(local));
        }
        exit.push(Instruction::ldloc(locals.exception));
        exit.push(Instruction::ldloca(locals.state));
        exit.push(Instruction::with_token(OpCode::Call, hooks.end));
        if let Returns::Value { local } = locals.returns {
            exit.push(Instruction::stloc(local));
        }
        HookCode { entry, exit }
    }
}

/// Whether one of `rets` lies inside an exception handler (catch, filter, finally or
/// fault block) of `body`.
fn ret_in_handler(body: &MethodBody, rets: &[InstrId]) -> bool {
    if body.clauses.is_empty() || rets.is_empty() {
        return false;
    }
    let pos = body.positions();
    let at = |id: InstrId| pos.get(id.index()).copied().unwrap_or(u32::MAX);
    body.clauses.iter().any(|c| {
        let start = match c.kind {
            ClauseKind::Filter(f) => at(f),
            _ => at(c.handler_start),
        };
        let last = at(c.handler_last);
        rets.iter().any(|&r| (start..=last).contains(&at(r)))
    })
}

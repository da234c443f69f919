//! Analyse and instrument every method body of an assembly the way an APM agent would,
//! and check the result.
//!
//! For each distinct body:
//! 1. the stack analysis runs on the unedited body: it must verify, and its max stack is
//!    compared with the header's;
//! 2. the body is instrumented by an [`Instrumenter`] ([`hook_instrumenter`]): a
//!    return-value local is added to its LocalVarSig (when the method returns a value),
//!    then it is wrapped in try/finally with entry code before the try, exit code in the
//!    finally, and epilogue code on the normal exit path, and its max stack computed;
//! 3. the body is encoded, decoded again, verified again, and its IL map is checked
//!    against the re-decoded code.
//!
//! The injected calls use tokens no assembly defines ([`ENTER_HOOK`], [`EXIT_HOOK`],
//! [`RETURN_HOOK`]); the resolver used here knows their stack effects.

use super::Failure;
use ilrewrite::analysis::{
    CachingResolver, CallEffect, CallSiteResolver, MetadataResolver, ReturnKind, StackAnalyzer,
};
use ilrewrite::body::{Decoder, MethodBody};
use ilrewrite::ilmap::IlMap;
use ilrewrite::metadata::MetadataSource;
use ilrewrite::opcode::OpCode;
use ilrewrite::pe::Assembly;
use ilrewrite::sig::summarize_method_sig;
use ilrewrite::transform::{InstrumentationCode, Instrumenter, MethodContext, Snippet};
use ilrewrite::{Error, Instruction, Result};
use std::collections::{BTreeMap, HashSet};
use std::fmt;

/// Token of the injected entry call: `void Enter(int32 methodToken)`.
pub const ENTER_HOOK: u32 = 0x0AFF_FFF0;
/// Token of the injected exit call (in the finally): `void Exit(int32 methodToken)`.
pub const EXIT_HOOK: u32 = 0x0AFF_FFF1;
/// Token of the injected epilogue call: `void Return(object value)`, given the return
/// value (value-returning methods only).
pub const RETURN_HOOK: u32 = 0x0AFF_FFF2;
/// StandAloneSig token given to LocalVarSigs extended with a return-value local (a real
/// profiler gets one from `IMetaDataEmit::GetTokenFromSig`).
pub const NEW_LOCALS_TOKEN: u32 = 0x11FF_FFFF;

/// Counts gathered by [`rewrite_assembly`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RewriteReport {
    /// Distinct bodies analysed.
    pub bodies: usize,
    /// Unedited tiny bodies: their header implies a max stack of 8 without stating one, so
    /// they are only checked to need at most 8.
    pub tiny_bodies: usize,
    /// Unedited fat bodies whose computed max stack equals the header's.
    pub max_stack_equal: usize,
    /// Unedited fat bodies whose computed max stack is below the header's, by difference.
    pub max_stack_lower: BTreeMap<u16, usize>,
    /// Unedited bodies whose computed max stack exceeds the header's (must stay empty:
    /// the JIT would reject such a body, so the analysis would be wrong).
    pub max_stack_higher: Vec<Failure>,
    /// Unedited bodies the stack analysis rejected.
    pub verify_failures: Vec<Failure>,
    /// Bodies instrumented, re-encoded, re-decoded and re-verified successfully.
    pub rewritten: usize,
    /// `ret`s turned into jumps to the epilogue.
    pub rets_rewritten: usize,
    /// Return-value locals added.
    pub locals_added: usize,
    /// `tail.` prefixes removed by wrapping.
    pub tail_prefixes_removed: usize,
    /// Tail calls kept by wrapping (each left the try through a stub).
    pub tail_calls_kept: usize,
    /// Bodies that grew from a tiny to a fat header.
    pub tiny_to_fat: usize,
    /// Bodies whose EH data had to change from small to fat sections.
    pub small_to_fat_eh: usize,
    /// IL-map entries checked.
    pub il_map_entries: usize,
    /// Bodies the transforms refused, by reason (e.g. `jmp` cannot sit in a try block).
    pub refused: BTreeMap<String, usize>,
    /// Rewrites that failed (must stay empty).
    pub rewrite_failures: Vec<Failure>,
}

impl RewriteReport {
    /// Adds the counts of `other`.
    pub fn merge(&mut self, other: RewriteReport) {
        self.bodies += other.bodies;
        self.tiny_bodies += other.tiny_bodies;
        self.max_stack_equal += other.max_stack_equal;
        for (k, v) in other.max_stack_lower {
            *self.max_stack_lower.entry(k).or_default() += v;
        }
        self.max_stack_higher.extend(other.max_stack_higher);
        self.verify_failures.extend(other.verify_failures);
        self.rewritten += other.rewritten;
        self.rets_rewritten += other.rets_rewritten;
        self.locals_added += other.locals_added;
        self.tail_prefixes_removed += other.tail_prefixes_removed;
        self.tail_calls_kept += other.tail_calls_kept;
        self.tiny_to_fat += other.tiny_to_fat;
        self.small_to_fat_eh += other.small_to_fat_eh;
        self.il_map_entries += other.il_map_entries;
        for (k, v) in other.refused {
            *self.refused.entry(k).or_default() += v;
        }
        self.rewrite_failures.extend(other.rewrite_failures);
    }

    /// Unedited fat bodies whose computed max stack is below the header's.
    pub fn max_stack_lower_total(&self) -> usize {
        self.max_stack_lower.values().sum()
    }
}

impl fmt::Display for RewriteReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "bodies {} (tiny {}, fat {}): fat max stack equal {}, lower {} {:?}, higher {}, \
             verify failures {}",
            self.bodies,
            self.tiny_bodies,
            self.bodies - self.tiny_bodies,
            self.max_stack_equal,
            self.max_stack_lower_total(),
            self.max_stack_lower,
            self.max_stack_higher.len(),
            self.verify_failures.len()
        )?;
        write!(
            f,
            "rewritten {} (rets {}, locals added {}, tail. removed {}, tail calls kept {}, \
             tiny->fat {}, small->fat EH {}, IL map entries {}), refused {:?}, failures {}",
            self.rewritten,
            self.rets_rewritten,
            self.locals_added,
            self.tail_prefixes_removed,
            self.tail_calls_kept,
            self.tiny_to_fat,
            self.small_to_fat_eh,
            self.il_map_entries,
            self.refused,
            self.rewrite_failures.len()
        )
    }
}

/// Resolves the injected hooks ([`ENTER_HOOK`], [`EXIT_HOOK`], [`RETURN_HOOK`]: each
/// pops one value, pushes none) itself, and every other call site through the assembly's
/// metadata behind a [`CachingResolver`], as a profiler would: it knows the effects of
/// the calls it injects, and caches the module's. Create one per assembly.
#[derive(Debug)]
pub struct HookResolver<'r, 'a> {
    /// The assembly's call sites, each resolved once.
    module: CachingResolver<MetadataResolver<&'r Assembly<'a>>>,
}

impl<'r, 'a> HookResolver<'r, 'a> {
    /// A resolver for the call sites of `asm` and the hooks, with an empty cache.
    pub fn new(asm: &'r Assembly<'a>) -> Self {
        HookResolver {
            module: CachingResolver::for_module(asm),
        }
    }
}

impl CallSiteResolver for HookResolver<'_, '_> {
    #[inline]
    fn call_effect(&self, opcode: OpCode, token: u32) -> Result<CallEffect> {
        match token {
            ENTER_HOOK | EXIT_HOOK | RETURN_HOOK => Ok(CallEffect { pops: 1, pushes: 0 }),
            _ => self.module.call_effect(opcode, token),
        }
    }

    fn metadata(&self) -> Option<&dyn MetadataSource> {
        self.module.metadata()
    }
}

/// The instrumenter of the audit, the shape an APM agent injects: `ldc.i4 id; call
/// ENTER_HOOK` before the try, `ldc.i4 id; call EXIT_HOOK` in the finally, and for
/// methods that return a value `ldloc r; call RETURN_HOOK` on the normal exit path (the
/// id is the method's token).
pub fn hook_instrumenter() -> Instrumenter {
    let call_with_id = |hook| {
        let mut b = Snippet::builder();
        b.method_id();
        b.push(Instruction::with_token(OpCode::Call, hook));
        b.finish()
            .expect("a call with the method's id is a valid snippet")
    };
    let mut epilogue = Snippet::builder();
    epilogue.return_local(OpCode::Ldloc);
    epilogue.push(Instruction::with_token(OpCode::Call, RETURN_HOOK));
    Instrumenter::new(InstrumentationCode {
        entry: call_with_id(ENTER_HOOK),
        exit: call_with_id(EXIT_HOOK),
        epilogue_value: epilogue.finish().expect("a valid snippet"),
        epilogue_void: Snippet::default(),
        tail_call: None,
        state_local: None,
    })
    .expect("only the value epilogue names the return-value local")
}

/// Analyses and instruments every distinct method body of `asm` (see the module docs).
pub fn rewrite_assembly(name: &str, asm: &Assembly<'_>) -> RewriteReport {
    let mut report = RewriteReport::default();
    let fail = |list: &mut Vec<Failure>, token: u32, error: String| {
        list.push(Failure {
            assembly: name.to_string(),
            token,
            error,
        });
    };
    // One cache per assembly: each call-site token is resolved once.
    let resolver = HookResolver::new(asm);
    let mut seen = HashSet::new();
    let mut decoder = Decoder::new();
    let mut instrumenter = hook_instrumenter();
    let mut analyzer = StackAnalyzer::new();
    let mut body = MethodBody::new();
    let mut again = MethodBody::new();
    let mut bytes = Vec::new();
    for method in asm.methods().flatten() {
        let Some(code) = method.body else { continue };
        if !method.is_il() || !seen.insert(method.rva) {
            continue;
        }
        let token = method.token;
        if let Err(e) = decoder.decode_into(code, &mut body) {
            fail(&mut report.rewrite_failures, token, format!("decode: {e}"));
            continue;
        }
        report.bodies += 1;
        let returns_value = match summarize_method_sig(method.signature) {
            Ok(s) => s.returns_value,
            Err(e) => {
                fail(
                    &mut report.verify_failures,
                    token,
                    format!("signature: {e}"),
                );
                continue;
            }
        };

        // 1. The unedited body.
        match analyzer.analyze(&body, &resolver, ReturnKind::value_if(returns_value)) {
            Ok(analysis) => {
                let (computed, header) = (analysis.max_stack(), body.max_stack);
                if body.has_tiny_format() && computed <= header {
                    report.tiny_bodies += 1;
                } else if computed == header {
                    report.max_stack_equal += 1;
                } else if computed < header {
                    *report.max_stack_lower.entry(header - computed).or_default() += 1;
                } else {
                    fail(
                        &mut report.max_stack_higher,
                        token,
                        format!("computed max stack {computed} > header {header}"),
                    );
                }
            }
            Err(e) => {
                fail(&mut report.verify_failures, token, e.to_string());
                continue;
            }
        }

        // 2-3. Instrument, encode, decode, verify, check the IL map.
        let was_tiny = code[0] & 3 == 2;
        let original = body.clone();
        let outcome = instrument(&mut instrumenter, asm, &resolver, token, &mut body);
        match outcome.and_then(|outcome| {
            check_rewritten(
                &resolver,
                &original,
                &mut body,
                &mut again,
                (&mut instrumenter, &mut decoder, &mut analyzer, &mut bytes),
                returns_value,
            )
            .map(|entries| (outcome, entries))
        }) {
            Ok((outcome, entries)) => {
                report.rewritten += 1;
                report.rets_rewritten += outcome.rets;
                report.locals_added += usize::from(outcome.local_added);
                report.tail_prefixes_removed += outcome.tails;
                report.tail_calls_kept += outcome.tails_kept;
                report.tiny_to_fat += usize::from(was_tiny);
                report.small_to_fat_eh += usize::from(small_became_fat(code, &bytes));
                report.il_map_entries += entries;
            }
            Err(Error::Unsupported { what }) => {
                *report.refused.entry(what.to_string()).or_default() += 1;
            }
            Err(Error::TailCallNotKept { reason, .. }) => {
                let reason = format!("tail call not kept: {reason}");
                *report.refused.entry(reason).or_default() += 1;
            }
            Err(e) => fail(&mut report.rewrite_failures, token, e.to_string()),
        }
    }
    report
}

/// What [`instrument`] did to one body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    /// `ret`s in the body before the rewrite.
    pub rets: usize,
    /// Whether the method returns a value, and so a return-value local was added.
    pub local_added: bool,
    /// `tail.` prefixes removed.
    pub tails: usize,
    /// Tail calls kept.
    pub tails_kept: usize,
}

/// Instruments one body with `instrumenter` (from [`hook_instrumenter`]) the way an APM
/// agent does, the method's signatures read from `asm` and its id being its token; a
/// value-returning method's body then names [`NEW_LOCALS_TOKEN`]. Refused bodies
/// ([`Error::Unsupported`], e.g. with `jmp`) are left as they were.
///
/// # Errors
/// The errors of [`MethodContext::from_metadata`] and [`Instrumenter::instrument`].
pub fn instrument(
    instrumenter: &mut Instrumenter,
    asm: &Assembly<'_>,
    resolver: &HookResolver<'_, '_>,
    token: u32,
    body: &mut MethodBody,
) -> Result<Outcome> {
    let method = MethodContext::from_metadata(asm, token, body, token as i32)?;
    let done = instrumenter.instrument(body, &method, resolver)?;
    let outcome = Outcome {
        rets: done.rets,
        local_added: done.new_locals_signature.is_some(),
        tails: done.tail_prefixes_removed,
        tails_kept: done.tail_calls_kept,
    };
    if outcome.local_added {
        body.local_var_sig = NEW_LOCALS_TOKEN;
    }
    Ok(outcome)
}

/// Encodes, re-decodes, re-verifies and checks the IL map of an instrumented body.
/// Returns the number of IL-map entries checked.
fn check_rewritten(
    resolver: &impl CallSiteResolver,
    original: &MethodBody,
    body: &mut MethodBody,
    again: &mut MethodBody,
    (instrumenter, decoder, analyzer, bytes): (
        &mut Instrumenter,
        &mut Decoder,
        &mut StackAnalyzer,
        &mut Vec<u8>,
    ),
    returns_value: bool,
) -> Result<usize> {
    bytes.clear();
    let header = instrumenter.encode(body, bytes)?;
    let used = decoder.decode_into(bytes, again)?;
    if used != bytes.len() {
        return Err(Error::Unencodable {
            what: "re-decoding consumed a different number of bytes",
        });
    }
    again.validate_clauses()?;
    let verified = analyzer.analyze(again, resolver, ReturnKind::value_if(returns_value))?;
    if verified.max_stack() != again.max_stack || header.max_stack() != again.max_stack {
        return Err(Error::Unencodable {
            what: "re-decoded body's max stack differs from its analysis",
        });
    }

    // IL map: one entry per surviving original instruction, in code order, each at an
    // instruction boundary of the re-decoded code, at or before the instruction's new
    // home, with only injected instructions in between.
    let map = instrumenter.il_map(body);
    let offsets = ilrewrite::body::Encoder::new().code_offsets(body)?.to_vec();
    if map != IlMap::from_offsets(body, &offsets) {
        return Err(Error::Unencodable {
            what: "the instrumenter's IL map differs from the layout's",
        });
    }
    let surviving = original
        .instrs
        .ids()
        .filter(|&id| body.instrs.contains(id))
        .count();
    if map.entries().len() != surviving {
        return Err(Error::Unencodable {
            what: "IL map does not have one entry per surviving instruction",
        });
    }
    let code_size = offsets.last().copied().unwrap_or(0) as usize;
    let mut injected_at = vec![false; code_size + 1];
    for id in body.instrs.ids() {
        if body.original_offset(id).is_none() {
            injected_at[offsets[id.index()] as usize] = true;
        }
    }
    let mut last_new = None;
    for entry in map.entries() {
        let Some(old_id) = original.find_by_original_offset(entry.old_offset) else {
            return Err(Error::Unencodable {
                what: "IL map names an offset that is not an original instruction",
            });
        };
        let home = offsets[old_id.index()];
        // A kept tail call's call and `ret` moved to its stub after the handlers: they
        // map there, out of code order; everything else keeps its order.
        if moved_to_stub(body, old_id) {
            if entry.new_offset > home {
                return Err(Error::Unencodable {
                    what: "IL map points past a kept tail call's stub",
                });
            }
            continue;
        }
        if last_new.is_some_and(|prev| entry.new_offset <= prev) || entry.new_offset > home {
            return Err(Error::Unencodable {
                what: "IL map entries are not in code order or point past the instruction",
            });
        }
        last_new = Some(entry.new_offset);
        // Between the mapped offset and the instruction's home: injected code only.
        let mut cur = again.find_by_original_offset(entry.new_offset);
        while let Some(id) = cur {
            let at = again.original_offset(id).unwrap_or(u32::MAX);
            if at >= home {
                break;
            }
            if !injected_at[at as usize] {
                return Err(Error::Unencodable {
                    what: "IL map attributes original code to a later instruction",
                });
            }
            cur = again.instrs.next(id);
        }
        // At its home the re-decoded instruction is the transformed one (or its widened
        // long form).
        let here = again
            .find_by_original_offset(home)
            .ok_or(Error::Unencodable {
                what: "IL map: instruction home is not an instruction boundary",
            })?;
        let (now, decoded) = (body.instrs.opcode(old_id), again.instrs.opcode(here));
        if now != decoded && now.long_form() != Some(decoded) {
            return Err(Error::Unencodable {
                what: "IL map: the instruction at the mapped home differs",
            });
        }
    }
    Ok(map.entries().len())
}

/// Whether original instruction `id` is the call or the `ret` of a kept tail call,
/// which the wrap moves to a stub led by a new `tail.` prefix.
fn moved_to_stub(body: &MethodBody, id: ilrewrite::InstrId) -> bool {
    let new_tail = |p: Option<ilrewrite::InstrId>| {
        p.is_some_and(|p| {
            body.instrs.opcode(p) == OpCode::Tail && body.original_offset(p).is_none()
        })
    };
    let prev = body.instrs.prev(id);
    new_tail(prev)
        || (body.instrs.opcode(id) == OpCode::Ret
            && prev.is_some_and(|p| new_tail(body.instrs.prev(p))))
}

/// Whether the original body had a small EH section and the rewritten one a fat one.
fn small_became_fat(original: &[u8], rewritten: &[u8]) -> bool {
    first_section_is_fat(original) == Some(false) && first_section_is_fat(rewritten) == Some(true)
}

fn first_section_is_fat(body: &[u8]) -> Option<bool> {
    if body.len() < 12 || body[0] & 3 != 3 || body[0] & 0x08 == 0 {
        return None;
    }
    let code_size = u32::from_le_bytes([body[4], body[5], body[6], body[7]]) as usize;
    let at = (12 + code_size).next_multiple_of(4);
    body.get(at).map(|kind| kind & 0x40 != 0)
}

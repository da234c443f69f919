//! Analyse and instrument every method body of an assembly the way an APM agent would,
//! and check the result.
//!
//! For each distinct body:
//! 1. the stack analysis runs on the unedited body: it must verify, and its max stack is
//!    compared with the header's;
//! 2. the body is instrumented: a return-value local is added to its LocalVarSig (when the
//!    method returns a value), then it is wrapped in try/finally with entry code before
//!    the try, exit code in the finally, and epilogue code on the normal exit path
//!    (`wrap_try_finally` applies single-ret first);
//! 3. the max stack is computed for the result, the body is encoded, decoded again,
//!    verified again, and its IL map is checked against the re-decoded code.
//!
//! The injected calls use tokens no assembly defines ([`ENTER_HOOK`], [`EXIT_HOOK`],
//! [`RETURN_HOOK`]); the resolver used here knows their stack effects.
#![allow(clippy::missing_errors_doc)] // TODO(maintainer): # Errors docs
#![allow(missing_debug_implementations)] // TODO(maintainer): Debug for HookResolver

use super::Failure;
use crate::analysis::{CachingResolver, CallEffect, CallSiteResolver, MaxStackMode, StackAnalyzer};
use crate::body::{Decoder, Encoder, MethodBody};
use crate::graph::build::stored;
use crate::ilmap::IlMap;
use crate::opcode::OpCode;
use crate::pe::Assembly;
use crate::sig::{LocalVarSig, summarize_method_sig, summarize_method_sig_and_return_type};
use crate::transform::{CodeScan, Returns, StoredCode, Wrapped, wrap_scanned_stored};
use crate::{Error, Result};
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
            "rewritten {} (rets {}, locals added {}, tail. removed {}, tiny->fat {}, \
             small->fat EH {}, IL map entries {}), refused {:?}, failures {}",
            self.rewritten,
            self.rets_rewritten,
            self.locals_added,
            self.tail_prefixes_removed,
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
pub struct HookResolver<'r, 'a> {
    /// The assembly's call sites, each resolved once.
    module: CachingResolver<ModuleCalls<'r, 'a>>,
}

impl<'r, 'a> HookResolver<'r, 'a> {
    /// A resolver for the call sites of `asm` and the hooks, with an empty cache.
    pub fn new(asm: &'r Assembly<'a>) -> Self {
        HookResolver {
            module: CachingResolver::new(ModuleCalls(asm)),
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
}

/// The call sites of an assembly, resolved from its metadata.
struct ModuleCalls<'r, 'a>(&'r Assembly<'a>);

impl CallSiteResolver for ModuleCalls<'_, '_> {
    fn call_effect(&self, opcode: OpCode, token: u32) -> Result<CallEffect> {
        self.0.call_effect(opcode, token)
    }
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
    let mut encoder = Encoder::new();
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
        match analyzer.analyze(&body, &resolver, Some(returns_value)) {
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
        match instrument(asm, method.signature, token, &mut body).and_then(|outcome| {
            check_rewritten(
                &resolver,
                &original,
                &mut body,
                &mut again,
                (&mut encoder, &mut decoder, &mut analyzer, &mut bytes),
                returns_value,
            )
            .map(|entries| (outcome, entries))
        }) {
            Ok((outcome, entries)) => {
                report.rewritten += 1;
                report.rets_rewritten += outcome.rets;
                report.locals_added += usize::from(outcome.local_added);
                report.tail_prefixes_removed += outcome.tails;
                report.tiny_to_fat += usize::from(was_tiny);
                report.small_to_fat_eh += usize::from(small_became_fat(code, &bytes));
                report.il_map_entries += entries;
            }
            Err(Error::Unsupported { what }) => {
                *report.refused.entry(what.to_string()).or_default() += 1;
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
}

/// Instruments one body the way an APM agent does: adds a return-value local to the
/// LocalVarSig (value-returning methods; the body then names [`NEW_LOCALS_TOKEN`]),
/// wraps the body in try/finally with `ldc.i4 token; call ENTER_HOOK` before the try and
/// `ldc.i4 token; call EXIT_HOOK` in the finally, and calls [`RETURN_HOOK`] with the
/// return value on the normal exit path. `signature` is the method's MethodDefSig, read
/// once for whether and what it returns ([`Outcome::local_added`] tells the caller, e.g.
/// for the stack analysis). The max stack is left to the caller. Refuses bodies with
/// `jmp` ([`Error::Unsupported`]); a refused body is left as it was.
pub fn instrument(
    asm: &Assembly<'_>,
    signature: &[u8],
    token: u32,
    body: &mut MethodBody,
) -> Result<Outcome> {
    instrument_with(asm, signature, token, body, wrap_scanned_stored)
}

/// The wrapping step of [`instrument`]: [`wrap_scanned_stored`], or in the tests its
/// general path alone.
type WrapStep = fn(&mut MethodBody, Returns, &CodeScan, &StoredCode<'_>) -> Result<Wrapped>;

/// [`instrument`] with the wrapping step given.
#[inline(always)]
fn instrument_with(
    asm: &Assembly<'_>,
    signature: &[u8],
    token: u32,
    body: &mut MethodBody,
    wrap: WrapStep,
) -> Result<Outcome> {
    // One pass: the `ret`s and `tail.` prefixes the wrapping edits, and whether a `jmp`
    // makes the body unwrappable (checked first: nothing is edited then).
    let scan = CodeScan::of(&body.instrs);
    if scan.has_jmp {
        return Err(Error::Unsupported {
            what: "jmp cannot be placed inside a try block",
        });
    }
    let rets = scan.rets.len();
    let (summary, ret_type) = summarize_method_sig_and_return_type(signature)?;
    let returns_value = summary.returns_value;
    let returns = if returns_value {
        // Byte level, without decoding the signatures into trees: the return type's
        // bytes become the new local's type.
        let locals = match body.local_var_sig {
            0 => &[0x07, 0x00][..],
            sig => asm.standalone_sig(sig)?,
        };
        // Check the extended signature encodes (`LocalVarSig::append_to_blob` would now
        // build it for a profiler to emit for a token).
        let local = LocalVarSig::check_append_to_blob(locals, ret_type)?;
        Returns::Value { local }
    } else {
        Returns::Void
    };
    // The injected code, in stored form: `ldc.i4 token; call hook` (shortest `ldc.i4`
    // form) on entry and in the finally handler, and `ldloc local; call RETURN_HOOK`
    // starting the epilogue of value-returning methods, so every normal exit runs it
    // (what `inject_epilogue` after the wrap would do).
    let id = stored::ldc_i4(token as i32);
    let epilogue = match returns {
        Returns::Value { local } => [
            stored::ldloc(local),
            stored::with_token(OpCode::Call, RETURN_HOOK),
        ],
        // Not used.
        Returns::Void => [id; 2],
    };
    let code = StoredCode {
        entry: &[id, stored::with_token(OpCode::Call, ENTER_HOOK)],
        exit: &[id, stored::with_token(OpCode::Call, EXIT_HOOK)],
        epilogue: &epilogue[..if returns_value { 2 } else { 0 }],
    };
    // The wrap refuses before its first edit; the body names the extended locals only
    // once it is wrapped, so that a refused body is left as it was.
    let wrapped = wrap(body, returns, &scan, &code)?;
    if returns_value {
        body.local_var_sig = NEW_LOCALS_TOKEN;
    }
    Ok(Outcome {
        rets,
        local_added: returns_value,
        tails: wrapped.tail_prefixes_removed,
    })
}

/// Computes the max stack, encodes, re-decodes, re-verifies and checks the IL map.
/// Returns the number of IL-map entries checked.
fn check_rewritten(
    resolver: &impl CallSiteResolver,
    original: &MethodBody,
    body: &mut MethodBody,
    again: &mut MethodBody,
    (encoder, decoder, analyzer, bytes): (
        &mut Encoder,
        &mut Decoder,
        &mut StackAnalyzer,
        &mut Vec<u8>,
    ),
    returns_value: bool,
) -> Result<usize> {
    analyzer.apply_max_stack(body, resolver, MaxStackMode::Compute, Some(returns_value))?;
    body.validate_clauses()?;
    bytes.clear();
    encoder.encode(body, bytes)?;
    let used = decoder.decode_into(bytes, again)?;
    if used != bytes.len() {
        return Err(Error::Unencodable {
            what: "re-decoding consumed a different number of bytes",
        });
    }
    again.validate_clauses()?;
    let verified = analyzer.analyze(again, resolver, Some(returns_value))?;
    if verified.max_stack() != again.max_stack {
        return Err(Error::Unencodable {
            what: "re-decoded body's max stack differs from its analysis",
        });
    }

    // IL map: one entry per surviving original instruction, in code order, each at an
    // instruction boundary of the re-decoded code, at or before the instruction's new
    // home, with only injected instructions in between.
    let offsets = encoder.code_offsets(body)?.to_vec();
    let map = IlMap::from_offsets(body, &offsets);
    let surviving = (0..original.instrs.len())
        .filter(|&i| body.instrs.contains(crate::graph::InstrId(i as u32)))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transform::wrap_scanned_stored_linked;

    /// [`instrument`] (the one-pass wrap, the hook code in stored form) gives, id for id,
    /// what the edit-by-edit wrap gives with the same code, with the same outcome or
    /// refusal, on every distinct body of System.Private.CoreLib.
    #[test]
    fn instrument_is_the_edit_by_edit_wrap_on_real_bodies() {
        let path = ilrewrite_corpus::corelib().expect("a .NET 3.1 runtime");
        let data = std::fs::read(&path).expect("reads");
        let asm = Assembly::parse(&data).expect("parses");
        let (mut seen, mut checked) = (HashSet::new(), 0);
        let mut decoder = Decoder::new();
        for method in asm.methods().flatten() {
            let Some(code) = method.body else { continue };
            if !method.is_il() || !seen.insert(method.rva) {
                continue;
            }
            let mut fast = MethodBody::new();
            decoder.decode_into(code, &mut fast).expect("decodes");
            let mut slow = fast.clone();
            let (sig, token) = (method.signature, method.token);
            let a = instrument(&asm, sig, token, &mut fast);
            let b = instrument_with(&asm, sig, token, &mut slow, wrap_scanned_stored_linked);
            assert_eq!(a, b, "{token:08x}");
            assert_eq!(format!("{fast:?}"), format!("{slow:?}"), "{token:08x}");
            checked += 1;
        }
        assert!(checked > 17_000, "{checked}");
    }

    /// A body the wrap refuses (nothing but `tail.` prefixes, here) is left exactly as it
    /// was, also when the method returns a value and would have got a return-value local.
    #[test]
    fn a_refused_body_of_a_value_returning_method_is_left_as_it_was() {
        let path = ilrewrite_corpus::corelib().expect("a .NET 3.1 runtime");
        let data = std::fs::read(&path).expect("reads");
        let asm = Assembly::parse(&data).expect("parses");
        // static int32 M(): returns a value, no locals yet.
        let signature = [0x00, 0x00, 0x08];
        // Tiny header, code `tail. tail.` (FE 14 FE 14).
        let mut body =
            MethodBody::decode(&[(4 << 2) | 2, 0xFE, 0x14, 0xFE, 0x14]).expect("decodes");
        let before = format!("{body:?}");
        assert!(matches!(
            instrument(&asm, &signature, 0x0600_0001, &mut body),
            Err(Error::Unsupported { .. })
        ));
        assert_eq!(body.local_var_sig, 0);
        assert_eq!(format!("{body:?}"), before);
    }
}

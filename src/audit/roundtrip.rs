//! Decode and re-encode every method body of an assembly, byte for byte.

use crate::body::{Decoder, Encoder, MethodBody};
use crate::pe::Assembly;
use crate::sig::LocalVarSig;
use std::collections::{HashMap, HashSet};
use std::fmt;

use super::Failure;

/// Counts gathered over one or more assemblies.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RoundTripReport {
    /// Assemblies read.
    pub assemblies: usize,
    /// MethodDefs with a body (bodies shared by several methods are counted each time).
    pub methods: usize,
    /// Distinct bodies (by RVA) decoded and re-encoded.
    pub bodies: usize,
    /// Distinct bodies with a tiny header.
    pub tiny: usize,
    /// Distinct bodies with a fat header.
    pub fat: usize,
    /// Instructions in the distinct bodies.
    pub instructions: usize,
    /// Instructions summed over every method (a shared body counts once per method).
    pub method_instructions: usize,
    /// Distinct bodies with at least one EH clause.
    pub bodies_with_eh: usize,
    /// EH clauses decoded.
    pub clauses: usize,
    /// Bytes of IL code (excluding headers and EH sections).
    pub code_bytes: usize,
    /// Bytes of whole bodies (headers, code, padding, EH sections).
    pub body_bytes: usize,
    /// Distinct LocalVarSig blobs parsed and re-encoded.
    pub local_sigs: usize,
    /// Everything that failed (empty means every body and signature round-tripped).
    pub failures: Vec<Failure>,
}

impl RoundTripReport {
    /// Adds the counts of `other`.
    pub fn merge(&mut self, other: RoundTripReport) {
        self.assemblies += other.assemblies;
        self.methods += other.methods;
        self.bodies += other.bodies;
        self.tiny += other.tiny;
        self.fat += other.fat;
        self.instructions += other.instructions;
        self.method_instructions += other.method_instructions;
        self.bodies_with_eh += other.bodies_with_eh;
        self.clauses += other.clauses;
        self.code_bytes += other.code_bytes;
        self.body_bytes += other.body_bytes;
        self.local_sigs += other.local_sigs;
        self.failures.extend(other.failures);
    }
}

impl fmt::Display for RoundTripReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "assemblies {}, methods {}, bodies {} (tiny {}, fat {}), instructions {} \
             ({} over all methods), bodies with EH {}, EH clauses {}, IL bytes {}, LocalVarSigs {}, failures {}",
            self.assemblies,
            self.methods,
            self.bodies,
            self.tiny,
            self.fat,
            self.instructions,
            self.method_instructions,
            self.bodies_with_eh,
            self.clauses,
            self.code_bytes,
            self.local_sigs,
            self.failures.len()
        )
    }
}

/// Decodes every distinct method body of `asm`, re-encodes it (copying the unedited code,
/// and again deriving it from the instructions) and compares the bytes with the original; parses and re-encodes every LocalVarSig the bodies use. `name` labels
/// failures.
pub fn round_trip_assembly(name: &str, asm: &Assembly<'_>) -> RoundTripReport {
    let mut report = RoundTripReport {
        assemblies: 1,
        ..Default::default()
    };
    let fail = |report: &mut RoundTripReport, token: u32, error: String| {
        report.failures.push(Failure {
            assembly: name.to_string(),
            token,
            error,
        });
    };
    // Instruction count of each body decoded so far, by RVA.
    let mut seen_rvas: HashMap<u32, usize> = HashMap::new();
    let mut seen_sigs = HashSet::new();
    let mut decoder = Decoder::new();
    let mut encoder = Encoder::new();
    let mut rederiving = Encoder::rederiving();
    let mut body = MethodBody::new();
    let mut out = Vec::new();
    let mut sig_out = Vec::new();
    for method in asm.methods() {
        let method = match method {
            Ok(m) => m,
            Err(e) => {
                fail(&mut report, 0, format!("metadata: {e}"));
                continue;
            }
        };
        let Some(bytes) = method.body else { continue };
        if !method.is_il() {
            continue;
        }
        report.methods += 1;
        if let Some(&count) = seen_rvas.get(&method.rva) {
            report.method_instructions += count;
            continue;
        }
        report.bodies += 1;
        let used = match decoder.decode_into(bytes, &mut body) {
            Ok(used) => used,
            Err(e) => {
                fail(&mut report, method.token, format!("decode: {e}"));
                continue;
            }
        };
        if body.has_tiny_format() {
            report.tiny += 1;
        } else {
            report.fat += 1;
        }
        seen_rvas.insert(method.rva, body.instrs.len());
        report.instructions += body.instrs.len();
        report.method_instructions += body.instrs.len();
        report.clauses += body.clauses.len();
        report.bodies_with_eh += usize::from(!body.clauses.is_empty());
        report.code_bytes += body.original_code_size() as usize;
        report.body_bytes += used;
        // Both ways of encoding must give the original bytes: copying the unedited code
        // (what a reused encoder does) and deriving it from the instructions.
        let mut encoded = true;
        for (encoder, how) in [
            (&mut encoder, "encode"),
            (&mut rederiving, "encode from the instructions"),
        ] {
            out.clear();
            if let Err(e) = encoder.encode(&body, &mut out) {
                fail(&mut report, method.token, format!("{how}: {e}"));
                encoded = false;
                break;
            }
            if out[..] != bytes[..used] {
                let at = out
                    .iter()
                    .zip(&bytes[..used])
                    .position(|(a, b)| a != b)
                    .unwrap_or(out.len().min(used));
                fail(
                    &mut report,
                    method.token,
                    format!(
                        "{how}: {} bytes differ from the original {} bytes at body offset {at:#x}",
                        out.len(),
                        used
                    ),
                );
            }
        }
        if !encoded {
            continue;
        }
        if body.local_var_sig != 0 && seen_sigs.insert(body.local_var_sig) {
            report.local_sigs += 1;
            let result = asm.standalone_sig(body.local_var_sig).and_then(|blob| {
                let sig = LocalVarSig::parse(blob)?;
                sig_out.clear();
                sig.encode(&mut sig_out)?;
                Ok(sig_out[..] == blob[..])
            });
            match result {
                Ok(true) => {}
                Ok(false) => fail(
                    &mut report,
                    method.token,
                    format!(
                        "LocalVarSig 0x{:08x} re-encodes differently",
                        body.local_var_sig
                    ),
                ),
                Err(e) => fail(
                    &mut report,
                    method.token,
                    format!("LocalVarSig 0x{:08x}: {e}", body.local_var_sig),
                ),
            }
        }
    }
    report
}

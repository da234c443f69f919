//! The state machine against a model of the runtime's ReJIT (CoreCLR 3.1's `rejit.cpp`
//! and the behaviour measured on it): IL versions that are reused until the runtime asks
//! for their IL, parameters asked at the next call on the calling thread, compilations
//! finishing later and in any order, reverts taking effect with no callback, errors at
//! request and at compile time, callers re-JIT-compiled because they inlined a method,
//! modules unloaded and their assembly loaded again.
//!
//! Random sequences of the profiler's wishes, batches and runtime steps; then every
//! batch is made and every method called until nothing is left. Checked: no batch
//! names a method twice; what the machine calls active is a version the runtime has;
//! and in the end every method runs the IL wanted (the model's own record of what it
//! was handed), or has a failure.

use std::collections::{BTreeMap, HashSet};

use proptest::prelude::*;

use super::machine::{
    FailedAt, IlTarget, MethodKey, ReJitBatch, ReJitFailure, ReJitMachine, ReJitStage, ReloadPolicy,
};
use crate::clr::sys::{FunctionID, HResult, ModuleID, ReJITID};

type T = IlTarget<u8>;

/// The plan a first JIT applies to a method no one asked about (the profiler's
/// configured instrumentation), for the methods it wants.
const STATIC: T = IlTarget::Plan(0);

/// One IL version the model runtime made for a method.
#[derive(Debug, Clone)]
struct Version {
    id: ReJITID,
    /// The IL handed over; `None` while the runtime has not asked.
    il: Option<T>,
}

/// The model runtime's view of one method.
#[derive(Debug, Clone, Default)]
struct Method {
    /// Its default IL, set by its first JIT (`None`: never called).
    default_il: Option<T>,
    versions: Vec<Version>,
    /// The active version (index), `None` for the default IL.
    active: Option<usize>,
    /// A method of a dynamic module: every request fails.
    dynamic: bool,
    /// The first JIT's usual rewrite changes it.
    static_wanted: bool,
}

impl Method {
    /// What a call runs now (after any compilation it triggers).
    fn runs(&self) -> T {
        match self.active {
            Some(i) => self.versions[i]
                .il
                .clone()
                .expect("a called version has IL"),
            None => self.default_il.clone().unwrap_or(IlTarget::File),
        }
    }
}

#[derive(Debug, Clone)]
enum Step {
    Want(usize, T),
    ReJitBatch,
    ReJitCall(usize),
    Finish(usize),
    TierUp(usize),
    Reload(usize),
    Renew(usize),
}

fn target() -> impl Strategy<Value = T> {
    prop_oneof![Just(IlTarget::File), (0u8..3).prop_map(IlTarget::Plan)]
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (0..8usize, target()).prop_map(|(m, t)| Step::Want(m, t)),
        3 => Just(Step::ReJitBatch),
        4 => (0..8usize).prop_map(Step::ReJitCall),
        3 => (0..8usize).prop_map(Step::Finish),
        1 => (0..8usize).prop_map(Step::TierUp),
        1 => (0..2usize).prop_map(Step::Reload),
        1 => (0..8usize).prop_map(Step::Renew),
    ]
}

/// Two assemblies of four methods each; assembly 1's last method is in a dynamic
/// module's image in the model (so every request for it fails).
struct World {
    machine: ReJitMachine<u8, usize>,
    methods: BTreeMap<MethodKey, Method>,
    /// The module each assembly is loaded as now.
    modules: [ModuleID; 2],
    next_module: ModuleID,
    next_rejit: ReJITID,
    next_function: FunctionID,
    /// Compilations started (parameters given), not finished: (method, version id).
    compiling: Vec<(MethodKey, ReJITID)>,
    /// Makes some rewrites fail (the fallback is handed over); `None`: none does.
    chaos: Option<u32>,
}

const REWRITE_FAILED: HResult = HResult::E_FAIL;

impl World {
    fn new(chaos: Option<u32>) -> World {
        World::with_reverts(chaos, true)
    }

    /// A world whose machine uses `RequestRevert` (`reverts`) or never does.
    fn with_reverts(chaos: Option<u32>, reverts: bool) -> World {
        let machine = ReJitMachine::new(ReloadPolicy::Rerequest);
        let mut world = World {
            machine: match reverts {
                true => machine,
                false => machine.without_reverts(),
            },
            methods: BTreeMap::new(),
            modules: [0; 2],
            next_module: 0x1000,
            next_rejit: 2,
            next_function: 0x7000,
            compiling: Vec::new(),
            chaos,
        };
        world.load(0);
        world.load(1);
        world
    }

    fn load(&mut self, assembly: usize) {
        let module = self.next_module;
        self.next_module += 0x100;
        self.modules[assembly] = module;
        for row in 1..=4u32 {
            let key = MethodKey {
                module,
                token: 0x0600_0000 | row,
            };
            self.methods.insert(
                key,
                Method {
                    dynamic: assembly == 1 && row == 4,
                    static_wanted: row % 2 == 1,
                    ..Method::default()
                },
            );
        }
        self.machine.module_loaded(module, assembly);
    }

    fn key(&self, index: usize) -> MethodKey {
        MethodKey {
            module: self.modules[index / 4],
            token: 0x0600_0001 + (index % 4) as u32,
        }
    }

    /// The default IL the profiler would pass for a method the machine does not know:
    /// the first JIT's, or the file's for a method not compiled yet.
    fn default_of(&self, key: MethodKey) -> T {
        self.methods[&key]
            .default_il
            .clone()
            .unwrap_or(IlTarget::File)
    }

    fn want(&mut self, index: usize, target: T) {
        let key = self.key(index);
        let default = self.default_of(key);
        self.machine.want(key, target, default);
    }

    fn batch(&mut self) {
        let batch = self.machine.take_batch();
        check_batch(&batch);
        for &key in &batch.rejit {
            self.request(key, true);
        }
        for &key in &batch.revert {
            let Some(method) = self.methods.get_mut(&key) else {
                continue;
            };
            if method.dynamic {
                // The early checks report through ReJITError; the status stays S_OK.
                self.machine
                    .rejit_error(key, 0, HResult::CORPROF_E_MODULE_IS_DYNAMIC);
            } else {
                method.active = None;
            }
            self.machine.revert_done(key, HResult::S_OK);
        }
    }

    /// `RequestReJIT` (with inliners) of `key`: a new version, or the active one reused
    /// while its IL was never asked for. `inliners`: a caller that inlined it (another
    /// compiled method of its module, chosen by the model) is re-JIT-compiled too.
    fn request(&mut self, key: MethodKey, inliners: bool) {
        let Some(method) = self.methods.get_mut(&key) else {
            return;
        };
        if method.dynamic {
            self.machine
                .rejit_error(key, 0, HResult::CORPROF_E_MODULE_IS_DYNAMIC);
            return;
        }
        let reuse = method
            .active
            .is_some_and(|i| method.versions[i].il.is_none());
        if !reuse {
            method.versions.push(Version {
                id: self.next_rejit,
                il: None,
            });
            self.next_rejit += 1;
            method.active = Some(method.versions.len() - 1);
        }
        if inliners && key.token % 2 == 0 {
            let caller = MethodKey {
                module: key.module,
                token: key.token - 1,
            };
            if self
                .methods
                .get(&caller)
                .is_some_and(|m| m.default_il.is_some())
            {
                self.request(caller, false);
            }
        }
    }

    /// A call of `index`: its first JIT, then the parameters of a version whose IL
    /// was never asked for, and a compilation started.
    fn call(&mut self, index: usize) {
        let key = self.key(index);
        self.call_key(key);
    }

    fn call_key(&mut self, key: MethodKey) {
        let Some(method) = self.methods.get(&key) else {
            return;
        };
        if method.default_il.is_none() {
            let usual = if method.static_wanted {
                STATIC
            } else {
                IlTarget::File
            };
            let given = self.machine.first_jit_target(key).unwrap_or(usual);
            self.methods.get_mut(&key).unwrap().default_il = Some(given.clone());
            self.machine.first_jit_done(key, given);
        }
        let method = &self.methods[&key];
        let Some(active) = method.active else { return };
        if method.versions[active].il.is_some() {
            return;
        }
        let unknown = self.default_of(key);
        let parameters = self.machine.parameters(key, unknown);
        let fails = self.chaos.is_some_and(|c| c % 7 == 3);
        self.chaos = self
            .chaos
            .map(|c| c.wrapping_mul(1_103_515_245).wrapping_add(12_345) >> 3);
        let given = if fails && parameters.target != parameters.fallback {
            self.machine
                .rewrite_failed(key, parameters.fallback.clone(), REWRITE_FAILED);
            parameters.fallback
        } else {
            parameters.target
        };
        let method = self.methods.get_mut(&key).unwrap();
        method.versions[active].il = Some(given.clone());
        let id = method.versions[active].id;
        // Its first instantiation starts compiling on this thread.
        self.machine.compilation_started(key, id, Some(given));
        self.compiling.push((key, id));
    }

    /// The compilation started first for `index`'s method (or the oldest one) finishes.
    fn finish(&mut self, index: usize) {
        if self.compiling.is_empty() {
            return;
        }
        let key = self.key(index);
        let at = self
            .compiling
            .iter()
            .position(|(k, _)| *k == key)
            .unwrap_or(0);
        self.finish_at(at);
    }

    fn finish_at(&mut self, at: usize) {
        let (key, id) = self.compiling.remove(at);
        let function = self.next_function;
        self.next_function += 8;
        if self.methods.contains_key(&key) {
            self.machine
                .compilation_finished(key, function, id, HResult::S_OK);
        }
    }

    /// The active version compiles again (tier-up, another instantiation).
    fn tier_up(&mut self, index: usize) {
        let key = self.key(index);
        let Some(method) = self.methods.get(&key) else {
            return;
        };
        if let Some(active) = method.active
            && method.versions[active].il.is_some()
        {
            let id = method.versions[active].id;
            self.next_function += 8;
            self.machine
                .compilation_finished(key, self.next_function, id, HResult::S_OK);
        }
    }

    fn reload(&mut self, assembly: usize) {
        let old = self.modules[assembly];
        self.machine.module_unloaded(old);
        self.methods.retain(|k, _| k.module != old);
        self.compiling.retain(|(k, _)| k.module != old);
        self.load(assembly);
    }

    fn run(&mut self, step: &Step) {
        match step {
            Step::Want(m, t) => self.want(*m, t.clone()),
            Step::ReJitBatch => self.batch(),
            Step::ReJitCall(m) => self.call(*m),
            Step::Finish(m) => self.finish(*m),
            Step::TierUp(m) => self.tier_up(*m),
            Step::Reload(a) => self.reload(*a),
            Step::Renew(m) => {
                let key = self.key(*m);
                let default = self.default_of(key);
                self.machine.renew(key, STATIC, default);
            }
        }
        self.check_active();
    }

    /// What the machine calls active is a version the runtime has, with that IL.
    fn check_active(&self) {
        for (key, record) in self.machine.records() {
            if let ReJitStage::Active { target, rejit, .. } = record.stage() {
                let method = &self.methods[&key];
                let version = method.versions.iter().find(|v| v.id == *rejit);
                let version = version.unwrap_or_else(|| panic!("{key:?}: no version {rejit}"));
                assert_eq!(version.il.as_ref(), Some(target), "{key:?}");
            }
        }
    }

    /// Every batch made, every method called, every compilation finished, until
    /// nothing is left.
    fn quiesce(&mut self) {
        for _ in 0..6 {
            self.batch();
            let keys: Vec<MethodKey> = self.methods.keys().copied().collect();
            for key in keys {
                self.call_key(key);
            }
            while !self.compiling.is_empty() {
                self.finish_at(0);
            }
            if !self.machine.has_pending() {
                break;
            }
        }
        assert!(!self.machine.has_pending() || self.machine.take_batch().is_empty());
    }

    /// In the end every method the machine knows runs what is wanted and is settled,
    /// or has a failure.
    fn check_settled(&self) {
        for (key, record) in self.machine.records() {
            let method = &self.methods[&key];
            if record.failure().is_some() {
                assert!(method.dynamic || record.failure().unwrap().status == REWRITE_FAILED);
                continue;
            }
            assert_eq!(&method.runs(), record.desired(), "{key:?}: {record:?}");
            assert!(record.settled(), "{key:?}: {record:?}");
            match record.stage() {
                ReJitStage::Active { .. } | ReJitStage::Original | ReJitStage::Reverted => {}
                other => panic!("{key:?} ends {other:?}"),
            }
        }
    }
}

fn check_batch(batch: &ReJitBatch) {
    let mut seen = HashSet::new();
    for key in batch.rejit.iter().chain(&batch.revert) {
        assert!(seen.insert(*key), "{key:?} twice in one batch: {batch:?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// Random wishes, batches and runtime steps in any order the runtime allows: no
    /// batch names a method twice, what is active exists, and everything settles.
    #[test]
    fn random_sequences_settle_on_what_is_wanted(
        steps in proptest::collection::vec(step(), 0..80),
        chaos in any::<u32>(),
        reverts in any::<bool>(),
    ) {
        let mut world = World::with_reverts(Some(chaos), reverts);
        for step in &steps {
            world.run(step);
        }
        world.quiesce();
        world.check_active();
        world.check_settled();
    }
}

/// Hand-picked sequences, each a fact of the runtime the machine relies on.
mod cases {
    use super::*;

    /// A module loaded again whose methods are all JIT-compiled gets what was wanted of
    /// its assembly at each method's first JIT, with no request: nothing is queued, and
    /// a first JIT that compiled the wish leaves the method settled.
    #[test]
    fn a_jit_only_module_loaded_again_gets_the_wish_at_first_jit() {
        let mut m: ReJitMachine<u8, usize> = ReJitMachine::default();
        m.module_loaded(0x10, 7);
        let old = MethodKey {
            module: 0x10,
            token: 0x0600_0001,
        };
        m.want(old, IlTarget::Plan(3), IlTarget::File);
        m.take_batch();
        m.module_unloaded(0x10);
        m.module_loaded_jit_only(0x20, 7);
        let new = MethodKey {
            module: 0x20,
            token: 0x0600_0001,
        };
        assert!(m.take_batch().is_empty());
        assert_eq!(m.first_jit_target(new), Some(IlTarget::Plan(3)));
        m.first_jit_done(new, IlTarget::Plan(3));
        assert!(m.take_batch().is_empty());
        assert!(m.get(new).is_some_and(|r| r.settled()));
        // With requests (a ReadyToRun module may run precompiled code): requested.
        m.module_unloaded(0x20);
        m.module_loaded(0x30, 7);
        let r2r = MethodKey {
            module: 0x30,
            token: 0x0600_0001,
        };
        assert_eq!(m.take_batch().rejit, [r2r]);
    }

    /// A module whose compiled code the runtime never replaces (a collectible one): what
    /// was wanted of its assembly is given at each method's first JIT, no call is ever
    /// queued for it, and a method wanted to run what it does not (a change after its
    /// first JIT, or one a first JIT cannot give) says why, until it is wanted to run
    /// what it runs again.
    #[test]
    fn a_module_whose_code_is_never_replaced_gets_no_call_and_says_why() {
        let mut m: ReJitMachine<u8, usize> = ReJitMachine::default();
        m.module_loaded_jit_only(0x10, 7);
        let key = |module: ModuleID, row: u32| MethodKey {
            module,
            token: 0x0600_0000 | row,
        };
        m.want(key(0x10, 1), IlTarget::Plan(3), IlTarget::File);
        m.want(key(0x10, 2), IlTarget::Plan(5), IlTarget::File);
        assert_eq!(m.take_batch().rejit.len(), 2);
        m.module_unloaded(0x10);
        m.module_loaded_fixed(0x20, 7);
        assert!(m.take_batch().is_empty());
        // Nothing compiled yet: no failure.
        assert_eq!(m.get(key(0x20, 1)).map(|r| r.failure()), Some(None));
        assert_eq!(m.first_jit_target(key(0x20, 1)), Some(IlTarget::Plan(3)));
        m.first_jit_done(key(0x20, 1), IlTarget::Plan(3));
        assert!(m.get(key(0x20, 1)).is_some_and(|r| r.settled()));
        // A first JIT that could not give all of it (code-generation flags): failed.
        m.first_jit_done(key(0x20, 2), IlTarget::Plan(4));
        let collectible = |m: &ReJitMachine<u8, usize>, row, at| {
            m.get(key(0x20, row)).and_then(|r| r.failure())
                == Some(ReJitFailure {
                    status: HResult::CORPROF_E_FUNCTION_IS_COLLECTIBLE,
                    at,
                    function: 0,
                })
        };
        assert!(collectible(&m, 2, FailedAt::Request));
        // Changes after the first JIT: no call, the failure the runtime would give.
        m.want(key(0x20, 1), IlTarget::Plan(6), IlTarget::File);
        assert!(m.take_batch().is_empty() && !m.has_pending());
        assert!(collectible(&m, 1, FailedAt::Request));
        m.want(key(0x20, 1), IlTarget::File, IlTarget::File);
        assert!(collectible(&m, 1, FailedAt::Request));
        // Back to what it runs: settled, no failure.
        m.want(key(0x20, 1), IlTarget::Plan(3), IlTarget::File);
        assert!(
            m.get(key(0x20, 1))
                .is_some_and(|r| r.settled() && r.failure().is_none())
        );
        // A method never wanted before, changed after its first JIT (the file's IL).
        m.want(key(0x20, 9), IlTarget::Plan(1), IlTarget::File);
        assert!(collectible(&m, 9, FailedAt::Request));
        assert!(m.take_batch().is_empty());
        // Unloaded: a module loaded again at the same address is an ordinary one.
        m.module_unloaded(0x20);
        m.module_loaded(0x20, 7);
        assert_eq!(m.take_batch().rejit.len(), 3);
    }

    /// Without reverts, going back to the default IL is a new version built from it,
    /// never a `RequestRevert` (which would reactivate the first native code, with the
    /// copies of callees it inlined then).
    #[test]
    fn without_reverts_the_default_il_comes_back_as_a_new_version() {
        let mut m: ReJitMachine<u8, usize> = ReJitMachine::default().without_reverts();
        let key = MethodKey {
            module: 0x10,
            token: 0x0600_0001,
        };
        m.want(key, IlTarget::Plan(1), IlTarget::File);
        assert_eq!(m.take_batch().rejit, [key]);
        let p = m.parameters(key, IlTarget::File);
        m.compilation_started(key, 5, Some(p.target));
        m.compilation_finished(key, 0x70, 5, HResult::S_OK);
        m.want(key, IlTarget::File, IlTarget::File);
        let batch = m.take_batch();
        assert_eq!((batch.rejit, batch.revert), (vec![key], vec![]));
        assert_eq!(m.parameters(key, IlTarget::File).target, IlTarget::File);
        // With reverts (the default), the same wish is a RequestRevert.
        let mut m: ReJitMachine<u8, usize> = ReJitMachine::default();
        m.want(key, IlTarget::Plan(1), IlTarget::File);
        m.take_batch();
        let p = m.parameters(key, IlTarget::File);
        m.compilation_started(key, 5, Some(p.target));
        m.compilation_finished(key, 0x70, 5, HResult::S_OK);
        m.want(key, IlTarget::File, IlTarget::File);
        let batch = m.take_batch();
        assert_eq!((batch.rejit, batch.revert), (vec![], vec![key]));
    }

    fn world() -> World {
        World::new(None)
    }

    #[test]
    fn a_pre_rejit_waits_requested_until_the_first_call() {
        let mut w = world();
        w.want(1, IlTarget::Plan(2));
        w.batch();
        let key = w.key(1);
        assert_eq!(w.machine.get(key).unwrap().stage(), &ReJitStage::Requested);
        w.call(1);
        w.finish(1);
        let record = w.machine.get(key).unwrap();
        assert!(matches!(
            record.stage(),
            ReJitStage::Active {
                target: IlTarget::Plan(2),
                ..
            }
        ));
        // Its first JIT already compiled the wanted IL (no window of original calls).
        assert_eq!(w.methods[&key].default_il, Some(IlTarget::Plan(2)));
    }

    #[test]
    fn a_target_changed_before_the_runtime_asks_needs_no_second_request() {
        let mut w = world();
        w.call(1);
        w.want(1, IlTarget::Plan(1));
        assert_eq!(w.machine.take_batch().rejit.len(), 1);
        w.want(1, IlTarget::Plan(2));
        assert!(w.machine.take_batch().is_empty());
        w.request(w.key(1), false);
        w.call(1);
        w.finish(1);
        assert_eq!(w.methods[&w.key(1)].runs(), IlTarget::Plan(2));
    }

    #[test]
    fn back_to_the_default_il_is_a_revert_and_to_the_file_il_of_a_rewritten_method_a_rejit() {
        let mut w = world();
        // Method 0 is rewritten at its first JIT (the usual plan).
        w.call(0);
        let key = w.key(0);
        w.want(0, IlTarget::Plan(1));
        w.quiesce();
        w.want(0, STATIC);
        assert_eq!(w.machine.take_batch().revert, [key]);
        w.machine.revert_done(key, HResult::S_OK);
        w.methods.get_mut(&key).unwrap().active = None;
        w.want(0, IlTarget::File);
        let batch = w.machine.take_batch();
        assert_eq!(
            (batch.rejit.as_slice(), batch.revert.len()),
            (&[key][..], 0)
        );
        w.request(key, false);
        w.call(0);
        w.finish(0);
        assert_eq!(w.methods[&key].runs(), IlTarget::File);
        w.check_settled();
    }

    #[test]
    fn a_renewed_method_gets_a_new_version_of_what_is_wanted() {
        let mut w = world();
        w.want(1, IlTarget::Plan(1));
        w.quiesce();
        let key = w.key(1);
        let versions = w.methods[&key].versions.len();
        // Already running what is wanted: `want` asks nothing, `renew` a new version.
        w.want(1, IlTarget::Plan(1));
        assert!(w.machine.take_batch().is_empty());
        w.machine.renew(key, STATIC, IlTarget::File);
        assert_eq!(w.machine.take_batch().rejit, [key]);
        w.request(key, false);
        // Renewed again before the runtime asked: the coming build is fresh already.
        w.machine.renew(key, STATIC, IlTarget::File);
        assert!(w.machine.take_batch().is_empty());
        w.call(1);
        w.finish(1);
        assert_eq!(w.methods[&key].versions.len(), versions + 1);
        assert_eq!(w.methods[&key].runs(), IlTarget::Plan(1));
        w.check_settled();
        // A method with no record: what is given is wanted, and a version asked for.
        let fresh = w.key(2);
        w.machine.renew(fresh, STATIC, IlTarget::File);
        assert_eq!(w.machine.get(fresh).unwrap().desired(), &STATIC);
        assert_eq!(w.machine.take_batch().rejit, [fresh]);
    }

    #[test]
    fn a_dynamic_module_fails_at_request_with_its_hresult() {
        let mut w = world();
        w.want(7, IlTarget::Plan(1));
        w.batch();
        let failure = w.machine.get(w.key(7)).unwrap().failure().unwrap();
        assert_eq!(failure.status, HResult::CORPROF_E_MODULE_IS_DYNAMIC);
        assert_eq!(failure.at, super::super::machine::FailedAt::Request);
        // Nothing is asked again until the profiler asks again.
        assert!(w.machine.take_batch().is_empty());
        w.want(7, IlTarget::Plan(2));
        assert_eq!(w.machine.take_batch().rejit, [w.key(7)]);
    }

    #[test]
    fn an_inlining_caller_is_answered_with_its_own_il() {
        let mut w = world();
        w.call(0); // the caller, rewritten at its first JIT
        w.call(1);
        w.want(1, IlTarget::Plan(2));
        w.batch(); // method 1 (token ...02) re-JITs its caller, method 0, too
        w.call(0);
        w.call(1);
        w.quiesce();
        assert_eq!(w.methods[&w.key(0)].runs(), STATIC);
        assert_eq!(w.methods[&w.key(1)].runs(), IlTarget::Plan(2));
        assert!(w.methods[&w.key(0)].versions.len() == 1);
    }

    #[test]
    fn an_assembly_loaded_again_gets_what_was_wanted_requested() {
        let mut w = world();
        w.want(2, IlTarget::Plan(1));
        w.quiesce();
        w.reload(0);
        let key = w.key(2);
        assert_eq!(w.machine.get(key).unwrap().desired(), &IlTarget::Plan(1));
        assert_eq!(w.machine.take_batch().rejit, [key]);
        // Leave: nothing carried over.
        let mut leave: ReJitMachine<u8, usize> = ReJitMachine::new(ReloadPolicy::Leave);
        leave.module_loaded(1, 0);
        let key1 = MethodKey {
            module: 1,
            token: 0x0600_0001,
        };
        leave.want(key1, IlTarget::Plan(1), IlTarget::File);
        leave.module_unloaded(1);
        leave.module_loaded(2, 0);
        assert!(leave.is_empty() && leave.take_batch().is_empty());
    }

    #[test]
    fn late_reports_of_replaced_versions_change_nothing() {
        let mut m: ReJitMachine<u8, usize> = ReJitMachine::default();
        let key = MethodKey {
            module: 1,
            token: 0x0600_0001,
        };
        m.want(key, IlTarget::Plan(1), IlTarget::File);
        m.take_batch();
        let given = m.parameters(key, IlTarget::File).target;
        m.compilation_started(key, 5, Some(given));
        m.compilation_finished(key, 0x10, 5, HResult::S_OK);
        m.want(key, IlTarget::Plan(2), IlTarget::File);
        m.take_batch();
        let given = m.parameters(key, IlTarget::File).target;
        m.compilation_started(key, 6, Some(given));
        m.compilation_finished(key, 0x10, 6, HResult::S_OK);
        m.compilation_finished(key, 0x18, 5, HResult::S_OK);
        match m.get(key).unwrap().stage() {
            ReJitStage::Active {
                target,
                rejit,
                functions,
            } => {
                assert_eq!(
                    (target, *rejit, functions.as_slice()),
                    (&IlTarget::Plan(2), 6, &[0x10][..])
                );
            }
            other => panic!("{other:?}"),
        }
    }
}

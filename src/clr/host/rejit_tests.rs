//! The manager's ReJIT pieces that need no runtime: plans as targets, how a request's
//! edit joins the configured ones, how targets read in the dial's listing, options
//! written as words.

use std::sync::Arc;

use super::config::{OptionKind, OptionSpec, Options};
use super::hosting::{Wanted, merge};
use super::method::Interest;
use super::plan::{Plan, Request, describe};
use crate::clr::rejit::IlTarget;
use crate::clr::runtime::CodegenFlags;

const SPECS: [OptionSpec; 3] = [
    OptionSpec::new("factor", OptionKind::Integer),
    OptionSpec::new("quiet", OptionKind::Boolean),
    OptionSpec::new("names", OptionKind::Strings),
];

fn words(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn request(index: usize, pairs: &[(&str, &str)]) -> Request {
    Request {
        index,
        name: format!("m{index}"),
        options: Options::from_words("test", "m", &SPECS, &words(pairs)).expect("valid options"),
    }
}

fn indices(wanted: &[Wanted<'_>]) -> Vec<(usize, Interest)> {
    wanted.iter().map(|w| (w.index, w.interest)).collect()
}

/// A plan that edits nothing and sets no flag is the file's IL; any part makes it a plan.
#[test]
fn an_empty_plan_is_the_files_il() {
    let empty = Plan {
        configured: false,
        request: None,
        flags: CodegenFlags::NONE,
    };
    assert_eq!(empty.clone().into_target(), IlTarget::File);
    assert_eq!(
        Plan::CONFIGURED.into_target(),
        IlTarget::Plan(Plan::CONFIGURED)
    );
    let flagged = Plan {
        flags: CodegenFlags::NO_INLINING,
        ..empty.clone()
    };
    assert!(matches!(flagged.into_target(), IlTarget::Plan(_)));
    let requested = Plan {
        request: Some(Arc::new(request(0, &[]))),
        ..empty
    };
    assert!(matches!(requested.into_target(), IlTarget::Plan(_)));
}

/// Plans compare by value: the same method with the same option values (in any order)
/// is the same IL, so asking for it again changes nothing; another value is another IL.
#[test]
fn plans_compare_by_their_values() {
    let plan = |r: Request| Plan {
        configured: true,
        request: Some(Arc::new(r)),
        flags: CodegenFlags::NONE,
    };
    let a = plan(request(1, &[("factor", "3"), ("quiet", "true")]));
    let b = plan(request(1, &[("quiet", "true"), ("factor", "3")]));
    assert_eq!(a, b);
    assert_ne!(a, plan(request(1, &[("factor", "4"), ("quiet", "true")])));
    assert_ne!(a, plan(request(2, &[("factor", "3"), ("quiet", "true")])));
    assert_ne!(a, plan(request(1, &[("factor", "3")])));
    assert_ne!(
        a,
        Plan {
            flags: CodegenFlags::NO_OPTIMIZATIONS,
            ..b
        }
    );
}

/// A request's edit runs in its instrumentation method's place in editing order, with
/// the request's options; when that method also wants the method by configuration, it
/// edits once, with the request's options and its configured interest.
#[test]
fn a_request_joins_the_configured_edits_in_order_and_once() {
    let options = vec![Options::default(), Options::default(), Options::default()];
    let configured = [(0, Interest::Edit), (2, Interest::EditSingleRet)];
    let r1 = request(1, &[("factor", "3")]);
    let merged = merge(&options, &configured, Some(&r1));
    assert_eq!(
        indices(&merged),
        [
            (0, Interest::Edit),
            (1, Interest::Edit),
            (2, Interest::EditSingleRet)
        ]
    );
    assert_eq!(merged[1].options.integer("factor"), Some(3));
    assert_eq!(merged[0].options.integer("factor"), None);

    let r2 = request(2, &[("factor", "5")]);
    let merged = merge(&options, &configured, Some(&r2));
    assert_eq!(
        indices(&merged),
        [(0, Interest::Edit), (2, Interest::EditSingleRet)]
    );
    assert_eq!(merged[1].options.integer("factor"), Some(5));

    let r0 = request(0, &[]);
    assert_eq!(
        indices(&merge(&options, &[], Some(&r0))),
        [(0, Interest::Edit)]
    );
    assert_eq!(indices(&merge(&options, &configured, None)), configured);
    assert!(merge(&options, &[], None).is_empty());
}

/// The listing's words for a target.
#[test]
fn targets_read_as_their_parts() {
    assert_eq!(describe(&IlTarget::File), "file");
    assert_eq!(describe(&IlTarget::Plan(Plan::CONFIGURED)), "configured");
    let plan = Plan {
        configured: true,
        request: Some(Arc::new(request(1, &[("factor", "3"), ("names", "a,b")]))),
        flags: CodegenFlags::NO_INLINING,
    };
    assert_eq!(
        describe(&IlTarget::Plan(plan)),
        "configured+m1(factor=3,names=a,b) flags=no-inlining"
    );
    let flags_only = Plan {
        configured: false,
        request: None,
        flags: CodegenFlags::NO_OPTIMIZATIONS,
    };
    assert_eq!(
        describe(&IlTarget::Plan(flags_only)),
        "file flags=no-optimizations"
    );
}

/// Options written as words are read as the declared types; a key not declared, given
/// twice, or a value not of its type is refused with a message naming it.
#[test]
fn options_from_words_are_typed_and_checked() {
    let options = Options::from_words(
        "dial",
        "m",
        &SPECS,
        &words(&[("factor", "-7"), ("quiet", "false"), ("names", "x,y")]),
    )
    .expect("valid");
    assert_eq!(options.integer("factor"), Some(-7));
    assert_eq!(options.boolean("quiet"), Some(false));
    assert_eq!(
        options.strings("names"),
        Some(&["x".to_owned(), "y".to_owned()][..])
    );
    assert_eq!(options.words(), ["factor=-7", "quiet=false", "names=x,y"]);
    let refused = |pairs: &[(&str, &str)]| {
        Options::from_words("dial", "m", &SPECS, &words(pairs))
            .expect_err("refused")
            .to_string()
    };
    assert_eq!(
        refused(&[("factor", "three")]),
        "dial: option `factor` of \"m\" must be an integer, not \"three\""
    );
    assert_eq!(
        refused(&[("factor", "99999999999999999999")]),
        "dial: option `factor` of \"m\" must be an integer, not \"99999999999999999999\""
    );
    assert_eq!(
        refused(&[("quiet", "yes")]),
        "dial: option `quiet` of \"m\" must be true or false, not \"yes\""
    );
    assert_eq!(
        refused(&[("factor", "1"), ("factor", "2")]),
        "dial: option `factor` is given twice"
    );
    assert_eq!(
        refused(&[("other", "1")]),
        "dial: instrumentation method \"m\" has no option `other` (it takes factor, quiet, names)"
    );
}

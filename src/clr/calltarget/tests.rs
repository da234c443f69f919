use super::*;

#[test]
fn integrations_read_from_the_option_format() {
    let i = Integration::parse(
        "CallTargetApp.Statics::* => CallTargetIntegrations.Recorder, CallTargetIntegrations",
    )
    .unwrap();
    assert_eq!(
        i.target,
        Selector::parse("CallTargetApp.Statics::*").unwrap()
    );
    assert_eq!(i.type_name, "CallTargetIntegrations.Recorder");
    assert_eq!(
        i.assembly,
        HelperAssembly::new("CallTargetIntegrations", [0; 4])
    );
    let i = Integration::parse("A.B::M(int, string)=>X.Y,Z, Version=1.2.3.4").unwrap();
    assert_eq!(i.target.params().map(<[String]>::len), Some(2));
    assert_eq!(i.assembly, HelperAssembly::new("Z", [1, 2, 3, 4]));
}

#[test]
fn malformed_integrations_say_why() {
    for (text, why) in [
        ("A.B::M X.Y, Z", "no `=>`"),
        ("A.B::M => X.Y", "no `, Assembly`"),
        ("A.B::M => , Z", "top-level type"),
        ("A.B::M => X/Y, Z", "top-level type"),
        ("A.B::M => X.Y, ", "no assembly name"),
        ("A.B::M => X.Y, Z, Culture=neutral", "only `Version="),
        ("A.B::M => X.Y, Z, Version=1.2.3", "four numbers"),
        ("A.B::M => X.Y, Z, Version=1.2.3.70000", "four numbers"),
        (" => X.Y, Z", "selector"),
    ] {
        let e = Integration::parse(text).unwrap_err();
        assert!(e.contains(why), "{text}: {e}");
    }
}

#[test]
fn the_builder_keeps_integrations_and_targets() {
    let ct = CallTargetMethod::new()
        .named("ct")
        .with_integration(Integration::new(
            Selector::parse("A.B::M").unwrap(),
            "X.Y",
            HelperAssembly::new("Z", [1, 0, 0, 0]),
        ))
        .with_state_assembly(HelperAssembly::new("S", [2, 0, 0, 0]));
    assert_eq!(ct.name(), "ct");
    assert_eq!(ct.targets(), [Selector::parse("A.B::M").unwrap()]);
    let names: Vec<&str> = ct.assembly_references().iter().map(|a| a.name).collect();
    assert_eq!(names, ["S", "Z"]);
}

#[test]
fn a_request_may_repeat_the_started_integrations_not_change_them() {
    let ct = CallTargetMethod::new();
    let specs = ct.options().to_vec();
    // As a configuration's `options = { ... }` (TOML values).
    let options = |words: &[(&str, &str)]| {
        let values: Vec<String> = words.iter().map(|(k, v)| format!("{k} = {v}")).collect();
        let text = format!(
            "[[method]]\nname = \"calltarget\"\noptions = {{ {} }}\n",
            values.join(", ")
        );
        let configuration = crate::clr::Configuration::parse(&text, "test").unwrap();
        configuration.methods()[0]
            .options
            .checked("calltarget", &specs)
            .unwrap()
    };
    let started = options(&[("integrations", r#"["A::M => X.Y, Z"]"#)]);
    let _ = ct.started.set(ct.settle(&started).unwrap());
    assert!(ct.check_options(&options(&[])).is_ok());
    assert!(ct.check_options(&started).is_ok());
    for changed in [
        options(&[("integrations", r#"["A::N => X.Y, Z"]"#)]),
        options(&[("state_assembly", r#""S""#)]),
    ] {
        let e = ct.check_options(&changed).unwrap_err().to_string();
        assert!(e.contains("fixed at start"), "{e}");
    }
    // Malformed ones say why, as at start.
    let e = ct
        .check_options(&options(&[("integrations", r#"["A::M X.Y"]"#)]))
        .unwrap_err()
        .to_string();
    assert!(e.contains("no `=>`"), "{e}");
}

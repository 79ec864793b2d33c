//! Plugin settings (rule O1): `[plugins.NAME.settings]` read by the guest
//! through `wasi:config/store`, checked against the plugin's schema by
//! `check` and at load, every refusal naming the setting.

mod common;

use common::{TestConfig, run, texts};

fn call_echo(config: &TestConfig) -> std::process::Output {
    run(&[
        "call",
        "--config",
        config.path(),
        "echo",
        r#"{"text": "hi"}"#,
    ])
}

#[test]
fn o1_a_plugin_reads_its_settings_through_wasi_config() {
    let config = TestConfig::new("\n[plugins.template.settings]\nprefix = \">> \"\n");
    let out = run(&["check", "--config", config.path()]);
    assert!(out.status.success(), "{out:?}");
    assert!(texts(&out).0.contains("settings: prefix"), "{out:?}");
    let out = call_echo(&config);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(texts(&out).0, ">> hi\n");
    // Without settings the plugin reads nothing.
    let out = call_echo(&TestConfig::new(""));
    assert_eq!(texts(&out).0, "hi\n");
}

#[test]
fn o1_a_setting_the_plugins_schema_refuses_is_named_by_check_and_by_load() {
    for (settings, key, words) in [
        ("prefix = 5", "plugins.template.settings.prefix", "string"),
        (
            &format!("prefix = \"{}\"", "x".repeat(65)),
            "plugins.template.settings.prefix",
            "longer than 64",
        ),
        ("colour = \"red\"", "plugins.template.settings", "colour"),
    ] {
        let config = TestConfig::new(&format!("\n[plugins.template.settings]\n{settings}\n"));
        let out = run(&["check", "--config", config.path()]);
        let stderr = texts(&out).1;
        assert_eq!(out.status.code(), Some(1), "{settings}: {stderr}");
        assert!(
            stderr.starts_with(&format!("error: {key}: ")),
            "{settings}: {stderr}"
        );
        assert!(stderr.contains(words), "{settings}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        // Nothing runs with settings the schema refuses.
        let out = call_echo(&config);
        let stderr = texts(&out).1;
        assert_eq!(out.status.code(), Some(1), "{settings}: {stderr}");
        assert!(stderr.contains(key), "{settings}: {stderr}");
        assert!(stderr.contains(words), "{settings}: {stderr}");
    }
}

#[test]
fn o1_the_operators_schema_replaces_the_plugins_and_a_bad_one_is_named() {
    let config =
        TestConfig::new("\n[plugins.template.settings]\nprefix = \">> \"\ncolour = \"red\"\n");
    let dir = std::path::Path::new(config.path()).parent().unwrap();
    let text = std::fs::read_to_string(config.path()).unwrap();
    let with_schema = |schema: &str| {
        std::fs::write(dir.join("schema.json"), schema).unwrap();
        std::fs::write(
            config.path(),
            text.replacen(
                "[plugins.runaway]",
                "settings_schema = \"schema.json\"\n\n[plugins.runaway]",
                1,
            ),
        )
        .unwrap();
    };
    // The plugin's own schema refuses `colour`; the operator's allows it.
    with_schema(r#"{"type": "object", "properties": {"prefix": {"maxLength": 8}}}"#);
    let out = call_echo(&config);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(texts(&out).0, ">> hi\n");
    // And it is the one that judges.
    with_schema(r#"{"type": "object", "properties": {"prefix": {"maxLength": 1}}}"#);
    let out = run(&["check", "--config", config.path()]);
    assert!(
        texts(&out)
            .1
            .starts_with("error: plugins.template.settings.prefix: "),
        "{out:?}"
    );
    for (schema, words) in [
        ("{not json", "is not JSON"),
        (r#"{"type": 12}"#, "not a usable JSON Schema"),
    ] {
        with_schema(schema);
        let out = run(&["check", "--config", config.path()]);
        let stderr = texts(&out).1;
        assert!(
            stderr.starts_with("error: plugins.template.settings_schema: "),
            "{stderr}"
        );
        assert!(stderr.contains(words), "{stderr}");
    }
    std::fs::remove_file(dir.join("schema.json")).unwrap();
    let out = run(&["check", "--config", config.path()]);
    let stderr = texts(&out).1;
    assert!(
        stderr.starts_with("error: plugins.template.settings_schema: cannot read"),
        "{stderr}"
    );
}

#[test]
fn o1_a_value_json_cannot_hold_is_refused_naming_its_key() {
    let config = TestConfig::new("\n[plugins.template.settings]\nprefix = nan\n");
    let out = run(&["check", "--config", config.path()]);
    let stderr = texts(&out).1;
    assert!(
        stderr.starts_with("error: plugins.template.settings.prefix: NaN is not a number"),
        "{stderr}"
    );
}

#[test]
fn a2_o1_a_tenants_settings_and_secrets_are_checked_naming_the_full_key() {
    for (extra, key, words) in [
        (
            "[tenants.acme.settings.template]\nprefix = 5\n",
            "tenants.acme.settings.template.prefix",
            "string",
        ),
        (
            "[tenants.acme.settings.template]\ncolour = \"red\"\n",
            "tenants.acme.settings.template",
            "colour",
        ),
        (
            "[tenants.acme.settings.nope]\nprefix = \"x\"\n",
            "tenants.acme.settings.nope",
            "there is no [plugins.nope]",
        ),
        (
            "[tenants.acme.secrets]\ntoken = \"acme_token\"\n",
            "tenants.acme.secrets.token",
            "no plugin is granted a secret `token`",
        ),
    ] {
        let config = TestConfig::new(&format!(
            "\n[tenants.acme]\nsubjects = [\"alice\"]\n\n{extra}"
        ));
        let out = run(&["check", "--config", config.path()]);
        let stderr = texts(&out).1;
        assert_eq!(out.status.code(), Some(1), "{extra}: {stderr}");
        assert!(
            stderr.starts_with(&format!("error: {key}: ")),
            "{extra}: {stderr}"
        );
        assert!(stderr.contains(words), "{extra}: {stderr}");
        // Nothing runs with settings the schema refuses.
        let out = call_echo(&config);
        assert_eq!(out.status.code(), Some(1), "{extra}: {}", texts(&out).1);
    }
    // A tenant's settings the schema accepts check, beside the plugin's.
    let config = TestConfig::new(
        "\n[plugins.template.settings]\nprefix = \"> \"\n\n[tenants.acme]\nsubjects = [\"alice\"]\n\n[tenants.acme.settings.template]\nprefix = \"acme: \"\n",
    );
    let out = run(&["check", "--config", config.path()]);
    assert!(out.status.success(), "{out:?}");
    // Without a token, the caller is the default tenant: the plugin's own.
    assert_eq!(texts(&call_echo(&config)).0, "> hi\n");
}

#[test]
fn o1_settings_that_passed_are_not_checked_again_and_changed_ones_always_are() {
    // The cache records settings that passed for the plugin's wasm, so a
    // start with the same ones needs no schema check; the record is keyed
    // by the settings, so no change slips through on another's record.
    let good = "\n[plugins.template.settings]\nprefix = \"> \"\n";
    for _ in 0..2 {
        assert_eq!(texts(&call_echo(&TestConfig::new(good))).0, "> hi\n");
    }
    let tenant = "\n[tenants.acme]\nsubjects = [\"alice\"]\n\n[tenants.acme.settings.template]\n";
    for (extra, key) in [
        (
            "\n[plugins.template.settings]\nprefix = 5\n".to_owned(),
            "plugins.template.settings.prefix",
        ),
        (
            "\n[plugins.template.settings]\nprefix = \"> \"\ncolour = \"red\"\n".to_owned(),
            "plugins.template.settings",
        ),
        (
            format!("{good}{tenant}prefix = 5\n"),
            "tenants.acme.settings.template.prefix",
        ),
    ] {
        let config = TestConfig::new(&extra);
        for args in [
            vec![
                "call",
                "--config",
                config.path(),
                "echo",
                r#"{"text": "hi"}"#,
            ],
            vec!["serve", "--config", config.path()],
        ] {
            let out = run(&args);
            let stderr = texts(&out).1;
            assert_eq!(out.status.code(), Some(1), "{args:?} {extra}: {stderr}");
            assert!(
                stderr.starts_with(&format!("error: {key}: ")),
                "{args:?} {extra}: {stderr}"
            );
        }
    }
    // And the good ones still start: this server's only complaint is the
    // client that left before its handshake.
    let out = run(&["serve", "--config", TestConfig::new(good).path()]);
    let stderr = texts(&out).1;
    assert!(
        stderr.starts_with("error: the MCP handshake on stdio failed"),
        "{stderr}"
    );
}

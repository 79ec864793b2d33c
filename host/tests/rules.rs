//! Declarative rules (rule O4) from the command line: `toolhost call`
//! refuses what a rule denies before the tool runs and asks at the
//! terminal what a rule asks about; the rules judge the arguments a
//! plugin's rewriting hook left; `toolhost explain` says which rule decides
//! and why; `toolhost check` lists rules that can never decide.

mod common;

use std::process::Command;

use common::{TestConfig, fixture, run, texts, wasm};
use serde_json::Value;

/// The test configuration, with write_file confined to its directory, the
/// guard extension (which masks secrets in arguments) and `rules`.
fn config(rules: &str) -> TestConfig {
    let config = TestConfig::new(&format!(
        "\n[plugins.guard]\nwasm = \"{}\"\nhooks = \"rewrite\"\n\n[builtin]\nworkdir = \".\"\ntools = [\"write_file\"]\n\n{rules}\n",
        wasm("guard").display()
    ));
    std::fs::create_dir(config.dir.path().join("secrets")).unwrap();
    config
}

const RULES: &str = r#"
[[rules]]
tool = "write_file"
decision = "ask"
reason = "writes go past a person"

[[rules]]
tool = "write_file"
decision = "deny"
when = [{ pointer = "/path", glob = "secrets/**" }]
reason = "secrets are not written"

[[rules]]
tool = "no_such_tool"
decision = "deny"
"#;

#[test]
fn o4_call_refuses_what_a_rule_denies_and_explain_says_which_rule() {
    let config = config(RULES);
    let args = r#"{"path": "secrets/key", "content": "x"}"#;
    let out = run(&["call", "--config", config.path(), "write_file", args]);
    let (stdout, stderr) = texts(&out);
    assert!(!out.status.success(), "{stdout}");
    assert_eq!(
        stderr.trim(),
        "error: write_file: denied by rules[1]: secrets are not written"
    );
    assert!(
        !config.dir.path().join("secrets/key").exists(),
        "the tool ran"
    );

    let out = run(&["explain", "--config", config.path(), "write_file", args]);
    let (stdout, stderr) = texts(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stdout.starts_with("write_file: deny by rules[1]: secrets are not written\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains("  rules[0] ask tool \"write_file\": matches\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains("rules[1] deny tool \"write_file\" where /path matches glob \"secrets/**\": matches, and decides"),
        "{stdout}"
    );
    let out = run(&[
        "explain",
        "--config",
        config.path(),
        "write_file",
        r#"{"path": 7}"#,
        "--json",
    ]);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (doc["decision"].as_str(), doc["by"].as_str()),
        (Some("ask"), Some("rules[0]"))
    );
    assert_eq!(
        doc["rules"][1]["why_not"],
        "`/path matches glob \"secrets/**\"` fails: it is a number, not a string"
    );

    let out = run(&["check", "--config", config.path()]);
    let (stdout, stderr) = texts(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stdout.contains("warning: rules[2] never matches: its tool pattern matches no tool"),
        "{stdout}"
    );
}

#[test]
fn o4_rules_judge_arguments_after_a_plugins_rewriting_hook() {
    // The guard masks the key before the rules judge: a rule looking for
    // the key never sees it, and one looking for the mask does.
    let secret = r#"{"text": "my key is AKIAIOSFODNN7EXAMPLE"}"#;
    let for_the_key = config(
        "[[rules]]\ntool = \"echo\"\ndecision = \"deny\"\nwhen = [{ pointer = \"/text\", regex = \"AKIA\" }]\n",
    );
    let out = run(&["call", "--config", for_the_key.path(), "echo", secret]);
    let (stdout, stderr) = texts(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("my key is [masked]"), "{stdout}");
    let for_the_mask = config(
        "[[rules]]\ntool = \"echo\"\ndecision = \"deny\"\nwhen = [{ pointer = \"/text\", regex = '\\[masked\\]' }]\n",
    );
    let out = run(&["call", "--config", for_the_mask.path(), "echo", secret]);
    let (_, stderr) = texts(&out);
    assert!(!out.status.success());
    assert!(stderr.contains("denied by rules[0]"), "{stderr}");
}

#[test]
fn o4_a_rule_that_asks_asks_at_the_terminal() {
    let config = config(RULES);
    let run_at_terminal = |answer: &str| -> Value {
        let out = Command::new("python3")
            .arg(fixture("pty_answer.py"))
            .arg(answer)
            .arg("--")
            .arg(env!("CARGO_BIN_EXE_toolhost"))
            .args([
                "call",
                "--config",
                config.path(),
                "write_file",
                r#"{"path": "notes.md", "content": "x"}"#,
            ])
            .env_remove("RUST_LOG")
            .output()
            .unwrap();
        let (stdout, stderr) = texts(&out);
        assert!(out.status.success(), "the pty driver failed:\n{stderr}");
        serde_json::from_str(&stdout).unwrap()
    };
    let r = run_at_terminal("n");
    let terminal = r["terminal"].as_str().unwrap();
    assert_eq!(
        (r["asked"].as_bool(), r["status"].as_i64()),
        (Some(true), Some(1)),
        "{terminal}"
    );
    assert!(
        terminal.contains("`rules[0]` asks: writes go past a person. [y/N]"),
        "{terminal}"
    );
    assert!(!config.dir.path().join("notes.md").exists());
    let r = run_at_terminal("y");
    assert_eq!(r["status"], 0, "{r}");
    assert!(config.dir.path().join("notes.md").exists());
}

#[test]
fn o4_a_bad_rule_stops_every_command_naming_its_key() {
    let config = config(
        "[[rules]]\ntool = \"echo\"\ndecision = \"deny\"\nwhen = [{ pointer = \"/text\", regex = \"(\" }]\n",
    );
    for command in ["check", "call", "explain"] {
        let out = run(&[command, "--config", config.path(), "echo", "{}"]
            [..if command == "check" { 3 } else { 5 }]);
        let (_, stderr) = texts(&out);
        assert!(!out.status.success(), "{command}");
        assert!(
            stderr.starts_with(
                "error: rules[0].when[0].regex: invalid rule: `(` is not a regular expression"
            ),
            "{command}: {stderr}"
        );
    }
}

#[test]
fn o4_a_plugins_own_hints_decide_where_the_configuration_lets_them() {
    // The files plugin declares note_read read-only and note_write
    // destructive (toolhost:plugin@0.3 hints); template's echo read-only.
    let files = format!(
        "\n[plugins.files]\nwasm = \"{}\"\n",
        wasm("files").display()
    );
    let config = TestConfig::new(&files).with_host("rules_from_annotations = true");
    let explain = |tool: &str| {
        let out = run(&["explain", "--config", config.path(), tool, "{}"]);
        let (stdout, stderr) = texts(&out);
        assert!(out.status.success(), "{stderr}");
        stdout.lines().next().unwrap_or_default().to_owned()
    };
    assert!(
        explain("note_read").starts_with("note_read: allow by readOnlyHint"),
        "{}",
        explain("note_read")
    );
    assert!(
        explain("note_write").starts_with("note_write: ask by destructiveHint"),
        "{}",
        explain("note_write")
    );
    // The hints are shown to whoever lists the tools, and to MCP clients.
    let out = run(&["tools", "--config", config.path(), "--json"]);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let hints = |name: &str| {
        doc.as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("{name} is not listed: {doc}"))["hints"]
            .clone()
    };
    assert_eq!(
        hints("note_write"),
        serde_json::json!({"read_only": false, "destructive": true, "open_world": null})
    );
    assert_eq!(hints("echo")["read_only"], true);

    // Without the key, the hints decide nothing: the default allows.
    let plain = TestConfig::new(&files);
    let out = run(&["explain", "--config", plain.path(), "note_write", "{}"]);
    let (stdout, _) = texts(&out);
    assert!(
        stdout.starts_with("note_write: allow by rules_default"),
        "{stdout}"
    );
}

//! A remote MCP server's questions in the middle of a call (rule N7):
//! forwarded to the person behind toolhost's own caller, never answered on
//! their behalf. The remote servers are written with the official Python
//! SDK: the conformance fixture (`tests/conformance/suite_tools.py`, asking
//! in its session under 2025-11-25) and `tests/fixtures/mcp_asking_server.py`
//! (asking by `input_required` under 2026-07-28); the callers are the
//! official Python SDK's clients over stdio, and a person at a terminal
//! (a pseudo-terminal, answered line by line).

mod common;

use std::process::Command;

use common::{TestConfig, fixture, modern_python_client, python_client, root, texts};
use serde_json::{Value, json};

/// A configuration mounting the fixture server with no prefix.
fn config() -> TestConfig {
    TestConfig::new(&format!(
        "\n[mcp.suite]\ncommand = [\"python3\", \"{}\"]\nprefix = \"\"\n",
        root().join("tests/conformance/suite_tools.py").display()
    ))
}

/// `toolhost serve` over stdio, for a plan.
fn stdio(config: &TestConfig) -> Value {
    json!([
        env!("CARGO_BIN_EXE_toolhost"),
        "serve",
        "--config",
        config.path()
    ])
}

/// One call of `tool` by the 2025-era client, its user answering `how`.
fn legacy_call(config: &TestConfig, tool: &str, args: Value, how: Option<Value>) -> Value {
    let mut plan = json!({
        "stdio": stdio(config),
        "steps": [{"call": tool, "args": args}],
        "timeout": 60,
    });
    if let Some(how) = how {
        plan["elicit"] = json!(how);
    }
    python_client(&plan).remove(0)
}

fn outcome(session: &Value) -> (bool, String) {
    let step = &session["steps"][0];
    (
        step["is_error"].as_bool().unwrap(),
        step["content"][0]["text"].as_str().unwrap().to_owned(),
    )
}

#[test]
fn n7_a_remote_servers_question_reaches_the_callers_user_and_the_answer_returns() {
    let config = config();
    let answer = json!({"username": "ada", "email": "ada@example.com"});
    let session = legacy_call(
        &config,
        "test_elicitation",
        json!({"message": "Who are you?"}),
        Some(json!({"accept": answer})),
    );
    // The person saw the server's own question and form, unchanged.
    let asked = &session["elicitations"][0];
    assert_eq!(asked["message"], "Who are you?");
    let properties = &asked["schema"]["properties"];
    assert_eq!(properties["username"]["type"], "string");
    assert_eq!(properties["email"]["type"], "string");
    // And the server got the person's answer.
    assert_eq!(
        outcome(&session),
        (false, "User response: action=accept".into())
    );

    // A decline is the person's, passed on as such.
    let session = legacy_call(
        &config,
        "test_elicitation",
        json!({"message": "Who are you?"}),
        Some(json!("decline")),
    );
    assert_eq!(
        outcome(&session),
        (false, "User response: action=decline".into())
    );
}

#[test]
fn n7_when_no_one_can_be_asked_the_server_is_told_why_and_nothing_answers_for_them() {
    let config = config();
    // A client without elicitation.
    let session = legacy_call(
        &config,
        "test_elicitation",
        json!({"message": "Who are you?"}),
        None,
    );
    let (is_error, text) = outcome(&session);
    assert!(is_error, "{text}");
    assert!(
        text.contains("does not offer form elicitation"),
        "the reason reaches the caller: {text}"
    );
    assert_eq!(session["elicitations"], json!([]));

    // A 2026-07-28 client is not asked on a remote server's behalf.
    let report = modern_python_client(&json!({
        "stdio": stdio(&config),
        "elicit": "accept",
        "timeout": 60,
        "steps": [{"call": "test_elicitation", "args": {"message": "Who are you?"}}],
    }));
    assert_eq!(report["steps"][0]["is_error"], true, "{report}");
    let text = report["steps"][0]["text"].as_str().unwrap();
    assert!(text.contains("protocol 2026-07-28"), "{text}");
    assert_eq!(report["elicitations"], json!([]));
}

#[test]
fn n7_sampling_is_refused_with_a_clear_error() {
    let config = config();
    let session = legacy_call(
        &config,
        "test_sampling",
        json!({"prompt": "hi"}),
        Some(json!("accept")),
    );
    let (is_error, text) = outcome(&session);
    assert!(is_error, "{text}");
    assert!(text.contains("does not offer sampling"), "{text}");
}

/// A configuration mounting the asking fixture, spoken to at 2026-07-28,
/// with no prefix.
fn asking_config() -> TestConfig {
    TestConfig::new(&format!(
        "\n[mcp.asker]\ncommand = [\"python3\", \"{}\"]\nprefix = \"\"\nprotocol = \"2026-07-28\"\n",
        fixture("mcp_asking_server.py").display()
    ))
}

/// Runs `toolhost call --config CONFIG TOOL ARGS` on a pseudo-terminal,
/// typing `answers` one after each prompt (`setsid`: with no terminal).
fn call_at_terminal(config: &TestConfig, tool: &str, args: Value, answers: &str) -> Value {
    let out = Command::new("python3")
        .arg(fixture("pty_answer.py"))
        .arg(answers)
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_toolhost"))
        .args(["call", "--config", config.path(), tool, &args.to_string()])
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    let (stdout, stderr) = texts(&out);
    assert!(out.status.success(), "the pty driver failed:\n{stderr}");
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("bad report ({e}): {stdout}"))
}

#[test]
fn n7_call_puts_a_remote_servers_form_to_the_person_at_the_terminal() {
    let config = config();
    // The form with defaults of the conformance suite: the person changes
    // the age and takes every other default with Enter (the fields come in
    // the order of their names: age, name, score, status, verified).
    let answers = json!(["a", "41", "", "", "2", "n"]).to_string();
    let r = call_at_terminal(
        &config,
        "test_elicitation_sep1034_defaults",
        json!({}),
        &answers,
    );
    let terminal = r["terminal"].as_str().unwrap();
    assert_eq!(r["status"], 0, "{terminal}");
    assert!(
        terminal.contains(
            "MCP server `suite` asks: Please review and update the form fields with defaults"
        ),
        "{terminal}"
    );
    for prompt in [
        "  age (a whole number) [30] > ",
        "  name (text) [John Doe] > ",
        "    2) inactive",
        "  verified (y/n) [y] > ",
    ] {
        assert!(terminal.contains(prompt), "{prompt}: {terminal}");
    }
    let content = terminal
        .split("content=")
        .nth(1)
        .and_then(|rest| rest.lines().next())
        .unwrap_or_else(|| panic!("no answer in {terminal}"));
    let content: Value = serde_json::from_str(content.trim()).unwrap();
    assert_eq!(
        content,
        json!({"age": 41, "name": "John Doe", "score": 95.5, "status": "inactive", "verified": false})
    );

    // Declining is the person's answer, passed on as such.
    let r = call_at_terminal(
        &config,
        "test_elicitation",
        json!({"message": "Who are you?"}),
        r#"["d"]"#,
    );
    let terminal = r["terminal"].as_str().unwrap();
    assert!(
        terminal.contains("User response: action=decline"),
        "{terminal}"
    );
}

#[test]
fn n7_without_a_terminal_the_server_is_told_no_one_can_be_asked() {
    let config = config();
    let r = call_at_terminal(
        &config,
        "test_elicitation",
        json!({"message": "Who are you?"}),
        "setsid",
    );
    let output = r["terminal"].as_str().unwrap();
    assert_eq!(r["status"], 1, "{output}");
    assert!(
        output.contains("no one can be asked: there is no terminal to ask"),
        "{output}"
    );
}

#[test]
fn n7_a_2026_servers_input_required_reaches_the_terminal_round_after_round() {
    let config = asking_config();
    // Fields in the order of their names: age, name.
    let r = call_at_terminal(
        &config,
        "who",
        json!({"question": "Who are you?"}),
        r#"["a", "36", "Ada"]"#,
    );
    let terminal = r["terminal"].as_str().unwrap();
    assert_eq!(r["status"], 0, "{terminal}");
    assert!(
        terminal.contains("MCP server `asker` asks: Who are you?"),
        "{terminal}"
    );
    assert!(
        terminal.contains(r#"answer: accept {"age": 36, "name": "Ada"}"#),
        "{terminal}"
    );

    // The second question depends on the first answer: two rounds.
    let r = call_at_terminal(
        &config,
        "two_questions",
        json!({}),
        r#"["a", "Ada", "a", "y"]"#,
    );
    let terminal = r["terminal"].as_str().unwrap();
    assert_eq!(r["status"], 0, "{terminal}");
    assert!(terminal.contains("asks: Is Ada right?"), "{terminal}");
    assert!(
        terminal.contains(r#"name: accept {"name": "Ada"}; right: accept {"right": true}"#),
        "{terminal}"
    );
}

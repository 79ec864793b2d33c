//! A remote MCP server's questions in the middle of a call (rule N7):
//! forwarded to the person behind toolhost's own caller, never answered on
//! their behalf. The remote server is the conformance fixture
//! (`tests/conformance/suite_tools.py`, the official Python SDK's server);
//! the callers are the official Python SDK's clients over stdio.

mod common;

use common::{TestConfig, modern_python_client, python_client, root};
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

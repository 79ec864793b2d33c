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

    // A 2026-07-28 client without elicitation.
    let report = modern_python_client(&json!({
        "stdio": stdio(&config),
        "timeout": 60,
        "steps": [{"call": "test_elicitation", "args": {"message": "Who are you?"}}],
    }));
    assert_eq!(report["steps"][0]["is_error"], true, "{report}");
    let text = report["steps"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("protocol 2026-07-28 that does not offer form elicitation"),
        "{text}"
    );
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

/// The asking fixture twice: `m.*` spoken to at 2026-07-28 (it asks by
/// `input_required`), `l.*` at 2025-11-25 (it asks in its session); and the
/// decider extension, which asks for approval when the arguments hold `ask`.
fn forwarding_config() -> TestConfig {
    let script = fixture("mcp_asking_server.py");
    TestConfig::new(&format!(
        "\n[mcp.modern]\ncommand = [\"python3\", \"{script}\"]\nprefix = \"m\"\nprotocol = \"2026-07-28\"\n\
         \n[mcp.legacy]\ncommand = [\"python3\", \"{script}\"]\nprefix = \"l\"\n\
         \n[plugins.decider]\nwasm = \"{decider}\"\n",
        script = script.display(),
        decider = common::wasm("decider").display(),
    ))
}

/// The questions a 2026-07-28 client's user saw, in order.
fn asked(report: &Value) -> Vec<String> {
    report["elicitations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["message"].as_str().unwrap().to_owned())
        .collect()
}

/// Checks that the client's user was asked the approval, then both of the
/// remote server's questions, each round in turn, and that the call ended
/// with the server's result built from the user's answers.
fn assert_forwarded(report: &Value, approval: bool) {
    assert_eq!(report["protocol_version"], "2026-07-28", "{report}");
    let steps = report["steps"].as_array().unwrap();
    for step in steps {
        assert_eq!(
            step["text"], r#"first: accept {"approve": true}; second: accept {"approve": true}"#,
            "{report}"
        );
        assert_eq!(step["is_error"], false, "{report}");
    }
    let asked = asked(report);
    let questions = [
        "First?".to_owned(),
        r#"Second, after accept {"approve": true}?"#.to_owned(),
    ];
    let per_call: Vec<String> = if approval {
        let mut q = vec![asked[0].clone()];
        assert!(asked[0].contains("`decider` asks"), "{asked:?}");
        q.extend(questions.iter().cloned());
        q
    } else {
        questions.to_vec()
    };
    let expected: Vec<String> = (0..steps.len()).flat_map(|_| per_call.clone()).collect();
    assert_eq!(asked, expected, "{report}");
    for e in report["elicitations"].as_array().unwrap() {
        assert_eq!(
            e["schema"]["properties"]["approve"]["type"], "boolean",
            "the form as the server sent it: {e}"
        );
    }
}

#[test]
fn n7_a_2026_client_of_serve_is_asked_a_remote_servers_questions_by_multi_round_trip() {
    let config = forwarding_config();
    // Both kinds of remote server, with and without an approval in the
    // same round trips, driven by the official SDK's client.
    for (tool, args, approval) in [
        ("m.confirm_twice", json!({}), false),
        ("l.confirm_twice", json!({}), false),
        ("m.confirm_twice", json!({"ask": 1}), true),
        ("l.confirm_twice", json!({"ask": 1}), true),
    ] {
        let report = modern_python_client(&json!({
            "stdio": stdio(&config),
            "elicit": "accept",
            "timeout": 90,
            "steps": [{"call": tool, "args": args}],
        }));
        assert_forwarded(&report, approval);
    }
}

#[test]
fn n7_a_stateless_server_forwards_a_remote_servers_questions_and_refuses_bad_states() {
    let config = forwarding_config();
    let key = config.dir.path().join("approval.key");
    std::fs::write(&key, "kq3Zp9s0VbXw2Lr7Tn4Hc8Jd6Fy1Ma5Ue0Gi3Ko9").unwrap();
    let key = key.display().to_string();
    let args = ["--stateless", "--approval-key-file", key.as_str()];
    let one = common::HttpServe::start(&config, &args);
    let report = modern_python_client(&json!({
        "http": one.url(),
        "elicit": "accept",
        "timeout": 90,
        "steps": [
            {"call": "m.confirm_twice", "args": {}},
            {"call": "l.confirm_twice", "args": {"ask": 1}},
        ],
    }));
    assert_eq!(report["steps"].as_array().unwrap().len(), 2);
    let approvals = asked(&report)
        .iter()
        .filter(|q| q.contains("`decider` asks"))
        .count();
    assert_eq!(approvals, 1, "{report}");

    // The state of a forwarded question is held to what it was issued
    // for, and refused with the reason.
    let report = modern_python_client(&json!({
        "http": one.url(),
        "elicit": "accept",
        "timeout": 90,
        "steps": [
            {"round_trip": "m.confirm_twice", "args": {}, "attack": "tamper"},
            {"round_trip": "m.confirm_twice", "args": {}, "attack": "other_args",
             "other_args": {"extra": 1}},
            {"round_trip": "m.confirm_twice", "args": {}, "attack": "replay"},
        ],
    }));
    let steps = report["steps"].as_array().unwrap();
    for step in steps {
        assert_eq!(
            step["first"],
            json!({"input_required": ["question-0"], "has_state": true}),
            "{report}"
        );
    }
    let refused = |outcome: &Value, why: &str| {
        assert_eq!(outcome["protocol_error"]["code"], -32602, "{outcome}");
        let message = outcome["protocol_error"]["message"].as_str().unwrap();
        assert!(message.contains(why), "{why}: {message}");
    };
    refused(
        &steps[0]["retry"],
        "was not issued by this server or was altered",
    );
    refused(
        &steps[1]["retry"],
        "was issued for a call with other arguments",
    );
    // Answered under another key, the question is put again, with a fresh
    // state; the used one is refused.
    assert_eq!(
        steps[2]["retry"],
        json!({"input_required": ["question-0"], "has_state": true}),
        "{report}"
    );
    refused(&steps[2]["replay"], "was already used");
}

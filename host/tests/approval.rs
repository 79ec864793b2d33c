//! Asking a person (rule P7) from the command line: `toolhost call` asks
//! on its terminal (a pseudo-terminal here, answered like a person would),
//! denies with no terminal, and `toolhost serve` asks the MCP client's user
//! through elicitation, answered by the official Python SDK's client. An
//! extension built with the SDK (the `decider` test plugin) asks whenever
//! the arguments hold the key `ask`.

mod common;

use std::process::Command;

use common::{TestConfig, fixture, modern_python_client, python_client, texts, wasm};
use serde_json::{Value, json};

/// A configuration with the decider extension and `approvals` settings.
fn config(host_extra: &str) -> TestConfig {
    TestConfig::new(&format!(
        "\n[plugins.decider]\nwasm = \"{}\"\n",
        wasm("decider").display()
    ))
    .with_host(host_extra)
}

/// Runs `toolhost ARGS` through the pty driver, answering `answer`.
fn at_terminal(answer: &str, args: &[&str]) -> Value {
    let out = Command::new("python3")
        .arg(fixture("pty_answer.py"))
        .arg(answer)
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_toolhost"))
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    let (stdout, stderr) = texts(&out);
    assert!(out.status.success(), "the pty driver failed:\n{stderr}");
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("bad report ({e}): {stdout}"))
}

fn call_args<'a>(config: &'a TestConfig, args: &'a str) -> Vec<&'a str> {
    vec!["call", "--config", config.path(), "count_up", args]
}

#[test]
fn p7_call_asks_at_the_terminal_and_runs_when_approved() {
    let config = config("");
    let r = at_terminal("y", &call_args(&config, r#"{"n": 2, "ask": 1}"#));
    let terminal = r["terminal"].as_str().unwrap();
    assert_eq!(r["asked"], true, "{terminal}");
    assert_eq!(r["status"], 0, "{terminal}");
    assert!(
        terminal.contains(
            "Allow the call to `count_up` with {\"n\": 2, \"ask\": 1}? `decider` asks: count_up wants approval. [y/N]"
        ),
        "{terminal}"
    );
    assert!(terminal.contains("counted to 2"), "{terminal}");
}

#[test]
fn p7_call_is_refused_when_the_person_says_no() {
    let config = config("");
    let r = at_terminal("n", &call_args(&config, r#"{"n": 2, "ask": 1}"#));
    let terminal = r["terminal"].as_str().unwrap();
    assert_eq!(r["status"], 1, "{terminal}");
    assert!(
        terminal.contains("error: count_up: rejected by hook `decider`: approval was denied: declined at the terminal"),
        "{terminal}"
    );
    assert!(!terminal.contains("counted"), "{terminal}");
}

#[test]
fn p7_no_answer_in_time_is_a_denial() {
    let config = config("approval_timeout_ms = 400");
    let r = at_terminal("-", &call_args(&config, r#"{"n": 2, "ask": 1}"#));
    let terminal = r["terminal"].as_str().unwrap();
    assert_eq!(
        (r["asked"].as_bool(), r["status"].as_i64()),
        (Some(true), Some(1)),
        "{terminal}"
    );
    assert!(
        terminal.contains("approval was asked for and no answer came within 0.4 s: the approval timeout ended the wait"),
        "{terminal}"
    );
}

#[test]
fn c1_an_unanswered_approval_ends_at_the_calls_deadline() {
    // The call's deadline (10 s) comes long before the approval timeout,
    // and long after the question, however busy the machine; the pty
    // driver gives the whole run 60 s.
    let config = config("approval_timeout_ms = 120000");
    let text = std::fs::read_to_string(&config.path).unwrap();
    std::fs::write(
        &config.path,
        text.replacen("call_timeout_ms = 20000", "call_timeout_ms = 10000", 1),
    )
    .unwrap();
    let r = at_terminal("-", &call_args(&config, r#"{"n": 2, "ask": 1}"#));
    let terminal = r["terminal"].as_str().unwrap();
    assert_eq!(
        (r["asked"].as_bool(), r["status"].as_i64()),
        (Some(true), Some(1)),
        "{terminal}"
    );
    assert!(
        terminal.contains("the call's deadline ended the wait"),
        "{terminal}"
    );
}

#[test]
fn p7_without_a_terminal_the_call_is_denied_unless_configured() {
    let config = config("");
    let r = at_terminal("setsid", &call_args(&config, r#"{"n": 2, "ask": 1}"#));
    let output = r["terminal"].as_str().unwrap();
    assert_eq!(r["status"], 1, "{output}");
    assert!(
        output.contains("approval was denied: there is no terminal to ask (set `approvals = \"allow\"` in [host] to approve such calls without asking)"),
        "{output}"
    );
    let allow = self::config(r#"approvals = "allow""#);
    let r = at_terminal("setsid", &call_args(&allow, r#"{"n": 2, "ask": 1}"#));
    assert_eq!(r["status"], 0, "{r}");
    assert!(r["terminal"].as_str().unwrap().contains("counted to 2"));
    // `deny` never asks, even at a terminal.
    let deny = self::config(r#"approvals = "deny""#);
    let r = at_terminal("y", &call_args(&deny, r#"{"n": 2, "ask": 1}"#));
    assert_eq!(
        (r["asked"].as_bool(), r["status"].as_i64()),
        (Some(false), Some(1)),
        "{r}"
    );
}

/// One call of `count_up` with `ask` over stdio, the client answering
/// elicitation `how` (`None`: it does not offer elicitation).
fn served_call(config: &TestConfig, how: Option<&str>) -> Value {
    let mut plan = json!({
        "stdio": [env!("CARGO_BIN_EXE_toolhost"), "serve", "--config", config.path()],
        "steps": [{"call": "count_up", "args": {"n": 1, "ask": 1}}],
        "timeout": 60,
    });
    if let Some(how) = how {
        plan["elicit"] = json!(how);
    }
    python_client(&plan).remove(0)
}

fn only_text(session: &Value) -> (bool, String) {
    let step = &session["steps"][0];
    (
        step["is_error"].as_bool().unwrap(),
        step["content"][0]["text"].as_str().unwrap().to_owned(),
    )
}

#[test]
fn p7_serve_asks_the_mcp_clients_user_through_elicitation() {
    // Answers that come are never late, however busy the machine.
    let config = config("approval_timeout_ms = 60000");
    let session = served_call(&config, Some("accept"));
    assert_eq!(only_text(&session), (false, "counted to 1".into()));
    let asked = &session["elicitations"][0];
    assert_eq!(
        asked["message"],
        "Allow the call to `count_up` with {\"ask\":1,\"n\":1}? `decider` asks: count_up wants approval."
    );
    assert_eq!(asked["schema"]["properties"]["approve"]["type"], "boolean");
    assert_eq!(asked["schema"]["required"], json!(["approve"]));

    for (how, why) in [
        ("refuse", "the client's user did not approve it"),
        ("decline", "the client's user declined"),
        ("cancel", "the client's user cancelled"),
    ] {
        let (is_error, text) = only_text(&served_call(&config, Some(how)));
        assert!(is_error, "{how}");
        assert_eq!(
            text,
            format!("rejected by hook `decider`: approval was denied: {why}"),
            "{how}"
        );
    }
    // The slow answer (after 30 s) is one the approval timeout ends.
    let config = self::config("approval_timeout_ms = 1500");
    let (is_error, text) = only_text(&served_call(&config, Some("slow")));
    assert!(is_error);
    assert_eq!(
        text,
        "rejected by hook `decider`: approval was asked for and no answer came within 1.5 s: the approval timeout ended the wait"
    );
}

#[test]
fn c1_serve_ends_an_unanswered_approval_at_the_calls_deadline() {
    // The client answers after 30 s; the call's deadline (10 s, long
    // after the question however busy the machine) comes first.
    let config = config("approval_timeout_ms = 120000");
    let text = std::fs::read_to_string(&config.path).unwrap();
    std::fs::write(
        &config.path,
        text.replacen("call_timeout_ms = 20000", "call_timeout_ms = 10000", 1),
    )
    .unwrap();
    let (is_error, text) = only_text(&served_call(&config, Some("slow")));
    assert!(is_error);
    assert!(
        text.starts_with(
            "rejected by hook `decider`: approval was asked for and no answer came within"
        ) && text.ends_with("s: the call's deadline ended the wait"),
        "{text}"
    );
}

#[test]
fn p7_serve_denies_when_the_client_cannot_be_asked() {
    let config = config("");
    let (is_error, text) = only_text(&served_call(&config, None));
    assert!(is_error);
    assert_eq!(
        text,
        "rejected by hook `decider`: approval was denied: the MCP client cannot be asked: it does not offer form elicitation"
    );
}

#[test]
fn p7_serve_over_http_asks_in_a_session_and_denies_when_stateless() {
    let config = config("");
    let serve = common::HttpServe::start(&config, &[]);
    let plan = |elicit: Option<&str>| {
        let mut plan = json!({
            "http": serve.url(),
            "steps": [{"call": "count_up", "args": {"n": 1, "ask": 1}}],
            "timeout": 60,
        });
        if let Some(how) = elicit {
            plan["elicit"] = json!(how);
        }
        plan
    };
    let session = python_client(&plan(Some("accept"))).remove(0);
    assert_eq!(only_text(&session), (false, "counted to 1".into()));
    drop(serve);
    // A stateless server cannot send a 2025-era client a request of its
    // own, so it fails closed, saying why.
    let stateless = common::HttpServe::start(&config, &["--stateless"]);
    let session = python_client(&json!({
        "http": stateless.url(),
        "steps": [{"call": "count_up", "args": {"n": 1, "ask": 1}}],
        "elicit": "accept",
        "timeout": 60,
    }))
    .remove(0);
    let (is_error, text) = only_text(&session);
    assert!(is_error);
    assert_eq!(
        text,
        "rejected by hook `decider`: approval was denied: the MCP client cannot be asked: this \
         server is stateless, and a client of protocol 2025-11-25 or earlier can only be asked \
         within a session (a 2026-07-28 client is asked by multi round-trip)"
    );
}

/// The question the decider's `ask` puts for `count_up` with `{"n":1,"ask":1}`.
const QUESTION: &str = "Allow the call to `count_up` with {\"ask\":1,\"n\":1}? `decider` asks: count_up wants approval.";

/// One approved-or-not `count_up` call by the Python SDK's 2026-07-28
/// client over `transport` (a plan's `stdio` or `http` entry), its user
/// answering `how`.
fn modern_call(transport: Value, how: Option<&str>) -> Value {
    let mut plan = json!({
        "steps": [{"call": "count_up", "args": {"n": 1, "ask": 1}}],
        "timeout": 60,
    });
    plan.as_object_mut()
        .unwrap()
        .extend(transport.as_object().unwrap().clone());
    if let Some(how) = how {
        plan["elicit"] = json!(how);
    }
    modern_python_client(&plan)
}

fn stdio(config: &TestConfig) -> Value {
    json!({"stdio": [env!("CARGO_BIN_EXE_toolhost"), "serve", "--config", config.path()]})
}

#[test]
fn n6_serve_asks_a_2026_client_by_multi_round_trip_over_stdio() {
    let config = config("");
    let report = modern_call(stdio(&config), Some("accept"));
    assert_eq!(report["protocol_version"], "2026-07-28", "{report}");
    assert_eq!(
        report["steps"][0],
        json!({"is_error": false, "text": "counted to 1"})
    );
    assert_eq!(report["elicitations"][0]["message"], QUESTION);
    // Each 2026-07-28 result names the server that answered.
    assert_eq!(report["server_info"]["name"], "toolhost", "{report}");
    assert_eq!(report["server_info"]["version"], env!("CARGO_PKG_VERSION"));
    let schema = &report["elicitations"][0]["schema"];
    assert_eq!(schema["properties"]["approve"]["type"], "boolean");
    assert_eq!(schema["required"], json!(["approve"]));

    for (how, why) in [
        ("refuse", "the client's user did not approve it"),
        ("decline", "the client's user declined"),
        ("cancel", "the client's user cancelled"),
    ] {
        let report = modern_call(stdio(&config), Some(how));
        assert_eq!(
            report["steps"][0],
            json!({"is_error": true, "text": format!("rejected by hook `decider`: approval was denied: {why}")}),
            "{how}"
        );
    }
    // A client without elicitation is told so, not asked.
    let report = modern_call(stdio(&config), None);
    assert_eq!(
        report["steps"][0]["text"],
        "rejected by hook `decider`: approval was denied: the MCP client cannot be asked: it does not offer form elicitation"
    );
    assert_eq!(report["elicitations"], json!([]));
}

#[test]
fn n6_serve_over_http_asks_a_2026_client_by_multi_round_trip_with_and_without_sessions() {
    let config = config("");
    for args in [&[][..], &["--stateless"][..]] {
        let serve = common::HttpServe::start(&config, args);
        let report = modern_call(json!({"http": serve.url()}), Some("accept"));
        assert_eq!(
            report["protocol_version"], "2026-07-28",
            "{args:?}: {report}"
        );
        assert_eq!(
            report["steps"][0],
            json!({"is_error": false, "text": "counted to 1"}),
            "{args:?}"
        );
        assert_eq!(report["elicitations"][0]["message"], QUESTION, "{args:?}");
    }
}

#[test]
fn n6_a_tampered_replayed_transplanted_or_expired_approval_state_is_refused() {
    // Answers are good for the approval timeout: 8 s here, which the
    // prompt answers never reach however busy the machine, and the last
    // step's 10 s wait passes.
    let config = config("approval_timeout_ms = 8000");
    let args = json!({"n": 1, "ask": 1});
    let plan = json!({
        "stdio": [env!("CARGO_BIN_EXE_toolhost"), "serve", "--config", config.path()],
        "elicit": "accept",
        "timeout": 60,
        "steps": [
            {"round_trip": "count_up", "args": args, "attack": "none"},
            {"round_trip": "count_up", "args": args, "attack": "tamper"},
            {"round_trip": "count_up", "args": args, "attack": "replay"},
            {"round_trip": "count_up", "args": args, "attack": "other_args",
             "other_args": {"n": 99, "ask": 1}},
            {"round_trip": "count_up", "args": args, "attack": "no_answer"},
            {"round_trip": "count_up", "args": args, "attack": "wait:10"},
        ],
    });
    let report = modern_python_client(&plan);
    let steps = report["steps"].as_array().unwrap();
    let asked = json!({"input_required": ["approval"], "has_state": true});
    for step in steps {
        assert_eq!(step["first"], asked, "{step}");
    }
    let ok = json!({"is_error": false, "text": "counted to 1"});
    let refused = |step: &Value, why: &str| {
        let error = &step["protocol_error"];
        assert_eq!(error["code"], -32602, "{step}");
        let message = error["message"].as_str().unwrap();
        assert!(message.contains(why), "{message}");
    };
    assert_eq!(steps[0]["retry"], ok);
    refused(
        &steps[1]["retry"],
        "was not issued by this server or was altered",
    );
    assert_eq!(steps[2]["retry"], ok);
    refused(&steps[2]["replay"], "was already used");
    refused(
        &steps[3]["retry"],
        "was issued for a call with other arguments",
    );
    // The state without an answer: asked again.
    assert_eq!(steps[4]["retry"], asked);
    refused(&steps[5]["retry"], "has expired");
}

// Multi-threaded: the model server answers on one worker while the test
// waits for the binary on another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn p7_agent_asks_at_the_terminal_before_the_tool_runs() {
    use toolhost_test_support::{HttpServer, Reply};
    let tool_call = r#"{"id":"r1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"count_up","arguments":"{\"n\":1,\"ask\":1}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":20,"completion_tokens":5,"total_tokens":25}}"#;
    let answer = r#"{"id":"r2","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Done."},"finish_reason":"stop"}],"usage":{"prompt_tokens":40,"completion_tokens":6,"total_tokens":46}}"#;
    for (typed, tool_said) in [
        ("y", "counted to 1"),
        (
            "n",
            "rejected by hook `decider`: approval was denied: declined at the terminal",
        ),
    ] {
        let server =
            HttpServer::script(vec![Reply::raw(200, tool_call), Reply::raw(200, answer)]).await;
        let config = config("");
        let text = std::fs::read_to_string(&config.path).unwrap();
        std::fs::write(
            &config.path,
            format!(
                "{text}\n[agent]\nprovider = \"openai\"\nmodel = \"m\"\nbase_url = \"http://127.0.0.1:{}/v1\"\nstream = false\n",
                server.port()
            ),
        )
        .unwrap();
        let path = config.path().to_owned();
        let r = tokio::task::spawn_blocking(move || {
            at_terminal(typed, &["agent", "--config", &path, "Count to one."])
        })
        .await
        .unwrap();
        let terminal = r["terminal"].as_str().unwrap();
        assert_eq!(
            (r["asked"].as_bool(), r["status"].as_i64()),
            (Some(true), Some(0)),
            "{terminal}"
        );
        assert!(
            terminal.contains("`decider` asks: count_up wants approval. [y/N]"),
            "{terminal}"
        );
        assert!(terminal.contains(tool_said), "{typed}: {terminal}");
        assert!(terminal.contains("Done."), "{terminal}");
    }
}

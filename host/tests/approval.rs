//! Asking a person (rule P7) from the command line: `toolhost call` asks
//! on its terminal (a pseudo-terminal here, answered like a person would),
//! denies with no terminal, and `toolhost serve` asks the MCP client's user
//! through elicitation, answered by the official Python SDK's client. An
//! extension built with the SDK (the `decider` test plugin) asks whenever
//! the arguments hold the key `ask`.

mod common;

use std::process::Command;

use common::{TestConfig, fixture, python_client, texts, wasm};
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
    let config = config("approval_timeout_ms = 120000");
    let text = std::fs::read_to_string(&config.path).unwrap();
    std::fs::write(
        &config.path,
        text.replacen("call_timeout_ms = 20000", "call_timeout_ms = 700", 1),
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
    let config = config("approval_timeout_ms = 1500");
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
    let (is_error, text) = only_text(&served_call(&config, Some("slow")));
    assert!(is_error);
    assert_eq!(
        text,
        "rejected by hook `decider`: approval was asked for and no answer came within 1.5 s: the approval timeout ended the wait"
    );
}

#[test]
fn c1_serve_ends_an_unanswered_approval_at_the_calls_deadline() {
    // The client answers after 5 s; the call's deadline comes first.
    let config = config("approval_timeout_ms = 120000");
    let text = std::fs::read_to_string(&config.path).unwrap();
    std::fs::write(
        &config.path,
        text.replacen("call_timeout_ms = 20000", "call_timeout_ms = 1500", 1),
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
        "rejected by hook `decider`: approval was denied: the MCP client cannot be asked: it does not offer elicitation"
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
    // A stateless server cannot send the client a request of its own, so
    // it fails closed.
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
        "rejected by hook `decider`: approval was denied: the MCP client cannot be asked: it does not offer elicitation"
    );
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

//! Remote MCP tools (rule E3) against a server nobody here wrote the
//! protocol side of: `tests/fixtures/mcp_server.py`, built on the official
//! Python SDK (installed by `make setup`). Its tools join the registry under
//! a prefix and run through the same pipeline as every other tool.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use toolhost::config::{BuiltHost, Config};
use toolhost::error::report;
use toolhost::mcp::{McpClient, McpProtocol, McpServerConfig, McpTransport};
use toolhost::{
    Arguments, CallContext, ContentBlock, FnAfterHook, FnBeforeHook, HookScope, Rejection,
    ToolError, ToolHost, ToolOutput,
};

use crate::common::call;

/// The fixture server's script.
fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/mcp_server.py")
}

/// Fails with a clear message if the Python SDK is not installed.
fn require_python_sdk() {
    let ok = std::process::Command::new("python3")
        .args(["-c", "import mcp"])
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok,
        "python3 with the `mcp` package is needed: run `make setup`"
    );
}

fn stdio_server(prefix: &str) -> McpServerConfig {
    require_python_sdk();
    McpServerConfig::command(
        "py",
        vec!["python3".into(), fixture().display().to_string()],
    )
    .prefix(prefix)
}

async fn host_with(server: McpServerConfig) -> ToolHost {
    let host = ToolHost::builder().validate_arguments(true).build();
    host.register_extension(Arc::new(McpClient::new(server).unwrap()))
        .await
        .unwrap();
    host
}

/// Waits (60 s at most, returning as soon as it holds) until `cond` holds.
async fn eventually(what: &str, cond: impl Fn() -> bool) {
    for _ in 0..1200 {
        if cond() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("timed out waiting until {what}");
}

#[tokio::test]
async fn e3_remote_tools_are_registered_with_the_prefix() {
    let host = host_with(stdio_server("docs")).await;
    let names = host.extension_tools("mcp.py");
    for expected in [
        "docs.add",
        "docs.echo",
        "docs.fail",
        "docs.pid",
        "docs.slow",
    ] {
        assert!(names.contains(&expected.to_owned()), "{names:?}");
    }
    assert_eq!(host.tool_names(), names, "nothing else is registered");
    let spec = host.get_tool("docs.echo").unwrap();
    assert_eq!(spec.description, "Returns the text it is given.");
    assert_eq!(spec.parameters["required"], json!(["text"]));
    assert_eq!(spec.concurrency_safe, None, "server hints are not trusted");
    // Rule N2: the server's output schema and structured content pass
    // through; the text block is what a reader sees.
    assert_eq!(
        spec.output_schema.as_ref().unwrap()["properties"]["result"]["type"],
        "string"
    );
    let echoed = call(&host, "docs.echo", r#"{"text": "hi"}"#).await.unwrap();
    assert_eq!(echoed.structured_value(), Some(&json!({"result": "hi"})));
    assert_eq!(echoed.llm_text(), "hi");
    assert_eq!(
        call(&host, "docs.add", r#"{"a": 2, "b": 40}"#)
            .await
            .unwrap()
            .llm_text(),
        "42"
    );
    host.shutdown().await;
    assert!(host.tool_names().is_empty());
}

#[tokio::test]
async fn e3_remote_calls_go_through_the_hooks_and_validation() {
    let host = host_with(stdio_server("py")).await;
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let before = seen.clone();
    host.add_before_hook(
        HookScope::Global,
        Arc::new(FnBeforeHook::new("policy", move |call| {
            before
                .lock()
                .unwrap()
                .push(format!("before {}", call.tool()));
            if call.tool() == "py.env" {
                return Err(Rejection::new("no reading the environment"));
            }
            Ok(())
        })),
    );
    let after = seen.clone();
    host.add_after_hook(
        HookScope::Tool("py.echo".into()),
        Arc::new(FnAfterHook::new("audit", move |call, outcome| {
            let what = match outcome {
                Ok(out) => out.llm_text().into_owned(),
                Err(e) => e.kind().as_str().to_owned(),
            };
            after
                .lock()
                .unwrap()
                .push(format!("after {} -> {what}", call.tool()));
        })),
    );
    call(&host, "py.echo", r#"{"text": "through the pipeline"}"#)
        .await
        .unwrap();
    let refused = call(&host, "py.env", r#"{"name": "HOME"}"#)
        .await
        .unwrap_err();
    assert!(
        matches!(&refused, ToolError::Rejected { hook, .. } if hook == "policy"),
        "{refused:?}"
    );
    // The schema the server declared is checked here, before any hook.
    let invalid = call(&host, "py.echo", r#"{"text": 7}"#).await.unwrap_err();
    assert!(
        matches!(&invalid, ToolError::InvalidArguments { path, .. } if path == "/text"),
        "{invalid:?}"
    );
    assert_eq!(
        *seen.lock().unwrap(),
        [
            "before py.echo",
            "after py.echo -> through the pipeline",
            "before py.env",
            "after py.echo -> invalid_arguments",
        ]
    );
    host.shutdown().await;
}

#[tokio::test]
async fn e3_remote_results_keep_their_shape() {
    let host = host_with(stdio_server("py")).await;
    assert_eq!(
        call(&host, "py.annotated", r#"{"text": "hello"}"#)
            .await
            .unwrap(),
        ToolOutput::dual("5 characters", "hello")
    );
    match call(&host, "py.image", "{}").await.unwrap() {
        ToolOutput::Blocks { blocks } => {
            assert_eq!(blocks[0], ContentBlock::text("a pixel"));
            assert!(
                matches!(&blocks[1], ContentBlock::Image { mime_type, data, .. } if mime_type == "image/png" && data.starts_with(b"\x89PNG")),
                "{blocks:?}"
            );
        }
        other => panic!("expected blocks, got {other:?}"),
    }
    let err = call(&host, "py.fail", r#"{"reason": "the disk is full"}"#)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ToolError::Failed { message, .. } if message.contains("the disk is full")),
        "{err:?}"
    );
    host.shutdown().await;
}

#[tokio::test]
async fn n3_a_remote_tools_progress_reaches_its_caller_and_stray_reports_do_not() {
    let host = host_with(stdio_server("py")).await;
    let reports = Arc::new(Mutex::new(Vec::new()));
    let seen = reports.clone();
    let sink = toolhost::ProgressSink::new(move |p| seen.lock().unwrap().push(p));
    let ctx = CallContext::new().with_progress(sink);
    let out = host
        .invoke_tool(
            ctx,
            "py.progress",
            Arguments::parse(r#"{"steps": 3}"#).unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(out.llm_text(), "3 steps");
    // Reports arrive on the client's own tasks: give the last one a moment.
    eventually("three reports", || reports.lock().unwrap().len() >= 3).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let reports = reports.lock().unwrap().clone();
    let messages: Vec<_> = reports.iter().map(|p| p.message.as_deref()).collect();
    // The server's reports for tokens it made up (another call's, one of
    // toolhost's own shape) went nowhere.
    assert_eq!(messages, [Some("step 1"), Some("step 2"), Some("step 3")]);
    assert_eq!(reports[2].progress, 3.0);
    assert_eq!(reports[2].total, Some(3.0));
    host.shutdown().await;
}

#[tokio::test]
async fn e3_list_changed_updates_the_registry() {
    let host = host_with(stdio_server("py")).await;
    assert!(host.get_tool("py.extra").is_none());
    let out = call(&host, "py.add_tool", r#"{"name": "extra"}"#)
        .await
        .unwrap();
    assert_eq!(out.llm_text(), "added extra");
    eventually("py.extra is registered", || {
        host.get_tool("py.extra").is_some()
    })
    .await;
    assert_eq!(
        host.get_tool("py.extra").unwrap().description,
        "added at run time as extra"
    );
    assert_eq!(
        call(&host, "py.extra", "{}").await.unwrap().llm_text(),
        "I am extra"
    );
    assert!(host.get_tool("py.echo").is_some(), "the others stay");
    host.shutdown().await;
}

/// The process id of the server behind tools `PREFIX.*` (its `pid` tool).
async fn server_pid(host: &ToolHost, prefix: &str) -> String {
    call(host, &format!("{prefix}.pid"), "{}")
        .await
        .unwrap()
        .llm_text()
        .into_owned()
}

/// Checks that `err` is the retryable failure of a call whose server
/// `name` had gone.
fn assert_server_gone(err: &ToolError, name: &str) {
    assert!(
        matches!(err, ToolError::Failed { message, retryable: true } if message.contains(&format!("MCP server `{name}`"))),
        "{err:?}"
    );
}

/// Kills the process `pid` (the server) with SIGKILL.
fn kill(pid: &str) {
    let status = std::process::Command::new("kill")
        .args(["-KILL", pid])
        .status()
        .unwrap();
    assert!(status.success(), "kill -KILL {pid}");
}

#[tokio::test]
async fn e3_a_killed_server_fails_the_call_naming_it_and_the_next_call_restarts_it() {
    let host = host_with(stdio_server("py")).await;
    let first = server_pid(&host, "py").await;
    kill(&first);
    let err = call(&host, "py.echo", r#"{"text": "anyone there?"}"#)
        .await
        .unwrap_err();
    assert_server_gone(&err, "py");
    assert_eq!(
        call(&host, "py.echo", r#"{"text": "back"}"#)
            .await
            .unwrap()
            .llm_text(),
        "back"
    );
    let second = server_pid(&host, "py").await;
    assert_ne!(first, second, "a new process serves the calls");
    host.shutdown().await;
}

#[tokio::test]
async fn e3_remote_calls_time_out_and_the_server_keeps_serving() {
    let host = host_with(stdio_server("py").timeout(Duration::from_secs(2))).await;
    let err = call(&host, "py.slow", r#"{"seconds": 30}"#)
        .await
        .unwrap_err();
    assert_eq!(err, ToolError::timeout(Duration::from_secs(2)));
    // The pipeline's own deadline applies too, whichever is first.
    let ctx = CallContext::new().with_timeout(Duration::from_millis(100));
    let err = host
        .invoke_tool(
            ctx,
            "py.slow",
            Arguments::parse(r#"{"seconds": 30}"#).unwrap(),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, ToolError::Timeout { .. }), "{err:?}");
    assert_eq!(
        call(&host, "py.echo", r#"{"text": "still here"}"#)
            .await
            .unwrap()
            .llm_text(),
        "still here"
    );
    host.shutdown().await;
}

/// The fixture server over streamable HTTP, on a free port; killed on drop.
struct HttpFixture {
    child: std::process::Child,
    url: String,
}

impl HttpFixture {
    fn start(token: &str) -> Self {
        Self::start_on(token, 0)
    }

    /// Serves on `port` (0: a free one).
    fn start_on(token: &str, port: u16) -> Self {
        use std::io::BufRead as _;
        require_python_sdk();
        let mut child = std::process::Command::new("python3")
            .arg(fixture())
            .args(["--http", "--token", token, "--port", &port.to_string()])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line
            .trim()
            .strip_prefix("port ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"));
        Self {
            url: format!("http://127.0.0.1:{port}/mcp"),
            child,
        }
    }

    /// The port it serves on.
    fn port(&self) -> u16 {
        let rest = self.url.strip_prefix("http://127.0.0.1:").unwrap();
        rest.strip_suffix("/mcp").unwrap().parse().unwrap()
    }
}

impl Drop for HttpFixture {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn http_server(url: &str, token: &str) -> McpServerConfig {
    McpServerConfig::new(
        "web",
        McpTransport::Http {
            url: url.to_owned(),
            bearer_token: Some(token.to_owned()),
        },
    )
}

#[tokio::test]
async fn e3_remote_tools_over_streamable_http() {
    let fixture = HttpFixture::start("open-sesame");
    let host = host_with(http_server(&fixture.url, "open-sesame")).await;
    assert!(
        host.get_tool("web.echo").is_some(),
        "{:?}",
        host.tool_names()
    );
    assert_eq!(
        call(&host, "web.echo", r#"{"text": "over http"}"#)
            .await
            .unwrap()
            .llm_text(),
        "over http"
    );
    assert_eq!(
        call(&host, "web.annotated", r#"{"text": "abc"}"#)
            .await
            .unwrap(),
        ToolOutput::dual("3 characters", "abc")
    );
    host.shutdown().await;

    let refused = ToolHost::new()
        .register_extension(Arc::new(
            McpClient::new(http_server(&fixture.url, "wrong")).unwrap(),
        ))
        .await
        .unwrap_err();
    let refused = toolhost::error::report(&refused);
    assert!(
        refused.contains("cannot connect to MCP server `web` at http://127.0.0.1:"),
        "{refused}"
    );
}

#[tokio::test]
async fn e3_a_dead_http_server_fails_the_call_naming_it_and_the_next_call_reconnects() {
    let fixture = HttpFixture::start("open-sesame");
    let host = host_with(http_server(&fixture.url, "open-sesame")).await;
    let first = server_pid(&host, "web").await;
    let port = fixture.port();
    drop(fixture); // killed: its session is gone with it
    let err = call(&host, "web.echo", r#"{"text": "anyone there?"}"#)
        .await
        .unwrap_err();
    assert_server_gone(&err, "web");
    // A new server on the same address: the next call opens a new session.
    let _fixture = HttpFixture::start_on("open-sesame", port);
    assert_eq!(
        call(&host, "web.echo", r#"{"text": "back"}"#)
            .await
            .unwrap()
            .llm_text(),
        "back"
    );
    let second = server_pid(&host, "web").await;
    assert_ne!(first, second, "a new process serves the calls");
    host.shutdown().await;
}

#[tokio::test]
async fn e3_mcp_tables_in_toolhost_toml_register_servers() {
    require_python_sdk();
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        r#"
        [mcp.py]
        command = ["python3", "{}"]
        prefix = "docs"
        env = {{ FIXTURE_GREETING = "hello from the config" }}
        timeout_ms = 20000
        "#,
        fixture().display()
    );
    let config = Config::parse(&text, dir.path()).unwrap();
    config.check().unwrap();
    let server = config.mcp_server("py").unwrap();
    assert_eq!(server.prefix, "docs");
    assert_eq!(server.timeout, Duration::from_secs(20));
    let BuiltHost {
        host,
        sandbox: _sandbox,
        ..
    } = config.build_host().await.unwrap();
    assert_eq!(host.extension_names(), ["mcp.py"]);
    assert_eq!(
        call(&host, "docs.env", r#"{"name": "FIXTURE_GREETING"}"#)
            .await
            .unwrap()
            .llm_text(),
        "hello from the config"
    );
    host.shutdown().await;

    let broken = Config::parse(
        "[mcp.gone]\ncommand = [\"/nonexistent/server\"]\n",
        dir.path(),
    )
    .unwrap();
    let err = broken
        .build_host()
        .await
        .err()
        .expect("the server cannot start");
    assert_eq!(err.key(), "mcp.gone");
    let text = report(&err);
    assert!(text.contains("cannot start MCP server `gone`"), "{text}");
}

#[test]
fn e3_mcp_tables_refuse_what_does_not_fit() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("[mcp.x]\nprefix = \"x\"\n", "mcp.x", "give `command`"),
        (
            "[mcp.x]\ncommand = [\"a\"]\nurl = \"http://127.0.0.1:1/mcp\"\n",
            "mcp.x",
            "not both",
        ),
        (
            "[mcp.x]\ncommand = []\n",
            "mcp.x.command",
            "the command is empty",
        ),
        (
            "[mcp.x]\nurl = \"ftp://example.com\"\n",
            "mcp.x.url",
            "not an http:// or https:// URL",
        ),
        (
            "[mcp.x]\nurl = \"http://127.0.0.1:1/mcp\"\nenv = { A = \"b\" }\n",
            "mcp.x.env",
            "applies to a `command`",
        ),
        (
            "[mcp.x]\ncommand = [\"a\"]\nbearer_token_env = \"T\"\n",
            "mcp.x.bearer_token_env",
            "applies to a `url`",
        ),
        (
            "[mcp.x]\nurl = \"http://127.0.0.1:1/mcp\"\nbearer_token_env = \"TOOLHOST_TEST_UNSET_VARIABLE\"\n",
            "mcp.x.bearer_token_env",
            "`TOOLHOST_TEST_UNSET_VARIABLE` is not set",
        ),
        (
            "[mcp.x]\ncommand = [\"a\"]\nprefix = \"a b\"\n",
            "mcp.x.prefix",
            "invalid prefix: `a b` contains ' '",
        ),
        (
            "[mcp.x]\ncommand = [\"a\"]\ncwd = \"nope\"\n",
            "mcp.x.cwd",
            "does not exist",
        ),
        (
            "[mcp.x]\ncommand = [\"a\"]\ntimeout_ms = 0\n",
            "mcp.x.timeout_ms",
            "above zero",
        ),
    ];
    for (text, key, reason) in cases {
        let err = Config::parse(text, dir.path())
            .and_then(|c| c.check())
            .unwrap_err();
        assert_eq!(err.key(), key, "{text}: {err}");
        let said = report(&err);
        assert!(said.contains(reason), "{text}: {said}");
    }
    let err = Config::parse("[mcp.x]\ncommand = [\"a\"]\ncomand = 1\n", dir.path()).unwrap_err();
    assert!(err.to_string().contains("unknown field `comand`"), "{err}");
    let err = Config::parse("[mcp.\"a b\"]\ncommand = [\"a\"]\n", dir.path()).unwrap_err();
    assert_eq!(err.key(), "mcp.a b");
}

/// The fixture whose tools ask the person behind the call, spoken to at
/// protocol 2026-07-28 (it asks by `input_required`), with no prefix.
fn asking_server() -> McpServerConfig {
    require_python_sdk();
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/mcp_asking_server.py");
    McpServerConfig::command(
        "asker",
        vec!["python3".into(), script.display().to_string()],
    )
    .prefix("")
    .protocol(McpProtocol::V2026_07_28)
}

/// A person who answers every question with `name`, once `gate` lets them
/// (every caller's question has been asked), recording what they saw.
struct Person {
    name: &'static str,
    gate: Arc<tokio::sync::Barrier>,
    seen: Mutex<Vec<String>>,
}

#[async_trait::async_trait]
impl toolhost::tool::elicitation::Elicitor for Person {
    async fn elicit(
        &self,
        request: &toolhost::tool::elicitation::ElicitationRequest,
    ) -> Result<
        toolhost::tool::elicitation::ElicitationAnswer,
        toolhost::tool::elicitation::ElicitationError,
    > {
        self.seen
            .lock()
            .unwrap()
            .push(format!("{}: {}", request.asked_by, request.message));
        self.gate.wait().await;
        Ok(toolhost::tool::elicitation::ElicitationAnswer::Accept(
            json!({"name": self.name, "age": 30}),
        ))
    }
}

#[tokio::test]
async fn n7_a_2026_servers_questions_reach_each_calls_own_person_even_in_parallel() {
    let host = host_with(asking_server()).await;
    // Both calls are asked before either answers: under 2026-07-28 each
    // question comes back with its own call (`input_required`), so two
    // calls in flight on one connection are no reason to ask no one.
    let gate = Arc::new(tokio::sync::Barrier::new(2));
    let person = |name| {
        Arc::new(Person {
            name,
            gate: gate.clone(),
            seen: Mutex::new(Vec::new()),
        })
    };
    let (ada, bob) = (person("Ada"), person("Bob"));
    let ask = |p: Arc<Person>, question: &'static str| {
        let host = host.clone();
        async move {
            let ctx = CallContext::new().with_elicitor(p);
            let args = Arguments::parse(&json!({"question": question}).to_string()).unwrap();
            host.invoke_tool(ctx, "who", args).await
        }
    };
    let (a, b) = tokio::time::timeout(
        Duration::from_secs(60),
        futures::future::join(ask(ada.clone(), "Ada?"), ask(bob.clone(), "Bob?")),
    )
    .await
    .expect("both calls end");
    assert_eq!(
        a.unwrap().llm_text(),
        r#"answer: accept {"age": 30, "name": "Ada"}"#
    );
    assert_eq!(
        b.unwrap().llm_text(),
        r#"answer: accept {"age": 30, "name": "Bob"}"#
    );
    assert_eq!(*ada.seen.lock().unwrap(), ["MCP server `asker`: Ada?"]);
    assert_eq!(*bob.seen.lock().unwrap(), ["MCP server `asker`: Bob?"]);
    host.shutdown().await;
}

#[tokio::test]
async fn n7_a_2026_servers_question_with_no_one_to_ask_fails_the_call_saying_why() {
    let host = host_with(asking_server()).await;
    let err = call(&host, "who", r#"{"question": "Who?"}"#)
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains(
            "MCP server `asker` asked a question toolhost cannot put: no one can be asked"
        ),
        "{text}"
    );
    host.shutdown().await;
}

#[tokio::test]
async fn e3_a_2026_servers_list_changes_arrive_on_its_subscription() {
    let host = host_with(asking_server()).await;
    assert!(host.get_tool("extra").is_none());
    let out = call(&host, "add_tool", r#"{"name": "extra"}"#)
        .await
        .unwrap();
    assert_eq!(out.llm_text(), "added extra");
    eventually("extra is registered", || host.get_tool("extra").is_some()).await;
    assert_eq!(
        call(&host, "extra", "{}").await.unwrap().llm_text(),
        "I am extra"
    );
    host.shutdown().await;
}

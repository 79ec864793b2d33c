//! OpenTelemetry traces of every call (rule X2), checked against real
//! OpenTelemetry software on both sides: a client written with the
//! official Python MCP SDK and instrumented with the official
//! OpenTelemetry SDK (`tests/fixtures/mcp_traced_client.py`) starts the
//! trace and sends its context in `_meta`; a remote MCP server behind
//! toolhost, also instrumented (`tests/fixtures/mcp_traced_server.py`),
//! records the context it received and exports its own spans; and what
//! toolhost exports by OTLP/HTTP is decoded with the official protobuf
//! definitions (`tests/fixtures/otlp_receiver.py`). The three must form
//! one trace. Every process is started here on 127.0.0.1 and stopped at
//! the end.

mod common;

use std::collections::HashSet;
use std::io::{BufRead as _, BufReader};
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{HttpServe, TestConfig, fixture, require_python_sdk, toolhost};
use serde_json::{Value, json};

/// The argument text every call carries; no span attribute may hold it.
const PAYLOAD: &str = "ARG-PAYLOAD-7781-do-not-trace";

/// A secret of the configuration; no span attribute may hold it.
const SECRET: &str = "sekret-XYZ-1234567";

/// A process killed and reaped on drop.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Fails with a clear message if the OpenTelemetry Python packages are
/// not installed.
fn require_otel_python() {
    require_python_sdk();
    let ok = Command::new("python3")
        .args(["-c", "import opentelemetry.sdk, opentelemetry.proto"])
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok,
        "python3 with opentelemetry-sdk and opentelemetry-proto is needed: run `make setup`"
    );
}

/// The OTLP/HTTP receiver in `mode`, writing spans to `out`; its port.
fn receiver(out: &Path, mode: &str) -> (Proc, u16) {
    let mut child = Command::new("python3")
        .arg(fixture("otlp_receiver.py"))
        .arg(out)
        .args(["--mode", mode])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port = line
        .trim()
        .strip_prefix("port ")
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("the receiver said {line:?}"));
    (Proc(child), port)
}

/// Reads a file of JSON lines (none if it is not there yet).
fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Waits until `path` holds spans that `done` accepts (at most two
/// minutes: only a hang reaches that).
fn wait_for(path: &Path, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let start = Instant::now();
    loop {
        let spans = lines(path);
        if done(&spans) {
            return spans;
        }
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "spans still missing; have {spans:#?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A configuration serving the template plugin and the traced remote
/// server (as `remote.echo`), exporting to `port`, with a secret.
fn traced_config(dir: &Path, port: u16, tracing_extra: &str) -> TestConfig {
    let secret = dir.join("secret");
    std::fs::write(&secret, SECRET).unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    TestConfig::new(&format!(
        "\n[secrets.tok]\nfile = {secret:?}\n\n\
         [mcp.remote]\ncommand = [\"python3\", {server:?}]\n\
         env = {{ TRACE_SPANS = {spans:?}, TRACE_RECEIVED = {received:?} }}\n\n\
         [tracing]\nendpoint = \"http://127.0.0.1:{port}\"\nservice_name = \"toolhost-test\"\n\
         {tracing_extra}\n",
        server = fixture("mcp_traced_server.py"),
        spans = dir.join("remote-spans.jsonl"),
        received = dir.join("remote-received.jsonl"),
    ))
}

/// Runs the traced Python client on `plan`; its report.
fn traced_client(plan: &Value) -> Value {
    common::python_fixture_report("mcp_traced_client.py", plan)
}

/// The calls each run makes: the remote server's echo, the plugin's, and
/// a tool named by the secret (unknown).
fn calls() -> Value {
    json!([
        {"tool": "remote.echo", "args": {"text": PAYLOAD}},
        {"tool": "echo", "args": {"text": PAYLOAD}},
        {"tool": SECRET, "args": {"text": PAYLOAD}},
    ])
}

fn span<'a>(spans: &'a [Value], name: &str) -> &'a Value {
    spans
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no span {name} in {spans:#?}"))
}

fn children<'a>(spans: &'a [Value], parent: &Value) -> Vec<&'a Value> {
    spans
        .iter()
        .filter(|s| s["parent_span_id"] == parent["span_id"])
        .collect()
}

/// The checks both transports share: one trace from the client through
/// toolhost to the remote server, with no payload or secret in any
/// attribute.
fn check_one_trace(dir: &Path, exported: &Path, report: &Value) {
    let results = report["results"].as_array().unwrap();
    assert_eq!(results[0]["text"], PAYLOAD, "{report}");
    assert_eq!(results[1]["text"], PAYLOAD, "{report}");
    assert!(results[2].get("protocol_error").is_some(), "{report}");
    let trace_id = report["trace_id"].as_str().unwrap();
    let client = lines(&dir.join("client-spans.jsonl"));
    let spans = wait_for(exported, |spans| {
        spans
            .iter()
            .filter(|s| s["attributes"]["mcp.method.name"] == "tools/call")
            .count()
            >= 3
    });
    let remote_call = span(&spans, "tools/call remote.echo");
    let plugin_call = span(&spans, "tools/call echo");
    let unknown = spans
        .iter()
        .find(|s| {
            s["name"] == "tools/call" && s["attributes"]["toolhost.outcome"] == "unknown_tool"
        })
        .unwrap_or_else(|| panic!("no unknown tool span in {spans:#?}"));
    // One trace: toolhost's call spans are children of the client's
    // request spans, in the client's trace.
    let client_ids: HashSet<&str> = client
        .iter()
        .filter(|s| s["trace_id"] == trace_id)
        .map(|s| s["span_id"].as_str().unwrap())
        .collect();
    for call in [remote_call, plugin_call, unknown] {
        assert_eq!(call["trace_id"], trace_id, "{call:#}");
        assert!(
            client_ids.contains(call["parent_span_id"].as_str().unwrap()),
            "the parent of {call:#} is not one of the client's spans {client_ids:?}"
        );
        assert_eq!(call["service"], "toolhost-test");
        assert_eq!(call["kind"], 2, "a call's span is a server span");
    }
    let client_send = client
        .iter()
        .find(|s| s["span_id"] == remote_call["parent_span_id"])
        .unwrap();
    assert_eq!(client_send["name"], "MCP send tools/call remote.echo");
    // The remote server received, in `_meta`, a span of toolhost's that was
    // exported, and its own span is that span's child.
    let received = wait_for(&dir.join("remote-received.jsonl"), |r| !r.is_empty());
    let traceparent = received[0]["traceparent"].as_str().unwrap();
    let parts: Vec<&str> = traceparent.split('-').collect();
    assert_eq!(parts[1], trace_id, "{traceparent}");
    let ours: HashSet<&str> = spans
        .iter()
        .map(|s| s["span_id"].as_str().unwrap())
        .collect();
    assert!(
        ours.contains(parts[2]),
        "{traceparent} names no exported span"
    );
    assert_eq!(parts[2], remote_call["span_id"], "{traceparent}");
    let remote = wait_for(&dir.join("remote-spans.jsonl"), |s| {
        s.iter().any(|s| s["name"] == "tools/call echo")
    });
    let remote_span = span(&remote, "tools/call echo");
    assert_eq!(remote_span["trace_id"], trace_id);
    assert_eq!(remote_span["parent_span_id"], remote_call["span_id"]);
    // The stages are children of their call's span.
    let names = |call: &Value| -> Vec<String> {
        children(&spans, call)
            .iter()
            .map(|s| s["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let remote_stages = names(remote_call);
    assert!(
        remote_stages.contains(&"toolhost.mcp_forward".into()),
        "{remote_stages:?}"
    );
    assert!(
        remote_stages.contains(&"toolhost.validate".into()),
        "{remote_stages:?}"
    );
    let plugin_stages = names(plugin_call);
    // (`toolhost.queue_wait` only when the call waited for a slot.)
    for stage in ["toolhost.instantiate", "toolhost.guest"] {
        assert!(
            plugin_stages.contains(&stage.into()),
            "{stage} not in {plugin_stages:?}"
        );
    }
    for child in children(&spans, plugin_call) {
        assert_eq!(child["trace_id"], trace_id);
        assert!(
            child["start"].as_u64() >= plugin_call["start"].as_u64(),
            "{child:#}"
        );
        assert!(
            child["end"].as_u64() <= plugin_call["end"].as_u64(),
            "{child:#}"
        );
    }
    assert_eq!(plugin_call["attributes"]["toolhost.plugin"], "template");
    assert_eq!(plugin_call["attributes"]["toolhost.outcome"], "ok");
    assert_eq!(plugin_call["attributes"]["toolhost.tenant"], "default");
    assert_eq!(remote_call["attributes"]["toolhost.plugin"], "mcp.remote");
    assert_eq!(unknown["attributes"]["error.type"], "unknown_tool");
    // No attribute carries the argument or the secret, not even the
    // unknown tool's name, which was the secret.
    let all = serde_json::to_string(&spans).unwrap();
    assert!(!all.contains(PAYLOAD), "an argument is in a span: {all}");
    assert!(!all.contains(SECRET), "the secret is in a span: {all}");
    assert!(unknown["attributes"]["gen_ai.tool.name"].is_string());
}

#[test]
fn x2_one_trace_from_a_client_over_stdio_through_toolhost_to_a_remote_server() {
    require_otel_python();
    let dir = tempfile::tempdir().unwrap();
    let exported = dir.path().join("exported.jsonl");
    let (_receiver, port) = receiver(&exported, "ok");
    let config = traced_config(dir.path(), port, "");
    let report = traced_client(&json!({
        "stdio": [env!("CARGO_BIN_EXE_toolhost"), "serve", "--config", config.path()],
        "spans": dir.path().join("client-spans.jsonl"),
        "calls": calls(),
    }));
    check_one_trace(dir.path(), &exported, &report);
}

#[test]
fn x2_one_trace_over_http_where_meta_wins_over_the_traceparent_header() {
    require_otel_python();
    let dir = tempfile::tempdir().unwrap();
    let exported = dir.path().join("exported.jsonl");
    let (_receiver, port) = receiver(&exported, "ok");
    let config = traced_config(dir.path(), port, "");
    let mut serve = HttpServe::start(&config, &[]);
    // A header naming another trace, which `_meta`'s context overrides.
    let header = "00-11111111111111111111111111111111-2222222222222222-01";
    let report = traced_client(&json!({
        "http": serve.url(),
        "headers": {"traceparent": header},
        "spans": dir.path().join("client-spans.jsonl"),
        "calls": calls(),
    }));
    // SIGTERM flushes the spans still queued.
    serve.signal("TERM");
    assert_eq!(serve.exit_code(Duration::from_secs(60)), Some(0));
    check_one_trace(dir.path(), &exported, &report);
    let spans = lines(&exported);
    assert!(
        spans
            .iter()
            .all(|s| s["trace_id"] != "11111111111111111111111111111111"),
        "the header's trace was used"
    );
}

#[test]
fn x2_without_meta_the_http_traceparent_header_is_the_parent() {
    require_otel_python();
    let dir = tempfile::tempdir().unwrap();
    let exported = dir.path().join("exported.jsonl");
    let (_receiver, port) = receiver(&exported, "ok");
    let config = traced_config(dir.path(), port, "");
    let mut serve = HttpServe::start(&config, &["--stateless"]);
    let parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": PAYLOAD}}});
    let head = common::request(
        &serve.addr,
        "POST",
        &[
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
            ("mcp-protocol-version", "2025-11-25"),
            ("traceparent", parent),
            ("tracestate", "vendor=abc"),
        ],
        body.to_string().as_bytes(),
    );
    assert_eq!(head.status, 200);
    serve.signal("TERM");
    assert_eq!(serve.exit_code(Duration::from_secs(60)), Some(0));
    let spans = wait_for(&exported, |s| {
        s.iter().any(|s| s["name"] == "tools/call echo")
    });
    let call = span(&spans, "tools/call echo");
    assert_eq!(call["trace_id"], "0af7651916cd43dd8448eb211c80319c");
    assert_eq!(call["parent_span_id"], "b7ad6b7169203331");
}

/// Serves with tracing to a collector in `mode`, makes `n` calls over
/// HTTP, and stops the server: every call answered, and the server gone
/// within a bound that only a hang exceeds.
fn calls_with_a_bad_collector(mode: &str, n: usize) {
    require_otel_python();
    let dir = tempfile::tempdir().unwrap();
    let exported = dir.path().join("exported.jsonl");
    let (_receiver, port) = receiver(&exported, mode);
    let config = traced_config(
        dir.path(),
        port,
        "max_queue_size = 64\nexport_timeout_ms = 2000\n",
    );
    let mut serve = HttpServe::start(&config, &[]);
    let calls: Vec<Value> = (0..n)
        .map(|_| json!({"tool": "echo", "args": {"text": "x"}}))
        .collect();
    let report = traced_client(&json!({
        "http": serve.url(),
        "spans": dir.path().join("client-spans.jsonl"),
        "calls": calls,
    }));
    let results = report["results"].as_array().unwrap();
    assert_eq!(results.len(), n);
    assert!(results.iter().all(|r| r["text"] == "x"), "{report}");
    // The collector was reached, and refused or stalled.
    let count = dir.path().join("exported.jsonl.count");
    let start = Instant::now();
    while !count.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "no export reached the collector"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(lines(&exported).is_empty());
    serve.signal("TERM");
    assert_eq!(serve.exit_code(Duration::from_secs(60)), Some(0));
}

#[test]
fn x2_a_stalled_collector_never_blocks_calls_or_the_shutdown() {
    calls_with_a_bad_collector("stall", 300);
}

#[test]
fn x2_a_refusing_collector_never_blocks_calls_or_the_shutdown() {
    calls_with_a_bad_collector("refuse", 300);
}

#[test]
fn x2_a_bad_tracing_table_is_refused_by_check_naming_the_key() {
    let config =
        TestConfig::new("\n[tracing]\nendpoint = \"http://127.0.0.1:4318\"\nsampling_ratio = 2\n");
    let out = toolhost()
        .args(["check", "--config", config.path()])
        .output()
        .unwrap();
    let (_, stderr) = common::texts(&out);
    assert!(!out.status.success());
    assert!(stderr.contains("tracing.sampling_ratio"), "{stderr}");
}

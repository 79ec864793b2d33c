//! `toolhost serve` against the official Python MCP SDK's client (installed
//! by `make setup`), over stdio and streamable HTTP, and the guards of the
//! HTTP endpoint.

mod common;

use std::io::{BufRead as _, BufReader, Write as _};
use std::process::Stdio;

use common::{
    HttpServe, TestConfig, fixture, initialize_body, post_status, python_client, request,
    require_python_sdk, toolhost,
};
use serde_json::{Value, json};

/// The steps every transport is checked with: list, a good call, bad
/// arguments, a call that times out, and an unknown tool.
fn basic_steps() -> Value {
    json!([
        {"list": true},
        {"call": "echo", "args": {"text": "hello over MCP"}},
        {"call": "echo", "args": {"text": 42}},
        {"call": "spin"},
        {"call": "no_such_tool"},
    ])
}

fn check_basic_session(session: &Value) {
    let init = &session["init"];
    assert_eq!(init["server"], "toolhost");
    assert_eq!(init["tools_list_changed"], true);
    let steps = session["steps"].as_array().unwrap();
    let tools = steps[0].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    for expected in ["echo", "spin", "flood", "fine"] {
        assert!(names.contains(&expected), "{names:?}");
    }
    let echo = tools.iter().find(|t| t["name"] == "echo").unwrap();
    assert_eq!(echo["description"], "Returns the text it is given");
    assert_eq!(echo["input_schema"]["properties"]["text"]["type"], "string");

    assert_eq!(
        steps[1],
        json!({
            "is_error": false,
            "content": [{"type": "text", "text": "hello over MCP", "audience": null}],
            "structured": null,
        })
    );
    assert_eq!(steps[2]["is_error"], true, "{}", steps[2]);
    let reason = steps[2]["content"][0]["text"].as_str().unwrap();
    assert!(
        reason.starts_with("invalid arguments at `/text`"),
        "{reason}"
    );
    assert_eq!(steps[3]["is_error"], true, "{}", steps[3]);
    let timeout = steps[3]["content"][0]["text"].as_str().unwrap();
    assert!(
        timeout.starts_with("plugin `runaway` timed out after "),
        "{timeout}"
    );
    assert_eq!(steps[4]["protocol_error"]["code"], -32602, "{}", steps[4]);
    assert_eq!(
        steps[4]["protocol_error"]["message"],
        "unknown tool `no_such_tool`"
    );
    assert_eq!(session["stream_errors"], json!([]));
}

#[test]
fn python_sdk_client_over_stdio() {
    let config = TestConfig::new("");
    let sessions = python_client(&json!({
        "stdio": [env!("CARGO_BIN_EXE_toolhost"), "serve", "--config", config.path()],
        "steps": basic_steps(),
    }));
    assert_eq!(sessions[0]["init"]["protocol_version"], "2025-11-25");
    check_basic_session(&sessions[0]);
}

/// A bearer token strong enough for `--token-file` (rule C8).
const TOKEN: &str = "Kq7vX2mP9sT4wB8nR3jL6yF1hZ5cD0gE";

#[test]
fn python_sdk_client_over_streamable_http() {
    let config = TestConfig::new("");
    let token_file = config.dir.path().join("token");
    std::fs::write(&token_file, format!("{TOKEN}\n")).unwrap();
    let serve = HttpServe::start(&config, &["--token-file", token_file.to_str().unwrap()]);
    let sessions = python_client(&json!({
        "http": serve.url(),
        "token": TOKEN,
        "steps": basic_steps(),
    }));
    check_basic_session(&sessions[0]);
}

#[test]
fn http_refuses_missing_or_wrong_tokens_with_401() {
    let config = TestConfig::new("");
    let token_file = config.dir.path().join("token");
    std::fs::write(&token_file, TOKEN).unwrap();
    let serve = HttpServe::start(&config, &["--token-file", token_file.to_str().unwrap()]);
    let body = initialize_body();
    let status =
        |authorization: &str| post_status(&serve.addr, &[("Authorization", authorization)], &body);
    assert_eq!(post_status(&serve.addr, &[], &body), 401);
    assert_eq!(status("Bearer wrong"), 401);
    assert_eq!(
        status(&format!("Bearer {}", &TOKEN[..TOKEN.len() - 1])),
        401
    );
    assert_eq!(status(&format!("Basic {TOKEN}")), 401);
    assert_eq!(status(&format!("Bearer {TOKEN}")), 200);
}

#[test]
fn http_refuses_foreign_origins_with_403() {
    let config = TestConfig::new("");
    let serve = HttpServe::start(&config, &["--allow-origin", "https://app.example.com"]);
    let body = initialize_body();
    let status = |origin: &str| post_status(&serve.addr, &[("Origin", origin)], &body);
    assert_eq!(status("http://evil.example"), 403);
    assert_eq!(status("https://app.example.com.evil.example"), 403);
    assert_eq!(status("null"), 403);
    // Pages on this machine, and origins allowed on the command line, pass.
    assert_eq!(status("http://localhost:3000"), 200);
    assert_eq!(status("http://127.0.0.1:8080"), 200);
    assert_eq!(status("https://app.example.com"), 200);
    // So does a request without an Origin (not from a browser).
    assert_eq!(post_status(&serve.addr, &[], &body), 200);
    // A Host header naming another site is DNS rebinding: refused too.
    let mut stream = std::net::TcpStream::connect(&serve.addr).unwrap();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: evil.example\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(request.as_bytes()).unwrap();
    stream.write_all(&body).unwrap();
    let mut line = String::new();
    BufReader::new(stream).read_line(&mut line).unwrap();
    assert!(line.starts_with("HTTP/1.1 403"), "{line}");
}

#[test]
fn http_refuses_oversized_requests_with_413() {
    let config = TestConfig::new("");
    let serve = HttpServe::start(&config, &["--max-request-kb", "16"]);
    let mut big = initialize_body();
    // Still one JSON document, just longer than 16 KiB.
    big.truncate(big.len() - 1);
    big.extend_from_slice(format!(r#","padding":"{}"}}"#, "x".repeat(32 << 10)).as_bytes());
    assert_eq!(post_status(&serve.addr, &[], &big), 413);
    assert_eq!(post_status(&serve.addr, &[], &initialize_body()), 200);
}

#[test]
fn http_refuses_sessions_beyond_the_cap_with_503_until_one_closes() {
    let config = TestConfig::new("");
    let serve = HttpServe::start(&config, &["--max-sessions", "2"]);
    let open = || request(&serve.addr, "POST", &[], &initialize_body());
    let first = open();
    assert_eq!(first.status, 200);
    assert_eq!(open().status, 200);
    let refused = open();
    assert_eq!(refused.status, 503);
    assert_eq!(refused.header("retry-after"), Some("5"));
    // Requests within an open session are not affected by the cap.
    let id = first
        .header("mcp-session-id")
        .expect("a session id")
        .to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let in_session = request(
        &serve.addr,
        "POST",
        &[
            ("Mcp-Session-Id", &id),
            ("Mcp-Protocol-Version", "2025-11-25"),
        ],
        initialized.to_string().as_bytes(),
    );
    assert_eq!(in_session.status, 202);
    // Closing a session makes room for a new one.
    let closed = request(&serve.addr, "DELETE", &[("Mcp-Session-Id", &id)], b"");
    // Rule N5: 200 or 204, which every SDK takes for success (not 202).
    assert_eq!(closed.status, 204, "DELETE answered {}", closed.status);
    let gone = request(
        &serve.addr,
        "POST",
        &[
            ("Mcp-Session-Id", &id),
            ("Mcp-Protocol-Version", "2025-11-25"),
        ],
        initialized.to_string().as_bytes(),
    );
    assert_eq!(gone.status, 404, "a deleted session is not found");
    assert_eq!(open().status, 200);
    assert_eq!(open().status, 503);
}

#[test]
fn http_answers_50_concurrent_calls_from_5_sessions() {
    let config = TestConfig::new("");
    let serve = HttpServe::start(&config, &[]);
    let calls: Vec<Value> = (0..10)
        .map(|i| json!({"call": "echo", "args": {"text": format!("call {i}")}}))
        .collect();
    let sessions = python_client(&json!({
        "http": serve.url(),
        "sessions": 5,
        "steps": [{"concurrent": calls}],
    }));
    assert_eq!(sessions.len(), 5);
    for session in &sessions {
        let results = session["steps"][0].as_array().unwrap();
        assert_eq!(results.len(), 10);
        for (i, result) in results.iter().enumerate() {
            assert_eq!(result["is_error"], false, "{result}");
            assert_eq!(result["content"][0]["text"], format!("call {i}"));
        }
    }
}

/// Raw JSON-RPC over the child's pipes, so the test sees every byte on
/// stdout.
fn rpc(stdin: &mut impl std::io::Write, message: Value) {
    writeln!(stdin, "{message}").unwrap();
    stdin.flush().unwrap();
}

#[test]
fn stdio_carries_nothing_but_protocol_even_when_a_plugin_floods() {
    // `flood` must answer: a limit no busy machine reaches.
    let config = TestConfig::new("").with_runaway_timeout_ms(10_000);
    let mut child = toolhost()
        .args(["serve", "--config", config.path(), "--log", "info"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // If the server hangs, kill it, so that the reads below end instead of
    // hanging the tests. The child is not reaped before `done` is dropped,
    // so its id cannot be reused meanwhile.
    let (done, watch) = std::sync::mpsc::channel::<()>();
    let pid = child.id().to_string();
    let watchdog = std::thread::spawn(move || {
        if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
            watch.recv_timeout(std::time::Duration::from_secs(120))
        {
            let _ = std::process::Command::new("kill")
                .args(["-KILL", &pid])
                .status();
        }
    });
    let mut stdin = child.stdin.take().unwrap();
    let stderr = child.stderr.take().unwrap();
    let log = std::thread::spawn(move || std::io::read_to_string(stderr).unwrap());
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut read_answer = |id: u64| -> Vec<String> {
        let mut lines = Vec::new();
        loop {
            let mut line = String::new();
            assert!(stdout.read_line(&mut line).unwrap() > 0, "stdout closed");
            let answered = serde_json::from_str::<Value>(&line).is_ok_and(|v| v["id"] == id);
            lines.push(line);
            if answered {
                return lines;
            }
        }
    };
    rpc(
        &mut stdin,
        serde_json::from_slice(&initialize_body()).unwrap(),
    );
    let mut lines = read_answer(1);
    rpc(
        &mut stdin,
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    rpc(
        &mut stdin,
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "flood", "arguments": {}}}),
    );
    let answer = read_answer(2);
    let last: Value = serde_json::from_str(answer.last().unwrap()).unwrap();
    assert_eq!(last["result"]["content"][0]["text"], "flooded");
    lines.extend(answer);
    drop(stdin);
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    drop(done);
    watchdog.join().unwrap();
    let status = child.wait().unwrap();
    lines.extend(rest.lines().map(str::to_owned));
    for line in &lines {
        let message: Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("not JSON-RPC on stdout ({e}): {line:.200}"));
        assert_eq!(message["jsonrpc"], "2.0", "{line:.200}");
    }
    assert!(
        status.success(),
        "serve exits 0 when the client closes stdin"
    );
    let log = log.join().unwrap();
    assert!(
        log.contains("xxxxxxxx"),
        "the guest's output went to the log"
    );
}

#[test]
fn stdio_without_a_handshake_exits_1() {
    let config = TestConfig::new("");
    let out = toolhost()
        .args(["serve", "--config", config.path()])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("error: the MCP handshake on stdio failed"),
        "{stderr}"
    );
}

#[test]
fn e3_list_changed_reaches_clients_through_serve() {
    require_python_sdk();
    let config = TestConfig::new(&format!(
        "\n[mcp.py]\ncommand = [\"python3\", \"{}\"]\n",
        fixture("mcp_server.py").display()
    ));
    let sessions = python_client(&json!({
        "stdio": [env!("CARGO_BIN_EXE_toolhost"), "serve", "--config", config.path()],
        "steps": [
            {"call": "py.echo", "args": {"text": "two hops"}},
            {"call": "py.add_tool", "args": {"name": "extra"}},
            {"wait_list_changed": 20},
            {"list": true},
            {"call": "py.extra"},
        ],
    }));
    let steps = sessions[0]["steps"].as_array().unwrap();
    assert_eq!(steps[0]["content"][0]["text"], "two hops");
    assert_eq!(steps[1]["content"][0]["text"], "added extra");
    assert_eq!(steps[2], json!({"list_changed": true}));
    let names: Vec<&str> = steps[3]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"py.extra") && names.contains(&"echo"),
        "{names:?}"
    );
    assert_eq!(steps[4]["content"][0]["text"], "I am extra");
}

/// `toolhost serve` on stdio, its stdout (and, when logged, its stderr)
/// read line by line on a thread; killed on drop.
struct StdioServe {
    child: std::process::Child,
    /// `None` once closed.
    stdin: Option<std::process::ChildStdin>,
    lines: std::sync::mpsc::Receiver<String>,
    /// The log's lines, with [`logged`](Self::logged).
    log: Option<std::sync::mpsc::Receiver<String>>,
    /// The log's lines read so far.
    seen: Vec<String>,
}

/// Each line `from` gives, sent on the receiver, from a thread.
fn lines_of(from: impl std::io::Read + Send + 'static) -> std::sync::mpsc::Receiver<String> {
    let (tx, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(from).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    lines
}

impl StdioServe {
    fn start(config: &TestConfig) -> Self {
        Self::spawn(config.path.as_path(), false)
    }

    /// Serving `config` with debug logs, after the MCP handshake.
    fn logged(config: &std::path::Path) -> Self {
        let mut serve = Self::spawn(config, true);
        serve.send_line(&initialize_body());
        serve.answer(&json!(1));
        serve.send_line(br#"{"jsonrpc": "2.0", "method": "notifications/initialized"}"#);
        serve
    }

    fn spawn(config: &std::path::Path, logged: bool) -> Self {
        let mut command = toolhost();
        command.args(["serve", "--config", config.to_str().unwrap()]);
        if logged {
            command.args(["--log", "debug"]);
        }
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(if logged {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .spawn()
            .unwrap();
        Self {
            stdin: child.stdin.take(),
            lines: lines_of(child.stdout.take().unwrap()),
            log: child.stderr.take().map(lines_of),
            child,
            seen: Vec::new(),
        }
    }

    /// The answer to request `id`, `method` with `params`.
    fn ask(&mut self, id: u64, method: &str, params: Value) -> Value {
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send_line(request.to_string().as_bytes());
        self.answer(&json!(id))
    }

    /// Waits (a minute at most: only a hang takes that long) for a log
    /// line containing `text`.
    fn wait_for_log(&mut self, text: &str) {
        let log = self.log.as_ref().expect("a logged server");
        let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while !self.seen.iter().any(|l| l.contains(text)) {
            let left = until.saturating_duration_since(std::time::Instant::now());
            match log.recv_timeout(left) {
                Ok(line) => self.seen.push(line),
                Err(_) => panic!("no log line with {text:?}; the log: {:#?}", self.seen),
            }
        }
    }

    /// Closes stdin and waits for a clean exit: the whole log.
    fn stop(mut self) -> Vec<String> {
        drop(self.stdin.take());
        let status = self.child.wait().unwrap();
        assert!(status.success(), "{status}");
        let mut seen = std::mem::take(&mut self.seen);
        seen.extend(self.log.iter().flatten());
        seen
    }

    fn send_line(&mut self, line: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        stdin.write_all(line).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// The next message with id `id` (`null` for an error without one).
    fn answer(&mut self, id: &Value) -> Value {
        loop {
            let line = self
                .lines
                .recv_timeout(std::time::Duration::from_secs(60))
                .unwrap_or_else(|_| panic!("no answer to id {id} within 60 s"));
            let message: Value = serde_json::from_str(&line).unwrap();
            if message.get("id") == Some(id) {
                return message;
            }
        }
    }
}

impl Drop for StdioServe {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn c6_stdio_answers_requests_it_cannot_decode_and_serves_the_next() {
    let config = TestConfig::new("");
    let mut serve = StdioServe::start(&config);
    serve.send_line(&initialize_body());
    serve.answer(&json!(1));
    serve.send_line(
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
            .to_string()
            .as_bytes(),
    );
    let call = |id: u64, arguments: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{arguments}}}}}"#
        )
    };
    let deep = format!(
        r#"{{"text":{}"x"{}}}"#,
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    serve.send_line(call(2, &deep).as_bytes());
    assert_eq!(serve.answer(&json!(2))["error"]["code"], -32700);
    serve.send_line(call(3, r#"{"text": 1e400}"#).as_bytes());
    assert_eq!(serve.answer(&json!(3))["error"]["code"], -32700);
    serve.send_line(b"{\"jsonrpc\": \"2.0\", oops");
    assert_eq!(serve.answer(&Value::Null)["error"]["code"], -32700);
    serve.send_line(
        call(
            4,
            &format!(r#"{{"text":{}"x"{}}}"#, "[".repeat(80), "]".repeat(80)),
        )
        .as_bytes(),
    );
    assert_eq!(serve.answer(&json!(4))["error"]["code"], -32602);
    serve.send_line(call(5, r#"{"text": "after all that"}"#).as_bytes());
    let answer = serve.answer(&json!(5));
    assert_eq!(
        answer["result"]["content"][0]["text"], "after all that",
        "{answer}"
    );
}

#[test]
fn c6_http_answers_malformed_json_with_400_and_a_parse_error() {
    let config = TestConfig::new("");
    let serve = HttpServe::start(&config, &[]);
    for body in [
        &b"{oops"[..],
        br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"n":1e400}}"#,
    ] {
        let head = request(&serve.addr, "POST", &[], body);
        assert_eq!(head.status, 400);
        assert_eq!(head.header("content-type"), Some("application/json"));
        assert_eq!(post_status(&serve.addr, &[], &initialize_body()), 200);
    }
}

#[test]
fn n1_n2_a_plugins_blocks_and_structured_output_reach_an_mcp_client_whole() {
    let config = TestConfig::new(&format!(
        "\n[plugins.decider]\nwasm = \"{}\"\n",
        common::wasm("decider").display()
    ));
    let session = python_client(&json!({
        "stdio": [env!("CARGO_BIN_EXE_toolhost"), "serve", "--config", config.path()],
        "steps": [
            {"list": true},
            {"call": "rich", "args": {"priority": 0.5}},
            {"call": "sum", "args": {"numbers": [1, 2.5]}},
        ],
    }))
    .remove(0);
    let tools = session["steps"][0].as_array().unwrap();
    let sum = tools.iter().find(|t| t["name"] == "sum").unwrap();
    assert_eq!(sum["output_schema"]["required"], json!(["sum", "count"]));
    let rich = &session["steps"][1];
    assert_eq!(rich["is_error"], false);
    assert_eq!(
        rich["content"],
        json!([
            {"type": "text", "text": "for the person", "audience": ["user"]},
            {"type": "resource_link", "uri": "file:///notes/a.md", "name": "a.md",
             "mime_type": "text/markdown", "audience": null},
            {"type": "resource", "uri": "file:///notes/b.txt", "mime_type": "text/plain",
             "text": "bee", "audience": ["assistant"]},
            {"type": "resource", "uri": "file:///notes/c.bin", "mime_type": null,
             "blob": "AAEC", "audience": null},
        ])
    );
    let sum = &session["steps"][2];
    assert_eq!(sum["structured"], json!({"sum": 3.5, "count": 2}));
    assert_eq!(sum["content"][0]["text"], r#"{"count":2,"sum":3.5}"#);
}

#[test]
fn w7_a_client_gone_before_the_background_loads_end_leaves_no_failure_logged() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("toolhost.toml");
    let mut text = format!(
        "[host]\ncache_dir = {:?}\n",
        dir.path().join("cache").display().to_string()
    );
    for i in 0..10 {
        text.push_str(&format!(
            "\n[plugins.echo{i}]\nwasm = {:?}\nsettings = {{ tool = \"echo{i}\" }}\n",
            common::wasm("named_echo").display().to_string()
        ));
    }
    std::fs::write(&config, text).unwrap();
    // The first start fills the cache; each later one lists the ten from it
    // and ends while their code is still loading behind the answer. Those
    // loads are stopped, not failed: the log says nothing of them. (Before,
    // the runtime's shutdown cancelled them and about one start in ten
    // logged each as a failed load.)
    StdioServe::logged(&config).stop();
    for start in 0..10 {
        let mut serve = StdioServe::logged(&config);
        let tools = serve.ask(2, "tools/list", json!({}));
        assert_eq!(tools["result"]["tools"].as_array().unwrap().len(), 10);
        let log = serve.stop();
        assert!(
            !log.iter().any(|l| l.contains("did not load")),
            "start {start}: {log:#?}"
        );
    }
}

#[test]
fn w7_serve_lists_cached_plugins_at_once_and_loads_their_code_in_the_background() {
    // A cache of the test's own, so that the first start is the one that
    // fills it.
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("toolhost.toml");
    std::fs::write(
        &config,
        format!(
            "[host]\ncache_dir = {:?}\n\n[plugins.template]\nwasm = {:?}\n",
            dir.path().join("cache").display().to_string(),
            common::wasm("template").display().to_string(),
        ),
    )
    .unwrap();
    let echo = |serve: &mut StdioServe, id| {
        let answer = serve.ask(
            id,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "hi"}}),
        );
        assert_eq!(answer["result"]["content"][0]["text"], "hi", "{answer}");
    };
    let tools = |serve: &mut StdioServe| {
        let answer = serve.ask(2, "tools/list", json!({}));
        answer["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    // The first start has no cached list: the plugin is loaded before the
    // server answers, and nothing is left for the background.
    let mut first = StdioServe::logged(&config);
    assert_eq!(tools(&mut first), ["echo"]);
    echo(&mut first, 3);
    let log = first.stop();
    assert!(
        !log.iter().any(|l| l.contains("in the background")),
        "{log:#?}"
    );
    // The next lists the tool from the cache at once and loads the code
    // behind it; with no call to load it first, the background does.
    // The load waits for the client's listing, so as not to compete with
    // the client's start for the cores.
    let mut second = StdioServe::logged(&config);
    assert_eq!(tools(&mut second), ["echo"]);
    second.wait_for_log("code loaded in the background (Cache)");
    echo(&mut second, 3);
    let log = second.stop();
    assert!(
        log.iter()
            .any(|l| l.contains("loading code in the background: a client has the tool list")),
        "{log:#?}"
    );
    // A client that never lists the tools does not leave the code
    // unloaded: the load starts shortly after the start all the same.
    let mut third = StdioServe::logged(&config);
    third.wait_for_log("loading code in the background: no client asked for the tool list");
    third.wait_for_log("code loaded in the background (Cache)");
    echo(&mut third, 3);
    third.stop();
}

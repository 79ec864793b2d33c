//! Untrusted input (rule C6): arguments and MCP messages the host cannot
//! read get an error naming what was wrong, never a panic and never
//! silence, and the next call is served as usual.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, DuplexStream};
use tokio_util::sync::CancellationToken;
use toolhost::mcp::{HttpOptions, McpServer, ProtocolStdio, serve_http, serve_stdio};
use toolhost::tool::{MAX_ARGUMENT_BYTES, MAX_ARGUMENT_DEPTH};
use toolhost::{
    Arguments, BatchCall, BatchConfig, CallContext, FnTool, ToolError, ToolHost, ToolOutput,
    ToolSpec,
};

/// A host with one native tool, `echo`, that returns its `text` argument.
fn echo_host() -> ToolHost {
    let host = ToolHost::builder().validate_arguments(true).build();
    let spec = ToolSpec::new(
        "echo",
        "Returns the text it is given",
        json!({"type": "object", "properties": {"text": {"type": "string"}}}),
    );
    host.register_tool(FnTool::arc(spec, |_, args: Arguments| async move {
        let text = args.as_value()["text"].as_str().unwrap_or_default();
        Ok(ToolOutput::text(text))
    }))
    .unwrap();
    host
}

async fn echo(host: &ToolHost) {
    let args = Arguments::parse(r#"{"text": "still here"}"#).unwrap();
    let out = host.invoke_tool(CallContext::new(), "echo", args).await;
    assert_eq!(out.unwrap(), ToolOutput::text("still here"));
}

fn nested(depth: usize) -> String {
    format!("{}1{}", "[".repeat(depth), "]".repeat(depth))
}

fn nested_objects(depth: usize) -> String {
    format!("{}1{}", r#"{"a":"#.repeat(depth), "}".repeat(depth))
}

/// The message of the `InvalidArguments` error `text` is refused with.
fn refused(text: &str) -> String {
    match Arguments::parse(text) {
        Err(ToolError::InvalidArguments { message, .. }) => message,
        other => panic!("expected InvalidArguments, got {other:?}"),
    }
}

#[tokio::test]
async fn c6_arguments_the_host_cannot_read_are_invalid_arguments_and_the_next_call_runs() {
    let host = echo_host();
    let huge = format!(r#"{{"text": "{}"}}"#, "x".repeat(64 << 20));
    let cases: Vec<(String, String)> = vec![
        (r#"{"text": 1e400}"#.into(), "number out of range".into()),
        (r#"{"text": -1e400}"#.into(), "number out of range".into()),
        (
            format!(r#"{{"text": {}}}"#, nested(100_000)),
            format!("nested deeper than {MAX_ARGUMENT_DEPTH} levels"),
        ),
        (
            format!(r#"{{"text": {}}}"#, nested_objects(100_000)),
            format!("nested deeper than {MAX_ARGUMENT_DEPTH} levels"),
        ),
        (
            huge.clone(),
            format!(
                "arguments of {} bytes exceed the limit of {MAX_ARGUMENT_BYTES} bytes",
                huge.len()
            ),
        ),
        (r#"{"text": "\ud800"}"#.into(), "hex escape".into()),
    ];
    for (text, why) in &cases {
        let message = refused(text);
        assert!(message.contains(why.as_str()), "{message:.200}");
        echo(&host).await;
    }
    // 1e-400 is representable as zero: accepted, and the schema then says
    // a number is not a string.
    let tiny = Arguments::parse(r#"{"text": 1e-400}"#).unwrap();
    assert_eq!(tiny.as_value()["text"], json!(0.0));
    match host.invoke_tool(CallContext::new(), "echo", tiny).await {
        Err(ToolError::InvalidArguments { path, .. }) => assert_eq!(path, "/text"),
        other => panic!("expected InvalidArguments, got {other:?}"),
    }
    echo(&host).await;
}

#[tokio::test]
async fn c6_a_models_unreadable_arguments_fail_that_call_only() {
    let host = echo_host();
    let calls = vec![
        BatchCall::from_model("a", "echo", r#"{"text": 1e400}"#),
        BatchCall::from_model("b", "echo", &format!(r#"{{"text": {}}}"#, nested(100_000))),
        BatchCall::from_model("c", "echo", r#"{"text": "fine"}"#),
    ];
    let results = host
        .run_batch(&CallContext::new(), calls, BatchConfig::default())
        .await;
    for result in &results[..2] {
        assert!(
            matches!(result, Err(ToolError::InvalidArguments { .. })),
            "{result:?}"
        );
    }
    assert_eq!(results[2], Ok(ToolOutput::text("fine")));
}

#[tokio::test]
async fn c6_typed_decoding_names_keys_with_dots_exactly() {
    let host = echo_host();
    let spec = ToolSpec::new("keyed", "Reads a map", json!({"type": "object"}));
    host.register_tool(FnTool::arc(spec, |_, args: Arguments| async move {
        let map = args.deserialize::<std::collections::BTreeMap<String, Vec<u32>>>()?;
        Ok(ToolOutput::text(format!("{} keys", map.len())))
    }))
    .unwrap();
    let args = Arguments::parse(r#"{"a.b[0]": [1, "x"]}"#).unwrap();
    match host.invoke_tool(CallContext::new(), "keyed", args).await {
        Err(ToolError::InvalidArguments { path, .. }) => assert_eq!(path, "/a.b[0]/1"),
        other => panic!("expected InvalidArguments, got {other:?}"),
    }
    echo(&host).await;
}

/// An MCP server on the line protocol (as `toolhost serve` on stdio), in
/// this process, with the client's ends.
struct LineClient {
    to_server: DuplexStream,
    from_server: BufReader<DuplexStream>,
    _stop: tokio_util::sync::DropGuard,
}

impl LineClient {
    async fn start(host: &ToolHost) -> Self {
        let (to_server, server_in) = tokio::io::duplex(1 << 20);
        let (server_out, from_server) = tokio::io::duplex(1 << 20);
        let stop = CancellationToken::new();
        let server = McpServer::new(host.clone());
        let stdio = ProtocolStdio::from_streams(server_in, server_out);
        tokio::spawn(serve_stdio(server, stdio, stop.clone()));
        let mut client = Self {
            to_server,
            from_server: BufReader::new(from_server),
            _stop: stop.drop_guard(),
        };
        client
            .send(&json!({
                "jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                           "clientInfo": {"name": "raw", "version": "1"}}
            }))
            .await;
        client.answer(&json!(0)).await;
        client
            .send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        client
    }

    async fn send_line(&mut self, line: &[u8]) {
        self.to_server.write_all(line).await.unwrap();
        self.to_server.write_all(b"\n").await.unwrap();
    }

    async fn send(&mut self, message: &Value) {
        self.send_line(message.to_string().as_bytes()).await;
    }

    /// The next message with id `id` (`null` for an error without one).
    async fn answer(&mut self, id: &Value) -> Value {
        tokio::time::timeout(Duration::from_secs(30), async {
            loop {
                let mut line = String::new();
                let n = self.from_server.read_line(&mut line).await.unwrap();
                assert!(n > 0, "the server closed the connection");
                let message: Value = serde_json::from_str(&line).unwrap();
                if message.get("id") == Some(id) {
                    return message;
                }
            }
        })
        .await
        .unwrap_or_else(|_| panic!("no answer to id {id} within 30 s"))
    }
}

fn call_frame(id: u64, arguments: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{arguments}}}}}"#
    )
}

fn error_code(answer: &Value) -> i64 {
    answer["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("not an error: {answer:.300}"))
}

async fn echo_over(client: &mut LineClient, id: u64) {
    client
        .send_line(call_frame(id, r#"{"text": "still here"}"#).as_bytes())
        .await;
    let answer = client.answer(&json!(id)).await;
    assert_eq!(
        answer["result"]["content"][0]["text"], "still here",
        "{answer}"
    );
}

#[tokio::test]
async fn c6_mcp_lines_that_cannot_be_decoded_get_an_error_and_the_next_request_an_answer() {
    let host = echo_host();
    let mut client = LineClient::start(&host).await;
    let mut id = 1;
    // JSON the server cannot read: a parse error, with the id.
    for arguments in [
        format!(r#"{{"text": {}}}"#, nested(100_000)),
        format!(r#"{{"text": {}}}"#, nested_objects(100_000)),
        r#"{"text": 1e400}"#.to_owned(),
        r#"{"text": -1e400}"#.to_owned(),
        r#"{"text": "\ud800"}"#.to_owned(),
    ] {
        client
            .send_line(call_frame(id, &arguments).as_bytes())
            .await;
        let answer = client.answer(&json!(id)).await;
        assert_eq!(error_code(&answer), -32700, "{arguments:.100}");
        echo_over(&mut client, id + 1).await;
        id += 2;
    }
    // Not JSON at all: a parse error with a null id.
    client.send_line(b"{this is not json").await;
    let answer = client.answer(&Value::Null).await;
    assert_eq!(error_code(&answer), -32700);
    echo_over(&mut client, id).await;
    id += 1;
    // Readable frames whose arguments break the host's bounds or do not
    // fit: invalid params.
    for arguments in [
        format!(r#"{{"text": {}}}"#, nested(MAX_ARGUMENT_DEPTH + 10)),
        format!(r#"{{"text": "{}"}}"#, "x".repeat(MAX_ARGUMENT_BYTES)),
        "5".to_owned(),
    ] {
        client
            .send_line(call_frame(id, &arguments).as_bytes())
            .await;
        let answer = client.answer(&json!(id)).await;
        assert_eq!(error_code(&answer), -32602, "{answer:.300}");
        echo_over(&mut client, id + 1).await;
        id += 2;
    }
    // A line longer than the transport takes: skipped, answered, id kept.
    let long = call_frame(id, &format!(r#"{{"text": "{}"}}"#, "x".repeat(64 << 20)));
    client.send_line(long.as_bytes()).await;
    let answer = client.answer(&json!(id)).await;
    assert_eq!(error_code(&answer), -32600);
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(message.contains("exceeds the limit"), "{message}");
    echo_over(&mut client, id + 1).await;
}

/// Posts `body` to `/mcp` at `addr`; returns the status, and the body
/// unless the answer is a success (which may be a stream that stays open).
async fn post(addr: std::net::SocketAddr, body: &[u8]) -> (u16, String) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(body).await.unwrap();
    let mut reader = BufReader::new(stream);
    let mut status_line = String::new();
    reader.read_line(&mut status_line).await.unwrap();
    let status: u16 = status_line[9..12].parse().unwrap();
    if status == 200 {
        return (status, String::new());
    }
    let mut rest = String::new();
    reader.read_to_string(&mut rest).await.unwrap();
    let body = rest
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

#[tokio::test]
async fn c6_mcp_http_answers_malformed_json_with_400_and_a_parse_error() {
    let host = echo_host();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let stop = CancellationToken::new();
    let _guard = stop.clone().drop_guard();
    tokio::spawn(serve_http(
        McpServer::new(host),
        listener,
        HttpOptions::default(),
        stop,
    ));
    let initialize = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "raw", "version": "1"}}
    });
    let deep = format!(
        r#"{{"jsonrpc":"2.0","id":9,"method":"initialize","params":{}}}"#,
        nested(100_000)
    );
    for (body, id) in [
        ("{oops".to_owned(), Value::Null),
        (deep, json!(9)),
        (
            r#"{"jsonrpc":"2.0","id":4,"method":"initialize","params":{"n":1e400}}"#.to_owned(),
            json!(4),
        ),
    ] {
        let (status, reply) = post(addr, body.as_bytes()).await;
        assert_eq!(status, 400, "{reply}");
        let reply: Value = serde_json::from_str(&reply).unwrap();
        assert_eq!(reply["error"]["code"], -32700, "{reply}");
        assert_eq!(reply["id"], id);
        let (status, _) = post(addr, initialize.to_string().as_bytes()).await;
        assert_eq!(status, 200);
    }
    let (status, reply) = post(addr, b"[1, 2]").await;
    assert_eq!(status, 400);
    let reply: Value = serde_json::from_str(&reply).unwrap();
    assert_eq!(reply["error"]["code"], -32600, "{reply}");
}

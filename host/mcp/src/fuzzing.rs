//! Entry points for the fuzz targets: frames a client
//! sends the server, over stdio and over HTTP. Not part of the API.

use std::collections::HashSet;
use std::time::Duration;

use serde_json::Value;
use tokio::io::AsyncReadExt as _;
use tokio_util::sync::CancellationToken;

use crate::server::McpServer;
use crate::stdio::{ProtocolStdio, serve_stdio};

/// A client's `initialize` request and `initialized` notification, one per
/// line.
pub const HANDSHAKE: &str = concat!(
    r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"fuzz","version":"0"}}}"#,
    "\n",
    r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    "\n",
);

/// How long one input may take to be answered before it counts as a hang.
const ANSWER_WITHIN: Duration = Duration::from_secs(20);

/// Serves `input` (after [`HANDSHAKE`] if `handshake`) over the stdio line
/// transport until the input ends.
///
/// Must hold: no panic, and the server stops once the input ends; every
/// line it writes is one JSON-RPC 2.0 message; every response answers an
/// id the client sent (or `null`, for a frame whose id cannot be read), and
/// no id sent once is answered twice.
pub async fn stdio(server: McpServer, input: &[u8], handshake: bool) {
    let mut frames = Vec::new();
    if handshake {
        frames.extend_from_slice(HANDSHAKE.as_bytes());
    }
    frames.extend_from_slice(input);
    let sent = Sent::of(&frames);
    // The server writes into one end; its answers are read from the other
    // as they come, so a long answer never blocks it.
    let (server_end, mut read_back) = tokio::io::duplex(1 << 16);
    let stdio = ProtocolStdio::from_streams(std::io::Cursor::new(frames), server_end);
    let serving = serve_stdio(server, stdio, CancellationToken::new());
    let reading = async {
        let mut out = Vec::new();
        let _ = read_back.read_to_end(&mut out).await;
        out
    };
    let (_, out) = tokio::time::timeout(ANSWER_WITHIN, async { tokio::join!(serving, reading) })
        .await
        .expect("the server stops once its input ends");
    check_answers(&out, &sent);
}

/// What the client sent: the ids of the frames that parse, and the frames
/// that do not (too deep for a parser, say), whose id the server may still
/// have read and answered.
struct Sent {
    ids: Vec<Value>,
    unparsed: Vec<String>,
}

impl Sent {
    fn of(frames: &[u8]) -> Self {
        let mut sent = Self {
            ids: Vec::new(),
            unparsed: Vec::new(),
        };
        for line in frames.split(|&b| b == b'\n') {
            match serde_json::from_slice::<Value>(line) {
                Ok(Value::Array(batch)) => {
                    sent.ids
                        .extend(batch.iter().filter_map(|m| m.get("id").cloned()));
                }
                Ok(one) => sent.ids.extend(one.get("id").cloned()),
                Err(_) => sent.unparsed.push(
                    String::from_utf8_lossy(line)
                        .chars()
                        .filter(|c| !c.is_whitespace())
                        .collect(),
                ),
            }
        }
        sent
    }

    /// How many times `id` was sent, counting a frame that does not parse
    /// but holds `"id":<id>` as one.
    fn times(&self, id: &Value) -> usize {
        let parsed = self.ids.iter().filter(|s| *s == id).count();
        let needle = format!("\"id\":{id}");
        parsed + self.unparsed.iter().filter(|l| l.contains(&needle)).count()
    }
}

fn check_answers(out: &[u8], sent: &Sent) {
    let mut answered = HashSet::new();
    for line in out.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let message: Value = serde_json::from_slice(line).unwrap_or_else(|e| {
            panic!(
                "the server wrote a line that is not JSON ({e}): {}",
                String::from_utf8_lossy(line)
            )
        });
        assert_eq!(message["jsonrpc"], "2.0", "{message}");
        let is_response = message.get("result").is_some() || message.get("error").is_some();
        if !is_response {
            continue;
        }
        let id = message.get("id").cloned().unwrap_or(Value::Null);
        if id.is_null() {
            continue;
        }
        let times = sent.times(&id);
        assert!(
            times > 0,
            "an answer to id {id}, which was never sent: {message}"
        );
        if times == 1 {
            assert!(answered.insert(id.to_string()), "id {id} answered twice");
        }
    }
}

/// One POST to the `/mcp` endpoint with `body` as its JSON body: without a
/// session (where only `initialize` may open one), or inside a session
/// opened first.
///
/// Must hold: no panic; the request is answered within the hang bound and
/// never with a server error (5xx); a 400 carries a JSON-RPC error.
#[cfg(feature = "http")]
pub async fn http(server: McpServer, body: Vec<u8>, in_session: bool) {
    use axum::body::Body;
    use axum::http::{Request, StatusCode, header};
    use http_body_util::BodyExt as _;
    use tower::ServiceExt as _;

    let shutdown = CancellationToken::new();
    let options = crate::http::HttpOptions::default();
    let router = crate::http::router(
        server,
        "127.0.0.1:8000".parse().expect("an address"),
        options,
        shutdown.clone(),
        Default::default(),
    )
    .expect("the default options are valid");
    let post = |body: Vec<u8>, session: Option<&str>| {
        let mut req = Request::post(crate::http::MCP_PATH)
            .header(header::HOST, "127.0.0.1:8000")
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::ACCEPT, "application/json, text/event-stream");
        if let Some(s) = session {
            req = req.header(&crate::header_names::MCP_SESSION_ID, s);
        }
        req.body(Body::from(body)).expect("a request")
    };
    let exchange = async {
        let mut session = None;
        if in_session {
            let mut lines = HANDSHAKE.lines();
            let init = router
                .clone()
                .oneshot(post(lines.next().unwrap_or_default().into(), None))
                .await
                .expect("axum answers");
            assert_eq!(init.status(), StatusCode::OK);
            let id = init
                .headers()
                .get(&crate::header_names::MCP_SESSION_ID)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
                .expect("initialize opens a session");
            let _ = init.into_body().collect().await;
            let done = router
                .clone()
                .oneshot(post(lines.next().unwrap_or_default().into(), Some(&id)))
                .await
                .expect("axum answers");
            assert!(done.status().is_success(), "{}", done.status());
            session = Some(id);
        }
        let reply = router
            .clone()
            .oneshot(post(body, session.as_deref()))
            .await
            .expect("axum answers");
        let status = reply.status();
        let bytes = reply
            .into_body()
            .collect()
            .await
            .map(|c| c.to_bytes())
            .unwrap_or_default();
        assert!(
            !status.is_server_error(),
            "{status}: {}",
            String::from_utf8_lossy(&bytes)
        );
        if status == StatusCode::BAD_REQUEST && bytes.first() == Some(&b'{') {
            let v: Value = serde_json::from_slice(&bytes).expect("a 400 in JSON is JSON");
            assert!(v.get("error").is_some(), "{v}");
        }
    };
    tokio::time::timeout(ANSWER_WITHIN, exchange)
        .await
        .expect("the request is answered");
    shutdown.cancel();
}

//! Conversations and settings shared by the provider tests, and
//! [`Fixture`]: what the tests every wire format must pass need of one.

use std::time::Duration;

use serde_json::{Value, json};

use super::{HttpConfig, HttpProvider, RetryPolicy, WireFormat};
use toolhost_core::error::ToolError;
use toolhost_core::model::{
    Message, ModelError, ModelProvider, ModelRequest, ModelResponse, ModelToolCall, StreamEvent,
    ToolSchema,
};
use toolhost_core::output::{ContentBlock, ToolOutput};
use toolhost_test_support::{HttpServer, Reply};

/// A wire format as the shared provider tests (`providers/tests.rs`) drive
/// it: a provider against the fake server, and answers written in the
/// format. Each format's own tests implement it.
pub(crate) trait Fixture: WireFormat {
    /// The key [`provider`](Self::provider) sends.
    const KEY: &'static str;
    /// The key's and the base URL's environment variables, spelled out.
    const ENV_VARS: [&'static str; 2];

    /// A provider against `server`, sending [`KEY`](Self::KEY), with
    /// [`fast_retries`].
    fn provider(server: &HttpServer) -> HttpProvider<Self>;

    /// A complete answer: `text`, then `calls` (stopping for tool use when
    /// there are any).
    fn answer(text: &str, calls: &[ModelToolCall]) -> Reply;

    /// An error response's body: `message`, of the API's error `kind`.
    fn error(kind: &str, message: &str) -> Value;

    /// A streamed answer of text and two parallel tool calls, and what the
    /// provider makes of it.
    fn streamed_tool_calls() -> StreamCase;

    /// A stream that starts an answer and ends before the format's end.
    fn cut_stream() -> Reply;

    /// A stream that starts and then carries the API's error event:
    /// `message`, of error `kind`.
    fn failing_stream(kind: &str, message: &str) -> Reply;
}

/// A streamed answer and what it must be read as, however it is split.
pub(crate) struct StreamCase {
    /// The response body: server-sent events.
    pub(crate) body: String,
    /// The ways it is split into pieces on the wire, each a test.
    pub(crate) splits: Vec<Vec<usize>>,
    /// The response it is read as.
    pub(crate) response: ModelResponse,
    /// The pieces the sink is given, in order.
    pub(crate) events: Vec<StreamEvent>,
    /// Fields the streaming request must carry besides `"stream": true`.
    pub(crate) request_fields: Vec<(&'static str, Value)>,
}

/// Retries that wait only milliseconds.
pub(crate) fn fast_retries() -> HttpConfig {
    HttpConfig {
        retry: RetryPolicy {
            max_retries: 2,
            initial_backoff: Duration::from_millis(1),
            max_backoff: Duration::from_millis(5),
            max_retry_after: Duration::from_secs(60),
        },
        ..HttpConfig::default()
    }
}

pub(crate) fn call(id: &str, name: &str, args: &str) -> ModelToolCall {
    ModelToolCall {
        id: id.into(),
        name: name.into(),
        arguments: args.into(),
    }
}

/// `list` and `read`, sorted.
pub(crate) fn tools() -> Vec<ToolSchema> {
    vec![
        ToolSchema {
            name: "list".into(),
            description: "Lists a directory".into(),
            parameters: json!({"type": "object", "properties": {"dir": {"type": "string"}}}),
        },
        ToolSchema {
            name: "read".into(),
            description: "Reads a file".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        },
    ]
}

/// A user prompt, then a turn of three calls (`{id}_1` to `{id}_3`, the
/// third with `bad_args`) answered by a dual output, a text-and-image block
/// output and an invalid-arguments error.
pub(crate) fn tool_turn(id: &str, bad_args: &str) -> Vec<Message> {
    let id = |n: u32| format!("{id}_{n}");
    vec![
        Message::User {
            text: "look around".into(),
        },
        Message::Assistant {
            text: Some("Looking.".into()),
            tool_calls: vec![
                call(&id(1), "list", r#"{"dir":"."}"#),
                call(&id(2), "read", r#"{"path":"a.png"}"#),
                call(&id(3), "read", bad_args),
            ],
        },
        Message::ToolResult {
            call_id: id(1),
            name: "list".into(),
            result: Ok(ToolOutput::dual("2 files", "a.png\nb.txt (long listing)")),
        },
        Message::ToolResult {
            call_id: id(2),
            name: "read".into(),
            result: Ok(ToolOutput::blocks(vec![
                ContentBlock::text("the image:"),
                ContentBlock::image("image/png", vec![0x89, b'P', b'N', b'G']),
            ])),
        },
        Message::ToolResult {
            call_id: id(3),
            name: "read".into(),
            result: Err(ToolError::invalid_arguments("", "missing `path`")),
        },
    ]
}

/// A system prompt and one user message.
pub(crate) fn simple_request() -> ModelRequest {
    ModelRequest {
        system: "Be brief.".into(),
        messages: vec![Message::User { text: "hi".into() }],
        ..ModelRequest::default()
    }
}

/// The error of a whole response to [`simple_request`].
pub(crate) async fn complete_err(provider: &dyn ModelProvider) -> ModelError {
    provider.complete(&simple_request()).await.unwrap_err()
}

/// The error of a streamed response to [`simple_request`].
pub(crate) async fn stream_err(provider: &dyn ModelProvider) -> ModelError {
    provider
        .stream(&simple_request(), &|_| {})
        .await
        .unwrap_err()
}

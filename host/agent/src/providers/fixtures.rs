//! Conversations and settings shared by the provider tests.

use std::time::Duration;

use serde_json::json;

use super::{HttpConfig, RetryPolicy};
use toolhost_core::error::ToolError;
use toolhost_core::model::{
    Message, ModelError, ModelProvider, ModelRequest, ModelToolCall, ToolSchema,
};
use toolhost_core::output::{ContentBlock, ToolOutput};

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

//! The Messages format against a local fake server: what only it does,
//! and its [`Fixture`] for the tests every format passes.

use serde_json::{Value, json};

use super::*;
use crate::providers::fixtures::{
    Fixture, StreamCase, call, complete_err, fast_retries, simple_request, stream_err, tool_turn,
    tools,
};
use toolhost_core::model::{
    CacheHints, Message, ModelProvider, ModelToolCall, StopReason, StreamEvent, ToolSchema, Usage,
};
use toolhost_test_support::{HttpServer, Reply, sse};

fn provider(server: &HttpServer) -> AnthropicProvider {
    let mut config = AnthropicConfig::new("claude-test");
    config.base_url = server.url("");
    config.api_key = Some(ApiKey::new("sk-ant-secret"));
    config.max_tokens = 1024;
    config.http = fast_retries();
    AnthropicProvider::new(config).unwrap()
}

fn message_reply(content: Value, stop: &str, usage: Value) -> Reply {
    Reply::json(
        200,
        &json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
                "content": content, "stop_reason": stop, "stop_sequence": null, "usage": usage}),
    )
}

impl Fixture for AnthropicWire {
    const KEY: &'static str = "sk-ant-secret";
    const ENV_VARS: [&'static str; 2] = ["ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"];

    fn provider(server: &HttpServer) -> AnthropicProvider {
        provider(server)
    }

    fn answer(text: &str, calls: &[ModelToolCall]) -> Reply {
        let mut content = vec![json!({"type": "text", "text": text})];
        content.extend(calls.iter().map(|c| {
            let input: Value = serde_json::from_str(&c.arguments).unwrap();
            json!({"type": "tool_use", "id": c.id, "name": c.name, "input": input})
        }));
        let stop = if calls.is_empty() {
            "end_turn"
        } else {
            "tool_use"
        };
        message_reply(
            Value::Array(content),
            stop,
            json!({"input_tokens": 3, "output_tokens": 4}),
        )
    }

    fn error(kind: &str, message: &str) -> Value {
        json!({"type": "error", "error": {"type": kind, "message": message}})
    }

    fn streamed_tool_calls() -> StreamCase {
        let body = streamed_tool_calls();
        StreamCase {
            splits: vec![vec![1], vec![2, 9, 4], vec![7, 3, 17, 1], vec![body.len()]],
            body,
            response: ModelResponse {
                text: Some("Gr\u{fc}\u{df}e, ich lese \u{1F4C4}".into()),
                tool_calls: vec![
                    call("toolu_a", "read", "{\"path\": \"r\u{e9}sum\u{e9}.md\"}"),
                    call("toolu_b", "list", "{}"),
                ],
                stop_reason: StopReason::ToolUse,
                usage: Usage {
                    input_tokens: 12 + 4096,
                    output_tokens: 42,
                    cache_read_tokens: 4096,
                    cache_write_tokens: 0,
                },
            },
            events: vec![
                StreamEvent::TextDelta {
                    text: "Gr\u{fc}\u{df}e, ".into(),
                },
                StreamEvent::TextDelta {
                    text: "ich lese \u{1F4C4}".into(),
                },
                StreamEvent::ToolCallStart {
                    index: 0,
                    id: "toolu_a".into(),
                    name: "read".into(),
                },
                StreamEvent::ToolCallDelta {
                    index: 0,
                    arguments: "{\"path\": \"r\u{e9}".into(),
                },
                StreamEvent::ToolCallDelta {
                    index: 0,
                    arguments: "sum\u{e9}.md\"}".into(),
                },
                StreamEvent::ToolCallStart {
                    index: 1,
                    id: "toolu_b".into(),
                    name: "list".into(),
                },
                StreamEvent::ToolCallDelta {
                    index: 1,
                    arguments: "{}".into(),
                },
            ],
            request_fields: vec![],
        }
    }

    /// No `message_stop`.
    fn cut_stream() -> Reply {
        let body = sse(&[
            (
                "message_start",
                json!({"type": "message_start", "message": {"usage": {"input_tokens": 1}}}),
            ),
            (
                "content_block_start",
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": "par"}}),
            ),
        ]);
        Reply::stream_split(&body, &[10])
    }

    /// An `error` event after `message_start`.
    fn failing_stream(kind: &str, message: &str) -> Reply {
        let body = sse(&[
            (
                "message_start",
                json!({"type": "message_start", "message": {"usage": {"input_tokens": 1}}}),
            ),
            (
                "error",
                json!({"type": "error", "error": {"type": kind, "message": message}}),
            ),
        ]);
        Reply::stream_split(&body, &[10])
    }
}

#[tokio::test]
async fn e2_anthropic_request_uses_the_documented_shapes_and_cache_markers() {
    let server = HttpServer::script(vec![message_reply(
        json!([{"type": "text", "text": "ok"}]),
        "end_turn",
        json!({"input_tokens": 3, "output_tokens": 1}),
    )])
    .await;
    let request = ModelRequest {
        system: "You are careful.".into(),
        tools: tools(),
        messages: tool_turn("toolu", "not json"),
        cache: CacheHints {
            system: true,
            tools: true,
            messages: vec![4],
            key: Some("ignored by this API".into()),
        },
        trace: None,
    };
    provider(&server).complete(&request).await.unwrap();
    let sent = &server.requests()[0];
    assert_eq!(sent.path, "/v1/messages");
    assert_eq!(sent.header("x-api-key"), Some("sk-ant-secret"));
    assert_eq!(sent.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(sent.header("authorization"), None);
    let ephemeral = json!({"type": "ephemeral"});
    assert_eq!(
        sent.json(),
        json!({
            "model": "claude-test",
            "max_tokens": 1024,
            "tools": [
                {"name": "list", "description": "Lists a directory",
                 "input_schema": {"type": "object", "properties": {"dir": {"type": "string"}}}},
                {"name": "read", "description": "Reads a file",
                 "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
                 "cache_control": ephemeral}
            ],
            "system": [{"type": "text", "text": "You are careful.", "cache_control": ephemeral}],
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "look around"}]},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "Looking."},
                    {"type": "tool_use", "id": "toolu_1", "name": "list", "input": {"dir": "."}},
                    {"type": "tool_use", "id": "toolu_2", "name": "read", "input": {"path": "a.png"}},
                    // Arguments that are not a JSON object go back as `{}`.
                    {"type": "tool_use", "id": "toolu_3", "name": "read", "input": {}}
                ]},
                // All results of the turn in one user message.
                {"role": "user", "content": [
                    // Dual output: only the model's part.
                    {"type": "tool_result", "tool_use_id": "toolu_1",
                     "content": [{"type": "text", "text": "2 files"}]},
                    // Images go inside the tool result as image blocks.
                    {"type": "tool_result", "tool_use_id": "toolu_2", "content": [
                        {"type": "text", "text": "the image:"},
                        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw=="}}
                    ]},
                    {"type": "tool_result", "tool_use_id": "toolu_3", "is_error": true,
                     "content": [{"type": "text", "text": "error: invalid arguments: missing `path`"}],
                     "cache_control": ephemeral}
                ]}
            ]
        })
    );
}

#[tokio::test]
async fn e2_anthropic_sends_at_most_four_breakpoints_keeping_the_latest() {
    let server = HttpServer::script(vec![message_reply(
        json!([{"type": "text", "text": "ok"}]),
        "end_turn",
        json!({}),
    )])
    .await;
    let mut request = simple_request();
    request.tools = vec![ToolSchema {
        name: "t".into(),
        description: String::new(),
        parameters: json!({"type": "object"}),
    }];
    request.messages = (0..5)
        .map(|i| Message::User {
            text: format!("m{i}"),
        })
        .collect();
    request.cache = CacheHints {
        system: true,
        tools: true,
        messages: vec![0, 1, 2, 3, 4, 99],
        key: None,
    };
    provider(&server).complete(&request).await.unwrap();
    let body = String::from_utf8(server.requests()[0].body.clone()).unwrap();
    assert_eq!(body.matches("cache_control").count(), 4, "{body}");
    let json = server.requests()[0].json();
    let blocks = json["messages"][0]["content"].as_array().unwrap();
    let marked: Vec<&str> = blocks
        .iter()
        .filter(|b| b.get("cache_control").is_some())
        .map(|b| b["text"].as_str().unwrap())
        .collect();
    assert_eq!(marked, ["m3", "m4"]);
}

#[tokio::test]
async fn e2_anthropic_parses_a_complete_response_with_cache_usage() {
    let server = HttpServer::script(vec![message_reply(
        json!([
            {"type": "thinking", "thinking": "hmm", "signature": "s"},
            {"type": "text", "text": "Reading both."},
            {"type": "tool_use", "id": "toolu_a", "name": "read", "input": {"path": "x"}},
            {"type": "tool_use", "id": "toolu_b", "name": "list", "input": {}}
        ]),
        "tool_use",
        json!({"input_tokens": 50, "cache_creation_input_tokens": 1000, "cache_read_input_tokens": 2000, "output_tokens": 70}),
    )])
    .await;
    let response = provider(&server).complete(&simple_request()).await.unwrap();
    assert_eq!(response.text.as_deref(), Some("Reading both."));
    assert_eq!(
        response.tool_calls,
        [
            call("toolu_a", "read", r#"{"path":"x"}"#),
            call("toolu_b", "list", "{}")
        ]
    );
    assert_eq!(response.stop_reason, StopReason::ToolUse);
    assert_eq!(
        response.usage,
        Usage {
            input_tokens: 3050,
            output_tokens: 70,
            cache_read_tokens: 2000,
            cache_write_tokens: 1000
        }
    );
}

/// A streamed answer as the API documents it: `message_start` with usage,
/// a text block, two tool_use blocks with `input_json_delta` fragments, a
/// ping, `message_delta` with the stop reason and output tokens, and
/// `message_stop`; lines end in CRLF.
fn streamed_tool_calls() -> String {
    let events = [
        (
            "message_start",
            json!({"type": "message_start", "message": {
            "id": "msg_1", "type": "message", "role": "assistant", "content": [], "model": "claude-test",
            "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 12, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 4096, "output_tokens": 1}}}),
        ),
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ),
        ("ping", json!({"type": "ping"})),
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Gr\u{fc}\u{df}e, "}}),
        ),
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "ich lese \u{1F4C4}"}}),
        ),
        (
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_a", "name": "read", "input": {}}}),
        ),
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": ""}}),
        ),
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"path\": \"r\u{e9}"}}),
        ),
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "sum\u{e9}.md\"}"}}),
        ),
        (
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 1}),
        ),
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": 2, "content_block": {"type": "tool_use", "id": "toolu_b", "name": "list", "input": {}}}),
        ),
        (
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 2}),
        ),
        (
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null}, "usage": {"output_tokens": 42}}),
        ),
        ("message_stop", json!({"type": "message_stop"})),
    ];
    sse(&events).replace('\n', "\r\n")
}

#[tokio::test]
async fn e2_anthropic_retries_overloaded_then_streams() {
    let ok = sse(&[
        (
            "message_start",
            json!({"type": "message_start", "message": {"usage": {"input_tokens": 1, "output_tokens": 1}}}),
        ),
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ),
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "fine"}}),
        ),
        (
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        (
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}}),
        ),
        ("message_stop", json!({"type": "message_stop"})),
    ]);
    let server = HttpServer::script(vec![
        Reply::json(
            529,
            &json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        ),
        Reply::json(
            429,
            &json!({"type": "error", "error": {"type": "rate_limit_error", "message": "slow"}}),
        )
        .with_header("retry-after", "0"),
        Reply::stream_split(&ok, &[6]),
    ])
    .await;
    let response = provider(&server)
        .stream(&simple_request(), &|_| {})
        .await
        .unwrap();
    assert_eq!(response.text.as_deref(), Some("fine"));
    assert_eq!(response.usage.output_tokens, 2);
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn e2_anthropic_malformed_responses_are_typed_errors() {
    let server = HttpServer::script(vec![Reply::raw(200, "{\"content\": \"nope\"}")]).await;
    let err = complete_err(&provider(&server)).await;
    assert!(
        matches!(&err, ModelError::Malformed(m) if m.starts_with("message:")),
        "{err:?}"
    );
    let body = sse(&[(
        "content_block_delta",
        json!({"type": "content_block_delta", "index": 3, "delta": {"type": "text_delta", "text": "x"}}),
    )]);
    let server = HttpServer::script(vec![Reply::stream_split(&body, &[5])]).await;
    let err = stream_err(&provider(&server)).await;
    assert!(
        matches!(&err, ModelError::Malformed(m) if m.contains("never started")),
        "{err:?}"
    );
}

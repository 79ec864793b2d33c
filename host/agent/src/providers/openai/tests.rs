//! The chat-completions format against a local fake server: what only it
//! does, and its [`Fixture`] for the tests every format passes.

use serde_json::{Value, json};

use super::*;
use crate::providers::fixtures::{
    Fixture, StreamCase, call, complete_err, fast_retries, simple_request, stream_err, tool_turn,
    tools,
};
use toolhost_core::model::{
    CacheHints, ModelProvider, ModelToolCall, StopReason, StreamEvent, Usage,
};
use toolhost_test_support::{HttpServer, Reply, sse};

fn provider(server: &HttpServer) -> OpenAiProvider {
    let mut config = OpenAiConfig::new("gpt-test");
    config.base_url = server.url("/v1");
    config.api_key = Some(ApiKey::new("sk-test-secret"));
    config.http = fast_retries();
    OpenAiProvider::new(config).unwrap()
}

impl Fixture for OpenAiWire {
    const KEY: &'static str = "sk-test-secret";
    const ENV_VARS: [&'static str; 2] = ["OPENAI_API_KEY", "OPENAI_BASE_URL"];

    fn provider(server: &HttpServer) -> OpenAiProvider {
        provider(server)
    }

    fn answer(text: &str, calls: &[ModelToolCall]) -> Reply {
        let mut message = json!({"role": "assistant", "content": text});
        let mut finish = "stop";
        if !calls.is_empty() {
            message["tool_calls"] = calls
                .iter()
                .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}))
                .collect();
            finish = "tool_calls";
        }
        Reply::json(
            200,
            &json!({
                "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-test",
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}
            }),
        )
    }

    fn error(kind: &str, message: &str) -> Value {
        json!({"error": {"message": message, "type": kind}})
    }

    fn streamed_tool_calls() -> StreamCase {
        let body = streamed_tool_calls();
        let delta = |index: usize, arguments: &str| StreamEvent::ToolCallDelta {
            index,
            arguments: arguments.into(),
        };
        StreamCase {
            splits: vec![vec![1], vec![3, 7, 2], vec![5, 11, 13, 1], vec![body.len()]],
            body,
            response: ModelResponse {
                text: Some("Ich schaue n\u{e4}her \u{1F50D}.".into()),
                tool_calls: vec![
                    call("call_a", "read", "{\"path\":\"\u{e4}.txt\"}"),
                    call("call_b", "list", "{\"dir\":\".\"}"),
                ],
                stop_reason: StopReason::ToolUse,
                usage: Usage {
                    input_tokens: 100,
                    output_tokens: 20,
                    cache_read_tokens: 64,
                    cache_write_tokens: 0,
                },
            },
            events: vec![
                StreamEvent::TextDelta {
                    text: "Ich schaue n\u{e4}".into(),
                },
                StreamEvent::TextDelta {
                    text: "her \u{1F50D}.".into(),
                },
                StreamEvent::ToolCallStart {
                    index: 0,
                    id: "call_a".into(),
                    name: "read".into(),
                },
                StreamEvent::ToolCallStart {
                    index: 1,
                    id: "call_b".into(),
                    name: "list".into(),
                },
                // The two calls' fragments interleave as they came.
                delta(0, "{\"pa"),
                delta(1, "{\"dir\""),
                delta(0, "th\":\"\u{e4}.txt\"}"),
                delta(1, ":\".\"}"),
            ],
            request_fields: vec![("stream_options", json!({"include_usage": true}))],
        }
    }

    /// A chunk of text, and neither a finish reason nor `[DONE]`.
    fn cut_stream() -> Reply {
        let cut = sse(&[(
            "",
            json!({"choices": [{"index": 0, "delta": {"content": "half"}}]}),
        )]);
        Reply::stream_split(&cut, &[8])
    }

    /// An error chunk.
    fn failing_stream(kind: &str, message: &str) -> Reply {
        let failing = sse(&[("", json!({"error": {"message": message, "type": kind}}))]);
        Reply::stream_split(&failing, &[8])
    }
}

#[tokio::test]
async fn e2_openai_request_uses_the_documented_shapes() {
    let server = HttpServer::script(vec![OpenAiWire::answer("ok", &[])]).await;
    let request = ModelRequest {
        system: "You are careful.".into(),
        tools: tools(),
        messages: tool_turn("call", ""),
        cache: CacheHints {
            key: Some("run-key".into()),
            ..CacheHints::default()
        },
        trace: None,
    };
    let response = provider(&server).complete(&request).await.unwrap();
    assert_eq!(response.text.as_deref(), Some("ok"));

    let sent = &server.requests()[0];
    assert_eq!(sent.method, "POST");
    assert_eq!(sent.path, "/v1/chat/completions");
    assert_eq!(sent.header("authorization"), Some("Bearer sk-test-secret"));
    assert_eq!(sent.header("content-type"), Some("application/json"));
    assert_eq!(
        sent.json(),
        json!({
            "model": "gpt-test",
            "tools": [
                {"type": "function", "function": {"name": "list", "description": "Lists a directory",
                    "parameters": {"type": "object", "properties": {"dir": {"type": "string"}}}}},
                {"type": "function", "function": {"name": "read", "description": "Reads a file",
                    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}}
            ],
            "prompt_cache_key": "run-key",
            "messages": [
                {"role": "system", "content": "You are careful."},
                {"role": "user", "content": "look around"},
                {"role": "assistant", "content": "Looking.", "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "list", "arguments": "{\"dir\":\".\"}"}},
                    {"id": "call_2", "type": "function", "function": {"name": "read", "arguments": "{\"path\":\"a.png\"}"}},
                    {"id": "call_3", "type": "function", "function": {"name": "read", "arguments": "{}"}}
                ]},
                // Dual output: only the model's part.
                {"role": "tool", "tool_call_id": "call_1", "content": "2 files"},
                {"role": "tool", "tool_call_id": "call_2", "content": "the image:\n[image: image/png, 4 bytes]"},
                {"role": "tool", "tool_call_id": "call_3", "content": "error: invalid arguments: missing `path`"},
                // Tool messages are text-only: the image follows as a user message.
                {"role": "user", "content": [
                    {"type": "text", "text": "Images returned by tool call `call_2` (read):"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw=="}}
                ]}
            ]
        })
    );
}

#[tokio::test]
async fn e2_openai_parses_parallel_tool_calls_and_cached_usage() {
    let server = HttpServer::script(vec![Reply::json(
        200,
        &json!({
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": null,
                "tool_calls": [
                    {"id": "call_a", "type": "function", "function": {"name": "read", "arguments": "{\"path\":\"x\"}"}},
                    {"id": "call_b", "type": "function", "function": {"name": "list", "arguments": "{}"}}
                ]}}],
            "usage": {"prompt_tokens": 2000, "completion_tokens": 30, "total_tokens": 2030,
                      "prompt_tokens_details": {"cached_tokens": 1920}}
        }),
    )])
    .await;
    let response = provider(&server).complete(&simple_request()).await.unwrap();
    assert_eq!(response.text, None);
    assert_eq!(response.stop_reason, StopReason::ToolUse);
    assert_eq!(
        response.tool_calls,
        [
            call("call_a", "read", r#"{"path":"x"}"#),
            call("call_b", "list", "{}")
        ]
    );
    assert_eq!(
        response.usage,
        Usage {
            input_tokens: 2000,
            output_tokens: 30,
            cache_read_tokens: 1920,
            cache_write_tokens: 0
        }
    );
}

/// A streamed answer: text with multi-byte characters, then two tool calls
/// whose argument fragments interleave, then the usage chunk and `[DONE]`.
fn streamed_tool_calls() -> String {
    let chunk = |delta: Value, finish: Value| json!({"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
    let tc = |index: u64, id: Option<&str>, name: Option<&str>, args: &str| {
        let mut function = json!({"arguments": args});
        if let Some(n) = name {
            function["name"] = json!(n);
        }
        let mut call = json!({"index": index, "function": function});
        if let Some(id) = id {
            call["id"] = json!(id);
            call["type"] = json!("function");
        }
        chunk(json!({"tool_calls": [call]}), Value::Null)
    };
    let mut text = sse(&[
        (
            "",
            chunk(json!({"role": "assistant", "content": ""}), Value::Null),
        ),
        (
            "",
            chunk(json!({"content": "Ich schaue n\u{e4}"}), Value::Null),
        ),
        ("", chunk(json!({"content": "her \u{1F50D}."}), Value::Null)),
        ("", tc(0, Some("call_a"), Some("read"), "")),
        ("", tc(1, Some("call_b"), Some("list"), "")),
        ("", tc(0, None, None, "{\"pa")),
        ("", tc(1, None, None, "{\"dir\"")),
        ("", tc(0, None, None, "th\":\"\u{e4}.txt\"}")),
        ("", tc(1, None, None, ":\".\"}")),
        ("", chunk(json!({}), json!("tool_calls"))),
        (
            "",
            json!({"id": "c", "object": "chat.completion.chunk", "choices": [],
                    "usage": {"prompt_tokens": 100, "completion_tokens": 20, "prompt_tokens_details": {"cached_tokens": 64}}}),
        ),
    ]);
    text.push_str("data: [DONE]\n\n");
    text
}

#[tokio::test]
async fn e2_openai_stream_without_index_or_with_reused_index_keeps_calls_apart() {
    // Some compatible servers omit `index`, or send index 0 for every call
    // of a parallel batch, telling calls apart only by id.
    let chunk = |calls: Value| json!({"choices": [{"index": 0, "delta": {"tool_calls": calls}}]});
    let mut text = sse(&[
        (
            "",
            chunk(json!([{"id": "a", "function": {"name": "read", "arguments": "{\"path\":"}}])),
        ),
        ("", chunk(json!([{"function": {"arguments": "\"x\"}"}}]))),
        (
            "",
            chunk(
                json!([{"index": 0, "id": "b", "function": {"name": "list", "arguments": "{}"}}]),
            ),
        ),
        (
            "",
            chunk(
                json!([{"index": 0, "id": "c", "function": {"name": "list", "arguments": "{\"dir\":\"y\"}"}}]),
            ),
        ),
        (
            "",
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
        ),
    ]);
    text.push_str("data: [DONE]\n\n");
    let server = HttpServer::script(vec![Reply::stream_split(&text, &[64])]).await;
    let response = provider(&server)
        .stream(&simple_request(), &|_| {})
        .await
        .unwrap();
    assert_eq!(
        response.tool_calls,
        [
            call("a", "read", "{\"path\":\"x\"}"),
            call("b", "list", "{}"),
            call("c", "list", "{\"dir\":\"y\"}")
        ]
    );
}

#[tokio::test]
async fn e2_openai_malformed_responses_are_typed_errors() {
    for (body, needle) in [
        ("not json at all", "chat completion"),
        ("{\"choices\": 5}", "invalid type"),
        ("{\"choices\": []}", "`choices` is empty"),
    ] {
        let server = HttpServer::script(vec![Reply::raw(200, body)]).await;
        let err = complete_err(&provider(&server)).await;
        match &err {
            ModelError::Malformed(m) => assert!(m.contains(needle), "{body}: {m}"),
            other => panic!("{body}: {other:?}"),
        }
        assert_eq!(
            server.requests().len(),
            1,
            "malformed bodies are not retried"
        );
    }

    let server = HttpServer::script(vec![Reply::stream_split(
        "data: {oops\n\ndata: [DONE]\n\n",
        &[4],
    )])
    .await;
    let err = stream_err(&provider(&server)).await;
    assert!(matches!(err, ModelError::Malformed(_)), "{err:?}");
}

#[tokio::test]
async fn x2_a_model_request_carries_its_trace_context_in_its_headers() {
    let server = HttpServer::script(vec![OpenAiWire::answer("ok", &[])]).await;
    let parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    let mut request = crate::providers::fixtures::simple_request();
    request.trace = toolhost_core::TraceContext::from_w3c(parent, Some("v=1"), Some("k=v"));
    provider(&server).complete(&request).await.unwrap();
    let sent = &server.requests()[0];
    assert_eq!(sent.header("traceparent"), Some(parent));
    assert_eq!(sent.header("tracestate"), Some("v=1"));
    assert_eq!(sent.header("baggage"), Some("k=v"));
    // Without one, no such header.
    let server = HttpServer::script(vec![OpenAiWire::answer("ok", &[])]).await;
    provider(&server)
        .complete(&crate::providers::fixtures::simple_request())
        .await
        .unwrap();
    assert_eq!(server.requests()[0].header("traceparent"), None);
}

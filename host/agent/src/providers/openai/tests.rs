//! The chat-completions provider against a local fake server.

use std::sync::Mutex;
use std::time::Duration;

use serde_json::{Value, json};

use super::*;
use crate::providers::fixtures::{
    call, complete_err, fast_retries, simple_request, stream_err, tool_turn, tools,
};
use toolhost_core::model::{CacheHints, ModelProvider, StopReason, StreamEvent, Usage};
use toolhost_test_support::{HttpServer, Reply, sse};

fn provider(server: &HttpServer) -> OpenAiProvider {
    let mut config = OpenAiConfig::new("gpt-test");
    config.base_url = server.url("/v1");
    config.api_key = Some(ApiKey::new("sk-test-secret"));
    config.http = fast_retries();
    OpenAiProvider::new(config).unwrap()
}

fn text_reply(text: &str) -> Reply {
    Reply::json(
        200,
        &json!({
            "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-test",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}
        }),
    )
}

#[tokio::test]
async fn e2_openai_request_uses_the_documented_shapes() {
    let server = HttpServer::script(vec![text_reply("ok")]).await;
    let request = ModelRequest {
        system: "You are careful.".into(),
        tools: tools(),
        messages: tool_turn("call", ""),
        cache: CacheHints {
            key: Some("run-key".into()),
            ..CacheHints::default()
        },
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
async fn e2_openai_streams_text_and_parallel_tool_calls_across_awkward_splits() {
    let body = streamed_tool_calls();
    for sizes in [&[1usize][..], &[3, 7, 2], &[5, 11, 13, 1], &[body.len()]] {
        let server = HttpServer::script(vec![Reply::stream_split(&body, sizes)]).await;
        let events = Mutex::new(Vec::new());
        let sink = |e: &StreamEvent| events.lock().unwrap().push(e.clone());
        let response = provider(&server)
            .stream(&simple_request(), &sink)
            .await
            .unwrap();
        assert_eq!(
            response.text.as_deref(),
            Some("Ich schaue n\u{e4}her \u{1F50D}."),
            "{sizes:?}"
        );
        assert_eq!(
            response.tool_calls,
            [
                call("call_a", "read", "{\"path\":\"\u{e4}.txt\"}"),
                call("call_b", "list", "{\"dir\":\".\"}")
            ]
        );
        assert_eq!(response.stop_reason, StopReason::ToolUse);
        assert_eq!(response.usage.cache_read_tokens, 64);
        assert_eq!(response.usage.input_tokens, 100);
        let events = events.into_inner().unwrap();
        assert_eq!(
            events[..3],
            [
                StreamEvent::TextDelta {
                    text: "Ich schaue n\u{e4}".into()
                },
                StreamEvent::TextDelta {
                    text: "her \u{1F50D}.".into()
                },
                StreamEvent::ToolCallStart {
                    index: 0,
                    id: "call_a".into(),
                    name: "read".into()
                },
            ]
        );
        let args_of = |i: usize| -> String {
            events
                .iter()
                .filter_map(|e| match e {
                    StreamEvent::ToolCallDelta { index, arguments } if *index == i => {
                        Some(arguments.as_str())
                    }
                    _ => None,
                })
                .collect()
        };
        assert_eq!(args_of(0), response.tool_calls[0].arguments);
        assert_eq!(args_of(1), response.tool_calls[1].arguments);

        let sent = &server.requests()[0];
        assert_eq!(sent.header("accept"), Some("text/event-stream"));
        let json = sent.json();
        assert_eq!(json["stream"], json!(true));
        assert_eq!(json["stream_options"], json!({"include_usage": true}));
    }
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
async fn e2_openai_retries_a_429_then_succeeds() {
    let server = HttpServer::script(vec![
        Reply::json(
            429,
            &json!({"error": {"message": "Rate limit reached", "type": "requests"}}),
        )
        .with_header("retry-after", "0"),
        text_reply("after the wait"),
    ])
    .await;
    let response = provider(&server).complete(&simple_request()).await.unwrap();
    assert_eq!(response.text.as_deref(), Some("after the wait"));
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].body, requests[1].body);
}

#[tokio::test]
async fn e2_openai_does_not_wait_past_the_retry_after_cap() {
    let server = HttpServer::script(vec![
        Reply::json(429, &json!({"error": {"message": "slow down"}}))
            .with_header("retry-after", "3600"),
        text_reply("never reached"),
    ])
    .await;
    let err = complete_err(&provider(&server)).await;
    assert_eq!(
        err,
        ModelError::RateLimited {
            retry_after: Some(Duration::from_secs(3600))
        }
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn e2_openai_http_errors_are_typed_and_only_retryable_ones_repeat() {
    let server = HttpServer::script(vec![Reply::json(
        401,
        &json!({"error": {"message": "Incorrect API key provided", "type": "invalid_request_error", "code": "invalid_api_key"}}),
    )])
    .await;
    let err = complete_err(&provider(&server)).await;
    assert_eq!(
        err,
        ModelError::Http {
            status: 401,
            message: "Incorrect API key provided".into()
        }
    );
    assert_eq!(server.requests().len(), 1);

    let server = HttpServer::script(vec![
        Reply::raw(503, "busy"),
        Reply::raw(502, ""),
        Reply::raw(500, "{\"error\":{\"message\":\"boom\"}}"),
        text_reply("too late"),
    ])
    .await;
    let err = complete_err(&provider(&server)).await;
    assert_eq!(
        err,
        ModelError::Http {
            status: 500,
            message: "boom".into()
        }
    );
    assert_eq!(server.requests().len(), 3, "one attempt and two retries");
}

#[tokio::test]
async fn e2_openai_transport_failures_are_retried() {
    let server = HttpServer::script(vec![Reply::Hangup, text_reply("second try")]).await;
    let response = provider(&server).complete(&simple_request()).await.unwrap();
    assert_eq!(response.text.as_deref(), Some("second try"));
    assert_eq!(server.requests().len(), 2);
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
async fn e2_openai_a_cut_stream_and_an_error_chunk_are_typed() {
    let cut = sse(&[(
        "",
        json!({"choices": [{"index": 0, "delta": {"content": "half"}}]}),
    )]);
    let server = HttpServer::script(vec![Reply::stream_split(&cut, &[8])]).await;
    let err = stream_err(&provider(&server)).await;
    assert!(matches!(err, ModelError::Transport(_)), "{err:?}");

    let failing = sse(&[(
        "",
        json!({"error": {"message": "model overloaded", "type": "server_error"}}),
    )]);
    let server = HttpServer::script(vec![Reply::stream_split(&failing, &[8])]).await;
    let err = stream_err(&provider(&server)).await;
    assert_eq!(
        err,
        ModelError::Stream {
            kind: "server_error".into(),
            message: "model overloaded".into()
        }
    );
}

#[tokio::test]
async fn e2_openai_key_never_shows_in_debug_output() {
    let server = HttpServer::script(vec![]).await;
    let provider = provider(&server);
    let shown = format!("{provider:?} {:?}", provider.config());
    assert!(!shown.contains("sk-test-secret"), "{shown}");
    assert!(shown.contains("redacted"), "{shown}");
}

#[test]
fn e2_openai_config_reads_the_environment() {
    let env = |name: &str| match name {
        "OPENAI_API_KEY" => Some("sk-env".to_owned()),
        "OPENAI_BASE_URL" => Some("http://127.0.0.1:8000/v1".to_owned()),
        _ => None,
    };
    let config = OpenAiConfig::from_lookup("m", &env);
    assert_eq!(config.base_url, "http://127.0.0.1:8000/v1");
    assert_eq!(config.api_key, Some(ApiKey::new("sk-env")));
    let bare = OpenAiConfig::from_lookup("m", &|_| Some(String::new()));
    assert_eq!(bare.base_url, OPENAI_DEFAULT_BASE_URL);
    assert_eq!(bare.api_key, None);
}

#[tokio::test]
async fn e2_https_goes_through_tls_and_a_failed_handshake_is_a_transport_error() {
    // A listener that drops every connection: the TLS handshake (rustls on
    // ring) starts and fails, typed, without bringing anything down.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = accepted.clone();
    let task = tokio::spawn(async move {
        while let Ok((conn, _)) = listener.accept().await {
            count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            drop(conn);
        }
    });
    let mut config = OpenAiConfig::new("m");
    config.base_url = format!("https://{addr}/v1");
    config.http = fast_retries();
    let err = complete_err(&OpenAiProvider::new(config).unwrap()).await;
    task.abort();
    assert!(matches!(err, ModelError::Transport(_)), "{err:?}");
    assert_eq!(
        accepted.load(std::sync::atomic::Ordering::SeqCst),
        3,
        "one attempt and two retries"
    );
}

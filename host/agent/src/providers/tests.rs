//! The tests every wire format must pass: written once, generic over a
//! [`Fixture`], and run for each format as tests of its own
//! (`providers::tests::anthropic::e2_…`, `providers::tests::openai::e2_…`).
//! What only one format does is tested in that format's `tests.rs`.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::json;

use super::fixtures::{Fixture, call, complete_err, fast_retries, simple_request, stream_err};
use super::{ApiKey, HttpProvider, ProviderConfig};
use toolhost_core::model::{ModelError, ModelProvider, StopReason, StreamEvent};
use toolhost_test_support::{HttpServer, Reply};

/// Makes, for each format whose feature is on, a module of tests named
/// after the generic tests given, each running its namesake for the format.
macro_rules! for_each_format {
    ($($test:ident),+ $(,)?) => {
        #[cfg(feature = "anthropic")]
        mod anthropic {
            $(#[tokio::test]
            async fn $test() {
                super::$test::<crate::providers::AnthropicWire>().await;
            })+
        }
        #[cfg(feature = "openai")]
        mod openai {
            $(#[tokio::test]
            async fn $test() {
                super::$test::<crate::providers::OpenAiWire>().await;
            })+
        }
    };
}

for_each_format!(
    e2_key_never_shows_in_debug_output,
    e2_config_reads_the_environment,
    e2_retries_a_429_then_succeeds,
    e2_does_not_wait_past_the_retry_after_cap,
    e2_http_errors_are_typed_and_only_retryable_ones_repeat,
    e2_transport_failures_are_retried,
    e2_https_goes_through_tls_and_a_failed_handshake_is_a_transport_error,
    e2_a_stream_answered_with_one_json_message_is_read_whole,
    e2_streams_text_and_parallel_tool_calls_across_awkward_splits,
    e2_a_cut_stream_is_a_transport_error,
    e2_an_error_event_mid_stream_is_typed,
);

async fn e2_key_never_shows_in_debug_output<W: Fixture>() {
    let server = HttpServer::script(vec![]).await;
    let provider = W::provider(&server);
    let shown = format!("{provider:?} {:?}", provider.config());
    assert!(!shown.contains(W::KEY), "{shown}");
    assert!(shown.contains("redacted"), "{shown}");
}

async fn e2_config_reads_the_environment<W: Fixture>() {
    let [key_var, url_var] = W::ENV_VARS;
    let env = |name: &str| {
        if name == key_var {
            Some("sk-env".to_owned())
        } else if name == url_var {
            Some("http://127.0.0.1:8000/v1".to_owned())
        } else {
            None
        }
    };
    let config = ProviderConfig::<W>::from_lookup("m", &env);
    assert_eq!(config.base_url, "http://127.0.0.1:8000/v1");
    assert_eq!(config.api_key, Some(ApiKey::new("sk-env")));
    let bare = ProviderConfig::<W>::from_lookup("m", &|_| Some(String::new()));
    assert_eq!(bare.base_url, W::DEFAULT_BASE_URL);
    assert_eq!(bare.api_key, None);
}

async fn e2_retries_a_429_then_succeeds<W: Fixture>() {
    let server = HttpServer::script(vec![
        Reply::json(429, &W::error("rate_limit_error", "Rate limit reached"))
            .with_header("retry-after", "0"),
        W::answer("after the wait", &[]),
    ])
    .await;
    let response = W::provider(&server)
        .complete(&simple_request())
        .await
        .unwrap();
    assert_eq!(response.text.as_deref(), Some("after the wait"));
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].body, requests[1].body);
}

async fn e2_does_not_wait_past_the_retry_after_cap<W: Fixture>() {
    let server = HttpServer::script(vec![
        Reply::json(429, &W::error("rate_limit_error", "slow down"))
            .with_header("retry-after", "3600"),
        W::answer("never reached", &[]),
    ])
    .await;
    let err = complete_err(&W::provider(&server)).await;
    assert_eq!(
        err,
        ModelError::RateLimited {
            retry_after: Some(Duration::from_secs(3600))
        }
    );
    assert_eq!(server.requests().len(), 1);
}

async fn e2_http_errors_are_typed_and_only_retryable_ones_repeat<W: Fixture>() {
    let server = HttpServer::script(vec![Reply::json(
        401,
        &W::error("authentication_error", "Incorrect API key provided"),
    )])
    .await;
    let err = complete_err(&W::provider(&server)).await;
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
        W::answer("too late", &[]),
    ])
    .await;
    let err = complete_err(&W::provider(&server)).await;
    assert_eq!(
        err,
        ModelError::Http {
            status: 500,
            message: "boom".into()
        }
    );
    assert_eq!(server.requests().len(), 3, "one attempt and two retries");
}

async fn e2_transport_failures_are_retried<W: Fixture>() {
    let server = HttpServer::script(vec![Reply::Hangup, W::answer("second try", &[])]).await;
    let response = W::provider(&server)
        .complete(&simple_request())
        .await
        .unwrap();
    assert_eq!(response.text.as_deref(), Some("second try"));
    assert_eq!(server.requests().len(), 2);
}

async fn e2_https_goes_through_tls_and_a_failed_handshake_is_a_transport_error<W: Fixture>() {
    // A listener that drops every connection: the TLS handshake (rustls on
    // ring) starts and fails, typed, without bringing anything down.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = std::sync::Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    let task = tokio::spawn(async move {
        while let Ok((conn, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            drop(conn);
        }
    });
    let mut config = ProviderConfig::<W>::new("m");
    config.base_url = format!("https://{addr}/v1");
    config.http = fast_retries();
    let err = complete_err(&HttpProvider::new(config).unwrap()).await;
    task.abort();
    assert!(matches!(err, ModelError::Transport(_)), "{err:?}");
    assert_eq!(
        accepted.load(Ordering::SeqCst),
        3,
        "one attempt and two retries"
    );
}

async fn e2_a_stream_answered_with_one_json_message_is_read_whole<W: Fixture>() {
    // LiteLLM's proxy answers some streaming requests this way.
    let server = HttpServer::script(vec![W::answer(
        "Reading it.",
        &[call("toolu_a", "read", "{\"path\":\"a.md\"}")],
    )])
    .await;
    let events = Mutex::new(Vec::new());
    let sink = |e: &StreamEvent| events.lock().unwrap().push(e.clone());
    let response = W::provider(&server)
        .stream(&simple_request(), &sink)
        .await
        .unwrap();
    assert_eq!(response.text.as_deref(), Some("Reading it."));
    assert_eq!(
        response.tool_calls,
        [call("toolu_a", "read", "{\"path\":\"a.md\"}")]
    );
    assert_eq!(response.stop_reason, StopReason::ToolUse);
    assert_eq!(
        events.into_inner().unwrap(),
        [
            StreamEvent::TextDelta {
                text: "Reading it.".into()
            },
            StreamEvent::ToolCallStart {
                index: 0,
                id: "toolu_a".into(),
                name: "read".into()
            },
            StreamEvent::ToolCallDelta {
                index: 0,
                arguments: "{\"path\":\"a.md\"}".into()
            },
        ]
    );
}

async fn e2_streams_text_and_parallel_tool_calls_across_awkward_splits<W: Fixture>() {
    let case = W::streamed_tool_calls();
    for sizes in &case.splits {
        let server = HttpServer::script(vec![Reply::stream_split(&case.body, sizes)]).await;
        let events = Mutex::new(Vec::new());
        let sink = |e: &StreamEvent| events.lock().unwrap().push(e.clone());
        let response = W::provider(&server)
            .stream(&simple_request(), &sink)
            .await
            .unwrap();
        assert_eq!(response, case.response, "{sizes:?}");
        let events = events.into_inner().unwrap();
        assert_eq!(events, case.events, "{sizes:?}");
        // What the sink saw adds up to each call's arguments.
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
        for (i, call) in response.tool_calls.iter().enumerate() {
            assert_eq!(args_of(i), call.arguments, "{sizes:?}");
        }

        let sent = &server.requests()[0];
        assert_eq!(sent.header("accept"), Some("text/event-stream"));
        let json = sent.json();
        assert_eq!(json["stream"], json!(true));
        for (field, value) in &case.request_fields {
            assert_eq!(&json[field], value, "{field}");
        }
    }
}

async fn e2_a_cut_stream_is_a_transport_error<W: Fixture>() {
    let server = HttpServer::script(vec![W::cut_stream()]).await;
    let err = stream_err(&W::provider(&server)).await;
    assert!(matches!(err, ModelError::Transport(_)), "{err:?}");
}

async fn e2_an_error_event_mid_stream_is_typed<W: Fixture>() {
    let server =
        HttpServer::script(vec![W::failing_stream("overloaded_error", "Overloaded")]).await;
    let err = stream_err(&W::provider(&server)).await;
    assert_eq!(
        err,
        ModelError::Stream {
            kind: "overloaded_error".into(),
            message: "Overloaded".into()
        }
    );
    assert_eq!(
        server.requests().len(),
        1,
        "mid-stream errors are not retried"
    );
}

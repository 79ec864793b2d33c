//! The HTTP side shared by the providers: a client that speaks TLS through
//! rustls on the ring crypto provider, JSON POSTs with bounded retries, and
//! error responses turned into typed [`ModelError`]s.

use std::time::Duration;

use futures::StreamExt as _;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderValue};
use reqwest::{StatusCode, Url};

use super::retry::{RetryPolicy, retry_after};
use super::sse::{Flow, read_events};
use crate::providers::AgentConfigError;
use toolhost_core::model::ModelError;

/// The largest complete (non-streamed) response body accepted.
const MAX_BODY_BYTES: usize = 32 * 1024 * 1024;
/// How much of an error response is read to find its message.
const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;
/// How much of an error message is kept.
const MAX_ERROR_MESSAGE_CHARS: usize = 500;

/// Connection settings shared by both providers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpConfig {
    /// The longest wait to open a connection.
    pub connect_timeout: Duration,
    /// The longest silence while waiting for response bytes (a stream that
    /// sends nothing for this long fails with a transport error). There is
    /// no limit on a whole response, so long generations can finish.
    pub read_timeout: Duration,
    /// Retries of failed sends.
    pub retry: RetryPolicy,
}

impl Default for HttpConfig {
    /// 10 s to connect, 300 s of silence at most, the default retries.
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(10),
            read_timeout: Duration::from_secs(300),
            retry: RetryPolicy::default(),
        }
    }
}

/// A client bound to one provider's retry policy.
#[derive(Clone)]
pub(crate) struct HttpClient {
    client: reqwest::Client,
    retry: RetryPolicy,
    provider: &'static str,
}

/// A failed attempt: the error, and how long the server asked us to wait.
struct Failure {
    error: ModelError,
    retry_after: Option<Duration>,
}

impl From<ModelError> for Failure {
    fn from(error: ModelError) -> Self {
        Self {
            error,
            retry_after: None,
        }
    }
}

impl HttpClient {
    /// A client for `provider` (a name for logs) with `config`.
    pub(crate) fn new(
        provider: &'static str,
        config: &HttpConfig,
    ) -> Result<Self, AgentConfigError> {
        let client = toolhost_net::tls::reqwest_builder()
            .map_err(|e| AgentConfigError::Client(toolhost_core::report(&e)))?
            .connect_timeout(config.connect_timeout)
            .read_timeout(config.read_timeout)
            .user_agent(concat!("toolhost/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| AgentConfigError::Client(describe(&e)))?;
        Ok(Self {
            client,
            retry: config.retry,
            provider,
        })
    }

    /// POSTs `body` (JSON) and returns the whole successful response body.
    /// Retries cover sending and reading.
    pub(crate) async fn post_json(
        &self,
        url: &Url,
        headers: &HeaderMap,
        body: Vec<u8>,
    ) -> Result<Vec<u8>, ModelError> {
        self.with_retries(|| async {
            let response = self.send(url, headers, &body).await?;
            Ok(read_capped(response, MAX_BODY_BYTES).await?)
        })
        .await
    }

    /// POSTs `body` (JSON) and returns the successful response, whose body
    /// is then streamed. Retries cover only getting the response's status.
    async fn post_stream(
        &self,
        url: &Url,
        headers: &HeaderMap,
        body: Vec<u8>,
    ) -> Result<reqwest::Response, ModelError> {
        self.with_retries(|| self.send(url, headers, &body)).await
    }

    /// POSTs `body` (JSON) asking for server-sent events, and hands each
    /// event's data to `on_data` until it returns `true` (the response is
    /// complete) or the body ends: [`Streamed::Events`], with whether
    /// `on_data` said complete. A server that answers with one JSON body
    /// instead (`Content-Type: application/json`, as some proxies do for
    /// some models) gets it read whole: [`Streamed::Whole`].
    pub(crate) async fn stream_events(
        &self,
        url: &Url,
        headers: &HeaderMap,
        body: Vec<u8>,
        mut on_data: impl FnMut(&str) -> Result<bool, ModelError>,
    ) -> Result<Streamed, ModelError> {
        let mut headers = headers.clone();
        headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
        let response = self.post_stream(url, &headers, body).await?;
        if is_json(response.headers()) {
            return Ok(Streamed::Whole(
                read_capped(response, MAX_BODY_BYTES).await?,
            ));
        }
        read_events(response, |event| {
            Ok(if on_data(&event.data)? {
                Flow::Stop
            } else {
                Flow::Continue
            })
        })
        .await
        .map(Streamed::Events)
    }

    async fn with_retries<T, F, Fut>(&self, mut attempt: F) -> Result<T, ModelError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, Failure>>,
    {
        let mut retry = 0;
        loop {
            let failure = match attempt().await {
                Ok(value) => return Ok(value),
                Err(f) => f,
            };
            retry += 1;
            let delay = if failure.error.is_retryable() {
                self.retry.delay(retry, failure.retry_after)
            } else {
                None
            };
            let Some(delay) = delay else {
                return Err(failure.error);
            };
            tracing::warn!(
                provider = self.provider,
                retry,
                delay_ms = delay.as_millis() as u64,
                error = %failure.error,
                "model call failed; retrying"
            );
            tokio::time::sleep(delay).await;
        }
    }

    /// One attempt: a response with a success status, or the typed error.
    async fn send(
        &self,
        url: &Url,
        headers: &HeaderMap,
        body: &[u8],
    ) -> Result<reqwest::Response, Failure> {
        let response = self
            .client
            .post(url.clone())
            .headers(headers.clone())
            .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
            .body(body.to_vec())
            .send()
            .await
            .map_err(|e| ModelError::Transport(describe(&e)))?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let wait = retry_after(response.headers());
        // An unreadable error body still leaves the status to report.
        let body = read_capped(response, MAX_ERROR_BODY_BYTES)
            .await
            .unwrap_or_default();
        Err(Failure {
            error: status_error(status, wait, &body),
            retry_after: wait,
        })
    }
}

/// What a request for a stream got back.
#[derive(Debug)]
pub(crate) enum Streamed {
    /// Server-sent events, each handed on; `true` if the response was
    /// complete.
    Events(bool),
    /// One JSON body: the complete response, not streamed.
    Whole(Vec<u8>),
}

/// Whether a response says its body is JSON.
fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(toolhost_net::is_json_content_type)
}

/// Reads a body up to `cap` bytes; a larger one is malformed.
async fn read_capped(response: reqwest::Response, cap: usize) -> Result<Vec<u8>, ModelError> {
    let mut out = Vec::new();
    let mut body = response.bytes_stream();
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(|e| ModelError::Transport(describe(&e)))?;
        if out.len() + chunk.len() > cap {
            return Err(ModelError::Malformed(format!(
                "the response body is larger than {cap} bytes"
            )));
        }
        out.extend_from_slice(&chunk);
    }
    Ok(out)
}

/// The typed error for a failure status.
pub(crate) fn status_error(status: StatusCode, wait: Option<Duration>, body: &[u8]) -> ModelError {
    if status == StatusCode::TOO_MANY_REQUESTS {
        return ModelError::RateLimited { retry_after: wait };
    }
    ModelError::Http {
        status: status.as_u16(),
        message: error_message(body).unwrap_or_else(|| {
            status
                .canonical_reason()
                .unwrap_or("no reason given")
                .into()
        }),
    }
}

/// The message of an error body: `error.message` (the shape both APIs use),
/// else `error` or `message` as text, else the body's text, shortened.
pub(crate) fn error_message(body: &[u8]) -> Option<String> {
    let from_json = serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|v| {
            [
                v.pointer("/error/message"),
                v.get("error"),
                v.get("message"),
            ]
            .into_iter()
            .flatten()
            .find_map(|m| m.as_str().map(str::to_owned))
        });
    let text = from_json.unwrap_or_else(|| String::from_utf8_lossy(body).trim().to_owned());
    (!text.is_empty()).then(|| shorten(&text))
}

fn shorten(text: &str) -> String {
    match text.char_indices().nth(MAX_ERROR_MESSAGE_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

/// A reqwest error with its causes, which hold the useful part ("connection
/// refused", "timed out", …).
fn describe(e: &reqwest::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn e2_error_messages_come_from_either_api_shape() {
        let openai = br#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}"#;
        let anthropic =
            br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
        assert_eq!(
            error_message(openai).as_deref(),
            Some("Incorrect API key provided")
        );
        assert_eq!(error_message(anthropic).as_deref(), Some("Overloaded"));
        assert_eq!(
            error_message(b"  upstream timeout \n").as_deref(),
            Some("upstream timeout")
        );
        assert_eq!(error_message(b""), None);
        let long = "x".repeat(2000);
        assert_eq!(
            error_message(long.as_bytes()).unwrap().chars().count(),
            MAX_ERROR_MESSAGE_CHARS + 1
        );
    }

    #[test]
    fn e2_statuses_become_typed_errors() {
        assert_eq!(
            status_error(
                StatusCode::TOO_MANY_REQUESTS,
                Some(Duration::from_secs(2)),
                b"{}"
            ),
            ModelError::RateLimited {
                retry_after: Some(Duration::from_secs(2))
            }
        );
        let e = status_error(StatusCode::BAD_GATEWAY, None, b"");
        assert_eq!(
            e,
            ModelError::Http {
                status: 502,
                message: "Bad Gateway".into()
            }
        );
        assert!(e.is_retryable());
        assert!(!status_error(StatusCode::UNAUTHORIZED, None, b"").is_retryable());
    }
}

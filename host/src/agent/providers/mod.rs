//! Model providers over HTTP: [`OpenAiProvider`] for the chat-completions
//! API (OpenAI and compatible servers) and [`AnthropicProvider`] for the
//! Anthropic Messages API.
//!
//! Both render the host's [`ModelRequest`](crate::agent::ModelRequest) in
//! their API's own format (tool schemas, tool results, images, cache hints),
//! parse whole or streamed (server-sent events) responses into a
//! [`ModelResponse`](crate::agent::ModelResponse), turn failures into typed
//! [`ModelError`](crate::agent::ModelError)s, and retry the retryable ones
//! within a [`RetryPolicy`]. Keys are [`ApiKey`]s, which never print.
//!
//! | module | job |
//! |---|---|
//! | `openai` | chat-completions requests, responses and stream assembly |
//! | `anthropic` | Messages requests, responses and stream assembly |
//! | `endpoint` | one API's URL and headers; sends a request in its wire format, reads the answer |
//! | `assembly` | building a response from streamed pieces, passing each on |
//! | `http` | the client (rustls on ring), POST with retries, error statuses |
//! | `sse` | the server-sent events decoder |
//! | `retry` | the retry policy and `retry-after` parsing |
//! | `secret` | the redacting key type |
//! | `common` | tool-result text and images, endpoint URLs |

mod anthropic;
mod assembly;
mod common;
mod endpoint;
mod http;
mod openai;
mod retry;
mod secret;
mod sse;

#[cfg(test)]
pub(crate) mod fake_server;
#[cfg(test)]
pub(crate) mod fixtures;

pub use anthropic::{
    ANTHROPIC_API_KEY_ENV, ANTHROPIC_BASE_URL_ENV, ANTHROPIC_DEFAULT_BASE_URL,
    ANTHROPIC_DEFAULT_MAX_TOKENS, ANTHROPIC_VERSION, AnthropicConfig, AnthropicProvider,
};
pub use http::HttpConfig;
pub use openai::{
    OPENAI_API_KEY_ENV, OPENAI_BASE_URL_ENV, OPENAI_DEFAULT_BASE_URL, OpenAiConfig, OpenAiProvider,
};
pub use retry::RetryPolicy;
pub use secret::ApiKey;

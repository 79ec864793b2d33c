//! Model providers over HTTP (each behind its cargo feature, `openai` and
//! `anthropic`): [`OpenAiProvider`] for the chat-completions
//! API (OpenAI and compatible servers) and [`AnthropicProvider`] for the
//! Anthropic Messages API.
//!
//! Both render the host's [`ModelRequest`](crate::ModelRequest) in
//! their API's own format (tool schemas, tool results, images, cache hints),
//! parse whole or streamed (server-sent events) responses into a
//! [`ModelResponse`](crate::ModelResponse), turn failures into typed
//! [`ModelError`](crate::ModelError)s, and retry the retryable ones
//! within a [`RetryPolicy`]. Keys are [`ApiKey`]s, which never print.
//!
//! | module | job |
//! |---|---|
//! | `openai` | chat-completions requests, responses and stream assembly |
//! | `anthropic` | Messages requests, responses and stream assembly |
//! | `endpoint` | one API's URL (built from its base) and headers; sends a request in its wire format, reads the answer |
//! | `assembly` | building a response from streamed pieces, passing each on |
//! | `http` | the client (rustls on ring), POST with retries, error statuses |
//! | `sse` | the server-sent events decoder |
//! | `retry` | the retry policy and `retry-after` parsing |
//! | `secret` | the redacting key type |
//! | `error` | [`AgentConfigError`]: why a provider could not be built |
//! | `tool_result` | a tool result as the model reads it: text and images |
//! | `settings` | checks of a provider's settings: model name, key header, environment |

#[cfg(feature = "anthropic")]
pub(crate) mod anthropic;
#[cfg(feature = "http")]
pub(crate) mod assembly;
#[cfg(feature = "http")]
mod endpoint;
mod error;
#[cfg(feature = "http")]
mod http;
#[cfg(feature = "openai")]
pub(crate) mod openai;
#[cfg(feature = "http")]
mod retry;
mod secret;
#[cfg(feature = "http")]
mod settings;
#[cfg(feature = "http")]
pub(crate) mod sse;
#[cfg(feature = "http")]
mod tool_result;

#[cfg(all(test, feature = "http"))]
pub(crate) mod fixtures;

#[cfg(feature = "anthropic")]
pub use anthropic::{
    ANTHROPIC_API_KEY_ENV, ANTHROPIC_BASE_URL_ENV, ANTHROPIC_DEFAULT_BASE_URL,
    ANTHROPIC_DEFAULT_MAX_TOKENS, ANTHROPIC_VERSION, AnthropicConfig, AnthropicProvider,
};
pub use error::AgentConfigError;
#[cfg(feature = "http")]
pub use http::HttpConfig;
#[cfg(feature = "openai")]
pub use openai::{
    OPENAI_API_KEY_ENV, OPENAI_BASE_URL_ENV, OPENAI_DEFAULT_BASE_URL, OpenAiConfig, OpenAiProvider,
};
#[cfg(feature = "http")]
pub use retry::RetryPolicy;
pub use secret::ApiKey;

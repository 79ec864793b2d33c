//! Model providers over HTTP: one provider, [`HttpProvider`], generic over
//! the API's [`WireFormat`], each format behind its cargo feature:
//! [`OpenAiWire`] (`openai`) for the chat-completions API (OpenAI and
//! compatible servers), spoken by [`OpenAiProvider`], and [`AnthropicWire`]
//! (`anthropic`) for the Anthropic Messages API, spoken by
//! [`AnthropicProvider`].
//!
//! Each renders the host's [`ModelRequest`](crate::ModelRequest) in
//! its API's own format (tool schemas, tool results, images, cache hints),
//! parses whole or streamed (server-sent events) responses into a
//! [`ModelResponse`](crate::ModelResponse), turns failures into typed
//! [`ModelError`](crate::ModelError)s, and retries the retryable ones
//! within a [`RetryPolicy`]. Keys are [`ApiKey`]s, which never print.
//!
//! | module | job |
//! |---|---|
//! | `http_provider` | [`HttpProvider`]: the provider, whatever the format: settings checked, endpoint built, calls sent |
//! | `wire_format` | [`WireFormat`]: what tells one API from another (URL, key header, `max_tokens`, environment, request and response bodies) |
//! | `openai` | the chat-completions format: requests, responses and stream assembly |
//! | `anthropic` | the Messages format: requests, responses and stream assembly |
//! | `endpoint` | one API's URL (built from its base) and headers; sends a request in its wire format, reads the answer |
//! | `assembly` | building a response from streamed pieces, passing each on |
//! | `http` | the client (rustls on ring), POST with retries, error statuses |
//! | `sse` | the server-sent events decoder |
//! | `retry` | the retry policy and `retry-after` parsing |
//! | `secret` | the redacting key type |
//! | `error` | [`AgentConfigError`]: why a provider could not be built |
//! | `tool_result` | a tool result as the model reads it: text and images |
//! | `settings` | [`ProviderConfig`], a provider's settings, and their checks: model name, key header, environment |

#[cfg(feature = "anthropic")]
pub(crate) mod anthropic;
#[cfg(feature = "http")]
pub(crate) mod assembly;
#[cfg(feature = "http")]
mod endpoint;
mod error;
#[cfg(feature = "http")]
mod http;
#[cfg(feature = "http")]
mod http_provider;
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
#[cfg(feature = "http")]
mod wire_format;

#[cfg(all(test, feature = "http"))]
pub(crate) mod fixtures;
#[cfg(all(test, feature = "http"))]
mod tests;

#[cfg(feature = "anthropic")]
pub use anthropic::{
    ANTHROPIC_API_KEY_ENV, ANTHROPIC_BASE_URL_ENV, ANTHROPIC_DEFAULT_BASE_URL,
    ANTHROPIC_DEFAULT_MAX_TOKENS, ANTHROPIC_VERSION, AnthropicConfig, AnthropicProvider,
    AnthropicWire,
};
pub use error::AgentConfigError;
#[cfg(feature = "http")]
pub use http::HttpConfig;
#[cfg(feature = "http")]
pub use http_provider::HttpProvider;
#[cfg(feature = "openai")]
pub use openai::{
    OPENAI_API_KEY_ENV, OPENAI_BASE_URL_ENV, OPENAI_DEFAULT_BASE_URL, OpenAiConfig, OpenAiProvider,
    OpenAiWire,
};
#[cfg(feature = "http")]
pub use retry::RetryPolicy;
pub use secret::ApiKey;
#[cfg(feature = "http")]
pub use settings::ProviderConfig;
#[cfg(feature = "http")]
pub use wire_format::WireFormat;

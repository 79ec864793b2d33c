//! [`AnthropicProvider`]: the Anthropic Messages API.
//!
//! - Tools go out as `{name, description, input_schema}`; `tool_use` blocks
//!   come back as the host's calls, several per turn.
//! - Tool results go back as `tool_result` blocks, all of one turn in one
//!   `user` message; dual output sends only `for_llm`; image blocks are sent
//!   as `image` blocks (base64) inside the `tool_result`; a failed call is
//!   marked `is_error`.
//! - Streaming reads `message_start`, `content_block_start`,
//!   `content_block_delta` (`text_delta`, `input_json_delta`),
//!   `content_block_stop`, `message_delta` (stop reason, usage) and
//!   `message_stop`; an `error` event ends the call with
//!   [`ModelError::Stream`].
//! - Cache hints become `cache_control: {"type": "ephemeral"}` breakpoints;
//!   usage reports `cache_read_input_tokens` and
//!   `cache_creation_input_tokens` as cache reads and writes.

pub(crate) mod parse;
mod wire;

use std::fmt;

use async_trait::async_trait;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use super::endpoint::{Endpoint, WireFormat, endpoint};
use super::http::HttpConfig;
use super::secret::ApiKey;
use super::settings::{non_empty, require_model, secret_header};
use crate::providers::AgentConfigError;
use toolhost_core::model::{ModelError, ModelProvider, ModelRequest, ModelResponse, StreamSink};

/// The base URL used when none is configured.
pub const ANTHROPIC_DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// The environment variable holding the API key.
pub const ANTHROPIC_API_KEY_ENV: &str = "ANTHROPIC_API_KEY";
/// The environment variable holding the base URL.
pub const ANTHROPIC_BASE_URL_ENV: &str = "ANTHROPIC_BASE_URL";
/// The `anthropic-version` header sent with every request.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";
/// `max_tokens` when none is configured (the API requires one).
pub const ANTHROPIC_DEFAULT_MAX_TOKENS: u32 = 8192;

/// Settings of an [`AnthropicProvider`]. `Debug` never shows the key.
#[derive(Debug, Clone, PartialEq)]
pub struct AnthropicConfig {
    /// The API's base URL, without the version path
    /// (`https://api.anthropic.com`); `/v1/messages` is appended.
    pub base_url: String,
    /// The model name.
    pub model: String,
    /// The key, sent as `x-api-key`; `None` sends none (for a proxy that
    /// adds its own).
    pub api_key: Option<ApiKey>,
    /// `max_tokens` for each response.
    pub max_tokens: u32,
    /// Sampling temperature; `None` leaves it to the API.
    pub temperature: Option<f32>,
    /// Timeouts and retries.
    pub http: HttpConfig,
}

impl AnthropicConfig {
    /// `model` at the default base URL, no key, default `max_tokens`.
    pub fn new(model: impl Into<String>) -> Self {
        Self {
            base_url: ANTHROPIC_DEFAULT_BASE_URL.into(),
            model: model.into(),
            api_key: None,
            max_tokens: ANTHROPIC_DEFAULT_MAX_TOKENS,
            temperature: None,
            http: HttpConfig::default(),
        }
    }

    /// `model` with the key from `ANTHROPIC_API_KEY` and the base URL from
    /// `ANTHROPIC_BASE_URL` when they are set and not empty.
    pub fn from_env(model: impl Into<String>) -> Self {
        Self::from_lookup(model, &|name| std::env::var(name).ok())
    }

    /// Like [`from_env`](Self::from_env), reading variables through `env`.
    pub fn from_lookup(model: impl Into<String>, env: &dyn Fn(&str) -> Option<String>) -> Self {
        let mut config = Self::new(model);
        if let Some(url) = non_empty(env, ANTHROPIC_BASE_URL_ENV) {
            config.base_url = url;
        }
        config.api_key = non_empty(env, ANTHROPIC_API_KEY_ENV).map(ApiKey::new);
        config
    }
}

/// A [`ModelProvider`] over the Messages API. Cheap to share; every call is
/// one HTTP request (retried as [`HttpConfig::retry`] says).
#[derive(Clone)]
pub struct AnthropicProvider {
    config: AnthropicConfig,
    endpoint: Endpoint,
}

impl fmt::Debug for AnthropicProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AnthropicProvider")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl AnthropicProvider {
    /// A provider with `config`. Fails if the base URL, model or
    /// `max_tokens` is unusable or the HTTP client cannot be set up; the
    /// error names the setting.
    pub fn new(config: AnthropicConfig) -> Result<Self, AgentConfigError> {
        require_model(&config.model)?;
        if config.max_tokens == 0 {
            return Err(AgentConfigError::Invalid {
                field: "max_tokens",
                reason: "must be at least 1".into(),
            });
        }
        let url = endpoint(&config.base_url, "v1/messages")?;
        let mut headers = HeaderMap::new();
        headers.insert(
            HeaderName::from_static("anthropic-version"),
            HeaderValue::from_static(ANTHROPIC_VERSION),
        );
        if let Some(key) = &config.api_key {
            headers.insert(
                HeaderName::from_static("x-api-key"),
                secret_header(key.expose())?,
            );
        }
        let endpoint = Endpoint::new("anthropic", url, headers, &config.http)?;
        Ok(Self { config, endpoint })
    }

    /// The provider's settings.
    pub fn config(&self) -> &AnthropicConfig {
        &self.config
    }
}

#[async_trait]
impl ModelProvider for AnthropicProvider {
    fn name(&self) -> &str {
        "anthropic"
    }

    async fn complete(&self, request: &ModelRequest) -> Result<ModelResponse, ModelError> {
        self.endpoint
            .complete::<AnthropicWire>(&self.config, request)
            .await
    }

    async fn stream(
        &self,
        request: &ModelRequest,
        sink: StreamSink<'_>,
    ) -> Result<ModelResponse, ModelError> {
        self.endpoint
            .stream::<AnthropicWire>(&self.config, request, sink)
            .await
    }
}

/// The API's wire format.
struct AnthropicWire;

impl WireFormat for AnthropicWire {
    type Settings = AnthropicConfig;
    type Assembler = parse::StreamAssembler;

    fn render(
        request: &ModelRequest,
        settings: &AnthropicConfig,
        stream: bool,
    ) -> Result<Vec<u8>, serde_json::Error> {
        wire::render(request, settings, stream)
    }

    fn parse(body: &[u8]) -> Result<ModelResponse, ModelError> {
        parse::parse_response(body)
    }
}

#[cfg(test)]
mod tests;

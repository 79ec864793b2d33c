//! [`OpenAiProvider`]: the chat-completions API, as spoken by OpenAI and by
//! compatible servers (vLLM, llama.cpp's server, Ollama, …).
//!
//! - Tools go out as `{"type": "function", "function": {name, description,
//!   parameters}}`; the model's `tool_calls` come back as the host's calls,
//!   several per turn.
//! - Tool results go back as `tool` messages. Those carry text only, so the
//!   images of block outputs follow the results in one `user` message of
//!   `image_url` parts (`data:` URIs), each group introduced by the call's id.
//! - With streaming, `stream_options.include_usage` asks for the usage chunk;
//!   tool-call fragments are assembled by their `index`.
//! - Cache hints: the prefix is kept stable by construction; the hint's key
//!   goes out as `prompt_cache_key`. Cache reads come from
//!   `usage.prompt_tokens_details.cached_tokens`.

pub(crate) mod parse;
mod wire;

use std::fmt;

use async_trait::async_trait;
use reqwest::header::{AUTHORIZATION, HeaderMap};

use super::endpoint::{Endpoint, WireFormat, endpoint};
use super::http::HttpConfig;
use super::secret::ApiKey;
use super::settings::{non_empty, require_model, secret_header};
use crate::providers::AgentConfigError;
use toolhost_core::model::{ModelError, ModelProvider, ModelRequest, ModelResponse, StreamSink};

/// The base URL used when none is configured.
pub const OPENAI_DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
/// The environment variable holding the API key.
pub const OPENAI_API_KEY_ENV: &str = "OPENAI_API_KEY";
/// The environment variable holding the base URL.
pub const OPENAI_BASE_URL_ENV: &str = "OPENAI_BASE_URL";

/// Settings of an [`OpenAiProvider`]. `Debug` never shows the key.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenAiConfig {
    /// The API's base URL, including its version path
    /// (`https://api.openai.com/v1`, `http://localhost:11434/v1` for
    /// Ollama); `/chat/completions` is appended.
    pub base_url: String,
    /// The model name.
    pub model: String,
    /// The bearer token; `None` sends no `Authorization` header (local
    /// servers often need none).
    pub api_key: Option<ApiKey>,
    /// `max_tokens` for each response; `None` leaves it to the server.
    pub max_tokens: Option<u32>,
    /// Sampling temperature; `None` leaves it to the server.
    pub temperature: Option<f32>,
    /// Timeouts and retries.
    pub http: HttpConfig,
}

impl OpenAiConfig {
    /// `model` at the default base URL, no key, server defaults.
    pub fn new(model: impl Into<String>) -> Self {
        Self {
            base_url: OPENAI_DEFAULT_BASE_URL.into(),
            model: model.into(),
            api_key: None,
            max_tokens: None,
            temperature: None,
            http: HttpConfig::default(),
        }
    }

    /// `model` with the key from `OPENAI_API_KEY` and the base URL from
    /// `OPENAI_BASE_URL` when they are set and not empty.
    pub fn from_env(model: impl Into<String>) -> Self {
        Self::from_lookup(model, &|name| std::env::var(name).ok())
    }

    /// Like [`from_env`](Self::from_env), reading variables through `env`.
    pub fn from_lookup(model: impl Into<String>, env: &dyn Fn(&str) -> Option<String>) -> Self {
        let mut config = Self::new(model);
        if let Some(url) = non_empty(env, OPENAI_BASE_URL_ENV) {
            config.base_url = url;
        }
        config.api_key = non_empty(env, OPENAI_API_KEY_ENV).map(ApiKey::new);
        config
    }
}

/// A [`ModelProvider`] over the chat-completions API. Cheap to share; every
/// call is one HTTP request (retried as [`HttpConfig::retry`] says).
#[derive(Clone)]
pub struct OpenAiProvider {
    config: OpenAiConfig,
    endpoint: Endpoint,
}

impl fmt::Debug for OpenAiProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiProvider")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl OpenAiProvider {
    /// A provider with `config`. Fails if the base URL or model is unusable
    /// or the HTTP client cannot be set up; the error names the setting.
    pub fn new(config: OpenAiConfig) -> Result<Self, AgentConfigError> {
        require_model(&config.model)?;
        let url = endpoint(&config.base_url, "chat/completions")?;
        let mut headers = HeaderMap::new();
        if let Some(key) = &config.api_key {
            headers.insert(
                AUTHORIZATION,
                secret_header(&format!("Bearer {}", key.expose()))?,
            );
        }
        let endpoint = Endpoint::new("openai", url, headers, &config.http)?;
        Ok(Self { config, endpoint })
    }

    /// The provider's settings.
    pub fn config(&self) -> &OpenAiConfig {
        &self.config
    }
}

#[async_trait]
impl ModelProvider for OpenAiProvider {
    fn name(&self) -> &str {
        "openai"
    }

    async fn complete(&self, request: &ModelRequest) -> Result<ModelResponse, ModelError> {
        self.endpoint
            .complete::<OpenAiWire>(&self.config, request)
            .await
    }

    async fn stream(
        &self,
        request: &ModelRequest,
        sink: StreamSink<'_>,
    ) -> Result<ModelResponse, ModelError> {
        self.endpoint
            .stream::<OpenAiWire>(&self.config, request, sink)
            .await
    }
}

/// The API's wire format.
struct OpenAiWire;

impl WireFormat for OpenAiWire {
    type Settings = OpenAiConfig;
    type Assembler = parse::StreamAssembler;

    fn render(
        request: &ModelRequest,
        settings: &OpenAiConfig,
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

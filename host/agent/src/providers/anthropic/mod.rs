//! [`AnthropicWire`]: the Anthropic Messages API, spoken by
//! [`AnthropicProvider`].
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

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use super::http_provider::HttpProvider;
use super::secret::ApiKey;
use super::settings::{ProviderConfig, secret_header};
use super::wire_format::{Codec, WireFormat};
use crate::providers::AgentConfigError;
use toolhost_core::model::{ModelError, ModelRequest, ModelResponse};

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

/// The Messages API's wire format. The base URL is given without the
/// version path (`https://api.anthropic.com`); `v1/messages` is appended.
/// The key goes out as `x-api-key`, with `anthropic-version`
/// ([`ANTHROPIC_VERSION`]) on every request. `max_tokens` is required: a
/// `u32`, [`ANTHROPIC_DEFAULT_MAX_TOKENS`] unless set, and at least 1.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AnthropicWire;

/// Settings of an [`AnthropicProvider`].
pub type AnthropicConfig = ProviderConfig<AnthropicWire>;

/// A [`ModelProvider`](toolhost_core::model::ModelProvider) over the
/// Messages API.
pub type AnthropicProvider = HttpProvider<AnthropicWire>;

impl WireFormat for AnthropicWire {
    const NAME: &'static str = "anthropic";
    const DEFAULT_BASE_URL: &'static str = ANTHROPIC_DEFAULT_BASE_URL;
    const PATH: &'static str = "v1/messages";
    const API_KEY_ENV: &'static str = ANTHROPIC_API_KEY_ENV;
    const BASE_URL_ENV: &'static str = ANTHROPIC_BASE_URL_ENV;
    type MaxTokens = u32;
    const DEFAULT_MAX_TOKENS: u32 = ANTHROPIC_DEFAULT_MAX_TOKENS;
}

impl Codec for AnthropicWire {
    type Assembler = parse::StreamAssembler;

    fn check(config: &AnthropicConfig) -> Result<(), AgentConfigError> {
        if config.max_tokens == 0 {
            return Err(AgentConfigError::Invalid {
                field: "max_tokens",
                reason: "must be at least 1".into(),
            });
        }
        Ok(())
    }

    fn headers(api_key: Option<&ApiKey>) -> Result<HeaderMap, AgentConfigError> {
        let mut headers = HeaderMap::new();
        headers.insert(
            HeaderName::from_static("anthropic-version"),
            HeaderValue::from_static(ANTHROPIC_VERSION),
        );
        if let Some(key) = api_key {
            headers.insert(
                HeaderName::from_static("x-api-key"),
                secret_header(key.expose())?,
            );
        }
        Ok(headers)
    }

    fn render(
        request: &ModelRequest,
        config: &AnthropicConfig,
        stream: bool,
    ) -> Result<Vec<u8>, serde_json::Error> {
        wire::render(request, config, stream)
    }

    fn parse(body: &[u8]) -> Result<ModelResponse, ModelError> {
        parse::parse_response(body)
    }
}

#[cfg(test)]
mod tests;

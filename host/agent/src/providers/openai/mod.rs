//! [`OpenAiWire`]: the chat-completions API (OpenAI and compatible servers:
//! vLLM, llama.cpp's server, Ollama, …), spoken by [`OpenAiProvider`].
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

use reqwest::header::{AUTHORIZATION, HeaderMap};

use super::http_provider::HttpProvider;
use super::secret::ApiKey;
use super::settings::{ProviderConfig, secret_header};
use super::wire_format::{Codec, WireFormat};
use crate::providers::AgentConfigError;
use toolhost_core::model::{ModelError, ModelRequest, ModelResponse};

/// The base URL used when none is configured.
pub const OPENAI_DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
/// The environment variable holding the API key.
pub const OPENAI_API_KEY_ENV: &str = "OPENAI_API_KEY";
/// The environment variable holding the base URL.
pub const OPENAI_BASE_URL_ENV: &str = "OPENAI_BASE_URL";

/// The chat-completions wire format. The base URL includes the API's
/// version path (`https://api.openai.com/v1`, `http://localhost:11434/v1`
/// for Ollama); `chat/completions` is appended. The key goes out as a
/// bearer token in `Authorization`. `max_tokens` is an `Option<u32>`:
/// `None`, the default, leaves it to the server.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OpenAiWire;

/// Settings of an [`OpenAiProvider`].
pub type OpenAiConfig = ProviderConfig<OpenAiWire>;

/// A [`ModelProvider`](toolhost_core::model::ModelProvider) over the
/// chat-completions API.
pub type OpenAiProvider = HttpProvider<OpenAiWire>;

impl WireFormat for OpenAiWire {
    const NAME: &'static str = "openai";
    const DEFAULT_BASE_URL: &'static str = OPENAI_DEFAULT_BASE_URL;
    const PATH: &'static str = "chat/completions";
    const API_KEY_ENV: &'static str = OPENAI_API_KEY_ENV;
    const BASE_URL_ENV: &'static str = OPENAI_BASE_URL_ENV;
    type MaxTokens = Option<u32>;
    const DEFAULT_MAX_TOKENS: Option<u32> = None;
}

impl Codec for OpenAiWire {
    type Assembler = parse::StreamAssembler;

    fn headers(api_key: Option<&ApiKey>) -> Result<HeaderMap, AgentConfigError> {
        let mut headers = HeaderMap::new();
        if let Some(key) = api_key {
            headers.insert(
                AUTHORIZATION,
                secret_header(&format!("Bearer {}", key.expose()))?,
            );
        }
        Ok(headers)
    }

    fn render(
        request: &ModelRequest,
        config: &OpenAiConfig,
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

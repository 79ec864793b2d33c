//! [`WireFormat`]: what tells one HTTP model API from another, so that one
//! provider, [`HttpProvider`](super::HttpProvider), serves them all; and
//! [`Codec`], the part of a format only this crate uses.

use std::fmt::Debug;

use reqwest::header::HeaderMap;

use super::assembly::Assemble;
use super::secret::ApiKey;
use super::settings::ProviderConfig;
use crate::providers::AgentConfigError;
use toolhost_core::model::{ModelError, ModelRequest, ModelResponse};

/// One HTTP model API's wire format: where its requests go, how it is
/// configured, and (through a supertrait private to this crate, which
/// seals this one) how requests are written and answers read. A value of
/// the type carries nothing; the type is the format. The formats are
/// [`OpenAiWire`](super::OpenAiWire) and
/// [`AnthropicWire`](super::AnthropicWire), each behind its cargo feature.
pub trait WireFormat:
    Codec + Debug + Clone + Copy + Default + PartialEq + Eq + Send + Sync + 'static
{
    /// The provider's name, as [`ModelProvider::name`] gives it and as logs
    /// show it: `"openai"`, `"anthropic"`.
    ///
    /// [`ModelProvider::name`]: toolhost_core::model::ModelProvider::name
    const NAME: &'static str;
    /// The base URL used when none is configured.
    const DEFAULT_BASE_URL: &'static str;
    /// The path appended to the base URL to make the URL every request is
    /// POSTed to.
    const PATH: &'static str;
    /// The environment variable holding the API key.
    const API_KEY_ENV: &'static str;
    /// The environment variable holding the base URL.
    const BASE_URL_ENV: &'static str;
    /// How `max_tokens` is configured: `u32` where the API requires a
    /// value, `Option<u32>` where `None` leaves it to the server.
    type MaxTokens: Debug + Clone + Copy + PartialEq + Send + Sync + 'static;
    /// `max_tokens` when none is configured.
    const DEFAULT_MAX_TOKENS: Self::MaxTokens;
}

/// How a [`WireFormat`] writes requests and reads answers. It stands in a
/// private module, so no other crate can name it: this seals
/// [`WireFormat`].
pub trait Codec: Sized {
    /// The stream reader.
    type Assembler: Assemble;

    /// Checks the settings only this format constrains; the error names
    /// the setting. The shared ones (model, base URL, key) are checked by
    /// the provider.
    fn check(_config: &ProviderConfig<Self>) -> Result<(), AgentConfigError>
    where
        Self: WireFormat,
    {
        Ok(())
    }

    /// The headers sent with every request: the key in this API's header
    /// (marked sensitive), when there is one, and any other the API asks
    /// for. The error names the key without repeating it.
    fn headers(api_key: Option<&ApiKey>) -> Result<HeaderMap, AgentConfigError>;

    /// The JSON body for `request`, asking for a stream when `stream`.
    fn render(
        request: &ModelRequest,
        config: &ProviderConfig<Self>,
        stream: bool,
    ) -> Result<Vec<u8>, serde_json::Error>
    where
        Self: WireFormat;

    /// A complete (non-streamed) response body.
    fn parse(body: &[u8]) -> Result<ModelResponse, ModelError>;
}

//! A provider's settings, [`ProviderConfig`], and the checks of them
//! shared by every wire format: the model name, the key's header,
//! environment variables.

use reqwest::header::HeaderValue;

use super::http::HttpConfig;
use super::secret::ApiKey;
use super::wire_format::WireFormat;
use crate::providers::AgentConfigError;

/// Settings of an [`HttpProvider`](super::HttpProvider) speaking `W`.
/// `Debug` never shows the key.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderConfig<W: WireFormat> {
    /// The API's base URL; [`W::PATH`](WireFormat::PATH) is appended. Each
    /// format says whether it includes the API's version path.
    pub base_url: String,
    /// The model name.
    pub model: String,
    /// The key, sent in the format's own header; `None` sends none (local
    /// servers often need none, and a proxy may add its own).
    pub api_key: Option<ApiKey>,
    /// `max_tokens` for each response, as [`W::MaxTokens`](WireFormat::MaxTokens)
    /// says: required, or optional and left to the server when `None`.
    pub max_tokens: W::MaxTokens,
    /// Sampling temperature; `None` leaves it to the API.
    pub temperature: Option<f32>,
    /// Timeouts and retries.
    pub http: HttpConfig,
}

impl<W: WireFormat> ProviderConfig<W> {
    /// `model` at [`W::DEFAULT_BASE_URL`](WireFormat::DEFAULT_BASE_URL), no
    /// key, [`W::DEFAULT_MAX_TOKENS`](WireFormat::DEFAULT_MAX_TOKENS), the
    /// API's temperature and the default HTTP settings.
    pub fn new(model: impl Into<String>) -> Self {
        Self {
            base_url: W::DEFAULT_BASE_URL.into(),
            model: model.into(),
            api_key: None,
            max_tokens: W::DEFAULT_MAX_TOKENS,
            temperature: None,
            http: HttpConfig::default(),
        }
    }

    /// `model` with the key from [`W::API_KEY_ENV`](WireFormat::API_KEY_ENV)
    /// and the base URL from [`W::BASE_URL_ENV`](WireFormat::BASE_URL_ENV)
    /// when they are set and not empty.
    pub fn from_env(model: impl Into<String>) -> Self {
        Self::from_lookup(model, &|name| std::env::var(name).ok())
    }

    /// Like [`from_env`](Self::from_env), reading variables through `env`.
    pub fn from_lookup(model: impl Into<String>, env: &dyn Fn(&str) -> Option<String>) -> Self {
        let mut config = Self::new(model);
        if let Some(url) = non_empty(env, W::BASE_URL_ENV) {
            config.base_url = url;
        }
        config.api_key = non_empty(env, W::API_KEY_ENV).map(ApiKey::new);
        config
    }
}

/// Checks that a model name is given.
pub(crate) fn require_model(model: &str) -> Result<(), AgentConfigError> {
    if model.trim().is_empty() {
        return Err(AgentConfigError::Invalid {
            field: "model",
            reason: "the model name is empty".into(),
        });
    }
    Ok(())
}

/// A header value holding a credential: marked sensitive, so the HTTP
/// client never prints it. The error does not repeat the value.
pub(crate) fn secret_header(value: &str) -> Result<HeaderValue, AgentConfigError> {
    let mut value = HeaderValue::from_str(value).map_err(|_| AgentConfigError::Invalid {
        field: "api_key",
        reason: "the key contains characters not allowed in an HTTP header".into(),
    })?;
    value.set_sensitive(true);
    Ok(value)
}

/// Reads an environment variable through `env`, treating an empty value
/// as unset.
pub(crate) fn non_empty(env: &dyn Fn(&str) -> Option<String>, name: &str) -> Option<String> {
    env(name).filter(|v| !v.trim().is_empty())
}

//! [`HttpProvider`]: one [`ModelProvider`] for every HTTP API, told apart
//! by their [`WireFormat`].

use std::fmt;

use async_trait::async_trait;

use super::endpoint::{Endpoint, endpoint};
use super::settings::{ProviderConfig, require_model};
use super::wire_format::WireFormat;
use crate::providers::AgentConfigError;
use toolhost_core::model::{ModelError, ModelProvider, ModelRequest, ModelResponse, StreamSink};

/// A [`ModelProvider`] over the HTTP API whose wire format is `W`: its
/// settings and the endpoint built from them. Cheap to share; every call is
/// one HTTP request (retried as [`HttpConfig::retry`] says). `Debug` never
/// shows the key.
///
/// [`HttpConfig::retry`]: super::HttpConfig::retry
#[derive(Clone)]
pub struct HttpProvider<W: WireFormat> {
    config: ProviderConfig<W>,
    endpoint: Endpoint,
}

impl<W: WireFormat> fmt::Debug for HttpProvider<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpProvider")
            .field("wire", &W::default())
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl<W: WireFormat> HttpProvider<W> {
    /// A provider with `config`. Fails if the model, a setting the format
    /// constrains (such as `max_tokens`), the base URL or the key is
    /// unusable, or the HTTP client cannot be set up; the error names the
    /// setting.
    pub fn new(config: ProviderConfig<W>) -> Result<Self, AgentConfigError> {
        require_model(&config.model)?;
        W::check(&config)?;
        let url = endpoint(&config.base_url, W::PATH)?;
        let headers = W::headers(config.api_key.as_ref())?;
        let endpoint = Endpoint::new(W::NAME, url, headers, &config.http)?;
        Ok(Self { config, endpoint })
    }

    /// The provider's settings.
    pub fn config(&self) -> &ProviderConfig<W> {
        &self.config
    }
}

#[async_trait]
impl<W: WireFormat> ModelProvider for HttpProvider<W> {
    fn name(&self) -> &str {
        W::NAME
    }

    async fn complete(&self, request: &ModelRequest) -> Result<ModelResponse, ModelError> {
        self.endpoint.complete(&self.config, request).await
    }

    async fn stream(
        &self,
        request: &ModelRequest,
        sink: StreamSink<'_>,
    ) -> Result<ModelResponse, ModelError> {
        self.endpoint.stream(&self.config, request, sink).await
    }
}

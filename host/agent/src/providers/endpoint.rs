//! [`Endpoint`]: one API's URL, headers and client, sending requests in
//! that API's [`WireFormat`] and reading the answers, whole or streamed;
//! [`endpoint`] builds the URL from a configured base.

use reqwest::Url;
use reqwest::header::HeaderMap;

use super::assembly::Assemble;
use super::http::{HttpClient, HttpConfig, Streamed};
use super::settings::ProviderConfig;
use super::wire_format::WireFormat;
use crate::providers::AgentConfigError;
use toolhost_core::model::{ModelError, ModelRequest, ModelResponse, StreamSink, replay};

/// `base` (an `http` or `https` URL) with `path` appended after its own
/// path. The error names the setting and what is wrong with it.
pub(crate) fn endpoint(base: &str, path: &str) -> Result<Url, AgentConfigError> {
    let invalid = |reason: String| AgentConfigError::Invalid {
        field: "base_url",
        reason,
    };
    let joined = format!("{}/{}", base.trim_end_matches('/'), path);
    let url = Url::parse(&joined).map_err(|e| invalid(format!("`{base}` is not a URL: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(invalid(format!(
            "`{base}` uses `{}`; use http or https",
            url.scheme()
        )));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(invalid(format!(
            "`{base}` has a query or fragment; give the base URL only"
        )));
    }
    Ok(url)
}

/// Where and how requests are sent.
#[derive(Clone)]
pub(crate) struct Endpoint {
    url: Url,
    headers: HeaderMap,
    http: HttpClient,
}

impl Endpoint {
    /// An endpoint for `provider` (a name for logs) at `url`, sending
    /// `headers` with every request.
    pub(crate) fn new(
        provider: &'static str,
        url: Url,
        headers: HeaderMap,
        http: &HttpConfig,
    ) -> Result<Self, AgentConfigError> {
        Ok(Self {
            url,
            headers,
            http: HttpClient::new(provider, http)?,
        })
    }

    /// The headers of `request`: the endpoint's, with the request's W3C
    /// trace context if it has one (rule X2).
    fn headers_for(&self, request: &ModelRequest) -> std::borrow::Cow<'_, HeaderMap> {
        let Some(trace) = &request.trace else {
            return std::borrow::Cow::Borrowed(&self.headers);
        };
        let mut headers = self.headers.clone();
        let values = [
            ("traceparent", Some(trace.traceparent())),
            ("tracestate", trace.tracestate().map(str::to_owned)),
            ("baggage", trace.baggage().map(str::to_owned)),
        ];
        for (name, value) in values {
            if let Some(value) = value.and_then(|v| reqwest::header::HeaderValue::from_str(&v).ok())
            {
                headers.insert(name, value);
            }
        }
        std::borrow::Cow::Owned(headers)
    }

    /// Sends `request` and reads the whole response.
    pub(crate) async fn complete<W: WireFormat>(
        &self,
        config: &ProviderConfig<W>,
        request: &ModelRequest,
    ) -> Result<ModelResponse, ModelError> {
        let body = render(request, config, false)?;
        let headers = self.headers_for(request);
        let bytes = self.http.post_json(&self.url, &headers, body).await?;
        W::parse(&bytes)
    }

    /// Sends `request` asking for a stream, passing pieces to `sink`.
    pub(crate) async fn stream<W: WireFormat>(
        &self,
        config: &ProviderConfig<W>,
        request: &ModelRequest,
        sink: StreamSink<'_>,
    ) -> Result<ModelResponse, ModelError> {
        let body = render(request, config, true)?;
        let headers = self.headers_for(request);
        let mut assembler = W::Assembler::default();
        let streamed = self
            .http
            .stream_events(&self.url, &headers, body, |data| assembler.push(data, sink))
            .await?;
        match streamed {
            Streamed::Events(complete) => assembler.finish(complete),
            // Answered whole: read as a complete response, and handed to the
            // sink in one piece, as a stream of one event would have been.
            Streamed::Whole(bytes) => {
                let response = W::parse(&bytes)?;
                replay(&response, sink);
                Ok(response)
            }
        }
    }
}

fn render<W: WireFormat>(
    request: &ModelRequest,
    config: &ProviderConfig<W>,
    stream: bool,
) -> Result<Vec<u8>, ModelError> {
    W::render(request, config, stream)
        .map_err(|e| ModelError::Other(format!("could not encode the request: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn e2_endpoints_join_and_bad_base_urls_are_named() {
        assert_eq!(
            endpoint("http://127.0.0.1:8080/v1/", "chat/completions")
                .unwrap()
                .as_str(),
            "http://127.0.0.1:8080/v1/chat/completions"
        );
        let err = endpoint("ftp://x", "v1/messages").unwrap_err();
        assert!(err.to_string().contains("base_url"), "{err}");
        assert!(err.to_string().contains("ftp"), "{err}");
        assert!(endpoint("not a url", "x").is_err());
        assert!(endpoint("http://h/v1?x=1", "x").is_err());
    }
}

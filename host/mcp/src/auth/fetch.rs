//! [`Fetcher`]: the one way the resource server asks the authorization
//! server anything (metadata, the key set, introspection).
//!
//! Contract: every fetch ends by its deadline, connection to last byte,
//! whatever the other side does (a stalled server fails it with
//! [`FetchError::Deadline`]); it reads at most the cap, stopping as soon
//! as the answer would exceed it ([`FetchError::TooLarge`]), so an answer
//! of any size costs at most the cap in memory; it follows no redirect;
//! and only a 200 with a JSON body of the expected shape succeeds.

use std::time::Duration;

use serde::de::DeserializeOwned;

use super::error::{AuthError, FetchError};

/// Fetches JSON documents with a deadline and a size cap.
#[derive(Debug, Clone)]
pub(crate) struct Fetcher {
    client: reqwest::Client,
    deadline: Duration,
    max_bytes: usize,
}

impl Fetcher {
    /// A fetcher whose every fetch ends within `deadline` and reads at
    /// most `max_bytes`.
    pub(crate) fn new(deadline: Duration, max_bytes: usize) -> Result<Self, AuthError> {
        let client = toolhost_net::tls::reqwest_builder()
            .map_err(|e| AuthError::Client(Box::new(e)))?
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(deadline)
            .timeout(deadline)
            .build()
            .map_err(|e| AuthError::Client(Box::new(e)))?;
        Ok(Self {
            client,
            deadline,
            max_bytes,
        })
    }

    /// GETs `url` as JSON.
    pub(crate) async fn get_json<T: DeserializeOwned>(&self, url: &str) -> Result<T, FetchError> {
        self.json(url, self.client.get(url)).await
    }

    /// POSTs the form `fields` to `url` with HTTP Basic credentials
    /// (`id`, `secret`), each form-encoded first as RFC 6749 §2.3.1 says;
    /// the answer as JSON.
    pub(crate) async fn post_form_json<T: DeserializeOwned>(
        &self,
        url: &str,
        fields: &[(&str, &str)],
        (id, secret): (&str, &str),
    ) -> Result<T, FetchError> {
        let body = fields
            .iter()
            .map(|(k, v)| format!("{}={}", form_encode(k), form_encode(v)))
            .collect::<Vec<_>>()
            .join("&");
        let request = self
            .client
            .post(url)
            .basic_auth(form_encode(id), Some(form_encode(secret)))
            .header(
                reqwest::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .body(body);
        self.json(url, request).await
    }

    async fn json<T: DeserializeOwned>(
        &self,
        url: &str,
        request: reqwest::RequestBuilder,
    ) -> Result<T, FetchError> {
        let bytes = tokio::time::timeout(self.deadline, self.read(url, request))
            .await
            .map_err(|_| FetchError::Deadline {
                url: url.to_owned(),
                after: self.deadline,
            })??;
        serde_json::from_slice(&bytes).map_err(|source| FetchError::Json {
            url: url.to_owned(),
            source,
        })
    }

    async fn read(
        &self,
        url: &str,
        request: reqwest::RequestBuilder,
    ) -> Result<Vec<u8>, FetchError> {
        let failed = |source: reqwest::Error| {
            if source.is_timeout() {
                FetchError::Deadline {
                    url: url.to_owned(),
                    after: self.deadline,
                }
            } else {
                FetchError::Request {
                    url: url.to_owned(),
                    source,
                }
            }
        };
        let mut response = request
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(failed)?;
        if response.status() != reqwest::StatusCode::OK {
            return Err(FetchError::Status {
                url: url.to_owned(),
                status: response.status().as_u16(),
            });
        }
        let too_large = || FetchError::TooLarge {
            url: url.to_owned(),
            limit: self.max_bytes,
        };
        if response
            .content_length()
            .is_some_and(|n| n > self.max_bytes as u64)
        {
            return Err(too_large());
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(failed)? {
            if body.len() + chunk.len() > self.max_bytes {
                return Err(too_large());
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }
}

/// `application/x-www-form-urlencoded` encoding of `text`.
fn form_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'*' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_are_encoded() {
        assert_eq!(form_encode("a b+c/d=é"), "a+b%2Bc%2Fd%3D%C3%A9");
    }
}

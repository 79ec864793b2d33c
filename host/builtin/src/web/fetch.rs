//! [`LocalWeb`]: HTTP(S) fetches with reqwest, every hop checked by the
//! [`NetPolicy`] and connected to the addresses the policy checked.

use std::error::Error as _;
use std::net::SocketAddr;
use std::sync::Arc;

use async_trait::async_trait;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::{Url, header};

use super::{FetchRequest, FetchResponse, WebOps};
use toolhost_core::error::ToolError;
use toolhost_net::NetPolicy;

/// Fetches with reqwest on this machine.
///
/// For each hop — the first request and every redirect, at most
/// `max_redirects` of them — the destination's scheme, host and port go
/// through [`NetPolicy::resolve`], and the hop's connection is made with a
/// DNS resolver that returns exactly the addresses the policy checked and
/// refuses any other name. A name that resolves to a loopback, private or
/// link-local address is refused unless that address is granted, and a
/// redirect to one is refused in the same way. Redirects are followed here
/// rather than by a reqwest redirect policy, whose callback is synchronous
/// and so cannot resolve and check the next destination before connecting.
/// Proxies from the environment are ignored.
#[derive(Debug, Clone)]
pub struct LocalWeb {
    policy: NetPolicy,
    max_redirects: usize,
}

impl LocalWeb {
    /// Fetches reaching what `policy` grants, following at most 5
    /// redirects.
    pub fn new(policy: NetPolicy) -> Self {
        Self {
            policy,
            max_redirects: 5,
        }
    }

    /// Follows at most `hops` redirects.
    pub fn max_redirects(mut self, hops: usize) -> Self {
        self.max_redirects = hops;
        self
    }
}

/// Resolves one host name to addresses checked beforehand; any other name
/// is refused.
struct Pinned {
    host: String,
    addrs: Vec<SocketAddr>,
}

impl Resolve for Pinned {
    fn resolve(&self, name: Name) -> Resolving {
        let answer = if name.as_str().eq_ignore_ascii_case(&self.host) {
            Ok(Box::new(self.addrs.clone().into_iter()) as Addrs)
        } else {
            Err(format!("{} was not checked by the network policy", name.as_str()).into())
        };
        Box::pin(std::future::ready(answer))
    }
}

/// Checks `url`'s destination and returns a client that can reach only the
/// checked addresses.
async fn client_for(policy: &NetPolicy, url: &Url) -> Result<reqwest::Client, ToolError> {
    let scheme = url.scheme();
    if scheme != "http" && scheme != "https" {
        return Err(ToolError::invalid_arguments(
            "/url",
            format!("`{url}`: only http and https URLs can be fetched"),
        ));
    }
    let host = url
        .host_str()
        .ok_or_else(|| ToolError::invalid_arguments("/url", format!("`{url}` has no host")))?;
    let port = url.port_or_known_default().unwrap_or(80);
    let addrs = policy
        .resolve(scheme, host, port)
        .await
        .map_err(|e| ToolError::failed(format!("refused by the network policy: {e}")))?;
    toolhost_net::tls::reqwest_builder()
        .map_err(|e| ToolError::failed(format!("cannot build the HTTP client: {e}")))?
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .dns_resolver(Arc::new(Pinned {
            host: host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_owned(),
            addrs,
        }))
        .user_agent(concat!("toolhost/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| ToolError::failed(format!("cannot build the HTTP client: {e}")))
}

fn request_error(url: &Url, e: reqwest::Error) -> ToolError {
    let mut message = format!("fetching {url} failed: {e}");
    let mut source = e.source();
    while let Some(s) = source {
        message.push_str(&format!(": {s}"));
        source = s.source();
    }
    ToolError::transient(message)
}

#[async_trait]
impl WebOps for LocalWeb {
    async fn fetch(&self, req: FetchRequest) -> Result<FetchResponse, ToolError> {
        let started = tokio::time::Instant::now();
        let work = async {
            let mut url = Url::parse(&req.url).map_err(|e| {
                ToolError::invalid_arguments("/url", format!("`{}` is not a URL: {e}", req.url))
            })?;
            let mut redirects = Vec::new();
            loop {
                let client = client_for(&self.policy, &url).await?;
                let mut resp = client
                    .get(url.clone())
                    .send()
                    .await
                    .map_err(|e| request_error(&url, e))?;
                let status = resp.status();
                if status.is_redirection()
                    && let Some(location) = resp.headers().get(header::LOCATION)
                {
                    if redirects.len() >= self.max_redirects {
                        return Err(ToolError::failed(format!(
                            "more than {} redirects, the last to {url}",
                            self.max_redirects
                        )));
                    }
                    let location = location.to_str().unwrap_or_default();
                    url = url.join(location).map_err(|e| {
                        ToolError::failed(format!("bad redirect to `{location}`: {e}"))
                    })?;
                    redirects.push(url.to_string());
                    continue;
                }
                let content_type = resp
                    .headers()
                    .get(header::CONTENT_TYPE)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned);
                let mut body = Vec::new();
                let mut truncated = false;
                while let Some(chunk) = resp.chunk().await.map_err(|e| request_error(&url, e))? {
                    let room = req.max_bytes - body.len();
                    if chunk.len() > room {
                        body.extend_from_slice(&chunk[..room]);
                        truncated = true;
                        break;
                    }
                    body.extend_from_slice(&chunk);
                }
                return Ok(FetchResponse {
                    final_url: url.to_string(),
                    status: status.as_u16(),
                    content_type,
                    body,
                    truncated,
                    redirects,
                });
            }
        };
        tokio::time::timeout(req.timeout, work)
            .await
            .map_err(|_| ToolError::timeout(started.elapsed()))?
    }
}

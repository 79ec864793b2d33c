//! The `web_fetch` tool (rule B6) and the [`WebOps`] trait it fetches
//! through. Network destinations are restricted by a
//! [`NetPolicy`](toolhost_net::NetPolicy): deny by default, checked on the
//! resolved address, on every redirect.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;

use super::text::cut_text;
use super::{schema_of, typed_tool};
use toolhost_core::error::ToolError;
use toolhost_core::output::ToolOutput;
use toolhost_core::tool::{Tool, ToolSpec};

mod fetch;
pub(crate) mod text;

pub use fetch::LocalWeb;

/// One fetch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchRequest {
    /// An `http` or `https` URL.
    pub url: String,
    /// Body bytes to keep at most; the rest is not read.
    pub max_bytes: usize,
    /// Time for the whole fetch, redirects included.
    pub timeout: Duration,
}

/// What a fetch got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchResponse {
    /// The URL of the response, after redirects.
    pub final_url: String,
    /// The HTTP status.
    pub status: u16,
    /// The `Content-Type` header, if any.
    pub content_type: Option<String>,
    /// The body, at most `max_bytes` of it.
    pub body: Vec<u8>,
    /// Whether the body was cut at `max_bytes`.
    pub truncated: bool,
    /// Every redirect target followed, in order.
    pub redirects: Vec<String>,
}

/// Fetches web resources for `web_fetch`. Implementations must refuse any
/// destination (including redirect targets) their network policy does not
/// grant, and keep the request's size cap and timeout (a timeout is
/// [`ToolError::Timeout`]).
#[async_trait]
pub trait WebOps: Send + Sync {
    /// Fetches `request.url` with GET, following redirects.
    async fn fetch(&self, request: FetchRequest) -> Result<FetchResponse, ToolError>;
}

/// Caps of `web_fetch`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebLimits {
    /// Body bytes read at most.
    pub max_bytes: usize,
    /// Time for a whole fetch.
    pub timeout: Duration,
    /// Characters of text the model sees (the user sees all of it).
    pub llm_chars: usize,
}

impl Default for WebLimits {
    fn default() -> Self {
        Self {
            max_bytes: 2 * 1024 * 1024,
            timeout: Duration::from_secs(30),
            llm_chars: 20_000,
        }
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct FetchArgs {
    /// The http or https URL to fetch.
    #[schemars(length(min = 1), regex(pattern = "^[hH][tT][tT][pP][sS]?://"))]
    url: String,
}

/// The `web_fetch` tool over `ops`.
pub(crate) fn web_fetch_tool(ops: Arc<dyn WebOps>, limits: WebLimits) -> Arc<dyn Tool> {
    let spec = ToolSpec::new(
        "web_fetch",
        "Fetches an http(s) URL and returns its content as readable text (HTML is rendered to \
         plain text). Only destinations the host's network policy grants can be reached. For \
         pages that need JavaScript, use browse.",
        schema_of::<FetchArgs>(),
    )
    .concurrency_safe(true)
    .idempotent(true);
    typed_tool(spec, move |_ctx, args: FetchArgs| {
        let (ops, limits) = (ops.clone(), limits.clone());
        async move {
            let resp = ops
                .fetch(FetchRequest {
                    url: args.url,
                    max_bytes: limits.max_bytes,
                    timeout: limits.timeout,
                })
                .await?;
            render(&resp, &limits)
        }
    })
}

fn render(resp: &FetchResponse, limits: &WebLimits) -> Result<ToolOutput, ToolError> {
    let content_type = resp.content_type.as_deref();
    let text = text::readable(content_type, &resp.body);
    if resp.status >= 400 {
        let snippet: String = text.unwrap_or_default().chars().take(500).collect();
        let message = format!(
            "HTTP {} from {}: {}",
            resp.status,
            resp.final_url,
            snippet.trim()
        );
        return Err(if resp.status == 429 || resp.status >= 500 {
            ToolError::transient(message)
        } else {
            ToolError::failed(message)
        });
    }
    let text = text?;
    let mut header = format!(
        "{} (HTTP {}, {})",
        resp.final_url,
        resp.status,
        content_type.unwrap_or("no content type")
    );
    if resp.truncated {
        let _ = write!(header, " [body cut at {} bytes]", resp.body.len());
    }
    let mut for_user = header.clone();
    for r in &resp.redirects {
        let _ = write!(for_user, "\nredirected to {r}");
    }
    let _ = write!(for_user, "\n\n{text}");
    let for_llm = format!("{header}\n\n{}", cut_text(&text, limits.llm_chars));
    Ok(ToolOutput::dual(for_llm, for_user))
}

#[cfg(test)]
mod tests;

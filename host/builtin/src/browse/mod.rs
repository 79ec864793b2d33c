//! The `browse` tool (rule B6): a real headless browser for pages that need
//! JavaScript, behind the [`BrowserOps`] trait. Its network destinations are
//! restricted by the same [`NetPolicy`](toolhost_net::NetPolicy) as
//! `web_fetch`, enforced by a checking proxy that all the browser's traffic
//! goes through.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::text::cut_text;
use super::{constrain, schema_of, typed_tool};
use toolhost_core::error::ToolError;
use toolhost_core::output::{ContentBlock, ToolOutput};
use toolhost_core::tool::{Tool, ToolSpec};

pub(crate) mod cdp;
// `pre_exec` to hand Chromium its debugging pipe (SAFETY at the block).
#[allow(unsafe_code)]
mod chromium;
mod proxy;
// `pre_exec` to install the seccomp filter, raw socket calls in its tests
// (SAFETY at each block).
#[allow(unsafe_code)]
mod socket_filter;

pub use chromium::LocalBrowser;

/// One page to render.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrowseRequest {
    /// An `http` or `https` URL.
    pub url: String,
    /// Also capture a PNG screenshot of the viewport.
    pub screenshot: bool,
    /// Extra time after the page's load event, for scripts that render
    /// later.
    pub settle: Duration,
    /// Time for the whole call, browser start included.
    pub timeout: Duration,
}

/// What a page rendered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrowseResult {
    /// The page's URL after redirects.
    pub final_url: String,
    /// The document's title.
    pub title: String,
    /// The rendered text (`innerText` of the body).
    pub text: String,
    /// A PNG of the viewport, if asked for.
    pub screenshot: Option<Vec<u8>>,
    /// Destinations the page tried to reach and the policy refused.
    pub blocked: Vec<String>,
}

/// Renders pages for `browse`. Implementations must restrict every request
/// the page makes (subresources, scripts' requests, redirects) to what
/// their network policy grants, and keep the request's timeout (a timeout
/// is [`ToolError::Timeout`]).
#[async_trait]
pub trait BrowserOps: Send + Sync {
    /// Loads `request.url` and returns what it rendered.
    async fn browse(&self, request: BrowseRequest) -> Result<BrowseResult, ToolError>;
}

/// Caps of `browse`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrowseLimits {
    /// Time for a whole call.
    pub timeout: Duration,
    /// The longest `wait_ms` a call may ask for.
    pub max_settle: Duration,
    /// Characters of text the model sees (the user sees all of it).
    pub llm_chars: usize,
}

impl Default for BrowseLimits {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(60),
            max_settle: Duration::from_secs(10),
            llm_chars: 20_000,
        }
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct BrowseArgs {
    /// The http or https URL to load.
    #[schemars(length(min = 1), regex(pattern = "^[hH][tT][tT][pP][sS]?://"))]
    url: String,
    /// Also return a PNG screenshot of the viewport. Default false.
    #[serde(default)]
    screenshot: bool,
    /// Extra milliseconds to wait after the load event. Default 0.
    #[serde(default)]
    wait_ms: u64,
}

/// The `browse` tool over `ops`.
pub(crate) fn browse_tool(ops: Arc<dyn BrowserOps>, limits: BrowseLimits) -> Arc<dyn Tool> {
    let max_wait = limits.max_settle.as_millis() as u64;
    let spec = ToolSpec::new(
        "browse",
        "Loads a page in a headless browser (JavaScript runs) and returns its rendered text, \
         and on request a PNG screenshot. Only destinations the host's network policy grants \
         can be reached. Prefer web_fetch for pages that do not need JavaScript.",
        {
            let mut schema = schema_of::<BrowseArgs>();
            constrain(&mut schema, "wait_ms", "maximum", json!(max_wait));
            schema
        },
    )
    .concurrency_safe(true)
    .idempotent(false);
    typed_tool(spec, move |_ctx, args: BrowseArgs| {
        let (ops, limits) = (ops.clone(), limits.clone());
        async move {
            if args.wait_ms > limits.max_settle.as_millis() as u64 {
                return Err(ToolError::invalid_arguments(
                    "/wait_ms",
                    format!("at most {} ms", limits.max_settle.as_millis()),
                ));
            }
            let result = ops
                .browse(BrowseRequest {
                    url: args.url,
                    screenshot: args.screenshot,
                    settle: Duration::from_millis(args.wait_ms),
                    timeout: limits.timeout,
                })
                .await?;
            Ok(render(result, limits.llm_chars))
        }
    })
}

fn render(result: BrowseResult, llm_chars: usize) -> ToolOutput {
    let mut header = format!("{} — {}", result.final_url, result.title);
    if !result.blocked.is_empty() {
        let _ = write!(
            header,
            "\n[{} request(s) blocked by the network policy: {}]",
            result.blocked.len(),
            result.blocked.join("; ")
        );
    }
    let shown = cut_text(&result.text, llm_chars);
    match result.screenshot {
        Some(png) => ToolOutput::blocks(vec![
            ContentBlock::text(format!("{header}\n\n{shown}")),
            ContentBlock::image("image/png", png),
        ]),
        None => ToolOutput::dual(
            format!("{header}\n\n{shown}"),
            format!("{header}\n\n{}", result.text),
        ),
    }
}

#[cfg(test)]
mod c10_tests;
#[cfg(test)]
mod tests;

//! Fetches a URL over HTTP(S). The host's policy decides which hosts are
//! reachable; everything else is refused before a connection is made.

use toolhost_sdk::http;
use toolhost_sdk::prelude::*;

/// Arguments of `fetch`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct FetchArgs {
    /// The URL to fetch (`http://` or `https://`).
    url: String,
    /// Most characters of the body to return (default 2000).
    max_chars: Option<usize>,
}

fn fetch(a: FetchArgs, _: &CallInfo) -> Result<Output, ToolError> {
    let response = http::get(&a.url, 1 << 20)?;
    let text = response.text();
    let max = a.max_chars.unwrap_or(2000);
    let shown: String = text.chars().take(max).collect();
    let cut = text.chars().count().saturating_sub(max);
    let summary = format!(
        "HTTP {} from {}, {} bytes",
        response.status,
        a.url,
        response.body.len()
    );
    let body = if cut > 0 {
        format!("{shown}\n[… {cut} more characters]")
    } else {
        shown
    };
    Ok(Output::dual(
        format!("{summary}\n{body}"),
        format!("{summary}\n\n{text}"),
    ))
}

fn register(tools: &mut Tools) {
    tools
        .add(
            "fetch",
            "Fetches a URL from a host the policy grants and returns its text",
            fetch,
        )
        .safe()
        .idempotent()
        .read_only()
        .open_world(true);
}

toolhost_sdk::tool_plugin!(register);

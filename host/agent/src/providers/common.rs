//! What both providers share: how a tool result reads as text, which images
//! it carries, and where the endpoint is.

use std::borrow::Cow;

use reqwest::Url;
use reqwest::header::HeaderValue;

use crate::providers::ConfigError;
use toolhost_core::error::ToolError;
use toolhost_core::output::{ContentBlock, ToolOutput, model_blocks};

/// The model-facing text of a tool result: the output's `llm_text` (for
/// dual output only `for_llm`; for blocks, text with a placeholder per media
/// block), or `error: …` for a failed call.
pub(crate) fn result_text(result: &Result<ToolOutput, ToolError>) -> Cow<'_, str> {
    match result {
        Ok(output) => output.llm_text(),
        Err(e) => Cow::Owned(format!("error: {e}")),
    }
}

/// An image inside a tool result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ToolImage<'a> {
    /// Its `image/*` MIME type.
    pub(crate) mime_type: &'a str,
    /// The encoded image.
    pub(crate) data: &'a [u8],
}

/// The image blocks the model is meant to see in a successful block
/// output, in order.
pub(crate) fn result_images(result: &Result<ToolOutput, ToolError>) -> Vec<ToolImage<'_>> {
    match result {
        Ok(ToolOutput::Blocks { blocks } | ToolOutput::Structured { blocks, .. }) => {
            model_blocks(blocks)
                .into_iter()
                .filter_map(|b| match b {
                    ContentBlock::Image {
                        mime_type, data, ..
                    } => Some(ToolImage { mime_type, data }),
                    _ => None,
                })
                .collect()
        }
        _ => Vec::new(),
    }
}

/// `base` (an `http` or `https` URL) with `path` appended after its own
/// path. The error names the setting and what is wrong with it.
pub(crate) fn endpoint(base: &str, path: &str) -> Result<Url, ConfigError> {
    let invalid = |reason: String| ConfigError::Invalid {
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

/// Checks that a model name is given.
pub(crate) fn require_model(model: &str) -> Result<(), ConfigError> {
    if model.trim().is_empty() {
        return Err(ConfigError::Invalid {
            field: "model",
            reason: "the model name is empty".into(),
        });
    }
    Ok(())
}

/// A header value holding a credential: marked sensitive, so the HTTP
/// client never prints it. The error does not repeat the value.
pub(crate) fn secret_header(value: &str) -> Result<HeaderValue, ConfigError> {
    let mut value = HeaderValue::from_str(value).map_err(|_| ConfigError::Invalid {
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

    #[test]
    fn e2_tool_results_read_as_model_text() {
        let dual: Result<ToolOutput, ToolError> = Ok(ToolOutput::dual("short", "long view"));
        assert_eq!(result_text(&dual), "short");
        let failed: Result<ToolOutput, ToolError> = Err(ToolError::failed("disk full"));
        assert_eq!(result_text(&failed), "error: disk full");
        let blocks: Result<ToolOutput, ToolError> = Ok(ToolOutput::blocks(vec![
            ContentBlock::text("a"),
            ContentBlock::image("image/png", vec![1, 2]),
        ]));
        assert_eq!(
            result_images(&blocks),
            [ToolImage {
                mime_type: "image/png",
                data: &[1, 2]
            }]
        );
    }
}

//! A tool result as a provider sends it back to the model: its text and
//! the images it carries.

use std::borrow::Cow;

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

#[cfg(test)]
mod tests {
    use super::*;

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

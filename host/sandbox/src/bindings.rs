//! Host bindings of the WIT package `toolhost:plugin@0.1.0`, and conversions
//! between its types and the host's.
//!
//! One set of bindings serves both worlds: `extension-plugin` is
//! `tool-plugin` plus the `extension` export, and each export is looked up
//! on its own, so a tool plugin simply lacks the extension's.

#![allow(missing_docs)]

wasmtime::component::bindgen!({
    path: "../../wit",
    world: "toolhost:plugin/extension-plugin",
    exports: { default: async },
    // A host call can fail the call (a log record over its bound).
    imports: { default: trappable },
});

use self::toolhost::plugin::types;
use toolhost_core::error::{SandboxFault, ToolError};
use toolhost_core::output::{ContentBlock, ToolOutput};

/// What each content block counts for beyond its bytes: the host holds a
/// block in a few dozen bytes even when it is empty, so a million empty
/// blocks are not free (rule C3).
const BLOCK_OVERHEAD: usize = 32;

/// Converts a guest's output, refusing what the host cannot accept: more
/// than `max_bytes` in all (each block counting [`BLOCK_OVERHEAD`] more than
/// its bytes), or an image block whose type is not `image/*`.
pub(crate) fn output_from_guest(
    out: types::ToolOutput,
    max_bytes: usize,
) -> Result<ToolOutput, SandboxFault> {
    if let types::ToolOutput::Blocks(blocks) = &out {
        let overhead = blocks.len().saturating_mul(BLOCK_OVERHEAD);
        if overhead > max_bytes {
            return Err(SandboxFault::InvalidOutput(format!(
                "the result has {} content blocks, which count for {overhead} bytes; the limit is {max_bytes} bytes",
                blocks.len()
            )));
        }
    }
    let output = match out {
        types::ToolOutput::Text(text) => ToolOutput::Text { text },
        types::ToolOutput::Silent(text) => ToolOutput::Silent { text },
        types::ToolOutput::Dual(d) => ToolOutput::Dual {
            for_llm: d.for_llm,
            for_user: d.for_user,
        },
        types::ToolOutput::Blocks(blocks) => ToolOutput::Blocks {
            blocks: blocks
                .into_iter()
                .map(block_from_guest)
                .collect::<Result<_, _>>()?,
        },
    };
    let blocks = match &output {
        ToolOutput::Blocks { blocks } => blocks.len(),
        _ => 0,
    };
    let size = output
        .size_bytes()
        .saturating_add(blocks.saturating_mul(BLOCK_OVERHEAD));
    if size > max_bytes {
        return Err(SandboxFault::InvalidOutput(format!(
            "the result is {} bytes; the limit is {} bytes",
            size, max_bytes
        )));
    }
    Ok(output)
}

fn block_from_guest(b: types::ContentBlock) -> Result<ContentBlock, SandboxFault> {
    Ok(match b {
        types::ContentBlock::Text(text) => ContentBlock::text(text),
        types::ContentBlock::Image(m) => {
            if !m.mime_type.starts_with("image/") {
                return Err(SandboxFault::InvalidOutput(format!(
                    "an image block has MIME type `{}`, not image/*",
                    m.mime_type
                )));
            }
            ContentBlock::image(m.mime_type, m.data)
        }
        types::ContentBlock::Media(m) => ContentBlock::media(m.mime_type, m.data),
    })
}

/// Converts a guest's tool error; a message (or path, or tool name) longer
/// than `max_message` bytes is a fault of its own (rule C3).
pub(crate) fn error_from_guest(
    e: types::ToolError,
    plugin: &str,
    max_message: usize,
) -> Result<ToolError, SandboxFault> {
    let longest = match &e {
        types::ToolError::InvalidArguments(a) => a.path.len().max(a.message.len()),
        types::ToolError::Failed(f) => f.message.len(),
        types::ToolError::UnknownTool(name) => name.len(),
    };
    if longest > max_message {
        return Err(SandboxFault::LimitExceeded(format!(
            "message limit of {max_message} bytes (an error message of {longest} bytes)"
        )));
    }
    Ok(match e {
        types::ToolError::InvalidArguments(a) => ToolError::InvalidArguments {
            path: a.path,
            message: a.message,
        },
        types::ToolError::Failed(f) => ToolError::Failed {
            message: f.message,
            retryable: f.retryable,
        },
        types::ToolError::UnknownTool(name) => ToolError::failed(format!(
            "plugin `{plugin}` does not implement the tool `{name}` it declared"
        )),
    })
}

/// A block as version 0.1 of the interface has it: text, images and media
/// whole, resources as a line of text naming them (annotations have no
/// place there).
fn block_to_guest(b: &ContentBlock) -> types::ContentBlock {
    match b {
        ContentBlock::Text { text, .. } => types::ContentBlock::Text(text.clone()),
        ContentBlock::Image {
            mime_type, data, ..
        } => types::ContentBlock::Image(types::Media {
            mime_type: mime_type.clone(),
            data: data.clone(),
        }),
        ContentBlock::Media {
            mime_type, data, ..
        } => types::ContentBlock::Media(types::Media {
            mime_type: mime_type.clone(),
            data: data.clone(),
        }),
        other => {
            let mut text = String::new();
            other.describe(&mut text);
            types::ContentBlock::Text(text)
        }
    }
}

/// Converts a call's outcome for an extension's after hook. Media travel
/// whole; an offloaded output travels as its reference text, structured
/// output as its blocks (or its JSON text when it has none).
pub(crate) fn outcome_to_guest(outcome: &Result<ToolOutput, ToolError>) -> types::CallOutcome {
    match outcome {
        Err(e) => types::CallOutcome::Err(e.to_string()),
        Ok(out) => types::CallOutcome::Ok(match out {
            ToolOutput::Text { text } => types::ToolOutput::Text(text.clone()),
            ToolOutput::Silent { text } => types::ToolOutput::Silent(text.clone()),
            ToolOutput::Dual { for_llm, for_user } => types::ToolOutput::Dual(types::DualOutput {
                for_llm: for_llm.clone(),
                for_user: for_user.clone(),
            }),
            ToolOutput::Structured { structured, blocks } if blocks.is_empty() => {
                types::ToolOutput::Text(structured.to_string())
            }
            ToolOutput::Blocks { blocks } | ToolOutput::Structured { blocks, .. } => {
                types::ToolOutput::Blocks(blocks.iter().map(block_to_guest).collect())
            }
            ToolOutput::Offloaded(o) => types::ToolOutput::Text(o.reference_text()),
        }),
    }
}

//! Host bindings of the WIT packages `toolhost:plugin@0.3.0` ([`v03`]),
//! `toolhost:plugin@0.2.0` ([`v02`]) and `toolhost:plugin@0.1.0` ([`v01`]),
//! side by side, and conversions between their types and the host's.
//!
//! Each component is routed by the version it was built for (rule W1):
//! both versions' imports are in the one linker (their names differ by
//! version), and a plugin keeps the export indices of its own version.
//! Everything an older guest hands over is first upgraded to the 0.3 types
//! (a strict superset), so the checks below run once, on one shape. The calls
//! into a guest that tell the versions apart are all in `exports`.
//!
//! One set of bindings per version serves both worlds: `extension-plugin`
//! is `tool-plugin` plus the `extension` export, and each export is looked
//! up on its own, so a tool plugin simply lacks the extension's.

#![allow(missing_docs)]

mod exports;
pub(crate) mod v01;
pub(crate) mod v02;
pub(crate) mod v03;

pub(crate) use exports::{Exports, ExtensionGuest};

use toolhost_core::error::{SandboxFault, ToolError};
use toolhost_core::output::{
    Annotations, Audience, ContentBlock, EmbeddedResource, ResourceContents, ResourceLink,
    ToolOutput,
};

use self::v03::toolhost::plugin::types;

/// The hints of a tool whose interface version has none (before 0.3).
pub(crate) const NO_HINTS: types::ToolHints = types::ToolHints {
    read_only: None,
    destructive: None,
    open_world: None,
};

/// What each content block counts for beyond its bytes: the host holds a
/// block in a few dozen bytes even when it is empty, so a million empty
/// blocks are not free (rule C3).
const BLOCK_OVERHEAD: usize = 32;

/// The bytes a guest's block counts for: every string and byte it carries,
/// annotations included, plus [`BLOCK_OVERHEAD`].
fn block_cost(b: &types::ContentBlock) -> usize {
    let opt = |s: &Option<String>| s.as_ref().map_or(0, String::len);
    let content = match &b.content {
        types::Content::Text(t) => t.len(),
        types::Content::Image(m) | types::Content::Media(m) => m.mime_type.len() + m.data.len(),
        types::Content::ResourceLink(l) => {
            l.uri.len() + l.name.len() + opt(&l.title) + opt(&l.description) + opt(&l.mime_type)
        }
        types::Content::Embedded(r) => {
            r.uri.len()
                + opt(&r.mime_type)
                + match &r.contents {
                    types::ResourceContents::Text(t) => t.len(),
                    types::ResourceContents::Blob(b) => b.len(),
                }
        }
    };
    let annotations = b
        .annotations
        .as_ref()
        .map_or(0, |a| a.audience.len() + opt(&a.last_modified) + 8);
    content
        .saturating_add(annotations)
        .saturating_add(BLOCK_OVERHEAD)
}

/// The bytes a guest's output counts for against the output bound.
fn output_cost(out: &types::ToolOutput) -> usize {
    let blocks = |bs: &[types::ContentBlock]| {
        bs.iter()
            .fold(0usize, |n, b| n.saturating_add(block_cost(b)))
    };
    match out {
        types::ToolOutput::Text(t) | types::ToolOutput::Silent(t) => t.len(),
        types::ToolOutput::Dual(d) => d.for_llm.len() + d.for_user.len(),
        types::ToolOutput::Blocks(bs) => blocks(bs),
        types::ToolOutput::Structured(s) => s.json.len().saturating_add(blocks(&s.blocks)),
    }
}

fn invalid(message: String) -> SandboxFault {
    SandboxFault::InvalidOutput(message)
}

/// Converts a guest's output, refusing what the host cannot accept: more
/// than `max_bytes` in all (each block counting [`BLOCK_OVERHEAD`] more than
/// its bytes and annotations), an image block whose type is not `image/*`,
/// a priority outside 0 to 1, or structured output that is not JSON.
pub(crate) fn output_from_guest(
    out: types::ToolOutput,
    max_bytes: usize,
) -> Result<ToolOutput, SandboxFault> {
    let size = output_cost(&out);
    if size > max_bytes {
        let what = match &out {
            types::ToolOutput::Blocks(bs) => format!(" ({} content blocks)", bs.len()),
            _ => String::new(),
        };
        return Err(invalid(format!(
            "the result is {size} bytes{what}; the limit is {max_bytes} bytes"
        )));
    }
    let blocks = |bs: Vec<types::ContentBlock>| -> Result<Vec<ContentBlock>, SandboxFault> {
        bs.into_iter().map(block_from_guest).collect()
    };
    Ok(match out {
        types::ToolOutput::Text(text) => ToolOutput::Text { text },
        types::ToolOutput::Silent(text) => ToolOutput::Silent { text },
        types::ToolOutput::Dual(d) => ToolOutput::Dual {
            for_llm: d.for_llm,
            for_user: d.for_user,
        },
        types::ToolOutput::Blocks(bs) => ToolOutput::Blocks {
            blocks: blocks(bs)?,
        },
        types::ToolOutput::Structured(s) => {
            let value: serde_json::Value = serde_json::from_str(&s.json)
                .map_err(|e| invalid(format!("the structured output is not JSON: {e}")))?;
            if s.blocks.is_empty() {
                ToolOutput::structured(value)
            } else {
                ToolOutput::Structured {
                    structured: value,
                    blocks: blocks(s.blocks)?,
                }
            }
        }
    })
}

fn annotations_from_guest(a: Option<types::Annotations>) -> Result<Annotations, SandboxFault> {
    let Some(a) = a else {
        return Ok(Annotations::default());
    };
    if let Some(p) = a.priority
        && !(0.0..=1.0).contains(&p)
    {
        return Err(invalid(format!(
            "a block's priority is {p}; it must be from 0 to 1"
        )));
    }
    Ok(Annotations {
        audience: a
            .audience
            .into_iter()
            .map(|who| match who {
                types::Audience::User => Audience::User,
                types::Audience::Assistant => Audience::Assistant,
            })
            .collect(),
        priority: a.priority,
        last_modified: a.last_modified,
    })
}

fn block_from_guest(b: types::ContentBlock) -> Result<ContentBlock, SandboxFault> {
    let block = match b.content {
        types::Content::Text(text) => ContentBlock::text(text),
        types::Content::Image(m) => {
            if !m.mime_type.starts_with("image/") {
                return Err(invalid(format!(
                    "an image block has MIME type `{}`, not image/*",
                    m.mime_type
                )));
            }
            ContentBlock::image(m.mime_type, m.data)
        }
        types::Content::Media(m) => ContentBlock::media(m.mime_type, m.data),
        types::Content::ResourceLink(l) => ContentBlock::resource_link(ResourceLink {
            uri: l.uri,
            name: l.name,
            title: l.title,
            description: l.description,
            mime_type: l.mime_type,
            size: l.size,
        }),
        types::Content::Embedded(r) => ContentBlock::resource(EmbeddedResource {
            uri: r.uri,
            mime_type: r.mime_type,
            contents: match r.contents {
                types::ResourceContents::Text(t) => ResourceContents::Text(t),
                types::ResourceContents::Blob(b) => ResourceContents::Blob(b),
            },
        }),
    };
    Ok(block.with_annotations(annotations_from_guest(b.annotations)?))
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

fn annotations_to_guest(a: &Annotations) -> Option<types::Annotations> {
    (!a.is_empty()).then(|| types::Annotations {
        audience: a
            .audience
            .iter()
            .map(|who| match who {
                Audience::User => types::Audience::User,
                Audience::Assistant => types::Audience::Assistant,
            })
            .collect(),
        priority: a.priority,
        last_modified: a.last_modified.clone(),
    })
}

fn block_to_guest(b: &ContentBlock) -> types::ContentBlock {
    let media = |mime_type: &String, data: &Vec<u8>| types::Media {
        mime_type: mime_type.clone(),
        data: data.clone(),
    };
    let content = match b {
        ContentBlock::Text { text, .. } => types::Content::Text(text.clone()),
        ContentBlock::Image {
            mime_type, data, ..
        } => types::Content::Image(media(mime_type, data)),
        ContentBlock::Media {
            mime_type, data, ..
        } => types::Content::Media(media(mime_type, data)),
        ContentBlock::ResourceLink { link, .. } => {
            types::Content::ResourceLink(types::ResourceLink {
                uri: link.uri.clone(),
                name: link.name.clone(),
                title: link.title.clone(),
                description: link.description.clone(),
                mime_type: link.mime_type.clone(),
                size: link.size,
            })
        }
        ContentBlock::Resource { resource, .. } => {
            types::Content::Embedded(types::EmbeddedResource {
                uri: resource.uri.clone(),
                mime_type: resource.mime_type.clone(),
                contents: match &resource.contents {
                    ResourceContents::Text(t) => types::ResourceContents::Text(t.clone()),
                    ResourceContents::Blob(b) => types::ResourceContents::Blob(b.clone()),
                },
            })
        }
    };
    types::ContentBlock {
        content,
        annotations: annotations_to_guest(b.annotations()),
    }
}

/// Converts a call's outcome for a 0.3 extension's after hook, whole: every
/// block with its annotations, structured output as its JSON text and
/// blocks; an offloaded output travels as its reference text.
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
            ToolOutput::Blocks { blocks } => {
                types::ToolOutput::Blocks(blocks.iter().map(block_to_guest).collect())
            }
            ToolOutput::Structured { structured, blocks } => {
                types::ToolOutput::Structured(types::StructuredOutput {
                    json: structured.to_string(),
                    blocks: blocks.iter().map(block_to_guest).collect(),
                })
            }
            ToolOutput::Offloaded(o) => types::ToolOutput::Text(o.reference_text()),
        }),
    }
}

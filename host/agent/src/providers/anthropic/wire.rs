//! The Messages request body, rendered from a [`ModelRequest`].
//!
//! Field order is fixed with the stable parts first (model, settings, tools,
//! system), and the system prompt always goes out in block form, so two turns
//! of a run share a byte-identical prefix. Cache hints become
//! `cache_control: {"type": "ephemeral"}` breakpoints: on the system block,
//! on the last tool, and on the last content block of each marked message —
//! at most four in all, as the API allows; when there are more, the latest
//! message marks are kept.

use std::borrow::Cow;
use std::collections::BTreeSet;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::Serialize;
use serde_json::Value;

use super::AnthropicConfig;
use crate::providers::tool_result::{result_images, result_text};
use toolhost_core::error::ToolError;
use toolhost_core::model::{Message, ModelRequest, ModelToolCall};
use toolhost_core::output::{ContentBlock, ToolOutput, model_blocks};

/// The most `cache_control` breakpoints one request may carry.
pub(super) const MAX_BREAKPOINTS: usize = 4;

#[derive(Serialize)]
struct MessagesRequest<'a> {
    model: &'a str,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    stream: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<ToolDef<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    system: Vec<Block<'a>>,
    messages: Vec<WireMessage<'a>>,
}

#[derive(Serialize, Clone, Copy)]
struct CacheControl {
    r#type: &'static str,
}

const EPHEMERAL: CacheControl = CacheControl {
    r#type: "ephemeral",
};

#[derive(Serialize)]
struct ToolDef<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<CacheControl>,
}

#[derive(Serialize)]
struct WireMessage<'a> {
    role: &'static str,
    content: Vec<Block<'a>>,
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block<'a> {
    Text {
        text: Cow<'a, str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: Value,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    ToolResult {
        tool_use_id: &'a str,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        content: Vec<ResultBlock<'a>>,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
}

impl Block<'_> {
    fn mark(&mut self) {
        let (Self::Text { cache_control, .. }
        | Self::ToolUse { cache_control, .. }
        | Self::ToolResult { cache_control, .. }) = self;
        *cache_control = Some(EPHEMERAL);
    }
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ResultBlock<'a> {
    Text { text: Cow<'a, str> },
    Image { source: ImageSource<'a> },
}

#[derive(Serialize)]
struct ImageSource<'a> {
    r#type: &'static str,
    media_type: &'a str,
    data: String,
}

/// The JSON body for `request`.
pub(super) fn render(
    request: &ModelRequest,
    config: &AnthropicConfig,
    stream: bool,
) -> Result<Vec<u8>, serde_json::Error> {
    let hints = &request.cache;
    let mark_system = hints.system && !request.system.is_empty();
    let mark_tools = hints.tools && !request.tools.is_empty();
    let budget = MAX_BREAKPOINTS - usize::from(mark_system) - usize::from(mark_tools);
    let marked: BTreeSet<usize> = hints
        .messages
        .iter()
        .copied()
        .filter(|&i| i < request.messages.len())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .rev()
        .take(budget)
        .collect();
    let last_tool = request.tools.len().saturating_sub(1);
    let body = MessagesRequest {
        model: &config.model,
        max_tokens: config.max_tokens,
        temperature: config.temperature,
        stream,
        tools: request
            .tools
            .iter()
            .enumerate()
            .map(|(i, t)| ToolDef {
                name: &t.name,
                description: &t.description,
                input_schema: &t.parameters,
                cache_control: (mark_tools && i == last_tool).then_some(EPHEMERAL),
            })
            .collect(),
        system: if request.system.is_empty() {
            Vec::new()
        } else {
            vec![Block::Text {
                text: Cow::Borrowed(&request.system),
                cache_control: mark_system.then_some(EPHEMERAL),
            }]
        },
        messages: messages(&request.messages, &marked),
    };
    serde_json::to_vec(&body)
}

/// The conversation as alternating turns: tool results (and any user text
/// right after them) share one `user` message, as the API requires.
fn messages<'a>(messages: &'a [Message], marked: &BTreeSet<usize>) -> Vec<WireMessage<'a>> {
    let mut out: Vec<WireMessage<'a>> = Vec::with_capacity(messages.len());
    for (i, message) in messages.iter().enumerate() {
        let (role, mut blocks) = match message {
            Message::User { text } => ("user", text_block(text)),
            Message::Assistant { text, tool_calls } => {
                let mut blocks = text_block(text.as_deref().unwrap_or_default());
                blocks.extend(tool_calls.iter().map(tool_use));
                ("assistant", blocks)
            }
            Message::ToolResult {
                call_id, result, ..
            } => ("user", vec![tool_result(call_id, result)]),
        };
        let Some(last) = blocks.last_mut() else {
            continue; // nothing to send (an empty text)
        };
        if marked.contains(&i) {
            last.mark();
        }
        match out.last_mut() {
            Some(prev) if prev.role == role => prev.content.append(&mut blocks),
            _ => out.push(WireMessage {
                role,
                content: blocks,
            }),
        }
    }
    out
}

/// A text block, or none for empty text (the API refuses empty blocks).
fn text_block(text: &str) -> Vec<Block<'_>> {
    if text.is_empty() {
        return Vec::new();
    }
    vec![Block::Text {
        text: Cow::Borrowed(text),
        cache_control: None,
    }]
}

/// The API wants the input as an object; arguments that are not a JSON
/// object (the call then failed validation) go back as `{}`.
fn tool_use(call: &ModelToolCall) -> Block<'_> {
    let input = serde_json::from_str::<Value>(&call.arguments)
        .ok()
        .filter(Value::is_object)
        .unwrap_or_else(|| Value::Object(Default::default()));
    Block::ToolUse {
        id: &call.id,
        name: &call.name,
        input,
        cache_control: None,
    }
}

/// A tool result: text (for dual output only `for_llm`), with block
/// outputs sent block by block so images arrive as images; other media is
/// described in text. A failed call is `is_error` with the error's text.
fn tool_result<'a>(call_id: &'a str, result: &'a Result<ToolOutput, ToolError>) -> Block<'a> {
    let content = match result {
        Ok(ToolOutput::Blocks { blocks } | ToolOutput::Structured { blocks, .. })
            if !result_images(result).is_empty() =>
        {
            model_blocks(blocks)
                .into_iter()
                .filter_map(|b| match b {
                    ContentBlock::Text { text, .. } if text.is_empty() => None,
                    ContentBlock::Text { text, .. } => Some(ResultBlock::Text {
                        text: Cow::Borrowed(text),
                    }),
                    ContentBlock::Image {
                        mime_type, data, ..
                    } => Some(ResultBlock::Image {
                        source: ImageSource {
                            r#type: "base64",
                            media_type: mime_type,
                            data: STANDARD.encode(data),
                        },
                    }),
                    other => {
                        let mut text = String::new();
                        other.describe(&mut text);
                        Some(ResultBlock::Text {
                            text: Cow::Owned(text),
                        })
                    }
                })
                .collect()
        }
        _ => {
            let text = result_text(result);
            if text.is_empty() {
                Vec::new()
            } else {
                vec![ResultBlock::Text { text }]
            }
        }
    };
    Block::ToolResult {
        tool_use_id: call_id,
        content,
        is_error: result.is_err(),
        cache_control: None,
    }
}

//! The chat-completions request body, rendered from a [`ModelRequest`].
//!
//! Field order is fixed and the stable parts come first (model, tools, cache
//! key, settings, then the messages starting with the system prompt), so two
//! turns of a run share a byte-identical prefix: what servers that cache
//! prompts by prefix (OpenAI, vLLM, llama.cpp) can reuse.

use std::borrow::Cow;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::Serialize;
use serde_json::Value;

use super::OpenAiConfig;
use crate::providers::tool_result::{ToolImage, result_images, result_text};
use toolhost_core::model::{Message, ModelRequest, ModelToolCall};

#[derive(Serialize)]
struct ChatRequest<'a> {
    model: &'a str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<ToolDef<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_cache_key: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<StreamOptions>,
    messages: Vec<ChatMessage<'a>>,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Serialize)]
struct ToolDef<'a> {
    r#type: &'static str,
    function: FunctionDef<'a>,
}

#[derive(Serialize)]
struct FunctionDef<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

#[derive(Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
enum ChatMessage<'a> {
    System {
        content: &'a str,
    },
    User {
        content: UserContent<'a>,
    },
    Assistant {
        #[serde(skip_serializing_if = "Option::is_none")]
        content: Option<&'a str>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCallOut<'a>>,
    },
    Tool {
        tool_call_id: &'a str,
        content: Cow<'a, str>,
    },
}

#[derive(Serialize)]
#[serde(untagged)]
enum UserContent<'a> {
    Text(&'a str),
    Parts(Vec<Part>),
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Part {
    Text { text: String },
    ImageUrl { image_url: ImageUrl },
}

#[derive(Serialize)]
struct ImageUrl {
    url: String,
}

#[derive(Serialize)]
struct ToolCallOut<'a> {
    id: &'a str,
    r#type: &'static str,
    function: FunctionCallOut<'a>,
}

#[derive(Serialize)]
struct FunctionCallOut<'a> {
    name: &'a str,
    arguments: &'a str,
}

/// The JSON body for `request`.
pub(super) fn render(
    request: &ModelRequest,
    config: &OpenAiConfig,
    stream: bool,
) -> Result<Vec<u8>, serde_json::Error> {
    let body = ChatRequest {
        model: &config.model,
        tools: request
            .tools
            .iter()
            .map(|t| ToolDef {
                r#type: "function",
                function: FunctionDef {
                    name: &t.name,
                    description: &t.description,
                    parameters: &t.parameters,
                },
            })
            .collect(),
        prompt_cache_key: request.cache.key.as_deref(),
        max_tokens: config.max_tokens,
        temperature: config.temperature,
        stream,
        stream_options: stream.then_some(StreamOptions {
            include_usage: true,
        }),
        messages: messages(request),
    };
    serde_json::to_vec(&body)
}

/// The conversation in chat-completions form. Tool messages carry text only,
/// so the images of a run of tool results follow it in one user message,
/// as `image_url` parts with `data:` URIs, each group introduced by a text
/// part naming the call it came from.
fn messages(request: &ModelRequest) -> Vec<ChatMessage<'_>> {
    let mut out = Vec::with_capacity(request.messages.len() + 1);
    if !request.system.is_empty() {
        out.push(ChatMessage::System {
            content: &request.system,
        });
    }
    let mut pending_images: Vec<Part> = Vec::new();
    for message in &request.messages {
        if !matches!(message, Message::ToolResult { .. }) {
            flush_images(&mut out, &mut pending_images);
        }
        match message {
            Message::User { text } => out.push(ChatMessage::User {
                content: UserContent::Text(text),
            }),
            Message::Assistant { text, tool_calls } => out.push(ChatMessage::Assistant {
                content: text.as_deref().filter(|t| !t.is_empty()),
                tool_calls: tool_calls.iter().map(tool_call).collect(),
            }),
            Message::ToolResult {
                call_id,
                name,
                result,
            } => {
                out.push(ChatMessage::Tool {
                    tool_call_id: call_id,
                    content: result_text(result),
                });
                let images = result_images(result);
                if !images.is_empty() {
                    pending_images.push(Part::Text {
                        text: format!("Images returned by tool call `{call_id}` ({name}):"),
                    });
                    pending_images.extend(images.into_iter().map(image_part));
                }
            }
        }
    }
    flush_images(&mut out, &mut pending_images);
    out
}

fn flush_images<'a>(out: &mut Vec<ChatMessage<'a>>, parts: &mut Vec<Part>) {
    if !parts.is_empty() {
        out.push(ChatMessage::User {
            content: UserContent::Parts(std::mem::take(parts)),
        });
    }
}

fn image_part(image: ToolImage<'_>) -> Part {
    Part::ImageUrl {
        image_url: ImageUrl {
            url: format!(
                "data:{};base64,{}",
                image.mime_type,
                STANDARD.encode(image.data)
            ),
        },
    }
}

fn tool_call(call: &ModelToolCall) -> ToolCallOut<'_> {
    ToolCallOut {
        id: &call.id,
        r#type: "function",
        function: FunctionCallOut {
            name: &call.name,
            // An empty argument text is not JSON; servers expect an object.
            arguments: if call.arguments.trim().is_empty() {
                "{}"
            } else {
                &call.arguments
            },
        },
    }
}

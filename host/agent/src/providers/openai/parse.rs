//! Chat-completions responses, whole or streamed, turned into a
//! [`ModelResponse`].

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::Value;

use crate::providers::assembly::{Assemble, Pieces};
use toolhost_core::model::{
    ModelError, ModelResponse, ModelToolCall, StopReason, StreamSink, Usage,
};

#[derive(Deserialize)]
struct ChatResponse {
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct Choice {
    message: ResponseMessage,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct ResponseMessage {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    refusal: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<WireToolCall>>,
}

#[derive(Deserialize)]
struct WireToolCall {
    #[serde(default)]
    id: Option<String>,
    function: WireFunction,
}

#[derive(Deserialize)]
struct WireFunction {
    name: String,
    #[serde(default)]
    arguments: Option<Value>,
}

#[derive(Deserialize, Default)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
}

#[derive(Deserialize, Default)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

impl From<WireUsage> for Usage {
    /// `prompt_tokens` already includes the cached ones. The API reports no
    /// cache writes.
    fn from(u: WireUsage) -> Self {
        Usage {
            input_tokens: u.prompt_tokens,
            output_tokens: u.completion_tokens,
            cache_read_tokens: u
                .prompt_tokens_details
                .and_then(|d| d.cached_tokens)
                .unwrap_or(0),
            cache_write_tokens: 0,
        }
    }
}

fn stop_reason(finish: Option<&str>) -> StopReason {
    match finish {
        Some("stop") | None => StopReason::EndTurn,
        Some("tool_calls" | "function_call") => StopReason::ToolUse,
        Some("length") => StopReason::MaxTokens,
        Some(_) => StopReason::Other,
    }
}

/// Arguments as text: the API sends a JSON string; some compatible servers
/// send the object itself.
fn arguments_text(arguments: Option<Value>) -> String {
    match arguments {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s,
        Some(other) => other.to_string(),
    }
}

/// A complete (non-streamed) response.
pub(crate) fn parse_response(body: &[u8]) -> Result<ModelResponse, ModelError> {
    let response: ChatResponse = serde_json::from_slice(body)
        .map_err(|e| ModelError::Malformed(format!("chat completion: {e}")))?;
    let choice = response
        .choices
        .into_iter()
        .next()
        .ok_or_else(|| ModelError::Malformed("chat completion: `choices` is empty".into()))?;
    let tool_calls = choice
        .message
        .tool_calls
        .unwrap_or_default()
        .into_iter()
        .enumerate()
        .map(|(i, c)| ModelToolCall {
            id: c
                .id
                .filter(|id| !id.is_empty())
                .unwrap_or_else(|| fallback_id(i)),
            name: c.function.name,
            arguments: arguments_text(c.function.arguments),
        })
        .collect();
    Ok(ModelResponse {
        text: choice.message.content.or(choice.message.refusal),
        tool_calls,
        usage: response.usage.map(Usage::from).unwrap_or_default(),
        stop_reason: stop_reason(choice.finish_reason.as_deref()),
    })
}

/// The id given to a call whose server sent none.
fn fallback_id(index: usize) -> String {
    format!("call_{index}")
}

#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Vec<ChunkChoice>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct ChunkChoice {
    #[serde(default)]
    delta: Delta,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize, Default)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    refusal: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<ToolCallDelta>>,
}

#[derive(Deserialize)]
struct ToolCallDelta {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionDelta>,
}

#[derive(Deserialize)]
struct FunctionDelta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<Value>,
}

/// Assembles a streamed response from its chunks.
///
/// Tool calls are matched by the delta's `index`. A server that leaves the
/// index out starts a call with each new `id` and continues the latest call
/// otherwise; one that reuses an index with a different `id` (as some do for
/// parallel calls) starts a new call too.
/// `pub` only because the format's [`Codec`](crate::providers::wire_format::Codec)
/// names it; this module is not public.
#[derive(Default)]
pub struct StreamAssembler {
    pieces: Pieces,
    by_index: HashMap<u64, usize>,
    finish: Option<String>,
    usage: Usage,
    saw_choice: bool,
}

impl Assemble for StreamAssembler {
    /// Complete at `[DONE]`.
    fn push(&mut self, data: &str, sink: StreamSink<'_>) -> Result<bool, ModelError> {
        if data.trim() == "[DONE]" {
            return Ok(true);
        }
        let chunk: Chunk = serde_json::from_str(data)
            .map_err(|e| ModelError::Malformed(format!("chat completion chunk: {e}")))?;
        if let Some(error) = chunk.error {
            return Err(stream_error(&error));
        }
        if let Some(usage) = chunk.usage {
            self.usage = usage.into();
        }
        if let Some(choice) = chunk.choices.into_iter().next() {
            self.saw_choice = true;
            self.delta(choice.delta, sink);
            if choice.finish_reason.is_some() {
                self.finish = choice.finish_reason;
            }
        }
        Ok(false)
    }

    /// A stream that ended without `[DONE]` counts as complete only if it
    /// said why it finished.
    fn finish(self, complete: bool) -> Result<ModelResponse, ModelError> {
        if !complete && self.finish.is_none() {
            return Err(ModelError::Transport(
                "the stream ended before the response was complete".into(),
            ));
        }
        if !self.saw_choice {
            return Err(ModelError::Malformed(
                "chat completion stream: no chunk had a choice".into(),
            ));
        }
        let stop = stop_reason(self.finish.as_deref());
        Ok(self.pieces.into_response(self.usage, stop))
    }
}

impl StreamAssembler {
    fn delta(&mut self, delta: Delta, sink: StreamSink<'_>) {
        for text in [delta.content, delta.refusal].into_iter().flatten() {
            self.pieces.text(text, sink);
        }
        for call in delta.tool_calls.unwrap_or_default() {
            let slot = self.slot(&call, sink);
            if let Some(arguments) = call.function.and_then(|f| f.arguments) {
                self.pieces
                    .arguments(slot, arguments_text(Some(arguments)), sink);
            }
        }
    }

    /// The call a delta belongs to, starting a new one where needed.
    fn slot(&mut self, call: &ToolCallDelta, sink: StreamSink<'_>) -> usize {
        let id = call.id.as_deref().filter(|id| !id.is_empty());
        let name = call.function.as_ref().and_then(|f| f.name.as_deref());
        let existing = match call.index {
            Some(index) => self.by_index.get(&index).copied(),
            None if id.is_some() => None,
            None => self.pieces.calls().len().checked_sub(1),
        };
        let reused_with_new_id = existing
            .zip(id)
            .is_some_and(|(slot, id)| self.pieces.calls()[slot].id != id);
        if let Some(slot) = existing.filter(|_| !reused_with_new_id) {
            if let Some(name) = name {
                self.pieces.name_call(slot, name);
            }
            return slot;
        }
        let next = self.pieces.calls().len();
        let id = id.map_or_else(|| fallback_id(next), str::to_owned);
        let slot = self
            .pieces
            .start_call(id, name.unwrap_or_default().to_owned(), sink);
        if let Some(index) = call.index {
            self.by_index.insert(index, slot);
        }
        slot
    }
}

/// The error object some servers send inside a stream.
fn stream_error(error: &Value) -> ModelError {
    let text = |v: &Value| v.as_str().map_or_else(|| v.to_string(), str::to_owned);
    ModelError::Stream {
        kind: error
            .get("type")
            .or_else(|| error.get("code"))
            .map_or_else(|| "error".into(), text),
        message: error.get("message").map_or_else(|| error.to_string(), text),
    }
}

//! Messages API responses, whole or streamed, turned into a
//! [`ModelResponse`].

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::Value;

use crate::providers::assembly::{Assemble, Pieces};
use toolhost_core::model::{
    ModelError, ModelResponse, ModelToolCall, StopReason, StreamSink, Usage,
};

#[derive(Deserialize)]
struct MessageResponse {
    content: Vec<Block>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    usage: WireUsage,
}

/// A content block, whole in a response or as it starts in a stream.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block {
    Text {
        #[serde(default)]
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        #[serde(default)]
        input: Value,
    },
    #[serde(other)]
    Other,
}

/// Token counts as the API reports them; each is optional because stream
/// events carry only some of them.
#[derive(Deserialize, Default, Clone, Copy)]
struct WireUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
}

impl WireUsage {
    /// Later counts replace earlier ones (`message_delta` counts are
    /// cumulative).
    fn update(&mut self, newer: WireUsage) {
        self.input_tokens = newer.input_tokens.or(self.input_tokens);
        self.output_tokens = newer.output_tokens.or(self.output_tokens);
        self.cache_creation_input_tokens = newer
            .cache_creation_input_tokens
            .or(self.cache_creation_input_tokens);
        self.cache_read_input_tokens = newer
            .cache_read_input_tokens
            .or(self.cache_read_input_tokens);
    }
}

impl From<WireUsage> for Usage {
    /// The API's `input_tokens` leaves out cache reads and writes; the
    /// host's count includes them.
    fn from(u: WireUsage) -> Self {
        let read = u.cache_read_input_tokens.unwrap_or(0);
        let write = u.cache_creation_input_tokens.unwrap_or(0);
        Usage {
            input_tokens: u.input_tokens.unwrap_or(0) + read + write,
            output_tokens: u.output_tokens.unwrap_or(0),
            cache_read_tokens: read,
            cache_write_tokens: write,
        }
    }
}

fn stop_reason(reason: Option<&str>) -> StopReason {
    match reason {
        Some("end_turn" | "stop_sequence") | None => StopReason::EndTurn,
        Some("tool_use") => StopReason::ToolUse,
        Some("max_tokens") => StopReason::MaxTokens,
        Some(_) => StopReason::Other,
    }
}

/// A complete (non-streamed) response.
pub(crate) fn parse_response(body: &[u8]) -> Result<ModelResponse, ModelError> {
    let message: MessageResponse =
        serde_json::from_slice(body).map_err(|e| ModelError::Malformed(format!("message: {e}")))?;
    let mut text = String::new();
    let mut tool_calls = Vec::new();
    for block in message.content {
        match block {
            Block::Text { text: t } => text.push_str(&t),
            Block::ToolUse { id, name, input } => tool_calls.push(ModelToolCall {
                id,
                name,
                arguments: input_text(&input),
            }),
            Block::Other => {}
        }
    }
    Ok(ModelResponse {
        text: (!text.is_empty()).then_some(text),
        tool_calls,
        usage: message.usage.into(),
        stop_reason: stop_reason(message.stop_reason.as_deref()),
    })
}

fn input_text(input: &Value) -> String {
    match input {
        Value::Null => "{}".into(),
        other => other.to_string(),
    }
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Event {
    MessageStart {
        message: StartMessage,
    },
    ContentBlockStart {
        index: u64,
        content_block: Block,
    },
    ContentBlockDelta {
        index: u64,
        delta: BlockDelta,
    },
    ContentBlockStop {
        index: u64,
    },
    MessageDelta {
        #[serde(default)]
        delta: MessageDeltaBody,
        #[serde(default)]
        usage: WireUsage,
    },
    MessageStop,
    Error {
        error: WireError,
    },
    /// `ping`, and event types added after this was written (the API's
    /// versioning policy says to ignore those).
    #[serde(other)]
    Ignored,
}

#[derive(Deserialize)]
struct StartMessage {
    #[serde(default)]
    usage: WireUsage,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum BlockDelta {
    TextDelta {
        text: String,
    },
    InputJsonDelta {
        partial_json: String,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize, Default)]
struct MessageDeltaBody {
    #[serde(default)]
    stop_reason: Option<String>,
}

#[derive(Deserialize)]
struct WireError {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    message: String,
}

/// What a content block index holds.
enum BlockState {
    Text,
    /// A tool call: its slot among the calls, and its starting input for a
    /// block that gets no `input_json_delta`.
    Tool {
        slot: usize,
        initial: Value,
    },
    Other,
}

/// Assembles a streamed response from its events: `message_start` (usage),
/// `content_block_start` / `_delta` / `_stop` (text and tool calls, by
/// block index), `message_delta` (stop reason, cumulative usage),
/// `message_stop`; `error` ends the call.
/// `pub` only because the format's [`Codec`](crate::providers::wire_format::Codec)
/// names it; this module is not public.
#[derive(Default)]
pub struct StreamAssembler {
    pieces: Pieces,
    blocks: HashMap<u64, BlockState>,
    usage: WireUsage,
    stop_reason: Option<String>,
}

impl Assemble for StreamAssembler {
    /// Complete at `message_stop`.
    fn push(&mut self, data: &str, sink: StreamSink<'_>) -> Result<bool, ModelError> {
        let event: Event = serde_json::from_str(data)
            .map_err(|e| ModelError::Malformed(format!("message stream event: {e}")))?;
        match event {
            Event::MessageStart { message } => self.usage.update(message.usage),
            Event::ContentBlockStart {
                index,
                content_block,
            } => self.start_block(index, content_block, sink),
            Event::ContentBlockDelta { index, delta } => self.delta(index, delta, sink)?,
            Event::ContentBlockStop { index } => self.stop_block(index, sink),
            Event::MessageDelta { delta, usage } => {
                self.usage.update(usage);
                if delta.stop_reason.is_some() {
                    self.stop_reason = delta.stop_reason;
                }
            }
            Event::MessageStop => return Ok(true),
            Event::Error { error } => {
                return Err(ModelError::Stream {
                    kind: error.kind,
                    message: error.message,
                });
            }
            Event::Ignored => {}
        }
        Ok(false)
    }

    /// A stream without `message_stop` was cut off.
    fn finish(self, complete: bool) -> Result<ModelResponse, ModelError> {
        if !complete {
            return Err(ModelError::Transport(
                "the stream ended before `message_stop`".into(),
            ));
        }
        let stop = stop_reason(self.stop_reason.as_deref());
        Ok(self.pieces.into_response(self.usage.into(), stop))
    }
}

impl StreamAssembler {
    fn start_block(&mut self, index: u64, block: Block, sink: StreamSink<'_>) {
        let state = match block {
            Block::Text { text } => {
                self.pieces.text(text, sink);
                BlockState::Text
            }
            Block::ToolUse { id, name, input } => BlockState::Tool {
                slot: self.pieces.start_call(id, name, sink),
                initial: input,
            },
            Block::Other => BlockState::Other,
        };
        self.blocks.insert(index, state);
    }

    fn delta(
        &mut self,
        index: u64,
        delta: BlockDelta,
        sink: StreamSink<'_>,
    ) -> Result<(), ModelError> {
        match (self.blocks.get(&index), delta) {
            (Some(BlockState::Text), BlockDelta::TextDelta { text }) => {
                self.pieces.text(text, sink);
            }
            (Some(BlockState::Tool { slot, .. }), BlockDelta::InputJsonDelta { partial_json }) => {
                self.pieces.arguments(*slot, partial_json, sink);
            }
            (None, _) => {
                return Err(ModelError::Malformed(format!(
                    "message stream: a delta for content block {index}, which never started"
                )));
            }
            // Thinking, signatures, citations and deltas of block types
            // this host does not use.
            _ => {}
        }
        Ok(())
    }

    /// At the end of a tool block that got no argument deltas, its starting
    /// input is the arguments.
    fn stop_block(&mut self, index: u64, sink: StreamSink<'_>) {
        if let Some(BlockState::Tool { slot, initial }) = self.blocks.get(&index)
            && self.pieces.calls()[*slot].arguments.is_empty()
        {
            self.pieces.arguments(*slot, input_text(initial), sink);
        }
    }
}

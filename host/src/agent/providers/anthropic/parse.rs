//! Messages API responses, whole or streamed, turned into a
//! [`ModelResponse`].

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::Value;

use crate::agent::model::{
    ModelError, ModelResponse, ModelToolCall, StopReason, StreamEvent, StreamSink, Usage,
};

#[derive(Deserialize)]
struct MessageResponse {
    content: Vec<ContentOut>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    usage: WireUsage,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ContentOut {
    Text {
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
pub(super) fn parse_response(body: &[u8]) -> Result<ModelResponse, ModelError> {
    let message: MessageResponse =
        serde_json::from_slice(body).map_err(|e| ModelError::Malformed(format!("message: {e}")))?;
    let mut text = String::new();
    let mut tool_calls = Vec::new();
    for block in message.content {
        match block {
            ContentOut::Text { text: t } => text.push_str(&t),
            ContentOut::ToolUse { id, name, input } => tool_calls.push(ModelToolCall {
                id,
                name,
                arguments: input_text(&input),
            }),
            ContentOut::Other => {}
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
        content_block: StartBlock,
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
enum StartBlock {
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
#[derive(Default)]
pub(super) struct StreamAssembler {
    text: String,
    calls: Vec<ModelToolCall>,
    blocks: HashMap<u64, BlockState>,
    usage: WireUsage,
    stop_reason: Option<String>,
}

impl StreamAssembler {
    /// Takes one event's data; returns whether the message is complete
    /// (`message_stop`).
    pub(super) fn push(&mut self, data: &str, sink: StreamSink<'_>) -> Result<bool, ModelError> {
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

    fn start_block(&mut self, index: u64, block: StartBlock, sink: StreamSink<'_>) {
        let state = match block {
            StartBlock::Text { text } => {
                self.text_delta(text, sink);
                BlockState::Text
            }
            StartBlock::ToolUse { id, name, input } => {
                let slot = self.calls.len();
                sink(&StreamEvent::ToolCallStart {
                    index: slot,
                    id: id.clone(),
                    name: name.clone(),
                });
                self.calls.push(ModelToolCall {
                    id,
                    name,
                    arguments: String::new(),
                });
                BlockState::Tool {
                    slot,
                    initial: input,
                }
            }
            StartBlock::Other => BlockState::Other,
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
            (Some(BlockState::Text), BlockDelta::TextDelta { text }) => self.text_delta(text, sink),
            (Some(BlockState::Tool { slot, .. }), BlockDelta::InputJsonDelta { partial_json }) => {
                let slot = *slot;
                self.arguments_delta(slot, partial_json, sink);
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
        if let Some(BlockState::Tool { slot, initial }) = self.blocks.get(&index) {
            let slot = *slot;
            if self.calls[slot].arguments.is_empty() {
                let arguments = input_text(initial);
                self.arguments_delta(slot, arguments, sink);
            }
        }
    }

    fn text_delta(&mut self, text: String, sink: StreamSink<'_>) {
        if !text.is_empty() {
            self.text.push_str(&text);
            sink(&StreamEvent::TextDelta { text });
        }
    }

    fn arguments_delta(&mut self, slot: usize, arguments: String, sink: StreamSink<'_>) {
        if !arguments.is_empty() {
            self.calls[slot].arguments.push_str(&arguments);
            sink(&StreamEvent::ToolCallDelta {
                index: slot,
                arguments,
            });
        }
    }

    /// The complete response; a stream without `message_stop` was cut off.
    pub(super) fn finish(self, saw_stop: bool) -> Result<ModelResponse, ModelError> {
        if !saw_stop {
            return Err(ModelError::Transport(
                "the stream ended before `message_stop`".into(),
            ));
        }
        Ok(ModelResponse {
            text: (!self.text.is_empty()).then_some(self.text),
            tool_calls: self.calls,
            usage: self.usage.into(),
            stop_reason: stop_reason(self.stop_reason.as_deref()),
        })
    }
}

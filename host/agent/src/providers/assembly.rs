//! Building a response from streamed pieces, passing each piece on to the
//! sink as it is added, so that what the sink saw always adds up to the
//! final response.

use toolhost_core::model::{
    ModelError, ModelResponse, ModelToolCall, StopReason, StreamEvent, StreamSink, Usage,
};

/// One API's stream reader: fed each event's data in order, it says when
/// the response is complete and then gives it. `pub` only because a
/// [`Codec`](super::wire_format::Codec) names it; this module is private.
pub trait Assemble: Default + Send {
    /// Takes one event's data; returns whether the response is complete.
    fn push(&mut self, data: &str, sink: StreamSink<'_>) -> Result<bool, ModelError>;

    /// The response, once the stream is over; `complete` says whether
    /// [`push`](Self::push) saw the end of the response.
    fn finish(self, complete: bool) -> Result<ModelResponse, ModelError>;
}

/// The text and tool calls received so far.
#[derive(Debug, Default)]
pub(crate) struct Pieces {
    text: String,
    calls: Vec<ModelToolCall>,
}

impl Pieces {
    /// Appends text (nothing for empty text).
    pub(crate) fn text(&mut self, text: String, sink: StreamSink<'_>) {
        if !text.is_empty() {
            self.text.push_str(&text);
            sink(&StreamEvent::TextDelta { text });
        }
    }

    /// Starts a tool call; returns its index.
    pub(crate) fn start_call(&mut self, id: String, name: String, sink: StreamSink<'_>) -> usize {
        let index = self.calls.len();
        sink(&StreamEvent::ToolCallStart {
            index,
            id: id.clone(),
            name: name.clone(),
        });
        self.calls.push(ModelToolCall {
            id,
            name,
            arguments: String::new(),
        });
        index
    }

    // Indexing `calls` below cannot fail: every `index` a parser passes is
    // one `start_call` returned (providers' own indices are mapped to
    // those), and calls are never removed.

    /// Appends argument text to call `index` (nothing for empty text).
    pub(crate) fn arguments(&mut self, index: usize, arguments: String, sink: StreamSink<'_>) {
        if !arguments.is_empty() {
            self.calls[index].arguments.push_str(&arguments);
            sink(&StreamEvent::ToolCallDelta { index, arguments });
        }
    }

    /// The calls so far.
    pub(crate) fn calls(&self) -> &[ModelToolCall] {
        &self.calls
    }

    /// Names call `index` if its start came without a name.
    #[cfg_attr(not(feature = "openai"), allow(dead_code))]
    pub(crate) fn name_call(&mut self, index: usize, name: &str) {
        if self.calls[index].name.is_empty() {
            self.calls[index].name = name.to_owned();
        }
    }

    /// The finished response.
    pub(crate) fn into_response(self, usage: Usage, stop_reason: StopReason) -> ModelResponse {
        ModelResponse {
            text: (!self.text.is_empty()).then_some(self.text),
            tool_calls: self.calls,
            usage,
            stop_reason,
        }
    }
}

//! The model side of an agent: messages, requests, responses and the
//! [`ModelProvider`] trait that real HTTP providers and test scripts implement.

use std::ops::AddAssign;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;

use crate::error::ToolError;
use crate::output::ToolOutput;
use crate::tool::ToolSpec;

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// What the user said.
    User {
        /// The text.
        text: String,
    },
    /// What the model answered: text, tool calls, or both.
    Assistant {
        /// The model's text, if any.
        text: Option<String>,
        /// The tools it asked to call, in order.
        tool_calls: Vec<ModelToolCall>,
    },
    /// The outcome of one tool call, answering the assistant's call with the
    /// same id. Providers send only the model-facing part of the output.
    ToolResult {
        /// The id of the call this answers.
        call_id: String,
        /// The tool that was called.
        name: String,
        /// What the call returned, or why it failed.
        result: Result<ToolOutput, ToolError>,
    },
}

/// A tool call the model asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelToolCall {
    /// The provider's id for the call.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments as the model wrote them (JSON text, possibly invalid).
    pub arguments: String,
}

/// A tool as the model sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSchema {
    /// The tool's name.
    pub name: String,
    /// Its description.
    pub description: String,
    /// The JSON Schema of its arguments.
    pub parameters: Value,
}

impl From<&ToolSpec> for ToolSchema {
    fn from(spec: &ToolSpec) -> Self {
        Self {
            name: spec.name.clone(),
            description: spec.description.clone(),
            parameters: spec.parameters.clone(),
        }
    }
}

/// What is sent to the model on each turn.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ModelRequest {
    /// The system prompt, identical on every turn of a run.
    pub system: String,
    /// The conversation so far.
    pub messages: Vec<Message>,
    /// The tools the model may call, sorted by name.
    pub tools: Vec<ToolSchema>,
    /// Where the provider may cache the prompt. Empty by default: nothing is
    /// marked. The prompt caching extension fills it in.
    pub cache: CacheHints,
    /// The trace context the provider sends with the request, as its
    /// `traceparent`, `tracestate` and `baggage` headers (rule X2): the
    /// model call's span, set by the agent when the host has
    /// [traces](crate::traces::Traces). `None`: no headers.
    pub trace: Option<crate::traces::TraceContext>,
}

/// Provider-neutral prompt-cache hints. Each provider renders them in its
/// own format and ignores what it cannot express: Anthropic puts a
/// `cache_control` breakpoint on each marked part; OpenAI-compatible servers
/// cache a stable prefix by themselves and take only the `key`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CacheHints {
    /// Mark a breakpoint at the end of the system prompt.
    pub system: bool,
    /// Mark a breakpoint at the end of the tool list (its last tool).
    pub tools: bool,
    /// Mark a breakpoint at the end of each of these messages (indices into
    /// [`ModelRequest::messages`]). Indices past the end are ignored.
    pub messages: Vec<usize>,
    /// A key grouping requests that share a prefix, so the provider can
    /// route them to the same cache (OpenAI's `prompt_cache_key`).
    pub key: Option<String>,
}

/// Token counts reported by a provider, normalised across APIs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Usage {
    /// Every input (prompt) token of the call, including the ones read from
    /// or written to the prompt cache (Anthropic reports those separately;
    /// the provider adds them back).
    pub input_tokens: u64,
    /// Output (completion) tokens.
    pub output_tokens: u64,
    /// Input tokens read from the provider's prompt cache.
    pub cache_read_tokens: u64,
    /// Input tokens written to the provider's prompt cache.
    pub cache_write_tokens: u64,
}

impl AddAssign for Usage {
    fn add_assign(&mut self, o: Self) {
        self.input_tokens += o.input_tokens;
        self.output_tokens += o.output_tokens;
        self.cache_read_tokens += o.cache_read_tokens;
        self.cache_write_tokens += o.cache_write_tokens;
    }
}

/// Why the model stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StopReason {
    /// It finished its answer.
    #[default]
    EndTurn,
    /// It wants tool results.
    ToolUse,
    /// It hit the output token limit.
    MaxTokens,
    /// Another reason the provider gave.
    Other,
}

/// The model's answer to one request.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ModelResponse {
    /// Text, if any.
    pub text: Option<String>,
    /// Tool calls, in order.
    pub tool_calls: Vec<ModelToolCall>,
    /// Token usage of this call.
    pub usage: Usage,
    /// Why it stopped.
    pub stop_reason: StopReason,
}

impl ModelResponse {
    /// A final text answer.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: Some(text.into()),
            ..Self::default()
        }
    }

    /// A response that asks for tool calls.
    pub fn tool_calls(calls: Vec<ModelToolCall>) -> Self {
        Self {
            tool_calls: calls,
            stop_reason: StopReason::ToolUse,
            ..Self::default()
        }
    }
}

/// Why a model call failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// The provider answered with an HTTP error status.
    #[error("provider returned HTTP {status}: {message}")]
    Http {
        /// The status code.
        status: u16,
        /// The provider's message.
        message: String,
    },
    /// The provider is rate limiting; try again after `retry_after`.
    #[error("rate limited{}", retry_after.map(|d| format!(", retry after {}s", d.as_secs())).unwrap_or_default())]
    RateLimited {
        /// How long the provider asked to wait.
        retry_after: Option<Duration>,
    },
    /// The response could not be understood.
    #[error("malformed response: {0}")]
    Malformed(String),
    /// The request did not reach the provider or the answer did not arrive
    /// (connection refused or reset, timeout, a stream cut short).
    #[error("transport error: {0}")]
    Transport(String),
    /// The provider reported an error inside a streamed response, after
    /// its status had said success (for example Anthropic's
    /// `overloaded_error` event). Never retried: part of the response may
    /// already have been passed on.
    #[error("the provider reported `{kind}` mid-stream: {message}")]
    Stream {
        /// The provider's error type.
        kind: String,
        /// The provider's message.
        message: String,
    },
    /// Anything else.
    #[error("{0}")]
    Other(String),
}

impl ModelError {
    /// Whether sending the same request again may succeed: rate limits,
    /// server errors (5xx, including 529 "overloaded"), 408 and transport
    /// failures. Client errors and malformed responses are permanent.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::RateLimited { .. } | Self::Transport(_) => true,
            Self::Http { status, .. } => *status >= 500 || *status == 408,
            Self::Malformed(_) | Self::Stream { .. } | Self::Other(_) => false,
        }
    }
}

/// One piece of a response as it streams in. The pieces of one response,
/// concatenated per tool call (by `index`) and for the text, are exactly
/// what the final [`ModelResponse`] holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamEvent {
    /// More of the model's text.
    TextDelta {
        /// The new text.
        text: String,
    },
    /// The model started a tool call.
    ToolCallStart {
        /// The call's position among this response's tool calls, from 0.
        index: usize,
        /// The provider's id for the call.
        id: String,
        /// The tool's name.
        name: String,
    },
    /// More of a tool call's argument text (JSON, possibly cut anywhere).
    ToolCallDelta {
        /// The call's position, as in [`StreamEvent::ToolCallStart`].
        index: usize,
        /// The new argument text.
        arguments: String,
    },
}

/// A finished run.
#[derive(Debug, Clone, PartialEq)]
pub struct RunOutput {
    /// The model's final answer.
    pub final_text: String,
    /// How many turns it took.
    pub turns: u32,
    /// The whole conversation, including the final answer.
    pub messages: Vec<Message>,
    /// Token usage summed over all model calls.
    pub usage: Usage,
}

/// Why a run ended without a final answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// A model call failed.
    #[error("model call failed: {0}")]
    Model(#[from] ModelError),
    /// The model was still calling tools after `limit` turns.
    #[error("no final answer after {limit} turns")]
    MaxTurns {
        /// The configured limit.
        limit: u32,
    },
    /// The run was cancelled.
    #[error("the run was cancelled")]
    Cancelled,
}

/// Receives a streamed response's pieces, in order, as they arrive. It is
/// called on the task that awaits the model call, so it must return quickly.
pub type StreamSink<'a> = &'a (dyn Fn(&StreamEvent) + Send + Sync);

/// A language model behind some API. Implementations must be shareable
/// between tasks; the agent cancels a call by dropping its future.
#[async_trait]
pub trait ModelProvider: Send + Sync {
    /// A short name for logs (`openai`, `anthropic`, `scripted`, …).
    fn name(&self) -> &str;

    /// Sends one request and returns the complete response.
    async fn complete(&self, request: &ModelRequest) -> Result<ModelResponse, ModelError>;

    /// Sends one request, passes the response's pieces to `sink` as they
    /// arrive, and returns the complete response (the same one
    /// [`complete`](Self::complete) would give).
    ///
    /// The default calls `complete` and replays the result as events: the
    /// whole text as one delta, then each tool call. Providers that can
    /// stream override it.
    async fn stream(
        &self,
        request: &ModelRequest,
        sink: StreamSink<'_>,
    ) -> Result<ModelResponse, ModelError> {
        let response = self.complete(request).await?;
        replay(&response, sink);
        Ok(response)
    }
}

/// Passes a complete response to `sink` as the events a stream of it would
/// have carried: its text as one delta, then each tool call. For a
/// provider that answers whole where a stream was asked for.
pub fn replay(response: &ModelResponse, sink: StreamSink<'_>) {
    if let Some(text) = response.text.as_ref().filter(|t| !t.is_empty()) {
        sink(&StreamEvent::TextDelta { text: text.clone() });
    }
    for (index, call) in response.tool_calls.iter().enumerate() {
        sink(&StreamEvent::ToolCallStart {
            index,
            id: call.id.clone(),
            name: call.name.clone(),
        });
        if !call.arguments.is_empty() {
            sink(&StreamEvent::ToolCallDelta {
                index,
                arguments: call.arguments.clone(),
            });
        }
    }
}

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
}

/// Token counts reported by a provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Usage {
    /// Input (prompt) tokens.
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
    /// The request did not reach the provider or the answer did not arrive.
    #[error("transport error: {0}")]
    Transport(String),
    /// Anything else.
    #[error("{0}")]
    Other(String),
}

/// A language model behind some API. Implementations must be shareable
/// between tasks; the agent cancels a call by dropping its future.
#[async_trait]
pub trait ModelProvider: Send + Sync {
    /// A short name for logs (`openai`, `anthropic`, `scripted`, …).
    fn name(&self) -> &str;

    /// Sends one request and returns the complete response.
    async fn complete(&self, request: &ModelRequest) -> Result<ModelResponse, ModelError>;
}

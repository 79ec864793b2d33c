//! Questions a tool puts to the person behind its caller, with a form: the
//! [`Elicitor`] a call carries (a remote MCP server's `elicitation/create`,
//! forwarded to whoever made the call).
//!
//! A tool never answers such a question on the person's behalf: without an
//! elicitor on the call, the question fails with the reason
//! ([`ElicitationError::NoOneToAsk`]), which the tool passes back to the
//! server that asked.

use async_trait::async_trait;
use serde_json::Value;

/// A question with a form.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ElicitationRequest {
    /// Who asks: for example `mcp server `docs``.
    pub asked_by: String,
    /// The question, as the asker wrote it.
    pub message: String,
    /// The form: a JSON Schema object of flat, primitive properties, as MCP
    /// elicitation defines it, kept as the asker sent it.
    pub requested_schema: Value,
}

impl ElicitationRequest {
    /// A question from `asked_by` with `message` and the form `requested_schema`.
    pub fn new(
        asked_by: impl Into<String>,
        message: impl Into<String>,
        requested_schema: Value,
    ) -> Self {
        Self {
            asked_by: asked_by.into(),
            message: message.into(),
            requested_schema,
        }
    }
}

/// The person's answer.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ElicitationAnswer {
    /// Filled in: the form's values.
    Accept(Value),
    /// Refused to answer.
    Decline,
    /// Dismissed the question.
    Cancel,
}

/// Why a question could not be put.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ElicitationError {
    /// The call's caller cannot be asked (no elicitor, or one that cannot
    /// reach a person); the text says why.
    #[error("no one can be asked: {0}")]
    NoOneToAsk(String),
    /// Asking failed on the way (the caller's connection, a malformed form).
    #[error("the question could not be put: {0}")]
    Failed(String),
}

/// Puts a tool's question to the person behind the call.
///
/// The call's deadline and cancellation bound the wait: the tool drops the
/// future when either comes, so an elicitor need not time itself out and
/// must stop asking when dropped.
#[async_trait]
pub trait Elicitor: Send + Sync {
    /// Asks `request` and returns the answer.
    async fn elicit(
        &self,
        request: &ElicitationRequest,
    ) -> Result<ElicitationAnswer, ElicitationError>;
}

//! Asking a person whether a call may run (rule P7): the [`Approver`] a
//! before hook's [`Decision::Ask`](crate::hook::Decision::Ask) reaches.
//!
//! The pipeline asks at most once per call, after every before hook, and
//! bounds the wait: no answer within the timeout, a cancelled call, or no
//! approver at all is a denial (fail closed).

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use super::{Arguments, CallId};

/// How long the pipeline waits for an answer unless configured otherwise.
pub const DEFAULT_APPROVAL_TIMEOUT: Duration = Duration::from_secs(120);

/// A hook that asked for approval, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AskedBy {
    /// The hook's name.
    pub hook: String,
    /// Its reason, for the person asked.
    pub reason: String,
}

/// The question put to a person: may this call run?
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ApprovalRequest {
    /// The tool to be called.
    pub tool: String,
    /// The arguments it would run with, after every rewrite.
    pub arguments: Arguments,
    /// The call's id.
    pub call_id: CallId,
    /// The hooks that asked, in the order they ran; never empty.
    pub asked_by: Vec<AskedBy>,
}

impl ApprovalRequest {
    /// A request for a call to `tool` with `arguments`, asked by `asked_by`.
    pub fn new(
        tool: impl Into<String>,
        arguments: Arguments,
        call_id: CallId,
        asked_by: Vec<AskedBy>,
    ) -> Self {
        Self {
            tool: tool.into(),
            arguments,
            call_id,
            asked_by,
        }
    }

    /// The question as one paragraph of plain text: the tool, its arguments
    /// (cut to `max_argument_chars` characters) and who asked why. Control
    /// characters in the arguments and reasons are shown escaped, so a
    /// hostile tool argument cannot redraw a terminal.
    pub fn question(&self, max_argument_chars: usize) -> String {
        let mut q = format!("Allow the call to `{}` with ", printable(&self.tool));
        let args = self.arguments.as_str();
        let mut shown: String = args.chars().take(max_argument_chars).collect();
        if shown.len() < args.len() {
            let _ = write!(shown, "… ({} bytes in all)", args.len());
        }
        q.push_str(&printable(&shown));
        q.push('?');
        for ask in &self.asked_by {
            let _ = write!(
                q,
                " `{}` asks: {}",
                printable(&ask.hook),
                printable(&ask.reason)
            );
            if !q.ends_with(['.', '?', '!']) {
                q.push('.');
            }
        }
        q
    }

    /// The names of the hooks that asked, joined with `, `.
    pub fn hooks(&self) -> String {
        self.asked_by
            .iter()
            .map(|a| a.hook.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// `text` with every control character escaped (`\u{1b}` for ESC).
fn printable(text: &str) -> String {
    if !text.chars().any(char::is_control) {
        return text.to_owned();
    }
    text.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_unicode().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// A person's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Approval {
    /// The call may run.
    Approved,
    /// The call may not run.
    Denied {
        /// Why, in words for the model and the log (`declined at the
        /// terminal`, `the client cannot be asked`).
        reason: String,
    },
    /// The person can be asked, but not while the call waits: the call
    /// ends with [`ToolError::ApprovalRequired`](crate::error::ToolError::ApprovalRequired)
    /// carrying the question, and its caller asks and calls again with the
    /// answer (MCP 2026-07-28's multi round-trip requests, where a server
    /// may not send its client a request of its own). The tool does not run.
    Deferred,
}

impl Approval {
    /// A denial saying `reason`.
    pub fn denied(reason: impl Into<String>) -> Self {
        Self::Denied {
            reason: reason.into(),
        }
    }
}

/// Decides whether a call a hook asked about may run: a terminal prompt, an
/// MCP client's elicitation, a chat message, a policy service.
///
/// The pipeline bounds every answer by the approval timeout and the call's
/// cancellation, dropping the future when either comes first: an approver
/// need not time itself out, and must stop asking when dropped.
#[async_trait]
pub trait Approver: Send + Sync {
    /// Answers `request`.
    async fn approve(&self, request: &ApprovalRequest) -> Approval;
}

/// Denies every request, saying no one can be asked. The host's approver
/// unless one is configured.
#[derive(Debug, Clone, Copy, Default)]
pub struct DenyAll;

#[async_trait]
impl Approver for DenyAll {
    async fn approve(&self, _request: &ApprovalRequest) -> Approval {
        Approval::denied("no one can be asked to approve calls here")
    }
}

/// Approves every request. For tests and for hosts where a person has
/// already agreed to everything; never the default.
#[derive(Debug, Clone, Copy, Default)]
pub struct ApproveAll;

#[async_trait]
impl Approver for ApproveAll {
    async fn approve(&self, _request: &ApprovalRequest) -> Approval {
        Approval::Approved
    }
}

/// Where approvals go and how long they may take.
#[derive(Clone)]
pub(crate) struct Approvals {
    pub(crate) approver: Arc<dyn Approver>,
    pub(crate) timeout: Duration,
}

impl Default for Approvals {
    fn default() -> Self {
        Self {
            approver: Arc::new(DenyAll),
            timeout: DEFAULT_APPROVAL_TIMEOUT,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn p7_the_question_escapes_control_characters_and_cuts_long_arguments() {
        let args = Arguments::parse(r#"{"path":"\u001b[2Jx","n":12345678901234567890}"#).unwrap();
        let req = ApprovalRequest::new(
            "rm",
            args,
            CallId::from("c1"),
            vec![AskedBy {
                hook: "guard".into(),
                reason: "deletes \u{7}files".into(),
            }],
        );
        let q = req.question(20);
        assert!(!q.chars().any(char::is_control), "{q}");
        // Arguments are JSON text, so their control characters are already
        // escaped; a reason's are escaped here.
        assert!(
            q.starts_with(r#"Allow the call to `rm` with {"path":"\u001b[2Jx""#),
            "{q}"
        );
        assert!(q.contains("bytes in all)?"), "{q}");
        assert!(q.ends_with("`guard` asks: deletes \\u{7}files."), "{q}");
    }
}

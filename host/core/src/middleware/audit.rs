//! [`Audit`]: the middleware that hands a record of every call to an
//! [`AuditSink`], after a [`Redactor`] has rewritten what it holds (rule P6).
//!
//! Contract: one record per call that reaches the middleware, made once
//! the whole call has finished (after the after hooks), with the arguments
//! the tool ran with, the outcome the caller receives and every change a
//! hook made; no sink sees arguments or result text that the redactor has
//! not passed.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;
use tokio::time::Instant;

use crate::error::{ErrorKind, ToolError};
use crate::hook::{CallInfo, ChangeKind, HookChange};
use crate::output::ToolOutput;
use crate::pipeline::{Middleware, Next};
use crate::tool::{CallContext, CallId};

/// One audited call, after redaction.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditRecord {
    /// The tool called.
    pub tool: String,
    /// The call's id.
    pub call_id: CallId,
    /// The arguments, as the redactor left them.
    pub arguments: Value,
    /// The outcome, as the redactor left it.
    pub outcome: AuditOutcome,
    /// How long the tool's execution took.
    pub duration: Duration,
    /// Every argument rewrite and outcome replacement hooks made, in order,
    /// with the hook's name and the sizes before and after (rules P7, P8).
    pub changes: Vec<HookChange>,
}

/// The outcome part of an [`AuditRecord`].
#[derive(Debug, Clone, PartialEq)]
pub enum AuditOutcome {
    /// The call succeeded; `result` is the model-facing text after
    /// redaction, `result_bytes` the size before it.
    Ok {
        /// The redacted model-facing text.
        result: String,
        /// Size of the unredacted output in bytes.
        result_bytes: usize,
    },
    /// The call failed.
    Err {
        /// The error's kind.
        kind: ErrorKind,
        /// The error's message, after redaction.
        message: String,
    },
}

/// Receives audit records. Called once per call, after the call, on the
/// call's task: keep it quick (send to a channel for slow storage).
pub trait AuditSink: Send + Sync {
    /// Stores one record.
    fn record(&self, record: AuditRecord);
}

/// The redaction point of the audit trail (rule P6): rewrites arguments and
/// result text before any [`AuditSink`] sees them.
pub trait Redactor: Send + Sync {
    /// Redacts the arguments of a call to `tool` in place.
    fn redact_arguments(&self, tool: &str, arguments: &mut Value);

    /// Redacts result or error text of a call to `tool` in place. The default
    /// leaves the text as it is.
    fn redact_text(&self, tool: &str, text: &mut String) {
        let _ = (tool, text);
    }
}

/// A [`Redactor`] that replaces the value of every object key in a set
/// (compared case-insensitively, at any depth) with `"[REDACTED]"`.
#[derive(Debug, Clone)]
pub struct RedactKeys {
    keys: HashSet<String>,
}

impl RedactKeys {
    /// Redacts the given keys.
    pub fn new<I: IntoIterator<Item = S>, S: AsRef<str>>(keys: I) -> Self {
        Self {
            keys: keys
                .into_iter()
                .map(|k| k.as_ref().to_ascii_lowercase())
                .collect(),
        }
    }

    /// Redacts keys that commonly hold secrets: `password`, `secret`,
    /// `token`, `api_key`, `apikey`, `authorization`, `cookie`,
    /// `private_key`, `access_token`, `refresh_token`.
    pub fn common() -> Self {
        Self::new([
            "password",
            "secret",
            "token",
            "api_key",
            "apikey",
            "authorization",
            "cookie",
            "private_key",
            "access_token",
            "refresh_token",
        ])
    }

    fn walk(&self, value: &mut Value) {
        match value {
            Value::Object(map) => {
                for (k, v) in map.iter_mut() {
                    if self.keys.contains(&k.to_ascii_lowercase()) {
                        *v = Value::String("[REDACTED]".into());
                    } else {
                        self.walk(v);
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.walk(v)),
            _ => {}
        }
    }
}

impl Redactor for RedactKeys {
    fn redact_arguments(&self, _tool: &str, arguments: &mut Value) {
        self.walk(arguments);
    }
}

/// Middleware that hands an [`AuditRecord`] of every call that reaches it to
/// a sink, after passing arguments and results through a [`Redactor`].
///
/// The record is made once the whole call has finished, after the after
/// hooks (through the call's [`Journal`](crate::hook::Journal)): it holds the
/// arguments the tool ran with, the outcome the caller receives, and every
/// change hooks made. A call refused before execution never reaches it.
pub struct Audit {
    sink: Arc<dyn AuditSink>,
    redactor: Arc<dyn Redactor>,
}

impl Audit {
    /// Audits into `sink`, redacting with `redactor`.
    pub fn new(sink: Arc<dyn AuditSink>, redactor: Arc<dyn Redactor>) -> Self {
        Self { sink, redactor }
    }
}

#[async_trait]
impl Middleware for Audit {
    fn name(&self) -> &str {
        "audit"
    }

    async fn handle(
        &self,
        call: &CallInfo,
        ctx: CallContext,
        next: Next<'_>,
    ) -> Result<ToolOutput, ToolError> {
        let started = Instant::now();
        let result = next.run(ctx).await;
        let duration = started.elapsed();
        let tool = call.tool().to_owned();
        let mut arguments = call.arguments.to_value();
        self.redactor.redact_arguments(&tool, &mut arguments);
        let (sink, redactor, call_id) = (
            self.sink.clone(),
            self.redactor.clone(),
            call.call_id.clone(),
        );
        let own = summarize(&result);
        call.journal().when_finished(move |finished| {
            // After a replacement the record holds what the caller receives,
            // so a hook's redaction reaches the audit trail too; otherwise
            // this execution's own outcome (one record per retry attempt).
            let replaced = finished
                .changes
                .iter()
                .any(|c| c.kind == ChangeKind::ReplacedOutcome);
            let final_or_own = if replaced {
                summarize(finished.outcome)
            } else {
                own
            };
            let outcome = match final_or_own {
                AuditOutcome::Ok {
                    mut result,
                    result_bytes,
                } => {
                    redactor.redact_text(&tool, &mut result);
                    AuditOutcome::Ok {
                        result,
                        result_bytes,
                    }
                }
                AuditOutcome::Err { kind, mut message } => {
                    redactor.redact_text(&tool, &mut message);
                    AuditOutcome::Err { kind, message }
                }
            };
            sink.record(AuditRecord {
                tool,
                call_id,
                arguments,
                outcome,
                duration,
                changes: finished.changes.to_vec(),
            });
        });
        result
    }
}

/// An outcome before redaction.
fn summarize(outcome: &Result<ToolOutput, ToolError>) -> AuditOutcome {
    match outcome {
        Ok(output) => AuditOutcome::Ok {
            result: output.llm_text().into_owned(),
            result_bytes: output.size_bytes(),
        },
        Err(err) => AuditOutcome::Err {
            kind: err.kind(),
            message: err.to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn p6_redact_keys_hides_secrets_at_any_depth() {
        let r = RedactKeys::common();
        let mut v = json!({
            "user": "ada",
            "Password": "hunter2",
            "nested": [{"api_key": "k-123", "note": "fine"}],
        });
        r.redact_arguments("login", &mut v);
        assert_eq!(
            v,
            json!({
                "user": "ada",
                "Password": "[REDACTED]",
                "nested": [{"api_key": "[REDACTED]", "note": "fine"}],
            })
        );
    }
}

#[cfg(test)]
mod pipeline_tests {
    use std::sync::Mutex;

    use serde_json::json;

    use super::*;
    use crate::{Arguments, FnTool, ToolHost, ToolSpec};

    #[derive(Default)]
    struct Collect(Mutex<Vec<AuditRecord>>);

    impl AuditSink for Collect {
        fn record(&self, record: AuditRecord) {
            self.0.lock().unwrap().push(record);
        }
    }

    #[tokio::test]
    async fn p6_custom_audit_handler_sees_redacted_calls() {
        let sink = Arc::new(Collect::default());
        let host = ToolHost::builder()
            .middleware(Audit::new(sink.clone(), Arc::new(RedactKeys::common())))
            .build();
        host.register_tool(FnTool::arc(
            ToolSpec::new("login", "", json!({"type": "object"})),
            |_, _| async { Ok(ToolOutput::text("welcome")) },
        ))
        .unwrap();
        let args = Arguments::parse(r#"{"user":"ada","password":"hunter2"}"#).unwrap();
        host.invoke_tool(CallContext::new().with_call_id("c-9"), "login", args)
            .await
            .unwrap();
        let records = sink.0.lock().unwrap();
        assert_eq!(records.len(), 1);
        let r = &records[0];
        assert_eq!(r.tool, "login");
        assert_eq!(r.call_id.as_str(), "c-9");
        assert_eq!(
            r.arguments,
            json!({"user": "ada", "password": "[REDACTED]"})
        );
        assert_eq!(
            r.outcome,
            AuditOutcome::Ok {
                result: "welcome".into(),
                result_bytes: 7
            }
        );
    }
}

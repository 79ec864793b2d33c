//! [`Timeout`]: the middleware that gives each call its deadline (rule P4).
//!
//! Contract: every call that reaches it leaves with a deadline — the
//! timeout configured for its tool, else the default, counted from then —
//! unless the call already carries an earlier one, which is kept. It sets
//! the deadline and nothing else; the executor enforces it (the tool's
//! future is dropped and the call fails with `ToolError::Timeout`), except
//! for a wasm tool, which the sandbox stops at that instant itself.

use std::collections::HashMap;
use std::time::Duration;

use async_trait::async_trait;

use crate::error::ToolError;
use crate::hook::CallInfo;
use crate::output::ToolOutput;
use crate::pipeline::{Middleware, Next};
use crate::tool::CallContext;

/// Gives each call a deadline (rule P4): a default, optionally overridden per
/// tool. An earlier deadline already on the call is kept.
///
/// The deadline is enforced by the executor: at the deadline the call fails
/// with [`ToolError::Timeout`] and the tool's future is dropped, whether or
/// not the tool watches its cancellation token; the call's token is cancelled
/// so that work it spawned can stop. Wasm tools are stopped by the sandbox
/// at the same deadline, wherever they stand, and not timed again
/// ([`Tool::ends_by_deadline`](crate::Tool::ends_by_deadline)).
#[derive(Debug, Clone)]
pub struct Timeout {
    default: Duration,
    per_tool: HashMap<String, Duration>,
}

impl Timeout {
    /// Every call gets `default` to finish.
    pub fn new(default: Duration) -> Self {
        Self {
            default,
            per_tool: HashMap::new(),
        }
    }

    /// Calls to `tool` get `timeout` instead of the default.
    pub fn for_tool(mut self, tool: impl Into<String>, timeout: Duration) -> Self {
        self.per_tool.insert(tool.into(), timeout);
        self
    }
}

#[async_trait]
impl Middleware for Timeout {
    fn name(&self) -> &str {
        "timeout"
    }

    async fn handle(
        &self,
        call: &CallInfo,
        ctx: CallContext,
        next: Next<'_>,
    ) -> Result<ToolOutput, ToolError> {
        let timeout = self
            .per_tool
            .get(call.tool())
            .copied()
            .unwrap_or(self.default);
        next.run(ctx.with_timeout(timeout)).await
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    use serde_json::json;

    use super::*;
    use crate::testing::DropFlag;
    use crate::{Arguments, FnTool, ToolHost, ToolSpec};

    #[tokio::test]
    async fn p4_tool_that_ignores_cancellation_still_times_out() {
        let dropped = Arc::new(AtomicBool::new(false));
        let flag = dropped.clone();
        let host = ToolHost::builder()
            .middleware(Timeout::new(Duration::from_millis(50)))
            .build();
        host.register_tool(FnTool::arc(
            ToolSpec::new(
                "stubborn",
                "never looks at its token",
                json!({"type": "object"}),
            ),
            move |_ctx, _args| {
                let guard = DropFlag(flag.clone());
                async move {
                    let _guard = guard;
                    // Never awaits cancellation and never finishes by itself.
                    std::future::pending::<()>().await;
                    Ok(ToolOutput::text("unreachable"))
                }
            },
        ))
        .unwrap();
        let err = host
            .invoke_tool(
                CallContext::new(),
                "stubborn",
                Arguments::parse("{}").unwrap(),
            )
            .await
            .unwrap_err();
        assert!(
            matches!(err, ToolError::Timeout { after, .. } if after >= Duration::from_millis(50)),
            "{err:?}"
        );
        assert!(
            dropped.load(Ordering::SeqCst),
            "the tool's future must be dropped"
        );
    }

    #[tokio::test]
    async fn p4_timeout_cancels_the_calls_token_for_spawned_work() {
        let stopped = Arc::new(tokio::sync::Notify::new());
        let seen = stopped.clone();
        let host = ToolHost::builder()
            .middleware(Timeout::new(Duration::from_millis(30)))
            .build();
        host.register_tool(FnTool::arc(
            ToolSpec::new("spawns", "spawns a worker", json!({"type": "object"})),
            move |ctx, _args| {
                let seen = seen.clone();
                async move {
                    tokio::spawn(async move {
                        ctx.cancelled().await;
                        seen.notify_one();
                    });
                    std::future::pending::<()>().await;
                    Ok(ToolOutput::text(""))
                }
            },
        ))
        .unwrap();
        let err = host
            .invoke_tool(
                CallContext::new(),
                "spawns",
                Arguments::parse("{}").unwrap(),
            )
            .await
            .unwrap_err();
        assert_eq!(err.kind(), crate::ErrorKind::Timeout);
        // The spawned worker is told to stop (this would hang otherwise).
        stopped.notified().await;
    }

    #[tokio::test]
    async fn p4_per_tool_timeout_overrides_the_default() {
        let host = ToolHost::builder()
            .middleware(
                Timeout::new(Duration::from_secs(60)).for_tool("quick", Duration::from_millis(20)),
            )
            .build();
        for name in ["quick", "patient"] {
            host.register_tool(FnTool::arc(
                ToolSpec::new(name, "", json!({"type": "object"})),
                |ctx, _| async move {
                    Ok(ToolOutput::text(format!(
                        "{:?}",
                        ctx.remaining().map(|d| d.as_secs())
                    )))
                },
            ))
            .unwrap();
        }
        let quick = host
            .invoke_tool(CallContext::new(), "quick", Arguments::parse("{}").unwrap())
            .await
            .unwrap();
        assert_eq!(quick.llm_text(), "Some(0)");
        let patient = host
            .invoke_tool(
                CallContext::new(),
                "patient",
                Arguments::parse("{}").unwrap(),
            )
            .await
            .unwrap();
        assert!(
            patient.llm_text().starts_with("Some(5"),
            "{}",
            patient.llm_text()
        );
    }
}

//! [`Retry`]: the middleware that runs a call again after a retryable
//! failure (rule P5).
//!
//! Contract: only a timeout or a failure the tool marked transient is
//! retried, only for a tool declared idempotent or a call carrying a
//! deduplication key, at most `max_attempts` times in all, with
//! exponential backoff, and never past the call's deadline or its
//! cancellation; otherwise the first outcome stands.

use std::time::Duration;

use async_trait::async_trait;

use crate::backoff::Backoff;
use crate::cancel::until_cancelled;
use crate::error::ToolError;
use crate::hook::CallInfo;
use crate::output::ToolOutput;
use crate::pipeline::{Middleware, Next};
use crate::tool::CallContext;

/// Runs a call again after a retryable failure (rule P5): a timeout or a
/// failure the tool marked transient, up to `max_attempts` in all, with
/// exponential backoff.
///
/// Only tools declared idempotent are retried, unless the call carries a
/// deduplication key ([`CallContext::with_dedup_key`]): the tool is then
/// trusted to apply its side effect at most once per key. A retry never
/// outlives the call's deadline or its cancellation.
#[derive(Debug, Clone)]
pub struct Retry {
    max_attempts: u32,
    backoff: Backoff,
}

impl Retry {
    /// At most `max_attempts` attempts (1 disables retrying), backing off
    /// from 50 ms, doubling up to 2 s.
    pub fn new(max_attempts: u32) -> Self {
        Self {
            max_attempts: max_attempts.max(1),
            backoff: Backoff::new(Duration::from_millis(50), Duration::from_secs(2)),
        }
    }

    /// Sets the first backoff and the cap it doubles up to.
    pub fn backoff(mut self, initial: Duration, max: Duration) -> Self {
        self.backoff = Backoff::new(initial, max);
        self
    }
}

#[async_trait]
impl Middleware for Retry {
    fn name(&self) -> &str {
        "retry"
    }

    async fn handle(
        &self,
        call: &CallInfo,
        ctx: CallContext,
        next: Next<'_>,
    ) -> Result<ToolOutput, ToolError> {
        let may_repeat = call.spec.idempotent || ctx.dedup_key().is_some();
        let mut ctx = ctx;
        loop {
            let result = next.run(ctx.clone()).await;
            let Err(err) = &result else { return result };
            if !err.is_retryable() || ctx.attempt() >= self.max_attempts {
                return result;
            }
            if !may_repeat {
                tracing::debug!(
                    tool = call.tool(),
                    call_id = %call.call_id,
                    "not retrying: the tool is not idempotent and the call has no deduplication key"
                );
                return result;
            }
            let backoff = self.backoff.delay(ctx.attempt());
            if ctx.remaining().is_some_and(|left| left <= backoff) {
                return result;
            }
            tracing::debug!(
                tool = call.tool(),
                call_id = %call.call_id,
                attempt = ctx.attempt(),
                error = err.kind().as_str(),
                backoff_ms = backoff.as_millis() as u64,
                "retrying"
            );
            let slept = until_cancelled(ctx.cancellation(), tokio::time::sleep(backoff)).await;
            if slept.is_none() {
                return Err(ToolError::Cancelled);
            }
            ctx = ctx.next_attempt();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};

    use serde_json::json;

    use super::*;
    use crate::{Arguments, FnTool, ToolHost, ToolSpec};

    /// A host with fast retries and a tool that fails transiently until
    /// attempt `succeed_on`; returns the attempt counter.
    fn flaky(idempotent: bool, succeed_on: u32, permanent: bool) -> (ToolHost, Arc<AtomicU32>) {
        let host = ToolHost::builder()
            .middleware(Retry::new(4).backoff(Duration::from_millis(1), Duration::from_millis(4)))
            .build();
        let attempts = Arc::new(AtomicU32::new(0));
        let counter = attempts.clone();
        host.register_tool(FnTool::arc(
            ToolSpec::new("flaky", "", json!({"type": "object"})).idempotent(idempotent),
            move |ctx, _| {
                let n = counter.fetch_add(1, Ordering::SeqCst) + 1;
                assert_eq!(ctx.attempt(), n);
                async move {
                    if n >= succeed_on {
                        Ok(ToolOutput::text(format!("ok on {n}")))
                    } else if permanent {
                        Err(ToolError::failed("not found"))
                    } else {
                        Err(ToolError::transient("503"))
                    }
                }
            },
        ))
        .unwrap();
        (host, attempts)
    }

    fn args() -> Arguments {
        Arguments::parse("{}").unwrap()
    }

    #[tokio::test]
    async fn p5_retries_an_idempotent_tool_until_it_succeeds() {
        let (host, attempts) = flaky(true, 3, false);
        let out = host
            .invoke_tool(CallContext::new(), "flaky", args())
            .await
            .unwrap();
        assert_eq!(out.llm_text(), "ok on 3");
        assert_eq!(attempts.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn p5_retry_skips_a_non_idempotent_tool() {
        let (host, attempts) = flaky(false, 3, false);
        let err = host
            .invoke_tool(CallContext::new(), "flaky", args())
            .await
            .unwrap_err();
        assert_eq!(err, ToolError::transient("503"));
        assert_eq!(attempts.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn p5_a_dedup_key_allows_retrying_a_side_effect() {
        let (host, attempts) = flaky(false, 2, false);
        let ctx = CallContext::new().with_dedup_key("payment-42");
        let out = host.invoke_tool(ctx, "flaky", args()).await.unwrap();
        assert_eq!(out.llm_text(), "ok on 2");
        assert_eq!(attempts.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn p5_attempts_are_bounded() {
        let (host, attempts) = flaky(true, 100, false);
        let err = host
            .invoke_tool(CallContext::new(), "flaky", args())
            .await
            .unwrap_err();
        assert!(err.is_retryable());
        assert_eq!(attempts.load(Ordering::SeqCst), 4);
    }

    #[tokio::test]
    async fn p5_permanent_failures_are_not_retried() {
        let (host, attempts) = flaky(true, 100, true);
        let err = host
            .invoke_tool(CallContext::new(), "flaky", args())
            .await
            .unwrap_err();
        assert_eq!(err, ToolError::failed("not found"));
        assert_eq!(attempts.load(Ordering::SeqCst), 1);
    }
}

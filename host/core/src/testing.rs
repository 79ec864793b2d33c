//! Recording hooks, middleware and tools for tests:
//! each appends what it saw to a shared [`Recorder`], so a test can assert
//! the order in which the pipeline ran them.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::json;

use crate::error::{Rejection, ToolError};
use crate::hook::{AfterDecision, AfterHook, BeforeHook, CallInfo, Decision};
use crate::output::ToolOutput;
use crate::pipeline::{Middleware, Next};
use crate::tool::{CallContext, FnTool, Tool, ToolSpec};

/// An append-only event log shared between hooks, middleware and tools.
#[derive(Clone, Default)]
pub struct Recorder(Arc<Mutex<Vec<String>>>);

impl Recorder {
    /// Appends one event.
    pub fn push(&self, event: impl Into<String>) {
        self.0.lock().unwrap().push(event.into());
    }

    /// Every event so far, in order.
    pub fn events(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

/// A before hook that records `label` and rejects when `reject` is set.
pub struct RecordBefore {
    /// What the recorded events are called.
    pub label: &'static str,
    /// Where the events go.
    pub rec: Recorder,
    /// When set, the hook rejects every call with this reason.
    pub reject: Option<&'static str>,
}

#[async_trait]
impl BeforeHook for RecordBefore {
    fn name(&self) -> &str {
        self.label
    }

    async fn before(&self, call: &CallInfo) -> Decision {
        self.rec.push(format!("{}:{}", self.label, call.tool()));
        match self.reject {
            Some(reason) => Decision::Reject(Rejection::new(reason)),
            None => Decision::Allow,
        }
    }
}

/// An after hook that records `label` and the outcome's kind.
pub struct RecordAfter {
    /// What the recorded events are called.
    pub label: &'static str,
    /// Where the events go.
    pub rec: Recorder,
}

#[async_trait]
impl AfterHook for RecordAfter {
    fn name(&self) -> &str {
        self.label
    }

    async fn after(
        &self,
        call: &CallInfo,
        outcome: &Result<ToolOutput, ToolError>,
    ) -> AfterDecision {
        let what = match outcome {
            Ok(_) => "ok".to_owned(),
            Err(e) => e.kind().as_str().to_owned(),
        };
        self.rec
            .push(format!("{}:{}:{what}", self.label, call.tool()));
        AfterDecision::Keep
    }
}

/// A middleware that records entering and leaving.
pub struct RecordMiddleware {
    /// What the recorded events are called.
    pub label: &'static str,
    /// Where the events go.
    pub rec: Recorder,
}

#[async_trait]
impl Middleware for RecordMiddleware {
    fn name(&self) -> &str {
        self.label
    }

    async fn handle(
        &self,
        _call: &CallInfo,
        ctx: CallContext,
        next: Next<'_>,
    ) -> Result<ToolOutput, ToolError> {
        self.rec.push(format!("{}:enter", self.label));
        let r = next.run(ctx).await;
        self.rec.push(format!("{}:exit", self.label));
        r
    }
}

/// A tool that records its name, sleeps `delay`, and echoes its arguments.
pub fn recording_tool(
    name: &'static str,
    safe: Option<bool>,
    delay: Duration,
    rec: Recorder,
) -> Arc<dyn Tool> {
    let mut spec = ToolSpec::new(name, "records and echoes", json!({"type": "object"}));
    spec.concurrency_safe = safe;
    FnTool::arc(spec, move |_ctx, args| {
        let rec = rec.clone();
        async move {
            rec.push(format!("start:{name}"));
            tokio::time::sleep(delay).await;
            rec.push(format!("finish:{name}"));
            Ok(ToolOutput::text(args.as_str()))
        }
    })
}

/// Sets its flag when dropped: shows that a future holding it was dropped
/// (a tool's, a guest's call) rather than left pending.
pub struct DropFlag(pub Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

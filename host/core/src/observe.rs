//! [`Observer`]: where the stages of a call that live outside the pipeline
//! (the sandbox's instance slots and guest, a remote MCP server) report how
//! long they took (rule X1).
//!
//! The pipeline hands its observer to a tool through the call's context
//! ([`CallContext::observer`](crate::CallContext::observer)); a host built
//! without [metrics](crate::metrics::Metrics) hands none, and then a stage
//! neither reads the clock for it nor records anything. The trait knows
//! nothing of Prometheus: [`Metrics`](crate::metrics::Metrics) is one
//! observer, and anything else may be another.

use std::time::{Duration, Instant};

/// A stage of a call, timed on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Stage {
    /// Waiting for one of a plugin's instance slots.
    QueueWait,
    /// Instantiating a plugin's component in a fresh store.
    Instantiate,
    /// The guest running the call, from the export's call to its answer.
    Guest,
    /// The before and after hooks (and the declarative rules).
    Hooks,
    /// Waiting for a person's approval.
    ApprovalWait,
    /// A remote MCP server answering the forwarded call.
    McpForward,
}

impl Stage {
    /// Its place in [`ALL`](Self::ALL).
    pub fn index(self) -> usize {
        match self {
            Self::QueueWait => 0,
            Self::Instantiate => 1,
            Self::Guest => 2,
            Self::Hooks => 3,
            Self::ApprovalWait => 4,
            Self::McpForward => 5,
        }
    }

    /// Every stage, in the order a call meets them.
    pub const ALL: [Stage; 6] = [
        Self::QueueWait,
        Self::Instantiate,
        Self::Guest,
        Self::Hooks,
        Self::ApprovalWait,
        Self::McpForward,
    ];

    /// The stage as a snake_case word (a metric's `stage` label).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::QueueWait => "queue_wait",
            Self::Instantiate => "instantiate",
            Self::Guest => "guest",
            Self::Hooks => "hooks",
            Self::ApprovalWait => "approval_wait",
            Self::McpForward => "mcp_forward",
        }
    }
}

/// Hears how a call's stages went. Every method must return quickly and
/// never block: it is called on the call's task. `plugin` names the
/// plugin, extension or server the call's tool belongs to; an observer
/// that turns it into a label must bound the values itself.
pub trait Observer: Send + Sync {
    /// `stage` of a call of a tool of `plugin` took `took`.
    fn stage(&self, plugin: &str, stage: Stage, took: Duration);

    /// `stage` took `took` and ended at `ended`, a reading of the clock
    /// the caller made anyway: for an observer that places stages in time
    /// (a trace), which would otherwise read the clock again. By default
    /// the same as [`stage`](Self::stage).
    fn stage_ended(&self, plugin: &str, stage: Stage, took: Duration, ended: Instant) {
        let _ = ended;
        self.stage(plugin, stage, took);
    }

    /// One of `plugin`'s instances started serving a call (`true`) or
    /// ended (`false`).
    fn instance(&self, plugin: &str, started: bool) {
        let _ = (plugin, started);
    }

    /// One of `plugin`'s instances had `bytes` of linear memory at its
    /// largest.
    fn memory_high_water(&self, plugin: &str, bytes: u64) {
        let _ = (plugin, bytes);
    }

    /// A call of a tool of `plugin` that timed out was answered `late`
    /// after its deadline.
    fn deadline_overshoot(&self, plugin: &str, late: Duration) {
        let _ = (plugin, late);
    }
}

//! toolhost's core: everything a call goes through, with no sandbox, no
//! network and no model behind it.
//!
//! Tools come from native Rust code (here), sandboxed WebAssembly components
//! (`toolhost-sandbox`), built-in families (`toolhost-builtin`) and remote MCP
//! servers (`toolhost-mcp`); every call, whoever makes it, goes through one
//! pipeline of hooks and middleware that lives outside any sandbox. Start with
//! [`ToolHost`].
//!
//! | module | what it holds | rules |
//! |---|---|---|
//! | [`tool`] | [`Tool`], [`ToolSpec`], [`CallContext`], [`Arguments`] | T1 |
//! | [`output`] | [`ToolOutput`], [`ContentBlock`] | T4 |
//! | [`error`] | [`ToolError`], [`RegistryError`], [`InitError`] | P3 |
//! | [`registry`] | the live [`Registry`] | T2, T3 |
//! | [`schema`] | [`CompiledSchema`]: a parameters schema compiled once | T2 |
//! | [`pipeline`] | the one call order: hooks, [`Middleware`], the executor | P1, P2 |
//! | [`hook`] | [`BeforeHook`], [`AfterHook`], [`HookScope`], what they see ([`CallInfo`]) and decide ([`Decision`], [`AfterDecision`]), the call's [`Journal`] | P2, P7, P8 |
//! | [`tool::approval`] | [`Approver`]: asking a person whether a call may run | P7 |
//! | [`rules`] | [`RuleSet`]: declarative allow, ask and deny by tool and arguments | O4 |
//! | [`middleware`] | timeout, retry, logging, audit | P4–P6 |
//! | [`schedule`] | serial, parallel and mixed batches | M1–M3 |
//! | [`extension`] | [`Extension`], [`ExtensionContext`] | E1 |
//! | [`lifecycle`] | [`LifecycleHook`], [`RunInfo`], [`TurnInfo`] | E2 |
//! | [`model`] | messages, requests, responses and the [`ModelProvider`] trait (interfaces only) | E2 |
//! | [`artifact`] | artifact stores and offload | T5 |
//! | [`cancel`] | running work against a cancellation token, the token first | P1 |
//! | [`backoff`] | the exponential backoff every retry uses | P5 |
//! | [`metrics`] | [`Metrics`]: Prometheus counts and timings of every call | X1 |
//! | [`observe`] | [`Observer`]: where stages outside the pipeline report their timings | X1 |
//!
//! The module graph has no cycles: `model` and `error` are leaves; `tool`,
//! `output` and `registry` sit on them; `hook` on `tool` and `output`; `rules` on `tool`; `pipeline` on those; `extension` and
//! `lifecycle` beside it; `host` and `schedule` on top.

pub mod artifact;
mod artifact_id;
pub mod backoff;
pub mod cancel;
pub mod error;
pub mod extension;
pub mod file;
pub mod hook;
mod host;
pub mod lifecycle;
pub mod metrics;
pub mod middleware;
pub mod model;
pub mod observe;
pub mod output;
pub mod pipeline;
pub mod quota;
pub mod registry;
pub mod rules;
pub mod schedule;
pub mod schema;
pub mod secret;
pub mod tenant;
pub mod tool;
pub mod traces;

// Recording hooks, middleware and tools for the other crates' unit tests.
// Always built, never part of the API: a feature for it would give tests and
// the binary different builds of every crate above this one.
#[doc(hidden)]
pub mod testing;

pub use backoff::Backoff;
pub use cancel::until_cancelled;
pub use error::{
    Cause, ErrorKind, InitError, RegistryError, Rejection, SandboxFault, ToolError, report,
};
pub use extension::{Extension, ExtensionContext};
pub use hook::{
    AfterDecision, AfterHook, BeforeHook, CallInfo, ChangeKind, Decision, FnAfterHook,
    FnBeforeHook, HookChange, HookScope, Journal,
};
pub use host::{HostBuilder, ToolHost};
pub use lifecycle::{LifecycleHook, RunInfo, TurnInfo};
pub use metrics::Metrics;
pub use model::{AgentError, ModelProvider, RunOutput, StreamEvent};
pub use observe::{GuestCall, Observer, Stage};
pub use output::{Annotations, Audience, ContentBlock, ToolOutput};
pub use pipeline::{Middleware, Next};
pub use registry::Registry;
pub use rules::{Rule, RuleDecision, RuleError, RuleSet};
pub use schedule::{BatchCall, BatchConfig, ExecutionMode};
pub use schema::{CompiledSchema, SchemaError, Violation};
pub use secret::{Secret, SecretError, SecretSet};
pub use tool::approval::{
    Approval, ApprovalRequest, ApproveAll, Approver, AskedBy, DEFAULT_APPROVAL_TIMEOUT, DenyAll,
};
pub use tool::elicitation::{ElicitationAnswer, ElicitationError, ElicitationRequest, Elicitor};
pub use tool::{
    Arguments, CallContext, CallId, FnTool, NameError, Progress, ProgressSink, Tool, ToolHints,
    ToolSpec,
};
pub use traces::{TraceContext, Traces};

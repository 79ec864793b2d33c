//! toolhost: a host for AI-agent tools.
//!
//! Tools come from native Rust code and from sandboxed WebAssembly components;
//! every call, whoever makes it, goes through one pipeline of hooks and
//! middleware that lives outside any sandbox. Start with [`ToolHost`].
//!
//! This crate is the facade: it re-exports the layers below and adds the
//! `toolhost.toml` configuration ([`config`]) and the command line. An
//! embedder that wants only part of it depends on the layer crates directly
//! (a sandbox-only host takes `toolhost-core` and `toolhost-sandbox`).
//!
//! | module | crate | what it holds | rules |
//! |---|---|---|---|
//! | [`tool`] | `toolhost-core` | [`Tool`], [`ToolSpec`], [`CallContext`], [`Arguments`] | T1 |
//! | [`output`] | `toolhost-core` | [`ToolOutput`], [`ContentBlock`] | T4 |
//! | [`error`] | `toolhost-core` | [`ToolError`], [`RegistryError`] | P3 |
//! | [`registry`] | `toolhost-core` | the live [`Registry`] | T2, T3 |
//! | [`pipeline`] | `toolhost-core` | the one call order: hooks, [`Middleware`], the executor | P1, P2 |
//! | [`hook`] | `toolhost-core` | [`BeforeHook`], [`AfterHook`], what they see and decide | P7, P8 |
//! | [`middleware`] | `toolhost-core` | timeout, retry, logging, audit | P4–P6 |
//! | [`rules`] | `toolhost-core` | declarative allow, ask and deny ([`RuleSet`](rules::RuleSet)) | O4 |
//! | [`schedule`] | `toolhost-core` | serial, parallel and mixed batches | M1–M3 |
//! | [`extension`], [`lifecycle`] | `toolhost-core` | [`Extension`], [`LifecycleHook`] | E1, E2 |
//! | [`model`] | `toolhost-core` | the model-facing types and [`ModelProvider`] | E2 |
//! | [`artifact`] | `toolhost-core` | artifact stores and offload | T5 |
//! | [`net`] | `toolhost-net` | network destination policy, TLS | W2, B6 |
//! | [`sandbox`] | `toolhost-sandbox` | WebAssembly component plugins: engine, policy, limits, cache | W1–W5, E4, P4, C1–C5 |
//! | [`supply`] | `toolhost-supply` | OCI pulls, the plugin store, `toolhost.lock`, signatures | S1–S3 |
//! | [`builtin`] | `toolhost-builtin` | file, search, shell, web, browser and run_code tools | B1–B6, C7 |
//! | [`mcp`] | `toolhost-mcp` | serving the registry over MCP; remote MCP servers' tools as an extension | E3 |
//! | [`agent`] | `toolhost-agent` | the run loop; OpenAI-compatible and Anthropic providers; the `[agent]` config section | E2 |
//! | [`agent::extensions`] | `toolhost-agent` | built-in extensions: prompt caching, project rules, skills | E3 |
//! | [`config`] | `toolhost` | `toolhost.toml`: host settings, plugin policies, built-in tools | W2 |

pub mod config;
pub mod otlp;

pub use toolhost_agent as agent;
pub use toolhost_builtin as builtin;
pub use toolhost_core::{
    artifact, error, extension, hook, lifecycle, metrics, middleware, model, observe, output,
    pipeline, quota, registry, rules, schedule, schema, tenant, tool, traces,
};
pub use toolhost_mcp as mcp;
pub use toolhost_net as net;
pub use toolhost_sandbox as sandbox;
pub use toolhost_supply as supply;

pub use toolhost_agent::{Agent, AgentConfig, AgentSection};
pub use toolhost_core::{
    AfterDecision, AfterHook, AgentError, Approval, ApprovalRequest, Approver, Arguments,
    BatchCall, BatchConfig, BeforeHook, CallContext, CallId, CallInfo, ChangeKind, ContentBlock,
    Decision, ErrorKind, ExecutionMode, Extension, ExtensionContext, FnAfterHook, FnBeforeHook,
    FnTool, HookChange, HookScope, HostBuilder, InitError, LifecycleHook, Metrics, Middleware,
    ModelProvider, Next, Progress, ProgressSink, Registry, RegistryError, Rejection, RunInfo,
    RunOutput, SandboxFault, StreamEvent, Tool, ToolError, ToolHost, ToolOutput, ToolSpec,
    TraceContext, Traces, TurnInfo,
};

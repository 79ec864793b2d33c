//! toolhost: a host for AI-agent tools.
//!
//! Tools come from native Rust code and from sandboxed WebAssembly components;
//! every call, whoever makes it, goes through one pipeline of hooks and
//! middleware that lives outside any sandbox. Start with [`ToolHost`].
//!
//! | module | what it holds | rules |
//! |---|---|---|
//! | [`tool`] | [`Tool`], [`ToolSpec`], [`CallContext`], [`Arguments`] | T1 |
//! | [`output`] | [`ToolOutput`], [`ContentBlock`] | T4 |
//! | [`error`] | [`ToolError`], [`RegistryError`] | P3 |
//! | [`registry`] | the live [`Registry`] | T2, T3 |
//! | [`pipeline`] | hooks, [`Middleware`], the executor | P1, P2 |
//! | [`middleware`] | timeout, retry, logging, audit | P4–P6 |
//! | [`schedule`] | serial, parallel and mixed batches | M1–M3 |
//! | [`extension`] | [`Extension`], [`LifecycleHook`] | E1, E2 |
//! | [`agent`] | the run loop over a [`ModelProvider`]; OpenAI-compatible and Anthropic providers; the `[agent]` config section | E2 |
//! | [`extensions`] | built-in extensions: prompt caching, project rules, skills | E3 |
//! | [`artifact`] | artifact stores and offload | T5 |
//! | [`builtin`] | file, search, shell, web and browser tools | B1–B6 |
//! | [`net`] | network destination policy | W2, B6 |
//! | [`sandbox`] | WebAssembly component plugins: engine, policy, limits, cache | W1–W5, E4, P4 |
//! | [`config`] | `toolhost.toml`: host settings, plugin policies, built-in tools | W2 |
//! | [`mcp`] | serving the registry over MCP; remote MCP servers' tools as an extension | E3 |

#![warn(missing_docs)]

pub mod agent;
pub mod artifact;
mod artifact_id;
pub mod builtin;
pub mod config;
pub mod error;
pub mod extension;
pub mod extensions;
mod host;
pub mod mcp;
pub mod middleware;
pub mod net;
pub mod output;
pub mod pipeline;
pub mod registry;
pub mod sandbox;
pub mod schedule;
mod tls;
pub mod tool;

#[cfg(test)]
mod testing;

pub use agent::{
    Agent, AgentConfig, AgentError, AgentSection, ModelProvider, RunOutput, ScriptedProvider,
    StreamEvent,
};
pub use error::{ErrorKind, RegistryError, Rejection, SandboxFault, ToolError};
pub use extension::{Extension, ExtensionContext, LifecycleHook, RunInfo, TurnInfo};
pub use host::{HostBuilder, ToolHost};
pub use output::{ContentBlock, ToolOutput};
pub use pipeline::{
    AfterHook, BeforeHook, CallInfo, FnAfterHook, FnBeforeHook, HookScope, Middleware, Next,
};
pub use registry::Registry;
pub use schedule::{BatchCall, BatchConfig, ExecutionMode};
pub use tool::{Arguments, CallContext, CallId, FnTool, Tool, ToolSpec};

//! The Model Context Protocol, both ways.
//!
//! - **Serving** ([`McpServer`], [`serve_stdio`], [`serve_http`]): every
//!   tool in a [`ToolHost`](toolhost_core::ToolHost)'s registry, offered to MCP
//!   clients over stdio or streamable HTTP. Each call goes through
//!   [`ToolHost::invoke_tool`](toolhost_core::ToolHost::invoke_tool); changes to the
//!   registry reach clients as `notifications/tools/list_changed`.
//! - **Remote tools** ([`McpClient`], rule E3): an extension that connects to
//!   an MCP server — a command over stdio or a streamable HTTP URL — and
//!   registers its tools under a prefix, through the same pipeline as every
//!   other tool.
//!
//! Serving and conversion fail with the typed errors [`ServeError`],
//! [`OptionsError`] and [`SpecError`].
//!
//! Cargo features, all on by default: `server` (serving on stdio),
//! `client` (remote servers over stdio), `http` (streamable HTTP, for
//! serving with `server` and for remote URLs with `client`). A remote
//! server configured with a URL in a build without `http` fails to connect,
//! naming the feature.
//!
//! [`convert`] holds the mapping between toolhost's results and errors and
//! MCP's content, used in both directions.

#[cfg(feature = "server")]
mod approval;
#[cfg(feature = "server")]
mod approval_round_trip;
#[cfg(all(feature = "server", feature = "http"))]
pub mod auth;
#[cfg(feature = "client")]
mod client;
#[cfg(feature = "server")]
mod client_question;
#[cfg(feature = "client")]
mod config;
#[cfg(feature = "client")]
mod connection;
pub mod convert;
mod error;
#[cfg(any(feature = "server", feature = "client"))]
mod header_names;
// Never part of the API; not behind a feature of its own, which would give
// tests and the binary different builds of this crate and those above it.
#[cfg(feature = "server")]
#[doc(hidden)]
pub mod fuzzing;
#[cfg(all(feature = "server", feature = "http"))]
mod http;
#[cfg(feature = "server")]
mod line_transport;
#[cfg(any(feature = "server", feature = "client"))]
mod progress;
#[cfg(feature = "server")]
mod server;
#[cfg(all(feature = "server", feature = "http"))]
mod session_owner;
#[cfg(all(feature = "server", feature = "http"))]
mod shared_service;
#[cfg(feature = "server")]
mod task_calls;
#[cfg(feature = "server")]
mod task_store;
#[cfg(feature = "redis")]
mod task_store_redis;
#[cfg(feature = "server")]
mod tasks;
#[cfg(feature = "server")]
mod undecodable_frame_reply;
// Taking the process's stdout for the protocol (SAFETY at each block).
#[cfg(feature = "server")]
#[allow(unsafe_code)]
mod stdio;

#[cfg(any(feature = "server", feature = "client"))]
mod rmcp_error_text;
// W3C trace context in and out of `tools/call` (rule X2).
#[cfg(any(feature = "server", feature = "client"))]
mod trace_context;
// `/metrics` beside `/mcp` (rule X1).
#[cfg(all(feature = "server", feature = "http"))]
mod metrics_endpoint;

#[cfg(feature = "server")]
pub use approval_round_trip::{
    APPROVAL_INPUT, ApprovalKeyError, MIN_APPROVAL_KEY_BYTES, StateRefusal,
};
#[cfg(feature = "client")]
pub use client::McpClient;
#[cfg(feature = "client")]
pub use config::{
    DEFAULT_TIMEOUT, McpConfigError, McpField, McpProtocol, McpServerConfig, McpTransport,
};
pub use error::SpecError;
#[cfg(feature = "server")]
pub use error::{OptionsError, ServeError};
#[cfg(all(feature = "server", feature = "http"))]
pub use http::{
    DEFAULT_DRAIN_DELAY, DEFAULT_GRACE, DEFAULT_MAX_REQUEST_BYTES, DEFAULT_MAX_SESSIONS,
    HEALTH_PATH, HttpOptions, MCP_PATH, READY_PATH, serve_http,
};
#[cfg(feature = "server")]
pub use line_transport::MAX_LINE_BYTES;
#[cfg(all(feature = "server", feature = "http"))]
pub use metrics_endpoint::{METRICS_PATH, MetricsAccess, MetricsEndpoint};
#[cfg(feature = "server")]
pub use server::{McpServer, ReloadCounts, Retired};
#[cfg(feature = "server")]
pub use stdio::{ProtocolStdio, serve_stdio};
#[cfg(feature = "server")]
pub use task_store::{
    DEFAULT_MEMORY_TASKS, MemoryTaskStore, TaskRecord, TaskState, TaskStore, TaskStoreError,
};
#[cfg(feature = "redis")]
pub use task_store_redis::RedisTaskStore;
#[cfg(feature = "server")]
pub use tasks::{
    DEFAULT_POLL_INTERVAL, DEFAULT_TASK_AFTER, DEFAULT_TASK_TTL, TASK_LEASE, TaskSettings,
};

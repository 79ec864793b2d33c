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
//! [`convert`] holds the mapping between toolhost's results and errors and
//! MCP's content, used in both directions.

mod client;
mod config;
mod connection;
pub mod convert;
mod error;
mod http;
mod lines;
mod refusal;
mod server;
// Taking the process's stdout for the protocol (SAFETY at each block).
#[allow(unsafe_code)]
mod stdio;

pub use client::McpClient;
pub use config::{DEFAULT_TIMEOUT, McpConfigError, McpField, McpServerConfig, McpTransport};
pub use error::{OptionsError, ServeError, SpecError};
pub use http::{
    DEFAULT_MAX_REQUEST_BYTES, DEFAULT_MAX_SESSIONS, HttpOptions, MCP_PATH, serve_http,
};
pub use lines::MAX_LINE_BYTES;
pub use server::McpServer;
pub use stdio::{ProtocolStdio, serve_stdio};

//! [`McpClient`]: a remote MCP server's tools as an extension (rule E3).
//!
//! Each remote tool becomes a [`Tool`] named `prefix.name` whose `call`
//! forwards to the server, so it goes through the same pipeline as every
//! other tool: validation against the server's schema, hooks, middleware,
//! timeouts, execution modes. The server's `tools/list_changed`
//! notifications replace the extension's tools in the registry.
//!
//! The server is the operator's choice, written in `toolhost.toml`; the
//! model can neither add one nor change its address. So the address is not
//! put through a [`NetPolicy`](crate::net::NetPolicy): that policy exists to
//! limit what tools reach on the model's behalf.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::connection::Connection;
use super::convert;
use crate::error::ToolError;
use crate::extension::{Extension, ExtensionContext};
use crate::output::ToolOutput;
use crate::tool::{Arguments, CallContext, Tool, ToolSpec};

/// How to reach a remote MCP server.
#[derive(Clone, PartialEq, Eq)]
pub enum McpTransport {
    /// Start `argv` and speak MCP over its stdin and stdout. The command
    /// inherits toolhost's environment plus `env`; its stderr goes to the
    /// log. A command that exits is started again by the next call.
    Command {
        /// The program and its arguments; never empty.
        argv: Vec<String>,
        /// Environment variables set for it, on top of toolhost's own.
        env: BTreeMap<String, String>,
        /// Its working directory (default: toolhost's).
        cwd: Option<PathBuf>,
    },
    /// Streamable HTTP at `url` (`http://` or `https://`, TLS through the
    /// host's one TLS configuration). Redirects are not followed.
    Http {
        /// The endpoint, e.g. `http://127.0.0.1:8000/mcp`.
        url: String,
        /// Sent as `Authorization: Bearer TOKEN` on every request.
        bearer_token: Option<String>,
    },
}

impl fmt::Debug for McpTransport {
    /// Never prints the bearer token or the environment's values.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Command { argv, env, cwd } => f
                .debug_struct("Command")
                .field("argv", argv)
                .field("env", &env.keys().collect::<Vec<_>>())
                .field("cwd", cwd)
                .finish(),
            Self::Http { url, bearer_token } => f
                .debug_struct("Http")
                .field("url", url)
                .field("bearer_token", &bearer_token.as_ref().map(|_| "…"))
                .finish(),
        }
    }
}

impl fmt::Display for McpTransport {
    /// The command line, or the URL.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Command { argv, .. } => f.write_str(&argv.join(" ")),
            Self::Http { url, .. } => f.write_str(url),
        }
    }
}

/// One remote server: its name, how to reach it, how its tools are named,
/// and how long starting it and each request to it may take.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServerConfig {
    /// The server's name, used in errors ("MCP server `docs` …") and in the
    /// extension's name (`mcp.NAME`).
    pub name: String,
    /// How to reach it.
    pub transport: McpTransport,
    /// Its tools are registered as `prefix.tool`; an empty prefix keeps
    /// their own names.
    pub prefix: String,
    /// The longest a listing or a call may take (a call's own deadline
    /// applies too, whichever is earlier).
    pub timeout: Duration,
    /// The longest starting the server and completing the handshake may
    /// take (a command may have to start an interpreter, or fetch packages).
    pub connect_timeout: Duration,
}

impl McpServerConfig {
    /// A server started as `argv`, with its tools under `prefix` = `name`
    /// and 30 s timeouts.
    pub fn command(name: impl Into<String>, argv: Vec<String>) -> Self {
        Self::new(
            name,
            McpTransport::Command {
                argv,
                env: BTreeMap::new(),
                cwd: None,
            },
        )
    }

    /// A server at `url`, with its tools under `prefix` = `name` and 30 s
    /// timeouts.
    pub fn http(name: impl Into<String>, url: impl Into<String>) -> Self {
        Self::new(
            name,
            McpTransport::Http {
                url: url.into(),
                bearer_token: None,
            },
        )
    }

    /// A server reached through `transport`, with its tools under `prefix`
    /// = `name` and 30 s timeouts.
    pub fn new(name: impl Into<String>, transport: McpTransport) -> Self {
        let name = name.into();
        Self {
            prefix: name.clone(),
            name,
            transport,
            timeout: DEFAULT_TIMEOUT,
            connect_timeout: DEFAULT_TIMEOUT,
        }
    }

    /// Uses `prefix` for the tools' names (`""` for none).
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// Sets the time limit of each listing and call.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Sets the time limit of starting the server and the handshake.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Checks the configuration; the error names the field and says what is
    /// wrong: a name or prefix that cannot start a tool name, an empty
    /// command, a URL that is not http(s), a zero timeout.
    pub fn validate(&self) -> Result<(), McpConfigError> {
        let bad = |field, reason: String| Err(McpConfigError { field, reason });
        if let Err(r) = ToolSpec::validate_name(&self.name) {
            return bad(McpField::Name, r.replace("tool name", "server name"));
        }
        if !self.prefix.is_empty()
            && let Err(r) = ToolSpec::validate_name(&self.prefix)
        {
            return bad(McpField::Prefix, r.replace("tool name", "prefix"));
        }
        match &self.transport {
            McpTransport::Command { argv, .. } => {
                if argv.first().is_none_or(|p| p.is_empty()) {
                    return bad(
                        McpField::Command,
                        "the command is empty; give the program and its arguments".into(),
                    );
                }
            }
            McpTransport::Http { url, .. } => match url.parse::<http::Uri>() {
                Err(e) => return bad(McpField::Url, format!("`{url}` is not a URL: {e}")),
                Ok(uri) => {
                    if !matches!(uri.scheme_str(), Some("http" | "https")) || uri.host().is_none() {
                        return bad(
                            McpField::Url,
                            format!("`{url}` is not an http:// or https:// URL"),
                        );
                    }
                }
            },
        }
        if self.timeout.is_zero() {
            return bad(McpField::Timeout, "the timeout must be above zero".into());
        }
        if self.connect_timeout.is_zero() {
            return bad(
                McpField::ConnectTimeout,
                "the connect timeout must be above zero".into(),
            );
        }
        Ok(())
    }
}

/// The part of an [`McpServerConfig`] that is wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum McpField {
    /// [`McpServerConfig::name`].
    Name,
    /// [`McpServerConfig::prefix`].
    Prefix,
    /// The command of [`McpTransport::Command`].
    Command,
    /// The URL of [`McpTransport::Http`].
    Url,
    /// [`McpServerConfig::timeout`].
    Timeout,
    /// [`McpServerConfig::connect_timeout`].
    ConnectTimeout,
}

/// Why an [`McpServerConfig`] is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct McpConfigError {
    /// What is wrong.
    pub field: McpField,
    /// Why.
    pub reason: String,
}

/// The default time limits of starting a remote server and of each request
/// to it: 30 s.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// An extension that registers a remote MCP server's tools.
///
/// `init` starts the server (or opens the HTTP session), lists its tools and
/// registers them; a server that cannot be reached fails the registration
/// with the reason. Afterwards:
///
/// - `notifications/tools/list_changed` replaces the tools atomically;
/// - a server that dies fails the calls that find it gone with
///   [`ToolError::Failed`] (retryable) naming it, and the next call starts it
///   again (a new process for a command) and lists its tools anew;
/// - `dispose` closes the session and stops the command.
///
/// Remote tools declare no concurrency safety and are not idempotent,
/// whatever the server's annotations say: those are hints from a party the
/// host does not control. A tool whose prefixed name is not a valid tool
/// name, or whose schema does not compile, is left out with a warning.
pub struct McpClient {
    extension_name: String,
    config: Arc<McpServerConfig>,
    connection: Arc<Connection>,
    stop: CancellationToken,
    problems: Arc<Mutex<Vec<String>>>,
}

impl McpClient {
    /// An extension named `mcp.NAME` for the server `config` describes.
    /// Fails with [`McpServerConfig::validate`]'s reason.
    pub fn new(config: McpServerConfig) -> Result<Self, McpConfigError> {
        config.validate()?;
        let config = Arc::new(config);
        Ok(Self {
            extension_name: format!("mcp.{}", config.name),
            connection: Arc::new(Connection::new(config.clone())),
            config,
            stop: CancellationToken::new(),
            problems: Arc::default(),
        })
    }

    /// The server's configuration.
    pub fn config(&self) -> &McpServerConfig {
        &self.config
    }

    /// The remote tools left out at the last listing, each with why.
    pub fn problems(&self) -> Vec<String> {
        self.problems
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

impl Drop for McpClient {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Builds the tools of one listing; records the ones left out.
fn remote_tools(
    listed: &[rmcp::model::Tool],
    connection: &Arc<Connection>,
    config: &McpServerConfig,
    problems: &Mutex<Vec<String>>,
) -> Vec<Arc<dyn Tool>> {
    let mut skipped = Vec::new();
    let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
    for tool in listed {
        match convert::spec_from_mcp(tool, &config.prefix) {
            Ok(spec) => tools.push(Arc::new(RemoteTool {
                spec,
                remote: tool.name.to_string(),
                connection: connection.clone(),
            })),
            Err(reason) => {
                tracing::warn!(target: "toolhost::mcp", server = %config.name, "tool left out: {reason}");
                skipped.push(reason);
            }
        }
    }
    *problems.lock().unwrap_or_else(|e| e.into_inner()) = skipped;
    tools
}

#[async_trait]
impl Extension for McpClient {
    fn name(&self) -> &str {
        &self.extension_name
    }

    async fn init(&self, ctx: &ExtensionContext) -> anyhow::Result<()> {
        self.connection
            .ensure_connected()
            .await
            .map_err(anyhow::Error::msg)?;
        let listed = match self.connection.list_tools().await {
            Some(listed) => listed.map_err(anyhow::Error::msg)?,
            None => anyhow::bail!(
                "MCP server `{}` closed right after starting",
                self.config.name
            ),
        };
        ctx.set_tools(remote_tools(
            &listed,
            &self.connection,
            &self.config,
            &self.problems,
        ))?;
        tokio::spawn(follow_list_changes(
            Arc::downgrade(&self.connection),
            self.config.clone(),
            ctx.clone(),
            self.problems.clone(),
            self.stop.clone(),
        ));
        Ok(())
    }

    async fn dispose(&self) {
        self.stop.cancel();
        self.connection.close().await;
    }
}

/// Re-lists the server's tools whenever it says they changed (or it was
/// reconnected), and replaces the extension's tools with them, until the
/// extension is disposed.
async fn follow_list_changes(
    connection: std::sync::Weak<Connection>,
    config: Arc<McpServerConfig>,
    ctx: ExtensionContext,
    problems: Arc<Mutex<Vec<String>>>,
    stop: CancellationToken,
) {
    let Some(changed) = connection
        .upgrade()
        .map(|c| c.events().tools_changed.clone())
    else {
        return;
    };
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = changed.notified() => {}
        }
        let Some(connection) = connection.upgrade() else {
            return;
        };
        match connection.list_tools().await {
            None => {}
            Some(Err(reason)) => tracing::warn!(target: "toolhost::mcp", "{reason}"),
            Some(Ok(listed)) => {
                let tools = remote_tools(&listed, &connection, &config, &problems);
                match ctx.set_tools(tools) {
                    Ok(()) => tracing::info!(
                        target: "toolhost::mcp",
                        server = %config.name,
                        "tool list changed: {}",
                        ctx.tool_names().join(", ")
                    ),
                    Err(e) => tracing::warn!(
                        target: "toolhost::mcp",
                        server = %config.name,
                        "new tool list not applied: {e}"
                    ),
                }
            }
        }
    }
}

/// One remote tool: its (prefixed) descriptor, and the connection its calls
/// go through.
struct RemoteTool {
    spec: ToolSpec,
    remote: String,
    connection: Arc<Connection>,
}

#[async_trait]
impl Tool for RemoteTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, ctx: CallContext, args: Arguments) -> Result<ToolOutput, ToolError> {
        self.connection.call(&self.remote, args, &ctx).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn e3_bad_configurations_say_what_is_wrong() {
        let ok = McpServerConfig::command("docs", vec!["python3".into(), "s.py".into()]);
        ok.validate().unwrap();
        assert_eq!(ok.prefix, "docs");
        let cases = [
            (
                McpServerConfig::command("docs", vec![]),
                "the command is empty",
            ),
            (
                McpServerConfig::command("bad name", vec!["x".into()]),
                "server name `bad name`",
            ),
            (
                McpServerConfig::command("docs", vec!["x".into()]).prefix("a/b"),
                "prefix `a/b`",
            ),
            (
                McpServerConfig::http("web", "ftp://example.com/mcp"),
                "not an http:// or https:// URL",
            ),
            (McpServerConfig::http("web", "http://"), "is not a URL"),
            (
                McpServerConfig::http("web", "http://127.0.0.1:1/mcp").timeout(Duration::ZERO),
                "the timeout must be above zero",
            ),
        ];
        for (config, expected) in cases {
            let err = config.validate().unwrap_err();
            assert!(err.reason.contains(expected), "{config:?}: {err}");
        }
        assert!(
            McpServerConfig::http("web", "http://x")
                .prefix("")
                .validate()
                .is_ok()
        );
    }

    #[test]
    fn e3_debug_never_shows_secrets() {
        let http = McpTransport::Http {
            url: "https://x/mcp".into(),
            bearer_token: Some("s3cret".into()),
        };
        let command = McpTransport::Command {
            argv: vec!["srv".into()],
            env: BTreeMap::from([("API_KEY".into(), "s3cret".into())]),
            cwd: None,
        };
        for t in [http, command] {
            let shown = format!("{t:?}");
            assert!(!shown.contains("s3cret"), "{shown}");
        }
    }

    #[tokio::test]
    async fn e3_a_server_that_cannot_start_fails_registration_naming_it() {
        let host = crate::ToolHost::new();
        let client = McpClient::new(McpServerConfig::command(
            "ghost",
            vec!["/nonexistent/mcp-server".into()],
        ))
        .unwrap();
        let err = host.register_extension(Arc::new(client)).await.unwrap_err();
        let text = err.to_string();
        assert!(text.contains("cannot start MCP server `ghost`"), "{text}");
        assert!(text.contains("/nonexistent/mcp-server"), "{text}");
        assert!(host.extension_names().is_empty());
    }
}

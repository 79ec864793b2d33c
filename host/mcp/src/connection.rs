//! One remote MCP server's connection: started on first use, reused by
//! every call, dropped when the server dies, and started again by the next
//! use.

use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ErrorCode, Implementation,
};
use rmcp::service::{NotificationContext, Peer, RunningService};
#[cfg(feature = "http")]
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::TokioChildProcess;
#[cfg(feature = "http")]
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, RoleClient, ServiceError, ServiceExt as _};
use serde_json::Value;
use tokio::io::AsyncReadExt as _;
use tokio::sync::{Mutex, Notify};

use super::config::{McpServerConfig, McpTransport};
use super::convert;
use toolhost_core::error::ToolError;
use toolhost_core::output::ToolOutput;
use toolhost_core::tool::{Arguments, CallContext};

/// What the connection hears from the server outside of answers.
#[derive(Clone)]
pub(crate) struct Events {
    /// Woken by `notifications/tools/list_changed` and by a reconnection.
    pub(crate) tools_changed: Arc<Notify>,
}

impl ClientHandler for Events {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("toolhost", env!("CARGO_PKG_VERSION")),
        )
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.tools_changed.notify_one();
    }
}

type Session = RunningService<RoleClient, Events>;

/// A connection to one server. Calls share one session; concurrent calls
/// that find no session wait for a single connection attempt.
pub(crate) struct Connection {
    config: Arc<McpServerConfig>,
    events: Events,
    /// The live session, if any, and its number (sessions are numbered so
    /// that a failed call forgets only the session it failed on).
    session: Mutex<Option<(u64, Session)>>,
    sessions_started: AtomicU64,
}

impl Connection {
    pub(crate) fn new(config: Arc<McpServerConfig>) -> Self {
        let events = Events {
            tools_changed: Arc::new(Notify::new()),
        };
        Self {
            config,
            events,
            session: Mutex::new(None),
            sessions_started: AtomicU64::new(0),
        }
    }

    pub(crate) fn events(&self) -> &Events {
        &self.events
    }

    /// Connects now if not connected (used at registration, so that a
    /// server that cannot start is a configuration error).
    pub(crate) async fn ensure_connected(&self) -> Result<(), String> {
        let mut slot = self.session.lock().await;
        if slot.as_ref().is_none_or(|(_, s)| s.is_transport_closed()) {
            *slot = Some(self.start().await?);
        }
        Ok(())
    }

    /// The server's tools, if it is connected; `None` if it is not (the
    /// next call reconnects, and lists again).
    pub(crate) async fn list_tools(&self) -> Option<Result<Vec<rmcp::model::Tool>, String>> {
        let peer = self.session.lock().await.as_ref()?.1.peer().clone();
        let listed = tokio::time::timeout(self.config.timeout, peer.list_all_tools()).await;
        Some(match listed {
            Ok(Ok(tools)) => Ok(tools),
            Ok(Err(e)) => Err(format!("{}: tools/list failed: {e}", self.label())),
            Err(_) => Err(format!(
                "{}: tools/list did not answer within {} ms",
                self.label(),
                self.config.timeout.as_millis()
            )),
        })
    }

    /// Calls the server's tool `remote` with `args`, within the call's
    /// deadline and the server's own timeout, whichever comes first.
    pub(crate) async fn call(
        &self,
        remote: &str,
        args: Arguments,
        ctx: &CallContext,
    ) -> Result<ToolOutput, ToolError> {
        let Value::Object(arguments) = args.to_value() else {
            return Err(ToolError::invalid_arguments(
                "",
                "arguments must be a JSON object",
            ));
        };
        let (number, peer) = self.live_peer().await?;
        let params = CallToolRequestParams::new(remote.to_owned()).with_arguments(arguments);
        let limit = ctx
            .remaining()
            .map_or(self.config.timeout, |r| r.min(self.config.timeout));
        // Dropping the request (timeout, cancellation, the pipeline's own
        // deadline) tells the server with `notifications/cancelled`.
        let call = tokio::time::timeout(limit, peer.call_tool(params));
        let outcome = match toolhost_core::until_cancelled(ctx.cancellation(), call).await {
            None => return Err(ToolError::Cancelled),
            Some(Err(_elapsed)) => return Err(ToolError::timeout(limit)),
            Some(Ok(r)) => r,
        };
        match outcome {
            Ok(result) => convert::output_from_mcp(result),
            Err(e) => Err(self.call_failed(number, e).await),
        }
    }

    /// The current session's peer; starts a session if there is none. A
    /// session whose server has gone is dropped and the call fails, naming
    /// the server: the next call starts a new one.
    async fn live_peer(&self) -> Result<(u64, Peer<RoleClient>), ToolError> {
        let mut slot = self.session.lock().await;
        if let Some((number, session)) = slot.as_ref() {
            if !session.is_transport_closed() {
                return Ok((*number, session.peer().clone()));
            }
            *slot = None;
            return Err(ToolError::transient(format!(
                "{} has stopped (its connection closed); the next call restarts it",
                self.label()
            )));
        }
        let (number, session) = self.start().await.map_err(ToolError::transient)?;
        let peer = session.peer().clone();
        *slot = Some((number, session));
        // The tools may have changed while the server was away.
        self.events.tools_changed.notify_one();
        Ok((number, peer))
    }

    /// Maps a failed request to a call error; forgets the session if the
    /// failure means it is gone.
    async fn call_failed(&self, number: u64, e: ServiceError) -> ToolError {
        match e {
            ServiceError::McpError(err) if err.code == ErrorCode::INVALID_PARAMS => {
                ToolError::invalid_arguments(
                    "",
                    format!("{} refused the call: {}", self.label(), err.message),
                )
            }
            ServiceError::McpError(err) => ToolError::failed(format!(
                "{} answered with error {}: {}",
                self.label(),
                err.code.0,
                err.message
            )),
            ServiceError::Timeout { timeout } => ToolError::timeout(timeout),
            ServiceError::Cancelled { .. } => ToolError::Cancelled,
            ServiceError::TransportClosed | ServiceError::TransportSend(_) => {
                let mut slot = self.session.lock().await;
                if slot.as_ref().is_some_and(|(n, _)| *n == number) {
                    *slot = None;
                }
                ToolError::transient(format!(
                    "{} stopped answering ({e}); the next call reconnects",
                    self.label()
                ))
            }
            other => ToolError::failed(format!("{}: {other}", self.label())),
        }
    }

    /// Ends the session: for a command, closes its stdin, then terminates
    /// it if it has not exited within a few seconds.
    pub(crate) async fn close(&self) {
        let session = self.session.lock().await.take();
        if let Some((_, mut session)) = session {
            let _ = session.close_with_timeout(CLOSE_TIMEOUT).await;
        }
    }

    async fn start(&self) -> Result<(u64, Session), String> {
        let session = self.connect().await?;
        Ok((
            self.sessions_started.fetch_add(1, Ordering::Relaxed),
            session,
        ))
    }

    /// "MCP server `name`", the way every error names the server.
    fn label(&self) -> String {
        format!("MCP server `{}`", self.config.name)
    }

    /// Starts the server (or opens the HTTP session) and completes the
    /// handshake, within the connect timeout.
    async fn connect(&self) -> Result<Session, String> {
        let label = self.label();
        let handshake = async {
            match &self.config.transport {
                McpTransport::Command { argv, env, cwd } => {
                    let mut cmd = tokio::process::Command::new(&argv[0]);
                    cmd.args(&argv[1..]).envs(env);
                    if let Some(dir) = cwd {
                        cmd.current_dir(dir);
                    }
                    let (transport, stderr) = TokioChildProcess::builder(cmd)
                        .stderr(Stdio::piped())
                        .spawn()
                        .map_err(|e| format!("cannot start {label} (`{}`): {e}", argv.join(" ")))?;
                    if let Some(stderr) = stderr {
                        tokio::spawn(forward_stderr(self.config.name.clone(), stderr));
                    }
                    self.events.clone().serve(transport).await.map_err(|e| {
                        format!(
                            "{label} (`{}`) failed the MCP handshake: {e}",
                            argv.join(" ")
                        )
                    })
                }
                #[cfg(not(feature = "http"))]
                McpTransport::Http { url, .. } => Err(format!(
                    "cannot connect to {label} at {url}: the HTTP transport is not built in; \
                     enable the `http` feature of toolhost-mcp"
                )),
                #[cfg(feature = "http")]
                McpTransport::Http { url, bearer_token } => {
                    let client = toolhost_net::tls::reqwest_builder()
                        .map_err(|e| toolhost_core::report(&e))
                        .and_then(|b| {
                            b.redirect(reqwest::redirect::Policy::none())
                                .build()
                                .map_err(|e| e.to_string())
                        })
                        .map_err(|e| format!("{label}: cannot set up HTTP: {e}"))?;
                    let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
                    if let Some(token) = bearer_token {
                        config = config.auth_header(token.clone());
                    }
                    let transport = StreamableHttpClientTransport::with_client(client, config);
                    self.events
                        .clone()
                        .serve(transport)
                        .await
                        .map_err(|e| format!("cannot connect to {label} at {url}: {e}"))
                }
            }
        };
        tokio::time::timeout(self.config.connect_timeout, handshake)
            .await
            .unwrap_or_else(|_| {
                Err(format!(
                    "{label} did not complete the MCP handshake within {} ms",
                    self.config.connect_timeout.as_millis()
                ))
            })
    }
}

/// Longest line of a server's stderr kept in one log record.
const MAX_LOG_LINE: usize = 8 << 10;

/// Sends what a server writes to stderr to the log, a line at a time
/// (long lines cut), until it closes.
async fn forward_stderr(server: String, mut stderr: tokio::process::ChildStderr) {
    let mut pending: Vec<u8> = Vec::new();
    let mut chunk = [0u8; 4096];
    let log = |line: &[u8]| {
        let text = String::from_utf8_lossy(line);
        let text = text.trim_end();
        if !text.is_empty() {
            tracing::info!(target: "toolhost::mcp", server = %server, "{text}");
        }
    };
    loop {
        let n = match stderr.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        pending.extend_from_slice(&chunk[..n]);
        while let Some(end) = pending.iter().position(|&b| b == b'\n') {
            log(&pending[..end]);
            pending.drain(..=end);
        }
        if pending.len() > MAX_LOG_LINE {
            log(&pending[..MAX_LOG_LINE]);
            pending.clear();
        }
    }
    log(&pending);
}

/// How long closing a session may take: a command gets its stdin closed,
/// then SIGTERM, then SIGKILL, a few seconds apart.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(10);

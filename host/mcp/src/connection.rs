//! One remote MCP server's connection: started on first use, reused by
//! every call, dropped when the server dies, and started again by the next
//! use.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rmcp::ErrorData;
use rmcp::model::{
    CallToolRequestParams, CancelledNotificationParam, ClientCapabilities, ClientConfig,
    ClientRequest, DEFAULT_MRTR_MAX_ROUNDS, ElicitRequestParams, ElicitResult, ElicitationAction,
    ElicitationCapability, ErrorCode, FormElicitationCapability, Implementation, InputRequest,
    InputRequiredResult, InputResponses, ProgressNotificationParam, ProgressToken, ProtocolVersion,
    Request, RequestId, ServerNotification, ServerResult, SubscriptionFilter,
};
use rmcp::service::{
    NotificationContext, Peer, PeerRequestOptions, RequestContext, RunningService,
};
#[cfg(feature = "http")]
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::TokioChildProcess;
#[cfg(feature = "http")]
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt as _, RoleClient, ServiceError};
use serde_json::Value;
use tokio::io::AsyncReadExt as _;
use tokio::sync::{Mutex, Notify};

use super::config::{McpProtocol, McpServerConfig, McpTransport};
use super::error::{ConnectError, ListError};
use super::rmcp_error_text::RemoteError;
use super::{convert, progress, rmcp_error_text};
use toolhost_core::error::ToolError;
use toolhost_core::output::ToolOutput;
use toolhost_core::tool::elicitation::{
    ElicitationAnswer, ElicitationError, ElicitationRequest, Elicitor,
};
use toolhost_core::tool::{Arguments, CallContext, ProgressSink};

/// A call in flight, by its number, with the person its caller can ask.
type CallAsking = (u64, Option<Arc<dyn Elicitor>>);

/// What the connection hears from the server outside of answers.
#[derive(Clone)]
pub(crate) struct Events {
    /// Woken by `notifications/tools/list_changed` and by a reconnection.
    pub(crate) tools_changed: Arc<Notify>,
    /// The server's name, for its log records.
    server: Arc<str>,
    /// Where the progress of each call in flight goes, by the token this
    /// host gave the call: a server's report for any other token (another
    /// call's, or one it made up) goes nowhere.
    progress: Arc<std::sync::Mutex<HashMap<ProgressToken, ProgressSink>>>,
    /// The calls in flight on this connection, each with the person its
    /// caller can ask (if any), for the server's questions.
    asking: Arc<std::sync::Mutex<Vec<CallAsking>>>,
    /// Numbers the entries of [`Events::asking`].
    next_call: Arc<AtomicU64>,
}

impl Events {
    fn progress_sinks(&self) -> std::sync::MutexGuard<'_, HashMap<ProgressToken, ProgressSink>> {
        self.progress.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn asking(&self) -> std::sync::MutexGuard<'_, Vec<CallAsking>> {
        self.asking.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Who the server's question goes to: the person behind the one call
    /// in flight. Over one connection the protocol does not say which call
    /// a question belongs to, so with several in flight it goes to no one
    /// rather than perhaps to the wrong person.
    fn asked_person(&self) -> Result<Arc<dyn Elicitor>, String> {
        let asking = self.asking();
        match asking.as_slice() {
            [] => Err("no call of toolhost's is in flight on this connection".into()),
            [(_, Some(person))] => Ok(person.clone()),
            [(_, None)] => Err("the caller of this call cannot be asked".into()),
            several => Err(format!(
                "{} calls are in flight on this connection, and the question does not say which \
                 one it belongs to",
                several.len()
            )),
        }
    }
}

impl Events {
    /// Puts the server's form question to `person`, as asked, and returns
    /// their answer; a URL question, an unreadable form or a person who
    /// cannot be asked is an error saying why.
    async fn put(
        &self,
        person: &Arc<dyn Elicitor>,
        request: ElicitRequestParams,
    ) -> Result<ElicitResult, String> {
        let ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } = request
        else {
            return Err("toolhost forwards form questions only, not URLs".into());
        };
        let schema = serde_json::to_value(&requested_schema)
            .map_err(|e| format!("the form could not be read: {e}"))?;
        let question =
            ElicitationRequest::new(format!("MCP server `{}`", self.server), message, schema);
        match person.elicit(&question).await {
            Ok(ElicitationAnswer::Accept(content)) => {
                Ok(ElicitResult::new(ElicitationAction::Accept).with_content(content))
            }
            Ok(ElicitationAnswer::Decline) => Ok(ElicitResult::new(ElicitationAction::Decline)),
            Ok(ElicitationAnswer::Cancel) => Ok(ElicitResult::new(ElicitationAction::Cancel)),
            Ok(_) => Err("the answer was of a kind toolhost does not know".into()),
            Err(e) => Err(e.to_string()),
        }
    }
}

/// A call's entry in [`Events::asking`], removed when the call ends.
struct AskRoute<'a> {
    events: &'a Events,
    number: u64,
}

impl Drop for AskRoute<'_> {
    fn drop(&mut self) {
        self.events.asking().retain(|(n, _)| *n != self.number);
    }
}

/// A call's entry in [`Events::progress`], removed when the call ends
/// however it ends (answered, timed out, cancelled, dropped).
struct ProgressRoute<'a> {
    events: &'a Events,
    token: ProgressToken,
}

impl Drop for ProgressRoute<'_> {
    fn drop(&mut self) {
        self.events.progress_sinks().remove(&self.token);
    }
}

/// A request sent and not yet answered: if it is given up (dropped with an
/// id still here), the server is told with `notifications/cancelled`, so it
/// can stop the work.
struct Abandon<'a> {
    peer: &'a Peer<RoleClient>,
    id: Option<RequestId>,
}

impl Drop for Abandon<'_> {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        let peer = self.peer.clone();
        let notice =
            CancelledNotificationParam::new(Some(id), Some("the caller gave up the call".into()));
        // Dropping runs outside any task that could wait for the send.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if let Err(e) = peer.notify_cancelled(notice).await {
                    tracing::debug!(target: "toolhost::mcp", "could not cancel a call: {e}");
                }
            });
        }
    }
}

impl ClientHandler for Events {
    fn get_info(&self) -> ClientConfig {
        // Form elicitation: a server's questions are forwarded to the
        // person behind the call (never answered here). No sampling.
        let mut capabilities = ClientCapabilities::default();
        capabilities.elicitation =
            Some(ElicitationCapability::new().with_form(FormElicitationCapability::new()));
        ClientConfig::new(
            capabilities,
            Implementation::new("toolhost", env!("CARGO_PKG_VERSION")),
        )
    }

    /// Forwards the server's question to the person behind the call in
    /// flight, and their answer back; fails, saying why, when no one can be
    /// asked. toolhost never answers on a person's behalf.
    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let refuse = |why: String| {
            tracing::info!(target: "toolhost::mcp", server = &*self.server, "a question of the server was not asked: {why}");
            ErrorData::invalid_request(format!("toolhost cannot ask this: {why}"), None)
        };
        let person = self.asked_person().map_err(refuse)?;
        self.put(&person, request).await.map_err(refuse)
    }

    /// Sampling (deprecated in MCP) is not offered: a server that asks
    /// anyway is told so, not answered.
    #[allow(deprecated)]
    async fn create_message(
        &self,
        _params: rmcp::model::CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<rmcp::model::CreateMessageResult, ErrorData> {
        Err(ErrorData::new(
            ErrorCode::METHOD_NOT_FOUND,
            "toolhost does not offer sampling (sampling/createMessage): it did not declare the \
             capability",
            None,
        ))
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.tools_changed.notify_one();
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let sink = self.progress_sinks().get(&params.progress_token).cloned();
        if let Some(sink) = sink {
            sink.report(progress::from_mcp(params));
        }
    }

    /// A server's log record goes to toolhost's log at its level, under
    /// the server's name (long records cut), as its stderr lines do. (MCP
    /// logging is deprecated by SEP-2577, but servers still send it.)
    #[allow(deprecated)]
    async fn on_logging_message(
        &self,
        params: rmcp::model::LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        use rmcp::model::LoggingLevel;
        let text = match &params.data {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let text = &text[..text.floor_char_boundary(MAX_LOG_LINE)];
        let server = &*self.server;
        let logger = params.logger.as_deref().unwrap_or("");
        match params.level {
            LoggingLevel::Debug => {
                tracing::debug!(target: "toolhost::mcp", server, logger, "{text}")
            }
            LoggingLevel::Info | LoggingLevel::Notice => {
                tracing::info!(target: "toolhost::mcp", server, logger, "{text}")
            }
            LoggingLevel::Warning => {
                tracing::warn!(target: "toolhost::mcp", server, logger, "{text}")
            }
            _ => tracing::error!(target: "toolhost::mcp", server, logger, "{text}"),
        }
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
            server: config.name.as_str().into(),
            progress: Arc::default(),
            asking: Arc::default(),
            next_call: Arc::default(),
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
    pub(crate) async fn ensure_connected(&self) -> Result<(), ConnectError> {
        let mut slot = self.session.lock().await;
        if slot.as_ref().is_none_or(|(_, s)| s.is_transport_closed()) {
            *slot = Some(self.start().await?);
        }
        Ok(())
    }

    /// The server's tools, if it is connected; `None` if it is not (the
    /// next call reconnects, and lists again).
    pub(crate) async fn list_tools(&self) -> Option<Result<Vec<rmcp::model::Tool>, ListError>> {
        let peer = self.session.lock().await.as_ref()?.1.peer().clone();
        let listed = tokio::time::timeout(self.config.timeout, peer.list_all_tools()).await;
        Some(match listed {
            Ok(Ok(tools)) => Ok(tools),
            Ok(Err(e)) => Err(ListError::Request {
                server: self.config.name.clone(),
                source: RemoteError::service(e),
            }),
            Err(_) => Err(ListError::Timeout {
                server: self.config.name.clone(),
                after: self.config.timeout,
            }),
        })
    }

    /// Calls the server's tool `remote` with `args`, each request within the
    /// call's deadline and the server's own timeout, whichever comes first.
    /// A server of protocol 2026-07-28 that answers `input_required` has its
    /// questions put to the person behind this call (its elicitor), and is
    /// called again with their answers, for at most
    /// [`DEFAULT_MRTR_MAX_ROUNDS`] rounds.
    pub(crate) async fn call(
        &self,
        remote: &str,
        args: Arguments,
        ctx: &CallContext,
    ) -> Result<ToolOutput, ToolError> {
        // With metrics, the forward is timed under the extension's name,
        // as the pipeline labels the call (rule X1).
        let Some(observer) = ctx.observer() else {
            return self.forward(remote, args, ctx).await;
        };
        let started = std::time::Instant::now();
        let outcome = self.forward(remote, args, ctx).await;
        observer.stage(
            &format!("mcp.{}", self.config.name),
            toolhost_core::Stage::McpForward,
            started.elapsed(),
        );
        outcome
    }

    /// [`call`](Self::call), untimed.
    async fn forward(
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
        let mut params = CallToolRequestParams::new(remote.to_owned()).with_arguments(arguments);
        // The call's trace context goes on to the server (rule X2).
        crate::trace_context::inject(&mut params, ctx);
        // The server's questions during the call go to the person behind
        // it (see `Events::asked_person`), from before the request is sent.
        let asked = self.events.next_call.fetch_add(1, Ordering::Relaxed);
        self.events.asking().push((asked, ctx.elicitor().cloned()));
        let _asking = AskRoute {
            events: &self.events,
            number: asked,
        };
        let mut state_only_rounds = 0u32;
        for _ in 0..DEFAULT_MRTR_MAX_ROUNDS {
            match self.request(number, &peer, params.clone(), ctx).await? {
                ServerResult::CallToolResult(result) => return convert::output_from_mcp(result),
                ServerResult::InputRequiredResult(input) => {
                    if input.input_requests.as_ref().is_none_or(|r| r.is_empty()) {
                        // Nothing to answer, only a state to echo: the
                        // server is not done yet; give it a moment.
                        let wait = 50u64 << state_only_rounds.min(2);
                        state_only_rounds += 1;
                        tokio::time::sleep(Duration::from_millis(wait)).await;
                    } else {
                        state_only_rounds = 0;
                    }
                    let (responses, state) = self.answer(input, ctx).await?;
                    params.input_responses = responses;
                    params.request_state = state;
                }
                _ => {
                    return Err(ToolError::failed(format!(
                        "{} answered tools/call with a response of another kind",
                        self.label()
                    )));
                }
            }
        }
        Err(ToolError::failed(format!(
            "{} still wanted input after {DEFAULT_MRTR_MAX_ROUNDS} rounds of questions; the call \
             was given up",
            self.label()
        )))
    }

    /// Sends one `tools/call` request and waits for its answer, within the
    /// call's deadline and the server's timeout; a call given up on the way
    /// tells the server.
    async fn request(
        &self,
        number: u64,
        peer: &Peer<RoleClient>,
        params: CallToolRequestParams,
        ctx: &CallContext,
    ) -> Result<ServerResult, ToolError> {
        let limit = ctx
            .remaining()
            .map_or(self.config.timeout, |r| r.min(self.config.timeout));
        // rmcp gives every request a progress token of its own (it replaces
        // any in the params), known once the request is sent.
        let request = ClientRequest::CallToolRequest(Request::new(params));
        let handle = match peer
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await
        {
            Ok(handle) => handle,
            Err(e) => return Err(self.call_failed(number, e).await),
        };
        // From here on, a call that ends without its answer (timeout,
        // cancellation, the pipeline's own deadline) tells the server.
        let mut abandon = Abandon {
            peer,
            id: Some(handle.id.clone()),
        };
        // The caller wants progress (rule N3): what the server reports under
        // the request's token goes to the caller's sink. The route is in
        // place before the server can have read the request, let alone
        // answered with progress.
        let _route = ctx.progress_sink().map(|sink| {
            let token = handle.progress_token.clone();
            self.events
                .progress_sinks()
                .insert(token.clone(), sink.clone());
            ProgressRoute {
                events: &self.events,
                token,
            }
        });
        let call = tokio::time::timeout(limit, handle.await_response());
        let outcome = match toolhost_core::until_cancelled(ctx.cancellation(), call).await {
            None => return Err(ToolError::Cancelled),
            Some(Err(_elapsed)) => return Err(ToolError::timeout(limit)),
            Some(Ok(r)) => r,
        };
        abandon.id = None;
        match outcome {
            Ok(result) => Ok(result),
            Err(e) => Err(self.call_failed(number, e).await),
        }
    }

    /// Puts the questions of an `input_required` answer to the person
    /// behind the call, one at a time in the order of their keys, and
    /// returns the answers and the state to send back. A question toolhost
    /// cannot put (sampling, roots, a URL, no one to ask) fails the call,
    /// saying why: nothing is answered in the person's place.
    async fn answer(
        &self,
        input: InputRequiredResult,
        ctx: &CallContext,
    ) -> Result<(Option<InputResponses>, Option<String>), ToolError> {
        let requests = input.input_requests.unwrap_or_default();
        if requests.is_empty() && input.request_state.is_none() {
            return Err(ToolError::failed(format!(
                "{} answered input_required with neither questions nor a state",
                self.label()
            )));
        }
        let cannot = |why: String| {
            tracing::info!(target: "toolhost::mcp", server = %self.config.name, "a question of the server was not asked: {why}");
            ToolError::failed(format!(
                "{} asked a question toolhost cannot put: {why}",
                self.label()
            ))
        };
        let mut responses = InputResponses::new();
        for (key, request) in requests {
            let answer = match request {
                InputRequest::Elicitation(request) => {
                    let Some(person) = ctx.elicitor() else {
                        return Err(cannot(
                            ElicitationError::NoOneToAsk(
                                "the caller of this call cannot be asked".into(),
                            )
                            .to_string(),
                        ));
                    };
                    self.events
                        .put(person, request.params)
                        .await
                        .map_err(cannot)?
                }
                InputRequest::CreateMessage(_) => {
                    return Err(cannot(
                        "toolhost does not offer sampling (sampling/createMessage)".into(),
                    ));
                }
                InputRequest::ListRoots(_) => {
                    return Err(cannot("toolhost offers no roots (roots/list)".into()));
                }
                _ => return Err(cannot("a request of a kind toolhost does not know".into())),
            };
            let answer = serde_json::to_value(answer)
                .map_err(|e| cannot(format!("the answer could not be written: {e}")))?;
            responses.insert(key, answer);
        }
        Ok((
            (!responses.is_empty()).then_some(responses),
            input.request_state,
        ))
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
        let (number, session) = self
            .start()
            .await
            .map_err(|e| ToolError::transient(toolhost_core::report(&e)))?;
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
            ServiceError::McpError(_) => ToolError::failed(format!(
                "{}: {}",
                self.label(),
                rmcp_error_text::service_error(&e)
            )),
            ServiceError::Timeout { timeout } => ToolError::timeout(timeout),
            ServiceError::Cancelled { .. } => ToolError::Cancelled,
            ServiceError::TransportClosed | ServiceError::TransportSend(_) => {
                let mut slot = self.session.lock().await;
                if slot.as_ref().is_some_and(|(n, _)| *n == number) {
                    *slot = None;
                }
                ToolError::transient(format!(
                    "{} stopped answering ({}); the next call reconnects",
                    self.label(),
                    rmcp_error_text::service_error(&e)
                ))
            }
            other => ToolError::failed(format!(
                "{}: {}",
                self.label(),
                rmcp_error_text::service_error(&other)
            )),
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

    /// How the session begins: `initialize` at 2025-11-25, or
    /// `server/discover` at 2026-07-28 falling back to `initialize`.
    fn lifecycle(&self) -> ClientLifecycleMode {
        match self.config.protocol {
            McpProtocol::V2026_07_28 => ClientLifecycleMode::Auto {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                legacy_version: Some(ProtocolVersion::V_2025_11_25),
            },
            _ => ClientLifecycleMode::Initialize,
        }
    }

    async fn start(&self) -> Result<(u64, Session), ConnectError> {
        let session = self.connect().await?;
        self.listen_for_changes(&session);
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
    async fn connect(&self) -> Result<Session, ConnectError> {
        let server = || self.config.name.clone();
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
                        .map_err(|source| ConnectError::Spawn {
                            server: server(),
                            command: argv.join(" "),
                            source,
                        })?;
                    if let Some(stderr) = stderr {
                        tokio::spawn(forward_stderr(self.config.name.clone(), stderr));
                    }
                    self.events
                        .clone()
                        .serve_with_lifecycle(transport, self.lifecycle())
                        .await
                        .map_err(|e| ConnectError::Handshake {
                            server: server(),
                            command: argv.join(" "),
                            source: RemoteError::init(e),
                        })
                }
                #[cfg(not(feature = "http"))]
                McpTransport::Http { url, .. } => Err(ConnectError::NoHttp {
                    server: server(),
                    url: url.clone(),
                }),
                #[cfg(feature = "http")]
                McpTransport::Http { url, bearer_token } => {
                    let http_setup = |source: Box<dyn std::error::Error + Send + Sync>| {
                        ConnectError::HttpSetup {
                            server: server(),
                            source,
                        }
                    };
                    let client = toolhost_net::tls::reqwest_builder()
                        .map_err(|e| http_setup(e.into()))?
                        .redirect(reqwest::redirect::Policy::none())
                        .build()
                        .map_err(|e| http_setup(e.into()))?;
                    let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
                    if let Some(token) = bearer_token {
                        config = config.auth_header(token.clone());
                    }
                    let transport = StreamableHttpClientTransport::with_client(client, config);
                    self.events
                        .clone()
                        .serve_with_lifecycle(transport, self.lifecycle())
                        .await
                        .map_err(|e| ConnectError::Http {
                            server: server(),
                            url: url.clone(),
                            source: RemoteError::init(e),
                        })
                }
            }
        };
        tokio::time::timeout(self.config.connect_timeout, handshake)
            .await
            .unwrap_or_else(|_| {
                Err(ConnectError::HandshakeTimeout {
                    server: server(),
                    after: self.config.connect_timeout,
                })
            })
    }
}

impl Connection {
    /// A server of protocol 2026-07-28 announces tool list changes only on a
    /// `subscriptions/listen` stream: one is opened for the session's life
    /// when the server offers the announcements, and each one wakes
    /// [`Events::tools_changed`] as a session's notification does.
    fn listen_for_changes(&self, session: &Session) {
        let peer = session.peer().clone();
        let Some(info) = peer.peer_info() else { return };
        let announces = info
            .capabilities
            .tools
            .as_ref()
            .is_some_and(|t| t.list_changed == Some(true));
        if info.protocol_version < ProtocolVersion::V_2026_07_28 || !announces {
            return;
        }
        let events = self.events.clone();
        tokio::spawn(async move {
            let filter = SubscriptionFilter::builder().tools_list_changed().build();
            let mut subscription = match peer.listen(filter).await {
                Ok(s) => s,
                Err(e) => {
                    tracing::info!(target: "toolhost::mcp", server = &*events.server, "tool list changes will not be heard: {}", rmcp_error_text::service_error(&e));
                    return;
                }
            };
            while let Ok(Some(notification)) = subscription.next().await {
                if matches!(
                    notification,
                    ServerNotification::ToolListChangedNotification(_)
                ) {
                    events.tools_changed.notify_one();
                }
            }
        });
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

#[cfg(test)]
mod asked_person_tests {
    use async_trait::async_trait;
    use toolhost_core::tool::elicitation::ElicitationError;

    use super::*;

    struct Person;

    #[async_trait]
    impl Elicitor for Person {
        async fn elicit(
            &self,
            _request: &ElicitationRequest,
        ) -> Result<ElicitationAnswer, ElicitationError> {
            Ok(ElicitationAnswer::Decline)
        }
    }

    fn events() -> Events {
        Connection::new(Arc::new(McpServerConfig::command("s", vec!["true".into()])))
            .events()
            .clone()
    }

    #[test]
    fn n7_a_question_goes_to_the_one_call_in_flight_and_never_to_a_guess() {
        let events = events();
        let err = events.asked_person().err().unwrap();
        assert!(err.contains("no call"), "{err}");

        events.asking().push((1, None));
        let err = events.asked_person().err().unwrap();
        assert!(err.contains("cannot be asked"), "{err}");

        events.asking().clear();
        events.asking().push((1, Some(Arc::new(Person))));
        assert!(events.asked_person().is_ok());

        // Two calls in flight: the question could be either's.
        events.asking().push((2, Some(Arc::new(Person))));
        let err = events.asked_person().err().unwrap();
        assert!(err.contains("2 calls are in flight"), "{err}");

        // The route ends with its call.
        drop(AskRoute {
            events: &events,
            number: 2,
        });
        assert!(events.asked_person().is_ok());
    }
}

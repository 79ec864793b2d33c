//! [`McpServer`]: a [`ToolHost`]'s registry as an MCP server.
//!
//! The tool list is read from the registry on every `tools/list`, so it is
//! always current, and every change to the registry (a plugin loaded, a
//! remote server's list changing) is announced to every connected client
//! with `notifications/tools/list_changed`. Every `tools/call` runs through
//! [`ToolHost::invoke_tool`]: validation, hooks, middleware and timeouts
//! apply exactly as to any other caller. A hook that asks for a person's
//! approval asks the client's user through elicitation, and the call is
//! denied when the client cannot be asked.
//!
//! The host itself can be replaced while the server runs
//! ([`McpServer::replace_host`], rule O3): each request takes the host
//! current when it starts and keeps it to its end, so calls in flight
//! finish on the host they started on, and the clients hear of a changed
//! tool list as they would of any other change.

use std::borrow::Cow;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};

use arc_swap::ArcSwap;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, CustomRequest, CustomResult,
    ErrorCode, GetTaskParams, GetTaskResult, Implementation, ListToolsResult, MetaObject,
    PaginatedRequestParams, ProtocolVersion, RequestParamsMeta as _, ServerCapabilities,
    ServerConfig, SubscriptionFilter, UpdateTaskParams,
};
use rmcp::service::{
    NotificationContext, Peer, RequestContext, SubscriptionContext, SubscriptionSink,
};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::Value;
use tokio_util::sync::{CancellationToken, DropGuard};

use super::approval::{Answered, CannotAsk, DeferToCaller, ElicitApprover, offers_form};
use super::approval_round_trip::{
    ApprovalKeyError, ApprovalRoundTrips, CallBinding, Carried, RoundTripElicitor,
};
use super::client_question::{ClientElicitor, NoOneToAsk};
use super::task_store::{MemoryTaskStore, TaskStore};
use super::tasks::{TaskSettings, Tasks};
use super::{convert, progress};
use toolhost_core::ToolHost;
use toolhost_core::error::ToolError;
use toolhost_core::tenant::TenantMap;
use toolhost_core::tool::elicitation::Elicitor;
use toolhost_core::tool::{Arguments, CallContext};

/// Serves a [`ToolHost`] over MCP: one handler for any number of sessions.
///
/// Cloning is cheap and clones share everything: the host (so its compiled
/// plugins, hooks and middleware), and the list of connected clients to
/// notify. The HTTP transport clones it once per session; no session ever
/// recompiles or reloads anything.
#[derive(Clone)]
pub struct McpServer {
    inner: Arc<Inner>,
}

struct Inner {
    /// The host served now; each request takes it once and keeps it.
    host: ArcSwap<Hosted>,
    /// Bumped each time the host is replaced, so that the task announcing
    /// registry changes follows the new host's registry.
    replaced: tokio::sync::watch::Sender<u64>,
    /// Hosts replaced and reloads refused, for [`McpServer::reload_counts`].
    reloads: AtomicU64,
    refused_reloads: AtomicU64,
    instructions: RwLock<Option<String>>,
    /// Sessions that completed the `initialize` handshake.
    peers: Mutex<Vec<Peer<RoleServer>>>,
    /// Open `subscriptions/listen` streams (protocol 2026-07-28 and later),
    /// each under a key of its own (request ids repeat across sessions),
    /// with its request's token, which the session cancels once it has
    /// taken the stream's final answer.
    sinks: Mutex<Vec<(u64, SubscriptionSink, CancellationToken)>>,
    next_sink: AtomicU64,
    watching: AtomicBool,
    /// `tools/call` requests being answered right now.
    calls: AtomicUsize,
    /// Whether a hook's request for approval goes to the client's user
    /// (elicitation) rather than the host's own approver.
    ask_clients: AtomicBool,
    /// Approval questions to 2026-07-28 clients, by multi round-trip.
    round_trips: ArcSwap<ApprovalRoundTrips>,
    /// Where long calls of clients that declared the tasks extension are
    /// kept, if the server offers tasks.
    tasks: RwLock<Option<Arc<Tasks>>>,
    /// Fired by [`McpServer::close_subscriptions`]: streams end, new ones
    /// are answered at once, and registry changes are no longer announced.
    closing: CancellationToken,
    /// Which tenant each caller is (rule A2), by its token's subject or
    /// client.
    tenants: ArcSwap<TenantMap>,
    /// Fired once a `tools/list` has been answered: [`McpServer::tools_listed`].
    listed: CancellationToken,
}

/// A host as served: held by every request that started on it, and by
/// the server while it is current. When the last holder lets go, its
/// [`Retired`] learns that nothing runs on it any more.
pub(crate) struct Hosted {
    pub(crate) host: ToolHost,
    /// Cancelled when the last holder lets go.
    gone: CancellationToken,
    _last: DropGuard,
}

impl Hosted {
    fn new(host: ToolHost) -> Arc<Self> {
        let gone = CancellationToken::new();
        Arc::new(Self {
            host,
            _last: gone.clone().drop_guard(),
            gone,
        })
    }
}

/// A host that [`McpServer::replace_host`] took out of service: calls that
/// started on it may still be running.
#[must_use = "a replaced host is to be shut down once its calls have finished"]
pub struct Retired {
    host: ToolHost,
    gone: CancellationToken,
}

impl Retired {
    /// Waits until no request that started on the host is running any
    /// more (a call, a task's call, a listing), then hands the host back,
    /// for [`ToolHost::shutdown`].
    pub async fn finished(self) -> ToolHost {
        self.gone.cancelled().await;
        self.host
    }

    /// The host, which may still be running calls.
    pub fn host(&self) -> &ToolHost {
        &self.host
    }
}

/// How often the host was replaced and a reload refused, since the server
/// started ([`McpServer::reload_counts`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReloadCounts {
    /// Hosts replaced by [`McpServer::replace_host`].
    pub applied: u64,
    /// Reloads refused, as recorded by [`McpServer::record_refused_reload`].
    pub refused: u64,
}

/// A call's multi round-trip: the sealer, what the retry carried, and the
/// call's elicitor.
type CallRoundTrip = (Arc<ApprovalRoundTrips>, Carried, Arc<RoundTripElicitor>);

/// Counts a call that outlives its request (a task's) in [`Inner::calls`]
/// until dropped, so a draining server waits for it too.
pub(crate) struct CountedCall(Arc<Inner>);

impl Drop for CountedCall {
    fn drop(&mut self) {
        self.0.calls.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Counts a call in [`Inner::calls`] while it runs.
struct InFlight<'a>(&'a AtomicUsize);

impl<'a> InFlight<'a> {
    fn new(calls: &'a AtomicUsize) -> Self {
        calls.fetch_add(1, Ordering::SeqCst);
        Self(calls)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl McpServer {
    /// A server for `host`'s tools.
    pub fn new(host: ToolHost) -> Self {
        Self::with_instructions(host, None)
    }

    /// A server for `host`'s tools that sends `instructions` to clients at
    /// initialization (for example the extensions' system-prompt text,
    /// [`ToolHost::system_prompt`]). Empty text sends none.
    pub fn with_instructions(host: ToolHost, instructions: Option<String>) -> Self {
        let round_trips = ApprovalRoundTrips::with_random_key(host.approval_timeout());
        let hosted = Hosted::new(host);
        Self {
            inner: Arc::new(Inner {
                round_trips: ArcSwap::from_pointee(round_trips),
                tasks: RwLock::new(Some(Arc::new(Tasks::new(
                    Arc::new(MemoryTaskStore::new()),
                    TaskSettings::default(),
                )))),
                host: ArcSwap::new(hosted),
                replaced: tokio::sync::watch::Sender::new(0),
                reloads: AtomicU64::new(0),
                refused_reloads: AtomicU64::new(0),
                instructions: RwLock::new(instructions.filter(|t| !t.trim().is_empty())),
                peers: Mutex::new(Vec::new()),
                sinks: Mutex::new(Vec::new()),
                next_sink: AtomicU64::new(0),
                watching: AtomicBool::new(false),
                calls: AtomicUsize::new(0),
                ask_clients: AtomicBool::new(true),
                closing: CancellationToken::new(),
                tenants: ArcSwap::from_pointee(TenantMap::new()),
                listed: CancellationToken::new(),
            }),
        }
    }

    /// Maps callers to tenants (rule A2): a call is made for the tenant
    /// listing its token's subject, else its client, else the default
    /// one; the tenant selects the quotas the call counts against. Without
    /// OAuth every caller is the default tenant. May be called again (a
    /// reload): calls started before keep the tenant they had.
    pub fn set_tenants(&self, tenants: TenantMap) {
        self.inner.tenants.store(Arc::new(tenants));
    }

    /// The tenants as set last.
    fn tenants(&self) -> arc_swap::Guard<Arc<TenantMap>> {
        self.inner.tenants.load()
    }

    /// The tenant of the caller whose HTTP request had `parts`.
    pub(crate) fn tenant_of_request(&self, parts: Option<&http::request::Parts>) -> Arc<str> {
        let tenants = self.tenants();
        #[cfg(feature = "http")]
        if let Some(access) = parts.and_then(|p| p.extensions.get::<crate::auth::Access>()) {
            return tenants.tenant_of(access.subject(), access.client());
        }
        #[cfg(not(feature = "http"))]
        let _ = parts;
        tenants.tenant_of(None, None)
    }

    #[cfg(feature = "http")]
    /// Whether a call of `tool` by the caller whose request had `parts`
    /// would be refused by a quota now (rule A3), for an HTTP 429 before
    /// the request reaches the session; the call itself is still admitted
    /// or refused by the host.
    pub(crate) fn quota_refusal(
        &self,
        parts: &http::request::Parts,
        tool: &str,
    ) -> Option<toolhost_core::quota::OverQuota> {
        let hosted = self.hosted();
        if !hosted.host.has_quotas() {
            return None;
        }
        let tenant = self.tenant_of_request(Some(parts));
        // A tool the tenant may not see is not there for it: no quota speaks
        // of it.
        if !self.tenants().may_use(&tenant, tool) {
            return None;
        }
        hosted.host.quota_check(&tenant, tool)
    }

    #[cfg(feature = "http")]
    /// Whether the host served now has quotas, so that a `tools/call` is
    /// worth reading for an early refusal.
    pub(crate) fn has_quotas(&self) -> bool {
        self.inner.host.load().host.has_quotas()
    }

    /// Whether a hook that asks for a person's approval asks the user of
    /// the client that made the call, through MCP elicitation (the
    /// default), failing closed when the client cannot be asked. With
    /// `false`, the host's own approver answers (see
    /// [`HostBuilder::approver`](toolhost_core::HostBuilder::approver)).
    pub fn ask_clients(self, on: bool) -> Self {
        self.inner.ask_clients.store(on, Ordering::Relaxed);
        self
    }

    /// Seals the approval questions put to 2026-07-28 clients (by multi
    /// round-trip) under `key` instead of a random key of this process, so
    /// that any replica holding the same key can finish a call another one
    /// asked about. `key` must have at least
    /// [`MIN_APPROVAL_KEY_BYTES`](crate::MIN_APPROVAL_KEY_BYTES) bytes; keep
    /// it secret (whoever holds it can forge approvals). Answers are good
    /// for the host's approval timeout.
    pub fn approval_key(self, key: &[u8]) -> Result<Self, ApprovalKeyError> {
        let trips = ApprovalRoundTrips::new(key, self.host().approval_timeout())?;
        self.inner.round_trips.store(Arc::new(trips));
        Ok(self)
    }

    /// Keeps the tasks of long calls (rule N8) in `store` (shared by every
    /// replica that should answer for them, e.g. a
    /// [`RedisTaskStore`](crate::RedisTaskStore)), with `settings`. By
    /// default a server offers tasks, kept in its own memory
    /// ([`MemoryTaskStore`]) with [`TaskSettings::default`].
    pub fn tasks(self, store: Arc<dyn TaskStore>, settings: TaskSettings) -> Self {
        *self.inner.tasks.write().unwrap_or_else(|e| e.into_inner()) =
            Some(Arc::new(Tasks::new(store, settings)));
        self
    }

    /// Offers no tasks: every call is answered when it ends, and the
    /// server does not declare the tasks extension.
    pub fn without_tasks(self) -> Self {
        *self.inner.tasks.write().unwrap_or_else(|e| e.into_inner()) = None;
        self
    }

    /// The tasks, if offered.
    fn task_runtime(&self) -> Option<Arc<Tasks>> {
        self.inner
            .tasks
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The tasks, for a request that may use them: one of protocol
    /// 2026-07-28 or later that declared the extension.
    fn tasks_for(&self, context: &RequestContext<RoleServer>) -> Option<Arc<Tasks>> {
        let declared = context
            .client_capabilities()
            .is_some_and(|c| c.supports_tasks());
        if declared && is_modern(context) {
            self.task_runtime()
        } else {
            None
        }
    }

    /// The tasks, for `tasks/*` requests (rmcp has checked the client's
    /// declaration).
    fn tasks_or_error(&self) -> Result<Arc<Tasks>, ErrorData> {
        self.task_runtime().ok_or_else(|| {
            ErrorData::new(
                ErrorCode::METHOD_NOT_FOUND,
                "this server offers no tasks",
                None,
            )
        })
    }

    /// Counts a call in [`McpServer::calls_in_flight`] until the guard is
    /// dropped.
    pub(crate) fn count_call(&self) -> CountedCall {
        self.inner.calls.fetch_add(1, Ordering::SeqCst);
        CountedCall(self.inner.clone())
    }

    /// Whether a hook's request for approval goes to the client's user.
    pub(crate) fn asks_clients(&self) -> bool {
        self.inner.ask_clients.load(Ordering::Relaxed)
    }

    /// The host whose tools are served now (a handle: a host that
    /// [`replace_host`](Self::replace_host) replaces later stays what this
    /// returned).
    pub fn host(&self) -> ToolHost {
        self.hosted().host.clone()
    }

    /// The host served now, held for a request's whole life.
    pub(crate) fn hosted(&self) -> Arc<Hosted> {
        self.inner.host.load_full()
    }

    /// Serves `host` from now on, in place of the current one, at once
    /// (rule O3): requests that start from here on see only `host`, while
    /// those already running, calls and tasks' calls included, finish on
    /// the host they started on. `instructions` are what sessions
    /// initialized from now on are sent. When the tool list differs from
    /// the old host's, every client is told, as of any registry change.
    ///
    /// Returns the old host, to be [shut down](ToolHost::shutdown) once
    /// [`Retired::finished`] says nothing runs on it any more.
    pub async fn replace_host(&self, host: ToolHost, instructions: Option<String>) -> Retired {
        let tools = |h: &ToolHost| -> Vec<Value> {
            h.tool_specs()
                .iter()
                .map(|spec| serde_json::to_value(convert::spec_to_mcp(spec)).unwrap_or_default())
                .collect()
        };
        let listed = tools(&host);
        *self
            .inner
            .instructions
            .write()
            .unwrap_or_else(|e| e.into_inner()) = instructions.filter(|t| !t.trim().is_empty());
        let old = self.inner.host.swap(Hosted::new(host));
        self.inner.reloads.fetch_add(1, Ordering::Relaxed);
        self.inner.replaced.send_modify(|n| *n += 1);
        let retired = Retired {
            host: old.host.clone(),
            gone: old.gone.clone(),
        };
        // The server's own hold: from here on, only requests hold it.
        drop(old);
        if tools(&retired.host) != listed {
            self.inner.announce_tool_list_changed().await;
        }
        retired
    }

    /// Counts a reload that was refused (the old host kept serving), for
    /// [`reload_counts`](Self::reload_counts).
    pub fn record_refused_reload(&self) {
        self.inner.refused_reloads.fetch_add(1, Ordering::Relaxed);
    }

    /// How often the host was replaced, and a reload refused.
    pub fn reload_counts(&self) -> ReloadCounts {
        ReloadCounts {
            applied: self.inner.reloads.load(Ordering::Relaxed),
            refused: self.inner.refused_reloads.load(Ordering::Relaxed),
        }
    }

    /// How many `tools/call` requests are being answered right now, over
    /// every session and transport (what a draining server waits for).
    pub fn calls_in_flight(&self) -> usize {
        self.inner.calls.load(Ordering::SeqCst)
    }

    /// Ends every open `subscriptions/listen` stream with its final answer
    /// (a graceful close, not a lost stream), answers new ones at once, and
    /// stops announcing registry changes, such as the tools a shutting-down
    /// host unloads. Returns once each stream's session has taken its
    /// answer; a session that has gone away counts as done.
    ///
    /// For a server about to end its sessions: an answer still queued when a
    /// session is cut has nowhere to go, and the session would log that it
    /// could not send it.
    pub async fn close_subscriptions(&self) {
        self.inner.closing.cancel();
        let answered: Vec<CancellationToken> = lock(&self.inner.sinks)
            .iter()
            .map(|(_, _, ct)| ct.clone())
            .collect();
        for ct in answered {
            ct.cancelled().await;
        }
        // Each session writes the answer it took from a task of its own:
        // give those tasks their turn before anything is cut.
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }

    /// Resolves once the server has listed its tools to a client (any
    /// client's `tools/list`, on any transport): the end of that client's
    /// start, after which work in the background no longer delays it.
    pub async fn tools_listed(&self) {
        self.inner.listed.cancelled().await;
    }

    /// Whether [`close_subscriptions`](Self::close_subscriptions) was called.
    pub fn is_closing(&self) -> bool {
        self.inner.closing.is_cancelled()
    }

    /// Starts, once, the task that turns registry changes into
    /// `list_changed` notifications, following the current host's registry
    /// when the host is replaced. It ends when the server is dropped.
    fn watch_registry(&self) {
        if self.inner.watching.swap(true, Ordering::SeqCst) {
            return;
        }
        let mut replaced = self.inner.replaced.subscribe();
        let weak: Weak<Inner> = Arc::downgrade(&self.inner);
        tokio::spawn(async move {
            loop {
                // Marked before the host is read: a replacement from here
                // on is seen, and the new registry followed.
                replaced.mark_unchanged();
                let mut changes = {
                    let Some(inner) = weak.upgrade() else { break };
                    let hosted = inner.host.load_full();
                    hosted.host.registry().changes()
                };
                changes.mark_unchanged();
                loop {
                    tokio::select! {
                        changed = changes.changed() => {
                            if changed.is_err() {
                                // That registry is gone: its host was
                                // replaced; wait to hear so.
                                if replaced.changed().await.is_err() {
                                    return;
                                }
                                break;
                            }
                            let Some(inner) = weak.upgrade() else { return };
                            inner.announce_tool_list_changed().await;
                        }
                        swapped = replaced.changed() => {
                            if swapped.is_err() {
                                return;
                            }
                            // `replace_host` announced the change itself.
                            break;
                        }
                    }
                }
            }
        });
    }
}

impl Inner {
    async fn announce_tool_list_changed(&self) {
        // A closing server's changes (tools unloaded at shutdown) would
        // reach sessions that are being ended: they are nobody's news.
        if self.closing.is_cancelled() {
            return;
        }
        let peers: Vec<Peer<RoleServer>> = {
            let mut peers = lock(&self.peers);
            peers.retain(|p| !p.is_transport_closed());
            peers.clone()
        };
        for peer in peers {
            if let Err(e) = peer.notify_tool_list_changed().await {
                tracing::debug!(target: "toolhost::mcp", "could not notify a client: {e}");
            }
        }
        let sinks: Vec<SubscriptionSink> = lock(&self.sinks)
            .iter()
            .map(|(_, s, _)| s.clone())
            .collect();
        for sink in sinks {
            if let Err(e) = sink.notify_tool_list_changed().await {
                tracing::debug!(target: "toolhost::mcp", "could not notify a subscription: {e}");
            }
        }
    }
}

impl McpServer {
    /// Who a question from the middle of the call (a remote server's,
    /// forwarded) goes to: the client's user, when the client's protocol
    /// and transport allow a request of the server's own.
    /// (A 2026-07-28 client that offers form elicitation is asked by multi
    /// round-trip instead: see [`round_trip_for`](Self::round_trip_for).)
    fn elicitor(&self, context: &RequestContext<RoleServer>) -> Arc<dyn Elicitor> {
        if is_modern(context) {
            Arc::new(NoOneToAsk(
                "the caller is an MCP client of protocol 2026-07-28 that does not offer form \
                 elicitation",
            ))
        } else if outside_session(context) {
            Arc::new(NoOneToAsk(
                "the caller is a 2025-era MCP client of a stateless server, which cannot be \
                 sent a request",
            ))
        } else if !offers_form(context.client_capabilities().as_ref()) {
            Arc::new(NoOneToAsk(
                "the caller is an MCP client that does not offer form elicitation",
            ))
        } else {
            Arc::new(ClientElicitor::new(context.peer.clone()))
        }
    }

    /// The multi round-trip of a call of a 2026-07-28 client that offers
    /// form elicitation: the server's sealer, what the retry's state and
    /// answers carry (a state refused is the client's invalid params, with
    /// the reason), and the elicitor that answers a remote server's
    /// questions from them, cancelling `run` at a question not answered
    /// yet. `None` for any other client.
    fn round_trip_for(
        &self,
        context: &RequestContext<RoleServer>,
        binding: &CallBinding<'_>,
        request: &CallToolRequestParams,
        run: CancellationToken,
    ) -> Result<Option<CallRoundTrip>, ErrorData> {
        if !is_modern(context) || !offers_form(context.client_capabilities().as_ref()) {
            return Ok(None);
        }
        let trips = self.round_trips();
        let carried = match &request.request_state {
            None => Carried::default(),
            Some(state) => trips
                .redeem(binding, state, request.input_responses.as_ref())
                .map_err(|refusal| {
                    tracing::info!(target: "toolhost::mcp", tool = %request.name, "requestState refused: {}", toolhost_core::error::report(&refusal));
                    ErrorData::invalid_params(refusal.to_string(), None)
                })?,
        };
        let elicitor = Arc::new(RoundTripElicitor::new(&carried, run));
        Ok(Some((trips, carried, elicitor)))
    }

    fn round_trips(&self) -> Arc<ApprovalRoundTrips> {
        self.inner.round_trips.load_full()
    }

    /// Answers `tools/call` (see [`ServerHandler::call_tool`], which boxes
    /// this future).
    async fn answer_call(
        &self,
        mut request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let _counted = InFlight::new(&self.inner.calls);
        // A tool outside the caller's scopes is refused over HTTP with 403
        // before the request gets here (see `http.rs`); this is the
        // backstop, and answers as for a tool that does not exist, since
        // to this caller it does not (rule A1).
        if !may_use(self, &context, &request.name) {
            return Err(ErrorData::invalid_params(
                format!("unknown tool `{}`", request.name),
                None,
            ));
        }
        // The host this call runs on, whatever replaces it meanwhile.
        let hosted = self.hosted();
        // The token may come in the params' `_meta` or the request's.
        let progress_token = request
            .progress_token()
            .or_else(|| context.meta.get_progress_token());
        // Arguments beyond the host's bounds never reach the pipeline: the
        // request itself is at fault, so this is a protocol error.
        // They are taken out of the request, not copied: nothing reads
        // them there again.
        let args =
            Arguments::from_json(Value::Object(request.arguments.take().unwrap_or_default()))
                .map_err(|e| ErrorData::invalid_params(e.to_string(), None))?;
        // What a round trip's state is bound to, after `args` went to the
        // call (the same shared value, not a copy).
        let arguments = args.clone();
        let caller = caller_identity(self, &context);
        if let Some(tasks) = self.tasks_for(&context) {
            let mut response = self
                .call_as_task(hosted, &tasks, request, args, &caller, &context)
                .await?;
            if let CallToolResponse::Complete(result) = &mut response {
                stamp_server_info(&mut result.meta);
            }
            return Ok(response);
        }
        // The client's `notifications/cancelled` cancels the call; a hook
        // that asks for approval asks this client's user, and so does a
        // remote server that asks in the middle of the call.
        let run = context.ct.child_token();
        let mut ctx = CallContext::new()
            .with_cancellation(run.clone())
            .with_tenant(caller.tenant.clone());
        // The caller's trace context, from `_meta` or else the HTTP
        // headers: the call's span is its child (rule X2).
        if let Some(trace) = crate::trace_context::of_call(&request, &context) {
            ctx = ctx.with_trace_context(trace);
        }
        let binding = CallBinding {
            tool: &request.name,
            arguments: arguments.as_value(),
            caller: &caller.identity,
        };
        // A 2026-07-28 client is asked by multi round-trip: what its retry
        // brings (the state's answers and its own) is redeemed once, for
        // the approval and the remote server's questions alike.
        let round_trip = match self.round_trip_for(&context, &binding, &request, run)? {
            Some((trips, carried, elicitor)) => {
                ctx = ctx.with_elicitor(elicitor.clone());
                Some((trips, carried, elicitor))
            }
            None => {
                ctx = ctx.with_elicitor(self.elicitor(&context));
                None
            }
        };
        let mut approval_round_trip = false;
        if self.inner.ask_clients.load(Ordering::Relaxed) {
            let modern = is_modern(&context);
            let approver: Arc<dyn toolhost_core::tool::approval::Approver> =
                match (&round_trip, modern) {
                    (Some((_, carried, _)), _) => {
                        approval_round_trip = true;
                        match carried.approval() {
                            toolhost_core::tool::approval::Approval::Deferred => {
                                Arc::new(DeferToCaller)
                            }
                            answer => Arc::new(Answered(answer)),
                        }
                    }
                    (None, false) if outside_session(&context) => {
                        Arc::new(CannotAsk(STATELESS_LEGACY))
                    }
                    (None, false) => Arc::new(ElicitApprover::new(context.peer.clone())),
                    (None, true) => Arc::new(CannotAsk(
                        "the MCP client cannot be asked: it does not offer form elicitation",
                    )),
                };
            ctx = ctx.with_approver(approver);
        }
        let outcome = match progress_token {
            // The client asked for progress: the call's reports go to it as
            // notifications on the call's own stream, all before the result.
            Some(token) => {
                let (sink, reports) = progress::channel();
                let call = hosted
                    .host
                    .invoke_tool(ctx.with_progress(sink), &request.name, args);
                let peer = &context.peer;
                progress::forwarding(call, reports, |p| {
                    let param = progress::to_mcp(token.clone(), p);
                    async move {
                        if let Err(e) = peer.notify_progress(param).await {
                            tracing::debug!(target: "toolhost::mcp", "progress not sent: {e}");
                        }
                    }
                })
                .await
            }
            None => hosted.host.invoke_tool(ctx, &request.name, args).await,
        };
        // A remote server's question stopped the run: the client is asked
        // it, with a sealed state carrying every answer so far, whatever
        // the stopped run ended with.
        let stopped_at = round_trip.as_ref().and_then(|(_, _, e)| e.stopped_at());
        if let (Some((trips, carried, _)), Some(question)) = (&round_trip, stopped_at) {
            if let Err(e) = &outcome {
                tracing::debug!(target: "toolhost::mcp", tool = %request.name, "the run stopped at a remote server's question: {e}");
            }
            let mut response: CallToolResponse =
                match trips.ask_question(&binding, carried, question) {
                    Ok(asked) => asked.into(),
                    Err(e) => convert::error_to_mcp(&ToolError::failed(e.to_string())).into(),
                };
            match &mut response {
                CallToolResponse::Complete(result) => stamp_server_info(&mut result.meta),
                CallToolResponse::InputRequired(result) => stamp_server_info(&mut result.meta),
                _ => {}
            }
            return Ok(response);
        }
        let mut response: CallToolResponse = match outcome {
            Ok(out) => convert::output_to_mcp(&out).into(),
            // Asking for a tool that is not there is the client's mistake,
            // not the tool's: a protocol error, as MCP specifies.
            Err(e @ ToolError::UnknownTool { .. }) => {
                return Err(ErrorData::invalid_params(e.to_string(), None));
            }
            // A quota's refusal is the caller's to wait out, not the
            // tool's failure: a protocol error naming the quota (rule A3).
            Err(e @ ToolError::OverQuota { .. }) => return Err(convert::over_quota_error(&e)),
            // A 2026-07-28 client is asked by multi round-trip: the question,
            // and a sealed state for its retry.
            Err(ToolError::ApprovalRequired { question, .. }) if approval_round_trip => {
                let (trips, carried, _) = round_trip.as_ref().expect("set with the flag");
                trips.ask_approval(&binding, carried, question).into()
            }
            Err(e) => convert::error_to_mcp(&e).into(),
        };
        if is_modern(&context) {
            match &mut response {
                CallToolResponse::Complete(result) => stamp_server_info(&mut result.meta),
                CallToolResponse::InputRequired(result) => stamp_server_info(&mut result.meta),
                _ => {}
            }
        }
        Ok(response)
    }
}

/// Whether a request speaks protocol 2026-07-28 or later.
fn is_modern(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28)
}

/// The `_meta` key of the server's identity in a 2026-07-28 result.
const SERVER_INFO_META: &str = "io.modelcontextprotocol/serverInfo";

/// Names the server in a 2026-07-28 result's `_meta` (a stateless client
/// learns who answered from each result, not from a handshake), unless the
/// result already does.
fn stamp_server_info(meta: &mut Option<MetaObject>) {
    meta.get_or_insert_with(MetaObject::new)
        .0
        .entry(SERVER_INFO_META)
        .or_insert_with(
            || serde_json::json!({"name": "toolhost", "version": env!("CARGO_PKG_VERSION")}),
        );
}

/// Why a 2025-era client of a stateless server cannot be asked.
const STATELESS_LEGACY: &str = "the MCP client cannot be asked: this server is stateless, and a \
     client of protocol 2025-11-25 or earlier can only be asked within a session (a 2026-07-28 \
     client is asked by multi round-trip)";

/// Whether a request came over HTTP without a session (a stateless server,
/// where a 2025-era client cannot be sent a request of the server's own).
fn outside_session(context: &RequestContext<RoleServer>) -> bool {
    context
        .extensions
        .get::<http::request::Parts>()
        .is_some_and(|p| !p.headers.contains_key(&crate::header_names::MCP_SESSION_ID))
}

/// Who made a request: what an approval's state, a task and a session are
/// bound to (rules N6, N8, A2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Caller {
    /// The caller's identity within its tenant, with the tenant: the
    /// token's subject with OAuth (a refreshed token is the same caller,
    /// rule A1), else the `Authorization` header it came with over HTTP
    /// (only digests of it are kept), else the one local peer of stdio.
    /// Two callers of different tenants never have the same identity.
    pub(crate) identity: String,
    /// The caller's tenant (rule A2).
    pub(crate) tenant: Arc<str>,
    /// The token's subject, with OAuth.
    pub(crate) subject: Option<String>,
}

impl McpServer {
    /// The caller whose HTTP request had `parts` (`None`: stdio's one
    /// local peer).
    pub(crate) fn caller_of(&self, parts: Option<&http::request::Parts>) -> Caller {
        let tenant = self.tenant_of_request(parts);
        #[cfg(feature = "http")]
        let subject = parts
            .and_then(|p| p.extensions.get::<crate::auth::Access>())
            .and_then(|a| a.subject())
            .map(str::to_owned);
        #[cfg(not(feature = "http"))]
        let subject: Option<String> = None;
        let who = match (
            &subject,
            parts.and_then(|p| p.headers.get(http::header::AUTHORIZATION)),
        ) {
            (Some(subject), _) => format!("oauth:{subject}"),
            (None, Some(value)) => format!("http:{}", String::from_utf8_lossy(value.as_bytes())),
            (None, None) if parts.is_some() => "http:anonymous".to_owned(),
            (None, None) => "local".to_owned(),
        };
        // The tenant first, its length-prefixed name before the rest: no
        // tenant's name and caller can spell another's.
        Caller {
            identity: format!("tenant:{}:{tenant}:{who}", tenant.len()),
            tenant,
            subject,
        }
    }
}

/// The caller of the request `context` is for: borrowed as the HTTP front
/// door found it, if it did, else worked out from the request's parts.
fn caller_identity<'a>(
    server: &McpServer,
    context: &'a RequestContext<RoleServer>,
) -> Cow<'a, Caller> {
    let parts = context.extensions.get::<http::request::Parts>();
    match parts.and_then(|p| p.extensions.get::<Arc<Caller>>()) {
        Some(caller) => Cow::Borrowed(caller),
        None => Cow::Owned(server.caller_of(parts)),
    }
}

/// Whether the caller may see and call `tool`: as its tenant's tools say
/// (rule A2), and over HTTP with OAuth, as its token's scopes say (rule
/// A1).
fn may_use(server: &McpServer, context: &RequestContext<RoleServer>, tool: &str) -> bool {
    let parts = context.extensions.get::<http::request::Parts>();
    let tenants = server.tenants();
    if !tenants.is_empty() {
        let tenant = server.tenant_of_request(parts);
        if !tenants.may_use(&tenant, tool) {
            return false;
        }
    }
    #[cfg(feature = "http")]
    if let Some(access) = context
        .extensions
        .get::<http::request::Parts>()
        .and_then(|p| p.extensions.get::<crate::auth::Access>())
    {
        return access.may_use(tool);
    }
    let _ = (context, tool);
    true
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        let builder = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed();
        let capabilities = if self.task_runtime().is_some() {
            builder.enable_tasks().build()
        } else {
            builder.build()
        };
        let config = ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("toolhost", env!("CARGO_PKG_VERSION")));
        let instructions = self
            .inner
            .instructions
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        match instructions {
            Some(text) => config.with_instructions(text),
            None => config,
        }
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        lock(&self.inner.peers).push(context.peer);
        self.watch_registry();
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        let mut accepted = SubscriptionFilter::new();
        accepted.tools_list_changed = requested.tools_list_changed;
        Some(accepted)
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let key = self.inner.next_sink.fetch_add(1, Ordering::Relaxed);
        let answered = context.request_context().ct.clone();
        lock(&self.inner.sinks).push((key, context.sink().clone(), answered));
        self.watch_registry();
        // The stream stays open until the client cancels it or goes away,
        // or the server closes it (checked after registering, so that a
        // stream opened while closing is never left open).
        tokio::select! {
            () = context.cancelled() => {}
            () = self.inner.closing.cancelled() => {}
        }
        lock(&self.inner.sinks).retain(|(k, _, _)| *k != key);
        Ok(())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = self
            .hosted()
            .host
            .tool_specs()
            .iter()
            .filter(|spec| may_use(self, &context, &spec.name))
            .map(|spec| convert::spec_to_mcp(spec))
            .collect();
        let mut result = ListToolsResult::with_all_items(tools);
        if is_modern(&context) {
            stamp_server_info(&mut result.meta);
        }
        // Checked first: cancelling takes the token's lock, which every
        // listing would otherwise contend for once it has fired.
        if !self.inner.listed.is_cancelled() {
            self.inner.listed.cancel();
        }
        Ok(result)
    }

    fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<CallToolResponse, ErrorData>> + Send + '_ {
        // Boxed: the call's future is about 9.5 KB (the pipeline's and the
        // paths around it), and rmcp moves each request's future whole
        // several times as it wraps and spawns it, a copy of it each time;
        // boxed, those moves carry a pointer. The task rmcp spawns for each
        // request shrinks from about 12 KB to the size of its other
        // requests' (BENCHMARKS.md, "Throughput under load").
        Box::pin(self.answer_call(request, context))
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let task = self
            .tasks_or_error()?
            .get(&caller_identity(self, &context), &request.task_id)
            .await?;
        Ok(GetTaskResult::new(task))
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.tasks_or_error()?
            .update(
                &caller_identity(self, &context),
                &request.task_id,
                request.input_responses,
            )
            .await
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.tasks_or_error()?
            .cancel(&caller_identity(self, &context), &request.task_id)
            .await
    }

    /// rmcp hands over a request for a method it knows but whose params do
    /// not decode (`tools/call` with `"arguments": 5`) as a custom request:
    /// that is the client's invalid params, not an unknown method.
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        let CustomRequest { method, params, .. } = request;
        let params = params.unwrap_or(Value::Null);
        let why = match method.as_str() {
            "tools/call" => serde_json::from_value::<CallToolRequestParams>(params).err(),
            "tools/list" => serde_json::from_value::<Option<PaginatedRequestParams>>(params).err(),
            _ => return Err(ErrorData::new(ErrorCode::METHOD_NOT_FOUND, method, None)),
        };
        let why = why.map_or_else(String::new, |e| format!(": {e}"));
        Err(ErrorData::invalid_params(
            format!("invalid params for `{method}`{why}"),
            None,
        ))
    }
}

#[cfg(all(test, feature = "client"))]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use rmcp::model::{ProtocolVersion, ServerNotification, SubscriptionFilter};
    use rmcp::service::NotificationContext;
    use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt as _, RoleClient, ServiceExt};
    use serde_json::json;
    use tokio::sync::Notify;

    use super::*;
    use toolhost_core::output::ToolOutput;
    use toolhost_core::tool::{FnTool, ToolSpec};

    fn tool(name: &str) -> Arc<dyn toolhost_core::tool::Tool> {
        FnTool::arc(
            ToolSpec::new(name, "test tool", json!({"type": "object"})),
            |_, _| async { Ok(ToolOutput::silent("quiet")) },
        )
    }

    /// Serves `host` on one end of an in-memory pipe; returns the other.
    fn serve_in_memory(host: &ToolHost) -> tokio::io::DuplexStream {
        serve_server_in_memory(&McpServer::new(host.clone()))
    }

    /// `server` answering on one end of an in-memory pipe: the other end,
    /// for a client.
    fn serve_server_in_memory(server: &McpServer) -> tokio::io::DuplexStream {
        let (client, server_end) = tokio::io::duplex(64 << 10);
        let handler = server.clone();
        tokio::spawn(async move {
            if let Ok(running) = handler.serve(server_end).await {
                let _ = running.waiting().await;
            }
        });
        client
    }

    #[derive(Clone, Default)]
    struct Listener(Arc<Notify>);

    impl ClientHandler for Listener {
        async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
            self.0.notify_one();
        }
    }

    /// `f`'s output, as soon as it comes; 60 s only catches a hang.
    async fn within<T>(what: &str, f: impl Future<Output = T>) -> T {
        tokio::time::timeout(Duration::from_secs(60), f)
            .await
            .unwrap_or_else(|_| panic!("no {what} within 60 s"))
    }

    #[tokio::test]
    async fn w7_tools_listed_resolves_once_a_client_has_the_tool_list() {
        let host = ToolHost::new();
        host.register_tool(tool("first")).unwrap();
        let server = McpServer::new(host.clone());
        let client = ().serve(serve_server_in_memory(&server)).await.unwrap();
        // A handshake and a call are not a listing.
        let _ = client
            .call_tool(CallToolRequestParams::new("first"))
            .await
            .unwrap();
        let listed = server.tools_listed();
        tokio::pin!(listed);
        tokio::select! {
            biased;
            () = listed.as_mut() => panic!("signalled before any tools/list"),
            () = std::future::ready(()) => {}
        }
        client.list_all_tools().await.unwrap();
        within("the listing's signal", listed).await;
        // Later waits resolve at once.
        within("the listing's signal again", server.tools_listed()).await;
    }

    #[tokio::test]
    async fn t3_registry_changes_reach_initialized_clients_as_list_changed() {
        let host = ToolHost::new();
        host.register_tool(tool("first")).unwrap();
        let listener = Listener::default();
        let client = listener
            .clone()
            .serve(serve_in_memory(&host))
            .await
            .unwrap();
        let info = client.peer_info().unwrap();
        let tools = info.capabilities.tools.as_ref().unwrap();
        assert_eq!(tools.list_changed, Some(true));
        let names = |tools: Vec<rmcp::model::Tool>| -> Vec<String> {
            tools.into_iter().map(|t| t.name.to_string()).collect()
        };
        assert_eq!(names(client.list_all_tools().await.unwrap()), ["first"]);

        host.register_tool(tool("second")).unwrap();
        within("tools/list_changed", listener.0.notified()).await;
        assert_eq!(
            names(client.list_all_tools().await.unwrap()),
            ["first", "second"]
        );
        let result = client
            .call_tool(CallToolRequestParams::new("second"))
            .await
            .unwrap();
        let wire = serde_json::to_value(&result).unwrap();
        assert_eq!(
            wire["content"][0]["annotations"]["audience"],
            json!(["assistant"])
        );
        client.cancel().await.unwrap();
    }

    #[tokio::test]
    async fn t3_registry_changes_reach_subscribed_clients_of_the_newest_protocol() {
        let host = ToolHost::new();
        let client = ()
            .serve_with_lifecycle(
                serve_in_memory(&host),
                ClientLifecycleMode::Auto {
                    preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                    legacy_version: Some(ProtocolVersion::V_2025_11_25),
                },
            )
            .await
            .unwrap();
        let mut subscription = client
            .listen(SubscriptionFilter::builder().tools_list_changed().build())
            .await
            .unwrap();
        host.register_tool(tool("late")).unwrap();
        let notification = within("notification", subscription.next()).await.unwrap();
        assert!(
            matches!(
                notification,
                Some(ServerNotification::ToolListChangedNotification(_))
            ),
            "{notification:?}"
        );
        client.cancel().await.unwrap();
    }

    /// A tool that waits for `gate` before answering `text`.
    fn gated(
        name: &str,
        text: &'static str,
        gate: Arc<Notify>,
    ) -> Arc<dyn toolhost_core::tool::Tool> {
        FnTool::arc(
            ToolSpec::new(name, "test tool", json!({"type": "object"})),
            move |_, _| {
                let gate = gate.clone();
                async move {
                    gate.notified().await;
                    Ok(ToolOutput::text(text))
                }
            },
        )
    }

    #[tokio::test]
    async fn o3_a_replaced_host_serves_new_requests_while_calls_in_flight_finish_on_the_old() {
        let gate = Arc::new(Notify::new());
        let old = ToolHost::new();
        old.register_tool(gated("work", "old", gate.clone()))
            .unwrap();
        let server = McpServer::new(old.clone());
        let listener = Listener::default();
        let client = listener
            .clone()
            .serve(serve_server_in_memory(&server))
            .await
            .unwrap();
        // A 2026-07-28 client listening on its own stream, beside the session.
        let modern = ()
            .serve_with_lifecycle(
                serve_server_in_memory(&server),
                ClientLifecycleMode::Auto {
                    preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                    legacy_version: Some(ProtocolVersion::V_2025_11_25),
                },
            )
            .await
            .unwrap();
        let mut subscription = modern
            .listen(SubscriptionFilter::builder().tools_list_changed().build())
            .await
            .unwrap();

        // A call in flight on the old host.
        let peer = client.peer().clone();
        let in_flight =
            tokio::spawn(async move { peer.call_tool(CallToolRequestParams::new("work")).await });
        while server.calls_in_flight() == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }

        let new = ToolHost::new();
        new.register_tool(tool("work")).unwrap();
        new.register_tool(tool("extra")).unwrap();
        let retired = server.replace_host(new.clone(), None).await;
        assert_eq!(server.reload_counts().applied, 1);
        within("tools/list_changed", listener.0.notified()).await;
        let notification = within("notification", subscription.next()).await.unwrap();
        assert!(
            matches!(
                notification,
                Some(ServerNotification::ToolListChangedNotification(_))
            ),
            "{notification:?}"
        );
        let names: Vec<String> = client
            .list_all_tools()
            .await
            .unwrap()
            .into_iter()
            .map(|t| t.name.to_string())
            .collect();
        assert_eq!(names, ["extra", "work"]);
        // A new call runs on the new host.
        let fresh = client
            .call_tool(CallToolRequestParams::new("work"))
            .await
            .unwrap();
        assert_eq!(
            serde_json::to_value(&fresh).unwrap()["content"][0]["text"],
            "quiet"
        );

        // The old host is not finished while its call runs; the call ends on it.
        let finished = tokio::spawn(retired.finished());
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(
            !finished.is_finished(),
            "the old host's call is still running"
        );
        gate.notify_one();
        let result = within("the old call", in_flight).await.unwrap().unwrap();
        assert_eq!(
            serde_json::to_value(&result).unwrap()["content"][0]["text"],
            "old"
        );
        let _old = within("the old host's end", finished).await.unwrap();

        // The new host's own changes are announced: the watch follows it.
        new.register_tool(tool("later")).unwrap();
        within("tools/list_changed", listener.0.notified()).await;
        client.cancel().await.unwrap();
        modern.cancel().await.unwrap();
    }

    /// One progress notification: its token, progress and message.
    type Report = (String, f64, Option<String>);

    /// Collects the progress notifications a client receives.
    #[derive(Clone, Default)]
    struct Progressed(Arc<std::sync::Mutex<Vec<Report>>>);

    impl ClientHandler for Progressed {
        async fn on_progress(
            &self,
            params: rmcp::model::ProgressNotificationParam,
            _context: NotificationContext<RoleClient>,
        ) {
            let token = match &params.progress_token.0 {
                rmcp::model::NumberOrString::String(s) => s.to_string(),
                rmcp::model::NumberOrString::Number(n) => n.to_string(),
            };
            self.0
                .lock()
                .unwrap()
                .push((token, params.progress, params.message));
        }
    }

    #[tokio::test]
    async fn n3_a_tools_progress_reaches_the_client_that_asked_before_the_result() {
        let host = ToolHost::new();
        host.register_tool(FnTool::arc(
            ToolSpec::new("index", "reports progress", json!({"type": "object"})),
            |ctx: CallContext, _| async move {
                for step in 0..3 {
                    ctx.report_progress(f64::from(step), Some(2.0), Some(&format!("step {step}")));
                    tokio::task::yield_now().await;
                }
                Ok(ToolOutput::text("indexed"))
            },
        ))
        .unwrap();
        let progressed = Progressed::default();
        let client = progressed
            .clone()
            .serve(serve_in_memory(&host))
            .await
            .unwrap();
        // rmcp's client asks for progress on every request, under a token
        // of its own.
        let result = client
            .call_tool(CallToolRequestParams::new("index"))
            .await
            .unwrap();
        assert_eq!(result.content[0].as_text().unwrap().text, "indexed");
        // The server sends every report before the result (see
        // `progress::forwarding`); the client hands notifications to its
        // handler on tasks of their own, so they may land a moment later.
        within("three progress reports", async {
            while progressed.0.lock().unwrap().len() < 3 {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await;
        let reports = progressed.0.lock().unwrap().clone();
        let token = &reports[0].0;
        assert!(!token.is_empty());
        assert_eq!(
            reports,
            [
                (token.clone(), 0.0, Some("step 0".to_owned())),
                (token.clone(), 1.0, Some("step 1".to_owned())),
                (token.clone(), 2.0, Some("step 2".to_owned())),
            ]
        );
        client.cancel().await.unwrap();
    }

    #[tokio::test]
    async fn n5_an_unknown_method_is_method_not_found_and_bad_params_are_invalid_params() {
        use rmcp::ServiceError;
        use rmcp::model::{ClientRequest, CustomRequest};

        let host = ToolHost::new();
        let client = ().serve(serve_in_memory(&host)).await.unwrap();
        let ask = |method: &str, params: Option<Value>| {
            client.send_request(ClientRequest::CustomRequest(CustomRequest::new(
                method, params,
            )))
        };
        match ask("no/such", None).await {
            Err(ServiceError::McpError(e)) => {
                assert_eq!(e.code, ErrorCode::METHOD_NOT_FOUND, "{e:?}");
            }
            other => panic!("expected method not found, got {other:?}"),
        }
        match ask("tools/call", Some(json!({"name": "x", "arguments": 5}))).await {
            Err(ServiceError::McpError(e)) => {
                assert_eq!(e.code, ErrorCode::INVALID_PARAMS, "{e:?}");
                assert!(e.message.contains("tools/call"), "{e:?}");
            }
            other => panic!("expected invalid params, got {other:?}"),
        }
        client.cancel().await.unwrap();
    }
}

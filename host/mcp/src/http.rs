//! Serving MCP over streamable HTTP at `/mcp`, with the guards a local
//! server needs: an optional bearer token, `Host` and `Origin` checks
//! against DNS rebinding and cross-site requests, a request size cap and a
//! cap on open sessions; or, for a team, OAuth access tokens checked by a
//! [`ResourceServer`] (rule A1).

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::serve::ListenerExt as _;
use http_body_util::{BodyExt as _, LengthLimitError, Limited};
use rmcp::model::{ClientJsonRpcMessage, ProtocolVersion};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::auth::{Access, ResourceServer};
use super::error::{OptionsError, ServeError};
use super::header_names;
use super::server::McpServer;
use super::session_owner::{self, Admission, SessionOwners};
use super::shared_service::SharedMcpService;
use super::undecodable_frame_reply::Refusal;

/// The path the MCP endpoint is served at.
pub const MCP_PATH: &str = "/mcp";

/// The default cap on a request body: 4 MiB.
pub const DEFAULT_MAX_REQUEST_BYTES: usize = 4 << 20;

/// The default cap on sessions open at once.
pub const DEFAULT_MAX_SESSIONS: usize = 256;

/// The path of the liveness check: 200 while the process serves.
pub const HEALTH_PATH: &str = "/healthz";

/// The path of the readiness check: 200 while the server takes new work,
/// 503 once it drains.
pub const READY_PATH: &str = "/readyz";

/// The default time calls in flight get to finish after a shutdown signal.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(30);

/// The default time a draining server keeps accepting requests.
pub const DEFAULT_DRAIN_DELAY: Duration = Duration::from_secs(2);

/// Browser origins always allowed: pages served from this machine, on any
/// port.
const LOCAL_ORIGINS: [&str; 6] = [
    "http://localhost:*",
    "https://localhost:*",
    "http://127.0.0.1:*",
    "https://127.0.0.1:*",
    "http://[::1]:*",
    "https://[::1]:*",
];

/// `Host` header values always allowed: the loopback names.
const LOCAL_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// How the HTTP endpoint guards itself.
#[derive(Clone)]
pub struct HttpOptions {
    /// The token every request must present as `Authorization: Bearer
    /// TOKEN`; without one, requests are not authenticated (fine on
    /// loopback for a single user, not elsewhere). A wrong or missing token
    /// is refused with 401. Excludes [`oauth`](Self::oauth).
    pub bearer_token: Option<String>,
    /// Check OAuth access tokens instead (rule A1): every request to the
    /// MCP endpoint must carry one that the resource server accepts (401
    /// with a `WWW-Authenticate` challenge naming its metadata if not,
    /// 503 if it cannot check now), its scopes decide the tools the caller
    /// sees and may call (403 for a `tools/call` outside them), and the
    /// metadata is served at its well-known paths.
    pub oauth: Option<Arc<ResourceServer>>,
    /// Browser origins allowed besides the local ones (`http://localhost`,
    /// `127.0.0.1` and `[::1]` on any port, http or https), each
    /// `scheme://host[:port]` or `scheme://host:*`. A request without an
    /// `Origin` header (every non-browser client) is allowed; any other
    /// origin is refused with 403, so a web page cannot drive the server.
    pub allowed_origins: Vec<String>,
    /// `Host` header values allowed besides the loopback names and the
    /// address the server is bound to (say the machine's DNS name when
    /// serving on `0.0.0.0`). Others are refused with 403: this is what
    /// stops a DNS-rebinding page from reaching a loopback server.
    pub allowed_hosts: Vec<String>,
    /// The largest request body accepted; larger ones are refused with 413.
    pub max_request_bytes: usize,
    /// How many sessions may be open at once. A request that would open
    /// one more is refused with 503 and `Retry-After`; sessions close when
    /// their client deletes them or after five idle minutes. Each session
    /// holds only a little state (the host and its compiled plugins are
    /// shared), but without a cap a client could open them without end.
    pub max_sessions: usize,
    /// Serve every request on its own, as MCP's stateless streamable HTTP
    /// does (rule H1): no session, no state kept between requests, so any
    /// replica behind a load balancer can answer any request. What needs a
    /// session is given up: server-to-client notifications outside a
    /// request (`tools/list_changed`) and resuming a stream.
    pub stateless: bool,
    /// Answer a request served without a session (every request of a
    /// [`stateless`](Self::stateless) server, every request of a 2026-07-28
    /// client) with one `application/json` body when its answer is the only
    /// message, instead of a one-event SSE stream. A call that sends
    /// anything before its answer (progress, a question) still gets the
    /// stream. The price: the response's headers wait for the answer, so a
    /// proxy that cuts an HTTP response silent for too long may cut a slow
    /// call that the stream's keep-alive would have kept open.
    pub json_response: bool,
    /// How long, after the shutdown signal, the server keeps accepting
    /// requests while its readiness check already says 503 (rule H3), so
    /// that a load balancer checking it stops sending before it stops
    /// accepting. Set it above the balancer's check interval times its
    /// fall count. Capped by `grace`.
    pub drain_delay: Duration,
    /// How long, after the shutdown signal, calls in flight get to finish
    /// (rule H3); whatever still runs then is cut.
    pub grace: Duration,
    /// Serve the host's metrics at [`METRICS_PATH`](crate::METRICS_PATH)
    /// for Prometheus (rule X1), to whom the endpoint says.
    pub metrics: Option<crate::MetricsEndpoint>,
}

impl Default for HttpOptions {
    fn default() -> Self {
        Self {
            bearer_token: None,
            oauth: None,
            allowed_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            max_request_bytes: DEFAULT_MAX_REQUEST_BYTES,
            max_sessions: DEFAULT_MAX_SESSIONS,
            stateless: false,
            json_response: false,
            drain_delay: DEFAULT_DRAIN_DELAY,
            grace: DEFAULT_GRACE,
            metrics: None,
        }
    }
}

impl std::fmt::Debug for HttpOptions {
    /// Never prints the token.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpOptions")
            .field("bearer_token", &self.bearer_token.as_ref().map(|_| "…"))
            .field("oauth", &self.oauth.as_ref().map(|o| o.resource()))
            .field("allowed_origins", &self.allowed_origins)
            .field("allowed_hosts", &self.allowed_hosts)
            .field("max_request_bytes", &self.max_request_bytes)
            .field("max_sessions", &self.max_sessions)
            .field("stateless", &self.stateless)
            .field("json_response", &self.json_response)
            .field("drain_delay", &self.drain_delay)
            .field("grace", &self.grace)
            .field("metrics", &self.metrics)
            .finish()
    }
}

impl HttpOptions {
    /// Checks the options; the error names the bad value. An empty token
    /// and an origin that is not `scheme://host[:port|:*]` are refused (an
    /// origin that did not parse would otherwise match nothing, silently).
    pub fn validate(&self) -> Result<(), OptionsError> {
        if self
            .bearer_token
            .as_deref()
            .is_some_and(|t| t.trim().is_empty())
        {
            return Err(OptionsError::EmptyToken);
        }
        if self.bearer_token.is_some() && self.oauth.is_some() {
            return Err(OptionsError::TokenAndOAuth);
        }
        for origin in &self.allowed_origins {
            check_origin(origin)?;
        }
        if self.max_request_bytes == 0 {
            return Err(OptionsError::ZeroRequestCap);
        }
        if self.max_sessions == 0 {
            return Err(OptionsError::ZeroSessionCap);
        }
        Ok(())
    }
}

fn check_origin(origin: &str) -> Result<(), OptionsError> {
    let bad = |why: &'static str| {
        Err(OptionsError::BadOrigin {
            origin: origin.to_owned(),
            why,
        })
    };
    let base = origin.strip_suffix(":*").unwrap_or(origin);
    let Ok(uri) = base.parse::<axum::http::Uri>() else {
        return bad("does not parse");
    };
    if !matches!(uri.scheme_str(), Some("http" | "https")) {
        return bad("needs an http or https scheme");
    }
    if uri.authority().is_none() {
        return bad("has no host");
    }
    if !matches!(uri.path(), "" | "/") || uri.query().is_some() {
        return bad("has a path; an origin has none");
    }
    if origin.ends_with(":*") && uri.port().is_some() {
        return bad("has both a port and `:*`");
    }
    Ok(())
}

/// Serves `server` on `listener` at [`MCP_PATH`], with [`HEALTH_PATH`] and
/// [`READY_PATH`] beside it, until `shutdown` fires and the server has
/// drained.
///
/// Every session shares the one [`McpServer`], and so the one host and its
/// compiled plugins. Sessions follow the streamable HTTP transport
/// (`Mcp-Session-Id`, server notifications on a GET stream), or none exist
/// with [`HttpOptions::stateless`]; a session idle for five minutes is
/// closed.
///
/// When `shutdown` fires, the server drains (rule H3): the readiness check
/// answers 503 at once and no new session is opened, requests are still
/// accepted for [`HttpOptions::drain_delay`], then the listener closes and
/// the function returns once the requests in flight are answered and every
/// `subscriptions/listen` stream has been closed with its answer (see
/// [`McpServer::close_subscriptions`]), or when [`HttpOptions::grace`] has
/// passed since the signal, cutting what still runs (open sessions and
/// their streams).
pub async fn serve_http(
    server: McpServer,
    listener: TcpListener,
    options: HttpOptions,
    shutdown: CancellationToken,
) -> Result<(), ServeError> {
    options.validate()?;
    let local = listener.local_addr()?;
    let (grace, drain_delay) = (options.grace, options.drain_delay.min(options.grace));
    // Ends sessions and streams: only when the grace is over.
    let cut = CancellationToken::new();
    let draining = Arc::new(AtomicBool::new(false));
    let calls = server.clone();
    let app = router(server, local, options, cut.clone(), draining.clone())?;
    // Answers go out as several small writes (an SSE priming event, the
    // message, the end of the stream): without TCP_NODELAY, Nagle's
    // algorithm holds them until the client's delayed ACK, some 40 ms.
    let listener = listener.tap_io(|tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(target: "toolhost::mcp", "TCP_NODELAY not set: {e}");
        }
    });
    let stop_accepting = {
        let shutdown = shutdown.clone();
        async move {
            shutdown.cancelled().await;
            draining.store(true, Ordering::SeqCst);
            tracing::info!(
                target: "toolhost::mcp",
                "draining: unready now, accepting requests for {} ms more, then finishing those in flight",
                drain_delay.as_millis()
            );
            tokio::time::sleep(drain_delay).await;
        }
    };
    let served = axum::serve(listener, app).with_graceful_shutdown(stop_accepting);
    // Once no call runs any more, sessions and their streams end too: an
    // open stream (a client's GET) would otherwise hold the server until
    // the grace is over.
    let calls_done = async {
        shutdown.cancelled().await;
        tokio::time::sleep(drain_delay).await;
        while calls.calls_in_flight() > 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // `subscriptions/listen` streams end with their answer while their
        // sessions can still send it: cut, a session drops what it still
        // holds and logs an error for it.
        calls.close_subscriptions().await;
        cut.cancel();
        std::future::pending::<()>().await
    };
    let deadline = async {
        shutdown.cancelled().await;
        tokio::time::sleep(grace).await;
    };
    tokio::select! {
        served = served => served?,
        () = calls_done => {}
        () = deadline => tracing::warn!(
            target: "toolhost::mcp",
            "the grace of {} ms is over: cutting the calls and streams still open",
            grace.as_millis()
        ),
    }
    cut.cancel();
    Ok(())
}

/// The [`MCP_PATH`] endpoint with every check in front of it, for a server
/// listening on `local`: what [`serve_http`] serves, and what the fuzz
/// targets send requests to without a socket.
pub(crate) fn router(
    server: McpServer,
    local: SocketAddr,
    options: HttpOptions,
    shutdown: CancellationToken,
    draining: Arc<AtomicBool>,
) -> Result<axum::Router, OptionsError> {
    options.validate()?;
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(allowed_hosts(local, &options.allowed_hosts))
        .with_allowed_origins(
            LOCAL_ORIGINS
                .iter()
                .map(|o| o.to_string())
                .chain(options.allowed_origins.iter().cloned()),
        )
        .enforce_origin_validation()
        .with_max_request_body_bytes(options.max_request_bytes)
        .with_legacy_session_mode(!options.stateless)
        .with_json_response(options.json_response)
        .with_cancellation_token(shutdown.child_token());
    let sessions = Arc::new(LocalSessionManager::default());
    let quota_server = server.clone();
    let service = SharedMcpService::new(StreamableHttpService::new(
        move || Ok(server.clone()),
        sessions.clone(),
        config,
    ));
    let front = Arc::new(Front {
        // A stateless server opens no session: nothing to own or cap.
        owners: (!options.stateless).then(|| SessionOwners::new(sessions.clone())),
        cap: (!options.stateless).then(|| SessionCap {
            sessions,
            opening: AtomicUsize::new(0),
            max: options.max_sessions,
            draining: draining.clone(),
        }),
        max_request_bytes: options.max_request_bytes,
        oauth: options.oauth.clone(),
        server: quota_server,
    });
    let app = axum::Router::new().route_service(MCP_PATH, service);
    // /metrics behind the same guard as /mcp, unless it has its own (rule X1).
    let mut app = crate::metrics_endpoint::route_as_mcp(app, options.metrics.as_ref())
        .layer(middleware::from_fn_with_state(front, front_door));
    if let Some(token) = options.bearer_token {
        app = app.layer(middleware::from_fn_with_state(
            Arc::<str>::from(token.trim()),
            require_token,
        ));
    }
    if let Some(oauth) = &options.oauth {
        app = app.layer(middleware::from_fn_with_state(oauth.clone(), require_oauth));
        // The metadata is public, like the checks below: a client reads
        // it before it has a token.
        for path in oauth.metadata_paths(MCP_PATH) {
            let oauth = oauth.clone();
            app = app.route(
                &path,
                axum::routing::get(move || async move {
                    (
                        [
                            (header::CONTENT_TYPE, "application/json"),
                            (header::CACHE_CONTROL, "max-age=300"),
                        ],
                        oauth.metadata_document().to_owned(),
                    )
                }),
            );
        }
    }
    let app = crate::metrics_endpoint::route_own(app, options.metrics.as_ref());
    // The checks come after the layers, so no token or Host check applies
    // to them: a load balancer asks without credentials. They say one word
    // and nothing else.
    Ok(app
        .route(HEALTH_PATH, axum::routing::get(|| async { "ok\n" }))
        .route(
            READY_PATH,
            axum::routing::get(move || {
                let draining = draining.load(Ordering::SeqCst);
                async move {
                    if draining {
                        (StatusCode::SERVICE_UNAVAILABLE, "draining\n")
                    } else {
                        (StatusCode::OK, "ready\n")
                    }
                }
            }),
        ))
}

fn allowed_hosts(local: SocketAddr, extra: &[String]) -> Vec<String> {
    let mut hosts: Vec<String> = LOCAL_HOSTS.iter().map(|h| h.to_string()).collect();
    let ip = local.ip();
    if !ip.is_unspecified() && !ip.is_loopback() {
        hosts.push(match ip {
            IpAddr::V4(v4) => v4.to_string(),
            IpAddr::V6(v6) => v6.to_string(),
        });
    }
    hosts.extend(extra.iter().cloned());
    hosts
}

/// What the MCP endpoint checks in front of rmcp: the session cap, the
/// refusal of malformed bodies, and the status of a session's `DELETE`.
/// One layer for the three: each axum layer costs every request an
/// allocation and a clone of the service below it (measured in
/// BENCHMARKS.md).
struct Front {
    /// Whose each session is; none on a stateless server.
    owners: Option<SessionOwners>,
    /// The session cap; none on a stateless server.
    cap: Option<SessionCap>,
    max_request_bytes: usize,
    /// The resource server, whose scopes a `tools/call` is held to.
    oauth: Option<Arc<ResourceServer>>,
    /// The server, whose host's quotas a `tools/call` is checked against
    /// for an early 429 (rule A3).
    server: McpServer,
}

/// Applies [`Front`]'s checks to a request for the MCP endpoint: first,
/// that a session it names is its caller's (rule A2).
async fn front_door(State(front): State<Arc<Front>>, req: Request, next: Next) -> Response {
    let Some(owners) = &front.owners else {
        return checked(&front, req, next).await;
    };
    let (mut parts, body) = req.into_parts();
    let caller = Arc::new(front.server.caller_of(Some(&parts)));
    let method = parts.method.clone();
    let admission = owners.admit(&parts.headers, &caller);
    // The MCP handler finds the caller here rather than working it out
    // again from the same parts (a crate-private type: nothing outside
    // this crate can put one there).
    parts.extensions.insert(caller.clone());
    let req = Request::from_parts(parts, body);
    match admission {
        Admission::Foreign => {
            tracing::debug!(target: "toolhost::mcp", "refused a request naming another caller's session");
            session_owner::as_unknown(&method)
        }
        Admission::Admitted if method == axum::http::Method::DELETE => {
            let headers = req.headers().clone();
            let response = checked(&front, req, next).await;
            if response.status().is_success() {
                owners.closed(&headers);
            }
            response
        }
        Admission::Admitted => checked(&front, req, next).await,
        Admission::Opens => {
            let response = checked(&front, req, next).await;
            owners.opened(response.headers(), &caller).await;
            response
        }
    }
}

/// The checks of [`front_door`] past the session's owner.
async fn checked(front: &Front, req: Request, next: Next) -> Response {
    if req.method() == axum::http::Method::DELETE {
        return session_closed(next.run(req).await);
    }
    if req.method() != axum::http::Method::POST {
        return next.run(req).await;
    }
    // Held until answered: by then the new session, if any, is counted.
    let _reservation = match &front.cap {
        Some(cap) if may_open_session(req.headers()) => match cap.reserve().await {
            Ok(reservation) => Some(reservation),
            Err(refusal) => return refusal,
        },
        _ => None,
    };
    if !is_json(req.headers()) {
        return next.run(req).await;
    }
    refuse_malformed(front, req, next).await
}

/// Whether a POST to a server with sessions may open one. Only an
/// `initialize` without `Mcp-Session-Id` does; a request of protocol
/// 2026-07-28 or later never does (rmcp answers it on its own, as stateless
/// HTTP), so neither the cap nor a draining server's refusal applies to it.
/// The headers tell, without the body being read: such a request names its
/// version in `MCP-Protocol-Version` and its method in `Mcp-Method`, and
/// from that version on rmcp holds the header to the body before a session
/// opens (an `initialize` under another `Mcp-Method` is refused, -32020).
/// The version is compared as rmcp compares it, as text.
fn may_open_session(headers: &HeaderMap) -> bool {
    if headers.contains_key(&header_names::MCP_SESSION_ID) {
        return false;
    }
    let modern = headers
        .get(&header_names::MCP_PROTOCOL_VERSION)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v >= ProtocolVersion::STANDARD_HEADERS.as_str());
    let mut methods = headers.get_all(&header_names::MCP_METHOD).iter();
    let names_another_method =
        methods.next().is_some_and(|m| m != "initialize") && methods.next().is_none();
    !(modern && names_another_method)
}

/// The session cap: the sessions open, and the requests that may be opening
/// one right now; and whether the server drains (it then opens no new one).
struct SessionCap {
    sessions: Arc<LocalSessionManager>,
    opening: AtomicUsize,
    max: usize,
    draining: Arc<AtomicBool>,
}

/// Releases a reservation made by [`SessionCap::reserve`].
struct Opening<'a>(&'a AtomicUsize);

impl Drop for Opening<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl SessionCap {
    /// A place for a request that may open a session (see
    /// [`may_open_session`]), or the 503 that refuses it beyond the cap or
    /// while draining.
    ///
    /// The place is reserved before the open sessions are counted and kept
    /// until the request is answered, so concurrent requests can overcount
    /// but never exceed the cap.
    async fn reserve(&self) -> Result<Opening<'_>, Response> {
        if self.draining.load(Ordering::SeqCst) {
            return Err((
                StatusCode::SERVICE_UNAVAILABLE,
                [(header::RETRY_AFTER, "1")],
                "Service Unavailable: this server is shutting down; open the session elsewhere\n",
            )
                .into_response());
        }
        let opening = self.opening.fetch_add(1, Ordering::AcqRel) + 1;
        let reservation = Opening(&self.opening);
        let open = self.sessions.sessions.read().await.len();
        if open + opening > self.max {
            tracing::warn!(target: "toolhost::mcp", "refused a new MCP session: {open} open, the cap is {}", self.max);
            return Err((
                StatusCode::SERVICE_UNAVAILABLE,
                [(header::RETRY_AFTER, "5")],
                format!(
                    "Service Unavailable: {} MCP sessions are open, the most this server allows; \
                     close one (DELETE with its Mcp-Session-Id) or try again later\n",
                    self.max
                ),
            )
                .into_response());
        }
        Ok(reservation)
    }
}

/// Answers a JSON POST whose body is not a JSON-RPC message with 400 and a
/// JSON-RPC error ([`Refusal`]: a parse error for JSON that cannot be
/// read, with the request's id when it can be read), where rmcp would
/// answer 415 with a serde message. The body is read here, up to the size
/// cap (413 beyond it), and handed on whole; it is decoded a second time
/// only when rmcp answers 415, so a well-formed request is decoded once
/// (by rmcp), not twice (measured in BENCHMARKS.md). A 415 whose body does
/// decode is rmcp's own answer about the content type, and goes out as is.
async fn refuse_malformed(front: &Front, req: Request, next: Next) -> Response {
    let max = front.max_request_bytes;
    let (parts, body) = req.into_parts();
    let bytes = match Limited::new(body, max).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(e) if e.downcast_ref::<LengthLimitError>().is_some() => {
            return (
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("Payload Too Large: request body exceeds {max} bytes"),
            )
                .into_response();
        }
        Err(e) => {
            return (
                StatusCode::BAD_REQUEST,
                format!("Bad Request: cannot read the request body: {e}"),
            )
                .into_response();
        }
    };
    if let Err(repeated) = toolhost_core::tool::check_unique_keys(&bytes) {
        let refusal = Refusal::repeated_key(&bytes, &repeated);
        tracing::debug!(target: "toolhost::mcp", "refused an MCP request: {}", refusal.error.message);
        return (
            StatusCode::BAD_REQUEST,
            [(header::CONTENT_TYPE, "application/json")],
            refusal.to_json(),
        )
            .into_response();
    }
    if let (Some(oauth), Some(access)) = (&front.oauth, parts.extensions.get::<Access>())
        && let Some(refusal) = refuse_out_of_scope(oauth, access, &bytes)
    {
        return refusal;
    }
    if front.server.has_quotas()
        && let Some(refusal) = refuse_over_quota(&front.server, &parts, &bytes)
    {
        return refusal;
    }
    let response = next
        .run(Request::from_parts(parts, Body::from(bytes.clone())))
        .await;
    if response.status() != StatusCode::UNSUPPORTED_MEDIA_TYPE {
        return response;
    }
    match serde_json::from_slice::<ClientJsonRpcMessage>(&bytes) {
        Ok(_) => response,
        Err(e) => {
            let refusal = Refusal::for_frame(&bytes, &e);
            tracing::debug!(target: "toolhost::mcp", "refused an MCP request: {}", refusal.error.message);
            (
                StatusCode::BAD_REQUEST,
                [(header::CONTENT_TYPE, "application/json")],
                refusal.to_json(),
            )
                .into_response()
        }
    }
}

/// Whether the request says its body is JSON (rmcp answers any other
/// content type with 415).
fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(toolhost_net::is_json_content_type)
}

/// Turns the answer to a session's `DELETE` into 204 No Content once the
/// session is closed (rule N5): rmcp answers 202 Accepted, which clients
/// such as the Python SDK take for a failure; the session is closed either
/// way.
fn session_closed(response: Response) -> Response {
    if response.status() == StatusCode::ACCEPTED {
        return StatusCode::NO_CONTENT.into_response();
    }
    response
}

/// Refuses, with 401, a request that does not carry the token (that of
/// `/mcp`, or `/metrics`' own).
pub(crate) async fn require_token(
    State(token): State<Arc<str>>,
    req: Request,
    next: Next,
) -> Response {
    let presented = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, t)| t.trim());
    if presented.is_some_and(|t| same_secret(t.as_bytes(), token.as_bytes())) {
        return next.run(req).await;
    }
    (
        StatusCode::UNAUTHORIZED,
        [(header::WWW_AUTHENTICATE, "Bearer")],
        "Unauthorized: missing or wrong bearer token\n",
    )
        .into_response()
}

/// Refuses, as the resource server (rule A1), a request whose token it
/// does not accept: 401 with a challenge naming the metadata (and
/// `invalid_token` unless the token is missing), or 503 with `Retry-After`
/// when the authorization server's keys or introspection cannot be had.
/// An accepted request goes on with the caller's [`Access`] in its
/// extensions, where the MCP server reads it for `tools/list`.
async fn require_oauth(
    State(oauth): State<Arc<ResourceServer>>,
    mut req: Request,
    next: Next,
) -> Response {
    let authorization = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    match oauth.authenticate(authorization).await {
        Ok(access) => {
            req.extensions_mut().insert(access);
            next.run(req).await
        }
        Err(error) if error.status() == StatusCode::SERVICE_UNAVAILABLE => {
            tracing::warn!(target: "toolhost::auth", "cannot check a token: {}", toolhost_core::report(&error));
            (
                StatusCode::SERVICE_UNAVAILABLE,
                [(header::RETRY_AFTER, "5")],
                format!("Service Unavailable: {error}; try again later\n"),
            )
                .into_response()
        }
        Err(error) => {
            tracing::debug!(target: "toolhost::auth", "refused a token: {}", toolhost_core::report(&error));
            let challenge = oauth.challenge(&error);
            let mut response =
                (StatusCode::UNAUTHORIZED, format!("Unauthorized: {error}\n")).into_response();
            if let Ok(value) = header::HeaderValue::from_str(&challenge) {
                response
                    .headers_mut()
                    .insert(header::WWW_AUTHENTICATE, value);
            }
            response
        }
    }
}

/// The 403 for a `tools/call` (alone or in a batch) of a tool the caller's
/// scopes do not reach (rule A1), if the body holds one.
///
/// The MCP authorization specification answers a token whose scopes do
/// not cover the operation with HTTP 403 and an `insufficient_scope`
/// challenge naming the scopes that would (so a client can ask for them),
/// so the check is made here, where the status can still be chosen; the
/// MCP server refuses such a call again on its own (as an unknown tool)
/// for whatever does not pass this way. The body is read for the method
/// and the tool's name only.
fn refuse_out_of_scope(oauth: &ResourceServer, access: &Access, body: &[u8]) -> Option<Response> {
    if access.is_unrestricted() {
        return None;
    }
    let tool = tool_calls(body).into_iter().find_map(|call| {
        let name = match call.name {
            serde_json::Value::String(name) => name,
            other => other.to_string(),
        };
        (!access.may_use(&name)).then_some(name)
    })?;
    tracing::debug!(target: "toolhost::auth", "refused tools/call of `{tool}`: outside the token's scopes");
    let mut response = (
        StatusCode::FORBIDDEN,
        format!("Forbidden: the token's scopes do not grant tool `{tool}`\n"),
    )
        .into_response();
    if let Ok(value) = header::HeaderValue::from_str(&oauth.scope_challenge(access, &tool)) {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, value);
    }
    Some(response)
}

/// One `tools/call` request of a body: its id and the tool's name, as sent.
struct ToolCall {
    id: Option<serde_json::Value>,
    name: serde_json::Value,
}

/// The `tools/call` requests of a JSON-RPC body (one message or a batch),
/// in order; none if the body is not JSON-RPC. The body is read for the
/// method, the id and the tool's name only.
fn tool_calls(body: &[u8]) -> Vec<ToolCall> {
    #[derive(serde::Deserialize)]
    struct Params {
        name: Option<serde_json::Value>,
    }
    #[derive(serde::Deserialize)]
    struct Message {
        id: Option<serde_json::Value>,
        method: Option<String>,
        params: Option<Params>,
    }
    #[derive(serde::Deserialize)]
    #[serde(untagged)]
    enum Body {
        One(Message),
        Batch(Vec<Message>),
    }
    let messages = match serde_json::from_slice::<Body>(body) {
        Ok(Body::One(m)) => vec![m],
        Ok(Body::Batch(all)) => all,
        Err(_) => return Vec::new(),
    };
    messages
        .into_iter()
        .filter(|m| m.method.as_deref() == Some("tools/call"))
        .filter_map(|m| {
            Some(ToolCall {
                id: m.id,
                name: m.params?.name?,
            })
        })
        .collect()
}

/// The 429 for a `tools/call` a quota would refuse now (rule A3), if the
/// body holds one: `Retry-After` in whole seconds (at least 1), and as the
/// body the JSON-RPC error the call would have had (code
/// [`OVER_QUOTA_CODE`](crate::convert::OVER_QUOTA_CODE), with the quota,
/// whose it is and when to try again), answering the request's id. A call
/// that passes here is still admitted or refused by the host as it runs.
fn refuse_over_quota(
    server: &McpServer,
    parts: &axum::http::request::Parts,
    body: &[u8],
) -> Option<Response> {
    let (id, over) = tool_calls(body).into_iter().find_map(|call| {
        let serde_json::Value::String(tool) = call.name else {
            return None;
        };
        let over = server.quota_refusal(parts, &tool)?;
        Some((call.id, over))
    })?;
    let error = crate::convert::over_quota_error(&toolhost_core::ToolError::OverQuota {
        quota: over.kind,
        scope: over.scope,
        retry_after: over.retry_after,
    });
    tracing::debug!(target: "toolhost::mcp", "refused a tools/call: {}", error.message);
    let seconds = over.retry_after.as_secs() + u64::from(over.retry_after.subsec_nanos() > 0);
    let answer = serde_json::json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": error,
    });
    Some(
        (
            StatusCode::TOO_MANY_REQUESTS,
            [
                (header::RETRY_AFTER, seconds.max(1).to_string()),
                (header::CONTENT_TYPE, "application/json".to_owned()),
            ],
            answer.to_string(),
        )
            .into_response(),
    )
}

/// Compares two secrets in time that depends on their lengths only.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_are_checked_for_shape() {
        for ok in [
            "https://app.example.com",
            "http://example.com:8080",
            "http://intranet:*",
        ] {
            check_origin(ok).unwrap();
        }
        for (bad, why) in [
            ("app.example.com", "needs an http or https scheme"),
            ("ftp://example.com", "needs an http or https scheme"),
            ("https://example.com/path", "has a path"),
            ("https://example.com:443:*", "has both a port"),
        ] {
            let err = check_origin(bad).unwrap_err().to_string();
            assert!(err.contains(why) && err.contains(bad), "{bad}: {err}");
        }
    }

    #[test]
    fn an_empty_token_is_refused() {
        let options = HttpOptions {
            bearer_token: Some(" \n".into()),
            ..HttpOptions::default()
        };
        assert_eq!(
            options.validate().unwrap_err().to_string(),
            "the bearer token is empty"
        );
        assert!(!format!("{options:?}").contains('\n'));
    }

    #[test]
    fn caps_must_be_above_zero() {
        let options = HttpOptions {
            max_sessions: 0,
            ..HttpOptions::default()
        };
        assert_eq!(
            options.validate().unwrap_err().to_string(),
            "the session cap must be above zero"
        );
        let options = HttpOptions {
            max_request_bytes: 0,
            ..HttpOptions::default()
        };
        assert_eq!(
            options.validate().unwrap_err().to_string(),
            "the request size cap must be above zero"
        );
    }

    #[test]
    fn the_bound_address_is_an_allowed_host_unless_unspecified() {
        let hosts = allowed_hosts("192.168.1.5:80".parse().unwrap(), &["box.lan".into()]);
        assert_eq!(
            hosts,
            ["localhost", "127.0.0.1", "::1", "192.168.1.5", "box.lan"]
        );
        let hosts = allowed_hosts("0.0.0.0:80".parse().unwrap(), &[]);
        assert_eq!(hosts, ["localhost", "127.0.0.1", "::1"]);
    }

    /// The `_meta` a 2026-07-28 request carries.
    fn modern_meta() -> serde_json::Value {
        serde_json::json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        })
    }

    /// The endpoint serving `host`, with a cap of one session (none when
    /// `stateless`); and its draining flag.
    fn endpoint(
        host: &toolhost_core::ToolHost,
        stateless: bool,
    ) -> (axum::Router, Arc<AtomicBool>) {
        let options = HttpOptions {
            max_sessions: 1,
            stateless,
            ..HttpOptions::default()
        };
        let draining = Arc::new(AtomicBool::new(false));
        let server = McpServer::new(host.clone());
        let local = "127.0.0.1:8000".parse().unwrap();
        let app = router(
            server,
            local,
            options,
            CancellationToken::new(),
            draining.clone(),
        );
        (app.unwrap(), draining)
    }

    /// POSTs `body` to `app` with `headers`; the status, the session id if
    /// one opened, and the body.
    async fn post(
        app: &axum::Router,
        headers: &[(&str, &str)],
        body: serde_json::Value,
    ) -> (StatusCode, Option<String>, String) {
        use tower::ServiceExt as _;
        let mut req = axum::http::Request::post(MCP_PATH)
            .header(header::HOST, "127.0.0.1:8000")
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::ACCEPT, "application/json, text/event-stream");
        for (name, value) in headers {
            req = req.header(*name, *value);
        }
        let req = req.body(Body::from(body.to_string())).unwrap();
        let reply = app.clone().oneshot(req).await.unwrap();
        let status = reply.status();
        let session = reply
            .headers()
            .get(&header_names::MCP_SESSION_ID)
            .map(|v| v.to_str().unwrap().to_owned());
        let bytes = reply.into_body().collect().await.unwrap().to_bytes();
        (
            status,
            session,
            String::from_utf8_lossy(&bytes).into_owned(),
        )
    }

    fn initialize() -> serde_json::Value {
        initialize_at("2025-11-25")
    }

    /// An `initialize` proposing `version`.
    fn initialize_at(version: &str) -> serde_json::Value {
        serde_json::json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": version, "capabilities": {},
                       "clientInfo": {"name": "test", "version": "1"}}
        })
    }

    /// A 2026-07-28 `tools/list` and its headers.
    fn modern_list() -> (serde_json::Value, [(&'static str, &'static str); 2]) {
        let body = serde_json::json!({
            "jsonrpc": "2.0", "id": 2, "method": "tools/list",
            "params": {"_meta": modern_meta()}
        });
        let headers = [
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/list"),
        ];
        (body, headers)
    }

    #[tokio::test]
    async fn n9_a_2026_request_opens_no_session_so_the_cap_and_draining_let_it_through() {
        let host = toolhost_core::ToolHost::new();
        let (app, draining) = endpoint(&host, false);
        let (status, session, _) = post(&app, &[], initialize()).await;
        assert_eq!(status, StatusCode::OK);
        assert!(session.is_some(), "initialize opens a session");
        // The cap of one is reached: no other session opens...
        let (status, _, said) = post(&app, &[], initialize()).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{said}");
        // ...but a 2026-07-28 request, which opens none, is served.
        let (body, headers) = modern_list();
        let (status, session, said) = post(&app, &headers, body.clone()).await;
        assert_eq!(status, StatusCode::OK, "{said}");
        assert_eq!(session, None);
        assert!(said.contains(r#""tools":[]"#), "{said}");
        // An `initialize` dressed as one is held to its `Mcp-Method` and
        // refused before a session opens.
        let (status, session, said) = post(&app, &headers, initialize_at("2026-07-28")).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{said}");
        assert_eq!(session, None);
        assert!(said.contains("-32020"), "{said}");
        // A draining server opens no session, and still answers requests.
        draining.store(true, Ordering::SeqCst);
        let (status, _, said) = post(&app, &[], initialize()).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{said}");
        assert!(said.contains("shutting down"), "{said}");
        let (status, _, said) = post(&app, &headers, body).await;
        assert_eq!(status, StatusCode::OK, "{said}");
    }

    #[tokio::test]
    async fn h1_a_stateless_server_caps_no_sessions_so_calls_in_flight_hold_nothing_up() {
        use toolhost_core::output::ToolOutput;
        use toolhost_core::tool::{FnTool, ToolSpec};
        let host = toolhost_core::ToolHost::new();
        let started = Arc::new(tokio::sync::Notify::new());
        let release = Arc::new(tokio::sync::Notify::new());
        let (on_start, on_release) = (started.clone(), release.clone());
        host.register_tool(FnTool::arc(
            ToolSpec::new(
                "hold",
                "waits to be released",
                serde_json::json!({"type": "object"}),
            ),
            move |_, _| {
                let (started, release) = (on_start.clone(), on_release.clone());
                async move {
                    started.notify_one();
                    release.notified().await;
                    Ok(ToolOutput::text("released"))
                }
            },
        ))
        .unwrap();
        let (app, _) = endpoint(&host, true);
        let call = serde_json::json!({
            "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "hold", "arguments": {}, "_meta": modern_meta()}
        });
        let held = tokio::spawn({
            let app = app.clone();
            async move {
                let headers = [
                    ("MCP-Protocol-Version", "2026-07-28"),
                    ("Mcp-Method", "tools/call"),
                    ("Mcp-Name", "hold"),
                ];
                post(&app, &headers, call).await
            }
        });
        started.notified().await;
        // One call in flight, with a "cap" of one: others are served.
        let (body, headers) = modern_list();
        let (status, _, said) = post(&app, &headers, body).await;
        assert_eq!(status, StatusCode::OK, "{said}");
        let (status, _, said) = post(&app, &[], initialize()).await;
        assert_eq!(status, StatusCode::OK, "{said}");
        release.notify_one();
        let (status, _, said) = held.await.unwrap();
        assert_eq!(status, StatusCode::OK, "{said}");
        assert!(said.contains("released"), "{said}");
    }

    #[test]
    fn secrets_compare_whole() {
        assert!(same_secret(b"abc", b"abc"));
        assert!(!same_secret(b"abc", b"abd"));
        assert!(!same_secret(b"abc", b"abcd"));
        assert!(!same_secret(b"", b"a"));
    }
}

//! Outgoing HTTP for plugins: only to destinations the plugin's
//! [`NetPolicy`] grants, connecting to the very addresses that were checked.
//!
//! wasmtime-wasi-http's default sender resolves the name again when it
//! connects, which would let a name re-point at a private address between the
//! check and the connection. This sender resolves once through
//! [`NetPolicy::resolve`], connects to a checked address, and verifies TLS
//! against the original host name.
//!
//! A guest never widens a host limit (rules C2, C4): the connect and
//! first-byte timeouts it asks for are clamped to the host's defaults and to
//! what is left of the call's deadline, and the plugin's requests in flight,
//! across all its instances, are bounded; each holds one connection until
//! its response is done, and every connection of a call is closed when the
//! call's store is dropped.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::AbortHandle;

use http_body_util::BodyExt as _;
use wasmtime_wasi_http::io::TokioIo;
use wasmtime_wasi_http::{Error as HttpError, RequestOptions, WasiBody, WasiHttpHooks};

use crate::denials::{self, Denials};
use crate::secret_guard::SecretGuard;

use toolhost_net::{NetDenied, NetPolicy};

type IoFuture = Box<dyn Future<Output = Result<(), HttpError>> + Send>;
type SendFuture =
    Box<dyn Future<Output = Result<(http::Response<WasiBody>, IoFuture), HttpError>> + Send>;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
const FIRST_BYTE_TIMEOUT: Duration = Duration::from_secs(30);

/// Largest write to an outgoing body's stream (wasmtime-wasi-http's
/// default is 1 MiB). A body queues at most two writes (one chunk, and the
/// channel's spare slot) until the connection takes them, and a guest can
/// build bodies without sending them (three handles each: request, body,
/// stream), so this bounds what each can pin in the host (rule C11):
/// 128 KiB rather than 2 MiB.
pub(crate) const OUTGOING_CHUNK_BYTES: usize = 64 << 10;

/// Most bytes hyper buffers for one connection, each way (its default is
/// about 400 KiB): a response's head must fit in it, and an incoming
/// body's frame is at most this (rule C11).
pub(crate) const CONNECTION_BUFFER_BYTES: usize = 64 << 10;

/// What the outgoing requests of every call of one plugin share: made once,
/// as the plugin is loaded, so that a call's store takes one reference to it
/// rather than one to each of its parts.
pub(crate) struct HttpGrant {
    /// The plugin's name, for the log.
    pub(crate) plugin: Arc<str>,
    policy: Arc<NetPolicy>,
    /// The plugin's requests in flight, across all its instances.
    requests: Arc<Semaphore>,
    max_requests: usize,
    /// The plugin's secrets and where each may be sent (rule O2).
    pub(crate) guard: SecretGuard,
}

impl HttpGrant {
    /// The grant of `plugin`: the destinations `policy` allows, at most
    /// `max_requests` requests in flight at once, `guard` on what they
    /// carry.
    pub(crate) fn new(
        plugin: Arc<str>,
        policy: Arc<NetPolicy>,
        max_requests: usize,
        guard: SecretGuard,
    ) -> Self {
        Self {
            plugin,
            policy,
            requests: Arc::new(Semaphore::new(max_requests)),
            max_requests,
            guard,
        }
    }
}

/// The wasi-http hooks of one call.
pub(crate) struct PolicyHttp {
    grant: Arc<HttpGrant>,
    deadline: Instant,
    /// The call's refusals and open connections, made at its first
    /// request: a call that sends none allocates neither.
    denials: OnceLock<Arc<Mutex<Denials>>>,
    connections: OnceLock<Arc<Mutex<Vec<AbortHandle>>>>,
}

impl PolicyHttp {
    /// Hooks for a call under `grant` that ends at `deadline`; each request
    /// takes one of the grant's permits until its connection closes.
    pub(crate) fn new(grant: Arc<HttpGrant>, deadline: Instant) -> Self {
        Self {
            grant,
            deadline,
            denials: OnceLock::new(),
            connections: OnceLock::new(),
        }
    }

    /// What every call of the plugin shares.
    pub(crate) fn grant(&self) -> &HttpGrant {
        &self.grant
    }

    /// This call's refusals, in order: the first few in full, then how
    /// many more (see [`Denials`]).
    pub(crate) fn denials(&self) -> Vec<String> {
        self.denials.get().map_or_else(Vec::new, |denials| {
            denials.lock().unwrap_or_else(|e| e.into_inner()).reasons()
        })
    }
}

/// Where a guest's request goes, read from its URI alone: the scheme
/// (`https`, or `http` for anything else), the host as the URI writes it
/// (an IPv6 address in brackets) and the port (the scheme's default when
/// none is written). `None` when the URI names no host.
pub(crate) fn destination(uri: &http::Uri) -> Option<(&'static str, &str, u16)> {
    let https = uri.scheme_str() == Some("https");
    let scheme = if https { "https" } else { "http" };
    let host = uri.host()?;
    let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
    Some((scheme, host, port))
}

impl WasiHttpHooks for PolicyHttp {
    fn p2_outgoing_body_buffer_chunks(&mut self) -> usize {
        1
    }

    fn p2_outgoing_body_chunk_size(&mut self) -> usize {
        OUTGOING_CHUNK_BYTES
    }

    fn send_request(
        &mut self,
        mut request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        _fut: IoFuture,
    ) -> SendFuture {
        let grant = self.grant.clone();
        let (denials, connections) = (
            self.denials.get_or_init(Arc::default).clone(),
            self.connections.get_or_init(Arc::default).clone(),
        );
        let deadline = self.deadline;
        let permit = grant.requests.clone().try_acquire_owned();
        Box::new(async move {
            let HttpGrant {
                plugin,
                policy,
                max_requests,
                guard,
                ..
            } = &*grant;
            let uri = request.uri().clone();
            // The URL may carry a secret: logged and reported redacted, and
            // cut, as a guest chooses its length (rule C3).
            let shown = denials::cut(
                &guard.secrets().redact(&uri.to_string()),
                denials::REASON_BYTES,
            );
            let deny = |reason: String| {
                let reason = guard.secrets().redact(&reason);
                let mut denials = denials.lock().unwrap_or_else(|e| e.into_inner());
                if let Some(reason) = denials.record(&reason) {
                    tracing::warn!(target: "toolhost::sandbox", plugin = %plugin, url = %shown, %reason, "outgoing request denied");
                }
            };
            // The exfiltration guard (rule O2): URL and headers now, the
            // body as it streams.
            if let Some((scheme, host, port)) = destination(&uri)
                && !guard.secrets().is_empty()
            {
                let head = request
                    .headers()
                    .iter()
                    .flat_map(|(name, value)| [name.as_str().as_bytes(), value.as_bytes()]);
                // The method too: an extension method is any token, written
                // on the wire as the guest set it.
                let leaked = [
                    uri.to_string().into_bytes(),
                    request.method().as_str().as_bytes().to_vec(),
                ]
                .into_iter()
                .chain(head.map(<[u8]>::to_vec))
                .find_map(|part| guard.refused(&part, scheme, host, port));
                if let Some(secret) = leaked {
                    deny(format!(
                        "{shown}: the request carries secret `{secret}`, which may not be sent to {scheme}://{host}:{port}"
                    ));
                    return Err(HttpError::HttpRequestDenied);
                }
                let to = format!("{scheme}://{host}:{port}");
                let (denials, shown) = (denials.clone(), shown.clone());
                let body = std::mem::take(request.body_mut());
                *request.body_mut() = guard.guard_body(
                    body,
                    (scheme.to_owned(), host.to_owned(), port),
                    move |secret| {
                        let reason = format!(
                            "{shown}: the request's body carries secret `{secret}`, which may not be sent to {to}"
                        );
                        let mut denials = denials.lock().unwrap_or_else(|e| e.into_inner());
                        if let Some(reason) = denials.record(&reason) {
                            tracing::warn!(target: "toolhost::sandbox", %reason, "outgoing request denied");
                        }
                    },
                );
            }
            let Ok(permit) = permit else {
                deny(format!(
                    "{shown}: the limit of {max_requests} requests in flight is reached"
                ));
                return Err(HttpError::HttpRequestDenied);
            };
            let (scheme, host, port) = destination(&uri).ok_or(HttpError::HttpRequestUriInvalid)?;
            let host = host.to_owned();
            let addrs = match policy.resolve(scheme, &host, port).await {
                Ok(addrs) => addrs,
                Err(denied) => {
                    deny(format!("{scheme}://{host}:{port}: {denied}"));
                    return Err(match denied {
                        NetDenied::Resolve { reason, .. } => HttpError::DnsError {
                            rcode: Some(reason),
                            info_code: None,
                        },
                        _ => HttpError::HttpRequestDenied,
                    });
                }
            };
            let connect_timeout = clamp(
                options.and_then(|o| o.connect_timeout),
                CONNECT_TIMEOUT,
                deadline,
            );
            let first_byte = clamp(
                options.and_then(|o| o.first_byte_timeout),
                FIRST_BYTE_TIMEOUT,
                deadline,
            );
            let connect_by = tokio::time::Instant::now() + connect_timeout;
            let tcp = connect(&addrs, connect_by).await?;
            let path = uri.path_and_query().map_or("/", |p| p.as_str()).to_owned();
            *request.uri_mut() = http::Uri::builder()
                .path_and_query(path)
                .build()
                .map_err(|_| HttpError::HttpRequestUriInvalid)?;
            if scheme == "https" {
                let name = rustls::pki_types::ServerName::try_from(
                    host.trim_matches(['[', ']']).to_owned(),
                )
                .map_err(|e| HttpError::InternalError(Some(format!("`{host}`: {e}"))))?;
                let config = toolhost_net::tls::client_config()
                    .map_err(|e| HttpError::InternalError(Some(toolhost_core::report(&e))))?;
                let handshake = tokio_rustls::TlsConnector::from(config).connect(name, tcp);
                let tls = tokio::time::timeout_at(connect_by, handshake)
                    .await
                    .map_err(|_| HttpError::ConnectionTimeout)?
                    .map_err(HttpError::Tls)?;
                send(tls, request, first_byte, permit, &connections).await
            } else {
                send(tcp, request, first_byte, permit, &connections).await
            }
        })
    }
}

impl Drop for PolicyHttp {
    /// The call is over: close its connections, whatever they were doing.
    fn drop(&mut self) {
        let Some(connections) = self.connections.get() else {
            return;
        };
        for handle in connections
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain(..)
        {
            handle.abort();
        }
    }
}

/// The timeout the guest asked for, or the host's default, never more than
/// the default nor past the call's deadline.
fn clamp(asked: Option<Duration>, default: Duration, deadline: Instant) -> Duration {
    let left = deadline.saturating_duration_since(Instant::now());
    asked.unwrap_or(default).min(default).min(left)
}

async fn connect(
    addrs: &[SocketAddr],
    by: tokio::time::Instant,
) -> Result<tokio::net::TcpStream, HttpError> {
    let mut last = HttpError::ConnectionRefused;
    for addr in addrs {
        match tokio::time::timeout_at(by, tokio::net::TcpStream::connect(addr)).await {
            Ok(Ok(stream)) => return Ok(stream),
            Ok(Err(e)) => last = HttpError::Connect(e),
            Err(_) => last = HttpError::ConnectionTimeout,
        }
    }
    Err(last)
}

async fn send<S>(
    io: S,
    request: http::Request<WasiBody>,
    first_byte: Duration,
    permit: OwnedSemaphorePermit,
    connections: &Mutex<Vec<AbortHandle>>,
) -> Result<(http::Response<WasiBody>, IoFuture), HttpError>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, conn) = hyper::client::conn::http1::Builder::new()
        .max_buf_size(CONNECTION_BUFFER_BYTES)
        .handshake(TokioIo::new(io))
        .await?;
    // The connection holds the request's permit until it closes.
    let driver = tokio::spawn(async move {
        let result = conn.await;
        drop(permit);
        result
    });
    connections
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(driver.abort_handle());
    let response = tokio::time::timeout(first_byte, sender.send_request(request))
        .await
        .map_err(|_| HttpError::ConnectionReadTimeout)??;
    let io: IoFuture = Box::new(async move {
        match driver.await {
            Ok(result) => result.map_err(HttpError::from),
            Err(e) => Err(HttpError::InternalError(Some(e.to_string()))),
        }
    });
    Ok((
        response.map(|body| body.map_err(HttpError::from).boxed_unsync()),
        io,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c2_a_guest_timeout_never_widens_a_host_limit() {
        let far = Instant::now() + Duration::from_secs(3600);
        let day = Some(Duration::from_secs(86_400));
        // Longer than the host's default: the default.
        assert_eq!(clamp(day, FIRST_BYTE_TIMEOUT, far), FIRST_BYTE_TIMEOUT);
        // Shorter: the guest's own.
        let short = Some(Duration::from_millis(50));
        assert_eq!(
            clamp(short, FIRST_BYTE_TIMEOUT, far),
            Duration::from_millis(50)
        );
        // None: the default.
        assert_eq!(clamp(None, CONNECT_TIMEOUT, far), CONNECT_TIMEOUT);
        // Never past the call's deadline.
        let soon = Instant::now() + Duration::from_millis(200);
        assert!(clamp(day, FIRST_BYTE_TIMEOUT, soon) <= Duration::from_millis(200));
        let past = Instant::now() - Duration::from_millis(1);
        assert_eq!(clamp(day, CONNECT_TIMEOUT, past), Duration::ZERO);
    }
}

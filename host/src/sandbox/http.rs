//! Outgoing HTTP for plugins: only to destinations the plugin's
//! [`NetPolicy`] grants, connecting to the very addresses that were checked.
//!
//! wasmtime-wasi-http's default sender resolves the name again when it
//! connects, which would let a name re-point at a private address between the
//! check and the connection. This sender resolves once through
//! [`NetPolicy::resolve`], connects to a checked address, and verifies TLS
//! against the original host name.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http_body_util::BodyExt as _;
use wasmtime_wasi_http::io::TokioIo;
use wasmtime_wasi_http::{Error as HttpError, RequestOptions, WasiBody, WasiHttpHooks};

use crate::net::{NetDenied, NetPolicy};

type IoFuture = Box<dyn Future<Output = Result<(), HttpError>> + Send>;
type SendFuture =
    Box<dyn Future<Output = Result<(http::Response<WasiBody>, IoFuture), HttpError>> + Send>;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
const FIRST_BYTE_TIMEOUT: Duration = Duration::from_secs(30);

/// The wasi-http hooks of one call.
pub(crate) struct PolicyHttp {
    plugin: Arc<str>,
    policy: Arc<NetPolicy>,
    denials: Arc<Mutex<Vec<String>>>,
}

impl PolicyHttp {
    pub(crate) fn new(plugin: Arc<str>, policy: NetPolicy) -> Self {
        Self {
            plugin,
            policy: Arc::new(policy),
            denials: Arc::default(),
        }
    }

    /// Every refusal of this call, in order.
    pub(crate) fn denials(&self) -> Vec<String> {
        self.denials
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

impl WasiHttpHooks for PolicyHttp {
    fn send_request(
        &mut self,
        mut request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        _fut: IoFuture,
    ) -> SendFuture {
        let (plugin, policy, denials) = (
            self.plugin.clone(),
            self.policy.clone(),
            self.denials.clone(),
        );
        Box::new(async move {
            let uri = request.uri().clone();
            let https = uri.scheme_str() == Some("https");
            let scheme = if https { "https" } else { "http" };
            let host = uri
                .host()
                .ok_or(HttpError::HttpRequestUriInvalid)?
                .to_owned();
            let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
            let addrs = match policy.resolve(scheme, &host, port).await {
                Ok(addrs) => addrs,
                Err(denied) => {
                    tracing::warn!(target: "toolhost::sandbox", plugin = %plugin, url = %uri, reason = %denied, "outgoing request denied");
                    denials
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push(format!("{scheme}://{host}:{port}: {denied}"));
                    return Err(match denied {
                        NetDenied::Resolve { reason, .. } => HttpError::DnsError {
                            rcode: Some(reason),
                            info_code: None,
                        },
                        _ => HttpError::HttpRequestDenied,
                    });
                }
            };
            let connect_timeout = options
                .and_then(|o| o.connect_timeout)
                .unwrap_or(CONNECT_TIMEOUT);
            let first_byte = options
                .and_then(|o| o.first_byte_timeout)
                .unwrap_or(FIRST_BYTE_TIMEOUT);
            let tcp = connect(&addrs, connect_timeout).await?;
            let path = uri.path_and_query().map_or("/", |p| p.as_str()).to_owned();
            *request.uri_mut() = http::Uri::builder()
                .path_and_query(path)
                .build()
                .map_err(|_| HttpError::HttpRequestUriInvalid)?;
            if https {
                let name = rustls::pki_types::ServerName::try_from(
                    host.trim_matches(['[', ']']).to_owned(),
                )?;
                let config =
                    crate::tls::client_config().map_err(|e| HttpError::InternalError(Some(e)))?;
                let tls = tokio_rustls::TlsConnector::from(config)
                    .connect(name, tcp)
                    .await
                    .map_err(HttpError::Tls)?;
                send(tls, request, first_byte).await
            } else {
                send(tcp, request, first_byte).await
            }
        })
    }
}

async fn connect(
    addrs: &[SocketAddr],
    timeout: Duration,
) -> Result<tokio::net::TcpStream, HttpError> {
    let mut last = HttpError::ConnectionRefused;
    for addr in addrs {
        match tokio::time::timeout(timeout, tokio::net::TcpStream::connect(addr)).await {
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
) -> Result<(http::Response<WasiBody>, IoFuture), HttpError>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(io)).await?;
    let driver = tokio::spawn(conn);
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

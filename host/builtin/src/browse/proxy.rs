//! The browser's only way out: an HTTP proxy on 127.0.0.1 that checks every
//! destination with the [`NetPolicy`] and connects to the addresses the
//! policy checked.
//!
//! Chromium is told to send everything through it (`--proxy-server`, with
//! `<-loopback>` so that loopback goes through it too): `CONNECT` tunnels
//! for https and WebSockets, absolute-form requests for plain http, each
//! request of a kept-alive connection checked on its own. A proxy — rather
//! than DevTools request interception — sees every connection the network
//! stack makes (subresources, workers, WebSockets, redirects), and since it
//! does the name resolution itself, the browser never connects to an
//! address the policy did not check.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode, header};
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};

use toolhost_net::NetPolicy;

type Body = BoxBody<Bytes, hyper::Error>;

/// A running proxy; it stops when dropped.
pub(crate) struct PolicyProxy {
    addr: SocketAddr,
    denied: Arc<Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl PolicyProxy {
    /// Starts a proxy enforcing `policy` on an ephemeral loopback port.
    pub(crate) async fn start(policy: NetPolicy) -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let denied = Arc::new(Mutex::new(Vec::new()));
        let policy = Arc::new(policy);
        let task = tokio::spawn({
            let denied = denied.clone();
            async move {
                while let Ok((stream, _)) = listener.accept().await {
                    let (policy, denied) = (policy.clone(), denied.clone());
                    tokio::spawn(async move {
                        let svc =
                            service_fn(move |req| handle(req, policy.clone(), denied.clone()));
                        let _ = hyper::server::conn::http1::Builder::new()
                            .preserve_header_case(true)
                            .serve_connection(TokioIo::new(stream), svc)
                            .with_upgrades()
                            .await;
                    });
                }
            }
        });
        Ok(Self { addr, denied, task })
    }

    /// The address to give the browser.
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Every destination refused so far, with the reason.
    pub(crate) fn denied(&self) -> Vec<String> {
        self.denied
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

impl Drop for PolicyProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn text(status: StatusCode, body: impl Into<Bytes>) -> Response<Body> {
    let mut resp = Response::new(Full::new(body.into()).map_err(|e| match e {}).boxed());
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    resp
}

/// Checks the destination; on refusal records it and answers 403.
async fn check(
    policy: &NetPolicy,
    denied: &Mutex<Vec<String>>,
    scheme: &str,
    host: &str,
    port: u16,
) -> Result<Vec<SocketAddr>, Response<Body>> {
    policy.resolve(scheme, host, port).await.map_err(|e| {
        let why = e.to_string();
        denied
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(why.clone());
        text(
            StatusCode::FORBIDDEN,
            format!("refused by the network policy: {why}"),
        )
    })
}

async fn handle(
    req: Request<Incoming>,
    policy: Arc<NetPolicy>,
    denied: Arc<Mutex<Vec<String>>>,
) -> Result<Response<Body>, Infallible> {
    Ok(match forward(req, &policy, &denied).await {
        Ok(resp) | Err(resp) => resp,
    })
}

async fn forward(
    mut req: Request<Incoming>,
    policy: &NetPolicy,
    denied: &Mutex<Vec<String>>,
) -> Result<Response<Body>, Response<Body>> {
    let bad = |why: &str| text(StatusCode::BAD_REQUEST, why.to_owned());
    if req.method() == Method::CONNECT {
        let auth = req
            .uri()
            .authority()
            .ok_or_else(|| bad("CONNECT needs host:port"))?;
        let port = auth.port_u16().ok_or_else(|| bad("CONNECT needs a port"))?;
        let host = auth.host().to_owned();
        let addrs = check(policy, denied, "https", &host, port).await?;
        let mut upstream = TcpStream::connect(&addrs[..])
            .await
            .map_err(|e| text(StatusCode::BAD_GATEWAY, format!("cannot connect: {e}")))?;
        tokio::spawn(async move {
            if let Ok(upgraded) = hyper::upgrade::on(req).await {
                let mut client = TokioIo::new(upgraded);
                let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
            }
        });
        return Ok(Response::new(
            http_body_util::Empty::new().map_err(|e| match e {}).boxed(),
        ));
    }
    let uri = req.uri().clone();
    if uri.scheme_str() != Some("http") {
        return Err(bad(
            "only absolute http:// requests and CONNECT are proxied",
        ));
    }
    let host = uri
        .host()
        .ok_or_else(|| bad("the request has no host"))?
        .to_owned();
    let port = uri.port_u16().unwrap_or(80);
    let addrs = check(policy, denied, "http", &host, port).await?;
    let stream = TcpStream::connect(&addrs[..])
        .await
        .map_err(|e| text(StatusCode::BAD_GATEWAY, format!("cannot connect: {e}")))?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| text(StatusCode::BAD_GATEWAY, format!("upstream handshake: {e}")))?;
    tokio::spawn(conn);
    let origin_form = uri
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .parse()
        .map_err(|_| bad("bad request target"))?;
    *req.uri_mut() = origin_form;
    for h in [
        "proxy-connection",
        "proxy-authorization",
        "connection",
        "keep-alive",
    ] {
        req.headers_mut().remove(h);
    }
    let resp = sender
        .send_request(req)
        .await
        .map_err(|e| text(StatusCode::BAD_GATEWAY, format!("upstream: {e}")))?;
    Ok(resp.map(|b| b.boxed()))
}

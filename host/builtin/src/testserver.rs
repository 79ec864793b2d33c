//! A tiny HTTP server on 127.0.0.1 for the web and browser tests: fixed
//! routes, and a log of the paths asked for.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::Full;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;

/// One canned response.
#[derive(Clone)]
pub(crate) struct Route {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(&'static str, String)>,
    pub(crate) body: Vec<u8>,
}

impl Route {
    pub(crate) fn ok(content_type: &str, body: impl Into<Vec<u8>>) -> Self {
        Self {
            status: 200,
            headers: vec![("content-type", content_type.to_owned())],
            body: body.into(),
        }
    }

    pub(crate) fn redirect(to: impl Into<String>) -> Self {
        Self {
            status: 302,
            headers: vec![("location", to.into())],
            body: Vec::new(),
        }
    }
}

/// A running server; it stops when dropped.
pub(crate) struct TestServer {
    pub(crate) addr: SocketAddr,
    log: Arc<Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl TestServer {
    pub(crate) async fn start(routes: Vec<(&str, Route)>) -> Self {
        let routes: Arc<HashMap<String, Route>> =
            Arc::new(routes.into_iter().map(|(p, r)| (p.to_owned(), r)).collect());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let task = tokio::spawn({
            let log = log.clone();
            async move {
                while let Ok((stream, _)) = listener.accept().await {
                    let (routes, log) = (routes.clone(), log.clone());
                    tokio::spawn(async move {
                        let svc = service_fn(move |req: Request<hyper::body::Incoming>| {
                            let path = req.uri().path().to_owned();
                            log.lock().unwrap().push(path.clone());
                            let route = routes.get(&path).cloned().unwrap_or(Route {
                                status: 404,
                                headers: vec![("content-type", "text/plain".into())],
                                body: b"not found".to_vec(),
                            });
                            async move {
                                let mut resp = Response::builder().status(route.status);
                                for (k, v) in route.headers {
                                    resp = resp.header(k, v);
                                }
                                Ok::<_, Infallible>(
                                    resp.body(Full::new(Bytes::from(route.body))).unwrap(),
                                )
                            }
                        });
                        let _ = hyper::server::conn::http1::Builder::new()
                            .serve_connection(TokioIo::new(stream), svc)
                            .await;
                    });
                }
            }
        });
        Self { addr, log, task }
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// The paths requested so far.
    pub(crate) fn requests(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

//! rmcp's streamable HTTP service behind an `Arc`, as the MCP endpoint's
//! route holds it.
//!
//! axum clones a route's service for every request, and each layer above
//! it clones it again; rmcp's `StreamableHttpService` clones its whole
//! configuration each time, with the lists of allowed hosts and origins a
//! `String` apiece: some forty allocations and frees a request, for
//! nothing that changes (BENCHMARKS.md, "Throughput under load"). Behind
//! the `Arc` a clone is a count, and every request is answered by the one
//! service through [`StreamableHttpService::handle`], as rmcp's own
//! `Service::call` answers it from a clone.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use axum::extract::Request;
use http_body_util::combinators::BoxBody;
use rmcp::transport::streamable_http_server::StreamableHttpService;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;

use super::server::McpServer;

/// The MCP endpoint's service: rmcp's, shared.
#[derive(Clone)]
pub(crate) struct SharedMcpService(Arc<StreamableHttpService<McpServer, LocalSessionManager>>);

impl SharedMcpService {
    /// Shares `service`.
    pub(crate) fn new(service: StreamableHttpService<McpServer, LocalSessionManager>) -> Self {
        Self(Arc::new(service))
    }
}

impl tower::Service<Request<Body>> for SharedMcpService {
    type Response = http::Response<BoxBody<Bytes, Infallible>>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    /// Always ready, as rmcp's service is.
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let service = self.0.clone();
        Box::pin(async move { Ok(service.handle(request).await) })
    }
}

//! `/metrics` beside `/mcp` (rule X1): the host's [`Metrics`] for
//! Prometheus to scrape, behind the MCP endpoint's own guard, a token of
//! its own, or none.

use std::sync::Arc;

use crate::http::require_token;
use axum::extract::Request;
use axum::http::header;
use axum::middleware;
use axum::response::{IntoResponse, Response};
use toolhost_core::metrics::{Metrics, OPENMETRICS_CONTENT_TYPE, TEXT_CONTENT_TYPE};

/// The path the metrics are served at.
pub const METRICS_PATH: &str = "/metrics";

/// What `/metrics` serves, and to whom.
#[derive(Clone)]
pub struct MetricsEndpoint {
    /// The metrics served: the host's.
    pub metrics: Metrics,
    /// Who may read them.
    pub access: MetricsAccess,
}

/// Who may read `/metrics`.
#[derive(Clone)]
#[non_exhaustive]
pub enum MetricsAccess {
    /// Whoever may call the MCP endpoint: the same bearer token, or the
    /// same OAuth access tokens, or anyone on a server that asks for none.
    AsMcp,
    /// Whoever presents this bearer token (`Authorization: Bearer TOKEN`),
    /// whatever the MCP endpoint asks for: a scraper's own credential.
    Token(Arc<str>),
    /// Anyone who can reach the port.
    Open,
}

impl std::fmt::Debug for MetricsEndpoint {
    /// Never prints the token.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let access = match self.access {
            MetricsAccess::AsMcp => "as /mcp",
            MetricsAccess::Token(_) => "token",
            MetricsAccess::Open => "open",
        };
        f.debug_struct("MetricsEndpoint")
            .field("access", &access)
            .finish()
    }
}

/// Adds `/metrics` to `app` before the MCP endpoint's guard is layered on,
/// so that the guard covers it too; for [`MetricsAccess::AsMcp`] only.
pub(crate) fn route_as_mcp(app: axum::Router, endpoint: Option<&MetricsEndpoint>) -> axum::Router {
    match endpoint {
        Some(
            endpoint @ MetricsEndpoint {
                access: MetricsAccess::AsMcp,
                ..
            },
        ) => app.route(METRICS_PATH, get(endpoint.metrics.clone())),
        _ => app,
    }
}

/// Adds `/metrics` to `app` after the MCP endpoint's guard: open, or
/// behind its own token; for the other kinds of access.
pub(crate) fn route_own(app: axum::Router, endpoint: Option<&MetricsEndpoint>) -> axum::Router {
    let Some(endpoint) = endpoint else {
        return app;
    };
    let route = axum::Router::new().route(METRICS_PATH, get(endpoint.metrics.clone()));
    match &endpoint.access {
        MetricsAccess::AsMcp => app,
        MetricsAccess::Open => app.merge(route),
        MetricsAccess::Token(token) => {
            app.merge(route.layer(middleware::from_fn_with_state(token.clone(), require_token)))
        }
    }
}

fn get(metrics: Metrics) -> axum::routing::MethodRouter {
    axum::routing::get(move |req: Request| {
        let metrics = metrics.clone();
        async move { scrape(&metrics, &req) }
    })
}

/// The metrics, in OpenMetrics for a scraper that asks for it
/// (Prometheus does), else in the Prometheus text format.
fn scrape(metrics: &Metrics, req: &Request) -> Response {
    let openmetrics = req
        .headers()
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.contains("application/openmetrics-text"));
    let (content_type, body) = if openmetrics {
        (OPENMETRICS_CONTENT_TYPE, metrics.encode_openmetrics())
    } else {
        (TEXT_CONTENT_TYPE, metrics.encode_text())
    };
    ([(header::CONTENT_TYPE, content_type)], body).into_response()
}

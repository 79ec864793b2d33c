//! The names of the HTTP headers read on every request, made once: a
//! lookup by `&str` parses and checks the name on each call.

use http::HeaderName;

/// The session a request belongs to.
#[cfg(feature = "server")]
pub(crate) static MCP_SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
/// The protocol version a request speaks (2025-06-18 and later).
#[cfg(all(feature = "server", feature = "http"))]
pub(crate) static MCP_PROTOCOL_VERSION: HeaderName =
    HeaderName::from_static("mcp-protocol-version");
/// The JSON-RPC method of a request (2026-07-28 and later).
#[cfg(all(feature = "server", feature = "http"))]
pub(crate) static MCP_METHOD: HeaderName = HeaderName::from_static("mcp-method");
/// W3C trace context: the caller's span.
pub(crate) static TRACEPARENT: HeaderName = HeaderName::from_static("traceparent");
/// W3C trace context: vendors' state.
pub(crate) static TRACESTATE: HeaderName = HeaderName::from_static("tracestate");
/// W3C baggage.
pub(crate) static BAGGAGE: HeaderName = HeaderName::from_static("baggage");

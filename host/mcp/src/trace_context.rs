//! W3C trace context in and out of MCP requests (rule X2): read from a
//! `tools/call` request's `_meta` (`traceparent`, `tracestate`, `baggage`;
//! MCP 2026-07-28, SEP-414) or, over streamable HTTP, from the request's
//! `traceparent`, `tracestate` and `baggage` headers; written into the
//! `_meta` of a call forwarded to a remote server.
//!
//! When both carry a well-formed `traceparent`, `_meta` wins: it belongs
//! to the one request, where a header may have been set by a proxy for the
//! whole connection. A malformed one counts as absent, and the context's
//! `tracestate` and baggage always come from where its `traceparent` did.

use crate::header_names;
use rmcp::model::MetaObject;
use toolhost_core::{CallContext, TraceContext};

/// The trace context a call request came with: its `_meta`'s, else its
/// HTTP headers' (`headers`: `None` over stdio).
#[cfg_attr(not(feature = "server"), allow(dead_code))]
pub(crate) fn incoming(
    meta: &[Option<&MetaObject>],
    headers: Option<&http::HeaderMap>,
) -> Option<TraceContext> {
    for meta in meta.iter().flatten() {
        if let Some(parent) = meta.get_traceparent()
            && let Some(tc) =
                TraceContext::from_w3c(parent, meta.get_tracestate(), meta.get_baggage())
        {
            return Some(tc);
        }
    }
    let headers = headers?;
    let header = |name| headers.get(name).and_then(|v| v.to_str().ok());
    TraceContext::from_w3c(
        header(&header_names::TRACEPARENT)?,
        header(&header_names::TRACESTATE),
        header(&header_names::BAGGAGE),
    )
}

/// The trace context of the `tools/call` request `request`, which came
/// with `context`: its params' `_meta`, the request's, else its HTTP
/// headers.
#[cfg(feature = "server")]
pub(crate) fn of_call(
    request: &rmcp::model::CallToolRequestParams,
    context: &rmcp::service::RequestContext<rmcp::RoleServer>,
) -> Option<TraceContext> {
    incoming(
        &[request.meta.as_deref(), Some(&*context.meta)],
        context
            .extensions
            .get::<http::request::Parts>()
            .map(|parts| &parts.headers),
    )
}

/// Writes `ctx`'s trace context, if it has one, into `params`' `_meta`,
/// replacing whatever trace context was there.
#[cfg_attr(not(feature = "client"), allow(dead_code))]
pub(crate) fn inject(params: &mut impl rmcp::model::RequestParamsMeta, ctx: &CallContext) {
    let Some(tc) = ctx.trace_context() else {
        return;
    };
    params.set_traceparent(&tc.traceparent());
    match tc.tracestate() {
        Some(state) => params.set_tracestate(state),
        None => drop(params.meta_or_default().0.0.remove("tracestate")),
    }
    match tc.baggage() {
        Some(baggage) => params.set_baggage(baggage),
        None => drop(params.meta_or_default().0.0.remove("baggage")),
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::{CallToolRequestParams, RequestParamsMeta as _};

    use super::*;

    const PARENT: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    const OTHER: &str = "00-11111111111111111111111111111111-2222222222222222-01";

    fn meta(pairs: &[(&str, &str)]) -> MetaObject {
        let mut m = MetaObject::new();
        for (k, v) in pairs {
            m.0.insert((*k).into(), (*v).into());
        }
        m
    }

    fn headers(pairs: &[(&'static str, &str)]) -> http::HeaderMap {
        let mut h = http::HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn x2_meta_wins_over_headers_and_a_malformed_one_counts_as_absent() {
        let m = meta(&[("traceparent", PARENT), ("tracestate", "a=1")]);
        let h = headers(&[("traceparent", OTHER), ("tracestate", "b=2")]);
        let tc = incoming(&[Some(&m)], Some(&h)).unwrap();
        assert_eq!(tc.traceparent(), PARENT);
        assert_eq!(tc.tracestate(), Some("a=1"));
        // Only headers.
        let tc = incoming(&[None], Some(&h)).unwrap();
        assert_eq!(tc.traceparent(), OTHER);
        assert_eq!(tc.tracestate(), Some("b=2"));
        // A malformed `_meta` one: the headers'.
        let bad = meta(&[("traceparent", "00-zz"), ("tracestate", "a=1")]);
        let tc = incoming(&[Some(&bad)], Some(&h)).unwrap();
        assert_eq!(tc.traceparent(), OTHER);
        // Not a string, or nothing at all: none.
        let mut odd = MetaObject::new();
        odd.0.insert("traceparent".into(), serde_json::json!(42));
        assert!(incoming(&[Some(&odd)], None).is_none());
        assert!(incoming(&[None], None).is_none());
        let hostile = headers(&[("traceparent", &format!("{PARENT}{}", "0".repeat(5000)))]);
        assert!(incoming(&[None], Some(&hostile)).is_none());
    }

    #[test]
    fn x2_a_forwarded_call_carries_the_calls_trace_context_in_meta() {
        let tc = TraceContext::from_w3c(PARENT, Some("a=1"), Some("k=v")).unwrap();
        let ctx = CallContext::new().with_trace_context(tc);
        let mut params = CallToolRequestParams::new("echo");
        params.set_traceparent(OTHER);
        params.set_tracestate("stale=1");
        inject(&mut params, &ctx);
        let wire = serde_json::to_value(&params).unwrap();
        assert_eq!(wire["_meta"]["traceparent"], PARENT);
        assert_eq!(wire["_meta"]["tracestate"], "a=1");
        assert_eq!(wire["_meta"]["baggage"], "k=v");
        // No trace context: the request is left as it is.
        let mut params = CallToolRequestParams::new("echo");
        inject(&mut params, &CallContext::new());
        assert!(
            serde_json::to_value(&params)
                .unwrap()
                .get("_meta")
                .is_none()
        );
    }
}

//! Asks the host for HTTP timeouts longer than its call (rule C2): a
//! first-byte and a between-bytes timeout of a day, a connect timeout of a
//! day, against a server that accepts and never answers. The host clamps
//! them to what is left of the call, and the call ends at its deadline.

use toolhost_sdk::prelude::*;
use wasip2::http::outgoing_handler;
use wasip2::http::types::{
    Fields, FutureIncomingResponse, Method, OutgoingBody, OutgoingRequest, RequestOptions, Scheme,
};

/// Starts a GET of `url` with the given options and returns the pending
/// response without waiting for it.
fn start(url: &str, options: Option<RequestOptions>) -> Result<FutureIncomingResponse, ToolError> {
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| ToolError::failed("no scheme"))?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let req = OutgoingRequest::new(Fields::new());
    let _ = req.set_method(&Method::Get);
    let _ = req.set_scheme(Some(&if scheme == "https" {
        Scheme::Https
    } else {
        Scheme::Http
    }));
    let _ = req.set_authority(Some(authority));
    let _ = req.set_path_with_query(Some(path));
    let body = req.body().map_err(|()| ToolError::failed("no body"))?;
    let future = outgoing_handler::handle(req, options)
        .map_err(|e| ToolError::failed(format!("refused: {e:?}")))?;
    OutgoingBody::finish(body, None).map_err(|e| ToolError::failed(format!("{e:?}")))?;
    Ok(future)
}

/// Waits for a response and describes what came back.
fn wait(future: &FutureIncomingResponse) -> String {
    future.subscribe().block();
    match future.get() {
        Some(Ok(Ok(r))) => format!("status {}", r.status()),
        Some(Ok(Err(e))) => format!("error {e:?}"),
        other => format!("{other:?}"),
    }
}

#[derive(Deserialize, JsonSchema)]
struct Url {
    url: String,
}

const DAY_NS: u64 = 86_400 * 1_000_000_000;

fn stall(a: Url, _: &CallInfo) -> Result<Output, ToolError> {
    let options = RequestOptions::new();
    let _ = options.set_connect_timeout(Some(DAY_NS));
    let _ = options.set_first_byte_timeout(Some(DAY_NS));
    let _ = options.set_between_bytes_timeout(Some(DAY_NS));
    let future = start(&a.url, Some(options))?;
    Ok(Output::text(wait(&future)))
}

fn register(tools: &mut Tools) {
    tools.add("stall", "waits a day for a first byte", stall);
}

toolhost_sdk::tool_plugin!(register);

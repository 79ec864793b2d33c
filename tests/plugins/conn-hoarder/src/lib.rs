//! Holds as many outgoing connections open as it can (rule C4): starts 64
//! requests at once to a granted server that answers slowly, then waits for
//! all of them. The host bounds the plugin's requests in flight.

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
struct Many {
    url: String,
    count: u32,
}

fn many(a: Many, _: &CallInfo) -> Result<Output, ToolError> {
    let mut started = Vec::new();
    let mut refused = 0;
    for _ in 0..a.count {
        match start(&a.url, None) {
            Ok(f) => started.push(f),
            Err(_) => refused += 1,
        }
    }
    let outcomes: Vec<String> = started.iter().map(wait).collect();
    let ok = outcomes
        .iter()
        .filter(|o| o.starts_with("status 200"))
        .count();
    Ok(Output::text(format!(
        "{ok} answered, {} failed, {refused} refused at once",
        outcomes.len() - ok
    )))
}

fn register(tools: &mut Tools) {
    tools.add("many", "starts `count` requests at once", many);
}

toolhost_sdk::tool_plugin!(register);

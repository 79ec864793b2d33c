//! Tries to make the host hold what its own memory limit does not count,
//! through the head of outgoing requests (rules C3, C11): requests that
//! park a long authority, method or header map in the host, a loop of
//! refused requests whose reasons the host would keep and log, and header
//! lists of many empty entries, each a few bytes of the guest's memory and
//! a string and a vector in the host's; and requests dropped as soon as
//! their name lookup has started, each lookup a thread of the host's that
//! runs on until the resolver answers (rule C4).

use toolhost_sdk::prelude::*;
use wasip2::clocks::monotonic_clock::subscribe_duration;
use wasip2::http::outgoing_handler;
use wasip2::http::types::{Fields, Method, OutgoingRequest, Scheme};

#[derive(Deserialize, JsonSchema)]
struct Sized {
    /// How many bytes the part set is.
    bytes: usize,
}

#[derive(Deserialize, JsonSchema)]
struct Flood {
    /// How many refused requests to make.
    times: usize,
    /// How long each request's host name is, in bytes (when `host` is not
    /// given).
    #[serde(default)]
    host_bytes: usize,
    /// The host each request is sent to, instead of a made-up name.
    host: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
struct Entries {
    /// How many entries the list has.
    entries: usize,
}

#[derive(Deserialize, JsonSchema)]
struct Abandon {
    /// How many requests to start and drop.
    times: usize,
    /// The host each is sent to.
    host: String,
}

/// A request for `http://{host}/`.
fn request_to(host: &str) -> OutgoingRequest {
    let req = OutgoingRequest::new(Fields::new());
    let _ = req.set_scheme(Some(&Scheme::Http));
    let _ = req.set_authority(Some(host));
    let _ = req.set_path_with_query(Some("/"));
    req
}

/// Starts `times` requests to `host`, each dropped after at most a
/// millisecond, when its name lookup has started but may not have ended.
fn abandon(a: Abandon, _: &CallInfo) -> Result<Output, ToolError> {
    let mut dropped = 0;
    for _ in 0..a.times {
        if let Ok(future) = outgoing_handler::handle(request_to(&a.host), None) {
            let (answer, tick) = (future.subscribe(), subscribe_duration(1_000_000));
            wasip2::io::poll::poll(&[&answer, &tick]);
            dropped += 1;
        }
    }
    Ok(Output::text(format!("{dropped} requests dropped")))
}

/// `fields.from-list` of `entries` empty values of one header.
fn from_list(a: Entries, _: &CallInfo) -> Result<Output, ToolError> {
    let list = vec![("x-a".to_string(), Vec::new()); a.entries];
    let accepted = Fields::from_list(&list).is_ok();
    Ok(Output::text(format!("from-list accepted: {accepted}")))
}

/// `fields.set` of one header to `entries` empty values.
fn set_values(a: Entries, _: &CallInfo) -> Result<Output, ToolError> {
    let values = vec![Vec::new(); a.entries];
    let accepted = Fields::new().set("x-a", &values).is_ok();
    Ok(Output::text(format!("set accepted: {accepted}")))
}

/// A host name of `bytes` bytes: labels of at most 63 letters.
fn host_name(bytes: usize) -> String {
    let mut name = String::with_capacity(bytes);
    while name.len() < bytes {
        if !name.is_empty() {
            name.push('.');
        }
        let label = (bytes - name.len()).min(63);
        name.extend(std::iter::repeat_n('a', label));
    }
    name
}

/// Sets an authority of `bytes` bytes on 200 requests it keeps (within
/// the 256 handles of an instance): says how many the host accepted.
fn authority(a: Sized, _: &CallInfo) -> Result<Output, ToolError> {
    let name = host_name(a.bytes);
    let mut held = Vec::new();
    let mut accepted = 0;
    for _ in 0..200 {
        let req = OutgoingRequest::new(Fields::new());
        if req.set_authority(Some(&name)).is_ok() {
            accepted += 1;
        }
        held.push(req);
    }
    Ok(Output::text(format!(
        "accepted {accepted} of {}",
        held.len()
    )))
}

/// Sets an extension method of `bytes` bytes: says whether the host
/// accepted it.
fn method(a: Sized, _: &CallInfo) -> Result<Output, ToolError> {
    let req = OutgoingRequest::new(Fields::new());
    let set = req.set_method(&Method::Other("X".repeat(a.bytes)));
    Ok(Output::text(format!("method accepted: {}", set.is_ok())))
}

/// Appends a header whose value is `bytes` bytes: says whether the host
/// accepted it.
fn header(a: Sized, _: &CallInfo) -> Result<Output, ToolError> {
    let fields = Fields::new();
    let set = fields.append("x-big", &vec![b'v'; a.bytes]);
    Ok(Output::text(format!("header accepted: {}", set.is_ok())))
}

/// Sends `times` requests to a host no policy grants, then fails (the
/// host adds its reasons for refusing them).
fn flood(a: Flood, _: &CallInfo) -> Result<Output, ToolError> {
    let name = a.host.unwrap_or_else(|| host_name(a.host_bytes));
    let mut refused = 0;
    for _ in 0..a.times {
        match outgoing_handler::handle(request_to(&name), None) {
            Err(_) => refused += 1,
            Ok(future) => {
                future.subscribe().block();
                if !matches!(future.get(), Some(Ok(Ok(_)))) {
                    refused += 1;
                }
            }
        }
    }
    Err(ToolError::failed(format!("{refused} requests refused")))
}

fn register(tools: &mut Tools) {
    tools.add(
        "authority",
        "keeps 200 requests with a long authority",
        authority,
    );
    tools.add("method", "sets a long extension method", method);
    tools.add("header", "appends a long header", header);
    tools.add("flood", "sends requests no policy grants, in a loop", flood);
    tools.add(
        "abandon",
        "starts requests and drops each as its name lookup starts",
        abandon,
    );
    tools.add(
        "from_list",
        "builds fields from a list of empty values",
        from_list,
    );
    tools.add(
        "set_values",
        "sets one header to many empty values",
        set_values,
    );
}

toolhost_sdk::tool_plugin!(register);

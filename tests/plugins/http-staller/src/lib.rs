//! Asks the host for HTTP timeouts longer than its call (rule C2): a
//! first-byte and a between-bytes timeout of a day, a connect timeout of a
//! day, against a server that accepts and never answers. The host clamps
//! them to what is left of the call, and the call ends at its deadline.

use hostile_kit::http::{start, wait};
use toolhost_sdk::prelude::*;

#[derive(Deserialize, JsonSchema)]
struct Url {
    url: String,
}

const DAY_NS: u64 = 86_400 * 1_000_000_000;

fn stall(a: Url, _: &CallInfo) -> Result<Output, ToolError> {
    let options = hostile_kit::http::Options::new();
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

//! Holds as many outgoing connections open as it can (rule C4): starts 64
//! requests at once to a granted server that answers slowly, then waits for
//! all of them. The host bounds the plugin's requests in flight.

use hostile_kit::http::{start, wait};
use toolhost_sdk::prelude::*;

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

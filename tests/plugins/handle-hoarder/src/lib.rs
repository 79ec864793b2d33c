//! Hoards host handles that are not files (rule C4): a million clock
//! pollables, each a resource the host keeps in the call's table.

use toolhost_sdk::prelude::*;
use wasip2::clocks::monotonic_clock::subscribe_duration;

#[derive(Deserialize, JsonSchema)]
struct NoArgs {}

fn pollables(_: NoArgs, _: &CallInfo) -> Result<Output, ToolError> {
    let mut held = Vec::new();
    for _ in 0..1_000_000 {
        held.push(subscribe_duration(1_000_000_000));
    }
    Ok(Output::text(format!("held {} pollables", held.len())))
}

fn register(tools: &mut Tools) {
    tools.add("pollables", "creates a million pollables", pollables);
}

toolhost_sdk::tool_plugin!(register);

//! Spins through host calls (rule C1): a loop that calls the host's
//! `remaining-ms` and logs nothing, never returning. Between host calls it
//! runs wasm, so the epoch stops it; it must not be able to hide in the
//! host's side of the boundary.

use toolhost_sdk::prelude::*;

#[derive(Deserialize, JsonSchema)]
struct NoArgs {}

fn spin(_: NoArgs, _: &CallInfo) -> Result<Output, ToolError> {
    let mut sum = 0u64;
    loop {
        sum = sum.wrapping_add(toolhost_sdk::log::remaining_ms().unwrap_or(1));
        std::hint::black_box(sum);
    }
}

fn register(tools: &mut Tools) {
    tools.add("spin", "calls the host in a loop for ever", spin);
}

toolhost_sdk::tool_plugin!(register);

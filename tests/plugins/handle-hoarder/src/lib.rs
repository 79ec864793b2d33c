//! Hoards host handles that are not files (rule C4): a million clock
//! pollables, each a resource the host keeps in the call's table; and one
//! pollable listed two million times in one `poll`, each entry four bytes
//! of its own memory and several times that in the host's (rule C3).

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

fn poll_flood(_: NoArgs, _: &CallInfo) -> Result<Output, ToolError> {
    let ready = subscribe_duration(0);
    let list = vec![&ready; 2 << 20];
    let answered = wasip2::io::poll::poll(&list);
    Ok(Output::text(format!("{} ready", answered.len())))
}

fn register(tools: &mut Tools) {
    tools.add("pollables", "creates a million pollables", pollables);
    tools.add(
        "poll_flood",
        "polls one pollable listed two million times",
        poll_flood,
    );
}

toolhost_sdk::tool_plugin!(register);

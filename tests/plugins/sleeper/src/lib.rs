//! Attacks on deadlines from inside host calls (rule C1): while the guest
//! waits in the host it runs no wasm, so epoch interruption alone never
//! stops it; the host must drop the call at its deadline.

use std::time::Duration;

use toolhost_sdk::prelude::*;
use wasip2::clocks::monotonic_clock::subscribe_duration;

#[derive(Deserialize, JsonSchema)]
struct NoArgs {}

const HOUR_NS: u64 = 3600 * 1_000_000_000;

fn sleep(_: NoArgs, _: &CallInfo) -> Result<Output, ToolError> {
    std::thread::sleep(Duration::from_secs(30));
    Ok(Output::text("woke up"))
}

fn pollable(_: NoArgs, _: &CallInfo) -> Result<Output, ToolError> {
    subscribe_duration(HOUR_NS).block();
    Ok(Output::text("an hour passed"))
}

fn poll_many(_: NoArgs, _: &CallInfo) -> Result<Output, ToolError> {
    let far: Vec<_> = (0..8).map(|i| subscribe_duration(HOUR_NS + i)).collect();
    let refs: Vec<_> = far.iter().collect();
    wasip2::io::poll::poll(&refs);
    Ok(Output::text("polled"))
}

/// Short waits in the host, with a little wasm between them, for ever.
fn nap_loop(_: NoArgs, _: &CallInfo) -> Result<Output, ToolError> {
    loop {
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Ignores the deadline the host tells it about.
fn outlive(_: NoArgs, info: &CallInfo) -> Result<Output, ToolError> {
    let left = info.deadline_ms.unwrap_or(0);
    std::thread::sleep(Duration::from_millis(left.saturating_mul(10).max(5_000)));
    Ok(Output::text("outlived"))
}

/// Says it started, then sleeps: tells the host which calls ever ran.
fn log_then_sleep(_: NoArgs, _: &CallInfo) -> Result<Output, ToolError> {
    toolhost_sdk::log::info("started sleeping");
    std::thread::sleep(Duration::from_secs(30));
    Ok(Output::text("woke up"))
}

fn fine(_: NoArgs, _: &CallInfo) -> Result<Output, ToolError> {
    Ok(Output::text("still here"))
}

fn register(tools: &mut Tools) {
    tools.add("sleep", "sleeps 30 s in the host", sleep);
    tools.add("pollable", "blocks on a clock an hour away", pollable);
    tools.add("poll_many", "polls several far clocks", poll_many);
    tools.add("nap_loop", "naps for ever", nap_loop);
    tools.add("outlive", "sleeps ten times its deadline", outlive);
    tools.add("log_then_sleep", "logs, then sleeps 30 s", log_then_sleep);
    tools.add("fine", "behaves", fine).safe();
}

toolhost_sdk::tool_plugin!(register);

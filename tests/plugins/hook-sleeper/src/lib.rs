//! An extension that waits inside the host from its hooks and its prompt
//! (rule C1): every hook runs under the plugin's timeout, and a before hook
//! that overruns refuses the call.

use std::time::Duration;

use toolhost_sdk::prelude::*;

struct HookSleeper;

impl Extension for HookSleeper {
    fn system_prompt() -> Option<String> {
        std::thread::sleep(Duration::from_secs(3600));
        Some("never".into())
    }

    fn before_call(call: &HookCall) -> Result<(), String> {
        if call.tool == "sleep_before" {
            std::thread::sleep(Duration::from_secs(3600));
        }
        Ok(())
    }

    fn after_call(call: &HookCall, _: &CallOutcome) {
        if call.tool == "sleep_after" {
            std::thread::sleep(Duration::from_secs(3600));
        }
    }
}

#[derive(Deserialize, JsonSchema)]
struct NoArgs {}

fn ok(_: NoArgs, _: &CallInfo) -> Result<Output, ToolError> {
    Ok(Output::text("ran"))
}

fn register(tools: &mut Tools) {
    tools
        .add("sleep_before", "its before hook sleeps", ok)
        .safe();
    tools.add("sleep_after", "its after hook sleeps", ok).safe();
    tools.add("calm", "no hook sleeps", ok).safe();
}

toolhost_sdk::extension!(HookSleeper, tools = register);

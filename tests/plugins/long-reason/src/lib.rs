//! A guard whose rejection reason is 50 MB (rule C3): the host refuses to
//! carry it and refuses the call all the same (fail closed).

use toolhost_sdk::prelude::*;

struct LongReason;

impl Extension for LongReason {
    fn before_call(call: &HookCall) -> Result<(), String> {
        match call.tool.as_str() {
            "refuse_long" => Err("no".repeat(25 << 20)),
            "refuse_short" => Err("not this one".into()),
            _ => Ok(()),
        }
    }
}

#[derive(Deserialize, JsonSchema)]
struct NoArgs {}

fn ok(_: NoArgs, _: &CallInfo) -> Result<Output, ToolError> {
    Ok(Output::text("ran"))
}

fn register(tools: &mut Tools) {
    tools.add("refuse_long", "refused at length", ok).safe();
    tools.add("refuse_short", "refused briefly", ok).safe();
    tools.add("allowed", "allowed", ok).safe();
}

toolhost_sdk::extension!(LongReason, tools = register);

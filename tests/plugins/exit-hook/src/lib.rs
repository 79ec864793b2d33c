//! An extension whose before hook ends its own instance (WASI `exit`)
//! instead of answering: the call is refused (fail closed), naming it.

use toolhost_sdk::prelude::*;

struct ExitHook;

impl Extension for ExitHook {
    fn before_call(call: &HookCall) -> Result<(), String> {
        if call.tool.starts_with("exit") {
            std::process::exit(std::hint::black_box(0));
        }
        Ok(())
    }
}

#[derive(Deserialize, JsonSchema)]
struct NoArgs {}

fn ok(_: NoArgs, _: &CallInfo) -> Result<Output, ToolError> {
    Ok(Output::text("ran"))
}

fn register(tools: &mut Tools) {
    tools.add("exit_me", "its before hook exits", ok).safe();
}

toolhost_sdk::extension!(ExitHook, tools = register);

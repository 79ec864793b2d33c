//! Errors too large to carry (rule C3): a 50 MB failure message, a 50 MB
//! JSON path, a 50 MB unknown tool name.

use toolhost_sdk::prelude::*;

#[derive(Deserialize, JsonSchema)]
struct NoArgs {}

const BIG: usize = 50 << 20;

fn long_failure(_: NoArgs, _: &CallInfo) -> Result<Output, ToolError> {
    Err(ToolError::failed("f".repeat(BIG)))
}

fn long_path(_: NoArgs, _: &CallInfo) -> Result<Output, ToolError> {
    Err(ToolError::invalid("/".repeat(BIG), "bad"))
}

fn short_failure(_: NoArgs, _: &CallInfo) -> Result<Output, ToolError> {
    Err(ToolError::failed("a short, honest failure"))
}

fn register(tools: &mut Tools) {
    tools.add("long_failure", "fails with 50 MB of message", long_failure);
    tools.add("long_path", "fails with 50 MB of JSON path", long_path);
    tools.add("short_failure", "fails politely", short_failure);
}

toolhost_sdk::tool_plugin!(register);

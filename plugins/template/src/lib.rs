//! The smallest useful toolhost plugin: one tool that echoes its text.

use toolhost_sdk::prelude::*;

/// Arguments of `echo`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct EchoArgs {
    /// The text to send back.
    text: String,
}

fn echo(args: EchoArgs, _call: &CallInfo) -> Result<Output, ToolError> {
    Ok(Output::text(args.text))
}

fn register(tools: &mut Tools) {
    tools
        .add("echo", "Returns the text it is given", echo)
        .safe()
        .idempotent();
}

toolhost_sdk::tool_plugin!(register);

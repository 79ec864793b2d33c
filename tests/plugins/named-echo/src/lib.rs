//! The template plugin's `echo` under the name its `tool` setting gives
//! (`echo` without it): ten copies of one echo, each under its own name,
//! for the benchmark against hyper-mcp (`bench/src/bin/peers/hyper.rs`),
//! where one host loads the same plugin ten times.

use toolhost_sdk::prelude::*;

toolhost_sdk::settings_schema!(
    r#"{
    "type": "object",
    "properties": {"tool": {"type": "string", "maxLength": 64}},
    "additionalProperties": false
}"#
);

/// Arguments of the echo.
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
    let name = toolhost_sdk::settings::get("tool").unwrap_or_else(|| "echo".into());
    tools
        .add(&name, "Returns the text it is given", echo)
        .safe()
        .idempotent()
        .read_only();
}

toolhost_sdk::tool_plugin!(register);

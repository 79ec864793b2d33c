//! The smallest useful toolhost plugin: one tool that echoes its text, and
//! one setting (`prefix`, put before every answer).

use toolhost_sdk::prelude::*;

// What `[plugins.NAME.settings]` may hold; the host checks it at load.
toolhost_sdk::settings_schema!(
    r#"{
    "type": "object",
    "properties": {"prefix": {"type": "string", "maxLength": 64}},
    "additionalProperties": false
}"#
);

/// Arguments of `echo`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct EchoArgs {
    /// The text to send back.
    text: String,
}

fn echo(args: EchoArgs, _call: &CallInfo) -> Result<Output, ToolError> {
    let prefix = toolhost_sdk::settings::get("prefix").unwrap_or_default();
    Ok(Output::text(format!("{prefix}{}", args.text)))
}

fn register(tools: &mut Tools) {
    tools
        .add("echo", "Returns the text it is given", echo)
        .safe()
        .idempotent()
        .read_only();
}

toolhost_sdk::tool_plugin!(register);

//! {{name}}: a toolhost plugin. Build it with
//! `cargo build --release --target wasm32-wasip2`.

use toolhost_sdk::prelude::*;

// The settings `[plugins.{{name}}.settings]` may hold, as a JSON Schema: the
// host checks them when it loads the plugin (and `toolhost check` before).
toolhost_sdk::settings_schema!(
    r#"{
    "type": "object",
    "properties": {"prefix": {"type": "string", "maxLength": 64}},
    "additionalProperties": false
}"#
);

/// Arguments of `{{tool}}`. Doc comments become the schema's descriptions,
/// which the model reads.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// The text to send back.
    text: String,
}

fn {{tool}}(args: Args, _call: &CallInfo) -> Result<Output, ToolError> {
    if args.text.is_empty() {
        return Err(ToolError::invalid("/text", "the text is empty"));
    }
    // A setting, read through `wasi:config/store`.
    let prefix = toolhost_sdk::settings::get("prefix").unwrap_or_default();
    Ok(Output::text(format!("{prefix}{}", args.text)))
}

fn register(tools: &mut Tools) {
    tools
        .add("{{tool}}", "Returns the text it is given", {{tool}})
        .safe()
        .idempotent()
        // It changes nothing (MCP's readOnlyHint) and reaches nothing
        // outside itself.
        .read_only()
        .open_world(false);
}

toolhost_sdk::tool_plugin!(register);

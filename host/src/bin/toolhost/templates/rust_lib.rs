//! {{name}}: a toolhost plugin. Build it with
//! `cargo build --release --target wasm32-wasip2`.

use toolhost_sdk::prelude::*;

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
    Ok(Output::text(args.text))
}

fn register(tools: &mut Tools) {
    tools
        .add("{{tool}}", "Returns the text it is given", {{tool}})
        .safe()
        .idempotent();
}

toolhost_sdk::tool_plugin!(register);

//! hyper-mcp's side of its benchmark: the template plugin's `echo` as a
//! hyper-mcp plugin. `describe` answers a `ListToolsResult`, `call` takes
//! `{"params": CallToolRequestParams}` and answers a `CallToolResult`, both
//! as JSON. With the configuration key `spin` set to `on`, the plugin also
//! lists `spin`, which never returns: the runaway of the deadline
//! measurement.

use extism_pdk::*;
use serde_json::{Value, json};

fn spinning() -> bool {
    config::get("spin").ok().flatten().as_deref() == Some("on")
}

/// The tools, as MCP lists them.
#[plugin_fn]
pub fn describe(_input: String) -> FnResult<String> {
    let mut tools = vec![json!({
        "name": "echo",
        "description": "Returns the text it is given",
        "inputSchema": {
            "type": "object",
            "properties": {"text": {"type": "string", "description": "The text to send back."}},
            "required": ["text"],
            "additionalProperties": false
        },
        "annotations": {"readOnlyHint": true, "idempotentHint": true}
    })];
    if spinning() {
        tools.push(json!({
            "name": "spin",
            "description": "loops forever",
            "inputSchema": {"type": "object", "properties": {}}
        }));
    }
    Ok(json!({ "tools": tools }).to_string())
}

fn text(s: &str, error: bool) -> String {
    json!({"content": [{"type": "text", "text": s}], "isError": error}).to_string()
}

/// One tool call.
#[plugin_fn]
pub fn call(input: String) -> FnResult<String> {
    let request: Value = serde_json::from_str(&input)?;
    let params = &request["params"];
    match params["name"].as_str() {
        Some("echo") => match params["arguments"]["text"].as_str() {
            Some(t) => Ok(text(t, false)),
            None => Ok(text("`text` must be a string", true)),
        },
        Some("spin") if spinning() => {
            let mut n: u64 = 0;
            loop {
                n = std::hint::black_box(n.wrapping_add(1));
            }
        }
        _ => Ok(text("no such tool", true)),
    }
}

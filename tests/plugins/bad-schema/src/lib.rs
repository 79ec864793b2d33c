//! Declares a tool whose parameters schema is JSON but not a schema that
//! compiles. The host must refuse to load the plugin, naming the tool.

use toolhost_sdk::bindings::types;

struct BadSchema;

impl toolhost_sdk::bindings::tool_world::exports::toolhost::plugin::tool::Guest for BadSchema {
    fn list_tools() -> Vec<types::ToolDescriptor> {
        vec![types::ToolDescriptor {
            name: "odd".into(),
            description: "a tool with an impossible schema".into(),
            parameters_schema: r#"{"type": "no-such-type"}"#.into(),
            concurrency_safe: None,
            idempotent: false,
            output_schema: None,
            hints: types::ToolHints {
                read_only: None,
                destructive: None,
                open_world: None,
            },
        }]
    }

    fn call_tool(
        _: String,
        _: String,
        _: types::CallInfo,
    ) -> Result<types::ToolOutput, types::ToolError> {
        Ok(types::ToolOutput::Text("unreachable".into()))
    }
}

toolhost_sdk::bindings::tool_world::__export_tool_plugin!(BadSchema with_types_in toolhost_sdk::bindings::tool_world);

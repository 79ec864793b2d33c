//! Declares a tool whose parameters schema is not JSON at all. The host must
//! refuse to load the plugin, naming the tool.

use toolhost_sdk::bindings::types;

struct BadJson;

impl toolhost_sdk::bindings::tool_world::exports::toolhost::plugin::tool::Guest for BadJson {
    fn list_tools() -> Vec<types::ToolDescriptor> {
        vec![types::ToolDescriptor {
            name: "odd".into(),
            description: "a tool whose schema is cut short".into(),
            parameters_schema: r#"{"type": "object","#.into(),
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

toolhost_sdk::bindings::tool_world::__export_tool_plugin!(BadJson with_types_in toolhost_sdk::bindings::tool_world);

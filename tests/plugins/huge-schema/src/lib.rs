//! A tool whose parameters schema is 1 MB of valid JSON (rule C3).

use toolhost_sdk::bindings::tool_world::exports::toolhost::plugin::tool::Guest;
use toolhost_sdk::bindings::types::{CallInfo, ToolDescriptor, ToolError, ToolOutput};

use hostile_kit::descriptor;

struct Plugin;

impl Guest for Plugin {
    fn list_tools() -> Vec<ToolDescriptor> {
        let filler = "x".repeat(1 << 20);
        let schema = format!(r#"{{"type":"object","description":"{filler}"}}"#);
        vec![descriptor("big", "a big schema".into(), schema)]
    }

    fn call_tool(
        _name: String,
        _arguments: String,
        _info: CallInfo,
    ) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::Text("ok".into()))
    }
}

toolhost_sdk::bindings::tool_world::__export_tool_plugin!(Plugin with_types_in toolhost_sdk::bindings::tool_world);

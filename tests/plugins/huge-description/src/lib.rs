//! A tool whose description is 50 MB (rule C3).

use toolhost_sdk::bindings::tool_world::exports::toolhost::plugin::tool::Guest;
use toolhost_sdk::bindings::types::{CallInfo, ToolDescriptor, ToolError, ToolOutput};

use hostile_kit::{descriptor, object};

struct Plugin;

impl Guest for Plugin {
    fn list_tools() -> Vec<ToolDescriptor> {
        vec![descriptor("big", "d".repeat(50 << 20), object())]
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

//! Lists a million tools (rule C3): the host must refuse the list, not hold
//! gigabytes for it.

use toolhost_sdk::bindings::tool_world::exports::toolhost::plugin::tool::Guest;
use toolhost_sdk::bindings::types::{CallInfo, ToolDescriptor, ToolError, ToolOutput};

use hostile_kit::{descriptor, object};

struct Plugin;

impl Guest for Plugin {
    fn list_tools() -> Vec<ToolDescriptor> {
        (0..1_000_000)
            .map(|i| descriptor(&format!("t{i}"), String::new(), object()))
            .collect()
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

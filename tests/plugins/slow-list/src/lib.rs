//! Never finishes listing its tools: it waits an hour inside the host, so
//! loading must time out (rule C1), not hang the host at start.

use toolhost_sdk::bindings::tool_world::exports::toolhost::plugin::tool::Guest;
use toolhost_sdk::bindings::types::{CallInfo, ToolDescriptor, ToolError, ToolOutput};

use hostile_kit::{descriptor, object};

struct Plugin;

impl Guest for Plugin {
    fn list_tools() -> Vec<ToolDescriptor> {
        std::thread::sleep(std::time::Duration::from_secs(3600));
        vec![descriptor("never", "never listed".into(), object())]
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

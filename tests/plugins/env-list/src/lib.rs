//! Lists one tool per name in its `TOOL_NAMES` environment variable
//! (comma-separated), or `none` without it (rule W6): a tool list that
//! depends on what the host grants, which a cache keyed by the wasm alone
//! would serve stale.

use toolhost_sdk::bindings::tool_world::exports::toolhost::plugin::tool::Guest;
use toolhost_sdk::bindings::types::{CallInfo, ToolDescriptor, ToolError, ToolOutput};

use hostile_kit::{descriptor, object};

struct Plugin;

impl Guest for Plugin {
    fn list_tools() -> Vec<ToolDescriptor> {
        let names = std::env::var("TOOL_NAMES").unwrap_or_else(|_| "none".into());
        names
            .split(',')
            .map(|name| descriptor(name, String::new(), object()))
            .collect()
    }

    fn call_tool(
        name: String,
        _arguments: String,
        _info: CallInfo,
    ) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::Text(name))
    }
}

toolhost_sdk::bindings::tool_world::__export_tool_plugin!(Plugin with_types_in toolhost_sdk::bindings::tool_world);

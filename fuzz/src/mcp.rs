//! The MCP server fed a client's frames: over the stdio line transport and
//! as the body of a POST to `/mcp` (the properties are stated with the
//! hooks in `toolhost_mcp::fuzzing`).

use serde_json::json;

use toolhost_core::{FnTool, ToolError, ToolHost, ToolOutput, ToolSpec};
use toolhost_mcp::McpServer;

use crate::block_on;

/// A host with a tool that answers, one that fails and one whose schema
/// takes a number.
fn server() -> McpServer {
    let host = ToolHost::builder().validate_arguments(true).build();
    let object = json!({"type": "object"});
    let tools = [
        FnTool::arc(
            ToolSpec::new("echo", "echoes", object.clone()),
            |_, args| async move { Ok(ToolOutput::text(args.as_str())) },
        ),
        FnTool::arc(ToolSpec::new("fail", "fails", object), |_, _| async {
            Err(ToolError::failed("as asked"))
        }),
        FnTool::arc(
            ToolSpec::new(
                "square",
                "squares n",
                json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}),
            ),
            |_, args| async move {
                let n = args.as_value()["n"].as_i64().unwrap_or_default();
                Ok(ToolOutput::text(n.saturating_mul(n).to_string()))
            },
        ),
    ];
    for tool in tools {
        host.register_tool(tool).expect("the fuzz tools register");
    }
    McpServer::new(host)
}

/// Frames over stdio; the first byte chooses whether a handshake comes
/// first (without one, everything but `initialize` is refused).
pub fn stdio(data: &[u8]) {
    let Some((&mode, frames)) = data.split_first() else {
        return;
    };
    block_on(toolhost_mcp::fuzzing::stdio(
        server(),
        frames,
        mode & 1 == 1,
    ));
}

/// One POST body; the first byte chooses whether it is sent inside an
/// open session.
pub fn http(data: &[u8]) {
    let Some((&mode, body)) = data.split_first() else {
        return;
    };
    block_on(toolhost_mcp::fuzzing::http(
        server(),
        body.to_vec(),
        mode & 1 == 1,
    ));
}

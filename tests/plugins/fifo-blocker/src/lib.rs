//! Blocks the host's file I/O (rule C1): opens a named pipe in its granted
//! directory that nobody writes, so the open (or read) never completes on
//! the host's side. The call still ends at its deadline.

use std::io::Read;

use toolhost_sdk::prelude::*;

#[derive(Deserialize, JsonSchema)]
struct PathArg {
    path: String,
}

fn read_fifo(a: PathArg, _: &CallInfo) -> Result<Output, ToolError> {
    let mut f = std::fs::File::open(&a.path).map_err(ToolError::failed)?;
    let mut buf = Vec::new();
    f.read_to_end(&mut buf).map_err(ToolError::failed)?;
    Ok(Output::text(format!("read {} bytes", buf.len())))
}

fn register(tools: &mut Tools) {
    tools.add("read_fifo", "reads a named pipe to its end", read_fifo);
}

toolhost_sdk::tool_plugin!(register);

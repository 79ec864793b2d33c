//! rmcp's minimal MCP server for one `echo` tool, answered natively: the
//! floor under `toolhost serve`, which serves through the same library.
//! Used by the peer benchmark (`bench/src/bin/peers/`).
//!
//!     rmcp_echo              # stdio
//!     rmcp_echo --http ADDR  # streamable HTTP at http://ADDR/mcp

use rmcp::model::JsonObject;
use toolhost_bench::minimal_server::{self, Backend, Refusal};

/// The allocator of the `toolhost` command, so that the two servers differ
/// in what they do, not in how they allocate.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The echo, in Rust.
#[derive(Clone)]
struct Native;

impl Backend for Native {
    async fn echo(&self, arguments: Option<JsonObject>) -> Result<String, Refusal> {
        arguments
            .as_ref()
            .and_then(|a| a.get("text"))
            .and_then(|v| v.as_str())
            .map(str::to_owned)
            .ok_or_else(|| Refusal::InvalidParams("`text` (string) is required".into()))
    }
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    minimal_server::serve(Native, &args).await;
}

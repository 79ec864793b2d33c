//! rmcp's minimal MCP server for one `echo` tool, answered by the `echo`
//! of the component at PATH in a fresh instance per call on bare wasmtime
//! (`toolhost_bench::bare`: toolhost's engine settings, nothing else). Each
//! call does what toolhost's sandbox must do at the least (a fresh
//! instance, the call, the store dropped) and nothing more: no policy,
//! limits, validation or pipeline. Beside `rmcp_echo`, it separates what
//! the sandbox costs from what toolhost adds around it.
//!
//!     rmcp_wasm_echo PATH              # stdio
//!     rmcp_wasm_echo PATH --http ADDR  # streamable HTTP at http://ADDR/mcp

use std::path::Path;
use std::sync::Arc;

use rmcp::model::JsonObject;
use toolhost_bench::bare::{self, Bare};
use toolhost_bench::minimal_server::{self, Backend, Refusal};

/// The allocator of the `toolhost` command, as in `rmcp_echo`.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The component, linked once; an instance of it per call.
#[derive(Clone)]
struct Wasm(Arc<Bare>);

impl Backend for Wasm {
    async fn echo(&self, arguments: Option<JsonObject>) -> Result<String, Refusal> {
        let args = serde_json::to_string(&arguments.unwrap_or_default())
            .map_err(|e| Refusal::InvalidParams(e.to_string()))?;
        let (mut store, plugin) = self.0.instance().await;
        bare::call_text(&mut store, &plugin, "echo", &args)
            .await
            .map_err(Refusal::Failed)
    }
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = args
        .get(1)
        .expect("usage: rmcp_wasm_echo PATH [--http ADDR]");
    let backend = Wasm(Arc::new(Bare::new(&bare::engine(), Path::new(path))));
    minimal_server::serve(backend, &args).await;
}

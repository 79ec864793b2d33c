//! rmcp's minimal MCP server for one `echo` tool: the floor under
//! `toolhost serve`, which serves through the same library. Used by the peer
//! benchmark (`bench/src/bin/peers/`).
//!
//!     rmcp_echo              # stdio
//!     rmcp_echo --http ADDR  # streamable HTTP at http://ADDR/mcp

use std::sync::Arc;

/// The allocator of the `toolhost` command, so that the two servers differ
/// in what they do, not in how they allocate.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use axum::serve::ListenerExt as _;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt as _};

#[derive(Clone, Default)]
struct Echo;

fn echo_tool() -> Tool {
    let serde_json::Value::Object(schema) = serde_json::json!({
        "type": "object",
        "properties": { "text": { "type": "string" } },
        "required": ["text"],
    }) else {
        unreachable!("an object")
    };
    Tool::new("echo", "Returns the text it is given", Arc::new(schema))
}

impl ServerHandler for Echo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("rmcp-echo", "0.1.0"))
    }

    async fn list_tools(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(vec![echo_tool()]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name != "echo" {
            return Err(ErrorData::invalid_params("unknown tool", None));
        }
        let text = request
            .arguments
            .as_ref()
            .and_then(|a| a.get("text"))
            .and_then(|v| v.as_str())
            .ok_or_else(|| ErrorData::invalid_params("`text` (string) is required", None))?;
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
    }
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.iter().position(|a| a == "--http") {
        None => {
            let service = Echo.serve(rmcp::transport::stdio()).await.expect("stdio");
            let _ = service.waiting().await;
        }
        Some(i) => {
            let addr = args.get(i + 1).map_or("127.0.0.1:0", String::as_str);
            // rmcp's defaults, as `toolhost serve --http` keeps them (SSE
            // keep-alive and retry priming): the same library, configured
            // alike, minus toolhost's checks and tools.
            let config = StreamableHttpServerConfig::default();
            let service: StreamableHttpService<Echo, LocalSessionManager> =
                StreamableHttpService::new(|| Ok(Echo), Default::default(), config);
            let router = axum::Router::new().nest_service("/mcp", service);
            let listener = tokio::net::TcpListener::bind(addr).await.expect("binds");
            let local = listener.local_addr().expect("an address");
            // As toolhost does: without TCP_NODELAY, small responses wait
            // for the client's delayed ACK.
            let listener = listener.tap_io(|tcp| {
                let _ = tcp.set_nodelay(true);
            });
            eprintln!("rmcp_echo: serving at http://{local}/mcp");
            axum::serve(listener, router).await.expect("serves");
        }
    }
}

//! rmcp's minimal MCP server for one `echo` tool, whatever answers the
//! calls: the floor under `toolhost serve`, which serves through the same
//! library. The binaries `rmcp_echo` (a native echo) and `rmcp_wasm_echo`
//! (the template plugin's echo in a fresh wasmtime instance per call) are
//! this server with their own [`Backend`]; each links only its own.
//!
//!     PROGRAM [ARGS]              # stdio
//!     PROGRAM [ARGS] --http ADDR  # streamable HTTP at http://ADDR/mcp
//!
//! Over HTTP, `--stateless` serves every request without a session and
//! `--json-response` answers one with a JSON body when its answer is its
//! only message, as the flags of `toolhost serve` of the same names do.

use std::future::Future;
use std::sync::Arc;

use axum::serve::ListenerExt as _;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt as _};

/// What answers the `echo` tool's calls.
pub trait Backend: Clone + Send + Sync + 'static {
    /// The text of one call with `arguments`, or `Err` with what the call
    /// got wrong: invalid params when the arguments are not acceptable,
    /// any other error for the tool's own failure.
    fn echo(
        &self,
        arguments: Option<JsonObject>,
    ) -> impl Future<Output = Result<String, Refusal>> + Send;
}

/// Why a call was not answered with text.
#[derive(Debug)]
pub enum Refusal {
    /// The arguments were not acceptable: a protocol error.
    InvalidParams(String),
    /// The tool failed: a result with `isError`.
    Failed(String),
}

/// The server's handler around `B`.
#[derive(Clone)]
struct Echo<B>(B);

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

impl<B: Backend> ServerHandler for Echo<B> {
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
        match self.0.echo(request.arguments).await {
            Ok(text) => Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into()),
            Err(Refusal::InvalidParams(e)) => Err(ErrorData::invalid_params(e, None)),
            Err(Refusal::Failed(e)) => {
                Ok(CallToolResult::error(vec![ContentBlock::text(e)]).into())
            }
        }
    }
}

/// Serves `backend` over stdio, or over streamable HTTP at the address
/// after `--http` in `args` (the command line), until the client or the
/// process ends; the HTTP address is printed on stderr.
pub async fn serve<B: Backend>(backend: B, args: &[String]) {
    // SIGTERM ends the server by returning, so that the process exits
    // normally (an instrumented build writes its profile at exit: `make pgo`).
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("a SIGTERM handler");
    let echo = Echo(backend);
    match args.iter().position(|a| a == "--http") {
        None => {
            let service = echo.serve(rmcp::transport::stdio()).await.expect("stdio");
            tokio::select! {
                _ = service.waiting() => {}
                _ = terminate.recv() => {}
            }
        }
        Some(i) => {
            let addr = args.get(i + 1).map_or("127.0.0.1:0", String::as_str);
            // rmcp's defaults, as `toolhost serve --http` keeps them (SSE
            // keep-alive and retry priming): the same library, configured
            // alike, minus toolhost's checks and tools.
            let flag = |name: &str| args.iter().any(|a| a == name);
            let config = StreamableHttpServerConfig::default()
                .with_legacy_session_mode(!flag("--stateless"))
                .with_json_response(flag("--json-response"));
            let service: StreamableHttpService<Echo<B>, LocalSessionManager> =
                StreamableHttpService::new(move || Ok(echo.clone()), Default::default(), config);
            let router = axum::Router::new().nest_service("/mcp", service);
            let listener = tokio::net::TcpListener::bind(addr).await.expect("binds");
            let local = listener.local_addr().expect("an address");
            // As toolhost does: without TCP_NODELAY, small responses wait
            // for the client's delayed ACK.
            let listener = listener.tap_io(|tcp| {
                let _ = tcp.set_nodelay(true);
            });
            let program = args
                .first()
                .map_or("rmcp-echo", |p| p.rsplit('/').next().unwrap_or(p));
            eprintln!("{program}: serving at http://{local}/mcp");
            tokio::select! {
                served = axum::serve(listener, router).into_future() => served.expect("serves"),
                _ = terminate.recv() => {}
            }
        }
    }
}

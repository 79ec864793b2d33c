//! Helpers shared by the integration tests.

use std::path::PathBuf;
use std::sync::OnceLock;
use toolhost_test_support::{HttpServer, Reply, Responder};

use toolhost::sandbox::{LoadedPlugin, PluginPolicy, Sandbox};
use toolhost::{Arguments, CallContext, ToolError, ToolHost, ToolOutput};

/// The component built from the plugin crate `name` (by `make plugins`).
pub use toolhost::sandbox::testing::wasm;

/// One sandbox for the whole test binary, with a compiled-code cache in the
/// target directory (so repeated runs skip compilation).
pub fn sandbox() -> Sandbox {
    static SANDBOX: OnceLock<Sandbox> = OnceLock::new();
    SANDBOX
        .get_or_init(|| {
            let cache = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/test-code-cache");
            Sandbox::new(Some(cache)).expect("the sandbox starts")
        })
        .clone()
}

/// Loads plugin crate `crate_name` as `name` under `policy`.
pub async fn load(name: &str, crate_name: &str, policy: PluginPolicy) -> LoadedPlugin {
    sandbox()
        .plugin_file(name, wasm(crate_name))
        .policy(policy)
        .load()
        .await
        .unwrap_or_else(|e| panic!("loading {crate_name}: {e}"))
}

/// A host with validation on and the given plugins registered.
pub async fn host_with(plugins: Vec<LoadedPlugin>) -> ToolHost {
    let host = ToolHost::builder().validate_arguments(true).build();
    for p in plugins {
        host.register_extension(p.into_extension()).await.unwrap();
    }
    host
}

/// Calls `tool` with JSON `args` through the pipeline.
pub async fn call(host: &ToolHost, tool: &str, args: &str) -> Result<ToolOutput, ToolError> {
    host.invoke_tool(CallContext::new(), tool, Arguments::parse(args).unwrap())
        .await
}

/// Calls `tool` with JSON `args` with a deadline of its own, `timeout` from
/// now: for a call whose expected outcome is that timeout, so that the
/// plugin's own (default) timeout still covers every other call.
pub async fn call_within(
    host: &ToolHost,
    tool: &str,
    args: &str,
    timeout: std::time::Duration,
) -> Result<ToolOutput, ToolError> {
    host.invoke_tool(
        CallContext::new().with_timeout(timeout),
        tool,
        Arguments::parse(args).unwrap(),
    )
    .await
}

/// An HTTP server on 127.0.0.1 that answers every request with `body` as
/// `text/plain`. With `gather > 1`, each response waits until that many
/// requests are in flight (or two seconds pass), which proves they ran at
/// the same time.
pub async fn text_server(body: &'static str, gather: usize) -> HttpServer {
    HttpServer::gathering(Responder::Fixed(Reply::ok("text/plain", body)), gather).await
}

/// Captures this thread's `tracing` output (a current-thread test runtime
/// runs everything on it) until dropped.
pub struct CapturedLog {
    buffer: std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
    _guard: tracing::subscriber::DefaultGuard,
}

impl CapturedLog {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.buffer.lock().unwrap()).into_owned()
    }
}

#[derive(Clone)]
struct Sink(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

pub fn capture_log() -> CapturedLog {
    let buffer = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = Sink(buffer.clone());
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || sink.clone())
        .with_ansi(false)
        .with_max_level(tracing::Level::INFO)
        .finish();
    CapturedLog {
        buffer,
        _guard: tracing::subscriber::set_default(subscriber),
    }
}

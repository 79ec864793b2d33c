//! Helpers shared by the integration tests.

use std::path::PathBuf;
use std::sync::OnceLock;

use toolhost::sandbox::{LoadedPlugin, PluginPolicy, Sandbox};
use toolhost::{Arguments, CallContext, ToolError, ToolHost, ToolOutput};

/// The component built from the plugin crate `name` (by `make plugins`).
pub fn wasm(name: &str) -> PathBuf {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../target/wasm32-wasip2/release")
        .join(format!("{name}.wasm"));
    assert!(
        path.exists(),
        "{} is missing: build the plugins first (`make plugins`)",
        path.display()
    );
    path
}

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
        .load(name, &wasm(crate_name), policy, None)
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

/// A minimal HTTP server on 127.0.0.1 for the tests: answers every request
/// with `body`, counts requests, and tracks how many are in flight. With
/// `gather > 1`, each response waits until that many requests are in flight
/// (or two seconds pass), which proves they ran at the same time.
pub struct TestServer {
    pub port: u16,
    pub hits: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    pub max_in_flight: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl TestServer {
    pub async fn start(body: &'static str, gather: usize) -> Self {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicUsize, Ordering};
        use tokio::io::{AsyncReadExt, AsyncWriteExt};

        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let hits = Arc::new(AtomicUsize::new(0));
        let in_flight = Arc::new(AtomicUsize::new(0));
        let max_in_flight = Arc::new(AtomicUsize::new(0));
        let arrived = Arc::new(tokio::sync::Notify::new());
        let (h, f, m) = (hits.clone(), in_flight.clone(), max_in_flight.clone());
        tokio::spawn(async move {
            loop {
                let Ok((mut sock, _)) = listener.accept().await else {
                    return;
                };
                let (h, f, m, arrived) = (h.clone(), f.clone(), m.clone(), arrived.clone());
                tokio::spawn(async move {
                    let mut buf = Vec::new();
                    let mut chunk = [0u8; 1024];
                    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                        match sock.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    }
                    h.fetch_add(1, Ordering::SeqCst);
                    let now = f.fetch_add(1, Ordering::SeqCst) + 1;
                    m.fetch_max(now, Ordering::SeqCst);
                    arrived.notify_waiters();
                    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(2);
                    while f.load(Ordering::SeqCst) < gather
                        && tokio::time::Instant::now() < deadline
                    {
                        let _ = tokio::time::timeout_at(deadline, arrived.notified()).await;
                    }
                    let reply = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = sock.write_all(reply.as_bytes()).await;
                    let _ = sock.shutdown().await;
                    f.fetch_sub(1, Ordering::SeqCst);
                });
            }
        });
        Self {
            port,
            hits,
            max_in_flight,
        }
    }

    pub fn hits(&self) -> usize {
        self.hits.load(std::sync::atomic::Ordering::SeqCst)
    }
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

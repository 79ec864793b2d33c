//! MCP round trips from one Rust client (rmcp's own), to `toolhost serve`
//! and to rmcp's minimal server for the same echo tool
//! (`bench/src/bin/rmcp_echo.rs`, and `rmcp_wasm_echo.rs` with the echo
//! in a fresh wasmtime instance per call), over stdio and streamable HTTP.

use std::io::{BufRead as _, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rmcp::ServiceExt as _;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};

use crate::stats::Samples;

/// A connected rmcp client, and the HTTP server it talks to (a stdio
/// server is the client's child).
pub struct Session {
    client: rmcp::service::RunningService<rmcp::RoleClient, ()>,
    server: Option<Server>,
}

impl Session {
    /// Over stdio, to the server `command` starts.
    pub async fn stdio(command: &[String]) -> Self {
        let mut cmd = tokio::process::Command::new(&command[0]);
        cmd.args(&command[1..]).stderr(Stdio::null());
        let transport = TokioChildProcess::new(cmd).expect("the server starts");
        let client = ().serve(transport).await.expect("the handshake");
        Self {
            client,
            server: None,
        }
    }

    /// To the server `command` starts: over streamable HTTP if the command
    /// asks it to serve HTTP (`--http`), else over stdio.
    pub async fn start(command: &[String]) -> Self {
        if command.iter().any(|a| a == "--http") {
            Self::http(command).await
        } else {
            Self::stdio(command).await
        }
    }

    /// Over streamable HTTP to the server `command` starts (it prints its
    /// `http://…/mcp` address on stderr), on one keep-alive connection.
    pub async fn http(command: &[String]) -> Self {
        let server = Server::start(command);
        let mut session = Self::connect_http(&server.url).await;
        session.server = Some(server);
        session
    }

    /// Over streamable HTTP to a running server at `url`, on a connection
    /// of its own.
    pub async fn connect_http(url: &str) -> Self {
        let http = toolhost::net::tls::reqwest_builder()
            .expect("TLS setup")
            .build()
            .expect("a client");
        let transport = StreamableHttpClientTransport::with_client(
            http,
            StreamableHttpClientTransportConfig::with_uri(url.to_owned()),
        );
        let client = ().serve(transport).await.expect("the handshake");
        Self {
            client,
            server: None,
        }
    }

    /// One echo call: whether it succeeded (an error answer or a
    /// transport error is a failure, not a panic).
    pub async fn try_call(&self) -> bool {
        let request = echo_request();
        matches!(self.client.call_tool(request).await, Ok(r) if r.is_error != Some(true))
    }

    /// `calls` echo calls, each timed; the first `warmup` are not kept.
    pub async fn calls(&self, warmup: usize, calls: usize, into: &mut Vec<Duration>) {
        let request = echo_request();
        for i in 0..warmup + calls {
            let start = Instant::now();
            let result = self
                .client
                .call_tool(request.clone())
                .await
                .expect("the call");
            let elapsed = start.elapsed();
            assert_ne!(
                result.is_error,
                Some(true),
                "echo failed: {:?}",
                result.content
            );
            if i >= warmup {
                into.push(elapsed);
            }
        }
    }

    /// The HTTP server's process id (a stdio server has none here).
    pub fn server_pid(&self) -> Option<u32> {
        self.server.as_ref().map(|s| s.child.id())
    }

    pub async fn close(self) {
        let _ = self.client.cancel().await;
    }
}

/// The benchmark's `echo` call.
fn echo_request() -> CallToolRequestParams {
    let mut args = serde_json::Map::new();
    args.insert("text".into(), "hello, sandbox".into());
    CallToolRequestParams::new("echo").with_arguments(args)
}

/// `sessions` in alternating rounds, `calls` echo calls each after 200 of
/// warm-up: their samples, in the order given.
pub async fn alternating(sessions: Vec<Session>, rounds: usize, calls: usize) -> Vec<Samples> {
    let mut samples = vec![Vec::new(); sessions.len()];
    for (session, into) in sessions.iter().zip(&mut samples) {
        session.calls(200, 0, into).await;
    }
    for _ in 0..rounds {
        for (session, into) in sessions.iter().zip(&mut samples) {
            session.calls(0, calls / rounds, into).await;
        }
    }
    for session in sessions {
        session.close().await;
    }
    samples.into_iter().map(Samples::new).collect()
}

/// A server process serving HTTP, stopped on drop.
pub struct Server {
    child: Child,
    /// Its `http://…/mcp` address.
    pub url: String,
}

impl Server {
    /// Starts `command`, which prints its address on stderr.
    pub fn start(command: &[String]) -> Self {
        let mut child = Command::new(&command[0])
            .args(&command[1..])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the server starts");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(at) = line.find("http://") {
                    let _ = tx.send(line[at..].trim().to_owned());
                }
            }
        });
        let url = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("the server prints its address");
        Self { child, url }
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    fn stop(&mut self) {
        toolhost_bench::stop(&mut self.child);
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

/// `toolhost serve` over the benchmark configuration (the template
/// plugin's echo), with `extra` arguments: the build beside the running
/// benchmark.
pub fn toolhost_command(root: &Path, extra: &[&str]) -> Vec<String> {
    let binary = toolhost_bench::built_beside("toolhost");
    toolhost_command_of(&binary.display().to_string(), root, extra)
}

/// [`toolhost_command`] with another build of `toolhost`, `binary`.
pub fn toolhost_command_of(binary: &str, root: &Path, extra: &[&str]) -> Vec<String> {
    let mut c = vec![
        binary.to_owned(),
        "serve".into(),
        "--config".into(),
        root.join("bench/mcp/toolhost.toml").display().to_string(),
        // Stopped with SIGTERM after each run: no load balancer to wait for.
        "--drain-delay".into(),
        "0".into(),
    ];
    c.extend(extra.iter().map(|s| s.to_string()));
    c
}

/// rmcp's minimal echo server, with `extra` arguments.
pub fn rmcp_command(extra: &[&str]) -> Vec<String> {
    let mut c = vec![
        toolhost_bench::built_beside("rmcp_echo")
            .display()
            .to_string(),
    ];
    c.extend(extra.iter().map(|s| s.to_string()));
    c
}

/// rmcp's minimal server running the template plugin's `echo` in a fresh
/// instance per call on bare wasmtime (`rmcp_wasm_echo`), with `extra`
/// arguments: the least any host of fresh instances behind rmcp does.
pub fn rmcp_wasm_command(extra: &[&str]) -> Vec<String> {
    let mut c = vec![
        toolhost_bench::built_beside("rmcp_wasm_echo")
            .display()
            .to_string(),
        toolhost_bench::wasm("template").display().to_string(),
    ];
    c.extend(extra.iter().map(|s| s.to_string()));
    c
}

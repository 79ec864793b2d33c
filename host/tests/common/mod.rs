//! Helpers of the command-line tests: the built `toolhost` binary, a
//! configuration with the example and hostile plugins, and the Python MCP
//! client driver.

#![allow(dead_code)]

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;

/// The repository's root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The component built from the plugin crate `name` (by `make plugins`).
pub use toolhost::sandbox::testing::wasm;

/// A `toolhost` command (the binary cargo built for these tests).
pub fn toolhost() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolhost"));
    cmd.env_remove("RUST_LOG");
    cmd
}

/// Runs `toolhost ARGS` to completion.
pub fn run(args: &[&str]) -> Output {
    toolhost().args(args).output().unwrap()
}

/// stdout and stderr as text.
pub fn texts(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The runaway plugin's limit in [`TestConfig`], in milliseconds: its
/// `spin` ends there, and loading it and listing its tools run under it
/// too, so it is long enough that no busy machine makes those time out.
pub const RUNAWAY_TIMEOUT_MS: u64 = 5000;

/// A configuration in a temporary directory: the template plugin (`echo`)
/// and the runaway plugin (`spin`, `flood`, …) with a limit of
/// [`RUNAWAY_TIMEOUT_MS`], plus `extra` TOML.
pub struct TestConfig {
    pub dir: tempfile::TempDir,
    pub path: PathBuf,
}

impl TestConfig {
    pub fn new(extra: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("toolhost.toml");
        let text = format!(
            r#"
[host]
validate_arguments = true
call_timeout_ms = 20000
cache_dir = "{cache}"

[plugins.template]
wasm = "{template}"

[plugins.runaway]
wasm = "{runaway}"
timeout_ms = {RUNAWAY_TIMEOUT_MS}
{extra}
"#,
            cache = root().join("target/test-code-cache").display(),
            template = wasm("template").display(),
            runaway = wasm("runaway").display(),
        );
        std::fs::write(&path, text).unwrap();
        Self { dir, path }
    }

    pub fn path(&self) -> &str {
        self.path.to_str().unwrap()
    }

    /// The same configuration with the runaway plugin's limit at `ms`
    /// milliseconds: for a test whose runaway calls must succeed (its
    /// `flood`, `grow`, `trap`, …), which the usual short limit would cut
    /// short on a busy machine.
    pub fn with_runaway_timeout_ms(self, ms: u64) -> Self {
        let text = std::fs::read_to_string(&self.path).unwrap();
        let old = "[plugins.runaway]\n";
        let at = text.find(old).expect("the runaway plugin's table");
        let (head, tail) = text.split_at(at + old.len());
        let tail = tail.replacen(
            &format!("timeout_ms = {RUNAWAY_TIMEOUT_MS}\n"),
            &format!("timeout_ms = {ms}\n"),
            1,
        );
        assert!(tail.contains(&format!("timeout_ms = {ms}\n")), "{text}");
        std::fs::write(&self.path, format!("{head}{tail}")).unwrap();
        self
    }

    /// The same configuration with `lines` added to its `[host]` table.
    pub fn with_host(self, lines: &str) -> Self {
        let text = std::fs::read_to_string(&self.path).unwrap();
        let text = text.replacen("[host]\n", &format!("[host]\n{lines}\n"), 1);
        std::fs::write(&self.path, text).unwrap();
        self
    }
}

/// Fails with a clear message if the Python SDK is not installed.
pub fn require_python_sdk() {
    let ok = Command::new("python3")
        .args(["-c", "import mcp"])
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok,
        "python3 with the `mcp` package is needed: run `make setup`"
    );
}

/// A script in `tests/fixtures`.
pub fn fixture(name: &str) -> PathBuf {
    root().join("tests/fixtures").join(name)
}

/// Runs the Python fixture `name` (in tests/fixtures) with `plan` as its
/// one argument, and parses the JSON report it prints; panics with its
/// stderr if it fails or prints something else.
pub fn python_fixture_report(name: &str, plan: &Value) -> Value {
    let out = Command::new("python3")
        .arg(fixture(name))
        .arg(plan.to_string())
        .output()
        .unwrap();
    let (stdout, stderr) = texts(&out);
    assert!(out.status.success(), "{name} failed:\n{stderr}");
    serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("bad report from {name} ({e}):\n{stdout}\n{stderr}"))
}

/// Runs the Python SDK client driver (`tests/fixtures/mcp_client.py`) with
/// `plan` and returns its sessions' reports.
pub fn python_client(plan: &Value) -> Vec<Value> {
    require_python_sdk();
    let out = Command::new("python3")
        .arg(fixture("mcp_client.py"))
        .arg(plan.to_string())
        .output()
        .unwrap();
    let (stdout, stderr) = texts(&out);
    assert!(out.status.success(), "the Python client failed:\n{stderr}");
    let report: Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("bad report ({e}):\n{stdout}\n{stderr}"));
    report["sessions"].as_array().unwrap().clone()
}

/// Runs the Python SDK's high-level client in its default mode (protocol
/// 2026-07-28 where offered) on `plan` (see `tests/fixtures/mcp_modern_client.py`)
/// and returns its report.
pub fn modern_python_client(plan: &Value) -> Value {
    require_python_sdk();
    let out = Command::new("python3")
        .arg(fixture("mcp_modern_client.py"))
        .arg(plan.to_string())
        .output()
        .unwrap();
    let (stdout, stderr) = texts(&out);
    assert!(out.status.success(), "the Python client failed:\n{stderr}");
    serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("bad report ({e}):\n{stdout}\n{stderr}"))
}

/// `toolhost serve --http 127.0.0.1:0 ARGS`, its address read from stderr;
/// killed on drop.
pub struct HttpServe {
    pub child: Child,
    pub addr: String,
    pub stderr: mpsc::Receiver<String>,
}

impl HttpServe {
    pub fn start(config: &TestConfig, args: &[&str]) -> Self {
        Self::start_at(&config.path, args)
    }

    /// Serves the configuration at `config`.
    pub fn start_at(config: &std::path::Path, args: &[&str]) -> Self {
        let mut child = toolhost()
            .args(["serve", "--config"])
            .arg(config)
            .args(["--http", "127.0.0.1:0"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (tx, rx) = mpsc::channel();
        let stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        // From here on, Drop kills and reaps the child whatever happens.
        let mut serve = Self {
            child,
            addr: String::new(),
            stderr: rx,
        };
        let prefix = "toolhost: serving ";
        loop {
            let line = serve
                .stderr
                .recv_timeout(Duration::from_secs(120))
                .expect("toolhost serve printed its address");
            if let Some(rest) = line.strip_prefix(prefix) {
                let url = rest.rsplit(' ').next().unwrap();
                serve.addr = url
                    .strip_prefix("http://")
                    .and_then(|u| u.strip_suffix("/mcp"))
                    .unwrap()
                    .to_owned();
                return serve;
            }
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// Sends the server signal `name` (`TERM`, `KILL`, …).
    pub fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .args([&format!("-{name}"), &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success(), "kill -{name} failed");
    }

    /// Waits for the server to exit, at most `limit`; its exit code.
    pub fn exit_code(&mut self, limit: Duration) -> Option<i32> {
        exit_code(&mut self.child, limit)
    }
}

/// Waits for `child` to exit, at most `limit` (a hang fails the test); its
/// exit code.
pub fn exit_code(child: &mut Child, limit: Duration) -> Option<i32> {
    let start = std::time::Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code();
        }
        assert!(start.elapsed() < limit, "still running after {limit:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

impl Drop for HttpServe {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Sends one raw HTTP/1.1 POST of `body` to `/mcp` on `addr` with `headers`
/// and returns the status code.
pub fn post_status(addr: &str, headers: &[(&str, &str)], body: &[u8]) -> u16 {
    request(addr, "POST", headers, body).status
}

/// The head of an HTTP response.
pub struct Head {
    /// The status code.
    pub status: u16,
    /// The header lines, names in lower case.
    pub headers: Vec<(String, String)>,
}

impl Head {
    /// The value of header `name` (lower case), if present.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// `GET path` on `addr` over a connection of its own: the status and the
/// body. Reading waits at most 60 s, a bound that only a hang reaches.
pub fn get(addr: &str, path: &str) -> (u16, String) {
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let status = answer[9..12].parse().unwrap();
    let body = answer
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

/// Sends one raw HTTP/1.1 request to `/mcp` on `addr` and reads the head of
/// the answer (not the body, which may be a stream).
pub fn request(addr: &str, method: &str, headers: &[(&str, &str)], body: &[u8]) -> Head {
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut request = format!(
        "{method} /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).unwrap();
    // The server may answer (and close) before reading the whole body.
    let _ = stream.write_all(body);
    let mut reader = BufReader::new(stream);
    let mut status_line = String::new();
    reader.read_line(&mut status_line).unwrap();
    let status = status_line
        .get(9..12)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP status line: {status_line:?}"));
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
        }
    }
    Head { status, headers }
}

/// The body of a valid `initialize` request.
pub fn initialize_body() -> Vec<u8> {
    serde_json::json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "raw", "version": "1"}}
    })
    .to_string()
    .into_bytes()
}

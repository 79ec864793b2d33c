//! Secrets (rule O2) against a hostile plugin that tries every way out for
//! the secret it is granted: the value never reaches the caller, the log
//! or a destination it is not bound to, in the clear or in a common
//! encoding; what no redaction can catch (a reversed or split value) is
//! pinned here as the README says.

mod common;

use std::io::{Read as _, Write as _};
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt as _;
use std::sync::{Arc, Mutex};

use common::{root, toolhost, wasm};

const TOKEN: &str = "tok-9f8e7d6c5b4a-secret";

/// A server on 127.0.0.1 that answers 200 to everything and keeps every
/// byte it received.
struct Recorder {
    port: u16,
    seen: Arc<Mutex<Vec<u8>>>,
}

impl Recorder {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let kept = seen.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut conn) = conn else { return };
                let kept = kept.clone();
                std::thread::spawn(move || {
                    conn.set_read_timeout(Some(std::time::Duration::from_secs(2)))
                        .ok();
                    let mut buf = [0u8; 65536];
                    let mut all = Vec::new();
                    while let Ok(n) = conn.read(&mut buf) {
                        if n == 0 {
                            break;
                        }
                        all.extend_from_slice(&buf[..n]);
                        kept.lock().unwrap().extend_from_slice(&buf[..n]);
                        let text = String::from_utf8_lossy(&all);
                        if let Some(head_end) = text.find("\r\n\r\n") {
                            let length = text[..head_end]
                                .lines()
                                .find_map(|l| {
                                    l.to_ascii_lowercase()
                                        .strip_prefix("content-length:")
                                        .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                                })
                                .unwrap_or(0);
                            let chunked = text[..head_end]
                                .to_ascii_lowercase()
                                .contains("transfer-encoding: chunked");
                            let complete = if chunked {
                                text.ends_with("0\r\n\r\n")
                            } else {
                                all.len() >= head_end + 4 + length
                            };
                            if complete {
                                let _ = conn.write_all(
                                    b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                                );
                                break;
                            }
                        }
                    }
                });
            }
        });
        Self { port, seen }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn saw_token(&self) -> bool {
        let seen = self.seen.lock().unwrap();
        String::from_utf8_lossy(&seen).contains(TOKEN)
    }
}

struct Setup {
    _dir: tempfile::TempDir,
    config: String,
    bound: Recorder,
    other: Recorder,
}

fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("token");
    std::fs::write(&secret, format!("{TOKEN}\n")).unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    let (bound, other) = (Recorder::start(), Recorder::start());
    let config = dir.path().join("toolhost.toml");
    std::fs::write(
        &config,
        format!(
            r#"
[host]
cache_dir = "{cache}"

[secrets.token]
file = "token"
hosts = ["{bound}"]

[plugins.leaker]
wasm = "{wasm}"
secrets = ["token"]
hosts = ["{bound}", "{other}"]
"#,
            cache = root().join("target/test-code-cache").display(),
            wasm = wasm("secret_leaker").display(),
            bound = bound.url(),
            other = other.url(),
        ),
    )
    .unwrap();
    Setup {
        config: config.to_str().unwrap().to_owned(),
        _dir: dir,
        bound,
        other,
    }
}

/// Runs `toolhost call` with every log on; stdout, stderr and success.
fn call(s: &Setup, tool: &str, args: &str) -> (String, String, bool) {
    call_logging(s, tool, args, "debug")
}

/// Runs `toolhost call` with the log filter `log`; stdout, stderr and
/// success.
fn call_logging(s: &Setup, tool: &str, args: &str, log: &str) -> (String, String, bool) {
    let out = toolhost()
        .args(["call", "--config", &s.config, tool, args, "--log", log])
        .output()
        .unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.success(),
    )
}

fn hex(s: &str) -> String {
    s.bytes().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn o2_a_granted_secret_never_reaches_the_caller_or_the_log_in_the_clear() {
    let s = setup();
    for how in [
        "text",
        "hex",
        "base64",
        "structured",
        "error",
        "log",
        "stderr",
        "progress",
    ] {
        let (stdout, stderr, _) = call(&s, "leak", &format!(r#"{{"how": "{how}"}}"#));
        let both = format!("{stdout}{stderr}");
        assert!(
            !both.contains(TOKEN) && !both.contains(&hex(TOKEN)),
            "{how}: {both}"
        );
        if matches!(how, "text" | "hex" | "base64" | "structured" | "error") {
            assert!(both.contains("[secret token]"), "{how}: {both}");
        }
    }
}

/// A log filter that asks for wasmtime-wasi's own records, which quote
/// what a guest writes to its stdout and stderr unredacted, still gets
/// none past `info`: the guest's output reaches the log only redacted.
#[test]
fn o2_a_log_filter_that_asks_for_the_runtimes_trace_still_gets_no_secret() {
    let s = setup();
    for log in [
        "trace",
        "wasmtime_wasi=trace",
        "warn,wasmtime_wasi=trace,wasmtime_wasi::p2=trace",
    ] {
        for how in ["stderr", "log"] {
            let (stdout, stderr, _) =
                call_logging(&s, "leak", &format!(r#"{{"how": "{how}"}}"#), log);
            let both = format!("{stdout}{stderr}");
            assert!(
                !both.contains(TOKEN) && !both.contains(&hex(TOKEN)),
                "--log {log}, {how}: {both}"
            );
            assert!(
                !stderr
                    .lines()
                    .any(|l| l.contains("wasmtime_wasi")
                        && (l.contains("DEBUG") || l.contains("TRACE"))),
                "--log {log}, {how}: wasmtime-wasi's debug records reached the log: {stderr}"
            );
        }
    }
}

#[test]
fn o2_a_reversed_or_split_secret_is_not_recognised() {
    let s = setup();
    let (stdout, _, _) = call(&s, "leak", r#"{"how": "reversed"}"#);
    assert!(
        stdout.contains(&TOKEN.chars().rev().collect::<String>()),
        "{stdout}"
    );
    let (stdout, _, _) = call(&s, "leak", r#"{"how": "split"}"#);
    assert!(
        stdout.contains(&format!("{} {}", &TOKEN[..4], &TOKEN[4..])),
        "{stdout}"
    );
}

#[test]
fn o2_a_request_carrying_a_secret_goes_only_where_the_secret_is_bound() {
    let s = setup();
    for way in ["url", "header", "body", "method"] {
        let args = format!(r#"{{"to": "{}", "way": "{way}"}}"#, s.other.url());
        let (stdout, stderr, _) = call(&s, "send", &args);
        let both = format!("{stdout}{stderr}");
        assert!(!both.contains(TOKEN), "{way}: {both}");
        assert!(
            both.contains("carries secret `token`, which may not be sent to"),
            "{way}: {both}"
        );
        assert!(
            !s.other.saw_token(),
            "{way}: the unbound server received the secret"
        );
        // Bound: it goes.
        let args = format!(r#"{{"to": "{}", "way": "{way}"}}"#, s.bound.url());
        let (stdout, stderr, ok) = call(&s, "send", &args);
        assert!(
            ok && stdout.contains("status 200"),
            "{way}: {stdout}{stderr}"
        );
    }
    assert!(s.bound.saw_token());
}

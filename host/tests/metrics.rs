//! Prometheus metrics at `serve --http`'s `/metrics` (rule X1), read by a
//! real Prometheus (Debian's `prometheus`, from `make setup`) started on
//! 127.0.0.1 here, and checked by its `promtool`. Every process is started
//! here and stopped at the end.

mod common;

use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{HttpServe, python_client, root, wasm};
use serde_json::{Value, json};

/// A process killed and reaped on drop.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A free port on 127.0.0.1 (free when asked; taken right after).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A configuration with the template plugin (`echo`) and the runaway
/// plugin (`spin`, `grow`, `trap`) with the default timeout (10 s) and
/// 32 MiB, and `metrics` as its `[metrics]` table (plus anything after
/// it). `spin` still ends as a timeout, the plugin's own, well before the
/// calls' 20 s; `grow` and `trap` end at the memory limit and the trap
/// however busy the machine is.
fn config(dir: &Path, metrics: &str) -> PathBuf {
    let path = dir.join("toolhost.toml");
    let text = format!(
        "[host]\nvalidate_arguments = true\ncall_timeout_ms = 20000\ncache_dir = {:?}\n\n\
         [plugins.template]\nwasm = {:?}\n\n\
         [plugins.runaway]\nwasm = {:?}\nmemory_mb = 32\n\n\
         [metrics]\nenabled = true\n{metrics}\n",
        root().join("target/test-code-cache"),
        wasm("template"),
        wasm("runaway"),
    );
    std::fs::write(&path, text).unwrap();
    path
}

/// `GET path` on `addr` with `headers`: the status and the body.
fn get(addr: &str, path: &str, headers: &[(&str, &str)]) -> (u16, String) {
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).unwrap();
    let answer = String::from_utf8_lossy(&answer);
    let status = answer[9..12].parse().unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)
    } else {
        body.to_owned()
    };
    (status, body)
}

/// The payload of a chunked body.
fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let size = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if size == 0 {
            break;
        }
        out.push_str(&rest[..size]);
        body = rest[size..].trim_start_matches("\r\n");
    }
    out
}

/// `text` percent-encoded for a query string.
fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Prometheus serving on a free port of 127.0.0.1, scraping `target`'s
/// `/metrics` every second, keeping its data in `dir`.
struct Prometheus {
    _proc: Proc,
    addr: String,
}

impl Prometheus {
    fn start(dir: &Path, target: &str) -> Self {
        assert!(
            Command::new("prometheus").arg("--version").output().is_ok(),
            "Prometheus is needed: run `make setup`"
        );
        let config = dir.join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n\
                 scrape_configs:\n  - job_name: toolhost\n    metrics_path: /metrics\n    \
                 static_configs:\n      - targets: ['{target}']\n"
            ),
        )
        .unwrap();
        let addr = format!("127.0.0.1:{}", free_port());
        let proc = Proc(
            Command::new("prometheus")
                .arg(format!("--config.file={}", config.display()))
                .arg(format!("--web.listen-address={addr}"))
                .arg(format!(
                    "--storage.tsdb.path={}",
                    dir.join("prometheus-data").display()
                ))
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        );
        let start = Instant::now();
        while !std::net::TcpStream::connect(&addr)
            .is_ok_and(|_| get(&addr, "/-/ready", &[]).0 == 200)
        {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "Prometheus did not come up"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        Self { _proc: proc, addr }
    }

    /// The value of the instant query `query`, if it has one series.
    fn query(&self, query: &str) -> Option<f64> {
        let (status, body) = get(
            &self.addr,
            &format!("/api/v1/query?query={}", encode(query)),
            &[],
        );
        assert_eq!(status, 200, "{body}");
        let answer: Value = serde_json::from_str(&body).unwrap();
        let result = answer["data"]["result"].as_array()?;
        match result.as_slice() {
            [series] => series["value"][1].as_str()?.parse().ok(),
            _ => None,
        }
    }

    /// Waits until `query` answers `want` (a bound that catches a hang:
    /// the scrapes come every second).
    fn wait_for(&self, query: &str, want: f64) {
        let start = Instant::now();
        loop {
            let got = self.query(query);
            if got == Some(want) {
                return;
            }
            assert!(
                start.elapsed() < Duration::from_secs(120),
                "{query}: {got:?}, not {want}"
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}

/// Runs `calls` (name, arguments) over one MCP session at `url`; each
/// call's report.
fn run_calls(url: &str, calls: &[(&str, Value)]) -> Vec<Value> {
    let steps: Vec<Value> = calls
        .iter()
        .map(|(name, args)| json!({"call": name, "args": args}))
        .collect();
    let sessions = python_client(&json!({"http": url, "steps": steps, "timeout": 120}));
    sessions[0]["steps"].as_array().unwrap().clone()
}

#[test]
fn x1_prometheus_scrapes_the_counts_of_known_calls_and_promtool_finds_nothing_wrong() {
    let dir = tempfile::tempdir().unwrap();
    // A remote MCP server's tools too (the SDK's fixture server, on stdio).
    let remote = format!(
        "open = true\n\n[mcp.remote]\ncommand = [\"python3\", {:?}]\n",
        common::fixture("mcp_server.py")
    );
    let serve = HttpServe::start_at(&config(dir.path(), &remote), &[]);
    let prometheus = Prometheus::start(dir.path(), &serve.addr);
    let mut calls = vec![("echo", json!({"text": "hi"})); 5];
    calls.extend([
        ("echo", json!({})),
        ("echo", json!({"text": 7})),
        ("trap", json!({})),
        ("grow", json!({})),
        ("spin", json!({})),
        ("no_such_tool", json!({"secret": "s3cr3t-value"})),
        ("remote.add", json!({"a": 1, "b": 2})),
    ]);
    let reports = run_calls(&serve.url(), &calls);
    let failed = reports
        .iter()
        .filter(|r| r["is_error"] == true || r.get("protocol_error").is_some())
        .count();
    assert_eq!(failed, 6, "{reports:#?}");

    for (labels, want) in [
        (r#"tool="echo",outcome="ok""#, 5.0),
        (r#"tool="echo",outcome="invalid_arguments""#, 2.0),
        (r#"tool="trap",plugin="runaway",outcome="trap""#, 1.0),
        (r#"tool="grow",plugin="runaway",outcome="limit""#, 1.0),
        (r#"tool="spin",plugin="runaway",outcome="timeout""#, 1.0),
        (r#"tool="other",outcome="unknown_tool""#, 1.0),
        (r#"tool="remote.add",plugin="mcp.remote",outcome="ok""#, 1.0),
    ] {
        prometheus.wait_for(
            &format!("sum(toolhost_calls_total{{{labels},tenant=\"default\"}})"),
            want,
        );
    }
    prometheus.wait_for("sum(toolhost_calls_total)", 12.0);
    prometheus.wait_for(
        r#"toolhost_call_stage_duration_seconds_count{stage="mcp_forward",plugin="mcp.remote"}"#,
        1.0,
    );
    // Each stage the guest ran is timed: five echoes ran in the template.
    for stage in ["queue_wait", "instantiate", "guest"] {
        prometheus.wait_for(
            &format!(
                "toolhost_call_stage_duration_seconds_count{{stage=\"{stage}\",plugin=\"template\"}}"
            ),
            5.0,
        );
    }
    prometheus.wait_for(
        r#"toolhost_call_duration_seconds_count{tool="echo",plugin="template"}"#,
        7.0,
    );
    prometheus.wait_for(r#"toolhost_instances_in_use{plugin="template"}"#, 0.0);
    prometheus.wait_for(
        r#"toolhost_deadline_overshoot_seconds_count{plugin="runaway"}"#,
        1.0,
    );
    prometheus.wait_for(
        r#"toolhost_plugin_memory_high_water_bytes{plugin="template"} > bool 0"#,
        1.0,
    );
    // Both plugins were looked up in the compiled-code cache at start.
    prometheus.wait_for("sum(toolhost_code_cache_lookups_total)", 2.0);

    // The text a person or promtool reads.
    let (status, text) = get(&serve.addr, "/metrics", &[]);
    assert_eq!(status, 200);
    assert!(
        !text.contains("no_such_tool") && !text.contains("s3cr3t"),
        "{text}"
    );
    let mut promtool = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool is needed: run `make setup`");
    promtool
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = promtool.wait_with_output().unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && said.trim().is_empty(),
        "{said}\n{text}"
    );
}

#[test]
fn x1_metrics_ask_for_their_own_token_and_count_reloads() {
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("scrape.secret");
    std::fs::write(&secret, "a-scraper-token-of-enough-length-0123456789\n").unwrap();
    std::fs::set_permissions(&secret, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let path = config(
        dir.path(),
        &format!(
            "token = \"scrape\"\n\n[secrets.scrape]\nfile = {:?}\n",
            secret
        ),
    );
    let serve = HttpServe::start_at(&path, &[]);
    let (status, _) = get(&serve.addr, "/metrics", &[]);
    assert_eq!(status, 401);
    let (status, _) = get(
        &serve.addr,
        "/metrics",
        &[("Authorization", "Bearer not-the-token")],
    );
    assert_eq!(status, 401);
    let auth = (
        "Authorization",
        "Bearer a-scraper-token-of-enough-length-0123456789",
    );
    let (status, text) = get(&serve.addr, "/metrics", &[auth]);
    assert_eq!(status, 200, "{text}");
    // The plugins' code loads in the background (from the cache) shortly
    // after the start, when no client lists the tools first; 60 s only
    // catches a hang.
    let start = Instant::now();
    let mut text = text;
    while !text.contains("# TYPE toolhost_code_cache_lookups_total counter") {
        assert!(start.elapsed() < Duration::from_secs(60), "{text}");
        std::thread::sleep(Duration::from_millis(50));
        text = get(&serve.addr, "/metrics", &[auth]).1;
    }
    // OpenMetrics for a scraper that asks for it, as Prometheus does.
    let (_, open) = get(
        &serve.addr,
        "/metrics",
        &[
            auth,
            ("Accept", "application/openmetrics-text;version=1.0.0"),
        ],
    );
    assert!(open.ends_with("# EOF\n"), "{open}");

    // The calls are counted, and the counts carry on across a reload.
    run_calls(&serve.url(), &[("echo", json!({"text": "hi"}))]);
    serve.signal("HUP");
    let start = Instant::now();
    while !serve
        .stderr
        .recv_timeout(Duration::from_secs(120))
        .unwrap()
        .starts_with("toolhost: reloaded")
    {
        assert!(start.elapsed() < Duration::from_secs(120), "no reload");
    }
    run_calls(&serve.url(), &[("echo", json!({"text": "hi"}))]);
    let (_, text) = get(&serve.addr, "/metrics", &[auth]);
    for want in [
        "toolhost_reloads_total{result=\"ok\"} 1\n",
        "toolhost_calls_total{tool=\"echo\",plugin=\"template\",outcome=\"ok\",tenant=\"default\"} 2\n",
    ] {
        assert!(text.contains(want), "{want}{text}");
    }
}

#[test]
fn x1_without_a_token_of_their_own_metrics_ask_for_the_mcp_one_or_open_is_loopback_only() {
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, "the-token-of-the-mcp-endpoint-0123456789abcdef\n").unwrap();
    let serve = HttpServe::start_at(
        &config(dir.path(), ""),
        &["--token-file", token.to_str().unwrap()],
    );
    assert_eq!(get(&serve.addr, "/metrics", &[]).0, 401);
    let (status, text) = get(
        &serve.addr,
        "/metrics",
        &[(
            "Authorization",
            "Bearer the-token-of-the-mcp-endpoint-0123456789abcdef",
        )],
    );
    assert_eq!(status, 200, "{text}");
    drop(serve);

    // `open` on an address other machines reach is refused at start.
    let out = common::toolhost()
        .args(["serve", "--config"])
        .arg(config(dir.path(), "open = true"))
        .args([
            "--http",
            "0.0.0.0:0",
            "--token-file",
            token.to_str().unwrap(),
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("[metrics] open = true"), "{stderr}");
}

/// The value of the sample of `/metrics` on `addr` whose line starts with
/// `name{` and holds every one of `labels`, if there is one.
fn sample(addr: &str, name: &str, labels: &[&str]) -> Option<f64> {
    let (_, text) = get(addr, "/metrics", &[]);
    text.lines()
        .filter(|l| l.starts_with(&format!("{name}{{")))
        .find(|l| labels.iter().all(|label| l.contains(label)))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

/// Polls `/metrics` on `addr` until `name` with `labels` reads `want`;
/// 60 s only catches a server that never gets there.
fn until_sample(addr: &str, name: &str, labels: &[&str], want: f64) {
    let start = Instant::now();
    while sample(addr, name, labels) != Some(want) {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "{name} {labels:?} never read {want}: {:?}",
            sample(addr, name, labels)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn n3_a_client_that_hangs_up_mid_call_stops_its_guest_and_frees_its_instance() {
    // A client that sends a slow call served without a session and goes
    // away: its guest must not hold an instance until its deadline (here
    // ten minutes, far past the test's bounds), whether the answer was to
    // be a stream or one JSON body. A client that did this in a loop would
    // otherwise pin every instance the host has. (In a session, MCP says
    // a dropped stream is not a cancellation; the client sends one.)
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("toolhost.toml");
    std::fs::write(
        &path,
        format!(
            "[host]\ncall_timeout_ms = 600000\ncache_dir = {:?}\n\n[plugins.sleeper]\nwasm = {:?}\ntimeout_ms = 600000\n\n\
             [metrics]\nenabled = true\n",
            root().join("target/test-code-cache"),
            wasm("sleeper"),
        ),
    )
    .unwrap();
    for mode in [&[][..], &["--stateless", "--json-response"][..]] {
        let serve = HttpServe::start_at(&path, mode);
        let v = "2026-07-28";
        let body = json!({
            "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "pollable", "arguments": {}, "_meta": {
                "io.modelcontextprotocol/protocolVersion": v,
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
            }},
        })
        .to_string();
        let mut stream = std::net::TcpStream::connect(&serve.addr).unwrap();
        write!(
            stream,
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: {v}\r\n\
             Mcp-Method: tools/call\r\nMcp-Name: pollable\r\nContent-Length: {}\r\n\r\n{body}",
            serve.addr,
            body.len()
        )
        .unwrap();
        let in_use = "toolhost_instances_in_use";
        until_sample(&serve.addr, in_use, &["plugin=\"sleeper\""], 1.0);
        drop(stream);
        until_sample(&serve.addr, in_use, &["plugin=\"sleeper\""], 0.0);
        let cancelled = ["plugin=\"sleeper\"", "outcome=\"cancelled\""];
        until_sample(&serve.addr, "toolhost_calls_total", &cancelled, 1.0);
        eprintln!("{mode:?}: the call ended with its client");
    }
}

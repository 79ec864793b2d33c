//! `toolhost serve --http --watch` reloading its configuration while it
//! serves (rule O3): a changed plugin's tools appear and clients are told;
//! a change that breaks a pin, a truncated file or a garbage component is
//! refused, logged naming the key, and the old configuration keeps
//! serving; calls in flight across a reload all succeed, each run once.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::{HttpServe, root, wasm};
use rmcp::model::{CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, RoleClient, ServiceExt as _};
use serde_json::{Value, json};
use sha2::Digest as _;
use tokio::sync::Notify;

/// A bound that only catches a hang: reloads take well under a second.
const HANG: Duration = Duration::from_secs(120);

/// A 2025-11-25 client that counts `tools/list_changed` notifications.
#[derive(Clone, Default)]
struct Listener(Arc<Notify>);

impl ClientHandler for Listener {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("o3", "0"),
        )
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.0.notify_one();
    }
}

type Client = RunningService<RoleClient, Listener>;

async fn client(serve: &HttpServe, listener: Listener) -> Client {
    // reqwest is built without a crypto provider: toolhost's TLS setup.
    let http = toolhost::net::tls::reqwest_builder()
        .unwrap()
        .build()
        .unwrap();
    let transport = StreamableHttpClientTransport::with_client(
        http,
        StreamableHttpClientTransportConfig::with_uri(serve.url()),
    );
    listener.serve(transport).await.unwrap()
}

async fn names(client: &Client) -> Vec<String> {
    client
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect()
}

/// Calls `tool` with `args`: the text of its first block, and whether it
/// is an error.
async fn call(peer: &rmcp::Peer<RoleClient>, tool: &str, args: Value) -> (String, bool) {
    let Value::Object(args) = args else {
        unreachable!()
    };
    let result = peer
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(args))
        .await
        .unwrap();
    let wire = serde_json::to_value(&result).unwrap();
    (
        wire["content"][0]["text"].as_str().unwrap_or("").to_owned(),
        wire["isError"] == true,
    )
}

fn sha256(path: &Path) -> String {
    hex::encode(sha2::Sha256::digest(std::fs::read(path).unwrap()))
}

/// `toolhost.toml` in `dir`: the test cache and `body`.
fn config_text(body: &str) -> String {
    format!(
        "[host]\ncall_timeout_ms = 60000\ncache_dir = \"{}\"\n\n{body}\n",
        root().join("target/test-code-cache").display()
    )
}

/// Replaces `path` as an editor does: written beside it, renamed over it.
fn replace(path: &Path, bytes: &[u8]) {
    let tmp = path.with_extension("partial");
    std::fs::write(&tmp, bytes).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

/// Reads the server's stderr until a line contains `needle` (the lines
/// before it are added to `seen`); that line.
fn line_with(serve: &HttpServe, needle: &str, seen: &mut Vec<String>) -> String {
    let start = Instant::now();
    tokio::task::block_in_place(|| {
        loop {
            let left = HANG.saturating_sub(start.elapsed());
            let line = serve.stderr.recv_timeout(left).unwrap_or_else(|_| {
                panic!(
                    "no line with {needle:?}; the log so far:\n{}",
                    seen.join("\n")
                )
            });
            if line.contains(needle) {
                return line;
            }
            seen.push(line);
        }
    })
}

async fn within<T>(what: &str, f: impl Future<Output = T>) -> T {
    tokio::time::timeout(HANG, f)
        .await
        .unwrap_or_else(|_| panic!("no {what} within {HANG:?}"))
}

const REFUSED: &str = "the previous configuration keeps serving";
const RELOADED: &str = "toolhost: reloaded";

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn o3_watch_serves_a_changed_plugin_and_refuses_a_broken_pin_a_torn_file_and_garbage() {
    let dir = tempfile::tempdir().unwrap();
    let plugin = dir.path().join("p.wasm");
    std::fs::copy(wasm("template"), &plugin).unwrap();
    let path: PathBuf = dir.path().join("toolhost.toml");
    let pinned = |digest: &str| {
        config_text(&format!(
            "[plugins.p]\nwasm = \"p.wasm\"\nsha256 = \"{digest}\"\n"
        ))
    };
    std::fs::write(&path, pinned(&sha256(&wasm("template")))).unwrap();
    let serve = HttpServe::start_at(&path, &["--watch"]);
    let listener = Listener::default();
    let client = client(&serve, listener.clone()).await;
    let peer = client.peer().clone();
    let mut log = Vec::new();
    assert_eq!(names(&client).await, ["echo"]);

    // Other bytes under the pin: refused, naming the plugin; echo serves.
    replace(&plugin, &std::fs::read(wasm("calc")).unwrap());
    let refused = line_with(&serve, REFUSED, &mut log);
    assert!(refused.contains("plugins.p"), "{refused}");
    assert_eq!(
        call(&peer, "echo", json!({"text": "still here"})).await,
        ("still here".into(), false)
    );
    assert_eq!(names(&client).await, ["echo"]);

    // The configuration caught mid-write: refused, and retried on the
    // next change.
    let whole = pinned(&sha256(&wasm("calc")));
    std::fs::write(&path, &whole[..whole.len() - 40]).unwrap();
    let refused = line_with(&serve, REFUSED, &mut log);
    assert!(refused.contains("toolhost.toml"), "{refused}");
    assert_eq!(
        call(&peer, "echo", json!({"text": "after a torn file"})).await,
        ("after a torn file".into(), false)
    );

    // The rest of the file: the plugin's new tools, and the clients told.
    std::fs::write(&path, &whole).unwrap();
    let reloaded = line_with(&serve, RELOADED, &mut log);
    assert!(reloaded.contains("changed: p"), "{reloaded}");
    within("tools/list_changed", listener.0.notified()).await;
    assert_eq!(names(&client).await, ["calc", "stats"]);
    assert_eq!(
        call(&peer, "calc", json!({"expression": "6*7"})).await,
        ("42".into(), false)
    );

    // Unpinned, then garbage for the component: refused, calc serves.
    replace(
        &path,
        config_text("[plugins.p]\nwasm = \"p.wasm\"\n").as_bytes(),
    );
    line_with(&serve, RELOADED, &mut log);
    replace(&plugin, b"\0asm but not a component");
    let refused = line_with(&serve, REFUSED, &mut log);
    assert!(refused.contains("plugins.p"), "{refused}");
    assert_eq!(
        call(&peer, "calc", json!({"expression": "1+1"})).await,
        ("2".into(), false)
    );
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn o3_200_concurrent_calls_across_a_reload_all_succeed_each_run_once() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(wasm("template"), dir.path().join("template.wasm")).unwrap();
    std::fs::copy(wasm("calc"), dir.path().join("calc.wasm")).unwrap();
    let path = dir.path().join("toolhost.toml");
    let template = "[plugins.template]\nwasm = \"template.wasm\"\n";
    std::fs::write(&path, config_text(template)).unwrap();
    // Each run of a tool is logged once, by the pipeline, before its
    // result is sent.
    let serve = HttpServe::start_at(&path, &["--watch", "--log", "warn,toolhost::call=info"]);
    let mut clients = Vec::new();
    for _ in 0..4 {
        clients.push(client(&serve, Listener::default()).await);
    }

    const CALLERS: usize = 200;
    let reloaded = Arc::new(AtomicBool::new(false));
    let started = Arc::new(AtomicUsize::new(0));
    let mut callers = Vec::new();
    for i in 0..CALLERS {
        let peer = clients[i % clients.len()].peer().clone();
        let (reloaded, started) = (reloaded.clone(), started.clone());
        // Each caller calls until the reload is done, then once more: some
        // of its calls run on the old host, at least one on the new.
        callers.push(tokio::spawn(async move {
            let mut made = 0usize;
            loop {
                let after = reloaded.load(Ordering::SeqCst);
                let text = format!("caller {i} call {made}");
                let answer = call(&peer, "echo", json!({"text": text})).await;
                assert_eq!(answer, (text, false));
                made += 1;
                if made == 1 {
                    started.fetch_add(1, Ordering::SeqCst);
                }
                if after {
                    return made;
                }
            }
        }));
    }
    let start = Instant::now();
    while started.load(Ordering::SeqCst) < CALLERS {
        assert!(start.elapsed() < HANG, "the callers did not start");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Every caller is calling: reload under them.
    let mut log = Vec::new();
    replace(
        &path,
        config_text(&format!(
            "{template}\n[plugins.calc]\nwasm = \"calc.wasm\"\n"
        ))
        .as_bytes(),
    );
    let line = line_with(&serve, RELOADED, &mut log);
    assert!(line.contains("plugins added: calc"), "{line}");
    reloaded.store(true, Ordering::SeqCst);
    let mut calls = 0;
    for caller in callers {
        calls += within("a caller's calls", caller).await.unwrap();
    }
    assert!(calls >= 2 * CALLERS, "{calls}");
    assert!(names(&clients[0]).await.contains(&"calc".to_owned()));

    // Every call ran exactly once: as many runs of echo logged as calls
    // answered (each answered with its own text, above).
    let runs = |lines: &[String]| {
        lines
            .iter()
            .filter(|l| l.contains("toolhost::call") && l.contains("echo"))
            .count()
    };
    tokio::task::block_in_place(|| {
        let start = Instant::now();
        while runs(&log) < calls {
            let left = HANG.saturating_sub(start.elapsed());
            match serve.stderr.recv_timeout(left) {
                Ok(line) => log.push(line),
                Err(_) => break,
            }
        }
        // Anything more already written is a run too many.
        while let Ok(line) = serve.stderr.recv_timeout(Duration::from_millis(500)) {
            log.push(line);
        }
    });
    assert_eq!(runs(&log), calls, "runs logged vs calls answered");
    for client in clients {
        client.cancel().await.unwrap();
    }
}

/// The status of `GET /readyz` on `addr`.
fn readiness(addr: &str) -> u16 {
    common::get(addr, "/readyz").0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn o3_sighup_reloads_and_a_change_while_the_server_drains_reloads_nothing() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(wasm("template"), dir.path().join("template.wasm")).unwrap();
    std::fs::copy(wasm("calc"), dir.path().join("calc.wasm")).unwrap();
    let path = dir.path().join("toolhost.toml");
    let template = "[plugins.template]\nwasm = \"template.wasm\"\n";
    std::fs::write(&path, config_text(template)).unwrap();
    let mut serve = HttpServe::start_at(&path, &["--watch", "--drain-delay", "3"]);
    let mut log = Vec::new();

    // SIGHUP reloads, changed file or not.
    serve.signal("HUP");
    let line = line_with(&serve, RELOADED, &mut log);
    assert!(line.contains("no plugin changed"), "{line}");

    // Once the server is draining, a change reloads nothing: it exits as
    // it would have.
    serve.signal("TERM");
    let start = Instant::now();
    while readiness(&serve.addr) != 503 {
        assert!(start.elapsed() < HANG, "the server did not turn unready");
        std::thread::sleep(Duration::from_millis(20));
    }
    replace(
        &path,
        config_text(&format!(
            "{template}\n[plugins.calc]\nwasm = \"calc.wasm\"\n"
        ))
        .as_bytes(),
    );
    assert_eq!(serve.exit_code(HANG), Some(0));
    // Everything it wrote (the pipe closed when it exited).
    let rest: Vec<String> = tokio::task::block_in_place(|| serve.stderr.iter().collect());
    assert!(
        !rest
            .iter()
            .any(|l| l.contains(RELOADED) || l.contains(REFUSED)),
        "{rest:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn o3_a_reload_that_changes_sign_in_or_metrics_is_refused_not_half_applied() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(wasm("template"), dir.path().join("template.wasm")).unwrap();
    let path = dir.path().join("toolhost.toml");
    let base =
        "[plugins.template]\nwasm = \"template.wasm\"\n\n[metrics]\nenabled = true\nopen = true\n";
    std::fs::write(&path, config_text(base)).unwrap();
    let serve = HttpServe::start_at(&path, &[]);
    let mut log = Vec::new();
    for (change, named) in [
        (format!("{base}max_tool_labels = 10\n"), "[metrics] changed"),
        (
            format!(
                "{base}\n[auth]\nissuer = \"https://as.example.com\"\nresource = \"http://{}/mcp\"\n",
                serve.addr
            ),
            "[auth] changed",
        ),
    ] {
        std::fs::write(&path, config_text(&change)).unwrap();
        serve.signal("HUP");
        let line = line_with(&serve, REFUSED, &mut log);
        assert!(line.contains(named), "{line}");
        assert!(line.contains("restart the server to apply it"), "{line}");
    }
    // The old settings go on serving, and a change beside them reloads.
    std::fs::write(&path, config_text(base)).unwrap();
    serve.signal("HUP");
    let line = line_with(&serve, RELOADED, &mut log);
    assert!(line.contains("serving"), "{line}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn x1_a_reload_that_adds_tenants_to_metrics_guarded_as_mcp_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(wasm("template"), dir.path().join("template.wasm")).unwrap();
    let path = dir.path().join("toolhost.toml");
    let base = "[plugins.template]\nwasm = \"template.wasm\"\n\n[metrics]\nenabled = true\n";
    std::fs::write(&path, config_text(base)).unwrap();
    let serve = HttpServe::start_at(&path, &[]);
    let mut log = Vec::new();
    // [metrics] is unchanged, but with tenants any tenant's caller of /mcp
    // could read every tenant's calls at /metrics.
    let tenants = format!("{base}\n[tenants.a]\nsubjects = [\"alice\"]\n");
    std::fs::write(&path, config_text(&tenants)).unwrap();
    serve.signal("HUP");
    let line = line_with(&serve, REFUSED, &mut log);
    assert!(line.contains("metrics.token: with [tenants]"), "{line}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a3_a_reload_keeps_every_quotas_usage() {
    let dir = tempfile::tempdir().unwrap();
    for plugin in ["template", "sleeper"] {
        std::fs::copy(wasm(plugin), dir.path().join(format!("{plugin}.wasm"))).unwrap();
    }
    let path = dir.path().join("toolhost.toml");
    let base = "[plugins.template]\nwasm = \"template.wasm\"\n\n\
                [plugins.sleeper]\nwasm = \"sleeper.wasm\"\ntimeout_ms = 60000\n\n\
                [quota]\nin_flight = 1\n";
    std::fs::write(&path, config_text(base)).unwrap();
    let serve = HttpServe::start_at(&path, &[]);
    let (holder, asker) = (
        client(&serve, Listener::default()).await,
        client(&serve, Listener::default()).await,
    );
    // One call in flight until its deadline, a minute away: the quota is
    // full. (The held call is made again if a probe had the slot as it
    // came.)
    let hold = || {
        let peer = holder.peer().clone();
        tokio::spawn(async move {
            peer.call_tool(
                CallToolRequestParams::new("pollable").with_arguments(serde_json::Map::new()),
            )
            .await
        })
    };
    let echo = || {
        asker.call_tool(
            CallToolRequestParams::new("echo")
                .with_arguments(json!({"text": "hi"}).as_object().unwrap().clone()),
        )
    };
    let mut held = hold();
    within("the held call's slot taken", async {
        loop {
            if held.is_finished() {
                held = hold();
            }
            if echo().await.is_err() && !held.is_finished() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    // A reload (a change beside the quota) hands no slot back: the call
    // still runs on the old host, and the new one counts it.
    std::fs::write(&path, config_text(&format!("# reloaded\n{base}"))).unwrap();
    serve.signal("HUP");
    line_with(&serve, RELOADED, &mut Vec::new());
    let refused = echo().await.unwrap_err().to_string();
    // The only quota is in_flight: 429 is it.
    assert!(refused.ends_with("HTTP 429"), "{refused}");
    assert!(!held.is_finished(), "the held call ended early");
    held.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn o3_a_storm_of_changes_makes_a_few_builds_and_ends_on_the_last() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(wasm("template"), dir.path().join("template.wasm")).unwrap();
    std::fs::copy(wasm("calc"), dir.path().join("calc.wasm")).unwrap();
    let path = dir.path().join("toolhost.toml");
    let template = "[plugins.template]\nwasm = \"template.wasm\"\n";
    std::fs::write(&path, config_text(template)).unwrap();
    let serve = HttpServe::start_at(&path, &["--watch"]);
    let client = client(&serve, Listener::default()).await;

    // A hundred changes as fast as they can be written; only the last adds
    // a plugin.
    const CHANGES: usize = 100;
    for i in 0..CHANGES - 1 {
        replace(
            &path,
            config_text(&format!("# change {i}\n{template}")).as_bytes(),
        );
    }
    replace(
        &path,
        config_text(&format!(
            "{template}\n[plugins.calc]\nwasm = \"calc.wasm\"\n"
        ))
        .as_bytes(),
    );
    let mut log = Vec::new();
    line_with(&serve, "plugins added: calc", &mut log);
    let builds = log
        .iter()
        .filter(|l| l.contains(RELOADED) || l.contains(REFUSED))
        .count();
    // Coalesced: nowhere near a build per change.
    assert!(builds < CHANGES / 2, "{builds} builds: {log:?}");
    assert!(!log.iter().any(|l| l.contains(REFUSED)), "{log:?}");
    assert_eq!(names(&client).await, ["calc", "echo", "stats"]);
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn o3_a_locked_server_refuses_other_bytes_until_the_lock_file_changes() {
    let dir = tempfile::tempdir().unwrap();
    let plugin = dir.path().join("p.wasm");
    std::fs::copy(wasm("template"), &plugin).unwrap();
    let path = dir.path().join("toolhost.toml");
    std::fs::write(&path, config_text("[plugins.p]\nwasm = \"p.wasm\"\n")).unwrap();
    let lock = |path: &Path| {
        let out = common::run(&["lock", "--config", path.to_str().unwrap()]);
        assert!(out.status.success(), "{:?}", common::texts(&out));
    };
    lock(&path);
    let serve = HttpServe::start_at(&path, &["--watch", "--locked"]);
    let client = client(&serve, Listener::default()).await;
    let mut log = Vec::new();

    // Held to the lock, as at startup: other bytes are refused.
    replace(&plugin, &std::fs::read(wasm("calc")).unwrap());
    let refused = line_with(&serve, REFUSED, &mut log);
    for needle in ["plugins.p", "toolhost.lock says", &sha256(&wasm("calc"))] {
        assert!(refused.contains(needle), "{needle}: {refused}");
    }
    assert_eq!(names(&client).await, ["echo"]);

    // The lock file rewritten for them: that change reloads.
    lock(&path);
    let reloaded = line_with(&serve, RELOADED, &mut log);
    assert!(reloaded.contains("changed: p"), "{reloaded}");
    assert_eq!(names(&client).await, ["calc", "stats"]);
    client.cancel().await.unwrap();
}

/// A reload whose plugins may run more instances at once than the first
/// configuration's: the new host has room of its own for them (rule C4),
/// so the reload is not refused for want of room, and every one of the
/// new plugin's instances can be alive at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn c4_a_reload_that_needs_more_instances_than_the_start_gets_its_own_room() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(wasm("template"), dir.path().join("template.wasm")).unwrap();
    std::fs::copy(wasm("calc"), dir.path().join("calc.wasm")).unwrap();
    let path = dir.path().join("toolhost.toml");
    let one = "[plugins.template]\nwasm = \"template.wasm\"\nmax_instances = 1\n";
    std::fs::write(&path, config_text(one)).unwrap();
    let serve = HttpServe::start_at(&path, &["--watch"]);
    let client = client(&serve, Listener::default()).await;
    let mut log = Vec::new();
    assert_eq!(names(&client).await, ["echo"]);

    let more = format!("{one}\n[plugins.calc]\nwasm = \"calc.wasm\"\nmax_instances = 8\n");
    replace(&path, config_text(&more).as_bytes());
    let reloaded = line_with(&serve, RELOADED, &mut log);
    assert!(reloaded.contains("calc"), "{reloaded}");
    let peer = client.peer().clone();
    let calls: Vec<_> = (0..8)
        .map(|i| {
            let peer = peer.clone();
            tokio::spawn(async move {
                call(&peer, "calc", json!({"expression": format!("{i}+1")})).await
            })
        })
        .collect();
    for (i, answer) in calls.into_iter().enumerate() {
        let answer = within("a calc call", answer).await.unwrap();
        assert_eq!(answer, ((i + 1).to_string(), false));
    }
    client.cancel().await.unwrap();
}

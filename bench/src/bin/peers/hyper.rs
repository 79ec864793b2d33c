//! toolhost beside hyper-mcp, the MCP server whose tools are Extism
//! plugins, over stdio (the transport both serve), from one client: the
//! same few lines of Rust write each JSON-RPC request to the server's
//! stdin and a reader thread timestamps each answer as its line arrives,
//! so the client costs both servers the same. Each case alternates the
//! two servers, round by round.
//!
//! - `tools/call` echo: one client, then 8 callers with a request each in
//!   flight on the one connection (8 threads sharing the pipes);
//! - cold start: process start to the answer to the first `tools/list`,
//!   with 1 and with 10 plugins (10 copies of the echo, named apart);
//! - resident memory (VmRSS) with 10 plugins loaded and idle, then after
//!   10,000 calls spread over them;
//! - a runaway tool (a guest loop that never ends) with a 100 ms deadline:
//!   from the deadline to the error at the client, and whether the calls
//!   after it are served.
//!
//! toolhost serves the template plugin (`bench/mcp/toolhost.toml`), and for
//! 10 plugins `named-echo` (tests/plugins) ten times under the names
//! `echo0`…`echo9`; the runaway is the `runaway` test plugin's `spin`.
//! hyper-mcp serves `bench/hyper-mcp-echo`, its tools named
//! `PLUGIN-echo` as it names them; the runaway is the same plugin
//! configured to offer `spin` as well. Both compile plugins once and keep
//! the code on disk (toolhost's `cache_dir`; hyper-mcp's Extism uses
//! wasmtime's own cache, on by default), and each cold start is timed after
//! two starts that fill those caches.

use std::collections::HashMap;
use std::io::{BufRead as _, BufReader, Write as _};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolhost_bench::root;

use crate::Sizes;
use crate::stats::{Samples, show};

/// The release of hyper-mcp measured (`make bench` installs it).
pub const VERSION: &str = "0.8.3";
/// The runaway's deadline.
const DEADLINE: Duration = Duration::from_millis(100);
/// How long an answer is waited for before it counts as never coming.
const WAIT: Duration = Duration::from_secs(5);
/// How long the runaway whose client does not cancel is watched.
const WATCH: Duration = Duration::from_secs(2);
/// Plugins loaded for the "10 plugins" cases.
const PLUGINS: usize = 10;
/// Calls made before the memory is read again.
const MEMORY_CALLS: usize = 10_000;
const TEXT: &str = "hello, sandbox";

type Answer = (Instant, Value);
type Pending = Arc<Mutex<HashMap<u64, mpsc::Sender<Answer>>>>;

/// A command line and what it adds to the environment.
struct Cmd {
    argv: Vec<String>,
    env: Vec<(&'static str, String)>,
}

/// A server on the other end of a pair of pipes.
struct Server {
    child: Child,
    stdin: Arc<Mutex<ChildStdin>>,
    pending: Pending,
    next: AtomicU64,
    started: Instant,
}

fn write_line(stdin: &Mutex<ChildStdin>, line: &[u8]) -> std::io::Result<()> {
    let mut w = stdin.lock().expect("the pipe's lock");
    w.write_all(line)?;
    w.flush()
}

fn encode(message: &Value) -> Vec<u8> {
    let mut line = serde_json::to_vec(message).expect("JSON");
    line.push(b'\n');
    line
}

impl Server {
    /// Starts `cmd`; `started` is the instant before the spawn.
    fn start(cmd: &Cmd) -> Self {
        let mut command = Command::new(&cmd.argv[0]);
        command
            .args(&cmd.argv[1..])
            .env_remove("RUST_LOG")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        for (k, v) in &cmd.env {
            command.env(k, v);
        }
        let started = Instant::now();
        let mut child = command
            .spawn()
            .unwrap_or_else(|e| panic!("{}: {e}", cmd.argv[0]));
        let stdin = Arc::new(Mutex::new(child.stdin.take().expect("stdin")));
        let stdout = child.stdout.take().expect("stdout");
        let pending: Pending = Arc::default();
        let (p, w) = (pending.clone(), stdin.clone());
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            let mut line = String::new();
            loop {
                line.clear();
                match reader.read_line(&mut line) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
                let at = Instant::now();
                let Ok(message) = serde_json::from_str::<Value>(&line) else {
                    continue;
                };
                if message.get("method").is_some() {
                    // A request of the server's own (roots, sampling): refused
                    // at once, so that nothing waits for it.
                    if let Some(id) = message.get("id") {
                        let refusal = json!({"jsonrpc": "2.0", "id": id,
                            "error": {"code": -32601, "message": "not offered"}});
                        let _ = write_line(&w, &encode(&refusal));
                    }
                    continue;
                }
                let waiter = message
                    .get("id")
                    .and_then(Value::as_u64)
                    .and_then(|id| p.lock().expect("the lock").remove(&id));
                if let Some(tx) = waiter {
                    let _ = tx.send((at, message));
                }
            }
        });
        Self {
            child,
            stdin,
            pending,
            next: AtomicU64::new(1),
            started,
        }
    }

    /// Sends a request: its id, when it was written, and where its answer
    /// (and the instant it arrived) will come.
    fn request(&self, method: &str, params: Value) -> (u64, Instant, mpsc::Receiver<Answer>) {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::channel();
        self.pending.lock().expect("the lock").insert(id, tx);
        let line = encode(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let sent = Instant::now();
        write_line(&self.stdin, &line).expect("the server reads its input");
        (id, sent, rx)
    }

    fn notify(&self, method: &str, params: Value) {
        let line = encode(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
        write_line(&self.stdin, &line).expect("the server reads its input");
    }

    /// A request and its answer, if one comes within `wait`: the instants
    /// it was sent and answered, and the answer.
    fn call(&self, method: &str, params: Value, wait: Duration) -> Option<(Instant, Answer)> {
        let (_, sent, rx) = self.request(method, params);
        rx.recv_timeout(wait).ok().map(|a| (sent, a))
    }

    fn initialize(&self) {
        let params = json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "peers", "version": "0"}
        });
        let (_, (_, answer)) = self
            .call("initialize", params, Duration::from_secs(120))
            .expect("the server answers `initialize`");
        assert!(answer.get("result").is_some(), "initialize: {answer}");
        self.notify("notifications/initialized", json!({}));
    }

    /// The tools' names and the instant the list arrived.
    fn list_tools(&self) -> (Vec<String>, Instant) {
        let (_, (at, answer)) = self
            .call("tools/list", json!({}), Duration::from_secs(120))
            .expect("the server answers `tools/list`");
        let names = answer["result"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("tools/list: {answer}"))
            .iter()
            .filter_map(|t| t["name"].as_str().map(str::to_owned))
            .collect();
        (names, at)
    }

    /// One echo call, checked, and its round trip.
    fn echo(&self, tool: &str) -> Duration {
        let (sent, (at, answer)) = self
            .call(
                "tools/call",
                json!({"name": tool, "arguments": {"text": TEXT}}),
                WAIT,
            )
            .unwrap_or_else(|| panic!("`{tool}` was not answered within {WAIT:?}"));
        assert!(echoed(&answer), "`{tool}` answered {answer}");
        at - sent
    }

    /// Resident memory, KiB.
    fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .expect("the server's /proc status");
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .expect("VmRSS")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        toolhost_bench::stop(&mut self.child);
    }
}

fn echoed(answer: &Value) -> bool {
    let r = &answer["result"];
    r["isError"] != json!(true) && r["content"][0]["text"] == json!(TEXT)
}

/// A tool call that succeeded (any text).
fn succeeded(answer: &Value) -> bool {
    answer.get("result").is_some() && answer["result"]["isError"] != json!(true)
}

/// Where everything is.
struct Setup {
    toolhost: PathBuf,
    hyper: PathBuf,
    dir: PathBuf,
}

impl Setup {
    fn new() -> Self {
        let root = root();
        let hyper = root.join("target/peers/bin/hyper-mcp");
        let echo = hyper_echo_wasm();
        for p in [&hyper, &echo, &named_echo_wasm()] {
            assert!(
                p.exists(),
                "{}: missing; `make bench` builds it (hyper-mcp {VERSION} is installed with `cargo install`)",
                p.display()
            );
        }
        let dir = root.join("target/peers-hyper");
        // hyper-mcp's log file (it writes one, at `info`, by default).
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("logs")).expect("creates target/peers-hyper");
        let s = Self {
            toolhost: toolhost_bench::built_beside("toolhost"),
            hyper,
            dir,
        };
        s.write_configs();
        s
    }

    fn toolhost(&self, config: &str) -> Cmd {
        let config = if config == "template" {
            root().join("bench/mcp/toolhost.toml")
        } else {
            self.dir.join(config)
        };
        Cmd {
            argv: vec![
                self.toolhost.display().to_string(),
                "serve".into(),
                "--config".into(),
                config.display().to_string(),
            ],
            env: vec![],
        }
    }

    /// hyper-mcp with `config`; `log_off`: with `RUST_LOG=off`, which turns
    /// its log file off.
    fn hyper(&self, config: &str, log_off: bool) -> Cmd {
        let mut env = vec![(
            "HYPER_MCP_LOG_PATH",
            self.dir.join("logs").display().to_string(),
        )];
        if log_off {
            env.push(("RUST_LOG", "off".into()));
        }
        Cmd {
            argv: vec![
                self.hyper.display().to_string(),
                "--config-file".into(),
                self.dir.join(config).display().to_string(),
            ],
            env,
        }
    }

    fn write_configs(&self) {
        let root = root();
        let cache = root.join("target/bench-code-cache");
        let named = named_echo_wasm();
        let mut ten = format!(
            "[host]\nvalidate_arguments = true\ncache_dir = {:?}\n",
            cache.display().to_string()
        );
        for i in 0..PLUGINS {
            ten.push_str(&format!(
                "\n[plugins.echo{i}]\nwasm = {:?}\nsettings = {{ tool = \"echo{i}\" }}\n",
                named.display().to_string()
            ));
        }
        std::fs::write(self.dir.join("toolhost-10.toml"), ten).expect("writes");
        let runaway = format!(
            "[host]\nvalidate_arguments = true\ncache_dir = {:?}\n\n\
             [plugins.template]\nwasm = {:?}\n\n\
             [plugins.runaway]\nwasm = {:?}\ntimeout_ms = {}\n",
            cache.display().to_string(),
            toolhost_bench::wasm("template").display().to_string(),
            toolhost_bench::wasm("runaway").display().to_string(),
            DEADLINE.as_millis()
        );
        std::fs::write(self.dir.join("toolhost-runaway.toml"), runaway).expect("writes");

        let url = format!("file://{}", hyper_echo_wasm().display());
        let plugins = |names: &[String]| -> Value {
            let map: serde_json::Map<String, Value> = names
                .iter()
                .map(|n| (n.clone(), json!({"url": url})))
                .collect();
            json!({"plugins": map})
        };
        let write = |name: &str, v: &Value| {
            std::fs::write(
                self.dir.join(name),
                serde_json::to_vec_pretty(v).expect("JSON"),
            )
            .expect("writes")
        };
        write("hyper-1.json", &plugins(&["echo".into()]));
        let names: Vec<String> = (0..PLUGINS).map(|i| format!("echo{i}")).collect();
        write("hyper-10.json", &plugins(&names));
        write(
            "hyper-runaway.json",
            &json!({"plugins": {
                "echo": {"url": url},
                "runaway": {"url": url, "runtime_config": {"env_vars": {"spin": "on"}}}
            }}),
        );
    }
}

fn hyper_echo_wasm() -> PathBuf {
    root().join("target/wasm32-wasip1/release/hyper_mcp_echo.wasm")
}

fn named_echo_wasm() -> PathBuf {
    toolhost_bench::wasm("named_echo")
}

/// One side's figure in a row.
enum Cell {
    Time(Samples),
    /// Resident memory of each run, KiB.
    Memory(Vec<u64>),
    Text(String),
}

impl Cell {
    fn value(&self) -> Option<f64> {
        match self {
            Cell::Time(s) => Some(s.median().as_secs_f64()),
            Cell::Memory(v) => Some(median_kib(v) as f64),
            Cell::Text(_) => None,
        }
    }

    fn show(&self) -> String {
        match self {
            Cell::Time(s) => format!("{} (p99 {})", show(s.median()), show(s.p99())),
            Cell::Memory(v) => {
                let runs: Vec<String> = v.iter().map(|k| mib(*k)).collect();
                format!("{} (runs: {})", mib(median_kib(v)), runs.join(", "))
            }
            Cell::Text(t) => t.clone(),
        }
    }
}

fn median_kib(v: &[u64]) -> u64 {
    let mut v = v.to_vec();
    v.sort_unstable();
    v[v.len() / 2]
}

fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

/// One line of the table.
pub struct HRow {
    measure: String,
    toolhost: Cell,
    hyper: Cell,
    /// toolhost / hyper-mcp at most this.
    goal: Option<f64>,
}

/// The rows as one Markdown table.
pub fn table(rows: &[HRow]) -> String {
    let mut out = format!(
        "| measure | toolhost | hyper-mcp {VERSION} | toolhost / hyper-mcp | goal |\n\
         |---|---:|---:|---:|---|\n"
    );
    for r in rows {
        let (ratio, verdict) = match (r.toolhost.value(), r.hyper.value()) {
            (Some(t), Some(h)) => {
                let ratio = t / h;
                let verdict = match r.goal {
                    Some(g) if ratio <= g => format!("≤ {g} — met"),
                    Some(g) => format!("≤ {g} — missed by {:.0} %", (ratio / g - 1.0) * 100.0),
                    None => String::new(),
                };
                (format!("{ratio:.2}×"), verdict)
            }
            _ => ("—".into(), String::new()),
        };
        out.push_str(&format!(
            "| {} | {} | {} | {ratio} | {verdict} |\n",
            r.measure,
            r.toolhost.show(),
            r.hyper.show()
        ));
    }
    out
}

/// Every row, in the order they are measured.
pub fn rows(sizes: &Sizes) -> Vec<HRow> {
    let setup = Setup::new();
    let mut rows = Vec::new();
    eprintln!("peers: hyper-mcp: echo calls");
    rows.extend(echo(&setup, sizes));
    eprintln!("peers: hyper-mcp: cold starts");
    rows.extend(cold_starts(&setup, sizes));
    eprintln!("peers: hyper-mcp: memory");
    rows.extend(memory(&setup, sizes));
    eprintln!("peers: hyper-mcp: a runaway");
    rows.extend(runaway(&setup, sizes));
    rows
}

/// `calls` echo calls from `callers` threads sharing the connection:
/// each call's round trip into `into`, and the wall time per call.
fn burst(
    server: &Server,
    tool: &str,
    callers: usize,
    calls: usize,
    into: &mut Vec<Duration>,
) -> Duration {
    let each = calls / callers;
    let start = Instant::now();
    let all: Vec<Vec<Duration>> = std::thread::scope(|s| {
        let callers: Vec<_> = (0..callers)
            .map(|_| s.spawn(|| (0..each).map(|_| server.echo(tool)).collect::<Vec<_>>()))
            .collect();
        callers
            .into_iter()
            .map(|c| c.join().expect("a caller"))
            .collect()
    });
    let wall = start.elapsed();
    all.into_iter().for_each(|v| into.extend(v));
    wall / (each * callers) as u32
}

fn echo(setup: &Setup, sizes: &Sizes) -> Vec<HRow> {
    let toolhost = Server::start(&setup.toolhost("template"));
    let hyper = Server::start(&setup.hyper("hyper-1.json", false));
    let quiet = Server::start(&setup.hyper("hyper-1.json", true));
    let servers = [
        (&toolhost, "echo"),
        (&hyper, "echo-echo"),
        (&quiet, "echo-echo"),
    ];
    for (s, tool) in servers {
        s.initialize();
        for _ in 0..200 {
            s.echo(tool);
        }
    }
    let rounds = 10;
    let mut one: [Vec<Duration>; 3] = Default::default();
    for _ in 0..rounds {
        for (i, (s, tool)) in servers.iter().enumerate() {
            for _ in 0..sizes.mcp_calls / rounds {
                one[i].push(s.echo(tool));
            }
        }
    }
    let callers = 8;
    let (mut latency, mut per_call): ([Vec<Duration>; 2], [Vec<Duration>; 2]) = Default::default();
    for round in 0..=sizes.hyper_bursts {
        for (i, (s, tool)) in servers[..2].iter().enumerate() {
            let mut l = Vec::new();
            let t = burst(s, tool, callers, sizes.mcp_calls / 2, &mut l);
            // The first round warms the callers up and is not kept.
            if round > 0 {
                latency[i].extend(l);
                per_call[i].push(t);
            }
        }
    }
    let [th, hy, hy_quiet] = one.map(Samples::new);
    let [th_latency, hy_latency] = latency.map(Samples::new);
    let [th_per_call, hy_per_call] = per_call.map(Samples::new);
    vec![
        HRow {
            measure: "`tools/call` echo, one client, one call at a time: round trip".into(),
            toolhost: Cell::Time(th.clone_samples()),
            hyper: Cell::Time(hy),
            goal: Some(0.5),
        },
        HRow {
            measure: "the same, hyper-mcp with its log file off (`RUST_LOG=off`)".into(),
            toolhost: Cell::Time(th),
            hyper: Cell::Time(hy_quiet),
            goal: None,
        },
        HRow {
            measure: format!(
                "`tools/call` echo, {callers} callers, {callers} requests in flight on one connection: wall time per call"
            ),
            toolhost: Cell::Time(th_per_call),
            hyper: Cell::Time(hy_per_call),
            goal: Some(0.5),
        },
        HRow {
            measure: "the same: each call's round trip".into(),
            toolhost: Cell::Time(th_latency),
            hyper: Cell::Time(hy_latency),
            goal: None,
        },
    ]
}

/// From the spawn to the answer to the first `tools/list`, which must
/// list `plugins` echo tools.
fn cold_start(cmd: &Cmd, plugins: usize) -> Duration {
    let server = Server::start(cmd);
    server.initialize();
    let (names, at) = server.list_tools();
    let echoes = names.iter().filter(|n| n.contains("echo")).count();
    assert_eq!(echoes, plugins, "{}: lists {names:?}", cmd.argv[0]);
    at - server.started
}

fn cold_starts(setup: &Setup, sizes: &Sizes) -> Vec<HRow> {
    let mut rows = Vec::new();
    for (plugins, th_config, hy_config) in [
        (1, "template", "hyper-1.json"),
        (PLUGINS, "toolhost-10.toml", "hyper-10.json"),
    ] {
        let (th_cmd, hy_cmd) = (setup.toolhost(th_config), setup.hyper(hy_config, false));
        let (mut th, mut hy) = (Vec::new(), Vec::new());
        // Two starts each fill the caches and are not kept.
        for i in 0..sizes.starts + 2 {
            let t = cold_start(&th_cmd, plugins);
            let h = cold_start(&hy_cmd, plugins);
            if i >= 2 {
                th.push(t);
                hy.push(h);
            }
        }
        rows.push(HRow {
            measure: format!(
                "cold start, {plugins} plugin{}: process start to the first `tools/list` answer",
                if plugins == 1 { "" } else { "s" }
            ),
            toolhost: Cell::Time(Samples::new(th)),
            hyper: Cell::Time(Samples::new(hy)),
            goal: Some(0.5),
        });
    }
    rows
}

/// Resident memory of a server of 10 plugins: idle after its first
/// `tools/list`, then after 10,000 calls spread over the 10 tools.
fn resident(cmd: &Cmd, tool: impl Fn(usize) -> String) -> (u64, u64) {
    let server = Server::start(cmd);
    server.initialize();
    server.list_tools();
    std::thread::sleep(Duration::from_secs(1));
    let idle = server.rss_kib();
    let tools: Vec<String> = (0..PLUGINS).map(tool).collect();
    for i in 0..MEMORY_CALLS {
        server.echo(&tools[i % PLUGINS]);
    }
    std::thread::sleep(Duration::from_millis(200));
    (idle, server.rss_kib())
}

fn memory(setup: &Setup, sizes: &Sizes) -> Vec<HRow> {
    let th_cmd = setup.toolhost("toolhost-10.toml");
    let hy_cmd = setup.hyper("hyper-10.json", false);
    let (mut th, mut hy) = ((Vec::new(), Vec::new()), (Vec::new(), Vec::new()));
    for _ in 0..sizes.memory_runs {
        let (idle, used) = resident(&th_cmd, |i| format!("echo{i}"));
        th.0.push(idle);
        th.1.push(used);
        let (idle, used) = resident(&hy_cmd, |i| format!("echo{i}-echo"));
        hy.0.push(idle);
        hy.1.push(used);
    }
    vec![
        HRow {
            measure: format!("resident memory (VmRSS), {PLUGINS} plugins loaded, idle"),
            toolhost: Cell::Memory(th.0),
            hyper: Cell::Memory(hy.0),
            goal: Some(1.0),
        },
        HRow {
            measure: format!(
                "resident memory (VmRSS), {PLUGINS} plugins, after {MEMORY_CALLS} calls spread over them"
            ),
            toolhost: Cell::Memory(th.1),
            hyper: Cell::Memory(hy.1),
            goal: Some(1.0),
        },
    ]
}

/// Calls that should be served after a runaway: how many were, and their
/// round trips.
#[derive(Default)]
struct Served {
    tried: usize,
    times: Vec<Duration>,
}

impl Served {
    fn try_call(&mut self, server: &Server, tool: &str, arguments: Value) {
        self.tried += 1;
        let answer = server.call(
            "tools/call",
            json!({"name": tool, "arguments": arguments}),
            WAIT,
        );
        if let Some((sent, (at, reply))) = answer
            && succeeded(&reply)
        {
            self.times.push(at - sent);
        }
    }

    fn cell(self) -> Cell {
        let served = self.times.len();
        if served == 0 {
            return Cell::Text(format!(
                "not served: 0 of {} within {} s",
                self.tried,
                WAIT.as_secs()
            ));
        }
        let median = Samples::new(self.times).median();
        Cell::Text(format!(
            "served: {served} of {} (median {})",
            self.tried,
            show(median)
        ))
    }
}

fn runaway(setup: &Setup, sizes: &Sizes) -> Vec<HRow> {
    let toolhost = Server::start(&setup.toolhost("toolhost-runaway.toml"));
    let hyper = Server::start(&setup.hyper("hyper-runaway.json", false));
    toolhost.initialize();
    hyper.initialize();
    for _ in 0..20 {
        toolhost.echo("echo");
        hyper.echo("echo-echo");
        hyper.echo("runaway-echo");
    }
    let (mut th_late, mut hy_late) = (Vec::new(), Vec::new());
    let (mut th_same, mut th_other) = (Served::default(), Served::default());
    let (mut hy_same, mut hy_other) = (Served::default(), Served::default());
    let mut hy_unanswered = 0;
    for _ in 0..sizes.runaways {
        // toolhost: the plugin's own deadline (`timeout_ms`).
        let (_, sent, rx) =
            toolhost.request("tools/call", json!({"name": "spin", "arguments": {}}));
        let (at, answer) = rx
            .recv_timeout(WAIT)
            .expect("toolhost ends the runaway at its deadline");
        assert!(!succeeded(&answer), "spin answered {answer}");
        th_late.push(at.saturating_duration_since(sent + DEADLINE));
        th_same.try_call(&toolhost, "nap", json!({"ms": 0}));
        th_other.try_call(&toolhost, "echo", json!({"text": TEXT}));

        // hyper-mcp has no deadline of its own: the client cancels at the
        // deadline (`notifications/cancelled`, as rmcp's client does when a
        // request times out) and waits for the answer.
        let (id, sent, rx) = hyper.request(
            "tools/call",
            json!({"name": "runaway-spin", "arguments": {}}),
        );
        let deadline = sent + DEADLINE;
        std::thread::sleep(deadline.saturating_duration_since(Instant::now()));
        hyper.notify(
            "notifications/cancelled",
            json!({"requestId": id, "reason": "deadline"}),
        );
        match rx.recv_timeout(WAIT) {
            Ok((at, _)) => hy_late.push(at.saturating_duration_since(deadline)),
            Err(_) => hy_unanswered += 1,
        }
        hy_same.try_call(&hyper, "runaway-echo", json!({"text": TEXT}));
        hy_other.try_call(&hyper, "echo-echo", json!({"text": TEXT}));
        if hy_unanswered > 0 || hy_same.times.len() < hy_same.tried {
            // Stuck: the rounds after would measure the waits.
            break;
        }
    }
    drop(hyper);
    let hy_late = if hy_late.is_empty() {
        Cell::Text(format!(
            "no answer within {} s of the cancellation",
            WAIT.as_secs()
        ))
    } else {
        Cell::Time(Samples::new(hy_late))
    };
    let uncancelled = uncancelled(setup);
    let ms = DEADLINE.as_millis();
    vec![
        HRow {
            measure: format!(
                "runaway (a guest loop), {ms} ms deadline: from the deadline to the error at the client \
                 (toolhost: the plugin's `timeout_ms`; hyper-mcp has no per-call timeout: the client \
                 sends `notifications/cancelled` at {ms} ms)"
            ),
            toolhost: Cell::Time(Samples::new(th_late)),
            hyper: hy_late,
            goal: None,
        },
        HRow {
            measure: "after it, the next call to the same plugin (toolhost: `runaway`'s `nap`, 0 ms; hyper-mcp: the runaway plugin's echo)".into(),
            toolhost: th_same.cell(),
            hyper: hy_same.cell(),
            goal: None,
        },
        HRow {
            measure: "after it, a call to another plugin's echo".into(),
            toolhost: th_other.cell(),
            hyper: hy_other.cell(),
            goal: None,
        },
        HRow {
            measure: format!(
                "runaway whose client does not cancel (watched {} s, then a call to another plugin, one to the same plugin, and `tools/list`)",
                WATCH.as_secs()
            ),
            toolhost: Cell::Text("ended at its deadline, as above".into()),
            hyper: Cell::Text(uncancelled),
            goal: None,
        },
    ]
}

/// hyper-mcp with a runaway nobody cancels: what answers afterwards.
fn uncancelled(setup: &Setup) -> String {
    let hyper = Server::start(&setup.hyper("hyper-runaway.json", false));
    hyper.initialize();
    hyper.echo("runaway-echo");
    let (_, _, rx) = hyper.request(
        "tools/call",
        json!({"name": "runaway-spin", "arguments": {}}),
    );
    let spin = match rx.recv_timeout(WATCH) {
        Ok(_) => "the runaway was answered".to_owned(),
        Err(_) => format!("the runaway: no answer in {} s", WATCH.as_secs()),
    };
    let probe = |what: &str, method: &str, params: Value| match hyper.call(method, params, WATCH) {
        Some((sent, (at, answer))) if answer.get("result").is_some() => {
            format!("{what}: served in {}", show(at - sent))
        }
        Some(_) => format!("{what}: an error"),
        None => format!("{what}: no answer in {} s", WATCH.as_secs()),
    };
    let other = probe(
        "another plugin's echo",
        "tools/call",
        json!({"name": "echo-echo", "arguments": {"text": TEXT}}),
    );
    let same = probe(
        "the same plugin's echo",
        "tools/call",
        json!({"name": "runaway-echo", "arguments": {"text": TEXT}}),
    );
    let list = probe("`tools/list`", "tools/list", json!({}));
    format!("{spin}; {other}; {same}; {list}")
}

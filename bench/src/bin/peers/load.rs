//! Throughput under load: many MCP clients, each with its own session and
//! its own connection, calling `echo` over streamable HTTP back to back for
//! a set time, against `toolhost serve --http` and against rmcp's minimal
//! server, native and running the template plugin's echo in a fresh
//! instance per call on bare wasmtime (`rmcp_wasm_echo`), in alternating
//! rounds. Each round starts its server fresh, every client connects and
//! warms up before the clock starts, and a failed call is counted, not
//! fatal: what a server refuses under load is part of the result.
//!
//! The clients run in this process on the same two cores as the server, for
//! every server alike: the figures are of the pair, and their ratios are
//! what compare.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Barrier;

use crate::mcp;
use crate::stats::{Samples, show};

/// One server's run.
#[derive(Default)]
pub struct Run {
    /// Calls that succeeded within the measured time.
    calls: usize,
    /// Calls that failed (an error answer or a transport error).
    failed: usize,
    /// The measured time.
    elapsed: Duration,
    /// The round trip of every successful call.
    latencies: Vec<Duration>,
    /// The CPU time the server's process used in the measured time, all
    /// its threads, user and system.
    server_cpu: Duration,
}

impl Run {
    fn per_second(&self) -> f64 {
        self.calls as f64 / self.elapsed.as_secs_f64()
    }

    /// The server's CPU time per successful call: what decides the calls
    /// per second when the server and the clients share the cores, and
    /// what the server's own code controls.
    fn server_cpu_per_call(&self) -> Duration {
        self.server_cpu.div_f64(self.calls.max(1) as f64)
    }

    /// This run and `other`, as one.
    fn add(&mut self, other: Run) {
        self.calls += other.calls;
        self.failed += other.failed;
        self.elapsed += other.elapsed;
        self.latencies.extend(other.latencies);
        self.server_cpu += other.server_cpu;
    }
}

/// The CPU time process `pid` has used so far, all its threads (those
/// gone included), user and system, from `/proc/PID/stat`, in the kernel's
/// clock ticks (10 ms here: over a round of seconds at about one core,
/// a thousandth of it).
fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .unwrap_or_else(|e| panic!("the server (pid {pid}) exited during the measured time: {e}"));
    // The fields after the command's name, which is in parentheses and
    // may hold spaces: utime and stime are the 12th and 13th of them.
    let after = stat.rsplit_once(')').expect("a stat line").1;
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks: u64 =
        fields[11].parse::<u64>().expect("utime") + fields[12].parse::<u64>().expect("stime");
    let per_second = rustix::param::clock_ticks_per_second();
    Duration::from_secs_f64(ticks as f64 / per_second as f64)
}

/// A server's rounds, added up, and their percentiles.
struct Total {
    run: Run,
    latencies: Samples,
}

impl Total {
    fn new(mut run: Run) -> Self {
        let latencies = Samples::new(std::mem::take(&mut run.latencies));
        Self { run, latencies }
    }
}

/// `clients` sessions to the server `command` starts, calling for `time`
/// after a warm-up of `warmup`.
async fn run(command: &[String], clients: usize, warmup: Duration, time: Duration) -> Run {
    let server = mcp::Server::start(command);
    let mut sessions = Vec::with_capacity(clients);
    for _ in 0..clients {
        sessions.push(mcp::Session::connect_http(&server.url).await);
    }
    // Everyone starts together; the warm-up's calls are not kept, nor the
    // server's CPU time before the measured time starts.
    let barrier = Arc::new(Barrier::new(clients + 1));
    let pid = server.pid();
    let cpu = {
        let barrier = barrier.clone();
        tokio::spawn(async move {
            barrier.wait().await;
            let start = tokio::time::Instant::now();
            tokio::time::sleep_until(start + warmup).await;
            let before = cpu_time(pid);
            tokio::time::sleep_until(start + warmup + time).await;
            cpu_time(pid) - before
        })
    };
    let tasks: Vec<_> = sessions
        .into_iter()
        .map(|session| {
            let barrier = barrier.clone();
            tokio::spawn(async move {
                barrier.wait().await;
                let start = Instant::now();
                let (keep_from, end) = (start + warmup, start + warmup + time);
                let (mut kept, mut failed) = (Vec::new(), 0usize);
                loop {
                    let s = Instant::now();
                    if s >= end {
                        break;
                    }
                    let ok = session.try_call().await;
                    let done = Instant::now();
                    if s >= keep_from && done <= end {
                        if ok {
                            kept.push(done - s);
                        } else {
                            failed += 1;
                        }
                    }
                }
                session.close().await;
                (kept, failed)
            })
        })
        .collect();
    let (mut latencies, mut failed) = (Vec::new(), 0);
    for t in tasks {
        let (kept, f) = t.await.expect("a client");
        latencies.extend(kept);
        failed += f;
    }
    let server_cpu = cpu.await.expect("the server's CPU time was read");
    drop(server);
    Run {
        calls: latencies.len(),
        failed,
        elapsed: time,
        latencies,
        server_cpu,
    }
}

/// The three servers' totals of [`runs`].
pub struct Runs {
    toolhost: Total,
    rmcp: Total,
    /// rmcp's minimal server with the echo in a fresh wasmtime instance.
    rmcp_wasm: Total,
    rounds: usize,
}

/// toolhost, rmcp's native echo and its wasm echo, each for `time` in all,
/// in `rounds` alternating rounds (see [`alternating`]).
pub fn runs(
    rt: &tokio::runtime::Runtime,
    clients: usize,
    warmup: Duration,
    time: Duration,
    rounds: usize,
) -> Runs {
    let root = toolhost_bench::root();
    let http = ["--http", "127.0.0.1:0"];
    let commands = [
        mcp::toolhost_command(&root, &http),
        mcp::rmcp_command(&http),
        mcp::rmcp_wasm_command(&http),
    ];
    let mut totals = alternating(rt, &commands, clients, warmup, time, rounds).into_iter();
    let mut next = || totals.next().expect("three");
    Runs {
        toolhost: next(),
        rmcp: next(),
        rmcp_wasm: next(),
        rounds,
    }
}

/// The servers `commands` start, each for `time` in all, in `rounds`
/// alternating rounds (the order turning each round), so that the
/// machine's drift over the minutes of the run touches all of them alike:
/// each round starts the server fresh, connects the clients and warms up
/// for `warmup` before its share of `time` is measured. Their totals, in
/// the order given.
fn alternating(
    rt: &tokio::runtime::Runtime,
    commands: &[Vec<String>],
    clients: usize,
    warmup: Duration,
    time: Duration,
    rounds: usize,
) -> Vec<Total> {
    let share = time / rounds as u32;
    let mut totals: Vec<Run> = commands.iter().map(|_| Run::default()).collect();
    rt.block_on(async {
        for round in 0..rounds {
            for k in 0..commands.len() {
                let which = (round + k) % commands.len();
                let one = run(&commands[which], clients, warmup, share).await;
                // Progress, and the spread between rounds that the totals hide.
                eprintln!(
                    "  round {}/{rounds}, {}: {:.0} calls/s, server CPU {:.1} µs a call",
                    round + 1,
                    server_name(&commands[which]),
                    one.per_second(),
                    one.server_cpu_per_call().as_secs_f64() * 1e6,
                );
                totals[which].add(one);
            }
        }
    });
    totals.into_iter().map(Total::new).collect()
}

/// The program a server command runs, without its directory.
fn server_name(command: &[String]) -> std::borrow::Cow<'_, str> {
    let program = std::path::Path::new(command.first().map_or("", String::as_str));
    program
        .file_name()
        .unwrap_or(program.as_os_str())
        .to_string_lossy()
}

/// Two builds of `toolhost` (`a` and `b`, their commands) under the same
/// load in alternating rounds: b's calls per second over a's, and each
/// one's.
pub fn ab(
    rt: &tokio::runtime::Runtime,
    a: Vec<String>,
    b: Vec<String>,
    clients: usize,
    time: Duration,
    rounds: usize,
) -> String {
    let totals = alternating(rt, &[a, b], clients, Duration::from_secs(1), time, rounds);
    let (a, b) = (&totals[0], &totals[1]);
    format!(
        "load ({clients} clients, {} s each in {rounds} rounds): A {:.0}/s (p99 {}, server CPU {} a call), \
         B {:.0}/s (p99 {}, server CPU {} a call), B/A {:.3}, server CPU B/A {:.3}",
        time.as_secs(),
        a.run.per_second(),
        show(a.latencies.p99()),
        show(a.run.server_cpu_per_call()),
        b.run.per_second(),
        show(b.latencies.p99()),
        show(b.run.server_cpu_per_call()),
        b.run.per_second() / a.run.per_second(),
        cpu_ratio(b, a),
    )
}

/// `a`'s server CPU time per call over `b`'s.
fn cpu_ratio(a: &Total, b: &Total) -> f64 {
    a.run.server_cpu_per_call().as_secs_f64() / b.run.server_cpu_per_call().as_secs_f64()
}

/// The runs as a Markdown table, with the ratios and the goals: at least
/// 0.8× rmcp's calls per second, a p99 within 1.5× of its (the native
/// echo's); and the same ratios against the wasm echo's, for what toolhost
/// adds to the sandbox's floor.
pub fn table(clients: usize, runs: &Runs) -> String {
    let Runs {
        toolhost,
        rmcp,
        rmcp_wasm,
        rounds,
    } = runs;
    let mut out = String::from(
        "| server | clients | measured | calls | calls per second | p50 | p99 | failed | server CPU per call |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for (name, r) in [
        (
            "`toolhost serve --http` (the template plugin's echo, a fresh instance per call)",
            toolhost,
        ),
        (
            "rmcp 3.11 minimal server, native echo (`bench/src/bin/rmcp_echo.rs`)",
            rmcp,
        ),
        (
            "rmcp 3.11 minimal server, the template plugin's echo in a fresh instance per call \
             on bare wasmtime 48 (`rmcp_wasm_echo`)",
            rmcp_wasm,
        ),
    ] {
        let _ = writeln!(
            out,
            "| {name} | {clients} | {:.0} s in {rounds} rounds | {} | {:.0} | {} | {} | {} | {} |",
            r.run.elapsed.as_secs_f64(),
            r.run.calls,
            r.run.per_second(),
            show(r.latencies.median()),
            show(r.latencies.p99()),
            r.run.failed,
            show(r.run.server_cpu_per_call()),
        );
    }
    let ratios = |peer: &Total| {
        (
            toolhost.run.per_second() / peer.run.per_second(),
            toolhost.latencies.p99().as_secs_f64() / peer.latencies.p99().as_secs_f64(),
        )
    };
    let (throughput, p99) = ratios(rmcp);
    let (floor_throughput, floor_p99) = ratios(rmcp_wasm);
    let verdict = |met: bool, by: f64| {
        if met {
            "met".to_owned()
        } else {
            format!("missed by {:.0} %", by * 100.0)
        }
    };
    let _ = write!(
        out,
        "\ntoolhost / rmcp: calls per second **{throughput:.2}×** (goal ≥ 0.8 — {}), \
         p99 **{p99:.2}×** (goal ≤ 1.5 — {}).\n\
         \ntoolhost / rmcp with the echo in a fresh wasmtime instance: calls per second \
         **{floor_throughput:.2}×**, p99 **{floor_p99:.2}×**.\n\
         \nServer CPU per call: toolhost / rmcp **{:.2}×**, toolhost / rmcp with the echo in a \
         fresh wasmtime instance **{:.2}×**.\n",
        verdict(throughput >= 0.8, 1.0 - throughput / 0.8),
        verdict(p99 <= 1.5, p99 / 1.5 - 1.0),
        cpu_ratio(toolhost, rmcp),
        cpu_ratio(toolhost, rmcp_wasm),
    );
    out
}

//! The peer benchmark: the same echo tool through toolhost, bare wasmtime
//! 48 with toolhost's engine settings, and Extism 1.30 (the newest that
//! builds on Rust 1.95), in one process and one run; then loading, the
//! deadline overshoot, throughput with 1, 2 and 8 callers, and MCP round
//! trips against rmcp's minimal server; then toolhost beside hyper-mcp, an
//! MCP server of Extism plugins, over stdio (`hyper.rs`); then 64 MCP
//! clients calling over HTTP for a minute, against toolhost and rmcp's
//! minimal server (`load.rs`). Prints a table of medians, 99th percentiles
//! and the ratio toolhost/peer for each; `--write FILE` puts them into FILE
//! between the `peers`, the `hyper` and the `load` markers, with the date,
//! the machine's cores and the command, so the tables are regenerated,
//! never edited.
//!
//!     cargo run --release -p toolhost-bench --bin peers -- [--quick] [--write BENCHMARKS.md]
//!     cargo run --release -p toolhost-bench --bin peers -- --only echo,mcp
//!
//! `--only` runs some of the sections (echo, cpu, observe, fairness, loading,
//! deadlines, throughput, mcp, hyper, load), to measure one change; with
//! `--write` it may name the sections that have a table of their own
//! (hyper, load) and all or none of the main table's (the others), so the
//! file always holds whole tables: `--only
//! echo,cpu,observe,fairness,loading,deadlines,throughput,mcp --write
//! BENCHMARKS.md` regenerates the main table without hyper-mcp.
//!
//! `make bench` builds the plugins, `toolhost`, `rmcp_echo`, Extism's and
//! hyper-mcp's echo plugins, installs hyper-mcp, then runs this with
//! `--write BENCHMARKS.md`.

/// The allocator of the `toolhost` command, so that what runs in this
/// process (toolhost's pipeline, and the peers beside it alike) runs as
/// the command does.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod cpu;
mod fairness;
mod hyper;
mod load;
mod mcp;
mod observe;
mod stats;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use extism::{CompiledPlugin, Manifest, Plugin, PluginBuilder, Wasm};
use toolhost::sandbox::{CodeSource, PluginPolicy, Sandbox};
use toolhost::{Arguments, CallContext, ErrorKind, ToolHost};
use toolhost_bench::{bare, cache_dir, host_with, root, wasm};

use crate::stats::{Row, Samples};

const ARGS: &str = r#"{"text": "hello, sandbox"}"#;
const EXTISM_INPUT: &str = "hello, sandbox";
const BEGIN: &str = "<!-- peers:begin -->";
const END: &str = "<!-- peers:end -->";
const HYPER_BEGIN: &str = "<!-- hyper:begin -->";
const HYPER_END: &str = "<!-- hyper:end -->";
const LOAD_BEGIN: &str = "<!-- load:begin -->";
const LOAD_END: &str = "<!-- load:end -->";
/// The sections `--only` can name, in the order they run.
const SECTIONS: [&str; 10] = [
    "echo",
    "cpu",
    "observe",
    "fairness",
    "loading",
    "deadlines",
    "throughput",
    "mcp",
    "hyper",
    "load",
];
/// The sections whose table `--write` can replace alone.
const OWN_TABLES: [&str; 2] = ["hyper", "load"];

fn extism_wasm() -> Vec<u8> {
    let p = root().join("target/wasm32-unknown-unknown/release/extism_echo.wasm");
    std::fs::read(&p).unwrap_or_else(|e| {
        panic!(
            "{}: {e}: `make bench` builds it (bench/extism-echo)",
            p.display()
        )
    })
}

/// How many samples each kind of case takes.
struct Sizes {
    rounds: usize,
    per_round: usize,
    /// observe.rs: sets of hosts, each built anew and measured for
    /// `rounds` rounds.
    observe_sets: usize,
    loads: usize,
    compiles: usize,
    deadlines: usize,
    throughput_rounds: usize,
    throughput_calls: usize,
    mcp_calls: usize,
    /// hyper.rs: rounds of 8 concurrent callers, cold starts of each
    /// server, memory runs and runaways.
    hyper_bursts: usize,
    starts: usize,
    memory_runs: usize,
    runaways: usize,
    /// load.rs: concurrent clients, their warm-up and the measured time.
    load_clients: usize,
    /// Each round's warm-up, per server.
    load_warmup: Duration,
    /// Each server's measured time, over all rounds.
    load_time: Duration,
    load_rounds: usize,
}

impl Sizes {
    fn new(quick: bool) -> Self {
        let k = if quick { 10 } else { 1 };
        Self {
            rounds: 10,
            per_round: 2_000 / k,
            observe_sets: if quick { 1 } else { 8 },
            loads: 300 / k,
            compiles: if quick { 2 } else { 5 },
            deadlines: 40 / k.min(4),
            throughput_rounds: 15 / k.min(5),
            throughput_calls: 4_000 / k,
            mcp_calls: 2_000 / k,
            hyper_bursts: if quick { 2 } else { 10 },
            starts: if quick { 3 } else { 10 },
            memory_runs: if quick { 1 } else { 3 },
            runaways: if quick { 3 } else { 10 },
            load_clients: 64,
            load_warmup: Duration::from_secs(if quick { 1 } else { 2 }),
            load_time: Duration::from_secs(if quick { 6 } else { 60 }),
            load_rounds: if quick { 2 } else { 6 },
        }
    }
}

/// What the command line may hold, printed by `--help` and with an
/// argument it does not know.
const USAGE: &str = "\
usage: peers [--quick] [--only SECTION,...] [--write FILE]
       peers --ab TOOLHOST_A TOOLHOST_B [--quick]
       peers --profile-echo toolhost|bare|load|observed|metered|unobserved
       peers --profile-mcp toolhost|rmcp|rmcp-wasm
sections: echo, cpu, observe, fairness, loading, deadlines, throughput, mcp, hyper, load";

/// Each flag `peers` knows and how many values follow it.
const FLAGS: &[(&str, usize)] = &[
    ("--quick", 0),
    ("--write", 1),
    ("--only", 1),
    ("--ab", 2),
    ("--profile-echo", 1),
    ("--profile-mcp", 1),
];

/// Checks the command line before anything runs (a benchmark takes
/// minutes): `--help` prints the usage; an argument it does not know, or
/// a flag without its values, is named and ends the program.
fn check_arguments(args: &[String]) {
    let mut rest = args.iter().skip(1);
    while let Some(arg) = rest.next() {
        if arg == "--help" || arg == "-h" {
            println!("{USAGE}");
            std::process::exit(0);
        }
        let Some(&(_, values)) = FLAGS.iter().find(|(flag, _)| flag == arg) else {
            eprintln!("peers: unknown argument `{arg}`\n{USAGE}");
            std::process::exit(2);
        };
        for _ in 0..values {
            if rest.next().is_none_or(|v| v.starts_with("--")) {
                eprintln!("peers: `{arg}` needs {values} value(s)\n{USAGE}");
                std::process::exit(2);
            }
        }
    }
}

/// Ends the program on a value it does not know, naming it, with the usage.
fn refuse(why: &str) -> ! {
    eprintln!("peers: {why}\n{USAGE}");
    std::process::exit(2);
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    check_arguments(&args);
    let quick = args.iter().any(|a| a == "--quick");
    let write = args
        .iter()
        .position(|a| a == "--write")
        .and_then(|i| args.get(i + 1))
        .map(PathBuf::from);
    let only: Option<Vec<String>> = args
        .iter()
        .position(|a| a == "--only")
        .and_then(|i| args.get(i + 1))
        .map(|v| v.split(',').map(str::to_owned).collect());
    // Whether the sections run make the whole of the main table (all its
    // sections, `--only` or not).
    let whole_table = only.as_ref().is_none_or(|o| {
        SECTIONS
            .iter()
            .filter(|s| !OWN_TABLES.contains(s))
            .all(|s| o.iter().any(|named| named == s))
    });
    if let Some(only) = &only {
        if let Some(s) = only.iter().find(|s| !SECTIONS.contains(&s.as_str())) {
            refuse(&format!("--only {s}: the sections are {SECTIONS:?}"));
        }
        if write.is_some() && !whole_table && !only.iter().all(|s| OWN_TABLES.contains(&s.as_str()))
        {
            refuse(&format!(
                "--only runs part of the table; --write needs all of it \
                 (or only sections with a table of their own: {OWN_TABLES:?})"
            ));
        }
    }
    let run = |section: &str| only.as_ref().is_none_or(|o| o.iter().any(|s| s == section));
    let sizes = Sizes::new(quick);
    if let Some(i) = args.iter().position(|a| a == "--ab") {
        // `check_arguments` made sure both values are there.
        let (a, b) = (&args[i + 1], &args[i + 2]);
        for binary in [a, b] {
            if !std::path::Path::new(binary).is_file() {
                refuse(&format!(
                    "--ab: `{binary}` is not a file (a `toolhost` binary)"
                ));
            }
        }
        ab_mcp(a, b, &sizes);
        return;
    }
    if let Some(which) = args
        .iter()
        .position(|a| a == "--profile-mcp")
        .and_then(|i| args.get(i + 1))
    {
        profile_mcp(which);
        return;
    }
    if let Some(which) = args
        .iter()
        .position(|a| a == "--profile-echo")
        .and_then(|i| args.get(i + 1))
    {
        profile_echo(which);
        return;
    }
    let (rt, local) = runtimes(2);

    let mut rows = Vec::new();
    if run("echo") {
        eprintln!("peers: echo calls");
        rows.extend(echo(&local, &sizes));
    }
    if run("cpu") {
        eprintln!("peers: CPU accounting");
        rows.extend(cpu::rows(&local, &sizes));
    }
    if run("observe") {
        eprintln!("peers: metrics and traces");
        rows.extend(observe::rows(&rt, &local, &sizes));
    }
    if run("fairness") {
        eprintln!("peers: a polite tenant beside a spinning one");
        rows.extend(fairness::rows(&rt, &sizes));
    }
    if run("loading") {
        eprintln!("peers: loading");
        rows.extend(loading(&rt, &local, &sizes));
    }
    if run("deadlines") {
        eprintln!("peers: deadlines");
        rows.extend(deadlines(&rt, &sizes));
    }
    if run("throughput") {
        eprintln!("peers: throughput");
        rows.extend(throughput(&rt, &sizes));
    }
    if run("mcp") {
        eprintln!("peers: MCP");
        rows.extend(mcp_rows(&rt, &sizes));
    }

    let table = stats::table(&rows);
    if !rows.is_empty() {
        println!("{table}");
    }
    let hyper_table = run("hyper").then(|| {
        eprintln!("peers: hyper-mcp {}", hyper::VERSION);
        let t = hyper::table(&hyper::rows(&sizes));
        println!("{t}");
        t
    });
    let load_table = run("load").then(|| {
        eprintln!(
            "peers: {} MCP clients over HTTP, {} s each for toolhost, rmcp native and rmcp with wasm, in {} alternating rounds",
            sizes.load_clients,
            sizes.load_time.as_secs(),
            sizes.load_rounds
        );
        let runs = load::runs(
            &rt,
            sizes.load_clients,
            sizes.load_warmup,
            sizes.load_time,
            sizes.load_rounds,
        );
        let t = load::table(sizes.load_clients, &runs);
        println!("{t}");
        t
    });
    if let Some(path) = write {
        if whole_table {
            write_into(
                &path,
                (BEGIN, END),
                &table,
                "medians and 99th percentiles of every sample, the ratio of medians",
                &args,
            );
        }
        if let Some(t) = hyper_table {
            write_into(
                &path,
                (HYPER_BEGIN, HYPER_END),
                &t,
                "medians and 99th percentiles of every sample over stdio, memory the median of the \
                 runs; the ratio of medians",
                &args,
            );
        }
        if let Some(t) = load_table {
            write_into(
                &path,
                (LOAD_BEGIN, LOAD_END),
                &t,
                "calls counted over the measured time after a warm-up, percentiles of every \
                 successful call's round trip",
                &args,
            );
        }
    }
}

/// A multi-threaded runtime of `workers` workers, and a current-thread
/// one for the calls measured.
fn runtimes(workers: usize) -> (tokio::runtime::Runtime, tokio::runtime::Runtime) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .expect("a runtime");
    let local = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    (rt, local)
}

fn extism_compiled(timeout: Option<Duration>) -> CompiledPlugin {
    let mut manifest = Manifest::new([Wasm::data(extism_wasm())]);
    if let Some(t) = timeout {
        manifest = manifest.with_timeout(t);
    }
    PluginBuilder::new(manifest)
        .with_wasi(false)
        .with_cache_disabled()
        .compile()
        .expect("Extism compiles its echo")
}

/// The echo call, fresh instance and reused, interleaved round by round so
/// that the machine's drift touches every case alike.
fn echo(local: &tokio::runtime::Runtime, sizes: &Sizes) -> Vec<Row> {
    let sandbox = Sandbox::new(Some(cache_dir())).expect("a sandbox");
    let host = local.block_on(host_with(&sandbox, "template", PluginPolicy::default()));
    let args = Arguments::parse(ARGS).expect("JSON");
    let bare = bare::Bare::new(&bare::engine(), &wasm("template"));
    let compiled = extism_compiled(None);
    let mut extism_reused = Plugin::new_from_compiled(&compiled).expect("an instance");
    let (mut bare_store, bare_plugin) = local.block_on(bare.instance());

    let n = sizes.per_round;
    let mut t = [Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new()];
    for round in 0..=sizes.rounds {
        // Round 0 warms everything up and is not kept.
        let keep = round > 0;
        local.block_on(async {
            for _ in 0..n {
                let s = Instant::now();
                host.invoke_tool(CallContext::new(), "echo", args.clone())
                    .await
                    .expect("echo");
                if keep {
                    t[0].push(s.elapsed());
                }
            }
            for _ in 0..n {
                let s = Instant::now();
                let (mut store, plugin) = bare.instance().await;
                bare::echo(&mut store, &plugin, ARGS).await;
                drop(store);
                if keep {
                    t[1].push(s.elapsed());
                }
            }
            for _ in 0..n {
                let s = Instant::now();
                bare::echo(&mut bare_store, &bare_plugin, ARGS).await;
                if keep {
                    t[3].push(s.elapsed());
                }
            }
        });
        for _ in 0..n {
            let s = Instant::now();
            let mut p = Plugin::new_from_compiled(&compiled).expect("an instance");
            let out: &str = p.call("echo", EXTISM_INPUT).expect("echo");
            assert_eq!(out.len(), EXTISM_INPUT.len());
            drop(p);
            if keep {
                t[2].push(s.elapsed());
            }
        }
        for _ in 0..n {
            let s = Instant::now();
            let out: &str = extism_reused.call("echo", EXTISM_INPUT).expect("echo");
            assert_eq!(out.len(), EXTISM_INPUT.len());
            if keep {
                t[4].push(s.elapsed());
            }
        }
    }
    let [
        toolhost,
        bare_fresh,
        extism_fresh,
        bare_reused,
        extism_reused,
    ] = t.map(Samples::new);
    vec![
        Row {
            measure: "echo call, fresh instance per call".into(),
            toolhost: toolhost.clone_samples(),
            peer: "bare wasmtime 48, fresh instance (toolhost's engine settings)".into(),
            peer_samples: Some(bare_fresh),
            goal: Some(1.05),
            comparable: true,
        },
        Row {
            measure: "echo call, fresh instance per call".into(),
            toolhost: toolhost.clone_samples(),
            peer: "Extism 1.30, fresh instance (`Plugin::new_from_compiled`)".into(),
            peer_samples: Some(extism_fresh),
            goal: None,
            comparable: true,
        },
        Row {
            measure: "echo call: toolhost fresh vs peer reused instance".into(),
            toolhost: toolhost.clone_samples(),
            peer: "Extism 1.30, one instance reused".into(),
            peer_samples: Some(extism_reused),
            goal: Some(1.0),
            comparable: true,
        },
        Row {
            measure: "echo call: toolhost fresh vs peer reused instance".into(),
            toolhost,
            peer: "bare wasmtime 48, one instance reused".into(),
            peer_samples: Some(bare_reused),
            goal: None,
            comparable: true,
        },
    ]
}

/// `n` echo calls on `host`, one after another.
async fn echo_calls(host: &ToolHost, n: usize) {
    let args = Arguments::parse(ARGS).expect("JSON");
    for _ in 0..n {
        host.invoke_tool(CallContext::new(), "echo", args.clone())
            .await
            .expect("echo");
    }
}

/// `--profile-echo toolhost|bare`: only that side's fresh-instance echo,
/// 20 000 times or `$PEERS_CALLS` (`load`: 500 loads of calc from the
/// cache; `observed`: toolhost's with metrics and traces on; `metered`: metrics alone;
/// `unobserved`: the same host with both off), for a
/// profiler to attribute (`perf record -e cpu-clock`; valgrind cannot map
/// the sandbox's instance pool).
fn profile_echo(which: &str) {
    let local = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let n = calls_to_profile();
    match which {
        "toolhost" => {
            let sandbox = Sandbox::new(Some(cache_dir())).expect("a sandbox");
            let host = local.block_on(host_with(&sandbox, "template", PluginPolicy::default()));
            local.block_on(echo_calls(&host, n));
        }
        "bare" => {
            let bare = bare::Bare::new(&bare::engine(), &wasm("template"));
            local.block_on(async {
                for _ in 0..n {
                    let (mut store, plugin) = bare.instance().await;
                    bare::echo(&mut store, &plugin, ARGS).await;
                }
            });
        }
        "load" => {
            let sandbox = Sandbox::new(Some(cache_dir())).expect("a sandbox");
            for _ in 0..500 {
                local
                    .block_on(sandbox.plugin_file("calc", wasm("calc")).load())
                    .expect("loads");
            }
        }
        "observed" => observe::profile(n, true, true),
        "metered" => observe::profile(n, true, false),
        "unobserved" => observe::profile(n, false, false),
        other => refuse(&format!(
            "--profile-echo takes toolhost, bare, load, observed, metered or unobserved, not `{other}`"
        )),
    }
}

/// How many calls a profiling mode makes: `$PEERS_CALLS`, or 20 000.
fn calls_to_profile() -> usize {
    match std::env::var("PEERS_CALLS") {
        Err(_) => 20_000,
        Ok(v) => v.parse().unwrap_or_else(|_| {
            refuse(&format!("PEERS_CALLS must be a number of calls, not `{v}`"))
        }),
    }
}

/// `--profile-mcp toolhost|rmcp|rmcp-wasm`: only that server over streamable HTTP,
/// 20 000 calls or `$PEERS_CALLS`, from rmcp's client. The server's pid
/// is printed first, for `perf record -p PID`.
fn profile_mcp(which: &str) {
    let root = root();
    let http = ["--http", "127.0.0.1:0"];
    let command = match which {
        "toolhost" => mcp::toolhost_command(&root, &http),
        "rmcp" => mcp::rmcp_command(&http),
        "rmcp-wasm" => mcp::rmcp_wasm_command(&http),
        other => refuse(&format!(
            "--profile-mcp takes toolhost, rmcp or rmcp-wasm, not `{other}`"
        )),
    };
    let n = calls_to_profile();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    rt.block_on(async {
        let session = mcp::Session::http(&command).await;
        eprintln!(
            "peers: server pid {}",
            session.server_pid().expect("an HTTP server")
        );
        let mut samples = Vec::new();
        session.calls(0, n, &mut samples).await;
        session.close().await;
        let samples = Samples::new(samples);
        eprintln!(
            "peers: median {}, p99 {}",
            stats::show(samples.median()),
            stats::show(samples.p99())
        );
    });
}

/// `--ab A B`: two builds of `toolhost` serving the same echo, over stdio
/// and over streamable HTTP, in alternating rounds from one client, then
/// under the load of "Throughput under load" (a third of its time each):
/// what one change gains, without the drift between two runs.
fn ab_mcp(a: &str, b: &str, sizes: &Sizes) {
    let root = root();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    rt.block_on(async {
        for (transport, extra) in [("stdio", &[][..]), ("HTTP", &["--http", "127.0.0.1:0"][..])] {
            let sessions = vec![
                mcp::Session::start(&mcp::toolhost_command_of(a, &root, extra)).await,
                mcp::Session::start(&mcp::toolhost_command_of(b, &root, extra)).await,
            ];
            let samples = mcp::alternating(sessions, 20, sizes.mcp_calls * 2).await;
            let (ta, tb) = (&samples[0], &samples[1]);
            println!(
                "{transport}: A {} (p99 {}), B {} (p99 {}), B/A {:.3}",
                stats::show(ta.median()),
                stats::show(ta.p99()),
                stats::show(tb.median()),
                stats::show(tb.p99()),
                tb.median().as_secs_f64() / ta.median().as_secs_f64()
            );
        }
    });
    let http = ["--http", "127.0.0.1:0"];
    println!(
        "{}",
        load::ab(
            &rt,
            mcp::toolhost_command_of(a, &root, &http),
            mcp::toolhost_command_of(b, &root, &http),
            sizes.load_clients,
            sizes.load_time / 3,
            sizes.load_rounds,
        )
    );
}

/// Loading a plugin whose compiled code is cached, and compiling one cold.
fn loading(
    rt: &tokio::runtime::Runtime,
    local: &tokio::runtime::Runtime,
    sizes: &Sizes,
) -> Vec<Row> {
    let sandbox = Sandbox::new(Some(cache_dir())).expect("a sandbox");
    let calc = wasm("calc");
    rt.block_on(sandbox.plugin_file("calc", &calc).load())
        .expect("warms the cache");
    let engine = bare::engine();
    let serialized = root().join("target/bench-code-cache/peers-calc.cwasm");
    let component = wasmtime::component::Component::from_file(&engine, &calc).expect("compiles");
    std::fs::write(&serialized, component.serialize().expect("serializes")).expect("writes");
    let linker = bare::linker(&engine);
    // The floor the cache is held to: its entry read into memory, its MAC
    // checked (a cache entry is trusted only once authenticated, rule C5),
    // deserialized from that buffer; then linked and its tools listed.
    let key = *blake3::hash(b"the benchmark's cache key").as_bytes();
    let tag = blake3::keyed_hash(&key, &std::fs::read(&serialized).expect("reads"));
    let link_and_list = |component: &wasmtime::component::Component| {
        let pre = linker.instantiate_pre(component).expect("links");
        let listed = local.block_on(async {
            let mut store = wasmtime::Store::new(&engine, bare_state());
            store.set_epoch_deadline(u64::MAX / 2);
            let instance = pre
                .instantiate_async(&mut store)
                .await
                .expect("instantiates");
            let plugin = bare::ToolPlugin::new(&mut store, &instance).expect("exports");
            bare::list_tools(&mut store, &plugin).await
        });
        assert_eq!(listed, 2);
    };

    let (mut th, mut bare_load, mut verified_load) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..sizes.loads + 20 {
        let s = Instant::now();
        let p = rt
            .block_on(sandbox.plugin_file("calc", &calc).load())
            .expect("loads");
        // Timed up to the loaded plugin, not its unloading (the code's
        // unmapping, the sealed copy's release): the bare loads below are
        // timed before their components are dropped too.
        let elapsed = s.elapsed();
        assert_eq!(p.code_source(), CodeSource::Cache);
        drop(p);
        if i >= 20 {
            th.push(elapsed);
        }
        let s = Instant::now();
        // SAFETY: the file is the serialization just written by this
        // process, of this engine's compilation.
        #[allow(unsafe_code)]
        let component =
            unsafe { wasmtime::component::Component::deserialize_file(&engine, &serialized) }
                .expect("deserializes");
        link_and_list(&component);
        if i >= 20 {
            bare_load.push(s.elapsed());
        }
        let s = Instant::now();
        let entry = std::fs::read(&serialized).expect("reads");
        assert!(
            blake3::keyed_hash(&key, &entry) == tag,
            "the entry is the one written"
        );
        // SAFETY: as above, and the bytes are those whose MAC was checked.
        #[allow(unsafe_code)]
        let component = unsafe { wasmtime::component::Component::deserialize(&engine, &entry) }
            .expect("deserializes");
        link_and_list(&component);
        if i >= 20 {
            verified_load.push(s.elapsed());
        }
    }

    let (mut th_cold, mut bare_cold) = (Vec::new(), Vec::new());
    let cold = Sandbox::new(None).expect("a sandbox without a cache");
    let bytes = std::fs::read(&calc).expect("reads");
    for i in 0..sizes.compiles {
        let s = Instant::now();
        let p = rt
            .block_on(cold.plugin_file(format!("calc{i}"), &calc).load())
            .expect("compiles");
        // As above: not its unloading.
        th_cold.push(s.elapsed());
        assert_eq!(p.code_source(), CodeSource::Compiled);
        drop(p);
        let s = Instant::now();
        let c = wasmtime::component::Component::new(&engine, &bytes).expect("compiles");
        linker.instantiate_pre(&c).expect("links");
        bare_cold.push(s.elapsed());
    }
    let extism_cold: Vec<Duration> = (0..sizes.compiles)
        .map(|_| {
            let s = Instant::now();
            extism_compiled(None);
            s.elapsed()
        })
        .collect();
    let th_cold = Samples::new(th_cold);
    let th = Samples::new(th);
    vec![
        Row {
            measure: "load from the compiled-code cache (calc), list its tools".into(),
            toolhost: th.clone_samples(),
            peer: "bare wasmtime 48, the floor: read the entry, check its BLAKE3 MAC, `deserialize` that buffer, link, `list-tools` in a fresh instance"
                .into(),
            peer_samples: Some(Samples::new(verified_load)),
            goal: Some(2.0),
            comparable: true,
        },
        Row {
            measure: "load from the compiled-code cache (calc), list its tools".into(),
            toolhost: th,
            peer: "bare wasmtime 48, unauthenticated: `deserialize_file` (mmap), link, `list-tools` in a fresh instance"
                .into(),
            peer_samples: Some(Samples::new(bare_load)),
            goal: None,
            comparable: true,
        },
        Row {
            measure: "cold compile and link (calc)".into(),
            toolhost: th_cold.clone_samples(),
            peer: "bare wasmtime 48: `Component::new`, link".into(),
            peer_samples: Some(Samples::new(bare_cold)),
            goal: None,
            comparable: true,
        },
        Row {
            measure: "cold compile (each its own echo: not the same code)".into(),
            toolhost: th_cold,
            peer: "Extism 1.30: compile its echo module (74 KB) and kernel".into(),
            peer_samples: Some(Samples::new(extism_cold)),
            goal: None,
            comparable: false,
        },
    ]
}

fn bare_state() -> bare::State {
    bare::State::fresh()
}

/// How far past a 20 ms deadline each call returned.
fn deadlines(rt: &tokio::runtime::Runtime, sizes: &Sizes) -> Vec<Row> {
    let timeout = Duration::from_millis(20);
    let sandbox = Sandbox::new(Some(cache_dir())).expect("a sandbox");
    let policy = PluginPolicy {
        timeout: Duration::from_secs(30),
        ..PluginPolicy::default()
    };
    let mut toolhost = Vec::new();
    for (plugin, tool) in [("runaway", "spin"), ("sleeper", "sleep")] {
        let host = rt.block_on(host_with(&sandbox, plugin, policy.clone()));
        let mut v = Vec::new();
        for _ in 0..sizes.deadlines {
            let ctx = CallContext::new().with_timeout(timeout);
            let deadline = Instant::now() + timeout;
            let err = rt
                .block_on(host.invoke_tool(ctx, tool, Arguments::parse("{}").expect("JSON")))
                .unwrap_err();
            v.push(Instant::now().saturating_duration_since(deadline));
            assert_eq!(err.kind(), ErrorKind::Timeout);
        }
        toolhost.push(Samples::new(v));
    }
    let compiled = extism_compiled(Some(timeout));
    let mut extism = Vec::new();
    for _ in 0..sizes.deadlines {
        let mut p = Plugin::new_from_compiled(&compiled).expect("an instance");
        let deadline = Instant::now() + timeout;
        let err = p.call::<&str, &str>("spin", "").unwrap_err();
        extism.push(Instant::now().saturating_duration_since(deadline));
        assert_eq!(err.root_cause().to_string(), "timeout");
    }
    let bare_epochs = Samples::new(toolhost_bench::bare_epoch_overshoot(
        sizes.deadlines as u64,
        timeout,
    ));
    let [spin, blocked] = [toolhost.remove(0), toolhost.remove(0)];
    vec![
        Row {
            measure: "deadline overshoot, guest spinning in wasm (20 ms deadline)".into(),
            toolhost: spin.clone_samples(),
            peer: "Extism 1.30 `with_timeout`".into(),
            peer_samples: Some(Samples::new(extism)),
            goal: None,
            comparable: true,
        },
        Row {
            measure: "deadline overshoot, guest spinning in wasm (20 ms deadline)".into(),
            toolhost: spin,
            peer: "bare wasmtime 48, a thread bumping the epoch every 1 ms".into(),
            peer_samples: Some(bare_epochs),
            goal: None,
            comparable: true,
        },
        Row {
            measure: "deadline overshoot, guest blocked in a host call (20 ms deadline)".into(),
            toolhost: blocked,
            peer: "(no peer stops a guest blocked in a host call)".into(),
            peer_samples: None,
            goal: None,
            comparable: false,
        },
    ]
}

/// Time per call with 1, 2 and 8 concurrent callers, a fresh instance per
/// call on both sides: toolhost's tasks on a 2-worker runtime, Extism's
/// threads.
fn throughput(rt: &tokio::runtime::Runtime, sizes: &Sizes) -> Vec<Row> {
    let sandbox = Sandbox::new(Some(cache_dir())).expect("a sandbox");
    let host = rt.block_on(host_with(
        &sandbox,
        "template",
        PluginPolicy {
            max_instances: 8,
            ..PluginPolicy::default()
        },
    ));
    let args = Arguments::parse(ARGS).expect("JSON");
    let compiled = extism_compiled(None);
    let calls = sizes.throughput_calls;
    let mut rows = Vec::new();
    for callers in [1usize, 2, 8] {
        let (mut th, mut ex) = (Vec::new(), Vec::new());
        for round in 0..=sizes.throughput_rounds {
            let start = Instant::now();
            rt.block_on(async {
                let tasks: Vec<_> = (0..callers)
                    .map(|_| {
                        let (host, args) = (host.clone(), args.clone());
                        tokio::spawn(async move {
                            for _ in 0..calls / callers {
                                host.invoke_tool(CallContext::new(), "echo", args.clone())
                                    .await
                                    .expect("echo");
                            }
                        })
                    })
                    .collect();
                for t in tasks {
                    t.await.expect("a caller");
                }
            });
            let toolhost_per_call = start.elapsed() / calls as u32;
            let start = Instant::now();
            std::thread::scope(|s| {
                for _ in 0..callers {
                    let compiled = &compiled;
                    s.spawn(move || {
                        for _ in 0..calls / callers {
                            let mut p = Plugin::new_from_compiled(compiled).expect("an instance");
                            let out: &str = p.call("echo", EXTISM_INPUT).expect("echo");
                            assert_eq!(out.len(), EXTISM_INPUT.len());
                        }
                    });
                }
            });
            let extism_per_call = start.elapsed() / calls as u32;
            if round > 0 {
                th.push(toolhost_per_call);
                ex.push(extism_per_call);
            }
        }
        rows.push(Row {
            measure: format!("time per call, {callers} concurrent caller(s), fresh instances"),
            toolhost: Samples::new(th),
            peer: "Extism 1.30, a fresh instance per call on each thread".into(),
            peer_samples: Some(Samples::new(ex)),
            goal: None,
            comparable: true,
        });
    }
    rows
}

/// MCP `tools/call` round trips from rmcp's client: toolhost, rmcp's
/// minimal server with a native echo, and the same with the template
/// plugin's echo in a fresh instance per call on bare wasmtime, in
/// alternating rounds.
fn mcp_rows(rt: &tokio::runtime::Runtime, sizes: &Sizes) -> Vec<Row> {
    let root = root();
    let n = sizes.mcp_calls;
    let three = |extra: &'static [&'static str]| {
        let root = &root;
        async move {
            let sessions = vec![
                mcp::Session::start(&mcp::toolhost_command(root, extra)).await,
                mcp::Session::start(&mcp::rmcp_command(extra)).await,
                mcp::Session::start(&mcp::rmcp_wasm_command(extra)).await,
            ];
            let mut samples = mcp::alternating(sessions, 10, n).await.into_iter();
            let mut next = || samples.next().expect("three");
            (next(), next(), next())
        }
    };
    let (th_stdio, rm_stdio, rw_stdio) = rt.block_on(three(&[]));
    let (th_http, rm_http, rw_http) = rt.block_on(three(&["--http", "127.0.0.1:0"]));
    let (th_json, rm_json, rw_json) = rt.block_on(three(&[
        "--http",
        "127.0.0.1:0",
        "--stateless",
        "--json-response",
    ]));
    const WASM_PEER: &str = "rmcp 3.11 minimal server, the template plugin's echo in a fresh \
         instance per call on bare wasmtime 48 (`rmcp_wasm_echo`: toolhost's engine settings, \
         nothing else)";
    vec![
        Row {
            measure: "MCP `tools/call` echo over stdio, rmcp client".into(),
            toolhost: th_stdio.clone_samples(),
            peer: "rmcp 3.11 minimal server, native echo (`bench/src/bin/rmcp_echo.rs`)".into(),
            peer_samples: Some(rm_stdio),
            goal: Some(1.2),
            comparable: true,
        },
        Row {
            measure: "MCP `tools/call` echo over streamable HTTP, rmcp client".into(),
            toolhost: th_http.clone_samples(),
            peer: "rmcp 3.11 minimal server, native echo".into(),
            peer_samples: Some(rm_http),
            goal: Some(1.2),
            comparable: true,
        },
        Row {
            measure: "MCP `tools/call` echo over stdio: toolhost against the sandbox's floor"
                .into(),
            toolhost: th_stdio,
            peer: WASM_PEER.into(),
            peer_samples: Some(rw_stdio),
            goal: None,
            comparable: true,
        },
        Row {
            measure: "MCP `tools/call` echo over streamable HTTP: toolhost against the sandbox's \
                 floor"
                .into(),
            toolhost: th_http,
            peer: WASM_PEER.into(),
            peer_samples: Some(rw_http),
            goal: None,
            comparable: true,
        },
        Row {
            measure: "MCP `tools/call` echo over stateless streamable HTTP, answers as JSON \
                 (`--stateless --json-response`), rmcp client"
                .into(),
            toolhost: th_json.clone_samples(),
            peer: "rmcp 3.11 minimal server, native echo, stateless with JSON answers".into(),
            peer_samples: Some(rm_json),
            goal: Some(1.2),
            comparable: true,
        },
        Row {
            measure: "MCP `tools/call` echo over stateless streamable HTTP, answers as JSON: \
                 toolhost against the sandbox's floor"
                .into(),
            toolhost: th_json,
            peer: "the floor above, stateless with JSON answers".into(),
            peer_samples: Some(rw_json),
            goal: None,
            comparable: true,
        },
    ]
}

/// Replaces what lies between the markers in `path` with the table, its
/// date, the machine's cores, the command and `what` the figures are.
fn write_into(
    path: &Path,
    (begin_mark, end_mark): (&str, &str),
    table: &str,
    what: &str,
    args: &[String],
) {
    let text = std::fs::read_to_string(path).expect("reads the file");
    let (Some(begin), Some(end)) = (text.find(begin_mark), text.find(end_mark)) else {
        panic!(
            "{} has no `{begin_mark}` … `{end_mark}` markers",
            path.display()
        );
    };
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let date = std::process::Command::new("date")
        .args(["-u", "+%Y-%m-%d %H:%M UTC"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    let command = format!(
        "cargo run --release -p toolhost-bench --bin peers --{}",
        args[1..]
            .iter()
            .map(|a| format!(" {a}"))
            .collect::<String>()
    );
    // `make bench` runs every section; a table written by a run of some
    // of them says only the command.
    let by = if args.iter().any(|a| a == "--only") {
        ""
    } else {
        " (run by `make bench`)"
    };
    let block = format!(
        "{begin_mark}\n_Generated {date} on {cores} cores by `{command}`{by}; \
         {what}._\n\n{table}{end_mark}"
    );
    let new = format!("{}{block}{}", &text[..begin], &text[end + end_mark.len()..]);
    std::fs::write(path, new).expect("writes the file");
    eprintln!("peers: the table is in {}", path.display());
}

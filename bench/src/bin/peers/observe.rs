//! What metrics and traces cost the echo call through the whole pipeline
//! (rules X1, X2): the same call with both off, with metrics and traces
//! on, with either alone and with traces sampled out, interleaved round
//! by round, over several sets of hosts built anew. Traces go
//! through the exporter `[tracing]` builds (batched on the SDK's thread,
//! OTLP/HTTP with protobuf) to a sink on 127.0.0.1 that answers every
//! request with 200, so sending them costs what it costs, on the same two
//! cores.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpListener;
use std::time::{Duration, Instant};

use toolhost::config::{Config, TraceSettings};
use toolhost::otlp::TraceExport;
use toolhost::sandbox::{PluginPolicy, Sandbox};
use toolhost::{Arguments, CallContext, Metrics, ToolHost, Traces};
use toolhost_bench::{cache_dir, load_into};

use crate::stats::{Row, Samples};
use crate::{ARGS, Sizes};

/// An OTLP/HTTP sink on 127.0.0.1: reads each request and answers 200,
/// on threads of its own, until the process ends. Its port.
fn sink() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a port");
    let port = listener.local_addr().expect("an address").port();
    std::thread::spawn(move || {
        for stream in listener.incoming().map_while(Result::ok) {
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream);
                loop {
                    let mut length = 0usize;
                    loop {
                        let mut line = String::new();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        let line = line.trim_end();
                        if line.is_empty() {
                            break;
                        }
                        if let Some((name, value)) = line.split_once(':')
                            && name.eq_ignore_ascii_case("content-length")
                        {
                            length = value.trim().parse().unwrap_or(0);
                        }
                    }
                    let mut body = vec![0; length];
                    if reader.read_exact(&mut body).is_err() {
                        return;
                    }
                    let answer = "HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\n\
                                  content-length: 0\r\n\r\n";
                    if reader.get_mut().write_all(answer.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    port
}

/// `[tracing]` exporting to the sink at `port`, sampling `ratio` of the
/// traces calls start.
fn settings(port: u16, ratio: f64) -> TraceSettings {
    let text =
        format!("[tracing]\nendpoint = \"http://127.0.0.1:{port}\"\nsampling_ratio = {ratio:?}\n");
    Config::parse(&text, std::path::Path::new("."))
        .expect("the table parses")
        .trace_settings()
        .expect("the table is good")
        .expect("tracing is on")
}

async fn host(sandbox: &Sandbox, metrics: Option<Metrics>, traces: Option<Traces>) -> ToolHost {
    let mut builder = ToolHost::builder().validate_arguments(true);
    if let Some(m) = metrics {
        builder = builder.metrics(m);
    }
    if let Some(t) = traces {
        builder = builder.traces(t);
    }
    let host = builder.build();
    load_into(&host, sandbox, "template", PluginPolicy::default()).await;
    host
}

/// `--profile-echo observed`: `n` echo calls on a host with metrics and
/// traces (every call sampled, exported to the sink), for a profiler that
/// tells threads apart (`perf record`, then `perf report --comm peers`), so
/// that the calls' own thread can be read apart from the finisher's
/// (`toolhost-spans`) and the exporter's. (valgrind cannot run it: it
/// cannot map the sandbox's instance pool.)
///
/// With `on` false, the same host with both off, made the same way: the
/// profile to subtract. With `traced` false, metrics alone.
pub fn profile(n: usize, on: bool, traced: bool) {
    let (rt, local) = crate::runtimes(1);
    let sandbox = Sandbox::new(Some(cache_dir())).expect("a sandbox");
    let port = sink();
    let export = rt
        .block_on(async { TraceExport::start(&settings(port, 1.0)) })
        .expect("the export starts");
    let host = if on {
        let traces = traced.then(|| export.traces());
        local.block_on(host(&sandbox, Some(Metrics::new()), traces))
    } else {
        local.block_on(host(&sandbox, None, None))
    };
    local.block_on(crate::echo_calls(&host, n));
    rt.block_on(export.shutdown(Duration::from_secs(30)));
}

/// The rows: metrics and traces on, and traces alone, each against the
/// same call with both off. `rt` sends the exports, `local` makes the
/// calls.
pub fn rows(
    rt: &tokio::runtime::Runtime,
    local: &tokio::runtime::Runtime,
    sizes: &Sizes,
) -> Vec<Row> {
    let sandbox = Sandbox::new(Some(cache_dir())).expect("a sandbox");
    // The exports are sent on the multi-threaded runtime, as `serve`'s
    // are; the calls run on the current thread, as the other rows' do.
    let port = sink();
    let export = rt
        .block_on(async { TraceExport::start(&settings(port, 1.0)) })
        .expect("the export starts");
    let unsampled = rt
        .block_on(async { TraceExport::start(&settings(port, 0.0)) })
        .expect("the export starts");
    let args = Arguments::parse(ARGS).expect("JSON");
    let n = sizes.per_round;
    let mut t: [Vec<Duration>; 5] = Default::default();
    // Each set builds its five hosts anew, so that where one host's
    // memory happened to land (which shifts a call by a percent or two
    // from one process to the next) is averaged over the sets rather than
    // taken as the cost of what it has on; within a set the order of the
    // hosts turns round by round, so none is always the first after a
    // change of host.
    for set in 0..sizes.observe_sets {
        let hosts = local.block_on(async {
            [
                host(&sandbox, None, None).await,
                host(&sandbox, Some(Metrics::new()), Some(export.traces())).await,
                host(&sandbox, None, Some(export.traces())).await,
                host(&sandbox, None, Some(unsampled.traces())).await,
                host(&sandbox, Some(Metrics::new()), None).await,
            ]
        });
        for round in 0..=sizes.rounds {
            // The first round of a set warms its hosts.
            let keep = round > 0;
            local.block_on(async {
                for k in 0..hosts.len() {
                    let i = (k + round + set) % hosts.len();
                    for _ in 0..n {
                        let s = Instant::now();
                        hosts[i]
                            .invoke_tool(CallContext::new(), "echo", args.clone())
                            .await
                            .expect("echo");
                        if keep {
                            t[i].push(s.elapsed());
                        }
                    }
                }
            });
        }
    }
    rt.block_on(export.shutdown(Duration::from_secs(5)));
    rt.block_on(unsampled.shutdown(Duration::from_secs(5)));
    let [off, both, traced, sampled_out, metered] = t.map(Samples::new);
    vec![
        Row {
            measure: "echo call with metrics and traces on (OTLP/HTTP), whole pipeline".into(),
            toolhost: both,
            peer: "toolhost with both off".into(),
            peer_samples: Some(off.clone_samples()),
            goal: Some(1.05),
            comparable: true,
        },
        Row {
            measure: "echo call with metrics on, whole pipeline".into(),
            toolhost: metered,
            peer: "toolhost with both off".into(),
            peer_samples: Some(off.clone_samples()),
            goal: Some(1.05),
            comparable: true,
        },
        Row {
            measure: "echo call with traces on (OTLP/HTTP), whole pipeline".into(),
            toolhost: traced,
            peer: "toolhost with both off".into(),
            peer_samples: Some(off.clone_samples()),
            goal: Some(1.05),
            comparable: true,
        },
        Row {
            measure: "echo call with traces on, sampled out (sampling_ratio = 0)".into(),
            toolhost: sampled_out,
            peer: "toolhost with both off".into(),
            peer_samples: Some(off),
            goal: Some(1.05),
            comparable: true,
        },
    ]
}

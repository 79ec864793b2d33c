//! A polite tenant's echo calls while another tenant spins a plugin on
//! the same host (rule A3): the spinner's calls each compute until their
//! deadline, several at once; its quota holds it to one call in flight.
//! The goal is the polite tenant's p99 within 2× of its p99 with nobody
//! spinning, on this 2-core machine.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use toolhost::quota::{QuotaLimits, Quotas};
use toolhost::sandbox::{PluginPolicy, Sandbox};
use toolhost::{Arguments, CallContext, ToolHost};
use toolhost_bench::{cache_dir, load_into};

use crate::stats::{Row, Samples};
use crate::{ARGS, Sizes};

async fn host(sandbox: &Sandbox, quota: bool) -> ToolHost {
    let mut builder = ToolHost::builder().validate_arguments(true);
    if quota {
        builder = builder.quotas(Arc::new(
            Quotas::new().tenant("spinner", QuotaLimits::NONE.in_flight(1)),
        ));
    }
    let host = builder.build();
    for (name, policy) in [
        ("template", PluginPolicy::default()),
        (
            "runaway",
            PluginPolicy {
                timeout: Duration::from_millis(200),
                ..PluginPolicy::default()
            },
        ),
    ] {
        load_into(&host, sandbox, name, policy).await;
    }
    host
}

/// The polite tenant's echo calls, one after another, on the runtime's
/// workers (as a server's requests run), not on the thread that waits.
fn polite(rt: &tokio::runtime::Runtime, host: &ToolHost, n: usize) -> Vec<Duration> {
    let host = host.clone();
    rt.block_on(rt.spawn(async move { polite_calls(&host, n).await }))
        .expect("the calls ran")
}

async fn polite_calls(host: &ToolHost, n: usize) -> Vec<Duration> {
    let args = Arguments::parse(ARGS).expect("JSON");
    let mut took = Vec::with_capacity(n);
    for _ in 0..n {
        let s = Instant::now();
        host.invoke_tool(
            CallContext::new().with_tenant("polite"),
            "echo",
            args.clone(),
        )
        .await
        .expect("echo");
        took.push(s.elapsed());
    }
    took
}

/// The polite tenant's calls alone, then beside four spinners.
fn measure(rt: &tokio::runtime::Runtime, host: &ToolHost, n: usize) -> (Samples, Samples) {
    // Warm up, then alone.
    polite(rt, host, n / 10);
    let alone = polite(rt, host, n);
    // Four spinners of the other tenant at once: with its quota one runs at
    // a time, the others are refused and try again at once.
    let stop = Arc::new(AtomicBool::new(false));
    let spinners: Vec<_> = (0..4)
        .map(|_| {
            let (host, stop) = (host.clone(), stop.clone());
            rt.spawn(async move {
                let args = Arguments::parse("{}").expect("JSON");
                while !stop.load(Ordering::Relaxed) {
                    let _ = host
                        .invoke_tool(
                            CallContext::new().with_tenant("spinner"),
                            "spin",
                            args.clone(),
                        )
                        .await;
                    tokio::task::yield_now().await;
                }
            })
        })
        .collect();
    rt.block_on(async { tokio::time::sleep(Duration::from_millis(300)).await });
    let beside = polite(rt, host, n);
    stop.store(true, Ordering::Relaxed);
    for s in spinners {
        let _ = rt.block_on(s);
    }
    (Samples::new(beside), Samples::new(alone))
}

pub fn rows(rt: &tokio::runtime::Runtime, sizes: &Sizes) -> Vec<Row> {
    let sandbox = Sandbox::new(Some(cache_dir())).expect("a sandbox");
    let n = sizes.per_round * 2;
    let (held, alone) = measure(rt, &rt.block_on(host(&sandbox, true)), n);
    let (free, alone_free) = measure(rt, &rt.block_on(host(&sandbox, false)), n);
    vec![
        Row {
            measure: "polite tenant's echo while another spins a plugin (its quota: 1 in flight)"
                .into(),
            toolhost: held,
            peer: "the same calls with nobody spinning".into(),
            peer_samples: Some(alone),
            goal: None,
            comparable: true,
        },
        Row {
            measure: "polite tenant's echo while another spins a plugin (no quota)".into(),
            toolhost: free,
            peer: "the same calls with nobody spinning".into(),
            peer_samples: Some(alone_free),
            goal: None,
            comparable: true,
        },
    ]
}

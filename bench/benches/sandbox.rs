//! The sandbox's costs: a wasm echo call through the whole pipeline with a
//! fresh instance per call, loading a plugin from the compiled-code cache,
//! how long after its deadline a plugin is stopped — spinning in wasm, or
//! asleep inside a host call — beside bare wasmtime's epoch interruption
//! driven the usual way (a thread that bumps the epoch every millisecond),
//! and throughput with one and two concurrent callers.

use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use toolhost::sandbox::{CodeSource, PluginPolicy, Sandbox};
use toolhost::{Arguments, CallContext, ErrorKind, ToolHost};
use toolhost_bench::{cache_dir, wasm};

async fn host(sandbox: &Sandbox, crate_name: &str, policy: PluginPolicy) -> ToolHost {
    toolhost_bench::host_with(sandbox, crate_name, policy).await
}

fn sandbox_benches(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let sandbox = Sandbox::new(Some(cache_dir())).unwrap();
    let echo = rt.block_on(host(&sandbox, "template", PluginPolicy::default()));
    let args = Arguments::parse(r#"{"text": "hello, sandbox"}"#).unwrap();

    // One call at a time, on a current-thread runtime (as the pipeline
    // benchmark), so the figure is the call's own latency.
    let local = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    c.bench_function("sandbox/echo_call_fresh_instance", |b| {
        b.to_async(&local).iter(|| {
            let (host, args) = (echo.clone(), args.clone());
            async move {
                host.invoke_tool(CallContext::new(), "echo", args)
                    .await
                    .unwrap()
            }
        })
    });

    // Warm the cache once, then measure loads that hit it.
    rt.block_on(sandbox.plugin_file("calc", wasm("calc")).load())
        .unwrap();
    c.bench_function("sandbox/load_from_cache", |b| {
        b.to_async(&rt).iter(|| {
            let sandbox = sandbox.clone();
            async move {
                let p = sandbox
                    .plugin_file("calc", wasm("calc"))
                    .load()
                    .await
                    .unwrap();
                assert_eq!(p.code_source(), CodeSource::Cache);
                p
            }
        })
    });

    // The time reported is how far past its deadline a plugin ran before
    // the call returned: one that spins in wasm, and one asleep in a host
    // call (where no epoch check can fire).
    let timeout = Duration::from_millis(20);
    let mut group = c.benchmark_group("sandbox");
    group.sample_size(20);
    for (plugin, tool, name) in [
        ("runaway", "spin", "runaway_stop_after_deadline"),
        ("sleeper", "sleep", "blocked_stop_after_deadline"),
    ] {
        let host = rt.block_on(self::host(
            &sandbox,
            plugin,
            PluginPolicy {
                timeout: Duration::from_secs(30),
                ..PluginPolicy::default()
            },
        ));
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let mut overshoot = Duration::ZERO;
                    for _ in 0..iters {
                        let ctx = CallContext::new().with_timeout(timeout);
                        let deadline = Instant::now() + timeout;
                        let err = host
                            .invoke_tool(ctx, tool, Arguments::parse("{}").unwrap())
                            .await
                            .unwrap_err();
                        overshoot += Instant::now().saturating_duration_since(deadline);
                        assert_eq!(err.kind(), ErrorKind::Timeout);
                    }
                    overshoot
                })
            })
        });
    }
    group.bench_function("bare_wasmtime_epoch_stop_after_deadline", |b| {
        b.iter_custom(|iters| {
            toolhost_bench::bare_epoch_overshoot(iters, Duration::from_millis(20))
                .into_iter()
                .sum()
        })
    });
    group.finish();

    // Throughput: `callers` tasks share `iters` calls; the time reported is
    // per call.
    let mut group = c.benchmark_group("sandbox/throughput");
    for callers in [1u64, 2] {
        group.bench_function(format!("{callers}_callers"), |b| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let start = Instant::now();
                    let tasks: Vec<_> = (0..callers)
                        .map(|i| {
                            let (host, args) = (echo.clone(), args.clone());
                            let n = iters / callers + u64::from(i < iters % callers);
                            tokio::spawn(async move {
                                for _ in 0..n {
                                    host.invoke_tool(CallContext::new(), "echo", args.clone())
                                        .await
                                        .unwrap();
                                }
                            })
                        })
                        .collect();
                    for t in tasks {
                        t.await.unwrap();
                    }
                    start.elapsed()
                })
            })
        });
    }
    group.finish();
}

criterion_group!(benches, sandbox_benches);
criterion_main!(benches);

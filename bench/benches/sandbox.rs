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

/// `(module (func (export "spin") (loop (br 0))))`, assembled by hand.
const SPIN_MODULE: &[u8] = &[
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // magic, version
    0x01, 0x04, 0x01, 0x60, 0x00, 0x00, // type: func [] -> []
    0x03, 0x02, 0x01, 0x00, // one function of type 0
    0x07, 0x08, 0x01, 0x04, b's', b'p', b'i', b'n', 0x00, 0x00, // export "spin"
    0x0a, 0x09, 0x01, 0x07, 0x00, 0x03, 0x40, 0x0c, 0x00, 0x0b, 0x0b, // loop br 0
];

/// Bare wasmtime, the way its documentation drives epochs: a thread bumps
/// the epoch every millisecond and the store's deadline is the timeout in
/// ticks. Returns how far past the deadline `iters` spinning calls ran in
/// all (a call stopped early counts as zero).
fn bare_wasmtime_overshoot(iters: u64) -> Duration {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let mut config = wasmtime::Config::new();
    config.epoch_interruption(true);
    let engine = wasmtime::Engine::new(&config).unwrap();
    let module = wasmtime::Module::new(&engine, SPIN_MODULE).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let ticker = {
        let (engine, stop) = (engine.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(1));
                engine.increment_epoch();
            }
        })
    };
    let timeout = Duration::from_millis(20);
    let mut overshoot = Duration::ZERO;
    for _ in 0..iters {
        let mut store = wasmtime::Store::new(&engine, ());
        store.set_epoch_deadline(timeout.as_millis() as u64);
        let instance = wasmtime::Instance::new(&mut store, &module, &[]).unwrap();
        let spin = instance
            .get_typed_func::<(), ()>(&mut store, "spin")
            .unwrap();
        let deadline = Instant::now() + timeout;
        assert!(spin.call(&mut store, ()).is_err());
        overshoot += Instant::now().saturating_duration_since(deadline);
    }
    stop.store(true, Ordering::Relaxed);
    ticker.join().unwrap();
    overshoot
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
    rt.block_on(sandbox.load("calc", &wasm("calc"), PluginPolicy::default(), None))
        .unwrap();
    c.bench_function("sandbox/load_from_cache", |b| {
        b.to_async(&rt).iter(|| {
            let sandbox = sandbox.clone();
            async move {
                let p = sandbox
                    .load("calc", &wasm("calc"), PluginPolicy::default(), None)
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
        b.iter_custom(bare_wasmtime_overshoot)
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

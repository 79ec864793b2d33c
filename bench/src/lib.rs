//! What the benchmarks share: the plugins' paths, the benchmarks' code
//! cache, and a host with one plugin loaded. The benchmarks live under
//! `benches/` (criterion) and `src/bin/peers/` (side by side with the
//! peers).

pub mod bare;
pub mod minimal_server;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use toolhost::ToolHost;
use toolhost::middleware::Timeout;
use toolhost::sandbox::{PluginPolicy, Sandbox};

/// The repository's root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The program `name` built beside the running one: `target/release/NAME`
/// for `make bench`, and the instrumented build's own servers when `make
/// pgo` runs the instrumented `peers` to train the build's profile.
pub fn built_beside(name: &str) -> PathBuf {
    let me = std::env::current_exe().expect("the running program's path");
    me.parent().expect("a directory").join(name)
}

/// Stops a server the benchmark started: SIGTERM first, so that it exits
/// as a user would stop it (and an instrumented build writes its profile),
/// then SIGKILL if it is still running after 10 s.
pub fn stop(child: &mut std::process::Child) {
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if !matches!(child.try_wait(), Ok(None)) {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// The component `make plugins` built from crate `name`.
pub fn wasm(name: &str) -> PathBuf {
    let p = root().join(format!("target/wasm32-wasip2/release/{name}.wasm"));
    assert!(p.exists(), "{} is missing: run `make plugins`", p.display());
    p
}

/// The benchmarks' compiled-code cache.
pub fn cache_dir() -> PathBuf {
    root().join("target/bench-code-cache")
}

/// A host as `toolhost call` builds one (argument validation, a timeout
/// middleware) with plugin `name` loaded from `sandbox` under `policy`.
pub async fn host_with(sandbox: &Sandbox, name: &str, policy: PluginPolicy) -> ToolHost {
    let host = ToolHost::builder()
        .validate_arguments(true)
        .middleware(Timeout::new(Duration::from_secs(30)))
        .build();
    load_into(&host, sandbox, name, policy).await;
    host
}

/// Loads plugin `name` (built by `make plugins`) from `sandbox` under
/// `policy` and registers it with `host`; panics if either fails, as a
/// benchmark cannot go on without it.
pub async fn load_into(host: &ToolHost, sandbox: &Sandbox, name: &str, policy: PluginPolicy) {
    let plugin = sandbox
        .plugin_file(name, wasm(name))
        .policy(policy)
        .load()
        .await
        .expect("the plugin loads");
    host.register_extension(plugin.into_extension())
        .await
        .expect("the plugin registers");
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
/// the epoch every millisecond and the store's deadline is `timeout` in
/// ticks. Returns, for each of `n` calls to a spinning module, how far past
/// its deadline it returned (a call stopped early counts as zero).
pub fn bare_epoch_overshoot(n: u64, timeout: Duration) -> Vec<Duration> {
    let mut config = wasmtime::Config::new();
    config.epoch_interruption(true);
    let engine = wasmtime::Engine::new(&config).expect("an engine");
    let module = wasmtime::Module::new(&engine, SPIN_MODULE).expect("compiles");
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
    let mut overshoots = Vec::new();
    for _ in 0..n {
        let mut store = wasmtime::Store::new(&engine, ());
        store.set_epoch_deadline(timeout.as_millis() as u64);
        let instance = wasmtime::Instance::new(&mut store, &module, &[]).expect("instantiates");
        let spin = instance
            .get_typed_func::<(), ()>(&mut store, "spin")
            .expect("spin");
        let deadline = Instant::now() + timeout;
        assert!(spin.call(&mut store, ()).is_err());
        overshoots.push(Instant::now().saturating_duration_since(deadline));
    }
    stop.store(true, Ordering::Relaxed);
    let _ = ticker.join();
    overshoots
}

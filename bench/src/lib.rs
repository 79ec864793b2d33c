//! What the benchmarks share: the plugins' paths, the benchmarks' code
//! cache, and a host with one plugin loaded. The benchmarks live under
//! `benches/` (criterion) and `src/bin/peers/` (side by side with the
//! peers).

use std::path::PathBuf;
use std::time::Duration;

use toolhost::ToolHost;
use toolhost::middleware::Timeout;
use toolhost::sandbox::{PluginPolicy, Sandbox};

/// The repository's root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
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
    let plugin = sandbox
        .load(name, &wasm(name), policy, None)
        .await
        .expect("the plugin loads");
    host.register_extension(plugin.into_extension())
        .await
        .expect("the plugin registers");
    host
}

//! `toolhost pull`.

use std::path::Path;

use toolhost::net::NetPolicy;
use toolhost::sandbox::Sandbox;
use toolhost::supply::{OciRef, PullOptions, Registry, Store};

use crate::Failure;
use crate::output::outln;

pub(crate) async fn run(
    reference: &str,
    config: &Path,
    insecure: bool,
    registry_hosts: &[String],
) -> Result<(), Failure> {
    let reference = OciRef::parse(reference)?;
    let hosts = NetPolicy::new(registry_hosts, &[] as &[&str])
        .map_err(|e| Failure(format!("--registry-host: {e}")))?;
    // The store of the configuration's cache directory, so that its runs
    // find what was pulled; without a configuration, the default one.
    let store = if config.exists() {
        crate::load_config(config)?.store()
    } else {
        Sandbox::default_cache_dir().map(|d| Store::new(d.join("store")))
    }
    .ok_or_else(|| {
        Failure(
            "there is no cache directory for the plugin store: set $HOME or [host] cache_dir"
                .into(),
        )
    })?;
    let options = PullOptions::default()
        .insecure(insecure)
        .registry_hosts(hosts);
    let resolved = Registry::new(options).pull(&reference, &store).await?;
    outln!("{reference}")?;
    outln!("  manifest {}", resolved.manifest)?;
    outln!("  wasm     {}", resolved.wasm)?;
    outln!("  stored in {}", store.dir().display())?;
    Ok(())
}

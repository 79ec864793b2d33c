//! `toolhost pull`.

use std::path::Path;

use toolhost::sandbox::Sandbox;
use toolhost::supply::{OciRef, PullOptions, Registry, Store};

use crate::Failure;
use crate::output::outln;

pub(crate) async fn run(reference: &str, config: &Path, insecure: bool) -> Result<(), Failure> {
    let reference = OciRef::parse(reference)?;
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
    let resolved = Registry::new(PullOptions::default().insecure(insecure))
        .pull(&reference, &store)
        .await?;
    outln!("{reference}")?;
    outln!("  manifest {}", resolved.manifest)?;
    outln!("  wasm     {}", resolved.wasm)?;
    outln!("  stored in {}", store.dir().display())?;
    Ok(())
}

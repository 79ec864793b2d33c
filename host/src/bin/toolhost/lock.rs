//! `toolhost lock`.

use std::path::Path;

use toolhost::supply::LockFile;

use crate::Failure;
use crate::output::outln;

pub(crate) async fn run(path: &Path) -> Result<(), Failure> {
    let config = crate::load_config(path)?;
    config.check()?;
    let mut lock = LockFile::new();
    for plugin in config.each_plugin() {
        lock.plugins
            .insert(plugin.name().to_owned(), plugin.lock_entry().await?);
    }
    // What is locked must also be what runs: each plugin is read back as a
    // locked run reads it (from the store, without the network), and its
    // signature and pin checked, before the file is written.
    let keys = config.trusted_keys()?;
    for plugin in config.each_plugin() {
        plugin.fetch(Some(&lock), &keys).await?;
    }
    let previous = config.lock_file().ok().flatten().unwrap_or_default();
    lock.write(&config.lock_path())?;
    for (name, entry) in &lock.plugins {
        let was = previous.plugins.get(name);
        let change = match was {
            None => "added",
            Some(old) if old == entry => "unchanged",
            Some(_) => "updated",
        };
        outln!("{name}: {} {} ({change})", entry.source, entry.wasm)?;
    }
    outln!("wrote {}", config.lock_path().display())?;
    Ok(())
}

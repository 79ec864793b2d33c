//! Rule C5, for the per-function cache: a function's compiled code is
//! reused by any later compilation that contains the same function, and
//! only if its entry is authentic.
//!
//! Uses the example plugin `calc` (plugins/); build it first with
//! `make plugins`. Two builds of one plugin are imitated by adding a custom
//! section to its wasm: new bytes (so the whole-component entry misses),
//! the very same functions.

#![cfg(unix)]

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use toolhost_core::tool::{Arguments, CallContext};
use toolhost_sandbox::testing::wasm;
use toolhost_sandbox::{CodeSource, LoadedPlugin, Sandbox};

/// calc's wasm with a custom section `name` appended: another build.
fn another_build(name: &str) -> Vec<u8> {
    let mut bytes = std::fs::read(wasm("calc")).unwrap();
    let payload: Vec<u8> = [&[name.len() as u8], name.as_bytes()].concat();
    bytes.push(0); // a custom section
    bytes.push(payload.len() as u8);
    bytes.extend_from_slice(&payload);
    bytes
}

async fn load(cache: &Path, bytes: Vec<u8>) -> LoadedPlugin {
    Sandbox::new(Some(cache.to_owned()))
        .unwrap()
        .plugin_bytes("calc", bytes)
        .load()
        .await
        .unwrap()
}

/// calc still computes: whatever code it runs, it is calc's.
async fn assert_computes(plugin: &LoadedPlugin) {
    let args = Arguments::parse(r#"{"expression": "(2 + 3) * 7"}"#).unwrap();
    let out = plugin
        .call_tool("calc", &CallContext::new(), &args)
        .await
        .unwrap();
    assert!(format!("{out:?}").contains("35"), "{out:?}");
}

/// Every function entry under `cache`, with the inode it has now (a
/// rewritten entry is a new file, renamed into place).
fn function_entries(cache: &Path) -> BTreeMap<PathBuf, u64> {
    let mut out = BTreeMap::new();
    let mut stack = Vec::new();
    for top in std::fs::read_dir(cache).unwrap() {
        let top = top.unwrap().path();
        if top
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("functions-")
        {
            stack.push(top);
        }
    }
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            } else {
                out.insert(e.path(), e.metadata().unwrap().ino());
            }
        }
    }
    out
}

#[tokio::test]
async fn c5_another_build_reuses_every_function_it_shares() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let first = load(&cache, another_build("one")).await;
    assert_eq!(first.code_source(), CodeSource::Compiled);
    let entries = function_entries(&cache);
    assert!(
        entries.len() > 10,
        "calc's functions are kept: {}",
        entries.len()
    );

    let second = load(&cache, another_build("two")).await;
    // New bytes: the component is compiled...
    assert_eq!(second.code_source(), CodeSource::Compiled);
    // ...but its functions were not: every entry was found and none was
    // written again. (About one function in ten comes out of wasmtime's
    // translation a little different from one compilation to the next,
    // so it misses and is added; a cache that missed everything would add
    // or rewrite them all.)
    let after = function_entries(&cache);
    let rewritten = entries
        .iter()
        .filter(|(p, ino)| after.get(*p) != Some(ino))
        .count();
    let added = after.keys().filter(|p| !entries.contains_key(*p)).count();
    assert_eq!(rewritten, 0, "of {} entries", entries.len());
    assert!(
        added <= entries.len() / 4,
        "{added} added to {}",
        entries.len()
    );
    assert_computes(&second).await;
}

/// Someone who can write the cache but not read its key plants code: a
/// function entry with a byte changed, and a valid entry moved over
/// another function's. Neither is run: each fails its MAC, the function
/// is compiled from the plugin's own wasm, and the entry replaced.
#[tokio::test]
async fn c5_a_forged_or_moved_function_entry_is_not_run() {
    for attack in ["forged", "moved"] {
        let tmp = tempfile::tempdir().unwrap();
        let cache = tmp.path().join("cache");
        load(&cache, another_build("one")).await;
        let entries = function_entries(&cache);
        let paths: Vec<&PathBuf> = entries.keys().collect();
        for (i, path) in paths.iter().enumerate() {
            let mut bytes = std::fs::read(path).unwrap();
            match attack {
                "forged" => {
                    let last = bytes.len() - 1;
                    bytes[last] ^= 0x55;
                }
                _ => bytes = std::fs::read(paths[(i + 1) % paths.len()]).unwrap(),
            }
            std::fs::write(path, bytes).unwrap();
        }
        let planted = function_entries(&cache);

        let plugin = load(&cache, another_build("two")).await;
        assert_eq!(plugin.code_source(), CodeSource::Compiled, "{attack}");
        assert_computes(&plugin).await;
        // The functions it looked up (all but the few that come out of
        // translation differently each time) were compiled over.
        let after = function_entries(&cache);
        let kept = planted
            .iter()
            .filter(|(p, ino)| after.get(*p) == Some(ino))
            .count();
        assert!(
            kept <= planted.len() / 4,
            "{attack}: {kept} of {} planted entries were used, not compiled over",
            planted.len()
        );
    }
}

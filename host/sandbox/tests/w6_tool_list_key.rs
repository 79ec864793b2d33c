//! Rule W6: a cached tool list is keyed by everything the list can depend
//! on (or not cached).
//!
//! The plugin `env-list` (tests/plugins) lists one tool per name in its
//! `TOOL_NAMES` environment variable. Build it first:
//! `cd tests/plugins && cargo build --release --target wasm32-wasip2`.
//!
//! The test changes the process's environment between loads, so this file
//! holds one test and changes it only while no load runs.

#![allow(unsafe_code)]

use std::path::{Path, PathBuf};

use toolhost_sandbox::testing::wasm;
use toolhost_sandbox::{CodeSource, DirGrant, DirMode, LoadedPlugin, PluginPolicy, Sandbox};

fn set_names(value: Option<&str>) {
    // SAFETY: the only test of this binary, and no load is running: no
    // other thread reads or writes the environment meanwhile.
    unsafe {
        match value {
            Some(v) => std::env::set_var("TOOL_NAMES", v),
            None => std::env::remove_var("TOOL_NAMES"),
        }
    }
}

fn names(plugin: &LoadedPlugin) -> Vec<String> {
    plugin.tools().iter().map(|t| t.name.clone()).collect()
}

/// `env-list` granted `TOOL_NAMES` (and `dirs`), loaded lazily by a fresh
/// sandbox on the cache `dir`, as a new run of the host would.
async fn load(dir: &Path, dirs: Vec<DirGrant>) -> LoadedPlugin {
    let sandbox = Sandbox::new(Some(dir.to_owned())).unwrap();
    let policy = PluginPolicy {
        env: vec!["TOOL_NAMES".into()],
        dirs,
        ..PluginPolicy::default()
    };
    sandbox
        .plugin_file("env-list", wasm("env_list"))
        .policy(policy)
        .lazy(true)
        .load()
        .await
        .unwrap()
}

fn tool_lists(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for sub in std::fs::read_dir(dir).unwrap() {
        let sub = sub.unwrap().path();
        if sub.is_dir() {
            for f in std::fs::read_dir(&sub).unwrap() {
                let f = f.unwrap().path();
                if f.extension().is_some_and(|e| e == "json") {
                    out.push(f);
                }
            }
        }
    }
    out.sort();
    out
}

#[tokio::test]
async fn w6_a_cached_tool_list_is_never_served_under_another_environment() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");

    set_names(Some("alpha,beta"));
    let a = load(&cache, vec![]).await;
    assert_eq!(names(&a), ["alpha", "beta"]);
    assert_eq!(a.code_source(), CodeSource::Compiled);
    // The same environment: served from the cache, loaded on first use.
    let again = load(&cache, vec![]).await;
    assert_eq!(again.code_source(), CodeSource::Deferred);
    assert_eq!(names(&again), ["alpha", "beta"]);

    // Another value of the same granted variable: listed again, and the
    // new list is what is registered.
    set_names(Some("gamma"));
    let b = load(&cache, vec![]).await;
    assert_ne!(b.code_source(), CodeSource::Deferred);
    assert_eq!(names(&b), ["gamma"]);
    // Each environment keeps its own list.
    let b_again = load(&cache, vec![]).await;
    assert_eq!(b_again.code_source(), CodeSource::Deferred);
    assert_eq!(names(&b_again), ["gamma"]);
    set_names(Some("alpha,beta"));
    let a_again = load(&cache, vec![]).await;
    assert_eq!(a_again.code_source(), CodeSource::Deferred);
    assert_eq!(names(&a_again), ["alpha", "beta"]);

    // The variable unset is another environment too.
    set_names(None);
    let none = load(&cache, vec![]).await;
    assert_ne!(none.code_source(), CodeSource::Deferred);
    assert_eq!(names(&none), ["none"]);

    // One environment's entry moved over another's is refused: the entry's
    // MAC binds it to what it was listed under.
    let lists = tool_lists(&cache);
    assert_eq!(lists.len(), 3, "{lists:?}");
    let bytes: Vec<Vec<u8>> = lists.iter().map(|p| std::fs::read(p).unwrap()).collect();
    for (path, other) in lists.iter().zip(bytes.iter().cycle().skip(1)) {
        std::fs::write(path, other).unwrap();
    }
    for (value, expected) in [
        (Some("alpha,beta"), vec!["alpha", "beta"]),
        (Some("gamma"), vec!["gamma"]),
        (None, vec!["none"]),
    ] {
        set_names(value);
        let plugin = load(&cache, vec![]).await;
        assert_ne!(plugin.code_source(), CodeSource::Deferred, "{value:?}");
        assert_eq!(names(&plugin), expected, "{value:?}");
    }

    // A granted directory's contents are something no key captures: such a
    // plugin is listed on every load, never from the cache.
    let data = tmp.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let grant = || {
        vec![DirGrant {
            host: data.clone(),
            guest: "/data".into(),
            mode: DirMode::ReadOnly,
        }]
    };
    set_names(Some("alpha,beta"));
    for _ in 0..2 {
        let plugin = load(&cache, grant()).await;
        assert_eq!(plugin.code_source(), CodeSource::Cache);
        assert_eq!(names(&plugin), ["alpha", "beta"]);
    }
}

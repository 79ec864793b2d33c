//! The sandbox with well-behaved plugins: loading, calling through the
//! pipeline, policies, the cache, extensions.

use toolhost::error::report;
use toolhost::sandbox::{HookPower, PluginPolicy, PluginWorld};
use toolhost::{ToolError, ToolOutput};

use crate::common::{call, host_with, load, text_server};
use std::sync::Arc;
use std::time::Duration;

use toolhost::net::NetPolicy;
use toolhost::sandbox::{CodeSource, DirGrant, DirMode, LoadError, Sandbox, WorldError};
use toolhost::{
    BatchCall, BatchConfig, CallContext, ExecutionMode, FnBeforeHook, FnTool, HookScope, Rejection,
    ToolSpec,
};

use crate::common::{sandbox, wasm};

#[tokio::test]
async fn w2_a_pure_plugin_runs_with_nothing_granted() {
    let calc = load("calc", "calc", PluginPolicy::default()).await;
    assert_eq!(calc.world(), PluginWorld::ToolPlugin);
    assert_eq!(calc.version(), "0.3.0");
    let names: Vec<&str> = calc.tools().iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["calc", "stats"]);
    assert_eq!(calc.tools()[0].concurrency_safe, Some(true));
    assert!(calc.tools()[0].idempotent);
    let host = host_with(vec![calc]).await;
    let out = call(&host, "calc", r#"{"expression": "(1 + 2) * 3 ^ 2"}"#)
        .await
        .unwrap();
    assert_eq!(out, ToolOutput::text("27"));
    let stats = call(&host, "stats", r#"{"numbers": [3, 1, 2]}"#)
        .await
        .unwrap();
    assert_eq!(stats.llm_text(), "mean 2, median 2");
    let err = call(&host, "calc", r#"{"expression": "1 / 0"}"#)
        .await
        .unwrap_err();
    assert_eq!(
        err,
        ToolError::invalid_arguments("/expression", "division by zero")
    );
}

#[tokio::test]
async fn w2_a_file_plugin_reads_and_writes_only_in_its_grant() {
    let dir = tempfile::tempdir().unwrap();
    let policy = PluginPolicy {
        dirs: vec![DirGrant {
            host: dir.path().to_owned(),
            guest: "/notes".into(),
            mode: DirMode::ReadWrite,
        }],
        ..PluginPolicy::default()
    };
    let host = host_with(vec![load("files", "files", policy).await]).await;
    call(
        &host,
        "note_write",
        r#"{"name": "todo.md", "text": "ship it"}"#,
    )
    .await
    .unwrap();
    assert_eq!(
        std::fs::read_to_string(dir.path().join("todo.md")).unwrap(),
        "ship it"
    );
    let read = call(&host, "note_read", r#"{"name": "todo.md"}"#)
        .await
        .unwrap();
    assert_eq!(read, ToolOutput::text("ship it"));
    let list = call(&host, "note_list", "{}").await.unwrap();
    assert_eq!(list, ToolOutput::dual("1 notes", "todo.md"));
    let out = call(&host, "note_read", r#"{"name": "../../etc/passwd"}"#)
        .await
        .unwrap_err();
    assert!(
        out.to_string()
            .starts_with("cannot read `../../etc/passwd`"),
        "{out}"
    );
}

#[tokio::test]
async fn w2_a_fetch_plugin_reaches_its_granted_host() {
    let server = text_server("hello from the test server", 1).await;
    let policy = PluginPolicy {
        net: NetPolicy::new(
            [format!("http://127.0.0.1:{}", server.port())],
            [] as [&str; 0],
        )
        .unwrap(),
        ..PluginPolicy::default()
    };
    let host = host_with(vec![load("fetch", "fetch", policy).await]).await;
    let url = format!("http://127.0.0.1:{}/greeting", server.port());
    let out = call(
        &host,
        "fetch",
        &serde_json::json!({ "url": url }).to_string(),
    )
    .await
    .unwrap();
    assert_eq!(
        out.llm_text(),
        format!("HTTP 200 from {url}, 26 bytes\nhello from the test server")
    );
    let other = call(&host, "fetch", r#"{"url": "https://example.com/"}"#)
        .await
        .unwrap_err();
    assert!(
        other
            .to_string()
            .contains("https://example.com:443 is not granted"),
        "{other}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn w2_plugin_tools_go_through_the_same_pipeline() {
    let host = host_with(vec![load("calc", "calc", PluginPolicy::default()).await]).await;
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    host.add_before_hook(
        HookScope::Global,
        Arc::new(FnBeforeHook::new("policy", move |call| {
            log.lock().unwrap().push(call.tool().to_owned());
            if call.arguments.as_str().contains("666") {
                return Err(Rejection::new("no devil's numbers"));
            }
            Ok(())
        })),
    );
    // Validation against the plugin's schema happens before the plugin runs.
    let err = call(&host, "calc", r#"{"expression": 5}"#)
        .await
        .unwrap_err();
    assert!(
        matches!(err, ToolError::InvalidArguments { ref path, .. } if path == "/expression"),
        "{err}"
    );
    let err = call(&host, "calc", r#"{"expression": "666 + 1"}"#)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), toolhost::ErrorKind::Rejected);
    // A batch of wasm calls in mixed mode: calc is declared safe.
    let batch: Vec<BatchCall> = (1..=6)
        .map(|i| {
            BatchCall::new(
                "calc",
                toolhost::Arguments::parse(&format!(r#"{{"expression": "{i} * {i}"}}"#)).unwrap(),
            )
        })
        .collect();
    let config = BatchConfig {
        mode: ExecutionMode::Mixed,
        concurrency: 3,
    };
    let results = host.run_batch(&CallContext::new(), batch, config).await;
    let values: Vec<String> = results
        .into_iter()
        .map(|r| r.unwrap().llm_text().into_owned())
        .collect();
    assert_eq!(values, ["1", "4", "9", "16", "25", "36"]);
    assert_eq!(seen.lock().unwrap().len(), 7);
}

#[tokio::test]
async fn w2_a_sha256_pin_mismatch_refuses_the_load_and_names_both_digests() {
    let path = wasm("calc");
    let actual = {
        use std::fmt::Write;
        let digest = <sha2::Sha256 as sha2::Digest>::digest(std::fs::read(&path).unwrap());
        digest.iter().fold(String::new(), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
    };
    let wrong = "0".repeat(64);
    let err = sandbox()
        .plugin_file("calc", &path)
        .pin(&wrong)
        .load()
        .await
        .err()
        .unwrap();
    assert_eq!(
        report(&err),
        format!("plugin `calc`: sha256 mismatch: the policy pins {wrong}, the file is {actual}")
    );
    let ok = sandbox()
        .plugin_file("calc", &path)
        .pin(&actual)
        .load()
        .await
        .unwrap();
    assert_eq!(ok.digest(), actual);
}

#[tokio::test]
async fn w2_bad_policies_are_refused_with_a_reason() {
    let too_big = PluginPolicy {
        memory_bytes: 8 << 30,
        ..PluginPolicy::default()
    };
    let err = sandbox()
        .plugin_file("calc", wasm("calc"))
        .policy(too_big)
        .load()
        .await
        .err()
        .unwrap();
    assert_eq!(
        report(&err),
        "plugin `calc`: invalid policy: memory must be between 1 byte and 1024 MiB, not 8589934592 bytes"
    );
    let missing = PluginPolicy {
        dirs: vec![DirGrant {
            host: "/no/such/dir".into(),
            guest: "/data".into(),
            mode: DirMode::ReadOnly,
        }],
        ..PluginPolicy::default()
    };
    let err = sandbox()
        .plugin_file("calc", wasm("calc"))
        .policy(missing)
        .load()
        .await
        .err()
        .unwrap();
    assert_eq!(
        report(&err),
        "plugin `calc`: invalid policy: granted directory /no/such/dir does not exist"
    );
}

#[tokio::test]
async fn w1_a_component_for_another_major_version_is_refused() {
    let err = sandbox()
        .plugin_file("future", wasm("future_major"))
        .load()
        .await
        .err()
        .unwrap();
    assert!(
        matches!(&err, LoadError::World { source: WorldError::UnsupportedVersion { found, .. }, .. } if found == "1.0.0"),
        "{err:?}"
    );
    assert_eq!(
        report(&err),
        "plugin `future`: built for toolhost:plugin@1.0.0 (`toolhost:plugin/tool@1.0.0`); this host supports toolhost:plugin@0.1.x, toolhost:plugin@0.2.x and toolhost:plugin@0.3.x"
    );
}

#[tokio::test]
async fn w1_load_errors_keep_their_cause_as_source() {
    use std::error::Error as _;
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.wasm");
    let err = sandbox()
        .plugin_file("gone", &missing)
        .load()
        .await
        .err()
        .unwrap();
    match &err {
        LoadError::Read {
            plugin,
            path,
            source,
        } => {
            assert_eq!(plugin, "gone");
            assert_eq!(path, &missing);
            assert_eq!(
                source.downcast_ref::<std::io::Error>().map(|e| e.kind()),
                Some(std::io::ErrorKind::NotFound)
            );
        }
        other => panic!("expected a read error, got {other:?}"),
    }
    assert_eq!(
        err.to_string(),
        format!("plugin `gone`: cannot read {}", missing.display())
    );
    assert!(report(&err).len() > err.to_string().len(), "{err:?}");
    let err = sandbox()
        .plugin_bytes("junk", b"not wasm".to_vec())
        .load()
        .await
        .err()
        .unwrap();
    assert!(matches!(err, LoadError::Compile { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        "plugin `junk`: not a valid WebAssembly component"
    );
    let cause = err.source().expect("wasmtime's complaint is the source");
    assert!(!cause.to_string().is_empty());
}

#[tokio::test]
async fn w1_a_descriptor_whose_schema_does_not_compile_refuses_the_load() {
    let err = sandbox()
        .plugin_file("odd", wasm("bad_schema"))
        .load()
        .await
        .err()
        .unwrap();
    let text = report(&err);
    assert!(
        text.starts_with(
            "plugin `odd`: bad tool list: the parameters schema of `odd` does not compile: "
        ),
        "{text}"
    );
    let err = sandbox()
        .plugin_file("cut", wasm("bad_json"))
        .load()
        .await
        .err()
        .unwrap();
    let text = report(&err);
    assert!(
        text.starts_with(
            "plugin `cut`: bad tool list: the parameters schema of `odd` is not valid JSON: "
        ),
        "{text}"
    );
}

#[tokio::test]
async fn w3_compiled_code_is_cached_and_a_corrupt_entry_is_recompiled() {
    let dir = tempfile::tempdir().unwrap();
    let sb = Sandbox::new(Some(dir.path().to_owned())).unwrap();
    let first = sb.plugin_file("calc", wasm("calc")).load().await.unwrap();
    assert_eq!(first.code_source(), CodeSource::Compiled);
    let second = sb.plugin_file("calc", wasm("calc")).load().await.unwrap();
    assert_eq!(second.code_source(), CodeSource::Cache);
    // Damage every cached component entry: a flipped byte in the code.
    let mut entries = 0;
    for path in files_under(dir.path()) {
        if path.extension().is_some_and(|e| e == "cwasm") {
            let mut bytes = std::fs::read(&path).unwrap();
            let at = bytes.len() / 2;
            bytes[at] ^= 0xff;
            std::fs::write(&path, bytes).unwrap();
            entries += 1;
        }
    }
    assert_eq!(entries, 1);
    let third = sb.plugin_file("calc", wasm("calc")).load().await.unwrap();
    assert_eq!(third.code_source(), CodeSource::Compiled);
    let host = host_with(vec![third]).await;
    assert_eq!(
        call(&host, "calc", r#"{"expression": "2 + 2"}"#)
            .await
            .unwrap(),
        ToolOutput::text("4")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn w4_max_instances_bounds_how_many_calls_run_at_once() {
    for (max_instances, calls) in [(1usize, 3usize), (3, 3)] {
        let server = text_server("held", max_instances).await;
        let policy = PluginPolicy {
            net: NetPolicy::new(["127.0.0.1"], [] as [&str; 0]).unwrap(),
            max_instances,
            ..PluginPolicy::default()
        };
        let host = host_with(vec![load("escape", "escape", policy).await]).await;
        let url = format!("http://127.0.0.1:{}/", server.port());
        let args = serde_json::json!({ "url": url }).to_string();
        let tasks: Vec<_> = (0..calls)
            .map(|_| {
                let (host, args) = (host.clone(), args.clone());
                tokio::spawn(async move { call(&host, "get", &args).await })
            })
            .collect();
        for t in tasks {
            assert_eq!(t.await.unwrap().unwrap(), ToolOutput::text("200 held"));
        }
        assert_eq!(
            server.max_in_flight(),
            max_instances,
            "with max_instances = {max_instances}"
        );
    }
}

/// The bundled guard with the power its hooks need (`hooks = "rewrite"`).
fn rewriting() -> PluginPolicy {
    PluginPolicy {
        hooks: HookPower::Rewrite,
        ..PluginPolicy::default()
    }
}

#[tokio::test]
async fn e4_an_extension_plugin_adds_its_prompt_and_hooks() {
    let guard = load("guard", "guard", rewriting()).await;
    assert_eq!(guard.world(), PluginWorld::ExtensionPlugin);
    let host = host_with(vec![
        guard,
        load("calc", "calc", PluginPolicy::default()).await,
    ])
    .await;
    assert_eq!(
        host.system_prompt().await,
        "Never pass credentials, keys or tokens to tools; the host masks any it sees."
    );
    assert_eq!(
        call(&host, "calc", r#"{"expression": "1 + 1"}"#)
            .await
            .unwrap(),
        ToolOutput::text("2")
    );
    host.register_tool(FnTool::arc(
        ToolSpec::new("upload", "uploads", serde_json::json!({"type": "object"})),
        |_, args| async move { Ok(ToolOutput::text(format!("uploaded {}", args.as_str()))) },
    ))
    .unwrap();
    // P7: the secret is masked before the tool sees it.
    assert_eq!(
        call(
            &host,
            "upload",
            r#"{"key": "AKIAIOSFODNN7EXAMPLE", "file": "a.txt"}"#
        )
        .await
        .unwrap(),
        ToolOutput::text(r#"uploaded {"file":"a.txt","key":"[masked]"}"#)
    );
    host.unload_extension("guard").await.unwrap();
    assert_eq!(
        call(&host, "upload", r#"{"key": "AKIA"}"#).await.unwrap(),
        ToolOutput::text(r#"uploaded {"key": "AKIA"}"#)
    );
}

/// A host with the `broken_guard` hook plugin as `fragile` under `policy`,
/// and the native tools it judges.
async fn fragile(policy: PluginPolicy) -> toolhost::ToolHost {
    let broken = load("fragile", "broken_guard", policy).await;
    let host = host_with(vec![broken]).await;
    for name in ["spin_me", "trap_me", "refuse_me", "plain"] {
        host.register_tool(FnTool::arc(
            ToolSpec::new(name, "a native tool", serde_json::json!({"type": "object"})),
            |_, _| async { Ok(ToolOutput::text("ran")) },
        ))
        .unwrap();
    }
    host
}

#[tokio::test]
async fn e4_a_hook_that_traps_or_overruns_fails_closed_and_names_the_extension() {
    let reason = |r: Result<ToolOutput, ToolError>| match r.unwrap_err() {
        ToolError::Rejected { hook, reason } => {
            assert_eq!(hook, "fragile");
            reason
        }
        other => panic!("expected a rejection, got {other:?}"),
    };
    // A hook that spins is stopped at its plugin's timeout: a short one,
    // since the timeout is what this call must end in.
    let host = fragile(PluginPolicy {
        timeout: Duration::from_millis(200),
        ..PluginPolicy::default()
    })
    .await;
    assert_eq!(
        reason(call(&host, "spin_me", "{}").await)
            .split(" after ")
            .next()
            .unwrap(),
        "extension `fragile` failed, so the call is refused: plugin `fragile` timed out"
    );
    // The other outcomes are not timeouts: the default timeout, so that no
    // busy machine turns them into one.
    let host = fragile(PluginPolicy::default()).await;
    assert_eq!(
        reason(call(&host, "trap_me", "{}").await),
        "extension `fragile` failed, so the call is refused: plugin `fragile` trapped: unreachable code reached"
    );
    assert_eq!(
        reason(call(&host, "refuse_me", "{}").await),
        "this tool is off limits"
    );
    assert_eq!(
        call(&host, "plain", "{}").await.unwrap(),
        ToolOutput::text("ran")
    );
}

/// Every file under `dir`, recursively.
fn files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// The cached tool lists under the cache `dir`.
fn tool_lists(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    files_under(dir)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect()
}

/// `calc` of `host` works: it computes 6 * 7.
async fn assert_calc_answers(host: &toolhost::ToolHost) {
    assert_eq!(
        call(host, "calc", r#"{"expression": "6 * 7"}"#)
            .await
            .unwrap(),
        ToolOutput::text("42")
    );
}

#[tokio::test]
async fn w3_a_lazy_plugin_registers_from_its_cached_tool_list_and_loads_on_first_use() {
    let dir = tempfile::tempdir().unwrap();
    let sb = Sandbox::new(Some(dir.path().join("cache"))).unwrap();
    // The first load has no cached list: it loads the plugin, and keeps
    // its list.
    let first = sb
        .plugin_file("calc", wasm("calc"))
        .lazy(true)
        .load()
        .await
        .unwrap();
    assert_eq!(first.code_source(), CodeSource::Compiled);
    assert!(first.is_loaded());
    // The next registers from the list and loads nothing yet.
    let second = sb
        .plugin_file("calc", wasm("calc"))
        .lazy(true)
        .load()
        .await
        .unwrap();
    assert_eq!(second.code_source(), CodeSource::Deferred);
    assert!(!second.is_loaded());
    assert_eq!(
        second.tools().iter().map(|t| &t.name).collect::<Vec<_>>(),
        ["calc", "stats"]
    );
    assert_eq!(second.tools()[0].parameters, first.tools()[0].parameters);
    assert_eq!(second.world(), PluginWorld::ToolPlugin);
    assert_eq!(second.version(), "0.3.0");
    // A pin is checked at load, not at first use.
    let err = sb
        .plugin_file("calc", wasm("calc"))
        .pin("0".repeat(64))
        .lazy(true)
        .load()
        .await
        .err()
        .unwrap();
    assert!(matches!(err, LoadError::DigestMismatch { .. }), "{err:?}");
    // The first call loads it, and it works like any plugin.
    let host = host_with(vec![second]).await;
    assert_calc_answers(&host).await;
    assert_eq!(
        call(&host, "stats", r#"{"numbers": [1, 3]}"#)
            .await
            .unwrap()
            .llm_text(),
        "mean 2, median 2"
    );
}

#[tokio::test]
async fn w7_a_lazy_plugins_warm_up_loads_its_code_once_before_its_first_call() {
    let dir = tempfile::tempdir().unwrap();
    let sb = Sandbox::new(Some(dir.path().join("cache"))).unwrap();
    let load = || sb.plugin_file("calc", wasm("calc")).lazy(true).load();
    // Loaded at once: nothing to warm up.
    let first = load().await.unwrap();
    assert!(first.warm_up().is_none());
    let second = load().await.unwrap();
    assert_eq!(second.code_source(), CodeSource::Deferred);
    let (one, other) = (second.warm_up().unwrap(), second.warm_up().unwrap());
    assert_eq!(one.plugin(), "calc");
    // Two at once load the code once, and both say where it came from.
    let (one, other) = tokio::join!(one.run(), other.run());
    assert_eq!(
        [one.unwrap(), other.unwrap()],
        [Some(CodeSource::Cache), Some(CodeSource::Cache)]
    );
    assert!(second.is_loaded());
    assert!(second.warm_up().is_none());
    let host = host_with(vec![second]).await;
    assert_calc_answers(&host).await;
    // A call that loads the code first leaves its warm-up the same answer,
    // so that a host counting lookups by warm-up misses none.
    let third = load().await.unwrap();
    let warm = third.warm_up().unwrap();
    let host = host_with(vec![third]).await;
    assert_calc_answers(&host).await;
    assert_eq!(warm.run().await.unwrap(), Some(CodeSource::Cache));
}

#[tokio::test]
async fn w3_a_tampered_tool_list_is_never_believed() {
    let dir = tempfile::tempdir().unwrap();
    let sb = Sandbox::new(Some(dir.path().join("cache"))).unwrap();
    sb.plugin_file("calc", wasm("calc"))
        .lazy(true)
        .load()
        .await
        .unwrap();
    let lists = tool_lists(&dir.path().join("cache"));
    assert_eq!(lists.len(), 1, "{lists:?}");
    // Someone who can write the cache but not read its key rewrites the
    // list: a schema that accepts anything, a tool that is not there.
    let mut forged = std::fs::read(&lists[0]).unwrap();
    let at = forged
        .windows(6)
        .position(|w| w == b"\"calc\"")
        .expect("the list names calc");
    forged[at + 1..at + 5].copy_from_slice(b"evil");
    std::fs::write(&lists[0], forged).unwrap();
    let again = sb
        .plugin_file("calc", wasm("calc"))
        .lazy(true)
        .load()
        .await
        .unwrap();
    // The list fails its MAC: the plugin is loaded and lists its own tools.
    assert_ne!(again.code_source(), CodeSource::Deferred);
    assert_eq!(
        again.tools().iter().map(|t| &t.name).collect::<Vec<_>>(),
        ["calc", "stats"]
    );
    // An entry copied over another plugin's is bound to its own wasm.
    sb.plugin_file("template", wasm("template"))
        .lazy(true)
        .load()
        .await
        .unwrap();
    let lists = tool_lists(&dir.path().join("cache"));
    assert_eq!(lists.len(), 2);
    std::fs::copy(&lists[0], &lists[1]).unwrap();
    for (name, crate_name) in [("calc", "calc"), ("template", "template")] {
        let p = sb
            .plugin_file(name, wasm(crate_name))
            .lazy(true)
            .load()
            .await
            .unwrap();
        let tools: Vec<&str> = p.tools().iter().map(|t| t.name.as_str()).collect();
        let expected: &[&str] = if name == "calc" {
            &["calc", "stats"]
        } else {
            &["echo"]
        };
        assert_eq!(tools, expected, "{name}");
    }
}

#[tokio::test]
async fn w3_a_lazy_extensions_hooks_load_it_and_fail_closed_if_it_cannot_load() {
    let dir = tempfile::tempdir().unwrap();
    let sb = Sandbox::new(Some(dir.path().join("cache"))).unwrap();
    let policy = || PluginPolicy {
        hooks: HookPower::Rewrite,
        ..PluginPolicy::default()
    };
    sb.plugin_file("guard", wasm("guard"))
        .policy(policy())
        .lazy(true)
        .load()
        .await
        .unwrap();
    let guard = sb
        .plugin_file("guard", wasm("guard"))
        .policy(policy())
        .lazy(true)
        .load()
        .await
        .unwrap();
    assert_eq!(guard.code_source(), CodeSource::Deferred);
    let host = host_with(vec![guard]).await;
    host.register_tool(FnTool::arc(
        ToolSpec::new("upload", "uploads", serde_json::json!({"type": "object"})),
        |_, args| async move { Ok(ToolOutput::text(format!("uploaded {}", args.as_str()))) },
    ))
    .unwrap();
    assert_eq!(
        call(&host, "upload", r#"{"key": "AKIAIOSFODNN7EXAMPLE"}"#)
            .await
            .unwrap(),
        ToolOutput::text(r#"uploaded {"key":"[masked]"}"#)
    );
}

/// What a plugin's call reports to the call's observer, in order.
#[derive(Default)]
struct Reports(std::sync::Mutex<Vec<String>>);

impl Reports {
    fn push(&self, what: String) {
        self.0.lock().unwrap().push(what);
    }

    fn taken(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

impl toolhost::observe::Observer for Reports {
    fn stage(&self, plugin: &str, stage: toolhost::observe::Stage, _took: Duration) {
        self.push(format!("{plugin} {}", stage.as_str()));
    }

    fn instance(&self, plugin: &str, started: bool) {
        self.push(format!("{plugin} instance {started}"));
    }

    fn memory_high_water(&self, plugin: &str, bytes: u64) {
        assert!(bytes > 0, "a guest with no memory");
        self.push(format!("{plugin} memory"));
    }
}

/// A guest's stages reach the call's observer once each, as the guest
/// returns (one report, which an observer that does not take it whole
/// hears part by part); a call dropped while its guest runs (its caller
/// gone) still reports its wait for a slot and its instantiation, and
/// its instance ends in use.
#[tokio::test]
async fn x1_each_stage_is_reported_once_and_a_call_dropped_in_its_guest_reports_what_it_met() {
    let server = text_server("held", 2).await;
    let policy = PluginPolicy {
        net: NetPolicy::new(["127.0.0.1"], [] as [&str; 0]).unwrap(),
        ..PluginPolicy::default()
    };
    let host = host_with(vec![load("escape", "escape", policy).await]).await;
    let reports = Arc::new(Reports::default());
    let call = |host: toolhost::ToolHost, reports: Arc<Reports>| {
        let args = serde_json::json!({ "url": server.url("/") }).to_string();
        tokio::spawn(async move {
            host.invoke_tool(
                CallContext::new().with_observer(reports),
                "get",
                toolhost::Arguments::parse(&args).unwrap(),
            )
            .await
        })
    };
    // Answered once two requests wait (or after 2 s): two calls.
    let (a, b) = (
        call(host.clone(), reports.clone()),
        call(host.clone(), reports.clone()),
    );
    assert_eq!(a.await.unwrap().unwrap(), ToolOutput::text("200 held"));
    assert_eq!(b.await.unwrap().unwrap(), ToolOutput::text("200 held"));
    let mut seen = reports.taken();
    seen.sort();
    let each = [
        "escape guest",
        "escape instance false",
        "escape instance true",
        "escape instantiate",
        "escape memory",
        "escape queue_wait",
    ];
    let twice: Vec<_> = each
        .iter()
        .flat_map(|s| [s.to_string(), s.to_string()])
        .collect();
    assert_eq!(seen, twice);

    // One call, to a server that reads the request and never answers,
    // dropped while its guest waits.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", silent.local_addr().unwrap());
    let args = serde_json::json!({ "url": url }).to_string();
    let held = tokio::spawn({
        let (host, reports) = (host.clone(), reports.clone());
        async move {
            host.invoke_tool(
                CallContext::new().with_observer(reports),
                "get",
                toolhost::Arguments::parse(&args).unwrap(),
            )
            .await
        }
    });
    // Held open, unanswered, until the test ends.
    let (_connection, _) = silent.accept().await.unwrap();
    held.abort();
    assert!(held.await.unwrap_err().is_cancelled());
    assert_eq!(
        reports.taken(),
        [
            "escape instance true",
            "escape queue_wait",
            "escape instantiate",
            "escape instance false",
        ]
    );
}

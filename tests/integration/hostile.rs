//! Hostile plugins (tests/plugins/): every attack fails that one call with a
//! clear error, and the host then serves a normal call correctly.

use std::time::{Duration, Instant};

use toolhost::net::NetPolicy;
use toolhost::sandbox::{DirGrant, DirMode, PluginPolicy};
use toolhost::{SandboxFault, ToolError, ToolHost, ToolOutput};

use crate::common::{call, call_within, host_with, load, text_server};

/// A host with the `runaway` plugin under `policy`.
async fn runaway(policy: PluginPolicy) -> ToolHost {
    host_with(vec![load("runaway", "runaway", policy).await]).await
}

/// The host still serves a normal call.
async fn still_serves(host: &ToolHost) {
    assert_eq!(
        call(host, "fine", "{}").await.unwrap(),
        ToolOutput::text("still here")
    );
}

fn fault(err: ToolError) -> SandboxFault {
    match err {
        ToolError::Sandbox { plugin, fault } => {
            assert_eq!(plugin, "runaway");
            fault
        }
        other => panic!("expected a sandbox fault, got {other:?}"),
    }
}

/// The deadline of a call that spins forever: its timeout is the outcome
/// expected, so it may be short. The plugin's own timeout stays the
/// default, so that the calls that must succeed beside and after it are
/// never cut short on a busy machine.
const SPIN_DEADLINE: Duration = Duration::from_millis(200);

#[tokio::test]
async fn w3_infinite_loop_is_stopped_at_its_deadline() {
    let host = runaway(PluginPolicy::default()).await;
    let asked = Instant::now();
    // Only the sandbox stops a plugin's call (the pipeline does not time
    // it again), and a deadline this far off is set on its clock only
    // once the loop yields at the end of its first slice: the bound, far
    // looser than the 200 ms expected, turns a loop never stopped into a
    // failure rather than a hung test.
    let spin = call_within(&host, "spin", "{}", SPIN_DEADLINE);
    match tokio::time::timeout(Duration::from_secs(40), spin)
        .await
        .expect("the sandbox stops the loop")
        .unwrap_err()
    {
        ToolError::Timeout { .. } => {
            // Never before the deadline.
            let took = asked.elapsed();
            assert!(took >= SPIN_DEADLINE, "{took:?}")
        }
        other => panic!("expected a timeout, got {other:?}"),
    }
    still_serves(&host).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn w3_a_runaway_call_does_not_stop_its_siblings() {
    let host = runaway(PluginPolicy {
        max_instances: 8,
        ..PluginPolicy::default()
    })
    .await;
    let spinning = {
        let host = host.clone();
        tokio::spawn(
            async move { call_within(&host, "spin", "{}", Duration::from_millis(300)).await },
        )
    };
    // While the loop spins (it yields its thread every few milliseconds),
    // other calls complete.
    for _ in 0..5 {
        still_serves(&host).await;
    }
    assert_eq!(
        spinning.await.unwrap().unwrap_err().kind(),
        toolhost::ErrorKind::Timeout
    );
}

#[tokio::test]
async fn w3_unbounded_memory_growth_hits_the_limit() {
    let host = runaway(PluginPolicy {
        memory_bytes: 32 << 20,
        ..PluginPolicy::default()
    })
    .await;
    let err = call(&host, "grow", "{}").await.unwrap_err();
    assert_eq!(
        err.to_string().split(" (it asked").next().unwrap(),
        "plugin `runaway` exceeded its limit: memory limit of 32 MiB"
    );
    assert!(matches!(fault(err), SandboxFault::LimitExceeded(_)));
    still_serves(&host).await;
}

#[tokio::test]
async fn w3_deep_recursion_is_a_stack_overflow() {
    let host = runaway(PluginPolicy::default()).await;
    let err = call(&host, "recurse", "{}").await.unwrap_err();
    assert_eq!(
        fault(err),
        SandboxFault::Trap("stack overflow (recursion too deep)".into())
    );
    still_serves(&host).await;
}

#[tokio::test]
async fn w3_a_panic_fails_the_call_with_its_message() {
    let host = runaway(PluginPolicy::default()).await;
    match fault(call(&host, "panic", "{}").await.unwrap_err()) {
        SandboxFault::Panic(message) => {
            assert!(
                message.starts_with("the plugin gave up: 0 items (at "),
                "{message}"
            );
        }
        other => panic!("expected a panic, got {other:?}"),
    }
    still_serves(&host).await;
}

#[tokio::test]
async fn w3_a_plugin_that_exits_fails_only_that_call() {
    let host = runaway(PluginPolicy::default()).await;
    let err = call(&host, "exit", "{}").await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "plugin `runaway` exited with status 1 instead of answering"
    );
    // WASI 0.2 passes on failure, not the code (7).
    assert_eq!(fault(err), SandboxFault::Exited(1));
    still_serves(&host).await;
}

#[tokio::test]
async fn w3_a_trap_fails_only_that_call() {
    let host = runaway(PluginPolicy::default()).await;
    let err = call(&host, "trap", "{}").await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "plugin `runaway` trapped: unreachable code reached"
    );
    still_serves(&host).await;
}

#[tokio::test]
async fn w3_flooding_stdout_and_the_log_is_capped() {
    let log = crate::common::capture_log();
    let host = runaway(PluginPolicy {
        max_log_bytes: 4096,
        ..PluginPolicy::default()
    })
    .await;
    // 8 MiB to each of stdout and stderr, and 100 log lines: the call
    // completes, and the host keeps only a capped prefix of each stream
    // (log records have bounds of their own, see containment.rs).
    assert_eq!(
        call(&host, "flood", "{}").await.unwrap(),
        ToolOutput::text("flooded")
    );
    let text = log.text();
    assert!(
        text.contains("stream=\"stdout\" cut_bytes=8384512"),
        "{}",
        &text[..text.len().min(2000)]
    );
    assert!(text.contains("stream=\"stderr\" cut_bytes=8384512"));
    assert!(text.contains("log line 99"));
    assert!(
        text.len() < 64 * 1024,
        "the host's log grew to {} bytes",
        text.len()
    );
    still_serves(&host).await;
}

#[tokio::test]
async fn w3_a_hundred_megabyte_result_is_refused() {
    let host = runaway(PluginPolicy {
        memory_bytes: 512 << 20,
        ..PluginPolicy::default()
    })
    .await;
    let err = call(&host, "big", r#"{"mb": 100}"#).await.unwrap_err();
    assert_eq!(
        fault(err),
        SandboxFault::InvalidOutput(
            "the result is 104857600 bytes; the limit is 16777216 bytes".into()
        )
    );
    // Under the default memory limit the same attack dies earlier.
    let host = runaway(PluginPolicy::default()).await;
    let err = call(&host, "big", r#"{"mb": 100}"#).await.unwrap_err();
    assert!(matches!(fault(err), SandboxFault::LimitExceeded(_)));
    still_serves(&host).await;
}

#[tokio::test]
async fn w3_a_result_that_is_not_utf8_is_refused() {
    let host = runaway(PluginPolicy::default()).await;
    let err = call(&host, "bad_utf8", "{}").await.unwrap_err();
    let text = err.to_string();
    assert!(text.starts_with("plugin `runaway`"), "{text}");
    assert!(text.to_lowercase().contains("utf-8"), "{text}");
    still_serves(&host).await;
}

#[tokio::test]
async fn w4_each_call_gets_a_fresh_instance() {
    let host = runaway(PluginPolicy::default()).await;
    for _ in 0..3 {
        assert_eq!(
            call(&host, "counter", "{}").await.unwrap(),
            ToolOutput::text("1")
        );
    }
}

/// A host with the `escape` plugin under `policy`.
async fn escape(policy: PluginPolicy) -> ToolHost {
    host_with(vec![load("escape", "escape", policy).await]).await
}

/// A granted directory holding `inside.txt`, next to a `secret.txt` that is
/// not granted, with a symlink inside the grant pointing at the secret.
struct Tree {
    _root: tempfile::TempDir,
    granted: std::path::PathBuf,
    secret: std::path::PathBuf,
}

fn tree() -> Tree {
    let root = tempfile::tempdir().unwrap();
    let granted = root.path().join("granted");
    std::fs::create_dir(&granted).unwrap();
    std::fs::write(granted.join("inside.txt"), "inside").unwrap();
    let secret = root.path().join("secret.txt");
    std::fs::write(&secret, "TOP-SECRET").unwrap();
    std::os::unix::fs::symlink(&secret, granted.join("link")).unwrap();
    Tree {
        _root: root,
        granted,
        secret,
    }
}

fn grant(dir: &std::path::Path, mode: DirMode) -> PluginPolicy {
    PluginPolicy {
        dirs: vec![DirGrant {
            host: dir.to_owned(),
            guest: "/data".into(),
            mode,
        }],
        ..PluginPolicy::default()
    }
}

fn read_args(path: &str) -> String {
    serde_json::json!({ "path": path }).to_string()
}

#[tokio::test]
async fn w2_reading_outside_the_grants_fails() {
    let t = tree();
    let host = escape(grant(&t.granted, DirMode::ReadOnly)).await;
    let secret_path = t.secret.to_str().unwrap();
    for path in [
        "/data/../secret.txt",
        secret_path,
        "/data/link",
        "../secret.txt",
        "/etc/passwd",
    ] {
        let err = call(&host, "read", &read_args(path)).await.unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, ToolError::Failed { .. }), "{path}: {err:?}");
        assert!(text.starts_with(&format!("read {path}: ")), "{text}");
        assert!(!text.contains("TOP-SECRET"), "{path} leaked: {text}");
    }
    let inside = call(&host, "read", &read_args("/data/inside.txt"))
        .await
        .unwrap();
    assert_eq!(inside, ToolOutput::text("inside"));
}

#[tokio::test]
async fn w2_writing_into_a_read_only_grant_fails() {
    let t = tree();
    let host = escape(grant(&t.granted, DirMode::ReadOnly)).await;
    let args = serde_json::json!({"path": "/data/new.txt", "text": "x"}).to_string();
    let err = call(&host, "write", &args).await.unwrap_err();
    assert!(
        err.to_string().starts_with("write /data/new.txt: "),
        "{err}"
    );
    assert!(!t.granted.join("new.txt").exists());
    // The same write succeeds under a read-write grant.
    let host = escape(grant(&t.granted, DirMode::ReadWrite)).await;
    assert_eq!(
        call(&host, "write", &args).await.unwrap(),
        ToolOutput::text("written")
    );
    assert_eq!(
        std::fs::read_to_string(t.granted.join("new.txt")).unwrap(),
        "x"
    );
}

#[tokio::test]
async fn w2_environment_variables_not_granted_are_invisible() {
    // Two variables the test process already has, with distinct values
    // neither of which contains the other. The environment is only read:
    // changing it while other test threads read it is undefined behaviour.
    let vars: Vec<(String, String)> = std::env::vars()
        .filter(|(_, v)| v.len() >= 4 && !v.contains('\n'))
        .collect();
    let (secret, visible) = vars
        .iter()
        .enumerate()
        .find_map(|(i, a)| {
            vars[i + 1..]
                .iter()
                .find(|b| !a.1.contains(&b.1) && !b.1.contains(&a.1))
                .map(|b| (a.clone(), b.clone()))
        })
        .expect("the test process has two distinct environment variables");
    let host = escape(PluginPolicy {
        env: vec![visible.0.clone()],
        ..PluginPolicy::default()
    })
    .await;
    let args = serde_json::json!({ "name": secret.0 }).to_string();
    let err = call(&host, "env", &args).await.unwrap_err();
    assert!(!err.to_string().contains(&secret.1));
    assert!(
        err.to_string().starts_with(&format!("env {}: ", secret.0)),
        "{err}"
    );
    let args = serde_json::json!({ "name": visible.0 }).to_string();
    let ok = call(&host, "env", &args).await.unwrap();
    assert_eq!(ok, ToolOutput::text(visible.1));
}

#[tokio::test]
async fn w2_raw_tcp_connections_are_denied() {
    let server = text_server("should not be reached", 1).await;
    let host = escape(PluginPolicy {
        net: NetPolicy::new(["127.0.0.1"], [] as [&str; 0]).unwrap(),
        ..PluginPolicy::default()
    })
    .await;
    let args = serde_json::json!({"addr": format!("127.0.0.1:{}", server.port())}).to_string();
    let err = call(&host, "tcp", &args).await.unwrap_err();
    assert!(err.to_string().starts_with("tcp 127.0.0.1:"), "{err}");
    assert_eq!(server.hits(), 0);
}

fn get_args(url: &str) -> String {
    serde_json::json!({ "url": url }).to_string()
}

#[tokio::test]
async fn w2_http_to_a_host_not_granted_is_denied() {
    let server = text_server("private", 1).await;
    let host = escape(PluginPolicy::default()).await;
    let url = format!("http://127.0.0.1:{}/", server.port());
    let err = call(&host, "get", &get_args(&url)).await.unwrap_err();
    let text = err.to_string();
    assert!(text.contains("denied by the host's policy"), "{text}");
    assert!(
        text.contains(&format!(
            "http://127.0.0.1:{} is not granted",
            server.port()
        )),
        "{text}"
    );
    assert_eq!(server.hits(), 0);
}

#[tokio::test]
async fn w2_a_granted_name_resolving_to_loopback_is_refused() {
    let server = text_server("private", 1).await;
    let host = escape(PluginPolicy {
        net: NetPolicy::new([format!("localhost:{}", server.port())], [] as [&str; 0]).unwrap(),
        ..PluginPolicy::default()
    })
    .await;
    let url = format!("http://localhost:{}/", server.port());
    let text = call(&host, "get", &get_args(&url))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        text.contains("a loopback address that is not granted"),
        "{text}"
    );
    assert_eq!(server.hits(), 0);
}

#[tokio::test]
async fn w2_a_granted_name_resolving_to_the_metadata_address_is_refused() {
    let policy = NetPolicy::new(["metadata.test"], [] as [&str; 0])
        .unwrap()
        .pin("metadata.test", vec!["169.254.169.254".parse().unwrap()]);
    let host = escape(PluginPolicy {
        net: policy,
        ..PluginPolicy::default()
    })
    .await;
    let text = call(
        &host,
        "get",
        &get_args("http://metadata.test/latest/meta-data/"),
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(
        text.contains(
            "metadata.test resolves to 169.254.169.254, a link-local address that is not granted"
        ),
        "{text}"
    );
}

#[tokio::test]
async fn w2_http_to_a_host_granted_by_address_works() {
    let server = text_server("public data", 1).await;
    let host = escape(PluginPolicy {
        net: NetPolicy::new([format!("127.0.0.1:{}", server.port())], [] as [&str; 0]).unwrap(),
        ..PluginPolicy::default()
    })
    .await;
    let url = format!("http://127.0.0.1:{}/data", server.port());
    let out = call(&host, "get", &get_args(&url)).await.unwrap();
    assert_eq!(out, ToolOutput::text("200 public data"));
    assert_eq!(server.hits(), 1);
}

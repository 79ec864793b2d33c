//! Containment (rules C1–C5): hostile plugins from tests/plugins/ try to
//! hold the host hostage — waiting inside host calls, hiding in hooks and
//! loading, handing the host more than it should carry, hoarding
//! descriptors and connections, reaching the host's own files. Each attack
//! fails that one load or call with the exact error, within a bound
//! measured here (ten times looser than expected, only to catch a hang),
//! and the host then serves a normal call.

use std::path::Path;
use std::time::{Duration, Instant};

use toolhost::error::report;
use toolhost::net::NetPolicy;
use toolhost::sandbox::{
    DirGrant, DirMode, GuestBounds, LoadError, LoadedPlugin, PluginPolicy, PolicyRefusal, Resource,
    Sandbox, ToolListError,
};
use toolhost::{SandboxFault, ToolError, ToolHost, ToolOutput};

use crate::common::{call, call_within, capture_log, host_with, load, sandbox, text_server, wasm};

fn quick(timeout_ms: u64) -> PluginPolicy {
    PluginPolicy {
        timeout: Duration::from_millis(timeout_ms),
        ..PluginPolicy::default()
    }
}

/// Fails if `started` is more than [`HANG`] ago: the call hung instead of
/// ending at its deadline. How soon after its deadline a call ends is
/// measured in BENCHMARKS.md, not asserted here, so that a busy machine
/// never fails a test.
fn within_hang_bound(started: Instant) {
    let took = started.elapsed();
    assert!(
        took < HANG,
        "took {took:?}: the call hung past its deadline"
    );
}

/// At least ten times the longest these calls take while the machine runs
/// a second build: about 2 s for deadlines of 200 to 500 ms, and about
/// 3.5 s for a hook stopped at its 3 s timeout. Far below the hour a
/// sleeping hook or guest would take if nothing stopped it.
const HANG: Duration = Duration::from_secs(40);

/// The deadline of a call that sleeps past it: the timeout is the outcome
/// expected, so it may be short. The sleeper's own timeout stays the
/// default, so that the call that must then succeed is never cut short on
/// a busy machine.
const SLEEP_DEADLINE: Duration = Duration::from_millis(200);

/// The error is a timeout that names `plugin`.
fn timed_out(err: ToolError, plugin: &str) {
    match err {
        ToolError::Timeout { plugin: p, .. } => assert_eq!(p.as_deref(), Some(plugin)),
        other => panic!("expected a timeout of `{plugin}`, got {other:?}"),
    }
}

/// A host with `sleeper` (and `fine`) under `policy`.
async fn sleeper(policy: PluginPolicy) -> ToolHost {
    host_with(vec![load("sleeper", "sleeper", policy).await]).await
}

async fn still_serves(host: &ToolHost) {
    assert_eq!(
        call(host, "fine", "{}").await.unwrap(),
        ToolOutput::text("still here")
    );
}

// ---- C1: every wait on a guest ends at its deadline ----------------------

#[tokio::test]
async fn c1_a_guest_asleep_in_a_host_call_stops_at_its_deadline() {
    let tools = ["sleep", "pollable", "poll_many", "nap_loop", "outlive"];
    // The plugin's own timeout, which only the sandbox enforces, stops it.
    let host = sleeper(quick(200)).await;
    for tool in tools {
        let started = Instant::now();
        timed_out(call(&host, tool, "{}").await.unwrap_err(), "sleeper");
        within_hang_bound(started);
    }
    // So does the call's deadline; and then the plugin, under its default
    // timeout, still serves.
    let host = sleeper(PluginPolicy::default()).await;
    for tool in tools {
        let started = Instant::now();
        timed_out(
            call_within(&host, tool, "{}", SLEEP_DEADLINE)
                .await
                .unwrap_err(),
            "sleeper",
        );
        within_hang_bound(started);
    }
    still_serves(&host).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c1_a_sleeping_guest_stops_on_a_multi_threaded_runtime_too() {
    let host = sleeper(PluginPolicy::default()).await;
    let started = Instant::now();
    let calls: Vec<_> = (0..4)
        .map(|_| {
            let host = host.clone();
            tokio::spawn(async move { call_within(&host, "sleep", "{}", SLEEP_DEADLINE).await })
        })
        .collect();
    for c in calls {
        timed_out(c.await.unwrap().unwrap_err(), "sleeper");
    }
    within_hang_bound(started);
    still_serves(&host).await;
}

#[tokio::test]
async fn c1_a_guest_spinning_through_host_calls_is_stopped() {
    let host = host_with(vec![
        load("host-call-spinner", "host_call_spinner", quick(200)).await,
        load("sleeper", "sleeper", PluginPolicy::default()).await,
    ])
    .await;
    let started = Instant::now();
    timed_out(
        call(&host, "spin", "{}").await.unwrap_err(),
        "host-call-spinner",
    );
    within_hang_bound(started);
    still_serves(&host).await;
}

#[tokio::test]
async fn c1_a_guest_blocked_in_the_hosts_file_io_stops_at_its_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    let policy = PluginPolicy {
        dirs: vec![DirGrant {
            host: dir.path().to_owned(),
            guest: "/data".into(),
            mode: DirMode::ReadOnly,
        }],
        ..quick(300)
    };
    let host = host_with(vec![
        load("fifo-blocker", "fifo_blocker", policy).await,
        load("sleeper", "sleeper", PluginPolicy::default()).await,
    ])
    .await;
    let started = Instant::now();
    timed_out(
        call(&host, "read_fifo", r#"{"path": "/data/pipe"}"#)
            .await
            .unwrap_err(),
        "fifo-blocker",
    );
    within_hang_bound(started);
    still_serves(&host).await;
    // The host's thread stuck in open(2) is released by a writer.
    let _ = std::fs::OpenOptions::new().write(true).open(&fifo);
}

#[tokio::test]
async fn c1_a_call_whose_deadline_passes_in_the_queue_never_starts() {
    let log = capture_log();
    let host = sleeper(PluginPolicy {
        max_instances: 1,
        ..PluginPolicy::default()
    })
    .await;
    let started = Instant::now();
    // Four calls at once for one instance slot: the first, polled first,
    // takes the slot and sleeps until its deadline, 3 s away; the others'
    // deadlines, 300 ms from when each is first polled, pass while they
    // wait, so they fail without ever starting. The first call's deadline
    // is ten times theirs, so that however long its own first poll takes
    // on a busy machine (instantiating, before it yields), it still holds
    // the slot when theirs pass: with equal deadlines, a waiting call
    // polled a little later than the first one could still take the slot
    // before its own deadline, and rightly start.
    let results = futures::future::join_all((0..4).map(|i| {
        let timeout = if i == 0 { 3_000 } else { 300 };
        call_within(
            &host,
            "log_then_sleep",
            "{}",
            Duration::from_millis(timeout),
        )
    }))
    .await;
    for r in results {
        timed_out(r.unwrap_err(), "sleeper");
    }
    within_hang_bound(started);
    let text = log.text();
    assert!(
        text.matches("started sleeping").count() <= 1,
        "only the call that got the slot may start: {text}"
    );
    still_serves(&host).await;
}

#[tokio::test]
async fn c1_a_call_whose_deadline_has_passed_as_it_arrives_never_starts() {
    let log = capture_log();
    let host = sleeper(PluginPolicy::default()).await;
    let started = Instant::now();
    // An instance slot is free, and is taken at once; the deadline was
    // past before the call reached it, so the guest is not started.
    for _ in 0..3 {
        timed_out(
            call_within(&host, "log_then_sleep", "{}", Duration::ZERO)
                .await
                .unwrap_err(),
            "sleeper",
        );
    }
    within_hang_bound(started);
    let text = log.text();
    assert!(
        !text.contains("started sleeping"),
        "no call may start: {text}"
    );
    still_serves(&host).await;
}

#[tokio::test]
async fn c1_loading_a_plugin_that_never_lists_its_tools_times_out() {
    for (name, file) in [("slow-list", "slow_list"), ("spin-list", "spin_list")] {
        let started = Instant::now();
        let err = sandbox()
            .plugin_file(name, wasm(file))
            .policy(quick(300))
            .load()
            .await
            .err()
            .expect("the load fails");
        within_hang_bound(started);
        match &err {
            LoadError::Tools { plugin, source } => {
                assert_eq!(plugin, name);
                assert!(
                    matches!(source, ToolListError::Call(ToolError::Timeout { .. })),
                    "{source:?}"
                );
                let reason = report(source);
                assert!(
                    reason.contains(&format!("plugin `{name}` timed out after")),
                    "{reason}"
                );
            }
            other => panic!("expected a timeout while listing, got {other:?}"),
        }
    }
    still_serves(&sleeper(PluginPolicy::default()).await).await;
}

async fn hook_sleeper() -> ToolHost {
    host_with(vec![
        load("hook-sleeper", "hook_sleeper", quick(3000)).await,
        load("sleeper", "sleeper", PluginPolicy::default()).await,
    ])
    .await
}

#[tokio::test]
async fn c1_a_before_hook_that_sleeps_refuses_the_call_at_the_plugins_timeout() {
    let host = hook_sleeper().await;
    let started = Instant::now();
    match call(&host, "sleep_before", "{}").await.unwrap_err() {
        ToolError::Rejected { hook, reason } => {
            assert_eq!(hook, "hook-sleeper");
            assert!(
                reason.starts_with("extension `hook-sleeper` failed, so the call is refused: plugin `hook-sleeper` timed out after"),
                "{reason}"
            );
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    within_hang_bound(started);
    assert_eq!(
        call(&host, "calm", "{}").await.unwrap(),
        ToolOutput::text("ran")
    );
    still_serves(&host).await;
}

#[tokio::test]
async fn c1_an_after_hook_that_sleeps_holds_the_result_only_until_its_timeout() {
    let host = hook_sleeper().await;
    let started = Instant::now();
    assert_eq!(
        call(&host, "sleep_after", "{}").await.unwrap(),
        ToolOutput::text("ran")
    );
    // The hook sleeps an hour; its timeout is 3 s.
    within_hang_bound(started);
    still_serves(&host).await;
}

#[tokio::test]
async fn c1_a_system_prompt_that_sleeps_is_left_out_at_the_timeout() {
    let host = hook_sleeper().await;
    let started = Instant::now();
    let prompt = host.system_prompt().await;
    within_hang_bound(started);
    assert!(!prompt.contains("never"), "{prompt}");
    still_serves(&host).await;
}

#[tokio::test]
async fn c1_a_before_hook_that_hoards_memory_fails_closed_and_names_the_extension() {
    // The default timeout (10 s): the memory limit, not the clock, must end
    // the hook, however busy the machine.
    let host = host_with(vec![
        load("hook-hog", "hook_hog", PluginPolicy::default()).await,
        load("sleeper", "sleeper", PluginPolicy::default()).await,
    ])
    .await;
    match call(&host, "hog_memory", "{}").await.unwrap_err() {
        ToolError::Rejected { hook, reason } => {
            assert_eq!(hook, "hook-hog");
            assert!(
                reason.contains("exceeded its limit: memory limit"),
                "{reason}"
            );
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    still_serves(&host).await;
}

#[tokio::test]
async fn c1_hooks_that_spin_or_overflow_fail_closed_and_name_the_extension() {
    let host = host_with(vec![
        load("hook-hog", "hook_hog", quick(3000)).await,
        load("exit-hook", "exit_hook", PluginPolicy::default()).await,
        load("sleeper", "sleeper", PluginPolicy::default()).await,
    ])
    .await;
    // The after hook spins; the result still arrives, at the hook's timeout.
    let started = Instant::now();
    assert_eq!(
        call(&host, "hog_cpu", "{}").await.unwrap(),
        ToolOutput::text("ran")
    );
    within_hang_bound(started);
    // A prompt that overflows the stack is left out.
    assert!(!host.system_prompt().await.contains('0'));
    still_serves(&host).await;
}

#[tokio::test]
async fn c1_a_before_hook_that_exits_refuses_the_call() {
    // The default timeout: the exit, not the clock, must end the hook.
    let host = host_with(vec![
        load("exit-hook", "exit_hook", PluginPolicy::default()).await,
        load("sleeper", "sleeper", PluginPolicy::default()).await,
    ])
    .await;
    match call(&host, "exit_me", "{}").await.unwrap_err() {
        ToolError::Rejected { hook, reason } => {
            assert_eq!(hook, "exit-hook");
            assert_eq!(
                reason,
                "extension `exit-hook` failed, so the call is refused: plugin `exit-hook` exited with status 0 instead of answering"
            );
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    still_serves(&host).await;
}

// ---- C2: precise deadlines; a guest never widens a host limit ------------

#[tokio::test]
async fn c2_a_guest_cannot_stretch_http_timeouts_past_its_deadline() {
    // A server that accepts connections and never answers.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let hold = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((sock, _)) = listener.accept().await {
            held.push(sock);
        }
    });
    let policy = PluginPolicy {
        net: NetPolicy::new(&[format!("http://127.0.0.1:{port}")], &[] as &[String]).unwrap(),
        ..quick(400)
    };
    let host = host_with(vec![
        load("http-staller", "http_staller", policy).await,
        load("sleeper", "sleeper", PluginPolicy::default()).await,
    ])
    .await;
    let started = Instant::now();
    let args = format!(r#"{{"url": "http://127.0.0.1:{port}/"}}"#);
    // Either the host's clamped first-byte timeout answers the guest, or the
    // deadline stops it: never the day it asked for.
    match call(&host, "stall", &args).await {
        Ok(ToolOutput::Text { text }) => assert!(text.contains("Timeout"), "{text}"),
        Err(e) => timed_out(e, "http-staller"),
        Ok(other) => panic!("unexpected {other:?}"),
    }
    within_hang_bound(started);
    still_serves(&host).await;
    hold.abort();
}

// ---- C3: everything a guest hands the host is bounded ---------------------

async fn load_err(name: &str, file: &str, policy: PluginPolicy) -> String {
    match sandbox()
        .plugin_file(name, wasm(file))
        .policy(policy)
        .load()
        .await
    {
        Err(LoadError::Tools { plugin, source }) => {
            assert_eq!(plugin, name);
            report(&source)
        }
        Err(other) => panic!("expected a bad tool list, got {other:?}"),
        Ok(_) => panic!("{name} loaded"),
    }
}

#[tokio::test]
async fn c3_a_million_tools_are_refused_naming_the_bound() {
    let started = Instant::now();
    assert_eq!(
        // Memory enough to build the list: the count is what is refused.
        load_err(
            "many-tools",
            "many_tools",
            PluginPolicy {
                memory_bytes: 1 << 30,
                ..PluginPolicy::default()
            }
        )
        .await,
        "it lists 1000000 tools; the limit is 256 (max_tools)"
    );
    within_hang_bound(started);
}

#[tokio::test]
async fn c3_a_huge_description_or_schema_is_refused_naming_the_bound() {
    assert_eq!(
        load_err(
            "huge-description",
            "huge_description",
            PluginPolicy {
                memory_bytes: 256 << 20,
                ..PluginPolicy::default()
            }
        )
        .await,
        "the description of `big` is 52428800 bytes; the limit is 16384 (max_description_bytes)"
    );
    assert_eq!(
        load_err("huge-schema", "huge_schema", PluginPolicy::default()).await,
        format!(
            "the parameters schema of `big` is {} bytes; the limit is 65536 (max_schema_bytes)",
            (1 << 20) + r#"{"type":"object","description":""}"#.len()
        )
    );
    // Raised bounds let the same plugin in.
    let policy = PluginPolicy {
        bounds: GuestBounds {
            max_schema_bytes: 2 << 20,
            ..GuestBounds::default()
        },
        ..PluginPolicy::default()
    };
    let plugin = sandbox()
        .plugin_file("huge-schema", wasm("huge_schema"))
        .policy(policy)
        .load()
        .await
        .unwrap();
    assert_eq!(plugin.tools().len(), 1);
}

// ---- C9: a schema's validation cost is bounded at load --------------------

/// A policy granting `schema-bomb` the directory (kept while the returned
/// handle lives) whose `/bomb/spec` says which schema it lists.
fn bomb_spec(spec: &str) -> (tempfile::TempDir, PluginPolicy) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("spec"), spec).unwrap();
    let policy = PluginPolicy {
        dirs: vec![DirGrant {
            host: dir.path().to_owned(),
            guest: "/bomb".into(),
            mode: DirMode::ReadOnly,
        }],
        ..PluginPolicy::default()
    };
    (dir, policy)
}

#[tokio::test]
async fn c9_schemas_of_exponential_cost_are_refused_at_load_at_every_depth() {
    for kind in ["params", "output"] {
        for depth in [20, 28, 30, 40, 60] {
            let (_dir, policy) = bomb_spec(&format!("{kind} {depth}"));
            let which = if kind == "params" {
                "parameters"
            } else {
                "output"
            };
            let err = load_err("schema-bomb", "schema_bomb", policy).await;
            assert!(
                err.starts_with(&format!(
                    "the {which} schema of `bomb` does not compile: validating against it cannot be bounded: \
                     the schema expands to more than 20000 subschemas"
                )),
                "{kind} {depth}: {err}"
            );
        }
    }
    // Other plugins are served as before.
    let host = sleeper(PluginPolicy::default()).await;
    still_serves(&host).await;
}

#[tokio::test]
async fn c9_patterns_that_compile_to_megabytes_are_refused_at_load_naming_them() {
    let cases = [
        // One pattern of 11 MB compiled.
        (
            "regex 200",
            r#"pattern "\\w{200}" needs more than the 1048576 bytes"#,
        ),
        // 1,200 distinct patterns in one schema of under 64 KiB.
        ("regexes 1200", r#"pattern "\\w{1000}" needs more than"#),
        // Tools each within the bound of one schema, not together.
        ("spread 256", "bytes it may take once compiled"),
    ];
    for (spec, expected) in cases {
        let (_dir, policy) = bomb_spec(spec);
        let started = Instant::now();
        let err = load_err("schema-bomb", "schema_bomb", policy).await;
        within_hang_bound(started);
        assert!(
            err.contains("does not compile: validating against it cannot be bounded: "),
            "{spec}: {err}"
        );
        assert!(err.contains(expected), "{spec}: {err}");
        if spec.starts_with("spread") {
            // The first tools fit: the plugin's budget ran out on a later one.
            assert!(
                !err.starts_with("the parameters schema of `bomb0`"),
                "{err}"
            );
        }
    }
    let host = sleeper(PluginPolicy::default()).await;
    still_serves(&host).await;
}

/// Memory enough for the guest to build what it hands over, so that the
/// host's bound, not the guest's memory, is what stops it.
fn roomy() -> PluginPolicy {
    PluginPolicy {
        memory_bytes: 512 << 20,
        ..PluginPolicy::default()
    }
}

/// What the guest's trap said, when `result` is one.
fn trapped(result: Result<ToolOutput, ToolError>) -> String {
    match result {
        Err(ToolError::Sandbox {
            fault: SandboxFault::Trap(why),
            ..
        }) => why,
        other => panic!("expected a trap, got {other:?}"),
    }
}

/// The message of the tool's own failure, when `result` is one.
fn failed(result: Result<ToolOutput, ToolError>) -> String {
    match result {
        Err(ToolError::Failed { message, .. }) => message,
        other => panic!("expected the tool's failure, got {other:?}"),
    }
}

fn limit_exceeded(err: ToolError, plugin: &str) -> String {
    match err {
        ToolError::Sandbox {
            plugin: p,
            fault: SandboxFault::LimitExceeded(what),
        } => {
            assert_eq!(p, plugin);
            what
        }
        other => panic!("expected a limit of `{plugin}`, got {other:?}"),
    }
}

#[tokio::test]
async fn c3_error_messages_past_the_bound_are_refused() {
    let host = host_with(vec![
        load("long-error", "long_error", roomy()).await,
        load("sleeper", "sleeper", PluginPolicy::default()).await,
    ])
    .await;
    for tool in ["long_failure", "long_path"] {
        let what = limit_exceeded(call(&host, tool, "{}").await.unwrap_err(), "long-error");
        assert!(
            what.starts_with("message limit of 16384 bytes (an error message of"),
            "{what}"
        );
    }
    assert_eq!(
        call(&host, "short_failure", "{}").await.unwrap_err(),
        ToolError::failed("a short, honest failure")
    );
    still_serves(&host).await;
}

#[tokio::test]
async fn c3_a_rejection_reason_past_the_bound_still_refuses_the_call() {
    let host = host_with(vec![
        load("long-reason", "long_reason", PluginPolicy::default()).await,
        load("sleeper", "sleeper", PluginPolicy::default()).await,
    ])
    .await;
    let rejected = |err: ToolError| match err {
        ToolError::Rejected { hook, reason } => {
            assert_eq!(hook, "long-reason");
            reason
        }
        other => panic!("expected a refusal, got {other:?}"),
    };
    assert_eq!(
        rejected(call(&host, "refuse_long", "{}").await.unwrap_err()),
        "extension `long-reason` failed, so the call is refused: plugin `long-reason` exceeded its limit: message limit of 16384 bytes (a rejection reason of 52428800 bytes)"
    );
    assert_eq!(
        rejected(call(&host, "refuse_short", "{}").await.unwrap_err()),
        "not this one"
    );
    assert_eq!(
        call(&host, "allowed", "{}").await.unwrap(),
        ToolOutput::text("ran")
    );
    still_serves(&host).await;
}

#[tokio::test]
async fn c3_a_huge_system_prompt_is_left_out() {
    let log = capture_log();
    let host = host_with(vec![
        load("huge-prompt", "huge_prompt", PluginPolicy::default()).await,
        load("sleeper", "sleeper", PluginPolicy::default()).await,
    ])
    .await;
    let prompt = host.system_prompt().await;
    assert!(
        prompt.len() < 1 << 20,
        "the prompt is {} bytes",
        prompt.len()
    );
    assert!(
        log.text()
            .contains("message limit of 16384 bytes (the system prompt of 52428800 bytes)"),
        "{}",
        log.text()
    );
    still_serves(&host).await;
}

#[tokio::test]
async fn c3_the_log_is_bounded_per_record_and_per_call() {
    let log = capture_log();
    let host = host_with(vec![
        load("log-bomb", "log_bomb", PluginPolicy::default()).await,
        load("sleeper", "sleeper", PluginPolicy::default()).await,
    ])
    .await;
    let what = limit_exceeded(
        call(&host, "wide_record", "{}").await.unwrap_err(),
        "log-bomb",
    );
    assert_eq!(
        what,
        format!(
            "log record limit of 8192 bytes (a record of {} bytes)",
            "wide".len() + 16 * (1 << 20) + (0..16).map(|i| format!("f{i}").len()).sum::<usize>()
        )
    );
    let what = limit_exceeded(
        call(&host, "long_message", "{}").await.unwrap_err(),
        "log-bomb",
    );
    assert!(what.starts_with("log record limit of 8192 bytes"), "{what}");
    let what = limit_exceeded(
        call(&host, "many_records", "{}").await.unwrap_err(),
        "log-bomb",
    );
    assert_eq!(what, "log limit of 262144 bytes per call");
    assert_eq!(
        call(&host, "polite", "{}").await.unwrap(),
        ToolOutput::text("logged politely")
    );
    let text = log.text();
    assert!(text.contains("line 9"), "{text}");
    assert!(
        text.len() < 1 << 20,
        "the host's log grew to {} bytes",
        text.len()
    );
    still_serves(&host).await;
}

#[tokio::test]
async fn c3_six_hundred_thousand_empty_blocks_are_refused() {
    let host = host_with(vec![
        load("output-bomb", "output_bomb", roomy()).await,
        load("sleeper", "sleeper", PluginPolicy::default()).await,
    ])
    .await;
    match call(&host, "empty_blocks", "{}").await.unwrap_err() {
        ToolError::Sandbox {
            plugin,
            fault: SandboxFault::InvalidOutput(why),
        } => {
            assert_eq!(plugin, "output-bomb");
            assert_eq!(
                why,
                "the result is 19200000 bytes (600000 content blocks); the limit is 16777216 bytes"
            );
        }
        other => panic!("expected an invalid output, got {other:?}"),
    }
    assert!(call(&host, "few_blocks", "{}").await.is_ok());
    // More than the engine copies out of a guest in one call: a limit too.
    match call(&host, "million_blocks", "{}").await.unwrap_err() {
        ToolError::Sandbox {
            plugin,
            fault: SandboxFault::LimitExceeded(what),
        } => {
            assert_eq!(plugin, "output-bomb");
            assert_eq!(
                what,
                "data limit of one host call (128 MiB as the engine counts it)"
            );
        }
        other => panic!("expected a limit, got {other:?}"),
    }
    still_serves(&host).await;
}

// ---- C4: host resources a guest can hold are bounded ----------------------

fn granted(dir: &Path, max_instances: usize) -> PluginPolicy {
    PluginPolicy {
        dirs: vec![DirGrant {
            host: dir.to_owned(),
            guest: "/data".into(),
            mode: DirMode::ReadWrite,
        }],
        max_instances,
        ..PluginPolicy::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c4_a_plugin_hoarding_files_never_starves_another() {
    let a_dir = tempfile::tempdir().unwrap();
    let b_dir = tempfile::tempdir().unwrap();
    let hoarder = load("hoarder", "fd_hoarder", granted(a_dir.path(), 4)).await;
    let victim = load("victim", "fd_hoarder", granted(b_dir.path(), 1)).await;
    let hoarder_host = host_with(vec![hoarder]).await;
    let victim_host = host_with(vec![victim]).await;
    // Four instances of the hoarder open 200 files each and hold them.
    let hoards: Vec<_> = (0..4)
        .map(|_| {
            let host = hoarder_host.clone();
            tokio::spawn(async move {
                call(
                    &host,
                    "hoard",
                    r#"{"dir": "/data", "max": 200, "hold_ms": 1500}"#,
                )
                .await
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(500)).await;
    // Meanwhile the other plugin opens and reads a file.
    assert_eq!(
        call(&victim_host, "read_one", r#"{"dir": "/data"}"#)
            .await
            .unwrap(),
        ToolOutput::text("readable")
    );
    for h in hoards {
        assert_eq!(
            h.await.unwrap().unwrap(),
            ToolOutput::text("held 200 files; then: no error")
        );
    }
    // One that opens until refused is stopped at its handle bound, naming it.
    let err = call(
        &hoarder_host,
        "hoard",
        r#"{"dir": "/data", "max": 1000000, "hold_ms": 0}"#,
    )
    .await
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "plugin `hoarder` exceeded its limit: handle limit of 256 per instance (max_handles)"
    );
    assert_eq!(
        call(&victim_host, "read_one", r#"{"dir": "/data"}"#)
            .await
            .unwrap(),
        ToolOutput::text("readable")
    );
}

/// `handle-hoarder` beside the sleeper, whose `fine` shows the host still
/// serves.
async fn handle_hoarder() -> ToolHost {
    host_with(vec![
        load("handle-hoarder", "handle_hoarder", PluginPolicy::default()).await,
        load("sleeper", "sleeper", PluginPolicy::default()).await,
    ])
    .await
}

#[tokio::test]
async fn c4_a_million_pollables_hit_the_handle_bound() {
    let host = handle_hoarder().await;
    let what = limit_exceeded(
        call(&host, "pollables", "{}").await.unwrap_err(),
        "handle-hoarder",
    );
    assert_eq!(what, "handle limit of 256 per instance (max_handles)");
    still_serves(&host).await;
}

#[tokio::test]
async fn c3_a_poll_list_longer_than_the_handle_limit_is_refused_before_it_is_read() {
    let host = handle_hoarder().await;
    // Lifted whole, the list would be a host vector of two million
    // handles, however little of the guest's memory it takes.
    let what = limit_exceeded(
        call(&host, "poll_flood", "{}").await.unwrap_err(),
        "handle-hoarder",
    );
    assert_eq!(
        what,
        "poll of 2097152 pollables, more than the 256 handles an instance may hold (max_handles)"
    );
    // A poll of a real list still waits, and ends at the deadline
    // (`poll_many` in `c1_a_guest_asleep_in_a_host_call_stops_at_its_deadline`).
    still_serves(&host).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c4_outgoing_requests_in_flight_are_bounded() {
    // Each response waits until 64 requests are in flight (or 2 s pass).
    let server = text_server("ok", 64).await;
    let policy = PluginPolicy {
        net: NetPolicy::new(
            &[format!("http://127.0.0.1:{}", server.port())],
            &[] as &[String],
        )
        .unwrap(),
        bounds: GuestBounds {
            max_requests: 4,
            ..GuestBounds::default()
        },
        ..PluginPolicy::default()
    };
    let host = host_with(vec![
        load("conn-hoarder", "conn_hoarder", policy).await,
        load("sleeper", "sleeper", PluginPolicy::default()).await,
    ])
    .await;
    let args = format!(
        r#"{{"url": "http://127.0.0.1:{}/", "count": 64}}"#,
        server.port()
    );
    let ToolOutput::Text { text } = call(&host, "many", &args).await.unwrap() else {
        panic!("not text");
    };
    assert_eq!(text, "4 answered, 60 failed, 0 refused at once");
    assert!(server.max_in_flight() <= 4, "{text}");
    still_serves(&host).await;
}

#[tokio::test]
async fn c4_a_plugin_whose_descriptors_cannot_fit_is_refused() {
    let policy = PluginPolicy {
        max_instances: 100_000,
        bounds: GuestBounds {
            max_handles: 1 << 20,
            ..GuestBounds::default()
        },
        ..PluginPolicy::default()
    };
    match sandbox()
        .plugin_file("greedy", wasm("sleeper"))
        .policy(policy)
        .load()
        .await
    {
        Err(LoadError::Policy { plugin, source }) => {
            assert_eq!(plugin, "greedy");
            assert!(
                matches!(&source, PolicyRefusal::OverBudget(over) if over.resource == Resource::Descriptors),
                "{source:?}"
            );
            let reason = source.to_string();
            assert!(reason.contains("file descriptors"), "{reason}");
            assert!(reason.contains("ulimit -n"), "{reason}");
        }
        Err(other) => panic!("expected a policy error, got {other}"),
        Ok(_) => panic!("loaded"),
    }
    still_serves(&sleeper(PluginPolicy::default()).await).await;
}

/// A call of `tool` with no arguments for `tenant`, as a task can own it.
fn tenant_call(
    host: &ToolHost,
    tenant: &'static str,
    tool: &'static str,
) -> impl Future<Output = Result<ToolOutput, ToolError>> + Send + 'static {
    let host = host.clone();
    async move {
        host.invoke_tool(
            toolhost::CallContext::new().with_tenant(tenant),
            tool,
            toolhost::Arguments::parse("{}").unwrap(),
        )
        .await
    }
}

/// `n` calls of tenant `greedy` to the sleeper's `sleep` (30 s each), as
/// tasks the test aborts when done.
fn greedy_sleepers(
    host: &ToolHost,
    n: usize,
) -> Vec<tokio::task::JoinHandle<Result<ToolOutput, ToolError>>> {
    (0..n)
        .map(|_| tokio::spawn(tenant_call(host, "greedy", "sleep")))
        .collect()
}

/// Another tenant's call of the sleeper's `fine` is served within 10 s:
/// queued behind the sleepers (30 s), its time would run out.
async fn polite_is_served(host: &ToolHost) {
    let polite = host
        .invoke_tool(
            toolhost::CallContext::new()
                .with_tenant("polite")
                .with_timeout(Duration::from_secs(10)),
            "fine",
            toolhost::Arguments::parse("{}").unwrap(),
        )
        .await;
    assert_eq!(polite.unwrap(), ToolOutput::text("still here"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a3_a_plugin_in_flight_quota_keeps_an_instance_free_for_other_tenants() {
    use toolhost::quota::{QuotaKind, QuotaLimits, Quotas};

    // Four instances (the default), three of them at most per tenant.
    let host = toolhost::ToolHost::builder()
        .quotas(std::sync::Arc::new(
            Quotas::new().plugin("sleeper", QuotaLimits::NONE.in_flight(3)),
        ))
        .build();
    // Its calls may run a minute: the sleepers hold their instances for the
    // 30 s they sleep.
    let sleeper = load("sleeper", "sleeper", quick(60_000)).await;
    host.register_extension(sleeper.into_extension())
        .await
        .unwrap();
    // Tenant `greedy` takes every instance it may: three calls that sleep.
    let held = greedy_sleepers(&host, 3);
    let started = Instant::now();
    while host.quota_check("greedy", "sleep").is_none() {
        assert!(
            started.elapsed() < HANG,
            "the three calls were never admitted"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // A fourth is refused at once, and another tenant is served by the
    // instance left free, not queued behind the sleepers.
    let refused = tenant_call(&host, "greedy", "sleep").await.unwrap_err();
    assert!(
        matches!(
            refused,
            ToolError::OverQuota {
                quota: QuotaKind::InFlight,
                ..
            }
        ),
        "{refused:?}"
    );
    polite_is_served(&host).await;
    for h in held {
        h.abort();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a3_on_a_host_with_tenants_no_tenant_holds_every_instance_of_a_plugin() {
    use toolhost::metrics::Metrics;

    // No quota at all: the sandbox itself keeps the last of the four
    // instances for another tenant, as a host with tenants has it.
    let metrics = Metrics::new();
    let host = ToolHost::builder().metrics(metrics.clone()).build();
    let policy = PluginPolicy {
        shared_by_tenants: true,
        ..quick(60_000)
    };
    let sleeper = load("sleeper", "sleeper", policy).await;
    host.register_extension(sleeper.into_extension())
        .await
        .unwrap();
    // Tenant `greedy` asks for more instances than there are, each call
    // sleeping 30 s: three run, the others wait.
    let held = greedy_sleepers(&host, 6);
    let in_use = || {
        metrics
            .encode_text()
            .lines()
            .find_map(|l| l.strip_prefix(r#"toolhost_instances_in_use{plugin="sleeper"} "#))
            .and_then(|n| n.parse::<u32>().ok())
            .unwrap_or(0)
    };
    let started = Instant::now();
    while in_use() < 3 {
        assert!(started.elapsed() < HANG, "three calls never ran");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Served by the fourth instance, which greedy's calls may not have.
    polite_is_served(&host).await;
    assert_eq!(in_use(), 3, "greedy took the kept instance");
    for h in held {
        h.abort();
    }
}

// ---- C11: what a request's head holds in the host is bounded --------------

async fn request_hoarder() -> ToolHost {
    host_with(vec![
        load(
            "request-hoarder",
            "request_hoarder",
            PluginPolicy::default(),
        )
        .await,
        load("sleeper", "sleeper", PluginPolicy::default()).await,
    ])
    .await
}

#[tokio::test]
async fn c11_a_request_head_past_its_bounds_is_refused_to_the_guest() {
    let host = request_hoarder().await;
    let text = |out: Result<ToolOutput, ToolError>| match out.unwrap() {
        ToolOutput::Text { text } => text,
        other => panic!("not text: {other:?}"),
    };
    for (tool, bytes, answer) in [
        // 200 requests each parking a 1 MiB authority would hold 200 MiB
        // in the host: every one is refused, and the guest carries on.
        ("authority", 1 << 20, "accepted 0 of 200"),
        ("authority", 4097, "accepted 0 of 200"),
        // Up to the bound, an authority is the guest's to set.
        ("authority", 4096, "accepted 200 of 200"),
        ("method", 1 << 20, "method accepted: false"),
        ("method", 64, "method accepted: true"),
        ("header", 32 << 10, "header accepted: true"),
    ] {
        let args = format!(r#"{{"bytes": {bytes}}}"#);
        assert_eq!(
            text(call(&host, tool, &args).await),
            answer,
            "{tool} {bytes}"
        );
    }
    // Header fields past 64 KiB fail the call (wasmtime-wasi-http traps).
    let why = trapped(call(&host, "header", r#"{"bytes": 1048576}"#).await);
    assert!(why.ends_with("total size of fields exceeds limit"), "{why}");
    still_serves(&host).await;
}

#[tokio::test]
async fn c3_a_header_list_longer_than_the_header_limit_is_refused_before_it_is_read() {
    let host = request_hoarder().await;
    // Within the limit, lists are wasmtime-wasi-http's to take.
    for (tool, answer) in [
        ("from_list", "from-list accepted: true"),
        ("set_values", "set accepted: true"),
    ] {
        let out = call(&host, tool, r#"{"entries": 1000}"#).await.unwrap();
        assert_eq!(out, ToolOutput::text(answer));
    }
    // 200,000 empty entries: 3 MB in the guest, many times that lifted
    // into the host, for a header map that holds 64 KiB.
    for (tool, function) in [("from_list", "from-list"), ("set_values", "set")] {
        let what = limit_exceeded(
            call(&host, tool, r#"{"entries": 200000}"#)
                .await
                .unwrap_err(),
            "request-hoarder",
        );
        assert_eq!(
            what,
            format!(
                "fields.{function} of 200000 entries, more than a header map of at most 65536 bytes can hold"
            )
        );
    }
    still_serves(&host).await;
}

#[tokio::test]
async fn c3_requests_refused_in_a_loop_leave_a_bounded_message_and_log() {
    let host = request_hoarder().await;
    let log = capture_log();
    let message = failed(call(&host, "flood", r#"{"times": 2000, "host_bytes": 4000}"#).await);
    assert!(
        message.starts_with("2000 requests refused (host refused: "),
        "{message}"
    );
    assert!(message.ends_with("; and 1992 more)"), "{message}");
    // Eight reasons of at most 512 bytes, not 2,000 of 4 KiB.
    assert!(message.len() < 8 << 10, "{} bytes", message.len());
    let logged = log.text();
    assert_eq!(
        logged.matches("outgoing request denied").count(),
        8,
        "{logged}"
    );
    assert!(logged.len() < 32 << 10, "{} bytes logged", logged.len());
    still_serves(&host).await;
}

#[tokio::test]
async fn c4_requests_dropped_as_their_lookups_start_give_every_lookup_slot_back() {
    // `localhost` is granted by name, its loopback addresses are not: each
    // request is looked up, then refused. Two requests in flight, so two
    // name lookups in flight; 500 requests dropped as their lookups start
    // leave none held once the resolver has answered them, or the last
    // request would wait for a slot until its call's deadline. (That a
    // lookup the resolver has not answered keeps its slot, however long,
    // is pinned in host/net/src/lookup.rs, where a resolver can be made to
    // stall.)
    let mut policy = PluginPolicy {
        net: NetPolicy::new(["localhost"], &[] as &[&str]).unwrap(),
        ..PluginPolicy::default()
    };
    policy.bounds.max_requests = 2;
    let host = host_with(vec![
        load("request-hoarder", "request_hoarder", policy).await,
        load("sleeper", "sleeper", PluginPolicy::default()).await,
    ])
    .await;
    let out = call(&host, "abandon", r#"{"times": 500, "host": "localhost"}"#).await;
    assert_eq!(out.unwrap(), ToolOutput::text("500 requests dropped"));
    let message = failed(call(&host, "flood", r#"{"times": 1, "host": "localhost"}"#).await);
    assert!(
        message.contains("a loopback address that is not granted"),
        "looked up and refused by address: {message}"
    );
    still_serves(&host).await;
}

// ---- C5: the host's own state is outside every grant ---------------------

fn grant_of(dir: &Path) -> PluginPolicy {
    granted(dir, 1)
}

#[tokio::test]
async fn c5_a_grant_over_the_cache_is_refused_naming_both_paths() {
    let root = tempfile::tempdir().unwrap();
    let cache = root.path().join("cache");
    let sandbox = Sandbox::new(Some(cache.clone())).unwrap();
    for (granted_dir, what) in [
        (root.path().to_owned(), "the compiled-code cache"),
        (cache.clone(), "the compiled-code cache"),
    ] {
        match sandbox
            .plugin_file("thief", wasm("escape"))
            .policy(grant_of(&granted_dir))
            .load()
            .await
        {
            Err(LoadError::Policy { plugin, source }) => {
                assert_eq!(plugin, "thief");
                assert!(matches!(source, PolicyRefusal::Overlap(_)), "{source:?}");
                let reason = source.to_string();
                assert!(
                    reason.contains(&granted_dir.display().to_string()),
                    "{reason}"
                );
                assert!(reason.contains(what), "{reason}");
            }
            Err(other) => panic!("expected a policy error, got {other}"),
            Ok(_) => panic!("a grant over the cache was accepted"),
        }
    }
    // A directory beside the cache is fine.
    let beside = root.path().join("data");
    std::fs::create_dir(&beside).unwrap();
    sandbox
        .plugin_file("neighbour", wasm("escape"))
        .policy(grant_of(&beside))
        .load()
        .await
        .unwrap();
}

#[tokio::test]
async fn c5_a_grant_over_a_plugins_wasm_or_a_protected_file_is_refused() {
    let root = tempfile::tempdir().unwrap();
    let plugins = root.path().join("plugins");
    std::fs::create_dir(&plugins).unwrap();
    let victim_wasm = plugins.join("victim.wasm");
    std::fs::copy(wasm("sleeper"), &victim_wasm).unwrap();
    let sandbox = Sandbox::new(None).unwrap();
    sandbox
        .plugin_file("victim", &victim_wasm)
        .load()
        .await
        .unwrap();
    let err = sandbox
        .plugin_file("attacker", wasm("escape"))
        .policy(grant_of(&plugins))
        .load()
        .await
        .err()
        .unwrap();
    let text = report(&err);
    assert!(text.contains("the wasm of plugin `victim`"), "{text}");
    // An embedder's own state, protected by name.
    let store = root.path().join("artifacts");
    std::fs::create_dir(&store).unwrap();
    sandbox.protect(&store, "the artifact store");
    let err = sandbox
        .plugin_file("attacker", wasm("escape"))
        .policy(grant_of(root.path()))
        .load()
        .await
        .err()
        .unwrap();
    let text = report(&err);
    assert!(text.contains("granted directory"), "{text}");
}

#[tokio::test]
async fn c5_a_swapped_cache_entry_runs_the_victims_own_code() {
    let root = tempfile::tempdir().unwrap();
    let cache = root.path().join("cache");
    {
        let sandbox = Sandbox::new(Some(cache.clone())).unwrap();
        sandbox
            .plugin_file("attacker", wasm("runaway"))
            .load()
            .await
            .unwrap();
        sandbox
            .plugin_file("victim", wasm("sleeper"))
            .load()
            .await
            .unwrap();
    }
    // Someone who can write the cache copies the attacker's compiled code
    // over the victim's entry.
    let digest = |name: &str| {
        use sha2::Digest;
        let bytes = std::fs::read(wasm(name)).unwrap();
        sha2::Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    };
    // The directory of whole-component entries (beside it: the tool
    // lists and the per-function entries).
    let engine_dir = std::fs::read_dir(&cache)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.join(format!("{}.cwasm", digest("runaway"))).is_file())
        .unwrap();
    std::fs::copy(
        engine_dir.join(format!("{}.cwasm", digest("runaway"))),
        engine_dir.join(format!("{}.cwasm", digest("sleeper"))),
    )
    .unwrap();
    let sandbox = Sandbox::new(Some(cache)).unwrap();
    let victim = sandbox
        .plugin_file("victim", wasm("sleeper"))
        .load()
        .await
        .unwrap();
    assert_eq!(
        victim.code_source(),
        toolhost::sandbox::CodeSource::Compiled
    );
    let names: Vec<&str> = victim.tools().iter().map(|t| t.name.as_str()).collect();
    assert!(names.contains(&"pollable"), "{names:?}");
    assert!(!names.contains(&"spin"), "{names:?}");
}

#[cfg(unix)]
#[tokio::test]
async fn c5_a_cache_others_can_write_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let root = tempfile::tempdir().unwrap();
    let cache = root.path().join("cache");
    std::fs::create_dir(&cache).unwrap();
    std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o777)).unwrap();
    match Sandbox::new(Some(cache.clone())) {
        Err(LoadError::Cache(e)) => {
            let text = e.to_string();
            assert!(text.contains(&cache.display().to_string()), "{text}");
            assert!(text.contains("other users"), "{text}");
        }
        Err(other) => panic!("expected a cache error, got {other}"),
        Ok(_) => panic!("a world-writable cache was accepted"),
    }
}

/// Loaded plugins keep their descriptor reservation only while alive.
#[tokio::test]
async fn c4_unloaded_plugins_give_their_descriptors_back() {
    // Each of these reserves about a quarter of what plugins may hold;
    // loading and dropping them one after another must never run out.
    let limit = rustix_limit();
    let per = (limit / 4 / 16).max(1) as usize;
    let policy = PluginPolicy {
        max_instances: 16,
        bounds: GuestBounds {
            max_handles: per.max(16),
            ..GuestBounds::default()
        },
        ..PluginPolicy::default()
    };
    for _ in 0..8 {
        let p: LoadedPlugin = sandbox()
            .plugin_file("big-share", wasm("sleeper"))
            .policy(policy.clone())
            .load()
            .await
            .unwrap();
        drop(p);
    }
}

fn rustix_limit() -> u64 {
    let out = std::process::Command::new("sh")
        .args(["-c", "ulimit -n"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or(1024)
}

#[tokio::test]
async fn c3_a_host_call_asking_for_a_terabyte_fails_that_call_only() {
    let host = host_with(vec![
        load("random-hog", "random_hog", PluginPolicy::default()).await,
        load("sleeper", "sleeper", PluginPolicy::default()).await,
    ])
    .await;
    for tool in ["random", "insecure"] {
        let err = call(&host, tool, "{}").await.unwrap_err();
        match &err {
            ToolError::Sandbox {
                plugin,
                fault: SandboxFault::Trap(why),
            } => {
                assert_eq!(plugin, "random-hog");
                assert!(why.contains("exceeds limit"), "{why}");
            }
            other => panic!("expected a trap, got {other:?}"),
        }
    }
    // One host call hands over at most 64 KiB of random bytes: made in one
    // go on the async worker, where no deadline interrupts it.
    assert_eq!(
        call(&host, "random_bytes", r#"{"bytes": 65536}"#)
            .await
            .unwrap(),
        ToolOutput::text("got 65536 bytes")
    );
    let why = trapped(call(&host, "random_bytes", r#"{"bytes": 65537}"#).await);
    assert!(why.contains("exceeds limit 65536"), "{why}");
    // Reading 2^63 bytes of an empty stdin ends at once.
    let ToolOutput::Text { text } = call(&host, "stdin", "{}").await.unwrap() else {
        panic!("not text");
    };
    assert!(text.starts_with("read "), "{text}");
    still_serves(&host).await;
}

//! Rule C11: host memory that a guest handle can pin is bounded per
//! instance and given back when the call ends.
//!
//! The hostile plugin `dir-hoarder` (tests/plugins) opens as many
//! directory listings on a granted directory of 100,000 entries as the host
//! allows and holds them; four of its calls run at once while the test
//! samples the process's resident memory. Build it first:
//! `cd tests/plugins && cargo build --release --target wasm32-wasip2`.
//!
//! The tests of this file share the process's memory, so they run one at a
//! time (a lock), and each measures from its own start.

#![cfg(target_os = "linux")]

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use toolhost_core::error::{SandboxFault, ToolError};
use toolhost_core::output::ToolOutput;
use toolhost_core::tool::{Arguments, CallContext};
use toolhost_sandbox::testing::wasm;
use toolhost_sandbox::{DirGrant, DirMode, LoadedPlugin, PluginPolicy, Sandbox};

/// Entries in the granted directory.
const ENTRIES: usize = 100_000;

/// Listings each call holds: nearly all of an instance's 256 handles (a
/// few are the store's own).
const STREAMS: u32 = 240;

/// The bound of the first test: what four instances holding 240 listings
/// each may add to the host's resident memory. Each listing is charged
/// 32 KiB, so the listings of four instances hold at most 30 MiB; the
/// instances' own memory (a few MiB each, touched) and the runtime's
/// blocking threads come on top. Before listings were bounded, each held
/// the whole directory (about 14 MB here): four calls would hold 13 GB.
const MAX_GROWTH: u64 = 96 << 20;

/// What may stay resident after the calls, over the start.
const MAX_RETAINED: u64 = 32 << 20;

/// Long enough for 100,000 entries on a loaded machine; only a hang
/// reaches it.
const TIMEOUT: Duration = Duration::from_secs(120);

/// One test at a time: they measure the same process.
async fn serial() -> tokio::sync::MutexGuard<'static, ()> {
    static LOCK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    LOCK.lock().await
}

/// A directory of [`ENTRIES`] empty files with 100-byte names, made once
/// for the test binary.
fn huge_dir() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let pad = "x".repeat(90);
        for i in 0..ENTRIES {
            std::fs::File::create(dir.path().join(format!("{i:08}-{pad}"))).unwrap();
        }
        dir
    })
    .path()
}

/// The process's resident set, in bytes.
fn rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kb << 10
}

/// Samples [`rss`] every few milliseconds until dropped; the peak seen.
struct PeakRss {
    peak: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl PeakRss {
    fn start() -> Self {
        let peak = Arc::new(AtomicU64::new(rss()));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (peak, stop) = (peak.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    peak.fetch_max(rss(), Ordering::Relaxed);
                    std::thread::sleep(Duration::from_millis(5));
                }
            })
        };
        Self {
            peak,
            stop,
            thread: Some(thread),
        }
    }

    fn finish(mut self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            t.join().unwrap();
        }
        self.peak.load(Ordering::Relaxed).max(rss())
    }
}

async fn load(policy: PluginPolicy) -> LoadedPlugin {
    let sandbox = Sandbox::new(None).unwrap();
    sandbox
        .plugin_file("dir-hoarder", wasm("dir_hoarder"))
        .policy(policy)
        .load()
        .await
        .unwrap_or_else(|e| panic!("loading dir-hoarder: {}", toolhost_core::report(&e)))
}

fn policy(dir: &Path) -> PluginPolicy {
    PluginPolicy {
        dirs: vec![DirGrant {
            host: dir.to_owned(),
            guest: "/data".into(),
            mode: DirMode::ReadOnly,
        }],
        timeout: TIMEOUT,
        max_instances: 4,
        ..PluginPolicy::default()
    }
}

async fn call(plugin: &LoadedPlugin, tool: &str, args: &str) -> Result<ToolOutput, ToolError> {
    let args = Arguments::parse(args).unwrap();
    plugin.call_tool(tool, &CallContext::new(), &args).await
}

/// Four calls at once, each opening [`STREAMS`] listings (until refused),
/// reading one entry of each and holding them all for half a second; their
/// outcomes, and the peak resident memory seen meanwhile.
async fn hoard_four(plugin: &Arc<LoadedPlugin>) -> (Vec<Result<ToolOutput, ToolError>>, u64) {
    let peak = PeakRss::start();
    let args =
        format!(r#"{{"dir": "/data", "streams": {STREAMS}, "read_each": 1, "hold_ms": 500}}"#);
    let calls: Vec<_> = (0..4)
        .map(|_| {
            let (plugin, args) = (plugin.clone(), args.clone());
            tokio::spawn(async move { call(&plugin, "hoard", &args).await })
        })
        .collect();
    let mut outcomes = Vec::new();
    for c in calls {
        outcomes.push(c.await.unwrap());
    }
    (outcomes, peak.finish())
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / f64::from(1 << 20)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c11_four_directory_hoarders_stay_under_the_bound() {
    let _serial = serial().await;
    let dir = huge_dir();
    let plugin = Arc::new(load(policy(dir)).await);
    // A whole listing first: every entry once, and warm code and threads,
    // so the measurement starts from a host that has run the plugin.
    let listed = call(&plugin, "list", r#"{"dir": "/data"}"#).await.unwrap();
    assert_eq!(
        listed,
        ToolOutput::text(format!(
            "{ENTRIES} entries, {ENTRIES} distinct, {} name bytes, 0 directories",
            ENTRIES * 99
        ))
    );
    let before = rss();
    let (outcomes, peak) = hoard_four(&plugin).await;
    for outcome in &outcomes {
        assert_eq!(
            outcome.as_ref().unwrap(),
            &ToolOutput::text(format!(
                "held {STREAMS} listings, read {STREAMS} entries; then: no error"
            ))
        );
    }
    let after = rss();
    eprintln!(
        "c11 four hoarders: before {:.1} MiB, peak {:.1} MiB (+{:.1}), after {:.1} MiB",
        mib(before),
        mib(peak),
        mib(peak.saturating_sub(before)),
        mib(after)
    );
    assert!(
        peak.saturating_sub(before) < MAX_GROWTH,
        "resident memory grew by {:.1} MiB holding listings (bound {:.0} MiB)",
        mib(peak.saturating_sub(before)),
        mib(MAX_GROWTH)
    );
    assert!(
        after.saturating_sub(before) < MAX_RETAINED,
        "{:.1} MiB stayed resident after the calls (bound {:.0} MiB)",
        mib(after.saturating_sub(before)),
        mib(MAX_RETAINED)
    );
    // And the plugin still lists after its hoarding calls.
    assert_eq!(
        call(&plugin, "list", r#"{"dir": "/data"}"#).await.unwrap(),
        listed
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c11_listings_count_against_the_memory_limit_and_fail_naming_it() {
    let _serial = serial().await;
    let dir = huge_dir();
    // 8 MiB of memory: the guest's own (a MiB or two) and fewer than 240
    // listings of 32 KiB, though it has handles for them.
    let plugin = Arc::new(
        load(PluginPolicy {
            memory_bytes: 8 << 20,
            ..policy(dir)
        })
        .await,
    );
    let before = rss();
    let (outcomes, peak) = hoard_four(&plugin).await;
    for outcome in &outcomes {
        match outcome {
            Err(ToolError::Sandbox {
                fault: SandboxFault::LimitExceeded(bound),
                ..
            }) => {
                // Opening a listing is refused, or (if the guest's own
                // memory grows last) growing memory that the listings
                // already hold.
                assert!(
                    bound.starts_with("memory limit of 8 MiB")
                        && (bound.contains("a directory listing needs 32 KiB more")
                            || bound.contains("its handles hold")),
                    "{bound}"
                );
            }
            other => panic!("expected the memory limit, got {other:?}"),
        }
    }
    let after = rss();
    eprintln!(
        "c11 memory limit: before {:.1} MiB, peak {:.1} MiB (+{:.1}), after {:.1} MiB",
        mib(before),
        mib(peak),
        mib(peak.saturating_sub(before)),
        mib(after)
    );
    assert!(peak.saturating_sub(before) < MAX_GROWTH);
    // The limit is per instance and a failed call gives everything back:
    // the next call opens listings again.
    assert_eq!(
        call(&plugin, "churn", r#"{"dir": "/data", "streams": 10}"#)
            .await
            .unwrap(),
        ToolOutput::text("opened and dropped 10 listings")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c11_a_dropped_listing_gives_its_charge_back() {
    let _serial = serial().await;
    let dir = tempfile::tempdir().unwrap();
    for i in 0..100 {
        std::fs::write(dir.path().join(format!("f{i}")), b"").unwrap();
    }
    // Room for few listings at once: opening and dropping many in turn
    // works only if each dropped one gives its charge back.
    let plugin = load(PluginPolicy {
        memory_bytes: 8 << 20,
        ..policy(dir.path())
    })
    .await;
    for _ in 0..3 {
        let out = call(&plugin, "churn", r#"{"dir": "/data", "streams": 2000}"#)
            .await
            .unwrap();
        assert_eq!(out, ToolOutput::text("opened and dropped 2000 listings"));
    }
}

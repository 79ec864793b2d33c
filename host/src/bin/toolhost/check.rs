//! `toolhost check`.

use std::path::Path;

use serde_json::json;
use toolhost::ToolHost;
use toolhost::builtin::BuiltinTool;
use toolhost::config::{Config, describe_policy};
use toolhost::mcp::McpTransport;

use crate::Failure;
use crate::output::outln;

pub(crate) async fn run(path: &Path, as_json: bool) -> Result<(), Failure> {
    let config = crate::load_config(path)?;
    config.check()?;
    // Loading proves more than the file: the digest pins, the component's
    // world and version, its imports, and its tool descriptors.
    let (host, _sandbox) = config.build_host().await?;
    let reported = if as_json {
        report_json(path, &config, &host)
    } else {
        report(path, &config, &host)
    };
    host.shutdown().await;
    reported
}

/// What [`report`] prints, as one JSON document.
fn report_json(path: &Path, config: &Config, host: &ToolHost) -> Result<(), Failure> {
    let mut plugins = Vec::new();
    for name in config.plugins.keys() {
        plugins.push(json!({
            "name": name,
            "wasm": config.wasm_path(name)?,
            "sha256_pinned": config.plugins[name].sha256.is_some(),
            "tools": host.extension_tools(name),
            "grants": describe_policy(&config.policy(name)?),
        }));
    }
    let mut interpreters = Vec::new();
    if let Some(builtin) = config.builtin_config()?
        && let Some(code) = builtin
            .run_code_config()
            .filter(|_| builtin.offers(BuiltinTool::RunCode))
    {
        for (language, wasm) in &code.interpreters {
            interpreters.push(json!({
                "language": language.to_string(),
                "wasm": wasm,
                "grants": describe_policy(&code.policy()),
            }));
        }
    }
    let mut servers = Vec::new();
    for name in config.mcp.keys() {
        let server = config.mcp_server(name)?;
        servers.push(json!({
            "name": name,
            "transport": server.transport.to_string(),
            "tools": host.extension_tools(&format!("mcp.{name}")),
            "timeout_ms": server.timeout.as_millis() as u64,
        }));
    }
    let doc = json!({
        "config": path,
        "ok": true,
        "host": {
            "validate_arguments": config.host.validate_arguments,
            "call_timeout_ms": config.host.call_timeout_ms,
            "cache_dir": config.cache_dir(),
        },
        "plugins": plugins,
        "run_code": interpreters,
        "mcp": servers,
    });
    outln!("{}", serde_json::to_string_pretty(&doc)?)?;
    Ok(())
}

/// Prints what the loaded configuration grants.
fn report(path: &Path, config: &Config, host: &ToolHost) -> Result<(), Failure> {
    outln!("{}: ok", path.display())?;
    outln!(
        "host: arguments {}validated, {} ms per call, compiled code cached in {}",
        if config.host.validate_arguments {
            ""
        } else {
            "not "
        },
        config.host.call_timeout_ms,
        config
            .cache_dir()
            .map_or_else(|| "(nowhere)".into(), |d| d.display().to_string())
    )?;
    for name in config.plugins.keys() {
        let policy = config.policy(name)?;
        let wasm = config.wasm_path(name)?;
        let pinned = if config.plugins[name].sha256.is_some() {
            ", sha256 pinned"
        } else {
            ""
        };
        outln!("\nplugin {name} ({}{pinned})", wasm.display())?;
        let tools = host.extension_tools(name);
        if tools.is_empty() {
            outln!("  tools: none (hooks and prompt only)")?;
        } else {
            outln!("  tools: {}", tools.join(", "))?;
        }
        for line in describe_policy(&policy) {
            outln!("  {line}")?;
        }
    }
    if let Some(builtin) = config.builtin_config()?
        && let Some(code) = builtin
            .run_code_config()
            .filter(|_| builtin.offers(BuiltinTool::RunCode))
    {
        for (language, wasm) in &code.interpreters {
            outln!("\nrun_code {language} interpreter ({})", wasm.display())?;
            for line in describe_policy(&code.policy()) {
                outln!("  {line}")?;
            }
        }
    }
    for name in config.mcp.keys() {
        let server = config.mcp_server(name)?;
        let tools = host.extension_tools(&format!("mcp.{name}"));
        outln!("\nmcp {name} ({})", server.transport)?;
        outln!(
            "  tools: {}",
            if tools.is_empty() {
                "none".to_owned()
            } else {
                tools.join(", ")
            }
        )?;
        outln!(
            "  runs outside the sandbox: it has what its {} has; {} ms per request",
            match server.transport {
                McpTransport::Command { .. } => "process (toolhost's user and environment)",
                McpTransport::Http { .. } => "host",
            },
            server.timeout.as_millis()
        )?;
    }
    Ok(())
}

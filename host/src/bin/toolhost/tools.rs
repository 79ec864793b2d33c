//! `toolhost tools`: every tool a configuration registers, wherever it
//! comes from, with its schemas.

use std::collections::HashMap;
use std::path::Path;

use serde_json::json;
use toolhost::config::{BuildOptions, BuiltHost};

use crate::Failure;
use crate::output::outln;

pub(crate) async fn run(path: &Path, as_json: bool, locked: bool) -> Result<(), Failure> {
    let config = crate::load_config(path)?;
    let BuiltHost {
        host,
        sandbox: _sandbox,
        ..
    } = config
        .build_host_with(BuildOptions::new().locked(locked))
        .await?;
    // Where each tool comes from: the plugin or MCP server that registered
    // it, or the built-in tools' extension.
    let mut source: HashMap<String, String> = HashMap::new();
    for extension in host.extension_names() {
        let from = match extension.strip_prefix("mcp.") {
            Some(server) => format!("mcp server {server}"),
            None if extension == toolhost::builtin::EXTENSION_NAME => "built in".to_owned(),
            None => format!("plugin {extension}"),
        };
        for tool in host.extension_tools(&extension) {
            source.insert(tool, from.clone());
        }
    }
    let specs = host.tool_specs();
    host.shutdown().await;
    // The host's own tools (artifact_read) belong to no extension.
    let from = |name: &str| {
        source
            .get(name)
            .map_or("the host", String::as_str)
            .to_owned()
    };
    if as_json {
        let doc: Vec<_> = specs
            .iter()
            .map(|s| {
                json!({
                    "name": s.name,
                    "from": from(&s.name),
                    "description": s.description,
                    "parameters": s.parameters,
                    "output_schema": s.output_schema,
                    "concurrency_safe": s.concurrency_safe,
                    "idempotent": s.idempotent,
                    "hints": {
                        "read_only": s.hints.read_only,
                        "destructive": s.hints.destructive,
                        "open_world": s.hints.open_world,
                    },
                })
            })
            .collect();
        outln!("{}", serde_json::to_string_pretty(&doc)?)?;
        return Ok(());
    }
    for spec in &specs {
        outln!(
            "{} ({}) — {}",
            spec.name,
            from(&spec.name),
            spec.description
        )?;
        outln!("  arguments: {}", spec.parameters)?;
        let hints = describe_hints(spec.hints);
        if !hints.is_empty() {
            outln!("  declares: {}", hints.join(", "))?;
        }
        if let Some(output) = &spec.output_schema {
            outln!("  result: {output}")?;
        }
    }
    Ok(())
}

/// What a tool declares about its effects, in the words of MCP's tool
/// annotations: `readOnlyHint`, `destructiveHint: false`, ...
fn describe_hints(hints: toolhost::tool::ToolHints) -> Vec<String> {
    [
        ("readOnlyHint", hints.read_only),
        ("destructiveHint", hints.destructive),
        ("openWorldHint", hints.open_world),
    ]
    .into_iter()
    .filter_map(|(name, value)| match value? {
        true => Some(name.to_owned()),
        false => Some(format!("{name}: false")),
    })
    .collect()
}

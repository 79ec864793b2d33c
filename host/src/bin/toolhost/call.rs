//! `toolhost call`.

use std::io::Read as _;
use std::path::Path;

use serde_json::json;
use toolhost::{Arguments, CallContext, ToolError};

use toolhost::config::{BuildOptions, BuiltHost};

use crate::Failure;
use crate::approve::{TerminalApprover, Turn};
use crate::elicit::TerminalElicitor;
use crate::output::outln;
use crate::trace::CallTrace;

pub(crate) async fn run(
    config: &Path,
    tool: &str,
    args: Option<&str>,
    as_json: bool,
    locked: bool,
    trace: bool,
) -> Result<(), Failure> {
    let text = match args {
        Some("-") => {
            let mut s = String::new();
            std::io::stdin()
                .read_to_string(&mut s)
                .map_err(|e| Failure(format!("cannot read the arguments from stdin: {e}")))?;
            s
        }
        Some(a) => a.to_owned(),
        None => "{}".to_owned(),
    };
    let config = crate::load_config(config)?;
    // Approvals and a remote server's questions take turns on the terminal.
    let turn = Turn::default();
    let BuiltHost {
        host,
        sandbox: _sandbox,
        ..
    } = config
        .build_host_with(
            BuildOptions::new()
                .asker(TerminalApprover::new(turn.clone()))
                .lazy(true)
                .locked(locked),
        )
        .await?;
    let traced = trace.then(CallTrace::new);
    let started = std::time::Instant::now();
    let result = match Arguments::parse(&text) {
        Ok(args) => {
            let mut ctx = CallContext::new().with_elicitor(TerminalElicitor::new(turn));
            if let Some(t) = &traced {
                ctx = ctx.with_observer(t.clone());
            }
            host.invoke_tool(ctx, tool, args).await
        }
        Err(e) => Err(e),
    };
    if let Some(t) = &traced {
        eprint!("{}", t.render(tool, started.elapsed()));
    }
    let names = host.tool_names();
    // Each extension's (plugin's, MCP server's) tools, for a user who
    // typed the name of the plugin rather than of one of its tools.
    let owners: Vec<(String, Vec<String>)> = host
        .extension_names()
        .into_iter()
        .map(|e| {
            let tools = host.extension_tools(&e);
            (e, tools)
        })
        .collect();
    host.shutdown().await;
    match result {
        Ok(out) if as_json => {
            outln!("{}", serde_json::to_string_pretty(&json!({ "ok": out }))?)?;
            Ok(())
        }
        Ok(out) => {
            outln!("{}", out.llm_text())?;
            Ok(())
        }
        // The error once, whole, on stdout; the exit status says it failed.
        Err(e) if as_json => {
            let doc = json!({ "error": {
                "kind": e.kind().as_str(),
                "message": e.to_string(),
                "retryable": e.is_retryable(),
            } });
            outln!("{}", serde_json::to_string_pretty(&doc)?)?;
            Err(Failure::reported())
        }
        Err(e @ ToolError::UnknownTool { .. }) => Err(Failure(format!(
            "{tool}: {e}{}",
            hint(tool, &names, &owners)
        ))),
        Err(e) => Err(Failure(format!("{tool}: {e}"))),
    }
}

/// What to suggest for the unknown tool `asked`: a plugin's (or MCP
/// server's) tools when `asked` is its exact name, else the closest tool
/// name, else the tools of a plugin whose name is close.
fn hint(asked: &str, names: &[String], owners: &[(String, Vec<String>)]) -> String {
    let exact = owners.iter().any(|(owner, _)| owner == asked);
    let close_tool = did_you_mean(asked, names);
    match plugin_hint(asked, owners) {
        Some(plugin) if exact || close_tool.is_empty() => plugin,
        _ => close_tool,
    }
}

/// `; `NAME` is a plugin, whose tools are …` when `asked` names (or nearly
/// names) a plugin or MCP server rather than a tool.
fn plugin_hint(asked: &str, owners: &[(String, Vec<String>)]) -> Option<String> {
    let (owner, tools) = owners
        .iter()
        .filter(|(_, tools)| !tools.is_empty())
        .map(|(owner, tools)| (strsim::damerau_levenshtein(asked, owner), owner, tools))
        .filter(|(d, owner, _)| *d * 3 <= owner.chars().count().max(3))
        .min()
        .map(|(_, owner, tools)| (owner, tools))?;
    let quoted: Vec<String> = tools.iter().map(|t| format!("`{t}`")).collect();
    let what = if owner.starts_with("mcp.") {
        "an MCP server"
    } else {
        "a plugin"
    };
    Some(format!(
        "; `{owner}` is {what}, not a tool: call one of its tools, {}",
        quoted.join(", ")
    ))
}

/// `; did you mean `NAME`?` for the registered name closest to `asked`, if
/// one is close enough to be a slip (a third of its letters or fewer
/// differ), else nothing.
fn did_you_mean(asked: &str, names: &[String]) -> String {
    names
        .iter()
        .map(|n| (strsim::damerau_levenshtein(asked, n), n))
        .filter(|(d, n)| *d * 3 <= n.chars().count().max(3))
        .min()
        .map(|(_, n)| format!("; did you mean `{n}`?"))
        .unwrap_or_default()
}

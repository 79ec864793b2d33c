//! `toolhost agent`: one agent run with the configured tools and model.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;
use toolhost::agent::AgentSection;
use toolhost::agent::extensions::{
    ProjectRules, ProjectRulesConfig, PromptCache, PromptCacheConfig, Skills, SkillsConfig,
};
use toolhost::agent::{ModelToolCall, StreamEvent};
use toolhost::config::{BuildOptions, BuiltHost, Config};
use toolhost::{Agent, Extension, LifecycleHook, ToolError, ToolHost, ToolOutput, TurnInfo};

use crate::Failure;
use crate::approve::{TerminalApprover, Turn};
use crate::elicit::TerminalElicitor;
use crate::output::{self, errln, outln};

/// Longest excerpt of arguments or tool output shown on the terminal.
const SHOWN: usize = 2000;

pub(crate) async fn run(config_path: &Path, prompt: &str, locked: bool) -> Result<(), Failure> {
    let config = crate::load_config(config_path)?;
    let section = config.agent.clone().ok_or_else(|| {
        Failure(format!(
            "{}: there is no [agent] table (provider, model, ...) to run an agent with",
            config_path.display()
        ))
    })?;
    let provider = section
        .build_provider()
        .map_err(|e| Failure(format!("agent: {}", toolhost::error::report(&e))))?;
    // Traces (rule X2): each model call and tool call a span, sent before
    // the command ends.
    let export = match config.trace_settings()? {
        Some(settings) => Some(
            toolhost::otlp::TraceExport::start(&settings)
                .map_err(|e| Failure(format!("[tracing]: {}", toolhost::error::report(&e))))?,
        ),
        None => None,
    };
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
                .locked(locked)
                .traces(export.as_ref().map(toolhost::otlp::TraceExport::traces)),
        )
        .await?;
    register_extensions(&host, &config, &section).await?;
    let cancel = CancellationToken::new();
    let activity = Arc::new(Activity {
        mid_line: AtomicBool::new(false),
    });
    host.add_lifecycle_hook(activity.clone());
    let agent = Agent::new(host.clone(), provider)
        .with_config(section.agent_config())
        .with_elicitor(TerminalElicitor::new(turn));

    let on_ctrl_c = cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            on_ctrl_c.cancel();
        }
    });
    let result = agent.run(prompt, cancel).await;
    host.shutdown().await;
    if let Some(export) = export {
        export.shutdown(std::time::Duration::from_secs(5)).await;
    }
    activity.end_line();
    let out = result.map_err(|e| Failure(format!("agent: {}", toolhost::error::report(&e))))?;
    // Only the final answer goes to stdout, streamed or not: what the model
    // wrote on the way (before its tool calls) went to stderr as it came.
    outln!("{}", out.final_text)?;
    errln!(
        "[{} turn(s); {} input and {} output tokens, {} read from the prompt cache]",
        out.turns,
        out.usage.input_tokens,
        out.usage.output_tokens,
        out.usage.cache_read_tokens
    );
    Ok(())
}

/// Registers the agent's own extensions that `section` switches on: prompt
/// caching, project rules (from the current directory up), skills.
async fn register_extensions(
    host: &ToolHost,
    config: &Config,
    section: &AgentSection,
) -> Result<(), Failure> {
    let mut extensions: Vec<Arc<dyn Extension>> = Vec::new();
    if section.prompt_cache {
        extensions.push(Arc::new(PromptCache::new(PromptCacheConfig::default())));
    }
    if section.project_rules {
        let cwd = std::env::current_dir()
            .map_err(|e| Failure(format!("cannot read the current directory: {e}")))?;
        let rules = ProjectRulesConfig::new(cwd).with_names(section.rules_files.iter().cloned());
        extensions.push(Arc::new(ProjectRules::new(rules)));
    }
    if !section.skills.is_empty() {
        let roots = section.skills.iter().map(|p| config.base_dir.join(p));
        extensions.push(Arc::new(Skills::new(SkillsConfig::new(roots))));
    }
    for ext in extensions {
        host.register_extension(ext)
            .await
            .map_err(|e| Failure(format!("agent: {}", toolhost::error::report(&e))))?;
    }
    Ok(())
}

/// Prints the run's progress to stderr as it happens: the text the model
/// streams, and tool activity (what the user is meant to see: `for_user`
/// output), each tool line on a line of its own.
struct Activity {
    /// Whether streamed text has left stderr in the middle of a line.
    mid_line: AtomicBool,
}

impl Activity {
    /// Ends the line streamed text left open, so that what follows starts
    /// on a line of its own.
    fn end_line(&self) {
        if self.mid_line.swap(false, Ordering::Relaxed) {
            errln!("");
        }
    }
}

fn excerpt(text: &str) -> String {
    if text.len() <= SHOWN {
        return text.to_owned();
    }
    let cut = text.floor_char_boundary(SHOWN);
    format!("{}… [{} more bytes]", &text[..cut], text.len() - cut)
}

#[async_trait]
impl LifecycleHook for Activity {
    fn on_model_stream(&self, _turn: &TurnInfo, event: &StreamEvent) {
        if let StreamEvent::TextDelta { text } = event
            && !text.is_empty()
        {
            output::write_err(format_args!("{text}"));
            self.mid_line
                .store(!text.ends_with('\n'), Ordering::Relaxed);
        }
    }

    async fn before_tool(&self, _turn: &TurnInfo, call: &ModelToolCall) {
        self.end_line();
        errln!("-> {} {}", call.name, excerpt(&call.arguments));
    }

    async fn after_tool(
        &self,
        _turn: &TurnInfo,
        call: &ModelToolCall,
        outcome: &Result<ToolOutput, ToolError>,
        took: Duration,
    ) {
        let ms = took.as_millis();
        match outcome {
            Ok(out) => match out.user_text() {
                Some(text) => errln!("<- {} ({ms} ms)\n{}", call.name, indent(&excerpt(&text))),
                None => errln!("<- {} ({ms} ms, nothing to show)", call.name),
            },
            Err(e) => errln!("<- {} failed ({ms} ms): {e}", call.name),
        }
    }
}

fn indent(text: &str) -> String {
    text.lines()
        .map(|l| format!("   {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

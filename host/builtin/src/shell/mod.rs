//! The `shell` tool (rule B5) and the [`ShellOps`] trait it runs commands
//! through.
//!
//! **A policy aid, not isolation.** The allow and block lists keep an agent
//! to the commands its host expects, and refuse what they cannot check; the
//! local implementation confines the starting directory, clears the
//! environment, caps output, and kills every process a command started —
//! even those that left its process group or session — when the call ends
//! (rule C7; a cgroup per call, or a supervising subreaper where no cgroup
//! can be created: see [`Containment`]). None of this stops an allowed program from reading or writing
//! anything the host's user can, or from reaching the network: run commands
//! in a sandbox or a container (another [`ShellOps`]) for that.

use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::{constrain, schema_of, typed_tool};
use toolhost_core::error::ToolError;
use toolhost_core::output::ToolOutput;
use toolhost_core::tool::{Tool, ToolSpec};

mod capture;
// Descriptor duplication and process-group kills (SAFETY at each block).
#[allow(unsafe_code)]
mod contain;
mod local;
mod parse;
mod policy;

pub use capture::CapturedOutput;
pub use contain::{Cgroup2Error, Containment, ContainmentError};
pub use local::LocalShell;
pub use parse::{ParseError, SimpleCommand, parse};
pub use policy::{CommandPolicy, CommandRefused};

/// What to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandLine {
    /// A command line for the shell (`sh -c LINE`).
    Line(String),
    /// A program and its arguments, run without a shell.
    Argv(Vec<String>),
}

impl CommandLine {
    /// The program that will be started, for messages.
    pub fn program(&self, shell: &Path) -> String {
        match self {
            Self::Line(_) => shell.display().to_string(),
            Self::Argv(argv) => argv.first().cloned().unwrap_or_default(),
        }
    }

    /// The command as a user would type it.
    pub fn display(&self) -> String {
        match self {
            Self::Line(line) => line.clone(),
            Self::Argv(argv) => argv
                .iter()
                .map(|a| {
                    if !a.is_empty()
                        && a.chars()
                            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c))
                    {
                        a.clone()
                    } else {
                        format!("'{}'", a.replace('\'', r"'\''"))
                    }
                })
                .collect::<Vec<_>>()
                .join(" "),
        }
    }
}

/// One command to run, after the policy allowed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellRequest {
    /// The command.
    pub command: CommandLine,
    /// Starting directory, relative to the working directory (`""` for the
    /// working directory itself); it must not lead outside it.
    pub cwd: String,
    /// When to kill the command and everything it started.
    pub timeout: Duration,
    /// Bytes kept of each of stdout and stderr (head and tail).
    pub max_output_bytes: usize,
}

/// How a command ended and what it wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellResult {
    /// The exit code, if it exited.
    pub exit_code: Option<i32>,
    /// The signal that ended it, if one did.
    pub signal: Option<i32>,
    /// Standard output, capped.
    pub stdout: CapturedOutput,
    /// Standard error, capped.
    pub stderr: CapturedOutput,
}

/// Runs commands for the `shell` tool. Implementations decide where (this
/// machine, a container, a remote runner); they must keep the request's
/// timeout (a timeout is [`ToolError::Timeout`]), its output cap, and its
/// starting directory inside their working directory, and leave nothing the
/// command started running once the call ends or its future is dropped
/// (rule C7).
#[async_trait]
pub trait ShellOps: Send + Sync {
    /// Runs one command to its end or its timeout.
    async fn run(&self, request: ShellRequest) -> Result<ShellResult, ToolError>;
}

/// Settings of the `shell` tool.
#[derive(Debug, Clone)]
pub struct ShellConfig {
    /// Which commands may run.
    pub policy: CommandPolicy,
    /// Timeout when the call gives none.
    pub default_timeout: Duration,
    /// The longest timeout a call may ask for.
    pub max_timeout: Duration,
    /// Bytes kept of each stream for the user's view.
    pub max_output_bytes: usize,
    /// Bytes kept of each stream for the model's view.
    pub llm_output_bytes: usize,
    /// Names of the host's environment variables passed to commands.
    pub grant_env: Vec<String>,
}

impl Default for ShellConfig {
    fn default() -> Self {
        Self {
            policy: CommandPolicy::open(),
            default_timeout: Duration::from_secs(60),
            max_timeout: Duration::from_secs(600),
            max_output_bytes: 256 * 1024,
            llm_output_bytes: 16 * 1024,
            grant_env: Vec::new(),
        }
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ShellArgs {
    /// A shell command line, run with sh -c.
    #[schemars(length(min = 1))]
    command: Option<String>,
    /// A program and its arguments, run without a shell.
    #[schemars(length(min = 1))]
    argv: Option<Vec<String>>,
    /// Starting directory, relative to the working directory. Default: the working directory.
    #[serde(default)]
    cwd: String,
    /// Seconds before the command is killed.
    timeout_secs: Option<f64>,
}

/// The `shell` tool over `ops`.
pub(crate) fn shell_tool(ops: Arc<dyn ShellOps>, config: ShellConfig) -> Arc<dyn Tool> {
    let max_secs = config.max_timeout.as_secs_f64();
    let spec = ToolSpec::new(
        "shell",
        format!(
            "Runs a command in the working directory and returns its exit code, stdout and \
             stderr. Give either `command` (a shell command line) or `argv` (a program and its \
             arguments, run without a shell). Output is capped; the command is killed at its \
             timeout (default {}s).",
            config.default_timeout.as_secs()
        ),
        {
            let mut schema = schema_of::<ShellArgs>();
            constrain(&mut schema, "timeout_secs", "exclusiveMinimum", json!(0));
            constrain(&mut schema, "timeout_secs", "maximum", json!(max_secs));
            // Exactly one of the two ways to name what to run, and not null.
            constrain(&mut schema, "command", "type", json!("string"));
            constrain(&mut schema, "argv", "type", json!("array"));
            schema["oneOf"] = json!([{"required": ["command"]}, {"required": ["argv"]}]);
            schema
        },
    )
    .concurrency_safe(false)
    .idempotent(false);
    let config = Arc::new(config);
    typed_tool(spec, move |_ctx, args: ShellArgs| {
        let (ops, config) = (ops.clone(), config.clone());
        async move {
            let request = request(&config, args)?;
            let shown = request.command.display();
            let result = ops.run(request).await?;
            Ok(render(&shown, &result, config.llm_output_bytes))
        }
    })
}

/// Checks the call against the policy and builds the request.
fn request(config: &ShellConfig, args: ShellArgs) -> Result<ShellRequest, ToolError> {
    let refuse = |refused: CommandRefused| ToolError::Rejected {
        hook: "shell command policy".into(),
        reason: refused.to_string(),
    };
    let command = match (args.command, args.argv) {
        (Some(line), None) => {
            config.policy.check_line(&line).map_err(refuse)?;
            CommandLine::Line(line)
        }
        (None, Some(argv)) => {
            if argv.is_empty() {
                return Err(ToolError::invalid_arguments("/argv", "argv is empty"));
            }
            config.policy.check_argv(&argv).map_err(refuse)?;
            CommandLine::Argv(argv)
        }
        _ => {
            return Err(ToolError::invalid_arguments(
                "",
                "give exactly one of `command` and `argv`",
            ));
        }
    };
    let timeout = match args.timeout_secs {
        None => config.default_timeout,
        Some(s) if s > 0.0 && s <= config.max_timeout.as_secs_f64() => Duration::from_secs_f64(s),
        Some(s) => {
            return Err(ToolError::invalid_arguments(
                "/timeout_secs",
                format!(
                    "{s} is not between 0 and {} seconds",
                    config.max_timeout.as_secs_f64()
                ),
            ));
        }
    };
    Ok(ShellRequest {
        command,
        cwd: args.cwd,
        timeout,
        max_output_bytes: config.max_output_bytes,
    })
}

/// Compact text for the model, the full capture and the command for the
/// user.
fn render(shown: &str, result: &ShellResult, llm_cap: usize) -> ToolOutput {
    let status = match (result.exit_code, result.signal) {
        (Some(code), _) => format!("exit code {code}"),
        (None, Some(sig)) => format!("killed by signal {sig}"),
        (None, None) => "ended".to_owned(),
    };
    let mut for_llm = status.clone();
    let mut for_user = format!("$ {shown}\n");
    for (name, stream) in [("stdout", &result.stdout), ("stderr", &result.stderr)] {
        if stream.total_bytes > 0 {
            let _ = write!(
                for_llm,
                "\n--- {name} ---\n{}",
                capture::shorten(&stream.text, llm_cap)
            );
            for_user.push_str(&stream.text);
            if !stream.text.ends_with('\n') {
                for_user.push('\n');
            }
        }
    }
    if result.stdout.total_bytes == 0 && result.stderr.total_bytes == 0 {
        for_llm.push_str(" (no output)");
    }
    let _ = write!(for_user, "[{status}]");
    ToolOutput::dual(for_llm, for_user)
}

#[cfg(test)]
mod tests;

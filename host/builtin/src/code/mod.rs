//! The `run_code` tool (rule B7) and the [`CodeOps`] trait it runs snippets
//! through.
//!
//! The default implementation, [`SandboxedCode`], runs each snippet in an
//! interpreter compiled to a WebAssembly component — the `run-js` plugin
//! (SpiderMonkey, built by ComponentizeJS) or the `run-py` plugin (CPython,
//! built by componentize-py) — inside the host's sandbox: a fresh instance per run,
//! a deadline enforced by epoch interruption, a memory limit, and a policy
//! that grants nothing — no directories, no network, no environment
//! variables. So a snippet can compute and print, and nothing else.

use std::time::Duration;

use async_trait::async_trait;

use toolhost_core::error::ToolError;

mod config;
mod sandboxed;
mod tool;

pub use config::CodeConfig;
pub use sandboxed::{InterpreterError, SandboxedCode};
pub(crate) use tool::run_code_tool;

/// A language `run_code` can run. Deliberately exhaustive: code that maps
/// languages to settings (the configuration's interpreter keys) must be
/// revisited when one is added, and the compiler says where.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Language {
    /// JavaScript (ECMAScript), run as a script by SpiderMonkey.
    JavaScript,
    /// Python 3, run as a module by CPython.
    Python,
}

impl Language {
    /// Every language, in order.
    pub const ALL: [Language; 2] = [Self::JavaScript, Self::Python];

    /// The name used in `run_code`'s arguments: `javascript`, `python`.
    pub fn name(self) -> &'static str {
        match self {
            Self::JavaScript => "javascript",
            Self::Python => "python",
        }
    }

    /// The language called `name`, if any.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|l| l.name() == name)
    }
}

impl std::fmt::Display for Language {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One snippet to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeRequest {
    /// Its language; one of the implementation's
    /// [`languages`](CodeOps::languages).
    pub language: Language,
    /// The source text.
    pub code: String,
    /// Time left before the call's deadline, if it has one. The
    /// implementation's own time limit applies if it is shorter.
    pub time_left: Option<Duration>,
}

/// What a run produced, already rendered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeResult {
    /// Compact text for the model: the console output and the value of the
    /// last expression, each cut to a budget.
    pub summary: String,
    /// The full transcript for the user: every console line, then the
    /// value.
    pub transcript: String,
}

/// Runs code snippets for `run_code`. Implementations decide where (the
/// local wasm sandbox, a remote runner, …); they must keep a time limit (an
/// overrun is [`ToolError::Timeout`]) and a memory limit, give the snippet
/// no access to the host's files, network or environment unless their
/// documentation says otherwise, and report an error raised by the snippet
/// (a syntax error, an uncaught exception) as [`ToolError::Failed`] with
/// its message and position.
#[async_trait]
pub trait CodeOps: Send + Sync {
    /// The languages it runs; `run_code`'s schema offers exactly these.
    fn languages(&self) -> Vec<Language>;

    /// Runs one snippet to its end, its error or its limit.
    async fn run(&self, request: CodeRequest) -> Result<CodeResult, ToolError>;
}

#[cfg(test)]
mod tests;

//! Built-in tools (rules B1–B7): an extension configured with a working
//! directory that offers file, search, shell, web, browser and
//! code-execution tools.
//!
//! | tool | family trait | concurrency safe | idempotent |
//! |---|---|---|---|
//! | `read_file`, `list_dir` | [`FileOps`] | yes | yes |
//! | `write_file` | [`FileOps`] | no | yes |
//! | `edit_file` | [`FileOps`] | no | no |
//! | `glob`, `grep` | [`SearchOps`] | yes | yes |
//! | `shell` | [`ShellOps`] | no | no |
//! | `web_fetch` | [`WebOps`] | yes | yes |
//! | `browse` | [`BrowserOps`] | yes | no |
//! | `run_code` | [`CodeOps`] | yes | yes |
//!
//! Every tool talks only to its family's operations trait (rule B2); the
//! local implementations are the default and any of them can be replaced,
//! for example by one that runs the operation in a sandbox or on another
//! machine.
//!
//! Deny by default: file tools are confined to the working directory by a
//! capability handle ([`Workdir`]); the shell, `web_fetch`, `browse` and
//! `run_code` are off unless enabled, the network tools reach only what the
//! [`NetPolicy`](toolhost_net::NetPolicy) grants, and `run_code`'s snippets
//! run in the wasm sandbox with nothing granted.

use std::future::Future;
use std::io;
use std::sync::Arc;

use async_trait::async_trait;
use futures::FutureExt as _;
use futures::future::BoxFuture;
use serde::de::DeserializeOwned;

use toolhost_core::error::ToolError;
use toolhost_core::extension::Extension;
use toolhost_core::output::ToolOutput;
use toolhost_core::tool::{CallContext, FnTool, Tool, ToolSpec};
use toolhost_sandbox::Sandbox;

pub mod browse;
pub mod code;
mod config;
mod file_tools;
pub mod fs;
// `pre_exec` and process-group kills (SAFETY at each block).
#[allow(unsafe_code)]
mod process;
pub mod search;
pub mod shell;
#[cfg(test)]
mod testserver;
mod text;
pub mod web;
pub mod workdir;

pub use browse::{BrowseLimits, BrowserOps, LocalBrowser};
pub use code::{CodeConfig, CodeOps, Language, SandboxedCode};
pub use config::{BuiltinConfig, BuiltinTool};
pub use file_tools::FileLimits;
pub use fs::{DirEntryInfo, EntryKind, FileOps, LocalFileOps};
pub use search::{SearchBackend, SearchLimits, SearchOps};
pub use shell::{CommandPolicy, Containment, LocalShell, ShellConfig, ShellOps};
pub use web::{LocalWeb, WebLimits, WebOps};
pub use workdir::Workdir;

/// The built-in tools extension (rule B1), named `builtin`.
pub struct BuiltinTools {
    tools: Vec<Arc<dyn Tool>>,
    workdir: Arc<Workdir>,
}

impl BuiltinTools {
    /// Opens the working directory and builds the configured tools. Fails
    /// if the working directory cannot be opened, or if `run_code` is
    /// enabled with neither [`CodeOps`] nor an interpreter file that exists.
    pub fn new(config: BuiltinConfig) -> io::Result<Self> {
        let workdir = Arc::new(Workdir::open(&config.workdir)?);
        let on = |t| config.tools.contains(&t);
        let file_ops = config
            .file_ops
            .clone()
            .unwrap_or_else(|| Arc::new(LocalFileOps::new(workdir.clone())));
        let search_ops = config.search_ops.clone().unwrap_or_else(|| {
            search::local_search(
                config.search_backend,
                workdir.clone(),
                config.search_limits.max_collected,
            )
        });
        let mut tools = file_tools::file_tools(&file_ops, &config.file_limits, on);
        tools.extend(search::search_tools(&search_ops, &config.search_limits, on));
        if on(BuiltinTool::Shell) {
            let ops = config.shell_ops.clone().unwrap_or_else(|| {
                let mut local = LocalShell::new(workdir.clone());
                for name in &config.shell.grant_env {
                    if let Some(value) = std::env::var_os(name) {
                        local = local.env(name, value);
                    }
                }
                Arc::new(local)
            });
            tools.push(shell::shell_tool(ops, config.shell.clone()));
        }
        if on(BuiltinTool::WebFetch) {
            let ops = config
                .web_ops
                .clone()
                .unwrap_or_else(|| Arc::new(LocalWeb::new(config.net.clone())));
            tools.push(web::web_fetch_tool(ops, config.web_limits.clone()));
        }
        if on(BuiltinTool::Browse) {
            let ops = config
                .browser_ops
                .clone()
                .unwrap_or_else(|| Arc::new(LocalBrowser::new(config.net.clone())));
            tools.push(browse::browse_tool(ops, config.browse_limits.clone()));
        }
        if on(BuiltinTool::RunCode) {
            tools.push(code::run_code_tool(code_ops(&config)?));
        }
        tools.sort_by(|a, b| a.spec().name.cmp(&b.spec().name));
        Ok(Self { tools, workdir })
    }

    /// The opened working directory.
    pub fn workdir(&self) -> &Workdir {
        &self.workdir
    }
}

/// `run_code`'s operations: the configured ones, else the sandboxed
/// interpreter (loaded on its first run).
fn code_ops(config: &BuiltinConfig) -> io::Result<Arc<dyn CodeOps>> {
    if let Some(ops) = &config.code_ops {
        return Ok(ops.clone());
    }
    let Some(code) = &config.run_code else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "run_code is enabled without an interpreter: give BuiltinConfig::run_code the \
             interpreters' wasm files, or BuiltinConfig::code_ops",
        ));
    };
    let sandbox = match &config.sandbox {
        Some(s) => s.clone(),
        None => Sandbox::new(None).map_err(io::Error::other)?,
    };
    let ops = SandboxedCode::new(sandbox, code.clone()).map_err(|e| match e {
        code::InterpreterError::Missing { .. } => io::Error::new(io::ErrorKind::NotFound, e),
        code::InterpreterError::NoInterpreter => io::Error::new(io::ErrorKind::InvalidInput, e),
        other => io::Error::other(other),
    })?;
    Ok(Arc::new(ops))
}

#[async_trait]
impl Extension for BuiltinTools {
    fn name(&self) -> &str {
        "builtin"
    }

    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.tools.clone()
    }
}

/// A tool whose arguments decode into `A` (with the decoder's error naming
/// the offending path) before `f` runs.
pub(crate) fn typed_tool<A, F, Fut>(spec: ToolSpec, f: F) -> Arc<dyn Tool>
where
    A: DeserializeOwned + Send + 'static,
    F: Fn(CallContext, A) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ToolOutput, ToolError>> + Send + 'static,
{
    FnTool::arc(
        spec,
        move |ctx, args| -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
            match args.deserialize::<A>() {
                Ok(a) => f(ctx, a).boxed(),
                Err(e) => futures::future::ready(Err(e)).boxed(),
            }
        },
    )
}

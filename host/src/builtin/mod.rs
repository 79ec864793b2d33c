//! Built-in tools (rules B1–B6): an extension configured with a working
//! directory that offers file, search, shell, web and browser tools.
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
//!
//! Every tool talks only to its family's operations trait (rule B2); the
//! local implementations are the default and any of them can be replaced,
//! for example by one that runs the operation in a sandbox or on another
//! machine. Code execution (`run_code`, rule B7) comes with the wasm
//! sandbox, not from this module.
//!
//! Deny by default: file tools are confined to the working directory by a
//! capability handle ([`Workdir`]); the shell, `web_fetch` and `browse` are
//! off unless enabled, and the network tools reach only what the
//! [`NetPolicy`] grants.

use std::collections::BTreeSet;
use std::future::Future;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use futures::FutureExt as _;
use futures::future::BoxFuture;
use serde::de::DeserializeOwned;

use crate::error::ToolError;
use crate::extension::Extension;
use crate::net::NetPolicy;
use crate::output::ToolOutput;
use crate::tool::{CallContext, FnTool, Tool, ToolSpec};

pub mod browse;
mod file_tools;
pub mod fs;
mod process;
pub mod search;
pub mod shell;
#[cfg(test)]
mod testserver;
pub mod web;
pub mod workdir;

pub use browse::{BrowseLimits, BrowserOps, LocalBrowser};
pub use file_tools::FileLimits;
pub use fs::{DirEntryInfo, EntryKind, FileOps, LocalFileOps};
pub use search::{SearchBackend, SearchLimits, SearchOps};
pub use shell::{CommandPolicy, LocalShell, ShellConfig, ShellOps};
pub use web::{LocalWeb, WebLimits, WebOps};
pub use workdir::Workdir;

/// The built-in tools, by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum BuiltinTool {
    /// `read_file`
    ReadFile,
    /// `write_file`
    WriteFile,
    /// `edit_file`
    EditFile,
    /// `list_dir`
    ListDir,
    /// `glob`
    Glob,
    /// `grep`
    Grep,
    /// `shell`
    Shell,
    /// `web_fetch`
    WebFetch,
    /// `browse`
    Browse,
}

impl BuiltinTool {
    /// The tool's registered name.
    pub fn name(self) -> &'static str {
        match self {
            Self::ReadFile => "read_file",
            Self::WriteFile => "write_file",
            Self::EditFile => "edit_file",
            Self::ListDir => "list_dir",
            Self::Glob => "glob",
            Self::Grep => "grep",
            Self::Shell => "shell",
            Self::WebFetch => "web_fetch",
            Self::Browse => "browse",
        }
    }

    /// Every built-in tool.
    pub const ALL: [BuiltinTool; 9] = [
        Self::ReadFile,
        Self::WriteFile,
        Self::EditFile,
        Self::ListDir,
        Self::Glob,
        Self::Grep,
        Self::Shell,
        Self::WebFetch,
        Self::Browse,
    ];
}

/// How [`BuiltinTools`] is set up. Start from [`BuiltinConfig::new`]: the
/// file and search tools, local operations, nothing granted on the network
/// and the shell, web and browser tools off.
#[derive(Clone)]
pub struct BuiltinConfig {
    workdir: PathBuf,
    tools: BTreeSet<BuiltinTool>,
    file_limits: FileLimits,
    search_backend: SearchBackend,
    search_limits: SearchLimits,
    shell: ShellConfig,
    net: NetPolicy,
    file_ops: Option<Arc<dyn FileOps>>,
    search_ops: Option<Arc<dyn SearchOps>>,
    shell_ops: Option<Arc<dyn ShellOps>>,
    web_limits: WebLimits,
    web_ops: Option<Arc<dyn WebOps>>,
    browse_limits: BrowseLimits,
    browser_ops: Option<Arc<dyn BrowserOps>>,
}

impl BuiltinConfig {
    /// A configuration for the working directory `workdir`.
    pub fn new(workdir: impl Into<PathBuf>) -> Self {
        Self {
            workdir: workdir.into(),
            tools: [
                BuiltinTool::ReadFile,
                BuiltinTool::WriteFile,
                BuiltinTool::EditFile,
                BuiltinTool::ListDir,
                BuiltinTool::Glob,
                BuiltinTool::Grep,
            ]
            .into(),
            file_limits: FileLimits::default(),
            search_backend: SearchBackend::default(),
            search_limits: SearchLimits::default(),
            shell: ShellConfig::default(),
            net: NetPolicy::deny_all(),
            file_ops: None,
            search_ops: None,
            shell_ops: None,
            web_limits: WebLimits::default(),
            web_ops: None,
            browse_limits: BrowseLimits::default(),
            browser_ops: None,
        }
    }

    /// Offers exactly `tools`.
    pub fn tools(mut self, tools: impl IntoIterator<Item = BuiltinTool>) -> Self {
        self.tools = tools.into_iter().collect();
        self
    }

    /// Adds `tool` to the offered tools.
    pub fn enable(mut self, tool: BuiltinTool) -> Self {
        self.tools.insert(tool);
        self
    }

    /// Removes `tool` from the offered tools.
    pub fn disable(mut self, tool: BuiltinTool) -> Self {
        self.tools.remove(&tool);
        self
    }

    /// Caps of the file tools.
    pub fn file_limits(mut self, limits: FileLimits) -> Self {
        self.file_limits = limits;
        self
    }

    /// Which local search backend answers `glob` and `grep` (in process by
    /// default). A missing program falls back to the in-process backend.
    pub fn search_backend(mut self, backend: SearchBackend) -> Self {
        self.search_backend = backend;
        self
    }

    /// Caps of the search tools.
    pub fn search_limits(mut self, limits: SearchLimits) -> Self {
        self.search_limits = limits;
        self
    }

    /// Runs searches through `ops` instead of a local backend.
    pub fn search_ops(mut self, ops: Arc<dyn SearchOps>) -> Self {
        self.search_ops = Some(ops);
        self
    }

    /// Settings of the `shell` tool (which is off until enabled with
    /// [`enable`](Self::enable)`(BuiltinTool::Shell)`).
    pub fn shell(mut self, config: ShellConfig) -> Self {
        self.shell = config;
        self
    }

    /// Runs shell commands through `ops` instead of local processes.
    pub fn shell_ops(mut self, ops: Arc<dyn ShellOps>) -> Self {
        self.shell_ops = Some(ops);
        self
    }

    /// The network policy of `web_fetch` and `browse` (deny all by default).
    pub fn net_policy(mut self, policy: NetPolicy) -> Self {
        self.net = policy;
        self
    }

    /// Runs file operations through `ops` instead of the local filesystem.
    pub fn file_ops(mut self, ops: Arc<dyn FileOps>) -> Self {
        self.file_ops = Some(ops);
        self
    }

    /// Caps of `web_fetch`.
    pub fn web_limits(mut self, limits: WebLimits) -> Self {
        self.web_limits = limits;
        self
    }

    /// Runs fetches through `ops` instead of local HTTP.
    pub fn web_ops(mut self, ops: Arc<dyn WebOps>) -> Self {
        self.web_ops = Some(ops);
        self
    }

    /// Caps of `browse`.
    pub fn browse_limits(mut self, limits: BrowseLimits) -> Self {
        self.browse_limits = limits;
        self
    }

    /// Renders pages through `ops` instead of a local Chromium.
    pub fn browser_ops(mut self, ops: Arc<dyn BrowserOps>) -> Self {
        self.browser_ops = Some(ops);
        self
    }

    /// The working directory.
    pub fn workdir(&self) -> &Path {
        &self.workdir
    }
}

/// The built-in tools extension (rule B1), named `builtin`.
pub struct BuiltinTools {
    tools: Vec<Arc<dyn Tool>>,
    workdir: Arc<Workdir>,
}

impl BuiltinTools {
    /// Opens the working directory and builds the configured tools. Fails
    /// if the working directory cannot be opened.
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
        tools.sort_by(|a, b| a.spec().name.cmp(&b.spec().name));
        Ok(Self { tools, workdir })
    }

    /// The opened working directory.
    pub fn workdir(&self) -> &Workdir {
        &self.workdir
    }
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

//! What [`BuiltinTools`](super::BuiltinTools) offers and how: the tool
//! names, and the configuration builder.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{
    BrowseLimits, BrowserOps, CodeConfig, CodeOps, FileLimits, FileOps, SearchBackend,
    SearchLimits, SearchOps, ShellConfig, ShellOps, WebLimits, WebOps,
};
use toolhost_net::NetPolicy;
use toolhost_sandbox::Sandbox;

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
    /// `run_code`
    RunCode,
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
            Self::RunCode => "run_code",
        }
    }

    /// Every built-in tool.
    pub const ALL: [BuiltinTool; 10] = [
        Self::ReadFile,
        Self::WriteFile,
        Self::EditFile,
        Self::ListDir,
        Self::Glob,
        Self::Grep,
        Self::Shell,
        Self::WebFetch,
        Self::Browse,
        Self::RunCode,
    ];
}

/// How [`BuiltinTools`](super::BuiltinTools) is set up. Start from
/// [`BuiltinConfig::new`]: the file and search tools, local operations,
/// nothing granted on the network, and the shell, web, browser and
/// code-execution tools off.
#[derive(Clone)]
pub struct BuiltinConfig {
    pub(crate) workdir: PathBuf,
    pub(crate) tools: BTreeSet<BuiltinTool>,
    pub(crate) file_limits: FileLimits,
    pub(crate) search_backend: SearchBackend,
    pub(crate) search_limits: SearchLimits,
    pub(crate) shell: ShellConfig,
    pub(crate) net: NetPolicy,
    pub(crate) file_ops: Option<Arc<dyn FileOps>>,
    pub(crate) search_ops: Option<Arc<dyn SearchOps>>,
    pub(crate) shell_ops: Option<Arc<dyn ShellOps>>,
    pub(crate) web_limits: WebLimits,
    pub(crate) web_ops: Option<Arc<dyn WebOps>>,
    pub(crate) browse_limits: BrowseLimits,
    pub(crate) browser_ops: Option<Arc<dyn BrowserOps>>,
    pub(crate) run_code: Option<CodeConfig>,
    pub(crate) code_ops: Option<Arc<dyn CodeOps>>,
    pub(crate) sandbox: Option<Sandbox>,
}

impl std::fmt::Debug for BuiltinConfig {
    /// The settings, and which operations are replaced (not their values).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BuiltinConfig")
            .field("workdir", &self.workdir)
            .field("tools", &self.tools)
            .field("search_backend", &self.search_backend)
            .field("shell", &self.shell)
            .field("net", &self.net)
            .field("file_ops_replaced", &self.file_ops.is_some())
            .field("search_ops_replaced", &self.search_ops.is_some())
            .field("shell_ops_replaced", &self.shell_ops.is_some())
            .field("web_ops_replaced", &self.web_ops.is_some())
            .field("browser_ops_replaced", &self.browser_ops.is_some())
            .field("run_code", &self.run_code)
            .field("code_ops_replaced", &self.code_ops.is_some())
            .finish_non_exhaustive()
    }
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
            run_code: None,
            code_ops: None,
            sandbox: None,
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

    /// The interpreter and limits of `run_code` (which is off until enabled
    /// with [`enable`](Self::enable)`(BuiltinTool::RunCode)`), for the
    /// default [`SandboxedCode`](super::SandboxedCode).
    pub fn run_code(mut self, config: CodeConfig) -> Self {
        self.run_code = Some(config);
        self
    }

    /// Runs `run_code`'s snippets through `ops` instead of the local
    /// sandboxed interpreter.
    pub fn code_ops(mut self, ops: Arc<dyn CodeOps>) -> Self {
        self.code_ops = Some(ops);
        self
    }

    /// The sandbox the local interpreter runs in (default: one of its own),
    /// to share one engine and its compiled-code cache with the host's
    /// plugins.
    pub fn sandbox(mut self, sandbox: Sandbox) -> Self {
        self.sandbox = Some(sandbox);
        self
    }

    /// Whether `tool` is offered.
    pub fn offers(&self, tool: BuiltinTool) -> bool {
        self.tools.contains(&tool)
    }

    /// The settings of `run_code`'s local interpreter, if given.
    pub fn run_code_config(&self) -> Option<&CodeConfig> {
        self.run_code.as_ref()
    }

    /// The working directory.
    pub fn workdir(&self) -> &Path {
        &self.workdir
    }
}
